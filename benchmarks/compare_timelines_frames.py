"""Frame times of the Compare tab's two synchronised timelines: a pan or zoom
of one canvas moves the other, and both repaint (offscreen, 1600x1000).

    python benchmarks/compare_timelines_frames.py BASELINE CANDIDATE

Prints the median and worst time of one frame of both canvases together
(the issue's budget: 16 ms), at the whole span and zoomed in 100x.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def frames(page, count: int = 30) -> list[float]:
    top, bottom = page.canvases
    out = []
    for k in range(count):
        t = time.perf_counter()
        top.pan(3 if k % 2 else -3)  # the bottom follows
        page.repaint()  # both canvases once, as the event loop paints them (a canvas's own repaint also
        # paints the other's pending update: two repaint calls drew one canvas twice)
        out.append(time.perf_counter() - t)
    return out


def main(argv: list[str]) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from profscope.models.analysis.comparison import Place, compare
    from profscope.widgets.compare.view import CompareView

    app = QApplication.instance() or QApplication([])
    c = compare(Place(argv[0]), Place(argv[1]))
    view = CompareView()
    view.resize(1600, 1000)
    view.set_comparison(c)
    view.pages.setCurrentWidget(view.timelines_page)
    view.show()
    app.processEvents()
    page = view.timelines_page
    for label, zoom in (("whole span", 1.0), ("zoomed 100x", 100.0)):
        page.align()
        page.canvases[0].zoom(zoom)
        ms = [f * 1000 for f in frames(page)]
        print(f"{label}: both canvases {statistics.median(ms):.2f} ms median, {max(ms):.2f} ms worst per frame "
              f"({len(c.baseline.timeline):,} + {len(c.candidate.timeline):,} events)")


if __name__ == "__main__":
    main(sys.argv[1:])
