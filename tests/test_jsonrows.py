"""JSON text of numpy columns: each value exactly as json.dumps writes it,
so streamed exports keep the bytes of the documents they replaced."""

import json

import numpy as np
import pytest

from profscope.models.data import _jsonrows
from profscope.models.data.memory_profile import Snapshots, _dumps, _snapshot_chunks

FLOATS = [0.0, -0.0, 0.1, 1 / 3, 1e-5, 1e16, 1e22, 123456.789, 5e-324, 1.7976931348623157e308,
          float("nan"), float("inf"), float("-inf"), 2.5, -7.0]
INTS = [0, 1, -1, 9, 10, -10, 2**63 - 1, -2**63, 1234567890123]
TEXTS = ["", "plain", 'q"uote', "back\\slash", "caf\u00e9", "\u2603", "tab\there", "ctl\x01\x1f", "\U0001F600"]


def test_values_are_written_as_json_dumps_writes_them():
    n = max(len(FLOATS), len(INTS), len(TEXTS))
    f = np.resize(np.array(FLOATS), n)
    i = np.resize(np.array(INTS, np.int64), n)
    u = np.resize(np.array([0, 2**64 - 1, 2**63, 7], np.uint64), n)
    s = np.resize(np.arange(len(TEXTS) + 2) - 1, n)  # -1 and len(TEXTS): outside the table
    table = [_dumps(t) for t in TEXTS]
    text = _jsonrows.json_rows([b'{"f":', b',"i":"', b'","u":', b',"s":', b"}"],
                               [("f", f), ("i", i), ("u", u), ("s", s, table)], 0, n, b",")
    expected = ",".join(
        _dumps({"f": float(a), "i": str(b), "u": int(c), "s": TEXTS[d] if 0 <= d < len(TEXTS) else int(d)}).decode()
        for a, b, c, d in zip(f.tolist(), i.tolist(), u.tolist(), s.tolist())
    )
    assert text.decode() == expected


def test_random_floats_match_repr():
    values = np.random.default_rng(0).standard_normal(5000) * 10.0 ** np.random.default_rng(1).integers(-30, 30, 5000)
    text = _jsonrows.json_rows([b"", b""], [("f", values)], 0, len(values), b",")
    assert text.decode() == ",".join(json.dumps(v) for v in values.tolist())


def test_row_ranges_and_bad_arguments():
    col = [("i", np.arange(5))]
    assert _jsonrows.json_rows([b"<", b">"], col, 1, 3, b"|") == b"<1>|<2>"
    assert _jsonrows.json_rows([b"<", b">"], col, 2, 2, b"|") == b""
    with pytest.raises(ValueError):
        _jsonrows.json_rows([b"<", b">"], col, 0, 6, b"|")
    with pytest.raises(ValueError):
        _jsonrows.json_rows([b"<"], col, 0, 1, b"|")
    with pytest.raises(ValueError):
        _jsonrows.json_rows([b"<", b">"], [("s", np.arange(5))], 0, 1, b"|")


def test_snapshot_lists_in_chunks_join_into_one_json_list(monkeypatch):
    from profscope.models.data import memory_profile

    monkeypatch.setattr(memory_profile, "SNAPSHOT_CHUNK", 3)
    n = 7
    ints = lambda k: np.arange(n, dtype=np.int64) * k - 3
    tl = Snapshots(
        time_ps=ints(5),
        stack=ints(1),
        heap=ints(2),
        free=ints(3),
        fragmentation=np.linspace(0, 1, n),
        peak_in_use=ints(4),
        activity=np.array([1, 2, 3, 4, 0, 9, -1]),
        requested=ints(6),
        allocation=ints(7),
        address=np.arange(n, dtype=np.uint64) + np.uint64(2**63),
        step=ints(8),
        op=np.arange(n, dtype=np.int32) % 3,
        region=np.zeros(n, np.int32),
        dtype=np.ones(n, np.int32),
        shape=np.full(n, 2, np.int32),
        strings=["", "op\u00e9", '[2,"3"]'],
    )
    chunks = list(_snapshot_chunks(tl))
    assert chunks[::2] == [b"[", b",", b",", b"]"]  # three chunks of rows, each after its bracket or comma
    doc = json.loads(b"".join(chunks))
    assert [d["activityMetadata"]["memoryActivity"] for d in doc] == [
        "ALLOCATION",
        "DEALLOCATION",
        "RESERVATION",
        "EXPANSION",
        "UNKNOWN_ACTIVITY",
        9,
        -1,
    ]
    assert (
        doc[3]["activityMetadata"]["address"] == str(2**63 + 3) and doc[1]["activityMetadata"]["tfOpName"] == "op\u00e9"
    )
    assert list(_snapshot_chunks(None)) == [b"[]"]
