"""Timelines of XSpace profiles: every plane's lines as lanes, nested events
drawn at depth, step boundaries marked, details read back on demand.

One host or several (a session's hosts side by side, their planes prefixed
with the host name). Memory events are left out (the memory view shows them)
as XProf's trace viewer does; aggregated events (num_occurrences) have no
time and are left out too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models import _protowire as wire
from models.task import ProfileError, TaskState
from models.timeline import StringTable, Timeline
from models.xplane import (HOST_PLANE, MEMORY_ALLOCATION, MEMORY_DEALLOCATION,
                           LINELESS_PLANES, XSpaceData, read_xspace)
from models.xplane_groups import group_events
from protos import xplane_pb2

STEPS_LINE = "Steps"  # XProf's derived line of step events on device planes


@dataclass
class EventSource:
    """Where each timeline event's XEvent sits in its file, and the names
    needed to print its stats."""

    paths: list[Path]
    file: np.ndarray  # int16 file index per event
    offsets: np.ndarray  # int64
    lengths: np.ndarray  # int32
    stat_names: list[dict[int, str]]  # per (file, plane) key in plane_keys
    metadata_stats: list[dict[int, list[tuple[str, str]]]]
    plane_of: np.ndarray  # int32 index into stat_names per event
    metadata_id: np.ndarray  # int64
    line_timestamp_ns: np.ndarray  # int64 per event

    def event(self, i: int):
        with open(self.paths[self.file[i]], "rb") as f:
            f.seek(int(self.offsets[i]))
            return xplane_pb2.XEvent.FromString(f.read(int(self.lengths[i])))


def stat_text(stat, stat_names: dict[int, str]) -> tuple[str, str]:
    """(name, value) of an XStat, ref_value resolved to its string."""
    name = stat_names.get(stat.metadata_id, f"stat {stat.metadata_id}")
    case = stat.WhichOneof("value")
    if case == "ref_value":
        value = stat_names.get(stat.ref_value, f"(missing stat metadata {stat.ref_value})")
    elif case == "bytes_value":
        value = f"<{len(stat.bytes_value)} bytes>"
    elif case == "double_value":
        value = f"{stat.double_value:g}"
    elif case is None:
        value = ""
    else:
        value = str(getattr(stat, case))
    return name, value


def load_xplane_timeline(paths: list[Path], hosts: list[str], task: TaskState | None = None) -> Timeline:
    """The timeline of one or more hosts' xplane.pb files."""
    task = task or TaskState()
    parts = []
    for k, (path, host) in enumerate(zip(paths, hosts)):
        space = read_xspace(path, task if len(paths) == 1 else None, host)
        task.raise_if_cancelled()
        task.report(0.6 + 0.3 * k / len(paths), f"Building the timeline of {host}")
        parts.append(_space_rows(space, k, host if len(paths) > 1 else ""))
        del space
    return _assemble(parts, paths)


@dataclass
class _Part:
    groups: list[str]
    lane_group: list[int]
    lane_names: list[str]
    lane_of: np.ndarray
    depth: np.ndarray
    start_abs_ps: np.ndarray
    duration_ps: np.ndarray
    kind_names: list[str]
    kind: np.ndarray
    name_table: list[str]
    name: np.ndarray
    file: int
    offsets: np.ndarray
    lengths: np.ndarray
    stat_names: list[dict[int, str]]
    metadata_stats: list[dict[int, list[tuple[str, str]]]]
    plane_key: np.ndarray
    metadata_id: np.ndarray
    line_ts: np.ndarray
    markers_abs_ps: np.ndarray
    warnings: list[str]


def _space_rows(space: XSpaceData, file_index: int, host_prefix: str) -> _Part:
    ev = space.events
    warnings = [f"{space.host}: {w}" for w in space.errors + space.warnings]
    keep = ~ev.aggregated
    # (plane, metadata id) -> (full name, label: the display name if any)
    label_of: dict[tuple[int, int], tuple[str, str]] = {}
    memory = np.zeros(len(ev), bool)
    missing = 0
    for k, p in enumerate(space.planes):
        in_plane = ev.plane == k
        ids = np.unique(ev.metadata_id[in_plane])
        for mid in ids.tolist():
            md = p.event_metadata.get(mid)
            if md is None:
                missing += int((in_plane & (ev.metadata_id == mid)).sum())
            elif md[0] in (MEMORY_ALLOCATION, MEMORY_DEALLOCATION):
                memory |= in_plane & (ev.metadata_id == mid)
            label_of[(k, mid)] = (md[0] if md else p.event_label(mid), p.event_label(mid))
        if not p.lines and p.name not in LINELESS_PLANES:
            warnings.append(f"plane {p.name!r} has no lines (its tracer recorded nothing)")
    if missing:
        warnings.append(f"{missing} event(s) refer to event metadata the plane does not have; shown by id")
    negative = keep & (ev.duration_ps < 0)
    if negative.any():
        warnings.append(f"{int(negative.sum())} event(s) had a negative duration, shown as 0")
    keep &= ~memory
    rows = np.flatnonzero(keep)
    start = space.start_ps(rows)
    dur = np.maximum(ev.duration_ps[rows], 0)
    line = ev.line[rows].astype(np.int64)
    order = np.lexsort((-(start + dur), start, line))
    rows, start, dur, line = rows[order], start[order], dur[order], line[order]
    depth = np.zeros(len(rows), np.int32)
    bounds = np.flatnonzero(np.r_[True, line[1:] != line[:-1]]) if len(rows) else np.zeros(0, np.int64)
    for a, b in zip(bounds, np.r_[bounds[1:], len(rows)]):
        depth[a:b] = wire.pack_lanes(start[a:b], start[a:b] + dur[a:b])

    # Lanes: per plane (group) and line, one lane per depth.
    prefix = f"{host_prefix} " if host_prefix else ""
    groups = [prefix + p.name for p in space.planes]
    lane_key = line * 4096 + np.minimum(depth, 4095)
    uniq, lane_of = np.unique(lane_key, return_inverse=True)
    lane_line = uniq // 4096
    lane_group = [int(space.line_plane[ln]) for ln in lane_line.tolist()]
    lane_names = [space.lines[ln].label if d == 0 else "" for ln, d in zip(lane_line.tolist(), (uniq % 4096).tolist())]

    # Kinds (labels, coloured alike) and full names.
    plane_md = ev.plane[rows].astype(np.int64) * (1 << 40) + ev.metadata_id[rows]
    keys, key_of = np.unique(plane_md, return_inverse=True)
    key_labels = [label_of[(int(k >> 40), int(k & ((1 << 40) - 1)))] for k in keys.tolist()]
    name_table, name = _intern([full for full, _ in key_labels], key_of)
    kind_names, kind = _intern([label for _, label in key_labels], key_of)

    metadata_stats = [_metadata_stats(space, k) for k in range(len(space.planes))]
    return _Part(groups=groups, lane_group=lane_group, lane_names=lane_names, lane_of=lane_of.astype(np.int64),
                 depth=depth, start_abs_ps=start, duration_ps=dur, kind_names=kind_names, kind=kind,
                 name_table=name_table, name=name, file=file_index, offsets=ev.span[rows, 0].copy(),
                 lengths=ev.span[rows, 1].astype(np.int32), stat_names=[p.stat_names for p in space.planes],
                 metadata_stats=metadata_stats, plane_key=ev.plane[rows].astype(np.int32),
                 metadata_id=ev.metadata_id[rows].copy(), line_ts=np.array([space.lines[i].timestamp_ns for i in range(len(space.lines))], np.int64)[line] if len(line) else np.zeros(0, np.int64),
                 markers_abs_ps=_step_markers(space), warnings=warnings)


def _intern(values: list[str], key_of: np.ndarray) -> tuple[list[str], np.ndarray]:
    """Distinct sorted values and each event's index into them."""
    table = sorted(set(values))
    index = {v: i for i, v in enumerate(table)}
    ids = np.array([index[v] for v in values], np.int32)
    return table, ids[key_of] if len(values) else np.zeros(0, np.int32)


def _metadata_stats(space: XSpaceData, plane: int) -> dict[int, list[tuple[str, str]]]:
    """Stats attached to event metadata, decoded once (few metadata have any)."""
    p = space.planes[plane]
    out = {}
    for mid, (_n, _d, spans) in p.event_metadata.items():
        if spans:
            o, n = spans[0]
            md = xplane_pb2.XEventMetadata.FromString(bytes(space.buf[o:o + n]))
            out[mid] = [stat_text(s, p.stat_names) for s in md.stats]
    return out


def _step_markers(space: XSpaceData) -> np.ndarray:
    """Step boundaries: the events of `Steps` lines, else XProf's step groups
    of the host plane (each root's start and the last root's end)."""
    ev = space.events
    steps = [i for i, ln in enumerate(space.lines) if ln.name == STEPS_LINE]
    if steps:
        rows = np.flatnonzero(np.isin(ev.line, steps) & ~ev.aggregated)
    else:
        host = space.plane_named(HOST_PLANE)
        if host < 0:
            return np.zeros(0, np.int64)
        rows = group_events(space, host).roots
    if not len(rows):
        return np.zeros(0, np.int64)
    start = space.start_ps(rows)
    return np.unique(np.r_[start, (start + np.maximum(ev.duration_ps[rows], 0)).max()])


def _assemble(parts: list[_Part], paths: list[Path]) -> Timeline:
    groups, lane_group, lane_names = [], [], []
    lane_base = group_base = 0
    cols = {k: [] for k in ("lane", "start", "dur", "kind", "name", "file", "off", "len", "plane", "md", "ts")}
    kinds = sorted({k for p in parts for k in p.kind_names})
    kind_index = {s: i for i, s in enumerate(kinds)}
    name_table = sorted({k for p in parts for k in p.name_table})
    name_index = {s: i for i, s in enumerate(name_table)}
    stat_names, metadata_stats, warnings = [], [], []
    for p in parts:
        remap_kind = np.array([kind_index[s] for s in p.kind_names], np.int32)
        remap_name = np.array([name_index[s] for s in p.name_table], np.int32)
        cols["lane"].append(p.lane_of + lane_base)
        cols["start"].append(p.start_abs_ps)
        cols["dur"].append(p.duration_ps)
        cols["kind"].append(remap_kind[p.kind] if len(p.kind) else p.kind)
        cols["name"].append(remap_name[p.name] if len(p.name) else p.name)
        cols["file"].append(np.full(len(p.kind), p.file, np.int16))
        cols["off"].append(p.offsets)
        cols["len"].append(p.lengths)
        cols["plane"].append(p.plane_key + len(stat_names))
        cols["md"].append(p.metadata_id)
        cols["ts"].append(p.line_ts)
        groups += p.groups
        lane_group += [g + group_base for g in p.lane_group]
        lane_names += p.lane_names
        lane_base += len(p.lane_names)
        group_base += len(p.groups)
        stat_names += p.stat_names
        metadata_stats += p.metadata_stats
        warnings += p.warnings
    c = {k: np.concatenate(v) if v else np.zeros(0) for k, v in cols.items()}
    if not len(c["start"]):
        raise ProfileError(f"{', '.join(str(p) for p in paths)}: the profile holds no timed events "
                           "(no lines with events on any plane)")
    order = np.lexsort((c["start"], c["lane"]))
    c = {k: v[order] for k, v in c.items()}
    origin_ns = int(c["start"].min() // 1000)
    markers = np.concatenate([p.markers_abs_ps for p in parts]) - origin_ns * 1000
    # Drop groups without lanes (the Task Environment plane, empty planes).
    used = sorted(set(lane_group))
    remap = {g: i for i, g in enumerate(used)}
    source = EventSource(paths=list(paths), file=c["file"], offsets=c["off"], lengths=c["len"], stat_names=stat_names,
                         metadata_stats=metadata_stats, plane_of=c["plane"], metadata_id=c["md"],
                         line_timestamp_ns=c["ts"])
    timeline = Timeline(
        groups=[groups[g] for g in used], lane_group=np.array([remap[g] for g in lane_group], np.int32),
        lane_names=lane_names, lane_offsets=np.searchsorted(c["lane"], np.arange(len(lane_names) + 1)).astype(np.int64),
        start_ps=c["start"] - origin_ns * 1000, duration_ps=c["dur"], kind=c["kind"].astype(np.int32), kinds=kinds,
        names=StringTable(name_table, c["name"].astype(np.int32)), origin_ns=origin_ns,
        source=", ".join(str(p) for p in paths), warnings=warnings, markers_ps=np.unique(markers))
    timeline.details = lambda i: event_details(timeline, source, i)
    timeline.records = source
    return timeline


def event_details(timeline: Timeline, source: EventSource, i: int) -> list[tuple[str, str]]:
    """Name, where, when, then every stat of the event and of its metadata."""
    lane = timeline.lane_of(i)
    rows = [("plane", timeline.groups[timeline.lane_group[lane]]),
            ("line", _lane_line_name(timeline, lane))]
    try:
        event = source.event(i)
    except (OSError, ValueError) as e:
        return rows + [("error", f"could not read the event back from the file: {e}")]
    names = source.stat_names[source.plane_of[i]]
    rows += [("metadata id", str(event.metadata_id)), ("offset", f"{event.offset_ps} ps"),
             ("line timestamp", f"{source.line_timestamp_ns[i]} ns")]
    rows += [stat_text(s, names) for s in event.stats]
    own = {name for name, _ in rows}
    rows += [(name, value) for name, value in source.metadata_stats[source.plane_of[i]].get(int(source.metadata_id[i]), [])
             if name not in own]
    return rows


def _lane_line_name(timeline: Timeline, lane: int) -> str:
    while lane > 0 and not timeline.lane_names[lane] and timeline.lane_group[lane - 1] == timeline.lane_group[lane]:
        lane -= 1
    return timeline.lane_names[lane]

