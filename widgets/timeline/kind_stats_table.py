"""Tables of per-op-type statistics (count, total, average, max, share),
for a whole step or a selected time range. Sorting is numpy argsort on the
columns; activating a row asks for those events to be highlighted."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView

from profscope.models.core.units import format_time_ps
from profscope.models.data.timeline import KindStats, Timeline

COLUMNS = ("Device", "Op type", "Count", "Total", "Average", "Max", "Share")
NUMERIC = {2, 3, 4, 5, 6}


def short_device(name: str) -> str:
    """"/job:localhost/replica:0/task:0/device:CPU:0" -> "CPU:0"."""
    return name.rsplit("device:", 1)[-1] if "device:" in name else name


class KindStatsModel(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.timeline: Timeline | None = None
        self.stats: KindStats | None = None
        self.share_of_ps = 1.0
        self.order = np.zeros(0, np.int64)

    def set_stats(self, timeline: Timeline | None, stats: KindStats | None, share_of_ps: float = 1.0) -> None:
        self.beginResetModel()
        self.timeline, self.stats = timeline, stats
        self.share_of_ps = max(share_of_ps, 1.0)
        self.order = np.arange(0 if stats is None else len(stats))
        self.endResetModel()

    def row_key(self, row: int) -> tuple[int, int]:
        """(group, kind) of a shown row."""
        i = self.order[row]
        return int(self.stats.group[i]), int(self.stats.kind[i])

    def _values(self, column: int) -> np.ndarray | list:
        st, tl = self.stats, self.timeline
        if column == 0:
            return [tl.groups[g] for g in st.group]
        if column == 1:
            return [tl.kinds[k] for k in st.kind]
        return {2: st.count, 3: st.total_ps, 4: st.average_ps, 5: st.max_ps, 6: st.total_ps / self.share_of_ps}[column]

    def value(self, row: int, column: int):
        """One cell's value (as _values(column)[i], without building the whole column per cell)."""
        st, tl, i = self.stats, self.timeline, self.order[row]
        if column == 0:
            return tl.groups[st.group[i]]
        if column == 1:
            return tl.kinds[st.kind[i]]
        if column == 6:
            return st.total_ps[i] / self.share_of_ps
        return {2: st.count, 3: st.total_ps, 4: st.average_ps, 5: st.max_ps}[column][i]

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole and 0 <= section < len(COLUMNS):
            return COLUMNS[section]
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or self.stats is None:
            return None
        row, column = index.row(), index.column()
        if role == Qt.DisplayRole:
            v = self.value(row, column)
            if column == 0:
                return short_device(v)
            if column == 2:
                return f"{int(v):,}"
            if column in (3, 4, 5):
                return format_time_ps(float(v))
            if column == 6:
                return f"{100 * float(v):.1f} %"
            return str(v)
        if role == Qt.ToolTipRole and column in (0, 1):
            return str(self.value(row, column))
        if role == Qt.UserRole:
            return self.value(row, column)
        if role == Qt.TextAlignmentRole and column in NUMERIC:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def sort(self, column, order=Qt.AscendingOrder):
        if self.stats is None or not 0 <= column < len(COLUMNS):
            return
        self.layoutAboutToBeChanged.emit()
        values = self._values(column)
        if column in NUMERIC:
            self.order = np.argsort(np.asarray(values), kind="stable")
        else:
            self.order = np.array(sorted(range(len(values)), key=lambda i: values[i].casefold()), np.int64)
        if order == Qt.DescendingOrder:
            self.order = self.order[::-1].copy()
        self.layoutChanged.emit()


class KindStatsTable(QTableView):
    kind_activated = Signal(int, int)  # group, kind

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats_model = KindStatsModel(self)
        self.setModel(self.stats_model)
        self.setSortingEnabled(True)
        self.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.setSelectionMode(QAbstractItemView.SingleSelection)
        self.verticalHeader().hide()
        self.horizontalHeader().setSectionResizeMode(1, QHeaderView.Stretch)
        self.selectionModel().currentRowChanged.connect(self._on_row)

    def _on_row(self, current, _previous) -> None:
        if current.isValid():
            self.kind_activated.emit(*self.stats_model.row_key(current.row()))
