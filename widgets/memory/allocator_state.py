"""A CUDA memory snapshot's allocator state, event by event (PyTorch
memory_viz's Allocator State History), and its cached segments over the
events (the Active Cached Segment Timeline).

The state view: the event list (every event of the device's trace), a
slider with previous / next buttons (and the arrow keys, Home, End, Page
Up/Down), the event shown, and the segments as bars packed into rows as
memory_viz packs them (by size, small first), each block coloured by its
state: allocated (two shades, so neighbours show apart), awaiting free,
the rounding a block carries past its requested size, and free space. The
canvas paints only the rows in view, each row a line of pixel codes worked
out per pixel column with numpy (the block under each column's centre; each
block's first column marked, so no block vanishes), then one image.
"""

from __future__ import annotations

import numpy as np
from PySide6.QtCore import QAbstractListModel, QModelIndex, QPoint, Qt, Signal
from PySide6.QtGui import QFont, QImage, QKeyEvent, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import (
    QAbstractItemView,
    QAbstractScrollArea,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSlider,
    QSplitter,
    QTableView,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from profscope.models.analysis.allocator_state import (
    AWAITING_FREE,
    AllocatorState,
    History,
    SegmentBands,
    top_frame,
    user_frames,
)
from profscope.models.core.units import byte_unit, format_bytes
from profscope.widgets.palette import Scheme, argb, follow
from profscope.widgets.plot_axes import nice_step

# Pixel codes of the segment rows, and their colours (a free code draws nothing: the background).
BACKGROUND, FREE, ALLOCATED_A, ALLOCATED_B, AWAITING, ROUNDING, BORDER, POOL_BORDER = range(8)
CODE_COLORS = {ALLOCATED_A: "#4e79a7", ALLOCATED_B: "#7ea6d4", AWAITING: "#e15759", ROUNDING: "#f28e2c",
               POOL_BORDER: "#af7aa1"}
LEGEND = (("allocated", ALLOCATED_A), ("awaiting free", AWAITING), ("rounding (size past requested)", ROUNDING),
          ("free in segment", FREE))
BAND_COLORS = ("#4e79a7", "#f28e2c", "#e15759", "#76b7b2", "#59a14f", "#edc949", "#af7aa1", "#ff9da7", "#9c755f",
               "#bab0ab")
ROW_HEIGHT = 22  # at least; rows grow to fill the view (up to MAX_ROW_HEIGHT) when there are few
MAX_ROW_HEIGHT = 64
GAP = 3  # pixels between segments on a row, and above and below a row's bars
MARGIN = 8


def event_text(history: History, k: int) -> str:
    """One line for event k, as memory_viz lists it, with the allocation's top frame."""
    e = history.event(k)
    stream = f"  stream {e['stream']}" if e["stream"] else ""
    if e["action"] == "oom":
        return (f"#{k:,}  OOM: requested {format_bytes(e['size'])}, CUDA has {format_bytes(e['device_free'])} "
                f"free{stream}")
    if e["action"] in ("snapshot", "annotate"):
        return f"#{k:,}  {e['action']}"
    frame = top_frame(history.snapshot, e["frames"]) if e["frames"] >= 0 else ""
    return (f"#{k:,}  {e['action']:<14} {e['address']:#x}  {format_bytes(e['size'])}{stream}"
            + (f"  {frame}" if frame else ""))


def stack_text(history: History, tb: int, missing: str = "(no stack: made before recording began)") -> str:
    return "\n".join(user_frames(history.snapshot, tb)) if tb >= 0 else missing


def pool_text(history: History, pool: int) -> str:
    return f", private pool ({history.snapshot.strings[pool]})" if pool else ""


class EventModel(QAbstractListModel):
    """The device's events, one line each, made when shown (a trace can hold millions)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.history: History | None = None

    def set_history(self, history: History | None) -> None:
        self.beginResetModel()
        self.history = history
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() or self.history is None else len(self.history)

    def data(self, index, role=Qt.DisplayRole):
        if self.history is None or not index.isValid():
            return None
        if role == Qt.DisplayRole:
            return event_text(self.history, index.row())
        if role == Qt.ToolTipRole:
            e = self.history.event(index.row())
            return stack_text(self.history, e["frames"], "(the event has no stack)")
        return None


class SegmentCanvas(QAbstractScrollArea):
    """The segments at one event, as rows of bars; hover names the block or free run under the mouse."""

    hovered = Signal(str)
    step = Signal(int)  # arrow keys: -1 / +1 (Page keys: -10 / +10)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.history: History | None = None
        self.state: AllocatorState | None = None
        self.setMouseTracking(True)
        self.viewport().setMouseTracking(True)
        self.setFocusPolicy(Qt.StrongFocus)
        self.setMinimumHeight(120)
        self._layout_for: tuple | None = None
        self.order = np.zeros(0, np.int64)  # segments in drawing order (by size, then address)
        self.row = np.zeros(0, np.int64)  # per segment (state order), its row
        self.x = np.zeros(0, np.float64)  # per segment, its left edge in pixels
        self.width_px = np.zeros(0, np.float64)
        self.scale = 1.0  # pixels per byte
        self.rows = 0
        self.row_height = ROW_HEIGHT
        self.drawn: dict[int, int] = {}  # pixel code -> pixels painted in the last frame (tests, benchmarks)

    def set_state(self, history: History | None, state: AllocatorState | None) -> None:
        self.history, self.state = history, state
        self._layout_for = None
        self.viewport().update()

    # ------------------------------------------------------------ layout

    def _layout(self) -> None:
        """memory_viz's packing: segments by size (then address), a row filled up to the largest one's width."""
        s = self.state
        width = max(self.viewport().width() - 2 * MARGIN, 50)
        key = (id(s), width)
        if self._layout_for == key or s is None:
            return
        self._layout_for = key
        n = len(s.seg_size)
        self.order = np.lexsort((s.seg_address, s.seg_size))
        largest = int(s.seg_size.max()) if n else 1
        self.scale = width / max(largest, 1)
        self.row = np.zeros(n, np.int64)
        self.x = np.zeros(n, np.float64)
        self.width_px = s.seg_size * self.scale
        row, at = 0, 0.0
        for i in self.order.tolist():  # a loop over segments (few), not blocks
            w = self.width_px[i]
            if at > 0 and at + w > width + 0.5:
                row, at = row + 1, 0.0
            self.row[i], self.x[i] = row, MARGIN + at
            at += w + GAP
        self.rows = row + 1 if n else 0
        height = self.viewport().height()
        self.row_height = int(min(max((height - 2 * MARGIN) // max(self.rows, 1), ROW_HEIGHT), MAX_ROW_HEIGHT))
        self.verticalScrollBar().setRange(0, max(self.rows * self.row_height + 2 * MARGIN - height, 0))
        self.verticalScrollBar().setPageStep(height)
        self.verticalScrollBar().setSingleStep(self.row_height)

    def resizeEvent(self, event) -> None:
        self._layout_for = None
        super().resizeEvent(event)

    def describe_at(self, pos: QPoint) -> str:
        self._layout()
        return self.describe(pos)

    # ------------------------------------------------------------ painting

    def row_codes(self, row: int, width: int) -> tuple[np.ndarray, np.ndarray]:
        """Pixel codes of one row's bars (width columns) and of its top/bottom edges."""
        s = self.state
        codes = np.full(width, BACKGROUND, np.uint8)
        edge = np.full(width, BACKGROUND, np.uint8)
        segs = np.flatnonzero(self.row == row)
        if s is None or not len(segs):
            return codes, edge
        segs = segs[np.argsort(self.x[segs])]
        x0 = self.x[segs]
        x1 = x0 + np.maximum(self.width_px[segs], 1.0)
        cols = np.arange(width) + 0.5
        which = np.searchsorted(x0, cols, "right") - 1
        inside = which >= 0
        inside[inside] = cols[inside] < x1[which[inside]]
        seg_of_col = segs[np.maximum(which, 0)]
        codes[inside] = FREE
        # the byte under each column's centre, then the block holding it (blocks sorted by address per segment)
        c = np.flatnonzero(inside)
        seg_c = seg_of_col[c]
        offset = (cols[c] - self.x[seg_c]) / self.scale
        addr = s.seg_address[seg_c].astype(np.float64) + offset
        b_addr = s.address.astype(np.float64)
        k = np.searchsorted(b_addr, addr, "right") - 1
        ok = k >= 0
        ok[ok] = s.segment[k[ok]] == seg_c[ok]
        kk = k[ok]
        rel = addr[ok] - b_addr[kk]
        in_req = rel < s.requested[kk]
        in_block = rel < s.size[kk]
        block_code = np.where(s.state[kk] == AWAITING_FREE, AWAITING, np.where(kk % 2 == 0, ALLOCATED_A, ALLOCATED_B))
        codes[c[ok]] = np.where(in_req, block_code, np.where(in_block, ROUNDING, FREE)).astype(np.uint8)
        # each block shows at least at its first column
        first = np.flatnonzero(np.isin(s.segment, segs))
        if len(first):
            fx = (self.x[s.segment[first]] + (s.address[first] - s.seg_address[s.segment[first]]).astype(
                np.float64) * self.scale).astype(np.int64)
            fine = (fx >= 0) & (fx < width)
            fcode = np.where(s.state[first] == AWAITING_FREE, AWAITING,
                             np.where(first % 2 == 0, ALLOCATED_A, ALLOCATED_B)).astype(np.uint8)
            codes[fx[fine]] = fcode[fine]
        # edges: the outline (a private pool's in its own colour), and each segment's left and right column
        pool = s.seg_pool[seg_of_col] > 0
        edge[inside] = np.where(pool[inside], POOL_BORDER, BORDER)
        for xs, in ((x0,), (x1 - 1,)):
            px = np.clip(xs.astype(np.int64), 0, width - 1)
            codes[px] = np.where(s.seg_pool[segs] > 0, POOL_BORDER, BORDER)
        return codes, edge

    def paintEvent(self, event) -> None:
        self._layout()
        vp = self.viewport()
        w, h = vp.width(), vp.height()
        scheme = Scheme.of(self)
        painter = QPainter(vp)
        painter.fillRect(vp.rect(), scheme.base)
        if self.state is None or not self.rows:
            painter.setPen(scheme.secondary())
            painter.drawText(vp.rect(), Qt.AlignCenter, "No segments at this event.")
            self.drawn = {}
            return
        lut = np.zeros(8, np.uint32)
        lut[BACKGROUND] = argb(scheme.base)
        lut[FREE] = argb(scheme.shade(0.06))
        lut[BORDER] = argb(scheme.shade(0.45))
        for code, color in CODE_COLORS.items():
            lut[code] = argb(scheme.data(color))
        image = np.full((h, w), BACKGROUND, np.uint8)
        top = self.verticalScrollBar().value() - MARGIN
        rh = self.row_height
        first, last = max(top // rh, 0), min((top + h) // rh + 1, self.rows)
        for row in range(first, last):
            y0 = row * rh - top + GAP
            y1 = y0 + rh - 2 * GAP
            codes, edge = self.row_codes(row, w)
            lo, hi = max(y0, 0), min(y1, h)
            if hi > lo:
                image[lo:hi] = codes
            for y in (y0, y1 - 1):
                if 0 <= y < h:
                    image[y] = np.where(edge != BACKGROUND, edge, image[y])
        self.drawn = dict(zip(*np.unique(image, return_counts=True)))
        self.drawn = {int(k): int(v) for k, v in self.drawn.items()}
        pixels = np.ascontiguousarray(lut[image])
        qimage = QImage(pixels.data, w, h, 4 * w, QImage.Format_RGB32)
        painter.drawImage(0, 0, qimage)
        painter.end()

    # ------------------------------------------------------------ hover, keys

    def describe(self, pos: QPoint) -> str:
        """What is under a point of the viewport: a block, a free run or a segment, with sizes and the stack."""
        s, history = self.state, self.history
        if s is None or history is None or not self.rows:
            return ""
        y = pos.y() + self.verticalScrollBar().value() - MARGIN
        row = y // self.row_height
        segs = np.flatnonzero(self.row == row)
        x = pos.x() + 0.5
        hit = segs[(self.x[segs] <= x) & (x < self.x[segs] + np.maximum(self.width_px[segs], 1.0))]
        if not len(hit):
            return ""
        i = int(hit[0])
        address = int(s.seg_address[i]) + int((x - self.x[i]) / self.scale)
        seg_line = (f"segment {int(s.seg_address[i]):#x}: {format_bytes(int(s.seg_size[i]))}, "
                    f"{format_bytes(int(s.seg_allocated[i]))} allocated, {format_bytes(int(s.seg_free[i]))} free "
                    f"(largest free run {format_bytes(int(s.seg_largest_free[i]))}), stream {int(s.seg_stream[i])}"
                    f"{pool_text(history, int(s.seg_pool[i]))}")
        a, b = int(s.seg_block_start[i]), int(s.seg_block_start[i + 1])
        k = a + int(np.searchsorted(s.address[a:b], np.uint64(address), "right")) - 1
        if a <= k < b and address < int(s.address[k]) + int(s.size[k]):
            state = "awaiting free (freed, waiting for its stream: record_stream)" if s.state[k] == AWAITING_FREE \
                else "allocated"
            rounding = int(s.size[k] - s.requested[k])
            return (f"block {int(s.address[k]):#x}: {format_bytes(int(s.requested[k]))} requested"
                    + (f" (+{format_bytes(rounding)} rounding)" if rounding > 0 else "")
                    + f", {state}\n{seg_line}\n{stack_text(history, int(s.frames[k]))}")
        lo = int(s.address[k]) + int(s.size[k]) if a <= k < b else int(s.seg_address[i])
        hi = int(s.address[k + 1]) if k + 1 < b else int(s.seg_address[i]) + int(s.seg_size[i])
        stack = stack_text(history, int(s.seg_frames[i]))
        return f"free (inactive) {lo:#x}: {format_bytes(hi - lo)}\n{seg_line}\n{stack}"

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        text = self.describe(event.position().toPoint())
        self.hovered.emit(text)
        if text:
            QToolTip.showText(event.globalPosition().toPoint(), text.split("\n", 2)[0], self)
        else:
            QToolTip.hideText()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        steps = {Qt.Key_Right: 1, Qt.Key_Left: -1, Qt.Key_PageDown: 10, Qt.Key_PageUp: -10}
        if event.key() in steps:
            self.step.emit(steps[event.key()])
            return
        super().keyPressEvent(event)


class AllocatorStateView(QWidget):
    """The allocator's state at a chosen event of one device's trace."""

    event_changed = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.history: History | None = None
        self.current = -1
        self.events = EventModel(self)
        # A table, not a QListView: a list view lays out every row (a Python rowCount call each) on a scroll, seconds
        # for a trace of millions of events; a table's rows all have the header's one height.
        self.list = QTableView()
        self.list.setModel(self.events)
        self.list.setFont(QFont("monospace"))
        self.list.horizontalHeader().hide()
        self.list.horizontalHeader().setStretchLastSection(True)
        self.list.verticalHeader().hide()
        self.list.verticalHeader().setSectionResizeMode(QHeaderView.Fixed)
        self.list.verticalHeader().setDefaultSectionSize(self.list.fontMetrics().height() + 4)
        self.list.setShowGrid(False)
        self.list.setWordWrap(False)
        self.list.setSelectionBehavior(QAbstractItemView.SelectRows)
        self.list.setSelectionMode(QAbstractItemView.SingleSelection)
        self.prev_button = QPushButton("◀ Previous")
        self.next_button = QPushButton("Next ▶")
        self.prev_button.setToolTip("The event before (Left / Up)")
        self.next_button.setToolTip("The event after (Right / Down)")
        self.slider = QSlider(Qt.Horizontal)
        self.position = QLabel()
        self.event_label = QLabel(textInteractionFlags=Qt.TextSelectableByMouse)
        self.event_label.setStyleSheet("font-family: monospace; font-weight: bold")
        self.totals = QLabel(wordWrap=True, textInteractionFlags=Qt.TextSelectableByMouse)
        self.legend = QLabel()
        self.canvas = SegmentCanvas()
        self.details = QPlainTextEdit(readOnly=True)
        self.details.setFont(QFont("monospace"))
        self.details.setPlaceholderText("Hover over a block to see its size, state and stack.")
        bar = QHBoxLayout()
        bar.addWidget(self.prev_button)
        bar.addWidget(self.next_button)
        bar.addWidget(self.slider, 1)
        bar.addWidget(self.position)
        right = QWidget()
        right_layout = QVBoxLayout(right)
        right_layout.setContentsMargins(0, 0, 0, 0)
        right_layout.addWidget(self.event_label)
        right_layout.addWidget(self.totals)
        right_layout.addWidget(self.legend)
        right_layout.addWidget(self.canvas, 1)
        upper = QSplitter(Qt.Horizontal)
        upper.addWidget(self.list)
        upper.addWidget(right)
        upper.setSizes([360, 840])
        lower = QSplitter(Qt.Vertical)
        lower.addWidget(upper)
        lower.addWidget(self.details)
        lower.setSizes([520, 140])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(lower, 1)
        self.prev_button.clicked.connect(lambda: self.step(-1))
        self.next_button.clicked.connect(lambda: self.step(1))
        self.slider.valueChanged.connect(self.select)
        self.list.selectionModel().currentChanged.connect(lambda index, _old: self.select(index.row()))
        self.canvas.step.connect(self.step)
        self.canvas.hovered.connect(self._hovered)
        follow(self, self._restyle)

    def _restyle(self, scheme: Scheme) -> None:
        swatches = []
        for name, code in LEGEND:
            color = scheme.data(CODE_COLORS[code]).name() if code in CODE_COLORS else scheme.shade(0.06).name()
            swatches.append(f"<span style='background:{color}; border: 1px solid {scheme.shade(0.45).name()}'>"
                            f"&nbsp;&nbsp;&nbsp;&nbsp;</span>&nbsp;{name}")
        pool = scheme.data(CODE_COLORS[POOL_BORDER]).name()
        swatches.append(f"<span style='color:{pool}'>▮</span>&nbsp;private pool outline")
        self.legend.setText("&nbsp;&nbsp;&nbsp;".join(swatches))

    def set_history(self, history: History | None) -> None:
        self.history = history
        self.events.set_history(history)
        n = len(history) if history is not None else 0
        self.slider.blockSignals(True)
        self.slider.setRange(-1 if n == 0 else 0, max(n - 1, 0))
        self.slider.blockSignals(False)
        self.current = -2
        self.select(n - 1)  # memory_viz opens on the last event: the snapshot itself

    def step(self, by: int) -> None:
        if self.history is not None and len(self.history):
            self.select(min(max(self.current + by, 0), len(self.history) - 1))

    def select(self, k: int) -> None:
        history = self.history
        if history is None:
            self.canvas.set_state(None, None)
            self.event_label.setText("")
            self.totals.setText("")
            return
        if k == self.current:
            return
        self.current = k
        state = history.state(k)
        self.canvas.set_state(history, state)
        n = len(history)
        self.slider.blockSignals(True)
        self.slider.setValue(k)
        self.slider.blockSignals(False)
        if k >= 0:
            index = self.events.index(k)
            if self.list.currentIndex() != index:
                self.list.selectionModel().blockSignals(True)
                self.list.setCurrentIndex(index)
                self.list.selectionModel().blockSignals(False)
                self.list.scrollTo(index)
        self.position.setText(f"event {k + 1:,} of {n:,}" if n else "no events recorded")
        self.prev_button.setEnabled(k > 0)
        self.next_button.setEnabled(0 <= k < n - 1)
        self.event_label.setText(event_text(history, k) if k >= 0 else "The snapshot's segments (no trace recorded)")
        t = state.totals()
        self.totals.setText(
            f"Reserved {format_bytes(t['reserved'])} in {t['segments']:,} segments; allocated "
            f"{format_bytes(t['allocated'])} in {t['blocks']:,} blocks; awaiting free "
            f"{format_bytes(t['awaiting_free'])}; free inside segments {format_bytes(t['free'])} (largest run "
            f"{format_bytes(t['largest_free'])}); "
            f"rounding {format_bytes(t['internal'])}"
            + (f"; {state.outside:,} blocks outside every segment left out" if state.outside else ""))
        self.details.setPlainText(self._event_stack())
        self.event_changed.emit(k)

    def _hovered(self, text: str) -> None:
        if text:
            self.details.setPlainText(text)
        else:
            self.details.setPlainText(self._event_stack())

    def _event_stack(self) -> str:
        if self.history is None or self.current < 0:
            return ""
        return stack_text(self.history, self.history.event(self.current)["frames"], "(the event has no stack)")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        keys = {Qt.Key_Home: 0, Qt.Key_End: -1}
        if self.history is not None and event.key() in keys and len(self.history):
            self.select(keys[event.key()] % len(self.history))
            return
        super().keyPressEvent(event)


class SegmentTimeline(QWidget):
    """Reserved segments over the events as stacked bands (memory_viz's cached segment timeline); hover names the
    segment, a click picks that event for the allocator state. Each pixel column shows the stack at the event of
    its span with the most reserved, as a column of colour codes (numpy), all columns one image, kept until the
    size or the data change."""

    event_picked = Signal(int)
    hovered = Signal(str)
    LEFT, BOTTOM, TOP, RIGHT = 72, 24, 8, 8

    def __init__(self, parent=None):
        super().__init__(parent)
        self.bands: SegmentBands | None = None
        self.marker: int | None = None
        self._image: tuple | None = None  # (key, QImage, pixels kept alive)
        self.setMouseTracking(True)
        self.setMinimumHeight(160)

    def set_bands(self, bands: SegmentBands | None) -> None:
        self.bands = bands
        self._image = None
        self.update()

    def mark(self, k: int | None) -> None:
        self.marker = k
        self.update()

    def _scales(self) -> tuple[float, float, int, int]:
        b = self.bands
        w = max(self.width() - self.LEFT - self.RIGHT, 1)
        h = max(self.height() - self.BOTTOM - self.TOP, 1)
        n = len(b.history) if b is not None else 0
        peak = max(b.peak if b is not None else 0, 1)
        return w / (n + 1), h / peak, n, peak  # x: events -1..n-1 (a column each); y: bytes

    def _plot_image(self, scheme: Scheme) -> QImage:
        b = self.bands
        w = max(self.width() - self.LEFT - self.RIGHT, 1)
        h = max(self.height() - self.BOTTOM - self.TOP, 1)
        key = (id(b), w, h, scheme.key)
        if self._image is not None and self._image[0] == key:
            return self._image[1]
        sx, sy, n, _ = self._scales()
        edges = np.minimum((np.arange(w + 1) / sx).astype(np.int64) - 1, n)  # events -1..n-1 per column
        events = b.peak_events(edges)
        address = b.history.p_address
        color = (((address >> np.uint64(12)) * np.uint64(2654435761)) >> np.uint64(7)) % np.uint64(len(BAND_COLORS))
        codes = np.zeros((h, w), np.uint8)  # 0: background, 1 + i: BAND_COLORS[i]
        for x, k in enumerate(events.tolist()):
            live, _, top = b.stack_at(k)
            if not len(live):
                continue
            px = np.minimum(np.rint(top * sy).astype(np.int64), h)
            heights = np.diff(np.concatenate(([0], px)))
            column = np.repeat((color[live] + 1).astype(np.uint8), heights)
            codes[h - len(column):, x] = column[::-1]
        lut = np.array([argb(scheme.base)] + [argb(scheme.data(c)) for c in BAND_COLORS], np.uint32)
        pixels = np.ascontiguousarray(lut[codes])
        image = QImage(pixels.data, w, h, 4 * w, QImage.Format_RGB32)
        self._image = (key, image, pixels)
        return image

    def paintEvent(self, event) -> None:
        scheme = Scheme.of(self)
        painter = QPainter(self)
        painter.fillRect(self.rect(), scheme.base)
        b = self.bands
        if b is None or not len(b.order):
            painter.setPen(scheme.secondary())
            painter.drawText(self.rect(), Qt.AlignCenter, "No segments reserved.")
            return
        sx, sy, n, peak = self._scales()
        base_y = self.height() - self.BOTTOM
        painter.drawImage(self.LEFT, self.TOP, self._plot_image(scheme))
        # axes: bytes on the left, events below
        painter.setPen(scheme.shade(0.45))
        painter.drawLine(self.LEFT, self.TOP, self.LEFT, base_y)
        painter.drawLine(self.LEFT, base_y, self.width() - self.RIGHT, base_y)
        unit, _ = byte_unit(peak)
        step = nice_step(peak / unit / 4) * unit
        fm = painter.fontMetrics()
        for v in np.arange(0, peak + 1, step):
            y = int(base_y - v * sy)
            painter.drawLine(self.LEFT - 4, y, self.LEFT, y)
            text = format_bytes(float(v))
            painter.drawText(self.LEFT - 6 - fm.horizontalAdvance(text), y + fm.ascent() // 2, text)
        for v in np.linspace(0, max(n - 1, 0), min(n, 6)).astype(np.int64) if n else []:
            x = int(self.LEFT + (v + 1.5) * sx)
            painter.drawLine(x, base_y, x, base_y + 4)
            text = f"#{int(v):,}"
            tx = min(x - fm.horizontalAdvance(text) // 2, self.width() - 2 - fm.horizontalAdvance(text))
            painter.drawText(tx, base_y + 4 + fm.ascent(), text)
        painter.drawText(self.LEFT + 6, self.TOP + fm.ascent(), "reserved")
        if self.marker is not None:
            x = int(self.LEFT + (self.marker + 1.5) * sx)
            pen = QPen(scheme.text)
            pen.setDashPattern([3, 3])
            painter.setPen(pen)
            painter.drawLine(x, self.TOP, x, base_y)
        painter.end()

    def _at(self, pos: QPoint) -> tuple[int, int]:
        """(event, segment range) under a point; range -1 when none."""
        b = self.bands
        if b is None:
            return -1, -1
        sx, sy, n, _ = self._scales()
        k = min(max(int((pos.x() - self.LEFT) / sx) - 1, -1), n - 1)
        y = (self.height() - self.BOTTOM - pos.y()) / sy
        return k, b.at(k, y)

    def describe(self, pos: QPoint) -> str:
        k, p = self._at(pos)
        b = self.bands
        if b is None or p < 0:
            return ""
        h = b.history
        birth, death = int(h.p_birth[p]), int(h.p_death[p])
        made = f"reserved at event #{birth:,} ({h.event(birth)['action']})" if birth >= 0 else \
            "reserved before recording began"
        gone = f"released at event #{death:,} ({h.event(death)['action']})" if death < len(h) else \
            "still reserved at the snapshot"
        return (f"segment {int(h.p_address[p]):#x}: {format_bytes(int(h.p_size[p]))}, stream {int(h.p_stream[p])}"
                f"{pool_text(h, int(h.p_pool[p]))}; {made}, {gone}\nreserved at #{k:,}: "
                f"{format_bytes(int(b.reserved[k + 1]))}\n{stack_text(h, int(h.p_frames[p]))}")

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        text = self.describe(event.position().toPoint())
        self.hovered.emit(text)
        if text:
            QToolTip.showText(event.globalPosition().toPoint(), text.split("\n", 1)[0], self)

    def mousePressEvent(self, event: QMouseEvent) -> None:
        k, _ = self._at(event.position().toPoint())
        if self.bands is not None and k >= 0:
            self.event_picked.emit(k)


class SegmentTimelineView(QWidget):
    """The cached segment timeline with a line naming what the mouse is over."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.timeline = SegmentTimeline()
        self.info = QLabel(wordWrap=True, textInteractionFlags=Qt.TextSelectableByMouse)
        self.info.setStyleSheet("font-family: monospace")
        self.info.setText("Hover over a band to see its segment; click to see the allocator's state at that event.")
        self.info.setMinimumHeight(3 * self.info.fontMetrics().height())
        self.info.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.timeline, 1)
        layout.addWidget(self.info)
        self.timeline.hovered.connect(lambda text: text and self.info.setText(text))
