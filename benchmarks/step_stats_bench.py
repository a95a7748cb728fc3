"""Step timeline benchmark: a generated StepStats with N nodes over 16 devices.

    python benchmarks/step_stats_bench.py [--nodes 1000000]

Prints, each against a baseline measured in the same run:
- open + model build vs a bare protobuf parse of the same file;
- model memory per node (columns, names, detail offsets, drawing indexes);
- redraw time per frame at several zoom levels (offscreen, 1600x1000);
- the memory analysis (timeline.py's tensor lifetimes) and Chrome export, for reference.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.timeline_frames import frame_times, open_view, print_redraw_times  # noqa: E402
from protos import step_stats_pb2, types_pb2  # noqa: E402

DEVICES = 16
OPS = ("Conv2D", "MatMul", "Relu", "BiasAdd", "FusedBatchNormV3", "Add", "Identity", "Cast")


def generate(n: int, path: Path) -> None:
    """Nodes like a traced training step: 4 threads per device, each running
    ops back to back, one output tensor each, inputs from earlier nodes."""
    rng = np.random.default_rng(2)
    stats = step_stats_pb2.StepStats()
    per_device = n // DEVICES
    base = 1_795_000_000_000_000
    for d in range(DEVICES):
        dev = stats.dev_stats.add(device=f"/job:worker/replica:0/task:{d // 8}/device:CPU:{d % 8}")
        clock = np.full(4, base, np.int64)
        durs = rng.integers(1, 400, per_device)
        gaps = rng.integers(0, 30, per_device)
        threads = rng.integers(0, 4, per_device)
        for k in range(per_device):
            t = threads[k]
            start = int(clock[t] + gaps[k])
            dur = int(durs[k])
            clock[t] = start + dur
            op = OPS[k % len(OPS)]
            name = f"model/block_{k // 512}/layer_{k % 512}/{op}"
            prev = f"model/block_{(k - 1) // 512}/layer_{(k - 1) % 512}/{OPS[(k - 1) % len(OPS)]}"
            node = dev.node_stats.add(
                node_name=name, all_start_micros=start, op_start_rel_micros=1, op_end_rel_micros=dur - 1,
                all_end_rel_micros=dur, timeline_label=f"{name} = {op}({prev}, weights_{k % 97})",
                scheduled_micros=start - 2, thread_id=int(t), all_start_nanos=start * 1000 + 123,
                all_end_rel_nanos=dur * 1000 + 45)
            desc = node.output.add(slot=0).tensor_description
            desc.dtype = types_pb2.DT_FLOAT
            desc.shape.dim.add(size=32)
            desc.shape.dim.add(size=int(64 + k % 64))
            desc.allocation_description.requested_bytes = 4 * 32 * (64 + k % 64)
            desc.allocation_description.allocator_name = "cpu"
    path.write_bytes(stats.SerializeToString())


def best_of(fn, runs=3):
    times = []
    result = None
    for _ in range(runs):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
        del result
    return min(times), times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "profscope_step_stats_bench"))
    args = parser.parse_args()
    folder = Path(args.keep)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"step_stats_{args.nodes}.pb"
    if not path.exists():
        t = time.perf_counter()
        generate(args.nodes, path)
        print(f"generated {path} in {time.perf_counter() - t:.0f} s")
    size = path.stat().st_size
    print(f"file: {args.nodes:,} nodes over {DEVICES} devices, {size / 2**20:.0f} MiB ({size / args.nodes:.0f} bytes/node)")

    from models.formats.step_stats import load_step_timeline, locate

    def bare():
        return step_stats_pb2.StepStats.FromString(path.read_bytes())

    def ours():
        return load_step_timeline(locate(path))

    bare_s, bare_all = best_of(bare)
    ours_s, ours_all = best_of(ours)
    print(f"open + model build: {ours_s * 1000:.0f} ms vs bare protobuf read + parse {bare_s * 1000:.0f} ms "
          f"= {ours_s / bare_s:.2f}x (target <= 2x); runs ours {[round(x, 2) for x in ours_all]} "
          f"bare {[round(x, 2) for x in bare_all]}")

    tl = ours()
    lanes_bytes = 0
    for lane in range(tl.num_lanes):
        index = tl.lane_index(lane)
        lanes_bytes += index.order.nbytes + index.order_start.nbytes
    details = tl.records.offsets.nbytes + tl.records.lengths.nbytes
    total = tl.nbytes + details + lanes_bytes
    print(f"model memory: {total / len(tl):.0f} bytes/node (columns+names {tl.nbytes / len(tl):.0f}, detail offsets "
          f"{details / len(tl):.0f}, drawing indexes {lanes_bytes / len(tl):.0f}; target < 200) over {tl.num_lanes} lanes")

    view = open_view(tl)
    canvas = view.canvas
    print_redraw_times(view)
    a, b = tl.span_ps
    canvas.set_highlight(tl.find("MatMul"))
    canvas.fit(a, b)
    frames = frame_times(canvas, 10)
    print(f"redraw with {len(canvas.highlight):,} highlighted: median {statistics.median(frames) * 1000:.1f} ms")
    t = time.perf_counter()
    hits = tl.find("layer_7/")
    print(f"search 'layer_7/': {len(hits):,} matches in {(time.perf_counter() - t) * 1000:.0f} ms")
    view.close()
    view.deleteLater()
    del view

    if args.nodes <= 1_000_000:
        from models.formats.step_stats import step_memory_profile

        t = time.perf_counter()
        memory = step_memory_profile(locate(path))
        print(f"memory analysis (tensor lifetimes, timeline.py rules): {time.perf_counter() - t:.1f} s, "
              f"peak {max(p.summary.peak_heap for p in memory.allocators.values()) / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
