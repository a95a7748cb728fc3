"""What the memory plot draws, prepared in the window's worker job (numpy
only): per allocator its series (in use, fragmentation, stack, free; or the
stacked categories of a source that has them) as the
columns of one PeakPyramid, the min/max levels that give the exact minimum and
maximum of the samples under any pixel column at any zoom."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profscope.models.core.task import TaskState
from profscope.models.data.memory_profile import ALLOCATION, AllocatorProfile, MemoryProfileData


class PeakPyramid:
    """Min/max levels of series sampled together (one column each), for the
    exact minimum and maximum of any range of samples (every peak is kept at
    any zoom).

    Level j holds, for each whole block of 2**j samples, its minimum and
    maximum; level 0 is the samples themselves. A range is covered as in an
    iterative segment tree, by at most two blocks per level: at level j block
    ceil(start / 2**j) when that is odd and block floor(stop / 2**j) - 1 when
    that is even, while ceil(start / 2**j) < floor(stop / 2**j). Those are found for every range and
    level at once, so a frame's few thousand ranges cost a few numpy calls.
    Float32: a pixel row is far coarser than its rounding, and 5M samples of
    4 series take 240 MB instead of 480.
    """

    def __init__(self, columns: np.ndarray):
        """columns: samples x series (or one series), without NaN."""
        v = np.asarray(columns, np.float32)
        self.leaves = v[:, None] if v.ndim == 1 else v
        n, width = self.leaves.shape
        sizes = [n >> j for j in range(1, max(n.bit_length(), 1))]
        self.offsets = np.cumsum([0, 0] + sizes)[:-1]  # of level j in `blocks` (level 0: the leaves)
        # Per block its minimum and its negated maximum, so that one gather and one
        # minimum give both; the last row (+inf) stands for "no block".
        self.blocks = np.empty((sum(sizes) + 1, 2, width), np.float32)
        self.blocks[-1] = np.inf
        if not sizes:
            return
        level = self.blocks[:sizes[0]]
        np.minimum(self.leaves[:2 * sizes[0]:2], self.leaves[1:2 * sizes[0]:2], out=level[:, 0])
        np.maximum(self.leaves[:2 * sizes[0]:2], self.leaves[1:2 * sizes[0]:2], out=level[:, 1])
        np.negative(level[:, 1], out=level[:, 1])
        for j, size in enumerate(sizes[1:], 2):  # -max(a, b) = min(-a, -b): one ufunc for both halves
            below, level = level, self.blocks[self.offsets[j]:self.offsets[j] + size]
            np.minimum(below[:2 * size:2], below[1:2 * size:2], out=level)

    def __len__(self) -> int:
        return len(self.leaves)

    def max(self, column: int = 0) -> float:
        """The largest sample of a column (0 without samples)."""
        return float(self.ranges(np.zeros(1, np.int64), np.array([len(self)]))[1][0, column]) if len(self) else 0.0

    def ranges(self, start: np.ndarray, stop: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Minimum and maximum of samples [start, stop) of each column, one row per
        range (+inf / -inf for empty ranges)."""
        start, stop = np.asarray(start, np.int64), np.asarray(stop, np.int64)
        levels = min(int(max(int((stop - start).max(initial=0)), 1)).bit_length() + 1, len(self.offsets))
        j = np.arange(levels)[:, None]
        lo, hi = -(-start >> j), stop >> j  # ceil(start / 2**j), floor(stop / 2**j)
        open_ = lo < hi
        take = np.stack([open_ & (lo & 1 == 1), open_ & (hi & 1 == 1)])  # [side, level, range]
        index = np.stack([lo, hi - 1])
        # np.take: 5x faster than fancy indexing. Level 0 from the leaves:
        leaves = np.take(self.leaves, np.where(take[:, 0], index[:, 0], 0), axis=0)  # [side, range, column]
        t = take[:, 0, :, None]
        vmin = np.where(t, leaves, np.inf).min(axis=0)
        vmax = np.where(t, leaves, -np.inf).max(axis=0)
        if levels > 1:  # the others from the blocks, reduced over (side, level) in one contiguous pass
            k = np.where(take[:, 1:], index[:, 1:] + self.offsets[1:levels, None], len(self.blocks) - 1)
            both = np.take(self.blocks, k.reshape(-1, k.shape[-1]), axis=0).min(axis=0)  # [range, min/-max, column]
            np.minimum(vmin, both[:, 0], out=vmin)
            np.maximum(vmax, -both[:, 1], out=vmax)
        return vmin, vmax


@dataclass
class PlotSeries:
    """What the plot draws for one allocator: its series, as the columns of
    one pyramid. Built with the profile in the worker job (prepare_series), so
    showing or switching an allocator costs the GUI thread nothing."""

    time_ps: np.ndarray
    names: list[str]  # the pyramid's columns: in_use (stack + heap), fragmentation (%), stack, free
    pyramid: PeakPyramid
    # Allocators split into categories: (name, colour) bottom first; the pyramid's columns are then in_use and
    # each category's top in the stack ("stacked:0" ...), and category_bytes each one's bytes after each row.
    categories: tuple[tuple[str, str], ...] = ()
    category_bytes: np.ndarray | None = None

    def has(self, name: str) -> bool:
        return name in self.names

    def max(self, name: str) -> float:
        return self.pyramid.max(self.names.index(name))


def category_bytes(profile: AllocatorProfile) -> np.ndarray:
    """Each category's bytes right after each timeline row (rows x categories, int64)."""
    tl, k = profile.timeline, len(profile.categories)
    out = np.zeros((len(tl), k), np.int64)
    signed = np.where(tl.activity == ALLOCATION, tl.allocation, -tl.allocation.astype(np.int64))
    out[np.arange(len(tl)), profile.category] = signed
    return np.cumsum(out, axis=0, out=out)


def plot_series(profile: AllocatorProfile) -> PlotSeries:
    tl = profile.timeline
    if profile.categories and profile.category is not None:
        # Stacked as PyTorch's plot stacks them: each category's top is the sum of it and those below.
        by_category = category_bytes(profile)
        tops = np.cumsum(by_category, axis=1)
        columns = np.concatenate([tl.in_use[:, None], tops], axis=1)
        names = ["in_use"] + [f"stacked:{i}" for i in range(len(profile.categories))]
        return PlotSeries(time_ps=tl.time_ps, names=names, pyramid=PeakPyramid(columns),
                          categories=profile.categories, category_bytes=by_category)
    names = ["in_use", "fragmentation"]
    if tl.stack.any():  # most allocators never reserve stack: no empty area
        names.append("stack")
    if tl.free.any():
        names.append("free")
    # Written straight into the pyramid's float32 rows (5M snapshots: no temporary 40 MB columns).
    columns = np.empty((len(tl), len(names)), np.float32)
    np.add(tl.stack, tl.heap, out=columns[:, 0], casting="unsafe")
    frag = columns[:, 1]
    np.multiply(tl.fragmentation, 100, out=frag, casting="unsafe")
    np.copyto(frag, 0, where=np.isnan(frag))  # a NaN would poison every level above it
    for k, name in enumerate(names[2:], 2):
        columns[:, k] = getattr(tl, name)
    return PlotSeries(time_ps=tl.time_ps, names=names, pyramid=PeakPyramid(columns))


def prepare_series(data: MemoryProfileData | None, task: TaskState | None = None) -> dict[str, PlotSeries]:
    """The plot series of every allocator, for MemoryView.set_profile."""
    out = {}
    if data is not None:
        for memory_id, profile in data.allocators.items():
            if task is not None:
                task.raise_if_cancelled()
            out[memory_id] = plot_series(profile)
    return out
