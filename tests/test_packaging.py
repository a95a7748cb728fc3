"""Profscope installs as one import name, profscope.*, and nothing else: a project
with folders of its own called models/ or protos/ keeps them."""

import importlib.metadata
import subprocess
import sys

from conftest import ROOT


def test_the_distribution_installs_one_top_level_package():
    dist = importlib.metadata.distribution("profscope")
    top = set((dist.read_text("top_level.txt") or "").split())
    assert top == {"profscope"}
    assert dist.entry_points.select(group="console_scripts")["profscope"].value == "profscope.viewer.cli:main"


def test_a_project_with_its_own_models_and_protos_shadows_nothing(tmp_path):
    for name in ("models", "protos", "viewer", "widgets"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the project\\'s own package')\n")
    code = ("import sys; sys.path.insert(0, ''); from profscope.viewer import cli; "
            "from profscope.models.hparams import experiment; sys.exit(cli.main(['formats']))")
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "xplane" in result.stdout.lower()


def test_resources_are_package_data():
    from importlib import resources

    icons = resources.files("profscope.resources") / "icons"
    assert (icons / "profscope.svg").read_text().startswith("<svg")
    assert (icons / "profscope.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    sample = resources.files("profscope.resources") / "samples" / "tf_logdir"
    assert sample.is_dir() and (ROOT / "resources" / "samples" / "tf_logdir").is_dir()


def test_every_package_folder_is_listed_in_pyproject():
    import tomllib

    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    folders = {"profscope." + ".".join(init.parent.relative_to(ROOT).parts)
               for top in ("viewer", "widgets", "models", "protos", "resources")
               for init in (ROOT / top).rglob("__init__.py")}
    assert listed == folders, "pyproject.toml's packages differ from the folders: the wheel would miss code"
