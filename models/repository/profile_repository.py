"""Profile repositories: what sessions a path holds and each tool's data.

`ProfileRepository` mirrors the ProfileAnalysis service of
profiler_analysis.proto: `enum_sessions()` is EnumSessions and `tool_data()`
is GetSessionToolData. The window and the command line use only this
interface, so a remote repository can stand in for a local one.

A local repository opens any of:
- a TensorBoard log dir: every `plugins/profile` folder below it (runs such
  as `<logdir>/train/plugins/profile` included);
- a profile root `<logdir>/plugins/profile` (its subfolders are sessions);
- one session folder holding `<host>.<tool file>` files;
- a single file;
- an archive (`.tar`, `.tar.gz`, `.tgz`, `.zip`) of any of these, unpacked
  into a temporary folder of its own (profscope.models.core.archives).
Files whose name or content makes them look like profiles but that no format
takes are kept with the reason (`not_profiles()`), not listed as hosts.
Only paths found by listing the opened folder are read: a session or host
name never becomes part of a path, and links leading out of it are skipped.
"""

from __future__ import annotations

import os
import threading
import weakref
from abc import ABC, abstractmethod
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from profscope.models.analysis.xprof import XPROF_OFFERED
from profscope.models.analysis.xprof import XPROF_TOOLS as XPROF_PRODUCERS
from profscope.models.core import archives
from profscope.models.core.files import stays_inside
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.tool_data import ToolData
from profscope.models.formats import FORMATS, not_a_profile
from profscope.models.formats.xspace.xplane import decode_once
from profscope.models.repository.registry import (
    MEMORY_PROFILE,
    TIMELINE_TOOLS,
    TOOLS,
    TRACE_VIEWER,
    XPROF_TOOLS,
    Format,
)

if TYPE_CHECKING:
    from profscope.models.data.memory_profile import MemoryProfileData
    from profscope.models.data.timeline import Timeline

MAX_DEPTH = 6  # how deep to look below an opened folder
WHERE_TO_LOOK = "`profscope formats` lists what Profscope reads."  # ends every "found nothing" message


@dataclass(frozen=True)
class SessionInfo:
    """A profile session: its hosts and the tools that have data."""

    name: str
    hosts: tuple[str, ...]
    tools: tuple[str, ...]


class ProfileRepository(ABC):
    """Sessions, hosts and tool data of one opened location."""

    location: str

    @abstractmethod
    def enum_sessions(self) -> list[SessionInfo]: ...

    def not_profiles(self) -> list[tuple[str, str]]:
        """(path, reason) of the files met that look like profiles but are not."""
        return []

    def why_missing(self, session: str, tool: str) -> str:
        """Why a session lists no data for a tool its files' formats offer ("" when unknown)."""
        return ""

    @abstractmethod
    def memory_profile(self, session: str, host: str, task: TaskState | None = None) -> MemoryProfileData:
        """The decoded memory profile of one host, for in-process use."""

    @abstractmethod
    def steps(self, session: str, host: str) -> list[str]:
        """The traced steps (run metadata tags) a host's timeline can show."""

    @abstractmethod
    def step_timeline(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> Timeline:
        """The decoded step timeline of one host (step "" = the first)."""

    def decoding_once(self) -> AbstractContextManager:
        """Within, on this thread: a file that several readers take is decoded
        once (the window's job: a host's timeline, then XProf's tools of it);
        let go at the end."""
        return decode_once()

    def combines_hosts(self, session: str) -> bool:
        """Whether the session's timeline can show all its hosts at once (host "")."""
        return False

    def session(self, name: str) -> SessionInfo:
        for s in self.enum_sessions():
            if s.name == name:
                return s
        names = ", ".join(s.name for s in self.enum_sessions())
        raise ProfileError(f"no session {name!r} in {self.location} (sessions: {names})")

    def session_or_latest(self, name: str = "") -> str:
        """The named session, or the latest one when no name is given (session names are timestamps)."""
        if name:
            return self.session(name).name
        names = sorted(s.name for s in self.enum_sessions())
        if not names:
            raise ProfileError(f"{self.location} has no profile sessions")
        return names[-1]

    def resolve_host(self, session: str, host: str, tool: str) -> str:
        """The host to use: the given one if the session has it, else the only one."""
        info = self.session(session)
        if tool not in info.tools:
            why = f": {why}" if (why := self.why_missing(session, tool)) else ""
            raise ProfileError(
                f"session {session!r} has no {tool} data (tools: {', '.join(info.tools) or 'none'}){why}")
        hosts = self.hosts_with(session, tool)
        if host:
            if host not in hosts:
                raise ProfileError(
                    f"session {session!r} has no {tool} data for host {host!r} (hosts: {', '.join(hosts)})"
                )
            return host
        if len(hosts) > 1:
            raise ProfileError(f"{tool} shows one host at a time; choose one of: {', '.join(hosts)}")
        return hosts[0]

    def hosts_with(self, session: str, tool: str) -> list[str]:
        """The hosts of a session that have data for a tool."""
        info = self.session(session)
        return list(info.hosts) if tool in info.tools else []

    def tool_data(
        self,
        session: str,
        tool: str,
        host: str = "",
        params: dict[str, str] | None = None,
        task: TaskState | None = None,
    ) -> ToolData:
        """GetSessionToolData: the tool's output for a session and host."""
        params = params or {}
        # Each kind of tool's modules load when it is asked for (a command runs one tool).
        if tool == MEMORY_PROFILE:
            from profscope.models.data.memory_profile import xprof_json_chunks

            host = self.resolve_host(session, host, tool)
            profile = self.memory_profile(session, host, task)
            xprof_form = params.get("xprof_form", "").lower() in ("1", "true", "yes")
            return ToolData(xprof_json_chunks(profile, xprof_form=xprof_form), "json")
        if tool == TRACE_VIEWER:
            host = self.resolve_host(session, host, tool)
            return ToolData(self.chrome_trace(session, host, params.get("step", ""), task), "json")
        if tool in XPROF_TOOLS and (own := self.tool_files(session, host, tool)) is not None:
            from profscope.models.analysis.xprof import tool_protos

            return tool_protos.tool_data(tool, own[0].tool_result(own[1], tool))
        if tool in XPROF_TOOLS and (files := self.xprof_files(session, host, tool)) is not None:
            with self.decoding_once():  # a tool that reads a file twice (OpStats, then kernels) decodes it once
                return XPROF_PRODUCERS[tool](files, params, task or TaskState())
        if tool in TIMELINE_TOOLS:
            from profscope.models.analysis import trace_stats

            # Host "" of a session whose hosts share a timeline: every host, side by side.
            if host or not self.combines_hosts(session):
                host = self.resolve_host(session, host, tool)
            timeline = self.step_timeline(session, host, params.get("step", ""), task)
            try:
                note = trace_stats.unclassified_note(timeline)
                return ToolData(trace_stats.tool_json(timeline, tool, params), "json", [note] if note else [])
            except ValueError as e:
                raise ProfileError(str(e)) from None
        if tool in TOOLS:
            self.resolve_host(session, host, tool)  # says why the session has no data for it
        raise ProfileError(f"unknown tool {tool!r}; Profscope offers: {', '.join(TOOLS)}")

    @abstractmethod
    def chrome_trace(
        self, session: str, host: str, step: str = "", task: TaskState | None = None
    ) -> bytes | Iterable[bytes]:
        """Chrome trace-event JSON of a host's step timeline (whole or in chunks)."""

    def tool_files(self, session: str, host: str, tool: str) -> tuple[Format, list[Path]] | None:
        """The format and files that serve an XProf tool themselves for a host
        (TF 2.2-2.3's per-tool protos), or None when they do not."""
        return None

    def xprof_files(self, session: str, host: str, tool: str) -> list[Path] | None:
        """The XSpaces XProf's `tool` reads for a host (host "": every host of
        the session, as XProf combines them), or None when the host's source
        of the tool is not an XSpace (kernel_stats of a Chrome trace)."""
        return None


@dataclass
class _Session:
    name: str
    # host -> format -> that host's files of the format, in name order
    hosts: dict[str, dict[Format, list[Path]]] = field(default_factory=dict)
    # (host, format) -> the tools its files have data for
    offers: dict[tuple[str, Format], set[str]] = field(default_factory=dict)

    def add(self, host: str, fmt: Format, path: Path, tools: tuple[str, ...] | None = None) -> None:
        self.hosts.setdefault(host, {}).setdefault(fmt, []).append(path)
        tools = fmt.tools if tools is None else tools
        # XProf's tools that Profscope computes (profscope.models.analysis.xprof registers them).
        tools = tuple(t for t in tools if not (fmt.xprof and t in XPROF_TOOLS) or (
            t in XPROF_PRODUCERS and (t not in XPROF_OFFERED or XPROF_OFFERED[t](path))))
        self.offers.setdefault((host, fmt), set()).update(tools)

    def source(self, host: str, tool: str) -> tuple[Format, list[Path]] | None:
        """The format (and files) that serves a tool for a host: the lowest rank."""
        offering = [(f, files) for f, files in self.hosts.get(host, {}).items() if tool in self.offers[host, f]]
        return min(offering, key=lambda item: item[0].rank, default=None)

    def host_tools(self, host: str) -> list[str]:
        return [t for t in TOOLS if self.source(host, t)]

    def info(self) -> SessionInfo:
        tools = {t for h in self.hosts for t in self.host_tools(h)}
        return SessionInfo(self.name, tuple(sorted(self.hosts)), tuple(t for t in TOOLS if t in tools))


class LocalRepository(ProfileRepository):
    """A folder or file on this machine."""

    def __init__(self, path: str | os.PathLike, task: TaskState | None = None):
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        if not self.path.exists():
            raise ProfileError(f"{self.path}: no such file or folder")
        # What is scanned: the path, or the folder an archive was unpacked into (removed with the repository).
        self._folder, self._top = self.path, self.path.name
        if archives.is_archive(self.path):
            import shutil  # only an archive's folder to remove

            self._folder, self._top = archives.unpack(self.path, task), archives.stem(self.path)
            weakref.finalize(self, shutil.rmtree, str(self._folder), True)
        self._root = (self._folder if self._folder.is_dir() else self._folder.parent).resolve()
        # What was read and is still held somewhere (see _shared), by what and which files in which state.
        self._held: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
        self._held_lock = threading.Lock()
        self._not_profiles: list[tuple[str, str]] = []
        self._sessions = self._scan()
        if not self._sessions:
            raise ProfileError(self._nothing_found())

    def _nothing_found(self) -> str:
        if not self._not_profiles:
            return f"{self.path}: found no profile data. {WHERE_TO_LOOK}"
        first, reason = self._not_profiles[0]
        more = len(self._not_profiles) - 1
        what = "files that are not profiles" if more > 1 else "a file that is not one"
        others = f" (and {more} more: {what} either)" if more else ""
        return f"{self.path}: found no profiles; {first} is not a profile: {reason}{others}. {WHERE_TO_LOOK}"

    def not_profiles(self) -> list[tuple[str, str]]:
        return list(self._not_profiles)

    def why_missing(self, session: str, tool: str) -> str:
        s = self._sessions.get(session)
        reasons = [f.lacking(tool) for (host, f), tools in (s.offers.items() if s else ()) if tool not in tools]
        return next((r for r in reasons if r), "")

    def _shown(self, path: Path) -> str:
        """A path as the user knows it: inside an archive, the archive's path and the member's."""
        if self._folder is self.path:
            return str(path)
        return f"{self.path}/{path.relative_to(self._folder).as_posix()}"

    def enum_sessions(self) -> list[SessionInfo]:
        return [s.info() for s in self._sessions.values()]

    def hosts_with(self, session: str, tool: str) -> list[str]:
        self.session(session)
        s = self._sessions[session]
        return [h for h in sorted(s.hosts) if s.source(h, tool)]

    def host_paths(self, session: str, host: str) -> list[Path]:
        """The files the scan found for a host (what a remote client downloads)."""
        self.session(session)
        return [p for files in self._sessions[session].hosts.get(host, {}).values() for p in files]

    def _source(self, session: str, host: str, tool: str) -> tuple[str, Format, list[Path]]:
        host = self.resolve_host(session, host, tool)
        found = self._sessions[session].source(host, tool)
        assert found is not None  # resolve_host chose a host with the tool
        fmt, files = found
        return host, fmt, files

    def memory_profile(self, session: str, host: str, task: TaskState | None = None) -> MemoryProfileData:
        host, fmt, files = self._source(session, host, MEMORY_PROFILE)

        def read() -> MemoryProfileData:
            profile = fmt.memory_profile(files, host, task or TaskState())
            profile.num_hosts = len(self.hosts_with(session, MEMORY_PROFILE))
            return profile

        return self._shared((MEMORY_PROFILE, session, host), files, read)

    def steps(self, session: str, host: str) -> list[str]:
        if not host and self.combines_hosts(session):
            return []  # formats that combine hosts have no steps to choose
        host, fmt, files = self._source(session, host, TRACE_VIEWER)
        return fmt.steps(files)

    def step_timeline(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> Timeline:
        task = task or TaskState()
        if not host and (fmt := self._combined_format(session)):
            s = self._sessions[session]
            hosts = [(h, s.hosts[h][fmt]) for h in sorted(s.hosts) if fmt in s.hosts[h]]
        else:
            host, fmt, files = self._source(session, host, TRACE_VIEWER)
            hosts = [(host, files)]
        return self._shared(
            (TRACE_VIEWER, session, host, step),
            [p for _, files in hosts for p in files],
            lambda: fmt.timeline(hosts, step, task),
        )

    def _shared(self, key: tuple, files: list[Path], read):
        """read()'s result, or the same one read before if something still
        holds it and its files have not changed since: the window's view and
        a query over that host share one copy instead of each reading it.
        Nothing is kept alive here (weak references)."""
        try:
            key += tuple((str(p), st.st_mtime_ns, st.st_size) for p in files for st in [p.stat()])
        except OSError:
            return read()  # the reader says what is wrong with the file
        with self._held_lock:
            held = self._held.get(key)
        if held is not None:
            return held
        made = read()
        with self._held_lock:
            return self._held.setdefault(key, made)

    def combines_hosts(self, session: str) -> bool:
        return self._combined_format(session) is not None

    def _combined_format(self, session: str) -> Format | None:
        """The format whose timeline shows this session's hosts together, if
        more than one host has it."""
        self.session(session)
        s = self._sessions[session]
        for fmt in FORMATS:
            if fmt.combines_hosts and sum(fmt in files for files in s.hosts.values()) > 1:
                return fmt
        return None

    def chrome_trace(
        self, session: str, host: str, step: str = "", task: TaskState | None = None
    ) -> bytes | Iterable[bytes]:
        host, fmt, files = self._source(session, host, TRACE_VIEWER)
        return fmt.chrome_trace(files, host, step, task or TaskState())

    def tool_files(self, session: str, host: str, tool: str) -> tuple[Format, list[Path]] | None:
        self.session(session)
        s = self._sessions[session]
        if not host:
            found = [f for h in sorted(s.hosts) if (f := s.source(h, tool)) is not None]
            if len(found) > 1 and all(fmt.serves_xprof_tools for fmt, _ in found):
                self.resolve_host(session, host, tool)  # these show one host at a time: asks to choose
            if len(found) != 1:
                return None
            return found[0] if found[0][0].serves_xprof_tools else None
        source = s.source(self.resolve_host(session, host, tool), tool)
        return source if source is not None and source[0].serves_xprof_tools else None

    def xprof_files(self, session: str, host: str, tool: str) -> list[Path] | None:
        self.session(session)
        s = self._sessions[session]
        if not host:
            found = [f for h in sorted(s.hosts) if (f := s.source(h, tool)) is not None]
            if not any(fmt.xprof for fmt, _ in found):
                return None  # Profscope's statistics of Chrome traces (all hosts side by side)
            if len(found) > 1 and all(fmt.xprof for fmt, _ in found):
                return [p for _, files in found for p in files]
        host, fmt, files = self._source(session, host, tool)
        return list(files) if fmt.xprof else None

    # ---------------------------------------------------------- scanning

    def _scan(self) -> dict[str, _Session]:
        top = self._folder
        if top.is_file():
            return self._scan_lone_file(top)
        if top.name == "profile" and top.parent.name == "plugins":
            return self._scan_profile_root(top, prefix="")
        sessions = {}
        for folder, _depth in self._folders(top, 0):
            if folder.name == "plugins" and (folder / "profile").is_dir():
                run = folder.parent.relative_to(top).as_posix()
                sessions.update(self._scan_profile_root(folder / "profile", prefix="" if run == "." else run + "/"))
                continue
            rel = folder.relative_to(top).as_posix()
            s = self._scan_session(folder, self._top if rel == "." else rel)
            if s.hosts:
                sessions[s.name] = s
        return sessions

    def _folders(self, folder: Path, depth: int):
        """The folder and those below it (a plugins folder is not entered)."""
        yield folder, depth
        if folder.name == "plugins" or depth >= MAX_DEPTH:
            return
        for entry in self._entries(folder):
            if entry.is_dir():
                yield from self._folders(Path(entry.path), depth + 1)

    def _entries(self, folder: Path) -> list[os.DirEntry]:
        try:
            with os.scandir(folder) as it:
                return sorted((e for e in it if stays_inside(e, str(self._root))), key=lambda e: e.name)
        except OSError:
            return []

    def _scan_profile_root(self, root: Path, prefix: str) -> dict[str, _Session]:
        sessions = {}
        for entry in self._entries(root):
            if entry.is_dir():
                s = self._scan_session(Path(entry.path), prefix + entry.name)
                if s.hosts:
                    sessions[s.name] = s
        return sessions

    def _scan_session(self, folder: Path, name: str) -> _Session:
        session = _Session(name)
        for entry in self._entries(folder):
            if entry.is_file():
                path = Path(entry.path)
                for fmt in FORMATS:
                    if (host := fmt.host_in_folder(path)) is not None:
                        session.add(host, fmt, path, fmt.tools_of(path))
                        break
                else:
                    if reason := not_a_profile(path):
                        self._not_profiles.append((self._shown(path), reason))
        return session

    def _scan_lone_file(self, path: Path) -> dict[str, _Session]:
        for fmt in FORMATS:
            if found := fmt.lone_file(path):
                session = _Session(found[0])
                session.add(found[1], fmt, path, fmt.tools_of(path))
                return {session.name: session}
        for fmt in FORMATS:
            fmt.why_not(path)  # raises with a format's reason, if it has one
        if reason := not_a_profile(path):
            raise ProfileError(f"{path}: not a profile: {reason}. {WHERE_TO_LOOK}")
        raise ProfileError(f"{path}: Profscope does not know this kind of file. {WHERE_TO_LOOK}")
