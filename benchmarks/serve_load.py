"""`profscope serve` under load: the real command in its own process, on
loopback, over big generated sessions, with concurrent gRPC clients.

    python benchmarks/serve_load.py [--seconds 60] [--warmup 45] [--clients 32] [--procs 4] [--folder DIR]

Sessions (generated into --folder, or a temporary folder removed afterwards;
an existing --folder is reused):
  big_xspace   XSpace of 300k events (xplane_bench.py's generator)
  big_memory   binary MemoryProfile of 300k snapshots (memory_profile_bench.py's); its
               memory_profile answer is ~130 MB of JSON, the largest response
  big_trace    40 MiB Kineto trace with [memory] events (make_kineto_trace.py over
               tests/data/chrome_trace/gpu_memory)
  small        tests/data/xprof's small and keras XSpaces as two hosts
The answer of every request (each tool of each host, each host's files, the
file listing) is computed first with a LocalRepository in this process.

Then `python -m profscope.viewer.cli serve FOLDER --port 0` starts, answers each request
once, one at a time (each call's peak RSS: VmHWM reset through clear_refs), and
--clients clients (threads in --procs processes, each on its own channel) call
it for --warmup and then --seconds more, choosing at random:
  enum    EnumSessions
  tool    GetSessionToolData of any request; the answer must be the expected one
  cancel  a big request (>= 1 MB answer or >= 0.3 s to compute) cancelled after 0-1 s
  close   the same on a channel of its own, closed after 0-1 s (a client going away)
The server's RSS, threads and open files are sampled every 0.2 s. At the end
a few big calls are left in flight and the server gets SIGINT.

Requirements (exit status 1 when one fails):
  - no failed call: enum and tool calls answer right; cancel and close calls end
    CANCELLED or, when the answer came first, answer right;
  - RSS peak <= idle + WORKERS x the largest single call's peak above idle x 1.5:
    analyses run on WORKERS threads, answers being sent come on top;
  - RSS not growing: over the --seconds after the warm-up (in which the queue of
    big calls fills up and RSS climbs to its working level: ~40 s on 2 cores),
    the second half's median at most 10% of the peak above idle over the first's;
  - threads never above idle + MAX_CALLS + 8 (the server's pool, a thread per call
    in progress, and gRPC's own), at most idle + MAX_CALLS once the clients are
    gone; open files back to idle + 4;
  - nothing on the server's standard error but its start and stop lines;
  - shutdown: exit status 0 within SHUTDOWN_S seconds of SIGINT.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import multiprocessing
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from profscope.models.core.task import ProfileError  # noqa: E402
from profscope.models.remote.client import ANALYSIS, DEADLINE_S, FILE_TOOL, FILES_TOOL, _stub, channel  # noqa: E402
from profscope.models.remote.server import MAX_CALLS, WORKERS, _listing  # noqa: E402
from profscope.models.repository.profile_repository import LocalRepository  # noqa: E402
from profscope.protos import profiler_analysis_pb2 as pa  # noqa: E402

KINDS, WEIGHTS = ("enum", "tool", "cancel", "close"), (0.3, 0.4, 0.2, 0.1)
CALL_TIMEOUT_S = 600.0  # a call the server never answers shows up as a failure, not a hang
SHUTDOWN_S = 10.0
HEAVY_BYTES, HEAVY_S = 1 << 20, 0.3


# ---------------------------------------------------------------- data


def make_sessions(folder: Path, scale: float) -> None:
    from benchmarks import make_kineto_trace, memory_profile_bench, xplane_bench

    data = ROOT / "tests" / "data"
    for name in ("big_xspace", "big_memory", "big_trace", "small"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    xplane_bench.generate(int(300_000 * scale), folder / "big_xspace" / "host0.xplane.pb")
    memory_profile_bench.generate(int(300_000 * scale), folder / "big_memory" / "host0.memory_profile.pb")
    make_kineto_trace.main(["--size-mb", str(40 * scale), "-o", str(folder / "big_trace" / "worker0.pt.trace.json"),
                            "--source", str(data / "chrome_trace" / "gpu_memory" / "gpu_memory.pt.trace.json.gz")])
    shutil.copy(data / "xprof" / "small.xplane.pb", folder / "small" / "worker0.xplane.pb")
    shutil.copy(data / "xprof" / "keras.xplane.pb", folder / "small" / "worker1.xplane.pb")


def expected_answers(folder: Path) -> dict[tuple, dict]:
    """(session, tool, host, file name) -> sha256, size and local time of the answer;
    requests whose answer is an error are left out."""
    repo = LocalRepository(folder)
    out = {}
    for s in sorted(repo.enum_sessions(), key=lambda s: s.name):
        listing = _listing(repo, s.name)
        out[(s.name, FILES_TOOL, "", "")] = _digest(json.dumps(listing).encode(), 0.0)
        for name in (n for files in listing["files"].values() for n in files):
            path = next(p for h in s.hosts for p in repo.host_paths(s.name, h) if p.name == name)
            out[(s.name, FILE_TOOL, "", name)] = _digest(path.read_bytes(), 0.0)
        for tool in s.tools:
            hosts = repo.hosts_with(s.name, tool) + ([""] if repo.combines_hosts(s.name) else [])
            for host in hosts:
                t = time.perf_counter()
                try:
                    output = repo.tool_data(s.name, tool, host).output
                except ProfileError:
                    continue
                out[(s.name, tool, host, "")] = _digest(output, time.perf_counter() - t)
    return out


def _digest(data: bytes, seconds: float) -> dict:
    return {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "seconds": seconds}


def _request(key: tuple) -> pa.ProfileSessionDataRequest:
    session, tool, host, name = key
    return pa.ProfileSessionDataRequest(session_id=session, tool_name=tool, host_name=host,
                                        parameters={"name": name} if name else {})


# ---------------------------------------------------------------- clients


def _check(response: pa.ProfileSessionDataResponse, want: dict) -> str:
    if response.error_message:
        return f"FAIL error_message {response.error_message[:100]}"
    if hashlib.sha256(response.output).hexdigest() != want["sha256"]:
        return f"FAIL wrong answer ({len(response.output)} bytes, expected {want['size']})"
    return "ok"


def _stubs(ch: grpc.Channel):
    return (_stub(ch, ANALYSIS, "EnumSessions", pa.EnumProfileSessionsAndToolsRequest,
                  pa.EnumProfileSessionsAndToolsResponse),
            _stub(ch, ANALYSIS, "GetSessionToolData", pa.ProfileSessionDataRequest, pa.ProfileSessionDataResponse))


def _one_client(address: str, until: float, answers: dict, sessions: list[str], seed: int, records: list) -> None:
    rng = random.Random(seed)
    keys = sorted(answers)
    heavy = [k for k in keys if answers[k]["size"] >= HEAVY_BYTES or answers[k]["seconds"] >= HEAVY_S]
    with channel(address) as ch:
        enum, data = _stubs(ch)
        while time.time() < until:
            kind = rng.choices(KINDS, WEIGHTS)[0]
            key = rng.choice(heavy if kind in ("cancel", "close") else keys)
            label = f"tool:{key[1]}" if kind == "tool" else kind
            t = time.perf_counter()
            try:
                if kind == "enum":
                    got = sorted(s.session_id for s in enum(pa.EnumProfileSessionsAndToolsRequest(),
                                                           timeout=CALL_TIMEOUT_S).sessions)
                    outcome = "ok" if got == sessions else f"FAIL sessions {got}"
                elif kind == "tool":
                    outcome = _check(data(_request(key), timeout=CALL_TIMEOUT_S), answers[key])
                else:
                    outcome = _cancelled_call(address, data, key, answers[key], kind, rng.uniform(0, 1.0))
            except grpc.RpcError as e:
                outcome = f"FAIL {e.code().name}: {(e.details() or '')[:100]}"
            records.append((label, outcome, time.perf_counter() - t))


def _cancelled_call(address: str, data, key: tuple, want: dict, kind: str, delay: float) -> str:
    if kind == "cancel":
        future = data.future(_request(key), timeout=CALL_TIMEOUT_S)
        time.sleep(delay)
        if future.cancel():
            return "cancelled"
        return _check(future.result(), want)  # answered before the cancel
    ch = channel(address)
    future = _stubs(ch)[1].future(_request(key), timeout=CALL_TIMEOUT_S)
    time.sleep(delay)
    ch.close()
    try:
        return _check(future.result(), want)
    except grpc.RpcError as e:
        if e.code() == grpc.StatusCode.CANCELLED:
            return "cancelled"
        raise


def ready(_: int) -> int:
    return os.getpid()


def run_clients(address: str, until: float, answers: dict, sessions: list[str], seeds: list[int]) -> list:
    """One process's clients, a thread each; their (label, outcome, seconds) records."""
    records: list = []
    threads = [threading.Thread(target=_one_client, args=(address, until, answers, sessions, seed, records))
               for seed in seeds]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return records


# ---------------------------------------------------------------- the server


class Sampler:
    """The server's RSS, threads and open files every 0.2 s (and on demand)."""

    def __init__(self, pid: int):
        self.pid, self.rows = pid, []  # (time, rss MB, threads, fds)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run)

    def now(self) -> tuple[float, float, int, int]:
        proc = f"/proc/{self.pid}"
        rss = _status_mb(self.pid, "VmRSS")
        return time.time(), rss, len(os.listdir(f"{proc}/task")), len(os.listdir(f"{proc}/fd"))

    def _run(self) -> None:
        while not self._stop.wait(0.2):
            try:
                self.rows.append(self.now())
            except (FileNotFoundError, ProcessLookupError):
                return

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _status_mb(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise ProcessLookupError(pid)


def start_server(folder: Path) -> tuple[subprocess.Popen, str, list[str], threading.Thread]:
    """The server, its address, its stderr lines (filled by the returned thread until it exits)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "profscope.viewer.cli", "serve", str(folder), "--port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    first = proc.stderr.readline()
    if "serving" not in first:
        proc.kill()
        raise SystemExit(f"the server did not start: {first}{proc.stderr.read()}")
    lines = [first]
    reader = threading.Thread(target=lambda: [lines.append(line) for line in proc.stderr])
    reader.start()
    port = int(first.rsplit(":", 1)[1].split()[0])
    return proc, f"127.0.0.1:{port}", lines, reader


def single_calls(address: str, pid: int, answers: dict) -> dict[tuple, tuple[float, float]]:
    """Each request once, alone: (seconds, peak RSS MB of that call)."""
    out = {}
    with channel(address) as ch:
        _, data = _stubs(ch)
        for key in sorted(answers):
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")  # VmHWM := VmRSS, so the peak is this call's
            t = time.perf_counter()
            outcome = _check(data(_request(key), timeout=CALL_TIMEOUT_S), answers[key])
            if outcome != "ok":
                raise SystemExit(f"{key}: {outcome}")
            out[key] = (time.perf_counter() - t, _status_mb(pid, "VmHWM"))
    return out


def shut_down(proc: subprocess.Popen, address: str, heavy: list[tuple]) -> tuple[int | None, float, list[str]]:
    """SIGINT with big calls in flight: (exit status, seconds to exit, the calls' outcomes)."""
    ch = channel(address)
    _, data = _stubs(ch)
    futures = [data.future(_request(key), timeout=CALL_TIMEOUT_S) for key in heavy]
    time.sleep(0.5)  # let them reach the workers
    t = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=SHUTDOWN_S * 3)
    except subprocess.TimeoutExpired:
        code = None
    seconds = time.perf_counter() - t
    outcomes = []
    for f in futures:
        try:
            f.result(timeout=CALL_TIMEOUT_S)
            outcomes.append("OK")
        except grpc.RpcError as e:
            outcomes.append(e.code().name)
    ch.close()
    return code, seconds, outcomes


# ---------------------------------------------------------------- report


def _pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def _median(values: list[float]) -> float:
    return _pct(values, 0.5)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=60, help="the measured load, after the warm-up")
    ap.add_argument("--warmup", type=float, default=45, help="load before the measured seconds")
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--procs", type=int, default=4, help="client processes (the clients are their threads)")
    ap.add_argument("--folder", type=Path, help="where the sessions are (generated when missing)")
    ap.add_argument("--scale", type=float, default=1.0, help="session sizes relative to the defaults")
    ap.add_argument("--samples", type=Path, help="write the server's samples here (CSV: s, RSS MB, threads, fds)")
    args = ap.parse_args()

    folder = args.folder or Path(tempfile.mkdtemp(prefix="profscope-serve-load-"))
    try:
        if not (folder / "small").is_dir():
            t = time.perf_counter()
            make_sessions(folder, args.scale)
            print(f"generated the sessions in {time.perf_counter() - t:.1f} s")
        return run(folder, args)
    finally:
        if args.folder is None:
            shutil.rmtree(folder, ignore_errors=True)


def run(folder: Path, args) -> int:
    t = time.perf_counter()
    answers = expected_answers(folder)
    sessions = sorted({k[0] for k in answers})
    largest = max(answers.items(), key=lambda kv: kv[1]["size"])
    largest_mb = largest[1]["size"] / 2**20
    print(
        f"{len(answers)} requests over {len(sessions)} sessions ({', '.join(sessions)}), answers computed locally "
        f"in {time.perf_counter() - t:.1f} s; largest answer {largest[1]['size'] / 1e6:.1f} MB "
        f"({largest[0][1]} of {largest[0][0]})"
    )

    proc, address, stderr_lines, reader = start_server(folder)
    failures: list[str] = []
    try:
        sampler = Sampler(proc.pid)
        alone = single_calls(address, proc.pid, answers)
        _, idle_rss, idle_threads, idle_fds = sampler.now()
        single_key = max(alone, key=lambda k: alone[k][1])
        single_peak = alone[single_key][1]
        print(
            f"server pid {proc.pid} on {address}, {WORKERS} workers, {os.cpu_count()} cores; "
            f"idle after one call each: RSS {idle_rss:.0f} MB, {idle_threads} threads, {idle_fds} fds"
        )
        print(
            f"largest single call: {single_key[1]} of {single_key[0]}, peak RSS {single_peak:.0f} MB, "
            f"{alone[single_key][0]:.2f} s alone"
        )

        seeds = list(range(args.clients))
        per = [seeds[i :: args.procs] for i in range(args.procs)]
        with ProcessPoolExecutor(args.procs, mp_context=multiprocessing.get_context("spawn")) as pool:
            list(pool.map(ready, range(args.procs * 4)))  # processes started and this module imported
            sampler.start()
            t_load = time.time()
            t_measured = t_load + args.warmup
            until = t_measured + args.seconds
            jobs = [pool.submit(run_clients, address, until, answers, sessions, s) for s in per if s]
            records = [r for job in jobs for r in job.result()]
        t_end = time.time()
        settle_until = time.time() + 10
        while time.time() < settle_until:  # connections close, threads idle
            _, end_rss, end_threads, end_fds = sampler.now()
            if end_fds <= idle_fds + 4:
                break
            time.sleep(0.2)
        sampler.stop()
        if args.samples:
            args.samples.write_text("".join(f"{t - t_load:.1f},{r:.0f},{n},{f}\n" for t, r, n, f in sampler.rows))

        print(
            f"\n{args.clients} clients in {args.procs} processes for {args.warmup:.0f} s of warm-up + "
            f"{args.seconds:.0f} s (the last calls ended {t_end - until:.1f} s later); all calls:"
        )
        print(f"{'calls':24} {'n':>6} {'ok':>6} {'cancelled':>9} {'failed':>6} {'p50 s':>8} {'p95 s':>8}")
        labels = sorted({r[0] for r in records}, key=lambda x: (x.startswith("tool"), x))
        for label in labels:
            rows = [r for r in records if r[0] == label]
            ok = [r for r in rows if r[1] == "ok"]
            cancelled = [r for r in rows if r[1] == "cancelled"]
            failed = [r for r in rows if r[1].startswith("FAIL")]
            lat = [r[2] for r in (ok if label not in ("cancel", "close") else rows)]
            print(
                f"{label:24} {len(rows):6} {len(ok):6} {len(cancelled):9} {len(failed):6} "
                f"{_pct(lat, 0.5):8.2f} {_pct(lat, 0.95):8.2f}"
            )
        failed = [r for r in records if r[1].startswith("FAIL")]
        slow = sum(r[2] > DEADLINE_S for r in records if r[0].startswith("tool"))
        print(
            f"{'all':24} {len(records):6}   failed: {len(failed)}; tool calls longer than the client's "
            f"{DEADLINE_S:.0f} s deadline (this benchmark waits {CALL_TIMEOUT_S:.0f} s): {slow}"
        )
        for label, outcome, _ in failed[:10]:
            print(f"  {label}: {outcome}")
        if failed:
            failures.append(f"{len(failed)} failed calls")

        load = [row for row in sampler.rows if t_load <= row[0] <= t_end]
        peak_rss, peak_threads, peak_fds = (max(r[i] for r in load) for i in (1, 2, 3))
        bound = idle_rss + WORKERS * (single_peak - idle_rss) * 1.5
        warm = [row[1] for row in load if row[0] < t_measured]
        rss = [row[1] for row in load if t_measured <= row[0] <= until]  # the queue drains after `until`
        half = len(rss) // 2
        first, second = _median(rss[:half]), _median(rss[half:])
        growth_limit = 0.1 * (peak_rss - idle_rss)
        print(
            f"\nRSS MB: idle {idle_rss:.0f}, peak {peak_rss:.0f} (bound {bound:.0f}), end {end_rss:.0f}; "
            f"medians: warm-up {_median(warm):.0f}, measured halves {first:.0f}, {second:.0f}; largest answer "
            f"{largest_mb:.0f} MB, peak {(peak_rss - idle_rss) / largest_mb:.1f}x it above idle"
        )
        print(
            f"threads: idle {idle_threads}, peak {peak_threads} (bound {idle_threads + MAX_CALLS + 8}), "
            f"end {end_threads} (bound {idle_threads + MAX_CALLS})"
        )
        print(f"open fds: idle {idle_fds}, peak {peak_fds}, end {end_fds} (bound {idle_fds + 4})")
        if peak_rss > bound:
            failures.append(f"RSS peak {peak_rss:.0f} MB above {bound:.0f} MB")
        if second > first + growth_limit:
            failures.append(f"RSS grows: second half's median {second:.0f} MB, first half's {first:.0f} MB")
        if peak_threads > idle_threads + MAX_CALLS + 8 or end_threads > idle_threads + MAX_CALLS:
            failures.append(f"threads: peak {peak_threads}, end {end_threads}")
        if end_fds > idle_fds + 4:
            failures.append(f"open files: {end_fds} after the load, {idle_fds} before")

        heavy = sorted(alone, key=lambda k: -alone[k][0])[:WORKERS]
        code, seconds, outcomes = shut_down(proc, address, heavy)
        print(
            f"\nSIGINT with {len(heavy)} big calls in flight: exit status {code} after {seconds:.1f} s "
            f"(limit {SHUTDOWN_S:.0f} s); the calls: {', '.join(outcomes)}"
        )
        if code != 0 or seconds > SHUTDOWN_S:
            failures.append(f"shutdown: exit status {code} after {seconds:.1f} s")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join()
    noise = [
        line
        for line in stderr_lines
        if line.strip() and "profscope: serving" not in line and "profscope: stopped" not in line
    ]
    if noise:
        print("server stderr:\n" + "".join(noise[:20]))
        failures.append(f"{len(noise)} lines on the server's stderr")
    if not any("profscope: stopped" in line for line in stderr_lines):
        failures.append("the server did not say it stopped")
    print("\nrequirements: " + ("all met" if not failures else "FAILED: " + "; ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
