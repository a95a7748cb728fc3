"""Opening a big Kineto trace as a user does: whole `profscope` processes.

    python benchmarks/chrome_trace_bench.py [--size-mb 2048] [--runs 3] [--keep DIR]

Generates a Kineto-shaped trace (benchmarks/make_kineto_trace.py, replicated
from a real one) as .json and .json.gz, then times, each in a fresh process
with its peak RSS:
- `profscope export TRACE --tool kernel_stats` (read, timeline, kernel table);
- the window: open the trace, wait for the timeline and its statistics, draw
  one frame (offscreen);
and the anchors measured in the same run: reading the file, and zlib
inflating the .gz alone. Prints medians.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from as_a_user import like_an_installed_copy

ROOT = Path(__file__).resolve().parent.parent

WINDOW = r"""
import sys, time
from PySide6.QtCore import QEventLoop
from profscope.viewer.app import application
from profscope.viewer.window import MainWindow
app = application()
w = MainWindow()
w.resize(1284, 860)
w.show()
t0 = time.perf_counter()
loop = QEventLoop()
failure = []
w.runner.finished.connect(lambda _result: loop.quit())  # emitted once the views show the result
w.runner.failed.connect(lambda message: (failure.append(message), loop.quit()))
w.open_path(sys.argv[1])  # opening loads the first host's timeline and its statistics
while w.timeline_view.timeline is None and not failure:
    loop.exec()
if failure:
    sys.exit(failure[0])
w.timeline_view.canvas.grab()
print(time.perf_counter() - t0)
"""

INFLATE = r"""
import sys, time, zlib
t0 = time.perf_counter()
d = zlib.decompressobj(wbits=31)
with open(sys.argv[1], "rb") as f:
    while chunk := f.read(4 << 20):
        d.decompress(chunk, 0)
print(time.perf_counter() - t0)
"""


def child_rss(args: list[str]) -> tuple[float, float]:
    """Seconds and peak RSS of one child, the RSS read from the child itself."""
    wrapper = ("import resource, subprocess, sys, time\n"
               "t0 = time.perf_counter()\n"
               "r = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
               "dt = time.perf_counter() - t0\n"
               "if r.returncode: sys.exit(r.stderr[-2000:])\n"
               "print(dt, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)\n")
    result = subprocess.run([sys.executable, "-c", wrapper, *args], cwd=ROOT, capture_output=True, text=True,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)})
    if result.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{result.stderr[-3000:]}")
    seconds, rss = result.stdout.split()[-2:]
    return float(seconds), float(rss)


def median_of(runs: int, args: list[str]) -> tuple[float, float]:
    results = [child_rss(args) for _ in range(runs)]
    return statistics.median(r[0] for r in results), max(r[1] for r in results)


def main() -> None:
    like_an_installed_copy()
    p = argparse.ArgumentParser()
    p.add_argument("--size-mb", type=int, default=2048)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--keep", default="", help="folder for the generated traces (reused when present)")
    p.add_argument("--no-window", action="store_true")
    a = p.parse_args()
    folder = Path(a.keep) if a.keep else Path(tempfile.mkdtemp(prefix="profscope-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    plain, packed = folder / f"kineto_{a.size_mb}.pt.trace.json", folder / f"kineto_{a.size_mb}.pt.trace.json.gz"
    for path, extra in ((plain, []), (packed, ["--gzip"])):
        if not path.exists():
            subprocess.run([sys.executable, "benchmarks/make_kineto_trace.py", "--size-mb", str(a.size_mb),
                            "-o", str(path), *extra], cwd=ROOT, check=True)
    size = plain.stat().st_size / 1e6
    print(f"trace: {size:,.0f} MB of JSON, {packed.stat().st_size / 1e6:,.0f} MB gzipped")
    profscope = [sys.executable, "-m", "profscope.viewer.cli"]
    read_s, _ = median_of(a.runs, [sys.executable, "-c", f"open({str(plain)!r}, 'rb').read()"])
    print(f"anchor: reading the file: {read_s:.2f} s")
    inflate_s, _ = median_of(a.runs, [sys.executable, "-c", INFLATE, str(packed)])
    print(f"anchor: zlib inflating the .gz alone: {inflate_s:.2f} s ({size / inflate_s:,.0f} MB/s of JSON)")
    for path in (plain, packed):
        s, rss = median_of(a.runs, [*profscope, "export", str(path), "--tool", "kernel_stats", "-o", os.devnull])
        note = f", {inflate_s / s:.2f}x zlib alone" if path is packed else ""
        print(f"profscope export --tool kernel_stats {path.name}: {s:.2f} s, {size / s:,.0f} MB/s{note}; "
              f"peak RSS {rss:,.0f} MiB ({rss * 1.048576 / size:.2f}x the JSON)")
    if not a.no_window:
        script = folder / "window_load.py"
        script.write_text(WINDOW)
        for path in (plain, packed):
            s, rss = median_of(a.runs, [sys.executable, str(script), str(path)])
            print(f"window: open {path.name} to a drawn timeline and statistics: {s:.2f} s, "
                  f"{size / s:,.0f} MB/s; peak RSS {rss:,.0f} MiB")


if __name__ == "__main__":
    main()
