"""The fuzz harness (benchmarks/fuzz.py): its encodings and mutators, its outcome classes, a
bounded seeded pass through every reader and tool, and every input it found (tests/data/fuzz)."""

import gzip
import random
import sys
import zlib

import pytest
from conftest import DATA, ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz  # noqa: E402

# A pass of about 60 s on a 2-core machine (measured: ~0.3 s a case with 2 workers).
CI_SEED, CI_CASES = 2024, 180
FOUND = DATA / "fuzz"


def test_crc32c_and_record_framing_match_tensorboard_and_profscope():
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

    from profscope.models.core import _tfrecord

    for data in (b"", b"a", bytes(range(256)) * 7):
        assert fuzz.masked_crc32c(data) == masked_crc32c(data) == _tfrecord.masked_crc32c(data)
    records = fuzz.tfrecord(b"first") + fuzz.tfrecord(b"second!")
    assert [records[a + 12:b - 4] for a, b in fuzz.tfrecords(records)] == [b"first", b"second!"]
    a, b = b"abc" * 1000, bytes(12345)
    assert fuzz.crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


def test_gzip_bomb_inflates_to_what_it_says_from_a_small_file():
    bomb = fuzz.gzip_bomb(b'{"traceEvents":', b"[", 5 << 20)
    assert gzip.decompress(bomb) == b'{"traceEvents":' + b"[" * (5 << 20)
    assert len(bomb) < (5 << 20) // 500
    line = b"I0000 00:00:1.5 1 log_memory.cc:34] __LOG_MEMORY__ MemoryLogStep { step_id: 1 }\n"
    assert gzip.decompress(fuzz.gzip_bomb(b"", line, 3 << 20)).count(line) == (1 << 20) // len(line) * 3


def test_protobuf_rewrites_keep_the_framing_valid():
    from profscope.protos import config_pb2

    data = (DATA / "step_stats" / "run_metadata.pb").read_bytes()
    wire = fuzz.Wire(data)
    rng = random.Random(1)
    path = wire.path(rng, lambda f: f.wt == 0)
    assert len(path) > 1  # below the top level, so enclosing lengths are rewritten
    assert wire.replace(path, data[path[-1].tag_start:path[-1].end]) == data
    huge = wire.replace(path, data[path[-1].tag_start:path[-1].tag_end] + fuzz.varint(2**64 - 1))
    config_pb2.RunMetadata.FromString(huge)  # still parses: only the value changed
    deep = fuzz.nested([fuzz.tag(1, 2), fuzz.tag(2, 2)], 1000, b"\x08\x01")
    depth, span = 0, (0, len(deep))
    while (fields := fuzz.parse_message(deep, *span)) and fields[0].wt == 2:
        depth, span = depth + 1, (fields[0].start, fields[0].end)
    assert depth == 2000 and deep[span[0]:span[1]] == b"\x08\x01"


def test_cases_are_made_from_the_seed_and_index_alone():
    a, b = fuzz.CaseMaker(7), fuzz.CaseMaker(7)
    cases = [a.case(i) for i in range(2 * len(fuzz.READERS))]
    assert [(c.files, c.target, c.mutations) for c in cases] == [
        (c.files, c.target, c.mutations) for c in (b.case(i) for i in range(len(cases)))]
    assert {c.reader for c in cases} == set(fuzz.READERS)
    assert all(c.size <= fuzz.MAX_INPUT for c in cases)


@pytest.fixture(scope="module")
def pool():
    # A call's deadline here finds hangs, not slowness (no timing asserts): the 5 s target is
    # what `benchmarks/fuzz.py` measures on a quiet machine.
    with fuzz.Pool(2, timeout=60.0) as p:
        yield p


def test_outcomes_are_classified_and_a_dead_worker_replaced(pool):
    pool.timeout = 2.0  # the hang waits for it
    try:
        names = ["answer", "raise", "hang", "crash", "memory", "answer"]
        results = pool.run_all([fuzz.Case(i, "selftest", "", {}, name) for i, name in enumerate(names)])
    finally:
        pool.timeout = 60.0
    assert [fuzz.outcome(r) for r in results] == ["answer", "traceback", "timeout", "crash", "blowup", "answer"]
    assert results[1]["failure"]["type"] == "KeyError"
    assert results[2]["failure"]["message"] == "tool_data hang took over 2 s"
    assert results[3]["failure"]["type"] == "SIGABRT"


class _FakePool:
    """Fails (a traceback at one site) whenever the target holds the marker."""

    n = 2

    def run_all(self, cases):
        def result(case):
            bad = b"MARKER" in case.files[case.target]
            failure = {"class": "traceback", "type": "ValueError", "site": "models/x.py:f"} if bad else None
            return {"failure": failure, "answers": 1, "threads": [], "calls": {}}

        return [result(c) for c in cases]


def test_minimiser_shrinks_to_what_still_fails_the_same_way():
    rng = random.Random(3)
    data = bytes(rng.randrange(256) for _ in range(3000))
    data = data[:1234] + b"MARKER" + data[1234:]
    case = fuzz.Case(0, "xspace", "", {"a/vm.xplane.pb": data, "a/other.xplane.pb": b"x"}, "a/vm.xplane.pb")
    pool = _FakePool()
    small, result = fuzz.minimise(pool, case, pool.run_all([case])[0], max_runs=5000)
    assert small.files == {"a/vm.xplane.pb": b"MARKER"}
    gz = fuzz.Case(0, "chrome_trace", "", {"t.json.gz": gzip.compress(data)}, "t.json.gz", plain=data, gz_level=6)
    gz_pool = type("P", (_FakePool,), {"run_all": lambda self, cases: _FakePool.run_all(self, [
        fuzz.dataclasses.replace(c, files={c.target: gzip.decompress(c.files[c.target])}) for c in cases])})()
    small, _ = fuzz.minimise(gz_pool, gz, gz_pool.run_all([gz])[0], max_runs=5000)
    assert gzip.decompress(small.files["t.json.gz"]) == b"MARKER"  # shrunk inflated, stored gzipped


def test_seeded_pass_through_every_reader_has_no_failure(pool):
    stats = fuzz.run_pass(CI_SEED, CI_CASES, pool=pool)
    assert stats.cases == CI_CASES and set(stats.per_reader) == set(fuzz.READERS)
    found = [f"{count} x {sig}: {result['failure'] and result['failure']['message']} (first: {fuzz._describe(case)})"
             for sig, (case, result, count, _) in stats.failures.items()]
    assert not found, "\n".join(found)
    assert stats.calls["answer"] > 0 and stats.calls["message"] > 0


@pytest.mark.parametrize("path", sorted(p for p in FOUND.iterdir() if p.name != "README.md") if FOUND.is_dir() else [],
                         ids=lambda p: p.name)
def test_every_input_the_harness_found_gives_an_answer_or_a_message(pool, path):
    result = pool.run_all([fuzz.replay_case(path)])[0]
    assert fuzz.outcome(result) in ("answer", "message"), result["failure"]


def test_every_found_input_is_described():
    described = (FOUND / "README.md").read_text()
    for path in FOUND.iterdir():
        assert path.name == "README.md" or f"`{path.name}{'/' if path.is_dir() else ''}`" in described
    assert sum(p.stat().st_size for p in FOUND.rglob("*") if p.is_file()) < 1 << 20
