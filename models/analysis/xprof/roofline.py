"""XProf's roofline_model tool: the device's compute and memory-bandwidth
roofs (peak FLOP rate, HBM/CMEM/VMEM bandwidths, their ridge points in the
table's properties) and each op's FLOP rate and operational intensity
against them (XProf's op_stats_to_roofline_model), plus a diagnostics table.

XProf takes the FLOPs and bytes of an op from the device op metrics and the
roofs from the device's capabilities (the device plane's stats); a
host-only profile gets the tables with no rows and zero roofs, as XProf 2.24
returns for it. Device planes are refused with a message (not computed yet).
"""

from __future__ import annotations

import json
from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.hlo import data_table, require_host_only
from profscope.models.core.task import TaskState
from profscope.models.data.tool_data import ToolData

N, S, B = "number", "string", "boolean"
COLUMNS = [
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
]
DIAGNOSTICS_COLUMNS = [("severity", "Severity", S), ("message", "Message", S)]
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


def roofline_tables(paths: list[Path], task: TaskState) -> list[dict]:
    require_host_only(paths, "roofline_model", task)
    roofs = {name: ("" if name == "device_type" else "0") for name in ROOFS}
    return [data_table(COLUMNS, [], roofs), data_table(DIAGNOSTICS_COLUMNS, [])]


@register("roofline_model")
def roofline_model(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    return ToolData(json.dumps(roofline_tables(paths, task), separators=(",", ":")).encode(), "json")
