"""The memory tab: host and allocator selectors, summary, plot and the table
of active allocations, at the peak or at the moment the user clicks."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QPushButton, QSplitter, QVBoxLayout, QWidget)

from models.memory_profile import AllocatorProfile, MemoryProfileData
from models.task import ProfileError
from models.units import format_bytes, format_time_ps
from widgets.allocation_table import AllocationTable
from widgets.memory_plot import MemoryPlot
from widgets.memory_summary import MemorySummaryCard


class MemoryView(QWidget):
    host_requested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data: MemoryProfileData | None = None
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
        self.message.setStyleSheet("color: #b71c1c; padding: 4px")
        self.message.hide()
        self.readout = QLabel(textInteractionFlags=Qt.TextSelectableByMouse)
        self.readout.setStyleSheet("color: #333; font-family: monospace")
        self.summary = MemorySummaryCard()
        self.plot = MemoryPlot()
        self.table = AllocationTable()

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
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(self.table_title)
        lower_layout.addWidget(self.table)
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(upper)
        splitter.addWidget(lower)
        splitter.setSizes([420, 300])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.message)
        layout.addWidget(self.summary)
        layout.addWidget(splitter, 1)

        self.host_box.activated.connect(lambda i: self.host_requested.emit(self.host_box.itemText(i)))
        self.allocator_box.currentTextChanged.connect(self._show_allocator)
        self.reset_button.clicked.connect(self.plot.reset_zoom)
        self.free_box.toggled.connect(self.plot.show_free)
        self.peak_button.clicked.connect(lambda: self.pick_moment(None))
        self.plot.hovered.connect(self._show_readout)
        self.plot.moment_picked.connect(self.pick_moment)
        self.table.row_selected.connect(self._mark_row)

    def set_hosts(self, hosts: list[str], current: str) -> None:
        self.host_box.blockSignals(True)
        self.host_box.clear()
        self.host_box.addItems(hosts)
        self.host_box.setCurrentText(current)
        self.host_box.blockSignals(False)

    def set_profile(self, data: MemoryProfileData | None) -> None:
        self.data = data
        self.show_message("")
        self.allocator_box.blockSignals(True)
        self.allocator_box.clear()
        if data is not None:
            self.allocator_box.addItems(data.memory_ids)
        self.allocator_box.blockSignals(False)
        self._show_allocator(self.allocator_box.currentText())

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def _show_allocator(self, memory_id: str) -> None:
        self.allocator = self.data.allocators.get(memory_id) if self.data else None
        self.summary.set_profile(self.allocator)
        self.plot.set_profile(self.allocator)
        self.free_box.blockSignals(True)
        self.free_box.setChecked(self.plot.free_curve.isVisible())
        self.free_box.setEnabled(self.plot.has_free())
        self.free_box.setToolTip("" if self.plot.has_free() else "This allocator reports no free memory")
        self.free_box.blockSignals(False)
        self.readout.setText("Hover over the plot to read a snapshot; click to see what was allocated then.")
        self.pick_moment(None)

    def pick_moment(self, index: int | None) -> None:
        """Shows the table at a timeline index, or at the peak for None."""
        a = self.allocator
        self.moment = index
        if a is None:
            self.table.set_rows(None)
            self.table_title.setText("")
            return
        if index is None:
            self.table.set_rows(a.peak_allocations)
            how = "as stored in the file" if a.peak_rows_given else "by XProf's rules"
            self.table_title.setText(
                f"Active allocations at the peak ({format_time_ps(a.summary.peak_time_ps)}, "
                f"{format_bytes(a.summary.peak_in_use)}), {how}")
            self.plot.mark_moment(a.peak_index)
            self.show_message("")
            return
        try:
            rows = a.allocations_at(index)
        except ProfileError as e:
            self.show_message(str(e))
            return
        self.show_message("")
        self.table.set_rows(rows)
        t = a.timeline
        self.table_title.setText(
            f"Active allocations at {format_time_ps(t.time_ps[index])} (snapshot {index:,}, "
            f"{format_bytes(t.stack[index] + t.heap[index])} in use)")
        self.plot.mark_moment(index)

    def _show_readout(self, i: int) -> None:
        t = self.allocator.timeline
        m = t.metadata(i)
        self.readout.setText(
            f"{format_time_ps(t.time_ps[i])}  stack {format_bytes(t.stack[i])}  heap {format_bytes(t.heap[i])}  "
            f"free {format_bytes(t.free[i])}  frag {t.fragmentation[i] * 100:.1f}%\n"
            f"{m['activity'].lower()} {format_bytes(m['allocation'])} (requested {format_bytes(m['requested'])}) "
            f"by {m['op'] or '?'}  step {m['step']}  region {m['region'] or '-'}  {m['dtype']} {m['shape']}")

    def _mark_row(self, row: int) -> None:
        rows = self.table.model.rows
        self.plot.mark_lifetime(int(rows.snapshot[row]), int(rows.freed[row]))
