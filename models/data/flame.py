"""A flame graph of live bytes by call stack, laid out as numpy columns.

Stacks that share their outer frames share the boxes of those frames: a box's
width is the bytes of every allocation whose stack passes through it, its
depth is how far it lies from the outermost frame (the root, depth 0, holds
every byte), and its start is the bytes to its left. Siblings are ordered
widest first (ties by name), as speedscope's left-heavy view does, so the
layout of a profile is always the same. Frames are told apart by function,
file and line, as pprof's locations are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from profscope.models.data.cuda_snapshot import RowFrames
from profscope.models.data.memory_profile import AllocatorProfile

Frame = tuple[str, str, int]  # function, file, line (0 when unknown)


@dataclass
class FlameGraph:
    """Boxes in pre-order (a box's descendants follow it), one row per box."""

    frames: list[Frame]  # the distinct frames; frames[0] is the root's (its name, no file)
    frame: np.ndarray  # int32: index into frames
    parent: np.ndarray  # int32: the parent box (-1 for the root)
    depth: np.ndarray  # int32
    start: np.ndarray  # int64: bytes left of the box
    size: np.ndarray  # int64: bytes through the box
    self_size: np.ndarray  # int64: bytes whose stack ends at the box

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def total(self) -> int:
        return int(self.size[0]) if len(self) else 0

    @property
    def max_depth(self) -> int:
        return int(self.depth.max()) if len(self) else 0

    def name(self, box: int) -> str:
        return self.frames[self.frame[box]][0]

    def where(self, box: int) -> str:
        """"file:line" of a box's frame ("" for the root or without a file)."""
        _, file, line = self.frames[self.frame[box]]
        return f"{file}:{line}" if file and line else file

    def at(self, depth: int, offset: float) -> int:
        """The box at a depth that holds the byte offset, or -1."""
        hit = np.flatnonzero((self.depth == depth) & (self.start <= offset) & (offset < self.start + self.size))
        return int(hit[0]) if len(hit) else -1

    def matching(self, text: str) -> np.ndarray:
        """Boolean per box: its function or file holds `text` (any case)."""
        text = text.lower()
        hits = np.array([text in f"{name}\n{file}".lower() for name, file, _ in self.frames], bool)
        hits[0] = False
        return hits[self.frame]

    def matched_bytes(self, mask: np.ndarray) -> int:
        """Bytes under the boxes of `mask`, each byte once (a box inside another counts with it)."""
        covered_to = -1
        total = 0
        for i in np.flatnonzero(mask).tolist():  # pre-order: a box's descendants come right after it
            if self.start[i] >= covered_to or self.size[i] == 0:
                total += int(self.size[i])
                covered_to = int(self.start[i] + self.size[i])
        return total


def flame_graph(stacks: Iterable[tuple[Sequence[Frame], int]], root: str = "all") -> FlameGraph:
    """The flame graph of (stack, bytes) pairs, each stack outermost frame first."""
    frame_ids: dict[Frame, int] = {(root, "", 0): 0}
    # The tree as dicts: node -> {frame id: child node}; bytes through and ending at each node.
    children: list[dict[int, int]] = [{}]
    through, ending, node_frame = [0], [0], [0]
    for stack, nbytes in stacks:
        node = 0
        through[0] += nbytes
        for f in stack:
            fid = frame_ids.setdefault(f, len(frame_ids))
            child = children[node].get(fid)
            if child is None:
                child = children[node][fid] = len(children)
                children.append({})
                through.append(0)
                ending.append(0)
                node_frame.append(fid)
            node = child
            through[node] += nbytes
        ending[node] += nbytes
    frames = list(frame_ids)
    n = len(children)
    out = {name: np.zeros(n, np.int64) for name in ("frame", "parent", "depth", "start", "size", "self")}
    # Pre-order, widest child first; each child starts where its elder siblings end.
    todo = [(0, -1, 0, 0)]  # node, parent box, depth, start
    box = 0
    while todo:
        node, parent, depth, start = todo.pop()
        for name, value in (("frame", node_frame[node]), ("parent", parent), ("depth", depth), ("start", start),
                            ("size", through[node]), ("self", ending[node])):
            out[name][box] = value
        kids = sorted(children[node].values(), key=lambda c: (-through[c], frames[node_frame[c]]))
        offsets = start + np.cumsum([0] + [through[c] for c in kids[:-1]])
        todo.extend(reversed([(c, box, depth + 1, int(o)) for c, o in zip(kids, offsets)]))
        box += 1
    return FlameGraph(frames=frames, frame=out["frame"].astype(np.int32), parent=out["parent"].astype(np.int32),
                      depth=out["depth"].astype(np.int32), start=out["start"], size=out["size"],
                      self_size=out["self"])


def allocation_flame(profile: AllocatorProfile, index: int | None = None) -> FlameGraph | None:
    """The flame graph of the allocations alive right after timeline row `index`
    (the peak when None), by their call stacks; None when the source has none."""
    if profile.frames is None or not len(profile.timeline):
        return None
    live = profile.live_rows(profile.peak_index if index is None else index)
    sizes = profile.timeline.allocation[live]
    if isinstance(profile.frames, RowFrames):  # a snapshot's rows name interned tracebacks: bytes per traceback
        tbs, at = np.unique(profile.frames.row_tb[live], return_inverse=True)
        totals = np.zeros(len(tbs), np.int64)
        np.add.at(totals, at, sizes)
        first = np.zeros(len(tbs), np.int64)
        first[at[::-1]] = live[::-1]  # a row of each traceback
        return flame_graph(((_stack(profile.frames.get(int(row)) or []), int(total))
                            for row, total in zip(first.tolist(), totals.tolist())), root=profile.memory_id)
    sizes = sizes.tolist()
    # Sources share one frames list among allocations of one stack: add their bytes up once per list.
    by_list: dict[int, list] = {}
    for row, size in zip(live.tolist(), sizes):
        frames = profile.frames.get(row) or []
        entry = by_list.setdefault(id(frames), [frames, 0])
        entry[1] += size
    return flame_graph(((_stack(frames), size) for frames, size in by_list.values()), root=profile.memory_id)


def _stack(frames: list) -> list[Frame]:
    """A source's frames (innermost first, dicts of name, filename, line) as Frames, outermost first."""
    out = []
    for f in reversed(frames):
        if isinstance(f, dict):
            line = f.get("line")
            out.append((str(f.get("name", "?")), str(f.get("filename", "")), line if type(line) is int else 0))
    return out or [("(no stack)", "", 0)]
