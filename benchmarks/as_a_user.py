"""Whole-process benchmarks run Profscope as an installed copy runs: with
compiled bytecode. Some shells (CI images, sandboxes) set
PYTHONDONTWRITEBYTECODE, and then every `profscope` process compiles the
project from source first (about 0.5 s of CPU), which no user pays."""

from __future__ import annotations

import compileall
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def like_an_installed_copy() -> None:
    """Child processes started after this may write and use bytecode, and the
    project's is written now (pip does the same when it installs)."""
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for package in ("viewer", "widgets", "models", "protos"):
        compileall.compile_dir(ROOT / package, quiet=1)
