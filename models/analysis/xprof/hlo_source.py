"""Where a session's XLA modules come from, as XProf finds them, and their
names: each XSpace's "/host:metadata" plane holds one event metadata per
compiled program, with the serialised HloProto in its stat "Hlo Proto" and
the program id in "program_id" (the metadata id when absent); a module is
named "<HloModuleProto.name>(<program id>)" and the first of a program id or
name wins. XProf also reads `<module>.hlo_proto.pb` files in the session's
folder (it writes them there from the metadata plane; Profscope reads them
but writes nothing). Apart from hlo.py, which decodes the modules: listing a
session's tools asks whether a file has modules, and protobuf loads only
where a metadata plane is there to parse."""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from profscope.models.analysis.xprof import offers
from profscope.models.core import _protowire as wire
from profscope.models.core.files import readable_errors
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats.xspace.xplane import METADATA_PLANE, map_file, span_text, unreadable

HLO_PROTO_STAT, PROGRAM_ID_STAT = "Hlo Proto", "program_id"
HLO_PROTO_SUFFIX = ".hlo_proto.pb"
NO_MODULE = "NO_MODULE"  # XProf's file name marking a profile without HLO
_SPACE_PLANES, _PLANE_NAME = 1, 2  # xplane.proto's field numbers
HLO_MODULE = 1  # HloProto.hlo_module


def xspace_modules(path: Path, task: TaskState | None = None) -> dict[str, bytes]:
    """The modules in an XSpace's metadata plane: name(program id) -> the
    serialised HloProto. Only the metadata plane is decoded."""
    task = task or TaskState()
    buf = map_file(path, task, weight=0.1)
    if not len(buf):
        raise ProfileError(f"{path}: the file is empty")
    try:
        (planes,) = wire.find_fields(buf, 0, len(buf), [_SPACE_PLANES])
        (names,) = wire.decode_messages(buf, planes, [(_PLANE_NAME, "s")])
        wanted = METADATA_PLANE.encode()
        found = [(s, n) for (s, n), (ns, nn) in zip(planes.tolist(), names.tolist())
                 if nn == len(wanted) and buf[ns : ns + nn] == wanted]
        metadata = []
        if found:  # protobuf loads only here
            from profscope.protos import xplane_pb2

            metadata = [xplane_pb2.XPlane.FromString(bytes(buf[s : s + n])) for s, n in found]
    except Exception as e:  # noqa: BLE001 - the wire decoder's ValueError, protobuf's DecodeError
        raise unreadable(path, e) from None
    by_program: dict[int, bytes] = {}
    for plane in metadata:
        stat_ids = {k: v.name for k, v in plane.stat_metadata.items()}
        for md_id, md in plane.event_metadata.items():
            proto, program_id = None, md_id
            for stat in md.stats:
                name = stat_ids.get(stat.metadata_id)
                if name == HLO_PROTO_STAT and stat.WhichOneof("value") == "bytes_value":
                    proto = stat.bytes_value
                elif name == PROGRAM_ID_STAT and stat.WhichOneof("value") in ("int64_value", "uint64_value"):
                    program_id = stat.int64_value or stat.uint64_value
            if proto is not None:
                by_program.setdefault(program_id, proto)
    modules: dict[str, bytes] = {}
    for program_id, proto in by_program.items():
        name = _module_name(proto)
        if name is not None:  # XProf skips protos that do not parse
            modules.setdefault(f"{name}({program_id})", proto)
    return modules


def _module_name(proto: bytes) -> str | None:
    """HloProto.hlo_module.name, read from the wire (a program's proto can be
    large: only its name is decoded to list it)."""
    try:
        (module,) = wire.find_fields(proto, 0, len(proto), [HLO_MODULE])
        if not len(module):
            return ""
        s, n = (int(x) for x in module[-1])
        (name,) = wire.find_fields(proto, s, s + n, [1])
        return span_text(proto, name[-1]) if len(name) else ""
    except ValueError:
        return None


class ModuleSource:
    """The modules of a session: its xplanes' metadata planes and the
    `<module>.hlo_proto.pb` files in its folder (the file wins, as XProf
    reads the files)."""

    def __init__(self, paths: list[Path], task: TaskState | None = None):
        self.paths = [Path(p) for p in paths]
        self.folder = self.paths[0].parent if self.paths else Path(".")
        self.task = task or TaskState()

    @cached_property
    def embedded(self) -> dict[str, bytes]:
        modules: dict[str, bytes] = {}
        for path in self.paths:
            for name, proto in xspace_modules(path, self.task).items():
                modules.setdefault(name, proto)
        return modules

    def files(self) -> dict[str, Path]:
        try:
            return {
                p.name[: -len(HLO_PROTO_SUFFIX)]: p
                for p in self.folder.iterdir()
                if p.name.endswith(HLO_PROTO_SUFFIX) and p.name != NO_MODULE + HLO_PROTO_SUFFIX
            }
        except OSError:
            return {}

    def names(self) -> list[str]:
        """Every module, sorted by name (XProf's module list order)."""
        return sorted(set(self.embedded) | set(self.files()))

    def load(self, name: str) -> bytes:
        file = self.files().get(name)
        if file is not None:
            with readable_errors(file):
                return file.read_bytes()
        if name in self.embedded:
            return self.embedded[name]
        # XProf's message: it looks for the module's file in the session folder.
        raise ProfileError(f"{self.folder}/{name}{HLO_PROTO_SUFFIX}; No such file or directory")

    def by_program_id(self, program_id: str) -> str:
        """XProf's lookup by program id: the first module whose name holds it."""
        for name in self.names():
            if program_id in name:
                return name
        raise ProfileError(f"HLO proto file containing program ID {program_id} not found in {self.folder}")


def module_names(paths: list[Path], task: TaskState | None = None) -> list[str]:
    """Every module memory_viewer can show (its module_name values), sorted."""
    return ModuleSource(paths, task).names()


@offers("memory_viewer")
def has_modules(path: Path) -> bool:
    """Whether XProf lists memory_viewer for a file: it has an XLA module to show."""
    try:
        return bool(module_names([path]))
    except ProfileError:
        return False
