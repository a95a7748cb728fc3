"""Whole `profscope export` processes against their anchors, as a user meets
them: time (median of --repeat) and peak RSS of each process.

    python benchmarks/export_bench.py [--snapshots 1000000] [--repeat 3]

Rows (issue "Fast everywhere"): a MemoryProfile .pb exported with every
snapshot and in XProf's form, against protobuf parsing the file alone.
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

BARE_MEMORY_PROFILE = ("from pathlib import Path; from protos import memory_profile_pb2; "
                       "memory_profile_pb2.MemoryProfile().ParseFromString(Path({path!r}).read_bytes())")


def run(argv: list[str]) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"{' '.join(argv)} failed:\n{err}")
    return seconds, usage.ru_maxrss / 1024


def measure(argv: list[str], repeat: int) -> tuple[float, float]:
    runs = [run(argv) for _ in range(repeat)]
    return statistics.median(t for t, _ in runs), max(m for _, m in runs)


def export(path: Path, tool: str, out: Path, *params: str) -> list[str]:
    argv = [sys.executable, "-m", "viewer.cli", "export", str(path), "--tool", tool, "-o", str(out)]
    for p in params:
        argv += ["--param", p]
    return argv


def report(rows: list[tuple[str, float, float]], anchor: tuple[float, float]) -> None:
    print(f"{'row':<44}{'time':>9}{'x anchor':>10}{'peak RSS':>11}{'x anchor':>10}")
    for name, t, m in rows:
        print(f"{name:<44}{t:8.2f}s{t / anchor[0]:9.2f}x{m:9.0f}MB{m / anchor[1]:9.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--snapshots", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pb = tmp / "big.memory_profile.pb"
        # Generated in a process of its own: a child's peak RSS counts the
        # pages it was forked with, so this one stays small.
        subprocess.run([sys.executable, "-c", f"from memory_profile_bench import generate; from pathlib import Path; "
                        f"generate({args.snapshots}, Path({str(pb)!r}))"], cwd=ROOT / "benchmarks", check=True)
        print(f"MemoryProfile: {args.snapshots:,} snapshots, {pb.stat().st_size / 2**20:.0f} MB")
        bare = measure([sys.executable, "-c", BARE_MEMORY_PROFILE.format(path=str(pb))], args.repeat)
        rows = [("bare parse (anchor)", *bare),
                ("export memory_profile, every snapshot", *measure(export(pb, "memory_profile", tmp / "o.json"), args.repeat)),
                ("export memory_profile xprof_form=1", *measure(export(pb, "memory_profile", tmp / "o1.json", "xprof_form=1"),
                                                                args.repeat))]
        report(rows, bare)


if __name__ == "__main__":
    main()
