"""XProf's hlo_stats as a page: the HLO ops in a sortable table (XProf's
rank first), filtered by a text over their names, categories and framework
ops or by category, share bars on the time shares. set_data takes
hlo_stats's DataTable (dict or JSON text)."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from profscope.widgets.xprof.table_page import DataTablePage

NO_OPS = (
    "No HLO ops. XProf lists the XLA ops that ran on a device (GPU, TPU); in this profile XLA ran on the "
    "host (CPU), whose time is in the framework op statistics."
)
SHARE_COLUMNS = ("total_self_time_percent", "cumulative_total_self_time_percent")


def as_json(data):
    return json.loads(data) if isinstance(data, (bytes, str)) else data


class HloPage(DataTablePage):
    def __init__(self, parent=None):
        super().__init__("HLO ops", "hlo_op_name", "category", shares=SHARE_COLUMNS, parent=parent,
                         share_scale=100.0, searched=("hlo_op_name", "category", "tf_op_name"), noun="ops")
        self.filter.setPlaceholderText("Filter ops, categories, framework ops")
        self.filter.setMinimumWidth(self.filter.fontMetrics().horizontalAdvance(self.filter.placeholderText()) + 40)
        self.message = QLabel(NO_OPS, wordWrap=True)
        self.message.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.layout().addWidget(self.message, 1)

    def set_data(self, data) -> None:
        self.set_table(as_json(data))  # in XProf's order (by self time, ties by its rank) until a click
        has_rows = bool(self.model.total_rows)
        self.message.setVisible(not has_rows)
        self.view.setVisible(has_rows)
        self.filter.setEnabled(has_rows)
        self.types.setEnabled(has_rows)
