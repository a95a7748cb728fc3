"""Loading what the session tree asks for: a host's memory profile, or its
timeline (one host or all) with the trace statistics computed from that same
timeline, in the worker; then its tab shows it."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QTabWidget

from profscope.models.analysis import trace_stats
from profscope.models.analysis.allocator_state import prepare_histories
from profscope.models.analysis.xprof.hlo_source import module_names
from profscope.models.analysis.xprof.memory_viewer import memory_viewer_result
from profscope.models.core.task import ProfileError
from profscope.models.data.peak_pyramid import prepare_series
from profscope.models.data.timeline import Timeline
from profscope.models.repository.profile_repository import ProfileRepository
from profscope.models.repository.registry import (
    INPUT_PIPELINE_ANALYZER,
    KERNEL_STATS,
    MEMORY_PROFILE,
    MEMORY_VIEWER,
    OP_PROFILE,
    OP_STATS,
    TIMELINE_TOOLS,
    TRACE_VIEWER,
)
from profscope.viewer.session_tree import ALL_HOSTS, xprof_tools
from profscope.viewer.workers import TaskRunner
from profscope.widgets.memory.view import NO_MEMORY_EVENTS, NOT_LOADED, NOTHING_SHOWN, MemoryView
from profscope.widgets.stats.trace_stats_view import TraceStatsView, describe_range
from profscope.widgets.timeline.view import TimelineView
from profscope.widgets.xprof.view import TOOL_TITLES as XPROF_VIEWS
from profscope.widgets.xprof.view import XprofStatsView

TIMELINE_VIEWS = (TRACE_VIEWER, *TIMELINE_TOOLS, *XPROF_VIEWS)  # tools shown with a loaded timeline


class LoadController(QObject):
    """Loads a (session, host, tool) of the repository in `runner` and shows it
    in the Memory, Timeline or Statistics tab; `shown` follows each load shown."""

    shown = Signal()

    def __init__(self, runner: TaskRunner, tabs: QTabWidget, memory_view: MemoryView, timeline_view: TimelineView,
                 stats_view: TraceStatsView, set_status: Callable[..., None], parent: QObject | None = None,
                 xprof_view: XprofStatsView | None = None, xprof_runner: TaskRunner | None = None):
        super().__init__(parent)
        self.xprof_view = xprof_view  # XProf's tools of xplane hosts, computed with their timeline
        # What an XProf page asks for later (another XLA module, op_profile's other grouping): apart from
        # `runner`, so that it never cancels a load; a newer request cancels the one before.
        self.xprof_runner = xprof_runner or TaskRunner(self)
        self.xprof_asked: tuple[str, str] | None = None  # ("module", name) or ("group_by", key) under way
        if xprof_view is not None:
            xprof_view.module_requested.connect(self.load_module)
            xprof_view.group_by_requested.connect(self.load_op_profile)
            self.xprof_runner.failed.connect(self._xprof_failed)
        self.runner = runner
        self.tabs = tabs
        self.memory_view = memory_view
        self.timeline_view = timeline_view
        self.stats_view = stats_view
        self.set_status = set_status
        self.repo: ProfileRepository | None = None
        self.current: tuple[str, str] | None = None  # (session, host) of the memory tab
        self.current_timeline: tuple[str, str] | None = None  # (session, host) of the timeline tab
        self.current_step = ""  # the step (run metadata tag) of the timeline tab
        self.stats_timeline: Timeline | None = None  # the timeline the Statistics tab was computed from
        self.xprof_of: tuple[str, str] | None = None  # (session, host) whose XProf pages are shown
        self.requested: tuple | None = None  # (session, host, tool) last asked for
        self.status_of: dict = {}  # tab view -> the status line of what it shows
        self.memory_wanted = False  # the Memory tab waits for the load under way to end, then loads its profile
        runner.cancelled.connect(self._cancelled)

    @property
    def busy(self) -> bool:
        return self.runner.busy

    def set_repository(self, repo: ProfileRepository | None) -> None:
        """A newly opened location: a reopened path may hold other data under the same names."""
        self.stats_view.set_stats(None)
        self.stats_timeline = None
        if self.xprof_view is not None:
            self.xprof_view.set_data(None)
        self.xprof_of = None
        self.xprof_runner.cancel()
        self.timeline_view.set_steps([], "")
        self.timeline_view.set_timeline(None)  # the previous location's, even if the new one has none
        self.current_timeline = None
        self.requested = None
        # A reload (or another location) while the Memory tab is up: its profile follows the first load.
        self.memory_wanted = None not in (repo, self.repo) and self.tabs.currentWidget() is self.memory_view
        self.current = None
        self.memory_view.show_empty("Loading…" if self.memory_wanted else NOTHING_SHOWN)
        self.status_of.clear()
        self.repo = repo

    def pick(self, target: tuple) -> None:
        """A tree item's (session, host, tool) was clicked: loads it unless it is what was last asked for
        (a statistics page is shown again)."""
        if self.repo is not None and (tuple(target) != self.requested or target[2] in TIMELINE_VIEWS[1:]):
            self.load(*target)

    def load(self, session: str, host: str, tool: str) -> None:
        if tool not in TIMELINE_VIEWS:
            self.load_memory(session, host)
            return
        if tool in XPROF_VIEWS and self._xprof_tools(session, host):
            if self.xprof_of == (session, host) and not self.runner.busy:
                self.requested = (session, host, tool)
                self.show_xprof(tool)
                return
            if host and host not in self.repo.hosts_with(session, TRACE_VIEWER):
                self.load_xprof_pages(session, host, tool)  # TF 2.2-2.3's per-tool protos: no timeline
                return
            if self.runner.busy and self.requested and tuple(self.requested[:2]) == (session, host):
                self.requested = (session, host, tool)  # shown when its timeline's job ends
                return
        if (
            self.runner.busy
            and self.requested
            and tuple(self.requested[:2]) == (session, host)
            and self.requested[2] in TIMELINE_VIEWS
        ):
            # That timeline is loading (or its statistics are): show this tool when it is there.
            self.requested = (session, host, tool)
            if tool in TIMELINE_TOOLS and self.stats_timeline is not None and self.current_timeline == (session, host):
                self.show_statistics(tool)
            return
        loaded = self.current_timeline == (session, host) and not self.runner.busy
        if loaded and tool in TIMELINE_TOOLS and self.stats_timeline is not None:
            self.requested = (session, host, tool)  # computed with the timeline: just show it
            self.show_statistics(tool)
        elif loaded and tool == TRACE_VIEWER and self.timeline_view.timeline is not None:
            self.requested = (session, host, tool)
            self.tabs.setCurrentWidget(self.timeline_view)
        else:
            self.load_timeline(session, host, show=tool)

    def _has_stats(self, session: str, host: str) -> bool:
        """Whether the repository offers the trace statistics for a host (or all hosts)."""
        info = self.repo.session(session)
        if OP_STATS not in info.tools:  # Profscope's trace statistics (an xplane's kernel_stats is XProf's)
            return False
        return self.repo.combines_hosts(session) if not host else host in self.repo.hosts_with(session, OP_STATS)

    def _xprof_tools(self, session: str, host: str) -> list[str]:
        """XProf's tools the window shows for an xplane host, or all hosts combined (none for a Chrome trace)."""
        return xprof_tools(self.repo, session, host)

    def load_timeline(self, session: str, host: str, step: str = "", show: str = TRACE_VIEWER) -> None:
        """Loads a host's (or all hosts') timeline and, where the source has
        them, its statistics from the same timeline; then shows `show`."""
        repo = self.repo
        self.requested = (session, host, show)
        with_stats = self._has_stats(session, host)
        xprof_tools = self._xprof_tools(session, host) if self.xprof_view is not None else []
        self.xprof_runner.cancel()  # a module asked for on the pages about to be replaced
        self.set_status(f"Loading the timeline of {session} / {host or ALL_HOSTS}…")

        def job(task):
            # XProf's tools read the file the timeline has just decoded: decoded once for both (only then, so a
            # timeline alone does not hold the decoded file while it is built)
            with repo.decoding_once() if xprof_tools else contextlib.nullcontext():
                steps = repo.steps(session, host)
                timeline = repo.step_timeline(session, host, step, task)
                timeline.all_kind_stats  # noqa: B018 -- the op statistics tab's table, not on the GUI thread
                stats = trace_stats.compute(timeline, None, task) if with_stats else None
                xprof = xprof_data(repo, session, host, xprof_tools, task) if xprof_tools else None
            return session, host, steps, step or (steps[0] if steps else ""), timeline, stats, xprof

        self.runner.start(job, self._show_timeline)

    def load_xprof_pages(self, session: str, host: str, tool: str) -> None:
        """XProf's pages of a host that has them without a timeline, then the page of `tool`."""
        repo = self.repo
        self.requested = (session, host, tool)
        tools = self._xprof_tools(session, host)
        self.set_status(f"Loading XProf's tools of {session} / {host}…")

        def job(task):
            return session, host, pages_of_plugin_24(xprof_data(repo, session, host, tools, task))

        self.runner.start(job, self._show_xprof_pages)

    def _show_xprof_pages(self, result) -> None:
        session, host, xprof = result
        if self.xprof_view is None:
            return
        self.xprof_view.set_data(xprof)
        self.xprof_of = (session, host)
        r = self.requested
        self.show_xprof(r[2] if r and tuple(r[:2]) == (session, host) and r[2] in XPROF_VIEWS else XPROF_VIEWS[0])
        self._shown_status((self.xprof_view,), f"{session} / {host}: XProf's tools (no timeline in this session).")

    def load_step(self, step: str) -> None:
        """Another step of the timeline shown."""
        if self.current_timeline:
            self.load_timeline(*self.current_timeline, step)

    def memory_target(self) -> tuple[str, str] | None:
        """The (session, host) whose memory profile the Memory tab shows when
        brought up: the host last asked for (All hosts: the session's first
        host with one); None when it has none."""
        if self.repo is None or not self.requested or len(self.requested) < 3:
            return None
        session, host = self.requested[:2]
        hosts = self.repo.hosts_with(session, MEMORY_PROFILE)
        if host in hosts or (not host and hosts):
            return session, host or hosts[0]
        return None

    def show_memory_tab(self) -> None:
        """The Memory tab was brought up: loads the current host's memory
        profile when none is shown; says why when there is nothing to show."""
        if self.memory_view.data is not None or self.repo is None:
            return
        if self.runner.busy:
            if not (self.requested and self.requested[2] == MEMORY_PROFILE):  # else: that load shows it
                self.memory_wanted = True
                self.memory_view.show_empty("Loading… the memory profile follows what is loading now.")
            return
        target = self.memory_target()
        if target is None:
            where = " / ".join(h for h in (self.requested or ())[:2] if h) if self.requested else ""
            self.memory_view.show_empty(f"{where + ': ' if where else ''}{NO_MEMORY_EVENTS}")
            return
        self.load_memory(*target)

    def _cancelled(self) -> None:
        if self.memory_view.data is None and not self.runner.busy:
            self.memory_wanted = False
            self.memory_view.show_empty(NOTHING_SHOWN)

    def load_memory(self, session: str, host: str) -> None:
        repo = self.repo
        self.requested = (session, host, MEMORY_PROFILE)
        self.memory_wanted = False
        self.set_status(f"Loading memory profile of {session} / {host}…")
        if self.memory_view.data is None:
            self.memory_view.show_empty(f"Loading the memory profile of {session} / {host}…")

        def job(task):
            data = repo.memory_profile(session, host, task)
            # the plot's pyramids and a CUDA snapshot's allocator state history, off the GUI thread
            return session, host, data, prepare_series(data, task), prepare_histories(
                data.cuda_snapshot if data is not None else None, task)

        self.runner.start(job, self._show_memory)

    def load_memory_host(self, host: str) -> None:
        """Another host of the session whose memory profile is shown."""
        if self.current:
            self.load_memory(self.current[0], host)

    def recompute_stats(self, step_range: tuple[int, int] | None) -> None:
        """The Statistics tab for a range of ProfilerSteps (None: the whole
        capture), computed in the worker from the loaded timeline."""
        if self.stats_timeline is None or self.current_timeline is None:
            return
        timeline, (session, host) = self.stats_timeline, self.current_timeline
        self.requested = (session, host, self.stats_view.current_page())
        self.set_status(
            f"Computing the statistics of {session} / {host or ALL_HOSTS} for {describe_range(step_range)}…"
        )
        known = self.stats_view.stats.launch_by_kernel() if self.stats_view.stats is not None else {}
        self.runner.start(
            lambda task: (session, host, timeline, trace_stats.compute(timeline, step_range, task, known_launch=known)),
            self._show_stats,
        )

    def load_module(self, name: str) -> None:
        """memory_viewer of another XLA module of the XProf pages' host, in the worker."""
        self._ask_xprof(("module", name), MEMORY_VIEWER, {"module_name": name})

    def load_op_profile(self, group_by: str) -> None:
        """op_profile grouped the other way ("program" or "category"), in the worker."""
        if self.xprof_asked != ("group_by", group_by) or not self.xprof_runner.busy:
            self._ask_xprof(("group_by", group_by), OP_PROFILE, {"group_by": group_by})

    def _ask_xprof(self, asked: tuple[str, str], tool: str, params: dict[str, str]) -> None:
        if self.xprof_of is None or self.repo is None:
            return
        repo, (session, host) = self.repo, self.xprof_of
        self.xprof_asked = asked

        def job(task):
            if tool == MEMORY_VIEWER:
                return session, host, asked, module_memory(repo, session, host, params["module_name"], task)
            return session, host, asked, json.loads(repo.tool_data(session, tool, host, params, task).output)

        self.xprof_runner.start(job, self._show_xprof_part)

    def _show_xprof_part(self, result) -> None:
        session, host, (kind, value), data = result
        if self.xprof_view is None or self.xprof_of != (session, host):
            return  # another host's pages are shown now
        if kind == "module":
            self.xprof_view.set_module_data(value, data)
        else:
            self.xprof_view.add_op_profile(data)

    def _xprof_failed(self, message: str) -> None:
        if self.xprof_view is not None and self.xprof_asked is not None:
            kind, value = self.xprof_asked
            if kind == "module":
                self.xprof_view.module_failed(value, message)
            else:
                self.xprof_view.op_profile_page.message.setText(message)
        self.set_status(message, error=True)

    def show_xprof(self, tool: str) -> None:
        """The XProf Statistics tab on the page of a tool."""
        if self.xprof_view is not None:
            self.xprof_view.show_page(tool)
            self.tabs.setCurrentWidget(self.xprof_view)

    def show_statistics(self, tool: str) -> None:
        """The Statistics tab on the page of a tool (overview, kernel_stats, op_stats)."""
        self.stats_view.show_page(tool)
        self.tabs.setCurrentWidget(self.stats_view)

    def show_error(self, message: str) -> None:
        """A failure, in the status bar and in the tab of what was asked for."""
        self.set_status(message, error=True)
        if self.requested and self.requested[2] in XPROF_VIEWS and self.xprof_view is not None \
                and self._xprof_tools(*self.requested[:2]):
            self.xprof_view.show_message(message)
            self.tabs.setCurrentWidget(self.xprof_view)
        elif self.requested and self.requested[2] in TIMELINE_TOOLS:
            self.stats_view.show_message(message)
            self.tabs.setCurrentWidget(self.stats_view)
        elif self.requested and self.requested[2] == TRACE_VIEWER:
            self.timeline_view.show_message(message)
        else:
            if self.memory_view.data is None:
                self.memory_view.show_empty(NOT_LOADED)
            self.memory_view.show_message(message)

    def _show_memory(self, result) -> None:
        session, host, data, series, histories = result
        self.current = (session, host)
        self.memory_view.set_hosts(list(self.repo.session(session).hosts), host)
        self.memory_view.set_profile(data, series, histories)
        self.tabs.setCurrentWidget(self.memory_view)
        ids = ", ".join(data.memory_ids)
        self._shown_status(
            (self.memory_view,), f"{session} / {host}: memory profile with {len(data.allocators)} allocator(s): {ids}"
        )
        self.shown.emit()

    def _show_timeline(self, result) -> None:
        session, host, steps, step, timeline, stats, xprof = result
        # What to show: the tool last asked for, if it is this timeline's (clicked while it loaded).
        r = self.requested
        show = r[2] if r and tuple(r[:2]) == (session, host) and r[2] in TIMELINE_VIEWS else TRACE_VIEWER
        self.current_timeline = (session, host)
        self.current_step = step
        self.timeline_view.set_steps(steps, step)
        self.timeline_view.set_timeline(timeline)
        self.stats_timeline = timeline if stats is not None else None
        self.stats_view.set_stats(stats)
        if self.xprof_view is not None and xprof is not None:
            self.xprof_view.set_data(xprof)
            self.xprof_of = (session, host)
        if self.memory_wanted and self.tabs.currentWidget() is self.memory_view:
            pass  # the user went to the Memory tab meanwhile: its profile loads next (below)
        elif show in XPROF_VIEWS and xprof is not None:
            self.show_xprof(show)
        elif show in TIMELINE_TOOLS and stats is not None:
            self.show_statistics(show)
        else:
            self.tabs.setCurrentWidget(self.timeline_view)
        warn = f" Warnings: {'; '.join(timeline.warnings)}" if timeline.warnings else ""
        self._shown_status(
            (self.timeline_view, self.stats_view),
            f"{session} / {host or ALL_HOSTS}{' / ' + step if step else ''}: {len(timeline):,} events on "
            f"{len(timeline.groups)} device(s).{warn}",
        )
        self.shown.emit()
        if self.memory_wanted and self.tabs.currentWidget() is self.memory_view and not self.runner.busy:
            self.show_memory_tab()

    def _show_stats(self, result) -> None:
        session, host, timeline, stats = result
        if timeline is not self.stats_timeline:
            return  # another timeline was loaded meanwhile
        self.stats_view.set_stats(stats)
        self._shown_status(
            (self.stats_view,), f"{session} / {host or ALL_HOSTS}: statistics of {describe_range(stats.step_range)}."
        )

    def _shown_status(self, views: tuple, text: str) -> None:
        """The status line of what was just shown, kept per tab so that turning to a tab shows its own."""
        for view in views:
            self.status_of[view] = text
        self.set_status(text)

    def restate(self, view) -> None:
        """The tab `view` is now in front: the status line says what it shows (not another tab's last load)."""
        if view in self.status_of and not self.runner.busy:
            self.set_status(self.status_of[view])


def xprof_data(repo: ProfileRepository, session: str, host: str, tools: list[str], task) -> dict:
    """XProf's tools of a host, as the XProf Statistics tab shows them: each
    tool's JSON by name (a tool that fails is left out, its reason in
    "errors")."""
    data: dict = {}
    errors = []
    with repo.decoding_once():  # the tools that decode the host's XSpace (a GPU host's: most) share one decode
        for tool in tools:
            try:
                if tool == MEMORY_VIEWER:  # one XLA module at a time: the list and the first one's
                    files = repo.xprof_files(session, host, tool)
                    names = module_names(files, task) if files else []
                    if names:
                        data[tool] = {"modules": names, "module": names[0],
                                      "data": module_memory(repo, session, host, names[0], task)}
                    continue
                data[tool] = json.loads(repo.tool_data(session, tool, host, {}, task).output)
            except ProfileError as e:
                errors.append(f"{tool}: {e}")
    if errors:
        data["errors"] = errors
    return data


def pages_of_plugin_24(data: dict) -> dict:
    """tensorboard-plugin-profile 2.4's layouts (what TF 2.2-2.3's per-tool protos export as) placed as
    the XProf pages read XProf 2.24's: its input pipeline has no leading {}, its kernel_stats is a list
    of its one table. The overview and framework op tables sit where 2.24's do."""
    out = dict(data)
    if isinstance(out.get(INPUT_PIPELINE_ANALYZER), list):
        out[INPUT_PIPELINE_ANALYZER] = [{}, *out[INPUT_PIPELINE_ANALYZER]]
    if isinstance(out.get(KERNEL_STATS), list):
        out[KERNEL_STATS] = next(iter(out[KERNEL_STATS]), {})
    return out


def module_memory(repo: ProfileRepository, session: str, host: str, name: str, task):
    """memory_viewer's result for one XLA module of a host, as the page takes it: the result itself (its numpy
    columns), not its JSON, which for a module of 100,000 buffers is some 70 MB to write and parse again."""
    files = repo.xprof_files(session, host, MEMORY_VIEWER)
    if not files:
        raise ProfileError(f"{session} / {host or ALL_HOSTS}: memory_viewer reads XSpaces; this host has none")
    return memory_viewer_result(files, {"module_name": name}, task)
