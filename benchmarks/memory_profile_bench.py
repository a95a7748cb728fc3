"""Memory profile benchmark: a generated MemoryProfile with N snapshots.

    python benchmarks/memory_profile_bench.py [--snapshots 1000000]

Prints, each against a baseline measured in the same run:
- open + analysis of the binary file vs a bare protobuf parse of it;
- open + analysis of the JSON file vs a bare json.loads;
- active allocations at arbitrary moments;
- plot redraw per frame while zooming (offscreen);
- peak memory (max RSS) of each open, in a fresh process.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from protos import memory_profile_pb2  # noqa: E402


def generate(n: int, path: Path) -> None:
    """Allocations and frees over many steps, addresses reused like a BFC allocator."""
    rng = np.random.default_rng(1)
    profile = memory_profile_pb2.MemoryProfile(num_hosts=1, memory_ids=["GPU_0_bfc"])
    per = profile.memory_profile_per_allocator["GPU_0_bfc"]
    ops = [f"model/block_{i // 8}/layer_{i % 8}/{kind}" for i in range(64) for kind in ("MatMul", "Relu", "Add")]
    shapes = ["[32,1024]", "[1024,1024]", "[32,4096]", "[4096]", "[64,3,224,224]"]
    live: list[tuple[int, int, int, int]] = []  # address, bytes, op, shape
    heap, peak, next_addr = 0, 0, 1 << 32
    for i in range(n):
        snap = per.memory_profile_snapshots.add()
        snap.time_offset_ps = i * 1_000_000
        meta = snap.activity_metadata
        step = i // 20_000
        if live and (len(live) > 5000 or rng.random() < 0.5):
            addr, size, op, shape = live.pop(int(rng.integers(len(live))))
            heap -= size
            meta.memory_activity = memory_profile_pb2.DEALLOCATION
        else:
            size = int(256 * rng.integers(1, 4096))
            addr, op, shape = next_addr, int(rng.integers(len(ops))), int(rng.integers(len(shapes)))
            next_addr += size
            live.append((addr, size, op, shape))
            heap += size
            meta.memory_activity = memory_profile_pb2.ALLOCATION
        peak = max(peak, heap)
        meta.requested_bytes = size - 7
        meta.allocation_bytes = size
        meta.address = addr
        meta.tf_op_name = ops[op]
        meta.step_id = step
        meta.region_type = "output"
        meta.data_type = "float"
        meta.tensor_shape = shapes[shape]
        stats = snap.aggregation_stats
        stats.heap_allocated_bytes = heap
        stats.free_memory_bytes = (16 << 30) - heap
        stats.fragmentation = 0.1
        stats.peak_bytes_in_use = peak
    path.write_bytes(profile.SerializeToString())


def timed(fn, repeat=3):
    best = float("inf")
    result = None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t)
    return best, result


def peak_rss_mib(code: str) -> float:
    """Peak RSS (VmHWM) of a fresh Python running `code`, in MiB. (ru_maxrss
    would carry over the parent's peak across exec on Linux.)"""
    probe = "\nprint([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"
    out = subprocess.run([sys.executable, "-c", code + probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return int(out.stdout.split()[-1]) / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--snapshots", type=int, default=1_000_000)
    parser.add_argument("--skip-json", action="store_true")
    parser.add_argument("--keep", type=Path, help="also write the binary file here")
    args = parser.parse_args()
    from models.formats.memory_profile_file import load_memory_profile, parse_memory_profile
    from models.memory_profile import to_xprof_json

    work = Path(tempfile.mkdtemp(prefix="profscope-bench-"))
    pb_path, json_path = work / "bench.memory_profile.pb", work / "bench.memory_profile.json"
    t = time.perf_counter()
    generate(args.snapshots, pb_path)
    print(f"generated {args.snapshots:,} snapshots: {pb_path.stat().st_size / 1e6:.0f} MB binary ({time.perf_counter() - t:.1f} s)")

    data = pb_path.read_bytes()
    bare, _ = timed(lambda: memory_profile_pb2.MemoryProfile.FromString(pb_path.read_bytes()))
    ours, profile = timed(lambda: load_memory_profile(pb_path))
    print(f"binary: bare protobuf read + parse {bare * 1000:.0f} ms; Profscope open + analysis {ours * 1000:.0f} ms "
          f"= {ours / bare:.2f}x (target <= 1.5x)")

    a = profile.allocators["GPU_0_bfc"]
    rng = np.random.default_rng(2)
    moments = rng.integers(0, len(a.timeline), 20)
    a.allocations_at(int(moments[0]))  # lifetimes are computed on first use
    times = []
    for m in moments:
        t = time.perf_counter()
        rows = a.allocations_at(int(m))
        times.append(time.perf_counter() - t)
    print(f"active allocations at a moment: median {statistics.median(times) * 1000:.1f} ms, "
          f"max {max(times) * 1000:.1f} ms over 20 moments ({len(rows):,} rows at the last) (target < 50 ms)")
    fresh = parse_memory_profile(data).allocators["GPU_0_bfc"]
    t = time.perf_counter()
    fresh.allocations_at(0)
    print(f"  first moment (pairs every allocation with its free, once): {(time.perf_counter() - t) * 1000:.0f} ms")

    if not args.skip_json:
        json_path.write_text(json.dumps(to_xprof_json(profile)))
        text = json_path.read_bytes()
        bare_json, _ = timed(lambda: json.loads(json_path.read_bytes()), repeat=1)
        ours_json, _ = timed(lambda: load_memory_profile(json_path), repeat=1)
        print(f"JSON ({len(text) / 1e6:.0f} MB): bare read + json.loads {bare_json * 1000:.0f} ms; Profscope open + analysis "
              f"{ours_json * 1000:.0f} ms = {ours_json / bare_json:.2f}x")

    redraw(a)
    size = pb_path.stat().st_size / 2**20
    bare_rss = peak_rss_mib(f"from protos import memory_profile_pb2 as m; m.MemoryProfile.FromString(open({str(pb_path)!r},'rb').read())")
    ours_rss = peak_rss_mib(f"from models.formats.memory_profile_file import load_memory_profile as f; f({str(pb_path)!r})")
    print(f"peak memory (max RSS, fresh process): bare parse {bare_rss:.0f} MiB, Profscope open {ours_rss:.0f} MiB "
          f"(file {size:.0f} MiB)")
    for p in work.iterdir():
        p.unlink()
    work.rmdir()


def redraw(allocator) -> None:
    """Renders the plot offscreen at zoom levels from the whole run to a few snapshots."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from viewer.app import application
    from widgets.memory_plot import MemoryPlot

    app = application()
    plot = MemoryPlot()
    plot.resize(1600, 600)
    plot.set_profile(allocator)
    plot.show()
    app.processEvents()
    t0, t1 = float(allocator.timeline.time_ps[0]), float(allocator.timeline.time_ps[-1])
    frames = []
    for k in range(40):  # zoom in by 1.4x per frame, centred
        span = (t1 - t0) / (1.4 ** k)
        mid = (t0 + t1) / 2
        start = time.perf_counter()
        plot.plot.setXRange(mid - span / 2, mid + span / 2, padding=0)
        app.processEvents()
        plot.grab()  # paints the whole widget, as a screen update would
        frames.append(time.perf_counter() - start)
    still = []
    for _ in range(10):
        start = time.perf_counter()
        plot.grab()
        still.append(time.perf_counter() - start)
    print(f"  painting the 1600x600 plot without any change (software raster): median {statistics.median(still) * 1000:.1f} ms")
    print(f"plot redraw while zooming ({len(allocator.timeline):,} points): median {statistics.median(frames) * 1000:.1f} ms, "
          f"max {max(frames) * 1000:.1f} ms per frame (target < 16 ms)")
    plot.close()
    plot.deleteLater()


if __name__ == "__main__":
    main()
