"""Diffing two 1M-event timelines' statistics (models/analysis/diff.py): target under 1 s.

    python benchmarks/diff_bench.py [--events 1000000] [--runs 5] [--keep DIR]

Generates two Kineto-shaped traces with benchmarks/make_kineto_trace.py, the
baseline from tests/data/chrome_trace/gpu/rank-0.json.gz and the candidate from
rank-1 (the straggler: other kernels and ops), each replicated to about
--events events, and loads both timelines (not timed). Then times, median of
--runs: each statistics table's diff (both sides' tables computed and joined),
the overview diff, and the join alone (diff_tables on tables already computed),
and prints them with the rows each gives.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from profscope.models.analysis import diff  # noqa: E402
from profscope.models.repository.locations import open_repository  # noqa: E402

TEMPLATES = ROOT / "tests" / "data" / "chrome_trace" / "gpu"
EVENTS_PER_MIB = 2240  # of the templates' JSON text (both about the same)


def load(path: Path):
    repo = open_repository(path)
    (session,) = repo.enum_sessions()
    return repo.step_timeline(session.name, session.hosts[0])


def median_s(runs: int, fn) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--keep", default="", help="folder for the generated traces (reused when present)")
    a = p.parse_args()
    folder = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="profscope-diff-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    sides = []
    for rank in (0, 1):
        path = folder / f"rank{rank}_{a.events}.pt.trace.json"
        if not path.exists():
            subprocess.run([sys.executable, "benchmarks/make_kineto_trace.py", "--size-mb",
                            str(a.events / EVENTS_PER_MIB), "--source", str(TEMPLATES / f"rank-{rank}.json.gz"),
                            "-o", str(path)], cwd=ROOT, check=True, capture_output=True)
        t0 = time.perf_counter()
        sides.append(diff.Side(load(path)))
        print(f"{'baseline' if rank == 0 else 'candidate'}: {path.name}, {len(sides[-1].timeline):,} events "
              f"(loaded in {time.perf_counter() - t0:.1f} s, not counted)")
    base, cand = sides
    total = 0.0
    for table in diff.TABLES:
        s, d = median_s(a.runs, lambda table=table: diff.stats_diff(base, cand, table))
        total += s
        tables = [diff.stats_table(side, table) for side in sides]
        join_s, _ = median_s(a.runs, lambda tables=tables, table=table: diff.diff_tables(*tables, table))
        print(f"{table:13} diff: {s * 1000:7.1f} ms ({len(d):,} rows; the join alone {join_s * 1000:.1f} ms)")
    s, d = median_s(a.runs, lambda: diff.overview_diff(base, cand))
    print(f"overview      diff: {s * 1000:7.1f} ms ({len(d.pairs)} host pair)")
    print(f"kernel_stats + op_stats + op_types: {total:.2f} s (target: under 1 s)")


if __name__ == "__main__":
    main()
