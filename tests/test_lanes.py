"""profscope.models.data._lanes (first-fit lane packing) and profscope.models.data._nesting (parents by time
containment), checked against plain Python versions of the same rules."""

import heapq

import numpy as np
import pytest

from profscope.models.data import _lanes, _nesting


def first_fit(starts, ends):
    """The rule pack_lanes keeps: the lowest lane whose last interval ended at
    or before this start, else a new lane; an interval ending before its
    start ends at its start."""
    lane_end, lanes = [], []
    for s, e in zip(starts.tolist(), ends.tolist()):
        lane = next((k for k, end in enumerate(lane_end) if end <= s), len(lane_end))
        if lane == len(lane_end):
            lane_end.append(s)
        lane_end[lane] = max(e, s)
        lanes.append(lane)
    return lanes


def first_fit_heaps(starts, ends):
    """First fit for starts in order, in O(n log n): busy lanes by (end, lane),
    free lanes by index."""
    busy, free, lanes = [], [], []
    for s, e in zip(starts.tolist(), ends.tolist()):
        while busy and busy[0][0] <= s:
            heapq.heappush(free, heapq.heappop(busy)[1])
        lane = heapq.heappop(free) if free else len(busy)  # none free: every lane is busy
        heapq.heappush(busy, (max(e, s), lane))
        lanes.append(lane)
    return lanes


def random_intervals(rng, n):
    """Intervals sorted by start, of one of several shapes."""
    shape = rng.integers(6)
    if shape == 0:  # nested: children inside their parents
        starts, ends = [0], [1000]
        for _ in range(n - 1):
            p = int(rng.integers(len(starts)))
            a, b = sorted(rng.integers(starts[p], ends[p] + 1, 2).tolist())
            starts.append(a)
            ends.append(b)
        starts, ends = np.array(starts), np.array(ends)
    elif shape == 1:  # overlapping, long and short
        starts = rng.integers(0, 100, n)
        ends = starts + rng.integers(0, 60, n)
    elif shape == 2:  # mostly zero-length
        starts = rng.integers(0, 20, n)
        ends = starts + (rng.random(n) < 0.2) * rng.integers(0, 5, n)
    elif shape == 3:  # few distinct starts: many equal
        starts = rng.integers(0, 4, n) * 10
        ends = starts + rng.integers(0, 25, n)
    elif shape == 4:  # some end before they start
        starts = rng.integers(0, 50, n)
        ends = starts + rng.integers(-10, 15, n)
    else:  # back to back: an end equal to the next start frees the lane
        starts = np.cumsum(rng.integers(0, 3, n))
        ends = starts + rng.integers(0, 4, n)
    order = np.lexsort((rng.random(len(starts)), starts))  # equal starts in any order
    return starts[order].astype(np.int64), ends[order].astype(np.int64)


def test_pack_lanes_is_first_fit_on_random_intervals():
    rng = np.random.default_rng(7)
    for _ in range(3000):
        starts, ends = random_intervals(rng, int(rng.integers(0, 40)))
        lanes = _lanes.pack_lanes(starts, ends)
        assert lanes.dtype == np.int32
        assert lanes.tolist() == first_fit(starts, ends) == first_fit_heaps(starts, ends)


def test_pack_lanes_is_first_fit_for_starts_out_of_order():
    rng = np.random.default_rng(8)
    for _ in range(500):
        n = int(rng.integers(0, 30))
        starts = rng.integers(0, 50, n)
        ends = starts + rng.integers(-5, 30, n)
        assert _lanes.pack_lanes(starts, ends).tolist() == first_fit(starts, ends)


def test_pack_lanes_edges():
    assert _lanes.pack_lanes(np.zeros(0, np.int64), np.zeros(0, np.int64)).tolist() == []
    assert _lanes.pack_lanes([5], [3]).tolist() == [0]
    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    starts, ends = np.array([small, small, 0, big]), np.array([big, small, 1, big])
    assert _lanes.pack_lanes(starts, ends).tolist() == first_fit(starts, ends) == [0, 1, 1, 0]
    assert _lanes.pack_lanes([0.0, 1.5], [2, 3]).tolist() == [0, 1]  # converted to int64
    with pytest.raises(ValueError, match="differ in length"):
        _lanes.pack_lanes([0, 1], [1])


def test_pack_lanes_on_hostile_inputs():
    n = 200_000
    starts = np.zeros(n, np.int64)
    assert np.array_equal(_lanes.pack_lanes(starts, np.full(n, 10**12)), np.arange(n))
    assert np.array_equal(_lanes.pack_lanes(np.arange(n), np.full(n, n)), np.arange(n))

    rng = np.random.default_rng(9)
    starts = np.sort(rng.integers(0, 10**9, n))
    ends = starts + rng.integers(0, 10**7, n)  # about 1,000 overlapping at any time
    lanes = _lanes.pack_lanes(starts, ends)
    assert lanes.max() > 500
    assert lanes.tolist() == first_fit_heaps(starts, ends)


def nest(order, segment, starts, ends, skip):
    """Plain Python nest_parents: in `order`, the nearest open event of the
    same segment containing each event."""
    parent, stack, prev = [-1] * len(starts), [], None
    for i in order:
        if prev is not None and segment[i] != segment[prev]:
            stack = []
        prev = i
        if skip[i]:
            continue
        while stack and not (starts[stack[-1]] <= starts[i] and ends[i] <= ends[stack[-1]]):
            stack.pop()
        if stack:
            parent[i] = stack[-1]
        stack.append(i)
    return parent


def test_nest_parents():
    #            A   B  C  D  E   F    G  H (async, skipped)
    starts = [0, 1, 2, 6, 11, 0, 5, 2]
    ends = [10, 5, 3, 9, 12, 100, 5, 4]
    segment = np.array([0, 0, 0, 0, 0, 1, 1, 0], np.int32)
    skip = np.array([0, 0, 0, 0, 0, 0, 0, 1], bool)
    order = np.array([0, 1, 2, 7, 3, 4, 5, 6])
    expected = [-1, 0, 1, 0, -1, -1, 5, -1]
    assert _nesting.nest_parents(order, segment, starts, ends, skip).tolist() == expected
    assert nest(order.tolist(), segment, starts, ends, skip) == expected
    in_order = np.array(starts)[order], np.array(ends)[order]
    parents = _nesting.nest_parents(None, segment[order], *in_order, skip[order])
    assert parents.tolist() == [-1, 0, 1, -1, 0, -1, -1, 6]  # H skipped; positions in `order`
    assert _nesting.nest_parents(None, np.zeros(0, np.int32), [], [], np.zeros(0, bool)).tolist() == []


def test_nest_parents_on_random_events():
    rng = np.random.default_rng(10)
    for _ in range(300):
        n = int(rng.integers(0, 30))
        starts = rng.integers(0, 20, n)
        ends = starts + rng.integers(0, 10, n)
        segment = rng.integers(0, 3, n).astype(np.int32)
        skip = rng.random(n) < 0.1
        order = np.lexsort((-ends, starts, segment))
        expected = nest(order.tolist(), segment, starts, ends, skip)
        assert _nesting.nest_parents(order, segment, starts, ends, skip).tolist() == expected


def test_nest_parents_refuses_bad_columns():
    with pytest.raises(ValueError, match="permutation"):
        _nesting.nest_parents(np.array([0, 5]), np.zeros(2, np.int32), [0, 1], [1, 2], np.zeros(2, bool))
    with pytest.raises(ValueError, match="differ in length"):
        _nesting.nest_parents(None, np.zeros(2, np.int32), [0, 1], [1], np.zeros(2, bool))
