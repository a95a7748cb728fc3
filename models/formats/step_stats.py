"""Step timelines from TensorFlow's StepStats (step_stats.proto).

Where they come from: `Session.run(..., options=RunOptions(trace_level=
FULL_TRACE), run_metadata=md)` fills `md.step_stats`; users save `md` (a
RunMetadata) or its StepStats in binary or text format, or write it into an
event file with `FileWriter.add_run_metadata(md, tag)`.

`locate()` finds the StepStats in any of these; `load_step_timeline()` turns
it into a `Timeline` of one lane set per device, decoded in C into columns
(the labels parsed the way TensorFlow's timeline.py parses them), with every
field of a node read back from the file only when asked for. The memory
analysis and the Chrome trace export follow timeline.py's `show_memory`;
both read the nodes in C (models/formats/_stepstats.c) and the export is
written in chunks, never whole in memory.
"""

from __future__ import annotations

import itertools
import json
import mmap
import os
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from profscope.models.core import _protowire as wire
from profscope.models.core.event_file import is_event_file, mapped, tagged_run_metadata
from profscope.models.core.files import read_bytes, read_head
from profscope.models.core.guards import decode, parse_text
from profscope.models.core.sniff import varint
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data import _jsonrows, _lanes
from profscope.models.data.memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    AllocatorProfile,
    MemoryProfileData,
    MemorySummary,
    Snapshots,
    merge_rows,
)
from profscope.models.data.timeline import StringColumn, Timeline
from profscope.models.formats import _labels, _stepstats
from profscope.models.repository.registry import MEMORY_PROFILE, TRACE_VIEWER, Format, strip_suffix
from profscope.protos import config_pb2, step_stats_pb2, types_pb2

# Field numbers of step_stats.proto and config.proto.
RUN_METADATA_STEP_STATS = 1
STEP_STATS_DEV_STATS = 1
DEV_DEVICE, DEV_NODE_STATS, DEV_THREAD_NAMES = 1, 2, 3
NODE_NAME, TIMELINE_LABEL = 1, 8  # times, outputs and thread ids are read in models/formats/_stepstats.c
TEXT_SUFFIXES = (".pbtxt", ".txt", ".pbtxt.gz", ".txt.gz")
BINARY_SUFFIXES = (".pb", ".pb.gz")
UNKNOWN_OP = "unknown"  # what timeline.py calls an op whose label it cannot parse
SNIFF_BYTES = 1 << 16

NOT_STEP_STATS = ("is not a StepStats or RunMetadata (binary or text format) nor an event file with "
                  "run metadata; TensorFlow writes these with RunOptions(trace_level=FULL_TRACE)")


def is_gputrace_device(device: str) -> bool:
    """Devices of GPU tracing (streams, memcpy), whose labels name kernels."""
    return "/stream:" in device or "/memcpy" in device


def parse_op_label(label: str) -> tuple[str, str, list[str]]:
    """(name, op, inputs) of `name = Op(in0, in1)`, as timeline.py reads it."""
    buf = label.encode()
    r = _labels.parse_labels(buf, np.array([[0, len(buf)]]), np.array([[0, 0]]), False)[0]
    if r[0] < 0:
        return UNKNOWN_OP, UNKNOWN_OP, []
    inputs = buf[r[2]:r[2] + r[3]].decode()
    return buf[:r[0] - 3].decode(), buf[r[0]:r[0] + r[1]].decode(), inputs.split(", ") if inputs else []


def parse_kernel_label(label: str, node_name: str) -> tuple[str, str]:
    """(node name, op) of a GPU stream label `kernel @@node:op#id=...#`."""
    start, end = label.find("@@"), label.find("#")
    if start >= 0 and end >= 0 and start + 2 < end:
        node_name = label[start + 2:end]
    fields = node_name.split(":") + [UNKNOWN_OP]
    return fields[0], fields[1]


# ---------------------------------------------------------------- locating


@dataclass(frozen=True)
class StepStatsFile:
    """Where a StepStats lives: a file, its form, and for event files the tag."""

    path: Path
    form: str  # "binary", "text" or "events"
    message: str  # "StepStats" or "RunMetadata"
    tag: str = ""
    tags: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    span: tuple[int, int] = (0, 0)  # event files: where the tag's RunMetadata lies in the file

    @contextmanager
    def open(self):
        """(buffer, start, end) of the serialized StepStats; the buffer is the
        mapped file when offsets into the file stay valid (binary, events)."""
        if self.form == "text":
            data = _text_to_binary(self.path, self.message)
            yield data, 0, len(data)
            return
        if self.form == "binary" and _is_gzip(self.path):
            data = read_bytes(self.path)
            yield (data, *_step_stats_span(data, 0, len(data), self.message, self.path))
            return
        with mapped(self.path) as buf:
            if self.form == "events":
                start, end = self.span
                if end > len(buf):
                    raise ProfileError(f"{self.path} changed on disk since it was opened; reload it (F5)")
                yield (buf, *_step_stats_span(buf, start, end, "RunMetadata", self.path))
            else:
                yield (buf, *_step_stats_span(buf, 0, len(buf), self.message, self.path))


def locate(path: Path, tag: str = "", task: TaskState | None = None) -> StepStatsFile:
    """The StepStats in a file, checked by content; raises ProfileError with
    the reason when the file holds none."""
    path = Path(path)
    if is_event_file(path.name):
        found, warnings = tagged_run_metadata(path, task)
        if not found:
            raise ProfileError(f"{path}: this event file holds no run metadata (FileWriter.add_run_metadata writes it)")
        by_tag = {t.tag: t for t in found}  # a repeated tag: the later one, as TensorBoard shows
        tags = tuple(by_tag)
        if tag and tag not in tags:
            raise ProfileError(f"{path}: no run metadata tagged {tag!r}; tags: {', '.join(tags)}")
        chosen = by_tag[tag or tags[0]]
        return StepStatsFile(path, "events", "RunMetadata", chosen.tag, tags, tuple(warnings),
                             (chosen.offset, chosen.offset + chosen.length))
    if path.name.endswith(TEXT_SUFFIXES):
        head = read_head(path, SNIFF_BYTES)
        message = _sniff_text(head)
        if message is None:
            raise ProfileError(f"{path} {NOT_STEP_STATS}")
        return StepStatsFile(path, "text", message)
    head = read_head(path, SNIFF_BYTES)
    message = _sniff_binary(head)
    if message is None:
        raise ProfileError(f"{path} {NOT_STEP_STATS}")
    return StepStatsFile(path, "binary", message)


def sniff(path: Path) -> bool:
    """Cheap check (first 64 KiB) whether a file looks like a StepStats or RunMetadata."""
    try:
        head = read_head(path, SNIFF_BYTES)
    except ProfileError:
        return False
    if path.name.endswith(TEXT_SUFFIXES):
        return _sniff_text(head) is not None
    return _sniff_binary(head) is not None


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _sniff_text(head: bytes) -> str | None:
    text = head.decode("utf-8", "replace")
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("step_stats {", "step_stats:", "step_stats{")):
            return "RunMetadata"
        if line.startswith(("dev_stats {", "dev_stats:", "dev_stats{")):
            return "StepStats"
        return None
    return None


def _looks_like_device(buf: bytes, p: int) -> bool:
    """Whether a message at p starts with a DeviceStepStats.device string ("/job:..." or "/device:...")."""
    if buf[p:p + 1] != b"\x0a":
        return False
    n, q = varint(buf, p + 1)
    return bool(n) and buf[q:q + 1] == b"/"


def _sniff_binary(head: bytes) -> str | None:
    """StepStats starts with dev_stats (1) holding device (1) "/job:..." or
    "/device:..."; RunMetadata starts with step_stats (1) holding that."""
    if head[:1] != b"\x0a":
        return None
    n, p = varint(head, 1)
    if n is None:
        return None
    if _looks_like_device(head, p):
        return "StepStats"
    if head[p:p + 1] == b"\x0a":
        m, q = varint(head, p + 1)
        if m is not None and _looks_like_device(head, q):
            return "RunMetadata"
    return None


# The last two text files converted, by path, message and the file's mtime and size (at most 128 MiB in all):
# protobuf's text parser runs at about 1 MB/s, and the timeline, the memory profile and the trace export each
# open the file.
_CONVERTED: OrderedDict[tuple, bytes] = OrderedDict()
_CONVERTED_LOCK = threading.Lock()
_CONVERTED_FILES, _CONVERTED_BYTES = 2, 128 << 20


def _text_to_binary(path: Path, message: str) -> bytes:
    try:
        st = path.stat()
        key = (str(path), message, st.st_mtime_ns, st.st_size)
    except OSError:
        key = None  # read_bytes says what is wrong
    with _CONVERTED_LOCK:
        if key is not None and key in _CONVERTED:
            _CONVERTED.move_to_end(key)
            return _CONVERTED[key]
    text = read_bytes(path).decode("utf-8", "replace")
    msg = config_pb2.RunMetadata() if message == "RunMetadata" else step_stats_pb2.StepStats()
    parse_text(text, msg, str(path))  # RunMetadata's graphs are not in Profscope's schema: skipped
    step_stats = msg.step_stats if isinstance(msg, config_pb2.RunMetadata) else msg
    data = step_stats.SerializeToString()
    if key is not None and len(data) <= _CONVERTED_BYTES:
        with _CONVERTED_LOCK:
            _CONVERTED[key] = data
            while len(_CONVERTED) > _CONVERTED_FILES or sum(map(len, _CONVERTED.values())) > _CONVERTED_BYTES:
                _CONVERTED.popitem(last=False)
    return data


def _step_stats_span(buf, start: int, end: int, message: str, path: Path) -> tuple[int, int]:
    if message == "StepStats":
        return start, end
    try:
        (spans,) = wire.find_fields(buf, start, end, [RUN_METADATA_STEP_STATS])
    except ValueError as e:
        raise ProfileError(f"{path}: corrupt RunMetadata: {e}") from None
    if not len(spans):
        raise ProfileError(f"{path}: the RunMetadata holds no step_stats (was the step traced with FULL_TRACE?)")
    off, n = spans[-1]
    return int(off), int(off + n)


# ---------------------------------------------------------------- timeline


@dataclass
class NodeSource:
    """Reads nodes' NodeExecStats again when their details are asked for."""

    path: Path
    offsets: np.ndarray  # int64 offset of each event's node (timeline order)
    lengths: np.ndarray  # int32
    data: bytes | None = None  # the StepStats bytes when the file has no stable offsets
    stamp: tuple[int, int] | None = None  # the file's size and mtime when it was read

    def __post_init__(self):
        if self.stamp is None:
            self.stamp = _stamp(self.path)

    @contextmanager
    def buffer(self):
        if self.data is not None:
            yield self.data
        else:
            with mapped(self.path) as buf:
                yield buf

    def node(self, i: int, buf=None) -> step_stats_pb2.NodeExecStats:
        if buf is None:
            with self.buffer() as buf:
                return self.node(i, buf)
        off, n = int(self.offsets[i]), int(self.lengths[i])
        if self.data is None and _stamp(self.path) != self.stamp:
            raise ProfileError(f"{self.path} changed on disk since it was opened; reload it (F5)")
        if off + n > len(buf):
            raise ProfileError(f"{self.path}: node {i} lies past the end of the data")
        return decode(step_stats_pb2.NodeExecStats, buf[off:off + n], f"{self.path}: node {i}")


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
        return st.st_size, st.st_mtime_ns
    except OSError:
        return None


def load_step_timeline(source: StepStatsFile, task: TaskState | None = None) -> Timeline:
    """The per-device timeline of a StepStats: one lane per thread when the
    nodes carry different thread ids, overlapping nodes packed into extra
    lanes; op types from the labels."""
    task = task or TaskState()
    task.report(0.05, f"Reading {source.path.name}")
    with source.open() as (buf, start, end):
        try:
            return _build_timeline(buf, start, end, source, task)
        except ValueError as e:
            raise ProfileError(f"{source.path}: corrupt StepStats: {e}") from None


@dataclass
class StepNodes:
    """Where the NodeExecStats of a StepStats lie, in file order (device by device)."""

    devices: list[str]
    device_spans: np.ndarray  # int64[d, 2] each DeviceStepStats' bytes
    device: np.ndarray  # int64 device of each node
    spans: np.ndarray  # int64[n, 2] the node's bytes
    thread_dev: np.ndarray
    thread_spans: np.ndarray  # DeviceStepStats.thread_names entries

    @property
    def kernel(self) -> np.ndarray:
        """Per node: on a GPU stream or memcpy device (labels name kernels)."""
        if not self.devices:
            return np.zeros(0, bool)
        return np.array([is_gputrace_device(d) for d in self.devices], bool)[self.device]


def find_nodes(buf, start: int, end: int) -> StepNodes:
    """The devices and node spans of the StepStats at [start, end) (ValueError when corrupt)."""
    (dev_spans,) = wire.find_fields(buf, start, end, [STEP_STATS_DEV_STATS])
    (name_dev, name_spans), (node_dev, node_spans), (thread_dev, thread_spans) = wire.find_children(
        buf, dev_spans, [DEV_DEVICE, DEV_NODE_STATS, DEV_THREAD_NAMES])
    devices = [""] * len(dev_spans)
    for d, (o, n) in zip(name_dev.tolist(), name_spans.tolist()):  # the last one wins, as protobuf reads it
        devices[d] = bytes(buf[o:o + n]).decode("utf-8", "replace")
    return StepNodes(devices, dev_spans, node_dev, node_spans, thread_dev, thread_spans)


def node_times(buf, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(start ns, duration ns, thread id) per node: nanoseconds when the node has them, else micros * 1000."""
    return _stepstats.node_times(buf, spans)


@dataclass
class Nodes:
    """What the timeline shows of each node, with its label read as timeline.py reads it."""

    steps: StepNodes
    start_ns: np.ndarray
    dur_ns: np.ndarray
    thread: np.ndarray
    op: np.ndarray  # int64[n, 2] the op in the label (-1: timeline.py's "unknown")
    recv: np.ndarray  # bool: a RecvTensor node (not a kernel), whose op timeline.py calls RecvTensor
    event_name: np.ndarray  # int64[n, 2] the node name, for kernels the one in the label


def decode_nodes(buf, start: int, end: int, task: TaskState) -> Nodes:
    """The nodes of the StepStats at [start, end) decoded in C (ValueError when corrupt)."""
    steps = find_nodes(buf, start, end)
    task.raise_if_cancelled()
    task.report(0.3, "Decoding nodes")
    start_ns, dur_ns, thread = node_times(buf, steps.spans)
    name, label = wire.decode_messages(buf, steps.spans, [(NODE_NAME, "s"), (TIMELINE_LABEL, "s")])
    task.raise_if_cancelled()
    task.report(0.5, "Parsing labels")
    kernel = steps.kernel
    parsed = np.empty((len(steps.spans), 4), np.int64)
    for flag in (False, True):
        sel = np.flatnonzero(kernel == flag)
        if len(sel):
            parsed[sel] = _labels.parse_labels(buf, label[sel], name[sel], flag)
    del label
    op = parsed[:, :2].copy()
    op[parsed[:, 0] < 0] = (-1, 0)
    recv = ~kernel & _equals(buf, name, b"RecvTensor")
    event_name = name
    event_name[kernel] = parsed[kernel, 2:]  # the node a GPU kernel ran for
    return Nodes(steps, start_ns, dur_ns, thread, op, recv, event_name)


@dataclass
class Lanes:
    """Timeline order: the nodes shown (by index) sorted by lane, then start."""

    order: np.ndarray  # node index of each event
    lane_group: np.ndarray  # int32 device of each lane
    lane_offsets: np.ndarray  # int64[lanes + 1] first event of each lane
    lane_names: list[str]
    warnings: list[str]


def lay_out(buf, steps: StepNodes, start_ns: np.ndarray, dur_ns: np.ndarray, thread: np.ndarray) -> Lanes:
    """Per device, one lane per thread id when the nodes carry several,
    overlapping nodes packed into extra lanes; nodes without a start left out."""
    devices, node_dev = steps.devices, steps.device
    warnings = []
    keep = start_ns > 0
    if not keep.all():
        warnings.append(f"left out {int((~keep).sum())} node(s) without a start time")
    if (dur_ns[keep] < 0).any():
        warnings.append(f"{int((dur_ns[keep] < 0).sum())} node(s) had a negative duration, shown as 0")
    empty = sorted(set(range(len(devices))) - set(np.unique(node_dev[keep]).tolist()))
    if empty:
        warnings.append(f"no timed nodes on: {', '.join(devices[d] or '(unnamed device)' for d in empty)}")
    idx = np.flatnonzero(keep)
    del keep
    dev = node_dev[idx]  # nondecreasing: find_children lists nodes device by device
    lane_thread = thread[idx].astype(np.int64)
    # A device has a lane set per thread id only when its nodes carry several.
    bounds = np.searchsorted(dev, np.arange(len(devices) + 1))
    multi = np.array([a < b and lane_thread[a:b].min() != lane_thread[a:b].max()
                      for a, b in zip(bounds[:-1], bounds[1:])], bool)
    lane_thread[~multi[dev]] = -1
    if len(idx) and lane_thread.min() >= -1 and lane_thread.max() < 1 << 32 and dev[-1] < 1 << 30:
        order = np.lexsort((start_ns[idx], (dev << 33) | (lane_thread + 1)))  # one key for (device, thread)
    else:
        order = np.lexsort((start_ns[idx], lane_thread, dev))
    idx = idx[order]
    dev_of, thread_of = dev[order], lane_thread[order]
    del order, lane_thread, dev
    s = start_ns[idx]
    e = s + np.maximum(dur_ns[idx], 0)
    seg = (
        np.flatnonzero(np.r_[True, (dev_of[1:] != dev_of[:-1]) | (thread_of[1:] != thread_of[:-1])])
        if len(idx)
        else np.zeros(0, np.int64)
    )
    seg_end = np.r_[seg[1:], len(idx)]
    sub = np.zeros(len(idx), np.int32)
    for a, b in zip(seg, seg_end):
        sub[a:b] = _lanes.pack_lanes(s[a:b], e[a:b])
    del e, s
    thread_names = _thread_names(buf, steps.thread_dev, steps.thread_spans)
    if sub.any():
        # Lanes of a thread in order, each still sorted by start (a stable sort).
        seg_index = np.repeat(np.arange(len(seg), dtype=np.int64), seg_end - seg)
        lane_key = np.argsort(seg_index * (int(sub.max()) + 1) + sub, kind="stable")
        del seg_index
        idx, dev_of, thread_of, sub = idx[lane_key], dev_of[lane_key], thread_of[lane_key], sub[lane_key]
    new_lane = (
        np.r_[True, (dev_of[1:] != dev_of[:-1]) | (thread_of[1:] != thread_of[:-1]) | (sub[1:] != sub[:-1])]
        if len(idx)
        else np.zeros(0, bool)
    )
    firsts = np.flatnonzero(new_lane)
    lane_names = []
    for f in firsts:
        d, t, k = int(dev_of[f]), int(thread_of[f]), int(sub[f])
        if t < 0:
            lane_names.append(f"lane {k}")
        else:
            label_text = f"thread {t}" + (f" {thread_names[d][t]}" if t in thread_names.get(d, {}) else "")
            lane_names.append(label_text if k == 0 else f"{label_text} ({k + 1})")
    return Lanes(idx, dev_of[firsts].astype(np.int32), np.r_[firsts, len(idx)].astype(np.int64), lane_names, warnings)


def _build_timeline(buf, start: int, end: int, source: StepStatsFile, task: TaskState) -> Timeline:
    nodes = decode_nodes(buf, start, end, task)
    kind, kinds = wire.intern_strings(buf, nodes.op)
    kinds = list(kinds)
    kinds[0] = UNKNOWN_OP  # absent label or no match
    if "RecvTensor" not in kinds:
        kinds.append("RecvTensor")
    kind[nodes.recv] = kinds.index("RecvTensor")
    lanes = lay_out(buf, nodes.steps, nodes.start_ns, nodes.dur_ns, nodes.thread)
    task.raise_if_cancelled()
    task.report(0.8, "Building columns")
    idx = lanes.order
    origin_ns = int(nodes.start_ns[idx].min()) if len(idx) else 0
    names = StringColumn.from_utf8(*wire.gather_spans(buf, nodes.event_name[idx]))
    in_memory = not isinstance(buf, mmap.mmap)
    spans = nodes.steps.spans
    detail = NodeSource(
        source.path,
        spans[idx, 0].copy(),
        spans[idx, 1].astype(np.int32),
        data=bytes(buf[start:end]) if in_memory else None,
    )
    if in_memory:
        detail.offsets -= start
    timeline = Timeline(
        groups=nodes.steps.devices,
        lane_group=lanes.lane_group,
        lane_names=lanes.lane_names,
        lane_offsets=lanes.lane_offsets,
        start_ps=(nodes.start_ns[idx] - origin_ns) * 1000,
        duration_ps=np.maximum(nodes.dur_ns[idx], 0) * 1000,
        kind=kind[idx].astype(np.int32),
        kinds=kinds,
        names=names,
        origin_ns=origin_ns,
        source=_source_name(source),
        warnings=list(source.warnings) + lanes.warnings,
    )
    timeline.details = lambda i: node_details(timeline, detail, i)
    timeline.records = detail
    return timeline


def _source_name(source: StepStatsFile) -> str:
    return str(source.path) + (f" [{source.tag}]" if source.tag else "")


def _equals(buf, spans: np.ndarray, text: bytes) -> np.ndarray:
    """Which spans hold exactly `text`."""
    out = spans[:, 1] == len(text)
    hits = np.flatnonzero(out)
    if len(hits) and len(text):
        data = np.frombuffer(buf, np.uint8)
        out[hits] = (data[spans[hits, 0, None] + np.arange(len(text))] == np.frombuffer(text, np.uint8)).all(axis=1)
        del data  # a view of an mmap must not outlive it
    return out


def _thread_names(buf, thread_dev: np.ndarray, spans: np.ndarray) -> dict[int, dict[int, str]]:
    """DeviceStepStats.thread_names (map<uint32, string>) per device."""
    names: dict[int, dict[int, str]] = {}
    if len(spans):
        keys, values = wire.decode_messages(buf, spans, [(1, "i"), (2, "s")])
        for d, k, (o, n) in zip(thread_dev, keys, values):
            names.setdefault(int(d), {})[int(k)] = bytes(buf[o : o + n]).decode("utf-8", "replace") if o >= 0 else ""
    return names


# ---------------------------------------------------------------- details


def node_details(timeline: Timeline, source: NodeSource, i: int) -> list[tuple[str, str]]:
    """Everything about event i: where and when it ran, its op and inputs,
    outputs (dtype, shape, bytes), then every field of its NodeExecStats."""
    node = source.node(i)
    lane = timeline.lane_of(i)
    device = timeline.groups[timeline.lane_group[lane]]
    if is_gputrace_device(device):
        node_name, op = parse_kernel_label(node.timeline_label, node.node_name)
        inputs: list[str] = []
    else:
        _, op, inputs = parse_op_label(node.timeline_label)
        node_name = node.node_name
        if node_name == "RecvTensor":
            op = "RecvTensor"
    rows = [("node", node_name), ("op", op), ("device", device), ("lane", timeline.lane_names[lane])]
    rows += [(f"input {k}", name) for k, name in enumerate(inputs)]
    start_ns = node.all_start_nanos or node.all_start_micros * 1000
    unit = 1 if node.all_start_nanos else 1000
    rel = lambda ns: f"{(ns - timeline.origin_ns) / 1000:,.3f} us from step start"
    if node.scheduled_micros or node.scheduled_nanos:
        rows.append(("scheduled", rel(node.scheduled_nanos or node.scheduled_micros * 1000)))
    rows.append(("all start", rel(start_ns)))
    for label, ns_field, us_field in (
        ("op start", "op_start_rel_nanos", "op_start_rel_micros"),
        ("op end", "op_end_rel_nanos", "op_end_rel_micros"),
        ("all end", "all_end_rel_nanos", "all_end_rel_micros"),
    ):
        offset = getattr(node, ns_field) if unit == 1 else getattr(node, us_field) * 1000
        rows.append((label, f"+{offset / 1000:,.3f} us ({rel(start_ns + offset)})"))
    for out in node.output:
        desc = out.tensor_description
        alloc = desc.allocation_description
        allocated = f", {alloc.allocated_bytes:,} allocated" if alloc.allocated_bytes else ""
        rows.append(
            (
                f"output {out.slot}",
                f"{dtype_name(desc.dtype)} {shape_text(desc.shape)}, "
                f"{alloc.requested_bytes:,} bytes requested{allocated} on {alloc.allocator_name or '?'}",
            )
        )
    for mem in node.memory:
        rows.append(
            (
                f"memory {mem.allocator_name}",
                f"total {mem.total_bytes:,} B, peak {mem.peak_bytes:,} B, "
                f"live {mem.live_bytes:,} B, in use {mem.allocator_bytes_in_use:,} B",
            )
        )
    rows += [(path, value) for path, value in flatten_fields(node)]
    return rows


def flatten_fields(message, prefix: str = ""):
    """(dotted path, value) for every field set in a message, recursively."""
    for fd, value in message.ListFields():
        path = prefix + fd.name
        if fd.message_type is not None and fd.message_type.GetOptions().map_entry:
            yield from ((f"{path}[{k}]", str(value[k])) for k in sorted(value))
            continue
        items = list(value) if fd.is_repeated else [value]
        for k, item in enumerate(items):
            p = f"{path}[{k}]" if fd.is_repeated else path
            if fd.message_type is not None:
                sub = list(flatten_fields(item, p + "."))
                yield from sub if sub else [(p, "{}")]
            elif fd.enum_type is not None:
                yield (
                    p,
                    fd.enum_type.values_by_number[item].name if item in fd.enum_type.values_by_number else str(item),
                )
            else:
                yield p, str(item)


def dtype_name(dtype: int) -> str:
    """ "float" for DT_FLOAT, as XProf writes data types."""
    try:
        return types_pb2.DataType.Name(dtype).removeprefix("DT_").lower()
    except ValueError:
        return str(dtype)


def shape_text(shape) -> str:
    if shape.unknown_rank:
        return "(?)"
    return "(" + ",".join(str(d.size) for d in shape.dim) + ")"


# ---------------------------------------------------------------- timeline.py's analysis


@dataclass
class Tensors:
    """timeline.py's tensors (its _TensorTracker) as columns: one row per
    distinct output name (`node`, `node:1`, ...) in first-seen order, holding
    the last tensor of that name, alive from its producer's start to the end
    of its last consumer."""

    allocator: np.ndarray  # index into allocators
    allocators: list[str]  # distinct names, sorted
    requested: np.ndarray
    allocated: np.ndarray  # allocated_bytes, or requested when not reported
    dtype: np.ndarray  # DataType number
    shape: np.ndarray  # index into shapes
    shapes: list[str]  # "(32,64)", "(?)"
    create_us: np.ndarray
    last_unref_us: np.ndarray
    names: bytes | None = None  # row t's name is names[name_offsets[t]:name_offsets[t + 1]]
    name_offsets: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.requested)

    def name_spans(self, rows: np.ndarray) -> np.ndarray:
        assert self.name_offsets is not None  # full columns (tensor_columns(full=True))
        return np.c_[self.name_offsets[rows], self.name_offsets[rows + 1] - self.name_offsets[rows]]


def tensor_columns(buf, steps: StepNodes, full: bool = True) -> Tensors:
    """Every output tensor of the nodes with its lifetime as timeline.py's
    show_memory sees it, decoded and matched to its consumers in C (not
    full: allocators, sizes and times only, what the Chrome trace's counters
    need; the other columns are None). Inputs are read from the labels of
    nodes that are neither GPU kernels nor RecvTensor; an input naming no
    tensor is tried without its last `/_` suffix (partitioning inserts
    Send/Recv)."""
    (allocator, alloc_names, requested, allocated, dtype, shape, shapes, create, unref, (blob, offsets)) = (
        _stepstats.tensor_lifetimes(buf, steps.spans, ~steps.kernel, full)
    )
    # Two spellings may decode to one name (invalid UTF-8): group by the text.
    allocators = sorted(set(alloc_names))
    alloc_rank = np.array([allocators.index(a) for a in alloc_names], np.int64)
    return Tensors(
        alloc_rank[allocator], allocators, requested, allocated, dtype, shape, shapes, create, unref, blob, offsets
    )


@dataclass
class AllocatorEvents:
    """One allocator's allocations and frees in timeline.py's order (time,
    signed bytes, name), with the running total."""

    rows: np.ndarray  # the allocator's tensor rows, in first-seen order
    tensor: np.ndarray  # per event, index into rows
    time_us: np.ndarray
    delta: np.ndarray  # requested bytes, negative for frees
    is_alloc: np.ndarray
    total: np.ndarray

    @property
    def peak_index(self) -> int:
        """The first event where the total exceeds everything before it and 0 (-1 if never)."""
        if not len(self.total) or self.total.max() <= 0:
            return -1
        return int(np.argmax(self.total))


def allocator_events(tensors: Tensors, by_name: bool = True) -> dict[str, AllocatorEvents]:
    """Per allocator name (sorted): every tensor allocated at creation and
    freed at its last unref. Without by_name, events of equal time and size
    keep file order (their running totals are the same either way)."""
    by_allocator = np.argsort(tensors.allocator, kind="stable")
    bounds = np.searchsorted(tensors.allocator[by_allocator], np.arange(len(tensors.allocators) + 1))
    out = {}
    for a, name in enumerate(tensors.allocators):
        rows = by_allocator[bounds[a] : bounds[a + 1]]
        if not len(rows):
            continue
        n = len(rows)
        time_us = np.r_[tensors.create_us[rows], tensors.last_unref_us[rows]]
        delta = np.r_[tensors.requested[rows], -tensors.requested[rows]]
        order = _order_by(time_us, delta, stable=by_name)
        if by_name:
            _stepstats.sort_ties(order, time_us, delta, np.r_[rows, rows], tensors.names, tensors.name_offsets)
        delta = delta[order]
        out[name] = AllocatorEvents(rows, order % n, time_us[order], delta, order < n, np.cumsum(delta))
    return out


def _order_by(first: np.ndarray, second: np.ndarray, stable: bool) -> np.ndarray:
    """The order of (first, second): one sort of a combined key when both
    ranges fit in 63 bits, else a lexsort; ties keep their order if stable."""
    lo1, lo2 = int(first.min()), int(second.min())
    span1, span2 = int(first.max()) - lo1 + 1, int(second.max()) - lo2 + 1
    if span1 * span2 >= 1 << 63:
        return np.lexsort((second, first))
    key = (first - lo1) * span2 + (second - lo2)
    return np.argsort(key, kind="stable" if stable else "quicksort")


def step_memory_profile(source: StepStatsFile, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    """Memory per allocator over the step from tensor lifetimes, as the
    memory view shows any profile; the peak is timeline.py's."""
    task = task or TaskState()
    task.report(0.05, f"Reading {source.path.name}")
    with source.open() as (buf, start, end):
        try:
            steps = find_nodes(buf, start, end)
            task.raise_if_cancelled()
            task.report(0.3, "Tensor lifetimes")
            tensors = tensor_columns(buf, steps)
        except ValueError as e:
            raise ProfileError(f"{source.path}: corrupt StepStats: {e}") from None
    task.raise_if_cancelled()
    task.report(0.8, "Memory per allocator")
    events = allocator_events(tensors)
    origin_us = min((int(e.time_us[0]) for e in events.values()), default=0)
    allocators = {}
    for name, ev in events.items():
        profile = _allocator_profile(name or "(no allocator)", tensors, ev, origin_us)
        allocators[profile.memory_id] = profile
    return MemoryProfileData(host=host, allocators=allocators, source=str(source.path))


def _allocator_profile(memory_id: str, tensors: Tensors, e: AllocatorEvents, origin_us: int) -> AllocatorProfile:
    n = len(e.total)
    # Strings: "", the tensors' names (op), data types, shapes, "output".
    assert tensors.names is not None  # full columns (tensor_columns(full=True))
    names = _stepstats.decode_spans(tensors.names, tensors.name_spans(e.rows))
    dtypes, dtype_of = np.unique(tensors.dtype[e.rows], return_inverse=True)
    shapes, shape_of = np.unique(tensors.shape[e.rows], return_inverse=True)
    strings = [""] + names + [dtype_name(int(d)) for d in dtypes] + [tensors.shapes[s] for s in shapes] + ["output"]
    first_dtype = 1 + len(names)
    first_shape = first_dtype + len(dtypes)
    zeros = np.zeros(n, np.int64)
    tl = Snapshots(
        time_ps=(e.time_us - origin_us) * 1_000_000,
        stack=zeros,
        heap=e.total,
        free=zeros,
        fragmentation=np.zeros(n),
        peak_in_use=np.maximum.accumulate(e.total),
        activity=np.where(e.is_alloc, ALLOCATION, DEALLOCATION).astype(np.int64),
        requested=np.abs(e.delta),
        allocation=tensors.allocated[e.rows][e.tensor],
        address=e.tensor.astype(np.int64) + 1,
        step=zeros,
        op=1 + e.tensor.astype(np.int64),
        region=np.full(n, len(strings) - 1, np.int64),
        dtype=first_dtype + dtype_of.reshape(-1)[e.tensor].astype(np.int64),
        shape=first_shape + shape_of.reshape(-1)[e.tensor].astype(np.int64),
        strings=strings,
    )
    peak_i = e.peak_index
    peak = int(e.total[peak_i]) if peak_i >= 0 else 0
    summary = MemorySummary(
        num_allocations=len(e.rows),
        num_deallocations=len(e.rows),
        memory_capacity=0,
        peak_bytes_lifetime=peak,
        peak_time_ps=int(tl.time_ps[peak_i]) if peak_i >= 0 else 0,
        peak_stack=0,
        peak_heap=peak,
        peak_free=0,
        peak_fragmentation=0.0,
    )
    # Each tensor is allocated and freed once, so the events pair by tensor (a free
    # before its allocation, from a negative duration, frees nothing).
    free_at = np.empty(len(e.rows), np.int64)
    frees = np.flatnonzero(~e.is_alloc)
    free_at[e.tensor[frees]] = frees
    allocs = np.flatnonzero(e.is_alloc)
    freed = free_at[e.tensor[allocs]]
    profile = AllocatorProfile(
        memory_id=memory_id,
        timeline=tl,
        summary=summary,
        peak_allocations=None,  # type: ignore[arg-type]  # set below, from the profile
        complete=True,
        stored_snapshots=tl,
        lifetimes=(allocs, np.where(freed > allocs, freed, n)),
    )
    # timeline.py's peak is the first snapshot reaching the maximum, not the last.
    profile.__dict__["peak_index"] = max(peak_i, 0)
    profile.peak_allocations = (
        profile.allocations_at(max(peak_i, 0)) if n else merge_rows(tl, np.zeros(0, np.int64), [])
    )
    return profile


# ---------------------------------------------------------------- Chrome trace

ROWS_PER_CHUNK = 1 << 16  # ~15 MB of JSON


def chrome_trace_chunks(source: StepStatsFile, task: TaskState | None = None) -> Iterator[bytes]:
    """Chrome trace-event JSON (Perfetto, chrome://tracing) in chunks: one
    process per device, one complete event per node named by its op type,
    with node name, op and inputs in args and times in microseconds as in
    the file; plus a memory counter per allocator like timeline.py's
    show_memory. Rows are written from the columns in C, a chunk at a time;
    the file is read before the first chunk, so a corrupt one fails early."""
    chunks = _chrome_chunks(source, task or TaskState())
    first = next(chunks)
    return itertools.chain([first], chunks)


def _chrome_chunks(source: StepStatsFile, task: TaskState) -> Iterator[bytes]:
    task.report(0.05, f"Reading {source.path.name}")
    with source.open() as (buf, start, end):
        try:
            # The file's pages are let go after each pass over it, and device
            # by device below: a huge export need not hold the whole file.
            steps = find_nodes(buf, start, end)
            task.report(0.2, "Laying out lanes")
            times = node_times(buf, steps.spans)
            _release(buf)
            lanes = lay_out(buf, steps, *times)
            del times
            _stepstats.trim_heap()  # the layout's temporaries, freed, still count until trimmed
            task.raise_if_cancelled()
            task.report(0.3, "Tensor lifetimes")
            tensors = tensor_columns(buf, steps, full=False)
            _release(buf)
            counters = [(name, e.time_us, e.total) for name, e in allocator_events(tensors, by_name=False).items()]
            del tensors
        except ValueError as e:
            raise ProfileError(f"{source.path}: corrupt StepStats: {e}") from None
        dumps = lambda value: json.dumps(value, separators=(",", ":"))
        meta = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "Allocators"}}]
        meta += [
            {"ph": "M", "name": "process_name", "pid": g + 1, "args": {"name": device}}
            for g, device in enumerate(steps.devices)
        ]
        # thread ids: a lane's place in its device (lanes are grouped by device)
        num_lanes = len(lanes.lane_names)
        group_first = np.r_[0, np.flatnonzero(np.diff(lanes.lane_group)) + 1]
        tid_of_lane = np.arange(num_lanes) - np.repeat(group_first, np.diff(np.r_[group_first, num_lanes]))
        meta += [
            {"ph": "M", "name": "thread_name", "pid": int(g) + 1, "tid": int(k), "args": {"name": lane_name}}
            for g, k, lane_name in zip(lanes.lane_group, tid_of_lane, lanes.lane_names)
        ]
        yield b'{"traceEvents":[' + ",".join(map(dumps, meta)).encode()

        order, kernel = lanes.order, steps.kernel
        pid_of_lane = lanes.lane_group.astype(np.int64) + 1
        released = 0  # devices whose events are all written
        for a in range(0, len(order), ROWS_PER_CHUNK):
            task.raise_if_cancelled()
            task.report(0.5 + 0.4 * a / len(order), "Writing trace events")
            rows = order[a : a + ROWS_PER_CHUNK]
            lane = np.searchsorted(lanes.lane_offsets, np.arange(a, a + len(rows)), side="right") - 1
            try:
                yield _stepstats.trace_events(
                    buf, steps.spans[rows], kernel[rows], pid_of_lane[lane], tid_of_lane[lane]
                )
            except ValueError as e:
                raise ProfileError(f"{source.path}: corrupt StepStats: {e}") from None
            current = int(lanes.lane_group[lane[-1]]) if a + len(rows) < len(order) else len(steps.devices)
            for off, n in steps.device_spans[released:current]:
                _release(buf, int(off), int(off + n))
            released = max(released, current)
    del steps, lanes, order, kernel
    for name, time_us, total in counters:
        name_json = dumps(name).encode()
        parts = [
            b',{"ph":"C","cat":"Memory","name":' + name_json + b',"pid":0,"tid":0,"ts":',
            b',"args":{' + name_json + b":",
            b"}}",
        ]
        for a in range(0, len(total), ROWS_PER_CHUNK):
            task.raise_if_cancelled()
            yield _jsonrows.json_rows(
                parts, [("i", time_us), ("i", total)], a, min(a + ROWS_PER_CHUNK, len(total)), b""
            )
    yield b'],"otherData":' + dumps({"source": _source_name(source), "producer": "profscope"}).encode() + b"}"


def _release(buf, start: int = 0, end: int | None = None) -> None:
    """Drops the whole pages of [start, end) of a mapped file from this
    process (they stay in the page cache, read again if touched): a huge
    file need not count in full towards the export's memory."""
    if not isinstance(buf, mmap.mmap) or not hasattr(mmap, "MADV_DONTNEED"):
        return
    end = len(buf) if end is None else end
    first = -(-start // mmap.PAGESIZE) * mmap.PAGESIZE
    last = end if end == len(buf) else end // mmap.PAGESIZE * mmap.PAGESIZE
    if last > first:
        buf.madvise(mmap.MADV_DONTNEED, first, last - first)


def chrome_trace_json(source: StepStatsFile, task: TaskState | None = None) -> bytes:
    return b"".join(chrome_trace_chunks(source, task))


def chrome_trace(source: StepStatsFile, task: TaskState | None = None) -> dict:
    """The Chrome trace as a dict (for tests and small steps)."""
    return json.loads(chrome_trace_json(source, task))


class StepStatsFormat(Format):
    name = "step_stats"
    title = "`RunMetadata` or `StepStats`, binary or text format"
    where = "any `*.pb`, `*.pbtxt`, `*.txt` (`.gz` too) whose content is one; host = file name"
    patterns = tuple(f"*{s}" for s in BINARY_SUFFIXES + TEXT_SUFFIXES)
    tools = (MEMORY_PROFILE, TRACE_VIEWER)
    rank = 3

    def host_in_folder(self, path: Path) -> str | None:
        host = strip_suffix(path.name, BINARY_SUFFIXES + TEXT_SUFFIXES)
        return host if host is not None and sniff(path) else None

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        host = self.host_in_folder(path)
        return None if host is None else (path.name, host)

    def refusal(self, path: Path) -> str | None:
        if path.name.endswith((".pb", ".pb.gz", ".pbtxt", ".pbtxt.gz")) and not sniff(path):
            return "not a StepStats or RunMetadata"
        return None

    def why_not(self, path: Path) -> None:
        if path.name.endswith(TEXT_SUFFIXES):
            locate(path)  # raises with the reason

    def memory_profile(self, files, host, task):
        return step_memory_profile(self._source(files, "", task), host=host, task=task)

    def timeline(self, hosts, step, task):
        return load_step_timeline(self._source(hosts[0][1], step, task), task)

    def chrome_trace(self, files, host, step, task):
        return chrome_trace_chunks(self._source(files, step, task), task)

    @staticmethod
    def _source(files: list[Path], step: str, task) -> StepStatsFile:
        """The StepStats of a host's files for a step ("" = the first)."""
        if step:
            raise ProfileError(f"{files[0].name} holds one step; --param step applies to event files")
        return locate(files[0], task=task)


FORMAT = StepStatsFormat()
