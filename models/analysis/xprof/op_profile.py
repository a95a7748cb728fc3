"""XProf's op_profile tool: the device's HLO ops as a tree, by program
(module > category > op) or by category (param group_by: "program", the
default, or "category"), each node with its time, FLOPs and memory
bandwidth utilisation; both trees come with and without the IDLE time
(XProf's op_profile_builder).

XProf builds the trees from the device op metrics; a host-only profile
(deviceType "CPU_ONLY") gets empty roots, as XProf 2.24 returns for it.
Device planes are refused with a message (not computed yet)."""

from __future__ import annotations

import json
from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.hlo import require_host_only
from profscope.models.core.task import TaskState
from profscope.models.data.tool_data import ToolData

MEMORY_KINDS = 3  # bandwidth utilisation per memory: HBM, CMEM read/write... (XProf's three slots)


def empty_metrics() -> dict:
    return {
        "flops": 0,
        "bandwidthUtils": [0] * MEMORY_KINDS,
        "rawTime": 0,
        "rawFlops": 0,
        "rawBytesAccessedArray": [0] * MEMORY_KINDS,
        "occurrences": 0,
        "avgTimePs": 0,
        "bf16Flops": 0,
        "uncappedFlops": 0,
        "normalizedTimePs": 0,
    }


def op_profile_tree(paths: list[Path], group_by: str, task: TaskState) -> dict:
    require_host_only(paths, "op_profile", task)
    by = "category" if group_by == "category" else "program"
    key = f"by{by.capitalize()}"
    root = lambda: {"name": f"by_{by}", "metrics": empty_metrics(), "children": [], "numChildren": 0}
    return {key: root(), "deviceType": "CPU_ONLY", f"{key}ExcludeIdle": root(), "aggDvfsTimeScaleMultiplier": 0}


@register("op_profile")
def op_profile(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    tree = op_profile_tree(paths, params.get("group_by") or "program", task)
    return ToolData(json.dumps(tree, separators=(",", ":")).encode(), "json")
