"""The main window with real worker threads: open, load, cancel, errors."""

from pathlib import Path

import pytest
from conftest import SAMPLE, SMALL_XPROF
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent

from profscope.models.core.task import Cancelled, TaskState
from profscope.viewer.workers import TaskRunner

SMALL_SESSION = "2026_11_22_02_49_00"


def open_and_wait(qtbot, window, path):
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(path))  # scan
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        pass  # then the latest session's memory profile


def test_open_log_dir_shows_latest_session(qtbot, window):
    open_and_wait(qtbot, window, SAMPLE)
    assert window.tree.topLevelItemCount() == 3
    # "train" (an event file with run metadata) sorts last: its timeline shows.
    assert window.loading.current_timeline == ("train", "vm")
    assert window.tabs.currentWidget() is window.timeline_view
    assert len(window.timeline_view.timeline) == 40
    assert window.timeline_view.step_box.currentText() == "step_1"
    assert "40 events on 2 device(s)" in window.status.text()
    assert window.settings.value("recent") == [str(SAMPLE)]


def test_clicking_sessions_tools_and_steps_loads_them(qtbot, window):
    open_and_wait(qtbot, window, SAMPLE)
    small = window.tree.topLevelItem(1).child(0)  # the small session's host
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(small)
    assert window.loading.current == (SMALL_SESSION, "vm")
    assert window.memory_view.allocator.memory_id == "bfc_cpu_allocator_for_gpu"
    assert window.memory_view.table.model.rowCount() == 11
    assert "memory profile with 1 allocator" in window.status.text()
    other = window.tree.topLevelItem(0).child(0)  # the Keras session's host
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(other)
    assert window.loading.current == ("2026_11_22_02_48_21", "vm")
    assert not window.memory_view.allocator.complete
    train_memory = window.tree.topLevelItem(2).child(0).child(0)  # train / vm / Memory
    assert train_memory.text(0) == "Memory"
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(train_memory)
    assert window.loading.current == ("train", "vm") and window.memory_view.allocator.memory_id == "mklcpu"
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.timeline_view.step_requested.emit("step_2")
    assert window.timeline_view.step_box.currentText() == "step_2"
    assert window.tabs.currentWidget() is window.timeline_view


def test_errors_show_in_the_window_and_it_keeps_working(qtbot, window, tmp_path):
    bad = tmp_path / "h.memory_profile.json"
    bad.write_text("{broken")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(bad))
    with qtbot.waitSignal(window.runner.failed, timeout=20000) as failed:
        pass
    assert "invalid JSON" in failed.args[0]
    assert "invalid JSON" in window.status.text() and window.memory_view.message.isVisibleTo(window.memory_view)
    with qtbot.waitSignal(window.runner.failed, timeout=20000):
        window.open_path(str(tmp_path / "nothing-here"))
    assert "no such file" in window.status.text()
    open_and_wait(qtbot, window, SMALL_XPROF)
    assert window.memory_view.table.model.rowCount() == 11


def test_drop_a_file(qtbot, window):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(SMALL_XPROF))])
    event = QDropEvent(QPointF(10, 10), Qt.CopyAction, mime, Qt.LeftButton, Qt.NoModifier)
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.dropEvent(event)
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        pass
    assert window.memory_view.allocator is not None


def test_new_task_cancels_the_old_and_late_results_are_dropped(qtbot):
    runner = TaskRunner()
    results = []
    runner.finished.connect(results.append)

    def slow(task: TaskState):
        while True:  # polls like a reader between chunks
            task.report(0.5, "working")

    runner.start(slow)
    with qtbot.waitSignal(runner.finished, timeout=10000):
        runner.start(lambda task: "second")
    assert results == ["second"]
    with qtbot.waitSignal(runner.cancelled, timeout=10000):
        runner.start(slow)
        runner.cancel()
    assert runner.wait(10000) and results == ["second"]


def test_a_bug_in_a_job_is_one_line_and_logged(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    runner = TaskRunner()
    with qtbot.waitSignal(runner.failed, timeout=10000) as failed:
        runner.start(lambda task: [][1])
    message = failed.args[0]
    log = tmp_path / "Profscope" / "Profscope" / "profscope.log"
    assert "failed unexpectedly (IndexError" in message and str(log) in message and "\n" not in message
    assert "Traceback" in log.read_text()
    assert runner.wait(10000)


def test_cancelled_state_raises():
    task = TaskState()
    task.cancel()
    with pytest.raises(Cancelled):
        task.report(0.1)


def test_xplane_session_with_two_hosts(qtbot, window, tmp_path):
    import shutil

    from conftest import DATA

    session = tmp_path / "logs" / "plugins" / "profile" / "2026_11_22_09_00_00"
    session.mkdir(parents=True)
    shutil.copy(DATA / "xprof" / "small.xplane.pb", session / "a.xplane.pb")
    shutil.copy(DATA / "xprof" / "jax.xplane.pb", session / "b.xplane.pb")
    open_and_wait(qtbot, window, tmp_path / "logs")
    item = window.tree.topLevelItem(0)
    assert [item.child(i).text(0) for i in range(item.childCount())] == ["a", "b", "All hosts"]
    assert window.loading.current_timeline == ("2026_11_22_09_00_00", "a")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(item.child(0).child(0))  # a / Memory
    assert window.memory_view.table.model.rowCount() == 11
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(item.child(2))
    assert window.loading.current_timeline == ("2026_11_22_09_00_00", "")
    assert window.timeline_view.timeline.groups == ["a /host:CPU", "b /host:CPU"]
    assert "All hosts" in window.status.text()
    memory_b = item.child(1).child(0)
    assert memory_b.text(0) == "Memory"
    with qtbot.waitSignal(window.runner.failed, timeout=20000):
        window._on_tree_item(memory_b)
    assert "JAX records no such events" in window.status.text()


def test_all_hosts_with_gpus_show_their_common_steps(qtbot, window, tmp_path):
    """All hosts of a session of two GPU hosts: the XProf Statistics tab's overview shows the steps both hosts
    have (XProf's step intersection), numbered from 0."""
    import shutil

    from conftest import DATA

    session = tmp_path / "logs" / "plugins" / "profile" / "2026_11_27_18_00_00"
    session.mkdir(parents=True)
    shutil.copy(DATA / "xprof" / "device" / "gpu_tf.xplane.pb", session / "a.xplane.pb")
    shutil.copy(DATA / "xprof" / "device" / "gpu_tf2.xplane.pb", session / "b.xplane.pb")
    open_and_wait(qtbot, window, tmp_path / "logs")
    all_hosts = window.tree.topLevelItem(0).child(2)
    assert all_hosts.text(0) == "All hosts"
    overview = next(c for c in map(all_hosts.child, range(all_hosts.childCount())) if c.text(0) == "Overview")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(overview)
    assert window.tabs.currentWidget() is window.xprof_view
    page = window.xprof_view.pages["overview_page"]
    assert page.chart.labels == ["0", "1", "2", "3"]
    assert "POTENTIALLY input-bound" in page.statement.text()


def test_xplane_host_shows_xprof_statistics(qtbot, window, tmp_path):
    """An xplane host's XProf tools come with its timeline: the tree lists them,
    clicking one shows its page at once in the XProf Statistics tab."""
    import shutil

    from conftest import DATA

    session = tmp_path / "plugins" / "profile" / "2026_11_27_15_14_03"
    session.mkdir(parents=True)
    shutil.copy(DATA / "xprof" / "tfdata.xplane.pb", session / "vm.xplane.pb")
    open_and_wait(qtbot, window, tmp_path)
    host = window.tree.topLevelItem(0).child(0)
    titles = [host.child(i).text(0) for i in range(host.childCount())]
    assert titles[-7:] == ["Overview", "Input pipeline", "Framework ops", "Kernels", "HLO ops", "Op profile",
                           "Roofline"]
    assert window.tabs.isTabVisible(window.tabs.indexOf(window.xprof_view))
    assert not window.tabs.isTabVisible(window.tabs.indexOf(window.stats_view))  # Profscope's trace statistics
    assert window.loading.current_timeline == ("2026_11_27_15_14_03", "vm")
    with qtbot.assertNotEmitted(window.runner.busy_changed):
        window._on_tree_item(host.child(titles.index("Overview")))
    view = window.xprof_view
    assert window.tabs.currentWidget() is view and view.current_page() == "overview_page"
    overview = view.pages["overview_page"]
    assert "HIGHLY input-bound" in overview.statement.text() and "Bottleneck: host" in overview.statement.text()
    assert overview.chart.labels == ["train 2", "train 3", "train 4", "train 5"]
    window._on_tree_item(host.child(titles.index("Framework ops")))
    table = view.pages["framework_op_stats"].table
    assert view.current_page() == "framework_op_stats"
    column = table.model.ids.index("operation")
    assert table.model.data(table.model.index(0, column)) == "Iterator::Root::Prefetch::MapAndBatch"
    table.filter.setText("MatMul")
    assert table.model.rowCount() > 0 and all(
        "matmul" in table.model.data(table.model.index(r, column)).lower() for r in range(table.model.rowCount()))
    pipeline = view.pages["input_pipeline_analyzer"]
    assert pipeline.ops.model.rowCount() == 4


GPU_TRACES = Path(__file__).parent / "data" / "chrome_trace" / "gpu"


def test_gpu_traces_statistics_per_rank_and_all_hosts(qtbot, window):
    open_and_wait(qtbot, window, GPU_TRACES)
    session = window.tree.topLevelItem(0)
    hosts = [session.child(i) for i in range(session.childCount())]
    assert [h.text(0) for h in hosts] == ["rank-0", "rank-1", "All hosts"]
    assert [hosts[0].child(i).text(0) for i in range(hosts[0].childCount())] == [
        "Timeline", "Kernels", "Operators", "Overview"]  # no [memory] events: no Memory entry
    assert [hosts[2].child(i).text(0) for i in range(hosts[2].childCount())] == [
        "Timeline", "Kernels", "Operators", "Overview"]
    # The first host's timeline loaded, with its statistics from the same timeline.
    assert window.loading.current_timeline == ("gpu", "rank-0") and window.tabs.currentWidget() is window.timeline_view
    stats = window.stats_view.stats
    assert stats is not None and stats.hosts == ["rank-0"]
    assert window.loading.stats_timeline is window.timeline_view.timeline
    assert window.tabs.isTabVisible(window.tabs.indexOf(window.stats_view))
    # Kernels of the loaded host: shown at once, nothing loads.
    with qtbot.assertNotEmitted(window.runner.busy_changed):
        window._on_tree_item(hosts[0].child(1))
    assert window.tabs.currentWidget() is window.stats_view and window.stats_view.current_page() == "kernel_stats"
    assert window.stats_view.kernels.model.rowCount() == 20
    # Clicking it again after looking elsewhere shows it again.
    window.tabs.setCurrentWidget(window.timeline_view)
    window._on_tree_item(hosts[0].child(1))
    assert window.tabs.currentWidget() is window.stats_view
    # Kernels of the other host: its timeline loads, then the Kernels page shows.
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(hosts[1].child(1))
    assert window.loading.current_timeline == ("gpu", "rank-1")
    assert window.tabs.currentWidget() is window.stats_view and window.stats_view.stats.hosts == ["rank-1"]
    assert window.stats_view.current_page() == "kernel_stats"
    # All hosts / Overview: both ranks side by side.
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(hosts[2].child(3))
    assert window.loading.current_timeline == ("gpu", "")
    assert window.stats_view.current_page() == "overview" and window.tabs.currentWidget() is window.stats_view
    overview = window.stats_view.overview.model
    assert [overview.value(r, 0) for r in range(overview.rowCount())] == ["rank-0", "rank-1"]
    assert window.stats_view.overview.bars.rows[1].host == "rank-1"
    assert "All hosts" in window.status.text()
    # The host item itself: its timeline loads and shows.
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(hosts[0])
    assert window.tabs.currentWidget() is window.timeline_view and window.loading.current_timeline == ("gpu", "rank-0")


def test_gpu_traces_step_range_recomputes_in_the_worker(qtbot, window):
    open_and_wait(qtbot, window, GPU_TRACES)
    all_hosts = window.tree.topLevelItem(0).child(2)
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(all_hosts.child(1))  # All hosts / Kernels
    view = window.stats_view
    whole = view.stats
    assert whole.step_range is None and view.kernels.model.rowCount() == 42
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        view.select_steps((3, 3))
        assert not view.range_controls.isEnabled()  # no other range while this one computes
    assert view.range_controls.isEnabled()
    assert view.stats.step_range == (3, 3) and view.stats.hosts == ["rank-0", "rank-1"]
    assert view.stats.kernels.count.sum() < whole.kernels.count.sum()
    assert view.first_box.currentText() == "3" and view.current_page() == "kernel_stats"
    assert "statistics of step 3" in window.status.text()
    assert window.loading.stats_timeline is window.timeline_view.timeline  # no new read
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        view.select_steps(None)
    assert view.stats.step_range is None and view.kernels.model.rowCount() == 42
    # A range the trace lacks: the message shows, the statistics stay.
    with qtbot.waitSignal(window.runner.failed, timeout=20000) as failed:
        window.loading.recompute_stats((7, 9))
    assert "no ProfilerStep between 7 and 9" in failed.args[0]
    assert view.message.isVisibleTo(view) and view.stats is not None
    assert window.tabs.currentWidget() is view


def test_kineto_memory_items_use_the_memory_view(qtbot, window):
    path = Path(__file__).parent / "data" / "chrome_trace" / "train.pt.trace.json.gz"
    open_and_wait(qtbot, window, path)
    host = window.tree.topLevelItem(0).child(0)
    assert [host.child(i).text(0) for i in range(host.childCount())] == [
        "Memory", "Timeline", "Kernels", "Operators", "Overview"]
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window._on_tree_item(host.child(0))
    assert window.tabs.currentWidget() is window.memory_view and window.memory_view.allocator is not None
    window._on_tree_item(host.child(3))  # Operators: the timeline is loaded already
    assert window.tabs.currentWidget() is window.stats_view and window.stats_view.operators.model.rowCount() == 49
    assert window.stats_view.stats.hosts == ["train"]


def test_a_failed_open_replaces_the_previous_location_everywhere(qtbot, window, tmp_path):
    """Open a trace, then a folder with no profiles, then an empty file: each failure
    clears what the trace showed and says once what failed, naming only that path."""
    gpu = Path(__file__).parent / "data" / "chrome_trace" / "gpu"
    open_and_wait(qtbot, window, gpu)
    assert window.timeline_view.timeline is not None and window.tree.topLevelItemCount() > 0
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "notes.txt").write_text("not a profile")
    empty = tmp_path / "empty.json"
    empty.write_text("")
    for path in (tmp_path / "nothing", empty):
        with qtbot.waitSignal(window.opening.failed, timeout=20000) as failed:
            window.open_path(str(path))
        message = failed.args[1]
        assert message.startswith(str(path)) and "\n" not in message
        assert window.tree.topLevelItemCount() == 0
        assert window.windowTitle() == "Profscope"
        assert window.timeline_view.timeline is None and window.loading.repo is None
        assert window.stats_view.stats is None and window.query_runner._source is None
        assert window.status.text() == message and "color" in window.status.styleSheet()
        assert window.tabs.currentWidget() is window.timeline_view
        assert window.timeline_view.message.isVisibleTo(window) and window.timeline_view.message.text() == message
        assert all(window.tabs.isTabVisible(i) for i in range(window.tabs.count() - 1))  # all but Compare
        shown = [window.status.text(), window.windowTitle(), window.timeline_view.message.text(),
                 window.memory_view.empty.text(), window.query_view.summary.text(), window.stats_view.message.text()]
        assert not any(str(gpu) in text or "gpu" in text for text in shown)
    window.tabs.setCurrentWidget(window.memory_view)
    with qtbot.waitSignal(window.opening.failed, timeout=20000):
        window.open_path(str(tmp_path / "nothing"))
    assert window.memory_view.empty.text().startswith(str(tmp_path / "nothing"))
    assert window.memory_view.empty.isVisibleTo(window)


def test_opening_another_location_clears_the_views_the_new_one_does_not_fill(qtbot, window):
    open_and_wait(qtbot, window, Path(__file__).parent / "data" / "chrome_trace" / "gpu")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(Path(__file__).parent / "data" / "hparams" / "api_config"))  # HParams only
    assert window.timeline_view.timeline is None and window.stats_view.stats is None
    assert window.tabs.currentWidget() is window.hparams_view
    assert window.windowTitle().endswith("api_config") and window.tree.topLevelItemCount() == 1
