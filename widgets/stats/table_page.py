"""A statistics page around one table: the name filter, the host and type pickers, the table."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from profscope.widgets.stats.table_models import KERNEL_TYPES, StatsTableModel

ALL_HOSTS = "All hosts"
ALL_TYPES = "All types"


def stats_table(model: StatsTableModel | QAbstractTableModel, stretch: int = -1) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectRows)
    view.setSelectionMode(QAbstractItemView.SingleSelection)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.setTextElideMode(Qt.ElideMiddle)
    view.verticalHeader().hide()
    view.verticalHeader().setDefaultSectionSize(view.fontMetrics().height() + 8)
    header = view.horizontalHeader()
    header.setHighlightSections(False)
    header.setSectionResizeMode(QHeaderView.Interactive)
    if stretch >= 0:
        header.setSectionResizeMode(stretch, QHeaderView.Stretch)
    return view


# Widest text of a column's kind: columns are sized from this, not by measuring every row.
SAMPLE_TEXT = {"count": "1,000,000", "time": "999.9 ms", "share": "100.0 %", "percent": "100.0 %",
               "type": "COMMUNICATION"}


def size_columns(view: QTableView, model: StatsTableModel, hosts: list[str]) -> None:
    """Column widths from the header and the widest text of each column's kind."""
    fm = view.fontMetrics()
    for c, (title, kind, _) in enumerate(model.COLUMNS):
        if view.horizontalHeader().sectionResizeMode(c) == QHeaderView.Stretch:
            continue
        sample = SAMPLE_TEXT.get(kind, "")
        if c == model.HOST:
            sample = max(hosts + [""], key=fm.horizontalAdvance)
        extra = 26 if kind == "type" else 0  # the colour chip
        view.setColumnWidth(c, max(fm.horizontalAdvance(title) + 28, fm.horizontalAdvance(sample) + 20 + extra, 60))


class TablePage(QWidget):
    """A filter bar (name, host, and for kernels type) over a sortable table."""

    noun = "rows"

    def __init__(self, model: StatsTableModel, placeholder: str, with_types: bool, parent=None):
        super().__init__(parent)
        self.model = model
        self.filter = QLineEdit(placeholderText=placeholder, clearButtonEnabled=True)
        self.host_box = QComboBox(minimumContentsLength=10)
        self.host_box.setSizeAdjustPolicy(QComboBox.AdjustToContents)
        self.type_box = QComboBox()
        self.type_box.addItems([ALL_TYPES, *KERNEL_TYPES])
        self.type_box.setVisible(with_types)
        self.count_label = QLabel()
        self.table = stats_table(model, stretch=model.NAME)
        self.table.setSortingEnabled(True)
        self._debounce = QTimer(self, singleShot=True, interval=150)
        self._debounce.timeout.connect(self._apply_text)
        self.filter.textChanged.connect(lambda _text: self._debounce.start())
        self.filter.returnPressed.connect(self._apply_text)
        self.host_box.currentIndexChanged.connect(self._apply_boxes)
        self.type_box.currentIndexChanged.connect(self._apply_boxes)
        self.model.modelReset.connect(self._update_count)
        self.model.layoutChanged.connect(self._update_count)

        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.filter, 3)
        bar.addWidget(self.host_box)
        bar.addWidget(self.type_box)
        bar.addWidget(self.count_label, 1)
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(4, 4, 4, 4)
        self.layout_.addLayout(bar)
        self.layout_.addWidget(self.table, 1)

    def set_hosts(self, hosts: list[str]) -> None:
        current = self.host_box.currentText()
        self.host_box.blockSignals(True)
        self.host_box.clear()
        self.host_box.addItems([ALL_HOSTS, *hosts])
        self.host_box.setCurrentText(current if current in hosts else ALL_HOSTS)
        self.host_box.blockSignals(False)
        self.host_box.setVisible(len(hosts) > 1)
        self.table.setColumnHidden(self.model.HOST, len(hosts) <= 1)
        self.model.filter_host = "" if self.host_box.currentIndex() <= 0 else self.host_box.currentText()
        size_columns(self.table, self.model, hosts)

    def _apply_text(self) -> None:
        self._debounce.stop()
        self.model.set_filter(text=self.filter.text())

    def _apply_boxes(self) -> None:
        self.model.set_filter(host="" if self.host_box.currentIndex() <= 0 else self.host_box.currentText(),
                              type_="" if self.type_box.currentIndex() <= 0 else self.type_box.currentText())

    def _update_count(self) -> None:
        shown, total = self.model.rowCount(), self.model.total_rows
        self.count_label.setText(f"{shown:,} of {total:,} {self.noun}" if shown != total else f"{total:,} {self.noun}")
