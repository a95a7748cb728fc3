"""The XProf Statistics tab's pages, fed with Profscope's own export of XProf's tools."""

import json

from conftest import DATA

from profscope.models.analysis.xprof import XPROF_TOOLS
from profscope.models.core.task import TaskState
from profscope.widgets.xprof.table_page import DataTableModel
from profscope.widgets.xprof.view import XprofStatsView

TFDATA = DATA / "xprof" / "tfdata.xplane.pb"


def tool_json(tool: str):
    return json.loads(XPROF_TOOLS[tool]([TFDATA], {}, TaskState()).output)


def test_data_table_model_sorts_and_filters(qtbot, qtmodeltester):
    with_idle, _ = tool_json("framework_op_stats")
    model = DataTableModel("operation", "type", shares=("host_total_self_time_percent",))
    model.set_table(with_idle)
    qtmodeltester.check(model)
    name = model.ids.index("operation")
    self_time = model.ids.index("total_self_time")
    assert model.rowCount() == len(with_idle["rows"])
    model.sort(self_time)
    times = [model.value(r, self_time) for r in range(model.rowCount())]
    assert times == sorted(times)
    model.set_filter(type_="Dataset")
    assert {model.data(model.index(r, name)) for r in range(model.rowCount())} == {
        "Iterator::Root::Prefetch::MapAndBatch", "Iterator::Root::Prefetch",
        "Iterator::Root::Prefetch::MapAndBatch::TensorSlice", "Iterator::Root"}


def test_view_shows_each_tool(qtbot):
    view = XprofStatsView()
    qtbot.addWidget(view)
    data = {t: tool_json(t) for t in ("overview_page", "input_pipeline_analyzer", "framework_op_stats",
                                      "kernel_stats")}
    view.set_data(data)
    assert view.current_page() == "overview_page"
    overview = view.pages["overview_page"]
    assert "Bottleneck: host" in overview.statement.text()
    assert "4.2 ms" in overview.averages.text()  # steptime_ms_average
    view.show_page("kernel_stats")
    assert view.pages["kernel_stats"].table.summary.text() == "No GPU kernels in this profile."
    ops = view.pages["framework_op_stats"]
    rows_without_idle = ops.table.model.rowCount()
    assert ops.table.count.text() == f"{rows_without_idle} of {rows_without_idle} ops"
    ops.idle.setChecked(True)
    assert ops.table.model.rowCount() == rows_without_idle + 1
    ops.table.filter.setText("prefetch")
    assert ops.table.count.text() == f"3 of {rows_without_idle + 1} ops"  # Prefetch and the two iterators under it
    view.set_data({"errors": ["framework_op_stats: a reason"]})
    assert view.message.text() == "framework_op_stats: a reason"


def test_gpu_pages_read_in_units_that_fit(qtbot):
    """Sub-millisecond GPU steps get a time axis in us (not "0.0 ms" three times), a kernel table's numbers keep
    no trailing zeros, and a roofline without FLOP counts says why it has no points."""
    gpu = DATA / "xprof" / "device" / "gpu_tf2.xplane.pb"
    view = XprofStatsView()
    qtbot.addWidget(view)
    view.set_data({t: json.loads(XPROF_TOOLS[t]([gpu], {}, TaskState()).output)
                   for t in ("overview_page", "kernel_stats", "roofline_model")})
    steps = view.pages["overview_page"].chart
    top_ms = max(sum(v) for v in steps.values)
    assert top_ms < 1
    assert steps.axis_labels() == ["0 us", f"{top_ms * 500:.3g} us", f"{top_ms * 1000:.3g} us"]
    table = view.pages["kernel_stats"].table.model
    occupancy = table.ids.index("occupancy_pct")
    assert sorted(table.data(table.index(r, occupancy)) for r in range(table.rowCount())) == ["100", "12.5", "25",
                                                                                             "50"]
    roofline = view.pages["roofline_model"]
    assert roofline.points.data.size == 0
    assert roofline.hover.text().startswith("No op to place: none of the 22 rows has a FLOP rate")


def test_tpu_overview_shows_the_tensorcore_breakdown(qtbot):
    """A TPU host's overview (XProf's TPU step table): the chart stacks TensorCore compute, input, output, idle and
    host transfer; the statement is the step table's input and output conclusions."""
    tpu = DATA / "xprof" / "device" / "tpu_ops.xplane.pb"
    view = XprofStatsView()
    qtbot.addWidget(view)
    view.set_data({t: json.loads(XPROF_TOOLS[t]([tpu], {}, TaskState()).output)
                   for t in ("overview_page", "input_pipeline_analyzer")})
    page = view.pages["overview_page"]
    assert "TensorCore compute (in ms)" in page.chart.names and "TensorCore idle (in ms)" in page.chart.names
    assert page.chart.labels[0] == "8"
    assert "MODERATELY input-bound" in page.statement.text() and "MODERATELY output-bound" in page.statement.text()
    assert "TensorCore compute" in page.averages.text()
