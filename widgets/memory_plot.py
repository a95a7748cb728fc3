"""Memory over time for one allocator: stack and heap stacked, free memory,
fragmentation on a right axis, the peak marked.

Every snapshot is kept; each redraw takes only the visible range from a
min/max pyramid (about two points per pixel, every peak kept), so a million
snapshots zoom and pan smoothly.
"""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor

from models.memory_profile import AllocatorProfile
from models.units import byte_unit, format_bytes, time_unit
from widgets.palette import Scheme, follow, style_plot

STACK_COLOR = QColor(251, 140, 0)
HEAP_COLOR = QColor(30, 136, 229)
FREE_COLOR = QColor(67, 160, 71)
FRAG_COLOR = QColor(142, 36, 170)
PEAK_COLOR = QColor(229, 57, 53)


def _decimals(spacing: float) -> int:
    return max(0, min(6, int(np.ceil(-np.log10(spacing))))) if spacing > 0 else 0


class TimeAxis(pg.AxisItem):
    """Picosecond values shown in the unit that suits the tick spacing."""

    def __init__(self, orientation):
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values, scale, spacing):
        size, unit = time_unit(spacing * 10)
        self.setLabel(f"time ({unit})")
        digits = _decimals(spacing / size)
        return [f"{v / size:.{digits}f}" for v in values]


class BytesAxis(pg.AxisItem):
    """Byte values shown in KiB / MiB / GiB."""

    def __init__(self, orientation):
        super().__init__(orientation)
        self.enableAutoSIPrefix(False)

    def tickStrings(self, values, scale, spacing):
        top = max((abs(v) for v in values), default=0)
        size, unit = byte_unit(top)
        self.setLabel(f"memory ({unit})")
        digits = _decimals(spacing / size)
        return [f"{v / size:.{digits}f}" for v in values]


class PeakPyramid:
    """Min/max levels of a series, so any zoom draws about two points per pixel.

    Level k keeps, for each bin of 2**k samples, its maximum and minimum (in
    time order), which preserves every peak. Building all levels costs about
    one pass over the data; picking the visible slice is a binary search.
    """

    def __init__(self, x: np.ndarray, y: np.ndarray):
        self.levels = [(x, y)]
        lo = hi = y
        xs = x
        while len(xs) > 2048:
            n = len(xs) // 2 * 2
            xs = xs[:n:2]
            lo = np.minimum(lo[:n:2], lo[1:n:2])
            hi = np.maximum(hi[:n:2], hi[1:n:2])
            # two points per bin: the max then the min, both at the bin start
            self.levels.append((np.repeat(xs, 2), np.column_stack((hi, lo)).ravel()))

    def visible(self, x0: float, x1: float, pixels: int) -> tuple[np.ndarray, np.ndarray]:
        x, _ = self.levels[0]
        i0, i1 = np.searchsorted(x, [x0, x1])
        level = int(np.clip(np.ceil(np.log2(max(i1 - i0, 1) / max(pixels, 1))), 0, len(self.levels) - 1))
        lx, ly = self.levels[level]
        j0, j1 = np.searchsorted(lx, [x0, x1])
        j0, j1 = max(j0 - 2, 0), min(j1 + 2, len(lx))  # one point beyond each edge
        return lx[j0:j1], ly[j0:j1]


class MemoryPlot(pg.GraphicsLayoutWidget):
    """Signals carry timeline indices of the allocator shown."""

    hovered = Signal(int)
    moment_picked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.profile: AllocatorProfile | None = None
        self.plot = self.addPlot(axisItems={"bottom": TimeAxis("bottom"), "left": BytesAxis("left")})
        self.plot.showGrid(x=True, y=True, alpha=0.2)
        self.plot.setMenuEnabled(False)
        self.plot.getViewBox().setMouseEnabled(x=True, y=False)  # zoom and pan in time
        self.legend = self.plot.addLegend(offset=(60, 5))
        self.heap_curve = self._curve("heap (stacked on stack)")
        self.stack_curve = self._curve("stack")
        self.free_curve = self._curve("free")
        # Fragmentation in % on its own right-hand axis, sharing the time axis.
        self.frag_view = pg.ViewBox()
        self.frag_view.setMouseEnabled(x=False, y=False)
        self.plot.showAxis("right")
        self.plot.getAxis("right").setLabel("fragmentation (%)")
        self.plot.scene().addItem(self.frag_view)
        self.plot.getAxis("right").linkToView(self.frag_view)
        self.frag_view.setXLink(self.plot)
        self.frag_view.setYRange(0, 100)
        self.frag_curve = pg.PlotDataItem()
        self.frag_curve.setSkipFiniteCheck(True)
        self.frag_view.addItem(self.frag_curve)
        self.legend.addItem(self.frag_curve, "fragmentation (%)")
        self.plot.getViewBox().sigResized.connect(self._sync_views)
        self.plot.getViewBox().sigXRangeChanged.connect(self._redraw_visible)
        self._pyramids: list[tuple[pg.PlotDataItem, PeakPyramid]] = []

        self.peak_marker = pg.ScatterPlotItem(size=11, symbol="o")
        self.peak_label = pg.TextItem(anchor=(0.5, 1.2))
        self.moment_line = pg.InfiniteLine(angle=90)
        self.hover_line = pg.InfiniteLine(angle=90)
        self.lifetime = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(255, 193, 7, 70), pen=pg.mkPen(255, 160, 0))
        for item in (self.lifetime, self.peak_marker, self.peak_label, self.moment_line, self.hover_line):
            self.plot.addItem(item, ignoreBounds=True)
        self.lifetime.hide()
        self.moment_line.hide()
        self.hover_line.hide()
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.plot.scene().sigMouseClicked.connect(self._on_mouse_clicked)
        follow(self, self._apply_scheme)

    def _curve(self, name):
        curve = self.plot.plot(name=name)
        curve.setSkipFiniteCheck(True)
        return curve

    def _apply_scheme(self, scheme: Scheme) -> None:
        """Background, axes, legend and series in the palette's colours."""
        self.setBackground(scheme.base)
        style_plot(self.plot, scheme)
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
        self.frag_curve.setPen(pg.mkPen(scheme.data(FRAG_COLOR), width=1))
        peak = scheme.data(PEAK_COLOR)
        self.peak_marker.setBrush(pg.mkBrush(peak))
        self.peak_marker.setPen(pg.mkPen(scheme.base))
        self.peak_label.setColor(peak)
        self.moment_line.setPen(pg.mkPen(scheme.shade(0.76), width=1.5))
        self.hover_line.setPen(pg.mkPen(scheme.shade(0.41), style=Qt.DotLine))


    def _set_series(self, x: np.ndarray, series: list[tuple[pg.PlotDataItem, np.ndarray]]) -> None:
        # Drawn as steps: a snapshot's value holds until the next snapshot.
        x = np.repeat(x, 2)[1:]
        self._pyramids = [(curve, PeakPyramid(x, np.repeat(y, 2)[:-1])) for curve, y in series]

    def _redraw_visible(self, *_args) -> None:
        vb = self.plot.getViewBox()
        (x0, x1), pixels = vb.viewRange()[0], int(vb.width()) or 1000
        for curve, pyramid in self._pyramids:
            curve.setData(*pyramid.visible(x0, x1, pixels))

    def _sync_views(self):
        self.frag_view.setGeometry(self.plot.getViewBox().sceneBoundingRect())

    # ------------------------------------------------------------ data

    def set_profile(self, profile: AllocatorProfile | None) -> None:
        self.profile = profile
        self.lifetime.hide()
        self.moment_line.hide()
        if profile is None or not len(profile.timeline):
            self._pyramids = []
            for c in (self.heap_curve, self.stack_curve, self.free_curve, self.frag_curve):
                c.setData([], [])
            self.peak_marker.setData([], [])
            self.peak_label.setText("")
            return
        tl = profile.timeline
        t = tl.time_ps.astype(np.float64)
        stack = tl.stack.astype(np.float64)
        series = [(self.heap_curve, stack + tl.heap), (self.frag_curve, tl.fragmentation * 100.0)]
        if tl.stack.any():  # most allocators never reserve stack: skip an empty area
            series.append((self.stack_curve, stack))
        else:
            self.stack_curve.setData([], [])
        if self.has_free():
            series.append((self.free_curve, tl.free.astype(np.float64)))
        self._set_series(t, series)
        self.show_free(self.free_is_useful())
        s = profile.summary
        i = profile.peak_index
        self.peak_marker.setData([float(tl.time_ps[i])], [float(s.peak_in_use)])
        self.peak_label.setText(f"peak {format_bytes(s.peak_in_use)}")
        self.peak_label.setPos(float(tl.time_ps[i]), float(s.peak_in_use))
        self.reset_zoom()

    def has_free(self) -> bool:
        return self.profile is not None and bool(self.profile.timeline.free.any())

    def free_is_useful(self) -> bool:
        """Free memory is worth showing when it exists and does not dwarf the usage
        (a 64 GiB host allocator would flatten a few MiB of heap)."""
        if not self.has_free():
            return False
        tl = self.profile.timeline
        return float(tl.free.max()) <= 4 * max(float(self.profile.summary.peak_in_use), 1.0)

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
        if self.profile is None or not len(self.profile.timeline):
            return
        tl = self.profile.timeline
        top = float((tl.stack + tl.heap).max())
        if self.free_curve.isVisible():
            top = max(top, float(tl.free.max()))
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
