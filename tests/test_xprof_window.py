"""The XProf Statistics tab in the window, driven as a user does: the tree's
tool entries, the memory viewer's module picker (answered by the worker),
op_profile's other grouping."""

import json
import shutil

import pytest
from conftest import DATA

XPROF = DATA / "xprof"


def open_xplane(qtbot, window, tmp_path, fixture: str, host: str = "vm"):
    session = tmp_path / "plugins" / "profile" / "2026_11_27_15_14_03"
    session.mkdir(parents=True)
    shutil.copy(XPROF / f"{fixture}.xplane.pb", session / f"{host}.xplane.pb")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(tmp_path))  # scan
    with qtbot.waitSignal(window.runner.finished, timeout=60000):
        pass  # then the host's timeline, with XProf's tools
    host_item = window.tree.topLevelItem(0).child(0)
    return {host_item.child(i).text(0): host_item.child(i) for i in range(host_item.childCount())}


def click(qtbot, window, item):
    """A click on a tree entry (the tree's own itemClicked)."""
    window.tree.setCurrentItem(item)
    window.tree.itemClicked.emit(item, 0)


def test_jax_host_lists_every_xprof_page_and_memory_viewer_modules(qtbot, window, tmp_path):
    entries = open_xplane(qtbot, window, tmp_path, "jaxprog")
    assert list(entries)[-8:] == ["Overview", "Input pipeline", "Framework ops", "Kernels", "HLO ops",
                                  "Op profile", "Roofline", "Memory viewer"]
    view = window.xprof_view
    click(qtbot, window, entries["Memory viewer"])
    assert window.tabs.currentWidget() is view and view.current_page() == "memory_viewer"
    assert not view.list.item(view.tools.index("memory_viewer")).isHidden()
    page = view.memory_page
    box = page.module_box
    assert box.count() == 14
    assert box.currentText() == "jit_conv_block(18)"  # the first module, shown at load
    assert "<b>jit_conv_block</b>" in page.summary.text() and "peak 97.4 KiB" in page.summary.text()
    # Choosing another module: the worker loads it, the window stays responsive meanwhile.
    with qtbot.waitSignal(window.xprof_runner.finished, timeout=20000):
        box.setCurrentText("jit_train_step(16)")
        assert "loading" in page.summary.text()
    assert "<b>jit_train_step</b>" in page.summary.text() and "peak 243.3 KiB at step 15 of 20" in page.summary.text()
    assert page.table.model().index(0, 3).data() == "dot.1"
    # HLO pages of a CPU profile: XProf's answer (no device ops), said on the page.
    click(qtbot, window, entries["HLO ops"])
    assert view.current_page() == "hlo_stats" and not view.pages["hlo_stats"].message.isHidden()
    click(qtbot, window, entries["Roofline"])
    assert "host-only (CPU)" in view.pages["roofline_model"].message.text()
    click(qtbot, window, entries["Op profile"])
    ops = view.op_profile_page
    assert "Device: CPU_ONLY" == ops.device.text()
    with qtbot.waitSignal(window.xprof_runner.finished, timeout=20000):
        ops.grouping.setCurrentIndex(1)  # by category: asked of the worker
    assert "byCategory" in ops.doc and "byProgram" in ops.doc  # both groupings kept
    assert "host-only (CPU)" in ops.message.text()


def test_module_choices_cancel_each_other_and_another_host_drops_them(qtbot, window, tmp_path):
    open_xplane(qtbot, window, tmp_path, "jaxprog")
    page = window.xprof_view.memory_page
    with qtbot.waitSignal(window.xprof_runner.finished, timeout=20000) as shown:
        page.module_box.setCurrentText("jit_stage(0)")
        page.module_box.setCurrentText("jit_spread(26)")  # before the first came back: it is dropped
    assert shown.args[0][2] == ("module", "jit_spread(26)")
    assert page.module_box.currentText() == "jit_spread(26)" and "<b>jit_spread</b>" in page.summary.text()


@pytest.mark.parametrize("fixture", ["tfdata"])
def test_tf_host_without_xla_modules_has_no_memory_viewer(qtbot, window, tmp_path, fixture):
    entries = open_xplane(qtbot, window, tmp_path, fixture)
    assert "Memory viewer" not in entries and "HLO ops" in entries
    view = window.xprof_view
    assert view.list.item(view.tools.index("memory_viewer")).isHidden()
    click(qtbot, window, entries["HLO ops"])
    assert view.current_page() == "hlo_stats"


def shown_names(table, column):
    model = table.model()
    return [model.index(r, column).data() for r in range(model.rowCount())]


def test_framework_op_row_highlights_its_timeline_events_and_back(qtbot, window, tmp_path):
    entries = open_xplane(qtbot, window, tmp_path, "tfdata")
    click(qtbot, window, entries["Framework ops"])
    table = window.xprof_view.pages["framework_op_stats"].table
    column = table.model.NAME
    names = shown_names(table.view, column)
    relu = names.index("StatefulPartitionedCall/sequential_1/dense_1/Relu")
    table.view.selectRow(relu)  # as a click on the row does
    timeline_view = window.timeline_view
    tl = timeline_view.timeline
    highlighted = timeline_view.canvas.highlight
    # Its 4 events: TensorFlow names them "op:type".
    assert {tl.names[i] for i in highlighted} == {
        "StatefulPartitionedCall/sequential_1/dense_1/Relu:_MklNativeFusedMatMul"}
    assert len(highlighted) == 4 and timeline_view.match_label.text().startswith("4 × ")
    assert "4 event(s) highlighted in the Timeline" in window.status.text()
    # A tf.data iterator: only its own events, not those of the iterators below it ("…::MapAndBatch::TensorSlice").
    table.view.selectRow(names.index("Iterator::Root::Prefetch::MapAndBatch"))
    assert {tl.names[i] for i in timeline_view.canvas.highlight} == {"Iterator::Root::Prefetch::MapAndBatch"}
    # The reverse: an event selected in the Timeline selects its op's row in the page shown.
    event = next(i for i in range(len(tl)) if tl.names[i].startswith("StatefulPartitionedCall/gradient_tape/")
                 and tl.names[i].endswith(":_MklMatMul"))
    before = timeline_view.canvas.highlight
    timeline_view.canvas.select_event(event)
    current = table.view.currentIndex()
    assert current.siblingAtColumn(column).data() == tl.names[event].rsplit(":", 1)[0]
    assert timeline_view.canvas.highlight is before  # the Timeline's highlight stays (e.g. a search's)


def test_memory_viewer_instruction_highlights_its_timeline_events(qtbot, window, tmp_path):
    entries = open_xplane(qtbot, window, tmp_path, "jaxprog")
    click(qtbot, window, entries["Memory viewer"])
    page = window.xprof_view.memory_page
    instructions = shown_names(page.table, 3)
    assert instructions[0] == "conv_general_dilated.1"
    page.table.selectRow(0)
    tl = window.timeline_view.timeline
    assert {tl.names[i] for i in window.timeline_view.canvas.highlight} == {"conv_general_dilated.1"}
    assert len(window.timeline_view.canvas.highlight) == 4  # its thunk ran 4 times, "end: …" events left out
    page.table.selectRow(1)  # a parameter: no event runs it
    assert window.status.text() == "images.1: the Timeline has no events of that name."
    window.timeline_view.canvas.select_event(int(window.timeline_view.canvas.highlight[2]))
    assert page.table.currentIndex().row() == 0


def test_tpu_host_op_profile_and_roofline(qtbot, window, tmp_path):
    """A TPU host whose XLA ops carry their metadata: the op profile's tree by program and, asked of the worker,
    by category; the roofline's HBM roof with the ops and the program."""
    entries = open_xplane(qtbot, window, tmp_path, "device/tpu_ops")
    view = window.xprof_view
    click(qtbot, window, entries["Op profile"])
    ops = view.op_profile_page
    assert ops.device.text() == "Device: TPU" and ops.message.isHidden()
    program = ops.tree.topLevelItem(0)
    assert (program.text(0), program.text(1)) == ("main", "73.8 %")  # its ops' time; IDLE the rest
    assert program.child(0).text(0) == "convolution" and program.child(0).child(0).text(0) == "convolution.2"
    with qtbot.waitSignal(window.xprof_runner.finished, timeout=20000):
        ops.grouping.setCurrentIndex(1)
    assert [ops.tree.topLevelItem(i).text(0) for i in range(3)] == ["IDLE", "convolution", "output fusion"]
    click(qtbot, window, entries["Roofline"])
    roofline = view.pages["roofline_model"]
    assert roofline.roof_count() == 1 and len(roofline.points.points()) == 7 and len(roofline.program.points()) == 1


def all_hosts_entries(qtbot, window, folder) -> dict:
    """Opens a log dir of one session of several hosts: its All hosts entries of the session tree, by name."""
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(folder))
    with qtbot.waitSignal(window.runner.finished, timeout=60000):
        pass
    all_hosts = window.tree.topLevelItem(0).child(2)
    return {all_hosts.child(i).text(0): all_hosts.child(i) for i in range(all_hosts.childCount())}


def test_two_tpu_hosts_op_profile_and_roofline_of_all_hosts(qtbot, window, tmp_path):
    """All hosts of two TPU hosts (the second's clock 150 us later): one op profile and one roofline of both
    hosts' TensorCores."""
    from test_xprof_device import shifted

    session = tmp_path / "plugins" / "profile" / "2026_11_27_19_00_00"
    session.mkdir(parents=True)
    for k, shift_us in enumerate((0, 150)):
        (session / f"host{k}.xplane.pb").write_bytes(shifted(XPROF / "device" / "tpu_ops.xplane.pb", shift_us))
    entries = all_hosts_entries(qtbot, window, tmp_path)
    with qtbot.waitSignal(window.runner.finished, timeout=60000):
        click(qtbot, window, entries["Op profile"])
    ops = window.xprof_view.op_profile_page
    program = ops.tree.topLevelItem(0)
    assert (program.text(0), program.text(1)) == ("main", "73.8 %")  # both hosts' ops over both hosts' time
    assert ops.doc["byProgram"]["metrics"]["rawTime"] == 2 * 1_329_507_000  # both hosts' TensorCores' time
    click(qtbot, window, entries["Roofline"])
    roofline = window.xprof_view.pages["roofline_model"]
    assert len(roofline.points.points()) == 7 and len(roofline.program.points()) == 1


def test_all_hosts_shows_xprofs_combined_tools(qtbot, window, tmp_path):
    session = tmp_path / "plugins" / "profile" / "2026_11_22_09_00_00"
    session.mkdir(parents=True)
    shutil.copy(XPROF / "tfdata.xplane.pb", session / "a.xplane.pb")
    shutil.copy(XPROF / "keras.xplane.pb", session / "b.xplane.pb")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(tmp_path))
    with qtbot.waitSignal(window.runner.finished, timeout=60000):
        pass
    top = window.tree.topLevelItem(0)
    all_hosts = top.child(2)
    assert all_hosts.text(0) == "All hosts"
    entries = {all_hosts.child(i).text(0): all_hosts.child(i) for i in range(all_hosts.childCount())}
    assert list(entries) == ["Timeline", "Overview", "Input pipeline", "Framework ops", "Kernels", "HLO ops",
                             "Op profile", "Roofline"]
    with qtbot.waitSignal(window.runner.finished, timeout=60000):
        click(qtbot, window, entries["Overview"])
    view = window.xprof_view
    assert window.loading.xprof_of == ("2026_11_22_09_00_00", "")
    assert window.tabs.currentWidget() is view and view.current_page() == "overview_page"
    # The two hosts' ops in one table (55 and 218 ops; XProf adds up the hosts' rows).
    click(qtbot, window, entries["Framework ops"])
    table = view.pages["framework_op_stats"].table
    names = shown_names(table.view, table.model.NAME)
    assert len(names) == 273 and {"Add_1/ReadVariableOp", "Iterator::Root::Prefetch::MapAndBatch"} <= set(names)
    # A row of the combined tables highlights its events in the combined timeline (both hosts').
    table.view.selectRow(names.index("Iterator::Root::Prefetch::MapAndBatch"))
    tl = window.timeline_view.timeline
    assert {tl.names[i] for i in window.timeline_view.canvas.highlight} == {"Iterator::Root::Prefetch::MapAndBatch"}
    assert "Iterator::Root::Prefetch::MapAndBatch: " in window.status.text()


def test_report_renders_every_xprof_page_of_each_host_and_all_hosts(qtbot, tmp_path):
    from PySide6.QtGui import QColor, QImage

    from profscope.models.repository.locations import open_repository
    from profscope.viewer.report import write_report

    session = tmp_path / "logs" / "plugins" / "profile" / "2026_11_22_09_00_00"
    session.mkdir(parents=True)
    shutil.copy(XPROF / "jaxprog.xplane.pb", session / "a.xplane.pb")
    shutil.copy(XPROF / "tfdata.xplane.pb", session / "b.xplane.pb")
    out = tmp_path / "report"
    written = [p.name for p in write_report(open_repository(tmp_path / "logs"), out)]
    pages = ["overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "hlo_stats",
             "op_profile", "roofline_model"]
    for host in ("a", "b", "all_hosts"):
        for tool in pages + (["memory_viewer"] if host == "a" else []):  # b: no XLA modules
            assert f"xprof_2026_11_22_09_00_00_{host}_{tool}.png" in written
    assert "xprof_2026_11_22_09_00_00_b_memory_viewer.png" not in written
    index = (out / "index.html").read_text()
    assert "<h2>XProf: 2026_11_22_09_00_00 / All hosts</h2>" in index
    # The memory viewer shows the module with the largest peak heap; every module's peak is listed.
    assert "Memory viewer: 14 XLA module(s); shown: jit_spread(26), the largest peak heap." in index
    assert "<tr><td>jit_train_step(16)</td><td>0.238 MiB</td></tr>" in index
    image = QImage(str(out / "xprof_2026_11_22_09_00_00_b_overview_page.png"))
    colors = [QColor(image.pixel(x, 250)) for x in range(0, 1400, 7)]
    assert image.width() == 1400 and any(c.red() > 200 and c.green() < 100 for c in colors)  # input time, in red


def test_one_load_decodes_the_xplane_once_and_lets_it_go(qtbot, window, tmp_path, monkeypatch):
    """A GPU host's timeline and its XProf pages (six of which read the device planes) come from one decode of
    the file, and nothing holds that decoded file once the pages are shown."""
    import gc
    import weakref

    from profscope.models.formats.xspace import xplane

    decoded = []
    parse = xplane.parse_xspace

    def counted(buf, path, host, task, *keep):
        space = parse(buf, path, host, task, *keep)
        decoded.append((path.name, weakref.ref(space)))
        return space

    monkeypatch.setattr(xplane, "parse_xspace", counted)
    entries = open_xplane(qtbot, window, tmp_path, "device/gpu_tf")
    assert [name for name, _ in decoded] == ["vm.xplane.pb"]
    view = window.xprof_view
    assert {"Overview", "Kernels", "HLO ops", "Op profile", "Roofline"} <= set(entries)
    assert view.pages["kernel_stats"].table.model.rowCount() > 0  # the GPU's kernels, from that decode
    gc.collect()
    assert decoded[0][1]() is None


def test_kernel_stats_of_a_cpu_xplane_does_not_decode_it(tmp_path, monkeypatch):
    """kernel_stats looks for GPU planes by their names: a CPU profile's (empty) table without decoding the file;
    a GPU profile's kernels as before."""
    from profscope.models.analysis.xprof.kernel_stats import kernel_stats
    from profscope.models.core.task import TaskState
    from profscope.models.formats.xspace import xplane

    decoded = []
    parse = xplane.parse_xspace
    monkeypatch.setattr(xplane, "parse_xspace", lambda buf, path, *a: decoded.append(path.name) or parse(buf, path, *a))
    cpu = json.loads(kernel_stats([XPROF / "small.xplane.pb"], {}, TaskState()).output)
    assert decoded == [] and cpu["rows"] == [] and cpu["cols"][1]["label"] == "Kernel Name"
    gpu = json.loads(kernel_stats([XPROF / "device" / "gpu_tf.xplane.pb"], {}, TaskState()).output)
    assert decoded == ["gpu_tf.xplane.pb"] and len(gpu["rows"]) > 0


def test_gpu_running_xla_ops_shows_every_xprof_page(qtbot, window, tmp_path):
    """A JAX GPU host (XLA ops): every XProf page has XProf's answer (no refusal), the op profile its program
    tree with FLOP utilisation, and an HLO instruction of the roofline's ops highlights its kernel events."""
    entries = open_xplane(qtbot, window, tmp_path, "device/gpu_jax")
    view = window.xprof_view
    assert [t for t in view.tools if not view.list.item(view.tools.index(t)).isHidden()] == [
        "overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "hlo_stats",
        "op_profile", "roofline_model", "memory_viewer"]
    click(qtbot, window, entries["Framework ops"])
    table = view.pages["framework_op_stats"].table
    name = table.model.column("operation")
    assert table.model.index(0, name).data() == "jit(spread)/mul"
    rate = table.model.column("model_flop_rate")
    assert table.model.index(0, rate).data() == "149.622"  # GFLOP/s, from XLA's cost analysis
    click(qtbot, window, entries["Op profile"])
    tree = view.op_profile_page.tree
    assert tree.topLevelItem(0).text(0) == "jit_train_step(16)" and tree.topLevelItem(0).text(1) == "26.7 %"
    click(qtbot, window, entries["Roofline"])
    assert view.pages["roofline_model"].message.isHidden() and len(view.pages["roofline_model"].points.points()) == 18


def test_tensorflow_with_xla_clusters_on_a_gpu_shows_both_kinds_of_ops(qtbot, window, tmp_path):
    """A TF GPU host whose XLA clusters' kernels run beside TF kernels (once refused): the HLO ops page lists
    the clusters' instructions and the TF kernels, the op profile the clusters' programs."""
    entries = open_xplane(qtbot, window, tmp_path, "device/gpu_tf_xla")
    view = window.xprof_view
    click(qtbot, window, entries["HLO ops"])
    page = view.pages["hlo_stats"]
    assert page.message.isHidden()
    names = [page.model.index(r, page.model.column("hlo_op_name")).data() for r in range(page.model.rowCount())]
    assert names[0] == "MatMul.2" and "Sigmoid/void Eigen::internal::EigenMetaKernel<sigmoid>" in names
    click(qtbot, window, entries["Op profile"])
    tree = view.op_profile_page.tree
    programs = {tree.topLevelItem(i).text(0) for i in range(tree.topLevelItemCount())}
    assert {"a_inference_dense_24__.1(0)", "a_inference_norm_36__.2(1)"} <= programs


def test_tpu_host_beside_gpu_of_xla_ops_all_hosts_op_profile_and_roofline(qtbot, window, tmp_path):
    """All hosts of a TPU host beside a GPU host of XLA ops: one op profile of both (the TensorCores' program
    beside the GPU's modules), one roofline of both kinds of ops."""
    session = tmp_path / "plugins" / "profile" / "2026_11_27_21_30_00"
    session.mkdir(parents=True)
    shutil.copy(XPROF / "device" / "tpu_launch.xplane.pb", session / "host0.xplane.pb")
    shutil.copy(XPROF / "device" / "gpu_jax.xplane.pb", session / "host1.xplane.pb")
    entries = all_hosts_entries(qtbot, window, tmp_path)
    with qtbot.waitSignal(window.runner.finished, timeout=60000):
        click(qtbot, window, entries["Op profile"])
    ops = window.xprof_view.op_profile_page
    assert ops.device.text() == "Device: TPU" and ops.message.isHidden()
    names = [ops.tree.topLevelItem(i).text(0) for i in range(ops.tree.topLevelItemCount())]
    assert names[:3] == ["main", "IDLE", "jit_train_step(16)"] and "jit_conv_block(18)" in names
    click(qtbot, window, entries["Roofline"])
    roofline = window.xprof_view.pages["roofline_model"]
    assert len(roofline.points.points()) == 25  # both kinds of ops with FLOPs and bytes (7 and 18)
