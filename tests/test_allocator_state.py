"""The allocator's state at each event of a CUDA memory snapshot (Allocator State History) and the cached segment
timeline, checked against MemoryViz.js's replay rules and torch's own _memory_viz helpers
(tests/data/torch_snapshot/allocator_state_expected.json, written by producers/allocator_state_expected.py)."""

import json

import numpy as np
import pytest
from conftest import DATA

from profscope.models.analysis.allocator_state import AWAITING_FREE, build_history, prepare_histories
from profscope.models.core.safe_pickle import loads
from profscope.models.data.cuda_snapshot import from_plain

FOLDER = DATA / "torch_snapshot"
EXPECTED = json.loads((FOLDER / "allocator_state_expected.json").read_text())
FILES = sorted(EXPECTED)
MiB = 1 << 20


def snapshot(name):
    return from_plain(loads((FOLDER / name).read_bytes(), name))


def drawn(state):
    """What MemoryViz draws: segments [address, size], blocks [address, size, requested, awaiting free]."""
    segments = [[int(a), int(s)] for a, s in zip(state.seg_address, state.seg_size)]
    blocks = sorted([int(a), int(s), int(r), bool(w)] for a, s, r, w in
                    zip(state.address, state.size, state.requested, state.state == AWAITING_FREE))
    return segments, blocks


@pytest.mark.parametrize("name", FILES)
def test_every_event_shows_what_memoryviz_draws(name):
    snap = snapshot(name)
    for memory_id, want in EXPECTED[name].items():
        history = build_history(snap, int(memory_id.removeprefix("cuda:")))
        assert len(history) == len(want["history"]) and not history.notes
        for k, w in enumerate(want["history"]):
            segments, blocks = drawn(history.state(k))
            if isinstance(w, dict):
                assert history.event(k)["action"] == w["action"]
                assert (segments, blocks) == (w["segments"], [[a, s, r, bool(f)] for a, s, r, f in w["blocks"]]), k
            else:  # counts and byte sums: segments, reserved, blocks, allocated (requested), awaiting free
                assert [len(segments), sum(s for _, s in segments), len(blocks), sum(b[2] for b in blocks),
                        sum(b[3] for b in blocks)] == w, k


def _format_size(n: float) -> str:
    for unit in ("", "Ki", "Mi", "Gi", "Ti"):
        if abs(n) < 1024.0:
            return f"{n:3.1f}{unit}B"
        n /= 1024.0
    return f"{n:.1f}PiB"


@pytest.mark.parametrize("name", FILES)
def test_the_last_event_is_the_snapshot_as_torchs_segsum_and_segments_read_it(name):
    snap = snapshot(name)
    for memory_id, want in EXPECTED[name].items():
        history = build_history(snap, int(memory_id.removeprefix("cuda:")))
        s = history.state(len(history) - 1)
        final = want["final"]
        assert sorted(map(int, final["total_size"])) == s.seg_address.tolist()
        for i, address in enumerate(s.seg_address.tolist()):
            by_state = final["segments"][str(address)]
            assert int(s.seg_size[i]) == final["total_size"][str(address)]
            assert int(s.seg_allocated[i]) == by_state.get("active_allocated", 0)
            assert int(s.seg_awaiting[i]) == by_state.get("active_awaiting_free", 0)
            assert int(s.seg_internal[i]) == by_state.get("active_allocated;<gaps>", 0) + by_state.get(
                "active_awaiting_free;<gaps>", 0)
            assert int(s.seg_free[i]) == by_state.get("inactive", 0) + by_state.get("inactive;<gaps>", 0)
        t = s.totals()
        free = t["reserved"] - t["allocated"]  # segsum: everything but allocated blocks' requested bytes
        assert final["segsum"] == [
            f"segments: {t['segments']}", f"total_reserved: {_format_size(t['reserved'])}",
            f"total_allocated: {_format_size(t['allocated'])}",
            f"total_free: {_format_size(free)} ({t['internal'] / free * 100 if free else 0:.1f}% internal)"
            if free else f"total_free: {_format_size(0)}"]


def test_expandable_segment_grows_and_shrinks_with_map_and_unmap():
    history = build_history(snapshot("expandable_snapshot.pickle"), 0)
    actions = [history.event(k)["action"] for k in range(len(history))]
    assert actions == ["segment_map", "alloc", "segment_map", "alloc", "alloc", "oom", "segment_map", "alloc",
                       "free", "segment_unmap", "free_requested", "alloc", "snapshot"]
    E = 0x7F4000000000
    sizes = {k: history.state(k).seg_size.tolist() for k in (-1, 0, 2, 6, 9, 12)}
    # before recording only the private pool's segment; the expandable one grows by each map, one segment
    assert sizes == {-1: [2 * MiB], 0: [2 * MiB, 2 * MiB], 2: [6 * MiB, 2 * MiB], 6: [8 * MiB, 2 * MiB],
                     9: [6 * MiB, 2 * MiB], 12: [6 * MiB, 2 * MiB]}
    assert history.state(2).seg_address[0] == E
    # the 4 MiB allocation spans the first two mapped ranges; its free was requested on another stream
    s = history.state(10)
    big = s.address.tolist().index(E + MiB)
    assert (int(s.size[big]), int(s.state[big])) == (4 * MiB, AWAITING_FREE)
    assert history.state(9).state[big] == 0
    pool = s.seg_pool[1]
    assert s.seg_address[1] == 0x7F5000000000 and history.snapshot.strings[pool] == "2,1"
    assert history.event(5)["device_free"] == MiB and history.event(5)["size"] == 64 * MiB
    # fragmentation: the largest free run in each segment (the pool's is empty until its alloc, event 11)
    assert s.seg_largest_free.tolist() == [512 * 1024, 2 * MiB]
    assert history.state(12).seg_largest_free.tolist() == [512 * 1024, 1536 * 1024]


def test_cached_segment_timeline_stacks_reserved_ranges():
    history = build_history(snapshot("typed_snapshot.pickle"), 0)
    bands = history.bands
    # reserved bytes before the first event, then after each: what the snapshot's segments say at the end
    assert bands.reserved[-1] == sum(EXPECTED["typed_snapshot.pickle"]["cuda:0"]["final"]["total_size"].values())
    assert bands.reserved[0] == 2 * MiB  # only the private pool's segment was there before recording
    assert bands.peak == 24 * MiB  # with the 2 MiB mapped between segment_map and segment_unmap
    for x in range(-1, len(history)):  # each event's stack is exactly its live segments, no overlap
        live, y0, y1 = bands.stack_at(x)
        assert y0[0] == 0 and np.all(y0[1:] == y1[:-1])
        assert y1[-1] == bands.reserved[x + 1] == history.state(x).reserved
        assert sorted(history.p_address[live].tolist()) == sorted(
            a for a in history.p_address[(history.p_birth <= x) & (x < history.p_death)].tolist())
    # the first reserved lowest: the private pool's segment (there before recording) under the one of event 0
    live, _, _ = bands.stack_at(0)
    assert history.p_address[live].tolist() == [0x7F0002000000, 0x7F0000000000]
    # the column over events 0..4 shows its peak event
    assert bands.peak_events(np.array([-1, 0, 9, 12])).tolist() == [-1, 0, 10]
    # the band under a point
    assert bands.at(0, MiB) >= 0 and bands.at(0, 100 * MiB) == -1


def test_histories_of_every_device_and_no_trace():
    snap = snapshot("typed_snapshot.pickle")
    assert sorted(prepare_histories(snap)) == ["cuda:0", "cuda:1"] and prepare_histories(None) == {}
    snap.traces = []  # a snapshot without traces: the segments as they are
    history = build_history(snap, 0)
    assert len(history) == 0 and history.state(-1).reserved == 22 * MiB


def test_an_inconsistent_trace_is_noted_not_fatal():
    snap = snapshot("typed_snapshot.pickle")
    t = snap.traces[1]
    t.addr[5] = 12345  # a segment_alloc of an address no segment has
    history = build_history(snap, 1)
    assert any("match no segment" in n for n in history.notes)
    assert np.all(history.state(0).seg_size > 0)
