"""PyTorch's memory timeline (`profile.export_memory_timeline`) as a memory profile.

PyTorch's profiler (profile_memory=True, record_shapes=True, with_stack=True)
writes one device's memory, by category, in two JSON forms (gzipped when the
name ends in `.gz`):

- raw (`*.raw.json.gz`): rows `[time_ns, action, bytes, category]` in time
  order; action 1 preexisting (time -1), 2 create, 3 increment version (two
  rows: -bytes in the old version's category, +bytes in the new one's),
  4 destroy (-bytes);
- coalesced (`*.json.gz`, `*.json`): `[times_us, sizes]`, where sizes[i] holds
  the bytes per category from times[i] on (a leading 0 column, then one per
  category); preexisting memory is dated at the first time.

Categories are indexed as PyTorch's plot orders them (CATEGORIES, bottom first, in
its colours), and the allocator carries them, so the plot stacks them. Either form
becomes one allocator (the device, taken from the file name when it names one)
whose heap is the total: one snapshot per change of one category, named by
the category (op) and the action (region). Changes are paired into lifetimes
by category and size, so the allocations alive at a moment add up to each
category's bytes; the notes list the categories at the peak.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from profscope.models.core.files import read_bytes
from profscope.models.core.sniff import head_of
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    AllocatorProfile,
    MemoryProfileData,
    Snapshots,
    complete_profile,
    summarize,
)
from profscope.models.data.peak_pyramid import category_bytes
from profscope.models.repository.registry import MEMORY_PROFILE, Format, strip_suffix

CATEGORIES = ("parameter", "optimizer state", "input", "temporary", "activation", "gradient",
              "autograd detail", "unknown")
# The colours of PyTorch's own plot (export_memory_timeline_html: matplotlib's darkgreen, goldenrod, black,
# mediumpurple, red, mediumblue, royalblue, grey), stacked in this order from the bottom.
COLORS = ("#006400", "#daa520", "#000000", "#9370db", "#ff0000", "#0000cd", "#4169e1", "#808080")
ACTIONS = ("", "preexisting", "create", "increment version", "destroy")
COALESCED = "change of the category's total"
SUFFIXES = (".raw.json.gz", ".raw.json", ".raw.gz", ".raw", ".json.gz", ".json")
# The head of a raw file: rows of 4 integers (action 1-4, category 0-7); of a
# coalesced one: a list of integer times, then (unless the head ends first) a list of lists.
RAW_ROW = rb"\[\s*-?\d+\s*,\s*[1-4]\s*,\s*-?\d+\s*,\s*[0-7]\s*\]"
RAW_HEAD = re.compile(rb"\s*\[\s*" + RAW_ROW + rb"\s*(,\s*" + RAW_ROW + rb"\s*)*(,|\]|$)")
COALESCED_HEAD = re.compile(rb"\s*\[\s*\[\s*(-?\d+\s*(,\s*-?\d+\s*)*)?(\]\s*,\s*\[\s*(\[\s*-?\d|\])|$)")
DEVICE = re.compile(r"(cuda|cpu|xpu|mps|hpu)(?:[:_-]?(\d+))?")


def timeline_form(head: bytes | None) -> str | None:
    """"raw" or "coalesced" when a file's head (gunzipped) is of that form, else None."""
    if not head:
        return None
    if RAW_HEAD.match(head):
        return "raw"
    m = COALESCED_HEAD.match(head)
    if m and (m.group(3) or m.end() == len(head) and len(head) > 64):
        return "coalesced"
    return None


def is_memory_timeline(path: Path) -> bool:
    return timeline_form(head_of(path)) is not None


def device_of(name: str) -> str:
    """The device a file name names (`cuda:0`, `cpu`), else "device"."""
    m = DEVICE.search(name.lower())
    if not m:
        return "device"
    return f"{m.group(1)}:{m.group(2)}" if m.group(2) else m.group(1)


def load_memory_timeline(path: Path, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    task = task or TaskState()
    path = Path(path)
    data = read_bytes(path, task, weight=0.5)
    try:
        value = json.loads(data)
    except (ValueError, RecursionError) as e:
        raise ProfileError(f"{path}: not valid JSON: {e}") from None
    del data
    task.report(0.7, f"Reading {path.name}")
    time_ps, delta, category, action = _events(value, str(path))
    del value
    profile = _allocator(device_of(path.name), time_ps, delta, category, action)
    return MemoryProfileData(host=host or path.name, allocators={profile.memory_id: profile}, source=str(path))


def _ints(rows, name: str, what: str) -> np.ndarray:
    try:
        a = np.array(rows, dtype=np.int64)
    except (ValueError, TypeError, OverflowError):
        raise ProfileError(f"{name}: {what} are not all integers") from None
    return a


def _events(value, name: str) -> tuple[np.ndarray, ...]:
    """(time in ps since the first, signed bytes, category, action) of each change, in time order."""
    if not isinstance(value, list) or not value:
        raise ProfileError(f"{name}: not a PyTorch memory timeline (a JSON list was expected)")
    if len(value) == 2 and isinstance(value[1], list) and (not value[1] or isinstance(value[1][0], list)) and (
        not value[0] or not isinstance(value[0][0], list)
    ):
        return _coalesced(value, name)
    rows = _ints(value, name, "the rows")
    if rows.ndim != 2 or rows.shape[1] != 4:
        raise ProfileError(f"{name}: the rows of a raw memory timeline are [time, action, bytes, category]")
    t, action, delta, category = rows.T
    if ((action < 1) | (action > 4)).any() or ((category < 0) | (category >= len(CATEGORIES))).any():
        raise ProfileError(f"{name}: an action or category index is out of range")
    timed = t[t >= 0]
    first = int(timed.min()) if len(timed) else 0
    time_ps = (np.maximum(t, first) - first) * 1000  # ns -> ps; preexisting (-1) at the first time
    order = np.argsort(time_ps, kind="stable")
    return time_ps[order], delta[order], category[order], action[order]


def _coalesced(value, name: str) -> tuple[np.ndarray, ...]:
    times = _ints(value[0], name, "the times")
    sizes = _ints(value[1], name, "the sizes")
    if times.ndim != 1 or (len(times) and (sizes.ndim != 2 or len(sizes) != len(times))):
        raise ProfileError(f"{name}: [times, sizes] of a memory timeline must have a row of sizes per time")
    if len(times) == 0:
        sizes = np.zeros((0, len(CATEGORIES)), np.int64)
    if sizes.shape[1] == len(CATEGORIES) + 1:
        sizes = sizes[:, 1:]  # PyTorch's leading column (always 0)
    if sizes.shape[1] != len(CATEGORIES):
        raise ProfileError(f"{name}: a memory timeline's sizes have {len(CATEGORIES)} categories")
    first = int(times.min()) if len(times) else 0
    changes = np.diff(sizes, axis=0, prepend=np.zeros((1, sizes.shape[1]), np.int64))
    row, category = np.nonzero(changes)
    delta = changes[row, category]
    time_ps = (times[row] - first) * 1_000_000  # us -> ps
    order = np.argsort(time_ps, kind="stable")
    return time_ps[order], delta[order], category[order].astype(np.int64), np.zeros(len(row), np.int64)


def _allocator(memory_id: str, time_ps, delta, category, action) -> AllocatorProfile:
    keep = delta != 0
    time_ps, delta, category, action = time_ps[keep], delta[keep], category[keep], action[keep]
    n = len(delta)
    heap = np.cumsum(delta)
    strings = ["", *CATEGORIES, *ACTIONS[1:], COALESCED]
    zeros = np.zeros(n, np.int64)
    size = np.abs(delta)
    region = np.where(action > 0, len(CATEGORIES) + action, len(strings) - 1)
    timeline = Snapshots(
        time_ps=time_ps, stack=zeros, heap=heap, free=zeros, fragmentation=np.zeros(n),
        peak_in_use=np.maximum.accumulate(heap) if n else zeros,
        activity=np.where(delta > 0, ALLOCATION, DEALLOCATION).astype(np.int64),
        requested=size, allocation=size, address=np.zeros(n, np.uint64), step=zeros,
        op=(category + 1).astype(np.int32), region=region.astype(np.int32),
        dtype=np.zeros(n, np.int32), shape=np.zeros(n, np.int32), strings=strings,
    )
    allocs, frees, unmatched = _pair(delta, category)
    summary = summarize(timeline)
    summary.num_allocations, summary.num_deallocations = len(allocs), n - len(allocs)
    summary.memory_capacity = 0  # the timeline does not say how much memory the device had
    profile = complete_profile(memory_id, timeline, summary, lifetimes=(allocs, frees),
                               categories=tuple(zip(CATEGORIES, COLORS)), category=category.astype(np.int8))
    if n:
        at_peak = category_bytes(profile)[profile.peak_index].tolist()
        profile.notes.append("Categories at the peak: " + ", ".join(
            f"{c} {b:,} bytes" for c, b in zip(CATEGORIES, at_peak) if b) + ".")
    if unmatched:
        profile.notes.append(f"{unmatched:,} decreases matched no earlier increase of the same category and size; "
                             "the table of allocations alive at a moment does not show them.")
    return profile


def _pair(delta: np.ndarray, category: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """Allocation indices and the index freeing each (len(delta) if never): a
    decrease frees the latest live increase of its category and size."""
    n = len(delta)
    live: dict[tuple[int, int], list[int]] = {}
    frees = np.full(n, n, np.int64)
    unmatched = 0
    for i, (d, c) in enumerate(zip(delta.tolist(), category.tolist())):
        if d > 0:
            live.setdefault((c, d), []).append(i)
        elif stack := live.get((c, -d)):
            frees[stack.pop()] = i
        else:
            unmatched += 1
    allocs = np.flatnonzero(delta > 0)
    return allocs, frees[allocs], unmatched


class MemoryTimelineFormat(Format):
    name = "memory_timeline"
    title = "PyTorch memory timelines (`profile.export_memory_timeline`: raw or `[times, sizes]` JSON, gzipped or not)"
    where = ("a single file, or `*.json`, `*.json.gz`, `*.raw`, `*.raw.gz` in a folder whose content is such a "
             "timeline; host = file name")
    patterns = tuple(f"*{s}" for s in SUFFIXES)
    tools = (MEMORY_PROFILE,)
    rank = 2

    def host_in_folder(self, path: Path) -> str | None:
        if not path.name.endswith(SUFFIXES) or not is_memory_timeline(path):
            return None
        return strip_suffix(path.name, SUFFIXES)

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        if not is_memory_timeline(path):
            return None
        return path.name, strip_suffix(path.name, SUFFIXES) or path.name

    def memory_profile(self, files, host, task):
        return load_memory_timeline(files[0], host=host, task=task)


FORMAT = MemoryTimelineFormat()
