"""XProf's analysis tools computed from XSpaces (`<host>.xplane.pb`), with
the output XProf's converter (`xprof.convert.raw_to_tool_data`) gives.

XPROF_TOOLS maps a tool name to its function: (xplane paths of one host, or
of every host of a session, as XProf takes a list; the request's params; the
task) -> ToolData of XProf's JSON. Each tool module registers its function
with `@register(name)`; a tool's module is imported when the tool is first
looked up (a command runs one tool: it loads that one's analysis alone).
Only the repository calls these (it knows which files are XSpaces).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TypeVar

from profscope.models.core.task import TaskState
from profscope.models.data.tool_data import ToolData

ToolFunction = Callable[[list[Path], dict[str, str], TaskState], ToolData]

# The tools and the module of each, one a line (each module registers its tools when imported).
_MODULE_OF = {
    "overview_page": "overview_page",
    "input_pipeline_analyzer": "input_pipeline",
    "framework_op_stats": "framework_op_stats",
    "kernel_stats": "kernel_stats",
    "hlo_stats": "hlo_stats",
    "op_profile": "op_profile",
    "roofline_model": "roofline",
    "memory_viewer": "memory_viewer",
}
# Tools XProf lists only for some files (memory_viewer: an XSpace with XLA modules), and the module saying
# which (light: listing a session's tools loads no tool).
_OFFERED_BY_FILE = {"memory_viewer": "hlo_source"}

V = TypeVar("V")


class _Registered(Mapping[str, V]):
    """Registered functions by tool name, the tool's module imported on the first look-up."""

    def __init__(self, modules: dict[str, str]) -> None:
        self._names = tuple(modules)
        self._modules = modules
        self.functions: dict[str, V] = {}

    def __getitem__(self, name: str) -> V:
        if name not in self.functions and name in self._names:
            importlib.import_module(f"{__name__}.{self._modules[name]}")
        return self.functions[name]

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


XPROF_TOOLS: _Registered[ToolFunction] = _Registered(_MODULE_OF)
# name -> does this file have data for the tool (the tools XProf lists only for some files).
XPROF_OFFERED: _Registered[Callable[[Path], bool]] = _Registered(_OFFERED_BY_FILE)


def register(name: str) -> Callable[[ToolFunction], ToolFunction]:
    """Decorator: makes a function XProf tool `name`'s producer (`name` listed in _MODULE_OF with its module)."""

    def add(function: ToolFunction) -> ToolFunction:
        XPROF_TOOLS.functions[name] = function
        return function

    return add


def offers(name: str) -> Callable[[Callable[[Path], bool]], Callable[[Path], bool]]:
    """Decorator: makes a function say cheaply whether a file has data for tool `name` (listed in
    _OFFERED_BY_FILE with its module; otherwise every XSpace has)."""

    def add(function: Callable[[Path], bool]) -> Callable[[Path], bool]:
        XPROF_OFFERED.functions[name] = function
        return function

    return add
