"""The command line on real-world targets and interruptions: what -o names
(devices, FIFOs, links, existing files), Ctrl+C, and exit codes when nothing
could be produced."""

import json
import os
import select
import signal
import stat
import subprocess
import sys
import time

import pytest
from conftest import DATA, ROOT, SAMPLE

from profscope.viewer.cli import main

TRACE = DATA / "chrome_trace" / "train.pt.trace.json.gz"
XPLANE = DATA / "xprof" / "small.xplane.pb"
EXPORT = ["export", str(SAMPLE), "--tool", "memory_profile"]


def corrupt_xplane(path):
    """small.xplane.pb with bytes in the middle overwritten (as a disk or a copy breaks it)."""
    data = bytearray(XPLANE.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = b"\xff" * 64
    path.write_bytes(bytes(data))
    return path


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="replacing /dev/null needs root")
def test_dev_null_stays_a_character_device(tmp_path):
    # First a private node of the same device: a regression must not replace the machine's /dev/null.
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    assert main([*EXPORT, "-o", str(null)]) == 0
    assert stat.S_ISCHR(os.stat(null).st_mode) and os.listdir(tmp_path) == ["null"]
    assert main([*EXPORT, "-o", "/dev/null"]) == 0
    assert main(["query", str(SAMPLE), "SELECT 1", "-o", "/dev/null"]) == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_fifo_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE)
    try:
        assert main(["query", str(SAMPLE), "SELECT 42 AS answer", "--format", "csv", "-o", str(fifo)]) == 0
        out, _ = reader.communicate(timeout=60)
    finally:
        reader.kill()
        reader.wait()
    assert out.decode().split() == ['"answer"', "42"]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and os.listdir(tmp_path) == ["pipe"]


def test_dev_stdout_through_a_pipe():
    command = [sys.executable, "-m", "profscope.viewer.cli", "query", str(SAMPLE), "SELECT 7 AS n", "--format", "csv"]
    result = subprocess.run([*command, "-o", "/dev/stdout"], capture_output=True, timeout=120, cwd=ROOT)
    assert result.returncode == 0 and result.stdout.split() == [b'"n"', b"7"], result.stderr


def test_a_unix_socket_is_connected_to(tmp_path):
    import socket
    import threading

    received = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(tmp_path / "sock"))
        server.listen(1)

        def serve():
            connection, _ = server.accept()
            with connection, connection.makefile("rb") as f:
                received.append(f.read())

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        assert main(["query", str(SAMPLE), "SELECT 7 AS n", "--format", "csv", "-o", str(tmp_path / "sock")]) == 0
        thread.join(60)
    assert received[0].split() == [b'"n"', b"7"]


def test_a_symlink_writes_its_target_and_keeps_permissions(tmp_path):
    real = tmp_path / "real.json"
    real.write_text("old")
    real.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(real.name)
    assert main([*EXPORT, "-o", str(link)]) == 0
    assert link.is_symlink() and os.readlink(link) == real.name
    assert "memoryProfilePerAllocator" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600
    assert main(["diff", str(TRACE), str(TRACE), "-o", str(real)]) == 0
    assert json.loads(real.read_text())["tool"] == "op_stats" and stat.S_IMODE(real.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["link.json", "real.json"]


def test_a_new_file_gets_the_umask_and_a_folder_is_refused(tmp_path, capsys):
    old = os.umask(0o027)
    try:
        assert main(["query", str(SAMPLE), "SELECT 1", "-o", str(tmp_path / "new.txt")]) == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.txt").stat().st_mode) == 0o640
    assert main(["query", str(SAMPLE), "SELECT 1", "-o", str(tmp_path)]) == 1
    assert "is a folder" in capsys.readouterr().err


def test_a_query_failing_while_written_leaves_no_file(tmp_path, monkeypatch, capsys):
    import profscope.viewer.query_output as query_output

    def broken(table, fmt, f):
        f.write(b"answer\n")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(query_output, "write_result", broken)
    out = tmp_path / "out.csv"
    assert main(["query", str(SAMPLE), "SELECT 1 AS answer", "-o", str(out)]) == 2
    assert os.listdir(tmp_path) == []
    out.write_text("old")
    assert main(["query", str(SAMPLE), "SELECT 1 AS answer", "-o", str(out)]) == 2
    assert out.read_text() == "old" and os.listdir(tmp_path) == ["out.csv"]
    assert "No space left" in capsys.readouterr().err


# A runaway query: DuckDB never sees KeyboardInterrupt; the command interrupts it.
ANNOUNCED_QUERY = """
import sys
from profscope.models.sql import database
from profscope.viewer import cli

query = database.ProfileDatabase.query

def announced(self, *args, **kwargs):
    print("query started", file=sys.stderr, flush=True)
    return query(self, *args, **kwargs)

database.ProfileDatabase.query = announced
sys.exit(cli.main())
"""


def test_ctrl_c_stops_a_runaway_query(tmp_path):
    sql = "SELECT count(*) FROM range(100000000) a, range(100000000) b WHERE a.range + b.range = 7"
    command = [sys.executable, "-c", ANNOUNCED_QUERY, "query", str(TRACE), sql, "-o", str(tmp_path / "out.txt")]
    p = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        seen, deadline = b"", time.monotonic() + 120
        while b"query started" not in seen:
            assert p.poll() is None and time.monotonic() < deadline, seen
            if select.select([p.stderr], [], [], 0.5)[0]:
                seen += os.read(p.stderr.fileno(), 4096)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=10)  # the query alone would run for hours
    finally:
        p.kill()
        p.wait()
    assert p.returncode == 130, err
    assert out == b"" and b"Traceback" not in seen + err and len(err.splitlines()) <= 1
    assert os.listdir(tmp_path) == []


def test_ctrl_c_cancels_the_tasks_a_command_handed_out(monkeypatch):
    """Work on a thread (or in DuckDB) hears of Ctrl+C through its task."""
    import threading

    from profscope.viewer import cli

    seen = []

    def command(args):
        os.kill(os.getpid(), signal.SIGINT)  # KeyboardInterrupt here; the watcher cancels the task
        raise AssertionError("not interrupted")

    def wait_for_cancel(args):
        cancelled = threading.Event()
        task = cli._progress(str(SAMPLE)).task()  # held by the work, as a command's are
        task.on_cancel(cancelled.set)
        worker = threading.Thread(target=lambda: seen.append(cancelled.wait(30)))
        worker.start()
        try:
            os.kill(os.getpid(), signal.SIGINT)
        finally:
            worker.join()

    monkeypatch.setattr(cli, "cmd_formats", command)
    assert main(["formats"]) == 130
    monkeypatch.setattr(cli, "cmd_formats", wait_for_cancel)
    assert main(["formats"]) == 130 and seen == [True]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler and signal.set_wakeup_fd(-1) == -1


def test_a_corrupt_xplane_fails_query_and_report(tmp_path, capsys):
    bad = corrupt_xplane(tmp_path / "bad.xplane.pb")
    assert main(["query", str(bad), "SELECT count(*) FROM slices", "-o", str(tmp_path / "rows.txt")]) == 1
    err = capsys.readouterr().err
    assert "no table could be read" in err and "not a readable XSpace" in err and err.count("\n") == 1
    assert not (tmp_path / "rows.txt").exists()
    assert main(["report", str(bad), "-o", str(tmp_path / "report")]) == 1
    err = capsys.readouterr().err
    assert "no view could be drawn" in err and "not a readable XSpace" in err and err.count("\n") == 1
    assert "not a readable XSpace" in (tmp_path / "report" / "index.html").read_text()


def test_one_unreadable_host_of_two_is_a_warning(tmp_path, capsys):
    session = tmp_path / "plugins" / "profile" / "run"
    session.mkdir(parents=True)
    (session / "good.xplane.pb").write_bytes(XPLANE.read_bytes())
    corrupt_xplane(session / "bad.xplane.pb")
    assert main(["query", str(tmp_path), "SELECT DISTINCT host FROM slices", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    assert out.split() == ['"host"', '"good"'] and "warning" in err and "bad.xplane.pb" in err
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "report")]) == 0
    out, err = capsys.readouterr()
    assert "timeline_run_good.png" in out and "warning: run / bad" in err
