"""What XProf's OpStats holds, as numpy columns: the op metrics of a host's
threads (XProf's host_op_metrics_db) and the run environment, read from
XSpaces (xplane_to_op_stats, xplane_to_op_metrics_db in XProf's convert/).

Host ops are the events of the `/host:CPU` plane whose name parses as a
TensorFlow, JAX or tf.data op (`name:type`, `Iterator::...`), the events
carrying a `tf_op` stat, and tf.data stage events (`input_pipeline_stage_id`
with a category). Per line, their begins and ends drive XProf's op stack
(formats.xspace._steps.op_stack); an op's self time is its time less that of
the ops nested in it. A line's op time spans its first begin to its last end;
what its ops do not cover is IDLE.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats.xspace import _steps
from profscope.models.formats.xspace.xplane import (
    HOST_PLANE,
    XSpaceData,
    heap_reuse,
    in_threads,
    read_xspace,
    span_text,
    xprof_order,
)

if TYPE_CHECKING:
    from profscope.models.analysis.xprof.tpu_steps import TpuSteps

IDLE = "IDLE"
GPU_PLANE_PREFIX = "/device:GPU:"
TPU_PLANE_PREFIX = "/device:TPU:"
# XProf's derived lines (steps, launches, ...) have ids from 0xdeadbeef on; they hold no host ops.
DERIVED_LINE_MIN, DERIVED_LINE_COUNT = 0xDEADBEEF, 512

# Op categories of tsl's TfOp (ParseTfOpFullname).
UNKNOWN, TENSORFLOW, JAX, TF_DATA, INPUT_PIPELINE, MEMCPY = range(6)
_TF_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*")
_TF_OP_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_JAX_OP_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?")  # RE2: "." stops at a newline
_MEMCPY = ("MemcpyHToD", "MemcpyDToH", "MemcpyDToD", "MemcpyHToH")


def _is_int(s: str) -> bool:
    s = s.strip()
    return bool(re.fullmatch(r"[+-]?\d+", s)) and -(2**63) <= int(s) < 2**63


def parse_tf_op(fullname: str) -> tuple[int, str, str]:
    """(category, name, type) of an op's full name, as tsl's ParseTfOpFullname."""
    parts = fullname.split(":", 1)
    if len(parts) != 2:
        for memcpy in _MEMCPY:
            if parts[0][: len(memcpy)].lower() == memcpy.lower():
                return MEMCPY, fullname, memcpy
        return UNKNOWN, fullname, ""
    name, type_ = parts
    if name == "Iterator":
        return TF_DATA, fullname, "Dataset"
    if _TF_OP_NAME.fullmatch(name) and _TF_OP_TYPE.fullmatch(type_):
        return TENSORFLOW, name, type_
    op_type = type_ or _derive_type(name)
    if _JAX_OP_TYPE.fullmatch(op_type):
        return JAX, name, op_type.split("[", 1)[0]
    if not type_:
        return TENSORFLOW, name, op_type
    return UNKNOWN, fullname, ""


def _derive_type(name: str) -> str:
    op = name.split("/")[-1]
    suffix = op.split("_")[-1]
    return op[: len(op) - len(suffix) - 1] if _is_int(suffix) and "_" in op else op


@dataclass
class OpMetricsDb:
    """XProf's OpMetricsDb as columns, one row per (id, name) op, in the order
    XProf inserts them; IDLE last (occurrences 0)."""

    name: list[str]
    category: list[str]  # the op type ("IDLE" for the idle row)
    occurrences: np.ndarray
    time_ps: np.ndarray
    self_time_ps: np.ndarray
    is_eager: np.ndarray
    total_time_ps: int = 0
    total_op_time_ps: int = 0
    provenance: list[str] | None = None  # device ops: each one's framework op (tf_op full name)
    # XLA ops' cost analysis, totals over the occurrences (None without it: every rate zero): FLOPs, bytes
    # accessed, and the HBM bytes of XLA's per-memory breakdown (0 where it has none: call, while ...).
    flops: np.ndarray | None = None
    bytes: np.ndarray | None = None
    hbm_bytes: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.name)

    def costs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(FLOPs, bytes, HBM bytes) per row, zeros without a cost analysis."""
        if self.flops is None or self.bytes is None or self.hbm_bytes is None:
            zeros = np.zeros(len(self.name), np.float64)
            return zeros, zeros, zeros
        return self.flops, self.bytes, self.hbm_bytes


@dataclass
class OpStats:
    """The parts of XProf's OpStats the tools read."""

    host: OpMetricsDb
    # XProf's run environment: a host's own; device planes set it (device_op_metrics.DeviceStats).
    device_type: str = "CPU"
    hardware_type: str = "CPU_ONLY"
    device_core_count: int = 0
    errors: list[str] = field(default_factory=list)  # the XSpaces' own, sorted and without repeats
    warnings: list[str] = field(default_factory=list)
    is_training: bool = False  # from the XLA modules (XProf's ModelTracker)
    steps: StepDb | None = None  # the step rows: the first host's steps (of the hosts' step intersection)
    step_ps: np.ndarray | None = None  # per step, the longest of the hosts' (XProf's step time summary)
    empty_intersect: bool = False  # several hosts had steps, but no step in common
    compute_ms: tuple[float, float] = (0.0, 0.0)  # 16- and 32-bit device compute of every host's steps
    tpu_steps: TpuSteps | None = None  # TensorCores' steps (tpu_steps.py), for a TPU host
    host_count: int = 1  # distinct host names
    task_count: int = 1  # XSpaces
    device: OpMetricsDb | None = None  # the device planes' op metrics (device_op_metrics.py), by framework op
    device_unknown: str = ""  # why the device's op metrics are not computed, if they are not


def read_spaces(paths: list[Path], task: TaskState, keep: list[str] | None = None) -> list[XSpaceData]:
    """The XSpaces, with `keep`: those stats of their host plane's events read in the same pass."""
    if not paths:
        raise ProfileError("no xplane.pb to analyse")
    return [read_xspace(p, task, keep=(HOST_PLANE, keep) if keep else None) for p in paths]


def op_stats(paths: list[Path], task: TaskState, steps: bool = False) -> OpStats:
    """OpStats of one host's XSpace, or of several hosts combined (with
    `steps`: XProf's step intersection of their step dbs, step_intersection.py;
    TPU hosts: tpu_steps.py). The last one computed is kept while
    its files are unchanged: the window asks for several tools of a host."""
    try:
        key = tuple((str(p), st.st_mtime_ns, st.st_size) for p in paths for st in [Path(p).stat()])
    except OSError:
        key = None
    with _last_lock:
        last = _last.get(key) if key else None
    if last is not None and (last.steps is not None or not steps):
        return last
    stats = _op_stats(paths, task, steps)
    if key:
        with _last_lock:
            _last.clear()
            _last[key] = stats
    return stats


_last: dict = {}  # files' (path, mtime, size) -> their OpStats: the last computed
_last_lock = threading.Lock()


def tpu_and_gpu_session(stats: OpStats, paths: list[Path], task: TaskState):
    """(XSpaces, tpu_steps.tpu_and_gpu_hosts) of a session of TPU and GPU hosts (`stats` its OpStats); None for
    other sessions, without reading them or loading the TPU modules where no host has a device."""
    if stats.device is None:
        return None
    from profscope.models.analysis.xprof.tpu_steps import tpu_and_gpu_hosts

    spaces = read_spaces(paths, task)
    mixed = tpu_and_gpu_hosts(spaces)
    return None if mixed is None else (spaces, mixed)


def device_planes(space: XSpaceData) -> list[str]:
    return [p.name for p in space.planes if p.name.startswith((GPU_PLANE_PREFIX, TPU_PLANE_PREFIX))]


def _op_stats(paths: list[Path], task: TaskState, steps: bool) -> OpStats:
    # Host ops and step groups read stats of the same events: one pass over them for both, the decoding's.
    kept = _host_stat_names(steps)
    spaces = read_spaces(paths, task, kept)
    device = None
    if any(device_planes(s) for s in spaces):
        from profscope.models.analysis.xprof import device_op_metrics

        device = device_op_metrics.device_stats(spaces, paths, steps)
    task.report(0.7, "Host ops and steps" if steps else "Host ops")
    for s in spaces:  # an XSpace decoded before (the window's timeline) has none kept
        _keep_host_stats(s, kept)
    # A GPU host's steps are its device's (device_op_metrics.gpu_step_db); otherwise the host's. Host ops and
    # steps read the same events, not each other's results: on two threads (their passes are C and numpy
    # that let go of the GIL).
    host_steps = steps and (device is None or device.steps is None)
    jobs = [(host_op_metrics, s) for s in spaces] + [(host_step_db, s) for s in spaces if host_steps]
    # Each allocates and frees columns of every event in turn: freed ones are reused, not fresh pages.
    with heap_reuse():
        done = in_threads(lambda job: job[0](job[1]), jobs)
    dbs = done[:len(spaces)]
    stats = OpStats(combine(dbs))
    stats.errors = sorted({e for s in spaces for e in s.errors})
    stats.warnings = sorted({w for s in spaces for w in s.warnings})
    stats.task_count = len(spaces)
    stats.host_count = len({(s.hostnames or ["localhost"])[0] for s in spaces})
    for s in spaces:
        s.kept = None
    if steps:
        step_dbs: list[StepDb] = done[len(spaces):]
        if not host_steps:
            assert device is not None and device.steps is not None  # host_steps is False only for them
            step_dbs = device.steps
        # Several hosts: XProf's step intersection (step_intersection.py).
        from profscope.models.analysis.xprof.step_intersection import session_steps

        stats.steps, stats.step_ps, stats.empty_intersect = session_steps(spaces, step_dbs)
        # XProf's precision stats: each host's device op metrics db has its steps' own, and they add up.
        stats.compute_ms = (sum(float(d.ms(DEVICE_COMPUTE_16).sum()) for d in step_dbs),
                            sum(float(d.ms(DEVICE_COMPUTE_32).sum()) for d in step_dbs))
        stats.is_training = is_training(spaces[-1])  # XProf's combiner keeps the last host's (checked)
        if device is not None and device.tpu_steps is not None:
            stats.tpu_steps, stats.empty_intersect = device.tpu_steps, device.empty_intersect
    if device is not None:
        stats.device, stats.device_type, stats.hardware_type = device.db, device.device_type, device.hardware_type
        stats.device_core_count, stats.device_unknown = device.core_count, device.xla
    return stats


HOST_OP_STATS = ("input_pipeline_stage_id", "input_pipeline_stage_category", "is_eager", "tf_op")
INPUT_STAGE_STATS = ("input_pipeline_stage_name", "consumer_type", "consumer_id", "producer_type", "producer_id")


def _host_stat_names(steps: bool) -> list[str]:
    """Every stat host_op_metrics (and with steps host_step_db) reads of the host's events."""
    from profscope.models.formats.xspace import groups

    if not steps:
        return list(HOST_OP_STATS)
    return sorted({*HOST_OP_STATS, *INPUT_STAGE_STATS, *groups.GROUP_STATS, *groups.EXECUTOR_STATS,
                   *groups.NAME_STATS})


def _keep_host_stats(space: XSpaceData, names: list[str]) -> None:
    """The stats of the host's events, in one pass, where its decoding did not keep them; and its timed rows
    (made here, once, for the analyses on two threads)."""
    plane = space.plane_named(HOST_PLANE)
    if plane < 0:
        return
    rows = space.timed_rows(plane)
    if not (space.kept is not None and space.kept[0] == plane and set(names) <= space.kept[2].keys()):
        space.keep_stats(rows, plane, names)


def host_op_metrics(space: XSpaceData) -> OpMetricsDb:
    """XProf's ConvertHostThreadsXPlaneToOpMetricsDb."""
    plane = space.plane_named(HOST_PLANE)
    if plane < 0:  # no host threads: no host ops, not even IDLE
        none = np.zeros(0, np.int64)
        return OpMetricsDb([], [], none, none, none, np.zeros(0, bool))
    ev = space.events
    rows = space.timed_rows(plane)
    p = space.planes[plane]
    line_ids = np.array([ln.id for ln in space.lines], np.int64)
    derived = ((line_ids & 0xFFFFFFFF) - DERIVED_LINE_MIN) % (1 << 32) < DERIVED_LINE_COUNT
    if derived.any():  # rarely: the 2M-row filter costs a tenth of the analysis
        rows = rows[~derived[ev.line[rows]]]

    stat_names = [n for n in HOST_OP_STATS if p.stat_ids(n)]
    stats = space.stats(rows, plane, stat_names) if stat_names and len(rows) else {}
    md = _take(ev.metadata_id, rows)

    # The op of each event's key: its metadata id, or its tf.data stage id;
    # the first event met with a key names it (XProf's try_emplace).
    stage_op: dict[int, tuple[int, str, str]] = {}
    staged = np.zeros(len(rows), bool)
    key = md
    if "input_pipeline_stage_id" in stats:
        sid = stats["input_pipeline_stage_id"]
        key = md.astype(np.int64)
        key[sid.rows] = sid.ints_present()
        staged[sid.rows] = True
        if "input_pipeline_stage_category" in stats:
            cat = stats["input_pipeline_stage_category"]
            with_cat = np.intersect1d(sid.rows, cat.rows)
            codes, texts = space.string_codes(cat, np.searchsorted(cat.rows, with_cat), plane)
            for r, code_ in zip(with_cat.tolist(), codes.tolist()):
                name = p.event_metadata.get(int(md[r]), ("", "", []))[0]
                if name:
                    stage_op.setdefault(int(key[r]), (INPUT_PIPELINE, name, texts[code_]))
    ops: dict[int, tuple[int, str, str]] = {}
    first_rows: dict[int, int] = {}
    # Legacy ops by metadata id, with the first row of each id among unstaged events (needed where stages are).
    if staged.any():
        plain_md, plain_rows = _first_rows(md, ~staged)
    else:
        plain_md = _distinct(md)
        plain_rows = np.full(len(plain_md), -1, np.int64)
    for mid, r in zip(plain_md.tolist(), plain_rows.tolist()):
        name = p.event_metadata.get(mid, ("", "", []))[0]
        if name:
            op = parse_tf_op(name)
            if op[0] != UNKNOWN:
                ops[mid], first_rows[mid] = op, r
    if stage_op:
        staged_keys, staged_first = np.unique(key[staged], return_index=True)
        staged_rows = np.flatnonzero(staged)[staged_first]
        for k, r in zip(staged_keys.tolist(), staged_rows.tolist()):
            if k in stage_op and (k not in ops or r < first_rows[k]):
                ops[k] = stage_op[k]
    # Op instances: each event with an op by its key, then (a second op on the same event) by its tf_op stat.
    # Codes index `table`; op_metrics makes the instances from these.
    op_keys = np.array(sorted(ops), np.int64)
    code_of_key, keys = _key_codes(key, op_keys)
    del md, staged
    eager_at = np.zeros(0, np.int64)
    if "is_eager" in stats:
        e = stats.pop("is_eager")
        eager_at = e.rows[e.ints_present() != 0]
    names: dict[tuple[int, str, str], int] = {}
    extra_at, extra_code = np.zeros(0, np.int64), np.zeros(0, np.int32)
    if "tf_op" in stats:
        t = stats.pop("tf_op")
        text_codes, texts = space.string_codes(t, np.arange(len(t.rows)), plane)
        # Each distinct text parsed once; "" names no op.
        op_code = np.array([names.setdefault(parse_tf_op(x), len(names)) if x else -1 for x in texts], np.int64)
        extra_code = op_code[text_codes]
        has = extra_code >= 0
        extra_at, extra_code = t.rows[has], (len(op_keys) + extra_code[has]).astype(np.int32)
        del t, text_codes, has
    del stats
    table = [ops[k] for k in op_keys.tolist()] + list(names)

    # XProf keys metrics by (id, name): legacy ops have id 0, tf.data stages their stage id.
    uniq: dict[tuple[int, str], int] = {}
    op_ids = op_keys.tolist() + [0] * len(names)
    slot = np.array([uniq.setdefault((op_ids[i] if entry[0] == INPUT_PIPELINE else 0, entry[1]), len(uniq))
                     for i, entry in enumerate(table)], np.int64)
    typed = np.array([bool(entry[2]) for entry in table], np.uint8)
    # The op stack and, per op, its sums; XProf's insertion order (line by line, each op when it first ends
    # there) and its type (the first non-empty one it ends with); per line its ops' self time against their span.
    # In C, from the event columns, each line in XProf's order (start, then longest first).
    occurrences, time_ps, self_ps, is_eager, first_line, first_end, type_code, total, total_op = _op_metrics(
        space, rows, keys, code_of_key, extra_at, extra_code, eager_at, slot, typed, len(uniq))
    del keys, key
    category = [table[k][2] if k >= 0 else "" for k in type_code.tolist()]
    inv = {v: k for k, v in uniq.items()}
    met = np.flatnonzero(occurrences > 0)
    met = met[np.lexsort((first_end[met], first_line[met]))]
    return _db_of(
        [inv[i][1] for i in met.tolist()],
        [category[i] for i in met.tolist()],
        occurrences[met],
        time_ps[met],
        self_ps[met],
        is_eager[met].astype(bool),
        total,
        total_op,
    )


def _op_metrics(space: XSpaceData, rows, keys, code_of_key, extra_at, extra_code, eager_at, slot, typed, num_slots):
    """_steps.op_metrics of the rows (ascending), its lines in two halves on two threads: each line's ops are
    its own, and per slot the first half's first line and type come before the second half's."""
    ev = space.events
    line_ps = np.array([ln.timestamp_ns for ln in space.lines], np.int64) * 1000

    def run(ab: tuple[int, int]) -> tuple:
        a, b = ab
        x, e = slice(*np.searchsorted(extra_at, ab)), slice(*np.searchsorted(eager_at, ab))
        return _steps.op_metrics(rows[a:b], keys[a:b], code_of_key, extra_at[x] - a, extra_code[x], eager_at[e] - a,
                                 ev.line, ev.offset_ps, ev.duration_ps, line_ps, slot, typed, num_slots)

    starts = np.searchsorted(rows, space.line_rows)  # where each line's rows begin
    starts = starts[(starts > 0) & (starts < len(rows))]
    if not len(starts):
        return run((0, len(rows)))
    cut = int(starts[np.argmin(np.abs(starts - len(rows) // 2))])
    (o1, t1, s1, e1, line1, end1, type1, total1, op1), (o2, t2, s2, e2, line2, end2, type2, total2, op2) = in_threads(
        run, [(0, cut), (cut, len(rows))])
    first = line1 >= 0
    return (o1 + o2, t1 + t2, s1 + s2, e1 | e2, np.where(first, line1, line2), np.where(first, end1, end2),
            np.where(type1 >= 0, type1, type2), total1 + total2, op1 + op2)


def _distinct(ids: np.ndarray) -> np.ndarray:
    """The sorted distinct ids (small ones by a presence table: metadata ids are)."""
    if len(ids) and 0 <= int(ids.min()) and int(ids.max()) < 4 * len(ids) + (1 << 20):
        present = np.zeros(int(ids.max()) + 1, bool)
        present[ids] = True
        return np.flatnonzero(present)
    return np.unique(ids)


def _first_rows(ids: np.ndarray, where: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ids (of the rows where `where` holds) and the first row of each."""
    rows = np.flatnonzero(where)
    chosen = ids[rows]
    if len(chosen) and 0 <= int(chosen.min()) and int(chosen.max()) < 4 * len(chosen) + (1 << 20):
        first = np.full(int(chosen.max()) + 1, -1, np.int64)
        first[chosen[::-1]] = rows[::-1]  # the last write of each id is its first row
        distinct = np.flatnonzero(first >= 0)
        return distinct, first[distinct]
    distinct, at = np.unique(chosen, return_index=True)
    return distinct, rows[at]


def _key_codes(key: np.ndarray, op_keys: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
    """(code of each key value, the keys), or where the keys are too large for a table of them (None, each
    key's code): codes index op_keys (sorted), -1 for keys without an op."""
    if len(key) and len(op_keys) and 0 <= int(op_keys[0]) and int(op_keys[-1]) < 4 * len(key) + (1 << 20):
        table = np.full(int(op_keys[-1]) + 1, -1, np.int32)
        table[op_keys] = np.arange(len(op_keys), dtype=np.int32)
        return table, key
    codes = np.full(len(key), -1, np.int32)
    if len(op_keys):
        at = np.minimum(np.searchsorted(op_keys, key), len(op_keys) - 1)
        found = op_keys[at] == key
        codes[found] = at[found]
    return None, codes


def _db_of(name, category, occurrences, time_ps, self_ps, eager, total, total_op) -> OpMetricsDb:
    """A host db with XProf's IDLE row appended."""
    idle = total - total_op
    return OpMetricsDb(
        list(name) + [IDLE],
        list(category) + [IDLE],
        np.r_[np.asarray(occurrences, np.int64), 0],
        np.r_[np.asarray(time_ps, np.int64), idle],
        np.r_[np.asarray(self_ps, np.int64), idle],
        np.r_[np.asarray(eager, bool), False],
        total,
        total_op,
    )


def combine(dbs: list[OpMetricsDb]) -> OpMetricsDb:
    """XProf's OpMetricsDbCombiner over hosts: sums by (name), first category wins."""
    if len(dbs) == 1:
        return dbs[0]
    db = concatenate(dbs)
    names, first, occ, t, st, ea = sum_by(db.name, db)
    return OpMetricsDb(names, [db.category[i] for i in first.tolist()], occ, t, st, ea,
                       sum(d.total_time_ps for d in dbs), sum(d.total_op_time_ps for d in dbs))


def concatenate(dbs: list[OpMetricsDb], last_row: bool = True) -> OpMetricsDb:
    """The dbs' rows one after another (without each one's last, IDLE, row unless `last_row`); totals 0."""
    cut = [len(d) if last_row else max(len(d) - 1, 0) for d in dbs]
    return OpMetricsDb(
        [x for d, n in zip(dbs, cut) for x in d.name[:n]],
        [x for d, n in zip(dbs, cut) for x in d.category[:n]],
        np.concatenate([d.occurrences[:n] for d, n in zip(dbs, cut)]).astype(np.int64, copy=False),
        np.concatenate([d.time_ps[:n] for d, n in zip(dbs, cut)]).astype(np.int64, copy=False),
        np.concatenate([d.self_time_ps[:n] for d, n in zip(dbs, cut)]).astype(np.int64, copy=False),
        np.concatenate([d.is_eager[:n] for d, n in zip(dbs, cut)]).astype(bool, copy=False),
        provenance=[x for d, n in zip(dbs, cut) for x in (d.provenance or [""] * len(d))[:n]],
    )


def sum_by(keys: list, db: OpMetricsDb, most_occurrences: bool = False):
    """db's rows summed by key (one a row), keys in first-seen order: (the keys, each one's first row,
    occurrences (summed, or with `most_occurrences` the most of a row), time, self time, eager (any row))."""
    index: dict = {}
    slot = np.array([index.setdefault(k, len(index)) for k in keys], np.int64)
    n = len(index)
    first = np.full(n, len(keys), np.int64)
    np.minimum.at(first, slot, np.arange(len(keys), dtype=np.int64))
    occ, t, st = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, np.int64)
    (np.maximum if most_occurrences else np.add).at(occ, slot, db.occurrences)
    np.add.at(t, slot, db.time_ps)
    np.add.at(st, slot, db.self_time_ps)
    ea = np.zeros(n, bool)
    np.logical_or.at(ea, slot, db.is_eager)
    return list(index), first, occ, t, st, ea


# ---------------------------------------------------------------- steps

# XProf's EventType values (event_span.h): a higher value wins where events overlap.
UNKNOWN_TIME, HOST_COMPUTE, HOST_COMPILE, HOST_TO_HOST, HOST_TO_DEVICE, HOST_PREPARE = 0, 10, 60, 70, 80, 90
DEVICE_COLLECTIVES, HOST_WAIT_INPUT, DEVICE_TO_DEVICE, DEVICE_TO_HOST = 100, 110, 120, 130
DEVICE_COMPUTE_32, DEVICE_COMPUTE_16, DEVICE_WAIT_DEVICE, DEVICE_WAIT_HOST = 140, 150, 160, 170
# XProf (2.24's op stats options) drops a capture's first and last steps when it has more than this many.
DROP_INCOMPLETE_STEPS_OVER = 5
_NOT_REAL_COMPUTE = ("EagerExecute", "EagerLocalExecute", "EagerKernelExecute", "FunctionRun")


@dataclass
class StepDb:
    """XProf's step_db of a host without devices: the well-formed steps by
    group id, each with its name, span and time per EventType."""

    number: np.ndarray  # int64 group ids
    name: list[str]
    begin_ps: np.ndarray
    duration_ps: np.ndarray
    type_ps: dict[int, np.ndarray]  # EventType -> int64 per step

    def __len__(self) -> int:
        return len(self.number)

    def window(self, first: int, n: int) -> StepDb:
        """Steps first to first + n - 1."""
        cut = slice(first, first + n)
        return StepDb(self.number[cut], self.name[cut], self.begin_ps[cut], self.duration_ps[cut],
                      {t: v[cut] for t, v in self.type_ps.items()})

    def ms(self, *types: int) -> np.ndarray:
        """Time of some event types per step, in ms (XProf's PicoToMilli, summed as it sums)."""
        out = np.zeros(len(self), np.float64)
        for t in types:
            out = out + self.type_ps.get(t, np.zeros(len(self), np.int64)) / 1e9
        return out


def explicit_step_marker(name: str) -> bool:
    return name.startswith(("train", "test", "TraceContext")) and "/" not in name


def host_step_db(space: XSpaceData) -> StepDb:
    """XProf's ConvertHostThreadsXPlaneToStepEvents, ToNonOverlappedStepEvents
    and ConvertStepEventsToStepDb for a host without device planes: per step
    (group), the longest of its markers (explicit `train`/`test` events, or its
    root) is the step time; its events (classified by name) split it, where
    they overlap the highest EventType winning; the rest is UNKNOWN_TIME.
    Steps without host compute are dropped."""
    from profscope.models.formats.xspace.groups import group_events

    empty = StepDb(np.zeros(0, np.int64), [], np.zeros(0, np.int64), np.zeros(0, np.int64), {})
    plane = space.plane_named(HOST_PLANE)
    if plane < 0:
        return empty
    groups = group_events(space, plane)
    if not len(groups.roots):
        return empty
    ev = space.events
    rows, group, roots, names = groups.rows, groups.group, groups.roots, groups.names
    del groups
    # Per metadata id: is it a marker name, and its event type index (EventType / 10) if it is real compute.
    at, ids = _id_index(_take(ev.metadata_id, rows))
    marker_of = np.zeros(len(ids), bool)
    kind_of = np.full(len(ids), HOST_COMPUTE // 10, np.int8)  # ids without metadata: "", host compute
    metadata = space.planes[plane].event_metadata
    for mid, k in zip(*_positions(ids, list(metadata))):
        name = metadata[mid][0]
        if name:
            marker_of[k] = explicit_step_marker(name)
            compute = not name.startswith(_NOT_REAL_COMPUTE) and not marker_of[k]
            kind_of[k] = _cpu_event_type(name) // 10 if compute else -1
    root_at = np.searchsorted(rows, roots)
    marker = marker_of[at]
    marker[root_at] = True  # roots carry XProf's step_name: implicit markers
    kind = kind_of[at]  # -1: no compute (markers, XProf's not-real compute)
    kind[root_at] = -1
    del at
    if space.planes[plane].stat_ids("input_pipeline_stage_name"):
        grouped = np.flatnonzero(group >= 0)
        staged = grouped[_root_input_stages(space, plane, rows[grouped])]
        staged = staged[kind[staged] == HOST_COMPUTE // 10]
        kind[staged] = HOST_WAIT_INPUT // 10
        del grouped, staged

    n_groups = len(roots)
    # Step time: the longest marker (the first of equal ones, in line order).
    m = np.flatnonzero(marker & (group >= 0))
    del marker
    start = space.start_ps(rows[m])
    end = start + ev.duration_ps[rows[m]]
    order = np.lexsort((ev.line[rows[m]], start - end, group[m]))  # stable: file order among equals
    first = np.r_[True, group[m][order][1:] != group[m][order][:-1]] if len(order) else np.zeros(0, bool)
    best = order[first]
    step_begin = np.zeros(n_groups, np.int64)
    step_end = np.zeros(n_groups, np.int64)
    step_begin[group[m][best]] = start[best]
    step_end[group[m][best]] = end[best]
    del m, start, end

    # Time per event type within the step: XProf's sweep over the step's
    # event boundaries (in C), the highest type current where events overlap.
    line_ps = np.array([ln.timestamp_ns for ln in space.lines], np.int64) * 1000
    # The steps in two halves on two threads (host ops, on the other, end first).
    halves = [(0, n_groups // 2), (n_groups // 2, n_groups)]
    parts = in_threads(lambda h: _steps.step_sweep_rows(rows, ev.line, ev.offset_ps, ev.duration_ps, line_ps, kind,
                                                       group, step_begin[h[0]:h[1]], step_end[h[0]:h[1]], h[0]), halves)
    times, seen = np.concatenate([t for t, _ in parts]), np.concatenate([s_ for _, s_ in parts])
    return swept_step_db(times, seen, step_begin, step_end - step_begin, (HOST_COMPUTE,), names)


def _take(column: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """column[rows] of ascending distinct rows, a view when they are a range (the usual case: a plane's events
    without aggregated ones)."""
    if len(rows) and int(rows[-1]) - int(rows[0]) + 1 == len(rows):
        return column[int(rows[0]) : int(rows[-1]) + 1]
    return column[rows]


def swept_step_db(times: np.ndarray, seen: np.ndarray, begin_ps: np.ndarray, duration_ps: np.ndarray,
                  compute: tuple[int, ...], names: list[str] | None = None) -> StepDb:
    """The step db of a step sweep's time and presence per step and EventType (_steps.step_sweep): the rest
    of each step is UNKNOWN_TIME; steps without events of the `compute` types, or of no time, are dropped
    (XProf's well-formed steps), and with more than DROP_INCOMPLETE_STEPS_OVER the first and last too."""
    times[:, 0] += np.maximum(duration_ps - times.sum(axis=1), 0)
    type_ps = {10 * k: times[:, k] for k in range(times.shape[1]) if seen[:, k].any() or k == 0}
    keep = np.flatnonzero(seen[:, [t // 10 for t in compute]].any(axis=1) & (duration_ps > 0))
    if len(keep) > DROP_INCOMPLETE_STEPS_OVER:  # the first and last steps may be cut by the capture
        keep = keep[1:-1]
    return StepDb(keep.astype(np.int64), [names[i] for i in keep.tolist()] if names is not None else [""] * len(keep),
                  begin_ps[keep], duration_ps[keep], {t: v[keep] for t, v in type_ps.items()})


def _positions(sorted_ids: np.ndarray, ids: list[int]) -> tuple[list[int], list[int]]:
    """The ids found among sorted_ids, and where."""
    wanted = np.array(ids, np.int64)
    at = np.minimum(np.searchsorted(sorted_ids, wanted), max(len(sorted_ids) - 1, 0))
    found = sorted_ids[at] == wanted if len(sorted_ids) else np.zeros(len(wanted), bool)
    return wanted[found].tolist(), at[found].tolist()


def _id_index(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index, table ids): each id's index into the table of ids, for tables of values per id. Metadata ids
    are small (numbered from 1): then the ids themselves index a table of every id up to the largest."""
    if len(ids) and 0 <= int(ids.min()) and int(ids.max()) < 4 * len(ids) + (1 << 20):
        return ids, np.arange(int(ids.max()) + 1)
    if not len(ids):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    distinct, inverse = np.unique(ids, return_inverse=True)
    return inverse, distinct


def _cpu_event_type(name: str) -> int:
    """XProf's ClassifyCpuEvent for a host without devices."""
    category, _name, type_ = parse_tf_op(name)
    if type_.startswith("InfeedEnqueue") or category == MEMCPY and type_ == "MemcpyHToD":
        return HOST_TO_DEVICE
    if category == MEMCPY and type_ == "MemcpyHToH":
        return HOST_TO_HOST
    if name.lower().startswith("iteratorgetnext"):
        return HOST_WAIT_INPUT
    return HOST_COMPUTE


def _root_input_stages(space: XSpaceData, plane: int, rows: np.ndarray) -> np.ndarray:
    """Events that are tf.data input pipeline stages (input_pipeline_stage_name)
    not nested in another stage on their line nor consuming from one."""
    p = space.planes[plane]
    if not p.stat_ids("input_pipeline_stage_name"):
        return np.zeros(len(rows), bool)
    from profscope.models.data import _nesting

    stats = space.stats(rows, plane, list(INPUT_STAGE_STATS))
    stage = np.zeros(len(rows), bool)
    stage[stats["input_pipeline_stage_name"].rows] = True
    start = space.start_ps(rows)
    end = start + space.events.duration_ps[rows]
    line = space.events.line[rows]
    order = xprof_order(start, end, line)
    parent = _nesting.nest_parents(order, line, start, end, np.zeros(len(rows), bool))
    inside = np.zeros(len(rows), bool)
    # Descendants of a stage: walk up the parents (few levels).
    up = parent.copy()
    while (up >= 0).any():
        has = up >= 0
        inside[has] |= stage[up[has]]
        up[has] = parent[up[has]]
    pairs: set[tuple[int, int]] = set()
    pt, pi = stats["producer_type"], stats["producer_id"]
    both = np.intersect1d(pt.rows, pi.rows)
    pairs.update(zip(pt.at(both, True).tolist(), pi.at(both, True).tolist()))
    ct, ci = stats["consumer_type"], stats["consumer_id"]
    both = np.intersect1d(ct.rows, ci.rows)
    for r, k in zip(both.tolist(), zip(ct.at(both, True).tolist(), ci.at(both, True).tolist())):
        if k in pairs:
            inside[r] = True
    return stage & ~inside


# ---------------------------------------------------------------- HLO

def is_training(space: XSpaceData) -> bool:
    """XProf's ModelTracker over the XLA modules the XSpace holds (its
    metadata plane's `Hlo Proto` stats): TensorFlow gradient scopes or a JAX
    `transpose(` scope in an instruction's op_name mark training."""
    from profscope.models.core import _protowire as wire

    plane = space.plane_named("/host:metadata")
    if plane < 0:
        return False
    p = space.planes[plane]
    hlo_ids = set(p.stat_ids("Hlo Proto"))
    if not hlo_ids:
        return False
    try:
        for _mid, (_name, _display, spans) in sorted(p.event_metadata.items()):
            for o, n in spans:
                (stat_spans,) = wire.find_fields(space.buf, o, o + n, [5])  # XEventMetadata.stats
                for so, sn in stat_spans.tolist():
                    ids, values = wire.decode_messages(space.buf, np.array([[so, sn]], np.int64),
                                                       [(1, "i"), (6, "s")])
                    if int(ids[0]) not in hlo_ids or values[0][0] < 0:
                        continue
                    for op_type, op_name in _hlo_op_metadata(space.buf, int(values[0][0]), int(values[0][1])):
                        if training_op(op_name, op_type):
                            return True
    except ValueError as e:
        raise ProfileError(f"{space.path}: an XLA module's HloProto in {p.name} is not readable ({e})") from None
    return False


def _hlo_op_metadata(buf, o: int, n: int):
    """(op_type, op_name) of every instruction of an HloProto's module."""
    from profscope.models.core import _protowire as wire

    (module,) = wire.find_fields(buf, o, o + n, [1])
    for mo, mn in module.tolist():
        (computations,) = wire.find_fields(buf, mo, mo + mn, [3])
        if not len(computations):
            continue
        ((_owner, instructions),) = wire.find_children(buf, computations, [2])
        if not len(instructions):
            continue
        ((_owner, metadata),) = wire.find_children(buf, instructions, [7])
        if not len(metadata):
            continue
        types, names = wire.decode_messages(buf, metadata, [(1, "s"), (2, "s")])
        for t, nm in zip(types, names):
            yield span_text(buf, t), span_text(buf, nm)


def training_op(name: str, type_: str) -> bool:
    """XProf's ModelTracker.ProcessOp: does this (op_name, op_type) show training?"""
    if _TF_OP_TYPE.fullmatch(type_) and _TF_OP_NAME.fullmatch(name):
        for scope in name.split("/")[:-1]:
            if scope.startswith("gradient"):
                rest = scope[len("gradient"):]
                if rest == "_tape" or rest.startswith("s"):
                    return True
        return False
    jax = bool(name) and bool(_JAX_OP_TYPE.fullmatch(type_)) and type_ in name.split("/")[-1]
    if jax or not type_:
        return any(scope.startswith("transpose(") for scope in name.split("/"))
    return False
