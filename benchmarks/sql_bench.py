"""SQL benchmark (models/sql/database.py): registering tables, a GROUP BY over slices, Parquet export.

    python benchmarks/sql_bench.py [--folder /tmp/profscope-sql-bench] [--slices 10000000] [--rounds 3]

Inputs: the existing generators' files (step_stats_bench: 1M StepStats nodes, xplane_bench: a 2M-event
XSpace, memory_profile_bench: a 1M-snapshot memory profile), made once into --folder, and a synthetic
10M-slice timeline built in memory (numpy columns shaped like an XSpace timeline: 2,000 names, 64
lanes). For each:
- register: time and RSS growth of making the table queryable once its source is read (the Arrow
  arrays over the reader's columns and the view), against the size of the event columns;
- GROUP BY: `SELECT name, count(*), sum(dur_ns) FROM slices GROUP BY 1 ORDER BY 3 DESC LIMIT 20`
  (median of --rounds; target < 1 s at 10M slices);
- Parquet: the table written by write_parquet (models/sql/parquet.py), MiB of Parquet per second (target >= 200
  MB/s), and every table of the source (the views' rows computed too), as `export --format parquet` writes them
  once the file is read;
- whole processes (the files): `profscope query FILE "<GROUP BY>"` and `profscope export FILE --format
  parquet -o DIR`, wall time and peak RSS, against `profscope query FILE "SELECT 1"` (no table read).
Numbers fluctuate on a shared machine: medians, and ratios against the anchors.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from profscope.models.data.timeline import StringTable, Timeline  # noqa: E402
from profscope.models.repository.profile_repository import ProfileRepository, SessionInfo  # noqa: E402
from profscope.models.repository.registry import TRACE_VIEWER  # noqa: E402
from profscope.models.sql.database import HOST_TABLES, ProfileDatabase  # noqa: E402

GROUP_BY = "SELECT name, count(*), sum(dur_ns) FROM slices GROUP BY 1 ORDER BY 3 DESC LIMIT 20"


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


def synthetic_timeline(n: int, lanes: int = 64, names: int = 2000) -> Timeline:
    """n slices on `lanes` lanes, each lane back to back; names repeat as XSpace metadata does."""
    rng = np.random.default_rng(3)
    per_lane = np.full(lanes, n // lanes)
    per_lane[: n % lanes] += 1
    offsets = np.r_[0, np.cumsum(per_lane)].astype(np.int64)
    dur = rng.integers(1_000, 2_000_000, n).astype(np.int64)  # 1 ns to 2 µs, in ps
    start = np.empty(n, np.int64)
    for lane in range(lanes):
        a, b = offsets[lane], offsets[lane + 1]
        start[a:b] = np.cumsum(dur[a:b]) - dur[a:b]
    ids = (rng.zipf(1.3, n) % names).astype(np.int32)
    strings = [f"op_{k}/MatMul" for k in range(names)]
    return Timeline(groups=["/device:GPU:0", "/host:CPU"], lane_group=(np.arange(lanes) >= lanes // 2).astype(np.int32),
                    lane_names=[f"line {k}" for k in range(lanes)], lane_offsets=offsets, start_ps=start,
                    duration_ps=dur, kind=ids, kinds=strings, names=StringTable(strings, ids),
                    markers_ps=np.linspace(0, int(start.max()), 101).astype(np.int64))


class OneTimeline(ProfileRepository):
    """A repository holding one in-memory timeline (host "bench")."""

    location = "synthetic"

    def __init__(self, timeline: Timeline):
        self.timeline = timeline

    def enum_sessions(self):
        return [SessionInfo("synthetic", ("bench",), (TRACE_VIEWER,))]

    def step_timeline(self, session, host, step="", task=None):
        return self.timeline

    def steps(self, session, host):
        return []

    def memory_profile(self, session, host, task=None):
        raise NotImplementedError

    def chrome_trace(self, session, host, step="", task=None):
        raise NotImplementedError


def columns_mib(tl: Timeline) -> float:
    return tl.nbytes / 2**20


def bench_database(what: str, repo, table: str, rounds: int, out: Path) -> None:
    db = ProfileDatabase(repo, None)
    # Read the source first (through a table that shares it), then time only the registration.
    db.load(["flows"] if table == "slices" else ["allocations"])
    size = ""
    if table == "slices":
        tl = db._timeline_list(None)[0][3]
        size = f"{len(tl):,} slices, columns {columns_mib(tl):,.0f} MiB"
    rss, t = rss_mib(), time.perf_counter()
    db.load([table])
    register_ms = (time.perf_counter() - t) * 1000
    growth = rss_mib() - rss
    print(f"{what}: {size}\n  register {table}: {register_ms:,.1f} ms, RSS +{growth:,.1f} MiB")
    if table == "slices":
        times = []
        for _ in range(rounds):
            t = time.perf_counter()
            db.query(GROUP_BY)
            times.append(time.perf_counter() - t)
        print(f"  GROUP BY name over slices: median {statistics.median(times):.3f} s "
              f"(runs {', '.join(f'{x:.3f}' for x in times)})")
    rates = []
    for _ in range(rounds):
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        (path, size_bytes), = db.write_parquet(out, [table], "bench")
        rates.append((size_bytes / 2**20, time.perf_counter() - t))
    mb, s = statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates)
    print(f"  Parquet {table}: {mb:,.1f} MiB in median {s:.3f} s = {mb / s:,.0f} MiB/s")
    # What `export --format parquet` does once the source is read: every table, the views' too.
    db.load(HOST_TABLES)
    rates = []
    for _ in range(rounds):
        shutil.rmtree(out, ignore_errors=True)
        t = time.perf_counter()
        written = db.write_parquet(out, HOST_TABLES, "bench")
        rates.append((sum(size for _, size in written) / 2**20, time.perf_counter() - t))
    mb, s = statistics.median(r[0] for r in rates), statistics.median(r[1] for r in rates)
    print(f"  Parquet, every table: {mb:,.1f} MiB in median {s:.3f} s = {mb / s:,.0f} MiB/s")
    shutil.rmtree(out, ignore_errors=True)
    db.close()


def run_process(argv: list[str], stats: Path) -> tuple[float, float]:
    """(wall s, peak RSS MiB) of one process."""
    t = time.perf_counter()
    done = subprocess.run(["/usr/bin/time", "-o", str(stats), "-f", "%M", *argv], cwd=ROOT, capture_output=True,
                          text=True)
    wall = time.perf_counter() - t
    if done.returncode:
        raise RuntimeError(f"{argv} failed:\n{done.stderr[-2000:]}")
    return wall, int(stats.read_text().split()[-1]) / 1024


def bench_processes(path: Path, query: str, rounds: int, work: Path) -> None:
    cli = [sys.executable, "-m", "profscope.viewer.cli"]
    out = work / "parquet"
    rows = {"query SELECT 1 (anchor: no table read)": cli + ["query", str(path), "SELECT 1"],
            "query (the GROUP BY)" if "slices" in query else f"query {query}": cli + ["query", str(path), query],
            "export --format parquet": cli + ["export", str(path), "--format", "parquet", "-o", str(out)]}
    for what, argv in rows.items():
        runs = []
        for _ in range(rounds):
            shutil.rmtree(out, ignore_errors=True)
            runs.append(run_process(argv, work / "time.txt"))
        wall, rss = statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs)
        extra = ""
        if out.exists():
            mib = sum(p.stat().st_size for p in out.rglob("*.parquet")) / 2**20
            extra = f", {mib:,.1f} MiB of Parquet"
        print(f"  process {what}: median {wall:.2f} s, peak RSS {rss:,.0f} MiB{extra}")
    shutil.rmtree(out, ignore_errors=True)


def inputs(folder: Path) -> dict[str, Path]:
    """The generators' files, made once."""
    import memory_profile_bench
    import step_stats_bench
    import xplane_bench

    folder.mkdir(parents=True, exist_ok=True)
    files = {"StepStats, 1M nodes": (folder / "step_stats_1000000.pb", step_stats_bench.generate, 1_000_000),
             "XSpace, 2M events": (folder / "bench.xplane.pb", xplane_bench.generate, 2_000_000),
             "memory profile, 1M snapshots": (folder / "bench.memory_profile.pb", memory_profile_bench.generate,
                                              1_000_000)}
    for what, (path, generate, n) in files.items():
        if not path.exists():
            print(f"generating {what} ({path}) ...", flush=True)
            generate(n, path)
    return {what: path for what, (path, _, _) in files.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", type=Path, default=Path(tempfile.gettempdir()) / "profscope-sql-bench")
    parser.add_argument("--slices", type=int, default=10_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="profscope-sql-"))
    try:
        from profscope.models.repository.locations import open_repository

        for what, path in inputs(args.folder).items():
            table = "memory_snapshots" if "memory" in what else "slices"
            print(f"{what}: {path.stat().st_size / 2**20:,.0f} MiB file")
            bench_database(what, open_repository(path), table, args.rounds, work / "out")
            bench_processes(path, GROUP_BY if table == "slices" else "SELECT max(heap_bytes) FROM memory_snapshots",
                            args.rounds, work)
        t = time.perf_counter()
        tl = synthetic_timeline(args.slices)
        print(f"(synthetic timeline built in {time.perf_counter() - t:.1f} s)")
        bench_database(f"synthetic timeline, {args.slices:,} slices", OneTimeline(tl), "slices", args.rounds,
                       work / "out")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
