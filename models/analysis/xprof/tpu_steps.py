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

from profscope.models.analysis.xprof.datatable import JsonList, Rows, column, table
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
    """XProf's TPU step db, as columns: per step its group id (several hosts: its number in their intersection),
    begin and time (ps); its TensorCores (`cores`: plane ids, sorted; several hosts: host index * 1000 + plane
    id; a GPU host beside them: one core), `on`: (steps, cores) whether the core ran XLA ops in the step (a GPU
    host's core: each of its steps), `core_ps` the core's step time then (its host's step time); the self time
    of those ops XProf's op metrics count by step, core and HLO category (`entries`: step index,
    core index, index into `categories`, ps; the rest of the core's step is its idle time); per core the event
    rows of those ops and each one's step index (`op_rows`: its XSpace, rows, steps), for the per-step op
    metrics (tpu_profile.py)."""

    number: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    begin_ps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    duration_ps: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    cores: list[int] = field(default_factory=list)
    on: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), bool))
    core_ps: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))
    categories: list[str] = field(default_factory=list)
    entries: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] = field(
        default_factory=lambda: (np.zeros(0, np.int64),) * 4)
    op_rows: list[tuple[XSpaceData, np.ndarray, np.ndarray]] = field(default_factory=list)
    # Per core: whether XProf's op metrics count its time (a GPU host's core beside TensorCores: no).
    counted: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))

    def __len__(self) -> int:
        return len(self.number)

    def category_ps(self, names=None) -> np.ndarray:
        """(steps, cores): the self time of the ops of these categories (None: of all)."""
        step, core, category, ps = self.entries
        use = np.isin(category, [k for k, c in enumerate(self.categories) if names is None or c in names])
        out = np.zeros(self.on.shape, np.int64)
        np.add.at(out, (step[use], core[use]), ps[use])
        return out


def tensor_cores(space: XSpaceData) -> list[int]:
    return [i for i, p in enumerate(space.planes) if TENSOR_CORE.match(p.name)]


def _line_rows(space: XSpaceData, plane: int, name: str) -> np.ndarray:
    a, b = space.plane_rows(plane)
    on = np.array([ln.name == name for ln in space.lines], bool)
    rows = np.arange(a, b, dtype=np.int64)
    return rows[on[space.events.line[a:b]]] if b > a else rows


def op_metadata(space: XSpaceData, plane: int, ops: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Per op: whether its metadata names it for XProf's op metrics (program_id and symbol_id), and its HLO
    category (hlo_category): an index into the categories named, returned last."""
    from profscope.models.core import _protowire as wire

    p = space.planes[plane]
    program, symbol, category = (set(p.stat_ids(n)) for n in ("program_id", "symbol_id", "hlo_category"))
    mids, which = _unique_ids(space.events.metadata_id[ops].astype(np.int64))
    keyed = np.zeros(len(mids), bool)
    code = np.zeros(len(mids), np.int64)
    names: dict[str, int] = {}
    for k, mid in enumerate(mids.tolist()):
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
        keyed[k] = bool(ids & program) and bool(ids & symbol)
        code[k] = names.setdefault(name, len(names))
    return keyed[which], code[which], list(names)


def _unique_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(ids, return_inverse=True) of non-negative ids, without a sort where they are few and small
    (metadata ids: a plane numbers its metadata from 1; step numbers)."""
    if not len(ids) or ids.min() < 0 or ids.max() > 4 * len(ids) + 1024:
        unique, which = np.unique(ids, return_inverse=True)
        return unique, which.reshape(-1)
    present = np.zeros(int(ids.max()) + 1, bool)
    present[ids] = True
    return np.flatnonzero(present), (np.cumsum(present) - 1)[ids]


def _self_times(begin: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Each event's time less that of the events directly inside it (XProf's ancestor stack over a line in
    time order: _nesting's parents)."""
    from profscope.models.data import _nesting

    n = len(begin)
    order = np.lexsort((-(end - begin), begin))
    parent = _nesting.nest_parents(order, np.zeros(n, np.int32), begin, end, np.zeros(n, bool))
    self_ps = (end - begin).astype(np.int64)
    inner = np.flatnonzero(parent >= 0)
    np.subtract.at(self_ps, parent[inner], self_ps[inner])
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
    markers: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # per core: its steps' group, begin, end
    # Per core with ops: plane id, the groups it has ops in, then of the ops XProf counts: their group, the core's
    # category names, each op's category (an index into them), self time, event row.
    found = []
    for plane, begin, end, group in per_plane:
        core = space.planes[plane].id
        begin, end, group = _merged_steps(begin, end, group)
        markers.append((group, begin, end))
        ops = _line_rows(space, plane, OP_LINE)
        if not len(ops) or not len(begin):
            continue
        op_begin = space.start_ps(ops)
        op_end = op_begin + space.events.duration_ps[ops].astype(np.int64)
        # The first step event overlapping each op (ends included, as tsl's Timespan::Overlaps), with a group.
        at = np.searchsorted(end, op_begin, side="left")
        grouped = (at < len(begin)) & (begin[np.minimum(at, len(begin) - 1)] <= op_end)
        grouped &= group[np.minimum(at, len(begin) - 1)] >= 0
        keyed, category, names = op_metadata(space, plane, ops)
        self_ps = _self_times(op_begin[grouped], op_end[grouped])
        index = np.flatnonzero(grouped)
        op_group = group[at[index]]
        # XProf's op metrics keep only ops with their program and symbol: their self time by step and category.
        kept = keyed[index]
        found.append((core, _unique_ids(op_group)[0], op_group[kept], names, category[index][kept], self_ps[kept],
                      ops[index][kept]))
    return _step_db(space, markers, found)


def _step_db(space: XSpaceData, markers: list[tuple[np.ndarray, np.ndarray, np.ndarray]], found: list) -> TpuSteps:
    """The step db of the cores' grouped step events and their grouped ops: the groups with ops on a core, each
    lasting its longest step event (the first of the longest, cores in plane order)."""
    out = TpuSteps()
    if not found:
        return out
    k = np.unique(np.concatenate([f[1] for f in found]))  # the groups with ops on some core
    group, begin, end = (np.concatenate([m[i] for m in markers]) for i in range(3))
    use = np.isin(group, k)
    group, begin, duration = group[use], begin[use], (end - begin)[use]
    order = np.lexsort((np.arange(len(group)), -duration, group))  # per group the longest first, then the first
    first = order[np.r_[True, group[order][1:] != group[order][:-1]]]
    out.number, out.begin_ps, out.duration_ps = k, begin[first], duration[first]
    found = sorted(found, key=lambda f: f[0])
    out.cores = [f[0] for f in found]
    out.on = np.zeros((len(k), len(found)), bool)
    names = sorted({c for f in found for c in f[3]})
    out.categories = names
    parts: list[list[np.ndarray]] = [[], [], [], []]
    for c, (_core, with_ops, step, core_names, category, self_ps, rows) in enumerate(found):
        out.on[np.searchsorted(k, with_ops), c] = True
        step = np.searchsorted(k, step)
        category = np.array([names.index(x) for x in core_names], np.int64)[category]
        width = max(len(names), 1)
        pairs, which = _unique_ids(step * width + category)
        for part, values in zip(parts, (pairs // width, np.full(len(pairs), c), pairs % width,
                                        np.bincount(which, self_ps, len(pairs)).astype(np.int64))):
            part.append(values.astype(np.int64))
        order = np.argsort(step, kind="stable")  # each step's ops, in line order
        out.op_rows.append((space, rows[order], step[order]))
    out.entries = tuple(np.concatenate(p) for p in parts)  # type: ignore[assignment]
    out.core_ps = np.where(out.on, out.duration_ps[:, None], 0)
    out.counted = np.ones(len(found), bool)
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
    x = intersect([(h.begin_ps, h.begin_ps + h.duration_ps) for h in hosts])
    n = x.count
    out = TpuSteps(number=np.arange(n, dtype=np.int64))
    names = sorted({c for h in hosts for c in h.categories})
    parts: list[list[np.ndarray]] = [[], [], [], []]
    begins, durations, on, core_ps = [], [], [], []
    for h, host in enumerate(hosts):
        first = x.first[h]
        assert first is not None
        begins.append(host.begin_ps[first : first + n])
        durations.append(host.duration_ps[first : first + n])
        on.append(host.on[first : first + n])
        core_ps.append(host.core_ps[first : first + n])
        step, core, category, ps = host.entries
        use = (step >= first) & (step < first + n)
        code = np.array([names.index(c) for c in host.categories], np.int64)
        for part, values in zip(parts, (step[use] - first, core[use] + len(out.cores), code[category[use]],
                                        ps[use])):
            part.append(values)
        for space, rows, steps in host.op_rows:
            use = (steps >= first) & (steps < first + n)
            out.op_rows.append((space, rows[use], steps[use] - first))
        out.cores += [ids[h] * 1000 + core for core in host.cores]
    out.begin_ps = np.min(begins, axis=0) if n else np.zeros(0, np.int64)
    out.duration_ps = np.max(durations, axis=0) if n else np.zeros(0, np.int64)  # the longest core step
    out.on = np.hstack(on) if n else np.zeros((0, len(out.cores)), bool)
    out.core_ps = np.hstack(core_ps) if n else np.zeros((0, len(out.cores)), np.int64)
    out.counted = np.concatenate([h.counted for h in hosts]) if hosts else np.zeros(0, bool)
    out.categories = names
    out.entries = tuple(np.concatenate(p) for p in parts)  # type: ignore[assignment]
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


def gpu_and_tpu_host(spaces: list[XSpaceData]) -> XSpaceData | None:
    """A host with both GPU and TPU planes (no runtime writes one), if any."""
    from profscope.models.analysis.xprof.device_op_metrics import gpu_planes

    return next((s for s in spaces if tensor_cores(s) and gpu_planes(s)), None)


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
    highest of the hosts'). Its one device op metrics db holds both kinds of ops: here the GPU hosts' DeviceStats
    (TF kernels, or XLA ops with XLA's GPU costs in `xla_ops`), which each tool adds to the TensorCores' ops.
    Its step db is the step intersection of the hosts that have a device type XProf knows: GPU hosts, and TPU
    hosts whose TensorCores name a TPU chip (device_type_string; the others count as coordinators). A GPU host's
    step is one core (GPU_CORE) that is idle for XProf's TPU breakdown."""
    from profscope.models.analysis.xprof.device_op_metrics import device_stats, gpu_planes, gpu_step_db, plane_stats

    gpu_hosts = [s for s in spaces if gpu_planes(s)]  # (none with TensorCores too: device_stats refuses them)
    stats = device_stats(gpu_hosts, paths, steps)  # XLA ops on the GPUs: `xla_ops`, their costs
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
            n = len(db.number)
            host = TpuSteps(db.number.astype(np.int64), db.begin_ps.astype(np.int64), db.duration_ps.astype(np.int64),
                            [GPU_CORE], np.ones((n, 1), bool), db.duration_ps.astype(np.int64).reshape(n, 1),
                            counted=np.zeros(1, bool))
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
    """XProf's PerTpuStepDetails of each step (ms; infeed shares in percent): float64 arrays."""

    number: np.ndarray
    compute: np.ndarray
    infeed: np.ndarray
    outfeed: np.ndarray
    idle: np.ndarray
    host: np.ndarray  # host transfers (host send and recv)
    infeed_percent: np.ndarray  # (steps, 3): average, minimum, maximum over the cores
    step_ms: np.ndarray  # the longest core's step time (XProf's step time summary)
    active: np.ndarray  # the cores' average compute (optimal step) time


HOST_SEND_RECV = ("host send", "host send-done", "host recv", "host recv-done")


def step_details(steps: TpuSteps) -> TpuStepDetails:
    """XProf's ComputeTpuPerStepDataAcrossCores: every TensorCore's step lasts its host's step time; per core
    its infeed, outfeed, host transfers and idle time (the step less its ops' self time) are waits for the host,
    the rest compute. A step's compute is the least of its cores', its infeed the most, its outfeed their
    average, its idle time the shortest core step less the rest, its time the longest."""
    on = steps.on
    cores = on.sum(axis=1)
    step = steps.core_ps
    infeed, outfeed = steps.category_ps(("infeed",)), steps.category_ps(("outfeed",))
    host = steps.category_ps(HOST_SEND_RECV)
    optimal = steps.category_ps() - infeed - outfeed - host  # the step less infeed, outfeed, host and idle
    big = np.iinfo(np.int64).max
    d = TpuStepDetails(steps.number, np.where(on, optimal, big).min(axis=1, initial=big) / 1e9,
                       np.where(on, infeed, 0).max(axis=1, initial=0) / 1e9,
                       np.where(on, outfeed, 0).sum(axis=1) / np.maximum(cores, 1) / 1e9, np.zeros(len(cores)),
                       np.where(on, host, 0).max(axis=1, initial=0) / 1e9, np.zeros((len(cores), 3)),
                       np.where(on, step, 0).max(axis=1, initial=0) / 1e9,
                       np.where(on, optimal, 0).sum(axis=1) / np.maximum(cores, 1) / 1e9)
    non_idle = d.compute + d.infeed + d.outfeed
    d.idle = np.maximum(np.where(on, step, big).min(axis=1, initial=big) / 1e9 - non_idle, 0.0)
    share = 100.0 * infeed / np.where(step > 0, step, 1)
    share[step <= 0] = 0.0
    total = np.zeros(len(cores))
    for c in range(on.shape[1]):  # in core order, as XProf adds them up
        total += np.where(on[:, c], share[:, c], 0.0)
    d.infeed_percent[:, 0] = total / np.maximum(cores, 1)
    d.infeed_percent[:, 1] = np.where(on, share, np.inf).min(axis=1, initial=np.inf)
    d.infeed_percent[:, 2] = np.maximum(np.where(on, share, DBL_MIN).max(axis=1, initial=DBL_MIN), DBL_MIN)
    return d


def tpu_step_table(d: TpuStepDetails, input_statement: str, output_statement: str, next_step: str) -> dict:
    """XProf's TPU step-time DataTable (input pipeline's second, overview's second)."""
    from profscope.models.analysis.xprof.input_pipeline import one, summary, two

    avg, sdv, lo, hi = summary(d.step_ms)
    pct = summary(d.infeed_percent[:, 2])
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
    step = d.compute + d.infeed + d.outfeed + d.idle
    tooltips = [f"step {number}:\nTime waiting for input data = {infeed:.3f} ms, Step time = {ms:.3f} ms"
                for number, infeed, ms in zip(d.number.tolist(), d.infeed.tolist(), step.tolist())]
    zero = np.zeros(len(step))
    each = np.arange(len(step))
    rows = Rows([(each, [str(n) for n in d.number.tolist()]), d.compute, zero, zero, d.infeed, d.outfeed, d.idle,
                 d.host, (each, tooltips), *d.infeed_percent.T])
    return table(TPU_STEP_COLUMNS, rows, p)


def max_infeed_core_table(d: TpuStepDetails) -> dict:
    """Per step the core that waited longest for infeed (none without infeed: "unknown")."""
    n = len(d.number)
    index = np.arange(n)
    cols = JsonList([b'{"id":"', b'","label":"', b'","type":"string"}'], [("i", index), ("i", index)], n,
                    b'{"id":"index","label":"Index","type":"string"}')
    numbers = JsonList([b'{"v":"', b'"}'], [("i", d.number)], n, b'{"v":"Step number"}')
    cores = JsonList([b'{"v":"unknown"}'], [], n, b'{"v":"Core name"}')
    return {"cols": cols, "rows": [{"c": numbers}, {"c": cores}]}


def tpu_bottleneck(d: TpuStepDetails) -> tuple[str, str, str]:
    """XProf's TPU input classification, input statement and output statement (ComputeTpuBottleneckAnalysis's
    input and output parts)."""
    from profscope.models.analysis.xprof.input_pipeline import Bottleneck, input_conclusion, one

    def added(values: np.ndarray) -> float:  # in step order, as XProf adds them (cumsum adds in order)
        return float(np.cumsum(values)[-1]) if len(values) else 0.0

    total = added(d.compute + d.infeed + d.outfeed + d.idle)
    infeed, outfeed = added(d.infeed), added(d.outfeed)
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
        _keyed, category, names = op_metadata(space, plane, ops)
        on[: len(ops)] = ~np.isin(category, [k for k, name in enumerate(names) if name in OFF_DUTY])
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
    if gpu is not None:  # XProf's combined device op metrics db: the GPUs' rows (FLOPs of XLA ops) beside
        n = len(gpu) - 1  # without its IDLE row
        keys = list(keys) + list(zip(gpu.name[:n], gpu.category[:n]))
        occurrences, time_ps, self_ps = (np.r_[a, b[:n]] for a, b in ((occurrences, gpu.occurrences),
                                                                      (time_ps, gpu.time_ps),
                                                                      (self_ps, gpu.self_time_ps)))
        flops = np.r_[flops, gpu.costs()[0][:n]]
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
    # XProf's TPU page fills none of the generic ones but the precision statement (of a GPU host's compute).
    recommendation["p"] = {k: "" for k in recommendation["p"]}
    recommendation["p"]["precision_statement"] = ov._precision_statement(stats)
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
