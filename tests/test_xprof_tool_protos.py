"""TensorFlow 2.2-2.3 sessions that hold XProf's per-tool protobufs
(tests/data/xprof/v1/<host>/, made by tests/data/producers/xprof_v1_tools.py):
each tool's export equals tensorboard-plugin-profile 2.4.0's JSON of the same
file (tests/data/xprof/v1/tools/), numbers within 1e-6 relative."""

import json
import shutil

import pytest
from conftest import DATA
from test_xprof_tools import assert_same, export

from profscope.models.repository.locations import open_repository
from profscope.protos import input_pipeline_pb2
from profscope.viewer.cli import main

V1 = DATA / "xprof" / "v1"
HOSTS = ("tfdata", "gpu_tf")
TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats")


def plugin_answer(host: str, tool: str):
    return json.loads((V1 / "tools" / f"{host}.{tool}.json").read_bytes())


@pytest.mark.parametrize("host", HOSTS)
@pytest.mark.parametrize("tool", TOOLS)
def test_export_equals_the_plugins(tmp_path, host, tool):
    assert_same(export(tmp_path, V1 / host, tool), plugin_answer(host, tool))


def test_a_lone_file_is_exported(tmp_path):
    mine = export(tmp_path, V1 / "tfdata" / "tfdata.overview_page.pb", "overview_page")
    assert_same(mine, plugin_answer("tfdata", "overview_page"))
    # What a user reads: the input-bound verdict and the step-time average.
    assert mine[3]["p"]["bottleneck"] == "host"
    assert mine[1]["p"]["steptime_ms_average"] == "4.2"


def test_sessions_list_the_tools():
    infos = {i.name: i for i in open_repository(V1).enum_sessions()}
    assert sorted(infos) == ["gpu_tf", "tfdata"]
    for info in infos.values():
        assert info.hosts == (info.name,)
        assert info.tools == TOOLS


def test_one_file_offers_its_tool_only(tmp_path):
    shutil.copy(V1 / "tfdata" / "tfdata.input_pipeline.pb", tmp_path / "vm.input_pipeline.pb")
    (info,) = open_repository(tmp_path).enum_sessions()
    assert info.tools == ("input_pipeline_analyzer",)
    assert main(["export", str(tmp_path), "--tool", "overview_page", "-o", str(tmp_path / "o.json")]) == 1


def test_an_xplane_of_the_same_host_serves_the_tools(tmp_path):
    shutil.copy(V1 / "gpu_tf" / "gpu_tf.overview_page.pb", tmp_path / "vm.overview_page.pb")
    shutil.copy(DATA / "xprof" / "tfdata.xplane.pb", tmp_path / "vm.xplane.pb")
    mine = export(tmp_path, tmp_path, "overview_page")
    assert mine[2]["p"]["device_type"] == "CPU"  # the xplane's (the proto says GPU)


def test_hosts_are_shown_one_at_a_time(tmp_path, capsys):
    for host in HOSTS:
        shutil.copy(V1 / host / f"{host}.kernel_stats.pb", tmp_path / f"{host}.kernel_stats.pb")
    assert main(["export", str(tmp_path), "--tool", "kernel_stats", "-o", str(tmp_path / "o.json")]) == 1
    assert "choose one of: gpu_tf, tfdata" in capsys.readouterr().err
    mine = export(tmp_path, tmp_path, "kernel_stats", "--host", "gpu_tf")
    assert_same(mine, plugin_answer("gpu_tf", "kernel_stats"))


def test_a_corrupt_file_is_a_clear_error(tmp_path, capsys):
    data = (V1 / "tfdata" / "tfdata.overview_page.pb").read_bytes()
    bad = tmp_path / "vm.overview_page.pb"
    bad.write_bytes(data[: len(data) // 2])  # cut short: its first field still looks right
    assert main(["export", str(bad), "--tool", "overview_page", "-o", str(tmp_path / "o.json")]) == 1
    err = capsys.readouterr().err
    assert "vm.overview_page.pb: not a readable OverviewPage" in err and "Traceback" not in err
    assert not (tmp_path / "o.json").exists()


def test_a_damaged_step_inside_is_a_clear_error(tmp_path, capsys):
    ipa = input_pipeline_pb2.InputPipelineAnalysisResult.FromString(
        (V1 / "tfdata" / "tfdata.input_pipeline.pb").read_bytes())
    ipa.step_details[0].value = ipa.step_details[0].value[:5]  # the file parses; the step packed in it does not
    bad = tmp_path / "vm.input_pipeline.pb"
    bad.write_bytes(ipa.SerializeToString())
    assert main(["export", str(bad), "--tool", "input_pipeline_analyzer", "-o", str(tmp_path / "o.json")]) == 1
    err = capsys.readouterr().err
    assert "not a readable PerGenericStepDetails" in err and "Traceback" not in err


def test_another_file_of_the_name_is_not_a_profile(tmp_path, capsys):
    other = tmp_path / "vm.tensorflow_stats.pb"
    other.write_bytes(b"\x0a\x03abc")  # field 1 of TfStatsDatabase is reserved
    assert main(["sessions", str(other)]) == 1
    assert "not XProf's TfStatsDatabase" in capsys.readouterr().err


def test_the_window_shows_the_pages_without_a_timeline(qtbot, window, tmp_path):
    shutil.copytree(V1 / "tfdata", tmp_path / "tfdata")
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(tmp_path))  # scan
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        pass  # then the host's XProf pages: it has no timeline
    view = window.xprof_view
    assert window.tabs.currentWidget() is view and view.current_page() == "overview_page"
    assert "tfdata / tfdata: XProf's tools (no timeline in this session)." == window.status.text()
    host = window.tree.topLevelItem(0).child(0)
    entries = {host.child(i).text(0): host.child(i) for i in range(host.childCount())}
    assert list(entries) == ["Overview", "Input pipeline", "Framework ops", "Kernels"]
    window.tree.setCurrentItem(entries["Input pipeline"])
    window.tree.itemClicked.emit(entries["Input pipeline"], 0)  # loaded: shown at once
    assert view.current_page() == "input_pipeline_analyzer" and not window.runner.busy
    page = view.pages["input_pipeline_analyzer"]
    assert "HIGHLY input-bound" in page.statement.text()
    table, _column = page.ops.op_tables()[0]
    assert table.model().index(0, 0).data() == "Iterator::Root::Prefetch::MapAndBatch"
    window.grab().save(str(tmp_path / "window.png"))
