"""The scatter plot matrix of the filtered groups: one cell per (column,
metric) pair, hparams or metrics across, metrics down, each group a point
coloured by the colour metric.

Each cell's points come from the axes' numpy positions; all cells are
stamped into one cached image (a disc per point written straight into the
pixel buffer, later points over earlier ones), so a repaint only draws that
image and the hover, selection and brush on top. Hovering names the group
(`describe`), a click on a point emits `group_clicked(group)`, and a
rectangle dragged in a cell emits `brushed(column, row, (x0, x1), (y0, y1))`
in axis positions ((None, None) when a click clears it)."""

from __future__ import annotations

import re

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFontMetrics, QImage, QPainter, QPen
from PySide6.QtWidgets import QToolTip, QWidget

from profscope.widgets.hparams.parallel_coords import colormap
from profscope.widgets.hparams.scales import Axis
from profscope.widgets.palette import Scheme, argb

LEFT, RIGHT, TOP, BOTTOM = 64, 12, 10, 58  # room for tick labels (left of the rows' titles) and titles
TITLE_MIN, TITLE_MAX = 110, 150  # the rows' titles column (a sixth of the widget at most)
GAP, PAD = 10, 6  # between cells; inside a cell's frame, so discs are never cut
RADIUS = 2  # a point's disc, plus a one-pixel rim
HIT = 7  # how near (px) the pointer must be to a point to name it
PLAIN = "#1e88e5"  # points without a colour metric
MISSING_COLOR = "#aaaaaa"
SELECTED = QColor(229, 57, 53)


def wrap_title(text: str, metrics: QFontMetrics, width: int, height: float) -> str:
    """A title in lines broken after its / and _ (as many as fit the height,
    none wider than the width), else one line elided in the middle."""
    lines: list[str] = []
    for part in re.findall(r"[^/_]+[/_]?|[/_]", text):
        if lines and metrics.horizontalAdvance(lines[-1] + part) <= width:
            lines[-1] += part
        else:
            lines.append(part)
    if len(lines) * metrics.height() <= height and all(metrics.horizontalAdvance(line) <= width for line in lines):
        return "\n".join(lines)
    return metrics.elidedText(text, Qt.ElideMiddle, width)


def _disc(radius: int) -> tuple[np.ndarray, np.ndarray]:
    r = np.arange(-radius, radius + 1)
    dy, dx = np.meshgrid(r, r, indexing="ij")
    inside = dx * dx + dy * dy <= radius * radius + radius  # a round disc at small sizes
    return dy[inside], dx[inside]


CORE, RIM = _disc(RADIUS), _disc(RADIUS + 1)


def stamp(pixels: np.ndarray, xs: np.ndarray, ys: np.ndarray, colors: np.ndarray, disc) -> None:
    """Writes a disc of each point's colour into a uint32 image, in point
    order (one fancy assignment: where discs overlap the later point wins)."""
    h, w = pixels.shape
    dy, dx = disc
    r = int(dx.max())
    if w <= 2 * r or h <= 2 * r:
        return
    # Centres kept a radius inside the image, so no pixel of a disc falls outside.
    x = np.clip(np.rint(xs).astype(np.int64), r, w - 1 - r)
    y = np.clip(np.rint(ys).astype(np.int64), r, h - 1 - r)
    index = (y * w + x)[:, None] + (dy * w + dx)[None, :]
    pixels.reshape(-1)[index.reshape(-1)] = np.repeat(colors, len(dx))


class ScatterMatrix(QWidget):
    brushed = Signal(int, int, object, object)
    group_clicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMinimumHeight(240)
        self.setMouseTracking(True)
        self.columns: list[Axis] = []  # across (hparams or metrics)
        self.rows: list[Axis] = []  # down (metrics)
        self.groups = np.zeros(0, np.int64)
        self.color_t = np.zeros(0)  # each group's colour metric in [0, 1], NaN when missing
        self.color_title = ""
        self.highlight: set[int] = set()  # groups selected in the table
        self.brush: tuple[int, int, tuple[float, float], tuple[float, float]] | None = None
        self.describe = lambda group: str(group)  # the hover text of a group (the view sets it)
        self._image: QImage | None = None
        self._pixels: np.ndarray | None = None
        self._image_key = None
        self._points: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}  # for hit tests
        self._widest_key, self._widest = None, 0  # title_width's measure and what it was measured for
        self._hover: tuple[int, int, int] | None = None  # (column, row, group)
        self._drag: tuple[int, int, QPointF, QPointF] | None = None
        self.titles: list[tuple[QRectF, str, str]] = []  # each title's rectangle, text as drawn, full text

    def set_data(self, columns: list[Axis], rows: list[Axis], groups: np.ndarray, color_values: np.ndarray | None,
                 color_title: str) -> None:
        titles = ([a.title for a in columns], [a.title for a in rows])
        if self.brush is not None and titles != ([a.title for a in self.columns], [a.title for a in self.rows]):
            self.brush = None  # the cells moved: the rectangle no longer means what it meant
        self.columns, self.rows, self.groups, self.color_title = columns, rows, groups, color_title
        self.color_t = np.full(len(groups), np.nan)
        if color_values is not None and np.isfinite(color_values).any():
            finite = color_values[np.isfinite(color_values)]
            lo, hi = finite.min(), finite.max()
            self.color_t = (color_values - lo) / ((hi - lo) or 1.0)
        self.plain = color_values is None
        self._image = None
        self._hover = None
        self.update()

    def clear_brush(self) -> None:
        self.brush = None
        self.update()

    # ------------------------------------------------------------ geometry

    def title_width(self) -> int:
        """The rows' titles column: the widest piece of a title between its / and _ (so a title wraps
        into lines that fit), at most TITLE_MAX and a sixth of the widget."""
        # Asked for every cell's frame (each paint, each mouse move): the titles measured once per rows and font.
        key = (tuple(a.title for a in self.rows), self.font().key())
        if key != self._widest_key:
            metrics = self.fontMetrics()
            parts = [p for title in key[0] for p in re.findall(r"[^/_]+[/_]?|[/_]", title)]
            self._widest_key, self._widest = key, max((metrics.horizontalAdvance(p) for p in parts), default=0)
        return int(min(max(self._widest + 8, TITLE_MIN), TITLE_MAX, self.width() / 6))

    def cell_rect(self, column: int, row: int) -> QRectF:
        """A cell's frame."""
        nc, nr = max(len(self.columns), 1), max(len(self.rows), 1)
        left = self.title_width() + LEFT
        w = (self.width() - left - RIGHT - GAP * (nc - 1)) / nc
        h = (self.height() - TOP - BOTTOM - GAP * (nr - 1)) / nr
        return QRectF(left + column * (w + GAP), TOP + row * (h + GAP), w, h)

    def to_pixels(self, column: int, row: int, tx, ty) -> tuple[np.ndarray, np.ndarray]:
        """Pixel coordinates of axis positions in a cell."""
        r = self.cell_rect(column, row)
        x = r.left() + PAD + np.asarray(tx) * (r.width() - 2 * PAD)
        y = r.bottom() - PAD - np.asarray(ty) * (r.height() - 2 * PAD)
        return x, y

    def to_positions(self, column: int, row: int, point: QPointF) -> tuple[float, float]:
        r = self.cell_rect(column, row)
        tx = (point.x() - r.left() - PAD) / max(r.width() - 2 * PAD, 1)
        ty = (r.bottom() - PAD - point.y()) / max(r.height() - 2 * PAD, 1)
        return float(np.clip(tx, 0, 1)), float(np.clip(ty, 0, 1))

    def cell_at(self, point: QPointF) -> tuple[int, int] | None:
        for c in range(len(self.columns)):
            for r in range(len(self.rows)):
                if self.cell_rect(c, r).contains(point):
                    return c, r
        return None

    # ------------------------------------------------------------ painting

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        scheme = Scheme.of(self)
        if not self.columns or not self.rows or not len(self.groups):
            p.fillRect(self.rect(), scheme.base)
            p.setPen(scheme.text)
            text = "No groups to show" if self.columns and self.rows else "Choose metrics to plot (Scatter columns)"
            p.drawText(self.rect(), Qt.AlignCenter, text)
            return
        key = (self.width(), self.height(), scheme.key)
        if self._image is None or self._image_key != key:
            self._render(scheme)
            self._image_key = key
        p.drawImage(0, 0, self._image)
        p.setRenderHint(QPainter.Antialiasing)
        shown = set(self.groups.tolist())
        p.setPen(QPen(scheme.data(SELECTED), 2))
        p.setBrush(Qt.NoBrush)
        for g in self.highlight & shown:  # the table's selection, in every cell
            for xs, ys, gs in self._points.values():
                for i in np.flatnonzero(gs == g).tolist():
                    p.drawEllipse(QPointF(xs[i], ys[i]), RADIUS + 3, RADIUS + 3)
        if self._hover is not None:
            c, r, g = self._hover
            xs, ys, gs = self._points[(c, r)]
            i = int(np.flatnonzero(gs == g)[0])
            p.setPen(QPen(scheme.text, 2))
            p.drawEllipse(QPointF(xs[i], ys[i]), RADIUS + 4, RADIUS + 4)
        rect = self._brush_rect()
        if rect is not None:
            p.setPen(QPen(QColor(230, 140, 0), 1))
            p.setBrush(QColor(255, 160, 0, 60))
            p.drawRect(rect)

    def _brush_rect(self) -> QRectF | None:
        if self._drag is not None:
            c, r, a, b = self._drag
            return QRectF(a, b).normalized()
        if self.brush is not None:
            c, r, (x0, x1), (y0, y1) = self.brush
            xs, ys = self.to_pixels(c, r, [x0, x1], [y0, y1])
            return QRectF(QPointF(xs[0], ys[1]), QPointF(xs[1], ys[0]))
        return None

    def _render(self, scheme: Scheme) -> None:
        """Frames, grid, labels and every cell's points into one image."""
        w, h = self.width(), self.height()
        self._pixels = np.full((h, w), argb(scheme.base), np.uint32)
        self._image = QImage(self._pixels.data, w, h, w * 4, QImage.Format_ARGB32_Premultiplied)
        p = QPainter(self._image)
        self._draw_frames(p, scheme)
        p.end()
        self._draw_points(scheme)
        p = QPainter(self._image)
        self._draw_labels(p, scheme)
        p.end()

    def _draw_frames(self, p: QPainter, scheme: Scheme) -> None:
        grid, frame = QPen(scheme.shade(0.1), 1), QPen(scheme.shade(0.35), 1)
        for c, column in enumerate(self.columns):
            for r, row in enumerate(self.rows):
                rect = self.cell_rect(c, r)
                p.setPen(grid)
                xs, _ = self.to_pixels(c, r, [t for t, _ in column.labels], [])
                for x in np.atleast_1d(xs).tolist():
                    p.drawLine(QPointF(x, rect.top()), QPointF(x, rect.bottom()))
                _, ys = self.to_pixels(c, r, [], [t for t, _ in row.labels])
                for y in np.atleast_1d(ys).tolist():
                    p.drawLine(QPointF(rect.left(), y), QPointF(rect.right(), y))
                p.setPen(frame)
                p.drawRect(rect)

    def _colors(self, scheme: Scheme) -> np.ndarray:
        """Each group's colour as a pixel: viridis of the colour metric,
        in the palette's version of each hue."""
        if self.plain:
            return np.full(len(self.groups), argb(scheme.data(QColor(PLAIN))), np.uint32)
        lut = np.array([argb(scheme.data(QColor(*rgb))) for rgb in colormap(np.linspace(0, 1, 256)).tolist()],
                       np.uint32)
        out = lut[np.clip(np.nan_to_num(self.color_t) * 255, 0, 255).astype(np.int64)]
        out[np.isnan(self.color_t)] = argb(scheme.data(QColor(MISSING_COLOR)))
        return out

    def _draw_points(self, scheme: Scheme) -> None:
        colors = self._colors(scheme)[::-1]  # the table's first groups drawn last, on top
        groups = self.groups[::-1]
        rim = np.full(len(groups), argb(scheme.shade(0.55)), np.uint32)
        self._points = {}
        for c, column in enumerate(self.columns):
            for r, row in enumerate(self.rows):
                tx, ty = column.pos[::-1], row.pos[::-1]
                ok = ~(np.isnan(tx) | np.isnan(ty))
                xs, ys = self.to_pixels(c, r, tx[ok], ty[ok])
                stamp(self._pixels, xs, ys, rim[ok], RIM)
                stamp(self._pixels, xs, ys, colors[ok], CORE)
                self._points[(c, r)] = (xs, ys, groups[ok])

    def _draw_labels(self, p: QPainter, scheme: Scheme) -> None:
        metrics = QFontMetrics(p.font())
        label, title = scheme.shade(0.65), scheme.shade(0.92)
        last = len(self.rows) - 1
        self.titles = []
        for c, column in enumerate(self.columns):
            rect = self.cell_rect(c, last)
            p.setPen(label)
            for t, text in self._spaced(column.labels, rect.width(), metrics, horizontal=True):
                x, _ = self.to_pixels(c, last, t, 0.0)
                width = metrics.horizontalAdvance(text) + 2
                left = min(max(float(x) - width / 2, rect.left()), rect.right() - width)  # kept under its cell
                p.drawText(QRectF(left, rect.bottom() + 2, width, 16), Qt.AlignHCenter | Qt.AlignTop, text)
            p.setPen(title)
            text = metrics.elidedText(column.title, Qt.ElideMiddle, int(rect.width()))
            box = QRectF(rect.center().x() - metrics.horizontalAdvance(text) / 2 - 1, rect.bottom() + 18,
                         metrics.horizontalAdvance(text) + 2, 16)
            p.drawText(box, Qt.AlignCenter, text)
            self.titles.append((box, text, column.title))
        title_width = self.title_width()
        for r, row in enumerate(self.rows):
            rect = self.cell_rect(0, r)
            p.setPen(label)
            for t, text in self._spaced(row.labels, rect.height(), metrics, horizontal=False):
                _, y = self.to_pixels(0, r, 0.0, t)
                p.drawText(QRectF(title_width, float(y) - 8, LEFT - 4, 16), Qt.AlignRight | Qt.AlignVCenter,
                           metrics.elidedText(text, Qt.ElideRight, LEFT - 4))
            # The metric's name left of its row, wrapped at its / and _ or elided in the middle.
            text = wrap_title(row.title, metrics, title_width - 6, rect.height())
            lines = text.split("\n")
            width = max(metrics.horizontalAdvance(line) for line in lines) + 2
            box = QRectF(4, rect.center().y() - len(lines) * metrics.height() / 2, width, len(lines) * metrics.height())
            p.setPen(title)
            p.drawText(box, Qt.AlignLeft | Qt.AlignVCenter, text)
            self.titles.append((box, text, row.title))
        p.setPen(label)
        footer = (f"{len(self.groups):,} groups; colour: {self.color_title or 'none'}; drag a rectangle in a cell "
                  "to filter both columns, click a point to select its group, click the rectangle's cell to clear")
        p.drawText(QRectF(0, self.height() - 20, self.width(), 18), Qt.AlignCenter,
                   metrics.elidedText(footer, Qt.ElideRight, self.width() - 8))

    @staticmethod
    def _spaced(labels, length: float, metrics: QFontMetrics, horizontal: bool):
        """Every n-th label, so neighbours do not overlap."""
        if not labels:
            return []
        size = max(metrics.horizontalAdvance(t) for _, t in labels) + 8 if horizontal else metrics.height() + 2
        room = max(int(length // max(size, 1)), 1)
        step = -(-len(labels) // room)
        return labels[::step]

    # ------------------------------------------------------------ interaction

    def nearest(self, column: int, row: int, point: QPointF) -> int | None:
        """The group drawn nearest to a point of a cell (None beyond HIT px)."""
        xs, ys, gs = self._points.get((column, row), (np.zeros(0), np.zeros(0), np.zeros(0, np.int64)))
        if not len(xs):
            return None
        d = (xs - point.x()) ** 2 + (ys - point.y()) ** 2
        i = len(d) - 1 - int(np.argmin(d[::-1]))  # ties: the one drawn on top
        return int(gs[i]) if d[i] <= HIT * HIT else None

    def mousePressEvent(self, event) -> None:
        cell = self.cell_at(event.position())
        if cell is not None and event.button() == Qt.LeftButton:
            self._drag = (*cell, event.position(), event.position())

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        if self._drag is not None:
            c, r, start, _ = self._drag
            rect = self.cell_rect(c, r)
            end = QPointF(min(max(pos.x(), rect.left()), rect.right()), min(max(pos.y(), rect.top()), rect.bottom()))
            self._drag = (c, r, start, end)
            self.update()
            return
        cell = self.cell_at(pos) if self._image is not None else None
        group = self.nearest(*cell, pos) if cell is not None else None
        hover = (*cell, group) if group is not None else None
        if cell is None:  # over a title: its full name
            full = next((t for box, _, t in self.titles if box.contains(pos)), None)
            if full is not None:
                QToolTip.showText(event.globalPosition().toPoint(), full, self)
        if hover != self._hover:
            self._hover = hover
            self.update()
            if hover is None:
                QToolTip.hideText()
            else:
                QToolTip.showText(event.globalPosition().toPoint(), self.describe(group), self)

    def leaveEvent(self, _event) -> None:
        if self._hover is not None:
            self._hover = None
            self.update()

    def mouseReleaseEvent(self, event) -> None:
        if self._drag is None:
            return
        c, r, start, end = self._drag
        self._drag = None
        if abs(end.x() - start.x()) < 4 and abs(end.y() - start.y()) < 4:  # a click
            group = self.nearest(c, r, start)
            if group is not None:
                self.group_clicked.emit(group)
            elif self.brush is not None and self.brush[:2] == (c, r):
                self.brush = None
                self.brushed.emit(c, r, None, None)
            self.update()
            return
        (x0, y0), (x1, y1) = self.to_positions(c, r, start), self.to_positions(c, r, end)
        self.brush = (c, r, (min(x0, x1), max(x0, x1)), (min(y0, y1), max(y0, y1)))
        self.update()
        self.brushed.emit(c, r, self.brush[2], self.brush[3])
