"""XProf's device op metrics of TensorCore planes (ConvertTpuDeviceTraceXPlaneToOpMetricsDb as XProf 2.24.2
gives them): the `XLA Ops` line's events whose metadata names their program_id and symbol_id, one row per
(program, symbol): the HLO op's name, its category (hlo_category), framework op (tf_op), occurrences, time, self
time (less the ops directly inside it) and FLOPs and bytes (the metadata's per-run flops and bytes_accessed
times the runs). The device's time is each core's span (steps and ops), IDLE the rest. These are per-op
metadata of the TPU profiler, not XLA's cost analysis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from profscope.models.analysis.xprof.tpu_steps import OP_LINE, STEP_LINE, _line_rows, _self_times, tensor_cores
from profscope.models.formats.xspace.xplane import XSpaceData, span_text


@dataclass
class TpuOps:
    """One row per (program id, symbol id), first-seen order, and the device's time."""

    name: list[str]
    category: list[str]
    framework: list[str]  # tf_op ("" when the metadata has none)
    occurrences: np.ndarray
    time_ps: np.ndarray
    self_ps: np.ndarray
    flops: np.ndarray  # float64
    bytes: np.ndarray  # float64
    total_ps: int = 0

    @property
    def op_ps(self) -> int:
        return int(self.self_ps.sum())


def _metadata(space: XSpaceData, plane: int, mids: list[int]) -> dict[int, dict[str, object]]:
    """The named stats of event metadata (program_id, symbol_id, hlo_category, tf_op, flops, bytes_accessed)."""
    from profscope.models.core import _protowire as wire

    p = space.planes[plane]
    out: dict[int, dict[str, object]] = {}
    for mid in mids:
        found: dict[str, object] = {}
        for o, n in p.event_metadata.get(mid, ("", "", []))[2]:
            (stats,) = wire.find_fields(space.buf, o, o + n, [5])  # XEventMetadata.stats
            if not len(stats):
                continue
            fields = [(1, "i"), (3, "i"), (4, "i"), (7, "i"), (5, "s"), (2, "d")]
            for sid, u, i, ref, text, dbl in zip(*wire.decode_messages(space.buf, stats, fields)):
                name = p.stat_names.get(int(sid), "")
                if name in ("hlo_category", "tf_op"):
                    found[name] = p.stat_names.get(int(ref), "") if ref else span_text(space.buf, text)
                elif name in ("program_id", "symbol_id", "flops", "bytes_accessed"):
                    found[name] = int(u) or int(i) or float(dbl)
        out[mid] = found
    return out


def tpu_op_metrics(spaces: list[XSpaceData]) -> TpuOps:
    keys: dict[tuple[int, int], int] = {}
    name: list[str] = []
    category: list[str] = []
    framework: list[str] = []
    per_run: list[tuple[float, float]] = []
    slots, durations, selfs = [], [], []
    total = 0
    for space in spaces:
        for plane in tensor_cores(space):
            ops = _line_rows(space, plane, OP_LINE)
            span_rows = np.concatenate([_line_rows(space, plane, STEP_LINE), ops])
            if len(span_rows):
                b = space.start_ps(span_rows)
                total += int((b + space.events.duration_ps[span_rows].astype(np.int64)).max() - b.min())
            if not len(ops):
                continue
            begin = space.start_ps(ops)
            end = begin + space.events.duration_ps[ops].astype(np.int64)
            own = _self_times(begin, end)
            mids = space.events.metadata_id[ops].astype(np.int64)
            meta = _metadata(space, plane, np.unique(mids).tolist())
            slot = np.full(len(ops), -1, np.int64)
            for k, mid in enumerate(mids.tolist()):
                m = meta[mid]
                if "program_id" not in m or "symbol_id" not in m:
                    continue  # XProf's op metrics need both
                key = (int(m["program_id"]), int(m["symbol_id"]))  # type: ignore[call-overload]
                if key not in keys:
                    keys[key] = len(keys)
                    name.append(space.planes[plane].event_metadata.get(mid, ("", "", []))[0])
                    category.append(str(m.get("hlo_category", "")))
                    framework.append(str(m.get("tf_op", "")))
                    per_run.append((float(m.get("flops", 0)), float(m.get("bytes_accessed", 0))))  # type: ignore
                slot[k] = keys[key]
            kept = slot >= 0
            slots.append(slot[kept])
            durations.append((end - begin)[kept])
            selfs.append(own[kept])
    n = len(keys)
    slot = np.concatenate(slots) if slots else np.zeros(0, np.int64)
    occurrences = np.bincount(slot, minlength=n).astype(np.int64)
    time_ps = np.bincount(slot, weights=np.concatenate(durations) if durations else None, minlength=n).astype(np.int64)
    self_ps = np.bincount(slot, weights=np.concatenate(selfs) if selfs else None, minlength=n).astype(np.int64)
    runs = np.array(per_run, np.float64).reshape(-1, 2)
    return TpuOps(name, category, framework, occurrences, time_ps, self_ps, runs[:, 0] * occurrences,
                  runs[:, 1] * occurrences, total)


def framework_rows(ops: TpuOps) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """XProf's framework-op view of the device ops (CreateTfMetricsDbFromDeviceOpMetricsDb, IDLE left out):
    per framework op (tf_op; the HLO op's name where there is none), first-seen order: (names, occurrences (the
    most of its ops'), time, self time, FLOPs)."""
    index: dict[str, int] = {}
    slot = np.array([index.setdefault(f or nm, len(index)) for f, nm in zip(ops.framework, ops.name)], np.int64)
    n = len(index)
    occurrences = np.zeros(n, np.int64)
    np.maximum.at(occurrences, slot, ops.occurrences)
    return (list(index), occurrences, np.bincount(slot, ops.time_ps, n), np.bincount(slot, ops.self_ps, n),
            np.bincount(slot, ops.flops, n))
