"""Frame times of the timeline widget, shared by the timeline benchmarks.

Offscreen, 1600x1000: a repaint per frame while panning a few pixels back
and forth, at the whole span, 1/100 and 1/10000 of it and one event.
"""

from __future__ import annotations

import os
import statistics
import time


def open_view(timeline):
    """A shown TimelineView (offscreen) on the timeline."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from widgets.timeline_view import TimelineView

    app = QApplication.instance() or QApplication([])
    view = TimelineView()
    view.resize(1600, 1000)
    view.set_timeline(timeline)
    view.show()
    app.processEvents()
    return view


def frame_times(canvas, count: int = 15) -> list[float]:
    canvas.repaint()
    frames = []
    for k in range(count):
        canvas.pan(3 if k % 2 else -3)
        t = time.perf_counter()
        canvas.repaint()
        frames.append(time.perf_counter() - t)
    return frames


def print_redraw_times(view) -> None:
    canvas, tl = view.canvas, view.canvas.timeline
    a, b = tl.span_ps
    i = len(tl) // 2
    s = float(tl.start_ps[i])
    zooms = {"whole": (a, b), "1/100": (s, s + (b - a) / 100), "1/10000": (s, s + (b - a) / 10000),
             "one event": (s, s + float(tl.duration_ps[i]) + 1)}
    for label, (x0, x1) in zooms.items():
        canvas.fit(x0, x1)
        frames = frame_times(canvas)
        print(f"  redraw at {label:>9}: median {statistics.median(frames) * 1000:.1f} ms, max {max(frames) * 1000:.1f} ms "
              f"per frame ({len(tl):,} events, {tl.num_lanes} lanes; target < 16 ms)")
