"""XProf's device op metrics of TensorCore planes (ConvertTpuDeviceTraceXPlaneToOpMetricsDb as XProf 2.24.2
gives them): the `XLA Ops` line's events whose metadata names their program_id and symbol_id, one row per
(program, symbol): the HLO op's name (its display name, if any), its category (hlo_category), framework op
(tf_op), occurrences, time, self time (less the ops directly inside it) and FLOPs, model FLOPs, bytes and bytes
by memory space and read/write (the metadata's per-run flops, model_flops, bytes_accessed and
memory_access_breakdown times the runs). The device's time is each core's span (steps and ops), IDLE the rest.
These are per-op metadata of the TPU profiler, not XLA's cost analysis.

Also the device's peaks (XProf's perf env of a TPU plane) and XProf's roofline figures of an op or a group
(SetRooflineMetrics), which framework_op_stats, hlo_stats and tpu_profile.py's roofline share.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from profscope.models.analysis.xprof.tpu_steps import (
    OP_LINE,
    STEP_LINE,
    _line_rows,
    _self_times,
    _unique_ids,
    tensor_cores,
)
from profscope.models.formats.xspace.xplane import XSpaceData, span_text

# Memory spaces of an op's memory_access_breakdown (XProf's PerformanceInfo.MemoryAccessed): 0 unknown, 1 HBM,
# 2 CMEM, 3 VMEM; any other on-chip space counts as unknown. Operation types: 0 unknown, 1 read, 2 write.
HBM, CMEM, VMEM = 1, 2, 3
READ, WRITE = 1, 2
GIB = 1.073741824  # GB in a GiB
BANDWIDTH_STATS = ("peak_hbm_bw_gigabytes_per_second", "peak_sram_rd_bw_gigabytes_per_second",
                   "peak_sram_wr_bw_gigabytes_per_second", "peak_cmem_rd_bw_gigabytes_per_second",
                   "peak_cmem_wr_bw_gigabytes_per_second", "peak_vmem_rd_bw_gigabytes_per_second",
                   "peak_vmem_wr_bw_gigabytes_per_second")
HBM_RW, SRAM_RD, SRAM_WR, CMEM_RD, CMEM_WR, VMEM_RD, VMEM_WR = range(7)  # XProf's MemBwType


@dataclass
class TpuOps:
    """One row per (program id, symbol id), first-seen order, and the device's time."""

    name: list[str]
    category: list[str]
    framework: list[str]  # tf_op ("" when the metadata has none)
    occurrences: np.ndarray
    time_ps: np.ndarray
    self_ps: np.ndarray
    flops: np.ndarray  # float64
    bytes: np.ndarray  # float64
    program: list[int]
    total_ps: int = 0
    long_name: list[str] = field(default_factory=list)  # the metadata's name where a display name is the name
    # Per run, as the metadata gives them (times the runs in a db): FLOPs, model FLOPs (FLOPs without them), bytes
    # and bytes by memory space and operation (n, 4, 3); has_breakdown: the metadata has memory_access_breakdown.
    per_run: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    per_run_memory: np.ndarray = field(default_factory=lambda: np.zeros((0, 4, 3)))
    has_breakdown: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    # id(XSpaceData) -> (its op event rows, sorted; their row in this table): per-step op metrics (step_db).
    slots: dict[int, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict)
    deduplicated: list[str] = field(default_factory=list)  # deduplicated_name: the op it is a duplicate of
    # source_stack: the op's source lines (XProf 2.24.2 reads no source_info stat: no file or line of its own)
    source_stack: list[str] = field(default_factory=list)
    fused: list[list[FusedOp]] = field(default_factory=list)  # the instructions fused into each (child_id)
    # A GPU's ops beside (tpu_profile.with_other_ops): which rows they are (their time is not normalized), and
    # their sources (hlo.SourceInfo or None) and the roofline's Source Info cell of each row.
    gpu: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    source_info: list = field(default_factory=list)
    source: list[str] = field(default_factory=list)

    @property
    def op_ps(self) -> int:
        return int(self.self_ps.sum())

    def __len__(self) -> int:
        return len(self.name)

    @property
    def model_flops(self) -> np.ndarray:
        return self.per_run[:, 1] * self.occurrences

    @property
    def memory(self) -> np.ndarray:
        return self.per_run_memory * self.occurrences[:, None, None]


def _breakdown(buf, span) -> np.ndarray:
    """A MemoryAccessBreakdown's bytes by memory space and operation type (4 x 3)."""
    from profscope.models.core import _protowire as wire

    out = np.zeros((4, 3))
    o, n = (int(x) for x in span)
    (accessed,) = wire.find_fields(buf, o, o + n, [1])  # MemoryAccessBreakdown.memory_accessed
    if len(accessed):
        for kind, space, size in zip(*(a.tolist() for a in wire.decode_messages(buf, accessed, [(1, "i"), (2, "i"),
                                                                                              (3, "i")]))):
            out[space if 0 <= space < 4 else 0, kind if 0 <= kind < 3 else 0] += size
    return out


def _metadata(space: XSpaceData, plane: int, mids: list[int]) -> dict[int, dict[str, object]]:
    """The named stats of event metadata (program_id, symbol_id, hlo_category, tf_op, flops, model_flops,
    bytes_accessed, memory_access_breakdown, deduplicated_name, source_stack) and its child_id (fused ops)."""
    from profscope.models.core import _protowire as wire
    from profscope.protos import xplane_pb2

    p = space.planes[plane]
    out: dict[int, dict[str, object]] = {}
    for mid in mids:
        found: dict[str, object] = {}
        for o, n in p.event_metadata.get(mid, ("", "", []))[2]:
            if len(wire.find_fields(space.buf, o, o + n, [6])[0]):  # XEventMetadata.child_id
                found["child_id"] = list(xplane_pb2.XEventMetadata.FromString(bytes(space.buf[o : o + n])).child_id)
            (stats,) = wire.find_fields(space.buf, o, o + n, [5])  # XEventMetadata.stats
            if not len(stats):
                continue
            fields = [(1, "i"), (3, "i"), (4, "i"), (7, "i"), (5, "s"), (2, "d"), (6, "s")]
            for sid, u, i, ref, text, dbl, raw in zip(*wire.decode_messages(space.buf, stats, fields)):
                name = p.stat_names.get(int(sid), "")
                if name in ("hlo_category", "tf_op", "deduplicated_name", "source_stack"):
                    found[name] = p.stat_names.get(int(ref), "") if ref else span_text(space.buf, text)
                elif name in ("program_id", "symbol_id", "flops", "model_flops", "bytes_accessed"):
                    found[name] = int(u) or int(i) or float(dbl)
                elif name == "memory_access_breakdown":
                    found[name] = _breakdown(space.buf, raw)
        out[mid] = found
    return out


@dataclass
class FusedOp:
    """An instruction fused into an op (its metadata's child_id), as its own metadata gives it (per run)."""

    name: str
    long_name: str
    program: int
    category: str
    provenance: str
    stack: str
    flops: float
    model: float  # model_flops (0 without: XProf scales no fused op's)
    bytes: float
    memory: np.ndarray
    breakdown: bool
    children: list[FusedOp]


def _fused(space: XSpaceData, plane: int, ids: list[int], seen: frozenset[int] = frozenset()) -> list[FusedOp]:
    """The fused ops of metadata child ids, depth first (a cycle is cut)."""
    p = space.planes[plane]
    meta = _metadata(space, plane, [i for i in ids if i not in seen])
    out = []
    for mid, m in meta.items():
        label, display = p.event_metadata.get(mid, ("", "", []))[:2]
        memory = m.get("memory_access_breakdown")
        out.append(FusedOp(display or label, label if display else "", int(m.get("program_id", 0)),  # type: ignore
                           str(m.get("hlo_category", "")), str(m.get("tf_op", "")), str(m.get("source_stack", "")),
                           float(m.get("flops", 0)), float(m.get("model_flops", 0)),  # type: ignore[arg-type]
                           float(m.get("bytes_accessed", 0)),  # type: ignore[arg-type]
                           memory if isinstance(memory, np.ndarray) else np.zeros((4, 3)), memory is not None,
                           _fused(space, plane, list(m.get("child_id", [])), seen | {mid})))  # type: ignore
    return out


def tpu_op_metrics(spaces: list[XSpaceData]) -> TpuOps:
    keys: dict[tuple[int, int], int] = {}
    name: list[str] = []
    long_name: list[str] = []
    category: list[str] = []
    dedup: list[str] = []
    stacks: list[str] = []
    fused: list[list[FusedOp]] = []
    framework: list[str] = []
    per_run: list[tuple[float, float, float]] = []
    memory: list[np.ndarray] = []
    breakdown: list[bool] = []
    slots, durations, selfs = [], [], []
    rows: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    total = 0
    for space in spaces:
        for plane in tensor_cores(space):
            ops = _line_rows(space, plane, OP_LINE)
            span_rows = np.concatenate([_line_rows(space, plane, STEP_LINE), ops])
            if len(span_rows):
                b = space.start_ps(span_rows)
                total += int((b + space.events.duration_ps[span_rows].astype(np.int64)).max() - b.min())
            if not len(ops):
                continue
            begin = space.start_ps(ops)
            end = begin + space.events.duration_ps[ops].astype(np.int64)
            own = _self_times(begin, end)
            mids, which = _unique_ids(space.events.metadata_id[ops].astype(np.int64))
            first = np.full(len(mids), len(which), np.int64)
            np.minimum.at(first, which, np.arange(len(which)))
            meta = _metadata(space, plane, mids.tolist())
            slot_of = np.full(len(mids), -1, np.int64)
            for k in np.argsort(first, kind="stable").tolist():  # in the order the events first use them
                mid = int(mids[k])
                m = meta[mid]
                if "program_id" not in m or "symbol_id" not in m:
                    continue  # XProf's op metrics need both
                key = (int(m["program_id"]), int(m["symbol_id"]))  # type: ignore[call-overload]
                if key not in keys:
                    keys[key] = len(keys)
                    label, display = space.planes[plane].event_metadata.get(mid, ("", "", []))[:2]
                    name.append(display or label)  # XProf names an op by its display name, if any
                    long_name.append(label if display else "")
                    category.append(str(m.get("hlo_category", "")))
                    dedup.append(str(m.get("deduplicated_name", "")))
                    stacks.append(str(m.get("source_stack", "")))
                    fused.append(_fused(space, plane, list(m.get("child_id", []))))  # type: ignore[call-overload]
                    framework.append(str(m.get("tf_op", "")))
                    flops = float(m.get("flops", 0))  # type: ignore[arg-type]
                    model = float(m.get("model_flops", 0))  # type: ignore[arg-type]
                    per_run.append((flops, model if model > 0 else flops, float(m.get("bytes_accessed", 0))))  # type: ignore
                    memory.append(m.get("memory_access_breakdown", np.zeros((4, 3))))  # type: ignore[arg-type]
                    breakdown.append("memory_access_breakdown" in m)
                slot_of[k] = keys[key]
            slot = slot_of[which]
            kept = slot >= 0
            slots.append(slot[kept])
            durations.append((end - begin)[kept])
            selfs.append(own[kept])
            rows.setdefault(id(space), []).append((ops[kept], slot[kept]))
    n = len(keys)
    slot = np.concatenate(slots) if slots else np.zeros(0, np.int64)
    occurrences = np.bincount(slot, minlength=n).astype(np.int64)
    time_ps = np.bincount(slot, weights=np.concatenate(durations) if durations else None, minlength=n).astype(np.int64)
    self_ps = np.bincount(slot, weights=np.concatenate(selfs) if selfs else None, minlength=n).astype(np.int64)
    runs = np.array(per_run, np.float64).reshape(-1, 3)
    by_space: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    for space_id, parts in rows.items():
        r, s = np.concatenate([a for a, _ in parts]), np.concatenate([b for _, b in parts])
        order = np.argsort(r, kind="stable")
        by_space[space_id] = (r[order], s[order])
    return TpuOps(name, category, framework, occurrences, time_ps, self_ps, runs[:, 0] * occurrences,
                  runs[:, 2] * occurrences, [k[0] for k in keys], total, long_name, runs,
                  np.array(memory, np.float64).reshape(-1, 4, 3), np.array(breakdown, bool), by_space, dedup,
                  stacks, fused)


def framework_rows(ops: TpuOps) -> tuple[list[tuple[str, str]], np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                          np.ndarray, np.ndarray]:
    """XProf's framework-op view of the device ops (CreateTfMetricsDbFromDeviceOpMetricsDb, IDLE left out):
    per framework op (tf_op, parsed as TensorFlow's op names are; the HLO op's name where there is none),
    first-seen order: ((name, type), occurrences (the most of its ops'), time, self time, FLOPs, bytes, model
    FLOPs)."""
    from profscope.models.analysis.xprof.op_stats import UNKNOWN, parse_tf_op

    index: dict[tuple[str, str], int] = {}
    slots = []
    for framework, hlo_name in zip(ops.framework, ops.name):
        full = framework or hlo_name
        category, name, type_ = parse_tf_op(full)
        slots.append(index.setdefault((name, type_) if category != UNKNOWN else (full, "Unknown"), len(index)))
    slot = np.array(slots, np.int64)
    n = len(index)
    occurrences = np.zeros(n, np.int64)
    np.maximum.at(occurrences, slot, ops.occurrences)
    return (list(index), occurrences, np.bincount(slot, ops.time_ps, n), np.bincount(slot, ops.self_ps, n),
            np.bincount(slot, ops.flops, n), np.bincount(slot, ops.bytes, n), np.bincount(slot, ops.model_flops, n))


# ---------------------------------------------------------------- the device's peaks, XProf's roofline figures


def safe_divide(a: float, b: float) -> float:
    """tsl's SafeDivide: zero for a divisor within 1e-10 of zero."""
    return a / b if abs(b) >= 1e-10 else 0.0


@dataclass
class PerfEnv:
    """The device's peaks: GFLOP/s and bandwidths (GB/s, XProf's MemBwType order)."""

    peak_gflops: float = 0.0
    bandwidths: tuple[float, ...] = ()
    megacore: bool = False
    has_merged_vmem: bool = False
    combined: bool = False  # XProf's combined perf env of TPU and GPU hosts: no has_cmem flag

    def bw(self, kind: int) -> float:
        return self.bandwidths[kind] if kind < len(self.bandwidths) else 0.0

    @property
    def has_cmem(self) -> bool:
        return not self.combined and (self.bw(CMEM_RD) > 0 or self.bw(CMEM_WR) > 0)


def perf_env(spaces: list[XSpaceData]) -> PerfEnv:
    from profscope.models.analysis.xprof.device_op_metrics import plane_stats
    from profscope.models.analysis.xprof.op_stats import TPU_PLANE_PREFIX

    envs = []
    for space in spaces:
        plane = next((i for i, p in enumerate(space.planes) if p.name.startswith(TPU_PLANE_PREFIX)), None)
        if plane is None:
            continue
        caps = plane_stats(space, plane)
        names = ("peak_teraflops_per_second", *BANDWIDTH_STATS)
        value = {name: float(caps.get(name, 0) or 0) for name in names}  # type: ignore[arg-type]
        flags = _int64_stats(space, plane)  # XProf reads a bool stat's int64 value (a uint64 one is false)
        envs.append(PerfEnv(value["peak_teraflops_per_second"] * 1000, tuple(value[n] for n in BANDWIDTH_STATS),
                            bool(flags.get("has_megacore")), bool(flags.get("has_merged_vmem"))))
    if len(spaces) == 1 or not envs:
        return envs[0] if envs else PerfEnv()
    # XProf's combined perf env: the last positive FLOP rate, the first host's bandwidths, no flags.
    peak = next((e.peak_gflops for e in reversed(envs) if e.peak_gflops > 0), 0.0)
    return PerfEnv(peak, envs[0].bandwidths)


def session_perf_env(spaces: list[XSpaceData]) -> PerfEnv:
    """XProf's combined perf env of a session of TPU and GPU hosts: the last positive peak FLOP rate, the first
    accelerator host's bandwidths (a GPU host's: HBM, shared memory as SRAM read and write), no flags."""
    from profscope.models.analysis.xprof.device_op_metrics import gpu_planes, gpu_roofs, plane_stats
    from profscope.models.analysis.xprof.tpu_steps import tensor_cores

    envs = []
    for space in spaces:
        if gpu_planes(space):
            r = gpu_roofs(plane_stats(space, gpu_planes(space)[0]))
            envs.append(PerfEnv(r.peak_gflops, (r.hbm_bytes_per_s / 1e9, r.shared_bytes_per_s / 1e9,
                                                r.shared_bytes_per_s / 1e9)))
        elif tensor_cores(space):
            envs.append(perf_env([space]))
    peak = next((e.peak_gflops for e in reversed(envs) if e.peak_gflops > 0), 0.0)
    return PerfEnv(peak, envs[0].bandwidths if envs else (), combined=True)


def _int64_stats(space: XSpaceData, plane: int) -> dict[str, int]:
    """A plane's own stats' int64 values (0 where a stat holds another kind), by name."""
    from profscope.models.core import _protowire as wire

    buf = space.buf
    (planes,) = wire.find_fields(buf, 0, len(buf), [1])  # XSpace.planes
    o, n = (int(x) for x in planes[plane])
    (stats,) = wire.find_fields(buf, o, o + n, [6])  # XPlane.stats
    if not len(stats):
        return {}
    names = space.planes[plane].stat_names
    ids, values = wire.decode_messages(buf, stats, [(1, "i"), (4, "i")])  # XStat.metadata_id, int64_value
    return {names.get(sid, ""): value for sid, value in zip(ids.tolist(), values.tolist())}


def safe_divides(a, b) -> np.ndarray:
    """safe_divide over arrays."""
    b = np.asarray(b, np.float64)
    ok = np.abs(b) >= 1e-10
    return np.where(ok, np.asarray(a, np.float64) / np.where(ok, b, 1.0), 0.0)


BOUNDS = ("Compute", "HBM", "CMEM Read", "CMEM Write", "VMEM Read", "VMEM Write")


@dataclass
class Roofline:
    """XProf's SetRooflineMetrics of ops or groups, a value each: FLOP rates (GFLOP/s), bandwidths (GiB/s: all
    bytes, HBM, and (k, 4) CMEM read, CMEM write, VMEM read, VMEM write), operational intensities (FLOPs per byte:
    all, HBM, the four on-chip), what bounds each and its intensity there."""

    rate: np.ndarray
    model_rate: np.ndarray
    memory_bw: np.ndarray
    hbm_bw: np.ndarray
    on_chip_bw: np.ndarray
    intensity: np.ndarray
    hbm_intensity: np.ndarray
    on_chip_intensity: np.ndarray
    bottleneck_intensity: np.ndarray
    bound_id: np.ndarray  # into BOUNDS, or len(BOUNDS): Unknown

    @property
    def bound(self) -> list[str]:
        return [(*BOUNDS, "Unknown")[k] for k in self.bound_id.tolist()]


def roofline_metrics(flops, model, size, memory: np.ndarray, breakdown, time_ps, env: PerfEnv) -> Roofline:
    """Of k ops or groups: FLOPs, model FLOPs, bytes, bytes by memory space and operation (k, 4, 3) and whether
    they come with such a breakdown (without one all bytes are HBM's), time. The bound is the resource used
    closest to its peak: compute, HBM, or (where used and with a peak) CMEM or VMEM read or write; Unknown when
    none is used (the first of equals)."""
    flops, size = np.asarray(flops, np.float64), np.asarray(size, np.float64)
    breakdown = np.asarray(breakdown, bool)
    ns = np.asarray(time_ps, np.float64) / 1000
    rate = safe_divides(flops, ns)
    hbm = np.where(breakdown, memory[:, HBM].sum(axis=1), size)
    on_chip = np.where(breakdown[:, None], memory[:, [CMEM, CMEM, VMEM, VMEM], [READ, WRITE, READ, WRITE]], 0.0)
    hbm_bw = safe_divides(hbm, ns) / GIB
    bws = safe_divides(on_chip, ns[:, None]) / GIB
    intensities = safe_divides(flops[:, None], on_chip)
    peaks = np.array([env.bw(k) / GIB for k in (CMEM_RD, CMEM_WR, VMEM_RD, VMEM_WR)])
    uses = np.column_stack([safe_divides(rate, env.peak_gflops), safe_divides(hbm_bw, env.bw(HBM_RW) / GIB),
                            np.where((on_chip > 0) & (peaks > 0), safe_divides(bws, peaks), 0.0)])
    candidates = np.column_stack([safe_divides(flops, size), safe_divides(flops, hbm), intensities])
    first = uses.argmax(axis=1)
    used = uses.max(axis=1) > 0
    return Roofline(rate, safe_divides(model, ns), safe_divides(size, ns) / GIB, hbm_bw, bws, safe_divides(flops, size),
                    safe_divides(flops, hbm), intensities,
                    np.where(used, candidates[np.arange(len(first)), first], 0.0),
                    np.where(used, first, len(BOUNDS)))


def tpu_framework_op_stats_json(stats, spaces: list[XSpaceData]) -> list[dict]:
    """XProf's framework_op_stats of a TPU host: the device rows are its framework ops with FLOP rates, memory
    bandwidth, operational intensity and bound from the ops' metadata and the TensorCore's peaks."""
    from dataclasses import replace

    from profscope.models.analysis.xprof.framework_op_stats import framework_op_stats_json

    db, rates = tpu_framework_db(spaces)
    return with_tpu_rates(framework_op_stats_json(replace(stats, device=db, device_unknown="")), rates)


def tpu_framework_db(spaces: list[XSpaceData], env: PerfEnv | None = None):
    """The TensorCores' framework ops as an OpMetricsDb (IDLE last), and each one's rates by name: (FLOP rate,
    model FLOP rate, memory bandwidth, operational intensity, bound against `env`, else the hosts' peaks)."""
    from profscope.models.analysis.xprof.op_stats import IDLE, OpMetricsDb

    ops = tpu_op_metrics(spaces)
    keys, occurrences, time_ps, self_ps, flops, bytes_, model = framework_rows(ops)
    idle = ops.total_ps - ops.op_ps
    db = OpMetricsDb([k[0] for k in keys] + [IDLE], [k[1] for k in keys] + [IDLE], np.r_[occurrences, 0],
                     np.r_[time_ps, idle].astype(np.int64), np.r_[self_ps, idle].astype(np.int64),
                     np.zeros(len(keys) + 1, bool), ops.total_ps, ops.op_ps)
    env = env or perf_env(spaces)
    # A framework op sums its ops' FLOPs and bytes, not their memory breakdown: all its bytes are HBM's.
    r = roofline_metrics(flops, model, bytes_, np.zeros((len(keys), 4, 3)), np.zeros(len(keys), bool), time_ps, env)
    rates = {k[0]: (float(r.rate[i]), float(r.model_rate[i]), float(r.memory_bw[i]), float(r.intensity[i]),
                    r.bound[i]) for i, k in enumerate(keys)}
    return db, rates


def with_tpu_rates(tables: list[dict], rates: dict) -> list[dict]:
    """framework_op_stats tables whose device rows of TensorCore framework ops take their rates."""
    for t in tables:
        for row in t["rows"]:
            cells = row["c"]
            r = rates.get(cells[3]["v"]) if cells[1]["v"] == "Device" else None
            if r is None:
                continue
            for k, v in zip((13, 14, 15, 16), r[:4]):
                cells[k]["v"] = v
            cells[-2]["v"] = r[4]
    return tables


def tpu_hlo_stats_rows(spaces: list[XSpaceData], env: PerfEnv | None = None) -> tuple[list[list], int]:
    """XProf's hlo_stats rows of TensorCore ops: per HLO op (most self time first), its program, category,
    framework op, times, shares of the device's whole time (percent), FLOP rates, bandwidths, intensity and
    bound from its metadata (no HLO text: the op's name); and that whole time (ps)."""
    ops = tpu_op_metrics(spaces)
    r = roofline_metrics(ops.flops, ops.model_flops, ops.bytes, ops.memory, ops.has_breakdown, ops.time_ps,
                         env or perf_env(spaces))
    rows: list[list] = []
    cumulative = 0.0
    for i in sorted(range(len(ops.name)), key=lambda k: (-int(ops.self_ps[k]), ops.name[k])):
        n = int(ops.occurrences[i])
        time_us, self_us = int(ops.time_ps[i]) / 1e6, int(ops.self_ps[i]) / 1e6
        share = 100.0 * int(ops.self_ps[i]) / ops.total_ps if ops.total_ps else 0.0
        cumulative += share
        rows.append([float(len(rows) + 1), str(ops.program[i]), ops.category[i], ops.name[i],
                     ops.long_name[i] or ops.name[i], ops.framework[i], float(n), time_us, time_us / n if n else 0.0,
                     self_us, self_us / n if n else 0.0, share, cumulative, 0.0, float(r.model_rate[i]),
                     float(r.rate[i]), float(r.memory_bw[i]), float(r.hbm_bw[i]), *r.on_chip_bw[i, :2].tolist(),
                     float(r.intensity[i]), r.bound[i], "No", "No", "No", "", "TensorCore", "", 0.0])
    return rows, int(ops.total_ps)
