"""XProf's HLO tools (hlo_stats, op_profile, roofline_model, memory_viewer)
computed from xplanes, compared with XProf 2.24.2's own output for every
fixture (tests/data/xprof/tools, tests/data/README.md): the same fields,
rows and order, numbers within 1e-6 relative; and XProf's messages where it
refuses a request."""

import gzip
import json
import math
import shutil

import pytest
from conftest import DATA

from profscope.models.analysis.xprof import XPROF_TOOLS
from profscope.models.analysis.xprof.hlo_source import module_names, xspace_modules
from profscope.models.core.task import ProfileError, TaskState

XPROF = DATA / "xprof"
TOOLS = XPROF / "tools"
FIXTURES = sorted(p.name[: -len(".xplane.pb")] for p in XPROF.glob("*.xplane.pb"))
MODULES = [
    (fixture, module)
    for fixture in FIXTURES
    for module in json.loads((TOOLS / f"{fixture}.memory_viewer.modules.json").read_text())
]


def expected(name: str) -> bytes:
    path = TOOLS / name
    if not path.exists():
        return gzip.decompress((TOOLS / (name + ".gz")).read_bytes())
    return path.read_bytes()


def run(tool, fixture_or_paths, **params):
    paths = fixture_or_paths if isinstance(fixture_or_paths, list) else [XPROF / f"{fixture_or_paths}.xplane.pb"]
    return XPROF_TOOLS[tool](paths, params, TaskState()).output


def assert_same(got, want, where="$"):
    """Equal JSON: the same keys in the same order (XProf's maps excepted,
    whose order is its hash map's), the same lists, numbers within 1e-6."""
    if isinstance(want, dict):
        assert isinstance(got, dict), where
        if where.endswith("logicalBufferSpans"):
            assert sorted(got) == sorted(want), where
        else:
            assert list(got) == list(want), where
        for key in want:
            assert_same(got[key], want[key], f"{where}.{key}")
    elif isinstance(want, list):
        assert isinstance(got, list) and len(got) == len(want), where
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same(g, w, f"{where}[{i}]")
    elif isinstance(want, float) or isinstance(got, float):
        assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-12), f"{where}: {got} != {want}"
    else:
        assert got == want, where


@pytest.mark.parametrize("fixture", FIXTURES)
@pytest.mark.parametrize(
    "tool, params, name",
    [
        ("hlo_stats", {}, "hlo_stats"),
        ("op_profile", {}, "op_profile"),
        ("op_profile", {"group_by": "program"}, "op_profile"),
        ("op_profile", {"group_by": "category"}, "op_profile.by_category"),
        ("roofline_model", {}, "roofline_model"),
    ],
)
def test_op_tools_are_xprofs(fixture, tool, params, name):
    """Host-only profiles (CPU: XLA ops run on host threads): XProf's tables
    with no rows, its zero roofs, its empty op trees with and without idle;
    byte for byte."""
    got = run(tool, fixture, **params)
    want = expected(f"{fixture}.{name}.json")
    assert got == want
    assert_same(json.loads(got), json.loads(want))


@pytest.mark.parametrize("fixture", FIXTURES)
def test_module_list_is_xprofs(fixture):
    """Every module of the metadata plane is selectable, named as XProf names them."""
    assert module_names([XPROF / f"{fixture}.xplane.pb"]) == json.loads(
        (TOOLS / f"{fixture}.memory_viewer.modules.json").read_text()
    )


def test_several_programs_fixture_has_modules_with_peaks():
    """The JAX fixture with several programs: every module selectable (not only the first, xprof#1569)."""
    names = module_names([XPROF / "jaxprog.xplane.pb"])
    assert {"jit_train_step(16)", "jit_conv_block(18)", "jit_running_stats(22)"} <= set(names)
    train = json.loads(run("memory_viewer", "jaxprog", module_name="jit_train_step(16)"))
    conv = json.loads(run("memory_viewer", "jaxprog", module_name="jit_conv_block(18)"))
    assert train["moduleName"] == "jit_train_step" and conv["moduleName"] == "jit_conv_block"
    assert train["peakHeapMib"] != conv["peakHeapMib"]
    # The buffers live at the peak, by size, with shape, op and allocation kind.
    top = conv["maxHeapBySize"][0]
    assert (top["instructionName"], top["shapeString"], top["groupName"], top["opCode"]) == (
        "conv_general_dilated.1",
        "f32[8,16,16,8]{3,2,1,0}",
        "Temporary",
        "convolution",
    )
    assert conv["logicalBufferSpans"][str(top["logicalBufferId"])] == {"limit": 1}


@pytest.mark.parametrize("fixture, module", MODULES)
def test_memory_viewer_is_xprofs(fixture, module):
    got = json.loads(run("memory_viewer", fixture, module_name=module))
    assert_same(got, json.loads(expected(f"{fixture}.memory_viewer.{module}.json")))


def test_memory_viewer_by_program_id_and_memory_space():
    by_name = run("memory_viewer", "jaxprog", module_name="jit_running_stats(22)")
    assert run("memory_viewer", "jaxprog", program_id="22") == by_name
    # XProf 2.24.2's answer for a memory space the module has no buffers in.
    assert json.loads(run("memory_viewer", "jaxprog", module_name="jit_conv_block(18)", memory_space="1")) == {
        "moduleName": "jit_conv_block",
        "entryComputationName": "main.4",
    }


@pytest.mark.parametrize("fixture", FIXTURES)
def test_memory_viewer_refusals_are_xprofs(fixture, tmp_path):
    errors = json.loads((TOOLS / f"{fixture}.memory_viewer.errors.json").read_text())
    folder = str(XPROF)
    with pytest.raises(ProfileError) as e:
        run("memory_viewer", fixture)
    assert str(e.value) == errors["no module"]
    with pytest.raises(ProfileError) as e:
        run("memory_viewer", fixture, module_name="no_such_module(1)")
    assert str(e.value) == errors["unknown module"].replace("{dir}", folder)
    with pytest.raises(ProfileError) as e:
        run("memory_viewer", fixture, program_id="987654321")
    assert str(e.value) == errors["unknown program id"].replace("{dir}", folder)


def test_module_file_beside_the_xplane(tmp_path):
    """A `<module>.hlo_proto.pb` beside an xplane (as XProf writes them) is a
    module too; nothing is written into the folder."""
    proto = xspace_modules(XPROF / "jaxprog.xplane.pb")["jit_conv_block(18)"]
    shutil.copy(XPROF / "small.xplane.pb", tmp_path / "vm.xplane.pb")
    (tmp_path / "jit_conv_block(18).hlo_proto.pb").write_bytes(proto)
    before = sorted(tmp_path.iterdir())
    paths = [tmp_path / "vm.xplane.pb"]
    assert module_names(paths) == ["jit_conv_block(18)"]
    got = json.loads(run("memory_viewer", paths, module_name="jit_conv_block(18)"))
    assert_same(got, json.loads(expected("jaxprog.memory_viewer.jit_conv_block(18).json")))
    assert sorted(tmp_path.iterdir()) == before


def test_bad_input_gives_messages(tmp_path):
    corrupt = tmp_path / "bad.xplane.pb"
    corrupt.write_bytes((XPROF / "jaxprog.xplane.pb").read_bytes()[:5000])
    for tool in ("hlo_stats", "op_profile", "roofline_model", "memory_viewer"):
        with pytest.raises(ProfileError, match="bad.xplane.pb"):
            run(tool, [corrupt], module_name="jit_conv_block(18)")
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    with pytest.raises(ProfileError, match="empty"):
        run("memory_viewer", [empty], module_name="x")


def test_equal_sizes_keep_xprofs_order():
    """jit_spread's peak holds 24 buffers of one size: XProf lists them by size
    in the order its std::sort leaves equal ones (not program order)."""
    doc = json.loads(run("memory_viewer", "jaxprog", module_name="jit_spread(26)"))
    sizes = [o["logicalBufferSizeMib"] for o in doc["maxHeap"]]
    assert len(sizes) > 16 and sizes.count(0.015625) == 24
    want = json.loads(expected("jaxprog.memory_viewer.jit_spread(26).json"))["bySizeToMaxHeap"]
    assert doc["bySizeToMaxHeap"] == want and want != sorted(range(len(sizes)), key=lambda i: -sizes[i])


def test_cpp_sort_is_libstdcxx_order():
    from profscope.models.analysis.xprof.cpp_sort import std_sort

    values = [3, 1, 2, 2, 5, 1, 4, 4, 4, 0, 9, 7, 7, 2, 3, 8, 6, 5, 1, 1, 2]
    order = std_sort(list(range(len(values))), lambda i, j: values[i] < values[j])
    assert [values[i] for i in order] == sorted(values)
    assert std_sort([], lambda a, b: a < b) == [] and std_sort([1], lambda a, b: a < b) == [1]


def test_html_timeline_is_refused_with_a_message():
    with pytest.raises(ProfileError, match="bufferBlocks"):
        run("memory_viewer", "jaxprog", module_name="jit_conv_block(18)", view_memory_allocation_timeline="true")
