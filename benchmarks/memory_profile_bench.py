"""Memory profile benchmark: a generated MemoryProfile with N snapshots.

    python benchmarks/memory_profile_bench.py [--snapshots 1000000] [--json-mb 120] [--skip-json]
    python benchmarks/memory_profile_bench.py --json-only [--json-mb 120]

Prints, each against a baseline measured in the same run:
- open + analysis of the binary file vs a bare protobuf parse of it;
- active allocations at arbitrary moments;
- plot redraw per frame while zooming (offscreen);
- peak memory (max RSS) of each open, in a fresh process;
- JSON files of about --json-mb MB (XProf's form of a generated profile, plain and gzipped, and
  a short run of snapshots repeated, gzipped ~100x, like the issue's highly compressed file): the reader
  alone (the C pass, then open + analysis, in this process), and whole fresh processes that open
  the file (load_memory_profile) or run `profscope export --tool memory_profile` (wall time, CPU
  time and peak RSS), against a bare json.loads (target: open < 3 s and < 600 MB for 120 MB).
  CPU times are the steadier numbers on a busy machine.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from as_a_user import like_an_installed_copy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from profscope.protos import memory_profile_pb2  # noqa: E402


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
    like_an_installed_copy()
    parser = argparse.ArgumentParser()
    parser.add_argument("--snapshots", type=int, default=1_000_000)
    parser.add_argument("--skip-json", action="store_true")
    parser.add_argument("--json-only", action="store_true", help="only the JSON measurements")
    parser.add_argument("--json-mb", type=float, default=120, help="size of the generated JSON files")
    parser.add_argument("--json-dir", type=Path, help="keep the JSON files here (and reuse them when present)")
    parser.add_argument("--keep", type=Path, help="also write the binary file here")
    args = parser.parse_args()
    from profscope.models.formats.memory_profile_file import load_memory_profile, parse_memory_profile

    work = Path(tempfile.mkdtemp(prefix="profscope-bench-"))
    if args.json_only:
        json_bench(work, args.json_mb, args.json_dir)
        shutil.rmtree(work)
        return
    pb_path = work / "bench.memory_profile.pb"
    t = time.perf_counter()
    generate(args.snapshots, pb_path)
    print(
        f"generated {args.snapshots:,} snapshots: {pb_path.stat().st_size / 1e6:.0f} MB binary "
        f"({time.perf_counter() - t:.1f} s)"
    )

    data = pb_path.read_bytes()
    bare, _ = timed(lambda: memory_profile_pb2.MemoryProfile.FromString(pb_path.read_bytes()))
    ours, profile = timed(lambda: load_memory_profile(pb_path))
    print(
        f"binary: bare protobuf read + parse {bare * 1000:.0f} ms; Profscope open + analysis {ours * 1000:.0f} ms "
        f"= {ours / bare:.2f}x (target <= 1.5x)"
    )

    a = profile.allocators["GPU_0_bfc"]
    rng = np.random.default_rng(2)
    moments = rng.integers(0, len(a.timeline), 20)
    a.allocations_at(int(moments[0]))  # lifetimes are computed on first use
    times = []
    for m in moments:
        t = time.perf_counter()
        rows = a.allocations_at(int(m))
        times.append(time.perf_counter() - t)
    print(
        f"active allocations at a moment: median {statistics.median(times) * 1000:.1f} ms, "
        f"max {max(times) * 1000:.1f} ms over 20 moments ({len(rows):,} rows at the last) (target < 50 ms)"
    )
    fresh = parse_memory_profile(data).allocators["GPU_0_bfc"]
    t = time.perf_counter()
    fresh.allocations_at(0)
    print(f"  first moment (pairs every allocation with its free, once): {(time.perf_counter() - t) * 1000:.0f} ms")

    redraw(a)
    size = pb_path.stat().st_size / 2**20
    bare_rss = peak_rss_mib(
        f"from protos import memory_profile_pb2 as m; m.MemoryProfile.FromString(open({str(pb_path)!r},'rb').read())"
    )
    ours_rss = peak_rss_mib(
        f"from profscope.models.formats.memory_profile_file import load_memory_profile as f; f({str(pb_path)!r})"
    )
    print(
        f"peak memory (max RSS, fresh process): bare parse {bare_rss:.0f} MiB, Profscope open {ours_rss:.0f} MiB "
        f"(file {size:.0f} MiB)"
    )
    if not args.skip_json:
        json_bench(work, args.json_mb, args.json_dir)
    shutil.rmtree(work)


def realistic_json(path: Path, megabytes: float) -> None:
    """XProf's JSON (camelCase, int64 as strings) of a generated profile of about `megabytes`."""
    from profscope.models.data.memory_profile import to_xprof_json
    from profscope.models.formats.memory_profile_file import load_memory_profile

    pb = path.with_suffix(".pb")
    generate(2000, pb)
    per_snapshot = len(json.dumps(to_xprof_json(load_memory_profile(pb)))) / 2000
    generate(int(megabytes * 1e6 / per_snapshot), pb)
    path.write_text(json.dumps(to_xprof_json(load_memory_profile(pb))))
    pb.unlink()


def repeated_json(path: Path, megabytes: float) -> None:
    """A few snapshots repeated (each copy a few KB, inside gzip's 32 KB window): gzip packs it ~100x."""
    ops = ["model/dense/MatMul", "model/dense/Relu", "gradient_tape/model/dense/MatMul_1"]
    unit = []
    for i in range(6):
        alloc = i % 2 == 0
        unit.append(
            {
                "timeOffsetPs": str(1000 + i),
                "aggregationStats": {
                    "stackReservedBytes": "0",
                    "heapAllocatedBytes": str(4096 * (1 + alloc)),
                    "freeMemoryBytes": "68719476736",
                    "fragmentation": 0.25,
                    "peakBytesInUse": "8192",
                },
                "activityMetadata": {
                    "memoryActivity": "ALLOCATION" if alloc else "DEALLOCATION",
                    "requestedBytes": "4000",
                    "allocationBytes": "4096",
                    "address": str(140000000000 + 4096 * (i // 2)),
                    "tfOpName": ops[i % 3],
                    "stepId": "1",
                    "regionType": "output",
                    "dataType": "float",
                    "tensorShape": "[32,32]",
                },
            }
        )
    block = ",".join(json.dumps(s, separators=(",", ":")) for s in unit)
    copies = max(int(megabytes * 1e6 / (len(block) + 1)), 1)
    with open(path, "w") as f:
        f.write('{"memoryProfilePerAllocator":{"GPU_0_bfc":{"memoryProfileSnapshots":[')
        f.write(",".join([block] * copies))
        f.write(']}},"numHosts":1,"memoryIds":["GPU_0_bfc"],"version":0}')


def process(code: str) -> tuple[float, float, float]:
    """Wall time (s), CPU time (s, user + system) and peak RSS (MiB) of a fresh Python running `code`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    rss = peak_rss_mib(code)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, rss


def json_bench(work: Path, megabytes: float, folder: Path | None = None) -> None:
    from profscope.models.formats import _memory_json
    from profscope.models.formats.memory_profile_file import load_memory_profile

    folder = folder or work
    folder.mkdir(parents=True, exist_ok=True)
    real, repeated = folder / "real.memory_profile.json", folder / "repeated.memory_profile.json"
    cases = [real, real.with_name(real.name + ".gz"), repeated.with_name(repeated.name + ".gz")]
    if not all(p.exists() for p in cases):
        t = time.perf_counter()
        realistic_json(real, megabytes)
        repeated_json(repeated, megabytes)
        for p in (real, repeated):
            with open(p, "rb") as f, gzip.open(str(p) + ".gz", "wb", compresslevel=6) as g:
                shutil.copyfileobj(f, g)
        repeated.unlink()  # the case is the gzip
        print(f"generated JSON files in {time.perf_counter() - t:.1f} s")
    for path in cases:
        gz = path.suffix == ".gz"
        data = gzip.decompress(path.read_bytes()) if gz else path.read_bytes()
        name = "repeated" if "repeated" in path.name else "XProf-like"
        print(
            f"\nJSON {name} {path.name}: {len(data) / 1e6:.0f} MB"
            + (f" (gzip {path.stat().st_size / 1e3:,.0f} KB)" if gz else "")
        )
        _, cpu = best_wall_cpu(lambda data=data: _memory_json.read(data, 64))
        print(f"  reader alone: the C pass {cpu * 1000:.0f} ms CPU ({len(data) / 1e6 / cpu:.0f} MB/s)", end="")
        data = None  # not held during the measurements below
        wall, cpu = best_wall_cpu(lambda path=path: load_memory_profile(path))
        print(
            f"; open + analysis (read, inflate, parse, summary, peak table) {wall * 1000:.0f} ms "
            f"({cpu * 1000:.0f} ms CPU)"
        )
        src = repr(str(path))
        bare = process(
            f"import json, gzip; d = open({src}, 'rb').read(); json.loads(gzip.decompress(d) if {gz} else d)"
        )
        opened = process(
            f"from profscope.models.formats.memory_profile_file import load_memory_profile; load_memory_profile({src})"
        )
        export = process(
            f"from profscope.viewer.cli import main; assert main(['export', {src}, '--tool', 'memory_profile', "
            f"'-o', {str(work / 'out.json')!r}]) == 0"
        )
        ok = lambda w, c, r: "ok" if w < 3 and r < 600 else "MISSED"
        show = lambda w, c, r: f"{w:.2f} s ({c:.2f} s CPU) / {r:.0f} MiB"
        print(
            f"  whole process, fresh (wall (CPU) / peak RSS): bare json.loads {show(*bare)}; "
            f"open (load_memory_profile) {show(*opened)} [{ok(*opened)}: < 3 s, < 600 MB]; "
            f"`profscope export --tool memory_profile` {show(*export)} "
            f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )


def best_wall_cpu(fn, repeat=3) -> tuple[float, float]:
    """Best wall and best CPU time (s) of `repeat` runs (CPU time is steadier on a busy machine)."""
    walls, cpus = [], []
    for _ in range(repeat):
        w, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus)


def redraw(allocator) -> None:
    """Renders the plot offscreen at zoom levels from the whole run to a few snapshots."""
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from profscope.viewer.app import application
    from profscope.widgets.memory.plot import MemoryPlot

    app = application()
    plot = MemoryPlot()
    plot.resize(1600, 600)
    plot.set_profile(allocator)
    plot.show()
    app.processEvents()
    t0, t1 = float(allocator.timeline.time_ps[0]), float(allocator.timeline.time_ps[-1])
    frames = []
    for k in range(40):  # zoom in by 1.4x per frame, centred
        span = (t1 - t0) / (1.4**k)
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
    print(
        "  painting the 1600x600 plot without any change (software raster): "
        f"median {statistics.median(still) * 1000:.1f} ms"
    )
    print(
        f"plot redraw while zooming ({len(allocator.timeline):,} points): "
        f"median {statistics.median(frames) * 1000:.1f} ms, "
        f"max {max(frames) * 1000:.1f} ms per frame (target < 16 ms)"
    )
    plot.close()
    plot.deleteLater()


if __name__ == "__main__":
    main()
