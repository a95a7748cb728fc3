"""Whole `profscope export` processes against their anchors, as a user meets
them: time and CPU time (medians of --repeat) and peak RSS of each process.

    python benchmarks/export_bench.py [--rows memory,log,hparams] [--snapshots N] [--log-lines N]
                                      [--sessions N] [--repeat 3]

Rows (issue "Fast everywhere"), each against its anchor in the same run:
- memory: a MemoryProfile .pb exported with every snapshot and in XProf's
  form, against protobuf parsing the file alone;
- log: a LogMemory log exported both ways, against a plain line loop;
- hparams: a sweep's session groups, against TensorBoard's load + query.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from as_a_user import like_an_installed_copy

ROOT = Path(__file__).resolve().parent.parent

HPARAMS_REQUEST = {  # as hparams_bench's query: two filters, a two-key sort, a page of 100
    "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"],
    "colParams": [{"metric": {"group": "validation", "tag": "epoch_accuracy"}, "order": "ORDER_DESC"},
                  {"hparam": "units", "order": "ORDER_ASC"}, {"hparam": "optimizer", "filterRegexp": "adam|sgd"},
                  {"hparam": "learning_rate", "filterInterval": {"minValue": 1e-4, "maxValue": 1e-2}}],
    "startIndex": 0, "sliceSize": 100,
}
BARE_MEMORY_PROFILE = ("from pathlib import Path; from protos import memory_profile_pb2; "
                       "memory_profile_pb2.MemoryProfile().ParseFromString(Path({path!r}).read_bytes())")


def run(argv: list[str]) -> tuple[float, float, float]:
    """Seconds, peak RSS (MiB) and CPU seconds (user + system) of one process.
    The last run's output is deleted first: a user writes a new file, and
    replacing 2 GB still in the page cache costs the kernel seconds."""
    if "-o" in argv:
        Path(argv[argv.index("-o") + 1]).unlink(missing_ok=True)
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed:\n{err}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def measure(argv: list[str], repeat: int) -> tuple[float, float, float]:
    """Median seconds, highest peak RSS and median CPU seconds of `repeat` processes
    (CPU time moves less than the clock on a shared machine)."""
    runs = [run(argv) for _ in range(repeat)]
    return (
        statistics.median(t for t, _, _ in runs),
        max(m for _, m, _ in runs),
        statistics.median(c for _, _, c in runs),
    )


def export(path: Path, tool: str, out: Path, *params: str) -> list[str]:
    argv = [sys.executable, "-m", "profscope.viewer.cli", "export", str(path), "--tool", tool, "-o", str(out)]
    for p in params:
        argv += ["--param", p]
    return argv


def report(
    rows: list[tuple[str, float, float, float]], anchor: tuple[float, float, float], input_bytes: int = 0
) -> None:
    """Time, peak RSS and CPU time per row, against the anchor's; with input_bytes also MB/s."""
    print(
        f"{'row':<44}{'time':>9}{'x anchor':>10}{'peak RSS':>11}{'x anchor':>10}{'CPU':>9}{'x anchor':>10}"
        + ("    MB/s" if input_bytes else "")
    )
    for name, t, m, c in rows:
        rate = f"{input_bytes / 2**20 / t:8.0f}" if input_bytes else ""
        print(
            f"{name:<44}{t:8.2f}s{t / anchor[0]:9.2f}x{m:9.0f}MB{m / anchor[1]:9.2f}x"
            f"{c:8.2f}s{c / anchor[2]:9.2f}x{rate}"
        )


def memory_profile_rows(tmp: Path, snapshots: int, repeat: int) -> None:
    pb = tmp / "big.memory_profile.pb"
    generate_in_child("memory_profile_bench", f"{snapshots}, Path({str(pb)!r})")
    print(f"\nMemoryProfile: {snapshots:,} snapshots, {pb.stat().st_size / 2**20:.0f} MB")
    bare = measure([sys.executable, "-c", BARE_MEMORY_PROFILE.format(path=str(pb))], repeat)
    report(
        [
            ("bare parse (anchor)", *bare),
            ("export memory_profile, every snapshot", *measure(export(pb, "memory_profile", tmp / "o.json"), repeat)),
            (
                "export memory_profile xprof_form=1",
                *measure(export(pb, "memory_profile", tmp / "o1.json", "xprof_form=1"), repeat),
            ),
        ],
        bare,
    )


def log_memory_rows(tmp: Path, lines: int, repeat: int) -> None:
    log = tmp / "train.log"
    generate_in_child("log_memory_bench", f"Path({str(log)!r}), {lines}")
    size = log.stat().st_size
    print(f"\nLogMemory: {lines:,} memory lines, {size / 2**20:.0f} MB")
    plain = measure([sys.executable, "-c", f"for line in open({str(log)!r}, 'rb'): pass"], repeat)
    report(
        [
            ("plain line loop (anchor)", *plain),
            (
                "export memory_profile xprof_form=1",
                *measure(export(log, "memory_profile", tmp / "l1.json", "xprof_form=1"), repeat),
            ),
            ("export memory_profile, every snapshot", *measure(export(log, "memory_profile", tmp / "l.json"), repeat)),
        ],
        plain,
        size,
    )


def hparams_rows(tmp: Path, sessions: int, repeat: int) -> None:
    logdir = tmp / "sweep"
    generate_in_child("hparams_bench", f"Path({str(logdir)!r}), {sessions}")
    request = tmp / "request.json"
    request.write_text(json.dumps(HPARAMS_REQUEST))
    print(f"\nHParams: {sessions:,} sessions, {sum(1 for _ in logdir.rglob('*tfevents*')):,} event files")
    tensorboard = measure(
        [
            sys.executable,
            "-c",
            "import sys; sys.path.insert(0, 'benchmarks'); from pathlib import Path; "
            "import hparams_bench as h; "
            f"h.tensorboard_query(h.tensorboard_load(Path({str(logdir)!r})), {HPARAMS_REQUEST!r})",
        ],
        repeat,
    )
    report(
        [
            ("TensorBoard load + query (anchor)", *tensorboard),
            (
                "export hparams_session_groups",
                *measure(export(logdir, "hparams_session_groups", tmp / "h.json", f"request=@{request}"), repeat),
            ),
        ],
        tensorboard,
    )


def generate_in_child(module: str, arguments: str) -> None:
    """`module.generate(arguments)` of a sibling benchmark, run in a process of
    its own: a child's peak RSS counts the pages it was forked with, so this one stays small."""
    subprocess.run(
        [sys.executable, "-c", f"from pathlib import Path; from {module} import generate; generate({arguments})"],
        cwd=ROOT / "benchmarks",
        check=True,
    )


def main() -> None:
    like_an_installed_copy()
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", default="memory,log,hparams", help="which rows: memory, log, hparams")
    parser.add_argument("--snapshots", type=int, default=1_000_000)
    parser.add_argument("--log-lines", type=int, default=5_000_000)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rows = args.rows.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if "memory" in rows:
            memory_profile_rows(tmp, args.snapshots, args.repeat)
        if "log" in rows:
            log_memory_rows(tmp, args.log_lines, args.repeat)
        if "hparams" in rows:
            hparams_rows(tmp, args.sessions, args.repeat)


if __name__ == "__main__":
    main()
