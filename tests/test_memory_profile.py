"""The memory model against XProf's own output for real TensorFlow profiles."""

import gzip
import json

import numpy as np
import pytest

from conftest import KERAS_XPROF, SMALL_XPROF
from models.formats.memory_profile_file import load_memory_profile, parse_memory_profile
from models.memory_profile import sample_timeline, to_xprof_json
from protos import memory_profile_pb2
from google.protobuf import json_format

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
    assert rows[0] == ("unused preallocated device memory", 1476352, 1476352, 1, "persist/dynamic", "INVALID", "unknown", 2)
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
