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

from profscope.models.core.guards import decode
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data import _lanes
from profscope.models.data.timeline import StringTable, Timeline
from profscope.models.formats.xspace.groups import group_events
from profscope.models.formats.xspace.xplane import (
    HOST_PLANE,
    LINELESS_PLANES,
    MEMORY_ALLOCATION,
    MEMORY_DEALLOCATION,
    XSpaceData,
    read_xspace,
    xprof_order,
)
from profscope.protos import xplane_pb2

STEPS_LINE = "Steps"  # XProf's derived line of step events on device planes


@dataclass
class EventSource:
    """Where each timeline event's XEvent sits in its file, and what is needed
    to print it: per lane its file, line timestamp and plane (stat names,
    event metadata stats)."""

    paths: list[Path]
    offsets: np.ndarray  # int64 per event
    lengths: np.ndarray  # int32 per event
    lane_file: np.ndarray  # int32 per lane
    lane_timestamp_ns: np.ndarray  # int64 per lane
    lane_plane: np.ndarray  # int32 per lane: index into stat_names / metadata_stats
    stat_names: list[dict[int, str]]
    metadata_stats: list[dict[int, list[tuple[str, str]]]]

    def event(self, i: int, lane: int):
        with open(self.paths[self.lane_file[lane]], "rb") as f:
            f.seek(int(self.offsets[i]))
            return decode(
                xplane_pb2.XEvent, f.read(int(self.lengths[i])), f"{self.paths[self.lane_file[lane]]}: event {i}"
            )


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
    build = _Builder(list(paths))
    for k, (path, host) in enumerate(zip(paths, hosts)):
        space = read_xspace(path, task if len(paths) == 1 else None, host)
        task.raise_if_cancelled()
        task.report(0.6 + 0.3 * k / len(paths), f"Building the timeline of {host}")
        build.add_space(space, k, host if len(paths) > 1 else "", task)
        del space
    return build.timeline()


class _Builder:
    """Collects lanes line by line, already in the timeline's (lane, start)
    order, so no step holds more than one line's temporary arrays."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.groups: list[str] = []
        self.lane_group: list[int] = []
        self.lane_names: list[str] = []
        self.lane_file: list[int] = []
        self.lane_ts: list[int] = []
        self.lane_plane: list[int] = []
        self.columns: dict[str, list[np.ndarray]] = {
            k: [] for k in ("start", "dur", "kind", "name", "off", "len", "count")
        }
        self.kinds: dict[str, int] = {}
        self.names: dict[str, int] = {}
        self.stat_names: list[dict[int, str]] = []
        self.metadata_stats: list[dict[int, list[tuple[str, str]]]] = []
        self.markers: list[np.ndarray] = []
        self.warnings: list[str] = []

    def add_space(self, space: XSpaceData, file_index: int, host_prefix: str, task: TaskState) -> None:
        ev = space.events
        self.warnings += [f"{space.host}: {w}" for w in space.errors + space.warnings]
        negative = int(((ev.duration_ps < 0) & ~ev.aggregated).sum())
        if negative:
            self.warnings.append(f"{negative} event(s) had a negative duration, shown as 0")
        self.markers.append(_step_markers(space))
        missing = 0
        for k, p in enumerate(space.planes):
            if not p.lines and p.name not in LINELESS_PLANES:
                self.warnings.append(f"plane {p.name!r} has no lines (its tracer recorded nothing)")
            plane_key = len(self.stat_names)
            self.stat_names.append(p.stat_names)
            self.metadata_stats.append(_metadata_stats(space, k))
            group = len(self.groups)
            self.groups.append(f"{host_prefix} {p.name}" if host_prefix else p.name)
            for li in np.flatnonzero(space.line_plane == k).tolist():
                task.raise_if_cancelled()
                a, b = int(space.line_rows[li]), int(space.line_rows[li + 1])
                missing += self._add_line(space, p, li, a, b, group, file_index, plane_key)
        if missing:
            self.warnings.append(f"{missing} event(s) refer to event metadata the plane does not have; shown by id")

    def _add_line(
        self, space: XSpaceData, p, li: int, a: int, b: int, group: int, file_index: int, plane_key: int
    ) -> int:
        """Adds one line's events as lanes (one per nesting depth); returns how
        many events name metadata the plane lacks."""
        ev = space.events
        line = space.lines[li]
        ids, inverse = np.unique(ev.metadata_id[a:b], return_inverse=True)
        inverse = inverse.ravel()
        ids = ids.tolist()
        known = np.array([mid in p.event_metadata for mid in ids], bool)
        memory = np.array(
            [p.event_metadata.get(mid, ("",))[0] in (MEMORY_ALLOCATION, MEMORY_DEALLOCATION) for mid in ids], bool
        )
        keep = np.flatnonzero(~ev.aggregated[a:b] & ~memory[inverse])
        if not len(keep):
            return 0
        # int64 ps, wrapping as grouping's times do: a Python int past int64 would raise
        start = np.array([line.timestamp_ns], np.int64) * 1000 + ev.offset_ps[a:b][keep]
        dur = np.maximum(ev.duration_ps[a:b][keep], 0)
        end = start + dur
        order = xprof_order(start, end)
        if order is not None:
            keep, start, dur, end = keep[order], start[order], dur[order], end[order]
        depth = _lanes.pack_lanes(start, end)
        del end
        by_lane = np.argsort(depth, kind="stable")  # (depth, start) order
        counts = np.bincount(depth)
        for d in range(len(counts)):
            self.lane_group.append(group)
            self.lane_names.append(line.label if d == 0 else "")
            self.lane_file.append(file_index)
            self.lane_ts.append(line.timestamp_ns)
            self.lane_plane.append(plane_key)
        kind_of, name_of = np.zeros(len(ids), np.int32), np.zeros(len(ids), np.int32)
        for j in np.flatnonzero(np.bincount(inverse[keep], minlength=len(ids))).tolist():
            mid = ids[j]
            label = p.event_label(mid)
            kind_of[j] = self.kinds.setdefault(label, len(self.kinds))
            name_of[j] = self.names.setdefault(p.event_metadata[mid][0] if known[j] else label, len(self.names))
        rows = keep[by_lane]
        c = self.columns
        c["start"].append(start[by_lane])
        c["dur"].append(dur[by_lane])
        c["kind"].append(kind_of[inverse[rows]])
        c["name"].append(name_of[inverse[rows]])
        c["off"].append(ev.byte_offset[a:b][rows])
        c["len"].append(ev.byte_length[a:b][rows])
        c["count"].append(counts)
        return int((~known[inverse[keep]]).sum())

    def timeline(self) -> Timeline:
        c = {k: np.concatenate(v) if v else np.zeros(0, np.int64) for k, v in self.columns.items()}
        if not len(c["start"]):
            raise ProfileError(
                f"{', '.join(str(p) for p in self.paths)}: the profile holds no timed events "
                "(no lines with events on any plane)"
            )
        origin_ns = int(c["start"].min() // 1000)
        origin_ps = origin_ns * 1000
        lane_group = np.asarray(self.lane_group, np.int32)
        used = np.unique(lane_group)  # planes without events (metadata, empty) get no header
        source = EventSource(
            paths=self.paths,
            offsets=c["off"],
            lengths=c["len"].astype(np.int32),
            lane_file=np.asarray(self.lane_file, np.int32),
            lane_timestamp_ns=np.asarray(self.lane_ts, np.int64),
            lane_plane=np.asarray(self.lane_plane, np.int32),
            stat_names=self.stat_names,
            metadata_stats=self.metadata_stats,
        )
        timeline = Timeline(
            groups=[self.groups[g] for g in used.tolist()],
            lane_group=np.searchsorted(used, lane_group).astype(np.int32),
            lane_names=self.lane_names,
            lane_offsets=np.r_[0, np.cumsum(c["count"])].astype(np.int64),
            start_ps=c["start"] - origin_ps,
            duration_ps=c["dur"],
            kind=c["kind"].astype(np.int32),
            kinds=list(self.kinds),
            names=StringTable(list(self.names), c["name"].astype(np.int32)),
            origin_ns=origin_ns,
            source=", ".join(str(p) for p in self.paths),
            warnings=self.warnings,
            markers_ps=np.unique(np.concatenate(self.markers) - origin_ps),
        )
        timeline.details = lambda i: event_details(timeline, source, i)
        timeline.records = source
        return timeline


def _metadata_stats(space: XSpaceData, plane: int) -> dict[int, list[tuple[str, str]]]:
    """Stats attached to event metadata, decoded once (few metadata have any)."""
    p = space.planes[plane]
    out = {}
    for mid, (_n, _d, spans) in p.event_metadata.items():
        if spans:
            o, n = spans[0]
            try:
                md = decode(xplane_pb2.XEventMetadata, space.buf[o : o + n], f"event metadata {mid}")
            except ProfileError as e:  # only the details panel needs these: it shows the problem
                out[mid] = [("error", str(e))]
                continue
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


def event_details(timeline: Timeline, source: EventSource, i: int) -> list[tuple[str, str]]:
    """Name, where, when, then every stat of the event and of its metadata."""
    lane = timeline.lane_of(i)
    rows = [("plane", timeline.groups[timeline.lane_group[lane]]), ("line", _lane_line_name(timeline, lane))]
    try:
        event = source.event(i, lane)
    except (OSError, ProfileError) as e:
        return rows + [("error", f"could not read the event back from the file: {e}")]
    plane = source.lane_plane[lane]
    names = source.stat_names[plane]
    rows += [
        ("metadata id", str(event.metadata_id)),
        ("offset", f"{event.offset_ps} ps"),
        ("line timestamp", f"{source.lane_timestamp_ns[lane]} ns"),
    ]
    rows += [stat_text(s, names) for s in event.stats]
    own = {name for name, _ in rows}
    rows += [
        (name, value) for name, value in source.metadata_stats[plane].get(event.metadata_id, []) if name not in own
    ]
    return rows


def _lane_line_name(timeline: Timeline, lane: int) -> str:
    while lane > 0 and not timeline.lane_names[lane] and timeline.lane_group[lane - 1] == timeline.lane_group[lane]:
        lane -= 1
    return timeline.lane_names[lane]
