"""The Query tab's chart: when a result has a time or step column and
numeric columns, one line per numeric column over it (split by the text
columns that vary, such as host or allocator). The query's worker picks the
columns and sorts the points (profscope.models.sql.result_chart);
`QueryChart` draws them with pyqtgraph, downsampled to the pixels."""

from __future__ import annotations

import math
import re

import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from profscope.models.core.units import byte_unit
from profscope.models.sql.result_chart import ChartData
from profscope.widgets.palette import Scheme, follow, style_plot
from profscope.widgets.plot_axes import whole_number_ticks

COLORS = ("#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#6d4c41", "#d81b60", "#3949ab",
          "#7cb342", "#546e7a", "#fdd835")


BYTE_COLUMN = re.compile(r"bytes|(^|_)size$|memory_limit", re.IGNORECASE)  # drawn in KiB, MiB, GiB
TIME_UNITS = ((3600.0, "h"), (60.0, "min"), (1.0, "s"), (1e-3, "ms"), (1e-6, "µs"), (1e-9, "ns"))
TICK_PX = {"bottom": 90, "left": 40}  # about one tick per this many pixels


def nice_step(raw: float, sexagesimal: bool = False) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least raw
    (15, 30 or 60 beyond 10 for seconds and minutes)."""
    if sexagesimal and 10 < raw <= 60:
        return next(m for m in (15.0, 30.0, 60.0) if m >= raw)
    magnitude = 10.0 ** math.floor(math.log10(raw))
    return next((m * magnitude for m in (1, 2, 5) if m * magnitude >= raw * (1 - 1e-9)), 10 * magnitude)


class _Axis(pg.AxisItem):
    """A chart axis whose tick labels equal their ticks' values: times (in
    `seconds` per data unit) in one round unit (ns ... h), bytes in one
    binary unit (KiB, MiB, GiB), each at round steps of it and named in the
    title; with `integers` set ticks fall on whole numbers only (step 2, 3,
    4, not 2.5); other numbers as pyqtgraph ticks them."""

    integers = False
    kind = ""  # "time", "bytes" or "" (plain numbers)
    seconds = 1.0  # a data unit in seconds, for times
    title = ""

    def __init__(self, orientation):
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)
        self.unit: tuple[float, str] = (1.0, "")

    def set_kind(self, title: str, kind: str = "", seconds: float = 1.0, integers: bool = False) -> None:
        self.title, self.kind, self.seconds, self.integers = title, kind, seconds, integers
        self.unit = (1.0, "")
        self.setLabel(title)

    def _unit_for(self, span: float, top: float) -> tuple[float, str]:
        if self.kind == "bytes":
            return byte_unit(top)
        seconds = span * self.seconds
        size, name = next(((u, n) for u, n in TIME_UNITS if seconds >= 2 * u), TIME_UNITS[-1])
        return size / self.seconds, name

    def tickValues(self, low, high, size):
        if not self.kind:
            return self._whole(super().tickValues(low, high, size), low, high)
        if not high > low or not math.isfinite(high - low):
            return []
        unit = self._unit_for(high - low, max(abs(low), abs(high)))
        if unit != self.unit:
            self.unit = unit
            self.setLabel(f"{self.title} ({unit[1]})")
        count = max(size / TICK_PX.get(self.orientation, 60), 1.5)
        step = nice_step((high - low) / unit[0] / count, self.kind == "time" and unit[1] in ("s", "min")) * unit[0]
        first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
        return [(step, [k * step for k in range(first, last + 1)])]

    def tickStrings(self, values, scale, spacing):
        if not self.kind:
            return super().tickStrings(values, scale, spacing)
        size = self.unit[0]
        digits = max(0, math.ceil(-math.log10(spacing / size) - 1e-9)) if spacing > 0 else 0
        return [f"{v / size:.{digits}f}" for v in values]

    def _whole(self, levels, low, high):
        return whole_number_ticks(levels, low, high) if self.integers else levels


class QueryChart(QWidget):
    """A line per group (text values) of the chosen numeric column over x."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.data: ChartData | None = None
        self.value_box = QComboBox(minimumContentsLength=12)
        self.title = QLabel()
        self.x_axis, self.y_axis = _Axis("bottom"), _Axis("left")  # values as they are, not "(x0.001)"
        self.plot_widget = pg.PlotWidget(axisItems={"bottom": self.x_axis, "left": self.y_axis})
        self.plot = self.plot_widget.getPlotItem()
        self.plot.showGrid(x=True, y=True, alpha=0.2)
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
        self.x_axis.set_kind(x_label, "time" if data.x_units == "s" else "", integers=data.x_integers)
        y_kind = "bytes" if BYTE_COLUMN.search(value) else "time" if value.endswith("_ns") else ""
        self.y_axis.set_kind(value, y_kind, seconds=1e-9)
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
