"""TensorFlow / XProf memory profiles (memory_profile.proto) as numpy columns.

The model every memory source produces: MemoryProfile files
(profscope.models.formats.memory_profile_file), and XSpace, StepStats, LogMemory and
Kineto traces built from their events. It answers what the memory view
shows: memory over time per allocator, the summary XProf shows, the active
allocations at the peak by XProf's rules, and the active allocations at any
other snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from profscope.models.core.task import ProfileError
from profscope.models.data import _jsonrows
from profscope.models.data.allocation_log import AllocationLog
from profscope.models.data.cuda_snapshot import CudaSnapshot

# MemoryActivity enum of memory_profile.proto.
ACTIVITY_NAMES = ("UNKNOWN_ACTIVITY", "ALLOCATION", "DEALLOCATION", "RESERVATION", "EXPANSION")
ALLOCATION, DEALLOCATION, RESERVATION = 1, 2, 3  # RESERVATION: PyTorch snapshots' segment events (reserved, not heap)
# XProf samples the timeline down to this many snapshots.
XPROF_TIMELINE_POINTS = 1000
# Labels of the rows XProf adds to the peak table.
UNMAPPED_OP = "unused preallocated device memory"
STACK_OP = "stack"

SNAPSHOT_INT_COLUMNS = ("time_ps", "stack", "heap", "free", "peak_in_use", "activity",
                        "requested", "allocation", "address", "step")
STRING_COLUMNS = ("op", "region", "dtype", "shape")


@dataclass
class Snapshots:
    """Memory snapshots, one row per allocation or deallocation, sorted by time.

    String columns hold ids into `strings` (id 0 is the empty string).
    """

    time_ps: np.ndarray
    stack: np.ndarray
    heap: np.ndarray
    free: np.ndarray
    fragmentation: np.ndarray
    peak_in_use: np.ndarray
    activity: np.ndarray
    requested: np.ndarray
    allocation: np.ndarray
    address: np.ndarray
    step: np.ndarray
    op: np.ndarray
    region: np.ndarray
    dtype: np.ndarray
    shape: np.ndarray
    strings: list[str]

    def __len__(self) -> int:
        return len(self.time_ps)

    @property
    def in_use(self) -> np.ndarray:
        """Stack plus heap: what XProf calls memory usage."""
        return self.stack + self.heap

    def metadata(self, i: int) -> dict:
        """The activity of snapshot i, for readouts."""
        s = self.strings
        return {
            "activity": ACTIVITY_NAMES[self.activity[i]] if 0 <= self.activity[i] < 5 else str(self.activity[i]),
            "op": s[self.op[i]], "requested": int(self.requested[i]),
            "allocation": int(self.allocation[i]), "address": int(self.address[i]),
            "step": int(self.step[i]), "region": s[self.region[i]],
            "dtype": s[self.dtype[i]], "shape": s[self.shape[i]],
        }

    def take(self, index: np.ndarray) -> Snapshots:
        cols = {name: getattr(self, name)[index] for name in SNAPSHOT_INT_COLUMNS + ("fragmentation",) + STRING_COLUMNS}
        return Snapshots(strings=self.strings, **cols)


@dataclass
class Metadata:
    """One MemoryActivityMetadata (used for XProf's special allocations)."""

    activity: int = ALLOCATION
    requested: int = 0
    allocation: int = 0
    address: int = 0
    op: str = ""
    step: int = 0
    region: str = ""
    dtype: str = ""
    shape: str = ""


@dataclass
class MemorySummary:
    """The numbers of XProf's summary card for one allocator."""

    num_allocations: int
    num_deallocations: int
    memory_capacity: int
    peak_bytes_lifetime: int
    peak_time_ps: int
    peak_stack: int
    peak_heap: int
    peak_free: int
    peak_fragmentation: float

    @property
    def peak_in_use(self) -> int:
        return self.peak_stack + self.peak_heap


@dataclass
class AllocationRows:
    """Rows of an active-allocation table.

    `snapshot` is the timeline index of the allocation (-1 when the row has
    no snapshot on the timeline, such as XProf's stack row); `freed` the
    timeline index of its deallocation (-1 when never freed or unknown).
    """

    op: list[str]
    region: list[str]
    dtype: list[str]
    shape: list[str]
    allocation: np.ndarray
    requested: np.ndarray
    occurrences: np.ndarray
    step: np.ndarray
    snapshot: np.ndarray
    freed: np.ndarray

    def __len__(self) -> int:
        return len(self.allocation)

    @property
    def total_bytes(self) -> int:
        return int((self.allocation * self.occurrences).sum())

    def where(self, mask: np.ndarray) -> AllocationRows:
        """The rows where mask is true."""
        idx = np.flatnonzero(mask)
        return AllocationRows(
            op=[self.op[i] for i in idx], region=[self.region[i] for i in idx], dtype=[self.dtype[i] for i in idx],
            shape=[self.shape[i] for i in idx], allocation=self.allocation[idx], requested=self.requested[idx],
            occurrences=self.occurrences[idx], step=self.step[idx], snapshot=self.snapshot[idx], freed=self.freed[idx])


@dataclass
class AllocatorProfile:
    """Everything about one allocator (memory id) of one host."""

    memory_id: str
    timeline: Snapshots
    summary: MemorySummary
    peak_allocations: AllocationRows
    # True when the timeline holds every snapshot (not XProf's sample).
    complete: bool
    # What the file held, kept for export "as given".
    stored_snapshots: Snapshots
    stored_sampled: Snapshots | None = None
    stored_rows: list[tuple[int, int, int]] = field(default_factory=list)
    special: list[Metadata] = field(default_factory=list)
    # Allocation indices and the index freeing each (len(timeline) if never),
    # when the source pairs them itself; else paired by address.
    lifetimes: tuple[np.ndarray, np.ndarray] | None = None
    # What the reader could not use (rows of a given table whose reference finds nothing), for the view.
    notes: list[str] = field(default_factory=list)
    # Sources with call stacks (PyTorch snapshots): each allocation's frames by its timeline row, innermost
    # first, each a dict of name, filename and line; its top user frame by row (ids into timeline.strings, 0
    # where none).
    frames: Mapping[int, list] | None = None
    top_frame: np.ndarray | None = None
    # Sources that list the allocator's segments (PyTorch snapshots): columns of the SQL segments table.
    segments: dict[str, list] | None = None
    # Sources whose memory is split into categories (PyTorch memory timelines): each category's name and colour
    # ("#rrggbb"), bottom of the stack first, and the category of each timeline row (an index into them). The
    # plot then stacks the categories' bytes instead of stack and heap.
    categories: tuple[tuple[str, str], ...] = ()
    category: np.ndarray | None = None
    # The region of each row is the allocation's whole call stack (JAX pprof profiles): a diff matches rows by it.
    region_is_stack: bool = False
    # Moments the plot marks with a line and a label (PyTorch snapshots' out-of-memory events): (time_ps, label).
    markers: list[tuple[int, str]] = field(default_factory=list)

    @property
    def peak_rows_given(self) -> bool:
        """The file carried its own table of active allocations at the peak."""
        return bool(self.stored_rows)

    @cached_property
    def peak_index(self) -> int:
        """Timeline index of the window peak (-1 if the timeline is empty)."""
        tl = self.timeline
        if not len(tl):
            return -1
        hits = np.flatnonzero((tl.time_ps == self.summary.peak_time_ps) & (tl.in_use == self.summary.peak_in_use))
        if len(hits):
            return int(hits[-1])
        return int(np.argmax(tl.in_use))

    @cached_property
    def lifetime_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Allocation indices on the timeline and the index that frees each."""
        if self.lifetimes is not None:
            return self.lifetimes
        tl = self.timeline
        return allocation_indices(tl), free_indices(tl)

    def freed_at(self, snapshot: int) -> int:
        """Timeline index of the deallocation of the allocation `snapshot`, or -1."""
        allocs, frees = self.lifetime_pairs
        k = np.searchsorted(allocs, snapshot)
        if k < len(allocs) and allocs[k] == snapshot:
            return int(frees[k])
        return -1

    def index_at_time(self, time_ps: float) -> int:
        """The last snapshot at or before time_ps (0 before the first)."""
        i = int(np.searchsorted(self.timeline.time_ps, time_ps, side="right")) - 1
        return max(i, 0)

    def live_rows(self, index: int) -> np.ndarray:
        """Timeline rows of the allocations alive right after row `index`."""
        return self._live(index)[0]

    def _live(self, index: int) -> tuple[np.ndarray, np.ndarray]:
        """live_rows, and the row freeing each (len(timeline) if never)."""
        allocs, frees = self.lifetime_pairs
        k = int(np.searchsorted(allocs, index, side="right"))
        alive = frees[:k] > index
        return allocs[:k][alive], frees[:k][alive]

    def allocations_at(self, index: int) -> AllocationRows:
        """Allocations alive right after timeline snapshot `index`.

        Beyond XProf (which only answers at the peak and only for the peak's
        step): every allocation made on the timeline up to `index` and not yet
        freed, plus a row for the heap not explained by them (allocated before
        the profile) and the stack, merged and sorted as XProf's table.
        """
        if not self.complete:
            raise ProfileError(
                "This file holds only XProf's 1,000 sampled snapshots, so the allocations alive at an "
                "arbitrary moment cannot be known; only the table at the peak, which the file carries, is exact."
            )
        tl = self.timeline
        live, live_freed = self._live(index)
        unmapped = int(tl.heap[index]) - int(tl.allocation[live].sum())
        specials = []
        if unmapped > 0:
            specials.append(_special(UNMAPPED_OP, "persist/dynamic", unmapped, int(tl.step[index])))
        if tl.stack[index] > 0:
            specials.append(_special(STACK_OP, "stack", int(tl.stack[index]), int(tl.step[index])))
        return merge_rows(tl, live, specials, freed=np.where(live_freed >= len(tl), -1, live_freed))


@dataclass
class MemoryProfileData:
    """A host's memory profile: allocators by memory id."""

    host: str
    allocators: dict[str, AllocatorProfile]
    num_hosts: int = 1
    version: int = 0
    source: str = ""
    # What a log of allocations held beyond the timelines (TensorFlow LogMemory logs fill it).
    log: AllocationLog | None = None
    # A PyTorch CUDA memory snapshot's columns (its allocator state history and cached segments are drawn from them).
    cuda_snapshot: CudaSnapshot | None = None
    # Allocators the reader had to leave out, with why.
    problems: list[str] = field(default_factory=list)

    @property
    def memory_ids(self) -> list[str]:
        return sorted(self.allocators)


# ---------------------------------------------------------------- analysis


def summarize(tl: Snapshots) -> MemorySummary:
    """XProf's summary: the last snapshot that reaches the highest stack + heap."""
    if not len(tl):
        return MemorySummary(0, 0, 0, 0, 0, 0, 0, 0, 0.0)
    in_use = tl.in_use
    i = int(np.flatnonzero(in_use == in_use.max())[-1])
    return MemorySummary(
        num_allocations=0, num_deallocations=0,
        memory_capacity=int(tl.stack[i] + tl.heap[i] + tl.free[i]),
        peak_bytes_lifetime=int(tl.peak_in_use[-1]),
        peak_time_ps=int(tl.time_ps[i]), peak_stack=int(tl.stack[i]), peak_heap=int(tl.heap[i]),
        peak_free=int(tl.free[i]), peak_fragmentation=float(tl.fragmentation[i]),
    )


def allocation_indices(tl: Snapshots) -> np.ndarray:
    return np.flatnonzero(tl.activity == ALLOCATION)


def free_indices(tl: Snapshots) -> np.ndarray:
    """For each allocation (in allocation_indices order), the index of the next
    non-allocation at the same address, or len(tl) when it is never freed."""
    n = len(tl)
    order = np.lexsort((np.arange(n), tl.address))
    addr = tl.address[order]
    is_alloc = tl.activity[order] == ALLOCATION
    pair = (addr[1:] == addr[:-1]) & is_alloc[:-1] & ~is_alloc[1:]
    free_of = np.full(n, n, np.int64)
    free_of[order[:-1][pair]] = order[1:][pair]
    return free_of[allocation_indices(tl)]


def xprof_peak_rows(tl: Snapshots, summary: MemorySummary) -> AllocationRows:
    """The active allocations at the peak, by XProf's rules.

    XProf looks only at the step holding the peak: the allocations of that
    step made up to the peak and not freed by then, matched by address; the
    rest of the heap becomes an "unused preallocated device memory" row, and
    the stack a "stack" row. Identical rows are merged with a count.
    """
    if not len(tl):
        return merge_rows(tl, np.zeros(0, np.int64), [])
    in_use = tl.in_use
    hits = np.flatnonzero(in_use == summary.peak_in_use)
    peak_step = int(tl.step[hits[-1]]) if len(hits) else 0
    end = int(np.searchsorted(tl.time_ps, summary.peak_time_ps, side="right"))
    sel = np.flatnonzero(tl.step[:end] == peak_step)
    is_alloc = tl.activity[sel] == ALLOCATION
    size = tl.allocation[sel]
    unmapped = summary.peak_heap - int(size[is_alloc].sum()) + int(size[~is_alloc].sum())
    live = np.zeros(0, np.int64)
    if len(sel):
        # Replay XProf's address map: sorted by (address, time), an event
        # "finds" its address mapped when the event before it there allocated.
        order = np.lexsort((np.arange(len(sel)), tl.address[sel]))
        addr, alloc_sorted = tl.address[sel][order], is_alloc[order]
        change = addr[1:] != addr[:-1]
        mapped_before = np.r_[False, alloc_sorted[:-1] & ~change]
        unmatched_free = ~alloc_sorted & ~mapped_before
        last_at_addr = np.r_[change, True]
        live = np.sort(sel[order[last_at_addr & alloc_sorted]])
        unmapped -= int(size[order][unmatched_free].sum())
    specials = []
    if unmapped > 0:
        specials.append(_special(UNMAPPED_OP, "persist/dynamic", unmapped, peak_step))
    if summary.peak_stack > 0:
        specials.append(_special(STACK_OP, "stack", summary.peak_stack, peak_step))
    return merge_rows(tl, live, specials)


def _special(op: str, region: str, size: int, step: int) -> Metadata:
    size = min(size, np.iinfo(np.int64).max)  # a difference of corrupt sizes can pass what int64 holds
    return Metadata(ALLOCATION, size, size, 0, op, step, region, "INVALID", "unknown")


def merge_rows(
    tl: Snapshots, live: np.ndarray, specials: list[Metadata], freed: np.ndarray | None = None
) -> AllocationRows:
    """Merges identical allocations and sorts rows as XProf's table does:
    allocation and requested size descending, then op, region, data type and
    shape ascending. The merged row keeps its earliest allocation."""
    if freed is None:
        freed = np.full(len(live), -1, np.int64)
    # The specials' strings join the timeline's table; lexical ranks of the ids
    # let numpy sort by string order. Equal texts share a rank: a table may
    # hold one text twice (LogMemory shows two spellings of a shape alike).
    strings = list(tl.strings)
    extra: dict[str, list[int]] = {name: [] for name in STRING_COLUMNS}
    for sp in specials:
        for name, value in zip(STRING_COLUMNS, (sp.op, sp.region, sp.dtype, sp.shape)):
            extra[name].append(len(strings))
            strings.append(value)
    cols = {
        name: np.r_[getattr(tl, name)[live], np.asarray(extra[name], np.int64)].astype(np.int64)
        for name in STRING_COLUMNS
    }
    # Only the texts the rows use are ranked (a table can hold millions).
    used = np.unique(np.concatenate(list(cols.values())))
    rank = np.zeros(len(strings), np.int64)
    rank[used] = np.unique(np.asarray([strings[i] for i in used.tolist()], dtype=object), return_inverse=True)[1]
    # (np.r_ with an empty list would make float64 of them, losing big values)
    special = lambda key: np.asarray([getattr(sp, key) for sp in specials], np.int64)
    alloc = np.r_[tl.allocation[live], special("allocation")].astype(np.int64)
    req = np.r_[tl.requested[live], special("requested")].astype(np.int64)
    step = np.r_[tl.step[live], special("step")].astype(np.int64)
    snap = np.r_[live, np.full(len(specials), -1)].astype(np.int64)
    fr = np.r_[freed, np.full(len(specials), -1)].astype(np.int64)
    keys = (snap, rank[cols["shape"]], rank[cols["dtype"]], rank[cols["region"]], rank[cols["op"]], -req, -alloc)
    order = np.lexsort(keys)
    same = np.ones(len(order), bool)
    if len(order):
        same[0] = False
        for k in keys[1:]:
            ks = k[order]
            same[1:] &= ks[1:] == ks[:-1]
    starts = np.flatnonzero(~same)
    counts = np.diff(np.r_[starts, len(order)])
    first = order[starts]
    return AllocationRows(
        op=[strings[i] for i in cols["op"][first]],
        region=[strings[i] for i in cols["region"][first]],
        dtype=[strings[i] for i in cols["dtype"][first]],
        shape=[strings[i] for i in cols["shape"][first]],
        allocation=alloc[first],
        requested=req[first],
        occurrences=counts.astype(np.int64),
        step=step[first],
        snapshot=snap[first],
        freed=fr[first],
    )


def complete_profile(memory_id: str, timeline: Snapshots, summary: MemorySummary, **fields) -> AllocatorProfile:
    """An allocator whose timeline holds every snapshot (a source replayed
    event by event), stored as given, with its table at the peak found from
    the lifetimes; `fields` are AllocatorProfile's optional ones."""
    profile = AllocatorProfile(
        memory_id=memory_id, timeline=timeline, summary=summary,
        peak_allocations=None,  # type: ignore[arg-type]  # set below, from the profile
        complete=True, stored_snapshots=timeline, **fields,
    )
    profile.peak_allocations = (
        profile.allocations_at(profile.peak_index) if len(timeline)
        else merge_rows(timeline, np.zeros(0, np.int64), [])
    )
    return profile


def sample_timeline(tl: Snapshots, points: int = XPROF_TIMELINE_POINTS) -> np.ndarray:
    """Indices XProf keeps for its timeline chart: the highest stack + heap in
    each of `points` consecutive boxes (boxes of width w, then w + 1)."""
    n = len(tl)
    if n <= points:
        return np.arange(n)
    width = n // points
    narrow = points * (width + 1) - n
    in_use = tl.in_use
    out = []
    for w, count, start in ((width, narrow, 0), (width + 1, points - narrow, width * narrow)):
        if count:
            boxes = in_use[start : start + w * count].reshape(count, w)
            out.append(start + np.arange(count) * w + np.argmax(boxes, axis=1))
    return np.concatenate(out)


# ---------------------------------------------------------------- export


def to_xprof_json(profile: MemoryProfileData, xprof_form: bool = False) -> dict:
    """xprof_json_chunks as one document (for small profiles and tests)."""
    return json.loads(b"".join(xprof_json_chunks(profile, xprof_form)))


def xprof_json_chunks(profile: MemoryProfileData, xprof_form: bool = False) -> Iterator[bytes]:
    """The MemoryProfile as XProf's memory_profile tool returns it (proto3
    JSON, camelCase, int64 as strings, every field printed), in chunks made
    as they are consumed: the bytes of json.dumps(doc, separators=(",", ":")),
    without a dict per snapshot or the whole text in memory.

    Peak tables carried by the input are kept as given, with the file's
    snapshot lists and version, in both forms. Otherwise the table is
    computed by XProf's rules and, by default, every snapshot is written;
    with xprof_form the snapshots are reduced the way XProf does (only those
    the table references, plus 1,000 sampled timeline points, version 1).
    """
    yield b'{"memoryProfilePerAllocator":{'
    for i, (memory_id, a) in enumerate(profile.allocators.items()):
        yield (b"," if i else b"") + _dumps(memory_id) + b":"
        yield from _allocator_chunks(a, xprof_form)
    # Version 1 tells XProf to draw the sampled list; a given allocator keeps
    # the lists (and so the version) it came with.
    given = any(a.peak_rows_given for a in profile.allocators.values())
    version = 1 if xprof_form and not given else profile.version
    yield (
        b'},"numHosts":'
        + _dumps(profile.num_hosts or 1)
        + b',"memoryIds":'
        + _dumps(sorted(profile.allocators))
        + b',"version":'
        + _dumps(version)
        + b',"hloModules":[]}'
    )


def _dumps(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _allocator_chunks(a: AllocatorProfile, xprof_form: bool) -> Iterator[bytes]:
    s = a.summary
    summary = {
        "peakBytesUsageLifetime": str(s.peak_bytes_lifetime),
        "peakStats": _stats_json(s.peak_stack, s.peak_heap, s.peak_free, s.peak_fragmentation, s.peak_in_use),
        "peakStatsTimePs": str(s.peak_time_ps),
        "memoryCapacity": str(s.memory_capacity),
    }
    if a.peak_rows_given:
        snapshots = a.stored_snapshots
        rows = a.stored_rows
        special = a.special
        sampled = a.stored_sampled
    else:
        rows, special = [], []
        pk = a.peak_allocations
        for i in range(len(pk)):
            if pk.snapshot[i] >= 0:
                rows.append((int(pk.snapshot[i]), -1, int(pk.occurrences[i])))
            else:
                special.append(
                    Metadata(
                        ALLOCATION,
                        int(pk.requested[i]),
                        int(pk.allocation[i]),
                        0,
                        pk.op[i],
                        int(pk.step[i]),
                        pk.region[i],
                        pk.dtype[i],
                        pk.shape[i],
                    )
                )
                rows.append((-len(special), len(special) - 1, int(pk.occurrences[i])))
        snapshots, sampled = a.timeline, None
        if xprof_form:
            referenced = np.array([r[0] for r in rows if r[0] >= 0], np.int64)
            sampled = a.timeline.take(sample_timeline(a.timeline))
            snapshots = a.timeline.take(referenced)
            renumber = iter(range(len(referenced)))
            rows = [(next(renumber), sp, n) if idx >= 0 else (idx, sp, n) for idx, sp, n in rows]
    yield b'{"memoryProfileSnapshots":'
    yield from _snapshot_chunks(snapshots)
    active = [{"snapshotIndex": str(i), "specialIndex": str(sp), "numOccurrences": str(n)} for i, sp, n in rows]
    specials = [
        _metadata_json(m.activity, m.requested, m.allocation, m.address, m.op, m.step, m.region, m.dtype, m.shape)
        for m in special
    ]
    yield (
        b',"profileSummary":'
        + _dumps(summary)
        + b',"activeAllocations":'
        + _dumps(active)
        + b',"specialAllocations":'
        + _dumps(specials)
        + b',"sampledTimelineSnapshots":'
    )
    yield from _snapshot_chunks(sampled)
    yield b"}"


def _stats_json(stack, heap, free, frag, peak) -> dict:
    return {
        "stackReservedBytes": str(stack),
        "heapAllocatedBytes": str(heap),
        "freeMemoryBytes": str(free),
        "fragmentation": float(frag),
        "peakBytesInUse": str(peak),
    }


def _metadata_json(activity, requested, allocation, address, op, step, region, dtype, shape) -> dict:
    name = ACTIVITY_NAMES[activity] if 0 <= activity < len(ACTIVITY_NAMES) else activity
    return {
        "memoryActivity": name,
        "requestedBytes": str(requested),
        "allocationBytes": str(allocation),
        "address": str(address),
        "tfOpName": op,
        "stepId": str(step),
        "regionType": region,
        "dataType": dtype,
        "tensorShape": shape,
    }


# One snapshot's JSON around its 15 values, as _stats_json and _metadata_json write them.
_SNAPSHOT_PARTS = [
    b'{"timeOffsetPs":"',
    b'","aggregationStats":{"stackReservedBytes":"',
    b'","heapAllocatedBytes":"',
    b'","freeMemoryBytes":"',
    b'","fragmentation":',
    b',"peakBytesInUse":"',
    b'"},"activityMetadata":{"memoryActivity":',
    b',"requestedBytes":"',
    b'","allocationBytes":"',
    b'","address":"',
    b'","tfOpName":',
    b',"stepId":"',
    b'","regionType":',
    b',"dataType":',
    b',"tensorShape":',
    b"}}",
]
_ACTIVITY_JSON = [_dumps(name) for name in ACTIVITY_NAMES]
SNAPSHOT_CHUNK = 16384  # rows per chunk: about 8 MB of JSON


def _snapshot_chunks(tl: Snapshots | None) -> Iterator[bytes]:
    """A snapshot list's JSON, formatted in C from the columns a chunk at a time."""
    if tl is None or not len(tl):
        yield b"[]"
        return
    # JSON of the texts the snapshots use (a table can hold millions more).
    used = np.zeros(len(tl.strings), bool)
    for ids in (tl.op, tl.region, tl.dtype, tl.shape):
        used[ids] = True
    strings = [b""] * len(tl.strings)
    for i in np.flatnonzero(used).tolist():
        strings[i] = _dumps(tl.strings[i])
    columns = [
        ("i", tl.time_ps),
        ("i", tl.stack),
        ("i", tl.heap),
        ("i", tl.free),
        ("f", tl.fragmentation),
        ("i", tl.peak_in_use),
        ("s", tl.activity, _ACTIVITY_JSON),
        ("i", tl.requested),
        ("i", tl.allocation),
        ("u" if tl.address.dtype == np.uint64 else "i", tl.address),
        ("s", tl.op, strings),
        ("i", tl.step),
        ("s", tl.region, strings),
        ("s", tl.dtype, strings),
        ("s", tl.shape, strings),
    ]

    def text(a: int) -> bytes:
        rows = [(kind, values[a : a + SNAPSHOT_CHUNK], *table) for kind, values, *table in columns]
        return _jsonrows.json_rows(_SNAPSHOT_PARTS, rows, 0, min(SNAPSHOT_CHUNK, len(tl) - a), b",")

    # The next chunk is formatted on a thread while the consumer writes this one.
    from concurrent.futures import ThreadPoolExecutor  # here: its import (logging) is 15 ms of every start

    with ThreadPoolExecutor(1) as pool:
        ahead = pool.submit(text, 0)
        for a in range(0, len(tl), SNAPSHOT_CHUNK):
            chunk = ahead.result()
            if a + SNAPSHOT_CHUNK < len(tl):
                ahead = pool.submit(text, a + SNAPSHOT_CHUNK)
            yield b"[" if a == 0 else b","
            yield chunk
    yield b"]"
