"""XProf's kernel_stats: per GPU kernel and the op that launched it,
occurrences, durations, registers, shared memory, block and grid,
occupancy, TensorCore eligibility and use (kernel_stats_db in XProf's
convert/). A host whose source is an XSpace gets this layout; a Chrome
trace's kernel_stats stays Profscope's own (docs/TOOLS.md)."""

from __future__ import annotations

from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.datatable import column, dumps, table
from profscope.models.analysis.xprof.op_stats import GPU_PLANE_PREFIX, read_spaces
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.tool_data import ToolData

COLUMNS = [
    column("rank", "number", "Rank"),
    column("kernel_name", "string", "Kernel Name"),
    column("registers_per_thread", "number", "Registers per thread"),
    column("shmem_bytes", "number", "Shared Mem bytes"),
    column("block_dim", "string", "Block dim"),
    column("grid_dim", "string", "Grid dim"),
    column("occupancy_pct", "number", "Theoretical Occupancy %"),
    column("is_op_tensor_core_eligible", "boolean", "Op is TensorCore eligible"),
    column("is_kernel_using_tensor_core", "boolean", "Kernel uses TensorCore"),
    column("op_name", "string", "Op Name"),
    column("occurrences", "number", "Occurrences"),
    column("total_duration_us", "number", "Total Duration (\u03bcs)"),
    column("avg_duration_us", "number", "Avg Duration (\u03bcs)"),
    column("min_duration_us", "number", "Min Duration (\u03bcs)"),
    column("max_duration_us", "number", "Max Duration (\u03bcs)"),
]


@register("kernel_stats")
def kernel_stats(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    spaces = read_spaces(paths, task)
    gpus = [p.name for s in spaces for p in s.planes if p.name.startswith(GPU_PLANE_PREFIX)]
    if gpus:
        # XProf reads each kernel's kernel_details stat; no GPU profile could be made here to check against.
        raise ProfileError(
            f"{paths[0]}: Profscope does not compute XProf's kernel_stats of GPU planes yet ({gpus[0]})")
    return ToolData(dumps(table(COLUMNS, [])), "json")
