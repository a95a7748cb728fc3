"""TensorFlow LogMemory logs: `__LOG_MEMORY__` lines as a memory profile.

With `TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=log_memory=2` TensorFlow logs
every tensor allocation and deallocation as a log_memory.proto message in
text format, among its other output:

    I0501 10:00:00.123456  4242 log_memory.cc:34] __LOG_MEMORY__ MemoryLogTensorAllocation { step_id: 3 ... }

The log is read in blocks of whole lines (gzip too); non-memory lines cost
nothing after the scan. The C scanner (`_logscan`) reads the lines
TensorFlow prints; anything else it hands back and protobuf's text_format
parses it. Kept as columns: every allocation (for the per-kernel and per-step
totals) and every deallocation with an allocation_id.

Replay, per allocator in time order (log order breaks ties): an allocation
with an allocation_id adds its allocated_bytes (requested_bytes when the
allocator did not report the allocated size; num_bytes for raw allocations)
under (allocator, allocation_id); a deallocation of that key removes them.
Entries without an allocation_id (allocators that do not track ids) are only
counted; deallocations that match no allocation are counted as unmatched.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from google.protobuf import text_format

from models.formats import _logscan
from models import _protowire as wire
from models.files import GZIP_MAGIC, read_head
from models.guards import inflate_limit, inflate_refused, parse_text
from models.memory_profile import (ALLOCATION, DEALLOCATION, AllocatorProfile, MemoryProfileData, Snapshots,
                                   merge_rows, summarize)
from models.registry import MEMORY_PROFILE, Format, strip_suffix
from models.task import ProfileError, TaskState
from models.formats.xspace.memory import data_type_string
from protos import log_memory_pb2, tensor_shape_pb2, types_pb2

MARKER = b"__LOG_MEMORY__"
# Protobuf 30+ starts debug output with a link such as goo.gle/debugstr or
# goo.gle/debugonly (chosen at random; TensorFlow 2.21 prints its messages
# so) to make text_format refuse the text.
DEBUG_LINK = re.compile(r"goo\.gle/\w*")
MESSAGE_NAMES = ("MemoryLogStep", "MemoryLogTensorAllocation", "MemoryLogTensorDeallocation",
                 "MemoryLogTensorOutput", "MemoryLogRawAllocation", "MemoryLogRawDeallocation")
STEP, TENSOR_ALLOCATION, TENSOR_DEALLOCATION, TENSOR_OUTPUT, RAW_ALLOCATION, RAW_DEALLOCATION = range(6)
# Columns of the scanner's ints and strs arrays.
I_STEP, I_ID, I_BYTES, I_REQUESTED, I_PTR, I_INDEX, I_FLAGS = range(7)
S_NAME, S_ALLOCATOR, S_DTYPE, S_SHAPE, S_HANDLE = range(5)
DEFERRED, SINGLE_REFERENCE, HAS_ALLOCATED = 1, 2, 4
# Log file names Profscope looks into when scanning a folder.
LOG_SUFFIXES = (".log", ".log.gz", ".txt", ".txt.gz", ".out", ".err", ".stderr")
BLOCK = 4 << 20
# A "line" longer than this (binary data without newlines) is read in pieces.
MAX_LINE = 1 << 20
MAX_SPAN_US = (2**63 - 1) // 1_000_000  # times since the first line, kept in ps as int64
SNIFF_BYTES = 4 << 20
ENABLE_HINT = ("TensorFlow writes them when started with TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=log_memory=2 "
               "(the lines go to stderr: redirect it into the log file).")
REGION_TENSOR, REGION_RAW = "tensor", "raw"
DATA_TYPE_NAMES = frozenset(types_pb2.DataType.keys())
# LogMemory::SpecialStepIds: allocations outside any step.
SPECIAL_STEPS = {-1: "constant folding", -2: "op kernel construction", -3: "external tensor allocation",
                 -4: "network buffer", -5: "proto buffer", -6: "unknown step"}


@dataclass
class KernelRows:
    """Allocation totals per kernel (or raw operation), largest first."""

    kernel: list[str]
    count: np.ndarray
    tracked: np.ndarray  # allocations with an allocation_id (on the timeline)
    bytes: np.ndarray  # allocated bytes (requested when not reported)
    requested: np.ndarray

    def __len__(self) -> int:
        return len(self.kernel)


@dataclass
class StepRows:
    """Per step: time span and allocation totals of one allocator."""

    step: np.ndarray
    handle: list[str]
    start_ps: np.ndarray
    end_ps: np.ndarray
    count: np.ndarray
    bytes: np.ndarray

    def __len__(self) -> int:
        return len(self.step)


@dataclass
class LogMemoryInfo:
    """What a log held beyond the timelines: counts, and every allocation
    (tracked or not) for the per-kernel and per-step totals."""

    messages: dict[str, int]  # lines read, by message name
    untracked_deallocations: int
    unmatched_deallocations: dict[str, int]  # by allocator
    deferred_deallocations: int
    garbled: int  # lines with the marker that could not be parsed
    unknown: int  # lines naming another message
    text_format_lines: int  # lines the fast scanner handed to text_format
    problems: list[str]  # the first few bad lines, for messages
    strings: list[str]
    # One row per allocation: allocator, step, kernel (string ids), tracked, bytes, requested.
    allocations: dict[str, np.ndarray]
    allocator_ids: dict[str, int]  # memory id -> string id in allocations["allocator"]
    step_handles: dict[int, str]  # from MemoryLogStep
    step_span_ps: dict[int, tuple[int, int]]  # first and last line naming each step

    @property
    def untracked_allocations(self) -> int:
        return int((~self.allocations["tracked"]).sum())

    def skipped_text(self) -> str:
        parts = [f"{n:,} {what}" for n, what in ((self.garbled, "garbled memory lines"),
                                                  (self.unknown, "lines with unknown message names")) if n]
        return "Skipped " + " and ".join(parts) + "." if parts else ""

    def _rows(self, allocator: str, step: int | None) -> np.ndarray:
        t = self.allocations
        sel = t["allocator"] == self.allocator_ids.get(allocator, -1)
        if step is not None:
            sel &= t["step"] == step
        return np.flatnonzero(sel)

    def kernels(self, allocator: str, step: int | None = None) -> KernelRows:
        """Allocations per kernel of one allocator (and step), most bytes first."""
        t, rows = self.allocations, self._rows(allocator, step)
        uniq, inverse = np.unique(t["kernel"][rows], return_inverse=True)
        sums = {k: np.bincount(inverse, t[c][rows], len(uniq)).astype(np.int64)
                for k, c in (("tracked", "tracked"), ("bytes", "bytes"), ("requested", "requested"))}
        count = np.bincount(inverse, minlength=len(uniq)).astype(np.int64)
        order = np.lexsort((uniq, -sums["bytes"]))
        return KernelRows(kernel=[self.strings[i] or "(none)" for i in uniq[order]], count=count[order],
                          **{k: v[order] for k, v in sums.items()})

    def steps(self, allocator: str) -> StepRows:
        """Steps of one allocator's allocations with their totals, in step order."""
        t, rows = self.allocations, self._rows(allocator, None)
        uniq, inverse = np.unique(t["step"][rows], return_inverse=True)
        spans = [self.step_span_ps.get(int(s), (0, 0)) for s in uniq]
        return StepRows(step=uniq, handle=[self.step_handles.get(int(s), "") for s in uniq],
                        start_ps=np.array([s[0] for s in spans], np.int64), end_ps=np.array([s[1] for s in spans], np.int64),
                        count=np.bincount(inverse, minlength=len(uniq)).astype(np.int64),
                        bytes=np.bincount(inverse, t["bytes"][rows], len(uniq)).astype(np.int64))


# ---------------------------------------------------------------- reading


def is_memory_log(path: Path) -> bool:
    """Whether the start of a file (gunzipped) holds a `__LOG_MEMORY__` line."""
    try:
        return MARKER in read_head(path, SNIFF_BYTES)
    except ProfileError:
        return False


def load_memory_log(path: Path, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    """Reads a log's `__LOG_MEMORY__` lines and replays them per allocator."""
    task = task or TaskState()
    path = Path(path)
    reader = _Reader()
    try:
        size = max(path.stat().st_size, 1)
        raw = open(path, "rb")
    except OSError as e:
        raise ProfileError(f"{path}: could not be read: {e.strerror or e}") from None
    with raw, ThreadPoolExecutor(2) as pool:
        is_gzip = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        f = gzip.GzipFile(fileobj=raw, mode="rb") if is_gzip else raw
        # The scanner releases the GIL: blocks are scanned on two threads
        # while this one reads the next block and files the results in order.
        pending = deque()
        for block in _blocks(f, reader.problems):
            if is_gzip and f.tell() > inflate_limit(size):
                raise inflate_refused(path, size)
            pending.append((block, pool.submit(_scan_block, block)))
            while len(pending) > 2:
                reader.add(*pending.popleft())
            task.report(0.85 * min(raw.tell() / size, 1.0), f"Reading {path.name}")
        while pending:
            reader.add(*pending.popleft())
    task.report(0.9, "Replaying allocations")
    return reader.result(host or path.name, str(path))


def _blocks(f, problems: list[str]):
    """The file in blocks of whole lines (the last may lack its newline).
    A gzip stream that ends early or is corrupt ends the blocks after the
    data it gave, with a note in problems."""
    carry = b""
    while True:
        block = bytearray(len(carry) + BLOCK)
        block[:len(carry)] = carry
        end, failed = len(carry), False
        with memoryview(block) as view:
            try:  # readinto1: a broken gzip stream still gives the data before the break
                while end < len(block) and (n := f.readinto1(view[end:])):
                    end += n
            except (EOFError, zlib.error, gzip.BadGzipFile) as e:
                problems.insert(0, f"the gzip data ends early or is corrupt ({e}); read up to there")
                failed = True
        if end == len(carry) or failed:
            if end:
                del block[end:]
                yield block
            return
        cut = block.rfind(b"\n", 0, end) + 1
        if cut == 0 and end > MAX_LINE:  # no newline for a megabyte: binary data
            cut = end
        carry = bytes(block[cut:end])
        del block[cut:]
        yield block


def _kept(kind: np.ndarray, ints: np.ndarray) -> np.ndarray:
    """Rows the analysis keeps: every allocation, and deallocations with an allocation_id."""
    frees = (kind == TENSOR_DEALLOCATION) | (kind == RAW_DEALLOCATION)
    return (kind == TENSOR_ALLOCATION) | (kind == RAW_ALLOCATION) | (frees & (ints[:, I_ID] != 0))


def _scan_block(block) -> dict:
    """Scans one block on a worker thread: its memory lines, and block-local
    string ids for the rows the analysis keeps (allocations, tracked
    deallocations, and lines left to text_format, which may be either)."""
    _, kind, time_us, line, ints, strs = _logscan.scan_memory_log(block, True)
    # The scanner does not check enum names: a line naming no DataType is text_format's to judge.
    dtype_ids, dtype_names = wire.intern_strings(block, strs[:, S_DTYPE])
    unknown = [i for i, name in enumerate(dtype_names) if name and name not in DATA_TYPE_NAMES]
    if unknown:
        kind[np.isin(dtype_ids, unknown)] = -1
    rows = np.flatnonzero(_kept(kind, ints) | (kind < 0))
    spans = strs[rows]
    local_ids = [wire.intern_strings(block, spans[:, j]) for j in (S_NAME, S_ALLOCATOR)]
    local_ids += [(dtype_ids[rows], dtype_names), wire.intern_strings(block, spans[:, S_SHAPE])]
    return {"kind": kind, "time_us": time_us, "line": line, "ints": ints, "strs": strs, "rows": rows,
            "local_ids": local_ids}


class _Reader:
    """Accumulates the scanner's rows block by block."""

    def __init__(self):
        self.index_of: dict[str, int] = {"": 0}
        self.counts = np.zeros(6, np.int64)
        self.garbled = self.unknown = self.slow = 0
        self.untracked_deallocations = 0
        self.problems: list[str] = []
        # Every allocation (tracked or not) and every tracked deallocation.
        self.events: list[dict[str, np.ndarray]] = []
        self.step_handles: dict[int, str] = {}
        self.step_span: dict[int, tuple[int, int]] = {}
        self.last_time = np.iinfo(np.int64).min
        self.shape_text: dict[str, str] = {}

    def add(self, buf: bytes, scanned: Future) -> None:
        """Files one block's scanned rows (in file order)."""
        block = scanned.result()
        if len(block["kind"]):
            self._block(buf, **block)

    def _ids(self, local: np.ndarray, strings: list[str]) -> np.ndarray:
        """Block-local string ids as ids into the log's string table."""
        remap = np.array([self._id(s) for s in strings], np.int32)
        return remap[local]

    def _id(self, s: str) -> int:
        return self.index_of.setdefault(s, len(self.index_of))

    def _block(self, buf, kind, time_us, line, ints, strs, rows, local_ids) -> None:
        slow = {}
        for i in np.flatnonzero(kind < 0).tolist():  # the scanner's leftovers: text_format decides
            parsed = self._slow_line(bytes(buf[line[i, 0]:line[i, 0] + line[i, 1]]))
            if parsed is not None:
                kind[i], ints[i], slow[i] = parsed
        self.counts += np.bincount(kind[kind >= 0], minlength=6)[:6]
        # A line without a time of its own takes the one before it (log order).
        missing = time_us == np.iinfo(np.int64).min
        if missing.any():
            filled = np.maximum.accumulate(np.r_[self.last_time, time_us])[1:]
            time_us = np.where(missing, filled, time_us)
        self.last_time = max(self.last_time, int(time_us.max()))
        for i in np.flatnonzero(kind == STEP).tolist():
            h0, hn = strs[i, S_HANDLE]
            handle = slow[i][4] if i in slow else bytes(buf[h0:h0 + hn]).decode("utf-8", "replace") if h0 >= 0 else ""
            self.step_handles[int(ints[i, I_STEP])] = handle
        self._step_spans(kind, time_us, ints)

        is_free = (kind == TENSOR_DEALLOCATION) | (kind == RAW_DEALLOCATION)
        self.untracked_deallocations += int((is_free & (ints[:, I_ID] == 0)).sum())
        names, allocators, dtypes, shapes = (self._ids(*ids) for ids in local_ids)
        for j in np.flatnonzero(np.isin(rows, list(slow))).tolist():
            names[j], allocators[j], dtypes[j], shapes[j] = (self._id(x) for x in slow[int(rows[j])][:4])
        k, iv = kind[rows], ints[rows]
        keep = _kept(k, iv)
        if not keep.all():  # lines text_format could not read, or that it read as something else
            rows, k, iv = rows[keep], k[keep], iv[keep]
            names, allocators, dtypes, shapes = names[keep], allocators[keep], dtypes[keep], shapes[keep]
        self.events.append({
            "kind": k, "time_us": time_us[rows], "allocator": allocators, "id": iv[:, I_ID],
            "bytes": _bytes(k, iv), "requested": np.where(k == RAW_ALLOCATION, iv[:, I_BYTES], iv[:, I_REQUESTED]),
            "ptr": iv[:, I_PTR], "step": iv[:, I_STEP], "name": names, "dtype": dtypes, "shape": shapes,
            "flags": iv[:, I_FLAGS].astype(np.int8),
        })

    def _step_spans(self, kind, time_us, ints) -> None:
        """First and last time of the lines naming each step (runs of equal steps first)."""
        has_step = (kind >= 0) & (kind != TENSOR_DEALLOCATION)
        if not has_step.any():
            return
        steps, t = ints[has_step, I_STEP], time_us[has_step]
        starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
        lo, hi = np.minimum.reduceat(t, starts), np.maximum.reduceat(t, starts)
        for s, a, b in zip(steps[starts].tolist(), lo.tolist(), hi.tolist()):
            old = self.step_span.get(s)
            self.step_span[s] = (min(a, old[0]), max(b, old[1])) if old else (a, b)

    def _slow_line(self, text: bytes):
        """A line the scanner left: (kind, ints, strings) or None (counted)."""
        body = text[text.index(MARKER) + len(MARKER):].decode("utf-8", "replace").strip()
        match = re.match(r"(\w+)\s*", body)
        name = match.group(1) if match else ""
        if name not in MESSAGE_NAMES:
            self.unknown += 1
            self._problem(f"unknown message {name or body[:40]!r}")
            return None
        rest = body[match.end():]
        if not (rest.startswith("{") and rest.endswith("}")):
            self.garbled += 1
            self._problem(f"{name}: the line is cut or garbled")
            return None
        try:
            message = parse_text(DEBUG_LINK.sub(" ", rest[1:-1]), getattr(log_memory_pb2, name)(), name)
        except ProfileError as e:
            self.garbled += 1
            self._problem(str(e))
            return None
        self.slow += 1
        return _message_row(MESSAGE_NAMES.index(name), message)

    def _problem(self, text: str) -> None:
        if len(self.problems) < 5:
            self.problems.append(text)

    def _shape_text(self, raw: str) -> str:
        """A scanned `{ dim { size: 2 } }` block as TensorFlow prints shapes: [2]."""
        if raw not in self.shape_text:
            try:
                shape = parse_text(DEBUG_LINK.sub(" ", raw.strip()[1:-1]), tensor_shape_pb2.TensorShapeProto(), "shape")
                self.shape_text[raw] = shape_string(shape)
            except ProfileError:
                self.shape_text[raw] = raw
        return self.shape_text[raw]

    # ------------------------------------------------------------ result

    def result(self, host: str, source: str) -> MemoryProfileData:
        strings = list(self.index_of)
        lines = int(self.counts.sum())
        if lines == 0:
            detail = f" (skipped {self.garbled:,} garbled lines and {self.unknown:,} unknown messages)" if self.garbled or self.unknown else ""
            raise ProfileError(f"{source}: no readable __LOG_MEMORY__ lines{detail}. {ENABLE_HINT}")
        events = _concat(self.events) if self.events else None
        self.events = []
        # Times count from the first memory line; lines before the first time take it.
        no_time = np.iinfo(np.int64).min
        starts = [s[0] for s in self.step_span.values() if s[0] != no_time]
        if events is not None:
            times = events["time_us"]
            starts += [int(times[times != no_time].min())] if (times != no_time).any() else []
        t0 = min(starts) if starts else 0
        if events is not None:
            times[times == no_time] = t0
        # Times are kept in ps as int64, so they may span MAX_SPAN_US. When a
        # corrupt time stretches the log further, the span starts at the first
        # time within half of it before the median; times outside are shown at its edges.
        if events is not None and len(times) and int(times.max()) - t0 > MAX_SPAN_US:
            t0 = int(times[times >= int(np.median(times)) - MAX_SPAN_US // 2].min())
        last = min(t0 + MAX_SPAN_US, np.iinfo(np.int64).max)
        outside = sum(not t0 <= t <= last for span in self.step_span.values() for t in span)
        if events is not None:
            outside += int(((times < t0) | (times > last)).sum())
            events["time_us"] = np.clip(times, t0, last) - t0
        if outside:
            self.problems.insert(0, f"{outside:,} time(s) lie more than {MAX_SPAN_US // 86_400_000_000:,} days "
                                    "from the others; shown at the edge of the log's span")
        clip = lambda t: min(max(t, t0), last) - t0
        self.step_span = {s: (clip(a), clip(b)) for s, (a, b) in self.step_span.items()}
        # Display strings: shapes as TensorFlow prints them, dtypes as XProf does.
        display = list(strings) + [REGION_TENSOR, REGION_RAW]
        for i, s in enumerate(strings):
            if s.startswith("{"):
                display[i] = self._shape_text(s)
            elif s in DATA_TYPE_NAMES:
                display[i] = data_type_string(types_pb2.DataType.Value(s))
        allocators, allocator_ids, unmatched, deferred = {}, {}, {}, 0
        if events is not None:
            is_alloc = (events["kind"] == TENSOR_ALLOCATION) | (events["kind"] == RAW_ALLOCATION)
            allocations = {"allocator": events["allocator"][is_alloc], "step": events["step"][is_alloc],
                           "kernel": events["name"][is_alloc], "tracked": events["id"][is_alloc] != 0,
                           "bytes": events["bytes"][is_alloc], "requested": events["requested"][is_alloc]}
            for a in sorted(np.unique(allocations["allocator"]).tolist(), key=lambda i: strings[i]):
                memory_id = strings[a] or "(unnamed allocator)"
                profile, unmatched_count, deferred_count = _replay(events, a, memory_id, display)
                allocators[memory_id], allocator_ids[memory_id] = profile, a
                deferred += deferred_count
                if unmatched_count:
                    unmatched[memory_id] = unmatched_count
        else:
            allocations = {k: np.zeros(0, np.int64) for k in ("allocator", "step", "kernel", "bytes", "requested")}
            allocations["tracked"] = np.zeros(0, bool)
        info = LogMemoryInfo(
            messages={name: int(n) for name, n in zip(MESSAGE_NAMES, self.counts)},
            untracked_deallocations=self.untracked_deallocations, unmatched_deallocations=unmatched,
            deferred_deallocations=deferred, garbled=self.garbled, unknown=self.unknown,
            text_format_lines=self.slow, problems=self.problems, strings=display, allocations=allocations,
            allocator_ids=allocator_ids,
            step_handles=self.step_handles,
            step_span_ps={s: (a * 1_000_000, b * 1_000_000) for s, (a, b) in self.step_span.items()},
        )
        if not allocators:
            raise ProfileError(f"{source}: {lines:,} __LOG_MEMORY__ lines, but none allocates memory "
                               f"(only steps, outputs or deallocations). {info.skipped_text()}")
        return MemoryProfileData(host=host, allocators=allocators, num_hosts=1, source=source, log=info)


def _bytes(kind: np.ndarray, ints: np.ndarray) -> np.ndarray:
    """Bytes an allocation holds: num_bytes for raw ones, allocated_bytes for
    tensors (requested_bytes when the allocator did not report the size)."""
    has_allocated = (ints[:, I_FLAGS] & HAS_ALLOCATED) != 0
    return np.where((kind == RAW_ALLOCATION) | has_allocated, ints[:, I_BYTES], ints[:, I_REQUESTED])


def _message_row(kind: int, m):
    """The scanner's row for a message text_format parsed: kind, ints and the
    strings (name, allocator, dtype, shape, handle)."""
    ints = np.zeros(7, np.int64)
    name = allocator = dtype = shape = handle = ""
    if kind == STEP:
        ints[I_STEP], handle = m.step_id, m.handle
    elif kind in (TENSOR_ALLOCATION, TENSOR_OUTPUT):
        d = m.tensor.allocation_description
        ints[I_STEP], name, allocator = m.step_id, m.kernel_name, d.allocator_name
        ints[I_ID], ints[I_BYTES], ints[I_REQUESTED] = d.allocation_id, d.allocated_bytes, d.requested_bytes
        ints[I_PTR] = np.uint64(d.ptr).view(np.int64)
        ints[I_FLAGS] = SINGLE_REFERENCE * d.has_single_reference + HAS_ALLOCATED * (d.allocated_bytes != 0)
        if kind == TENSOR_OUTPUT:
            ints[I_INDEX] = m.index
        dtype = types_pb2.DataType.Name(m.tensor.dtype) if m.tensor.dtype in types_pb2.DataType.values() else str(m.tensor.dtype)
        if m.tensor.HasField("shape"):
            shape = "{ " + text_format.MessageToString(m.tensor.shape, as_one_line=True) + " }"
    elif kind == TENSOR_DEALLOCATION:
        ints[I_ID], allocator = m.allocation_id, m.allocator_name
    elif kind == RAW_ALLOCATION:
        ints[I_STEP], name, ints[I_BYTES], ints[I_ID], allocator = m.step_id, m.operation, m.num_bytes, m.allocation_id, m.allocator_name
        ints[I_PTR] = np.uint64(m.ptr).view(np.int64)
    else:
        ints[I_STEP], name, ints[I_ID], allocator = m.step_id, m.operation, m.allocation_id, m.allocator_name
        ints[I_FLAGS] = DEFERRED * m.deferred
    return kind, ints, (name, allocator, dtype, shape, handle)


def shape_string(shape) -> str:
    """TensorShape::DebugString: [2,3], [] for scalars, <unknown>, ? for unknown sizes."""
    if shape.unknown_rank:
        return "<unknown>"
    return "[" + ",".join("?" if d.size < 0 else str(d.size) for d in shape.dim) + "]"


def _concat(parts: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Joins the blocks' columns, releasing each column's pieces as it goes."""
    return {k: np.concatenate([p.pop(k) for p in parts]) for k in list(parts[0])}


# ---------------------------------------------------------------- replay


def _replay(events: dict[str, np.ndarray], allocator: int, memory_id: str,
            strings: list[str]) -> tuple[AllocatorProfile, int, int]:
    """One allocator's tracked events (with an allocation_id) as a complete memory timeline
    (times in us since the log's first).

    Returns the profile, the number of unmatched deallocations and the number
    of deferred ones (a deferred free is followed by the real one when the
    buffer is returned, so only the real one frees).
    """
    mine = (events["allocator"] == allocator) & (events["id"] != 0)  # untracked rows are only counted
    deferred = mine & (events["kind"] == RAW_DEALLOCATION) & ((events["flags"] & DEFERRED) != 0)
    sel = np.flatnonzero(mine & ~deferred)
    t = events["time_us"][sel]
    if len(t) > 1 and not (t[1:] >= t[:-1]).all():
        sel = sel[np.argsort(t, kind="stable")]  # time, then log order
    kind = events["kind"][sel]
    is_alloc = (kind == TENSOR_ALLOCATION) | (kind == RAW_ALLOCATION)
    n = len(sel)
    # Pair by allocation id: a deallocation frees the allocation just before it under that id.
    by_id = np.argsort(events["id"][sel], kind="stable")
    ids = events["id"][sel][by_id]
    matched_sorted = np.zeros(n, bool)
    matched_sorted[1:] = (ids[1:] == ids[:-1]) & is_alloc[by_id][:-1] & ~is_alloc[by_id][1:]
    alloc_of = np.full(n, -1, np.int64)  # per matched deallocation: its allocation's position
    alloc_of[by_id[matched_sorted]] = by_id[np.flatnonzero(matched_sorted) - 1]
    pos = np.flatnonzero(is_alloc | (alloc_of >= 0))  # unmatched deallocations leave the timeline
    # A deallocation shows its allocation's metadata.
    source = sel[np.where(alloc_of[pos] >= 0, alloc_of[pos], pos)]
    alloc_k = is_alloc[pos]
    size = events["bytes"][source]
    heap = np.cumsum(np.where(alloc_k, size, -size))
    zeros = np.zeros(len(pos), np.int64)
    timeline = Snapshots(
        time_ps=events["time_us"][sel[pos]] * 1_000_000, stack=zeros, heap=heap, free=zeros,
        fragmentation=np.zeros(len(pos)), peak_in_use=np.maximum.accumulate(heap) if len(heap) else heap,
        activity=np.where(alloc_k, ALLOCATION, DEALLOCATION), requested=events["requested"][source],
        allocation=size, address=events["ptr"][source].view(np.uint64), step=events["step"][source],
        op=events["name"][source],
        region=np.where(events["kind"][source] == RAW_ALLOCATION, strings.index(REGION_RAW),
                        strings.index(REGION_TENSOR)).astype(np.int32),
        dtype=events["dtype"][source], shape=events["shape"][source], strings=strings,
    )
    # Lifetimes on the timeline: each allocation and the snapshot that frees it.
    timeline_index = np.full(n, -1, np.int64)
    timeline_index[pos] = np.arange(len(pos))
    frees = np.full(len(pos), len(pos), np.int64)
    matched = np.flatnonzero(alloc_of[pos] >= 0)
    frees[timeline_index[alloc_of[pos][matched]]] = matched
    allocs = np.flatnonzero(alloc_k)
    summary = summarize(timeline)
    summary.num_allocations, summary.num_deallocations = len(allocs), len(pos) - len(allocs)
    summary.memory_capacity = 0  # logs do not say how much memory the allocator had
    profile = AllocatorProfile(memory_id=memory_id, timeline=timeline, summary=summary, peak_allocations=None,
                               complete=True, stored_snapshots=timeline, lifetimes=(allocs, frees[allocs]))
    profile.peak_allocations = (profile.allocations_at(profile.peak_index) if len(timeline)
                                else merge_rows(timeline, np.zeros(0, np.int64), []))
    return profile, n - len(pos), int(deferred.sum())


class LogMemoryFormat(Format):
    name = "log_memory"
    title = "TensorFlow logs with `__LOG_MEMORY__` lines (`log_memory.proto`), plain or gzipped"
    where = ("a single file of any name, or `*.log`, `*.txt`, `*.out`, `*.err`, `*.stderr` (`.gz` too) in a folder "
             "whose first 4 MB hold such lines; host = file name")
    patterns = tuple(f"*{s}" for s in LOG_SUFFIXES)
    tools = (MEMORY_PROFILE,)
    rank = 2

    def host_in_folder(self, path: Path) -> str | None:
        return strip_suffix(path.name, LOG_SUFFIXES) if path.name.endswith(LOG_SUFFIXES) and is_memory_log(path) else None

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        if is_memory_log(path):
            return path.name, strip_suffix(path.name, LOG_SUFFIXES) or path.name
        if path.name.endswith(LOG_SUFFIXES) and not path.name.endswith((".txt", ".txt.gz")):
            raise ProfileError(f"{path}: no __LOG_MEMORY__ lines near the start of this log. {ENABLE_HINT}")
        return None

    def memory_profile(self, files, host, task):
        return load_memory_log(files[0], host=host, task=task)


FORMAT = LogMemoryFormat()
