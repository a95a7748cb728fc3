"""The Kernels page: GPU activity per name, and the launch parameters of the selected kernel."""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QGroupBox,
    QLabel,
    QVBoxLayout,
)

from profscope.models.analysis.trace_stats import TraceStats
from profscope.models.core.units import format_bytes, format_time_ps
from profscope.widgets.palette import Scheme, follow
from profscope.widgets.stats.share_delegate import ShareDelegate
from profscope.widgets.stats.table_models import KernelModel
from profscope.widgets.stats.table_page import TablePage

# What a launch parameter is called in the panel under the kernel table.
LAUNCH_TITLES = {"grid": "Grid", "block": "Block", "registers per thread": "Registers per thread",
                 "shared memory": "Shared memory", "est. achieved occupancy %": "Est. achieved occupancy"}


class KernelsPage(TablePage):
    noun = "kernels"

    def __init__(self, parent=None):
        super().__init__(KernelModel(), "Filter kernels by name", with_types=True, parent=parent)
        self.model.setParent(self)
        self.stats: TraceStats | None = None
        self.table.setItemDelegateForColumn(8, ShareDelegate(self.table))
        self.table.sortByColumn(4, Qt.DescendingOrder)
        self.details = QLabel(wordWrap=True, textFormat=Qt.RichText)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.details.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.details.setMinimumHeight(self.details.fontMetrics().height() * 5)
        box = QGroupBox("Selected kernel")
        inner = QVBoxLayout(box)
        inner.addWidget(self.details)
        self.layout_.addWidget(box)
        self.table.selectionModel().currentRowChanged.connect(lambda current, _: self._show_row(current.row()))
        self.model.modelReset.connect(lambda: self._show_row(-1))
        follow(self, lambda _scheme: self._show_row(self.table.currentIndex().row()))

    def set_stats(self, stats: TraceStats | None) -> None:
        """Shows new stats, keeping the selected kernel (host and name) when it is still there."""
        row = self.table.currentIndex().row()
        key = (self.model.value(row, 0), self.model.value(row, 1)) if 0 <= row < self.model.rowCount() else None
        self.stats = stats
        self.model.set_stats(stats)
        self.set_hosts(stats.hosts if stats is not None else [])
        if key is not None and stats is not None:
            k = stats.kernels
            same = [i for i in range(len(k)) if k.name[i] == key[1] and k.host[i] == key[0]]
            shown = self.model.shown_row(same[0]) if same else -1
            if shown >= 0:
                self.table.selectRow(shown)

    def _show_row(self, row: int) -> None:
        s = self.stats
        if s is None or not 0 <= row < self.model.rowCount():
            self.details.setText(f"<span style='color:{Scheme.of(self).shade(0.54).name()}'>"
                                 "Select a kernel to see its launch parameters.</span>")
            return
        i = self.model.source_row(row)
        k = s.kernels
        esc = lambda text: html.escape(str(text))
        head = (f"<b>{esc(k.name[i])}</b><br>{esc(k.type[i])}{' on ' + esc(k.host[i]) if k.host[i] else ''}: "
                f"{int(k.count[i]):,} × mean {format_time_ps(float(k.mean_ps[i]))}, total "
                f"{format_time_ps(float(k.total_ps[i]))} ({100 * s.kernels.share[i]:.1f} % of the host's GPU time)")
        params = s.launch.get(i)
        if params is None:
            body = (f"Launch parameters are read from the file for the kernels with the largest total time "
                    f"(the top {s.launch_rows:,} here); this one is not among them.")
        elif not params:
            body = "No launch parameters recorded (memory copies and sets have none)."
        else:
            body = "Launch parameters (first launch): " + " · ".join(
                f"{esc(LAUNCH_TITLES.get(key, key))} <b>{esc(_launch_value(key, v))}</b>" for key, v in params.items())
        self.details.setText(f"{head}<br>{body}")


def _launch_value(key: str, value: str) -> str:
    if key == "shared memory" and value.isdigit():
        return format_bytes(int(value))
    if key.endswith("%"):
        return f"{value} %"
    return value
