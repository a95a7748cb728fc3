"""The Query tab's chart: when a result has a time or step column and
numeric columns, one line per numeric column over it (split by the text
columns that vary, such as host or allocator). `chart_data` picks the
columns and sorts the points (numpy and Arrow only: the query's worker runs
it); `QueryChart` draws them with pyqtgraph, downsampled to the pixels."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from profscope.models.sql.database import is_number
from profscope.widgets.palette import Scheme, follow, style_plot

# The x axis: the first of these the result has (times before steps and snapshots).
X_COLUMNS = ("start_ns", "time_ns", "alloc_time_ns", "wall_time", "time", "timestamp", "ts", "step", "snapshot",
             "seq", "epoch", "iteration")
SECONDS = ("wall_time", "time", "timestamp")  # x columns in seconds (relative to the first)
# Numbers that are positions or ids, not values to draw.
NOT_VALUES = set(X_COLUMNS) | {"id", "lane", "depth", "parent", "from_id", "to_id", "freed_snapshot", "free_step",
                               "address", "free_time_ns"}
MAX_SERIES = 12
LABEL_CHARS = 40  # longer legend labels are cut
COLORS = ("#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#6d4c41", "#d81b60", "#3949ab",
          "#7cb342", "#546e7a", "#fdd835")


@dataclass
class ChartData:
    x_name: str
    x_units: str  # "s" when x is a time from the first point, else ""
    x_origin: object  # the first x value (times are drawn from it)
    x_integers: bool = False  # x is whole numbers (steps): ticks only at whole numbers
    groups: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)  # label, rows, x (sorted by x)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # numeric column -> its value in every row
    note: str = ""


def chart_data(table: pa.Table) -> ChartData | None:
    """What to draw for a result, or None when it has no x column or no values."""
    names = table.column_names
    x_name = next((n for n in X_COLUMNS if n in names and is_number(table.column(n).type)), None)
    if x_name is None or not table.num_rows:
        return None
    values = [n for n in names if n not in NOT_VALUES and is_number(table.column(n).type)]
    if not values:
        return None
    xs = table.column(x_name)
    origin = pc.min(xs).as_py()
    relative = x_name.endswith("_ns") or x_name in SECONDS
    x = _floats(pc.subtract(xs.cast(pa.float64()) if pa.types.is_decimal(xs.type) else xs, origin)
                if relative and origin is not None else xs)
    if x_name.endswith("_ns"):
        x = x / 1e9
    keys, labels, note = _split(table, x, [n for n in names if _is_text(table.column(n).type)])
    chart = ChartData(x_name, "s" if relative else "", origin, pa.types.is_integer(xs.type) and not relative,
                      note=note, values={n: _floats(table.column(n)) for n in values})
    for k, label in enumerate(labels):
        rows = np.flatnonzero(keys == k) if len(labels) > 1 else np.arange(len(x))
        rows = rows[np.argsort(x[rows], kind="stable")]
        chart.groups.append((label, rows, x[rows]))
    return chart


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t)


def _floats(values) -> np.ndarray:
    """A numeric column as float64, NULL as NaN."""
    return np.asarray(values.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _split(table: pa.Table, x: np.ndarray, texts: list[str]) -> tuple[np.ndarray, list[str], str]:
    """A line per value of the text columns with a few values (host,
    allocator: as many as make at most MAX_SERIES lines together); without
    such columns, per value of the first text column that tells rows of one
    x apart (session, kernel name). Returns each row's line (-1 beyond
    MAX_SERIES lines), the lines' labels in order of first appearance, and
    what they are of."""
    varying = []
    for name in texts:
        encoded = pc.dictionary_encode(table.column(name).cast(pa.string()), null_encoding="encode").combine_chunks()
        if (n := len(encoded.dictionary)) > 1:
            varying.append((name, encoded.indices.to_numpy(), n, encoded.dictionary))
    chosen, lines = [], 1
    for column in varying:
        if column[2] <= MAX_SERIES and lines * column[2] <= MAX_SERIES:
            chosen.append(column)
            lines *= column[2]
    if not chosen:
        x_codes, distinct = _codes(x)
        chosen = [c for c in varying if _codes(x_codes * c[2] + c[1])[1] > distinct][:1]
    if not chosen:
        return np.zeros(len(x), np.int64), [""], ""
    line = np.zeros(len(x), np.int64)
    for _, codes, n, _ in chosen:
        line = _codes(line * n + codes)[0]
    first = np.unique(line, return_index=True)[1]  # each line's first row
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), np.int64)
    rank[order] = np.arange(len(first))
    labels = [" / ".join(_text(c[3][c[1][first[k]]].as_py()) for c in chosen) for k in order[:MAX_SERIES]]
    note = " / ".join(c[0] for c in chosen)
    if len(first) > MAX_SERIES:
        note += f" (the first {MAX_SERIES} of {len(first):,})"
    keys = rank[line]
    return np.where(keys < MAX_SERIES, keys, -1), labels, note


def _text(value) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's index among the distinct values, and how many there are."""
    distinct, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1), len(distinct)


class _XAxis(pg.AxisItem):
    """The x axis; with `integers` set its ticks fall on whole numbers only
    (step 2, 3, 4, not 2.5)."""

    integers = False

    def tickValues(self, low, high, size):
        levels = super().tickValues(low, high, size)
        if not self.integers:
            return levels
        whole = [(spacing, [v for v in values if float(v).is_integer()]) for spacing, values in levels if spacing >= 1]
        if not whole and high - low < 100:  # a few steps across: every one of them
            whole = [(1.0, [float(v) for v in range(math.ceil(low), math.floor(high) + 1)])]
        return whole


class QueryChart(QWidget):
    """A line per group (text values) of the chosen numeric column over x."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data: ChartData | None = None
        self.value_box = QComboBox(minimumContentsLength=12)
        self.title = QLabel()
        self.x_axis = _XAxis("bottom")
        self.plot_widget = pg.PlotWidget(axisItems={"bottom": self.x_axis})
        self.plot = self.plot_widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.getAxis("left").enableAutoSIPrefix(False)  # values as they are, not "(x0.001)"
        self.legend = self.plot.addLegend(offset=(-10, 10))
        self.lines: list[pg.PlotDataItem] = []
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Chart of"))
        bar.addWidget(self.value_box)
        bar.addWidget(self.title, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.plot_widget, 1)
        self.value_box.currentTextChanged.connect(lambda _: self._draw(Scheme.of(self)))
        follow(self, self._apply_scheme)

    def set_data(self, data: ChartData | None) -> None:
        self.data = data
        self.value_box.blockSignals(True)
        self.value_box.clear()
        self.value_box.addItems(list(data.values) if data is not None else [])
        self.value_box.blockSignals(False)
        self._draw(Scheme.of(self))

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.plot_widget.setBackground(scheme.base)
        self.legend.setBrush(pg.mkBrush(scheme.shade(0.0, 210)))  # lines behind it stay readable
        self.legend.setPen(pg.mkPen(scheme.shade(0.27)))
        self.title.setStyleSheet(f"color: {scheme.secondary().name()}")
        self._draw(scheme)

    def _draw(self, scheme: Scheme) -> None:
        self.plot.clear()
        self.plot.legend.clear()
        self.lines = []
        data, value = self.data, self.value_box.currentText()
        if data is None or value not in data.values:
            self.title.setText("")
            return
        x_label = f"{data.x_name} from {data.x_origin:,}" if data.x_units else data.x_name
        self.plot.setLabel("bottom", x_label, units=data.x_units)
        self.x_axis.integers = data.x_integers
        self.plot.setLabel("left", value)
        y = data.values[value]
        for k, (label, rows, x) in enumerate(data.groups):
            color = scheme.data(COLORS[k % len(COLORS)])
            few = len(x) <= 200  # points marked; many points: thin lines (wide ones cost QPainter far more)
            line = self.plot.plot(name=label or None, pen=pg.mkPen(color, width=1.5 if few else 1),
                                  symbol="o" if few else None, symbolSize=5, symbolBrush=color, symbolPen=None)
            line.setDownsampling(auto=True, method="peak")  # before the data: the first frame draws pixels' peaks
            line.setClipToView(True)
            line.curve.setSegmentedLineMode("on")  # QPainter draws segments faster than one long path
            line.setData(x, y[rows])
            self.lines.append(line)
        self.legend.setVisible(bool(data.note))  # one unnamed line: no empty legend box
        self.title.setText(f"over {data.x_name}" + (f", a line per {data.note}" if data.note else ""))
        style_plot(self.plot, scheme)
        self.plot.enableAutoRange()
