"""A PyTorch CUDA memory snapshot (`torch.cuda.memory._snapshot()`) as numpy
columns: what the readers fill and the memory analyses read.

The snapshot's TypedDicts (torch/cuda/memory.py: Snapshot, Segment, Block,
Frame, TraceEntry) become one table each, with no Python object per trace
entry, block or frame:
- `DeviceTrace`: one per device, a row per TraceEntry in recorded order;
- `Segments` and `Blocks`: the allocator's segments at the snapshot and
  their blocks (a segment's blocks are rows block_start[i]:block_start[i+1]);
- `Tracebacks`: every distinct frames list once (an entry's `frames` column
  is its traceback id), its frames as rows of (name, filename, line).
Strings (frame names, file names, categories, segment types, pool ids) are
ids into `CudaSnapshot.strings`; id 0 is "".

`from_plain` builds it from the plain object a snapshot pickle holds
(profscope.models.core.safe_pickle.loads); a faster reader may fill the same
columns straight from the file.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

# TraceEntry.action values, in this order (codes are indices); anything else is UNKNOWN_ACTION and counted.
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom", "annotate")
ALLOC, FREE_REQUESTED, FREE_COMPLETED, SEGMENT_ALLOC, SEGMENT_FREE, SEGMENT_MAP, SEGMENT_UNMAP, SNAPSHOT, OOM, \
    ANNOTATE = range(len(ACTIONS))
UNKNOWN_ACTION = len(ACTIONS)
# Block.state values (PyTorch writes "active_awaiting_free"; its older docs say "active_pending_free").
BLOCK_STATES = ("active_allocated", "active_awaiting_free", "inactive", "active_pending_free")
ACTIVE_ALLOCATED, ACTIVE_AWAITING_FREE, INACTIVE, ACTIVE_PENDING_FREE = range(len(BLOCK_STATES))
UNKNOWN_STATE = len(BLOCK_STATES)
NO_TIME = np.iinfo(np.int64).min  # an entry without time_us
NO_SIZE = -1  # a segment without allocated_size / active_size / requested_size (sum its blocks instead)
NO_NAME = "(none)"  # how an action or block state that is missing (or not a string) is counted
NO_FRAMES = "<block was allocated before _record_history was enabled>"  # PyTorch's text for a block without frames
# PyTorch's frame filter (_memory_viz._frame_filter, MemoryViz.js frameFilter): frames of the interpreter and
# the dispatcher are left out of the stacks shown.
OMIT_FUNCTIONS = ("unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start", "__libc_start_main",
                  "PyEval_", "PyObject_", "PyFunction_")
OMIT_FILENAMES = ("core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c", "Objects/call.c",
                  "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h")


def keep_frame(name: str, filename: str) -> bool:
    """Whether PyTorch's frame filter keeps a frame."""
    return not any(o in name for o in OMIT_FUNCTIONS) and not any(o in filename for o in OMIT_FILENAMES)


def frame_text(name: str, filename: str, line) -> str:
    """A frame as PyTorch prints it: filename:line:name, only the name where there is no file
    (_profile_to_snapshot's frames)."""
    return name if filename in ("", "none") else f"{filename}:{line}:{name}"


def pool_text(pool) -> str:
    """A segment_pool_id as "a,b" (its numbers and strings)."""
    return ",".join(str(p) for p in pool if _is_int(p) or isinstance(p, str))


@dataclass
class DeviceTrace:
    """One device's TraceEntries, in recorded order."""

    action: np.ndarray  # uint8, index into ACTIONS or UNKNOWN_ACTION
    addr: np.ndarray  # uint64
    size: np.ndarray  # int64
    stream: np.ndarray  # int64
    time_us: np.ndarray  # int64, NO_TIME when missing
    frames: np.ndarray  # int32 traceback id, -1 when none
    device_free: np.ndarray  # int64 (oom entries), 0 elsewhere
    category: np.ndarray  # int32 string id (_profile_to_snapshot's entries carry one), 0 when none

    def __len__(self) -> int:
        return len(self.action)


@dataclass
class Segments:
    device: np.ndarray  # int32
    address: np.ndarray  # uint64
    total_size: np.ndarray  # int64
    stream: np.ndarray  # int64
    segment_type: np.ndarray  # int32 string id ("small", "large")
    pool_id: np.ndarray  # int32 string id of "a,b" (segment_pool_id), 0 when none
    is_expandable: np.ndarray  # int8: 1, 0, or -1 when not given
    allocated_size: np.ndarray  # int64, NO_SIZE when not given
    active_size: np.ndarray  # int64, NO_SIZE when not given
    requested_size: np.ndarray  # int64, NO_SIZE when not given
    block_start: np.ndarray  # int64, len + 1 offsets into Blocks

    def __len__(self) -> int:
        return len(self.address)


@dataclass
class Blocks:
    address: np.ndarray  # uint64 (the segment's address plus the sizes before it when the block has none)
    size: np.ndarray  # int64
    requested_size: np.ndarray  # int64 (the size when not given)
    state: np.ndarray  # uint8, index into BLOCK_STATES or UNKNOWN_STATE
    frames: np.ndarray  # int32 traceback id, -1 when none

    def __len__(self) -> int:
        return len(self.address)


@dataclass
class Tracebacks:
    """Distinct frames lists; traceback i's frames are rows start[i]:start[i+1], innermost first."""

    start: np.ndarray  # int64, count + 1
    name: np.ndarray  # int32 string id
    filename: np.ndarray  # int32 string id
    line: np.ndarray  # int64

    def __len__(self) -> int:
        return len(self.start) - 1

    def frames_of(self, tb: int, strings: list[str]) -> list[tuple[str, str, int]]:
        if tb < 0:
            return []
        a, b = int(self.start[tb]), int(self.start[tb + 1])
        return [(strings[n], strings[f], int(ln)) for n, f, ln in
                zip(self.name[a:b].tolist(), self.filename[a:b].tolist(), self.line[a:b].tolist())]


class RowFrames(Mapping):
    """Each row's frames (a timeline row -> its traceback's frames as dicts of name, filename and line, innermost
    first), made when asked for: rows without frames are absent."""

    def __init__(self, row_tb: np.ndarray, tracebacks: Tracebacks, strings: list[str]) -> None:
        self.row_tb, self.tracebacks, self.strings = row_tb, tracebacks, strings
        self.rows = np.flatnonzero((row_tb >= 0) & (tracebacks.start[row_tb + 1] > tracebacks.start[row_tb])
                                   if len(tracebacks) else np.zeros(len(row_tb), bool))

    def __getitem__(self, row: int) -> list[dict]:
        tb = int(self.row_tb[row]) if 0 <= row < len(self.row_tb) else -1
        frames = self.tracebacks.frames_of(tb, self.strings)
        if not frames:
            raise KeyError(row)
        return [{"name": n, "filename": f, "line": ln} for n, f, ln in frames]

    def __iter__(self) -> Iterator[int]:
        return iter(self.rows.tolist())

    def table(self) -> dict[str, np.ndarray | list[str]]:
        """Every row's frames at once (the SQL frames table): allocation (the row), depth, name, filename, line."""
        tb = self.row_tb[self.rows]
        start, end = self.tracebacks.start[tb], self.tracebacks.start[tb + 1]
        counts = end - start
        first = np.cumsum(counts) - counts
        depth = np.arange(int(counts.sum())) - np.repeat(first, counts)
        at = np.repeat(start, counts) + depth
        names, files = self.tracebacks.name[at], self.tracebacks.filename[at]
        text = np.asarray(self.strings, dtype=object)
        return {"allocation": np.repeat(self.rows, counts), "depth": depth, "name": text[names].tolist(),
                "filename": text[files].tolist(), "line": self.tracebacks.line[at]}

    def __len__(self) -> int:
        return len(self.rows)


@dataclass
class CudaSnapshot:
    traces: list[DeviceTrace]  # index = device
    segments: Segments
    blocks: Blocks
    tracebacks: Tracebacks
    strings: list[str]
    # what was counted rather than refused: unknown actions/states by name, entries missing a field by field name
    unknown_actions: dict[str, int] = field(default_factory=dict)
    missing_fields: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. "the file is cut after 1,234 trace entries"

    @property
    def devices(self) -> list[int]:
        """Devices with a trace entry or a segment, in order."""
        return sorted({i for i, t in enumerate(self.traces) if len(t)} | set(self.segments.device.tolist()))


def _is_int(value) -> bool:
    """An int of the snapshot's: int64 (a bool is no int; a bigger number is no field's)."""
    return type(value) is int and -(1 << 63) <= value < 1 << 63


def _int(value) -> int:
    return value if _is_int(value) else 0


class _Builder:
    def __init__(self) -> None:
        self.strings: dict[str, int] = {"": 0}
        self.tb_ids: dict[object, int] = {}
        self.tb_start = [0]
        self.f_name: list[int] = []
        self.f_file: list[int] = []
        self.f_line: list[int] = []
        self.unknown: dict[str, int] = {}
        self.missing: dict[str, int] = {}

    def sid(self, s) -> int:
        """The id of a string (anything else is "")."""
        return self.strings.setdefault(s if isinstance(s, str) else "", len(self.strings))

    def traceback(self, frames) -> int:
        if not isinstance(frames, list) or not frames:
            return -1
        # by what the columns hold: a frame's name and file name (strings, else ""), its line (an int, else 0)
        key = tuple((self.sid(f.get("name")), self.sid(f.get("filename")), _int(f.get("line")))
                    if isinstance(f, dict) else (0, 0, 0) for f in frames)
        tb = self.tb_ids.get(key)
        if tb is None:
            tb = self.tb_ids[key] = len(self.tb_start) - 1
            for name, filename, line in key:
                self.f_name.append(name)
                self.f_file.append(filename)
                self.f_line.append(line)
            self.tb_start.append(len(self.f_name))
        return tb

    def count(self, table: dict[str, int], key: str) -> None:
        table[key] = table.get(key, 0) + 1


def from_plain(snapshot: dict) -> CudaSnapshot:
    """The columns of a snapshot dict as safe_pickle.loads returns it (the caller checked it is a dict)."""
    b = _Builder()
    codes = {a: i for i, a in enumerate(ACTIONS)}
    traces = []
    listed = snapshot.get("device_traces", [])
    for trace in listed if isinstance(listed, list) else []:
        entries = [e for e in trace if isinstance(e, dict)] if isinstance(trace, list) else []
        action = np.empty(len(entries), np.uint8)
        cols: dict[str, list] = {k: [] for k in ("addr", "size", "stream", "time", "frames", "free", "cat")}
        for i, e in enumerate(entries):
            name = e.get("action")
            code = codes.get(name, UNKNOWN_ACTION) if isinstance(name, str) else UNKNOWN_ACTION
            if code == UNKNOWN_ACTION:
                b.count(b.unknown, name if isinstance(name, str) else NO_NAME)
            action[i] = code
            for key in ("addr", "size") if code != OOM else ("size",):
                if not _is_int(e.get(key)):
                    b.count(b.missing, key)
            cols["addr"].append(_int(e.get("addr")) & 0xFFFFFFFFFFFFFFFF)
            cols["size"].append(_int(e.get("size")))
            cols["stream"].append(_int(e.get("stream")))
            t = e.get("time_us")
            cols["time"].append(t if _is_int(t) else NO_TIME)
            cols["frames"].append(b.traceback(e.get("frames")))
            cols["free"].append(_int(e.get("device_free")))
            cat = e.get("category")
            cols["cat"].append(b.sid(cat) if isinstance(cat, str) else 0)
        traces.append(DeviceTrace(
            action=action, addr=np.asarray(cols["addr"], np.uint64), size=np.asarray(cols["size"], np.int64),
            stream=np.asarray(cols["stream"], np.int64), time_us=np.asarray(cols["time"], np.int64),
            frames=np.asarray(cols["frames"], np.int32), device_free=np.asarray(cols["free"], np.int64),
            category=np.asarray(cols["cat"], np.int32)))
    states = {s: i for i, s in enumerate(BLOCK_STATES)}
    seg: dict[str, list] = {k: [] for k in ("device", "address", "total", "stream", "type", "pool", "exp", "alloc",
                                            "active", "req", "start")}
    blk: dict[str, list] = {k: [] for k in ("address", "size", "req", "state", "frames")}
    listed = snapshot.get("segments", [])
    for s in listed if isinstance(listed, list) else []:
        if not isinstance(s, dict):
            continue
        address = _int(s.get("address"))
        seg["device"].append(_int(s.get("device")))
        seg["address"].append(address & 0xFFFFFFFFFFFFFFFF)
        seg["total"].append(_int(s.get("total_size")))
        seg["stream"].append(_int(s.get("stream")))
        seg["type"].append(b.sid(s.get("segment_type")))
        pool = s.get("segment_pool_id")
        seg["pool"].append(b.sid(pool_text(pool)) if isinstance(pool, (list, tuple)) else 0)
        exp = s.get("is_expandable")
        seg["exp"].append(int(exp) if isinstance(exp, bool) else -1)
        for key, col in (("allocated_size", "alloc"), ("active_size", "active"), ("requested_size", "req")):
            seg[col].append(s[key] if _is_int(s.get(key)) else NO_SIZE)
        seg["start"].append(len(blk["size"]))
        blocks = s.get("blocks")
        at = address
        for k in blocks if isinstance(blocks, list) else []:
            if not isinstance(k, dict):
                continue
            size = _int(k.get("size"))
            blk["address"].append((k["address"] if _is_int(k.get("address")) else at) & 0xFFFFFFFFFFFFFFFF)
            blk["size"].append(size)
            blk["req"].append(k["requested_size"] if _is_int(k.get("requested_size")) else size)
            state = k.get("state")
            code = states.get(state, UNKNOWN_STATE) if isinstance(state, str) else UNKNOWN_STATE
            if code == UNKNOWN_STATE:
                b.count(b.unknown, f"block state {state if isinstance(state, str) else NO_NAME}")
            blk["state"].append(code)
            blk["frames"].append(b.traceback(k.get("frames")))
            at += size
    seg["start"].append(len(blk["size"]))
    return CudaSnapshot(
        traces=traces,
        segments=Segments(
            device=np.asarray(seg["device"], np.int32), address=np.asarray(seg["address"], np.uint64),
            total_size=np.asarray(seg["total"], np.int64), stream=np.asarray(seg["stream"], np.int64),
            segment_type=np.asarray(seg["type"], np.int32), pool_id=np.asarray(seg["pool"], np.int32),
            is_expandable=np.asarray(seg["exp"], np.int8), allocated_size=np.asarray(seg["alloc"], np.int64),
            active_size=np.asarray(seg["active"], np.int64), requested_size=np.asarray(seg["req"], np.int64),
            block_start=np.asarray(seg["start"], np.int64)),
        blocks=Blocks(
            address=np.asarray(blk["address"], np.uint64), size=np.asarray(blk["size"], np.int64),
            requested_size=np.asarray(blk["req"], np.int64), state=np.asarray(blk["state"], np.uint8),
            frames=np.asarray(blk["frames"], np.int32)),
        tracebacks=Tracebacks(
            start=np.asarray(b.tb_start, np.int64), name=np.asarray(b.f_name, np.int32),
            filename=np.asarray(b.f_file, np.int32), line=np.asarray(b.f_line, np.int64)),
        strings=list(b.strings), unknown_actions=b.unknown, missing_fields=b.missing)
