"""XProf's kernel_stats: per GPU kernel and the op that launched it,
occurrences, durations, registers, shared memory, block and grid,
occupancy, TensorCore eligibility and use (kernel_stats_db in XProf's
convert/). A host whose source is an XSpace gets this layout; a Chrome
trace's kernel_stats stays Profscope's own (docs/TOOLS.md)."""

from __future__ import annotations

from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.datatable import column, dumps, table
from profscope.models.analysis.xprof.device_op_metrics import kernel_reports
from profscope.models.analysis.xprof.op_stats import GPU_PLANE_PREFIX, read_spaces
from profscope.models.core.task import TaskState
from profscope.models.data.tool_data import ToolData
from profscope.models.formats.xspace.xplane import plane_names

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


MAX_KERNELS = 1000  # XProf keeps the 1,000 kernels of most time


@register("kernel_stats")
def kernel_stats(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    # Kernels are events of GPU planes: files without one are not decoded (their plane names read from the wire).
    gpu = [p for p in paths if any(n.startswith(GPU_PLANE_PREFIX) for n in plane_names(p, task))]
    spaces = read_spaces(gpu, task) if gpu or not paths else []  # no paths: read_spaces says so
    reports = kernel_reports(spaces, paths)
    rows = []
    for rank, i in enumerate(reports.order()[:MAX_KERNELS].tolist(), 1):
        occurrences = int(reports.occurrences[i])
        total = int(reports.total_ns[i])
        rows.append([float(rank), reports.name[i], float(reports.registers[i]),
                     float(reports.static_shmem[i] + reports.dynamic_shmem[i]),
                     ",".join(map(str, reports.block[i])), ",".join(map(str, reports.grid[i])),
                     float(reports.occupancy[i]), bool(reports.eligible[i]), bool(reports.uses_tensor_core[i]),
                     reports.op_name[i], float(occurrences), total / 1e3, (total // occurrences) / 1e3,
                     int(reports.min_ns[i]) / 1e3, int(reports.max_ns[i]) / 1e3])
    return ToolData(dumps(table(COLUMNS, rows)), "json")
