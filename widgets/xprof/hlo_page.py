"""XProf's hlo_stats as a page: the HLO ops in a sortable table, a filter
over their names, categories and framework ops, share bars on the time
shares. set_data takes hlo_stats's DataTable (dict or JSON text)."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHBoxLayout, QLabel, QLineEdit, QTableView, QVBoxLayout, QWidget

from profscope.widgets.stats.share_delegate import ShareDelegate
from profscope.widgets.xprof.data_table import DataTableModel

NO_OPS = (
    "No HLO ops. XProf lists the XLA ops that ran on a device (GPU, TPU); in this profile XLA ran on the "
    "host (CPU), whose time is in the framework op statistics."
)
SHARE_COLUMNS = ("total_self_time_percent", "cumulative_total_self_time_percent")


def as_json(data):
    return json.loads(data) if isinstance(data, (bytes, str)) else data


class HloPage(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = DataTableModel(self)
        self.filter = QLineEdit(placeholderText="Filter ops, categories, framework ops", clearButtonEnabled=True)
        self.filter.textChanged.connect(self._filter)
        self.count = QLabel()
        self.message = QLabel(NO_OPS, wordWrap=True)
        self.table = QTableView()
        self.table.setModel(self.model)
        self.table.setSortingEnabled(True)
        self.table.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        self.share = ShareDelegate(self.table, scale=100.0)
        bar = QHBoxLayout()
        bar.addWidget(self.filter, 1)
        bar.addWidget(self.count)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.message, 1)
        self.message.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        layout.addWidget(self.table, 1)

    def op_tables(self) -> list:
        return [(self.table, lambda: self.model.column("hlo_op_name"))]

    def set_data(self, data) -> None:
        self.model.set_table(as_json(data))
        for c in range(self.model.columnCount()):
            self.table.setItemDelegateForColumn(c, None)
        for column_id in SHARE_COLUMNS:
            c = self.model.column(column_id)
            if c >= 0:
                self.table.setItemDelegateForColumn(c, self.share)
        total = self.model.column("total_self_time")
        if total >= 0 and self.model.rows:
            self.table.sortByColumn(total, Qt.DescendingOrder)
        self.table.resizeColumnsToContents()  # headers and values readable, a long op text capped
        limit = self.table.fontMetrics().horizontalAdvance("M") * 40
        for c in range(self.model.columnCount()):
            self.table.setColumnWidth(c, min(self.table.columnWidth(c), limit))
        has_rows = bool(self.model.rows)
        self.message.setVisible(not has_rows)
        self.table.setVisible(has_rows)
        self.filter.setEnabled(has_rows)
        self._filter(self.filter.text())

    def _filter(self, text: str) -> None:
        self.model.set_filter(text)
        header = self.table.horizontalHeader()
        if header.sortIndicatorSection() < self.model.columnCount():
            self.model.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
        self.count.setText(f"{self.model.rowCount()} of {len(self.model.rows)} ops")
