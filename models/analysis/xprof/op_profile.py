"""XProf's op_profile tool: the device's HLO ops as a tree, by program
(module > category > op) or by category (param group_by: "program", the
default, or "category"), each node with its time, FLOPs and memory
bandwidth utilisation; both trees come with and without the IDLE time
(XProf's op_profile_builder).

XProf builds the trees from the device op metrics; a host-only profile
(deviceType "CPU_ONLY") gets empty roots, as XProf 2.24 returns for it.
GPU planes of TensorFlow kernels get XProf 2.24.2's tree of the device op
metrics (program "main" > op type > device op, no FLOPs); TPU planes the
tree of their TensorCore ops from the ops' metadata (tpu_profile.py); XLA
ops on a GPU are refused with a message (their FLOPs and bytes come from
XLA's cost analysis, which Profscope lacks)."""

from __future__ import annotations

import json
from pathlib import Path

from profscope.models.analysis.xprof import register
from profscope.models.analysis.xprof.hlo import device_planes
from profscope.models.core.task import ProfileError, TaskState
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
    by = "category" if group_by == "category" else "program"
    key = f"by{by.capitalize()}"
    root = lambda: {"name": f"by_{by}", "metrics": empty_metrics(), "children": [], "numChildren": 0}
    if not device_planes(paths, task):
        return {key: root(), "deviceType": "CPU_ONLY", f"{key}ExcludeIdle": root(), "aggDvfsTimeScaleMultiplier": 0}
    from profscope.models.analysis.xprof.device_op_metrics import device_stats
    from profscope.models.analysis.xprof.op_stats import read_spaces

    spaces = read_spaces(paths, task)
    device = device_stats(spaces, paths, steps=False)
    if device.hardware_type == "TPU":  # TensorCores: from the ops' metadata (tpu_profile.py)
        from profscope.models.analysis.xprof.tpu_profile import tpu_op_profile

        return tpu_op_profile(spaces, paths, by)
    if device.xla:
        raise ProfileError(device.xla)
    return {key: _device_tree(device.ops, by, idle=True), "deviceType": device.hardware_type,
            f"{key}ExcludeIdle": _device_tree(device.ops, by, idle=False), "aggDvfsTimeScaleMultiplier": 0}


def _number(x: float) -> float | int:
    return int(x) if float(x).is_integer() else x  # XProf writes whole numbers without a fraction


def _node(name: str, time_ps: int, occurrences: int, children: list[dict], xla: dict | None = None) -> dict:
    metrics = empty_metrics()
    metrics.update(rawTime=time_ps, occurrences=occurrences,
                   avgTimePs=_number(time_ps / occurrences) if occurrences else 0)
    node: dict = {"name": name, "metrics": metrics, "children": children}
    if xla is not None:
        node["xla"] = xla
    node["numChildren"] = len(children)
    return node


def _leaf(name: str, time_ps: int, occurrences: int, provenance: str, category: str, line: int) -> dict:
    return _node(name, time_ps, occurrences, [], {
        "op": "", "expression": "", "provenance": provenance, "category": category, "computationPrimitiveSize": 0,
        "fingerprint": "0", "programId": "0", "sourceInfo": {"fileName": "", "lineNumber": line, "stackFrame": ""},
        "xprofKernelMetadata": ""})


def _by_time(nodes: list[dict]) -> list[dict]:
    return sorted(nodes, key=lambda n: -n["metrics"]["rawTime"])


def _device_tree(db, by: str, idle: bool) -> dict:
    """XProf's op profile of device op metrics without HLO (GPU kernels of TensorFlow ops, program 0):
    op type > device op, under program "main" when by program; IDLE a leaf of the root."""
    from profscope.models.analysis.xprof.op_stats import IDLE

    prov = db.provenance or [""] * len(db)
    types: dict[str, list[dict]] = {}
    for i in range(len(db)):
        if db.category[i] != IDLE:
            types.setdefault(db.category[i], []).append(
                _leaf(db.name[i], int(db.time_ps[i]), int(db.occurrences[i]), prov[i], db.category[i], -1))
    categories = [_node(t, sum(c["metrics"]["rawTime"] for c in ops), sum(c["metrics"]["occurrences"] for c in ops),
                        _by_time(ops)) for t, ops in types.items()]
    op_time = sum(c["metrics"]["rawTime"] for c in categories)
    children = _by_time(categories)
    if by == "program" and children:
        children = [_node("main", op_time, 0, children)]
    idle_ps = db.total_time_ps - op_time
    if idle:
        children = _by_time(children + [_leaf(IDLE, idle_ps, 0, "", IDLE, 0)])
        if len(children) == 1:  # only IDLE: XProf's root is that leaf
            return children[0]
    return _node(f"by_{by}", op_time + (idle_ps if idle else 0), 0, children)


@register("op_profile")
def op_profile(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    tree = op_profile_tree(paths, params.get("group_by") or "program", task)
    return ToolData(json.dumps(tree, separators=(",", ":")).encode(), "json")
