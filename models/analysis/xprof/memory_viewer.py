"""XProf's memory_viewer tool: one XLA module's memory over program order,
the buffers live at the peak and the allocations that live throughout, from
its buffer assignment (XProf's hlo_proto_to_memory_visualization_utils, by
its definitions; output: its PreprocessResult as JSON).

- The heap simulator trace of the requested memory space (param
  memory_space, default 0) is replayed: ALLOC adds a buffer, FREE drops a
  reference (the buffer leaves when none is left), SHARE_WITH lets a buffer
  reuse a freed one's memory. heapSizes[i] is the heap before event i (plus
  one after the last), in MiB, plus the allocations of indefinite lifetime
  (parameters, outputs, constants, thread-local).
- The peak is the first event reaching the highest heap; maxHeap lists the
  indefinite allocations' largest buffers, then the buffers live at the peak
  in the order they were allocated; buffers under 16 KiB are summed into one
  "small" entry. maxHeapBySize is the same by size, largest first.
- logicalBufferSpans: each buffer's first and last event; bufferBlocks: the
  temporary allocations and their buffers (offset, size, span) for a chart.

Fast for large modules (100,000 buffers well under a second): buffers are
numpy columns decoded from the wire, the reference counting is one pass in C
(_heap.replay), the timeline and the peak come from cumulative sums, the
live set at the peak from the additions recorded up to it, and the JSON text
of the long lists is written from columns (_jsonrows) with the repeated
pieces (shapes, op names, source locations) formatted once each.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from profscope.models.analysis.xprof import _heap, register
from profscope.models.analysis.xprof.cpp_sort import std_sort
from profscope.models.analysis.xprof.hlo import Module, shape_string, subshape, unpadded_bytes
from profscope.models.analysis.xprof.hlo_source import ModuleSource
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data import _jsonrows
from profscope.models.data.tool_data import ToolData

SMALL_BUFFER_SIZE = 16 * 1024
MIB = float(1 << 20)
ALLOC, FREE, SHARE_WITH = 0, 1, 2
# XProf's buffer palette (its frontend's colour list, in its order): block k gets colour k mod 209.
COLORS = """
#e91e63 #2196f3 #81c784 #4dd0e1 #3f51b5 #e53935 #ff9100 #b39ddb #90a4ae #26c6da #ad1457 #03a9f4
#2196f3 #c2185b #795548 #f9a825 #00bfa5 #880e4f #d500f9 #ce93d8 #ec407a #4caf50 #ff8f00 #ffca28
#ab47bc #00e5ff #ff9800 #40c4ff #1e88e5 #9fa8da #bf360c #00b8d4 #f57f17 #64b5f6 #e040fb #ffab91
#4caf50 #01579b #66bb6a #ef9a9a #558b2f #fb8c00 #ff4081 #00e676 #388e3c #424242 #6d4c41 #c62828
#616161 #00897b #448aff #0d47a1 #607d8b #673ab7 #00c853 #2e7d32 #ffa726 #5e35b1 #ba68c8 #8d6e63
#00bcd4 #ff6f00 #f4511e #ff1744 #9e9e9e #d81b60 #4a148c #26a69a #689f38 #7b1fa2 #b0bec5 #304ffe
#f48fb1 #ffd600 #ffb74d #8bc34a #303f9f #5d4037 #80cbc4 #ffcc80 #00acc1 #3e2723 #ff5252 #ff7043
#e91e63 #ea80fc #e65100 #d84315 #212121 #ff5722 #1976d2 #2962ff #bdbdbd #3949ab #69f0ae #d50000
#ffd740 #c0ca33 #ff6e40 #00b0ff #2979ff #e64a19 #7c4dff #607d8b #009688 #ffb300 #c51162 #ffc400
#29b6f6 #3d5afe #76ff03 #cddc39 #b388ff #5c6bc0 #9e9d24 #7cb342 #ef5350 #fdd835 #ef6c00 #4fc3f7
#6200ea #004d40 #ff8a65 #ffab00 #80deea #0097a7 #7e57c2 #ff6d00 #1565c0 #455a64 #ffc107 #4527a0
#ff5722 #f44336 #f57c00 #827717 #a5d6a7 #82b1ff #9c27b0 #ff80ab #e1bee7 #78909c #311b92 #00695c
#4e342e #3f51b5 #651fff #9e9e9e #81d4fa #f8bbd0 #b71c1c #0091ea #673ab7 #a1887f #4db6ac #ffa000
#6a1b9a #43a047 #bcaaa4 #546e7a #aeea00 #e57373 #ffccbc #006064 #fbc02d #ffeb3b #8bc34a #039be5
#8e24aa #80d8ff #009688 #9ccc65 #512da8 #ffc107 #757575 #0277bd #ff3d00 #33691e #03a9f4 #00838f
#ff8a80 #283593 #f50057 #1a237e #90caf9 #9c27b0 #aa00ff #aed581 #afb42b #9575cd #d32f2f #64dd17
#f44336 #795548 #cddc39 #ff9e80 #7986cb #dd2c00 #0288d1 #ff9800 #263238 #00796b #42a5f5 #8c9eff
#1b5e20 #ffab40 #536dfe #00bcd4 #f06292 """.split()
GRAPH_SIZE = 4096.0  # XProf's allocation timeline is drawn on 4096 x 4096 points; blocks under one point are not drawn


FAILED = "Failed to process heap simulator trace: "


def mib(nbytes) -> float:
    return nbytes / MIB


def _num(x: float):
    """A double as protobuf's JSON writes it: integral values without ".0"."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 1e16 else x


def _put(out: dict, key: str, value) -> None:
    """Sets a proto3 JSON field, leaving out zero values as XProf's JSON does."""
    if value:
        out[key] = value


def _text(value) -> str:
    """A JSON value's text with "<" and ">" escaped, as protobuf's JSON writer does."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


_PLAIN = re.compile(r'[^\x00-\x1f"\\<>]*').fullmatch  # strings whose JSON is themselves in quotes


def _string(s: str) -> str:
    """A string's JSON text (the common case without escapes at no cost)."""
    return f'"{s}"' if _PLAIN(s) else _text(s)


_WHOLE = re.compile(rb"(?<=[\[,])(-?\d+)\.0(?=[,\]])")


def _floats(values: np.ndarray) -> bytes:
    """A JSON list of doubles as protobuf writes them (12.0 as 12)."""
    if not len(values):
        return b"[]"
    column = [("f", np.ascontiguousarray(values, np.float64))]
    return _WHOLE.sub(rb"\1", b"[" + _jsonrows.json_rows([b"", b""], column, 0, len(values), b",") + b"]")


def _snippets(values: np.ndarray, text) -> tuple:
    """An "s" column for json_rows: each distinct value's text formatted once."""
    distinct, codes = np.unique(values, return_inverse=True)
    return ("s", codes.astype(np.int64).ravel(), [text(v).encode() for v in distinct.tolist()])


class _Analysis:
    """A module's buffer assignment for one memory space, as columns over its
    known buffers (assigned to an allocation, the last assignment winning,
    and defined by an instruction of the module)."""

    def __init__(self, module: Module, color: int):
        self.module = module
        self.color = color
        b = self.b = module.buffers
        alloc = b.alloc
        # Indefinite lifetime: parameters, constants, outputs (XProf 2.24 counts thread-local buffers as temporary).
        self.alloc_indefinite = alloc["is_entry_computation_parameter"] | alloc["is_constant"] | alloc["maybe_live_out"]
        self.allocations = np.flatnonzero(alloc["color"] == color)  # XProf's GetBufferAllocations(color)
        ins = module.instructions
        order = np.argsort(b.id, kind="stable")
        sorted_ids = b.id[order]
        # The last logical buffer of an id wins, as in XProf's map.
        last = np.concatenate([sorted_ids[1:] != sorted_ids[:-1], [True]]) if len(sorted_ids) else np.zeros(0, bool)
        sorted_ids, order = sorted_ids[last], order[last]
        instruction_ids = np.fromiter(ins.row.keys(), np.int64, len(ins.row))
        instruction_rows = np.fromiter(ins.row.values(), np.int64, len(ins.row))
        by_instruction = np.argsort(instruction_ids)
        instruction_ids, instruction_rows = instruction_ids[by_instruction], instruction_rows[by_instruction]
        # Assigned entries whose logical buffer and instruction exist; the last assignment of a buffer wins.
        pos = np.searchsorted(sorted_ids, b.assigned_buffer)
        found = (pos < len(sorted_ids)) & (sorted_ids[np.minimum(pos, len(sorted_ids) - 1)] == b.assigned_buffer)
        lb_rows = np.where(found, order[np.minimum(pos, max(len(order) - 1, 0))], -1) if len(order) else pos * 0 - 1
        instr_id = np.where(found, b.instruction_id[np.maximum(lb_rows, 0)] if len(b.id) else 0, 0)
        ipos = np.searchsorted(instruction_ids, instr_id)
        has_instr = (
            (ipos < len(instruction_ids))
            & (instruction_ids[np.minimum(ipos, max(len(instruction_ids) - 1, 0))] == instr_id)
            if len(instruction_ids)
            else np.zeros(len(instr_id), bool)
        )
        valid = np.flatnonzero(found & has_instr)
        ids = b.assigned_buffer[valid]
        keep = np.unique(ids[::-1], return_index=True)[1]
        arow = np.sort(valid[::-1][keep])  # the last assignment of each buffer, in assignment order
        self.ids = b.assigned_buffer[arow]
        self.sorted_order = np.argsort(self.ids, kind="stable")
        self.sorted_ids = self.ids[self.sorted_order]
        self.lb_rows = lb_rows[arow]
        self.size = b.size[self.lb_rows]
        self.lb_color = b.color[self.lb_rows]
        self.alloc_row = b.assigned_owner[arow]
        self.offset = b.assigned_offset[arow]
        self.instr_row = instruction_rows[ipos[arow]]
        self._columns()

    def index_of(self, ids: np.ndarray) -> np.ndarray:
        """Known buffer indices of logical buffer ids (-1 where unknown)."""
        ids = np.asarray(ids, np.int64)
        if not len(self.sorted_ids):
            return np.full(len(ids), -1, np.int64)
        pos = np.minimum(np.searchsorted(self.sorted_ids, ids), len(self.sorted_ids) - 1)
        return np.where(self.sorted_ids[pos] == ids, self.sorted_order[pos], -1)

    def _columns(self) -> None:
        """Per known buffer: a code of its shape (the subshape at its shape
        index), each distinct shape's string and unpadded bytes; its
        instruction's metadata code; its name with the shape index."""
        ins = self.module.instructions
        index = self.b.shape_index
        shape_code = ins.shape_code[self.instr_row]
        with_index = [k for k, row in enumerate(self.lb_rows.tolist()) if index[row]]
        keys = shape_code.copy()
        self.name_code = ins.name_code[self.instr_row].astype(np.int64)
        self.names = list(ins.names)
        distinct: dict[tuple[int, tuple[int, ...]], int] = {
            (int(c), ()): int(c) for c in np.unique(shape_code).tolist()
        }
        extra = int(shape_code.max()) + 1 if len(shape_code) else 0
        for k in with_index:
            shape_index = index[int(self.lb_rows[k])]
            key = (int(shape_code[k]), shape_index)
            if key not in distinct:
                distinct[key] = extra
                extra += 1
            keys[k] = distinct[key]
            self.name_code[k] = len(self.names)
            self.names.append(f"{ins.names[ins.name_code[self.instr_row[k]]]}{{{','.join(map(str, shape_index))}}}")
        self.shape_strings = [""] * extra
        shape_bytes = np.zeros(extra, np.int64)
        for (code, shape_index), found in distinct.items():
            shape = subshape(ins.shape_of_code(code), shape_index)
            self.shape_strings[found], shape_bytes[found] = shape_string(shape), unpadded_bytes(shape)
        self.shape_key = keys
        self.shape_bytes = shape_bytes
        self.unpadded = shape_bytes[keys]
        self.meta_code = ins.meta_code[self.instr_row]
        alloc = self.b.alloc
        kinds = np.full(len(alloc["size"]), "Temporary", object)
        for flag, label in (
            ("is_constant", "Constant"),
            ("is_thread_local", "Thread-local"),
            ("maybe_live_out", "Output"),
            ("is_entry_computation_parameter", "Parameter"),
        ):  # the last set wins: XProf's order of precedence, reversed
            kinds[alloc[flag]] = label
        self.alloc_category = kinds

    def category(self, k: int) -> str:
        return self.alloc_category[int(self.alloc_row[k])]

    def shape_string(self, k: int) -> str:
        return self.shape_strings[int(self.shape_key[k])]

    def instruction_name(self, k: int) -> str:
        """The defining instruction's name, with the shape index as "{0,1}"."""
        return self.names[int(self.name_code[k])]

    def trace_id(self) -> int:
        """XProf's choice of the heap simulator trace: the one whose first
        buffer is in a temporary allocation of the memory space, else the
        one with the most events of buffers of that colour."""
        traces = self.b.trace_events
        self.trace_of_alloc: dict[int, int] = {}
        for t, (_kind, buffer, _share, _names) in enumerate(traces):
            k = int(self.index_of(buffer[:1])[0]) if len(buffer) else -1
            if k >= 0:
                self.trace_of_alloc[int(self.alloc_row[k])] = t
        for row in self.allocations.tolist():
            if not self.alloc_indefinite[row] and row in self.trace_of_alloc:
                return self.trace_of_alloc[row]
        best, best_count = -1, 0
        for t, (_kind, buffer, _share, _names) in enumerate(traces):
            known = self.index_of(buffer)
            count = int(np.count_nonzero(self.lb_color[known[known >= 0]] == self.color))
            if count > best_count:
                best, best_count = t, count
        return best


class _Replay:
    """The heap simulator trace replayed (XProf's HeapSimulatorStats)."""

    def __init__(self, a: _Analysis, trace: int):
        n_known = len(a.ids)
        self.span_start = np.full(n_known, -1, np.int64)
        self.span_end = np.full(n_known, -1, np.int64)
        self.seen = np.zeros(n_known, bool)
        self.timeline = np.zeros(0, np.int64)
        self.unpadded_timeline = np.zeros(0, np.int64)
        self.name_codes = np.zeros(0, np.int64)
        self.names: list[str] = []
        self.peak = self.peak_unpadded = self.peak_position = 0
        self.peak_buffers: list[int] = []  # known buffer indices live at the peak, in allocation order
        self.display: dict[int, int] = {}  # canonical -> the buffer using its memory at the peak
        if trace < 0 or trace >= len(a.b.trace_events):
            return
        kinds, buffers, shares, codes = a.b.trace_events[trace]
        (delta, udelta, start, end, _canonical, seen, add_event, add_code, share_event, share_root, share_buffer,
         error, value) = _heap.replay(kinds, a.index_of(buffers), a.index_of(shares), a.size, a.unpadded)  # fmt: skip
        if error == 1:
            raise ProfileError(f"{FAILED}Buffer {int(a.ids[value])}is freed multiple times.")
        if error == 2:
            raise ProfileError(f"{FAILED}Unhandled event kind: {value}")
        heap = np.cumsum(delta)
        negative = np.flatnonzero(heap < 0)
        if len(negative):
            raise ProfileError(f"{FAILED}Heap size should be non-negative, but get: {int(heap[negative[0]])}")
        uheap = np.cumsum(udelta)
        self.timeline = np.concatenate([[0], heap]).astype(np.int64)
        self.unpadded_timeline = np.concatenate([[0], uheap]).astype(np.int64)
        self.name_codes = np.concatenate([codes, [-1]]).astype(np.int64)  # -1: the "" after the last event
        self.names = a.b.event_names
        if len(heap) and heap.max() > 0:
            p = int(np.argmax(heap))
            self.peak, self.peak_unpadded, self.peak_position = int(heap[p]), int(uheap[p]), p
            live: dict[int, None] = {}
            upto = int(np.searchsorted(add_event, p, side="right"))
            for k in add_code[:upto].tolist():
                if k >= 0:
                    live.pop(k, None)
                    live[k] = None
                else:
                    live.pop(~k, None)
            self.peak_buffers = list(live)
            upto = int(np.searchsorted(share_event, p, side="right"))
            self.display = dict(zip(share_root[:upto].tolist(), share_buffer[:upto].tolist()))
        self.span_start, self.span_end, self.seen = start, end, seen.astype(bool)
        seen_allocs = np.unique(a.alloc_row[self.seen])
        if len(seen_allocs) != 1:
            raise ProfileError(
                f"{FAILED}All heap simulation should work out of a single buffer allocation, actual "
                f"seen_buffer_allocations.size():{len(seen_allocs)}"
            )


class _Objects:
    """The heap objects at the peak (XProf's PeakUsageSnapshot)."""

    def __init__(self, a: _Analysis, replay: _Replay):
        self.a = a
        self.objects: list[dict] = []
        self.small = 0
        self.indefinite_bytes = 0
        self.color_of: dict[int, int] = {}  # known buffer index -> colour number
        b = a.b
        for row in a.allocations.tolist():
            if not a.alloc_indefinite[row]:
                continue
            members = a.index_of(b.assigned_buffer[b.assigned_owner == row])
            members = members[members >= 0]
            if len(members) and a.size[members].max() > 0:
                best = int(members[np.argmax(a.size[members])])  # the first of the largest
                self.indefinite_bytes += int(b.alloc["size"][a.alloc_row[best]])
                if a.color == 0:
                    self.add(best)
        for k in replay.peak_buffers:
            self.add(replay.display.get(k, k))
        if self.small:
            self.objects.append(
                {
                    "numbered": len(self.objects),
                    "label": f"small (<{SMALL_BUFFER_SIZE} bytes)",
                    "logicalBufferId": -1,
                    "logicalBufferSizeMib": _num(mib(self.small)),
                }
            )

    def add(self, k: int) -> None:
        a = self.a
        size = int(a.size[k])
        if size < SMALL_BUFFER_SIZE:
            self.small += size
            return
        color = len(self.objects)
        self.color_of[k] = color
        ins = a.module.instructions
        irow = int(a.instr_row[k])
        shape = a.shape_string(k)
        op_name, source = ins.op_name_and_source(irow)
        obj: dict = {"numbered": color}
        _put(obj, "label", f"{ins.name(irow)}: {shape} # {op_name}")
        _put(obj, "logicalBufferId", int(a.ids[k]))
        _put(obj, "logicalBufferSizeMib", _num(mib(size)))
        _put(obj, "unpaddedShapeMib", _num(mib(int(a.unpadded[k]))))
        _put(obj, "instructionName", a.instruction_name(k))
        _put(obj, "shapeString", shape)
        _put(obj, "tfOpName", op_name)
        _put(obj, "groupName", a.category(k))
        _put(obj, "opCode", ins.opcode(irow))
        if source is not None:
            obj["sourceInfo"] = source.to_json()
        self.objects.append(obj)


def _allocation_json(a: _Analysis, row: int) -> dict:
    """An allocation of indefinite lifetime and its logical buffers."""
    b = a.b
    alloc = b.alloc
    out: dict = {}
    _put(out, "id", str(int(alloc["index"][row])) if alloc["index"][row] else "")
    _put(out, "sizeMib", _num(mib(int(alloc["size"][row]))))
    attributes = []
    if alloc["is_entry_computation_parameter"][row]:
        attributes.append("entry computation parameter")
    if alloc["maybe_live_out"][row]:
        attributes.append("may-be live out")
    if not alloc["is_thread_local"][row] and not alloc["is_tuple"][row]:
        attributes.append("reusable")
    _put(out, "attributes", attributes)
    buffers = []
    mask = b.assigned_owner == row
    lb_ids, sizes = b.assigned_buffer[mask], b.assigned_size[mask]
    for lb_id, size, k in zip(lb_ids.tolist(), sizes.tolist(), a.index_of(lb_ids).tolist()):
        entry: dict = {}
        _put(entry, "id", str(lb_id) if lb_id else "")
        if k >= 0:
            _put(entry, "shape", a.shape_string(k))
        _put(entry, "sizeMib", _num(mib(size)))
        if k >= 0:
            _put(entry, "hloName", a.module.instructions.name(int(a.instr_row[k])))
            _put(entry, "shapeIndex", [str(i) for i in b.shape_index[a.lb_rows[k]]])
        buffers.append(entry)
    _put(out, "logicalBuffers", buffers)
    if buffers and buffers[0].get("shape") and all(e.get("shape") == buffers[0]["shape"] for e in buffers):
        out["commonShape"] = buffers[0]["shape"]
    return out


class Blocks:
    """The allocation timeline's blocks (XProf's bufferBlocks) as columns:
    per temporary allocation one block for the whole allocation (logical
    buffer -1), then one per buffer with a span: where it sits (offset,
    size in bytes) and when (start and end step)."""

    def __init__(self, a: _Analysis, replay: _Replay, objects: _Objects):
        self.a = a
        b = a.b
        traces = b.trace_events
        rows, bases = [], []
        total_y = total_x = 0
        for row in a.allocations.tolist():
            trace = a.trace_of_alloc.get(row)
            if a.alloc_indefinite[row] or trace is None:
                continue
            rows.append(row)
            bases.append(total_y)
            total_y += int(b.alloc["size"][row])
            total_x = max(total_x, len(traces[trace][0]))
        self.steps = total_x
        parts = []  # (allocation block?, known index or allocation row, offset)
        ks: list[np.ndarray] = []
        if total_x and total_y:
            for row, base in zip(rows, bases):
                k = a.index_of(b.assigned_buffer[b.assigned_owner == row])
                k = k[k >= 0]
                k = k[replay.span_start[k] >= 0]  # buffers reusing another's memory have blocks of their own
                parts.append((row, base, len(ks)))
                ks.append(k)
        self.firsts = [p[2] for p in parts] + [sum(len(x) for x in ks)]
        self.container_rows = np.array([p[0] for p in parts], np.int64)
        self.container_offset = np.array([p[1] for p in parts], np.int64)
        k = np.concatenate(ks) if ks else np.zeros(0, np.int64)
        self.buffer = k
        self.allocation = a.alloc_row[k]
        base_of = dict(zip(self.container_rows.tolist(), self.container_offset.tolist()))
        self.offset = np.array([base_of[r] for r in self.allocation.tolist()], np.int64) + a.offset[k]
        self.size = a.size[k]
        self.start = replay.span_start[k]
        self.end = replay.span_end[k]
        # Colours: XProf numbers the drawn rectangles (one point or more on its 4096-point chart) in
        # order and colours a block by the count so far, unless it is a buffer of the peak's chart.
        if total_x and total_y:
            scale_x, scale_y = GRAPH_SIZE / total_x, GRAPH_SIZE / total_y
            drawn = ((self.end - self.start) * scale_x >= 1.0) & (self.size * scale_y >= 1.0)
            counts_before = np.zeros(len(k), np.int64)
            container_drawn = b.alloc["size"][self.container_rows] * scale_y >= 1.0
            position = 0
            for c, (_row, _base, first) in enumerate(parts):
                stop = parts[c + 1][2] if c + 1 < len(parts) else len(k)
                position += int(container_drawn[c])
                run = drawn[first:stop].astype(np.int64)
                counts_before[first:stop] = position + np.cumsum(run) - run
                position += int(run.sum())
            color = counts_before
            for j, kk in enumerate(k.tolist()):
                if kk in objects.color_of:
                    color[j] = objects.color_of[kk]
            self.color = color % len(COLORS)
        else:
            self.color = np.zeros(0, np.int64)

    def __len__(self) -> int:
        return len(self.container_rows) + len(self.buffer)

    def json_rows(self) -> list[bytes]:
        """Each allocation's block then its buffers' blocks, as JSON text."""
        a = self.a
        out: list[bytes] = []
        ins = a.module.instructions
        if not len(self.container_rows):
            return out
        op_texts: dict[int, str] = {}

        def meta_text(code_alloc: int) -> str:
            code, row = divmod(code_alloc, len(a.alloc_category))
            op_name, source = ins.meta_of_code(code)
            text = f'"tfOpName":{_text(op_name)},' if op_name else ""
            text += f'"category":{_text(a.alloc_category[row])},'
            if source is not None:
                text += f'"sourceInfo":{_text(source.to_json())},'
            return text

        names = a.names
        columns_text = [
            _snippets(a.ids[self.buffer], lambda v: f'"logicalBufferId":{v},' if v else ""),
            _snippets(a.name_code[self.buffer], lambda v: f'"name":{_string(names[v])},' if names[v] else ""),
            _snippets(self.offset, lambda v: f'"offset":{v},' if v else ""),
            _snippets(self.size, lambda v: f'"size":{v},' if v else ""),
            _snippets(self.start, lambda v: f'"startStep":{v},' if v else ""),
            _snippets(self.end, lambda v: f'"endStep":{v},' if v else ""),
            _snippets(
                a.meta_code[self.buffer] * len(a.alloc_category) + self.allocation,
                lambda v: op_texts.setdefault(v, meta_text(v)),
            ),
            _snippets(
                a.shape_key[self.buffer],
                lambda v: (
                    (f'"shapeString":{_text(a.shape_strings[v])},' if a.shape_strings[v] else "")
                    + (f'"unpaddedSize":{int(a.shape_bytes[v])},' if a.shape_bytes[v] else "")
                ),
            ),
            ("s", self.color.astype(np.int64), [f'"color":"{c}"}}'.encode() for c in COLORS]),
        ]
        parts = [b"{"] + [b""] * (len(columns_text) - 1) + [b""]
        for c, row in enumerate(self.container_rows.tolist()):
            name = a.alloc_category[row]
            container: dict = {"logicalBufferId": -1, "name": name}
            _put(container, "offset", int(self.container_offset[c]))
            _put(container, "size", int(a.b.alloc["size"][row]))
            _put(container, "endStep", self.steps)
            container["category"] = name
            container["color"] = "#ffffff"
            out.append(_text(container).encode())
            first, end = self.firsts[c], self.firsts[c + 1]
            if end > first:
                out.append(_jsonrows.json_rows(parts, columns_text, first, end, b","))
        return out


class MemoryViewerResult:
    """XProf's PreprocessResult of one module for one memory space, as
    columns (what the Memory Viewer page draws) and as XProf's JSON
    (`chunks`, field order and proto3 rules: zero values left out, 64-bit
    integers as strings)."""

    def __init__(self, module: Module, memory_color: int = 0):
        a = _Analysis(module, memory_color)
        replay = _Replay(a, a.trace_id())
        objects = _Objects(a, replay)
        self.module_name = module.header.name
        self.entry_computation_name = module.header.entry_computation_name
        add = mib(objects.indefinite_bytes)
        self.heap_mib = replay.timeline / MIB + add  # per program step, then after the last
        self.unpadded_heap_mib = replay.unpadded_timeline / MIB + add
        self.step_names = replay.names  # interned; step_name_codes index it (-1: "")
        self.step_name_codes = replay.name_codes
        self.max_heap = objects.objects
        object_mib = [float(o.get("logicalBufferSizeMib", 0)) for o in self.max_heap]
        # Largest first, equal sizes in the order XProf's std::sort leaves them.
        self.by_size = std_sort(list(range(len(object_mib))), lambda i, j: object_mib[i] > object_mib[j])
        self.peak_heap_mib = mib(replay.peak) + add
        self.peak_unpadded_heap_mib = mib(replay.peak_unpadded) + add
        self.peak_position = replay.peak_position
        spans = np.flatnonzero(replay.seen & (replay.span_start >= 0))
        self.span_ids = a.ids[spans]  # logical buffer id -> its first and last step
        self.span_start = replay.span_start[spans]
        self.span_end = replay.span_end[spans]
        alloc = a.b.alloc
        rows = a.allocations
        sizes = alloc["size"][rows]
        thread_local = alloc["is_thread_local"][rows]
        indefinite = a.alloc_indefinite[rows]
        self.entry_parameters_mib = mib(int(sizes[alloc["is_entry_computation_parameter"][rows]].sum()))
        self.non_reusable_mib = mib(int(sizes[thread_local | alloc["is_tuple"][rows]].sum()))
        self.maybe_live_out_mib = mib(int(sizes[alloc["maybe_live_out"][rows]].sum()))
        self.indefinite_lifetimes = [_allocation_json(a, row) for row in rows[indefinite].tolist()]
        self.total_allocation_mib = mib(int(sizes[~thread_local].sum()))
        self.indefinite_allocation_mib = mib(int(sizes[indefinite & ~thread_local].sum()))
        self.blocks = Blocks(a, replay, objects)
        self.block_names = a.names  # Blocks' name codes index it
        self._analysis = a

    def block_name(self, j: int) -> str:
        return self.block_names[int(self._analysis.name_code[self.blocks.buffer[j]])]

    def chunks(self) -> Iterator[bytes]:
        """XProf's JSON text, in pieces."""
        to_by_size = [0] * len(self.max_heap)
        for position, i in enumerate(self.by_size):
            to_by_size[i] = position
        fields: list[tuple[str, object]] = []
        if len(self.heap_mib):
            fields += [("heapSizes", _floats(self.heap_mib)), ("unpaddedHeapSizes", _floats(self.unpadded_heap_mib))]
        if self.max_heap:
            fields += [("maxHeap", self.max_heap), ("maxHeapBySize", [self.max_heap[i] for i in self.by_size])]
        if len(self.span_ids):
            start, end = self.span_start, self.span_end
            rows = _jsonrows.json_rows(
                [b'"', b'":{', b"", b"", b"}"],
                [
                    ("i", self.span_ids.astype(np.int64)),
                    _snippets(start, lambda v: f'"start":{v}' if v else ""),
                    ("s", ((start != 0) & (end != 0)).astype(np.int64), [b"", b","]),
                    _snippets(end, lambda v: f'"limit":{v}' if v else ""),
                ],
                0,
                len(self.span_ids),
                b",",
            )
            fields.append(("logicalBufferSpans", b"{" + rows + b"}"))
        if self.max_heap:
            fields += [("maxHeapToBySize", to_by_size), ("bySizeToMaxHeap", self.by_size)]
        fields += [("moduleName", self.module_name), ("entryComputationName", self.entry_computation_name)]
        fields += [
            ("peakHeapMib", _num(self.peak_heap_mib)),
            ("peakUnpaddedHeapMib", _num(self.peak_unpadded_heap_mib)),
            ("peakHeapSizePosition", self.peak_position),
            ("entryComputationParametersMib", _num(self.entry_parameters_mib)),
            ("nonReusableMib", _num(self.non_reusable_mib)),
            ("maybeLiveOutMib", _num(self.maybe_live_out_mib)),
            ("indefiniteLifetimes", self.indefinite_lifetimes),
            ("totalBufferAllocationMib", _num(self.total_allocation_mib)),
            ("indefiniteBufferAllocationMib", _num(self.indefinite_allocation_mib)),
        ]
        if len(self.step_name_codes):
            names = [_string(n).encode() for n in self.step_names] + [b'""']
            codes = np.where(self.step_name_codes < 0, len(names) - 1, self.step_name_codes).astype(np.int64)
            text = _jsonrows.json_rows([b"", b""], [("s", codes, names)], 0, len(codes), b",")
            fields.append(("hloInstructionNames", b"[" + text + b"]"))
        blocks = self.blocks.json_rows()
        yield b"{"
        first = True
        for key, value in fields:
            if not value:
                continue
            yield (b"" if first else b",") + f'"{key}":'.encode()
            first = False
            yield value if isinstance(value, bytes) else _text(value).encode()
        if blocks:
            yield b',"bufferBlocks":['
            yield b",".join(blocks)
            yield b"]"
        yield b"}"

    def to_json(self) -> bytes:
        return b"".join(self.chunks())


def preprocess(module: Module, memory_color: int = 0) -> MemoryViewerResult:
    return MemoryViewerResult(module, memory_color)


def load_module(paths: list[Path], params: dict[str, str], task: TaskState) -> Module:
    """The module a request names (module_name, else program_id), by XProf's rules and messages."""
    source = ModuleSource(paths, task)
    name = params.get("module_name") or ""
    program_id = params.get("program_id") or ""
    if not name and program_id:
        name = source.by_program_id(program_id)
    if not name:
        raise ProfileError("Can not load hlo proto from options.")
    return Module(source.load(name))


def memory_viewer_result(paths: list[Path], params: dict[str, str], task: TaskState) -> MemoryViewerResult:
    if str(params.get("view_memory_allocation_timeline", "")).lower() in ("1", "true", "yes"):
        raise ProfileError(
            "memory_viewer: the allocation timeline as Graphviz HTML (view_memory_allocation_timeline) is not "
            "produced; the JSON's bufferBlocks hold its blocks"
        )
    module = load_module(paths, params, task)
    try:
        color = int(params.get("memory_space") or 0)
    except ValueError:
        color = 0
    return MemoryViewerResult(module, color)


@register("memory_viewer")
def memory_viewer(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    return ToolData(memory_viewer_result(paths, params, task).to_json(), "json")
