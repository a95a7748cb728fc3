"""Step grouping of XSpace events, as XProf does it (tsl group_events).

XProf gives every event a `group_id` (its step) before its tools run:
- events nest by time containment on their line (async events excepted);
- an event with a producer context (`_pt`, `_p`) leads to the events with
  the same consumer context (`_ct`, `_c`), e.g. a Python step to the executor
  threads that ran it;
- TensorFlow while-loops (ExecutorState::Process with `step_id` and
  `iter_num`) make each iteration's first executor event a root;
- otherwise the roots are the events with a root level (`_r`), taken by
  level (highest first), then by start time;
- each root in turn claims, as group 0, 1, ..., every event it reaches
  through those links that no earlier root claimed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from models import _protowire as wire
from models.xplane import XSpaceData

EXECUTOR_STATE_PROCESS = "ExecutorState::Process"
GROUP_STATS = ("_r", "_pt", "_p", "_ct", "_c", "is_async", "step_id", "iter_num", "step_num")


@dataclass
class Groups:
    """Step groups of the events of one plane."""

    group: np.ndarray  # per event of the space: group id, -1 outside every step
    roots: np.ndarray  # event index of each group's root, by group id
    names: list[str]  # XProf's group names ("train 0")


def group_ids(space: XSpaceData, plane: int) -> np.ndarray:
    return group_events(space, plane).group


def group_events(space: XSpaceData, plane: int) -> Groups:
    ev = space.events
    rows = np.flatnonzero((ev.plane == plane) & ~ev.aggregated)
    n = len(rows)
    group = np.full(len(ev), -1, np.int64)
    if not n:
        return Groups(group, np.zeros(0, np.int64), [])
    stats = space.stats(rows, plane, list(GROUP_STATS))
    ints = {name: stats[name].ints() for name in GROUP_STATS}
    present = {name: stats[name].present for name in GROUP_STATS}

    # Nesting within each line, in XProf's order (start, then longest first).
    start = space.start_ps(rows)
    end = start + np.maximum(ev.duration_ps[rows], 0)
    order = np.lexsort((-end, start, ev.line[rows]))
    parent_sorted = wire.nest_parents(ev.line[rows][order].astype(np.int64), start[order], end[order],
                                      (ints["is_async"] != 0)[order])
    src = [order[parent_sorted[parent_sorted >= 0]]]
    dst = [order[parent_sorted >= 0]]

    # Producer -> consumer context links.
    prod = np.flatnonzero(present["_pt"] & present["_p"])
    cons = np.flatnonzero(present["_ct"] & present["_c"])
    if len(prod) and len(cons):
        s, d = _join(ints["_pt"][prod], ints["_p"][prod], ints["_ct"][cons], ints["_c"][cons])
        src.append(prod[s])
        dst.append(cons[d])

    roots, loop_src, loop_dst = _loop_roots(space, plane, rows, start, ints, present)
    src.append(loop_src)
    dst.append(loop_dst)
    src, dst = np.concatenate(src), np.concatenate(dst)
    if not len(roots):
        level = ints["_r"]
        cand = np.flatnonzero(present["_r"] & (level != 0))
        roots = cand[np.lexsort((start[cand], -level[cand]))]

    # CSR adjacency, then each root claims what it reaches among the unclaimed.
    by_src = np.argsort(src, kind="stable")
    child = dst[by_src]
    offsets = np.searchsorted(src[by_src], np.arange(n + 1))
    local = np.full(n, -1, np.int64)
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
            starts = np.repeat(offsets[frontier], counts) + _ranges(counts)
            nxt = np.unique(child[starts])
            nxt = nxt[local[nxt] < 0]
            local[nxt] = gid
            frontier = nxt
    group[rows] = local
    root_rows = np.asarray(kept_roots, np.int64)
    names = [_group_name(space, plane, rows[r], gid, ints, present, r) for gid, r in enumerate(kept_roots)]
    return Groups(group, rows[root_rows], names)


def _ranges(counts: np.ndarray) -> np.ndarray:
    """0..c-1 for each count c, concatenated."""
    ends = np.cumsum(counts)
    return np.arange(ends[-1]) - np.repeat(ends - counts, counts)


def _join(pt, p, ct, c) -> tuple[np.ndarray, np.ndarray]:
    """All (producer, consumer) pairs with equal (type, id)."""
    keys_p = np.stack([pt, p], axis=1)
    keys_c = np.stack([ct, c], axis=1)
    uniq, inv = np.unique(np.concatenate([keys_p, keys_c]), axis=0, return_inverse=True)
    inv = inv.ravel()
    kp, kc = inv[:len(pt)], inv[len(pt):]
    order_c = np.argsort(kc, kind="stable")
    kc_sorted = kc[order_c]
    lo = np.searchsorted(kc_sorted, kp, side="left")
    hi = np.searchsorted(kc_sorted, kp, side="right")
    counts = hi - lo
    if not counts.sum():
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    s = np.repeat(np.arange(len(pt)), counts)
    d = order_c[np.repeat(lo, counts) + _ranges(counts)]
    return s, d


def _loop_roots(space: XSpaceData, plane: int, rows, start, ints, present):
    """TensorFlow while-loops: per (step_id, iter_num) of the executor events,
    the earliest is a root and the others its children. Sessions or
    functions without a loop (only iteration 0) do not count."""
    none = (np.zeros(0, np.int64),) * 3
    p = space.planes[plane]
    md = [mid for mid, (name, _d, _s) in p.event_metadata.items() if name == EXECUTOR_STATE_PROCESS]
    if not md:
        return none
    ex = np.flatnonzero(np.isin(space.events.metadata_id[rows], md) & present["step_id"] & present["iter_num"])
    if not len(ex):
        return none
    step, it = ints["step_id"][ex], ints["iter_num"][ex]
    loops = [s for s in np.unique(step).tolist() if set(it[step == s].tolist()) != {0}]
    ex_loop = ex[np.isin(step, loops)]
    if not len(ex_loop):
        return none
    step, it = ints["step_id"][ex_loop], ints["iter_num"][ex_loop]
    order = np.lexsort((start[ex_loop], it, step))
    ex_loop, step, it = ex_loop[order], step[order], it[order]
    first = np.r_[True, (step[1:] != step[:-1]) | (it[1:] != it[:-1])]
    head = np.maximum.accumulate(np.where(first, np.arange(len(first)), 0))
    roots = ex_loop[first]
    roots = roots[np.argsort(start[roots], kind="stable")]
    others = ~first
    return roots, ex_loop[head[others]], ex_loop[others]


def _group_name(space: XSpaceData, plane: int, event: int, gid: int, ints, present, local: int) -> str:
    """XProf's step name: the root's name and its iteration or step number."""
    md = space.planes[plane].event_metadata.get(int(space.events.metadata_id[event]))
    name = md[0] if md else ""
    if present["iter_num"][local]:
        num = ints["iter_num"][local]
    elif present["step_num"][local]:
        num = ints["step_num"][local]
    else:
        num = gid
    return f"{name} {num}"
