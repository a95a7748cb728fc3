"""XProf's roofline_model tool: the device's compute and memory-bandwidth
roofs (peak FLOP rate, HBM/CMEM/VMEM bandwidths, their ridge points in the
table's properties) and each op's FLOP rate and operational intensity
against them (XProf's op_stats_to_roofline_model), plus a diagnostics table.

XProf takes the FLOPs and bytes of an op from the device op metrics and the
roofs from the device's capabilities (the device plane's stats); a
host-only profile gets the tables with no rows and zero roofs, as XProf 2.24
returns for it. GPU planes get XProf's table of their device op metrics
(XLA ops: their FLOPs and bytes from XLA's GPU cost analysis); several hosts
XProf's combined steps (step_intersection.py); TPU planes XProf's TPU table
from their ops' metadata and steps (tpu_profile.py).
"""

from __future__ import annotations

from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.datatable import column, table, to_json
from profscope.models.analysis.xprof.hlo import device_planes
from profscope.models.analysis.xprof.input_pipeline import NO_STEP_MARKER, diagnostics_table
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.tool_data import ToolData

N, S, B = "number", "string", "boolean"
COLUMNS = [column(i, kind, label) for i, label, kind in (
    ("step", "Step", S),
    ("rank", "Rank", N),
    ("category", "Category", S),
    ("operation", "Operation", S),
    ("occurrences", "# Occurrences", N),
    ("total_time", "Total Time (us)", N),
    ("avg_time", "Avg. time (us)", N),
    ("total_self_time", "Total self time (us)", N),
    ("avg_self_time", "Avg. self time (us)", N),
    ("total_self_time_percent", "Total self time (%)", N),
    ("cumulative_total_self_time_percent", "Cumulative total self time (%)", N),
    ("dma_stall_percent", "%time stalled by DMA", N),
    ("measured_flop_rate", "Normalized FLOP Rate (GFLOP/s)", N),
    ("model_flop_rate", "Model FLOP Rate (GFLOP/s)", N),
    ("measured_memory_bw", "Memory BW (GiB/s)", N),
    ("hbm_bw", "HBM BW (GiB/s)", N),
    ("cmem_read_bw", "CMEM Read BW (GiB/s)", N),
    ("cmem_write_bw", "CMEM Write BW (GiB/s)", N),
    ("vmem_read_bw", "VMEM Read BW (GiB/s)", N),
    ("vmem_write_bw", "VMEM Write BW (GiB/s)", N),
    ("operational_intensity", "Operational Intensity (FLOP/Byte)", N),
    ("hbm_operational_intensity", "HBM Operational Intensity (FLOP/Byte)", N),
    ("cmem_read_operational_intensity", "CMEM Read Operational Intensity (FLOP/Byte)", N),
    ("cmem_write_operational_intensity", "CMEM Write Operational Intensity (FLOP/Byte)", N),
    ("vmem_read_operational_intensity", "VMEM Read Operational Intensity (FLOP/Byte)", N),
    ("vmem_write_operational_intensity", "VMEM Write Operational Intensity (FLOP/Byte)", N),
    ("bottleneck_operational_intensity", "Bottleneck Operational Intensity (FLOP/Byte)", N),
    ("bound_by", "Bound by", S),
    ("total_time_per_core", "Total Time per core (us)", N),
    ("total_time_in_percentage", "Total Time (%)", N),
    ("optimal_flop_rate", "Optimal FLOP Rate (GFLOP/s)", N),
    ("roofline_efficiency", "Roofline efficiency (%)", N),
    ("compute_efficiency", "FLOP Rate / Peak (%)", N),
    ("max_mem_bw_utilization", "Max memory BW utilization (among supported memories) (%)", N),
    ("include_infeed_outfeed", "Include Infeed/Outfeed", B),
    ("hlo_module_id", "Program ID", S),
    ("source_info", "Source Info", S),
)]
# The device's roofs (XProf's table properties; all strings, sorted by name). Zero without a device.
ROOFS = (
    "cmem_read_ridge_point",
    "cmem_write_ridge_point",
    "device_type",
    "has_cmem",
    "has_merged_vmem",
    "hbm_ridge_point",
    "megacore",
    "peak_cmem_read_bw",
    "peak_cmem_write_bw",
    "peak_flop_rate",
    "peak_hbm_bw",
    "peak_vmem_read_bw",
    "peak_vmem_write_bw",
    "time_scale_multiplier",
    "vmem_read_ridge_point",
    "vmem_write_ridge_point",
)


# A GPU's table lacks the TPU memories' columns, and its VMEM is the SMs' shared memory (SHM/L1).
_NOT_ON_GPU = {"dma_stall_percent", "cmem_read_bw", "cmem_write_bw", "vmem_read_bw", "cmem_read_operational_intensity",
               "cmem_write_operational_intensity", "vmem_read_operational_intensity"}
_GPU_LABELS = {"vmem_write_bw": "SHM/L1 BW (GiB/s)",
               "vmem_write_operational_intensity": "SHM/L1 Operational Intensity (FLOP/Byte)"}
GPU_COLUMNS = [dict(c, label=_GPU_LABELS.get(c["id"], c["label"])) for c in COLUMNS if c["id"] not in _NOT_ON_GPU]
GPU_ROOFS = ("device_type", "hbm_ridge_point", "peak_flop_rate", "peak_hbm_bw", "peak_vmem_write_bw",
             "vmem_write_ridge_point")


def roofline_tables(paths: list[Path], task: TaskState) -> list[dict]:
    if device_planes(paths, task):
        return _gpu_roofline(paths, task)
    roofs = {name: ("" if name == "device_type" else "0") for name in ROOFS}
    return [table(COLUMNS, [], roofs), diagnostics_table([], [])]


def _g(x: float) -> str:
    """A number as XProf's table properties write it (C++ streams: 6 significant digits)."""
    return f"{x:.6g}"


def _gpu_roofline(paths: list[Path], task: TaskState) -> list[dict]:
    """XProf's roofline of a GPU: the whole profile ("Program": the ops' FLOPs and bytes, but not those of
    ops holding others, call and while) and its ops, then a row per step (empty: XProf has no per-step op
    metrics of GPUs), with and without infeed/outfeed; the roofs from the device's capabilities. TensorFlow
    kernels have no FLOPs or bytes (every rate zero); XLA ops those of XLA's GPU cost analysis."""
    from profscope.models.analysis.xprof.device_op_metrics import (
        GpuRoofs,
        device_stats,
        gpu_roofs,
        host_gpus,
        plane_stats,
    )
    from profscope.models.analysis.xprof.framework_op_stats import sorted_ops
    from profscope.models.analysis.xprof.op_stats import GPU_PLANE_PREFIX, IDLE, read_spaces
    from profscope.models.analysis.xprof.step_intersection import EMPTY_INTERSECT
    from profscope.models.analysis.xprof.xla_ops import may_have_inner_ops, rates, source_cell

    spaces = read_spaces(paths, task)
    planes = [(s, i) for s in spaces for i, p in enumerate(s.planes) if p.name.startswith(GPU_PLANE_PREFIX)]
    if not planes:  # TPU planes: from the TensorCores' op metadata (tpu_profile.py)
        from profscope.models.analysis.xprof.tpu_profile import tpu_roofline_tables

        return tpu_roofline_tables(spaces, device_stats(spaces, paths, steps=True))
    device = device_stats(spaces, paths, steps=True)
    if device.xla:  # the XLA ops' costs are not known
        raise ProfileError(device.xla)
    if device.tpu_steps is not None:
        # TPU and GPU hosts (GPUs of TF kernels or XLA ops): XProf's roofline of both kinds of ops (tpu_profile.py);
        # where the last host with a device is a GPU host, in the GPU's columns and roofs.
        from profscope.models.analysis.xprof.tpu_profile import tpu_roofline_tables

        # (A host with both GPU and TPU planes: its TensorCores' ops alone, in its GPUs' run environment.)
        gpu = device.ops if device.hardware_type == "GPU" else None
        tables = tpu_roofline_tables(spaces, device, gpu=gpu, xla=device.xla_ops)
        if "GPU" in device.device_type:
            keep = [i for i, c in enumerate(COLUMNS) if c["id"] not in _NOT_ON_GPU]
            tables[0]["cols"] = GPU_COLUMNS
            tables[0]["rows"] = tables[0]["rows"].only(keep)
            tables[0]["p"] = {k: tables[0]["p"][k] for k in GPU_ROOFS}
        return tables
    # Several hosts: XProf's combined perf env takes the peak FLOP rate of the last host that has one and the
    # bandwidths of the first.
    each = [gpu_roofs(plane_stats(s, i)) for s, i in host_gpus(planes)]
    roofs = GpuRoofs(next((r.peak_gflops for r in reversed(each) if r.peak_gflops > 0), 0.0),
                     each[0].hbm_bytes_per_s, each[0].shared_bytes_per_s)
    db = device.ops
    flops, nbytes, hbm = db.costs()
    xla = device.xla_ops
    total = db.total_time_ps
    zeros4 = [0.0] * 4
    if len(spaces) > 1:  # XProf's combined steps, numbered from 0, after an "Average" row of the complete steps
        from profscope.models.analysis.xprof.step_intersection import session_steps

        _rows, step_ps, empty_intersect = session_steps(spaces, device.steps or [])
        step_names = ["Average", *map(str, range(len(step_ps)))]
        warnings = [EMPTY_INTERSECT if empty_intersect else NO_STEP_MARKER] if not len(step_ps) else []
    else:
        steps = device.steps[0] if device.steps else None
        step_names = [str(n) for n in steps.number.tolist()] if steps is not None else []
        warnings = [] if step_names else [NO_STEP_MARKER]
    cores = max(device.core_count, 1)  # XProf's time per core: each GPU a core

    def rated(r, time_ps: int) -> list:
        optimal = max(r.hbm_util, r.flops_util)
        return [r.flop_rate, r.flop_rate, r.memory_bw, r.hbm_bw, 0.0, r.intensity, r.hbm_intensity, 0.0,
                r.bottleneck_intensity, r.bound_by, time_ps / 1e6 / cores, time_ps / total if total else 0.0,
                r.flop_rate / optimal if optimal else 0.0, optimal, r.flops_util, r.hbm_util]

    inner = [not may_have_inner_ops(c) and c != IDLE for c in db.category]
    program = rates(float(flops[inner].sum()), float(nbytes[inner].sum()), float(hbm[inner].sum()), total, roofs)
    rows = []
    for include in (True, False):
        total_us = total / 1e6
        rows.append(["Total", 0.0, "Program", "Program", 1.0, total_us, total_us, 0.0, 0.0, 0.0, 0.0,
                     *rated(program, total), include, "0", ""])
        cumulative = 0.0
        rank = 0
        for i in sorted_ops(db, limit=len(db)).tolist():
            if db.category[i] == IDLE:
                continue
            rank += 1
            n = int(db.occurrences[i])
            time_us, self_us = int(db.time_ps[i]) / 1e6, int(db.self_time_ps[i]) / 1e6
            share = int(db.self_time_ps[i]) / total if total else 0.0
            cumulative += share
            r = rates(float(flops[i]), float(nbytes[i]), float(hbm[i]), int(db.time_ps[i]), roofs)
            program_id, source = (str(xla.program_id[i]), source_cell(xla.source[i])) if xla is not None \
                else ("0", "")
            rows.append(["Total", float(rank), db.category[i], db.name[i], float(n), time_us, time_us / n,
                         self_us, self_us / n, share, cumulative, *rated(r, int(db.time_ps[i])), include,
                         program_id, source])
        for step in step_names:
            rows.append([step, 0.0, "Program", "Program", 1.0, *([0.0] * 15), "Unknown", 0.0, 0.0, *zeros4,
                         include, "0", ""])
    p = {
        "device_type": device.device_type,
        "hbm_ridge_point": _g(roofs.peak_gflops / (roofs.hbm_bytes_per_s / 1e9)) if roofs.hbm_bytes_per_s else "0",
        "peak_flop_rate": _g(roofs.peak_gflops),
        "peak_hbm_bw": _g(roofs.hbm_bytes_per_s / 2**30),
        "peak_vmem_write_bw": _g(roofs.shared_bytes_per_s / 2**30),
        "vmem_write_ridge_point": _g(roofs.peak_gflops / (roofs.shared_bytes_per_s / 1e9))
        if roofs.shared_bytes_per_s else "0",
    }
    return [table(GPU_COLUMNS, rows, p), diagnostics_table([], warnings)]


@register("roofline_model")
def roofline_model(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    return ToolData(to_json(roofline_tables(paths, task)), "json")
