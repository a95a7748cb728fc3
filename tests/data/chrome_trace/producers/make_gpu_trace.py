"""Build GPU-shaped Kineto traces from the real CPU traces (no GPU on the machine).

    python producers/make_gpu_trace.py            # writes ../gpu/rank-{0,1}.json.gz
                                                  #    and ../gpu_memory/gpu_memory.pt.trace.json.gz

Inputs (real PyTorch profiler output, made by the other producers):
    ../two_ranks/rank-0.json.gz, ../two_ranks/rank-1.json.gz   -> ../gpu/rank-<r>.json.gz (device r)
    ../train.pt.trace.json.gz                                  -> ../gpu_memory/gpu_memory.pt.trace.json.gz

Every event of the input is kept unchanged (same text, see kineto_text.py); the
script only ADDS what a CUDA-enabled PyTorch 2.x / Kineto run writes on top of it.
Field names, categories, phases and args keys are Kineto's (pytorch/kineto
libkineto/src/output_json.cpp, CuptiActivity.cpp, CuptiActivityProfiler.{h,cpp},
CudaDeviceProperties.cpp, ActivityType.cpp):

  * for selected cpu_ops, a ``cuda_runtime`` X event (cudaLaunchKernel cbid 211,
    cudaMemcpyAsync cbid 41, cudaMemsetAsync cbid 51) inside the op, on the op's
    pid/tid, args {"External id", "cbid", "correlation"}; "External id" is the op's;
  * the matching GPU X event on pid = device index, tid = stream: cat ``kernel``
    (args External id, queued, device, context, stream, correlation, registers per
    thread, shared memory, blocks per SM, warps per SM, grid, block, est. achieved
    occupancy %), ``gpu_memcpy`` / ``gpu_memset`` (args External id, device, context,
    stream, correlation, bytes, memory bandwidth (GB/s));
  * ``ac2g`` flow events: "s" at the runtime call (CPU pid/tid), "f" with "bp": "e"
    at the GPU op start (device pid / stream tid), id = correlation;
  * ``gpu_user_annotation`` X events: per (innermost user annotation enclosing the
    launch, stream) the span of its GPU ops, 1 ns earlier and 2 ns longer, args
    {"External id": <annotation's External id>} (CuptiActivityProfiler GpuUserEventMap);
  * M events: process_name/process_labels ("GPU <n>")/process_sort_index
    (5000000 + n) for n = 0..15, thread_name "stream <id> " (sic, trailing blank:
    fmt "stream {} {}" with an empty postfix) / thread_sort_index <id> per used stream;
  * top-level ``deviceProperties`` (two A100-SXM4-80GB, values of a real trace) and
    the cupti_version / cuda_runtime_version / cuda_driver_version metadata keys.

Timing model (deterministic, fixed seed): the GPU op starts after its launch call
started (launch latency 3-9 us) and after the previous op on its stream; compute and
copies use stream 7, NCCL all-reduce kernels stream 21, and rank 1's
straggler_extra_compute work a side stream 13 (its GEMMs fall behind the CPU, so they
overlap the later work of streams 7 and 21). An all-reduce kernel waits for the
current compute stream 7 (ProcessGroupNCCL stream sync) and ends, on both ranks, at
(max over ranks of its start) + transfer time, so the fast rank's NCCL kernel spans
the wait for the straggler. DDP's copy_bucket_to_grad copies wait for the previous
all-reduce. Rank 1 kernels are 25 % slower and its straggler_extra_compute matmuls
launch ~2 ms GEMMs. Every GPU op lasts >= 2 us (HolisticTraceAnalysis rounds ts up and
end down to whole us; shorter ops could get negative durations there).
"""
import math
import os
import random
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kineto_text as kt  # noqa: E402
from kineto_text import Raw  # noqa: E402

SEED = 20251123
COMPUTE_STREAM = 7
SIDE_STREAM = 13  # rank 1's straggler_extra_compute runs on a side stream (torch.cuda.stream(s))
NCCL_STREAM = 21
K_EXCEED_MAX_PID = 5000000  # libkineto/include/output_base.h
MAX_GPU_ID = 15  # CuptiActivityProfiler::finalizeTrace writes GPU 0..15
CBID = {"cudaLaunchKernel": 211, "cudaMemcpyAsync": 41, "cudaMemsetAsync": 51}

# Real values of an NVIDIA A100-SXM4-80GB as Kineto writes them.
A100 = dict(name="NVIDIA A100-SXM4-80GB", totalGlobalMem=84974239744, computeMajor=8, computeMinor=0,
            maxThreadsPerBlock=1024, maxThreadsPerMultiprocessor=2048, regsPerBlock=65536, warpSize=32,
            sharedMemPerBlock=49152, numSms=108, regsPerMultiprocessor=65536,
            sharedMemPerBlockOptin=166912, sharedMemPerMultiprocessor=167936)
EXTRA_META = [("cupti_version", 24), ("cuda_runtime_version", 12060), ("cuda_driver_version", 12040)]

# --- GPU work per cpu_op -----------------------------------------------------------
# kind: kernel / memcpy / memset / nccl; dur: (lo, hi) microseconds before the rank factor
VEC = "void at::native::vectorized_elementwise_kernel<4, {f}, at::detail::Array<char*, {n}> >(int, {f}, at::detail::Array<char*, {n}>)"
K = {
    "gemm_fwd": dict(name="ampere_sgemm_32x32_sliced1x4_tn", regs=86, smem=8192, block=(128, 1, 1), dur=(6, 11)),
    "gemm_fwd2": dict(name="void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_nt_align1>(cutlass_80_simt_sgemm_64x64_8x5_nt_align1::Params)",
                      regs=122, smem=40960, block=(128, 1, 1), dur=(5, 9)),
    "gemm_bwd": dict(name="ampere_sgemm_32x128_nn", regs=57, smem=16384, block=(256, 1, 1), dur=(7, 13)),
    "gemm_bwd2": dict(name="ampere_sgemm_128x32_nt", regs=57, smem=16384, block=(256, 1, 1), dur=(6, 10)),
    "gemm_big": dict(name="ampere_sgemm_128x64_nn", regs=122, smem=32768, block=(128, 1, 1), dur=(1650, 1950)),
    "clamp": dict(name=VEC.format(f="at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}", n=2),
                  regs=18, smem=0, block=(128, 1, 1), dur=(2, 3.2)),
    "threshold": dict(name=VEC.format(f="at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::{lambda(float, float)#1}", n=3),
                      regs=20, smem=0, block=(128, 1, 1), dur=(2, 3.4)),
    "softmax_fwd": dict(name="void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxForwardEpilogue>(float*, float const*, int)",
                        regs=30, smem=64, block=(128, 1, 1), dur=(3, 4.5)),
    "softmax_bwd": dict(name="void at::native::(anonymous namespace)::cunn_SoftMaxBackward<4, float, float, float, at::native::(anonymous namespace)::LogSoftMaxBackwardEpilogue>(float*, float const*, float const*, long)",
                        regs=32, smem=64, block=(128, 1, 1), dur=(3, 4.2)),
    "nll_fwd": dict(name="void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)",
                    regs=28, smem=2048, block=(32, 1, 1), dur=(3.5, 5.5)),
    "nll_bwd": dict(name="void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)",
                    regs=24, smem=0, block=(32, 1, 1), dur=(2.5, 3.6)),
    "fill": dict(name=VEC.format(f="at::native::FillFunctor<float>", n=1), regs=16, smem=0, block=(128, 1, 1), dur=(2, 2.6)),
    "sum": dict(name="void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4>)",
                regs=32, smem=16, block=(32, 16, 1), dur=(3.5, 6)),
    "add": dict(name=VEC.format(f="at::native::CUDAFunctor_add<float>", n=3), regs=22, smem=0, block=(128, 1, 1), dur=(2, 3.5)),
    "mul": dict(name=VEC.format(f="at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >", n=3),
                regs=20, smem=0, block=(128, 1, 1), dur=(2, 3.4)),
    "tanh": dict(name=VEC.format(f="at::native::tanh_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}", n=2),
                 regs=26, smem=0, block=(128, 1, 1), dur=(7, 10)),
    "normal": dict(name="void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<float, 4, at::native::templates::cuda::normal_and_transform<float, float, 4ul, at::CUDAGeneratorImpl*>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*)::{lambda(curandStatePhilox4_32_10*)#2}>(long, at::PhiloxCudaState, at::native::templates::cuda::normal_and_transform<float, float, 4ul, at::CUDAGeneratorImpl*>(at::TensorIteratorBase&, at::CUDAGeneratorImpl*)::{lambda(curandStatePhilox4_32_10*)#2})",
                   regs=40, smem=0, block=(256, 1, 1), dur=(2.5, 4)),
    "random": dict(name="void at::native::(anonymous namespace)::distribution_elementwise_grid_stride_kernel<unsigned int, 4, at::native::templates::cuda::random_from_to_kernel<at::CUDAGeneratorImpl*>(at::TensorIteratorBase&, unsigned long, long, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda(curandStatePhilox4_32_10*)#1}>(long, at::PhiloxCudaState, at::native::templates::cuda::random_from_to_kernel<at::CUDAGeneratorImpl*>(at::TensorIteratorBase&, unsigned long, long, at::CUDAGeneratorImpl*)::{lambda()#1}::operator()() const::{lambda(curandStatePhilox4_32_10*)#1})",
                   regs=34, smem=0, block=(256, 1, 1), dur=(2.2, 3.2)),
    "nccl": dict(name="ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)",
                 regs=96, smem=35392, block=(640, 1, 1), dur=None),
}
MEMCPY_HTOD = "Memcpy HtoD (Pageable -> Device)"
MEMCPY_DTOD = "Memcpy DtoD (Device -> Device)"
MEMSET = "Memset (Device)"


def numel(dims):
    n = 1
    for d in dims or []:
        n *= d
    return n


def first_dims(op):
    dims = op["args"].get("Input Dims") or [[]]
    d = dims[0]
    while d and isinstance(d[0], list):  # TensorList
        d = d[0]
    return d


def work_for(op, parent_names):
    """(kind, spec-key or memcpy/memset name) of the GPU work op launches, or None."""
    n = op["name"]
    parents = set(parent_names)
    if n == "aten::addmm":
        return ("kernel", "gemm_fwd" if first_dims(op) and first_dims(op)[0] > 32 else "gemm_fwd2")
    if n == "aten::mm":
        if "straggler_extra_compute" in parents:
            return ("kernel", "gemm_big")
        return ("kernel", "gemm_bwd" if numel(first_dims(op)) > 512 else "gemm_bwd2")
    simple = {"aten::clamp_min": "clamp", "aten::threshold_backward": "threshold",
              "aten::_log_softmax": "softmax_fwd", "aten::_log_softmax_backward_data": "softmax_bwd",
              "aten::nll_loss_forward": "nll_fwd", "aten::nll_loss_backward": "nll_bwd",
              "aten::fill_": "fill", "aten::sum": "sum", "aten::add_": "add", "aten::mul": "mul",
              "aten::tanh": "tanh", "aten::normal_": "normal", "aten::random_": "random"}
    if n in simple:
        return ("kernel", simple[n])
    if n == "aten::zero_":
        return ("memset", MEMSET)
    if n == "aten::copy_":
        if "aten::_to_copy" in parents:
            return ("memcpy", MEMCPY_HTOD)
        if "aten::clone" in parents or "torch.distributed.ddp.reducer::copy_bucket_to_grad" in parents:
            return ("memcpy", MEMCPY_DTOD)
        return None
    if n == "c10d::allreduce_":
        return ("nccl", "nccl")
    return None


def build_tree(events):
    """children / parent for X cpu_op + user_annotation events, per (pid, tid)."""
    xs = [i for i, e in enumerate(events) if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation")]
    by_thread = {}
    for i in xs:
        e = events[i]
        by_thread.setdefault((e["pid"], e["tid"]), []).append(i)
    parent, children = {}, {i: [] for i in xs}
    for idxs in by_thread.values():
        idxs.sort(key=lambda i: (kt.to_ns(events[i]["ts"]), -kt.to_ns(events[i]["dur"]), i))
        stack = []
        for i in idxs:
            s = kt.to_ns(events[i]["ts"])
            while stack and s >= kt.to_ns(events[stack[-1]]["ts"]) + kt.to_ns(events[stack[-1]]["dur"]):
                stack.pop()
            parent[i] = stack[-1] if stack else None
            if stack:
                children[stack[-1]].append(i)
            stack.append(i)
    return parent, children


def ancestors(i, parent):
    out = []
    p = parent.get(i)
    while p is not None:
        out.append(p)
        p = parent.get(p)
    return out


def largest_gap(events, i, children):
    s = kt.to_ns(events[i]["ts"])
    e = s + kt.to_ns(events[i]["dur"])
    cur, best = s, (0, s, s)
    for c in sorted(children[i], key=lambda c: kt.to_ns(events[c]["ts"])):
        cs = kt.to_ns(events[c]["ts"])
        ce = cs + kt.to_ns(events[c]["dur"])
        if cs - cur > best[0]:
            best = (cs - cur, cur, cs)
        cur = max(cur, ce)
    if e - cur > best[0]:
        best = (e - cur, cur, e)
    return best


def plan_launches(events, rng, device):
    """Choose the ops that launch GPU work and place their runtime calls."""
    parent, children = build_tree(events)
    launches = []
    for i in sorted(parent, key=lambda i: (kt.to_ns(events[i]["ts"]), i)):
        op = events[i]
        if op["cat"] != "cpu_op":
            continue
        anc = ancestors(i, parent)
        w = work_for(op, [events[a]["name"] for a in anc])
        if w is None:
            continue
        gap, g0, g1 = largest_gap(events, i, children)
        if gap < 400:
            continue
        rt_dur = min(int(gap * 0.6), int(rng.uniform(2.5, 7.0) * 1000))
        rt_ts = g0 + int((gap - rt_dur) * rng.uniform(0.25, 0.75))
        annos = [a for a in anc if events[a]["cat"] == "user_annotation"]
        launches.append(dict(op=i, kind=w[0], key=w[1], rt_ts=rt_ts, rt_dur=rt_dur,
                             anno=annos[0] if annos else None,
                             ancestors=[events[a]["name"] for a in anc]))
    launches.sort(key=lambda l: l["rt_ts"])
    corr = 1000 * (device + 1) + 17
    for l in launches:
        corr += rng.randint(1, 4)  # CUPTI numbers every API call; filtered calls leave gaps
        l["corr"] = corr
        l["lat"] = int(rng.uniform(3.0, 9.0) * 1000)
        l["gap"] = int(rng.uniform(0.4, 1.6) * 1000)
        spec = K.get(l["key"])
        if l["kind"] == "kernel":
            l["dur"] = int(rng.uniform(*spec["dur"]) * 1000)
        elif l["kind"] == "memcpy":
            nbytes = 4 if l["key"] == MEMCPY_HTOD else 4 * max(1, numel(first_dims(events[l["op"]])))
            l["bytes"] = nbytes
            l["dur"] = int((rng.uniform(2.0, 2.6) + nbytes / 600000.0) * 1000)
        elif l["kind"] == "memset":
            l["bytes"] = 4 * max(1, numel(first_dims(events[l["op"]])))
            l["dur"] = int(rng.uniform(2.0, 2.5) * 1000)
        else:
            l["bytes"] = 4 * max(1, numel(first_dims(events[l["op"]])))
    return launches


def simulate(launches, factor, nccl_end):
    """Place GPU ops on streams. nccl_end[k]: current estimate of all-reduce k's end."""
    free = {COMPUTE_STREAM: 0, SIDE_STREAM: 0, NCCL_STREAM: 0}
    ready, k, last_nccl_end = [], 0, 0
    for l in launches:
        earliest = l["rt_ts"] + l["lat"]
        if l["kind"] == "nccl":
            start = max(earliest, free[NCCL_STREAM] + l["gap"], free[COMPUTE_STREAM])
            ready.append(start)
            end = max(nccl_end[k] if k < len(nccl_end) else 0, start + 2000)
            l.update(stream=NCCL_STREAM, ts=start, dur=end - start, k=k)
            free[NCCL_STREAM] = end
            last_nccl_end = end
            k += 1
            continue
        stream = SIDE_STREAM if "straggler_extra_compute" in l["ancestors"] else COMPUTE_STREAM
        start = max(earliest, free[stream] + l["gap"])
        if "torch.distributed.ddp.reducer::copy_bucket_to_grad" in l["ancestors"]:
            start = max(start, last_nccl_end + l["gap"])
        dur = max(2000, int(l["dur"] * factor))
        l.update(stream=stream, ts=start, dur_gpu=dur)
        free[stream] = start + dur
    return ready


def schedule(per_rank, rng):
    """Joint schedule so that collective k ends at the same time on all ranks."""
    counts = {len([l for l in ls if l["kind"] == "nccl"]) for ls, _ in per_rank}
    assert len(counts) == 1, "ranks disagree on the number of all-reduces: %s" % counts
    n = counts.pop()
    xfer = [int(rng.uniform(14, 22) * 1000) for _ in range(n)]
    for ls, _ in per_rank:
        for l in ls:
            if l["kind"] == "nccl":
                l["xfer"] = xfer  # same transfer time on every rank
    nccl_end = [0] * n
    for _ in range(50):
        readies = [simulate(ls, f, nccl_end) for ls, f in per_rank]
        new = [max(r[k] for r in readies) + xfer[k] for k in range(n)]
        if new == nccl_end:
            break
        nccl_end = new
    else:
        raise RuntimeError("schedule did not converge")
    for ls, _ in per_rank:
        for l in ls:
            if l["kind"] != "nccl":
                l["dur"] = l.pop("dur_gpu")


def kernel_args(l, ext, device, spec, rng_grid):
    n = max(1, numel(l.get("numel_dims", [])))
    threads = spec["block"][0] * spec["block"][1] * spec["block"][2]
    if l["kind"] == "nccl":
        grid = (2, 1, 1)
    elif spec["name"].startswith(("ampere_sgemm", "void cutlass")):
        grid = (max(1, l["gemm_tiles"]), 1, 1)
    else:
        grid = (max(1, min(65535, math.ceil(n / (threads * 4)))), 1, 1)
    blocks = grid[0] * grid[1] * grid[2]
    bps = blocks / A100["numSms"]
    wps = bps * math.ceil(threads / A100["warpSize"])
    limit = min(32, A100["maxThreadsPerMultiprocessor"] // threads,
                A100["regsPerMultiprocessor"] // max(1, spec["regs"] * threads),
                (A100["sharedMemPerMultiprocessor"] // spec["smem"]) if spec["smem"] else 32)
    occ = min(bps, limit) * threads / A100["maxThreadsPerMultiprocessor"]
    return {"External id": ext, "queued": 0, "device": device, "context": 1,
            "stream": l["stream"], "correlation": l["corr"],
            "registers per thread": spec["regs"], "shared memory": spec["smem"],
            "blocks per SM": Raw("%f" % bps), "warps per SM": Raw("%f" % wps),
            "grid": list(grid), "block": list(spec["block"]),
            "est. achieved occupancy %": int(0.5 + occ * 100.0)}


def bandwidth(nbytes, dur_ns):
    x = nbytes * 1.0 / dur_ns
    return Raw(str(int(x)) if x == int(x) else repr(x))


def gpu_events(doc, launches, device, pid_tid):
    events = doc["traceEvents"]
    cpu, gpu = [], []
    spans = {}
    for l in launches:
        op = events[l["op"]]
        ext = op["args"]["External id"]
        if l["kind"] in ("kernel", "nccl"):
            rt_name = "cudaLaunchKernel"
        elif l["kind"] == "memcpy":
            rt_name = "cudaMemcpyAsync"
        else:
            rt_name = "cudaMemsetAsync"
        pid, tid = op["pid"], op["tid"]
        cpu.append((l["rt_ts"], 0, {"ph": "X", "cat": "cuda_runtime", "name": rt_name, "pid": pid, "tid": tid,
                                    "ts": l["rt_ts"], "dur": l["rt_dur"],
                                    "args": {"External id": ext, "cbid": CBID[rt_name], "correlation": l["corr"]}}))
        cpu.append((l["rt_ts"], 1, {"ph": "s", "id": l["corr"], "pid": pid, "tid": tid, "ts": l["rt_ts"],
                                    "cat": "ac2g", "name": "ac2g"}))
        if l["kind"] in ("kernel", "nccl"):
            spec = K[l["key"]]
            dims = op["args"].get("Input Dims") or []
            l["numel_dims"] = first_dims(op)
            if spec["name"].startswith(("ampere_sgemm", "void cutlass")):
                a = [d for d in dims if isinstance(d, list) and len(d) == 2]
                m = a[0][0] if a else 32
                nn = a[-1][1] if a else 32
                l["gemm_tiles"] = math.ceil(m / 32) * math.ceil(nn / 32)
            ev = {"ph": "X", "cat": "kernel", "name": spec["name"], "pid": device, "tid": l["stream"],
                  "ts": l["ts"], "dur": l["dur"], "args": kernel_args(l, ext, device, spec, None)}
        else:
            cat = "gpu_memcpy" if l["kind"] == "memcpy" else "gpu_memset"
            ev = {"ph": "X", "cat": cat, "name": l["key"], "pid": device, "tid": l["stream"],
                  "ts": l["ts"], "dur": l["dur"],
                  "args": {"External id": ext, "device": device, "context": 1, "stream": l["stream"],
                           "correlation": l["corr"], "bytes": l["bytes"],
                           "memory bandwidth (GB/s)": bandwidth(l["bytes"], l["dur"])}}
        gpu.append((l["ts"], 0, ev))
        gpu.append((l["ts"], 1, {"ph": "f", "id": l["corr"], "pid": device, "tid": l["stream"], "ts": l["ts"],
                                 "cat": "ac2g", "name": "ac2g", "bp": "e"}))
        if l["anno"] is not None:
            key = (l["anno"], l["stream"])
            s, e = spans.get(key, (l["ts"], l["ts"] + l["dur"]))
            spans[key] = (min(s, l["ts"]), max(e, l["ts"] + l["dur"]))
    annos = []
    for (a, stream), (s, e) in sorted(spans.items(), key=lambda kv: (kv[1][0], kv[0][1])):
        annos.append({"ph": "X", "cat": "gpu_user_annotation", "name": events[a]["name"], "pid": device,
                      "tid": stream, "ts": s - 1, "dur": e - s + 2,
                      "args": {"External id": events[a]["args"]["External id"]}})
    block = [e for _, _, e in sorted(cpu + gpu, key=lambda t: (t[0], t[1]))]
    return block + annos


def convert_memory(doc, device, rng):
    """[memory] events of the model's tensors become CUDA caching-allocator events."""
    events = doc["traceEvents"]
    steps = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("ProfilerStep")]
    loaders = [e for e in events if e.get("cat") == "user_annotation" and e["name"].startswith("enumerate(DataLoader)")]

    def inside(m, spans):
        t = kt.to_ns(m["ts"])
        return any(s["tid"] == m["tid"] and kt.to_ns(s["ts"]) <= t < kt.to_ns(s["ts"]) + kt.to_ns(s["dur"]) for s in spans)

    mems = [e for e in events if e.get("ph") == "i" and e.get("name") == "[memory]"
            and inside(e, steps) and not inside(e, loaders)]
    base = 0x7F3C8A000000 + device * 0x10000000000
    pre = base - 0x200000
    addr_map, bump, total = {}, 0, 0
    sizes = []
    for m in mems:
        b = m["args"]["Bytes"]
        r = 512 * math.ceil(abs(b) / 512) if b else 0
        sizes.append(r if b > 0 else -r)
    prefix, low = 0, 0
    for s in sizes:
        prefix += s
        low = min(low, prefix)
    params = 4 * 512  # weights + biases of the tiny MLP, one 512-byte block each
    total = params - low
    reserved = 2097152
    for m, s in zip(mems, sizes):
        a = m["args"]
        if s > 0:
            addr_map[a["Addr"]] = base + bump
            new_addr = base + bump
            bump += s
        else:
            if a["Addr"] not in addr_map:
                addr_map[a["Addr"]] = pre
                pre -= 0x1000
            new_addr = addr_map[a["Addr"]]
        total += s
        reserved = max(reserved, 2097152 * math.ceil(total / 2097152))
        m["args"] = {"Total Reserved": reserved, "Total Allocated": total, "Bytes": s,
                     "Device Id": device, "Device Type": 1, "Addr": new_addr,
                     **{k: v for k, v in a.items() if k in ("finished", "Ev Idx")}}
    return len(mems)


def make(doc, device, rng, launches, n_devices):
    events = doc["traceEvents"]
    main_pid = next(e["pid"] for e in events if e.get("cat") == "cpu_op")
    added = gpu_events(doc, launches, device, None)
    streams = sorted({l["stream"] for l in launches})
    ts_m = next(e["ts"] for e in events if e.get("ph") == "M")
    dev_m = []
    for g in range(MAX_GPU_ID + 1):
        dev_m += [{"ph": "M", "name": "process_name", "ts": ts_m, "pid": g, "tid": 0, "args": {"name": "python"}},
                  {"ph": "M", "name": "process_labels", "ts": ts_m, "pid": g, "tid": 0, "args": {"labels": "GPU %d" % g}},
                  {"ph": "M", "name": "process_sort_index", "ts": ts_m, "pid": g, "tid": 0,
                   "args": {"sort_index": K_EXCEED_MAX_PID + g}}]
    stream_m = []
    for s in streams:
        stream_m += [{"ph": "M", "name": "thread_name", "ts": ts_m, "pid": device, "tid": s, "args": {"name": "stream %d " % s}},
                     {"ph": "M", "name": "thread_sort_index", "ts": ts_m, "pid": device, "tid": s, "args": {"sort_index": s}}]
    # the CPU process M triplet comes first, then the thread pairs
    i_dev = next(i for i, e in enumerate(events) if e.get("ph") == "M" and e["name"] == "process_sort_index"
                 and e["pid"] == main_pid) + 1
    i_thr = max(i for i, e in enumerate(events) if e.get("ph") == "M" and e["name"] == "thread_sort_index") + 1
    i_end = next(i for i, e in enumerate(events) if e.get("cat") == "Trace")
    # Kineto drops GPU activities outside the capture window (outOfRange); check we have none
    window_end = kt.to_ns(next(e["ts"] for e in events if e.get("name") == "Record Window End"))
    late = [e for e in added if e.get("ph") == "X" and e["ts"] + e["dur"] > window_end]
    assert not late, "GPU work past the capture window: %d events" % len(late)
    new_events = (events[:i_dev] + dev_m + events[i_dev:i_thr] + stream_m + events[i_thr:i_end]
                  + added + events[i_end:])
    out = {}
    for k, v in doc.items():
        if k == "deviceProperties":
            out[k] = [dict(id=i, **A100) for i in range(n_devices)]
            for mk, mv in EXTRA_META[:2]:
                out[mk] = mv
        elif k == "traceEvents":
            out[k] = new_events
        else:
            out[k] = v
            if k == "distributedInfo" or (k == "record_shapes" and "distributedInfo" not in doc):
                out[EXTRA_META[2][0]] = EXTRA_META[2][1]
    return out


def check_roundtrip(path):
    import json
    text = kt.read_text(path)
    assert kt.dumps(json.loads(text)) == text, "layout of %s not reproduced" % path


def main():
    import json
    root = os.path.join(HERE, "..")
    rng = random.Random(SEED)
    # --- two ranks -> gpu/ ---
    docs, per_rank = [], []
    for r in (0, 1):
        src = os.path.join(root, "two_ranks", "rank-%d.json.gz" % r)
        check_roundtrip(src)
        doc = json.loads(kt.read_text(src))
        launches = plan_launches(doc["traceEvents"], rng, r)
        docs.append(doc)
        per_rank.append((launches, 1.0 if r == 0 else 1.25))
    schedule(per_rank, rng)
    os.makedirs(os.path.join(root, "gpu"), exist_ok=True)
    for r, (doc, (launches, _)) in enumerate(zip(docs, per_rank)):
        out = make(doc, r, rng, launches, n_devices=2)
        text = kt.dumps(out)
        json.loads(text)
        dst = os.path.join(root, "gpu", "rank-%d.json.gz" % r)
        kt.write_gz(dst, text)
        print("wrote", dst, os.path.getsize(dst), "launches", len(launches))
    # --- single-process training trace with memory -> gpu_memory/ ---
    src = os.path.join(root, "train.pt.trace.json.gz")
    check_roundtrip(src)
    doc = json.loads(kt.read_text(src))
    launches = plan_launches(doc["traceEvents"], rng, 0)
    schedule([(launches, 1.0)], rng)
    n_mem = convert_memory(doc, 0, rng)
    out = make(doc, 0, rng, launches, n_devices=1)
    text = kt.dumps(out)
    json.loads(text)
    os.makedirs(os.path.join(root, "gpu_memory"), exist_ok=True)
    dst = os.path.join(root, "gpu_memory", "gpu_memory.pt.trace.json.gz")
    kt.write_gz(dst, text)
    print("wrote", dst, os.path.getsize(dst), "launches", len(launches), "cuda [memory] events", n_mem)


if __name__ == "__main__":
    main()
