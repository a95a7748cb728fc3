"""The Statistics tab of GPU traces (PyTorch profiler / Kineto): Overview (per
host the GPU's compute / non-compute / idle time, ProfilerStep times and the
devices, with one stacked bar per host so a straggler rank stands out),
Kernels (GPU activity per name) and Operators (cpu_op per name), for the whole
capture or a range of ProfilerSteps.

The view shows a finished `TraceStats` (profscope.models.analysis.trace_stats results computed
in a worker, the top kernels' launch parameters included); it reads no files.
Choosing a step range emits `step_range_requested`; the window computes that
range's statistics in its worker and calls `set_stats` again.
"""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import QAbstractTableModel, QEvent, QModelIndex, QRect, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QStyledItemDelegate,
    QTableView,
    QTabWidget,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from profscope.models.analysis.trace_stats import COMMUNICATION, COMPUTATION, MEMORY, OTHER, HostOverview, TraceStats
from profscope.models.core.units import format_bytes, format_time_ps
from profscope.models.repository.registry import KERNEL_STATS, OP_STATS, OVERVIEW
from profscope.widgets.palette import Scheme, follow

KERNEL_TYPES = (COMPUTATION, COMMUNICATION, MEMORY, OTHER)
TYPE_COLORS = {COMPUTATION: "#1e88e5", COMMUNICATION: "#fb8c00", MEMORY: "#8e24aa", OTHER: "#9e9e9e"}
# The temporal breakdown's parts, in bar order: (title, HostOverview field, colour).
BREAKDOWN = (("Compute", "compute_ps", "#1e88e5"), ("Non-compute", "non_compute_ps", "#fb8c00"),
             ("Idle", "idle_ps", "#cfd8dc"))
BREAKDOWN_TINTS = ("#bbdefb", "#ffe0b2", "#e3e8eb")  # the same, light enough to read text over


def breakdown_color(title: str, color: str, scheme: Scheme) -> QColor:
    """A breakdown part's colour on the scheme's background (idle is a tint: dark on a dark palette)."""
    return scheme.tint(color) if title == "Idle" else scheme.data(color)
DIGITS = re.compile(r"(\d+)")
ALL_STEPS = "All steps"
ALL_HOSTS = "All hosts"
ALL_TYPES = "All types"
PAGES = (OVERVIEW, KERNEL_STATS, OP_STATS)  # tab order, by the tool each page shows
PAGE_TITLES = {OVERVIEW: "Overview", KERNEL_STATS: "Kernels", OP_STATS: "Operators"}
# What a launch parameter is called in the panel under the kernel table.
LAUNCH_TITLES = {"grid": "Grid", "block": "Block", "registers per thread": "Registers per thread",
                 "shared memory": "Shared memory", "est. achieved occupancy %": "Est. achieved occupancy"}


def _percent(part: float, whole: float) -> float:
    return 100.0 * part / whole if whole > 0 else 0.0


def format_percent(value: float) -> str:
    return f"{value:.1f} %"


def natural_key(text: str) -> list:
    """Sort key: any case, numbers by value ("rank-2" before "rank-10")."""
    return [int(part) if k % 2 else part.casefold() for k, part in enumerate(DIGITS.split(text))]


def describe_range(step_range: tuple[int, int] | None) -> str:
    """"the whole capture", "step 3", "steps 3–5"."""
    if step_range is None:
        return "the whole capture"
    first, last = step_range
    return f"step {first}" if first == last else f"steps {first}–{last}"


# ---------------------------------------------------------------- table models


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
        self._folded = [str(n).casefold() for n in self.columns[self.NAME]]
        self.column_max = [float(np.nanmax(c)) if kind not in ("text", "type") and len(c) and not np.isnan(c).all()
                           else 0.0 for c, (_, kind, _) in zip(self.columns, self.COLUMNS)]
        self.order = self._ordered(self._matching())
        self.endResetModel()

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

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal or not 0 <= section < len(self.COLUMNS):
            return None
        if role == Qt.DisplayRole:
            return self.COLUMNS[section][0]
        if role == Qt.ToolTipRole:
            return self.COLUMNS[section][2] or None
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.order):
            return None
        row, column = index.row(), index.column()
        kind = self.COLUMNS[column][1]
        if role == Qt.DisplayRole:
            return self.format(self.value(row, column), kind)
        if role == Qt.ToolTipRole:
            if kind in ("text", "type"):
                return str(self.value(row, column))
            if kind == "time":
                return f"{float(self.value(row, column)) / 1e6:,.3f} us"
            return None
        if role == Qt.UserRole:
            v = self.value(row, column)
            return v.item() if isinstance(v, np.generic) else v
        if role == Qt.TextAlignmentRole and kind not in ("text", "type"):
            return int(Qt.AlignRight | Qt.AlignVCenter)
        if role == Qt.DecorationRole and kind == "type":
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
            values = [o.host, o.span_ps, _percent(o.compute_ps, o.span_ps), _percent(o.non_compute_ps, o.span_ps),
                      _percent(o.idle_ps, o.span_ps), len(d), d.mean() if len(d) else np.nan,
                      d.min() if len(d) else np.nan, d.max() if len(d) else np.nan]
            for c, v in zip(columns, values):
                c.append(v)
        self.set_columns(columns)

    def overview(self, row: int) -> HostOverview:
        return self.rows_[self.source_row(row)]

    def data(self, index, role=Qt.DisplayRole):
        if index.isValid() and 0 <= index.row() < len(self.order):
            v = self.value(index.row(), index.column())
            if role == Qt.DisplayRole and self.COLUMNS[index.column()][1] == "time" and np.isnan(v):
                return "–"
            if role == Qt.ToolTipRole and index.column() in self.TIMES:
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

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation == Qt.Horizontal and role == Qt.DisplayRole and 0 <= section < len(DEVICE_FIELDS):
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

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.devices):
            return None
        if role == Qt.DisplayRole:
            return self.text(index.row(), index.column())
        if role == Qt.ToolTipRole and DEVICE_FIELDS[index.column()][0] == "Used":
            return "This host's GPU activity ran on this device" if self.text(index.row(), index.column()) else None
        if role == Qt.TextAlignmentRole and index.column() not in (1,):
            return int(Qt.AlignRight | Qt.AlignVCenter) if index.column() != len(DEVICE_FIELDS) - 1 \
                else int(Qt.AlignCenter)
        return None


# ---------------------------------------------------------------- drawing


class ShareDelegate(QStyledItemDelegate):
    """A light bar behind a share (0..1 in the UserRole), then the text."""

    def __init__(self, parent=None, color: str = "#bbdefb", scale: float = 1.0):
        super().__init__(parent)
        self.color = QColor(color)
        self.scale = scale  # the value that fills the cell (1 for a share, 100 for a percent)

    def paint(self, painter, option, index):
        value = index.data(Qt.UserRole)
        if isinstance(value, (int, float)) and value == value and value > 0:
            r = option.rect.adjusted(2, 3, -2, -3)
            painter.fillRect(QRect(r.left(), r.top(), max(1, int(r.width() * min(value / self.scale, 1.0))),
                                   r.height()), Scheme.of(option.widget).tint(self.color))
        super().paint(painter, option, index)


class BreakdownBars(QWidget):
    """One horizontal stacked bar per host (compute, non-compute, idle) on a
    common time scale, so a host whose GPU waits more stands out."""

    host_clicked = Signal(int)  # index into the rows
    PITCH = 26  # pixels per host row
    BAR = 18

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[HostOverview] = []
        self.selected = -1
        self.setMouseTracking(True)

    def set_rows(self, rows: list[HostOverview]) -> None:
        self.rows = list(rows)
        self.selected = min(self.selected, len(self.rows) - 1)
        self.setMinimumHeight(self._height())
        self.updateGeometry()
        self.update()

    def set_selected(self, row: int) -> None:
        self.selected = row
        self.update()

    def _height(self) -> int:
        return self._top() + max(len(self.rows), 1) * self.PITCH + 24

    def _top(self) -> int:
        return self.fontMetrics().height() + 12  # the legend

    def sizeHint(self) -> QSize:
        return QSize(600, self._height())

    def minimumSizeHint(self) -> QSize:
        return QSize(200, self._height())

    def _geometry(self) -> tuple[int, int, float]:
        """(left of the bars, their full width, picoseconds per pixel)."""
        fm = self.fontMetrics()
        left = 8 + max([fm.horizontalAdvance(o.host or "host") for o in self.rows] + [40]) + 10
        right = fm.horizontalAdvance("000.0 ms") + 16
        width = max(self.width() - left - right, 20)
        longest = max([o.span_ps for o in self.rows] + [1])
        return left, width, longest / width

    def _segments(self, o: HostOverview, left: int, ps_per_px: float) -> list[tuple[QRect, str, str, int]]:
        """(rectangle, title, colour, ps) of each part of a host's bar."""
        out, x = [], float(left)
        for title, attr, color in BREAKDOWN:
            ps = getattr(o, attr)
            w = ps / ps_per_px
            out.append((QRect(round(x), 0, max(round(x + w) - round(x), 0), self.BAR), title, color, ps))
            x += w
        return out

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        fm = self.fontMetrics()
        scheme = Scheme.of(self)
        palette_text = scheme.window_text
        # Legend.
        x = 8
        for title, _, color in BREAKDOWN:
            p.fillRect(QRect(x, 6, 12, 12), breakdown_color(title, color, scheme))
            p.setPen(palette_text)
            p.drawText(x + 16, 6 + fm.ascent() - 1, title)
            x += 16 + fm.horizontalAdvance(title) + 18
        if not self.rows:
            return
        left, width, ps_per_px = self._geometry()
        top = self._top()
        for i, o in enumerate(self.rows):
            y = top + i * self.PITCH
            if i == self.selected:
                p.fillRect(QRect(0, y - 3, self.width(), self.BAR + 6), scheme.selection_tint())
            p.setPen(palette_text)
            label_rect = QRect(8, y, left - 12, self.BAR)
            p.drawText(label_rect, Qt.AlignVCenter | Qt.AlignLeft, fm.elidedText(o.host or "host", Qt.ElideMiddle,
                                                                               label_rect.width()))
            if o.span_ps <= 0:
                p.setPen(scheme.shade(0.54))
                p.drawText(QRect(left, y, width, self.BAR), Qt.AlignVCenter | Qt.AlignLeft, "no GPU activity")
                continue
            end = left
            for rect, title, color, ps in self._segments(o, left, ps_per_px):
                rect.translate(0, y)
                end = max(end, rect.right() + 1)
                if rect.width() <= 0:
                    continue
                fill = breakdown_color(title, color, scheme)
                p.fillRect(rect, fill)
                text = f"{_percent(ps, o.span_ps):.0f} %"
                if fm.horizontalAdvance(text) + 6 <= rect.width():
                    p.setPen(scheme.text_on(fill))
                    p.drawText(rect, Qt.AlignCenter, text)
            p.setPen(palette_text)
            p.drawText(QRect(end + 6, y, self.width() - end - 6, self.BAR), Qt.AlignVCenter | Qt.AlignLeft,
                       format_time_ps(o.span_ps))
        # Time axis: 0 and the longest span.
        y = top + len(self.rows) * self.PITCH
        p.setPen(scheme.shade(0.38))
        p.drawLine(left, y, left + width, y)
        for px, ps in ((0, 0.0), (width // 2, width / 2 * ps_per_px), (width, width * ps_per_px)):
            p.drawLine(left + px, y, left + px, y + 4)
            text = "0" if ps == 0 else format_time_ps(ps)
            tx = min(max(left + px - fm.horizontalAdvance(text) // 2, left), left + width - fm.horizontalAdvance(text))
            p.drawText(tx, y + 4 + fm.ascent(), text)

    def row_at(self, y: float) -> int:
        i = int((y - self._top() + 3) // self.PITCH)
        return i if 0 <= i < len(self.rows) and y >= self._top() - 3 else -1

    def mousePressEvent(self, event) -> None:
        i = self.row_at(event.position().y())
        if i >= 0:
            self.set_selected(i)
            self.host_clicked.emit(i)

    def event(self, event) -> bool:
        if event.type() == QEvent.ToolTip:
            text = self._tooltip(event.pos().x(), event.pos().y())
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)

    def _tooltip(self, x: float, y: float) -> str:
        i = self.row_at(y)
        if i < 0:
            return ""
        o = self.rows[i]
        left, _, ps_per_px = self._geometry()
        for rect, title, _, ps in self._segments(o, left, ps_per_px):
            if rect.left() <= x < rect.right() + 1:
                return f"{o.host}: {title.lower()} {format_time_ps(ps)} ({_percent(ps, o.span_ps):.1f} % of the span)"
        return f"{o.host}: GPU span {format_time_ps(o.span_ps)}"


# ---------------------------------------------------------------- pages


def _table(model: StatsTableModel | QAbstractTableModel, stretch: int = -1) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectRows)
    view.setSelectionMode(QAbstractItemView.SingleSelection)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.setTextElideMode(Qt.ElideMiddle)
    view.verticalHeader().hide()
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 8)
    header = view.horizontalHeader()
    header.setHighlightSections(False)
    header.setSectionResizeMode(QHeaderView.Interactive)
    if stretch >= 0:
        header.setSectionResizeMode(stretch, QHeaderView.Stretch)
    return view


# Widest text of a column's kind: columns are sized from this, not by measuring every row.
SAMPLE_TEXT = {"count": "1,000,000", "time": "999.9 ms", "share": "100.0 %", "percent": "100.0 %",
               "type": "COMMUNICATION"}


def _size_columns(view: QTableView, model: StatsTableModel, hosts: list[str]) -> None:
    """Column widths from the header and the widest text of each column's kind."""
    fm = view.fontMetrics()
    for c, (title, kind, _) in enumerate(model.COLUMNS):
        if view.horizontalHeader().sectionResizeMode(c) == QHeaderView.Stretch:
            continue
        sample = SAMPLE_TEXT.get(kind, "")
        if c == model.HOST:
            sample = max(hosts + [""], key=fm.horizontalAdvance)
        extra = 26 if kind == "type" else 0  # the colour chip
        view.setColumnWidth(c, max(fm.horizontalAdvance(title) + 28, fm.horizontalAdvance(sample) + 20 + extra, 60))


class _TablePage(QWidget):
    """A filter bar (name, host, and for kernels type) over a sortable table."""

    noun = "rows"

    def __init__(self, model: StatsTableModel, placeholder: str, with_types: bool, parent=None):
        super().__init__(parent)
        self.model = model
        self.filter = QLineEdit(placeholderText=placeholder, clearButtonEnabled=True)
        self.host_box = QComboBox(minimumContentsLength=10)
        self.host_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.type_box = QComboBox()
        self.type_box.addItems([ALL_TYPES, *KERNEL_TYPES])
        self.type_box.setVisible(with_types)
        self.count_label = QLabel()
        self.table = _table(model, stretch=model.NAME)
        self.table.setSortingEnabled(True)
        self._debounce = QTimer(self, singleShot=True, interval=150)
        self._debounce.timeout.connect(self._apply_text)
        self.filter.textChanged.connect(lambda _text: self._debounce.start())
        self.filter.returnPressed.connect(self._apply_text)
        self.host_box.currentIndexChanged.connect(self._apply_boxes)
        self.type_box.currentIndexChanged.connect(self._apply_boxes)
        self.model.modelReset.connect(self._update_count)
        self.model.layoutChanged.connect(self._update_count)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.filter, 3)
        bar.addWidget(self.host_box)
        bar.addWidget(self.type_box)
        bar.addWidget(self.count_label, 1)
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(4, 4, 4, 4)
        self.layout_.addLayout(bar)
        self.layout_.addWidget(self.table, 1)

    def set_hosts(self, hosts: list[str]) -> None:
        current = self.host_box.currentText()
        self.host_box.blockSignals(True)
        self.host_box.clear()
        self.host_box.addItems([ALL_HOSTS, *hosts])
        self.host_box.setCurrentText(current if current in hosts else ALL_HOSTS)
        self.host_box.blockSignals(False)
        self.host_box.setVisible(len(hosts) > 1)
        self.table.setColumnHidden(self.model.HOST, len(hosts) <= 1)
        self.model.filter_host = "" if self.host_box.currentIndex() <= 0 else self.host_box.currentText()
        _size_columns(self.table, self.model, hosts)

    def _apply_text(self) -> None:
        self._debounce.stop()
        self.model.set_filter(text=self.filter.text())

    def _apply_boxes(self) -> None:
        self.model.set_filter(host="" if self.host_box.currentIndex() <= 0 else self.host_box.currentText(),
                              type_="" if self.type_box.currentIndex() <= 0 else self.type_box.currentText())

    def _update_count(self) -> None:
        shown, total = self.model.rowCount(), self.model.total_rows
        self.count_label.setText(f"{shown:,} of {total:,} {self.noun}" if shown != total else f"{total:,} {self.noun}")


class KernelsPage(_TablePage):
    noun = "kernels"

    def __init__(self, parent=None):
        super().__init__(KernelModel(), "Filter kernels by name", with_types=True, parent=parent)
        self.model.setParent(self)
        self.stats: TraceStats | None = None
        self.table.setItemDelegateForColumn(8, ShareDelegate(self.table))
        self.table.sortByColumn(4, Qt.DescendingOrder)
        self.details = QLabel(wordWrap=True, textFormat=Qt.RichText)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.details.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.details.setMinimumHeight(self.details.fontMetrics().height() * 5)
        box = QGroupBox("Selected kernel")
        inner = QVBoxLayout(box)
        inner.addWidget(self.details)
        self.layout_.addWidget(box)
        self.table.selectionModel().currentRowChanged.connect(lambda current, _: self._show_row(current.row()))
        self.model.modelReset.connect(lambda: self._show_row(-1))
        follow(self, lambda _scheme: self._show_row(self.table.currentIndex().row()))

    def set_stats(self, stats: TraceStats | None) -> None:
        """Shows new stats, keeping the selected kernel (host and name) when it is still there."""
        row = self.table.currentIndex().row()
        key = (self.model.value(row, 0), self.model.value(row, 1)) if 0 <= row < self.model.rowCount() else None
        self.stats = stats
        self.model.set_stats(stats)
        self.set_hosts(stats.hosts if stats is not None else [])
        if key is not None and stats is not None:
            k = stats.kernels
            same = [i for i in range(len(k)) if k.name[i] == key[1] and k.host[i] == key[0]]
            shown = self.model.shown_row(same[0]) if same else -1
            if shown >= 0:
                self.table.selectRow(shown)

    def _show_row(self, row: int) -> None:
        s = self.stats
        if s is None or not 0 <= row < self.model.rowCount():
            self.details.setText(f"<span style='color:{Scheme.of(self).shade(0.54).name()}'>"
                                 "Select a kernel to see its launch parameters.</span>")
            return
        i = self.model.source_row(row)
        k = s.kernels
        esc = _escape
        head = (f"<b>{esc(k.name[i])}</b><br>{esc(k.type[i])}{' on ' + esc(k.host[i]) if k.host[i] else ''}: "
                f"{int(k.count[i]):,} × mean {format_time_ps(float(k.mean_ps[i]))}, total "
                f"{format_time_ps(float(k.total_ps[i]))} ({100 * s.kernels.share[i]:.1f} % of the host's GPU time)")
        params = s.launch.get(i)
        if params is None:
            body = (f"Launch parameters are read from the file for the kernels with the largest total time "
                    f"(the top {s.launch_rows:,} here); this one is not among them.")
        elif not params:
            body = "No launch parameters recorded (memory copies and sets have none)."
        else:
            body = "Launch parameters (first launch): " + " · ".join(
                f"{esc(LAUNCH_TITLES.get(key, key))} <b>{esc(_launch_value(key, v))}</b>" for key, v in params.items())
        self.details.setText(f"{head}<br>{body}")


def _launch_value(key: str, value: str) -> str:
    if key == "shared memory" and value.isdigit():
        return format_bytes(int(value))
    if key.endswith("%"):
        return f"{value} %"
    return value


def _escape(text: str) -> str:
    import html

    return html.escape(str(text))


class OperatorsPage(_TablePage):
    noun = "operators"

    def __init__(self, parent=None):
        super().__init__(OpModel(), "Filter operators by name", with_types=False, parent=parent)
        self.model.setParent(self)
        self.stats: TraceStats | None = None
        for c in (3, 6):  # host total, device total
            self.table.setItemDelegateForColumn(c, _RelativeDelegate(self.table))
        self.table.sortByColumn(3, Qt.DescendingOrder)
        self.by_shape = QCheckBox("Split by input shape")
        self.by_shape.setToolTip("One row per operator and input shape (Kineto's Input Dims, recorded with "
                                 "record_shapes=True)")
        self.by_shape.toggled.connect(self._split)
        self.layout_.itemAt(0).layout().insertWidget(3, self.by_shape)
        self._split(False)

    def set_stats(self, stats: TraceStats | None) -> None:
        self.stats = stats
        has_shapes = stats is not None and stats.ops_by_shape is not None
        self.by_shape.setEnabled(has_shapes)
        if not has_shapes and self.by_shape.isChecked():
            self.by_shape.setChecked(False)  # _split shows the new stats
        else:
            self.model.set_stats(stats)
        self.set_hosts(stats.hosts if stats is not None else [])

    def _split(self, on: bool) -> None:
        self.model.by_shape = on
        self.model.set_stats(self.stats)
        self.table.setColumnHidden(OpModel.SHAPE, not on)
        if on:  # shapes are long: as wide as they need, within reason
            self.table.resizeColumnToContents(OpModel.SHAPE)
            self.table.setColumnWidth(OpModel.SHAPE, min(self.table.columnWidth(OpModel.SHAPE), 360))


class _RelativeDelegate(ShareDelegate):
    """A bar relative to the column's largest value."""

    def paint(self, painter, option, index):
        model = index.model()
        largest = model.column_max[index.column()] if isinstance(model, StatsTableModel) else 0.0
        self.scale = largest if largest > 0 else 1.0
        super().paint(painter, option, index)


class OverviewPage(QWidget):
    """The hosts' table, their stacked bars, and the selected host's devices."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats: TraceStats | None = None
        self.model = OverviewModel(self)
        self.table = _table(self.model)
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
        self.device_table = _table(self.devices)
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
        _size_columns(self.table, self.model, stats.hosts if stats is not None else [])
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
        devices = props.get("deviceProperties") or []
        used = self.stats.devices_used.get(o.host, [])
        parts = [f"<b>{_escape(o.host or 'host')}</b>"]
        dist = props.get("distributedInfo")
        if isinstance(dist, dict) and "rank" in dist:
            parts.append(f"rank {dist['rank']} of {dist.get('world_size', '?')}"
                         + (f" ({_escape(dist['backend'])})" if dist.get("backend") else ""))
        if used:
            parts.append("GPU activity on device " + ", ".join(str(d) for d in used))
        if not devices:
            parts.append("the trace lists no GPU devices (a CPU-only capture?)")
        self.device_label.setText(" · ".join(parts))
        self.devices.set_devices(devices, used)


# ---------------------------------------------------------------- the view


class TraceStatsView(QWidget):
    """Overview / Kernels / Operators pages and the step range selector."""

    step_range_requested = Signal(object)  # None (whole capture) or (first, last) ProfilerStep numbers

    def __init__(self, parent=None):
        super().__init__(parent)
        self.stats: TraceStats | None = None
        self.first_box = QComboBox(minimumContentsLength=8)
        self.first_box.setToolTip("First ProfilerStep of the range (kernels count by when they were launched)")
        self.last_box = QComboBox(minimumContentsLength=6)
        self.last_box.setToolTip("Last ProfilerStep of the range")
        self.to_label = QLabel("to")
        self.range_label = QLabel()
        self.range_label.setSizePolicy(QSizePolicy.Ignored, QSizePolicy.Preferred)  # never widens the window
        self.message = QLabel(wordWrap=True)
        self.message.hide()
        follow(self, lambda scheme: self.message.setStyleSheet(f"color: {scheme.error().name()}; padding: 4px"))
        self.overview = OverviewPage()
        self.kernels = KernelsPage()
        self.operators = OperatorsPage()
        self.pages = QTabWidget()
        self.pages.setDocumentMode(True)
        for tool, page in zip(PAGES, (self.overview, self.kernels, self.operators)):
            self.pages.addTab(page, PAGE_TITLES[tool])

        self.range_controls = QWidget()  # disabled as a whole while the window is busy
        controls = QHBoxLayout(self.range_controls)
        controls.setContentsMargins(0, 0, 0, 0)
        controls.addWidget(QLabel("Steps:"))
        controls.addWidget(self.first_box)
        controls.addWidget(self.to_label)
        controls.addWidget(self.last_box)
        bar = QHBoxLayout()
        bar.setContentsMargins(4, 4, 4, 0)
        bar.addWidget(self.range_controls)
        bar.addSpacing(12)
        bar.addWidget(self.range_label, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.message)
        layout.addWidget(self.pages, 1)
        self.first_box.activated.connect(self._on_first)
        self.last_box.activated.connect(self._on_last)
        self.set_stats(None)

    # ---------------------------------------------------------- data

    def set_stats(self, stats: TraceStats | None) -> None:
        self.stats = stats
        self.message.hide()
        self.overview.set_stats(stats)
        self.kernels.set_stats(stats)
        self.operators.set_stats(stats)
        self._set_steps(stats)
        if stats is None:
            self.range_label.setText("No statistics: open a PyTorch profiler (Kineto) trace.")
            return
        k = stats.kernels
        scope = describe_range(stats.step_range)
        window = (f" ({format_time_ps(stats.window_ps[1] - stats.window_ps[0])})" if stats.window_ps else "")
        hosts = len(stats.overview)
        self.range_label.setText(
            f"Showing {scope}{window}: {len(k):,} kernels, {format_time_ps(float(k.total_ps.sum()))} of GPU "
            f"activity, {len(stats.ops):,} operators on {hosts} host{'s' if hosts != 1 else ''}.")

    def _set_steps(self, stats: TraceStats | None) -> None:
        numbers = [] if stats is None else [int(n) for n in np.unique(stats.step_numbers)]
        for box in (self.first_box, self.last_box):
            box.blockSignals(True)
            box.clear()
        self.first_box.addItem(ALL_STEPS, None)
        for n in numbers:
            self.first_box.addItem(str(n), n)
            self.last_box.addItem(str(n), n)
        chosen = stats.step_range if stats is not None else None
        if chosen is not None:
            self.first_box.setCurrentIndex(max(self.first_box.findData(chosen[0]), 0))
            self.last_box.setCurrentIndex(max(self.last_box.findData(chosen[1]), 0))
        else:
            self.first_box.setCurrentIndex(0)
            self.last_box.setCurrentIndex(self.last_box.count() - 1)
        for box in (self.first_box, self.last_box):
            box.blockSignals(False)
        self.first_box.setEnabled(bool(numbers))
        self.last_box.setEnabled(chosen is not None)
        self.first_box.setToolTip("First ProfilerStep of the range" if numbers else "This trace has no ProfilerSteps")

    def _on_first(self, _index: int) -> None:
        first = self.first_box.currentData()
        if first is None:
            self.last_box.setEnabled(False)
            self._request(None)
            return
        last = self.last_box.currentData()
        if last is None or last < first:
            self.last_box.setCurrentIndex(self.last_box.findData(first))
            last = first
        self.last_box.setEnabled(True)
        self._request((first, last))

    def _on_last(self, _index: int) -> None:
        first, last = self.first_box.currentData(), self.last_box.currentData()
        if first is None or last is None:
            return
        if last < first:
            self.first_box.setCurrentIndex(self.first_box.findData(last))
            first = last
        self._request((first, last))

    def set_busy(self, busy: bool) -> None:
        """While the window loads or computes, no other range can be asked for."""
        self.range_controls.setEnabled(not busy)

    def select_steps(self, step_range: tuple[int, int] | None) -> None:
        """Chooses a step range as the user would (emits step_range_requested)."""
        if step_range is None:
            self.first_box.setCurrentIndex(0)
            self._on_first(0)
            return
        self.first_box.setCurrentIndex(max(self.first_box.findData(step_range[0]), 0))
        self.last_box.setCurrentIndex(max(self.last_box.findData(step_range[1]), 0))
        self.last_box.setEnabled(True)
        self._request((self.first_box.currentData(), self.last_box.currentData()))

    def _request(self, step_range: tuple[int, int] | None) -> None:
        if self.stats is not None and step_range == self.stats.step_range:
            return
        self.range_label.setText(f"Computing the statistics of {describe_range(step_range)}…")
        self.step_range_requested.emit(step_range)

    # ---------------------------------------------------------- pages and messages

    def show_page(self, tool: str) -> None:
        """Shows the page of a tool (overview, kernel_stats, op_stats)."""
        if tool in PAGES:
            self.pages.setCurrentIndex(PAGES.index(tool))

    def current_page(self) -> str:
        return PAGES[self.pages.currentIndex()]

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))
        if self.stats is not None and text:
            self._still_showing()

    def _still_showing(self) -> None:
        """After a failed range request: the selector and label say what is still shown."""
        self._set_steps(self.stats)
        self.range_label.setText(f"Still showing {describe_range(self.stats.step_range)}.")
