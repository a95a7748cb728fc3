"""PyTorch CUDA memory snapshots (`torch.cuda.memory._snapshot()` pickled,
`_dump_snapshot`) as memory profiles, one allocator per device `cuda:N`.

A snapshot is a pickled dict of plain data (torch/cuda/memory.py's TypedDicts):
`segments` (the allocator's cudaMalloc'd memory at the snapshot, each with its
`device` and `blocks`) and `device_traces` (per device, the actions recorded
since `_record_memory_history`: alloc, free_requested, free_completed,
segment_alloc/free/map/unmap, snapshot, oom). It is read under
profscope.models.core.safe_pickle's rules, never by Python's unpickler.

The timeline is PyTorch's Active Memory Timeline (MemoryViz.js,
process_alloc_data): a free_requested followed at once by the free_completed
of its address is one free; an alloc opens an allocation of the event's size
and a free (or a free_completed) closes the open one at its address. Memory
alive before recording began: a free that closes nothing (sized as the
free), and each `active_allocated` block of the device's segments that no
open allocation covers at the end (sized by its requested size); these are
the timeline's first rows. Each allocation's op is its top user frame (the
first frame PyTorch's frame filter keeps, a Python one when there is one).

Reserved memory over time (each row's `free` is reserved less allocated,
never below 0): a segment_alloc or segment_map adds its size, a segment_free
or segment_unmap takes it away, each on a row of its own (activity
RESERVATION, region the action, the heap unchanged), so a segment reserved
and released between two allocations still shows; each row holds what its
event leaves reserved. Reserved before recording began, as MemoryViz finds
it: a segment freed or unmapped that the trace did not reserve, and each of
the snapshot's segments less what the trace reserved inside it.

An oom entry is a note and a marker on the plot (AllocatorProfile.markers)
at its place among the rows, with the bytes asked for and those the device
reported free.

The file is decoded by _torch_snapshot.c into CudaSnapshot's columns
(read_cuda_snapshot); the replay works on those columns with numpy.
"""

from __future__ import annotations

import mmap
import os
from functools import cache
from pathlib import Path

import numpy as np

from profscope.models.core import safe_pickle
from profscope.models.core.files import GZIP_MAGIC, read_bytes, readable_errors
from profscope.models.core.guards import max_nesting, nesting_refused
from profscope.models.core.safe_pickle import is_pickle, loads
from profscope.models.core.sniff import head_of
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.core.units import format_bytes
from profscope.models.data.cuda_snapshot import (
    ACTIVE_ALLOCATED,
    ACTIVE_AWAITING_FREE,
    ACTIVE_PENDING_FREE,
    ALLOC,
    FREE_COMPLETED,
    FREE_REQUESTED,
    NO_FRAMES,
    NO_SIZE,
    NO_TIME,
    OMIT_FILENAMES,
    OMIT_FUNCTIONS,
    OOM,
    SEGMENT_ALLOC,
    SEGMENT_FREE,
    SEGMENT_MAP,
    SEGMENT_UNMAP,
    Blocks,
    CudaSnapshot,
    DeviceTrace,
    RowFrames,
    Segments,
    Tracebacks,
    frame_text,
    from_plain,
    keep_frame,
)
from profscope.models.data.memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    RESERVATION,
    AllocatorProfile,
    MemoryProfileData,
    MemorySummary,
    Snapshots,
    complete_profile,
    summarize,
)
from profscope.models.formats import _torch_snapshot
from profscope.models.repository.registry import MEMORY_PROFILE, Format, strip_suffix

SUFFIXES = (".pickle.gz", ".pickle", ".pkl.gz", ".pkl")
KEYS = (b"segments", b"device_traces")
BEFORE = "allocated before recording"


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


def read_cuda_snapshot(data: bytes | bytearray | memoryview | mmap.mmap, what: str,
                       release: bool = False) -> CudaSnapshot:
    """The snapshot pickle's columns, decoded by the C reader (_torch_snapshot.c) under safe_pickle's rules and
    limits. A cut or damaged file gives its complete entries with a note; a pickle the pickler would not have laid
    out so (a shared entry, say) is read by safe_pickle and from_plain instead, the reference they must equal.
    release: data is a read-only mapping of a file, whose pages may leave memory once read."""
    depth, objects = max_nesting(), safe_pickle.max_objects(len(data))
    r = _torch_snapshot.read(data, depth, objects, release)
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
        traces=[DeviceTrace(**t) if t is not None else _no_trace() for t in r["traces"]],
        segments=Segments(**{k[4:]: v for k, v in r.items() if k.startswith("seg_") and k != "seg_block_start"},
                          block_start=r["seg_block_start"].astype(np.int64)),
        blocks=Blocks(**{k[4:]: v for k, v in r.items() if k.startswith("blk_")}),
        tracebacks=Tracebacks(**tb), strings=r["strings"],
        unknown_actions={**r["unknown_actions"], **{f"block state {k}": n for k, n in r["unknown_states"].items()}},
        missing_fields=missing)
    if status == "cut":
        where = (f"cut after {r['cut_entries']:,} trace entries of device {r['cut_device']}" if r["cut_in_traces"]
                 else f"cut after {r['cut_segments']:,} segments, before the device traces")
        snap.notes.append(f"{what}: the file is cut or damaged at byte {at:,} ({error}); read what came before: "
                          f"{where}")
    return snap


NOT_A_SNAPSHOT = "{}: not a PyTorch memory snapshot (a dict of segments and device_traces)"


@cache
def _no_trace() -> DeviceTrace:
    """An empty device trace (device_traces' items that are no list), made once: a small file may list millions."""
    return from_plain({"device_traces": [[]]}).traces[0]


def _plain_snapshot(snapshot, what: str) -> CudaSnapshot:
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("device_traces", []), list) or not isinstance(
            snapshot.get("segments", []), list) or not ("segments" in snapshot or "device_traces" in snapshot):
        raise ProfileError(NOT_A_SNAPSHOT.format(what))
    return from_plain(snapshot)


def load_torch_snapshot(path: Path, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    task = task or TaskState()
    path = Path(path)
    task.report(0.1, f"Reading {path.name}")
    with readable_errors(path), open(path, "rb") as f:
        gzipped = f.read(2) == GZIP_MAGIC
        size = os.fstat(f.fileno()).st_size
        if not gzipped and size:  # mapped, not copied: the pages read leave memory as the decoder passes them
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                snap = read_cuda_snapshot(m, str(path), release=True)
    if gzipped or not size:
        snap = read_cuda_snapshot(read_bytes(path, task, weight=0.4), str(path))
    task.report(0.6, f"Replaying {path.name}")
    return MemoryProfileData(host=host or path.name, allocators=snapshot_allocators(snap), source=str(path),
                             cuda_snapshot=snap)


def snapshot_allocators(snap: CudaSnapshot) -> dict[str, AllocatorProfile]:
    """One allocator `cuda:N` per device with a trace entry or a segment."""
    ops = _ops(snap)
    counted = [f"Read but not replayed: {n:,} {'blocks with' if k.startswith('block state') else 'entries with action'}"
               f" {k!r}." for k, n in snap.unknown_actions.items()]
    counted += [f"{n:,} entries without an integer {k!r} (taken as 0)." for k, n in snap.missing_fields.items()]
    out = {}
    for device in snap.devices:
        profile = _allocator(f"cuda:{device}", snap, device, ops)
        profile.notes += snap.notes + counted
        out[f"cuda:{device}"] = profile
    return out


# region codes (beside the action codes, which name the trace's rows)
R_ALLOC, R_BEFORE_FREED, R_BEFORE_SNAPSHOT = ALLOC, 253, 254
REGIONS = {ALLOC: "alloc", FREE_COMPLETED: "free_completed", R_BEFORE_FREED: BEFORE + " (freed)",
           R_BEFORE_SNAPSHOT: BEFORE + " (in the snapshot)", SEGMENT_ALLOC: "segment_alloc",
           SEGMENT_FREE: "segment_free", SEGMENT_MAP: "segment_map", SEGMENT_UNMAP: "segment_unmap"}


def _ops(snap: CudaSnapshot) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Each traceback's op (its top user frame) and each region as codes into one list of texts: (code by
    traceback, the last for none; code by region; the texts)."""
    ops = _traceback_ops(snap)
    texts, op_code = np.unique(ops, return_inverse=True)
    texts = texts.tolist()
    region_code = np.zeros(256, np.int64)
    for r, text in {**REGIONS, FREE: "free"}.items():
        region_code[r] = len(texts)
        texts.append(text)
    return op_code.astype(np.int64), region_code, texts


def _traceback_ops(snap: CudaSnapshot) -> np.ndarray:
    """Each traceback's op: its top user frame as PyTorch prints it (object array; index -1: no frames)."""
    tb, S = snap.tracebacks, snap.strings
    n = len(tb)
    out = np.full(n + 1, NO_FRAMES, object)
    if not len(tb.name):
        return out
    # PyTorch's frame filter and "a Python frame first", per distinct string, then per frame
    omit_name = np.asarray([any(f in x for f in OMIT_FUNCTIONS) for x in S])
    omit_file = np.asarray([any(f in x for f in OMIT_FILENAMES) for x in S])
    python = np.asarray([x.endswith(".py") for x in S])
    kept = ~omit_name[tb.name] & ~omit_file[tb.filename]
    rows = np.arange(len(tb.name))
    big = len(rows)
    starts = tb.start[:-1]
    nonempty = tb.start[1:] > starts
    first_py = np.full(n, big)
    first_kept = np.full(n, big)
    first_py[nonempty] = np.minimum.reduceat(np.where(kept & python[tb.filename], rows, big), starts[nonempty])
    first_kept[nonempty] = np.minimum.reduceat(np.where(kept, rows, big), starts[nonempty])
    chosen = np.where(first_py < big, first_py, first_kept)
    texts: dict[tuple[int, int, int], str] = {}
    for t in np.flatnonzero(chosen < big).tolist():
        r = int(chosen[t])
        key = (int(tb.name[r]), int(tb.filename[r]), int(tb.line[r]))
        if (text := texts.get(key)) is None:
            text = texts[key] = frame_text(S[key[0]], S[key[1]], key[2])
        out[t] = text
    return out


def top_frame(frames) -> str:
    """The allocation's top user frame, as PyTorch prints frames (filename:line:name)."""
    if not isinstance(frames, list) or not frames:
        return NO_FRAMES
    kept = [f for f in frames
            if isinstance(f, dict) and keep_frame(str(f.get("name", "")), str(f.get("filename", "")))]
    if not kept:
        return NO_FRAMES
    python = [f for f in kept if str(f.get("filename", "")).endswith(".py")]
    f = (python or kept)[0]
    return frame_text(str(f.get("name", "")), str(f.get("filename", "")), f.get("line", ""))


FREE = 255  # a free_requested followed at once by the free_completed of its address: one free (as MemoryViz)


def _same_address_runs(addr: np.ndarray, events: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """events (indices, ascending) ordered by address then index, and whether each follows one of its address."""
    order = events[np.lexsort((events, addr[events]))]
    same = np.zeros(len(order), bool)
    same[1:] = addr[order[1:]] == addr[order[:-1]]
    return order, same


def _allocator(memory_id: str, snap: CudaSnapshot, device: int, ops: tuple) -> AllocatorProfile:
    trace = snap.traces[device] if device < len(snap.traces) else _no_trace()
    raw = trace.action
    # MemoryViz's events: a free_requested and the free_completed right after it, of one address, as one free
    merged = np.zeros(len(raw), bool)
    if len(raw) > 1:
        merged[1:] = (raw[1:] == FREE_COMPLETED) & (raw[:-1] == FREE_REQUESTED) & (trace.addr[1:] == trace.addr[:-1])
    action = raw.copy()
    action[:-1][merged[1:]] = FREE
    ev = np.flatnonzero(~merged)
    action = action[ev]
    del merged
    addr, size, tbs, cats = trace.addr[ev], trace.size[ev], trace.frames[ev], trace.category[ev]
    n_ev = len(ev)
    times = trace.time_us[ev]
    timed = n_ev > 0 and bool(np.all(times != NO_TIME))
    first_time = int(times.min()) if timed else 0
    del times

    # Reserved: segment events add or take away their size; a segment freed that the trace did not reserve (the
    # event before it at its address is no reservation) was reserved before recording.
    adds = (action == SEGMENT_ALLOC) | (action == SEGMENT_MAP)
    takes = (action == SEGMENT_FREE) | (action == SEGMENT_UNMAP)
    delta = np.where(adds, size, np.where(takes, -size, 0))
    net_after = np.cumsum(delta)
    net_before = net_after - delta
    net = int(net_after[-1]) if n_ev else 0
    del delta
    order, same = _same_address_runs(addr, np.flatnonzero(adds | takes))
    after_add = np.zeros(len(order), bool)
    after_add[1:] = same[1:] & adds[order[:-1]]
    before = int(size[order[takes[order] & ~after_add]].sum())
    last = np.ones(len(order), bool)
    last[:-1] = ~same[1:]
    open_segs = order[last & adds[order]]  # reserved in the trace and still at its end
    seg_open_addr, seg_open_size = addr[open_segs], size[open_segs]

    # Allocations: an alloc opens one at its address, a free closes the open one there (the row before it at its
    # address, when that is an alloc); a free that closes nothing was allocated before recording began.
    is_pairing = (action == ALLOC) | (action == FREE) | (action == FREE_COMPLETED)
    # every allocation event and every segment event has its row (a reserved peak between two allocations shows)
    rows_ev = np.flatnonzero(is_pairing | adds | takes)
    is_alloc = action[rows_ev] == ALLOC
    is_segment = (adds | takes)[rows_ev]
    n_act = len(rows_ev)
    k_order, k_same = _same_address_runs(addr, np.flatnonzero(is_pairing))
    row_of = lambda events: np.searchsorted(rows_ev, events)  # an event's action row
    prev_alloc = np.zeros(len(k_order), bool)
    prev_alloc[1:] = k_same[1:] & (action[k_order[:-1]] == ALLOC)
    frees_sorted = action[k_order] != ALLOC
    pairs = np.flatnonzero(frees_sorted & prev_alloc)
    matched_free, partner = k_order[pairs], k_order[pairs - 1]  # events: each free that closes one, its alloc
    unmatched = np.sort(k_order[frees_sorted & ~prev_alloc])
    k_last = np.ones(len(k_order), bool)
    k_last[:-1] = ~k_same[1:]
    open_addrs = addr[k_order[k_last & ~frees_sorted]]

    # each action row's size, traceback (for its op) and category: a matched free takes its allocation's
    src = rows_ev.copy()
    src[row_of(matched_free)] = partner

    # rows before recording: unmatched frees (in trace order), then the snapshot's active blocks no allocation covers
    seg = snap.segments
    own = np.flatnonzero(seg.device == device)
    blk = snap.blocks
    b_rows, b_addr = _snapshot_blocks(seg, blk, own)
    alive = (blk.state[b_rows] == ACTIVE_ALLOCATED) & ~np.isin(b_addr, open_addrs)
    b_rows, b_addr = b_rows[alive], b_addr[alive]
    ni_free, ni = len(unmatched), len(unmatched) + len(b_rows)
    init_size = np.r_[size[unmatched], blk.requested_size[b_rows]].astype(np.int64)
    init_addr = np.r_[addr[unmatched], b_addr].astype(np.uint64)
    init_tb = np.r_[tbs[unmatched], blk.frames[b_rows]].astype(np.int32)
    init_cat = np.r_[cats[unmatched], np.zeros(len(b_rows), np.int32)].astype(np.int32)
    init_region = np.r_[np.full(ni_free, R_BEFORE_FREED), np.full(len(b_rows), R_BEFORE_SNAPSHOT)].astype(np.int32)
    op_code, region_code, texts = ops
    cat_code = lambda c: c + len(texts)
    # this allocator's strings in the order the rows first name them (each event: op, region, category; then the
    # blocks'): each string's first place, slot by slot
    al, um, sg = np.flatnonzero(action == ALLOC), unmatched, np.flatnonzero(adds | takes)
    mf = np.sort(matched_free)  # (each slot's events ascending: np.unique's first index is then the first event)
    nb = len(b_rows)
    slots = [(al, 0, op_code[tbs[al]]), (al, 1, np.full(len(al), region_code[R_ALLOC])), (al, 2, cat_code(cats[al])),
             (mf, 0, region_code[action[mf]]), (um, 0, op_code[tbs[um]]),
             (um, 1, cat_code(cats[um])), (um, 2, np.full(len(um), region_code[R_BEFORE_FREED])),
             (um, 3, region_code[action[um]]), (sg, 0, region_code[action[sg]]),
             (n_ev + np.arange(nb), 0, op_code[blk.frames[b_rows]]),
             (n_ev + np.arange(nb), 1, np.full(nb, region_code[R_BEFORE_SNAPSHOT])),
             (n_ev + np.arange(nb), 2, np.full(nb, cat_code(0)))]
    first: dict[int, int] = {}
    for where, slot, values in slots:
        distinct, at = np.unique(values, return_index=True)
        for c, place in zip(distinct.tolist(), (where[at] * 4 + slot).tolist()):
            if place < first.get(c, place + 1):
                first[c] = place
    strings: dict[str, int] = {"": 0}
    to_sid = np.zeros(len(texts) + len(snap.strings), np.int32)
    for c in sorted(first, key=first.__getitem__):
        to_sid[c] = strings.setdefault(texts[c] if c < len(texts) else snap.strings[c - len(texts)], len(strings))

    act_size, act_tb, act_cat = size[src], tbs[src], cats[src]
    act_tb = np.where(is_segment, -2, act_tb)  # a segment row has no op (-2: its code is the empty string's)
    act_cat = np.where(is_segment, 0, act_cat)
    act_frames = np.where(is_alloc, tbs[rows_ev], -1).astype(np.int32)
    act_time = ((trace.time_us[ev[rows_ev]] - first_time) if timed else rows_ev + 1) * 1_000_000
    act_activity = np.where(is_alloc, ALLOCATION, np.where(is_segment, RESERVATION, DEALLOCATION))
    act_region = action[rows_ev].astype(np.int32)
    reserved_before = net_before[rows_ev]
    after = net_after[rows_ev].astype(np.int64)  # each row holds what its own event leaves reserved
    if not n_act and ni:  # MemoryViz: a flat graph of what the snapshot holds
        n_act, ni = 1, ni - 1
        act_size, act_tb, act_cat = init_size[-1:], init_tb[-1:], init_cat[-1:]
        act_frames, act_time, act_region = init_tb[-1:], np.zeros(1, np.int64), init_region[-1:]
        act_activity = np.asarray([ALLOCATION])
        after = np.asarray([net], np.int64)
        moved_addr = init_addr[-1:]
        init_size, init_tb, init_cat, init_region, init_addr = (
            init_size[:-1], init_tb[:-1], init_cat[:-1], init_region[:-1], init_addr[:-1])
    else:
        moved_addr = addr[rows_ev]
    n = ni + n_act
    reserved = int(seg.total_size[own].sum())
    # MemoryViz: a segment the trace did not reserve was there before recording (less what the trace mapped in it)
    for i in own.tolist():
        a, total = int(seg.address[i]), int(seg.total_size[i])
        inside = (seg_open_addr >= a) & (seg_open_addr < a + total) if total > 0 else np.zeros(len(seg_open_addr), bool)
        before += max(total - int(seg_open_size[inside].sum()), 0)
    first_reserved = int(reserved_before[0]) if n_act and len(reserved_before) else net
    reserved_at = before + np.r_[np.full(ni, first_reserved, np.int64), after].astype(np.int64)

    time_ps = np.r_[np.zeros(ni, np.int64), act_time].astype(np.int64)
    activity = np.r_[np.full(ni, ALLOCATION), act_activity].astype(np.int64)
    sizes = np.r_[init_size, act_size].astype(np.int64)
    all_tb = np.r_[init_tb, act_tb].astype(np.int64)
    op = np.where(all_tb == -2, 0, to_sid[op_code[np.maximum(all_tb, -1)]])
    dtype = to_sid[cat_code(np.r_[init_cat, act_cat].astype(np.int64))]
    heap = (np.cumsum(np.where(activity == ALLOCATION, sizes, np.where(activity == DEALLOCATION, -sizes, 0))) if n
            else np.zeros(0, np.int64))
    zeros = np.zeros(n, np.int64)
    free = np.maximum(reserved_at[:n] - heap, 0)
    table = list(strings)
    timeline = Snapshots(
        time_ps=time_ps, stack=zeros, heap=heap, free=free, fragmentation=np.zeros(n),
        peak_in_use=np.maximum.accumulate(heap) if n else zeros, activity=activity, requested=sizes,
        allocation=sizes, address=np.r_[init_addr, moved_addr].astype(np.uint64), step=zeros,
        op=op.astype(np.int32), region=to_sid[region_code[np.r_[init_region, act_region]]],
        dtype=dtype.astype(np.int32),
        shape=np.zeros(n, np.int32), strings=table,
    )
    # each allocation's freeing row (n when never freed)
    frees = np.full(n, n, np.int64)
    frees[row_of(partner) + ni] = row_of(matched_free) + ni
    if ni_free:
        frees[np.arange(ni_free)] = row_of(unmatched) + ni
    allocs = np.flatnonzero(activity == ALLOCATION)
    summary = _summary(timeline, activity != RESERVATION)  # the peak on an allocation's row
    summary.num_allocations, summary.num_deallocations = len(allocs), int((activity == DEALLOCATION).sum())
    summary.memory_capacity = reserved
    row_tb = np.r_[init_tb, act_frames].astype(np.int32)
    no_frames = strings.get(NO_FRAMES, -1)
    profile = complete_profile(
        memory_id, timeline, summary, lifetimes=(allocs, frees[allocs]),
        frames=RowFrames(row_tb, snap.tracebacks, snap.strings),
        top_frame=np.where((activity == ALLOCATION) & (timeline.op != no_frames), timeline.op, 0),
        segments=segment_columns(snap, own),
    )
    if not timed:
        profile.notes.append("The trace holds no times: one event a microsecond, in the order recorded.")
    if ni:
        profile.notes.append(f"{ni:,} allocations were made before recording began ({ni_free:,} seen "
                             "freed, the rest from the snapshot's active blocks).")
    profile.notes.append(f"Reserved in segments at the snapshot: {reserved:,} bytes in {len(own):,} segments.")
    for i in np.flatnonzero(trace.action == OOM).tolist():
        profile.notes.append(f"Out of memory: {int(trace.size[i]):,} bytes requested, "
                             f"{int(trace.device_free[i]):,} bytes free on the device.")
        # on the time axis the rows use (an oom is never merged, so it is one of ev)
        oom_at = int(trace.time_us[i]) - first_time if timed else int(np.searchsorted(ev, i)) + 1
        profile.markers.append((oom_at * 1_000_000, f"OOM: {format_bytes(int(trace.size[i]))} requested, "
                                                   f"{format_bytes(int(trace.device_free[i]))} free"))
    return profile


def _summary(tl: Snapshots, rows: np.ndarray) -> MemorySummary:
    """summarize()'s numbers over the rows where `rows` holds (the last reaching the highest heap; no stack here)."""
    if not rows.any():
        return summarize(tl)
    heap = np.where(rows, tl.heap, np.iinfo(np.int64).min)
    i = len(heap) - 1 - int(np.argmax(heap[::-1]))
    return MemorySummary(
        num_allocations=0, num_deallocations=0, memory_capacity=int(tl.heap[i] + tl.free[i]),
        peak_bytes_lifetime=int(tl.peak_in_use[rows][-1]), peak_time_ps=int(tl.time_ps[i]), peak_stack=0,
        peak_heap=int(tl.heap[i]), peak_free=int(tl.free[i]), peak_fragmentation=float(tl.fragmentation[i]))


def _snapshot_blocks(seg: Segments, blk: Blocks, own: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The device's blocks (rows of Blocks) and their addresses as MemoryViz finds them: the segment's address plus
    the sizes of the blocks before."""
    starts, ends = seg.block_start[own], seg.block_start[own + 1]
    counts = ends - starts
    rows = np.repeat(starts - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(int(counts.sum()))
    sizes = blk.size[rows].astype(np.uint64)
    seg_of = np.repeat(np.arange(len(own)), counts)
    csum = np.cumsum(sizes) - sizes  # sizes before, over all the device's blocks
    first = np.r_[0, np.cumsum(counts)[:-1]].astype(np.int64)
    offset = csum - csum[first[seg_of]] if len(rows) else csum
    return rows.astype(np.int64), seg.address[own][seg_of] + offset


def segment_columns(snap: CudaSnapshot, own: np.ndarray) -> dict[str, list]:
    """The SQL segments table's columns for a device's segments (sizes the snapshot leaves out are its blocks')."""
    seg, blk, S = snap.segments, snap.blocks, snap.strings
    starts, ends = seg.block_start[own], seg.block_start[own + 1]

    def summed(given: np.ndarray, values: np.ndarray, mask: np.ndarray) -> list[int]:
        csum = np.r_[0, np.cumsum(np.where(mask, values, 0))]
        return np.where(given != NO_SIZE, given, csum[ends] - csum[starts]).tolist()

    allocated = blk.state == ACTIVE_ALLOCATED
    active = np.isin(blk.state, (ACTIVE_ALLOCATED, ACTIVE_AWAITING_FREE, ACTIVE_PENDING_FREE))
    return {
        "address": seg.address[own].tolist(), "total_bytes": seg.total_size[own].tolist(),
        "allocated_bytes": summed(seg.allocated_size[own], blk.size, allocated),
        "active_bytes": summed(seg.active_size[own], blk.size, active),
        "requested_bytes": summed(seg.requested_size[own], blk.requested_size, allocated),
        "stream": seg.stream[own].tolist(), "segment_type": [S[i] for i in seg.segment_type[own].tolist()],
        "pool_id": [S[i] if i else None for i in seg.pool_id[own].tolist()],
        "is_expandable": [None if e < 0 else int(e) for e in seg.is_expandable[own].tolist()],
    }


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
