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
ops on a GPU XProf's OpProfileBuilder tree (module > HLO category >
instruction, with XLA's GPU cost analysis against the GPU's roofs), the
TensorFlow kernels beside them leaves of program 0 (its module's name, else
"main") > op type."""

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
    from profscope.models.analysis.xprof.tpu_steps import tpu_and_gpu_hosts

    mixed = tpu_and_gpu_hosts(spaces)
    if mixed is not None:  # TPU and GPU hosts: one tree of both (tpu_profile.py)
        from profscope.models.analysis.xprof.tpu_profile import beside_gpus_op_profile

        return beside_gpus_op_profile(spaces, paths, by, *mixed)
    device = device_stats(spaces, paths, steps=False)
    if device.hardware_type == "TPU":  # TensorCores: from the ops' metadata (tpu_profile.py)
        from profscope.models.analysis.xprof.tpu_profile import tpu_op_profile

        tree = tpu_op_profile(spaces, paths, by)
        tree["deviceType"] = device.run_hardware or tree["deviceType"]  # a host's GPUs beside: its run environment
        return tree
    if device.xla:
        raise ProfileError(device.xla)
    if device.xla_ops is not None:
        from profscope.models.analysis.xprof.device_op_metrics import first_gpu_roofs

        roofs = first_gpu_roofs(read_spaces(paths, task))
        return {key: _xla_tree(device.ops, device.xla_ops, by, True, roofs), "deviceType": device.hardware_type,
                f"{key}ExcludeIdle": _xla_tree(device.ops, device.xla_ops, by, False, roofs),
                "aggDvfsTimeScaleMultiplier": 0}
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


LIMIT = 100  # XProf's children per node (op_profile_limit) below the levels it keeps whole


class _Acc:
    """A node of XProf's op profile while it is built: its op metrics summed, its children in insertion order."""

    def __init__(self, name: str, xla: dict | None = None) -> None:
        self.name, self.xla = name, xla
        self.time = self.occurrences = 0
        self.flops = self.hbm = 0.0
        self.children: list[_Acc] = []
        self.index: dict[str, _Acc] = {}

    def child(self, name: str) -> _Acc:
        if name not in self.index:
            self.index[name] = _Acc(name)
            self.children.append(self.index[name])
        return self.index[name]

    def add(self, time: int, occurrences: int, flops: float, hbm: float) -> None:
        self.time += time
        self.occurrences += occurrences
        self.flops += flops
        self.hbm += hbm


def _xla_tree(db, ops, by: str, idle: bool, roofs) -> dict:
    """XProf's op profile of XLA ops (OpProfileBuilder): by program, module > category > instruction, or by
    category, category > instruction; IDLE a leaf of the root. The root and modules add their ops' time, FLOPs
    and HBM bytes (no occurrences); categories and leaves also the occurrences. Instructions of one name in a
    category (by category: of several modules) are one node "<name> and its duplicate(s)" over them. Children
    by time, most first (the children of a fusion by FLOPs), at most LIMIT below the levels kept whole."""
    from profscope.models.analysis.xprof.op_stats import IDLE

    flops, _bytes, hbm = db.costs()
    root = _Acc(f"by_{by}")
    idle_row = len(db) - 1
    for i in range(len(db)):
        if db.name[i].startswith("region") or (db.category[i] == IDLE and not idle):
            continue
        m = (int(db.time_ps[i]), int(db.occurrences[i]), float(flops[i]), float(hbm[i]))
        root.add(m[0], 0, m[2], m[3])
        if i == idle_row:
            leaf = _Acc(IDLE, _xla_info(IDLE, "", "", IDLE, "0", None, 0))
            leaf.add(*m)
            root.children.append(leaf)
            continue
        parent = root
        if by == "program":
            parent = root.child(ops.program_names.get(ops.program_id[i], "main"))
            parent.add(m[0], 0, m[2], m[3])
        category = parent.child(db.category[i])
        dedup = category.child(db.name[i])
        leaf = _Acc(db.name[i], _xla_info(db.name[i], ops.expression[i], ops.provenance[i], db.category[i],
                                          str(ops.program_id[i]), ops.source[i], -1))
        dedup.children.append(leaf)
        for node in (category, dedup, leaf):
            node.add(*m)
    root.time = db.total_time_ps if idle else db.total_op_time_ps
    levels = 2 if by == "program" else 1
    peak_hbm = roofs.hbm_bytes_per_s / 2**30 if roofs is not None else 0.0
    out = _emit(root, levels, roofs.peak_gflops if roofs is not None else 0.0, peak_hbm, root.time)
    return out


def _emit(node: _Acc, level: int, peak_gflops: float, peak_hbm_gib: float, total: int) -> dict:
    """A node as XProf writes it: its metrics against the roofs, its children sorted and pruned; a group of
    duplicates of one instruction becomes that instruction's node (one) or "<name> and its duplicate(s)"."""
    from profscope.models.analysis.xprof.cpp_sort import std_partial_sort

    children = [_emit(c, level - 1, peak_gflops, peak_hbm_gib, total) for c in node.children]
    key = "rawFlops" if node.xla is not None and node.xla["category"].endswith("fusion") else "rawTime"
    count = len(children)
    k = count if level > 0 else LIMIT
    if len(children) > 1:  # a heap sort (std::partial_sort): equal children end where it leaves them
        children = std_partial_sort(children, k, lambda a, b: a["metrics"][key] > b["metrics"][key])[:k]
    ns = node.time / 1e3
    uncapped = (node.flops / ns / peak_gflops if ns and peak_gflops else 0.0) * (node.time / total if total else 0)
    hbm_gib = node.hbm / ns / 1.073741824 if ns else 0.0
    metrics = empty_metrics()
    metrics.update(flops=_number(min(uncapped / (node.time / total), 1.0) * node.time / total) if uncapped else 0,
                   uncappedFlops=_number(uncapped), rawTime=node.time, rawFlops=_number(node.flops),
                   bf16Flops=_number(node.flops), occurrences=node.occurrences,
                   avgTimePs=_number(node.time / node.occurrences) if node.occurrences else 0,
                   bandwidthUtils=[_number(min(hbm_gib / peak_hbm_gib, 1.0)) if peak_hbm_gib else 0, 0, 0],
                   rawBytesAccessedArray=[_number(node.hbm), 0, 0])
    if node.xla is None and node.children and all(c.xla is not None for c in node.children):
        if len(children) == 1:  # a group of one instruction: that instruction
            return children[0]
        xla = dict(children[0]["xla"])
        if xla["category"].endswith("fusion"):
            xla["provenance"] = ""
        else:  # XProf copies the top child's layout too (an empty one), placed after the category
            items = list(xla.items())
            at = list(xla).index("category") + 1
            xla = dict(items[:at] + [("layout", {"dimensions": []})] + items[at:])
        return {"name": f"{children[0]['name']} and its duplicate(s)", "metrics": metrics, "children": children,
                "xla": xla, "numChildren": count}
    out: dict = {"name": node.name, "metrics": metrics, "children": children}
    if node.xla is not None:
        out["xla"] = node.xla
    out["numChildren"] = count
    return out


def _xla_info(name: str, expression: str, provenance: str, category: str, program: str, source, line: int) -> dict:
    file_name, line_number, frames = "", line, ""
    if source is not None:
        file_name, line_number, frames = source.file_name, source.line_number, source.stack_frame
        frames = "".join(f"{f}\n" for f in frames.split("\n")) if frames else ""
    return {"op": "", "expression": expression, "provenance": provenance, "category": category,
            "computationPrimitiveSize": 0, "fingerprint": "0", "programId": program,
            "sourceInfo": {"fileName": file_name, "lineNumber": line_number, "stackFrame": frames},
            "xprofKernelMetadata": ""}


@register("op_profile")
def op_profile(paths: list[Path], params: dict[str, str], task: TaskState) -> ToolData:
    tree = op_profile_tree(paths, params.get("group_by") or "program", task)
    return ToolData(json.dumps(tree, separators=(",", ":")).encode(), "json")
