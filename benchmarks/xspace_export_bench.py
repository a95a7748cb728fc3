"""XSpace as a user runs it: every row is a whole process, timed with its
peak RSS (`/usr/bin/time -v`), medians of rounds that interleave the rows so
the machine's other load falls on all of them alike.

    python benchmarks/xspace_export_bench.py [--events 2000000] [--rounds 3]
        [--xprof-python PATH] [--before CHECKOUT] [--file X.xplane.pb ...]

Rows: `profscope export --tool memory_profile` and `--tool trace_viewer`
(written to a file), the memory view's load (repository.memory_profile) and
the timeline's (repository.step_timeline). Anchors in the same run: a bare
protobuf parse of the file (Python's upb XSpace.ParseFromString) and, with
`--xprof-python` (a venv with `pip install xprof`), XProf's converter for
each tool, its output written to a file. `--before` names another checkout
of Profscope (C extensions built) to measure its rows in the same rounds.
Each row prints the median wall time, CPU time (user + sys: steadier than
the wall clock when other work shares the machine) and peak RSS.
Files default to benchmarks/xplane_bench.py's generator with 4,000 steps
(the issue's file) and with its default 250, and the real Keras profile
repeated; they are made when missing.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from as_a_user import like_an_installed_copy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BARE_PARSE = """
import sys
sys.path.insert(0, {root!r})
from profscope.protos import xplane_pb2
space = xplane_pb2.XSpace()
space.ParseFromString(open({path!r}, "rb").read())
"""

VIEW = """
import sys
sys.path.insert(0, {root!r})
from profscope.models.repository.locations import open_repository
repo = open_repository({path!r})
session = repo.enum_sessions()[0].name
if {what!r} == "memory":
    profile = repo.memory_profile(session, "")
else:
    timeline = repo.step_timeline(session, "")
"""

XPROF = """
import os, shutil, tempfile
from xprof.convert import raw_to_tool_data as r
folder = tempfile.mkdtemp()
path = os.path.join(folder, "bench.xplane.pb")
os.symlink({path!r}, path)
data, _ = r.xspace_to_tool_data([path], {tool!r}, {{"use_saved_result": False}})
with open({out!r}, "w" if isinstance(data, str) else "wb") as f:
    f.write(data)
shutil.rmtree(folder)
"""


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS MiB) of a whole process."""
    out = subprocess.run(["/usr/bin/time", "-v", *cmd], cwd=cwd, capture_output=True, text=True,
                         env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    if out.returncode:
        raise RuntimeError(f"{' '.join(cmd)[:200]}: {out.stderr[-1500:]}")
    wall = re.search(r"Elapsed \(wall clock\) time.*: (?:(\d+):)?(\d+):([\d.]+)", out.stderr)
    h, m, s = wall.groups()
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", out.stderr)
    cpu = sum(float(re.search(rf"{k} time \(seconds\): ([\d.]+)", out.stderr).group(1)) for k in ("User", "System"))
    return int(h or 0) * 3600 + int(m) * 60 + float(s), cpu, int(rss.group(1)) / 1024


def rows_for(path: Path, python: str, tree: Path, label: str, scratch: Path) -> dict[str, tuple[list[str], Path]]:
    out = scratch / "out.json"
    export = [python, "-m", "profscope.viewer.cli", "export", str(path), "-o", str(out), "--tool"]
    return {
        f"{label} export memory_profile": (export + ["memory_profile"], tree),
        f"{label} export trace_viewer": (export + ["trace_viewer"], tree),
        f"{label} memory view load": ([python, "-c", VIEW.format(root=str(tree), path=str(path), what="memory")], tree),
        f"{label} timeline load": ([python, "-c", VIEW.format(root=str(tree), path=str(path), what="timeline")], tree),
    }


def main() -> None:
    like_an_installed_copy()
    parser = argparse.ArgumentParser()
    parser.add_argument("--events", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--xprof-python", help="a Python that can import xprof (the converter anchor)")
    parser.add_argument("--before", type=Path, help="another Profscope checkout to measure in the same rounds")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/profscope-xplane-bench"))
    parser.add_argument("--file", type=Path, action="append", help="xplane.pb files (default: xplane_bench's two)")
    parser.add_argument("--only", help="run only rows whose label contains this text")
    args = parser.parse_args()
    files = args.file
    if not files:
        from benchmarks.xplane_bench import generate, repeat_real

        args.folder.mkdir(parents=True, exist_ok=True)
        files = [args.folder / f"steps4000_{args.events}.xplane.pb", args.folder / f"generated_{args.events}.xplane.pb",
                 args.folder / f"repeated_{args.events}.xplane.pb"]
        if not files[0].exists():
            generate(args.events, files[0], steps=4000)
        if not files[1].exists():
            generate(args.events, files[1])
        if not files[2].exists():
            repeat_real(args.events, ROOT / "tests/data/xprof/keras.xplane.pb", files[2])
    python = sys.executable
    for path in files:
        path = path.resolve()
        size = path.stat().st_size / 2**20
        print(f"\n{path.name}: {size:.1f} MiB, medians of {args.rounds} (wall s, CPU s, peak RSS MiB, RSS / file)",
              flush=True)
        with tempfile.TemporaryDirectory() as scratch:
            scratch = Path(scratch)
            bare = [python, "-c", BARE_PARSE.format(root=str(ROOT), path=str(path))]
            rows = {"anchor: bare protobuf parse": (bare, ROOT)}
            if args.xprof_python:
                for tool in ("memory_profile", "trace_viewer"):
                    code = XPROF.format(path=str(path), tool=tool, out=str(scratch / "xprof.json"))
                    rows[f"anchor: XProf {tool}"] = ([args.xprof_python, "-c", code], scratch)
            if args.before:
                rows.update(rows_for(path, python, args.before.resolve(), "before:", scratch))
            rows.update(rows_for(path, python, ROOT, "now:", scratch))
            if args.only:
                rows = {k: v for k, v in rows.items() if args.only in k or k.startswith("anchor")}
            results: dict[str, list[tuple[float, float, float]]] = {k: [] for k in rows}
            for _ in range(args.rounds):
                for label, (cmd, cwd) in rows.items():
                    for old in scratch.iterdir():  # no row pays for deleting another's output
                        old.unlink()
                    results[label].append(timed(cmd, cwd))
            med = {k: tuple(statistics.median(r[j] for r in v) for j in range(3)) for k, v in results.items()}
            for label, (t, cpu, rss) in med.items():
                print(f"  {label:40s} {t:7.2f} s {cpu:7.2f} s CPU {rss:7.0f} MiB {rss / size:5.2f}x", flush=True)
            for who in ("before:", "now:"):
                m, tv = med.get(f"{who} export memory_profile"), med.get(f"{who} export trace_viewer")
                xm, xt = med.get("anchor: XProf memory_profile"), med.get("anchor: XProf trace_viewer")
                if m and tv and xm and xt:
                    print(
                        f"  {who} memory + trace export {m[0] + tv[0]:.2f} s ({m[1] + tv[1]:.2f} s CPU); XProf "
                        f"{xm[0] + xt[0]:.2f} s ({xm[1] + xt[1]:.2f} s CPU): {(xm[0] + xt[0]) / (m[0] + tv[0]):.1f}x "
                        f"faster ({(xm[1] + xt[1]) / (m[1] + tv[1]):.1f}x in CPU)",
                        flush=True,
                    )


if __name__ == "__main__":
    main()
