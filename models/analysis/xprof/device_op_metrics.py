"""XProf's analyses of GPU device planes (`/device:GPU:N`, NVIDIA or AMD):
the device op metrics (ConvertDeviceTraceXPlaneToOpMetricsDb) and the kernel
reports (ConvertDeviceTraceXPlaneToKernelReports) of XProf 2.24.2, as numpy
columns over the plane's events.

A GPU plane's lines are streams; XProf skips its derived lines (ids from
0xdeadbeef). Every event of the other lines spans the device's time (first
begin to last end). An event with `hlo_op`, `hlo_module` and `program_id`
is an XLA op (xla_ops.py: its category, framework op, FLOPs and bytes come
from the module's HloProto and XLA's GPU cost analysis, hlo_cost.py); else
an event with a `tf_op` stat is a TensorFlow op's kernel: its op is
`<tf op name>/<kernel name>`, of the TF op's type, with no FLOPs (XProf's
TfOpRoofLineCostEstimator is retired); event_kinds decides it. Where any GPU
runs XLA ops, xla_ops.py builds every GPU's rows, both kinds. An event with
`kernel_details` is a kernel for kernel_stats.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from profscope.models.analysis.xprof.op_stats import (
    DERIVED_LINE_COUNT,
    DERIVED_LINE_MIN,
    GPU_PLANE_PREFIX,
    IDLE,
    MEMCPY,
    UNKNOWN,
    OpMetricsDb,
    concatenate,
    parse_tf_op,
    sum_by,
)
from profscope.models.formats.xspace.xplane import DenseStats, XSpaceData

if TYPE_CHECKING:
    from profscope.models.analysis.xprof.tpu_steps import TpuSteps
    from profscope.models.analysis.xprof.xla_ops import XlaOpMetrics

_STATS = ["kernel_details", "tf_op", "hlo_op", "hlo_module", "program_id", "is_eager", "group_id", "equation",
          "correlation_id"]

# Kernel names with these use TensorCores (XProf's kernel_stats_utils, as 2.24.2 applies them).
TENSOR_CORE_KERNEL_PATTERNS = (
    "16816", "c1688", "conv1x1", "conv2d_c1_k1", "dgrad_1x1_stride_2x2", "direct_group",
    "first_layer_wgrad_kernel", "h1688", "h884", "hmma", "i16832", "i8816", "s884", "s1688", "xmma_gemm",
    "xmma_implicit_gemm", "xmma_sparse_conv", "xmma_sparse_gemm", "xmma_warp_specialized_implicit_gemm",
)
_ELIGIBLE_SUFFIXES = (
    "Conv2D", "Conv2DBackpropFilter", "Conv2DBackpropInput", "Conv3D", "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropFilter", "DepthwiseConv2dNativeBackpropInput", "/MatMul", "FusedMatMul",
    "/CudnnRNN", "XlaDot", "XlaDotV2",
    # JAX's ops: XProf 2.24.2 counts them eligible (checked against its output; not in upstream's list).
    "dot_general", "conv_general_dilated",
)
_ELIGIBLE_PARTS = ("BatchMatMul", "CudnnRNNV", "CudnnRNNForward", "CudnnRNNBackprop")


def gpu_planes(space: XSpaceData) -> list[int]:
    return [i for i, p in enumerate(space.planes) if p.name.startswith(GPU_PLANE_PREFIX)]


def kernel_uses_tensor_core(name: str) -> bool:
    return any(p in name for p in TENSOR_CORE_KERNEL_PATTERNS)


def op_tensor_core_eligible(op_name: str) -> bool:
    return op_name.endswith(_ELIGIBLE_SUFFIXES) or any(p in op_name for p in _ELIGIBLE_PARTS)


def einsum_tensor_core_eligible(equation: str) -> bool:
    parts = equation.split("->")
    return bool(equation) and len(parts) == 2 and len(parts[0].split(",")) == 2


@dataclass
class DeviceEvents:
    """The events of a GPU plane's stream lines, in file order, with the stats XProf reads."""

    space: XSpaceData
    plane: int
    rows: np.ndarray  # event indices
    start: np.ndarray  # ps
    duration: np.ndarray  # ps
    stats: DenseStats

    def metadata_ids(self) -> np.ndarray:
        return self.space.events.metadata_id[self.rows].astype(np.int64)

    def name_of(self, metadata_id: int) -> str:
        return self.space.planes[self.plane].event_metadata.get(int(metadata_id), ("", "", []))[0]

    def strings(self, name: str) -> tuple[np.ndarray, list[str]]:
        return self.stats.strings(name), self.stats.table


def distinct_rows(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct combination of the columns' values, and each row's combination: one
    dense code per column, folded into one int64 key (np.unique along rows, without its slow axis=0 path)."""
    n = len(columns[0])
    key = np.zeros(n, np.int64)
    for column in columns:
        values, code = np.unique(column, return_inverse=True)
        key = key * len(values) + code.reshape(-1)
        key = np.unique(key, return_inverse=True)[1].reshape(-1)  # dense again: no overflow
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1)


def device_events(space: XSpaceData, plane: int) -> DeviceEvents:
    a, b = space.plane_rows(plane)
    ev = space.events
    rows = np.arange(a, b, dtype=np.int64)
    rows = rows[~ev.aggregated[a:b]]
    line_ids = np.array([ln.id for ln in space.lines], np.int64)
    derived = ((line_ids & 0xFFFFFFFF) - DERIVED_LINE_MIN) % (1 << 32) < DERIVED_LINE_COUNT
    rows = rows[~derived[ev.line[rows]]] if len(rows) else rows
    stats = space.dense_stats(ev.spans(rows), plane, _STATS)
    return DeviceEvents(space, plane, rows, space.start_ps(rows), ev.duration_ps[rows].astype(np.int64), stats)


class HloOps:
    """The instructions of a session's XLA modules by (program id, name): their framework op (metadata.op_name)."""

    def __init__(self, paths: list) -> None:
        from profscope.models.analysis.xprof.hlo import Module
        from profscope.models.analysis.xprof.hlo_source import ModuleSource

        self._source = ModuleSource(paths)
        self._module = Module
        self._by_program: dict[int, dict[str, str] | None] = {}

    def op_names(self, program_id: int) -> dict[str, str] | None:
        if program_id not in self._by_program:
            found = None
            suffix = f"({program_id})"
            for name in self._source.names():
                if name.endswith(suffix):
                    ins = self._module(self._source.load(name)).instructions
                    found = {ins.name(r): ins.op_name_and_source(r)[0] for r in range(len(ins.name_code))}
                    break
            self._by_program[program_id] = found
        return self._by_program[program_id]

    def op_name(self, program_id: int, hlo_op: str) -> str | None:
        names = self.op_names(program_id)
        return None if names is None else names.get(hlo_op)


def event_kinds(d: DeviceEvents) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """What XProf takes each event of a GPU plane for: an XLA op (hlo_op, hlo_module and program_id), else a
    TensorFlow op's kernel (a tf_op); and the XLA ops' program ids and last hlo_op names (by string code)."""
    hlo, table = d.strings("hlo_op")
    module, _ = d.strings("hlo_module")
    xla = (hlo > 0) & (module > 0) & d.stats.present("program_id")
    program = np.where(xla, d.stats.value.get("program_id", np.zeros(len(d.rows), np.int64)), 0)
    last = [t.split(",")[-1] for t in table]
    return xla, (d.strings("tf_op")[0] > 0) & ~xla, program, last


@dataclass
class KernelReports:
    """XProf's KernelReportMap: one row per distinct kernel (name, launch shape, op)."""

    name: list[str]
    registers: np.ndarray
    static_shmem: np.ndarray
    dynamic_shmem: np.ndarray
    block: list[tuple[int, int, int]]
    grid: list[tuple[int, int, int]]
    occupancy: np.ndarray  # float32, as XProf's proto keeps it
    uses_tensor_core: np.ndarray
    eligible: np.ndarray
    op_name: list[str]
    occurrences: np.ndarray
    total_ns: np.ndarray
    min_ns: np.ndarray
    max_ns: np.ndarray

    def __len__(self) -> int:
        return len(self.name)

    def order(self) -> np.ndarray:
        """XProf's order: total duration, most first; then name, grid, block, registers, shared memory,
        TensorCore use and eligibility, op name."""
        keys = [(-int(self.total_ns[i]), self.name[i], self.grid[i], self.block[i], int(self.registers[i]),
                 int(self.static_shmem[i]), int(self.dynamic_shmem[i]), bool(self.uses_tensor_core[i]),
                 bool(self.eligible[i]), self.op_name[i]) for i in range(len(self))]
        return np.array(sorted(range(len(self)), key=keys.__getitem__), np.int64)


def parse_kernel_details(text: str) -> tuple[int, int, int, tuple[int, int, int], tuple[int, int, int], float]:
    """(registers, static and dynamic shared memory, block, grid, occupancy %) of a kernel_details stat."""
    regs = static = dynamic = 0
    block = grid = (1, 1, 1)
    occ = 0.0
    for token in text.replace("\n", " ").split(" "):
        kv = token.split(":")
        if len(kv) != 2:
            continue
        key, value = kv
        if key in ("regs", "static_shared", "dynamic_shared") and _uint32(value) is not None:
            number = _uint32(value) or 0
            if key == "regs":
                regs = number
            elif key == "static_shared":
                static = number
            else:
                dynamic = number
        elif key in ("block", "grid"):
            dims = [_uint32(v) for v in value.split(",")]
            if len(dims) == 3 and all(x is not None for x in dims):
                if key == "block":
                    block = (dims[0], dims[1], dims[2])  # type: ignore[assignment]
                else:
                    grid = (dims[0], dims[1], dims[2])  # type: ignore[assignment]
        elif key == "occ_pct":
            try:
                occ = float(value)
            except ValueError:
                pass
    return regs, static, dynamic, block, grid, occ


def _uint32(text: str) -> int | None:
    t = text.strip()
    if t.startswith("+"):
        t = t[1:]
    if not t.isdigit() or int(t) >= 1 << 32:
        return None
    return int(t)


def kernel_reports(spaces: list[XSpaceData], paths) -> KernelReports:
    """XProf's kernel reports of every GPU plane of the XSpaces: merged within a host, hosts' reports side by
    side (XProf 2.24.2 combines hosts without merging equal kernels)."""
    hlo = HloOps(paths)
    keys: dict[tuple, int] = {}
    occ_of: list[float] = []
    count: list[int] = []
    total: list[int] = []
    lo: list[int] = []
    hi: list[int] = []
    from profscope.models.analysis.xprof.tpu_steps import tensor_cores

    for host, space in enumerate(spaces):
        for plane in [] if tensor_cores(space) else gpu_planes(space):  # XProf reads a host's TensorCores first
            d = device_events(space, plane)
            details, table = d.strings("kernel_details")
            kernels = np.flatnonzero(details > 0)
            if not len(kernels):
                continue
            tf_op, _ = d.strings("tf_op")
            equation, _ = d.strings("equation")
            xla, _tf, program, last = event_kinds(d)
            hlo_code, _ = d.strings("hlo_op")
            ns = d.duration // 1000
            parsed: dict[int, tuple] = {}
            # Kernels of equal attributes: one key per distinct combination of codes, then per event.
            columns = [c[kernels] for c in (d.metadata_ids(), details, tf_op, equation, xla, program, hlo_code)]
            first, inverse = distinct_rows(columns)
            key_of = []
            for mid, dc, tc, ec, is_xla, pid, hc in zip(*(c[first].tolist() for c in columns)):
                name = d.name_of(mid)
                if dc not in parsed:
                    parsed[dc] = parse_kernel_details(table[dc])
                regs, static, dynamic, block, grid, occ = parsed[dc]
                uses = kernel_uses_tensor_core(name)
                op_name, eligible = "", False
                if tc:
                    op_name = parse_tf_op(table[tc])[1]
                    eligible = einsum_tensor_core_eligible(table[ec]) or op_tensor_core_eligible(op_name) or uses
                if is_xla:
                    found = hlo.op_name(int(pid), last[hc])
                    if found is not None:
                        op_name = found
                        eligible = op_tensor_core_eligible(op_name) or eligible
                key = (name, regs, static, dynamic, block, grid, uses, eligible, op_name, host)
                if key not in keys:
                    keys[key] = len(keys)
                    occ_of.append(occ)
                    count.append(0)
                    total.append(0)
                    lo.append(np.iinfo(np.int64).max)
                    hi.append(0)
                key_of.append(keys[key])
            slot = np.array(key_of, np.int64)[inverse]
            n = len(keys)
            k_ns = ns[kernels]
            c = np.bincount(slot, minlength=n)
            t = np.bincount(slot, weights=k_ns, minlength=n).astype(np.int64)
            mn = np.full(n, np.iinfo(np.int64).max, np.int64)
            mx = np.zeros(n, np.int64)
            np.minimum.at(mn, slot, k_ns)
            np.maximum.at(mx, slot, k_ns)
            for s in np.flatnonzero(c).tolist():
                count[s] += int(c[s])
                total[s] += int(t[s])
                lo[s] = min(lo[s], int(mn[s]))
                hi[s] = max(hi[s], int(mx[s]))
    ks = list(keys)
    return KernelReports(
        [k[0] for k in ks], np.array([k[1] for k in ks], np.int64), np.array([k[2] for k in ks], np.int64),
        np.array([k[3] for k in ks], np.int64), [k[4] for k in ks], [k[5] for k in ks],
        np.array(occ_of, np.float32), np.array([k[6] for k in ks], bool), np.array([k[7] for k in ks], bool),
        [k[8] for k in ks], np.array(count, np.int64), np.array(total, np.int64), np.array(lo, np.int64),
        np.array(hi, np.int64))


def device_op_metrics(space: XSpaceData, plane: int) -> OpMetricsDb:
    """XProf's ConvertDeviceTraceXPlaneToOpMetricsDb for TensorFlow's kernels
    (tf_op): one row per `<tf op name>/<kernel>`, its time its kernels' sum,
    and IDLE the rest of the device's span. `category` is the TF op's type;
    `provenance` (kept in `name_tf_op`) the tf_op full name."""
    d = device_events(space, plane)
    n_events = len(d.rows)
    if not n_events:
        return _device_db([], [], [], np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, bool), 0)
    end = d.start + d.duration
    total = int(end.max() - d.start.min())
    tf_op, table = d.strings("tf_op")
    ops = np.flatnonzero(event_kinds(d)[1])
    eager = d.stats.ints("is_eager") != 0
    keys: dict[str, int] = {}
    cats: list[str] = []
    prov: list[str] = []
    # One op per distinct (kernel name, tf_op): parsed once each.
    columns = [d.metadata_ids()[ops], tf_op[ops]]
    first, inverse = distinct_rows(columns)
    pair_slot = np.zeros(len(first), np.int64)
    for j, (mid, code) in enumerate(zip(*(c[first].tolist() for c in columns))):
        op = parse_tf_op(table[code])
        k = keys.setdefault(f"{op[1]}/{d.name_of(mid)}", len(keys))
        if k == len(cats):
            cats.append(op[2])
            prov.append(table[code])
        pair_slot[j] = k
    slot = pair_slot[inverse]
    n = len(keys)
    time_ps = np.bincount(slot, weights=d.duration[ops], minlength=n).astype(np.int64)
    occurrences = np.bincount(slot, minlength=n).astype(np.int64)
    is_eager = np.bincount(slot[eager[ops]], minlength=n) > 0
    return _device_db(list(keys), cats, prov, occurrences, time_ps, is_eager, total)


def _device_db(names, cats, prov, occurrences, time_ps, is_eager, total) -> OpMetricsDb:
    op_time = int(np.sum(time_ps))
    idle = max(total - op_time, 0)
    return OpMetricsDb(list(names) + [IDLE], list(cats) + [IDLE], np.r_[occurrences, 0].astype(np.int64),
                       np.r_[time_ps, idle].astype(np.int64), np.r_[time_ps, idle].astype(np.int64),
                       np.r_[is_eager, False].astype(bool), total, op_time, list(prov) + [""])


def tf_metrics_of_device(db: OpMetricsDb) -> OpMetricsDb:
    """XProf's CreateTfMetricsDbFromDeviceOpMetricsDb: the device ops by their
    framework op (provenance; an op without one is its own, of type
    Unknown): times, FLOPs and bytes summed, occurrences the most of any of
    its device ops; IDLE kept. XProf keeps no per-memory breakdown here."""
    prov = db.provenance or [""] * len(db)
    keys: list[tuple[str, str]] = []
    for i in range(len(db)):
        if db.category[i] == IDLE:
            keys.append((IDLE, IDLE))
        elif not prov[i]:
            keys.append((db.name[i], "Unknown"))
        else:
            category, name, type_ = parse_tf_op(prov[i])
            keys.append((name, type_) if category != UNKNOWN else (prov[i], "Unknown"))
    distinct, _first, occ, t, st, ea = sum_by(keys, db, most_occurrences=True)
    out = OpMetricsDb([k[0] for k in distinct], [k[1] for k in distinct], occ, t, st, ea, db.total_time_ps,
                      db.total_op_time_ps)
    if db.flops is not None:
        index = {k: j for j, k in enumerate(distinct)}
        slot = np.array([index[k] for k in keys], np.int64)
        flops, nbytes, _hbm = db.costs()
        out.flops = np.bincount(slot, weights=flops, minlength=len(distinct))
        out.bytes = np.bincount(slot, weights=nbytes, minlength=len(distinct))
        out.hbm_bytes = out.bytes
    return out


TPU_STEP_LINES = ("Steps", "SparseCore Steps")
TPU_OP_LINES = ("XLA Ops", "SparseCore Ops")


@dataclass
class DeviceStats:
    """What the device planes add to XProf's OpStats."""

    db: OpMetricsDb  # device op metrics by framework op
    ops: OpMetricsDb  # device op metrics by device op (`<tf op name>/<kernel>`; hlo_stats' rows)
    device_type: str
    hardware_type: str
    steps: list | None = None  # per XSpace, its StepDb (GPU hosts)
    core_count: int = 0  # device planes (XProf: each GPU one core)
    xla: str = ""  # why the op metrics are not computed (XLA ops, whose FLOPs come from XLA's cost analysis)
    tpu_steps: TpuSteps | None = None  # TensorCores' steps
    empty_intersect: bool = False  # several TPU hosts' steps have none in common
    xla_ops: XlaOpMetrics | None = None  # a GPU running XLA ops: its ops' rows (`ops` is their db)
    run_hardware: str = ""  # the run environment's hardware type where it is not `hardware_type`'s


def device_stats(spaces: list[XSpaceData], paths, steps: bool) -> DeviceStats:
    """The device planes' part of XProf's OpStats: op metrics, and with `steps` the GPU hosts' step dbs or the
    TPU host's TensorCore steps (tpu_steps.py)."""
    from profscope.models.analysis.xprof.tpu_steps import tensor_cores
    from profscope.models.analysis.xprof.xla_ops import XlaModules, combine_xla_ops, xla_op_db, xla_op_metrics
    from profscope.models.core.task import ProfileError

    # A host with both GPU and TPU planes (no runtime writes one): XProf's op metrics read its TensorCores, not its
    # GPUs; its run environment is the GPUs'. Such a host beside other hosts is not reproduced.
    both = [s for s in spaces if gpu_planes(s) and tensor_cores(s)]
    planes = [(s, i) for s in spaces for i, p in enumerate(s.planes) if p.name.startswith(DEVICE_PREFIXES)]
    gpu = [(s, i) for s, i in planes if s.planes[i].name.startswith(GPU_PLANE_PREFIX) and s not in both]
    tpu = [(s, i) for s, i in planes if not s.planes[i].name.startswith(GPU_PLANE_PREFIX)]
    if both and len(spaces) > 1:
        raise ProfileError(f"{both[0].path}: Profscope does not compute XProf's analysis of a host with both GPU and "
                           "TPU planes beside other hosts")
    if tpu and gpu:  # TPU and GPU hosts in one session: XProf's combined OpStats (tpu_steps.py)
        from profscope.models.analysis.xprof.tpu_steps import beside_gpus

        return beside_gpus(spaces, paths, steps)
    xla = ""
    xla_ops = None
    events = [device_events(space, plane) for space, plane in gpu]
    if any(event_kinds(d)[0].any() for d in events):
        # XLA ops on a GPU: every GPU's rows by XProf's one builder (XLA ops and TF kernels), with their costs
        try:
            modules = XlaModules(paths)
            xla_ops = combine_xla_ops([xla_op_metrics(d, modules) for d in events])
        except ProfileError as e:  # the tools that need the ops' costs say why; the step analysis goes on
            xla = str(e)
    if gpu:
        space, plane = host_gpus(gpu)[-1]  # several hosts: XProf's combined run environment keeps the last's
        model = gpu_model_name(plane_stats(space, plane)) or "GPU"  # "GPU" without capabilities
        ops = xla_op_db(xla_ops) if xla_ops is not None else \
            _combine_device([device_op_metrics(space, plane) for space, plane in gpu])
        step_dbs = [gpu_step_db(s) for s in spaces] if steps else None
        return DeviceStats(tf_metrics_of_device(ops), ops, model, "GPU", step_dbs, len(gpu), xla, xla_ops=xla_ops)
    total = sum(_tpu_span(s, i) for s, i in planes)
    none = np.zeros(0, np.int64)
    idle = _device_db([], [], [], none, none, np.zeros(0, bool), total)
    # A TPU's op metrics come from its ops' metadata (tpu_ops.py), read by each tool's TPU branch.
    from profscope.models.analysis.xprof.tpu_steps import TENSOR_CORE

    # The chip's type: device_type_string of a host's first TensorCore (several hosts: the last host's).
    first = {id(s): (s, i) for s, i in reversed(tpu) if TENSOR_CORE.match(s.planes[i].name)}
    model = str(plane_stats(*next(iter(first.values()))).get("device_type_string", "")) if first else ""
    stats = DeviceStats(idle, idle, model, "TPU", core_count=len(planes))
    if both:  # the run environment of the last such host's GPUs: one core each, their device type
        stats.core_count = len(gpu_planes(both[-1]))
        stats.device_type = gpu_model_name(plane_stats(both[-1], gpu_planes(both[-1])[0])) or "GPU"
        stats.run_hardware = "GPU"
    if steps:
        from profscope.models.analysis.xprof.tpu_steps import combine_tpu_steps, tpu_steps

        hosts = [s for s in spaces if any(t is s for t, _ in tpu)]  # hosts without TPUs take no part
        stats.tpu_steps, stats.empty_intersect = combine_tpu_steps([tpu_steps(s) for s in hosts])
    return stats


def host_gpus(gpu: list[tuple[XSpaceData, int]]) -> list[tuple[XSpaceData, int]]:
    """The first GPU plane of each host that has one (what XProf reads a host's device model and roofs from)."""
    first: dict[int, tuple[XSpaceData, int]] = {}
    for space, plane in gpu:
        first.setdefault(id(space), (space, plane))
    return list(first.values())


DEVICE_PREFIXES = (GPU_PLANE_PREFIX, "/device:TPU:")


def _tpu_span(space: XSpaceData, plane: int) -> int:
    """The span of a TPU plane's steps and ops (XProf's total time of its device op metrics)."""
    a, b = space.plane_rows(plane)
    rows = np.arange(a, b, dtype=np.int64)
    names = np.array([ln.name in TPU_STEP_LINES + TPU_OP_LINES for ln in space.lines], bool)
    rows = rows[names[space.events.line[rows]]] if len(rows) else rows
    if not len(rows):
        return 0
    start = space.start_ps(rows)
    return int((start + space.events.duration_ps[rows]).max() - start.min())


def _combine_device(dbs: list[OpMetricsDb]) -> OpMetricsDb:
    """The device dbs of several GPUs as one (XProf's combiner): rows summed by name, IDLE last."""
    if len(dbs) == 1:
        return dbs[0]
    db = concatenate(dbs, last_row=False)  # IDLE recomputed
    names, first, occ, t, _st, ea = sum_by(db.name, db)
    prov = db.provenance or []
    return _device_db(names, [db.category[i] for i in first.tolist()], [prov[i] for i in first.tolist()], occ, t, ea,
                      sum(d.total_time_ps for d in dbs))


def op_kernel_stats(reports: KernelReports) -> dict[str, tuple[bool, int, int]]:
    """Per op name: (TensorCore eligible, its kernels' time on TensorCores, their time) in ns, over the kernels
    XProf keeps (its GroupKernelReportsByOpName)."""
    out: dict[str, tuple[bool, int, int]] = {}
    for i in reports.order()[:1000].tolist():
        eligible, tc, total = out.get(reports.op_name[i], (False, 0, 0))
        ns = int(reports.total_ns[i])
        out[reports.op_name[i]] = (eligible or bool(reports.eligible[i]),
                                   tc + (ns if reports.uses_tensor_core[i] else 0), total + ns)
    return out


def tensor_core_shares(reports: KernelReports) -> dict[str, float]:
    """Per op name, the share of its kernels' time on kernels using TensorCores."""
    return {name: tc / total if total else 0.0 for name, (_e, tc, total) in op_kernel_stats(reports).items()}


# ---------------------------------------------------------------- GPU steps

_MEMCPY_TYPES = {"MemcpyHToD": 80, "MemcpyDToH": 130, "MemcpyDToD": 120}  # XProf's EventType of each copy


def gpu_event_type(name: str, tensor_shapes: str = "") -> int:
    """XProf's ClassifyGpuEvent: copies by their TF op type, NCCL kernels collectives, the rest compute
    (16-bit where the name says half or fp16)."""
    category, _name, type_ = parse_tf_op(name)
    if category == MEMCPY and type_ in _MEMCPY_TYPES:
        return _MEMCPY_TYPES[type_]
    if name.lower().startswith("nccl"):
        return 100
    half = "half" in tensor_shapes if tensor_shapes else ("half" in name or "fp16" in name)
    return 150 if half else 140


def gpu_step_db(space: XSpaceData):
    """XProf's step db of a host with GPUs, as XProf 2.24.2 gives it: each
    device event (with a correlation_id) takes the step of the host event
    that launched it (same correlation_id; the host's grouping); a step
    spans its device events on the GPU where they span longest, split by
    the EventType of all its device events (the highest where they
    overlap) and the rest unknown; steps without device compute are
    dropped, and with more than 5 the first and last."""
    from profscope.models.analysis.xprof.op_stats import DEVICE_COMPUTE_16, DEVICE_COMPUTE_32, StepDb, swept_step_db
    from profscope.models.formats.xspace import _steps
    from profscope.models.formats.xspace.groups import group_events
    from profscope.models.formats.xspace.xplane import HOST_PLANE

    empty = StepDb(np.zeros(0, np.int64), [], np.zeros(0, np.int64), np.zeros(0, np.int64), {})
    host = space.plane_named(HOST_PLANE)
    if host < 0:
        return empty
    groups = group_events(space, host)
    grouped = groups.rows[groups.group >= 0]
    launch = space.stats(grouped, host, ["correlation_id"])["correlation_id"]
    if not len(launch.rows):
        return empty
    correlation = launch.ints_present(True)
    launch_group = groups.of_events(grouped[launch.rows]).astype(np.int64)
    order = np.argsort(correlation, kind="stable")
    correlation, launch_group = correlation[order], launch_group[order]
    starts, ends, types, step_of = [], [], [], []
    for plane in gpu_planes(space):
        d = device_events(space, plane)
        has = d.stats.present("correlation_id") if "correlation_id" in d.stats.case else None
        if has is None:
            cid_stats = space.stats(d.rows, plane, ["correlation_id"])["correlation_id"]
            rows, cid = cid_stats.rows, cid_stats.ints_present(True)
        else:
            rows = np.flatnonzero(has)
            cid = d.stats.value["correlation_id"][rows]
        at = np.minimum(np.searchsorted(correlation, cid), len(correlation) - 1)
        hit = correlation[at] == cid
        rows, group = rows[hit], launch_group[at[hit]]
        ids, at_id = np.unique(d.metadata_ids()[rows], return_inverse=True)
        t = np.array([gpu_event_type(d.name_of(m)) for m in ids.tolist()], np.int32)[at_id.reshape(-1)] \
            if len(rows) else np.zeros(0, np.int32)
        starts.append(d.start[rows])
        ends.append(d.start[rows] + d.duration[rows])
        types.append(t)
        step_of.append(group)
    if not starts:
        return empty
    n = len(groups.roots)
    # The step's span: the longest of its spans on each GPU (the first of equal ones).
    begin = np.zeros(n, np.int64)
    finish = np.zeros(n, np.int64)
    for p_start, p_end, p_step in zip(starts, ends, step_of):
        lo = np.full(n, np.iinfo(np.int64).max, np.int64)
        hi = np.zeros(n, np.int64)
        np.minimum.at(lo, p_step, p_start)
        np.maximum.at(hi, p_step, p_end)
        longer = (hi > 0) & (hi - lo > finish - begin)
        begin[longer], finish[longer] = lo[longer], hi[longer]
    start, end, etype, step = (np.concatenate(x) for x in (starts, ends, types, step_of))
    order = np.argsort(step, kind="stable")
    times, seen = _steps.step_sweep(start[order], end[order], etype[order], step[order], begin, finish)
    duration = np.where(finish > 0, finish - begin, 0)
    return swept_step_db(times, seen, begin, duration, (DEVICE_COMPUTE_32, DEVICE_COMPUTE_16))


# ---------------------------------------------------------------- device capabilities


def plane_stats(space: XSpaceData, plane: int) -> dict[str, object]:
    """A plane's own stats (XPlane.stats: the device's capabilities), by name; strings of ref_values resolved."""
    from profscope.models.core import _protowire as wire
    from profscope.protos import xplane_pb2

    buf = space.buf
    (planes,) = wire.find_fields(buf, 0, len(buf), [1])  # XSpace.planes
    if plane >= len(planes):
        return {}
    o, n = (int(x) for x in planes[plane])
    (stats,) = wire.find_fields(buf, o, o + n, [6])  # XPlane.stats
    names = space.planes[plane].stat_names
    out: dict[str, object] = {}
    for so, sn in stats.tolist():
        stat = xplane_pb2.XStat.FromString(bytes(buf[so : so + sn]))
        kind = stat.WhichOneof("value")
        value = getattr(stat, kind) if kind else 0
        if kind == "ref_value":
            value = names.get(int(value), "")
        out[names.get(stat.metadata_id, "")] = value
    return out


def gpu_model_name(caps: dict[str, object]) -> str:
    """XProf's GpuModelName of a GPU plane's capabilities."""
    vendor = caps.get("device_vendor", "")
    major, minor = (int(caps.get(k, 0) or 0) for k in ("compute_cap_major", "compute_cap_minor"))  # type: ignore
    if vendor == "Nvidia":
        names = {2: "Fermi", 3: "Kepler", 5: "Maxwell", 6: "Pascal", 9: "Hopper", 10: "Blackwell"}
        if major == 7:
            return f"Nvidia GPU ({'Volta' if minor < 5 else 'Turing'})"
        if major == 8:
            return f"Nvidia GPU ({'Ampere' if minor < 9 else 'Ada Lovelace'})"
        return f"Nvidia GPU ({names[major]})" if major in names else "Nvidia GPU"
    if vendor == "AMD":
        return {9: "AMD GPU - gfx-9XX series", 10: "AMD GPU - gfx-10XX series",
                11: "AMD GPU - gfx-11XX series"}.get(major, "AMD GPU")
    return ""


# Peak FLOPs per SM (CU) per cycle, the most of the fp32 and fp16 vector and matrix units (XProf's tables),
# by NVIDIA compute capability (major * 1000 + minor * 10) and by AMD architecture.
_NVIDIA_FLOPS_PER_SM_CYCLE = {10000: 8192, 9000: 4096, 8090: 1024, 8060: 1024, 8000: 2048, 7050: 1024, 7000: 1024,
                              6010: 256, 6000: 256, 5000: 256, 3000: 384, 2000: 64}
_AMD_FLOPS_PER_CU_CYCLE = {"gfx908": 1024, "gfx90a": 2048, "gfx942": 2048, "gfx950": 4096}
_AMD_LDS_BYTES_PER_CU_CYCLE = {"gfx908": 128.0, "gfx90a": 128.0, "gfx942": 128.0, "gfx950": 256.0}


@dataclass
class GpuRoofs:
    """A GPU's peaks as XProf computes them from its capabilities: GFLOP/s, and bytes/s of HBM and shared memory."""

    peak_gflops: float
    hbm_bytes_per_s: float
    shared_bytes_per_s: float


def gpu_roofs(caps: dict[str, object]) -> GpuRoofs:
    vendor = caps.get("device_vendor", "")
    major, minor = (int(caps.get(k, 0) or 0) for k in ("compute_cap_major", "compute_cap_minor"))  # type: ignore
    ghz = float(caps.get("clock_rate", 0) or 0) / 1e6  # type: ignore[arg-type]  # kHz
    cores = int(caps.get("core_count", 0) or 0)  # type: ignore[call-overload]
    per_cycle = 0.0
    shared = 0.0
    if vendor == "Nvidia":
        known = sorted(_NVIDIA_FLOPS_PER_SM_CYCLE)
        cap = major * 1000 + minor * 10
        below = [k for k in known if k <= cap]  # an unknown capability takes the closest older one
        per_cycle = _NVIDIA_FLOPS_PER_SM_CYCLE[below[-1] if below else known[0]]
        shared = 32 * 4 / 2 if major <= 2 else 32 * 8
    elif vendor == "AMD":
        name = str(caps.get("device_name", "") or "").split(":")[0]
        gfx = name or {(9, 4): "gfx942", (9, 5): "gfx950"}.get((major, minor), "")
        per_cycle = _AMD_FLOPS_PER_CU_CYCLE.get(gfx, 0)
        shared = _AMD_LDS_BYTES_PER_CU_CYCLE.get(gfx, 0.0)
    return GpuRoofs(per_cycle * ghz * cores, float(caps.get("memory_bandwidth", 0) or 0),  # type: ignore[arg-type]
                    shared * ghz * 1e9 * cores)


def first_gpu_roofs(spaces: list[XSpaceData]) -> GpuRoofs | None:
    """The roofs of the XSpaces' first GPU plane (XProf's PerfEnv of a GPU profile); None without one."""
    for space in spaces:
        planes = gpu_planes(space)
        if planes:
            return gpu_roofs(plane_stats(space, planes[0]))
    return None
