"""The timeline tab on a real TensorFlow step: zoom, pan, click, search,
range selection, op statistics, and what the pixels show."""

import dataclasses
import json
import math

import numpy as np
import pytest
from conftest import DATA
from PySide6.QtCore import QPoint, QPointF, Qt

from profscope.models.formats.step_stats import load_step_timeline, locate
from profscope.widgets.timeline.canvas import GUTTER_W, HEADER_H, LANE_H, RULER_H, kind_color
from profscope.widgets.timeline.kind_stats_table import KindStatsModel
from profscope.widgets.timeline.view import TimelineView


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
    canvas.zoom(4.0)  # the whole trace cannot pan: the view stays within the data
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
    from profscope.models.data.timeline import StringColumn, Timeline
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


# ---------------------------------------------------------------- Chrome traces: flows, counters, instants

CHROME = DATA / "chrome_trace"


def chrome_timeline(*files):
    from profscope.models.formats.chrome_trace import build_timeline, scan
    if len(files) == 1:
        return build_timeline([("", scan(CHROME / files[0]))])
    return build_timeline([(f"rank-{k}", scan(CHROME / f)) for k, f in enumerate(files)])


def chrome_view(qtbot, timeline, size=(1600, 900)):
    v = TimelineView()
    qtbot.addWidget(v)
    v.resize(*size)
    v.set_timeline(timeline)
    v.show()
    qtbot.waitExposed(v)
    return v


def event_point(canvas, i, dx=0.0):
    """Widget point over event i's start (plus dx pixels), in its lane's middle."""
    x, y, shown = canvas.event_anchor(i)
    assert shown
    return QPoint(int(round(x + dx)), int(y))


def launch_and_kernel(tl, nth=0):
    f = tl.flows
    k = np.flatnonzero(f.category == f.categories.index("ac2g"))[nth]
    return int(f.src[k]), int(f.dst[k])


def detail_fields(view):
    return [(view.details.topLevelItem(k).text(0), view.details.topLevelItem(k).text(1))
            for k in range(view.details.topLevelItemCount())]


def color_near(image, x, y, rgb, radius=1, tolerance=60):
    """Whether a pixel within radius of (x, y) is close to rgb (antialiased lines blend)."""
    for yy in range(y - radius, y + radius + 1):
        for xx in range(x - radius, x + radius + 1):
            c = image.pixelColor(xx, yy)
            if abs(c.red() - rgb[0]) + abs(c.green() - rgb[1]) + abs(c.blue() - rgb[2]) <= tolerance:
                return True
    return False


def test_selecting_a_launch_draws_its_flow_to_the_kernel(qtbot):
    from profscope.widgets.timeline.canvas import flow_color
    view = chrome_view(qtbot, chrome_timeline("gpu/rank-0.json.gz"))
    canvas, tl = view.canvas, view.timeline
    launch, kernel = launch_and_kernel(tl, 20)
    assert tl.names[launch] == "cudaLaunchKernel" and tl.category[kernel] == tl.categories.index("kernel")
    s, e = float(tl.start_ps[launch]), float(tl.end_ps[kernel])
    canvas.fit(s - (e - s), e + (e - s))
    assert canvas.flow_segments() == []  # nothing selected, nothing drawn
    with qtbot.waitSignal(canvas.event_selected) as selected:
        qtbot.mouseClick(canvas, Qt.LeftButton, pos=event_point(canvas, launch, dx=3))
    assert selected.args == [launch]
    (x0, y0, x1, y1, category, head, src, dst), = canvas.flow_segments()
    sx, sy, _ = canvas.event_anchor(launch)
    kx, ky, _ = canvas.event_anchor(kernel)
    assert (src, dst, category, head) == (launch, kernel, "ac2g", True)
    assert (x0, y0, x1, y1) == pytest.approx((sx, sy, kx, ky))
    assert ky > sy and kx > sx  # the kernel runs on a GPU stream below, after its launch
    # The arrow's pixels: its colour along the segment, not before selection.
    rgb = flow_color("ac2g").getRgb()[:3]
    image = canvas.grab().toImage()
    for f in (0.3, 0.5, 0.7):
        assert color_near(image, int(x0 + f * (x1 - x0)), int(y0 + f * (y1 - y0)), rgb)
    assert ("flow to (ac2g)", f"{tl.names[kernel]} at {tl.start_ps[kernel] / 1e6:.3f} µs") in detail_fields(view)
    qtbot.keyClick(canvas, Qt.Key_Escape)
    assert canvas.flow_segments() == []
    image = canvas.grab().toImage()
    assert not color_near(image, int((x0 + x1) / 2), int((y0 + y1) / 2), rgb)


def test_selecting_a_kernel_draws_the_incoming_flow(qtbot):
    view = chrome_view(qtbot, chrome_timeline("gpu/rank-0.json.gz"))
    canvas, tl = view.canvas, view.timeline
    launch, kernel = launch_and_kernel(tl, 5)
    canvas.select_event(kernel)
    (x0, y0, x1, y1, category, head, src, dst), = canvas.flow_segments()
    assert (src, dst) == (launch, kernel) and (x1, y1) == pytest.approx(canvas.event_anchor(kernel)[:2])
    assert any(k.startswith("flow from (ac2g)") for k, _ in detail_fields(view))


def test_brackets_follow_ac2g_flows_and_reveal_the_other_end(qtbot):
    view = chrome_view(qtbot, chrome_timeline("gpu/rank-0.json.gz"))
    canvas, tl = view.canvas, view.timeline
    launch, kernel = launch_and_kernel(tl, 40)
    canvas.select_event(launch)
    canvas.fit(float(tl.start_ps[launch]), float(tl.end_ps[launch]))  # the kernel starts off screen
    assert tl.start_ps[kernel] > canvas.t0 + canvas.lanes_width * canvas.ps_per_px
    canvas.toggle_group(int(tl.lane_group[tl.lane_of(kernel)]))  # and its group is folded
    with qtbot.waitSignal(canvas.event_selected) as selected:
        qtbot.keyClick(canvas, Qt.Key_BracketRight)
    assert selected.args == [kernel] and canvas.selected == kernel
    right = canvas.t0 + canvas.lanes_width * canvas.ps_per_px
    assert canvas.t0 <= tl.start_ps[kernel] and tl.end_ps[kernel] <= right
    x, y, shown = canvas.event_anchor(kernel)
    assert shown and RULER_H <= y <= canvas.height() and GUTTER_W <= x <= canvas.width()
    assert any(k.startswith("flow from (ac2g)") for k, _ in detail_fields(view))
    assert [k for k, _ in detail_fields(view)].count("name") == 1
    qtbot.keyClick(canvas, Qt.Key_BracketRight)  # a kernel has no outgoing flow: nothing changes
    assert canvas.selected == kernel
    qtbot.keyClick(canvas, Qt.Key_BracketLeft)
    assert canvas.selected == launch
    assert canvas.t0 <= tl.start_ps[launch] <= canvas.t0 + canvas.lanes_width * canvas.ps_per_px
    assert "]" in view.hint.text() and "[" in view.hint.text() and "]" in view.hint.toolTip()


def test_flows_into_a_folded_group_end_at_its_header(qtbot):
    view = chrome_view(qtbot, chrome_timeline("gpu/rank-0.json.gz"))
    canvas, tl = view.canvas, view.timeline
    launch, kernel = launch_and_kernel(tl, 3)
    group = int(tl.lane_group[tl.lane_of(kernel)])
    canvas.toggle_group(group)
    canvas.select_event(launch)
    (x0, y0, x1, y1, *_), = canvas.flow_segments()
    header = next(r for r in canvas._rows if r[0] == "header" and r[1] == group)
    assert y1 == pytest.approx(RULER_H + header[2] - canvas.scroll_y + HEADER_H / 2)
    canvas.grab()  # paints
    # Zoomed far away from both ends: the flow is off screen, nothing drawn, no error.
    canvas.fit(float(tl.span_ps[1]) - 1e6, float(tl.span_ps[1]))
    assert canvas.flow_segments() == []
    canvas.zoom(1e6)  # extreme zoom: coordinates far outside the widget are clipped
    canvas.grab()


def test_two_ranks_flows_stay_within_their_rank(qtbot):
    tl = chrome_timeline("gpu/rank-0.json.gz", "gpu/rank-1.json.gz")
    view = chrome_view(qtbot, tl)
    canvas = view.canvas
    f = tl.flows
    rank1 = [g for g, host in enumerate(tl.group_host) if host == "rank-1"]
    k = np.flatnonzero((f.category == f.categories.index("ac2g")) & np.isin(tl.event_group[f.src], rank1))[0]
    canvas.select_event(int(f.src[k]))
    qtbot.keyClick(canvas, Qt.Key_BracketRight)
    assert canvas.selected == f.dst[k] and tl.group_host[tl.event_group[canvas.selected]] == "rank-1"
    canvas.grab()


def counter_trace(tmp_path):
    """X events on two processes and counters: "mem" with two series (two
    counters), "queue" with one."""
    events = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "python"}},
              {"ph": "M", "name": "process_name", "pid": 2, "args": {"name": "GPU 0"}}]
    for k in range(10):
        events.append({"ph": "X", "name": f"op{k % 3}", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": k * 100, "dur": 80})
        events.append({"ph": "X", "name": "kernel", "cat": "kernel", "pid": 2, "tid": 7, "ts": k * 100 + 10, "dur": 50})
        events.append({"ph": "C", "name": "mem", "pid": 1, "ts": k * 100,
                       "args": {"allocated": 1000 * (k + 1), "reserved": 20000}})
    events.append({"ph": "C", "name": "queue", "pid": 2, "ts": 250, "args": {"depth": 3}})
    events.append({"ph": "C", "name": "queue", "pid": 2, "ts": 650, "args": {"depth": 7}})
    path = tmp_path / "counters.json"
    path.write_text(json.dumps({"traceEvents": events}))
    from profscope.models.formats.chrome_trace import build_timeline, scan
    return build_timeline([("", scan(path))])


def test_counter_rows_under_their_header_with_values_on_hover(qtbot, tmp_path):
    from profscope.widgets.timeline.canvas import COUNTER_H
    tl = counter_trace(tmp_path)
    assert sorted(c.name for c in tl.counters) == ["mem allocated", "mem reserved", "queue"]
    view = chrome_view(qtbot, tl)
    canvas = view.canvas
    rows = canvas._rows
    counter_rows = [r for r in rows if r[0] == "counter"]
    assert len(counter_rows) == 3 and all(r[3] == COUNTER_H for r in counter_rows)
    for group in range(len(tl.groups)):
        mine = [k for k, c in enumerate(tl.counters) if c.group == group]
        header = next(j for j, r in enumerate(rows) if r[0] == "header" and r[1] == group)
        assert [r[1] for r in rows[header + 1:header + 1 + len(mine)]] == mine  # right under the header
        assert all(r[0] == "counter" for r in rows[header + 1:header + 1 + len(mine)])
    # Hover: the value in effect at the cursor's time.
    k = next(k for k, c in enumerate(tl.counters) if c.name == "mem allocated")
    row = next(r for r in counter_rows if r[1] == k)
    t = float(tl.counters[k].time_ps[4]) + 50e6  # 50 µs after the fifth sample (5,000)
    x = int(round(GUTTER_W + (t - canvas.t0) / canvas.ps_per_px))
    y = RULER_H + row[2] - canvas.scroll_y + COUNTER_H // 2
    assert "5,000" in canvas.counter_tooltip(k, canvas.x_to_ps(x))
    from PySide6.QtWidgets import QToolTip
    qtbot.mouseMove(canvas, QPoint(x - 2, y))  # a window's first synthetic move only places the cursor
    qtbot.mouseMove(canvas, QPoint(x, y))
    qtbot.waitUntil(lambda: "5,000" in QToolTip.text())
    assert "mem allocated" in QToolTip.text()
    q = next(k for k, c in enumerate(tl.counters) if c.name == "queue")
    assert "no value before" in canvas.counter_tooltip(q, 100e6)
    assert "7" in canvas.counter_tooltip(q, 700e6)
    # The chart: the step is highest at the end, lowest at the start; folding hides the rows.
    chart = canvas.counter_pixels(k, canvas.lanes_width)
    cols = np.flatnonzero((chart != 0).any(axis=0))
    tops = [int(np.flatnonzero(chart[:, c])[0]) for c in (cols[2], cols[-3])]
    assert tops[1] < tops[0]
    canvas.toggle_group(int(tl.counters[k].group))
    assert sum(r[0] == "counter" for r in canvas._rows) == 3 - sum(
        c.group == tl.counters[k].group for c in tl.counters)
    image = canvas.grab().toImage()
    assert not image.isNull()


def test_dense_counter_draws_per_pixel_min_max(qtbot):
    from profscope.models.data.timeline import Counter
    from profscope.widgets.timeline.canvas import COUNTER_H
    tl = load_step_timeline(locate(DATA / "step_stats" / "run_metadata.pb"))
    a, b = tl.span_ps
    n = 100_000
    times = np.linspace(a, b, n).astype(np.int64)
    values = np.where(np.arange(n) % 2 == 0, 0.0, 10.0)  # alternates: every column spans 0..10
    tl = dataclasses.replace(tl, counters=[Counter(0, "square", times, values)])
    v = chrome_view(qtbot, tl, size=(1000, 500))
    chart = v.canvas.counter_pixels(0, v.canvas.lanes_width)
    assert chart.shape == (COUNTER_H, v.canvas.lanes_width)
    inside = np.flatnonzero((chart != 0).any(axis=0))
    line = int(chart[2, inside[len(inside) // 2]])
    assert line != 0 and all(int(chart[2, c]) == line and int(chart[COUNTER_H - 4, c]) == line for c in inside[5:-5])
    v.canvas.grab()


def test_instant_events_are_drawn_clickable_and_detailed(qtbot):
    view = chrome_view(qtbot, chrome_timeline("train.pt.trace.json.gz"))
    canvas, tl = view.canvas, view.timeline
    lanes = np.flatnonzero(canvas._instant_lane)
    assert [tl.lane_names[k] for k in lanes] == ["thread 3836 (python) instants", "global"]
    memory = np.flatnonzero((tl.duration_ps == 0) & (tl.kind == tl.kinds.index("[memory]")))
    i = int(memory[len(memory) // 2])
    # At the whole view, each instant still covers pixels: a triangle at its column.
    x, y, _ = canvas.event_anchor(i)
    image = canvas.grab().toImage()
    top = int(y - LANE_H / 2) + 2
    assert image.pixel(int(x), top) != 0xFFFFFFFF and image.pixel(int(x), int(y + LANE_H / 2) - 1) == 0xFFFFFFFF
    # Zoomed in around it, a click a few pixels off still selects it.
    s = float(tl.start_ps[i])
    canvas.fit(s - 1e6, s + 1e6)
    with qtbot.waitSignal(canvas.event_selected) as selected:
        qtbot.mouseClick(canvas, Qt.LeftButton, pos=event_point(canvas, i, dx=3))
    assert selected.args == [i]
    fields = dict(detail_fields(view))
    assert fields["name"] == "[memory]" and fields["duration"] == "0 (instant)" and "args.Bytes" in fields
    assert "instant at" in canvas.event_summary(i)
    canvas.grab()


def test_plain_timelines_have_no_counters_flows_or_instant_lanes(qtbot, view):
    canvas = view.canvas
    assert view.timeline.flows is None and not view.timeline.counters
    assert {r[0] for r in canvas._rows} == {"header", "lane"} and not canvas._instant_lane.any()
    canvas.select_event(0)
    assert canvas.flow_segments() == [] and canvas.flow_partners(True).size == 0
    qtbot.keyClick(canvas, Qt.Key_BracketRight)
    qtbot.keyClick(canvas, Qt.Key_BracketLeft)
    assert canvas.selected == 0


def shown_range(canvas) -> tuple[float, float]:
    return canvas.t0, canvas.t0 + canvas.lanes_width * canvas.ps_per_px


def _wheel(widget, x: float, clicks: int) -> None:
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    pos = QPointF(x, widget.height() / 2)
    QApplication.sendEvent(widget, QWheelEvent(pos, QPointF(widget.mapToGlobal(pos.toPoint())), QPoint(),
                                               QPoint(0, 120 * clicks), Qt.NoButton, Qt.NoModifier,
                                               Qt.NoScrollPhase, False))


def test_zooming_out_stops_at_the_data_and_a_small_margin(qtbot, view):
    """The issue: W/S and the wheel zoomed out to four times the data's length."""
    canvas, (a, b) = view.canvas, view.timeline.span_ps
    margin = (b - a) * 0.03
    whole = shown_range(canvas)
    assert whole == pytest.approx((a - margin, b + margin), abs=canvas.ps_per_px)
    for _ in range(3):
        qtbot.keyClick(canvas, Qt.Key_W)
    for _ in range(20):
        qtbot.keyClick(canvas, Qt.Key_S)
    assert shown_range(canvas) == pytest.approx(whole, abs=canvas.ps_per_px)
    _wheel(canvas, GUTTER_W + 100, 4)  # in, near the left
    assert shown_range(canvas)[1] - shown_range(canvas)[0] < 0.5 * (b - a)
    for _ in range(20):
        _wheel(canvas, canvas.width() - 20, -1)  # out, at the right edge: the view does not slide past the end
    assert shown_range(canvas) == pytest.approx(whole, abs=canvas.ps_per_px)
    qtbot.keyClick(canvas, Qt.Key_D)  # the whole data shown: nowhere to pan
    assert shown_range(canvas) == pytest.approx(whole, abs=canvas.ps_per_px)
