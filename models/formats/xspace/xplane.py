"""XSpace profiles (`<host>.xplane.pb`, tsl profiler xplane.proto) as columns.

An XSpace holds planes (the host's threads, each device), a plane holds
lines (a thread or stream), a line holds events. Events name their metadata
by id; stats name their metadata by id and may hold a `ref_value`, which is
the id of a stat metadata whose name is the string value. Event times are
`line.timestamp_ns * 1000 + event.offset_ps`.

The reader decodes the structure with `_protowire` into numpy columns (one
row per event: plane, line, metadata id, offset, duration, byte span) and
resolves stats only for the events an analysis asks about, so a file with
millions of events never becomes millions of Python objects.

The file is mapped, not read: each pass over its bytes (the structure, a
chunk of stats) gives the pages it read back when done (`release`), so the
file does not sit in memory beside the event columns.
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import os
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from profscope.models.core import _protowire as wire
from profscope.models.core.files import GZIP_MAGIC, read_bytes, readable_errors
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats.xspace import _steps

SUFFIX = ".xplane.pb"

# Field numbers of xplane.proto.
SPACE_PLANES, SPACE_ERRORS, SPACE_WARNINGS, SPACE_HOSTNAMES = 1, 2, 3, 4
PLANE_ID, PLANE_NAME, PLANE_LINES, PLANE_EVENT_METADATA, PLANE_STAT_METADATA, PLANE_STATS = 1, 2, 3, 4, 5, 6
LINE_ID, LINE_DISPLAY_ID, LINE_NAME, LINE_DISPLAY_NAME, LINE_TIMESTAMP_NS, LINE_DURATION_PS, LINE_EVENTS = (
    1,
    10,
    2,
    11,
    3,
    9,
    4,
)
EVENT_METADATA_ID, EVENT_OFFSET_PS, EVENT_DURATION_PS, EVENT_STATS, EVENT_NUM_OCCURRENCES = 1, 2, 3, 4, 5
MAP_KEY, MAP_VALUE = 1, 2
EVENT_METADATA_NAME, EVENT_METADATA_DISPLAY_NAME, EVENT_METADATA_STATS = 2, 4, 5
STAT_METADATA_NAME = 2
# XStat value cases (the field number of the value).
STAT_DOUBLE, STAT_UINT64, STAT_INT64, STAT_STR, STAT_BYTES, STAT_REF = 2, 3, 4, 5, 6, 7

HOST_PLANE = "/host:CPU"  # TensorFlow's and JAX's host threads plane
TASK_ENVIRONMENT_PLANE = "Task Environment"
METADATA_PLANE = "/host:metadata"  # JAX's compiled programs; no lines by design
LINELESS_PLANES = (TASK_ENVIRONMENT_PLANE, METADATA_PLANE)
# Events TensorFlow's allocators record (memory_profile's input).
MEMORY_ALLOCATION, MEMORY_DEALLOCATION = "MemoryAllocation", "MemoryDeallocation"

NO_MEMORY_EVENTS_HINT = (
    "TensorFlow records MemoryAllocation/MemoryDeallocation events for GPU (BFC) allocators, and on the CPU "
    "only with TF_CPU_ALLOCATOR_USE_BFC=true; the profile must be captured with the host tracer on "
    "(ProfilerOptions host_tracer_level >= 2, the default); JAX records no such events."
)


def host_of_xplane(name: str) -> str | None:
    """The host of a file named <host>.xplane.pb, else None."""
    if name.endswith(SUFFIX) and len(name) > len(SUFFIX):
        return name[: -len(SUFFIX)]
    return None


@dataclass
class Line:
    id: int
    display_id: int
    name: str
    display_name: str
    timestamp_ns: int
    duration_ps: int

    @property
    def label(self) -> str:
        return self.display_name or self.name


@dataclass
class Plane:
    id: int
    name: str
    lines: list[Line]
    # Event metadata id -> (name, display_name, byte span of the metadata's stats).
    event_metadata: dict[int, tuple[str, str, list[tuple[int, int]]]]
    stat_names: dict[int, str]  # stat metadata id -> name

    def event_label(self, metadata_id: int) -> str:
        md = self.event_metadata.get(metadata_id)
        if md is None:
            return f"(unknown event metadata {metadata_id})"
        return md[1] or md[0]

    def stat_ids(self, name: str) -> list[int]:
        return [k for k, v in self.stat_names.items() if v == name]


@dataclass
class Events:
    """One row per event of the space, in file order: line by line, so the
    events of a line, and of a plane, are a range of rows."""

    line: np.ndarray  # int32 index into XSpaceData.lines
    metadata_id: np.ndarray  # int64, int32 when every id fits
    offset_ps: np.ndarray  # int64, from the line's timestamp
    duration_ps: np.ndarray  # int64
    byte_offset: np.ndarray  # int64: where the XEvent's bytes are in the file
    byte_length: np.ndarray  # int32
    aggregated: np.ndarray  # bool: num_occurrences form (no time)

    def __len__(self) -> int:
        return len(self.line)

    def spans(self, rows) -> np.ndarray:
        """int64[n, 2] (offset, length) of some events' bytes (an index or slice)."""
        return np.stack([self.byte_offset[rows], self.byte_length[rows].astype(np.int64)], axis=1)


@dataclass(eq=False)  # one host's space: equal only to itself (analyses find a host in a list: `in`, index)
class XSpaceData:
    path: Path
    host: str
    buf: bytes | bytearray
    planes: list[Plane]
    lines: list[Line]  # every line, with line_plane saying whose
    line_plane: np.ndarray
    events: Events
    line_rows: np.ndarray  # int64[len(lines) + 1]: each line's first event row
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    kept: tuple | None = field(default=None, repr=False)  # keep_stats(): (plane, rows, names' StatColumns)
    _timed: tuple | None = field(default=None, repr=False)  # timed_rows(): (plane, rows)

    def plane_named(self, name: str) -> int:
        for i, p in enumerate(self.planes):
            if p.name == name:
                return i
        return -1

    def timed_rows(self, plane: int) -> np.ndarray:
        """The rows of a plane's events with times (not aggregated), ascending; kept for the analyses of one
        plane that each ask (grouping, host ops): read-only."""
        if self._timed is None or self._timed[0] != plane:
            a, b = self.plane_rows(plane)
            if self.events.aggregated[a:b].any():
                rows = np.flatnonzero(~self.events.aggregated[a:b])
                rows += a
            else:  # the usual case
                rows = np.arange(a, b, dtype=np.int64)
            rows.flags.writeable = False
            self._timed = (plane, rows)
        return self._timed[1]

    def plane_rows(self, plane: int) -> tuple[int, int]:
        """The range of rows holding a plane's events."""
        lines = np.searchsorted(self.line_plane, [plane, plane + 1])  # lines come plane by plane
        return int(self.line_rows[lines[0]]), int(self.line_rows[lines[1]])

    def _stat_columns(self, spans: np.ndarray, ids: np.ndarray):
        """The one decode of events' stats: corrupt ones are a ProfileError
        for every analysis that reads them (grouping, memory, trace)."""
        try:
            return wire.stat_columns(self.buf, spans, EVENT_STATS, ids)
        except ValueError as e:
            raise self.corrupt_stats(e) from None

    def corrupt_stats(self, e: Exception) -> ProfileError:
        return ProfileError(f"{self.path}: corrupt event stats ({e}); the file may be damaged")

    def release(self, start: int = 0, end: int | None = None) -> None:
        """Gives back the mapped file's pages in [start, end) that a pass has read."""
        _release(self.buf, start, end)

    def release_spans(self, spans: np.ndarray) -> None:
        """release() over the bytes of some events, in file order."""
        if len(spans) and isinstance(self.buf, mmap.mmap):
            present = spans[spans[:, 0] >= 0]
            if len(present):
                self.release(int(present[0, 0]), int(present[-1, 0] + present[-1, 1]))

    def start_ps(self, rows: np.ndarray) -> np.ndarray:
        """Absolute start times (ps) of events: line timestamp plus offset."""
        line_ps = np.array([ln.timestamp_ns for ln in self.lines], np.int64) * 1000
        return line_ps[self.events.line[rows]] + self.events.offset_ps[rows]

    def keep_stats(self, rows: np.ndarray, plane: int, names: list[str]) -> None:
        """Reads named stats of events (ascending distinct rows) once, for the stats()
        calls that follow over some of these events and names: analyses
        that each ask for a few stats of the same million events then make
        one pass over their bytes instead of one each."""
        found = self.stats(rows, plane, names)
        contiguous = len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows)  # the usual case: held as a range
        self.kept = (plane, range(int(rows[0]), int(rows[-1]) + 1) if contiguous else rows, found)

    def stats(self, rows: np.ndarray, plane: int, names: list[str], chunk: int = 1 << 17) -> dict[str, StatColumn]:
        """Named stats of the given events (all of one plane, in file order),
        read in chunks (each one's pages given back when done) and kept only
        where present. As XProf's GetStat: the event's own stats (not its
        metadata's), the last occurrence winning."""
        if self.kept is not None and self.kept[0] == plane and set(names) <= self.kept[2].keys():
            subset = _kept_subset(self.kept[1], self.kept[2], rows, names)
            if subset is not None:
                return subset
        p = self.planes[plane]
        wanted = [(sid, name) for name in names for sid in p.stat_ids(name)]
        ids = np.asarray([sid for sid, _ in wanted], np.int64)
        ev = self.events
        starts = list(range(0, len(rows) if len(ids) else 0, chunk))

        def read(a: int):
            part = rows[a : a + chunk]
            entries = wire.stat_entries(self.buf, ev.byte_offset, ev.byte_length, part, EVENT_STATS, ids)
            self.release_spans(ev.spans(part[[0, -1]]))
            return entries

        try:
            chunks = in_threads(read, starts)
        except ValueError as e:
            raise self.corrupt_stats(e) from None
        return stat_columns_of(len(rows), names, wanted, zip(starts, chunks))

    def dense_stats(self, spans: np.ndarray, plane: int, names: list[str], chunk: int = 1 << 16) -> DenseStats:
        """Named stats of many events (by their spans, in file order) as full
        columns, built chunk by chunk (for stats nearly every event carries,
        such as memory events'); names the plane has no metadata for get none."""
        p = self.planes[plane]
        n = len(spans)
        wanted = [(sid, name) for name in names for sid in p.stat_ids(name)]
        known = {name for _sid, name in wanted}
        out = DenseStats(
            n,
            case={k: np.zeros(n, np.int8) for k in known},
            value={k: np.zeros(n, np.int64) for k in known},
            string={},
            table=[""],
        )
        index = {"": 0}
        ids = np.asarray([sid for sid, _ in wanted], np.int64)
        alone = {name for name in known if sum(other == name for _sid, other in wanted) == 1}
        for a in range(0, n if len(ids) else 0, chunk):
            part = spans[a : a + chunk]
            cases, values, lengths = self._stat_columns(part, ids)
            for k, (_sid, name) in enumerate(wanted):
                if name in alone:  # the usual case: one metadata id per name, copied whole
                    here = slice(None)
                    out.case[name][a : a + chunk] = cases[:, k]
                    out.value[name][a : a + chunk] = values[:, k]
                else:
                    here = cases[:, k] != 0
                    out.case[name][a : a + chunk][here] = cases[here, k]
                    out.value[name][a : a + chunk][here] = values[here, k]
                strs = (cases[:, k] == STAT_STR) | (cases[:, k] == STAT_REF)
                if strs.any():
                    col = out.string.setdefault(name, np.zeros(n, np.int32))
                    col[a : a + chunk][strs] = self._intern(cases[strs, k], values[strs, k], lengths[strs, k], p, index)
            self.release_spans(part)
        out.table = list(index)
        return out

    def string_codes(self, column: StatColumn, at: np.ndarray, plane: int) -> tuple[np.ndarray, list[str]]:
        """A sparse stat's string values (str_value or ref_value) at some of
        its positions (indices into column.rows), as ids into a table of the
        distinct strings (0 = "": absent or not a string)."""
        case, value, length = column.case[at], column.value[at], column.length[at]
        strings = (case == STAT_STR) | (case == STAT_REF)
        index = {"": 0}
        codes = np.zeros(len(at), np.int32)
        if strings.any():
            text = None  # else interned as they were decoded
            if column.text is not None and column.strings is not None:
                text = (column.text[at][strings], column.strings)
            codes[strings] = self._intern(case[strings], value[strings], length[strings], self.planes[plane], index,
                                          text=text)
            if text is None:
                self.release()  # the strings' pages, read from all over the file
        return codes, list(index)

    def _intern(self, case, value, length, p: Plane, index: dict, chunk: int = 1 << 15,
                text: tuple[np.ndarray, list[str]] | None = None) -> np.ndarray:
        """String ids (into `index`, grown in order of first occurrence) of
        str_value spans and ref_values. Strings are read a chunk at a time (on
        two threads: the hashing lets go of the GIL), each chunk's pages given
        back: a stat on every other event has its strings all over the file
        (the whole file resident at once was an OpStats export's peak RSS).
        text: the str_values' ids into a table of strings, where they were
        interned as they were decoded (StatColumn.text): then none are read."""
        out = np.zeros(len(case), np.int32)
        is_str = case == STAT_STR
        if text is not None and is_str.any():
            ids, table = text[0][is_str], text[1]
            first = np.full(len(table), len(ids), np.int64)
            first[ids[::-1]] = np.arange(len(ids) - 1, -1, -1)  # the last write of each id is its first place
            met = np.flatnonzero(first < len(ids))
            met = met[np.argsort(first[met], kind="stable")]  # in order of first occurrence, as read below
            code_of = np.zeros(len(table), np.int32)
            code_of[met] = np.array([index.setdefault(table[i], len(index)) for i in met.tolist()], np.int32)
            out[is_str] = code_of[ids]
        elif is_str.any():
            spans = np.stack([value[is_str], length[is_str]], axis=1)

            def read(a: int) -> tuple:
                found = wire.intern_strings(self.buf, spans[a : a + chunk])
                self.release_spans(spans[a : a + chunk])
                return found

            starts = list(range(0, len(spans), chunk))
            codes = np.empty(len(spans), np.int32)
            for a, (sid, strs) in zip(starts, in_threads(read, starts)):  # ids in chunk order: first occurrence
                codes[a : a + chunk] = np.array([index.setdefault(s, len(index)) for s in strs], np.int32)[sid]
            out[is_str] = codes
        is_ref = ~is_str
        if is_ref.any():
            refs, inverse = np.unique(value[is_ref], return_inverse=True)
            remap = [index.setdefault(p.stat_names.get(int(r), ""), len(index)) for r in refs.tolist()]
            out[is_ref] = np.array(remap, np.int32)[inverse]
        return out


@dataclass
class DenseStats:
    """Stats of many events as columns: value case (0 = absent), raw value,
    and for string stats (str_value or ref_value) ids into `table`. A name
    without columns is absent everywhere; drop() frees a name's columns."""

    n: int
    case: dict[str, np.ndarray]
    value: dict[str, np.ndarray]
    string: dict[str, np.ndarray]
    table: list[str]

    def present(self, name: str) -> np.ndarray:
        return self.case[name] != 0 if name in self.case else np.zeros(self.n, bool)

    def ints(self, name: str) -> np.ndarray:
        """XProf's IntValue: the int64 value (0 when absent or of another type)."""
        if name not in self.case:
            return np.zeros(self.n, np.int64)
        return np.where(self.case[name] == STAT_INT64, self.value[name], 0)

    def doubles(self, name: str) -> np.ndarray:
        if name not in self.case:
            return np.zeros(self.n, np.float64)
        return np.where(self.case[name] == STAT_DOUBLE, self.value[name].view(np.float64), 0.0)

    def strings(self, name: str) -> np.ndarray:
        """XProf's StrOrRefValue as ids into table (0 = "")."""
        return self.string.get(name, np.zeros(self.n, np.int32))

    def drop(self, name: str) -> None:
        for columns in (self.case, self.value, self.string):
            columns.pop(name, None)


@dataclass
class StatColumn:
    """One stat over n events, stored where present: the event positions,
    the value case (STAT_*), the raw value (double bits for STAT_DOUBLE,
    byte offset for strings) and the string length."""

    n: int
    rows: np.ndarray
    case: np.ndarray
    value: np.ndarray
    length: np.ndarray
    # Where the strings were interned as they were decoded (decode_children): each str_value's id into
    # `strings` (-1 for other values).
    text: np.ndarray | None = None
    strings: list[str] | None = None

    @classmethod
    def join(cls, n: int, parts: list) -> StatColumn:
        """Parts of (rows, case, value, length), each also with (text, its strings) or none."""
        if not parts:
            return cls(n, np.zeros(0, np.int64), np.zeros(0, np.int8), np.zeros(0, np.int64), np.zeros(0, np.int64))
        rows, case, value, length = (np.concatenate([p[i] for p in parts]) for i in range(4))
        text, strings = None, None
        if all(len(p) > 4 for p in parts):  # each part's string ids into one table
            index: dict[str, int] = {}
            # (-1, no string, indexes the -1 after each part's ids)
            text = np.concatenate([np.array([index.setdefault(x, len(index)) for x in p[5]] + [-1], np.int32)[p[4]]
                                   for p in parts])
            strings = list(index)
        if len(parts) > 1 and not bool(np.all(rows[1:] > rows[:-1])):  # chunks of one stat id come in order
            order = np.argsort(rows, kind="stable")
            rows, case, value, length = rows[order], case[order], value[order], length[order]
            text = text[order] if text is not None else None
        return cls(n, rows, case, value, length, text, strings)

    def subset(self, n: int, positions: np.ndarray | slice, rows: np.ndarray) -> StatColumn:
        """The entries at some positions, as those of n events at `rows`."""
        text = self.text[positions] if self.text is not None else None
        return StatColumn(n, rows, self.case[positions], self.value[positions], self.length[positions], text,
                          self.strings)

    def ints_present(self, unsigned_too: bool = False) -> np.ndarray:
        """Values of the events that have the stat (aligned with rows): XProf's
        IntValue (int64 only, else 0), or with unsigned_too its IntOrUintValue."""
        ok = (self.case == STAT_INT64) | (unsigned_too & (self.case == STAT_UINT64))
        return np.where(ok, self.value, 0)

    def at(self, rows: np.ndarray, unsigned_too: bool = False) -> np.ndarray:
        """Values at some of the rows that have the stat."""
        return self.ints_present(unsigned_too)[np.searchsorted(self.rows, rows)]


def stat_columns_of(n: int, names: list[str], wanted: list[tuple[int, str]], chunks) -> dict[str, StatColumn]:
    """Named stats of n events as StatColumns, from chunks of stat entries (wire.stat_entries' or
    decode_children's, their `which` indexing wanted's (stat id, name) pairs): (first event, entries) each."""
    found: dict[str, list] = {name: [] for name in names}
    for a, (at, which, cases, values, lengths, *text) in chunks:  # decode_children's also (text, strings)
        for k, (_sid, name) in enumerate(wanted):
            here = np.flatnonzero(which == k) if len(wanted) > 1 else slice(None)
            if len(at[here]):
                found[name].append((a + at[here], cases[here], values[here], lengths[here],
                                    *((text[0][here], text[1]) if text else ())))
    return {name: StatColumn.join(n, parts) for name, parts in found.items()}


def in_threads(work, items: list) -> list:
    """[work(x) for x in items], on two threads where there are two cores:
    the passes over a file's bytes are C that lets go of the GIL. The first
    exception raised is raised here, after both threads are done."""
    if len(items) < 2 or (os.cpu_count() or 1) < 2:
        return [work(x) for x in items]
    out: list = [None] * len(items)
    errors: list[BaseException] = []
    lock = threading.Lock()
    todo = iter(range(len(items)))

    def run() -> None:
        while not errors:
            with lock:
                i = next(todo, None)
            if i is None:
                return
            try:
                out[i] = work(items[i])
            except BaseException as e:  # noqa: BLE001 -- raised again by the caller's thread
                errors.append(e)

    helper = threading.Thread(target=run, name="profscope-xspace-pass", daemon=True)
    helper.start()
    run()
    helper.join()
    if errors:
        raise errors[0]
    return out


def _kept_subset(kept_rows: np.ndarray | range, kept: dict[str, StatColumn], rows: np.ndarray,
                 names: list[str]) -> dict[str, StatColumn] | None:
    """kept's columns (of kept_rows) for some of those rows (ascending), or None when rows are not such."""
    if len(rows) > 1 and not bool(np.all(rows[1:] > rows[:-1])):
        return None
    if isinstance(kept_rows, range):
        if len(rows) and (int(rows[0]) < kept_rows.start or int(rows[-1]) >= kept_rows.stop):
            return None
    else:
        at = np.minimum(np.searchsorted(kept_rows, rows), max(len(kept_rows) - 1, 0))
        if len(rows) and (not len(kept_rows) or not np.array_equal(kept_rows[at], rows)):
            return None
    if len(rows) == len(kept_rows):  # ascending, distinct, all among them: all of them
        return {name: kept[name] for name in names}
    out = {}
    for name in names:  # where each kept event with the stat is among the rows, if it is
        c = kept[name]
        event = c.rows + kept_rows.start if isinstance(kept_rows, range) else kept_rows[c.rows]
        j = np.minimum(np.searchsorted(rows, event), max(len(rows) - 1, 0))
        keep = rows[j] == event if len(rows) else np.zeros(len(event), bool)
        out[name] = c.subset(len(rows), np.flatnonzero(keep), j[keep])
    return out


def xprof_order(start: np.ndarray, end: np.ndarray, line: np.ndarray | None = None) -> np.ndarray | None:
    """The permutation putting events in XProf's order (by line, start, then
    the longest first; each line's events contiguous), or None when they are
    in it already (the usual case: events come line by line, mostly sorted).
    Sorted in C, per line, only where a line is out of order."""
    return _steps.xprof_order(start, end, None if line is None else line.astype(np.int32, copy=False))


def read_xspace(path: Path, task: TaskState | None = None, host: str = "",
                keep: tuple[str, list[str]] | None = None) -> XSpaceData:
    """Maps and decodes one xplane.pb (structure and event columns); within
    decode_once(), the copy decoded there before, if any. keep: (plane name,
    stat names) read in the same pass as the events, as keep_stats() keeps
    them (a copy decoded before may not have them)."""
    task = task or TaskState()
    path = Path(path)
    host = host or host_of_xplane(path.name) or path.name
    spaces, key = _decoded(path)
    if key in spaces:
        space = spaces[key]
        return space if space.host == host else replace(space, host=host)
    _tune_malloc()
    buf = map_file(path, task)
    try:
        space = parse_xspace(buf, path, host, task, keep)
    except ValueError as e:
        raise unreadable(path, e) from None
    if key is not None:
        spaces[key] = space
    return space


def plane_names(path: Path, task: TaskState | None = None) -> list[str]:
    """The names of an XSpace's planes, read from the wire without decoding
    the rest: what a tool that reads only some planes (kernel_stats: the
    GPU's) needs to learn that a file has none."""
    path = Path(path)
    spaces, key = _decoded(path)
    if key in spaces:
        return [p.name for p in spaces[key].planes]
    buf = map_file(path, task or TaskState())
    if not len(buf):
        raise ProfileError(f"{path}: the file is empty")
    try:
        (planes,) = wire.find_fields(buf, 0, len(buf), [SPACE_PLANES])
        (names,) = wire.decode_messages(buf, planes, [(PLANE_NAME, "s")])
    except ValueError as e:
        raise unreadable(path, e) from None
    finally:
        _release(buf)
    if not len(planes):
        raise ProfileError(f"{path}: the XSpace holds no planes; is it an xplane.pb?")
    return [span_text(buf, n) for n in names]


def unreadable(path: Path, e: Exception) -> ProfileError:
    return ProfileError(f"{path}: not a readable XSpace ({e}); the file may be truncated or not an xplane.pb")


_scope = threading.local()  # .spaces: decode_once()'s decoded XSpaces on this thread


@contextlib.contextmanager
def decode_once():
    """Within, on this thread: each xplane.pb is decoded once, and everything
    that reads it (the window's timeline, then XProf's tools of the same
    host) gets that one XSpaceData. After (the outermost scope's end): let
    go, so no decoded file outlives the job that read it."""
    if getattr(_scope, "spaces", None) is not None:  # nested: the outer scope's
        yield
        return
    _scope.spaces = {}
    try:
        yield
    finally:
        _scope.spaces = None


def _decoded(path: Path) -> tuple[dict, tuple | None]:
    """decode_once()'s spaces on this thread ({} outside one) and the file's key
    (None outside one or when it cannot be stated: the reader says why)."""
    spaces = getattr(_scope, "spaces", None)
    if spaces is None:
        return {}, None
    try:
        st = path.stat()
    except OSError:
        return {}, None
    return spaces, (str(path.resolve()), st.st_mtime_ns, st.st_size)


def _tune_malloc() -> None:
    """glibc's malloc for passes over millions of events: buffers of 4 MiB or
    more mapped (freed columns go back to the OS instead of bloating the heap)
    and up to 32 MiB kept at the heap's top (chunks allocated and freed in
    turn are not given back and faulted in again). Measured on 2M-event
    files: peak RSS 5% over mapping everything of 1 MiB or more, with a third
    of its page faults (0.5-1 s less system time per export); the default
    sliding thresholds leave ~60 MB of freed temporaries in the heap."""
    global _malloc_tuned
    if _malloc_tuned or not sys.platform.startswith("linux"):
        return
    _malloc_tuned = True
    libc = _libc()
    if libc is not None:
        libc.mallopt(M_MMAP_THRESHOLD, 4 << 20)
        libc.mallopt(M_TRIM_THRESHOLD, 32 << 20)


_malloc_tuned = False


@contextlib.contextmanager
def heap_reuse():
    """Within: glibc's malloc keeps freed buffers of any size for the next
    ones instead of unmapping them (_tune_malloc's choice), for analyses that
    allocate and free columns of millions of events in turn: here the kernel
    zeroes each fresh page (~1.4 ms/MB). After: _tune_malloc's thresholds
    again, and the heap's free pages given back."""
    libc = _libc()
    if libc is None:
        yield
        return
    _tune_malloc()
    libc.mallopt(M_MMAP_THRESHOLD, 1 << 30)
    libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    try:
        yield
    finally:
        libc.mallopt(M_MMAP_THRESHOLD, 4 << 20)
        libc.mallopt(M_TRIM_THRESHOLD, 32 << 20)
        libc.malloc_trim(0)


M_MMAP_THRESHOLD, M_TRIM_THRESHOLD = -3, -1  # glibc's mallopt parameters


def _libc():
    """glibc, where the process has it (Linux), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "mallopt") and hasattr(libc, "malloc_trim") else None


def map_file(path: Path, task: TaskState, weight: float = 0.4):
    """The file mapped read-only (gzip data and empty files are read, as `weight` of the task's progress)."""
    with readable_errors(path), open(path, "rb") as f:
        if f.read(2) == GZIP_MAGIC or not f.seek(0, 2):
            return read_bytes(path, task, weight=weight)
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


def parse_xspace(buf, path: Path, host: str, task: TaskState, keep: tuple[str, list[str]] | None = None) -> XSpaceData:
    if not len(buf):
        raise ProfileError(f"{path}: the file is empty")
    plane_spans, error_spans, warning_spans, hostname_spans = wire.find_fields(
        buf, 0, len(buf), [SPACE_PLANES, SPACE_ERRORS, SPACE_WARNINGS, SPACE_HOSTNAMES]
    )
    texts = [[span_text(buf, s) for s in spans] for spans in (error_spans, warning_spans, hostname_spans)]
    if not len(plane_spans):
        raise ProfileError(f"{path}: the XSpace holds no planes; is it an xplane.pb?")
    task.report(0.45, "Decoding planes")
    plane_id, plane_name = wire.decode_messages(buf, plane_spans, [(PLANE_ID, "i"), (PLANE_NAME, "s")])
    (line_plane, line_spans), (emd_plane, emd_spans), (smd_plane, smd_spans) = wire.find_children(
        buf, plane_spans, [PLANE_LINES, PLANE_EVENT_METADATA, PLANE_STAT_METADATA]
    )
    # The lines' fields and their event counts, in one walk over every event.
    *line_cols, counts = wire.decode_messages(buf, line_spans, [
        (LINE_ID, "i"), (LINE_DISPLAY_ID, "i"), (LINE_NAME, "s"), (LINE_DISPLAY_NAME, "s"), (LINE_TIMESTAMP_NS, "i"),
        (LINE_DURATION_PS, "i"), (LINE_EVENTS, "c")])
    lines = [
        Line(int(i), int(d), span_text(buf, n), span_text(buf, dn), int(t), int(dp))
        for i, d, n, dn, t, dp in zip(
            line_cols[0], line_cols[1], line_cols[2], line_cols[3], line_cols[4], line_cols[5]
        )
    ]
    planes = []
    event_md = _metadata_maps(buf, emd_plane, emd_spans, len(plane_spans), events=True)
    stat_md = _metadata_maps(buf, smd_plane, smd_spans, len(plane_spans), events=False)
    for k in range(len(plane_spans)):
        planes.append(
            Plane(
                id=int(plane_id[k]),
                name=span_text(buf, plane_name[k]),
                lines=[lines[i] for i in np.flatnonzero(line_plane == k)],
                event_metadata=event_md[k],
                stat_names=stat_md[k],
            )
        )
    task.raise_if_cancelled()
    task.report(0.55, "Decoding events")
    kept_plane = next((k for k, p in enumerate(planes) if keep and p.name == keep[0]), -1)
    kept_lines = tuple(np.searchsorted(line_plane, [kept_plane, kept_plane + 1]).tolist())
    names = keep[1] if keep and kept_plane >= 0 else []
    wanted = [(sid, name) for name in names for sid in planes[kept_plane].stat_ids(name)]
    events, line_rows, entries = _decode_events(buf, line_spans, counts, kept_lines, wanted)
    kept = None
    if names:
        a, b = int(line_rows[kept_lines[0]]), int(line_rows[kept_lines[1]])
        kept = (kept_plane, range(a, b), stat_columns_of(b - a, names, wanted, ((lo - a, e) for lo, e in entries)))
    return XSpaceData(
        path=path,
        host=host,
        buf=buf,
        planes=planes,
        lines=lines,
        line_plane=line_plane.astype(np.int32),
        events=events,
        line_rows=line_rows,
        errors=texts[0],
        warnings=texts[1],
        hostnames=texts[2],
        kept=kept,
    )


def _decode_events(buf, line_spans: np.ndarray, counts: np.ndarray, kept_lines: tuple[int, int] = (0, 0),
                   wanted: list[tuple[int, str]] | None = None, chunk_bytes: int = 16 << 20):
    """The event columns (counts: the number of each line's events): each column
    allocated once and filled a few lines at a time (each group's pages of
    the file given back when done), so neither the whole file nor a second
    copy of the columns is held. With `wanted` (stat ids and names), the
    stats of those ids of the events of lines kept_lines[0] to [1] in the
    same pass, as (first event, stat entries) per group of lines. Returns
    (events, each line's first row, those stat entries)."""
    # Finding the lines' fields and counting their events read every page: they stay for the decoding, which
    # gives them back as it goes (the columns it fills are as large; the analyses after need more).
    line_rows = np.r_[0, np.cumsum(counts)].astype(np.int64)
    total = int(line_rows[-1])
    fields = [EVENT_METADATA_ID, EVENT_OFFSET_PS, EVENT_DURATION_PS, EVENT_NUM_OCCURRENCES]
    byte_offset, byte_length = np.empty(total, np.int64), np.empty(total, np.int32)
    offset, duration, aggregated = np.empty(total, np.int64), np.empty(total, np.int64), np.empty(total, bool)
    ends = np.cumsum(line_spans[:, 1])
    cuts = np.r_[0, np.searchsorted(ends, np.arange(chunk_bytes, ends[-1] if len(ends) else 0, chunk_bytes),
                                    side="right"), len(line_spans), np.array(kept_lines if wanted else (), np.int64)]
    cuts = np.sort(cuts)
    cuts = cuts[np.r_[True, cuts[1:] != cuts[:-1]]]  # distinct (np.unique's first call imports numpy.ma)
    chunks = list(zip(cuts[:-1].tolist(), cuts[1:].tolist()))
    ids = np.array([sid for sid, _ in wanted or []], np.int64)

    def decode(ab: tuple[int, int], columns):  # the chunks' columns are apart: two threads may fill
        a, b = ab
        lo, hi = int(line_rows[a]), int(line_rows[b])
        stats = (EVENT_STATS, ids) if wanted and kept_lines[0] <= a < kept_lines[1] else ()
        found = wire.decode_children(buf, line_spans[a:b], LINE_EVENTS, fields, hi - lo, [c[lo:hi] for c in columns],
                                     *stats)
        present = line_spans[a:b][line_spans[a:b, 0] >= 0]
        if len(present):
            _release(buf, int(present[0, 0]), int(present[-1, 0] + present[-1, 1]))
        if b - a <= 256:  # this chunk's part, on its thread; a few long lines filled in place (no temporary)
            for r in range(a, b):
                line[line_rows[r] : line_rows[r + 1]] = r
        else:
            line[lo:hi] = np.repeat(np.arange(a, b, dtype=np.int32), counts[a:b])
        return lo, found

    # Metadata ids into int32 (every real one fits; else again in int64), num_occurrences as "aggregated": the
    # columns are written whole, and here a first touch of memory costs ~1 ms/MB.
    md, line = np.empty(total, np.int32), np.empty(total, np.int32)
    try:
        done = in_threads(lambda ab: decode(ab, (byte_offset, byte_length, md, offset, duration, aggregated)), chunks)
    except OverflowError:
        md = np.empty(total, np.int64)
        done = in_threads(lambda ab: decode(ab, (byte_offset, byte_length, md, offset, duration, aggregated)), chunks)
    events = Events(line=line, metadata_id=md, offset_ps=offset, duration_ps=duration, byte_offset=byte_offset,
                    byte_length=byte_length, aggregated=aggregated)
    return events, line_rows, [(lo, found) for lo, found in done if found is not None]


def _release(buf, start: int = 0, end: int | None = None) -> None:
    """Gives back a mapped file's pages in [start, end): read, then not needed
    until a later pass maps them again from the page cache."""
    if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):  # Windows has no madvise
        return
    end = len(buf) if end is None else min(end, len(buf))
    start -= start % mmap.PAGESIZE
    if end > start:
        buf.madvise(mmap.MADV_DONTNEED, start, end - start)


def span_text(buf, span) -> str:
    o, n = int(span[0]), int(span[1])
    return bytes(buf[o : o + n]).decode("utf-8", "replace") if o >= 0 else ""


def _metadata_maps(buf, owner: np.ndarray, entries: np.ndarray, num_planes: int, events: bool) -> list[dict]:
    """Per plane, the map<int64, X*Metadata> entries: id -> names (and stat spans)."""
    maps: list[dict] = [{} for _ in range(num_planes)]
    if not len(entries):
        return maps
    keys, values = wire.decode_messages(buf, entries, [(MAP_KEY, "i"), (MAP_VALUE, "s")])
    if events:
        names, display = wire.decode_messages(
            buf, values, [(EVENT_METADATA_NAME, "s"), (EVENT_METADATA_DISPLAY_NAME, "s")]
        )
        has_value = values[:, 0] >= 0
        ((stat_owner, _stat_spans),) = wire.find_children(
            buf, np.where(has_value[:, None], values, [-1, 0]), [EVENT_METADATA_STATS]
        )
        with_stats = set(stat_owner.tolist())
        spans = values.tolist()
        for k, (plane, key, name, label) in enumerate(zip(owner.tolist(), keys.tolist(), _texts(buf, names),
                                                          _texts(buf, display))):
            maps[plane][key] = (name, label, [tuple(spans[k])] if k in with_stats else [])
    else:
        (names,) = wire.decode_messages(buf, values, [(STAT_METADATA_NAME, "s")])
        for plane, key, name in zip(owner.tolist(), keys.tolist(), _texts(buf, names)):
            maps[plane][key] = name
    return maps


def _texts(buf, spans: np.ndarray) -> list[str]:
    """span_text of many spans, in one comprehension (a plane may name tens of thousands of metadata)."""
    return [bytes(buf[o : o + n]).decode("utf-8", "replace") if o >= 0 else "" for o, n in spans.tolist()]
