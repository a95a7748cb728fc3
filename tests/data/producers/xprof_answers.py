"""What the XProf producers share: XProf's converter run on copies of
XSpaces in a scratch folder (it caches its results beside its inputs, never
beside the fixtures), and its answer written as a fixture file (gzipped over
64 KiB). Run in a throwaway venv with xprof installed."""

import gzip
import tempfile
from pathlib import Path

from xprof.convert import raw_to_tool_data


def xprof_answer(files: dict[str, bytes], tool: str, params: dict | None = None) -> bytes:
    """XProf's answer for `tool` on the XSpaces {file name: content}, as one session."""
    with tempfile.TemporaryDirectory() as tmp:
        copies = [Path(tmp) / name for name in files]
        for copy, data in zip(copies, files.values()):
            copy.write_bytes(data)
        data, _content_type = raw_to_tool_data.xspace_to_tool_data(
            [str(c) for c in copies], tool, {"use_saved_result": False, **(params or {})})
    return data.encode() if isinstance(data, str) else data


def write_answer(target: Path, data) -> None:
    data = data.encode() if isinstance(data, str) else data
    if len(data) > 64 << 10:
        target = target.with_name(target.name + ".gz")
        with open(target, "wb") as f, gzip.GzipFile(fileobj=f, mode="wb", compresslevel=9, mtime=0) as z:
            z.write(data)
    else:
        target.write_bytes(data)
    print(target, len(data))
