"""Writes XProf's output of its OpStats tools for every xplane fixture
(run in a throwaway venv with xprof; not part of the test suite):

    python xprof_tools.py tests/data/xprof

For each `<name>.xplane.pb` there and each tool, `tools/<name>.<tool>.json`
(gzip -9 -n when over 64 KiB) holds what
`xprof.convert.raw_to_tool_data.xspace_to_tool_data([path], tool,
{"use_saved_result": False})` returns. XProf caches results beside the
xplane it reads, so each file is converted from a copy in a folder of its own.

Also `tools/small+tfdata.<tool>.json`: XProf's answer for the two files
together (a session of two hosts; XProf takes the list), and `tools/small_nohost.<tool>.json`: the same for `small.xplane.pb`
without its `/host:CPU` plane (no host ops, no steps; tests/test_xprof_tools.py
builds that variant with the real schema).
"""

import sys
import tempfile
from pathlib import Path

from tensorflow.tsl.profiler.protobuf import xplane_pb2
from xprof_answers import write_answer, xprof_answer

TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats")

folder = Path(sys.argv[1])
out = folder / "tools"
out.mkdir(exist_ok=True)


def convert(path: Path | list[Path], tool: str) -> bytes:
    paths = path if isinstance(path, list) else [path]
    names = [paths[0].name] if len(paths) == 1 else [f"host{k}.xplane.pb" for k in range(len(paths))]
    return xprof_answer({n: p.read_bytes() for n, p in zip(names, paths)}, tool)


with tempfile.TemporaryDirectory() as tmp:
    space = xplane_pb2.XSpace.FromString((folder / "small.xplane.pb").read_bytes())
    keep = [p for p in space.planes if p.name != "/host:CPU"]
    del space.planes[:]
    space.planes.extend(keep)
    variant = Path(tmp) / "small_nohost.xplane.pb"
    variant.write_bytes(space.SerializeToString())
    for tool in TOOLS:
        (out / f"small_nohost.{tool}.json").write_bytes(convert(variant, tool))

for tool in TOOLS:
    (out / f"small+tfdata.{tool}.json").write_bytes(
        convert([folder / "small.xplane.pb", folder / "tfdata.xplane.pb"], tool))

for path in sorted(folder.glob("*.xplane.pb")):
    name = path.name[: -len(".xplane.pb")]
    for tool in TOOLS:
        write_answer(out / f"{name}.{tool}.json", convert(path, tool))
