"""XProf's step intersection of several hosts (its StepIntersection and the
step part of its OpStats combiner), over the hosts' step dbs.

Each worker host (one with a device, or every host where none has one) has a
sequence of steps, each spanning [begin, end). The chief is the host whose
steps span the least time (first step's begin to last step's end). Every
other host is aligned with the chief by the offset k (chief index - host
index) under which its steps overlap the chief's most: the overlaps of the
step pairs met while walking both sequences in time order, summed per
offset; ties go to k = 0, 1, ... before k = -1, -2, ... The steps every
host has under its alignment are the combined steps, numbered from 0.
Hosts without a device in a system that has some (coordinators) take no part.

The combined step table shows the first host's steps (XProf keeps the
generic per-step rows of core 0, which is host 0's); the step-time summary
takes each combined step's longest time over all hosts' cores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from profscope.models.analysis.xprof.op_stats import StepDb
    from profscope.models.formats.xspace.xplane import XSpaceData

# XProf's diagnostics when the combined step sequence is empty.
EMPTY_INTERSECT = (
    "Although there are steps observed on some host(s), the intersection of the steps over all hosts is empty "
    "(because the differences among individual host's step sequences are too big). Consequently, the overall "
    "step time is unknown."
)


@dataclass
class Intersection:
    """Where each host's share of the combined steps begins (None: not a worker), how many steps there are,
    and whether the hosts had steps that did not intersect."""

    first: list[int | None]
    count: int
    empty_intersect: bool = False


def _similarity(sub: tuple[np.ndarray, np.ndarray], chief: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Per offset k = chief index - host index (stored at k + len(sub) - 1), the summed overlap of the step
    pairs met walking both sequences; steps of no time are passed over."""
    (sb, se), (cb, ce) = sub, chief
    n, m = len(sb), len(cb)
    out = np.zeros(n + m - 1, np.int64)
    sb, se, cb, ce = sb.tolist(), se.tolist(), cb.tolist(), ce.tolist()
    i = j = 0
    while i < n and j < m:
        if se[i] <= sb[i]:
            i += 1
            continue
        if ce[j] <= cb[j]:
            j += 1
            continue
        overlap = min(se[i], ce[j]) - max(sb[i], cb[j])
        out[j - i + n - 1] += max(overlap, 0)
        if se[i] < ce[j]:
            i += 1
        elif ce[j] < se[i]:
            j += 1
        else:
            i += 1
            j += 1
    return out


def _alignment(sub: tuple[np.ndarray, np.ndarray], chief: tuple[np.ndarray, np.ndarray]) -> tuple[int, int, int]:
    """(first host index, first chief index, steps) of a host's best alignment with the chief."""
    n, m = len(sub[0]), len(chief[0])
    if not n or not m:
        return 0, 0, 0
    similarity = _similarity(sub, chief)
    best_k, best = 0, -1
    for k in [*range(m), *range(-1, -n, -1)]:  # XProf's order: ties keep the first
        if similarity[k + n - 1] > best:
            best_k, best = k, int(similarity[k + n - 1])
    first_sub, first_chief = max(-best_k, 0), max(best_k, 0)
    return first_sub, first_chief, min(n - first_sub, m - first_chief)


def _span(begin: np.ndarray, end: np.ndarray) -> int:
    real = end > begin
    return int(end[real].max() - begin[real].min()) if real.any() else 0


def intersect(spans: list[tuple[np.ndarray, np.ndarray] | None]) -> Intersection:
    """XProf's StepIntersection of hosts' step spans (begin and end per step, ps; None for a host that takes
    no part), without a limit on the number of steps."""
    hosts = [h for h, s in enumerate(spans) if s is not None]
    if not hosts:
        return Intersection([None] * len(spans), 0)
    # The chief: the least total span, the first of equal ones (XProf: in its hash map's order).
    chief = min(hosts, key=lambda h: _span(*spans[h]))  # type: ignore[misc]
    chief_spans = spans[chief]
    assert chief_spans is not None
    if not len(chief_spans[0]):
        return Intersection([0 if s is not None else None for s in spans], 0)
    aligned: dict[int, tuple[int, int, int]] = {}
    for h in hosts:
        host_spans = spans[h]
        assert host_spans is not None
        aligned[h] = (0, 0, len(chief_spans[0])) if h == chief else _alignment(host_spans, chief_spans)
    begin = max(a[1] for a in aligned.values())
    end = min(a[1] + a[2] for a in aligned.values())
    if begin > end:
        return Intersection([0 if s is not None else None for s in spans], 0, empty_intersect=True)
    first = [aligned[h][0] + begin - aligned[h][1] if h in aligned else None for h in range(len(spans))]
    return Intersection(first, end - begin)


def session_steps(spaces: list[XSpaceData], dbs: list[StepDb]) -> tuple[StepDb, np.ndarray, bool]:
    """combine_steps of the XSpaces' step dbs: hosts without device planes take part only where no host has
    any."""
    from profscope.models.analysis.xprof.op_stats import device_planes

    workers = [bool(device_planes(s)) for s in spaces]
    return combine_steps(dbs, workers if any(workers) else [True] * len(spaces))


def combine_steps(dbs: list[StepDb], workers: list[bool]) -> tuple[StepDb, np.ndarray, bool]:
    """XProf's combined step db of hosts' step dbs (one a host, in the session's order; `workers`: which hosts
    take part): (the rows shown: the first host's steps of the intersection, numbered from 0; per combined
    step its longest time over the hosts, ps; whether the hosts' steps failed to intersect). One host is
    taken as it is."""
    if len(dbs) == 1:
        return dbs[0], dbs[0].duration_ps, False
    spans = [(d.begin_ps, d.begin_ps + d.duration_ps) if w else None for d, w in zip(dbs, workers)]
    x = intersect(spans)
    n = x.count
    parts = [d.window(f, n) for d, f in zip(dbs, x.first) if f is not None]
    step_ps = np.max([p.duration_ps for p in parts], axis=0) if parts and n else np.zeros(0, np.int64)
    first = x.first[0]
    rows = dbs[0].window(first if first is not None else 0, n if first is not None else 0)
    rows.number = np.arange(len(rows), dtype=np.int64)  # XProf numbers the combined steps anew
    return rows, step_ps, x.empty_intersect
