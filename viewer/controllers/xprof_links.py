"""The XProf tables and the Timeline, linked by op name: an op, kernel or
HLO instruction chosen in an XProf table highlights its events in the
Timeline; an event selected in the Timeline selects its row in the XProf
page shown. Both show the same host (computed in the same load)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject

from profscope.viewer.controllers.loading import LoadController
from profscope.widgets.timeline.view import TimelineView
from profscope.widgets.xprof.view import XprofStatsView


class XprofLinks(QObject):
    def __init__(self, loading: LoadController, xprof_view: XprofStatsView, timeline_view: TimelineView,
                 set_status: Callable[..., None], parent: QObject | None = None):
        super().__init__(parent)
        self.loading = loading
        self.xprof_view = xprof_view
        self.timeline_view = timeline_view
        self.set_status = set_status
        self.from_timeline = False  # a row selected for an event: leave the Timeline's highlight (a search) alone
        xprof_view.op_selected.connect(self.show_op)
        timeline_view.canvas.event_selected.connect(self.select_row)

    def _linked(self) -> bool:
        return self.loading.xprof_of is not None and self.loading.xprof_of == self.loading.current_timeline

    def show_op(self, name: str) -> None:
        if self.from_timeline or not self._linked():
            return
        count = self.timeline_view.highlight_op(name)
        self.set_status(f"{name}: {count:,} event(s) highlighted in the Timeline (Enter there steps through them)."
                        if count else f"{name}: the Timeline has no events of that name.")

    def select_row(self, event: int) -> None:
        timeline = self.timeline_view.timeline
        if event < 0 or timeline is None or not self._linked():
            return
        name = timeline.names[event]
        self.from_timeline = True
        try:  # TensorFlow names an op's event "op:type"; its tables name the op
            self.xprof_view.select_op(name) or (":" in name and self.xprof_view.select_op(name.rsplit(":", 1)[0]))
        finally:
            self.from_timeline = False
