"""The format registry: one list that the README, the CLI and the scan share,
and a module layout without import cycles."""

import ast
import subprocess
import sys

from conftest import ROOT

from profscope.models.formats import FORMATS, file_patterns, formats_table
from profscope.models.repository.registry import TOOLS
from profscope.viewer.cli import main


def test_readme_table_is_the_registry(capsys):
    readme = (ROOT / "README.md").read_text()
    assert formats_table() in readme
    assert main(["formats"]) == 0
    assert capsys.readouterr().out.strip() == formats_table()


def test_every_format_declares_itself():
    names = [f.name for f in FORMATS]
    assert len(set(names)) == len(names)
    for f in FORMATS:
        assert f.title and f.where and f.patterns, f.name
        assert set(f.tools) <= set(TOOLS), f.name
    assert "*.xplane.pb" in file_patterns() and "*.json.gz" in file_patterns()


def _imports(path, modules):
    """Modules of `modules` a file imports at its top level (not inside
    functions); `from package import submodule` counts as the submodule."""
    tree = ast.parse(path.read_text())
    found = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                is_module = sub in modules or (path.parent / f"{a.name}.c").exists() or any(
                    (ROOT / node.module.replace(".", "/")).glob(f"{a.name}.c"))
                found.add(sub if is_module else node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found & set(modules)


def test_models_have_no_import_cycles():
    modules = {}
    for path in (ROOT / "models").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        modules[name] = path
    graph = {m: _imports(p, modules) - {m} for m, p in modules.items()}
    # A package's __init__ importing its own submodules is how packages are built, not a cycle.
    for m in graph:
        graph[m] = {i for i in graph[m] if not (i.startswith(m + ".") and modules[m].name == "__init__.py")}
    state = {}

    def visit(m, trail):
        state[m] = "open"
        for dep in graph[m]:
            if state.get(dep) == "open":
                raise AssertionError("import cycle: " + " -> ".join(trail + [m, dep]))
            if dep not in state:
                visit(dep, trail + [m])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [])


def test_formats_command_imports_no_qt():
    code = ("import sys; from profscope.viewer.cli import main; main(['formats']); "
            "assert not [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'widgets'))]")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
