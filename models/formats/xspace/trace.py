"""Chrome trace-event JSON of an XSpace, in the form of XProf's classic
`trace_viewer` tool: the host plane as process 701 and the GPU planes (else
TPU, else custom) as processes 1 + plane id, a thread per line (tid = the
line's display id or id, as uint32), one event per XEvent named by its
display name (the full name as `long_name`), its stats (metadata stats, then
event stats) as string args, and XProf's step grouping as `group_id` (the
step's root also gets `step_name`). Events without duration are instants.
Like XProf it leaves out memory and tf.data producer/consumer events and
adds ThreadpoolListener::Region events spanning each StartRegion..StopRegion.

Not written: XProf's `flow` args (its flow ids are salted hashes that differ
from run to run) and `is_eager`.

The document is streamed: the metadata events, then the events line by line
in chunks whose rows `_trace.trace_rows` writes from the event columns and
the stats' bytes (as `json.dumps(row, sort_keys=True)` would, byte for byte).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from profscope.models.core.task import TaskState
from profscope.models.formats.xspace import _trace
from profscope.models.formats.xspace.groups import group_events
from profscope.models.formats.xspace.xplane import HOST_PLANE, Plane, XSpaceData, read_xspace

HOST_PID = 701
FIRST_DEVICE_PID = 1
DEVICE_PREFIXES = ("/device:GPU:", "/device:TPU:", "/device:CUSTOM:")  # the first that has planes
ASYNC_XLA_OPS_LINE = "Async XLA Ops"
START_REGION, STOP_REGION, REGION = ("ThreadpoolListener::StartRegion", "ThreadpoolListener::StopRegion",
                                     "ThreadpoolListener::Region")
INTERNAL_EVENTS = {"MemoryAllocation", "MemoryDeallocation", "PrefetchProduce", "PrefetchConsume",
                   "ParallelInterleaveProduce", "ParallelInterleaveConsume", "ParallelInterleaveInitializeInput",
                   "ParallelMapProduce", "ParallelMapConsume", "MapAndBatchProduce", "MapAndBatchConsume",
                   "ParseExampleProduce", "ParseExampleConsume"}
INTERNAL_STATS = {"_pt", "_p", "_ct", "_c", "_r", "flops", "program_id", "symbol_id"}
U32, U64 = 1 << 32, 1 << 64
# Chunks stay under the 4 MiB that xplane's malloc tuning maps, so the heap
# reuses their memory instead of faulting in fresh pages for each.
ROWS_PER_CALL = 8192  # events per trace_rows call (~1 MB of JSON)
CHUNK_BYTES = 1 << 20  # small lines' rows are joined up to this before a chunk is handed on


def trace_viewer_json(path: Path, host: str = "", task: TaskState | None = None) -> Iterator[bytes]:
    """The document as chunks of bytes. The file is read and grouped here
    (errors surface now); the rows are written as the chunks are consumed."""
    task = task or TaskState()
    space = read_xspace(path, task, host)
    task.report(0.6, "Grouping steps")
    host_index = space.plane_named(HOST_PLANE)
    grouped = any("group_id" in p.stat_names.values() for p in space.planes)
    group = step = None
    step_names: list[str] = []
    if host_index >= 0 and not grouped:
        groups = group_events(space, host_index)
        group = np.full(len(space.events), -1, np.int32)
        group[groups.rows] = groups.group
        step = np.full(len(space.events), -1, np.int32)
        step[groups.roots] = np.arange(len(groups.roots), dtype=np.int32)
        step_names = groups.names
        del groups
    planes = [(host_index, HOST_PID)] if host_index >= 0 else []
    for prefix in DEVICE_PREFIXES:
        devices = [
            (k, (FIRST_DEVICE_PID + p.id) % U32) for k, p in enumerate(space.planes) if p.name.startswith(prefix)
        ]
        planes += devices
        if devices:
            break
    task.report(0.8, "Writing trace events")
    return _document(space, planes, group, step, step_names, not grouped, task)


def _document(
    space: XSpaceData,
    planes: list[tuple[int, int]],
    group,
    step,
    step_names: list[str],
    add_regions: bool,
    task: TaskState,
) -> Iterator[bytes]:
    processes = {}
    for k, pid in planes:
        p = space.planes[k]
        processes[pid] = (p.name, {(ln.display_id or ln.id) % U32: ln.label for ln in p.lines})
    yield _metadata(processes).encode()
    pending: list[bytes] = []
    size = 0
    steps_json = [_dumps(name) for name in step_names]
    for k, pid in planes:
        for chunk in _plane_rows(space, k, pid, group, step, steps_json, add_regions):
            task.raise_if_cancelled()  # a server call or the window may stop a long export
            if len(chunk) >= CHUNK_BYTES // 2:  # big enough as it is: not copied again
                if pending:
                    yield b"".join(pending)
                    pending, size = [], 0
                yield chunk
                continue
            pending.append(chunk)
            size += len(chunk)
            if size >= CHUNK_BYTES:
                yield b"".join(pending)
                pending, size = [], 0
    pending.append(b"{}]}\n")
    yield b"".join(pending)


def _dumps(value) -> bytes:
    return json.dumps(value).encode()


def _metadata(processes: dict) -> str:
    out = ['{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},\n', '"traceEvents":[\n']
    dump = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    for pid in sorted(processes):
        name, threads = processes[pid]
        if name:
            out.append(dump({"args": {"name": name}, "name": "process_name", "ph": "M", "pid": pid}) + ",\n")
        out.append(dump({"args": {"sort_index": pid}, "name": "process_sort_index", "ph": "M", "pid": pid}) + ",\n")
        for tid in sorted(threads):
            if threads[tid]:
                out.append(
                    dump({"args": {"name": threads[tid]}, "name": "thread_name", "ph": "M", "pid": pid, "tid": tid})
                    + ",\n"
                )
            out.append(
                dump({"args": {"sort_index": tid}, "name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid})
                + ",\n"
            )
    return "".join(out)


class _PlaneTables:
    """What trace_rows needs of a plane: per event metadata (index by sorted
    id, then one entry for unknown metadata and one for regions) its shown
    name, long_name and stats' bytes; per stat metadata its key's rank in
    sorted key order (-1 when left out) and its name for ref_values."""

    def __init__(self, p: Plane, steps_json: list[bytes]):
        self.md_ids = np.array(sorted(p.event_metadata), np.int64)
        full = [p.event_metadata[i][0] for i in self.md_ids.tolist()]
        display = [p.event_metadata[i][1] for i in self.md_ids.tolist()]
        self.full_names = full + ["", REGION]
        self.unknown, self.region = len(full), len(full) + 1
        spans = [p.event_metadata[i][2][0] if p.event_metadata[i][2] else (-1, 0) for i in self.md_ids.tolist()]
        md_spans = np.array(spans + [(-1, 0), (-1, 0)], np.int64).reshape(-1, 2)
        names = [_dumps(d or f) for f, d in zip(full, display)] + [b'""', _dumps(REGION)]
        longs = [_dumps(f) if d else None for f, d in zip(full, display)] + [None, None]
        stat_ids = sorted(p.stat_names)
        keys = sorted({"", "long_name", "group_id", "step_name"} | set(p.stat_names.values()))
        rank = {k: r for r, k in enumerate(keys)}
        stat_key = np.array(
            [-1 if p.stat_names[i] in INTERNAL_STATS else rank[p.stat_names[i]] for i in stat_ids], np.int32
        )
        self.tables = (
            md_spans,
            names,
            longs,
            np.array(stat_ids, np.int64),
            stat_key,
            [_dumps(p.stat_names[i]) for i in stat_ids],
            [_dumps(k) + b": " for k in keys],
            rank[""],
            rank["long_name"],
            rank["group_id"],
            rank["step_name"],
            steps_json,
        )
        self.c_ids = np.array([i for i in stat_ids if p.stat_names[i] == "_c"], np.int64)

    def named(self, name: str) -> np.ndarray:
        """Per table entry, whether its full name is `name`."""
        return np.array([n == name for n in self.full_names], bool)

    def index(self, metadata_id: np.ndarray) -> np.ndarray:
        """Table index of each event's metadata id."""
        if not len(self.md_ids):
            return np.full(len(metadata_id), self.unknown, np.int32)
        at = np.minimum(np.searchsorted(self.md_ids, metadata_id), len(self.md_ids) - 1)
        return np.where(self.md_ids[at] == metadata_id, at, self.unknown).astype(np.int32)

    def plane(self, pid: int, tid: int) -> tuple:
        return self.tables + (
            f', "ph": "X", "pid": {pid}, "tid": {tid}, "ts": '.encode(),
            f', "ph": "i", "pid": {pid}, "s": "t", "tid": {tid}, "ts": '.encode(),
        )


def _plane_rows(
    space: XSpaceData, k: int, pid: int, group, step, steps_json: list[bytes], add_regions: bool
) -> Iterator[bytes]:
    p = space.planes[k]
    ev = space.events
    tables = _PlaneTables(p, steps_json)
    internal = np.array([name in INTERNAL_EVENTS for name in tables.full_names], bool)
    has_regions = add_regions and START_REGION in tables.full_names and STOP_REGION in tables.full_names
    for li in np.flatnonzero(space.line_plane == k).tolist():
        line = space.lines[li]
        if line.label == ASYNC_XLA_OPS_LINE:
            continue
        a, b = int(space.line_rows[li]), int(space.line_rows[li + 1])
        md = tables.index(ev.metadata_id[a:b])
        rows = a + np.flatnonzero(~internal[md])
        base = np.uint64((line.timestamp_ns * 1000) % U64)
        offset = ev.offset_ps.view(np.uint64)
        regions = _regions(space, tables, md, a, base) if has_regions else None
        if regions is not None:
            starts, stops = regions
            order = np.lexsort(
                (~np.r_[ev.duration_ps[rows].view(np.uint64), stops - starts], np.r_[offset[rows], starts - base])
            )
        tid = (line.display_id or line.id) % U32
        plane = tables.plane(pid, tid)
        for c in range(0, len(rows) + (len(regions[0]) if regions is not None else 0), ROWS_PER_CALL):
            if regions is None:
                sel = rows[c : c + ROWS_PER_CALL]
                ts = base + offset[sel]
                dur = ev.duration_ps[sel].view(np.uint64)
                spans, mds = ev.spans(sel), md[sel - a]
                g = group[sel] if group is not None else np.full(len(sel), -1, np.int32)
                s = step[sel] if group is not None else np.full(len(sel), -1, np.int32)
            else:  # events and regions mixed in the line's new order
                pick = order[c : c + ROWS_PER_CALL]
                is_event = pick < len(rows)
                sel = rows[np.where(is_event, pick, 0)]
                r = np.where(is_event, 0, pick - len(rows))
                ts = np.where(is_event, base + offset[sel], starts[r] if len(starts) else 0)
                dur = np.where(is_event, ev.duration_ps[sel].view(np.uint64), (stops - starts)[r] if len(starts) else 0)
                spans = np.where(is_event[:, None], ev.spans(sel), -1)
                mds = np.where(is_event, md[sel - a], tables.region).astype(np.int32)
                g = np.where(is_event, group[sel], -1) if group is not None else np.full(len(sel), -1, np.int32)
                s = np.where(is_event, step[sel], -1) if group is not None else np.full(len(sel), -1, np.int32)
            try:
                out = _trace.trace_rows(
                    space.buf, spans, mds, ts.astype(np.float64) / 1e6, dur.astype(np.float64) / 1e6, g, s, plane
                )
            except ValueError as e:
                raise space.corrupt_stats(e) from None
            space.release_spans(spans[spans[:, 0] >= 0] if regions is not None else spans)
            yield out


def _regions(space: XSpaceData, tables: _PlaneTables, md: np.ndarray, a: int, base) -> tuple | None:
    """ThreadpoolListener::Region from each StartRegion (with a `_c` stat) to
    every later StopRegion until the next such start: (starts, stops) in ps
    as uint64, or None when the line has none."""
    is_start = tables.named(START_REGION)[md]
    is_stop = tables.named(STOP_REGION)[md]
    if not is_stop.any() or not is_start.any():
        return None
    ev = space.events
    starts = np.flatnonzero(is_start)
    with_c = np.zeros(len(starts), bool)
    if len(tables.c_ids):
        cases, _values, _lengths = space._stat_columns(ev.spans(a + starts), tables.c_ids)
        with_c = (cases != 0).any(axis=1)
    offset = ev.offset_ps.view(np.uint64)
    # The start each stop closes: the last start with a `_c` before it.
    opens = np.full(len(md), -1)
    opens[starts[with_c]] = starts[with_c]
    last = np.maximum.accumulate(opens)
    stops = np.flatnonzero(is_stop)
    opened = last[stops]
    keep = opened >= 0
    stops, opened = stops[keep], opened[keep]
    start_ts = base + offset[a + opened]
    keep = start_ts != 0
    if not keep.any():
        return None
    return start_ts[keep], (base + offset[a + stops[keep]])
