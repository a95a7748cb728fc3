"""The window's controllers, each built alone from real runners and views (or
fakes), without a MainWindow: what a user would notice of each."""

import shutil

import pytest
from conftest import DATA, SAMPLE, SMALL_XPROF
from PySide6.QtCore import QMimeData, QPointF, QSettings, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QMenu, QTabWidget, QTreeWidget

from profscope.models.analysis.comparison import Place
from profscope.models.repository.locations import open_repository
from profscope.models.repository.registry import KERNEL_STATS, MEMORY_PROFILE, TRACE_VIEWER
from profscope.viewer import session_tree
from profscope.viewer.controllers.capture import CaptureController
from profscope.viewer.controllers.compare import CompareController
from profscope.viewer.controllers.hparams import HParamsController
from profscope.viewer.controllers.jumps import JumpController
from profscope.viewer.controllers.loading import LoadController
from profscope.viewer.controllers.opening import MAX_RECENT, OpenController
from profscope.viewer.workers import TaskRunner
from profscope.widgets.query.model import Jump

PAIR = DATA / "chrome_trace" / "diff_pair"
GPU_TRACES = DATA / "chrome_trace" / "gpu"
KERAS_SWEEP = DATA / "hparams" / "keras_callback"


class FakeRunner:
    """Records the jobs started instead of running them."""

    def __init__(self):
        self.started = []
        self.busy = False

    def start(self, fn, on_finished=None):
        self.started.append((fn, on_finished))


class Status:
    """A set_status that keeps every (text, error)."""

    def __init__(self):
        self.shown = []

    def __call__(self, text, error=False):
        self.shown.append((text, error))

    @property
    def last(self):
        return self.shown[-1][0]


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)


@pytest.fixture
def runner(qtbot):
    r = TaskRunner()
    yield r
    r.cancel()
    assert r.wait(10000)


# ---------------------------------------------------------------- opening and recent files


def test_recent_files_newest_first_without_repeats_and_limited(qtbot, settings, tmp_path):
    menu = QMenu()
    opening = OpenController(None, FakeRunner(), settings, menu, Status())
    assert not menu.isEnabled()  # nothing opened yet
    paths = [str(tmp_path / f"run{i}") for i in range(MAX_RECENT + 2)]
    for path in paths:
        opening.open_path(path)
    assert opening.recent() == paths[:1:-1]  # the newest MAX_RECENT, newest first
    opening.open_path(paths[5])  # opened again: first, once
    expected = [paths[i] for i in (5, 9, 8, 7, 6, 4, 3, 2)]
    assert opening.recent() == expected and len(expected) == MAX_RECENT
    assert [a.text() for a in menu.actions()] == expected and menu.isEnabled()
    assert settings.value("last_folder") == paths[5]
    # A fresh controller on the same settings shows the same list.
    again = QMenu()
    OpenController(None, FakeRunner(), settings, again, Status())
    assert [a.text() for a in again.actions()] == expected


def test_a_recent_entry_opens_its_path(qtbot, settings):
    menu = QMenu()
    runner = FakeRunner()
    opening = OpenController(None, runner, settings, menu, Status())
    opening.remember(str(SAMPLE))
    menu.actions()[0].trigger()
    assert opening.path == str(SAMPLE) and len(runner.started) == 1


def test_an_opened_location_comes_back_as_a_signal(qtbot, settings, runner):
    status = Status()
    opening = OpenController(None, runner, settings, QMenu(), status)
    with qtbot.waitSignal(opening.opened, timeout=20000) as opened:
        opening.open_path(str(SMALL_XPROF))
    path, repo, hparams = opened.args
    assert path == str(SMALL_XPROF) and repo.enum_sessions() and hparams is None
    assert status.shown == [(f"Opening {SMALL_XPROF}…", False)]


def test_a_failed_open_is_reported_once(qtbot, settings, runner, tmp_path):
    opening = OpenController(None, runner, settings, QMenu(), Status())
    failures, opened = [], []
    runner.failed.connect(failures.append)
    opening.opened.connect(lambda *args: opened.append(args))
    with qtbot.waitSignal(runner.failed, timeout=20000):
        opening.open_path(str(tmp_path / "nothing-here"))
    qtbot.wait(50)
    assert len(failures) == 1 and "no such file" in failures[0] and opened == []
    assert opening.recent() == [str(tmp_path / "nothing-here")]  # still in the list, as before


def test_a_dropped_file_is_opened(qtbot, settings):
    runner = FakeRunner()
    opening = OpenController(None, runner, settings, QMenu(), Status())
    mime = QMimeData()
    mime.setUrls([QUrl("https://example.com/x"), QUrl.fromLocalFile(str(SMALL_XPROF))])
    event = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    assert opening.accepts_drag(event)
    opening.drop(event)
    assert opening.path == str(SMALL_XPROF) and len(runner.started) == 1
    remote = QMimeData()
    remote.setUrls([QUrl("https://example.com/x")])
    assert not opening.accepts_drag(QDropEvent(QPointF(1, 1), Qt.CopyAction, remote, Qt.LeftButton, Qt.NoModifier))


# ---------------------------------------------------------------- loading per tool


@pytest.fixture
def loading(qtbot, runner):
    from profscope.widgets.memory.view import MemoryView
    from profscope.widgets.stats.trace_stats_view import TraceStatsView
    from profscope.widgets.timeline.view import TimelineView

    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    for view, title in ((MemoryView(), "Memory"), (TimelineView(), "Timeline"), (TraceStatsView(), "Statistics")):
        tabs.addTab(view, title)
    status = Status()
    controller = LoadController(runner, tabs, tabs.widget(0), tabs.widget(1), tabs.widget(2), status)
    controller.status = status
    return controller


def test_loading_a_memory_profile_shows_its_tab(qtbot, loading):
    repo = open_repository(SMALL_XPROF)
    session = repo.enum_sessions()[0]
    loading.set_repository(repo)
    with qtbot.waitSignal(loading.shown, timeout=20000):
        loading.pick((session.name, session.hosts[0], MEMORY_PROFILE))
    assert loading.current == (session.name, session.hosts[0])
    assert loading.tabs.currentWidget() is loading.memory_view and loading.memory_view.allocator is not None
    assert "memory profile with 1 allocator" in loading.status.last
    with qtbot.assertNotEmitted(loading.runner.busy_changed):
        loading.pick((session.name, session.hosts[0], MEMORY_PROFILE))  # shown already: nothing loads


def test_a_statistics_page_of_the_loaded_timeline_shows_without_loading(qtbot, loading):
    repo = open_repository(GPU_TRACES)
    loading.set_repository(repo)
    with qtbot.waitSignal(loading.shown, timeout=20000):
        loading.load("gpu", "rank-0", TRACE_VIEWER)
    assert loading.current_timeline == ("gpu", "rank-0") and loading.tabs.currentWidget() is loading.timeline_view
    assert loading.stats_timeline is loading.timeline_view.timeline
    with qtbot.assertNotEmitted(loading.runner.busy_changed):
        loading.pick(("gpu", "rank-0", KERNEL_STATS))
    assert loading.tabs.currentWidget() is loading.stats_view and loading.stats_view.current_page() == KERNEL_STATS
    loading.set_repository(repo)  # opened again: what was loaded is forgotten
    assert loading.current_timeline is None and loading.stats_view.stats is None


def test_an_error_shows_in_the_tab_of_what_was_asked_for(qtbot, loading):
    loading.requested = ("s", "h", KERNEL_STATS)
    loading.show_error("broken")
    assert loading.status.shown[-1] == ("broken", True)
    assert loading.tabs.currentWidget() is loading.stats_view
    assert loading.stats_view.message.isVisibleTo(loading.stats_view)


# ---------------------------------------------------------------- HParams and watching


@pytest.fixture
def hparams(qtbot, settings):
    from profscope.widgets.hparams.view import HParamsView

    view = HParamsView()
    qtbot.addWidget(view)
    r = TaskRunner()
    controller = HParamsController(r, view, settings, Status())
    yield controller
    controller.watch_timer.stop()
    r.cancel()
    assert r.wait(10000)


def test_the_watch_timer_starts_and_stops(hparams):
    assert not hparams.watch_timer.isActive()
    hparams.set_watching(True)
    assert hparams.watch_timer.isActive() and hparams.watch_timer.interval() == 5000
    hparams.set_watching(False)
    assert not hparams.watch_timer.isActive()


def test_watching_reloads_only_when_the_log_dir_changed(qtbot, hparams, tmp_path):
    from profscope.models.hparams.experiment import load_hparams
    from profscope.models.hparams.logdir import logdir_signature

    logdir = tmp_path / "sweep"
    shutil.copytree(KERAS_SWEEP, logdir)
    hparams.show(str(logdir), (load_hparams(str(logdir)), logdir_signature(str(logdir))))
    assert hparams.view.model.rowCount() == 3
    reloaded = []
    hparams.reloaded.connect(reloaded.append)
    with qtbot.waitSignal(hparams.runner.finished, timeout=20000):
        hparams.check_for_new_data()
    assert reloaded == []
    source = next(p for p in KERAS_SWEEP.iterdir() if p.name.startswith("units8_lr0.01"))
    shutil.copytree(source, logdir / "units8_lr0.01_rep9")
    with qtbot.waitSignal(hparams.reloaded, timeout=20000):
        hparams.check_for_new_data()
    assert sum(len(s) for s in hparams.view.model.table.sessions) == 5
    assert "reloaded" in hparams.set_status.last


def test_nothing_is_watched_without_a_sweep(hparams):
    hparams.show("/somewhere", None)
    hparams.check_for_new_data()
    assert not hparams.runner.busy and hparams.view.data is None


def test_the_layout_is_saved_per_log_dir(hparams, settings):
    from profscope.models.hparams.experiment import load_hparams

    hparams.show(str(KERAS_SWEEP), (load_hparams(str(KERAS_SWEEP)), None))
    hparams.view.set_column_visible(1, False)
    hparams.save_layout()
    assert hparams.layout(str(KERAS_SWEEP)) == hparams.view.layout_state()
    assert hparams.layout(str(KERAS_SWEEP / "other")) == {}


# ---------------------------------------------------------------- compare


@pytest.fixture
def comparing(qtbot, runner):
    from profscope.widgets.compare.view import CompareView

    tabs = QTabWidget()
    qtbot.addWidget(tabs)
    view = CompareView()
    tabs.addTab(view, "Compare")
    tabs.setTabVisible(0, False)
    return CompareController(None, runner, tabs, view, Status())


def test_a_compare_request_reaches_the_compare_view(qtbot, comparing):
    with qtbot.waitSignal(comparing.runner.finished, timeout=20000):
        comparing.compare_places(Place(str(PAIR / "baseline")), Place(str(PAIR / "candidate")))
    c = comparing.view.comparison
    assert c.baseline.place.location == str(PAIR / "baseline") and c.candidate.place.location == str(PAIR / "candidate")
    assert comparing.tabs.isTabVisible(0) and comparing.tabs.currentWidget() is comparing.view
    assert comparing.set_status.last.startswith("Compared: 15 kernels")


def test_the_tree_offers_compare_with_on_sessions_and_hosts_only(qtbot, comparing):
    tree = QTreeWidget()
    qtbot.addWidget(tree)
    repo = open_repository(PAIR / "baseline")
    session_tree.fill(tree, repo)
    session = tree.topLevelItem(0)
    assert comparing.tree_menu(session) is None  # nothing opened yet
    comparing.set_location(str(PAIR / "baseline"), repo)
    host = session.child(0)
    assert comparing.tree_menu(host.child(0)) is None  # a tool
    hparams_entry = session_tree.add_hparams_entry(tree, 3)
    assert comparing.tree_menu(hparams_entry) is None
    for item in (session, host):
        assert [a.text() for a in comparing.tree_menu(item).actions()] == ["Compare with…"]


# ---------------------------------------------------------------- capture


def test_a_capture_opens_its_log_dir_and_an_empty_trace_is_said(tmp_path):
    opened, errors = [], []
    capture = CaptureController(None, FakeRunner(), None, opened.append, errors.append, Status())
    folder = tmp_path / "logs" / "plugins" / "profile" / "cap"
    capture.captured((folder, False))
    assert opened == [str(tmp_path / "logs")] and errors == []
    capture.captured((tmp_path / "flat" / "cap", True))
    assert opened[-1] == str(tmp_path / "flat") and len(errors) == 1 and "cap is empty" in errors[0]


# ---------------------------------------------------------------- jumps from query rows


class FakeLoading:
    """What the jumps read of the loading controller, and the loads they ask for."""

    def __init__(self, repo):
        self.repo = repo
        self.current = self.current_timeline = None
        self.current_step = ""
        self.busy = False
        self.loads = []

    def load_memory(self, session, host):
        self.loads.append(("memory", session, host))

    def load_timeline(self, session, host, step=""):
        self.loads.append(("timeline", session, host, step))


@pytest.fixture
def jumps(qtbot):
    from profscope.widgets.memory.view import MemoryView
    from profscope.widgets.timeline.view import TimelineView

    tabs, tree = QTabWidget(), QTreeWidget()
    qtbot.addWidget(tabs)
    qtbot.addWidget(tree)
    memory, timeline = MemoryView(), TimelineView()
    tabs.addTab(memory, "Memory")
    tabs.addTab(timeline, "Timeline")
    repo = open_repository(GPU_TRACES)
    session_tree.fill(tree, repo)
    return JumpController(FakeLoading(repo), tabs, memory, timeline, tree, Status())


def test_a_jump_loads_the_host_it_names_then_applies_once_shown(jumps):
    jumps.show_jump(Jump("memory", "gpu", "rank-1", allocator="nope", snapshot=0))  # no [memory] events
    assert jumps.loading.loads == [] and jumps.set_status.shown.pop() == ("No session 'gpu' with a memory here.", True)
    jumps.show_jump(Jump("slice", "gpu", "rank-1", event=1))
    assert jumps.loading.loads == [("timeline", "gpu", "rank-1", "")] and jumps.pending is not None
    jumps.apply()  # another host was shown meanwhile: the jump is dropped
    assert jumps.pending is None and jumps.set_status.shown == []
    jumps.show_jump(Jump("slice", "gpu", None, event=1))  # two hosts: the row must say which
    assert jumps.set_status.shown[-1] == (
        "The row has no host column and gpu has 2 hosts: select host too.", True)
    jumps.show_jump(Jump("slice", "elsewhere", "rank-0", event=1))
    assert jumps.set_status.shown[-1] == ("No session 'elsewhere' with a timeline here.", True)
    jumps.show_jump(Jump("time", None, "rank-0", start_ns=0))  # the location's only session
    assert jumps.loading.loads[-1] == ("timeline", "gpu", "rank-0", "")


def test_session_tree_finds_an_item_by_its_target(qtbot):
    tree = QTreeWidget()
    qtbot.addWidget(tree)
    latest = session_tree.fill(tree, open_repository(GPU_TRACES))
    assert latest.text(0) == "rank-0" and latest.data(0, session_tree.ROLE_TARGET) == ("gpu", "rank-0", TRACE_VIEWER)
    item = session_tree.find_item(tree, ("gpu", "rank-1", "kernel_stats"))
    assert item.text(0) == "Kernels" and item.parent().text(0) == "rank-1"
    assert session_tree.find_item(tree, ("gpu", "rank-9", "kernel_stats")) is None
    assert session_tree.find_item(tree, ("gpu", "rank-1", MEMORY_PROFILE)) is None  # the traces have no [memory]
