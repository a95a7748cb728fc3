"""Bad input gives a clear ProfileError (and exit code 1 on the command line), never a traceback."""

import gzip
import json

import pytest
from conftest import DATA, SMALL_XPROF

from profscope.models.core.task import ProfileError
from profscope.models.formats.memory_profile_file import load_memory_profile, parse_memory_profile
from profscope.protos import memory_profile_pb2, step_stats_pb2, xplane_pb2
from profscope.viewer.cli import main


def write(tmp_path, name, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_truncated_gzip(tmp_path):
    data = gzip.compress(SMALL_XPROF.read_bytes())
    path = write(tmp_path, "h.memory_profile.json.gz", data[: len(data) // 2])
    with pytest.raises(ProfileError, match="truncated"):
        load_memory_profile(path)


def test_corrupt_gzip(tmp_path):
    data = bytearray(gzip.compress(SMALL_XPROF.read_bytes()))
    data[40:60] = b"\xff" * 20
    with pytest.raises(ProfileError, match="gzip|JSON"):
        load_memory_profile(write(tmp_path, "h.memory_profile.json.gz", bytes(data)))


def test_invalid_json(tmp_path):
    text = SMALL_XPROF.read_bytes()
    with pytest.raises(ProfileError, match="invalid JSON"):
        load_memory_profile(write(tmp_path, "h.memory_profile.json", text[: len(text) // 3]))


@pytest.mark.parametrize("doc", [[1, 2], {"other": 1}, {"memoryProfilePerAllocator": [1]},
                                 {"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": "x"}}},
                                 {"memoryProfilePerAllocator": {"a": {"memoryProfileSnapshots": [
                                     {"activityMetadata": {"memoryActivity": "EATING"}}]}}}])
def test_json_of_wrong_shape(doc):
    with pytest.raises(ProfileError):
        parse_memory_profile(json.dumps(doc).encode())


def test_proto_of_another_type():
    space = xplane_pb2.XSpace(hostnames=["h"])
    plane = space.planes.add(id=1, name="/host:CPU")
    plane.lines.add(id=2, name="python").events.add(metadata_id=1, offset_ps=5, duration_ps=7)
    with pytest.raises(ProfileError, match="not a MemoryProfile"):
        parse_memory_profile(space.SerializeToString())
    stats = step_stats_pb2.StepStats()
    dev = stats.dev_stats.add(device="/job:localhost/replica:0/task:0/device:CPU:0")
    dev.node_stats.add(node_name="MatMul", all_start_micros=10, timeline_label="MatMul = MatMul(a, b)")
    with pytest.raises(ProfileError):
        parse_memory_profile(stats.SerializeToString())


def test_truncated_binary():
    msg = memory_profile_pb2.MemoryProfile()
    snap = msg.memory_profile_per_allocator["GPU_0_bfc"].memory_profile_snapshots.add(time_offset_ps=5)
    snap.activity_metadata.tf_op_name = "MatMul"
    data = msg.SerializeToString()
    with pytest.raises(ProfileError, match="truncated|malformed"):
        parse_memory_profile(data[:-3])


def test_empty_profile_says_how_to_get_memory_events():
    with pytest.raises(ProfileError, match="TF_CPU_ALLOCATOR_USE_BFC"):
        parse_memory_profile(json.dumps({"memoryProfilePerAllocator": {}, "memoryIds": []}).encode())
    with pytest.raises(ProfileError, match="empty"):
        parse_memory_profile(b"")


def test_file_that_vanishes(tmp_path):
    path = write(tmp_path, "h.memory_profile.json", SMALL_XPROF.read_bytes())
    from profscope.models.repository.locations import open_repository
    repo = open_repository(tmp_path)
    path.unlink()
    with pytest.raises(ProfileError, match="does not exist"):
        repo.memory_profile(tmp_path.name, "h")


def test_cli_reports_errors_without_traceback(tmp_path, capsys):
    bad = write(tmp_path, "x.memory_profile.json", b"{not json")
    assert main(["export", str(bad), "--tool", "memory_profile"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("profscope: error:") and "invalid JSON" in err and "Traceback" not in err
    assert main(["sessions", str(tmp_path / "missing")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["sessions", str(DATA / "producers")]) == 1
    err = capsys.readouterr().err
    assert "`profscope formats`" in err and err.count("\n") == 1
