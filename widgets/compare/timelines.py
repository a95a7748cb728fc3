"""Two timelines one above the other (baseline, candidate), each with its own
ruler, zoom and pan synchronised: both show the same span of time from their
alignment point (the first event, or the start of a ProfilerStep both have).
An op name can be highlighted on both."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QScrollBar, QSizePolicy, QSplitter, QVBoxLayout, QWidget

from profscope.models.analysis import diff
from profscope.models.data.timeline import Timeline
from profscope.widgets.timeline.canvas import TimelineCanvas


def step_spans(tl: Timeline) -> dict[int, tuple[float, float]]:
    """ProfilerStep number -> (its first start, its last end) in ps, over every host."""
    s = diff.step_spans(tl)
    return dict(zip(s.number.tolist(), zip(s.start_ps.tolist(), s.end_ps.tolist())))


def events_named(tl: Timeline, name: str) -> np.ndarray:
    """Events whose name (or op type) is exactly `name`."""
    hits = tl.find(name)
    keep = [tl.names[i] == name or tl.kinds[tl.kind[i]] == name for i in hits.tolist()]
    return hits[np.asarray(keep, bool)] if len(hits) else hits


class TimelinePair(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.timelines: list[Timeline | None] = [None, None]
        self.origins = [0.0, 0.0]
        self.steps: list[dict[int, tuple[float, float]]] = [{}, {}]
        self.canvases = [TimelineCanvas(), TimelineCanvas()]
        self.titles = [QLabel(), QLabel()]
        self.align_box = QComboBox(minimumContentsLength=18)
        self.highlight_label = QLabel(textFormat=Qt.PlainText)
        self.highlight_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # a long kernel name is cut,
        # not the window widened (its minimum width was the whole name's)
        self._syncing = False
        bar = QHBoxLayout()
        bar.addWidget(self.align_box)
        bar.addWidget(self.highlight_label, 1)
        split = QSplitter(Qt.Vertical)
        for k, canvas in enumerate(self.canvases):
            scrollbar = QScrollBar(Qt.Vertical)
            canvas.content_height_changed.connect(
                lambda h, c=canvas, s=scrollbar: (s.setRange(0, max(h - c.height(), 0)), s.setPageStep(c.height())))
            scrollbar.valueChanged.connect(canvas.set_scroll)
            row = QHBoxLayout()
            row.setContentsMargins(0, 0, 0, 0)
            row.setSpacing(0)
            row.addWidget(canvas, 1)
            row.addWidget(scrollbar)
            box = QVBoxLayout()
            box.setContentsMargins(0, 0, 0, 0)
            box.addWidget(self.titles[k])
            box.addLayout(row, 1)
            holder = QWidget()
            holder.setLayout(box)
            split.addWidget(holder)
            canvas.view_changed.connect(lambda k=k: self._sync(k))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(split, 1)
        self.align_box.currentIndexChanged.connect(lambda _: self.align())

    def set_timelines(self, base: Timeline | None, cand: Timeline | None, titles: tuple[str, str] = ("", "")) -> None:
        self.timelines = [base, cand]
        for canvas, label, tl, title in zip(self.canvases, self.titles, self.timelines, titles):
            label.setText(f"{title}: {len(tl):,} events" if tl is not None else f"{title}: no timeline")
            canvas.set_timeline(tl)
        self.steps = [step_spans(tl) if tl is not None else {} for tl in self.timelines]
        common = sorted(set(self.steps[0]) & set(self.steps[1]))
        self.align_box.blockSignals(True)
        self.align_box.clear()
        self.align_box.addItem("Aligned at the first event", None)
        for n in common:
            self.align_box.addItem(f"Aligned at step {n}", n)
        self.align_box.blockSignals(False)
        self.highlight_label.setText("")
        self.align()

    def align(self, step: int | None = None) -> None:
        """Both at their first event, showing both whole spans; or at step
        `step`'s start showing the longer of the two steps (default: the box's choice)."""
        if step is None:
            step = self.align_box.currentData()
        elif self.align_box.findData(step) >= 0:
            self.align_box.setCurrentIndex(self.align_box.findData(step))
            return  # the box's change aligns
        spans = [tl.span_ps if tl is not None and len(tl) else None for tl in self.timelines]
        self.origins = [float(s[0]) if s else 0.0 for s in spans]
        if step is not None:
            spans = [steps[step] for steps in self.steps]
            self.origins = [a for a, _ in spans]
        relative = [(a - o, b - o) for s, o in zip(spans, self.origins) if s for a, b in [s]]
        whole = [(a - o, b - o) for tl, o in zip(self.timelines, self.origins) if tl is not None and len(tl)
                 for a, b in [tl.span_ps]]
        if whole:  # either side zooms out and pans as far as the longer side's data, from its own origin
            lo, hi = min(r[0] for r in whole), max(r[1] for r in whole)
            for canvas, origin in zip(self.canvases, self.origins):
                canvas.bounds = (lo + origin, hi + origin)
        if relative:
            lo, hi = min(r[0] for r in relative), max(r[1] for r in relative)
            self.canvases[0].fit(lo + self.origins[0], hi + self.origins[0])  # view_changed: the other follows

    def _sync(self, k: int) -> None:
        """The other canvas shows the same time from its own origin."""
        if self._syncing:
            return
        a, b = self.canvases[k], self.canvases[1 - k]
        self._syncing = True
        try:
            b.ps_per_px = a.ps_per_px
            b.t0 = a.t0 - self.origins[k] + self.origins[1 - k]
            b._fitted = None  # noqa: SLF001 - keep this view when resized, as a user's zoom is kept
            b.update()
        finally:
            self._syncing = False

    def highlight(self, name: str | None) -> None:
        counts = []
        for canvas, tl in zip(self.canvases, self.timelines):
            hits = events_named(tl, name) if tl is not None and name else None
            canvas.set_highlight(hits)
            counts.append(0 if hits is None else len(hits))
        text = f"{counts[0]:,} events in the baseline, {counts[1]:,} in the candidate: {name}" if name else ""
        self.highlight_label.setText(text)
        self.highlight_label.setToolTip(text)
