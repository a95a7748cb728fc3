"""The main window: the session tree in a dock, one tab per view, the menus
and the status bar (progress, cancel, errors). What each menu, tab or tree
click does is in a controller (profscope.viewer.controllers); the window
builds them from its runners and views and wires the signals."""

from __future__ import annotations

from PySide6.QtCore import QSettings, Qt, QUrl
from PySide6.QtGui import QAction, QDesktopServices, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QLabel,
    QMainWindow,
    QMenu,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QTabWidget,
    QTreeWidget,
    QTreeWidgetItem,
)

from profscope.models.hparams.curves import curves_job
from profscope.models.repository.profile_repository import ProfileRepository
from profscope.models.repository.registry import OP_STATS, TRACE_VIEWER
from profscope.viewer import help_menu, session_tree
from profscope.viewer.controllers.capture import CaptureController
from profscope.viewer.controllers.compare import CompareController
from profscope.viewer.controllers.hparams import HParamsController
from profscope.viewer.controllers.jumps import JumpController
from profscope.viewer.controllers.loading import LoadController
from profscope.viewer.controllers.opening import OpenController
from profscope.viewer.controllers.xprof_links import XprofLinks
from profscope.viewer.desktop import app_icon
from profscope.viewer.query_runner import QueryRunner
from profscope.viewer.session_tree import HPARAMS, ROLE_TARGET
from profscope.viewer.workers import TaskRunner
from profscope.widgets.compare.view import CompareView
from profscope.widgets.hparams.view import HParamsView
from profscope.widgets.memory.view import MemoryView
from profscope.widgets.palette import Scheme
from profscope.widgets.query.view import QueryView
from profscope.widgets.stats.trace_stats_view import TraceStatsView
from profscope.widgets.timeline.view import TimelineView
from profscope.widgets.xprof.view import TOOL_TITLES as XPROF_VIEWS
from profscope.widgets.xprof.view import XprofStatsView

DEFAULT_SIZE = (1280, 860)


class MainWindow(QMainWindow):
    def __init__(self, settings: QSettings | None = None):
        super().__init__()
        self.setWindowTitle("Profscope")
        self.setWindowIcon(app_icon())
        self.setAcceptDrops(True)
        self.settings = settings or QSettings()
        self.runner = TaskRunner(self)
        # HParams loads and watch checks run apart, so they never cancel a profile load.
        self.hparams_runner = TaskRunner(self)
        self.curves_runner = TaskRunner(self)  # the selected sessions' training curves
        self.xprof_runner = TaskRunner(self)  # an XProf page's later request (a module): never cancels a load
        self.query_runner = QueryRunner(self)  # apart from self.runner: a query never cancels a load

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
        self.xprof_view = XprofStatsView()
        self.query_view = QueryView(self.query_runner, self.settings)
        self.compare_view = CompareView()
        self.tabs = QTabWidget()
        self.tabs.addTab(self.memory_view, "Memory")
        self.tabs.addTab(self.timeline_view, "Timeline")
        self.tabs.addTab(self.stats_view, "Statistics")
        self.tabs.addTab(self.xprof_view, "XProf Statistics")
        self.tabs.addTab(self.hparams_view, "HParams")
        self.tabs.addTab(self.query_view, "Query")
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

        status = self.set_status
        self.recent_menu = QMenu("Open &Recent", self)
        self.opening = OpenController(self, self.runner, self.settings, self.recent_menu, status)
        self.loading = LoadController(
            self.runner, self.tabs, self.memory_view, self.timeline_view, self.stats_view, status, self,
            xprof_view=self.xprof_view, xprof_runner=self.xprof_runner,
        )
        self.hparams = HParamsController(self.hparams_runner, self.hparams_view, self.settings, status, self)
        self.compare = CompareController(self, self.runner, self.tabs, self.compare_view, status)
        self.capture = CaptureController(
            self, self.runner, self.settings, self.opening.open_path, self.loading.show_error, status
        )
        self.jumps = JumpController(
            self.loading, self.tabs, self.memory_view, self.timeline_view, self.tree, status, self
        )
        self.xprof_links = XprofLinks(self.loading, self.xprof_view, self.timeline_view, status, self)
        self._build_menus()
        self._connect()
        self.resize(*DEFAULT_SIZE)
        self.resizeDocks([dock], [230], Qt.Horizontal)  # room for host names; a saved state overrides it
        self._default_state = self.saveState()
        self._fit_dock_pending = True  # until a saved layout is restored or the tree is first filled
        self._widen_dock_pending = False  # a restored layout's dock, widened to its content when too narrow
        self._restore()

    def _connect(self) -> None:
        self.tree.itemActivated.connect(self._on_tree_item)
        self.tree.itemClicked.connect(self._on_tree_item)
        self.tree.setContextMenuPolicy(Qt.CustomContextMenu)
        self.tree.customContextMenuRequested.connect(
            lambda pos: (
                (menu := self.compare.tree_menu(self.tree.itemAt(pos)))
                and menu.exec(self.tree.viewport().mapToGlobal(pos))
            )
        )
        self.opening.opened.connect(self._show_opened)
        self.opening.failed.connect(self._show_open_failed)
        self.runner.cancelled.connect(self.opening.scan_ended)
        self.loading.shown.connect(self.jumps.apply)
        self.loading.shown.connect(self._learn_steps)
        self.compare_view.align_requested.connect(self.compare.realign_memory)
        self.compare_view.steps_requested.connect(self.compare.restep)
        self.compare_view.host_requested.connect(self.compare.rehost)
        self.memory_view.host_requested.connect(self.loading.load_memory_host)
        self.tabs.currentChanged.connect(
            lambda i: self.tabs.widget(i) is self.memory_view and self.loading.show_memory_tab()
        )
        self.tabs.currentChanged.connect(lambda i: self.loading.restate(self.tabs.widget(i)))
        self.timeline_view.step_requested.connect(self.loading.load_step)
        self.stats_view.step_range_requested.connect(self.loading.recompute_stats)
        self.query_view.jump_requested.connect(self.jumps.show_jump)
        self.query_runner.progress.connect(self._on_progress)
        self.query_runner.busy_changed.connect(self._set_busy)
        self.query_runner.finished.connect(
            lambda o: self.set_status(
                f"Query: {(n := o.result.table.num_rows):,} row{'s' if n != 1 else ''}"
                + (f": {o.why_empty}." if o.why_empty else ".")
            )
        )
        self.query_runner.failed.connect(lambda message, _: self.set_status(message.splitlines()[0], error=True))
        self.hparams_view.watch_toggled.connect(self.hparams.set_watching)
        self.hparams_view.request_curves = lambda data, sessions, metrics, done: self.curves_runner.start(
            curves_job(data, sessions, metrics), done
        )
        self.hparams_view.layout_changed.connect(self.hparams.save_layout)
        self.hparams.reloaded.connect(lambda data: self.query_runner.set_location(self.loading.repo, data))
        self.curves_runner.failed.connect(self.hparams_view.curves.show_message)
        self.hparams_runner.failed.connect(self.loading.show_error)
        self.cancel_button.clicked.connect(self.cancel)
        self.runner.progress.connect(self._on_progress)
        self.runner.busy_changed.connect(self._set_busy)
        self.runner.busy_changed.connect(self.stats_view.set_busy)
        self.runner.failed.connect(lambda text: self.opening.claim_failure(text) or self.loading.show_error(text))
        self.runner.cancelled.connect(lambda: self.set_status("Cancelled."))

    # ------------------------------------------------------------ menus

    def _build_menus(self) -> None:
        file_menu = self.menuBar().addMenu("&File")
        self._action(file_menu, "Open &Folder…", QKeySequence.Open, self.opening.open_folder_dialog)
        self._action(file_menu, "Open F&ile…", "Ctrl+Shift+O", self.opening.open_file_dialog)
        self._action(file_menu, "Open &Server…", "Ctrl+Alt+O", self.opening.open_server_dialog)
        self._action(file_menu, "&Capture Profile…", "Ctrl+R", self.capture.capture_dialog)
        self._action(file_menu, "Com&pare Profiles…", "Ctrl+Shift+D", self.compare.compare_dialog)
        file_menu.addMenu(self.recent_menu)
        self._action(file_menu, "&Reload", QKeySequence.Refresh, self.opening.reload)
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

    def _action(self, menu, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
        if shortcut:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        self.addAction(action)
        return action

    # ------------------------------------------------------------ help

    def shortcut_rows(self) -> list[tuple[str, str, str]]:
        return help_menu.shortcut_rows(self.menuBar())

    def show_shortcuts(self) -> None:
        self.shortcuts_dialog = help_menu.ShortcutsDialog(self, self.shortcut_rows())
        self.shortcuts_dialog.open()

    def show_about(self) -> None:
        text = help_menu.about_text(self.settings.fileName())
        self.about_box = QMessageBox(QMessageBox.Information, "About Profscope", text, QMessageBox.Close, self)
        self.about_box.setTextFormat(Qt.RichText)
        if not self.windowIcon().isNull():
            self.about_box.setIconPixmap(self.windowIcon().pixmap(64, 64))
        self.about_box.open()

    open_url = staticmethod(QDesktopServices.openUrl)  # tests replace it

    def open_log_folder(self) -> None:
        folder = help_menu.log_folder()
        if not self.open_url(QUrl.fromLocalFile(str(folder))):
            self.set_status(f"Could not open {folder} (no file manager?)", error=True)

    # ------------------------------------------------------------ an opened location

    def open_path(self, path: str) -> None:
        """Scans a path in the background for profiles and HParams data, then
        shows its latest session (or the HParams tab when it has only that)."""
        self.opening.open_path(path)

    def _learn_steps(self) -> None:
        """A shown timeline's ProfilerSteps tell the example queries which steps exist (until a query has read
        every host's timelines, which knows them all)."""
        stats = self.stats_view.stats
        if stats is not None and self.query_runner.facts.steps is None and len(stats.step_numbers):
            self.query_runner.learn_steps(stats.step_numbers.tolist())

    def _show_opened(self, path: str, repo: ProfileRepository | None, hparams: tuple | None) -> None:
        data = hparams[0] if hparams else None
        self._replace_location(path, repo, hparams)
        self.tabs.setTabVisible(self.tabs.indexOf(self.hparams_view), hparams is not None)
        sessions = repo.enum_sessions() if repo is not None else []
        self.tabs.setTabVisible(self.tabs.indexOf(self.memory_view), repo is not None)
        # a tab only where some session has its data (a LogMemory log has no timeline)
        self.tabs.setTabVisible(self.tabs.indexOf(self.timeline_view), any(TRACE_VIEWER in s.tools for s in sessions))
        self.tabs.setTabVisible(self.tabs.indexOf(self.stats_view), any(OP_STATS in s.tools for s in sessions))
        self.tabs.setTabVisible(self.tabs.indexOf(self.xprof_view),
                                any(t in XPROF_VIEWS for s in sessions for t in s.tools if OP_STATS not in s.tools))
        if repo is not None:
            self._show_repository(repo)
        else:
            self.setWindowTitle(f"Profscope: {path}")
        if data is not None:
            item = session_tree.add_hparams_entry(self.tree, len(data.session_runs))
            self._fit_dock()
            if not sessions:
                self.tree.setCurrentItem(item)
                self.tabs.setCurrentWidget(self.hparams_view)
                self.set_status(f"Opened {path}: {len(data.session_runs):,} HParams sessions.")

    def _replace_location(self, path: str | None, repo: ProfileRepository | None, hparams: tuple | None) -> None:
        """Every view drops what the previous location showed: one location is open at a time."""
        self.query_runner.set_location(repo, hparams[0] if hparams else None)
        self.query_view.set_location(path if repo is not None or hparams is not None else None)
        self.hparams.show(path or "", hparams)
        self.compare.set_location(path, repo)
        self.tabs.setTabVisible(self.tabs.indexOf(self.compare_view), False)  # the old location's comparison
        self.loading.set_repository(repo)
        self.tree.clear()
        self.setWindowTitle("Profscope")

    def _show_open_failed(self, path: str, message: str) -> None:
        """A location that could not be opened: nothing of the previous one stays; the
        status line and the current tab say what failed."""
        self._replace_location(None, None, None)
        for view in (self.memory_view, self.timeline_view, self.stats_view, self.xprof_view, self.hparams_view,
                     self.query_view):
            self.tabs.setTabVisible(self.tabs.indexOf(view), True)  # as at start
        self.set_status(message, error=True)
        current = self.tabs.currentWidget()
        if current is self.memory_view:
            self.memory_view.show_empty(message)
        elif current is self.query_view:
            self.query_view.summary.setText(message)
        else:
            current.show_message(message)

    def _show_repository(self, repo: ProfileRepository) -> None:
        self.setWindowTitle(f"Profscope: {repo.location}")
        latest = session_tree.fill(self.tree, repo)
        self._fit_dock()
        self.set_status(f"Opened {repo.location}: {self.tree.topLevelItemCount()} session(s).")
        if latest is not None:
            self.tree.setCurrentItem(latest)
            self.loading.load(*latest.data(0, ROLE_TARGET))

    def _on_tree_item(self, item: QTreeWidgetItem, _column=0) -> None:
        target = item.data(0, ROLE_TARGET)
        if target and tuple(target) == (HPARAMS,):
            self.tabs.setCurrentWidget(self.hparams_view)
        elif target:
            self.loading.pick(tuple(target))

    def reset_zoom(self) -> None:
        if self.tabs.currentWidget() in (self.hparams_view, self.stats_view):
            return
        if self.tabs.currentWidget() is self.timeline_view:
            self.timeline_view.canvas.reset_zoom()
        else:
            self.memory_view.plot.reset_zoom()

    def cancel(self) -> None:
        self.runner.cancel()
        self.query_runner.cancel()

    # ------------------------------------------------------------ status

    def set_status(self, text: str, error: bool = False) -> None:
        self.status.setText(text)
        self.status.setStyleSheet(f"color: {Scheme.of(self).error().name()}" if error else "")

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
        if self.opening.accepts_drag(event):
            event.acceptProposedAction()

    def dropEvent(self, event) -> None:
        self.opening.drop(event)

    def dock_width_wanted(self) -> int:
        """The Sessions dock's width for its content (the widest item, indented),
        at most a third of the window."""
        tree = self.tree
        content = max(tree.sizeHintForColumn(0), tree.header().sectionSizeHint(0))
        frame = 2 * tree.frameWidth() + tree.verticalScrollBar().sizeHint().width() + 8  # + the dock's margins
        return max(120, min(content + frame, self.width() // 3))

    def _fit_dock(self, force: bool = False) -> None:
        """On first launch (no saved layout) the dock follows the content once;
        a restored dock narrower than its content is widened once."""
        if self.tree.topLevelItemCount() == 0:
            return
        wanted = self.dock_width_wanted()
        narrow = self._widen_dock_pending and self.sessions_dock.width() < wanted
        self._widen_dock_pending = False
        if not (self._fit_dock_pending or force or narrow):
            return
        self._fit_dock_pending = False
        self.resizeDocks([self.sessions_dock], [wanted], Qt.Horizontal)

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
            self._widen_dock_pending = True

    def closeEvent(self, event) -> None:
        self.query_runner.close(5000)
        self.settings.setValue("geometry", self.saveGeometry())
        self.settings.setValue("window_state", self.saveState())
        self.hparams.save_layout()
        self.hparams.watch_timer.stop()
        for runner in (self.runner, self.hparams_runner, self.curves_runner, self.xprof_runner):
            runner.cancel()
            runner.wait(5000)
        super().closeEvent(event)
