"""The Statistics tab's pages of XProf's HLO tools: what they show for the
fixtures' results (and XProf's own JSON of them)."""

import json

from conftest import DATA
from PySide6.QtCore import Qt

from profscope.models.analysis.xprof.hlo_source import module_names
from profscope.models.analysis.xprof.memory_viewer import memory_viewer_result
from profscope.models.core.task import TaskState
from profscope.widgets.xprof.memory_viewer_page import MemoryViewerPage

XPROF = DATA / "xprof"
JAXPROG = [XPROF / "jaxprog.xplane.pb"]


def cell(view, row, column):
    return view.model().index(row, column).data()


def test_memory_viewer_page(qtbot):
    page = MemoryViewerPage()
    qtbot.addWidget(page)
    page.set_modules(module_names(JAXPROG), "jit_conv_block(18)")
    assert page.module_box.currentText() == "jit_conv_block(18)"
    with qtbot.waitSignal(page.module_selected) as chosen:
        page.module_box.setCurrentText("jit_train_step(16)")
    assert chosen.args == ["jit_train_step(16)"]
    page.set_data(memory_viewer_result(JAXPROG, {"module_name": "jit_train_step(16)"}, TaskState()))
    assert "jit_train_step" in page.summary.text() and "peak 243.3 KiB at step 15 of 20" in page.summary.text()
    table = page.table
    assert [cell(table, 0, c) for c in range(6)] == [
        "64.0 KiB",
        "f32[128,128]{1,0}",
        "jit(train_step)/transpose(jvp())/transpose",
        "dot.1",
        "Output",
        "dot",
    ]
    assert cell(table, 0, 6) == "whole program"
    last = table.model().rowCount() - 1
    assert (cell(table, last, 3), cell(table, last, 6)) == ("ynn_fusion", "steps 15–17")
    # A click on a temporary buffer draws its lifetime on the chart.
    table.selectRow(last)
    assert page.lifetime.isVisible() and page.lifetime.getRegion() == (15, 17)
    assert page.lifetime_label.text() == "ynn_fusion: allocated at step 15, freed at step 17"
    low, high = page.plot.getPlotItem().viewRange()[0]
    assert low <= 15 and high >= 17 and high - low < 20  # brought into view with its surroundings
    # Sorting by op code.
    table.sortByColumn(5, Qt.AscendingOrder)
    codes = [cell(table, r, 5) for r in range(table.model().rowCount())]
    assert codes == ["", "dot", "dot", "fusion", "fusion", "parameter", "parameter"]


def test_memory_viewer_page_takes_xprofs_json(qtbot):
    page = MemoryViewerPage()
    qtbot.addWidget(page)
    doc = json.loads((XPROF / "tools" / "jaxprog.memory_viewer.jit_conv_block(18).json").read_text())
    page.set_data(doc)
    assert "peak 97.4 KiB at step 0 of 4" in page.summary.text()  # XProf leaves out a position 0
    assert cell(page.table, 0, 3) == "conv_general_dilated.1"
    page.table.selectRow(0)
    assert page.lifetime.getRegion() == (0, 1)


def test_hlo_page(qtbot):
    from xprof_page_samples import fixture_output, hlo_stats_sample

    from profscope.widgets.xprof.hlo_page import NO_OPS, HloPage

    page = HloPage()
    qtbot.addWidget(page)
    page.set_data(fixture_output("jaxprog.hlo_stats.json"))
    assert not page.message.isHidden() and page.message.text() == NO_OPS and page.view.isHidden()
    page.set_data(json.dumps(hlo_stats_sample()))
    assert page.message.isHidden() and not page.view.isHidden()
    name = page.model.column("hlo_op_name")
    assert [cell(page.view, r, name) for r in range(3)] == ["conv.1", "fusion.3", "copy.2"]  # by self time
    assert page.count.text() == "3 of 3 ops"
    page.filter.setText("relu")  # a framework op's name
    qtbot.waitUntil(lambda: page.count.text() == "1 of 3 ops")
    assert cell(page.view, 0, name) == "fusion.3"
    page.filter.setText("FORMAT")  # a category, any case
    assert [cell(page.view, r, name) for r in range(page.model.rowCount())] == ["copy.2"]
    page.filter.clear()
    page.types.setCurrentText("convolution")
    assert page.count.text() == "1 of 3 ops" and cell(page.view, 0, name) == "conv.1"
    page.types.setCurrentText("All")
    page.view.sortByColumn(page.model.column("occurrences"), Qt.DescendingOrder)
    assert cell(page.view, 0, name) == "copy.2"
    assert [page.types.itemText(i) for i in range(page.types.count())] == [
        "All", "convolution", "data formatting", "loop fusion"]


def test_op_profile_page(qtbot):
    from xprof_page_samples import fixture_output

    from profscope.widgets.xprof.op_profile_page import OpProfilePage

    page = OpProfilePage()
    qtbot.addWidget(page)
    page.set_data(fixture_output("jaxprog.op_profile.json"))
    assert "host-only (CPU)" in page.message.text() and page.tree.isHidden()
    assert page.device.text() == "Device: CPU_ONLY"
    # XProf's own tree of a GPU running XLA ops: time shares of the whole, FLOP utilisation as XProf's front end
    # shows it (the stored figure over the time share), HBM bandwidth utilisation.
    page.set_data((XPROF / "device" / "tools" / "gpu_jax.op_profile.json").read_text())
    top = [page.tree.topLevelItem(i) for i in range(page.tree.topLevelItemCount())]
    assert [t.text(0) for t in top] == ["jit_train_step(16)", "jit_spread(26)", "jit_running_stats(22)", "IDLE",
                                        "jit_conv_block(18)"]
    conv = top[4].child(2)
    assert [conv.text(c) for c in range(4)] == ["convolution", "0.7 %", "0.8 %", "10.0 %"]
    assert [conv.child(0).text(c) for c in range(2)] == ["conv_general_dilated.1", "0.7 %"]
    page.idle.setChecked(False)  # the tree without idle time
    assert page.tree.topLevelItemCount() == 4 and page.tree.topLevelItem(0).text(1) == "31.3 %"
    with qtbot.waitSignal(page.group_by_requested) as asked:
        page.grouping.setCurrentIndex(1)
    assert asked.args == ["category"]
    page.set_data(fixture_output("jaxprog.op_profile.by_category.json"))
    assert page.grouping.currentText() == "By category" and "host-only" in page.message.text()


def test_roofline_page(qtbot):
    from xprof_page_samples import fixture_output, roofline_sample

    from profscope.widgets.xprof.roofline_page import NO_ROOFS, RooflinePage

    page = RooflinePage()
    qtbot.addWidget(page)
    page.set_data(fixture_output("jaxprog.roofline_model.json"))
    assert page.message.text() == NO_ROOFS and page.plot.isHidden()
    page.set_data(roofline_sample())
    assert page.message.isHidden() and page.roof_count() == 1
    legend = page.plot.getPlotItem().legend.items[0][1].text
    assert legend == "HBM roof (ridge 12.1 FLOP/B)"  # 19500 GFLOP/s over 1500 GiB/s
    points = page.points.points()
    assert len(points) == 2 and points[0].size() > points[1].size()  # sized by self time
    page._hovered(page.points, [points[1]], None)
    assert page.hover.text() == "fusion.3: 0.5 FLOP/byte, 300 GFLOP/s, 40.0 µs self time"


def device_output(name: str):
    return json.loads((XPROF / "device" / "tools" / name).read_text())


def test_roofline_page_of_tpu_and_gpu_roofs(qtbot):
    """A TPU with CMEM: the HBM and CMEM read/write roofs; the whole profile's ops of the first half (with
    infeed/outfeed) as points, the per-step and average program rows left out, the program a star. A GPU's
    VMEM write roof is its shared memory."""
    from profscope.widgets.xprof.roofline_page import RooflinePage

    page = RooflinePage()
    qtbot.addWidget(page)
    page.set_data(device_output("tpu_mem.roofline_model.json"))
    legend = [label.text for _, label in page.plot.getPlotItem().legend.items]
    assert legend == ["HBM roof (ridge 241 FLOP/B)", "CMEM read roof (ridge 131 FLOP/B)",
                      "CMEM write roof (ridge 141 FLOP/B)"]
    names = sorted(p.data()[0] for p in page.points.points())
    assert names == ["add.5", "convolution.3", "fusion.1", "fusion.1", "fusion.10", "fusion.11", "region_0.6",
                     "while.4"]  # infeed and outfeed: no FLOPs
    (program,) = page.program.points()
    page._hovered(page.program, [program], None)
    assert page.hover.text().startswith("Program (whole profile): 26.2 FLOP/byte, 265 GFLOP/s")
    page.set_data(device_output("gpu_tf.roofline_model.json"))
    legend = [label.text for _, label in page.plot.getPlotItem().legend.items]
    assert legend == ["HBM roof (ridge 139 FLOP/B)", "SHM/L1 roof (ridge 4 FLOP/B)"]


def test_roofline_page_with_or_without_infeed_outfeed(qtbot):
    """The check box picks the table's rows with infeed/outfeed or without them (tpu_ops' feeds have FLOPs)."""
    from profscope.widgets.xprof.roofline_page import RooflinePage

    page = RooflinePage()
    qtbot.addWidget(page)
    page.show()
    page.set_data(device_output("tpu_ops.roofline_model.json"))
    assert page.feeds.isVisible() and page.feeds.isChecked()
    assert {"infeed.1", "outfeed.7"} <= {p.data()[0] for p in page.points.points()}
    page.feeds.setChecked(False)
    names = {p.data()[0] for p in page.points.points()}
    assert len(names) == 5 and not {"infeed.1", "outfeed.7"} & names


def test_op_profile_page_of_tpu_programs(qtbot):
    from profscope.widgets.xprof.op_profile_page import OpProfilePage

    page = OpProfilePage()
    qtbot.addWidget(page)
    page.set_data(device_output("tpu_mem.op_profile.json"))
    tops = [page.tree.topLevelItem(i).text(0) for i in range(page.tree.topLevelItemCount())]
    assert tops == ["jit_stage(14)", "IDLE", "jit_stage(12)"] and page.device.text() == "Device: TPU"
    program = page.tree.topLevelItem(0)
    assert [program.child(i).text(0) for i in range(program.childCount())] == [
        "output fusion", "convolution", "loop fusion", "infeed", "outfeed"]
    assert (program.text(1), program.text(3)) == ("58.1 %", "1.2 %")  # time share, bandwidth utilisation
    loops = program.child(2)  # XLA's duplicates: one row holding both
    assert loops.child(1).text(0) == "fusion.10 and its duplicate(s)" and loops.child(1).childCount() == 2
