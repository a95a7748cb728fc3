"""The Query tab's results: a virtual table model over a query's Arrow
columns, the sort order of a column (computed in a worker: millions of rows
take seconds), rows as tab-separated text, and where a row leads (a slice in
the timeline, a moment of the memory view)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal

from profscope.models.sql.schema import is_number
from profscope.widgets.palette import Scheme

COPY_ROWS = 1_000_000  # at most this many rows go to the clipboard
# Roles as ints: comparing PySide's enums costs ~20 µs, and data() runs for every visible cell.
DISPLAY, TOOLTIP, ALIGNMENT, FOREGROUND = (int(r) for r in (Qt.DisplayRole, Qt.ToolTipRole, Qt.TextAlignmentRole,
                                                            Qt.ForegroundRole))
RIGHT = int(Qt.AlignRight | Qt.AlignVCenter)


def as_tsv(table: pa.Table) -> str:
    """Rows as tab-separated text with a header line; NULL as nothing, tabs
    and line breaks inside values as spaces."""
    if not table.num_columns:
        return ""
    texts = [pc.replace_substring_regex(_text(table.column(n)), r"[\t\r\n]", " ").fill_null("")
             for n in table.column_names]
    lines = pc.binary_join_element_wise(*texts, "\t") if len(texts) > 1 else texts[0]
    return "\n".join(["\t".join(table.column_names), *lines.to_pylist()]) + "\n"


def _text(values: pa.ChunkedArray) -> pa.ChunkedArray | pa.Array:
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        return values
    try:
        return values.cast(pa.string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):  # lists, structs: as Python prints them
        return pa.array([None if v is None else str(v) for v in values.to_pylist()], pa.string())


@dataclass(frozen=True)
class Jump:
    """Where a result row leads: a slice (`event` = its id in the host's
    timeline), a time span on the timeline, or a memory snapshot (or time) of
    an allocator. session/host None: the row does not say (the window takes
    the location's only one)."""

    kind: str  # "slice", "time" or "memory"
    session: str | None
    host: str | None
    tag: str = ""
    event: int | None = None
    start_ns: int | None = None
    dur_ns: int = 0
    allocator: str | None = None
    snapshot: int | None = None
    time_ns: int | None = None  # memory time, when the row has no snapshot


def row_jump(table: pa.Table, row: int) -> Jump | None:
    """The Jump a row carries, from its column names: (session, host, tag,
    id) a slice; (allocator, snapshot or time) a memory moment; start_ns a
    time on the timeline."""
    names = set(table.column_names)

    def value(name):
        return table.column(name)[row].as_py() if name in names else None

    def integer(name):
        v = value(name)
        return int(v) if isinstance(v, (int, float)) and v == v else None

    place = dict(session=value("session"), host=value("host"))
    if "allocator" in names and value("allocator") is not None:
        snapshot = integer("snapshot")
        time_ns = integer("time_ns") if "time_ns" in names else integer("alloc_time_ns")
        if snapshot is not None or time_ns is not None:
            return Jump("memory", **place, allocator=value("allocator"), snapshot=snapshot, time_ns=time_ns)
        return None
    tag = value("tag") or ""
    if (event := integer("id")) is not None:
        return Jump("slice", **place, tag=tag, event=event)
    if (start := integer("start_ns")) is not None:
        return Jump("time", **place, tag=tag, start_ns=start, dur_ns=max(integer("dur_ns") or 0, 0))
    return None


def _float_text(v: float) -> str:
    """Seven significant digits (float32 data shows no noise), but every digit
    before the point and three after it for large values (seconds since the epoch)."""
    return format(v, ".3f") if 1e6 <= abs(v) < 1e15 else format(v, ".7g")


class ResultModel(QAbstractTableModel):
    """A query result as a table. Only the rows Qt asks for are read from
    the Arrow columns; sorting is a permutation (`order`) made elsewhere:
    clicking a header emits sort_requested."""

    sort_requested = Signal(int, bool)  # column, descending

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table = pa.table({})
        self._columns: list[pa.ChunkedArray] = []
        self._numeric: list[bool] = []
        self._shape = (0, 0)
        self.order: np.ndarray | None = None  # shown row -> table row; None: the query's order

    def set_result(self, table: pa.Table) -> None:
        self.beginResetModel()
        self.table = table
        self._columns = table.columns
        self._shape = (table.num_rows, table.num_columns)
        self._numeric = [is_number(t) for t in table.schema.types]
        self.order = None
        self.endResetModel()

    def set_order(self, order: np.ndarray | None) -> None:
        self.beginResetModel()
        self.order = order
        self.endResetModel()

    def source_row(self, row: int) -> int:
        return int(self.order[row]) if self.order is not None else row

    def value(self, row: int, column: int):
        return self._columns[column][self.source_row(row)].as_py()

    def rows_as_tsv(self, rows: np.ndarray, columns: list[int]) -> str:
        """Shown rows (and columns) as tab-separated text."""
        source = self.order[rows] if self.order is not None else rows
        return as_tsv(self.table.select(columns).take(pa.array(source, pa.int64())))

    def jump(self, row: int) -> Jump | None:
        return row_jump(self.table, self.source_row(row))

    # ---------------------------------------------------- Qt model API

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else self._shape[0]

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else self._shape[1]

    def headerData(self, section, orientation, role=DISPLAY):
        role = int(role)
        if orientation == Qt.Vertical:  # row numbers (the header asks for each visible one)
            return f"{section + 1:,}" if role == DISPLAY and 0 <= section < self._shape[0] else None
        if 0 <= section < self._shape[1]:
            if role == DISPLAY:
                return self.table.column_names[section]
            if role == TOOLTIP:
                return f"{self.table.column_names[section]}: {self.table.schema.types[section]}"
        return None

    def data(self, index, role=DISPLAY):
        row, column = index.row(), index.column()
        if not (0 <= row < self._shape[0] and 0 <= column < self._shape[1]):
            return None
        role = int(role)
        if role == DISPLAY or role == TOOLTIP:
            v = self.value(row, column)
            if v is None:
                return "NULL"
            if isinstance(v, float):
                return _float_text(v) if role == DISPLAY else repr(v)
            return str(v)
        if role == ALIGNMENT:
            return RIGHT if self._numeric[column] else None
        if role == FOREGROUND and self.value(row, column) is None:
            return Scheme.of().shade(0.41)
        return None

    def sort(self, column, order=Qt.AscendingOrder):
        if 0 <= column < self.table.num_columns and self.table.num_rows:
            self.sort_requested.emit(column, order == Qt.DescendingOrder)
