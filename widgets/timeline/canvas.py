"""The timeline canvas: lanes grouped by device, zoom and pan, click, hover,
range selection, highlights, flows, counters and instants.

Each frame paints the lanes into one numpy pixel buffer and draws it as one
image: per lane, the events wide enough are painted one by one, and every
pixel column in which narrower events start gets the colour of the first of
them. Both lookups are binary searches (`profscope.models.data.timeline.LaneIndex`), so a
frame costs about the same with a hundred events or a million.

Where the timeline has them (Chrome traces):
- counter tracks sit right under their group's header, drawn into the same
  buffer as a step-line area chart over the counter's whole-trace min..max
  (the visible samples found by binary search, per pixel column their
  min..max);
- instant events (on lanes whose names end in "instants") are small
  downward triangles, visible and clickable at any zoom;
- the selected event's flows (both directions) are arrows from the source's
  start to the destination's start, one colour per flow category, clipped
  to the lanes area (to the group header when the other end is folded).

Mouse: wheel zooms at the cursor, Shift+wheel scrolls lanes, drag pans,
drag on the ruler (or Shift+drag) selects a time range, click selects an
event, click a device header to fold it, hover a counter for its value.
Keys: W/S zoom, A/D pan, F fits the selection, 0 shows everything, Esc
clears the selection, ] follows the selected event's first outgoing flow
(selects and reveals its destination), [ its first incoming flow.
"""

from __future__ import annotations

import math
import zlib

import numpy as np
from PySide6.QtCore import QEvent, QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QFont, QFontMetrics, QImage, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QToolTip, QWidget

from profscope.models.core.units import format_time_ps
from profscope.models.data.timeline import WIDE_PIXELS, Timeline
from profscope.widgets.palette import Scheme, argb, mix
from profscope.widgets.plot_axes import nice_step

RULER_H = 26
GUTTER_W = 210
HEADER_H = 22
LANE_H = 18
COUNTER_H = 36
INSTANT_HALF = 5  # half width of an instant's triangle, px
LABEL_MIN_PX = 28  # events at least this wide get a label
ZOOM_STEP = 1.25
PAN_FRACTION = 0.15
MIN_PS_PER_PX = 10.0
MARGIN = 0.03  # of the data's span on each side: what 0 shows, and how far zooming out or panning goes
# Distinct, readable fills (Material 400/500 tones).
PALETTE = (0x42A5F5, 0x66BB6A, 0xFFA726, 0xAB47BC, 0x26A69A, 0xEF5350, 0x8D6E63, 0x5C6BC0, 0xD4E157,
           0x29B6F6, 0xEC407A, 0x9CCC65, 0xFFCA28, 0x7E57C2, 0x26C6DA, 0xFF7043, 0x78909C, 0x9E9D24)


# Flow arrows: a fixed colour for the categories Kineto writes, others hashed.
FLOW_COLORS = {"ac2g": "#d81b60", "fwdbwd": "#1565c0", "flow": "#2e7d32"}
FLOW_FALLBACK = ("#6a1b9a", "#00838f", "#ef6c00", "#4e342e", "#c62828", "#283593")


def flow_color(category: str, scheme: Scheme | None = None) -> QColor:
    name = FLOW_COLORS.get(category) or FLOW_FALLBACK[zlib.crc32(category.encode()) % len(FLOW_FALLBACK)]
    return scheme.data(name) if scheme is not None else QColor(name)


def kind_color(name: str, scheme: Scheme | None = None) -> int:
    """A stable colour per op type (same name, same colour, in every run);
    with a scheme, as drawn on its background (lighter on a dark one)."""
    color = 0xFF000000 | PALETTE[zlib.crc32(name.encode()) % len(PALETTE)]
    return argb(scheme.data(QColor.fromRgba(color))) if scheme is not None and scheme.dark else color


def _dim(colors: np.ndarray, background: int = 0xFFFFFFFF) -> np.ndarray:
    """The colours blended 75% towards the background (for events outside a highlight)."""
    rgb = [(colors >> s) & 0xFF for s in (16, 8, 0)]
    mixed = [(c + 3 * ((background >> s) & 0xFF)) // 4 for c, s in zip(rgb, (16, 8, 0))]
    return (0xFF000000 | (mixed[0] << 16) | (mixed[1] << 8) | mixed[2]).astype(np.uint32)


def _darker(colors: np.ndarray) -> np.ndarray:
    rgb = [((colors >> s) & 0xFF) * 3 // 5 for s in (16, 8, 0)]
    return (0xFF000000 | (rgb[0] << 16) | (rgb[1] << 8) | rgb[2]).astype(np.uint32)


def _lighter(colors: np.ndarray) -> np.ndarray:
    """The colours blended 40% towards white (a counter's line on a dark background)."""
    rgb = [(colors >> s) & 0xFF for s in (16, 8, 0)]
    mixed = [(3 * c + 2 * 255) // 5 for c in rgb]
    return (0xFF000000 | (mixed[0] << 16) | (mixed[1] << 8) | mixed[2]).astype(np.uint32)


class TimelineCanvas(QWidget):
    event_selected = Signal(int)  # event index, -1 when cleared
    range_selected = Signal(float, float)  # ps; (nan, nan) when cleared
    view_changed = Signal()
    content_height_changed = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setMouseTracking(True)
        self.setMinimumSize(400, 200)
        self.timeline: Timeline | None = None
        self.t0 = 0.0  # ps at the left edge of the lanes
        self.ps_per_px = 1000.0
        self.scroll_y = 0
        self.collapsed: set[int] = set()
        self.selected = -1
        self.range: tuple[float, float] | None = None
        self.highlight: np.ndarray | None = None  # sorted event indices
        self._rows: list[tuple[str, int, int, int]] = []  # (kind, ref, y, height) in content coordinates
        self._lane_y = np.zeros(0, np.int64)  # content y of each lane's row, -1 when its group is folded
        self._header_y = np.zeros(0, np.int64)  # content y of each group's header
        self._instant_lane = np.zeros(0, bool)
        self._counter_scale: list[tuple[float, float]] = []  # whole-trace min, max per counter
        self._counter_values: list[np.ndarray] = []  # values, NaN for non-finite ones
        self._lut_cache: dict[tuple[int, int], np.ndarray] = {}
        self._counters_of: dict[int, list[int]] = {}  # counter indices per group
        self._selected_flows = np.zeros(0, np.int64)  # indices into timeline.flows
        self._press = None  # (pos, t0, scroll_y, selecting)
        self._hover = -1
        self._colors = self._dimmed = self._edges = np.zeros(0, np.uint32)
        self._scheme = Scheme.of(self)  # the palette's colours the buffers were made with
        self._background = argb(self._scheme.base)
        self._pixels = None  # the frame's pixel buffer, reused while the size stays
        self._image = None  # keeps the pixel buffer alive while Qt draws it
        self.bounds: tuple[float, float] | None = None  # the time the view stays within (default: the data's)
        self._fitted: tuple[float, float] | None = None  # what fit() showed, kept when resized until the user moves
        self.label_font = QFont(self.font())
        self.label_font.setPointSizeF(max(self.font().pointSizeF() - 1, 7))

    # ------------------------------------------------------------ data and view

    def set_timeline(self, timeline: Timeline | None) -> None:
        self.timeline = timeline
        self.selected, self.range, self.highlight, self._hover = -1, None, None, -1
        self.collapsed = set()
        self.scroll_y = 0
        self.bounds = None
        self._selected_flows = np.zeros(0, np.int64)
        self._instant_lane = np.zeros(0, bool)
        self._counter_scale, self._counter_values = [], []
        if timeline is not None:
            self._kind_colors(self._scheme)
            self._instant_lane = _instant_lanes(timeline)
            for c in timeline.counters:
                values = np.asarray(c.value, np.float64)
                ok = np.isfinite(values)
                self._counter_values.append(values if ok.all() else np.where(ok, values, np.nan))
                finite = values[ok]
                self._counter_scale.append((float(finite.min()), float(finite.max())) if len(finite) else (0.0, 0.0))
        self._layout()
        self.reset_zoom()

    def _kind_colors(self, scheme: Scheme) -> None:
        """Each op type's fill, dimmed fill and edge on the scheme's background."""
        self._scheme, self._background = scheme, argb(scheme.base)
        self._lut_cache = {}
        if self.timeline is None:
            return
        colors = np.array([kind_color(k, scheme) for k in self.timeline.kinds], np.uint32)
        self._colors, self._dimmed, self._edges = colors, _dim(colors, self._background), _darker(colors)

    def _follow_palette(self) -> Scheme:
        """The current palette's scheme; rebuilds the colour tables when it changed."""
        scheme = Scheme.of(self)
        if scheme.key != self._scheme.key:
            self._kind_colors(scheme)
        return self._scheme

    def changeEvent(self, event) -> None:
        if event.type() in (QEvent.PaletteChange, QEvent.ApplicationPaletteChange):
            self._follow_palette()
            self.update()
        super().changeEvent(event)

    @property
    def lanes_width(self) -> int:
        return max(self.width() - GUTTER_W, 1)

    def reset_zoom(self) -> None:
        """Shows all the data (or the bounds) with a small margin."""
        span = self.bounds or self._span()
        if span is None:
            self.t0, self.ps_per_px = 0.0, 1000.0
            self.update()
        else:
            self.fit(*span)

    def fit(self, a: float, b: float) -> None:
        """Shows [a, b] with a small margin; kept when resized, until the user zooms or pans."""
        span = max(b - a, MIN_PS_PER_PX * 10)
        margin = span * MARGIN
        self.ps_per_px = max((span + 2 * margin) / self.lanes_width, MIN_PS_PER_PX)
        self.t0 = a - margin
        self._fitted = (a, b)
        self._view_changed(user=False)

    def fit_selection(self) -> None:
        if self.range is not None:
            self.fit(*self.range)
        elif self.selected >= 0 and self.timeline is not None:
            s = float(self.timeline.start_ps[self.selected])
            self.fit(s, s + float(self.timeline.duration_ps[self.selected]))
            self.scroll_to_event(self.selected)

    def zoom(self, factor: float, at_x: float | None = None) -> None:
        """Zooms in (factor > 1) or out around pixel x of the lanes area."""
        if at_x is None:
            at_x = self.lanes_width / 2
        t = self.t0 + at_x * self.ps_per_px
        limit = self._max_ps_per_px()
        self.ps_per_px = float(np.clip(self.ps_per_px / factor, MIN_PS_PER_PX, limit))
        self.t0 = t - at_x * self.ps_per_px
        self._view_changed()

    def pan(self, pixels: float) -> None:
        self.t0 += pixels * self.ps_per_px
        self._view_changed()

    def _max_ps_per_px(self) -> float:
        limits = self.limits()
        if limits is None:
            return 1e12
        return max((limits[1] - limits[0]) / self.lanes_width, MIN_PS_PER_PX)

    def limits(self) -> tuple[float, float] | None:
        """The time range the view stays within: the bounds (default: the data's span) and a small margin."""
        span = self.bounds or self._span()
        if span is None:
            return None
        margin = max(span[1] - span[0], MIN_PS_PER_PX * 10) * MARGIN
        return span[0] - margin, span[1] + margin

    def visible_range(self) -> tuple[float, float]:
        return self.t0, self.t0 + self.lanes_width * self.ps_per_px

    def _clamp(self) -> None:
        """Keeps the view within the limits: zooming out stops at the whole
        data, panning at its ends."""
        limits = self.limits()
        if limits is None:
            return
        self.ps_per_px = min(self.ps_per_px, self._max_ps_per_px())
        view = self.lanes_width * self.ps_per_px
        self.t0 = max(min(self.t0, limits[1] - view), limits[0])

    def _span(self) -> tuple[float, float] | None:
        """First to last time of the events, else of the counters (a trace
        may hold only counters); None when there is nothing."""
        tl = self.timeline
        if tl is None:
            return None
        if len(tl):
            return tl.span_ps
        times = [c.time_ps for c in tl.counters if len(c.time_ps)]
        if not times:
            return None
        return float(min(t[0] for t in times)), float(max(t[-1] for t in times))

    def set_scroll(self, y: int) -> None:
        y = int(max(0, min(y, self.content_height() - self._lanes_height())))
        if y != self.scroll_y:
            self.scroll_y = y
            self._view_changed(user=False)

    def select_event(self, i: int, reveal: bool = False) -> None:
        self.selected = i
        flows = self.timeline.flows if self.timeline is not None else None
        self._selected_flows = flows.of_event(i) if flows is not None and i >= 0 else np.zeros(0, np.int64)
        if reveal and i >= 0 and self.timeline is not None:
            self.reveal_event(i)
        self.update()
        self.event_selected.emit(i)

    def reveal_event(self, i: int) -> None:
        """Pans (zooming out if the event is wider than the view) and scrolls
        so that event i is on screen, unfolding its group."""
        s = float(self.timeline.start_ps[i])
        e = s + float(self.timeline.duration_ps[i])
        view = self.lanes_width * self.ps_per_px
        left, right = self.t0, self.t0 + view
        if e - s > view * 0.9:
            self.fit(s, e)
        elif s < left or e > right:
            margin = 0.05 * view
            if right < s < right + view / 2:  # just beyond the right edge: the least pan that shows it
                self.t0 = e + margin - view
            elif left - view / 2 < e < left:
                self.t0 = s - margin
            else:
                self.t0 = (s + e) / 2 - view / 2
        self.scroll_to_event(i)
        self._view_changed()

    def flow_partners(self, outgoing: bool) -> np.ndarray:
        """The events the selected event's flows lead to (outgoing) or come
        from, earliest first."""
        tl = self.timeline
        if tl is None or tl.flows is None or self.selected < 0 or not len(self._selected_flows):
            return np.zeros(0, np.int64)
        f, ks = tl.flows, self._selected_flows
        if outgoing:
            other = f.dst[ks[f.src[ks] == self.selected]]
        else:
            other = f.src[ks[f.dst[ks] == self.selected]]
        other = np.unique(other[(other >= 0) & (other < len(tl))])
        return other[np.argsort(tl.start_ps[other], kind="stable")]

    def follow_flow(self, outgoing: bool) -> bool:
        """Selects and reveals the destination of the selected event's first
        outgoing flow (or the source of its first incoming one); False when
        there is none."""
        other = self.flow_partners(outgoing)
        if not len(other):
            return False
        self.select_event(int(other[0]), reveal=True)
        return True

    def scroll_to_event(self, i: int) -> None:
        lane = self.timeline.lane_of(i)
        group = int(self.timeline.lane_group[lane])
        if group in self.collapsed:
            self.collapsed.discard(group)
            self._layout()
        for kind, ref, y, h in self._rows:
            if kind == "lane" and ref == lane:
                if not self.scroll_y <= y <= self.scroll_y + self._lanes_height() - h:
                    self.set_scroll(y - self._lanes_height() // 3)
                break

    def set_highlight(self, events: np.ndarray | None) -> None:
        self.highlight = None if events is None else np.sort(np.asarray(events, np.int64))
        self.update()

    def set_range(self, a: float, b: float) -> None:
        self.range = (min(a, b), max(a, b))
        self.update()
        self.range_selected.emit(*self.range)

    def clear_selection(self) -> None:
        if self.range is not None:
            self.range = None
            self.range_selected.emit(math.nan, math.nan)
        if self.selected >= 0:
            self.select_event(-1)
        self.update()

    def toggle_group(self, group: int) -> None:
        self.collapsed ^= {group}
        self._layout()
        self.update()

    def _view_changed(self, user: bool = True) -> None:
        if user:
            self._fitted = None
        self._clamp()
        self.update()
        self.view_changed.emit()

    # ------------------------------------------------------------ layout

    def _layout(self) -> None:
        rows, y = [], 0
        tl = self.timeline
        if tl is not None:
            lane_y = np.full(tl.num_lanes, -1, np.int64)
            header_y = np.zeros(len(tl.groups), np.int64)
            counters_of: dict[int, list[int]] = {}
            for k, c in enumerate(tl.counters):
                counters_of.setdefault(c.group, []).append(k)
            for g in range(len(tl.groups)):
                header_y[g] = y
                rows.append(("header", g, y, HEADER_H))
                y += HEADER_H
                if g not in self.collapsed:
                    for k in counters_of.get(g, ()):
                        rows.append(("counter", k, y, COUNTER_H))
                        y += COUNTER_H
                    for lane in tl.lanes_of_group(g):
                        lane_y[lane] = y
                        rows.append(("lane", int(lane), y, LANE_H))
                        y += LANE_H
            self._lane_y, self._header_y = lane_y, header_y
            self._counters_of = counters_of
        self._rows = rows
        self.content_height_changed.emit(y)

    def content_height(self) -> int:
        return self._rows[-1][2] + self._rows[-1][3] if self._rows else 0

    def _lanes_height(self) -> int:
        return max(self.height() - RULER_H, 1)

    def row_at(self, y: float):
        """The (kind, ref, y, height) row under widget y, or None."""
        cy = y - RULER_H + self.scroll_y
        for row in self._rows:
            if row[2] <= cy < row[2] + row[3]:
                return row
        return None

    def x_to_ps(self, x: float) -> float:
        return self.t0 + (x - GUTTER_W) * self.ps_per_px

    def event_at(self, x: float, y: float) -> int:
        row = self.row_at(y)
        if row is None or row[0] != "lane" or x < GUTTER_W or self.timeline is None:
            return -1
        slack = (INSTANT_HALF + 1 if self._instant_lane[row[1]] else 2) * self.ps_per_px
        return self.timeline.event_at(row[1], self.x_to_ps(x), slack_ps=slack)

    def counter_value_at(self, k: int, t_ps: float) -> tuple[int, float] | None:
        """The sample of counter k in effect at time t (index, value), or None before its first sample."""
        c = self.timeline.counters[k]
        j = int(np.searchsorted(c.time_ps, t_ps, side="right")) - 1
        return None if j < 0 else (j, float(c.value[j]))

    def counter_tooltip(self, k: int, t_ps: float) -> str:
        c = self.timeline.counters[k]
        found = self.counter_value_at(k, t_ps)
        if found is None:
            first = f"no value before {format_time_ps(float(c.time_ps[0]))}" if len(c.time_ps) else "no samples"
            return f"<b>{_html(c.name)}</b><br>{first}"
        j, value = found
        lo, hi = self._counter_scale[k]
        return (f"<b>{_html(c.name)}</b><br>{format_value(value)} since {format_time_ps(float(c.time_ps[j]))}"
                f"<br><span style='color:{Scheme.of().tooltip_secondary()}'>"
                f"range {format_value(lo)} to {format_value(hi)}</span>")

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        if self._fitted is not None:
            self.fit(*self._fitted)
        else:
            self._clamp()
        self.content_height_changed.emit(self.content_height())
        self.set_scroll(self.scroll_y)

    # ------------------------------------------------------------ painting

    def lane_pixels(self, lane: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """ARGB pixels of one lane row, and the wide events drawn (global
        indices) with their pixel extents."""
        tl = self.timeline
        index = tl.lane_index(lane)
        row = np.zeros(width, np.uint32)
        occupied, first = index.first_in_pixels(self.t0, self.ps_per_px, width)
        events = first[occupied] + index.base
        kinds = tl.kind[events]
        if self.highlight is not None:
            hit = _isin_sorted(events, self.highlight)
            row[occupied] = np.where(hit, self._colors[kinds], self._dimmed[kinds])
        else:
            row[occupied] = self._colors[kinds]
        t1 = self.t0 + width * self.ps_per_px
        if self.highlight is not None:
            # Highlighted events hidden behind a neighbour's pixel still show.
            a, b = np.searchsorted(self.highlight, [index.base, index.base + len(index.start)])
            hl = self.highlight[a:b]
            hl = hl[(tl.start_ps[hl] >= self.t0) & (tl.start_ps[hl] < t1)]
            row[((tl.start_ps[hl] - self.t0) / self.ps_per_px).astype(np.int64)] = self._colors[tl.kind[hl]]
        wide = index.wide(self.t0, t1, self.ps_per_px * WIDE_PIXELS) + index.base
        x0 = np.clip(np.floor((tl.start_ps[wide] - self.t0) / self.ps_per_px), 0, width).astype(np.int64)
        x1 = np.clip(np.ceil((tl.start_ps[wide] + tl.duration_ps[wide] - self.t0) / self.ps_per_px), 0, width).astype(
            np.int64
        )
        x1 = np.maximum(x1, np.minimum(x0 + 1, width))
        lengths = x1 - x0
        if len(wide):
            colors = self._colors[tl.kind[wide]]
            if self.highlight is not None:
                colors = np.where(_isin_sorted(wide, self.highlight), colors, self._dimmed[tl.kind[wide]])
            which = np.repeat(np.arange(len(wide)), lengths)
            pos = np.arange(len(which)) - np.repeat(np.cumsum(lengths) - lengths, lengths) + x0[which]
            row[pos] = colors[which]
            edged = lengths >= 4
            row[x0[edged]] = _darker(colors[edged])
        return row, wide, np.stack([x0, x1], axis=1) if len(wide) else np.zeros((0, 2), np.int64)

    def counter_pixels(self, k: int, width: int, background: int = 0) -> np.ndarray:
        """ARGB pixels (COUNTER_H x width; `background` where nothing is drawn)
        of counter k's step-line area chart over the visible time, scaled to
        its whole-trace min..max. Per pixel column: the range from the value
        in effect at its left edge through every sample inside it (the step's
        vertical edge included), as a line over a lighter area."""
        c = self.timeline.counters[k]
        lut = self._counter_columns(kind_color(c.name, self._scheme), background)
        blank = len(lut) - 1
        if not len(c.time_ps):
            return lut[np.full(width, blank)].T
        # Integer edges: float ones would make searchsorted cast every sample time to float.
        edges = np.floor(self.t0 + self.ps_per_px * np.arange(width + 1)).astype(c.time_ps.dtype)
        at = np.searchsorted(c.time_ps, edges, side="right") - 1  # sample in effect at each edge
        lo, hi = np.maximum(at[:-1], 0), at[1:]
        last = max(float(c.time_ps[-1]), float(self._span()[1]))
        shown = (hi >= 0) & (edges[:-1] <= last)
        if not shown.any():
            return lut[np.full(width, blank)].T
        hi = np.maximum(hi, 0)
        a, b = int(lo[0]), int(hi[-1])
        values = self._counter_values[k][a : b + 1]
        # min/max over [lo, hi] of each column: reduceat covers [lo[x], lo[x+1]) = [lo, hi),
        # the last column runs to the end of the slice (= hi); then add v[hi].
        vmin = np.fmin(np.fmin.reduceat(values, lo - a), values[hi - a])
        vmax = np.fmax(np.fmax.reduceat(values, lo - a), values[hi - a])
        shown &= ~np.isnan(vmax)
        low, high = self._counter_scale[k]
        inner = COUNTER_H - 5  # line rows 2 .. COUNTER_H - 4, area down to the baseline COUNTER_H - 2
        if high > low:
            scale = (inner - 1) / (high - low)
            top = (2 + (high - np.nan_to_num(vmax, nan=low)) * scale).round().astype(np.int64)
            bottom = (2 + (high - np.nan_to_num(vmin, nan=low)) * scale).round().astype(np.int64)
        else:
            top = bottom = np.full(width, 2 + inner // 2, np.int64)
        # Each column is one of COUNTER_H**2 shapes (top, bottom): gathered from a table.
        code = np.where(shown, np.clip(top, 0, COUNTER_H - 1) * COUNTER_H + np.clip(bottom, 0, COUNTER_H - 1), blank)
        return lut[code].T

    def _counter_columns(self, color: int, background: int) -> np.ndarray:
        """Every counter column shape for one colour: row top*COUNTER_H + bottom
        holds the line from top to bottom over the area down to the baseline;
        the last row is blank."""
        key = (color, background)
        lut = self._lut_cache.get(key)
        if lut is None:
            fill = _dim(np.array([color], np.uint32), self._background)[0]
            line = (_lighter if self._scheme.dark else _darker)(np.array([color], np.uint32))[0]
            r = np.arange(COUNTER_H)
            top, bottom = r[:, None, None], r[None, :, None]
            inside = (r >= top) & (r <= COUNTER_H - 2)
            shapes = np.where(inside, np.where(r <= bottom, line, fill), np.uint32(background))
            lut = np.concatenate(
                [
                    shapes.reshape(COUNTER_H * COUNTER_H, COUNTER_H).astype(np.uint32),
                    np.full((1, COUNTER_H), background, np.uint32),
                ]
            )
            self._lut_cache[key] = lut
        return lut

    def instant_pixels(self, lane: int, width: int, height: int) -> np.ndarray:
        """ARGB pixels (height x width, 0 = nothing) of an instants lane: a
        downward triangle at every pixel column in which an instant falls
        (the first one's colour; nearer triangles win where they overlap)."""
        row, _, _ = self.lane_pixels(lane, width)
        if not row.any() or height <= 0:
            return np.zeros((max(height, 0), width), np.uint32)
        # dilated[r]: each column's colour spread r pixels to both sides, nearest first.
        dilated = [row]
        for r in range(1, INSTANT_HALF + 1):
            grown = dilated[-1].copy()
            left = np.r_[row[r:], np.zeros(r, np.uint32)]  # colour of the column r to the right
            right = np.r_[np.zeros(r, np.uint32), row[:-r]]  # colour of the column r to the left
            grown = np.where(grown != 0, grown, right)
            grown = np.where(grown != 0, grown, left)
            dilated.append(grown)
        halves = [round(INSTANT_HALF * (height - 1 - y) / max(height - 1, 1)) for y in range(height)]
        out = np.stack([dilated[h] for h in halves])
        filled = out[0] != 0
        out[0, filled] = _darker(out[0, filled])  # a darker top edge reads better on dense rows
        return out

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        scheme = self._follow_palette()
        background = self._background
        p.fillRect(self.rect(), scheme.base)
        tl = self.timeline
        if tl is None or (not len(tl) and not tl.counters):
            p.setPen(scheme.shade(0.53))
            p.drawText(
                self.rect(), Qt.AlignCenter, "No timeline loaded" if tl is None else "This step has no timed nodes"
            )
            p.end()
            return
        width, height = self.lanes_width, self._lanes_height()
        if self._pixels is None or self._pixels.shape != (height, width):
            self._pixels = np.empty((height, width), np.uint32)  # kept: a fresh 2-4 MB buffer per frame faults ~1 ms
        pixels = self._pixels
        pixels.fill(background)
        labels = []
        visible = [r for r in self._rows if r[2] + r[3] > self.scroll_y and r[2] < self.scroll_y + height]
        for kind, ref, y, h in visible:
            top = y - self.scroll_y
            if kind == "header":
                pixels[max(top, 0) : max(top + h, 0)] = argb(scheme.shade(0.075))
                continue
            if kind == "counter":
                y0, y1 = max(top, 0), min(top + h, height)
                if y1 > y0:
                    pixels[y0:y1] = self.counter_pixels(ref, width, background)[y0 - top : y1 - top]
                    if top + h - 1 < height:
                        pixels[top + h - 1] = argb(scheme.shade(0.12))
                continue
            if self._instant_lane[ref]:
                tri = self.instant_pixels(ref, width, h - 3)
                y0, y1 = max(top + 1, 0), min(top + h - 2, height)
                if y1 > y0:
                    part = tri[y0 - top - 1 : y1 - top - 1]
                    band = pixels[y0:y1]
                    band[part != 0] = part[part != 0]
                continue
            row, wide, extent = self.lane_pixels(ref, width)
            y0, y1 = max(top + 1, 0), min(top + h - 1, height)
            if y1 > y0:
                band = pixels[y0:y1]
                filled = row != 0
                band[:, filled] = row[filled]
            labels.append((top, wide, extent))
        self._image = QImage(pixels.data, width, height, width * 4, QImage.Format_ARGB32)
        p.drawImage(GUTTER_W, RULER_H, self._image)
        p.setClipRect(GUTTER_W, RULER_H, width, height)
        self._draw_labels(p, labels)
        self._draw_step_markers(p)
        self._draw_selection(p, visible)
        self._draw_flows(p)
        p.setClipping(False)
        self._draw_gutter(p, visible)
        self._draw_ruler(p)
        p.end()

    def _draw_step_markers(self, p: QPainter) -> None:
        """Step boundaries as dashed lines (those in view, if not too dense to read)."""
        marks = self.timeline.markers_ps
        right = self.t0 + self.lanes_width * self.ps_per_px
        a, b = np.searchsorted(marks, [self.t0, right])
        if b <= a or b - a > self.lanes_width // 4:
            return
        p.setPen(QPen(self._scheme.shade(0.62, 160), 1, Qt.DashLine))
        for t in marks[a:b].tolist():
            x = GUTTER_W + (t - self.t0) / self.ps_per_px
            p.drawLine(QPointF(x, RULER_H), QPointF(x, self.height()))

    def _draw_labels(self, p: QPainter, labels) -> None:
        tl = self.timeline
        p.setFont(self.label_font)
        fm = QFontMetrics(self.label_font)
        ink, faint, dark = QColor("#111"), self._scheme.shade(0.7), self._scheme.dark
        for top, wide, extent in labels:
            for i, (x0, x1) in zip(wide.tolist(), extent.tolist()):
                w = x1 - x0
                if w < LABEL_MIN_PX:
                    continue
                text = fm.elidedText(tl.kinds[tl.kind[i]], Qt.ElideRight, w - 6)
                if text and text != "…":
                    # Dark text on the fills; on a dark palette an event dimmed by a highlight is dark too.
                    dimmed = dark and self.highlight is not None and not _isin_sorted(np.array([i]), self.highlight)[0]
                    p.setPen(faint if dimmed else ink)
                    p.drawText(
                        QRectF(GUTTER_W + x0 + 3, RULER_H + top, w - 6, LANE_H), Qt.AlignVCenter | Qt.AlignLeft, text
                    )

    def _draw_selection(self, p: QPainter, visible) -> None:
        tl = self.timeline
        if self.range is not None:
            a, b = self.range
            xa, xb = GUTTER_W + (a - self.t0) / self.ps_per_px, GUTTER_W + (b - self.t0) / self.ps_per_px
            fill = QColor(self._scheme.highlight)
            fill.setAlpha(40 if not self._scheme.dark else 70)
            p.fillRect(QRectF(xa, RULER_H, max(xb - xa, 1), self.height()), fill)
            p.setPen(QPen(self._scheme.highlight, 1))
            p.drawLine(QPointF(xa, RULER_H), QPointF(xa, self.height()))
            p.drawLine(QPointF(xb, RULER_H), QPointF(xb, self.height()))
        if self.selected >= 0:
            lane = tl.lane_of(self.selected)
            for kind, ref, y, h in visible:
                if kind == "lane" and ref == lane:
                    s = float(tl.start_ps[self.selected])
                    xa = GUTTER_W + (s - self.t0) / self.ps_per_px
                    p.setPen(QPen(self._scheme.text, 2))
                    p.setBrush(Qt.NoBrush)
                    top = RULER_H + y - self.scroll_y
                    if self._instant_lane[lane]:
                        x, half = math.floor(xa) + 0.5, INSTANT_HALF + 1.5
                        p.drawPolygon(
                            QPolygonF([QPointF(x - half, top), QPointF(x + half, top), QPointF(x, top + h - 1)])
                        )
                    else:
                        w = max(float(tl.duration_ps[self.selected]) / self.ps_per_px, 2.0)
                        p.drawRect(QRectF(xa, top, w, h))

    def event_anchor(self, i: int) -> tuple[float, float, bool]:
        """Widget position of event i's start at its lane's middle (its
        group header's middle when the group is folded) and whether the lane
        row is shown."""
        tl = self.timeline
        lane = tl.lane_of(i)
        x = GUTTER_W + (float(tl.start_ps[i]) - self.t0) / self.ps_per_px
        y = int(self._lane_y[lane])
        if y < 0:
            return x, RULER_H + int(self._header_y[tl.lane_group[lane]]) - self.scroll_y + HEADER_H / 2, False
        return x, RULER_H + y - self.scroll_y + LANE_H / 2, True

    def flow_segments(self) -> list[tuple[float, float, float, float, str, bool, int, int]]:
        """The selected event's flows as drawn: (x0, y0, x1, y1, category,
        head shown, src, dst) in widget coordinates, clipped to the lanes
        area; flows entirely off screen are left out."""
        tl = self.timeline
        if tl is None or tl.flows is None or self.selected < 0 or not len(self._selected_flows):
            return []
        f = tl.flows
        rect = (GUTTER_W, RULER_H, GUTTER_W + self.lanes_width, RULER_H + self._lanes_height())
        out = []
        for k in self._selected_flows.tolist():
            src, dst = int(f.src[k]), int(f.dst[k])
            if not (0 <= src < len(tl) and 0 <= dst < len(tl)):
                continue
            x0, y0, _ = self.event_anchor(src)
            x1, y1, _ = self.event_anchor(dst)
            clipped = _clip_segment(x0, y0, x1, y1, *rect)
            if clipped is None:
                continue
            cx0, cy0, cx1, cy1 = clipped
            head = abs(cx1 - x1) < 0.5 and abs(cy1 - y1) < 0.5
            cat = f.categories[f.category[k]] if 0 <= f.category[k] < len(f.categories) else ""
            out.append((cx0, cy0, cx1, cy1, cat, head, src, dst))
        return out

    def _draw_flows(self, p: QPainter) -> None:
        segments = self.flow_segments()
        if not segments:
            return
        p.setRenderHint(QPainter.Antialiasing, True)
        tl = self.timeline
        for x0, y0, x1, y1, cat, head, src, dst in segments:
            color = flow_color(cat, self._scheme)
            # The other end's outline, so the partner is easy to spot.
            other = dst if src == self.selected else src
            ox, oy, shown = self.event_anchor(other)
            if shown:
                w = max(float(tl.duration_ps[other]) / self.ps_per_px, 2.0)
                p.setPen(QPen(color, 2))
                p.setBrush(Qt.NoBrush)
                p.drawRect(QRectF(ox, oy - LANE_H / 2, w, LANE_H))
            a, b = QPointF(x0, y0), QPointF(x1, y1)
            p.setPen(QPen(self._scheme.shade(0, 200), 4, Qt.SolidLine, Qt.RoundCap))
            p.drawLine(a, b)
            p.setPen(QPen(color, 1.6, Qt.SolidLine, Qt.RoundCap))
            p.drawLine(a, b)
            p.setBrush(color)
            p.drawEllipse(a, 2.5, 2.5)
            if head:
                length = math.hypot(x1 - x0, y1 - y0)
                if length > 0.5:
                    ux, uy = (x1 - x0) / length, (y1 - y0) / length
                    size = 9.0
                    bx, by = x1 - ux * size, y1 - uy * size
                    p.setPen(QPen(color, 1))
                    p.drawPolygon(QPolygonF([b, QPointF(bx - uy * 4, by + ux * 4), QPointF(bx + uy * 4, by - ux * 4)]))
        p.setRenderHint(QPainter.Antialiasing, False)

    def _draw_gutter(self, p: QPainter, visible) -> None:
        tl, scheme = self.timeline, self._scheme
        p.fillRect(0, RULER_H, GUTTER_W, self.height(), mix(scheme.base, scheme.window, 0.3))
        p.setPen(scheme.shade(0.13))
        p.drawLine(GUTTER_W - 1, RULER_H, GUTTER_W - 1, self.height())
        fm = QFontMetrics(self.font())
        for kind, ref, y, h in visible:
            top = RULER_H + y - self.scroll_y
            if kind == "header":
                p.fillRect(0, top, GUTTER_W, h, scheme.shade(0.075))
                x, mid = 8, top + h / 2
                arrow = (
                    [QPointF(x, mid - 4), QPointF(x + 7, mid), QPointF(x, mid + 4)]
                    if ref in self.collapsed
                    else [QPointF(x - 1, mid - 3), QPointF(x + 7, mid - 3), QPointF(x + 3, mid + 3)]
                )
                p.setBrush(scheme.shade(0.67))
                p.setPen(Qt.NoPen)
                p.drawPolygon(QPolygonF(arrow))
                p.setPen(scheme.shade(0.87))
                lanes = len(tl.lanes_of_group(ref))
                text = f"{tl.groups[ref] or '(unnamed device)'}  ·  {lanes} lane{'s' if lanes != 1 else ''}"
                counters = len(self._counters_of.get(ref, ()))
                if counters:
                    text += f", {counters} counter{'s' if counters != 1 else ''}"
                p.drawText(
                    QRectF(20, top, self.width() - 24, h),
                    Qt.AlignVCenter | Qt.AlignLeft,
                    fm.elidedText(text, Qt.ElideMiddle, self.width() - 24),
                )
            elif kind == "counter":
                p.setPen(scheme.shade(0.12))
                p.drawLine(0, top + h - 1, GUTTER_W - 1, top + h - 1)
                p.setPen(scheme.shade(0.73))
                p.drawText(
                    QRectF(20, top + 2, GUTTER_W - 24, h / 2),
                    Qt.AlignVCenter | Qt.AlignLeft,
                    fm.elidedText(tl.counters[ref].name, Qt.ElideRight, GUTTER_W - 24),
                )
                lo, hi = self._counter_scale[ref]
                p.setFont(self.label_font)
                p.setPen(scheme.shade(0.47))
                p.drawText(
                    QRectF(20, top + h / 2, GUTTER_W - 24, h / 2 - 2),
                    Qt.AlignVCenter | Qt.AlignLeft,
                    QFontMetrics(self.label_font).elidedText(
                        f"{format_value(lo)} to {format_value(hi)}", Qt.ElideRight, GUTTER_W - 24
                    ),
                )
                p.setFont(self.font())
            else:
                p.setPen(scheme.shade(0.73))
                name = tl.lane_names[ref]
                if self._instant_lane[ref] and name.endswith(" instants"):
                    # Keep the suffix: the thread's name above reads the same when elided.
                    suffix = " instants"
                    name = fm.elidedText(
                        name[: -len(suffix)], Qt.ElideRight, GUTTER_W - 24 - fm.horizontalAdvance(suffix)
                    )
                    name = name + suffix if name else suffix.strip()
                p.drawText(
                    QRectF(20, top, GUTTER_W - 24, h),
                    Qt.AlignVCenter | Qt.AlignLeft,
                    fm.elidedText(name, Qt.ElideRight, GUTTER_W - 24),
                )

    def _draw_ruler(self, p: QPainter) -> None:
        scheme = self._scheme
        p.fillRect(0, 0, self.width(), RULER_H, scheme.shade(0.04))
        p.setPen(scheme.shade(0.27))
        p.drawLine(0, RULER_H - 1, self.width(), RULER_H - 1)
        step = nice_step(90 * self.ps_per_px)
        first = math.ceil(self.t0 / step) * step
        p.setPen(scheme.shade(0.8))
        t = first
        right = self.t0 + self.lanes_width * self.ps_per_px
        while t <= right:
            x = GUTTER_W + (t - self.t0) / self.ps_per_px
            p.drawLine(QPointF(x, RULER_H - 8), QPointF(x, RULER_H - 1))
            p.drawText(QPointF(x + 3, RULER_H - 10), _tick_label(t, step))
            t += step
        p.drawText(
            QRectF(6, 0, GUTTER_W - 8, RULER_H),
            Qt.AlignVCenter | Qt.AlignLeft,
            f"{format_time_ps(self.ps_per_px * self.lanes_width)} shown",
        )

    # ------------------------------------------------------------ input

    def wheelEvent(self, event) -> None:
        delta = event.angleDelta()
        if event.modifiers() & Qt.ShiftModifier:
            self.set_scroll(self.scroll_y - (delta.y() or delta.x()) // 2)
        elif abs(delta.x()) > abs(delta.y()):
            self.pan(-delta.x() / 2)
        elif delta.y():
            self.zoom(ZOOM_STEP ** (delta.y() / 120), event.position().x() - GUTTER_W)
        event.accept()

    def mousePressEvent(self, event) -> None:
        if event.button() != Qt.LeftButton:
            return
        pos = event.position()
        selecting = pos.y() < RULER_H or bool(event.modifiers() & Qt.ShiftModifier)
        self._press = (pos, self.t0, self.scroll_y, selecting, False)

    def mouseMoveEvent(self, event) -> None:
        pos = event.position()
        if self._press is not None:
            start, t0, scroll, selecting, moved = self._press
            if not moved and (pos - start).manhattanLength() < 4:
                return
            self._press = (start, t0, scroll, selecting, True)
            if selecting:
                self.range = tuple(sorted((self.x_to_ps(start.x()), self.x_to_ps(pos.x()))))
                self.update()
            else:
                self.t0 = t0 - (pos.x() - start.x()) * self.ps_per_px
                self.set_scroll(int(scroll - (pos.y() - start.y())))
                self._view_changed()
            return
        row = self.row_at(pos.y())
        if row is not None and row[0] == "counter" and pos.x() >= GUTTER_W and self.timeline is not None:
            t = self.x_to_ps(pos.x())
            found = self.counter_value_at(row[1], t)
            key = ("counter", row[1], None if found is None else found[0])
            if key != self._hover:
                self._hover = key
                QToolTip.showText(event.globalPosition().toPoint(), self.counter_tooltip(row[1], t), self)
            return
        i = self.event_at(pos.x(), pos.y())
        if i != self._hover:
            self._hover = i
            if i >= 0:
                QToolTip.showText(event.globalPosition().toPoint(), self.event_summary(i), self)
            else:
                QToolTip.hideText()

    def mouseReleaseEvent(self, event) -> None:
        if event.button() != Qt.LeftButton or self._press is None:
            return
        start, _, _, selecting, moved = self._press
        self._press = None
        pos = event.position()
        if moved:
            if selecting and self.range is not None:
                self.range_selected.emit(*self.range)
            return
        row = self.row_at(pos.y())
        if row is not None and row[0] == "header":
            self.toggle_group(row[1])
            return
        if pos.y() < RULER_H:
            return
        self.select_event(self.event_at(pos.x(), pos.y()))

    def keyPressEvent(self, event) -> None:
        key = event.key()
        if key == Qt.Key_W:
            self.zoom(ZOOM_STEP**2, self._key_anchor())
        elif key == Qt.Key_S:
            self.zoom(ZOOM_STEP**-2, self._key_anchor())
        elif key == Qt.Key_A:
            self.pan(-self.lanes_width * PAN_FRACTION)
        elif key == Qt.Key_D:
            self.pan(self.lanes_width * PAN_FRACTION)
        elif key == Qt.Key_F:
            self.fit_selection()
        elif key in (Qt.Key_0, Qt.Key_Home):
            self.reset_zoom()
        elif key == Qt.Key_Escape and (self.range is not None or self.selected >= 0):
            self.clear_selection()
        elif key == Qt.Key_BracketRight:
            self.follow_flow(outgoing=True)
        elif key == Qt.Key_BracketLeft:
            self.follow_flow(outgoing=False)
        else:
            super().keyPressEvent(event)

    def _key_anchor(self) -> float | None:
        pos = self.mapFromGlobal(self.cursor().pos())
        return pos.x() - GUTTER_W if self.rect().contains(pos) and pos.x() > GUTTER_W else None

    def event_summary(self, i: int) -> str:
        tl = self.timeline
        duration = float(tl.duration_ps[i])
        when = (
            f"start {format_time_ps(float(tl.start_ps[i]))}, duration {format_time_ps(duration)}"
            if duration
            else f"instant at {format_time_ps(float(tl.start_ps[i]))}"
        )
        summary = f"<b>{_html(tl.kinds[tl.kind[i]])}</b><br>{_html(tl.names[i])}<br>{when}"
        if tl.flows is not None and i == self.selected and len(self._selected_flows):
            summary += f"<br><span style='color:{Scheme.of().tooltip_secondary()}'>] / [ follow its flows</span>"
        return summary


def _instant_lanes(tl: Timeline) -> np.ndarray:
    """Lanes drawn as instants: named "... instants" (or in a group of
    instants) and holding only zero-duration events."""
    named = np.array(
        [
            name.endswith("instants") or tl.groups[g].endswith("instants")
            for name, g in zip(tl.lane_names, tl.lane_group.tolist())
        ],
        bool,
    )
    if not named.any():
        return named
    timed = np.r_[0, np.cumsum(tl.duration_ps > 0)]
    return named & (timed[tl.lane_offsets[1:]] == timed[tl.lane_offsets[:-1]])


def _clip_segment(
    x0: float, y0: float, x1: float, y1: float, left: float, top: float, right: float, bottom: float
) -> tuple[float, float, float, float] | None:
    """The part of a segment inside a rectangle (Liang-Barsky), or None."""
    dx, dy = x1 - x0, y1 - y0
    lo, hi = 0.0, 1.0
    for p_, q_ in ((-dx, x0 - left), (dx, right - x0), (-dy, y0 - top), (dy, bottom - y0)):
        if p_ == 0:
            if q_ < 0:
                return None
            continue
        r = q_ / p_
        if p_ < 0:
            lo = max(lo, r)
        else:
            hi = min(hi, r)
        if lo > hi:
            return None
    return x0 + lo * dx, y0 + lo * dy, x0 + hi * dx, y0 + hi * dy


def format_value(v: float) -> str:
    """A counter value: integers with thousands separators, others with 6 significant digits."""
    if not math.isfinite(v):
        return str(v)
    if float(v).is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return f"{v:.6g}"


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _isin_sorted(values: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    if not len(sorted_set):
        return np.zeros(len(values), bool)
    k = np.searchsorted(sorted_set, values)
    return sorted_set[np.minimum(k, len(sorted_set) - 1)] == values


def _tick_label(t_ps: float, step_ps: float) -> str:
    """A tick's time in the unit of the step, with the decimals the step needs."""
    for size, unit in ((10**12, "s"), (10**9, "ms"), (10**6, "us"), (10**3, "ns"), (1, "ps")):
        if step_ps >= size or unit == "ps":
            decimals = max(0, -math.floor(math.log10(step_ps / size) + 1e-9))
            return f"{t_ps / size:.{decimals}f} {unit}"
    return f"{t_ps:.0f} ps"
