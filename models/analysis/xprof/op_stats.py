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
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats.xspace import _steps
from profscope.models.formats.xspace.xplane import HOST_PLANE, XSpaceData, read_xspace, xprof_order

IDLE = "IDLE"
GPU_PLANE_PREFIX = "/device:GPU:"
TPU_PLANE_PREFIX = "/device:TPU:"
# XProf's derived lines (steps, launches, ...) have ids from 0xdeadbeef on; they hold no host ops.
DERIVED_LINE_MIN, DERIVED_LINE_COUNT = 0xDEADBEEF, 512

# Op categories of tsl's TfOp (ParseTfOpFullname).
UNKNOWN, TENSORFLOW, JAX, TF_DATA, INPUT_PIPELINE, MEMCPY = range(6)
_TF_OP_NAME = re.compile(r"[A-Za-z0-9.][A-Za-z0-9_./>-]*")
_TF_OP_TYPE = re.compile(r"[A-Z_][a-zA-Z0-9_]*")
_JAX_OP_TYPE = re.compile(r"[a-z_][a-z0-9_]*(\[.*\])?", re.S)
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

    def __len__(self) -> int:
        return len(self.name)


@dataclass
class OpStats:
    """The parts of XProf's OpStats the tools read."""

    host: OpMetricsDb
    device_type: str = "CPU"
    hardware_type: str = "CPU_ONLY"
    device_core_count: int = 0
    hostnames: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # the XSpaces' own, sorted and without repeats
    warnings: list[str] = field(default_factory=list)
    is_training: bool = False  # from the XLA modules (XProf's ModelTracker)
    steps: StepDb | None = None


def read_spaces(paths: list[Path], task: TaskState) -> list[XSpaceData]:
    if not paths:
        raise ProfileError("no xplane.pb to analyse")
    return [read_xspace(p, task) for p in paths]


def op_stats(paths: list[Path], task: TaskState, steps: bool = False) -> OpStats:
    """OpStats of one host's XSpace, or of several hosts combined (the step
    db, with `steps`: the first host's)."""
    spaces = read_spaces(paths, task)
    task.report(0.7, "Host ops")
    dbs = [host_op_metrics(s) for s in spaces]
    stats = OpStats(combine(dbs))
    first = spaces[0]
    stats.errors = sorted({e for s in spaces for e in s.errors})
    stats.warnings = sorted({w for s in spaces for w in s.warnings})
    if steps:
        task.report(0.85, "Steps")
        stats.steps = host_step_db(first)
        stats.is_training = any(is_training(s) for s in spaces)
    gpus = [p for p in first.planes if p.name.startswith(GPU_PLANE_PREFIX)]
    tpus = [p for p in first.planes if p.name.startswith(TPU_PLANE_PREFIX)]
    if gpus:
        stats.device_type, stats.hardware_type, stats.device_core_count = "GPU", "GPU", len(gpus)
    elif tpus:
        stats.device_type, stats.hardware_type, stats.device_core_count = "TPU", "TPU", len(tpus)
    return stats


def host_op_metrics(space: XSpaceData) -> OpMetricsDb:
    """XProf's ConvertHostThreadsXPlaneToOpMetricsDb."""
    plane = space.plane_named(HOST_PLANE)
    if plane < 0:  # no host threads: no host ops, not even IDLE
        none = np.zeros(0, np.int64)
        return OpMetricsDb([], [], none, none, none, np.zeros(0, bool))
    ev = space.events
    a, b = space.plane_rows(plane)
    rows = a + np.flatnonzero(~ev.aggregated[a:b])
    p = space.planes[plane]
    line_ids = np.array([ln.id for ln in space.lines], np.int64)
    derived = ((line_ids & 0xFFFFFFFF) - DERIVED_LINE_MIN) % (1 << 32) < DERIVED_LINE_COUNT
    rows = rows[~derived[ev.line[rows]]]

    stat_names = [n for n in ("input_pipeline_stage_id", "input_pipeline_stage_category", "is_eager", "tf_op")
                  if p.stat_ids(n)]
    stats = space.stats(rows, plane, stat_names) if stat_names and len(rows) else {}
    md = ev.metadata_id[rows].astype(np.int64)

    # The op of each event's key: its metadata id, or its tf.data stage id;
    # the first event met with a key names it (XProf's try_emplace).
    key = md.copy()
    stage_op: dict[int, tuple[int, str, str]] = {}
    staged = np.zeros(len(rows), bool)
    if "input_pipeline_stage_id" in stats:
        sid = stats["input_pipeline_stage_id"]
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
    # Legacy ops by metadata id, first row of each id among unstaged events.
    plain_md, first_at = np.unique(md[~staged], return_index=True)
    plain_rows = np.flatnonzero(~staged)[first_at]
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
    # Events with an op: their key's, then (as a second op) their tf_op stat's.
    op_keys = np.array(sorted(ops), np.int64)
    has_op = _found(key, op_keys)
    inst_rows = [np.flatnonzero(has_op)]
    inst_op = [key[inst_rows[0]]]
    inst_second = [np.zeros(len(inst_rows[0]), bool)]
    eager = np.zeros(len(rows), bool)
    if "is_eager" in stats:
        e = stats["is_eager"]
        eager[e.rows] = e.ints_present() != 0
    inst_eager = [eager[inst_rows[0]]]
    names: dict[tuple[int, str, str], int] = {}
    if "tf_op" in stats:
        t = stats["tf_op"]
        text_codes, texts = space.string_codes(t, np.arange(len(t.rows)), plane)
        # Each distinct text parsed once; "" names no op.
        op_code = np.array([names.setdefault(parse_tf_op(x), len(names)) if x else -1 for x in texts], np.int64)
        codes_arr = op_code[text_codes]
        has = codes_arr >= 0
        inst_rows.append(t.rows[has])
        inst_op.append(codes_arr[has])
        inst_second.append(np.ones(int(has.sum()), bool))
        inst_eager.append(np.zeros(int(has.sum()), bool))
    r_all = np.concatenate(inst_rows)
    second = np.concatenate(inst_second)
    op_all = np.concatenate(inst_op)
    eager_all = np.concatenate(inst_eager)
    # Each event's op, then its tf_op stat's, in the line's (XProf's) order.
    start = space.start_ps(rows[r_all])
    end = start + ev.duration_ps[rows[r_all]]
    line = ev.line[rows[r_all]]
    order = np.lexsort((second, r_all))
    perm = xprof_order(start[order], end[order], line[order])
    if perm is not None:
        order = order[perm]
    r_all, second, op_all, eager_all = r_all[order], second[order], op_all[order], eager_all[order]
    start, end, line = start[order], end[order], line[order]
    counted, children = _steps.op_stack(start, end, line.astype(np.int32))
    counted = counted.astype(bool)

    # Ops as (kind, code): kind 0 = by key (ops dict), 1 = by tf_op stat (names).
    table = [ops[k] for k in op_keys.tolist()] + list(names)
    code = np.where(second, len(op_keys) + op_all, np.searchsorted(op_keys, op_all))
    op_id = np.array([k for k in op_keys.tolist()] + [0] * len(names), np.int64)
    ident = [(int(op_id[i]) if table[i][0] == INPUT_PIPELINE else 0, table[i][1]) for i in range(len(table))]
    # XProf keys metrics by (id, name): legacy ops have id 0.
    uniq: dict[tuple[int, str], int] = {}
    slot = np.array([uniq.setdefault(k, len(uniq)) for k in ident], np.int64) if ident else np.zeros(0, np.int64)

    dur = end - start
    c = counted
    ops_slot = slot[code[c]] if len(slot) else np.zeros(0, np.int64)
    n = len(uniq)
    occurrences = np.bincount(ops_slot, minlength=n).astype(np.int64)
    time_ps, self_ps = _exact_sums(ops_slot, dur[c], n), _exact_sums(ops_slot, (dur - children)[c], n)
    is_eager = np.zeros(n, bool)
    np.logical_or.at(is_eager, ops_slot, eager_all[c])

    # Per line: the span of its ops (first begin to last end) against their self time.
    lines_present, line_idx = np.unique(line, return_inverse=True)
    first_begin = np.full(len(lines_present), np.iinfo(np.int64).max)
    np.minimum.at(first_begin, line_idx, start)
    last_end = np.full(len(lines_present), np.iinfo(np.int64).min)
    np.maximum.at(last_end, line_idx, end)
    line_op = _exact_sums(line_idx[c], (dur - children)[c], len(lines_present))
    line_total = np.maximum(line_op, last_end - first_begin)
    total_op = int(line_op.sum())
    total = int(line_total.sum())

    # XProf's insertion order: line by line, each op when it ends first.
    first_end = np.full(n, np.iinfo(np.int64).max)
    pos = np.arange(len(c))[c]
    rank = np.lexsort((pos, end[c], line[c]))
    seen = np.empty(len(rank), np.int64)
    seen[rank] = np.arange(len(rank))
    np.minimum.at(first_end, ops_slot, seen)
    # An op's type: the first non-empty one it ends with (XProf sets an empty category again).
    category = [""] * n
    typed = np.array([bool(entry[2]) for entry in table], bool)
    ended = code[c][rank]
    ended_slot = ops_slot[rank][typed[ended]] if len(typed) else np.zeros(0, np.int64)
    slots, first = np.unique(ended_slot, return_index=True)
    for s_, ci in zip(slots.tolist(), ended[typed[ended]][first].tolist() if len(typed) else []):
        category[s_] = table[ci][2]
    inv = {v: k for k, v in uniq.items()}
    met = np.flatnonzero(occurrences > 0)
    met = met[np.argsort(first_end[met], kind="stable")]
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


def _exact_sums(index: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """int64 sums by index (bincount's float weights lose picoseconds past 2**53)."""
    out = np.zeros(n, np.int64)
    np.add.at(out, index, values.astype(np.int64))
    return out


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
    index: dict[str, int] = {}
    cats: list[str] = []
    occ: list[int] = []
    t: list[int] = []
    st: list[int] = []
    ea: list[bool] = []
    for db in dbs:
        for i, name in enumerate(db.name):
            k = index.setdefault(name, len(index))
            if k == len(cats):
                cats.append(db.category[i])
                occ.append(0)
                t.append(0)
                st.append(0)
                ea.append(False)
            occ[k] += int(db.occurrences[i])
            t[k] += int(db.time_ps[i])
            st[k] += int(db.self_time_ps[i])
            ea[k] = ea[k] or bool(db.is_eager[i])
    return OpMetricsDb(list(index), cats, np.array(occ, np.int64), np.array(t, np.int64), np.array(st, np.int64),
                       np.array(ea, bool), sum(d.total_time_ps for d in dbs), sum(d.total_op_time_ps for d in dbs))


def _found(a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    if not len(sorted_b):
        return np.zeros(len(a), bool)
    i = np.minimum(np.searchsorted(sorted_b, a), len(sorted_b) - 1)
    return sorted_b[i] == a


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
    rows, group = groups.rows[grouped], groups.group[grouped].astype(np.int64)
    md = ev.metadata_id[rows].astype(np.int64)
    start = space.start_ps(rows)
    end = start + ev.duration_ps[rows]
    # Per metadata id: is it a marker name, real compute, and its event type.
    ids = np.unique(md)
    marker_of = np.zeros(len(ids), bool)
    compute_of = np.zeros(len(ids), bool)
    type_of = np.zeros(len(ids), np.int64)
    for k, mid in enumerate(ids.tolist()):
        name = p.event_metadata.get(mid, ("", "", []))[0]
        marker_of[k] = explicit_step_marker(name)
        compute_of[k] = not name.startswith(_NOT_REAL_COMPUTE) and not marker_of[k]
        type_of[k] = _cpu_event_type(name)
    at = np.searchsorted(ids, md)
    is_root = np.zeros(len(rows), bool)
    is_root[np.searchsorted(rows, groups.roots)] = True  # roots carry XProf's step_name: implicit markers
    marker = marker_of[at] | is_root
    compute = compute_of[at] & ~marker
    etype = type_of[at]
    staged = _root_input_stages(space, plane, rows)
    etype = np.where(staged & (etype == HOST_COMPUTE), HOST_WAIT_INPUT, etype)

    n_groups = len(groups.roots)
    # Step time: the longest marker (the first of equal ones, in line order).
    m = np.flatnonzero(marker)
    dur = end[m] - start[m]
    order = np.lexsort((ev.line[rows[m]], -dur, group[m]))  # stable: file order among equals
    first = np.r_[True, group[m][order][1:] != group[m][order][:-1]] if len(order) else np.zeros(0, bool)
    best = m[order[first]]
    step_begin = np.zeros(n_groups, np.int64)
    step_end = np.zeros(n_groups, np.int64)
    step_begin[group[best]] = start[best]
    step_end[group[best]] = end[best]

    # Time per event type within the step: XProf's sweep over the step's
    # event boundaries (in C), the highest type current where events overlap.
    c = np.flatnonzero(compute)
    by_step = c[np.argsort(group[c], kind="stable")]
    times, seen = _steps.step_sweep(start[by_step], end[by_step], etype[by_step].astype(np.int32),
                                    group[by_step], step_begin, step_end)
    duration = step_end - step_begin
    times[:, 0] += np.maximum(duration - times.sum(axis=1), 0)  # the rest of the step: UNKNOWN_TIME
    type_ps = {10 * k: times[:, k] for k in range(times.shape[1]) if seen[:, k].any() or k == 0}
    well_formed = seen[:, HOST_COMPUTE // 10].astype(bool) & (duration > 0)  # XProf skips steps of no time
    keep = np.flatnonzero(well_formed)
    if len(keep) > DROP_INCOMPLETE_STEPS_OVER:  # the first and last steps may be cut by the capture
        keep = keep[1:-1]
    return StepDb(keep.astype(np.int64), [groups.names[i] for i in keep.tolist()], step_begin[keep], duration[keep],
                  {t: v[keep] for t, v in type_ps.items()})


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

    stats = space.stats(rows, plane, ["input_pipeline_stage_name", "consumer_type", "consumer_id",
                                      "producer_type", "producer_id"])
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
    for _mid, (_name, _display, spans) in sorted(p.event_metadata.items()):
        for o, n in spans:
            (stat_spans,) = wire.find_fields(space.buf, o, o + n, [5])  # XEventMetadata.stats
            for so, sn in stat_spans.tolist():
                ids, values = wire.decode_messages(space.buf, np.array([[so, sn]], np.int64), [(1, "i"), (6, "s")])
                if int(ids[0]) not in hlo_ids or values[0][0] < 0:
                    continue
                for op_type, op_name in _hlo_op_metadata(space.buf, int(values[0][0]), int(values[0][1])):
                    if training_op(op_name, op_type):
                        return True
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
            yield _text_at(buf, t), _text_at(buf, nm)


def _text_at(buf, span) -> str:
    o, n = int(span[0]), int(span[1])
    return bytes(buf[o : o + n]).decode("utf-8", "replace") if o >= 0 else ""


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
