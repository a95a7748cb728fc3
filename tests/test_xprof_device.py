"""XProf's tools of XSpaces with device planes (GPU of TensorFlow and of
JAX, a ROCm-named GPU, TPU) against XProf 2.24.2's own converter output
(tests/data/xprof/device/tools/, made with the XSpaces by
tests/data/producers/xprof_device_planes.py): the same tables, rows and
properties, numbers within 1e-6 relative, through `profscope export`.
Tools not computed for a kind of device plane yet say so (a clear message
and a non-zero exit)."""

import gzip
import json
import shutil

import pytest
from conftest import DATA
from test_xprof_tools import assert_same, export

from profscope.models.analysis.xprof.device_op_metrics import parse_kernel_details
from profscope.protos import xplane_pb2
from profscope.viewer.cli import main

XPROF = DATA / "xprof" / "device"
VARIANTS = ("gpu_tf", "gpu_tf2", "gpu_jax", "rocm_jax", "tpu_jax", "tpu_ops", "tpu_mem", "tpu_vmem")
ALL_TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "hlo_stats",
             "op_profile", "roofline_model")
# (variant, tool) pairs Profscope computes, each equal to XProf's answer.
COMPUTED = [
    *[(v, "kernel_stats") for v in VARIANTS],
    *[(v, t) for v in ("gpu_tf", "gpu_tf2") for t in ALL_TOOLS if t != "kernel_stats"],
    # XLA ops on a GPU: XLA's GPU cost analysis of the modules' HloProtos (hlo_cost.py).
    *[(v, t) for v in ("gpu_jax", "rocm_jax", "gpu_jax_ops") for t in ALL_TOOLS if t != "kernel_stats"],
    ("gpu_jax_ops", "kernel_stats"),
    # gpu_jax_ops' dot and convolution as XLA:GPU's cuBLASLt and cuDNN custom calls; the legacy cuBLAS call
    *[("gpu_jax_dnn", t) for t in ALL_TOOLS],
    # two GPUs running XLA ops
    *[("gpu_jax2", t) for t in ALL_TOOLS],
    ("gpu_jax_dnn_legacy", "hlo_stats"),
    # collectives, sync and in XLA:GPU's async form (-start/-done pairs, async-start/-update/-done), and
    # rng-get-and-update-state
    *[("gpu_jax_collectives", t) for t in ALL_TOOLS],
    *[("tpu_jax", t) for t in ("framework_op_stats", "overview_page", "input_pipeline_analyzer")],
    *[(v, t) for v in ("tpu_ops", "tpu_mem", "tpu_vmem") for t in ALL_TOOLS if t != "kernel_stats"],
    # tpu_ops whose steps the host's TPU launches (DoEnqueueProgram) tie to its steps
    *[("tpu_launch", t) for t in ALL_TOOLS],
    *[(v, t) for v in ("tpu_jax", "small_emptygpu") for t in ("hlo_stats", "op_profile")],
    ("tpu_jax", "roofline_model"),
    ("small_emptygpu", "roofline_model"),
    # small.xplane.pb with a GPU plane that recorded nothing.
    *[("small_emptygpu", t) for t in ("kernel_stats", "framework_op_stats", "overview_page",
                                      "input_pipeline_analyzer")],
]


def xprof_answer(name: str, tool: str):
    path = XPROF / "tools" / f"{name}.{tool}.json"
    if not path.exists():  # answers over 64 KiB are stored gzipped
        return json.loads(gzip.decompress(path.with_suffix(".json.gz").read_bytes()))
    return json.loads(path.read_bytes())


@pytest.mark.parametrize(("name", "tool"), COMPUTED)
def test_export_equals_xprofs(tmp_path, name, tool):
    assert_same(export(tmp_path, XPROF / f"{name}.xplane.pb", tool), xprof_answer(name, tool))


@pytest.mark.parametrize("name", ["gpu_tf", "gpu_tf2", "gpu_jax", "rocm_jax", "gpu_jax_ops", "gpu_jax_dnn", "gpu_jax2",
                                  "gpu_jax_collectives", "tpu_jax",
                                  "tpu_ops",
                                  "tpu_launch",
                                  "tpu_mem", "tpu_vmem", "small_emptygpu"])
def test_op_profile_by_category_equals_xprofs(tmp_path, name):
    got = export(tmp_path, XPROF / f"{name}.xplane.pb", "op_profile", "--param", "group_by=category")
    assert_same(got, xprof_answer(name, "op_profile.by_category"))


def rows(table):
    return [[c["v"] for c in r["c"]] for r in table["rows"]]


def test_kernel_rows_as_xprof_2_24_2_gives_them(tmp_path):
    table = rows(export(tmp_path, XPROF / "gpu_tf.xplane.pb", "kernel_stats"))
    by_name = {r[1]: r for r in table}
    # h884 and 16816 kernels use TensorCores; an sgemm does not, though its op (MatMul) is eligible.
    assert by_name["volta_h884cudnn_256x64_ldg8_relu_exp_small_nhwc_tn_v1"][7:9] == [True, True]
    assert by_name["volta_sgemm_128x64_nn"][7:9] == [True, False]
    # XProf 2.24.2 keeps a kernel of less than a nanosecond (upstream's newer source skips it).
    tiny = by_name["void cudnn::ops::nchwToNhwcKernel<float>"]
    assert tiny[9:] == ["model/conv/Conv2D", 8.0, 0.028, 0.003, 0.0, 0.007]
    assert tiny[3] == 4096.0 and tiny[4:6] == ["32,8,1", "16,4,1"]
    # Occupancy passes through a float32, as in XProf's proto.
    assert by_name["ampere_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"][6] == pytest.approx(8.300000190734863,
                                                                                                  rel=1e-12)
    assert [r[0] for r in table] == [float(i) for i in range(1, len(table) + 1)]


def test_jax_kernels_name_their_framework_op_from_the_hlo(tmp_path):
    table = rows(export(tmp_path, XPROF / "gpu_jax.xplane.pb", "kernel_stats"))
    ops = {r[1]: (r[9], r[7]) for r in table}
    assert ops["ynn_fusion.2"] == ("jit(train_step)/jvp()/dot_general", True)
    assert ops["tanh_bitcast_fusion"] == ("jit(spread)/tanh", False)


def test_device_rows_lead_framework_op_stats(tmp_path):
    with_idle, without_idle = export(tmp_path, XPROF / "gpu_tf.xplane.pb", "framework_op_stats")
    first = rows(with_idle)[0]
    assert first[1:5] == ["Device", "Conv2D", "model/conv/Conv2D", 8.0]  # two kernels per run: 8 occurrences
    assert first[17] == pytest.approx(440.028 / 440.056)  # the TensorCore kernel's share of the op's kernel time
    assert "IDLE" not in [r[3] for r in rows(without_idle)]


def test_two_gpus_steps_and_precision(tmp_path):
    """Two GPUs: a step spans its kernels on the GPU where they span longest, copies count as input/output,
    NCCL kernels as collectives; little 16-bit compute gets XProf's precision advice."""
    overview = export(tmp_path, XPROF / "gpu_tf2.xplane.pb", "overview_page")
    steps = rows(overview[1])
    assert steps[0][0] == "1" and steps[0][3] > 0 and steps[0][6] > 0  # collectives, input
    assert overview[2]["p"]["device_type"] == "Nvidia GPU (Ampere)" and overview[2]["p"]["device_core_count"] == "2"
    assert overview[3]["p"]["precision_statement"].startswith("Only 9.0% of device computation is 16 bit.")


def test_kernel_details_parsing():
    assert parse_kernel_details("regs:32 static_shared:0 dynamic_shared:16 grid:2,1,1 block:64,2,1 occ_pct:50.5") \
        == (32, 0, 16, (64, 2, 1), (2, 1, 1), 50.5)
    # Unreadable tokens leave XProf's defaults.
    assert parse_kernel_details("regs:x grid:1,2 block bogus") == (0, 0, 0, (1, 1, 1), (1, 1, 1), 0.0)


def test_tpu_steps_by_category(tmp_path):
    """Two TensorCores whose XLA ops carry their metadata: each core's step lasts the step's time (the longer
    core's); its infeed, outfeed, host send and idle time are waits, the rest compute; the step's compute is the
    least of the cores', its input the most, its output their average."""
    pipeline = export(tmp_path, XPROF / "tpu_ops.xplane.pb", "input_pipeline_analyzer")
    first = rows(pipeline[1])[0]
    assert first[0] == "8"  # XProf groups the device steps after the host's eight
    assert first[1] == pytest.approx(0.04975)  # 68.371 us less core 0's infeed, outfeed, host send and idle
    assert first[4:8] == pytest.approx([0.006003, 0.0035015, 0.0091165, 0.002003])
    assert pipeline[1]["p"]["output_conclusion"].startswith("Your program is MODERATELY output-bound because 5.1%")
    # The overview's top ops: framework ops (the HLO op where the metadata names none), FLOPs from the metadata.
    overview = export(tmp_path, XPROF / "tpu_ops.xplane.pb", "overview_page")
    top = rows(overview[0])
    assert [r[3] for r in top[:2]] == ["jit(train_step)/conv_general_dilated", "jit(train_step)/dot_general"]
    assert top[0][4] == pytest.approx(16 * 2e6 / 336.08e3)  # 16 runs of 2 MFLOP in 336.08 us
    assert overview[0]["p"]["device_duty_cycle_percent"] == "60.0%"  # infeed, outfeed and host send are off duty


def test_tpu_op_with_symbols_joins_the_op_profile(tmp_path):
    """XProf counts a TPU op by its metadata's program_id and symbol_id: tpu_jax's ops have none (the device's span
    is IDLE); given both, one op becomes a leaf of the op profile under its program and category, and a row of
    the roofline with its self-time share."""
    space = xplane_pb2.XSpace.FromString((XPROF / "tpu_jax.xplane.pb").read_bytes())
    tpu = next(p for p in space.planes if p.name == "/device:TPU:0")
    ids = {}
    for name in ("program_id", "symbol_id"):
        ids[name] = max(tpu.stat_metadata) + 1
        tpu.stat_metadata[ids[name]].id = ids[name]
        tpu.stat_metadata[ids[name]].name = name
    ops = next(line for line in tpu.lines if line.name == "XLA Ops")
    metadata = tpu.event_metadata[ops.events[0].metadata_id]
    metadata.stats.add(metadata_id=ids["program_id"], int64_value=16)
    metadata.stats.add(metadata_id=ids["symbol_id"], int64_value=3)
    path = tmp_path / "tpu.xplane.pb"
    path.write_bytes(space.SerializeToString())
    tree = export(tmp_path, path, "op_profile")["byProgramExcludeIdle"]
    (program,) = tree["children"]
    (category,) = program["children"]
    (leaf,) = category["children"]
    assert (program["name"], category["name"], leaf["name"]) == ("jit_train_step(16)", "", metadata.name)
    assert leaf["xla"]["programId"] == "16" and leaf["metrics"]["rawTime"] == tree["metrics"]["rawTime"] > 0
    roofline = rows(export(tmp_path, path, "roofline_model")[0])
    assert [r[3] for r in roofline[:2]] == ["Program", metadata.name] and roofline[1][-3:] == [True, "16", ""]


def test_gpu_roofs_from_the_device_capabilities():
    """XProf's peaks: FLOPs per SM and cycle by architecture x clock x SMs; HBM from memory_bandwidth;
    shared memory 256 bytes per SM and cycle on NVIDIA, by architecture on AMD (unknown: zero)."""
    from profscope.models.analysis.xprof.device_op_metrics import gpu_roofs

    volta = {"device_vendor": "Nvidia", "compute_cap_major": 7, "compute_cap_minor": 0, "clock_rate": 1_530_000,
             "core_count": 80, "memory_bandwidth": 900_000_000_000}
    roofs = gpu_roofs(volta)
    assert roofs.peak_gflops == pytest.approx(1024 * 1.53 * 80)
    assert roofs.shared_bytes_per_s == pytest.approx(256 * 1.53e9 * 80)
    hopper = gpu_roofs({**volta, "compute_cap_major": 9})
    assert hopper.peak_gflops == pytest.approx(4096 * 1.53 * 80)
    newer = gpu_roofs({**volta, "compute_cap_major": 12})  # unknown: the newest known architecture's
    assert newer.peak_gflops == pytest.approx(8192 * 1.53 * 80)
    amd = gpu_roofs({**volta, "device_vendor": "AMD", "compute_cap_major": 9, "compute_cap_minor": 4})
    assert amd.peak_gflops == pytest.approx(2048 * 1.53 * 80) and amd.shared_bytes_per_s == pytest.approx(
        128 * 1.53e9 * 80)
    assert gpu_roofs({**volta, "device_vendor": "AMD"}).peak_gflops == 0.0


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_two_hosts_with_gpus_equal_xprofs(tmp_path, tool):
    """A session of two hosts with GPUs (gpu_tf, gpu_tf2): kernels and device ops of both, as XProf adds them;
    the steps both hosts have by XProf's step intersection."""
    session = tmp_path / "run"
    session.mkdir()
    shutil.copy(XPROF / "gpu_tf.xplane.pb", session / "a.xplane.pb")
    shutil.copy(XPROF / "gpu_tf2.xplane.pb", session / "b.xplane.pb")
    assert_same(export(tmp_path, session, tool), xprof_answer("gpu_tf+gpu_tf2", tool))


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_two_hosts_of_xla_gpus_equal_xprofs(tmp_path, tool):
    """A session of two hosts whose GPUs run XLA ops (gpu_jax: one GPU; gpu_jax2: two): the three planes' ops
    combined as XProf combines them, the steps by its step intersection."""
    session = session_of(tmp_path, [("gpu_jax", 0), ("gpu_jax2", 0)])
    assert_same(export(tmp_path, session, tool), xprof_answer("gpu_jax+gpu_jax2", tool))
    if tool == "op_profile":
        got = export(tmp_path, session, tool, "--param", "group_by=category")
        assert_same(got, xprof_answer("gpu_jax+gpu_jax2", "op_profile.by_category"))


@pytest.mark.parametrize("tool", ALL_TOOLS)
def test_xla_ops_beside_tensorflow_kernels_equal_xprofs(tmp_path, tool):
    """TensorFlow's kernels and its XLA clusters' kernels on one GPU (gpu_tf_xla, the clusters' HloProtos of a
    real jit_compile profile), with a second GPU of only TF kernels (gpu_tf_xla2), without the modules
    (gpu_tf_xla_nohlo: the XLA ops skipped, the TF kernels kept), and a session of a host of XLA ops beside a host
    of TensorFlow kernels: one db of both kinds of rows, as XProf builds and combines it."""
    for name, session in (("gpu_tf_xla", XPROF / "gpu_tf_xla.xplane.pb"),
                          ("gpu_tf_xla2", XPROF / "gpu_tf_xla2.xplane.pb"),
                          ("gpu_tf_xla_nohlo", XPROF / "gpu_tf_xla_nohlo.xplane.pb"),
                          ("gpu_jax+gpu_tf", session_of(tmp_path, [("gpu_jax", 0), ("gpu_tf", 0)]))):
        assert_same(export(tmp_path, session, tool), xprof_answer(name, tool))
        if tool == "op_profile":
            got = export(tmp_path, session, tool, "--param", "group_by=category")
            assert_same(got, xprof_answer(name, "op_profile.by_category"))


def test_each_event_of_an_xla_op_is_an_occurrence(tmp_path):
    """XProf 2.24.2 counts every kernel of an XLA op (MatMul.2's two cuBLAS kernels: two occurrences a step), a
    TensorFlow kernel between them changes nothing, an event naming no instruction of its module is skipped
    though it carries a tf_op, and TF kernels are rows of program 0 without costs."""
    table = {r[3]: r for r in rows(export(tmp_path, XPROF / "gpu_tf_xla.xplane.pb", "hlo_stats"))}
    assert table["MatMul.2"][1:3] == ["0", "dot"] and table["MatMul.2"][5:7] == ["MatMul:MatMul", 16.0]
    assert table["multiply_tanh_fusion"][1] == "1" and table["multiply_tanh_fusion"][6] == 16.0
    assert "copy.7" not in table and not any("loop_copy_fusion" in name for name in table)
    sigmoid = table["Sigmoid/void Eigen::internal::EigenMetaKernel<sigmoid>"]
    assert sigmoid[1:3] == ["0", "Sigmoid"] and sigmoid[14] == 0.0 and sigmoid[21] == "Unknown"


def shifted(path, shift_us: int) -> bytes:
    """An XSpace with every line's clock moved by shift_us (as the producer moves it for XProf)."""
    space = xplane_pb2.XSpace.FromString(path.read_bytes())
    for plane in space.planes:
        for line in plane.lines:
            line.timestamp_ns += shift_us * 1000
    return space.SerializeToString()


# Sessions of several hosts (file, clock moved by us), as tests/data/producers/xprof_device_planes.py's SESSIONS.
SESSIONS = {
    "gpu_tf2+gpu_tf": [("gpu_tf2", 0), ("gpu_tf", 0)],
    "small+gpu_tf": [("small", 0), ("gpu_tf", 0)],
    "gpu_tf2+early+late": [("gpu_tf2", 0), ("gpu_tf", -990), ("gpu_tf", 302)],
    "gpu_jax_dnn+gpu_tf": [("gpu_jax_dnn", 0), ("gpu_tf", 0)],
}
TPU_SESSION = {"tpu_ops+tpu_ops_late": [("tpu_ops", 0), ("tpu_ops", 150)]}


def session_of(tmp_path, hosts) -> object:
    session = tmp_path / "run"
    session.mkdir()
    for k, (file, shift_us) in enumerate(hosts):
        source = XPROF / f"{file}.xplane.pb"
        source = source if source.exists() else DATA / "xprof" / f"{file}.xplane.pb"
        (session / f"host{k}.xplane.pb").write_bytes(shifted(source, shift_us))
    return session


@pytest.mark.parametrize("tool", ["overview_page", "input_pipeline_analyzer", "roofline_model"])
@pytest.mark.parametrize("name", SESSIONS)
def test_step_intersection_equals_xprofs(tmp_path, name, tool):
    """The steps of several hosts as XProf intersects them: the other order of gpu_tf and gpu_tf2 (the first
    host's steps are the rows, from where they meet the others'); a CPU-only host first (it takes no part in a
    session with GPUs: no rows, the summary of the GPU host's steps); three hosts whose steps have none in
    common (XProf's empty-intersection warning); hosts with one step in common (the deviation of a step-time
    part that is zero in it is -nan, as tsl's Stat gives it)."""
    assert_same(export(tmp_path, session_of(tmp_path, SESSIONS[name]), tool), xprof_answer(name, tool))


@pytest.mark.parametrize(("tool", "more"), [
    *[(t, ()) for t in ALL_TOOLS if t != "kernel_stats"],
    ("op_profile.by_category", ("--param", "group_by=category")),
])
def test_two_tpu_hosts_equal_xprofs(tmp_path, tool, more):
    """Two TPU hosts, the second's clock 150 us later: their steps intersected, every host's TensorCores in each
    combined step (the roofline's step rows and average); their ops added up (the op profile's trees)."""
    name, hosts = next(iter(TPU_SESSION.items()))
    got = export(tmp_path, session_of(tmp_path, hosts), tool.split(".")[0], *more)
    assert_same(got, xprof_answer(name, tool))


# A TPU host beside a GPU host, as the producer's SESSIONS.
MIXED = {"tpu_launch+gpu_tf": [("tpu_launch", 0), ("gpu_tf", 0)],
         "gpu_tf+tpu_launch": [("gpu_tf", 0), ("tpu_launch", 0)],
         "tpu_mem+gpu_tf": [("tpu_mem", 0), ("gpu_tf", 0)],
         "gpu_tf+tpu_mem": [("gpu_tf", 0), ("tpu_mem", 0)],
         "tpu_ops+gpu_tf": [("tpu_ops", 0), ("gpu_tf", 0)]}
MIXED_TOOLS = ("kernel_stats", "hlo_stats", "framework_op_stats", "overview_page", "op_profile")


@pytest.mark.parametrize(("name", "tool"), [*[(n, "input_pipeline_analyzer") for n in MIXED],
                                            *[(n, t) for n in list(MIXED)[:4] for t in MIXED_TOOLS]])
def test_tpu_and_gpu_hosts_equal_xprofs(tmp_path, name, tool):
    """A TPU host and a GPU host: XProf's TPU step analysis of both hosts' cores, the GPU host's one core idle
    for it (no compute, no infeed), so each step's time is the GPU's, its idle the shortest core's step less the
    TPU's infeed and average outfeed; tpu_ops' TensorCores name no chip, so XProf leaves that host out of the
    steps (a coordinator) and the rows are the GPU's alone. hlo_stats: both hosts' rows by self time, their
    shares of both devices' whole time; framework_op_stats: the GPU's framework ops beside the TensorCores', IDLE
    both devices' idle time, the GPU layout (a TensorCore column) only where the last host is the GPU host;
    overview_page: the TPU step table and recommendations, the top ops of both kinds, in the TPU page or (the GPU
    host last) the GPU page's analysis; op_profile: one tree of the TensorCores' programs beside the GPU's (named
    as the session's modules name program 0), FLOP utilisations against the last host's peak. tpu_mem's memory
    breakdowns: bounds and bandwidth utilisations against the first host's bandwidths."""
    assert_same(export(tmp_path, session_of(tmp_path, MIXED[name]), tool), xprof_answer(name, tool))


@pytest.mark.parametrize("name", list(MIXED)[:4])
def test_tpu_and_gpu_hosts_roofline_equals_xprofs(tmp_path, name):
    """XProf's roofline of both kinds of ops (the GPU's without FLOPs or bytes, program 0), time per core over
    every host's cores, the step rows the TensorCores' own time, the combined perf env's roofs (no CMEM flag),
    its time scale the TensorCores' share of the op time; the GPU host last: in the GPU's columns and roofs."""
    got = export(tmp_path, session_of(tmp_path, MIXED[name]), "roofline_model")
    assert_same(got, xprof_answer(name, "roofline_model"))


@pytest.mark.parametrize("name", list(MIXED)[:4])
def test_tpu_and_gpu_hosts_op_profile_by_category_equals_xprofs(tmp_path, name):
    got = export(tmp_path, session_of(tmp_path, MIXED[name]), "op_profile", "--param", "group_by=category")
    assert_same(got, xprof_answer(name, "op_profile.by_category"))


XLA_MIXED = {"tpu_launch+gpu_jax": [("tpu_launch", 0), ("gpu_jax", 0)],
             "gpu_jax+tpu_launch": [("gpu_jax", 0), ("tpu_launch", 0)]}


@pytest.mark.parametrize(("tool", "more"), [
    *[(t, ()) for t in ALL_TOOLS],
    ("op_profile.by_category", ("--param", "group_by=category")),
])
@pytest.mark.parametrize("name", XLA_MIXED)
def test_tpu_host_beside_gpu_xla_ops_equals_xprofs(tmp_path, name, tool, more):
    """A TPU host beside a GPU host of XLA ops, in both orders: XProf's one combined db of the TensorCores' ops
    and the GPU's XLA ops with XLA's GPU costs. framework_op_stats and the overview's top ops: the GPU's framework
    ops with their FLOP rates and bounds beside the TensorCores'; the overview's precision statement of the GPU's
    32-bit compute; roofline_model: the GPU's ops with their programs, sources, FLOPs and HBM bytes against the
    combined roofs; op_profile: one tree, the GPU's modules beside the TensorCores' program, categories of both
    merged (by category), equal children where libstdc++'s partial sort leaves them (the GPU host first, its
    rows first), the GPU's time not normalized."""
    got = export(tmp_path, session_of(tmp_path, XLA_MIXED[name]), tool.split(".")[0], *more)
    assert_same(got, xprof_answer(name, tool))


@pytest.mark.parametrize(("tool", "more"), [
    *[(t, ()) for t in ALL_TOOLS],
    ("op_profile.by_category", ("--param", "group_by=category")),
])
def test_a_host_with_gpu_and_tpu_planes_equals_xprofs(tmp_path, tool, more):
    """One host with both GPU and TPU planes (gpu_tf_tpu: gpu_tf's host with tpu_ops' TensorCores; no runtime
    writes one): XProf's op metrics and steps are the TensorCores', not the GPU's (no kernels; the TensorCores'
    HLO ops, tree, roofline records and steps), its run environment is the GPU's (op_profile's deviceType, the GPU
    layouts of framework_op_stats, roofline_model and overview_page; the roofline's roofs the TensorCores'); its
    generic step analysis reads no TensorCore step: no step rows, the steps' times (each the longest core's) in
    the summary."""
    got = export(tmp_path, XPROF / "gpu_tf_tpu.xplane.pb", tool.split(".")[0], *more)
    assert_same(got, xprof_answer("gpu_tf_tpu", tool))


@pytest.mark.parametrize("other", ["gpu_tf", "tpu_ops"])
@pytest.mark.parametrize("tool", ["framework_op_stats", "input_pipeline_analyzer"])
def test_a_host_with_gpu_and_tpu_planes_beside_another_host_says_so(tmp_path, capsys, tool, other):
    """Such a host beside a GPU or a TPU host: not reproduced, a clear message."""
    session = tmp_path / "run"
    session.mkdir()
    shutil.copy(XPROF / "gpu_tf_tpu.xplane.pb", session / "a.xplane.pb")
    shutil.copy(XPROF / f"{other}.xplane.pb", session / "b.xplane.pb")
    assert main(["export", str(session), "--tool", tool, "-o", str(tmp_path / "o.json")]) != 0
    err = capsys.readouterr().err
    assert "both GPU and TPU planes beside other hosts" in err and "a.xplane.pb" in err and "Traceback" not in err


def test_two_hosts_steps_are_those_both_have(tmp_path):
    """gpu_tf's first four steps meet gpu_tf2's last four: four combined steps, numbered from 0, with gpu_tf's
    times; the empty intersection of three hosts says why there are no steps."""
    session = tmp_path / "run"
    session.mkdir()
    shutil.copy(XPROF / "gpu_tf.xplane.pb", session / "a.xplane.pb")
    shutil.copy(XPROF / "gpu_tf2.xplane.pb", session / "b.xplane.pb")
    steps = rows(export(tmp_path, session, "input_pipeline_analyzer")[1])
    assert [r[0] for r in steps] == ["0", "1", "2", "3"]
    assert steps[0][-1] == pytest.approx(0.156756999)  # gpu_tf's first step


def test_intersection_rules():
    """XProf's StepIntersection: the chief spans least; ties of overlap go to the smallest offset >= 0."""
    import numpy as np

    from profscope.models.analysis.xprof.step_intersection import intersect

    def spans(*pairs):
        return np.array([a for a, _ in pairs], np.int64), np.array([b for _, b in pairs], np.int64)

    chief = spans((0, 10), (10, 20), (20, 30))
    other = spans((10, 20), (20, 30), (30, 40), (40, 50))  # its first step is the chief's second
    x = intersect([other, chief])
    assert (x.first, x.count, x.empty_intersect) == ([0, 1], 2, False)
    # No overlap at all: offset 0, as many steps as the shorter has.
    far = spans((1000, 1010), (1010, 1020))
    assert intersect([chief, far]).first == [0, 0] and intersect([chief, far]).count == 2
    # A host that takes no part (None) and a host without steps.
    assert intersect([None, chief]).first == [None, 0]
    assert intersect([chief, spans()]).count == 0


def test_tpu_steps_take_the_groups_of_their_host_launches(tmp_path):
    """tpu_launch: each device step is the host step whose DoEnqueueProgram launched its module (steps 0-7, not
    the device's own step numbers); the warm-up launch before the first host step is in no step; step 5's two
    programs are one step, from the first's start to the second's end."""
    steps = rows(export(tmp_path, XPROF / "tpu_launch.xplane.pb", "input_pipeline_analyzer")[1])
    assert [r[0] for r in steps] == [str(i) for i in range(8)]
    times = {r[0]: r[1] + r[4] + r[5] + r[6] for r in steps}  # compute, infeed, outfeed, idle (ms)
    assert times["5"] == pytest.approx(0.108, abs=1e-3) and times["4"] == pytest.approx(0.068, abs=1e-3)


def test_tpu_events_leading_to_others_say_so(tmp_path, capsys):
    """A TensorCore event that is a producer of a context (no TPU runtime writes one) would lead XProf's grouping
    from the device to other events: not reproduced, so the step tools say so."""
    space = xplane_pb2.XSpace.FromString((XPROF / "tpu_ops.xplane.pb").read_bytes())
    tpu = next(p for p in space.planes if p.name == "/device:TPU:0")
    sid = max(tpu.stat_metadata) + 1
    tpu.stat_metadata[sid].id = sid
    tpu.stat_metadata[sid].name = "_pt"
    tpu.lines[0].events[0].stats.add(metadata_id=sid, int64_value=2)
    path = tmp_path / "tpu.xplane.pb"
    path.write_bytes(space.SerializeToString())
    assert main(["export", str(path), "--tool", "input_pipeline_analyzer", "-o", str(tmp_path / "o.json")]) != 0
    err = capsys.readouterr().err
    assert "producer context" in err and "/device:TPU:0" in err and "Traceback" not in err


def test_nested_ops_self_time():
    """An op's self time leaves out the ops directly inside it (XProf's ancestor stack)."""
    import numpy as np

    from profscope.models.analysis.xprof.tpu_steps import _self_times

    begin = np.array([0, 10, 20, 100], np.int64)
    end = np.array([90, 50, 30, 120], np.int64)  # a while op holding a fusion holding a copy, then another op
    assert _self_times(begin, end).tolist() == [50, 30, 10, 20]


@pytest.mark.parametrize(("fixture", "count"), [("gpu_jax", 22), ("gpu_jax_ops", 40), ("gpu_jax_every", 136),
                                               ("gpu_jax_dnn", 2), ("gpu_jax_collectives", 31)])
def test_xla_cost_analysis_of_the_fixtures_modules_as_xprof_gives_it(fixture, count):
    """Every HLO instruction of the fixture's op profile: FLOPs and HBM bytes per occurrence, category and text
    as XProf 2.24.2 gives them (its op_profile leaves). gpu_jax_ops: dots with batch dimensions, a grouped and
    dilated convolution, reduce-window, gather, scatter, sort, conditional, dynamic-update-slice, pad, iota, a
    custom call (XLA's unknown cost: none), collectives (all-reduce, all-gather, collective-permute), and the
    instructions of a while loop's body and condition and of a conditional's branches, kernels of their own.
    gpu_jax_every: every instruction of those modules, inside fusions, reducers and comparators too (which XLA
    leaves unanalysed: no cost); their texts are not compared (only a device's instructions are printed).
    gpu_jax_dnn: a cuBLASLt GEMM (FLOPs from its backend config's dot dimensions) and a cuDNN convolution
    (window and groups on the instruction; its scratch buffer not counted). gpu_jax_collectives: all-reduce,
    all-gather, reduce-scatter, all-to-all and collective-permute over four ranks, sync and async (their -start
    and -done, reduce-scatter and all-to-all in async-start/-update/-done, printed as XLA's sugar
    `reduce-scatter-start`), rng-get-and-update-state."""
    from profscope.models.analysis.xprof.hlo_cost import ModuleCosts
    from profscope.models.analysis.xprof.hlo_source import xspace_modules

    modules = xspace_modules(XPROF / f"{fixture}.xplane.pb")
    costs: dict = {}
    leaves = []

    def walk(node):
        if "xla" in node and node["name"] != "IDLE":
            leaves.append(node)
        for child in node["children"]:
            walk(child)

    walk(xprof_answer(fixture, "op_profile")["byProgram"])
    assert len(leaves) == count
    for leaf in leaves:
        name = next(k for k in modules if k.endswith(f"({leaf['xla']['programId']})"))
        module = costs.setdefault(name, ModuleCosts(modules[name], name))
        cost, m = module.cost(leaf["name"]), leaf["metrics"]
        assert max(cost.flops, 0) * m["occurrences"] == m["rawFlops"], leaf["name"]
        assert max(cost.hbm_bytes, 0) * m["occurrences"] == pytest.approx(m["rawBytesAccessedArray"][0], rel=1e-6)
        assert module.category(leaf["name"]) == leaf["xla"]["category"]
        if fixture != "gpu_jax_every":
            assert module.expression(leaf["name"]) == leaf["xla"]["expression"]


def test_cudnn_and_cublas_calls_take_xlas_gpu_rules():
    """The convolution as each of XLA's cuDNN convolution calls costs what it costs as a convolution; a GEMM's
    FLOPs follow its backend config; the legacy `__cublas$gemm` costs nothing, as XProf 2.24.2 gives it; a
    GEMM whose backend config is not JSON is refused, naming it."""
    from profscope.models.analysis.xprof.hlo_cost import ModuleCosts
    from profscope.models.analysis.xprof.hlo_source import xspace_modules
    from profscope.models.core.task import ProfileError
    from profscope.protos import hlo_pb2

    modules = xspace_modules(XPROF / "gpu_jax_dnn.xplane.pb")
    conv = ModuleCosts(modules["jit_grouped_conv(44)"]).cost("conv_general_dilated.1")
    for target in ("__cudnn$convBackwardInput", "__cudnn$convBackwardFilter", "__cudnn$convBiasActivationForward",
                   "__cudnn$convForwardGraph"):
        proto = hlo_pb2.HloProto.FromString(modules["jit_grouped_conv(44)"])
        for comp in proto.hlo_module.computations:
            for ins in comp.instructions:
                if ins.opcode == "custom-call":
                    ins.custom_call_target = target
        got = ModuleCosts(proto.SerializeToString()).cost("conv_general_dilated.1")
        assert (got.flops, got.hbm_bytes) == (conv.flops, conv.hbm_bytes) == (97152.0, 17248.0)

    def gemm(target, config):
        proto = hlo_pb2.HloProto.FromString(modules["jit_batched_dot(42)"])
        for comp in proto.hlo_module.computations:
            for ins in comp.instructions:
                if ins.opcode == "custom-call":
                    ins.custom_call_target, ins.backend_config = target, config
        return ModuleCosts(proto.SerializeToString(), "jit_batched_dot(42)").cost("cublas-gemm.1")

    # f32[4,16,32] x f32[4,32,8]: 2 x 512 outputs x 32
    camel = b'{"gemmBackendConfig": {"dotDimensionNumbers": {"lhsContractingDimensions": ["2"]}}}'
    assert gemm("__cublas$lt$matmul$f8", camel).flops == 32768.0
    assert gemm("__cublas$lt$matmul", b'{"gemm_backend_config": {}}').flops == 1024.0  # no contraction
    assert gemm("__cublas$gemm", camel).flops < 0  # XLA's unknown: none counted
    with pytest.raises(ProfileError, match=r"jit_batched_dot\(42\).*cublas-gemm\.1"):
        gemm("__cublas$lt$matmul", b"{not json")


def test_an_opcode_without_a_cost_rule_is_refused_naming_it_and_the_module():
    from profscope.models.analysis.xprof.hlo_cost import ModuleCosts
    from profscope.models.analysis.xprof.hlo_source import xspace_modules
    from profscope.models.core.task import ProfileError
    from profscope.protos import hlo_pb2

    proto = hlo_pb2.HloProto.FromString(xspace_modules(XPROF / "gpu_jax.xplane.pb")["jit_conv_block(18)"])
    entry = next(c for c in proto.hlo_module.computations if c.id == proto.hlo_module.entry_computation_id)
    conv = next(i for i in entry.instructions if i.opcode == "convolution")
    conv.opcode = "rng-bit-generator"
    module = ModuleCosts(proto.SerializeToString(), "jit_conv_block(18)")
    with pytest.raises(ProfileError, match=r"jit_conv_block\(18\).*'rng-bit-generator'"):
        module.cost("conv_general_dilated.1")


def test_an_opcode_without_a_cost_rule_refuses_only_the_tools_that_need_costs(tmp_path, capsys):
    """gpu_jax with its convolution made an rng-bit-generator (no rule): the op tools say so, naming the opcode
    and module; the step analysis and the kernels, which need no costs, stay XProf's; so beside a TPU host."""
    from profscope.protos import hlo_pb2

    space = xplane_pb2.XSpace.FromString((XPROF / "gpu_jax.xplane.pb").read_bytes())
    meta = next(p for p in space.planes if p.name == "/host:metadata")
    hlo_stat = next(k for k, m in meta.stat_metadata.items() if m.name == "Hlo Proto")
    for md in meta.event_metadata.values():
        for stat in md.stats:
            if stat.metadata_id == hlo_stat:
                proto = hlo_pb2.HloProto.FromString(stat.bytes_value)
                for comp in proto.hlo_module.computations:
                    for ins in comp.instructions:
                        if ins.opcode == "convolution":
                            ins.opcode = "rng-bit-generator"
                stat.bytes_value = proto.SerializeToString()
    path = tmp_path / "in" / "gpu.xplane.pb"
    path.parent.mkdir()
    path.write_bytes(space.SerializeToString())
    session = tmp_path / "session"  # and beside a TPU host
    session.mkdir()
    shutil.copy(XPROF / "tpu_launch.xplane.pb", session / "host0.xplane.pb")
    shutil.copy(path, session / "host1.xplane.pb")
    for where, name in ((path, "gpu_jax"), (session, "tpu_launch+gpu_jax")):
        for tool in ("input_pipeline_analyzer", "kernel_stats"):
            assert_same(export(tmp_path, where, tool), xprof_answer(name, tool))
        for tool in ("hlo_stats", "op_profile", "roofline_model", "framework_op_stats", "overview_page"):
            assert main(["export", str(where), "--tool", tool, "-o", str(tmp_path / "o.json")]) != 0
            err = capsys.readouterr().err
            assert "jit_conv_block(18)" in err and "'rng-bit-generator'" in err and "Traceback" not in err


def test_an_instruction_whose_text_is_not_printed_is_refused():
    """A device instruction whose attributes Profscope does not print (pad's padding) is refused, naming it,
    rather than shown with a text XProf would not show."""
    from profscope.models.analysis.xprof.hlo_cost import ModuleCosts
    from profscope.models.analysis.xprof.hlo_source import xspace_modules
    from profscope.models.core.task import ProfileError
    from profscope.protos import hlo_pb2

    proto = hlo_pb2.HloProto.FromString(xspace_modules(XPROF / "gpu_jax.xplane.pb")["jit_running_stats(22)"])
    entry = next(c for c in proto.hlo_module.computations if c.id == proto.hlo_module.entry_computation_id)
    next(i for i in entry.instructions if i.name == "copy.13").opcode = "pad"
    module = ModuleCosts(proto.SerializeToString(), "jit_running_stats(22)")
    with pytest.raises(ProfileError, match=r"jit_running_stats\(22\).*'pad' instruction \(copy.13\)"):
        module.expression("copy.13")



def test_collectives_in_xlas_gpu_async_form_cost_and_print_as_xprof_gives_them():
    """gpu_jax_collectives' async module over four ranks (its all-gather's and reduce-scatter's replica groups iota
    lists): an all-gather-start moves its gathered output's quarter
    7 + 4 times (HBM: its operand), a reduce-scatter wrapped in async-start its operands' quarter 4 + 7 times with
    its reducer's FLOPs (HBM: none, as XLA's GPU analysis drops a computation's bytes), a tuple all-reduce-start
    its reducer over both arrays; an async op prints as its wrapped opcode's -start/-update/-done, categorised by
    its own opcode (XProf 2.24.2's answers, test_export_equals_xprofs, hold the same numbers)."""
    from profscope.models.analysis.xprof.hlo_cost import ModuleCosts
    from profscope.models.analysis.xprof.hlo_source import xspace_modules

    modules = xspace_modules(XPROF / "gpu_jax_collectives.xplane.pb")
    module = ModuleCosts(modules["jit_collectives_async(23)"], "jit_collectives_async(23)")

    def cost(name):
        c = module.cost(name)
        return c.flops, c.bytes, c.hbm_bytes

    assert cost("all-gather-start") == (0.0, 512 * 7 + 512 * 4, 512.0)  # f32[4,8,16] gathered
    assert cost("reduce-scatter-start") == (3 * 32, 128 * 4 + 128 * 7, 0.0)  # f32[8,16] scattered to f32[2,16]
    assert cost("all-reduce-start") == (3 * (128 + 2), 520.0, 520.0)  # (f32[8,16], f32[2]) summed
    assert cost("all-to-all-start") == (0.0, 0.0, 0.0)
    assert module.category("reduce-scatter-start") == "async-start"
    assert module.expression("reduce-scatter-start") == (
        "%reduce-scatter-start = ((f32[8,16]{1,0}), f32[2,16]{1,0}) reduce-scatter-start(f32[8,16]{1,0} %param.3), "
        "channel_id=1, replica_groups=[1,4]<=[2,2]T(1,0), use_global_device_ids=true, dimensions={0}, "
        "to_apply=%region_3.0")  # newer XLA's iota replica groups, a field of their own
    assert " all-to-all-done(((f32[2,16]{1,0}, " in module.expression("all-to-all.1")
    assert module.expression("all-to-all.1").endswith(") %all-to-all-update)")


def test_collectives_xprof_cannot_be_followed_on_are_refused_naming_them():
    """An all-gather without replica groups (its ranks are the module config's, not in the HloProto), an rng
    (XLA expands it before the module is written) and an async-start whose computation is more than its one
    wrapped instruction (XLA prints it otherwise) are refused, naming the instruction and module."""
    from profscope.models.analysis.xprof.hlo_cost import ModuleCosts
    from profscope.models.analysis.xprof.hlo_source import xspace_modules
    from profscope.models.core.task import ProfileError
    from profscope.protos import hlo_pb2

    name = "jit_collectives_async(23)"
    original = xspace_modules(XPROF / "gpu_jax_collectives.xplane.pb")[name]

    def edited(change):
        proto = hlo_pb2.HloProto.FromString(original)
        by_name = {i.name: i for c in proto.hlo_module.computations for i in c.instructions}
        change(proto.hlo_module, by_name)
        return ModuleCosts(proto.SerializeToString(), name)

    def no_groups(module, by_name):
        by_name["all-gather-start"].ClearField("iota_collective_device_list")

    with pytest.raises(ProfileError, match=r"jit_collectives_async\(23\).*'all-gather-start'.*replica groups"):
        edited(no_groups).cost("all-gather-start")

    def rng(module, by_name):
        by_name["concatenate"].opcode = "rng"

    with pytest.raises(ProfileError, match=r"jit_collectives_async\(23\).*'rng' instruction \(concatenate\)"):
        edited(rng).cost("concatenate")

    def two_wrapped(module, by_name):
        start = by_name["reduce-scatter-start"]
        comp = next(c for c in module.computations if c.id == start.called_computation_ids[0])
        extra = comp.instructions.add()
        extra.CopyFrom(next(i for i in comp.instructions if i.id == comp.root_id))
        extra.id, extra.name = 10_000, "copy.99"

    with pytest.raises(ProfileError, match=r"jit_collectives_async\(23\).*'async-start'.*reduce-scatter-start"):
        edited(two_wrapped).expression("reduce-scatter-start")

    # A damaged module (a reducer not called, a wrapped computation without its root): a message, no traceback.
    def no_reducer(module, by_name):
        by_name["all-reduce-start"].ClearField("called_computation_ids")

    with pytest.raises(ProfileError, match=r"jit_collectives_async\(23\).*'all-reduce-start'.*calls no computation"):
        edited(no_reducer).cost("all-reduce-start")

    def no_root(module, by_name):
        start = by_name["reduce-scatter-start"]
        next(c for c in module.computations if c.id == start.called_computation_ids[0]).root_id = 10_000

    with pytest.raises(ProfileError, match=r"jit_collectives_async\(23\).*has no root instruction"):
        edited(no_root).cost("reduce-scatter-start")

    def lost_operand(module, by_name):  # an operand id the module does not hold
        by_name["all-reduce-start"].operand_ids[0] = 10_000

    for method in ("cost", "expression"):
        with pytest.raises(ProfileError, match=r"jit_collectives_async\(23\): its HloProto refers to something"):
            getattr(edited(lost_operand), method)("all-reduce-start")
