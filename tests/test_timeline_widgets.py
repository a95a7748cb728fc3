"""The timeline tab on a real TensorFlow step: zoom, pan, click, search,
range selection, op statistics, and what the pixels show."""

import math

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt

from conftest import DATA
from models.formats.step_stats import load_step_timeline, locate
from widgets.kind_stats_table import KindStatsModel
from widgets.timeline_canvas import GUTTER_W, HEADER_H, LANE_H, RULER_H, kind_color
from widgets.timeline_view import TimelineView


@pytest.fixture
def view(qtbot):
    v = TimelineView()
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.set_timeline(load_step_timeline(locate(DATA / "step_stats" / "run_metadata.pb")))
    v.show()
    qtbot.waitExposed(v)
    return v


def lane_y(lane_row: int) -> int:
    """Widget y of the middle of the first device's lane number lane_row."""
    return RULER_H + HEADER_H + lane_row * LANE_H + LANE_H // 2


def test_shows_the_whole_step_then_zooms_and_pans(qtbot, view):
    canvas, tl = view.canvas, view.timeline
    a, b = tl.span_ps
    assert canvas.t0 <= a and canvas.t0 + canvas.lanes_width * canvas.ps_per_px >= b
    width = canvas.ps_per_px
    qtbot.keyClick(canvas, Qt.Key_W)
    assert canvas.ps_per_px < width
    t0 = canvas.t0
    qtbot.keyClick(canvas, Qt.Key_D)
    assert canvas.t0 > t0
    qtbot.keyClick(canvas, Qt.Key_A)
    assert canvas.t0 == pytest.approx(t0)
    qtbot.keyClick(canvas, Qt.Key_S)
    qtbot.keyClick(canvas, Qt.Key_0)
    assert canvas.ps_per_px == pytest.approx(width)


def test_click_shows_details_and_f_fits_it(qtbot, view):
    canvas, tl = view.canvas, view.timeline
    i = int(np.argmax(tl.duration_ps))  # the long _MklMatMul
    x = GUTTER_W + (tl.start_ps[i] + tl.duration_ps[i] / 2 - canvas.t0) / canvas.ps_per_px
    with qtbot.waitSignal(canvas.event_selected) as selected:
        qtbot.mouseClick(canvas, Qt.LeftButton, pos=QPoint(int(x), lane_y(0)))
    assert selected.args == [i]
    fields = {view.details.topLevelItem(k).text(0): view.details.topLevelItem(k).text(1)
              for k in range(view.details.topLevelItemCount())}
    assert fields["op type"] == "_MklMatMul" and fields["node"] == "MatMul" and fields["input 0"] == "_arg_x_0_0"
    assert "all_end_rel_nanos" in fields
    qtbot.keyClick(canvas, Qt.Key_F)
    assert canvas.lanes_width * canvas.ps_per_px == pytest.approx(tl.duration_ps[i] * 1.06, rel=0.01)
    qtbot.keyClick(canvas, Qt.Key_Escape)
    assert canvas.selected == -1 and view.details.topLevelItemCount() == 0


def test_search_counts_and_steps_through_matches(qtbot, view):
    view.search.setText("readvariableop")
    view.run_search()
    assert view.match_label.text() == "2 matches"
    qtbot.keyClick(view.search, Qt.Key_Return)
    assert view.match_label.text() == "1 / 2" and view.canvas.selected == view.matches[0]
    view.previous_match()
    assert view.match_label.text() == "2 / 2"
    view.search.setText("no such op")
    view.run_search()
    assert view.match_label.text() == "0 matches" and view.canvas.highlight is not None


def test_dragging_on_the_ruler_selects_a_range(qtbot, view):
    canvas = view.canvas
    with qtbot.waitSignal(canvas.range_selected) as got:
        qtbot.mousePress(canvas, Qt.LeftButton, pos=QPoint(GUTTER_W + 5, 10))
        qtbot.mouseMove(canvas, QPoint(GUTTER_W + 400, 12))
        qtbot.mouseRelease(canvas, Qt.LeftButton, pos=QPoint(GUTTER_W + 400, 12))
    a, b = got.args
    assert b > a and view.range_table.model().rowCount() >= 1
    model = view.range_table.stats_model
    assert all(model.value(r, 6) <= 1.0 + 1e-9 for r in range(model.rowCount()))  # clipped to the range
    canvas.clear_selection()
    assert canvas.range is None and view.range_table.model().rowCount() == 0


def test_drag_pans_and_headers_fold(qtbot, view):
    canvas = view.canvas
    t0 = canvas.t0
    qtbot.mousePress(canvas, Qt.LeftButton, pos=QPoint(600, lane_y(1)))
    qtbot.mouseMove(canvas, QPoint(500, lane_y(1)))
    qtbot.mouseRelease(canvas, Qt.LeftButton, pos=QPoint(500, lane_y(1)))
    assert canvas.t0 == pytest.approx(t0 + 100 * canvas.ps_per_px)
    height = canvas.content_height()
    qtbot.mouseClick(canvas, Qt.LeftButton, pos=QPoint(300, RULER_H + 5))  # first device's header
    assert canvas.content_height() == height - 2 * LANE_H


def test_op_statistics_sort_and_highlight(qtbot, view, qtmodeltester):
    model = view.op_stats.stats_model
    qtmodeltester.check(model)
    assert model.rowCount() == len(view.timeline.kind_stats())
    model.sort(2, Qt.DescendingOrder)  # by count
    counts = [model.value(r, 2) for r in range(model.rowCount())]
    assert counts == sorted(counts, reverse=True)
    view.op_stats.selectRow(0)
    group, kind = model.row_key(0)
    tl = view.timeline
    assert view.canvas.highlight is not None and len(view.canvas.highlight) == counts[0]
    assert set(tl.kind[view.canvas.highlight]) == {kind}
    shares = [model.value(r, 6) for r in range(model.rowCount())]
    assert 0 < sum(shares) and max(shares) <= 1.0


def test_pixels_show_the_bars_in_their_op_colour(qtbot, view):
    tl, canvas = view.timeline, view.canvas
    i = int(np.argmax(tl.duration_ps))
    image = canvas.grab().toImage()
    x = int(GUTTER_W + (tl.start_ps[i] + tl.duration_ps[i] / 2 - canvas.t0) / canvas.ps_per_px)
    assert image.pixel(x, lane_y(0) + 4) == kind_color("_MklMatMul")
    # an empty stretch of the same lane is background
    gap = int(GUTTER_W + (tl.end_ps[i] + 0.3 * (tl.span_ps[1] - tl.end_ps[i]) / 2 - canvas.t0) / canvas.ps_per_px)
    assert image.pixel(min(gap, canvas.width() - 2), lane_y(1) + 4) == 0xFFFFFFFF


def test_million_event_lane_draws_bounded_work(qtbot):
    """A dense lane draws through the index, whatever the zoom."""
    from models.timeline import StringColumn, Timeline
    n = 200_000
    start = np.arange(n, dtype=np.int64) * 1000
    tl = Timeline(groups=["/device:X"], lane_group=np.zeros(1, np.int32), lane_names=["lane 0"],
                  lane_offsets=np.array([0, n]), start_ps=start, duration_ps=np.full(n, 500, np.int64),
                  kind=(np.arange(n) % 3).astype(np.int32), kinds=["a", "b", "c"],
                  names=StringColumn.from_strings(["e"] * n))
    v = TimelineView()
    qtbot.addWidget(v)
    v.resize(1000, 500)
    v.set_timeline(tl)
    v.show()
    qtbot.waitExposed(v)
    row, wide, _ = v.canvas.lane_pixels(0, v.canvas.lanes_width)
    assert len(wide) == 0 and (row != 0).sum() >= v.canvas.lanes_width * 0.9  # merged, not per event
    v.canvas.fit(float(start[1000]), float(start[1010]))
    row, wide, extent = v.canvas.lane_pixels(0, v.canvas.lanes_width)
    assert 10 <= len(wide) <= 12 and np.all(extent[:, 1] - extent[:, 0] > 10)
    assert not math.isnan(v.canvas.t0)


def test_kind_stats_model_empty(qtmodeltester):
    model = KindStatsModel()
    qtmodeltester.check(model)
    assert model.rowCount() == 0 and QPointF(0, 0).isNull()
