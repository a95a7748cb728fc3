"""XProf's input_pipeline_analyzer for hosts without TPUs: the step-time
breakdown per step (device compute, host compute, kernel launch, input,
output, compilation, all others), its averages and standard deviations, the
host's tf.data ops with self and total times, and the input-bound analysis
(op_stats_to_input_pipeline_analysis in XProf's convert/). The overview page
shows the same step table."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.datatable import column, dumps, table
from profscope.models.analysis.xprof.op_stats import (
    DEVICE_COLLECTIVES,
    DEVICE_COMPUTE_16,
    DEVICE_COMPUTE_32,
    DEVICE_TO_DEVICE,
    DEVICE_TO_HOST,
    DEVICE_WAIT_DEVICE,
    DEVICE_WAIT_HOST,
    HOST_COMPILE,
    HOST_COMPUTE,
    HOST_PREPARE,
    HOST_TO_DEVICE,
    HOST_WAIT_INPUT,
    UNKNOWN_TIME,
    OpStats,
    StepDb,
    op_stats,
)
from profscope.models.analysis.xprof.step_intersection import EMPTY_INTERSECT
from profscope.models.core.task import TaskState
from profscope.models.data.tool_data import ToolData

# Bottleneck thresholds (percent of the step time).
INPUT_HIGH, INPUT_MODERATE = 20, 5
KERNEL_LAUNCH_HIGH, KERNEL_LAUNCH_MODERATE = 15, 3
ALL_OTHER_HIGH, ALL_OTHER_MODERATE = 15, 3
COLLECTIVES_HIGH, COLLECTIVES_MODERATE = 15, 3
HOST_ANALYSIS_SECTION = 3
ALL_OTHERS_PYTHON = (" % of the total step time sampled is spent on 'All Others' time. "
                     "This could be due to Python execution overhead.")
KERNEL_LAUNCH_TF_DATA = (" It could be due to CPU contention with tf.data. In this case, you may try to set the "
                         "environment variable TF_GPU_THREAD_MODE=gpu_private.")
NO_STEP_MARKER = (
    "No step marker observed and hence the step time is unknown. This may happen if (1) training steps are not "
    "instrumented (e.g., if you are not using Keras) or (2) the profiling duration is shorter than the step time. "
    "For (1), you need to add step instrumentation; for (2), you may try to profile longer.")
DATASET_TOPIC = "https://www.tensorflow.org/api_docs/python/tf/data/Dataset#"
TF_RECORD_DATASET = "https://www.tensorflow.org/api_docs/python/tf/data/TFRecordDataset#class_tfrecorddataset"


def anchor(url: str, text: str) -> str:
    return f'<a href="{url}" target="_blank">{text}</a>'


RECOMMENDATIONS = [
    "Enqueuing data: you may want to combine small input data chunks into fewer but larger chunks.",
    f"Data preprocessing: you may increase num_parallel_calls in {anchor(DATASET_TOPIC + 'map', 'Dataset map()')} "
    "or preprocess the data OFFLINE.",
    "Reading data from files in advance: you may tune parameters in the following tf.data API ("
    f"{anchor(DATASET_TOPIC + 'prefetch', 'prefetch size')}, "
    f"{anchor(DATASET_TOPIC + 'interleave', 'interleave cycle_length')}, "
    f"{anchor(TF_RECORD_DATASET, 'reader buffer_size')})",
    "Reading data from files on demand: you should read data IN ADVANCE using the following tf.data API ("
    f"{anchor(DATASET_TOPIC + 'prefetch', 'prefetch')}, {anchor(DATASET_TOPIC + 'interleave', 'interleave')}, "
    f"{anchor(TF_RECORD_DATASET, 'reader buffer')})",
    "Other data reading or processing: you may consider using the "
    f"{anchor('https://www.tensorflow.org/programmers_guide/datasets', 'tf.data API')} (if you are not using it now)",
]


def one(x: float) -> str:
    return f"{x:.1f}" if x == x else "-nan"  # NaN as C++ prints x86's default NaN


def two(x: float) -> str:
    return f"{x:.2f}" if x == x else "-nan"


def summary(values) -> tuple[float, float, float, float]:
    """(average, standard deviation, minimum, maximum) as XProf's tsl Stat: the sample standard deviation from
    the sums, 0 when all values are equal. Stat starts its maximum at the smallest positive double, so values
    that are all zero are not all equal: a single zero has the deviation 0/0, NaN (printed "-nan")."""
    values = values.astype(np.float64).tolist() if isinstance(values, np.ndarray) else [float(v) for v in values]
    if not values:
        return 0.0, 0.0, 0.0, 0.0
    n, a = len(values), np.array(values)
    s, sq = float(np.cumsum(a)[-1]), float(np.cumsum(a * a)[-1])  # cumsum adds in order, as the loop of tsl's Stat
    lo, hi = min(values), max(*values, sys.float_info.min)
    variance = 0.0 if lo == hi else (sq - s * s / n) / (n - 1) if n > 1 else math.nan
    return s / n, math.sqrt(variance) if variance >= 0 else math.nan, lo, hi


@dataclass
class StepDetails:
    """PerGenericStepDetails of each step (ms)."""

    name: list[str]
    step: np.ndarray
    unknown: np.ndarray
    wait_input: np.ndarray
    host_to_device: np.ndarray
    output: np.ndarray
    device_compute: np.ndarray
    device_to_device: np.ndarray
    collectives: np.ndarray
    host_compute: np.ndarray
    host_prepare: np.ndarray
    host_compile: np.ndarray

    @classmethod
    def of(cls, steps: StepDb) -> StepDetails:
        return cls(
            name=[name or str(num) for name, num in zip(steps.name, steps.number.tolist())],
            step=steps.duration_ps / 1e9,
            unknown=steps.ms(UNKNOWN_TIME),
            wait_input=steps.ms(HOST_WAIT_INPUT),
            host_to_device=steps.ms(HOST_TO_DEVICE, DEVICE_WAIT_HOST),
            output=steps.ms(DEVICE_TO_HOST),
            device_compute=steps.ms(DEVICE_COMPUTE_16, DEVICE_COMPUTE_32),
            device_to_device=steps.ms(DEVICE_TO_DEVICE, DEVICE_WAIT_DEVICE),
            collectives=steps.ms(DEVICE_COLLECTIVES),
            host_compute=steps.ms(HOST_COMPUTE),
            host_prepare=steps.ms(HOST_PREPARE),
            host_compile=steps.ms(HOST_COMPILE),
        )

    @property
    def input(self) -> np.ndarray:
        return self.wait_input + self.host_to_device


@dataclass
class Bottleneck:
    input_classification: str = "unknown"
    input_statement: str = ("No step time measured. Therefore we cannot tell where the performance bottleneck is.")
    kernel_launch_classification: str = "no"
    kernel_launch_statement: str = ""
    all_other_classification: str = "no"
    all_other_statement: str = ""
    collectives_classification: str = "no"
    collectives_statement: str = ""


@dataclass
class InputAnalysis:
    """XProf's InputPipelineAnalysisResult (generic, non-TPU)."""

    hardware_type: str
    details: StepDetails
    step_time: tuple[float, float, float, float]
    input_ops: list[list] = field(default_factory=list)
    breakdown_us: dict[str, float] = field(default_factory=dict)
    bottleneck: Bottleneck = field(default_factory=Bottleneck)
    summary_next_step: str = ""
    warnings: list[str] = field(default_factory=list)


def analyse(stats: OpStats, steps: StepDb) -> InputAnalysis:
    details = StepDetails.of(steps)
    step_ms = details.step if stats.step_ps is None else stats.step_ps / 1e9
    result = InputAnalysis(stats.hardware_type, details, summary(step_ms))
    if not len(step_ms):
        result.warnings.append(EMPTY_INTERSECT if stats.empty_intersect else NO_STEP_MARKER)
    _host_result(stats, result)
    result.bottleneck = _bottleneck(details, result.breakdown_us)
    result.summary_next_step = _next_step(result.bottleneck.input_classification, result.breakdown_us)
    return result


def _input_category(name: str, type_: str) -> str | None:
    """XProf's input op categories, or None for ops that are not input ops."""
    lower = type_.lower()
    if lower in ("enqueue", "read", "preprocessing", "unknown"):
        return {"enqueue": "Enqueue", "read": "Demanded file read", "preprocessing": "Preprocessing"}.get(
            lower, "Unknown")
    if type_.startswith("InfeedEnqueue") or type_ == "MemcpyHToD":
        return "Enqueue"
    if type_ != "Dataset":
        return None
    readers = ("::TFRecord", "::TextLine", "::FixedLengthRecord", "::SSTable", "::RecordIO", "::ArrayRecord")
    if name.endswith(readers):
        advanced = ("::MemoryReader", "::MemoryWriter", "::Interleave", "::Prefetch", "::ParallelMap")
        return "Advanced file read" if any(a in name for a in advanced) else "Demanded file read"
    return "Preprocessing"


def _host_result(stats: OpStats, result: InputAnalysis) -> None:
    from profscope.models.analysis.xprof.framework_op_stats import sorted_ops

    db = stats.host
    chosen = []
    for i in sorted_ops(db, limit=len(db)).tolist():
        cat = _input_category(db.name[i], db.category[i])
        if cat is not None:
            chosen.append((i, cat))
    result.breakdown_us = {k: 0.0 for k in ("enqueue", "demanded", "advanced", "preprocessing", "unclassified")}
    if not chosen:
        return
    total_ps = sum(int(db.self_time_ps[i]) for i, _ in chosen)
    per_cat: dict[str, float] = {}
    for i, cat in chosen:
        time_ps, self_ps = int(db.time_ps[i]), int(db.self_time_ps[i])
        result.input_ops.append([
            db.name[i], float(db.occurrences[i]), time_ps / 1e9,
            100.0 * (time_ps / total_ps if total_ps else 0.0) / 100.0, self_ps / 1e9,
            100.0 * (self_ps / total_ps if total_ps else 0.0) / 100.0, cat,
        ])
        per_cat[cat] = per_cat.get(cat, 0.0) + self_ps / 1e6
    enqueue = per_cat.get("Enqueue", 0.0)
    demanded, advanced = per_cat.get("Demanded file read", 0.0), per_cat.get("Advanced file read", 0.0)
    pre = per_cat.get("Preprocessing", 0.0)
    total = demanded + advanced + pre
    ratio = min(1.0, _host_to_device_ratio(result))
    non_enqueue = enqueue * (1.0 - ratio) / ratio if ratio != 0.0 else total
    scale = (lambda x: non_enqueue * x / total if total else 0.0)
    b = result.breakdown_us
    b["enqueue"] = enqueue
    b["demanded"], b["advanced"], b["preprocessing"] = scale(demanded), scale(advanced), scale(pre)
    b["unclassified"] = max(0.0, non_enqueue - b["demanded"] - b["advanced"] - b["preprocessing"])


def _host_to_device_ratio(result: InputAnalysis) -> float:
    avg_step = result.step_time[0]
    if avg_step > 0:
        return summary(result.details.host_to_device)[0] / avg_step
    return 0.0


def _bottleneck(d: StepDetails, breakdown: dict[str, float]) -> Bottleneck:
    total = float(sum(d.step.tolist()))
    if total == 0:
        return Bottleneck()
    total_input = _sum(d.wait_input + d.host_to_device)
    input_pct = 100.0 * total_input / total
    collectives_pct = 100.0 * _sum(d.collectives) / total
    launch_pct = 100.0 * _sum(d.host_prepare) / total
    other_pct = 100.0 * _sum(d.unknown) / total
    b = Bottleneck()
    b.input_classification, b.input_statement = input_conclusion(input_pct, other_pct)
    reported = input_pct < INPUT_MODERATE and other_pct >= ALL_OTHER_MODERATE
    b.collectives_classification, b.collectives_statement = _level(
        collectives_pct, COLLECTIVES_HIGH, COLLECTIVES_MODERATE,
        f"{one(collectives_pct)} % of the total step time sampled is spent on 'Device Collective Communication'.")
    tf_data = breakdown.get("demanded", 0) > 0 or breakdown.get("advanced", 0) > 0 or breakdown.get(
        "preprocessing", 0) > 0
    b.kernel_launch_classification, b.kernel_launch_statement = _level(
        launch_pct, KERNEL_LAUNCH_HIGH, KERNEL_LAUNCH_MODERATE,
        f"{one(launch_pct)} % of the total step time sampled is spent on 'Kernel Launch'."
        + (KERNEL_LAUNCH_TF_DATA if tf_data else ""))
    if not reported:
        b.all_other_classification, b.all_other_statement = _level(
            other_pct, ALL_OTHER_HIGH, ALL_OTHER_MODERATE, one(other_pct) + ALL_OTHERS_PYTHON)
    return b


def input_conclusion(input_pct: float, other_pct: float = 0.0) -> tuple[str, str]:
    """XProf's InputAnalysis: the input classification and statement of a share of input time (and of 'All
    Others' time); TPU hosts pass no other time."""
    if input_pct >= INPUT_HIGH:
        return "host", (f"Your program is HIGHLY input-bound because {one(input_pct)}% of the total step time "
                        "sampled is waiting for input. Therefore, you should first focus on reducing the input time.")
    if input_pct >= INPUT_MODERATE:
        return "both", (f"Your program is MODERATELY input-bound because {one(input_pct)}% of the total step time "
                        "sampled is waiting for input. Therefore, you would need to reduce both the input time and "
                        "other time.")
    if other_pct >= ALL_OTHER_MODERATE:
        return "both", (f"Your program is POTENTIALLY input-bound because {one(other_pct)}% of the total step time "
                        "sampled is spent on 'All Others' time (which could be due to I/O or Python execution or "
                        "both).")
    return "device", (f"Your program is NOT input-bound because only {one(input_pct)}% of the total step time "
                      "sampled is waiting for input. Therefore, you should focus on reducing other time.")


def _sum(a: np.ndarray) -> float:
    total = 0.0
    for v in a.tolist():  # in step order, as XProf adds
        total += v
    return total


def _level(percent: float, high: float, moderate: float, statement: str) -> tuple[str, str]:
    if percent >= high:
        return "high", statement
    if percent >= moderate:
        return "moderate", statement
    return "no", ""


def _next_step(classification: str, breakdown: dict[str, float]) -> str:
    if classification in ("host", "both"):
        if not any(breakdown.get(k, 0) > 0 for k in ("demanded", "advanced", "preprocessing")):
            return ("Consider using " + anchor("https://www.tensorflow.org/guide/data", "the tf.data API")
                    + " to enable profiler's host-side analysis for input pipeline. Profiler currently does not "
                    f"support custom input pipeline (please ignore Section {HOST_ANALYSIS_SECTION} below).")
        return f"Look at Section {HOST_ANALYSIS_SECTION} for the breakdown of input time on the host."
    return "You may skip the rest of this page."


# ---------------------------------------------------------------- DataTables

STEP_COLUMNS = [
    column("stepnum", "string", "Step number"),
    column("deviceComputeTimeMs", "number", "Device compute"),
    column("deviceToDeviceTimeMs", "number", "Device to device"),
    column("deviceCollectivesTimeMs", "number", "Device collective communication"),
    column("hostComputeTimeMs", "number", "Host compute"),
    column("kernelLaunchTimeMs", "number", "Kernel launch"),
    column("infeedTimeMs", "number", "Input"),
    column("outfeedTimeMs", "number", "Output"),
    column("compileTimeMs", "number", "Compilation"),
    column("otherTimeMs", "number", "All others"),
    column("tooltip", "string", "tooltip", {"role": "tooltip"}),
    column("stepTimeMs", "number", "Step time"),
]


def step_table(a: InputAnalysis) -> dict:
    """XProf's generic step-time DataTable (input pipeline's second, overview's second)."""
    d = a.details
    p = {
        "step_time_graph_column_ids": "stepnum,deviceComputeTimeMs,deviceToDeviceTimeMs,deviceCollectivesTimeMs,"
        "hostComputeTimeMs,kernelLaunchTimeMs,infeedTimeMs,outfeedTimeMs,compileTimeMs,otherTimeMs, tooltip",
        "hardware_type": a.hardware_type,
    }
    avg, sdv, lo, hi = a.step_time
    p.update(steptime_ms_average=one(avg), steptime_ms_standard_deviation=one(sdv), steptime_ms_minimum=one(lo),
             steptime_ms_maximum=one(hi))
    for key, values in (("device_compute_time_ms", d.device_compute), ("device_to_device_time_ms",
                        d.device_to_device), ("device_collectives_time_ms", d.collectives),
                        ("infeed_time_ms", d.input), ("outfeed_time_ms", d.output),
                        ("host_compute_time_ms", d.host_compute), ("kernel_launch_time_ms", d.host_prepare),
                        ("compile_time_ms", d.host_compile), ("other_time_ms", d.unknown)):
        s = summary(values)
        p[key + "_avg"], p[key + "_sdv"] = one(s[0]), one(s[1])
    b = a.bottleneck
    p.update(input_conclusion=b.input_statement, device_collectives_bottleneck=b.collectives_statement,
             device_collectives_statement=b.collectives_statement, kernel_launch_bottleneck=b.kernel_launch_statement,
             kernel_launch_statement=b.kernel_launch_statement, all_other_bottleneck=b.all_other_statement,
             all_other_statement=b.all_other_statement, summary_nextstep=a.summary_next_step)
    rows = []
    inputs = d.input  # a sum of two columns: once, not per step
    for i, name in enumerate(d.name):
        tooltip = (f"Step {name}, duration: {two(d.step[i])} ms\n-All others: {two(d.unknown[i])} ms"
                   f"\n-Compilation: {two(d.host_compile[i])} ms\n-Output: {two(d.output[i])} ms"
                   f"\n-Input: {two(inputs[i])} ms\n-Kernel launch: {two(d.host_prepare[i])} ms"
                   f"\n-Host compute: {two(d.host_compute[i])} ms"
                   f"\n-Device collectives: {two(d.collectives[i])} ms"
                   f"\n-Device to device: {two(d.device_to_device[i])} ms"
                   f"\n-Device compute: {two(d.device_compute[i])} ms")
        rows.append([name, float(d.device_compute[i]), float(d.device_to_device[i]), float(d.collectives[i]),
                     float(d.host_compute[i]), float(d.host_prepare[i]), float(inputs[i]), float(d.output[i]),
                     float(d.host_compile[i]), float(d.unknown[i]), tooltip, float(d.step[i])])
    return table(STEP_COLUMNS, rows, p)


HOST_COLUMNS = [
    column("opName", "string", "Input Op"),
    column("count", "number", "Count"),
    column("timeInMs", "number", "Total Time (in ms)"),
    column("timeInPercent", "number", "Total Time (as % of total input-processing time)"),
    column("selfTimeInMs", "number", "Total Self Time (in ms)"),
    column("selfTimeInPercent", "number", "Total Self Time (as % of total input-processing time)"),
    column("category", "string", "Category"),
]


def diagnostics_table(errors: list[str], warnings: list[str]) -> dict:
    rows = [["WARNING", w] for w in warnings] + [["ERROR", e] for e in errors]
    return table([column("severity", "string", "Severity"), column("message", "string", "Message")], rows)


def input_pipeline_json(a: InputAnalysis) -> list[dict]:
    b = a.breakdown_us
    host = table(HOST_COLUMNS, a.input_ops, {
        "enqueue_us": f"{b.get('enqueue', 0.0):.3f}",
        "demanded_file_read_us": f"{b.get('demanded', 0.0):.3f}",
        "advanced_file_read_us": f"{b.get('advanced', 0.0):.3f}",
        "preprocessing_us": f"{b.get('preprocessing', 0.0):.3f}",
        "unclassified_nonequeue_us": f"{b.get('unclassified', 0.0):.3f}",
    })
    recommendation = table([column("link", "string", "link")], [[r] for r in RECOMMENDATIONS])
    return [table([], []), step_table(a), host, recommendation, diagnostics_table([], a.warnings)]


def input_analysis(paths: list[Path], task: TaskState) -> tuple[OpStats, InputAnalysis]:
    stats = op_stats(paths, task, steps=True)
    assert stats.steps is not None
    if stats.tpu_steps is not None and stats.hardware_type == "TPU" and "GPU" in stats.device_type:
        return _gpu_and_tpu_host(stats)  # TensorCores in a GPU's run environment: a host with both
    return stats, analyse(stats, stats.steps)


def _gpu_and_tpu_host(stats: OpStats) -> tuple[OpStats, InputAnalysis]:
    """A host with both GPU and TPU planes: XProf's generic (GPU) analysis of its TensorCores' steps, none of
    whose breakdowns it can read: the steps' times only (each the longest core's), no step rows."""
    from dataclasses import replace

    from profscope.models.analysis.xprof.tpu_steps import step_details

    assert stats.tpu_steps is not None
    none = np.zeros(0, np.int64)
    details = StepDetails.of(StepDb(none, [], none, none, {}))
    result = InputAnalysis("GPU", details, summary(step_details(stats.tpu_steps).step_ms))
    _host_result(stats, result)
    result.bottleneck = _bottleneck(details, result.breakdown_us)
    result.summary_next_step = _next_step(result.bottleneck.input_classification, result.breakdown_us)
    return replace(stats, hardware_type="GPU", tpu_steps=None), result


@register("input_pipeline_analyzer")
def input_pipeline_analyzer(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    stats, analysis = input_analysis(paths, task)
    if stats.tpu_steps is not None:  # TensorCores: XProf's TPU step breakdown (tpu_steps.py)
        from profscope.models.analysis.xprof.tpu_steps import tpu_input_pipeline_json

        return ToolData(dumps(tpu_input_pipeline_json(stats)), "json")
    return ToolData(dumps(input_pipeline_json(analysis)), "json")
