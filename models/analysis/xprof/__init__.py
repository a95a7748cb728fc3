"""XProf's analysis tools computed from XSpaces (`<host>.xplane.pb`), with
the output XProf's converter (`xprof.convert.raw_to_tool_data`) gives.

XPROF_TOOLS maps a tool name to its function: (xplane paths of one host, or
of every host of a session, as XProf takes a list; the request's params; the
task) -> ToolData of XProf's JSON. Each tool module registers its function
with `@register(name)`; the modules are imported at the end of this file.
Only the repository calls these (it knows which files are XSpaces).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from profscope.models.core.task import TaskState
from profscope.models.data.tool_data import ToolData

ToolFunction = Callable[[list[Path], dict[str, str], TaskState], ToolData]

XPROF_TOOLS: dict[str, ToolFunction] = {}
# Tools XProf lists only for some files (memory_viewer: an XSpace with XLA modules): name -> does this file have data.
XPROF_OFFERED: dict[str, Callable[[Path], bool]] = {}


def register(name: str, offered: Callable[[Path], bool] | None = None) -> Callable[[ToolFunction], ToolFunction]:
    """Decorator: makes a function XProf tool `name`'s producer; `offered`, when given, says cheaply whether a
    file has data for it (otherwise every XSpace has)."""

    def add(function: ToolFunction) -> ToolFunction:
        XPROF_TOOLS[name] = function
        if offered is not None:
            XPROF_OFFERED[name] = offered
        return function

    return add


# The tool modules, one a line (each registers its tools when imported).
_TOOL_MODULES = (
    "overview_page",
    "input_pipeline",
    "framework_op_stats",
    "kernel_stats",
    "hlo_stats",
    "op_profile",
    "roofline",
    "memory_viewer",
)
for _module in _TOOL_MODULES:
    importlib.import_module(f"{__name__}.{_module}")
