"""Whole `profscope` processes of two builds side by side (before and after a change), as a user runs
them: wall time and peak RSS, runs interleaved (A, B, A, B ...) so a busy machine weighs on both alike.

    python benchmarks/compare_builds.py BIN_A BIN_B [--repeat 5] [--inputs DIR]

BIN_A, BIN_B: the bin folders of two environments with Profscope installed (each has `profscope`).
--inputs: the folder of sql_bench's generated files (step_stats_1000000.pb, bench.xplane.pb,
bench.memory_profile.pb) and a 300 MB Kineto trace (make_kineto_trace.py); made there first if missing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TRACE = ROOT / "tests" / "data" / "chrome_trace" / "train.pt.trace.json.gz"
KINETO = "kineto_300mb.pt.trace.json"  # made by make_kineto_trace.py in --inputs when missing


def commands(inputs: Path, out: Path) -> dict[str, list[str]]:
    xspace, steps, memory, kineto = (inputs / n for n in ("bench.xplane.pb", "step_stats_1000000.pb",
                                                            "bench.memory_profile.pb", KINETO))
    return {
        "formats (start-up)": ["formats"],
        "XSpace 2M: trace_viewer": ["export", str(xspace), "--tool", "trace_viewer", "-o", str(out / "x.json")],
        "XSpace 2M: memory_profile": ["export", str(xspace), "--tool", "memory_profile", "-o", str(out / "m.json")],
        "XSpace 2M: Parquet": ["export", str(xspace), "--format", "parquet", "-o", str(out / "pq")],
        "StepStats 1M: trace_viewer": ["export", str(steps), "--tool", "trace_viewer", "-o", str(out / "s.json")],
        "memory 1M: xprof_form": ["export", str(memory), "--tool", "memory_profile", "--param", "xprof_form=1",
                                  "-o", str(out / "mp.json")],
        "Kineto: kernel_stats": ["export", str(TRACE), "--tool", "kernel_stats", "-o", str(out / "k.json")],
        "Kineto 300 MB: overview": ["export", str(kineto), "--tool", "overview", "-o", str(out / "o.json")],
        "XSpace 2M: query": ["query", str(xspace), "SELECT name, count(*) FROM slices GROUP BY 1 ORDER BY 2 DESC "
                                                   "LIMIT 5", "-o", str(out / "q.txt")],
    }


def run(binary: Path, argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB) of one process (wait4 reports the child's own peak)."""
    start = time.perf_counter()
    proc = subprocess.Popen([str(binary / "profscope"), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{binary / 'profscope'} {' '.join(argv)} failed: {proc.stderr.read().decode()[-400:]}")
    return wall, usage.ru_maxrss / 1024


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("bin_a", type=Path)
    p.add_argument("bin_b", type=Path)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--inputs", type=Path, default=Path(tempfile.gettempdir()) / "profscope-sql-bench")
    args = p.parse_args()
    if not all((args.inputs / n).exists() for n in ("bench.xplane.pb", "step_stats_1000000.pb",
                                                      "bench.memory_profile.pb")):
        sys.path.insert(0, str(ROOT / "benchmarks"))
        import sql_bench

        sql_bench.inputs(args.inputs)
    if not (args.inputs / KINETO).exists():
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_kineto_trace.py"), "--size-mb", "300",
                        "-o", str(args.inputs / KINETO)], check=True)
    print(f"{'command':30} {'A s':>7} {'B s':>7} {'B/A':>6} {'A MiB':>7} {'B MiB':>7}   (medians of {args.repeat})")
    with tempfile.TemporaryDirectory() as tmp:
        for name, argv in commands(args.inputs, Path(tmp)).items():
            times: dict[str, list[float]] = {"a": [], "b": []}
            rss: dict[str, list[float]] = {"a": [], "b": []}
            for _ in range(args.repeat):
                for side, binary in (("a", args.bin_a), ("b", args.bin_b)):
                    subprocess.run(["rm", "-rf", str(Path(tmp) / "pq")], check=True)
                    wall, peak = run(binary, argv)
                    times[side].append(wall)
                    rss[side].append(peak)
            ta, tb = statistics.median(times["a"]), statistics.median(times["b"])
            print(f"{name:30} {ta:7.2f} {tb:7.2f} {tb / ta:6.2f} {statistics.median(rss['a']):7.0f} "
                  f"{statistics.median(rss['b']):7.0f}", flush=True)


if __name__ == "__main__":
    main()
