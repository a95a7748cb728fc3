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

This walks Python protobuf objects (a few seconds per million events); the
window never needs it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from models.guards import decode
from models.task import TaskState
from models.formats.xspace.xplane import HOST_PLANE, read_xspace
from models.formats.xspace.groups import group_events
from protos import xplane_pb2

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


def trace_viewer_json(path: Path, host: str = "", task: TaskState | None = None) -> bytes:
    task = task or TaskState()
    columns = read_xspace(path, task, host)  # validates the file with a clear message
    space = decode(xplane_pb2.XSpace, columns.buf, str(path))
    task.report(0.6, "Grouping steps")
    host_index = columns.plane_named(HOST_PLANE)
    group_of, step_names = {}, {}
    grouped = any("group_id" == m.name for p in space.planes for m in p.stat_metadata.values())
    if host_index >= 0 and not grouped:
        groups = group_events(columns, host_index)
        line = columns.events.line
        line_first = np.searchsorted(line, np.arange(len(columns.lines) + 1))  # events come line by line
        plane_first_line = int(np.flatnonzero(columns.line_plane == host_index)[0]) if len(line_first) > 1 else 0

        def key(row: int) -> tuple[int, int]:  # (line in the plane, event in the line)
            li = int(line[row])
            return li - plane_first_line, row - int(line_first[li])

        group_of = {key(r): g for r, g in zip(groups.rows.tolist(), groups.group.tolist()) if g >= 0}
        step_names = {key(r): name for r, name in zip(groups.roots.tolist(), groups.names)}
    del columns
    task.report(0.8, "Writing trace events")
    processes, events = {}, []
    if host_index >= 0:
        _plane_events(space.planes[host_index], HOST_PID, processes, events, group_of, step_names, not grouped)
    for prefix in DEVICE_PREFIXES:
        devices = [p for p in space.planes if p.name.startswith(prefix)]
        for p in devices:
            _plane_events(p, (FIRST_DEVICE_PID + p.id) % U32, processes, events, {}, {}, not grouped)
        if devices:
            break
    return _render(processes, events).encode()


def _stat_value(stat, names: dict[int, str]) -> str | None:
    case = stat.WhichOneof("value")
    if case is None:
        return None
    if case == "double_value":
        return "%.6g" % stat.double_value
    if case == "bytes_value":
        return "<opaque bytes>"
    if case == "ref_value":
        return names.get(stat.ref_value, "")
    return str(getattr(stat, case))


def _plane_events(plane, pid: int, processes: dict, events: list, group_of: dict, step_names: dict,
                  add_regions: bool) -> None:
    names = {k: m.name for k, m in plane.stat_metadata.items()}
    md = plane.event_metadata
    kinds = {m.name for m in md.values()}
    has_regions = add_regions and START_REGION in kinds and STOP_REGION in kinds
    threads = {}
    for li, line in enumerate(plane.lines):
        tid = (line.display_id or line.id) % U32
        label = line.display_name or line.name
        threads[tid] = label
        if label == ASYNC_XLA_OPS_LINE:
            continue
        base = line.timestamp_ns * 1000
        rows = []  # (start ps, duration ps, name, args)
        for k, e in enumerate(line.events):
            m = md.get(e.metadata_id)
            full = m.name if m is not None else ""
            if full in INTERNAL_EVENTS:
                continue
            args = {}
            name = full
            if m is not None and m.display_name:
                name = m.display_name
                args["long_name"] = full
            for stat in list(m.stats if m is not None else []) + list(e.stats):
                key = names.get(stat.metadata_id, "")
                value = _stat_value(stat, names)
                if value is None or key in INTERNAL_STATS:
                    continue
                args[key] = value
            if (li, k) in group_of:
                args["group_id"] = str(group_of[(li, k)])
            if (li, k) in step_names:
                args["step_name"] = step_names[(li, k)]
            if "step_name" in args:
                name = args["step_name"]
            rows.append((base + e.offset_ps, e.duration_ps, name, args))
        if has_regions:
            rows = _with_regions(plane, line, rows, names)
        events += [(pid, tid, name, start % U64, dur % U64, args) for start, dur, name, args in rows]
    processes[pid] = (plane.name, threads)


def _with_regions(plane, line, rows, names):
    """ThreadpoolListener::Region from each StartRegion (with a `_c`) to the
    next StopRegion; the line is then re-sorted by start, longest first."""
    md = plane.event_metadata
    base = line.timestamp_ns * 1000
    start, found = 0, []
    for e in line.events:
        m = md.get(e.metadata_id)
        name = m.name if m is not None else ""
        if name == START_REGION and any(names.get(s.metadata_id) == "_c" for s in e.stats):
            start = base + e.offset_ps
        elif name == STOP_REGION and start != 0:
            found.append((start, base + e.offset_ps - start, REGION, {}))
    if not found:
        return rows
    rows = rows + found
    rows.sort(key=lambda r: ((r[0] - base) % U64, -(r[1] % U64)))
    return rows


def _render(processes: dict, events: list) -> str:
    out = ['{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},\n', '"traceEvents":[\n']
    dump = lambda d: json.dumps(d, sort_keys=True)  # noqa: E731
    for pid in sorted(processes):
        name, threads = processes[pid]
        if name:
            out.append(dump({"args": {"name": name}, "name": "process_name", "ph": "M", "pid": pid}) + ",\n")
        out.append(dump({"args": {"sort_index": pid}, "name": "process_sort_index", "ph": "M", "pid": pid}) + ",\n")
        for tid in sorted(threads):
            if threads[tid]:
                out.append(dump({"args": {"name": threads[tid]}, "name": "thread_name", "ph": "M", "pid": pid,
                                 "tid": tid}) + ",\n")
            out.append(dump({"args": {"sort_index": tid}, "name": "thread_sort_index", "ph": "M", "pid": pid,
                             "tid": tid}) + ",\n")
    for pid, tid, name, ts, dur, args in events:
        e = {"pid": pid, "tid": tid, "name": name, "ts": ts / 1e6}
        if dur:
            e["ph"], e["dur"] = "X", dur / 1e6
        else:
            e["ph"], e["s"] = "i", "t"
        if args:
            e["args"] = args
        out.append(dump(e) + ",\n")
    out.append("{}]}\n")
    return "".join(out)
