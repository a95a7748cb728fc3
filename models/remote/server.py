"""`profscope serve`: the ProfileAnalysis service over a local repository.

Nothing in a request becomes a path: session ids, host names and file names
are looked up among what the repository's scan listed; repository_root must
be empty or the served folder itself; NewSession writes only
<served folder>/<session_id>/<host>.xplane.pb after checking both names.
Refusals carry a gRPC status saying why (INVALID_ARGUMENT, NOT_FOUND,
ALREADY_EXISTS). The server never executes anything from a request.
"""

from __future__ import annotations

import json
from concurrent import futures
from pathlib import Path

import grpc

from models.remote.client import (ANALYSIS, FILE_TOOL, FILES_TOOL, MAX_DURATION_MS, MAX_MESSAGE, PROFILER, SAFE_NAME, _stub,
                           channel, safe_file_name)
from models.registry import TOOLS
from models.repository import LocalRepository
from models.task import ProfileError
from protos import profiler_analysis_pb2 as pa
from protos import profiler_service_pb2 as ps

MAX_PARAMETERS = 32
MAX_PARAMETER_BYTES = 1 << 16
MAX_HOSTS = 64


class Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


class AnalysisService:
    """The three methods, over the folder given to `profscope serve`."""

    def __init__(self, path: Path):
        self.root = Path(path).resolve()
        if not self.root.is_dir():
            raise ProfileError(f"{path}: serve needs a folder")
        self.repo = LocalRepository(self.root) if _has_profiles(self.root) else None

    def rescan(self) -> LocalRepository:
        """The repository as it is now (captures add sessions)."""
        try:
            self.repo = LocalRepository(self.root)
        except ProfileError:
            self.repo = None
        if self.repo is None:
            raise Refused(grpc.StatusCode.NOT_FOUND, "no profile sessions under the served folder yet")
        return self.repo

    # ------------------------------------------------------------ checks

    def _check_root(self, root: str) -> None:
        if root and Path(root).resolve() != self.root and root not in (".", "/"):
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                          "repository_root must be empty or the served folder; this server serves one folder")

    def _session(self, name: str) -> str:
        _check_text("session_id", name, allow_slash=True)
        repo = self.repo
        if repo is None or name not in {s.name for s in repo.enum_sessions()}:
            repo = self.rescan()  # a capture may have added it since the last listing
        if name not in {s.name for s in repo.enum_sessions()}:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"no session {name!r}")
        return name

    # ------------------------------------------------------------ methods

    def enum_sessions(self, request: pa.EnumProfileSessionsAndToolsRequest, context) -> pa.EnumProfileSessionsAndToolsResponse:
        self._check_root(request.repository_root)
        repo = self.rescan()
        return pa.EnumProfileSessionsAndToolsResponse(
            sessions=[pa.ProfileSessionInfo(session_id=s.name, available_tools=list(s.tools))
                      for s in sorted(repo.enum_sessions(), key=lambda s: s.name)])

    def get_session_tool_data(self, request: pa.ProfileSessionDataRequest, context) -> pa.ProfileSessionDataResponse:
        self._check_root(request.repository_root)
        session = self._session(request.session_id)
        _check_text("host_name", request.host_name, allow_empty=True)
        _check_text("tool_name", request.tool_name)
        if len(request.parameters) > MAX_PARAMETERS or sum(len(k) + len(v) for k, v in request.parameters.items()) > MAX_PARAMETER_BYTES:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "too many or too large parameters")
        repo, tool = self.repo, request.tool_name
        if tool == FILES_TOOL:
            return pa.ProfileSessionDataResponse(output_format="json", output=json.dumps(self._listing(session)).encode())
        if tool == FILE_TOOL:
            name = request.parameters.get("name", "")
            files = {p.name: p for h in repo.session(session).hosts for p in repo.host_paths(session, h)}
            if name not in files:
                raise Refused(grpc.StatusCode.NOT_FOUND, f"session {session!r} has no file {name!r}")
            return pa.ProfileSessionDataResponse(output_format="blob", output=files[name].read_bytes())
        if tool not in TOOLS:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"no tool {tool!r}; tools: {', '.join(TOOLS)}")
        if request.host_name and request.host_name not in repo.session(session).hosts:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"session {session!r} has no host {request.host_name!r}")
        try:
            data = repo.tool_data(session, tool, request.host_name, dict(request.parameters))
        except ProfileError as e:
            return pa.ProfileSessionDataResponse(error_message=str(e))
        return pa.ProfileSessionDataResponse(output_format=data.format, output=data.output)

    def _listing(self, session: str) -> dict:
        repo = self.repo
        info = repo.session(session)
        return {"hosts": list(info.hosts),
                "tools": {t: repo.hosts_with(session, t) for t in info.tools},
                "files": {h: [p.name for p in repo.host_paths(session, h)] for h in info.hosts},
                "steps": {h: repo.steps(session, h) for h in repo.hosts_with(session, "trace_viewer")},
                "combines_hosts": repo.combines_hosts(session)}

    def new_session(self, request: pa.NewProfileSessionRequest, context) -> pa.NewProfileSessionResponse:
        self._check_root(request.repository_root)
        _check_text("session_id", request.session_id)
        if not request.hosts or len(request.hosts) > MAX_HOSTS:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"list 1 to {MAX_HOSTS} hosts to profile")
        for host in request.hosts:
            _check_text("hosts", host)
        duration = request.request.duration_ms
        if not 0 < duration <= MAX_DURATION_MS:
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, f"duration_ms must be 1 to {MAX_DURATION_MS}")
        folder = self.root / request.session_id
        if folder.exists():
            raise Refused(grpc.StatusCode.ALREADY_EXISTS, f"session {request.session_id!r} exists")
        errors, empty = [], True
        for address in request.hosts:
            host = address.rsplit(":", 1)[0] if address.count(":") == 1 else address
            profile = ps.ProfileRequest()
            profile.CopyFrom(request.request)
            profile.repository_root, profile.session_id, profile.host_name = str(self.root), request.session_id, host
            try:
                with channel(address) as ch:
                    rpc = _stub(ch, PROFILER, "Profile", ps.ProfileRequest, ps.ProfileResponse)
                    response = rpc(profile, timeout=duration / 1000 + 60)
            except grpc.RpcError as e:
                errors.append(f"{address}: {e.code().name}: {e.details()}")
                continue
            empty &= response.empty_trace
            for tool in response.tool_data:  # servers that return the data instead of saving it
                name = Path(tool.name).name
                if safe_file_name(name) and name.endswith(".xplane.pb"):
                    folder.mkdir(exist_ok=True)
                    (folder / name).write_bytes(tool.data)
        return pa.NewProfileSessionResponse(error_message="; ".join(errors), empty_trace=empty and not errors)


def _has_profiles(root: Path) -> bool:
    try:
        LocalRepository(root)
        return True
    except ProfileError:
        return False


def _check_text(field: str, value: str, allow_empty: bool = False, allow_slash: bool = False) -> None:
    """Names are looked up, never joined into paths; still, odd ones are refused early.
    Session ids of runs below a log dir contain '/' (lookups only)."""
    if not value and allow_empty:
        return
    parts = value.split("/") if allow_slash else [value]
    if not all(SAFE_NAME.match(p) and p not in (".", "..") for p in parts) or len(value) > 200:
        shown = value if len(value) < 80 else value[:80] + "…"
        raise Refused(grpc.StatusCode.INVALID_ARGUMENT,
                      f"{field} {shown!r} is not allowed: 1 to 200 letters, digits and . _ : - only")


def _handler(fn, request_type, response_type):
    def run(request, context):
        try:
            return fn(request, context)
        except Refused as e:
            context.abort(e.code, str(e))
    return grpc.unary_unary_rpc_method_handler(run, request_deserializer=request_type.FromString,
                                               response_serializer=response_type.SerializeToString)


def make_server(path: Path, bind: str = "127.0.0.1", port: int = 0, max_message: int = MAX_MESSAGE,
                workers: int = 4) -> tuple[grpc.Server, int, AnalysisService]:
    """A started server and its port (port 0: a free one)."""
    service = AnalysisService(path)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers),
                         options=[("grpc.max_receive_message_length", max_message),
                                  ("grpc.max_send_message_length", max_message)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(ANALYSIS, {
        "EnumSessions": _handler(service.enum_sessions, pa.EnumProfileSessionsAndToolsRequest,
                                 pa.EnumProfileSessionsAndToolsResponse),
        "GetSessionToolData": _handler(service.get_session_tool_data, pa.ProfileSessionDataRequest,
                                       pa.ProfileSessionDataResponse),
        "NewSession": _handler(service.new_session, pa.NewProfileSessionRequest, pa.NewProfileSessionResponse),
    }),))
    address = f"[{bind}]:{port}" if ":" in bind else f"{bind}:{port}"
    bound = server.add_insecure_port(address)
    if not bound:
        raise ProfileError(f"cannot listen on {address}")
    server.start()
    return server, bound, service

