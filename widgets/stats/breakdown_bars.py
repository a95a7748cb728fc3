"""One stacked bar per host (compute / non-compute / idle) on a common time scale, so a host
whose GPU waits more stands out."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QRect, QSize, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QToolTip,
    QWidget,
)

from profscope.models.analysis.trace_stats import HostOverview
from profscope.models.core.units import format_time_ps
from profscope.widgets.palette import Scheme
from profscope.widgets.stats.table_models import percent_of

# The temporal breakdown's parts, in bar order: (title, HostOverview field, colour).
BREAKDOWN = (("Compute", "compute_ps", "#1e88e5"), ("Non-compute", "non_compute_ps", "#fb8c00"),
             ("Idle", "idle_ps", "#cfd8dc"))
BREAKDOWN_TINTS = ("#bbdefb", "#ffe0b2", "#e3e8eb")  # the same, light enough to read text over


def breakdown_color(title: str, color: str, scheme: Scheme) -> QColor:
    """A breakdown part's colour on the scheme's background (idle is a tint: dark on a dark palette)."""
    return scheme.tint(color) if title == "Idle" else scheme.data(color)


class BreakdownBars(QWidget):
    """One horizontal stacked bar per host (compute, non-compute, idle) on a
    common time scale, so a host whose GPU waits more stands out."""

    host_clicked = Signal(int)  # index into the rows
    PITCH = 26  # pixels per host row
    BAR = 18

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list[HostOverview] = []
        self.selected = -1
        self.setMouseTracking(True)

    def set_rows(self, rows: list[HostOverview]) -> None:
        self.rows = list(rows)
        self.selected = min(self.selected, len(self.rows) - 1)
        self.setMinimumHeight(self._height())
        self.updateGeometry()
        self.update()

    def set_selected(self, row: int) -> None:
        self.selected = row
        self.update()

    def _height(self) -> int:
        return self._top() + max(len(self.rows), 1) * self.PITCH + 24

    def _top(self) -> int:
        return self.fontMetrics().height() + 12  # the legend

    def sizeHint(self) -> QSize:
        return QSize(600, self._height())

    def minimumSizeHint(self) -> QSize:
        return QSize(200, self._height())

    def _geometry(self) -> tuple[int, int, float]:
        """(left of the bars, their full width, picoseconds per pixel)."""
        fm = self.fontMetrics()
        left = 8 + max([fm.horizontalAdvance(o.host or "host") for o in self.rows] + [40]) + 10
        right = fm.horizontalAdvance("000.0 ms") + 16
        width = max(self.width() - left - right, 20)
        longest = max([o.span_ps for o in self.rows] + [1])
        return left, width, longest / width

    def _segments(self, o: HostOverview, left: int, ps_per_px: float) -> list[tuple[QRect, str, str, int]]:
        """(rectangle, title, colour, ps) of each part of a host's bar."""
        out, x = [], float(left)
        for title, attr, color in BREAKDOWN:
            ps = getattr(o, attr)
            w = ps / ps_per_px
            out.append((QRect(round(x), 0, max(round(x + w) - round(x), 0), self.BAR), title, color, ps))
            x += w
        return out

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        fm = self.fontMetrics()
        scheme = Scheme.of(self)
        palette_text = scheme.window_text
        # Legend.
        x = 8
        for title, _, color in BREAKDOWN:
            p.fillRect(QRect(x, 6, 12, 12), breakdown_color(title, color, scheme))
            p.setPen(palette_text)
            p.drawText(x + 16, 6 + fm.ascent() - 1, title)
            x += 16 + fm.horizontalAdvance(title) + 18
        if not self.rows:
            return
        left, width, ps_per_px = self._geometry()
        top = self._top()
        for i, o in enumerate(self.rows):
            y = top + i * self.PITCH
            if i == self.selected:
                p.fillRect(QRect(0, y - 3, self.width(), self.BAR + 6), scheme.selection_tint())
            p.setPen(palette_text)
            label_rect = QRect(8, y, left - 12, self.BAR)
            p.drawText(label_rect, Qt.AlignVCenter | Qt.AlignLeft, fm.elidedText(o.host or "host", Qt.ElideMiddle,
                                                                               label_rect.width()))
            if o.span_ps <= 0:
                p.setPen(scheme.shade(0.54))
                p.drawText(QRect(left, y, width, self.BAR), Qt.AlignVCenter | Qt.AlignLeft, "no GPU activity")
                continue
            end = left
            for rect, title, color, ps in self._segments(o, left, ps_per_px):
                rect.translate(0, y)
                end = max(end, rect.right() + 1)
                if rect.width() <= 0:
                    continue
                fill = breakdown_color(title, color, scheme)
                p.fillRect(rect, fill)
                text = f"{percent_of(ps, o.span_ps):.0f} %"
                if fm.horizontalAdvance(text) + 6 <= rect.width():
                    p.setPen(scheme.text_on(fill))
                    p.drawText(rect, Qt.AlignCenter, text)
            p.setPen(palette_text)
            p.drawText(QRect(end + 6, y, self.width() - end - 6, self.BAR), Qt.AlignVCenter | Qt.AlignLeft,
                       format_time_ps(o.span_ps))
        # Time axis: 0 and the longest span.
        y = top + len(self.rows) * self.PITCH
        p.setPen(scheme.shade(0.38))
        p.drawLine(left, y, left + width, y)
        for px, ps in ((0, 0.0), (width // 2, width / 2 * ps_per_px), (width, width * ps_per_px)):
            p.drawLine(left + px, y, left + px, y + 4)
            text = "0" if ps == 0 else format_time_ps(ps)
            tx = min(max(left + px - fm.horizontalAdvance(text) // 2, left), left + width - fm.horizontalAdvance(text))
            p.drawText(tx, y + 4 + fm.ascent(), text)

    def row_at(self, y: float) -> int:
        i = int((y - self._top() + 3) // self.PITCH)
        return i if 0 <= i < len(self.rows) and y >= self._top() - 3 else -1

    def mousePressEvent(self, event) -> None:
        i = self.row_at(event.position().y())
        if i >= 0:
            self.set_selected(i)
            self.host_clicked.emit(i)

    def event(self, event) -> bool:
        if event.type() == QEvent.ToolTip:
            text = self._tooltip(event.pos().x(), event.pos().y())
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)

    def _tooltip(self, x: float, y: float) -> str:
        i = self.row_at(y)
        if i < 0:
            return ""
        o = self.rows[i]
        left, _, ps_per_px = self._geometry()
        for rect, title, _, ps in self._segments(o, left, ps_per_px):
            if rect.left() <= x < rect.right() + 1:
                return f"{o.host}: {title.lower()} {format_time_ps(ps)} ({percent_of(ps, o.span_ps):.1f} % of the span)"
        return f"{o.host}: GPU span {format_time_ps(o.span_ps)}"
