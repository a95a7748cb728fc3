"""GPU statistics of the PyTorch traces users have beyond today's Kineto:
PyTorch 1.8-1.10's older schema, ROCm (AMD MI250), Meta's MTIA, and
rocprof v1's own trace, each checked against totals computed here straight
from the JSON."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from profscope.models.analysis import trace_stats
from profscope.models.formats import chrome_trace as ct

DATA = Path(__file__).parent / "data" / "chrome_trace"
PYTORCH_18 = DATA / "pytorch_1.8" / "gpu_metrics_input.json.gz"
MI250 = DATA / "rocm_mi250" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
MTIA = DATA / "mtia" / "mtia_inference_rank_0.json.gz"
# A real cuDNN kernel name (nccl_data.json.gz of HTA's tests, shortened): "threaDMap" holds "dMa".
CUTLASS = ("_ZN19cutlass_cudnn_train6KernelINS_4conv6kernel23ImplicitGemmConvolutionINS1_11threadblock22ImplicitGemm"
           "MultistageINS_4gemm9GemmShapeILi128ELi128ELi32EEENS_9transform11threadblock28PredicatedTileAccessIterator"
           "INS_11MatrixShapeILi128ELi32EEENS_6half_tENS_6layout11TensorNHWCENS_8transform31PitchLinearWarpRakedThreadMap")


def load(path: Path):
    return ct.build_timeline([("", ct.scan(path))])


def events(path: Path) -> list[dict]:
    return json.load(gzip.open(path, "rt"))["traceEvents"]


def gpu_json(path: Path, categories) -> list[dict]:
    return [e for e in events(path) if e.get("ph") == "X" and e.get("cat") in categories]


def hta_type(name: str) -> str:
    """HTA's get_kernel_type (hta/utils/utils.py, hta/common/types.py), written out here."""
    if re.match(r"nccl|hip|hccl|.*ncclKernel", name):
        return "COMMUNICATION"
    if re.match(r"(hip)?Memcpy|(hip)?Memset|dma", name):
        return "MEMORY"
    if re.match(r"nccl|.*Memcpy|.*Memset|.*dma|.*Sync|Stream Wait Event|cuda.*LaunchKernel|runFunction|hip|job_exe"
                r"|packet|pe_exe|cpum_exe_subgraph|hccl|collective_subgraph_execution", name):
        return "OTHER"
    return "COMPUTATION"


def check_kernels(tl, gpu: list[dict]) -> None:
    """kernel_stats: one row per name, totals and types as the JSON says."""
    k = trace_stats.kernel_stats(tl)
    want: dict[str, list[float]] = {}
    for e in gpu:
        want.setdefault(e["name"], []).append(e["dur"])
    assert sorted(k.name) == sorted(want)
    for i, name in enumerate(k.name):
        assert k.count[i] == len(want[name])
        assert k.total_ps[i] == pytest.approx(sum(want[name]) * 1e6, abs=len(want[name]))
        assert k.type[i] == hta_type(name)
    assert int(k.total_ps.sum()) == pytest.approx(sum(e["dur"] for e in gpu) * 1e6, abs=len(gpu))


def check_overview(tl, gpu: list[dict]) -> dict:
    (o,) = json.loads(trace_stats.tool_json(tl, "overview", {}))["hosts"]
    span = max(e["ts"] + e["dur"] for e in gpu) - min(e["ts"] for e in gpu)
    assert o["span_us"] == pytest.approx(span, abs=0.002)
    assert o["idle_us"] + o["compute_us"] + o["non_compute_us"] == pytest.approx(span, abs=0.004)
    assert o["compute_us"] > 0
    return o


def test_kernel_types_are_htas_anchored_patterns():
    assert trace_stats.kernel_type(CUTLASS) == "COMPUTATION"  # the substring test made it MEMORY
    assert trace_stats.kernel_type("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)") \
        == "COMMUNICATION"
    assert trace_stats.kernel_type("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)") \
        == "COMMUNICATION"
    assert trace_stats.kernel_type("void at::native::ncclKernel_wrapper()") == "COMMUNICATION"
    assert trace_stats.kernel_type("Memcpy HtoD (Pageable -> Device)") == "MEMORY"
    assert trace_stats.kernel_type("Memset (Device)") == "MEMORY"
    assert trace_stats.kernel_type("hipMemcpyAsync") == "COMMUNICATION"  # ^hip comes first in HTA
    assert trace_stats.kernel_type("dma_request") == "MEMORY"
    assert trace_stats.kernel_type("pe_exe") == "OTHER"
    assert trace_stats.kernel_type("cudaStreamSynchronize") == "OTHER"
    # HTA leaves a name with a lower-case "dma" or "Memcpy" anywhere out of computation.
    assert trace_stats.kernel_type("void fused_dma_copy_kernel<float>()") == "OTHER"
    assert trace_stats.kernel_type("void at::native::elementwise_kernel<128, 2>()") == "COMPUTATION"
    for name in (CUTLASS, "ncclKernel_x", "Memcpy DtoH", "dma_request", "pe_exe", "void k()", "hipLaunchKernel"):
        assert trace_stats.kernel_type(name) == hta_type(name)


def test_pytorch_1_8_trace_has_kernel_operator_and_overview_statistics():
    tl = load(PYTORCH_18)
    gpu = gpu_json(PYTORCH_18, ("Kernel", "Memcpy", "Memset"))
    assert len(gpu) == 32
    check_kernels(tl, gpu)
    o = check_overview(tl, gpu)
    # The four V100s of computeProperties, with their memory.
    devices = trace_stats.device_list(o)
    assert [(d["id"], d["name"], d["totalGlobalMem"], d["computeMajor"]) for d in devices] == [
        (0, "Tesla V100-DGXS-32GB", 34084028416, 7), (1, "Tesla V100-DGXS-32GB", 34087305216, 7),
        (2, "Tesla V100-DGXS-32GB", 34087305216, 7), (3, "Tesla V100-DGXS-32GB", 34087305216, 7)]
    # Operators: every Operator name, their host time, and the GPU time their launches (async flows) caused.
    ops = trace_stats.op_stats(tl)
    operators = [e for e in events(PYTORCH_18) if e.get("cat") == "Operator"]
    assert sorted(ops.name) == sorted({e["name"] for e in operators})
    assert int(ops.host_total_ps.sum()) == sum(e["dur"] for e in operators) * 1_000_000
    launched = {e["id"] for e in events(PYTORCH_18) if e.get("cat") == "async" and e["ph"] == "s"}
    assert len(launched) == 32
    assert int(ops.device_self_ps.sum()) == sum(e["dur"] for e in gpu) * 1_000_000  # every launch is inside an op
    stats = trace_stats.compute(tl)
    assert stats.devices_used == {"": [0]} and stats.note == ""


def test_pytorch_1_9_memory_capacity_comes_from_device_properties(tmp_path):
    """A 1.9 trace's [memory] events carry no Total Reserved: the capacity is
    the device's totalGlobalMem (deviceProperties, or 1.8's computeProperties)."""
    doc = json.load(gzip.open(PYTORCH_18, "rt"))
    doc["traceEvents"].append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 24572,
                               "tid": 24572, "ts": 1621401187223300,
                               "args": {"Device Type": 1, "Device Id": 1, "Addr": 140, "Bytes": 512}})
    path = tmp_path / "old.pt.trace.json"
    path.write_text(json.dumps(doc))
    profile = ct.trace_memory_profile(ct.scan(path), "")
    assert profile.allocators["cuda:1"].summary.memory_capacity == 34087305216
    doc["deviceProperties"] = doc.pop("computeProperties")
    path.write_text(json.dumps(doc))
    assert ct.trace_memory_profile(ct.scan(path), "").allocators["cuda:1"].summary.memory_capacity == 34087305216


def test_rocm_mi250_trace():
    tl = load(MI250)
    gpu = gpu_json(MI250, trace_stats.GPU_CATEGORIES)
    check_kernels(tl, gpu)
    check_overview(tl, gpu)
    stats = trace_stats.compute(tl)
    assert stats.devices_used == {"": [2]} and stats.note == ""
    assert {d["name"] for d in trace_stats.device_list(stats.overview[0].properties)} == {"AMD Radeon Graphics"}


def test_mtia_trace():
    tl = load(MTIA)
    gpu = gpu_json(MTIA, ("mtia_ccp_events",))
    check_kernels(tl, gpu)
    o = check_overview(tl, gpu)
    k = trace_stats.kernel_stats(tl)
    by_type = {t: int(k.total_ps[np.array(k.type) == t].sum()) for t in set(k.type)}
    assert set(by_type) == {"COMPUTATION", "MEMORY", "OTHER"}  # dma_request; pe_exe
    assert by_type["MEMORY"] == pytest.approx(sum(e["dur"] for e in gpu if e["name"].startswith("dma")) * 1e6, rel=1e-9)
    assert o["non_compute_us"] > 0
    stats = trace_stats.compute(tl)
    assert stats.devices_used == {"": [17]} and stats.note == ""


def write_rocprof_v1_trace(path: Path) -> Path:
    """A trace as rocprof v1 writes it: the same sequence of writes as ROCm
    rocprofiler's bin/tblextr.py with bin/sqlitedb.py (open_json, label_json
    per process, dump_json of the kernel and API tables, flow_json,
    metadata_json, close_json), on a small run's numbers."""
    with open(path, "w") as fd:  # open_json
        fd.write('{ "traceEvents":[{}\n')
    for k, (pid, label) in enumerate(((2, "CPU HIP API"), (0, "COPY"), (6, "GPU0"), (518, "GPU Barriers0"))):
        with open(path, "a") as fd:  # label_json
            fd.write(f',{{"args":{{"name":"{label}"}},"ph":"M","pid":{pid},"name":"process_name","sort_index":{k}}}\n')
    kernels = [("Cijk_Alik_Bljk_SB_MT64x64x8_SN_1LDSB0_APM1", 6, 0, 1000, 40),
               ("void at::native::vectorized_elementwise_kernel<4>(int)", 6, 0, 1050, 5),
               ("Cijk_Alik_Bljk_SB_MT64x64x8_SN_1LDSB0_APM1", 6, 0, 1100, 41)]
    api = [("hipLaunchKernel", 2, 7001, 990, 6), ("hipLaunchKernel", 2, 7001, 1045, 4),
           ("hipLaunchKernel", 2, 7001, 1090, 5)]
    with open(path, "a") as fd:  # dump_json: every value quoted, args from the data table
        for index, (name, pid, tid, ts, dur) in enumerate(kernels + api):
            vals = ",".join(f'"{k}":"{v}"' for k, v in (("name", name), ("pid", pid), ("tid", tid), ("ts", ts),
                                                      ("dur", dur)))
            fd.write(f',{{"ph":"X",{vals},\n  "args":{{\n    "Index":"{index}"\n  }}\n}}\n')
    with open(path, "a") as fd:  # flow_json
        for k, ((_, _, tid, ts, _), (_, _, _, to_ts, _)) in enumerate(zip(api, kernels)):
            fd.write(f',{{"ts":{ts},"ph":"s","cat":"DataFlow","id":{k},"pid":2,"tid":{tid},"name":"dep"}}\n')
            fd.write(f',{{"ts":{to_ts},"ph":"t","cat":"DataFlow","id":{k},"pid":6,"tid":0,"name":"dep"}}\n')
    with open(path, "a") as fd:  # metadata_json
        fd.write("],\n")
        fd.write('"otherData": {\n')
        fd.write('    "Agent0.Name": "gfx90a"\n')
        fd.write("  }\n")
    with open(path, "a") as fd:  # close_json
        fd.write("}")
    return path


def test_rocprof_v1_trace_says_its_device_events_are_not_classified(tmp_path, capsys):
    from profscope.viewer.cli import main

    path = write_rocprof_v1_trace(tmp_path / "results.json")
    tl = load(path)
    assert "GPU0 (pid 6)" in tl.groups and len(tl) == 6
    assert len(trace_stats.kernel_stats(tl)) == 0
    note = trace_stats.compute(tl).note
    assert note.startswith("this trace's device events (3 on GPU0 (pid 6)) have no category (\"cat\")")
    for tool in ("kernel_stats", "overview"):
        assert main(["export", str(path), "--tool", tool, "-o", "-"]) == 0
        out = capsys.readouterr()
        assert f"profscope: warning: {note}" in out.err
        assert json.loads(out.out)  # the (empty) statistics still come
    # An MTIA-like device process whose events are of a category not known: named.
    doc = json.load(gzip.open(MTIA, "rt"))
    for e in doc["traceEvents"]:
        if e.get("cat") == "mtia_ccp_events":
            e["cat"] = "mtia_future_events"
    other = tmp_path / "other.json"
    other.write_text(json.dumps(doc))
    note = trace_stats.compute(load(other)).note
    assert 'are of categories "mtia_future_events", which Profscope does not classify' in note
    assert trace_stats.compute(load(MTIA)).note == ""


def test_statistics_view_and_report_show_devices_and_the_note(qtbot, tmp_path):
    from profscope.models.repository.locations import open_location
    from profscope.viewer.report import write_report
    from profscope.widgets.stats.trace_stats_view import TraceStatsView

    v = TraceStatsView()
    qtbot.addWidget(v)
    v.set_stats(trace_stats.compute(load(PYTORCH_18)))
    label = v.overview.device_label.text()
    assert "GPU activity on device 0" in label and "no GPU devices" not in label
    assert v.overview.devices.rowCount() == 4
    assert v.overview.devices.text(0, 1) == "Tesla V100-DGXS-32GB" and v.overview.devices.text(0, 4) == "7.0"
    assert v.overview.devices.text(0, 2).startswith("31.7")  # 34084028416 bytes
    assert v.kernels.model.rowCount() == 14 and v.operators.model.rowCount() == 51
    folder = tmp_path / "rocprof"
    folder.mkdir()
    write_rocprof_v1_trace(folder / "results.json")
    v.set_stats(trace_stats.compute(load(folder / "results.json")))
    assert "which Profscope does not classify" in v.overview.device_label.text()
    repo, _ = open_location(str(folder))
    write_report(repo, tmp_path / "report", location=str(folder))
    index = (tmp_path / "report" / "index.html").read_text()
    assert "This trace&#x27;s device events (3 on GPU0 (pid 6)) have no category" in index
