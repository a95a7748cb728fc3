"""The window's timeline job on an xplane host, its parts timed: the
timeline (what the Timeline tab shows) and XProf's tools for the XProf
Statistics tab (viewer/controllers/loading.py's xprof_data), computed in
the same job after it. Each row in a fresh process (OpStats is cached per
process), medians of rounds; wall and CPU seconds.

    python benchmarks/xprof_tab_bench.py [--file X.xplane.pb] [--rounds 3]

The file defaults to the 2M-event XSpace of benchmarks/sql_bench.py.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from as_a_user import like_an_installed_copy

JOB = """
import json, sys, time
from profscope.models.core.task import TaskState
from profscope.models.repository.locations import open_repository
from profscope.viewer.controllers.loading import XPROF_VIEWS, xprof_data
repo = open_repository(sys.argv[1])
session = repo.enum_sessions()[0].name
host = repo.hosts_with(session, "trace_viewer")[0]
tools = [t for t in XPROF_VIEWS if host in repo.hosts_with(session, t)]
task = TaskState()
t0, c0 = time.perf_counter(), time.process_time()
with repo.decoding_once():  # as the window's job: the tools take the XSpace the timeline decoded
    timeline = repo.step_timeline(session, host, "", task)
    timeline.all_kind_stats
    t1, c1 = time.perf_counter(), time.process_time()
    data = xprof_data(repo, session, host, tools, task)
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps([t1 - t0, c1 - c0, t2 - t1, c2 - c1, tools, data.get("errors", [])]))
"""


def fresh_process_rounds(code: str) -> tuple[Path, int, list]:
    """Parses --file and --rounds, runs `code` (the file as argv[1]) in a fresh
    offscreen process each round; each run's last line of output, as JSON."""
    like_an_installed_copy()
    parser = argparse.ArgumentParser()
    parser.add_argument("--file", type=Path, default=Path("/tmp/profscope-sql-bench/bench.xplane.pb"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    path = args.file.resolve()
    if not path.exists():
        sys.exit(f"{path}: missing (benchmarks/sql_bench.py makes it)")
    runs = []
    for _ in range(args.rounds):
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                             env={**os.environ, "QT_QPA_PLATFORM": "offscreen"}, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return path, args.rounds, runs


def main() -> None:
    path, rounds, runs = fresh_process_rounds(JOB)
    med = [statistics.median(r[i] for r in runs) for i in range(4)]
    print(f"{path} ({path.stat().st_size / 2**20:.0f} MiB), medians of {rounds} rounds")
    print(f"timeline (step_timeline + op statistics)   {med[0]:6.2f} s wall {med[1]:6.2f} s CPU")
    print(f"XProf Statistics tab ({len(runs[0][4])} tools)          {med[2]:6.2f} s wall {med[3]:6.2f} s CPU")
    print(f"tools: {', '.join(runs[0][4])}")
    if runs[0][5]:
        print(f"errors: {runs[0][5]}")


if __name__ == "__main__":
    main()
