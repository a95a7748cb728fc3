"""Table cells drawn with a bar of their share (of the total, or relative to the largest)."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QStyledItemDelegate,
)

from profscope.widgets.palette import Scheme
from profscope.widgets.stats.table_models import StatsTableModel


class ShareDelegate(QStyledItemDelegate):
    """A light bar behind a share (0..1 in the UserRole), then the text."""

    def __init__(self, parent=None, color: str = "#bbdefb", scale: float = 1.0):
        super().__init__(parent)
        self.color = QColor(color)
        self.scale = scale  # the value that fills the cell (1 for a share, 100 for a percent)

    def paint(self, painter, option, index):
        value = index.data(Qt.UserRole)
        if isinstance(value, (int, float)) and value == value and value > 0:
            r = option.rect.adjusted(2, 3, -2, -3)
            painter.fillRect(QRect(r.left(), r.top(), max(1, int(r.width() * min(value / self.scale, 1.0))),
                                   r.height()), Scheme.of(option.widget).tint(self.color))
        super().paint(painter, option, index)


class RelativeDelegate(ShareDelegate):
    """A bar relative to the column's largest value."""

    def paint(self, painter, option, index):
        model = index.model()
        largest = model.column_max[index.column()] if isinstance(model, StatsTableModel) else 0.0
        self.scale = largest if largest > 0 else 1.0
        super().paint(painter, option, index)
