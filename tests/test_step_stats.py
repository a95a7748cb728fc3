"""Step timelines from StepStats / RunMetadata: sources, model, timeline.py
equivalence, event-file framing and bad input."""

import hashlib
import json
import random
import re
import tempfile
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from conftest import DATA
from tensorboard.compat.proto import event_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

from profscope.models.core import _protowire as wire
from profscope.models.core.event_file import tagged_run_metadata
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.memory_profile import allocation_indices, free_indices
from profscope.models.data.timeline import LaneIndex
from profscope.models.formats import _stepstats
from profscope.models.formats import step_stats as step_stats_module
from profscope.models.formats.step_stats import (
    FORMAT,
    chrome_trace,
    chrome_trace_json,
    load_step_timeline,
    locate,
    parse_kernel_label,
    parse_op_label,
    step_memory_profile,
)
from profscope.models.repository.locations import open_repository
from profscope.protos import step_stats_pb2
from profscope.viewer.cli import main

STEPS = DATA / "step_stats"
EVENTS = STEPS / "events.out.tfevents.1795317160.vm"
SOURCES = ["run_metadata.pb", "run_metadata.pbtxt", "step_stats.pbtxt", EVENTS.name]


def write_events(path, events):
    """An event file framed by TensorBoard's own RecordWriter."""
    with open(path, "wb") as f:
        writer = RecordWriter(f)
        for event in events:
            writer.write(event.SerializeToString())
    return path


def tagged(tag, run_metadata: bytes, step=0):
    return event_pb2.Event(wall_time=1.0, step=step,
                           tagged_run_metadata=event_pb2.TaggedRunMetadata(tag=tag, run_metadata=run_metadata))


def node(name, start_us, dur_us, label=None, thread=0, outputs=()):
    n = step_stats_pb2.NodeExecStats(node_name=name, all_start_micros=start_us, all_end_rel_micros=dur_us,
                                     timeline_label=label if label is not None else f"{name} = Op()", thread_id=thread)
    for nbytes in outputs:
        out = n.output.add()
        out.tensor_description.allocation_description.requested_bytes = nbytes
        out.tensor_description.allocation_description.allocator_name = "gpu_bfc"
    return n


def step_stats(devices):
    ss = step_stats_pb2.StepStats()
    for name, nodes in devices.items():
        d = ss.dev_stats.add(device=name)
        d.node_stats.extend(nodes)
    return ss


def ops_by_device(doc, suffix=""):
    names = {e["pid"]: e["args"]["name"].removesuffix(suffix) for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "process_name"}
    return sorted((names[e["pid"]], e["name"], e["ts"], e["dur"], json.dumps(e["args"], sort_keys=True))
                  for e in doc["traceEvents"] if e["ph"] == "X")


def counters(doc):
    return sorted((e["name"], e["ts"], json.dumps(e["args"])) for e in doc["traceEvents"] if e["ph"] == "C")


# ---------------------------------------------------------------- real TensorFlow output


@pytest.mark.parametrize("name", SOURCES)
def test_every_source_gives_the_same_timeline(name):
    source = locate(STEPS / name)
    tl = load_step_timeline(source)
    assert len(tl) == 40 and tl.groups == ["/job:localhost/replica:0/task:0/device:CPU:0",
                                           "/job:localhost/replica:0/task:0/device:CPU:1"]
    assert tl.lane_names == ["lane 0", "lane 1", "lane 0"]  # TF 2.21 records no thread ids
    reference = load_step_timeline(locate(STEPS / "run_metadata.pb"))
    assert np.array_equal(tl.start_ps, reference.start_ps) and tl.origin_ns == reference.origin_ns
    assert [tl.names[i] for i in range(len(tl))] == [reference.names[i] for i in range(len(tl))]
    # lanes never hold overlapping events
    for lane in range(tl.num_lanes):
        a, b = tl.lane_offsets[lane], tl.lane_offsets[lane + 1]
        assert np.all(tl.start_ps[a + 1:b] >= tl.end_ps[a:b - 1])


def test_exported_trace_matches_tensorflow_timeline_py():
    """Same ops, names, inputs and times per device, and the same memory
    counters, as TensorFlow's own timeline.py (show_memory) on that file."""
    ours = chrome_trace(locate(STEPS / "run_metadata.pb"))
    theirs = json.loads((STEPS / "timeline.json").read_text())
    assert ops_by_device(ours) == ops_by_device(theirs, " Compute")
    assert counters(ours) == counters(theirs) and len(counters(ours)) == 70


def test_allocator_peaks_match_timeline_py():
    expected = json.loads((STEPS / "allocator_maximums.json").read_text())
    memory = step_memory_profile(locate(STEPS / "run_metadata.pb"))
    assert memory.memory_ids == sorted(expected)
    for name, peak in expected.items():
        profile = memory.allocators[name]
        assert profile.summary.peak_heap == peak["num_bytes"] == 246192
        assert sorted(profile.peak_allocations.op) == peak["tensors"]
        tl = profile.timeline
        trace = json.loads((STEPS / "timeline.json").read_text())["traceEvents"]
        origin_us = min(e["ts"] for e in trace if e["ph"] == "C" and e["name"] == name)
        assert origin_us + tl.time_ps[profile.peak_index] // 1_000_000 == peak["timestamp"]
    assert memory.allocators["mklcpu"].peak_allocations.total_bytes == 246192


def test_event_file_steps_and_details():
    found, warnings = tagged_run_metadata(EVENTS)
    assert [t.tag for t in found] == ["step_1", "step_2"] and [t.step for t in found] == [1, 2] and not warnings
    second = load_step_timeline(locate(EVENTS, "step_2"))
    first = load_step_timeline(locate(EVENTS))
    assert second.origin_ns > first.origin_ns
    i = next(k for k in range(len(first)) if first.names[k] == "MatMul/ReadVariableOp")
    rows = dict(first.details(i))
    assert rows["op"] == "ReadVariableOp" and rows["input 0"] == "w1"
    assert rows["output 0"].startswith("float (128,256), 131,072 bytes requested on mklcpu")
    assert rows["all_start_micros"] == "1795317160912741" and "output[0].tensor_description.dtype" in rows
    with pytest.raises(ProfileError, match="no run metadata tagged 'nope'; tags: step_1, step_2"):
        locate(EVENTS, "nope")


def test_cli_exports_a_chosen_step(tmp_path, capsys):
    out = tmp_path / "trace.json"
    args = ["export", str(STEPS), "--tool", "trace_viewer", "--host", "vm", "--param", "step=step_2", "-o", str(out)]
    assert main(args) == 0
    doc = json.loads(out.read_text())
    xs = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(xs) == 40 and all(e["ts"] > 1795317160912741 + 1000 for e in xs)
    assert {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"} == {"lane 0", "lane 1"}
    assert main(["export", str(STEPS / "run_metadata.pb"), "--tool", "trace_viewer", "--param", "step=x"]) == 1
    assert "holds one step" in capsys.readouterr().err


# ---------------------------------------------------------------- labels and lanes


def test_op_labels_parse_as_timeline_py_does():
    rng = random.Random(7)
    alphabet = ["a", " = ", "(", ")", ", ", "x", "\n", "="]
    for _ in range(3000):
        label = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 10)))
        m = re.match(r"(.*) = (.*)\((.*)\)", label)
        expected = ("unknown", "unknown", []) if m is None else (m[1], m[2], m[3].split(", ") if m[3] else [])
        assert parse_op_label(label) == expected, label
    assert parse_op_label("MatMul = MatMul(x, w1/read)") == ("MatMul", "MatMul", ["x", "w1/read"])


def test_gpu_stream_kernels_threads_and_packing(tmp_path):
    ss = step_stats(
        {
            "/job:w/replica:0/task:0/device:GPU:0/stream:7": [
                node("k", 100, 5, "volta_sgemm @@dense/MatMul:MatMul#id=3#"),
                node("dense/BiasAdd:BiasAdd", 110, 2, "kernel"),  # no @@: the node name names it
            ],
            "/job:w/replica:0/task:0/device:CPU:0": [
                node("a", 100, 50, thread=1),
                node("b", 120, 10, thread=1),  # b overlaps a on thread 1
                node("c", 100, 5, thread=2),
                node("RecvTensor", 130, 5, "RecvTensor = Weird(", thread=2),
            ],
        }
    )
    ss.dev_stats[1].thread_names[2] = "inter-op"
    tl = _timeline_from_bytes(tmp_path, ss.SerializeToString())
    gpu = [tl.names[i] for i in range(len(tl)) if tl.event_group[i] == 0]
    assert gpu == ["dense/MatMul", "dense/BiasAdd"]
    assert [tl.kinds[tl.kind[i]] for i in range(2)] == ["MatMul", "BiasAdd"]
    assert tl.lane_names == ["lane 0", "thread 1", "thread 1 (2)", "thread 2 inter-op"]
    names = {tl.names[i]: tl.kinds[tl.kind[i]] for i in range(len(tl))}
    assert names["RecvTensor"] == "RecvTensor" and names["a"] == "Op"
    assert parse_kernel_label("x @@n:Op#id#", "other") == ("n", "Op")
    assert parse_kernel_label("x", "plain") == ("plain", "unknown")


def _timeline_from_bytes(folder, data: bytes):
    path = folder / "s.pb"
    path.write_bytes(data)
    return load_step_timeline(locate(path))


def test_lane_index_finds_what_brute_force_finds():
    rng = np.random.default_rng(3)
    dur = rng.integers(0, 5000, 2000) * rng.choice([1, 1000], 2000)
    start = np.cumsum(np.r_[0, dur[:-1]] + rng.integers(0, 100, 2000))
    index = LaneIndex(start, dur, 0)
    for t0, px in ((0.0, 7.0), (start[500] + 0.5, 1300.0), (start[1500], 50000.0)):
        t1 = t0 + 800 * px
        expected = np.flatnonzero((start < t1) & (start + dur > t0) & (dur >= px))
        assert np.array_equal(index.wide(t0, t1, px), expected)
        occupied, first = index.first_in_pixels(t0, px, 800)
        col = ((start - t0) // px).astype(int)
        inside = (col >= 0) & (col < 800)
        assert set(np.flatnonzero(occupied)) >= set(col[inside])


def test_search_and_statistics():
    tl = load_step_timeline(locate(STEPS / "run_metadata.pb"))
    hits = tl.find("matmul")
    assert {tl.kinds[k] for k in tl.kind[hits]} >= {"_MklMatMul"} and len(hits) == 7
    assert len(tl.find("MatMul/ReadVariableOp")) == 1
    stats = tl.kind_stats()
    assert stats.count.sum() == 40 and stats.total_ps.sum() == tl.duration_ps.sum()
    assert tl.kinds[stats.kind[0]] == "_MklMatMul" and stats.total_ps[0] == stats.total_ps.max()
    a, b = tl.span_ps
    half = tl.kind_stats(tl.overlapping(a, (a + b) / 2), clip=(a, (a + b) / 2))
    assert half.total_ps.sum() <= (b - a) / 2 * tl.num_lanes


# ---------------------------------------------------------------- bad input


def test_event_file_framing_errors(tmp_path):
    md = (STEPS / "run_metadata.pb").read_bytes()
    events = [event_pb2.Event(wall_time=0.5, file_version="brain.Event:2"), tagged("s1", md), tagged("s2", md)]
    good = write_events(tmp_path / "events.out.tfevents.1.host", events).read_bytes()
    first_len = 12 + len(events[0].SerializeToString()) + 4
    second_len = 12 + len(events[1].SerializeToString()) + 4

    bad_data = bytearray(good)
    bad_data[first_len + 12 + 40] ^= 0xFF  # inside record 2's data
    (tmp_path / "events.out.tfevents.1.host").write_bytes(bad_data)
    found, warnings = tagged_run_metadata(tmp_path / "events.out.tfevents.1.host")
    assert [t.tag for t in found] == ["s2"] and "failed the CRC check" in warnings[0]

    bad_header = bytearray(good)
    bad_header[first_len + 3] ^= 0xFF  # record 2's length
    (tmp_path / "events.out.tfevents.1.host").write_bytes(bad_header)
    found, warnings = tagged_run_metadata(tmp_path / "events.out.tfevents.1.host")
    assert [t.tag for t in found] == ["s2"] and f"skipped {second_len:,} bytes" in warnings[0]

    (tmp_path / "events.out.tfevents.1.host").write_bytes(good[:-30])  # still being written
    found, warnings = tagged_run_metadata(tmp_path / "events.out.tfevents.1.host")
    assert [t.tag for t in found] == ["s1"] and "incomplete last record" in warnings[0]
    assert load_step_timeline(locate(tmp_path / "events.out.tfevents.1.host")).warnings == warnings


def test_event_file_without_run_metadata(tmp_path):
    path = write_events(tmp_path / "events.out.tfevents.2.host", [event_pb2.Event(wall_time=1, step=3)])
    with pytest.raises(ProfileError, match="holds no run metadata .FileWriter.add_run_metadata"):
        open_repository(path)
    with pytest.raises(ProfileError, match="found no profile data"):
        open_repository(tmp_path)


@pytest.mark.parametrize("cut", [10, 200, 4000, 8000])
def test_truncated_binary_is_a_clear_error(tmp_path, cut):
    data = (STEPS / "run_metadata.pb").read_bytes()[:cut]
    path = tmp_path / "rm.pb"
    path.write_bytes(data)
    with pytest.raises(ProfileError, match="corrupt|is not a StepStats"):
        load_step_timeline(locate(path))


def test_wrong_files_say_what_they_are_not(tmp_path):
    other = tmp_path / "other.pb"
    other.write_bytes(b"\x08\x96\x01" * 10)
    with pytest.raises(ProfileError, match="is not a StepStats or RunMetadata"):
        locate(other)
    text = tmp_path / "notes.txt"
    text.write_text("hello world\n")
    with pytest.raises(ProfileError, match="is not a StepStats or RunMetadata"):
        open_repository(text)
    broken = tmp_path / "rm.pbtxt"
    broken.write_text("step_stats { dev_stats { device: 'x' node_stats { all_start_micros: oops } } }")
    with pytest.raises(ProfileError, match="not a valid RunMetadata in text format"):
        load_step_timeline(locate(broken))


def test_missing_negative_times_and_empty_devices_are_warnings(tmp_path):
    ss = step_stats(
        {"/device:CPU:0": [node("ok", 100, 5), node("never", 0, 0), node("neg", 120, -3)], "/device:GPU:0": []}
    )
    tl = _timeline_from_bytes(tmp_path, ss.SerializeToString())
    assert len(tl) == 2 and tl.duration_ps.min() == 0
    text = " / ".join(tl.warnings)
    assert "1 node(s) without a start time" in text and "negative duration" in text and "/device:GPU:0" in text


def test_empty_step_stats_and_decoder_bounds(tmp_path):
    tl = _timeline_from_bytes(
        tmp_path, step_stats_pb2.StepStats(dev_stats=[step_stats_pb2.DeviceStepStats(device="/d")]).SerializeToString()
    )
    assert len(tl) == 0 and "no timed nodes" in tl.warnings[0]
    with pytest.raises(ValueError, match="malformed"):
        wire.find_children(b"\x12\x05ab", np.array([[0, 4]]), [2])


# ---------------------------------------------------------------- seeded random steps

NAME_POOL = [
    "a",
    "b/c",
    "x/_1",
    "layer/MatMul",
    "RecvTensor",
    "",
    "é/ß",
    'q"uote',
    "back\\slash",
    "tab\tnl\n",
    "𝄞clef",
    "ctl\x01\x1f",
    "a/_2/_3",
    "w:1",
    "π",
]
ALLOCATORS = ["cpu", "gpu_bfc", "", "cuda_host_bfc", "é"]


def random_step_stats(seed: int, nodes: int = 300) -> step_stats_pb2.StepStats:
    """A StepStats exercising the corners of timeline.py's reading: GPU
    stream and memcpy devices, RecvTensor, odd labels (no match, empty op,
    newlines), escapes and non-ASCII text, repeated node names, Send/Recv
    suffixes, missing and negative times, nanosecond fields, thread names,
    tensors of every allocator with unknown ranks and dtypes."""
    rng = random.Random(seed)
    ss = step_stats_pb2.StepStats()
    devices = [
        "/job:w/replica:0/task:0/device:CPU:0",
        "/job:w/replica:0/task:0/device:GPU:0/stream:7",
        "/job:w/replica:0/task:0/device:GPU:0/memcpy",
        "/device:CPU:ü",
        "/device:empty",
    ]
    pick = lambda: rng.choice(NAME_POOL) + (str(rng.randint(0, 5)) if rng.random() < 0.5 else "")
    for d, device in enumerate(devices):
        dev = ss.dev_stats.add(device=device)
        if d == 4:
            continue
        if d == 0:
            dev.thread_names[1] = "inter-op"
            dev.thread_names[2] = "é"
        for _ in range(nodes // 4):
            name = pick()
            inputs = ", ".join(pick() for _ in range(rng.randint(0, 3)))
            op = rng.choice(["MatMul", "", "Add", "Send", "ü"])
            label = rng.choice(
                [
                    f"{name} = {op}({inputs})",
                    f"{name} = {op}({inputs})\nmore = X(y)",
                    "garbage",
                    f"k @@{name}:{op}#id=1#",
                    f"k @@{name}#",
                    "",
                    f"{name} = {op}(",
                    "a = b(c) = d(e)",
                ]
            )
            start = rng.choice([0, rng.randint(1_000, 9_000)]) if rng.random() < 0.1 else rng.randint(1_000, 9_000)
            n = step_stats_pb2.NodeExecStats(
                node_name=name,
                all_start_micros=start,
                all_end_rel_micros=rng.randint(-5, 300),
                timeline_label=label,
                thread_id=rng.choice([0, 1, 2]) if d == 0 else 0,
            )
            if rng.random() < 0.3:
                n.all_start_nanos = start * 1000 + rng.randint(0, 999)
                n.all_end_rel_nanos = n.all_end_rel_micros * 1000 + rng.randint(0, 999)
            for _ in range(rng.choice([0, 1, 1, 2, 3])):
                desc = n.output.add(slot=rng.randint(0, 3)).tensor_description
                desc.dtype = rng.choice([1, 3, 9, 10, 999])
                if rng.random() < 0.1:
                    desc.shape.unknown_rank = True
                else:
                    for _ in range(rng.randint(0, 3)):
                        desc.shape.dim.add(size=rng.choice([-1, 1, 7, 128, 2**40]))
                alloc = desc.allocation_description
                alloc.requested_bytes = rng.choice([0, 4, 64, 4096, 1 << 33])
                alloc.allocated_bytes = rng.choice([0, alloc.requested_bytes, alloc.requested_bytes + 8])
                alloc.allocator_name = rng.choice(ALLOCATORS)
            dev.node_stats.append(n)
    return ss


def export_digests(folder, seeds=(1, 2, 3, 21)) -> dict[str, str]:
    """sha256 (16 hex digits) of the trace_viewer and memory_profile exports
    (full and xprof_form=1) of random_step_stats(seed), the file's path
    replaced by SOURCE."""
    digests = {}
    for seed in seeds:
        ss = random_step_stats(seed, 400 if seed < 20 else 4000)
        path = folder / f"rand{seed}.pb"
        path.write_bytes(ss.SerializeToString())
        repo = open_repository(path)
        session = repo.enum_sessions()[0].name
        for tool, params in (("trace_viewer", {}), ("memory_profile", {}), ("memory_profile", {"xprof_form": "1"})):
            data = repo.tool_data(session, tool, "", params).output.replace(json.dumps(str(path)).encode(), b'"SOURCE"')
            digests[f"{seed} {tool} {params}"] = hashlib.sha256(data).hexdigest()[:16]
    return digests


# Made with Profscope 2772d32, before the memory analysis and the Chrome
# export moved to columns: the bytes of every export must stay the same.
EXPORT_DIGESTS = {
    "1 trace_viewer {}": "3ffc38766830b4ca",
    "1 memory_profile {}": "0ee4e77b1151b2e2",
    "1 memory_profile {'xprof_form': '1'}": "7868db70d7ce692d",
    "2 trace_viewer {}": "88243c7e58228f14",
    "2 memory_profile {}": "ded4d4601ba4041c",
    "2 memory_profile {'xprof_form': '1'}": "8a4fb87ad276e9ef",
    "3 trace_viewer {}": "0293a3115fb67d3a",
    "3 memory_profile {}": "d4c705bc1513eda5",
    "3 memory_profile {'xprof_form': '1'}": "d80c50506a92395b",
    "21 trace_viewer {}": "bdd1aad2612a5cb6",
    "21 memory_profile {}": "b4725fbc3b5e0288",
    "21 memory_profile {'xprof_form': '1'}": "d25fdff447f341b2",
}


def test_exports_keep_their_bytes(tmp_path):
    assert export_digests(tmp_path) == EXPORT_DIGESTS


def test_trace_streams_in_chunks_with_the_same_bytes(tmp_path, monkeypatch):
    path = tmp_path / "s.pb"
    path.write_bytes(random_step_stats(5).SerializeToString())
    whole = chrome_trace_json(locate(path))
    monkeypatch.setattr(step_stats_module, "ROWS_PER_CHUNK", 7)
    chunks = list(FORMAT.chrome_trace([path], "s", "", TaskState()))
    assert len(chunks) > 20 and b"".join(chunks) == whole
    out = tmp_path / "trace.json"
    assert main(["export", str(path), "--tool", "trace_viewer", "-o", str(out)]) == 0
    assert out.read_bytes() == whole and json.loads(whole)["otherData"]["source"] == str(path)


def test_corrupt_node_fails_before_any_output(tmp_path):
    node = step_stats_pb2.NodeExecStats(
        node_name="a", all_start_micros=5, timeline_label="a = Op()"
    ).SerializeToString()
    bad = node + b"\x3a\x03\x1a\x05\x08"  # an output whose tensor_description runs past the output
    dev = step_stats_pb2.DeviceStepStats(device="/device:CPU:0").SerializeToString()
    data = b"\x0a" + bytes([len(dev) + 2 + len(bad)]) + dev + b"\x12" + bytes([len(bad)]) + bad
    path = tmp_path / "bad.pb"
    path.write_bytes(data)
    for produce in (
        lambda: FORMAT.chrome_trace([path], "bad", "", TaskState()),
        lambda: step_memory_profile(locate(path)),
    ):
        with pytest.raises(ProfileError, match="corrupt StepStats: malformed protobuf data"):
            produce()


def _node_bytes(name: bytes, label: bytes, start: int = 7, dur: int = 3) -> bytes:
    """A NodeExecStats on the wire, strings taken as given (even invalid UTF-8)."""

    def field(number, payload):
        return bytes([number << 3 | 2]) + _varint(len(payload)) + payload

    return field(1, name) + bytes([2 << 3]) + _varint(start) + bytes([5 << 3]) + _varint(dur) + field(8, label)


def _varint(v: int) -> bytes:
    out = b""
    while True:
        out += bytes([v & 0x7F | (0x80 if v > 0x7F else 0)])
        v >>= 7
        if not v:
            return out


def test_trace_rows_are_json_dumps_of_what_python_decodes():
    """Escapes (quotes, controls, DEL, non-ASCII, surrogate pairs), invalid
    UTF-8 (replaced as Python's decode replaces it) and label splitting, row
    for row against json.dumps of timeline.py's reading."""
    rng = random.Random(11)
    pieces = [
        b"a",
        b"Z",
        b" = ",
        b"(",
        b")",
        b", ",
        b"\n",
        b'"',
        b"\\",
        b"\x01",
        b"\x7f",
        b"\t",
        "é".encode(),
        "𝄞".encode(),
        b"\xe2\x82",
        b"\xff",
        b"\xc0\xaf",
        b"\xed\xa0\x80",
        b"@@",
        b"#",
        b":",
        b"RecvTensor",
    ]
    buf, spans, expected, kernels = b"", [], [], []
    for k in range(3000):
        name = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 4)))
        label = b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 9)))
        if k % 10 == 0:
            name = b"RecvTensor"
        kernel = k % 3 == 0
        node = _node_bytes(name, label)
        spans.append((len(buf), len(node)))
        buf += node
        kernels.append(kernel)
        text, label_text = name.decode("utf-8", "replace"), label.decode("utf-8", "replace")
        inputs = []
        if kernel:
            node_name, op = parse_kernel_label(label_text, text)
        elif text == "RecvTensor":
            node_name, op = text, "RecvTensor"
        else:
            node_name = text
            _, op, inputs = parse_op_label(label_text)
        args = {"name": node_name, "op": op, **{f"input{i}": x for i, x in enumerate(inputs)}}
        expected.append(
            ","
            + json.dumps(
                {"ph": "X", "cat": "Op", "name": op, "pid": 2, "tid": k, "ts": 7, "dur": 3, "args": args},
                separators=(",", ":"),
            )
        )
    n = len(spans)
    out = _stepstats.trace_events(buf, np.array(spans), np.array(kernels), np.full(n, 2), np.arange(n))
    assert out.decode("ascii") == "".join(expected)


def test_tensor_lifetimes_follow_timeline_py():
    """A later tensor of a name replaces the earlier one in its place; inputs
    with a /_ suffix count for the original node; GPU kernels and RecvTensor
    consume nothing; allocations of one time and size are ordered by name."""
    ss = step_stats(
        {
            "/device:CPU:0": [
                node("b", 10, 5, outputs=[100]),
                node("c", 10, 5, outputs=[100]),
                node("a", 10, 5, outputs=[100, 8]),
                node("use", 20, 10, "use = Op(a/_3, a:1)"),
                node("b", 40, 5, outputs=[60]),
                node("RecvTensor", 50, 50, "RecvTensor = Recv(b)"),
            ],
            "/device:GPU:0/stream:1": [node("k", 60, 10, "k = Op(b)")],
        }
    )
    with _step_file(ss) as path:
        profile = step_memory_profile(locate(path)).allocators["gpu_bfc"]
    tl = profile.timeline
    rows = [(int(t) // 1_000_000, tl.strings[op], int(h)) for t, op, h in zip(tl.time_ps, tl.op, tl.heap)]
    assert rows == [
        (0, "a:1", 8),
        (0, "a", 108),
        (0, "c", 208),
        (5, "c", 108),
        (19, "a", 8),
        (19, "a:1", 0),
        (30, "b", 60),
        (35, "b", 0),
    ]
    assert list(tl.address[tl.activity == 1]) == [4, 3, 2, 1]  # first seen: b, c, a, a:1
    assert profile.summary.peak_heap == 208 and sorted(profile.peak_allocations.op) == ["a", "a:1", "c"]


def test_memory_view_pairs_allocations_as_by_address(tmp_path):
    """The allocation/free pairs handed to the memory view are those the
    model finds by address (a free before its allocation frees nothing)."""
    for seed in range(6, 12):
        path = tmp_path / f"r{seed}.pb"
        path.write_bytes(random_step_stats(seed).SerializeToString())
        for profile in step_memory_profile(locate(path)).allocators.values():
            allocs, frees = profile.lifetimes
            assert np.array_equal(allocs, allocation_indices(profile.timeline))
            assert np.array_equal(frees, free_indices(profile.timeline))


def test_event_order_is_a_lexsort():
    rng = np.random.default_rng(4)
    for high in (50, 1 << 40, 1 << 62):  # one combined key, then too wide for one
        first, second = rng.integers(-high, high, 5000), rng.integers(-high, high, 5000)
        first[::3], second[::5] = first[0], second[0]  # ties
        assert np.array_equal(step_stats_module._order_by(first, second, stable=True), np.lexsort((second, first)))
        order = step_stats_module._order_by(first, second, stable=False)
        assert np.array_equal(np.c_[first, second][order], np.c_[first, second][np.lexsort((second, first))])


@contextmanager
def _step_file(ss):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.pb"
        path.write_bytes(ss.SerializeToString())
        yield path


def test_names_are_valid_utf8_with_damage_replaced():
    from profscope.models.data.timeline import StringColumn

    def column(*parts: bytes) -> StringColumn:
        offsets = np.cumsum([0, *map(len, parts)]).astype(np.int64)
        return StringColumn.from_utf8(b"".join(parts), offsets)

    fine = column(b"conv", "é✓".encode(), b"")
    assert [fine[i] for i in range(3)] == ["conv", "é✓", ""]
    # Valid as a whole, but "é" is cut between two names: each name gets U+FFFD.
    split = column(b"a\xc3", b"\xa9b")
    assert [split[i] for i in range(2)] == ["a\ufffd", "\ufffdb"]
    assert column(b"\xff", b"ok")[0] == "\ufffd" and column(b"\xff", b"ok").blob == "\ufffdok".encode()


def test_a_text_file_is_parsed_once_for_every_tool(tmp_path, monkeypatch):
    """Protobuf's text parser is slow (about 1 MB/s): the timeline, memory and statistics of one .pbtxt share
    one conversion, and a file written again is parsed again."""
    from conftest import copied_host, rewrite

    from profscope.models.formats import step_stats

    parsed = []
    real = step_stats.parse_text
    monkeypatch.setattr(step_stats, "parse_text", lambda *args: parsed.append(args[2]) or real(*args))
    path, repo, session, host = copied_host(DATA / "step_stats" / "step_stats.pbtxt", tmp_path)
    timeline = repo.step_timeline(session, host)
    memory = repo.memory_profile(session, host)
    repo.tool_data(session, "trace_viewer", host)
    assert parsed == [str(path)] and len(timeline) and memory.allocators
    rewrite(path)
    del timeline
    repo.step_timeline(session, host)
    assert parsed == [str(path)] * 2
