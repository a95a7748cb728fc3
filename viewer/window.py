"""The main window: open a folder or file, pick a session and host in the
tree, look at one tab per view. Loading runs in a worker; the status bar shows
progress, a cancel button and errors."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QDockWidget, QFileDialog, QFormLayout, QHBoxLayout,
                               QInputDialog, QLabel, QLineEdit, QMainWindow, QProgressBar, QPushButton, QSpinBox,
                               QTabWidget, QTreeWidget, QTreeWidgetItem, QWidget)

from models.hparams import load_hparams
from models.remote import SCHEME
from models.remote.client import capture
from models.formats import file_patterns
from models.locations import open_location
from models.registry import MEMORY_PROFILE, TRACE_VIEWER
from models.repository import ProfileRepository
from models.tb_logdir import logdir_signature
from widgets.hparams_view import HParamsView
from widgets.memory_view import MemoryView
from widgets.timeline_view import TimelineView
from viewer.workers import TaskRunner

MAX_RECENT = 8
ROLE_TARGET = Qt.UserRole  # (session, host, tool) of a tree item
HPARAMS = "hparams"  # tree target of the HParams entry
WATCH_INTERVAL_MS = 5000  # how often a watched log dir is checked for new data


TOOL_TITLES = {MEMORY_PROFILE: "Memory", TRACE_VIEWER: "Timeline"}
ALL_HOSTS = "All hosts"  # tree entry: the timeline of every host of a session


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
        self.folder = QLineEdit(settings.value("capture_folder", str(Path.home() / "profscope-logs" / "plugins" / "profile")))
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
        path = QFileDialog.getExistingDirectory(self, "Repository folder (<logdir>/plugins/profile)", self.folder.text())
        if path:
            self.folder.setText(path)

    def values(self) -> tuple[str, int, str]:
        self.settings.setValue("capture_address", self.address.text().strip())
        self.settings.setValue("capture_ms", self.duration.value())
        self.settings.setValue("capture_folder", self.folder.text().strip())
        return self.address.text().strip(), self.duration.value(), self.folder.text().strip()


class MainWindow(QMainWindow):
    def __init__(self, settings: QSettings | None = None):
        super().__init__()
        self.setWindowTitle("Profscope")
        self.setAcceptDrops(True)
        self.settings = settings or QSettings()
        self.repo: ProfileRepository | None = None
        self.current: tuple[str, str] | None = None  # (session, host) of the memory tab
        self.current_timeline: tuple[str, str] | None = None  # (session, host) of the timeline tab
        self.requested: tuple | None = None  # (session, host, tool) last asked for
        self.opened_path: str | None = None
        self.runner = TaskRunner(self)
        # HParams loads and watch checks run apart, so they never cancel a profile load.
        self.hparams_runner = TaskRunner(self)
        self.hparams_path: str | None = None
        self.hparams_signature = None
        self.watch_timer = QTimer(self, interval=WATCH_INTERVAL_MS)
        self.watch_timer.timeout.connect(self._check_for_new_data)

        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Sessions"])
        dock = QDockWidget("Sessions", self)
        dock.setObjectName("sessions")
        dock.setWidget(self.tree)
        self.addDockWidget(Qt.LeftDockWidgetArea, dock)
        self.memory_view = MemoryView()
        self.timeline_view = TimelineView()
        self.hparams_view = HParamsView()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.memory_view, "Memory")
        self.tabs.addTab(self.timeline_view, "Timeline")
        self.tabs.addTab(self.hparams_view, "HParams")
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
        self.memory_view.host_requested.connect(lambda host: self.load_memory(self.current[0], host) if self.current else None)
        self.timeline_view.step_requested.connect(
            lambda step: self.load_timeline(*self.current_timeline, step) if self.current_timeline else None)
        self.hparams_view.watch_toggled.connect(self.set_watching)
        self.hparams_runner.failed.connect(self.show_error)
        self.cancel_button.clicked.connect(self.cancel)
        self.runner.progress.connect(self._on_progress)
        self.runner.busy_changed.connect(self._set_busy)
        self.runner.failed.connect(self.show_error)
        self.runner.cancelled.connect(lambda: self.set_status("Cancelled."))
        self.resize(1280, 860)
        self._restore()

    # ------------------------------------------------------------ menus

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "Open &Folder…", QKeySequence.Open, self.open_folder_dialog)
        self._action(file_menu, "Open F&ile…", "Ctrl+Shift+O", self.open_file_dialog)
        self._action(file_menu, "Open &Server…", "Ctrl+Alt+O", self.open_server_dialog)
        self._action(file_menu, "&Capture Profile…", "Ctrl+R", self.capture_dialog)
        self.recent_menu = file_menu.addMenu("Open &Recent")
        self._action(file_menu, "&Reload", QKeySequence.Refresh, self.reload)
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.Quit, self.close)
        view_menu = self.menuBar().addMenu("&View")
        self._action(view_menu, "Reset &Zoom", "Ctrl+0", self.reset_zoom)
        self._action(view_menu, "Table at &Peak", "Ctrl+P", lambda: self.memory_view.pick_moment(None))
        self._action(view_menu, "&Cancel Loading", "Esc", self.cancel)
        self._update_recent_menu()

    def _action(self, menu, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
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
        path = QFileDialog.getExistingDirectory(self, "Open log dir or profile folder", self.settings.value("last_folder", ""))
        if path:
            self.open_path(path)

    def open_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open profile file", self.settings.value("last_folder", ""),
                                              f"Profiles ({' '.join(file_patterns())});;All files (*)")
        if path:
            self.open_path(path)

    def open_server_dialog(self) -> None:
        address, ok = QInputDialog.getText(self, "Open a ProfileAnalysis server", "Address (host:port):",
                                           text=self.settings.value("last_server", "localhost:50051"))
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
        self.hparams_path = self.opened_path if hparams else None
        self.hparams_view.set_data(hparams[0] if hparams else None)
        self.hparams_signature = hparams[1] if hparams else None
        self.tabs.setTabVisible(self.tabs.indexOf(self.hparams_view), hparams is not None)
        for view in (self.memory_view, self.timeline_view):
            self.tabs.setTabVisible(self.tabs.indexOf(view), repo is not None)
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
            warnings = data.logdir.warnings
            self.hparams_view.show_message(
                f"{len(warnings):,} problem(s) reading the log dir; skipped what could not be read. First: {warnings[0]}"
                if warnings else "")
            if repo is None or not repo.enum_sessions():
                self.tree.setCurrentItem(item)
                self.tabs.setCurrentWidget(self.hparams_view)
                self.set_status(f"Opened {self.opened_path}: {len(data.session_runs):,} HParams sessions.")

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
        self.set_status(f"{self.hparams_path}: reloaded, {len(data.session_runs):,} HParams sessions.")

    def reset_zoom(self) -> None:
        if self.tabs.currentWidget() is self.hparams_view:
            return
        if self.tabs.currentWidget() is self.timeline_view:
            self.timeline_view.canvas.reset_zoom()
        else:
            self.memory_view.plot.reset_zoom()

    def load(self, session: str, host: str, tool: str) -> None:
        if tool == TRACE_VIEWER:
            self.load_timeline(session, host)
        else:
            self.load_memory(session, host)

    def load_timeline(self, session: str, host: str, step: str = "") -> None:
        repo = self.repo
        self.requested = (session, host, TRACE_VIEWER)
        self.set_status(f"Loading the timeline of {session} / {host or ALL_HOSTS}…")

        def job(task):
            steps = repo.steps(session, host)
            return session, host, steps, step or (steps[0] if steps else ""), repo.step_timeline(session, host, step, task)

        self.runner.start(job, self._show_timeline)

    def load_memory(self, session: str, host: str) -> None:
        repo = self.repo
        self.requested = (session, host, MEMORY_PROFILE)
        self.set_status(f"Loading memory profile of {session} / {host}…")
        self.runner.start(lambda task: (session, host, repo.memory_profile(session, host, task)), self._show_memory)

    def cancel(self) -> None:
        self.runner.cancel()

    def _show_repository(self, repo: ProfileRepository) -> None:
        self.setWindowTitle(f"Profscope: {repo.location}")
        latest = None
        for info in sorted(repo.enum_sessions(), key=lambda s: s.name):
            item = QTreeWidgetItem(self.tree, [info.name])
            for host in info.hosts:
                host_item = QTreeWidgetItem(item, [host])
                tools = [t for t in info.tools if host in repo.hosts_with(info.name, t)]
                for tool in tools:
                    tool_item = QTreeWidgetItem(host_item, [TOOL_TITLES.get(tool, tool)])
                    tool_item.setData(0, ROLE_TARGET, (info.name, host, tool))
                host_item.setData(0, ROLE_TARGET, (info.name, host, _preferred_tool(tools)))
            if repo.combines_hosts(info.name):
                all_item = QTreeWidgetItem(item, [ALL_HOSTS])
                all_item.setData(0, ROLE_TARGET, (info.name, "", TRACE_VIEWER))
            if info.hosts:
                latest = item.child(0)
        self.tree.expandAll()
        self.set_status(f"Opened {repo.location}: {self.tree.topLevelItemCount()} session(s).")
        if latest is not None:
            self.tree.setCurrentItem(latest)
            self.load(*latest.data(0, ROLE_TARGET))

    def _show_memory(self, result) -> None:
        session, host, data = result
        self.current = (session, host)
        self.memory_view.set_hosts(list(self.repo.session(session).hosts), host)
        self.memory_view.set_profile(data)
        self.tabs.setCurrentWidget(self.memory_view)
        ids = ", ".join(data.memory_ids)
        self.set_status(f"{session} / {host}: memory profile with {len(data.allocators)} allocator(s): {ids}")

    def _show_timeline(self, result) -> None:
        session, host, steps, step, timeline = result
        self.current_timeline = (session, host)
        self.timeline_view.set_steps(steps, step)
        self.timeline_view.set_timeline(timeline)
        self.tabs.setCurrentWidget(self.timeline_view)
        warn = f" Warnings: {'; '.join(timeline.warnings)}" if timeline.warnings else ""
        self.set_status(f"{session} / {host or ALL_HOSTS}{' / ' + step if step else ''}: {len(timeline):,} events on "
                        f"{len(timeline.groups)} device(s).{warn}")

    def _on_tree_item(self, item: QTreeWidgetItem, _column=0) -> None:
        target = item.data(0, ROLE_TARGET)
        if target and tuple(target) == (HPARAMS,):
            self.tabs.setCurrentWidget(self.hparams_view)
        elif target and self.repo is not None and tuple(target) != self.requested:
            self.load(*target)

    # ------------------------------------------------------------ status

    def set_status(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet("color: #b71c1c" if error else "")

    def show_error(self, message: str) -> None:
        self.set_status(message, error=True)
        if self.requested and self.requested[2] == TRACE_VIEWER:
            self.timeline_view.show_message(message)
        else:
            self.memory_view.show_message(message)

    def _on_progress(self, fraction: float, text: str) -> None:
        self.progress.setValue(int(fraction * 1000))
        if text:
            self.set_status(text + "…")

    def _set_busy(self, busy: bool) -> None:
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

    def _restore(self) -> None:
        geometry = self.settings.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        state = self.settings.value("window_state")
        if state is not None:
            self.restoreState(state)

    def closeEvent(self, event) -> None:
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("window_state", self.saveState())
        self.watch_timer.stop()
        for runner in (self.runner, self.hparams_runner):
            runner.cancel()
            runner.wait(5000)
        super().closeEvent(event)
