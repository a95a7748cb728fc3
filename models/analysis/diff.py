"""Comparing two profiles: a baseline and a candidate side by side.

- Statistics (kernel_stats, op_stats and the per-device op-type table): rows
  of both sides joined by name (np.unique over the two tables' keys), with
  count, total and mean on each side, the delta and ratio, and a status:
  changed, added (only in the candidate), removed (only in the baseline) or
  same. Sorted by the absolute delta of total time.
- Overview: per host, step time, the temporal breakdown and the busiest
  device, as baseline / candidate / delta.
- Memory: per allocator, the lifetime and window peaks, the allocations at
  each side's peak matched by op name and shape, and both memory curves
  resampled onto one time axis.

Each side is a Side: a timeline, optionally one of its hosts, and a time
window (a ProfilerStep range per side, from step_window_of). Rows are keyed
by name alone unless both sides span several hosts; then by host and name.
No Qt: the command line and the window share this.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from profscope.models.analysis import trace_stats
from profscope.models.core.guards import compile_regexp  # RE2: linear time whatever the pattern
from profscope.models.core.task import ProfileError
from profscope.models.data.memory_profile import AllocationRows, AllocatorProfile, MemoryProfileData
from profscope.models.data.timeline import Timeline

STATUSES = ("same", "changed", "added", "removed")
SAME, CHANGED, ADDED, REMOVED = range(4)
GROWTH = ("same", "grown", "shrunk", "added", "removed")
TABLES = ("kernel_stats", "op_stats", "op_types")
CURVE_POINTS = 1000
TOP_ALLOCATIONS = 20
_PID = re.compile(r" \(pid \d+\)$")  # Kineto group names carry the pid, which differs between runs


@dataclass
class Side:
    """One side of a comparison: a timeline, the host to look at (None:
    every host) and the time window to count (None: the whole trace)."""

    timeline: Timeline
    host: str | None = None
    window: tuple[int, int] | None = None


def step_window_of(tl: Timeline, spec: str) -> tuple[int, int] | None:
    """The window of a step choice: "" = the whole trace, "A" or "A-B" =
    ProfilerStep#A to #B, "median" = the step of median duration."""
    spec = spec.strip()
    if not spec:
        return None
    if spec == "median":
        s = step_spans(tl)
        if not len(s):
            raise ProfileError("the trace has no ProfilerStep to take the median of")
        k = np.argsort(s.end_ps - s.start_ps, kind="stable")[(len(s) - 1) // 2]
        return int(s.start_ps[k]), int(s.end_ps[k])
    try:
        first, last = trace_stats.step_range(spec)
    except ValueError:
        raise ProfileError(f"steps {spec!r}: expected A, A-B or median") from None
    try:
        return trace_stats.step_window(tl, first, last)
    except ValueError as e:
        raise ProfileError(str(e)) from None


def step_spans(tl: Timeline) -> trace_stats.Steps:
    """Each ProfilerStep number once, ascending, with its span over every
    host: its earliest start to its latest end."""
    s = trace_stats.steps(tl)
    numbers, inverse = np.unique(s.number, return_inverse=True)
    start = np.full(len(numbers), np.iinfo(np.int64).max)
    end = np.full(len(numbers), np.iinfo(np.int64).min)
    np.minimum.at(start, inverse.ravel(), s.start_ps)
    np.maximum.at(end, inverse.ravel(), s.end_ps)
    return trace_stats.Steps(numbers, start, end)


# ---------------------------------------------------------------- statistics


@dataclass
class StatsTable:
    """One side's statistics rows (one table: kernel_stats, op_stats or op_types)."""

    host: list[str]
    device: list[str]  # "" except for op_types
    name: list[str]
    type: list[str]
    count: np.ndarray
    total_ps: np.ndarray

    def __len__(self) -> int:
        return len(self.name)

    def only_host(self, host: str | None, hosts: list[str]) -> StatsTable:
        if host is None:
            return self
        if host not in hosts:
            raise ProfileError(f"no host {host!r} in the trace (hosts: {', '.join(hosts)})")
        keep = np.flatnonzero(np.array(self.host, dtype=object) == host) if len(self) else np.zeros(0, np.int64)
        pick = lambda items: [items[i] for i in keep.tolist()]
        return StatsTable(pick(self.host), pick(self.device), pick(self.name), pick(self.type),
                          self.count[keep], self.total_ps[keep])


def device_name(group: str, host: str) -> str:
    """A group's name as it matches across runs: no host prefix, no pid."""
    if host and group.startswith(host + ": "):
        group = group[len(host) + 2:]
    return _PID.sub("", group)


def stats_table(side: Side, table: str) -> StatsTable:
    """A side's kernel_stats, op_stats (host time of cpu_ops) or op_types
    (every event per device and op type) rows."""
    tl, window = side.timeline, side.window
    hosts = trace_stats.host_names(tl)
    if table == "kernel_stats":
        s = trace_stats.kernel_stats(tl, window)
        t = StatsTable(s.host, [""] * len(s), s.name, s.type, s.count, s.total_ps)
    elif table == "op_stats":
        o = trace_stats.op_stats(tl, window)
        t = StatsTable(o.host, [""] * len(o), o.name, [trace_stats.CPU_OP] * len(o), o.calls, o.host_total_ps)
    elif table == "op_types":
        selection = None
        if window is not None:
            selection = np.flatnonzero((tl.start_ps >= window[0]) & (tl.start_ps <= window[1]))
        k = tl.kind_stats(selection)
        group_host = [tl.group_host[g] if tl.group_host else "" for g in k.group.tolist()]
        t = StatsTable(group_host, [device_name(tl.groups[g], h) for g, h in zip(k.group.tolist(), group_host)],
                       [tl.kinds[i] for i in k.kind.tolist()], ["op_type"] * len(k), k.count, k.total_ps)
    else:
        raise ProfileError(f"unknown statistics table {table!r} (tables: {', '.join(TABLES)})")
    return t.only_host(side.host, hosts)


@dataclass
class StatsDiff:
    """Joined rows of two statistics tables, largest absolute delta of total first."""

    table: str
    by_host: bool  # rows are keyed by host too (both sides span several hosts)
    host: list[str]
    device: list[str]
    name: list[str]
    type: list[str]
    base_count: np.ndarray
    cand_count: np.ndarray
    base_total_ps: np.ndarray
    cand_total_ps: np.ndarray
    status: np.ndarray  # int8 codes into STATUSES

    def __len__(self) -> int:
        return len(self.name)

    @property
    def delta_total_ps(self) -> np.ndarray:
        return self.cand_total_ps - self.base_total_ps

    @property
    def delta_count(self) -> np.ndarray:
        return self.cand_count - self.base_count

    @property
    def base_mean_ps(self) -> np.ndarray:
        return self.base_total_ps / np.maximum(self.base_count, 1)

    @property
    def cand_mean_ps(self) -> np.ndarray:
        return self.cand_total_ps / np.maximum(self.cand_count, 1)

    @property
    def ratio(self) -> np.ndarray:
        """Candidate total over baseline total (NaN where the baseline has none)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.base_total_ps > 0, self.cand_total_ps / np.maximum(self.base_total_ps, 1), np.nan)

    def take(self, index: np.ndarray) -> StatsDiff:
        pick = lambda items: [items[i] for i in index.tolist()]
        return StatsDiff(self.table, self.by_host, pick(self.host), pick(self.device), pick(self.name),
                         pick(self.type), self.base_count[index], self.cand_count[index], self.base_total_ps[index],
                         self.cand_total_ps[index], self.status[index])

    def filtered(self, text: str = "", regex: bool = False, min_delta_us: float = 0.0,
                 min_change: float = 0.0) -> StatsDiff:
        """Rows whose name contains `text` (case-insensitive; an RE2 search
        with regex), whose total moved by at least `min_delta_us` and by at
        least `min_change` of the baseline's total (0.05 = 5 %; added and
        removed rows always pass that one)."""
        keep = np.abs(self.delta_total_ps) >= min_delta_us * trace_stats.PS_PER_US
        if min_change > 0:
            with np.errstate(divide="ignore", invalid="ignore"):
                change = np.abs(self.delta_total_ps) / self.base_total_ps
            keep &= (self.base_total_ps == 0) | (change >= min_change)
        if text:
            keep &= _name_matches(self.name, text, regex)
        return self.take(np.flatnonzero(keep))

    def to_json(self) -> dict:
        """{"rows": [{"name", "type", "baseline": {"count", "total_us", "mean_us"},
        "candidate": {...}, "delta_total_us", "status", ...}]} (docs/DIFF.md)."""
        rows = []
        ratio, d_total, d_count = self.ratio, self.delta_total_ps, self.delta_count
        b_mean, c_mean = self.base_mean_ps, self.cand_mean_ps
        for i in range(len(self)):
            row: dict[str, object] = {"host": self.host[i]} if self.by_host else {}
            if self.table == "op_types":
                row["device"] = self.device[i]
            row.update({
                "name": self.name[i], "type": self.type[i],
                "baseline": _counts(self.base_count[i], self.base_total_ps[i], b_mean[i]),
                "candidate": _counts(self.cand_count[i], self.cand_total_ps[i], c_mean[i]),
                "delta_total_us": _us(d_total[i]), "delta_count": int(d_count[i]),
                "ratio": None if np.isnan(ratio[i]) else round(float(ratio[i]), 6),
                "status": STATUSES[self.status[i]]})
            rows.append(row)
        return {"rows": rows}


def _counts(count, total_ps, mean_ps) -> dict:
    return {"count": int(count), "total_us": _us(total_ps), "mean_us": _us(mean_ps)}


def _name_matches(names: list[str], text: str, regex: bool) -> np.ndarray:
    """Per name: whether it matches (names are distinct rows, not events)."""
    if regex:
        pattern = compile_regexp(text)
        return np.array([pattern.search(n) is not None for n in names], bool)
    folded = text.casefold()
    return np.array([folded in n.casefold() for n in names], bool)


def diff_tables(base: StatsTable, cand: StatsTable, table: str = "") -> StatsDiff:
    """Joins two tables' rows on (device, name), and host when both span several hosts."""
    by_host = len(set(base.host)) > 1 and len(set(cand.host)) > 1
    keys = [[_key(t, i, by_host) for i in range(len(t))] for t in (base, cand)]
    _, first, ((bc, cc), (bt, ct), (rows_b, rows_c)) = _join(*keys, (base.count, cand.count),
                                                             (base.total_ps, cand.total_ps))
    status = np.full(len(first), CHANGED, np.int8)
    status[(bc == cc) & (bt == ct)] = SAME
    status[rows_b == 0] = ADDED
    status[rows_c == 0] = REMOVED
    order = _largest_change_first(bt, ct)
    rows = first[order].tolist()

    def label(column):
        both = getattr(base, column) + getattr(cand, column)
        return [both[i] for i in rows]

    return StatsDiff(table, by_host, label("host"), label("device"), label("name"), label("type"),
                     bc[order], cc[order], bt[order], ct[order], status[order])


def _join(base_keys: list[str], cand_keys: list[str], *columns) -> tuple[np.ndarray, np.ndarray, list]:
    """Two sides' rows joined on their keys (np.unique over both): the
    distinct keys, each one's first row (baseline rows, then candidate rows),
    and per (baseline values, candidate values) column the sums per key on
    each side, then each side's number of rows per key."""
    keys = np.array(base_keys + cand_keys, dtype=object)
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    in_cand = np.arange(len(keys)) >= len(base_keys)

    def sums(values, rows):
        out = np.zeros(len(uniq), np.int64)
        np.add.at(out, inverse[rows], values[rows])
        return out

    out = []
    for b, c in columns + ((np.ones(len(base_keys)), np.ones(len(cand_keys))),):
        values = np.concatenate([b, c]).astype(np.int64)
        out.append((sums(values, ~in_cand), sums(values, in_cand)))
    return uniq, first, out


def _largest_change_first(base: np.ndarray, cand: np.ndarray) -> np.ndarray:
    """Row order by absolute change, largest first; ties in key order."""
    return np.argsort(-np.abs(cand - base), kind="stable")


def _key(t: StatsTable, i: int, by_host: bool) -> str:
    return "\x1f".join(((t.host[i],) if by_host else ()) + (t.device[i], t.name[i]))


def stats_diff(base: Side, cand: Side, table: str) -> StatsDiff:
    """The diff of one statistics table (kernel_stats, op_stats or op_types)."""
    return diff_tables(stats_table(base, table), stats_table(cand, table), table)


# ---------------------------------------------------------------- overview


@dataclass
class HostFacts:
    """One side's overview numbers for one host."""

    host: str
    step_ps: np.ndarray  # the ProfilerSteps' durations
    span_ps: int
    idle_ps: int
    compute_ps: int
    non_compute_ps: int
    busiest_device: str
    busiest_ps: int


def host_facts(side: Side) -> list[HostFacts]:
    tl = side.timeline
    hosts = trace_stats.host_names(tl)
    host_of, gpu = trace_stats.event_host(tl), trace_stats.gpu_events(tl)
    out = []
    for k, o in enumerate(trace_stats.overview(tl, side.window)):
        if side.host is not None and o.host != side.host:
            continue
        device, busy = _busiest_device(tl, host_of == k, gpu, side.window)
        out.append(HostFacts(o.host, o.steps.end_ps - o.steps.start_ps, o.span_ps, o.idle_ps, o.compute_ps,
                             o.non_compute_ps, device_name(device, hosts[k]), busy))
    if side.host is not None and not out:
        raise ProfileError(f"no host {side.host!r} in the trace (hosts: {', '.join(hosts)})")
    return out


def _busiest_device(tl: Timeline, on_host: np.ndarray, gpu: np.ndarray,
                    window: tuple[int, int] | None) -> tuple[str, int]:
    """The host's device (group) whose events cover the most time: GPU
    activity where there is some (by launch time), else every event but
    Kineto's window span (by start)."""
    ev = gpu[on_host[gpu]]
    if len(ev):
        ev = trace_stats._in_window(tl, ev, window, trace_stats.launch_time(tl, ev) if window else None)
    else:
        ev = np.flatnonzero(on_host & (tl.duration_ps > 0))
        if tl.category is not None and "Trace" in tl.categories:
            ev = ev[tl.category[ev] != tl.categories.index("Trace")]
        ev = trace_stats._in_window(tl, ev, window)
    best, best_ps = "", 0
    group = tl.event_group[ev]
    for g in np.unique(group).tolist():
        e = ev[group == g]
        busy = trace_stats.union_length(tl.start_ps[e], tl.end_ps[e])
        if busy > best_ps:
            best, best_ps = tl.groups[g], busy
    return best, best_ps


@dataclass
class OverviewDiff:
    """Hosts paired by name (a lone host on each side pairs with the other)."""

    pairs: list[tuple[HostFacts | None, HostFacts | None]]

    def to_json(self) -> dict:
        hosts = []
        for b, c in self.pairs:
            steps = lambda f, fn: _us(fn(f.step_ps)) if f is not None and len(f.step_ps) else None
            value = lambda f, name: getattr(f, name) if f is not None else None
            hosts.append({
                "host": (b or c).host,  # type: ignore[union-attr]  # a pair has one side at least
                "baseline_host": value(b, "host"), "candidate_host": value(c, "host"),
                "status": "added" if b is None else "removed" if c is None else "compared",
                "step_count": _triple(len(b.step_ps) if b else None, len(c.step_ps) if c else None),
                **{f"step_{name}_us": _triple(steps(b, fn), steps(c, fn))
                   for name, fn in (("mean", np.mean), ("median", np.median), ("min", np.min), ("max", np.max))},
                **{f"{name}_us": _triple(_us_or_none(value(b, f"{name}_ps")), _us_or_none(value(c, f"{name}_ps")))
                   for name in ("span", "idle", "compute", "non_compute")},
                "busiest_device": {"baseline": value(b, "busiest_device"), "candidate": value(c, "busiest_device")},
                "busiest_device_busy_us": _triple(_us_or_none(value(b, "busiest_ps")),
                                                  _us_or_none(value(c, "busiest_ps"))),
            })
        return {"hosts": hosts}


def overview_diff(base: Side, cand: Side) -> OverviewDiff:
    b = {f.host: f for f in host_facts(base)}
    c = {f.host: f for f in host_facts(cand)}
    return OverviewDiff([(b.get(x), c.get(y)) for x, y in pair_names(list(b), list(c))])  # type: ignore[arg-type]


def pair_names(a: list[str], b: list[str]) -> list[tuple[str | None, str | None]]:
    """Names of two sides paired: equal names together, a lone name on each
    side with the other whatever they are called; the rest added or removed."""
    if len(a) == 1 and len(b) == 1:
        return [(a[0], b[0])]
    return [(x, x if x in b else None) for x in a] + [(None, y) for y in b if y not in a]


def _triple(b, c) -> dict:
    delta = None if b is None or c is None else round(c - b, 3)
    return {"baseline": b, "candidate": c, "delta": delta}


def _us(ps) -> float:
    return round(float(ps) / trace_stats.PS_PER_US, 3)


def _us_or_none(ps) -> float | None:
    return None if ps is None else _us(ps)


# ---------------------------------------------------------------- memory


@dataclass
class Curves:
    """Two memory-in-use curves on one time axis (ps from each side's
    alignment point): per bin the highest stack + heap of each side in it,
    NaN outside a side's profile."""

    time_ps: np.ndarray  # each bin's start
    baseline: np.ndarray  # float64 bytes
    candidate: np.ndarray


@dataclass
class AllocationDiff:
    """Allocations at each side's window peak, by (op, shape), or by (op, call
    stack, shape) where both sides' rows carry their stacks (JAX pprof
    profiles): total bytes and occurrences per side; largest absolute change
    first. Ops are matched without the object addresses Python puts in the
    names of built-in methods ("... object at 0x7f...>"), which differ from
    run to run."""

    op: list[str]
    shape: list[str]
    base_bytes: np.ndarray
    cand_bytes: np.ndarray
    base_count: np.ndarray
    cand_count: np.ndarray
    status: np.ndarray  # int8 codes into GROWTH
    stack: list[str] | None = None  # each row's call stack, when matched by it

    def __len__(self) -> int:
        return len(self.op)


@dataclass
class AllocatorDiff:
    memory_id: str
    baseline: AllocatorProfile | None
    candidate: AllocatorProfile | None
    baseline_id: str | None
    candidate_id: str | None
    allocations: AllocationDiff
    curves: Curves
    base_origin_ps: int  # each side's alignment point on its own time axis
    cand_origin_ps: int

    def peaks(self) -> dict:
        """The lifetime and window peaks (bytes) and when the window peak came
        (µs from each side's alignment point), as baseline / candidate / delta."""
        b, c = self.baseline, self.candidate
        peak = lambda p, name: None if p is None else getattr(p.summary, name)
        when = lambda p, origin: None if p is None else _us(p.summary.peak_time_ps - origin)
        return {"lifetime_peak_bytes": _triple(peak(b, "peak_bytes_lifetime"), peak(c, "peak_bytes_lifetime")),
                "window_peak_bytes": _triple(peak(b, "peak_in_use"), peak(c, "peak_in_use")),
                "window_peak_time_us": _triple(when(b, self.base_origin_ps), when(c, self.cand_origin_ps))}


@dataclass
class MemoryDiff:
    allocators: list[AllocatorDiff]
    align_step: int | None = None

    def to_json(self, top: int | None = TOP_ALLOCATIONS) -> dict:
        out = []
        for a in self.allocators:
            rows = a.allocations
            n = len(rows) if top is None else min(top, len(rows))
            out.append({
                "memory_id": a.memory_id, "baseline_id": a.baseline_id, "candidate_id": a.candidate_id,
                "status": "added" if a.baseline is None else "removed" if a.candidate is None else "compared",
                **a.peaks(),
                "peak_allocations": [{
                    "op": rows.op[i], "shape": rows.shape[i],
                    **({"stack": rows.stack[i]} if rows.stack is not None else {}),
                    "baseline": {"bytes": int(rows.base_bytes[i]), "count": int(rows.base_count[i])},
                    "candidate": {"bytes": int(rows.cand_bytes[i]), "count": int(rows.cand_count[i])},
                    "delta_bytes": int(rows.cand_bytes[i] - rows.base_bytes[i]),
                    "status": GROWTH[rows.status[i]]} for i in range(n)],
                "more_allocations": len(rows) - n,
                "curves": {"time_us": [_us(t) for t in a.curves.time_ps.tolist()],
                           "baseline_bytes": _json_numbers(a.curves.baseline),
                           "candidate_bytes": _json_numbers(a.curves.candidate)},
            })
        return {"align_step": self.align_step, "allocators": out}


def _json_numbers(values: np.ndarray) -> list:
    return [None if v != v else int(v) for v in values.tolist()]  # NaN (no data there) -> null


def memory_diff(base: MemoryProfileData, cand: MemoryProfileData, align_step: int | None = None,
                points: int = CURVE_POINTS) -> MemoryDiff:
    """Per allocator (paired by memory id): peaks, the allocations at each
    peak, and the curves aligned at the first snapshot, or at the first
    snapshot of step `align_step` on each side."""
    out = []
    for x, y in pair_names(base.memory_ids, cand.memory_ids):
        b = base.allocators[x] if x is not None else None
        c = cand.allocators[y] if y is not None else None
        ob = _origin(b, align_step, "baseline", x)
        oc = _origin(c, align_step, "candidate", y)
        name = y if x is None else x  # a pair has one side at least
        assert name is not None
        out.append(AllocatorDiff(name, b, c, x, y, _allocation_diff(b, c),
                                 _curves(b, c, ob, oc, points), ob, oc))
    return MemoryDiff(out, align_step)


def _origin(a: AllocatorProfile | None, step: int | None, side: str, memory_id: str | None) -> int:
    if a is None or not len(a.timeline):
        return 0
    tl = a.timeline
    if step is None:
        return int(tl.time_ps[0])
    hits = np.flatnonzero(tl.step == step)
    if not len(hits):
        steps = np.unique(tl.step)
        raise ProfileError(f"the {side}'s allocator {memory_id} has no snapshot in step {step} "
                           f"(steps {steps[0]}..{steps[-1]})")
    return int(tl.time_ps[hits[0]])


def _allocation_diff(b: AllocatorProfile | None, c: AllocatorProfile | None) -> AllocationDiff:
    rows = [p.peak_allocations if p is not None else AllocationRows([], [], [], [], *[np.zeros(0, np.int64)] * 6)
            for p in (b, c)]
    by_stack = all(p is None or p.region_is_stack for p in (b, c))
    keys = [[f"{_OBJECT_AT.sub('>', op)}\x1f{region if by_stack else ''}\x1f{shape}"
             for op, region, shape in zip(r.op, r.region, r.shape)] for r in rows]
    uniq, _, ((bb, cb), (bn, cn), _) = _join(
        *keys, *zip(*((r.allocation * r.occurrences, r.occurrences) for r in rows))
    )
    status = np.select([bn == 0, cn == 0, cb > bb, cb < bb], [3, 4, 1, 2], 0).astype(np.int8)  # GROWTH codes
    order = _largest_change_first(bb, cb)
    op_stack_shape = [k.split("\x1f") for k in uniq[order].tolist()]
    return AllocationDiff(
        [k[0] for k in op_stack_shape], [k[2] for k in op_stack_shape], bb[order], cb[order], bn[order], cn[order],
        status[order], [k[1] for k in op_stack_shape] if by_stack else None,
    )


# " at 0x7f3a...>" closing a built-in method's name: an object's address, new in every run.
_OBJECT_AT = re.compile(r" at 0x[0-9a-fA-F]+>$")


def _curves(b: AllocatorProfile | None, c: AllocatorProfile | None, ob: int, oc: int, points: int) -> Curves:
    spans = [(p.timeline.time_ps - o) for p, o in ((b, ob), (c, oc)) if p is not None and len(p.timeline)]
    if not spans:
        empty = np.zeros(0)
        return Curves(np.zeros(0, np.int64), empty, empty)
    lo = min(int(t[0]) for t in spans)
    hi = max(int(t[-1]) for t in spans)
    edges = np.linspace(lo, hi, points + 1) if hi > lo else np.array([lo, lo + 1.0])
    return Curves(edges[:-1].astype(np.int64), _resample(b, ob, edges), _resample(c, oc, edges))


def _resample(p: AllocatorProfile | None, origin: int, edges: np.ndarray) -> np.ndarray:
    """Per bin [edges[k], edges[k+1]): the highest in-use value the step
    curve takes in it (the level carried in and every snapshot inside)."""
    bins = len(edges) - 1
    out = np.full(bins, np.nan)
    if p is None or not len(p.timeline):
        return out
    t = p.timeline.time_ps - origin
    v = p.timeline.in_use.astype(np.float64)
    idx = np.searchsorted(t, edges, side="left")  # snapshots of bin k: idx[k]..idx[k+1]
    carried = np.where(idx[:-1] > 0, v[np.maximum(idx[:-1] - 1, 0)], np.nan)
    last = np.searchsorted(t, edges[-1], side="right")  # the last edge is inside the final bin
    idx[-1] = last
    inside = idx[1:] > idx[:-1]
    peaks = np.full(bins, np.nan)
    if inside.any():
        # Bins are contiguous and the snapshots end with the last one: each
        # non-empty bin's run ends where the next one starts.
        peaks[inside] = np.maximum.reduceat(v[: idx[-1]], idx[:-1][inside])
    out = np.fmax(carried, peaks)
    out[edges[:-1] > t[-1]] = np.nan  # after the side's profile ended
    return out
