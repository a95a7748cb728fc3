"""Regenerate the *_pb2.py modules (and their .pyi type stubs) from the .proto files in this folder.

Run from anywhere: ``python protos/generate.py [OUT_DIR]``. The generated code
is committed; tests check that a fresh run gives the same files.

The schemas import each other as ``profscope/protos/<name>.proto``, so the
generated modules import ``profscope.protos.<name>_pb2``: protoc is given an
include root in which ``profscope/protos`` is this folder.
"""

import shutil
import sys
import tempfile
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent


def generate(out_dir: Path) -> list[Path]:
    """Writes <out_dir>/*_pb2.py and *_pb2.pyi and returns the written paths."""
    well_known = Path(protoc.__file__).resolve().parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "include"
        (root / "profscope").mkdir(parents=True)
        (root / "profscope" / "protos").symlink_to(HERE, target_is_directory=True)
        built = Path(tmp) / "out"
        built.mkdir()
        args = ["protoc", f"-I{root}", f"-I{well_known}", f"--python_out={built}", f"--pyi_out={built}"]
        args += [f"profscope/protos/{p.name}" for p in sorted(HERE.glob("*.proto"))]
        if protoc.main(args) != 0:
            raise RuntimeError("protoc failed")
        written = []
        for path in sorted((built / "profscope" / "protos").glob("*_pb2.py*")):
            written.append(out_dir / path.name)
            shutil.copyfile(path, written[-1])
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for path in generate(target):
        print(path)
