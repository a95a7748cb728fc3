"""XProf's per-tool protobufs that TensorFlow 2.2-2.3 wrote into a profile
session, one file per host and tool: `<host>.overview_page.pb` (OverviewPage),
`<host>.input_pipeline.pb` (InputPipelineAnalysisResult),
`<host>.tensorflow_stats.pb` (TfStatsDatabase) and `<host>.kernel_stats.pb`
(KernelStatsDb): recognition and reading. profscope.models.analysis.xprof.
tool_protos makes their tools' JSON. An xplane.pb of the same host serves
these tools instead (lower rank)."""

from __future__ import annotations

from pathlib import Path

from google.protobuf.message import DecodeError, Message

from profscope.models.core.sniff import proto_fields
from profscope.models.core.task import ProfileError
from profscope.models.repository.registry import (
    FRAMEWORK_OP_STATS,
    INPUT_PIPELINE_ANALYZER,
    KERNEL_STATS,
    OVERVIEW_PAGE,
    Format,
    strip_suffix,
)
from profscope.protos import input_pipeline_pb2, kernel_stats_pb2, overview_page_pb2, tf_stats_pb2

# file suffix -> (the tool it serves, its message)
FILES: dict[str, tuple[str, type[Message]]] = {
    ".overview_page.pb": (OVERVIEW_PAGE, overview_page_pb2.OverviewPage),
    ".input_pipeline.pb": (INPUT_PIPELINE_ANALYZER, input_pipeline_pb2.InputPipelineAnalysisResult),
    ".tensorflow_stats.pb": (FRAMEWORK_OP_STATS, tf_stats_pb2.TfStatsDatabase),
    ".kernel_stats.pb": (KERNEL_STATS, kernel_stats_pb2.KernelStatsDb),
}
# protobuf wire types of field types (varint 0, 64-bit 1, length-delimited 2, 32-bit 5)
_WIRE = {"double": 1, "fixed64": 1, "sfixed64": 1, "float": 5, "fixed32": 5, "sfixed32": 5,
         "string": 2, "bytes": 2, "message": 2}


def _suffix(name: str) -> str | None:
    return next((s for s in FILES if strip_suffix(name, (s,)) is not None), None)


def _first_field_fits(path: Path, message: type[Message]) -> bool:
    """Whether the file is empty (a message with every field default) or
    starts with the tag of one of the message's fields, with its wire type:
    a cheap look that tells these files from others of the same name."""
    try:
        with open(path, "rb") as f:
            head = f.read(10)
    except OSError:
        return False
    if not head:
        return True
    fields = proto_fields(head, 1)
    if not fields:
        return False
    number, wire = fields[0]
    field = message.DESCRIPTOR.fields_by_number.get(number)
    if field is None:
        return False
    if field.is_repeated and wire == 2:
        return True  # packed numbers
    kind = {field.TYPE_MESSAGE: "message", field.TYPE_STRING: "string", field.TYPE_BYTES: "bytes",
            field.TYPE_DOUBLE: "double", field.TYPE_FLOAT: "float", field.TYPE_FIXED64: "fixed64",
            field.TYPE_FIXED32: "fixed32", field.TYPE_SFIXED64: "sfixed64",
            field.TYPE_SFIXED32: "sfixed32"}.get(field.type, "varint")
    return _WIRE.get(kind, 0) == wire


def read(path: Path, message: type[Message]) -> Message:
    try:
        return message.FromString(path.read_bytes())
    except (DecodeError, OSError) as e:
        raise ProfileError(f"{path}: not a readable {message.DESCRIPTOR.name} (XProf tool data): {e}") from None


class ToolProtosFormat(Format):
    name = "tool_protos"
    title = "XProf's per-tool protobufs (TensorFlow 2.2-2.3): overview, input pipeline, TF stats, kernel stats"
    where = ("`<host>.overview_page.pb`, `<host>.input_pipeline.pb`, `<host>.tensorflow_stats.pb`, "
             "`<host>.kernel_stats.pb` in a session, or a single file")
    patterns = tuple(f"*{s}" for s in FILES)
    tools = (OVERVIEW_PAGE, INPUT_PIPELINE_ANALYZER, FRAMEWORK_OP_STATS, KERNEL_STATS)
    serves_xprof_tools = True
    rank = 20  # an xplane.pb of the same host serves these tools

    def host_in_folder(self, path: Path) -> str | None:
        suffix = _suffix(path.name)
        if suffix is None or not _first_field_fits(path, FILES[suffix][1]):
            return None
        return strip_suffix(path.name, (suffix,))

    def tools_of(self, path: Path) -> tuple[str, ...]:
        suffix = _suffix(path.name)
        return (FILES[suffix][0],) if suffix else ()

    def refusal(self, path: Path) -> str | None:
        suffix = _suffix(path.name)
        if suffix is None or _first_field_fits(path, FILES[suffix][1]):
            return None
        return f"not XProf's {FILES[suffix][1].DESCRIPTOR.name} (its first field is none of the message's)"

    def why_not(self, path: Path) -> None:
        if reason := self.refusal(path):
            raise ProfileError(f"{path}: {reason}")

    def tool_result(self, files: list[Path], tool: str) -> Message:
        for path in files:
            suffix = _suffix(path.name)
            if suffix and FILES[suffix][0] == tool:
                return read(path, FILES[suffix][1])
        raise ProfileError(f"no {tool} file among {', '.join(p.name for p in files)}")


FORMAT = ToolProtosFormat()
