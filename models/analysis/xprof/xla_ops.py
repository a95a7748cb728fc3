"""XProf 2.24.2's device op metrics of XLA ops on GPU planes
(ConvertDeviceTraceXPlaneToOpMetricsDb) of GPU planes with XLA ops, the
kernels of TensorFlow ops beside them included: events with `hlo_op`,
`hlo_module` and `program_id` whose instruction (the last name of hlo_op)
is in the module of that program, each one occurrence. Each op, keyed by
(program id, instruction), takes its category, framework op (metadata
op_name:op_type), text and source from the module's HloProto and its FLOPs
and bytes per occurrence from XLA's GPU cost analysis (hlo_cost.py); a
TensorFlow kernel's row is device_op_metrics.py's, without costs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the modules (and protobuf) load where device ops are read, not for `rates`
    from profscope.models.analysis.xprof.hlo import SourceInfo


@dataclass
class XlaOpMetrics:
    """One row per (program id, HLO instruction), and per TensorFlow kernel beside them (program 0, `<tf op
    name>/<kernel>`, no costs), in XProf's insertion order."""

    program_id: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    category: list[str] = field(default_factory=list)
    provenance: list[str] = field(default_factory=list)
    expression: list[str] = field(default_factory=list)
    source: list[SourceInfo | None] = field(default_factory=list)
    occurrences: list[int] = field(default_factory=list)
    time_ps: list[int] = field(default_factory=list)
    flops: list[float] = field(default_factory=list)  # totals over the occurrences
    bytes: list[float] = field(default_factory=list)
    hbm_bytes: list[float] = field(default_factory=list)
    total_time_ps: int = 0
    program_names: dict[int, str] = field(default_factory=dict)  # XProf's program names: "<module>(<id>)"

    def __len__(self) -> int:
        return len(self.name)


class XlaModules:
    """A session's modules by program id, each with its cost analysis, loaded on first use."""

    def __init__(self, paths: list) -> None:
        from profscope.models.analysis.xprof.hlo_source import ModuleSource

        self._source = ModuleSource(paths)
        self._by_program: dict[int, object] = {}

    def label(self, program_id: int) -> str | None:
        """XProf's name of a program ("<module>(<id>)"), without loading its module; None without one."""
        return next((n for n in self._source.names() if n.endswith(f"({program_id})")), None)

    def get(self, program_id: int):
        from profscope.models.analysis.xprof.hlo import Module
        from profscope.models.analysis.xprof.hlo_cost import ModuleCosts

        if program_id not in self._by_program:
            name = self.label(program_id)
            if name is None:
                self._by_program[program_id] = None
            else:
                proto = self._source.load(name)
                self._by_program[program_id] = (ModuleCosts(proto, name), Module(proto).instructions)
        return self._by_program[program_id]


def xla_op_metrics(d, modules: XlaModules) -> XlaOpMetrics:
    """The device op metrics of a GPU plane's events (device_op_metrics.DeviceEvents) by XProf 2.24.2's one
    builder (device_op_metrics.event_kinds says what each event is): an XLA op whose (program, instruction) its
    module has is a row per (program, instruction), a TensorFlow op's kernel a row per `<tf op name>/<kernel>`
    (program 0, the TF op's type, no costs); other events are skipped. Every event is one occurrence (XProf
    2.24.2 merges no consecutive events of one instruction), rows in the order of their first event; costs per
    occurrence from the module's analysis."""
    from profscope.models.analysis.xprof.device_op_metrics import distinct_rows, event_kinds
    from profscope.models.analysis.xprof.op_stats import parse_tf_op

    out = XlaOpMetrics()
    if not len(d.rows):
        return out
    out.total_time_ps = int((d.start + d.duration).max() - d.start.min())
    xla, tf, program, last = event_kinds(d)
    hlo_code, _ = d.strings("hlo_op")
    tf_code, table = d.strings("tf_op")
    mids = d.metadata_ids()
    idx = np.flatnonzero(xla | tf)
    if not len(idx):
        return out
    # Each distinct event kind once: an XLA op's (program, hlo_op), a TF kernel's (kernel name, tf_op).
    x = xla[idx]
    first, combo = distinct_rows([x, np.where(x, program[idx], 0), np.where(x, hlo_code[idx], 0),
                                  np.where(x, 0, mids[idx]), np.where(x, 0, tf_code[idx])])
    keys: list[tuple[int, str] | None] = []  # XProf's row key (program id, name); None: skipped
    first_events = idx[first]  # each combination's first event
    for e in first_events.tolist():
        if xla[e]:
            pid, name = int(program[e]), last[int(hlo_code[e])]
            found = modules.get(pid)
            keys.append((pid, name) if found is not None and found[0].cost(name) is not None else None)
        else:
            keys.append((0, f"{parse_tf_op(table[int(tf_code[e])])[1]}/{d.name_of(int(mids[e]))}"))
    slot_of_key: dict[tuple[int, str], int] = {}
    combo_slot = np.array([-1 if k is None else slot_of_key.setdefault(k, len(slot_of_key)) for k in keys], np.int64)
    event_slot = combo_slot[combo]
    keep = event_slot >= 0
    idx, event_slot, combo = idx[keep], event_slot[keep], combo[keep]
    if not len(idx):
        return out
    seen, first_event = np.unique(event_slot, return_index=True)
    order = seen[np.argsort(first_event, kind="stable")]  # rows in the order of their first event
    rank = np.zeros(len(slot_of_key), np.int64)
    rank[order] = np.arange(len(order))
    event_slot = rank[event_slot]
    occurrences = np.bincount(event_slot, minlength=len(order))
    time = np.zeros(len(order), np.int64)
    np.add.at(time, event_slot, d.duration[idx])
    combo_of_slot = combo[np.unique(event_slot, return_index=True)[1]]  # each row's first event's combination
    for s in range(len(order)):
        e = int(first_events[combo_of_slot[s]])
        pid, name = keys[int(combo_of_slot[s])]  # type: ignore[misc]
        n = int(occurrences[s])
        if xla[e]:
            found = modules.get(pid)
            _add_op(out, pid, name, found)
            costs = found[0].cost(name)
            out.flops[s] = max(costs.flops, 0) * n
            out.bytes[s] = max(costs.bytes, 0) * n
            out.hbm_bytes[s] = max(costs.hbm_bytes, 0) * n
        else:
            tf_op = table[int(tf_code[e])]
            _add_row(out, 0, name, parse_tf_op(tf_op)[2], tf_op, "", None)
            label = modules.label(0)  # a TF kernel's program 0 is named by a module of that id, if any
            if label is not None:
                out.program_names[0] = label
        out.occurrences[s], out.time_ps[s] = n, int(time[s])
    return out


def combine_xla_ops(parts: list[XlaOpMetrics]) -> XlaOpMetrics:
    """Several GPU planes' rows as one (XProf's CombineOpMetricsDb): rows of one key (program, instruction or
    TF kernel) summed, in the order of their first plane's; the planes' spans summed."""
    if len(parts) == 1:
        return parts[0]
    out = XlaOpMetrics()
    at: dict[tuple[int, str], int] = {}
    for part in parts:
        out.total_time_ps += part.total_time_ps
        out.program_names.update(part.program_names)
        for r in range(len(part)):
            key = (part.program_id[r], part.name[r])
            k = at.setdefault(key, len(out))
            if k == len(out):
                for column in ("program_id", "name", "category", "provenance", "expression", "source"):
                    getattr(out, column).append(getattr(part, column)[r])
                for column in ("occurrences", "time_ps", "flops", "bytes", "hbm_bytes"):
                    getattr(out, column).append(getattr(part, column)[r])
                continue
            for column in ("occurrences", "time_ps", "flops", "bytes", "hbm_bytes"):
                getattr(out, column)[k] += getattr(part, column)[r]
    return out


def _add_op(out: XlaOpMetrics, pid: int, name: str, found) -> None:
    costs, instructions = found
    out.program_names[pid] = costs.label
    row = next(r for r in range(len(instructions.name_code)) if instructions.name(r) == name)
    ins = costs.by_name[name]
    op_name, op_type = ins.metadata.op_name, ins.metadata.op_type
    _add_row(out, pid, name, costs.category(name), f"{op_name}:{op_type}" if op_name else "",  # TfOpFullname
             costs.expression(name), instructions.op_name_and_source(row)[1])


def _add_row(out: XlaOpMetrics, pid: int, name: str, category: str, provenance: str, expression: str,
             source) -> None:
    out.program_id.append(pid)
    out.name.append(name)
    out.category.append(category)
    out.provenance.append(provenance)
    out.expression.append(expression)
    out.source.append(source)
    out.occurrences.append(0)
    out.time_ps.append(0)
    out.flops.append(0.0)
    out.bytes.append(0.0)
    out.hbm_bytes.append(0.0)


def xla_op_db(ops: XlaOpMetrics):
    """The XLA ops as XProf's device op metrics db (OpMetricsDb: name, HLO category, framework op as
    provenance, costs), IDLE last: the device's span less the ops' time."""
    from profscope.models.analysis.xprof.op_stats import IDLE, OpMetricsDb

    time = np.array(ops.time_ps + [0], np.int64)
    op_time = int(time.sum())
    time[-1] = max(ops.total_time_ps - op_time, 0)
    return OpMetricsDb(ops.name + [IDLE], ops.category + [IDLE], np.array(ops.occurrences + [0], np.int64), time,
                       time.copy(), np.zeros(len(ops) + 1, bool), ops.total_time_ps, op_time,
                       ops.provenance + [""], np.array(ops.flops + [0.0]), np.array(ops.bytes + [0.0]),
                       np.array(ops.hbm_bytes + [0.0]))


@dataclass
class Rates:
    """XProf's roofline metrics of an op record (SetRooflineMetrics, as on a GPU)."""

    flop_rate: float  # GFLOP/s
    memory_bw: float  # GiB/s, all bytes
    hbm_bw: float  # GiB/s
    intensity: float  # FLOPs per byte
    hbm_intensity: float
    bound_by: str
    bottleneck_intensity: float
    flops_util: float  # of the peak FLOP rate
    hbm_util: float  # of the peak HBM bandwidth


def rates(flops: float, nbytes: float, hbm: float, time_ps: int, roofs) -> Rates:
    """The rates of an op record from its FLOPs, bytes and HBM bytes (an op without XLA's per-memory breakdown,
    hbm 0, counts all its bytes) against the GPU's roofs (device_op_metrics.GpuRoofs): bound by the resource
    most used, Compute, then HBM, then the SMs' shared memory; Unknown where none is."""
    ns = time_ps / 1e3
    hbm = hbm or nbytes
    flop_rate = flops / ns if ns else 0.0
    memory_bw = nbytes / ns / 1.073741824 if ns else 0.0
    hbm_bw = hbm / ns / 1.073741824 if ns else 0.0
    intensity = flops / nbytes if nbytes else 0.0
    hbm_intensity = flops / hbm if hbm else 0.0
    peak_hbm = roofs.hbm_bytes_per_s / 2**30 if roofs is not None else 0.0
    peak_shm = roofs.shared_bytes_per_s / 2**30 if roofs is not None else 0.0
    flops_util = flop_rate / roofs.peak_gflops if roofs is not None and roofs.peak_gflops else 0.0
    hbm_util = hbm_bw / peak_hbm if peak_hbm else 0.0
    bound, best, bottleneck = "Unknown", 0.0, 0.0
    for name, util, oi in (("Compute", flops_util, intensity), ("HBM", hbm_util, hbm_intensity),
                           ("Shm/L1", hbm_bw / peak_shm if peak_shm else 0.0, hbm_intensity)):
        if util > best:
            bound, best, bottleneck = name, util, oi
    return Rates(flop_rate, memory_bw, hbm_bw, intensity, hbm_intensity, bound, bottleneck, flops_util, hbm_util)


def may_have_inner_ops(category: str) -> bool:
    """XProf's MayHaveInnerOps: ops whose time holds other ops' (their costs are those ops')."""
    return category in ("call", "conditional", "while", "megacore fusion")


def source_cell(source) -> str:
    """XProf's Source Info cell: the file and line, the stack frames as its title; empty without a source."""
    if source is None:
        return ""
    frames = "".join(f"{f}\n" for f in source.stack_frame.split("\n")) if source.stack_frame else ""
    return f"<div class='source-info-cell' title='{frames}'>{source.file_name}:{source.line_number}</div>"
