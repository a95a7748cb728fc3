"""The main window driven as a person drives it, at 1280x800 and 1920x1080:
open each kind of file, click every tab through the tab bar and every entry
of the tree, use the menus; after each step what is shown is filled, its
axis labels equal their values, nothing is clipped and nothing names an
earlier profile (tests/visible.py)."""

from pathlib import Path

import pytest
from conftest import DATA
from PySide6.QtCore import QSettings, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication
from visible import unreadable

# kind: (path, the tabs shown, the host, the allocator shown first)
KINDS = {
    "pytorch_gpu": (DATA / "chrome_trace" / "gpu_memory" / "gpu_memory.pt.trace.json.gz",
                    ["Memory", "Timeline", "Statistics", "Query"], "gpu_memory", "cuda:0"),
    "xplane": (DATA / "xprof" / "keras.xplane.pb", ["Memory", "Timeline", "XProf Statistics", "Query"], "keras",
               "bfc_cpu_allocator_for_gpu"),
    "step_stats": (DATA / "step_stats" / "run_metadata.pb", ["Memory", "Timeline", "Query"], "run_metadata", "mklcpu"),
    "log_memory": (DATA / "log_memory" / "eager-cpu.log", ["Memory", "Query"], "eager-cpu", "cpu"),
    "hparams": (DATA / "hparams" / "keras_callback", ["HParams", "Query"], None, None),
}
SIZES = [(1280, 800), (1920, 1080)]
CASES = [pytest.param(kind, size, id=f"{kind}-{size[0]}x{size[1]}") for kind in KINDS for size in SIZES]


def busy(w) -> bool:
    return any(r.busy for r in (w.runner, w.hparams_runner, w.curves_runner, w.query_runner))


def settle(w, timeout_ms: int = 30000) -> None:
    """Waits until the window's jobs are done (a scan starts a load: twice) and it has painted."""
    for _ in range(2):
        QTest.qWait(20)
        for _ in range(timeout_ms // 20):
            if not busy(w):
                break
            QTest.qWait(20)
        assert not busy(w), "a job never finished"
    QApplication.processEvents()


def make_window(folder: Path, size):
    from profscope.viewer.window import MainWindow

    w = MainWindow(QSettings(str(folder / "settings.ini"), QSettings.IniFormat))
    w.resize(*size)
    w.show()
    assert QTest.qWaitForWindowExposed(w)
    return w


def close_window(w) -> None:
    w.close()
    for runner in (w.runner, w.hparams_runner, w.curves_runner):
        runner.cancel()
        assert runner.wait(10000)
    w.deleteLater()
    QTest.qWait(10)


def open_and_settle(w, path, shows: bool = True) -> None:
    """Opens `path` as the File menu does and waits until it is shown: for a profile (`shows`), until the
    loading controller has shown its first view (a scan's end and the load's start leave a moment with no
    job running); otherwise until no job runs."""
    shown: list[bool] = []

    def mark() -> None:
        shown.append(True)

    w.loading.shown.connect(mark)
    try:
        w.open_path(str(path))
        settle(w)
        for _ in range(1500):
            if shown or not shows:
                break
            QTest.qWait(20)
        assert shown or not shows, f"{path} was never shown"
        settle(w)
    finally:
        w.loading.shown.disconnect(mark)


@pytest.fixture(scope="module")
def opened(qapp, tmp_path_factory):
    """One window per (kind, size), opened once and shared by the tests that only look and click."""
    windows = {}

    def get(kind, size):
        if (kind, size) not in windows:
            w = make_window(tmp_path_factory.mktemp(kind), size)
            open_and_settle(w, KINDS[kind][0], shows=kind != "hparams")
            windows[kind, size] = w
        return windows[kind, size]

    yield get
    for w in windows.values():
        close_window(w)


def click_tab(w, index: int) -> None:
    bar = w.tabs.tabBar()
    QTest.mouseClick(bar, Qt.LeftButton, Qt.NoModifier, bar.tabRect(index).center())
    settle(w)
    assert w.tabs.currentIndex() == index


def visible_tabs(w) -> list[str]:
    return [w.tabs.tabText(i) for i in range(w.tabs.count()) if w.tabs.isTabVisible(i)]


def assert_filled(w, kind: str) -> None:
    """What the current tab shows for this kind of file."""
    _, _, host, allocator = KINDS[kind]
    view = w.tabs.currentWidget()
    if view is w.memory_view:
        mv = w.memory_view
        assert mv.host_box.currentText() == host and mv.host_box.count() >= 1
        assert mv.allocator_box.currentText() == allocator and mv.allocator.memory_id == allocator
        assert mv.table.model.rowCount() > 0
    elif view is w.timeline_view:
        timeline = w.timeline_view.timeline
        if kind == "log_memory":  # no timeline (see test_a_file_without_a_timeline_has_no_timeline_tab)
            assert timeline is None
        else:
            assert timeline is not None and len(timeline) > 0
    elif view is w.hparams_view:
        assert w.hparams_view.model.rowCount() == 3  # keras_callback: 4 sessions in 3 groups
    elif view is w.query_view:
        assert w.query_view.queries.topLevelItemCount() > 0  # the examples


@pytest.mark.parametrize("kind,size", CASES)
def test_every_tab_is_filled_and_legible(opened, kind, size):
    w = opened(kind, size)
    assert (w.width(), w.height()) == size
    assert visible_tabs(w) == KINDS[kind][1]
    assert "error" not in w.status.styleSheet()
    for index in range(w.tabs.count()):
        if w.tabs.isTabVisible(index):
            click_tab(w, index)
            assert_filled(w, kind)
            assert unreadable(w) == [], f"{kind} {size} tab {w.tabs.tabText(index)}"


def test_the_status_line_speaks_of_the_tab_in_front(flow_window):
    w = flow_window
    open_and_settle(w, KINDS["step_stats"][0])
    click_tab(w, w.tabs.indexOf(w.memory_view))
    assert "memory profile with" in w.status.text()
    click_tab(w, w.tabs.indexOf(w.timeline_view))
    assert "events on" in w.status.text()  # not the memory profile's line, loaded last
    click_tab(w, w.tabs.indexOf(w.memory_view))
    assert "memory profile with" in w.status.text()


def test_a_file_without_a_timeline_has_no_timeline_tab(opened):
    w = opened("log_memory", SIZES[0])
    assert visible_tabs(w) == ["Memory", "Query"]


def tree_items(tree):
    stack = [tree.topLevelItem(i) for i in range(tree.topLevelItemCount())]
    while stack:
        item = stack.pop(0)
        yield item
        stack[:0] = [item.child(i) for i in range(item.childCount())]


@pytest.mark.parametrize("kind,size", CASES)
def test_clicking_the_trees_entries_shows_them_legibly(opened, kind, size):
    w = opened(kind, size)
    tree = w.tree
    tree.expandAll()
    for item in list(tree_items(tree)):
        tree.scrollToItem(item)
        QTest.mouseClick(tree.viewport(), Qt.LeftButton, Qt.NoModifier, tree.visualItemRect(item).center())
        settle(w)
        assert "error" not in w.status.styleSheet(), f"{item.text(0)}: {w.status.text()}"
        assert w.tabs.isTabVisible(w.tabs.currentIndex())
        assert_filled(w, kind)
        assert unreadable(w) == [], f"{kind} {size} after {item.text(0)}"


@pytest.fixture
def flow_window(qapp, tmp_path):
    w = make_window(tmp_path, SIZES[0])
    yield w
    close_window(w)


def names_of(w, path) -> tuple[str, ...]:
    """What names a profile in the views: its path, its file name and hosts."""
    hosts = [w.memory_view.host_box.itemText(i) for i in range(w.memory_view.host_box.count())]
    return (str(path), Path(path).name, *[h for h in hosts if len(h) > 3])


def test_a_second_profile_shows_no_name_of_the_first(flow_window):
    w = flow_window
    first = KINDS["pytorch_gpu"][0]
    open_and_settle(w, first)
    click_tab(w, w.tabs.indexOf(w.memory_view))
    stale = names_of(w, first)
    open_and_settle(w, KINDS["step_stats"][0])
    for index in range(w.tabs.count()):
        if w.tabs.isTabVisible(index):
            click_tab(w, index)
            assert_filled(w, "step_stats")
            assert unreadable(w, stale) == [], w.tabs.tabText(index)


def test_open_recent_reopens_the_earlier_profile(flow_window):
    w = flow_window
    open_and_settle(w, KINDS["log_memory"][0])
    open_and_settle(w, KINDS["xplane"][0])
    actions = [a for a in w.recent_menu.actions() if a.text()]
    assert [Path(a.text()).name for a in actions[:2]] == \
        ["keras.xplane.pb", "eager-cpu.log"]
    stale = names_of(w, KINDS["xplane"][0])
    actions[1].trigger()
    settle(w)
    assert w.tabs.currentWidget() is w.memory_view
    assert_filled(w, "log_memory")
    assert unreadable(w, stale) == []


def test_a_failed_open_after_a_good_one_says_so_and_the_window_keeps_working(flow_window, tmp_path):
    w = flow_window
    open_and_settle(w, KINDS["step_stats"][0])
    bad = tmp_path / "h.memory_profile.json"
    bad.write_text("{broken")
    open_and_settle(w, bad, shows=False)
    assert "invalid JSON" in w.status.text() and w.status.styleSheet()  # in the error colour
    assert w.memory_view.message.isVisible() or w.tabs.currentWidget() is not w.memory_view
    assert unreadable(w) == []
    open_and_settle(w, tmp_path / "nothing-here", shows=False)
    assert "no such file" in w.status.text()
    assert unreadable(w) == []
    open_and_settle(w, KINDS["log_memory"][0])
    assert_filled(w, "log_memory")
    assert unreadable(w, (str(bad), "nothing-here")) == []


def test_reset_layout_and_the_shortcuts_dialog_are_legible(flow_window, qtbot):
    w = flow_window
    open_and_settle(w, KINDS["pytorch_gpu"][0])
    w.resizeDocks([w.sessions_dock], [40], Qt.Horizontal)  # a person dragged the dock narrow
    w.sessions_dock.hide()
    reset = next(a for a in w.menuBar().actions()[1].menu().actions() if a.text() == "Reset &Layout")
    reset.trigger()
    QTest.qWait(50)
    assert w.sessions_dock.isVisible() and w.sessions_dock.width() >= 120
    assert unreadable(w) == []
    w.activateWindow()
    QTest.keyClick(w, Qt.Key_F1)
    dialog = w.shortcuts_dialog
    qtbot.waitExposed(dialog)
    assert dialog.list.topLevelItemCount() > 10
    assert unreadable(dialog) == []
    dialog.reject()


def test_the_helper_finds_what_a_person_cannot_read(qtbot):
    import pyqtgraph as pg
    from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

    class WrongAxis(pg.AxisItem):
        def tickStrings(self, values, scale, spacing):
            return [f"{v * 2:g}" for v in values]

    w = QWidget()
    qtbot.addWidget(w)
    row = QHBoxLayout(w)
    label, combo = QLabel("a rather long label text"), QComboBox()
    label.setFixedWidth(40)
    combo.addItem("a rather long choice in a narrow box")
    combo.setFixedWidth(60)
    plot = pg.PlotWidget(axisItems={"bottom": WrongAxis("bottom")})
    plot.setXRange(0, 10, padding=0)
    for widget in (label, combo, plot):
        row.addWidget(widget)
    w.resize(600, 300)
    w.show()
    qtbot.waitExposed(w)
    problems = unreadable(w, stale=("long label",))
    assert any("QLabel 'a rather long label text' needs" in p for p in problems)
    assert any("QComboBox current text" in p for p in problems)
    assert any("labelled '4'" in p for p in problems)  # the tick at 2
    assert any("names 'long label'" in p for p in problems)


@pytest.mark.parametrize("size", [(1400, 900), (1030, 700)])  # the report's PNGs; the tab at 1280x800
def test_hparams_curves_are_never_squashed_or_cut(open_hparams_view, size):
    view = open_hparams_view(KINDS["hparams"][0])
    view.resize(*size)
    view.select_row(0)
    QTest.qWait(50)
    assert len(view.curves.metrics) == 7
    assert unreadable(view) == []
