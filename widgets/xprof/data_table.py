"""XProf's Google Charts DataTables (cols, rows of {"v", "f"} cells, p) as a
sortable, filterable Qt table model."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt


def _value(cell):
    return cell.get("v") if isinstance(cell, dict) else cell


class DataTableModel(QAbstractTableModel):
    """One DataTable; `filter_text` keeps rows whose string cells hold it (any case)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns: list[dict] = []
        self.rows: list[list] = []
        self.order: list[int] = []
        self.properties: dict = {}

    def set_table(self, table: dict | None) -> None:
        self.beginResetModel()
        table = table or {}
        self.columns = list(table.get("cols", []))
        self.rows = [list(row.get("c", [])) for row in table.get("rows", [])]
        self.properties = dict(table.get("p", {}))
        self.order = list(range(len(self.rows)))
        self.endResetModel()

    def column(self, column_id: str) -> int:
        for c, col in enumerate(self.columns):
            if col.get("id") == column_id:
                return c
        return -1

    def value(self, row: int, column: int):
        cells = self.rows[row]
        return _value(cells[column]) if column < len(cells) else None

    def set_filter(self, text: str) -> None:
        text = text.strip().lower()
        strings = [c for c, col in enumerate(self.columns) if col.get("type") == "string"]
        self.beginResetModel()
        self.order = [
            r
            for r in range(len(self.rows))
            if not text or any(text in str(self.value(r, c) or "").lower() for c in strings)
        ]
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole and section < len(self.columns):
            return self.columns[section].get("label", "")
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        row, column = self.order[index.row()], index.column()
        value = self.value(row, column)
        if role == Qt.DisplayRole:
            cell = self.rows[row][column] if column < len(self.rows[row]) else None
            if isinstance(cell, dict) and "f" in cell:
                return str(cell["f"])
            if isinstance(value, float):
                return f"{value:,.3f}".rstrip("0").rstrip(".") if value else "0"
            return "" if value is None else str(value)
        if role == Qt.UserRole:
            return value
        if role == Qt.TextAlignmentRole and isinstance(value, (int, float)):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        return None

    def sort(self, column, order=Qt.AscendingOrder):
        self.layoutAboutToBeChanged.emit()
        numeric = self.columns[column].get("type") == "number" if column < len(self.columns) else False
        key = (lambda r: self.value(r, column) or 0) if numeric else (lambda r: str(self.value(r, column) or ""))
        self.order.sort(key=key, reverse=order == Qt.DescendingOrder)
        self.layoutChanged.emit()
