"""The Query tab: SQL run in the worker shows its rows, errors point into the
editor, Esc cancels, sorting, copying, the chart, jumps to the timeline and
memory views, example and saved queries."""

import re
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import DATA, ROOT
from PySide6.QtCore import QObject, QSettings, Qt, Signal
from PySide6.QtGui import QGuiApplication, QTextCursor

from profscope.models.repository.locations import open_location
from profscope.models.sql.database import ProfileDatabase
from profscope.models.sql.examples import EXAMPLES
from profscope.models.sql.result_chart import chart_data
from profscope.viewer.query_runner import QueryRunner
from profscope.widgets.query.model import ResultModel, row_jump
from profscope.widgets.query.view import QueryView, SqlEditor

GPU = DATA / "chrome_trace" / "gpu"
GPU_MEMORY = DATA / "chrome_trace" / "gpu_memory"
SHOTS = Path("/tmp/query_shots")
LONGEST = dict(EXAMPLES)["The longest slices"]


@pytest.fixture
def settings(tmp_path):
    return QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat)


@pytest.fixture
def tab(qtbot, settings):
    """A Query tab over the GPU trace with memory events; its worker stopped afterwards."""
    runner = QueryRunner()
    runner.set_location(*open_location(GPU_MEMORY))
    view = QueryView(runner, settings)
    qtbot.addWidget(view)
    view.resize(1030, 740)
    yield view
    assert runner.close(10000)


@pytest.fixture
def win(window):
    yield window
    assert window.query_runner.close(10000)


def open_in(qtbot, win, path):
    with qtbot.waitSignal(win.runner.finished, timeout=30000):
        win.open_path(str(path))  # the scan
    with qtbot.waitSignal(win.runner.finished, timeout=30000):
        pass  # the latest session's first host


def run(qtbot, view, sql, signal="finished"):
    view.editor.setPlainText(sql)
    with qtbot.waitSignal(getattr(view.runner, signal), timeout=30000) as blocker:
        view.run()
    return blocker.args


def shown(view) -> list[list[str]]:
    m = view.model
    return [[m.data(m.index(r, c)) for c in range(m.columnCount())] for r in range(m.rowCount())]


def expected(sql):
    db = ProfileDatabase.open(GPU_MEMORY)
    try:
        return db.query(sql).table
    finally:
        db.close()


def test_running_a_query_shows_its_rows(qtbot, tab):
    sql = "SELECT name, count(*) AS n, sum(dur_ns)::BIGINT AS total_ns FROM kernels GROUP BY name ORDER BY n DESC, name"
    tab.editor.setPlainText(sql)
    with qtbot.waitSignal(tab.runner.finished, timeout=30000):
        qtbot.keyClick(tab.editor, Qt.Key_Return, Qt.ControlModifier)  # Ctrl+Enter runs
    want = expected(sql).to_pylist()
    assert [tuple(r) for r in shown(tab)] == [(r["name"], str(r["n"]), str(r["total_ns"])) for r in want]
    assert [tab.model.headerData(c, Qt.Horizontal) for c in range(3)] == ["name", "n", "total_ns"]
    assert tab.summary.text().startswith(f"{len(want):,} rows in ")
    assert not tab.message.isVisibleTo(tab) and not tab.chart.isVisibleTo(tab)  # no time or step column


def test_a_selection_runs_alone_and_nulls_show_as_null(qtbot, tab):
    tab.editor.setPlainText("SELECT 1 AS a;\nSELECT NULL::BIGINT AS b, 2.5 AS c")
    cursor = tab.editor.textCursor()
    cursor.setPosition(0)
    cursor.setPosition(len("SELECT 1 AS a"), QTextCursor.KeepAnchor)
    tab.editor.setTextCursor(cursor)
    with qtbot.waitSignal(tab.runner.finished, timeout=30000):
        tab.run()
    assert shown(tab) == [["1"]]
    tab.editor.moveCursor(QTextCursor.End)  # no selection: everything
    with qtbot.waitSignal(tab.runner.finished, timeout=30000):
        tab.run()
    assert shown(tab) == [["NULL", "2.5"]]  # the last statement's rows


def test_an_error_points_at_its_place_in_the_editor(qtbot, tab):
    message, position = run(qtbot, tab, "SELECT name,\n       nme\nFROM slices", "failed")
    assert "nme" in message and position == len("SELECT name,\n       ")
    assert tab.message.isVisibleTo(tab) and "Binder Error" in tab.message.text()
    assert tab.editor.textCursor().position() == position
    [underline] = tab.editor.extraSelections()
    assert underline.cursor.selectedText() == "nme"
    assert tab.model.rowCount() == 0
    tab.editor.insertPlainText(" ")  # editing clears the mark
    assert tab.editor.extraSelections() == []
    # Run as a selection, the position counts from the editor's start.
    tab.editor.setPlainText("SELECT 1;\nSELECT 1 +")
    cursor = tab.editor.textCursor()
    cursor.setPosition(len("SELECT 1;\n"))
    cursor.movePosition(QTextCursor.End, QTextCursor.KeepAnchor)
    tab.editor.setTextCursor(cursor)
    with qtbot.waitSignal(tab.runner.failed, timeout=30000) as failed:
        tab.run()
    assert "Parser Error" in failed.args[0] and failed.args[1] == len("SELECT 1;\nSELECT 1 ")


class _Started(QObject):
    running = Signal()


def test_esc_cancels_an_unbounded_cross_join_and_no_thread_is_left(qtbot, tab):
    db = tab.runner.database(tab.runner._source)  # the database the worker will use
    started = _Started()
    fired = threading.Event()

    def running(x):
        if not fired.is_set():
            fired.set()
            started.running.emit()  # the query runs: DuckDB is inside it
        return x

    db._con.create_function("running", running, ["BIGINT"], "BIGINT", side_effects=True)
    tab.editor.setPlainText("SELECT count(*) FROM slices a, slices b, slices c, range(1000000000) d "
                            "WHERE running(a.id) >= 0")
    with qtbot.waitSignal(started.running, timeout=30000):
        tab.run()
    assert tab.runner.busy and tab.cancel_button.isEnabled()
    with qtbot.waitSignal(tab.runner.busy_changed, timeout=5000) as idle:
        qtbot.keyClick(tab.editor, Qt.Key_Escape)
    assert idle.args == [False]
    assert tab.runner.wait(10000)  # the worker ended: DuckDB was interrupted
    assert tab.runner.runner.pool.activeThreadCount() == 0
    assert not tab.cancel_button.isEnabled()
    run(qtbot, tab, "SELECT 42 AS x")  # the connection still answers
    assert shown(tab) == [["42"]]


def test_sorting_uses_the_whole_column_and_keeps_nulls_last(qtbot, tab):
    run(qtbot, tab, "SELECT id, name, dur_ns, NULLIF(step, 3) AS step FROM slices")
    table = tab.model.table
    with qtbot.waitSignal(tab.runner.sorted, timeout=30000):
        tab.table_view.sortByColumn(2, Qt.DescendingOrder)
    durations = [int(tab.model.data(tab.model.index(r, 2))) for r in range(tab.model.rowCount())]
    assert durations == sorted(table.column("dur_ns").to_pylist(), reverse=True)
    ids = [int(tab.model.data(tab.model.index(r, 0))) for r in range(tab.model.rowCount())]
    d = table.column("dur_ns").to_numpy()
    assert ids == table.column("id").to_numpy()[np.argsort(-d, kind="stable")].tolist()  # ties keep their order
    with qtbot.waitSignal(tab.runner.sorted, timeout=30000):
        tab.table_view.sortByColumn(3, Qt.AscendingOrder)
    steps = [tab.model.data(tab.model.index(r, 3)) for r in range(tab.model.rowCount())]
    nulls = table.column("step").null_count
    assert nulls and steps[-nulls:] == ["NULL"] * nulls and steps[:-nulls] == sorted(steps[:-nulls], key=int)
    with qtbot.waitSignal(tab.runner.sorted, timeout=30000):
        tab.table_view.sortByColumn(1, Qt.AscendingOrder)
    names = [tab.model.data(tab.model.index(r, 1)) for r in range(tab.model.rowCount())]
    assert names == sorted(table.column("name").to_pylist())


def test_ctrl_c_copies_the_selected_cells_as_tab_separated_rows(qtbot, tab):
    run(qtbot, tab, "SELECT id, name, 'a\tb' AS odd, dur_ns FROM slices ORDER BY id LIMIT 5")
    model, view = tab.model, tab.table_view
    selection = view.selectionModel()
    selection.select(model.index(1, 0), selection.SelectionFlag.Select)
    selection.select(model.index(3, 2), selection.SelectionFlag.Select)
    QGuiApplication.clipboard().clear()
    qtbot.keyClick(view, Qt.Key_C, Qt.ControlModifier)
    rows = expected("SELECT id, name FROM slices ORDER BY id LIMIT 5").to_pylist()
    lines = QGuiApplication.clipboard().text().splitlines()
    # The selected cells' rows and columns (0 and 2), a header first; a tab inside a value becomes a space.
    assert lines == ["id\todd", f"{rows[1]['id']}\ta b", f"{rows[3]['id']}\ta b"]
    assert tab.summary.text() == "Copied 2 rows."


def test_a_time_or_step_result_has_a_chart(qtbot, tab):
    run(qtbot, tab, dict(EXAMPLES)["GPU time per step"])
    assert tab.chart.isVisibleTo(tab)
    chart = tab.chart
    assert [chart.value_box.itemText(i) for i in range(chart.value_box.count())] == ["kernel_ns", "kernels"]
    [line] = chart.lines
    assert not chart.legend.isVisible()  # one line, no legend
    x, y = line.getOriginalDataset()
    want = expected(dict(EXAMPLES)["GPU time per step"])
    assert x.tolist() == want.column("step").to_pylist() and y.tolist() == want.column("kernel_ns").to_pylist()
    ticks = [v for _, values in chart.x_axis.tickValues(2.0, 4.0, 400) for v in values]
    assert ticks == [2.0, 3.0, 4.0]  # steps are whole numbers: no 2.5
    SHOTS.mkdir(exist_ok=True)
    tab.grab().save(str(SHOTS / "test_query_step_chart.png"))
    # Memory over time: a line per allocator, x in seconds from the first snapshot.
    run(qtbot, tab, dict(EXAMPLES)["Memory in use over time"])
    assert {line.name() for line in chart.lines} == {"CPU", "cuda:0"}
    assert chart.data.x_units == "s" and "a line per allocator" in chart.title.text() and chart.legend.isVisible()
    x, _ = chart.lines[0].getOriginalDataset()
    assert x[0] == 0 and (np.diff(x) >= 0).all()
    image = chart.plot_widget.grab().toImage()
    colors = {image.pixelColor(i, j).name() for i in range(0, image.width(), 3) for j in range(0, image.height(), 3)}
    assert len(colors) > 4  # lines and axes, not a blank plot
    run(qtbot, tab, "SELECT name, dur_ns FROM slices LIMIT 3")
    assert not tab.chart.isVisibleTo(tab)


def test_chart_data_splits_by_varying_text_and_caps_the_lines():
    # A line per host (few values; kind does not vary, name has a value per row).
    table = pa.table({"host": ["a", "b"] * 10, "kind": ["k"] * 20, "step": [9 - i // 2 for i in range(20)],
                      "v": np.arange(20.0), "name": [f"n{i}" for i in range(20)]})
    chart = chart_data(table)
    assert [(label, x.tolist(), chart.values["v"][rows].tolist()) for label, rows, x in chart.groups] == [
        ("a", list(range(10)), list(range(18, -1, -2))), ("b", list(range(10)), list(range(19, 0, -2)))]
    assert chart.note == "host"
    many = pa.table({"session": [f"s{i % 30}" for i in range(60)], "step": [i // 30 for i in range(60)],
                     "value": [1.0] * 60})
    chart = chart_data(many)
    assert len(chart.groups) == 12 and chart.note == "session (the first 12 of 30)"
    assert [label for label, _, _ in chart.groups][:3] == ["s0", "s1", "s2"]
    names = [f"n{i}" for i in range(20)]
    unique = chart_data(pa.table({"name": names, "step": list(range(20)), "v": [1] * 20}))
    assert [label for label, _, _ in unique.groups] == [""] and unique.note == ""  # x is a function already
    assert chart_data(pa.table({"name": ["x"], "v": [1]})) is None
    assert chart_data(pa.table({"step": [1], "id": [3]})) is None  # ids are not values


def test_result_model_passes_qt_model_tests(qtmodeltester):
    model = ResultModel()
    model.set_result(pa.table({"a": [1, None, 3], "b": ["x", "y", None], "c": [0.5, 1.5, float("nan")]}))
    qtmodeltester.check(model)
    model.set_order(np.array([2, 0, 1]))
    assert model.data(model.index(0, 0)) == "3" and model.data(model.index(2, 1)) == "y"
    qtmodeltester.check(model)
    model.set_result(pa.table({"f": pa.array([0.0753, 1700000000.125, 1e20], pa.float64()),
                               "g": pa.array([0.0753], pa.float32()).cast(pa.float64()).to_pylist() + [None, -2.0]}))
    assert [model.data(model.index(r, 0)) for r in range(3)] == ["0.0753", "1700000000.125", "1e+20"]
    assert [model.data(model.index(r, 1)) for r in range(3)] == ["0.0753", "NULL", "-2"]  # float32 data: no noise
    assert model.data(model.index(0, 1), Qt.ToolTipRole) == repr(float(np.float32(0.0753)))  # every digit


def test_rows_lead_to_slices_times_and_memory_moments():
    table = pa.table({"session": ["s"], "host": ["h"], "tag": ["step_1"], "id": [7], "start_ns": [5]})
    j = row_jump(table, 0)
    assert (j.kind, j.session, j.host, j.tag, j.event) == ("slice", "s", "h", "step_1", 7)
    j = row_jump(pa.table({"host": ["h"], "start_ns": [100], "dur_ns": [20]}), 0)
    assert (j.kind, j.session, j.start_ns, j.dur_ns) == ("time", None, 100, 20)
    j = row_jump(pa.table({"allocator": ["GPU_0_bfc"], "snapshot": [4], "time_ns": [9]}), 0)
    assert (j.kind, j.allocator, j.snapshot) == ("memory", "GPU_0_bfc", 4)
    assert row_jump(pa.table({"name": ["x"], "n": [1]}), 0) is None


def _double_click_row(qtbot, view, row):
    table = view.table_view
    if not table.isVisible():
        view.window().show()
        qtbot.waitExposed(view.window())
    view.window().findChild(type(view.window().tabs)).setCurrentWidget(view)
    rect = table.visualRect(view.model.index(row, 0))
    qtbot.mouseClick(table.viewport(), Qt.LeftButton, pos=rect.center())  # as a real double-click: press first
    qtbot.mouseDClick(table.viewport(), Qt.LeftButton, pos=rect.center())


def test_double_clicking_a_slice_row_selects_it_in_the_timeline(qtbot, win):
    win.show()  # laid out as on a screen, for the screenshot
    qtbot.waitExposed(win)
    open_in(qtbot, win, GPU)  # two ranks: the latest session's first host is shown
    win.tabs.setCurrentWidget(win.query_view)
    view = win.query_view
    sql = LONGEST.replace("FROM slices", "FROM slices WHERE host = 'rank-1'")
    run(qtbot, view, sql)
    row = view.model.table.slice(0, 1).to_pylist()[0]
    assert win.loading.current_timeline != ("gpu", "rank-1")
    with qtbot.waitSignal(win.runner.finished, timeout=30000):  # that host's timeline loads
        _double_click_row(qtbot, view, 0)
    assert win.tabs.currentWidget() is win.timeline_view
    canvas = win.timeline_view.canvas
    assert win.loading.current_timeline == ("gpu", "rank-1") and canvas.selected == row["id"]
    tl = win.timeline_view.timeline
    assert tl.names[row["id"]] == row["name"] and tl.origin_ns + tl.start_ps[row["id"]] // 1000 == row["start_ns"]
    start, end = float(tl.start_ps[row["id"]]), float(tl.start_ps[row["id"]] + tl.duration_ps[row["id"]])
    left, right = canvas.t0, canvas.t0 + canvas.lanes_width * canvas.ps_per_px
    assert left < start and end < right and (end - start) > (right - left) / 4  # zoomed to it
    assert win.timeline_view.details.topLevelItemCount() > 0  # its details are shown
    SHOTS.mkdir(exist_ok=True)
    win.grab().save(str(SHOTS / "test_query_timeline_jump.png"))
    # Another row of the same timeline: no load, selected at once.
    win.tabs.setCurrentWidget(view)
    _double_click_row(qtbot, view, 1)
    assert canvas.selected == view.model.table.column("id")[1].as_py() and not win.runner.busy
    # A row with a time and no id: that span becomes the timeline's selected range.
    view.model.set_result(pa.table({"session": ["gpu"], "host": ["rank-1"], "start_ns": [row["start_ns"]],
                                    "dur_ns": [row["dur_ns"]]}))
    _double_click_row(qtbot, view, 0)
    assert win.tabs.currentWidget() is win.timeline_view
    assert canvas.range == (start, start + row["dur_ns"] * 1000)  # this slice's start is on the ns grid


def test_double_clicking_a_memory_row_shows_that_moment(qtbot, win):
    open_in(qtbot, win, GPU_MEMORY)
    view = win.query_view
    run(qtbot, view, "SELECT allocator, snapshot, time_ns, heap_bytes FROM memory_snapshots "
                     "WHERE allocator = 'cuda:0' ORDER BY heap_bytes DESC, snapshot LIMIT 3")
    snapshot = view.model.table.column("snapshot")[0].as_py()
    with qtbot.waitSignal(win.runner.finished, timeout=30000):  # the memory profile loads
        _double_click_row(qtbot, view, 0)
    memory = win.memory_view
    assert win.tabs.currentWidget() is memory
    assert memory.allocator_box.currentText() == "cuda:0" and memory.moment == snapshot
    assert f"snapshot {snapshot:,}" in memory.table_title.text()
    # A row naming what is not there says so in the status bar.
    view.model.set_result(pa.table({"allocator": ["nope"], "snapshot": [1]}))
    _double_click_row(qtbot, view, 0)
    assert "no allocator 'nope'" in win.status.text()


def test_query_progress_and_cancel_use_the_status_bar(qtbot, win):
    open_in(qtbot, win, GPU_MEMORY)
    view = win.query_view
    texts, shown_busy = [], []
    win.query_runner.progress.connect(lambda fraction, text: texts.append(text))
    win.query_runner.busy_changed.connect(
        lambda busy: shown_busy.append((busy, win.progress.isVisibleTo(win), win.cancel_button.isVisibleTo(win))))
    run(qtbot, view, "SELECT count(*) AS n FROM slices")
    assert "Loading slices" in texts  # the table loads in the worker, with progress
    assert shown_busy[0] == (True, True, True) and shown_busy[-1] == (False, False, False)
    assert win.status.text() == "Query: 1 row."


def test_examples_are_the_documented_ones_and_load_into_the_editor(qtbot, tab):
    text = (ROOT / "docs" / "SQL.md").read_text()
    section = text[text.index("## Example queries"):]
    documented = re.findall(r"```sql\n(.*?)```", section[:section.index("\n## ", 1)], re.S)
    assert [sql for _, sql in EXAMPLES] == documented
    examples = tab.queries.topLevelItem(0)
    assert examples.childCount() == len(EXAMPLES)
    tab.queries.itemClicked.emit(examples.child(0), 0)
    assert tab.editor.toPlainText() == EXAMPLES[0][1]
    tab.editor.undo()  # loading an example is one edit
    assert tab.editor.toPlainText() != EXAMPLES[0][1]


def test_saved_queries_persist(qtbot, tab, settings):
    tab.save_query("big kernels", "SELECT * FROM kernels WHERE dur_ns > 1000")
    tab.save_query("steps", "SELECT DISTINCT step FROM slices")
    tab.save_query("big kernels", "SELECT * FROM kernels WHERE dur_ns > 5000")  # replaces
    settings.sync()
    again = QueryView(tab.runner, QSettings(settings.fileName(), QSettings.IniFormat))
    qtbot.addWidget(again)
    saved = again.queries.topLevelItem(1)
    assert [(saved.child(i).text(0), saved.child(i).data(0, Qt.UserRole)) for i in range(saved.childCount())] == [
        ("steps", "SELECT DISTINCT step FROM slices"), ("big kernels", "SELECT * FROM kernels WHERE dur_ns > 5000")]
    again.queries.setCurrentItem(saved.child(0))
    assert again.delete_button.isEnabled()
    again.delete_button.click()
    assert again.saved() == [("big kernels", "SELECT * FROM kernels WHERE dur_ns > 5000")]
    third = QueryView(tab.runner, QSettings(settings.fileName(), QSettings.IniFormat))
    qtbot.addWidget(third)
    assert third.saved() == again.saved()


def test_the_editor_colours_strings_and_comments_as_sql_reads_them(qtbot):
    editor = SqlEditor()
    qtbot.addWidget(editor)
    editor.setPlainText("SELECT '--no' AS dashes /* it's a\nlong comment */ FROM slices -- 'quoted' FROM\n"
                        "WHERE 1 AND count(*) AS kernels")
    formats = editor.highlighter.formats

    def kind(line: int, text: str, last: bool = False) -> str:
        block = editor.document().findBlockByNumber(line)
        col = block.text().rindex(text) if last else block.text().index(text)
        for r in block.layout().formats():
            if r.start <= col < r.start + r.length:
                return next(k for k, f in formats.items() if f == r.format)
        return "plain"

    assert kind(0, "SELECT") == "keyword" and kind(0, "--no") == "string" and kind(0, "dashes") == "plain"
    assert kind(0, "it's") == "comment" and kind(1, "long") == "comment"  # a /* comment goes on to the next line
    assert kind(1, "FROM") == "keyword" and kind(1, "slices") == "table"
    assert kind(1, "'quoted'") == "comment" and kind(1, "FROM", last=True) == "comment"
    assert kind(2, "WHERE") == "keyword" and kind(2, "1") == "number"  # the -- comment ended with its line
    assert kind(2, "kernels") == "plain"  # a column named like a table, after AS


def _example(view, title_start):
    examples = view.queries.topLevelItem(0)
    return next(examples.child(i) for i in range(examples.childCount()) if examples.child(i).text(0).startswith(
        title_start))


def test_the_step_example_adapts_and_an_empty_answer_says_which_steps_exist(qtbot, win):
    open_in(qtbot, win, DATA / "chrome_trace" / "rocm_mi250")  # ProfilerSteps 1 and 2
    view = win.query_view
    win.tabs.setCurrentWidget(view)
    steps = sorted(win.query_runner.facts.steps)
    assert steps == [1, 2]  # known from the timeline shown at open
    assert _example(view, "Top kernels in step").text(0) == "Top kernels in step 1"  # before any query ran
    run(qtbot, view, dict(EXAMPLES)["Top kernels in step 3"])  # the documented one
    assert view.model.rowCount() == 0
    reason = "no step 3: steps are 1-2"
    assert reason in view.summary.text() and reason in win.status.text()
    item = _example(view, "Top kernels in step")
    assert item.text(0) == f"Top kernels in step {steps[0]}"
    with qtbot.waitSignal(view.runner.finished, timeout=30000):
        view.queries.itemActivated.emit(item, 0)
    assert view.model.rowCount() > 0 and "no step" not in view.summary.text()


def test_the_hparams_example_uses_the_logged_metric_and_says_which_are(qtbot, win):
    keras = DATA / "hparams" / "keras_callback"  # accuracy logged as validation/epoch_accuracy
    with qtbot.waitSignal(win.runner.finished, timeout=30000):
        win.open_path(str(keras))
    view = win.query_view
    item = _example(view, "Best learning rate per optimizer")
    assert "tag = 'epoch_accuracy' AND run = 'validation'" in item.data(0, Qt.UserRole)
    with qtbot.waitSignal(view.runner.finished, timeout=30000):
        view.queries.itemActivated.emit(item, 0)
    assert view.model.rowCount() > 0
    run(qtbot, view, dict(EXAMPLES)["Best learning rate per optimizer"])  # the documented one: tag 'accuracy'
    assert view.model.rowCount() == 0
    assert "no metric accuracy: metrics are train/epoch_accuracy, validation/epoch_accuracy" in view.summary.text()
