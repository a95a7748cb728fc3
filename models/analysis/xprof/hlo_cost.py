"""XLA's cost of an HLO instruction as XProf 2.24.2 reads it for GPU planes:
FLOPs and bytes accessed by XProf's GPU cost analysis (XLA's HloCostAnalysis
with GpuHloCostAnalysis's rules, run over the entry computation of the
module's HloProto), the instruction's category (HloInstruction::ToCategory)
and its text (ToString without metadata and backend config, operand shapes
printed).

The rules, as XLA states them:
- bytes accessed: the output's and the operands' sizes (a tuple is one 8-byte
  pointer per element), except parameters, constants, get-tuple-element and
  bitcast (none), tuple (its pointers), slices (twice the result), dynamic
  (update) slices (the slice, its update and indices);
- elementwise ops: elements x the clock cycles XLA's GPU op profile gives the
  opcode and element type (its default profile, sm_86, since XProf passes no
  device; 3 where it has none);
- dot: 2 x result elements x contracted elements; convolution: 2 x the valid
  (unpadded) window taps of every output element x input features per group;
- reduce: (input - output elements) x its reducer's cost; sort: n x ceil(log2 n);
  concatenate: 6 per element (400 when its first operand's size along a
  dimension other than 0 is not a multiple of 32);
- fusion: its fused instructions' FLOPs weighted by how much of each the
  fusion's output uses (GPU utilisation: a slice reads its share, elementwise
  ops pass their users' share on); bytes: its outputs (the update of a
  dynamic-update-slice root) and each parameter's size x min(its utilisation,
  1);
- gather: no FLOPs, twice the output and the indices; scatter: its combiner's
  cost per update element, three times the updates and the indices;
  reduce-window: window size - 1 reductions per output element (a window that
  reduces one padded dimension and spreads it back: that dimension - 1 plus
  one per row); select-and-scatter: window - 1 selections and one scatter per
  source element;
- custom calls: unknown to XLA (-1: XProf counts none), but cuBLASLt GEMMs
  (`__cublas$lt$matmul`, `...$f8`): a dot's FLOPs from their first operand,
  their result (the tuple's first element) and the dot dimensions of the
  GpuBackendConfig JSON in `backend_config`; and cuDNN convolutions (`__cudnn$convForward`, `convBackwardInput`,
  `convBackwardFilter`, `convBiasActivationForward`, `convForwardGraph`): a
  convolution's FLOPs from the instruction's window, dimension labels and
  groups; of both the output bytes the result's (not the workspace's). XProf
  2.24.2 gives the legacy `__cublas$gemm` no costs, as any custom call;
- collectives: all-reduce its reducer's elementwise cost over the output and
  the output's arrays and operands; all-reduce-start the same FLOPs and its
  output's bytes; all-gather (-start: its outputs, not element 0) over n ranks
  (its largest replica group) the output's n-th part written 2n - 1 times and
  read n times; reduce-scatter its reducer's cost and its operands' n-th part
  written n times and read 2n - 1 times; async-start its wrapped computation's
  FLOPs and no bytes (GPU's analysis drops a computation's bytes), a wrapped
  reduce-scatter's own bytes; all-to-all, collective-permute(-start), the
  -done and async-update halves and rng-get-and-update-state the output's
  arrays (not a tuple's pointers) and the operands (the HBM bytes: the default
  keys, so a tuple's elements none; an async-start none);
- call, while (one iteration: body + condition), conditional (the most of its
  branches per property): their computations' FLOPs and bytes;
- a transpose that keeps the bytes' physical order is a bitcast (no bytes);
  a sort's comparator and an all-reduce's reducer are not analysed (their
  instructions cost nothing, as for XProf any instruction XLA never visits).

XProf's HBM bytes of an instruction are XLA's bytes per operand and output
(by shape index) summed over the array leaves of its operands and output in
memory space 0: for most instructions its bytes, but a tuple operand or
output counts only the keys XLA set for its elements, and call, while and
conditional carry their computations' summed keys (so a call of tuples has
none, as XProf shows).

An opcode without a rule here is refused (ProfileError naming it and the
module), never given a guessed cost: rng and rng-bit-generator (XLA's GPU
and CPU pipelines expand them before the profile's module is written), send
and recv (XLA:GPU emits them only under non-default decomposer flags),
collective-broadcast, ...; so is the text of an instruction whose
attributes are not printed here (_UNPRINTED), and an all-gather or
reduce-scatter without replica groups (its ranks are the module config's).
An async-start/-update/-done prints as XLA's sugar: the wrapped opcode with
-start/-update/-done, the start with the wrapped instruction's attributes.
Checked against XProf on the fixtures gpu_jax, rocm_jax, gpu_jax_ops,
gpu_jax_every (every instruction) and gpu_jax_collectives; select-and-scatter
(XLA:CPU expands it) follows XLA's source unchecked.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass

from profscope.models.analysis.xprof.hlo import shape_string, unpadded_bytes
from profscope.models.core.task import ProfileError
from profscope.protos import hlo_pb2

P = hlo_pb2
_FMA = 2
# The custom calls GpuHloCostAnalysis costs (XProf 2.24.2 leaves the legacy "__cublas$gemm" unknown).
_CUBLAS_GEMMS = ("__cublas$lt$matmul", "__cublas$lt$matmul$f8")
_CUDNN_CONVOLUTIONS = ("__cudnn$convForward", "__cudnn$convForwardGraph", "__cudnn$convBackwardInput",
                       "__cudnn$convBackwardFilter", "__cudnn$convBiasActivationForward")

# XLA's GPU op profile sm_86 (clock cycles per element by opcode and element type); the rest cost 3.
_SM86: dict[str, dict[int, int]] = {
    "divide": {P.S8: 370, P.S16: 367, P.S32: 306, P.S64: 918, P.U8: 306, P.U16: 302, P.U32: 115, P.U64: 838,
               P.F64: 2016, P.C64: 687, P.C128: 7941},
    "power": {P.S8: 392, P.S16: 396, P.S64: 601, P.U8: 388, P.U16: 399, P.U64: 604, P.F16: 975, P.F32: 925,
              P.F64: 5511, P.C64: 3351, P.C128: 18205},
    "cbrt": {P.F16: 925, P.F32: 867, P.F64: 6339},
    "cosine": {P.F16: 691, P.F32: 662, P.F64: 1717, P.C128: 6613},
    "exponential": {P.F16: 108, P.F32: 86, P.F64: 1652, P.C64: 1360, P.C128: 4028},
    "exponential-minus-one": {P.F16: 396, P.F32: 381, P.F64: 1900, P.C64: 1400, P.C128: 4161},
    "log": {P.F16: 266, P.F32: 244, P.F64: 608, P.C64: 950, P.C128: 7599},
    "log-plus-one": {P.F16: 284, P.F32: 262, P.F64: 2073, P.C64: 842, P.C128: 6962},
    "logistic": {P.F16: 226, P.F32: 176, P.F64: 2412},
    "rsqrt": {P.F16: 97, P.F32: 75, P.F64: 698, P.C64: 2383, P.C128: 11318},
    "sine": {P.F32: 662, P.F64: 1789, P.C128: 5878},
    "sqrt": {P.F16: 97, P.F32: 75, P.F64: 986, P.C64: 3193, P.C128: 15606},
    "tanh": {P.F16: 212, P.F32: 190, P.F64: 1609, P.C128: 9939},
    "atan2": {P.F16: 482, P.F32: 486, P.F64: 3747, P.C64: 5353, P.C128: 39027},
    "add": {P.F64: 97, P.C128: 97},
    "multiply": {P.F64: 97, P.C128: 270},
    "subtract": {P.F64: 97, P.C128: 97},
}  # fmt: skip
_DEFAULT_CYCLES = 3

_UNARY = {"abs", "round-nearest-afz", "round-nearest-even", "ceil", "clz", "convert", "cosine", "erf", "exponential",
          "exponential-minus-one", "floor", "imag", "is-finite", "log", "log-plus-one", "logistic", "not", "negate",
          "popcnt", "real", "reduce-precision", "rsqrt", "sign", "sine", "sqrt", "cbrt", "tan", "tanh"}
_BINARY = {"add", "atan2", "compare", "complex", "divide", "maximum", "minimum", "multiply", "power", "remainder",
           "subtract", "and", "or", "xor", "shift-left", "shift-right-arithmetic", "shift-right-logical"}
_TERNARY = {"clamp", "select"}
ELEMENTWISE = _UNARY | _BINARY | _TERNARY | {"copy"}  # HloInstruction::IsElementwise (copy too)
# Ops whose cost is the default: their output's and operands' bytes, no FLOPs.
_PLAIN = {"broadcast", "copy", "iota", "reverse", "transpose", "reshape", "pad", "copy-start", "copy-done"}
# Collectives (their -done and -update halves, the random state): no FLOPs; bytes their output's arrays (a tuple's
# elements, not its pointers, as XProf 2.24.2 gives them) and their operands.
_DEFAULT_COLLECTIVES = {"collective-permute", "collective-permute-start", "collective-permute-done", "all-to-all",
                        "all-reduce-done", "all-gather-done", "async-update", "async-done",
                        "rng-get-and-update-state"}
_NO_BYTES = {"parameter", "constant", "get-tuple-element", "bitcast", "domain", "after-all", "partition-id",
             "replica-id"}
_DATA_FORMATTING = {"transpose", "copy", "copy-start", "copy-done", "bitcast", "reshape", "dynamic-reshape"}
# Opcodes whose attributes (padding, dimension numbers, windows ...) the text printer does not write: an
# instruction of these is refused rather than shown with a text XProf would not show (inside fusions they
# need no text: only the device's instructions are printed).
_UNPRINTED = {"pad", "iota", "gather", "scatter", "reduce-window", "select-and-scatter", "reduce-precision", "rng",
              "fft", "cholesky", "triangular-solve", "map"}
# Collectives printed with their channel, replica groups (source-target pairs) and dimensions.
_COLLECTIVES = {"all-reduce", "all-reduce-start", "all-gather", "all-gather-start", "collective-permute",
                "collective-permute-start", "reduce-scatter", "all-to-all"}
_FUSION_KINDS = {"kLoop": "loop fusion", "kInput": "input fusion", "kOutput": "output fusion",
                 "kCustom": "custom fusion"}


def _elements(shape) -> int:
    if shape.element_type == P.TUPLE:
        return sum(_elements(s) for s in shape.tuple_shapes)
    return math.prod(int(d) for d in shape.dimensions)


def _array_elements(shape) -> int:
    return math.prod(int(d) for d in shape.dimensions)


def _has_layout(shape) -> bool:
    if shape.element_type == P.TUPLE:
        return all(_has_layout(s) for s in shape.tuple_shapes)
    if shape.element_type in (P.TOKEN, P.OPAQUE_TYPE):
        return True
    return shape.HasField("layout")


def shape_size(shape) -> int:
    """HloCostAnalysis::GetShapeSize with XLA's default size function (ShapeUtil::ByteSizeOf, 8-byte
    pointers): 0 for a shape without layout."""
    return unpadded_bytes(shape) if _has_layout(shape) else 0


def flops_per_element(opcode: str, element_type: int) -> int:
    return _SM86.get(opcode, {}).get(element_type, _DEFAULT_CYCLES)


@dataclass
class Cost:
    flops: float = 0.0
    bytes: float = 0.0  # XLA's bytes accessed
    hbm: float | None = None  # its reads and writes of memory space 0 (XProf's HBM), once known

    @property
    def hbm_bytes(self) -> float:
        return self.bytes if self.hbm is None else self.hbm


def _damaged_module_says_so(method):
    """A ModuleCosts method that raises a ProfileError naming the module where its HloProto refers to an
    instruction or computation it does not hold (a damaged file), not a KeyError or IndexError."""

    @functools.wraps(method)
    def guarded(self, *args):
        try:
            return method(self, *args)
        except (KeyError, IndexError, StopIteration) as e:
            raise ProfileError(f"module {self.label}: its HloProto refers to something it does not hold "
                               f"({type(e).__name__}: {e})") from None

    return guarded


class ModuleCosts:
    """The GPU cost analysis of one module: per instruction name its (FLOPs, bytes accessed)."""

    def __init__(self, proto: bytes, module_name: str = ""):
        hp = P.HloProto.FromString(proto)
        self.module = hp.hlo_module
        self.label = module_name or self.module.name
        self.computations = {c.id: c for c in self.module.computations}
        self.by_id = {i.id: i for c in self.module.computations for i in c.instructions}
        self.by_name: dict[str, P.HloInstructionProto] = {}
        for c in self.module.computations:
            for i in c.instructions:
                self.by_name.setdefault(i.name, i)
        self.users: dict[int, list] = {}
        for c in self.module.computations:
            for i in c.instructions:
                for o in i.operand_ids:
                    self.users.setdefault(o, []).append(i)
        self.costs: dict[int, Cost] = {}
        self.operand_util: dict[int, dict[int, float]] = {}
        # XLA's bytes accessed per operand and output shape index ((operand, index); operand -1 the output).
        self.keys: dict[int, dict[tuple[int, tuple], float]] = {}
        self._fusion_keys: dict[int, dict[tuple[int, tuple], float]] = {}
        self._analysed = False

    # ------------------------------------------------------------ analysis

    @_damaged_module_says_so
    def cost(self, name: str) -> Cost | None:
        if not self._analysed:
            self._analysed = True
            entry = self.computations.get(self.module.entry_computation_id)
            if entry is not None:
                self._computation(entry)
        ins = self.by_name.get(name)
        if ins is None:
            return None
        c = self.costs.get(ins.id)
        if c is None:  # never analysed (a sort's comparator, an unused computation): XProf gives it no costs
            return Cost(0.0, 0.0, 0.0)
        if c.hbm is None:
            c.hbm = self._hbm(ins)
        return c

    def _hbm(self, ins) -> float:
        """XProf's HBM bytes of an instruction: XLA's bytes read of each operand and written of the output, at
        their array leaves in memory space 0 (a tuple operand or output counts only where XLA kept its
        elements' bytes)."""
        keys = self.keys.get(ins.id, {})
        total = 0.0
        for k, shape in [(-1, ins.shape)] + list(enumerate(o.shape for o in self._operands(ins))):
            total += sum(keys.get((k, ix), 0.0) for ix, leaf in _leaves(shape) if _memory_space(leaf) == 0)
        return total

    def _operands(self, ins) -> list:
        return [self.by_id[o] for o in ins.operand_ids]

    def _computation(self, comp) -> Cost:
        """Visits a computation's instructions (each once), their costs kept; the sum of their FLOPs."""
        total = Cost()
        for ins in comp.instructions:
            if ins.id not in self.costs:
                self.costs[ins.id] = self._instruction(ins)
                self.keys[ins.id] = self._bytes_keys(ins)
            total.flops += self.costs[ins.id].flops
            total.bytes += self.costs[ins.id].bytes
        return total

    def _bytes_keys(self, ins) -> dict[tuple[int, tuple], float]:
        """HloCostAnalysis's bytes accessed per operand and output: each one's size, but what its rule sets
        (none for parameters, constants and bitcasts; a slice's output size; the updates of a
        dynamic-update-slice or scatter; -1 for a custom call). call and while take the sums over their
        computations' instructions, conditional the most of its branches' (as XLA does, whatever operands
        those keys belonged to)."""
        op = ins.opcode
        operands = self._operands(ins)
        if op in ("call", "while", "conditional"):
            sums = [self._key_sums(self.computations[c]) for c in ins.called_computation_ids]
            out: dict[tuple[int, tuple], float] = {}
            for part in sums:
                for k, v in part.items():
                    if op != "conditional":
                        out[k] = out.get(k, 0.0) + v
                    else:
                        out[k] = max(out[k], v) if k in out else v
            return out
        if op == "fusion":
            return self._fusion_keys.get(ins.id, {})
        keys = {(-1, ()): float(shape_size(ins.shape))}
        keys.update({(k, ()): float(shape_size(o.shape)) for k, o in enumerate(operands)})
        if op in _NO_BYTES or op == "tuple" or (op == "transpose" and _transpose_is_bitcast(ins, operands[0])):
            keys = {k: 0.0 for k in keys}
            if op == "tuple":
                keys[(-1, ())] = float(shape_size(ins.shape))
        elif op in ("slice", "dynamic-slice", "gather"):
            keys[(-1, ())] = keys[(0, ())] = float(shape_size(ins.shape))
        elif op == "dynamic-update-slice":
            keys[(-1, ())], keys[(0, ())] = float(shape_size(operands[1].shape)), 0.0
        elif op == "scatter":
            n = (len(operands) - 1) // 2
            for i in range(n):
                keys[(i, ())] = keys[(n + 1 + i, ())]
            keys[(-1, ())] = sum(keys[(n + 1 + i, ())] for i in range(n))
        elif op == "custom-call" and ins.custom_call_target in _CUBLAS_GEMMS + _CUDNN_CONVOLUTIONS:
            keys[(-1, ())] = float(shape_size(_result(ins)))
        elif op == "custom-call":
            keys = {k: -1.0 for k in keys}
        elif op == "all-reduce":
            keys[(-1, ())] = float(_array_bytes(ins.shape))
        elif op == "async-start":  # replaced by its computation's, whose bytes XLA's GPU analysis drops
            keys = {}
        return keys

    def _key_sums(self, comp) -> dict[tuple[int, tuple], float]:
        sums: dict[tuple[int, tuple], float] = {}
        for ins in comp.instructions:
            for k, v in self.keys.get(ins.id, {}).items():
                sums[k] = sums.get(k, 0.0) + v
        return sums

    def _called(self, ins, k: int = 0):
        ids = ins.called_computation_ids
        if k >= len(ids) or ids[k] not in self.computations:  # a malformed module: a message, not a traceback
            raise ProfileError(f"module {self.label}: XLA's '{ins.opcode}' instruction ({ins.name}) calls no "
                               "computation of the module")
        return self.computations[ids[k]]

    def _root(self, comp):
        """A computation's root instruction (ProfileError where the module names none of its instructions)."""
        root = next((i for i in comp.instructions if i.id == comp.root_id), None)
        if root is None:
            raise ProfileError(f"module {self.label}: computation {comp.name} has no root instruction")
        return root

    def _instruction(self, ins) -> Cost:
        op = ins.opcode
        operands = self._operands(ins)
        self.operand_util[ins.id] = {}
        default_bytes = shape_size(ins.shape) + sum(shape_size(o.shape) for o in operands)
        if op in _NO_BYTES:
            return Cost()
        if op in ELEMENTWISE and op != "copy":
            return Cost(flops_per_element(op, ins.shape.element_type) * _elements(ins.shape), default_bytes)
        if op == "transpose" and _transpose_is_bitcast(ins, operands[0]):  # XLA treats it as a bitcast
            return Cost()
        if op in _PLAIN:
            return Cost(0.0, default_bytes)
        if op == "tuple":
            return Cost(0.0, shape_size(ins.shape))
        if op == "slice":
            self.operand_util[ins.id][0] = _array_elements(ins.shape) / max(_array_elements(operands[0].shape), 1)
            return Cost(0.0, 2 * shape_size(ins.shape))
        if op == "dynamic-slice":
            self.operand_util[ins.id][0] = _array_elements(ins.shape) / max(_array_elements(operands[0].shape), 1)
            return Cost(0.0, 2 * shape_size(ins.shape) + shape_size(operands[1].shape))
        if op == "dynamic-update-slice":
            out = _array_elements(ins.shape)
            self.operand_util[ins.id][0] = (out - _array_elements(operands[1].shape)) / max(out, 1)
            return Cost(0.0, 2 * shape_size(operands[1].shape) + shape_size(operands[2].shape))
        if op == "dot":
            return Cost(_dot_flops(operands[0].shape, ins.shape, ins.dot_dimension_numbers.lhs_contracting_dimensions),
                        default_bytes)
        if op == "convolution":
            return Cost(float(self._convolution_flops(ins, operands)), default_bytes)
        if op == "reduce":
            sub = self._computation(self._called(ins))
            out = ins.shape.tuple_shapes[0] if ins.shape.element_type == P.TUPLE else ins.shape
            count = _array_elements(operands[0].shape) - _array_elements(out)
            return Cost(sub.flops * count, default_bytes)
        if op == "sort":  # XLA does not analyse the comparator: its instructions cost nothing
            n = _array_elements(operands[0].shape)
            return Cost(float(n * (math.ceil(math.log2(n)) if n > 1 else 0)), default_bytes)
        if op == "concatenate":  # a compare and branch per element; 400 when its first operand ends mid-warp
            dim = ins.dimensions[0] if len(ins.dimensions) else 0
            split = dim > 0 and int(operands[0].shape.dimensions[dim]) % 32
            return Cost(float((400 if split else 6) * _elements(ins.shape)), default_bytes)
        if op == "fusion":
            return self._fusion(ins, operands)
        if op == "gather":  # a copy of the output's size and a read of the indices
            self.operand_util[ins.id][0] = _array_elements(ins.shape) / max(_array_elements(operands[0].shape), 1)
            return Cost(0.0, 2 * shape_size(ins.shape) + shape_size(operands[1].shape))
        if op == "scatter":  # input, output and updates: three times the updates, and the indices
            n = (len(operands) - 1) // 2
            updates = operands[n + 1 :]
            sub = self._computation(self._called(ins))
            size = sum(shape_size(u.shape) for u in updates)
            return Cost(sub.flops * _array_elements(updates[0].shape), 3 * size + shape_size(operands[n].shape))
        if op == "reduce-window":
            sub = self._computation(self._called(ins))
            return Cost(sub.flops * _reduce_window_count(ins, operands), default_bytes)
        if op == "select-and-scatter":  # per source element: window - 1 selections and one scatter
            select, scatter = (self._computation(self._called(ins, k)) for k in (0, 1))
            source = _array_elements(operands[1].shape)
            window = math.prod(int(d.size) for d in ins.window.dimensions)
            return Cost(select.flops * source * (window - 1) + scatter.flops * source, default_bytes)
        if op == "custom-call" and ins.custom_call_target in _CUBLAS_GEMMS + _CUDNN_CONVOLUTIONS:
            # output bytes: the result's, not the workspace's
            bytes_ = float(default_bytes - shape_size(ins.shape) + shape_size(_result(ins)))
            if ins.custom_call_target in _CUBLAS_GEMMS:
                return Cost(_dot_flops(operands[0].shape, _result(ins), self._gemm_contracting(ins)), bytes_)
            return Cost(float(self._convolution_flops(ins, operands)), bytes_)
        if op == "custom-call":
            return Cost(-1.0, -1.0)  # XLA's unknown: XProf counts no FLOPs or bytes
        if op == "all-reduce":  # its reduction over the output; bytes: the output's arrays and the operands
            return Cost(self._reducer_flops(ins), _array_bytes(ins.shape) + sum(shape_size(o.shape) for o in operands))
        if op in ("all-gather", "all-gather-start"):
            # GPU, over n ranks: the gathered output's n-th part written 2n - 1 times and read n times (of a
            # start: its tuple's outputs, not element 0, the operands)
            n = self._ranks(ins)
            part = _array_bytes(ins.shape, skip=0 if op == "all-gather-start" else None) // n
            return Cost(0.0, float(part * (2 * n - 1) + part * n))
        if op == "all-reduce-start":  # its reduction as all-reduce's; bytes: what it transfers, the output's
            return Cost(self._reducer_flops(ins), float(_array_bytes(ins.shape)))
        if op == "reduce-scatter":  # GPU, over n ranks: its operands' n-th part written n times, read 2n - 1 times
            return self._reduce_scatter(ins, operands)
        if op == "async-start":  # the wrapped computation's FLOPs, none of its bytes (a reduce-scatter's its own)
            comp = self._called(ins)
            flops = self._computation(comp).flops
            root = self._root(comp)
            if root.opcode == "reduce-scatter":
                return self._reduce_scatter(root, self._operands(root))
            return Cost(flops, 0.0)
        if op in _DEFAULT_COLLECTIVES:  # the output's arrays (not a tuple's pointers) and the operands
            return Cost(0.0, float(_array_bytes(ins.shape) + sum(shape_size(o.shape) for o in operands)))
        if op in ("call", "while"):
            subs = [self._computation(self.computations[c]) for c in ins.called_computation_ids]
            return Cost(sum(s.flops for s in subs), sum(s.bytes for s in subs))
        if op == "conditional":
            subs = [self._computation(self.computations[c]) for c in ins.called_computation_ids]
            return Cost(max((s.flops for s in subs), default=0.0), max((s.bytes for s in subs), default=0.0))
        raise ProfileError(f"module {self.label}: Profscope has no rule for the cost of XLA's '{op}' instruction "
                           f"({ins.name}), from which XProf computes its FLOPs and bytes")

    def _ranks(self, ins) -> int:
        """The ranks of a collective: its largest replica group's size (XLA's participant count)."""
        iota = _iota_groups(ins)
        if iota is not None:
            return max(int(iota.num_devices_per_group), 1)
        devices = ins.collective_device_list
        listed = devices.replica_groups if len(devices.replica_groups) else ins.replica_groups
        if not len(listed) or ins.mesh_axes_replica_group_list:  # all devices (the module config's), mesh axes
            raise ProfileError(f"module {self.label}: Profscope has no rule for the cost of XLA's '{ins.opcode}' "
                               f"instruction ({ins.name}) without replica groups")
        return max(max(len(g.replica_ids) for g in listed), 1)

    def _reduce_scatter(self, ins, operands) -> Cost:
        n = self._ranks(ins)
        part = sum(_array_bytes(o.shape) for o in operands) // n
        return Cost(self._reducer_flops(ins), float(part * n + part * (2 * n - 1)))

    def _reducer_flops(self, ins) -> float:
        """A collective's reduction: the elementwise cost of its reducer's root opcode (the reducer itself is not
        analysed) over its output's elements."""
        reducer = self._called(ins)
        root = self._root(reducer)
        return float(flops_per_element(root.opcode, ins.shape.element_type) * _elements(ins.shape))

    def _gemm_contracting(self, ins) -> list[int]:
        """The lhs contracting dimensions of a cuBLAS GEMM's GpuBackendConfig (JSON text in backend_config)."""
        try:
            config = json.loads(ins.backend_config)
            gemm = config.get("gemm_backend_config", config.get("gemmBackendConfig", {}))
            dims = gemm.get("dot_dimension_numbers", gemm.get("dotDimensionNumbers", {}))
            return [int(d) for d in dims.get("lhs_contracting_dimensions", dims.get("lhsContractingDimensions", []))]
        except (ValueError, AttributeError, TypeError):
            raise ProfileError(f"module {self.label}: the backend config of cuBLAS call {ins.name} is not XLA's "
                               "GpuBackendConfig JSON") from None

    def _convolution_flops(self, ins, operands) -> int:
        """HloCostAnalysis::GetConvolutionFlops: FMAs of the window taps that fall on input (not padding or
        dilation holes), per output element, x 2 (of a cuDNN call: its result, not its scratch buffer)."""
        lhs, rhs, out = operands[0].shape, operands[1].shape, _result(ins)
        dn = ins.convolution_dimension_numbers
        groups = max(int(ins.feature_group_count), 1)
        batch_groups = max(int(ins.batch_group_count), 1)
        in_features = int(lhs.dimensions[dn.input_feature_dimension])
        out_features = int(rhs.dimensions[dn.kernel_output_feature_dimension])
        batch = int(lhs.dimensions[dn.input_batch_dimension])
        valid = 1
        for k, wd in enumerate(ins.window.dimensions):
            in_size = int(lhs.dimensions[dn.input_spatial_dimensions[k]])
            out_size = int(out.dimensions[dn.output_spatial_dimensions[k]])
            kernel = int(rhs.dimensions[dn.kernel_spatial_dimensions[k]])
            stride, low = max(int(wd.stride), 1), int(wd.padding_low)
            wdil, bdil = max(int(wd.window_dilation), 1), max(int(wd.base_dilation), 1)
            dilated_in = (in_size - 1) * bdil + 1 if in_size else 0
            count = 0
            for o in range(out_size):
                for t in range(kernel):
                    pos = o * stride + t * wdil - low
                    if 0 <= pos < dilated_in and pos % bdil == 0:
                        count += 1
            valid *= count
        fmas = (in_features // groups) * out_features * (batch // batch_groups) * valid
        return _FMA * fmas

    def _fusion(self, ins, operands) -> Cost:
        comp = self._called(ins)
        self._computation(comp)
        by_id = {i.id: i for i in comp.instructions}
        root = self._root(comp)
        # GPU utilisation: from the root (1) back to the parameters, consumers before producers.
        order = self._post_order(comp)[::-1]
        util = {i.id: 0.0 for i in comp.instructions}
        root_util: dict[int, float] = {i.id: 0.0 for i in comp.instructions}
        roots: dict[int, set[int]] = {i.id: set() for i in comp.instructions}
        root_util[root.id] = 1.0
        for r in ([self.by_id[o] for o in root.operand_ids] if root.opcode == "tuple" else [root]):
            if r.opcode == "dynamic-update-slice":  # updated in place: its operand 0 is not read
                self.operand_util[r.id][0] = 0.0
        roots[root.id].add(root.id)
        flops = 0.0
        for i in order:
            util[i.id] = sum(root_util[r] for r in roots[i.id])
            flops += util[i.id] * self.costs[i.id].flops
            for k, o in enumerate(i.operand_ids):
                if i.opcode in ELEMENTWISE or i.opcode in ("tuple", "get-tuple-element"):
                    roots[o] |= roots[i.id]
                else:
                    roots[o].add(o)
                    u = util[i.id] * self.operand_util.get(i.id, {}).get(k, 1.0)
                    n = _elements(by_id[o].shape)
                    u = math.ceil(u * n) / n if n else 0.0
                    root_util[o] += u
        keys: dict[tuple[int, tuple], float] = {}
        self._fusion_keys[ins.id] = keys
        out = 0.0
        outputs = [(ins.shape, root)] if ins.shape.element_type != P.TUPLE else [
            (s, self.by_id[root.operand_ids[k]] if root.opcode == "tuple" else root)
            for k, s in enumerate(ins.shape.tuple_shapes)]
        for k, (shape, r) in enumerate(outputs):
            if shape.element_type in (P.TUPLE, P.TOKEN):
                raise ProfileError(f"module {self.label}: Profscope has no rule for the cost of fusion {ins.name} "
                                   "with nested tuple outputs")
            size = shape_size(self.by_id[r.operand_ids[1]].shape if r.opcode == "dynamic-update-slice" else shape)
            out += size
            keys[(-1, (k,) if ins.shape.element_type == P.TUPLE else ())] = float(size)
        keys[(-1, ())] = out
        read = 0.0
        params = sorted((i for i in comp.instructions if i.opcode == "parameter"), key=lambda i: i.parameter_number)
        for p in params:
            if p.shape.element_type == P.TUPLE:
                raise ProfileError(f"module {self.label}: Profscope has no rule for the cost of fusion {ins.name} "
                                   "with a tuple parameter")
            keys[(p.parameter_number, ())] = shape_size(p.shape) * min(util[p.id], 1.0)
            read += keys[(p.parameter_number, ())]
        return Cost(flops, out + read)

    def _post_order(self, comp) -> list:
        """The computation's instructions, operands before their users (XLA's MakeInstructionPostOrder)."""
        by_id = {i.id: i for i in comp.instructions}
        seen: set[int] = set()
        order: list = []
        for start in comp.instructions:
            if start.id in seen:
                continue
            stack = [(start, 0)]
            while stack:
                node, k = stack.pop()
                if k == 0 and node.id in seen:
                    continue
                if k < len(node.operand_ids):
                    stack.append((node, k + 1))
                    child = by_id.get(node.operand_ids[k])
                    if child is not None and child.id not in seen:
                        stack.append((child, 0))
                else:
                    if node.id not in seen:
                        seen.add(node.id)
                        order.append(node)
        return order

    # ------------------------------------------------------------ category and text

    @_damaged_module_says_so
    def category(self, name: str) -> str:
        ins = self.by_name[name]
        op = ins.opcode
        if op in _DATA_FORMATTING:
            return "data formatting"
        if op == "convolution":
            dn = ins.convolution_dimension_numbers
            groups = int(ins.feature_group_count) or 1
            if groups > 1 and int(ins.shape.dimensions[dn.output_feature_dimension]) == groups:
                return "depthwise convolution"
            dims = ins.window.dimensions
            return ("convolution" + (" base-dilated" if any(d.base_dilation > 1 for d in dims) else "")
                    + (" window-dilated" if any(d.window_dilation > 1 for d in dims) else ""))
        if op == "fusion":
            return _FUSION_KINDS.get(ins.fusion_kind, "fusion")
        if op in ELEMENTWISE:
            return "non-fusion elementwise"
        return op

    @_damaged_module_says_so
    def expression(self, name: str) -> str:
        """HloInstruction::ToString as XProf prints it (no metadata or backend config; operand shapes)."""
        ins = self.by_name[name]
        # XLA marks every fifth operand with its index.
        operands = ", ".join((f"/*index={k}*/" if k and k % 5 == 0 else "") + f"{shape_string(o.shape)} %{o.name}"
                             for k, o in enumerate(self._operands(ins)))
        opcode, attrs = ins.opcode, self._attributes(ins)
        if opcode in ("async-start", "async-update", "async-done"):
            # XLA's sugar: the wrapped instruction's opcode with -start/-update/-done, the start with its attributes
            wrapped = self._wrapped(ins)
            opcode = wrapped.opcode + opcode[len("async"):]
            if ins.opcode == "async-start":
                attrs = self._attributes(wrapped, frontend=False) + attrs
        text = f"%{ins.name} = {shape_string(ins.shape)} {opcode}({operands})"
        return text + "".join(", " + a for a in attrs)

    def _wrapped(self, ins):
        """The instruction an async-start (or the update or done it leads to) wraps, when XLA prints it so: its
        computation one instruction over its parameters, run on the main thread."""
        start = ins
        while start.opcode != "async-start" and start.operand_ids:
            start = self.by_id[start.operand_ids[0]]
        comp = self.computations.get(start.called_computation_ids[0]) if start.called_computation_ids else None
        root = next((i for i in comp.instructions if i.id == comp.root_id), None) if comp else None
        params = [i for i in comp.instructions if i.opcode == "parameter"] if comp else []
        if root is None or len(comp.instructions) != len(params) + 1 or start.async_execution_thread not in (
                "", "main") or [self.by_id[o].parameter_number for o in root.operand_ids] != list(range(len(params))):
            raise ProfileError(f"module {self.label}: Profscope cannot print XLA's '{ins.opcode}' instruction "
                               f"({ins.name}) as XProf's HLO text shows it")
        return root

    def _attributes(self, ins, frontend: bool = True) -> list[str]:
        op = ins.opcode
        if op in _UNPRINTED:
            raise ProfileError(f"module {self.label}: Profscope cannot print XLA's '{op}' instruction ({ins.name}) "
                               "as XProf's HLO text shows it")
        out: list[str] = []
        names = [self.computations[c].name for c in ins.called_computation_ids]
        if op in _COLLECTIVES:
            if ins.mesh_axes_replica_group_list:  # newer XLA's mesh axes: not printed here
                raise ProfileError(f"module {self.label}: Profscope cannot print XLA's '{op}' instruction "
                                   f"({ins.name}) with replica groups of mesh axes")
            out += _collective_attributes(ins)
        if op == "rng-get-and-update-state":
            out.append(f"delta={ins.delta}")
        if op == "slice":
            out.append("slice={" + ", ".join(
                f"[{d.start}:{d.limit}" + (f":{d.stride}" if d.stride != 1 else "") + "]"
                for d in ins.slice_dimensions) + "}")
        if op in ("broadcast", "reduce", "transpose", "reverse", "sort", "concatenate"):
            out.append("dimensions={" + ",".join(str(d) for d in ins.dimensions) + "}")
        if op == "dynamic-slice":
            out.append("dynamic_slice_sizes={" + ",".join(str(d) for d in ins.dynamic_slice_sizes) + "}")
        if op == "convolution" or (op == "custom-call" and ins.HasField("convolution_dimension_numbers")):
            if len(ins.window.dimensions):
                out.append("window={" + _window(ins.window) + "}")
            out.append("dim_labels=" + _dim_labels(ins.convolution_dimension_numbers,
                                                   len(_result(ins).dimensions)))
            if ins.feature_group_count > 1:
                out.append(f"feature_group_count={ins.feature_group_count}")
            if ins.batch_group_count > 1:
                out.append(f"batch_group_count={ins.batch_group_count}")
        if op == "dot":
            d = ins.dot_dimension_numbers
            for label, dims in (("lhs_batch_dims", d.lhs_batch_dimensions),
                                ("lhs_contracting_dims", d.lhs_contracting_dimensions),
                                ("rhs_batch_dims", d.rhs_batch_dimensions),
                                ("rhs_contracting_dims", d.rhs_contracting_dimensions)):
                if len(dims):
                    out.append(f"{label}={{" + ",".join(str(x) for x in dims) + "}")
        if op == "compare":
            out.append(f"direction={ins.comparison_direction}")
        if op == "sort" and ins.is_stable:
            out.append("is_stable=true")
        if op == "custom-call":
            out += _custom_call_attributes(ins)
        if op == "fusion":
            out.append(f"kind={ins.fusion_kind}")
            out.append("calls=" + ", ".join(f"%{n}" for n in names))
        elif op == "while":
            out.append(f"condition=%{names[1]}, body=%{names[0]}")  # XLA keeps the body first
        elif op in ("call", "reduce", "sort", "map", "all-reduce", "all-reduce-start", "reduce-scatter",
                    "reduce-window", "scatter"):
            out.append("to_apply=" + ", ".join(f"%{n}" for n in names))
        elif op == "conditional":
            if self._operands(ins)[0].shape.element_type == P.PRED:
                out.append(f"true_computation=%{names[0]}, false_computation=%{names[1]}")
            else:
                out.append("branch_computations={" + ", ".join(f"%{n}" for n in names) + "}")
        elif op == "get-tuple-element":
            out.append(f"index={ins.tuple_index}")
        elif names and op != "async-start":  # an async start prints its wrapped instruction's attributes
            raise ProfileError(f"module {self.label}: Profscope cannot print XLA's '{op}' instruction ({ins.name})")
        if op == "get-tuple-element" and out[-1] != f"index={ins.tuple_index}":
            out.append(f"index={ins.tuple_index}")
        fa = ins.frontend_attributes.map
        if len(fa) and frontend:
            out.append("frontend_attributes={" + ",".join(f'{k}="{fa[k]}"' for k in sorted(fa)) + "}")
        return out


def _result(ins):
    """An instruction's result shape: of a cuBLAS or cuDNN call returning (result, workspace), the first."""
    return ins.shape.tuple_shapes[0] if ins.shape.element_type == P.TUPLE and ins.opcode == "custom-call" \
        else ins.shape


def _dot_flops(lhs, out, contracting) -> float:
    """HloCostAnalysis::GetDotFlops: 2 x output elements x contracted elements."""
    width = math.prod(int(lhs.dimensions[k]) for k in contracting)
    return float(_FMA * _array_elements(out) * width)


def _transpose_is_bitcast(ins, operand) -> bool:
    """ShapeUtil::TransposeIsBitcast: the same element type and bytes in the same physical order (the output's
    minor-to-major dimensions mapped through the permutation are the operand's)."""
    a, b = operand.shape, ins.shape
    if not (a.HasField("layout") and b.HasField("layout")) or a.element_type != b.element_type:
        return False
    if len(a.layout.tiles) or len(b.layout.tiles):
        return False
    perm = list(ins.dimensions)
    return [perm[d] for d in b.layout.minor_to_major] == list(a.layout.minor_to_major)


def _array_bytes(shape, skip: int | None = None) -> int:
    """The sizes of a shape's array leaves (without those under tuple element `skip`)."""
    return sum(shape_size(leaf) for ix, leaf in _leaves(shape) if not (ix and ix[0] == skip)
               and leaf.element_type not in (P.TUPLE, P.TOKEN, P.OPAQUE_TYPE))


def _leaves(shape, index: tuple = ()):
    """(shape index, array shape) of each leaf of a shape (ShapeUtil's leaf indices)."""
    if shape.element_type == P.TUPLE:
        for k, sub in enumerate(shape.tuple_shapes):
            yield from _leaves(sub, index + (k,))
    else:
        yield index, shape


def _memory_space(shape) -> int:
    return int(shape.layout.memory_space) if shape.HasField("layout") else -1


def _collective_attributes(ins) -> list[str]:
    """A collective's attributes as XLA prints them: channel, replica groups (or source-target pairs), the
    all-gather's dimension before its global device ids, a reduce-scatter's (or all-to-all's) after them."""
    out = [f"channel_id={ins.channel_id}"] if ins.channel_id else []
    if ins.opcode.startswith("collective-permute"):
        pairs = ",".join(f"{{{p.source},{p.target}}}" for p in ins.source_target_pairs)
        return out + ["source_target_pairs={" + pairs + "}"]
    devices = ins.collective_device_list
    iota = _iota_groups(ins)
    if iota is not None:
        groups = (f"[{iota.num_replica_groups},{iota.num_devices_per_group}]<=["
                  + ",".join(str(d) for d in iota.iota_reshape_dims) + "]")
        perm = list(iota.iota_transpose_perm)
        if perm and perm != sorted(perm):
            groups += "T(" + ",".join(str(d) for d in perm) + ")"
    else:
        listed = devices.replica_groups if len(devices.replica_groups) else ins.replica_groups
        groups = "{" + ",".join("{" + ",".join(str(r) for r in g.replica_ids) + "}" for g in listed) + "}"
    out.append("replica_groups=" + groups)
    dimensions = "dimensions={" + ",".join(str(d) for d in ins.dimensions) + "}"
    if ins.opcode.startswith("all-gather"):
        out.append(dimensions)
    if ins.use_global_device_ids:
        out.append("use_global_device_ids=true")
    if ins.opcode == "reduce-scatter" or (ins.opcode == "all-to-all" and len(ins.dimensions)):
        out.append(dimensions)
    return out


def _iota_groups(ins):
    """A collective's replica groups as an iota list (XLA's `[groups,size]<=[dims]T(perm)`), if so written: in
    its collective device list or, by newer XLA, a field of its own."""
    if ins.HasField("iota_collective_device_list"):
        return ins.iota_collective_device_list
    devices = ins.collective_device_list
    return devices.iota_replica_group_list if devices.HasField("iota_replica_group_list") else None


def _custom_call_attributes(ins) -> list[str]:
    """A custom call's attributes as XLA prints them: its target, layout constraints, side effect, the outputs
    aliasing operands, and its API version unless the original one."""
    out = ['custom_call_target="' + ins.custom_call_target.encode("unicode_escape").decode().replace('"', '\\"')
           + '"']
    if ins.constrain_layout:
        out.append("operand_layout_constraints={" + ", ".join(shape_string(s) for s in ins.operand_shapes_with_layout)
                   + "}")
    if ins.custom_call_has_side_effect:
        out.append("custom_call_has_side_effect=true")
    if len(ins.output_operand_aliasing):
        index = lambda ix: "{" + ",".join(str(i) for i in ix) + "}"  # noqa: E731
        out.append("output_to_operand_aliasing={" + ", ".join(
            f"{index(a.output_shape_index)}: ({a.operand_index}, {index(a.operand_shape_index)})"
            for a in ins.output_operand_aliasing) + "}")
    if ins.custom_call_api_version != P.API_VERSION_ORIGINAL:
        out.append("api_version=" + P.CustomCallApiVersion.Name(ins.custom_call_api_version))
    return out


def _reduce_window_count(ins, operands) -> int:
    """HloCostAnalysis's reductions of a reduce-window: window size - 1 per output element, or for a window that
    reduces one padded dimension and spreads it back (a reduce then a broadcast) that dimension's size - 1 plus
    one per output row."""
    dims = ins.window.dimensions
    window = math.prod(int(d.size) for d in dims)
    shape = ins.shape.tuple_shapes[0] if ins.shape.element_type == P.TUPLE else ins.shape
    out = _array_elements(shape)
    count = (window - 1) * out
    reduced = [d for d in dims if d.size != 1]
    padded = [d for d in dims if d.padding_low or d.padding_high]
    if len(reduced) == 1 and len(padded) == 1 and ins.shape.element_type != P.TUPLE:
        for k, d in enumerate(dims):
            if d.size != 1 and d.padding_low and d.padding_low == d.padding_high and d.size == 2 * d.padding_low + 1:
                if d.padding_low == int(ins.shape.dimensions[k]) - 1:
                    size = int(ins.shape.dimensions[k])
                    count = out // size + size - 1
                break
    return count


def _window(window) -> str:
    dims = window.dimensions
    parts = ["size=" + "x".join(str(d.size) for d in dims)]
    if any(d.stride != 1 for d in dims):
        parts.append("stride=" + "x".join(str(d.stride) for d in dims))
    if any(d.padding_low or d.padding_high for d in dims):
        parts.append("pad=" + "x".join(f"{d.padding_low}_{d.padding_high}" for d in dims))
    if any(d.base_dilation not in (0, 1) for d in dims):
        parts.append("lhs_dilate=" + "x".join(str(d.base_dilation) for d in dims))
    if any(d.window_dilation not in (0, 1) for d in dims):
        parts.append("rhs_dilate=" + "x".join(str(d.window_dilation) for d in dims))
    if any(d.window_reversal for d in dims):
        parts.append("rhs_reversal=" + "x".join(str(int(d.window_reversal)) for d in dims))
    return " ".join(parts)


def _dim_labels(dn, rank: int) -> str:
    """ConvolutionDimensionNumbersToString: b/f and 0,1,... for spatial dimensions, per tensor."""
    def labels(n, batch, feature, spatial, b="b", f="f"):
        out = ["?"] * n
        out[batch] = b
        out[feature] = f
        for k, d in enumerate(spatial):
            out[d] = str(k)
        return "".join(out)

    lhs = labels(rank, dn.input_batch_dimension, dn.input_feature_dimension, dn.input_spatial_dimensions)
    rhs = labels(rank, dn.kernel_input_feature_dimension, dn.kernel_output_feature_dimension,
                 dn.kernel_spatial_dimensions, "i", "o")
    res = labels(rank, dn.output_batch_dimension, dn.output_feature_dimension, dn.output_spatial_dimensions)
    return f"{lhs}_{rhs}->{res}"
