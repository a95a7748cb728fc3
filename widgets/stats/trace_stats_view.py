"""The Statistics tab of GPU traces (PyTorch profiler / Kineto): Overview (per
host the GPU's compute / non-compute / idle time, ProfilerStep times and the
devices, with one stacked bar per host so a straggler rank stands out),
Kernels (GPU activity per name) and Operators (cpu_op per name), for the whole
capture or a range of ProfilerSteps.

The view shows a finished `TraceStats` (profscope.models.analysis.trace_stats results computed
in a worker, the top kernels' launch parameters included); it reads no files.
Choosing a step range emits `step_range_requested`; the window computes that
range's statistics in its worker and calls `set_stats` again.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QSizePolicy,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from profscope.models.analysis.trace_stats import TraceStats
from profscope.models.core.units import format_time_ps
from profscope.models.repository.registry import KERNEL_STATS, OP_STATS, OVERVIEW
from profscope.widgets.palette import follow
from profscope.widgets.stats.kernels_page import KernelsPage
from profscope.widgets.stats.operators_page import OperatorsPage
from profscope.widgets.stats.overview_page import OverviewPage

ALL_STEPS = "All steps"
PAGES = (OVERVIEW, KERNEL_STATS, OP_STATS)  # tab order, by the tool each page shows
PAGE_TITLES = {OVERVIEW: "Overview", KERNEL_STATS: "Kernels", OP_STATS: "Operators"}


def describe_range(step_range: tuple[int, int] | None) -> str:
    """"the whole capture", "step 3", "steps 3–5"."""
    if step_range is None:
        return "the whole capture"
    first, last = step_range
    return f"step {first}" if first == last else f"steps {first}–{last}"


class TraceStatsView(QWidget):
    """Overview / Kernels / Operators pages and the step range selector."""

    step_range_requested = Signal(object)  # None (whole capture) or (first, last) ProfilerStep numbers

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats: TraceStats | None = None
        self.first_box = QComboBox(minimumContentsLength=8)
        self.first_box.setToolTip("First ProfilerStep of the range (kernels count by when they were launched)")
        self.last_box = QComboBox(minimumContentsLength=6)
        self.last_box.setToolTip("Last ProfilerStep of the range")
        self.to_label = QLabel("to")
        self.range_label = QLabel()
        self.range_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # never widens the window
        self.message = QLabel(wordWrap=True)
        self.message.hide()
        follow(self, lambda scheme: self.message.setStyleSheet(f"color: {scheme.error().name()}; padding: 4px"))
        self.overview = OverviewPage()
        self.kernels = KernelsPage()
        self.operators = OperatorsPage()
        self.pages = QTabWidget()
        self.pages.setDocumentMode(True)
        for tool, page in zip(PAGES, (self.overview, self.kernels, self.operators)):
            self.pages.addTab(page, PAGE_TITLES[tool])

        self.range_controls = QWidget()  # disabled as a whole while the window is busy
        controls = QHBoxLayout(self.range_controls)
        controls.setContentsMargins(0, 0, 0, 0)
        controls.addWidget(QLabel("Steps:"))
        controls.addWidget(self.first_box)
        controls.addWidget(self.to_label)
        controls.addWidget(self.last_box)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 4, 4, 0)
        bar.addWidget(self.range_controls)
        bar.addSpacing(12)
        bar.addWidget(self.range_label, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.message)
        layout.addWidget(self.pages, 1)
        self.first_box.activated.connect(self._on_first)
        self.last_box.activated.connect(self._on_last)
        self.set_stats(None)

    # ---------------------------------------------------------- data

    def set_stats(self, stats: TraceStats | None) -> None:
        self.stats = stats
        self.message.hide()
        self.overview.set_stats(stats)
        self.kernels.set_stats(stats)
        self.operators.set_stats(stats)
        self._set_steps(stats)
        if stats is None:
            self.range_label.setText("No statistics: open a PyTorch profiler (Kineto) trace.")
            return
        k = stats.kernels
        scope = describe_range(stats.step_range)
        window = (f" ({format_time_ps(stats.window_ps[1] - stats.window_ps[0])})" if stats.window_ps else "")
        hosts = len(stats.overview)
        self.range_label.setText(
            f"Showing {scope}{window}: {len(k):,} kernels, {format_time_ps(float(k.total_ps.sum()))} of GPU "
            f"activity, {len(stats.ops):,} operators on {hosts} host{'s' if hosts != 1 else ''}.")

    def _set_steps(self, stats: TraceStats | None) -> None:
        numbers = [] if stats is None else [int(n) for n in np.unique(stats.step_numbers)]
        for box in (self.first_box, self.last_box):
            box.blockSignals(True)
            box.clear()
        self.first_box.addItem(ALL_STEPS, None)
        for n in numbers:
            self.first_box.addItem(str(n), n)
            self.last_box.addItem(str(n), n)
        chosen = stats.step_range if stats is not None else None
        if chosen is not None:
            self.first_box.setCurrentIndex(max(self.first_box.findData(chosen[0]), 0))
            self.last_box.setCurrentIndex(max(self.last_box.findData(chosen[1]), 0))
        else:
            self.first_box.setCurrentIndex(0)
            self.last_box.setCurrentIndex(self.last_box.count() - 1)
        for box in (self.first_box, self.last_box):
            box.blockSignals(False)
        self.first_box.setEnabled(bool(numbers))
        self.last_box.setEnabled(chosen is not None)
        self.first_box.setToolTip("First ProfilerStep of the range" if numbers else "This trace has no ProfilerSteps")

    def _on_first(self, _index: int) -> None:
        first = self.first_box.currentData()
        if first is None:
            self.last_box.setEnabled(False)
            self._request(None)
            return
        last = self.last_box.currentData()
        if last is None or last < first:
            self.last_box.setCurrentIndex(self.last_box.findData(first))
            last = first
        self.last_box.setEnabled(True)
        self._request((first, last))

    def _on_last(self, _index: int) -> None:
        first, last = self.first_box.currentData(), self.last_box.currentData()
        if first is None or last is None:
            return
        if last < first:
            self.first_box.setCurrentIndex(self.first_box.findData(last))
            first = last
        self._request((first, last))

    def set_busy(self, busy: bool) -> None:
        """While the window loads or computes, no other range can be asked for."""
        self.range_controls.setEnabled(not busy)

    def select_steps(self, step_range: tuple[int, int] | None) -> None:
        """Chooses a step range as the user would (emits step_range_requested)."""
        if step_range is None:
            self.first_box.setCurrentIndex(0)
            self._on_first(0)
            return
        self.first_box.setCurrentIndex(max(self.first_box.findData(step_range[0]), 0))
        self.last_box.setCurrentIndex(max(self.last_box.findData(step_range[1]), 0))
        self.last_box.setEnabled(True)
        self._request((self.first_box.currentData(), self.last_box.currentData()))

    def _request(self, step_range: tuple[int, int] | None) -> None:
        if self.stats is not None and step_range == self.stats.step_range:
            return
        self.range_label.setText(f"Computing the statistics of {describe_range(step_range)}…")
        self.step_range_requested.emit(step_range)

    # ---------------------------------------------------------- pages and messages

    def show_page(self, tool: str) -> None:
        """Shows the page of a tool (overview, kernel_stats, op_stats)."""
        if tool in PAGES:
            self.pages.setCurrentIndex(PAGES.index(tool))

    def current_page(self) -> str:
        return PAGES[self.pages.currentIndex()]

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))
        if self.stats is not None and text:
            self._still_showing()

    def _still_showing(self) -> None:
        """After a failed range request: the selector and label say what is still shown."""
        self._set_steps(self.stats)
        self.range_label.setText(f"Still showing {describe_range(self.stats.step_range)}.")
