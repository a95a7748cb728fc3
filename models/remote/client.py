"""Profile repositories over gRPC: the ProfileAnalysis service (client and
server) and captures through the profiler service.

On the wire the methods keep their TensorFlow names, whatever package
Profscope's message classes live in: /tensorflow.ProfileAnalysis/EnumSessions,
GetSessionToolData, NewSession, and /tensorflow.ProfilerService/Profile.

A Profscope server answers XProf's tools (memory_profile, trace_viewer) and
two of its own: "profscope.files" lists a host's source files, and
"profscope.file" (parameter "name", one of those) returns one. The client
downloads a host's files into a cache folder of its own and reads them with
the local readers, so a remote session opens like a local one.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from pathlib import Path

import grpc

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.memory_profile import MemoryProfileData
from profscope.models.data.timeline import Timeline
from profscope.models.formats.memory_profile_file import parse_memory_profile
from profscope.models.remote import SCHEME
from profscope.models.repository.profile_repository import LocalRepository, ProfileRepository, SessionInfo, ToolData
from profscope.protos import profiler_analysis_pb2 as pa
from profscope.protos import profiler_options_pb2
from profscope.protos import profiler_service_pb2 as ps

ANALYSIS = "tensorflow.ProfileAnalysis"
PROFILER = "tensorflow.ProfilerService"
FILES_TOOL, FILE_TOOL = "profscope.files", "profscope.file"
MAX_MESSAGE = 1 << 30  # tool data and files up to 1 GiB per message
DEADLINE_S = 60.0  # a call that takes longer is reported as a slow or stuck server
SAFE_NAME = re.compile(r"^[A-Za-z0-9_.:\-]{1,200}$")  # session ids and host names a server accepts
MAX_DURATION_MS = 10 * 60 * 1000


def safe_file_name(name: str) -> bool:
    """A plain file name (no folder part, not . or ..) that a peer may choose."""
    return bool(SAFE_NAME.match(name)) and name not in (".", "..")


def channel(target: str, max_message: int = MAX_MESSAGE) -> grpc.Channel:
    return grpc.insecure_channel(target, options=[("grpc.max_receive_message_length", max_message),
                                                  ("grpc.max_send_message_length", max_message)])


def _stub(ch: grpc.Channel, service: str, method: str, request_type, response_type):
    return ch.unary_unary(f"/{service}/{method}", request_serializer=request_type.SerializeToString,
                          response_deserializer=response_type.FromString)


def call(fn, request, target: str, task: TaskState | None = None, timeout: float = DEADLINE_S):
    """One RPC with a deadline; cancellable through the task; gRPC errors as ProfileError."""
    future = fn.future(request, timeout=timeout)
    try:
        while True:
            try:
                return future.result(timeout=0.1)
            except grpc.FutureTimeoutError:
                if task is not None and task.cancelled:
                    future.cancel()
                    task.raise_if_cancelled()
    except grpc.RpcError as e:
        raise ProfileError(_explain(e, target)) from None


def _explain(e: grpc.RpcError, target: str) -> str:
    code = e.code()
    if code == grpc.StatusCode.UNAVAILABLE:
        return f"{target}: the server cannot be reached (is it running, and is the address right?): {e.details()}"
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        return f"{target}: the server did not answer in time (slow or stuck)"
    if code == grpc.StatusCode.UNIMPLEMENTED:
        return f"{target}: the server does not offer this method: {e.details()}"
    if code == grpc.StatusCode.CANCELLED:
        return f"{target}: the call was cancelled"
    return f"{target}: {code.name}: {e.details()}"


# ---------------------------------------------------------------- client


class RemoteRepository(ProfileRepository):
    """A ProfileAnalysis server as a repository (grpc://host:port)."""

    def __init__(self, location: str, task: TaskState | None = None):
        self.location = location
        self.target = location.removeprefix(SCHEME)
        self.channel = channel(self.target)
        self._enum = _stub(self.channel, ANALYSIS, "EnumSessions", pa.EnumProfileSessionsAndToolsRequest,
                           pa.EnumProfileSessionsAndToolsResponse)
        self._data = _stub(self.channel, ANALYSIS, "GetSessionToolData", pa.ProfileSessionDataRequest,
                           pa.ProfileSessionDataResponse)
        self._cache = Path(tempfile.mkdtemp(prefix="profscope-remote-"))
        self._local: dict[tuple[str, str], LocalRepository] = {}
        try:
            self._sessions = self._list_sessions(task)
        except BaseException:  # nobody gets the object to close: its channel's socket would stay open
            self.close()
            raise

    def close(self) -> None:
        self.channel.close()
        shutil.rmtree(self._cache, ignore_errors=True)

    def __del__(self):
        shutil.rmtree(getattr(self, "_cache", ""), ignore_errors=True)

    def _list_sessions(self, task) -> dict[str, tuple[SessionInfo, dict]]:
        response = call(self._enum, pa.EnumProfileSessionsAndToolsRequest(), self.target, task)
        if response.error_message:
            raise ProfileError(f"{self.location}: {response.error_message}")
        out = {}
        for s in response.sessions:
            try:
                listing = json.loads(self.get(s.session_id, FILES_TOOL, "", {}, task).output or b"{}")
            except ProfileError:  # another ProfileAnalysis server (XProf's): its tools' JSON only
                listing = {"hosts": [""], "tools": {t: [""] for t in s.available_tools}}
            hosts = tuple(listing.get("hosts", []))
            out[s.session_id] = (SessionInfo(s.session_id, hosts, tuple(s.available_tools)), listing)
        if not out:
            raise ProfileError(f"{self.location}: the server lists no sessions")
        return out

    def get(self, session: str, tool: str, host: str, params: dict, task=None) -> ToolData:
        request = pa.ProfileSessionDataRequest(session_id=session, tool_name=tool, host_name=host, parameters=params)
        response = call(self._data, request, self.target, task)
        if response.error_message:
            raise ProfileError(f"{self.location}: {response.error_message}")
        return ToolData(response.output, response.output_format)

    def enum_sessions(self) -> list[SessionInfo]:
        return [info for info, _ in self._sessions.values()]

    def hosts_with(self, session: str, tool: str) -> list[str]:
        self.session(session)
        return list(self._sessions[session][1].get("tools", {}).get(tool, []))

    def combines_hosts(self, session: str) -> bool:
        return bool(self._sessions[session][1].get("combines_hosts"))

    def steps(self, session: str, host: str) -> list[str]:
        return list(self._sessions[session][1].get("steps", {}).get(host, []))

    def _fetch(self, session: str, host: str, task: TaskState | None) -> LocalRepository:
        """The host's files (every host's for host ""), downloaded once into the cache."""
        key = (session, host)
        if key not in self._local:
            self.session(session)
            folder = self._cache / f"s{len(self._local)}"
            folder.mkdir()
            names = self._sessions[session][1].get("files", {})
            wanted = [n for h, files in names.items() if not host or h == host for n in files]
            for i, name in enumerate(wanted):
                if not safe_file_name(name):
                    raise ProfileError(f"{self.location}: the server lists an odd file name {name[:80]!r}")
                if task is not None:
                    task.report(0.4 * i / max(len(wanted), 1), f"Downloading {name}")
                data = self.get(session, FILE_TOOL, "", {"name": name}, task).output
                (folder / name).write_bytes(data)
            self._local[key] = LocalRepository(folder)
        return self._local[key]

    def _local_session(self, repo: LocalRepository) -> str:
        return repo.enum_sessions()[0].name

    def memory_profile(self, session: str, host: str, task: TaskState | None = None) -> MemoryProfileData:
        if "files" not in self._sessions[session][1]:  # not a Profscope server: XProf's memory_profile JSON
            output = self.get(session, "memory_profile", host, {}, task).output
            return parse_memory_profile(output, host=host or session, task=task, source=f"{self.location}/{session}")
        repo = self._fetch(session, host, task)
        profile = repo.memory_profile(self._local_session(repo), host, task)
        profile.num_hosts = len(self.hosts_with(session, "memory_profile"))
        return profile

    def step_timeline(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> Timeline:
        if "files" not in self._sessions[session][1]:
            raise ProfileError(f"{self.location}: timelines need a Profscope server (profscope serve); "
                               "this server offers its tools' JSON only")
        repo = self._fetch(session, host, task)
        return repo.step_timeline(self._local_session(repo), host, step, task)

    def chrome_trace(self, session: str, host: str, step: str = "", task: TaskState | None = None) -> bytes:
        return self.get(session, "trace_viewer", host, {"step": step} if step else {}, task).output

    def tool_data(self, session: str, tool: str, host: str = "", params: dict[str, str] | None = None,
                  task: TaskState | None = None) -> ToolData:
        return self.get(session, tool, host, params or {}, task)


# ---------------------------------------------------------------- capture


def profile_request(duration_ms: int) -> ps.ProfileRequest:
    """A ProfileRequest as TensorFlow's capture client sends it (host tracing
    level 2: TensorFlow ops; without options the server traces almost nothing)."""
    options = profiler_options_pb2.ProfileOptions(version=1, host_tracer_level=2, device_tracer_level=1,
                                                  python_tracer_level=0, include_dataset_ops=True,
                                                  duration_ms=duration_ms)
    return ps.ProfileRequest(duration_ms=duration_ms, max_events=0, tools=["xplane.pb"], opts=options)


def capture(address: str, duration_ms: int, repository_root: Path, session_id: str = "",
            host_name: str = "", task: TaskState | None = None) -> tuple[Path, bool]:
    """Profiles a running TensorFlow or JAX program through its profiler
    server for duration_ms; returns the session folder and whether the trace
    was empty. TensorFlow's server saves <repository_root>/<session>/<host>.xplane.pb
    itself (same machine or shared folder); servers that return the data
    instead have it written there by Profscope."""
    if not 0 < duration_ms <= MAX_DURATION_MS:
        raise ProfileError(f"duration must be between 1 ms and {MAX_DURATION_MS // 60000} minutes")
    session_id = session_id or time.strftime("%Y_%m_%d_%H_%M_%S")
    host_name = host_name or address.rsplit(":", 1)[0].replace("[", "").replace("]", "") or "localhost"
    for value in (session_id, host_name):
        if not SAFE_NAME.match(value):
            raise ProfileError(f"{value!r}: use letters, digits and . _ : - only")
    repository_root = Path(repository_root)
    request = profile_request(duration_ms)
    request.repository_root = str(repository_root.resolve())
    request.session_id, request.host_name = session_id, host_name
    with channel(address) as ch:
        profile = _stub(ch, PROFILER, "Profile", ps.ProfileRequest, ps.ProfileResponse)
        response = call(profile, request, address, task, timeout=duration_ms / 1000 + DEADLINE_S)
    folder = repository_root / session_id
    folder.mkdir(parents=True, exist_ok=True)
    for tool in response.tool_data:
        name = Path(tool.name).name
        if safe_file_name(name):
            (folder / name).write_bytes(tool.data)
    if not any(folder.iterdir()) and not response.empty_trace:
        raise ProfileError(
            f"{address}: the profiler returned no data and saved none under {folder} "
            "(is the program on another machine? capture through a ProfileAnalysis server there)"
        )
    return folder, response.empty_trace


def new_session(
    address: str, hosts: list[str], duration_ms: int, session_id: str = "", task: TaskState | None = None
) -> tuple[str, bool]:
    """Asks a ProfileAnalysis server to capture from profiler servers near it (NewSession)."""
    target = address.removeprefix(SCHEME)
    if not hosts:
        raise ProfileError("NewSession needs the profiler addresses to capture from (--hosts host:port,...)")
    session_id = session_id or time.strftime("%Y_%m_%d_%H_%M_%S")
    request = pa.NewProfileSessionRequest(session_id=session_id, hosts=hosts, request=profile_request(duration_ms))
    with channel(target) as ch:
        rpc = _stub(ch, ANALYSIS, "NewSession", pa.NewProfileSessionRequest, pa.NewProfileSessionResponse)
        response = call(rpc, request, target, task, timeout=duration_ms / 1000 + DEADLINE_S)
    if response.error_message:
        raise ProfileError(f"{address}: {response.error_message}")
    return session_id, response.empty_trace
