"""XProf's step analysis of TPU planes (xplane_to_step_events, step_events_to_steps_db and the TPU part of
op_stats_to_input_pipeline_analysis, as XProf 2.24.2 gives them), for TensorCore planes whose XLA ops carry
no op metadata (program_id and symbol_id): every op is then outside XProf's op metrics, and each step's
TensorCore time is idle.

Grouping: the TensorCore's step events (its `Steps` line) are not tied to host events, so XProf groups them
itself after the host's groups, every core in lock step: the k-th step event of each core is group
(host groups + k). Each event of the other lines takes the group of the step event it overlaps.

A step is a group with a step event and XLA ops on a core; its time is the longest of its step events over
the cores; per core its breakdown is the op time by category plus IDLE (the rest of the step).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from profscope.models.analysis.xprof.datatable import column, table
from profscope.models.formats.xspace.xplane import HOST_PLANE, XSpaceData

TENSOR_CORE = re.compile(r"/device:TPU:(\d+)$")
STEP_LINE, OP_LINE = "Steps", "XLA Ops"
DBL_MIN = 2.2250738585072014e-308  # a tsl Stat<double>'s maximum before any value above it


@dataclass
class TpuSteps:
    """XProf's TPU step db: per step its group id, time (ps) and per TensorCore (by plane id) its own
    step time and its idle time."""

    number: list[int] = field(default_factory=list)
    begin_ps: list[int] = field(default_factory=list)
    duration_ps: list[int] = field(default_factory=list)
    per_core: list[dict[int, tuple[int, int]]] = field(default_factory=list)  # core -> (duration, idle) ps

    def __len__(self) -> int:
        return len(self.number)


def tensor_cores(space: XSpaceData) -> list[int]:
    return [i for i, p in enumerate(space.planes) if TENSOR_CORE.match(p.name)]


def _line_rows(space: XSpaceData, plane: int, name: str) -> np.ndarray:
    a, b = space.plane_rows(plane)
    on = np.array([ln.name == name for ln in space.lines], bool)
    rows = np.arange(a, b, dtype=np.int64)
    return rows[on[space.events.line[a:b]]] if b > a else rows


def tpu_steps(space: XSpaceData) -> TpuSteps:
    """The TPU step db of one XSpace's TensorCore planes."""
    from profscope.models.formats.xspace.groups import group_events

    host = space.plane_named(HOST_PLANE)
    first_group = len(group_events(space, host).roots) if host >= 0 else 0
    markers: dict[int, list[tuple[int, int, int]]] = {}  # group -> (core, begin, end) in core order
    with_ops: dict[int, set[int]] = {}  # group -> cores with XLA ops in it
    for plane in tensor_cores(space):
        core = space.planes[plane].id
        steps = _line_rows(space, plane, STEP_LINE)
        begin = space.start_ps(steps)
        end = begin + space.events.duration_ps[steps].astype(np.int64)
        order = np.argsort(begin, kind="stable")
        begin, end = begin[order], end[order]
        for k, (b, e) in enumerate(zip(begin.tolist(), end.tolist())):
            markers.setdefault(first_group + k, []).append((core, b, e))
        ops = _line_rows(space, plane, OP_LINE)
        if not len(ops) or not len(begin):
            continue
        op_begin = space.start_ps(ops)
        op_end = op_begin + space.events.duration_ps[ops].astype(np.int64)
        # The first step event overlapping each op (ends included, as tsl's Timespan::Overlaps).
        at = np.searchsorted(end, op_begin, side="left")
        hit = (at < len(begin)) & (begin[np.minimum(at, len(begin) - 1)] <= op_end)
        for k in np.unique(at[hit]).tolist():
            with_ops.setdefault(first_group + k, set()).add(core)
    out = TpuSteps()
    for group in sorted(set(markers) & set(with_ops)):
        longest = max(markers[group], key=lambda m: m[2] - m[1])  # the first of the longest
        out.number.append(group)
        out.begin_ps.append(longest[1])
        out.duration_ps.append(longest[2] - longest[1])
        step = longest[2] - longest[1]
        # Without op metrics every core's step is idle: its breakdown is IDLE of the step's time.
        out.per_core.append({core: (step, step) for core in sorted(with_ops[group])})
    return out


# ---------------------------------------------------------------- input pipeline (TPU)

TPU_STEP_COLUMNS = [
    column("stepnum", "string", "stepnum"),
    column("tcComputeTimeMs", "number", "TensorCore compute (in ms)"),
    column("scv0ComputeTimeMs", "number", "SparseCoreV0 compute (in ms)"),
    column("scv0InfeedTimeMs", "number", "SparseCoreV0 input (in ms)"),
    column("tcInfeedTimeMs", "number", "TensorCore input (in ms)"),
    column("tcOutfeedTimeMs", "number", "TensorCore output (in ms)"),
    column("tcIdleTimeMs", "number", "TensorCore idle (in ms)"),
    column("hostTransferTimeMs", "number", "Host transfer (in ms)"),
    column("tooltip", "string", "tooltip", {"role": "tooltip"}),
    column("infeedPercentAverage", "number", "% step time waiting for input data"),
    column("infeedPercentMin", "number", "Infeed percent min", {"role": "interval"}),
    column("infeedPercentMax", "number", "Infeed percent max", {"role": "interval"}),
]


@dataclass
class TpuStepDetails:
    """XProf's PerTpuStepDetails of each step (ms; infeed shares in percent)."""

    number: list[int]
    compute: list[float]
    infeed: list[float]
    outfeed: list[float]
    idle: list[float]
    infeed_percent: list[tuple[float, float, float]]  # average, minimum, maximum over the cores
    step_ms: list[float]  # the longest core's step time (XProf's step time summary)


def step_details(steps: TpuSteps) -> TpuStepDetails:
    d = TpuStepDetails([], [], [], [], [], [], [])
    for i, number in enumerate(steps.number):
        cores = steps.per_core[i]
        # Per core: the step time less its wait for the host (idle, infeed) is its best compute time.
        optimal = [duration - idle for duration, idle in cores.values()]
        infeed_pct = [0.0 for _ in cores]  # no infeed ops without op metrics
        compute = min(optimal) / 1e9 if optimal else 0.0
        shortest = min(duration for duration, _ in cores.values()) / 1e9 if cores else 0.0
        d.number.append(number)
        d.compute.append(compute)
        d.infeed.append(0.0)
        d.outfeed.append(0.0)
        d.idle.append(max(shortest - compute, 0.0) if cores else 0.0)
        d.infeed_percent.append((sum(infeed_pct) / len(infeed_pct), min(infeed_pct), max([DBL_MIN, *infeed_pct]))
                                if infeed_pct else (0.0, 0.0, 0.0))
        d.step_ms.append(max(duration for duration, _ in cores.values()) / 1e9 if cores else 0.0)
    return d


def tpu_step_table(d: TpuStepDetails, input_statement: str, next_step: str) -> dict:
    """XProf's TPU step-time DataTable (input pipeline's second, overview's second)."""
    from profscope.models.analysis.xprof.input_pipeline import one, summary, two

    avg, sdv, lo, hi = summary(d.step_ms)
    pct = summary([p[2] for p in d.infeed_percent])
    p = {
        "hardware_type": "TPU",
        "steptime_ms_average": two(avg), "steptime_ms_standard_deviation": two(sdv),
        "steptime_ms_minimum": two(lo), "steptime_ms_maximum": two(hi),
        "infeed_percent_average": one(pct[0]), "infeed_percent_standard_deviation": one(pct[1]),
        "infeed_percent_minimum": one(pct[2]), "infeed_percent_maximum": one(pct[3]),
        "step_time_graph_column_ids": "stepnum,tcComputeTimeMs,scv0ComputeTimeMs,scv0InfeedTimeMs,tcInfeedTimeMs,"
        "tcOutfeedTimeMs,tcIdleTimeMs,hostTransferTimeMs,tooltip",
        "scv0_compute_ms_average": two(0.0), "scv0_infeed_ms_average": two(0.0),
        "tc_compute_ms_average": two(summary(d.compute)[0]), "tc_infeed_ms_average": two(summary(d.infeed)[0]),
        "tc_outfeed_ms_average": two(summary(d.outfeed)[0]), "tc_idle_ms_average": two(summary(d.idle)[0]),
        "host_transfer_ms_average": two(0.0),
        # The busy part of the steps: nothing is busy without op metrics.
        "active_steptime_ms_average": two(summary([c + i + o for c, i, o in zip(d.compute, d.infeed, d.outfeed)])[0]),
        "tc_active_ms_average": two(summary(d.compute)[0]),
        "input_conclusion": input_statement, "output_conclusion": "", "summary_nextstep": next_step,
    }
    rows = []
    for i, number in enumerate(d.number):
        step = d.compute[i] + d.infeed[i] + d.outfeed[i] + d.idle[i]
        tooltip = f"step {number}:\nTime waiting for input data = {d.infeed[i]:.3f} ms, Step time = {step:.3f} ms"
        average, minimum, maximum = d.infeed_percent[i]
        rows.append([str(number), d.compute[i], 0.0, 0.0, d.infeed[i], d.outfeed[i], d.idle[i], 0.0, tooltip,
                     average, minimum, maximum])
    return table(TPU_STEP_COLUMNS, rows, p)


def max_infeed_core_table(d: TpuStepDetails) -> dict:
    """Per step the core that waited longest for infeed (none without infeed: "unknown")."""
    cols = [column("index", "string", "Index")] + [column(str(i), "string", str(i)) for i in range(len(d.number))]
    return table(cols, [["Step number", *map(str, d.number)], ["Core name", *["unknown"] * len(d.number)]])


def tpu_bottleneck(d: TpuStepDetails) -> tuple[str, str]:
    """XProf's TPU input classification and statement (ComputeTpuBottleneckAnalysis's input part)."""
    from profscope.models.analysis.xprof.input_pipeline import INPUT_HIGH, INPUT_MODERATE, one

    total = 0.0
    infeed = 0.0
    for i in range(len(d.number)):
        total += d.compute[i] + d.infeed[i] + d.outfeed[i] + d.idle[i]
        infeed += d.infeed[i]
    if total == 0:
        return "unknown", "No step time measured. Therefore we cannot tell where the performance bottleneck is."
    pct = 100.0 * infeed / total
    if pct >= INPUT_HIGH:
        return "host", (f"Your program is HIGHLY input-bound because {one(pct)}% of the total step time sampled is "
                        "waiting for input. Therefore, you should first focus on reducing the input time.")
    if pct >= INPUT_MODERATE:
        return "both", (f"Your program is MODERATELY input-bound because {one(pct)}% of the total step time sampled "
                        "is waiting for input. Therefore, you would need to reduce both the input time and other "
                        "time.")
    return "device", (f"Your program is NOT input-bound because only {one(pct)}% of the total step time sampled is "
                      "waiting for input. Therefore, you should focus on reducing other time.")


def tpu_input_pipeline_json(stats) -> list[dict]:
    """XProf's input_pipeline_analyzer of a TPU host (OpStats with tpu_steps)."""
    from profscope.models.analysis.xprof.input_pipeline import (
        NO_STEP_MARKER,
        InputAnalysis,
        StepDetails,
        _host_result,
        _next_step,
        input_pipeline_json,
    )
    from profscope.models.analysis.xprof.op_stats import StepDb

    none = np.zeros(0, np.int64)
    host = InputAnalysis("TPU", StepDetails.of(StepDb(none, [], none, none, {})), (0.0, 0.0, 0.0, 0.0))
    _host_result(stats, host)  # the host's input ops (no infeed ratio: XProf's TPU breakdown is not generic)
    d = step_details(stats.tpu_steps)
    classification, statement = tpu_bottleneck(d)
    host.warnings = [] if len(d.number) else [NO_STEP_MARKER]
    tables = input_pipeline_json(host)
    tables[0] = max_infeed_core_table(d)
    tables[1] = tpu_step_table(d, statement, _next_step(classification, host.breakdown_us))
    return tables
