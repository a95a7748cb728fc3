"""Jumps from Query rows: a row's slice or time in the timeline, or its
memory moment, loading that host's data first when it is not shown."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QTabWidget, QTreeWidget

from profscope.models.repository.registry import MEMORY_PROFILE, TRACE_VIEWER
from profscope.viewer import session_tree
from profscope.viewer.controllers.loading import LoadController
from profscope.viewer.session_tree import TOOL_TITLES
from profscope.widgets.memory.view import MemoryView
from profscope.widgets.timeline.view import TimelineView


class JumpController(QObject):
    """Shows a query row's place through `loading` (what it shows, and loads);
    a jump waiting for its load is applied by `apply`, which the window calls
    when a load is shown."""

    def __init__(self, loading: LoadController, tabs: QTabWidget, memory_view: MemoryView,
                 timeline_view: TimelineView, tree: QTreeWidget, set_status: Callable[..., None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self.loading = loading
        self.tabs = tabs
        self.memory_view = memory_view
        self.timeline_view = timeline_view
        self.tree = tree
        self.set_status = set_status
        self.pending = None  # (session, host, Jump) of a query row, shown once its data is loaded

    def show_jump(self, jump) -> None:
        tool = MEMORY_PROFILE if jump.kind == "memory" else TRACE_VIEWER
        place = self.place(jump.session, jump.host, tool)
        if isinstance(place, str):
            self.set_status(place, error=True)
            return
        session, host = place
        loading = self.loading
        self.pending = (session, host, jump)
        if jump.kind == "memory":
            if loading.current == (session, host) and not loading.busy and self.memory_view.data is not None:
                self.apply()
            else:
                loading.load_memory(session, host)
        elif (
            loading.current_timeline == (session, host)
            and loading.current_step == jump.tag
            and not loading.busy
            and self.timeline_view.timeline is not None
        ):
            self.apply()
        else:
            loading.load_timeline(session, host, jump.tag)

    def place(self, session: str | None, host: str | None, tool: str) -> tuple[str, str] | str:
        """The (session, host) a row names (the location's only one where it
        names none), or why there is none."""
        repo = self.loading.repo
        what = TOOL_TITLES[tool].lower()
        sessions = [s.name for s in repo.enum_sessions() if tool in s.tools] if repo is not None else []
        if session is None and len(sessions) == 1:
            session = sessions[0]
        if session not in sessions:
            return (
                f"No session {session!r} with a {what} here."
                if session is not None
                else f"The row has no session column and {len(sessions)} sessions have a {what}: select session too."
            )
        hosts = repo.hosts_with(session, tool)
        if host is None and len(hosts) == 1:
            host = hosts[0]
        if host not in hosts:
            return (
                f"{session} has no host {host!r} with a {what}."
                if host is not None
                else f"The row has no host column and {session} has {len(hosts)} hosts: select host too."
            )
        return session, host

    def apply(self) -> None:
        """Shows the pending jump if its data is what was just loaded (a later
        load by the user replaces it)."""
        if self.pending is None:
            return
        (session, host, jump), self.pending = self.pending, None
        loading = self.loading
        if jump.kind == "memory":
            if loading.current != (session, host):
                return
            self.tabs.setCurrentWidget(self.memory_view)
            problem = self.memory_view.show_moment(jump.allocator, jump.snapshot, jump.time_ns)
        else:
            if loading.current_timeline != (session, host) or loading.current_step != jump.tag:
                return
            self.tabs.setCurrentWidget(self.timeline_view)
            problem = (
                self.timeline_view.show_event(jump.event)
                if jump.kind == "slice"
                else self.timeline_view.show_time(jump.start_ns, jump.dur_ns)
            )
        tool = MEMORY_PROFILE if jump.kind == "memory" else TRACE_VIEWER
        item = session_tree.find_item(self.tree, (session, host, tool))
        if item is not None:  # the tree's current item: what the jump showed
            self.tree.setCurrentItem(item)
        if problem:
            self.set_status(problem, error=True)
