"""Writes XProf's output of its HLO tools (hlo_stats, op_profile by program
and by category, roofline_model, memory_viewer of every XLA module) for every
xplane fixture (run in a throwaway venv with xprof; not part of the test
suite):

    python xprof_hlo_tools.py tests/data/xprof

For each `<name>.xplane.pb` there, `tools/<name>.<tool>.json` (gzip -9 -n
when over 64 KiB) holds what `xprof.convert.raw_to_tool_data.xspace_to_tool_data(
[path], tool, params)` returns with params {"use_saved_result": False} (op_profile:
also {"group_by": "category"}, in `<name>.op_profile.by_category.json`). XProf's
memory_viewer reads `<module>.hlo_proto.pb` files, which it writes beside the
xplane from its metadata plane when it lists the tools (`xspace_to_tool_names`);
`<name>.memory_viewer.<module>.json` is its output for {"module_name": module} for
every module, `<name>.memory_viewer.modules.json` the sorted module list and
`<name>.memory_viewer.errors.json` the messages of XProf's converter for requests
it refuses (its folder written as "{dir}"). Each file is converted from a copy in a
folder of its own (XProf writes beside the file it reads).
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

from xprof.convert import _pywrap_profiler_plugin, raw_to_tool_data
from xprof_answers import write_answer

folder = Path(sys.argv[1])
out = folder / "tools"
out.mkdir(exist_ok=True)


def refusal(copy: Path, options: dict) -> str:
    """The message XProf's converter gives back with success False."""
    data, success = _pywrap_profiler_plugin.xspace_to_tools_data([str(copy)], "memory_viewer", options)
    assert not success
    return (data.decode() if isinstance(data, bytes) else data).replace(str(copy.parent), "{dir}")


for path in sorted(folder.glob("*.xplane.pb")):
    name = path.name[: -len(".xplane.pb")]
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        convert = lambda tool, **params: raw_to_tool_data.xspace_to_tool_data(
            [str(copy)], tool, {"use_saved_result": False, **params}
        )[0]
        write_answer(out / f"{name}.hlo_stats.json", convert("hlo_stats"))
        write_answer(out / f"{name}.op_profile.json", convert("op_profile"))
        write_answer(out / f"{name}.op_profile.by_category.json", convert("op_profile", group_by="category"))
        write_answer(out / f"{name}.roofline_model.json", convert("roofline_model"))
        raw_to_tool_data.xspace_to_tool_names([str(copy)])  # writes the <module>.hlo_proto.pb files
        modules = sorted(p.name[: -len(".hlo_proto.pb")] for p in Path(tmp).glob("*.hlo_proto.pb"))
        modules = [m for m in modules if m != "NO_MODULE"]  # XProf's mark of a profile without HLO
        write_answer(out / f"{name}.memory_viewer.modules.json", json.dumps(modules))
        for module in modules:
            write_answer(out / f"{name}.memory_viewer.{module}.json", convert("memory_viewer", module_name=module))
        errors = {
            "no module": refusal(copy, {"module_name": None, "program_id": None, "memory_space": ""}),
            "unknown module": refusal(copy, {"module_name": "no_such_module(1)", "memory_space": ""}),
            "unknown program id": refusal(copy, {"program_id": "987654321", "memory_space": ""}),
        }
        write_answer(out / f"{name}.memory_viewer.errors.json", json.dumps(errors, indent=1))
