"""XProf's hlo_stats tool: one row per HLO op of the device op metrics
(XProf's op_stats_to_hlo_stats), as a DataTable.

XProf fills it from the device planes' XLA ops only; a host-only profile
(TensorFlow or JAX on CPU: the ops run on host threads) gets the table with
no rows, which is what XProf 2.24 returns for such profiles. Device planes
are refused with a message (not computed yet)."""

from __future__ import annotations

import json
from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.hlo import data_table, require_host_only
from profscope.models.core.task import TaskState
from profscope.models.data.tool_data import ToolData

N, S = "number", "string"
COLUMNS = [
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
]


def hlo_stats_table(paths: list[Path], task: TaskState) -> dict:
    require_host_only(paths, "hlo_stats", task)
    return data_table(COLUMNS, [])


@register("hlo_stats")
def hlo_stats(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    return ToolData(json.dumps(hlo_stats_table(paths, task), separators=(",", ":")).encode(), "json")
