"""Opening a session's memory profile and timeline from a ProfileAnalysis
server on loopback against opening it from disk, in the same run.

    python benchmarks/remote_bench.py FILE.xplane.pb [--repeat 3]

Copies the XSpace into a fresh session folder, serves it with `profscope
serve`'s server (in this process, on a free loopback port) and times, per
repeat, a fresh local repository and a fresh grpc:// repository doing the
same: list sessions, then the memory profile and the timeline of the host.
Prints medians and the ratio (target: remote at most 1.5x local).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from profscope.models.remote.client import RemoteRepository  # noqa: E402
from profscope.models.remote.server import make_server  # noqa: E402
from profscope.models.repository.profile_repository import LocalRepository  # noqa: E402


def open_both(repo) -> tuple[int, int]:
    session = repo.enum_sessions()[0]
    host = session.hosts[0]
    memory = repo.memory_profile(session.name, host)
    timeline = repo.step_timeline(session.name, host)
    return sum(len(a.timeline) for a in memory.allocators.values()), len(timeline)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("xplane")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="profscope-remote-bench-"))
    session = root / "plugins" / "profile" / "bench"
    session.mkdir(parents=True)
    shutil.copy(args.xplane, session / "host0.xplane.pb")
    mb = (session / "host0.xplane.pb").stat().st_size / 1e6
    server, port, _ = make_server(root / "plugins" / "profile", port=0)
    local_times, remote_times = [], []
    try:
        for _ in range(args.repeat):
            t = time.perf_counter()
            local = open_both(LocalRepository(root))
            local_times.append(time.perf_counter() - t)
            t = time.perf_counter()
            repo = RemoteRepository(f"grpc://127.0.0.1:{port}")
            remote = open_both(repo)
            remote_times.append(time.perf_counter() - t)
            repo.close()
            assert local == remote, (local, remote)
    finally:
        server.stop(0)
        shutil.rmtree(root)
    lo, re_ = sorted(local_times)[len(local_times) // 2], sorted(remote_times)[len(remote_times) // 2]
    print(f"{mb:.1f} MB XSpace, {local[0]:,} memory snapshots, {local[1]:,} timeline events")
    print(f"local: {lo:.2f} s   remote over loopback: {re_:.2f} s   ratio {re_ / lo:.2f}x (target <= 1.5x)")


if __name__ == "__main__":
    main()
