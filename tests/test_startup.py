"""Start-up checks before Qt exists: each branch with the check injected, so no
broken machine is needed. And what the window loads to open the sample (in a subprocess)."""

import os
import shutil
import subprocess
import sys

import pytest
from conftest import SAMPLE

from profscope.viewer import cli, startup


@pytest.fixture
def calls(monkeypatch):
    """Records whether the window or the report was started (neither really is)."""
    seen = []
    monkeypatch.setattr("profscope.viewer.app.run_window", lambda path: seen.append(("window", path)) or 0)
    monkeypatch.setattr(cli, "cmd_report", lambda args: seen.append(("report", args.path)) or 0)
    monkeypatch.setenv("DISPLAY", ":0")
    return seen


def test_ok_opens_the_window(calls):
    assert cli.cmd_window("logdir", check=lambda: None) == 0
    assert calls == [("window", "logdir")]


def test_missing_libraries_fall_back_to_the_report(calls, monkeypatch, capsys):
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setenv("QT_QPA_PLATFORM", "xcb")
    monkeypatch.setattr(startup, "missing_libraries", lambda plugin: ["libxcb-cursor.so.0", "libxcb-icccm.so.4"])
    assert cli.cmd_window("logdir") == 0
    assert calls == [("report", "logdir")]
    err = capsys.readouterr().err
    assert "libxcb-cursor.so.0, libxcb-icccm.so.4" in err
    assert "apt-get install libxcb-cursor0 libxcb-icccm4" in err and "dnf install xcb-util-cursor xcb-util-wm" in err
    assert "writing the report" in err


def test_stale_display_falls_back_to_the_report(calls, monkeypatch, capsys):
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.delenv("QT_QPA_PLATFORM")
    monkeypatch.setenv("DISPLAY", ":77")
    monkeypatch.setattr(startup, "missing_libraries", lambda plugin: [])
    assert cli.main(["logdir"]) == 0
    assert calls == [("report", "logdir")]
    assert "display :77 does not answer" in capsys.readouterr().err


def test_window_flag_exits_1_instead(calls, capsys):
    monkeypatch_problem = lambda: "the X display :77 does not answer"  # noqa: E731
    assert cli.cmd_window("logdir", window=True, check=monkeypatch_problem) == 1
    assert calls == []
    assert "cannot open the window: the X display :77" in capsys.readouterr().err


def test_window_flag_on_the_command_line(calls, monkeypatch):
    monkeypatch.setattr(startup, "problem", lambda: "missing libraries")
    assert cli.main(["--window", "logdir"]) == 1
    assert cli.main(["logdir", "--window"]) == 1
    assert calls == []
    monkeypatch.setattr(startup, "problem", lambda: None)
    assert cli.main(["--window", "logdir"]) == 0
    assert calls == [("window", "logdir")]


def test_wayland_skips_the_xcb_checks(calls, monkeypatch):
    def fail(*_):
        raise AssertionError("xcb checked under Wayland")

    monkeypatch.setattr(startup, "missing_libraries", fail)
    monkeypatch.setattr(startup, "display_problem", fail)
    monkeypatch.delenv("QT_QPA_PLATFORM")
    monkeypatch.delenv("DISPLAY")
    monkeypatch.setenv("WAYLAND_DISPLAY", "wayland-0")
    monkeypatch.setenv("XDG_SESSION_TYPE", "wayland")
    assert startup.platform_name() == "wayland"
    assert startup.problem() is None
    assert cli.main(["logdir"]) == 0 and calls == [("window", "logdir")]
    monkeypatch.setenv("QT_QPA_PLATFORM", "wayland")
    monkeypatch.delenv("WAYLAND_DISPLAY")
    assert startup.problem() is None


def test_display_names():
    assert startup.display_problem("nonsense").startswith("DISPLAY='nonsense' is not a display name")
    assert "nothing listens on /tmp/.X11-unix/X77" in startup.display_problem(":77.0", timeout=1)
    assert "127.0.0.1:6077" in startup.display_problem("127.0.0.1:77", timeout=1)


def test_unknown_library_gets_a_search_hint():
    text = startup.install_commands(["libfoo.so.3"])
    assert "apt-file search libfoo.so.3" in text and "dnf provides '*/libfoo.so.3'" in text


@pytest.mark.skipif(not shutil.which("ldd"), reason="no ldd")
def test_elf_walk_agrees_with_ldd():
    plugin = startup.plugin_dir() / "libqxcb.so"
    if not plugin.exists():
        pytest.skip("no xcb plugin")
    assert sorted(startup._missing_by_elf(plugin)) == sorted(startup.missing_libraries(plugin))


def test_readme_starts_with_the_set_up_and_lists_the_system_packages():
    from conftest import ROOT

    readme = (ROOT / "README.md").read_text()
    assert readme.startswith("# Profscope\n\n```sh\npython3 -m venv .venv && .venv/bin/pip install -e . && ")
    assert "sudo apt-get install " + " ".join(startup.XCB_PACKAGES_DEBIAN) in readme
    assert "sudo dnf install " + " ".join(startup.XCB_PACKAGES_FEDORA) in readme
    assert readme.index("apt-get install") < readme.index("## Command line")


STARTUP_SCRIPT = """
import sys
from PySide6.QtCore import QEventLoop, QSettings, QTimer
from PySide6.QtWidgets import QApplication

app = QApplication([])
from profscope.viewer.window import MainWindow

window = MainWindow(QSettings(sys.argv[2], QSettings.IniFormat))
window.show()


def wait(signal):
    loop = QEventLoop()
    signal.connect(loop.quit)
    QTimer.singleShot(30000, lambda: loop.exit(1))
    assert loop.exec() == 0, "timed out"


window.open_path(sys.argv[1])
wait(window.runner.finished)  # the scan
wait(window.runner.finished)  # the latest session's profile
print(*sorted(m for m in ("duckdb", "grpc") if m in sys.modules))
window.query_runner.run("SELECT count(*) AS n FROM slices")
wait(window.query_runner.finished)
print(*sorted(m for m in ("duckdb", "grpc") if m in sys.modules))
window.close()
"""


def test_the_window_opens_the_sample_without_duckdb_or_grpc(tmp_path):
    """DuckDB and gRPC load with the first query, server or capture, not with the window (~150 ms of its start)."""
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run([sys.executable, "-c", STARTUP_SCRIPT, str(SAMPLE), str(tmp_path / "settings.ini")],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["", "duckdb"]  # then a query loads DuckDB and runs
