"""The Sessions tree: session > host > tool items, an "All hosts" entry where a
session's hosts combine, and an HParams entry. Each item carries the
(session, host, tool) that clicking it shows."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QTreeWidget, QTreeWidgetItem

from profscope.models.repository.profile_repository import ProfileRepository
from profscope.models.repository.registry import (
    KERNEL_STATS,
    MEMORY_PROFILE,
    MEMORY_VIEWER,
    OP_STATS,
    OVERVIEW,
    TIMELINE_TOOLS,
    TRACE_VIEWER,
)
from profscope.widgets.xprof.view import TOOL_TITLES as XPROF_TITLES

ROLE_TARGET = Qt.UserRole  # (session, host, tool) of a tree item
HPARAMS = "hparams"  # tree target of the HParams entry
TOOL_TITLES = {**XPROF_TITLES, MEMORY_PROFILE: "Memory", TRACE_VIEWER: "Timeline", KERNEL_STATS: "Kernels",
               OP_STATS: "Operators", OVERVIEW: "Overview"}
ALL_HOSTS = "All hosts"  # tree entry: the timeline of every host of a session


def window_tools(repo: ProfileRepository, info, host: str) -> list[str]:
    """The tools of a host the window shows: memory and timeline; the trace
    statistics of a Chrome trace (it has op_stats); XProf's pages of an xplane."""
    chrome = host in repo.hosts_with(info.name, OP_STATS)
    return [t for t in info.tools if host in repo.hosts_with(info.name, t) and (
        t in (MEMORY_PROFILE, TRACE_VIEWER) or (t in TIMELINE_TOOLS and chrome) or (t in XPROF_TITLES and not chrome))]


def xprof_tools(repo: ProfileRepository, session: str, host: str) -> list[str]:
    """XProf's tools the window shows for an xplane host; for all hosts (host "") of a session whose
    hosts are all xplanes, the tools XProf combines over them (not memory_viewer: one host's XLA modules)."""
    chrome = repo.hosts_with(session, OP_STATS)
    if host:
        return [] if host in chrome else [t for t in XPROF_TITLES if host in repo.hosts_with(session, t)]
    hosts = repo.session(session).hosts
    if chrome or len(hosts) < 2 or not repo.combines_hosts(session):
        return []
    return [t for t in XPROF_TITLES if t != MEMORY_VIEWER and all(h in repo.hosts_with(session, t) for h in hosts)]


def preferred_tool(tools: list[str]) -> str:
    """What clicking a host shows: its timeline when it has one, else its memory profile, else its
    first XProf page (TF 2.2-2.3's per-tool protos)."""
    return next((t for t in (TRACE_VIEWER, MEMORY_PROFILE, *XPROF_TITLES) if t in tools), MEMORY_PROFILE)


def fill(tree: QTreeWidget, repo: ProfileRepository) -> QTreeWidgetItem | None:
    """Adds the repository's sessions, sorted by name; returns the latest
    session's first host (None when no session has a host)."""
    latest = None
    for info in sorted(repo.enum_sessions(), key=lambda s: s.name):
        item = QTreeWidgetItem(tree, [info.name])
        item.setToolTip(0, info.name)
        for host in info.hosts:
            host_item = QTreeWidgetItem(item, [host])
            host_item.setToolTip(0, host)
            tools = window_tools(repo, info, host)
            for tool in tools:
                tool_item = QTreeWidgetItem(host_item, [TOOL_TITLES.get(tool, tool)])
                tool_item.setData(0, ROLE_TARGET, (info.name, host, tool))
            host_item.setData(0, ROLE_TARGET, (info.name, host, preferred_tool(tools)))
        if repo.combines_hosts(info.name):
            all_item = QTreeWidgetItem(item, [ALL_HOSTS])
            all_item.setData(0, ROLE_TARGET, (info.name, "", TRACE_VIEWER))
            if OP_STATS in info.tools:  # the trace statistics of every host side by side
                combined = [t for t in (TRACE_VIEWER, *TIMELINE_TOOLS) if t in info.tools]
            else:  # XProf's tools, combined over the hosts
                xprof = xprof_tools(repo, info.name, "")
                combined = [TRACE_VIEWER, *xprof] if xprof else []
            for tool in combined:
                tool_item = QTreeWidgetItem(all_item, [TOOL_TITLES[tool]])
                tool_item.setData(0, ROLE_TARGET, (info.name, "", tool))
        if info.hosts:
            latest = item.child(0)
    add_not_profiles(tree, repo.not_profiles())
    tree.expandAll()
    return latest


def add_not_profiles(tree: QTreeWidget, files: list[tuple[str, str]]) -> None:
    """A greyed "Not profiles" entry: each file that looks like a profile but
    is not, its reason in the tooltip and beside its name."""
    if not files:
        return
    top = QTreeWidgetItem(tree, [f"Not profiles ({len(files):,})"])
    for path, reason in files:
        item = QTreeWidgetItem(top, [f"{Path(path).name}: {reason}"])
        item.setToolTip(0, f"{path}\n{reason}")
    for item in (top, *(top.child(i) for i in range(top.childCount()))):
        item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled & ~Qt.ItemFlag.ItemIsSelectable)


def add_hparams_entry(tree: QTreeWidget, sessions: int) -> QTreeWidgetItem:
    """The HParams entry, first in the tree."""
    item = QTreeWidgetItem([f"HParams ({sessions:,} sessions)"])
    item.setData(0, ROLE_TARGET, (HPARAMS,))
    tree.insertTopLevelItem(0, item)
    return item


def find_item(tree: QTreeWidget, target: tuple) -> QTreeWidgetItem | None:
    """The item that shows `target` (session, host, tool)."""
    found = tree.findItems("*", Qt.MatchWildcard | Qt.MatchRecursive)
    return next((i for i in found if tuple(i.data(0, ROLE_TARGET) or ()) == target), None)
