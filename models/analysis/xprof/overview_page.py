"""XProf's overview_page: the top device ops and utilisation figures, the
step-time breakdown (the input pipeline's step table), the run
environment, the bottleneck statement with recommendations, inference
latency and diagnostics (op_stats_to_overview_page in XProf's convert/)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.datatable import column, dumps, table
from profscope.models.analysis.xprof.input_pipeline import (
    InputAnalysis,
    anchor,
    diagnostics_table,
    input_analysis,
    step_table,
)
from profscope.models.analysis.xprof.op_stats import IDLE, OpMetricsDb, OpStats, tpu_and_gpu_session
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.tool_data import ToolData

NO_DEVICE_TRACE = ("No TensorCore device trace was collected. This might happen if your job hadn't been run on the "
                   "device when sampling was turned on. You could try the sampling again later.")

TOP_OPS_COLUMNS = [  # a CPU or TPU host (XProf's "TPU" analysis table); GPUs have TensorCore columns
    column("selfTimePercent", "number", "Time (%)"),
    column("cumulativeTimePercent", "number", "Cumulative time (%)"),
    column("category", "string", "Category"),
    column("operation", "string", "Operation"),
    column("flopRate", "number", "Bf16 Normalized Flop Rate(GFLOPs/Sec)"),
]
GPU_TOP_OPS_COLUMNS = TOP_OPS_COLUMNS[:4] + [
    column("flopRate", "number", "GFLOPs/Sec"),
    column("tcEligibility", "boolean", "TensorCore eligibility"),
    column("tcUtilization", "boolean", "Op is using TensorCore"),
]


def percent(x: float) -> str:
    return f"{x:.1f}%" if x >= 0 else "unknown"


def _analysis_table(stats: OpStats, kernels: dict[str, tuple[bool, int, int]]) -> dict:
    db = stats.host
    host_ops = int(db.occurrences.sum())
    dev = stats.device
    device_ops = int(dev.occurrences.sum()) if dev is not None else 0
    total_ops = host_ops + device_ops
    non_idle = [i for i in range(len(db)) if db.category[i] != IDLE]
    host_time = sum(int(db.self_time_ps[i]) for i in non_idle)
    eager_time = sum(int(db.self_time_ps[i]) for i in non_idle if db.is_eager[i])
    p = {
        "host_trace_level": "0",
        "host_tf_op_percent": percent(100.0 * (host_ops / total_ops if total_ops else 0.0)),
        "device_tf_op_percent": percent(100.0 * (device_ops / total_ops if total_ops else 0.0)),
        "host_op_time_eager_percent": percent(100.0 * (eager_time / host_time if host_time else 0.0)),
        "device_op_time_eager_percent": percent(_eager_share(dev)),
        "remark_text": "",
        "remark_color": "",
        "mxu_utilization_percent": percent(0.0),
        "hbm_utilization_percent": percent(0.0),
    }
    if "GPU" in stats.device_type:
        half, full = _compute_ms(stats)
        both = half + full
        p.update(device_compute_16bit_percent=percent(100.0 * half / both if both else 0.0),
                 device_compute_32bit_percent=percent(100.0 * full / both if both else 0.0))
        return table(GPU_TOP_OPS_COLUMNS, _top_device_ops(dev, kernels) if dev is not None else [], p)
    p.update({
        "flop_rate_utilization_relative_to_roofline": percent(0.0),
        "memory_bw_utilization_relative_to_hw_limit": percent(0.0),
        "device_idle_time_percent": percent(0.0),
        "device_duty_cycle_percent": percent(0.0),
        "device_duty_cycle_high_confidence_percent": percent(0.0),
        "host_idle_time_percent": percent(0.0),
    })
    return table(TOP_OPS_COLUMNS, [], p)


TOP_OPS = 10  # XProf's overview shows the 10 device ops of most self time
LOW_PRECISION_PERCENT = 10.0  # below this share of 16-bit device compute XProf suggests 16-bit ops


def _compute_ms(stats: OpStats) -> tuple[float, float]:
    """The steps' 16-bit and 32-bit device compute (GPU hosts; XProf's precision stats)."""
    return stats.compute_ms


def _precision_statement(stats: OpStats) -> str:
    half, full = _compute_ms(stats)
    if half + full <= 0:
        return ""
    percent = 100.0 * half / (half + full)
    if percent >= LOW_PRECISION_PERCENT:
        return ""
    return (f"Only {percent:.1f}% of device computation is 16 bit. So you might want to replace more 32-bit Ops by "
            "16-bit Ops to improve performance (if the reduced accuracy is acceptable).")


def _eager_share(dev: OpMetricsDb | None) -> float:
    if dev is None:
        return 0.0
    ops = [i for i in range(len(dev)) if dev.category[i] != IDLE]
    time = sum(int(dev.self_time_ps[i]) for i in ops)
    return 100.0 * sum(int(dev.self_time_ps[i]) for i in ops if dev.is_eager[i]) / time if time else 0.0


def _top_device_ops(dev: OpMetricsDb, kernels: dict[str, tuple[bool, int, int]]) -> list[list]:
    """The device ops of most self time (without IDLE), their shares of the device's op time, FLOP rate
    (GFLOP/s), TensorCore use."""
    from profscope.models.analysis.xprof.framework_op_stats import sorted_ops

    rows: list[list] = []
    cumulative = 0.0
    flops = dev.costs()[0]
    op_time = dev.total_op_time_ps
    for i in sorted_ops(dev).tolist():
        if dev.category[i] == IDLE:
            continue
        if len(rows) == TOP_OPS:
            break
        share = int(dev.self_time_ps[i]) / op_time if op_time else 0.0
        cumulative += share
        eligible, tc, _total = kernels.get(dev.name[i], (False, 0, 0))
        ns = int(dev.time_ps[i]) / 1e3
        rows.append([share, cumulative, dev.category[i], dev.name[i], float(flops[i]) / ns if ns else 0.0, eligible,
                     tc > 0])
    return rows


def _run_environment_table(stats: OpStats) -> dict:
    hosts, tasks = stats.host_count, stats.task_count
    p = {
        "host_count": str(hosts),
        "task_count": f"{tasks} (num tasks per host = {tasks // hosts})",
        "device_type": stats.device_type,
        "device_core_count": str(stats.device_core_count),
        "is_training": "true" if stats.is_training else "false",
    }
    cols = [column(k, "string", k) for k in ("host_id", "command_line", "start_time", "bns_address")]
    return table(cols, [], p)


def _recommendation_table(stats: OpStats, a: InputAnalysis) -> dict:
    hardware = stats.hardware_type
    device_name = "TPU core" if hardware == "TPU" else hardware
    op_tool = "op_profile" if hardware == "TPU" else "framework_op_stats"
    rows = [
        ["faq", "Refer to the TF2 Profiler FAQ", "Tool troubleshooting / FAQ"],
        ["host", "input_pipeline_analyzer (especially Section 3 for the breakdown of input operations on the Host)",
         "Next steps for reducing the Host time"],
        ["host", "trace_viewer (look at the activities on the timeline of each Host Thread near the bottom of the "
         "trace view)", "Next steps for reducing the Host time"],
        ["device", f"{op_tool} (identify the time-consuming operations executed on the {hardware})",
         "Next steps for reducing the Device time"],
        ["device", f"trace_viewer (look at the activities on the timeline of each {device_name} in the trace view)",
         "Next steps for reducing the Device time"],
        ["doc", anchor("https://www.tensorflow.org/guide/data_performance_analysis",
                       "Analyze tf.data performance with the TF Profiler"), "Other useful resources"],
        ["doc", anchor("https://www.tensorflow.org/guide/data_performance", "Better performance with the tf.data API"),
         "Other useful resources"],
    ]
    b = a.bottleneck
    p = {
        "bottleneck": b.input_classification,
        "statement": b.input_statement,
        "kernel_launch_bottleneck": b.kernel_launch_classification,
        "kernel_launch_statement": b.kernel_launch_statement,
        "all_other_bottleneck": b.all_other_classification,
        "all_other_statement": b.all_other_statement,
        "precision_statement": _precision_statement(stats),
        "device_collectives_bottleneck": b.collectives_classification,
        "device_collectives_statement": b.collectives_statement,
        "non_bottleneck_tip_types": {"host": "device", "device": "host"}.get(b.input_classification, ""),
    }
    return table([column("tip_type", "string", "tip_type"), column("link", "string", "link"),
                   column("description", "string", "description")], rows, p)


def _inference_latency_table() -> dict:
    return table([
        column("percentile", "string", "percentile"),
        column("hostTimeMs", "number", "Host time (in ms)"),
        column("deviceTimeMs", "number", "Device time (in ms)"),
        column("communicationTimeMs", "number", "Host-device communication time (in ms)"),
        column("totalTimeMs", "number", "Total latency (in ms)"),
    ], [])


def _tpu_and_gpu_hosts(stats: OpStats, analysis: InputAnalysis, paths: list[Path], task: TaskState):
    """TPU and GPU hosts (GPUs of TensorFlow kernels or XLA ops) in one session: XProf's page of their combined
    OpStats, of hardware type TPU (the highest of the hosts'): the TPU step table and recommendations; where the
    last host with a device is a TPU host, the TPU page of both kinds of ops, else the GPU page's analysis of both
    kinds (TensorCore columns; the TensorCores' FLOP rates, the duty cycle's idle time and active times added),
    the TPU page's diagnostics."""
    session = tpu_and_gpu_session(stats, paths, task)
    if session is None:
        return None
    from profscope.models.analysis.xprof.framework_op_stats import combined_device_db
    from profscope.models.analysis.xprof.tpu_steps import tpu_overview_json

    spaces, mixed = session
    assert stats.device is not None  # a session without a device has none
    tpu_page = tpu_overview_json(replace(stats, hardware_type="TPU"), spaces, gpu=stats.device)
    if "GPU" not in stats.device_type:
        return tpu_page
    from profscope.models.analysis.xprof.device_op_metrics import kernel_reports, op_kernel_stats

    device, rates = combined_device_db(stats.device, mixed[1])
    page = overview_page_json(replace(stats, device=device), analysis, op_kernel_stats(kernel_reports(spaces, paths)))
    _tpu_flop_rates(page, rates)
    added = ("idle_time_high_confidence_ps", "active_steptime_ms_average", "tc_active_ms_average")
    page[0]["p"].update({k: v for k, v in tpu_page[0]["p"].items() if k in added})
    page[1], page[3], page[6] = tpu_page[1], tpu_page[3], tpu_page[6]
    return page


def overview_page_json(stats: OpStats, a: InputAnalysis,
                       kernels: dict[str, tuple[bool, int, int]] | None = None) -> list[dict]:
    errors = list(stats.errors)
    if not errors and stats.device_type != "CPU" and stats.device_core_count <= 0:
        errors.append(NO_DEVICE_TRACE)
    diagnostics = diagnostics_table(errors, list(stats.warnings) + a.warnings)
    return [_analysis_table(stats, kernels or {}), step_table(a), _run_environment_table(stats),
            _recommendation_table(stats, a), _inference_latency_table(), {}, diagnostics]


@register("overview_page")
def overview_page(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    stats, analysis = input_analysis(paths, task)
    if stats.device_unknown:  # the top device ops need their FLOPs
        raise ProfileError(stats.device_unknown)
    if stats.tpu_steps is not None:  # TensorCores: XProf's TPU page (tpu_steps.py; its ops from tpu_ops.py)
        from profscope.models.analysis.xprof.op_stats import read_spaces
        from profscope.models.analysis.xprof.tpu_steps import tpu_overview_json

        mixed = _tpu_and_gpu_hosts(stats, analysis, paths, task)  # beside GPU hosts: their combined page
        page = mixed if mixed is not None else tpu_overview_json(stats, read_spaces(paths, task))
        return ToolData(dumps(page), "json")
    kernels = None
    rates: dict = {}
    if stats.device is not None and "GPU" in stats.device_type:
        from profscope.models.analysis.xprof.device_op_metrics import kernel_reports, op_kernel_stats
        from profscope.models.analysis.xprof.op_stats import read_spaces
        from profscope.models.analysis.xprof.tpu_steps import gpu_and_tpu_host

        spaces = read_spaces(paths, task)
        kernels = op_kernel_stats(kernel_reports(spaces, paths))
        if gpu_and_tpu_host(spaces):  # a host with both GPU and TPU planes: the GPU page of its TensorCores' ops
            from profscope.models.analysis.xprof.tpu_ops import tpu_framework_db

            db, rates = tpu_framework_db(spaces)
            stats = replace(stats, device=db)
    return ToolData(dumps(_tpu_flop_rates(overview_page_json(stats, analysis, kernels), rates)), "json")


def _tpu_flop_rates(page: list[dict], rates: dict) -> list[dict]:
    """The GPU page's top ops that are TensorCore framework ops take their FLOP rates (tpu_ops.tpu_framework_db)."""
    for row in page[0]["rows"]:
        cells = row["c"]
        if cells[3]["v"] in rates:
            cells[4]["v"] = rates[cells[3]["v"]][0]
    return page
