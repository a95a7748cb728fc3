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

The replay is one pass over the events with integer arrays; the timeline,
the peak and the live set at the peak come from cumulative sums and a
replay of the recorded additions up to the peak (no copy per new peak).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.hlo import Module, ModuleSource, shape_string, subshape, unpadded_bytes
from profscope.models.core.task import ProfileError, TaskState
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


def mib(nbytes) -> float:
    return nbytes / MIB


def _num(x: float):
    """A double as protobuf's JSON writes it: integral values without ".0"."""
    x = float(x)
    return int(x) if x.is_integer() and abs(x) < 1e16 else x


def _nums(values: np.ndarray) -> list:
    values = np.asarray(values, np.float64)
    whole = (values == np.floor(values)) & (np.abs(values) < 1e16)
    out = values.tolist()
    for k in np.flatnonzero(whole).tolist():
        out[k] = int(out[k])
    return out


def _put(out: dict, key: str, value) -> None:
    """Sets a proto3 JSON field, leaving out zero values as XProf's JSON does."""
    if value:
        out[key] = value


class _Analysis:
    """The buffer assignment of one memory space, ready for the replay."""

    def __init__(self, module: Module, color: int):
        self.module = module
        self.color = color
        b = module.buffers
        self.b = b
        alloc = b.alloc
        # Indefinite lifetime: parameters, constants, outputs (XProf 2.24 counts thread-local buffers as temporary).
        self.alloc_indefinite = alloc["is_entry_computation_parameter"] | alloc["is_constant"] | alloc["maybe_live_out"]
        self.allocations = np.flatnonzero(alloc["color"] == color)  # XProf's GetBufferAllocations(color)
        ins = module.instructions
        lb_row = {int(i): k for k, i in enumerate(b.id.tolist())}
        # The known buffers: assigned to an allocation (the last assignment wins) and defined by an instruction.
        known: dict[int, int] = {}  # logical buffer id -> assigned row
        for k, lb_id in enumerate(b.assigned_buffer.tolist()):
            row = lb_row.get(lb_id)
            if row is not None and int(b.instruction_id[row]) in ins.row:
                known[lb_id] = k
        self.ids = np.fromiter(known.keys(), np.int64, len(known))
        arow = np.fromiter(known.values(), np.int64, len(known))
        self.index_of = {lb_id: k for k, lb_id in enumerate(known)}
        rows = np.fromiter((lb_row[i] for i in known), np.int64, len(known))
        self.lb_rows = rows
        self.size = b.size[rows]
        self.lb_color = b.color[rows]
        self.alloc_row = b.assigned_owner[arow]
        self.offset = b.assigned_offset[arow]
        self.instr_row = np.fromiter((ins.row[int(i)] for i in b.instruction_id[rows].tolist()), np.int64, len(rows))
        self._unpadded: np.ndarray | None = None

    @property
    def unpadded(self) -> np.ndarray:
        """Each known buffer's unpadded bytes (one decode per distinct shape)."""
        if self._unpadded is None:
            ins = self.module.instructions
            cache: dict = {}
            out = np.zeros(len(self.ids), np.int64)
            index = self.b.shape_index
            for k, (irow, lrow) in enumerate(zip(self.instr_row.tolist(), self.lb_rows.tolist())):
                key = (int(ins._shape[irow, 0]), index[lrow])
                value = cache.get(key)
                if value is None:
                    value = cache[key] = unpadded_bytes(subshape(ins.shape(irow), index[lrow]))
                out[k] = value
            self._unpadded = out
        return self._unpadded

    def shape_of(self, k: int):
        return subshape(self.module.instructions.shape(int(self.instr_row[k])), self.b.shape_index[self.lb_rows[k]])

    def category(self, k: int) -> str:
        a, row = self.b.alloc, int(self.alloc_row[k])
        if a["is_entry_computation_parameter"][row]:
            return "Parameter"
        if a["maybe_live_out"][row]:
            return "Output"
        if a["is_thread_local"][row]:
            return "Thread-local"
        if a["is_constant"][row]:
            return "Constant"
        return "Temporary"

    def instruction_name(self, k: int) -> str:
        """The defining instruction's name, with the shape index as "{0,1}"."""
        name = self.module.instructions.name(int(self.instr_row[k]))
        index = self.b.shape_index[self.lb_rows[k]]
        return f"{name}{{{','.join(map(str, index))}}}" if index else name

    def trace_id(self) -> int:
        """XProf's choice of the heap simulator trace for the memory space."""
        traces = self.b.trace_events
        trace_of_alloc: dict[int, int] = {}
        for t, (_kind, buffer, _share, _names) in enumerate(traces):
            if len(buffer) and int(buffer[0]) in self.index_of:
                trace_of_alloc[int(self.alloc_row[self.index_of[int(buffer[0])]])] = t
        self.trace_of_alloc = trace_of_alloc
        for row in self.allocations.tolist():
            if not self.alloc_indefinite[row] and row in trace_of_alloc:
                return trace_of_alloc[row]
        best, best_count = -1, 0
        for t, (_kind, buffer, _share, _names) in enumerate(traces):
            k = np.fromiter((self.index_of.get(i, -1) for i in buffer.tolist()), np.int64, len(buffer))
            count = int(np.count_nonzero(self.lb_color[k[k >= 0]] == self.color))
            if count > best_count:
                best, best_count = t, count
        return best


class _Replay:
    """The heap simulator trace replayed (XProf's HeapSimulatorStats)."""

    def __init__(self, a: _Analysis, trace: int):
        n_known = len(a.ids)
        self.span_start = np.full(n_known, -1, np.int64)
        self.span_end = np.full(n_known, -1, np.int64)
        self.canonical = np.full(n_known, -1, np.int64)
        self.seen = np.zeros(n_known, bool)
        self.timeline = np.zeros(0, np.int64)
        self.unpadded_timeline = np.zeros(0, np.int64)
        self.names: list[str] = []
        self.peak = self.peak_unpadded = self.peak_position = 0
        self.peak_buffers: list[int] = []  # known buffer indices live at the peak, in allocation order
        self.display: dict[int, int] = {}  # canonical -> the buffer now using its memory, at the peak
        if trace < 0 or trace >= len(a.b.trace_events):
            return
        kinds, buffers, shares, codes = a.b.trace_events[trace]
        n = len(kinds)
        size, unpadded = a.size.tolist(), a.unpadded.tolist()
        index_of = a.index_of
        known = [index_of.get(i, -1) for i in buffers.tolist()]
        shared = [index_of.get(i, -1) for i in shares.tolist()]
        ref = [0] * n_known
        canonical = [-1] * n_known
        start, end = [-1] * n_known, [-1] * n_known
        delta = [0] * n
        udelta = [0] * n
        added: list[int] = []  # known index per addition (~index per removal), in event order
        added_at: list[int] = []
        shares_at: list[tuple[int, int, int]] = []  # (event, canonical, sharer) when memory is reused
        last = n - 1

        def root(k: int) -> int:
            while canonical[k] >= 0:
                k = canonical[k]
            return k

        for i, (kind, k) in enumerate(zip(kinds.tolist(), known)):
            if k < 0:
                continue
            if kind == ALLOC:
                ref[root(k)] += 1
                delta[i] += size[k]
                udelta[i] += unpadded[k]
                added.append(k)
                added_at.append(i)
                start[k], end[k] = i, last
            elif kind == FREE:
                r = root(k)
                ref[r] -= 1
                if ref[r] < 0:
                    raise ProfileError(
                        f"Failed to process heap simulator trace: Buffer {int(a.ids[k])}is freed multiple times."
                    )
                if ref[r] == 0:
                    delta[i] -= size[r]
                    udelta[i] -= unpadded[r]
                    added.append(~r)
                    added_at.append(i)
                    if start[r] >= 0 and end[r] == last:  # XProf 2.24 closes a buffer's span once
                        end[r] = i
                if start[k] >= 0 and canonical[k] >= 0:
                    end[k] = i
            elif kind == SHARE_WITH:
                c = shared[i]
                if c < 0:
                    continue
                canonical[k] = c
                r = root(c)
                ref[r] += 1
                if ref[r] == 1:
                    shares_at.append((i, r, k))
                    start[k], end[k] = i, last
                    delta[i] += size[r]
                    udelta[i] += unpadded[r]
                    added.append(r)
                    added_at.append(i)
            else:
                raise ProfileError(f"Failed to process heap simulator trace: Unhandled event kind: {kind}")
        known_arr = np.asarray(known, np.int64)
        self.seen[known_arr[known_arr >= 0]] = True
        heap = np.cumsum(np.asarray(delta, np.int64))
        negative = np.flatnonzero(heap < 0)
        if len(negative):
            raise ProfileError(
                "Failed to process heap simulator trace: Heap size should be non-negative, but get: "
                f"{int(heap[negative[0]])}"
            )
        uheap = np.cumsum(np.asarray(udelta, np.int64))
        self.timeline = np.concatenate([[0], heap]).astype(np.int64)
        self.unpadded_timeline = np.concatenate([[0], uheap]).astype(np.int64)
        names = a.b.event_names
        self.names = [names[c] for c in codes.tolist()] + [""]
        if n and heap.max() > 0:
            p = int(np.argmax(heap))
            self.peak, self.peak_unpadded, self.peak_position = int(heap[p]), int(uheap[p]), p
            live: dict[int, None] = {}
            for k, i in zip(added, added_at):
                if i > p:
                    break
                if k >= 0:
                    live.pop(k, None)
                    live[k] = None
                else:
                    live.pop(~k, None)
            self.peak_buffers = list(live)
            for i, r, k in shares_at:
                if i > p:
                    break
                self.display[r] = k
        self.span_start[:] = start
        self.span_end[:] = end
        self.canonical[:] = canonical
        seen_allocs = np.unique(a.alloc_row[self.seen])
        if len(seen_allocs) != 1:
            raise ProfileError(
                "Failed to process heap simulator trace: All heap simulation should work out of a single buffer "
                f"allocation, actual seen_buffer_allocations.size():{len(seen_allocs)}"
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
            best, best_size = -1, 0
            for lb_id in b.assigned_buffer[b.assigned_owner == row].tolist():
                k = a.index_of.get(lb_id)
                if k is not None and a.size[k] > best_size:
                    best, best_size = k, int(a.size[k])
            if best >= 0:
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
        shape = shape_string(a.shape_of(k))
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
    for lb_id, size in zip(b.assigned_buffer[mask].tolist(), b.assigned_size[mask].tolist()):
        entry: dict = {}
        _put(entry, "id", str(lb_id) if lb_id else "")
        k = a.index_of.get(lb_id)
        if k is not None:
            entry["shape"] = shape_string(a.shape_of(k))
        _put(entry, "sizeMib", _num(mib(size)))
        if k is not None:
            _put(entry, "hloName", a.module.instructions.name(int(a.instr_row[k])))
            _put(entry, "shapeIndex", [str(i) for i in b.shape_index[a.lb_rows[k]]])
        if not entry.get("shape"):
            entry.pop("shape", None)
        buffers.append(entry)
    _put(out, "logicalBuffers", buffers)
    shapes = {entry.get("shape", "") for entry in buffers}
    if buffers and len(shapes) == 1 and buffers[0].get("shape"):
        out["commonShape"] = buffers[0]["shape"]
    return out


def _buffer_blocks(a: _Analysis, replay: _Replay, objects: _Objects) -> list[dict]:
    """The temporary allocations and their canonical buffers, as XProf
    draws its allocation timeline (and colours the blocks)."""
    b = a.b
    traces = b.trace_events
    rows, offsets = [], []
    total_y = total_x = 0
    for row in a.allocations.tolist():
        trace = getattr(a, "trace_of_alloc", {}).get(row)
        if a.alloc_indefinite[row] or trace is None:
            continue
        rows.append(row)
        offsets.append(total_y)
        total_y += int(b.alloc["size"][row])
        if trace < len(traces):
            total_x = max(total_x, len(traces[trace][0]))
    if not total_x or not total_y:
        return []
    scale_x, scale_y = GRAPH_SIZE / total_x, GRAPH_SIZE / total_y
    node = 0
    blocks: list[dict] = []
    ins = a.module.instructions
    for row, base in zip(rows, offsets):
        size = int(b.alloc["size"][row])
        name = _category(b.alloc, row)
        block: dict = {"logicalBufferId": -1, "name": name}
        _put(block, "offset", _num(base))
        _put(block, "size", _num(size))
        _put(block, "endStep", total_x)
        block["category"] = name
        block["color"] = "#ffffff"
        blocks.append(block)
        if size * scale_y >= 1.0:
            node += 1
        for lb_id in b.assigned_buffer[b.assigned_owner == row].tolist():
            k = a.index_of.get(lb_id)
            if k is None or replay.span_start[k] < 0:  # buffers reusing another's memory have blocks of their own
                continue
            start, end = int(replay.span_start[k]), int(replay.span_end[k])
            width = end - start
            y = base + int(a.offset[k])
            height = int(a.size[k])
            irow = int(a.instr_row[k])
            op_name, source = ins.op_name_and_source(irow)
            block = {}
            _put(block, "logicalBufferId", lb_id)
            _put(block, "name", a.instruction_name(k))
            _put(block, "offset", _num(y))
            _put(block, "size", _num(height))
            _put(block, "startStep", start)
            _put(block, "endStep", end)
            _put(block, "tfOpName", op_name)
            _put(block, "category", a.category(k))
            if source is not None:
                block["sourceInfo"] = source.to_json()
            _put(block, "shapeString", shape_string(a.shape_of(k)))
            _put(block, "unpaddedSize", _num(int(a.unpadded[k])))
            color = objects.color_of.get(k)
            block["color"] = COLORS[(node if color is None else color) % len(COLORS)]
            blocks.append(block)
            if width * scale_x >= 1.0 and height * scale_y >= 1.0:
                node += 1
    return blocks


def _category(alloc: dict, row: int) -> str:
    if alloc["is_entry_computation_parameter"][row]:
        return "Parameter"
    if alloc["maybe_live_out"][row]:
        return "Output"
    if alloc["is_thread_local"][row]:
        return "Thread-local"
    if alloc["is_constant"][row]:
        return "Constant"
    return "Temporary"


def preprocess(module: Module, memory_color: int = 0) -> dict:
    """XProf's PreprocessResult of a module, as its JSON object (field order
    and proto3 rules: zero values left out, 64-bit integers as strings)."""
    a = _Analysis(module, memory_color)
    replay = _Replay(a, a.trace_id())
    objects = _Objects(a, replay)
    heap = objects.objects
    by_size = sorted(range(len(heap)), key=lambda i: -heap[i].get("logicalBufferSizeMib", 0))
    to_by_size = [0] * len(heap)
    for position, i in enumerate(by_size):
        to_by_size[i] = position
    add = mib(objects.indefinite_bytes)
    out: dict = {}
    _put(out, "heapSizes", _nums(replay.timeline / MIB + add))
    _put(out, "unpaddedHeapSizes", _nums(replay.unpadded_timeline / MIB + add))
    _put(out, "maxHeap", heap)
    _put(out, "maxHeapBySize", [heap[i] for i in by_size])
    spans = {}
    for k in np.flatnonzero(replay.seen & (replay.span_start >= 0)).tolist():
        span: dict = {}
        _put(span, "start", int(replay.span_start[k]))
        _put(span, "limit", int(replay.span_end[k]))
        spans[str(int(a.ids[k]))] = span
    _put(out, "logicalBufferSpans", spans)
    _put(out, "maxHeapToBySize", to_by_size)
    _put(out, "bySizeToMaxHeap", by_size)
    _put(out, "moduleName", module.header.name)
    _put(out, "entryComputationName", module.header.entry_computation_name)
    _put(out, "peakHeapMib", _num(mib(replay.peak) + add))
    _put(out, "peakUnpaddedHeapMib", _num(mib(replay.peak_unpadded) + add))
    _put(out, "peakHeapSizePosition", replay.peak_position)
    alloc = a.b.alloc
    rows = a.allocations
    sizes = alloc["size"][rows]
    live_out = alloc["maybe_live_out"][rows]
    thread_local = alloc["is_thread_local"][rows]
    indefinite = a.alloc_indefinite[rows]
    _put(out, "entryComputationParametersMib", _num(mib(int(sizes[alloc["is_entry_computation_parameter"][rows]].sum()))))
    _put(out, "nonReusableMib", _num(mib(int(sizes[thread_local | alloc["is_tuple"][rows]].sum()))))
    _put(out, "maybeLiveOutMib", _num(mib(int(sizes[live_out].sum()))))
    _put(out, "indefiniteLifetimes", [_allocation_json(a, row) for row in rows[indefinite].tolist()])
    _put(out, "totalBufferAllocationMib", _num(mib(int(sizes[~thread_local].sum()))))
    _put(out, "indefiniteBufferAllocationMib", _num(mib(int(sizes[indefinite & ~thread_local].sum()))))
    _put(out, "hloInstructionNames", replay.names)
    _put(out, "bufferBlocks", _buffer_blocks(a, replay, objects))
    return out


def to_json(result: dict) -> bytes:
    """Compact JSON, with "<" and ">" escaped as protobuf's JSON writer does."""
    text = json.dumps(result, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").encode()


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


def module_names(paths: list[Path], task: TaskState | None = None) -> list[str]:
    """Every module memory_viewer can show (its module_name values), sorted."""
    return ModuleSource(paths, task).names()


@register("memory_viewer")
def memory_viewer(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    module = load_module(paths, params, task)
    try:
        color = int(params.get("memory_space") or 0)
    except ValueError:
        color = 0
    return ToolData(to_json(preprocess(module, color)), "json")
