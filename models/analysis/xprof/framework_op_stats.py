"""XProf's framework_op_stats (TensorFlow stats): per TF/JAX op, on the host
and the device, occurrences, total and self time, shares and cumulative
shares of the self time, FLOP rate; twice, with and without IDLE
(op_stats_to_tf_stats in XProf's convert/)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.datatable import column, dumps, table
from profscope.models.analysis.xprof.op_stats import (
    IDLE,
    OpMetricsDb,
    OpStats,
    combine,
    op_stats,
    tpu_and_gpu_session,
    training_op,
)
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.tool_data import ToolData

MAX_OPS = 500  # XProf keeps the 500 ops of most self time, per host and device

COLUMNS = [
    column("rank", "number", "Rank"),
    column("host_or_device", "string", "Host/device"),
    column("type", "string", "Operation Type"),
    column("operation", "string", "Operation Name"),
    column("occurrences", "number", "#Occurrences"),
    column("total_time", "number", "Total time (us)"),
    column("avg_time", "number", "Avg. time (us)"),
    column("total_self_time", "number", "Total self-time (us)"),
    column("avg_self_time", "number", "Avg. self-time (us)"),
    column("device_total_self_time_percent", "number", "Total self-time on Device (%)"),
    column("device_cumulative_total_self_time_percent", "number", "Cumulative total-self time on Device (%)"),
    column("host_total_self_time_percent", "number", "Total self-time on Host (%)"),
    column("Host_cumulative_total_self_time_percent", "number", "Cumulative total-self time on Host (%)"),
    column("measured_flop_rate", "number", "Normalized FLOP Rate (FLOPs/s)"),
    column("model_flop_rate", "number", "Model FLOP Rate (GFLOP/s)"),
    column("measured_memory_bw", "number", "Measured Memory BW (GBytes/Sec)"),
    column("operational_intensity", "number", "Operational Intensity (FLOPs/Byte)"),
]
TENSOR_CORE_COLUMN = column("gpu_tensorcore_utilization", "number", "GPU TensorCore utilization")
TAIL_COLUMNS = [column("bound_by", "string", "Bound by"), column("eager", "string", "Execution mode")]


@register("framework_op_stats")
def framework_op_stats(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    stats = op_stats(paths, task)
    if stats.hardware_type == "TPU":  # TensorCores: their ops from the ops' metadata (tpu_ops.py)
        from profscope.models.analysis.xprof.op_stats import read_spaces
        from profscope.models.analysis.xprof.tpu_ops import tpu_framework_op_stats_json

        return ToolData(dumps(tpu_framework_op_stats_json(stats, read_spaces(paths, task))), "json")
    mixed = _beside_tpus(stats, paths, task)
    if mixed is not None:
        return ToolData(dumps(mixed), "json")
    if stats.device_unknown:
        raise ProfileError(stats.device_unknown)
    tensor_core: dict[str, float] = {}
    roofs = None
    if stats.device is not None and "GPU" in stats.device_type:
        from profscope.models.analysis.xprof.device_op_metrics import (
            first_gpu_roofs,
            kernel_reports,
            tensor_core_shares,
        )
        from profscope.models.analysis.xprof.op_stats import read_spaces

        spaces = read_spaces(paths, task)
        tensor_core = tensor_core_shares(kernel_reports(spaces, paths))
        roofs = first_gpu_roofs(spaces)
    return ToolData(dumps(framework_op_stats_json(stats, tensor_core, roofs)), "json")


def _beside_tpus(stats: OpStats, paths: list[Path], task: TaskState) -> list[dict] | None:
    """TPU and GPU hosts in one session: XProf's one device op metrics db of both kinds, the GPUs' framework ops
    beside the TensorCores' (IDLE the sum of both), each with its own rates; the GPU layout (a TensorCore
    column) where the last host with a device is a GPU host. None for other sessions."""
    session = tpu_and_gpu_session(stats, paths, task)
    if session is None:
        return None
    from dataclasses import replace

    from profscope.models.analysis.xprof.device_op_metrics import first_gpu_roofs, kernel_reports, tensor_core_shares
    from profscope.models.analysis.xprof.tpu_ops import session_perf_env, with_tpu_rates
    from profscope.models.analysis.xprof.tpu_steps import session_device_type

    spaces, mixed = session
    assert stats.device is not None  # a session without a device has none
    if stats.device_unknown:
        raise ProfileError(stats.device_unknown)
    device, rates = combined_device_db(stats.device, mixed[1], session_perf_env(spaces))
    device_type = session_device_type(spaces)
    tensor_core = tensor_core_shares(kernel_reports(spaces, paths)) if "GPU" in device_type else {}
    tables = framework_op_stats_json(replace(stats, device=device, device_unknown="", device_type=device_type),
                                     tensor_core, first_gpu_roofs(spaces))
    return with_tpu_rates(tables, rates)


def combined_device_db(gpu: OpMetricsDb, tpu_hosts: list, env=None) -> tuple[OpMetricsDb, dict]:
    """XProf's one device op metrics db of TPU and GPU hosts: the GPU hosts' db (`gpu`) and the TensorCores'
    framework ops combined, the GPUs' framework ops with their costs (XLA ops on the GPUs); and the TensorCores'
    rates by name (tpu_ops.tpu_framework_db, against `env`), which their rows take."""
    from dataclasses import replace

    from profscope.models.analysis.xprof.tpu_ops import tpu_framework_db

    tpu_db, rates = tpu_framework_db(tpu_hosts, env)
    db = combine([gpu, tpu_db])
    if gpu.flops is None:
        return db, rates
    at = {name: i for i, name in enumerate(gpu.name) if gpu.category[i] != IDLE}
    rows = np.array([at.get(name, -1) for name in db.name], np.int64)
    costs = [np.where(rows >= 0, c[rows], 0.0) for c in gpu.costs()]
    return replace(db, flops=costs[0], bytes=costs[1], hbm_bytes=costs[2]), rates


def framework_op_stats_json(stats: OpStats, tensor_core: dict[str, float] | None = None, roofs=None) -> list[dict]:
    """Both tables; `roofs` (device_op_metrics.GpuRoofs) decide what a device op with FLOPs or bytes is bound by."""
    return [_table(stats, exclude_idle=False, tensor_core=tensor_core or {}, roofs=roofs),
            _table(stats, exclude_idle=True, tensor_core=tensor_core or {}, roofs=roofs)]


def sorted_ops(db: OpMetricsDb, limit: int = MAX_OPS) -> np.ndarray:
    """Rows by self time, most first, then by name (XProf's SortedOpMetricsDb)."""
    names = np.array(db.name, dtype=object)
    order = sorted(range(len(db)), key=lambda i: (-int(db.self_time_ps[i]), names[i]))
    return np.array(order[:limit], np.int64)


def _table(stats: OpStats, exclude_idle: bool, tensor_core: dict[str, float], roofs=None) -> dict:
    from profscope.models.analysis.xprof.xla_ops import rates

    gpu = "GPU" in stats.device_type
    rows: list[list] = []
    rank = 0
    training = False
    if stats.device is not None:  # the device's rows first, by their share of the device's time
        dev = stats.device
        flops, nbytes, hbm = dev.costs()
        device_us = (dev.total_op_time_ps if exclude_idle else dev.total_time_ps) / 1e6
        cumulative = 0.0
        for i in sorted_ops(dev).tolist():
            if exclude_idle and dev.category[i] == IDLE:
                continue
            rank += 1
            occurrences = int(dev.occurrences[i])
            time_us, self_us = int(dev.time_ps[i]) / 1e6, int(dev.self_time_ps[i]) / 1e6
            share = self_us / device_us if device_us else 0.0
            cumulative += share
            r = rates(float(flops[i]), float(nbytes[i]), float(hbm[i]), int(dev.time_ps[i]), roofs)
            row = [float(rank), "Device", dev.category[i], dev.name[i], float(occurrences), time_us,
                   time_us / occurrences if occurrences else 0.0, self_us,
                   self_us / occurrences if occurrences else 0.0, share, cumulative, 0.0, 0.0,
                   r.flop_rate, r.flop_rate, r.memory_bw, r.intensity]
            if gpu:
                row.append(tensor_core.get(dev.name[i], 0.0))
            row += [r.bound_by, "Eager" if dev.is_eager[i] else "Function"]
            rows.append(row)
            training = training or training_op(dev.name[i], dev.category[i])
    host_cumulative = 0.0
    db = stats.host
    total_us = (db.total_op_time_ps if exclude_idle else db.total_time_ps) / 1e6
    for i in sorted_ops(db).tolist():
        if exclude_idle and db.category[i] == IDLE:
            continue
        rank += 1
        occurrences = int(db.occurrences[i])
        time_us = int(db.time_ps[i]) / 1e6
        self_us = int(db.self_time_ps[i]) / 1e6
        share = self_us / total_us if total_us else 0.0
        host_cumulative += share
        row = [float(rank), "Host", db.category[i], db.name[i], float(occurrences), time_us,
               time_us / occurrences if occurrences else 0.0, self_us,
               self_us / occurrences if occurrences else 0.0, 0.0, 0.0, share, host_cumulative,
               0.0, 0.0, 0.0, 0.0]
        if gpu:
            row.append(0.0)
        row += ["Unknown", "Eager" if db.is_eager[i] else "Function"]
        rows.append(row)
        training = training or training_op(db.name[i], db.category[i])
    cols = COLUMNS + ([TENSOR_CORE_COLUMN] if gpu else []) + TAIL_COLUMNS
    p = {"architecture_type": "Unknown", "task_type": "Training" if training else "Inference"}
    return table(cols, rows, p)
