"""Timelines as columns: events on lanes, lanes grouped by device.

A `Timeline` is what the timeline widget draws, whatever the source
(StepStats today, XSpace planes later). Events are sorted by lane, then by
start; a lane never holds two overlapping events (sources pack overlapping
events into extra lanes), so within a lane ends are sorted too. Times are
picoseconds from `origin_ns`.

Drawing a million events at any zoom stays cheap because nothing here walks
all events per frame: `LaneIndex.pixels()` finds the events that start in
each pixel column by binary search (the narrow ones, drawn as one merged
block per pixel) and looks up the events wide enough to draw one by one in
per-duration-class indexes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

# Events whose duration spans at least this many pixels are drawn one by one.
WIDE_PIXELS = 1.0


class StringColumn:
    """Many strings (one per event) in one bytes object plus offsets: about a
    third of the memory of Python strings, and searchable in one pass."""

    def __init__(self, blob: bytes, offsets: np.ndarray):
        self.blob = blob
        self.offsets = offsets

    @classmethod
    def from_utf8(cls, blob: bytes, offsets: np.ndarray) -> StringColumn:
        """Strings as a reader found them, with invalid UTF-8 replaced (U+FFFD)
        as every reader's strings are: SQL and Parquet refuse invalid text."""
        if blob.isascii():
            return cls(blob, offsets)
        try:
            blob.decode("utf-8")
            # Each string is whole when the blob is valid and none starts inside a character.
            starts = np.frombuffer(blob, np.uint8)[offsets[:-1][offsets[:-1] < len(blob)]]
            if not ((starts & 0xC0) == 0x80).any():
                return cls(blob, offsets)
        except UnicodeDecodeError:
            pass
        column = cls(blob, offsets)
        return cls.from_strings([column[i] for i in range(len(column))])

    @classmethod
    def from_strings(cls, strings: list[str]) -> StringColumn:
        encoded = [s.encode() for s in strings]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        return self.blob[self.offsets[i]:self.offsets[i + 1]].decode("utf-8", "replace")

    def take(self, index: np.ndarray) -> StringColumn:
        return StringColumn.from_strings([self[int(i)] for i in index])

    @property
    def nbytes(self) -> int:
        return len(self.blob) + self.offsets.nbytes

    @cached_property
    def _folded(self) -> bytes:
        return self.blob.lower()

    def find(self, text: str) -> np.ndarray:
        """Indices of the strings containing `text` (case-insensitive), sorted."""
        needle = text.lower().encode()
        if not needle:
            return np.zeros(0, np.int64)
        hits = np.fromiter((m.start() for m in re.finditer(re.escape(needle), self._folded)), np.int64)
        if not len(hits):
            return hits
        owner = np.searchsorted(self.offsets, hits, side="right") - 1
        # A hit running past its string's end straddles two strings.
        owner = owner[hits + len(needle) <= self.offsets[owner + 1]]
        return np.unique(owner)


def is_op_event(name: str, op: str) -> bool:
    """Whether an event named `name` is op `op`: the same name, or "op:type"."""
    return name == op or (name.startswith(op) and name[len(op):len(op) + 1] == ":" and ":" not in name[len(op) + 1:])


class StringTable:
    """One string per event as an index into a table of distinct strings:
    4 bytes per event when names repeat (XSpace events share metadata)."""

    def __init__(self, strings: list[str], ids: np.ndarray):
        self.strings = strings
        self.ids = ids

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> str:
        return self.strings[self.ids[i]]

    def take(self, index: np.ndarray) -> StringTable:
        return StringTable(self.strings, self.ids[index])

    @property
    def nbytes(self) -> int:
        return self.ids.nbytes + sum(len(s) for s in self.strings)

    def find(self, text: str) -> np.ndarray:
        folded = text.casefold()
        if not folded:
            return np.zeros(0, np.int64)
        hits = [k for k, s in enumerate(self.strings) if folded in s.casefold()]
        return np.flatnonzero(np.isin(self.ids, hits)) if hits else np.zeros(0, np.int64)


@dataclass
class KindStats:
    """Per (group, kind) aggregates: count, total, average and max duration."""

    group: np.ndarray
    kind: np.ndarray
    count: np.ndarray
    total_ps: np.ndarray
    max_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.kind)

    @property
    def average_ps(self) -> np.ndarray:
        return self.total_ps / np.maximum(self.count, 1)


@dataclass
class Flows:
    """Arrows between events: flow k goes from event src[k] to event dst[k]
    (Chrome trace flows: a CPU launch to its GPU kernel, forward to backward)."""

    src: np.ndarray  # int64 event index
    dst: np.ndarray  # int64 event index
    category: np.ndarray  # int32 ids into categories
    categories: list[str]

    def __len__(self) -> int:
        return len(self.src)

    def of_event(self, i: int) -> np.ndarray:
        """Indices of the flows that start or end at event i."""
        return np.flatnonzero((self.src == i) | (self.dst == i))

    def named(self, category: str) -> Flows:
        """The flows of one category."""
        keep = self.category == (self.categories.index(category) if category in self.categories else -1)
        return Flows(self.src[keep], self.dst[keep], self.category[keep], self.categories)


@dataclass
class Counter:
    """A value over time drawn as a track of its group (Chrome "C" events)."""

    group: int
    name: str
    time_ps: np.ndarray  # int64, sorted, from the timeline's origin
    value: np.ndarray  # float64


@dataclass
class Timeline:
    groups: list[str]  # device (group) names
    lane_group: np.ndarray  # int32 group of each lane
    lane_names: list[str]
    lane_offsets: np.ndarray  # int64[lanes + 1]: events of lane l are [off[l], off[l+1])
    start_ps: np.ndarray  # int64, from origin_ns
    duration_ps: np.ndarray  # int64, >= 0
    kind: np.ndarray  # int32 ids into kinds (op type)
    kinds: list[str]
    names: StringColumn | StringTable  # per event
    origin_ns: int = 0
    source: str = ""
    warnings: list[str] = field(default_factory=list)
    # Every field of event i, fetched on demand: [(field, value), ...].
    details: Callable[[int], list[tuple[str, str]]] | None = None
    # The reader's handle on each event's source record (for exports).
    records: object = None
    # Step boundaries (ps from origin_ns), drawn across the lanes.
    markers_ps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # Optional, where the source has them (Chrome traces): a category per
    # event (cpu_op, kernel, gpu_memcpy ...), the enclosing event on the same
    # thread (-1 for none), flows, counter tracks, the host of each group
    # (several ranks in one timeline) and facts about the run.
    category: np.ndarray | None = None
    categories: list[str] = field(default_factory=list)
    parent: np.ndarray | None = None
    flows: Flows | None = None
    counters: list[Counter] = field(default_factory=list)
    group_host: list[str] = field(default_factory=list)
    properties: dict = field(default_factory=dict)
    # Operators' input shapes (Kineto's "Input Dims" with record_shapes=True):
    # int32 per event into input_shapes ("" for none).
    input_shape: np.ndarray | None = None
    input_shapes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.start_ps)

    @property
    def end_ps(self) -> np.ndarray:
        return self.start_ps + self.duration_ps

    @property
    def num_lanes(self) -> int:
        return len(self.lane_names)

    @cached_property
    def span_ps(self) -> tuple[int, int]:
        """First start and last end over all events."""
        if not len(self):
            return 0, 0
        return int(self.start_ps.min()), int(self.end_ps.max())

    @cached_property
    def event_group(self) -> np.ndarray:
        counts = np.diff(self.lane_offsets)
        return np.repeat(self.lane_group, counts).astype(np.int32)

    def lane_of(self, event: int) -> int:
        return int(np.searchsorted(self.lane_offsets, event, side="right")) - 1

    def lanes_of_group(self, group: int) -> np.ndarray:
        return np.flatnonzero(self.lane_group == group)

    @property
    def nbytes(self) -> int:
        """Memory of the columns (what the model costs per event)."""
        arrays = (self.lane_group, self.lane_offsets, self.start_ps, self.duration_ps, self.kind)
        return sum(a.nbytes for a in arrays) + self.names.nbytes

    @cached_property
    def _lane_indexes(self) -> dict[int, LaneIndex]:
        return {}

    def lane_index(self, lane: int) -> LaneIndex:
        index = self._lane_indexes.get(lane)
        if index is None:
            a, b = self.lane_offsets[lane], self.lane_offsets[lane + 1]
            index = self._lane_indexes[lane] = LaneIndex(self.start_ps[a:b], self.duration_ps[a:b], int(a))
        return index

    def event_at(self, lane: int, t_ps: float, slack_ps: float = 0) -> int:
        """The event of `lane` covering time t (or within slack of it), or -1."""
        a, b = int(self.lane_offsets[lane]), int(self.lane_offsets[lane + 1])
        k = a + int(np.searchsorted(self.start_ps[a:b], t_ps, side="right")) - 1
        best, best_gap = -1, slack_ps
        for i in (k, k + 1):
            if a <= i < b:
                s, e = self.start_ps[i], self.start_ps[i] + self.duration_ps[i]
                gap = 0 if s <= t_ps <= e else min(abs(s - t_ps), abs(t_ps - e))
                if gap <= best_gap:
                    best, best_gap = i, gap
        return best

    def find(self, text: str) -> np.ndarray:
        """Events whose name or kind contains `text` (case-insensitive), in index order."""
        if not text:
            return np.zeros(0, np.int64)
        folded = text.casefold()
        kinds = [k for k, name in enumerate(self.kinds) if folded in name.casefold()]
        by_kind = np.flatnonzero(np.isin(self.kind, kinds)) if kinds else np.zeros(0, np.int64)
        return np.union1d(by_kind, self.names.find(text))

    def events_named(self, op: str) -> np.ndarray:
        """The events of an op as XProf's tables name it: the event's name is
        the op's, or TensorFlow's "op:type" (a type holds no colon), in index order."""
        if not op:
            return np.zeros(0, np.int64)
        if isinstance(self.names, StringTable):  # each distinct name once
            hits = [k for k, s in enumerate(self.names.strings) if is_op_event(s, op)]
            return np.flatnonzero(np.isin(self.names.ids, hits)) if hits else np.zeros(0, np.int64)
        found = self.names.find(op)
        return found[np.array([is_op_event(self.names[i], op) for i in found.tolist()], bool)] if len(found) else found

    @cached_property
    def all_kind_stats(self) -> KindStats:
        """kind_stats() of every event (the op statistics tab), computed once;
        loaders touch it in their worker so the window does not."""
        return self.kind_stats()

    def kind_stats(self, selection: np.ndarray | None = None, clip: tuple[float, float] | None = None) -> KindStats:
        """Count, total and max duration per (group, kind), over `selection`
        (event indices or a mask) or every event, counting only the time
        inside `clip` when given; sorted by total descending."""
        group, kind, start, end = self.event_group, self.kind, self.start_ps, self.end_ps
        if selection is not None:
            group, kind, start, end = group[selection], kind[selection], start[selection], end[selection]
        if clip is not None:
            start, end = np.clip(start, *clip), np.clip(end, *clip)
        dur = (end - start).astype(np.int64)
        key = group.astype(np.int64) * max(len(self.kinds), 1) + kind
        uniq, inverse = distinct(key, len(self.groups) * max(len(self.kinds), 1))
        count = np.bincount(inverse, minlength=len(uniq))
        total = np.bincount(inverse, weights=dur, minlength=len(uniq)).astype(np.int64)
        maxes = np.zeros(len(uniq), np.int64)
        np.maximum.at(maxes, inverse, dur)
        order = np.lexsort((uniq, -total))
        return KindStats(group=(uniq // max(len(self.kinds), 1))[order].astype(np.int32),
                         kind=(uniq % max(len(self.kinds), 1))[order].astype(np.int32),
                         count=count[order], total_ps=total[order], max_ps=maxes[order])

    def overlapping(self, t0: float, t1: float) -> np.ndarray:
        """Indices of the events overlapping [t0, t1]."""
        return np.flatnonzero((self.start_ps <= t1) & (self.end_ps >= t0))


class LaneIndex:
    """Lookups for drawing one lane (start-sorted, non-overlapping events)."""

    def __init__(self, start: np.ndarray, duration: np.ndarray, base: int):
        self.start, self.duration, self.base = start, duration, base
        # Events grouped by duration class c (2**c <= duration < 2**(c+1)),
        # each group sorted by start.
        cls = np.zeros(len(duration), np.int8)
        positive = duration > 0
        cls[positive] = np.floor(np.log2(duration[positive].astype(np.float64))).astype(np.int8) + 1
        order = np.argsort(cls, kind="stable").astype(np.int32)
        self.order = order
        self.order_start = start[order]
        sorted_cls = cls[order]
        classes = np.unique(sorted_cls)
        bounds = np.searchsorted(sorted_cls, np.r_[classes, classes[-1] + 1 if len(classes) else 0]).tolist()
        # (upper duration bound, first, end) per class as plain Python numbers:
        # wide() loops over them every frame, and numpy scalars cost microseconds each.
        self.class_ranges = [
            (2.0 ** c, lo, hi) for c, lo, hi in zip(classes.tolist(), bounds, bounds[1:])  # type: ignore[call-overload,index]
        ]

    def wide(self, t0: float, t1: float, min_duration: float) -> np.ndarray:
        """Lane-local indices of events overlapping [t0, t1) lasting at least
        min_duration, sorted by start."""
        found = []
        for upper, lo, hi in self.class_ranges:  # durations in a class are below its upper bound
            if upper <= min_duration:
                continue
            starts = self.order_start[lo:hi]
            a = lo + int(starts.searchsorted(math.floor(_in_range(t0 - upper)), side="right"))
            b = lo + int(starts.searchsorted(math.ceil(_in_range(t1)), side="left"))
            if b > a:
                idx = self.order[a:b]
                keep = (self.duration[idx] >= min_duration) & (self.start[idx] + self.duration[idx] > t0)
                found.append(idx[keep])
        if not found:
            return np.zeros(0, np.int32)
        return np.sort(np.concatenate(found))

    def first_in_pixels(self, t0: float, ps_per_px: float, width: int) -> tuple[np.ndarray, np.ndarray]:
        """For each pixel column, whether an event starts in it and the first
        such event (lane-local index); events that began to the left count
        for the first column."""
        edges = t0 + ps_per_px * np.arange(width + 1)
        first = np.searchsorted(self.start, _as_times(np.ceil(edges)), side="left")
        occupied = first[1:] > first[:-1]
        # An event running into the view from the left occupies column 0.
        before = first[0] - 1
        if before >= 0 and self.start[before] + self.duration[before] > t0:
            occupied[0] = True
            first[0] = before
        return occupied, first[:-1]


def distinct(key: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(key, return_inverse=True) for int keys in [0, size): counted
    in linear time when size is small next to the keys, sorted otherwise."""
    if size <= max(4 * len(key), 1 << 16):
        present = np.bincount(key, minlength=size) > 0
        return np.flatnonzero(present), (np.cumsum(present) - 1)[key]
    uniq, inverse = np.unique(key, return_inverse=True)
    return uniq, inverse.ravel()


def _in_range(t: float) -> float:
    """One time clipped as _as_times clips, with no numpy call (wide() makes many)."""
    return min(max(float(t), -2.0**62), 2.0**62)


def _as_times(t):
    """Whole times (int64) for searches in int64 columns: numpy would copy a
    whole column to float64 to compare it with float keys."""
    return np.clip(t, -2.0**62, 2.0**62).astype(np.int64)
