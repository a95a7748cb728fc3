"""The import contracts of pyproject.toml's [tool.importlinter] (layers viewer > widgets > models > protos,
Qt-free models, formats known only to the repository, the layers inside models), checked by import-linter."""

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

PACKAGES = ("viewer", "widgets", "models", "protos", "resources")


def test_import_contracts_are_kept(tmp_path):
    # import-linter reads a package's files from its folder; an editable install has none (its import hook maps
    # profscope.* onto the top-level folders), so a profscope folder of links to them stands in for it.
    package = tmp_path / "profscope"
    package.mkdir()
    (package / "__init__.py").touch()
    for name in PACKAGES:
        (package / name).symlink_to(ROOT / name, target_is_directory=True)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    lint_imports = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint_imports), "--no-cache"], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
