"""The Overview page: per host the breakdown bars and table, the ProfilerStep times and the devices."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QGroupBox,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from profscope.models.analysis import trace_stats
from profscope.models.analysis.trace_stats import TraceStats
from profscope.widgets.stats.breakdown_bars import BREAKDOWN_TINTS, BreakdownBars
from profscope.widgets.stats.share_delegate import ShareDelegate
from profscope.widgets.stats.table_models import DeviceModel, OverviewModel
from profscope.widgets.stats.table_page import size_columns, stats_table


class OverviewPage(QWidget):
    """The hosts' table, their stacked bars, and the selected host's devices."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats: TraceStats | None = None
        self.model = OverviewModel(self)
        self.table = stats_table(self.model)
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(0, Qt.AscendingOrder)
        for c in (2, 3, 4):
            self.table.setItemDelegateForColumn(c, ShareDelegate(self.table, color=BREAKDOWN_TINTS[c - 2], scale=100.0))
        self.bars = BreakdownBars()
        scroll = QScrollArea()
        scroll.setWidget(self.bars)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.NoFrame)
        self.bars_scroll = scroll
        bars_box = QGroupBox("GPU time per host: compute, non-compute (communication, memory) and idle")
        QVBoxLayout(bars_box).addWidget(scroll)
        self.bars_box = bars_box
        self._fit_pending = True
        self.devices = DeviceModel(self)
        self.device_table = stats_table(self.devices)
        self.device_table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeToContents)
        self.device_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)
        self.device_label = QLabel(wordWrap=True)
        device_box = QGroupBox("Devices")
        inner = QVBoxLayout(device_box)
        inner.addWidget(self.device_label)
        inner.addWidget(self.device_table, 1)
        self.splitter = QSplitter(Qt.Vertical)
        self.splitter.addWidget(self.table)
        self.splitter.addWidget(bars_box)
        self.splitter.addWidget(device_box)
        self.splitter.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addWidget(self.splitter)
        self.table.selectionModel().currentRowChanged.connect(lambda current, _: self._on_row(current.row()))
        self.bars.host_clicked.connect(self._on_bar)
        self.model.layoutChanged.connect(self._sync_bars)  # the bars follow the table's order

    def set_stats(self, stats: TraceStats | None) -> None:
        selected = self.selected_host()
        self.stats = stats
        self.model.set_stats(stats)
        self._sync_bars()
        # Up to 8 hosts' bars without scrolling; the splitter gives more room when there is.
        self.bars_scroll.setMinimumHeight(min(self.bars.minimumHeight(), BreakdownBars.PITCH * 8 + 60) + 2)
        size_columns(self.table, self.model, stats.hosts if stats is not None else [])
        hosts = stats.hosts if stats is not None else []
        self._fit_pending = True
        self._fit()
        self.select_host(selected if selected in hosts else (hosts[0] if hosts else None))

    def _fit(self) -> None:
        """Table and bars as tall as their rows (each up to a share of the
        page), the devices below in the rest. Done when the data changes,
        once the page has its size."""
        height = self.splitter.height()
        if not self._fit_pending or not self.isVisible() or height < 100:
            return
        self._fit_pending = False
        rows = max(self.model.rowCount(), 1)
        table = self.table
        table_h = (table.horizontalHeader().sizeHint().height() + rows * table.verticalHeader().defaultSectionSize()
                   + 2 * table.frameWidth() + 2)
        bars_h = (self.bars_box.minimumSizeHint().height() - self.bars_scroll.minimumHeight()
                  + self.bars.minimumHeight() + 2)
        table_h, bars_h = min(table_h, int(height * 0.3)), min(bars_h, int(height * 0.45))
        handles = 2 * self.splitter.handleWidth()
        self.splitter.setSizes([table_h, bars_h, max(height - table_h - bars_h - handles, 100)])

    def showEvent(self, event) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, self._fit)  # once the layout has given the splitter its height

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit()

    def selected_host(self) -> str | None:
        row = self.table.currentIndex().row()
        return self.model.value(row, 0) if 0 <= row < self.model.rowCount() else None

    def select_host(self, host: str | None) -> None:
        rows = [r for r in range(self.model.rowCount()) if self.model.value(r, 0) == host]
        if rows:
            self.table.selectRow(rows[0])
        self._on_row(rows[0] if rows else -1)

    def _sync_bars(self) -> None:
        self.bars.set_rows([self.model.overview(r) for r in range(self.model.rowCount())])
        self.bars.set_selected(self.table.currentIndex().row())

    def _on_bar(self, row: int) -> None:
        self.table.selectRow(row)
        self._on_row(row)

    def _on_row(self, row: int) -> None:
        if self.stats is None or not 0 <= row < self.model.rowCount():
            self.devices.set_devices([], [])
            self.device_label.setText("")
            self.bars.set_selected(-1)
            return
        o = self.model.overview(row)
        self.bars.set_selected(row)
        props = o.properties or {}
        devices = trace_stats.device_list(props)
        used = self.stats.devices_used.get(o.host, [])
        parts = [f"<b>{html.escape(str(o.host or 'host'))}</b>"]
        dist = props.get("distributedInfo")
        if isinstance(dist, dict) and "rank" in dist:
            parts.append(f"rank {dist['rank']} of {dist.get('world_size', '?')}"
                         + (f" ({html.escape(str(dist['backend']))})" if dist.get("backend") else ""))
        if used:
            parts.append("GPU activity on device " + ", ".join(str(d) for d in used))
        if not devices and not used:
            parts.append("the trace lists no GPU devices (a CPU-only capture?)")
        elif not devices:
            parts.append("the trace lists no device properties")
        if self.stats.note:
            parts.append(html.escape(self.stats.note))
        self.device_label.setText(" · ".join(parts))
        self.devices.set_devices(devices, used)
