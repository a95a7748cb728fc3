"""Comparing two profiles: File > Compare Profiles, the session tree's
"Compare with…", and the Compare tab's own requests (another step, host or
memory alignment), each computed in the worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMenu, QTabWidget, QTreeWidgetItem, QWidget

from profscope.models.analysis import diff
from profscope.models.analysis.comparison import Place, compare, stats_over
from profscope.models.core.task import ProfileError
from profscope.models.repository.profile_repository import ProfileRepository
from profscope.viewer.compare_dialog import CompareDialog, ask_other_side
from profscope.viewer.session_tree import ROLE_TARGET
from profscope.viewer.workers import TaskRunner
from profscope.widgets.compare.view import CompareView


class CompareController(QObject):
    """Compares two places in `runner` and shows the result in `view`, whose
    tab in `tabs` appears with the first comparison."""

    def __init__(self, parent: QWidget, runner: TaskRunner, tabs: QTabWidget, view: CompareView,
                 set_status: Callable[[str], None]):
        super().__init__(parent)
        self.parent_widget = parent  # the dialogs' parent
        self.runner = runner
        self.tabs = tabs
        self.view = view
        self.set_status = set_status
        self.path: str | None = None  # the opened location, one side's default
        self.repo: ProfileRepository | None = None  # and its repository, reused for a side there

    def set_location(self, path: str | None, repo: ProfileRepository | None) -> None:
        self.path, self.repo = path, repo

    def compare_dialog(self) -> None:
        dialog = CompareDialog(self.parent_widget, self.path or "")
        if dialog.exec():
            self.compare_places(*dialog.places())

    def tree_menu(self, item: QTreeWidgetItem | None) -> QMenu | None:
        """A session's or host's menu: Compare with…"""
        if item is None or self.repo is None or (item.parent() is not None and item.parent().parent() is not None):
            return None
        target = item.data(0, ROLE_TARGET)
        if item.parent() is None and target:  # the HParams entry
            return None
        this = (item.text(0), "") if item.parent() is None else (target[0], target[1])
        menu = QMenu(item.treeWidget())
        menu.addAction("Compare with…", lambda: self.compare_with(*this))
        return menu

    def compare_with(self, session: str, host: str) -> None:
        """Asks for the other side of (session, host) of the opened location."""
        choices = [
            (s.name, h)
            for s in sorted(self.repo.enum_sessions(), key=lambda s: s.name)
            for h in ("", *(s.hosts if len(s.hosts) > 1 else ()))
        ]
        other = ask_other_side(self.parent_widget, self.path, choices, (session, host))
        if other is not None:
            self.compare_places(Place(self.path, session, host), other)

    def compare_places(self, base: Place, cand: Place, steps: tuple[str, str] = ("", "")) -> None:
        """Loads and compares two sides in the worker, then shows the Compare tab."""
        repos = {self.path: self.repo} if self.repo is not None and self.path else {}
        self.set_status(f"Comparing {base.label()} with {cand.label()}…")
        self.runner.start(lambda task: compare(base, cand, task, repos=repos, steps=steps), self._show_comparison)

    def restep(self, steps: tuple[str, str]) -> None:
        """The statistics and overview over each side's new step choice, in the worker."""
        c = self.view.comparison
        if c is None or c.baseline.timeline is None or c.candidate.timeline is None:
            return

        def job(task):
            try:
                return (*stats_over(c.baseline, c.candidate, steps, task), steps)
            except ProfileError as e:  # a step a side lacks: said in the Compare tab
                return str(e)

        self.runner.start(job, self.view.set_step_stats)

    def rehost(self, side: int, host: str) -> None:
        """Compares again with another host on one side (same steps)."""
        c = self.view.comparison
        if c is None:
            return
        places = [replace(c.baseline.place), replace(c.candidate.place)]
        places[side].host = host
        self.compare_places(*places, steps=c.steps)

    def realign_memory(self, step) -> None:
        c = self.view.comparison
        if c is None or c.memory is None:
            return
        base, cand = c.baseline.memory, c.candidate.memory
        self.runner.start(lambda task: diff.memory_diff(base, cand, step), self.view.set_memory)

    def _show_comparison(self, comparison) -> None:
        self.view.set_comparison(comparison)
        self.tabs.setTabVisible(self.tabs.indexOf(self.view), True)
        self.tabs.setCurrentWidget(self.view)
        rows = {t: len(d) for t, d in comparison.stats.items()}
        self.set_status(
            f"Compared: {rows.get('kernel_stats', 0):,} kernels, {rows.get('op_stats', 0):,} operators, "
            f"{rows.get('op_types', 0):,} op types" + (", memory" if comparison.memory else "")
        )
