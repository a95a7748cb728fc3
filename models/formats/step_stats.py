"""Step timelines from TensorFlow's StepStats (step_stats.proto).

Where they come from: `Session.run(..., options=RunOptions(trace_level=
FULL_TRACE), run_metadata=md)` fills `md.step_stats`; users save `md` (a
RunMetadata) or its StepStats in binary or text format, or write it into an
event file with `FileWriter.add_run_metadata(md, tag)`.

`locate()` finds the StepStats in any of these; `load_step_timeline()` turns
it into a `Timeline` of one lane set per device, decoded in C into columns
(the labels parsed the way TensorFlow's timeline.py parses them), with every
field of a node read back from the file only when asked for. The memory
analysis and the Chrome trace export follow timeline.py's `show_memory`.
"""

from __future__ import annotations

import json
import mmap
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from models import _lanes
from models import _protowire as wire
from models.event_file import is_event_file, mapped, tagged_run_metadata
from models.files import read_bytes, read_head
from models.formats import _labels
from models.guards import decode, parse_text
from models.memory_profile import (ALLOCATION, DEALLOCATION, AllocatorProfile, MemoryProfileData, MemorySummary,
                                   Snapshots)
from models.registry import MEMORY_PROFILE, TRACE_VIEWER, Format, strip_suffix
from models.task import ProfileError, TaskState
from models.timeline import StringColumn, Timeline
from protos import config_pb2, step_stats_pb2, types_pb2

# Field numbers of step_stats.proto and config.proto.
RUN_METADATA_STEP_STATS = 1
STEP_STATS_DEV_STATS = 1
DEV_DEVICE, DEV_NODE_STATS, DEV_THREAD_NAMES = 1, 2, 3
NODE_NAME, ALL_START_MICROS, ALL_END_REL_MICROS, TIMELINE_LABEL, THREAD_ID = 1, 2, 5, 8, 10
ALL_START_NANOS, ALL_END_REL_NANOS = 13, 16
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
    n, q = _varint(buf, p + 1)
    return bool(n) and buf[q:q + 1] == b"/"


def _varint(buf: bytes, p: int) -> tuple[int | None, int]:
    value, shift = 0, 0
    while p < len(buf) and shift < 64:
        b = buf[p]
        value |= (b & 0x7F) << shift
        p += 1
        if not b & 0x80:
            return value, p
        shift += 7
    return None, p


def _sniff_binary(head: bytes) -> str | None:
    """StepStats starts with dev_stats (1) holding device (1) "/job:..." or
    "/device:..."; RunMetadata starts with step_stats (1) holding that."""
    if head[:1] != b"\x0a":
        return None
    n, p = _varint(head, 1)
    if n is None:
        return None
    if _looks_like_device(head, p):
        return "StepStats"
    if head[p:p + 1] == b"\x0a":
        m, q = _varint(head, p + 1)
        if m is not None and _looks_like_device(head, q):
            return "RunMetadata"
    return None


def _text_to_binary(path: Path, message: str) -> bytes:
    text = read_bytes(path).decode("utf-8", "replace")
    msg = config_pb2.RunMetadata() if message == "RunMetadata" else step_stats_pb2.StepStats()
    parse_text(text, msg, str(path))  # RunMetadata's graphs are not in Profscope's schema: skipped
    step_stats = msg.step_stats if message == "RunMetadata" else msg
    return step_stats.SerializeToString()


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


def _build_timeline(buf, start: int, end: int, source: StepStatsFile, task: TaskState) -> Timeline:
    (dev_spans,) = wire.find_fields(buf, start, end, [STEP_STATS_DEV_STATS])
    (dev_names,) = wire.decode_messages(buf, dev_spans, [(DEV_DEVICE, "s")])
    devices = [bytes(buf[o:o + n]).decode("utf-8", "replace") if o >= 0 else "" for o, n in dev_names]
    (node_dev, node_spans), (thread_dev, thread_spans) = wire.find_children(buf, dev_spans, [DEV_NODE_STATS, DEV_THREAD_NAMES])
    task.raise_if_cancelled()
    task.report(0.3, "Decoding nodes")
    name, s_us, d_us, label, thread, s_ns, d_ns = wire.decode_messages(buf, node_spans, [
        (NODE_NAME, "s"), (ALL_START_MICROS, "i"), (ALL_END_REL_MICROS, "i"), (TIMELINE_LABEL, "s"),
        (THREAD_ID, "i"), (ALL_START_NANOS, "i"), (ALL_END_REL_NANOS, "i")])
    warnings = list(source.warnings)
    has_ns = s_ns != 0
    start_ns = np.where(has_ns, s_ns, s_us * 1000)
    dur_ns = np.where(has_ns, d_ns, d_us * 1000)
    keep = start_ns > 0
    if not keep.all():
        warnings.append(f"left out {int((~keep).sum())} node(s) without a start time")
    if (dur_ns[keep] < 0).any():
        warnings.append(f"{int((dur_ns[keep] < 0).sum())} node(s) had a negative duration, shown as 0")
    dur_ns = np.maximum(dur_ns, 0)
    empty = sorted(set(range(len(devices))) - set(np.unique(node_dev[keep]).tolist()))
    if empty:
        warnings.append(f"no timed nodes on: {', '.join(devices[d] or '(unnamed device)' for d in empty)}")
    task.raise_if_cancelled()
    task.report(0.5, "Parsing labels")

    # Op types: timeline.py's label parsing, per device kind.
    kernel = np.array([is_gputrace_device(d) for d in devices], bool)[node_dev] if len(devices) else np.zeros(0, bool)
    parsed = np.empty((len(node_spans), 4), np.int64)
    for flag in (False, True):
        sel = np.flatnonzero(kernel == flag)
        if len(sel):
            parsed[sel] = _labels.parse_labels(buf, label[sel], name[sel], flag)
    op_spans = parsed[:, :2].copy()
    op_spans[parsed[:, 0] < 0] = (-1, 0)
    event_name = name.copy()
    event_name[kernel] = parsed[kernel, 2:]  # the node a GPU kernel ran for
    kind, kinds = wire.intern_strings(buf, op_spans)
    kinds = list(kinds)
    kinds[0] = UNKNOWN_OP  # absent label or no match
    recv = kinds.index("RecvTensor") if "RecvTensor" in kinds else len(kinds)
    if recv == len(kinds):
        kinds.append("RecvTensor")
    is_recv = ~kernel & _equals(buf, name, b"RecvTensor")
    kind[is_recv] = recv

    # Lanes: per device, per thread id when there are several, overlapping
    # nodes packed into extra lanes.
    idx = np.flatnonzero(keep)
    lane_thread = thread[idx].astype(np.int64)
    multi = np.zeros(len(devices), bool)
    for d in range(len(devices)):
        multi[d] = len(np.unique(lane_thread[node_dev[idx] == d])) > 1
    lane_thread[~multi[node_dev[idx]]] = -1
    order = np.lexsort((start_ns[idx], lane_thread, node_dev[idx]))
    idx = idx[order]
    dev_of, thread_of = node_dev[idx], lane_thread[order]
    s, e = start_ns[idx], start_ns[idx] + dur_ns[idx]
    seg = np.flatnonzero(np.r_[True, (dev_of[1:] != dev_of[:-1]) | (thread_of[1:] != thread_of[:-1])]) if len(idx) else np.zeros(0, np.int64)
    seg_end = np.r_[seg[1:], len(idx)]
    sub = np.zeros(len(idx), np.int32)
    for a, b in zip(seg, seg_end):
        sub[a:b] = _lanes.pack_lanes(s[a:b], e[a:b])
    thread_names = _thread_names(buf, thread_dev, thread_spans)
    lane_key = np.lexsort((s, sub, thread_of, dev_of))
    idx, dev_of, thread_of, sub = idx[lane_key], dev_of[lane_key], thread_of[lane_key], sub[lane_key]
    new_lane = np.r_[True, (dev_of[1:] != dev_of[:-1]) | (thread_of[1:] != thread_of[:-1]) | (sub[1:] != sub[:-1])] if len(idx) else np.zeros(0, bool)
    firsts = np.flatnonzero(new_lane)
    lane_names = []
    for f in firsts:
        d, t, k = int(dev_of[f]), int(thread_of[f]), int(sub[f])
        if t < 0:
            lane_names.append(f"lane {k}")
        else:
            label_text = f"thread {t}" + (f" {thread_names[d][t]}" if t in thread_names.get(d, {}) else "")
            lane_names.append(label_text if k == 0 else f"{label_text} ({k + 1})")
    task.raise_if_cancelled()
    task.report(0.8, "Building columns")
    origin_ns = int(start_ns[idx].min()) if len(idx) else 0
    names = StringColumn(*wire.gather_spans(buf, event_name[idx]))
    in_memory = not isinstance(buf, mmap.mmap)
    detail = NodeSource(source.path, node_spans[idx, 0].copy(), node_spans[idx, 1].astype(np.int32),
                        data=bytes(buf[start:end]) if in_memory else None)
    if in_memory:
        detail.offsets -= start
    timeline = Timeline(
        groups=devices, lane_group=dev_of[firsts].astype(np.int32), lane_names=lane_names,
        lane_offsets=np.r_[firsts, len(idx)].astype(np.int64),
        start_ps=(start_ns[idx] - origin_ns) * 1000, duration_ps=dur_ns[idx] * 1000,
        kind=kind[idx].astype(np.int32), kinds=kinds, names=names, origin_ns=origin_ns,
        source=str(source.path) + (f" [{source.tag}]" if source.tag else ""), warnings=warnings)
    timeline.details = lambda i: node_details(timeline, detail, i)
    timeline.records = detail
    return timeline


def _equals(buf, spans: np.ndarray, text: bytes) -> np.ndarray:
    """Which spans hold exactly `text`."""
    out = spans[:, 1] == len(text)
    for i in np.flatnonzero(out):
        out[i] = bytes(buf[spans[i, 0]:spans[i, 0] + len(text)]) == text
    return out


def _thread_names(buf, thread_dev: np.ndarray, spans: np.ndarray) -> dict[int, dict[int, str]]:
    """DeviceStepStats.thread_names (map<uint32, string>) per device."""
    names: dict[int, dict[int, str]] = {}
    if len(spans):
        keys, values = wire.decode_messages(buf, spans, [(1, "i"), (2, "s")])
        for d, k, (o, n) in zip(thread_dev, keys, values):
            names.setdefault(int(d), {})[int(k)] = bytes(buf[o:o + n]).decode("utf-8", "replace") if o >= 0 else ""
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
        inputs = []
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
    for label, ns_field, us_field in (("op start", "op_start_rel_nanos", "op_start_rel_micros"),
                                      ("op end", "op_end_rel_nanos", "op_end_rel_micros"),
                                      ("all end", "all_end_rel_nanos", "all_end_rel_micros")):
        offset = getattr(node, ns_field) if unit == 1 else getattr(node, us_field) * 1000
        rows.append((label, f"+{offset / 1000:,.3f} us ({rel(start_ns + offset)})"))
    for k, out in enumerate(node.output):
        desc = out.tensor_description
        alloc = desc.allocation_description
        allocated = f", {alloc.allocated_bytes:,} allocated" if alloc.allocated_bytes else ""
        rows.append((f"output {out.slot}", f"{dtype_name(desc.dtype)} {shape_text(desc.shape)}, "
                     f"{alloc.requested_bytes:,} bytes requested{allocated} on {alloc.allocator_name or '?'}"))
    for mem in node.memory:
        rows.append((f"memory {mem.allocator_name}", f"total {mem.total_bytes:,} B, peak {mem.peak_bytes:,} B, "
                     f"live {mem.live_bytes:,} B, in use {mem.allocator_bytes_in_use:,} B"))
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
                yield p, fd.enum_type.values_by_number[item].name if item in fd.enum_type.values_by_number else str(item)
            else:
                yield p, str(item)


def dtype_name(dtype: int) -> str:
    """"float" for DT_FLOAT, as XProf writes data types."""
    try:
        return types_pb2.DataType.Name(dtype).removeprefix("DT_").lower()
    except ValueError:
        return str(dtype)


def shape_text(shape) -> str:
    if shape.unknown_rank:
        return "(?)"
    return "(" + ",".join(str(d.size) for d in shape.dim) + ")"


# ---------------------------------------------------------------- timeline.py's analysis


def iter_device_stats(source: StepStatsFile, task: TaskState | None = None):
    """The DeviceStepStats messages one at a time (memory bounded by the
    largest device, not the whole step)."""
    task = task or TaskState()
    with source.open() as (buf, start, end):
        try:
            (spans,) = wire.find_fields(buf, start, end, [STEP_STATS_DEV_STATS])
        except ValueError as e:
            raise ProfileError(f"{source.path}: corrupt StepStats: {e}") from None
        for k, (off, n) in enumerate(spans):
            task.raise_if_cancelled()
            task.report(k / max(len(spans), 1), f"Reading device {k + 1} of {len(spans)}")
            yield decode(step_stats_pb2.DeviceStepStats, buf[off:off + n], f"{source.path}: device {k}")


@dataclass
class Tensor:
    """timeline.py's _TensorTracker plus what the memory view shows."""

    name: str
    allocator: str
    requested: int
    allocated: int
    dtype: str
    shape: str
    create_us: int
    last_unref_us: int


def tensor_lifetimes(source: StepStatsFile, task: TaskState | None = None) -> list[Tensor]:
    """Every output tensor with its lifetime as timeline.py's show_memory
    sees it: from its producer's start to the end of its last consumer. A
    later tensor of the same name replaces an earlier one, as there."""
    tensors: dict[str, Tensor] = {}
    devices = list(iter_device_stats(source, task))
    for dev in devices:
        for node in dev.node_stats:
            start = node.all_start_micros
            end = start + node.all_end_rel_micros
            for index, output in enumerate(node.output):
                name = f"{node.node_name}:{index}" if index else node.node_name
                desc = output.tensor_description
                alloc = desc.allocation_description
                tensors[name] = Tensor(name, alloc.allocator_name, alloc.requested_bytes,
                                       alloc.allocated_bytes or alloc.requested_bytes,
                                       dtype_name(desc.dtype), shape_text(desc.shape), start, end)
    for dev in devices:
        if is_gputrace_device(dev.device):
            continue
        for node in dev.node_stats:
            if node.node_name == "RecvTensor":
                continue
            end = node.all_start_micros + node.all_end_rel_micros
            for input_name in parse_op_label(node.timeline_label)[2]:
                if input_name not in tensors:
                    # Partitioning inserts Send/Recv: the data came from the original node.
                    cut = input_name.rfind("/_")
                    if cut > 0:
                        input_name = input_name[:cut]
                tensor = tensors.get(input_name)
                if tensor is not None:
                    tensor.last_unref_us = max(tensor.last_unref_us, end - 1)
    return list(tensors.values())


@dataclass
class AllocatorEvents:
    """One allocator's allocations and frees in timeline.py's order, with the running total."""

    tensors: list[Tensor]
    tensor: np.ndarray  # index into tensors
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


def allocator_events(tensors: list[Tensor]) -> dict[str, AllocatorEvents]:
    """Per allocator name: every tensor allocated at creation and freed at
    its last unref, sorted as timeline.py sorts them (time, signed bytes, name)."""
    by_allocator: dict[str, list[Tensor]] = {}
    for t in tensors:
        by_allocator.setdefault(t.allocator, []).append(t)
    out = {}
    for name, ts in sorted(by_allocator.items()):
        n = len(ts)
        rank = np.empty(n, np.int64)
        rank[sorted(range(n), key=lambda i: ts[i].name)] = np.arange(n)
        time_us = np.r_[[t.create_us for t in ts], [t.last_unref_us for t in ts]].astype(np.int64)
        delta = np.r_[[t.requested for t in ts], [-t.requested for t in ts]].astype(np.int64)
        order = np.lexsort((np.r_[rank, rank], delta, time_us))
        out[name] = AllocatorEvents(ts, order % n, time_us[order], delta[order], order < n, np.cumsum(delta[order]))
    return out


def step_memory_profile(source: StepStatsFile, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    """Memory per allocator over the step from tensor lifetimes, as the
    memory view shows any profile; the peak is timeline.py's."""
    events = allocator_events(tensor_lifetimes(source, task))
    origin_us = min((int(e.time_us[0]) for e in events.values()), default=0)
    allocators = {}
    for name, e in events.items():
        profile = _allocator_profile(name or "(no allocator)", e, origin_us)
        allocators[profile.memory_id] = profile
    return MemoryProfileData(host=host, allocators=allocators, source=str(source.path))


def _allocator_profile(memory_id: str, e: AllocatorEvents, origin_us: int) -> AllocatorProfile:
    index_of = {"": 0}
    sid = lambda text: index_of.setdefault(text, len(index_of))
    ts = e.tensors
    n = len(e.total)
    op = np.array([sid(ts[i].name) for i in e.tensor], np.int64)
    dtype = np.array([sid(ts[i].dtype) for i in e.tensor], np.int64)
    shape = np.array([sid(ts[i].shape) for i in e.tensor], np.int64)
    region = np.full(n, sid("output"), np.int64)
    zeros = np.zeros(n, np.int64)
    tl = Snapshots(
        time_ps=(e.time_us - origin_us) * 1_000_000, stack=zeros, heap=e.total, free=zeros,
        fragmentation=np.zeros(n), peak_in_use=np.maximum.accumulate(e.total),
        activity=np.where(e.is_alloc, ALLOCATION, DEALLOCATION).astype(np.int64), requested=np.abs(e.delta),
        allocation=np.array([ts[i].allocated for i in e.tensor], np.int64), address=e.tensor.astype(np.int64) + 1,
        step=zeros, op=op, region=region, dtype=dtype, shape=shape, strings=list(index_of))
    peak_i = e.peak_index
    peak = int(e.total[peak_i]) if peak_i >= 0 else 0
    summary = MemorySummary(
        num_allocations=len(ts), num_deallocations=len(ts), memory_capacity=0, peak_bytes_lifetime=peak,
        peak_time_ps=int(tl.time_ps[peak_i]) if peak_i >= 0 else 0, peak_stack=0, peak_heap=peak, peak_free=0,
        peak_fragmentation=0.0)
    profile = AllocatorProfile(memory_id=memory_id, timeline=tl, summary=summary, peak_allocations=None,
                               complete=True, stored_snapshots=tl)
    # timeline.py's peak is the first snapshot reaching the maximum, not the last.
    profile.__dict__["peak_index"] = max(peak_i, 0)
    profile.peak_allocations = profile.allocations_at(max(peak_i, 0)) if n else None
    return profile


# ---------------------------------------------------------------- Chrome trace


def chrome_trace(source: StepStatsFile, task: TaskState | None = None) -> dict:
    """Chrome trace-event JSON (Perfetto, chrome://tracing): one process per
    device, one complete event per node named by its op type, with node
    name, op and inputs in args and times in microseconds as in the file;
    plus a memory counter per allocator like timeline.py's show_memory."""
    task = task or TaskState()
    timeline = load_step_timeline(source, task)
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "Allocators"}}]
    for g, device in enumerate(timeline.groups):
        events.append({"ph": "M", "name": "process_name", "pid": g + 1, "args": {"name": device}})
    tid = np.zeros(timeline.num_lanes, np.int64)
    for g in range(len(timeline.groups)):
        lanes = timeline.lanes_of_group(g)
        tid[lanes] = np.arange(len(lanes))
        for k, lane in enumerate(lanes):
            events.append({"ph": "M", "name": "thread_name", "pid": g + 1, "tid": k,
                           "args": {"name": timeline.lane_names[lane]}})
    event_lane = np.repeat(np.arange(timeline.num_lanes), np.diff(timeline.lane_offsets))
    nodes = timeline.records
    with nodes.buffer() as buf:
        for i in range(len(timeline)):
            if i % 4096 == 0:
                task.raise_if_cancelled()
                task.report(0.5 * i / len(timeline), "Writing trace events")
            node = nodes.node(i, buf)
            lane = event_lane[i]
            group = int(timeline.lane_group[lane])
            inputs = []
            if is_gputrace_device(timeline.groups[group]):
                name, op = parse_kernel_label(node.timeline_label, node.node_name)
            elif node.node_name == "RecvTensor":
                name, op = node.node_name, "RecvTensor"
            else:
                name = node.node_name
                _, op, inputs = parse_op_label(node.timeline_label)
            args = {"name": name, "op": op}
            args.update({f"input{k}": x for k, x in enumerate(inputs)})
            events.append({"ph": "X", "cat": "Op", "name": op, "pid": group + 1, "tid": int(tid[lane]),
                           "ts": node.all_start_micros, "dur": node.all_end_rel_micros, "args": args})
    for name, e in allocator_events(tensor_lifetimes(source, task)).items():
        for t, total in zip(e.time_us.tolist(), e.total.tolist()):
            events.append({"ph": "C", "cat": "Memory", "name": name, "pid": 0, "tid": 0, "ts": t,
                           "args": {name: total}})
    return {"traceEvents": events, "otherData": {"source": timeline.source, "producer": "profscope"}}


def chrome_trace_json(source: StepStatsFile, task: TaskState | None = None) -> bytes:
    return json.dumps(chrome_trace(source, task), separators=(",", ":")).encode()


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

    def why_not(self, path: Path) -> None:
        if path.name.endswith(TEXT_SUFFIXES):
            locate(path)  # raises with the reason

    def memory_profile(self, files, host, task):
        return step_memory_profile(self._source(files, "", task), host=host, task=task)

    def timeline(self, hosts, step, task):
        return load_step_timeline(self._source(hosts[0][1], step, task), task)

    def chrome_trace(self, files, host, step, task):
        return chrome_trace_json(self._source(files, step, task), task)

    @staticmethod
    def _source(files: list[Path], step: str, task) -> StepStatsFile:
        """The StepStats of a host's files for a step ("" = the first)."""
        if step:
            raise ProfileError(f"{files[0].name} holds one step; --param step applies to event files")
        return locate(files[0], task=task)


FORMAT = StepStatsFormat()
