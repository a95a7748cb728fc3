"""Step timeline benchmark: a generated StepStats with N nodes over 16 devices.

    python benchmarks/step_stats_bench.py [--nodes 1000000] [--only process|window] [--distinct]

Prints, each against a baseline measured in the same run:
- whole `profscope` processes (medians of --rounds, wall time and peak RSS from
  /usr/bin/time): `export --tool trace_viewer`, `export --tool memory_profile`
  with and without xprof_form=1, and the memory view's load (the analysis
  timed inside its process), against a bare protobuf parse of the file in a
  process of its own, run in the same rounds;
- open + model build vs a bare protobuf parse of the same file;
- model memory per node (columns, names, detail offsets, drawing indexes);
- redraw time per frame at several zoom levels (offscreen, 1600x1000).

Node names repeat on every device (62,500 tensor names for 1M nodes); with
--distinct each device has its own, as in a real graph: a million tensors.
"""

from __future__ import annotations

import argparse
import hashlib
import os
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

from benchmarks.timeline_frames import frame_times, open_view, print_redraw_times  # noqa: E402
from profscope.protos import step_stats_pb2, types_pb2  # noqa: E402

DEVICES = 16
OPS = ("Conv2D", "MatMul", "Relu", "BiasAdd", "FusedBatchNormV3", "Add", "Identity", "Cast")


def generate(n: int, path: Path, distinct: bool = False) -> None:
    """Nodes like a traced training step: 4 threads per device, each running
    ops back to back, one output tensor each, inputs from earlier nodes
    (names prefixed by the device when distinct)."""
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
            root = f"device_{d}" if distinct else "model"
            name = f"{root}/block_{k // 512}/layer_{k % 512}/{op}"
            prev = f"{root}/block_{(k - 1) // 512}/layer_{(k - 1) % 512}/{OPS[(k - 1) % len(OPS)]}"
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


BARE_PARSE = (
    "import sys; from protos import step_stats_pb2; step_stats_pb2.StepStats.FromString(open(sys.argv[1], 'rb').read())"
)
MEMORY_VIEW = """import sys, time
from profscope.models.repository.locations import open_repository
t = time.perf_counter()
repo = open_repository(sys.argv[1])
repo.memory_profile(repo.enum_sessions()[0].name, "")
print(f"{time.perf_counter() - t:.3f}")"""


def process_rows(path: Path, out: Path) -> dict[str, list[str]]:
    """Whole processes: (what, argv); the bare parse is the anchor."""
    cli = [sys.executable, "-m", "profscope.viewer.cli", "export", str(path)]
    return {
        "bare parse (anchor)": [sys.executable, "-c", BARE_PARSE, str(path)],
        "export trace_viewer": cli + ["--tool", "trace_viewer", "-o", str(out)],
        "export memory_profile xprof_form=1": cli
        + ["--tool", "memory_profile", "--param", "xprof_form=1", "-o", str(out)],
        "export memory_profile (every snapshot)": cli + ["--tool", "memory_profile", "-o", str(out)],
        "memory view load (in-process time)": [sys.executable, "-c", MEMORY_VIEW, str(path)],
    }


def run_process(argv: list[str], out: Path) -> tuple[float, float, float | None, str]:
    """(wall s, peak RSS MiB, in-process time if printed, sha256 prefix of the output file) of one process."""
    stats = out.with_suffix(".time")
    out.unlink(missing_ok=True)
    t = time.perf_counter()
    done = subprocess.run(
        ["/usr/bin/time", "-o", str(stats), "-f", "%M", *argv], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - t
    if done.returncode:
        raise RuntimeError(f"{argv} failed:\n{done.stderr[-2000:]}")
    rss = int(stats.read_text().split()[-1]) / 1024
    inner = float(done.stdout.split()[-1]) if done.stdout.strip() else None
    digest = ""
    if out.exists():
        h = hashlib.sha256()
        with open(out, "rb") as f:
            while chunk := f.read(1 << 24):
                h.update(chunk)
        digest = h.hexdigest()[:16]
        out.unlink()
    return wall, rss, inner, digest


def bench_processes(path: Path, rounds: int) -> None:
    size = path.stat().st_size / 2**20
    with tempfile.TemporaryDirectory(prefix="profscope_step_bench_") as folder:
        out = Path(folder) / "out.json"
        rows = process_rows(path, out)
        results: dict[str, list] = {name: [] for name in rows}
        for r in range(rounds):  # rows interleaved: load from others' benchmarks hits all alike
            for name, argv in rows.items():
                results[name].append(run_process(argv, out))
                print(
                    f"  round {r + 1}: {name}: {results[name][-1][0]:.2f} s, {results[name][-1][1]:.0f} MiB", flush=True
                )
    anchor = statistics.median(w for w, *_ in results["bare parse (anchor)"])
    print(f"whole processes, medians of {rounds} (file {size:.0f} MiB):")
    for name, runs in results.items():
        wall = statistics.median(w for w, *_ in runs)
        rss = statistics.median(m for _, m, *_ in runs)
        inner = [i for _, _, i, _ in runs if i is not None]
        digests = {d for *_, d in runs if d}
        extra = f", in-process {statistics.median(inner):.2f} s" if inner else ""
        extra += f", output sha256 {'/'.join(sorted(digests))}" if digests else ""
        print(
            f"  {name}: {wall:.2f} s = {wall / anchor:.2f}x bare parse, peak RSS {rss:.0f} MiB = "
            f"{rss / size:.2f}x the file{extra}; runs {[round(w, 2) for w, *_ in runs]}"
        )


def main() -> None:
    like_an_installed_copy()
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=1_000_000)
    parser.add_argument("--keep", default=os.path.join(tempfile.gettempdir(), "profscope_step_stats_bench"))
    parser.add_argument("--only", choices=("process", "window"), help="only the whole-process rows, or only the rest")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--distinct", action="store_true", help="node names differ between devices")
    args = parser.parse_args()
    folder = Path(args.keep)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"step_stats_{args.nodes}{'_distinct' if args.distinct else ''}.pb"
    if not path.exists():
        t = time.perf_counter()
        generate(args.nodes, path, args.distinct)
        print(f"generated {path} in {time.perf_counter() - t:.0f} s")
    size = path.stat().st_size
    print(
        f"file: {args.nodes:,} nodes over {DEVICES} devices, {size / 2**20:.0f} MiB "
        f"({size / args.nodes:.0f} bytes/node)"
    )
    if args.only != "window":
        bench_processes(path, args.rounds)
    if args.only == "process":
        return

    from profscope.models.formats.step_stats import load_step_timeline, locate

    def bare():
        return step_stats_pb2.StepStats.FromString(path.read_bytes())

    def ours():
        return load_step_timeline(locate(path))

    bare_s, bare_all = best_of(bare)
    ours_s, ours_all = best_of(ours)
    print(
        f"open + model build: {ours_s * 1000:.0f} ms vs bare protobuf read + parse {bare_s * 1000:.0f} ms "
        f"= {ours_s / bare_s:.2f}x (target <= 2x); runs ours {[round(x, 2) for x in ours_all]} "
        f"bare {[round(x, 2) for x in bare_all]}"
    )

    tl = ours()
    lanes_bytes = 0
    for lane in range(tl.num_lanes):
        index = tl.lane_index(lane)
        lanes_bytes += index.order.nbytes + index.order_start.nbytes
    details = tl.records.offsets.nbytes + tl.records.lengths.nbytes
    total = tl.nbytes + details + lanes_bytes
    print(
        f"model memory: {total / len(tl):.0f} bytes/node (columns+names {tl.nbytes / len(tl):.0f}, detail offsets "
        f"{details / len(tl):.0f}, drawing indexes {lanes_bytes / len(tl):.0f}; target < 200) over {tl.num_lanes} lanes"
    )

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


if __name__ == "__main__":
    main()
