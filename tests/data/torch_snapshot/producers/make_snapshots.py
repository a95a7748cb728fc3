"""Writes the PyTorch memory snapshot fixtures and the numbers torch's own helpers give for them.

    pip install torch && python make_snapshots.py OUT_DIR [--existing]

(--existing: the numbers for the snapshots already in OUT_DIR, leaving them as they are; missing ones are made.)

- profile_snapshot.pickle: three CPU training steps of a small MLP profiled with profile_memory=True, made a
  snapshot by torch.cuda._memory_viz._profile_to_snapshot (without a GPU its device 0 is the CPU);
- typed_snapshot.pickle: a snapshot built by hand after the TypedDicts of torch/cuda/memory.py: two devices,
  segments with blocks (one in a private pool), every trace action, one allocation made before recording;
- ring_snapshot.pickle: typed_snapshot.pickle as it is when `_record_memory_history(max_entries=9)`'s ring buffer
  overflowed: each device's trace keeps its last 9 entries (device 0's starts with the free_completed of a
  free_requested that was dropped), the segments stay the snapshot's;
- expected.json: per file and device, what torch.cuda._memory_viz's helpers (segsum's per-block sizes via
  _block_extra and calc_active, trace's entry counts, memory's flame-graph lines) say, and the Active Memory
  Timeline's peak replayed here by MemoryViz.js's process_alloc_data rules (plain dictionaries), and the bytes
  reserved in segments at each of its rows (segment_alloc/map add, segment_free/unmap take away, each on a row of
  its own; what was reserved before recording is the snapshot's total less the trace's net change, as MemoryViz
  sizes its pools) with its highest value.
"""

import json
import pickle
import sys
from pathlib import Path

import torch
from torch.cuda import _memory_viz as viz
from torch.profiler import ProfilerActivity, profile

MiB = 1 << 20


def frames(*names):
    return [{"filename": "/work/train.py", "line": 10 + i, "name": n} for i, n in enumerate(names)] + [
        {"filename": "Python/ceval.c", "line": 1, "name": "_PyEval_EvalFrameDefault"}]


def typed_snapshot():
    fw, bw, opt = frames("forward", "main"), frames("backward", "main"), frames("step", "main")
    base0, base1 = 0x7F0000000000, 0x7F1000000000

    def trace(action, addr, size, fr=(), stream=0, **extra):
        return {"action": action, "addr": addr, "size": size, "stream": stream, "frames": list(fr), **extra}

    dev0 = [
        trace("segment_alloc", base0, 20 * MiB, fw),
        trace("alloc", base0, 4 * MiB, fw),
        trace("alloc", base0 + 4 * MiB, 2 * MiB, fw),
        trace("free_requested", base0 + 12 * MiB, 1 * MiB),  # made before recording: freed here
        trace("free_completed", base0 + 12 * MiB, 1 * MiB),
        trace("alloc", base0 + 6 * MiB, 6 * MiB, bw),
        trace("snapshot", 0, 0),
        trace("free_requested", base0 + 4 * MiB, 2 * MiB, fw, stream=7),  # freed later (record_stream)
        trace("alloc", base0 + 12 * MiB, 512 * 1024, bw),
        trace("free_completed", base0 + 4 * MiB, 2 * MiB, fw, stream=7),
        trace("oom", 0, 64 * MiB, device_free=3 * MiB),
        trace("segment_map", base0 + 20 * MiB, 2 * MiB),
        trace("alloc", base0 + 20 * MiB, 2 * MiB, opt),
        trace("free_requested", base0 + 6 * MiB, 6 * MiB, bw),
        trace("free_completed", base0 + 6 * MiB, 6 * MiB, bw),
        trace("free_requested", base0 + 20 * MiB, 2 * MiB, opt),
        trace("free_completed", base0 + 20 * MiB, 2 * MiB, opt),
        trace("segment_unmap", base0 + 20 * MiB, 2 * MiB),
    ]
    dev1 = [
        trace("segment_alloc", base1, 2 * MiB, opt),
        trace("alloc", base1, 1 * MiB, opt),
        trace("alloc", base1 + 1 * MiB, 512, opt),
        trace("free_requested", base1, 1 * MiB, opt),
        trace("free_completed", base1, 1 * MiB, opt),
        trace("segment_alloc", base1 + 4 * MiB, 2 * MiB, opt),
        trace("segment_free", base1 + 4 * MiB, 2 * MiB, opt),
    ]
    seg = lambda device, address, total, blocks, pool=(0, 0), stream=0: {
        "device": device, "address": address, "total_size": total, "stream": stream,
        "segment_type": "large" if total > MiB else "small", "segment_pool_id": pool,
        "allocated_size": sum(b["size"] for b in blocks if b["state"] == "active_allocated"),
        "active_size": sum(b["size"] for b in blocks if b["state"].startswith("active")), "blocks": blocks}

    def block(address, size, state, requested=None, fr=()):
        return {"address": address, "size": size, "requested_size": size if requested is None else requested,
                "state": state, "frames": list(fr)}

    segments = [
        seg(0, base0, 20 * MiB, [
            block(base0, 4 * MiB, "active_allocated", 4 * MiB - 100, fw),
            block(base0 + 4 * MiB, 8 * MiB, "inactive"),
            block(base0 + 12 * MiB, 512 * 1024, "active_allocated", 500 * 1000, bw),
            block(base0 + 12 * MiB + 512 * 1024, 7 * MiB + 512 * 1024, "inactive")]),
        seg(0, base0 + 32 * MiB, 2 * MiB, [  # a private pool (a CUDA graph's); allocated before recording
            block(base0 + 32 * MiB, 1536 * 1024, "active_allocated", 1500 * 1024, opt),
            block(base0 + 32 * MiB + 1536 * 1024, 512 * 1024, "inactive")], pool=(1, 3)),
        seg(1, base1, 2 * MiB, [
            block(base1, 1 * MiB, "inactive"),
            block(base1 + 1 * MiB, 512, "active_allocated", 400, opt),
            block(base1 + 1 * MiB + 512, 1 * MiB - 512, "inactive")]),
    ]
    return {"segments": segments, "device_traces": [dev0, dev1]}


def ring_snapshot(max_entries=9):
    snapshot = typed_snapshot()
    snapshot["device_traces"] = [entries[-max_entries:] for entries in snapshot["device_traces"]]
    return snapshot


def profile_snapshot(width=128, steps=3):
    """CPU training steps of a small MLP (hidden layer `width`) made a snapshot (make_diff_pair.py uses it too)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))
    optimizer = torch.optim.Adam(model.parameters())
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        for _ in range(steps):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    return viz._profile_to_snapshot(prof)


def timeline_peak(snapshot, device):
    """MemoryViz.js's Active Memory Timeline: bytes alive after each action, and the most."""
    trace, merged = snapshot["device_traces"][device], []
    for e in trace:  # free_requested then free_completed of one address become one "free"
        if e["action"] == "free_completed" and merged and merged[-1]["action"] == "free_requested" \
                and merged[-1]["addr"] == e["addr"]:
            merged[-1] = {**merged[-1], "action": "free"}
            continue
        merged.append(e)
    open_at, initial, steps = {}, 0, []
    for e in merged:
        if e["action"] == "alloc":
            open_at[e["addr"]] = e["size"]
            steps.append(e["size"])
        elif e["action"] in ("free", "free_completed"):
            if e["addr"] in open_at:
                steps.append(-open_at.pop(e["addr"]))
            else:
                initial += e["size"]
                steps.append(-e["size"])
    for seg in snapshot["segments"]:
        if seg["device"] != device:
            continue
        addr = seg["address"]
        for b in seg["blocks"]:
            if b["state"] == "active_allocated" and addr not in open_at:
                initial += b["requested_size"]
            addr += b["size"]
    total, totals = initial, [initial]
    for s in steps:
        total += s
        totals.append(total)
    return {"initial": initial, "peak": max(totals), "final": totals[-1], "actions": len(steps)}


def reserved_timeline(snapshot, device):
    """Reserved bytes before the timeline's first row, and at each row, run-length coded: a row for each
    allocation event (a free_requested joins its completion) and for each segment event, which holds what that
    event leaves reserved; and the highest reserved, as segment events reach it."""
    trace = snapshot["device_traces"][device]
    total = sum(s["total_size"] for s in snapshot["segments"] if s["device"] == device)
    sign = {"segment_alloc": 1, "segment_map": 1, "segment_free": -1, "segment_unmap": -1}
    reserved = total - sum(sign.get(e["action"], 0) * e["size"] for e in trace)
    first, values, peak = None, [], reserved
    for e in trace:
        if e["action"] in sign or e["action"] in ("alloc", "free_completed"):
            if first is None:
                first = reserved
            reserved += sign.get(e["action"], 0) * e["size"]
            values.append(reserved)
            peak = max(peak, reserved)
    runs = []
    for v in values:
        if runs and runs[-1][0] == v:
            runs[-1][1] += 1
        else:
            runs.append([v, 1])
    return {"before_first": reserved if first is None else first, "rows": runs, "peak": peak,
            "segment_events": sum(e["action"] in sign for e in trace)}


def trace_entries(one):
    """The "N entries" trace() prints (it needs allocated_size, which _profile_to_snapshot leaves out)."""
    try:
        return int(viz.trace(one).split("\n")[1].split()[0]) if one["device_traces"][0] else 0
    except KeyError:
        return len(one["device_traces"][0])


def numbers(snapshot):
    devices = {}
    for device, entries in enumerate(snapshot["device_traces"]):
        segs = [s for s in snapshot["segments"] if s["device"] == device]
        if not entries and not segs:
            continue
        one = {"segments": [s for s in snapshot["segments"] if s["device"] == device], "device_traces": [entries]}
        lines = viz.memory(one, format_flamegraph=lambda text: text).splitlines()
        by_state = {}
        for line in lines:
            stack, size = line.rsplit(" ", 1)
            state = stack.split(";")[1]
            by_state[state] = by_state.get(state, 0) + int(size)
        devices[f"cuda:{device}"] = {
            "trace_entries": trace_entries(one),
            "actions": {a: sum(e["action"] == a for e in entries) for a in sorted({e["action"] for e in entries})},
            "reserved": sum(s["total_size"] for s in segs),
            "allocated_requested": sum(viz._block_extra(b)[1] for s in segs for b in s["blocks"]
                                       if b["state"] == "active_allocated"),
            "active_block_bytes": sum(viz.calc_active(s) for s in segs),
            "memory_lines_by_state": by_state,
            "timeline": timeline_peak(snapshot, device),
            "reserved_timeline": reserved_timeline(snapshot, device),
        }
    return devices


if __name__ == "__main__":
    out = Path(sys.argv[1])
    expected = {"torch": torch.__version__}
    for name, make in (("typed_snapshot.pickle", typed_snapshot), ("profile_snapshot.pickle", profile_snapshot),
                       ("ring_snapshot.pickle", ring_snapshot)):
        if "--existing" in sys.argv and (out / name).exists():
            snapshot = pickle.loads((out / name).read_bytes())
        else:
            snapshot = make()
            (out / name).write_bytes(pickle.dumps(snapshot, protocol=4))
        viz.segsum(snapshot)  # its own accounting checks pass
        expected[name] = numbers(snapshot)
    (out / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")
    print(json.dumps(expected, indent=1))
