"""XProf's OpStats tools as a user runs them: `profscope export --tool T`
against XProf's own converter on the same xplane.pb, each a whole process
timed with its peak RSS (`/usr/bin/time -v`); medians of rounds that
interleave the rows, so the machine's other load falls on all alike.

    python benchmarks/xprof_tools_bench.py [--file X.xplane.pb | --tpu] [--rounds 3]
        [--xprof-python /tmp/xprof-venv/bin/python] [--tools overview_page ...]

The file defaults to the 2M-event XSpace of benchmarks/sql_bench.py
(/tmp/profscope-sql-bench/bench.xplane.pb). --tpu: a TPU profile of 20,000
steps instead (two TensorCores, 280,000 XLA ops with their metadata:
tests/data/producers/xprof_device_planes.py --big-tpu, run with
--producer-python, a Python with TensorFlow's protos; made once, in
/tmp/profscope-tpu-bench/), and every tool XProf has for it by default. XProf's converter reads a link
to it from a folder of its own (it caches results beside the file) with
`use_saved_result` False. Each row prints wall and CPU seconds and peak RSS;
the Profscope rows also the speed-up against XProf's and RSS / file size.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from as_a_user import like_an_installed_copy
from xspace_export_bench import XPROF, timed

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats")
TPU_TOOLS = ("roofline_model", "op_profile", "overview_page", "input_pipeline_analyzer", "framework_op_stats",
             "hlo_stats")
TPU_FILE = Path("/tmp/profscope-tpu-bench/tpu.xplane.pb")


def tpu_file(python: str) -> Path:
    """The 20,000-step TPU profile, made by the device-planes producer if it is not there yet."""
    if not TPU_FILE.exists():
        TPU_FILE.parent.mkdir(parents=True, exist_ok=True)
        producer = ROOT / "tests" / "data" / "producers" / "xprof_device_planes.py"
        subprocess.run([python, str(producer), str(TPU_FILE.parent), "--big-tpu", str(TPU_FILE)], check=True,
                       cwd=producer.parent, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"})
    return TPU_FILE


def main() -> None:
    like_an_installed_copy()
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", type=Path, default=Path("/tmp/profscope-sql-bench/bench.xplane.pb"))
    parser.add_argument("--tpu", action="store_true", help="the 20,000-step TPU profile (made if missing)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--xprof-python", default="/tmp/xprof-venv/bin/python")
    parser.add_argument("--producer-python", default="/tmp/xprof-venv/bin/python")
    parser.add_argument("--tools", nargs="*")
    args = parser.parse_args()
    if args.tools is None:
        args.tools = list(TPU_TOOLS if args.tpu else TOOLS[:3])
    path = tpu_file(args.producer_python) if args.tpu else args.file.resolve()
    if not path.exists():
        sys.exit(f"{path}: missing (benchmarks/sql_bench.py makes it)")
    size_mb = path.stat().st_size / 2**20
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "out.json"
        rows: dict[str, list[str]] = {}
        for tool in args.tools:
            rows[f"profscope {tool}"] = [sys.executable, "-m", "profscope.viewer.cli", "export", str(path),
                                         "--tool", tool, "-o", str(out)]
            if args.xprof_python:
                rows[f"xprof {tool}"] = [args.xprof_python, "-c", XPROF.format(path=str(path), tool=tool,
                                                                               out=str(out))]
        results: dict[str, list[tuple[float, float, float]]] = {k: [] for k in rows}
        for _ in range(args.rounds):
            for label, cmd in rows.items():
                results[label].append(timed(cmd, ROOT))
    print(f"{path} ({size_mb:.0f} MiB), medians of {args.rounds} rounds")
    medians = {k: tuple(statistics.median(r[i] for r in v) for i in range(3)) for k, v in results.items()}
    for label, (wall, cpu, rss) in medians.items():
        line = f"{label:40s} {wall:7.2f} s wall {cpu:7.2f} s CPU {rss:8.0f} MiB peak RSS"
        xprof = medians.get(label.replace("profscope", "xprof", 1))
        if label.startswith("profscope") and xprof:
            line += f"   {xprof[0] / wall:5.1f}x faster, RSS {rss / size_mb:.1f}x the file"
        print(line)


if __name__ == "__main__":
    main()
