"""Files that only look like profiles are listed as not profiles with the
reason; archives of profiles open as the folder they hold."""

import json
import shutil
import tarfile
import tempfile
import zipfile

import pytest
from conftest import DATA

from profscope.models.core.task import ProfileError
from profscope.models.repository.locations import open_repository
from profscope.viewer.cli import main

NOT_PROFILES = DATA / "not_profiles"
ET = NOT_PROFILES / "benchmark_simple_add_et.json.gz"
KINETO = NOT_PROFILES / "benchmark_simple_add_trace.json.gz"
CONFIG = NOT_PROFILES / "config.json"
TWO_RANKS = DATA / "chrome_trace" / "two_ranks"


def test_a_folder_lists_profiles_and_the_files_that_are_not(capsys):
    assert main(["sessions", str(NOT_PROFILES), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [(s["sessionId"], s["hosts"]) for s in out["sessions"]] == [("not_profiles", ["rank-0"])]
    reasons = {item["path"]: item["reason"] for item in out["notProfiles"]}
    assert sorted(reasons) == [str(ET), str(CONFIG)]
    assert "PyTorch execution trace" in reasons[str(ET)]
    assert "model configuration" in reasons[str(CONFIG)]
    # The Kineto trace has no memory events: no memory_profile listed.
    assert out["sessions"][0]["availableTools"] == ["trace_viewer", "kernel_stats", "op_stats", "overview"]

    assert main(["sessions", str(NOT_PROFILES)]) == 0
    text = capsys.readouterr().out
    assert "not profiles:\n" in text and f"{ET}: a PyTorch execution trace" in text


@pytest.mark.parametrize("name", [ET.name, CONFIG.name])
def test_nothing_but_files_that_are_not_profiles_exits_1_with_one_line(tmp_path, capsys, name):
    shutil.copy(NOT_PROFILES / name, tmp_path / name)
    for path in (tmp_path, tmp_path / name):
        assert main(["sessions", str(path)]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not a profile" in err and "`profscope formats`" in err


@pytest.mark.parametrize("command", [["export", "--tool", "memory_profile"], ["query", "SELECT 1"], ["report"]])
def test_export_query_and_report_of_a_file_that_is_not_a_profile_say_why(tmp_path, capsys, command):
    out = tmp_path / "out"
    assert main([command[0], str(ET), *command[1:], "-o", str(out)]) == 1
    assert "not a profile: a PyTorch execution trace" in capsys.readouterr().err
    assert not out.exists()


def test_json_that_is_not_a_trace_nor_a_memory_profile(tmp_path, capsys):
    folder = tmp_path / "trace"
    folder.mkdir()
    notes = folder / "notes.json"  # what no known tool wrote: its first keys and why no format took it
    notes.write_text(json.dumps({"name": "resnet", "layers": 50, "lr": 0.1}))
    shutil.copy(TWO_RANKS / "rank-0.json.gz", folder)
    shutil.copy(CONFIG, folder)
    repo = open_repository(folder)
    assert [s.hosts for s in repo.enum_sessions()] == [("rank-0",)]
    assert [p for p, _ in repo.not_profiles()] == [str(folder / "config.json"), str(notes)]
    assert main(["export", str(notes), "--tool", "memory_profile"]) == 1
    err = capsys.readouterr().err
    assert 'a JSON object with keys "name", "layers", "lr"' in err and "not a Chrome trace" in err
    assert "not a MemoryProfile" in err


def test_report_lists_the_files_that_are_not_profiles(tmp_path):
    out = tmp_path / "report"
    assert main(["report", str(NOT_PROFILES), "-o", str(out)]) == 0
    index = (out / "index.html").read_text()
    assert "Not profiles (2)" in index and "PyTorch execution trace" in index


def test_a_binary_protobuf_of_another_message_is_not_a_memory_profile(tmp_path, capsys):
    from profscope.protos import xplane_pb2

    space = xplane_pb2.XSpace(hostnames=["vm"], errors=["none"])
    path = tmp_path / "other.pb"
    path.write_bytes(space.SerializeToString())
    with pytest.raises(ProfileError, match="not a profile: .*not a MemoryProfile protobuf"):
        open_repository(path)


def _archives(tmp_path):
    tgz = tmp_path / "two_ranks.tar.gz"
    with tarfile.open(tgz, "w:gz") as t:
        t.add(TWO_RANKS, arcname="two_ranks")
    zipped = tmp_path / "two_ranks.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        for rank in sorted(TWO_RANKS.iterdir()):
            z.write(rank, rank.name)
    return tgz, zipped


def test_archives_open_as_the_folder_they_hold(tmp_path, capsys):
    assert main(["export", str(TWO_RANKS), "--tool", "kernel_stats", "-o", str(tmp_path / "folder.json")]) == 0
    for archive in _archives(tmp_path):
        (info,) = open_repository(archive).enum_sessions()
        assert (info.name, info.hosts) == ("two_ranks", ("rank-0", "rank-1"))
        out = tmp_path / f"{archive.name}.json"
        assert main(["export", str(archive), "--tool", "kernel_stats", "-o", str(out)]) == 0
        assert out.read_bytes() == (tmp_path / "folder.json").read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "folder.json", "two_ranks.tar.gz", "two_ranks.tar.gz.json", "two_ranks.zip", "two_ranks.zip.json"]


@pytest.fixture
def own_temp(tmp_path, monkeypatch):
    """Profscope's temporary folders go here, to see that none is left."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def test_a_member_leading_out_of_the_archive_is_refused(tmp_path, own_temp, capsys):
    archive = tmp_path / "inside" / "evil.zip"
    archive.parent.mkdir()
    with zipfile.ZipFile(archive, "w") as z:
        z.write(TWO_RANKS / "rank-0.json.gz", "rank-0.json.gz")
        z.writestr("../evil", "written outside")
    assert main(["sessions", str(archive)]) == 1
    assert "member '../evil' leads outside the archive's folder" in capsys.readouterr().err
    assert not (tmp_path / "evil").exists() and not (own_temp / "evil").exists()
    assert list(own_temp.iterdir()) == []


def test_a_bomb_and_too_many_members_are_refused(tmp_path, own_temp, capsys, monkeypatch):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as z, z.open("rank-0.json", "w") as member:
        for _ in range(65):  # 65 MiB of zeros: more than any small archive may unpack to
            member.write(bytes(1 << 20))
    assert bomb.stat().st_size < 1 << 20
    assert main(["sessions", str(bomb)]) == 1
    err = capsys.readouterr().err
    assert "the archive inflates to more than 64 MiB" in err and "PROFSCOPE_MAX_INFLATE_RATIO" in err

    monkeypatch.setenv("PROFSCOPE_MAX_ARCHIVE_MEMBERS", "1")
    assert main(["sessions", str(_archives(tmp_path)[0])]) == 1
    assert "more than 1 members" in capsys.readouterr().err
    assert list(own_temp.iterdir()) == []


def test_the_tree_shows_the_files_that_are_not_profiles_greyed(qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QTreeWidget

    from profscope.viewer.session_tree import fill

    tree = QTreeWidget()
    qtbot.addWidget(tree)
    first = fill(tree, open_repository(NOT_PROFILES))
    assert first is not None and first.text(0) == "rank-0"
    top = tree.topLevelItem(tree.topLevelItemCount() - 1)
    assert top.text(0) == "Not profiles (2)"
    children = [top.child(i) for i in range(top.childCount())]
    assert [c.text(0).split(":")[0] for c in children] == [ET.name, CONFIG.name]
    assert not any(item.flags() & Qt.ItemFlag.ItemIsEnabled for item in [top, *children])
    assert "PyTorch execution trace" in children[0].toolTip(0)
