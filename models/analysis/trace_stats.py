"""Statistics of a timeline's GPU activity and operators: the kernel_stats,
op_stats and overview tools. They read only the generic Timeline model
(categories, parents, flows, groups' hosts), so every source that fills
those gets them.

Definitions follow HolisticTraceAnalysis (HTA) and PyTorch's former
TensorBoard plugin:
- GPU activity: events of categories `kernel`, `gpu_memcpy`, `gpu_memset`,
  `mtia_ccp_events` (PyTorch 1.8-1.10's `Kernel`, `Memcpy`, `Memset` are
  renamed to these when the trace is read).
- Kernel type by name, HTA's patterns: COMMUNICATION (`nccl...`, `hip...`,
  `hccl...`, `...ncclKernel...`), MEMORY (`Memcpy...`, `Memset...`, their
  `hip` forms, `dma...`), OTHER (what HTA excludes from computation: syncs,
  waits, launches, MTIA's `pe_exe` ...), COMPUTATION (the rest).
- Temporal breakdown per host: span = last end - first start of GPU
  activity; idle = span - the union of GPU activity; compute = the union of
  computation kernels; non-compute = the rest of the union.
- Operators (`cpu_op`): host total = duration, host self = duration minus
  the events directly inside it on its thread, device time = the GPU activity
  launched from inside it (launch -> kernel flows, `ac2g`), its own and its
  child operators'.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.timeline import Timeline, distinct

# GPU (device) activity: Kineto's categories, and MTIA's command processor events (as HTA reads them).
GPU_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset", "mtia_ccp_events")
COMPUTATION, COMMUNICATION, MEMORY, OTHER = "COMPUTATION", "COMMUNICATION", "MEMORY", "OTHER"
CPU_OP = "cpu_op"
LAUNCH_FLOW = "ac2g"
STEP_PATTERN = re.compile(r"ProfilerStep#(\d+)")
# Kineto's kernel args shown as launch parameters.
LAUNCH_ARGS = ("grid", "block", "registers per thread", "shared memory", "est. achieved occupancy %")
PS_PER_US = 1e6
LAUNCH_ROWS = 200  # kernels (largest total first) whose launch parameters are read from the file
LAUNCH_ROWS_ALWAYS = 20  # read whatever the time; the others while LAUNCH_BUDGET_S lasts
LAUNCH_BUDGET_S = 2.0
# Device process names: Kineto's "GPU 0", "rank-1: GPU 1: python ...", "MTIA 17", rocprof's "GPU0".
GPU_GROUP = re.compile(r"\b(?:GPU|MTIA) ?(\d+)\b")
# Where Kineto lists its devices: deviceProperties, or computeProperties (PyTorch 1.8).
DEVICE_PROPERTIES = ("deviceProperties", "computeProperties")


# HolisticTraceAnalysis' kernel type patterns (hta/common/types.py), each
# matched at the start of the name as HTA's re.match does; the computation
# pattern lists what is not computation.
COMMUNICATION_PATTERN = r"(^nccl.*)|(^hip)|(^hccl)|(.*ncclKernel.*)"
MEMORY_PATTERN = r"(^(hip)?Memcpy)|(^(hip)?Memset)|(^dma)"
NOT_COMPUTATION_PATTERN = (r"(^nccl)|(.*Memcpy)|(.*Memset)|(.*dma)|(^.*Sync)|(^Stream Wait Event)|(cuda.*LaunchKernel)"
                           r"|(^runFunction)|(^hip)|(^job_exe)|(^packet)|(^pe_exe)|(^cpum_exe_subgraph)|(^hccl)"
                           r"|(^collective_subgraph_execution)")
KERNEL_TYPE_PATTERNS = ((COMMUNICATION, re.compile(COMMUNICATION_PATTERN)), (MEMORY, re.compile(MEMORY_PATTERN)))
_NOT_COMPUTATION = re.compile(NOT_COMPUTATION_PATTERN)


def kernel_type(name: str) -> str:
    """HTA's classification of GPU activity by name (get_kernel_type)."""
    for kind, pattern in KERNEL_TYPE_PATTERNS:
        if pattern.match(name):
            return kind
    return OTHER if _NOT_COMPUTATION.match(name) else COMPUTATION


def _category_ids(tl: Timeline, names) -> np.ndarray:
    return np.array([k for k, c in enumerate(tl.categories) if c in names], np.int32)


def gpu_events(tl: Timeline) -> np.ndarray:
    """Indices of the GPU activity events."""
    if tl.category is None:
        return np.zeros(0, np.int64)
    return np.flatnonzero(np.isin(tl.category, _category_ids(tl, GPU_CATEGORIES)))


def event_host(tl: Timeline) -> np.ndarray:
    """Index into hosts(tl) of each event."""
    hosts = host_names(tl)
    per_group = np.array([hosts.index(h) for h in (tl.group_host or [""] * len(tl.groups))], np.int32)
    return per_group[tl.event_group] if len(per_group) else np.zeros(len(tl), np.int32)


def host_names(tl: Timeline) -> list[str]:
    return list(dict.fromkeys(tl.group_host)) if tl.group_host else [""]


def device_list(properties: dict | None) -> list[dict]:
    """The devices a trace's properties list (deviceProperties, else PyTorch
    1.8's computeProperties, whose major/minor become computeMajor/computeMinor)."""
    for key in DEVICE_PROPERTIES:
        devices = (properties or {}).get(key)
        if isinstance(devices, list) and devices:
            out = []
            for d in devices:
                if isinstance(d, dict):
                    d = dict(d)
                    for old, new in (("major", "computeMajor"), ("minor", "computeMinor")):
                        if old in d:
                            d.setdefault(new, d[old])
                    out.append(d)
            return out
    return []


def _not_device_activity(category: str) -> bool:
    """Kineto's categories of what is not the device's own work, even where
    it is drawn on a device's process (HTA's CPU and annotation categories)."""
    return category.endswith("_runtime") or category in (
        "cpu_op", "user_annotation", "gpu_user_annotation", "cuda_driver", "cuda_sync", "python_function")


def unclassified_note(tl: Timeline) -> str:
    """A sentence for a trace with events on device processes ("GPU 0",
    "GPU0", "MTIA 17") but none of the GPU categories: what its statistics
    would otherwise leave out without a word ("" when nothing is left out)."""
    if not len(tl) or len(gpu_events(tl)):
        return ""
    device_groups = [g for g, name in enumerate(tl.groups) if GPU_GROUP.search(name)]
    ev = np.flatnonzero(np.isin(tl.event_group, device_groups)) if device_groups else np.zeros(0, np.int64)
    if not len(ev):
        return ""
    if tl.category is not None:  # less what is known not to be device activity (runtime calls, annotations)
        ev = ev[~np.isin(tl.category[ev], [k for k, c in enumerate(tl.categories) if _not_device_activity(c)])]
        if not len(ev):
            return ""
    ids = np.unique(tl.category[ev]).tolist() if tl.category is not None else []
    cats = [f'"{tl.categories[c]}"' for c in ids if tl.categories[c]]
    if not cats:
        what = 'have no category ("cat")'
    else:
        what = f"are of categories {', '.join(cats)}" + (' or have none ("cat")' if len(cats) < len(ids) else "")
    return (f"this trace's device events ({len(ev):,} on {', '.join(tl.groups[g] for g in device_groups)}) {what}, "
            "which Profscope does not classify: its kernel statistics and overview leave them out")


# ---------------------------------------------------------------- steps


@dataclass
class Steps:
    """ProfilerStep#N spans of one host, by number."""

    number: np.ndarray  # int64
    start_ps: np.ndarray
    end_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.number)


def steps(tl: Timeline, host: int | None = None) -> Steps:
    """The host's (or every host's) CPU-side ProfilerStep spans, by start;
    Kineto's GPU-side copies (gpu_user_annotation) are left out."""
    ids = [k for k, n in enumerate(tl.kinds) if STEP_PATTERN.fullmatch(n)]
    ev = np.flatnonzero(np.isin(tl.kind, ids)) if ids else np.zeros(0, np.int64)
    if tl.category is not None and len(ev):
        ev = ev[~np.isin(tl.category[ev], _category_ids(tl, ("gpu_user_annotation",)))]
    if host is not None and len(ev):
        ev = ev[event_host(tl)[ev] == host]
    # every kind in ids matched STEP_PATTERN
    number = np.array([int(STEP_PATTERN.fullmatch(tl.kinds[k]).group(1)) for k in tl.kind[ev].tolist()],  # type: ignore[union-attr]
                      np.int64)
    order = np.argsort(tl.start_ps[ev], kind="stable")
    ev = ev[order]
    return Steps(number[order], tl.start_ps[ev], tl.start_ps[ev] + tl.duration_ps[ev])


def step_window(tl: Timeline, first: int, last: int) -> tuple[int, int]:
    """[start of step `first`, end of step `last`] over every host."""
    s = steps(tl)
    pick = (s.number >= first) & (s.number <= last)
    if not pick.any():
        raise ValueError(f"no ProfilerStep between {first} and {last} (steps: {_step_list(s)})")
    return int(s.start_ps[pick].min()), int(s.end_ps[pick].max())


def _step_list(s: Steps) -> str:
    n = np.unique(s.number)
    return f"{n[0]}..{n[-1]}" if len(n) else "none"


def launch_time(tl: Timeline, events: np.ndarray) -> np.ndarray:
    """When each GPU event was launched (its launch's start through the
    launch flow), else its own start: what a step range filters on."""
    t = tl.start_ps[events].copy()
    if tl.flows is not None and len(events):
        f = tl.flows.named(LAUNCH_FLOW)
        if len(f):
            order = np.argsort(f.dst)
            k = np.minimum(np.searchsorted(f.dst[order], events), len(f) - 1)
            hit = f.dst[order][k] == events
            t[hit] = tl.start_ps[f.src[order][k[hit]]]
    return t


def _in_window(tl: Timeline, events: np.ndarray, window: tuple[int, int] | None, times: np.ndarray | None = None):
    if window is None:
        return events
    t = tl.start_ps[events] if times is None else times
    return events[(t >= window[0]) & (t <= window[1])]


# ---------------------------------------------------------------- kernels


@dataclass
class KernelStats:
    host: list[str]
    name: list[str]
    type: list[str]
    count: np.ndarray
    total_ps: np.ndarray
    min_ps: np.ndarray
    max_ps: np.ndarray
    first_event: np.ndarray  # one event of each row (its launch parameters)

    def __len__(self) -> int:
        return len(self.name)

    @cached_property
    def mean_ps(self) -> np.ndarray:
        return self.total_ps / np.maximum(self.count, 1)

    @cached_property
    def share(self) -> np.ndarray:
        """Each row's part of its host's total GPU activity time."""
        hosts, host = (np.unique(np.array(self.host, dtype=object), return_inverse=True) if len(self)
                       else (np.zeros(0, object), np.zeros(0, np.intp)))
        totals = np.bincount(host, weights=self.total_ps, minlength=len(hosts))
        return self.total_ps / np.maximum(totals[host], 1) if len(self) else np.zeros(0)


def _first_of(inverse: np.ndarray, groups: int) -> np.ndarray:
    """The first position of each group in `inverse` (what np.unique's
    return_index gives)."""
    first = np.full(groups, len(inverse), np.int64)
    np.minimum.at(first, inverse, np.arange(len(inverse)))
    return first


def kernel_stats(tl: Timeline, window: tuple[int, int] | None = None) -> KernelStats:
    """Per host and GPU activity name: count, total, min, max; largest total first."""
    ev = gpu_events(tl)
    ev = _in_window(tl, ev, window, launch_time(tl, ev) if window else None)
    hosts = host_names(tl)
    host = event_host(tl)[ev].astype(np.int64)
    key = host * max(len(tl.kinds), 1) + tl.kind[ev]
    uniq, inverse = distinct(key, len(hosts) * max(len(tl.kinds), 1))
    first = _first_of(inverse, len(uniq))
    dur = tl.duration_ps[ev]
    count = np.bincount(inverse, minlength=len(uniq))
    total = np.bincount(inverse, weights=dur, minlength=len(uniq)).astype(np.int64)
    mins = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(mins, inverse, dur)
    maxs = np.zeros(len(uniq), np.int64)
    np.maximum.at(maxs, inverse, dur)
    order = np.lexsort((uniq, -total))
    kinds = tl.kind[ev][first][order].tolist()
    names = [tl.kinds[k] for k in kinds]
    return KernelStats(host=[hosts[h] for h in (uniq // max(len(tl.kinds), 1))[order].tolist()], name=names,
                       type=[kernel_type(n) for n in names],
                       count=count[order], total_ps=total[order], min_ps=mins[order], max_ps=maxs[order],
                       first_event=ev[first][order])


def launch_parameters(tl: Timeline, event: int) -> dict[str, str]:
    """Kineto's launch parameters of a kernel event (read from the file)."""
    if tl.details is None:
        return {}
    return {k[5:]: v for k, v in tl.details(int(event)) if k.startswith("args.") and k[5:] in LAUNCH_ARGS}


def kernel_stats_json(tl: Timeline, window: tuple[int, int] | None = None) -> dict:
    s = kernel_stats(tl, window)
    return {"kernels": [
        {"host": s.host[i], "name": s.name[i], "type": s.type[i], "count": int(s.count[i]),
         "total_us": _us(s.total_ps[i]), "mean_us": _us(s.mean_ps[i]), "min_us": _us(s.min_ps[i]),
         "max_us": _us(s.max_ps[i])} for i in range(len(s))]}


# ---------------------------------------------------------------- operators


@dataclass
class OpStats:
    host: list[str]
    name: list[str]
    input_shape: list[str]  # "" unless split by input shape
    calls: np.ndarray
    host_total_ps: np.ndarray
    host_self_ps: np.ndarray
    device_self_ps: np.ndarray
    device_total_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.name)


def cpu_op_ancestor(tl: Timeline, events: np.ndarray, is_op: np.ndarray, include_self: bool) -> np.ndarray:
    """The nearest cpu_op at or above each event (-1 for none)."""
    assert tl.parent is not None  # the callers' timelines have cpu_ops, so parents
    cur = events.copy() if include_self else tl.parent[events].astype(np.int64)
    for _ in range(100_000):
        todo = (cur >= 0) & ~is_op[np.maximum(cur, 0)]
        if not todo.any():
            break
        cur[todo] = tl.parent[cur[todo]]
    return cur


@dataclass
class OpTimes:
    """Per event: whether it is a cpu_op, its self time and the device time it
    launched itself and with its child operators."""

    is_op: np.ndarray
    self_ps: np.ndarray
    device_self_ps: np.ndarray
    device_total_ps: np.ndarray


def op_times(tl: Timeline) -> OpTimes | None:
    """What op_stats adds up (None without operators)."""
    if tl.category is None or tl.parent is None or CPU_OP not in tl.categories:
        return None
    is_op = tl.category == tl.categories.index(CPU_OP)
    n = len(tl)
    # Self time: minus the direct children's time.
    has_parent = np.flatnonzero(tl.parent >= 0)
    child_time = np.bincount(tl.parent[has_parent], weights=tl.duration_ps[has_parent], minlength=n)
    self_ps = np.maximum(tl.duration_ps - child_time.astype(np.int64), 0)
    # Device time: each GPU event goes to the op around its launch, then up the op tree.
    device_self = np.zeros(n, np.int64)
    device_total = np.zeros(n, np.int64)
    if tl.flows is not None:
        f = tl.flows.named(LAUNCH_FLOW)
        owner = cpu_op_ancestor(tl, f.src.astype(np.int64), is_op, include_self=True)
        dur = tl.duration_ps[f.dst]
        ok = owner >= 0
        np.add.at(device_self, owner[ok], dur[ok])
        cur, d = owner[ok], dur[ok]
        for _ in range(100_000):
            if not len(cur):
                break
            np.add.at(device_total, cur, d)
            cur = cpu_op_ancestor(tl, cur, is_op, include_self=False)
            d = d[cur >= 0]
            cur = cur[cur >= 0]
    return OpTimes(is_op, self_ps, device_self, device_total)


def op_stats(tl: Timeline, window: tuple[int, int] | None = None, by_shape: bool = False,
             times: OpTimes | None = None) -> OpStats:
    """Per host and cpu_op name (and input shape, by_shape): calls, host
    total and self time, device time; `times` from op_times(tl), if at hand."""
    hosts = host_names(tl)
    times = times or op_times(tl)
    if times is None:
        empty = np.zeros(0, np.int64)
        return OpStats([], [], [], empty, empty, empty, empty, empty)
    is_op, self_ps, device_self, device_total = times.is_op, times.self_ps, times.device_self_ps, times.device_total_ps
    ops = _in_window(tl, np.flatnonzero(is_op), window)
    host = event_host(tl)[ops].astype(np.int64)
    key = host * max(len(tl.kinds), 1) + tl.kind[ops]
    shapes = max(len(tl.input_shapes), 1)
    split = by_shape and tl.input_shape is not None
    if split:
        key = key * shapes + tl.input_shape[ops]  # type: ignore[index]  # split: not None
    uniq, inverse = distinct(key, len(hosts) * max(len(tl.kinds), 1) * (shapes if split else 1))
    first = _first_of(inverse, len(uniq))

    def total(values):
        return np.bincount(inverse, weights=values[ops], minlength=len(uniq)).astype(np.int64)

    host_total, host_self = total(tl.duration_ps), total(self_ps)
    order = np.lexsort((uniq, -host_total))
    name_key = uniq // shapes if split else uniq
    return OpStats(host=[hosts[h] for h in (name_key // max(len(tl.kinds), 1))[order].tolist()],
                   name=[tl.kinds[k] for k in tl.kind[ops][first][order].tolist()],
                   input_shape=([tl.input_shapes[k]
                                 for k in tl.input_shape[ops][first][order].tolist()]  # type: ignore[index]  # split
                                if split
                                else [""] * len(uniq)),
                   calls=np.bincount(inverse, minlength=len(uniq))[order], host_total_ps=host_total[order],
                   host_self_ps=host_self[order], device_self_ps=total(device_self)[order],
                   device_total_ps=total(device_total)[order])


def op_stats_json(tl: Timeline, window: tuple[int, int] | None = None, by_shape: bool = False) -> dict:
    s = op_stats(tl, window, by_shape)
    return {"ops": [
        {"host": s.host[i], "name": s.name[i], **({"input_shape": s.input_shape[i]} if by_shape else {}),
         "calls": int(s.calls[i]), "host_total_us": _us(s.host_total_ps[i]),
         "host_self_us": _us(s.host_self_ps[i]), "device_total_us": _us(s.device_total_ps[i])}
        for i in range(len(s))]}


# ---------------------------------------------------------------- overview


@dataclass
class HostOverview:
    host: str
    span_ps: int
    idle_ps: int
    compute_ps: int
    non_compute_ps: int
    steps: Steps
    properties: dict

    def step_summary(self) -> dict:
        d = self.steps.end_ps - self.steps.start_ps
        if not len(d):
            return {"count": 0}
        return {"count": len(d), "mean_us": _us(d.mean()), "min_us": _us(d.min()), "max_us": _us(d.max())}


def _is_computation(tl: Timeline, events: np.ndarray) -> np.ndarray:
    """Whether each GPU event is a computation kernel (classified once per
    distinct name, not per event)."""
    uniq, inverse = distinct(tl.kind[events].astype(np.int64), max(len(tl.kinds), 1))
    kinds = [kernel_type(tl.kinds[int(k)]) for k in uniq.tolist()]
    return (np.array(kinds, object) == COMPUTATION)[inverse] if len(uniq) else np.zeros(0, bool)


def union_length(start: np.ndarray, end: np.ndarray) -> int:
    """Total length of the union of intervals."""
    if not len(start):
        return 0
    order = np.argsort(start, kind="stable")
    s, e = start[order], end[order]
    reach = np.maximum.accumulate(e)
    new = np.r_[True, s[1:] > reach[:-1]]  # an interval starting past everything before it opens a run
    run = np.cumsum(new) - 1
    run_start = s[new]
    run_end = np.zeros(int(run[-1]) + 1, np.int64)
    np.maximum.at(run_end, run, e)
    return int((run_end - run_start).sum())


def overview(tl: Timeline, window: tuple[int, int] | None = None) -> list[HostOverview]:
    """The temporal breakdown, step times and device properties per host."""
    hosts = host_names(tl)
    gpu = gpu_events(tl)
    gpu = _in_window(tl, gpu, window, launch_time(tl, gpu) if window else None)
    host_of = event_host(tl)
    out = []
    for k, host in enumerate(hosts):
        ev = gpu[host_of[gpu] == k]
        s, e = tl.start_ps[ev], tl.start_ps[ev] + tl.duration_ps[ev]
        span = int(e.max() - s.min()) if len(ev) else 0
        busy = union_length(s, e)
        compute = _is_computation(tl, ev)
        compute_ps = union_length(s[compute], e[compute]) if len(ev) else 0
        st = steps(tl, k)
        if window is not None:
            keep = (st.start_ps >= window[0]) & (st.end_ps <= window[1])
            st = Steps(st.number[keep], st.start_ps[keep], st.end_ps[keep])
        out.append(HostOverview(host, span, span - busy, compute_ps, busy - compute_ps, st,
                                tl.properties.get(host, {})))
    return out


def overview_json(tl: Timeline, window: tuple[int, int] | None = None) -> dict:
    return {"hosts": [
        {"host": o.host, "span_us": _us(o.span_ps), "idle_us": _us(o.idle_ps), "compute_us": _us(o.compute_ps),
         "non_compute_us": _us(o.non_compute_ps), "steps": o.step_summary(), **o.properties}
        for o in overview(tl, window)]}


def step_range(spec: str) -> tuple[int, int]:
    """"A" or "A-B" as (A, B); int()'s ValueError for anything else."""
    first, _, last = spec.partition("-")
    return int(first), int(last or first)


def tool_json(tl: Timeline, tool: str, params: dict[str, str]) -> bytes:
    """kernel_stats, op_stats or overview as JSON; params `steps=A-B` limits
    them to ProfilerSteps A to B, `group_by=input_shape` splits op_stats by
    the operators' input shapes."""
    window = None
    if spec := params.get("steps", ""):
        try:
            window = step_window(tl, *step_range(spec))
        except ValueError as e:
            raise ValueError(f"--param steps={spec}: {e}") from None
    group_by = params.get("group_by", "")
    if group_by not in ("", "input_shape") or (group_by and tool != "op_stats"):
        raise ValueError(f"--param group_by={group_by}: op_stats can be grouped by input_shape only")
    if tool == "op_stats":
        doc = op_stats_json(tl, window, by_shape=group_by == "input_shape")
    else:
        doc = {"kernel_stats": kernel_stats_json, "overview": overview_json}[tool](tl, window)
    return json.dumps(doc, separators=(",", ":")).encode()


def _us(ps) -> float:
    return round(float(ps) / PS_PER_US, 3)


# ---------------------------------------------------------------- the Statistics view's content


@dataclass
class TraceStats:
    """What the Statistics view shows, computed off the GUI thread."""

    kernels: KernelStats
    ops: OpStats
    overview: list[HostOverview]
    launch: dict[int, dict[str, str]]  # kernel row -> launch parameters (the top rows only)
    launch_rows: int  # how many of the top kernel rows had their launch parameters read
    step_numbers: np.ndarray  # every ProfilerStep number of the trace (the range selector's choices)
    step_range: tuple[int, int] | None = None  # the steps shown; None = the whole capture
    window_ps: tuple[int, int] | None = None
    devices_used: dict[str, list[int]] = field(default_factory=dict)  # host -> GPU ids its activity ran on
    ops_by_shape: OpStats | None = None  # operators split by input shape (traces with record_shapes)
    note: str = ""  # unclassified_note(): device activity the statistics leave out

    @property
    def hosts(self) -> list[str]:
        return [o.host for o in self.overview]

    def launch_by_kernel(self) -> dict[tuple[str, str], dict[str, str]]:
        """The launch parameters read, by (host, kernel name): what a
        recomputation for another step range need not read again."""
        return {(self.kernels.host[i], self.kernels.name[i]): p for i, p in self.launch.items()}


def compute(timeline: Timeline, step_range: tuple[int, int] | None = None, task: TaskState | None = None,
            launch_rows: int = LAUNCH_ROWS, known_launch: dict[tuple[str, str], dict[str, str]] | None = None,
            launch_budget_s: float = LAUNCH_BUDGET_S) -> TraceStats:
    """The Statistics tab's content for a timeline (worker thread): kernel,
    operator and overview statistics of the whole capture or of ProfilerSteps
    first..last, and the launch parameters of the top kernels.

    Launch parameters are read back from the file, for at most `launch_rows`
    kernels and, past the first LAUNCH_ROWS_ALWAYS, for as long as
    `launch_budget_s` allows (a gzip file costs ~40 ms a read); those already
    read for a (host, kernel) in `known_launch` are not read again."""
    task = task or TaskState()
    task.report(0.95, "Computing statistics")
    window = None
    if step_range is not None:
        try:
            window = step_window(timeline, *step_range)
        except ValueError as e:
            raise ProfileError(str(e)) from None
    kernels = kernel_stats(timeline, window)
    task.raise_if_cancelled()
    times = op_times(timeline)
    ops = op_stats(timeline, window, times=times)
    ops_by_shape = op_stats(timeline, window, True, times) if timeline.input_shape is not None else None
    task.raise_if_cancelled()
    hosts = overview(timeline, window)
    # The GPUs each host's activity ran on, from Kineto's process names ("GPU 0").
    used: dict[str, set[int]] = {}
    gpu_groups = np.unique(timeline.event_group[gpu_events(timeline)]) if len(timeline) else np.zeros(0, np.int64)
    for g in gpu_groups.tolist() if len(gpu_groups) else []:
        if m := GPU_GROUP.search(timeline.groups[g]):
            used.setdefault(timeline.group_host[g] if timeline.group_host else "", set()).add(int(m.group(1)))
    launch: dict[int, dict[str, str]] = {}
    known = known_launch or {}
    wanted = min(launch_rows, len(kernels))
    began = time.perf_counter()
    rows = 0  # the top rows covered so far
    while rows < wanted:
        key = (kernels.host[rows], kernels.name[rows])
        if key in known:
            launch[rows] = known[key]
        elif rows >= LAUNCH_ROWS_ALWAYS and time.perf_counter() - began > launch_budget_s:
            break
        else:
            task.report(0.96,
                        f"Reading launch parameters of kernel {rows + 1:,} of {wanted:,}" if rows % 10 == 0 else "")
            launch[rows] = launch_parameters(timeline, kernels.first_event[rows])
        rows += 1
    return TraceStats(
        kernels,
        ops,
        hosts,
        launch,
        rows,
        np.unique(steps(timeline).number),
        step_range,
        window,
        {h: sorted(ids) for h, ids in used.items()},
        ops_by_shape,
        unclassified_note(timeline),
    )
