"""JAX device memory profiles (gzipped pprof): recognition, what the memory
model holds against an independent decode of the file, export and diff."""

import gzip
import json
from collections import Counter

import pytest
from conftest import DATA

from profscope.models.core.task import ProfileError
from profscope.models.formats import memory_pprof
from profscope.models.formats.memory_pprof import FORMAT, load_pprof_memory
from profscope.protos import pprof_pb2
from profscope.viewer.cli import main

PPROF = DATA / "memory_pprof"
BEFORE, AFTER = PPROF / "before.prof", PPROF / "after.prof"


def decoded(path):
    return pprof_pb2.Profile.FromString(gzip.decompress(path.read_bytes()))


def expected(path):
    """Per device (or kind): allocation count and bytes, from the pprof itself."""
    p = decoded(path)
    st = p.string_table
    types = [(st[v.type], st[v.unit]) for v in p.sample_type]
    n_at, b_at = types.index(("allocations", "count")), types.index(("space", "bytes"))
    count, size = Counter(), Counter()
    for s in p.sample:
        labels = {st[lab.key]: st[lab.str] for lab in s.label}
        key = labels.get("device") or labels["kind"]
        count[key] += s.value[n_at]
        size[key] += s.value[b_at]
    return count, size


def test_the_schema_decodes_the_real_files_whole():
    """Every field of JAX's files is one of ours (nothing left unknown), and
    the texts and references are what pprof's field numbers mean."""
    for path in (BEFORE, AFTER):
        raw = gzip.decompress(path.read_bytes())
        p = pprof_pb2.Profile.FromString(raw)
        p.DiscardUnknownFields()
        assert p.SerializeToString() == raw
        st = p.string_table
        assert st[0] == ""
        assert [(st[v.type], st[v.unit]) for v in p.sample_type] == [("allocations", "count"), ("space", "bytes")]
        functions, locations = {f.id for f in p.function}, {loc.id for loc in p.location}
        assert all(i in locations for s in p.sample for i in s.location_id)
        assert all(line.function_id in functions for loc in p.location for line in loc.line)
        assert {st[lab.key] for s in p.sample for lab in s.label} == {"kind", "device"}


@pytest.mark.parametrize("path", [BEFORE, AFTER])
def test_allocations_per_device_are_the_files(path):
    data = load_pprof_memory(path)
    count, size = expected(path)
    assert sorted(data.allocators) == sorted(count) == ["cpu:0", "executable"]
    for key, a in data.allocators.items():
        rows = a.peak_allocations
        assert int(rows.occurrences.sum()) == count[key] == len(a.timeline)
        assert int((rows.allocation * rows.occurrences).sum()) == size[key]
        assert a.summary.peak_heap == size[key] == int(a.timeline.heap[-1])
        assert all(r.startswith(("buffer: ", "executable: ")) for r in rows.region)
        assert a.allocations_at(len(a.timeline) - 1).total_bytes == size[key]


def test_sizes_and_top_frames():
    rows = load_pprof_memory(BEFORE).allocators["cpu:0"].peak_allocations
    by_op = {}
    for op, size, n in zip(rows.op, rows.allocation.tolist(), rows.occurrences.tolist()):
        by_op.setdefault(op.split(" (")[0], []).extend([size] * n)
    assert by_op["make_weights"] == [262144]
    assert by_op["make_bias"] == [4096]
    assert sorted(by_op["<listcomp>"]) == [40000] * 3  # the three kept arrays
    assert sum(by_op["<module>"]) == 262144 + 4  # the jitted step's outputs
    assert all("jax_memory_profile.py:" in op for op in rows.op)
    i = rows.op.index(next(op for op in rows.op if op.startswith("make_weights")))
    assert "make_weights (jax_memory_profile.py:" in rows.region[i] and "<module>" in rows.region[i]


def test_recognised_by_content_and_a_lookalike_refused(tmp_path):
    assert FORMAT.lone_file(BEFORE) == ("before.prof", "before.prof")
    assert FORMAT.host_in_folder(AFTER) == "after"
    fake = tmp_path / "memory.prof"
    fake.write_bytes(gzip.compress(b'{"traceEvents": []}'))
    assert FORMAT.lone_file(fake) is None
    assert "not a pprof profile" in FORMAT.refusal(fake)
    plain = tmp_path / "plain.prof"
    plain.write_bytes(gzip.decompress(BEFORE.read_bytes()))
    assert "gzipped" in FORMAT.refusal(plain)
    # a gzipped protobuf of another kind (a sample type that is not a ValueType)
    other = tmp_path / "other.prof"
    other.write_bytes(gzip.compress(b"\x0a\x05hello"))
    assert FORMAT.lone_file(other) is None


def test_a_cpu_profile_is_refused_with_its_sample_types(tmp_path):
    p = pprof_pb2.Profile(string_table=["", "samples", "count", "cpu", "nanoseconds"])
    p.sample_type.add(type=1, unit=2)
    p.sample_type.add(type=3, unit=4)
    path = tmp_path / "cpu.prof"
    path.write_bytes(gzip.compress(p.SerializeToString()))
    assert FORMAT.lone_file(path) is not None
    with pytest.raises(ProfileError, match="not a memory one.*samples/count, cpu/nanoseconds"):
        load_pprof_memory(path)


def test_a_corrupt_count_is_refused(tmp_path):
    p = decoded(BEFORE)
    p.sample[0].value[0] = 10**12
    path = tmp_path / "big.prof"
    path.write_bytes(gzip.compress(p.SerializeToString()))
    with pytest.raises(ProfileError, match="more than"):
        load_pprof_memory(path)


def test_sessions_and_export(tmp_path, capsys):
    assert main(["sessions", str(BEFORE), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["sessions"][0]["availableTools"] == ["memory_profile"]
    target = tmp_path / "before.json"
    assert main(["export", str(BEFORE), "--tool", "memory_profile", "-o", str(target)]) == 0
    exported = json.loads(target.read_text())["memoryProfilePerAllocator"]
    _, size = expected(BEFORE)
    assert int(exported["cpu:0"]["profileSummary"]["peakStats"]["heapAllocatedBytes"]) == size["cpu:0"]


def test_diff_of_before_and_after(tmp_path, capsys):
    target = tmp_path / "diff.json"
    assert main(["diff", str(BEFORE), str(AFTER), "--tool", "memory_profile", "-o", str(target)]) == 0
    d = json.loads(target.read_text())
    cpu = next(a for a in d["allocators"] if a["memory_id"] == "cpu:0")
    assert cpu["lifetime_peak_bytes"]["baseline"] == expected(BEFORE)[1]["cpu:0"]
    assert cpu["lifetime_peak_bytes"]["candidate"] == expected(AFTER)[1]["cpu:0"]
    status = {row["op"].split(" (")[0]: row["status"] for row in cpu["peak_allocations"]}
    assert status["make_weights"] == status["make_bias"] == "same"
    # Rows are matched by stack: the three kept arrays came by two; the two freed ones shared one.
    listcomp = [row for row in cpu["peak_allocations"] if row["op"].startswith("<listcomp>")]
    assert sorted((row["baseline"]["count"], row["candidate"]["count"], row["status"]) for row in listcomp) == [
        (1, 1, "same"), (2, 0, "removed")]
    assert sorted(row["status"] for row in cpu["peak_allocations"]).count("added") == 1  # the new array


def test_truncated_and_corrupt_data_is_a_profile_error():
    raw = gzip.decompress(BEFORE.read_bytes())
    for n in range(0, len(raw), 7):
        try:
            memory_pprof.parse_pprof_memory(raw[:n])
        except ProfileError:
            pass
    p = decoded(BEFORE)
    p.sample[2].value[1] = 2**62
    with pytest.raises(ProfileError, match="2\\*\\*62 bytes"):
        memory_pprof.parse_pprof_memory(p.SerializeToString())
    with pytest.raises(ProfileError, match="gzip data is corrupt"):
        memory_pprof.parse_pprof_memory(b"\x1f\x8b" + b"x" * 50)
