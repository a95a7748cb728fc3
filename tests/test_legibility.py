"""What a new user reads at 1280x800 (and 1920x1080): the HParams views'
titles, ticks and group names, the Compare kernel table's columns and the
Query chart's axes. Sizes are the room each view has in such a window."""

import dataclasses
import re

import numpy as np
import pyarrow as pa
import pytest
from conftest import DATA
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics

from profscope.models.analysis.comparison import Place, compare
from profscope.models.sql.result_chart import chart_data
from profscope.widgets.compare.view import CompareView
from profscope.widgets.query.chart import QueryChart

HPARAMS = DATA / "hparams"
HASH_NAME = re.compile(r"[0-9a-f]{32,}")  # TensorBoard's group names
ROOM = {"1280x800": (1030, 700), "1920x1080": (1670, 980)}  # the tab's room in such a window


@pytest.fixture(params=[("keras_callback", "1280x800"), ("api_config", "1280x800"), ("api_config", "1920x1080")])
def shown(request, open_hparams_view):
    name, size = request.param
    v = open_hparams_view(HPARAMS / name)
    v.resize(*ROOM[size])
    return v


def _paint(widget, qtbot):
    widget.repaint()
    qtbot.waitUntil(lambda: widget.width() > 0)
    widget.grab()


def _disjoint(rects) -> bool:
    return all(not a.intersects(b) for i, a in enumerate(rects) for b in rects[i + 1:])


def test_parallel_coordinate_titles_do_not_overlap_and_hover_names_them(shown, qtbot):
    shown.center.setCurrentWidget(shown.parallel)
    pc = shown.parallel
    _paint(pc, qtbot)
    metrics = QFontMetrics(pc.font())
    assert len(pc.title_rects) == len(pc.axes) > 5
    assert _disjoint(pc.title_rects)
    for rect, text, axis in zip(pc.title_rects, pc.title_texts, pc.axes):
        assert metrics.horizontalAdvance(text) <= rect.width() and 0 <= rect.left() and rect.right() <= pc.width()
        assert text == axis.title or "…" in text
        assert pc.tooltip_at(rect.center()) == axis.title  # the full name on hover


def test_parallel_coordinate_ticks_stay_between_their_axes(shown, qtbot):
    shown.center.setCurrentWidget(shown.parallel)
    pc = shown.parallel
    _paint(pc, qtbot)
    metrics = QFontMetrics(pc.font())
    for i, axis in enumerate(pc.axes):
        ticks = pc.tick_rects(i, metrics)
        assert bool(ticks) == bool(axis.labels) and _disjoint([r for r, _ in ticks])
        for (rect, text), (_, full) in zip(ticks, pc._ticks(i)):
            assert metrics.horizontalAdvance(text) <= rect.width()
            if axis.categorical and i + 1 < len(pc.axes):
                assert rect.right() <= pc._x(i + 1)  # clear of the next axis and its labels
            if not axis.categorical:
                assert text == full  # numbers are never cut
            elif text != full:
                assert pc.tooltip_at(rect.center()) == full
        assert _disjoint([r for r, _ in ticks] + pc.title_rects)


def test_scatter_matrix_row_titles_read_whole(open_hparams_view, qtbot):
    v = open_hparams_view(HPARAMS / "keras_callback")
    v.resize(*ROOM["1280x800"])
    v.center.setCurrentWidget(v.scatter)
    _paint(v.scatter, qtbot)
    metrics = QFontMetrics(v.scatter.font())
    rows = {full: (box, text) for box, text, full in v.scatter.titles if full in [a.title for a in v.scatter.rows]}
    assert "validation/epoch_accuracy" in rows
    box, text = rows["validation/epoch_accuracy"]
    assert text.replace("\n", "") == "validation/epoch_accuracy"  # wrapped, not "va…cy"
    assert all(metrics.horizontalAdvance(line) <= box.width() for line in text.split("\n"))
    assert _disjoint([b for b, _, _ in v.scatter.titles])
    for box, text, _ in v.scatter.titles:
        assert "…" not in text or len(text) > 6  # elided in the middle keeps both ends
        assert box.right() < v.scatter.cell_rect(0, 0).left() or box.top() > v.scatter.cell_rect(0, 0).top()


def test_groups_are_named_by_their_hparams_with_the_hash_as_tooltip(open_hparams_view):
    v = open_hparams_view(HPARAMS / "keras_callback")
    model = v.model
    labels = {}
    for r in range(model.rowCount()):
        g = model.group_at(r)
        labels[model.table.names[g]] = (model.index(r, 0).data(), model.index(r, 0).data(Qt.ToolTipRole))
    hashed = {n: lt for n, lt in labels.items() if HASH_NAME.fullmatch(n)}
    assert len(hashed) == 2
    assert sorted(label for label, _ in hashed.values()) == ["lr=0.001, optimizer=adam, units=8",
                                                             "lr=0.01, optimizer=adam, units=8"]
    assert all(name in tip for name, (_, tip) in hashed.items())
    assert labels["units16_lr0.01"][0] == "units16_lr0.01"  # a name of its own stays
    assert model.value(model.group_at(0), 0) == model.table.names[model.group_at(0)]  # exports keep the name
    v.select_group(model.group_at(0))
    assert v.details_title.text().startswith(f"Group {model.index(0, 0).data()}:")
    assert not HASH_NAME.search(v.details_title.text())


def test_an_empty_metric_chart_says_so(open_hparams_view):
    v = open_hparams_view(HPARAMS / "api_config")
    v.select_group(v.model.group_at(0))
    notes = v.curves.empty_notes
    assert ("", "never_logged") in notes
    assert notes[("", "never_logged")].toPlainText() == "no values of never_logged for the selected sessions"
    assert ("", "accuracy") not in notes  # charts with lines say nothing


@pytest.fixture(scope="module")
def pair():
    return compare(Place(str(DATA / "chrome_trace" / "diff_pair" / "baseline")),
                   Place(str(DATA / "chrome_trace" / "diff_pair" / "candidate")))


@pytest.mark.parametrize("size", ["1280x800", "1920x1080"])
def test_compare_kernel_table_fits_types_and_gives_names_the_rest(qtbot, pair, size):
    d = pair.stats["kernel_stats"]
    d = dataclasses.replace(d, type=["COMMUNICATION"] + list(d.type[1:]))
    view = CompareView()
    qtbot.addWidget(view)
    view.resize(*ROOM[size])
    view.set_comparison(dataclasses.replace(pair, stats={**pair.stats, "kernel_stats": d}))
    view.show()
    qtbot.waitExposed(view)
    table = view.stats_page.view
    metrics = QFontMetrics(table.font())
    header = table.horizontalHeader()
    assert header.sectionSize(1) >= metrics.horizontalAdvance("COMMUNICATION") + 6  # the Type whole
    for c in range(2, header.count()):  # every other column as wide as its values
        texts = [table.model().index(r, c).data() or "" for r in range(table.model().rowCount())]
        assert header.sectionSize(c) >= max(metrics.horizontalAdvance(t) for t in texts)
    assert header.sectionSize(0) >= 200  # the names get the rest
    assert header.length() <= table.viewport().width() + 1  # no horizontal scrolling at this size
    assert table.textElideMode() == Qt.ElideMiddle
    index = table.model().index(0, 0)
    assert index.data(Qt.ToolTipRole) == d.name[0]


def _ticks(axis, low, high, length):
    levels = axis.tickValues(low, high, length)
    values = [v for _, vs in levels for v in vs]
    return values, axis.tickStrings(values, 1.0, levels[0][0])


def _chart(qtbot, table):
    chart = QueryChart()
    qtbot.addWidget(chart)
    chart.resize(ROOM["1280x800"][0] // 2, ROOM["1280x800"][1] // 2)
    chart.set_data(chart_data(table))
    chart.show()
    qtbot.waitExposed(chart)
    return chart


def test_query_chart_bytes_in_binary_units_and_labels_equal_values(qtbot):
    chart = _chart(qtbot, pa.table({"step": np.arange(40), "peak_bytes": np.arange(40) * 97 * 2**20 + 3 * 2**30}))
    values, labels = _ticks(chart.y_axis, 3 * 2**30, 3 * 2**30 + 39 * 97 * 2**20, 300)
    assert chart.y_axis.labelText == "peak_bytes (GiB)" and len(values) >= 3
    assert all(float(t) * 2**30 == pytest.approx(v, abs=1e-6 * 2**30) for v, t in zip(values, labels))
    assert all((v / 2**30 * 2) % 1 == pytest.approx(0, abs=1e-9) for v in values)  # round steps of a GiB


def test_query_chart_time_in_round_units_never_kiloseconds(qtbot):
    chart = _chart(qtbot, pa.table({"wall_time": 1.7e9 + np.arange(30) * 611.3, "loss": np.linspace(2, 0.1, 30)}))
    values, labels = _ticks(chart.x_axis, 0.0, 29 * 611.3, 450)
    assert chart.x_axis.labelText.endswith("(h)") and "ks" not in chart.x_axis.labelText
    assert all(float(t) * 3600 == pytest.approx(v) for v, t in zip(values, labels))
    chart = _chart(qtbot, pa.table({"start_ns": np.arange(50) * 37_000_123 + 10**15, "dur_ns": np.arange(50) * 10**5}))
    values, labels = _ticks(chart.x_axis, 0.0, 1.8, 450)
    assert chart.x_axis.labelText.endswith("(ms)") and labels[:3] == ["0", "500", "1000"]
    values, labels = _ticks(chart.y_axis, 0.0, 4.9e6, 300)
    assert chart.y_axis.labelText == "dur_ns (ms)" and labels[:3] == ["0", "1", "2"]
