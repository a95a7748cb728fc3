"""Memory over time for one allocator: stack and heap stacked, free memory,
fragmentation on a right axis, the peak marked; or, for sources that split
memory into categories (PyTorch's memory timelines), the categories stacked
in their own colours, as PyTorch's plot draws them.

Every snapshot is kept. Each series has a min/max pyramid (PeakPyramid),
built in the worker that loads the profile (prepare_series); each frame
paints the grid, the areas and the lines into one pixel buffer
(SeriesCanvas), per pixel column the exact min..max of the samples there,
so a peak of one snapshot shows at any zoom and a frame costs the same for
a thousand snapshots or five million.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QImage
from PySide6.QtWidgets import QGraphicsItem, QSizePolicy

from profscope.models.core.units import format_bytes
from profscope.models.data.memory_profile import AllocatorProfile
from profscope.models.data.peak_pyramid import PlotSeries, plot_series
from profscope.widgets.palette import Scheme, follow, style_plot
from profscope.widgets.plot_axes import BytesAxis, TimeAxis

STACK_COLOR = QColor(251, 140, 0)
HEAP_COLOR = QColor(30, 136, 229)
FREE_COLOR = QColor(67, 160, 71)
FRAG_COLOR = QColor(142, 36, 170)
PEAK_COLOR = QColor(229, 57, 53)
LINE_COLORS = {"fragmentation": FRAG_COLOR, "in_use": HEAP_COLOR, "stack": STACK_COLOR, "free": FREE_COLOR}
# Pixel codes of the canvas (a colour table maps them): 0 the background,
# 1-2 the number of areas over it (heap, then stack on it; 1 is the stack's
# when the heap is hidden); 4 + that for the fragmentation line under them
# (its axis lies behind the others, as its own ViewBox did); 8-10 a line on
# top, drawn in this order (free memory's dashes end on top); plus 16 times
# the grid level over the pixel.
HEAP_AREA, BOTH_AREAS = 1, 2
FRAG_LINE = 4
LINE_CODES = {"in_use": 8, "stack": 9, "free": 10}
GRID_ALPHA = 51  # as pyqtgraph's showGrid(alpha=0.2)
# Stacked categories (memory timelines) use codes 1..k instead, and no lines.
CATEGORY_ALPHA = 0.7  # as PyTorch's plot fills its categories
PEAK_LABEL_GAP_PX = 10  # between the peak's marker and its label


class SeriesCanvas(pg.GraphicsObject):
    """The grid, the stacked areas and the lines, painted into one numpy pixel
    buffer per frame (like the timeline canvas) and drawn as one image under
    the plot's markers. Per pixel column each series spans the min..max of
    the samples in effect there (the value at the column's left edge
    included, so steps join up), read from its pyramid.

    A child of the ViewBox (its pixels, not data coordinates). pyqtgraph's
    filled curves and grid cost 40-100 ms a frame offscreen; this ~2-4 ms.
    """

    def __init__(self, plot: MemoryPlot):
        vb = plot.plot.getViewBox()
        super().__init__(vb)
        self.plot, self.vb = plot, vb
        self.setZValue(-1)  # below the ViewBox's data items (markers, lines, region)
        self._key = None
        self._pixels = self._image = None
        self._rows = None
        vb.sigXRangeChanged.connect(self.redraw)
        vb.sigYRangeChanged.connect(self.redraw)
        vb.sigResized.connect(self._resized)

    def redraw(self, *_args) -> None:
        self.update()

    def _resized(self, *_args) -> None:
        self.prepareGeometryChange()
        self.update()

    def boundingRect(self) -> QRectF:
        return QRectF(0, 0, self.vb.width(), self.vb.height())

    def paint(self, p, *_args) -> None:
        w, h = int(self.vb.width()), int(self.vb.height())
        if w <= 0 or h <= 0:
            return
        (x0, x1), (y0, y1) = self.vb.viewRange()
        key = (w, h, x0, x1, y0, y1, self.plot.draw_key())
        if key != self._key:  # hovering repaints bits of the plot: reuse the frame
            self._pixels, colors = self.render(w, h, x0, x1, y0, y1)
            # 8-bit codes and their colour table: Qt maps them while drawing, 4x faster than in numpy.
            self._image = QImage(self._pixels.data, w, h, w, QImage.Format_Indexed8)
            self._image.setColorTable(colors.tolist())
            self._key = key
        p.drawImage(QPointF(0, 0), self._image)

    # ------------------------------------------------------------ one frame

    def render(self, w: int, h: int, x0: float, x1: float, y0: float, y1: float) -> tuple[np.ndarray, np.ndarray]:
        """The data area for the view x0..x1, y0..y1: a code per pixel (h x w,
        see HEAP_AREA) and the ARGB colour of each code. The areas are
        whole-array uint8 operations; the lines, usually a few pixels per
        column, are written at their flat indices."""
        plot = self.plot
        if self._rows is None or len(self._rows) != h:
            self._rows = np.arange(h, dtype=np.int16)[:, None]
        code = None
        s, layers = plot.series, plot.visible_layers()
        if s is not None and s.categories:
            code = self._stacked(s, w, h, x0, x1, y0, y1)
        elif s is not None and len(s.time_ps) and layers and x1 > x0:
            lo, hi, shown = _columns(s.time_ps, x0, x1, w)
            k = [s.names.index(name) for name, _ in layers]
            vmin, vmax = s.pyramid.ranges(np.where(shown, lo, 0), np.where(shown, hi + 1, 0))
            # Rows of every layer's max and min at once: [max/min, column, layer].
            ya, yb = np.array([r for _, r in layers]).T
            rows = _row(np.stack([vmax[:, k], vmin[:, k]]), ya, yb, h)
            rows[:, ~shown] = np.array([h + 1, -1], np.int16)[:, None, None]  # nothing where the series is not
            spans = {name: (rows[0, :, i], rows[1, :, i]) for i, (name, _) in enumerate(layers)}
            # The areas from the values down to zero. The stack's lies within the heap's
            # (stack + heap >= stack), so the number of areas over a pixel says which:
            # 1 the heap's (or the stack's alone, the heap hidden: see lut), 2 both.
            base = int(_row(0.0, y0, y1, h))
            for name in ("in_use", "stack"):
                if name in spans:
                    area = (self._rows >= spans[name][0]).view(np.uint8)
                    if base < h - 1:
                        area &= (self._rows <= base).view(np.uint8)
                    code = area if code is None else code + area
            if code is None:
                code = np.zeros((h, w), np.uint8)
            flat = code.reshape(-1)
            for name in ("fragmentation", "in_use", "stack", "free"):  # the later line wins
                if name not in spans:
                    continue
                top, bottom = spans[name]
                value = FRAG_LINE if name == "fragmentation" else LINE_CODES[name]
                if name != "free" and int(np.maximum(bottom - top + 1, 0).sum()) > h * w // 8:
                    # Tall runs (noise at a wide zoom): whole-array operations are cheaper.
                    on = ((self._rows >= top) & (self._rows <= bottom)).view(np.uint8)
                    if value == FRAG_LINE:
                        code += on * np.uint8(FRAG_LINE)
                    else:
                        np.maximum(code, on * np.uint8(value), out=code)
                    continue
                pixels, along = _span_pixels(top, bottom, w, h)
                if name == "free":  # Qt's DashLine: 4 on, 2 off along the line
                    pixels = pixels[along % 6 < 4]
                if value == FRAG_LINE:
                    flat[pixels] += np.uint8(FRAG_LINE)
                else:
                    flat[pixels] = value
        if code is None:
            code = np.zeros((h, w), np.uint8)
        alphas = self._grid(code, x0, x1, y0, y1)
        return code, plot.lut(alphas)

    def _stacked(self, s: PlotSeries, w: int, h: int, x0, x1, y0, y1) -> np.ndarray:
        """Codes of the stacked categories (see CATEGORY_AREA): per pixel the
        number of category tops at or above it, each top at the highest value
        in its column. So code c is the category c-th from the top of the
        stack, and a column shows each stack's highest reach there."""
        code = np.zeros((h, w), np.uint8)
        k = len(s.categories)
        if not len(s.time_ps) or x1 <= x0:
            return code
        lo, hi, shown = _columns(s.time_ps, x0, x1, w)
        _, vmax = s.pyramid.ranges(np.where(shown, lo, 0), np.where(shown, hi + 1, 0))
        tops = _row(vmax[:, [s.names.index(f"stacked:{i}") for i in range(k)]], y0, y1, h)
        tops[~shown] = h + 1
        base = int(_row(0.0, y0, y1, h))
        for i in range(k):
            code += (self._rows >= tops[:, i]).view(np.uint8)
        if base < h - 1:
            code *= (self._rows <= base).view(np.uint8)
        return code

    def _grid(self, code: np.ndarray, x0, x1, y0, y1) -> list[float]:
        """Marks grid lines in the codes (their level times 16) and returns each
        level's alpha, as pyqtgraph draws a grid of opacity GRID_ALPHA: fainter
        for minor ticks and for dense ones."""
        h, w = code.shape
        alphas = []
        for axis, n, a, b in ((self.plot.plot.getAxis("bottom"), w, x0, x1),
                              (self.plot.plot.getAxis("left"), h, y1, y0)):
            length = (axis.width() if axis.orientation == "bottom" else axis.height()) + 2
            for i, (_spacing, values) in enumerate(axis.grid_ticks()):
                if len(alphas) == 15 or not values or b == a:
                    continue
                alpha = 255 / (i + 1) * GRID_ALPHA / 255 * min(max(0.05 * length / (len(values) + 1), 0.0), 1.0)
                pos = np.floor((np.asarray(values) - a) / (b - a) * n).astype(np.int64)
                pos = pos[(pos >= 0) & (pos < n)]
                alphas.append(alpha)
                level = np.uint8(len(alphas) << 4)
                if axis.orientation == "bottom":
                    code[:, pos] = (code[:, pos] & 15) | level
                else:
                    code[pos] = (code[pos] & 15) | level
        return alphas


def _descendants(item) -> list:
    out = []
    for child in item.childItems():
        out += [child, *_descendants(child)]
    return out


def _lut_colors(scheme: Scheme, heap_fill: QColor, stack_fill: QColor, lines: dict[str, QColor]):
    """RGB of each pixel code without grid (16 x 3), the grid's colour, and the
    two codes that change when the heap is hidden (codes, their colours then)."""
    rgb = lambda c: np.array([c.red(), c.green(), c.blue()], np.float64)  # noqa: E731
    over = lambda c, under: under + (rgb(c) - under) * (c.alpha() / 255)  # noqa: E731
    base = np.repeat(rgb(scheme.base)[None], 16, axis=0)
    for under in (0, FRAG_LINE):
        if under:
            base[under] = rgb(lines["fragmentation"])
        base[under + HEAP_AREA] = over(heap_fill, base[under])
        base[under + BOTH_AREAS] = over(stack_fill, base[under + HEAP_AREA])
    for name, code in LINE_CODES.items():
        base[code] = rgb(lines[name])
    alone = [HEAP_AREA, FRAG_LINE + HEAP_AREA]
    return base, rgb(scheme.shade(0.41)), (alone, [over(stack_fill, base[c - HEAP_AREA]) for c in alone])


def _category_lut(scheme: Scheme, colors: list[QColor], shown: list[bool]) -> np.ndarray:
    """RGB of each pixel code of the stacked categories (16 x 3; code c is the
    category c-th from the top, see SeriesCanvas._stacked), as PyTorch's plot
    fills them (alpha 0.7) over Base; a hidden category's pixels are Base."""
    rgb = lambda c: np.array([c.red(), c.green(), c.blue()], np.float64)  # noqa: E731
    base = np.repeat(rgb(scheme.base)[None], 16, axis=0)
    k = len(colors)
    for i, (color, visible) in enumerate(zip(colors, shown)):
        if visible:
            base[k - i] = base[0] + (rgb(color) - base[0]) * CATEGORY_ALPHA
    return base


def _columns(time_ps: np.ndarray, x0: float, x1: float, w: int):
    """Per pixel column of x0..x1, the first and last sample in effect in it
    (the one at its left edge, then every sample up to its right edge), and
    whether the series is drawn there (from the first sample's column to the
    last sample's)."""
    edges = x0 + (x1 - x0) / w * np.arange(w + 1)
    # Integer edges when times are integers: float ones would make searchsorted cast every time.
    if time_ps.dtype.kind in "iu":
        info = np.iinfo(time_ps.dtype)
        edges = np.floor(np.clip(edges, float(info.min), float(info.max) / 2)).astype(time_ps.dtype)
    at = np.searchsorted(time_ps, edges, side="right") - 1
    lo, hi = np.maximum(at[:-1], 0), at[1:]
    shown = (hi >= 0) & (edges[:-1] <= time_ps[-1])
    return lo, np.maximum(hi, 0), shown


def _row(v, y0, y1, h: int):
    """Pixel rows (0 at the top; -1 and h + 1 beyond the edges) of values on
    the view y0..y1 (floats, or arrays broadcast against v)."""
    span = np.asarray(y1, np.float64) - y0
    scale = h / np.where(span != 0, span, 1.0)
    return np.clip(np.floor((y1 - np.asarray(v, np.float64)) * scale), -1, h + 1).astype(np.int16)


def _span_pixels(top: np.ndarray, bottom: np.ndarray, w: int, h: int) -> tuple[np.ndarray, np.ndarray]:
    """Flat indices (row * w + column) of the pixels from row top to row bottom
    of each column, clipped to the h rows, and each one's distance along the
    line (one pixel across, then down the column: for dashes)."""
    top, bottom = np.maximum(top, 0), np.minimum(bottom, h - 1)
    cols = np.flatnonzero(top <= bottom)
    lengths = (bottom[cols] - top[cols] + 1).astype(np.int64)
    first = np.cumsum(lengths) - lengths
    run = np.arange(int(lengths.sum()))
    # Within each column's run: start row plus the position in the run.
    rows = np.repeat(top[cols].astype(np.int64) - first, lengths) + run
    return rows * w + np.repeat(cols, lengths), run + np.repeat(cols, lengths)


def legend_row(layout: pg.GraphicsLayoutWidget, columns: int = 4) -> pg.LegendItem:
    """A legend in a row of its own (row 0, the plot goes below it), never
    over the data: its entries side by side, at the left."""
    legend = pg.LegendItem(colCount=columns, verSpacing=-4)
    layout.addItem(legend, row=0, col=0)
    legend.setSizePolicy(QSizePolicy.Maximum, QSizePolicy.Maximum)
    layout.ci.layout.setAlignment(legend, Qt.AlignLeft | Qt.AlignVCenter)
    return legend


class MemoryPlot(pg.GraphicsLayoutWidget):
    """Signals carry timeline indices of the allocator shown.

    The series are drawn by a SeriesCanvas; the curve items below hold only
    their pens and brushes, for the legend (clicking an entry hides its
    series) and for what is visible.
    """

    hovered = Signal(int)
    moment_picked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.profile: AllocatorProfile | None = None
        self.series: PlotSeries | None = None
        self._version = 0  # bumped when the data or the colours change
        self._lut_colors = None
        self.legend = legend_row(self)
        self.plot = self.addPlot(row=1, col=0, axisItems={"bottom": TimeAxis("bottom"), "left": BytesAxis("left")})
        self.plot.legend = self.legend  # styled with the plot (style_plot)
        # Labels of the finest ticks never fit; laying them out was a quarter of each zoom frame's axis.
        self.plot.getAxis("bottom").setStyle(maxTextLevel=1)
        self.plot.setMenuEnabled(False)
        self.plot.getViewBox().setMouseEnabled(x=True, y=False)  # zoom and pan in time
        self.heap_curve = self._curve("heap (stacked on stack)")
        self.stack_curve = self._curve("stack")
        self.free_curve = self._curve("free")
        # Fragmentation in % on its own right-hand axis; its ViewBox only scales
        # that axis (never linked in time: the canvas draws the series).
        self.frag_view = pg.ViewBox()
        self.frag_view.setMouseEnabled(x=False, y=False)
        self.plot.showAxis("right")
        self.plot.getAxis("right").setLabel("fragmentation (%)")
        self.plot.scene().addItem(self.frag_view)
        self.plot.getAxis("right").linkToView(self.frag_view)
        self.frag_view.setYRange(0, 100)
        self.frag_curve = self._curve("fragmentation (%)")
        self._entries = [(c, n) for c, n in zip((self.heap_curve, self.stack_curve, self.free_curve, self.frag_curve),
                                                ("heap (stacked on stack)", "stack", "free", "fragmentation (%)"))]
        self.category_curves: list[pg.PlotDataItem] = []  # stacked categories' legend entries, when shown
        self.plot.getViewBox().sigResized.connect(self._sync_views)
        self.plot.getViewBox().sigResized.connect(self._place_peak_label)
        self.plot.getViewBox().sigRangeChanged.connect(self._place_peak_label)
        self.canvas = SeriesCanvas(self)
        # What zooming in time leaves alone is blitted from a cache on each frame:
        # the byte and fragmentation axes, the axes' titles and the legend (drawn over the data).
        axes = [self.plot.getAxis(name) for name in ("left", "bottom", "right")]
        for item in (axes[0], axes[2], *(a.label for a in axes), self.legend, *_descendants(self.legend)):
            item.setCacheMode(QGraphicsItem.DeviceCoordinateCache)
        for curve in (self.heap_curve, self.stack_curve, self.free_curve, self.frag_curve):
            curve.visibleChanged.connect(self.canvas.redraw)

        self.peak_marker = pg.ScatterPlotItem(size=11, symbol="o")
        self.peak_label = pg.TextItem(anchor=(0, 0.5))  # beside the peak, inside the plot: see _place_peak_label
        self.moment_line = pg.InfiniteLine(angle=90)
        self.hover_line = pg.InfiniteLine(angle=90)
        self.lifetime = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(255, 193, 7, 70), pen=pg.mkPen(255, 160, 0))
        for item in (self.lifetime, self.peak_marker, self.peak_label, self.moment_line, self.hover_line):
            self.plot.addItem(item, ignoreBounds=True)
        for item in (self.peak_marker, self.peak_label):
            item.setZValue(1)  # over the moment line, which sits on the peak until a moment is picked
        self.lifetime.hide()
        self.moment_line.hide()
        self.hover_line.hide()
        self.marker_items: list[pg.InfiniteLine] = []  # the profile's markers (out-of-memory events)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        follow(self, self._apply_scheme)

    def _curve(self, name):
        # Only in the legend: items in the ViewBox would be told of every zoom step.
        curve = pg.PlotDataItem()
        self.legend.addItem(curve, name)
        return curve

    def _apply_scheme(self, scheme: Scheme) -> None:
        """Background, axes, legend and series in the palette's colours."""
        self.setBackground(scheme.base)
        style_plot(self.plot, scheme)
        fills = {}
        for curve, color, fill, style in ((self.heap_curve, HEAP_COLOR, True, Qt.SolidLine),
                                          (self.stack_curve, STACK_COLOR, True, Qt.SolidLine),
                                          (self.free_curve, FREE_COLOR, False, Qt.DashLine)):
            color = scheme.data(color)
            curve.setPen(pg.mkPen(color, width=1, style=style))
            if fill:
                fill_color = QColor(color)
                fill_color.setAlpha(150 if not scheme.dark else 120)
                curve.setFillLevel(0)
                curve.setBrush(fill_color)
                fills[curve] = fill_color
        self.frag_curve.setPen(pg.mkPen(scheme.data(FRAG_COLOR), width=1))
        peak = scheme.data(PEAK_COLOR)
        self.peak_marker.setBrush(pg.mkBrush(peak))
        self.peak_marker.setPen(pg.mkPen(scheme.base))
        self.peak_label.setColor(peak)
        backing = QColor(scheme.base)
        backing.setAlpha(210)
        self.peak_label.fill = pg.mkBrush(backing)  # legible where the label lies over the areas
        self.moment_line.setPen(pg.mkPen(scheme.shade(0.76), width=1.5))
        self.hover_line.setPen(pg.mkPen(scheme.shade(0.41), style=Qt.DotLine))
        self._lut_colors = _lut_colors(scheme, fills[self.heap_curve], fills[self.stack_curve],
                                       {name: scheme.data(c) for name, c in LINE_COLORS.items()})
        self._scheme = scheme
        self._style_categories()
        self._changed()

    def category_colors(self) -> list[QColor]:
        """The stacked categories' colours as drawn (PyTorch's black, for inputs, is the text colour on a
        dark palette)."""
        scheme = self._scheme
        out = []
        for _, name in self.series.categories if self.series is not None else ():
            c = QColor(name)
            out.append(scheme.shade(0.9) if scheme.dark and c.lightness() < 30 else scheme.data(c))
        return out

    def _style_categories(self) -> None:
        for curve, color in zip(self.category_curves, self.category_colors()):
            fill = QColor(color)
            fill.setAlphaF(CATEGORY_ALPHA)
            curve.setPen(pg.mkPen(color, width=1))
            curve.setFillLevel(0)
            curve.setBrush(fill)

    def _set_categories(self, categories) -> None:
        """Legend entries of the stacked categories (top of the stack first, as they lie), in place of
        the heap's, stack's, free memory's and fragmentation's; and the fragmentation axis only without
        them."""
        if not categories and not self.category_curves:
            return
        self.legend.clear()
        self.legend.setColumnCount(len(categories) or 4)  # one row: the order of the stack at a glance
        self.category_curves = []
        for name, _ in reversed(categories):
            curve = self._curve(name)
            curve.visibleChanged.connect(self.canvas.redraw)
            self.category_curves.insert(0, curve)
        if not categories:
            for curve, name in self._entries:
                self.legend.addItem(curve, name)
        self.plot.showAxis("right", not categories)
        self._style_categories()

    def _changed(self) -> None:
        self._version += 1
        self.canvas.redraw()

    # ------------------------------------------------------------ what the canvas draws

    def visible_layers(self) -> list[tuple[str, tuple[float, float]]]:
        """(name, y range of its axis) of each series shown."""
        s = self.series
        if s is None:
            return []
        y = tuple(self.plot.getViewBox().viewRange()[1])
        layers = [("in_use", y, self.heap_curve), ("stack", y, self.stack_curve), ("free", y, self.free_curve),
                  ("fragmentation", tuple(self.frag_view.viewRange()[1]), self.frag_curve)]
        return [(name, r) for name, r, curve in layers if s.has(name) and curve.isVisible()]

    def draw_key(self) -> tuple:
        """Changes whenever the canvas must draw anew at the same view."""
        curves = (self.heap_curve, self.stack_curve, self.free_curve, self.frag_curve, *self.category_curves)
        return (self._version, tuple(self.frag_view.viewRange()[1]), tuple(c.isVisible() for c in curves))

    def lut(self, alphas: list[float]) -> np.ndarray:
        """ARGB colour of each pixel code (see SeriesCanvas.render): its series
        colour, blended with the grid level's alpha above it."""
        base, grid, (alone, stack_alone) = self._lut_colors
        if self.series is not None and self.series.categories:
            base = _category_lut(self._scheme, self.category_colors(), [c.isVisible() for c in self.category_curves])
        elif not self.heap_curve.isVisible():  # the one area drawn is the stack's
            base = base.copy()
            base[alone] = stack_alone
        out = np.repeat(base[None], 16, axis=0)  # [grid level, code, rgb]
        for level, alpha in enumerate(alphas, 1):
            a = alpha / 255
            out[level] = base * (1 - a) + grid * a
        rgb = np.round(out.reshape(256, 3)).astype(np.uint32)
        return (rgb[:, 0] << 16) | (rgb[:, 1] << 8) | rgb[:, 2] | np.uint32(0xFF000000)

    def _sync_views(self):
        self.frag_view.setGeometry(self.plot.getViewBox().sceneBoundingRect())

    def _place_peak_label(self, *_args) -> None:
        """The peak's label beside its marker (right of it, or left near the
        right edge: off the moment line that starts on the peak), within the
        plot's height."""
        if self.series is None:
            return
        vb = self.plot.getViewBox()
        box = vb.sceneBoundingRect()
        text = self.peak_label.textItem.boundingRect()
        w, h = max(text.width(), 1.0), max(text.height(), 1.0)
        at = vb.mapViewToScene(self.peak_label.pos())
        gap = PEAK_LABEL_GAP_PX / w
        ax = -gap if at.x() + PEAK_LABEL_GAP_PX + w <= box.right() else 1 + gap
        # Centred on the peak's height, moved up or down as far as the plot's top or bottom needs.
        low, high = 1 - (box.bottom() - at.y()) / h, (at.y() - box.top()) / h
        ay = min(max(0.5, low), high) if low <= high else 0.5
        self.peak_label.setAnchor((ax, ay))

    # ------------------------------------------------------------ data

    def set_profile(self, profile: AllocatorProfile | None, series: PlotSeries | None = None) -> None:
        """Shows an allocator; `series` are its plot_series when made already
        (in the worker that loaded it), else they are made here."""
        self.profile = profile
        self.lifetime.hide()
        self.moment_line.hide()
        self._set_markers(profile.markers if profile is not None else [])
        if profile is None or not len(profile.timeline):
            self.series = None
            self._set_categories(())
            self.peak_marker.setData([], [])
            self.peak_label.setText("")
            self._changed()
            return
        self.series = series if series is not None else plot_series(profile)
        self._set_categories(self.series.categories)
        self.show_free(self.free_is_useful())
        tl = profile.timeline
        s = profile.summary
        i = profile.peak_index
        self.peak_marker.setData([float(tl.time_ps[i])], [float(s.peak_in_use)])
        self.peak_label.setText(f"peak {format_bytes(s.peak_in_use)}")
        self.peak_label.setPos(float(tl.time_ps[i]), float(s.peak_in_use))
        self._changed()
        self.reset_zoom()
        self._place_peak_label()

    def _set_markers(self, markers: list[tuple[int, str]]) -> None:
        """A dashed line with its label at the top of the plot for each marked moment."""
        for item in self.marker_items:
            self.plot.removeItem(item)
        self.marker_items = []
        for time_ps, label in markers:
            pen = pg.mkPen("#d62728", width=1.5, style=Qt.DashLine)
            line = pg.InfiniteLine(pos=float(time_ps), angle=90, pen=pen, label=label,
                                   labelOpts={"position": 0.95, "color": "#d62728", "anchors": [(0, 0), (0, 0)]})
            line.setToolTip(label)
            self.plot.addItem(line, ignoreBounds=True)
            self.marker_items.append(line)

    def has_free(self) -> bool:
        return self.series is not None and self.series.has("free")

    def free_is_useful(self) -> bool:
        """Free memory is worth showing when it exists and does not dwarf the usage
        (a 64 GiB host allocator would flatten a few MiB of heap)."""
        if not self.has_free():
            return False
        return self.series.max("free") <= 4 * max(float(self.profile.summary.peak_in_use), 1.0)

    def show_free(self, visible: bool) -> None:
        visible = visible and self.has_free()
        self.free_curve.setVisible(visible)
        self._set_legend_visible(self.free_curve, visible)
        self.reset_zoom()

    def _set_legend_visible(self, item, visible: bool) -> None:
        for sample, label in self.legend.items:
            if sample.item is item:
                sample.setVisible(visible)
                label.setVisible(visible)

    def reset_zoom(self) -> None:
        if self.series is None:
            return
        tl = self.profile.timeline
        top = self.series.max("in_use")
        if self.free_curve.isVisible():
            top = max(top, self.series.max("free"))
        lo, hi = float(tl.time_ps[0]), float(tl.time_ps[-1])
        pad = (hi - lo) * 0.02 or 1.0
        self.plot.setXRange(lo - pad, hi + pad, padding=0)
        self.plot.setYRange(0, top * 1.12 or 1.0, padding=0)

    def zoom_to(self, start_ps: float, end_ps: float) -> None:
        """Shows a time range (a step) with a little margin."""
        pad = (end_ps - start_ps) * 0.05 or 1e6
        self.plot.setXRange(start_ps - pad, end_ps + pad, padding=0)

    def mark_moment(self, index: int | None) -> None:
        if self.profile is None or index is None or index < 0:
            self.moment_line.hide()
            return
        self.moment_line.setValue(float(self.profile.timeline.time_ps[index]))
        self.moment_line.show()

    def mark_lifetime(self, start: int, end: int) -> None:
        """Shades an allocation's life between timeline indices (end -1: never freed)."""
        if self.profile is None or start < 0:
            self.lifetime.hide()
            return
        t = self.profile.timeline.time_ps
        stop = t[end] if end >= 0 else t[-1]
        self.lifetime.setRegion((float(t[start]), float(stop)))
        self.lifetime.show()

    # ------------------------------------------------------------ mouse

    def _index_at(self, scene_pos) -> int | None:
        vb = self.plot.getViewBox()
        if self.profile is None or not len(self.profile.timeline) or not vb.sceneBoundingRect().contains(scene_pos):
            return None
        x = vb.mapSceneToView(scene_pos).x()
        return self.profile.index_at_time(x)

    def _on_mouse_moved(self, pos) -> None:
        i = self._index_at(pos)
        if i is None:
            self.hover_line.hide()
            return
        self.hover_line.setValue(float(self.profile.timeline.time_ps[i]))
        self.hover_line.show()
        self.hovered.emit(i)

    def _on_mouse_clicked(self, event) -> None:
        if event.button() != Qt.LeftButton or event.double():
            return
        i = self._index_at(event.scenePos())
        if i is not None:
            self.moment_picked.emit(i)
