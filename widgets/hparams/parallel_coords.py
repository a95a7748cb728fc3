"""Parallel coordinates of the filtered groups: one vertical axis per
visible hparam or metric, one line per group coloured by a chosen metric.
Dragging along an axis brushes a range: `brushed(axis index, lo, hi)`
(None, None when cleared by a click)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QLineF, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QWidget

from profscope.widgets.hparams.scales import Axis
from profscope.widgets.palette import Scheme

MARGIN_TOP, MARGIN_BOTTOM, MARGIN_SIDE = 42, 28, 60
# viridis at 8 points: low values dark purple, high ones yellow.
VIRIDIS = np.array([[68, 1, 84], [70, 50, 127], [54, 92, 141], [39, 127, 142], [31, 161, 135],
                    [74, 194, 109], [159, 218, 58], [253, 231, 37]], np.float64)


def colormap(t: np.ndarray) -> np.ndarray:
    """RGB rows for values in [0, 1] (NaN: grey)."""
    x = np.clip(np.nan_to_num(t, nan=0.0), 0, 1) * (len(VIRIDIS) - 1)
    i = np.minimum(x.astype(int), len(VIRIDIS) - 2)
    f = (x - i)[:, None]
    rgb = VIRIDIS[i] * (1 - f) + VIRIDIS[i + 1] * f
    rgb[np.isnan(t)] = (170, 170, 170)
    return rgb.astype(np.uint8)


class ParallelCoordinates(QWidget):
    brushed = Signal(int, object, object)
    group_clicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumHeight(220)
        self.axes: list[Axis] = []
        self.groups = np.zeros(0, np.int64)
        self.colors = np.zeros((0, 3), np.uint8)
        self.color_title = ""
        self.brushes: dict[int, tuple[float, float]] = {}  # axis -> (t0, t1) in [0, 1]
        self._drag: tuple[int, float] | None = None
        self.highlight: int | None = None
        self._lines: QImage | None = None  # the groups' lines, redrawn when the data, size or palette change
        self._lines_key = None

    def set_data(self, axes: list[Axis], groups: np.ndarray, color_values: np.ndarray | None, color_title: str) -> None:
        self.axes, self.groups, self.color_title = axes, groups, color_title
        if color_values is not None and np.isfinite(color_values).any():
            finite = color_values[np.isfinite(color_values)]
            lo, hi = finite.min(), finite.max()
            self.colors = colormap((color_values - lo) / ((hi - lo) or 1.0))
        else:
            self.colors = np.tile(np.array([[33, 150, 243]], np.uint8), (len(groups), 1))
        self.brushes = {i: b for i, b in self.brushes.items() if i < len(axes)}
        self._lines = None
        self.update()

    # ------------------------------------------------------------ geometry

    def _x(self, i: int) -> float:
        n = max(len(self.axes) - 1, 1)
        return MARGIN_SIDE + i * (self.width() - 2 * MARGIN_SIDE) / n

    def _y(self, t) -> float:
        return self.height() - MARGIN_BOTTOM - t * (self.height() - MARGIN_TOP - MARGIN_BOTTOM)

    def _t(self, y: float) -> float:
        return float(np.clip((self.height() - MARGIN_BOTTOM - y) / (self.height() - MARGIN_TOP - MARGIN_BOTTOM), 0, 1))

    def _axis_at(self, x: float) -> int | None:
        for i in range(len(self.axes)):
            if abs(self._x(i) - x) < 14:
                return i
        return None

    # ------------------------------------------------------------ painting

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        scheme = Scheme.of(self)
        p.fillRect(self.rect(), scheme.base)
        p.setPen(scheme.text)
        if not self.axes or not len(self.groups):
            p.drawText(self.rect(), Qt.AlignCenter, "No groups to show")
            return
        xs = [self._x(i) for i in range(len(self.axes))]
        ys = np.stack([self._y(a.pos) for a in self.axes], axis=1)  # groups x axes, NaN for missing
        if self._lines is None or self._lines.size() != self.size() or self._lines_key != scheme.key:
            self._lines, self._lines_key = self._draw_lines(xs, ys, scheme), scheme.key
        p.drawImage(0, 0, self._lines)
        p.setRenderHint(QPainter.Antialiasing)
        hits = np.flatnonzero(self.groups == self.highlight) if self.highlight is not None else []
        if len(hits):
            p.setPen(QPen(scheme.data(QColor(229, 57, 53)), 3))
            p.drawPolyline(QPolygonF([QPointF(x, y) for x, y in zip(xs, ys[int(hits[0])]) if y == y]))
        for i, axis in enumerate(self.axes):
            x = xs[i]
            p.setPen(QPen(scheme.shade(0.76), 1))
            p.drawLine(QPointF(x, self._y(0)), QPointF(x, self._y(1)))
            if i in self.brushes:
                t0, t1 = self.brushes[i]
                p.fillRect(QRectF(x - 6, self._y(t1), 12, self._y(t0) - self._y(t1)), QColor(255, 160, 0, 110))
            p.setPen(scheme.shade(0.92))
            p.drawText(QRectF(x - 70, 4, 140, 16), Qt.AlignCenter, axis.title)
            p.setPen(scheme.shade(0.65))
            step = max(1, len(axis.labels) // 12)
            for t, text in axis.labels[::step]:
                p.drawText(QRectF(x + 4, self._y(t) - 8, 120, 16), Qt.AlignLeft | Qt.AlignVCenter, text[:18])
        p.setPen(scheme.shade(0.65))
        p.drawText(QRectF(0, self.height() - 20, self.width(), 18), Qt.AlignCenter,
                   f"{len(self.groups):,} groups; colour: {self.color_title or 'none'}; drag on an axis to filter, "
                   "click an axis to clear")

    def _draw_lines(self, xs: list[float], ys: np.ndarray, scheme: Scheme) -> QImage:
        """Every group's line, without antialiasing, one drawLines call per
        binned colour: thousands of groups in a fraction of a second."""
        image = QImage(self.size(), QImage.Format_ARGB32_Premultiplied)
        image.fill(Qt.transparent)
        lp = QPainter(image)
        alpha = 200 if len(self.groups) < 300 else 90
        levels = (self.colors.astype(np.int64) // 8) * 8
        keys = levels[:, 0] * 65536 + levels[:, 1] * 256 + levels[:, 2]
        x0, x1 = np.array(xs[:-1]), np.array(xs[1:])
        for key in np.unique(keys).tolist():
            rows = ys[keys == key]
            y0, y1 = rows[:, :-1], rows[:, 1:]
            ok = ~(np.isnan(y0) | np.isnan(y1))
            segments = np.stack(
                [np.broadcast_to(x0, y0.shape)[ok], y0[ok], np.broadcast_to(x1, y1.shape)[ok], y1[ok]], 1
            )
            color = scheme.data(QColor(key >> 16, (key >> 8) & 255, key & 255))  # viridis' dark end, lighter on dark
            color.setAlpha(alpha)
            lp.setPen(QPen(color, 1))
            lp.drawLines([QLineF(*seg) for seg in segments.tolist()])
        lp.end()
        return image

    # ------------------------------------------------------------ brushing

    def mousePressEvent(self, event) -> None:
        axis = self._axis_at(event.position().x())
        if axis is not None:
            self._drag = (axis, self._t(event.position().y()))

    def mouseMoveEvent(self, event) -> None:
        if self._drag is not None:
            axis, t0 = self._drag
            t1 = self._t(event.position().y())
            self.brushes[axis] = (min(t0, t1), max(t0, t1))
            self.update()

    def mouseReleaseEvent(self, event) -> None:
        if self._drag is None:
            return
        axis, t0 = self._drag
        self._drag = None
        t1 = self._t(event.position().y())
        if abs(t1 - t0) < 0.01:  # a click clears the axis' brush
            self.brushes.pop(axis, None)
            self.brushed.emit(axis, None, None)
        else:
            lo, hi = min(t0, t1), max(t0, t1)
            self.brushes[axis] = (lo, hi)
            self.brushed.emit(axis, lo, hi)
        self.update()
