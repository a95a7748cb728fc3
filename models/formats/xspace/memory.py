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

from models.memory_profile import (ALLOCATION, DEALLOCATION, AllocatorProfile, MemoryProfileData, MemorySummary,
                                   Snapshots, xprof_peak_rows)
from models.task import ProfileError, TaskState
from models.formats.xspace.xplane import (HOST_PLANE, MEMORY_ALLOCATION, MEMORY_DEALLOCATION, NO_MEMORY_EVENTS_HINT,
                           XSpaceData, read_xspace)
from models.formats.xspace.groups import group_events
from protos import types_pb2

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
    task = task or TaskState()
    plane = space.plane_named(HOST_PLANE)
    if plane < 0:
        raise ProfileError(f"{space.path}: no host plane ({HOST_PLANE}), so no memory events. {NO_MEMORY_EVENTS_HINT}")
    p = space.planes[plane]
    allocation_md = [mid for mid, md in p.event_metadata.items() if md[0] == MEMORY_ALLOCATION]
    memory_md = allocation_md + [mid for mid, md in p.event_metadata.items() if md[0] == MEMORY_DEALLOCATION]
    ev = space.events
    rows = np.flatnonzero((ev.plane == plane) & np.isin(ev.metadata_id, memory_md) & ~ev.aggregated)
    if not len(rows):
        raise ProfileError(f"{space.path}: the profile holds no memory events. {NO_MEMORY_EVENTS_HINT}")
    groups = group_events(space, plane)
    steps = groups.of_events(rows).astype(np.int64)
    del groups
    task.raise_if_cancelled()
    task.report(0.75, "Reading memory events")
    st = space.dense_stats(rows, plane, list(INT_STATS + STRING_STATS) + ["fragmentation", "group_id"])
    steps = np.where(st.case["group_id"] != 0, st.ints("group_id"), steps)
    strings = st.table
    index = {v: i for i, v in enumerate(strings)}
    # A data type is written only when the event has one ("" otherwise).
    codes, inverse = np.unique(st.ints("data_type"), return_inverse=True)
    names = [index.setdefault(data_type_string(c), len(index)) for c in codes.tolist()]
    dtype = np.where(st.case["data_type"] != 0, np.array(names, np.int32)[inverse.ravel()], 0).astype(np.int32)
    strings = list(index)

    # Memory id: the allocator's name, else its index on the host or device ordinal.
    alloc_name = st.strings("allocator_name")
    memory_id = np.array(strings, object)[alloc_name]
    for stat in ("index_on_host", "device_ordinal"):
        here = (st.case["allocator_name"] == 0) & (st.case[stat] != 0)
        memory_id[here] = [str(v) for v in st.ints(stat)[here].tolist()]

    time_ps = ev.offset_ps[rows]  # XProf uses the offset within the line
    activity = np.where(np.isin(ev.metadata_id[rows], allocation_md), ALLOCATION, DEALLOCATION)
    allocators = {}
    for mid in sorted(set(memory_id.tolist())):
        task.raise_if_cancelled()
        sel = np.flatnonzero(memory_id == mid)  # file order
        sel = sel[np.argsort(time_ps[sel], kind="stable")]  # time order, ties in file order
        timeline = Snapshots(
            time_ps=time_ps[sel], stack=st.ints("bytes_reserved")[sel], heap=st.ints("bytes_allocated")[sel],
            free=st.ints("bytes_available")[sel], fragmentation=st.doubles("fragmentation")[sel],
            peak_in_use=st.ints("peak_bytes_in_use")[sel], activity=activity[sel].astype(np.int64),
            requested=st.ints("requested_bytes")[sel], allocation=st.ints("allocation_bytes")[sel],
            address=st.ints("addr")[sel], step=steps[sel], op=st.strings("tf_op")[sel],
            region=st.strings("region_type")[sel], dtype=dtype[sel], shape=st.strings("shape")[sel], strings=strings)
        summary = _summary_in_file_order(timeline, sel)
        _fix_steps(timeline.step)
        _copy_allocation_metadata(timeline)
        counts = np.bincount(timeline.activity, minlength=5)
        summary.num_allocations, summary.num_deallocations = int(counts[ALLOCATION]), int(counts[DEALLOCATION])
        allocators[mid] = AllocatorProfile(memory_id=mid, timeline=timeline, summary=summary,
                                           peak_allocations=xprof_peak_rows(timeline, summary), complete=True,
                                           stored_snapshots=timeline)
    return MemoryProfileData(host=space.host, allocators=allocators, num_hosts=1, version=1, source=str(space.path))


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
