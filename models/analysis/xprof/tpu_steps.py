"""XProf's step analysis of TPU planes (xplane_to_step_events, step_events_to_steps_db and the TPU part of
op_stats_to_input_pipeline_analysis, as XProf 2.24.2 gives them), for TensorCore planes whose XLA ops carry
no op metadata (program_id and symbol_id): every op is then outside XProf's op metrics, and each step's
TensorCore time is idle.

Grouping (tsl's group_events for TPU): a TensorCore's step events (its `Steps` line) take the group of the host
event that launched them. XProf's preprocessing ties a host `DoEnqueueProgram` (device_ordinal, queue_id, run_id
masked to 27 bits, core_type) as producer of a kTpuLaunch context to the `XLA Modules` events of that core with the
same queue_id, run_id and core_type (absent: 0); a step event takes the contexts of the events it holds, and so the
group of such a launch (the first group that reaches it). Where no step event of any core is tied to a grouped
launch, XProf groups them itself after the host's groups, every core in lock step: the k-th step event of each
core is group (host groups + k). Then per core the step events without a group are dropped (unless none has one)
and consecutive ones of one group merged into one step (a step of several programs: from the first's start to
the last's end). Each event of the other lines takes the group of the step it overlaps.

A step is a group with a step event and XLA ops on a core; its time is the longest of its step events over
the cores; per core its breakdown is the op time by category plus IDLE (the rest of the step).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from profscope.models.analysis.xprof.datatable import column, table
from profscope.models.core.task import ProfileError
from profscope.models.formats.xspace.xplane import HOST_PLANE, XSpaceData, span_text

TENSOR_CORE = re.compile(r"/device:TPU:(\d+)$")
STEP_LINE, OP_LINE, MODULE_LINE = "Steps", "XLA Ops", "XLA Modules"
DEVICE_PRODUCER_STATS = ("_pt", "_p")  # a device event leading to others: not reproduced
LAUNCHES = ("DoEnqueueProgram", "DoEnqueueContinuationProgram")  # the TPU runtime's host launches
LAUNCH_STATS = ("device_ordinal", "queue_id", "run_id", "core_type")
RUN_ID_MASK = (1 << 27) - 1  # XProf keeps so many bits of a host launch's run_id
DBL_MIN = 2.2250738585072014e-308  # a tsl Stat<double>'s maximum before any value above it


@dataclass
class TpuSteps:
    """XProf's TPU step db: per step its group id (several hosts: its number in their intersection), time (ps)
    and per TensorCore (by plane id; several hosts: host index * 1000 + plane id) the core's step time and the self
    time of its XLA ops by HLO category (the rest of the core's step is its idle time)."""

    number: list[int] = field(default_factory=list)
    begin_ps: list[int] = field(default_factory=list)
    duration_ps: list[int] = field(default_factory=list)
    per_core: list[dict[int, tuple[int, dict[str, int]]]] = field(default_factory=list)  # core -> (ps, by category)
    # Per step, per core (the same keys): (the core's XSpace, the event rows of its XLA ops in the step that XProf's
    # op metrics count), for the per-step op metrics (tpu_ops.py).
    op_rows: list[dict[int, tuple[XSpaceData, np.ndarray]]] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.number)


def tensor_cores(space: XSpaceData) -> list[int]:
    return [i for i, p in enumerate(space.planes) if TENSOR_CORE.match(p.name)]


def _line_rows(space: XSpaceData, plane: int, name: str) -> np.ndarray:
    a, b = space.plane_rows(plane)
    on = np.array([ln.name == name for ln in space.lines], bool)
    rows = np.arange(a, b, dtype=np.int64)
    return rows[on[space.events.line[a:b]]] if b > a else rows


def op_metadata(space: XSpaceData, plane: int, ops: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Per op: whether its metadata names it for XProf's op metrics (program_id and symbol_id), and its HLO
    category (hlo_category)."""
    from profscope.models.core import _protowire as wire

    p = space.planes[plane]
    program, symbol, category = (set(p.stat_ids(n)) for n in ("program_id", "symbol_id", "hlo_category"))
    keyed = np.zeros(len(ops), bool)
    categories = [""] * len(ops)
    mids = space.events.metadata_id[ops].astype(np.int64)
    for mid in np.unique(mids).tolist():
        ids: set[int] = set()
        name = ""
        for o, n in p.event_metadata.get(int(mid), ("", "", []))[2]:
            (stats,) = wire.find_fields(space.buf, o, o + n, [5])  # XEventMetadata.stats
            if not len(stats):
                continue
            sids, refs, texts = wire.decode_messages(space.buf, stats, [(1, "i"), (7, "i"), (5, "s")])
            for sid, ref, text in zip(sids.tolist(), refs.tolist(), texts):
                ids.add(sid)
                if sid in category:
                    name = p.stat_names.get(int(ref), "") if ref else span_text(space.buf, text)
        at = np.flatnonzero(mids == mid)
        keyed[at] = bool(ids & program) and bool(ids & symbol)
        for i in at.tolist():
            categories[i] = name
    return keyed, categories


def _self_times(begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each event's time less that of the events directly inside it (XProf's ancestor stack over a line in
    time order)."""
    order = np.lexsort((-(end - begin), begin))
    self_ps = (end - begin).astype(np.int64)
    stack: list[int] = []
    for i in order.tolist():
        while stack and not (begin[stack[-1]] <= begin[i] and end[i] <= end[stack[-1]]):
            stack.pop()
        if stack:
            self_ps[stack[-1]] -= end[i] - begin[i]
        stack.append(i)
    return self_ps


def _launch_groups(space: XSpaceData, host: int, groups) -> dict[tuple[int, int, int, int], int]:
    """The host's TPU launches in a step: (device_ordinal, queue_id, run_id, core_type) -> the first group."""
    p = space.planes[host]
    ids = [mid for mid, (name, _d, _s) in p.event_metadata.items() if name in LAUNCHES]
    if not ids or not len(groups.rows):
        return {}
    rows = groups.rows[np.isin(space.events.metadata_id[groups.rows], ids)]
    group = groups.of_events(rows)
    stats = space.stats(rows, host, list(LAUNCH_STATS))
    values = {}
    for name in LAUNCH_STATS:
        column = stats[name]
        values[name] = dict(zip(column.rows.tolist(), column.ints_present(unsigned_too=True).tolist()))
    out: dict[tuple[int, int, int, int], int] = {}
    for i, g in enumerate(group.tolist()):
        if g < 0 or any(i not in values[n] for n in LAUNCH_STATS[:3]):
            continue
        key = (values["device_ordinal"][i], values["queue_id"][i], values["run_id"][i] & RUN_ID_MASK,
               values["core_type"].get(i, 0))
        out[key] = min(g, out.get(key, g))
    return out


def _tied_groups(space: XSpaceData, plane: int, begin: np.ndarray, end: np.ndarray,
                 launches: dict[tuple[int, int, int, int], int]) -> np.ndarray:
    """Per step event (in time order) of a TensorCore, the group of the host launch of a module it holds (the
    least such group), else -1."""
    out = np.full(len(begin), -1, np.int64)
    ordinal = int(TENSOR_CORE.match(space.planes[plane].name).group(1))  # type: ignore[union-attr]
    modules = _line_rows(space, plane, MODULE_LINE)
    if not launches or not len(modules) or not len(begin):
        return out
    stats = space.stats(modules, plane, ["queue_id", "run_id", "core_type"])
    values = {n: dict(zip(c.rows.tolist(), c.ints_present(unsigned_too=True).tolist())) for n, c in stats.items()}
    m_begin = space.start_ps(modules)
    m_end = m_begin + space.events.duration_ps[modules].astype(np.int64)
    # The first step event ending after the module begins holds it if it includes it (XProf's scan).
    at = np.searchsorted(end, m_begin, side="right")
    for i in range(len(modules)):
        k = int(at[i])
        if k >= len(begin) or not (begin[k] <= m_begin[i] and m_end[i] <= end[k]):
            continue
        if i not in values["queue_id"] or i not in values["run_id"]:
            continue
        g = launches.get((ordinal, values["queue_id"][i], values["run_id"][i], values["core_type"].get(i, 0)), -1)
        if g >= 0 and (out[k] < 0 or g < out[k]):
            out[k] = g
    return out


def _merged_steps(begin: np.ndarray, end: np.ndarray, group: np.ndarray):
    """XProf's MergeHostSteps: step events without a group dropped (unless none has one), consecutive ones of
    one group made one (the first's start to the last's end)."""
    keep = group >= 0
    if not keep.any():
        return begin, end, group
    begin, end, group = begin[keep], end[keep], group[keep]
    first = np.r_[True, group[1:] != group[:-1]]
    last = np.r_[first[1:], True]
    return begin[first], end[last], group[first]


def tpu_steps(space: XSpaceData) -> TpuSteps:
    """The TPU step db of one XSpace's TensorCore planes."""
    from profscope.models.formats.xspace.groups import group_events

    host = space.plane_named(HOST_PLANE)
    host_groups = group_events(space, host) if host >= 0 else None
    first_group = len(host_groups.roots) if host_groups is not None else 0
    launches = _launch_groups(space, host, host_groups) if host_groups is not None else {}
    per_plane = []
    for plane in tensor_cores(space):
        if any(space.planes[plane].stat_ids(n) for n in DEVICE_PRODUCER_STATS):
            # Device events leading to host events (producer contexts): XProf groups those too.
            raise ProfileError(f"{space.path}: {space.planes[plane].name} has events that lead to others (producer "
                               "context stats); Profscope does not group TPU steps through them yet")
        steps = _line_rows(space, plane, STEP_LINE)
        begin = space.start_ps(steps)
        end = begin + space.events.duration_ps[steps].astype(np.int64)
        order = np.argsort(begin, kind="stable")
        begin, end = begin[order], end[order]
        per_plane.append((plane, begin, end, _tied_groups(space, plane, begin, end, launches)))
    if not any((tied >= 0).any() for *_, tied in per_plane):  # no launch tied: every core in lock step
        per_plane = [(plane, b, e, first_group + np.arange(len(b), dtype=np.int64)) for plane, b, e, _ in per_plane]
    markers: dict[int, list[tuple[int, int]]] = {}  # group -> (begin, end) of each core's step event
    cores: dict[int, dict[int, dict[str, int]]] = {}  # group -> core -> category -> self ps
    rows: dict[int, dict[int, np.ndarray]] = {}  # group -> core -> op event rows
    for plane, begin, end, group in per_plane:
        core = space.planes[plane].id
        begin, end, group = _merged_steps(begin, end, group)
        for b, e, g in zip(begin.tolist(), end.tolist(), group.tolist()):
            if g >= 0:
                markers.setdefault(g, []).append((b, e))
        ops = _line_rows(space, plane, OP_LINE)
        if not len(ops) or not len(begin):
            continue
        op_begin = space.start_ps(ops)
        op_end = op_begin + space.events.duration_ps[ops].astype(np.int64)
        # The first step event overlapping each op (ends included, as tsl's Timespan::Overlaps), with a group.
        at = np.searchsorted(end, op_begin, side="left")
        grouped = (at < len(begin)) & (begin[np.minimum(at, len(begin) - 1)] <= op_end)
        grouped &= group[np.minimum(at, len(begin) - 1)] >= 0
        keyed, categories = op_metadata(space, plane, ops)
        self_ps = _self_times(op_begin[grouped], op_end[grouped])
        index = np.flatnonzero(grouped)
        op_group = group[at[index]]
        for g in np.unique(op_group).tolist():  # a step with ops on this core
            cores.setdefault(g, {}).setdefault(core, {})
        # XProf's op metrics keep only ops with their program and symbol: their self time by step and category.
        kept = keyed[index]
        names = sorted(set(categories))
        code = {name: c for c, name in enumerate(names)}
        step, category = op_group[kept], np.array([code[c] for c in categories], np.int64)[index][kept]
        pairs, which = np.unique(step * len(names) + category, return_inverse=True)
        sums = np.bincount(which, self_ps[kept], len(pairs)).astype(np.int64)
        for pair, total in zip(pairs.tolist(), sums.tolist()):
            cores[pair // len(names)][core][names[pair % len(names)]] = total
        order = np.argsort(step, kind="stable")  # each step's ops, in line order
        bounds = np.flatnonzero(np.diff(step[order])) + 1
        for g, part in zip(np.unique(step).tolist(), np.split(ops[index][kept][order], bounds)):
            rows.setdefault(g, {})[core] = part
    out = TpuSteps()
    for number in sorted(set(markers) & set(cores)):
        longest = max(markers[number], key=lambda m: m[1] - m[0])  # the first of the longest
        out.number.append(number)
        out.begin_ps.append(longest[0])
        out.duration_ps.append(longest[1] - longest[0])
        out.per_core.append({core: (longest[1] - longest[0], cores[number][core]) for core in sorted(cores[number])})
        out.op_rows.append({core: (space, rows.get(number, {}).get(core, np.zeros(0, np.int64)))
                            for core in sorted(cores[number])})
    return out


def combine_tpu_steps(hosts: list[TpuSteps], ids: list[int] | None = None) -> tuple[TpuSteps, bool]:
    """Several TPU hosts' steps as XProf combines them: their step intersection (step_intersection.py), the
    combined steps numbered from 0, each with every host's cores (global core ids: host * 1000 + core, the host's
    index in `ids`, else in the list). A session of one host keeps its steps. Returns them and whether the hosts'
    steps had none in common."""
    from profscope.models.analysis.xprof.step_intersection import intersect

    if len(hosts) == 1 and ids is None:
        return hosts[0], False
    ids = ids if ids is not None else list(range(len(hosts)))
    spans = [(np.array(h.begin_ps, np.int64), np.array(h.begin_ps, np.int64) + np.array(h.duration_ps, np.int64))
             for h in hosts]
    x = intersect(list(spans))
    out = TpuSteps()
    for i in range(x.count):
        cores: dict[int, tuple[int, dict[str, int]]] = {}
        op_rows: dict[int, tuple[XSpaceData, np.ndarray]] = {}
        for h, host in enumerate(hosts):
            first = x.first[h]
            assert first is not None
            for core, value in host.per_core[first + i].items():
                cores[ids[h] * 1000 + core] = value
                if core in host.op_rows[first + i]:
                    op_rows[ids[h] * 1000 + core] = host.op_rows[first + i][core]
        out.number.append(i)
        out.begin_ps.append(min(hosts[h].begin_ps[(x.first[h] or 0) + i] for h in range(len(hosts))))
        out.duration_ps.append(max(d for d, _ in cores.values()))
        out.per_core.append(cores)
        out.op_rows.append(op_rows)
    return out, x.empty_intersect


GPU_CORE = 1  # the one core XProf gives a GPU host's steps (kDefaultGpuLocalCoreId)


def tpu_and_gpu_hosts(spaces: list[XSpaceData]) -> tuple[list[XSpaceData], list[XSpaceData]] | None:
    """A session's GPU hosts and TPU hosts, where it has both and no host has both kinds of planes."""
    from profscope.models.analysis.xprof.device_op_metrics import gpu_planes

    gpu = [s for s in spaces if gpu_planes(s)]
    tpu = [s for s in spaces if tensor_cores(s)]
    if not gpu or not tpu or any(s in gpu for s in tpu):
        return None
    return gpu, tpu


def session_device_type(spaces: list[XSpaceData]) -> str:
    """XProf's combined run environment's device type: the last host's with a device (a GPU host: its first
    GPU's model, else "GPU"; a TPU host: its first TensorCore's device_type_string, else empty)."""
    from profscope.models.analysis.xprof.device_op_metrics import gpu_model_name, gpu_planes, plane_stats

    out = "CPU"
    for space in spaces:
        if gpu_planes(space):
            out = gpu_model_name(plane_stats(space, gpu_planes(space)[0])) or "GPU"
        elif tensor_cores(space):
            out = str(plane_stats(space, tensor_cores(space)[0]).get("device_type_string", ""))
    return out


def beside_gpus(spaces: list[XSpaceData], paths, steps: bool):
    """XProf's combined OpStats of a session of TPU and GPU hosts: TPU analysis (its hardware type is the
    highest of the hosts'). Its one device op metrics db holds both kinds of ops: here the GPU hosts' DeviceStats,
    whose `xla` says to the tools that do not combine them with the TensorCores' ops that they are not computed.
    Its step db is the step intersection of the hosts that have a device type XProf knows: GPU hosts, and TPU
    hosts whose TensorCores name a TPU chip (device_type_string; the others count as coordinators). A GPU host's
    step is one core (GPU_CORE) that is idle for XProf's TPU breakdown."""
    from profscope.models.analysis.xprof.device_op_metrics import device_stats, gpu_planes, gpu_step_db, plane_stats

    gpu_hosts = [s for s in spaces if gpu_planes(s)]
    both = next((s for s in gpu_hosts if tensor_cores(s)), None)
    if both is not None:
        raise ProfileError(f"{both.path}: Profscope does not compute XProf's analysis of a host with both GPU and "
                           "TPU planes")
    stats = device_stats(gpu_hosts, paths, steps)
    tpu = next((s.planes[i].name for s in spaces for i in tensor_cores(s)), "")
    stats.xla = (f"{spaces[0].path.parent}: Profscope does not compute XProf's op metrics of TPU planes ({tpu}) "
                 "beside GPUs yet")
    stats.xla_ops = None
    # XProf's combined run environment: the last host's device type, every host's cores.
    stats.device_type = session_device_type(spaces)
    stats.core_count += sum(len(tensor_cores(s)) for s in spaces if not gpu_planes(s))
    if not steps:
        return stats
    stats.steps = [gpu_step_db(s) for s in spaces]  # every host's (a TPU host's: none), as op_stats reads them
    hosts, ids = [], []
    for k, space in enumerate(spaces):
        cores = tensor_cores(space)
        if gpu_planes(space):
            db = stats.steps[k]
            host = TpuSteps()
            for number, begin, duration in zip(db.number.tolist(), db.begin_ps.tolist(), db.duration_ps.tolist()):
                host.number.append(number)
                host.begin_ps.append(begin)
                host.duration_ps.append(duration)
                host.per_core.append({GPU_CORE: (duration, {})})
                host.op_rows.append({})
        elif cores and "TPU" in str(plane_stats(space, cores[0]).get("device_type_string", "")):
            host = tpu_steps(space)
        else:
            continue
        hosts.append(host)
        ids.append(k)
    stats.tpu_steps, stats.empty_intersect = combine_tpu_steps(hosts, ids)
    return stats


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
    host: list[float]  # host transfers (host send and recv)
    infeed_percent: list[tuple[float, float, float]]  # average, minimum, maximum over the cores
    step_ms: list[float]  # the longest core's step time (XProf's step time summary)
    active: list[float] = field(default_factory=list)  # the cores' average compute (optimal step) time


HOST_SEND_RECV = ("host send", "host send-done", "host recv", "host recv-done")


def step_details(steps: TpuSteps) -> TpuStepDetails:
    """XProf's ComputeTpuPerStepDataAcrossCores: every TensorCore's step lasts its host's step time; per core
    its infeed, outfeed, host transfers and idle time (the step less its ops' self time) are waits for the host,
    the rest compute. A step's compute is the least of its cores', its infeed the most, its outfeed their
    average, its idle time the shortest core step less the rest, its time the longest."""
    d = TpuStepDetails([], [], [], [], [], [], [], [], [])
    for i, number in enumerate(steps.number):
        optimal, outfeed, infeed_pct, durations = [], [], [], []
        infeed = host_most = 0
        for step, categories in steps.per_core[i].values():
            durations.append(step)
            idle = step - sum(categories.values())
            core_infeed, core_outfeed = categories.get("infeed", 0), categories.get("outfeed", 0)
            host = sum(categories.get(c, 0) for c in HOST_SEND_RECV)
            optimal.append(step - (core_infeed + core_outfeed + host + idle))
            outfeed.append(core_outfeed)
            infeed_pct.append(100.0 * core_infeed / step if step else 0.0)
            infeed = max(infeed, core_infeed)
            host_most = max(host_most, host)
        d.number.append(number)
        d.compute.append(min(optimal) / 1e9 if optimal else 0.0)
        d.active.append(sum(optimal) / len(optimal) / 1e9 if optimal else 0.0)
        d.infeed.append(infeed / 1e9)
        d.outfeed.append(sum(outfeed) / len(outfeed) / 1e9 if outfeed else 0.0)
        d.host.append(host_most / 1e9)
        non_idle = d.compute[-1] + d.infeed[-1] + d.outfeed[-1]
        d.idle.append(max(min(durations) / 1e9 - non_idle, 0.0) if optimal else 0.0)
        d.infeed_percent.append((sum(infeed_pct) / len(infeed_pct), min(infeed_pct), max([DBL_MIN, *infeed_pct]))
                                if infeed_pct else (0.0, 0.0, 0.0))
        d.step_ms.append(max(durations) / 1e9 if optimal else 0.0)
    return d


def tpu_step_table(d: TpuStepDetails, input_statement: str, output_statement: str, next_step: str) -> dict:
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
        "host_transfer_ms_average": two(summary(d.host)[0]),
        # XProf 2.24.2's active times (not in its published source): as far as checked (a session of TPU and GPU
        # hosts, whose GPU core computes nothing for this breakdown), the cores' average compute time.
        "active_steptime_ms_average": two(summary(d.active)[0]),
        "tc_active_ms_average": two(summary(d.active)[0]),
        "input_conclusion": input_statement, "output_conclusion": output_statement, "summary_nextstep": next_step,
    }
    rows = []
    for i, number in enumerate(d.number):
        step = d.compute[i] + d.infeed[i] + d.outfeed[i] + d.idle[i]
        tooltip = f"step {number}:\nTime waiting for input data = {d.infeed[i]:.3f} ms, Step time = {step:.3f} ms"
        average, minimum, maximum = d.infeed_percent[i]
        rows.append([str(number), d.compute[i], 0.0, 0.0, d.infeed[i], d.outfeed[i], d.idle[i], d.host[i], tooltip,
                     average, minimum, maximum])
    return table(TPU_STEP_COLUMNS, rows, p)


def max_infeed_core_table(d: TpuStepDetails) -> dict:
    """Per step the core that waited longest for infeed (none without infeed: "unknown")."""
    cols = [column("index", "string", "Index")] + [column(str(i), "string", str(i)) for i in range(len(d.number))]
    return table(cols, [["Step number", *map(str, d.number)], ["Core name", *["unknown"] * len(d.number)]])


def tpu_bottleneck(d: TpuStepDetails) -> tuple[str, str, str]:
    """XProf's TPU input classification, input statement and output statement (ComputeTpuBottleneckAnalysis's
    input and output parts)."""
    from profscope.models.analysis.xprof.input_pipeline import Bottleneck, input_conclusion, one

    total = infeed = outfeed = 0.0
    for i in range(len(d.number)):
        total += d.compute[i] + d.infeed[i] + d.outfeed[i] + d.idle[i]
        infeed += d.infeed[i]
        outfeed += d.outfeed[i]
    if total == 0:
        return "unknown", Bottleneck().input_statement, ""
    pct, out = 100.0 * infeed / total, 100.0 * outfeed / total
    output = ""
    if out >= OUTPUT_HIGH:
        output = (f"Your program is HIGHLY output-bound because {one(out)}% of the total step time sampled is spent "
                  "on output. Therefore, you should first focus on reducing the output time.")
    elif out >= OUTPUT_MODERATE:
        output = (f"Your program is MODERATELY output-bound because {one(out)}% of the total step time sampled is "
                  "spent on output. Therefore, you would need to reduce both the output time and other time.")
    classification, statement = input_conclusion(pct)
    return classification, statement, output


OUTPUT_HIGH, OUTPUT_MODERATE = 20, 5  # percent of the step time on outfeed


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
    from profscope.models.analysis.xprof.step_intersection import EMPTY_INTERSECT

    none = np.zeros(0, np.int64)
    host = InputAnalysis("TPU", StepDetails.of(StepDb(none, [], none, none, {})), (0.0, 0.0, 0.0, 0.0))
    _host_result(stats, host)  # the host's input ops (no infeed ratio: XProf's TPU breakdown is not generic)
    d = step_details(stats.tpu_steps)
    classification, statement, output = tpu_bottleneck(d)
    host.warnings = [] if len(d.number) else [EMPTY_INTERSECT if stats.empty_intersect else NO_STEP_MARKER]
    tables = input_pipeline_json(host)
    tables[0] = max_infeed_core_table(d)
    tables[1] = tpu_step_table(d, statement, output, _next_step(classification, host.breakdown_us))
    return tables


# ---------------------------------------------------------------- overview (TPU)

# HLO categories whose time the TensorCore is not on duty (tsl's IsOffDutyOp).
OFF_DUTY = {"infeed", "outfeed", "host send", "host send-done", "host recv", "host recv-done", "megacore fusion"}


def duty_cycle(space: XSpaceData) -> tuple[int, int]:
    """(busy, idle) ps of the TensorCores, XProf's duty cycle: per core, the union of its XLA ops (not those of
    an off-duty category) is busy, the rest of its ops' and modules' span idle; the cores' times add up."""
    busy = idle = 0
    for plane in tensor_cores(space):
        ops = _line_rows(space, plane, OP_LINE)
        spans = [ops, _line_rows(space, plane, MODULE_LINE)]
        rows = np.concatenate(spans)
        if not len(rows):
            continue
        begin = space.start_ps(rows)
        end = begin + space.events.duration_ps[rows].astype(np.int64)
        total = int(end.max() - begin.min())
        on = np.zeros(len(rows), bool)
        on[: len(ops)] = [c not in OFF_DUTY for c in op_metadata(space, plane, ops)[1]]
        b, e = begin[on], end[on]
        order = np.argsort(b, kind="stable")
        b, e = b[order], e[order]
        covered = 0
        if len(b):
            reach = np.maximum.accumulate(e)
            starts = np.r_[True, b[1:] > reach[:-1]]  # a new run where an op begins after all before it ended
            first = np.flatnonzero(starts)
            last = np.r_[first[1:], len(b)] - 1
            covered = int((reach[last] - b[first]).sum())
        busy += covered
        idle += total - covered
    return busy, idle


def tpu_overview_json(stats, spaces: list[XSpaceData], gpu=None) -> list[dict]:
    """XProf's overview_page of a TPU host; with `gpu` (the GPU hosts' framework op metrics, IDLE last), of a
    session of TPU and GPU hosts: their ops beside the TensorCores' in the top ops and the device's shares."""
    from profscope.models.analysis.xprof import overview_page as ov
    from profscope.models.analysis.xprof.input_pipeline import InputAnalysis, StepDetails, diagnostics_table
    from profscope.models.analysis.xprof.op_stats import StepDb

    tables = tpu_input_pipeline_json(stats)
    busy = idle = 0
    for space in spaces:
        b, i = duty_cycle(space)
        busy, idle = busy + b, idle + i
    none = np.zeros(0, np.int64)
    from profscope.models.analysis.xprof.tpu_ops import framework_rows, tpu_op_metrics

    ops = tpu_op_metrics(spaces)
    keys, occurrences, time_ps, self_ps, flops, _bytes, _model = framework_rows(ops)
    op_ps, total_ps = ops.op_ps, ops.total_ps
    if gpu is not None:  # XProf's combined device op metrics db: the GPUs' rows (no FLOPs) beside
        n = len(gpu) - 1  # without its IDLE row
        keys = list(keys) + list(zip(gpu.name[:n], gpu.category[:n]))
        occurrences, time_ps, self_ps = (np.r_[a, b[:n]] for a, b in ((occurrences, gpu.occurrences),
                                                                      (time_ps, gpu.time_ps),
                                                                      (self_ps, gpu.self_time_ps)))
        flops = np.r_[flops, np.zeros(n)]
        op_ps, total_ps = op_ps + gpu.total_op_time_ps, total_ps + gpu.total_time_ps
    names = [k[0] for k in keys]
    analysis = ov._analysis_table(stats, {})
    host = stats.host
    host_ops = int(host.occurrences.sum())
    device_ops = int(occurrences.sum())
    duty = ov.percent(100.0 * busy / (busy + idle) if busy + idle else 0.0)
    p = analysis["p"]
    p.update({
        "device_duty_cycle_percent": duty,
        "device_duty_cycle_high_confidence_percent": duty,
        "idle_time_high_confidence_ps": f"{idle:.6g}",
        "device_idle_time_percent": ov.percent(100.0 * (1.0 - (op_ps / total_ps if total_ps else 0.0))),
        "host_idle_time_percent": ov.percent(100.0 * _idle_ratio(host)),
        "host_tf_op_percent": ov.percent(100.0 * (host_ops / (host_ops + device_ops) if host_ops + device_ops else 0)),
        "device_tf_op_percent": ov.percent(100.0 * (device_ops / (host_ops + device_ops) if host_ops + device_ops
                                                    else 0)),
    })
    tc_active = tables[1]["p"]["tc_active_ms_average"]
    if float(tc_active) > 0:  # XProf 2.24.2 shows the active times on the overview only where there are some
        p.update(active_steptime_ms_average=tables[1]["p"]["active_steptime_ms_average"],
                 tc_active_ms_average=tc_active)
    # The top ten framework ops on the device by self time (XProf's SortedOpMetricsDb: most self time first).
    total_self = float(self_ps.sum())
    order = sorted(range(len(names)), key=lambda i: (-self_ps[i], names[i]))[:10]
    cumulative = 0.0
    for i in order:
        share = float(self_ps[i]) / total_self if total_self else 0.0
        cumulative += share
        analysis["rows"].append({"c": [{"v": share}, {"v": cumulative}, {"v": keys[i][1]}, {"v": names[i]},
                                       {"v": float(flops[i]) / (float(time_ps[i]) / 1000) if time_ps[i] else 0.0}]})
    stub = InputAnalysis("TPU", StepDetails.of(StepDb(none, [], none, none, {})), (0.0, 0.0, 0.0, 0.0))
    recommendation = ov._recommendation_table(stats, stub)
    recommendation["p"] = {k: "" for k in recommendation["p"]}  # XProf's TPU page fills none of the generic ones
    errors = list(stats.errors)
    if not errors and stats.device_core_count <= 0:
        errors.append(ov.NO_DEVICE_TRACE)
    diagnostics = diagnostics_table(errors, list(stats.warnings) + ([] if len(stats.tpu_steps) else [
        tables[4]["rows"][0]["c"][1]["v"]] if tables[4]["rows"] else []))
    environment = ov._run_environment_table(stats)
    return [analysis, tables[1], environment, recommendation, ov._inference_latency_table(), {}, diagnostics]


def _idle_ratio(db) -> float:
    """XProf's IdleTimeRatio: 1 - op time / total time (a db of no time: 1)."""
    total = db.total_time_ps if db is not None else 0
    return 1.0 - (db.total_op_time_ps / total if total else 0.0)
