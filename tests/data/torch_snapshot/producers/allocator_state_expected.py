"""Writes expandable_snapshot.pickle (when missing) and allocator_state_expected.json: the allocator's state
(segments and blocks) at each event of the snapshots in OUT_DIR, for Profscope's Allocator State History.

    pip install torch && python allocator_state_expected.py OUT_DIR

- expandable_snapshot.pickle: built by hand after torch/cuda/memory.py's TypedDicts: one device with an
  expandable segment grown by segment_map and shrunk by segment_unmap (an allocation spanning two mapped ranges),
  an oom, a block awaiting free at the snapshot (free_requested on another stream, never completed), a merged
  free, and a private pool segment made before recording.
- allocator_state_expected.json, per file and device:
  - "final": what torch.cuda._memory_viz says of the snapshot's own segments: segsum's summary lines
    (segments, total_reserved, total_allocated, total_free) and, per segment address, the bytes per block state
    that `segments` writes for its flame graph (a block's requested bytes; the rest of it under "STATE;<gaps>");
  - "history": per event of MemoryViz's event list (a free_requested followed at once by the free_completed of
    its address is one "free"), the segments [address, size] and blocks [address, size, requested_size,
    free_requested] that MemoryViz.js's Allocator State History (MemoryView.simulate_memory) draws, replayed
    here with plain dictionaries by its rules: the snapshot's segments and active blocks, every later event
    undone from the last one back. Only the counts and byte sums per event for files of many events.
"""

import json
import pickle
import sys
from pathlib import Path

from torch.cuda import _memory_viz as viz

out = Path(sys.argv[1])
MiB = 1 << 20
DETAIL_LIMIT = 100  # events; more: counts and sums only


def frames(name):
    return [{"filename": "/work/train.py", "line": 20, "name": name},
            {"filename": "Python/ceval.c", "line": 1, "name": "_PyEval_EvalFrameDefault"}]


def expandable_snapshot():
    E, S = 0x7F4000000000, 0x7F5000000000
    fw, bw = frames("forward"), frames("backward")

    def trace(action, addr, size, fr=(), stream=0, **extra):
        return {"action": action, "addr": addr, "size": size, "stream": stream, "frames": list(fr),
                "time_us": 1000 + 10 * len(dev0), **extra}

    dev0 = []
    for e in (("segment_map", E, 2 * MiB, fw), ("alloc", E, 1 * MiB - 8, fw),
              ("segment_map", E + 2 * MiB, 4 * MiB, fw), ("alloc", E + 1 * MiB, 4 * MiB, fw),
              ("alloc", E + 5 * MiB, 512 * 1024, bw), ("oom", 0, 64 * MiB, bw),
              ("segment_map", E + 6 * MiB, 2 * MiB, bw), ("alloc", E + 6 * MiB, 2 * MiB, bw),
              ("free_requested", E + 6 * MiB, 2 * MiB, bw), ("free_completed", E + 6 * MiB, 2 * MiB, bw),
              ("segment_unmap", E + 6 * MiB, 2 * MiB, bw), ("free_requested", E + 1 * MiB, 4 * MiB, fw, 3),
              ("alloc", S, 512 * 1024, bw), ("snapshot", 0, 0)):
        action, addr, size, *rest = e
        extra = {"device_free": 1 * MiB} if action == "oom" else {}
        dev0.append(trace(action, addr, size, *rest, **extra))
    blocks_e = [
        {"address": E, "size": 1 * MiB, "requested_size": 1 * MiB - 8, "state": "active_allocated", "frames": fw},
        {"address": E + MiB, "size": 4 * MiB, "requested_size": 4 * MiB, "state": "active_awaiting_free",
         "frames": fw},
        {"address": E + 5 * MiB, "size": 512 * 1024, "requested_size": 512 * 1024, "state": "active_allocated",
         "frames": bw},
        {"address": E + 5 * MiB + 512 * 1024, "size": 512 * 1024, "requested_size": 0, "state": "inactive",
         "frames": []}]
    blocks_s = [
        {"address": S, "size": 512 * 1024, "requested_size": 512 * 1024, "state": "active_allocated", "frames": bw},
        {"address": S + 512 * 1024, "size": 1536 * 1024, "requested_size": 0, "state": "inactive", "frames": []}]

    def seg(address, total, blocks, pool, expandable):
        return {"device": 0, "address": address, "total_size": total, "stream": 0, "segment_type": "large",
                "segment_pool_id": pool, "is_expandable": expandable,
                "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
                "active_size": sum(b["size"] for b in blocks if b["state"].startswith("active")),
                "requested_size": sum(b["requested_size"] for b in blocks if b["state"] == "active_allocated"),
                "blocks": blocks}

    return {"segments": [seg(E, 6 * MiB, blocks_e, (0, 0), True), seg(S, 2 * MiB, blocks_s, (2, 1), False)],
            "device_traces": [dev0], "allocator_settings": {"expandable_segments": True}}


def memoryviz_events(trace):
    """MemoryViz's annotate_snapshot event list: a free_completed right after the free_requested of its address
    turns that one into "free" and is dropped."""
    events = []
    for e in trace:
        e = dict(e)
        if e["action"] == "free_completed" and events and events[-1]["action"] == "free_requested" \
                and events[-1]["addr"] == e["addr"]:
            events[-1]["action"] = "free"
            continue
        events.append(e)
    return events


def simulate(snapshot, device, events, idx):
    """MemoryView.simulate_memory's rules: start from the snapshot, undo events after idx, last first."""
    segments = []
    blocks = {}
    for seg in snapshot["segments"]:
        if seg["device"] != device:
            continue
        segments.append({"addr": seg["address"], "size": seg["total_size"], "stream": seg["stream"]})
        addr = seg["address"]
        for b in seg["blocks"]:
            # MemoryViz reads "active_pending_free"; PyTorch writes "active_awaiting_free" (both: awaiting free)
            if b["state"] in ("active_allocated", "active_pending_free", "active_awaiting_free"):
                blocks[addr] = [addr, b["size"], b.get("requested_size", b["size"]), b["state"] != "active_allocated"]
            addr += b["size"]
    segments.sort(key=lambda s: s["addr"])

    def insert(seg, merge):
        i = next((k for k, s in enumerate(segments) if s["addr"] > seg["addr"]), len(segments))
        segments.insert(i, seg)
        if not merge:
            return
        if i + 1 < len(segments) and seg["addr"] + seg["size"] == segments[i + 1]["addr"] \
                and seg["stream"] == segments[i + 1]["stream"]:
            seg["size"] += segments.pop(i + 1)["size"]
        if i > 0 and segments[i - 1]["addr"] + segments[i - 1]["size"] == seg["addr"] \
                and segments[i - 1]["stream"] == seg["stream"]:
            segments[i - 1]["size"] += segments.pop(i)["size"]

    def remove(seg, merge):
        if not merge:
            segments.pop(next(k for k, s in enumerate(segments) if s["addr"] == seg["addr"]))
            return
        end = seg["addr"] + seg["size"]
        i = next(k for k, s in enumerate(segments) if s["addr"] <= seg["addr"] and end <= s["addr"] + s["size"])
        s = segments[i]
        s_end = s["addr"] + s["size"]
        if s["addr"] == seg["addr"]:
            s["addr"] += seg["size"]
            s["size"] -= seg["size"]
            if s["size"] == 0:
                segments.pop(i)
        elif s_end == end:
            s["size"] -= seg["size"]
        else:
            s["size"] = seg["addr"] - s["addr"]
            segments.insert(i + 1, {"addr": end, "size": s_end - end, "stream": s["stream"]})

    for e in reversed(events[idx + 1:]):
        a, action = e.get("addr"), e["action"]
        if action == "free":
            blocks[a] = [a, e["size"], e["size"], False]
        elif action == "free_requested":
            blocks[a][3] = False
        elif action == "free_completed":
            blocks[a] = [a, e["size"], e["size"], True]
        elif action == "alloc":
            blocks.pop(a, None)
        elif action in ("segment_free", "segment_unmap"):
            insert({"addr": a, "size": e["size"], "stream": e["stream"]}, action == "segment_unmap")
        elif action in ("segment_alloc", "segment_map"):
            remove({"addr": a, "size": e["size"]}, action == "segment_map")
    return [[s["addr"], s["size"]] for s in segments], sorted(blocks.values())


def final_numbers(snapshot, device):
    one = {"segments": [s for s in snapshot["segments"] if s["device"] == device], "device_traces": [[]]}
    summary = [line for line in viz.segsum(one).splitlines()
               if line.startswith(("segments:", "total_reserved:", "total_allocated:", "total_free:"))]
    by_segment = {}
    for line in viz.segments(one, format_flamegraph=lambda text: text).splitlines():
        stack, size = line.rsplit(" ", 1)
        _, seg, state, *_ = stack.split(";")
        by_state = by_segment.setdefault(seg.removeprefix("seg_"), {})
        key = f"{state};<gaps>" if stack.endswith(";<gaps>") else state
        by_state[key] = by_state.get(key, 0) + int(size)
    return {"segsum": summary, "segments": by_segment,
            "total_size": {str(s["address"]): s["total_size"] for s in one["segments"]}}


def history(snapshot, device):
    events = memoryviz_events(snapshot["device_traces"][device])
    detail = len(events) <= DETAIL_LIMIT
    out = []
    for idx in range(len(events)):
        segs, blocks = simulate(snapshot, device, events, idx)
        if detail:
            out.append({"action": events[idx]["action"], "segments": segs, "blocks": blocks})
        else:
            out.append([len(segs), sum(s[1] for s in segs), len(blocks), sum(b[2] for b in blocks),
                        sum(b[3] for b in blocks)])
    return out


expected = {}
path = out / "expandable_snapshot.pickle"
if not path.exists():
    path.write_bytes(pickle.dumps(expandable_snapshot(), protocol=4))
for name in ("typed_snapshot.pickle", "profile_snapshot.pickle", "expandable_snapshot.pickle"):
    snapshot = pickle.loads((out / name).read_bytes())
    devices = sorted({i for i, t in enumerate(snapshot["device_traces"]) if t}
                     | {s["device"] for s in snapshot["segments"]})
    expected[name] = {f"cuda:{d}": {"final": final_numbers(snapshot, d), "history": history(snapshot, d)}
                      for d in devices}
(out / "allocator_state_expected.json").write_text(json.dumps(expected, indent=None, separators=(",", ":")) + "\n")
print({name: {d: len(v["history"]) for d, v in devs.items()} for name, devs in expected.items()})
