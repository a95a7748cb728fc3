"""sha256 of every tool's export, and of every Parquet table, for each fixture
and benchmark input: run it before and after a change that must not change
outputs (a move, a refactor) and compare the two files.

    python benchmarks/export_hashes.py [-o hashes.json] [--tools T ...] [PATH ...]

With no PATH: every fixture under tests/data (fuzz inputs aside), the bundled
sample, and the benchmark inputs already made under benchmarks/out. With --tools, only those
tools' exports (no Parquet).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOOL_PARAMS = {"memory_profile": [{}, {"xprof_form": "1"}]}  # tools whose parameters change the layout
HPARAMS_TOOLS = ("hparams_experiment", "hparams_session_groups")


def _cli():
    try:
        from profscope.viewer import cli
    except ImportError:  # before the move to one package
        from profscope.viewer import cli  # type: ignore[no-redef]
    return cli


def _run(argv: list[str]) -> tuple[int, str]:
    err = io.StringIO()
    out = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        code = _cli().main(argv)
    return code, out.getvalue()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def locations() -> list[Path]:
    data = ROOT / "tests" / "data"
    found = [ROOT / "resources" / "samples" / "tf_logdir"]
    for kind in ("xprof", "log_memory", "step_stats"):
        found += sorted(p for p in (data / kind).iterdir() if p.is_file())
    for kind in ("chrome_trace", "hparams"):
        found += sorted(p for p in (data / kind).iterdir() if p.name not in ("producers", "README.md"))
    out = ROOT / "benchmarks" / "out"
    if out.is_dir():
        found += sorted(p for p in out.iterdir() if p.is_file() and p.stat().st_size < 2_000_000_000)
    return found


def hashes_of(path: Path, tmp: Path, tools: list[str] | None = None) -> dict[str, str]:
    result: dict[str, str] = {}
    code, text = _run(["sessions", str(path), "--json"])
    sessions = json.loads(text)["sessions"] if code == 0 else []
    for s in sessions:
        for host in ["", *s["hosts"]]:
            for tool in [t for t in s["availableTools"] if tools is None or t in tools]:
                for params in TOOL_PARAMS.get(tool, [{}]):
                    out = tmp / "out"
                    argv = ["export", str(path), "--tool", tool, "--session", s["sessionId"], "--host", host,
                            "-o", str(out)] + [f"--param={k}={v}" for k, v in params.items()]
                    key = f"{s['sessionId']}|{host}|{tool}|{json.dumps(params)}"
                    result[key] = _digest(out) if _run(argv)[0] == 0 and out.exists() else "failed"
                    out.unlink(missing_ok=True)
    if tools is not None:
        return result
    if path.is_dir():  # a log dir may be an HParams sweep
        for tool in HPARAMS_TOOLS:
            out = tmp / "out"
            if _run(["export", str(path), "--tool", tool, "-o", str(out)])[0] == 0:
                result[tool] = _digest(out)
                out.unlink()
    folder = tmp / "parquet"
    shutil.rmtree(folder, ignore_errors=True)
    if sessions and _run(["export", str(path), "--format", "parquet", "-o", str(folder)])[0] == 0:
        for f in sorted(folder.rglob("*.parquet")):
            result[f"parquet|{f.relative_to(folder)}"] = _digest(f)
    return result


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("paths", nargs="*")
    p.add_argument("-o", "--output", default="-")
    p.add_argument("--tools", nargs="+", help="only these tools' exports")
    args = p.parse_args()
    paths = [Path(x) for x in args.paths] or locations()
    table = {}
    with tempfile.TemporaryDirectory() as tmp:
        for path in paths:
            key = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
            table[key] = hashes_of(path, Path(tmp), args.tools)
            print(f"{key}: {len(table[key])} outputs", file=sys.stderr)
    text = json.dumps(table, indent=1, sort_keys=True)
    if args.output == "-":
        print(text)
    else:
        Path(args.output).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
