"""Bytes allocated per kernel (LogMemory logs): count, tracked, bytes,
requested and share, sortable by any column."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from profscope.models.core.units import format_bytes
from profscope.models.data.allocation_log import KernelRows

COLUMNS = ("Kernel / operation", "Allocations", "Tracked", "Bytes allocated", "Bytes requested", "Share")
TOOLTIPS = {2: "Allocations with an allocation_id (on the timeline); the others are only counted",
            3: "allocated_bytes (requested_bytes when the allocator did not report it; num_bytes for raw allocations)"}


class KernelModel(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: KernelRows | None = None
        self.order = np.zeros(0, np.int64)

    def set_rows(self, rows: KernelRows | None) -> None:
        self.beginResetModel()
        self.rows = rows
        self.order = np.arange(0 if rows is None else len(rows))
        self.endResetModel()

    def _column(self, column: int):
        r = self.rows
        total = max(int(r.bytes.sum()), 1)
        return {0: r.kernel, 1: r.count, 2: r.tracked, 3: r.bytes, 4: r.requested, 5: r.bytes / total}[column]

    def value(self, row: int, column: int):
        return self._column(column)[self.order[row]]

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal:
            if role == Qt.DisplayRole:
                return COLUMNS[section]
            if role == Qt.ToolTipRole:
                return TOOLTIPS.get(section)
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row, col = index.row(), index.column()
        if role == Qt.DisplayRole:
            v = self.value(row, col)
            if col in (3, 4):
                return format_bytes(int(v))
            if col == 5:
                return f"{v * 100:.1f} %"
            return v if col == 0 else f"{int(v):,}"
        if role == Qt.TextAlignmentRole and col > 0:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def sort(self, column, order=Qt.AscendingOrder):
        if self.rows is None:
            return
        self.layoutAboutToBeChanged.emit()
        values = self._column(column)
        keys = np.argsort(np.array(values, dtype=object if column == 0 else None), kind="stable")
        self.order = keys[::-1].copy() if order == Qt.DescendingOrder else keys
        self.layoutChanged.emit()


class KernelTable(QTableView):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.model_ = KernelModel(self)
        self.setModel(self.model_)
        self.setSortingEnabled(True)
        self.sortByColumn(3, Qt.DescendingOrder)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setAlternatingRowColors(True)
        self.verticalHeader().setDefaultSectionSize(22)
        self.verticalHeader().hide()
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        self.setWordWrap(False)

    def set_rows(self, rows: KernelRows | None) -> None:
        self.model_.set_rows(rows)
        header = self.horizontalHeader()
        self.model_.sort(header.sortIndicatorSection(), header.sortIndicatorOrder())
