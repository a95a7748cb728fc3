"""Step grouping of XSpace events, as XProf does it (tsl group_events).

XProf gives every event a `group_id` (its step) before its tools run:
- events nest by time containment on their line (async events excepted);
- an event with a producer context (`_pt`, `_p`) leads to the events with
  the same consumer context (`_ct`, `_c`), e.g. a Python step to the executor
  threads that ran it;
- TensorFlow while-loops (ExecutorState::Process with step `id` and
  `iter_num`) make each iteration's first executor event a root;
- otherwise the roots are the events with a root level (`_r`), taken by
  level (highest first), then by start time;
- async events (`_a`) do not nest; contexts with 64 or more producers and
  consumers link nothing;
- tf.data's function runs' step ids (`id`) are no steps: neither roots nor
  while-loop iterations carrying them count;
- each root in turn claims, as group 0, 1, ..., every event it reaches
  through those links that no earlier root claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profscope.models.formats.xspace import _steps
from profscope.models.formats.xspace.xplane import StatColumn, XSpaceData

EXECUTOR_STATE_PROCESS = "ExecutorState::Process"
# Iterator ops an executor step waits on (XProf connects them to that step).
ITERATOR_OPS = ("IteratorGetNextOp::DoCompute", "IteratorGetNextAsOptionalOp::DoCompute")
# tf.data's function runs: their step ids (`id`) mark tf.data's own executor steps, which are no steps.
TF_DATA_FUNCTION_RUNS = ("InstantiatedCapturedFunction::Run", "InstantiatedCapturedFunction::RunAsync",
                         "InstantiatedCapturedFunction::RunInstantiated",
                         "InstantiatedCapturedFunction::RunWithBorrowedArgs")
GROUP_STATS = ("_r", "_pt", "_p", "_ct", "_c", "_a")  # of every event
EXECUTOR_STATS = ("id", "iter_num")  # only executor events' count
NAME_STATS = ("iter_num", "step_num")  # only roots' count
# XProf links no producer to no consumer of a context that has this many of both.
MAX_CONTEXT_FANOUT = 64


@dataclass
class Groups:
    """Step groups of the events of one plane."""

    rows: np.ndarray  # the plane's events (indices into XSpaceData.events)
    group: np.ndarray  # int32 per row: group id, -1 outside every step
    roots: np.ndarray  # event index of each group's root, by group id
    names: list[str]  # XProf's group names ("train 0")

    def of_events(self, events: np.ndarray) -> np.ndarray:
        """Group ids of some of the plane's events."""
        return self.group[np.searchsorted(self.rows, events)]


def group_events(space: XSpaceData, plane: int) -> Groups:
    ev = space.events
    rows = space.timed_rows(plane)
    n = len(rows)
    if not n:
        return Groups(rows, np.zeros(0, np.int32), np.zeros(0, np.int64), [])
    stats = space.stats(rows, plane, list(GROUP_STATS))  # sparse: few events carry these
    stats.update(_stats_at(space, plane, rows, _events_named(space, plane, rows, (EXECUTOR_STATE_PROCESS,)),
                           EXECUTOR_STATS))

    # Edges: nesting within each line, in XProf's order (start, then longest first; in C, from the event
    # columns), producer -> consumer contexts, while-loop iterations.
    skip = np.zeros(n, bool)
    skip[stats["_a"].rows[stats["_a"].ints_present() != 0]] = True
    line_ps = np.array([ln.timestamp_ns for ln in space.lines], np.int64) * 1000
    parent = _steps.nest_rows(rows, ev.line, ev.offset_ps, ev.duration_ps, line_ps, skip)  # an int32 per event
    del skip
    src: list[np.ndarray] = []
    dst: list[np.ndarray] = []
    pt, p_id, ct, c_id = (stats[k] for k in ("_pt", "_p", "_ct", "_c"))
    prod = _common(pt.rows, p_id.rows)
    cons = _common(ct.rows, c_id.rows)
    if _has_stat(space, plane, "id") and _has_stat(space, plane, "iter_num"):
        # XProf replaces the producer context of executor events carrying a
        # step id and iteration with a legacy one (for TPU ops): theirs is lost.
        executors = _events_named(space, plane, rows[prod], (EXECUTOR_STATE_PROCESS,))
        both = _common(stats["id"].rows, stats["iter_num"].rows)
        prod = prod[~(executors & in_sorted(prod, both))]
    # Each (type, id) context is a node of its own (index n + k): producers
    # lead to it, it leads to the consumers. XProf links every producer to
    # every consumer; this reaches the same events without the product.
    keys, num_contexts = _pair_ids(np.concatenate([pt.at(prod), ct.at(cons)]),
                                   np.concatenate([p_id.at(prod, unsigned_too=True), c_id.at(cons, unsigned_too=True)]))
    fanout = (np.bincount(keys[:len(prod)], minlength=num_contexts) >= MAX_CONTEXT_FANOUT) & \
        (np.bincount(keys[len(prod):], minlength=num_contexts) >= MAX_CONTEXT_FANOUT)
    if fanout.any():
        keep_p, keep_c = ~fanout[keys[:len(prod)]], ~fanout[keys[len(prod):]]
        prod, cons, keys = prod[keep_p], cons[keep_c], np.r_[keys[:len(keep_p)][keep_p], keys[len(keep_p):][keep_c]]
    src += [prod.astype(np.int32), (n + keys[len(prod):]).astype(np.int32)]
    dst += [(n + keys[:len(prod)]).astype(np.int32), cons.astype(np.int32)]
    link_src, link_dst = _iterator_links(space, plane, rows, stats)
    src.append(link_src.astype(np.int32))
    dst.append(link_dst.astype(np.int32))
    tf_data_ids = _tf_data_step_ids(space, plane, rows)
    roots, loop_src, loop_dst = _loop_roots(space, plane, rows, stats, tf_data_ids)
    src.append(loop_src.astype(np.int32))
    dst.append(loop_dst.astype(np.int32))
    other_src, other_dst = np.concatenate(src), np.concatenate(dst)  # the few edges besides the nesting
    del src, dst
    if not len(roots):  # every event with a root level (even 0), highest level first, then by time
        r = stats["_r"]
        keep = np.ones(len(r.rows), bool)
        if len(tf_data_ids):
            ids = _stats_at(space, plane, rows, in_sorted(np.arange(n), r.rows), ("id",))["id"]
            keep[np.searchsorted(r.rows, ids.rows[np.isin(ids.ints_present(), tf_data_ids)])] = False
        roots = r.rows[keep][np.lexsort((space.start_ps(rows[r.rows[keep]]), -r.ints_present()[keep]))]

    # Each root in turn claims what it reaches among the unclaimed (in C: one
    # walk over all edges instead of a numpy pass per frontier of each root).
    local, kept_roots = _steps.claim_groups(other_src, other_dst, n + num_contexts, n, roots, parent)
    del other_src, other_dst, parent
    return Groups(rows, local, rows[kept_roots], _group_names(space, plane, rows, kept_roots))


def _stats_at(space: XSpaceData, plane: int, rows: np.ndarray, where: np.ndarray, names) -> dict[str, StatColumn]:
    """space.stats over the rows where `where` holds, as positions in rows."""
    at = np.flatnonzero(where)
    found = space.stats(rows[at], plane, list(names))
    return {k: c.subset(len(rows), slice(None), at[c.rows]) for k, c in found.items()}


def _iterator_links(space: XSpaceData, plane: int, rows, stats) -> tuple[np.ndarray, np.ndarray]:
    """XProf's inter-thread connections: the executor event (ExecutorState::Process)
    with a step id and iteration leads to the iterator ops (IteratorGetNext...
    DoCompute) of the same step and iteration (the last such executor event,
    where several have them)."""
    none = np.zeros(0, np.int64), np.zeros(0, np.int64)
    children = _events_named(space, plane, rows, ITERATOR_OPS)
    if not children.any():
        return none
    ex = _common(stats["id"].rows, stats["iter_num"].rows)
    if not len(ex):
        return none
    cst = _stats_at(space, plane, rows, children, EXECUTOR_STATS)
    ch = _common(cst["id"].rows, cst["iter_num"].rows)
    if not len(ch):
        return none
    keys, count = _pair_ids(np.r_[stats["id"].at(ex), cst["id"].at(ch)],
                            np.r_[stats["iter_num"].at(ex), cst["iter_num"].at(ch)])
    last = np.full(count, -1, np.int64)
    last[keys[:len(ex)]] = ex  # ascending rows: the last executor event of a key stays
    parent = last[keys[len(ex):]]
    linked = parent >= 0
    return parent[linked], ch[linked]


def _tf_data_step_ids(space: XSpaceData, plane: int, rows) -> np.ndarray:
    """The sorted step ids (`id`) of tf.data's function runs."""
    runs = _events_named(space, plane, rows, TF_DATA_FUNCTION_RUNS)
    if not runs.any():
        return np.zeros(0, np.int64)
    ids = _stats_at(space, plane, rows, runs, ("id",))["id"]
    return np.unique(ids.ints_present())


def _loop_roots(space: XSpaceData, plane: int, rows, stats, tf_data_ids=None):
    """TensorFlow while-loops: per (step_id, iter_num) of the executor events,
    the earliest is a root and the others its children. Sessions or
    functions without a loop (only iteration 0) do not count."""
    none = (np.zeros(0, np.int64),) * 3
    p = space.planes[plane]
    md = [mid for mid, (name, _d, _s) in p.event_metadata.items() if name == EXECUTOR_STATE_PROCESS]
    if not md:
        return none
    ex = _common(stats["id"].rows, stats["iter_num"].rows)
    ex = ex[np.isin(space.events.metadata_id[rows[ex]], md)]
    if not len(ex):
        return none
    step, it = stats["id"].at(ex), stats["iter_num"].at(ex)
    if tf_data_ids is not None and len(tf_data_ids):
        mine = ~np.isin(step, tf_data_ids)
        ex, step, it = ex[mine], step[mine], it[mine]
    keep = in_sorted(step, np.sort(step[it != 0]))  # steps with an iteration past 0
    ex, step, it = ex[keep], step[keep], it[keep]
    if not len(ex):
        return none
    start = space.start_ps(rows[ex])
    order = np.lexsort((start, it, step))
    ex, step, it, start = ex[order], step[order], it[order], start[order]
    first = np.r_[True, (step[1:] != step[:-1]) | (it[1:] != it[:-1])]
    head = np.maximum.accumulate(np.where(first, np.arange(len(first)), 0))
    roots = ex[first][np.argsort(start[first], kind="stable")]
    return roots, ex[head[~first]], ex[~first]


def _pair_ids(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, int]:
    """Ids of the distinct (a, b) pairs, numbered in sorted order, and their
    count (np.unique(axis=0) sorts rows as bytes: 40x slower)."""
    if not len(a):
        return np.zeros(0, np.int64), 0
    order = np.lexsort((b, a))
    sa, sb = a[order], b[order]
    ids = np.cumsum(np.r_[True, (sa[1:] != sa[:-1]) | (sb[1:] != sb[:-1])]) - 1
    out = np.empty(len(a), np.int64)
    out[order] = ids
    return out, int(ids[-1]) + 1


def in_sorted(a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """Which values of a are in sorted_b (np.isin/intersect1d go through
    numpy's hash unique, which takes seconds on millions of sorted rows)."""
    if not len(sorted_b):
        return np.zeros(len(a), bool)
    i = np.minimum(np.searchsorted(sorted_b, a), len(sorted_b) - 1)
    return sorted_b[i] == a


def _common(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The sorted distinct values of sorted a also in sorted b."""
    both = a[in_sorted(a, b)]
    return both[np.r_[True, both[1:] != both[:-1]]] if len(both) else both


def _has_stat(space: XSpaceData, plane: int, name: str) -> bool:
    return name in space.planes[plane].stat_names.values()


def _events_named(space: XSpaceData, plane: int, events: np.ndarray, names: tuple[str, ...]) -> np.ndarray:
    """Which events (ascending) have one of the names."""
    md = [mid for mid, (n, _d, _s) in space.planes[plane].event_metadata.items() if n in names]
    column = space.events.metadata_id
    # A view where the events are a range (the usual case: a plane's), not a fresh copy of millions of ids.
    contiguous = len(events) and int(events[-1]) - int(events[0]) + 1 == len(events)
    return np.isin(column[int(events[0]) : int(events[-1]) + 1] if contiguous else column[events], md)


def _group_names(space: XSpaceData, plane: int, rows, roots: np.ndarray) -> list[str]:
    """XProf's step names: each root's name and its iteration or step number
    (else the group id)."""
    md = space.planes[plane].event_metadata
    num = np.arange(len(roots), dtype=np.int64)
    unset = np.ones(len(roots), bool)
    by_position = np.argsort(roots, kind="stable")
    stats = space.stats(rows[roots[by_position]], plane, list(NAME_STATS))
    for stat in NAME_STATS:
        col = stats[stat]
        once = np.r_[True, col.rows[1:] != col.rows[:-1]] if len(col.rows) else np.zeros(0, bool)  # the first of a name
        here = by_position[col.rows[once]]
        take = unset[here]
        num[here[take]] = col.ints_present()[once][take]
        unset[here] = False
    ids = space.events.metadata_id[rows[roots]].tolist()
    return [f"{md[i][0] if i in md else ''} {n}" for i, n in zip(ids, num.tolist())]
