"""Statistics tables as Qt models: kernels, operators and per host overview rows of a TraceStats
(filtered by name, host and type; sorted with numpy), and the devices of a host."""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt

from profscope.models.analysis.trace_stats import COMMUNICATION, COMPUTATION, MEMORY, OTHER, HostOverview, TraceStats
from profscope.models.core.units import format_bytes, format_time_ps
from profscope.widgets.palette import Scheme

KERNEL_TYPES = (COMPUTATION, COMMUNICATION, MEMORY, OTHER)
TYPE_COLORS = {COMPUTATION: "#1e88e5", COMMUNICATION: "#fb8c00", MEMORY: "#8e24aa", OTHER: "#9e9e9e"}
DIGITS = re.compile(r"(\d+)")
# data() names roles in full (Qt.ItemDataRole.DisplayRole) and aligns by a constant: PySide6 resolves a short
# name (Qt.DisplayRole) in ~3 us, and sizing a table's columns asks ~8 roles of each cell of 1,000 rows (~2 s).
RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


def percent_of(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def format_percent(value: float) -> str:
    return f"{value:.1f} %"


def natural_key(text: str) -> list:
    """Sort key: any case, numbers by value ("rank-2" before "rank-10")."""
    return [int(part) if k % 2 else part.casefold() for k, part in enumerate(DIGITS.split(text))]


class StatsTableModel(QAbstractTableModel):
    """Rows of a result as columns (numpy arrays or lists), filtered by a
    name substring, a host and a type, sorted by any column with numpy.

    Subclasses set COLUMNS: (title, kind, tooltip) with kind one of "text",
    "type", "count", "time", "share"; and which columns hold the host, name
    and type (None when there is none)."""

    COLUMNS: tuple[tuple[str, str, str], ...] = ()
    HOST, NAME, TYPE = 0, 1, None

    def __init__(self, parent=None):
        super().__init__(parent)
        self.columns: list = [[] for _ in self.COLUMNS]
        self.column_max: list[float] = [0.0 for _ in self.COLUMNS]  # largest value of each numeric column
        self.order = np.zeros(0, np.int64)  # shown rows, as indices into the columns
        self._folded: list[str] = []
        self.filter_text = self.filter_host = self.filter_type = ""
        self.sort_column, self.sort_order = -1, Qt.AscendingOrder

    @property
    def total_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def set_columns(self, columns: list) -> None:
        self.beginResetModel()
        self.columns = [np.asarray(c, dtype=object) if kind in ("text", "type") else np.asarray(c)
                        for c, (_, kind, _) in zip(columns, self.COLUMNS)]
        self._folded = self._search_texts()
        self.column_max = [float(np.nanmax(c)) if kind not in ("text", "type") and len(c) and not np.isnan(c).all()
                           else 0.0 for c, (_, kind, _) in zip(self.columns, self.COLUMNS)]
        self.order = self._ordered(self._matching())
        self.endResetModel()

    def _search_texts(self) -> list[str]:
        """Per row, the folded text the filter searches: its name."""
        return [str(n).casefold() for n in self.columns[self.NAME]]

    def set_filter(self, text: str | None = None, host: str | None = None, type_: str | None = None) -> None:
        """Shows the rows whose name contains `text` (any case), of `host` and
        `type_` ("" = any); None keeps that part of the filter."""
        self.beginResetModel()
        if text is not None:
            self.filter_text = text.strip().casefold()
        if host is not None:
            self.filter_host = host
        if type_ is not None:
            self.filter_type = type_
        self.order = self._ordered(self._matching())
        self.endResetModel()

    def _matching(self) -> np.ndarray:
        keep = np.ones(self.total_rows, bool)
        if self.filter_text:
            needle = self.filter_text
            keep &= np.fromiter((needle in n for n in self._folded), bool, self.total_rows)
        if self.filter_host and self.HOST is not None:
            keep &= self.columns[self.HOST] == self.filter_host
        if self.filter_type and self.TYPE is not None:
            keep &= self.columns[self.TYPE] == self.filter_type
        return np.flatnonzero(keep)

    def _ordered(self, rows: np.ndarray) -> np.ndarray:
        if not 0 <= self.sort_column < len(self.COLUMNS) or not len(rows):
            return rows
        values = self.columns[self.sort_column][rows]
        if self.COLUMNS[self.sort_column][1] in ("text", "type"):
            keys = sorted(range(len(rows)), key=lambda i: natural_key(str(values[i])))
            order = np.array(keys, np.int64)
        else:
            order = np.argsort(values, kind="stable")
        if self.sort_order == Qt.DescendingOrder:
            order = order[::-1]
        return rows[order]

    def sort(self, column, order=Qt.AscendingOrder):
        if not 0 <= column < len(self.COLUMNS):
            return
        self.layoutAboutToBeChanged.emit()
        self.sort_column, self.sort_order = column, order
        before = self.order
        self.order = self._ordered(np.sort(before))
        # Selections and the current row move with their rows.
        persistent = self.persistentIndexList()
        if persistent:
            position = np.full(self.total_rows, -1, np.int64)
            position[self.order] = np.arange(len(self.order))
            self.changePersistentIndexList(persistent, [
                self.index(int(position[before[i.row()]]), i.column()) if 0 <= i.row() < len(before) else QModelIndex()
                for i in persistent])
        self.layoutChanged.emit()

    def source_row(self, row: int) -> int:
        """The result row of a shown row."""
        return int(self.order[row])

    def shown_row(self, source_row: int) -> int:
        """The shown row of a result row, -1 when filtered out."""
        hit = np.flatnonzero(self.order == source_row)
        return int(hit[0]) if len(hit) else -1

    def value(self, row: int, column: int):
        return self.columns[column][self.order[row]]

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.order)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation != Qt.Horizontal or not 0 <= section < len(self.COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.COLUMNS[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return self.COLUMNS[section][2] or None
        return None

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.order):
            return None
        row, column = index.row(), index.column()
        kind = self.COLUMNS[column][1]
        if role == Qt.ItemDataRole.DisplayRole:
            return self.format(self.value(row, column), kind)
        if role == Qt.ItemDataRole.ToolTipRole:
            if kind in ("text", "type"):
                return str(self.value(row, column))
            if kind == "time":
                return f"{float(self.value(row, column)) / 1e6:,.3f} us"
            return None
        if role == Qt.ItemDataRole.UserRole:
            v = self.value(row, column)
            return v.item() if isinstance(v, np.generic) else v
        if role == Qt.ItemDataRole.TextAlignmentRole and kind not in ("text", "type"):
            return RIGHT
        if role == Qt.ItemDataRole.DecorationRole and kind == "type":
            return Scheme.of().data(TYPE_COLORS.get(str(self.value(row, column)), TYPE_COLORS[OTHER]))
        return None

    @staticmethod
    def format(value, kind: str) -> str:
        if kind == "count":
            return f"{int(value):,}"
        if kind == "time":
            return format_time_ps(float(value)) if value else "0"
        if kind == "share":
            return format_percent(100 * float(value))
        if kind == "percent":
            return format_percent(float(value))
        return str(value)


class KernelModel(StatsTableModel):
    COLUMNS = (("Host", "text", ""), ("Name", "text", ""),
               ("Type", "type", "HTA's kernel types by name: COMMUNICATION (NCCL), MEMORY (memcpy, memset), "
                                "COMPUTATION (other kernels)"),
               ("Count", "count", ""), ("Total", "time", ""), ("Mean", "time", ""), ("Min", "time", ""),
               ("Max", "time", ""), ("Share", "share", "Part of its host's total GPU activity time"))
    HOST, NAME, TYPE = 0, 1, 2

    def set_stats(self, stats: TraceStats | None) -> None:
        k = stats.kernels if stats is not None else None
        if k is None or not len(k):
            self.set_columns([[] for _ in self.COLUMNS])
            return
        self.set_columns([k.host, k.name, k.type, k.count, k.total_ps, k.mean_ps, k.min_ps, k.max_ps,
                          stats.kernels.share])


class OpModel(StatsTableModel):
    COLUMNS = (("Host", "text", ""), ("Name", "text", ""), ("Calls", "count", ""),
               ("Host total", "time", "Time on the CPU, children included"),
               ("Host self", "time", "Time on the CPU minus the events directly inside it"),
               ("Device self", "time", "GPU time of the kernels the operator itself launched"),
               ("Device total", "time", "GPU time of the kernels it and the operators inside it launched"),
               ("Input shape", "text", "Kineto's Input Dims (traces recorded with record_shapes=True)"))
    HOST, NAME, TYPE, SHAPE = 0, 1, None, 7

    def __init__(self, parent=None):
        super().__init__(parent)
        self.by_shape = False  # one row per (operator, input shape)

    def set_stats(self, stats: TraceStats | None) -> None:
        o = stats.ops if stats is not None else None
        if stats is not None and self.by_shape and stats.ops_by_shape is not None:
            o = stats.ops_by_shape
        if o is None or not len(o):
            self.set_columns([[] for _ in self.COLUMNS])
            return
        self.set_columns([o.host, o.name, o.calls, o.host_total_ps, o.host_self_ps, o.device_self_ps,
                          o.device_total_ps, o.input_shape])


class OverviewModel(StatsTableModel):
    """One row per host: the temporal breakdown and ProfilerStep times."""

    COLUMNS = (("Host", "text", ""), ("GPU span", "time", "From the first to the last GPU activity"),
               ("Compute", "percent", "Computation kernels running (part of the span)"),
               ("Non-compute", "percent", "Communication and memory activity only (part of the span)"),
               ("Idle", "percent", "No GPU activity (part of the span)"),
               ("Steps", "count", "ProfilerSteps (whole steps inside the chosen range)"),
               ("Step mean", "time", ""), ("Step min", "time", ""), ("Step max", "time", ""))
    HOST, NAME, TYPE = 0, 0, None
    TIMES = {2: "compute_ps", 3: "non_compute_ps", 4: "idle_ps"}

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows_: list[HostOverview] = []

    def set_stats(self, stats: TraceStats | None) -> None:
        self.rows_ = list(stats.overview) if stats is not None else []
        columns = [[] for _ in self.COLUMNS]
        for o in self.rows_:
            d = (o.steps.end_ps - o.steps.start_ps).astype(np.float64)
            values = [o.host, o.span_ps, percent_of(o.compute_ps, o.span_ps), percent_of(o.non_compute_ps, o.span_ps),
                      percent_of(o.idle_ps, o.span_ps), len(d), d.mean() if len(d) else np.nan,
                      d.min() if len(d) else np.nan, d.max() if len(d) else np.nan]
            for c, v in zip(columns, values):
                c.append(v)
        self.set_columns(columns)

    def overview(self, row: int) -> HostOverview:
        return self.rows_[self.source_row(row)]

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if index.isValid() and 0 <= index.row() < len(self.order):
            v = self.value(index.row(), index.column())
            if role == Qt.ItemDataRole.DisplayRole and self.COLUMNS[index.column()][1] == "time" and np.isnan(v):
                return "–"
            if role == Qt.ItemDataRole.ToolTipRole and index.column() in self.TIMES:
                o = self.overview(index.row())
                return f"{format_time_ps(getattr(o, self.TIMES[index.column()]))} of {format_time_ps(o.span_ps)}"
        return super().data(index, role)


DEVICE_FIELDS = (("Id", "id"), ("Name", "name"), ("Memory", "totalGlobalMem"), ("SMs", "numSms"),
                 ("Compute capability", None), ("Max threads / block", "maxThreadsPerBlock"),
                 ("Shared memory / block", "sharedMemPerBlock"), ("Registers / block", "regsPerBlock"),
                 ("Used", None))


class DeviceModel(QAbstractTableModel):
    """The devices a trace lists (Kineto's deviceProperties) and whether the
    host's GPU activity ran on each."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.devices: list[dict] = []
        self.used: set[int] = set()

    def set_devices(self, devices: list[dict], used: list[int]) -> None:
        self.beginResetModel()
        self.devices = [d for d in devices if isinstance(d, dict)]
        self.used = set(used)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(self.devices)

    def columnCount(self, parent=QModelIndex()):
        return 0 if parent.isValid() else len(DEVICE_FIELDS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.ItemDataRole.DisplayRole and 0 <= section < len(DEVICE_FIELDS):
            return DEVICE_FIELDS[section][0]
        return None

    def text(self, row: int, column: int) -> str:
        d = self.devices[row]
        title, key = DEVICE_FIELDS[column]
        if title == "Compute capability":
            return f"{d['computeMajor']}.{d['computeMinor']}" if "computeMajor" in d else ""
        if title == "Used":
            return "✓" if d.get("id") in self.used else ""
        v = d.get(key, "")
        if key in ("totalGlobalMem", "sharedMemPerBlock") and isinstance(v, (int, float)):
            return format_bytes(v)
        return f"{v:,}" if isinstance(v, int) and key != "id" else str(v)

    def data(self, index, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.devices):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return self.text(index.row(), index.column())
        if role == Qt.ItemDataRole.ToolTipRole and DEVICE_FIELDS[index.column()][0] == "Used":
            return "This host's GPU activity ran on this device" if self.text(index.row(), index.column()) else None
        if role == Qt.ItemDataRole.TextAlignmentRole and index.column() not in (1,):
            return int(Qt.AlignRight | Qt.AlignVCenter) if index.column() != len(DEVICE_FIELDS) - 1 \
                else int(Qt.AlignCenter)
        return None
