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

import numpy as np

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats.xspace import _steps
from profscope.models.formats.xspace.groups import in_sorted
from profscope.models.formats.xspace.xplane import (
    HOST_PLANE,
    XSpaceData,
    heap_reuse,
    read_xspace,
    span_text,
    xprof_order,
)

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
    steps: StepDb | None = None  # the first host's steps (as many as every host has)
    step_ps: np.ndarray | None = None  # per step, the longest of the hosts' (XProf's step time summary)
    host_count: int = 1  # distinct host names
    task_count: int = 1  # XSpaces
    device: OpMetricsDb | None = None  # the device planes' op metrics (device_op_metrics.py), by framework op
    device_unknown: str = ""  # why the device's op metrics are not computed, if they are not


def read_spaces(paths: list[Path], task: TaskState) -> list[XSpaceData]:
    if not paths:
        raise ProfileError("no xplane.pb to analyse")
    return [read_xspace(p, task) for p in paths]


def op_stats(paths: list[Path], task: TaskState, steps: bool = False) -> OpStats:
    """OpStats of one host's XSpace, or of several hosts combined (the step
    db, with `steps`: the first host's). The last one computed is kept while
    its files are unchanged: the window asks for several tools of a host."""
    try:
        key = tuple((str(p), st.st_mtime_ns, st.st_size) for p in paths for st in [Path(p).stat()])
    except OSError:
        key = None
    with _last_lock:
        last = _last.get(key) if key else None
    if last is not None and (last.steps is not None or not steps):
        return last
    with heap_reuse():
        stats = _op_stats(paths, task, steps)
    if key:
        with _last_lock:
            _last.clear()
            _last[key] = stats
    return stats


_last: dict = {}  # files' (path, mtime, size) -> their OpStats: the last computed
_last_lock = threading.Lock()


def device_planes(space: XSpaceData) -> list[str]:
    return [p.name for p in space.planes if p.name.startswith((GPU_PLANE_PREFIX, TPU_PLANE_PREFIX))]


def _op_stats(paths: list[Path], task: TaskState, steps: bool) -> OpStats:
    spaces = read_spaces(paths, task)
    device = None
    if any(device_planes(s) for s in spaces):
        from profscope.models.analysis.xprof import device_op_metrics

        device = device_op_metrics.device_stats(spaces, paths, steps)
    task.report(0.7, "Host ops")
    if steps:  # host ops and step groups read stats of the same events: one pass over them for both
        for s in spaces:
            _keep_host_stats(s)
    dbs = [host_op_metrics(s) for s in spaces]
    stats = OpStats(combine(dbs))
    stats.errors = sorted({e for s in spaces for e in s.errors})
    stats.warnings = sorted({w for s in spaces for w in s.warnings})
    stats.task_count = len(spaces)
    stats.host_count = len({(s.hostnames or ["localhost"])[0] for s in spaces})
    if steps:
        task.report(0.85, "Steps")
        # A GPU host's steps are its device's (device_op_metrics.gpu_step_db); otherwise the host's.
        step_dbs = device.steps if device is not None and device.steps is not None else [
            host_step_db(s) for s in spaces]
        for s in spaces:
            s.kept = None
        # XProf combines hosts' steps in order (as many as each has): the rows are the first host's, the step
        # time summary takes each step's longest.
        n = min(len(d) for d in step_dbs)
        stats.steps = step_dbs[0].first(n)
        stats.step_ps = np.max([d.duration_ps[:n] for d in step_dbs], axis=0) if n else np.zeros(0, np.int64)
        stats.is_training = any(is_training(s) for s in spaces)
    if device is not None:
        stats.device, stats.device_type, stats.hardware_type = device.db, device.device_type, device.hardware_type
        stats.device_core_count, stats.device_unknown = device.core_count, device.xla
    return stats


HOST_OP_STATS = ("input_pipeline_stage_id", "input_pipeline_stage_category", "is_eager", "tf_op")
INPUT_STAGE_STATS = ("input_pipeline_stage_name", "consumer_type", "consumer_id", "producer_type", "producer_id")


def _keep_host_stats(space: XSpaceData) -> None:
    """Every stat host_op_metrics and host_step_db read of the host's events, in one pass."""
    from profscope.models.formats.xspace import groups

    plane = space.plane_named(HOST_PLANE)
    if plane >= 0:
        a, b = space.plane_rows(plane)
        names = {*HOST_OP_STATS, *INPUT_STAGE_STATS, *groups.GROUP_STATS, *groups.EXECUTOR_STATS, *groups.NAME_STATS}
        rows = np.flatnonzero(~space.events.aggregated[a:b])
        rows += a
        space.keep_stats(rows, plane, sorted(names))


def host_op_metrics(space: XSpaceData) -> OpMetricsDb:
    """XProf's ConvertHostThreadsXPlaneToOpMetricsDb."""
    plane = space.plane_named(HOST_PLANE)
    if plane < 0:  # no host threads: no host ops, not even IDLE
        none = np.zeros(0, np.int64)
        return OpMetricsDb([], [], none, none, none, np.zeros(0, bool))
    ev = space.events
    a, b = space.plane_rows(plane)
    rows = np.flatnonzero(~ev.aggregated[a:b])
    rows += a
    p = space.planes[plane]
    line_ids = np.array([ln.id for ln in space.lines], np.int64)
    derived = ((line_ids & 0xFFFFFFFF) - DERIVED_LINE_MIN) % (1 << 32) < DERIVED_LINE_COUNT
    if derived.any():  # rarely: the 2M-row filter costs a tenth of the analysis
        rows = rows[~derived[ev.line[rows]]]

    stat_names = [n for n in HOST_OP_STATS if p.stat_ids(n)]
    stats = space.stats(rows, plane, stat_names) if stat_names and len(rows) else {}
    md = ev.metadata_id[rows]

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
    # Legacy ops by metadata id, with the first row of each id among unstaged events.
    plain_md, plain_rows = _first_rows(md, ~staged if staged.any() else None)
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
    # Op instances: each event with an op by its key, then (a second op on
    # the same event) by its tf_op stat. Codes index `table`.
    op_keys = np.array(sorted(ops), np.int64)
    inst, code = _keyed(key, op_keys)
    del key, md, staged
    eager = np.zeros(len(inst), bool)
    if "is_eager" in stats:
        e = stats.pop("is_eager")
        at = np.minimum(np.searchsorted(inst, e.rows), max(len(inst) - 1, 0))
        hit = inst[at] == e.rows if len(inst) else np.zeros(0, bool)
        eager[at[hit]] = e.ints_present()[hit] != 0
    names: dict[tuple[int, str, str], int] = {}
    if "tf_op" in stats:
        t = stats.pop("tf_op")
        text_codes, texts = space.string_codes(t, np.arange(len(t.rows)), plane)
        tf_op_rows = t.rows
        del t
        # Each distinct text parsed once; "" names no op.
        op_code = np.array([names.setdefault(parse_tf_op(x), len(names)) if x else -1 for x in texts], np.int64)
        extra_code = op_code[text_codes]
        has = extra_code >= 0
        if has.any():
            # Interleaved after their event's own op, in file order.
            both = np.concatenate([inst, tf_op_rows[has]])
            second = np.r_[np.zeros(len(inst), bool), np.ones(int(has.sum()), bool)]
            order = np.lexsort((second, both))
            inst = both[order]
            code = np.r_[code, (len(op_keys) + extra_code[has]).astype(np.int32)][order]
            eager = np.r_[eager, np.zeros(int(has.sum()), bool)][order]
            del both, second, order
        del text_codes, extra_code, has, tf_op_rows
    del stats
    table = [ops[k] for k in op_keys.tolist()] + list(names)

    # XProf's order within each line (start, then longest first), then its op stack.
    events = rows[inst]
    del inst
    start = space.start_ps(events)
    end = start + ev.duration_ps[events]
    line = ev.line[events]
    del events
    perm = xprof_order(start, end, line)
    if perm is not None:
        start, end, line, code, eager = start[perm], end[perm], line[perm], code[perm], eager[perm]
        del perm
    counted, children = _steps.op_stack(start, end, line)
    c = counted.astype(bool)
    del counted
    dur = end - start
    self_time = np.where(c, dur - children, 0)
    del children

    # XProf keys metrics by (id, name): legacy ops have id 0, tf.data stages their stage id.
    uniq: dict[tuple[int, str], int] = {}
    op_ids = op_keys.tolist() + [0] * len(names)
    slot = np.array([uniq.setdefault((op_ids[i] if entry[0] == INPUT_PIPELINE else 0, entry[1]), len(uniq))
                     for i, entry in enumerate(table)], np.int64)
    n = len(uniq)
    ops_slot = slot[code[c]] if len(slot) else np.zeros(0, np.int64)
    occurrences = np.bincount(ops_slot, minlength=n).astype(np.int64)
    time_ps, self_ps = _exact_sums(ops_slot, dur[c], n), _exact_sums(ops_slot, self_time[c], n)
    is_eager = np.bincount(ops_slot[eager[c]], minlength=n) > 0

    # Per line (contiguous): its ops' span, first begin to last end, against their self time.
    total = total_op = 0
    if len(line):
        cuts = np.r_[0, np.flatnonzero(line[1:] != line[:-1]) + 1]
        line_op = np.add.reduceat(self_time, cuts)
        span = np.maximum.reduceat(end, cuts) - np.minimum.reduceat(start, cuts)
        total_op, total = int(line_op.sum()), int(np.maximum(line_op, span).sum())

    # XProf's insertion order: line by line, each op when it first ends
    # there; an op's type: the first non-empty one it ends with.
    lines_c, ends_c, codes_c = line[c], end[c], code[c]
    first_at = np.full(n, -1, np.int64)
    first_at[ops_slot[::-1]] = np.arange(len(ops_slot) - 1, -1, -1)  # lines come in order: the first is the lowest
    first_line = np.where(first_at >= 0, lines_c[np.maximum(first_at, 0)] if len(lines_c) else 0, 2**31)
    in_first = lines_c == first_line[ops_slot]
    first_end = np.full(n, np.iinfo(np.int64).max, np.int64)
    np.minimum.at(first_end, ops_slot[in_first], ends_c[in_first])
    category = _first_types(table, ops_slot, codes_c, lines_c, ends_c, n)
    inv = {v: k for k, v in uniq.items()}
    met = np.flatnonzero(occurrences > 0)
    met = met[np.lexsort((first_end[met], first_line[met]))]
    return _db_of(
        [inv[i][1] for i in met.tolist()],
        [category[i] for i in met.tolist()],
        occurrences[met],
        time_ps[met],
        self_ps[met],
        is_eager[met],
        total,
        total_op,
    )


def _first_rows(ids: np.ndarray, where: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ids (of the rows where `where` holds) and the first row of each."""
    rows = np.arange(len(ids)) if where is None else np.flatnonzero(where)
    chosen = ids if where is None else ids[rows]
    if len(chosen) and 0 <= int(chosen.min()) and int(chosen.max()) < 4 * len(chosen) + (1 << 20):
        first = np.full(int(chosen.max()) + 1, -1, np.int64)
        first[chosen[::-1]] = rows[::-1]  # the last write of each id is its first row
        distinct = np.flatnonzero(first >= 0)
        return distinct, first[distinct]
    distinct, at = np.unique(chosen, return_index=True)
    return distinct, rows[at]


def _keyed(key: np.ndarray, op_keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The rows whose key is one of op_keys (sorted), and its index there (int32)."""
    if len(key) and len(op_keys) and 0 <= int(op_keys[0]) and int(op_keys[-1]) < 4 * len(key) + (1 << 20) \
            and 0 <= int(key.min()):
        lookup = np.full(max(int(key.max()), int(op_keys[-1])) + 1, -1, np.int32)
        lookup[op_keys] = np.arange(len(op_keys), dtype=np.int32)
        code = lookup[key]
        inst = np.flatnonzero(code >= 0)
        return inst, code[inst]
    inst = np.flatnonzero(in_sorted(key, op_keys))
    return inst, np.searchsorted(op_keys, key[inst]).astype(np.int32)


def _first_types(table, slot: np.ndarray, code: np.ndarray, line: np.ndarray, end: np.ndarray, n: int) -> list[str]:
    """Each op's first non-empty type in (line, end) order: most ops have
    one type, and only those with several are ordered."""
    typed = np.array([bool(entry[2]) for entry in table], bool)
    out = [""] * n
    if not len(slot):
        return out
    keep = typed[code]
    slot, code, line, end = slot[keep], code[keep], line[keep], end[keep]
    lo = np.full(n, np.iinfo(np.int32).max, np.int64)
    hi = np.full(n, -1, np.int64)
    wide = code.astype(np.int64)  # ufunc.at casting int32 into int64 takes its slow path: 20x slower
    np.minimum.at(lo, slot, wide)
    np.maximum.at(hi, slot, wide)
    del wide
    for s_ in np.flatnonzero(hi >= 0).tolist():
        out[s_] = table[int(lo[s_])][2]
    mixed = np.flatnonzero((hi >= 0) & (lo != hi))
    if len(mixed):
        sel = np.flatnonzero(in_sorted(slot, mixed))
        order = sel[np.lexsort((sel, end[sel], line[sel]))]
        slots, first = np.unique(slot[order], return_index=True)
        for s_, ci in zip(slots.tolist(), code[order][first].tolist()):
            out[s_] = table[ci][2]
    return out


def _exact_sums(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """int64 sums by index, by bincount (float weights) of the values' high
    and low 26 bits: each partial sum stays exact below 2**53."""
    values = values.astype(np.int64, copy=False)
    high = np.bincount(index, weights=values >> 26, minlength=n).astype(np.int64)
    low = np.bincount(index, weights=values & ((1 << 26) - 1), minlength=n).astype(np.int64)
    return (high << 26) + low


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

    def first(self, n: int) -> StepDb:
        return StepDb(self.number[:n], self.name[:n], self.begin_ps[:n], self.duration_ps[:n],
                      {t: v[:n] for t, v in self.type_ps.items()})

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
    p = space.planes[plane]
    grouped = np.flatnonzero(groups.group >= 0)
    rows, group = groups.rows[grouped], groups.group[grouped]
    roots, names = groups.roots, groups.names
    del grouped, groups
    # Per metadata id: is it a marker name, real compute, and its event type.
    md = ev.metadata_id[rows]
    ids, at = _dense_ids(md)
    del md
    marker_of = np.zeros(len(ids), bool)
    compute_of = np.zeros(len(ids), bool)
    type_of = np.zeros(len(ids), np.int32)
    for k, mid in enumerate(ids.tolist()):
        name = p.event_metadata.get(mid, ("", "", []))[0]
        marker_of[k] = explicit_step_marker(name)
        compute_of[k] = not name.startswith(_NOT_REAL_COMPUTE) and not marker_of[k]
        type_of[k] = _cpu_event_type(name)
    marker = marker_of[at]
    marker[np.searchsorted(rows, roots)] = True  # roots carry XProf's step_name: implicit markers
    compute = compute_of[at] & ~marker
    etype = type_of[at]
    del at
    staged = _root_input_stages(space, plane, rows)
    etype[staged & (etype == HOST_COMPUTE)] = HOST_WAIT_INPUT
    del staged

    n_groups = len(roots)
    # Step time: the longest marker (the first of equal ones, in line order).
    m = np.flatnonzero(marker)
    start = space.start_ps(rows[m])
    end = start + ev.duration_ps[rows[m]]
    order = np.lexsort((ev.line[rows[m]], start - end, group[m]))  # stable: file order among equals
    first = np.r_[True, group[m][order][1:] != group[m][order][:-1]] if len(order) else np.zeros(0, bool)
    best = order[first]
    step_begin = np.zeros(n_groups, np.int64)
    step_end = np.zeros(n_groups, np.int64)
    step_begin[group[m][best]] = start[best]
    step_end[group[m][best]] = end[best]
    del marker, m, start, end

    # Time per event type within the step: XProf's sweep over the step's
    # event boundaries (in C), the highest type current where events overlap.
    c = np.flatnonzero(compute)
    del compute
    steps_of = group[c]
    c = c[np.argsort(steps_of.astype(np.uint16) if n_groups <= 1 << 16 else steps_of, kind="stable")]  # radix sort
    del steps_of
    types, step_of, events = etype[c], group[c].astype(np.int64), rows[c]
    del c, etype, group, rows
    start = space.start_ps(events)
    end = start + ev.duration_ps[events]
    del events
    times, seen = _steps.step_sweep(start, end, types, step_of, step_begin, step_end)
    del start, end, types, step_of
    return swept_step_db(times, seen, step_begin, step_end - step_begin, (HOST_COMPUTE,), names)


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


def _dense_ids(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """np.unique(ids, return_inverse=True), by a lookup table when the ids
    are small (metadata ids are: numbered from 1)."""
    if len(ids) and 0 <= int(ids.min()) and int(ids.max()) < 4 * len(ids) + (1 << 20):
        present = np.zeros(int(ids.max()) + 1, bool)
        present[ids] = True
        distinct = np.flatnonzero(present)
        index = np.zeros(len(present), np.int64)
        index[distinct] = np.arange(len(distinct))
        return distinct, index[ids]
    if not len(ids):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    return np.unique(ids, return_inverse=True)


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
