"""Hostile input, one test per class of the fuzzing issue: deep nesting,
compression bombs and corrupt compression, corrupt payloads nested inside
valid records, and the limits a user is told how to raise."""

import gzip
import os

import numpy as np
import pytest
from conftest import DATA

from profscope.models.core import guards
from profscope.models.core.files import read_bytes
from profscope.models.core.task import ProfileError
from profscope.models.formats.log_memory import load_memory_log
from profscope.models.formats.step_stats import load_step_timeline, locate
from profscope.models.formats.xspace.memory import xplane_memory_profile
from profscope.models.formats.xspace.timeline import load_xplane_timeline
from profscope.models.hparams.experiment import HParamsData
from profscope.models.hparams.logdir import read_logdir
from profscope.models.repository.locations import open_repository
from profscope.protos import api_pb2, step_stats_pb2, xplane_pb2
from profscope.viewer.cli import main

STEP_STATS_TEXT = DATA / "step_stats" / "step_stats.pbtxt"
RUN_METADATA = DATA / "step_stats" / "run_metadata.pb"
XSPACE = DATA / "xprof" / "small.xplane.pb"


# ---------------------------------------------------------------- nesting


def test_text_nesting_ignores_brackets_in_strings_and_comments():
    text = b'a { b { c: "}}}{{{" d: \'<[\' } }  # {{{{\ne < f: "\\"{" >'
    assert guards.text_nesting(text) == 2
    assert guards.text_nesting("{" * 300 + "}" * 300) == 300


@pytest.mark.parametrize("name,head", [("deep.pbtxt", "dev_stats {"), ("deep_meta.pbtxt", "step_stats {")])
def test_deeply_nested_text_step_stats_is_refused_with_the_limit(tmp_path, monkeypatch, name, head):
    path = tmp_path / name
    path.write_text(head + " node_stats {" + " output { tensor_description {" * 5000 + "\n")
    with pytest.raises(ProfileError, match=r"nested more than 100 levels deep.*PROFSCOPE_MAX_NESTING"):
        load_step_timeline(locate(path))
    # Raised beyond what the parser's stack holds: still a message, not a RecursionError.
    monkeypatch.setenv("PROFSCOPE_MAX_NESTING", "1000000")
    with pytest.raises(ProfileError, match="nested more than 1000000 levels deep|not a valid"):
        load_step_timeline(locate(path))


def test_text_step_stats_within_the_limit_still_reads():
    assert len(load_step_timeline(locate(STEP_STATS_TEXT))) > 0


def test_text_on_long_lines_reads_as_the_same_message():
    """protobuf's text parser copies the current line into an error per
    value it skips: quadratic on one long line (a 500 KB line of unknown list
    values took minutes). Re-breaking such text between tokens must not change
    what it says: strings (with spaces, commas, quotes) and comments stay whole."""
    text = STEP_STATS_TEXT.read_bytes()
    unknown = b'zzz: [' + b",".join([b"7"] * 50_000) + b'] yyy { s: "a b,c;d # e \\" f" t: 1;u: 2 }  # x, y\n'
    one_line = b" ".join(text.split(b"\n")).replace(b"node_stats {", b"node_stats { " + unknown, 1)
    expected = guards.parse_text(text, step_stats_pb2.StepStats(), "text")
    assert guards.parse_text(one_line, step_stats_pb2.StepStats(), "one line") == expected
    assert len(expected.dev_stats[0].node_stats) > 10


def test_deeply_nested_log_memory_line_is_a_garbled_line(tmp_path):
    p = "I0501 10:00:01.000000 1 log_memory.cc:34] __LOG_MEMORY__ "
    good = (p + 'MemoryLogRawAllocation { step_id: 1 operation: "op" num_bytes: 8 allocation_id: 6 '
            'allocator_name: "cpu" }\n')
    deep = p + "MemoryLogTensorAllocation { tensor { shape { " + "x { " * 20000 + "} " * 20000 + "} } }\n"
    log = tmp_path / "deep.log"
    log.write_text(good + deep)
    data = load_memory_log(log)
    assert len(data.allocators["cpu"].timeline) == 1 and data.log.garbled == 1
    assert any("PROFSCOPE_MAX_NESTING" in p for p in data.log.problems)


# ---------------------------------------------------------------- compression


def bomb(tmp_path, name: str, payload: bytes, inflated: int) -> os.PathLike:
    """A gzip file of `payload` then zeros up to `inflated` bytes, compressed
    in pieces so building it stays cheap."""
    path = tmp_path / name
    with gzip.open(path, "wb", compresslevel=9) as f:
        f.write(payload)
        zeros = bytes(1 << 20)
        for _ in range(inflated >> 20):
            f.write(zeros)
    return path


def test_gzip_bomb_is_refused_before_it_fills_the_memory(tmp_path, monkeypatch):
    monkeypatch.setattr(guards, "MIN_INFLATE_LIMIT", 4 << 20)
    path = bomb(tmp_path, "h.memory_profile.pb.gz", RUN_METADATA.read_bytes(), 64 << 20)
    assert path.stat().st_size < 200_000
    with pytest.raises(ProfileError, match=r"inflates to more than .* MiB .*PROFSCOPE_MAX_INFLATE_RATIO \(now 200\)"):
        read_bytes(path)
    monkeypatch.setenv("PROFSCOPE_MAX_INFLATE_RATIO", "100000")
    assert len(read_bytes(path)) > 64 << 20


def test_gzip_bomb_in_a_log_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(guards, "MIN_INFLATE_LIMIT", 4 << 20)
    line = ('I0501 10:00:01.000000 1 log_memory.cc:34] __LOG_MEMORY__ MemoryLogRawAllocation { step_id: 1 '
            'operation: "op" num_bytes: 8 allocation_id: 6 allocator_name: "cpu" }\n')
    path = bomb(tmp_path, "train.log.gz", line.encode(), 64 << 20)
    with pytest.raises(ProfileError, match="PROFSCOPE_MAX_INFLATE_RATIO"):
        load_memory_log(path)


def test_corrupt_gzip_at_scan_time_spoils_only_its_own_file(tmp_path, capsys):
    session = tmp_path / "plugins" / "profile" / "run1"
    session.mkdir(parents=True)
    (session / "good.xplane.pb").write_bytes(XSPACE.read_bytes())
    damaged = bytearray(gzip.compress(STEP_STATS_TEXT.read_bytes()))
    damaged[12:40] = b"\xff" * 28
    (session / "bad.pbtxt.gz").write_bytes(bytes(damaged))
    (session / "bad2.pb.gz").write_bytes(bytes(damaged))
    sessions = open_repository(tmp_path).enum_sessions()
    assert [s.name for s in sessions] == ["run1"] and "good" in sessions[0].hosts
    assert main(["sessions", str(tmp_path)]) == 0
    assert "Traceback" not in capsys.readouterr().err


# ---------------------------------------------------------------- nested payloads


def corrupt_stat_space(tmp_path) -> os.PathLike:
    """small.xplane.pb with one event's stat made invalid inside its valid
    length-delimited frame: the stat's metadata id becomes an invalid wire type."""
    space = xplane_pb2.XSpace.FromString(XSPACE.read_bytes())
    marker = 0x0ABCDE
    for plane in space.planes:
        for line in plane.lines:
            for event in line.events:
                if event.stats:
                    event.stats[0].metadata_id = marker
                    break
            else:
                continue
            break
        else:
            continue
        break
    data = bytearray(space.SerializeToString())
    # XStat.metadata_id is field 1, a varint: tag 0x08, then the marker.
    at = data.find(b"\x08" + encode_varint(marker))
    assert at > 0
    data[at] = 0x0F  # field 1, wire type 7: no such wire type
    path = tmp_path / "host.xplane.pb"
    path.write_bytes(bytes(data))
    return path


def encode_varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def test_corrupt_xstat_is_a_message_for_every_analysis(tmp_path):
    path = corrupt_stat_space(tmp_path)
    with pytest.raises(ProfileError, match="host.xplane.pb: corrupt event stats"):
        xplane_memory_profile(path)
    with pytest.raises(ProfileError, match="host.xplane.pb: corrupt event stats"):
        load_xplane_timeline([path], ["host"])


def test_corrupt_hparams_plugin_data_in_a_valid_record(tmp_path):
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    run = tmp_path / "run1"
    writer = EventFileWriter(str(run))
    value = summary_pb2.Summary.Value(tag="_hparams_/session_start_info")
    value.metadata.plugin_data.plugin_name = "hparams"
    value.metadata.plugin_data.content = b"\x0a\xff\xff\xff\xff\x0f"  # a length past the end
    writer.add_event(event_pb2.Event(wall_time=1.0, summary=summary_pb2.Summary(value=[value])))
    writer.close()
    with pytest.raises(ProfileError, match="run 'run1'.*plugin data.*corrupt"):
        HParamsData(read_logdir(tmp_path)).list_session_groups(api_pb2.ListSessionGroupsRequest())


def test_corrupt_node_in_an_unchanged_step_stats_file_is_not_called_a_change(tmp_path):
    stats = step_stats_pb2.StepStats()
    dev = stats.dev_stats.add(device="/job:localhost/replica:0/task:0/device:CPU:0")
    for i in range(3):
        node = dev.node_stats.add(node_name=f"n{i}", all_start_micros=100 + 10 * i, op_end_rel_micros=5)
        node.timeline_label = f"n{i} = Op()"
    data = bytearray(stats.SerializeToString())
    path = tmp_path / "step.pb"
    path.write_bytes(bytes(data))
    timeline = load_step_timeline(locate(path))
    # Damage the first node's name tag in place (same size): an invalid wire type.
    at = data.find(b"\x0a\x02n0")
    data[at] = 0x0F
    stamp = os.stat(path)
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    i = int(np.flatnonzero(np.char.startswith(np.asarray([timeline.names[k] for k in range(len(timeline))]), "n0"))[0])
    with pytest.raises(ProfileError) as caught:
        timeline.details(i)
    assert "changed on disk" not in str(caught.value) and "corrupt" in str(caught.value)
    path.write_bytes(bytes(data) + b"\x00")  # now it did change
    with pytest.raises(ProfileError, match="changed on disk"):
        timeline.details(i)
