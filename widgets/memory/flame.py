"""A flame graph of live bytes by call stack (models/data/flame.py lays it out):
the root on top and callees below it, as pprof's and speedscope's flame
graphs hang; widths are bytes. Hover a box for its function, file:line, bytes
and share; click to zoom into it (click the root, or Reset, to zoom out);
typing in the search field highlights the boxes whose function or file holds
the text and says how many bytes they cover."""

from __future__ import annotations

import zlib

import numpy as np
from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QCursor, QFontMetrics, QPainter
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from profscope.models.core.units import format_bytes
from profscope.models.data.flame import FlameGraph
from profscope.widgets.palette import Scheme, follow

MIN_BOX_PX = 0.5  # narrower boxes are not drawn (their parent shows their bytes)
TEXT_MIN_PX = 24  # boxes narrower than this get no label


class FlameCanvas(QWidget):
    """Draws the boxes of a FlameGraph between the byte offsets view[0]..view[1]."""

    hovered = Signal(int)  # box under the mouse, -1 for none
    clicked = Signal(int)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.flame: FlameGraph | None = None
        self.view = (0.0, 1.0)
        self.matches: np.ndarray | None = None
        self.setMouseTracking(True)
        self._scheme = Scheme.of(self)
        follow(self, self._apply_scheme)

    def _apply_scheme(self, scheme: Scheme) -> None:
        self._scheme = scheme
        self.update()

    def row_height(self) -> int:
        return QFontMetrics(self.font()).height() + 4

    def set_flame(self, flame: FlameGraph | None) -> None:
        self.flame = flame
        self.matches = None
        self.view = (0.0, float(max(flame.total, 1)) if flame is not None else 1.0)
        rows = (flame.max_depth + 1) if flame is not None else 1
        self.setMinimumHeight(rows * self.row_height() + 2)
        self.update()

    def zoom(self, box: int) -> None:
        f = self.flame
        if f is None or not 0 <= box < len(f) or f.size[box] == 0:
            return
        self.view = (float(f.start[box]), float(f.start[box] + f.size[box]))
        self.update()

    def visible_boxes(self) -> np.ndarray:
        """Indices of the boxes drawn at the current zoom and width."""
        f = self.flame
        if f is None or not len(f):
            return np.zeros(0, np.int64)
        v0, v1 = self.view
        scale = self.width() / max(v1 - v0, 1e-9)
        end = f.start + f.size
        clipped = np.minimum(end, v1) - np.maximum(f.start, v0)
        return np.flatnonzero((clipped * scale >= MIN_BOX_PX) & (f.size > 0))

    def box_rect(self, box: int) -> QRectF:
        f = self.flame
        v0, v1 = self.view
        scale = self.width() / max(v1 - v0, 1e-9)
        x0 = max((float(f.start[box]) - v0) * scale, 0.0)
        x1 = min((float(f.start[box] + f.size[box]) - v0) * scale, float(self.width()))
        h = self.row_height()
        return QRectF(x0, int(f.depth[box]) * h, x1 - x0, h - 1)

    def box_label(self, box: int) -> str:
        f = self.flame
        return f"{f.name(box)}  {format_bytes(int(f.size[box]))}" if box else \
            f"{f.name(0)}: {format_bytes(int(f.size[0]))} live"

    def color(self, box: int) -> QColor:
        """A warm hue from the function's name (the same function, the same colour); searched-for
        boxes in the highlight colour and the rest greyed while a search is on."""
        f, scheme = self.flame, self._scheme
        if self.matches is not None:
            return QColor(scheme.highlight) if self.matches[box] else scheme.shade(0.13)
        if box == 0:
            return scheme.shade(0.27)
        h = zlib.crc32(f.name(box).encode()) & 0xFFFF
        return QColor.fromHsl(10 + h % 45, 170 + h % 50, 150 + (h >> 8) % 40)

    def drawn_text(self, box: int, rect: QRectF, metrics: QFontMetrics) -> str:
        """The box's label as drawn: elided to its width, none in narrow boxes."""
        if rect.width() < TEXT_MIN_PX:
            return ""
        return metrics.elidedText(self.box_label(box), Qt.ElideRight, int(rect.width()) - 6)

    def labels(self) -> dict[int, str]:
        """The text drawn in each visible box (those with any)."""
        metrics = QFontMetrics(self.font())
        out = {box: self.drawn_text(box, self.box_rect(box), metrics) for box in self.visible_boxes().tolist()}
        return {box: text for box, text in out.items() if text}

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), self._scheme.base)
        f = self.flame
        if f is None or not len(f):
            return
        metrics = QFontMetrics(self.font())
        for box in self.visible_boxes().tolist():
            rect = self.box_rect(box)
            fill = self.color(box)
            p.fillRect(rect, fill)
            if text := self.drawn_text(box, rect, metrics):
                p.setPen(QColor(0, 0, 0) if fill.lightnessF() > 0.5 else QColor(255, 255, 255))
                p.drawText(rect.adjusted(3, 0, -3, 0), Qt.AlignVCenter | Qt.AlignLeft, text)
        p.end()

    def box_at(self, x: float, y: float) -> int:
        f = self.flame
        if f is None or not len(f) or self.width() <= 0:
            return -1
        v0, v1 = self.view
        box = f.at(int(y // self.row_height()), v0 + x / self.width() * (v1 - v0))
        return box if box >= 0 and f.size[box] > 0 else -1

    def mouseMoveEvent(self, event) -> None:
        self.hovered.emit(self.box_at(event.position().x(), event.position().y()))

    def mouseReleaseEvent(self, event) -> None:
        if event.button() == Qt.LeftButton:
            self.clicked.emit(self.box_at(event.position().x(), event.position().y()))


class FlameView(QWidget):
    """Search field, readout and the flame canvas."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.search = QLineEdit(placeholderText="Search functions and files (highlights the boxes)",
                                clearButtonEnabled=True)
        self.reset_button = QPushButton("Reset zoom")
        self.readout = QLabel(textInteractionFlags=Qt.TextSelectableByMouse)
        self.readout.setWordWrap(True)
        self.canvas = FlameCanvas(self)
        scroll = QScrollArea(widgetResizable=True, frameShape=QFrame.NoFrame)  # deep stacks scroll down
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarAlwaysOff)
        scroll.setWidget(self.canvas)
        bar = QHBoxLayout()
        bar.addWidget(self.search, 1)
        bar.addWidget(self.reset_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(bar)
        layout.addWidget(self.readout)
        layout.addWidget(scroll, 1)
        self.search.textChanged.connect(self._search)
        self.reset_button.clicked.connect(lambda: self.canvas.zoom(0))
        self.canvas.hovered.connect(self._hovered)
        self.canvas.clicked.connect(self._clicked)
        self._idle = ""

    def set_flame(self, flame: FlameGraph | None, what: str = "") -> None:
        """Shows a flame graph; `what` says what it is of (the moment), for the readout."""
        self.canvas.set_flame(flame)
        if flame is None or flame.total == 0:
            self._idle = f"No live bytes {what}." if flame is not None else "No call stacks in this profile."
        else:
            self._idle = (f"{format_bytes(flame.total)} live {what} in {int((flame.self_size > 0).sum()):,} stacks; "
                          "hover a box for its bytes, click to zoom into it.")
        self._search(self.search.text())

    def describe(self, box: int) -> str:
        f = self.canvas.flame
        share = f.size[box] / f.total * 100 if f.total else 0.0
        where = f.where(box)
        return (f"{f.name(box)}" + (f"  ({where})" if where else "") + f"\n{format_bytes(int(f.size[box]))} "
                f"({int(f.size[box]):,} bytes, {share:.1f}% of {format_bytes(f.total)})"
                + (f", {format_bytes(int(f.self_size[box]))} allocated here" if f.self_size[box] else ""))

    def _hovered(self, box: int) -> None:
        self.readout.setText(self.describe(box) if box >= 0 else self._idle_text())
        if box >= 0:
            QToolTip.showText(QCursor.pos(), self.describe(box), self.canvas)
        else:
            QToolTip.hideText()

    def _clicked(self, box: int) -> None:
        if box >= 0:
            self.canvas.zoom(box)

    def _search(self, text: str) -> None:
        f = self.canvas.flame
        self.canvas.matches = f.matching(text.strip()) if f is not None and text.strip() else None
        self.canvas.update()
        self.readout.setText(self._idle_text())

    def _idle_text(self) -> str:
        f, m = self.canvas.flame, self.canvas.matches
        if f is None or m is None:
            return self._idle
        matched = f.matched_bytes(m)
        share = matched / f.total * 100 if f.total else 0.0
        return (f"“{self.search.text().strip()}”: {int(m.sum()):,} boxes, {format_bytes(matched)} "
                f"({share:.1f}% of {format_bytes(f.total)})")
