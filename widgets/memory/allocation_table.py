"""The table of active allocations: sortable on every column, filtered by op
name and minimum size, rows copyable as tab-separated text.

Sorting and filtering work on numpy columns inside the model, so a table of
a hundred thousand rows reorders at once.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QSpinBox,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from profscope.models.core.units import format_bytes
from profscope.models.data.memory_profile import AllocationRows

COLUMNS = ("Op name", "Allocation size", "Requested size", "Occurrences", "Region", "Data type", "Shape", "Step")
SIZE_COLUMNS = (1, 2)
TEXT_FIELDS = {0: "op", 4: "region", 5: "dtype", 6: "shape"}
NUMBER_FIELDS = {1: "allocation", 2: "requested", 3: "occurrences", 7: "step"}
SIZE_UNITS = (("B", 1), ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30))


class ActiveAllocationModel(QAbstractTableModel):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: AllocationRows | None = None
        self.order = np.zeros(0, np.int64)  # shown rows, as indices into self.rows
        self._sort: tuple[int, Qt.SortOrder] | None = None
        self._op_filter = ""
        self._min_bytes = 0

    def set_rows(self, rows: AllocationRows | None) -> None:
        self.beginResetModel()
        self.rows = rows
        self._update_order()
        self.endResetModel()

    def set_filter(self, op_text: str, min_bytes: int) -> None:
        if (op_text, min_bytes) == (self._op_filter, self._min_bytes):
            return
        self._op_filter, self._min_bytes = op_text, min_bytes
        self.beginResetModel()
        self._update_order()
        self.endResetModel()

    def _update_order(self) -> None:
        rows = self.rows
        if rows is None or not len(rows):
            self.order = np.zeros(0, np.int64)
            return
        keep = rows.allocation >= self._min_bytes
        if self._op_filter:
            needle = self._op_filter.casefold()
            keep &= np.fromiter((needle in op.casefold() for op in rows.op), bool, count=len(rows))
        order = np.flatnonzero(keep)
        if self._sort is not None:
            column, direction = self._sort
            if column in NUMBER_FIELDS:
                key = getattr(rows, NUMBER_FIELDS[column])[order]
                order = order[np.argsort(key, kind="stable")]
            else:
                texts = getattr(rows, TEXT_FIELDS[column])
                order = np.array(sorted(order, key=lambda i: texts[i].casefold()), np.int64)
            if direction == Qt.DescendingOrder:
                order = order[::-1]
        self.order = order

    @property
    def total_rows(self) -> int:
        return 0 if self.rows is None else len(self.rows)

    def row_index(self, view_row: int) -> int:
        """The index in the AllocationRows of a shown row."""
        return int(self.order[view_row])

    # ---------------------------------------------------- Qt model API

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole and 0 <= section < len(COLUMNS):
            return COLUMNS[section]
        return None

    def value(self, view_row: int, column: int):
        i = self.row_index(view_row)
        if column in TEXT_FIELDS:
            return getattr(self.rows, TEXT_FIELDS[column])[i]
        return int(getattr(self.rows, NUMBER_FIELDS[column])[i])

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or not (0 <= index.row() < len(self.order)) or not (0 <= index.column() < len(COLUMNS)):
            return None
        column = index.column()
        if role == Qt.DisplayRole:
            v = self.value(index.row(), column)
            return format_bytes(v) if column in SIZE_COLUMNS else str(v)
        if role == Qt.ToolTipRole:
            v = self.value(index.row(), column)
            return f"{v:,} bytes" if column in SIZE_COLUMNS else str(v)
        if role == Qt.UserRole:
            return self.value(index.row(), column)
        if role == Qt.TextAlignmentRole and column in NUMBER_FIELDS:
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def sort(self, column, order=Qt.AscendingOrder):
        if not 0 <= column < len(COLUMNS):
            return
        self.layoutAboutToBeChanged.emit()
        self._sort = (column, order)
        self._update_order()
        self.layoutChanged.emit()

    def as_tsv(self, view_rows: list[int]) -> str:
        lines = ["\t".join(COLUMNS)]
        lines += ["\t".join(str(self.value(r, c)) for c in range(len(COLUMNS))) for r in view_rows]
        return "\n".join(lines) + "\n"


class AllocationTable(QWidget):
    """Filter boxes over the table. `row_selected` carries an AllocationRows index."""

    row_selected = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model = ActiveAllocationModel(self)
        self.op_filter = QLineEdit(placeholderText="Filter by op name")
        self.op_filter.setClearButtonEnabled(True)
        self.min_size = QSpinBox(minimum=0, maximum=1 << 30, suffix=" ", toolTip="Hide rows smaller than this")
        self.size_unit = QComboBox()
        for name, _ in SIZE_UNITS:
            self.size_unit.addItem(name)
        self.count_label = QLabel()
        self.view = QTableView()
        self.view.setModel(self.model)
        self.view.setSortingEnabled(True)
        self.view.sortByColumn(1, Qt.DescendingOrder)
        self.view.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.view.setAlternatingRowColors(True)
        self.view.verticalHeader().setDefaultSectionSize(22)
        self.view.verticalHeader().hide()
        self.view.horizontalHeader().setSectionResizeMode(0, QHeaderView.Stretch)
        self.view.setWordWrap(False)
        top = QHBoxLayout()
        top.addWidget(self.op_filter, 3)
        top.addWidget(QLabel("at least"))
        top.addWidget(self.min_size)
        top.addWidget(self.size_unit)
        top.addWidget(self.count_label, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(top)
        layout.addWidget(self.view)
        # Typing restarts a short timer; the filter runs once the user pauses.
        self._debounce = QTimer(self, singleShot=True, interval=150)
        self._debounce.timeout.connect(self._apply_filter)
        self.op_filter.textChanged.connect(self._debounce.start)
        self.min_size.valueChanged.connect(self._apply_filter)
        self.size_unit.currentIndexChanged.connect(self._apply_filter)
        self.view.selectionModel().currentRowChanged.connect(self._on_current_row)
        QShortcut(QKeySequence.Copy, self.view, self.copy_selection)

    def set_rows(self, rows: AllocationRows | None) -> None:
        self.model.set_rows(rows)
        self._update_count()

    def _apply_filter(self) -> None:
        self._debounce.stop()
        unit = SIZE_UNITS[self.size_unit.currentIndex()][1]
        self.model.set_filter(self.op_filter.text().strip(), self.min_size.value() * unit)
        self._update_count()

    def _update_count(self) -> None:
        shown, total = self.model.rowCount(), self.model.total_rows
        self.count_label.setText(f"{shown:,} of {total:,} rows" if shown != total else f"{total:,} rows")

    def _on_current_row(self, current, _previous) -> None:
        if current.isValid():
            self.row_selected.emit(self.model.row_index(current.row()))

    def copy_selection(self) -> None:
        rows = sorted({i.row() for i in self.view.selectionModel().selectedRows()})
        if rows:
            QGuiApplication.clipboard().setText(self.model.as_tsv(rows))
