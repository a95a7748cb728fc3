"""Writes XSpaces with device planes (GPU, ROCm-named GPU, TPU), built with
the real schema (tsl's xplane.proto, stat names of tsl's xplane_schema), and
XProf 2.24.2's converter output for each of them (run in a throwaway venv with
xprof; not part of the test suite):

    python xprof_device_planes.py tests/data/xprof/device

No GPU or TPU could be profiled here, so the device planes are made the way
TensorFlow's and JAX's device tracers lay them out: a `/device:GPU:0` plane
with the device's capabilities as plane stats (clock_rate, core_count,
memory_bandwidth, memory_size, compute_cap_major/minor, device_vendor), a
stream line `Stream #7(compute)` of kernels carrying `correlation_id`,
`kernel_details`, `tf_op` (TensorFlow) or `hlo_op`/`hlo_module`/`program_id`
(JAX), and memcpy events with `memcpy_details`; a `/host:CPU`
plane whose step markers (`_r` root level, `step_num`) group the host ops and
their `cudaLaunchKernel` launches, linked to the kernels by correlation_id.
The JAX variants reuse the real XLA modules (HloProtos) of jaxprog.xplane.pb's
metadata plane (tests/data/xprof/jaxprog.xplane.pb), and name real
instructions of them.

Files: `gpu_tf.xplane.pb`, `gpu_tf2.xplane.pb` (two Ampere GPUs: MemcpyHToD/DToH copies,
a half-precision kernel, an NCCL all-reduce), `gpu_tf_xla.xplane.pb` (TF kernels beside XLA clusters' kernels,
the clusters' HloProtos from tfjit.xplane.pb, a real TensorFlow jit_compile profile), `gpu_tf_xla2.xplane.pb`
(and a second GPU running only the TF kernels), `gpu_tf_xla_nohlo.xplane.pb` (gpu_tf_xla without its
metadata plane), `gpu_jax.xplane.pb`, `rocm_jax.xplane.pb` (an AMD
device_vendor), `gpu_jax2.xplane.pb` (gpu_jax on two GPUs), `gpu_jax_dnn.xplane.pb` and `gpu_jax_dnn_legacy.xplane.pb` (gpu_jax_ops'
dot and convolution modules as XLA:GPU's cuBLAS and cuDNN custom calls), `gpu_jax_collectives.xplane.pb` (the modules of jax_xla_collectives_profile.py's trace, one in XLA:GPU's async
collectives form), `tpu_jax.xplane.pb`, `tpu_ops.xplane.pb` (two TensorCores whose XLA ops carry
their metadata), `tpu_mem.xplane.pb` and `tpu_vmem.xplane.pb` (TensorCores with on-chip memories' peaks, ops
with memory breakdowns, in two modules), `small_emptygpu.xplane.pb` (small.xplane.pb with a GPU plane that recorded
nothing), `gpu_tf_tpu.xplane.pb` (gpu_tf's host with tpu_ops' TensorCores); for each, and for the SESSIONS of several hosts (`gpu_tf+gpu_tf2`: the two files as
one session of two hosts, ...), `tools/<name>.<tool>.json` is
what `xprof.convert.raw_to_tool_data.xspace_to_tool_data([copy], tool,
{"use_saved_result": False})` returns (op_profile also with group_by
category), each file converted from a copy in a folder of its own.

    python xprof_device_planes.py tests/data/xprof/device --big /tmp/big.xplane.pb

writes gpu_tf of 20,000 steps (about 480,000 events) for
benchmarks/xprof_tools_bench.py --file /tmp/big.xplane.pb --tools kernel_stats ...;
with `gpu_jax` after the path, gpu_jax of 5,000 steps (120,000 XLA kernels); `--big-tpu` tpu_ops of
20,000 steps (two TensorCores, about 400,000 events) for --tools op_profile roofline_model.
"""

import sys
from pathlib import Path

from tensorflow.tsl.profiler.protobuf import xplane_pb2
from xprof_answers import write_answer, xprof_answer

TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats", "hlo_stats",
         "op_profile", "roofline_model")
US = 1_000_000  # ps
STEPS = 8


class Plane:
    """An XPlane under construction: metadata interned by name."""

    def __init__(self, space, id_, name):
        self.p = space.planes.add(id=id_, name=name)
        self.events: dict[str, int] = {}
        self.stats: dict[str, int] = {}

    def stat_id(self, name):
        if name not in self.stats:
            sid = len(self.stats) + 1
            self.p.stat_metadata[sid].id = sid
            self.p.stat_metadata[sid].name = name
            self.stats[name] = sid
        return self.stats[name]

    def event_id(self, name):
        if name not in self.events:
            mid = len(self.events) + 1
            self.p.event_metadata[mid].id = mid
            self.p.event_metadata[mid].name = name
            self.events[name] = mid
        return self.events[name]

    def set_stat(self, target, name, value):
        s = target.stats.add(metadata_id=self.stat_id(name))
        if isinstance(value, float):
            s.double_value = value
        elif isinstance(value, str):
            s.ref_value = self.stat_id(value)  # interned, as the tracers do
        elif isinstance(value, bytes):
            s.bytes_value = value
        elif value < 0:
            s.int64_value = value
        else:
            s.uint64_value = value

    def line(self, id_, name, timestamp_ns=1_000_000):
        return self.p.lines.add(id=id_, display_id=id_, name=name, timestamp_ns=timestamp_ns)

    def event(self, line, name, offset_ps, duration_ps, **stats):
        e = line.events.add(metadata_id=self.event_id(name), offset_ps=offset_ps, duration_ps=duration_ps)
        for k, v in stats.items():
            self.set_stat(e, k, v)
        return e


def details(regs, shared, grid, block, occ):
    return (f"regs:{regs} static_shared:{shared} dynamic_shared:0 grid:{grid[0]},{grid[1]},{grid[2]} "
            f"block:{block[0]},{block[1]},{block[2]} occ_pct:{occ}")


# TensorFlow ops and the kernels each launches (name, duration in ps, kernel_details).
TF_OPS = [
    ("model/dense/MatMul:MatMul", [("volta_sgemm_128x64_nn", 41_500_000,
                                    details(128, 0, (4, 2, 1), (256, 1, 1), 25.0))]),
    ("model/dense/BiasAdd:BiasAdd", [("void tensorflow::BiasNHWCKernel<float>", 3_250_000,
                                      details(32, 0, (40, 1, 1), (1024, 1, 1), 100.0))]),
    ("model/dense/Relu:Relu", [("void Eigen::internal::EigenMetaKernel<relu>", 2_999_000,
                                details(16, 0, (80, 1, 1), (512, 1, 1), 100.0))]),
    ("model/conv/Conv2D:Conv2D", [("volta_h884cudnn_256x64_ldg8_relu_exp_small_nhwc_tn_v1", 55_000_000,
                                   details(168, 33_280, (2, 3, 1), (256, 1, 1), 12.5)),
                                  ("void cudnn::ops::nchwToNhwcKernel<float>", 999,
                                   details(24, 4_096, (16, 4, 1), (32, 8, 1), 75.5))]),
    ("gradient_tape/model/dense/MatMul/MatMul:MatMul", [("ampere_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn",
                                                         37_000_000, details(232, 73_728, (8, 1, 1),
                                                                             (128, 1, 1), 8.3))]),
    ("Adam/update/ResourceApplyAdam:ResourceApplyAdam", [("void tensorflow::functor::ApplyAdamKernel<float>",
                                                          4_000_000, details(40, 0, (10, 1, 1),
                                                                             (1024, 1, 1), 62.5))]),
]


def tf_gpu(space):
    """A TensorFlow GPU training loop: per step, ops on the executor thread
    launch kernels; an input copy (MemcpyH2D) per step."""
    host = Plane(space, 1, "/host:CPU")
    gpu = Plane(space, 2, "/device:GPU:0")
    device_caps(gpu, vendor="Nvidia")
    # The executor's ops and launches nest in the step marker: XProf's grouping
    # gives them its step, and the kernels (same correlation_id) that of their launch.
    python = executor = host.line(1, "python3")
    stream = gpu.line(7, "Stream #7(compute)")
    copies = gpu.line(8, "Stream #8(MemcpyH2D)")
    t = 0
    correlation = 100
    for step in range(STEPS):
        begin = t
        t += 5 * US
        host.event(executor, "IteratorGetNext:IteratorGetNext", t, 3 * US)
        t += 4 * US
        host.event(executor, "cudaMemcpyAsync", t, 2 * US, correlation_id=correlation)
        gpu.event(copies, "MemcpyH2D", t + 1 * US, 6 * US + step * 10_000, correlation_id=correlation,
                  memcpy_details="kind_src:pageable kind_dst:device size:1048576 dest:0 async:0")
        correlation += 1
        t += 3 * US
        device_t = t + 8 * US
        for op, kernels in TF_OPS:
            op_begin = t
            t += 1 * US
            for kernel, duration, kd in kernels:
                host.event(executor, "cudaLaunchKernel", t, 2 * US, correlation_id=correlation)
                device_t = max(device_t, t + 5 * US)
                gpu.event(stream, kernel, device_t, duration + step * 1_000, correlation_id=correlation,
                          kernel_details=kd, tf_op=op, context_id=1)
                device_t += duration + step * 1_000 + 500_000
                correlation += 1
                t += 3 * US
            host.event(executor, op, op_begin, t - op_begin)
            t += 1 * US
        t = max(t, device_t) + 2 * US
        host.event(python, "train", begin, t - begin, _r=1, step_num=step)
        t += 10 * US


def tf_two_gpus(space):
    """Data parallel TensorFlow on two GPUs (Ampere): each step copies its batch in (MemcpyHToD), runs the
    ops' kernels on both GPUs (a half-precision one), all-reduces the gradient with NCCL and copies the loss
    out (MemcpyDToH)."""
    host = Plane(space, 1, "/host:CPU")
    gpus = [Plane(space, 2 + k, f"/device:GPU:{k}") for k in range(2)]
    for gpu in gpus:
        device_caps(gpu, vendor="Nvidia", major=8, minor=0)
    python = executor = host.line(1, "python3")
    streams = [gpu.line(7, "Stream #7(compute)") for gpu in gpus]
    copies = [gpu.line(8, "Stream #8(MemcpyH2D)") for gpu in gpus]
    ops = [("model/dense/MatMul:MatMul", "ampere_sgemm_128x64_nn", 21_000_000, details(128, 0, (4, 2, 1),
                                                                                       (256, 1, 1), 25.0)),
           ("model/dense/Cast:Cast", "void half_cast_kernel<float, Eigen::half>", 2_000_000,
            details(16, 0, (64, 1, 1), (256, 1, 1), 100.0)),
           ("gradient_tape/model/dense/MatMul/MatMul:MatMul", "ampere_h16816gemm_128x128_ldg8_stages_64x3_nt",
            19_000_000, details(232, 73_728, (8, 1, 1), (128, 1, 1), 12.5)),
           ("Adam/NcclAllReduce:NcclAllReduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 9_000_000,
            details(96, 0, (2, 1, 1), (512, 1, 1), 50.0))]
    t = 0
    correlation = 500
    for step in range(STEPS):
        begin = t
        t += 4 * US
        device_t = [t + 4 * US, t + 6 * US]
        for k, gpu in enumerate(gpus):
            host.event(executor, "cudaMemcpyAsync", t, 1 * US, correlation_id=correlation)
            gpu.event(copies[k], "MemcpyHToD", device_t[k], 3 * US, correlation_id=correlation,
                      memcpy_details="kind_src:pinned kind_dst:device num_bytes:524288 dest:0 async:1")
            device_t[k] += 4 * US
            correlation += 1
            t += 1 * US
        for op, kernel, duration, kd in ops:
            op_begin = t
            for k, gpu in enumerate(gpus):
                host.event(executor, "cudaLaunchKernel", t, 1 * US, correlation_id=correlation)
                gpu.event(streams[k], kernel, device_t[k], duration + (k + step) * 1_000, correlation_id=correlation,
                          kernel_details=kd, tf_op=op)
                device_t[k] += duration + (k + step) * 1_000 + 300_000
                correlation += 1
                t += 2 * US
            host.event(executor, op, op_begin, t - op_begin)
        for k, gpu in enumerate(gpus):
            host.event(executor, "cudaMemcpyAsync", t, 1 * US, correlation_id=correlation)
            gpu.event(copies[k], "MemcpyDToH", device_t[k], 1 * US, correlation_id=correlation,
                      memcpy_details="kind_src:device kind_dst:pinned num_bytes:4 dest:0 async:0")
            device_t[k] += 2 * US
            correlation += 1
            t += 1 * US
        t = max(t, *device_t) + 2 * US
        host.event(python, "train", begin, t - begin, _r=1, step_num=step)
        t += 10 * US


# gpu_tf_xla's stream per step: (TF op or XLA module, hlo_op or "", kernel, duration in ps); the modules are
# tfjit.xplane.pb's two XLA clusters. MatMul.2 runs as two kernels (one occurrence), between which odd steps run a
# TF kernel; copy.7 is no instruction of its module; the norm cluster's kernels also carry the launching op's tf_op.
TF_XLA_STREAM = [
    ("a_inference_dense_24__.1", "MatMul.2", "ampere_sgemm_64x32_sliced1x4_nn", 6_500_000),
    ("AssignAddVariableOp:AssignAddVariableOp", "", "void Eigen::internal::EigenMetaKernel<assign_add>", 900_000),
    ("a_inference_dense_24__.1", "MatMul.2", "void splitKreduce_kernel<float>", 1_200_000),
    ("a_inference_dense_24__.1", "broadcast_maximum_fusion", "loop_broadcast_maximum_fusion", 2_100_000),
    ("Sigmoid:Sigmoid", "", "void Eigen::internal::EigenMetaKernel<sigmoid>", 1_700_000),
    ("a_inference_norm_36__.2", "wrapped_reduce-window", "input_reduce_window_fusion", 3_300_000),
    ("a_inference_norm_36__.2", "wrapped_reduce", "input_reduce_fusion", 2_900_000),
    ("a_inference_norm_36__.2", "multiply_tanh_fusion", "loop_multiply_tanh_fusion", 1_500_000),
    ("a_inference_norm_36__.2", "copy.7", "loop_copy_fusion", 400_000),
    ("a_inference_norm_36__.2", "multiply_tanh_fusion", "loop_multiply_tanh_fusion", 1_500_000),
    ("Sum:Sum", "", "void tensorflow::functor::BlockReduceKernel<float>", 2_400_000),
]


def tf_xla_gpu(space, two=False):
    """TensorFlow on a GPU running two `jit_compile=True` clusters beside TF ops (TF_XLA_STREAM): the clusters'
    kernels carry hlo_op, hlo_module and program_id of tfjit.xplane.pb's HloProtos (its metadata plane copied),
    the TF ops' kernels tf_op; per step an input copy; on the host, the ops (the clusters' PartitionedCall) and
    their launches nest in the step marker, as tf_gpu's. With `two`, a second GPU (`/device:GPU:1`) runs only
    the TF ops' kernels, a little slower."""
    meta, modules = jax_metadata(Path(sys.argv[1]).parent / "tfjit.xplane.pb")
    programs = {name: program for program, name, _names in modules}
    space.planes.add().CopyFrom(meta)
    host = Plane(space, 1, "/host:CPU")
    gpu = Plane(space, 2, "/device:GPU:0")
    device_caps(gpu, vendor="Nvidia", major=8, minor=0)
    executor = host.line(1, "python3")
    stream = gpu.line(7, "Stream #7(compute)")
    copies = gpu.line(8, "Stream #8(MemcpyH2D)")
    if two:
        gpu2 = Plane(space, 3, "/device:GPU:1")
        device_caps(gpu2, vendor="Nvidia", major=8, minor=0)
        stream2 = gpu2.line(7, "Stream #7(compute)")
    launcher = {"a_inference_dense_24__.1": "PartitionedCall:PartitionedCall",
                "a_inference_norm_36__.2": "PartitionedCall_1:PartitionedCall"}
    t = 0
    correlation = 2000
    for step in range(STEPS):
        begin = t
        t += 4 * US
        host.event(executor, "cudaMemcpyAsync", t, 2 * US, correlation_id=correlation)
        gpu.event(copies, "MemcpyH2D", t + 1 * US, 3 * US, correlation_id=correlation,
                  memcpy_details="kind_src:pageable kind_dst:device size:8192 dest:0 async:0")
        correlation += 1
        t += 3 * US
        device_t = t + 6 * US
        op_begin, op = t, None
        for owner, hlo_op, kernel, duration in TF_XLA_STREAM:
            if owner.startswith("AssignAdd") and step % 2 == 0:
                continue
            this_op = launcher.get(owner, owner)
            if this_op != op:
                if op is not None:
                    host.event(executor, op, op_begin, t - op_begin)
                op, op_begin = this_op, t
                t += 1 * US
            host.event(executor, "cudaLaunchKernel", t, 1 * US, correlation_id=correlation)
            stats = dict(correlation_id=correlation, kernel_details=details(64, 2048, (8, 1, 1), (256, 1, 1), 50.0))
            if hlo_op:
                stats.update(hlo_op=hlo_op, hlo_module=owner, program_id=programs[owner])
                if owner.startswith("a_inference_norm"):
                    stats.update(tf_op=this_op)
            else:
                stats.update(tf_op=owner)
            d = duration + step * 1_000
            gpu.event(stream, kernel, device_t, d, **stats)
            correlation += 1
            if two and not hlo_op:
                host.event(executor, "cudaLaunchKernel", t + 1 * US, 1 * US, correlation_id=correlation)
                gpu2.event(stream2, kernel, device_t, d + 150_000, **{**stats, "correlation_id": correlation})
                correlation += 1
            device_t += d + 250_000
            t += 2 * US
        host.event(executor, op, op_begin, t - op_begin)
        t = max(t, device_t) + 2 * US
        host.event(executor, "train", begin, t - begin, _r=1, step_num=step)
        t += 10 * US


def without_hlo(space):
    """gpu_tf_xla without its metadata plane: the XLA ops' modules are not in the profile."""
    tf_xla_gpu(space)
    keep = [p for p in space.planes if p.name != "/host:metadata"]
    del space.planes[:]
    space.planes.extend(keep)


def device_caps(plane, vendor, tpu=False, major=7, minor=0):
    p = plane
    if tpu:
        p.set_stat(p.p, "peak_teraflops_per_second", 275.0)
        p.set_stat(p.p, "peak_hbm_bw_gigabytes_per_second", 1200.0)
        return
    p.set_stat(p.p, "clock_rate", 1_530_000)  # kHz
    p.set_stat(p.p, "core_count", 80)
    p.set_stat(p.p, "memory_bandwidth", 900_000_000_000)  # bytes/s
    p.set_stat(p.p, "memory_size", 17_071_734_784)
    p.set_stat(p.p, "compute_cap_major", major)
    p.set_stat(p.p, "compute_cap_minor", minor)
    p.set_stat(p.p, "device_vendor", vendor)


def jax_metadata(source=None, keep=None, every=False, transform=None):
    """A JAX trace's metadata plane (jaxprog's by default) and, per module, (program id, name, instruction names
    of its entry computation); with `keep`, only the modules whose name it holds (the others dropped); with
    `transform`, each kept module rewritten by it first."""
    try:
        from tensorflow.compiler.xla.service import hlo_pb2
    except ImportError:  # pragma: no cover
        from xla.service import hlo_pb2
    source = source or Path(sys.argv[1]).parent / "jaxprog.xplane.pb"
    src = xplane_pb2.XSpace.FromString(Path(source).read_bytes())
    meta = next(p for p in src.planes if p.name == "/host:metadata")
    hlo_stat = next(k for k, m in meta.stat_metadata.items() if m.name == "Hlo Proto")
    # JAX keeps the program id as a stat; TensorFlow only in the name, "<module>(<id>)"
    program_stat = next((k for k, m in meta.stat_metadata.items() if m.name == "program_id"), None)
    modules = []
    for mid, md in sorted(meta.event_metadata.items()):
        program_id = next((s.uint64_value or s.int64_value for s in md.stats if s.metadata_id == program_stat),
                          int(md.name.rsplit("(", 1)[-1].rstrip(")")) if md.name.endswith(")") else mid)
        for s in md.stats:
            if s.metadata_id == hlo_stat:
                proto = hlo_pb2.HloProto.FromString(s.bytes_value)
                if keep is not None and proto.hlo_module.name not in keep:
                    del meta.event_metadata[mid]
                    continue
                if transform is not None:
                    transform(proto.hlo_module, hlo_pb2)
                    s.bytes_value = proto.SerializeToString(deterministic=True)
                entry = next(c for c in proto.hlo_module.computations
                             if c.id == proto.hlo_module.entry_computation_id)
                names = kernel_names(proto.hlo_module, entry, keep is not None, every)
                modules.append((program_id, proto.hlo_module.name, names))
    return meta, modules


def kernel_names(module, computation, nested: bool, every: bool = False) -> list[str]:
    """The instructions of a computation that run as kernels (not parameters, tuples, constants, element
    accesses or bitcasts); with `nested`, after each while, conditional or call those of the computations it
    runs (loop bodies and conditions, branches), as a GPU runs them; with `every`, those of every computation
    (fused ones, reducers, comparators too: not what a GPU runs, an oracle of XLA's per-instruction costs)."""
    if every:
        return [n for c in module.computations for n in kernel_names(module, c, False)]
    by_id = {c.id: c for c in module.computations}
    names = []
    for i in computation.instructions:
        if i.opcode in ("parameter", "tuple", "constant", "get-tuple-element", "bitcast"):
            continue
        names.append(i.name)
        if nested and i.opcode in ("while", "conditional", "call"):
            for c in i.called_computation_ids:
                names += kernel_names(module, by_id[c], nested)
    return names


def gpu_library_calls(module, hlo_pb2, gemm="__cublas$lt$matmul"):
    """Rewrites an XLA:CPU module's entry root (a convolution, or a fusion of one dot) as XLA:GPU emits it: a
    cuDNN `__cudnn$convForward` or cuBLAS custom call (cuBLASLt's `__cublas$lt$matmul`, or `gemm`) (window, dim_labels and feature groups
    kept on the instruction, the GEMM's dot dimensions in the GpuBackendConfig JSON of `backend_config`)
    returning (result, scratch bytes), whose result a get-tuple-element takes."""
    import json

    from google.protobuf import json_format

    entry = next(c for c in module.computations if c.id == module.entry_computation_id)
    root = next(i for i in entry.instructions if i.id == entry.root_id)
    config = {"operation_queue_id": "0", "wait_on_operation_queues": []}
    if root.opcode == "convolution":
        root.custom_call_target = "__cudnn$convForward"
        config["cudnn_conv_backend_config"] = {"activation_mode": "kNone", "conv_result_scale": 1,
                                               "side_input_scale": 0, "leakyrelu_alpha": 0}
        scratch = 6  # U8: cuDNN's scratch (none here)
    else:
        fused = next(c for c in module.computations if c.id == root.called_computation_ids[0])
        dot = next(i for i in fused.instructions if i.opcode == "dot")
        root.custom_call_target = gemm
        root.name = "cublas-gemm.1"
        config["gemm_backend_config"] = {
            "alpha_real": 1, "alpha_imag": 0, "beta": 0, "epilogue": "DEFAULT",
            "dot_dimension_numbers": json_format.MessageToDict(dot.dot_dimension_numbers,
                                                               preserving_proto_field_name=True),
            "precision_config": {"operand_precision": ["DEFAULT", "DEFAULT"]}}
        root.ClearField("fusion_kind")
        del root.called_computation_ids[:]
        module.computations.remove(fused)
        if fused.id in module.schedule.sequences:
            del module.schedule.sequences[fused.id]
        scratch = 2  # S8: cuBLAS's workspace
    result = type(root.shape)()
    result.CopyFrom(root.shape)
    root.opcode = "custom-call"
    root.backend_config = json.dumps(config).encode()
    root.shape.Clear()
    root.shape.element_type = 13  # TUPLE
    root.shape.tuple_shapes.add().CopyFrom(result)
    work = root.shape.tuple_shapes.add(element_type=scratch, dimensions=[4194304 if scratch == 2 else 0],
                                       is_dynamic_dimension=[False])
    work.layout.minor_to_major.append(0)
    gte = entry.instructions.add(name="get-tuple-element.9", opcode="get-tuple-element", tuple_index=0,
                                 id=max(i.id for i in entry.instructions) + 1, operand_ids=[root.id])
    gte.shape.CopyFrom(result)
    entry.root_id = gte.id
    if entry.id in module.schedule.sequences:
        module.schedule.sequences[entry.id].instruction_ids.append(gte.id)


# jax_xla_opcodes_profile.py's programs (gpu_jax_ops): every kernel of theirs (kernel_names, nested).
OPCODE_MODULES = ("jit_batched_dot", "jit_grouped_conv", "jit_max_pool", "jit_pool_grad", "jit_gather_scatter",
                  "jit_sort_rows", "jit_branch", "jit_update", "jit_cholesky", "jit__fun",  # jit__fun: collectives
                  "jit_loop")
JAX_TRACE: list = []  # --jax-trace: the xplane.pb jax_xla_opcodes_profile.py wrote
# jax_xla_collectives_profile.py's programs (gpu_jax_collectives), and --collectives-trace: the folder it wrote
COLLECTIVE_MODULES = ("jit_collectives", "jit_rng")
COLLECTIVES_TRACE: list = []


def collectives_metadata():
    """The metadata plane of jax_xla_collectives_profile.py's trace (its two modules), with its
    jit_collectives_async module (XLA's HloModuleProto, parsed from the async text) added as one more program,
    the next program id, its module id as XLA sets it for a program."""
    try:
        from tensorflow.compiler.xla.service import hlo_pb2
    except ImportError:  # pragma: no cover
        from xla.service import hlo_pb2
    folder = COLLECTIVES_TRACE[0]
    meta, modules = jax_metadata(next(folder.glob("plugins/profile/*/*.xplane.pb")), COLLECTIVE_MODULES)
    module = hlo_pb2.HloModuleProto.FromString((folder / "jit_collectives_async.hlo_module.pb").read_bytes())
    program_id = max(m[0] for m in modules) + 3
    module.id = program_id
    hlo_stat = next(k for k, m in meta.stat_metadata.items() if m.name == "Hlo Proto")
    program_stat = next(k for k, m in meta.stat_metadata.items() if m.name == "program_id")
    mid = max(meta.event_metadata) + 1
    md = meta.event_metadata[mid]
    md.id, md.name = mid, f"{module.name}({program_id})"
    md.stats.add(metadata_id=hlo_stat, bytes_value=hlo_pb2.HloProto(hlo_module=module).SerializeToString(
        deterministic=True))
    md.stats.add(metadata_id=program_stat, uint64_value=program_id)
    entry = next(c for c in module.computations if c.id == module.entry_computation_id)
    modules.append((program_id, module.name, kernel_names(module, entry, True)))
    return meta, modules


def jax_device(space, plane_name, vendor, tpu=False, opcodes=False, every=False, dnn=None, two=False,
               collectives=False):
    """A JAX program on one device: per step, the jitted modules' instructions
    as kernels (GPU) or XLA ops (TPU), with hlo_op, hlo_module, program_id.
    With `opcodes`, the modules of jax_xla_opcodes_profile.py's trace, every
    kernel of each (loop bodies and branches too). With `dnn` (a cuBLAS call target), gpu_jax_ops' dot and
    convolution modules rewritten to XLA:GPU's cuBLAS and cuDNN custom calls. With `two`, a second GPU
    (`/device:GPU:1`) runs the same kernels, slower, all but the first kernel of step 0. With `collectives`,
    the modules of jax_xla_collectives_profile.py's trace and its async module (collectives_metadata)."""
    if collectives:
        meta, modules = collectives_metadata()
        opcodes = True
    elif dnn:
        meta, modules = jax_metadata(Path(sys.argv[1]) / "gpu_jax_ops.xplane.pb",
                                     ("jit_batched_dot", "jit_grouped_conv"),
                                     transform=lambda m, pb: gpu_library_calls(m, pb, dnn))
        opcodes = True
    else:
        meta, modules = jax_metadata(JAX_TRACE[0], OPCODE_MODULES, every) if opcodes else jax_metadata()
    space.planes.add().CopyFrom(meta)
    host = Plane(space, 1, "/host:CPU")
    dev = Plane(space, 2, plane_name)
    device_caps(dev, vendor, tpu)
    if two:
        dev2 = Plane(space, 3, "/device:GPU:1")
        device_caps(dev2, vendor)
        line2 = dev2.line(7, "Stream #7(compute)")
    python = launcher = host.line(1, "python3")
    if tpu:
        ops_line = dev.line(2, "XLA Ops")
        modules_line = dev.line(1, "XLA Modules")
        steps_line = dev.line(0, "Steps")
    else:
        ops_line = dev.line(7, "Stream #7(compute)")
        modules_line = None
        steps_line = None
    t = 0
    correlation = 1000
    # The modules of several kernels (every module of the opcodes' trace), their first 6 (every) instructions.
    chosen = modules if opcodes else [m for m in modules if len(m[2]) >= 3][:4]
    per_module = None if opcodes else 6
    for step in range(STEPS):
        begin = t
        t += 4 * US
        device_t = t + 6 * US
        step_begin = device_t
        for program_id, module, names in chosen:
            module_begin = device_t
            host.event(launcher, f"PjitFunction({module})", t, 3 * US)
            for k, name in enumerate(names[:per_module]):
                duration = (1 + (k * 7 + program_id) % 9) * 1_100_000 + step * 1_000
                if collectives:  # one name in two modules (sync and async) never ties in time (XProf's order)
                    duration += program_id * 10_000
                stats = dict(hlo_op=name, hlo_module=module, program_id=program_id)
                if not tpu:
                    host.event(launcher, "cuLaunchKernel", t, 1 * US, correlation_id=correlation)
                    stats.update(correlation_id=correlation,
                                 kernel_details=details(32 + 8 * k, 1024 * k, (k + 1, 1, 1), (128, 1, 1),
                                                        100.0 / (k + 1)))
                    correlation += 1
                    kernel = f"{name.replace('.', '_')}_kernel" if k % 2 else name
                else:
                    kernel = name
                dev.event(ops_line, kernel, device_t, duration, **stats)
                if two and (step or k):
                    host.event(launcher, "cuLaunchKernel", t, 1 * US, correlation_id=correlation)
                    dev2.event(line2, kernel, device_t, duration + 300_000 * (k % 3),
                               **{**stats, "correlation_id": correlation})
                    correlation += 1
                device_t += duration + 200_000
                t += 1 * US
            if modules_line is not None:
                dev.event(modules_line, module, module_begin, device_t - module_begin, program_id=program_id,
                          group_id=step)
            t += 2 * US
        if steps_line is not None:
            dev.event(steps_line, f"{step}", step_begin, device_t - step_begin, step_num=step)
        t = max(t, device_t) + 2 * US
        host.event(python, "train", begin, t - begin, _r=1, step_num=step)
        t += 8 * US


# A TPU program's XLA ops per step: (name, HLO category, duration in ps, framework op); the categories XProf's TPU
# step breakdown tells apart (infeed, outfeed, all-reduce, host send) and compute.
TPU_OPS = [
    ("infeed.1", "infeed", 6_000_000, ""),
    ("convolution.2", "convolution", 21_000_000, "jit(train_step)/conv_general_dilated"),
    ("fusion.3", "loop fusion", 9_500_000, "jit(train_step)/add"),
    ("all-reduce.4", "all-reduce", 7_250_000, "jit(train_step)/psum"),
    ("fusion.5", "output fusion", 12_000_000, "jit(train_step)/dot_general"),
    ("send.6", "host send", 2_000_000, ""),
    ("outfeed.7", "outfeed", 3_500_000, ""),
]


def tpu_ops(space, launched=False):
    """A JAX training loop on two TensorCores as the TPU profiler lays them out: per core a `/device:TPU:N`
    plane with an `XLA Modules` line (the step's module, program_id), an `XLA Ops` line of the module's ops whose
    event metadata carries program_id, symbol_id, hlo_category, flops, bytes_accessed and tf_op, and a `Steps`
    line (step_num); the second core runs a little slower.

    With `launched` (tpu_launch), the TPU runtime's launches tie the device to the host steps: per core a host
    `DoEnqueueProgram` (device_ordinal, queue_id, run_id) inside the step's PjitFunction, and the module events
    carry the launch's queue_id and run_id (XProf's preprocessing makes them a kTpuLaunch producer and its
    consumers). A launch before the first host step (a warm-up, in no step) runs a device step of its own, and
    step 5 launches a second program (jit_eval_step) whose device step belongs to the same host step. Its
    TensorCore planes name the chip (device_type_string "TPU v4")."""
    host = Plane(space, 1, "/host:CPU")
    python = host.line(1, "python3")
    cores = []
    for k in range(2):
        dev = Plane(space, 2 + k, f"/device:TPU:{k}")
        device_caps(dev, "", tpu=True)
        if launched:  # the chip's type, as tsl's TPU plane builder writes it
            dev.set_stat(dev.p, "device_type_string", "TPU v4")
        cores.append((dev, dev.line(2, "XLA Ops"), dev.line(1, "XLA Modules"), dev.line(0, "Steps")))
        for symbol, (name, category, _duration, framework) in enumerate(TPU_OPS, start=1):
            md = dev.p.event_metadata[dev.event_id(name)]
            dev.set_stat(md, "program_id", 42)
            dev.set_stat(md, "symbol_id", symbol)
            dev.set_stat(md, "hlo_category", category)
            dev.set_stat(md, "flops", 1_000_000 * symbol)
            dev.set_stat(md, "bytes_accessed", 65_536 * symbol)
            if framework:
                dev.set_stat(md, "tf_op", framework)
    t = 0
    run_id = 700
    device_step = 0

    def launch(at, module, program_ops, step):
        """One program launched on both cores at host time `at`: the device's ops, module and step events;
        returns when the slower core is done."""
        nonlocal run_id, device_step
        ends = []
        for k, (dev, ops, modules, steps) in enumerate(cores):
            tie = {}
            if launched:
                host.event(python, "DoEnqueueProgram", at + k * 200_000, 150_000, device_ordinal=k, queue_id=0,
                           run_id=run_id)
                tie = dict(run_id=run_id, queue_id=0)
            device_t = step_begin = at + 4 * US
            for name, _category, duration, _framework in program_ops:
                d = duration + (k * 3 + step) * 1_000
                dev.event(ops, name, device_t, d)
                device_t += d + 400_000 * (1 + k)
            dev.event(modules, module, step_begin, device_t - step_begin, program_id=42, **tie)
            dev.event(steps, f"{device_step}", step_begin, device_t - step_begin + 1_500_000, step_num=device_step)
            ends.append(device_t + 1_500_000)
        run_id += 1
        device_step += 1
        return max(ends)

    if launched:  # a warm-up launch before the first host step
        t = launch(t, "jit_train_step", TPU_OPS, 0) + 4 * US
    for step in range(STEPS):
        begin = t
        t += 5 * US
        host.event(python, "PjitFunction(train_step)", t, 3 * US)
        t = launch(t, "jit_train_step", TPU_OPS, step) + 2 * US
        if launched and step == 5:
            host.event(python, "PjitFunction(eval_step)", t, 3 * US)
            t = launch(t, "jit_eval_step", TPU_OPS[1:3], step) + 2 * US
        host.event(python, "train", begin, t - begin, _r=1, step_num=step)
        t += 6 * US


# tpu_mem's XLA ops: (name, display name, category, duration in ps, tf_op, module (index into the chosen
# modules), flops, model_flops, bytes_accessed, memory_access_breakdown as (operation type, memory space, bytes);
# operation types 1 read, 2 write; memory spaces 1 HBM, 2 CMEM, 3 VMEM; and deduplicated_name, if any). while.4
# holds add.5; XLA made fusion.10 a duplicate of fusion.11. TPU_MEM_SOURCES: source_info and source_stack.
TPU_MEM_OPS = [
    ("fusion.1", "", "output fusion", 9 * US, "jit(step)/dot_general", 0, 4_000_000, 5_000_000, 300_000,
     [(1, 1, 200_000), (2, 1, 80_000), (1, 3, 50_000), (2, 2, 20_000)]),
    ("fusion.1", "", "output fusion", 5 * US, "jit(eval)/dot_general", 1, 2_000_000, 0, 100_000,
     [(1, 1, 60_000), (2, 1, 40_000)]),
    ("%convolution.3 = bf16[8,8]{1,0} convolution(a, b)", "convolution.3", "convolution", 7 * US, "jit(step)/conv",
     0, 9_000_000, 0, 120_000, [(1, 2, 100_000), (2, 3, 30_000), (0, 1, 10_000)]),
    ("while.4", "", "while", 12 * US, "", 0, 1_000_000, 0, 50_000, []),
    ("add.5", "", "loop fusion", 4 * US, "jit(step)/add", 0, 500_000, 0, 64_000, [(1, 1, 32_000), (2, 1, 32_000)]),
    ("region_0.6", "", "loop fusion", 2 * US, "", 0, 100_000, 0, 1_000, []),
    ("infeed.7", "", "infeed", 3 * US, "", 0, 0, 0, 8_192, [(2, 1, 8_192)]),
    ("outfeed.8", "", "outfeed", 2 * US, "", 0, 0, 0, 4_096, []),
    ("fusion.10", "", "loop fusion", 1_500_000, "jit(step)/mul", 0, 300_000, 0, 10_000, [], "fusion.11"),
    ("fusion.11", "", "loop fusion", 1 * US, "jit(step)/mul", 0, 300_000, 0, 10_000, []),
]


# Instructions fused into fusion.1 of the first module (its metadata's child_id): name, category, flops, model_flops.
TPU_MEM_FUSED = [("multiply.7", "loop fusion", 1_000, 0), ("add.8", "loop fusion", 3_000, 4_000)]
TPU_MEM_SOURCES = {
    "convolution.3": ("model.py:42", "model.py:42 conv\ntrain.py:7 <step> & 'loss'"),
    "fusion.11": ("no line here", "train.py:9"),
}


def tpu_mem(space, cmem=True):
    """Two TensorCores of a chip with CMEM (or without: tpu_vmem), merged VMEM and megacore (their peaks as plane
    stats; the flags int64, as tsl's XStatsBuilder writes a bool) running ops
    of two jaxprog modules (their HLO protos in the metadata plane name the programs), each op's metadata with
    model_flops and memory_access_breakdown (MemoryAccessBreakdown of XProf's op_metrics.proto): an op name in
    both modules, a display name, a while op holding another op, a `region` op, infeed and outfeed, an op XLA
    deduplicated (deduplicated_name), source lines (one not of file:line), two instructions fused into one
    (child_id); the first core's convolutions ran at a lower clock (time_scale_multiplier
    0.8 on their events); fusion.10's events carry a self_duration_ps. XProf 2.24.2 reads neither stat."""
    from xprof.protobuf import op_metrics_pb2

    meta, modules = jax_metadata()
    space.planes.add().CopyFrom(meta)
    programs = [m[:2] for m in modules[:2]]
    host = Plane(space, 1, "/host:CPU")
    python = host.line(1, "python3")
    cores = []
    peaks = {"peak_teraflops_per_second": 197.0, "peak_hbm_bw_gigabytes_per_second": 819.0,
             "peak_sram_rd_bw_gigabytes_per_second": 3000.0, "peak_sram_wr_bw_gigabytes_per_second": 2500.0,
             "peak_cmem_rd_bw_gigabytes_per_second": 1500.0, "peak_cmem_wr_bw_gigabytes_per_second": 1400.0,
             "peak_vmem_rd_bw_gigabytes_per_second": 6000.0, "peak_vmem_wr_bw_gigabytes_per_second": 5000.0}
    for k in range(2):
        dev = Plane(space, 2 + k, f"/device:TPU:{k}")
        for name, value in peaks.items():
            if cmem or "cmem" not in name:
                dev.set_stat(dev.p, name, value)
        for flag in ("has_megacore", "has_merged_vmem"):
            dev.p.stats.add(metadata_id=dev.stat_id(flag), int64_value=1)
        cores.append((dev, dev.line(2, "XLA Ops"), dev.line(1, "XLA Modules"), dev.line(0, "Steps")))
        symbols = {}
        for op in TPU_MEM_OPS:
            name, display, category, _duration, framework, module, flops, model, size, breakdown, *dedup = op
            program = programs[module][0]
            symbols[program] = symbols.get(program, 0) + 1
            key = f"{name}@{module}"  # one metadata per op and module
            md = dev.p.event_metadata[dev.event_id(key)]
            md.name = name
            md.display_name = display
            dev.set_stat(md, "program_id", program)
            dev.set_stat(md, "symbol_id", symbols[program])
            dev.set_stat(md, "hlo_category", category)
            dev.set_stat(md, "flops", flops)
            if model:
                dev.set_stat(md, "model_flops", model)
            dev.set_stat(md, "bytes_accessed", size)
            if breakdown:
                message = op_metrics_pb2.MemoryAccessBreakdown()
                for kind, memory, amount in breakdown:
                    message.memory_accessed.add(operation_type=kind, memory_space=memory, bytes_accessed=amount)
                dev.set_stat(md, "memory_access_breakdown", message.SerializeToString())
            if framework:
                dev.set_stat(md, "tf_op", framework)
            if dedup:
                dev.set_stat(md, "deduplicated_name", dedup[0])
            for stat, text in zip(("source_info", "source_stack"), TPU_MEM_SOURCES.get(display or name, ())):
                md.stats.add(metadata_id=dev.stat_id(stat), str_value=text)
            if key == "fusion.1@0":
                for fused, fused_category, fused_flops, fused_model in TPU_MEM_FUSED:
                    child = dev.p.event_metadata[dev.event_id(fused)]
                    dev.set_stat(child, "hlo_category", fused_category)
                    dev.set_stat(child, "flops", fused_flops)
                    if fused_model:
                        dev.set_stat(child, "model_flops", fused_model)
                    md.child_id.append(child.id)
    t = 0
    for step in range(STEPS):
        begin = t
        t += 5 * US
        host.event(python, "PjitFunction(step)", t, 3 * US)
        ends = []
        for k, (dev, ops, modules_line, steps) in enumerate(cores):
            device_t = step_begin = t + 4 * US
            for name, _display, category, duration, _framework, module, *_ in TPU_MEM_OPS:
                d = duration + (k * 3 + step) * 1_000
                if name == "add.5":  # inside while.4
                    dev.event(ops, f"{name}@{module}", device_t - 11 * US, d)
                    continue
                scale = {"time_scale_multiplier": 0.8} if k == 0 and category == "convolution" else {}
                event = dev.event(ops, f"{name}@{module}", device_t, d, **scale)
                if name == "fusion.10":  # int64, as tracers write it and XProf's IntValue reads it
                    event.stats.add(metadata_id=dev.stat_id("self_duration_ps"), int64_value=d // 2)
                device_t += d + 300_000
            dev.event(modules_line, programs[0][1], step_begin, device_t - step_begin, program_id=programs[0][0])
            dev.event(steps, f"{step}", step_begin, device_t - step_begin + 1_000_000, step_num=step)
            ends.append(device_t + 1_000_000)
        t = max(ends) + 2 * US
        host.event(python, "train", begin, t - begin, _r=1, step_num=step)
        t += 6 * US


def empty_gpu(space):
    """small.xplane.pb (TensorFlow on CPU) with a GPU plane that recorded nothing."""
    space.MergeFrom(xplane_pb2.XSpace.FromString((Path(sys.argv[1]).parent / "small.xplane.pb").read_bytes()))
    space.planes.add(id=99, name="/device:GPU:0")


def gpu_and_tpu(space):
    """gpu_tf's host with tpu_ops' two TensorCore planes beside its GPU (no runtime writes such a host: what XProf
    makes of it)."""
    tf_gpu(space)
    tpu = xplane_pb2.XSpace()
    tpu_ops(tpu)
    for plane in tpu.planes:
        if plane.name.startswith("/device:TPU:"):
            added = space.planes.add()
            added.CopyFrom(plane)
            added.id = 100 + plane.id


VARIANTS = {
    "gpu_tf": tf_gpu,
    "gpu_tf2": tf_two_gpus,
    "gpu_tf_xla": tf_xla_gpu,  # TF kernels and XLA clusters' kernels on one GPU
    "gpu_tf_xla2": lambda s: tf_xla_gpu(s, two=True),  # and a second GPU of only TF kernels
    "gpu_tf_xla_nohlo": without_hlo,  # gpu_tf_xla without the modules' HloProtos
    "gpu_jax": lambda s: jax_device(s, "/device:GPU:0", "Nvidia"),
    "rocm_jax": lambda s: jax_device(s, "/device:GPU:0", "AMD"),
    "gpu_jax2": lambda s: jax_device(s, "/device:GPU:0", "Nvidia", two=True),  # two GPUs running XLA ops
    "tpu_jax": lambda s: jax_device(s, "/device:TPU:0", "", tpu=True),
    "tpu_ops": tpu_ops,
    "tpu_launch": lambda s: tpu_ops(s, launched=True),
    "gpu_jax_ops": lambda s: jax_device(s, "/device:GPU:0", "Nvidia", opcodes=True),
    # every instruction of gpu_jax_ops' modules as a kernel: op_profile only (XLA's cost of each instruction)
    "gpu_jax_every": lambda s: jax_device(s, "/device:GPU:0", "Nvidia", opcodes=True, every=True),
    # gpu_jax_ops' dot and convolution as XLA:GPU's cuBLAS and cuDNN custom calls
    "gpu_jax_dnn": lambda s: jax_device(s, "/device:GPU:0", "Nvidia", dnn="__cublas$lt$matmul"),
    # and with the legacy cuBLAS call (XLA:GPU's default without cuBLASLt): hlo_stats only
    "gpu_jax_dnn_legacy": lambda s: jax_device(s, "/device:GPU:0", "Nvidia", dnn="__cublas$gemm"),
    # collectives (sync and XLA:GPU's async forms) and rng-get-and-update-state
    "gpu_jax_collectives": lambda s: jax_device(s, "/device:GPU:0", "Nvidia", collectives=True),
    "tpu_mem": tpu_mem,
    "tpu_vmem": lambda s: tpu_mem(s, cmem=False),
    "small_emptygpu": empty_gpu,
    "gpu_tf_tpu": gpu_and_tpu,  # one host with GPU and TPU planes
}


STEP_TOOLS = ("overview_page", "input_pipeline_analyzer", "roofline_model")
# Sessions of several hosts: (file, its clock moved by so many microseconds) per host, in XProf's list order, and
# the tools written. gpu_tf's steps overlap gpu_tf2's (the chief: its steps span least) best two steps later;
# a CPU-only host first takes no part in a session with GPUs; and copies of gpu_tf moved to overlap only the
# chief's first steps and only its last make an empty intersection.
SESSIONS = {
    "gpu_tf+gpu_tf2": ([("gpu_tf", 0), ("gpu_tf2", 0)], TOOLS),
    "gpu_tf2+gpu_tf": ([("gpu_tf2", 0), ("gpu_tf", 0)], STEP_TOOLS),
    "small+gpu_tf": ([("small", 0), ("gpu_tf", 0)], STEP_TOOLS),
    "gpu_tf2+early+late": ([("gpu_tf2", 0), ("gpu_tf", -990), ("gpu_tf", 302)], STEP_TOOLS),
    # Two hosts of GPUs running XLA ops (one GPU, then two)
    "gpu_jax+gpu_jax2": ([("gpu_jax", 0), ("gpu_jax2", 0)], TOOLS),
    # A host of XLA ops and a host of TensorFlow kernels
    "gpu_jax+gpu_tf": ([("gpu_jax", 0), ("gpu_tf", 0)], TOOLS),
    # Hosts with a single step in common: a step-time part that is zero has the deviation -nan in XProf
    "gpu_jax_dnn+gpu_tf": ([("gpu_jax_dnn", 0), ("gpu_tf", 0)], STEP_TOOLS),
    # Two TPU hosts, the second's clock 150 us later: their TensorCores' steps meet a step or two apart.
    "tpu_ops+tpu_ops_late": ([("tpu_ops", 0), ("tpu_ops", 150)],
                             (*STEP_TOOLS, "framework_op_stats", "hlo_stats", "op_profile")),
    # A TPU host and a GPU host, in both orders: one combined OpStats (TPU analysis; its step db of both hosts'
    # cores); with tpu_ops, whose TensorCores name no chip, XProf counts the TPU host as a coordinator.
    "tpu_launch+gpu_tf": ([("tpu_launch", 0), ("gpu_tf", 0)], TOOLS),
    "gpu_tf+tpu_launch": ([("gpu_tf", 0), ("tpu_launch", 0)], TOOLS),
    "tpu_ops+gpu_tf": ([("tpu_ops", 0), ("gpu_tf", 0)], ("input_pipeline_analyzer",)),
    # tpu_mem's ops have memory breakdowns: XProf's combined perf env (the last positive FLOP rate, the first
    # host's bandwidths) decides their bounds and bandwidth utilisations.
    "tpu_mem+gpu_tf": ([("tpu_mem", 0), ("gpu_tf", 0)], TOOLS),
    "gpu_tf+tpu_mem": ([("gpu_tf", 0), ("tpu_mem", 0)], TOOLS),
    # A TPU host beside a GPU host of XLA ops
    "tpu_launch+gpu_jax": ([("tpu_launch", 0), ("gpu_jax", 0)], TOOLS),
    "gpu_jax+tpu_launch": ([("gpu_jax", 0), ("tpu_launch", 0)], TOOLS),
}


def tool_variants(tools):
    """(tool, file suffix, params) of each tool; op_profile also grouped by category."""
    for tool in tools:
        yield tool, "", {}
        if tool == "op_profile":
            yield tool, ".by_category", {"group_by": "category"}


def shifted(data: bytes, shift_us: int) -> bytes:
    """An XSpace with every line's clock (timestamp_ns) moved by shift_us."""
    if not shift_us:
        return data
    space = xplane_pb2.XSpace.FromString(data)
    for plane in space.planes:
        for line in plane.lines:
            line.timestamp_ns += shift_us * 1000
    return space.SerializeToString(deterministic=True)


def in_time_order(space) -> None:
    """Tracers' lines are in time order, enclosing events first (XProf's grouping needs it)."""
    for plane in space.planes:
        for line in plane.lines:
            events = sorted((xplane_pb2.XEvent.FromString(e.SerializeToString()) for e in line.events),
                            key=lambda e: (e.offset_ps, -e.duration_ps))
            del line.events[:]
            line.events.extend(events)


def main():
    if sys.argv[2:3] in (["--big"], ["--big-tpu"]):  # benchmarks: gpu_tf or tpu_ops of 20,000 steps, to a path
        global STEPS
        STEPS = 20_000
        space = xplane_pb2.XSpace()
        space.hostnames.append("gpuhost")
        if sys.argv[2] == "--big-tpu":
            tpu_ops(space)
        elif sys.argv[4:5] == ["gpu_jax"]:  # or gpu_jax of 5,000 steps (120,000 XLA kernels)
            STEPS = 5_000
            jax_device(space, "/device:GPU:0", "Nvidia")
        else:
            tf_gpu(space)
        in_time_order(space)
        Path(sys.argv[3]).write_bytes(space.SerializeToString())
        return
    args = sys.argv[2:]
    if "--jax-trace" in args:  # gpu_jax_ops: the trace jax_xla_opcodes_profile.py wrote
        at = args.index("--jax-trace")
        JAX_TRACE.append(Path(args[at + 1]))
        del args[at : at + 2]
    if "--collectives-trace" in args:  # gpu_jax_collectives: the folder jax_xla_collectives_profile.py wrote
        at = args.index("--collectives-trace")
        COLLECTIVES_TRACE.append(Path(args[at + 1]))
        del args[at : at + 2]
    folder = Path(sys.argv[1])
    out = folder / "tools"
    out.mkdir(exist_ok=True)
    only = args or [*VARIANTS, *SESSIONS]
    if "gpu_jax_ops" in only and not JAX_TRACE:
        sys.exit("gpu_jax_ops needs --jax-trace PATH (the xplane.pb of jax_xla_opcodes_profile.py)")
    if "gpu_jax_collectives" in only and not COLLECTIVES_TRACE:
        sys.exit("gpu_jax_collectives needs --collectives-trace DIR (the folder of jax_xla_collectives_profile.py)")
    for session in [s for s in only if s in SESSIONS]:  # sessions of several hosts (XProf takes the list)
        only.remove(session)
        hosts, tools = SESSIONS[session]
        files = {}
        for k, (name, shift_us) in enumerate(hosts):
            source = folder / f"{name}.xplane.pb"
            if not source.exists():
                source = folder.parent / f"{name}.xplane.pb"
            files[f"host{k}.xplane.pb"] = shifted(source.read_bytes(), shift_us)
        for tool, suffix, params in tool_variants(tools):
            write_answer(out / f"{session}.{tool}{suffix}.json", xprof_answer(files, tool, params))
    for name in only:
        space = xplane_pb2.XSpace()
        if name != "small_emptygpu":
            space.hostnames.append("gpuhost")
        VARIANTS[name](space)
        in_time_order(space)
        path = folder / f"{name}.xplane.pb"
        path.write_bytes(space.SerializeToString(deterministic=True))
        tools = {"gpu_jax_every": ("op_profile",), "gpu_jax_dnn_legacy": ("hlo_stats",)}.get(name, TOOLS)
        for tool, suffix, params in tool_variants(tools):
            if name == "gpu_jax_every" and suffix:
                continue  # gpu_jax_every: XProf's op profile by program only
            answer = xprof_answer({path.name: path.read_bytes()}, tool, params)
            write_answer(out / f"{name}.{tool}{suffix}.json", answer)


if __name__ == "__main__":
    main()
