"""XSpace benchmark: Profscope's open + memory profile + timeline against
XProf's own converter (memory_profile and trace_viewer) on the same files.

    python benchmarks/xplane_bench.py [--events 2000000] [--xprof-python PATH]

Two files of about `--events` events each, written with the real schema:
- generated: 4 threads of nested op events plus memory events (a quarter of
  all events), as TensorFlow's BFC allocator records them;
- repeated: the real Keras profile of tests/data its lines repeated in time
  until it holds as many events.
Each run happens in a fresh process; peak RSS is VmHWM. XProf runs only when
`--xprof-python` names a Python with the xprof package (a throwaway venv).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from as_a_user import like_an_installed_copy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.timeline_frames import open_view, print_redraw_times  # noqa: E402
from profscope.protos import xplane_pb2  # noqa: E402

MEMORY_STATS = ("allocator_name", "bytes_reserved", "bytes_allocated", "bytes_available", "fragmentation",
                "peak_bytes_in_use", "requested_bytes", "allocation_bytes", "addr", "tf_op", "region_type",
                "data_type", "shape")
OPS = ("Conv2D", "MatMul", "Relu", "BiasAdd", "FusedBatchNormV3", "Add", "Identity", "Cast")


def generate(n: int, path: Path, steps: int = 0) -> None:
    """Steps on a python thread (root events) whose work runs on 4 executor
    threads: per op an event with 2 nested events, every other op allocating
    an output and freeing an older one. `steps` (default: one per 2,000 ops)
    sets how many steps share the events."""
    rng = np.random.default_rng(5)
    space = xplane_pb2.XSpace(hostnames=["bench"])
    plane = space.planes.add(id=1, name="/host:CPU")
    names = ["train", "ExecutorState::Process", "MemoryAllocation", "MemoryDeallocation"]
    names += [f"layer_{i}/{op}:{op}" for i in range(64) for op in OPS] + ["Eigen::Compute", "ParallelFor"]
    for i, name in enumerate(names, 1):
        md = plane.event_metadata[i]
        md.id, md.name = i, name
        if ":" in name:
            md.display_name = name.rsplit(":", 1)[1]
    stat_names = list(MEMORY_STATS) + ["_r", "step_num", "_pt", "_p", "_ct", "_c", "bfc_cpu_allocator", "output"]
    sid = {name: i for i, name in enumerate(stat_names, 1)}
    for name, i in sid.items():
        plane.stat_metadata[i].id, plane.stat_metadata[i].name = i, name
    python = plane.lines.add(id=1, name="python", timestamp_ns=1_000)
    workers = [plane.lines.add(id=10 + k, name=f"tf_Compute/{k}", timestamp_ns=1_000) for k in range(4)]
    per_op = 3 + 1  # op, 2 nested, and on average one memory event
    steps = steps or max(n // (per_op * 2000), 1)
    ops_per_step = n // (steps * per_op)
    t = 0
    live: list[tuple[int, int]] = []
    heap = 0
    op_md = np.arange(5, 5 + 64 * len(OPS))
    for s in range(steps):
        step_start = t
        step = python.events.add(metadata_id=1, offset_ps=t)
        step.stats.add(metadata_id=sid["_r"], int64_value=1)
        step.stats.add(metadata_id=sid["step_num"], int64_value=s)
        step.stats.add(metadata_id=sid["_pt"], int64_value=1)
        step.stats.add(metadata_id=sid["_p"], int64_value=s)
        clocks = [t + 1_000_000] * 4
        for k in range(ops_per_step):
            w = k % 4
            line = workers[w]
            dur = int(rng.integers(2_000_000, 40_000_000))
            start = clocks[w]
            if k < 4:
                proc = line.events.add(metadata_id=2, offset_ps=start, duration_ps=ops_per_step * 50_000_000)
                proc.stats.add(metadata_id=sid["_ct"], int64_value=1)
                proc.stats.add(metadata_id=sid["_c"], int64_value=s)
            op = line.events.add(metadata_id=int(op_md[k % len(op_md)]), offset_ps=start, duration_ps=dur)
            line.events.add(metadata_id=len(names) - 1, offset_ps=start + 1000, duration_ps=dur // 3)
            line.events.add(metadata_id=len(names), offset_ps=start + dur // 2, duration_ps=dur // 3)
            for _ in range(2 if k % 2 == 0 else 0):
                alloc = not live or (rng.random() < 0.5 and len(live) < 5000)
                if alloc:
                    size = int(rng.integers(1, 64)) * 256
                    addr = 140_000_000_000_000 + int(rng.integers(0, 1 << 30)) * 256
                    live.append((addr, size))
                    heap += size
                else:
                    addr, size = live.pop(int(rng.integers(0, len(live))))
                    heap -= size
                mem = line.events.add(metadata_id=3 if alloc else 4, offset_ps=start + dur // 4)
                for name, value in (("bytes_reserved", 0), ("bytes_allocated", heap),
                                    ("bytes_available", (1 << 34) - heap), ("peak_bytes_in_use", heap),
                                    ("requested_bytes", size), ("allocation_bytes", size), ("addr", addr),
                                    ("data_type", 1)):
                    mem.stats.add(metadata_id=sid[name], int64_value=value)
                mem.stats.add(metadata_id=sid["fragmentation"], double_value=0.1)
                mem.stats.add(metadata_id=sid["allocator_name"], ref_value=sid["bfc_cpu_allocator"])
                if alloc:
                    mem.stats.add(metadata_id=sid["tf_op"], str_value=names[int(op.metadata_id) - 1].split(":")[0])
                    mem.stats.add(metadata_id=sid["region_type"], ref_value=sid["output"])
                    mem.stats.add(metadata_id=sid["shape"], str_value=f"[{size // 4}]")
            clocks[w] = start + dur + 100_000
            op.ClearField("stats")
        t = max(clocks) + 1_000_000
        step.duration_ps = t - step_start
    path.write_bytes(space.SerializeToString())


def repeat_real(n: int, source: Path, path: Path) -> None:
    """The real profile's lines, their events repeated one span later each
    time, with fresh context ids per copy (as later steps would have)."""
    space = xplane_pb2.XSpace()
    space.ParseFromString(source.read_bytes())
    host = next(p for p in space.planes if p.name == "/host:CPU")
    count = sum(len(line.events) for line in host.lines)
    span = max(e.offset_ps + e.duration_ps for line in host.lines for e in line.events) + 1_000_000
    copies = max(n // count, 1)
    context_ids = {k for k, m in host.stat_metadata.items() if m.name in ("_p", "_c")}
    for line in host.lines:
        original = list(line.events)
        for c in range(1, copies):
            for e in original:
                ev = line.events.add()
                ev.CopyFrom(e)
                ev.offset_ps = e.offset_ps + c * span
                for stat in ev.stats:
                    if stat.metadata_id in context_ids and stat.WhichOneof("value") == "uint64_value":
                        stat.uint64_value = (stat.uint64_value + c * 1_000_003) % 2**64
                    elif stat.metadata_id in context_ids:
                        stat.int64_value = stat.int64_value + c * 1_000_003
    path.write_bytes(space.SerializeToString())


PROFSCOPE = """
import sys, time
sys.path.insert(0, {root!r})
from pathlib import Path
from profscope.models.formats.xspace.memory import xplane_memory_profile
from profscope.models.formats.xspace.timeline import load_xplane_timeline
path = Path({path!r})
t = time.perf_counter(); profile = xplane_memory_profile(path); m = time.perf_counter() - t
snaps = sum(len(a.timeline) for a in profile.allocators.values()); del profile
t = time.perf_counter(); tl = load_xplane_timeline([path], ["bench"]); l = time.perf_counter() - t
print(m, l, snaps, len(tl))
"""

XPROF = """
import sys, time, shutil, tempfile, os
from xprof.convert import raw_to_tool_data as r
folder = tempfile.mkdtemp()
path = os.path.join(folder, "bench.xplane.pb")
shutil.copy({path!r}, path)
t = time.perf_counter()
mp, _ = r.xspace_to_tool_data([path], "memory_profile", {{"use_saved_result": False}})
m = time.perf_counter() - t
t = time.perf_counter()
tv, _ = r.xspace_to_tool_data([path], "trace_viewer", {{"use_saved_result": False}})
l = time.perf_counter() - t
shutil.rmtree(folder)
print(m, l, len(mp or ""), len(tv or ""))
"""

PEAK = "\nprint([l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1])"


def run(python: str, code: str) -> tuple[list[float], float]:
    out = subprocess.run([python, "-c", code + PEAK], cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(out.stderr[-2000:])
    lines = out.stdout.split("\n")
    values = [float(v) for v in lines[-3].split()]
    return values, int(lines[-2]) / 1024


def redraw(path: Path) -> None:
    from profscope.models.formats.xspace.timeline import load_xplane_timeline

    view = open_view(load_xplane_timeline([path], ["bench"]))
    print_redraw_times(view)
    view.close()
    view.deleteLater()


def main() -> None:
    like_an_installed_copy()
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--xprof-python", help="a Python that can import xprof (for the comparison)")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/profscope-xplane-bench"))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    args.folder.mkdir(parents=True, exist_ok=True)
    files = {
        "generated": args.folder / f"generated_{args.events}.xplane.pb",
        "real x repeats": args.folder / f"repeated_{args.events}.xplane.pb",
    }
    for label, path in files.items():
        if not path.exists():
            t = time.perf_counter()
            if label == "generated":
                generate(args.events, path)
            else:
                repeat_real(args.events, ROOT / "tests/data/xprof/keras.xplane.pb", path)
            print(f"wrote {path} in {time.perf_counter() - t:.0f} s")
    for label, path in files.items():
        size = path.stat().st_size / 2**20
        print(f"\n{label}: {path.name}, {size:.1f} MiB")
        best = None
        for _ in range(args.repeat):
            (m, tl, snaps, events), peak = run(sys.executable, PROFSCOPE.format(root=str(ROOT), path=str(path)))
            if best is None or m + tl < best[0] + best[1]:
                best = (m, tl, peak)
        m, tl, peak = best
        print(
            f"  Profscope: memory profile {m:.2f} s ({int(snaps):,} snapshots), timeline {tl:.2f} s "
            f"({int(events):,} events), total {m + tl:.2f} s; peak RSS {peak:.0f} MiB = {peak / size:.2f}x the file"
        )
        if args.xprof_python:
            try:
                (xm, xt, _, _), xpeak = run(args.xprof_python, XPROF.format(path=str(path)))
            except RuntimeError as e:
                print(f"  XProf failed: {e}")
                continue
            print(
                f"  XProf:     memory_profile {xm:.2f} s, trace_viewer {xt:.2f} s, total {xm + xt:.2f} s; "
                f"peak RSS {xpeak:.0f} MiB = {xpeak / size:.2f}x the file"
            )
            print(f"  Profscope is {(xm + xt) / (m + tl):.1f}x faster")
        redraw(path)


if __name__ == "__main__":
    main()
