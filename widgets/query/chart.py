"""The Query tab's chart: when a result has a time or step column and
numeric columns, one line per numeric column over it (split by the text
columns that vary, such as host or allocator). The query's worker picks the
columns and sorts the points (profscope.models.sql.result_chart);
`QueryChart` draws them with pyqtgraph, downsampled to the pixels."""

from __future__ import annotations

import math

import pyqtgraph as pg
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from profscope.models.sql.result_chart import ChartData
from profscope.widgets.palette import Scheme, follow, style_plot

COLORS = ("#1e88e5", "#e53935", "#43a047", "#fb8c00", "#8e24aa", "#00897b", "#6d4c41", "#d81b60", "#3949ab",
          "#7cb342", "#546e7a", "#fdd835")


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
