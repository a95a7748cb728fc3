"""XProf's `memory_profile` tool computed from an XSpace.

Follows XProf's converter (xplane_to_memory_profile): every
MemoryAllocation/MemoryDeallocation event of the host plane becomes a
snapshot of its allocator (memory id), with the aggregation stats and
activity metadata the allocator recorded; snapshots are sorted by time, steps
come from XProf's step grouping (a snapshot outside every step takes the step
after the last one seen), a deallocation takes the op, region, data type and
shape of the allocation it frees (matched by address), and the summary peak
is the last event, in file order, reaching the highest stack + heap. The
result is a `MemoryProfileData` with every snapshot, so the memory view and
the export work as for MemoryProfile files.
"""

from __future__ import annotations

import numpy as np

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    AllocatorProfile,
    MemoryProfileData,
    MemorySummary,
    Snapshots,
    xprof_peak_rows,
)
from profscope.models.formats.xspace.groups import group_events
from profscope.models.formats.xspace.xplane import (
    HOST_PLANE,
    MEMORY_ALLOCATION,
    MEMORY_DEALLOCATION,
    NO_MEMORY_EVENTS_HINT,
    DenseStats,
    XSpaceData,
    read_xspace,
)
from profscope.protos import types_pb2

# Stat names XProf reads from memory events (xplane_schema).
INT_STATS = ("bytes_reserved", "bytes_allocated", "bytes_available", "peak_bytes_in_use", "requested_bytes",
             "allocation_bytes", "addr", "data_type", "index_on_host", "device_ordinal")
STRING_STATS = ("allocator_name", "tf_op", "region_type", "shape")


def xplane_memory_profile(path, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    task = task or TaskState()
    space = read_xspace(path, task, host)
    task.raise_if_cancelled()
    task.report(0.6, "Grouping steps")
    return memory_profile_of(space, task)


def memory_profile_of(space: XSpaceData, task: TaskState | None = None) -> MemoryProfileData:
    """The memory profile of the space's host plane. Takes the space's event
    columns: once the memory events are picked and grouped they are dropped
    (space.events is None afterwards), and stat columns are freed as the
    snapshots take them, so the table, the stats and the snapshots are
    never all held at once."""
    task = task or TaskState()
    plane = space.plane_named(HOST_PLANE)
    if plane < 0:
        raise ProfileError(f"{space.path}: no host plane ({HOST_PLANE}), so no memory events. {NO_MEMORY_EVENTS_HINT}")
    p = space.planes[plane]
    allocation_md = [mid for mid, md in p.event_metadata.items() if md[0] == MEMORY_ALLOCATION]
    memory_md = allocation_md + [mid for mid, md in p.event_metadata.items() if md[0] == MEMORY_DEALLOCATION]
    ev = space.events
    a, b = space.plane_rows(plane)
    rows = a + np.flatnonzero(np.isin(ev.metadata_id[a:b], memory_md) & ~ev.aggregated[a:b])
    if not len(rows):
        raise ProfileError(f"{space.path}: the profile holds no memory events. {NO_MEMORY_EVENTS_HINT}")
    steps = group_events(space, plane).of_events(rows).astype(np.int64)
    task.raise_if_cancelled()
    task.report(0.75, "Reading memory events")
    time_ps = ev.offset_ps[rows]  # XProf uses the offset within the line
    activity = np.where(np.isin(ev.metadata_id[rows], allocation_md), ALLOCATION, DEALLOCATION).astype(np.int64)
    spans = ev.spans(rows)
    del ev, rows
    space.events = None  # type: ignore[assignment]  # from here on only the memory events' bytes are read
    st = space.dense_stats(spans, plane, list(INT_STATS + STRING_STATS) + ["fragmentation", "group_id"])
    del spans
    steps = np.where(st.present("group_id"), st.ints("group_id"), steps)
    st.drop("group_id")
    strings = st.table
    index = {v: i for i, v in enumerate(strings)}
    # A data type is written only when the event has one ("" otherwise).
    codes, inverse = np.unique(st.ints("data_type"), return_inverse=True)
    names = [index.setdefault(data_type_string(c), len(index)) for c in codes.tolist()]
    dtype = np.where(st.present("data_type"), np.array(names, np.int32)[inverse.ravel()], 0).astype(np.int32)
    del codes, inverse
    st.drop("data_type")
    strings = list(index)

    # Allocators in name order, each with its snapshots in time order (ties in file order).
    allocators = {}
    selections = {mid: sel[np.argsort(time_ps[sel], kind="stable")] for mid, sel in _by_memory_id(st)}
    columns: dict[str, dict[str, np.ndarray]] = {mid: {} for mid in selections}

    def spread(name: str, column: np.ndarray) -> None:
        for mid, sel in selections.items():
            columns[mid][name] = column[sel]

    for name, column in (("time_ps", time_ps), ("activity", activity), ("step", steps), ("dtype", dtype)):
        spread(name, column)
    del time_ps, activity, steps, dtype
    for name, stat in (("stack", "bytes_reserved"), ("heap", "bytes_allocated"), ("free", "bytes_available"),
                       ("peak_in_use", "peak_bytes_in_use"), ("requested", "requested_bytes"),
                       ("allocation", "allocation_bytes"), ("address", "addr")):
        spread(name, st.ints(stat))
        st.drop(stat)
    spread("fragmentation", st.doubles("fragmentation"))
    st.drop("fragmentation")
    for name, stat in (("op", "tf_op"), ("region", "region_type"), ("shape", "shape")):
        spread(name, st.strings(stat))
        st.drop(stat)
    del st
    for mid, sel in selections.items():
        task.raise_if_cancelled()
        timeline = Snapshots(**columns.pop(mid), strings=strings)
        summary = _summary_in_file_order(timeline, sel)
        _fix_steps(timeline.step)
        _copy_allocation_metadata(timeline)
        counts = np.bincount(timeline.activity, minlength=5)
        summary.num_allocations, summary.num_deallocations = int(counts[ALLOCATION]), int(counts[DEALLOCATION])
        allocators[mid] = AllocatorProfile(memory_id=mid, timeline=timeline, summary=summary,
                                           peak_allocations=xprof_peak_rows(timeline, summary), complete=True,
                                           stored_snapshots=timeline)
    return MemoryProfileData(host=space.host, allocators=allocators, num_hosts=1, version=1, source=str(space.path))


def _by_memory_id(st: DenseStats) -> list[tuple[str, np.ndarray]]:
    """(memory id, its events in file order) in memory id order. The memory id
    is the allocator's name, else its index on the host or device ordinal."""
    key = st.strings("allocator_name").astype(np.int64)  # ids into st.table
    names = list(st.table)
    unnamed = ~st.present("allocator_name")
    for stat in ("index_on_host", "device_ordinal"):
        here = unnamed & st.present(stat)
        if here.any():
            values, inverse = np.unique(st.ints(stat)[here], return_inverse=True)
            key[here] = len(names) + inverse.ravel()
            names += [str(v) for v in values.tolist()]
        st.drop(stat)
    st.drop("allocator_name")
    used, inverse = np.unique(key, return_inverse=True)
    inverse = inverse.ravel()
    by_name: dict[str, list[int]] = {}
    for k, u in enumerate(used.tolist()):
        by_name.setdefault(names[u], []).append(k)  # equal names are one allocator
    out = []
    for mid in sorted(by_name):
        ks = by_name[mid]
        out.append((mid, np.flatnonzero(inverse == ks[0]) if len(ks) == 1 else np.flatnonzero(np.isin(inverse, ks))))
    return out


def data_type_string(code: int) -> str:
    """TensorFlow's DataTypeString, as XProf writes data types ("float", "INVALID")."""
    if code == 0:
        return "INVALID"
    try:
        return types_pb2.DataType.Name(code).removeprefix("DT_").lower()
    except ValueError:
        return f"unknown dtype enum ({code})"


def _summary_in_file_order(s: Snapshots, file_position: np.ndarray) -> MemorySummary:
    """XProf updates the summary event by event in file order: the peak is the
    last event reaching the highest stack + heap, the lifetime peak is what
    the last event reports."""
    in_use = s.in_use
    top = np.flatnonzero(in_use == in_use.max())
    i = int(top[np.argmax(file_position[top])])
    last = int(np.argmax(file_position))
    return MemorySummary(
        num_allocations=0, num_deallocations=0,
        memory_capacity=int(s.stack[i] + s.heap[i] + s.free[i]), peak_bytes_lifetime=int(s.peak_in_use[last]),
        peak_time_ps=int(s.time_ps[i]), peak_stack=int(s.stack[i]), peak_heap=int(s.heap[i]),
        peak_free=int(s.free[i]), peak_fragmentation=float(s.fragmentation[i]))


def _fix_steps(step: np.ndarray) -> None:
    """Snapshots outside every step (-1) take the last valid step + 1 (0 at the start)."""
    valid = step != -1
    if valid.all():
        return
    last = np.maximum.accumulate(np.where(valid, np.arange(len(step)), -1))
    prior = np.where(last >= 0, step[np.maximum(last, 0)], -1)
    step[~valid] = prior[~valid] + 1


def _copy_allocation_metadata(tl: Snapshots) -> None:
    """A deallocation takes the metadata of the allocation it frees: per
    address, the first allocation since the address was last freed."""
    n = len(tl)
    order = np.lexsort((np.arange(n), tl.address))
    addr = tl.address[order]
    is_alloc = tl.activity[order] == ALLOCATION
    new_addr = np.r_[True, addr[1:] != addr[:-1]] if n else np.zeros(0, bool)
    # Start of each run of consecutive allocations at one address.
    run_start = is_alloc & (new_addr | np.r_[True, ~is_alloc[:-1]] if n else is_alloc)
    first_of_run = np.maximum.accumulate(np.where(run_start, np.arange(n), -1))
    prev_alloc = np.r_[False, is_alloc[:-1]] & ~new_addr
    matched = ~is_alloc & prev_alloc
    src = order[first_of_run[np.flatnonzero(matched) - 1]]
    dst = order[matched]
    for name in ("op", "region", "dtype", "shape"):
        col = getattr(tl, name)
        col[dst] = col[src]
