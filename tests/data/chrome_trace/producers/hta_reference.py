"""Reference numbers from HolisticTraceAnalysis (HTA) for ../gpu/rank-{0,1}.json.gz.

    pip install HolisticTraceAnalysis==0.5.0
    python producers/hta_reference.py          # writes ../gpu/hta_reference.json

HTA's TraceAnalysis(trace_dir=D) reads EVERY *.json / *.gz file in D (the rank is
the first '"rank": N' found in the file text, rank 0 when there is none), so the two
rank files are copied to a temporary folder first: hta_reference.json itself and
any other file in gpu/ must not be taken for a trace.

The script also recomputes every number from the raw JSON with the rule written in
README.md ("What HTA analyses") and asserts that it gets HTA's numbers, so the
README's description of HTA's step window and rounding is checked, not guessed.
"""
import gzip
import json
import math
import os
import re
import shutil
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
GPU_DIR = os.path.join(HERE, "..", "gpu")
FILES = {0: "rank-0.json.gz", 1: "rank-1.json.gz"}
BIG = 10 ** 9  # num_kernels large enough that HTA folds no kernel into "others"

NCCL_KERNEL_RE = re.compile(r"^nccl.*Kernel")                       # hta/utils/utils.py
MEMORY_KERNEL_RE = re.compile(r"(^Memcpy)|(^Memset)|(^dma)")
NCCL_COMPUTE_KERNEL_RE = re.compile(r"(^nccl.*Kernel)|(.*(Memcpy)|(Memset))|(.*Sync)")


def kernel_type(name):
    if NCCL_KERNEL_RE.match(name):
        return "COMMUNICATION"
    if MEMORY_KERNEL_RE.match(name):
        return "MEMORY"
    if not NCCL_COMPUTE_KERNEL_RE.match(name):
        return "COMPUTATION"
    return "OTHER"


# ---------------------------------------------------------------- independent re-computation
def rounded_events(path):
    """Events as HTA keeps them: those with both 'dur' and 'cat', cat != 'Trace';
    ts rounded up, ts + dur rounded down to whole microseconds (HTA's
    round_down_time_stamps, applied because ts is a float column)."""
    with gzip.open(path, "rt") as f:
        doc = json.load(f)
    out = []
    for e in doc["traceEvents"]:
        if "dur" not in e or "cat" not in e or e["cat"] == "Trace":
            continue
        args = e.get("args", {})
        try:
            stream = int(args.get("stream", -1))
        except (TypeError, ValueError):
            stream = -1
        ts, end = math.ceil(e["ts"]), math.floor(e["ts"] + e["dur"])
        out.append(dict(name=e["name"], cat=e["cat"], ts=ts, end=end, dur=end - ts, stream=stream,
                        correlation=args.get("correlation", -1)))
    return doc, out


def is_gpu_op(e):
    return (e["stream"] >= 0 and e["correlation"] >= 0) or e["name"] in ("Event Sync", "Context Sync")


def window(events, include_last=False):
    """The GPU ops HTA analyses (Trace._filter_irrelevant_gpu_kernels)."""
    cpu = [e for e in events if not is_gpu_op(e)]
    steps = [e for e in cpu if "ProfilerStep" in e["name"]]
    last_start = max(e["ts"] for e in steps)
    last_end = max(e["end"] for e in steps)
    keep_cpu = [e for e in cpu if (e["ts"] <= last_end if include_last else e["ts"] < last_start)]
    corr = {e["correlation"] for e in keep_cpu}
    gpu = [e for e in events if is_gpu_op(e) and e["correlation"] in corr]
    defining = max(steps, key=lambda e: (e["end"] if include_last else e["ts"]))
    return gpu, (last_end if include_last else last_start), defining


def union(intervals):
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def temporal(gpu):
    m = union([(e["ts"], e["end"]) for e in gpu])
    kernel_time = m[-1][1] - m[0][0]
    idle = kernel_time - sum(e - s for s, e in m)
    comp = union([(e["ts"], e["end"]) for e in gpu if kernel_type(e["name"]) == "COMPUTATION"])
    compute = sum(e - s for s, e in comp)
    return dict(idle_time_us=idle, compute_time_us=compute, non_compute_time_us=kernel_time - compute - idle,
                kernel_time_us=kernel_time)


def type_overlap(gpu, types=("COMPUTATION", "COMMUNICATION", "MEMORY")):
    """Time per kernel type, overlaps reported as 'A overlapping B' (HTA's sweep)."""
    pts = []
    for bit, t in enumerate(types):
        for s, e in union([(k["ts"], k["end"]) for k in gpu if kernel_type(k["name"]) == t]):
            pts.append((s, 1 << bit))
            pts.append((e, -(1 << bit)))
    pts.sort(key=lambda p: p[0])
    out, running = defaultdict(int), 0
    for i, (t, v) in enumerate(pts):
        running += v
        if running > 0 and i + 1 < len(pts):
            label = " overlapping ".join(ty for bit, ty in enumerate(types) if running & (1 << bit))
            out[label] += pts[i + 1][0] - t
    return out


def per_kernel(gpu):
    by = defaultdict(list)
    for e in gpu:
        by[e["name"]].append(e["dur"])
    rows = {}
    for name, d in by.items():
        n = len(d)
        mean = sum(d) / n
        std = math.sqrt(sum((x - mean) ** 2 for x in d) / (n - 1)) if n > 1 else 0.0
        rows[name] = dict(count=n, sum=sum(d), max=max(d), min=min(d), mean=mean, std=std)
    return rows


# ---------------------------------------------------------------- HTA
def run_hta(trace_dir, include_last):
    from hta.trace_analysis import TraceAnalysis
    a = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=include_last)
    kt_full, kk_full = a.get_gpu_kernel_breakdown(visualize=False, num_kernels=BIG, duration_ratio=0.8,
                                                  include_memory_kernels=True)
    kt_def, kk_def = a.get_gpu_kernel_breakdown(visualize=False)  # HTA's defaults
    tb = a.get_temporal_breakdown(visualize=False)
    return a, kt_full, kk_full, kt_def, kk_def, tb


def num(x):
    x = float(x)
    return int(x) if x == int(x) else x


def section(a, kt_full, kk_full, kt_def, kk_def, tb, include_last, raw):
    sym = a.t.symbol_table.get_sym_table()
    out = {"window": {}, "temporal_breakdown": [], "kernel_type_breakdown": [], "kernels": [],
           "kernels_default_args": [], "kernel_type_breakdown_default_args": []}
    for rank in sorted(a.t.traces):
        df = a.t.traces[rank]
        g = df[df["stream"].ne(-1)]
        names = g["name"].map(lambda i: sym[i])
        counts = names.value_counts().to_dict()
        iters = g["iteration"].value_counts().to_dict() if "iteration" in g else {}
        _, events = raw[rank]
        gpu, bound, defining = window(events, include_last)
        all_gpu = [e for e in events if is_gpu_op(e)]
        out["window"][str(rank)] = {
            "rule_bound_ts_us": bound + 0,
            "rule_bound_is": ("end" if include_last else "start") + " of the ProfilerStep event ending/starting last",
            "defining_event": {"name": defining["name"], "cat": defining["cat"],
                               "ts_rounded_us": defining["ts"], "end_rounded_us": defining["end"]},
            "gpu_ops_in_trace": len(all_gpu),
            "gpu_ops_analysed": int(len(g)),
            "gpu_ops_analysed_by_hta_iteration": {str(int(k)): int(v) for k, v in sorted(iters.items())},
            "first_analysed_gpu_op_ts_us": int(g["ts"].min() + a.t.min_ts),
            "last_analysed_gpu_op_end_us": int((g["ts"] + g["dur"]).max() + a.t.min_ts),
        }
        # --- check the README rule against HTA
        assert len(gpu) == len(g), (rank, len(gpu), len(g))
        assert sorted((e["ts"], e["dur"]) for e in gpu) == sorted(
            zip((g["ts"] + a.t.min_ts).astype(int), g["dur"].astype(int))), rank
        mine = temporal(gpu)
        row = tb[tb["rank"] == rank].iloc[0]
        for k_mine, k_hta in (("idle_time_us", "idle_time(us)"), ("compute_time_us", "compute_time(us)"),
                              ("non_compute_time_us", "non_compute_time(us)"), ("kernel_time_us", "kernel_time(us)")):
            assert mine[k_mine] == row[k_hta], (rank, k_mine, mine[k_mine], row[k_hta])
        out["temporal_breakdown"].append({
            "rank": int(rank), **{k: num(v) for k, v in mine.items()},
            "idle_time_pctg": num(row["idle_time_pctg"]), "compute_time_pctg": num(row["compute_time_pctg"]),
            "non_compute_time_pctg": num(row["non_compute_time_pctg"])})
        pk = per_kernel(gpu)
        for _, r in kk_full[kk_full["rank"] == rank].iterrows():
            m = pk[r["name"]]
            assert (m["sum"], m["max"], m["min"]) == (r["sum (us)"], r["max (us)"], r["min (us)"]), r["name"]
            assert abs(m["mean"] - r["mean (us)"]) < 1e-9 and abs(m["std"] - r["stddev"]) < 1e-9, r["name"]
            assert m["count"] == counts[r["name"]]
            out["kernels"].append({"rank": int(rank), "kernel_type": r["kernel_type"], "name": r["name"],
                                   "count": m["count"], "sum_us": num(r["sum (us)"]), "mean_us": num(r["mean (us)"]),
                                   "min_us": num(r["min (us)"]), "max_us": num(r["max (us)"]),
                                   "stddev_us": num(r["stddev"])})
        for _, r in kk_def[kk_def["rank"] == rank].iterrows():
            out["kernels_default_args"].append({"rank": int(rank), "kernel_type": r["kernel_type"], "name": r["name"],
                                                "sum_us": num(r["sum (us)"]), "mean_us": num(r["mean (us)"]),
                                                "min_us": num(r["min (us)"]), "max_us": num(r["max (us)"]),
                                                "stddev_us": num(r["stddev"])})
    # kernel types: summed over ranks, overlaps split out
    mine = defaultdict(int)
    for rank in sorted(a.t.traces):
        gpu, _, _ = window(raw[rank][1], include_last)
        for k, v in type_overlap(gpu).items():
            mine[k] += v
    for _, r in kt_full.iterrows():
        assert mine[r["kernel_type"]] == r["sum"], (r["kernel_type"], mine[r["kernel_type"]], r["sum"])
        out["kernel_type_breakdown"].append({"kernel_type": r["kernel_type"], "sum_us": num(r["sum"]),
                                             "percentage": num(r["percentage"])})
    for _, r in kt_def.iterrows():
        out["kernel_type_breakdown_default_args"].append({"kernel_type": r["kernel_type"], "sum_us": num(r["sum"]),
                                                          "percentage": num(r["percentage"])})
    return out


def main():
    import hta
    import pandas
    tmp = tempfile.mkdtemp()
    try:
        for f in FILES.values():
            shutil.copy(os.path.join(GPU_DIR, f), tmp)
        raw = {r: rounded_events(os.path.join(tmp, f)) for r, f in FILES.items()}
        ref = {
            "produced_by": "producers/hta_reference.py",
            "hta_version": getattr(hta, "__version__", None) or __import__("importlib.metadata").metadata.version(
                "HolisticTraceAnalysis"),
            "pandas_version": pandas.__version__,
            "files": {str(r): f for r, f in FILES.items()},
            "units": ("microseconds. HTA rounds every event to whole microseconds before anything else: "
                      "ts -> ceil(ts), end -> floor(ts + dur), dur -> end - ts (ts as written in the file, "
                      "i.e. relative to baseTimeNanoseconds). *_ts_us values below are in the file's ts units."),
            "calls": {
                "kernels / kernel_type_breakdown": "TraceAnalysis(trace_dir).get_gpu_kernel_breakdown(visualize=False, "
                                                   "num_kernels=%d, duration_ratio=0.8, include_memory_kernels=True)" % BIG,
                "kernels_default_args / kernel_type_breakdown_default_args":
                    "get_gpu_kernel_breakdown(visualize=False) with HTA's defaults num_kernels=10, duration_ratio=0.8, "
                    "include_memory_kernels=True: per rank and kernel type, when more than 10 names exist they are "
                    "sorted by sum and the tail is folded into 'others'; after folding the statistics are recomputed "
                    "over the per-name SUMS, so a kept name's min/max/mean equal its sum and its stddev is 0.",
                "temporal_breakdown": "get_temporal_breakdown(visualize=False)",
                "count": "not an HTA output: number of GPU ops of that name among the ops HTA analysed "
                         "(the rows HTA's breakdown groups)",
            },
        }
        ref["window_rule"] = (
            "Per rank, HTA analyses only the GPU ops (events with args.stream >= 0 and args.correlation >= 0) whose "
            "correlation equals that of a CPU-side event (in practice the cuda_runtime launch) with "
            "ceil(ts) < B, where B = max ceil(ts) over all non-GPU events whose name contains 'ProfilerStep' "
            "(CPU user_annotation ProfilerStep#N AND GPU gpu_user_annotation ProfilerStep#N). With "
            "include_last_profiler_step=True the test is ceil(ts) <= B' with B' = max floor(ts + dur) over the same "
            "events. No lower bound: ops before the first ProfilerStep count. No filtering at all when fewer than "
            "two distinct names containing 'ProfilerStep' exist over all ranks. See README.md.")
        a, *rest = run_hta(tmp, include_last=False)
        ref["default_window"] = section(a, *rest, include_last=False, raw=raw)
        a2, *rest2 = run_hta(tmp, include_last=True)
        ref["include_last_profiler_step"] = section(a2, *rest2, include_last=True, raw=raw)
    finally:
        shutil.rmtree(tmp)
    dst = os.path.join(GPU_DIR, "hta_reference.json")
    with open(dst, "w") as f:
        json.dump(ref, f, indent=1)
        f.write("\n")
    print("wrote", dst)


if __name__ == "__main__":
    sys.exit(main())
