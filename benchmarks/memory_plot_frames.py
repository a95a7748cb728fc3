"""Frame times of the memory plot while zooming, in the real window.

    python benchmarks/memory_plot_frames.py [--snapshots 1000000 5000000] [--png DIR]

Offscreen, the main window at its default size with the memory tab showing a
generated allocator (allocations with random lifetimes, a stack, free memory,
fragmentation). Per zoom level (the whole run, 1% of it, a single allocation)
the plot is zoomed in and out by one wheel step per frame; a frame is timed
from the wheel event to the end of the repaint it causes, on the clock (wall)
and in CPU time of the GUI thread (which does all of a frame's work; on a
busy machine the wall clock also counts the waits for a core). Prints median
and p95 per level and over all frames (target: median < 16 ms), and the time
the plot's data (the min/max pyramids) takes to build.

--png DIR saves the plot at each level on the light and the dark palette.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

WHEEL_FRAMES = 20  # per zoom level: in, out, in, out...


def generate(n: int, seed: int = 1):
    """An AllocatorProfile of n snapshots: n/2 allocations, each freed after
    an exponential lifetime (a few live long), 1 µs apart on average."""
    from profscope.models.data.memory_profile import (
        AllocatorProfile,
        MemoryProfileData,
        Snapshots,
        summarize,
        xprof_peak_rows,
    )

    rng = np.random.default_rng(seed)
    m = n // 2
    span = n * 1_000_000  # ps
    start = np.sort(rng.integers(0, span, m))
    life = rng.exponential(span / 4000, m)
    long = rng.random(m) < 0.002
    life[long] = rng.exponential(span / 6, int(long.sum()))
    end = np.minimum(start + life.astype(np.int64) + 1, span)
    size = 256 * rng.integers(1, 4096, m).astype(np.int64)
    time_ps = np.r_[start, end]
    order = np.argsort(time_ps, kind="stable")
    time_ps = time_ps[order]
    activity = np.r_[np.ones(m, np.int32), np.full(m, 2, np.int32)][order]
    allocation = np.r_[size, size][order]
    heap = np.cumsum(np.where(activity == 1, allocation, -allocation))
    # Stack reservations change now and then (a few per cent of the heap).
    stack_steps = rng.integers(0, 64 << 20, n // 50_000 + 1)
    stack = stack_steps[np.arange(n) // 50_000].astype(np.int64)
    in_use = stack + heap
    capacity = int(in_use.max() * 1.5)
    free = capacity - in_use
    phase = np.linspace(0, 12 * np.pi, n)
    fragmentation = np.clip(0.25 + 0.15 * np.sin(phase) + rng.normal(0, 0.03, n), 0, 1)
    ops = ["", "model/dense/MatMul", "model/conv/Conv2D", "model/relu/Relu", "model/add/AddV2"]
    tl = Snapshots(
        time_ps=time_ps, stack=stack, heap=heap, free=free, fragmentation=fragmentation,
        peak_in_use=np.maximum.accumulate(in_use), activity=activity, requested=allocation - 7,
        allocation=allocation, address=((1 << 32) + np.r_[np.arange(m), np.arange(m)][order] * 1024).astype(np.uint64),
        step=(np.arange(n) // 20_000).astype(np.int64), op=rng.integers(1, len(ops), n).astype(np.int32),
        region=np.zeros(n, np.int32), dtype=np.zeros(n, np.int32), shape=np.zeros(n, np.int32), strings=ops)
    summary = summarize(tl)
    summary.num_allocations = summary.num_deallocations = m
    a = AllocatorProfile(memory_id="GPU_0_bfc", timeline=tl, summary=summary, peak_allocations=None,
                         complete=True, stored_snapshots=tl)
    a.peak_allocations = xprof_peak_rows(tl, summary)
    return MemoryProfileData(host="bench", allocators={a.memory_id: a}, source="generated")


def open_window(data):
    """The main window (default size, offscreen) showing the memory tab on data,
    handed over as the window does after its worker job."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtCore import QSettings

    from profscope.viewer.app import application
    from profscope.viewer.window import MainWindow

    app = application()
    settings = QSettings(str(Path(tempfile.mkdtemp(prefix="profscope-frames-")) / "s.ini"), QSettings.IniFormat)
    window = MainWindow(settings)
    window.show()
    app.processEvents()
    from profscope.widgets.memory import plot as memory_plot

    view = window.memory_view
    prepare = getattr(memory_plot, "prepare_series", None)  # the worker job's part (absent before it moved there)
    t, c = time.perf_counter(), time.thread_time()
    prepared = prepare(data) if prepare else None
    built = (time.perf_counter() - t, time.thread_time() - c)
    t = time.perf_counter()
    view.set_profile(data, prepared) if prepare else view.set_profile(data)
    shown = time.perf_counter() - t
    app.processEvents()
    return app, window, view, built, shown


class PaintCounter:
    """Counts the plot viewport's paint events (each frame must paint)."""

    def __init__(self, widget):
        from PySide6.QtCore import QEvent, QObject

        counter = self

        class Filter(QObject):
            def eventFilter(self, obj, event):
                if event.type() == QEvent.Paint:
                    counter.count += 1
                return False

        self.count = 0
        self.filter = Filter()
        widget.installEventFilter(self.filter)


def wheel(plot, viewport, delta: int) -> None:
    """One wheel step over the middle of the plot's data area."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    vb = plot.plot.getViewBox()
    centre = plot.mapFromScene(vb.sceneBoundingRect().center())
    pos = QPointF(centre)
    event = QWheelEvent(pos, QPointF(viewport.mapToGlobal(centre)), QPoint(), QPoint(0, delta),
                        Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
    QApplication.sendEvent(viewport, event)


def one_allocation(allocator) -> tuple[int, int]:
    """An allocation near the middle of the run and the snapshot freeing it (-1: never)."""
    tl = allocator.timeline
    k = int(np.searchsorted(tl.time_ps, (float(tl.time_ps[0]) + float(tl.time_ps[-1])) / 2))
    k += int(np.argmax(tl.activity[k:] == 1))
    return k, allocator.freed_at(k)


def zoom_levels(allocator) -> dict[str, tuple[float, float]]:
    tl = allocator.timeline
    t0, t1 = float(tl.time_ps[0]), float(tl.time_ps[-1])
    mid = (t0 + t1) / 2
    # A single allocation near the middle: its life with a margin on each side.
    k, freed = one_allocation(allocator)
    a, b = float(tl.time_ps[k]), float(tl.time_ps[freed if freed >= 0 else -1])
    pad = (b - a) * 0.25 + 1
    return {"whole run": (t0, t1), "1%": (mid - (t1 - t0) / 200, mid + (t1 - t0) / 200),
            "one allocation": (a - pad, b + pad)}


def frames(app, plot, x0: float, x1: float, count: int = WHEEL_FRAMES) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of each frame."""
    viewport = plot.viewport()
    painted = PaintCounter(viewport)
    plot.plot.setXRange(x0, x1, padding=0)
    app.processEvents()
    wall, cpu = [], []
    for k in range(count):
        before = painted.count
        t, c = time.perf_counter(), time.thread_time()
        wheel(plot, viewport, 120 if k % 2 == 0 else -120)
        app.processEvents()  # the update the wheel scheduled is painted here
        wall.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - c)
        assert painted.count > before, "a wheel step did not repaint the plot"
    viewport.removeEventFilter(painted.filter)
    return wall, cpu


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def ms(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:5.1f} ms, p95 {p95(values) * 1000:5.1f} ms"


def save_pngs(app, view, levels, out: Path, tag: str) -> None:
    from PySide6.QtGui import QPalette
    from PySide6.QtWidgets import QApplication

    from profscope.widgets.palette import dark_palette

    original = QPalette(app.palette())
    a = view.allocator
    moment = int(np.searchsorted(a.timeline.time_ps, sum(levels["one allocation"]) / 2))
    for dark in (False, True):
        QApplication.setPalette(dark_palette() if dark else original)
        app.processEvents()
        view.pick_moment(moment)  # the selected moment's line
        view.plot.mark_lifetime(*one_allocation(a))  # as when its table row is selected
        for name, (x0, x1) in levels.items():
            view.plot.plot.setXRange(x0, x1, padding=0)
            app.processEvents()
            path = out / f"{tag}-{'dark' if dark else 'light'}-{name.replace(' ', '_').replace('%', 'pct')}.png"
            view.plot.grab().save(str(path))
            print(f"  wrote {path}")
    QApplication.setPalette(original)
    view.pick_moment(None)
    app.processEvents()


def run(n: int, png: Path | None, tag: str) -> None:
    t = time.perf_counter()
    data = generate(n)
    allocator = next(iter(data.allocators.values()))
    print(f"{n:,} snapshots generated in {time.perf_counter() - t:.1f} s; load average {os.getloadavg()[0]:.1f} "
          f"on {os.cpu_count()} cores")
    app, window, view, built, shown = open_window(data)
    plot = view.plot
    vb = plot.plot.getViewBox()
    print(f"  window {window.width()}x{window.height()}, plot {plot.width()}x{plot.height()}, "
          f"data area {int(vb.width())}x{int(vb.height())}")
    print(f"  plot data built in {built[0] * 1000:.0f} ms ({built[1] * 1000:.0f} ms CPU; the worker's part), "
          f"shown in {shown * 1000:.0f} ms (GUI thread)")
    levels = zoom_levels(allocator)
    every_wall, every_cpu = [], []
    for name, (x0, x1) in levels.items():
        wall, cpu = frames(app, plot, x0, x1)
        every_wall += wall
        every_cpu += cpu
        print(f"  zoom at {name:>14}: wall {ms(wall)}; CPU {ms(cpu)}")
    print(f"  all zoom frames ({len(every_wall)}): wall {ms(every_wall)}; CPU {ms(every_cpu)}"
          "  (target: median < 16 ms)")
    still, still_cpu = [], []
    for _ in range(10):
        t, c = time.perf_counter(), time.thread_time()
        plot.viewport().repaint()
        still.append(time.perf_counter() - t)
        still_cpu.append(time.thread_time() - c)
    print(f"  repaint without any change: wall {ms(still)}; CPU {ms(still_cpu)}")
    if png is not None:
        png.mkdir(parents=True, exist_ok=True)
        save_pngs(app, view, levels, png, f"{tag}-{n // 1000}k")
    window.close()
    window.deleteLater()
    app.processEvents()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--snapshots", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--png", type=Path, help="save the plot at each zoom level, light and dark, here")
    parser.add_argument("--tag", default="plot", help="prefix of the PNG names")
    args = parser.parse_args()
    for n in args.snapshots:
        run(n, args.png, args.tag)


if __name__ == "__main__":
    main()
