"""The main window: open a folder or file, pick a session and host in the
tree, look at one tab per view. Loading runs in a worker; the status bar shows
progress, a cancel button and errors."""

from __future__ import annotations

import importlib.metadata
import json
import re
from dataclasses import replace
from pathlib import Path

import PySide6
from PySide6.QtCore import QSettings, Qt, QTimer, QUrl, qVersion
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from profscope.models.analysis import diff, trace_stats
from profscope.models.analysis.comparison import Place, compare, stats_over
from profscope.models.core.task import ProfileError
from profscope.models.data.timeline import Timeline
from profscope.models.formats import file_patterns
from profscope.models.hparams.experiment import load_hparams
from profscope.models.hparams.logdir import logdir_signature
from profscope.models.remote import SCHEME
from profscope.models.remote.client import capture
from profscope.models.repository.locations import open_location
from profscope.models.repository.profile_repository import ProfileRepository
from profscope.models.repository.registry import (
    KERNEL_STATS,
    MEMORY_PROFILE,
    OP_STATS,
    OVERVIEW,
    TIMELINE_TOOLS,
    TRACE_VIEWER,
)
from profscope.viewer import crashlog
from profscope.viewer.app import app_icon
from profscope.viewer.compare_dialog import CompareDialog, ask_other_side
from profscope.viewer.query_runner import QueryRunner
from profscope.viewer.workers import TaskRunner
from profscope.widgets.compare.view import CompareView
from profscope.widgets.hparams.layout import settings_key
from profscope.widgets.hparams.view import HParamsView
from profscope.widgets.memory.plot import prepare_series
from profscope.widgets.memory.view import MemoryView
from profscope.widgets.palette import Scheme
from profscope.widgets.query.view import QueryView
from profscope.widgets.stats.trace_stats_view import TraceStatsView, describe_range
from profscope.widgets.timeline.view import KEYS_HELP, TimelineView

MAX_RECENT = 8
ROLE_TARGET = Qt.UserRole  # (session, host, tool) of a tree item
HPARAMS = "hparams"  # tree target of the HParams entry
WATCH_INTERVAL_MS = 5000  # how often a watched log dir is checked for new data
DEFAULT_SIZE = (1280, 860)


TOOL_TITLES = {MEMORY_PROFILE: "Memory", TRACE_VIEWER: "Timeline", KERNEL_STATS: "Kernels", OP_STATS: "Operators",
               OVERVIEW: "Overview"}
ALL_HOSTS = "All hosts"  # tree entry: the timeline of every host of a session
TIMELINE_VIEWS = (TRACE_VIEWER, *TIMELINE_TOOLS)  # tools shown from a loaded timeline


def _preferred_tool(tools: list[str]) -> str:
    """What clicking a host shows: its timeline when it has one."""
    return TRACE_VIEWER if TRACE_VIEWER in tools else MEMORY_PROFILE


class CaptureDialog(QDialog):
    """Where to capture from, for how long, and where to save (a repository folder)."""

    def __init__(self, parent, settings: QSettings):
        super().__init__(parent)
        self.setWindowTitle("Capture a profile")
        self.address = QLineEdit(settings.value("capture_address", "localhost:6009"))
        self.address.setToolTip("The profiler server of a running program: tf.profiler.experimental.server.start(port) "
                                "or jax.profiler.start_server(port)")
        self.duration = QSpinBox(minimum=100, maximum=600_000, singleStep=500, suffix=" ms",
                                 value=int(settings.value("capture_ms", 2000)))
        self.folder = QLineEdit(
            settings.value("capture_folder", str(Path.home() / "profscope-logs" / "plugins" / "profile"))
        )
        browse = QPushButton("…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.folder)
        row.addWidget(browse)
        folder_row = QWidget()
        folder_row.setLayout(row)
        form = QFormLayout(self)
        form.addRow("Profiler address:", self.address)
        form.addRow("Duration:", self.duration)
        form.addRow("Save into:", folder_row)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.settings = settings

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(
            self, "Repository folder (<logdir>/plugins/profile)", self.folder.text()
        )
        if path:
            self.folder.setText(path)

    def values(self) -> tuple[str, int, str]:
        self.settings.setValue("capture_address", self.address.text().strip())
        self.settings.setValue("capture_ms", self.duration.value())
        self.settings.setValue("capture_folder", self.folder.text().strip())
        return self.address.text().strip(), self.duration.value(), self.folder.text().strip()


def _plain(text: str) -> str:
    """A menu text without its mnemonic and ellipsis: "Open &Folder…" -> "Open Folder"."""
    return re.sub(r"&(.)", r"\1", text).rstrip("…").strip()


def timeline_keys() -> list[tuple[str, str]]:
    """(keys, what they do) of the timeline canvas, read from the view's own key help."""
    rows = []
    for line in KEYS_HELP.split("<br>"):
        if line.startswith("<b>"):
            continue
        for item in line.split(" · "):
            keys, _, what = item.partition(": ")
            rows.append((keys.strip(), what.strip()))
    return rows


def app_version() -> str:
    try:
        return importlib.metadata.version("profscope")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def log_folder() -> Path:
    """Where Profscope keeps its cache and logs (created on demand)."""
    folder = crashlog.log_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class ShortcutsDialog(QDialog):
    """Every menu action with its shortcut, plus the timeline's keys, with a filter."""

    def __init__(self, parent, rows: list[tuple[str, str, str]]):
        super().__init__(parent)
        self.setWindowTitle("Keyboard Shortcuts")
        self.filter = QLineEdit(placeholderText="Filter (e.g. open, zoom, Ctrl)", clearButtonEnabled=True)
        self.list = QTreeWidget(rootIsDecorated=False, alternatingRowColors=True)
        self.list.setHeaderLabels(["Action", "Shortcut", "Where"])
        for row in rows:
            QTreeWidgetItem(self.list, list(row))
        for column in range(3):
            self.list.resizeColumnToContents(column)
        self.filter.textChanged.connect(self.apply_filter)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.list)
        layout.addWidget(buttons)
        self.resize(640, 520)

    def visible_rows(self) -> list[tuple[str, str, str]]:
        return [
            tuple(item.text(c) for c in range(3))
            for i in range(self.list.topLevelItemCount())
            if not (item := self.list.topLevelItem(i)).isHidden()
        ]

    def apply_filter(self, text: str) -> None:
        words = text.lower().split()
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            haystack = " ".join(item.text(c) for c in range(3)).lower()
            item.setHidden(not all(w in haystack for w in words))


class MainWindow(QMainWindow):
    def __init__(self, settings: QSettings | None = None):
        super().__init__()
        self.setWindowTitle("Profscope")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.settings = settings or QSettings()
        self.repo: ProfileRepository | None = None
        self.current: tuple[str, str] | None = None  # (session, host) of the memory tab
        self.current_timeline: tuple[str, str] | None = None  # (session, host) of the timeline tab
        self.stats_timeline: Timeline | None = None  # the timeline the Statistics tab was computed from
        self.requested: tuple | None = None  # (session, host, tool) last asked for
        self.opened_path: str | None = None
        self.runner = TaskRunner(self)
        # HParams loads and watch checks run apart, so they never cancel a profile load.
        self.hparams_runner = TaskRunner(self)
        self.curves_runner = TaskRunner(self)  # the selected sessions' training curves
        self.hparams_path: str | None = None
        self.hparams_signature = None
        self.watch_timer = QTimer(self, interval=WATCH_INTERVAL_MS)
        self.watch_timer.timeout.connect(self._check_for_new_data)

        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Sessions"])
        self.tree.setTextElideMode(Qt.ElideMiddle)  # session names differ at the end (timestamps), hosts too
        self.sessions_dock = dock = QDockWidget("Sessions", self)
        dock.setObjectName("sessions")
        dock.setWidget(self.tree)
        self.addDockWidget(Qt.LeftDockWidgetArea, dock)
        self.memory_view = MemoryView()
        self.timeline_view = TimelineView()
        self.hparams_view = HParamsView()
        self.stats_view = TraceStatsView()
        self.query_runner = QueryRunner(self)  # apart from self.runner: a query never cancels a load
        self.query_view = QueryView(self.query_runner, self.settings)
        self.pending_jump = None  # (session, host, Jump) of a query row, shown once its data is loaded
        self.current_step = ""  # the step (run metadata tag) of the timeline tab
        self.tabs = QTabWidget()
        self.tabs.addTab(self.memory_view, "Memory")
        self.tabs.addTab(self.timeline_view, "Timeline")
        self.tabs.addTab(self.stats_view, "Statistics")
        self.tabs.addTab(self.hparams_view, "HParams")
        self.tabs.addTab(self.query_view, "Query")
        self.compare_view = CompareView()
        self.tabs.addTab(self.compare_view, "Compare")
        self.tabs.setTabVisible(self.tabs.indexOf(self.compare_view), False)  # until two profiles are compared
        self.setCentralWidget(self.tabs)

        self.status = QLabel("Open a log dir, a profile folder or a file (Ctrl+O), or drop it here.")
        self.progress = QProgressBar(maximum=1000, maximumWidth=220, textVisible=False)
        self.cancel_button = QPushButton("Cancel")
        self.statusBar().addWidget(self.status, 1)
        self.statusBar().addPermanentWidget(self.progress)
        self.statusBar().addPermanentWidget(self.cancel_button)
        self._set_busy(False)
        self._build_menus()

        self.tree.itemActivated.connect(self._on_tree_item)
        self.tree.itemClicked.connect(self._on_tree_item)
        self.tree.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(
            lambda pos: (
                (menu := self.tree_menu(self.tree.itemAt(pos))) and menu.exec(self.tree.viewport().mapToGlobal(pos))
            )
        )
        self.compare_view.align_requested.connect(self.realign_memory)
        self.compare_view.steps_requested.connect(self.restep_comparison)
        self.compare_view.host_requested.connect(self.rehost_comparison)
        self.memory_view.host_requested.connect(
            lambda host: self.load_memory(self.current[0], host) if self.current else None
        )
        self.timeline_view.step_requested.connect(
            lambda step: self.load_timeline(*self.current_timeline, step) if self.current_timeline else None
        )
        self.stats_view.step_range_requested.connect(self.recompute_stats)
        self.query_view.jump_requested.connect(self.show_jump)
        self.query_runner.progress.connect(self._on_progress)
        self.query_runner.busy_changed.connect(self._set_busy)
        self.query_runner.finished.connect(
            lambda o: self.set_status(f"Query: {(n := o.result.table.num_rows):,} row{'s' if n != 1 else ''}.")
        )
        self.query_runner.failed.connect(lambda message, _: self.set_status(message.splitlines()[0], error=True))
        self.hparams_view.watch_toggled.connect(self.set_watching)
        self.hparams_view.run_job = self.curves_runner.start
        self.hparams_view.layout_changed.connect(self._save_hparams_layout)
        self.curves_runner.failed.connect(self.hparams_view.curves.show_message)
        self.hparams_runner.failed.connect(self.show_error)
        self.cancel_button.clicked.connect(self.cancel)
        self.runner.progress.connect(self._on_progress)
        self.runner.busy_changed.connect(self._set_busy)
        self.runner.busy_changed.connect(self.stats_view.set_busy)
        self.runner.failed.connect(self.show_error)
        self.runner.cancelled.connect(lambda: self.set_status("Cancelled."))
        self.resize(*DEFAULT_SIZE)
        self.resizeDocks([dock], [230], Qt.Horizontal)  # room for host names; a saved state overrides it
        self._default_state = self.saveState()
        self._fit_dock_pending = True  # until a saved layout is restored or the tree is first filled
        self._restore()

    # ------------------------------------------------------------ menus

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "Open &Folder…", QKeySequence.Open, self.open_folder_dialog)
        self._action(file_menu, "Open F&ile…", "Ctrl+Shift+O", self.open_file_dialog)
        self._action(file_menu, "Open &Server…", "Ctrl+Alt+O", self.open_server_dialog)
        self._action(file_menu, "&Capture Profile…", "Ctrl+R", self.capture_dialog)
        self._action(file_menu, "Com&pare Profiles…", "Ctrl+Shift+D", self.compare_dialog)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self._action(file_menu, "&Reload", QKeySequence.Refresh, self.reload)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.Quit, self.close)
        view_menu = self.menuBar().addMenu("&View")
        self._action(view_menu, "Reset &Zoom", "Ctrl+0", self.reset_zoom)
        self._action(view_menu, "Table at &Peak", "Ctrl+P", lambda: self.memory_view.pick_moment(None))
        self._action(view_menu, "&Cancel Loading", "Esc", self.cancel)
        view_menu.addSeparator()
        view_menu.addAction(self.sessions_dock.toggleViewAction())
        self._action(view_menu, "Reset &Layout", "", self.reset_layout)
        help_menu = self.menuBar().addMenu("&Help")
        self._action(help_menu, "&Keyboard Shortcuts", QKeySequence.HelpContents, self.show_shortcuts)
        self._action(help_menu, "Open &Log Folder", "", self.open_log_folder)
        help_menu.addSeparator()
        about = self._action(help_menu, "&About Profscope", "", self.show_about)
        about.setMenuRole(QAction.AboutRole)
        self.help_menu = help_menu
        self._update_recent_menu()

    # ------------------------------------------------------------ help

    def shortcut_rows(self) -> list[tuple[str, str, str]]:
        """(action, shortcut, where) of every menu action with a shortcut, then the timeline's keys."""
        rows = []
        for menu_action in self.menuBar().actions():
            menu = menu_action.menu()
            for action in menu.actions() if menu is not None else ():
                if action.menu() is None and not action.isSeparator() and not action.shortcut().isEmpty():
                    rows.append(
                        (
                            _plain(action.text()),
                            action.shortcut().toString(QKeySequence.NativeText),
                            f"{_plain(menu_action.text())} menu",
                        )
                    )
        rows += [(what, keys, "Timeline") for keys, what in timeline_keys()]
        return rows

    def show_shortcuts(self) -> None:
        self.shortcuts_dialog = ShortcutsDialog(self, self.shortcut_rows())
        self.shortcuts_dialog.open()

    def about_text(self) -> str:
        return (
            f"<h3>Profscope {app_version()}</h3>"
            "<p>A desktop viewer for TensorFlow, Keras, JAX and PyTorch profiles and TensorBoard HParams sweeps.</p>"
            f"<p>Qt {qVersion()} · PySide6 {PySide6.__version__}</p>"
            f"<p>Settings: {self.settings.fileName()}</p>"
            f"<p>Log folder: {crashlog.log_folder()}</p>"
        )

    def show_about(self) -> None:
        self.about_box = QMessageBox(
            QMessageBox.Information, "About Profscope", self.about_text(), QMessageBox.Close, self
        )
        self.about_box.setTextFormat(Qt.RichText)
        if not self.windowIcon().isNull():
            self.about_box.setIconPixmap(self.windowIcon().pixmap(64, 64))
        self.about_box.open()

    open_url = staticmethod(QDesktopServices.openUrl)  # tests replace it

    def open_log_folder(self) -> None:
        folder = log_folder()
        if not self.open_url(QUrl.fromLocalFile(str(folder))):
            self.set_status(f"Could not open {folder} (no file manager?)", error=True)

    def _action(self, menu, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        self.addAction(action)
        return action

    def _recent(self) -> list[str]:
        value = self.settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def _update_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self._recent():
            self.recent_menu.addAction(path, lambda p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(self._recent()))

    def _remember(self, path: str) -> None:
        recent = [path] + [p for p in self._recent() if p != path]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self.settings.setValue("last_folder", str(Path(path).parent if Path(path).is_file() else path))
        self._update_recent_menu()

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(
            self, "Open log dir or profile folder", self.settings.value("last_folder", "")
        )
        if path:
            self.open_path(path)

    def open_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self,
            "Open profile file",
            self.settings.value("last_folder", ""),
            f"Profiles ({' '.join(file_patterns())});;All files (*)",
        )
        if path:
            self.open_path(path)

    def open_server_dialog(self) -> None:
        address, ok = QInputDialog.getText(
            self,
            "Open a ProfileAnalysis server",
            "Address (host:port):",
            text=self.settings.value("last_server", "localhost:50051"),
        )
        if ok and address.strip():
            self.settings.setValue("last_server", address.strip())
            self.open_path(SCHEME + address.strip().removeprefix(SCHEME))

    def capture_dialog(self) -> None:
        dialog = CaptureDialog(self, self.settings)
        if dialog.exec():
            address, duration, folder = dialog.values()
            self.set_status(f"Capturing {duration:,} ms from {address}…")
            self.runner.start(lambda task: capture(address, duration, Path(folder), task=task), self._captured)

    def _captured(self, result) -> None:
        folder, empty = result
        if empty:
            self.show_error(f"The trace of {folder.name} is empty: was the program running during the capture?")
        logdir = folder.parent.parent.parent if folder.parent.name == "profile" else folder.parent
        self.open_path(str(logdir))

    # ------------------------------------------------------------ loading

    def open_path(self, path: str) -> None:
        """Scans a path in the background for profiles and HParams data, then
        shows its latest session (or the HParams tab when it has only that)."""
        self.set_status(f"Opening {path}…")
        self._remember(str(path))
        self.opened_path = str(path)

        def job(task):
            signature = logdir_signature(path) if Path(path).is_dir() else None
            repo, hparams = open_location(path, task)
            return repo, (hparams, signature) if hparams is not None else None

        self.runner.start(job, self._show_opened)

    def reload(self) -> None:
        if self.opened_path:
            self.open_path(self.opened_path)

    def _show_opened(self, result) -> None:
        repo, hparams = result
        self.query_runner.set_location(repo, hparams[0] if hparams else None)
        again = hparams is not None and self.hparams_path == self.opened_path  # F5: keep what the user set
        self.hparams_path = self.opened_path if hparams else None
        self.hparams_view.set_data(
            hparams[0] if hparams else None, None if again else self._hparams_layout(self.hparams_path)
        )
        self.hparams_signature = hparams[1] if hparams else None
        self.tabs.setTabVisible(self.tabs.indexOf(self.hparams_view), hparams is not None)
        for view in (self.memory_view, self.timeline_view):
            self.tabs.setTabVisible(self.tabs.indexOf(view), repo is not None)
        self.tabs.setTabVisible(
            self.tabs.indexOf(self.stats_view),
            repo is not None and any(KERNEL_STATS in s.tools for s in repo.enum_sessions()),
        )
        self.stats_view.set_stats(None)
        self.stats_timeline = None
        self.current_timeline = None  # a reopened path may hold other data under the same names
        self.repo = repo
        self.tree.clear()
        if repo is not None:
            self._show_repository(repo)
        else:
            self.setWindowTitle(f"Profscope: {self.opened_path}")
        if hparams is not None:
            data = hparams[0]
            item = QTreeWidgetItem([f"HParams ({len(data.session_runs):,} sessions)"])
            item.setData(0, ROLE_TARGET, (HPARAMS,))
            self.tree.insertTopLevelItem(0, item)
            self._fit_dock()
            warnings = data.logdir.warnings
            self.hparams_view.show_message(
                f"{len(warnings):,} problem(s) reading the log dir; skipped what could not be read. "
                f"First: {warnings[0]}"
                if warnings
                else ""
            )
            if repo is None or not repo.enum_sessions():
                self.tree.setCurrentItem(item)
                self.tabs.setCurrentWidget(self.hparams_view)
                self.set_status(f"Opened {self.opened_path}: {len(data.session_runs):,} HParams sessions.")

    # ------------------------------------------------------------ HParams layout per log dir

    def _hparams_layout(self, path: str | None) -> dict:
        """The HParams layout saved for a log dir ({} when none, or unreadable)."""
        if path is None:
            return {}
        try:
            state = json.loads(self.settings.value(settings_key(path), "{}"))
        except (TypeError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def _save_hparams_layout(self) -> None:
        if self.hparams_path is not None and self.hparams_view.data is not None:
            self.settings.setValue(settings_key(self.hparams_path), json.dumps(self.hparams_view.layout_state()))

    # ------------------------------------------------------------ watching a sweep

    def set_watching(self, on: bool) -> None:
        """Checks the log dir every few seconds and reloads HParams when it changed."""
        if on:
            self.watch_timer.start()
        else:
            self.watch_timer.stop()

    def _check_for_new_data(self) -> None:
        path, known = self.hparams_path, self.hparams_signature
        if path is None or self.hparams_runner.busy:
            return

        def job(task):
            signature = logdir_signature(path)
            return (load_hparams(path, task), signature) if signature != known else None

        self.hparams_runner.start(job, self._on_new_data)

    def _on_new_data(self, result) -> None:
        if result is None:
            return
        data, self.hparams_signature = result
        self.hparams_view.set_data(data)
        self.query_runner.set_location(self.repo, data)
        self.set_status(f"{self.hparams_path}: reloaded, {len(data.session_runs):,} HParams sessions.")

    def reset_zoom(self) -> None:
        if self.tabs.currentWidget() in (self.hparams_view, self.stats_view):
            return
        if self.tabs.currentWidget() is self.timeline_view:
            self.timeline_view.canvas.reset_zoom()
        else:
            self.memory_view.plot.reset_zoom()

    def load(self, session: str, host: str, tool: str) -> None:
        if tool not in TIMELINE_VIEWS:
            self.load_memory(session, host)
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
        if KERNEL_STATS not in info.tools:
            return False
        return self.repo.combines_hosts(session) if not host else host in self.repo.hosts_with(session, KERNEL_STATS)

    def load_timeline(self, session: str, host: str, step: str = "", show: str = TRACE_VIEWER) -> None:
        """Loads a host's (or all hosts') timeline and, where the source has
        them, its statistics from the same timeline; then shows `show`."""
        repo = self.repo
        self.requested = (session, host, show)
        with_stats = self._has_stats(session, host)
        self.set_status(f"Loading the timeline of {session} / {host or ALL_HOSTS}…")

        def job(task):
            steps = repo.steps(session, host)
            timeline = repo.step_timeline(session, host, step, task)
            timeline.all_kind_stats  # noqa: B018 (a cached property) the op statistics tab's table, here rather than on the GUI thread
            stats = trace_stats.compute(timeline, None, task) if with_stats else None
            return session, host, steps, step or (steps[0] if steps else ""), timeline, stats

        self.runner.start(job, self._show_timeline)

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

    def load_memory(self, session: str, host: str) -> None:
        repo = self.repo
        self.requested = (session, host, MEMORY_PROFILE)
        self.set_status(f"Loading memory profile of {session} / {host}…")

        def job(task):
            data = repo.memory_profile(session, host, task)
            return session, host, data, prepare_series(data, task)  # the plot's pyramids, off the GUI thread

        self.runner.start(job, self._show_memory)

    # ------------------------------------------------------------ compare

    def compare_dialog(self) -> None:
        dialog = CompareDialog(self, self.opened_path or "")
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
        menu = QMenu(self.tree)
        menu.addAction("Compare with…", lambda: self.compare_with(*this))
        return menu

    def compare_with(self, session: str, host: str) -> None:
        """Asks for the other side of (session, host) of the opened location."""
        choices = [
            (s.name, h)
            for s in sorted(self.repo.enum_sessions(), key=lambda s: s.name)
            for h in ("", *(s.hosts if len(s.hosts) > 1 else ()))
        ]
        other = ask_other_side(self, self.opened_path, choices, (session, host))
        if other is not None:
            self.compare_places(Place(self.opened_path, session, host), other)

    def compare_places(self, base: Place, cand: Place, steps: tuple[str, str] = ("", "")) -> None:
        """Loads and compares two sides in the worker, then shows the Compare tab."""
        repos = {self.opened_path: self.repo} if self.repo is not None and self.opened_path else {}
        self.set_status(f"Comparing {base.label()} with {cand.label()}…")
        self.runner.start(lambda task: compare(base, cand, task, repos=repos, steps=steps), self._show_comparison)

    def restep_comparison(self, steps: tuple[str, str]) -> None:
        """The statistics and overview over each side's new step choice, in the worker."""
        c = self.compare_view.comparison
        if c is None or c.baseline.timeline is None or c.candidate.timeline is None:
            return

        def job(task):
            try:
                return (*stats_over(c.baseline, c.candidate, steps, task), steps)
            except ProfileError as e:  # a step a side lacks: said in the Compare tab
                return str(e)

        self.runner.start(job, self.compare_view.set_step_stats)

    def rehost_comparison(self, side: int, host: str) -> None:
        """Compares again with another host on one side (same steps)."""
        c = self.compare_view.comparison
        if c is None:
            return
        places = [replace(c.baseline.place), replace(c.candidate.place)]
        places[side].host = host
        self.compare_places(*places, steps=c.steps)

    def _show_comparison(self, comparison) -> None:
        self.compare_view.set_comparison(comparison)
        self.tabs.setTabVisible(self.tabs.indexOf(self.compare_view), True)
        self.tabs.setCurrentWidget(self.compare_view)
        rows = {t: len(d) for t, d in comparison.stats.items()}
        self.set_status(
            f"Compared: {rows.get('kernel_stats', 0):,} kernels, {rows.get('op_stats', 0):,} operators, "
            f"{rows.get('op_types', 0):,} op types" + (", memory" if comparison.memory else "")
        )

    def realign_memory(self, step) -> None:
        c = self.compare_view.comparison
        if c is None or c.memory is None:
            return
        base, cand = c.baseline.memory, c.candidate.memory
        self.runner.start(lambda task: diff.memory_diff(base, cand, step), self.compare_view.set_memory)

    def cancel(self) -> None:
        self.runner.cancel()
        self.query_runner.cancel()

    def _show_repository(self, repo: ProfileRepository) -> None:
        self.setWindowTitle(f"Profscope: {repo.location}")
        latest = None
        for info in sorted(repo.enum_sessions(), key=lambda s: s.name):
            item = QTreeWidgetItem(self.tree, [info.name])
            item.setToolTip(0, info.name)
            for host in info.hosts:
                host_item = QTreeWidgetItem(item, [host])
                host_item.setToolTip(0, host)
                tools = [t for t in info.tools if host in repo.hosts_with(info.name, t)]
                for tool in tools:
                    tool_item = QTreeWidgetItem(host_item, [TOOL_TITLES.get(tool, tool)])
                    tool_item.setData(0, ROLE_TARGET, (info.name, host, tool))
                host_item.setData(0, ROLE_TARGET, (info.name, host, _preferred_tool(tools)))
            if repo.combines_hosts(info.name):
                all_item = QTreeWidgetItem(item, [ALL_HOSTS])
                all_item.setData(0, ROLE_TARGET, (info.name, "", TRACE_VIEWER))
                if KERNEL_STATS in info.tools:  # the statistics of every host side by side
                    for tool in (TRACE_VIEWER, *TIMELINE_TOOLS):
                        if tool in info.tools:
                            tool_item = QTreeWidgetItem(all_item, [TOOL_TITLES[tool]])
                            tool_item.setData(0, ROLE_TARGET, (info.name, "", tool))
            if info.hosts:
                latest = item.child(0)
        self.tree.expandAll()
        self._fit_dock()
        self.set_status(f"Opened {repo.location}: {self.tree.topLevelItemCount()} session(s).")
        if latest is not None:
            self.tree.setCurrentItem(latest)
            self.load(*latest.data(0, ROLE_TARGET))

    def _show_memory(self, result) -> None:
        session, host, data, series = result
        self.current = (session, host)
        self.memory_view.set_hosts(list(self.repo.session(session).hosts), host)
        self.memory_view.set_profile(data, series)
        self.tabs.setCurrentWidget(self.memory_view)
        ids = ", ".join(data.memory_ids)
        self.set_status(f"{session} / {host}: memory profile with {len(data.allocators)} allocator(s): {ids}")
        self._apply_jump()

    def _show_timeline(self, result) -> None:
        session, host, steps, step, timeline, stats = result
        # What to show: the tool last asked for, if it is this timeline's (clicked while it loaded).
        r = self.requested
        show = r[2] if r and tuple(r[:2]) == (session, host) and r[2] in TIMELINE_VIEWS else TRACE_VIEWER
        self.current_timeline = (session, host)
        self.current_step = step
        self.timeline_view.set_steps(steps, step)
        self.timeline_view.set_timeline(timeline)
        self.stats_timeline = timeline if stats is not None else None
        self.stats_view.set_stats(stats)
        if show in TIMELINE_TOOLS and stats is not None:
            self.show_statistics(show)
        else:
            self.tabs.setCurrentWidget(self.timeline_view)
        warn = f" Warnings: {'; '.join(timeline.warnings)}" if timeline.warnings else ""
        self.set_status(
            f"{session} / {host or ALL_HOSTS}{' / ' + step if step else ''}: {len(timeline):,} events on "
            f"{len(timeline.groups)} device(s).{warn}"
        )
        self._apply_jump()

    def _show_stats(self, result) -> None:
        session, host, timeline, stats = result
        if timeline is not self.stats_timeline:
            return  # another timeline was loaded meanwhile
        self.stats_view.set_stats(stats)
        self.set_status(f"{session} / {host or ALL_HOSTS}: statistics of {describe_range(stats.step_range)}.")

    def show_statistics(self, tool: str) -> None:
        """The Statistics tab on the page of a tool (overview, kernel_stats, op_stats)."""
        self.stats_view.show_page(tool)
        self.tabs.setCurrentWidget(self.stats_view)

    # ------------------------------------------------------------ jumps from query rows

    def show_jump(self, jump) -> None:
        """Shows a query row's slice or time in the timeline, or its memory
        moment, loading that host's data first when it is not shown."""
        tool = MEMORY_PROFILE if jump.kind == "memory" else TRACE_VIEWER
        place = self._jump_place(jump.session, jump.host, tool)
        if isinstance(place, str):
            self.set_status(place, error=True)
            return
        session, host = place
        self.pending_jump = (session, host, jump)
        if jump.kind == "memory":
            if self.current == (session, host) and not self.runner.busy and self.memory_view.data is not None:
                self._apply_jump()
            else:
                self.load_memory(session, host)
        elif (
            self.current_timeline == (session, host)
            and self.current_step == jump.tag
            and not self.runner.busy
            and self.timeline_view.timeline is not None
        ):
            self._apply_jump()
        else:
            self.load_timeline(session, host, jump.tag)

    def _jump_place(self, session: str | None, host: str | None, tool: str) -> tuple[str, str] | str:
        """The (session, host) a row names (the location's only one where it
        names none), or why there is none."""
        what = TOOL_TITLES[tool].lower()
        sessions = [s.name for s in self.repo.enum_sessions() if tool in s.tools] if self.repo is not None else []
        if session is None and len(sessions) == 1:
            session = sessions[0]
        if session not in sessions:
            return (
                f"No session {session!r} with a {what} here."
                if session is not None
                else f"The row has no session column and {len(sessions)} sessions have a {what}: select session too."
            )
        hosts = self.repo.hosts_with(session, tool)
        if host is None and len(hosts) == 1:
            host = hosts[0]
        if host not in hosts:
            return (
                f"{session} has no host {host!r} with a {what}."
                if host is not None
                else f"The row has no host column and {session} has {len(hosts)} hosts: select host too."
            )
        return session, host

    def _apply_jump(self) -> None:
        """Shows the pending jump if its data is what was just loaded (a later
        load by the user replaces it)."""
        if self.pending_jump is None:
            return
        (session, host, jump), self.pending_jump = self.pending_jump, None
        if jump.kind == "memory":
            if self.current != (session, host):
                return
            self.tabs.setCurrentWidget(self.memory_view)
            problem = self.memory_view.show_moment(jump.allocator, jump.snapshot, jump.time_ns)
        else:
            if self.current_timeline != (session, host) or self.current_step != jump.tag:
                return
            self.tabs.setCurrentWidget(self.timeline_view)
            problem = (
                self.timeline_view.show_event(jump.event)
                if jump.kind == "slice"
                else self.timeline_view.show_time(jump.start_ns, jump.dur_ns)
            )
        self._mark_in_tree((session, host, MEMORY_PROFILE if jump.kind == "memory" else TRACE_VIEWER))
        if problem:
            self.set_status(problem, error=True)

    def _mark_in_tree(self, target: tuple) -> None:
        """Makes the tree's current item the one of what a jump showed."""
        found = self.tree.findItems("*", Qt.MatchWildcard | Qt.MatchRecursive)
        item = next((i for i in found if tuple(i.data(0, ROLE_TARGET) or ()) == target), None)
        if item is not None:
            self.tree.setCurrentItem(item)

    def _on_tree_item(self, item: QTreeWidgetItem, _column=0) -> None:
        target = item.data(0, ROLE_TARGET)
        if target and tuple(target) == (HPARAMS,):
            self.tabs.setCurrentWidget(self.hparams_view)
        elif target and self.repo is not None and (tuple(target) != self.requested or target[2] in TIMELINE_TOOLS):
            self.load(*target)

    # ------------------------------------------------------------ status

    def set_status(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {Scheme.of(self).error().name()}" if error else "")

    def show_error(self, message: str) -> None:
        self.set_status(message, error=True)
        if self.requested and self.requested[2] in TIMELINE_TOOLS:
            self.stats_view.show_message(message)
            self.tabs.setCurrentWidget(self.stats_view)
        elif self.requested and self.requested[2] == TRACE_VIEWER:
            self.timeline_view.show_message(message)
        else:
            self.memory_view.show_message(message)

    def _on_progress(self, fraction: float, text: str) -> None:
        self.progress.setValue(int(fraction * 1000))
        if text:
            self.set_status(text + "…")

    def _set_busy(self, _busy: bool = False) -> None:
        busy = self.runner.busy or self.query_runner.busy  # either worker: a load or a query
        self.progress.setVisible(busy)
        self.cancel_button.setVisible(busy)
        if busy:
            self.progress.setValue(0)

    # ------------------------------------------------------------ drops and state

    def dragEnterEvent(self, event) -> None:
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_path(url.toLocalFile())
                event.acceptProposedAction()
                return

    def dock_width_wanted(self) -> int:
        """The Sessions dock's width for its content (the widest item, indented),
        at most a third of the window."""
        tree = self.tree
        content = max(tree.sizeHintForColumn(0), tree.header().sectionSizeHint(0))
        frame = 2 * tree.frameWidth() + tree.verticalScrollBar().sizeHint().width() + 8  # + the dock's margins
        return max(120, min(content + frame, self.width() // 3))

    def _fit_dock(self, force: bool = False) -> None:
        """On first launch (no saved layout) the dock follows the content once."""
        if not (self._fit_dock_pending or force) or self.tree.topLevelItemCount() == 0:
            return
        self._fit_dock_pending = False
        self.resizeDocks([self.sessions_dock], [self.dock_width_wanted()], Qt.Horizontal)

    def reset_layout(self) -> None:
        """The first-launch layout: default size, the dock shown and fitted to its content."""
        self.settings.remove("geometry")
        self.settings.remove("window_state")
        if self.isMaximized() or self.isFullScreen():
            self.showNormal()
        self.restoreState(self._default_state)
        self.resize(*DEFAULT_SIZE)
        self._fit_dock(force=True)

    def _restore(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = self.settings.value("window_state")
        if state is not None and self.restoreState(state):
            self._fit_dock_pending = False

    def closeEvent(self, event) -> None:
        self.query_runner.close(5000)
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("window_state", self.saveState())
        self._save_hparams_layout()
        self.watch_timer.stop()
        for runner in (self.runner, self.hparams_runner, self.curves_runner):
            runner.cancel()
            runner.wait(5000)
        super().closeEvent(event)
