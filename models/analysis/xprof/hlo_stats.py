"""XProf's hlo_stats tool: one row per HLO op of the device op metrics
(XProf's op_stats_to_hlo_stats), as a DataTable.

XProf fills it from the device op metrics only; a host-only profile
(TensorFlow or JAX on CPU: the ops run on host threads) gets the table with
no rows, which is what XProf 2.24 returns for such profiles. GPU planes of
TensorFlow kernels get a row per device op (device_op_metrics.py), TPU
planes a row per HLO op from the ops' metadata (tpu_ops.py), XLA ops on a
GPU a row per HLO instruction, its FLOPs and bytes from XLA's GPU cost
analysis of the module (xla_ops.py, hlo_cost.py), and TensorFlow kernels
beside them their rows of program 0 in the same table."""

from __future__ import annotations

import json
from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.datatable import column, table
from profscope.models.analysis.xprof.hlo import device_planes
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.tool_data import ToolData

N, S = "number", "string"
COLUMNS = [column(i, kind, label) for i, label, kind in (
    ("rank", "Rank", N),
    ("program_id", "Program id", S),
    ("category", "HLO op category", S),
    ("hlo_op_name", "HLO op name", S),
    ("hlo_op_expression", "HLO op text", S),
    ("tf_op_name", "Framework op name", S),
    ("occurrences", "#Occurrences", N),
    ("total_time", "Total time (us)", N),
    ("avg_time", "Avg. time (us)", N),
    ("total_self_time", "Total self time (us)", N),
    ("avg_self_time", "Avg. self time (us)", N),
    ("total_self_time_percent", "Total self time (%)", N),
    ("cumulative_total_self_time_percent", "Cumulative total self time (%)", N),
    ("dma_stall_percent", "%time stalled by DMA", N),
    ("model_flop_rate", "Model GFLOP/s", N),
    ("normalized_flop_rate", "Normalized GFLOP/s", N),
    ("measured_memory_bw", "Measured memory BW (GiB/s)", N),
    ("hbm_bw", "HBM BW (GiB/s)", N),
    ("cmem_read_bw", "CMEM Read BW (GiB/s)", N),
    ("cmem_write_bw", "CMEM Write BW (GiB/s)", N),
    ("operational_intensity", "Operational intensity (FLOPS/Byte)", N),
    ("bound_by", "Bound by", S),
    ("hlo_rematerialization", "Rematerialization", S),
    ("outside_compilation", "Outside Compilation", S),
    ("autotuned", "Autotuned", S),
    ("source_info", "Source Info", S),
    ("core_type", "TPU core type", S),
    ("parent_op_name", "Parent op name", S),
    ("vdd_energy", "VDD Energy (J)", N),
)]


def hlo_stats_table(paths: list[Path], task: TaskState) -> dict:
    if not device_planes(paths, task):
        return table(COLUMNS, [])
    from profscope.models.analysis.xprof.op_stats import read_spaces
    from profscope.models.analysis.xprof.tpu_steps import tpu_and_gpu_hosts

    spaces = read_spaces(paths, task)
    mixed = tpu_and_gpu_hosts(spaces)
    if mixed is not None:
        # TPU and GPU hosts: XProf's one device op metrics db of both, its rows by self time, shares of the
        # whole of both.
        from profscope.models.analysis.xprof.tpu_ops import session_perf_env, tpu_hlo_stats_rows

        parts = [_rows(mixed[0], paths), tpu_hlo_stats_rows(mixed[1], session_perf_env(spaces))]
        total = sum(t for _, t in parts)
        merged = sorted((r for rows, _ in parts for r in rows), key=lambda r: (-r[9], r[3]))
        cumulative = 0.0
        for rank, r in enumerate(merged, start=1):
            r[0], r[11] = float(rank), 100.0 * r[9] * 1e6 / total if total else 0.0
            cumulative += r[11]
            r[12] = cumulative
        return table(COLUMNS, merged)
    return table(COLUMNS, _rows(spaces, paths)[0])


def _rows(spaces, paths) -> tuple[list[list], int]:
    """The hosts' hlo_stats rows and their device op metrics' whole time (ps)."""
    from profscope.models.analysis.xprof.device_op_metrics import device_stats
    from profscope.models.analysis.xprof.framework_op_stats import sorted_ops
    from profscope.models.analysis.xprof.op_stats import IDLE

    device = device_stats(spaces, paths, steps=False)
    if device.hardware_type == "TPU":  # TensorCores: their ops from the ops' metadata (tpu_ops.py)
        from profscope.models.analysis.xprof.tpu_ops import tpu_hlo_stats_rows

        return tpu_hlo_stats_rows(spaces)
    if device.xla_ops is not None:
        from profscope.models.analysis.xprof.device_op_metrics import first_gpu_roofs

        return _xla_rows(device.xla_ops, first_gpu_roofs(spaces)), device.xla_ops.total_time_ps
    if device.xla:
        raise ProfileError(device.xla)
    # GPU TensorFlow kernels: one row per device op, shares of the device's whole time; no FLOPs or bytes
    # (XProf gives them none), program 0.
    db = device.ops
    prov = db.provenance or [""] * len(db)
    total = db.total_time_ps
    rows: list[list] = []
    cumulative = 0.0
    for i in sorted_ops(db, limit=len(db)).tolist():
        if db.category[i] == IDLE:
            continue
        n = int(db.occurrences[i])
        time_us, self_us = int(db.time_ps[i]) / 1e6, int(db.self_time_ps[i]) / 1e6
        share = 100.0 * int(db.self_time_ps[i]) / total if total else 0.0
        cumulative += share
        rows.append([float(len(rows) + 1), "0", db.category[i], db.name[i], db.name[i], prov[i], float(n), time_us,
                     time_us / n if n else 0.0, self_us, self_us / n if n else 0.0, share, cumulative,
                     0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "Unknown", "No", "No", "No", "", "", "", 0.0])
    return rows, total


def _xla_rows(ops, roofs) -> list[list]:
    """XProf's rows of XLA ops on a GPU: by self time (most first, then name), FLOP rates and bandwidths from
    XLA's GPU cost analysis against the GPU's roofs, shares of the device's whole time."""
    import numpy as np

    from profscope.models.analysis.xprof.framework_op_stats import sorted_ops
    from profscope.models.analysis.xprof.op_stats import OpMetricsDb
    from profscope.models.analysis.xprof.xla_ops import rates, source_cell

    time = np.array(ops.time_ps, np.int64)
    db = OpMetricsDb(ops.name, ops.category, np.array(ops.occurrences, np.int64), time, time,
                     np.zeros(len(ops), bool))
    total = ops.total_time_ps
    rows: list[list] = []
    cumulative = 0.0
    for i in sorted_ops(db, limit=len(db)).tolist():
        n, t_ps = ops.occurrences[i], ops.time_ps[i]
        time_us = t_ps / 1e6
        share = 100.0 * t_ps / total if total else 0.0
        cumulative += share
        r = rates(ops.flops[i], ops.bytes[i], ops.hbm_bytes[i], t_ps, roofs)
        rows.append([float(len(rows) + 1), str(ops.program_id[i]), ops.category[i], ops.name[i],
                     ops.expression[i] or ops.name[i],  # a TF kernel's: its name, as XProf writes it
                     ops.provenance[i], float(n), time_us, time_us / n if n else 0.0, time_us,
                     time_us / n if n else 0.0, share, cumulative, 0.0, r.flop_rate, r.flop_rate, r.memory_bw,
                     r.hbm_bw, 0.0, 0.0, r.intensity, r.bound_by, "No", "No", "No", source_cell(ops.source[i]), "",
                     "", 0.0])
    return rows


@register("hlo_stats")
def hlo_stats(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    return ToolData(json.dumps(hlo_stats_table(paths, task), separators=(",", ":")).encode(), "json")
