"""TensorFlow LogMemory logs: the scanner against text_format, the replay
against a plain dictionary replay, real TensorFlow 2.21 logs, bad input."""

import gzip
import json
import os
import re
import threading

import numpy as np
import pytest
from conftest import DATA
from google.protobuf import text_format

from profscope.models.core.task import Cancelled, ProfileError, TaskState
from profscope.models.data.memory_profile import ALLOCATION
from profscope.models.formats import _logscan
from profscope.models.formats.log_memory import (
    BLOCK,
    DEFERRED,
    MESSAGE_NAMES,
    RAW_ALLOCATION,
    RAW_DEALLOCATION,
    TENSOR_ALLOCATION,
    TENSOR_DEALLOCATION,
    _scan_block,
    load_memory_log,
)
from profscope.models.formats.memory_profile_file import parse_memory_profile
from profscope.models.repository.locations import open_repository
from profscope.models.repository.profile_repository import LocalRepository
from profscope.protos import log_memory_pb2

LOGS = DATA / "log_memory"
REAL_LOGS = sorted(LOGS.glob("*.log*"))
MARKER = "__LOG_MEMORY__"
BFC_LOG = LOGS / "graph-bfc-onednn.log.gz"


def read_text(path) -> str:
    raw = path.read_bytes()
    return (gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw).decode()


def reference_messages(text: str, by_time: bool = False) -> list:
    """Every memory line parsed with protobuf's text_format alone, in log
    order or by the time of the line's absl prefix (log order for ties)."""
    out = []
    for line in text.splitlines():
        if MARKER not in line:
            continue
        name, body = line.split(MARKER, 1)[1].strip().split(" ", 1)
        message = getattr(log_memory_pb2, name)()
        text_format.Parse(re.sub(r"goo\.gle/\w*", " ", body.strip()[1:-1]), message)
        seconds = re.match(r"I0000 00:00:(\d+\.\d+)", line).group(1)
        out.append((int(seconds.replace(".", "")), name, message))
    if by_time:
        out.sort(key=lambda x: x[0])
    return [(name, m) for _, name, m in out]


def reference_replay(messages) -> dict[str, list[int]]:
    """Live bytes per allocator after each tracked event, with a plain dict."""
    live, series = {}, {}
    for name, m in messages:
        if name in ("MemoryLogTensorAllocation", "MemoryLogRawAllocation"):
            if name == "MemoryLogTensorAllocation":
                d = m.tensor.allocation_description
                key, size = (d.allocator_name, d.allocation_id), d.allocated_bytes or d.requested_bytes
            else:
                key, size = (m.allocator_name, m.allocation_id), m.num_bytes
            if key[1]:
                live[key] = size
                series.setdefault(key[0], []).append(sum(v for k, v in live.items() if k[0] == key[0]))
        elif name in ("MemoryLogTensorDeallocation", "MemoryLogRawDeallocation"):
            key = (m.allocator_name, m.allocation_id)
            if key[1] and key in live and not (name == "MemoryLogRawDeallocation" and m.deferred):
                del live[key]
                series.setdefault(key[0], []).append(sum(v for k, v in live.items() if k[0] == key[0]))
    return series


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.name)
def test_scanner_reads_real_tensorflow_lines_as_text_format_does(path):
    text = read_text(path)
    data = text.encode()
    _, kind, time_us, line, ints, strs = _logscan.scan_memory_log(data, True)
    expected = reference_messages(text)
    assert len(kind) == len(expected) > 0
    assert (kind >= 0).all(), "TensorFlow 2.21's lines all take the fast path"
    get = lambda i, j: data[strs[i, j, 0]:strs[i, j, 0] + strs[i, j, 1]].decode() if strs[i, j, 0] >= 0 else ""
    for i, (name, m) in enumerate(expected):
        assert MESSAGE_NAMES[kind[i]] == name
        if name in ("MemoryLogTensorAllocation", "MemoryLogTensorOutput"):
            d = m.tensor.allocation_description
            assert (ints[i, 0], get(i, 0), get(i, 1)) == (m.step_id, m.kernel_name, d.allocator_name)
            assert (ints[i, 1], ints[i, 3], np.uint64(ints[i, 4])) == (d.allocation_id, d.requested_bytes, d.ptr)
        elif name == "MemoryLogTensorDeallocation":
            assert (ints[i, 1], get(i, 1)) == (m.allocation_id, m.allocator_name)
        elif name == "MemoryLogRawAllocation":
            assert (ints[i, 0], get(i, 0), ints[i, 2], ints[i, 1]) == (
                m.step_id,
                m.operation,
                m.num_bytes,
                m.allocation_id,
            )
        elif name == "MemoryLogStep":
            assert (ints[i, 0], get(i, 4)) == (m.step_id, m.handle)
    assert (time_us > 1.7e15).all()  # absl's epoch seconds, in microseconds


@pytest.mark.parametrize("path", REAL_LOGS, ids=lambda p: p.name)
def test_replay_of_real_logs_matches_a_plain_dictionary_replay(path):
    profile = load_memory_log(path)
    series = reference_replay(reference_messages(read_text(path), by_time=True))
    for allocator, heap in series.items():
        assert profile.allocators[allocator].timeline.heap.tolist() == heap
        assert profile.allocators[allocator].summary.peak_heap == max(heap)
    counts = {name: sum(1 for n, _ in reference_messages(read_text(path)) if n == name) for name in MESSAGE_NAMES}
    assert profile.log.messages == counts
    assert profile.log.garbled == profile.log.unknown == 0


def test_graph_log_with_bfc_allocator_values():
    """TF 2.21, TF1 session with TF_CPU_ALLOCATOR_USE_BFC=true and oneDNN."""
    data = load_memory_log(BFC_LOG)
    assert data.memory_ids == ["bfc_cpu_allocator_for_gpu", "mklcpu"]
    bfc = data.allocators["bfc_cpu_allocator_for_gpu"]
    assert (bfc.summary.num_allocations, bfc.summary.num_deallocations) == (45, 45)
    assert bfc.summary.peak_heap == 90_368
    rows = bfc.peak_allocations
    assert rows.total_bytes == 90_368  # the table explains the whole peak
    # Largest first, then by op name (XProf's table order).
    assert [(rows.op[i], rows.allocation[i], rows.dtype[i], rows.shape[i]) for i in range(2)] == [
        ("gradients/MatMul_grad/MatMul_1", 32768, "float", "[64,128]"),
        ("w1/Initializer/random_uniform/RandomUniform", 32768, "float", "[64,128]"),
    ]
    assert set(rows.region) == {"tensor"}
    # The plain CPU allocator gives no allocation ids: counted, not on the timeline.
    assert len(data.allocators["mklcpu"].timeline) == 0
    kernels = data.log.kernels("mklcpu")
    assert kernels.kernel[0] == "TF_NewTensor" and kernels.tracked.sum() == 0
    assert data.log.untracked_allocations == int(kernels.count.sum())
    steps = data.log.steps("bfc_cpu_allocator_for_gpu")
    assert steps.handle[list(steps.step).index(2)] == "x:0,y:0->Mean:0/GradientDescent/0/;1"
    # Step 2's kernel table: the training step's matmuls
    step2 = data.log.kernels("bfc_cpu_allocator_for_gpu", step=2)
    assert step2.kernel[0] == "gradients/MatMul_grad/MatMul_1" and step2.bytes[0] == 32768


def test_eager_log_counts_deallocations_of_earlier_allocations_as_unmatched():
    data = load_memory_log(LOGS / "eager-cpu.log")
    assert data.log.unmatched_deallocations == {"cpu": 12}
    assert data.allocators["cpu"].summary.peak_heap == 16396  # a 64x64 float matrix and small tensors


def test_gzip_log_reads_like_plain(tmp_path):
    plain = tmp_path / "graph.log"
    plain.write_bytes(gzip.decompress((LOGS / "graph-cpu.log.gz").read_bytes()))
    a, b = load_memory_log(plain), load_memory_log(LOGS / "graph-cpu.log.gz")
    assert a.log.messages == b.log.messages
    assert np.array_equal(a.allocators["cpu"].timeline.heap, b.allocators["cpu"].timeline.heap)


# ---------------------------------------------------------------- replay rules, prefixes


def line(prefix: str, message) -> str:
    body = text_format.MessageToString(message, as_one_line=True)
    return f"{prefix}__LOG_MEMORY__ {type(message).__name__} {{ {body} }}\n"


def tensor_allocation(step, kernel, allocator, allocation_id, size, ptr=0):
    m = log_memory_pb2.MemoryLogTensorAllocation(step_id=step, kernel_name=kernel)
    m.tensor.dtype = 1
    m.tensor.shape.dim.add().size = size // 4
    d = m.tensor.allocation_description
    d.requested_bytes, d.allocated_bytes, d.allocator_name, d.allocation_id, d.ptr = (
        size,
        size,
        allocator,
        allocation_id,
        ptr,
    )
    return m


def write_log(path, lines: list[str]) -> None:
    path.write_text("".join(lines))


def test_replay_rules(tmp_path):
    p = "I1122 10:00:{:02d}.000000  4242 log_memory.cc:34] "
    log = tmp_path / "rules.log"
    write_log(
        log,
        [
            "Some unrelated output\n",
            line(p.format(1), log_memory_pb2.MemoryLogStep(step_id=7, handle="a->b")),
            line(p.format(2), tensor_allocation(7, "conv", "GPU_0_bfc", 1, 1000, ptr=4096)),
            line(p.format(3), tensor_allocation(7, "relu", "GPU_0_bfc", 2, 400)),
            line(
                p.format(4),
                log_memory_pb2.MemoryLogRawAllocation(
                    step_id=7, operation="memcpy", num_bytes=300, allocation_id=3, allocator_name="GPU_0_bfc"
                ),
            ),
            line(p.format(5), log_memory_pb2.MemoryLogTensorDeallocation(allocation_id=1, allocator_name="GPU_0_bfc")),
            line(
                p.format(6),
                log_memory_pb2.MemoryLogRawDeallocation(
                    step_id=7, operation="memcpy", allocation_id=3, allocator_name="GPU_0_bfc", deferred=True
                ),
            ),
            line(p.format(7), tensor_allocation(7, "untracked", "GPU_0_bfc", 0, 64)),
            line(p.format(8), log_memory_pb2.MemoryLogTensorDeallocation(allocation_id=99, allocator_name="GPU_0_bfc")),
            line(
                p.format(9),
                log_memory_pb2.MemoryLogRawDeallocation(
                    step_id=7, operation="memcpy", allocation_id=3, allocator_name="GPU_0_bfc"
                ),
            ),
            line(p.format(10), log_memory_pb2.MemoryLogTensorOutput(step_id=7, kernel_name="conv", index=0)),
        ],
    )
    data = load_memory_log(log)
    a = data.allocators["GPU_0_bfc"]
    tl = a.timeline
    assert tl.heap.tolist() == [1000, 1400, 1700, 700, 400]  # deferred free and untracked: no change
    assert tl.time_ps.tolist() == [s * 10**12 for s in (1, 2, 3, 4, 8)]  # from the first memory line
    assert tl.activity.tolist() == [ALLOCATION] * 3 + [2, 2]
    assert a.summary.peak_heap == 1700 and a.summary.peak_time_ps == 3 * 10**12
    assert sorted(a.peak_allocations.op) == ["conv", "memcpy", "relu"]
    assert a.peak_allocations.region[a.peak_allocations.op.index("memcpy")] == "raw"
    assert a.allocations_at(3).op == ["relu", "memcpy"]
    assert a.allocations_at(4).op == ["relu"]
    assert a.freed_at(0) == 3  # conv freed by the deallocation at snapshot 3
    assert tl.metadata(3)["op"] == "conv" and tl.metadata(3)["address"] == 4096  # takes its allocation's metadata
    info = data.log
    assert info.unmatched_deallocations == {"GPU_0_bfc": 1}
    assert info.deferred_deallocations == 1 and info.untracked_allocations == 1
    assert info.messages["MemoryLogTensorOutput"] == 1 and info.step_handles == {7: "a->b"}
    kernels = info.kernels("GPU_0_bfc", step=7)
    assert dict(zip(kernels.kernel, kernels.bytes.tolist())) == {
        "conv": 1000,
        "relu": 400,
        "memcpy": 300,
        "untracked": 64,
    }


@pytest.mark.parametrize(
    "prefix,seconds",
    [
        ("2023-05-01 10:00:{:02d}.250000: I tensorflow/core/framework/log_memory.cc:35] ", 0.25),  # TF <= 2.15
        ("I0501 10:00:{:02d}.250000 12345 log_memory.cc:34] ", 0.25),  # glog / absl
        ("[1,0]<stderr>:I0501 10:00:{:02d}.250000 12345 log_memory.cc:34] ", 0.25),  # mpirun's process tag
    ],
)
def test_prefix_formats_give_times(tmp_path, prefix, seconds):
    log = tmp_path / "x.log"
    write_log(log, [line(prefix.format(s), tensor_allocation(1, "k", "cpu", s, 8)) for s in (1, 3)])
    tl = load_memory_log(log).allocators["cpu"].timeline
    assert tl.time_ps.tolist() == [0, 2 * 10**12]


def test_lines_without_a_time_follow_log_order(tmp_path):
    log = tmp_path / "x.log"
    write_log(log, [line("", tensor_allocation(1, k, "cpu", i + 1, 8)) for i, k in enumerate("abc")])
    tl = load_memory_log(log).allocators["cpu"].timeline
    assert [tl.strings[i] for i in tl.op] == ["a", "b", "c"] and tl.time_ps.tolist() == [0, 0, 0]


def test_lines_before_the_first_time_and_an_unnamed_allocator(tmp_path):
    log = tmp_path / "x.log"
    write_log(
        log,
        [
            line("", tensor_allocation(1, "early", "", 1, 8)),
            line("I0501 10:00:05.000000 1 x.cc:1] ", tensor_allocation(1, "late", "", 2, 8)),
            line("I0501 10:00:07.000000 1 x.cc:1] ", tensor_allocation(1, "later", "", 3, 8)),
        ],
    )
    data = load_memory_log(log)
    assert data.memory_ids == ["(unnamed allocator)"]
    assert data.allocators["(unnamed allocator)"].timeline.time_ps.tolist() == [0, 0, 2 * 10**12]
    assert data.log.kernels("(unnamed allocator)").kernel == ["early", "late", "later"]


def test_lines_text_format_must_read_escapes_hex_and_field_order(tmp_path):
    log = tmp_path / "x.log"
    p = "I0501 10:00:01.000000 1 log_memory.cc:34] __LOG_MEMORY__ "
    write_log(
        log,
        [
            p
            + r'MemoryLogTensorAllocation { kernel_name: "caf\303\251/\"q\"" step_id: 0x10 tensor { '
            r'allocation_description { allocation_id: 5 allocated_bytes: 16 allocator_name: "cpu" } } }' + "\n",
            p
            + 'MemoryLogRawAllocation { step_id: 1 operation: "op" num_bytes: 8 allocation_id: 6 allocator_name: "cpu" '
            "a_future_field: 3 }\n",
        ],
    )
    data = load_memory_log(log)
    tl = data.allocators["cpu"].timeline
    assert [tl.strings[i] for i in tl.op] == ['café/"q"', "op"] and tl.step.tolist() == [16, 1]
    assert data.log.text_format_lines == 2 and data.log.garbled == 0


# ---------------------------------------------------------------- bad input


def test_garbled_unknown_and_truncated_lines_are_counted_not_fatal(tmp_path):
    log = tmp_path / "bad.log"
    good = line("I0501 10:00:01.000000 1 x.cc:1] ", tensor_allocation(1, "k", "cpu", 1, 8))
    write_log(
        log,
        [
            good,
            "I0501 10:00:02.000000 1 x.cc:1] __LOG_MEMORY__ MemoryLogTensorAllocation { step_id: oops }\n",
            "I0501 10:00:02.000000 1 x.cc:1] __LOG_MEMORY__ MemoryLogFancyNew { step_id: 1 }\n",
            "I0501 10:00:03.000000 1 x.cc:1] __LOG_MEMORY__\n",
            good.replace("allocation_id: 1", "allocation_id: 2")[:90],  # the process died mid-line
        ],
    )
    data = load_memory_log(log)
    assert len(data.allocators["cpu"].timeline) == 1
    assert (data.log.garbled, data.log.unknown) == (2, 2)
    assert "Skipped 2 garbled memory lines and 2 lines with unknown message names" in data.log.skipped_text()
    assert any("MemoryLogFancyNew" in p for p in data.log.problems)


def test_log_without_memory_lines_says_how_to_enable_them(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("I0501 10:00:01.000000 1 x.cc:1] hello\n" * 100)
    with pytest.raises(ProfileError, match="TF_CPP_VMODULE=log_memory=2"):
        load_memory_log(log)
    with pytest.raises(ProfileError, match="TF_CPP_VMODULE=log_memory=2"):
        LocalRepository(log)


def test_log_whose_memory_lines_allocate_nothing_says_so(tmp_path):
    log = tmp_path / "steps.log"
    write_log(
        log,
        [
            line("I0501 10:00:01.000000 1 x.cc:1] ", log_memory_pb2.MemoryLogStep(step_id=1, handle="a")),
            line("I0501 10:00:02.000000 1 x.cc:1] ", log_memory_pb2.MemoryLogTensorOutput(step_id=1, index=0)),
        ],
    )
    with pytest.raises(ProfileError, match="2 __LOG_MEMORY__ lines, but none allocates memory"):
        load_memory_log(log)


def test_binary_garbage_is_survived(tmp_path):
    rng = np.random.default_rng(0)
    junk = tmp_path / "junk.log"
    good = line("I0501 10:00:01.000000 1 x.cc:1] ", tensor_allocation(1, "k", "cpu", 1, 8)).encode()
    # 3 MB without a newline, a marker in the middle, then one good line.
    junk.write_bytes(rng.bytes(1 << 20) + b"__LOG_MEMORY__" + rng.bytes(2 << 20).replace(b"\n", b" ") + b"\n" + good)
    data = load_memory_log(junk)
    assert len(data.allocators["cpu"].timeline) == 1 and data.log.garbled + data.log.unknown >= 1
    only_junk = tmp_path / "only.log"
    only_junk.write_bytes(rng.bytes(1 << 20))
    with pytest.raises(ProfileError, match="no readable __LOG_MEMORY__ lines"):
        load_memory_log(only_junk)


def test_truncated_gzip_keeps_what_was_read(tmp_path):
    cut = tmp_path / "cut.log.gz"
    data = gzip.compress(read_text(BFC_LOG).encode())
    cut.write_bytes(data[: len(data) * 2 // 3])
    profile = load_memory_log(cut)
    assert 0 < sum(profile.log.messages.values()) < 1084
    assert "gzip" in profile.log.problems[0]


def test_cancel_stops_the_read_and_leaves_no_thread(tmp_path):
    big = tmp_path / "big.log"
    big.write_bytes(gzip.decompress(BFC_LOG.read_bytes()) * 40)  # several blocks
    task = TaskState(on_progress=lambda f, text: task.cancel())
    before = threading.active_count()
    with pytest.raises(Cancelled):
        load_memory_log(big, task=task)
    assert threading.active_count() == before


def test_a_log_of_many_blocks_reads_as_one_block(tmp_path, monkeypatch):
    """Blocks are read into buffers used again and again, lines cut at block
    ends: 40 copies of a log (three blocks) read as when it is one block."""
    from profscope.models.formats import log_memory

    big = tmp_path / "big.log"
    big.write_bytes(gzip.decompress(BFC_LOG.read_bytes()) * 40)
    many = load_memory_log(big)
    monkeypatch.setattr(log_memory, "BLOCK", 64 << 20)
    whole = load_memory_log(big)
    assert many.log.messages == whole.log.messages and sum(many.log.messages.values()) > 40_000
    for name, a in whole.allocators.items():
        b = many.allocators[name].timeline
        assert np.array_equal(a.timeline.heap, b.heap) and np.array_equal(a.timeline.time_ps, b.time_ps)


@pytest.mark.parametrize("keep", [BLOCK + 1000, 0])
def test_a_log_cut_short_while_read_keeps_what_was_read(tmp_path, keep):
    """A log that shrinks under the reader (logrotate's copytruncate, even to
    nothing) ends there with a note: never a crash (a mapped page past the end
    of a file would be SIGBUS)."""
    big = tmp_path / "big.log"
    text = gzip.decompress(BFC_LOG.read_bytes())
    big.write_bytes(text * 40)  # 10 MB: three blocks

    def truncate(fraction, what):
        if big.stat().st_size > keep:
            os.truncate(big, keep)

    profile = load_memory_log(big, task=TaskState(on_progress=truncate))
    whole = load_memory_log(BFC_LOG)
    assert 0 < sum(profile.log.messages.values()) < 40 * sum(whole.log.messages.values())
    assert "shrank" in profile.log.problems[0] and "read up to there" in profile.log.problems[0]


# ---------------------------------------------------------------- repository, export


def test_repository_finds_logs_in_folders_and_exports_memory_profile_json(tmp_path):
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "worker0.log.gz").write_bytes(BFC_LOG.read_bytes())
    (tmp_path / "run1" / "notes.txt").write_text("no memory lines here\n")
    repo = open_repository(tmp_path)
    [session] = repo.enum_sessions()
    assert (session.name, session.hosts, session.tools) == ("run1", ("worker0",), ("memory_profile",))
    out = repo.tool_data("run1", "memory_profile", "worker0")
    doc = json.loads(out.output)
    assert doc["memoryIds"] == ["bfc_cpu_allocator_for_gpu", "mklcpu"]
    again = parse_memory_profile(out.output)  # Profscope reads its own export back
    a = again.allocators["bfc_cpu_allocator_for_gpu"]
    assert a.summary.peak_heap == 90_368 and a.peak_allocations.total_bytes == 90_368
    snapshots = doc["memoryProfilePerAllocator"]["bfc_cpu_allocator_for_gpu"]["memoryProfileSnapshots"]
    assert len(snapshots) == 90 and snapshots[0]["activityMetadata"]["regionType"] == "tensor"


def test_scanner_kinds_cover_the_schema():
    assert MESSAGE_NAMES == tuple(
        sorted(log_memory_pb2.DESCRIPTOR.message_types_by_name, key=lambda n: MESSAGE_NAMES.index(n))
    )
    assert (TENSOR_ALLOCATION, TENSOR_DEALLOCATION, RAW_ALLOCATION, RAW_DEALLOCATION, DEFERRED) == (1, 2, 4, 5, 1)


def test_scanner_accepts_no_line_that_text_format_reads_differently():
    """Fuzz: mutated real lines either go to text_format (kind < 0) or, when
    the fast path reads them, text_format reads them too, with the same step."""
    rng = np.random.default_rng(7)
    lines = [line for line in read_text(BFC_LOG).splitlines() if MARKER in line][:600]
    alphabet = np.frombuffer(b' {}:"\\-0123456789abz_\n\x00\xff.', np.uint8)
    mutated = []
    for text in lines * 4:
        b = np.frombuffer(text.encode(), np.uint8).copy()
        for _ in range(rng.integers(1, 4)):
            i = rng.integers(len(b))
            b[i] = rng.choice(alphabet) if rng.random() < 0.8 else rng.integers(256)
        mutated.append(bytes(b).replace(b"\n", b" "))
    data = b"\n".join(mutated)
    scanned = _scan_block(data)  # the scanner and the enum name check
    kind, offsets, slow = scanned["kind"], scanned["line"], scanned["slow"]
    steps = iter(scanned["allocations"]["step"].tolist())
    for i in range(len(kind)):  # the rows it keeps: allocations and tracked deallocations
        text = data[offsets[i] : data.find(b"\n", offsets[i]) % (len(data) + 1)]
        body = text.split(MARKER.encode(), 1)[1].decode("utf-8", "replace").strip()
        name, rest = body.split(" ", 1)
        assert name == MESSAGE_NAMES[kind[i]]
        message = getattr(log_memory_pb2, name)()
        text_format.Parse(re.sub(r"goo\.gle/\w*", " ", rest.strip()[1:-1]), message)  # must not raise
        allocation_id = (
            message.tensor.allocation_description.allocation_id
            if name == "MemoryLogTensorAllocation"
            else message.allocation_id
        )
        assert scanned["id"][i] == allocation_id
        if kind[i] in (TENSOR_ALLOCATION, RAW_ALLOCATION):
            assert next(steps) == message.step_id
    assert len(kind) > 150 and len(slow) > 1000
    assert scanned["counts"].sum() + len(slow) == sum(MARKER.encode() in m for m in mutated)  # each read or left


def test_two_spellings_of_a_shape_merge_in_the_table(tmp_path):
    """The scanner keeps a shape's text as written, text_format rewrites it:
    both spell [2], and the peak table merges them into one row."""
    p = "I0501 10:00:0{}.000000 1 log_memory.cc:34] __LOG_MEMORY__ "
    body = (
        'MemoryLogTensorAllocation {{ step_id: 1 kernel_name: "a" tensor {{ dtype: DT_FLOAT shape {{ dim '
        "{{{space}size: 2 }} }} allocation_description {{ requested_bytes: 8 allocated_bytes: 8 "
        'allocator_name: "cpu" allocation_id: {id} ptr: {ptr} }}{extra} }} }}\n'
    )
    write_log(
        tmp_path / "x.log",
        [
            p.format(1) + body.format(space="  ", id=1, ptr=16, extra=""),
            p.format(2) + body.format(space=" ", id=2, ptr=32, extra=" future_field: 3"),
        ],
    )
    data = load_memory_log(tmp_path / "x.log")
    assert data.log.text_format_lines == 1
    rows = data.allocators["cpu"].peak_allocations
    assert rows.shape == ["[2]"] and rows.occurrences.tolist() == [2] and rows.dtype == ["float"]


def test_times_beyond_what_picoseconds_hold_are_shown_at_the_edge(tmp_path):
    """A corrupt time (a year far off) neither wraps around nor overflows:
    it is shown at the edge of the span int64 ps can hold, and said so."""
    allocation = lambda prefix, i: line(prefix, tensor_allocation(1, f"k{i}", "cpu", i, 8))
    write_log(
        tmp_path / "x.log",
        [
            allocation("I0000 00:00:1795320401.000000 1 x.cc:1] ", 1),
            allocation("I0000 00:00:1795320402.000000 1 x.cc:1] ", 2),
            allocation("I0000 00:00:99999999999999.000000 1 x.cc:1] ", 3),
            line(
                "I0000 00:00:1795320403.000000 1 x.cc:1] ", log_memory_pb2.MemoryLogStep(step_id=2**63 - 1, handle="h")
            ),
            allocation("I0000 00:00:1795320403.000000 1 x.cc:1] ", 4),
        ],
    )
    data = load_memory_log(tmp_path / "x.log")
    tl = data.allocators["cpu"].timeline
    assert (tl.time_ps >= 0).all() and tl.time_ps[:3].tolist() == [0, 10**12, 2 * 10**12]
    steps = data.log.steps("cpu")
    assert steps.step.tolist() == [1] and (steps.start_ps >= 0).all()
    assert any("from the others" in p for p in data.log.problems)
