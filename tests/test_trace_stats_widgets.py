"""The Statistics view of GPU traces (Overview, Kernels, Operators, step range),
built from stats computed in memory; the report's Statistics sections."""

from pathlib import Path

import numpy as np
import pytest
from conftest import DATA
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from profscope.models.analysis import trace_stats
from profscope.models.core.task import Cancelled, ProfileError, TaskState
from profscope.models.formats.chrome_trace import build_timeline, scan
from profscope.widgets.stats.breakdown_bars import BREAKDOWN
from profscope.widgets.stats.table_models import DeviceModel, KernelModel, OpModel, OverviewModel, natural_key
from profscope.widgets.stats.trace_stats_view import TraceStatsView, describe_range

GPU = DATA / "chrome_trace" / "gpu"


@pytest.fixture(scope="module")
def two_ranks():
    return build_timeline([("rank-0", scan(GPU / "rank-0.json.gz")), ("rank-1", scan(GPU / "rank-1.json.gz"))])


@pytest.fixture(scope="module")
def rank0():
    return build_timeline([("rank-0", scan(GPU / "rank-0.json.gz"))])


@pytest.fixture(scope="module")
def stats(two_ranks):
    return trace_stats.compute(two_ranks)


@pytest.fixture
def view(qtbot, stats):
    v = TraceStatsView()
    qtbot.addWidget(v)
    v.resize(1284, 860)
    v.set_stats(stats)
    v.show()
    return v


def shown(model, column):
    return [model.data(model.index(r, column)) for r in range(model.rowCount())]


# ------------------------------------------------------------------ computing


def test_compute_matches_the_models_functions(two_ranks, stats):
    k = trace_stats.kernel_stats(two_ranks)
    assert stats.kernels.name == k.name and np.array_equal(stats.kernels.total_ps, k.total_ps)
    assert np.allclose(stats.kernels.share, k.share)
    assert stats.hosts == ["rank-0", "rank-1"]
    assert list(stats.step_numbers) == [2, 3, 4] and stats.step_range is None and stats.window_ps is None
    assert stats.launch_rows == len(k) == len(stats.launch)  # 42 kernels: all under the top 200
    assert stats.launch[0]["grid"] == "[2, 1, 1]"  # the NCCL all-reduce on rank-0
    assert stats.devices_used == {"rank-0": [0], "rank-1": [1]}


def test_compute_names_a_single_hosts_rows_and_limits_steps(rank0):
    s = trace_stats.compute(rank0, (3, 3))
    assert s.hosts == ["rank-0"] and set(s.kernels.host) == {"rank-0"} and set(s.ops.host) == {"rank-0"}
    assert s.devices_used == {"rank-0": [0]}
    assert s.step_range == (3, 3) and s.window_ps == trace_stats.step_window(rank0, 3, 3)
    assert list(s.overview[0].steps.number) == [3]
    whole = trace_stats.compute(rank0)
    assert s.kernels.count.sum() < whole.kernels.count.sum()
    with pytest.raises(ProfileError, match="no ProfilerStep between 7 and 9"):
        trace_stats.compute(rank0, (7, 9))
    task = TaskState()
    task.cancel()
    with pytest.raises(Cancelled):
        trace_stats.compute(rank0, task=task)


def test_only_the_top_kernels_launch_parameters_are_read(rank0):
    s = trace_stats.compute(rank0, launch_rows=3)
    assert s.launch_rows == 3 and sorted(s.launch) == [0, 1, 2]


# ------------------------------------------------------------------ models


@pytest.mark.parametrize("model_class", [KernelModel, OpModel, OverviewModel])
def test_models_pass_qt_model_tests(qtmodeltester, stats, model_class):
    model = model_class()
    qtmodeltester.check(model)  # empty
    model.set_stats(stats)
    assert model.rowCount() > 0
    qtmodeltester.check(model)
    model.sort(3, Qt.DescendingOrder)
    model.set_filter(text="a")
    qtmodeltester.check(model)
    model.set_stats(None)
    assert model.rowCount() == 0
    qtmodeltester.check(model)


def test_device_model_passes_qt_model_tests(qtmodeltester, stats):
    model = DeviceModel()
    qtmodeltester.check(model)
    o = stats.overview[1]
    model.set_devices(o.properties["deviceProperties"], stats.devices_used["rank-1"])
    assert model.rowCount() == 2
    assert [model.text(r, 1) for r in range(2)] == ["NVIDIA A100-SXM4-80GB"] * 2
    assert model.text(0, 2) == "79.1 GiB" and model.text(0, 3) == "108" and model.text(0, 4) == "8.0"
    assert [model.text(r, 8) for r in range(2)] == ["", "✓"]  # rank-1 ran on GPU 1
    qtmodeltester.check(model)


def test_kernel_model_sorts_and_filters(stats):
    model = KernelModel()
    model.set_stats(stats)
    assert model.rowCount() == 42
    model.sort(4, Qt.DescendingOrder)  # total
    totals = [model.data(model.index(r, 4), Qt.UserRole) for r in range(model.rowCount())]
    assert totals == sorted(totals, reverse=True)
    model.sort(3, Qt.AscendingOrder)  # count
    counts = [model.data(model.index(r, 3), Qt.UserRole) for r in range(model.rowCount())]
    assert counts == sorted(counts)
    model.sort(1, Qt.AscendingOrder)  # name, any case
    names = shown(model, 1)
    assert names == sorted(names, key=natural_key) and names != sorted(names)  # any case, numbers by value
    model.set_filter(text="NCCL")
    assert shown(model, 1) == ["ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"] * 2
    assert sorted(shown(model, 0)) == ["rank-0", "rank-1"]
    model.set_filter(host="rank-1")
    assert shown(model, 0) == ["rank-1"]
    model.set_filter(text="", host="", type_="MEMORY")
    assert model.rowCount() > 0 and set(shown(model, 2)) == {"MEMORY"}
    assert set(shown(model, 1)) <= {n for n in stats.kernels.name if "Memcpy" in n or "Memset" in n}
    assert isinstance(model.data(model.index(0, 2), Qt.DecorationRole), QColor)
    long_name = model.index(0, 1)
    assert model.data(long_name, Qt.ToolTipRole) == model.data(long_name)  # the full name


def test_op_and_overview_models_show_times_and_shares(stats):
    ops = OpModel()
    ops.set_stats(stats)
    ops.sort(6, Qt.DescendingOrder)  # device total
    assert shown(ops, 1)[:2] == ["c10d::allreduce_", "aten::mm"]
    assert shown(ops, 6)[:2] == ["48.73 ms", "40.16 ms"]
    overview = OverviewModel()
    overview.set_stats(stats)
    assert shown(overview, 0) == ["rank-0", "rank-1"]
    assert shown(overview, 2) == ["0.5 %", "63.0 %"]  # compute: rank-1 computes, rank-0 waits in NCCL
    assert shown(overview, 3) == ["77.2 %", "0.2 %"]
    assert shown(overview, 5) == ["3", "3"]
    assert overview.data(overview.index(1, 2), Qt.ToolTipRole) == "40.55 ms of 64.36 ms"


# ------------------------------------------------------------------ the view


def test_kernel_page_filters_and_shows_launch_parameters(qtbot, view, stats):
    view.show_page("kernel_stats")
    page = view.kernels
    assert view.pages.currentWidget() is page and view.current_page() == "kernel_stats"
    assert page.count_label.text() == "42 kernels"
    assert page.table.textElideMode() == Qt.ElideMiddle
    page.table.selectRow(0)
    text = page.details.text()
    assert "ncclDevKernel_AllReduce" in text and "Grid <b>[2, 1, 1]</b>" in text and "34.6 KiB" in text
    page.filter.setText("sgemm")
    qtbot.waitUntil(lambda: page.model.rowCount() < 42)
    assert all("sgemm" in n for n in shown(page.model, 1))
    assert page.count_label.text() == f"{page.model.rowCount()} of 42 kernels"
    page.type_box.setCurrentText("COMMUNICATION")
    assert page.model.rowCount() == 0
    page.filter.clear()
    qtbot.waitUntil(lambda: page.model.rowCount() == 2)
    page.host_box.setCurrentText("rank-1")
    assert shown(page.model, 0) == ["rank-1"]
    assert "Select a kernel" in page.details.text()


def test_launch_parameters_beyond_the_top_rows_are_explained(qtbot, rank0):
    v = TraceStatsView()
    qtbot.addWidget(v)
    v.set_stats(trace_stats.compute(rank0, launch_rows=1))
    page = v.kernels
    assert page.table.isColumnHidden(0) and not page.host_box.isVisibleTo(page)  # one host
    page.table.selectRow(1)
    assert "(the top 1 here); this one is not among them" in page.details.text()


def test_step_range_selector_emits_and_follows_the_stats(qtbot, view, stats, two_ranks):
    assert view.first_box.currentText() == "All steps" and not view.last_box.isEnabled()
    assert [view.last_box.itemText(i) for i in range(view.last_box.count())] == ["2", "3", "4"]
    with qtbot.waitSignal(view.step_range_requested) as sig:
        view.select_steps((3, 4))
    assert sig.args == [(3, 4)] and "Computing the statistics of steps 3–4" in view.range_label.text()
    with qtbot.waitSignal(view.step_range_requested) as sig:
        view.first_box.setCurrentIndex(view.first_box.findText("4"))
        view.first_box.activated.emit(view.first_box.currentIndex())  # as a user's choice
    assert sig.args == [(4, 4)]
    with qtbot.assertNotEmitted(view.step_range_requested):
        view.set_stats(trace_stats.compute(two_ranks, (3, 4)))
    assert (view.first_box.currentText(), view.last_box.currentText()) == ("3", "4") and view.last_box.isEnabled()
    assert view.range_label.text().startswith("Showing steps 3–4 (")
    with qtbot.waitSignal(view.step_range_requested) as sig:
        view.select_steps(None)
    assert sig.args == [None]
    view.show_message("no ProfilerStep between 7 and 9")
    assert view.message.isVisibleTo(view) and view.range_label.text() == "Still showing steps 3–4."
    assert describe_range(None) == "the whole capture" and describe_range((2, 2)) == "step 2"


def test_natural_order():
    names = ["rank-10", "Rank-2", "rank-1", "b", "A"]
    assert sorted(names, key=natural_key) == ["A", "b", "rank-1", "Rank-2", "rank-10"]


def test_overview_page_bars_and_devices(qtbot, view, stats, tmp_path):
    page = view.overview
    assert view.current_page() == "overview"
    assert page.selected_host() == "rank-0"
    assert "rank 0 of 2 (gloo)" in page.device_label.text() and page.devices.rowCount() == 2
    page.bars.host_clicked.emit(1)
    assert page.selected_host() == "rank-1" and "rank 1 of 2" in page.device_label.text()
    assert page.bars.selected == 1
    qtbot.waitUntil(lambda: not page._fit_pending)
    image = view.grab().toImage()
    image.save(str(tmp_path / "overview.png"))
    # Each host's bar: rank-0 mostly non-compute (waiting in NCCL), rank-1 mostly compute.
    top = page.bars.mapTo(view, page.bars.rect().topLeft())
    left, width, _ = page.bars._geometry()
    colours = {}
    for row, host in enumerate(("rank-0", "rank-1")):
        y = top.y() + page.bars._top() + row * page.bars.PITCH + page.bars.BAR // 2
        xs = range(top.x() + left + 2, top.x() + left + width - 2, 4)
        pixels = [image.pixelColor(x, y).name() for x in xs]
        colours[host] = {title: pixels.count(colour) / len(pixels) for title, _, colour in BREAKDOWN}
    assert colours["rank-0"]["Non-compute"] > 0.6 and colours["rank-0"]["Compute"] < 0.05
    assert colours["rank-1"]["Compute"] > 0.5 and colours["rank-1"]["Non-compute"] < 0.05
    assert page.bars._tooltip(left + 5, page.bars._top() + page.bars.PITCH + 5).startswith("rank-1: compute 40.55 ms")
    # Sorting the table orders the bars; the selection follows its host.
    page.table.sortByColumn(4, Qt.DescendingOrder)  # idle
    assert [o.host for o in page.bars.rows] == ["rank-1", "rank-0"] and page.bars.selected == 0
    page.bars.host_clicked.emit(1)
    assert page.selected_host() == "rank-0"


def test_cpu_only_trace_says_so(qtbot):
    tl = build_timeline([("train", scan(DATA / "chrome_trace" / "train.pt.trace.json.gz"))])
    v = TraceStatsView()
    qtbot.addWidget(v)
    v.set_stats(trace_stats.compute(tl))
    assert v.kernels.model.rowCount() == 0 and v.operators.model.rowCount() == 49
    assert "no GPU devices" in v.overview.device_label.text()
    assert v.overview.model.data(v.overview.model.index(0, 1)) == "0"
    v.set_stats(None)
    assert "No statistics" in v.range_label.text() and not v.first_box.isEnabled()


def test_report_has_the_statistics_of_each_rank_and_all(tmp_path):
    from profscope.models.repository.locations import open_location
    from profscope.viewer.report import write_report

    repo, _ = open_location(str(GPU))
    written = write_report(repo, tmp_path, location=str(GPU))
    names = {p.name for p in written}
    assert {"statistics_gpu_rank-0.png", "statistics_gpu_rank-1.png", "statistics_gpu_All_hosts.png"} <= names
    index = (tmp_path / "index.html").read_text()
    assert "<h2>Statistics: gpu / All hosts</h2>" in index
    assert "ncclDevKernel_AllReduce_Sum_f32_RING_LL" in index and "ampere_sgemm_128x64_nn" in index
    assert "<td>rank-0</td>" in index and "<td>rank-1</td>" in index
    assert "<td>c10d::allreduce_</td>" in index and "GPU 1 NVIDIA A100-SXM4-80GB" in index
    assert Path(tmp_path / "statistics_gpu_All_hosts.png").stat().st_size > 10_000


def test_launch_parameters_read_once_and_within_a_budget(rank0, two_ranks, monkeypatch):
    whole = trace_stats.compute(rank0)
    known = whole.launch_by_kernel()
    assert known[("rank-0", whole.kernels.name[0])] == whole.launch[0]

    def no_reading(*_args):
        raise AssertionError("read again")

    monkeypatch.setattr(trace_stats, "launch_parameters", no_reading)
    steps = trace_stats.compute(rank0, (3, 4), known_launch=known)
    assert steps.launch_rows == len(steps.kernels) and steps.launch[0] == known[("rank-0", steps.kernels.name[0])]
    monkeypatch.setattr(trace_stats, "launch_parameters", lambda tl, event: {"grid": "[1, 1, 1]"})
    budgeted = trace_stats.compute(two_ranks, launch_budget_s=0.0)  # 42 kernels
    assert budgeted.launch_rows == 20 == len(budgeted.launch)  # LAUNCH_ROWS_ALWAYS, then the budget is spent


def test_operators_split_by_input_shape(qtbot):
    tl = build_timeline([("train", scan(DATA / "chrome_trace" / "train.pt.trace.json.gz"))])
    v = TraceStatsView()
    qtbot.addWidget(v)
    v.set_stats(trace_stats.compute(tl))
    page = v.operators
    assert page.by_shape.isEnabled() and page.table.isColumnHidden(OpModel.SHAPE)
    whole = page.model.rowCount()
    page.by_shape.setChecked(True)
    assert page.model.rowCount() > whole and not page.table.isColumnHidden(OpModel.SHAPE)
    shapes = shown(page.model, OpModel.SHAPE)
    assert any(s.startswith("[[") for s in shapes)
    # A trace without shapes turns the split off.
    jax = scan(DATA / "chrome_trace" / "jax" / "perfetto_trace.json.gz")
    v.set_stats(trace_stats.compute(build_timeline([("jax", jax)])))
    assert not page.by_shape.isEnabled() and not page.by_shape.isChecked()
