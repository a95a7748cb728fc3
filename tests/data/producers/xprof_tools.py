"""Writes XProf's output of its OpStats tools for every xplane fixture
(run in a throwaway venv with xprof; not part of the test suite):

    python xprof_tools.py tests/data/xprof

For each `<name>.xplane.pb` there and each tool, `tools/<name>.<tool>.json`
(gzip -9 -n when over 64 KiB) holds what
`xprof.convert.raw_to_tool_data.xspace_to_tool_data([path], tool,
{"use_saved_result": False})` returns. XProf caches results beside the
xplane it reads, so each file is converted from a copy in a folder of its own.
"""

import gzip
import shutil
import sys
import tempfile
from pathlib import Path

from xprof.convert import raw_to_tool_data

TOOLS = ("overview_page", "input_pipeline_analyzer", "framework_op_stats", "kernel_stats")

folder = Path(sys.argv[1])
out = folder / "tools"
out.mkdir(exist_ok=True)
for path in sorted(folder.glob("*.xplane.pb")):
    name = path.name[: -len(".xplane.pb")]
    for tool in TOOLS:
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / path.name
            shutil.copyfile(path, copy)
            data, _content_type = raw_to_tool_data.xspace_to_tool_data([str(copy)], tool, {"use_saved_result": False})
        data = data.encode() if isinstance(data, str) else data
        target = out / f"{name}.{tool}.json"
        if len(data) > 64 << 10:
            target = target.with_suffix(".json.gz")
            with open(target, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0) as z:
                z.write(data)
        else:
            target.write_bytes(data)
        print(target, len(data))
