"""PyTorch CUDA memory snapshot benchmark, measured as a user meets it.

    python benchmarks/torch_snapshot_bench.py [--mb 500] [--out benchmarks/out] [--skip-view]

Builds (once) a snapshot of about --mb MB: the real trace of tests/data/torch_snapshot/profile_snapshot.pickle
(torch 2.14.1's _profile_to_snapshot of a CPU MLP) repeated with shifted times and addresses, each entry with a
stack of about 35 frames the way PyTorch writes them (C++ allocator frames under the Python ones under a
training loop; each distinct frame one shared dict, each entry its own list), plus the fixture's segments;
pickled by pickle.dumps of that plain data (protocol 4). Prints, in fresh processes (wall time, CPU time, peak
RSS from /usr/bin/time -v):
- the yardstick: a plain, global-free pickle.load of the file (fine here: the file is ours);
- `profscope export FILE --tool memory_profile --param xprof_form=1 -o OUT` (targets: no slower than the
  yardstick, at most half its peak RSS);
- the decoder alone (read_cuda_snapshot) and the replay alone, in this process;
- the window's memory view: load as the window's worker does (load, prepare_series, prepare_histories),
  set_profile, shown;
- moving the moment: pick_moment at the peak and at spread snapshots with the real MemoryView offscreen, in ms
  (target: 100 ms); and on a trace with 200,000 allocations alive at once (an out-of-memory moment).
"""

from __future__ import annotations

import argparse
import os
import pickle
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CPP = [("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc", "??", 0),
       ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc", "??", 0),
       ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate", "??", 0),
       ("at::TensorBase at::detail::_empty_generic<long>", "??", 0), ("at::detail::empty_generic", "??", 0),
       ("at::detail::empty_cuda", "??", 0), ("at::native::empty_cuda", "??", 0),
       ("at::(anonymous namespace)::create_out", "RegisterCUDA.cpp", 0),
       ("at::_ops::addmm::redispatch", "Operators_0.cpp", 0),
       ("torch::autograd::VariableType::(anonymous namespace)::addmm", "VariableType_0.cpp", 0),
       ("c10::impl::wrap_kernel_functor_unboxed_", "??", 0), ("at::_ops::addmm::call", "Operators_0.cpp", 0),
       ("at::native::linear", "Linear.cpp", 0), ("at::_ops::linear::call", "Operators_0.cpp", 0),
       ("torch::autograd::THPVariable_linear", "python_nn_functions.cpp", 0),
       ("cfunction_call", "/usr/local/src/conda/python-3.11/Objects/methodobject.c", 0),
       ("_PyObject_MakeTpCall", "/usr/local/src/conda/python-3.11/Objects/call.c", 0),
       ("_PyEval_EvalFrameDefault", "/usr/local/src/conda/python-3.11/Python/ceval.c", 0)]
LOOP = [("train_step", "/work/experiments/train.py", 211), ("run_epoch", "/work/experiments/train.py", 260),
        ("main", "/work/experiments/train.py", 318), ("<module>", "/work/experiments/train.py", 330),
        ("_run_code", "/usr/lib/python3.11/runpy.py", 88), ("_run_module_as_main", "/usr/lib/python3.11/runpy.py", 198)]


def _python_frames(frames: list) -> list[tuple[str, str, int]]:
    """_profile_to_snapshot's "file(line): name" frames as (name, filename, line)."""
    out = []
    for f in frames:
        m = re.match(r"(.+)\((\d+)\): (.+)", f.get("name", ""))
        out.append((m.group(3), "/opt/venv/lib/python3.11/site-packages/" + m.group(1), int(m.group(2))) if m
                   else (f.get("name", ""), "", 0))
    return out


def generate(path: Path, megabytes: float) -> None:
    from profscope.models.core.safe_pickle import loads  # never pickle.loads a file, even a fixture

    plain = loads((ROOT / "tests/data/torch_snapshot/profile_snapshot.pickle").read_bytes())
    base = plain["device_traces"][0]
    pool: dict[tuple, dict] = {}
    frame = lambda t: pool.setdefault(t, {"name": t[0], "filename": t[1], "line": t[2]})
    stacks = [CPP + _python_frames(e.get("frames", [])) + LOOP for e in base]
    span = 10 * len(base) + 1000
    entries, reps = [], 0
    target = int(megabytes * 1e6 / 236)  # bytes an entry takes, as pickled (measured)
    while len(entries) < target:
        shift = reps << 36
        for k, (e, stack) in enumerate(zip(base, stacks)):
            entries.append({"action": e["action"], "addr": e["addr"] + shift, "size": e["size"],
                            "stream": e.get("stream", 0), "time_us": 1_790_000_000_000_000 + reps * span + 10 * k,
                            "frames": [frame(t) for t in stack[k % 3:]], "compile_context": "N/A",
                            "category": e.get("category", "")})
        reps += 1
    snapshot = {"segments": plain["segments"], "device_traces": [entries], "allocator_settings": {}}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB, {len(entries):,} entries, {reps:,} repetitions "
          f"of {len(base)})")


def run(cmd: list[str]) -> tuple[float, float, float]:
    """Wall (s), CPU (s) and peak RSS (MiB) of a fresh process, from /usr/bin/time -v."""
    t = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    wall = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(f"{cmd} failed:\n{r.stderr[-3000:]}")
    field = lambda name: float(re.search(rf"{name}: ([\d.]+)", r.stderr).group(1))
    return wall, field("User time \\(seconds\\)") + field("System time \\(seconds\\)"), \
        field("Maximum resident set size \\(kbytes\\)") / 1024


def show(w: float, c: float, r: float) -> str:
    return f"{w:.2f} s wall ({c:.2f} s CPU), peak RSS {r:,.0f} MiB"


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def view_bench(path: Path) -> None:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import numpy as np
    from PySide6.QtWidgets import QApplication

    from profscope.models.analysis.allocator_state import prepare_histories
    from profscope.models.data.memory_profile import MemoryProfileData
    from profscope.models.data.peak_pyramid import prepare_series
    from profscope.models.formats.torch_snapshot import load_torch_snapshot, read_cuda_snapshot, snapshot_allocators
    from profscope.widgets.memory.view import MemoryView

    app = QApplication.instance() or QApplication([])
    t = time.perf_counter()
    data = load_torch_snapshot(path)
    series = prepare_series(data)  # the window's worker makes the plot's pyramids with the profile
    histories = prepare_histories(data.cuda_snapshot)  # and the allocator state history of each device
    loaded = time.perf_counter() - t
    view = MemoryView()
    view.resize(1400, 900)
    t = time.perf_counter()
    view.set_profile(data, series, histories)
    view.show()
    app.processEvents()
    shown = time.perf_counter() - t
    a = view.allocator
    n = len(a.timeline)
    print(f"window's memory view: load + series (worker) {loaded:.2f} s, set_profile + shown {shown * 1000:.0f} ms "
          f"= {loaded + shown:.2f} s ({n:,} snapshots)")
    moments = {"peak": a.peak_index, "start": 1, "quarter": n // 4, "middle": n // 2, "end": n - 1}
    for name, index in moments.items():
        def pick(index=index):
            view.pick_moment(index)
            app.processEvents()
        first = best(pick, 1)
        again = best(pick, 3)
        print(f"  moment at {name} (snapshot {index:,}, {len(view.table.model.rows):,} rows): "
              f"{first * 1000:.0f} ms first, {again * 1000:.0f} ms again")
    rng = np.random.default_rng(1)
    clicks = [best(lambda i=int(i): (view.pick_moment(i), app.processEvents()), 1) for i in rng.integers(0, n, 10)]
    print(f"  10 clicks anywhere: median {np.median(clicks) * 1000:.0f} ms, worst {max(clicks) * 1000:.0f} ms "
          "[target 100 ms]")
    # an out-of-memory moment: 200,000 allocations alive at once (a third of 300,000 freed), 200 call stacks
    stacks = [[{"name": f"f{k}", "filename": f"/m/model{k % 50}.py", "line": k} for k in range(j, j + 30)]
              for j in range(200)]
    n_live = 300_000
    entries = [{"action": "alloc", "addr": 4096 * i, "size": 512 + i % 97, "time_us": 10 * i,
                "frames": stacks[i % 200]} for i in range(n_live)]
    for i in range(0, n_live, 3):
        entries += [{"action": a, "addr": 4096 * i, "size": 512 + i % 97, "time_us": 10 * (n_live + i)}
                    for a in ("free_requested", "free_completed")]
    snap = read_cuda_snapshot(pickle.dumps({"segments": [], "device_traces": [entries]}, 4), "live")
    view.set_profile(MemoryProfileData(host="live", allocators=snapshot_allocators(snap)))
    app.processEvents()
    a = view.allocator
    for name, index in {"peak": a.peak_index, "end": len(a.timeline) - 1}.items():
        t = best(lambda index=index: (view.pick_moment(index), app.processEvents()), 3)
        live = len(a.allocations_at(index).op)
        print(f"  many alive: moment at {name} ({a.allocations_at(index).occurrences.sum():,} allocations alive, "
              f"{live:,} rows): {t * 1000:.0f} ms [target 100 ms]")
    view.close()
    view.deleteLater()
    app.processEvents()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--mb", type=float, default=500)
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    p.add_argument("--skip-view", action="store_true")
    args = p.parse_args()
    path = args.out / f"torch_snapshot_{int(args.mb)}mb.pickle"
    if not path.exists():
        t = time.perf_counter()
        generate(path, args.mb)
        print(f"  in {time.perf_counter() - t:.0f} s")
    print(f"{path.name}: {path.stat().st_size / 1e6:.0f} MB (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} CPUs)")
    py = sys.executable
    bare = run([py, "-c", f"import pickle; pickle.load(open({str(path)!r}, 'rb'))"])
    print(f"yardstick, plain pickle.load in a fresh process: {show(*bare)}")
    out = args.out / "torch_snapshot_export.json"
    profscope = Path(py).with_name("profscope")  # the command a user runs, installed beside this Python
    command = [str(profscope)] if profscope.exists() else [py, "-m", "profscope.viewer.cli"]
    export = run([*command, "export", str(path), "--tool", "memory_profile", "--param", "xprof_form=1", "-o", str(out)])
    ok = "ok" if export[0] <= bare[0] and export[2] <= bare[2] / 2 else "MISSED"
    print(f"profscope export --tool memory_profile --param xprof_form=1: {show(*export)} "
          f"[{ok}: wall <= {bare[0]:.2f} s, RSS <= {bare[2] / 2:,.0f} MiB]; {out.stat().st_size / 1e3:,.0f} KB written")
    from profscope.models.formats.torch_snapshot import read_cuda_snapshot, snapshot_allocators

    data = path.read_bytes()
    t = time.perf_counter()
    snap = read_cuda_snapshot(data, path.name)
    decode = time.perf_counter() - t
    del data
    t = time.perf_counter()
    allocators = snapshot_allocators(snap)
    replay = time.perf_counter() - t
    rows = sum(len(a.timeline) for a in allocators.values())
    print(f"in this process: decode (C) {decode:.2f} s ({path.stat().st_size / 1e6 / decode:.0f} MB/s, "
          f"{sum(len(t) for t in snap.traces):,} entries, {len(snap.tracebacks):,} distinct frames lists); "
          f"replay + peak table {replay:.2f} s ({rows:,} rows)")
    del snap, allocators
    if not args.skip_view:
        view_bench(path)


if __name__ == "__main__":
    main()
