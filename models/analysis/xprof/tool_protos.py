"""The JSON tensorboard-plugin-profile 2.4 made of the per-tool protobufs
TensorFlow 2.2-2.3 wrote (its convert/*_proto_to_gviz.py): Google Charts
DataTables, from the messages profscope.models.formats.tool_protos reads."""

from __future__ import annotations

import datetime
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from profscope.models.analysis.xprof import datatable
from profscope.models.core.task import ProfileError
from profscope.models.data.tool_data import ToolData
from profscope.models.repository.registry import (
    FRAMEWORK_OP_STATS,
    INPUT_PIPELINE_ANALYZER,
    KERNEL_STATS,
    OVERVIEW_PAGE,
)
from profscope.protos import input_pipeline_pb2, overview_page_pb2

M = TypeVar("M", bound=Message)


def unpack(any_, message: type[M]) -> M:
    """The Any's message when it holds XProf's `message` (its package is
    tensorflow.profiler, ours profscope.tensorflow.profiler), else an empty one,
    as Any.Unpack leaves it."""
    out = message()
    if any_.type_url.rsplit("/", 1)[-1] == f"tensorflow.profiler.{message.DESCRIPTOR.name}":
        try:
            out.ParseFromString(any_.value)
        except DecodeError as e:  # read only now: the file's parse keeps an Any's bytes as they are
            raise ProfileError(f"not a readable {message.DESCRIPTOR.name} inside the tool's file: {e}") from None
    return out


def diagnostics_table(diag) -> dict:
    rows = [["INFO", m] for m in diag.info] + [["WARNING", m] for m in diag.warnings]
    rows += [["ERROR", m] for m in diag.errors]
    return datatable.table([datatable.column("severity", "string", "severity"),
                            datatable.column("message", "string", "message")], rows)


# (column id, label, PerGenericStepDetails fields summed, GenericStepTimeBreakdown summary, property prefix)
_STEP_PARTS = (
    ("deviceComputeTimeMs", "Device compute", ("device_compute_ms",), "device_compute_ms_summary",
     "device_compute_time_ms"),
    ("deviceToDeviceTimeMs", "Device to device", ("device_to_device_ms",), "device_to_device_ms_summary",
     "device_to_device_time_ms"),
    ("deviceCollectivesTimeMs", "Device collectives", ("device_collectives_ms",),
     "device_collectives_ms_summary", "device_collectives_time_ms"),
    ("hostComputeTimeMs", "Host compute", ("host_compute_ms",), "host_compute_ms_summary",
     "host_compute_time_ms"),
    ("kernelLaunchTimeMs", "Kernel launch", ("host_prepare_ms",), "host_prepare_ms_summary",
     "kernel_launch_time_ms"),
    ("infeedTimeMs", "Input", ("host_wait_input_ms", "host_to_device_ms"), "input_ms_summary", "infeed_time_ms"),
    ("outfeedTimeMs", "Output", ("output_ms",), "output_ms_summary", "outfeed_time_ms"),
    ("compileTimeMs", "Compilation", ("host_compile_ms",), "host_compile_ms_summary", "compile_time_ms"),
    ("otherTimeMs", "All others", ("unknown_time_ms",), "unknown_time_ms_summary", "other_time_ms"),
)


def step_table(ipa) -> dict:
    """The step-time breakdown (the plugin's first input pipeline table, also the overview's second)."""
    columns = [datatable.column("stepnum", "string", "Step number")]
    columns += [datatable.column(id_, "number", label) for id_, label, *_ in _STEP_PARTS]
    columns.append(datatable.column("tooltip", "string", "tooltip", {"role": "tooltip"}))
    rows = []
    for packed in ipa.step_details:
        d = unpack(packed, input_pipeline_pb2.PerGenericStepDetails)
        parts = [sum(getattr(d, f) for f in fields) for _, _, fields, *_ in _STEP_PARTS]
        lines = [f"Step {d.step_number}, duration: {d.step_time_ms:.2f} ms"]
        lines += [f"-{label}: {v:.2f} ms" for (_, label, *_), v in reversed(list(zip(_STEP_PARTS, parts)))]
        rows.append([str(d.step_number), *parts, "\n".join(lines)])
    summary = ipa.step_time_summary
    breakdown = unpack(ipa.step_time_breakdown, input_pipeline_pb2.GenericStepTimeBreakdown)
    p = {"hardware_type": ipa.hardware_type,
         "steptime_ms_average": f"{summary.average:.1f}",
         "steptime_ms_standard_deviation": f"{summary.standard_deviation:.1f}",
         "steptime_ms_minimum": f"{summary.minimum:.1f}", "steptime_ms_maximum": f"{summary.maximum:.1f}"}
    for *_, field, prefix in _STEP_PARTS:
        part = getattr(breakdown, field)
        p[f"{prefix}_avg"] = f"{part.average:.1f}"
        p[f"{prefix}_sdv"] = f"{part.standard_deviation:.1f}"
    b = unpack(ipa.recommendation.bottleneck_analysis, input_pipeline_pb2.BottleneckAnalysis)
    p |= {"input_conclusion": b.input_statement, "summary_nextstep": ipa.recommendation.summary_next_step,
          "device_collectives_bottleneck": b.device_collectives_classification,
          "device_collectives_statement": b.device_collectives_statement,
          "kernel_launch_bottleneck": b.kernel_launch_classification,
          "kernel_launch_statement": b.kernel_launch_statement,
          "all_other_bottleneck": b.all_other_classification, "all_other_statement": b.all_other_statement}
    return datatable.table(columns, rows, p)


def input_pipeline_json(ipa) -> list[dict]:
    columns = [datatable.column(*c) for c in (
        ("opName", "string", "Input Op"), ("count", "number", "Count"),
        ("timeInMs", "number", "Total Time (in ms)"),
        ("timeInPercent", "number", "Total Time (as % of total input-processing time)"),
        ("selfTimeInMs", "number", "Total Self Time (in ms)"),
        ("selfTimeInPercent", "number", "Total Self Time (as % of total input-processing time)"),
        ("category", "string", "Category"))]
    # The percentages are shown as fractions (the page formats them).
    ops = [[d.op_name, d.count, d.time_in_ms, d.time_in_percent / 100.0, d.self_time_in_ms,
            d.self_time_in_percent / 100.0, d.category] for d in ipa.input_op_details]
    t = ipa.input_time_breakdown
    ops_p = {"enqueue_us": f"{t.enqueue_us:.3f}", "demanded_file_read_us": f"{t.demanded_file_read_us:.3f}",
             "advanced_file_read_us": f"{t.advanced_file_read_us:.3f}",
             "preprocessing_us": f"{t.preprocessing_us:.3f}",
             # the plugin's key, misspelt as it is
             "unclassified_nonequeue_us": f"{t.unclassified_non_enqueue_us:.3f}"}
    tips = datatable.table([datatable.column("link", "string", "link")],
                           [[d] for d in ipa.recommendation.details])
    return [step_table(ipa), datatable.table(columns, ops, ops_p), tips, diagnostics_table(ipa.diagnostics)]


def _run_environment_table(env) -> dict:
    columns = [datatable.column(c, "string", c) for c in ("host_id", "command_line", "start_time", "bns_address")]
    rows = []
    for job in env.host_dependent_job_info:
        try:  # the plugin reads start_time as seconds since the epoch, in UTC
            start = str(datetime.datetime.fromtimestamp(job.start_time, datetime.timezone.utc).replace(tzinfo=None))
        except (OverflowError, OSError, ValueError):
            start = str(job.start_time)
        rows.append([job.host_id, job.command_line, start, job.bns_address])
    task_count = str(env.task_count) if env.task_count >= 0 else "unknown"
    if env.task_count > 0 and env.host_count > 0:
        task_count += f" (num tasks per host = {env.task_count / env.host_count})"
    cores = str(env.device_core_count) if env.device_core_count >= 0 else "unknown"
    if env.replica_count > 0 and env.num_cores_per_replica > 0:
        # (the plugin 2.4 fails here, calling the numbers; this is the text it meant)
        cores += f" (Replica count = {env.replica_count}, num cores per replica = {env.num_cores_per_replica})"
    p = {"host_count": str(env.host_count) if env.host_count >= 0 else "unknown", "task_count": task_count,
         "device_type": env.device_type, "device_core_count": cores}
    return datatable.table(columns, rows, p)


def overview_page_json(page) -> list[dict]:
    a = page.analysis
    columns = [datatable.column(*c) for c in (
        ("selfTimePercent", "number", "Time (%)"), ("cumulativeTimePercent", "number", "Cumulative time (%)"),
        ("category", "string", "Category"), ("operation", "string", "Operation"),
        ("flopRate", "number", "GFLOPs/Sec"), ("tcEligibility", "boolean", "TensorCore eligibility"),
        ("tcUtilization", "boolean", "Op is using TensorCore"))]
    ops = [[op.self_time_fraction, op.cumulative_time_fraction, op.category, op.name, op.flop_rate,
            op.is_op_tensorcore_eligible, op.is_op_using_tensorcore] for op in a.top_device_ops]
    names = ("host_tf_op_percent", "device_tf_op_percent", "host_op_time_eager_percent",
             "device_op_time_eager_percent", "device_compute_16bit_percent", "device_compute_32bit_percent")
    analysis_p = {n: f"{getattr(a, n):.1f}%" for n in names}
    analysis_p |= {"remark_text": a.remark_text, "remark_color": a.remark_color}
    r = page.recommendation
    tips = [[kind, tip.link] for kind, tips in (
        ("faq", r.faq_tips), ("host", r.host_tips), ("device", r.device_tips), ("doc", r.documentation_tips),
        ("inference", r.inference_tips)) for tip in tips]
    g = unpack(r.recommendation, overview_page_pb2.GenericRecommendation)
    rec_p = {"bottleneck": r.bottleneck, "statement": r.statement}
    rec_p |= {n: getattr(g, n) for n in (
        "device_collectives_bottleneck", "device_collectives_statement", "kernel_launch_bottleneck",
        "kernel_launch_statement", "all_other_bottleneck", "all_other_statement", "precision_statement")}
    rec = datatable.table([datatable.column("tip_type", "string", "tip_type"),
                           datatable.column("link", "string", "link")], tips, rec_p)
    # The two empty objects stand where the plugin keeps two (unused) tables' places.
    return [datatable.table(columns, ops, analysis_p), step_table(page.input_analysis),
            _run_environment_table(page.run_environment), rec, {}, {}, diagnostics_table(page.diagnostics)]


def tf_stats_json(db) -> list[dict]:
    gpu = db.device_type == "GPU"  # the TensorCore column only for GPUs
    columns = [datatable.column(*c) for c in (
        ("rank", "number", "Rank"), ("host_or_device", "string", "Host/device"), ("type", "string", "Type"),
        ("operation", "string", "Operation"), ("occurrences", "number", "#Occurrences"),
        ("total_time", "number", "Total time (us)"), ("avg_time", "number", "Avg. time (us)"),
        ("total_self_time", "number", "Total self-time (us)"), ("avg_self_time", "number", "Avg. self-time (us)"),
        ("device_total_self_time_percent", "number", "Total self-time on Device (%)"),
        ("device_cumulative_total_self_time_percent", "number", "Cumulative total-self time on Device (%)"),
        ("host_total_self_time_percent", "number", "Total self-time on Host (%)"),
        ("host_cumulative_total_self_time_percent", "number", "Cumulative total-self time on Host (%)"))]
    if gpu:
        columns.append(datatable.column("gpu_tensorcore_utilization", "number", "GPU TensorCore utilization"))
    tables = []
    for t in (db.with_idle, db.without_idle):
        rows = []
        for r in t.tf_stats_record:
            row = [r.rank, r.host_or_device, r.op_type, r.op_name, r.occurrences, r.total_time_in_us,
                   r.avg_time_in_us, r.total_self_time_in_us, r.avg_self_time_in_us,
                   r.device_total_self_time_as_fraction, r.device_cumulative_total_self_time_as_fraction,
                   r.host_total_self_time_as_fraction, r.host_cumulative_total_self_time_as_fraction]
            rows.append(row + [r.gpu_tensorcore_utilization] if gpu else row)
        tables.append(datatable.table(columns, rows))
    return tables


def kernel_stats_json(db) -> list[dict]:
    columns = [datatable.column(*c) for c in (
        ("rank", "number", "Rank"), ("kernel_name", "string", "Kernel Name"),
        ("registers_per_thread", "number", "Registers per thread"), ("shmem_bytes", "number", "Shared Mem bytes"),
        ("block_dim", "string", "Block dim"), ("grid_dim", "string", "Grid dim"),
        ("is_op_tensor_core_eligible", "boolean", "Op is TensorCore eligible"),
        ("is_kernel_using_tensor_core", "boolean", "Kernel uses TensorCore"), ("op_name", "string", "Op Name"),
        ("occurrences", "number", "Occurrences"), ("total_duration_us", "number", "Total Duration (us)"),
        ("avg_duration_us", "number", "Avg Duration (us)"), ("min_duration_us", "number", "Min Duration (us)"),
        ("max_duration_us", "number", "Max Duration (us)"))]
    rows = []
    for rank, k in enumerate(db.reports, 1):
        # (the plugin divides by zero on a report without occurrences; 0 here)
        avg = k.total_duration_ns / k.occurrences / 1000 if k.occurrences else 0.0
        rows.append([rank, k.name, k.registers_per_thread, k.static_shmem_bytes + k.dynamic_shmem_bytes,
                     ",".join(map(str, k.block_dim[:3])), ",".join(map(str, k.grid_dim[:3])),
                     k.is_op_tensor_core_eligible, k.is_kernel_using_tensor_core, k.op_name, k.occurrences,
                     k.total_duration_ns / 1000, avg, k.min_duration_ns / 1000, k.max_duration_ns / 1000])
    return [datatable.table(columns, rows)]


_JSON = {OVERVIEW_PAGE: overview_page_json, INPUT_PIPELINE_ANALYZER: input_pipeline_json,
         FRAMEWORK_OP_STATS: tf_stats_json, KERNEL_STATS: kernel_stats_json}


def tool_data(tool: str, result: Message) -> ToolData:
    """A tool's JSON from the message holding its result."""
    return ToolData(datatable.dumps(_JSON[tool](result)), "json")
