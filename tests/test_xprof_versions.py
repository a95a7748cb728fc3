"""XProf's memory_profile output in every shape XProf writes (version 1 with
the referenced and the sampled lists, older files with the full list, with or
without `version`), opened with what the file says and exported as given."""

import copy
import gzip
import json

import numpy as np
import pytest
from conftest import DATA, KERAS_XPROF, SMALL_XPROF
from google.protobuf import json_format

from profscope.models.core.task import ProfileError
from profscope.models.data.memory_profile import to_xprof_json
from profscope.models.formats.memory_profile_file import load_memory_profile, parse_memory_profile
from profscope.protos import memory_profile_pb2

XPROF = DATA / "xprof"
# Every memory_profile output of a real XProf in tests/data/xprof (see its README).
REAL = [SMALL_XPROF, KERAS_XPROF] + sorted(XPROF.glob("*.xprof-*.memory_profile.json*"))


def read_doc(path):
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def normal(doc):
    """The document as proto3 JSON with every field printed: a missing list
    and an empty one are the same MemoryProfile."""
    msg = json_format.ParseDict(doc, memory_profile_pb2.MemoryProfile())
    return json_format.MessageToDict(msg, always_print_fields_with_no_presence=True)


def file_table(al):
    """The table at the peak as XProf's own view lists it: a row per active
    allocation whose reference finds its metadata, others left out."""
    rows = []
    for row in al.get("activeAllocations", []):
        index, special = int(row.get("snapshotIndex", 0)), int(row.get("specialIndex", 0))
        snapshots, specials = al.get("memoryProfileSnapshots", []), al.get("specialAllocations", [])
        if index >= 0:
            if index >= len(snapshots):
                continue
            m = snapshots[index]["activityMetadata"]
        elif 0 <= special < len(specials):
            m = specials[special]
        else:
            continue
        rows.append((m["tfOpName"], int(m["allocationBytes"]), int(m["requestedBytes"]),
                     int(row["numOccurrences"]), m["regionType"], m["dataType"], m["tensorShape"]))
    return rows


def view_table(rows):
    return [(rows.op[i], int(rows.allocation[i]), int(rows.requested[i]), int(rows.occurrences[i]),
             rows.region[i], rows.dtype[i], rows.shape[i]) for i in range(len(rows))]


def assert_opens_as_the_file_says(doc, profile):
    for memory_id, al in doc["memoryProfilePerAllocator"].items():
        a = profile.allocators[memory_id]
        timeline = al.get("sampledTimelineSnapshots") or al.get("memoryProfileSnapshots", [])
        assert len(a.timeline) == len(timeline)
        times = sorted(int(s["timeOffsetPs"]) for s in timeline)
        assert a.timeline.time_ps.tolist() == times
        peak = al["profileSummary"]
        assert a.summary.peak_time_ps == int(peak["peakStatsTimePs"])
        assert a.summary.peak_in_use == int(peak["peakStats"]["peakBytesInUse"])
        assert a.summary.memory_capacity == int(peak["memoryCapacity"])
        assert view_table(a.peak_allocations) == file_table(al)


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.name)
def test_real_xprof_output_opens_and_exports_as_given(path):
    doc = read_doc(path)
    profile = load_memory_profile(path)
    assert_opens_as_the_file_says(doc, profile)
    assert all(not a.notes for a in profile.allocators.values()) and not profile.problems
    for form in (False, True):
        ours = to_xprof_json(profile, xprof_form=form)
        # XProf 2.20.0 wrote no hloModules: proto3 JSON's empty list.
        assert ours == doc if "hloModules" in doc else normal(ours) == normal(doc)


def test_xprof_before_hlo_modules_reads_as_xprof_2_24():
    old = load_memory_profile(XPROF / "keras.xprof-2.20.0.memory_profile.json.gz")
    new = load_memory_profile(KERAS_XPROF)
    assert "hloModules" not in read_doc(XPROF / "keras.xprof-2.20.0.memory_profile.json.gz")
    assert to_xprof_json(old)["memoryProfilePerAllocator"] == to_xprof_json(new)["memoryProfilePerAllocator"]


def variants(doc):
    """The shapes a MemoryProfile takes across XProf and TensorFlow versions,
    made from a real file by removing what those versions did not write."""
    def edit(fn):
        d = copy.deepcopy(doc)
        for al in d["memoryProfilePerAllocator"].values():
            fn(al)
        return d

    no_version = copy.deepcopy(doc)
    no_version.pop("version", None)
    no_hlo = copy.deepcopy(doc)
    no_hlo.pop("hloModules", None)
    return {
        "as written": doc,
        "without version": no_version,
        "without hloModules (XProf before 2026)": no_hlo,
        "sampled list only": edit(lambda al: al.pop("memoryProfileSnapshots")),
        "sampled list only, table of specials": edit(
            lambda al: (al.pop("memoryProfileSnapshots"),
                        al.update(activeAllocations=[r for r in al["activeAllocations"]
                                                     if int(r["snapshotIndex"]) < 0]))),
        "no specialAllocations": edit(lambda al: al.pop("specialAllocations")),
    }


@pytest.mark.parametrize("path", [SMALL_XPROF, KERAS_XPROF], ids=lambda p: p.name)
@pytest.mark.parametrize("shape", list(variants({"memoryProfilePerAllocator": {}})))
def test_every_shape_opens_as_the_file_says_and_exports_what_it_holds(path, shape):
    doc = variants(read_doc(path))[shape]
    profile = parse_memory_profile(json.dumps(doc).encode())
    assert_opens_as_the_file_says(doc, profile)
    for form in (False, True):
        assert normal(to_xprof_json(profile, xprof_form=form)) == normal(doc)


def test_sampled_only_file_of_the_issue_opens_with_a_note_on_the_rows_it_cannot_show():
    doc = read_doc(SMALL_XPROF)
    al = doc["memoryProfilePerAllocator"]["bfc_cpu_allocator_for_gpu"]
    del al["memoryProfileSnapshots"]
    a = parse_memory_profile(json.dumps(doc).encode()).allocators["bfc_cpu_allocator_for_gpu"]
    assert len(a.timeline) == 538 and a.summary.peak_in_use == 3145728
    # XProf's snapshotIndex indexes memoryProfileSnapshots, never the sampled
    # list: with none, only the special row can be shown, as XProf shows it.
    assert view_table(a.peak_allocations) == [
        ("unused preallocated device memory", 1476352, 1476352, 1, "persist/dynamic", "INVALID", "unknown")]
    assert a.notes == ["10 of the 11 rows of the file's table at the peak refer to entries of memoryProfileSnapshots "
                       "it does not hold (index 0, 1, 2, 3, 4, ...; it holds 0); they are left out, as XProf's own "
                       "view leaves them out."]


def test_version_1_timeline_is_the_sample_even_when_more_snapshots_are_referenced():
    # More than 1,000 allocations alive at the peak: XProf keeps them all in
    # memoryProfileSnapshots and still draws the 1,000 sampled points.
    doc = read_doc(KERAS_XPROF)
    al = doc["memoryProfilePerAllocator"]["bfc_cpu_allocator_for_gpu"]
    referenced = [s for s in al["sampledTimelineSnapshots"] if s["activityMetadata"]["memoryActivity"] == "ALLOCATION"]
    referenced = (referenced * 3)[:1200]
    al["memoryProfileSnapshots"] = referenced
    al["activeAllocations"] += [{"snapshotIndex": str(i), "specialIndex": "-1", "numOccurrences": "1"}
                                for i in range(len(referenced))]
    profile = parse_memory_profile(json.dumps(doc).encode())
    a = profile.allocators["bfc_cpu_allocator_for_gpu"]
    assert len(a.timeline) == 1000 and len(a.peak_allocations) == 1201
    assert_opens_as_the_file_says(doc, profile)
    assert to_xprof_json(profile, xprof_form=True) == doc


def test_indices_past_every_list_are_named_and_other_allocators_still_open():
    doc = read_doc(SMALL_XPROF)
    good = doc["memoryProfilePerAllocator"]["bfc_cpu_allocator_for_gpu"]
    bad = copy.deepcopy(good)
    bad["activeAllocations"][1]["snapshotIndex"] = "5000"
    bad["activeAllocations"][0]["specialIndex"] = "7"
    doc["memoryProfilePerAllocator"]["GPU_0_bfc"] = bad
    doc["memoryIds"] = ["GPU_0_bfc", "bfc_cpu_allocator_for_gpu"]
    profile = parse_memory_profile(json.dumps(doc).encode())
    assert profile.memory_ids == ["GPU_0_bfc", "bfc_cpu_allocator_for_gpu"]
    assert not profile.allocators["bfc_cpu_allocator_for_gpu"].notes
    assert len(profile.allocators["bfc_cpu_allocator_for_gpu"].peak_allocations) == 11
    a = profile.allocators["GPU_0_bfc"]
    assert len(a.peak_allocations) == 9
    assert [n.split(" (")[1].split(";")[0] for n in a.notes] == ["index 5000", "index 7"]
    assert "memoryProfileSnapshots it does not hold" in a.notes[0] and "it holds 10" in a.notes[0]
    assert "specialAllocations it does not hold" in a.notes[1] and "it holds 1)" in a.notes[1]
    assert normal(to_xprof_json(profile)) == normal(doc)


def test_an_allocator_that_cannot_be_memory_snapshots_is_named_and_the_others_open():
    doc = read_doc(SMALL_XPROF)
    bad = copy.deepcopy(doc["memoryProfilePerAllocator"]["bfc_cpu_allocator_for_gpu"])
    bad["sampledTimelineSnapshots"][3]["timeOffsetPs"] = "-5"
    doc["memoryProfilePerAllocator"]["GPU_0_bfc"] = bad
    profile = parse_memory_profile(json.dumps(doc).encode(), source="two.json")
    assert profile.memory_ids == ["bfc_cpu_allocator_for_gpu"]
    assert profile.problems == ["two.json: allocator 'GPU_0_bfc': values out of range for memory snapshots; is it "
                                "another kind of protobuf?; the other allocators are shown."]
    del doc["memoryProfilePerAllocator"]["bfc_cpu_allocator_for_gpu"]
    with pytest.raises(ProfileError, match=r"^two.json: allocator 'GPU_0_bfc': values out of range"):
        parse_memory_profile(json.dumps(doc).encode(), source="two.json")


def test_binary_sampled_only_file_reads_as_the_json():
    doc = read_doc(SMALL_XPROF)
    del doc["memoryProfilePerAllocator"]["bfc_cpu_allocator_for_gpu"]["memoryProfileSnapshots"]
    msg = json_format.ParseDict(doc, memory_profile_pb2.MemoryProfile())
    from_pb = parse_memory_profile(msg.SerializeToString()).allocators["bfc_cpu_allocator_for_gpu"]
    from_json = parse_memory_profile(json.dumps(doc).encode()).allocators["bfc_cpu_allocator_for_gpu"]
    assert view_table(from_pb.peak_allocations) == view_table(from_json.peak_allocations)
    assert from_pb.notes == from_json.notes
    np.testing.assert_array_equal(from_pb.timeline.time_ps, from_json.timeline.time_ps)


def test_xprof_output_without_memory_events_is_a_clear_message():
    # XProf 2.24.2 on a JAX profile (JAX records no memory events).
    with pytest.raises(ProfileError, match="no allocator with memory activity"):
        load_memory_profile(XPROF / "jax.memory_profile.json")
