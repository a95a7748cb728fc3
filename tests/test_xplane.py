"""XSpace profiles (xplane.pb from real TensorFlow runs): memory profile against
XProf's converter, step grouping, timelines, sessions and bad input."""

import gzip
import json
import shutil

import numpy as np
import pytest

from conftest import DATA
from models.memory_profile import to_xprof_json
from models.locations import open_repository
from models.registry import MEMORY_PROFILE, TRACE_VIEWER
from models.task import ProfileError
from models.formats.xspace.xplane import read_xspace
from models.formats.xspace.groups import group_events
from models.formats.xspace.memory import data_type_string, xplane_memory_profile
from models.formats.xspace.timeline import load_xplane_timeline
from protos import xplane_pb2
from viewer.cli import main

XPROF = DATA / "xprof"
SMALL = XPROF / "small.xplane.pb"
KERAS = XPROF / "keras.xplane.pb"
ALLOCATOR = "bfc_cpu_allocator_for_gpu"


def xprof_output(name):
    path = XPROF / name
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def space_of(path):
    space = xplane_pb2.XSpace()
    space.ParseFromString(path.read_bytes())
    return space


def write(tmp_path, space, name="h.xplane.pb"):
    path = tmp_path / name
    path.write_bytes(space.SerializeToString())
    return path


def plane_with(events, name="/host:CPU"):
    """A plane built with the real schema: events = [(line, name, offset_ps,
    duration_ps, {stat: value})]."""
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=0, name=name)
    md_ids, stat_ids, lines = {}, {}, {}
    for line, ev_name, offset, duration, stats in events:
        if line not in lines:
            lines[line] = plane.lines.add(id=len(lines) + 1, name=line, timestamp_ns=1000)
        mid = md_ids.setdefault(ev_name, len(md_ids) + 1)
        plane.event_metadata[mid].id, plane.event_metadata[mid].name = mid, ev_name
        ev = lines[line].events.add(metadata_id=mid, offset_ps=offset, duration_ps=duration)
        for key, value in stats.items():
            sid = stat_ids.setdefault(key, len(stat_ids) + 1)
            plane.stat_metadata[sid].id, plane.stat_metadata[sid].name = sid, key
            stat = ev.stats.add(metadata_id=sid)
            if isinstance(value, str):
                stat.str_value = value
            elif isinstance(value, float):
                stat.double_value = value
            else:
                stat.int64_value = value
    return space


# ---------------------------------------------------------------- memory profile


def test_memory_profile_equals_xprofs_converter_on_a_keras_profile():
    ours = to_xprof_json(xplane_memory_profile(KERAS), xprof_form=True)
    assert json.loads(json.dumps(ours)) == xprof_output("keras.memory_profile.json.gz")


def test_memory_profile_equals_xprofs_converter_on_a_small_profile():
    ours = json.loads(json.dumps(to_xprof_json(xplane_memory_profile(SMALL), xprof_form=True)))
    xprof = xprof_output("small.memory_profile.json")
    mine, theirs = ours["memoryProfilePerAllocator"][ALLOCATOR], xprof["memoryProfilePerAllocator"][ALLOCATOR]
    for key in ("profileSummary", "activeAllocations", "specialAllocations", "sampledTimelineSnapshots"):
        assert mine[key] == theirs[key], key
    # A merged row of identical allocations may be represented by another of
    # them (XProf sorts with an unstable sort); the metadata is the same.
    strip = lambda s: {k: v for k, v in s["activityMetadata"].items() if k != "address"}
    assert [strip(s) for s in mine["memoryProfileSnapshots"]] == [strip(s) for s in theirs["memoryProfileSnapshots"]]
    assert {k: v for k, v in ours.items() if k != "memoryProfilePerAllocator"} == \
        {k: v for k, v in xprof.items() if k != "memoryProfilePerAllocator"}


def test_memory_profile_keeps_every_snapshot_for_the_view():
    profile = xplane_memory_profile(KERAS)
    a = profile.allocators[ALLOCATOR]
    assert len(a.timeline) == 2694 and a.complete  # XProf's own output holds 1,000 samples
    assert a.summary.num_allocations + a.summary.num_deallocations == 2694
    assert np.all(np.diff(a.timeline.time_ps) >= 0)
    # a deallocation carries the op of the allocation it frees
    frees = np.flatnonzero(a.timeline.activity == 2)
    assert sum(a.timeline.strings[a.timeline.op[i]] != "" for i in frees) > len(frees) // 2
    # any moment can be inspected: right after the peak the table is the peak's
    rows = a.allocations_at(a.peak_index)
    assert rows.total_bytes == a.summary.peak_heap


def test_steps_come_from_xprofs_grouping():
    space = read_xspace(SMALL)
    groups = group_events(space, space.plane_named("/host:CPU"))
    assert groups.names == ["train 0", "train 1", "train 2"]
    steps = xplane_memory_profile(SMALL).allocators[ALLOCATOR].timeline.step
    assert sorted(set(steps.tolist())) == [0, 1, 2]


def test_grouping_follows_nesting_context_links_and_root_levels(tmp_path):
    events = [
        ("main", "step", 0, 100, {"_r": 1, "step_num": 7}),
        ("main", "launch", 10, 20, {"_pt": 1, "_p": 42}),
        ("main", "step", 200, 100, {"_r": 1, "step_num": 8}),
        ("worker", "run", 40, 50, {"_ct": 1, "_c": 42}),
        ("worker", "op", 45, 10, {}),
        ("worker", "idle", 150, 10, {}),
    ]
    space = read_xspace(write(tmp_path, plane_with(events)))
    groups = group_events(space, 0)
    assert groups.names == ["step 7", "step 8"]
    by_name = {space.planes[0].event_label(int(m)): int(g) for m, g in zip(space.events.metadata_id, groups.group)}
    assert groups.group.tolist() == [0, 0, 1, 0, 0, -1]
    assert by_name["op"] == 0 and by_name["idle"] == -1


def test_data_type_names_as_xprof_writes_them():
    assert [data_type_string(c) for c in (0, 1, 3, 14, 20, 101)] == ["INVALID", "float", "int32", "bfloat16",
                                                                      "resource", "float_ref"]


# ---------------------------------------------------------------- timelines


def test_timeline_of_a_real_profile():
    tl = load_xplane_timeline([SMALL], ["vm"])
    assert tl.groups == ["/host:CPU"]
    assert len(tl) == 1088 - 538  # memory events are in the memory view
    assert "MemoryAllocation" not in tl.kinds
    assert [n for n in tl.lane_names if n][:1] == ["python"]
    for lane in range(tl.num_lanes):  # nested events sit on deeper lanes, never overlapping
        a, b = tl.lane_offsets[lane], tl.lane_offsets[lane + 1]
        assert np.all(tl.start_ps[a + 1:b] >= tl.end_ps[a:b - 1])
    # TensorFlow ops: the type labels the event, the full name is searchable
    i = int(tl.find("gradient_tape/MatMul_1/MatMul:")[0])
    assert tl.kinds[tl.kind[i]] == "_MklMatMul" and tl.names[i] == "gradient_tape/MatMul_1/MatMul:_MklMatMul"
    # three steps: three starts and the last end
    assert len(tl.markers_ps) == 4


def test_nested_events_get_depths_and_details_show_named_stats(tmp_path):
    events = [("main", "outer", 0, 100, {"note": "hello", "ratio": 0.5}), ("main", "inner", 10, 20, {"count": 3}),
              ("main", "inner", 40, 20, {}), ("main", "after", 100, 5, {})]
    space = plane_with(events)
    ref = space.planes[0].stat_metadata
    ref[99].id, ref[99].name = 99, "a referenced string"
    ev = space.planes[0].lines[0].events[1]
    ev.stats.add(metadata_id=1, ref_value=99)
    tl = load_xplane_timeline([write(tmp_path, space)], ["h"])
    assert tl.num_lanes == 2 and tl.lane_names == ["main", ""]
    assert [tl.kinds[k] for k in tl.kind] == ["outer", "after", "inner", "inner"]
    inner = 2
    details = dict(tl.details(inner))
    assert details["count"] == "3" and details["note"] == "a referenced string"
    assert dict(tl.details(0))["ratio"] == "0.5" and details["line"] == "main"


def test_all_hosts_timeline_and_sessions(tmp_path, capsys):
    session = tmp_path / "plugins" / "profile" / "2026_11_22_10_00_00"
    session.mkdir(parents=True)
    shutil.copy(SMALL, session / "worker-a.xplane.pb")
    shutil.copy(KERAS, session / "worker-b.xplane.pb")
    repo = open_repository(tmp_path)
    (info,) = repo.enum_sessions()
    assert info.hosts == ("worker-a", "worker-b") and info.tools == (MEMORY_PROFILE, TRACE_VIEWER)
    assert repo.combines_hosts(info.name)
    both = repo.step_timeline(info.name, "")
    assert both.groups == ["worker-a /host:CPU", "worker-b /host:CPU"]
    one = repo.step_timeline(info.name, "worker-b")
    assert len(both) == len(one) + 550
    assert main(["sessions", str(tmp_path)]) == 0
    assert "tools: memory_profile, trace_viewer" in capsys.readouterr().out


def test_export_memory_profile_of_an_xplane_session(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["export", str(SMALL), "--tool", "memory_profile", "--param", "xprof_form=true", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["memoryProfilePerAllocator"][ALLOCATOR]["profileSummary"] == \
        xprof_output("small.memory_profile.json")["memoryProfilePerAllocator"][ALLOCATOR]["profileSummary"]
    assert main(["export", str(SMALL), "--tool", "memory_profile", "-o", str(out)]) == 0
    full = json.loads(out.read_text())["memoryProfilePerAllocator"][ALLOCATOR]
    assert len(full["memoryProfileSnapshots"]) == 538


# ---------------------------------------------------------------- bad input


def test_truncated_and_corrupt_files_get_a_clear_message(tmp_path):
    data = SMALL.read_bytes()
    for name, content in (("cut", data[: len(data) // 2]), ("noise", bytes(range(256)) * 20), ("empty", b"")):
        path = tmp_path / f"{name}.xplane.pb"
        path.write_bytes(content)
        with pytest.raises(ProfileError, match="xplane|XSpace|empty"):
            load_xplane_timeline([path], [name])
        with pytest.raises(ProfileError):
            xplane_memory_profile(path)


def test_a_plane_without_lines_and_events_with_missing_metadata(tmp_path):
    space = plane_with([("main", "op", 0, 10, {}), ("main", "op", 20, 10, {})])
    space.planes[0].lines[0].events[1].metadata_id = 77
    space.planes.add(id=1, name="/device:GPU:0")
    tl = load_xplane_timeline([write(tmp_path, space)], ["h"])
    assert "(unknown event metadata 77)" in tl.kinds
    assert any("no lines" in w and "GPU:0" in w for w in tl.warnings)
    assert any("event metadata" in w for w in tl.warnings)


def test_a_profile_without_memory_events_says_how_to_get_them(tmp_path):
    path = write(tmp_path, plane_with([("main", "op", 0, 10, {})]))
    with pytest.raises(ProfileError, match="TF_CPU_ALLOCATOR_USE_BFC=true"):
        xplane_memory_profile(path)
    path = write(tmp_path, plane_with([("main", "op", 0, 10, {})], name="/device:TPU:0"), "t.xplane.pb")
    with pytest.raises(ProfileError, match="no host plane"):
        xplane_memory_profile(path)


def test_a_real_jax_profile():
    path = XPROF / "jax.xplane.pb"
    tl = load_xplane_timeline([path], ["vm"])
    assert tl.groups == ["/host:CPU"] and not tl.warnings  # the metadata plane has no lines by design
    assert {"dot", "PjitFunction(train_step)"} <= set(tl.kinds)
    assert len(tl.markers_ps) == 4  # three StepTraceAnnotation steps
    i = int(tl.find("dot.1")[0])
    assert dict(tl.details(i))["hlo_module"] == "jit_train_step"
    with pytest.raises(ProfileError, match="JAX records no such events"):
        xplane_memory_profile(path)


@pytest.mark.parametrize("name", ["small", "jax"])
def test_trace_export_equals_xprofs_trace_viewer(tmp_path, name):
    """Same events in the same order, names, timestamps, durations, pids, tids,
    process and thread names, and args (XProf's run-dependent flow ids and
    its is_eager flag aside)."""
    out = tmp_path / "trace.json"
    assert main(["export", str(XPROF / f"{name}.xplane.pb"), "--tool", "trace_viewer", "-o", str(out)]) == 0
    ours = json.loads(out.read_text())["traceEvents"]
    theirs = xprof_output(f"{name}.trace_viewer.json.gz")["traceEvents"]
    strip = lambda e: {**e, "args": {k: v for k, v in e.get("args", {}).items() if k not in ("flow", "is_eager")}}
    assert [strip(e) for e in ours] == [strip(e) for e in theirs]
    assert sum(e.get("ph") == "X" for e in ours) > 200


def test_span_arguments_of_the_wrong_shape_are_refused():
    from models import _protowire as wire

    bad = np.zeros((3, 1), np.int64)
    for call in (lambda: wire.intern_strings(b"abc", bad), lambda: wire.gather_spans(b"abc", bad),
                 lambda: wire.stat_columns(b"", bad, 4, np.arange(2)), lambda: wire.find_children(b"", bad, [1])):
        with pytest.raises(ValueError, match="shape"):
            call()
