"""A page around one of XProf's DataTables: a filter over the name column,
an optional type picker, the table sortable by any column, shares drawn as
bars."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QLineEdit, QVBoxLayout, QWidget

from profscope.widgets.stats.share_delegate import ShareDelegate
from profscope.widgets.stats.table_models import StatsTableModel
from profscope.widgets.stats.table_page import stats_table

ALL = "All"


class DataTableModel(StatsTableModel):
    """The rows of a DataTable ({"cols", "rows"}) as columns; `shares` names
    the columns holding shares (drawn as bars), `name` the op's column and
    `searched` the columns the filter text searches (the name when empty)."""

    def __init__(self, name: str, type_: str | None = None, shares: tuple[str, ...] = (), hidden=(), parent=None,
                 searched: tuple[str, ...] = ()):
        super().__init__(parent)
        self.name_id, self.type_id, self.share_ids, self.hidden = name, type_, shares, set(hidden)
        self.searched_ids = searched or (name,)
        self.ids: list[str] = []
        self.COLUMNS = ()
        self.properties: dict = {}

    def column(self, column_id: str) -> int:
        """The shown column of a DataTable column id, -1 when it has none."""
        return self.ids.index(column_id) if column_id in self.ids else -1

    def _search_texts(self) -> list[str]:
        searched = [self.columns[c] for c in map(self.column, self.searched_ids) if c >= 0] or [self.columns[self.NAME]]
        return ["\n".join(map(str, texts)).casefold() for texts in zip(*searched)]

    def set_table(self, table: dict | None) -> None:
        cols = [c for c in (table or {}).get("cols", [])]
        keep = [k for k, c in enumerate(cols) if c.get("id") not in self.hidden]
        rows = [r.get("c", []) for r in (table or {}).get("rows", [])]
        self.properties = dict((table or {}).get("p", {}))
        self.ids = [cols[k]["id"] for k in keep]
        kinds = []
        for k in keep:
            c = cols[k]
            if c["id"] in self.share_ids:
                kinds.append("share")
            elif c.get("type") == "number":
                kinds.append("number")
            else:
                kinds.append("text")
        self.COLUMNS = tuple((cols[k].get("label") or cols[k]["id"], kind, cols[k]["id"])
                             for k, kind in zip(keep, kinds))
        self.HOST = None
        self.NAME = self.ids.index(self.name_id) if self.name_id in self.ids else 0
        self.TYPE = self.ids.index(self.type_id) if self.type_id in self.ids else None
        columns = []
        for k, kind in zip(keep, kinds):
            values = [(row[k] or {}).get("v") if k < len(row) else None for row in rows]
            if kind == "text":
                columns.append(["" if v is None else str(v) for v in values])
            else:
                columns.append(np.array([float(v) if isinstance(v, (int, float)) else np.nan for v in values]))
        self.columns = [[] for _ in self.COLUMNS]
        if self.COLUMNS:
            self.set_columns(columns)
        else:
            self.beginResetModel()
            self.order = np.zeros(0, np.int64)
            self.endResetModel()

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.UserRole and index.isValid() and self.COLUMNS[index.column()][1] == "share":
            v = float(self.value(index.row(), index.column()))
            return v if v == v else 0.0
        return super().data(index, role)

    @staticmethod
    def format(value, kind: str) -> str:
        if kind == "number":
            v = float(value)
            if v != v:
                return ""
            # up to 3 decimals, without trailing zeros: a column reads 25 and 12.5, not 25 and 12.500
            return f"{v:,.0f}" if v == int(v) and abs(v) < 1e15 else f"{v:,.3f}".rstrip("0").rstrip(".")
        return StatsTableModel.format(value, kind)


class DataTablePage(QWidget):
    """Filter, type picker and table of one DataTable."""

    def __init__(self, title: str, name: str, type_: str | None = None, shares: tuple[str, ...] = (),
                 hidden=(), parent=None, empty: str = "", share_scale: float = 1.0,
                 searched: tuple[str, ...] = (), noun: str = "rows"):
        super().__init__(parent)
        self.empty = empty  # said above the table when it has no rows
        self.noun = noun  # what the rows are, for the count ("12 of 40 ops")
        self.count = QLabel()
        self.model = DataTableModel(name, type_, shares, hidden, self, searched)
        self.title = QLabel(f"<b>{title}</b>")
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.RichText)
        self.summary.setOpenExternalLinks(True)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by name")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(lambda text: self.model.set_filter(text=text))
        self.types = QComboBox()
        self.types.currentTextChanged.connect(self._type_chosen)
        self.types.setVisible(type_ is not None)
        self.view = stats_table(self.model)
        self.view.setSortingEnabled(True)
        self.view.horizontalHeader().setSortIndicator(-1, Qt.AscendingOrder)  # XProf's row order until a click
        self.shares = ShareDelegate(self.view, scale=share_scale)
        top = QHBoxLayout()
        top.addWidget(self.title)
        top.addStretch(1)
        top.addWidget(self.types)
        top.addWidget(self.filter)
        top.addWidget(self.count)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(self.summary)
        layout.addWidget(self.view, 1)
        self.summary.hide()
        self.model.modelReset.connect(self._count)

    def _count(self) -> None:
        self.count.setText(f"{self.model.rowCount():,} of {self.model.total_rows:,} {self.noun}")

    def op_tables(self) -> list:
        """(view, its name column) of the tables whose rows are ops (linked to the Timeline)."""
        return [(self.view, lambda: self.model.NAME)]

    def _type_chosen(self, text: str) -> None:
        self.model.set_filter(type_="" if text in ("", ALL) else text)

    def set_table(self, table: dict | None, summary: str = "") -> None:
        self.model.set_table(table)
        for c, (_title, kind, _id) in enumerate(self.model.COLUMNS):
            self.view.setItemDelegateForColumn(c, self.shares if kind == "share" else None)
        self.types.blockSignals(True)
        self.types.clear()
        if self.model.TYPE is not None:
            self.types.addItems([ALL, *sorted({str(t) for t in self.model.columns[self.model.TYPE]})])
        self.types.blockSignals(False)
        self.model.set_filter(type_="")
        if self.empty and not self.model.total_rows:
            summary = f"{summary}<br>{self.empty}" if summary else self.empty
        self.summary.setText(summary)
        self.summary.setVisible(bool(summary))
        self.view.resizeColumnsToContents()
        fm = self.view.fontMetrics()
        for c in range(len(self.model.COLUMNS)):
            self.view.setColumnWidth(c, min(self.view.columnWidth(c), fm.horizontalAdvance("M") * 40))
