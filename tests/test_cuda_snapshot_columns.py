"""The snapshot's columns (models/data/cuda_snapshot.py) from the plain pickle object."""

from pathlib import Path

import numpy as np

from profscope.models.core.safe_pickle import loads
from profscope.models.data.cuda_snapshot import ACTIONS, ALLOC, UNKNOWN_ACTION, from_plain

DATA = Path(__file__).parent / "data" / "torch_snapshot"


def _plain(name):
    return loads((DATA / name).read_bytes())


def test_typed_snapshot_columns_match_the_dict():
    plain = _plain("typed_snapshot.pickle")
    snap = from_plain(plain)
    assert snap.devices == [0, 1]
    for trace, entries in zip(snap.traces, plain["device_traces"]):
        assert [ACTIONS[a] for a in trace.action] == [e["action"] for e in entries]
        assert trace.size.tolist() == [e.get("size", 0) for e in entries]
        for i, e in enumerate(entries):
            frames = snap.tracebacks.frames_of(int(trace.frames[i]), snap.strings)
            assert frames == [(f["name"], f["filename"], f["line"]) for f in e.get("frames", [])]
    segs = plain["segments"]
    assert snap.segments.total_size.tolist() == [s["total_size"] for s in segs]
    assert np.diff(snap.segments.block_start).tolist() == [len(s["blocks"]) for s in segs]
    assert snap.blocks.size.tolist() == [b["size"] for s in segs for b in s["blocks"]]
    assert not snap.unknown_actions and not snap.missing_fields


def test_unknown_actions_and_missing_fields_are_counted():
    snap = from_plain({"segments": [], "device_traces": [[
        {"action": "alloc", "addr": 16, "size": 8}, {"action": "teleport", "addr": 16, "size": 8},
        {"action": "alloc", "size": 4}, "not a dict"]]})
    assert snap.traces[0].action.tolist() == [ALLOC, UNKNOWN_ACTION, ALLOC]
    assert snap.unknown_actions == {"teleport": 1}
    assert snap.missing_fields == {"addr": 1}


def test_frames_lists_are_interned():
    snap = from_plain(_plain("profile_snapshot.pickle"))
    trace = snap.traces[0]
    assert len(snap.tracebacks) < len(trace)
    assert len(snap.tracebacks) == len((set(trace.frames.tolist()) | set(snap.blocks.frames.tolist())) - {-1})
