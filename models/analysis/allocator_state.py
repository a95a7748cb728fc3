"""The CUDA caching allocator's state at any event of a memory snapshot's
device trace (PyTorch memory_viz's "Allocator State History") and its
reserved segments over time ("Active Cached Segment Timeline").

MemoryViz shows, for a chosen event, the segments and blocks replayed
backwards from the snapshot's final segments: every event after the chosen
one is undone (an alloc removes its block, a free brings its block back, a
segment_free/unmap brings its range back, a segment_alloc/map removes it).
Here that replay is done once, as lifetimes: each block and each segment
range gets the event at which it appears (`birth`, -1: before recording) and
the event at which it is gone (`death`, the event count: still there at the
snapshot); the state at event k is then what has birth <= k < death, a mask
over the lifetimes rather than a replay.

MemoryViz's rules kept here:
- its event list: a free_requested followed at once by the free_completed of
  its address is one event, "free" (a block freed by it is never shown as
  awaiting free);
- a block brought back by a free is sized by the free (size = requested
  size) and carries its frames; blocks alive at the snapshot keep their size,
  requested size and frames; an alloc still open at the end whose block the
  snapshot does not hold is not shown;
- awaiting free: from a block's free_requested up to its free_completed; a
  free_completed with no free_requested before it awaits free all its life,
  as does a snapshot block in the awaiting-free state whose request was not
  recorded;
- a segment range unmapped by segment_unmap joins the neighbours it touches
  on the same stream into one segment, as expandable segments do.
Where MemoryViz would fail on an inconsistent trace (a segment_alloc with
no segment at its address), the event is counted in `notes` and skipped.
MemoryViz reads only the "active_pending_free" block state; PyTorch writes
"active_awaiting_free": both count as awaiting free here.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from profscope.models.core.task import TaskState
from profscope.models.data.cuda_snapshot import (
    ACTIONS,
    ACTIVE_ALLOCATED,
    ACTIVE_AWAITING_FREE,
    ACTIVE_PENDING_FREE,
    ALLOC,
    FREE_COMPLETED,
    FREE_REQUESTED,
    NO_FRAMES,
    SEGMENT_ALLOC,
    SEGMENT_FREE,
    SEGMENT_MAP,
    SEGMENT_UNMAP,
    CudaSnapshot,
    frame_text,
    keep_frame,
)

FREE = 100  # MemoryViz's merged free_requested + free_completed
ALLOCATED, AWAITING_FREE = 0, 1  # block states at an event (what is not a block is inactive, free space)
STATE_NAMES = ("allocated", "active awaiting free")


def user_frames(snap: CudaSnapshot, tb: int) -> list[str]:
    """A traceback's frames as PyTorch prints them (filename:line:name), innermost first, filtered."""
    return [frame_text(name, file, line) for name, file, line in snap.tracebacks.frames_of(tb, snap.strings)
            if keep_frame(name, file)]


def top_frame(snap: CudaSnapshot, tb: int) -> str:
    """The first frame kept, a Python one when there is one."""
    frames = user_frames(snap, tb)
    python = [f for f in frames if ".py:" in f]
    return (python or frames or [NO_FRAMES])[0]


def action_name(code: int) -> str:
    return "free" if code == FREE else ACTIONS[code] if code < len(ACTIONS) else "unknown"


@dataclass
class AllocatorState:
    """The segments and blocks at one event, segments and blocks sorted by address."""

    event: int
    # segments (adjacent ranges of one expandable segment joined)
    seg_address: np.ndarray  # uint64
    seg_size: np.ndarray  # int64
    seg_stream: np.ndarray  # int64
    seg_pool: np.ndarray  # int32 string id ("a,b"), 0: the default pools
    seg_frames: np.ndarray  # int32 traceback of the segment_alloc / map that made it, -1 unknown
    seg_allocated: np.ndarray  # int64 requested bytes of its allocated blocks
    seg_awaiting: np.ndarray  # int64 requested bytes of its blocks awaiting free
    seg_internal: np.ndarray  # int64 bytes lost to rounding (block size less requested size)
    seg_free: np.ndarray  # int64 bytes in no block (inactive)
    seg_largest_free: np.ndarray  # int64 largest run of free bytes inside it
    seg_block_start: np.ndarray  # int64 len + 1: its blocks are rows seg_block_start[i]:[i + 1]
    # blocks
    address: np.ndarray  # uint64
    size: np.ndarray  # int64
    requested: np.ndarray  # int64
    state: np.ndarray  # uint8 ALLOCATED / AWAITING_FREE
    frames: np.ndarray  # int32 traceback id, -1 none
    segment: np.ndarray  # int64 index into the segments
    outside: int = 0  # blocks in no segment (an inconsistent trace), left out

    @property
    def reserved(self) -> int:
        return int(self.seg_size.sum())

    @property
    def allocated(self) -> int:
        """Requested bytes of the active blocks (what MemoryViz prints as allocated)."""
        return int(self.requested.sum())

    def totals(self) -> dict[str, int]:
        return {"segments": len(self.seg_size), "reserved": self.reserved,
                "allocated": int(self.seg_allocated.sum()), "awaiting_free": int(self.seg_awaiting.sum()),
                "internal": int(self.seg_internal.sum()), "free": int(self.seg_free.sum()),
                "largest_free": int(self.seg_largest_free.max()) if len(self.seg_largest_free) else 0,
                "blocks": len(self.size)}


@dataclass
class History:
    """One device's trace as MemoryViz lists it, and the lifetimes of its blocks and segment ranges."""

    device: int
    snapshot: CudaSnapshot
    entry: np.ndarray  # int64 the trace row of each event
    action: np.ndarray  # uint8 action code (FREE for a merged free)
    # blocks, sorted by address then birth
    b_address: np.ndarray
    b_size: np.ndarray
    b_requested: np.ndarray
    b_frames: np.ndarray
    b_birth: np.ndarray  # int64 event it appears at, -1 before recording
    b_awaiting: np.ndarray  # int64 event from which it awaits free (>= death: never)
    b_death: np.ndarray  # int64 event it is gone at, len(events): there at the snapshot
    # segment ranges (pieces of segments), sorted by address then birth
    p_address: np.ndarray
    p_size: np.ndarray
    p_stream: np.ndarray
    p_pool: np.ndarray
    p_frames: np.ndarray
    p_joins: np.ndarray  # bool: joins same-stream neighbours (mapped ranges, expandable segments)
    p_birth: np.ndarray
    p_death: np.ndarray
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.entry)

    # ------------------------------------------------------------- one event

    def event(self, k: int) -> dict:
        """Event k's fields for display."""
        t = self.snapshot.traces[self.device]
        i = int(self.entry[k])
        return {"index": k, "entry": i, "action": action_name(int(self.action[k])), "address": int(t.addr[i]),
                "size": int(t.size[i]), "stream": int(t.stream[i]), "time_us": int(t.time_us[i]),
                "frames": int(t.frames[i]), "device_free": int(t.device_free[i])}

    def state(self, k: int) -> AllocatorState:
        """The segments and blocks after event k (-1: before the first event)."""
        live = np.flatnonzero((self.p_birth <= k) & (k < self.p_death))
        addr, size = self.p_address[live], self.p_size[live]
        stream = self.p_stream[live]
        # a range joins the one before it when they touch on the same stream and either joins neighbours
        end = addr + size.astype(np.uint64)
        touch = (addr[1:] == end[:-1]) & (stream[1:] == stream[:-1]) & (
            self.p_joins[live][1:] | self.p_joins[live][:-1])
        first = np.flatnonzero(np.concatenate(([True], ~touch))) if len(live) else np.zeros(0, np.int64)
        seg_size = np.add.reduceat(size, first) if len(live) else np.zeros(0, np.int64)
        seg_addr = addr[first]
        pool = self.p_pool[live]
        frames = self.p_frames[live]
        blive = np.flatnonzero((self.b_birth <= k) & (k < self.b_death))
        b_addr = self.b_address[blive]
        seg = np.searchsorted(seg_addr, b_addr, "right") - 1
        inside = seg >= 0
        inside[inside] = b_addr[inside] < seg_addr[seg[inside]] + seg_size[seg[inside]].astype(np.uint64)
        blive, seg, b_addr = blive[inside], seg[inside], b_addr[inside]
        b_size, b_req = self.b_size[blive], self.b_requested[blive]
        state = (self.b_awaiting[blive] <= k).astype(np.uint8)
        n = len(seg_addr)
        req_alloc = np.bincount(seg, np.where(state == ALLOCATED, b_req, 0), n).astype(np.int64)
        req_wait = np.bincount(seg, np.where(state == AWAITING_FREE, b_req, 0), n).astype(np.int64)
        internal = np.bincount(seg, np.maximum(b_size - b_req, 0), n).astype(np.int64)
        used = np.bincount(seg, b_size, n).astype(np.int64)
        # free runs: before each block (from the previous block's end or the segment's start) and after the last
        starts = np.searchsorted(seg, np.arange(n + 1))
        prev_end = np.where(np.r_[True, seg[1:] != seg[:-1]] if len(seg) else np.zeros(0, bool),
                            seg_addr[seg] if len(seg) else np.zeros(0, np.uint64),
                            np.r_[np.zeros(1, np.uint64), b_addr[:-1] + b_size[:-1].astype(np.uint64)][:len(seg)])
        gaps = np.maximum(b_addr.astype(np.int64) - prev_end.astype(np.int64), 0)
        largest = np.zeros(n, np.int64)
        if len(seg):
            np.maximum.at(largest, seg, gaps)
        last_end = seg_addr.copy()
        has = starts[1:] > starts[:-1]
        last = starts[1:][has] - 1
        last_end[has] = b_addr[last] + b_size[last].astype(np.uint64)
        tail = (seg_addr + seg_size.astype(np.uint64)).astype(np.int64) - last_end.astype(np.int64)
        largest = np.maximum(largest, tail)
        return AllocatorState(
            event=k, seg_address=seg_addr, seg_size=seg_size, seg_stream=stream[first],
            seg_pool=np.maximum.reduceat(pool, first) if n else pool[:0],
            seg_frames=np.maximum.reduceat(frames, first) if n else frames[:0],
            seg_allocated=req_alloc, seg_awaiting=req_wait, seg_internal=internal,
            seg_free=np.maximum(seg_size - used, 0), seg_largest_free=largest, seg_block_start=starts.astype(np.int64),
            address=b_addr, size=b_size, requested=b_req, state=state, frames=self.b_frames[blive], segment=seg,
            outside=int((~inside).sum()))

    # ------------------------------------------------------ cached segments

    @cached_property
    def bands(self) -> SegmentBands:
        """The cached segment timeline (MemoryViz's Active Cached Segment Timeline): the reserved segment ranges
        stacked at each event, the first reserved lowest (a range reserved goes on top; when one is released, those
        above it move down)."""
        n = len(self)
        birth = self.p_birth
        total = np.zeros(n + 2, np.int64)  # reserved bytes before the first event (index 0), then after each
        np.add.at(total, birth + 1, self.p_size)
        np.add.at(total, self.p_death + 1, -self.p_size)
        return SegmentBands(history=self, order=np.lexsort((self.p_address, birth)),
                            reserved=np.cumsum(total)[:n + 1])


@dataclass
class SegmentBands:
    """The cached segment timeline over the events -1 (before recording) .. n - 1."""

    history: History
    order: np.ndarray  # segment ranges (of the History) in stacking order: by birth, then address
    reserved: np.ndarray  # len(events) + 1: reserved bytes before the first event, then after each

    @property
    def peak(self) -> int:
        return int(self.reserved.max()) if len(self.reserved) else 0

    def stack_at(self, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ranges reserved after event k from the bottom up, and the bytes each starts and ends at."""
        h, o = self.history, self.order
        live = o[(h.p_birth[o] <= k) & (k < h.p_death[o])]
        top = np.cumsum(h.p_size[live])
        return live, top - h.p_size[live], top

    def at(self, k: int, y: float) -> int:
        """The range under (event k, bytes y), or -1."""
        live, y0, y1 = self.stack_at(k)
        hit = np.flatnonzero((y0 <= y) & (y < y1))
        return int(live[hit[0]]) if len(hit) else -1

    def peak_events(self, edges: np.ndarray) -> np.ndarray:
        """For each span of events edges[i]..edges[i + 1] (a pixel column), the event with the most reserved."""
        r = self.reserved  # r[k + 1] is event k's
        out = np.empty(len(edges) - 1, np.int64)
        for i, (lo, hi) in enumerate(zip(edges[:-1].tolist(), edges[1:].tolist())):
            hi = max(hi, lo + 1)
            out[i] = lo + int(np.argmax(r[lo + 1:hi + 1])) if lo + 1 < len(r) else len(r) - 2
        return out


# ----------------------------------------------------------------- building


def _merged_rows(action: np.ndarray, addr: np.ndarray) -> np.ndarray:
    """Trace rows MemoryViz folds into the row before: a free_completed right after the free_requested of its
    address (that row becomes the "free")."""
    drop = np.zeros(len(action), bool)
    drop[1:] = (action[1:] == FREE_COMPLETED) & (action[:-1] == FREE_REQUESTED) & (addr[1:] == addr[:-1])
    return drop


def build_history(snap: CudaSnapshot, device: int, task: TaskState | None = None) -> History:
    """The lifetimes of one device's blocks and segment ranges (see the module's rules)."""
    trace = snap.traces[device] if device < len(snap.traces) else None
    raw_action = trace.action if trace is not None else np.zeros(0, np.uint8)
    raw_addr = trace.addr if trace is not None else np.zeros(0, np.uint64)
    drop = _merged_rows(raw_action, raw_addr)
    entry = np.flatnonzero(~drop)
    action = raw_action[entry].copy()
    action[np.r_[drop[1:], False][entry]] = FREE  # the row before a folded one
    n = len(entry)
    addr = raw_addr[entry]
    size = trace.size[entry] if trace is not None else np.zeros(0, np.int64)
    frames = trace.frames[entry] if trace is not None else np.zeros(0, np.int32)
    stream = trace.stream[entry] if trace is not None else np.zeros(0, np.int64)
    notes: list[str] = []
    if task is not None:
        task.raise_if_cancelled()
    blocks = _block_lifetimes(snap, device, n, action, addr, size, frames, notes)
    pieces = _segment_pieces(snap, device, n, action, addr, size, frames, stream, notes)
    return History(device=device, snapshot=snap, entry=entry.astype(np.int64), action=action, **blocks, **pieces,
                   notes=notes)


def _final_segments(snap: CudaSnapshot, device: int) -> np.ndarray:
    return np.flatnonzero(snap.segments.device == device)


def _block_lifetimes(snap, device, n, action, addr, size, frames, notes) -> dict:
    # the snapshot's active blocks, by address
    bs = snap.segments.block_start
    rows = np.concatenate([np.arange(bs[s], bs[s + 1]) for s in _final_segments(snap, device)] + [
        np.zeros(0, np.int64)])
    st = snap.blocks.state[rows]
    rows = rows[(st == ACTIVE_ALLOCATED) | (st == ACTIVE_AWAITING_FREE) | (st == ACTIVE_PENDING_FREE)]
    rows = rows[np.argsort(snap.blocks.address[rows], kind="stable")]
    f_addr = snap.blocks.address[rows]
    f_awaiting = snap.blocks.state[rows] != ACTIVE_ALLOCATED
    # the trace's allocs and frees by address, in order
    life = np.flatnonzero((action == ALLOC) | (action == FREE_COMPLETED) | (action == FREE))
    life = life[np.lexsort((life, addr[life]))]
    la = addr[life]
    is_alloc = action[life] == ALLOC
    same_prev = np.r_[False, la[1:] == la[:-1]]
    last_at = ~np.r_[la[1:] == la[:-1], False]
    # a free's block appears at the event before it at its address (its alloc, or an earlier free), else before
    # recording; an alloc followed by another alloc is never seen (MemoryViz undoes both as one removal)
    d_pos = np.flatnonzero(~is_alloc)
    d_event = life[d_pos]
    d_birth = np.where(same_prev[d_pos], life[np.maximum(d_pos - 1, 0)], -1)
    # a snapshot block appears at the last event at its address
    j = np.searchsorted(la, f_addr, "right") - 1
    known = j >= 0
    known[known] = la[j[known]] == f_addr[known]
    f_birth = np.where(known, life[np.maximum(j, 0)] if len(life) else -1, -1)
    open_allocs = life[is_alloc & last_at]
    k = np.searchsorted(f_addr, addr[open_allocs])
    unseen = int((f_addr[np.minimum(k, max(len(f_addr) - 1, 0))] != addr[open_allocs]).sum()) if len(f_addr) \
        else len(open_allocs)
    if unseen:
        notes.append(f"{unseen:,} allocations open at the end are not among the snapshot's blocks (not shown, as "
                     "MemoryViz does).")
    b_addr = np.concatenate((addr[d_event], f_addr))
    b_birth = np.concatenate((d_birth, f_birth)).astype(np.int64)
    b_death = np.concatenate((d_event, np.full(len(f_addr), n))).astype(np.int64)
    # awaiting free: from the free_requested inside its life; without one, all its life for a free_completed's
    # block and a snapshot block awaiting free; never for a merged free's block or an allocated snapshot block
    may_wait = np.concatenate((action[d_event] == FREE_COMPLETED, f_awaiting))
    never = n + 1
    b_awaiting = np.full(len(b_addr), never, np.int64)
    req = np.flatnonzero(action == FREE_REQUESTED)
    if len(req) and len(b_addr):
        o = np.lexsort((b_birth, b_addr))
        owner = _last_born(b_addr[o], b_birth[o], addr[req], req)
        ok = owner >= 0
        ok[ok] = b_addr[o][owner[ok]] == addr[req][ok]
        tgt, ev = o[owner[ok]], req[ok]
        keep = (ev < b_death[tgt]) & may_wait[tgt]
        np.minimum.at(b_awaiting, tgt[keep], ev[keep])
    b_awaiting = np.where(b_awaiting < never, b_awaiting, np.where(may_wait, b_birth, never))
    b_size = np.concatenate((size[d_event], snap.blocks.size[rows])).astype(np.int64)
    b_req = np.concatenate((size[d_event], snap.blocks.requested_size[rows])).astype(np.int64)
    b_frames = np.concatenate((frames[d_event], snap.blocks.frames[rows])).astype(np.int32)
    o = np.lexsort((b_birth, b_addr))
    return {"b_address": b_addr[o], "b_size": b_size[o], "b_requested": b_req[o], "b_frames": b_frames[o],
            "b_birth": b_birth[o], "b_awaiting": b_awaiting[o], "b_death": b_death[o]}


def _last_born(sa: np.ndarray, sb: np.ndarray, a: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Per query (address a, event e): the index into (sa, sb), sorted by (address, birth), of the last row
    with address <= a and birth <= e in that order (-1: none); the caller checks the address."""
    keys = np.unique(sa)
    span = int(max(sb.max(initial=0), e.max(initial=0))) + 2
    row_key = np.searchsorted(keys, sa).astype(np.int64) * span + (sb + 1)
    q_key = np.searchsorted(keys, a).astype(np.int64) * span + (e + 1)
    return np.searchsorted(row_key, q_key, "right") - 1


def _segment_pieces(snap, device, n, action, addr, size, frames, stream, notes) -> dict:
    """Segment ranges by undoing the segment events from the snapshot's segments backwards (few events: a loop)."""
    s = snap.segments
    segs = _final_segments(snap, device)
    cols: dict[str, list] = {"a": [], "n": [], "s": [], "p": [], "f": [], "j": [], "b": [], "d": []}

    def piece(a, sz, st, pool, fr, joins, death) -> int:
        for key, v in (("a", a), ("n", sz), ("s", st), ("p", pool), ("f", fr), ("j", joins), ("b", None),
                       ("d", death)):
            cols[key].append(v)
        return len(cols["a"]) - 1

    live_addr: list[int] = []  # sorted addresses of the live pieces
    live_id: list[int] = []

    def add(p: int) -> None:
        i = bisect.bisect_left(live_addr, cols["a"][p])
        live_addr.insert(i, cols["a"][p])
        live_id.insert(i, p)

    default_pool = {0, snap.strings.index("0,0") if "0,0" in snap.strings else 0}  # (0, 0): no private pool
    for i in segs.tolist():
        pool = int(s.pool_id[i])
        add(piece(int(s.address[i]), int(s.total_size[i]), int(s.stream[i]), 0 if pool in default_pool else pool, -1,
                  bool(s.is_expandable[i] == 1), n))
    skipped = 0
    seg_ev = np.flatnonzero((action >= SEGMENT_ALLOC) & (action <= SEGMENT_UNMAP))[::-1]
    for k in seg_ev.tolist():
        act, a, sz = int(action[k]), int(addr[k]), int(size[k])
        if act in (SEGMENT_FREE, SEGMENT_UNMAP):  # undone: the range comes back
            add(piece(a, sz, int(stream[k]), 0, int(frames[k]), act == SEGMENT_UNMAP, k))
            continue
        # SEGMENT_ALLOC / SEGMENT_MAP undone: the range goes; a piece wider than it leaves its other parts
        end = a + sz
        i = max(bisect.bisect_right(live_addr, a) - 1, 0)
        hit = []
        while i < len(live_addr) and live_addr[i] < end:
            p = live_id[i]
            if cols["a"][p] + cols["n"][p] > a and (act == SEGMENT_MAP or cols["a"][p] == a):
                hit.append(i)
            i += 1
        if not hit or (act == SEGMENT_ALLOC and len(hit) != 1):
            skipped += 1
            continue
        for i in reversed(hit):
            p = live_id.pop(i)
            live_addr.pop(i)
            cols["b"][p] = k
            if cols["f"][p] < 0:
                cols["f"][p] = int(frames[k])
            pa, pe = cols["a"][p], cols["a"][p] + cols["n"][p]
            for lo, hi in ((pa, min(a, pe)), (max(end, pa), pe)):
                if hi > lo:
                    add(piece(lo, hi - lo, cols["s"][p], cols["p"][p], cols["f"][p], cols["j"][p], k))
    if skipped:
        notes.append(f"{skipped:,} segment_alloc/segment_map events match no segment (skipped).")
    birth = np.asarray([-1 if b is None else b for b in cols["b"]], np.int64)
    address = np.asarray(cols["a"], np.uint64)
    o = np.lexsort((birth, address))
    return {"p_address": address[o], "p_size": np.asarray(cols["n"], np.int64)[o],
            "p_stream": np.asarray(cols["s"], np.int64)[o], "p_pool": np.asarray(cols["p"], np.int32)[o],
            "p_frames": np.asarray(cols["f"], np.int32)[o], "p_joins": np.asarray(cols["j"], bool)[o],
            "p_birth": birth[o], "p_death": np.asarray(cols["d"], np.int64)[o]}


def prepare_histories(snap: CudaSnapshot | None, task: TaskState | None = None) -> dict[str, History]:
    """Every device's History by memory id `cuda:N`, for the Memory tab (built in the loading worker)."""
    if snap is None:
        return {}
    out = {}
    for d in snap.devices:
        out[f"cuda:{d}"] = history = build_history(snap, d, task)
        history.bands  # noqa: B018 (made here, in the worker)
    return out
