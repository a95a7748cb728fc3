"""XProf's OpStats tools from xplanes (overview_page, input_pipeline_analyzer,
framework_op_stats, kernel_stats)
against XProf 2.24.2's own converter output (tests/data/xprof/tools/, made by
tests/data/producers/xprof_tools.py): the same tables, columns, rows in
XProf's order and properties, numbers within 1e-6 relative."""

import gzip
import json
import shutil

import pytest
from conftest import DATA

from profscope.models.repository.locations import open_repository
from profscope.protos import xplane_pb2
from profscope.viewer.cli import main

XPROF = DATA / "xprof"
FIXTURES = ("small", "keras", "jax", "tfdata")
TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats")


def xprof_answer(name: str, tool: str):
    path = XPROF / "tools" / f"{name}.{tool}.json"
    if not path.exists():
        return json.loads(gzip.decompress((XPROF / "tools" / f"{name}.{tool}.json.gz").read_bytes()))
    return json.loads(path.read_bytes())


def assert_same(mine, theirs, where="") -> None:
    """Equal JSON, numbers within 1e-6 relative."""
    if isinstance(theirs, dict):
        assert isinstance(mine, dict) and sorted(mine) == sorted(theirs), where
        for key in theirs:
            assert_same(mine[key], theirs[key], f"{where}/{key}")
    elif isinstance(theirs, list):
        assert isinstance(mine, list) and len(mine) == len(theirs), f"{where}: {len(mine)} vs {len(theirs)} items"
        for i, (a, b) in enumerate(zip(mine, theirs)):
            assert_same(a, b, f"{where}[{i}]")
    elif isinstance(theirs, float) and not isinstance(theirs, bool):
        assert mine == pytest.approx(theirs, rel=1e-6, abs=1e-12), where
    else:
        assert mine == theirs, where


def export(tmp_path, path, tool, *more):
    out = tmp_path / f"{tool}.json"
    assert main(["export", str(path), "--tool", tool, "-o", str(out), *more]) == 0
    return json.loads(out.read_bytes())


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("tool", TOOLS)
def test_export_equals_xprofs(tmp_path, name, tool):
    assert_same(export(tmp_path, XPROF / f"{name}.xplane.pb", tool), xprof_answer(name, tool))


def test_framework_op_stats_rows(tmp_path):
    with_idle, without_idle = export(tmp_path, XPROF / "small.xplane.pb", "framework_op_stats")
    first = [c["v"] for c in with_idle["rows"][0]["c"]]
    assert first[:4] == [1.0, "Host", "IDLE", "IDLE"]
    top = [c["v"] for c in without_idle["rows"][0]["c"]]
    assert top[1:5] == ["Host", "_MklMatMul", "gradient_tape/MatMul/MatMul", 6.0]
    assert without_idle["p"] == {"architecture_type": "Unknown", "task_type": "Training"}
    # Cumulative host shares climb to 1 without IDLE.
    assert [c["v"] for c in without_idle["rows"][-1]["c"]][12] == pytest.approx(1.0)


def test_tf_data_ops_are_host_ops(tmp_path):
    _, ops = export(tmp_path, XPROF / "tfdata.xplane.pb", "framework_op_stats")
    types = {r["c"][2]["v"] for r in ops["rows"]}
    assert "Dataset" in types  # Iterator::... events


@pytest.mark.parametrize("tool", TOOLS)
def test_without_host_plane(tmp_path, tool):
    """No host threads: no host ops and no steps; XProf's messages say so."""
    space = xplane_pb2.XSpace.FromString((XPROF / "small.xplane.pb").read_bytes())
    keep = [p for p in space.planes if p.name != "/host:CPU"]
    del space.planes[:]
    space.planes.extend(keep)
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(space.SerializeToString())
    assert_same(export(tmp_path, path, tool), xprof_answer("small_nohost", tool))


def test_no_steps_message(tmp_path):
    space = xplane_pb2.XSpace.FromString((XPROF / "small.xplane.pb").read_bytes())
    keep = [p for p in space.planes if p.name != "/host:CPU"]
    del space.planes[:]
    space.planes.extend(keep)
    path = tmp_path / "vm.xplane.pb"
    path.write_bytes(space.SerializeToString())
    page = export(tmp_path, path, "overview_page")
    assert page[1]["rows"] == []
    assert page[3]["p"]["statement"].startswith("No step time measured")
    assert page[6]["rows"][0]["c"][1]["v"].startswith("No step marker observed")


def test_overview_of_a_tf_data_fit(tmp_path):
    """The Keras fit fed by tf.data is input-bound; its steps are the profiled batches."""
    page = export(tmp_path, XPROF / "tfdata.xplane.pb", "overview_page")
    assert [r["c"][0]["v"] for r in page[1]["rows"]] == ["train 2", "train 3", "train 4", "train 5"]
    assert page[3]["p"]["bottleneck"] == "host"
    assert "HIGHLY input-bound" in page[3]["p"]["statement"]
    pipeline = export(tmp_path, XPROF / "tfdata.xplane.pb", "input_pipeline_analyzer")
    ops = [r["c"][0]["v"] for r in pipeline[2]["rows"]]
    assert ops[0] == "Iterator::Root::Prefetch::MapAndBatch"
    assert {r["c"][6]["v"] for r in pipeline[2]["rows"]} == {"Preprocessing"}


def test_sessions_list_the_tools(tmp_path):
    shutil.copy(XPROF / "tfdata.xplane.pb", tmp_path / "vm.xplane.pb")
    (info,) = open_repository(tmp_path).enum_sessions()
    assert {"overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats"} <= set(info.tools)
    assert "op_stats" not in info.tools  # Profscope's Chrome-trace statistics are not an xplane's


@pytest.mark.parametrize("tool", TOOLS)
def test_all_hosts_equal_xprofs_list(tmp_path, tool):
    """Host "" of a session of two xplanes is XProf's answer for both files:
    host ops added up, the first host's steps, each step's longest time."""
    shutil.copy(XPROF / "small.xplane.pb", tmp_path / "a.xplane.pb")
    shutil.copy(XPROF / "tfdata.xplane.pb", tmp_path / "b.xplane.pb")
    assert_same(export(tmp_path, tmp_path, tool), xprof_answer("small+tfdata", tool))


def test_corrupt_xplane(tmp_path, capsys):
    bad = tmp_path / "vm.xplane.pb"
    bad.write_bytes(b"\x0a\xff\xff\xff\x0f garbage")
    assert main(["export", str(bad), "--tool", "framework_op_stats", "-o", str(tmp_path / "o.json")]) != 0
    err = capsys.readouterr().err
    assert "vm.xplane.pb" in err and "Traceback" not in err


def test_sql_tables_hold_xprofs_rows(tmp_path):
    from profscope.models.sql.database import ProfileDatabase

    shutil.copy(XPROF / "tfdata.xplane.pb", tmp_path / "vm.xplane.pb")
    db = ProfileDatabase.open(tmp_path)
    rows = (lambda sql: db.query(sql).table.to_pylist())
    steps = [tuple(r.values()) for r in rows("SELECT step, step_ms, input_ms FROM xprof_steps ORDER BY step")]
    expected = xprof_answer("tfdata", "input_pipeline_analyzer")[1]["rows"]
    assert [(s, pytest.approx(ms), pytest.approx(i)) for s, ms, i in steps] == [
        (r["c"][0]["v"], r["c"][11]["v"], r["c"][6]["v"]) for r in expected]
    ops = rows("SELECT operation, occurrences FROM xprof_ops WHERE type = 'Dataset' ORDER BY self_us DESC")
    assert ops[0] == {"operation": "Iterator::Root::Prefetch::MapAndBatch", "occurrences": 3}


def test_an_unreadable_xla_module_is_a_clear_error_not_a_traceback(tmp_path, capsys):
    """A JAX xplane whose metadata plane's HloProto bytes are damaged (the XSpace around them intact): the tools that
    read the modules say which, and the command exits 1."""
    space = xplane_pb2.XSpace()
    space.ParseFromString((XPROF / "jax.xplane.pb").read_bytes())
    plane = next(p for p in space.planes if p.name == "/host:metadata")
    hlo_id = next(k for k, m in plane.stat_metadata.items() if m.name == "Hlo Proto")
    stat = next(s for m in plane.event_metadata.values() for s in m.stats if s.metadata_id == hlo_id)
    stat.bytes_value = b"\xff" * 16 + stat.bytes_value[16:]  # an overlong varint where the module starts
    path = tmp_path / "damaged.xplane.pb"
    path.write_bytes(space.SerializeToString())
    assert main(["export", str(path), "--tool", "overview_page", "-o", str(tmp_path / "out.json")]) == 1
    assert "HloProto in /host:metadata is not readable" in capsys.readouterr().err
