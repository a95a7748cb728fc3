"""TensorBoard log dirs read as TensorBoard reads them: runs, the scalar
series of each run and the summary metadata its plugins keep.

A run is a folder holding event files (`*tfevents*` in the name), named by
its path relative to the log dir ("." for the log dir itself); its files are
read in name order, each opened, read and closed. TensorBoard's rules:
- a `simple_value` is a scalar of the "scalars" plugin (data_compat);
- a tag's summary metadata (plugin name and content) is the first one the
  run shows for it; later ones are ignored;
- orphaned data after a restart is purged: with file_version 2 and later
  (every current writer), a second SessionLog START drops the values with
  a step at or after its step; with older files, a step going back drops
  that event's tags' values at or after it.
Values are decoded in C (`_protowire`) into columns; Python protobuf
objects are built only for unusual tensors.
"""

from __future__ import annotations

import gc
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from profscope.models.core import _protowire as wire
from profscope.models.core import _tfrecord
from profscope.models.core.event_file import record_warnings, scan_records
from profscope.models.core.files import stays_inside
from profscope.models.core.guards import decode
from profscope.models.core.task import ProfileError, TaskState
from profscope.protos import tensor_pb2

# Field numbers (protos/summary.proto, tensor.proto; SessionLog of event.proto).
EVENT_WALL_TIME, EVENT_STEP, EVENT_FILE_VERSION, EVENT_SUMMARY, EVENT_SESSION_LOG = 1, 2, 3, 5, 7
SESSION_LOG_STATUS, SESSION_LOG_START = 1, 1
SUMMARY_VALUE = 1
VALUE_TAG, VALUE_SIMPLE, VALUE_NODE_NAME, VALUE_TENSOR, VALUE_METADATA = 1, 2, 7, 8, 9
METADATA_PLUGIN_DATA, PLUGIN_NAME, PLUGIN_CONTENT = 1, 1, 2
TENSOR_DTYPE, TENSOR_SHAPE, TENSOR_CONTENT, TENSOR_FLOAT, TENSOR_DOUBLE = 1, 2, 4, 5, 6
SHAPE_DIM, DIM_SIZE = 2, 1
DT_FLOAT, DT_DOUBLE = 1, 2
SCALARS = "scalars"


@dataclass
class Series:
    """One tag's scalar values in a run, in the order TensorBoard keeps them."""

    step: np.ndarray
    wall_time: np.ndarray
    value: np.ndarray

    def __len__(self) -> int:
        return len(self.step)


@dataclass
class Run:
    name: str
    scalars: dict[str, Series] = field(default_factory=dict)
    # plugin name -> tag -> content of the tag's (first) summary metadata
    plugin_content: dict[str, dict[str, bytes]] = field(default_factory=dict)


@dataclass
class Logdir:
    path: Path
    runs: dict[str, Run]
    warnings: list[str]


def find_runs(logdir: Path) -> dict[str, list[str]]:
    """Run name -> the paths of its event files in name order. Links leading
    out of the log dir are not followed. Paths stay strings: a Path per file
    cost more than reading the file."""
    logdir = Path(logdir)
    if not logdir.is_dir():
        raise ProfileError(f"{logdir}: not a folder")
    root = os.path.realpath(logdir)
    runs = {}
    stack = [("", str(logdir))]
    while stack:
        rel, folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                entries = sorted(it, key=_entry_name)
        except OSError:
            continue
        events, subfolders = [], []
        for e in entries:
            if not stays_inside(e, root):
                continue
            if "tfevents" in e.name and e.is_file():
                events.append(e.path)
            elif e.is_dir():
                subfolders.append(e)
        if events:
            runs[rel or "."] = events
        stack += [(f"{rel}/{e.name}" if rel else e.name, e.path) for e in reversed(subfolders)]
    return runs


def _entry_name(entry: os.DirEntry) -> str:
    return entry.name


def logdir_signature(logdir: Path) -> tuple:
    """What changes when a writer adds runs or data: event files and their sizes."""
    return tuple((name, tuple((os.path.basename(p), _size(p)) for p in files))
                 for name, files in find_runs(logdir).items())


def read_logdir(logdir: Path, task: TaskState | None = None) -> Logdir:
    """Every run below a log dir with its scalars and plugin metadata.

    Runs are read in batches of about BATCH_BYTES (in C, read_files): the
    files' records are decoded together, so the cost per file is a few
    system calls.
    """
    with gc_paused():
        return _read_logdir(logdir, task or TaskState())


def _read_logdir(logdir: Path, task: TaskState) -> Logdir:
    runs_files = find_runs(logdir)
    names, file_lists = list(runs_files), list(runs_files.values())
    ends = np.cumsum([len(files) for files in file_lists], dtype=np.int64)  # each run's files end there
    paths = tuple(os.fsencode(p) for files in file_lists for p in files)
    runs: dict[str, Run] = {}
    warnings: list[str] = []
    first = 0
    while first < len(names):
        start = int(ends[first]) - len(file_lists[first])
        blob, sizes, errnos = _tfrecord.read_files(paths, start, ends, BATCH_BYTES)
        last = int(np.searchsorted(ends, start + len(sizes)))  # the batch's last run
        runs.update(_read_runs(list(zip(names[first:last + 1], file_lists[first:last + 1])), blob, sizes, errnos,
                               warnings))
        first = last + 1
        task.report(first / len(names), f"Reading runs ({first:,} of {len(names):,})")
    return Logdir(Path(logdir), runs, warnings)


@contextmanager
def gc_paused():
    """Python's cycle collector off while a log dir's objects are made: the
    runs, series and sessions of a big sweep (none of them in cycles) made it
    walk the whole heap again and again, a tenth of the load."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


BATCH_BYTES = 8 << 20


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


# ---------------------------------------------------------------- decoding


@dataclass
class _Values:
    """Summary values of some event files, one row per value, in file order."""

    step: np.ndarray
    wall_time: np.ndarray
    event: np.ndarray  # the value's event (index into the event columns)
    tag: np.ndarray  # int32 ids into tags
    tags: list[str]
    scalar: np.ndarray  # float64 value when it is a one-element number (simple_value or tensor), else NaN
    is_value: np.ndarray  # bool: a simple_value or a tensor (what TensorBoard keeps per tag)
    plugin: np.ndarray  # int32 ids into plugins of the metadata (after data_compat), -1 without metadata
    plugins: list[str]
    content: np.ndarray  # int64[n, 2] span of the metadata content in the buffer (-1 when none)
    event_step: np.ndarray  # per event
    event_summary: np.ndarray  # per event: has a summary
    event_start: np.ndarray  # per event: SessionLog START
    event_version: np.ndarray  # per event: file_version number, NaN when the event has none


def _decode(buf, events: np.ndarray) -> _Values:
    wall, step, version, summary, session_log = wire.decode_messages(
        buf, events, [(EVENT_WALL_TIME, "d"), (EVENT_STEP, "i"), (EVENT_FILE_VERSION, "s"),
                      (EVENT_SUMMARY, "s"), (EVENT_SESSION_LOG, "s")])
    (status,) = wire.decode_messages(buf, session_log, [(SESSION_LOG_STATUS, "i")])
    event_version = np.full(len(events), np.nan)
    has_version = version[:, 0] >= 0
    version_id, versions = wire.intern_strings(buf, version[has_version])  # each file has one: parse each text once
    event_version[has_version] = np.array([_version_number(text) for text in versions])[version_id]
    has_summary = summary[:, 0] >= 0
    ((parents, value_spans),) = wire.find_children(buf, summary[has_summary], [SUMMARY_VALUE])
    event_of = np.flatnonzero(has_summary)[parents]
    tag_spans, node_spans, tensor, metadata = wire.decode_messages(
        buf, value_spans, [(VALUE_TAG, "s"), (VALUE_NODE_NAME, "s"), (VALUE_TENSOR, "s"), (VALUE_METADATA, "s")])
    (simple,) = wire.decode_messages(buf, value_spans, [(VALUE_SIMPLE, "g")])
    (simple_count,) = wire.decode_messages(buf, value_spans, [(VALUE_SIMPLE, "n")])
    is_simple, is_tensor = simple_count > 0, tensor[:, 0] >= 0
    old_style = is_tensor & (tag_spans[:, 0] < 0)
    if old_style.any():  # tensor summaries of the plugin-asset era are named by their node
        tag_spans = tag_spans.copy()
        tag_spans[old_style] = node_spans[old_style]
    tag, tags = wire.intern_strings(buf, tag_spans)
    (plugin_data,) = wire.decode_messages(buf, metadata, [(METADATA_PLUGIN_DATA, "s")])
    names, content = wire.decode_messages(buf, plugin_data, [(PLUGIN_NAME, "s"), (PLUGIN_CONTENT, "s")])
    plugin, plugins = wire.intern_strings(buf, names)
    plugin = np.where(metadata[:, 0] >= 0, plugin, -1).astype(np.int32)
    # data_compat: a simple_value is a "scalars" value, whatever metadata it had.
    if is_simple.any():
        if SCALARS not in plugins:
            plugins.append(SCALARS)
        plugin[is_simple] = plugins.index(SCALARS)
        content[is_simple] = (-1, 0)
    scalar = np.where(is_simple, simple, np.nan)
    tensor_rows = np.flatnonzero(is_tensor & ~is_simple)
    scalar[tensor_rows] = _tensor_scalars(buf, tensor[tensor_rows])
    return _Values(step=step[event_of], wall_time=wall[event_of], event=event_of, tag=tag, tags=tags, scalar=scalar,
                   is_value=is_simple | is_tensor, plugin=plugin, plugins=plugins, content=content, event_step=step,
                   event_summary=has_summary, event_start=status == SESSION_LOG_START, event_version=event_version)


def _version_number(text: str) -> float:
    """2.0 of "brain.Event:2"; NaN when it is no number."""
    try:
        return float(text.split("brain.Event:")[-1])
    except ValueError:
        return np.nan


# ---------------------------------------------------------------- runs


def _read_runs(batch: list[tuple[str, list[str]]], blob: bytes, sizes: np.ndarray, errnos: np.ndarray,
               warnings: list[str]) -> dict[str, Run]:
    """Runs of a batch (name, files) from their files' bytes laid end to end
    (read_files): decoded together; runs whose data TensorBoard would purge
    (restarts) go through the file-by-file path."""
    paths = [(name, path) for name, files in batch for path in files]
    for f in np.flatnonzero(errnos).tolist():
        warnings.append(f"{paths[f][1]}: cannot read: {os.strerror(errnos[f])}")
    file_run = np.repeat(np.arange(len(batch)), [len(files) for _, files in batch])
    spans, ok, file_of, skipped, partial = _tfrecord.scan_files(blob, sizes)
    bad = np.bincount(file_of[~ok], minlength=len(sizes))
    for f in np.flatnonzero((bad > 0) | (skipped > 0) | (partial >= 0)).tolist():  # in file order
        name, path = paths[f]
        warnings += record_warnings(f"{name}/{os.path.basename(path)}", int(bad[f]), int(skipped[f]), int(partial[f]))
    runs = {name: Run(name) for name, _ in batch}
    if not len(spans):
        return runs
    events = spans[ok]
    try:
        v = _decode(blob, events)
    except ValueError:  # a corrupt record somewhere: read file by file to say where
        return {name: _read_run_files(name, files, warnings) for name, files in batch}
    counts = np.bincount(file_of[ok], minlength=len(sizes))
    event_run = np.repeat(file_run, counts)
    file_first = (np.cumsum(counts) - counts)[counts > 0]  # first event of each file with events
    careful = _runs_with_purges(v, event_run, file_first, len(batch))
    for r in np.flatnonzero(careful):
        name, files = batch[r]
        runs[name] = _read_run_files(name, files, warnings)
    value_run = event_run[v.event]
    _fill_runs(runs, [name for name, _ in batch], blob, v, value_run, keep=~careful[value_run])
    return runs


def _read(path: str, warnings: list[str]) -> bytes | None:
    """The whole file, in four system calls (open().read() makes nine)."""
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            size = os.fstat(fd).st_size
            data = os.read(fd, size + 1)
            if len(data) != size:  # grown since, or a read shorter than asked (over 2 GB): read to the end
                parts = [data]
                while part := os.read(fd, 1 << 24):
                    parts.append(part)
                data = b"".join(parts)
        finally:
            os.close(fd)
        return data
    except OSError as e:
        warnings.append(f"{path}: cannot read: {e.strerror or e}")
        return None


def _runs_with_purges(v: _Values, event_run: np.ndarray, file_first: np.ndarray, n_runs: int) -> np.ndarray:
    """Runs where TensorBoard's orphaned-data purge could drop something."""
    careful = np.zeros(n_runs, bool)
    # file_version 2+: a second SessionLog START in the run.
    starts = np.bincount(event_run[v.event_start], minlength=n_runs)
    careful |= starts >= 2
    # Older files: a summary step going back within the run.
    # A run is "v2" when each of its files starts with file_version 2 or later.
    v2 = ~np.isnan(v.event_version[file_first]) & (v.event_version[file_first] >= 2)
    runs_of_files = event_run[file_first]
    old = np.bincount(runs_of_files[~v2], minlength=n_runs) > 0
    if old.any():
        rows = np.flatnonzero(v.event_summary & old[event_run])
        steps, runs = v.event_step[rows], event_run[rows]
        back = (runs[1:] == runs[:-1]) & (steps[1:] < steps[:-1])
        careful[runs[1:][back]] = True
    return careful


def _fill_runs(
    runs: dict[str, Run], names: list[str], buf, v: _Values, value_run: np.ndarray, keep: np.ndarray
) -> None:
    """Plugin metadata (first per run and tag) and scalar series of the runs."""
    n_tags = max(len(v.tags), 1)
    key = value_run * n_tags + v.tag
    with_metadata = np.flatnonzero(keep & (v.plugin >= 0))
    first_keys, first_rows = np.unique(key[with_metadata], return_index=True)
    first_rows = with_metadata[first_rows]
    scalars_id = v.plugins.index(SCALARS) if SCALARS in v.plugins else -2
    scalar_keys = first_keys[v.plugin[first_rows] == scalars_id]
    # Python lists, not numpy scalars, in the loops over tens of thousands of runs.
    other = first_rows[v.plugin[first_rows] != scalars_id]
    for run, plugin, tag, (start, length) in zip(
        value_run[other].tolist(), v.plugin[other].tolist(), v.tag[other].tolist(), v.content[other].tolist()
    ):
        if v.plugins[plugin]:
            content = bytes(buf[start : start + length]) if start >= 0 else b""
            runs[names[run]].plugin_content.setdefault(v.plugins[plugin], {})[v.tags[tag]] = content
    scalar_rows = first_rows[v.plugin[first_rows] == scalars_id]
    for run, tag in zip(value_run[scalar_rows].tolist(), v.tag[scalar_rows].tolist()):
        runs[names[run]].plugin_content.setdefault(SCALARS, {})[v.tags[tag]] = b""
    rows = np.flatnonzero(keep & v.is_value)
    rows = rows[np.isin(key[rows], scalar_keys)]
    order = rows[np.argsort(key[rows], kind="stable")]
    if not len(order):
        return
    sorted_keys = key[order]
    bounds = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1], True])
    step, wall, value = v.step[order], v.wall_time[order], v.scalar[order]
    for k, a, b in zip(sorted_keys[bounds[:-1]].tolist(), bounds[:-1].tolist(), bounds[1:].tolist()):
        runs[names[k // n_tags]].scalars[v.tags[k % n_tags]] = Series(step[a:b], wall[a:b], value[a:b])


def _read_run_files(name: str, files: list[str], warnings: list[str]) -> Run:
    """One run file by file, with TensorBoard's purges of orphaned data."""
    run = Run(name)
    metadata_seen: set[str] = set()
    kept: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    plugin_of: dict[str, str] = {}
    file_version = None
    seen_start = False
    most_recent_step = None
    for path in files:
        data = _read(path, warnings)
        if data is None:
            continue
        records = scan_records(data, os.path.basename(path))
        warnings += records.warnings
        try:
            v = _decode(data, records.spans)
        except ValueError as e:
            warnings.append(f"{path}: a record is not an Event ({e}); file skipped")
            continue
        versions = v.event_version[~np.isnan(v.event_version)]
        if len(versions):
            file_version = float(versions[-1])
        tags = [v.tags[t] for t in v.tag.tolist()]
        for row in np.flatnonzero(v.plugin >= 0).tolist():
            tag = tags[row]
            if tag not in metadata_seen:
                metadata_seen.add(tag)
                plugin = v.plugins[v.plugin[row]]
                if plugin:
                    plugin_of[tag] = plugin
                    start, length = v.content[row]
                    run.plugin_content.setdefault(plugin, {})[tag] = (
                        bytes(data[start : start + length]) if start >= 0 else b""
                    )
        purges = _purges(v, tags, file_version, seen_start, most_recent_step)
        if v.event_start.any():
            seen_start = True
        summary_steps = v.event_step[v.event_summary]
        if len(summary_steps):
            most_recent_step = int(summary_steps[-1])
        _keep(kept, v, tags, purges)
    for tag, parts in kept.items():
        if plugin_of.get(tag) == SCALARS:
            run.scalars[tag] = Series(*(np.concatenate([p[k] for p in parts]) for k in range(3)))
    return run


def _purges(v: _Values, tags: list[str], file_version, seen_start: bool, most_recent_step) -> list:
    """(event index, step, tags or None for all) of each purge TensorBoard makes in this file."""
    out: list[tuple[int, int, set[str] | None]] = []
    if file_version is not None and file_version >= 2:
        starts = np.flatnonzero(v.event_start)
        for e in starts[0 if seen_start else 1 :]:
            out.append((int(e), int(v.event_step[e]), None))
        return out
    steps = v.event_step
    summaries = np.flatnonzero(v.event_summary)
    previous = (
        np.r_[most_recent_step if most_recent_step is not None else np.iinfo(np.int64).min, steps[summaries][:-1]]
        if len(summaries)
        else np.zeros(0, np.int64)
    )
    events = summaries[steps[summaries] < previous]
    # The rows of each purging event: one sort, not a scan of every row per purge.
    order = np.argsort(v.event, kind="stable")
    lo = np.searchsorted(v.event[order], events, "left")
    hi = np.searchsorted(v.event[order], events, "right")
    for e, a, b in zip(events.tolist(), lo.tolist(), hi.tolist()):
        out.append((e, int(steps[e]), {tags[i] for i in order[a:b].tolist()}))
    return out


def _keep(kept: dict, v: _Values, tags: list[str], purges) -> None:
    """Adds the file's values per tag, with the purges applied: a value is
    dropped by each purge of its tag made after it with a step at or below its
    own, so it survives when its step is below the smallest step of those
    purges. One pass per tag (a purge at a time was quadratic in purges)."""
    by_tag: dict[str, list[int]] = {}
    for i in np.flatnonzero(v.is_value).tolist():
        by_tag.setdefault(tags[i], []).append(i)
    events = np.array([p[0] for p in purges], np.int64)
    steps = np.array([p[1] for p in purges], np.int64)
    for_all = np.array([p[2] is None for p in purges], bool)
    named: dict[str, list[int]] = {}
    for k, (_, _, purged) in enumerate(purges):
        for tag in purged or ():
            named.setdefault(tag, []).append(k)
    everyone = _after_bound(events[for_all], steps[for_all])
    for tag in set(kept) | set(by_tag):
        mine = np.asarray(named.get(tag, []), np.int64)
        bound = lambda at, mine=mine: np.minimum(everyone(at), _after_bound(events[mine], steps[mine])(at))  # noqa: E731
        if len(purges) and tag in kept:  # earlier files' values come before every purge here
            first = bound(np.array([-1]))[0]
            kept[tag] = [tuple(a[p[0] < first] for a in p) for p in kept[tag]]
        if tag in by_tag:
            r = np.asarray(by_tag[tag], np.int64)
            if len(purges):
                r = r[v.step[r] < bound(v.event[r])]
            kept.setdefault(tag, []).append((v.step[r], v.wall_time[r], v.scalar[r]))


def _after_bound(events: np.ndarray, steps: np.ndarray):
    """For events e, the smallest step of the purges made after e (int64's
    largest when none is)."""
    suffix_min = np.r_[np.minimum.accumulate(steps[::-1])[::-1], np.iinfo(np.int64).max]
    return lambda at: suffix_min[np.searchsorted(events, at, "right")]


def _tensor_scalars(buf, spans: np.ndarray) -> np.ndarray:
    """The value of one-element numeric tensors (NaN for others), as
    tensor_util.make_ndarray(t).item() gives it."""
    out = np.full(len(spans), np.nan)
    if not len(spans):
        return out
    dtype, shape, content, floats, doubles = wire.decode_messages(
        buf,
        spans,
        [(TENSOR_DTYPE, "i"), (TENSOR_SHAPE, "s"), (TENSOR_CONTENT, "s"), (TENSOR_FLOAT, "s"), (TENSOR_DOUBLE, "s")],
    )
    ((dim_parent, dims),) = wire.find_children(buf, shape, [SHAPE_DIM])
    (size,) = wire.decode_messages(buf, dims, [(DIM_SIZE, "i")])
    count = np.ones(len(spans), np.int64)
    np.multiply.at(count, dim_parent, size)
    one = count == 1
    for code, column, width, fmt in ((DT_FLOAT, floats, 4, "<f4"), (DT_DOUBLE, doubles, 8, "<f8")):
        for source in (content, column):
            rows = np.flatnonzero(one & (dtype == code) & (source[:, 1] == width))
            if len(rows):
                blob, _ = wire.gather_spans(buf, source[rows])
                out[rows] = np.frombuffer(blob, fmt)
    for i in np.flatnonzero(one & np.isnan(out)).tolist():  # other types, or NaN itself: parse it
        out[i] = _tensor_item(bytes(buf[spans[i, 0] : spans[i, 0] + spans[i, 1]]))
    return out


def _tensor_item(data: bytes) -> float:
    """A one-element tensor's number (NaN when it is not a number)."""
    try:
        t = decode(tensor_pb2.TensorProto, data, "a summary's tensor")
    except ProfileError:
        return np.nan  # a corrupt value is no number, as a non-numeric one
    numpy_type = {
        1: "<f4",
        2: "<f8",
        3: "<i4",
        4: "<u1",
        5: "<i2",
        6: "<i1",
        9: "<i8",
        10: "?",
        17: "<u2",
        19: "<f2",
        22: "<u4",
        23: "<u8",
    }.get(t.dtype)
    if numpy_type is None:
        return np.nan
    if t.tensor_content:
        values = np.frombuffer(t.tensor_content, numpy_type)
    else:
        field_values = {
            1: t.float_val,
            2: t.double_val,
            9: t.int64_val,
            10: t.bool_val,
            22: t.uint32_val,
            23: t.uint64_val,
        }.get(t.dtype)
        if field_values is None:
            field_values = t.half_val if t.dtype == 19 else t.int_val
        values = np.asarray(list(field_values))  # type: ignore[call-overload]  # a repeated scalar field
        if t.dtype == 19:
            values = values.astype(np.uint16).view(np.float16)
    return float(values[0]) if len(values) >= 1 else np.nan
