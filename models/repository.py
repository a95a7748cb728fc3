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

from models.memory_profile import MemoryProfileData, load_memory_profile, to_xprof_json
from models.task import ProfileError, TaskState

MEMORY_PROFILE = "memory_profile"
# File name endings of each tool's data in a session folder (<host><suffix>).
TOOL_SUFFIXES = {
    MEMORY_PROFILE: (".memory_profile.json.gz", ".memory_profile.json", ".memory_profile.pb"),
}
# A single file opened directly may have any name ending in these.
LONE_FILE_SUFFIXES = {MEMORY_PROFILE: (".json.gz", ".json", ".pb", ".pb.gz")}
MAX_DEPTH = 6  # how deep to look for plugins/profile below a log dir

LOOKED_FOR = (
    "a TensorBoard log dir with plugins/profile/<session>/<host>.memory_profile.json[.gz] (or .pb), "
    "such a plugins/profile folder, one session folder holding <host>.memory_profile.* files, "
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
        if host:
            if host not in info.hosts:
                raise ProfileError(f"session {session!r} has no host {host!r} (hosts: {', '.join(info.hosts)})")
            return host
        if len(info.hosts) > 1:
            raise ProfileError(f"{tool} shows one host at a time; choose one of: {', '.join(info.hosts)}")
        return info.hosts[0]

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
        raise ProfileError(f"unknown tool {tool!r}; Profscope offers: {', '.join(TOOL_SUFFIXES)}")


@dataclass
class _Session:
    name: str
    # files[tool][host] -> path
    files: dict[str, dict[str, Path]] = field(default_factory=dict)

    def info(self) -> SessionInfo:
        hosts = sorted({h for per_host in self.files.values() for h in per_host})
        return SessionInfo(self.name, tuple(hosts), tuple(sorted(self.files)))


class LocalRepository(ProfileRepository):
    """A folder or file on this machine."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        if not self.path.exists():
            raise ProfileError(f"{self.path}: no such file or folder")
        self._root = (self.path if self.path.is_dir() else self.path.parent).resolve()
        self._sessions = self._scan()
        if not self._sessions:
            raise ProfileError(f"{self.path}: found no profile data. Looked for {LOOKED_FOR}.")

    def enum_sessions(self) -> list[SessionInfo]:
        return [s.info() for s in self._sessions.values()]

    def memory_profile(self, session: str, host: str, task: TaskState | None = None) -> MemoryProfileData:
        host = self.resolve_host(session, host, MEMORY_PROFILE)
        path = self._sessions[session].files[MEMORY_PROFILE][host]
        profile = load_memory_profile(path, host=host, task=task)
        profile.num_hosts = len(self._sessions[session].files[MEMORY_PROFILE])
        return profile

    # ---------------------------------------------------------- scanning

    def _scan(self) -> dict[str, _Session]:
        if self.path.is_file():
            return self._scan_lone_file(self.path)
        if self.path.name == "profile" and self.path.parent.name == "plugins":
            return self._scan_profile_root(self.path, prefix="")
        roots = sorted(self._find_profile_roots(self.path, 0))
        if roots:
            sessions = {}
            for root in roots:
                run = root.parent.parent.relative_to(self.path).as_posix()
                sessions.update(self._scan_profile_root(root, prefix="" if run == "." else run + "/"))
            return sessions
        own = self._scan_session(self.path, self.path.name)
        if own.files:
            return {own.name: own}
        # A folder of session folders (a profile root under another name).
        return self._scan_profile_root(self.path, prefix="")

    def _inside(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self._root)
            return True
        except (ValueError, OSError):
            return False

    def _entries(self, folder: Path) -> list[os.DirEntry]:
        try:
            with os.scandir(folder) as it:
                return sorted((e for e in it if self._inside(Path(e.path))), key=lambda e: e.name)
        except OSError:
            return []

    def _find_profile_roots(self, folder: Path, depth: int):
        if depth > MAX_DEPTH:
            return
        for entry in self._entries(folder):
            if not entry.is_dir():
                continue
            if entry.name == "plugins":
                profile = Path(entry.path) / "profile"
                if profile.is_dir() and self._inside(profile):
                    yield profile
            else:
                yield from self._find_profile_roots(Path(entry.path), depth + 1)

    def _scan_profile_root(self, root: Path, prefix: str) -> dict[str, _Session]:
        sessions = {}
        for entry in self._entries(root):
            if entry.is_dir():
                s = self._scan_session(Path(entry.path), prefix + entry.name)
                if s.files:
                    sessions[s.name] = s
        return sessions

    def _scan_session(self, folder: Path, name: str) -> _Session:
        session = _Session(name)
        for entry in self._entries(folder):
            if not entry.is_file():
                continue
            if match := _tool_file(entry.name):
                tool, host = match
                session.files.setdefault(tool, {}).setdefault(host, Path(entry.path))
        return session

    def _scan_lone_file(self, path: Path) -> dict[str, _Session]:
        if match := _tool_file(path.name):
            tool, host = match
            return {path.parent.name: _Session(path.parent.name, {tool: {host: path}})}
        for tool, suffixes in LONE_FILE_SUFFIXES.items():
            if path.name.endswith(suffixes):
                return {path.name: _Session(path.name, {tool: {path.name: path}})}
        raise ProfileError(f"{path}: Profscope does not know this kind of file. Looked for {LOOKED_FOR}.")


def _tool_file(name: str) -> tuple[str, str] | None:
    """(tool, host) for a file named <host><tool suffix>, else None."""
    for tool, suffixes in TOOL_SUFFIXES.items():
        for suffix in suffixes:
            if name.endswith(suffix) and len(name) > len(suffix):
                return tool, name[: -len(suffix)]
    return None


def open_repository(location: str | os.PathLike) -> ProfileRepository:
    """The repository for a path (later also grpc:// addresses)."""
    return LocalRepository(location)
