"""Training curves of the selected sessions: one chart per metric, one line
per session over steps, relative time or wall time, smoothed as TensorBoard
smooths (its exponential moving average with debiasing; the raw line stays
faintly behind). Hovering a chart names the nearest point's session, step
and value. The panel is handed loaded curves; it reads no files."""

from __future__ import annotations

import datetime

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QScrollArea,
    QSlider,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from profscope.models.hparams.curves import Curve, smooth
from profscope.widgets.hparams.table import metric_label
from profscope.widgets.palette import Scheme, follow, style_plot
from profscope.widgets.plot_axes import StepAxis

LINE_COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
               "#bcbd22", "#17becf"]
X_AXES = (("Step", "step"), ("Relative time", "relative"), ("Wall time", "wall"))
DEFAULT_SMOOTHING = 0.6  # TensorBoard's default
MAX_SMOOTHING = 0.999  # TensorBoard's slider stops there (1 would flatten every line to 0)
HOVER_PX = 12  # how near the pointer must be to a point to name it


def session_color(index: int) -> str:
    return LINE_COLORS[index % len(LINE_COLORS)]


def duration_text(seconds: float, spacing: float) -> str:
    """A tick of relative time in the unit its spacing calls for."""
    for unit, size in (("h", 3600.0), ("min", 60.0)):
        if spacing >= size / 4 or abs(seconds) >= size * 10:
            return f"{seconds / size:.4g} {unit}"
    return f"{seconds:.4g} s"


class DurationAxis(pg.AxisItem):
    """Seconds since a run's first point, labelled in s, min or h."""

    def tickStrings(self, values, scale, spacing):
        return [duration_text(v, spacing) for v in values]


MIN_CHART = (340, 170)  # a chart's least room (px): its title, ticks and a plot area to read lines in


class CurvesPanel(QWidget):
    def __init__(self, parent=None):
        super().__init__(parent)
        self.curves: list[Curve] = []
        self.metrics: list[tuple[str, str]] = []
        self.colors: dict[str, str] = {}  # session -> line colour
        self.x_box = QComboBox()
        for name, key in X_AXES:
            self.x_box.addItem(name, key)
        self.smoothing = QSlider(Qt.Horizontal, minimum=0, maximum=round(MAX_SMOOTHING * 1000),
                                 value=round(DEFAULT_SMOOTHING * 1000))
        self.smoothing.setToolTip("TensorBoard's smoothing: an exponential moving average with debiasing")
        self.smoothing_label = QLabel()
        self.message = QLabel("Select groups or sessions to see their training curves.", wordWrap=True)
        self.charts = pg.GraphicsLayoutWidget()
        # Charts as many to a row as fit at MIN_CHART; what does not fit scrolls (never squashed or cut).
        self.scroll = QScrollArea(widgetResizable=True, frameShape=QFrame.NoFrame)
        self.scroll.setWidget(self.charts)
        row = QHBoxLayout()
        row.addWidget(QLabel("X axis:"))
        row.addWidget(self.x_box)
        row.addSpacing(12)
        row.addWidget(QLabel("Smoothing:"))
        row.addWidget(self.smoothing, 1)
        row.addWidget(self.smoothing_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.message)
        layout.addWidget(self.scroll, 1)
        self._plots: dict[tuple[str, str], pg.PlotItem] = {}
        self._plots_key = None
        self._lines: list[tuple[Curve, pg.PlotDataItem, pg.PlotDataItem]] = []  # curve, raw line, smoothed line
        self.empty_notes: dict[tuple[str, str], pg.TextItem] = {}  # metric -> the sentence in its empty chart
        self.x_box.currentIndexChanged.connect(self._draw)
        self.smoothing.valueChanged.connect(self._smooth)
        self.charts.scene().sigMouseMoved.connect(self._hover)
        self._show_weight()
        follow(self, self._apply_scheme)

    def _apply_scheme(self, scheme: Scheme) -> None:
        self.charts.setBackground(scheme.base)
        self._draw()  # the charts rebuilt (their key holds the scheme's): axes and lines take the new colours

    def weight(self) -> float:
        return self.smoothing.value() / 1000

    def set_weight(self, weight: float) -> None:
        self.smoothing.setValue(round(weight * 1000))

    def x_axis(self) -> str:
        return self.x_box.currentData()

    def show_message(self, text: str) -> None:
        self.message.setText(text)
        self.message.setVisible(bool(text))

    def set_curves(self, curves: list[Curve], metrics: list[tuple[str, str]], sessions: list[str]) -> None:
        """Curves of these sessions (their colours in this order) and metrics (one chart each)."""
        self.curves, self.metrics = curves, metrics
        self.colors = {s: session_color(i) for i, s in enumerate(sessions)}
        self.show_message(
            "" if curves or not sessions else "The selected sessions have no scalar data for the metrics."
        )
        self._draw()

    # ------------------------------------------------------------ drawing

    def x_values(self, curve: Curve) -> np.ndarray:
        mode = self.x_axis()
        if mode == "relative":
            return curve.wall_time - curve.wall_time[0]
        if mode == "wall":
            return curve.wall_time
        return curve.step.astype(np.float64)

    def _build_plots(self, scheme: Scheme) -> None:
        """One chart per metric (rebuilt only when the metrics, the kind of
        x axis or the palette change: a chart costs tens of milliseconds)."""
        self.charts.clear()
        self._plots = {}
        per_row = self._per_row()
        self.charts.setMinimumHeight(-(-len(self.metrics) // per_row) * MIN_CHART[1])
        mode = self.x_axis()
        for i, metric in enumerate(self.metrics):
            axes = (
                {"bottom": pg.DateAxisItem()}
                if mode == "wall"
                else ({"bottom": DurationAxis("bottom")} if mode == "relative" else {"bottom": StepAxis("bottom")})
            )
            plot = self.charts.addPlot(row=i // per_row, col=i % per_row, title=metric_label(*metric), axisItems=axes)
            plot.showGrid(x=True, y=True, alpha=0.3)
            plot.setLabel("bottom", {"step": "step", "relative": "time since the run's first point"}.get(mode, ""))
            self._plots[metric] = plot
        for plot in self._plots.values():
            style_plot(plot, scheme)
        # A chart narrower than its title and axes would be cut: the panel scrolls sideways instead.
        self.charts.setMinimumWidth(round(self.charts.ci.effectiveSizeHint(Qt.MinimumSize).width()))

    def _per_row(self) -> int:
        """Charts in a row: 2 (3 for more than 4 metrics), fewer where they would be narrower than MIN_CHART."""
        width = self.scroll.width() - self.scroll.verticalScrollBar().sizeHint().width()  # room beside a scroll bar
        return max(1, min(3 if len(self.metrics) > 4 else 2, width // MIN_CHART[0]))

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._plots_key is not None and self._plots_key[-1] != self._per_row():
            self._draw()

    def _draw(self) -> None:
        scheme = Scheme.of(self)
        key = (tuple(self.metrics), self.x_axis(), scheme.key, self._per_row())
        if key != self._plots_key:
            self._build_plots(scheme)
            self._plots_key = key
        for plot in self._plots.values():
            plot.clear()
        self._lines = []
        weight = self.weight()
        for curve in self.curves:
            plot = self._plots.get((curve.group, curve.tag))
            if plot is None:
                continue
            x = self.x_values(curve)
            raw = plot.plot(x, curve.value, symbol="o" if len(curve) < 30 else None, symbolSize=5)
            line = plot.plot(x, smooth(curve.value, weight))
            for item in (raw, line):  # long series: per pixel column the min..max only
                item.setDownsampling(auto=True, method="peak")
                item.setClipToView(True)
            self._lines.append((curve, raw, line))
            self._style(curve, raw, line, scheme, weight)
        drawn = {(curve.group, curve.tag) for curve, _, _ in self._lines if len(curve)}
        self.empty_notes = {}
        for metric, plot in self._plots.items():  # styled when built: clear() keeps axes and title
            for side in ("left", "bottom"):  # an empty chart has no values to tick
                plot.getAxis(side).setStyle(showValues=metric in drawn or not self.colors)
            if metric in drawn or not self.colors:
                plot.enableAutoRange()
                continue
            note = pg.TextItem(f"no values of {metric_label(*metric)} for the selected sessions",
                               color=scheme.secondary(), anchor=(0.5, 0.5))
            note.setTextWidth(max(plot.getViewBox().width() - 8, 120))  # wrapped to the chart
            plot.addItem(note, ignoreBounds=True)
            note.setPos(0.5, 0.5)
            plot.setRange(xRange=(0, 1), yRange=(0, 1), padding=0)
            self.empty_notes[metric] = note

    def _style(self, curve: Curve, raw, line, scheme: Scheme, weight: float) -> None:
        """The session's colour: the smoothed line solid, the raw one faint behind it."""
        color = scheme.data(self.colors.get(curve.session, LINE_COLORS[0]))
        shown = QColor(color)
        if weight > 0:
            shown.setAlpha(70)
        raw.setPen(pg.mkPen(shown, width=1.5 if weight else 2))
        raw.setSymbolBrush(shown)
        raw.setSymbolPen(pg.mkPen(None))
        line.setPen(pg.mkPen(color, width=2))
        line.setVisible(weight > 0)

    def _smooth(self) -> None:
        """A new weight only recomputes the smoothed lines."""
        self._show_weight()
        weight = self.weight()
        scheme = Scheme.of(self)
        for curve, raw, line in self._lines:
            line.setData(self.x_values(curve), smooth(curve.value, weight))
            self._style(curve, raw, line, scheme, weight)

    def _show_weight(self) -> None:
        self.smoothing_label.setText(f"{self.weight():.3f}")

    # ------------------------------------------------------------ hover

    def nearest(self, plot: pg.PlotItem, scene_pos: QPointF) -> tuple[Curve, int] | None:
        """The curve point of a chart nearest the pointer (in pixels)."""
        vb = plot.getViewBox()
        point = vb.mapSceneToView(scene_pos)
        px, py = vb.viewPixelSize()
        best = None
        for curve, _raw, _line in self._lines:
            if self._plots.get((curve.group, curve.tag)) is not plot or not len(curve):
                continue
            d = ((self.x_values(curve) - point.x()) / px) ** 2 + ((curve.value - point.y()) / py) ** 2
            d[~np.isfinite(d)] = np.inf
            i = int(np.argmin(d))
            if d[i] <= HOVER_PX**2 and (best is None or d[i] < best[0]):
                best = (d[i], curve, i)
        return None if best is None else (best[1], best[2])

    def describe(self, curve: Curve, i: int) -> str:
        smoothed = smooth(curve.value, self.weight())[i]
        when = datetime.datetime.fromtimestamp(curve.wall_time[i]).strftime("%Y-%m-%d %H:%M:%S")
        return (
            f"{curve.session}\n{metric_label(curve.group, curve.tag)}\nstep {int(curve.step[i]):,}\n"
            f"value {curve.value[i]:.6g}\nsmoothed {smoothed:.6g}\n"
            f"{duration_text(curve.wall_time[i] - curve.wall_time[0], 1.0)} since its first point, {when}"
        )

    def _hover(self, scene_pos: QPointF) -> None:
        plot = next((p for p in self._plots.values() if p.sceneBoundingRect().contains(scene_pos)), None)
        hit = self.nearest(plot, scene_pos) if plot is not None else None
        if hit is None:
            QToolTip.hideText()
            return
        view_pos = self.charts.mapFromScene(scene_pos)
        QToolTip.showText(self.charts.mapToGlobal(view_pos), self.describe(*hit), self.charts)
