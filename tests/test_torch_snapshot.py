"""PyTorch CUDA memory snapshots (pickled, read without the unpickler) as memory profiles, checked against
the numbers torch's own _memory_viz helpers gave for the same files (expected.json, from the producer)."""

import json
import pickle
import shutil

import numpy as np
import pytest
from conftest import DATA

from profscope.models.core.safe_pickle import loads
from profscope.models.core.task import ProfileError
from profscope.models.formats.torch_snapshot import is_torch_snapshot, load_torch_snapshot, top_frame
from profscope.models.repository.locations import open_repository
from profscope.models.sql.database import ProfileDatabase
from profscope.viewer.cli import main

FOLDER = DATA / "torch_snapshot"
TYPED = FOLDER / "typed_snapshot.pickle"
PROFILE = FOLDER / "profile_snapshot.pickle"
RING = FOLDER / "ring_snapshot.pickle"  # a ring buffer that overflowed: the trace starts mid-way
EXPECTED = json.loads((FOLDER / "expected.json").read_text())


@pytest.mark.parametrize("path", [TYPED, PROFILE, RING])
def test_timelines_match_torchs_numbers(path):
    profile = load_torch_snapshot(path)
    expected = EXPECTED[path.name]
    assert profile.memory_ids == sorted(expected)
    for memory_id, want in expected.items():
        a = profile.allocators[memory_id]
        tl, timeline = a.timeline, want["timeline"]
        initial = len(tl) - timeline["actions"] - want["reserved_timeline"]["segment_events"]
        assert initial >= 0 and (tl.heap[initial - 1] if initial else 0) == timeline["initial"]
        assert (a.summary.peak_heap, int(tl.heap[-1])) == (timeline["peak"], timeline["final"])
        assert a.summary.memory_capacity == want["reserved"]
        assert int((tl.activity[initial:] == 1).sum()) == want["actions"].get("alloc", 0)
        assert a.summary.num_allocations + a.summary.num_deallocations + want["reserved_timeline"][
            "segment_events"] == len(tl)
        # The table at the peak holds exactly the bytes alive then, each allocation once.
        assert a.peak_allocations.total_bytes == timeline["peak"]
        assert "stack" not in a.peak_allocations.op
        assert np.all(np.diff(tl.time_ps) >= 0)


@pytest.mark.parametrize("path", [TYPED, PROFILE, RING])
def test_reserved_over_time_matches_a_replay_of_the_segment_events(path):
    for memory_id, want in EXPECTED[path.name].items():
        tl = load_torch_snapshot(path).allocators[memory_id].timeline
        reserved = tl.heap + tl.free  # the reserved part drawn above what is allocated
        initial = len(tl) - want["timeline"]["actions"] - want["reserved_timeline"]["segment_events"]
        # (drawn: never under what is allocated, as memory allocated before recording may pass what was reserved)
        assert np.all(reserved[:initial] == np.maximum(want["reserved_timeline"]["before_first"], tl.heap[:initial]))
        runs = want["reserved_timeline"]["rows"]
        assert reserved[initial:].tolist() == [v for v, count in runs for _ in range(count)]
        assert reserved[-1] == want["reserved"] and np.all(tl.free >= 0)


def test_segment_events_have_rows_so_every_reserved_peak_is_drawn():
    plain = loads(TYPED.read_bytes())
    sign = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
    for device, memory_id in enumerate(("cuda:0", "cuda:1")):
        trace = plain["device_traces"][device]
        # reserved when recording began: the snapshot's segments less what the trace changed; then event by event
        reserved = sum(s["total_size"] for s in plain["segments"] if s["device"] == device) - sum(
            sign.get(e["action"], 0) * e["size"] for e in trace)
        peak = reserved
        for e in trace:
            reserved += sign.get(e["action"], 0) * e["size"]
            peak = max(peak, reserved)
        a = load_torch_snapshot(TYPED).allocators[memory_id]
        tl = a.timeline
        assert int((tl.heap + tl.free).max()) == peak
        segment_rows = np.flatnonzero(tl.activity == 3)  # RESERVATION: reserved changes, the heap does not
        assert [tl.strings[tl.region[i]] for i in segment_rows] == [e["action"] for e in trace if e["action"] in sign]
        assert np.all(tl.heap[segment_rows] == np.r_[0, tl.heap][segment_rows])
        # the table at a segment row is the one of the row before it
        for i in segment_rows[segment_rows > 0].tolist():
            assert a.allocations_at(i).total_bytes == a.allocations_at(i - 1).total_bytes
    # cuda:1 reaches its peak only between two allocation rows: a segment reserved and released at once
    tl = load_torch_snapshot(TYPED).allocators["cuda:1"].timeline
    top = int(np.argmax(tl.heap + tl.free))
    assert tl.strings[tl.region[top]] == "segment_alloc" and tl.strings[tl.region[top + 1]] == "segment_free"


def test_what_is_alive_at_the_end_is_the_snapshots_active_blocks():
    (a,) = load_torch_snapshot(PROFILE).allocators.values()
    want = EXPECTED[PROFILE.name]["cuda:0"]
    # _profile_to_snapshot sizes blocks by what was asked: the end of the timeline is segsum's total_allocated.
    assert a.allocations_at(len(a.timeline) - 1).total_bytes == want["allocated_requested"]
    assert want["allocated_requested"] == want["memory_lines_by_state"]["active_allocated"]


def test_typed_snapshot_details():
    profile = load_torch_snapshot(TYPED)
    a = profile.allocators["cuda:0"]
    ops = dict(zip(a.peak_allocations.region, a.peak_allocations.op))
    assert ops["allocated before recording (in the snapshot)"] == "/work/train.py:10:step"  # the private pool's block
    assert any("Out of memory: 67,108,864 bytes requested" in n for n in a.notes)
    # the record_stream free (free_requested, other events, then free_completed) frees at its free_completed
    regions = [a.timeline.strings[i] for i in a.timeline.region]
    assert regions.count("free_completed") == 1 and regions.count("free") == 3


def test_out_of_memory_is_marked_on_the_timeline_with_the_free_bytes(qtbot):
    from profscope.widgets.memory.plot import MemoryPlot

    a = load_torch_snapshot(TYPED).allocators["cuda:0"]
    ((at, label),) = a.markers
    assert label == "OOM: 64 MiB requested, 3 MiB free"
    # the oom falls between the rows of the events recorded before and after it
    trace = loads(TYPED.read_bytes())["device_traces"][0]
    k = [e["action"] for e in trace].index("oom")
    before = sum(e["action"] in ("alloc", "free_completed", "segment_alloc", "segment_free", "segment_map",
                                 "segment_unmap") for e in trace[:k])
    times = a.timeline.time_ps[a.timeline.time_ps > 0]
    assert times[before - 1] < at < times[before]
    plot = MemoryPlot()
    qtbot.addWidget(plot)
    plot.set_profile(a)
    assert [(m.value(), m.label.toPlainText()) for m in plot.marker_items] == [(at, label)]
    plot.set_profile(load_torch_snapshot(PROFILE).allocators["cuda:0"])
    assert plot.marker_items == []


@pytest.mark.parametrize("path", [TYPED, PROFILE, RING])
def test_sql_segments_frames_and_top_frames(path):
    db = ProfileDatabase.open(path)
    q = lambda sql: db.query(sql).table.to_pylist()
    for memory_id, want in EXPECTED[path.name].items():
        (row,) = q(f"SELECT count(*) AS n, sum(total_bytes) AS total, sum(allocated_bytes) AS allocated, "
                   f"sum(requested_bytes) AS requested FROM segments WHERE allocator = '{memory_id}'")
        assert (row["total"], row["allocated"]) == (want["reserved"], want["active_block_bytes"])
        assert row["requested"] == want["allocated_requested"]
        # an allocation's top frame is one of its frames (profile_snapshot's frames: only a name)
        (row,) = q(f"SELECT count(top_frame) AS top, count(*) FILTER (WHERE EXISTS (SELECT 1 FROM frames f WHERE "
                   "f.allocator = a.allocator AND f.allocation = a.snapshot AND a.top_frame = CASE WHEN f.filename IN "
                   "('', 'none') THEN f.name ELSE f.filename || ':' || f.line || ':' || f.name END)) AS found "
                   f"FROM allocations a WHERE allocator = '{memory_id}' AND region = 'alloc'")
        assert row["top"] == row["found"] > 0
    if path == TYPED:
        assert q("SELECT count(top_frame) AS n FROM allocations WHERE region = 'alloc'") == [{"n": 7}]
        assert q("SELECT pool_id FROM segments WHERE pool_id <> '0,0'") == [{"pool_id": "1,3"}]
        # the allocation seen freed before recording has no frames: no top frame
        assert q("SELECT top_frame FROM allocations WHERE region LIKE '%(freed)'") == [{"top_frame": None}]
        assert q("SELECT max(depth) AS d, count(DISTINCT allocation) AS n FROM frames WHERE allocator = 'cuda:1'") == [
            {"d": 2, "n": 2}]
    db.close()


def test_top_frame_follows_pytorchs_filter():
    frames = [{"filename": "Python/ceval.c", "line": 1, "name": "_PyEval_EvalFrameDefault"},
              {"filename": "c10/cuda/CUDACachingAllocator.cpp", "line": 9, "name": "malloc"},
              {"filename": "/m/model.py", "line": 7, "name": "forward"}]
    assert top_frame(frames) == "/m/model.py:7:forward"
    assert top_frame(frames[:2]) == "c10/cuda/CUDACachingAllocator.cpp:9:malloc"
    assert top_frame([]) == top_frame(frames[:1]) == "<block was allocated before _record_history was enabled>"


def test_recognised_by_content_under_any_name(tmp_path, capsys):
    folder = tmp_path / "run"
    folder.mkdir()
    shutil.copy(TYPED, folder / "memory.bin")
    shutil.copy(PROFILE, folder / "rank0_snapshot.pickle")
    (folder / "other.pickle").write_bytes(pickle.dumps({"weights": [1.0]}, protocol=4))
    assert main(["sessions", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    (session,) = out["sessions"]
    assert session["hosts"] == ["memory.bin", "rank0_snapshot"] and "memory_profile" in session["availableTools"]
    for protocol in (2, 3, 5):
        assert is_torch_snapshot(pickle.dumps({"segments": [], "device_traces": []}, protocol=protocol))
        assert is_torch_snapshot(pickle.dumps({"device_traces": []}, protocol=protocol))
        assert not is_torch_snapshot(pickle.dumps({"segment": []}, protocol=protocol))
    out_file = tmp_path / "memory.json"
    assert main(["export", str(folder / "memory.bin"), "--tool", "memory_profile", "-o", str(out_file)]) == 0
    doc = json.loads(out_file.read_text())
    assert doc["memoryIds"] == ["cuda:0", "cuda:1"]
    peak = doc["memoryProfilePerAllocator"]["cuda:0"]["profileSummary"]["peakStats"]["heapAllocatedBytes"]
    assert int(peak) == EXPECTED[TYPED.name]["cuda:0"]["timeline"]["peak"]
    assert len(open_repository(folder / "rank0_snapshot.pickle").enum_sessions()) == 1


class Runs:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return open, (self.path, "w")


def test_a_snapshot_that_would_run_code_is_refused_and_nothing_runs(tmp_path, capsys):
    sentinel = tmp_path / "ran"
    path = tmp_path / "evil.pickle"
    path.write_bytes(pickle.dumps({"segments": [], "device_traces": [[Runs(str(sentinel))]]}, protocol=4))
    assert is_torch_snapshot(path.read_bytes()[:256])
    with pytest.raises(ProfileError, match=r"opcode STACK_GLOBAL at offset \d+ would import or call code"):
        load_torch_snapshot(path)
    assert main(["export", str(path), "--tool", "memory_profile", "-o", str(tmp_path / "o.json")]) == 1
    assert "STACK_GLOBAL" in capsys.readouterr().err
    assert not sentinel.exists()
