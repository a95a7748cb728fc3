"""The HParams tab as a user sees it: table, filters, sorting, paging,
parallel coordinates, charts, export, and the window's loading and watching."""

import csv
import io
import json
import shutil

import numpy as np
import pytest
from conftest import DATA
from PySide6.QtCore import QPointF, Qt

from profscope.models.hparams.experiment import _column, format_value
from profscope.protos import api_pb2
from profscope.widgets.hparams.filters import ColumnFilter
from profscope.widgets.hparams.table import GroupModel
from profscope.widgets.hparams.view import HParamsView

API_CONFIG = DATA / "hparams" / "api_config"
KERAS = DATA / "hparams" / "keras_callback"


@pytest.fixture
def view(open_hparams_view):
    return open_hparams_view(API_CONFIG)


def column(v: HParamsView, kind: str, key) -> int:
    return v.columns.items.index((kind, key))


def shown_names(v: HParamsView) -> list[str]:
    return [v.model.value(v.model.group_at(r), 0) for r in range(v.model.rowCount())]


def expected_names(v: HParamsView, request: api_pb2.ListSessionGroupsRequest) -> list[str]:
    request.slice_size = 1000
    return [g.name for g in v.data.list_session_groups(request).session_groups]


def test_group_model_passes_qt_model_tests(qtmodeltester, view):
    model = GroupModel()
    model.set_table(view.model.table, view.columns)
    model.set_rows(view.order)
    qtmodeltester.check(model)


def test_table_shows_every_group_hparam_and_metric(view):
    assert view.model.rowCount() == 9 and "9 matching (9 in all)" in view.page_label.text()
    titles = [view.columns.title(i) for i in range(len(view.columns))]
    assert titles[0] == "Group" and titles[-2:] == ["Status", "Sessions"]
    assert {"lr", "optimizer", "notes", "accuracy", "validation/loss"} <= set(titles)
    trial_a = shown_names(view).index("trial_a")
    g = view.model.group_at(trial_a)
    assert view.model.value(g, column(view, "metric", ("", "accuracy"))) == pytest.approx(0.47143333156903583)
    assert view.model.value(g, len(view.columns) - 1) == 3  # sessions


def test_header_clicks_sort_and_shift_adds_a_key(view, qtbot):
    header = view.table.header()
    acc, units = column(view, "metric", ("", "accuracy")), column(view, "hparam", "units")
    qtbot.mouseClick(header.viewport(), Qt.LeftButton, pos=_section_center(header, units))
    assert view.sort_keys == [(units, api_pb2.ORDER_ASC)]
    qtbot.mouseClick(header.viewport(), Qt.LeftButton, Qt.ShiftModifier, _section_center(header, acc))
    qtbot.mouseClick(header.viewport(), Qt.LeftButton, Qt.ShiftModifier, _section_center(header, acc))
    assert view.sort_keys == [(units, api_pb2.ORDER_ASC), (acc, api_pb2.ORDER_DESC)]
    assert "units ▲1" in view.model.headerData(units, Qt.Horizontal) and "▼2" in view.model.headerData(
        acc, Qt.Horizontal
    )
    request = view.request()
    assert [cp.order for cp in request.col_params[:2]] == [api_pb2.ORDER_ASC, api_pb2.ORDER_DESC]
    assert shown_names(view) == expected_names(view, request)


def _section_center(header, section):
    from PySide6.QtCore import QPoint

    return QPoint(header.sectionViewportPosition(section) + header.sectionSize(section) // 2, header.height() // 2)


def test_filters_narrow_the_table_as_the_api_does(view, qtbot):
    optimizer = view.filters.filters[("hparam", "optimizer")]
    for box, value in optimizer.control:
        box.setChecked(value == "adam")
    qtbot.waitUntil(lambda: view.model.rowCount() == 4)
    assert all(
        view.model.value(view.model.group_at(r), column(view, "hparam", "optimizer")) == "adam"
        for r in range(view.model.rowCount())
    )
    accuracy = view.filters.filters[("metric", ("", "accuracy"))]
    accuracy.control.setValue((0.47, accuracy.full_range[1]))
    accuracy.exclude_missing.setChecked(True)
    qtbot.waitUntil(lambda: view.model.rowCount() == 3)
    request = view.request()
    interval = next(cp for cp in request.col_params if cp.WhichOneof("filter") == "filter_interval")
    assert interval.filter_interval.min_value == pytest.approx(0.47) and interval.exclude_missing_values
    assert shown_names(view) == expected_names(view, request)
    view.filters.status_boxes[api_pb2.STATUS_SUCCESS].setChecked(False)  # all three succeeded
    qtbot.waitUntil(lambda: view.model.rowCount() == 0)
    assert "0 matching" in view.page_label.text()


def test_many_strings_get_a_regexp_field_that_flags_bad_patterns(qtbot):
    names = [f"run-{i:02d}" for i in range(20)] + [None]
    f = ColumnFilter("tag", _column(names))
    qtbot.addWidget(f)
    assert f.kind == "regexp" and not f.is_active()
    f.control.setText("run-1")
    cp = api_pb2.ColParams(hparam="tag")
    f.apply(cp)
    assert cp.filter_regexp == "run-1"
    f.control.setText("(")
    assert "Invalid regular expression" in f.control.toolTip()
    cp = api_pb2.ColParams(hparam="tag")
    f.apply(cp)
    assert cp.WhichOneof("filter") is None  # the filter waits for a valid pattern


def test_paging_and_show_all(view):
    view.page_size.setCurrentIndex(0)  # 50 per page: all 9 on one page
    view.page_size.setItemData(0, 4)
    view._go(0)
    assert view.model.rowCount() == 4 and view.next_button.isEnabled()
    view._go(2)
    assert view.model.rowCount() == 1 and not view.next_button.isEnabled()
    view.page_size.setCurrentIndex(3)  # show all
    assert view.model.rowCount() == 9


def test_a_group_expands_into_its_sessions(view):
    m = view.model
    row = shown_names(view).index("trial_a")
    parent = m.index(row, 0)
    assert m.rowCount(parent) == 3 and m.rowCount(m.index(row, 1)) == 0
    acc = column(view, "metric", ("", "accuracy"))
    children = [(m.index(r, 0, parent).data(), m.index(r, acc, parent).data()) for r in range(3)]
    sessions = view.model.table.sessions[m.group_at(row)]
    assert [c[0] for c in children] == ["s00", "s01", "s02"]
    assert children[1][1] == format_value(next(x.value for x in sessions[1].metrics if x.tag == "accuracy"))
    assert m.parent(m.index(0, 0, parent)) == parent
    view.table.expand(parent)
    view.table.setCurrentIndex(m.index(2, 0, parent))  # a session row: that session alone, with its curves
    assert view.sessions_table.rowCount() == 1 and view.sessions_table.item(0, 0).text() == "s02"
    assert {c.session for c in view.curves.curves} == {"s02"}


def test_selecting_a_group_shows_its_sessions_and_charts(view):
    row = shown_names(view).index("trial_a")
    view.select_row(row)
    assert view.sessions_table.rowCount() == 3
    assert [view.sessions_table.item(r, 0).text() for r in range(3)] == ["s00", "s01", "s02"]
    plots = [item for item in view.curves.charts.ci.items if hasattr(item, "listDataItems")]
    assert len(plots) == 4  # one per metric of the experiment
    accuracy = next(p for p in plots if p.titleLabel.text == "accuracy")
    assert len(accuracy.listDataItems()) == 6  # raw and smoothed per session


def test_parallel_coordinates_brush_sets_the_filter(view, qtbot):
    view.center.setCurrentIndex(1)
    pc = view.parallel
    assert len(pc.groups) == 9 and len(pc.axes) == len([k for k, _ in view.columns.items if k in ("hparam", "metric")])
    lr = view._axis_columns.index(column(view, "hparam", "lr"))
    x = pc._x(lr)
    qtbot.mousePress(pc, Qt.LeftButton, pos=QPointF(x, pc._y(0.0)).toPoint())
    qtbot.mouseMove(pc, QPointF(x, pc._y(0.3)).toPoint())
    qtbot.mouseRelease(pc, Qt.LeftButton, pos=QPointF(x, pc._y(0.3)).toPoint())
    f = view.filters.filters[("hparam", "lr")]
    assert f.is_active()
    qtbot.waitUntil(lambda: view.model.rowCount() < 9)
    lr_values = [
        view.model.value(view.model.group_at(r), column(view, "hparam", "lr")) for r in range(view.model.rowCount())
    ]
    assert max(lr_values) <= 0.03 + 1e-9
    image = pc.grab().toImage()
    assert image.width() > 100


def test_export_formats_hold_every_matching_row(view):
    view.set_column_visible(column(view, "hparam", "seed"), False)
    rows = list(csv.reader(io.StringIO(view.export_text("CSV"))))
    assert len(rows) == 10 and "seed" not in rows[0] and rows[0][0] == "Group"
    doc = json.loads(view.export_text("JSON"))
    assert len(doc) == 9 and any(d["accuracy"] == "NaN" for d in doc)
    md = view.export_text("Markdown").splitlines()
    assert md[1].startswith("|---|") and len(md) == 11


# ---------------------------------------------------------------- the window


@pytest.fixture
def window(qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from profscope.viewer.window import MainWindow

    w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    qtbot.addWidget(w)
    yield w
    for runner in (w.runner, w.hparams_runner, w.curves_runner):
        runner.cancel()
        runner.wait(5000)


def test_window_opens_a_sweep_and_watching_picks_up_new_sessions(window, qtbot, tmp_path):
    logdir = tmp_path / "sweep"
    shutil.copytree(KERAS, logdir)
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(logdir))
    assert window.tabs.currentWidget() is window.hparams_view
    assert window.hparams_view.model.rowCount() == 3
    assert not window.tabs.isTabVisible(window.tabs.indexOf(window.memory_view))
    # A new session appears while the sweep runs.
    source = next(p for p in KERAS.iterdir() if p.name.startswith("units8_lr0.01"))
    shutil.copytree(source, logdir / "units8_lr0.01_rep9")
    window.hparams_view.watch_box.setChecked(True)
    assert window.hparams.watch_timer.isActive()
    with qtbot.waitSignal(window.hparams_runner.finished, timeout=20000):
        window.hparams.check_for_new_data()
    groups = window.hparams_view.model.table
    assert sum(len(s) for s in groups.sessions) == 5
    with qtbot.waitSignal(window.hparams_runner.finished, timeout=20000):
        window.hparams.check_for_new_data()  # nothing changed: nothing reloaded
    assert window.hparams_view.model.table is groups
    window.hparams_view.watch_box.setChecked(False)
    assert not window.hparams.watch_timer.isActive()


def test_profiles_and_sweeps_in_one_log_dir_show_both(window, qtbot, tmp_path):
    from conftest import SAMPLE

    logdir = tmp_path / "both"
    shutil.copytree(SAMPLE, logdir)
    shutil.copytree(KERAS, logdir / "sweep")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(logdir))
    texts = [window.tree.topLevelItem(i).text(0) for i in range(window.tree.topLevelItemCount())]
    assert texts[0] == "HParams (4 sessions)" and len(texts) > 1
    assert window.tabs.isTabVisible(window.tabs.indexOf(window.hparams_view))
    assert np.all(window.hparams_view.order >= 0)


def test_corrupt_records_are_skipped_and_reported(window, qtbot, tmp_path):
    logdir = tmp_path / "sweep"
    shutil.copytree(KERAS, logdir)
    victim = sorted((logdir).rglob("events.out.tfevents*"))[3]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF  # one record's data fails its CRC
    victim.write_bytes(bytes(data))
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(logdir))
    assert window.hparams_view.model.rowCount() == 3
    assert "failed the CRC check" in window.hparams_view.message.text()
