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
- a single file.
Only paths found by listing the opened folder are read: a session or host
name never becomes part of a path, and links leading out of it are skipped.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from models.event_file import host_of_event_file, is_event_file, tagged_run_metadata
from models.files import stays_inside
from models.log_memory import ENABLE_HINT, LOG_SUFFIXES, is_memory_log, load_memory_log
from models.memory_profile import MemoryProfileData, load_memory_profile, to_xprof_json
from models.step_stats import (BINARY_SUFFIXES, TEXT_SUFFIXES, StepStatsFile, chrome_trace_json, load_step_timeline,
                               locate, sniff, step_memory_profile)
from models.task import ProfileError, TaskState
from models.timeline import Timeline
from models.xplane import host_of_xplane
from models.xplane_memory import xplane_memory_profile
from models.xplane_timeline import load_xplane_timeline
from models.xplane_trace import trace_viewer_json

MEMORY_PROFILE = "memory_profile"
TRACE_VIEWER = "trace_viewer"
TOOLS = (MEMORY_PROFILE, TRACE_VIEWER)
# File name endings of MemoryProfile files in a session folder (<host><suffix>).
MEMORY_PROFILE_SUFFIXES = (".memory_profile.json.gz", ".memory_profile.json", ".memory_profile.pb")
# A MemoryProfile opened directly may have any name ending in these.
LONE_MEMORY_PROFILE_SUFFIXES = (".json.gz", ".json", ".pb", ".pb.gz")
MAX_DEPTH = 6  # how deep to look below an opened folder

LOOKED_FOR = (
    "a TensorBoard log dir with plugins/profile/<session>/<host>.xplane.pb or <host>.memory_profile.json[.gz] "
    "(or .pb), such a plugins/profile folder, one session folder holding such files, "
    "event files with run metadata (FileWriter.add_run_metadata), StepStats or RunMetadata files "
    "(.pb, .pbtxt, .txt), TensorFlow logs with __LOG_MEMORY__ lines (.log, .txt, .out, .err, gzipped too), "
    "or a single MemoryProfile file (.json, .json.gz or .pb)"
)


@dataclass(frozen=True)
class SessionInfo:
    """A profile session: its hosts and the tools that have data."""

    name: str
    hosts: tuple[str, ...]
    tools: tuple[str, ...]


@dataclass(frozen=True)
class ToolData:
    output: bytes
    format: str  # "json", "proto" or "blob", as in ProfileSessionDataResponse


class ProfileRepository(ABC):
    """Sessions, hosts and tool data of one opened location."""

    location: str

    @abstractmethod
    def enum_sessions(self) -> list[SessionInfo]: ...

    @abstractmethod
    def memory_profile(self, session: str, host: str, task: TaskState | None = None) -> MemoryProfileData:
        """The decoded memory profile of one host, for in-process use."""

    @abstractmethod
    def steps(self, session: str, host: str) -> list[str]:
        """The traced steps (run metadata tags) a host's timeline can show."""

    @abstractmethod
    def step_timeline(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> Timeline:
        """The decoded step timeline of one host (step "" = the first)."""

    def combines_hosts(self, session: str) -> bool:
        """Whether the session's timeline can show all its hosts at once (host "")."""
        return False

    def session(self, name: str) -> SessionInfo:
        for s in self.enum_sessions():
            if s.name == name:
                return s
        names = ", ".join(s.name for s in self.enum_sessions())
        raise ProfileError(f"no session {name!r} in {self.location} (sessions: {names})")

    def resolve_host(self, session: str, host: str, tool: str) -> str:
        """The host to use: the given one if the session has it, else the only one."""
        info = self.session(session)
        if tool not in info.tools:
            raise ProfileError(f"session {session!r} has no {tool} data (tools: {', '.join(info.tools) or 'none'})")
        hosts = self.hosts_with(session, tool)
        if host:
            if host not in hosts:
                raise ProfileError(f"session {session!r} has no {tool} data for host {host!r} (hosts: {', '.join(hosts)})")
            return host
        if len(hosts) > 1:
            raise ProfileError(f"{tool} shows one host at a time; choose one of: {', '.join(hosts)}")
        return hosts[0]

    def hosts_with(self, session: str, tool: str) -> list[str]:
        """The hosts of a session that have data for a tool."""
        info = self.session(session)
        return list(info.hosts) if tool in info.tools else []

    def tool_data(self, session: str, tool: str, host: str = "", params: dict[str, str] | None = None,
                  task: TaskState | None = None) -> ToolData:
        """GetSessionToolData: the tool's output for a session and host."""
        params = params or {}
        if tool == MEMORY_PROFILE:
            host = self.resolve_host(session, host, tool)
            profile = self.memory_profile(session, host, task)
            xprof_form = params.get("xprof_form", "").lower() in ("1", "true", "yes")
            doc = to_xprof_json(profile, xprof_form=xprof_form)
            return ToolData(json.dumps(doc, separators=(",", ":")).encode(), "json")
        if tool == TRACE_VIEWER:
            host = self.resolve_host(session, host, tool)
            return ToolData(self.chrome_trace(session, host, params.get("step", ""), task), "json")
        raise ProfileError(f"unknown tool {tool!r}; Profscope offers: {', '.join(TOOLS)}")

    @abstractmethod
    def chrome_trace(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> bytes:
        """Chrome trace-event JSON of a host's step timeline."""


@dataclass
class _HostFiles:
    """What one host has in a session folder."""

    memory_profile: Path | None = None
    step_stats: Path | None = None  # a StepStats or RunMetadata file
    event_files: list[Path] = field(default_factory=list)  # with run metadata
    xplane: Path | None = None  # <host>.xplane.pb (an XSpace)
    memory_log: Path | None = None  # a TensorFlow log with __LOG_MEMORY__ lines

    def tools(self) -> list[str]:
        has_trace = self.xplane is not None or self.step_stats is not None or bool(self.event_files)
        has_memory = self.memory_profile is not None or self.memory_log is not None
        return [t for t, ok in ((MEMORY_PROFILE, has_memory or has_trace),
                                (TRACE_VIEWER, has_trace)) if ok]


@dataclass
class _Session:
    name: str
    hosts: dict[str, _HostFiles] = field(default_factory=dict)

    def host(self, name: str) -> _HostFiles:
        return self.hosts.setdefault(name, _HostFiles())

    def info(self) -> SessionInfo:
        tools = {t for h in self.hosts.values() for t in h.tools()}
        return SessionInfo(self.name, tuple(sorted(self.hosts)), tuple(t for t in TOOLS if t in tools))


class LocalRepository(ProfileRepository):
    """A folder or file on this machine."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        if not self.path.exists():
            raise ProfileError(f"{self.path}: no such file or folder")
        self._root = (self.path if self.path.is_dir() else self.path.parent).resolve()
        self._tag_cache: dict[Path, tuple[tuple[int, int], list[str]]] = {}
        self._sessions = self._scan()
        if not self._sessions:
            raise ProfileError(f"{self.path}: found no profile data. Looked for {LOOKED_FOR}.")

    def enum_sessions(self) -> list[SessionInfo]:
        return [s.info() for s in self._sessions.values()]

    def hosts_with(self, session: str, tool: str) -> list[str]:
        self.session(session)
        return [h for h, files in sorted(self._sessions[session].hosts.items()) if tool in files.tools()]

    def host_paths(self, session: str, host: str) -> list[Path]:
        """The files the scan found for a host (what a remote client downloads)."""
        self.session(session)
        files = self._sessions[session].hosts.get(host)
        if files is None:
            return []
        return [p for p in (files.xplane, files.memory_profile, files.memory_log, files.step_stats) if p] + files.event_files

    def _files(self, session: str, host: str, tool: str) -> tuple[str, _HostFiles]:
        host = self.resolve_host(session, host, tool)
        return host, self._sessions[session].hosts[host]

    def memory_profile(self, session: str, host: str, task: TaskState | None = None) -> MemoryProfileData:
        host, files = self._files(session, host, MEMORY_PROFILE)
        if files.xplane is not None:  # the source XProf's cached tool files come from
            profile = xplane_memory_profile(files.xplane, host=host, task=task)
        elif files.memory_profile is not None:
            profile = load_memory_profile(files.memory_profile, host=host, task=task)
        elif files.memory_log is not None:
            profile = load_memory_log(files.memory_log, host=host, task=task)
        else:
            profile = step_memory_profile(self._step_source(files, ""), host=host, task=task)
        profile.num_hosts = len(self.hosts_with(session, MEMORY_PROFILE))
        return profile

    def steps(self, session: str, host: str) -> list[str]:
        if self._xplanes(session, host):
            return []
        host, files = self._files(session, host, TRACE_VIEWER)
        return list(self._tags(files))

    def step_timeline(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> Timeline:
        if xplanes := self._xplanes(session, host):
            if step:
                raise ProfileError("--param step applies to event files; an xplane.pb shows its whole capture")
            return load_xplane_timeline([p for _, p in xplanes], [h for h, _ in xplanes], task)
        host, files = self._files(session, host, TRACE_VIEWER)
        return load_step_timeline(self._step_source(files, step, task), task)

    def combines_hosts(self, session: str) -> bool:
        return len(self._xplanes(session, "")) > 1

    def _xplanes(self, session: str, host: str) -> list[tuple[str, Path]]:
        """The (host, xplane.pb) pairs a timeline request covers: the host's,
        or with host "" every host's of the session (XProf's all hosts)."""
        self.session(session)
        hosts = self._sessions[session].hosts
        if host:
            files = hosts.get(host)
            return [(host, files.xplane)] if files and files.xplane else []
        return [(h, f.xplane) for h, f in sorted(hosts.items()) if f.xplane is not None]

    def chrome_trace(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> bytes:
        host, files = self._files(session, host, TRACE_VIEWER)
        if files.xplane is not None:
            return trace_viewer_json(files.xplane, host, task)
        return chrome_trace_json(self._step_source(files, step, task), task)

    def _tags(self, files: _HostFiles) -> dict[str, Path]:
        """Run metadata tag -> event file; a later file wins, as in TensorBoard."""
        tags = {}
        for path in files.event_files:
            for tag in self._run_metadata_tags(path):
                tags[tag] = path
        return tags

    def _run_metadata_tags(self, path: Path) -> list[str]:
        """The tags of an event file, read again only when the file changed."""
        try:
            st = path.stat()
            key = (st.st_mtime_ns, st.st_size)
        except OSError:
            return []
        cached = self._tag_cache.get(path)
        if cached is None or cached[0] != key:
            try:
                tags = [t.tag for t in tagged_run_metadata(path)[0]]
            except ProfileError:
                tags = []
            cached = self._tag_cache[path] = (key, tags)
        return cached[1]

    def _step_source(self, files: _HostFiles, step: str, task: TaskState | None = None) -> StepStatsFile:
        if files.step_stats is not None:
            if step:
                raise ProfileError(f"{files.step_stats.name} holds one step; --param step applies to event files")
            return locate(files.step_stats, task=task)
        tags = self._tags(files)
        if step and step not in tags:
            raise ProfileError(f"no run metadata tagged {step!r}; steps: {', '.join(tags)}")
        path = tags[step] if step else next(iter(tags.values()))
        return locate(path, step or next(iter(tags)), task)

    # ---------------------------------------------------------- scanning

    def _scan(self) -> dict[str, _Session]:
        if self.path.is_file():
            return self._scan_lone_file(self.path)
        if self.path.name == "profile" and self.path.parent.name == "plugins":
            return self._scan_profile_root(self.path, prefix="")
        sessions = {}
        for folder, depth in self._folders(self.path, 0):
            if folder.name == "plugins" and (folder / "profile").is_dir():
                run = folder.parent.relative_to(self.path).as_posix()
                sessions.update(self._scan_profile_root(folder / "profile", prefix="" if run == "." else run + "/"))
                continue
            rel = folder.relative_to(self.path).as_posix()
            s = self._scan_session(folder, self.path.name if rel == "." else rel)
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
                self._add_file(session, Path(entry.path))
        return session

    def _add_file(self, session: _Session, path: Path) -> bool:
        """Files the folder scan recognises, checked by name and content."""
        name = path.name
        if host := host_of_xplane(name):
            session.host(host).xplane = path
        elif host := memory_profile_host(name):
            session.host(host).memory_profile = session.host(host).memory_profile or path
        elif is_event_file(name):
            if self._run_metadata_tags(path):
                session.host(host_of_event_file(name)).event_files.append(path)
        elif name.endswith(BINARY_SUFFIXES + TEXT_SUFFIXES) and sniff(path):
            host = _strip_suffix(name, BINARY_SUFFIXES + TEXT_SUFFIXES)
            session.host(host).step_stats = session.host(host).step_stats or path
        elif name.endswith(LOG_SUFFIXES) and is_memory_log(path):
            host = _strip_suffix(name, LOG_SUFFIXES)
            session.host(host).memory_log = session.host(host).memory_log or path
        else:
            return False
        return True

    def _scan_lone_file(self, path: Path) -> dict[str, _Session]:
        name = path.name
        if host_of_xplane(name) or memory_profile_host(name) or is_event_file(name):
            session = _Session(path.parent.name)
            if is_event_file(name) and not self._run_metadata_tags(path):
                tagged_run_metadata(path)  # raises with the reason when unreadable
                raise ProfileError(f"{path}: this event file holds no run metadata "
                                   "(FileWriter.add_run_metadata writes it)")
            self._add_file(session, path)
            return {session.name: session}
        if name.endswith(BINARY_SUFFIXES + TEXT_SUFFIXES) and sniff(path):
            session = _Session(name)
            session.host(_strip_suffix(name, BINARY_SUFFIXES + TEXT_SUFFIXES)).step_stats = path
            return {name: session}
        is_log = is_memory_log(path)
        if is_log or (name.endswith(LOG_SUFFIXES) and not name.endswith(TEXT_SUFFIXES)):
            if not is_log:
                raise ProfileError(f"{path}: no __LOG_MEMORY__ lines near the start of this log. {ENABLE_HINT}")
            session = _Session(name)
            session.host(_strip_suffix(name, LOG_SUFFIXES)).memory_log = path
            return {name: session}
        if name.endswith(LONE_MEMORY_PROFILE_SUFFIXES):
            session = _Session(name)
            session.host(name).memory_profile = path
            return {name: session}
        if name.endswith(TEXT_SUFFIXES):
            locate(path)  # raises with the reason
        raise ProfileError(f"{path}: Profscope does not know this kind of file. Looked for {LOOKED_FOR}.")


def memory_profile_host(name: str) -> str | None:
    """The host of a file named <host>.memory_profile.*, else None."""
    for suffix in MEMORY_PROFILE_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def _strip_suffix(name: str, suffixes: tuple[str, ...]) -> str:
    for suffix in sorted(suffixes, key=len, reverse=True):
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)]
    return name


def open_location(path: str | os.PathLike, task: TaskState | None = None):
    """(profile repository or None, HParams data or None) of a path; the
    repository's error when it holds neither."""
    from models.hparams import load_hparams

    repo = hparams = error = None
    try:
        repo = open_repository(path, task)
    except ProfileError as e:
        error = e
    if not str(path).startswith("grpc://") and Path(path).is_dir():
        try:
            hparams = load_hparams(path, task)
        except ProfileError:
            pass
    if repo is None and hparams is None:
        raise error
    return repo, hparams


def open_repository(location: str | os.PathLike, task: TaskState | None = None) -> ProfileRepository:
    """The repository for a path or a grpc://host:port ProfileAnalysis server."""
    if str(location).startswith("grpc://"):
        from models.remote import RemoteRepository

        return RemoteRepository(str(location), task)
    return LocalRepository(location)
