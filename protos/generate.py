"""Regenerate the *_pb2.py modules from the .proto files in this folder.

Run from anywhere: ``python protos/generate.py [OUT_DIR]``. The generated code
is committed; tests check that a fresh run gives the same files.
"""

import sys
from pathlib import Path

from grpc_tools import protoc

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def generate(out_dir: Path) -> list[Path]:
    """Writes <out_dir>/protos/*_pb2.py and returns the written paths."""
    protos = sorted(HERE.glob("*.proto"))
    well_known = Path(protoc.__file__).resolve().parent / "_proto"
    out_dir.mkdir(parents=True, exist_ok=True)
    args = ["protoc", f"-I{ROOT}", f"-I{well_known}", f"--python_out={out_dir}"]
    args += [str(p.relative_to(ROOT)) for p in protos]
    if protoc.main(args) != 0:
        raise RuntimeError("protoc failed")
    return sorted((out_dir / "protos").glob("*_pb2.py"))


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    for path in generate(target):
        print(path)
