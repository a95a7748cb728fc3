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
from pathlib import Path

import numpy as np
from google.protobuf import text_format

from profscope.models.core.files import GZIP_MAGIC, read_head
from profscope.models.core.guards import inflate_limit, inflate_refused, parse_text
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.allocation_log import AllocationLog
from profscope.models.data.memory_profile import (
    AllocatorProfile,
    MemoryProfileData,
    Snapshots,
    complete_profile,
    summarize,
)
from profscope.models.formats import _logscan
from profscope.models.formats.xspace.memory import data_type_string
from profscope.models.repository.registry import MEMORY_PROFILE, Format, strip_suffix
from profscope.protos import log_memory_pb2, tensor_shape_pb2, types_pb2

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
DEFERRED, SINGLE_REFERENCE, HAS_ALLOCATED = 1, 2, 4
NO_TIME = 8  # scan_block's flag: the line had no time of its own
# Columns of the scanned rows kept per block: events in log order (allocations
# and tracked deallocations), and the allocations' own.
STRING_COLUMNS = ("name", "allocator", "dtype", "shape")
EVENT_COLUMNS = ("kind", "flags", "time", "allocator", "id")
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
DTYPE_TOKENS = tuple(sorted(name.encode() for name in DATA_TYPE_NAMES))


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
    try:
        size = max(path.stat().st_size, 1)
        reader = _Reader(rows=size // 128)  # room for as many rows as lines of 128 bytes (memory lines are longer)
        raw = open(path, "rb")
    except OSError as e:
        raise ProfileError(f"{path}: could not be read: {e.strerror or e}") from None
    with raw:
        is_gzip = raw.read(2) == GZIP_MAGIC
        raw.seek(0)
        with ThreadPoolExecutor(2) as pool:
            # The scanner releases the GIL: blocks are scanned on two threads
            # while this one reads the next block and files the results in order.
            # Blocks are read, not mapped: a log cut short while it is read
            # (logrotate's copytruncate) ends early instead of killing the
            # process with SIGBUS on a page past the new end.
            pending: deque = deque()
            free: list[bytearray] = []
            f = gzip.GzipFile(fileobj=raw, mode="rb") if is_gzip else raw
            for buf, stop in _blocks(f, reader.problems, free):
                if is_gzip and f.tell() > inflate_limit(size):
                    raise inflate_refused(path, size)
                pending.append((buf, pool.submit(_scan_block, buf, stop)))
                while len(pending) > 2:
                    free.append(reader.add(*pending.popleft()))
                task.report(0.85 * min(raw.tell() / size, 1.0), f"Reading {path.name}")
            while pending:
                reader.add(*pending.popleft())
        if not is_gzip and raw.tell() < size:
            reader.problems.insert(
                0, f"the file shrank to {raw.tell():,} bytes while it was read (rotated?); read up to there"
            )
    task.report(0.9, "Replaying allocations")
    return reader.result(host or path.name, str(path))


def _cut(buf, start: int, end: int) -> int:
    """Where the whole lines of buf[start:end] end (0 when none does), or end
    when there is no newline for a megabyte: binary data."""
    cut = buf.rfind(b"\n", start, end) + 1
    return end if cut == 0 and end - start > MAX_LINE else cut


def _blocks(f, problems: list[str], free: list[bytearray]):
    """(buffer, length) of the file in blocks of whole lines at the start of a
    buffer (the last may lack its newline). Buffers the caller is done with
    come back through `free` and are filled again (a fresh one costs its page
    faults). A gzip stream that ends early or is corrupt ends the blocks after
    the data it gave, with a note in problems."""
    carry = b""
    while True:
        block = free.pop() if free else bytearray()
        if len(block) < len(carry) + BLOCK:  # a long last line carried over: a bigger buffer
            block = bytearray(len(carry) + BLOCK)
        block[: len(carry)] = carry
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
                yield block, end
            return
        cut = _cut(block, 0, end)
        carry = bytes(block[cut:end])
        yield block, cut


def _scan_block(buf, stop: int | None = None) -> dict:
    """Scans buf[:stop] on a worker thread: the rows the analysis keeps
    (allocations, tracked deallocations, and lines left to text_format, which
    may be either) as columns with block-local string ids, and the rest counted."""
    return _logscan.scan_block(buf, 0, len(buf) if stop is None else stop, DTYPE_TOKENS)


class _Reader:
    """Accumulates the scanner's rows block by block."""

    def __init__(self, rows: int = 0):
        self.index_of: dict[str, int] = {"": 0}
        self.counts = np.zeros(6, np.int64)
        self.garbled = self.unknown = self.slow = 0
        self.untracked_deallocations = 0
        self.problems: list[str] = []
        # Every tracked deallocation and every allocation (tracked or not) in log
        # order, and the allocations' columns on their own; `rows` is a guess.
        self.events, self.allocations = _Columns(rows), _Columns(rows // 2)
        self.allocators: set[int] = set()  # string ids of allocators with allocations
        self.step_handles: dict[int, str] = {}
        self.runs: list[np.ndarray] = []  # (step, first, last time) of lines naming a step
        self.last_time = np.iinfo(np.int64).min
        self.event_times: tuple[int, int] | None = None  # the events' first and last time (INT64_MIN: none)
        self.shape_text: dict[str, str] = {}

    def add(self, buf, scanned: Future):
        """Files one block's scanned rows (in file order); returns buf, free again."""
        self._block(buf, scanned.result())
        return buf

    def _id(self, s: str) -> int:
        return self.index_of.setdefault(s, len(self.index_of))

    def _block(self, buf, b: dict) -> None:
        last = self.last_time  # lines without a time of their own take the largest before them
        untimed = (b["flags"] & NO_TIME) != 0
        if untimed.any():
            b["time"][untimed] = np.maximum(b["time"][untimed], last)
        runs = b["runs"]
        if b["run_untimed"].any():
            runs[b["run_untimed"], 1:] = np.maximum(runs[b["run_untimed"], 1:], last)
        self.last_time = max(last, b["max_time"])
        self.counts += b["counts"]
        self.untracked_deallocations += b["untracked"]
        # Block-local string ids as ids into the log's table.
        remap = dict(
            zip(STRING_COLUMNS, (np.array([self._id(s) for s in strings], np.int32) for strings in b["strings"]))
        )
        events = {c: b[c] for c in EVENT_COLUMNS}
        events["allocator"] = remap["allocator"][events["allocator"]]
        allocations = b["allocations"]
        for c in STRING_COLUMNS:
            allocations[c] = remap[c][allocations[c]]
        steps = list(zip(b["steps"][:, 0].tolist(), b["steps"][:, 1].tolist(), b["handles"]))
        if len(b["slow"]):  # the scanner's leftovers: text_format decides
            runs = np.concatenate([runs, self._slow_rows(buf, b["slow"], last, events, allocations, steps)])
        for _, step, handle in steps:
            self.step_handles[step] = handle
        self.runs.append(runs)
        if len(events["time"]):
            lo, hi = int(events["time"].min()), int(events["time"].max())
            self.event_times = (
                (min(lo, self.event_times[0]), max(hi, self.event_times[1])) if self.event_times else (lo, hi)
            )
        self.events.append(events)
        self.allocations.append(allocations)
        self.allocators.update(np.unique(allocations["allocator"]).tolist())

    def _slow_rows(self, buf, slow: np.ndarray, last: int, events: dict, allocations: dict, steps: list) -> np.ndarray:
        """Reads the lines left to text_format and puts the rows they give
        among the block's (in log order); returns their step runs, and adds
        step lines to steps."""
        runs, new_events, new_allocations, at_event, at_allocation = [], [], [], [], []
        for event_pos, allocation_pos, start, length, time, flags in slow.tolist():
            time = max(time, last) if flags & NO_TIME else time
            parsed = self._slow_line(bytes(buf[start : start + length]))
            if parsed is None:
                continue
            k, ints, strings = parsed
            name, allocator, dtype, shape = (self._id(s) for s in strings[:4])
            self.counts[k] += 1
            is_free = k in (TENSOR_DEALLOCATION, RAW_DEALLOCATION)
            self.untracked_deallocations += is_free and ints[I_ID] == 0
            if k != TENSOR_DEALLOCATION:
                runs.append((ints[I_STEP], time, time))
            if k == STEP:
                steps.append((start, int(ints[I_STEP]), strings[4]))
            if k in (TENSOR_ALLOCATION, RAW_ALLOCATION) or (is_free and ints[I_ID] != 0):
                new_events.append((k, ints[I_FLAGS], time, allocator, ints[I_ID]))
                at_event.append(event_pos)
            if k in (TENSOR_ALLOCATION, RAW_ALLOCATION):
                has_allocated = k == RAW_ALLOCATION or ints[I_FLAGS] & HAS_ALLOCATED
                new_allocations.append(
                    (
                        allocator,
                        ints[I_STEP],
                        name,
                        ints[I_ID] != 0,
                        ints[I_BYTES] if has_allocated else ints[I_REQUESTED],
                        ints[I_BYTES] if k == RAW_ALLOCATION else ints[I_REQUESTED],
                        ints[I_PTR],
                        dtype,
                        shape,
                    )
                )
                at_allocation.append(allocation_pos)
        steps.sort(key=lambda s: s[0])
        for columns, rows, at in ((events, new_events, at_event), (allocations, new_allocations, at_allocation)):
            if rows:
                for (c, column), values in zip(columns.items(), zip(*rows)):
                    columns[c] = np.insert(column, at, np.array(values).astype(column.dtype))
        return np.array(runs, np.int64).reshape(-1, 3)

    def _slow_line(self, text: bytes):
        """A line the scanner left: (kind, ints, strings) or None (counted)."""
        body = text[text.index(MARKER) + len(MARKER) :].decode("utf-8", "replace").strip()
        match = re.match(r"(\w+)\s*", body)
        name = match.group(1) if match else ""
        if name not in MESSAGE_NAMES:
            self.unknown += 1
            self._problem(f"unknown message {name or body[:40]!r}")
            return None
        rest = body[match.end() :]  # type: ignore[union-attr]  # matched: name is a message name
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

    def _step_spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Steps (in order of their first line) with the first and last time of the lines naming them."""
        runs = np.concatenate(self.runs) if self.runs else np.zeros((0, 3), np.int64)
        self.runs = []
        order = np.argsort(runs[:, 0], kind="stable")
        steps = runs[order, 0]
        starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]]) if len(steps) else np.zeros(0, np.int64)
        lo = np.minimum.reduceat(runs[order, 1], starts) if len(starts) else starts
        hi = np.maximum.reduceat(runs[order, 2], starts) if len(starts) else starts
        first = np.argsort(order[starts], kind="stable")
        return steps[starts][first], lo[first], hi[first]

    # ------------------------------------------------------------ result

    def result(self, host: str, source: str) -> MemoryProfileData:
        strings = list(self.index_of)
        lines = int(self.counts.sum())
        if lines == 0:
            detail = (
                f" (skipped {self.garbled:,} garbled lines and {self.unknown:,} unknown messages)"
                if self.garbled or self.unknown
                else ""
            )
            raise ProfileError(f"{source}: no readable __LOG_MEMORY__ lines{detail}. {ENABLE_HINT}")
        events, allocations = self.events.take(), self.allocations.take()
        span_steps, span_lo, span_hi = self._step_spans()
        # Times count from the first memory line; lines before the first time take it.
        no_time = np.iinfo(np.int64).min
        timed_spans = span_lo[span_lo != no_time]
        starts = [int(timed_spans.min())] if len(timed_spans) else []
        # The events' range is known from the blocks: whole-column passes only when some lack a time.
        lo, hi = self.event_times or (0, 0)
        untimed = lo == no_time
        if events is not None:
            times = events["time"]
            if untimed:
                timed = times != no_time
                if timed.any():
                    starts.append(int(times[timed].min()))
            elif self.event_times:
                starts.append(lo)
        t0 = min(starts) if starts else 0
        if events is not None and untimed:
            times[~timed] = t0
            lo, hi = t0, max(hi, t0)
            del timed
        # Times are kept in ps as int64, so they may span MAX_SPAN_US. When a
        # corrupt time stretches the log further, the span starts at the first
        # time within half of it before the median; times outside are shown at its edges.
        if events is not None and len(times) and hi - t0 > MAX_SPAN_US:
            t0 = int(times[times >= int(np.median(times)) - MAX_SPAN_US // 2].min())
        last = min(t0 + MAX_SPAN_US, np.iinfo(np.int64).max)
        outside = sum(int(((t < t0) | (t > last)).sum()) for t in (span_lo, span_hi))
        if events is not None:
            if lo < t0 or hi > last:
                outside += int(((times < t0) | (times > last)).sum())
                np.clip(times, t0, last, out=times)
            times -= t0
            del times  # the replay lets the events go
        if outside:
            self.problems.insert(
                0,
                f"{outside:,} time(s) lie more than {MAX_SPAN_US // 86_400_000_000:,} days "
                "from the others; shown at the edge of the log's span",
            )
        span_ps = [(np.clip(t, t0, last) - t0) * 1_000_000 for t in (span_lo, span_hi)]
        step_span_ps = dict(zip(span_steps.tolist(), zip(span_ps[0].tolist(), span_ps[1].tolist())))
        # Display strings: shapes as TensorFlow prints them, dtypes as XProf does.
        display = list(strings) + [REGION_TENSOR, REGION_RAW]
        for i, s in enumerate(strings):
            if s.startswith("{"):
                display[i] = self._shape_text(s)
            elif s in DATA_TYPE_NAMES:
                display[i] = data_type_string(types_pb2.DataType.Value(s))
        allocators, allocator_ids, unmatched, deferred = {}, {}, {}, 0
        if events is not None:
            assert allocations is not None  # a log without allocations was refused above
            ids = sorted(self.allocators, key=lambda i: strings[i])
            names = [strings[a] or "(unnamed allocator)" for a in ids]
            replays = _replay(events, allocations, ids, names, display)
            for a, memory_id, (profile, unmatched_count, deferred_count) in zip(ids, names, replays):
                allocators[memory_id], allocator_ids[memory_id] = profile, a
                deferred += deferred_count
                if unmatched_count:
                    unmatched[memory_id] = unmatched_count
            allocations = {
                "allocator": allocations["allocator"],
                "step": allocations["step"],
                "kernel": allocations["name"],
                "tracked": allocations["tracked"],
                "bytes": allocations["bytes"],
                "requested": allocations["requested"],
            }
        else:
            allocations = {k: np.zeros(0, np.int64) for k in ("allocator", "step", "kernel", "bytes", "requested")}
            allocations["tracked"] = np.zeros(0, bool)
        info = AllocationLog(
            messages={name: int(n) for name, n in zip(MESSAGE_NAMES, self.counts)},
            untracked_deallocations=self.untracked_deallocations,
            unmatched_deallocations=unmatched,
            deferred_deallocations=deferred,
            garbled=self.garbled,
            unknown=self.unknown,
            text_format_lines=self.slow,
            problems=self.problems,
            strings=display,
            allocations=allocations,
            allocator_ids=allocator_ids,
            step_handles=self.step_handles,
            step_span_ps=step_span_ps,
        )
        if not allocators:
            raise ProfileError(
                f"{source}: {lines:,} __LOG_MEMORY__ lines, but none allocates memory "
                f"(only steps, outputs or deallocations). {info.skipped_text()}"
            )
        return MemoryProfileData(host=host, allocators=allocators, num_hosts=1, source=source, log=info)


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
        dtype = (
            types_pb2.DataType.Name(m.tensor.dtype)
            if m.tensor.dtype in types_pb2.DataType.values()
            else str(m.tensor.dtype)
        )
        if m.tensor.HasField("shape"):
            shape = "{ " + text_format.MessageToString(m.tensor.shape, as_one_line=True) + " }"
    elif kind == TENSOR_DEALLOCATION:
        ints[I_ID], allocator = m.allocation_id, m.allocator_name
    elif kind == RAW_ALLOCATION:
        ints[I_STEP], name, ints[I_BYTES], ints[I_ID], allocator = (
            m.step_id,
            m.operation,
            m.num_bytes,
            m.allocation_id,
            m.allocator_name,
        )
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


class _Columns:
    """Columns that grow block by block, doubling when full. A block's arrays
    are let go once copied, so freed blocks do not pile up in the heap; room
    never written takes no memory."""

    arrays: dict[str, np.ndarray]

    def __init__(self, rows: int):
        self.rows, self.n, self.arrays = max(rows, 1 << 16), 0, {}

    def append(self, block: dict[str, np.ndarray]) -> None:
        m = len(next(iter(block.values())))
        if self.n + m > self.rows or not self.arrays:
            self.rows = max(self.rows, 2 * (self.n + m))
            for c, values in block.items():
                grown = np.empty(self.rows, values.dtype)
                grown[: self.n] = self.arrays.pop(c, grown)[: self.n]
                self.arrays[c] = grown
        for c, values in block.items():
            self.arrays[c][self.n : self.n + m] = values
        self.n += m

    def take(self) -> dict[str, np.ndarray] | None:
        """The columns (None if nothing was appended)."""
        arrays, self.arrays = self.arrays, {}
        return {c: a[: self.n] for c, a in arrays.items()} if arrays else None


# ---------------------------------------------------------------- replay


def _replay(
    events: dict[str, np.ndarray],
    allocations: dict[str, np.ndarray],
    allocators: list[int],
    memory_ids: list[str],
    strings: list[str],
) -> list[tuple[AllocatorProfile, int, int]]:
    """Each allocator's tracked events (with an allocation_id) as a complete memory timeline
    (times in us since the log's first), paired in C (_logscan.replay).

    Returns per allocator the profile, the number of unmatched deallocations and
    the number of deferred ones (a deferred free is followed by the real one when
    the buffer is returned, so only the real one frees). The events' columns are
    used up, and the allocations' columns only the timelines show.
    """
    raw, tensor = strings.index(REGION_RAW), strings.index(REGION_TENSOR)
    replays = []
    columns = (events["kind"], events["flags"], events["allocator"], events["id"])
    for a in allocators:
        done = _logscan.replay(*columns, events["time"], allocations["bytes"], a, raw, tensor)
        if done is None:  # times go back somewhere: replay in time, then log order
            sel, row = _logscan.select_events(*columns, a)
            order = np.argsort(events["time"][sel], kind="stable")
            done = _logscan.replay(
                *columns, events["time"], allocations["bytes"], a, raw, tensor, sel[order], row[order]
            )
            del sel, row, order
        n, selected, deferred, *series, allocs, frees = done
        r = dict(zip(("time_ps", "source", "activity", "heap", "peak_in_use", "region"), series))
        replays.append(dict(r, n=n, unmatched=selected - n, deferred=deferred, lifetimes=(allocs, frees)))
        del done, series
    del columns
    # Each column is gathered for every allocator, then let go: at the peak the
    # timelines are held with what is left of the allocations.
    events.clear()
    for c, name in (
        ("requested", "requested"),
        ("bytes", "allocation"),
        ("ptr", "address"),
        ("step", "step"),
        ("name", "op"),
        ("dtype", "dtype"),
        ("shape", "shape"),
    ):
        column = allocations.pop(c) if c in ("ptr", "dtype", "shape") else allocations[c]
        for r in replays:
            r[name] = column[r["source"]]
        del column
    for r in replays:
        del r["source"]
    out = []
    for memory_id, r in zip(memory_ids, replays):
        n, allocs = r["n"], r["lifetimes"][0]
        zeros = np.zeros(n, np.int64)
        timeline = Snapshots(
            stack=zeros,
            free=zeros,
            fragmentation=np.zeros(n),
            address=r["address"].view(np.uint64),
            strings=strings,
            **{
                c: r[c]
                for c in (
                    "time_ps",
                    "heap",
                    "peak_in_use",
                    "activity",
                    "requested",
                    "allocation",
                    "step",
                    "op",
                    "region",
                    "dtype",
                    "shape",
                )
            },
        )
        summary = summarize(timeline)
        summary.num_allocations, summary.num_deallocations = len(allocs), n - len(allocs)
        summary.memory_capacity = 0  # logs do not say how much memory the allocator had
        out.append((complete_profile(memory_id, timeline, summary, lifetimes=r["lifetimes"]), r["unmatched"],
                    r["deferred"]))
    return out


class LogMemoryFormat(Format):
    name = "log_memory"
    title = "TensorFlow logs with `__LOG_MEMORY__` lines (`log_memory.proto`), plain or gzipped"
    where = (
        "a single file of any name, or `*.log`, `*.txt`, `*.out`, `*.err`, `*.stderr` (`.gz` too) in a folder "
        "whose first 4 MB hold such lines; host = file name"
    )
    patterns = tuple(f"*{s}" for s in LOG_SUFFIXES)
    tools = (MEMORY_PROFILE,)
    rank = 2

    def host_in_folder(self, path: Path) -> str | None:
        return (
            strip_suffix(path.name, LOG_SUFFIXES) if path.name.endswith(LOG_SUFFIXES) and is_memory_log(path) else None
        )

    def refusal(self, path: Path) -> str | None:
        if path.name.endswith((".log", ".log.gz")) and not is_memory_log(path):
            return "not a TensorFlow memory log (no __LOG_MEMORY__ lines near the start)"
        return None

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        if is_memory_log(path):
            return path.name, strip_suffix(path.name, LOG_SUFFIXES) or path.name
        if path.name.endswith(LOG_SUFFIXES) and not path.name.endswith((".txt", ".txt.gz")):
            raise ProfileError(f"{path}: no __LOG_MEMORY__ lines near the start of this log. {ENABLE_HINT}")
        return None

    def memory_profile(self, files, host, task):
        return load_memory_log(files[0], host=host, task=task)


FORMAT = LogMemoryFormat()
