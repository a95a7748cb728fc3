"""The memory model against XProf's own output for real TensorFlow profiles."""

import gzip
import json

import numpy as np
import pytest
from conftest import KERAS_XPROF, SMALL_XPROF
from google.protobuf import json_format

from profscope.models.core.task import ProfileError
from profscope.models.data.memory_profile import sample_timeline, to_xprof_json
from profscope.models.formats.memory_profile_file import load_memory_profile, parse_memory_profile
from profscope.protos import memory_profile_pb2

ALLOCATOR = "bfc_cpu_allocator_for_gpu"


def xprof_doc(path=SMALL_XPROF):
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def full_list_doc():
    """XProf's complete timeline (538 < 1,000 points) as an old-style file:
    every snapshot, no summary, no table, so Profscope must compute them."""
    al = xprof_doc()["memoryProfilePerAllocator"][ALLOCATOR]
    return {"memoryProfilePerAllocator": {ALLOCATOR: {"memoryProfileSnapshots": al["sampledTimelineSnapshots"]}},
            "numHosts": 1, "memoryIds": [ALLOCATOR]}


def table(rows):
    return [(rows.op[i], int(rows.allocation[i]), int(rows.requested[i]), int(rows.occurrences[i]),
             rows.region[i], rows.dtype[i], rows.shape[i], int(rows.step[i])) for i in range(len(rows))]


def test_reads_xprof_json_with_its_table_and_summary():
    p = load_memory_profile(SMALL_XPROF)
    a = p.allocators[ALLOCATOR]
    assert p.memory_ids == [ALLOCATOR] and p.version == 1
    assert len(a.timeline) == 538 and a.complete
    assert a.summary.peak_in_use == 3145728 and a.summary.peak_time_ps == 41266091000
    assert a.summary.memory_capacity == 68719476736
    assert a.summary.num_allocations == 275 and a.summary.num_deallocations == 263
    rows = table(a.peak_allocations)
    assert rows[0] == (
        "unused preallocated device memory",
        1476352,
        1476352,
        1,
        "persist/dynamic",
        "INVALID",
        "unknown",
        2,
    )
    assert rows[1] == ("gradient_tape/MatMul_1/MatMul", 489984, 393216, 1, "output", "float", "[192,512]", 2)
    assert len(rows) == 11 and a.peak_allocations.total_bytes == a.summary.peak_heap
    assert a.peak_index == 527 and a.timeline.time_ps[a.peak_index] == a.summary.peak_time_ps


def test_computes_xprofs_table_and_summary_from_the_full_snapshot_list():
    given = load_memory_profile(SMALL_XPROF).allocators[ALLOCATOR]
    computed = parse_memory_profile(json.dumps(full_list_doc()).encode()).allocators[ALLOCATOR]
    assert not computed.peak_rows_given
    assert table(computed.peak_allocations) == table(given.peak_allocations)
    assert computed.summary == given.summary


def test_export_of_full_list_in_xprof_form_equals_xprofs_output():
    xprof = xprof_doc()["memoryProfilePerAllocator"][ALLOCATOR]
    ours = to_xprof_json(parse_memory_profile(json.dumps(full_list_doc()).encode()), xprof_form=True)
    mine = ours["memoryProfilePerAllocator"][ALLOCATOR]
    for key in ("profileSummary", "activeAllocations", "specialAllocations", "sampledTimelineSnapshots"):
        assert mine[key] == xprof[key], key
    # Merged identical rows may be represented by another of their snapshots
    # (XProf sorts a hash map with an unstable sort); the rows themselves match.
    strip = lambda s: {k: v for k, v in s["activityMetadata"].items() if k != "address"}
    assert [strip(s) for s in mine["memoryProfileSnapshots"]] == [strip(s) for s in xprof["memoryProfileSnapshots"]]
    assert ours["version"] == 1 and ours["memoryIds"] == [ALLOCATOR]


def test_export_keeps_a_given_table_as_given():
    xprof = xprof_doc()
    ours = to_xprof_json(load_memory_profile(SMALL_XPROF))
    assert ours["memoryProfilePerAllocator"] == xprof["memoryProfilePerAllocator"]
    # and it is valid proto3 JSON of the schema
    json_format.ParseDict(ours, memory_profile_pb2.MemoryProfile())


def test_binary_protobuf_reads_the_same_as_json():
    msg = json_format.Parse(SMALL_XPROF.read_text(), memory_profile_pb2.MemoryProfile())
    from_pb = parse_memory_profile(msg.SerializeToString()).allocators[ALLOCATOR]
    from_json = load_memory_profile(SMALL_XPROF).allocators[ALLOCATOR]
    assert table(from_pb.peak_allocations) == table(from_json.peak_allocations)
    assert from_pb.summary == from_json.summary
    for column in ("time_ps", "heap", "stack", "free", "fragmentation", "address", "step", "activity"):
        np.testing.assert_array_equal(getattr(from_pb.timeline, column), getattr(from_json.timeline, column))
    assert [from_pb.timeline.metadata(i) for i in (0, 300)] == [from_json.timeline.metadata(i) for i in (0, 300)]


def test_sampled_timeline_is_marked_and_any_moment_is_refused():
    a = load_memory_profile(KERAS_XPROF).allocators[ALLOCATOR]
    assert len(a.timeline) == 1000 and not a.complete
    assert len(a.peak_allocations) == 1  # XProf's table: just the unmapped heap
    with pytest.raises(Exception, match="sampled"):
        a.allocations_at(10)


def test_allocations_at_a_moment():
    a = load_memory_profile(SMALL_XPROF).allocators[ALLOCATOR]
    tl = a.timeline
    for i in (0, 100, 283, 400, a.peak_index, len(tl) - 1):
        rows = a.allocations_at(i)
        # the table explains the whole heap at that moment, no size floor
        assert rows.total_bytes == tl.heap[i] + tl.stack[i]
    rows = a.allocations_at(300)
    listed = rows.snapshot[rows.snapshot >= 0]
    assert (listed <= 300).all()
    assert all(rows.freed[k] == -1 or rows.freed[k] > 300 for k in range(len(rows)))
    # an allocation's lifetime: allocated at 283 (AddV2), freed later
    assert a.freed_at(283) > 283 and tl.activity[a.freed_at(283)] == 2


def test_xprof_sampling_matches_max_box_filter():
    a = parse_memory_profile(json.dumps(full_list_doc()).encode()).allocators[ALLOCATOR]
    idx = sample_timeline(a.timeline, points=100)
    assert len(idx) == 100 and (np.diff(idx) > 0).all()
    in_use = a.timeline.in_use
    # 538 = 62 boxes of 5 + 38 boxes of 6; each kept point is its box's max
    assert in_use[idx[0]] == in_use[0:5].max() and in_use[idx[-1]] == in_use[532:538].max()


# ---------------------------------------------------------------- the JSON reader


def expected_from_json_loads(doc, memory_id):
    """A few values per allocator, read with json.loads and plain Python:
    what the streaming reader must give."""
    al = doc["memoryProfilePerAllocator"][memory_id]
    snaps = al.get("sampledTimelineSnapshots") or al["memoryProfileSnapshots"]
    stats = [s.get("aggregationStats", {}) for s in snaps]
    meta = [s.get("activityMetadata", {}) for s in snaps]
    return {
        "time_ps": [int(s["timeOffsetPs"]) for s in snaps],
        "heap": [int(a.get("heapAllocatedBytes", 0)) for a in stats],
        "fragmentation": [float(a.get("fragmentation", 0)) for a in stats],
        "address": [int(m.get("address", 0)) for m in meta],
        "activity": [m.get("memoryActivity", "UNKNOWN_ACTIVITY") for m in meta],
        "op": [m.get("tfOpName", "") for m in meta],
        "shape": [m.get("tensorShape", "") for m in meta],
        "stored": len(al["memoryProfileSnapshots"]),
        "capacity": int(al["profileSummary"]["memoryCapacity"]),
        "special": [m["tfOpName"] for m in al.get("specialAllocations", [])],
        "active": [
            (int(a["snapshotIndex"]), int(a["specialIndex"]), int(a["numOccurrences"])) for a in al["activeAllocations"]
        ],
    }


def read_values(profile, memory_id):
    a = profile.allocators[memory_id]
    tl, s = a.timeline, a.timeline.strings
    return {
        "time_ps": tl.time_ps.tolist(),
        "heap": tl.heap.tolist(),
        "fragmentation": tl.fragmentation.tolist(),
        "address": tl.address.tolist(),
        "activity": [tl.metadata(i)["activity"] for i in range(len(tl))],
        "op": [s[i] for i in tl.op],
        "shape": [s[i] for i in tl.shape],
        "stored": len(a.stored_snapshots),
        "capacity": a.summary.memory_capacity,
        "special": [m.op for m in a.special],
        "active": a.stored_rows,
    }


@pytest.mark.parametrize("path", [SMALL_XPROF, KERAS_XPROF], ids=["json", "json.gz"])
def test_json_reader_gives_what_json_loads_reads(path):
    doc = xprof_doc(path)
    p = load_memory_profile(path)
    assert p.memory_ids == sorted(doc["memoryProfilePerAllocator"]) and p.version == doc["version"] == 1
    for memory_id in p.memory_ids:
        assert read_values(p, memory_id) == expected_from_json_loads(doc, memory_id)
    # columns keep the types of the binary reader
    tl = p.allocators[ALLOCATOR].timeline
    assert (tl.time_ps.dtype, tl.address.dtype, tl.fragmentation.dtype, tl.op.dtype) == (
        np.int64,
        np.uint64,
        np.float64,
        np.int32,
    )


def test_gzipped_json_reads_as_the_plain_file(tmp_path):
    path = tmp_path / "h.memory_profile.json.gz"
    path.write_bytes(gzip.compress(SMALL_XPROF.read_bytes()))
    assert read_values(load_memory_profile(path), ALLOCATOR) == read_values(load_memory_profile(SMALL_XPROF), ALLOCATOR)


def test_snake_case_numbers_and_enum_numbers_read_as_camel_case_strings():
    msg = json_format.Parse(SMALL_XPROF.read_text(), memory_profile_pb2.MemoryProfile())
    # protobuf's own printer: proto field names (snake_case), int64 as strings
    snake = json_format.MessageToJson(msg, preserving_proto_field_name=True).encode()
    assert b'"memory_profile_snapshots"' in snake and b'"memoryProfileSnapshots"' not in snake
    # int64 as JSON numbers and the activity as its enum number
    doc = xprof_doc()

    def numbers(x, key=None):
        if isinstance(x, dict):
            return {k: numbers(v, k) for k, v in x.items()}
        if isinstance(x, list):
            return [numbers(v) for v in x]
        if key == "memoryActivity":
            return ["UNKNOWN_ACTIVITY", "ALLOCATION", "DEALLOCATION"].index(x)
        return int(x) if isinstance(x, str) and x.lstrip("-").isdigit() else x

    as_numbers = json.dumps(numbers(doc)).encode()
    assert b'"timeOffsetPs": 41266091000' in as_numbers and b'"memoryActivity": 1' in as_numbers
    want = read_values(load_memory_profile(SMALL_XPROF), ALLOCATOR)
    for data in (snake, as_numbers):
        p = parse_memory_profile(data)
        assert read_values(p, ALLOCATOR) == want
        assert p.allocators[ALLOCATOR].summary == load_memory_profile(SMALL_XPROF).allocators[ALLOCATOR].summary


def one_snapshot(metadata=None, stats=None, **extra):
    snap = {
        "timeOffsetPs": "5",
        "aggregationStats": stats or {"heapAllocatedBytes": "64"},
        "activityMetadata": metadata or {"memoryActivity": "ALLOCATION", "allocationBytes": "64", "tfOpName": "op"},
    }
    return {"memoryProfilePerAllocator": {"GPU_0_bfc": {"memoryProfileSnapshots": [snap], **extra}}}


def read_one(doc):
    data = doc if isinstance(doc, bytes) else json.dumps(doc).encode()
    return parse_memory_profile(data, source="p.json").allocators["GPU_0_bfc"].timeline


def test_escapes_in_op_names_read_as_json_loads_reads_them():
    text = (
        rb'{"memoryProfilePerAllocator": {"GPU_0_bfc": {"memoryProfileSnapshots": [{"timeOffsetPs": "1", '
        rb'"aggregationStats": {"heapAllocatedBytes": "8"}, "activityMetadata": {"memoryActivity": "ALLO\u0043ATION", '
        rb'"allocationBytes": "8", "tf\u004fpName": "Mat\u004dul/\"q\"\\\ud83d\ude00 \ud800 \u00e9\t", '
        rb'"regionType": "outp\u0075t"}}]}}}'
    )
    tl = read_one(text)
    want = json.loads(text)["memoryProfilePerAllocator"]["GPU_0_bfc"]["memoryProfileSnapshots"][0]["activityMetadata"]
    assert tl.strings[tl.op[0]] == want["tf\u004fpName"] == 'MatMul/"q"\\\U0001f600 \ud800 \u00e9\t'
    assert tl.strings[tl.region[0]] == "output" and tl.activity[0] == 1


def test_unknown_fields_are_skipped_and_null_is_the_default():
    tl = read_one(
        one_snapshot(
            metadata={
                "memoryActivity": "ALLOCATION",
                "allocationBytes": "64",
                "tfOpName": None,
                "futureField": {"deep": [[1, {"x": "y"}], None]},
                "stepId": None,
            },
            stats={"heapAllocatedBytes": "64", "fragmentation": None},
            hloModules=[{"name": "m"}],
        )
    )
    assert (tl.strings[tl.op[0]], int(tl.step[0]), float(tl.fragmentation[0]), int(tl.heap[0])) == ("", 0, 0.0, 64)


def test_numbers_as_json_loads_and_proto3_json_give_them():
    tl = read_one(
        one_snapshot(
            stats={
                "heapAllocatedBytes": 64.9,
                "stackReservedBytes": "-0",
                "fragmentation": "NaN",
                "freeMemoryBytes": "+12",
                "peakBytesInUse": 1e3,
            },
            metadata={
                "memoryActivity": "2",
                "address": "18446744073709551615",
                "allocationBytes": "007",
                "stepId": "-9223372036854775808",
            },
        )
    )
    assert (int(tl.heap[0]), int(tl.stack[0]), int(tl.free[0]), int(tl.peak_in_use[0])) == (64, 0, 12, 1000)
    assert int(tl.step[0]) == -(2**63)
    assert np.isnan(tl.fragmentation[0]) and int(tl.address[0]) == 2**64 - 1
    assert int(tl.activity[0]) == 2 and int(tl.allocation[0]) == 7


@pytest.mark.parametrize(
    "doc,message",
    [
        (
            one_snapshot(stats={"heapAllocatedBytes": True}),
            r'\["GPU_0_bfc"\]\.memoryProfileSnapshots\[0\]\.aggregationStats\.heapAllocatedBytes: '
            r"expected a number, got a boolean "
            r"\(line 1, column \d+ \(byte \d+\)\)$",
        ),
        (one_snapshot(metadata={"memoryActivity": "EATING"}), r".*memoryActivity: unknown memory activity 'EATING'"),
        (
            one_snapshot(metadata={"requestedBytes": 2**63}),
            r".*requestedBytes: the number is out of range for int64: 9223372036854775808",
        ),
        (one_snapshot(metadata={"address": -1}), r".*address: the number is out of range for uint64: -1"),
        (one_snapshot(stats={"freeMemoryBytes": float("nan")}), r".*freeMemoryBytes: expected an integer, got NaN"),
        (one_snapshot(metadata={"tfOpName": 5}), r".*tfOpName: expected text, got a number"),
        (one_snapshot(metadata={"stepId": "12a"}), r".*stepId: expected an integer, got the text '12a'"),
        (
            one_snapshot(sampledTimelineSnapshots={"a": 1}),
            r".*sampledTimelineSnapshots: expected a list of snapshots, got an object",
        ),
        (
            {"memoryProfilePerAllocator": [1]},
            r": expected an object \(memory id: PerAllocatorMemoryProfile\), got a list",
        ),
    ],
)
def test_wrong_types_and_ranges_name_the_field(doc, message):
    with pytest.raises(ProfileError, match=r"^p\.json: not a valid MemoryProfile: memoryProfilePerAllocator" + message):
        read_one(doc)


def test_a_field_given_twice_is_refused_as_protobuf_refuses_it():
    # json.loads would keep the last; protobuf's JSON parser refuses repeated keys
    for text in (
        b'{"memoryProfilePerAllocator": {"a": {}, "a": {}}}',
        b'{"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": '
        b'[{"timeOffsetPs": "1", "time_offset_ps": "2"}]}}}',
    ):
        with pytest.raises(ProfileError, match="given twice"):
            parse_memory_profile(text)


def test_truncated_json_is_a_clear_message():
    text = SMALL_XPROF.read_bytes()
    for cut in (1, 100, len(text) // 2, len(text) - 1):
        with pytest.raises(
            ProfileError,
            match=r"^x\.json: invalid JSON \(the document ends early at line 1, column "
            r"\d+ \(byte \d+\)\); the file may be truncated$",
        ):
            parse_memory_profile(text[:cut], source="x.json")
    # a wrong value before the cut: the document is judged whole first, as json.loads did
    bad = json.dumps(one_snapshot(stats={"heapAllocatedBytes": True})).encode()
    with pytest.raises(ProfileError, match="invalid JSON"):
        parse_memory_profile(bad[:-2])


def test_deep_nesting_is_refused_with_the_limit_and_how_to_raise_it(monkeypatch):
    deep = b'{"memoryProfilePerAllocator": {"a": {"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}}"
    # levels 1-3 are the profile, the map and the allocator: the 98th bracket (byte 42 + 97) is level 101
    with pytest.raises(
        ProfileError,
        match=r"JSON at line 1, column 140 \(byte 139\) \(a MemoryProfile needs 6 levels\): "
        r"nested more than 100 levels deep.*PROFSCOPE_MAX_NESTING \(now 100\)",
    ):
        parse_memory_profile(deep)
    # raised: the skipper's stack is on the heap, so even 100,000 levels read (no RecursionError)
    monkeypatch.setenv("PROFSCOPE_MAX_NESTING", "200000")
    with pytest.raises(ProfileError, match="no allocator with memory activity"):
        parse_memory_profile(deep)
    # below what a MemoryProfile needs, a real file is refused with the same message
    monkeypatch.setenv("PROFSCOPE_MAX_NESTING", "5")
    with pytest.raises(ProfileError, match=r"more than 5 levels .*\(now 5\)"):
        load_memory_profile(SMALL_XPROF)
