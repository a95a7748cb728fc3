"""Opening every layout, listing sessions, exporting, and the report."""

import json
import shutil
import subprocess
import sys

import pytest
from conftest import DATA, ROOT, SAMPLE, SMALL_XPROF

from profscope.models.core.task import ProfileError
from profscope.models.repository.locations import open_repository
from profscope.viewer.cli import main

SMALL_SESSION = "2026_11_22_02_49_00"
KERAS_SESSION = "2026_11_22_02_48_21"


@pytest.mark.parametrize("path,names", [
    (SAMPLE / "plugins" / "profile", [KERAS_SESSION, SMALL_SESSION]),
    (SAMPLE / "plugins" / "profile" / SMALL_SESSION, [SMALL_SESSION]),
])
def test_layouts(path, names):
    sessions = open_repository(path).enum_sessions()
    assert [s.name for s in sessions] == names
    assert all(s.hosts == ("vm",) and s.tools == ("memory_profile",) for s in sessions)


def test_runs_below_a_log_dir_and_a_lone_file(tmp_path):
    shutil.copytree(SAMPLE / "plugins", tmp_path / "train" / "plugins")
    assert [s.name for s in open_repository(tmp_path).enum_sessions()] == [
        f"train/{KERAS_SESSION}",
        f"train/{SMALL_SESSION}",
    ]
    lone = tmp_path / "mine.json"
    shutil.copy(SMALL_XPROF, lone)
    (info,) = open_repository(lone).enum_sessions()
    assert info.hosts == ("mine.json",)
    assert open_repository(lone).memory_profile(info.name, "").memory_ids == ["bfc_cpu_allocator_for_gpu"]


def test_links_out_of_the_folder_are_not_followed(tmp_path):
    outside = tmp_path / "outside"
    shutil.copytree(SAMPLE / "plugins" / "profile" / SMALL_SESSION, outside)
    root = tmp_path / "logs" / "plugins" / "profile"
    root.mkdir(parents=True)
    (root / "sneaky").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ProfileError, match="found no profile data"):
        open_repository(tmp_path / "logs")


def test_names_never_become_paths():
    repo = open_repository(SAMPLE)
    with pytest.raises(ProfileError, match="no session"):
        repo.memory_profile("../../etc", "vm")
    with pytest.raises(ProfileError, match="data for host"):
        repo.memory_profile(SMALL_SESSION, "../vm")


def test_sessions_json(capsys):
    assert main(["sessions", str(SAMPLE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sessions"][1] == {"sessionId": SMALL_SESSION, "hosts": ["vm"], "availableTools": ["memory_profile"]}
    assert out["sessions"][2] == {
        "sessionId": "train",
        "hosts": ["vm"],
        "availableTools": ["memory_profile", "trace_viewer"],
    }


def test_sessions_lists_an_hparams_log_dirs_experiment(capsys):
    """What the window, `query` and `report` open, `sessions` lists: here a sweep and no profile."""
    keras = DATA / "hparams" / "keras_callback"
    assert main(["sessions", str(keras)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "HParams experiment: 4 session(s)"
    assert out[1] == "  hparams: lr, optimizer, units"
    assert "validation/epoch_accuracy" in out[2]
    assert out[3].startswith("  tools: hparams_experiment, hparams_session_groups, hparams_metric_evals")
    assert main(["sessions", str(keras), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sessions"] == [] and doc["hparams"]["sessions"] == 4 and doc["hparams"]["hparams"] == [
        "lr", "optimizer", "units"]
    assert doc["hparams"]["availableTools"] == ["hparams_experiment", "hparams_session_groups", "hparams_metric_evals"]


def test_sessions_lists_profile_sessions_and_the_experiment_side_by_side(tmp_path, capsys):
    shutil.copytree(DATA / "hparams" / "api_config", tmp_path, dirs_exist_ok=True)
    shutil.copytree(DATA / "chrome_trace" / "gpu", tmp_path / "gpu")
    assert main(["sessions", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["sessions"] and doc["hparams"]["sessions"] == 12
    assert main(["sessions", str(SAMPLE), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["hparams"] is None  # a log dir without a sweep


@pytest.mark.parametrize("command", [
    ["sessions"], ["sessions", "--json"], ["export", "--tool", "overview_page"], ["query", "SELECT 1"], ["diff", "{}"],
])
def test_nothing_found_is_one_line_saying_where_to_look(tmp_path, capsys, command):
    empty = tmp_path / "empty"
    empty.mkdir()
    args = [command[0], str(empty)] + [a.replace("{}", str(empty)) for a in command[1:]]
    assert main(args) == 1
    captured = capsys.readouterr()
    assert captured.err == f"profscope: error: {empty}: found no profile data. " \
                           "`profscope formats` lists what Profscope reads.\n" or (
        command[0] == "diff" and captured.err.endswith("`profscope formats` lists what Profscope reads.\n")
        and captured.err.count("\n") == 1)
    assert captured.out == ""


def test_export_to_file_with_params(tmp_path, capsys):
    out = tmp_path / "mp.json"
    flag = tmp_path / "flag.txt"
    flag.write_text("true")
    assert (
        main(
            [
                "export",
                str(SAMPLE),
                "--tool",
                "memory_profile",
                "--session",
                SMALL_SESSION,
                "--param",
                f"xprof_form=@{flag}",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    doc = json.loads(out.read_text())
    assert doc == json.loads(SMALL_XPROF.read_text())  # the input is XProf's own; kept as given
    assert main(["export", str(SAMPLE), "--tool", "nope"]) == 1
    assert "unknown tool" in capsys.readouterr().err


def test_a_tool_the_profile_lacks_is_named_as_missing_not_unknown(tmp_path, capsys):
    small = DATA / "xprof" / "small.xplane.pb"  # TensorFlow without XLA: no module for the memory viewer
    assert main(["export", str(small), "--tool", "memory_viewer", "-o", str(tmp_path / "out.json")]) == 1
    err = capsys.readouterr().err
    assert "has no memory_viewer data" in err and "unknown tool" not in err
    assert not (tmp_path / "out.json").exists()


def test_an_export_failing_midway_leaves_no_partial_file(tmp_path, monkeypatch, capsys):
    from profscope.models.repository.profile_repository import LocalRepository, ToolData

    def chunks():
        yield b'{"partial":'
        raise ProfileError("the input broke halfway")

    monkeypatch.setattr(LocalRepository, "tool_data", lambda *a, **k: ToolData(chunks(), "json"))
    out = tmp_path / "mp.json"
    out.write_text("old")
    assert main(["export", str(SAMPLE), "--tool", "memory_profile", "-o", str(out)]) == 1
    assert "broke halfway" in capsys.readouterr().err
    assert out.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["mp.json"]


def test_sessions_export_and_query_do_not_import_qt(tmp_path):
    code = (
        "import sys; from profscope.viewer.cli import main; "
        f"main(['sessions', {str(SAMPLE)!r}]); "
        f"main(['export', {str(SAMPLE)!r}, '--tool', 'memory_profile', '-o', {str(tmp_path / 'o.json')!r}]); "
        f"assert main(['query', {str(SAMPLE)!r}, 'SELECT count(*) FROM memory_snapshots']) == 0; "
        f"assert main(['export', {str(SAMPLE)!r}, '--format', 'parquet', '-o', {str(tmp_path / 'pq')!r}]) == 0; "
        "assert not [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'widgets'))], 'Qt imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)


def test_report_writes_pngs_and_index(tmp_path):
    out = tmp_path / "report"
    result = subprocess.run(
        [sys.executable, "-m", "profscope.viewer.cli", "report", str(SAMPLE), "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # only Profscope's own messages: Qt's offscreen noise is filtered
    printed = result.stdout.split()
    assert printed[-1].endswith("index.html") and len(printed) == 5
    page = (out / "index.html").read_text()
    assert "Peak usage (profile window)" in page and "3 MiB" in page and page.count("<img") == 4
    assert "Timeline: train / vm" in page and "_MklMatMul" in page and "Op statistics" in page
    from PySide6.QtGui import QImage

    image = QImage(printed[0])
    assert image.width() == 1400 and image.height() == 900


def test_report_on_a_memory_log(tmp_path):
    out = tmp_path / "report"
    log = DATA / "log_memory" / "graph-bfc-onednn.log.gz"
    result = subprocess.run(
        [sys.executable, "-m", "profscope.viewer.cli", "report", str(log), "-o", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "QT_QPA_PLATFORM": "offscreen"},
    )
    assert result.returncode == 0, result.stderr
    page = (out / "index.html").read_text()
    assert page.count("<img") == 2 and "Bytes allocated per kernel" in page
    assert "gradients/MatMul_grad/MatMul_1" in page and "TF_NewTensor" in page


def test_no_display_writes_the_report_instead(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env["QT_QPA_PLATFORM"] = "offscreen"
    result = subprocess.run(
        [sys.executable, "-m", "profscope.viewer.cli", str(SAMPLE)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "no display found" in result.stderr and (tmp_path / "profscope-report" / "index.html").exists()


def test_unexpected_errors_are_one_line_and_logged(tmp_path, monkeypatch, capsys):
    import profscope.viewer.cli as cli

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr("profscope.viewer.crashlog.echo_to_console", False)  # restored after --debug sets it
    monkeypatch.setattr(cli, "cmd_sessions", lambda args: {}["boom"])  # a bug: KeyError
    assert main(["sessions", str(SAMPLE)]) == 2
    err = capsys.readouterr().err
    log = tmp_path / "cache" / "Profscope" / "Profscope" / "profscope.log"
    assert err.count("\n") == 1 and "profscope sessions" in err and "KeyError" in err and str(log) in err
    assert "Traceback" not in err and "Traceback" in log.read_text()
    assert main(["sessions", str(SAMPLE), "--debug"]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_a_host_read_twice_while_held_is_one_copy(tmp_path):
    """The window's timeline and a query over the same host share one Timeline
    and one memory profile; the repository itself keeps neither alive, and a
    changed file is read again."""
    import gc
    import weakref

    from conftest import copied_host, rewrite

    path, repo, session, host = copied_host(DATA / "xprof" / "small.xplane.pb", tmp_path)
    shown = repo.step_timeline(session, host)
    assert repo.step_timeline(session, host) is shown
    memory = repo.memory_profile(session, host)
    assert repo.memory_profile(session, host) is memory
    rewrite(path)
    again = repo.step_timeline(session, host)
    assert again is not shown and len(again) == len(shown)
    gone = weakref.ref(shown)
    del shown, again
    gc.collect()
    assert gone() is None
