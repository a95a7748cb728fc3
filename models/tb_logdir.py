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

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from models import _protowire as wire
from models.event_file import mapped, scan_records
from models.task import ProfileError, TaskState
from protos import tensor_pb2

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


def find_runs(logdir: Path) -> dict[str, list[Path]]:
    """Run name -> its event files in name order. Links leading out of the
    log dir are not followed."""
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
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            continue
        events = [Path(e.path) for e in entries if "tfevents" in e.name and _file_inside(e, root)]
        if events:
            runs[rel or "."] = events
        subfolders = [e for e in entries if e.is_dir() and (not e.is_symlink() or _inside(e.path, root))]
        stack += [(f"{rel}/{e.name}" if rel else e.name, e.path) for e in reversed(subfolders)]
    return runs


def _file_inside(entry: os.DirEntry, root: str) -> bool:
    return entry.is_file() and (not entry.is_symlink() or _inside(entry.path, root))


def _inside(path: str, root: str) -> bool:
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def read_logdir(logdir: Path, task: TaskState | None = None) -> Logdir:
    """Every run below a log dir with its scalars and plugin metadata."""
    task = task or TaskState()
    runs_files = find_runs(logdir)
    runs, warnings = {}, []
    for i, (name, files) in enumerate(runs_files.items()):
        if i % 64 == 0:
            task.report(i / max(len(runs_files), 1), f"Reading runs ({i:,} of {len(runs_files):,})")
        run, run_warnings = read_run(name, files)
        runs[name] = run
        warnings += run_warnings
    return Logdir(Path(logdir), runs, warnings)


# ---------------------------------------------------------------- one run


@dataclass
class _FileValues:
    """The summary values of one event file, one row per value."""

    step: np.ndarray
    wall_time: np.ndarray
    event: np.ndarray  # index of the value's event among the file's events
    tag: list[str]
    scalar: np.ndarray  # float64 value when it is a one-element number (simple_value or tensor), else NaN
    is_value: np.ndarray  # bool: a simple_value or a tensor (what TensorBoard keeps per tag)
    plugin: list[str | None]  # plugin name of the value's metadata (after data_compat), None without metadata
    content: dict[int, bytes]  # row -> metadata content, for rows with metadata
    event_step: np.ndarray  # per event
    event_summary: np.ndarray  # per event: has a summary
    event_start: np.ndarray  # per event: SessionLog START
    file_version: float | None


def read_run(name: str, files: list[Path]) -> tuple[Run, list[str]]:
    run = Run(name)
    warnings: list[str] = []
    metadata_seen: set[str] = set()
    kept: dict[str, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
    plugin_of: dict[str, str] = {}
    file_version = None
    seen_start = False
    most_recent_step = None
    for path in files:
        try:
            values = _read_file(path, warnings)
        except ProfileError as e:
            warnings.append(str(e))
            continue
        if values.file_version is not None:
            file_version = values.file_version
        for row, (tag, plugin) in enumerate(zip(values.tag, values.plugin)):
            if plugin is not None and tag not in metadata_seen:
                metadata_seen.add(tag)
                if plugin:
                    plugin_of[tag] = plugin
                    run.plugin_content.setdefault(plugin, {})[tag] = values.content.get(row, b"")
        purges = _purges(values, file_version, seen_start, most_recent_step)
        if values.event_start.any():
            seen_start = True
        summary_steps = values.event_step[values.event_summary]
        if len(summary_steps):
            most_recent_step = int(summary_steps[-1])
        _keep(kept, values, purges)
    for tag, parts in kept.items():
        if plugin_of.get(tag) != SCALARS:
            continue
        step, wall, value = (np.concatenate([p[k] for p in parts]) for k in range(3))
        run.scalars[tag] = Series(step, wall, value)
    return run, warnings


def _purges(values: _FileValues, file_version, seen_start: bool, most_recent_step) -> list[tuple[int, int, set | None]]:
    """(event index, step, tags or None for all) of each purge TensorBoard makes in this file."""
    out = []
    if file_version is not None and file_version >= 2:
        starts = np.flatnonzero(values.event_start)
        for e in starts[0 if seen_start else 1:]:
            out.append((int(e), int(values.event_step[e]), None))
        return out
    steps = values.event_step
    summaries = np.flatnonzero(values.event_summary)
    previous = np.r_[most_recent_step if most_recent_step is not None else np.iinfo(np.int64).min,
                     steps[summaries][:-1]] if len(summaries) else np.zeros(0, np.int64)
    for e in summaries[steps[summaries] < previous]:
        tags = {values.tag[i] for i in np.flatnonzero(values.event == e)}
        out.append((int(e), int(steps[e]), tags))
    return out


def _keep(kept: dict, values: _FileValues, purges) -> None:
    """Adds the file's values per tag, applying the purges in event order."""
    rows = np.flatnonzero(values.is_value)
    if not purges:
        _append(kept, values, rows)
        return
    start = 0
    for event, step, tags in purges:
        before = rows[(values.event[rows] < event) & (values.event[rows] >= start)]
        _append(kept, values, before)
        for tag, parts in kept.items():
            if tags is None or tag in tags:
                kept[tag] = [tuple(a[p[0] < step] for a in p) for p in parts]
        start = event
    _append(kept, values, rows[values.event[rows] >= start])


def _append(kept: dict, values: _FileValues, rows: np.ndarray) -> None:
    if not len(rows):
        return
    tags = [values.tag[i] for i in rows]
    order = sorted(range(len(rows)), key=tags.__getitem__)  # stable: file order within a tag
    sorted_rows = rows[order]
    sorted_tags = [tags[i] for i in order]
    start = 0
    for k in range(1, len(sorted_rows) + 1):
        if k == len(sorted_rows) or sorted_tags[k] != sorted_tags[start]:
            r = sorted_rows[start:k]
            kept.setdefault(sorted_tags[start], []).append((values.step[r], values.wall_time[r], values.scalar[r]))
            start = k


def _read_file(path: Path, warnings: list[str]) -> _FileValues:
    with mapped(path) as buf:
        records = scan_records(buf, path.name)
        warnings += records.warnings
        try:
            return _decode(buf, records.spans)
        except ValueError as e:
            raise ProfileError(f"{path}: a record is not an Event: {e}") from None


def _text(buf, span) -> str:
    return bytes(buf[span[0]:span[0] + span[1]]).decode("utf-8", "replace") if span[0] >= 0 else ""


def _decode(buf, events: np.ndarray) -> _FileValues:
    wall, step, version, summary, session_log = wire.decode_messages(
        buf, events, [(EVENT_WALL_TIME, "d"), (EVENT_STEP, "i"), (EVENT_FILE_VERSION, "s"),
                      (EVENT_SUMMARY, "s"), (EVENT_SESSION_LOG, "s")])
    (status,) = wire.decode_messages(buf, session_log, [(SESSION_LOG_STATUS, "i")])
    file_version = None
    for span in version[version[:, 0] >= 0]:
        text = _text(buf, span)
        try:
            file_version = float(text.split("brain.Event:")[-1])
        except ValueError:
            file_version = None
    has_summary = summary[:, 0] >= 0
    ((parents, value_spans),) = wire.find_children(buf, summary[has_summary], [SUMMARY_VALUE])
    event_of = np.flatnonzero(has_summary)[parents]
    tag_spans, node_spans, tensor, metadata = wire.decode_messages(
        buf, value_spans, [(VALUE_TAG, "s"), (VALUE_NODE_NAME, "s"), (VALUE_TENSOR, "s"), (VALUE_METADATA, "s")])
    (simple,) = wire.decode_messages(buf, value_spans, [(VALUE_SIMPLE, "g")])
    (simple_count,) = wire.decode_messages(buf, value_spans, [(VALUE_SIMPLE, "n")])
    is_simple, is_tensor = simple_count > 0, tensor[:, 0] >= 0
    tag_ids, tag_strings = wire.intern_strings(buf, tag_spans)
    tags = [tag_strings[i] for i in tag_ids]
    for i in np.flatnonzero(is_tensor & (tag_spans[:, 0] < 0)):  # old tensor summaries: named by node
        tags[i] = _text(buf, node_spans[i])
    (plugin_data,) = wire.decode_messages(buf, metadata, [(METADATA_PLUGIN_DATA, "s")])
    names, contents = wire.decode_messages(buf, plugin_data, [(PLUGIN_NAME, "s"), (PLUGIN_CONTENT, "s")])
    name_ids, name_strings = wire.intern_strings(buf, names)
    has_metadata = metadata[:, 0] >= 0
    plugin: list[str | None] = [name_strings[i] if m else None for i, m in zip(name_ids.tolist(), has_metadata.tolist())]
    content = {int(i): bytes(buf[contents[i, 0]:contents[i, 0] + contents[i, 1]]) if contents[i, 0] >= 0 else b""
               for i in np.flatnonzero(has_metadata & ~is_simple)}
    for i in np.flatnonzero(is_simple).tolist():  # data_compat: a simple_value is a "scalars" value
        plugin[i] = SCALARS
        content[i] = b""
    scalar = np.where(is_simple, simple, np.nan)
    tensor_rows = np.flatnonzero(is_tensor & ~is_simple)
    scalar[tensor_rows] = _tensor_scalars(buf, tensor[tensor_rows])
    return _FileValues(step=step[event_of], wall_time=wall[event_of], event=event_of, tag=tags, scalar=scalar,
                       is_value=is_simple | is_tensor, plugin=plugin, content=content, event_step=step,
                       event_summary=has_summary, event_start=status == SESSION_LOG_START, file_version=file_version)


def _tensor_scalars(buf, spans: np.ndarray) -> np.ndarray:
    """The value of one-element numeric tensors (NaN for others), as
    tensor_util.make_ndarray(t).item() gives it."""
    out = np.full(len(spans), np.nan)
    if not len(spans):
        return out
    dtype, shape, content, floats, doubles = wire.decode_messages(
        buf, spans, [(TENSOR_DTYPE, "i"), (TENSOR_SHAPE, "s"), (TENSOR_CONTENT, "s"), (TENSOR_FLOAT, "s"),
                     (TENSOR_DOUBLE, "s")])
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
        out[i] = _tensor_item(bytes(buf[spans[i, 0]:spans[i, 0] + spans[i, 1]]))
    return out


def _tensor_item(data: bytes) -> float:
    """A one-element tensor's number (NaN when it is not a number)."""
    t = tensor_pb2.TensorProto.FromString(data)
    numpy_type = {1: "<f4", 2: "<f8", 3: "<i4", 4: "<u1", 5: "<i2", 6: "<i1", 9: "<i8", 10: "?", 17: "<u2",
                  19: "<f2", 22: "<u4", 23: "<u8"}.get(t.dtype)
    if numpy_type is None:
        return np.nan
    if t.tensor_content:
        values = np.frombuffer(t.tensor_content, numpy_type)
    else:
        field_values = {1: t.float_val, 2: t.double_val, 9: t.int64_val, 10: t.bool_val, 22: t.uint32_val,
                        23: t.uint64_val}.get(t.dtype)
        if field_values is None:
            field_values = t.half_val if t.dtype == 19 else t.int_val
        values = np.asarray(list(field_values))
        if t.dtype == 19:
            values = values.astype(np.uint16).view(np.float16)
    return float(values[0]) if len(values) >= 1 else np.nan
