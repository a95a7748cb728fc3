"""XLA modules of a profile (HloProto: the compiled program and its buffer
assignment) and the HLO facts XProf's tools print.

Where modules come from, as XProf finds them: each XSpace's "/host:metadata"
plane holds one event metadata per compiled program, with the serialised
HloProto in its stat "Hlo Proto" and the program id in "program_id" (the
metadata id when absent); a module is named "<HloModuleProto.name>(<program
id>)" and the first of a program id or name wins. XProf also reads
`<module>.hlo_proto.pb` files in the session's folder (it writes them there
from the metadata plane; Profscope reads them but writes nothing).

A module's buffers, allocations and heap simulator events become numpy
columns decoded straight from the wire (`_protowire`), so a module with
100,000 buffers is not 100,000 Python messages; the instructions' shapes,
names and source locations are decoded on demand, once per distinct value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from profscope.models.analysis.xprof.hlo_source import HLO_MODULE as _HLO_MODULE
from profscope.models.core import _protowire as wire
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats.xspace.xplane import map_file, span_text, unreadable
from profscope.protos import hlo_pb2

# Field numbers (xplane.proto, hlo.proto, xla_data.proto).
_SPACE_PLANES, _PLANE_NAME = 1, 2
_HLO_BUFFER_ASSIGNMENT = 3
_MODULE_COMPUTATIONS, _COMPUTATION_INSTRUCTIONS = 3, 2
_INSTR_NAME, _INSTR_OPCODE, _INSTR_SHAPE, _INSTR_METADATA, _INSTR_ID = 1, 2, 3, 7, 35
_META_OP_NAME, _META_SOURCE_FILE, _META_SOURCE_LINE, _META_STACK_FRAME = 2, 3, 4, 15
_BA_LOGICAL_BUFFERS, _BA_ALLOCATIONS, _BA_TRACES = 1, 3, 4
_LB_ID, _LB_SIZE, _LB_DEFINED_AT, _LB_COLOR = 1, 2, 3, 4
_LOC_SHAPE_INDEX, _LOC_INSTRUCTION_ID = 3, 4
_ALLOC_FIELDS = [(1, "i"), (2, "i"), (3, "i"), (11, "i"), (5, "i"), (12, "i"), (7, "i"), (8, "i")]
_ALLOC_ASSIGNED = 9
_TRACE_EVENTS = 1
_EVENT_KIND, _EVENT_BUFFER, _EVENT_INSTRUCTION, _EVENT_SHARE_WITH = 1, 2, 4, 5

# Element type names as XLA prints them (primitive_util's lowercase names).
_TYPE_NAMES = {v.number: v.name.lower() for v in hlo_pb2.PrimitiveType.DESCRIPTOR.values}
_TYPE_NAMES[hlo_pb2.OPAQUE_TYPE] = "opaque"
_TYPE_NAMES[hlo_pb2.PRIMITIVE_TYPE_INVALID] = "invalid"
# Bits per element (ShapeUtil::ByteSizeOfPrimitiveType, sub-byte types packed).
_TYPE_BITS = {
    hlo_pb2.PRED: 8, hlo_pb2.S1: 1, hlo_pb2.S2: 2, hlo_pb2.S4: 4, hlo_pb2.S8: 8, hlo_pb2.S16: 16, hlo_pb2.S32: 32,
    hlo_pb2.S64: 64, hlo_pb2.U1: 1, hlo_pb2.U2: 2, hlo_pb2.U4: 4, hlo_pb2.U8: 8, hlo_pb2.U16: 16, hlo_pb2.U32: 32,
    hlo_pb2.U64: 64, hlo_pb2.F16: 16, hlo_pb2.F32: 32, hlo_pb2.BF16: 16, hlo_pb2.F64: 64, hlo_pb2.F8E5M2: 8,
    hlo_pb2.F8E4M3: 8, hlo_pb2.F8E4M3FN: 8, hlo_pb2.F8E4M3B11FNUZ: 8, hlo_pb2.F8E3M4: 8, hlo_pb2.F8E5M2FNUZ: 8,
    hlo_pb2.F8E4M3FNUZ: 8, hlo_pb2.F4E2M1FN: 4, hlo_pb2.F8E8M0FNU: 8, hlo_pb2.C64: 64, hlo_pb2.C128: 128,
}  # fmt: skip
_POINTER_SIZE = 8  # XProf sizes a tuple's unpadded bytes as one pointer per element
_COMBINED_DIMENSION = -(1 << 63)  # a tile dimension XLA prints as "*"


def _spans(buf, start: int, end: int, numbers: list[int]) -> list[np.ndarray]:
    return wire.find_fields(buf, start, end, numbers)


@dataclass
class Buffers:
    """A buffer assignment as columns. Logical buffers by row (ids in `id`),
    allocations by row (proto order), each allocation's assigned buffers as a
    range of `assigned_*` rows, heap simulator events per trace."""

    id: np.ndarray
    size: np.ndarray
    color: np.ndarray
    instruction_id: np.ndarray
    shape_index: list[tuple[int, ...]]  # per logical buffer (mostly empty)
    alloc: dict[str, np.ndarray]  # index, size, is_thread_local, is_tuple, ..., color
    assigned_owner: np.ndarray  # allocation row of each assigned entry
    assigned_buffer: np.ndarray  # logical buffer id
    assigned_offset: np.ndarray
    assigned_size: np.ndarray
    trace_events: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]  # kind, buffer, share id, name code
    event_names: list[str]


class Module:
    """One HloProto, decoded into what the tools read."""

    def __init__(self, proto: bytes):
        self.buf = proto
        try:
            top = _spans(proto, 0, len(proto), [_HLO_MODULE, _HLO_BUFFER_ASSIGNMENT])
            self._module_span = top[0][-1] if len(top[0]) else np.array([0, 0])
            self._ba_span = top[1][-1] if len(top[1]) else np.array([0, 0])
            self.header = self._header()
            self.buffers = self._buffers()
        except ValueError as e:
            raise ProfileError(f"the module's HloProto is not readable ({e})") from None

    def _header(self) -> hlo_pb2.HloModuleProto:
        """The module without its computations (name, ids, stack frames)."""
        s, n = (int(x) for x in self._module_span)
        module = hlo_pb2.HloModuleProto.FromString(bytes(self.buf[s : s + n]))
        module.ClearField("computations")
        return module

    @property
    def name(self) -> str:
        return self.header.name

    def _buffers(self) -> Buffers:
        buf = self.buf
        s, n = (int(x) for x in self._ba_span)
        lb_spans, alloc_spans, trace_spans = _spans(buf, s, s + n, [_BA_LOGICAL_BUFFERS, _BA_ALLOCATIONS, _BA_TRACES])
        lb_id, lb_size, lb_loc, lb_color = wire.decode_messages(
            buf, lb_spans, [(_LB_ID, "i"), (_LB_SIZE, "i"), (_LB_DEFINED_AT, "s"), (_LB_COLOR, "i")]
        )
        present = lb_loc[:, 0] >= 0
        instr = np.zeros(len(lb_id), np.int64)
        shape_index: list[tuple[int, ...]] = [()] * len(lb_id)
        if present.any():
            loc_instr, loc_index_count = wire.decode_messages(
                buf, lb_loc[present], [(_LOC_INSTRUCTION_ID, "i"), (_LOC_SHAPE_INDEX, "n")]
            )
            instr[present] = loc_instr
            rows = np.flatnonzero(present)
            for k in np.flatnonzero(loc_index_count):
                a, b = int(lb_loc[rows[k], 0]), int(lb_loc[rows[k], 1])
                loc = hlo_pb2.LogicalBufferProto.Location.FromString(bytes(buf[a : a + b]))
                shape_index[rows[k]] = tuple(loc.shape_index)
        cols = wire.decode_messages(buf, alloc_spans, _ALLOC_FIELDS)
        names = ("index", "size", "is_thread_local", "is_tuple", "is_entry_computation_parameter", "is_constant")
        alloc = dict(zip((*names, "maybe_live_out", "color"), cols))
        for key in ("is_thread_local", "is_tuple", "is_entry_computation_parameter", "is_constant", "maybe_live_out"):
            alloc[key] = alloc[key].astype(bool)
        ((owner, assigned),) = wire.find_children(buf, alloc_spans, [_ALLOC_ASSIGNED])
        a_buffer, a_offset, a_size = wire.decode_messages(buf, assigned, [(1, "i"), (2, "i"), (3, "i")])
        ((event_owner, event_spans),) = wire.find_children(buf, trace_spans, [_TRACE_EVENTS])
        event_fields = [(_EVENT_KIND, "i"), (_EVENT_BUFFER, "i"), (_EVENT_INSTRUCTION, "s"), (_EVENT_SHARE_WITH, "i")]
        kind, buffer, name_span, share = wire.decode_messages(buf, event_spans, event_fields)
        codes, event_names = wire.intern_strings(buf, name_span)
        bounds = np.searchsorted(event_owner, np.arange(len(trace_spans) + 1))
        traces = [
            (kind[a:b], buffer[a:b], share[a:b], codes[a:b]) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist())
        ]
        return Buffers(
            id=lb_id,
            size=lb_size,
            color=lb_color,
            instruction_id=instr,
            shape_index=shape_index,
            alloc=alloc,
            assigned_owner=owner,
            assigned_buffer=a_buffer,
            assigned_offset=a_offset,
            assigned_size=a_size,
            trace_events=traces,
            event_names=event_names,
        )

    @cached_property
    def instructions(self) -> Instructions:
        s, n = (int(x) for x in self._module_span)
        (comps,) = _spans(self.buf, s, s + n, [_MODULE_COMPUTATIONS])
        ((_, spans),) = wire.find_children(self.buf, comps, [_COMPUTATION_INSTRUCTIONS])
        return Instructions(self.buf, spans, self.header.stack_frame_index)


class Instructions:
    """A module's instructions as columns (row by id in `row`): names and
    opcodes interned, shapes and metadata as codes of their distinct bytes,
    each distinct one decoded once (`shape_of_code`, `meta_of_code`)."""

    def __init__(self, buf, spans: np.ndarray, stack_frames: hlo_pb2.StackFrameIndexProto):
        self.buf = buf
        ids, names, opcodes, shapes, metas = wire.decode_messages(
            buf,
            spans,
            [(_INSTR_ID, "i"), (_INSTR_NAME, "s"), (_INSTR_OPCODE, "s"), (_INSTR_SHAPE, "s"), (_INSTR_METADATA, "s")],
        )
        self.row = {int(i): k for k, i in enumerate(ids.tolist())}  # the last of an id wins, as in XProf's map
        self.name_code, self.names = wire.intern_strings(buf, names)
        self.opcode_code, self.opcodes = wire.intern_strings(buf, opcodes)
        self.shape_code, self._shape_first = self._codes(shapes)
        self.meta_code, self._meta_first = self._codes(metas)
        self.stack_frames = stack_frames
        self._shapes: dict[int, hlo_pb2.ShapeProto] = {}
        self._metas: dict[int, tuple[str, SourceInfo | None]] = {}

    def _codes(self, spans: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Codes of equal byte strings, and each code's first span."""
        codes, distinct = wire.intern_strings(self.buf, spans)
        first = np.full((len(distinct), 2), -1, np.int64)
        order = np.unique(codes, return_index=True)
        first[order[0]] = spans[order[1]]
        return codes.astype(np.int64), first

    def _bytes(self, span) -> bytes:
        s, n = int(span[0]), int(span[1])
        return bytes(self.buf[s : s + n]) if s >= 0 else b""

    def name(self, row: int) -> str:
        return self.names[self.name_code[row]]

    def opcode(self, row: int) -> str:
        return self.opcodes[self.opcode_code[row]]

    def shape_of_code(self, code: int) -> hlo_pb2.ShapeProto:
        shape = self._shapes.get(code)
        if shape is None:
            shape = self._shapes[code] = hlo_pb2.ShapeProto.FromString(self._bytes(self._shape_first[code]))
        return shape

    def shape(self, row: int) -> hlo_pb2.ShapeProto:
        return self.shape_of_code(int(self.shape_code[row]))

    def meta_of_code(self, code: int) -> tuple[str, SourceInfo | None]:
        """metadata.op_name and XProf's source info of a distinct metadata."""
        found = self._metas.get(code)
        if found is None:
            meta = hlo_pb2.OpMetadata.FromString(self._bytes(self._meta_first[code]))
            found = self._metas[code] = (meta.op_name, source_info(meta, self.stack_frames))
        return found

    def op_name_and_source(self, row: int) -> tuple[str, SourceInfo | None]:
        return self.meta_of_code(int(self.meta_code[row]))


@dataclass(frozen=True)
class SourceInfo:
    file_name: str
    line_number: int
    stack_frame: str

    def to_json(self) -> dict:
        out: dict = {}
        if self.file_name:
            out["fileName"] = self.file_name
        if self.line_number:
            out["lineNumber"] = self.line_number
        if self.stack_frame:
            out["stackFrame"] = self.stack_frame
        return out


def source_info(meta: hlo_pb2.OpMetadata, index: hlo_pb2.StackFrameIndexProto) -> SourceInfo | None:
    """Where an instruction comes from, by XProf's rule: the metadata's
    source_file/line when set (the frames still listed), else the first of
    its stack frames ("file:line:column", innermost first, one a line)."""
    frames = []
    frame_id = meta.stack_frame_id
    while 0 < frame_id <= len(index.stack_frames):
        frame = index.stack_frames[frame_id - 1]
        frame_id = frame.parent_frame_id
        file, line, column = "", -1, -1
        if 0 < frame.file_location_id <= len(index.file_locations):
            loc = index.file_locations[frame.file_location_id - 1]
            line, column = loc.line, loc.column
            if 0 < loc.file_name_id <= len(index.file_names):
                file = index.file_names[loc.file_name_id - 1]
        frames.append(f"{file}:{line}:{column}")
    stack = "\n".join(frames)
    if meta.source_file:
        return SourceInfo(meta.source_file, meta.source_line, stack)
    if stack:
        parts = stack.split("\n", 1)[0].split(":")
        if len(parts) >= 2:
            try:
                line = int(parts[1])
            except ValueError:
                line = 0
            return SourceInfo(parts[0], line, stack)
    return None


def subshape(shape: hlo_pb2.ShapeProto, shape_index: tuple[int, ...]) -> hlo_pb2.ShapeProto:
    """XProf's shape of a buffer at shape_index: the tuple element named by
    the index's last number (its historical rule), else the whole shape."""
    if shape_index and shape_index[-1] < len(shape.tuple_shapes):
        return shape.tuple_shapes[shape_index[-1]]
    return shape


def _layout_string(layout: hlo_pb2.LayoutProto) -> str:
    text = "{" + ",".join(str(d) for d in layout.minor_to_major)
    parts = []
    if len(layout.tiles):
        parts.append(
            "T"
            + "".join(
                "(" + ",".join("*" if d == _COMBINED_DIMENSION else str(d) for d in t.dimensions) + ")"
                for t in layout.tiles
            )
        )
    if layout.tail_padding_alignment_in_elements not in (0, 1):
        parts.append(f"L({layout.tail_padding_alignment_in_elements})")
    if layout.element_size_in_bits:
        parts.append(f"E({layout.element_size_in_bits})")
    if layout.memory_space:
        parts.append(f"S({layout.memory_space})")
    return text + (":" + "".join(parts) if parts else "") + "}"


def shape_string(shape: hlo_pb2.ShapeProto) -> str:
    """XLA's ShapeUtil::HumanStringWithLayout: "f32[8,16]{1,0}", tuples as
    "(f32[8]{0}, s32[])" (from the fifth element on every fifth one marked
    "/*index=5*/"), bounded dynamic dimensions as "<=N", no "{}" for scalars."""
    if shape.element_type == hlo_pb2.TUPLE:
        # XLA marks every fifth element of a tuple with its index.
        parts = [
            (f"/*index={k}*/" if k and k % 5 == 0 else "") + shape_string(s) for k, s in enumerate(shape.tuple_shapes)
        ]
        return "(" + ", ".join(parts) + ")"
    dynamic = shape.is_dynamic_dimension
    dims = ",".join(
        ("<=" if k < len(dynamic) and dynamic[k] else "") + ("?" if d == -(1 << 63) else str(d))
        for k, d in enumerate(shape.dimensions)
    )
    text = f"{_TYPE_NAMES.get(shape.element_type, 'invalid')}[{dims}]"
    if shape.HasField("layout") and shape.element_type not in (hlo_pb2.TOKEN, hlo_pb2.OPAQUE_TYPE):
        layout = _layout_string(shape.layout)
        if shape.dimensions or layout != "{}":
            text += layout
    return text


def unpadded_bytes(shape: hlo_pb2.ShapeProto) -> int:
    """ShapeUtil::ByteSizeOf with the default layout (no padding, no tiles);
    a tuple is one pointer per element."""
    if shape.element_type == hlo_pb2.TUPLE:
        return _POINTER_SIZE * len(shape.tuple_shapes)
    if shape.element_type == hlo_pb2.TOKEN:
        return 0
    if shape.element_type == hlo_pb2.OPAQUE_TYPE:
        return _POINTER_SIZE
    count = 1
    for d in shape.dimensions:
        count *= max(int(d), 0)
    bits = _TYPE_BITS.get(shape.element_type, 0)
    return (count * bits + 7) // 8


DEVICE_PLANE_PREFIXES = ("/device:GPU:", "/device:TPU:", "/device:CUSTOM:")


def device_planes(paths: list[Path], task: TaskState | None = None) -> list[str]:
    """The accelerator planes of the XSpaces (XProf's device op metrics come from these)."""
    task = task or TaskState()
    found = []
    for path in paths:
        buf = map_file(Path(path), task, weight=0.1)
        if not len(buf):
            raise ProfileError(f"{path}: the file is empty")
        try:
            (planes,) = wire.find_fields(buf, 0, len(buf), [_SPACE_PLANES])
            (names,) = wire.decode_messages(buf, planes, [(_PLANE_NAME, "s")])
        except ValueError as e:
            raise unreadable(Path(path), e) from None
        for span in names.tolist():
            name = span_text(buf, span)
            if name.startswith(DEVICE_PLANE_PREFIXES):
                found.append(name)
    return found
