"""XProf's op_profile as a page: the tree of programs (or categories) and
their ops with the share of time and bars for FLOP and memory-bandwidth
utilisation; by program or by category, idle time included or not.

set_data takes op_profile's JSON (dict or text); it holds one grouping
(XProf's group_by), with and without idle. Choosing the other grouping
emits group_by_requested("program" | "category") when it is not there.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QStyledItemDelegate,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from profscope.widgets.palette import Scheme
from profscope.widgets.xprof.hlo_page import as_json

GROUPINGS = (("By program", "program"), ("By category", "category"))
UTIL_COLORS = {2: "#c8e6c9", 3: "#bbdefb"}  # FLOP utilisation, memory bandwidth utilisation


class BarDelegate(QStyledItemDelegate):
    """A bar of the 0..1 value in the UserRole behind the text."""

    def __init__(self, color: str, parent=None):
        super().__init__(parent)
        self.color = color

    def paint(self, painter, option, index):
        value = index.data(Qt.UserRole)
        if isinstance(value, (int, float)) and value > 0:
            r = option.rect.adjusted(2, 3, -2, -3)
            width = max(1, int(r.width() * min(float(value), 1.0)))
            painter.fillRect(QRect(r.left(), r.top(), width, r.height()), Scheme.of(option.widget).tint(self.color))
        super().paint(painter, option, index)


def _percent(value: float) -> str:
    return f"{value * 100:.1f} %"


class OpProfilePage(QWidget):
    group_by_requested = Signal(str)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.doc: dict = {}
        self.grouping = QComboBox()
        for label, _key in GROUPINGS:
            self.grouping.addItem(label)
        self.idle = QCheckBox("Include idle time", checked=True)
        self.device = QLabel()
        self.message = QLabel(wordWrap=True)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Name", "Time", "FLOP utilisation", "Memory bandwidth utilisation"])
        self.tree.setAlternatingRowColors(True)
        self.tree.setUniformRowHeights(True)
        for column, color in UTIL_COLORS.items():
            self.tree.setItemDelegateForColumn(column, BarDelegate(color, self.tree))
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.Stretch)
        width = self.fontMetrics().horizontalAdvance("Memory bandwidth utilisation") + 40
        for column in (1, 2, 3):
            header.setSectionResizeMode(column, QHeaderView.Fixed)
            header.resizeSection(column, width if column > 1 else width // 2)
        self.grouping.currentIndexChanged.connect(self._render)
        self.idle.toggled.connect(self._render)
        bar = QHBoxLayout()
        bar.addWidget(self.grouping)
        bar.addWidget(self.idle)
        bar.addWidget(self.device, 1)
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addWidget(self.message, 1)
        self.message.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        layout.addWidget(self.tree, 1)

    def op_tables(self) -> list:
        return [(self.tree, lambda: 0)]  # programs, categories and their HLO ops by name

    def set_data(self, data) -> None:
        self.doc = as_json(data) or {}
        if "byCategory" in self.doc and "byProgram" not in self.doc:
            self.grouping.blockSignals(True)
            self.grouping.setCurrentIndex(1)
            self.grouping.blockSignals(False)
        self._render()

    def _root(self) -> tuple[str, dict | None]:
        key = GROUPINGS[self.grouping.currentIndex()][1]
        name = f"by{key.capitalize()}" + ("" if self.idle.isChecked() else "ExcludeIdle")
        return key, self.doc.get(name)

    def _render(self) -> None:
        key, root = self._root()
        self.tree.clear()
        device = self.doc.get("deviceType", "")
        self.device.setText(f"Device: {device}" if device else "")
        if root is None:
            if self.doc:
                self.group_by_requested.emit(key)
            self.message.setText(f"Loading the tree by {key}…")
            self.message.setVisible(True)
            self.tree.setVisible(False)
            return
        children = root.get("children", [])
        total = float(root.get("metrics", {}).get("rawTime", 0) or 0)
        if not children:
            self.message.setText(
                "No ops. XProf's op profile covers the XLA ops of a device (GPU, TPU); this profile is "
                f"{'host-only (CPU)' if device == 'CPU_ONLY' else 'without device ops'}."
            )
            self.message.setVisible(True)
            self.tree.setVisible(False)
            return
        self.message.setVisible(False)
        self.tree.setVisible(True)
        for child in children:
            self.tree.addTopLevelItem(self._item(child, total))
        self.tree.expandToDepth(0)

    def _item(self, node: dict, total: float) -> QTreeWidgetItem:
        metrics = node.get("metrics", {})
        time = float(metrics.get("rawTime", 0) or 0)
        # XProf's front end: the node's (uncapped) FLOP utilisation is stored times its share of the root's time.
        share = time / total if total else 0.0
        flops = float(metrics.get("uncappedFlops", metrics.get("flops", 0)) or 0) / share if share else 0.0
        bandwidth = max([float(v) for v in metrics.get("bandwidthUtils", [])] or [0.0])
        item = QTreeWidgetItem(
            [node.get("name", ""), _percent(time / total) if total else "", _percent(flops), _percent(bandwidth)]
        )
        item.setData(2, Qt.UserRole, flops)
        item.setData(3, Qt.UserRole, bandwidth)
        for column in (1, 2, 3):
            item.setTextAlignment(column, Qt.AlignRight | Qt.AlignVCenter)
        for child in node.get("children", []):
            item.addChild(self._item(child, total))
        return item
