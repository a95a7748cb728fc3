"""Parallel coordinates of the filtered groups: one vertical axis per
visible hparam or metric, one line per group coloured by a chosen metric.
Dragging along an axis brushes a range: `brushed(axis index, lo, hi)`
(None, None when cleared by a click)."""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QEvent, QLineF, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QToolTip, QWidget

from profscope.widgets.hparams.scales import Axis
from profscope.widgets.palette import Scheme

MARGIN_TOP, MARGIN_BOTTOM, MARGIN_SIDE = 48, 28, 60
TITLE_ROW = 18  # a row of axis titles; two rows when they do not fit side by side
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
        self.title_rects: list[QRectF] = []  # where each axis' title is drawn (hover shows its full name)
        self.title_texts: list[str] = []  # the titles as drawn (elided in the middle when too long)

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
        self._layout_titles(QFontMetrics(self.font()))
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
            p.drawText(self.title_rects[i], Qt.AlignCenter, self.title_texts[i])
            self._draw_ticks(p, scheme, i, axis)
        p.setPen(scheme.shade(0.65))
        footer = (f"{len(self.groups):,} groups; colour: {self.color_title or 'none'}; drag on an axis to filter, "
                  "click an axis to clear")
        p.drawText(QRectF(0, self.height() - 20, self.width(), 18), Qt.AlignCenter,
                   QFontMetrics(self.font()).elidedText(footer, Qt.ElideRight, self.width() - 8))

    def _layout_titles(self, metrics: QFontMetrics) -> None:
        """The axes' titles side by side when they fit between the axes, else
        in two staggered rows (twice the room each), elided in the middle
        when even that is too little (hovering one shows it whole)."""
        gap = (self.width() - 2 * MARGIN_SIDE) / max(len(self.axes) - 1, 1) if len(self.axes) > 1 else self.width()
        widths = [metrics.horizontalAdvance(a.title) for a in self.axes]
        rows = 1 if all(w <= gap - 8 for w in widths) else 2
        self.title_rects, self.title_texts = [], []
        for i, axis in enumerate(self.axes):
            x = self._x(i)
            room = int(min(rows * gap - 8, 2 * x - 4, 2 * (self.width() - x) - 4))
            text = metrics.elidedText(axis.title, Qt.ElideMiddle, max(room, 8))
            width = metrics.horizontalAdvance(text) + 2
            top = 4 + (i % rows) * TITLE_ROW
            self.title_rects.append(QRectF(x - width / 2, top, width, TITLE_ROW - 2))
            self.title_texts.append(text)

    def tick_rects(self, i: int, metrics: QFontMetrics) -> list[tuple[QRectF, str]]:
        """An axis' tick labels and where they go: right of the axis, a
        category's name within the room before the next axis (elided there;
        hovering it shows it whole; numbers are never cut), every n-th one so
        that they do not overlap each other."""
        axis = self.axes[i]
        x = self._x(i)
        right = self._x(i + 1) - 2 if i + 1 < len(self.axes) else self.width() - 2
        room = max(int(right - x - 4), 8) if axis.categorical else 1 << 20
        height = metrics.height()
        step = self._tick_step(i, height)
        out = []
        for t, text in self._ticks(i, step):
            shown = metrics.elidedText(text, Qt.ElideRight, room)
            width = metrics.horizontalAdvance(shown) + 2
            out.append((QRectF(x + 4, self._y(t) - height / 2, width, height), shown))
        return out

    def _tick_step(self, i: int, height: int) -> int:
        span = self._y(0) - self._y(1)
        return max(1, -(-len(self.axes[i].labels) * (height + 2) // max(int(span) + height, 1)))

    def _ticks(self, i: int, step: int | None = None) -> list[tuple[float, str]]:
        """The tick labels shown on axis i."""
        return self.axes[i].labels[:: step or self._tick_step(i, QFontMetrics(self.font()).height())]

    def _draw_ticks(self, p: QPainter, scheme: Scheme, i: int, axis) -> None:
        backing = QColor(scheme.base)
        backing.setAlpha(190)  # the label reads over the lines behind it
        p.setPen(scheme.shade(0.65))
        for rect, text in self.tick_rects(i, QFontMetrics(self.font())):
            p.fillRect(rect, backing)
            p.drawText(rect, Qt.AlignLeft | Qt.AlignVCenter, text)

    def tooltip_at(self, pos: QPointF) -> str:
        """The full text of an axis title, or of an elided category, under a point ("" elsewhere)."""
        for k, rect in enumerate(self.title_rects[: len(self.axes)]):
            if rect.adjusted(-2, -2, 2, 2).contains(pos):
                return self.axes[k].title
        metrics = QFontMetrics(self.font())
        for k in range(len(self.axes)):
            for (rect, shown), (_, text) in zip(self.tick_rects(k, metrics), self._ticks(k)):
                if rect.contains(pos) and shown != text:
                    return text
        return ""

    def event(self, event) -> bool:
        if event.type() == QEvent.ToolTip:
            text = self.tooltip_at(QPointF(event.pos()))
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)

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
