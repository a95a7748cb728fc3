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
- each root in turn claims, as group 0, 1, ..., every event it reaches
  through those links that no earlier root claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models import _nesting
from models.formats.xspace.xplane import XSpaceData, xprof_order

EXECUTOR_STATE_PROCESS = "ExecutorState::Process"
GROUP_STATS = ("_r", "_pt", "_p", "_ct", "_c", "_a", "id", "iter_num", "step_num")
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
    rows = np.flatnonzero((ev.plane == plane) & ~ev.aggregated)
    n = len(rows)
    if not n:
        return Groups(rows, np.zeros(0, np.int32), np.zeros(0, np.int64), [])
    stats = space.stats(rows, plane, list(GROUP_STATS))  # sparse: few events carry these

    # Nesting within each line, in XProf's order (start, then longest first).
    start = space.start_ps(rows)
    end = start + np.maximum(ev.duration_ps[rows], 0)
    line = ev.line[rows]
    order = xprof_order(start, end, line)
    skip = np.zeros(n, bool)
    skip[stats["_a"].rows[stats["_a"].ints_present() != 0]] = True
    parent = _nesting.nest_parents(order, line, start, end, skip)
    del order, skip, end

    # Edges: nesting, producer -> consumer contexts, while-loop iterations.
    child = np.flatnonzero(parent >= 0).astype(np.int32)
    src, dst = [parent[child]], [child]
    del parent
    pt, p_id, ct, c_id = (stats[k] for k in ("_pt", "_p", "_ct", "_c"))
    prod = np.intersect1d(pt.rows, p_id.rows)
    cons = np.intersect1d(ct.rows, c_id.rows)
    if _has_stat(space, plane, "id") and _has_stat(space, plane, "iter_num"):
        # XProf replaces the producer context of executor events carrying a
        # step id and iteration with a legacy one (for TPU ops): theirs is lost.
        executors = _events_named(space, plane, rows[prod], EXECUTOR_STATE_PROCESS)
        both = np.intersect1d(stats["id"].rows, stats["iter_num"].rows)
        prod = prod[~(executors & np.isin(prod, both))]
    # Each (type, id) context is a node of its own (index n + k): producers
    # lead to it, it leads to the consumers. XProf links every producer to
    # every consumer; this reaches the same events without the product.
    keys = np.unique(np.concatenate([np.stack([pt.at(prod), p_id.at(prod, unsigned_too=True)], axis=1),
                                     np.stack([ct.at(cons), c_id.at(cons, unsigned_too=True)], axis=1)]),
                     axis=0, return_inverse=True)[1].ravel()
    num_contexts = int(keys.max()) + 1 if len(keys) else 0
    fanout = (np.bincount(keys[:len(prod)], minlength=num_contexts) >= MAX_CONTEXT_FANOUT) & \
        (np.bincount(keys[len(prod):], minlength=num_contexts) >= MAX_CONTEXT_FANOUT)
    if fanout.any():
        keep_p, keep_c = ~fanout[keys[:len(prod)]], ~fanout[keys[len(prod):]]
        prod, cons, keys = prod[keep_p], cons[keep_c], np.r_[keys[:len(keep_p)][keep_p], keys[len(keep_p):][keep_c]]
    src += [prod.astype(np.int32), (n + keys[len(prod):]).astype(np.int32)]
    dst += [(n + keys[:len(prod)]).astype(np.int32), cons.astype(np.int32)]
    roots, loop_src, loop_dst = _loop_roots(space, plane, rows, start, stats)
    src.append(loop_src.astype(np.int32))
    dst.append(loop_dst.astype(np.int32))
    src, dst = np.concatenate(src), np.concatenate(dst)
    if not len(roots):  # every event with a root level (even 0), highest level first, then by time
        r = stats["_r"]
        roots = r.rows[np.lexsort((start[r.rows], -r.ints_present()))]
    del start

    # CSR adjacency, then each root claims what it reaches among the unclaimed.
    by_src = np.argsort(src, kind="stable")
    child = dst[by_src]
    offsets = np.searchsorted(src[by_src], np.arange(n + num_contexts + 1))
    del by_src, src, dst
    local = np.full(n + num_contexts, -1, np.int32)
    kept_roots = []
    for r in roots.tolist():
        if local[r] >= 0:
            continue
        gid = len(kept_roots)
        kept_roots.append(r)
        local[r] = gid
        frontier = np.array([r], np.int64)
        while len(frontier):
            counts = offsets[frontier + 1] - offsets[frontier]
            if not counts.sum():
                break
            nxt = np.unique(child[np.repeat(offsets[frontier], counts) + _ranges(counts)])
            nxt = nxt[(local[nxt] < 0) | ((nxt >= n) & (local[nxt] != gid))]
            local[nxt] = gid  # a context is passed by every root that reaches it, once
            frontier = nxt
    names = [_group_name(space, plane, rows, r, gid, stats) for gid, r in enumerate(kept_roots)]
    return Groups(rows, local[:n], rows[np.asarray(kept_roots, np.int64)], names)


def _ranges(counts: np.ndarray) -> np.ndarray:
    """0..c-1 for each count c, concatenated."""
    ends = np.cumsum(counts)
    return np.arange(ends[-1]) - np.repeat(ends - counts, counts)


def _loop_roots(space: XSpaceData, plane: int, rows, start, stats):
    """TensorFlow while-loops: per (step_id, iter_num) of the executor events,
    the earliest is a root and the others its children. Sessions or
    functions without a loop (only iteration 0) do not count."""
    none = (np.zeros(0, np.int64),) * 3
    p = space.planes[plane]
    md = [mid for mid, (name, _d, _s) in p.event_metadata.items() if name == EXECUTOR_STATE_PROCESS]
    if not md:
        return none
    ex = np.intersect1d(stats["id"].rows, stats["iter_num"].rows)
    ex = ex[np.isin(space.events.metadata_id[rows[ex]], md)]
    if not len(ex):
        return none
    step, it = stats["id"].at(ex), stats["iter_num"].at(ex)
    loops = [s for s in np.unique(step).tolist() if set(it[step == s].tolist()) != {0}]
    keep = np.isin(step, loops)
    ex, step, it = ex[keep], step[keep], it[keep]
    if not len(ex):
        return none
    order = np.lexsort((start[ex], it, step))
    ex, step, it = ex[order], step[order], it[order]
    first = np.r_[True, (step[1:] != step[:-1]) | (it[1:] != it[:-1])]
    head = np.maximum.accumulate(np.where(first, np.arange(len(first)), 0))
    roots = ex[first]
    roots = roots[np.argsort(start[roots], kind="stable")]
    return roots, ex[head[~first]], ex[~first]


def _has_stat(space: XSpaceData, plane: int, name: str) -> bool:
    return name in space.planes[plane].stat_names.values()


def _events_named(space: XSpaceData, plane: int, events: np.ndarray, name: str) -> np.ndarray:
    md = [mid for mid, (n, _d, _s) in space.planes[plane].event_metadata.items() if n == name]
    return np.isin(space.events.metadata_id[events], md)


def _group_name(space: XSpaceData, plane: int, rows, local: int, gid: int, stats) -> str:
    """XProf's step name: the root's name and its iteration or step number."""
    md = space.planes[plane].event_metadata.get(int(space.events.metadata_id[rows[local]]))
    name = md[0] if md else ""
    num = gid
    for stat in ("iter_num", "step_num"):
        col = stats[stat]
        k = np.searchsorted(col.rows, local)
        if k < len(col.rows) and col.rows[k] == local:
            num = int(col.ints_present()[k])
            break
    return f"{name} {num}"
