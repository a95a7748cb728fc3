"""XProf's memory_viewer as a page: one XLA module's heap over program order
(padded and unpadded), the buffers live at the peak by size, and the
lifetime of the buffer chosen in the table drawn on the chart.

set_data takes memory_viewer's result (MemoryViewerResult) or its JSON
(XProf's PreprocessResult as a dict); set_modules fills the module picker,
whose choice is announced by module_selected (the window loads the module
and calls set_data).
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QStackedWidget,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from profscope.widgets.palette import Scheme, follow, style_plot

HEAP_COLOR, UNPADDED_COLOR, PEAK_COLOR, LIFETIME_COLOR = "#1976d2", "#9e9e9e", "#e53935", "#ffb300"


def _mib(value: float) -> str:
    if value >= 1024:
        return f"{value / 1024:,.2f} GiB"
    if value >= 1:
        return f"{value:,.2f} MiB"
    return f"{value * 1024:,.1f} KiB"


class MemoryData:
    """What the page shows, from the result object or XProf's JSON dict."""

    def __init__(self, data):
        if isinstance(data, dict):
            self.module = data.get("moduleName", "")
            self.heap = np.asarray(data.get("heapSizes", []), np.float64)
            self.unpadded = np.asarray(data.get("unpaddedHeapSizes", []), np.float64)
            self.peak = float(data.get("peakHeapMib", 0.0))
            self.peak_position = int(data.get("peakHeapSizePosition", 0))
            self.buffers = list(data.get("maxHeapBySize", []))
            self.spans = {
                int(k): (int(v.get("start", 0)), int(v.get("limit", 0)))
                for k, v in data.get("logicalBufferSpans", {}).items()
            }
            self.parameters = float(data.get("entryComputationParametersMib", 0.0))
            self.live_out = float(data.get("maybeLiveOutMib", 0.0))
            self.total = float(data.get("totalBufferAllocationMib", 0.0))
        else:
            self.module = data.module_name
            self.heap, self.unpadded = data.heap_mib, data.unpadded_heap_mib
            self.peak, self.peak_position = data.peak_heap_mib, data.peak_position
            self.buffers = [data.max_heap[i] for i in data.by_size]
            self.spans = dict(zip(data.span_ids.tolist(), zip(data.span_start.tolist(), data.span_end.tolist())))
            self.parameters, self.live_out = data.entry_parameters_mib, data.maybe_live_out_mib
            self.total = data.total_allocation_mib

    def lifetime(self, row: int) -> tuple[int, int] | None:
        """The steps a buffer at the peak lives (None: the whole program, or the small buffers' sum)."""
        return self.spans.get(int(self.buffers[row].get("logicalBufferId", 0)))


class PeakBuffersModel(QAbstractTableModel):
    """The buffers live at the peak, largest first; sortable by any column."""

    COLUMNS = ("Size", "Shape", "Op name", "Instruction", "Allocation", "Op code", "Lifetime")

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data_: MemoryData | None = None
        self.order: list[int] = []

    def set_data(self, data: MemoryData) -> None:
        self.beginResetModel()
        self.data_, self.order = data, list(range(len(data.buffers)))
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole:
            return self.COLUMNS[section]
        return None

    def buffer_row(self, row: int) -> int:
        return self.order[row]

    def _value(self, i: int, column: int):
        assert self.data_ is not None
        b = self.data_.buffers[i]
        if column == 0:
            return float(b.get("logicalBufferSizeMib", 0.0))
        if column == 6:
            span = self.data_.lifetime(i)
            return (span[1] - span[0]) if span else -1
        key = ("", "shapeString", "tfOpName", "instructionName", "groupName", "opCode")[column]
        return b.get(key, b.get("label", "") if column == 3 else "")

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.data_ is None:
            return None
        i, column = self.order[index.row()], index.column()
        if role == Qt.DisplayRole:
            if column == 0:
                return _mib(self._value(i, 0))
            if column == 6:
                span = self.data_.lifetime(i)
                if span:
                    return f"steps {span[0]}–{span[1]}"
                return "whole program" if self.data_.buffers[i].get("logicalBufferId", -1) != -1 else ""
            return str(self._value(i, column))
        if role == Qt.TextAlignmentRole and column == 0:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.ToolTipRole:
            return self.data_.buffers[i].get("label", "")
        return None

    def sort(self, column, order=Qt.AscendingOrder):
        if self.data_ is None:
            return
        self.layoutAboutToBeChanged.emit()
        self.order.sort(key=lambda i: self._value(i, column), reverse=order == Qt.DescendingOrder)
        self.layoutChanged.emit()


class MemoryViewerPage(QWidget):
    """Module picker, summary, program-order chart and the peak's buffers."""

    module_selected = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data: MemoryData | None = None
        self.module_box = QComboBox(minimumContentsLength=24)
        self.module_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.module_box.currentTextChanged.connect(self._module_chosen)
        self.summary = QLabel(wordWrap=True)  # wraps rather than widening the page
        self.summary.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.lifetime_label = QLabel()
        top = QHBoxLayout()
        top.addWidget(QLabel("Module"))
        top.addWidget(self.module_box)
        top.addWidget(self.summary, 1)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        item = self.plot.getPlotItem()
        item.setLabel("left", "Heap (MiB)")
        item.setLabel("bottom", "Program order (heap simulator step; the line is the heap after each step)")
        item.showGrid(x=True, y=True, alpha=0.25)
        self.legend = item.addLegend(offset=(-10, 10))
        self.heap_curve = item.plot([], [], pen=pg.mkPen(HEAP_COLOR, width=2), name="Heap")
        self.unpadded_curve = item.plot(
            [], [], pen=pg.mkPen(UNPADDED_COLOR, width=1, style=Qt.DashLine), name="Unpadded"
        )
        for curve in (self.heap_curve, self.unpadded_curve):  # long programs: a min/max envelope of what is in view
            curve.setClipToView(True)
            curve.setDownsampling(auto=True, method="peak")
        self.peak_line = pg.InfiniteLine(angle=90, pen=pg.mkPen(PEAK_COLOR, width=1, style=Qt.DotLine))
        self.lifetime = pg.LinearRegionItem(
            movable=False, brush=pg.mkBrush(255, 179, 0, 60), pen=pg.mkPen(LIFETIME_COLOR)
        )
        self.lifetime.setVisible(False)
        item.addItem(self.peak_line)
        item.addItem(self.lifetime)
        self.model = PeakBuffersModel(self)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SingleSelection)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.selectionModel().currentRowChanged.connect(lambda current, _old: self._show_lifetime(current.row()))
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 0, 0, 0)
        lower_layout.addWidget(QLabel("Buffers live at the peak, largest first (click one for its lifetime)"))
        lower_layout.addWidget(self.table)
        lower_layout.addWidget(self.lifetime_label)
        # A module whose buffers all live through the whole program has no heap over program order.
        self.no_heap = QLabel(
            "No heap over program order: every buffer of this module lives through the whole program "
            "(parameters, outputs, constants); the table lists them.", wordWrap=True, alignment=Qt.AlignCenter)
        self.upper = QStackedWidget()
        self.upper.addWidget(self.plot)
        self.upper.addWidget(self.no_heap)
        splitter = QSplitter(Qt.Vertical)
        splitter.addWidget(self.upper)
        splitter.addWidget(lower)
        splitter.setSizes([300, 260])
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(splitter, 1)
        follow(self, self._restyle)

    def op_tables(self) -> list:
        return [(self.table, lambda: 3)]  # the HLO instruction of each buffer

    def set_modules(self, names: list[str], current: str = "") -> None:
        self.module_box.blockSignals(True)
        self.module_box.clear()
        self.module_box.addItems(names)
        if current in names:
            self.module_box.setCurrentText(current)
        self.module_box.blockSignals(False)

    def _module_chosen(self, name: str) -> None:
        if name:
            self.module_selected.emit(name)

    def set_data(self, data) -> None:
        self.data = d = MemoryData(data)
        steps = np.arange(len(d.heap))
        scale, unit = (1.0, "MiB") if d.peak >= 1 else (1024.0, "KiB")
        item = self.plot.getPlotItem()
        item.setLabel("left", f"Heap ({unit})")
        item.getAxis("left").enableAutoSIPrefix(False)
        # heapSizes[i] is the heap before step i (and one after the last): step i's level is drawn over [i, i + 1].
        x = np.repeat(steps, 2)[1:-1]  # (0, 1, 1, 2, 2, ...): each level as a flat segment
        self.heap_curve.setData(x, np.repeat(d.heap[1:] * scale, 2))
        self.unpadded_curve.setData(x, np.repeat(d.unpadded[1:] * scale, 2))
        self.peak_line.setValue(d.peak_position)
        self.peak_line.setVisible(len(d.heap) > 0)
        self.upper.setCurrentWidget(self.plot if len(d.heap) > 1 or not d.buffers else self.no_heap)
        self.lifetime.setVisible(False)
        self.lifetime_label.clear()
        self.model.set_data(d)
        self.table.horizontalHeader().setSortIndicator(0, Qt.DescendingOrder)
        self.summary.setText(
            f"<b>{d.module}</b> · peak {_mib(d.peak)}"
            + (f" at step {d.peak_position} of {len(d.heap) - 1}" if len(d.heap) > 1 else "")
            + f" · parameters {_mib(d.parameters)} · outputs {_mib(d.live_out)} · allocated {_mib(d.total)}"
            if len(d.heap) or d.buffers
            else f"<b>{d.module}</b> · no buffers in this memory space"
        )
        fm = self.table.fontMetrics()
        for column, sample in enumerate(
            (
                "999.99 MiB",
                "f32[128,128,128]{2,1,0}",
                "jit(train_step)/transpose(jvp())",
                "multiply_add_fusion.1",
                "Temporary",
                "convolution",
            )
        ):
            self.table.setColumnWidth(column, fm.horizontalAdvance(sample) + 24)
        self.plot.getPlotItem().enableAutoRange()

    def _show_lifetime(self, row: int) -> None:
        if self.data is None or row < 0:
            return
        i = self.model.buffer_row(row)
        span = self.data.lifetime(i)
        buffer = self.data.buffers[i]
        name = buffer.get("instructionName", buffer.get("label", ""))
        last = max(len(self.data.heap) - 1, 0)
        if span is None:
            self.lifetime.setRegion((0, last))
            self.lifetime_label.setText(f"{name}: lives through the whole program (steps 0–{last})")
            view = (0, last)
        else:
            self.lifetime.setRegion(span)
            self.lifetime_label.setText(f"{name}: allocated at step {span[0]}, freed at step {span[1]}")
            margin = max(10, 2 * (span[1] - span[0]))
            view = (max(0, span[0] - margin), min(last, span[1] + margin))
        self.lifetime.setVisible(True)
        self.plot.getPlotItem().setXRange(*view, padding=0.02)  # the lifetime in view, with its surroundings

    def _restyle(self, scheme: Scheme) -> None:
        self.plot.setBackground(scheme.base)
        style_plot(self.plot.getPlotItem(), scheme)
        backing = QColor(scheme.base)
        backing.setAlpha(220)  # the legend stays readable over a dense curve
        self.legend.setBrush(pg.mkBrush(backing))
