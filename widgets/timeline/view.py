"""The timeline tab: search bar and step selector, the canvas with its
scroll bar, and below it the details of the clicked event, statistics of a
selected time range and per-op statistics of the whole step."""

from __future__ import annotations

import math

import numpy as np
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollBar,
    QSplitter,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from profscope.models.core.task import ProfileError
from profscope.models.core.units import format_time_ps
from profscope.models.data.timeline import Timeline
from profscope.widgets.palette import Scheme, follow
from profscope.widgets.timeline.canvas import TimelineCanvas
from profscope.widgets.timeline.kind_stats_table import KindStatsTable

HINT = ("Wheel: zoom · drag: pan · drag on the ruler or Shift+drag: select a range · "
        "W/S zoom · A/D pan · F fit selection · 0 show all · ] / [ follow the selection's flow out / in")
KEYS_HELP = ("<b>Timeline keys</b><br>W / S: zoom in / out<br>A / D: pan left / right<br>"
             "Wheel: zoom at the cursor; Shift+wheel: scroll lanes<br>Drag: pan; drag on the ruler or Shift+drag: "
             "select a time range<br>Click: select an event (its flows are drawn as arrows); "
             "click a header: fold it<br>"
             "F: fit the selection · 0 or Home: show everything · Esc: clear the selection<br>"
             "]: go to the destination of the selected event's first outgoing flow (e.g. launch -> kernel)<br>"
             "[: go to the source of its first incoming flow (e.g. kernel -> launch)<br>"
             "/ or Ctrl+F: search; Enter / Shift+Enter: next / previous match")


class TimelineView(QWidget):
    step_requested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.timeline: Timeline | None = None
        self.matches = np.zeros(0, np.int64)
        self.match_index = -1

        self.search = QLineEdit(placeholderText="Search op types and names  (/ or Ctrl+F)", clearButtonEnabled=True)
        self.match_label = QLabel("")
        self.prev_button = QPushButton("◀")
        self.next_button = QPushButton("▶")
        for b in (self.prev_button, self.next_button):
            b.setFixedWidth(32)
        self.prev_button.setToolTip("Previous match (Shift+Enter)")
        self.next_button.setToolTip("Next match (Enter)")
        self.step_box = QComboBox(minimumContentsLength=14)
        self.step_label = QLabel("Step:")
        self.reset_button = QPushButton("Show all")
        self.message = QLabel(wordWrap=True)
        self.message.hide()
        self.canvas = TimelineCanvas()
        self.scrollbar = QScrollBar(Qt.Vertical)
        self.details = QTreeWidget()
        self.details.setHeaderLabels(["Field", "Value"])
        self.details.setColumnWidth(0, 260)
        self.range_label = QLabel("Drag on the ruler (or Shift+drag) to select a time range.")
        self.range_table = KindStatsTable()
        self.op_stats = KindStatsTable()
        self.op_stats_label = QLabel()

        bar = QHBoxLayout()
        bar.addWidget(self.search, 2)
        bar.addWidget(self.match_label)
        bar.addWidget(self.prev_button)
        bar.addWidget(self.next_button)
        bar.addSpacing(12)
        bar.addWidget(self.step_label)
        bar.addWidget(self.step_box)
        bar.addWidget(self.reset_button)
        canvas_row = QHBoxLayout()
        canvas_row.setSpacing(0)
        canvas_row.addWidget(self.canvas, 1)
        canvas_row.addWidget(self.scrollbar)
        upper = QWidget()
        upper_layout = QVBoxLayout(upper)
        upper_layout.setContentsMargins(0, 0, 0, 0)
        upper_layout.addLayout(canvas_row, 1)
        self.hint = hint = QLabel(HINT, wordWrap=True)
        hint.setToolTip(KEYS_HELP)
        self.canvas.setWhatsThis(KEYS_HELP)
        upper_layout.addWidget(hint)
        self.bottom = QTabWidget()
        self.bottom.addTab(self.details, "Details")
        range_page = QWidget()
        range_layout = QVBoxLayout(range_page)
        range_layout.addWidget(self.range_label)
        range_layout.addWidget(self.range_table)
        self.bottom.addTab(range_page, "Selected range")
        stats_page = QWidget()
        stats_layout = QVBoxLayout(stats_page)
        stats_layout.addWidget(self.op_stats_label)
        stats_layout.addWidget(self.op_stats)
        self.bottom.addTab(stats_page, "Op statistics")
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(upper)
        splitter.addWidget(self.bottom)
        splitter.setStretchFactor(0, 3)
        splitter.setStretchFactor(1, 2)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.message)
        layout.addWidget(splitter, 1)

        self._search_timer = QTimer(self, singleShot=True, interval=200)
        self._search_timer.timeout.connect(self.run_search)
        self.search.textChanged.connect(lambda _: self._search_timer.start())
        self.search.returnPressed.connect(self.next_match)
        QShortcut(QKeySequence("Shift+Return"), self.search, self.previous_match)
        QShortcut(QKeySequence("Ctrl+F"), self, self.focus_search)
        QShortcut(QKeySequence("/"), self.canvas, self.focus_search, context=Qt.WidgetWithChildrenShortcut)
        self.prev_button.clicked.connect(self.previous_match)
        self.next_button.clicked.connect(self.next_match)
        self.reset_button.clicked.connect(self.canvas.reset_zoom)
        self.step_box.activated.connect(lambda _: self.step_requested.emit(self.step_box.currentText()))
        self.canvas.content_height_changed.connect(self._update_scrollbar)
        self.canvas.view_changed.connect(self._sync_scrollbar)
        self.scrollbar.valueChanged.connect(self.canvas.set_scroll)
        self.canvas.event_selected.connect(self.show_details)
        self.canvas.range_selected.connect(self.show_range)
        self.op_stats.kind_activated.connect(self.highlight_kind)
        self.range_table.kind_activated.connect(self.highlight_kind)
        follow(self, self._apply_scheme)
        self.set_steps([], "")

    # ------------------------------------------------------------ data

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.message.setStyleSheet(f"color: {scheme.error().name()}; padding: 4px")
        self.hint.setStyleSheet(f"color: {scheme.shade(0.53).name()}")

    def set_steps(self, steps: list[str], current: str) -> None:
        """The tags of an event file's run metadata (hidden when there are none)."""
        self.step_box.clear()
        self.step_box.addItems(steps)
        self.step_box.setCurrentText(current)
        for w in (self.step_box, self.step_label):
            w.setVisible(len(steps) > 1)

    def set_timeline(self, timeline: Timeline | None) -> None:
        self.timeline = timeline
        self.message.setVisible(bool(timeline and timeline.warnings))
        if timeline is not None and timeline.warnings:
            self.message.setText("; ".join(timeline.warnings))
        self.canvas.set_timeline(timeline)
        self.details.clear()
        self.range_table.stats_model.set_stats(None, None)
        self.range_label.setText("Drag on the ruler (or Shift+drag) to select a time range.")
        if timeline is not None:
            a, b = timeline.span_ps
            self.op_stats.stats_model.set_stats(timeline, timeline.all_kind_stats, b - a)
            self.op_stats_label.setText(
                f"{len(timeline):,} events on {len(timeline.groups)} device(s), step {format_time_ps(b - a)}; "
                "share = total time of the op type / step duration. Select a row to highlight its events.")
        else:
            self.op_stats.stats_model.set_stats(None, None)
        self.op_stats.horizontalHeader().setSortIndicator(3, Qt.DescendingOrder)
        self.run_search()

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.show()

    # ------------------------------------------------------------ search and highlight

    def focus_search(self) -> None:
        self.search.setFocus()
        self.search.selectAll()

    def run_search(self) -> None:
        text = self.search.text().strip()
        if self.timeline is None or not text:
            self.matches, self.match_index = np.zeros(0, np.int64), -1
            self.match_label.setText("")
            self.canvas.set_highlight(None)
            return
        self.matches = self.timeline.find(text)
        self.match_index = -1
        self.match_label.setText(f"{len(self.matches):,} match{'es' if len(self.matches) != 1 else ''}")
        self.canvas.set_highlight(self.matches)

    def _go_to_match(self, step: int) -> None:
        if self._search_timer.isActive():
            self._search_timer.stop()
            self.run_search()
        if not len(self.matches):
            return
        self.match_index = (self.match_index + step) % len(self.matches)
        self.match_label.setText(f"{self.match_index + 1:,} / {len(self.matches):,}")
        self.canvas.select_event(int(self.matches[self.match_index]), reveal=True)

    def next_match(self) -> None:
        self._go_to_match(1)

    def previous_match(self) -> None:
        self._go_to_match(-1)

    def highlight_kind(self, group: int, kind: int) -> None:
        tl = self.timeline
        if tl is None:
            return
        self._highlight(np.flatnonzero((tl.kind == kind) & (tl.event_group == group)), tl.kinds[kind])

    def highlight_op(self, name: str) -> int:
        """Highlights the events of an op named as XProf's tables name it (Enter steps through them);
        returns how many (none: the highlight is left as it was)."""
        events = self.timeline.events_named(name) if self.timeline is not None else np.zeros(0, np.int64)
        if len(events):
            self._highlight(events, name)
        return len(events)

    def _highlight(self, events: np.ndarray, what: str) -> None:
        self.matches, self.match_index = events, -1
        self.match_label.setToolTip(what)
        what = what if len(what) <= 40 else f"{what[:18]}…{what[-18:]}"  # a long op name: the bar keeps its room
        self.match_label.setText(f"{len(events):,} × {what}")
        self.canvas.set_highlight(events)

    # ------------------------------------------------------------ details and range

    def show_details(self, i: int) -> None:
        self.details.clear()
        if i < 0 or self.timeline is None:
            return
        tl = self.timeline
        rows = [("op type", tl.kinds[tl.kind[i]]), ("name", tl.names[i]),
                ("start", format_time_ps(float(tl.start_ps[i])) + " from the first event"),
                ("duration", format_time_ps(float(tl.duration_ps[i])) if tl.duration_ps[i] else "0 (instant)")]
        if tl.details is not None:
            try:
                shown = set(rows)
                rows += [row for row in tl.details(i) if row not in shown]  # (a Chrome event repeats its name)
            except ProfileError as e:
                rows.append(("error", str(e)))
        for key, value in rows:
            QTreeWidgetItem(self.details, [key, value]).setToolTip(1, value)
        self.bottom.setCurrentWidget(self.details)

    def show_event(self, i: int) -> str | None:
        """Selects event i and zooms to it, with its own length of context on
        each side; returns what is wrong when it cannot."""
        tl = self.timeline
        if tl is None or not 0 <= i < len(tl):
            return f"The timeline has no event {i:,} ({len(tl) if tl is not None else 0:,} events)."
        s = float(tl.start_ps[i])
        e = s + float(tl.duration_ps[i])
        self.canvas.select_event(i)
        self._fit_around(s, e)
        self.canvas.scroll_to_event(i)
        return None

    def show_time(self, start_ns: int, dur_ns: int = 0) -> str | None:
        """Zooms to a time on the trace's clock (ns), selecting it as a range when it has a length."""
        tl = self.timeline
        if tl is None:
            return "No timeline is loaded."
        a = float((start_ns - tl.origin_ns) * 1000)
        b = a + dur_ns * 1000.0
        if b > a:
            self.canvas.set_range(a, b)
        self._fit_around(a, b)
        return None

    def _fit_around(self, a: float, b: float) -> None:
        context = max(b - a, 1e6)  # at least a microsecond on each side of an instant
        self.canvas.fit(a - context, b + context)

    def show_range(self, a: float, b: float) -> None:
        tl = self.timeline
        if tl is None or math.isnan(a):
            self.range_table.stats_model.set_stats(None, None)
            self.range_label.setText("Drag on the ruler (or Shift+drag) to select a time range.")
            return
        events = tl.overlapping(a, b)
        self.range_table.stats_model.set_stats(tl, tl.kind_stats(events, clip=(a, b)), b - a)
        self.range_label.setText(
            f"{format_time_ps(a)} to {format_time_ps(b)} ({format_time_ps(b - a)}): {len(events):,} events overlap it. "
            "Times count only the part inside the range; share = total / range length. F zooms to the range.")
        self.bottom.setCurrentIndex(1)

    # ------------------------------------------------------------ scrolling

    def _update_scrollbar(self, content_height: int) -> None:
        visible = max(self.canvas.height() - 26, 1)
        self.scrollbar.setRange(0, max(content_height - visible, 0))
        self.scrollbar.setPageStep(visible)
        self.scrollbar.setVisible(content_height > visible)

    def _sync_scrollbar(self) -> None:
        if self.scrollbar.value() != self.canvas.scroll_y:
            self.scrollbar.setValue(self.canvas.scroll_y)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._update_scrollbar(self.canvas.content_height())
