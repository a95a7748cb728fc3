"""XSpace profiles (xplane.pb from real TensorFlow runs): memory profile against
XProf's converter, step grouping, timelines, sessions and bad input."""

import gzip
import json
import random
import shutil

import numpy as np
import pytest
from conftest import DATA

from profscope.models.core.task import Cancelled, ProfileError, TaskState
from profscope.models.data.memory_profile import to_xprof_json
from profscope.models.formats.xspace import _steps
from profscope.models.formats.xspace.groups import group_events
from profscope.models.formats.xspace.memory import data_type_string, memory_profile_of, xplane_memory_profile
from profscope.models.formats.xspace.timeline import load_xplane_timeline
from profscope.models.formats.xspace.trace import trace_viewer_json
from profscope.models.formats.xspace.xplane import read_xspace, xprof_order
from profscope.models.repository.locations import open_repository
from profscope.models.repository.registry import MEMORY_PROFILE, TRACE_VIEWER
from profscope.protos import xplane_pb2
from profscope.viewer.cli import main

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
    assert info.hosts == ("worker-a", "worker-b")
    assert info.tools[:2] == (MEMORY_PROFILE, TRACE_VIEWER) and "framework_op_stats" in info.tools
    assert repo.combines_hosts(info.name)
    both = repo.step_timeline(info.name, "")
    assert both.groups == ["worker-a /host:CPU", "worker-b /host:CPU"]
    one = repo.step_timeline(info.name, "worker-b")
    assert len(both) == len(one) + 550
    assert main(["sessions", str(tmp_path)]) == 0
    assert "tools: memory_profile, trace_viewer, " in capsys.readouterr().out


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
    from profscope.models.core import _protowire as wire

    bad = np.zeros((3, 1), np.int64)
    for call in (lambda: wire.intern_strings(b"abc", bad), lambda: wire.gather_spans(b"abc", bad),
                 lambda: wire.stat_columns(b"", bad, 4, np.arange(2)), lambda: wire.find_children(b"", bad, [1]),
                 lambda: wire.decode_messages(b"", bad, [(4, "c")]),
                 lambda: wire.decode_children(b"", bad, 4, [], 0, [])):
        with pytest.raises(ValueError, match="shape"):
            call()


def test_one_pass_event_and_stat_decoders_equal_the_general_ones(tmp_path):
    """decode_children (the event columns in one pass) and stat_entries (stats
    where present) give what find_children + decode_messages and the dense
    stat_columns give, on every real fixture and on XSpaces of every kind of
    stat value (str_value too, which the real producers here do not write)."""
    from profscope.models.core import _protowire as wire
    from profscope.models.formats.xspace.xplane import read_xspace

    strings_seen = 0
    paths = [XPROF / f"{name}.xplane.pb" for name in ("small", "keras", "jax", "tfdata")]
    paths += [write(tmp_path, edge_case_space(seed), f"edge{seed}.xplane.pb") for seed in range(2)]
    for path in paths:
        space = read_xspace(path)
        buf = bytes(space.buf)
        (plane_spans,) = wire.find_fields(buf, 0, len(buf), [1])
        ((_p, line_spans),) = wire.find_children(buf, plane_spans, [3])
        ((owner, spans),) = wire.find_children(buf, line_spans, [4])
        expected = wire.decode_messages(buf, spans, [(1, "i"), (2, "i"), (3, "i"), (5, "i")])
        (counts,) = wire.decode_messages(buf, line_spans, [(4, "c")])
        assert counts.tolist() == np.bincount(owner, minlength=len(line_spans)).tolist()
        n = int(counts.sum())
        out = [np.empty(n, np.int64), np.empty(n, np.int32)] + [np.empty(n, np.int64) for _ in range(4)]
        assert wire.decode_children(buf, line_spans, 4, [1, 2, 3, 5], n, out) is None
        assert out[0].tolist() == spans[:, 0].tolist() and out[1].tolist() == spans[:, 1].tolist()
        for got, want in zip(out[2:], expected):
            assert got.tolist() == want.tolist()
        ids = np.array(sorted({i for p in space.planes for i in p.stat_names}), np.int64)
        # Narrower columns (metadata ids in int32, num_occurrences as "not 0") and the stats in the same pass.
        narrow = out[:2] + [np.empty(n, np.int32), np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, bool)]
        *entries, text, strings = wire.decode_children(buf, line_spans, 4, [1, 2, 3, 5], n, narrow, 4, ids)
        assert narrow[2].tolist() == expected[0].tolist() and narrow[5].tolist() == (expected[3] != 0).tolist()
        every = wire.stat_entries(buf, spans[:, 0], spans[:, 1].astype(np.int32), np.arange(n), 4, ids)
        assert [e.tolist() for e in entries] == [e.tolist() for e in every]
        # The str_values interned as they are decoded: the strings intern_strings reads at their spans.
        is_str = entries[2] == 5
        assert (text[~is_str] == -1).all()
        strings_seen += int(is_str.sum())
        _ids, read = wire.intern_strings(buf, np.stack([entries[3][is_str], entries[4][is_str]], axis=1))
        assert [strings[i] for i in text[is_str]] == [read[i] for i in _ids]
        some = ids[::2]  # the stats of other ids are passed over on their ids
        entries = wire.decode_children(buf, line_spans, 4, [1, 2, 3, 5], n, narrow, 4, some)[:5]
        every = wire.stat_entries(buf, spans[:, 0], spans[:, 1].astype(np.int32), np.arange(n), 4, some)
        assert [e.tolist() for e in entries] == [e.tolist() for e in every] and len(entries[0])
        if path.parent == tmp_path:  # stat_columns has no place for a stat without a value: the fixtures only
            continue
        cases, values, lengths = wire.stat_columns(buf, spans, 4, ids)
        rows = np.arange(0, n, 2)  # a subset, as the analyses ask
        at, which, c, v, ln = wire.stat_entries(buf, spans[:, 0], spans[:, 1].astype(np.int32), rows, 4, ids)
        present = np.argwhere(cases[rows] != 0)
        assert sorted(zip(at.tolist(), which.tolist())) == [tuple(x) for x in present.tolist()]
        assert len(at) > 0
        for i, j, cc, vv, ll in zip(at.tolist(), which.tolist(), c.tolist(), v.tolist(), ln.tolist()):
            r = int(rows[i])
            assert (cc, vv, ll) == (cases[r, j], values[r, j], lengths[r, j])
    assert strings_seen > 100


def test_one_pass_decoders_refuse_malformed_data_and_bad_columns():
    from profscope.models.core import _protowire as wire

    line = bytes([0x22, 0x04, 0x08, 0x01, 0x10, 0x02])  # XLine.events = XEvent{metadata_id 1, offset_ps 2}
    spans = np.array([[0, len(line)]], np.int64)
    assert [c.tolist() for c in wire.decode_messages(line, spans, [(4, "c")])] == [[1]]
    out = [np.empty(1, np.int64), np.empty(1, np.int32), np.empty(1, np.int64)]
    wire.decode_children(line, spans, 4, [1], 1, out)
    assert out[2].tolist() == [1]
    for cut in range(1, len(line)):
        short = np.array([[0, cut]], np.int64)
        with pytest.raises(ValueError, match="malformed"):
            wire.decode_messages(line[:cut], short, [(4, "c")])
        with pytest.raises(ValueError, match="malformed"):
            wire.decode_children(line[:cut], short, 4, [1], 1, out)
    with pytest.raises(ValueError, match="count differs"):
        wire.decode_children(line, spans, 4, [1], 0, out)
    with pytest.raises(ValueError, match="output 1"):
        wire.decode_children(line, spans, 4, [1], 1, [out[0], np.empty(1, np.int64), out[2]])
    big = bytes([0x22, 0x06, 0x08, 0x80, 0x80, 0x80, 0x80, 0x08])  # metadata_id 2**31: no int32
    with pytest.raises(OverflowError):
        wire.decode_children(big, np.array([[0, len(big)]], np.int64), 4, [1], 1, out[:2] + [np.empty(1, np.int32)])
    with pytest.raises(ValueError, match="malformed"):  # a stat cut short, read in the same pass
        bad_stat = bytes([0x22, 0x04, 0x22, 0x02, 0x08, 0x80])
        wire.decode_children(bad_stat, np.array([[0, len(bad_stat)]], np.int64), 4, [1], 1, out, 4, np.array([1]))
    with pytest.raises(ValueError, match="malformed"):
        wire.stat_entries(line, np.array([0]), np.array([3], np.int32), np.array([0]), 4, np.array([1]))
    with pytest.raises(ValueError, match="row outside"):
        wire.stat_entries(line, np.array([0]), np.array([3], np.int32), np.array([1]), 4, np.array([1]))


# ---------------------------------------------------------------- native passes


def test_xprof_order_sorts_only_lines_out_of_order_by_start_then_longest():
    rng = np.random.default_rng(3)
    for trial in range(300):
        n = int(rng.integers(0, 200))
        start = rng.integers(0, 30, n)
        end = start + rng.integers(0, 6, n)
        line = np.sort(rng.integers(0, 4, n)).astype(np.int32)
        if trial % 3 == 0:  # already in order: nothing to do
            o = np.lexsort((-end, start, line))
            start, end, line = start[o], end[o], line[o]
        for seg, keys in ((line, (-end, start, line)), (None, (-end, start))):
            want = np.lexsort(keys)
            got = xprof_order(start, end, seg)
            if got is None:
                assert (want == np.arange(n)).all()
            else:
                assert got.tolist() == want.tolist()


def claims_by_walking(edges, num_nodes, num_events, roots):
    """The grouping rule spelled out: each root in turn takes every event it
    reaches through unclaimed events; contexts (nodes >= num_events) pass
    every root once."""
    out = {}
    for a, b in edges:
        out.setdefault(a, []).append(b)
    local, kept = [-1] * num_nodes, []
    for r in roots:
        if local[r] >= 0:
            continue
        gid = len(kept)
        kept.append(r)
        local[r] = gid
        todo = [r]
        while todo:
            for v in out.get(todo.pop(), []):
                if local[v] < 0 or (v >= num_events and local[v] != gid):
                    local[v] = gid
                    todo.append(v)
    return local[:num_events], kept


def test_claim_groups_matches_the_rule_on_random_graphs():
    rng = random.Random(11)
    for _ in range(300):
        events, contexts = rng.randint(1, 40), rng.randint(0, 6)
        nodes = events + contexts
        edges = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(rng.randint(0, 80))]
        roots = [rng.randrange(events) for _ in range(rng.randint(0, 8))]
        src, dst = (np.array([e[k] for e in edges], np.int32) for k in (0, 1))
        group, kept = _steps.claim_groups(src, dst, nodes, events, np.array(roots, np.int64))
        want_group, want_kept = claims_by_walking(edges, nodes, events, roots)
        assert group.tolist() == want_group and kept.tolist() == want_kept
    with pytest.raises(ValueError):
        _steps.claim_groups(np.array([0], np.int32), np.array([5], np.int32), 3, 2, np.zeros(0, np.int64))


def assert_claims_as_edges(rng, parent: list[int], contexts: int) -> None:
    """claim_groups with the parents and random other edges and roots: the groups of them all as edges."""
    events = len(parent)
    nodes = events + contexts
    others = [(rng.randrange(nodes), rng.randrange(nodes)) for _ in range(rng.randint(0, 20))]
    roots = [rng.randrange(events) for _ in range(rng.randint(0, 8))]
    src, dst = (np.array([e[k] for e in others], np.int32) for k in (0, 1))
    group, kept = _steps.claim_groups(src, dst, nodes, events, np.array(roots, np.int64),
                                      np.array(parent, np.int32))
    edges = others + [(p, v) for v, p in enumerate(parent) if p >= 0]
    want_group, want_kept = claims_by_walking(edges, nodes, events, roots)
    assert group.tolist() == want_group and kept.tolist() == want_kept


def test_claim_groups_takes_nesting_as_a_parent_per_event():
    # Grouping passes nest_rows' parents (one per event) beside the few other edges: the same groups as all
    # of them as edges.
    rng = random.Random(12)
    for _ in range(300):
        events, contexts = rng.randint(1, 40), rng.randint(0, 6)
        parent = [rng.randrange(-1, events) for _ in range(events)]
        assert_claims_as_edges(rng, parent, contexts)
    with pytest.raises(ValueError):  # a parent per event, each an event or -1
        _steps.claim_groups(np.zeros(0, np.int32), np.zeros(0, np.int32), 3, 2, np.zeros(0, np.int64),
                            np.array([-1], np.int32))
    with pytest.raises(ValueError):
        _steps.claim_groups(np.zeros(0, np.int32), np.zeros(0, np.int32), 3, 2, np.zeros(0, np.int64),
                            np.array([-1, 7], np.int32))


def test_claim_groups_walks_nesting_in_order_as_runs():
    # Parents as nest_rows gives them for lines in XProf's order (each event's descendants right after it):
    # claimed run by run, the same groups as the nesting as edges, other edges and contexts included.
    rng = random.Random(13)
    for _ in range(400):
        events, contexts = rng.randint(1, 60), rng.randint(0, 6)
        parent, open_ = [], []
        for v in range(events):
            del open_[rng.randint(0, len(open_)):]  # close some of the open events
            parent.append(open_[-1] if open_ else -1)
            open_.append(v)
        assert_claims_as_edges(rng, parent, contexts)


def test_nest_rows_matches_nesting_of_sorted_events():
    # nest_rows' parents (per line, XProf's order, the nearest open event containing each) equal those of
    # _nesting.nest_parents over xprof_order's permutation, on lines in order, nearly so, and shuffled.
    from profscope.models.data import _nesting

    rng = np.random.default_rng(5)
    for trial in range(60):
        num_lines = int(rng.integers(1, 4))
        counts = rng.integers(0, 300 if trial % 10 else 3000, num_lines)
        line = np.repeat(np.arange(num_lines, dtype=np.int32), counts)
        n = len(line)
        offset = rng.integers(0, 50, n).cumsum() if trial % 3 == 0 else rng.integers(0, 2000, n)
        if trial % 3 == 1:  # nearly in order: neighbours swapped
            offset = np.sort(offset)
            swap = np.flatnonzero(rng.random(max(n - 1, 0)) < 0.1)
            offset[swap], offset[swap + 1] = offset[swap + 1].copy(), offset[swap].copy()
        duration = rng.integers(-5, 400, n)
        line_ps = rng.integers(0, 10**6, num_lines).astype(np.int64)
        skip = rng.random(n) < 0.05
        rows = np.arange(n, dtype=np.int64)
        parent = _steps.nest_rows(rows, line, offset.astype(np.int64), duration.astype(np.int64), line_ps, skip)
        start = line_ps[line] + offset
        end = start + np.maximum(duration, 0)
        order = xprof_order(start, end, line)
        want = _nesting.nest_parents(order, line, start, end, skip)
        assert parent.tolist() == want.tolist()
    with pytest.raises(ValueError):
        _steps.nest_rows(np.array([1, 0], np.int64), np.zeros(2, np.int32), np.zeros(2, np.int64),
                         np.zeros(2, np.int64), np.zeros(1, np.int64), np.zeros(2, bool))


# ---------------------------------------------------------------- trace export, row by row


def reference_trace(space: xplane_pb2.XSpace) -> bytes:
    """XProf's trace_viewer rows built the plain way, a dict per event dumped
    with json.dumps(sort_keys=True), for one host plane without step groups
    (no root levels) or regions: what the streamed writer must reproduce."""
    rows = []
    for plane in space.planes:
        names = {k: m.name for k, m in plane.stat_metadata.items()}
        for line in plane.lines:
            tid = (line.display_id or line.id) % 2**32
            for e in line.events:
                m = plane.event_metadata.get(e.metadata_id)
                full = m.name if m is not None else ""
                if full == "MemoryAllocation":
                    continue
                args, name = {}, full
                if m is not None and m.display_name:
                    name, args["long_name"] = m.display_name, full
                for stat in list(m.stats if m is not None else []) + list(e.stats):
                    case = stat.WhichOneof("value")
                    key = names.get(stat.metadata_id, "")
                    if case is None or key in ("_pt", "_p", "_ct", "_c", "_r", "flops"):
                        continue
                    args[key] = (f"{stat.double_value:.6g}" if case == "double_value" else "<opaque bytes>"
                                 if case == "bytes_value" else names.get(stat.ref_value, "") if case == "ref_value"
                                 else str(getattr(stat, case)))
                name = args.get("step_name", name)
                ts = (line.timestamp_ns * 1000 + e.offset_ps) % 2**64 / 1e6
                row = {"pid": 701, "tid": tid, "name": name, "ts": ts}
                dur = e.duration_ps % 2**64
                if dur:
                    row["ph"], row["dur"] = "X", dur / 1e6
                else:
                    row["ph"], row["s"] = "i", "t"
                if args:
                    row["args"] = args
                rows.append(json.dumps(row, sort_keys=True) + ",\n")
    return "".join(rows).encode()


def edge_case_space(seed: int) -> xplane_pb2.XSpace:
    """Escapes and non-ASCII text, every stat value kind, refs and unknown
    ids, a stat overriding another of its name, display names, metadata stats,
    instants, negative durations and times from zero to ~2^64 ps."""
    rng = random.Random(seed)
    space = xplane_pb2.XSpace()
    plane = space.planes.add(id=0, name="/host:CPU")
    texts = [
        "",
        "plain",
        'q"uote',
        "back\\slash",
        "caf\u00e9",
        "\u2603",
        "tab\there\n",
        "ctl\x01\x1f\x7f",
        "\U0001f600",
    ]
    keys = ["note", "long_name", "step_name", "flops", "_p", "z", "\u00e9", ""] + texts[1:4]
    for i, key in enumerate(keys, 1):
        plane.stat_metadata[i].id, plane.stat_metadata[i].name = i, key
    for i, text in enumerate(texts + ["MemoryAllocation"], 1):
        md = plane.event_metadata[i]
        md.id, md.name = i, text
        if rng.random() < 0.4:
            md.display_name = rng.choice(texts)
        if rng.random() < 0.3:
            md.stats.add(metadata_id=rng.randint(1, len(keys)), str_value=rng.choice(texts))
    for li in range(3):
        line = plane.lines.add(
            id=li - 1,
            display_id=rng.choice([0, 7, 2**40]),
            name="l",
            timestamp_ns=rng.choice([0, 1000, 1_700_000_000_123_456_789, 18_000_000_000_000_000]),
        )
        for _ in range(300):
            e = line.events.add(
                metadata_id=rng.randint(0, len(texts) + 2),
                offset_ps=rng.choice([0, 1, 999_999, 10**12 + rng.randrange(10**9), rng.randrange(2**62)]),
            )
            e.duration_ps = rng.choice([0, 1, 5, 1_000_000, rng.randrange(10**15), -3])
            for _ in range(rng.choice([0, 1, 3, 6])):
                st = e.stats.add(metadata_id=rng.randint(1, len(keys) + 2))
                kind = rng.randrange(8)
                if kind == 0:
                    st.double_value = rng.choice([0.1, -0.0, 1e-7, 123456789.125, float("inf"), float("nan"), 2.5e300])
                elif kind == 1:
                    st.str_value = rng.choice(texts)
                elif kind == 2:
                    st.bytes_value = b"\x00\xff"
                elif kind == 3:
                    st.ref_value = rng.randint(1, len(keys) + 3)
                elif kind == 4:
                    st.uint64_value = rng.choice([0, 2**64 - 1])
                elif kind == 5:
                    st.int64_value = rng.choice([-(2**63), -1, 0, 2**63 - 1])
                # else: a stat without a value, which writes nothing
    return space


@pytest.mark.parametrize("seed", range(4))
def test_trace_rows_are_json_dumps_bytes_for_every_kind_of_value(tmp_path, seed):
    space = edge_case_space(seed)
    path = write(tmp_path, space)
    chunks = list(trace_viewer_json(path))
    assert all(isinstance(c, bytes) for c in chunks) and len(chunks) >= 2  # the metadata, then rows
    document = b"".join(chunks)
    lines = document.split(b"\n")[2:]  # after the header and "traceEvents":[
    rows = b"".join(line + b"\n" for line in lines if line and b'"ph": "M"' not in line and line != b"{}]}")
    assert rows == reference_trace(space)
    json.loads(document)  # still one valid document


def test_trace_export_stops_between_chunks_when_cancelled():
    """A server call or the window may stop a long trace export half way."""
    task = TaskState()
    chunks = trace_viewer_json(KERAS, task=task)
    assert next(chunks).startswith(b"{")  # the metadata is written
    task.cancel()
    with pytest.raises(Cancelled):
        next(chunks)


def test_trace_times_are_float_reprs_of_microseconds(tmp_path):
    """Times are written with a shortest-digits formatter of its own: each
    must be Python's repr of ps / 1e6 (fixed and exponent forms, both sides
    of 2^53, from a picosecond to centuries)."""
    rng = np.random.default_rng(7)
    spread = lambda k: (10 ** rng.uniform(0, 18.9, k)).astype(np.int64)  # noqa: E731
    offsets = np.concatenate(
        [
            rng.integers(0, 2**62, 3000),
            rng.integers(0, 10**9, 3000),
            spread(3000),
            [0, 1, 9, 10, 99, 100, 2**53, 2**53 + 1],
        ]
    )
    durations = np.concatenate([rng.integers(1, 10**7, 6000), spread(3008)])
    space = plane_with([])
    plane = space.planes[0]
    plane.event_metadata[1].id = 1
    line = plane.lines.add(id=1, timestamp_ns=0)
    for o, d in zip(offsets.tolist(), durations.tolist()):
        line.events.add(metadata_id=1, offset_ps=o, duration_ps=d)
    rows = [
        r for r in b"".join(trace_viewer_json(write(tmp_path, space))).decode().split("\n") if r.startswith('{"dur"')
    ]
    assert rows == [
        f'{{"dur": {d / 1e6!r}, "name": "", "ph": "X", "pid": 701, "tid": 1, "ts": {o / 1e6!r}}},'
        for o, d in zip(offsets.tolist(), durations.tolist())
    ]


def test_trace_export_streams_chunks_and_joins_for_callers_needing_bytes(tmp_path):
    repo = open_repository(KERAS)
    session = repo.enum_sessions()[0].name
    data = repo.tool_data(session, TRACE_VIEWER)
    out = tmp_path / "t.json"
    with open(out, "wb") as f:
        written = data.write_to(f)
    assert written == out.stat().st_size
    assert repo.tool_data(session, TRACE_VIEWER).output == out.read_bytes()  # .output joins (the remote server)


def test_corrupt_stats_in_a_trace_export_are_a_message(tmp_path):
    space = xplane_pb2.XSpace.FromString(SMALL.read_bytes())
    data = bytearray(space.SerializeToString())
    stats = space.planes[0].lines[0].events[0].stats[0].SerializeToString()
    at = data.find(stats)
    data[at] = 0x0F  # field 1 with wire type 7: no such wire type
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(bytes(data))
    with pytest.raises(ProfileError, match="corrupt event stats"):
        b"".join(trace_viewer_json(path))


def test_memory_profile_of_drops_the_event_columns():
    space = read_xspace(SMALL)
    profile = memory_profile_of(space)
    assert space.events is None  # what the analysis no longer needs is released
    assert len(profile.allocators[ALLOCATOR].timeline) == 538


def test_line_timestamps_past_int64_picoseconds_still_load(tmp_path):
    space = plane_with([("main", "op", 0, 10, {}), ("main", "op", 20, 10, {})])
    space.planes[0].lines[0].timestamp_ns = 2**62  # x 1000 is past int64: times wrap as grouping's do
    path = write(tmp_path, space)
    assert len(load_xplane_timeline([path], ["h"])) == 2
    rows = [r for r in b"".join(trace_viewer_json(path)).split(b"\n") if b'"ph": "X"' in r]
    assert [json.loads(r.rstrip(b","))["ts"] for r in rows] == [(2**62 * 1000 + o) % 2**64 / 1e6 for o in (0, 20)]


def _step_sweep_by_definition(starts, ends, types, segment, begin, finish):
    """step_sweep's documented rule, boundary by boundary in Python."""
    times = np.zeros((len(begin), 18), np.int64)
    seen = np.zeros((len(begin), 18), np.uint8)
    for step in np.unique(segment).tolist():
        mine = np.flatnonzero(segment == step)
        bounds = sorted([(int(starts[i]), 1, -(int(types[i]) // 10)) for i in mine]
                        + [(int(ends[i]), 0, -(int(types[i]) // 10)) for i in mine])
        count = [0] * 18
        current = 0
        for k in range(len(bounds) - 1):
            t, is_start, ty = bounds[k][0], bounds[k][1], -bounds[k][2]
            if is_start:
                count[ty] += 1
                current = max(current, ty)
            else:
                count[ty] -= 1
                if ty == current and count[ty] == 0:
                    current = next((j for j in range(ty - 1, -1, -1) if count[j] > 0), 0)
            lo, hi = max(t, int(begin[step])), min(bounds[k + 1][0], int(finish[step]))
            times[step, current] += max(hi - lo, 0)
            seen[step, current] = 1
    return times, seen


def assert_sweep_as_defined(*columns) -> None:
    """_steps.step_sweep of the columns (starts, ends, types, segment, begin, finish) equals its definition."""
    from profscope.models.formats.xspace import _steps

    got, want = _steps.step_sweep(*columns), _step_sweep_by_definition(*columns)
    assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def test_step_sweep_splits_each_step_by_the_highest_type_current():
    rng = np.random.default_rng(11)
    for _trial in range(200):
        steps = int(rng.integers(1, 5))
        n = int(rng.integers(0, 60))
        segment = np.sort(rng.integers(0, steps, n)).astype(np.int64)
        starts = rng.integers(0, 50, n).astype(np.int64)
        ends = starts + rng.integers(0, 20, n)
        order = np.lexsort((starts, segment))  # by step, each step's events mostly by start, as lines give them
        starts, ends, segment = starts[order], ends[order], segment[order]
        types = (rng.integers(0, 18, n) * 10).astype(np.int32)
        begin = rng.integers(0, 20, steps).astype(np.int64)
        finish = begin + rng.integers(0, 60, steps)
        if _trial % 10 == 0:  # times too far apart for the radix keys: the merge sort
            far = 1 << 56
            starts, ends, begin, finish = starts * far, ends * far, begin * far, finish * far
        assert_sweep_as_defined(starts, ends, types, segment, begin, finish)


def test_step_sweep_sorts_large_steps_of_spread_and_clustered_times():
    # Thousands of boundaries a step: the radix sort's buckets, each sorted again where many keys share one
    # (clustered times, a few far apart), or by insertion where few do.
    rng = np.random.default_rng(13)
    for trial in range(12):
        n = int(rng.integers(500, 3000))
        scale = int(rng.choice([1, 1000, 10**6, 10**9]))
        starts = rng.integers(0, 1000, n).astype(np.int64) * scale
        if trial % 2:  # most in a narrow cluster, a few far off
            starts[: n - 5] = rng.integers(0, 40, n - 5)
        ends = starts + rng.integers(0, 50, n) * int(rng.choice([1, scale]))
        segment = np.sort(rng.integers(0, 2, n)).astype(np.int64)
        order = np.lexsort((starts, segment))
        starts, ends, segment = starts[order], ends[order], segment[order]
        types = (rng.integers(0, 18, n) * 10).astype(np.int32)
        begin = np.array([0, int(starts.max()) // 3], np.int64)
        finish = begin + int(ends.max())
        assert_sweep_as_defined(starts, ends, types, segment, begin, finish)


def test_step_sweep_rows_gathers_each_steps_events_from_the_columns():
    from profscope.models.formats.xspace import _steps

    rng = np.random.default_rng(12)
    for trial in range(200):
        steps, lines, n = int(rng.integers(1, 5)), int(rng.integers(1, 4)), int(rng.integers(0, 60))
        line = np.sort(rng.integers(0, lines, n)).astype(np.int32)
        line_ps = rng.integers(0, 30, lines).astype(np.int64)
        offset = rng.integers(0, 50, n).astype(np.int64)
        duration = rng.integers(0, 20, n).astype(np.int64)
        step = rng.integers(-1, steps, n).astype(np.int32)  # -1: in no step
        kind = rng.integers(-1, 18, n).astype(np.int8)  # -1: left out
        begin = rng.integers(0, 40, steps).astype(np.int64)
        finish = begin + rng.integers(0, 80, steps)
        if trial % 10 == 0:  # times too far apart for the radix keys: the merge sort
            far = 1 << 55
            offset, line_ps, begin, finish = offset * far, line_ps * far, begin * far, finish * far
        rows = np.flatnonzero(rng.random(n) < 0.8)
        got = _steps.step_sweep_rows(rows, line, offset, duration, line_ps, kind[rows], step[rows], begin, finish)
        half = steps // 2  # the steps in two calls: each the events of its own
        parts = [_steps.step_sweep_rows(rows, line, offset, duration, line_ps, kind[rows], step[rows], begin[a:b],
                                        finish[a:b], a) for a, b in ((0, half), (half, steps))]
        assert [np.concatenate(x).tolist() for x in zip(*parts)] == [g.tolist() for g in got]
        mine = rows[(kind[rows] >= 0) & (step[rows] >= 0)]
        mine = mine[np.argsort(step[mine], kind="stable")]
        start = line_ps[line[mine]] + offset[mine]
        want = _step_sweep_by_definition(start, start + duration[mine], kind[mine].astype(np.int32) * 10,
                                         step[mine].astype(np.int64), begin, finish)
        assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()


def _op_stack_by_definition(starts, ends, segment):
    """The op stack's rule in Python: per segment, begins and ends by (time, recorded order) drive a stack."""
    counted = np.zeros(len(starts), np.uint8)
    children = np.zeros(len(starts), np.int64)
    for seg in np.unique(segment).tolist():
        mine = np.flatnonzero(segment == seg).tolist()
        acts = sorted([(int(starts[i]), 2 * k, i) for k, i in enumerate(mine)]
                      + [(int(ends[i]), 2 * k + 1, i) for k, i in enumerate(mine)])
        stack: list[int] = []
        for _t, seq, i in acts:
            if not seq & 1:
                stack.append(i)
                continue
            while stack and stack[-1] != i:
                stack.pop()
            if not stack:
                continue
            stack.pop()
            counted[i] = 1
            if stack:
                children[stack[-1]] += int(ends[i]) - int(starts[i])
    return counted, children


def _op_metrics_by_definition(starts, ends, segment, code, eager, slot_of, typed, n):
    """op_metrics' documented sums in Python over the op stack's counted ops and children time."""
    counted, children = _op_stack_by_definition(starts, ends, segment)
    occ, time, own = [0] * n, [0] * n, [0] * n
    eager_of, first_seg, first_end, type_code = [0] * n, [-1] * n, [0] * n, [-1] * n
    for i in np.flatnonzero(counted).tolist():
        k, dur = int(slot_of[code[i]]), int(ends[i] - starts[i])
        occ[k], time[k], own[k] = occ[k] + 1, time[k] + dur, own[k] + dur - int(children[i])
        eager_of[k] |= int(eager[i])
        if first_seg[k] < 0:
            first_seg[k], first_end[k] = int(segment[i]), int(ends[i])
        elif first_seg[k] == segment[i]:
            first_end[k] = min(first_end[k], int(ends[i]))
    for i in sorted(np.flatnonzero(counted).tolist(), key=lambda i: (segment[i], ends[i], i), reverse=True):
        if typed[code[i]]:
            type_code[int(slot_of[code[i]])] = int(code[i])
    total = total_op = 0
    for seg in np.unique(segment).tolist():
        mine = segment == seg
        seg_self = int(((ends - starts - children) * counted)[mine].sum())
        total_op += seg_self
        total += max(seg_self, int(ends[mine].max() - starts[mine].min()))
    return occ, time, own, eager_of, first_seg, first_end, type_code, total, total_op


def test_op_metrics_follow_the_op_stack_rule():
    from types import SimpleNamespace

    from profscope.models.analysis.xprof import op_stats
    from profscope.models.formats.xspace import _steps

    rng = np.random.default_rng(5)
    for trial in range(300):
        num_events, lines = int(rng.integers(0, 60)), int(rng.integers(1, 4))
        line = np.sort(rng.integers(0, lines, num_events)).astype(np.int32)
        line_ps = rng.integers(0, 10, lines).astype(np.int64)
        offset = rng.integers(0, 40, num_events).astype(np.int64)
        duration = rng.integers(0, 15, num_events).astype(np.int64)
        if trial % 10 == 0:  # times far apart
            line_ps, offset, duration = line_ps << 52, offset << 52, duration << 52
        rows = np.flatnonzero(rng.random(num_events) < 0.8)
        n, codes = len(rows), int(rng.integers(1, 6))
        keys = rng.integers(-1, 8, n).astype(np.int32 if trial % 2 else np.int64)
        code_of_key = rng.integers(-1, codes, 6).astype(np.int32)  # keys 6 and 7: beyond the table, no op
        extra_at = np.sort(rng.choice(np.arange(n), int(rng.integers(0, n + 1)) if n else 0)) if n else np.zeros(0, int)
        extra_code = rng.integers(0, codes, len(extra_at)).astype(np.int32)  # some events with two or more
        eager_at = np.flatnonzero(rng.random(n) < 0.3)
        slots = int(rng.integers(1, codes + 1))
        slot_of = rng.integers(0, slots, codes).astype(np.int64)
        typed = (rng.random(codes) < 0.6).astype(np.uint8)
        table = code_of_key if trial % 3 else None
        given = keys if table is not None else np.where((keys >= 0) & (keys < 6), code_of_key[np.clip(keys, 0, 5)], -1)
        got = _steps.op_metrics(rows, given, table, extra_at, extra_code, eager_at, line, offset, duration, line_ps,
                                slot_of, typed, slots)
        inst = []  # (row position, code, eager): an event's own op, then its extra ones
        for p_ in range(n):
            k = int(keys[p_])
            if 0 <= k < 6 and code_of_key[k] >= 0:
                inst.append((p_, int(code_of_key[k]), int(p_ in eager_at)))
            inst += [(p_, int(c), 0) for c in extra_code[extra_at == p_]]
        at = np.array([i[0] for i in inst], np.int64)
        code = np.array([i[1] for i in inst], np.int32)
        eager = np.array([i[2] for i in inst], np.uint8)
        segment = line[rows[at]] if len(at) else np.zeros(0, np.int32)
        starts = line_ps[segment] + offset[rows[at]] if len(at) else np.zeros(0, np.int64)
        ends = starts + duration[rows[at]] if len(at) else np.zeros(0, np.int64)
        order = xprof_order(starts, ends, segment)  # each line in XProf's order
        if order is not None:
            starts, ends, segment, code, eager = starts[order], ends[order], segment[order], code[order], eager[order]
        want = _op_metrics_by_definition(starts, ends, segment, code, eager, slot_of, typed, slots)
        assert [g.tolist() for g in got[:7]] + list(got[7:]) == list(want)
        if trial % 10:  # op_stats' two halves of the lines (on two threads), summed: the same
            space = SimpleNamespace(events=SimpleNamespace(line=line, offset_ps=offset, duration_ps=duration),
                                    lines=[SimpleNamespace(timestamp_ns=int(t)) for t in line_ps],
                                    line_rows=np.searchsorted(line, np.arange(lines + 1)))
            halves = op_stats._op_metrics(space, rows, given, table, extra_at, extra_code, eager_at, slot_of, typed,
                                          slots)
            whole = _steps.op_metrics(rows, given, table, extra_at, extra_code, eager_at, line, offset, duration,
                                      line_ps * 1000, slot_of, typed, slots)
            assert [np.asarray(h).tolist() for h in halves] == [np.asarray(w).tolist() for w in whole]
    z32, z64 = np.zeros(2, np.int32), np.zeros(2, np.int64)
    with pytest.raises(ValueError, match="ascending"):
        _steps.op_metrics(np.array([1, 0]), z32, None, z64[:0], z32[:0], z64[:0], z32, z64, z64, np.zeros(1, np.int64),
                          np.zeros(1, np.int64), np.zeros(1, np.uint8), 1)
    with pytest.raises(ValueError, match="code out of range"):
        _steps.op_metrics(np.array([0, 1]), np.array([0, 5], np.int32), None, z64[:0], z32[:0], z64[:0], z32, z64, z64,
                          np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(1, np.uint8), 1)


@pytest.mark.parametrize("seed", range(3))
def test_strings_interned_while_decoding_are_those_read_after(tmp_path, seed):
    """Stats read in the decoding's pass have their str_values interned there; the string ids and table of any
    subset of their events are those of reading the strings from the file later."""
    from profscope.models.formats.xspace.xplane import read_xspace

    space = edge_case_space(seed)
    path = write(tmp_path, space)
    names = sorted({m.name for m in space.planes[0].stat_metadata.values()})
    kept = read_xspace(path, keep=("/host:CPU", names))
    later = read_xspace(path)
    rows = later.timed_rows(0)
    rng = random.Random(seed)
    for name in names:
        ours, theirs = kept.stats(rows, 0, [name])[name], later.stats(rows, 0, [name])[name]
        assert ours.text is not None and theirs.text is None
        for at in (np.arange(len(ours.rows)), np.array(sorted(rng.sample(range(len(ours.rows)), len(ours.rows) // 2)),
                                                        np.int64)):
            got, want = kept.string_codes(ours, at, 0), later.string_codes(theirs, at, 0)
            assert got[0].tolist() == want[0].tolist() and got[1] == want[1]


def test_a_stat_whose_later_metadata_id_is_asked_for_is_read_in_the_decoding_pass(tmp_path):
    """Two XStats merged into one (protobuf's rule for concatenated messages: the later metadata_id and value win)
    whose first metadata_id is not asked for: the stats read in the decoding's pass have it as the later id's,
    as protobuf parses it and as reading the stats afterwards does, whichever other stats are asked for."""
    from profscope.models.formats.xspace.xplane import read_xspace

    def field(number, payload):  # a length-delimited field around messages the real schema serialized
        tag, size = number << 3 | 2, len(payload)
        head = b""
        for v in (tag, size):
            while v >= 0x80:
                head, v = head + bytes([v & 0x7F | 0x80]), v >> 7
            head += bytes([v])
        return head + payload

    template = plane_with([("l", "op", 10, 5, {"shape": 9, "size": 7})])  # stat ids: shape 1, size 2
    plane, line, event = template.planes[0], template.planes[0].lines[0], template.planes[0].lines[0].events[0]
    merged = xplane_pb2.XStat(metadata_id=1, int64_value=9).SerializeToString() + event.stats[1].SerializeToString()
    for message in (event, line, plane):
        message.ClearField("stats" if message is event else "events" if message is line else "lines")
    data = field(1, plane.SerializeToString() + field(3, line.SerializeToString() + field(
        4, event.SerializeToString() + field(4, merged))))
    (stat,) = xplane_pb2.XSpace.FromString(data).planes[0].lines[0].events[0].stats
    assert (stat.metadata_id, stat.int64_value) == (2, 7)  # protobuf's reading: the oracle
    path = tmp_path / "merged.xplane.pb"
    path.write_bytes(data)
    for kept in (["size"], ["shape", "size"]):
        space = read_xspace(path, keep=("/host:CPU", kept))
        for read in (space, read_xspace(path)):
            columns = read.stats(read.timed_rows(0), 0, kept)
            assert columns["size"].rows.tolist() == [0] and columns["size"].ints_present().tolist() == [7]
            assert "shape" not in kept or columns["shape"].rows.tolist() == []
