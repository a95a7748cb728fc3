"""XProf's step-time graph: one stacked bar per step, split into device
compute, host compute, kernel launch, input, ... (the step table's columns),
on a common millisecond scale."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QPainter, QPen
from PySide6.QtWidgets import QToolTip, QWidget

from profscope.models.core.units import time_unit
from profscope.widgets.palette import Scheme

# The step table's time columns (by id) in stacking order, with colours.
PARTS = (
    ("deviceComputeTimeMs", "#1e88e5"),
    ("deviceToDeviceTimeMs", "#00897b"),
    ("deviceCollectivesTimeMs", "#6d4c41"),
    ("hostComputeTimeMs", "#43a047"),
    ("kernelLaunchTimeMs", "#fdd835"),
    ("infeedTimeMs", "#e53935"),
    ("outfeedTimeMs", "#8e24aa"),
    ("compileTimeMs", "#f4511e"),
    ("otherTimeMs", "#9e9e9e"),
    # TPU hosts' step table (XProf's TPU layout).
    ("tcComputeTimeMs", "#1e88e5"),
    ("scv0ComputeTimeMs", "#5e35b1"),
    ("scv0InfeedTimeMs", "#d81b60"),
    ("tcInfeedTimeMs", "#e53935"),
    ("tcOutfeedTimeMs", "#8e24aa"),
    ("tcIdleTimeMs", "#9e9e9e"),
    ("hostTransferTimeMs", "#fdd835"),
)


class StepChart(QWidget):
    """Stacked bars of a step-time DataTable ({"cols", "rows"})."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.labels: list[str] = []
        self.names: list[str] = []  # the parts' titles
        self.values: list[list[float]] = []  # per step, per part (ms)
        self.tooltips: list[str] = []
        self.setMouseTracking(True)
        self.setMinimumHeight(220)

    def set_table(self, table: dict | None) -> None:
        cols = [c.get("id") for c in (table or {}).get("cols", [])]
        labels = {c.get("id"): c.get("label", c.get("id")) for c in (table or {}).get("cols", [])}
        index = [(cols.index(pid), color) for pid, color in PARTS if pid in cols]
        self.colors = [color for _, color in index]
        self.names = [labels[cols[k]] for k, _ in index]
        rows = [[cell.get("v") if cell else None for cell in r.get("c", [])] for r in (table or {}).get("rows", [])]
        self.labels = [str(r[0]) for r in rows]
        self.values = [[float(r[k] or 0.0) for k, _ in index] for r in rows]
        tip = cols.index("tooltip") if "tooltip" in cols else -1
        self.tooltips = [str(r[tip]) if tip >= 0 else "" for r in rows]
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(600, 260)

    def _legend_rows(self) -> int:
        fm = self.fontMetrics()
        rows, x = 1, 4
        for name in self.names:
            w = fm.horizontalAdvance(name) + 24
            if x + w > self.width():
                rows, x = rows + 1, 4
            x += w
        return rows

    def _plot_rect(self) -> QRectF:
        fm = self.fontMetrics()
        left = fm.horizontalAdvance("9999.9 ms") + 12
        top = (fm.height() + 2) * self._legend_rows() + fm.height()  # the legend, then room for the top label
        return QRectF(left, top, max(self.width() - left - 10, 10), max(self.height() - top - fm.height() - 14, 10))

    def _scale(self) -> float:
        return max((sum(v) for v in self.values), default=0.0) or 1.0

    def axis_labels(self) -> list[str]:
        """The time axis' labels at 0, half and the top, in one unit that suits the top (sub-millisecond GPU steps
        read in us)."""
        top = self._scale()
        size, unit = time_unit(top * 1e9)
        return [f"{top * frac * 1e9 / size:.3g} {unit}" for frac in (0.0, 0.5, 1.0)]

    def paintEvent(self, event) -> None:
        scheme = Scheme.of(self)
        p = QPainter(self)
        p.setRenderHint(QPainter.Antialiasing, False)
        fm = self.fontMetrics()
        # Legend.
        x, y = 4, 4
        for name, color in zip(self.names, self.colors):
            w = fm.horizontalAdvance(name) + 24
            if x + w > self.width():
                x, y = 4, y + fm.height() + 2
            p.fillRect(QRectF(x, y + 3, 12, fm.height() - 6), scheme.data(color))
            p.setPen(self.palette().windowText().color())
            p.drawText(int(x + 16), int(y + fm.ascent()), name)
            x += w
        r = self._plot_rect()
        if not self.values:
            p.drawText(r, Qt.AlignCenter, "No steps")
            return
        top = self._scale()
        p.setPen(QPen(scheme.shade(0.3)))
        for frac, label in zip((0.0, 0.5, 1.0), self.axis_labels()):
            yy = r.bottom() - frac * r.height()
            p.drawLine(int(r.left()), int(yy), int(r.right()), int(yy))
            p.drawText(QRectF(0, yy - fm.height() / 2, r.left() - 6, fm.height()), Qt.AlignRight | Qt.AlignVCenter,
                       label)
        n = len(self.values)
        pitch = r.width() / n
        bar = max(pitch * 0.8, 1.0)
        for i, parts in enumerate(self.values):
            x0 = r.left() + i * pitch + (pitch - bar) / 2
            base = r.bottom()
            for value, color in zip(parts, self.colors):
                h = value / top * r.height()
                if h > 0:
                    p.fillRect(QRectF(x0, base - h, bar, h), scheme.data(color))
                    base -= h
        # Step names under the bars, as many as fit.
        p.setPen(self.palette().windowText().color())
        every = max(1, int((fm.horizontalAdvance(max(self.labels, key=len)) + 8) // max(pitch, 1)) + 1)
        for i in range(0, n, every):
            x0 = r.left() + i * pitch
            p.drawText(QRectF(x0 - pitch * (every - 1) / 2, r.bottom() + 2, pitch * every, fm.height() + 4),
                       Qt.AlignHCenter | Qt.AlignTop, self.labels[i])

    def step_at(self, x: float) -> int:
        r = self._plot_rect()
        if not self.values or not r.left() <= x <= r.right():
            return -1
        return min(int((x - r.left()) / (r.width() / len(self.values))), len(self.values) - 1)

    def mouseMoveEvent(self, event) -> None:
        i = self.step_at(event.position().x())
        if i >= 0 and self.tooltips[i]:
            QToolTip.showText(event.globalPosition().toPoint(), self.tooltips[i], self)
        else:
            QToolTip.hideText()
