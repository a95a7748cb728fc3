"""PyTorch CUDA memory snapshots (`torch.cuda.memory._snapshot()` pickled,
`_dump_snapshot`) as memory profiles, one allocator per device `cuda:N`.

A snapshot is a pickled dict of plain data (torch/cuda/memory.py's TypedDicts):
`segments` (the allocator's cudaMalloc'd memory at the snapshot, each with its
`device` and `blocks`) and `device_traces` (per device, the actions recorded
since `_record_memory_history`: alloc, free_requested, free_completed,
segment_alloc/free/map/unmap, snapshot, oom). It is read by
profscope.models.core.safe_pickle, never by Python's unpickler.

The timeline is PyTorch's Active Memory Timeline (MemoryViz.js,
process_alloc_data): a free_requested followed at once by the free_completed
of its address is one free; an alloc opens an allocation of the event's size
and a free (or a free_completed) closes the open one at its address. Memory
alive before recording began: a free that closes nothing (sized as the
free), and each `active_allocated` block of the device's segments that no
open allocation covers at the end (sized by its requested size); these are
the timeline's first rows. Each allocation's op is its top user frame (the
first frame PyTorch's frame filter keeps, a Python one when there is one).

Reserved memory over time (each row's `free` is reserved less allocated): a
segment_alloc or segment_map adds its size, a segment_free or segment_unmap
takes it away; each row holds the reserved bytes until the next row (segment
events come between rows, so a segment reserved and released between two
rows is not seen). Reserved before recording began, as MemoryViz finds it: a
segment freed or unmapped that the trace did not reserve, and each of the
snapshot's segments less what the trace reserved inside it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from profscope.models.core import safe_pickle
from profscope.models.core.files import read_bytes
from profscope.models.core.guards import max_nesting, nesting_refused
from profscope.models.core.safe_pickle import is_pickle, loads
from profscope.models.core.sniff import head_of
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.cuda_snapshot import (
    Blocks,
    CudaSnapshot,
    DeviceTrace,
    Segments,
    Tracebacks,
    from_plain,
)
from profscope.models.data.memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    AllocatorProfile,
    MemoryProfileData,
    Snapshots,
    complete_profile,
    summarize,
)
from profscope.models.formats import _torch_snapshot
from profscope.models.repository.registry import MEMORY_PROFILE, Format, strip_suffix

SUFFIXES = (".pickle.gz", ".pickle", ".pkl.gz", ".pkl")
KEYS = (b"segments", b"device_traces")
BEFORE = "allocated before recording"
NO_FRAMES = "<block was allocated before _record_history was enabled>"
# PyTorch's frame filter (_memory_viz._frame_filter, MemoryViz.js frameFilter).
OMIT_FUNCTIONS = ("unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start", "__libc_start_main",
                  "PyEval_", "PyObject_", "PyFunction_")
OMIT_FILENAMES = ("core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c", "Objects/call.c",
                  "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h")


def is_torch_snapshot(head: bytes | None) -> bool:
    """Whether a file's head is a pickle (protocol 2-5) of a dict whose first key is `segments` or `device_traces`."""
    if not head or not is_pickle(head):
        return False
    p = 2
    if head[p : p + 1] == b"\x95":  # FRAME
        p += 9
    if head[p : p + 1] != b"}":
        return False
    p += 1
    while p < len(head) and head[p] in (0x94, 0x71, 0x72, 0x28):  # MEMOIZE, BINPUT, LONG_BINPUT, MARK
        p += {0x71: 2, 0x72: 5}.get(head[p], 1)
    if head[p : p + 1] == b"\x8c":
        key = head[p + 2 : p + 2 + head[p + 1]] if p + 1 < len(head) else b""
    elif head[p : p + 1] == b"X":
        key = head[p + 5 : p + 5 + int.from_bytes(head[p + 1 : p + 5], "little")]
    else:
        return False
    return key in KEYS


def read_cuda_snapshot(data: bytes | bytearray | memoryview, what: str) -> CudaSnapshot:
    """The snapshot pickle's columns, decoded by the C reader (_torch_snapshot.c) under safe_pickle's rules and
    limits. A cut or damaged file gives its complete entries with a note; a pickle the pickler would not have laid
    out so (a shared entry, say) is read by safe_pickle and from_plain instead, the reference they must equal."""
    depth, objects = max_nesting(), safe_pickle.max_objects()
    r = _torch_snapshot.read(data, depth, objects)
    status, error, at = r["status"], r["error"], r["offset"]
    if status == "refused":
        raise {
            "not_pickle": lambda: safe_pickle.not_a_pickle(what),
            "forbidden": lambda: safe_pickle.refused_opcode(what, r["opcode"], at),
            "nesting": lambda: nesting_refused(what, depth),
            "objects": lambda: safe_pickle.too_many_objects(what, objects),
            "bigint": lambda: safe_pickle.integer_too_long(what, r["count"], at),
            "cycle_changed": lambda: safe_pickle.changed_after_placed(what, at),
            "cycle_self": lambda: safe_pickle.placed_in_itself(what, at),
            "unhashable": lambda: safe_pickle.unhashable_key(what, at),
        }[error]()
    if status == "irregular":
        return _plain_snapshot(loads(data, what), what)
    if status == "cut" and not r["started"]:
        raise safe_pickle.truncated(what)
    if not r["is_dict"] or not (r["has_traces"] or r["has_segments"]) or (
            r["has_traces"] and not r["traces_list"]) or (r["has_segments"] and not r["segments_list"]):
        raise ProfileError(NOT_A_SNAPSHOT.format(what))
    tb = r["tracebacks"]
    missing = {k: r[f"missing_{k}"] for k in ("addr", "size") if r[f"missing_{k}"]}
    snap = CudaSnapshot(
        traces=[DeviceTrace(**t) for t in r["traces"]],
        segments=Segments(**{k[4:]: v for k, v in r.items() if k.startswith("seg_") and k != "seg_block_start"},
                          block_start=r["seg_block_start"].astype(np.int64)),
        blocks=Blocks(**{k[4:]: v for k, v in r.items() if k.startswith("blk_")}),
        tracebacks=Tracebacks(**tb), strings=r["strings"],
        unknown_actions={**r["unknown_actions"], **{f"block state {k}": n for k, n in r["unknown_states"].items()}},
        missing_fields=missing)
    if status == "cut":
        where = (f"cut after {r['cut_entries']:,} trace entries of device {r['cut_device']}" if r["cut_in_traces"]
                 else f"cut after {r['cut_segments']:,} segments, before the device traces")
        snap.notes.append(f"{what}: the file is cut or damaged at byte {at:,} ({error}); read what came before: {where}")
    return snap


NOT_A_SNAPSHOT = "{}: not a PyTorch memory snapshot (a dict of segments and device_traces)"


def _plain_snapshot(snapshot, what: str) -> CudaSnapshot:
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("device_traces", []), list) or not isinstance(
            snapshot.get("segments", []), list) or not ("segments" in snapshot or "device_traces" in snapshot):
        raise ProfileError(NOT_A_SNAPSHOT.format(what))
    return from_plain(snapshot)


def keep_frame(frame: dict) -> bool:
    name, filename = str(frame.get("name", "")), str(frame.get("filename", ""))
    return not any(f in name for f in OMIT_FUNCTIONS) and not any(f in filename for f in OMIT_FILENAMES)


def top_frame(frames) -> str:
    """The allocation's top user frame, as PyTorch prints frames (filename:line:name)."""
    if not isinstance(frames, list) or not frames:
        return NO_FRAMES
    kept = [f for f in frames if isinstance(f, dict) and keep_frame(f)]
    if not kept:
        return NO_FRAMES
    python = [f for f in kept if str(f.get("filename", "")).endswith(".py")]
    f = (python or kept)[0]
    filename = str(f.get("filename", ""))
    if filename in ("", "none"):  # _profile_to_snapshot's frames: only a name
        return str(f.get("name", ""))
    return f"{filename}:{f.get('line', '')}:{f.get('name', '')}"


def load_torch_snapshot(path: Path, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    task = task or TaskState()
    path = Path(path)
    data = read_bytes(path, task, weight=0.4)
    task.report(0.5, f"Reading {path.name}")
    snapshot = loads(data, str(path))
    del data
    allocators = snapshot_allocators(snapshot, str(path))
    return MemoryProfileData(host=host or path.name, allocators=allocators, source=str(path))


def snapshot_allocators(snapshot, name: str) -> dict[str, AllocatorProfile]:
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("device_traces", []), list) or not isinstance(
            snapshot.get("segments", []), list) or not ("segments" in snapshot or "device_traces" in snapshot):
        raise ProfileError(f"{name}: not a PyTorch memory snapshot (a dict of segments and device_traces)")
    traces = snapshot.get("device_traces", [])
    segments = [s for s in snapshot.get("segments", []) if isinstance(s, dict)]
    devices = sorted({i for i, t in enumerate(traces) if t} | {_int(s.get("device", 0)) for s in segments})
    out = {}
    for device in devices:
        trace = traces[device] if device < len(traces) and isinstance(traces[device], list) else []
        own = [s for s in segments if _int(s.get("device", 0)) == device]
        out[f"cuda:{device}"] = _allocator(f"cuda:{device}", trace, own, name)
    return out


def _int(value) -> int:
    return value if type(value) is int else 0


def _merged(trace: list) -> list[dict]:
    """The trace's events, a free_requested followed by its free_completed as one "free" (as MemoryViz shows them)."""
    out: list[dict] = []
    for e in trace:
        if not isinstance(e, dict):
            continue
        if e.get("action") == "free_completed" and out and out[-1].get("action") == "free_requested" and out[-1].get(
                "addr") == e.get("addr"):
            out[-1] = {**out[-1], "action": "free"}
            continue
        out.append(e)
    return out


def _allocator(memory_id: str, trace: list, segments: list[dict], name: str) -> AllocatorProfile:
    strings: dict[str, int] = {"": 0}
    sid = lambda s: strings.setdefault(s, len(strings))
    ops: dict[int, int] = {}  # id of a frames list (the snapshot shares one per traceback) -> its op's string id

    def op_of(frames) -> int:
        if (op := ops.get(id(frames))) is None:
            op = ops[id(frames)] = sid(top_frame(frames))
        return op
    # Rows: (time, activity, size, requested, address, op, region, category, frames); allocations before recording
    # first.
    initial: list[tuple] = []
    actions: list[tuple] = []
    open_at: dict[int, int] = {}  # address -> index into actions of its open allocation
    pairs: list[tuple[int, int]] = []  # (allocation row, freeing row) in actions' numbering, initial ones < 0
    events = _merged(trace)
    times = [e.get("time_us") for e in events]
    timed = all(type(t) is int for t in times) and bool(times)
    first = min(times) if timed else 0  # type: ignore[type-var]
    ooms, frees_unmatched = [], 0
    seg_open: dict[int, int] = {}  # address -> size of each segment (or mapped range) reserved in the trace
    reserved_before: list[int] = []  # per action row, the trace's net reserved bytes just before it
    net = before = 0  # net: bytes reserved by the trace so far; before: reserved before recording, seen freed
    for k, e in enumerate(events):
        action = e.get("action")
        t = (times[k] - first) * 1_000_000 if timed else (k + 1) * 1_000_000  # type: ignore[operator]
        addr, size = _int(e.get("addr")), _int(e.get("size"))
        if action in ("segment_alloc", "segment_map"):
            seg_open[addr] = size
            net += size
        elif action in ("segment_free", "segment_unmap"):
            if seg_open.pop(addr, None) is None:  # reserved before recording began
                before += size
            net -= size
        elif action in ("alloc", "free", "free_completed"):
            reserved_before.append(net)
        if action == "alloc":
            op = op_of(e.get("frames"))
            open_at[addr] = len(actions)
            actions.append((t, ALLOCATION, size, size, addr, op, sid("alloc"), sid(str(e.get("category", ""))),
                            e.get("frames")))
        elif action in ("free", "free_completed"):
            if addr in open_at:
                j = open_at.pop(addr)
                pairs.append((j, len(actions)))
                _, _, size, _, _, op, _, cat, _ = actions[j]
            else:
                op, cat = op_of(e.get("frames")), sid(str(e.get("category", "")))
                initial.append((0, ALLOCATION, size, size, addr, op, sid(BEFORE + " (freed)"), cat, e.get("frames")))
                pairs.append((-len(initial), len(actions)))
                frees_unmatched += 1
            actions.append((t, DEALLOCATION, size, size, addr, op, sid(str(action)), cat, None))
        elif action == "oom":
            ooms.append((size, _int(e.get("device_free"))))
    reserved = 0
    for seg in segments:
        addr = _int(seg.get("address"))
        total = _int(seg.get("total_size"))
        reserved += total
        # MemoryViz: a segment the trace did not reserve was there before recording (less what the trace mapped in it)
        before += max(total - sum(n for a, n in seg_open.items() if addr <= a < addr + total), 0)
        for b in seg.get("blocks", []) if isinstance(seg.get("blocks"), list) else []:
            if not isinstance(b, dict):
                continue
            if b.get("state") == "active_allocated" and addr not in open_at:
                req = _int(b.get("requested_size", b.get("size")))
                initial.append((0, ALLOCATION, req, req, addr, sid(top_frame(b.get("frames"))),
                                sid(BEFORE + " (in the snapshot)"), sid(str(b.get("category", ""))), b.get("frames")))
            addr += _int(b.get("size"))
    # Reserved bytes while each row holds: up to the next row (segment events only come between rows).
    after = reserved_before[1:] + [net]
    if not actions and initial:  # MemoryViz: a flat graph of what the snapshot holds
        actions.append(initial.pop())
        after = [net]
    rows = initial + actions
    ni = len(initial)
    reserved_at = before + np.asarray([reserved_before[0] if reserved_before else net] * ni + after, np.int64)
    n = len(rows)
    cols = list(zip(*rows)) if rows else [()] * 9
    time_ps = np.asarray(cols[0], np.int64)
    if timed and ni:
        time_ps[:ni] = 0
    activity = np.asarray(cols[1], np.int64)
    sizes = np.asarray(cols[2], np.int64)
    heap = np.cumsum(np.where(activity == ALLOCATION, sizes, -sizes)) if n else np.zeros(0, np.int64)
    zeros = np.zeros(n, np.int64)
    free = np.maximum(reserved_at[:n] - heap, 0)
    table = list(strings)
    timeline = Snapshots(
        time_ps=time_ps, stack=zeros, heap=heap, free=free, fragmentation=np.zeros(n),
        peak_in_use=np.maximum.accumulate(heap) if n else zeros, activity=activity,
        requested=np.asarray(cols[3], np.int64), allocation=sizes,
        address=np.asarray([a & 0xFFFFFFFFFFFFFFFF for a in cols[4]], np.uint64),
        step=zeros, op=np.asarray(cols[5], np.int32), region=np.asarray(cols[6], np.int32),
        dtype=np.asarray(cols[7], np.int32), shape=np.zeros(n, np.int32), strings=table,
    )
    frees = np.full(n, n, np.int64)
    for j, f in pairs:
        frees[j + ni if j >= 0 else -j - 1] = f + ni
    allocs = np.flatnonzero(activity == ALLOCATION)
    summary = summarize(timeline)
    summary.num_allocations, summary.num_deallocations = len(allocs), n - len(allocs)
    summary.memory_capacity = reserved
    profile = complete_profile(
        memory_id, timeline, summary, lifetimes=(allocs, frees[allocs]),
        frames={i: f for i, f in enumerate(cols[8]) if isinstance(f, list) and f},
        top_frame=np.where((activity == ALLOCATION) & (timeline.op != strings.get(NO_FRAMES, -1)), timeline.op, 0),
        segments=segment_columns(segments),
    )
    if not timed:
        profile.notes.append("The trace holds no times: one event a microsecond, in the order recorded.")
    if ni:
        profile.notes.append(f"{ni:,} allocations were made before recording began ({frees_unmatched:,} seen "
                             "freed, the rest from the snapshot's active blocks).")
    profile.notes.append(f"Reserved in segments at the snapshot: {reserved:,} bytes in {len(segments):,} segments.")
    for want, device_free in ooms:
        profile.notes.append(f"Out of memory: {want:,} bytes requested, {device_free:,} bytes free on the device.")
    return profile


def segment_columns(segments: list[dict]) -> dict[str, list]:
    """The SQL segments table's columns for a device's segments (sizes the snapshot leaves out are its blocks')."""
    cols: dict[str, list] = {c: [] for c in ("address", "total_bytes", "allocated_bytes", "active_bytes",
                                             "requested_bytes", "stream", "segment_type", "pool_id", "is_expandable")}
    for seg in segments:
        listed = seg.get("blocks")
        blocks = [b for b in listed if isinstance(b, dict)] if isinstance(listed, list) else []
        allocated = [b for b in blocks if b.get("state") == "active_allocated"]
        pool = seg.get("segment_pool_id")
        expandable = seg.get("is_expandable")
        cols["address"].append(_int(seg.get("address")) & 0xFFFFFFFFFFFFFFFF)
        cols["total_bytes"].append(_int(seg.get("total_size")))
        cols["allocated_bytes"].append(_sized(seg, "allocated_size", allocated, "size"))
        cols["active_bytes"].append(_sized(seg, "active_size", [b for b in blocks if str(
            b.get("state", "")).startswith("active")], "size"))
        cols["requested_bytes"].append(_sized(seg, "requested_size", allocated, "requested_size"))
        cols["stream"].append(_int(seg.get("stream")))
        cols["segment_type"].append(str(seg.get("segment_type", "")))
        cols["pool_id"].append(",".join(str(p) for p in pool) if isinstance(pool, (list, tuple)) else None)
        cols["is_expandable"].append(int(expandable) if isinstance(expandable, bool) else None)
    return cols


def _sized(seg: dict, key: str, blocks: list[dict], block_key: str) -> int:
    if type(seg.get(key)) is int:
        return seg[key]
    return sum(_int(b.get(block_key, b.get("size"))) for b in blocks)


class TorchSnapshotFormat(Format):
    name = "torch_snapshot"
    title = "PyTorch CUDA memory snapshots (`torch.cuda.memory._snapshot()` pickled, `_dump_snapshot`)"
    where = ("a single file of any name, or any file in a folder, whose content is a pickled snapshot "
             "(read without Python's unpickler); host = file name, one allocator per `cuda:N`")
    patterns = tuple(f"*{s}" for s in SUFFIXES)
    tools = (MEMORY_PROFILE,)
    rank = 2

    def host_in_folder(self, path: Path) -> str | None:
        if not is_torch_snapshot(head_of(path, 256)):
            return None
        return strip_suffix(path.name, SUFFIXES) or path.name

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        host = self.host_in_folder(path)
        return None if host is None else (path.name, host)

    def memory_profile(self, files, host, task):
        return load_torch_snapshot(files[0], host=host, task=task)


FORMAT = TorchSnapshotFormat()
