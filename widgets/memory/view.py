"""The memory tab: host and allocator selectors, summary, plot and the table
of active allocations, at the peak or at the moment the user clicks."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QStackedWidget,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from profscope.models.analysis.allocator_state import History, build_history
from profscope.models.core.task import ProfileError
from profscope.models.core.units import format_bytes, format_time_ps
from profscope.models.data.allocation_log import SPECIAL_STEPS, AllocationLog
from profscope.models.data.flame import allocation_flame
from profscope.models.data.memory_profile import AllocationRows, AllocatorProfile, MemoryProfileData
from profscope.widgets.memory.allocation_table import AllocationTable
from profscope.widgets.memory.allocator_state import AllocatorStateView, SegmentTimelineView
from profscope.widgets.memory.flame import FlameView
from profscope.widgets.memory.kernel_table import KernelTable
from profscope.widgets.memory.plot import MemoryPlot, PlotSeries
from profscope.widgets.memory.summary import MemorySummaryCard
from profscope.widgets.palette import follow

NOTHING_SHOWN = "No memory profile shown: open a profile (Ctrl+O), then pick a host."
NO_MEMORY_EVENTS = "This host's profile has no memory events."
NOT_LOADED = "No memory profile to show: it could not be loaded (the message above says why)."
# The views of an allocator; a CUDA memory snapshot's devices have all three, other sources the first.
TIMELINE_VIEW, STATE_VIEW, SEGMENTS_VIEW = range(3)


def largest_peak(data: MemoryProfileData) -> str:
    """The memory id of the allocator with the highest peak (the first of
    equal ones): what the view opens on, a GPU's rather than the host's."""
    return max(data.memory_ids, key=lambda m: data.allocators[m].summary.peak_in_use, default="")


class MemoryView(QWidget):
    """Shows a host's memory profile; when there is none, a sentence saying
    why (show_empty) in place of the summary, plot and tables."""

    host_requested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data: MemoryProfileData | None = None
        self.series: dict[str, PlotSeries] = {}  # the plot's data per allocator
        self.histories: dict[str, History] = {}  # a CUDA snapshot's allocator state history per device
        self.allocator: AllocatorProfile | None = None
        self.moment: int | None = None  # None: the table shows the peak
        self.host_box = QComboBox(minimumContentsLength=12)
        self.allocator_box = QComboBox(minimumContentsLength=24)
        self.free_box = QCheckBox("Free memory")
        self.reset_button = QPushButton("Reset zoom")
        self.peak_button = QPushButton("Table at peak")
        self.table_title = QLabel()
        self.table_title.setStyleSheet("font-weight: bold")
        self.message = QLabel(wordWrap=True)
        self.message.hide()
        self.readout = QLabel(textInteractionFlags=Qt.TextSelectableByMouse)
        self.readout.setStyleSheet("font-family: monospace")
        self.summary = MemorySummaryCard()
        self.plot = MemoryPlot()
        self.table = AllocationTable()
        # LogMemory logs only: step filter, what the log held, bytes per kernel.
        self.step_box = QComboBox(minimumContentsLength=30)
        self.step_box.setToolTip("Show one step: its allocations in the tables, its time span in the plot")
        self.log_info = QLabel(wordWrap=True, textInteractionFlags=Qt.TextSelectableByMouse)
        self.kernel_table = KernelTable()
        # Sources with call stacks: the live bytes by stack, made when its tab is shown.
        self.flame = FlameView()
        self._flame_for: tuple | None = None  # (allocator, moment) the flame shows
        self._rows: AllocationRows | None = None  # the table's rows before the step filter
        self._step_ids: list[int] = []  # the step of each step_box entry after "All steps"

        bar = QHBoxLayout()
        bar.addWidget(QLabel("Host:"))
        bar.addWidget(self.host_box)
        bar.addWidget(QLabel("Memory (allocator):"))
        bar.addWidget(self.allocator_box)
        bar.addStretch(1)
        bar.addWidget(self.free_box)
        bar.addWidget(self.reset_button)
        bar.addWidget(self.peak_button)
        upper = QWidget()
        upper_layout = QVBoxLayout(upper)
        upper_layout.setContentsMargins(0, 0, 0, 0)
        upper_layout.addWidget(self.readout)
        upper_layout.addWidget(self.plot)
        allocations = QWidget()
        lower_layout = QVBoxLayout(allocations)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.table_title)
        lower_layout.addWidget(self.table)
        self.tabs = QTabWidget()
        self.tabs.addTab(allocations, "Active allocations")
        self.tabs.addTab(self.kernel_table, "Bytes per kernel")
        self.tabs.addTab(self.flame, "Flame graph")
        self.tabs.setTabToolTip(self.tabs.indexOf(self.flame), "The live bytes of the moment by call stack")
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(upper)
        splitter.addWidget(self.tabs)
        splitter.setSizes([420, 300])
        self.log_bar = QWidget()
        log_layout = QHBoxLayout(self.log_bar)
        log_layout.setContentsMargins(0, 0, 0, 0)
        log_layout.addWidget(QLabel("Step:"))
        log_layout.addWidget(self.step_box)
        log_layout.addWidget(self.log_info, 1)
        self.state_view = AllocatorStateView()
        self.segment_view = SegmentTimelineView()
        self.views = QTabWidget()
        self.views.addTab(splitter, "Active memory timeline")
        self.views.addTab(self.state_view, "Allocator state history")
        self.views.addTab(self.segment_view, "Cached segment timeline")
        self.views.setTabToolTip(STATE_VIEW, "The allocator's segments and blocks at any event of the trace")
        self.views.setTabToolTip(SEGMENTS_VIEW, "Memory reserved in segments over the trace's events")
        content = QWidget()
        content_layout = QVBoxLayout(content)
        content_layout.setContentsMargins(0, 0, 0, 0)
        content_layout.addWidget(self.summary)
        content_layout.addWidget(self.views, 1)
        self.empty = QLabel(NOTHING_SHOWN, wordWrap=True, alignment=Qt.AlignCenter)
        self.empty.setStyleSheet("font-size: 14pt; padding: 24px")
        self.pages = QStackedWidget()
        self.pages.addWidget(content)
        self.pages.addWidget(self.empty)
        self.pages.setCurrentWidget(self.empty)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.log_bar)
        layout.addWidget(self.message)
        layout.addWidget(self.pages, 1)
        self._show_log_parts(False)

        self.host_box.activated.connect(lambda i: self.host_requested.emit(self.host_box.itemText(i)))
        self.allocator_box.currentTextChanged.connect(self._show_allocator)
        self.reset_button.clicked.connect(self.plot.reset_zoom)
        self.free_box.toggled.connect(self.plot.show_free)
        self.peak_button.clicked.connect(lambda: self.pick_moment(None))
        self.plot.hovered.connect(self._show_readout)
        self.plot.moment_picked.connect(self.pick_moment)
        self.table.row_selected.connect(self._mark_row)
        self.step_box.currentIndexChanged.connect(self._apply_step)
        self.state_view.event_changed.connect(self.segment_view.timeline.mark)
        self.segment_view.timeline.event_picked.connect(self._show_event)
        self.tabs.currentChanged.connect(self._update_flame)
        follow(self, lambda scheme: self.message.setStyleSheet(f"color: {scheme.error().name()}; padding: 4px"))

    def set_hosts(self, hosts: list[str], current: str) -> None:
        self.host_box.blockSignals(True)
        self.host_box.clear()
        self.host_box.addItems(hosts)
        self.host_box.setCurrentText(current)
        self.host_box.blockSignals(False)

    def set_profile(self, data: MemoryProfileData | None, series: dict[str, PlotSeries] | None = None,
                    histories: dict[str, History] | None = None) -> None:
        """Shows a host's profile. `series` is prepare_series(data) and `histories`
        prepare_histories(data.cuda_snapshot), made by the worker that loaded it;
        without them an allocator's are made when it is first shown (small
        profiles, the report)."""
        self.data = data
        self.series = dict(series) if series is not None else {}
        self.histories = dict(histories) if histories is not None else {}
        self.show_message("")
        self._show_log_parts(data is not None and data.log is not None)
        self.allocator_box.blockSignals(True)
        self.allocator_box.clear()
        if data is not None:
            self.allocator_box.addItems(data.memory_ids)
            self.allocator_box.setCurrentText(largest_peak(data))
        self.allocator_box.blockSignals(False)
        self._show_allocator(self.allocator_box.currentText())
        if data is None:
            self.empty.setText(NOTHING_SHOWN)
        elif not data.allocators:
            self.empty.setText(NO_MEMORY_EVENTS)
        self.pages.setCurrentIndex(0 if data is not None and data.allocators else 1)

    def show_empty(self, text: str) -> None:
        """No profile: `text` says why (loading, none in this host, an error) where the plot was."""
        self.set_profile(None)
        self.empty.setText(text)

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    @property
    def log(self) -> AllocationLog | None:
        return self.data.log if self.data is not None else None

    def _show_log_parts(self, visible: bool) -> None:
        self.log_bar.setVisible(visible)
        self.tabs.setTabVisible(1, visible)
        if not visible:
            self.tabs.setCurrentIndex(0)

    def _show_allocator(self, memory_id: str) -> None:
        self.allocator = self.data.allocators.get(memory_id) if self.data else None
        self._show_history(memory_id)
        self._fill_steps(memory_id)
        self.summary.set_profile(self.allocator)
        self.plot.set_profile(self.allocator, self.series.get(memory_id))
        if self.plot.series is not None:
            self.series[memory_id] = self.plot.series
        self.free_box.blockSignals(True)
        self.free_box.setChecked(self.plot.free_curve.isVisible())
        self.free_box.setEnabled(self.plot.has_free())
        self.free_box.setToolTip("" if self.plot.has_free() else "This allocator reports no free memory")
        self.free_box.blockSignals(False)
        self.readout.setText("Hover over the plot to read a snapshot; click to see what was allocated then.")
        self.pick_moment(None)
        if self.log is not None and self.allocator is not None and not len(self.allocator.timeline):
            self.show_message(
                f"No allocation of {memory_id} carries an allocation_id, so the log cannot say when its memory was "
                "freed and there is no timeline; Bytes per kernel lists what it allocated. TensorFlow logs ids for "
                "allocators that track them (BFC allocators, as for GPU memory).")

    def history(self, memory_id: str) -> History | None:
        """A CUDA snapshot device's allocator state history (None for other sources)."""
        snap = self.data.cuda_snapshot if self.data is not None else None
        if snap is None or not memory_id.startswith("cuda:") or not memory_id[5:].isdigit():
            return None
        if memory_id not in self.histories:
            self.histories[memory_id] = build_history(snap, int(memory_id[5:]))
        return self.histories[memory_id]

    def _show_history(self, memory_id: str) -> None:
        history = self.history(memory_id)
        for tab in (STATE_VIEW, SEGMENTS_VIEW):
            self.views.setTabVisible(tab, history is not None)
        self.views.tabBar().setVisible(history is not None)
        if history is None:
            self.views.setCurrentIndex(TIMELINE_VIEW)
        self.state_view.set_history(history)
        self.segment_view.timeline.set_bands(history.bands if history is not None else None)
        self.segment_view.timeline.mark(self.state_view.current if history is not None else None)

    def _show_event(self, k: int) -> None:
        """The allocator state at event k (a click on the cached segment timeline)."""
        self.state_view.select(k)
        self.views.setCurrentIndex(STATE_VIEW)

    def pick_moment(self, index: int | None) -> None:
        """Shows the table at a timeline index, or at the peak for None."""
        a = self.allocator
        self.moment = index
        if a is None:
            self._set_rows(None)
            self.table_title.setText("")
            self._update_flame()
            return
        if index is None:
            self._set_rows(a.peak_allocations)
            how = ("as stored in the file" if a.peak_rows_given else "replayed from the log" if self.log
                   else "by XProf's rules")
            self.table_title.setText(
                f"Active allocations at the peak ({format_time_ps(a.summary.peak_time_ps)}, "
                f"{format_bytes(a.summary.peak_in_use)}), {how}")
            self.plot.mark_moment(a.peak_index)
            self.show_message(" ".join((self.data.problems if self.data else []) + a.notes))
            self._update_flame()
            return
        try:
            rows = a.allocations_at(index)
        except ProfileError as e:
            self.show_message(str(e))
            return
        self.show_message("")
        self._set_rows(rows)
        t = a.timeline
        self.table_title.setText(
            f"Active allocations at {format_time_ps(t.time_ps[index])} (snapshot {index:,}, "
            f"{format_bytes(t.stack[index] + t.heap[index])} in use)")
        self.plot.mark_moment(index)
        self._update_flame()

    def _update_flame(self) -> None:
        """The flame graph's tab where the allocator has call stacks, its graph
        (re)made for the moment shown when the tab is in front."""
        a = self.allocator
        has = a is not None and a.frames is not None and len(a.timeline) > 0
        self.tabs.setTabVisible(self.tabs.indexOf(self.flame), has)
        shown = self._flame_for is not None and self._flame_for[0] is a and self._flame_for[1] == self.moment
        if not has or shown or self.tabs.currentWidget() is not self.flame:
            return
        self._flame_for = (a, self.moment)
        t = a.timeline
        when = (f"at the peak ({format_time_ps(a.summary.peak_time_ps)})" if self.moment is None
                else f"at {format_time_ps(t.time_ps[self.moment])} (snapshot {self.moment:,})")
        self.flame.set_flame(allocation_flame(a, self.moment), when)

    def show_moment(self, memory_id: str, snapshot: int | None, time_ns: int | None = None) -> str | None:
        """Shows an allocator at a snapshot (or the first at a time, in ns);
        returns what is wrong when it cannot."""
        if self.data is None or memory_id not in self.data.allocators:
            return f"This memory profile has no allocator {memory_id!r}."
        self.allocator_box.setCurrentText(memory_id)
        t = self.allocator.timeline
        if snapshot is None:
            snapshot = min(int(np.searchsorted(t.time_ps, time_ns * 1000)), len(t) - 1)
        if not 0 <= snapshot < len(t):
            return f"{memory_id} has no snapshot {snapshot:,} (it has {len(t):,})."
        self.pick_moment(snapshot)
        return None

    def _show_readout(self, i: int) -> None:
        t = self.allocator.timeline
        m = t.metadata(i)
        s = self.plot.series
        if s is not None and s.categories:  # each stacked category's bytes (those holding any), top first
            parts = [f"{name} {format_bytes(b)}" for (name, _), b in zip(s.categories, s.category_bytes[i].tolist())
                     if b]
            self.readout.setText(
                f"{format_time_ps(t.time_ps[i])}  total {format_bytes(t.stack[i] + t.heap[i])}:  "
                + "  ".join(reversed(parts)) + f"\n{m['region']}: {format_bytes(m['allocation'])} {m['op']}"
                + (" freed" if m["activity"] == "DEALLOCATION" else ""))
            return
        self.readout.setText(
            f"{format_time_ps(t.time_ps[i])}  stack {format_bytes(t.stack[i])}  heap {format_bytes(t.heap[i])}  "
            f"free {format_bytes(t.free[i])}  frag {t.fragmentation[i] * 100:.1f}%\n"
            f"{m['activity'].lower()} {format_bytes(m['allocation'])} (requested {format_bytes(m['requested'])}) "
            f"by {m['op'] or '?'}  step {m['step']}  region {m['region'] or '-'}  {m['dtype']} {m['shape']}")

    def _mark_row(self, row: int) -> None:
        rows = self.table.model.rows
        self.plot.mark_lifetime(int(rows.snapshot[row]), int(rows.freed[row]))

    # ------------------------------------------------------------ LogMemory logs

    def step(self) -> int | None:
        """The step filter (None: all steps)."""
        i = self.step_box.currentIndex()
        return self._step_ids[i - 1] if 0 < i <= len(self._step_ids) else None

    def _fill_steps(self, memory_id: str) -> None:
        log = self.log
        labels, self._step_ids = ["All steps"], []
        if log is not None and memory_id:
            steps = log.steps(memory_id)
            self._step_ids = steps.step.tolist()
            for step, handle, count, nbytes in zip(
                self._step_ids, steps.handle, steps.count.tolist(), steps.bytes.tolist()
            ):
                name = SPECIAL_STEPS.get(step) or handle
                labels.append(
                    f"{step}" + (f" ({name})" if name else "") + f": {count:,} allocations, {format_bytes(nbytes)}"
                )
            self.log_info.setText(self._log_text(log, memory_id))
        self.step_box.blockSignals(True)
        self.step_box.clear()
        self.step_box.addItems(labels)  # one call: logs can have tens of thousands of steps
        self.step_box.blockSignals(False)
        self.kernel_table.set_rows(log.kernels(memory_id) if log is not None and memory_id else None)

    @staticmethod
    def _log_text(log: AllocationLog, memory_id: str) -> str:
        a = log.allocations
        untracked = int((~a["tracked"] & (a["allocator"] == log.allocator_ids.get(memory_id, -1))).sum())
        parts = [f"{sum(log.messages.values()):,} memory lines"]
        if untracked:
            parts.append(f"{untracked:,} allocations without allocation_id (counted per kernel, not on the timeline)")
        if log.unmatched_deallocations.get(memory_id):
            parts.append(f"{log.unmatched_deallocations[memory_id]:,} deallocations of allocations made before the log")
        if skipped := log.skipped_text():
            parts.append(skipped.rstrip("."))
        return "; ".join(parts) + "."

    def _set_rows(self, rows: AllocationRows | None) -> None:
        self._rows = rows
        step = self.step()
        self.table.set_rows(rows.where(rows.step == step) if rows is not None and step is not None else rows)

    def _apply_step(self) -> None:
        step, log = self.step(), self.log
        if log is None or self.allocator is None:
            return
        self.kernel_table.set_rows(log.kernels(self.allocator.memory_id, step))
        self._set_rows(self._rows)
        span = log.step_span_ps.get(step) if step is not None else None
        if span is None:
            self.plot.reset_zoom()
        else:
            self.plot.zoom_to(*span)
