"""The Operators page: cpu_op per name."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
)

from profscope.models.analysis.trace_stats import TraceStats
from profscope.widgets.stats.share_delegate import RelativeDelegate
from profscope.widgets.stats.table_models import OpModel
from profscope.widgets.stats.table_page import TablePage


class OperatorsPage(TablePage):
    noun = "operators"

    def __init__(self, parent=None):
        super().__init__(OpModel(), "Filter operators by name", with_types=False, parent=parent)
        self.model.setParent(self)
        self.stats: TraceStats | None = None
        for c in (3, 6):  # host total, device total
            self.table.setItemDelegateForColumn(c, RelativeDelegate(self.table))
        self.table.sortByColumn(3, Qt.DescendingOrder)
        self.by_shape = QCheckBox("Split by input shape")
        self.by_shape.setToolTip("One row per operator and input shape (Kineto's Input Dims, recorded with "
                                 "record_shapes=True)")
        self.by_shape.toggled.connect(self._split)
        self.layout_.itemAt(0).layout().insertWidget(3, self.by_shape)
        self._split(False)

    def set_stats(self, stats: TraceStats | None) -> None:
        self.stats = stats
        has_shapes = stats is not None and stats.ops_by_shape is not None
        self.by_shape.setEnabled(has_shapes)
        if not has_shapes and self.by_shape.isChecked():
            self.by_shape.setChecked(False)  # _split shows the new stats
        else:
            self.model.set_stats(stats)
        self.set_hosts(stats.hosts if stats is not None else [])

    def _split(self, on: bool) -> None:
        self.model.by_shape = on
        self.model.set_stats(self.stats)
        self.table.setColumnHidden(OpModel.SHAPE, not on)
        if on:  # shapes are long: as wide as they need, within reason
            self.table.resizeColumnToContents(OpModel.SHAPE)
            self.table.setColumnWidth(OpModel.SHAPE, min(self.table.columnWidth(OpModel.SHAPE), 360))
