"""`profscope serve`: the ProfileAnalysis service over a local repository.

Nothing in a request becomes a path: session ids, host names and file names
are looked up among what the repository's scan listed; repository_root must
be empty or the served folder itself; NewSession writes only
<served folder>/<session_id>/<host>.xplane.pb after checking both names.
Refusals carry a gRPC status saying why (INVALID_ARGUMENT, NOT_FOUND,
ALREADY_EXISTS). The server never executes anything from a request.

Under load: each call in progress has a thread (at most MAX_CALLS; more
are refused with RESOURCE_EXHAUSTED), so listings and file downloads never
wait behind analyses; at most `workers` analyses (tool data) run at once, the
others wait for a slot in arrival order. Each call's analysis runs under a
TaskState cancelled when the call ends for any reason (the client cancelled,
went away or ran out of time, the server is stopping): a waiting call leaves
the queue at once, a running analysis stops at its next cancellation point.
Requests larger than MAX_REQUEST are refused before they are read.
`Server.stop` leaves no thread behind.
"""

from __future__ import annotations

import ctypes
import json
import threading
from collections import deque
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc

from profscope.models.core.task import Cancelled, ProfileError, TaskState
from profscope.models.remote.client import (
    ANALYSIS,
    FILE_TOOL,
    FILES_TOOL,
    MAX_DURATION_MS,
    MAX_MESSAGE,
    PROFILER,
    SAFE_NAME,
    _stub,
    call,
    channel,
    safe_file_name,
)
from profscope.models.repository.profile_repository import LocalRepository
from profscope.models.repository.registry import TOOLS
from profscope.protos import profiler_analysis_pb2 as pa
from profscope.protos import profiler_service_pb2 as ps

MAX_PARAMETERS = 32
MAX_PARAMETER_BYTES = 1 << 16
MAX_HOSTS = 64
WORKERS = 4  # analyses at once: bounds the CPU and memory they take
MAX_CALLS = 64  # calls in progress (a thread each), waiting for an analysis slot included
MAX_REQUEST = 1 << 20  # requests are names and small parameters (NewSession: <= 64 hosts)


class Refused(Exception):
    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


class Slots:
    """At most n analyses at once, first come first served. A call waiting for
    a slot leaves the queue as soon as its task is cancelled (call `wake` then).
    `changed` is notified whenever a slot or the queue changes."""

    _queue: deque

    def __init__(self, n: int):
        self._free, self._queue, self.changed = n, deque(), threading.Condition()

    @property
    def waiting(self) -> int:
        return len(self._queue)

    @contextmanager
    def slot(self, task: TaskState):
        me = object()
        with self.changed:
            self._queue.append(me)
            self.changed.notify_all()
            try:
                while not (self._free and self._queue[0] is me):
                    task.raise_if_cancelled()
                    self.changed.wait()
                task.raise_if_cancelled()
            finally:
                self._queue.remove(me)
                self.changed.notify_all()  # the next in line may be first now
            self._free -= 1
        try:
            yield
        finally:
            with self.changed:
                self._free += 1
                self.changed.notify_all()

    def wake(self) -> None:
        with self.changed:
            self.changed.notify_all()


class AnalysisService:
    """The three methods, over the folder given to `profscope serve`."""

    def __init__(self, path: Path, workers: int = WORKERS):
        self.root = Path(path).resolve()
        if not self.root.is_dir():
            raise ProfileError(f"{path}: serve needs a folder")
        self.repo = LocalRepository(self.root) if _has_profiles(self.root) else None
        self.slots = Slots(workers)

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

    def _session(self, name: str) -> LocalRepository:
        """The repository listing the session (calls on other threads may rescan meanwhile:
        this call keeps using the listing it checked)."""
        _check_text("session_id", name, allow_slash=True)
        repo = self.repo
        if repo is None or name not in {s.name for s in repo.enum_sessions()}:
            repo = self.rescan()  # a capture may have added it since the last listing
        if name not in {s.name for s in repo.enum_sessions()}:
            raise Refused(grpc.StatusCode.NOT_FOUND, f"no session {name!r}")
        return repo

    # ------------------------------------------------------------ methods

    def enum_sessions(
        self, request: pa.EnumProfileSessionsAndToolsRequest, task: TaskState
    ) -> pa.EnumProfileSessionsAndToolsResponse:
        self._check_root(request.repository_root)
        repo = self.rescan()
        return pa.EnumProfileSessionsAndToolsResponse(
            sessions=[
                pa.ProfileSessionInfo(session_id=s.name, available_tools=list(s.tools))
                for s in sorted(repo.enum_sessions(), key=lambda s: s.name)
            ]
        )

    def get_session_tool_data(
        self, request: pa.ProfileSessionDataRequest, task: TaskState
    ) -> pa.ProfileSessionDataResponse:
        self._check_root(request.repository_root)
        session, repo = request.session_id, self._session(request.session_id)
        _check_text("host_name", request.host_name, allow_empty=True)
        _check_text("tool_name", request.tool_name)
        if (
            len(request.parameters) > MAX_PARAMETERS
            or sum(len(k) + len(v) for k, v in request.parameters.items()) > MAX_PARAMETER_BYTES
        ):
            raise Refused(grpc.StatusCode.INVALID_ARGUMENT, "too many or too large parameters")
        tool = request.tool_name
        if tool == FILES_TOOL:
            return pa.ProfileSessionDataResponse(
                output_format="json", output=json.dumps(_listing(repo, session)).encode()
            )
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
            with self.slots.slot(task):
                data = repo.tool_data(session, tool, request.host_name, dict(request.parameters), task)
                collected = _Collected(task)
                data.write_to(collected)  # chunks are made as they are taken: in the slot
        except ProfileError as e:
            return pa.ProfileSessionDataResponse(error_message=str(e))
        return pa.ProfileSessionDataResponse(output_format=data.format, output=b"".join(collected.chunks))

    def new_session(self, request: pa.NewProfileSessionRequest, task: TaskState) -> pa.NewProfileSessionResponse:
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
                with channel(address) as ch:  # the capture stops when the NewSession call ends
                    rpc = _stub(ch, PROFILER, "Profile", ps.ProfileRequest, ps.ProfileResponse)
                    response = call(rpc, profile, address, task, timeout=duration / 1000 + 60)
            except ProfileError as e:
                errors.append(str(e))
                continue
            empty &= response.empty_trace
            for tool in response.tool_data:  # servers that return the data instead of saving it
                name = Path(tool.name).name
                if safe_file_name(name) and name.endswith(".xplane.pb"):
                    folder.mkdir(exist_ok=True)
                    (folder / name).write_bytes(tool.data)
        return pa.NewProfileSessionResponse(error_message="; ".join(errors), empty_trace=empty and not errors)


class _Collected:
    """A tool's output chunks, taken until the call ends (a cancellation point per chunk)."""

    def __init__(self, task: TaskState):
        self.chunks: list[bytes] = []
        self._task = task

    def write(self, chunk: bytes) -> None:
        self._task.raise_if_cancelled()
        self.chunks.append(chunk)


def _listing(repo: LocalRepository, session: str) -> dict:
    info = repo.session(session)
    return {
        "hosts": list(info.hosts),
        "tools": {t: repo.hosts_with(session, t) for t in info.tools},
        "files": {h: [p.name for p in repo.host_paths(session, h)] for h in info.hosts},
        "steps": {h: repo.steps(session, h) for h in repo.hosts_with(session, "trace_viewer")},
        "combines_hosts": repo.combines_hosts(session),
    }


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
        raise Refused(
            grpc.StatusCode.INVALID_ARGUMENT,
            f"{field} {shown!r} is not allowed: 1 to 200 letters, digits and . _ : - only",
        )


def _handler(fn, slots: Slots, request_type, response_type):
    def run(request, context):
        task = TaskState()

        def ended():  # answered, cancelled, client gone, deadline, server stopping
            task.cancel()
            slots.wake()

        if not context.add_callback(ended):
            ended()
        try:
            return fn(request, task)
        except Refused as e:
            context.abort(e.code, str(e))
        except Cancelled:  # an ended call: a status nobody reads, and no traceback in the log
            context.abort(grpc.StatusCode.CANCELLED, "the call ended before its answer was ready")

    return grpc.unary_unary_rpc_method_handler(
        run, request_deserializer=request_type.FromString, response_serializer=response_type.SerializeToString
    )


class Server:
    """A started `profscope serve` server."""

    def __init__(self, server: grpc.Server, executor: futures.ThreadPoolExecutor, port: int, service: AnalysisService):
        self._server, self._executor, self.port, self.service = server, executor, port, service

    def stop(self, grace: float | None = None) -> threading.Event:
        """Refuses new calls, lets running ones finish for `grace` seconds, then
        cancels them (their analyses stop at the next cancellation point), and
        returns, with the event set, once every worker thread has ended: gRPC's
        own stop leaves the pool's idle threads alive."""
        self._server.stop(grace).wait()
        self._executor.shutdown(wait=True, cancel_futures=True)
        stopped = threading.Event()
        stopped.set()
        return stopped


def limit_malloc_arenas(arenas: int = 2) -> None:
    """For a process that serves: glibc gives threads malloc arenas of their own
    (up to 8 per core), each keeping the high-water mark of the analyses that
    ran on it, so a busy server's RSS crept up run after run; two arenas keep
    it level. Does nothing where malloc is not glibc's."""
    m_arena_max = -8
    try:
        ctypes.CDLL(None).mallopt(m_arena_max, arenas)
    except (OSError, AttributeError, TypeError):
        pass


def make_server(
    path: Path, bind: str = "127.0.0.1", port: int = 0, max_message: int = MAX_MESSAGE, workers: int = WORKERS
) -> tuple[Server, int, AnalysisService]:
    """A started server and its port (port 0: a free one)."""
    service = AnalysisService(path, workers)
    executor = futures.ThreadPoolExecutor(max_workers=MAX_CALLS, thread_name_prefix="profscope-serve")
    server = grpc.server(
        executor,
        maximum_concurrent_rpcs=MAX_CALLS,
        options=[
            ("grpc.max_receive_message_length", MAX_REQUEST),
            ("grpc.max_send_message_length", max_message),
            # a port in use is an error, not shared with the other server
            ("grpc.so_reuseport", 0),
        ],
    )
    slots = service.slots
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                ANALYSIS,
                {
                    "EnumSessions": _handler(
                        service.enum_sessions,
                        slots,
                        pa.EnumProfileSessionsAndToolsRequest,
                        pa.EnumProfileSessionsAndToolsResponse,
                    ),
                    "GetSessionToolData": _handler(
                        service.get_session_tool_data,
                        slots,
                        pa.ProfileSessionDataRequest,
                        pa.ProfileSessionDataResponse,
                    ),
                    "NewSession": _handler(
                        service.new_session, slots, pa.NewProfileSessionRequest, pa.NewProfileSessionResponse
                    ),
                },
            ),
        )
    )
    address = f"[{bind}]:{port}" if ":" in bind else f"{bind}:{port}"
    try:
        bound = server.add_insecure_port(address)
    except RuntimeError:  # gRPC's message only says to turn on its debug log
        bound = 0
    if not bound:
        server.stop(None)
        executor.shutdown()
        raise ProfileError(f"cannot listen on {address} (is the port in use, or the address not this machine's?)")
    server.start()
    return Server(server, executor, bound, service), bound, service
