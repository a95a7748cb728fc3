"""Chrome trace-event JSON: PyTorch profiler (Kineto) `*.pt.trace.json[.gz]`,
TensorFlow 2.2-2.10's `<host>.trace.json.gz`, JAX's `perfetto_trace.json.gz`,
and what `export --tool trace_viewer` writes.

profscope.models.formats.chrome_json streams the document into columns (no Python
object per event); this module turns them into the Timeline model:
- one group per process (a host's processes, or every rank's in a session),
  one lane per thread and nesting depth, instant events on a lane of their
  own under their thread, counters as tracks;
- `X` slices and `B`/`E` pairs (matched per thread), flows `s`/`t`/`f`
  bound as the Trace Event Format says (`bp: "e"` to the enclosing slice,
  otherwise to the next slice; starts and steps to the enclosing slice),
  flow v2 `bind_id`, and launch -> kernel links from Kineto's `correlation`
  when a trace has no `ac2g` flows;
- Kineto's `[memory]` instant events replayed per device into the memory
  profile model, each attributed to its enclosing op.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from profscope.models.analysis import trace_stats
from profscope.models.core.files import read_bytes, read_head
from profscope.models.core.sniff import head_of
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data import _lanes, _nesting
from profscope.models.data.memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    AllocatorProfile,
    MemoryProfileData,
    Snapshots,
    complete_profile,
    summarize,
)
from profscope.models.data.timeline import Counter, Flows, StringTable, Timeline, distinct
from profscope.models.formats import chrome_json as cj
from profscope.models.formats.chrome_json import ScannedTrace, scan_trace
from profscope.models.repository.registry import MEMORY_PROFILE, TIMELINE_TOOLS, TRACE_VIEWER, Format, strip_suffix

# Numeric args read into columns while scanning.
ARG_KEYS = (b"correlation", b"Bytes", b"Addr", b"Total Allocated", b"Total Reserved", b"Device Type", b"Device Id")
A_CORRELATION, A_BYTES, A_ADDR, A_ALLOCATED, A_RESERVED, A_DEVICE_TYPE, A_DEVICE_ID = (k.decode() for k in ARG_KEYS)
A_INPUT_DIMS = "Input Dims"  # kept as text (an operator's input shapes, with record_shapes=True)
NONE = np.iinfo(np.int64).min  # an arg the event does not have

LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")
# PyTorch 1.8-1.10's Kineto categories under today's names (HTA reads both), and their
# `async` launch flows (runtime call -> GPU activity) as today's `ac2g`.
OLD_KINETO_CATEGORIES = {"Kernel": "kernel", "Memcpy": "gpu_memcpy", "Memset": "gpu_memset", "Operator": "cpu_op",
                         "Runtime": "cuda_runtime", "async": "ac2g"}
KINETO_KEYS = ("schemaVersion", "deviceProperties", "computeProperties")
MEMORY_EVENT = "[memory]"
SUFFIXES = (".pt.trace.json.gz", ".pt.trace.json", ".trace.json.gz", ".trace.json", ".json.gz", ".json")
# c10::DeviceType values Kineto writes as "Device Type".
DEVICE_TYPES = {0: "CPU", 1: "cuda", 2: "mkldnn", 3: "opengl", 4: "opencl", 5: "ideep", 6: "hip", 7: "fpga",
                8: "maia", 9: "xla", 10: "vulkan", 11: "metal", 12: "xpu", 13: "mps", 14: "meta", 15: "hpu",
                16: "ve", 17: "lazy", 18: "ipu", 19: "mtia", 20: "privateuseone"}
MAX_TS_US = 2**53  # larger times are garbage (epoch µs are ~1.7e15); keeps the sums below in int64
MAX_SPAN_US = 8 * 10**12  # about 92 days: picoseconds from the origin fit in int64
MAX_METADATA_EVENTS = 100_000  # M and C events whose args are parsed one by one
HEAD_BYTES = 1 << 16
NO_MEMORY_EVENTS = ("the trace has no [memory] events; PyTorch records them with "
                    "torch.profiler.profile(profile_memory=True)")
WHOLE_BYTES = 4 << 20  # a trace smaller than this (gunzipped) is looked through for memory events


# ---------------------------------------------------------------- recognition


def refused(head: bytes) -> str | None:
    """Why a file's head is not a Chrome trace, or None when it is one: an
    object with `traceEvents`, or events (objects with a `ph`) alone or in an
    array. Other JSON (configs, PyTorch execution traces) is not."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if re.match(rb"\[\s*(\]|$)", text):
        return None  # an empty trace
    events = b'"ph"' in head
    if text[:1] == b"[":
        return None if re.match(rb"\[\s*\{", text) and events else "not a Chrome trace (no events with \"ph\")"
    if text[:1] != b"{":
        return "not a Chrome trace (not JSON)"
    if b'"traceEvents"' in head or (events and re.match(rb'\{\s*"(ph|name|cat|pid)"', text)):
        return None
    return "not a Chrome trace (no \"traceEvents\")"


def sniff(path: Path) -> dict | None:
    """A cheap look at a file's start (gunzipped): None when it is not a
    trace, else what the start tells ({"rank": N} when distributedInfo is there)."""
    try:
        head = read_head(path, HEAD_BYTES)
    except (OSError, ProfileError):
        return None
    if refused(head) is not None:
        return None
    found = {}
    if m := re.search(rb'"distributedInfo"\s*:\s*\{[^{}]*?"rank"\s*:\s*(\d+)', head):
        found["rank"] = int(m.group(1))
    return found


class ChromeTraceFormat(Format):
    name = "chrome_trace"
    title = ("Chrome trace-event JSON: PyTorch profiler (Kineto), TensorFlow 2.2-2.10 `trace.json.gz`, "
             "JAX `perfetto_trace.json.gz`, `.json` or `.json.gz`")
    where = ("`<host>.trace.json.gz`, `*.pt.trace.json[.gz]`, `rank-N*.json[.gz]` or any `.json[.gz]` whose content is "
             "one; one host per file (`distributedInfo.rank`, else the file name), or a single file")
    patterns = ("*.json", "*.json.gz")
    tools = (MEMORY_PROFILE, TRACE_VIEWER) + TIMELINE_TOOLS
    combines_hosts = True
    rank = 5

    def host_in_folder(self, path: Path) -> str | None:
        if not path.name.endswith((".json", ".json.gz")) or ".memory_profile." in path.name:
            return None
        found = sniff(path)
        if found is None:
            return None
        return f"rank-{found['rank']}" if "rank" in found else strip_suffix(path.name, SUFFIXES) or path.name

    def tools_of(self, path: Path) -> tuple[str, ...]:
        # A trace read whole in its first MiBs says whether it has memory events.
        head = head_of(path, WHOLE_BYTES)
        if head is not None and len(head) < WHOLE_BYTES and b'"[memory]"' not in head:
            return tuple(t for t in self.tools if t != MEMORY_PROFILE)
        return self.tools

    def lacking(self, tool: str) -> str:
        return NO_MEMORY_EVENTS if tool == MEMORY_PROFILE else ""

    def refusal(self, path: Path) -> str | None:
        if not path.name.endswith((".json", ".json.gz")) or (head := head_of(path, HEAD_BYTES)) is None:
            return None
        return refused(head)

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        host = self.host_in_folder(path)
        return None if host is None else (path.name, host)

    def memory_profile(self, files, host, task):
        return trace_memory_profile(scan(files[0], task), host)

    def timeline(self, hosts, step, task):
        if step:
            raise ProfileError("--param step applies to event files; a Chrome trace shows its whole capture")
        traces = []
        for k, (host, files) in enumerate(hosts):
            sub = _SubTask(task, k / len(hosts), 0.8 / len(hosts))
            traces.append((host, scan(files[0], sub)))
        return build_timeline(traces, task, release=True)

    def chrome_trace(self, files, host, step, task):
        if step:
            raise ProfileError("--param step applies to event files; a Chrome trace shows its whole capture")
        return bytes(read_bytes(files[0], task))  # the trace itself, gunzipped


FORMAT = ChromeTraceFormat()


class _SubTask(TaskState):
    """A share [base, base + weight] of a task's progress."""

    def __init__(self, task: TaskState, base: float, weight: float):
        super().__init__()
        self._task, self._base, self._weight = task, base, weight

    @property
    def cancelled(self) -> bool:
        return self._task.cancelled

    def raise_if_cancelled(self) -> None:
        self._task.raise_if_cancelled()

    def report(self, fraction: float, text: str = "") -> None:
        self._task.report(self._base + self._weight * min(max(fraction, 0.0), 1.0), text)


def scan(path: Path, task: TaskState | None = None) -> ScannedTrace:
    """The file's events as columns; ProfileError when it is no trace."""
    return scan_trace(Path(path), ARG_KEYS, task or TaskState(), text_keys=(A_INPUT_DIMS,))


def _s(t: ScannedTrace, k: int) -> str:
    """String k of a trace ("" for -1, an absent value)."""
    return t.strings[k] if k >= 0 else ""


def _category_strings(t: ScannedTrace) -> list[str]:
    """The trace's strings as categories: a Kineto trace of the older schema
    (PyTorch 1.8-1.10: `Kernel`, `Runtime` ...) gets today's names."""
    if not any(k in t.meta for k in KINETO_KEYS) or not any(c in t.strings for c in ("Kernel", "Runtime")):
        return t.strings
    return [OLD_KINETO_CATEGORIES.get(s, s) for s in t.strings]


def _timed(t: ScannedTrace) -> np.ndarray:
    """Events with a usable ts."""
    return (t.flags & (cj.TS_BAD | cj.TS_MISSING)) == 0


# ---------------------------------------------------------------- metadata


def _meta(trace: ScannedTrace, key: str):
    """A top-level value (deviceProperties, distributedInfo ...), or None."""
    raw = trace.meta.get(key)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        trace.warnings.append(f"the top-level {key!r} is not valid JSON; ignored")
        return None


def _base_ns(trace: ScannedTrace) -> int:
    """Kineto's baseTimeNanoseconds (the times are relative to it), else 0."""
    base = _meta(trace, "baseTimeNanoseconds")
    return int(base) if isinstance(base, (int, float)) and 0 <= base < 2**62 else 0


def _names(trace: ScannedTrace, warnings: list[str]) -> dict:
    """Process and thread names and sort indices from the M events."""
    rows = np.flatnonzero(trace.ph == ord("M"))
    if len(rows) > MAX_METADATA_EVENTS:
        warnings.append(f"{len(rows):,} metadata events; only the first {MAX_METADATA_EVENTS:,} are read")
        rows = rows[:MAX_METADATA_EVENTS]
    out: dict[str, dict] = {"process_name": {}, "thread_name": {}, "process_sort_index": {}, "thread_sort_index": {},
           "process_labels": {}}
    for i in rows.tolist():
        kind = _s(trace, int(trace.name[i]))
        if kind not in out:
            continue
        args = trace.event_dict(i).get("args")
        if not isinstance(args, dict):
            continue
        value = args.get(
            "sort_index" if kind.endswith("sort_index") else "labels" if kind == "process_labels" else "name"
        )
        key = (int(trace.pid[i]),) if kind.startswith("process") else (int(trace.pid[i]), int(trace.tid[i]))
        out[kind][key] = value
    return out


def _number_or_text(text: str):
    """For ordering: numbers by value before other text."""
    try:
        return (0, float(text), text)
    except ValueError:
        return (1, 0.0, text)


def _sort_index(value) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


# ---------------------------------------------------------------- timeline


@dataclass
class _Host:
    """One file's events, placed on the shared time axis."""

    host: str
    trace: ScannedTrace
    start_ps: np.ndarray  # per file event, from the timeline origin


def _times(traces: list[tuple[str, ScannedTrace]]) -> tuple[list[_Host], int]:
    """Each event's time in ps from a shared origin (the earliest event),
    exact: whole µs, their ps fraction and Kineto's base time are added in
    integers. Events further than MAX_SPAN_US from the median time (which
    int64 picoseconds cannot hold) lose their time, with a warning. Returns
    the hosts and the origin in ns."""
    shifts, firsts = [], []
    for _, t in traces:
        absurd = _timed(t) & ((t.ts_us > MAX_TS_US) | (t.ts_us < -MAX_TS_US))
        if absurd.any():
            t.flags[absurd] |= cj.TS_BAD
            t.warnings.append(
                f"{int(absurd.sum()):,} event(s) with a ts beyond ±{MAX_TS_US:,} µs (285 years); "
                "their times are taken as invalid"
            )
        ok = _timed(t)
        base_us, base_rem_ns = divmod(_base_ns(t), 1000)
        if ok.any() and int(t.ts_us[ok].max()) - int(t.ts_us[ok].min()) > MAX_SPAN_US:
            middle = int(np.median(t.ts_us[ok]))
            far = ok & (np.abs(t.ts_us - middle) > MAX_SPAN_US // 2)
            if far.any():
                t.flags[far] |= cj.TS_BAD
                t.warnings.append(
                    f"{int(far.sum()):,} event(s) more than {MAX_SPAN_US // 2 // 86_400_000_000} days "
                    "from the others; their times are taken as invalid"
                )
                ok &= ~far
        firsts.append(int(t.ts_us[ok].min()) + base_us if ok.any() else None)
        shifts.append((base_us, base_rem_ns))
    if all(f is None for f in firsts):
        raise ProfileError(f"{traces[0][1].path}: the trace holds no event with a time")
    origin_us = min(f for f in firsts if f is not None)
    hosts = []
    for (host, t), (base_us, base_rem_ns), first in zip(traces, shifts, firsts):
        ok = _timed(t)
        if first is not None and first - origin_us > MAX_SPAN_US:  # unrelated clocks: start together
            t.warnings.append(
                f"the times are {(first - origin_us) // 86_400_000_000:,} days after the other hosts'; "
                "shown from the same start"
            )
            base_us = origin_us - (first - base_us)
        rel_us = np.where(ok, t.ts_us + (base_us - origin_us), 0)  # within MAX_SPAN_US of 0: no overflow below
        hosts.append(_Host(host, t, np.where(ok, rel_us * 1_000_000 + t.ts_ps + base_rem_ns * 1000, 0)))
    return hosts, origin_us * 1000


def _matched_begin_end(t: ScannedTrace, thread: np.ndarray, start: np.ndarray, warnings: list[str]):
    """B/E pairs matched per thread as a stack: (begin rows, end times).
    Unmatched E are dropped, unclosed B end at the thread's last time."""
    rows = np.flatnonzero(((t.ph == ord("B")) | (t.ph == ord("E"))) & _timed(t))
    if not len(rows):
        return rows, rows
    rows = rows[np.lexsort((rows, start[rows], thread[rows]))]
    th, is_b = thread[rows], t.ph[rows] == ord("B")
    seg = np.r_[0, np.cumsum(th[1:] != th[:-1])]
    step = np.where(is_b, 1, -1)
    # Depth with a floor at zero per thread (an E with nothing open is dropped):
    # d = c - min(0, running min of c), segments kept apart by a falling offset.
    big = 2 * len(rows) + 2
    c = np.cumsum(step) - seg * big
    c -= np.r_[0, np.cumsum(step)][np.searchsorted(seg, seg, side="left")]  # restart each thread at 0
    low = np.minimum(np.minimum.accumulate(c), -seg * big)
    depth = c - low
    before = np.r_[0, depth[:-1]]
    before[np.r_[True, seg[1:] != seg[:-1]]] = 0
    unmatched_e = ~is_b & (before == 0)
    level = np.where(is_b, depth, before)
    keep = ~unmatched_e
    order = np.lexsort((np.arange(len(rows))[keep], level[keep], seg[keep]))
    r, b, sg, lv = rows[keep][order], is_b[keep][order], seg[keep][order], level[keep][order]
    pair = b[:-1] & ~b[1:] & (sg[:-1] == sg[1:]) & (lv[:-1] == lv[1:])
    begins, ends = r[:-1][pair], r[1:][pair]
    paired = np.zeros(len(r), bool)
    paired[:-1] |= pair
    paired[1:] |= pair
    open_b = r[b & ~paired]
    if unmatched_e.any():
        warnings.append(f"{int(unmatched_e.sum()):,} E event(s) without a B on their thread; dropped")
    if len(open_b):
        warnings.append(f"{len(open_b):,} B event(s) never ended; shown up to their thread's last event")
        last = np.full(int(thread.max()) + 1, 0, np.int64)
        np.maximum.at(last, thread[rows], start[rows])
        ends_t = np.r_[start[ends], last[thread[open_b]]]
        begins = np.r_[begins, open_b]
    else:
        ends_t = start[ends]
    return begins, ends_t


def build_timeline(
    traces: list[tuple[str, ScannedTrace]], task: TaskState | None = None, release: bool = False
) -> Timeline:
    """One Timeline of one or more traces (several ranks: one host each).
    With release, each scan keeps only what the details panel reads once
    its events are placed (the timeline owns the scans then)."""
    task = task or TaskState()
    task.report(0.85, "Building the timeline")
    hosts, origin_ns = _times(traces)
    b = _TimelineBuilder(several_hosts=len(hosts) > 1)
    for h in hosts:
        task.raise_if_cancelled()
        b.add(h)
        if release:
            h.trace.keep_only_event_spans()
            h.start_ps = None  # type: ignore[assignment]  # released: not read again
    return b.timeline(origin_ns, traces)


class _TimelineBuilder:
    def __init__(self, several_hosts: bool):
        self.several_hosts = several_hosts  # group titles name their host
        self.groups: list[str] = []
        self.group_host: list[str] = []
        self.lane_group: list[int] = []
        self.lane_names: list[str] = []
        self.parts: dict[str, list[np.ndarray]] = {
            k: [] for k in ("lane", "start", "dur", "name", "cat", "rec", "file", "parent", "shape")
        }
        self.names: dict[str, int] = {}
        self.cats: dict[str, int] = {}
        self.shapes: dict[str, int] = {"": 0}
        self.flow_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.counters: list[Counter] = []
        self.warnings: list[str] = []
        self.properties: dict = {}
        self.events = 0
        self.files: list[ScannedTrace] = []

    def _intern(self, table: dict[str, int], strings: list[str], ids: np.ndarray) -> np.ndarray:
        """File string ids -> timeline ids (-1 -> the empty string)."""
        used = np.flatnonzero(np.bincount(ids + 1, minlength=len(strings) + 1)) - 1
        mapping = np.zeros(len(strings) + 1, np.int32)
        for k in used.tolist():
            mapping[k + 1] = table.setdefault(strings[k] if k >= 0 else "", len(table))
        return mapping[ids + 1]

    def add(self, h: _Host) -> None:
        t, start = h.trace, h.start_ps
        prefix = f"{h.host}: " if self.several_hosts and h.host else ""
        warnings = t.warnings[:]
        names = _names(t, warnings)
        ph = t.ph
        timed = _timed(t)
        # Threads: (pid, tid) pairs of every event.
        keys, thread = _threads(t.pid, t.tid)
        # Slices: X and matched B/E (row numbers fit int32: a trace has fewer than 2**31 events).
        x = np.flatnonzero((ph == ord("X")) & timed).astype(np.int32)
        dur = np.maximum(t.dur_ps[x], 0)
        negative = int(((t.flags[x] & cj.DUR_NEG) != 0).sum())
        if negative:
            warnings.append(f"{negative:,} slice(s) with a negative duration, shown as 0")
        begins, ends = _matched_begin_end(t, thread, start, warnings)
        srows = np.r_[x, begins].astype(np.int32)
        sstart = start[srows]
        send = np.r_[start[x] + dur, np.maximum(ends, start[begins])]
        del x, dur, begins, ends
        # Instants: i/I (thread, process or global scope).
        irows = np.flatnonzero(((ph == ord("i")) | (ph == ord("I"))) & timed).astype(np.int32)
        untimed = int(((ph != ord("M")) & ~timed & (ph != 0)).sum())
        if untimed:
            warnings.append(f"{untimed:,} event(s) without a valid ts (missing, NaN or out of range); skipped")
        missing_ph = int((ph == 0).sum())
        if missing_ph:
            warnings.append(f"{missing_ph:,} event(s) without ph; skipped")
        shown = set(b"XBEiIMCstf")
        other = ~np.isin(ph, np.frombuffer(bytes(shown), np.uint8)) & (ph != 0)
        if other.any():
            kinds = ", ".join(sorted({chr(c) for c in np.unique(ph[other]).tolist()}))
            warnings.append(f"{int(other.sum()):,} event(s) of phases {kinds} (async, samples, objects) not shown")
        # Slices per thread sorted by start, longest first on ties (parents before children).
        order = _slice_order(thread[srows], sstart, send)
        srows, sstart, send = srows[order], sstart[order], send[order]
        sthread = thread[srows]
        depth = _pack_by_thread(sthread, sstart, send)
        parent_local = _nesting.nest_parents(None, sthread, sstart, send, np.zeros(len(srows), bool))
        # Lanes: processes (groups) in sort order, their threads, each thread's
        # depths, then its instants.
        scope = t.scope[irows]
        ithread = thread[irows]
        proc_of_key = (keys >> 32).astype(np.int64)
        procs = np.unique(proc_of_key)

        def proc_title(pid_id: int) -> str:
            text = _s(t, pid_id) if pid_id >= 0 else "?"
            name = names["process_name"].get((pid_id,))
            labels = names["process_labels"].get((pid_id,))
            title = f"{name} (pid {text})" if isinstance(name, str) and name else f"Process {text}"
            return f"{labels}: {title}" if isinstance(labels, str) and labels else title

        proc_order = sorted(
            procs.tolist(),
            key=lambda p: (
                _sort_index(names["process_sort_index"].get((p,))),
                _number_or_text(_s(t, p) if p >= 0 else ""),
            ),
        )
        max_depth = np.full(len(keys), -1, np.int64)
        if len(sthread):  # slices are grouped by thread
            first = np.flatnonzero(np.r_[True, sthread[1:] != sthread[:-1]])
            max_depth[sthread[first]] = np.maximum.reduceat(depth, first)
        has_instants = np.zeros(len(keys), bool)
        has_instants[ithread[(scope != ord("p")) & (scope != ord("g"))]] = True
        proc_instants = set(proc_of_key[ithread[scope == ord("p")]].tolist())
        lane_of_depth0 = np.full(len(keys), -1, np.int64)
        instant_lane = np.full(len(keys), -1, np.int64)
        proc_lane: dict[int, int] = {}
        proc_group: dict[int, int] = {}
        for p in proc_order:
            group = proc_group[p] = len(self.groups)
            self.groups.append(prefix + proc_title(p))
            self.group_host.append(h.host)
            ks = np.flatnonzero(proc_of_key == p).tolist()
            ks.sort(
                key=lambda k: (
                    _sort_index(names["thread_sort_index"].get((p, _tid_id(keys, k)))),
                    _number_or_text(_thread_text(t, keys, k)),
                )
            )
            if p in proc_instants:
                proc_lane[p] = len(self.lane_names)
                self.lane_group.append(group)
                self.lane_names.append("process instants")
            for k in ks:
                label = names["thread_name"].get((p, _tid_id(keys, k)))
                title = label if isinstance(label, str) and label else f"Thread {_thread_text(t, keys, k)}"
                if max_depth[k] >= 0:
                    lane_of_depth0[k] = len(self.lane_names)
                    for d in range(int(max_depth[k]) + 1):
                        self.lane_group.append(group)
                        self.lane_names.append(title if d == 0 else "")
                if has_instants[k]:
                    instant_lane[k] = len(self.lane_names)
                    self.lane_group.append(group)
                    self.lane_names.append(f"{title} instants")
        if (scope == ord("g")).any():
            self.groups.append(prefix + "Global instants")
            self.group_host.append(h.host)
            global_lane = len(self.lane_names)
            self.lane_group.append(len(self.groups) - 1)
            self.lane_names.append("global")
        else:
            global_lane = -1
        proc_lane_of_key = np.array([proc_lane.get(int(v), -1) for v in proc_of_key.tolist()], np.int64)
        ilane = np.where(
            scope == ord("g"),
            global_lane,
            np.where(scope == ord("p"), proc_lane_of_key[ithread], instant_lane[ithread]),
        )
        lane = np.r_[lane_of_depth0[sthread] + depth, ilane].astype(np.int32)
        del depth, lane_of_depth0, ilane
        offset = self.events
        # An instant's parent is the slice around it on its thread.
        iparent = _bind(ithread, start[irows], np.zeros(len(irows), bool), sthread, sstart, send, parent_local)
        self._flows(h, thread, srows, sthread, sstart, send, parent_local, offset)
        del sthread, thread
        # This host's rows, slices then instants; the slice columns are freed as they are used.
        p = self.parts
        p["lane"].append(lane)
        p["dur"].append(np.r_[send - sstart, np.zeros(len(irows), np.int64)])
        del send
        p["start"].append(np.r_[sstart, start[irows]])
        del sstart
        # Parents as indices of this host's rows (converted after the final sort).
        parent = np.r_[parent_local, iparent].astype(np.int64)
        del parent_local, iparent
        p["parent"].append(np.where(parent >= 0, parent + offset, -1))
        del parent
        rows = np.r_[srows, irows]
        del srows
        p["name"].append(self._intern(self.names, t.strings, t.name[rows]))
        p["cat"].append(self._intern(self.cats, _category_strings(t), t.cat[rows]))
        dims = t.arg(A_INPUT_DIMS, rows) if A_INPUT_DIMS in t.args else np.zeros(0, np.int64)
        p["shape"].append(
            self._intern(self.shapes, t.strings, np.where(dims == NONE, -1, dims).astype(np.int32))
            if len(dims)
            else np.zeros(len(rows), np.int32)
        )
        p["file"].append(np.full(len(rows), len(self.files), np.int32))
        p["rec"].append(rows)
        self.files.append(t)
        self.events += len(rows)
        self._counters(h, proc_group, warnings)
        self.warnings += [prefix + w for w in warnings]
        props = {
            k: v
            for k in (*trace_stats.DEVICE_PROPERTIES, "distributedInfo", "traceName", "displayTimeUnit")
            if (v := _meta(t, k)) is not None
        }
        if props:
            self.properties[h.host] = props

    def _flows(self, h: _Host, thread, srows, sthread, sstart, send, parent_local, offset) -> None:
        """Flows between this host's slices (indices of its sorted slices, plus offset)."""
        t, start = h.trace, h.start_ps
        ph = t.ph
        cat_strings = _category_strings(t)
        frows = np.flatnonzero(((ph == ord("s")) | (ph == ord("t")) | (ph == ord("f"))) & _timed(t) & (t.id >= 0))
        src_parts, dst_parts, cat_parts = [], [], []
        if len(frows):
            next_slice = (ph[frows] == ord("f")) & ((t.flags[frows] & cj.BP_E) == 0)
            bound = _bind(thread[frows], start[frows], next_slice, sthread, sstart, send, parent_local)
            key_cat, key_id = t.cat[frows], t.id[frows]
            order = np.lexsort((frows, start[frows], key_id, key_cat))
            a, b = order[:-1], order[1:]
            link = (
                (key_cat[a] == key_cat[b])
                & (key_id[a] == key_id[b])
                & (ph[frows][a] != ord("f"))
                & (ph[frows][b] != ord("s"))
                & (bound[a] >= 0)
                & (bound[b] >= 0)
            )
            src_parts.append(bound[a][link])
            dst_parts.append(bound[b][link])
            cat_parts.append(self._intern(self.cats, cat_strings, key_cat[a][link]))
        # Flow v2: X events carrying bind_id with flow_out / flow_in.
        if (t.bind_id >= 0).any():
            bid = t.bind_id[srows]
            out = np.flatnonzero((bid >= 0) & ((t.flags[srows] & cj.FLOW_OUT) != 0))
            inn = np.flatnonzero((bid >= 0) & ((t.flags[srows] & cj.FLOW_IN) != 0))
            s_ids, s_pos = np.unique(bid[out], return_index=True)
            k = np.searchsorted(s_ids, bid[inn])
            ok = (
                (k < len(s_ids)) & (s_ids[np.minimum(k, len(s_ids) - 1)] == bid[inn])
                if len(s_ids)
                else np.zeros(0, bool)
            )
            src_parts.append(out[s_pos[k[ok]]])
            dst_parts.append(inn[ok])
            cat_parts.append(np.full(int(ok.sum()), self.cats.setdefault("flow", len(self.cats)), np.int32))
        # Kineto's launch -> kernel link by correlation id, when no ac2g flows were written.
        ac2g = [k for k, c in enumerate(cat_strings) if c == "ac2g"]
        if not np.isin(t.cat[frows], ac2g).any():
            corr = t.arg(A_CORRELATION, srows)
            gpu_ids = [k for k, c in enumerate(cat_strings) if c in trace_stats.GPU_CATEGORIES]
            launch_ids = [k for k, c in enumerate(cat_strings) if c in LAUNCH_CATEGORIES]
            scat = t.cat[srows]
            launch = np.flatnonzero(np.isin(scat, launch_ids) & (corr != NONE))
            kernel = np.flatnonzero(np.isin(scat, gpu_ids) & (corr != NONE))
            if len(launch) and len(kernel):
                l_ids, l_pos = np.unique(corr[launch], return_index=True)
                k = np.minimum(np.searchsorted(l_ids, corr[kernel]), len(l_ids) - 1)
                ok = l_ids[k] == corr[kernel]
                src_parts.append(launch[l_pos[k[ok]]])
                dst_parts.append(kernel[ok])
                cat_parts.append(np.full(int(ok.sum()), self.cats.setdefault("ac2g", len(self.cats)), np.int32))
        for s, d, c in zip(src_parts, dst_parts, cat_parts):
            self.flow_parts.append((s + offset, d + offset, c))

    def _counters(self, h: _Host, proc_group: dict[int, int], warnings: list[str]) -> None:
        """C events as counter tracks of their process's group, one per series."""
        t = h.trace
        rows = np.flatnonzero((t.ph == ord("C")) & _timed(t))
        if len(rows) > MAX_METADATA_EVENTS:
            warnings.append(f"{len(rows):,} counter events; only the first {MAX_METADATA_EVENTS:,} are drawn")
            rows = rows[:MAX_METADATA_EVENTS]
        series: dict[tuple[int, str], tuple[list, list]] = {}
        for i in rows.tolist():
            args = t.event_dict(i).get("args")
            if not isinstance(args, dict):
                continue
            base = _s(t, t.name[i])
            for key, value in args.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool):
                    label = base if len(args) == 1 else f"{base} {key}"
                    times, values = series.setdefault((int(t.pid[i]), label), ([], []))
                    times.append(int(h.start_ps[i]))
                    values.append(float(value))
        for (pid, label), (times, values) in sorted(series.items(), key=lambda kv: kv[0][1]):
            order = np.argsort(times, kind="stable")
            self.counters.append(
                Counter(
                    proc_group[pid], label, np.asarray(times, np.int64)[order], np.asarray(values, np.float64)[order]
                )
            )

    def _column(self, key: str, order: np.ndarray, dtype=None) -> np.ndarray:
        """One column of every host's events in timeline order; the parts are
        freed first, so at most one column exists twice at a time."""
        parts = self.parts.pop(key)
        joined = parts[0] if len(parts) == 1 else np.concatenate(parts)
        del parts
        out = joined[order]
        return out if dtype is None else out.astype(dtype, copy=False)

    def timeline(self, origin_ns: int, traces) -> Timeline:
        lanes = np.concatenate(self.parts.pop("lane")) if self.parts["lane"] else np.zeros(0, np.int64)
        if not len(lanes) and not self.counters:
            raise ProfileError(f"{traces[0][1].path}: the trace holds no slices, instants or counters")
        # Drop lanes nothing landed on (a thread with only flow or counter events).
        used = np.zeros(len(self.lane_names), bool)
        used[lanes] = True
        used_groups = {self.lane_group[k] for k in np.flatnonzero(used).tolist()} | {k.group for k in self.counters}
        group_ids = sorted(used_groups)
        group_map = {g: k for k, g in enumerate(group_ids)}
        lanes = (np.cumsum(used) - 1)[lanes]
        start = np.concatenate(self.parts.pop("start")) if len(lanes) else np.zeros(0, np.int64)
        order = np.lexsort((start, lanes))
        counts = np.bincount(lanes, minlength=int(used.sum()))
        del lanes
        start = start[order]
        inverse = np.empty(len(order), np.int64)
        inverse[order] = np.arange(len(order))
        parent = self._column("parent", order)
        parent = np.where(parent >= 0, inverse[np.maximum(parent, 0)], -1).astype(np.int32)
        names = list(self.names)
        name_ids = self._column("name", order, np.int32)
        dur = self._column("dur", order)
        category = self._column("cat", order, np.int32)
        shape = self._column("shape", order, np.int32)
        source = TraceSource(
            files=self.files, file=self._column("file", order, np.int32), rec=self._column("rec", order)
        )
        flows = None
        if self.flow_parts:
            src = inverse[np.concatenate([f[0] for f in self.flow_parts])]
            dst = inverse[np.concatenate([f[1] for f in self.flow_parts])]
            flows = Flows(src, dst, np.concatenate([f[2] for f in self.flow_parts]).astype(np.int32), list(self.cats))
        del inverse, order
        for counter in self.counters:
            counter.group = group_map[counter.group]
        timeline = Timeline(
            groups=[self.groups[g] for g in group_ids],
            lane_group=np.array([group_map[self.lane_group[k]] for k in np.flatnonzero(used).tolist()], np.int32),
            lane_names=[self.lane_names[k] for k in np.flatnonzero(used).tolist()],
            lane_offsets=np.r_[0, np.cumsum(counts)].astype(np.int64),
            start_ps=start,
            duration_ps=dur,
            kind=name_ids,
            kinds=names,
            names=StringTable(names, name_ids),
            origin_ns=origin_ns,
            source=", ".join(str(t.path) for _, t in traces),
            warnings=self.warnings,
            category=category,
            categories=list(self.cats),
            parent=parent,
            flows=flows,
            counters=self.counters,
            group_host=[self.group_host[g] for g in group_ids],
            properties=self.properties,
            input_shape=shape if len(self.shapes) > 1 else None,
            input_shapes=list(self.shapes),
        )
        st = trace_stats.steps(timeline)
        timeline.markers_ps = np.unique(np.r_[st.start_ps, st.end_ps])
        timeline.details = lambda i: event_details(timeline, source, i)
        timeline.records = source
        return timeline


def _threads(pid: np.ndarray, tid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (pid, tid) pairs as keys (pid id << 32 | tid id as uint32)
    and each event's index among them (int32). The ids are string ids (-1 for
    none), small numbers: counted rather than sorted when the pairs are few."""
    size = int(max(pid.max(initial=-1), tid.max(initial=-1))) + 2
    p_ids, p = distinct(pid.astype(np.int64) + 1, size)
    t_ids, q = distinct(tid.astype(np.int64) + 1, size)
    pairs, thread = distinct(p * len(t_ids) + q, len(p_ids) * len(t_ids))
    keys = (p_ids[pairs // len(t_ids)] - 1) * (1 << 32) + ((t_ids[pairs % len(t_ids)] - 1) & 0xFFFFFFFF)
    return keys, thread.astype(np.int32)


def _tid_id(keys: np.ndarray, k: int) -> int:
    """The tid string id of thread key k (pid id << 32 | tid id)."""
    v = int(keys[k] & 0xFFFFFFFF)
    return v - (1 << 32) if v >= 1 << 31 else v


def _thread_text(t: ScannedTrace, keys: np.ndarray, k: int) -> str:
    tid = _tid_id(keys, k)
    return _s(t, tid) if tid >= 0 else "?"


def _slice_order(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Slices by thread, then start, longest first on ties, then file order:
    two stable sorts when (thread, start) fits one int64 key."""
    if not len(start):
        return np.zeros(0, np.int64)
    low = int(start.min())
    span = int(start.max()) - low + 1
    if (int(thread.max()) + 1) * span >= 2**62:
        return np.lexsort((start - end, start, thread))
    order = np.argsort(start - end, kind="stable")
    key = thread[order].astype(np.int64) * span + (start[order] - low)
    return order[np.argsort(key, kind="stable")]


def _pack_by_thread(thread: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Nesting depth (first-fit lane) of each slice within its thread; slices
    sorted by (thread, start). Each thread's times are moved past the previous
    thread's, so one packing pass restarts at lane 0 for every thread; a new
    pass begins where the moved times would leave int64."""
    n = len(start)
    if not n:
        return np.zeros(0, np.int32)
    first = np.flatnonzero(np.r_[True, thread[1:] != thread[:-1]])
    seg = np.repeat(np.arange(len(first), dtype=np.int32), np.diff(np.r_[first, n]))
    lo = start[first]
    ends = np.maximum(end, start)
    width = np.maximum.reduceat(ends, first) - lo + 1
    reach = np.cumsum(width.astype(np.float64))
    batch = (reach // 2.0**61).astype(np.int64)  # threads packed in one pass
    base = np.r_[0, np.cumsum(width)[:-1]]  # int64 wrap-around is harmless: only differences within a batch count
    base -= base[np.searchsorted(batch, batch, side="left")]
    shift = (base - lo)[seg]
    ends += shift
    shift += start  # now the moved starts
    lanes = np.empty(n, np.int32)
    edges = np.searchsorted(batch[seg], np.arange(int(batch[-1]) + 2))
    for a, b in zip(edges[:-1].tolist(), edges[1:].tolist()):
        if b > a:
            lanes[a:b] = _lanes.pack_lanes(shift[a:b], ends[a:b])
    return lanes


def _bind(
    thread: np.ndarray,
    at: np.ndarray,
    next_slice: np.ndarray,
    sthread: np.ndarray,
    sstart: np.ndarray,
    send: np.ndarray,
    parent: np.ndarray,
) -> np.ndarray:
    """The slice (index into the sorted slices) each flow point binds to:
    the deepest slice of its thread enclosing its time, or for next_slice
    points the first slice starting at or after it; -1 for none."""
    out = np.full(len(at), -1, np.int64)
    bounds = np.searchsorted(sthread, np.arange(int(sthread.max()) + 2 if len(sthread) else 1))
    for th in np.unique(thread).tolist():
        if th + 1 >= len(bounds):
            continue
        a, b = int(bounds[th]), int(bounds[th + 1])
        if a == b:
            continue
        mine = np.flatnonzero(thread == th)
        x = at[mine]
        nxt = next_slice[mine]
        k = a + np.searchsorted(sstart[a:b], x, side="left")
        out[mine[nxt]] = np.where(k[nxt] < b, k[nxt], -1)
        cand = a + np.searchsorted(sstart[a:b], x, side="right") - 1
        cand = np.where(cand >= a, cand, -1)
        for _ in range(10_000):  # up the parents until one encloses the time
            bad = (cand >= 0) & (send[np.maximum(cand, 0)] < x)
            if not bad.any():
                break
            cand[bad] = parent[cand[bad]]
        out[mine[~nxt]] = cand[~nxt]
    return out


@dataclass
class TraceSource:
    """Where each timeline event came from: its file and row in that file's scan."""

    files: list[ScannedTrace]
    file: np.ndarray  # int32 per timeline event
    rec: np.ndarray  # int64 per timeline event

    def event(self, i: int) -> dict:
        return self.files[int(self.file[i])].event_dict(int(self.rec[i]))


def event_details(timeline: Timeline, source: TraceSource, i: int) -> list[tuple[str, str]]:
    """Where, then every field of the event as the file has it (args flattened),
    then its flows."""
    lane = timeline.lane_of(i)
    rows = [("process", timeline.groups[timeline.lane_group[lane]]), ("thread", _lane_title(timeline, lane))]
    event = source.event(i)
    for key, value in event.items():
        if key == "args" and isinstance(value, dict):
            rows += [(f"args.{k}", _text(v)) for k, v in value.items()]
        else:
            rows.append((key, _text(value)))
    if timeline.flows is not None:
        f = timeline.flows
        for k in f.of_event(i).tolist():
            other, arrow = (int(f.dst[k]), "flow to") if f.src[k] == i else (int(f.src[k]), "flow from")
            rows.append(
                (
                    f"{arrow} ({f.categories[f.category[k]]})",
                    f"{timeline.names[other]} at {timeline.start_ps[other] / 1e6:.3f} µs",
                )
            )
    return rows


def _text(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)[:10_000]


def _lane_title(timeline: Timeline, lane: int) -> str:
    while lane > 0 and not timeline.lane_names[lane] and timeline.lane_group[lane - 1] == timeline.lane_group[lane]:
        lane -= 1
    return timeline.lane_names[lane]


# ---------------------------------------------------------------- memory


def trace_memory_profile(trace: ScannedTrace, host: str) -> MemoryProfileData:
    """Kineto's `[memory]` events (profile_memory=True) per device as memory
    timelines: heap = Total Allocated, free = Total Reserved - Total Allocated,
    each allocation (Bytes > 0) or free (Bytes < 0) at its Addr, attributed to
    the op around it on its thread and to the ProfilerStep around it."""
    t = trace
    name_id = t.strings.index(MEMORY_EVENT) if MEMORY_EVENT in t.strings else -2
    rows = np.flatnonzero((t.name == name_id) & _timed(t))
    rows = rows[t.arg(A_BYTES, rows) != NONE]
    if not len(rows):
        raise ProfileError(f"{t.path}: {NO_MEMORY_EVENTS}")
    timeline = build_timeline([("", t)])
    src: TraceSource = timeline.records  # type: ignore[assignment]  # a Chrome trace's
    event_of_row = np.full(len(t.ph), -1, np.int64)
    event_of_row[src.rec] = np.arange(len(src.rec))
    ev = event_of_row[rows]
    rows, ev = rows[ev >= 0], ev[ev >= 0]
    time_ps = timeline.start_ps[ev]
    # The op: the nearest cpu_op around the event, else whatever slice is around it.
    assert timeline.category is not None and timeline.parent is not None  # a Chrome trace's timeline has both
    is_op = timeline.category == (timeline.categories.index("cpu_op") if "cpu_op" in timeline.categories else -2)
    op = trace_stats.cpu_op_ancestor(timeline, ev, is_op, include_self=False)
    op = np.where(op >= 0, op, timeline.parent[ev])
    op_names = [timeline.kinds[timeline.kind[k]] if k >= 0 else "" for k in op.tolist()]
    steps = _step_of(timeline, time_ps)
    device = t.arg(A_DEVICE_TYPE, rows)
    device_id = t.arg(A_DEVICE_ID, rows)
    # The devices' memory (Kineto's totalGlobalMem), by id.
    listed = trace_stats.device_list({k: _meta(t, k) for k in trace_stats.DEVICE_PROPERTIES})
    device_memory = {d.get("id"): d.get("totalGlobalMem") for d in listed}
    allocators = {}
    for dev, idx in sorted(set(zip(device.tolist(), device_id.tolist()))):
        sel = np.flatnonzero((device == dev) & (device_id == idx))
        sel = sel[np.argsort(time_ps[sel], kind="stable")]
        kind = DEVICE_TYPES.get(dev, f"device type {dev}") if dev != NONE else "unknown"
        memory_id = kind if kind == "CPU" else f"{kind}:{idx if idx != NONE else 0}"
        memory = device_memory.get(idx if idx != NONE else 0) if kind != "CPU" else None
        allocators[memory_id] = _allocator(
            memory_id, t, rows[sel], time_ps[sel], [op_names[k] for k in sel.tolist()], steps[sel],
            int(memory) if isinstance(memory, (int, float)) and memory > 0 else 0,
        )
    return MemoryProfileData(host=host or t.path.name, allocators=allocators, source=str(t.path))


def _allocator(
    memory_id: str, t: ScannedTrace, rows: np.ndarray, time_ps: np.ndarray, ops: list[str], steps: np.ndarray,
    device_memory: int = 0,
) -> AllocatorProfile:
    """One device's allocations; its capacity is the most the allocator
    reserved ("Total Reserved"), else the device's memory as the trace lists it."""
    size = t.arg(A_BYTES, rows)
    allocated = t.arg(A_ALLOCATED, rows)
    reserved = t.arg(A_RESERVED, rows)
    # Without totals (older traces), the running sum of Bytes stands in.
    heap = np.where(allocated != NONE, allocated, np.cumsum(size))
    free = np.where(reserved != NONE, np.maximum(reserved - heap, 0), 0)
    strings = [""] + sorted(set(ops) - {""})
    index = {s: k for k, s in enumerate(strings)}
    op = np.array([index[o] for o in ops], np.int32)
    zeros = np.zeros(len(rows), np.int64)
    address = t.arg(A_ADDR, rows)
    timeline = Snapshots(
        time_ps=time_ps,
        stack=zeros,
        heap=heap,
        free=free,
        fragmentation=np.zeros(len(rows)),
        peak_in_use=np.maximum.accumulate(heap),
        activity=np.where(size >= 0, ALLOCATION, DEALLOCATION),
        requested=np.abs(size),
        allocation=np.abs(size),
        address=np.where(address != NONE, address, 0).view(np.uint64),
        step=steps,
        op=op,
        region=np.zeros(len(rows), np.int32),
        dtype=np.zeros(len(rows), np.int32),
        shape=np.zeros(len(rows), np.int32),
        strings=strings,
    )
    summary = summarize(timeline)
    counts = np.bincount(timeline.activity, minlength=3)
    summary.num_allocations, summary.num_deallocations = int(counts[ALLOCATION]), int(counts[DEALLOCATION])
    summary.memory_capacity = int(reserved[reserved != NONE].max()) if (reserved != NONE).any() else device_memory
    return complete_profile(memory_id, timeline, summary)


def _step_of(timeline: Timeline, at: np.ndarray) -> np.ndarray:
    """The ProfilerStep number around each time (-1 outside every step)."""
    st = trace_stats.steps(timeline)
    k = np.searchsorted(st.start_ps, at, side="right") - 1
    inside = (k >= 0) & (st.end_ps[np.maximum(k, 0)] >= at) if len(st) else np.zeros(len(at), bool)
    out = np.full(len(at), -1, np.int64)
    out[inside] = st.number[k[inside]]
    return out
