"""Frame times of the timeline widget, shared by the timeline benchmarks.

Offscreen, 1600x1000: a repaint per frame while panning a few pixels back
and forth, at the whole span, 1/100 and 1/10000 of it and one event.

Run on its own for Chrome traces (flows, counters, instants):

    python benchmarks/timeline_frames.py --chrome trace.json [--chrome rank-1.json ...]
        [--counters 2] [--samples 100000]

Several --chrome files are opened as ranks of one timeline. The median pan
and zoom frame times are printed for the plain timeline (the baseline, same
run) and with a cudaLaunchKernel (or any flow source) selected so that its
flows are drawn, plus counter tracks: the trace's own, or when it has none,
--counters synthetic tracks per group of --samples samples each.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import sys
import time
from pathlib import Path


def open_view(timeline):
    """A shown TimelineView (offscreen) on the timeline."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from profscope.widgets.timeline.view import TimelineView

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


def zoom_frame_times(canvas, at_x: float | None = None, count: int = 15) -> list[float]:
    """A repaint per frame while zooming in and out by one wheel step."""
    from profscope.widgets.timeline.canvas import ZOOM_STEP

    canvas.repaint()
    frames = []
    for k in range(count):
        canvas.zoom(ZOOM_STEP if k % 2 == 0 else 1 / ZOOM_STEP, at_x)
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
        print(
            f"  redraw at {label:>9}: median {statistics.median(frames) * 1000:.1f} ms, "
            f"max {max(frames) * 1000:.1f} ms "
            f"per frame ({len(tl):,} events, {tl.num_lanes} lanes; target < 16 ms)"
        )


# ---------------------------------------------------------------- Chrome traces


def flow_source(tl) -> int:
    """The flow source nearest the middle of the trace, preferring a
    cudaLaunchKernel (its ac2g flow to the kernel); -1 without flows."""
    import numpy as np

    if tl.flows is None or not len(tl.flows):
        return -1
    src = np.unique(tl.flows.src)
    launch = src[np.array([tl.names[int(k)] == "cudaLaunchKernel" for k in src.tolist()], bool)]
    pool = launch if len(launch) else src
    middle = sum(tl.span_ps) / 2
    return int(pool[np.argmin(np.abs(tl.start_ps[pool] - middle))])


def synthetic_counters(tl, per_group: int, samples: int) -> list:
    """Counter tracks (a memory-like random walk) over the whole span for each group."""
    import numpy as np

    from profscope.models.data.timeline import Counter

    rng = np.random.default_rng(3)
    a, b = tl.span_ps
    out = []
    for g in range(len(tl.groups)):
        for k in range(per_group):
            times = np.sort(rng.integers(a, b + 1, samples)).astype(np.int64)
            values = np.maximum(np.cumsum(rng.normal(0, 1 << 20, samples)), 0)
            out.append(Counter(g, f"synthetic {k}", times, values))
    return out


def chrome_frames(paths: list[Path], per_group: int, samples: int) -> None:
    from profscope.models.formats.chrome_trace import build_timeline, scan

    t = time.perf_counter()
    traces = [("" if len(paths) == 1 else f"rank-{k}", scan(p)) for k, p in enumerate(paths)]
    tl = build_timeline(traces)
    print(
        f"{', '.join(map(str, paths))}: {len(tl):,} events, {tl.num_lanes} lanes, {len(tl.groups)} groups, "
        f"{len(tl.flows) if tl.flows is not None else 0:,} flows, {len(tl.counters)} counters, "
        f"{int((tl.duration_ps == 0).sum()):,} instants; loaded in {time.perf_counter() - t:.2f} s"
    )
    plain = dataclasses.replace(tl, counters=[], flows=None)
    if tl.counters:
        counters, what = tl.counters, f"its {len(tl.counters)} counters"
    else:
        counters = synthetic_counters(tl, per_group, samples)
        what = f"{len(counters)} synthetic counters of {samples:,} samples"
    full = dataclasses.replace(tl, counters=counters)
    i = flow_source(full)
    a, b = tl.span_ps
    if i >= 0:
        f = full.flows
        ks = f.of_event(i)
        other = f.dst[ks[f.src[ks] == i]]
        j = int(other[0]) if len(other) else i
        s = float(min(tl.start_ps[i], tl.start_ps[j]))
        e = float(max(tl.end_ps[i], tl.end_ps[j]))
        around = f"{tl.names[i]} -> {tl.names[j]}"[:90]
    else:
        s = float(tl.start_ps[len(tl) // 2])
        e = s + float(tl.duration_ps[len(tl) // 2]) + 1
        around = "no flows"
    zooms = {"whole": (a, b), "1/100": (s, s + (b - a) / 100), "1/10000": (s, s + (b - a) / 10000), "flow ends": (s, e)}
    for label, timeline, select in (
        ("baseline (no flows, no counters, nothing selected)", plain, -1),
        (f"flows of the selected event + {what}", full, i),
    ):
        view = open_view(timeline)
        canvas = view.canvas
        print(f"  {label} at 1600x1000; selected: {around if select >= 0 else '-'}")
        for zlabel, (x0, x1) in zooms.items():
            canvas.fit(x0, x1)
            if select >= 0:
                canvas.select_event(select)
                canvas.scroll_to_event(select)
            at = (float(tl.start_ps[select]) - canvas.t0) / canvas.ps_per_px if select >= 0 else None
            pans, zoom_frames = frame_times(canvas), zoom_frame_times(canvas, at)
            arrows = len(canvas.flow_segments())
            ms = lambda frames: f"median {statistics.median(frames) * 1000:5.1f} ms (max {max(frames) * 1000:5.1f})"  # noqa: E731
            print(
                f"    {zlabel:>9}: pan {ms(pans)}, zoom {ms(zoom_frames)}"
                f"{f', {arrows} arrow(s) drawn' if select >= 0 else ''}"
            )
        view.close()
        view.deleteLater()
    print("  target < 16 ms a frame")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--chrome",
        type=Path,
        action="append",
        required=True,
        help="a Chrome trace JSON (repeat for the ranks of one timeline)",
    )
    parser.add_argument(
        "--counters", type=int, default=2, help="synthetic counter tracks per group when the trace has none"
    )
    parser.add_argument("--samples", type=int, default=100_000, help="samples per synthetic counter")
    args = parser.parse_args()
    chrome_frames(args.chrome, args.counters, args.samples)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main()
