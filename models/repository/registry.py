"""What a file format contributes to Profscope: the base class of the source
registry.

Each format is one module under `models/formats/` holding a `Format`
subclass: how it recognises a file (by name and content), the host name the
file gives, the tools it offers, and how it produces each tool's result.
`profscope.models.formats.FORMATS` lists them in the order they are asked; the
repository, window, command line, report and error messages ask that list
and nothing else, so a new format touches one module.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from google.protobuf.message import Message

from profscope.models.core.task import ProfileError, TaskState

# Tool names, as XProf's GetSessionToolData knows them.
MEMORY_PROFILE = "memory_profile"
TRACE_VIEWER = "trace_viewer"
KERNEL_STATS = "kernel_stats"
OP_STATS = "op_stats"
OVERVIEW = "overview"
# XProf's analysis tools of XSpaces (profscope.models.analysis.xprof). kernel_stats is both: for a host
# whose source is an XSpace it is XProf's kernel_stats, for a Chrome trace Profscope's (docs/TOOLS.md).
OVERVIEW_PAGE = "overview_page"
INPUT_PIPELINE_ANALYZER = "input_pipeline_analyzer"
FRAMEWORK_OP_STATS = "framework_op_stats"
HLO_STATS = "hlo_stats"
OP_PROFILE = "op_profile"
ROOFLINE_MODEL = "roofline_model"
MEMORY_VIEWER = "memory_viewer"
XPROF_TOOLS = (
    OVERVIEW_PAGE,
    INPUT_PIPELINE_ANALYZER,
    FRAMEWORK_OP_STATS,
    KERNEL_STATS,
    HLO_STATS,
    OP_PROFILE,
    ROOFLINE_MODEL,
    MEMORY_VIEWER,
)
# Every tool in the order the window and `profscope sessions` list them.
TOOLS = (MEMORY_PROFILE, TRACE_VIEWER, *XPROF_TOOLS, OP_STATS, OVERVIEW)
# Tools computed from a host's timeline (profscope.models.analysis.trace_stats), whatever its format.
TIMELINE_TOOLS = (KERNEL_STATS, OP_STATS, OVERVIEW)


def strip_suffix(name: str, suffixes: tuple[str, ...]) -> str | None:
    """The name without the longest of the suffixes it ends in (a host name
    from a file name), or None when it ends in none or is only the suffix."""
    for suffix in sorted(suffixes, key=len, reverse=True):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


class Format:
    """One kind of input file. Subclasses set the attributes and override the
    producers of the tools they offer; `files` is always the list of a host's
    paths of this format, in name order."""

    name = ""          # short id: `profscope formats`, error messages
    title = ""         # what it is (the README table's first column)
    where = ""         # where Profscope finds it (the README table's second column)
    patterns: tuple[str, ...] = ()  # file name patterns for the window's open dialog
    tools: tuple[str, ...] = ()
    combines_hosts = False  # a session's hosts can share one timeline (host "")
    # Its files are XSpaces: XProf's tools (XPROF_TOOLS, kernel_stats included) read them as XProf does.
    xprof = False
    # Its files hold XProf tools' results (TF 2.2-2.3's per-tool protos: profscope.models.analysis.xprof.tool_protos).
    serves_xprof_tools = False
    # When a host has files of several formats offering a tool, the lowest
    # rank serves it (an XSpace's memory profile before a derived one).
    rank = 10

    # ---------------------------------------------------------- recognition

    def host_in_folder(self, path: Path) -> str | None:
        """The host of a file met while scanning a folder, or None when the
        file is not of this format. Cheap: name first, then a look at the
        file's start; never raises."""
        return None

    def tools_of(self, path: Path) -> tuple[str, ...]:
        """The tools a file of this format has data for: all of the format's,
        or fewer when that is cheap to know (a small file without memory events)."""
        return self.tools

    def lacking(self, tool: str) -> str:
        """Why a file of this format that tools_of left `tool` out of has no data for it."""
        return ""

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        """(session, host) of a file opened on its own, or None when it is not
        of this format. A file named as in a session folder belongs to a
        session named after its folder. May raise ProfileError when the file
        is of this format but unusable, with the reason."""
        host = self.host_in_folder(path)
        return None if host is None else (path.parent.name, host)

    def refusal(self, path: Path) -> str | None:
        """Why a file whose name fits this format is not of it, from a cheap
        look at its content (e.g. "not a Chrome trace (no "traceEvents")"), or
        None when its name does not fit or it is of this format. Asked about
        files no format took, to list them as "not a profile" with the reason;
        never raises."""
        return None

    def why_not(self, path: Path) -> None:
        """Asked when no format took a lone file: raises ProfileError with the
        reason it is not of this format when its name suggests it is."""

    # ---------------------------------------------------------- tools

    def steps(self, files: list[Path]) -> list[str]:
        """The steps a host's timeline can be chosen by (event file tags)."""
        return []

    def memory_profile(self, files: list[Path], host: str, task: TaskState):
        """A profscope.models.data.memory_profile.MemoryProfileData."""
        raise ProfileError(f"{self.title} has no memory profile")

    def timeline(self, hosts: list[tuple[str, list[Path]]], step: str, task: TaskState):
        """A profscope.models.data.timeline.Timeline of one host, or of several when
        combines_hosts (a session's all-hosts view)."""
        raise ProfileError(f"{self.title} has no timeline")

    def chrome_trace(self, files: list[Path], host: str, step: str, task: TaskState) -> bytes | Iterable[bytes]:
        """The trace_viewer tool's JSON (Chrome trace-event format), whole or
        as chunks written as they are made."""
        raise ProfileError(f"{self.title} has no trace_viewer export")

    def tool_result(self, files: list[Path], tool: str) -> Message:
        """The message holding an XProf tool's result, for formats that serves_xprof_tools."""
        raise ProfileError(f"{self.title} has no {tool} data")
