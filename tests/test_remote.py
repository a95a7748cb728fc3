"""Profiles over gRPC: a real server on loopback, the client repository, the
security of every request field, captures through a profiler service."""

import json
import logging
import os
import shutil
import threading
from concurrent import futures
from types import SimpleNamespace

import grpc
import numpy as np
import pytest
from conftest import DATA, SAMPLE

from profscope.models.core.task import ProfileError
from profscope.models.remote.client import (
    ANALYSIS,
    PROFILER,
    RemoteRepository,
    _stub,
    call,
    capture,
    channel,
    new_session,
)
from profscope.models.remote.server import make_server
from profscope.models.repository.locations import open_repository
from profscope.models.repository.profile_repository import LocalRepository, ToolData
from profscope.protos import profiler_analysis_pb2 as pa
from profscope.protos import profiler_service_pb2 as ps

XSPACE = DATA / "xprof" / "small.xplane.pb"


def _log_dir(tmp_path):
    """A log dir with a two-host xplane session and the TF sample; its root and the session folder."""
    root = tmp_path / "logs"
    shutil.copytree(SAMPLE, root)
    session = root / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    shutil.copy(XSPACE, session / "worker0.xplane.pb")
    shutil.copy(DATA / "xprof" / "keras.xplane.pb", session / "worker1.xplane.pb")
    return root, session


@pytest.fixture
def served(tmp_path):
    """_log_dir served on loopback."""
    root, session = _log_dir(tmp_path)
    (tmp_path / "secret.txt").write_text("outside the served folder")
    os.symlink(tmp_path / "secret.txt", session / "evil.xplane.pb")  # a link leading out
    server, port, service = make_server(root, port=0)
    yield root, f"127.0.0.1:{port}", service
    server.stop(0).wait()


@pytest.fixture
def remote(served):
    repo = RemoteRepository(f"grpc://{served[1]}")
    yield repo
    repo.close()


def test_remote_sessions_and_tools_are_the_local_ones(served, remote):
    local = LocalRepository(served[0])
    assert sorted(remote.enum_sessions(), key=lambda s: s.name) == sorted(local.enum_sessions(), key=lambda s: s.name)
    assert remote.combines_hosts("2026_01_01_00_00_00")
    assert "evil" not in remote.session("2026_01_01_00_00_00").hosts  # the link out is not served


def test_remote_memory_profile_and_timelines_equal_local(served, remote):
    local = LocalRepository(served[0])
    session = "2026_01_01_00_00_00"
    a, b = remote.memory_profile(session, "worker1"), local.memory_profile(session, "worker1")
    assert a.memory_ids == b.memory_ids
    for mid in a.memory_ids:
        assert np.array_equal(a.allocators[mid].timeline.heap, b.allocators[mid].timeline.heap)
        assert a.allocators[mid].summary == b.allocators[mid].summary
    for host in ("worker0", ""):  # one host, and all hosts together
        ta, tb = remote.step_timeline(session, host), local.step_timeline(session, host)
        assert len(ta) == len(tb) and ta.groups == tb.groups
        assert np.array_equal(ta.start_ps, tb.start_ps)
    assert (
        remote.tool_data(session, "trace_viewer", "worker0").output
        == local.tool_data(session, "trace_viewer", "worker0").output
    )
    steps = remote.steps("train", "vm")
    assert steps == local.steps("train", "vm") and steps
    assert len(remote.step_timeline("train", "vm", steps[-1])) == len(local.step_timeline("train", "vm", steps[-1]))


def test_methods_keep_tensorflows_names_on_the_wire(served):
    with channel(served[1]) as ch:
        enum = _stub(
            ch, ANALYSIS, "EnumSessions", pa.EnumProfileSessionsAndToolsRequest, pa.EnumProfileSessionsAndToolsResponse
        )
        assert enum(pa.EnumProfileSessionsAndToolsRequest(), timeout=10).sessions
        ours = _stub(
            ch,
            "profscope.tensorflow.ProfileAnalysis",
            "EnumSessions",
            pa.EnumProfileSessionsAndToolsRequest,
            pa.EnumProfileSessionsAndToolsResponse,
        )
        with pytest.raises(grpc.RpcError) as e:
            ours(pa.EnumProfileSessionsAndToolsRequest(), timeout=10)
        assert e.value.code() == grpc.StatusCode.UNIMPLEMENTED
    assert ANALYSIS == "tensorflow.ProfileAnalysis" and PROFILER == "tensorflow.ProfilerService"


def _tool_data(address, **fields):
    with channel(address) as ch:
        rpc = _stub(ch, ANALYSIS, "GetSessionToolData", pa.ProfileSessionDataRequest, pa.ProfileSessionDataResponse)
        return rpc(pa.ProfileSessionDataRequest(**fields), timeout=10)


SESSION = "2026_01_01_00_00_00"


@pytest.mark.parametrize(
    "fields,code",
    [
        (
            {"repository_root": "/etc", "session_id": SESSION, "tool_name": "memory_profile"},
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        ({"session_id": "../../etc", "tool_name": "memory_profile"}, grpc.StatusCode.INVALID_ARGUMENT),
        ({"session_id": "/etc/passwd", "tool_name": "memory_profile"}, grpc.StatusCode.INVALID_ARGUMENT),
        ({"session_id": "x" * 5000, "tool_name": "memory_profile"}, grpc.StatusCode.INVALID_ARGUMENT),
        ({"session_id": "no_such_session", "tool_name": "memory_profile"}, grpc.StatusCode.NOT_FOUND),
        (
            {"session_id": SESSION, "host_name": "../../etc/passwd", "tool_name": "memory_profile"},
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        ({"session_id": SESSION, "host_name": "nobody", "tool_name": "memory_profile"}, grpc.StatusCode.NOT_FOUND),
        ({"session_id": SESSION, "tool_name": "../../bin/sh"}, grpc.StatusCode.INVALID_ARGUMENT),
        ({"session_id": SESSION, "tool_name": "pod_viewer"}, grpc.StatusCode.NOT_FOUND),
        (
            {"session_id": SESSION, "tool_name": "profscope.file", "parameters": {"name": "../../secret.txt"}},
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            {"session_id": SESSION, "tool_name": "profscope.file", "parameters": {"name": "evil.xplane.pb"}},
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            {"session_id": SESSION, "tool_name": "memory_profile", "parameters": {f"k{i}": "v" for i in range(100)}},
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            {"session_id": SESSION, "tool_name": "memory_profile", "parameters": {"k": "v" * 100_000}},
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
    ],
)
def test_requests_cannot_reach_outside_the_served_folder(served, fields, code):
    with pytest.raises(grpc.RpcError) as e:
        _tool_data(served[1], **fields)
    assert e.value.code() == code and e.value.details()


def test_tool_errors_come_back_as_error_messages(served):
    response = _tool_data(served[1], session_id=SESSION, tool_name="memory_profile")  # two hosts, none chosen
    assert "one host at a time" in response.error_message


def test_server_down_and_slow_servers_are_reported(tmp_path):
    with pytest.raises(ProfileError, match="cannot be reached"):
        RemoteRepository("grpc://127.0.0.1:1")
    release = threading.Event()
    slow = FakeProfiler.slow(release, delay=5.0)
    try:
        with channel(slow.address) as ch:
            rpc = _stub(ch, PROFILER, "Profile", ps.ProfileRequest, ps.ProfileResponse)
            with pytest.raises(ProfileError, match="did not answer in time"):
                call(rpc, ps.ProfileRequest(duration_ms=10), slow.address, timeout=0.3)
    finally:
        release.set()
        slow.stop()


# ---------------------------------------------------------------- capture


class FakeProfiler:
    """A real gRPC server implementing tensorflow.ProfilerService/Profile."""

    def __init__(self, profile):
        self.requests = []

        def handler(request, context):
            self.requests.append(request)
            return profile(request)

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        self.server.add_generic_rpc_handlers(
            (
                grpc.method_handlers_generic_handler(
                    PROFILER,
                    {
                        "Profile": grpc.unary_unary_rpc_method_handler(
                            handler, ps.ProfileRequest.FromString, ps.ProfileResponse.SerializeToString
                        )
                    },
                ),
            )
        )
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def stop(self):
        self.server.stop(0).wait()

    @classmethod
    def with_stored_xspace(cls, save: bool):
        """save=True saves the XSpace as TensorFlow's server does (SaveXSpace);
        else it comes back as tool data, as older servers did."""

        def profile(request):
            if save:
                folder = os.path.join(request.repository_root, request.session_id)
                os.makedirs(folder, exist_ok=True)
                shutil.copy(XSPACE, os.path.join(folder, f"{request.host_name}.xplane.pb"))
                return ps.ProfileResponse()
            return ps.ProfileResponse(
                tool_data=[ps.ProfileToolData(name=f"{request.host_name}.xplane.pb", data=XSPACE.read_bytes())]
            )

        return cls(profile)

    @classmethod
    def slow(cls, release: threading.Event, delay: float):
        def profile(request):
            release.wait(delay)
            return ps.ProfileResponse()

        return cls(profile)


@pytest.mark.parametrize("save", [True, False])
def test_capture_from_a_profiler_server(tmp_path, save):
    profiler = FakeProfiler.with_stored_xspace(save)
    try:
        folder, empty = capture(profiler.address, 500, tmp_path / "plugins" / "profile", session_id="cap1")
    finally:
        profiler.stop()
    request = profiler.requests[0]
    assert request.duration_ms == 500 and request.session_id == "cap1" and request.opts.host_tracer_level == 2
    assert folder == tmp_path / "plugins" / "profile" / "cap1" and not empty
    repo = open_repository(tmp_path)
    assert [s.name for s in repo.enum_sessions()] == ["cap1"]
    assert len(repo.step_timeline("cap1", "127.0.0.1")) > 0


def test_capture_refuses_odd_names_and_durations(tmp_path):
    with pytest.raises(ProfileError, match="duration"):
        capture("127.0.0.1:1", 0, tmp_path)
    with pytest.raises(ProfileError, match="only"):
        capture("127.0.0.1:1", 100, tmp_path, session_id="../escape")


def test_new_session_through_the_analysis_server(served):
    root, address, _ = served
    profiler = FakeProfiler.with_stored_xspace(save=False)
    try:
        session, empty = new_session(f"grpc://{address}", [profiler.address], 200, "captured_1")
        with pytest.raises(ProfileError, match="ALREADY_EXISTS"):
            new_session(f"grpc://{address}", [profiler.address], 200, "captured_1")
        with pytest.raises(ProfileError, match="INVALID_ARGUMENT"):
            new_session(f"grpc://{address}", [profiler.address], 200, "../evil")
        with pytest.raises(ProfileError, match="INVALID_ARGUMENT"):
            new_session(f"grpc://{address}", ["host;rm -rf /"], 200, "x2")
    finally:
        profiler.stop()
    assert (root / "captured_1" / "127.0.0.1.xplane.pb").exists() and not empty
    repo = RemoteRepository(f"grpc://{address}")
    try:
        assert "captured_1" in [s.name for s in repo.enum_sessions()]
        assert len(repo.step_timeline("captured_1", "127.0.0.1")) > 0
    finally:
        repo.close()
    assert not (root.parent / "evil").exists()


def test_cli_lists_remote_sessions(served, capsys):
    from profscope.viewer.cli import main

    assert main(["sessions", f"grpc://{served[1]}", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert SESSION in [s["sessionId"] for s in doc["sessions"]]


def test_window_opens_a_server_and_captures(served, qtbot, tmp_path):
    from PySide6.QtCore import QSettings

    from profscope.viewer.window import MainWindow

    w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    qtbot.addWidget(w)
    try:
        with qtbot.waitSignal(w.runner.finished, timeout=20000):
            w.open_path(f"grpc://{served[1]}")
        names = [w.tree.topLevelItem(i).text(0) for i in range(w.tree.topLevelItemCount())]
        assert SESSION in names
        qtbot.waitUntil(lambda: not w.runner.busy, timeout=20000)  # the latest session's view loads
        profiler = FakeProfiler.with_stored_xspace(save=True)
        try:
            target = tmp_path / "captures" / "plugins" / "profile"
            with qtbot.waitSignal(w.runner.finished, timeout=20000):
                w.runner.start(
                    lambda task: capture(profiler.address, 300, target, "cap", task=task), w.capture.captured
                )
            qtbot.waitUntil(lambda: not w.runner.busy, timeout=20000)
        finally:
            profiler.stop()
        assert [w.tree.topLevelItem(i).text(0) for i in range(w.tree.topLevelItemCount())] == ["cap"]
    finally:
        w.runner.cancel()
        w.runner.wait(5000)


def test_serve_command_runs_until_interrupted(tmp_path):
    import signal
    import subprocess
    import sys

    from conftest import ROOT

    proc = subprocess.Popen(
        [sys.executable, "-m", "profscope.viewer.cli", "serve", str(SAMPLE), "--port", "0"],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()
        assert "serving" in line and "127.0.0.1" in line
        port = int(line.rsplit(":", 1)[1].split()[0])
        repo = RemoteRepository(f"grpc://127.0.0.1:{port}")
        assert repo.enum_sessions()
        repo.close()
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 0 and "stopped" in proc.stderr.read()
    finally:
        proc.kill()
        proc.wait()


def test_other_profile_analysis_servers_give_their_memory_profile_json(tmp_path):
    """A server that only knows XProf's tools (no profscope.files): memory profiles still open."""
    from conftest import SMALL_XPROF

    def enum(request, context):
        return pa.EnumProfileSessionsAndToolsResponse(
            sessions=[pa.ProfileSessionInfo(session_id="run1", available_tools=["memory_profile"])]
        )

    def data(request, context):
        if request.tool_name != "memory_profile":
            context.abort(grpc.StatusCode.NOT_FOUND, "unknown tool")
        return pa.ProfileSessionDataResponse(output_format="json", output=SMALL_XPROF.read_bytes())

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers(
        (
            grpc.method_handlers_generic_handler(
                ANALYSIS,
                {
                    "EnumSessions": grpc.unary_unary_rpc_method_handler(
                        enum,
                        pa.EnumProfileSessionsAndToolsRequest.FromString,
                        pa.EnumProfileSessionsAndToolsResponse.SerializeToString,
                    ),
                    "GetSessionToolData": grpc.unary_unary_rpc_method_handler(
                        data, pa.ProfileSessionDataRequest.FromString, pa.ProfileSessionDataResponse.SerializeToString
                    ),
                },
            ),
        )
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        repo = RemoteRepository(f"grpc://127.0.0.1:{port}")
        profile = repo.memory_profile("run1", "")
        assert "bfc_cpu_allocator_for_gpu" in profile.memory_ids
        with pytest.raises(ProfileError, match="Profscope server"):
            repo.step_timeline("run1", "")
        repo.close()
    finally:
        server.stop(0).wait()


def test_rank_traces_over_grpc_equal_local():
    server, port, _ = make_server(DATA / "chrome_trace" / "gpu", port=0)
    repo = RemoteRepository(f"grpc://127.0.0.1:{port}")
    try:
        local = LocalRepository(DATA / "chrome_trace" / "gpu")
        (info,) = repo.enum_sessions()
        assert info == local.session("gpu") and repo.combines_hosts("gpu")
        assert repo.tool_data("gpu", "overview").output == local.tool_data("gpu", "overview").output
        assert (
            repo.tool_data("gpu", "kernel_stats", "rank-1").output
            == local.tool_data("gpu", "kernel_stats", "rank-1").output
        )
        assert repo.step_timeline("gpu", "").groups == local.step_timeline("gpu", "").groups
    finally:
        repo.close()
        server.stop(0).wait()


# ---------------------------------------------------------------- under load


def _new_threads(before: set) -> list[threading.Thread]:
    """Threads started since `before` that do not end (each gets time to finish what it was doing)."""
    for t in set(threading.enumerate()) - before:
        t.join(timeout=10)
    return [t for t in set(threading.enumerate()) - before if t.is_alive()]


def _data_stubs(ch):
    return (
        _stub(
            ch, ANALYSIS, "EnumSessions", pa.EnumProfileSessionsAndToolsRequest, pa.EnumProfileSessionsAndToolsResponse
        ),
        _stub(ch, ANALYSIS, "GetSessionToolData", pa.ProfileSessionDataRequest, pa.ProfileSessionDataResponse),
    )


def test_concurrent_clients_with_cancelled_calls(tmp_path, caplog):
    """12 clients, 4 rounds each of a listing, a tool's data, a call cancelled at
    once and a call whose channel is closed at once: every answer is the local
    one, the server logs no error and leaves no thread once stopped."""
    before = set(threading.enumerate())
    root, session = _log_dir(tmp_path)
    local = LocalRepository(root)
    sessions = sorted(s.name for s in local.enum_sessions())
    expected = {
        (s, t, h, ""): local.tool_data(s, t, h).output
        for s in sessions
        for t in local.session(s).tools
        for h in local.hosts_with(s, t)
    }
    expected[(SESSION, "profscope.file", "", "worker1.xplane.pb")] = (session / "worker1.xplane.pb").read_bytes()
    keys = sorted(expected)
    server, port, _ = make_server(root, port=0)
    address = f"127.0.0.1:{port}"

    def request(key):
        s, tool, host, name = key
        return pa.ProfileSessionDataRequest(
            session_id=s, tool_name=tool, host_name=host, parameters={"name": name} if name else {}
        )

    clients, rounds = 12, 4
    start = threading.Barrier(clients)
    outcomes: list[tuple[str, object, bool]] = []  # (what, key, right)

    def client(c):
        with channel(address) as ch:
            enum, data = _data_stubs(ch)
            start.wait()
            for r in range(rounds):
                key = keys[(c * rounds + r) % len(keys)]
                got = sorted(s.session_id for s in enum(pa.EnumProfileSessionsAndToolsRequest(), timeout=60).sessions)
                outcomes.append(("enum", None, got == sessions))
                outcomes.append(("tool", key, data(request(key), timeout=60).output == expected[key]))
                future = data.future(request(key), timeout=60)
                if not future.cancel():  # answered first
                    outcomes.append(("cancel", key, future.result().output == expected[key]))
                other = channel(address)
                future = _data_stubs(other)[1].future(request(key), timeout=60)
                other.close()
                try:
                    outcomes.append(("close", key, future.result().output == expected[key]))
                except grpc.RpcError as e:
                    outcomes.append(("close", key, e.code() == grpc.StatusCode.CANCELLED))

    try:
        with futures.ThreadPoolExecutor(clients) as pool:
            for f in [pool.submit(client, c) for c in range(clients)]:
                f.result()
    finally:
        server.stop(grace=5)
    assert [o for o in outcomes if not o[2]] == []
    assert sum(o[0] == "tool" for o in outcomes) == clients * rounds
    assert {o[1] for o in outcomes if o[0] == "tool"} == set(keys)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert _new_threads(before) == []


@pytest.fixture
def blocking_tools(monkeypatch):
    """Tool data that waits, as its parameter "wait" says: for `release`, or for
    the call's end ("end"); each call's (host, cancelled) is recorded as it returns."""
    release, started, done = threading.Event(), threading.Event(), []

    def tool_data(self, session, tool, host="", params=None, task=None):
        started.set()
        wait = (params or {}).get("wait")
        if wait == "release":
            release.wait(30)
        elif wait == "end":
            task._cancelled.wait(30)  # TaskState offers no public wait
        done.append((host, task.cancelled))
        return ToolData(b"answer " + host.encode(), "json")

    monkeypatch.setattr(LocalRepository, "tool_data", tool_data)
    return SimpleNamespace(release=release, started=started, done=done)


def _waiting_tool(host: str, wait: str = "") -> pa.ProfileSessionDataRequest:
    return pa.ProfileSessionDataRequest(
        session_id=SESSION, tool_name="trace_viewer", host_name=host, parameters={"wait": wait} if wait else {}
    )


def _session_folder(root, *hosts):
    session = root / SESSION
    session.mkdir(parents=True)
    for host in hosts:
        shutil.copy(XSPACE, session / f"{host}.xplane.pb")


def _until(slots, predicate) -> None:
    with slots.changed:
        assert slots.changed.wait_for(predicate, timeout=30)


def _one_running_one_waiting(data, slots, tools, second_host: str):
    """With one slot: a call holding it until tools.release, and a call waiting for it."""
    running = data.future(_waiting_tool("worker0", "release"), timeout=60)
    assert tools.started.wait(30)
    waiting = data.future(_waiting_tool(second_host), timeout=60)
    _until(slots, lambda: slots.waiting == 1)
    return running, waiting


def test_a_cancelled_call_stops_its_analysis(served, blocking_tools, caplog):
    slots = served[2].slots
    with channel(served[1]) as ch:
        future = _data_stubs(ch)[1].future(_waiting_tool("worker0", "end"), timeout=60)
        assert blocking_tools.started.wait(30)
        future.cancel()
        _until(slots, lambda: blocking_tools.done)  # the analysis saw its task cancelled and gave its slot back
    assert blocking_tools.done == [("worker0", True)]
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []


def test_analyses_wait_for_a_slot_but_listings_and_files_do_not(tmp_path, blocking_tools):
    """One slot: a second analysis waits in line (and leaves it when cancelled),
    while listings and file downloads are answered."""
    _session_folder(tmp_path, "worker0", "worker1")
    before = set(threading.enumerate())
    server, port, service = make_server(tmp_path, port=0, workers=1)
    slots = service.slots
    try:
        with channel(f"127.0.0.1:{port}") as ch:
            enum, data = _data_stubs(ch)
            first, second = _one_running_one_waiting(data, slots, blocking_tools, "worker1")
            assert [s.session_id for s in enum(pa.EnumProfileSessionsAndToolsRequest(), timeout=30).sessions] == [
                SESSION
            ]
            listing = data(pa.ProfileSessionDataRequest(session_id=SESSION, tool_name="profscope.files"), timeout=30)
            assert json.loads(listing.output)["hosts"] == ["worker0", "worker1"]
            file = data(
                pa.ProfileSessionDataRequest(
                    session_id=SESSION, tool_name="profscope.file", parameters={"name": "worker1.xplane.pb"}
                ),
                timeout=30,
            )
            assert file.output == XSPACE.read_bytes()
            second.cancel()
            _until(slots, lambda: slots.waiting == 0)
            blocking_tools.release.set()
            assert first.result().output == b"answer worker0"
            assert data(_waiting_tool("worker1"), timeout=30).output == b"answer worker1"
    finally:
        blocking_tools.release.set()
        server.stop(0)
    assert blocking_tools.done == [("worker0", False), ("worker1", False)]  # the cancelled call never ran
    assert _new_threads(before) == []


def test_calls_beyond_the_limit_are_refused_not_queued(tmp_path, blocking_tools, monkeypatch):
    import profscope.models.remote.server as server_module

    _session_folder(tmp_path, "worker0")
    monkeypatch.setattr(server_module, "MAX_CALLS", 2)
    server, port, service = make_server(tmp_path, port=0, workers=1)
    try:
        with channel(f"127.0.0.1:{port}") as ch:
            enum, data = _data_stubs(ch)
            running, waiting = _one_running_one_waiting(data, service.slots, blocking_tools, "worker0")
            with pytest.raises(grpc.RpcError) as e:
                enum(pa.EnumProfileSessionsAndToolsRequest(), timeout=30)
            assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            blocking_tools.release.set()
            assert running.result().output == waiting.result().output == b"answer worker0"
            assert enum(pa.EnumProfileSessionsAndToolsRequest(), timeout=30).sessions
    finally:
        blocking_tools.release.set()
        server.stop(0)


def test_stopping_ends_running_analyses_and_leaves_no_thread(tmp_path, blocking_tools):
    _session_folder(tmp_path, "worker0")
    before = set(threading.enumerate())
    server, port, _ = make_server(tmp_path, port=0)
    with channel(f"127.0.0.1:{port}") as ch:
        future = _data_stubs(ch)[1].future(_waiting_tool("worker0", "end"), timeout=60)
        assert blocking_tools.started.wait(30)
        server.stop(grace=0.1)  # returns once the analysis has ended
        assert blocking_tools.done == [("worker0", True)]
        with pytest.raises(grpc.RpcError) as e:
            future.result()
        assert e.value.code() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
    assert _new_threads(before) == []


def test_oversized_requests_and_a_port_in_use_are_refused(served):
    with pytest.raises(grpc.RpcError) as e:
        _tool_data(served[1], session_id=SESSION, tool_name="memory_profile", parameters={"k": "v" * (2 << 20)})
    assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    with pytest.raises(ProfileError, match="cannot listen"):
        make_server(served[0], port=int(served[1].rsplit(":", 1)[1]))  # not a second server sharing the port


def test_a_remote_repository_that_cannot_list_closes_its_channel(monkeypatch, tmp_path):
    import tempfile

    import profscope.models.remote.client as client

    opened = []

    class Recorded:
        def __init__(self, ch):
            self.ch, self.closed = ch, False
            opened.append(self)

        def __getattr__(self, name):
            return getattr(self.ch, name)

        def close(self):
            self.closed = True
            self.ch.close()

    real = client.channel
    monkeypatch.setattr(client, "channel", lambda target: Recorded(real(target)))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with pytest.raises(ProfileError, match="cannot be reached"):
        RemoteRepository("grpc://127.0.0.1:1")
    assert [c.closed for c in opened] == [True] and list(tmp_path.iterdir()) == []  # no download folder left
