"""XProf's op_profile and roofline_model of TPU planes (op_profile_builder, op_stats_to_roofline_model and
op_metrics_to_record as XProf 2.24.2 gives them), from the TensorCores' device op metrics (tpu_ops.py: the ops'
metadata gives their FLOPs, model FLOPs, bytes and bytes by memory space) and the TPU step db (tpu_steps.py).

The device's peaks are the first TPU plane's stats (peak_teraflops_per_second and the HBM, SRAM, CMEM and VMEM
bandwidths, has_megacore, has_merged_vmem); several hosts combine them as XProf does: the last host's positive
FLOP rate, the first host's bandwidths, and none of the flags.

op_profile: program (the module's name and program id from the HLO protos, else "main") > category > op, or
category > op; IDLE a leaf of the root. A node's FLOP utilisation is its FLOP rate against the peak, capped at 1,
times its share of the tree's time (the profile's, or its op time without IDLE); its bandwidth utilisations are
HBM (read and write), on-chip read and on-chip write against their peaks, from the ops' memory breakdown only.
Children by time, most first (equal ones where libstdc++'s partial sort leaves them), at most 100 below a
category; ops XLA deduplicated (deduplicated_name) or of one name in two programs under one category are one
group, "<its longest op> and its duplicate(s)"; a group of one op is that op. An op holding other ops counts in
its program's time, not in the tree (its inner ops do); an op's children are the instructions fused into it (its
metadata's child_id).

roofline_model: the whole profile (a "Program" row, then each op by self time), the complete steps' average
("Average": the steps' time over their number, FLOP rates over their whole time) and a "Program" row per step,
with and without infeed and outfeed (their time left out of the program's). An op's FLOP rate, memory
bandwidths and operational intensities, what bounds it (the resource used closest to its peak: compute, HBM,
CMEM or VMEM read or write), its roofline efficiency and the optimal FLOP rate at that efficiency.

TPU hosts beside GPU hosts: both tools over XProf's one combined db (with_other_ops: the GPUs' rows, TF kernels
or XLA ops with XLA's GPU costs, beside the TensorCores' ops) against the combined perf env
(tpu_ops.session_perf_env).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from profscope.models.analysis.xprof.op_stats import IDLE
from profscope.models.analysis.xprof.tpu_ops import (
    BOUNDS,
    CMEM_RD,
    CMEM_WR,
    GIB,
    HBM,
    HBM_RW,
    READ,
    SRAM_RD,
    SRAM_WR,
    VMEM_RD,
    VMEM_WR,
    WRITE,
    PerfEnv,
    TpuOps,
    perf_env,
    roofline_metrics,
    safe_divide,
    safe_divides,
    tpu_op_metrics,
)
from profscope.models.formats.xspace.xplane import XSpaceData

INNER_OPS = ("call", "conditional", "while", "megacore fusion")  # their time holds other ops' (XProf's MayHaveInnerOps)
CHILDREN_LIMIT = 100  # XProf's op_profile_limit


def _io(category: str) -> bool:
    return "infeed" in category or "outfeed" in category  # XProf's IsInfeedOrOutfeed


@dataclass
class Metrics:
    """An op's or a group's sums (XProf's OpMetrics): time (ps), occurrences, FLOPs, model FLOPs, bytes and
    bytes by memory space and operation (4 x 3; `breakdown`: any op had a memory breakdown)."""

    time: int = 0
    occurrences: int = 0
    flops: float = 0.0
    model: float = 0.0
    bytes: float = 0.0
    normalized: int = 0
    memory: np.ndarray = field(default_factory=lambda: np.zeros((4, 3)))
    breakdown: bool = False

    def add(self, other: Metrics) -> None:
        """XProf's CombineOpMetrics."""
        self.occurrences += other.occurrences
        self.update(other, other.time)

    def update(self, other: Metrics, self_ps: int, nested: bool = False) -> None:
        """XProf's UpdateNodeMetrics (a program or the root): the op's self time, no occurrences; an op holding
        other ops (`nested`) adds no FLOPs or bytes (its inner ops do)."""
        self.time += self_ps
        self.normalized += other.normalized
        if nested:
            return
        self.flops += other.flops
        self.model += other.model
        self.bytes += other.bytes
        self.memory = self.memory + other.memory
        self.breakdown = self.breakdown or other.breakdown


def op_metrics(ops: TpuOps, i: int) -> Metrics:
    """Row i's metrics; its normalized time is its time: XProf 2.24.2 reads no time scale (DVFS) of TPU ops
    (tpu_mem's time_scale_multiplier stats change nothing)."""
    n, t = int(ops.occurrences[i]), int(ops.time_ps[i])
    flops, model, size = (float(x) * n for x in ops.per_run[i])
    if len(ops.gpu) and ops.gpu[i]:  # a GPU's op: its own FLOPs (not per run), no normalized time
        flops = model = float(ops.flops[i])
        return Metrics(t, n, flops, model, float(ops.bytes[i]), 0, ops.memory[i], bool(ops.has_breakdown[i]))
    return Metrics(t, n, flops, model, size, t, ops.per_run_memory[i] * n, bool(ops.has_breakdown[i]))


# ---------------------------------------------------------------- op_profile


@dataclass
class Node:
    name: str
    metrics: Metrics = field(default_factory=Metrics)
    children: list[Node] = field(default_factory=list)
    xla: dict | None = None
    count: int = 0  # numChildren


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else float(x)  # XProf writes whole numbers without a fraction


def _xla(program: int, category: str, provenance: str, expression: str, stack: str = "") -> dict:
    return {"op": "", "expression": expression, "provenance": provenance, "category": category,
            "computationPrimitiveSize": 0, "fingerprint": "0", "programId": str(program),
            "sourceInfo": {"fileName": "", "lineNumber": 0, "stackFrame": stack}, "xprofKernelMetadata": ""}


def _metrics_json(m: Metrics, env: PerfEnv, total_ps: int) -> dict:
    """XProf's PopulateOpMetricsNode."""
    ns = m.time / 1000
    rate = safe_divide(m.flops, m.normalized / 1000) if m.normalized else safe_divide(m.flops, ns)  # normalized on DVFS
    uncapped = safe_divide(rate, env.peak_gflops)
    share = safe_divide(m.time, total_ps)
    peaks = [env.bw(k) / GIB for k in (HBM_RW, SRAM_RD, SRAM_WR)]
    hbm = safe_divide(float(m.memory[HBM, READ]), ns) / GIB + safe_divide(float(m.memory[HBM, WRITE]), ns) / GIB
    on_chip = m.memory.sum(axis=0) - m.memory[HBM]  # every space but HBM
    sram_read, sram_write = safe_divide(float(on_chip[READ]), ns) / GIB, safe_divide(float(on_chip[WRITE]), ns) / GIB
    rates = (hbm, sram_read, sram_write)
    return {
        "flops": _number(min(uncapped, 1.0) * share),
        "bandwidthUtils": [_number(min(safe_divide(r, p), 1.0)) for r, p in zip(rates, peaks)],
        "rawTime": m.time,
        "rawFlops": _number(m.model),
        "rawBytesAccessedArray": [_number(r * GIB * ns) for r in rates],
        "occurrences": m.occurrences,
        "avgTimePs": _number(safe_divide(m.time, m.occurrences)),
        "bf16Flops": _number(m.flops),
        "uncappedFlops": _number(uncapped * share),
        "normalizedTimePs": m.normalized,
    }


def _fused_nodes(fused: list) -> list[Node]:
    """XProf's InsertFusedInstructions: an op's fused instructions as its children, each one run, no time."""
    return [Node(f.name, Metrics(0, 1, f.flops, f.model, f.bytes, 0, f.memory, f.breakdown),
                 _fused_nodes(f.children), _xla(f.program, f.category, f.provenance, f.long_name, f.stack))
            for f in fused]


def _sort_and_prune(node: Node, level: int) -> None:
    """XProf's SortAndPruneChildren: children by time, most first (a fusion's by model FLOPs), as libstdc++'s
    partial sort orders equals; below the grouping levels at most 100."""
    from profscope.models.analysis.xprof.cpp_sort import std_partial_sort

    node.count = len(node.children)
    for child in node.children:
        _sort_and_prune(child, level - 1)
    k = len(node.children) if level > 0 else CHILDREN_LIMIT
    if len(node.children) > 1:  # std::partial_sort: equal children end where its heap leaves them
        if node.xla is not None and node.xla["category"].endswith(" fusion"):
            node.children = std_partial_sort(node.children, k, lambda a, b: a.metrics.model > b.metrics.model)
        else:
            node.children = std_partial_sort(node.children, k, lambda a, b: a.metrics.time > b.metrics.time)
    del node.children[k:]


def _finalize(node: Node) -> Node:
    """XProf's FinalizeDeduplicatedNodes: a group without XLA details whose children all have them is one op
    (then it is that op) or duplicates of one ("<name> and its duplicate(s)", the first child's details)."""
    if not node.children or node.xla is not None or any(c.xla is None for c in node.children):
        node.children = [_finalize(c) for c in node.children]
        return node
    if len(node.children) == 1:
        return node.children[0]
    first = node.children[0]
    node.name = f"{first.name} and its duplicate(s)"
    assert first.xla is not None
    node.xla = dict(first.xla, provenance="" if first.xla["category"].endswith(" fusion") else first.xla["provenance"])
    return node


def _node_json(node: Node, env: PerfEnv, total_ps: int) -> dict:
    out: dict = {"name": node.name, "metrics": _metrics_json(node.metrics, env, total_ps),
                 "children": [_node_json(c, env, total_ps) for c in node.children]}
    if node.xla is not None:
        out["xla"] = node.xla
    out["numChildren"] = node.count
    return out


def program_names(paths: list[Path]) -> dict[int, str]:
    """Program id -> "<module>(<program id>)" from the HLO protos of the XSpaces' metadata planes."""
    from profscope.models.analysis.xprof.hlo_source import xspace_modules

    names: dict[int, str] = {}
    for path in paths:
        for name in xspace_modules(path):
            program = name[name.rfind("(") + 1:-1]
            if program.isdigit():
                names.setdefault(int(program), name)
    return names


def tpu_op_tree(ops: TpuOps, env: PerfEnv, names: dict[int, str], by_program: bool, idle: bool,
                total_ps: int | None = None) -> dict:
    """XProf's op profile tree (BuildOpProfileNodeTree) of the TensorCores' op metrics; `total_ps` the tree's
    whole time where other devices' ops share it."""
    root = Node(f"by_{'program' if by_program else 'category'}")
    programs: dict[int, Node] = {}
    categories: dict[tuple[int, str], Node] = {}
    duplicates: dict[tuple[int, str, str], Node] = {}
    idle_ps = ops.total_ps - ops.op_ps
    rows: list[int | None] = [*range(len(ops)), None]  # the ops, then IDLE (XProf adds it last)
    for i in rows:
        if i is None:
            if not idle:
                continue
            root.metrics.update(Metrics(), idle_ps)
            root.children.append(Node(IDLE, Metrics(time=idle_ps), xla=_xla(0, IDLE, "", "")))
            continue
        if ops.name[i].startswith("region"):
            continue  # XProf leaves out ops that cannot be symbolised
        m = op_metrics(ops, i)
        self_ps = int(ops.self_ps[i])
        nested = self_ps < m.time  # it holds other ops: XProf counts them, not it
        root.metrics.update(m, self_ps, nested)
        parent = root
        program = ops.program[i] if by_program else -1
        if by_program:
            if program not in programs:
                programs[program] = Node(names.get(program, "main"))
                root.children.append(programs[program])
            parent = programs[program]
            parent.metrics.update(m, self_ps, nested)
        if nested:
            continue
        category = categories.get((program, ops.category[i]))
        if category is None:
            category = categories[program, ops.category[i]] = Node(ops.category[i])
            parent.children.append(category)
        key = ops.deduplicated[i] or ops.name[i]  # ops XLA deduplicated, or of one name, are one group
        group = duplicates.get((program, ops.category[i], key))
        if group is None:
            group = duplicates[program, ops.category[i], key] = Node(key)
            category.children.append(group)
        if len(ops.gpu) and ops.gpu[i]:  # a GPU's XLA op: its source, as XProf's GPU op profile gives it
            from profscope.models.analysis.xprof.op_profile import _xla_info

            xla = _xla_info(ops.name[i], ops.long_name[i], ops.framework[i], ops.category[i], str(ops.program[i]),
                            ops.source_info[i], -1)
        else:
            xla = _xla(ops.program[i], ops.category[i], ops.framework[i], ops.long_name[i], ops.source_stack[i])
        leaf = Node(ops.name[i], xla=xla, children=_fused_nodes(ops.fused[i]))
        group.children.append(leaf)
        for node in (category, group, leaf):
            node.metrics.add(m)
    total_ps = (ops.total_ps if idle else ops.op_ps) if total_ps is None else total_ps
    root.metrics.time = total_ps
    _sort_and_prune(root, 2 if by_program else 1)
    return _node_json(_finalize(root), env, total_ps)


def tpu_op_profile(spaces: list[XSpaceData], paths: list[Path], by: str) -> dict:
    ops = tpu_op_metrics(spaces)
    env = perf_env(spaces)
    names = program_names(paths) if by == "program" else {}
    key = f"by{by.capitalize()}"
    return {key: tpu_op_tree(ops, env, names, by == "program", idle=True), "deviceType": "TPU",
            f"{key}ExcludeIdle": tpu_op_tree(ops, env, names, by == "program", idle=False),
            "aggDvfsTimeScaleMultiplier": 1 if ops.op_ps else 0}  # normalized op time over op time


def beside_gpus_op_profile(spaces: list[XSpaceData], paths: list[Path], by: str, gpu_hosts: list[XSpaceData],
                           tpu_hosts: list[XSpaceData]) -> dict:
    """XProf's op profile of a session of TPU and GPU hosts: one tree of both kinds of ops (the TensorCores'
    programs or categories beside the GPUs', by time; IDLE both devices' idle time), the utilisations against
    XProf's combined perf env (tpu_ops.session_perf_env). GPU XLA ops are rows of the TensorCores' tree (their
    modules, categories and costs); TensorFlow kernels their own subtrees, without FLOPs."""
    from profscope.models.analysis.xprof.device_op_metrics import device_stats
    from profscope.models.analysis.xprof.op_profile import _device_tree
    from profscope.models.analysis.xprof.op_stats import IDLE
    from profscope.models.core.task import ProfileError

    gpu = device_stats(gpu_hosts, paths, steps=False)
    tpu = tpu_op_metrics(tpu_hosts)
    if gpu.xla:
        raise ProfileError(gpu.xla)
    from profscope.models.analysis.xprof.tpu_ops import session_perf_env

    env = session_perf_env(spaces)
    names = program_names(paths) if by == "program" else {}
    others: list[dict] = []
    other_ps = gpu.ops.total_op_time_ps
    if gpu.xla_ops is not None:  # XLA ops: rows of the one tree beside the TensorCores', with their costs
        ops = with_other_ops(tpu, gpu.ops, gpu.xla_ops, first=spaces.index(gpu_hosts[0]) < spaces.index(tpu_hosts[0]))
    else:  # TensorFlow kernels: their own subtrees (no FLOPs), beside the TensorCores' tree
        ops = tpu
        other = _device_tree(gpu.ops, by, idle=False)
        other_ps = other["metrics"]["rawTime"]
        others = other["children"] if other["name"] == f"by_{by}" else [other]
        if by == "program":  # the GPUs' ops are program 0's: named as the session's modules name it
            for node in others:
                node["name"] = names.get(0, node["name"]) if node["name"] == "main" else node["name"]
    idle_ps = tpu.total_ps - tpu.op_ps + gpu.ops.total_time_ps - other_ps
    key = f"by{by.capitalize()}"
    out: dict = {}
    for suffix, idle in (("", True), ("ExcludeIdle", False)):
        total = tpu.op_ps + other_ps + (idle_ps if idle else 0)
        root = tpu_op_tree(ops, env, names, by == "program", idle=False, total_ps=total)
        children = root["children"] + others
        if idle:
            children.append(_node_json(Node(IDLE, Metrics(time=idle_ps), xla=_xla(0, IDLE, "", "")), env, total))
        root["children"] = sorted(children, key=lambda n: -n["metrics"]["rawTime"])
        root["numChildren"] = len(children)
        out[key + suffix] = root
        if not suffix:
            out["deviceType"] = "TPU"
    # Normalized op time over op time: the TensorCores' op time is normalized (no DVFS scale read), the GPUs' not.
    out["aggDvfsTimeScaleMultiplier"] = safe_divide(tpu.op_ps, tpu.op_ps + other_ps)
    return out


# ---------------------------------------------------------------- roofline_model


@dataclass
class StepEvents:
    """The steps' op metrics (XProf's per-step hlo_metrics_db) as op events: each one's step, row in TpuOps and
    duration; per step the cores' step time (each core's step lasts the step's)."""

    step: np.ndarray
    slots: np.ndarray
    time_ps: np.ndarray
    total_ps: np.ndarray


def step_events(ops: TpuOps, steps) -> StepEvents:
    step, slots, times = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
    hosts: dict[int, int] = {}
    host = [np.zeros(0, np.int64)]
    for space, rows, which in steps.op_rows:  # per core: its counted ops' rows and steps
        known_rows, known_slots = ops.slots.get(id(space), (np.zeros(0, np.int64), np.zeros(0, np.int64)))
        if not len(rows) or not len(known_rows):
            continue
        at = np.minimum(np.searchsorted(known_rows, rows), len(known_rows) - 1)
        found = known_rows[at] == rows
        step.append(which[found])
        slots.append(known_slots[at[found]])
        times.append(space.events.duration_ps[rows[found]].astype(np.int64))
        host.append(np.full(int(found.sum()), hosts.setdefault(id(space), len(hosts))))
    # Each step's time on the cores that have op metrics in it (a GPU host's core beside TPUs has none).
    totals = (steps.core_ps * steps.counted).sum(axis=1)
    order = np.lexsort((np.concatenate(step), np.concatenate(host)))  # by host, step, core (XProf's sums' order)
    return StepEvents(np.concatenate(step)[order], np.concatenate(slots)[order], np.concatenate(times)[order],
                      totals.astype(np.int64))


@dataclass
class Groups:
    """k ops or groups of ops (XProf's OpMetrics of each): time, occurrences, FLOPs, model FLOPs, bytes, bytes by
    memory space and operation (k, 4, 3), whether any had a memory breakdown."""

    time: np.ndarray
    occurrences: np.ndarray
    flops: np.ndarray
    model: np.ndarray
    bytes: np.ndarray
    memory: np.ndarray
    breakdown: np.ndarray


Coded = tuple[np.ndarray, list]  # a column of strings or booleans: ids into its values


class _Roofline:
    """XProf's roofline records of one TPU session (ConvertOpStatsToRooflineModel)."""

    def __init__(self, ops: TpuOps, env: PerfEnv, cores: int, steps: int):
        self.ops, self.env, self.cores, self.steps = ops, env, cores, steps
        self.inner = np.array([c in INNER_OPS for c in ops.category], bool)
        self.io = np.array([_io(c) for c in ops.category], bool)
        self.peak_hbm = env.bw(HBM_RW) / GIB
        cmem, vmem = env.has_cmem, not env.has_cmem and env.has_merged_vmem
        self.peak_cmem = (env.bw(CMEM_RD) / GIB, env.bw(CMEM_WR) / GIB) if cmem else (0.0, 0.0)
        self.peak_vmem = (env.bw(VMEM_RD) / GIB, env.bw(VMEM_WR) / GIB) if vmem else (0.0, 0.0)

    def records(self, steps: Coded, names: Coded, categories: Coded, programs: Coded, g: Groups,
                self_ps: np.ndarray, total_ps: np.ndarray, include: bool, sources: Coded | None = None,
                average: bool = False) -> list:
        """The rows' columns (XProf's ConvertOpMetricsToRooflineModelRecord; rank and shares filled by the
        caller): float64 arrays for numbers, (ids, values) for strings and booleans."""
        total_us, self_us = g.time / 1e6, self_ps / 1e6
        avg_us, avg_self_us = safe_divides(total_us, g.occurrences), safe_divides(self_us, g.occurrences)
        if average:  # the complete steps' average: their time over their number
            total_us, self_us = safe_divides(total_us, self.steps), safe_divides(self_us, self.steps)
        r = roofline_metrics(g.flops, g.model, g.bytes, g.memory, g.breakdown, g.time, self.env)
        flops_use = safe_divides(r.rate, self.env.peak_gflops)
        bws, peaks = r.on_chip_bw, (*self.peak_cmem, *self.peak_vmem)
        memory_use = np.maximum.reduce([safe_divides(bws[:, 1], peaks[1]), safe_divides(bws[:, 0], peaks[0]),
                                        safe_divides(r.hbm_bw, self.peak_hbm), safe_divides(bws[:, 3], peaks[3]),
                                        safe_divides(bws[:, 2], peaks[2])])
        efficiency = np.maximum(memory_use, flops_use)
        k = len(g.time)
        zero = np.zeros(k)
        same = np.zeros(k, np.int64)
        bound = (r.bound_id, [*BOUNDS, "Unknown"])
        return [steps, zero, categories, names, g.occurrences.astype(np.float64), total_us, avg_us, self_us,
                avg_self_us, zero, zero, zero, r.rate, r.model_rate, r.memory_bw, r.hbm_bw, *r.on_chip_bw.T,
                r.intensity, r.hbm_intensity, *r.on_chip_intensity.T, r.bottleneck_intensity, bound,
                safe_divides(total_us, self.cores), safe_divides(g.time, total_ps), safe_divides(r.rate, efficiency),
                efficiency, flops_use, memory_use, (same, [include]), programs, sources or (same, [""])]

    def programs(self, names: list[str], group: np.ndarray, slots: np.ndarray, runs: np.ndarray, times: np.ndarray,
                 totals: np.ndarray, include: bool, average: bool = False) -> list:
        """XProf's GenerateRooflineModelProgramRecord of dbs (their ops' rows, runs and times, each one's db):
        the innermost ops' FLOPs and bytes over the db's time (less infeed and outfeed when left out)."""
        ops, k = self.ops, len(names)
        inner, io = self.inner[slots], self.io[slots]
        use = ~inner & (include | ~io)
        at, n, where = slots[use], runs[use].astype(np.float64), group[use]
        sums = [np.bincount(where, ops.per_run[at, c] * n, k) for c in range(3)]
        memory = np.zeros((k, 4, 3))
        for a, b in zip(*np.nonzero(ops.per_run_memory.any(axis=0))):  # the spaces and operations any op has
            memory[:, a, b] = np.bincount(where, ops.per_run_memory[at, a, b] * n, k)
        breakdown = np.bincount(where, ops.has_breakdown[at] & (n > 0), k) > 0
        io_ps = 0 if include else np.bincount(group[~inner & io], times[~inner & io], k).astype(np.int64)
        time = totals - io_ps
        g = Groups(time, np.ones(k, np.int64), sums[0], sums[1], sums[2], memory, breakdown)
        same = np.zeros(k, np.int64)
        return self.records((np.arange(k), names), (same, ["Program"]), (same, ["Program"]), (same, ["0"]), g,
                            np.zeros(k), time, include, average=average)

    def rows(self, steps: list[str], events: StepEvents, include: bool) -> list:
        """The table's columns for one include_infeed_outfeed: the whole profile, its ops, the average step,
        each step."""
        ops = self.ops
        total_ps = np.array([ops.total_ps], np.int64)
        every = np.arange(len(ops))
        blocks = [self.programs(["Total"], np.zeros(len(ops), np.int64), every, ops.occurrences, ops.time_ps,
                                total_ps, include)]
        op_total = int(total_ps[0]) - (0 if include else int(ops.time_ps[self.io].sum()))
        order = [i for i in sorted(range(len(ops)), key=lambda k: (-int(ops.self_ps[k]), ops.name[k]))[:1000]
                 if ops.occurrences[i] and (include or not self.io[i])]
        at = np.array(order, np.int64)
        g = Groups(ops.time_ps[at], ops.occurrences[at], ops.flops[at], ops.model_flops[at], ops.bytes[at],
                   ops.memory[at], ops.has_breakdown[at])
        each = np.arange(len(at))
        records = self.records((np.zeros(len(at), np.int64), ["Total"]), (each, [ops.name[i] for i in order]),
                               (each, [ops.category[i] for i in order]), (each, [str(ops.program[i]) for i in order]),
                               g, ops.self_ps[at], np.full(len(at), op_total), include,
                               (each, [ops.source[i] for i in order] if ops.source else [""] * len(at)))
        shares = safe_divides(ops.self_ps[at] / 1e6, op_total / 1e6)
        records[1], records[9], records[10] = np.arange(1.0, len(at) + 1), shares, np.cumsum(shares)
        blocks.append(records)
        ones = np.ones(len(events.slots), np.int64)
        blocks.append(self.programs(["Average"], np.zeros(len(events.slots), np.int64), events.slots, ones,
                                    events.time_ps, np.array([events.total_ps.sum()], np.int64), include,
                                    average=True))
        blocks.append(self.programs(steps, events.step, events.slots, ones, events.time_ps, events.total_ps, include))
        return joined(blocks)


def joined(blocks: list[list]) -> list:
    """Blocks of rows' columns (float64 arrays, or Coded) one after the other."""
    out: list = []
    for parts in zip(*blocks):
        if isinstance(parts[0], np.ndarray):
            out.append(np.concatenate(parts))
            continue
        offsets = np.cumsum([0] + [len(values) for _, values in parts[:-1]])
        out.append((np.concatenate([ids + at for (ids, _), at in zip(parts, offsets.tolist())]),
                    [v for _, values in parts for v in values]))
    return out


def _g(x: float) -> str:
    return f"{x:.6g}"  # C++ streams' 6 significant digits


def with_other_ops(ops: TpuOps, db, xla=None, first: bool = False) -> TpuOps:
    """The TensorCores' ops and another device's (an OpMetricsDb, IDLE last: GPU kernels, program 0, no FLOPs or
    bytes; or with `xla`, the GPUs' XLA ops of that db: their programs, expressions, sources and XLA's GPU costs,
    the HBM bytes their memory breakdown where XLA gives one) as XProf's one combined device op metrics db, the
    other device's rows after the TensorCores' (`first`: before, as XProf's combiner adds a first host's); its
    time both devices'."""
    from profscope.models.analysis.xprof.xla_ops import source_cell

    n = len(db) - 1
    runs = np.maximum(db.occurrences[:n], 1).astype(np.float64)
    flops, size, hbm = (c[:n] for c in db.costs())
    memory = np.zeros((n, 4, 3))
    memory[:, HBM, READ] = hbm / runs
    mine, theirs = len(ops), n

    def join(a, b):
        return (b + a if first else a + b) if isinstance(a, list) else (np.r_[b, a] if first else np.r_[a, b])

    return replace(
        ops, name=join(ops.name, db.name[:n]), category=join(ops.category, db.category[:n]),
        framework=join(ops.framework, (db.provenance or [""] * len(db))[:n]),
        occurrences=join(ops.occurrences, db.occurrences[:n]), time_ps=join(ops.time_ps, db.time_ps[:n]),
        self_ps=join(ops.self_ps, db.self_time_ps[:n]), flops=join(ops.flops, flops), bytes=join(ops.bytes, size),
        program=join(ops.program, list(xla.program_id) if xla is not None else [0] * n),
        total_ps=ops.total_ps + db.total_time_ps,
        long_name=join(ops.long_name, list(xla.expression) if xla is not None else [""] * n),
        per_run=join(ops.per_run, np.column_stack([flops / runs, flops / runs, size / runs])),
        per_run_memory=join(ops.per_run_memory, memory), has_breakdown=join(ops.has_breakdown, hbm > 0),
        deduplicated=join(ops.deduplicated, [""] * n), source_stack=join(ops.source_stack, [""] * n),
        fused=join(ops.fused, [[] for _ in range(n)]),
        source=join(ops.source or [""] * mine, [source_cell(s) for s in xla.source] if xla is not None else [""] * n),
        gpu=join(np.zeros(mine, bool), np.ones(theirs, bool)),
        source_info=join([None] * mine, list(xla.source) if xla is not None else [None] * n),
        slots={k: (rows, at + (n if first else 0)) for k, (rows, at) in ops.slots.items()})


def tpu_roofline_tables(spaces: list[XSpaceData], device, gpu=None, xla=None) -> list[dict]:
    """XProf's roofline_model of TPU hosts: the records with and without infeed/outfeed, the device's roofs
    in the table's properties, the step diagnostics. With `gpu` (GPU hosts' kernels beside, an OpMetricsDb): their
    ops beside the TensorCores', the combined perf env's roofs."""
    from profscope.models.analysis.xprof.datatable import Rows, table
    from profscope.models.analysis.xprof.input_pipeline import NO_STEP_MARKER, diagnostics_table
    from profscope.models.analysis.xprof.roofline import COLUMNS
    from profscope.models.analysis.xprof.step_intersection import EMPTY_INTERSECT
    from profscope.models.analysis.xprof.tpu_steps import TpuSteps

    ops = tpu_op_metrics(spaces)
    env = perf_env(spaces)
    # Normalized op time over op time: the TensorCores' op time is normalized (no DVFS scale read), the GPUs' not.
    scale = "1" if ops.op_ps else "0"
    if gpu is not None:
        scale = _g(safe_divide(ops.op_ps, ops.op_ps + gpu.total_op_time_ps))
        from profscope.models.analysis.xprof.tpu_ops import session_perf_env

        ops, env = with_other_ops(ops, gpu, xla), session_perf_env(spaces)
    steps = device.tpu_steps or TpuSteps()
    named = [str(number) for number in steps.number.tolist()]
    events = step_events(ops, steps)
    roofline = _Roofline(ops, env, device.core_count, len(named))
    rows = Rows(joined([roofline.rows(named, events, True), roofline.rows(named, events, False)]))
    peak = env.peak_gflops
    ridge = lambda gib: _g(safe_divide(peak, gib * GIB))  # noqa: E731
    p = {
        "cmem_read_ridge_point": ridge(roofline.peak_cmem[0]),
        "cmem_write_ridge_point": ridge(roofline.peak_cmem[1]),
        "device_type": device.device_type,  # the chip's type (device_type_string), if the planes name it
        "has_cmem": str(int(env.has_cmem)),
        "has_merged_vmem": str(int(env.has_merged_vmem)),
        "hbm_ridge_point": ridge(roofline.peak_hbm),
        "megacore": str(int(env.megacore)),
        "peak_cmem_read_bw": _g(roofline.peak_cmem[0]),
        "peak_cmem_write_bw": _g(roofline.peak_cmem[1]),
        "peak_flop_rate": _g(peak),
        "peak_hbm_bw": _g(roofline.peak_hbm),
        "peak_vmem_read_bw": _g(roofline.peak_vmem[0]),
        "peak_vmem_write_bw": _g(roofline.peak_vmem[1]),
        "time_scale_multiplier": scale,
        "vmem_read_ridge_point": ridge(roofline.peak_vmem[0]),
        "vmem_write_ridge_point": ridge(roofline.peak_vmem[1]),
    }
    warnings = [] if named else [EMPTY_INTERSECT if device.empty_intersect else NO_STEP_MARKER]
    return [table(COLUMNS, rows, p), diagnostics_table([], warnings)]
