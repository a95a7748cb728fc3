"""The streaming Chrome trace-event JSON scanner (profscope.models.formats._chrome_json)
and its file driver (profscope.models.formats.chrome_json): columns, chunk splits,
exact times, escapes, hostile input, gzip checkpoints, cancellation."""

from __future__ import annotations

import decimal
import gc
import gzip
import json
import random
import threading
import types

import numpy as np
import pytest

from profscope.models.core import guards
from profscope.models.core.task import Cancelled, ProfileError, TaskState
from profscope.models.formats import chrome_json
from profscope.models.formats._chrome_json import (
    ARGS_PRESENT,
    BP_E,
    DUR_BAD,
    DUR_NEG,
    FLOW_IN,
    FLOW_OUT,
    PID_STR,
    TID_STR,
    TS_BAD,
    TS_MISSING,
    Scanner,
)

KEYS = (b"correlation", b"External id", b"Bytes", b"Addr", b"Total Allocated", b"Total Reserved",
        b"Device Type", b"Device Id", b"stream", b"device")
INT64_MIN = np.iinfo(np.int64).min
COLUMNS = ("ph", "scope", "name", "cat", "pid", "tid", "id", "bind_id", "ts_us", "ts_ps", "dur_ps", "flags",
           "offset", "length")


def kineto_events(steps: int = 2) -> list[dict]:
    """Events shaped like PyTorch's profiler output."""
    pid, tid = 4242, 4243
    out = [
        {"name": "process_name", "ph": "M", "ts": 1692828483620955, "pid": pid, "tid": 0, "args": {"name": "python"}},
        {"name": "thread_name", "ph": "M", "ts": 1692828483620955, "pid": pid, "tid": tid,
         "args": {"name": "thread 4243 (python)"}},
        {"name": "process_sort_index", "ph": "M", "ts": 1692828483620955, "pid": 0, "tid": 0,
         "args": {"sort_index": 5000000}},
    ]
    t = 1692828483620955.5
    for step in range(steps):
        out.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": pid, "tid": tid,
                    "ts": t, "dur": 2000.25, "args": {"External id": 100 * step, "Record function id": 0}})
        out.append({"ph": "B", "name": "forward", "pid": pid, "tid": tid, "ts": t + 1})
        out.append({"ph": "X", "cat": "cpu_op", "name": "aten::addmm", "pid": pid, "tid": tid, "ts": t + 2,
                    "dur": 15.123, "args": {"External id": 100 * step + 1, "Input Dims": [[128, 512], [512], []],
                                            "Input type": ["float", "", "Scalar"], "Concrete Inputs": ["", "", "1"]}})
        out.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                    "ts": t + 3, "dur": 5.5, "args": {"External id": 100 * step + 1, "cbid": 211,
                                                      "correlation": 7000 + step}})
        out.append({"ph": "s", "id": 7000 + step, "pid": pid, "tid": tid, "ts": t + 3, "cat": "ac2g", "name": "ac2g"})
        out.append({"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": t + 40,
                    "dur": 11.264, "args": {"External id": 100 * step + 1, "device": 0, "stream": 7,
                                            "correlation": 7000 + step, "grid": [1024, 1, 1], "block": [128, 1, 1],
                                            "blocks per SM": 122.4, "est. achieved occupancy %": 100}})
        out.append({"ph": "f", "id": 7000 + step, "pid": 0, "tid": 7, "ts": t + 40, "cat": "ac2g", "name": "ac2g",
                    "bp": "e"})
        out.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": pid, "tid": tid,
                    "ts": t + 4, "args": {"Total Reserved": 2097152, "Total Allocated": 512, "Bytes": -512,
                                          "Addr": 139822469890048, "Device Type": 1, "Device Id": 0}})
        out.append({"ph": "C", "name": "Memory", "pid": pid, "ts": t + 5, "args": {"Bytes": 1.5e3}})
        out.append({"ph": "E", "pid": pid, "tid": tid, "ts": t + 9})
        out.append({"ph": "t", "id2": {"local": "0x1f"}, "pid": "rank 0", "tid": "stream 7", "ts": t + 10,
                    "name": "step", "cat": "async", "flow_in": True, "flow_out": True, "bind_id": "0xbeef"})
        out.append({"ph": "i", "s": "g", "name": "sync", "ts": t + 11, "id2": {"global": 12}})
        t += 2000
    return out


def kineto_doc(events=None, indent=None) -> bytes:
    doc = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "A100", "totalGlobalMem": 42505273344}],
           "traceEvents": kineto_events() if events is None else events,
           "displayTimeUnit": "ms", "baseTimeNanoseconds": 1692828000000000000}
    return json.dumps(doc, indent=indent).encode()


def scan(data: bytes, keys=KEYS, chunk: int | None = None, **kw) -> dict:
    s = Scanner(keys, **kw)
    if chunk is None:
        s.feed(data)
    else:
        for i in range(0, len(data), chunk):
            s.feed(data[i:i + chunk])
    return with_dense_args(s.finish(), keys)


def with_dense_args(r: dict, keys=KEYS) -> dict:
    """finish() with its sparse (row, key, value) args also as one column per
    key, INT64_MIN where an event lacks the key."""
    assert np.all(np.diff(r["arg_rows"].astype(np.int64)) >= 0)  # rows ascending
    dense = {k: np.full(r["events"], INT64_MIN, np.int64) for k in keys}
    for j, k in enumerate(keys):
        mine = r["arg_keys"] == j
        dense[k][r["arg_rows"][mine]] = r["arg_values"][mine]
    r["args"] = dense
    return r


def same(a: dict, b: dict) -> None:
    """Two finish() results are equal in everything."""
    assert a.keys() == b.keys()
    for k in a:
        if k == "args":
            assert a[k].keys() == b[k].keys()
            for key in a[k]:
                np.testing.assert_array_equal(a[k][key], b[k][key], err_msg=str(key))
        elif isinstance(a[k], np.ndarray):
            assert a[k].dtype == b[k].dtype, k
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)
        else:
            assert a[k] == b[k], k


def exact_ps(text: str) -> int:
    """floor(value * 1e6) of a decimal number text, exactly."""
    with decimal.localcontext() as ctx:
        ctx.prec = 100
        return int((decimal.Decimal(text) * 1_000_000).to_integral_value(rounding=decimal.ROUND_FLOOR))


class Num(str):
    """A JSON number's text as written."""


def loads_exact(data):
    return json.loads(data, parse_float=Num, parse_int=Num, parse_constant=Num)


def arg_value(v) -> int:
    if isinstance(v, Num):
        x = int(decimal.Decimal(v))
    elif isinstance(v, str) and v[:2] in ("0x", "0X"):
        x = int(v, 16)
    else:
        return INT64_MIN
    return x if INT64_MIN < x < 2**63 else INT64_MIN


def expected_columns(data: bytes, keys=KEYS) -> dict:
    """What the scanner should return, computed with json.loads."""
    doc = loads_exact(data)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    rows = {c: [] for c in ("ph", "scope", "name", "cat", "pid", "tid", "id", "bind_id", "ts", "dur", "flags")}
    args = {k: [] for k in keys}
    for e in events:
        flags = 0
        for c, col in (("ph", "ph"), ("s", "scope")):
            v = e.get(c)
            rows[col].append(v.encode()[0] if type(v) is str and v else 0)
        for c in ("name", "cat"):
            rows[c].append(e.get(c) if type(e.get(c)) is str else None)
        for c, bit in (("pid", PID_STR), ("tid", TID_STR), ("id", 0), ("bind_id", 0)):
            rows[c].append(e.get(c))
            flags |= bit if type(e.get(c)) is str else 0
        if "id" not in e and isinstance(e.get("id2"), dict):
            scope, value = next(iter(e["id2"].items()))
            rows["id"][-1] = f"{scope}:{value}"
        if "ts" in e:
            rows["ts"].append(exact_ps(e["ts"]))
        else:
            rows["ts"].append(0)
            flags |= TS_MISSING
        rows["dur"].append(exact_ps(e["dur"]) if "dur" in e else -1)
        flags |= DUR_NEG if rows["dur"][-1] < 0 and "dur" in e else 0
        flags |= BP_E if e.get("bp") == "e" else 0
        flags |= FLOW_IN if e.get("flow_in") is True else 0
        flags |= FLOW_OUT if e.get("flow_out") is True else 0
        flags |= ARGS_PRESENT if isinstance(e.get("args"), dict) else 0
        rows["flags"].append(flags)
        a = e.get("args") if isinstance(e.get("args"), dict) else {}
        for k in keys:
            args[k].append(arg_value(a.get(k.decode())))
    return {"rows": rows, "args": args, "events": events}


def check_against_json(r: dict, data: bytes, keys=KEYS) -> None:
    want = expected_columns(data, keys)
    rows, strings = want["rows"], r["strings"]
    n = len(want["events"])
    assert r["events"] == n
    assert r["ph"].dtype == np.uint8 and r["scope"].dtype == np.uint8
    assert r["ts_us"].dtype == np.int64 and r["ts_ps"].dtype == np.int32 and r["dur_ps"].dtype == np.int64
    assert r["flags"].dtype == np.uint16 and r["offset"].dtype == np.int64 and r["length"].dtype == np.int32
    for c in ("name", "cat", "pid", "tid", "id", "bind_id"):
        assert r[c].dtype == np.int32
        got = [strings[k] if k >= 0 else None for k in r[c]]
        assert got == [None if v is None else str(v) for v in rows[c]], c
    assert list(r["ph"]) == rows["ph"]
    assert list(r["scope"]) == rows["scope"]
    ts = r["ts_us"].astype(object) * 1_000_000 + r["ts_ps"].astype(object)
    assert list(ts) == rows["ts"]
    assert list(r["dur_ps"]) == rows["dur"]
    mask = TS_MISSING | DUR_NEG | BP_E | FLOW_IN | FLOW_OUT | ARGS_PRESENT | PID_STR | TID_STR
    assert list(r["flags"] & mask) == rows["flags"]
    for k in keys:
        assert list(r["args"][k]) == want["args"][k], k
    for i, e in enumerate(want["events"]):
        text = data[r["offset"][i]:r["offset"][i] + r["length"][i]]
        assert loads_exact(text) == e


# ---------------------------------------------------------------- columns


def test_kineto_columns_match_json_loads():
    data = kineto_doc()
    r = scan(data)
    check_against_json(r, data)
    assert r["complete"] and r["has_trace_events"] and r["error"] is None and r["form"] == "object"
    assert r["end_offset"] == len(data)
    assert r["meta"] == {"schemaVersion": b"1", "displayTimeUnit": b'"ms"',
                         "baseTimeNanoseconds": b"1692828000000000000",
                         "deviceProperties": json.dumps([{"id": 0, "name": "A100",
                                                          "totalGlobalMem": 42505273344}]).encode()}
    assert r["warnings"] == [] and r["bad_events"] == 0


def test_pretty_printed_and_specific_values():
    data = kineto_doc(indent=2)
    r = scan(data)
    check_against_json(r, data)
    s = r["strings"]
    x = [i for i in range(r["events"]) if s[r["name"][i]] == "ampere_sgemm_128x64_tn"][0]
    assert r["args"][b"stream"][x] == 7 and r["args"][b"correlation"][x] == 7000
    assert r["dur_ps"][x] == 11_264_000 and r["ph"][x] == ord("X")
    assert r["ts_us"][x] == 1692828483620995 and r["ts_ps"][x] == 500_000
    flow = [i for i in range(r["events"]) if r["ph"][i] == ord("f")][0]
    assert r["flags"][flow] & BP_E and s[r["id"][flow]] == "7000"
    t = [i for i in range(r["events"]) if r["ph"][i] == ord("t")][0]
    assert s[r["id"][t]] == "local:0x1f" and s[r["bind_id"][t]] == "0xbeef"
    assert r["flags"][t] & (FLOW_IN | FLOW_OUT | PID_STR | TID_STR) == FLOW_IN | FLOW_OUT | PID_STR | TID_STR
    g = [i for i in range(r["events"]) if s[r["name"][i]] == "sync"][0]
    assert s[r["id"][g]] == "global:12" and r["scope"][g] == ord("g")
    counter = [i for i in range(r["events"]) if r["ph"][i] == ord("C")][0]
    assert r["args"][b"Bytes"][counter] == 1500  # 1500.0 truncated
    end = [i for i in range(r["events"]) if r["ph"][i] == ord("E")][0]
    assert r["name"][end] == -1 and r["cat"][end] == -1 and r["dur_ps"][end] == -1
    assert not r["flags"][end] & ARGS_PRESENT


def test_bare_array_and_meta_around_trace_events():
    events = kineto_events(1)
    data = json.dumps(events).encode()
    r = scan(data)
    check_against_json(r, data)
    assert r["form"] == "array" and r["complete"] and r["meta"] == {}
    doc = (b'{"before": {"a": [1, {"b": "}]"}]}, "traceEvents": ' + json.dumps(events).encode()
           + b', "after": "x\\"y", "n": -1.5e3, "t": true, "z": null}')
    r = scan(doc)
    check_against_json(r, doc)
    assert r["meta"] == {"before": b'{"a": [1, {"b": "}]"}]}', "after": b'"x\\"y"', "n": b"-1.5e3",
                         "t": b"true", "z": b"null"}


def test_object_without_trace_events():
    r = scan(b' {"memoryProfilePerAllocator": {"x": 1}, "version": 1}\n')
    assert r["complete"] and not r["has_trace_events"] and r["events"] == 0
    assert r["meta"] == {"memoryProfilePerAllocator": b'{"x": 1}', "version": b"1"}
    r = scan(b"{}")
    assert r["complete"] and not r["has_trace_events"]
    r = scan(b'{"traceEvents": []}')
    assert r["complete"] and r["has_trace_events"] and r["events"] == 0


def test_skipped_keys_and_big_meta():
    doc = (b'{"systemTraceEvents": "' + b"x" * 1000 + b'", "stackFrames": {"1": {"name": "f"}}, '
           b'"traceEvents": [{"ph": "X", "ts": 1}], "samples": [{"a": 1}], "big": "' + b"y" * 500 + b'", "small": 2}')
    r = scan(doc, max_meta_bytes=100)
    assert r["meta"] == {"small": b"2"}
    assert r["meta_skipped"] == ["systemTraceEvents", "stackFrames", "samples"]
    assert any("'big'" in w and "100 bytes" in w for w in r["warnings"])
    assert r["events"] == 1 and r["complete"]


def test_bom_whitespace_and_trailing_comma():
    r = scan(b'\xef\xbb\xbf \n\t[{"ph": "i", "ts": 1},\n]\n')
    assert r["events"] == 1 and r["complete"] and r["offset"][0] == 7
    r = scan(b'[{"ph": "i", "ts": 1}] garbage')
    assert r["complete"] and r["events"] == 1 and any("after the end" in w for w in r["warnings"])


def test_non_object_elements_are_counted():
    r = scan(b'[1, "two", [3, {"x": 4}], {"ph": "X", "ts": 5}, null, {"ph": "E", "ts": 6}]')
    assert r["events"] == 2 and r["bad_events"] == 4 and r["complete"]
    assert list(r["ts_us"]) == [5, 6]


# ---------------------------------------------------------------- chunk splits


def kitchen_sink() -> bytes:
    """Every kind of token the scanner treats specially, for split tests."""
    events = kineto_events(1)
    text = json.dumps({"pre": {"k": ["a\\\"]", 1e5]}, "traceEvents": events, "post": "\u00e9"}, indent=1)
    extra = (' {"ph": "X", "n\\u0061me": "esc\\n\\"q\\\\\\u00e9\\ud83d\\ude00", "ts": 1692828483620955.123,'
             ' "dur": "12.5", "args": {"Addr": "0x7fff00001000", "Bytes": -2.9e2, "stream": "12", "device": true,'
             ' "Device Id": 1e30, "correlation": {"deep": [[[]]]}, "Total Reserved": 123456789012345678901},'
             ' "pid": "p\\u0031", "tid": -1.50},\n'
             ' {"ph": "i", "ts": -0.0000005, "dur": -3, "s": "p", "args": {"E\\u0078ternal id": 9}},\n'
             ' {"ts": NaN, "dur": Infinity}, {"ts": 1e308, "dur": 1e-400}, 7, [], {},\n')
    i = text.index('"traceEvents": [') + len('"traceEvents": [')
    return ("\ufeff" + text[:i] + extra + text[i:]).encode()


def test_kitchen_sink_values():
    data = kitchen_sink()
    r = scan(data)
    assert r["complete"] and r["bad_events"] == 2
    s = r["strings"]
    assert s[r["name"][0]] == 'esc\n"q\\\u00e9\U0001F600'
    assert r["ts_us"][0] == 1692828483620955 and r["ts_ps"][0] == 123_000
    assert r["dur_ps"][0] == 12_500_000
    a = r["args"]
    assert a[b"Addr"][0] == 0x7FFF00001000 and a[b"Bytes"][0] == -290 and a[b"stream"][0] == 12
    assert a[b"device"][0] == INT64_MIN and a[b"Device Id"][0] == INT64_MIN and a[b"correlation"][0] == INT64_MIN
    assert a[b"Total Reserved"][0] == INT64_MIN
    assert s[r["pid"][0]] == "p1" and r["flags"][0] & PID_STR
    assert s[r["tid"][0]] == "-1.50" and not r["flags"][0] & TID_STR
    assert (r["ts_us"][1], r["ts_ps"][1]) == (-1, 999_999)  # floor of -0.5 ps in µs
    assert r["dur_ps"][1] == -3_000_000 and r["flags"][1] & DUR_NEG and r["scope"][1] == ord("p")
    assert a[b"External id"][1] == 9
    assert r["flags"][2] & (TS_BAD | DUR_BAD) == TS_BAD | DUR_BAD and r["ts_us"][2] == 0
    assert r["flags"][3] & TS_BAD and r["dur_ps"][3] == 0 and not r["flags"][3] & (DUR_NEG | DUR_BAD)
    assert r["flags"][4] & TS_MISSING and r["ph"][4] == 0
    assert r["meta"]["post"] == b'"\\u00e9"'


def test_every_chunk_size_gives_the_same_result():
    data = kitchen_sink()
    whole = scan(data)
    for chunk in range(1, 65):
        same(scan(data, chunk=chunk), whole)


def test_random_splits_and_buffer_types():
    data = kineto_doc(indent=2) + b"\n"
    whole = scan(data)
    rng = random.Random(7)
    for _ in range(30):
        cuts = sorted(rng.sample(range(1, len(data)), rng.randint(1, 40)))
        s = Scanner(KEYS)
        for a, b in zip([0] + cuts, cuts + [len(data)]):
            piece = data[a:b]
            s.feed(rng.choice([bytes, bytearray, memoryview])(piece))
        same(with_dense_args(s.finish()), whole)


# ---------------------------------------------------------------- exact numbers


@pytest.mark.parametrize("text, us, ps", [
    ("1692828483620955.123", 1692828483620955, 123_000),
    ("1.5e3", 1500, 0),
    ("-3", -3, 0),
    ('"12.5"', 12, 500_000),
    ("0.0000001", 0, 0),
    ("-0.0000001", -1, 999_999),
    ("1.000001", 1, 1),
    ("123456789.123456789", 123456789, 123_456),
    ("1692828483620955123e-3", 1692828483620955, 123_000),
    ("0.1692828483620955123E16", 1692828483620955, 123_000),
    ("-1692828483620955.5", -1692828483620956, 500_000),
    ("9223372036854775807", 9223372036854775807, 0),
    ("-9223372036854775808", -9223372036854775808, 0),
    ("0e999999999", 0, 0),
    ("00012", 12, 0),
])
def test_exact_timestamps(text, us, ps):
    r = scan(b'[{"ts": ' + text.encode() + b"}]")
    assert (r["ts_us"][0], r["ts_ps"][0]) == (us, ps)
    assert not r["flags"][0] & (TS_BAD | TS_MISSING)


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1e308", "9223372036854775808", "null",
                                  '"x"', '"1e"', "[1]", "{}", "true", '"12\\u0035"', "1e-"])
def test_bad_timestamps(text):
    r = scan(b'[{"ts": ' + text.encode() + b', "dur": ' + text.encode() + b', "ph": "X"}, {"ph": "i", "ts": 2}]')
    assert r["events"] == 2 and r["complete"]
    assert r["flags"][0] & TS_BAD and r["ts_us"][0] == 0 and r["ts_ps"][0] == 0
    assert r["flags"][0] & DUR_BAD and r["dur_ps"][0] == -1
    assert r["ts_us"][1] == 2 and not r["flags"][1] & TS_BAD


def test_durations():
    r = scan(b'[{"dur": 2.5}, {"dur": 0.0000015}, {"dur": -0.5}, {"dur": 9223372036854.775807},'
             b' {"dur": 9223372036854.775808}, {"dur": 1e3}, {"dur": "7"}]')
    assert list(r["dur_ps"]) == [2_500_000, 1, -500_000, 9223372036854775807, -1, 1_000_000_000, 7_000_000]
    assert list(r["flags"] & (DUR_BAD | DUR_NEG)) == [0, 0, DUR_NEG, 0, DUR_BAD, 0, 0]


# ---------------------------------------------------------------- strings


def test_escapes_unicode_and_invalid_utf8():
    data = (b'[{"name": "a\\u00e9\\ud83d\\ude00\\t", "cat": "\\ud800x", "pid": "\xe4\xb8\xad", '
            b'"tid": "\xff\xfe", "id": "\\"q\\"", "ph": "\\u0058", "s": "\\u0074"},'
            b' {"name": "a\xc3\xa9\xf0\x9f\x98\x80\\u0009", "cat": "plain"}]')
    r = scan(data)
    s = r["strings"]
    assert s[r["name"][0]] == "a\u00e9\U0001F600\t" and r["name"][1] == r["name"][0]
    assert s[r["cat"][0]] == "\ufffdx"
    assert s[r["pid"][0]] == "\u4e2d" and s[r["tid"][0]] == "\ufffd\ufffd"
    assert s[r["id"][0]] == '"q"' and r["ph"][0] == ord("X") and r["scope"][0] == ord("t")


def test_long_strings_are_cut_at_a_character():
    name = "\u00e9" * 3000  # 6000 bytes of UTF-8
    r = scan(json.dumps([{"name": name, "cat": "x" * 5000}], ensure_ascii=False).encode())
    assert r["strings"][r["name"][0]] == "\u00e9" * 2048
    assert r["strings"][r["cat"][0]] == "x" * 4096
    r2 = scan(json.dumps([{"name": name}]).encode())  # as \u00e9 escapes
    assert r2["strings"][r2["name"][0]] == "\u00e9" * 2048
    assert any("2 strings" in w for w in r["warnings"])


def test_ten_megabyte_strings():
    big = "x" * (10 << 20)
    data = json.dumps({"traceEvents": [{"ph": "X", "name": big, "ts": 1, "args": {"blob": big}},
                                       {"ph": "E", "ts": 2}], "meta": big}).encode()
    r = scan(data, max_meta_bytes=1 << 20, chunk=8 << 10)  # linear, not quadratic, in the tail
    assert r["events"] == 2 and r["complete"]
    assert len(r["strings"][r["name"][0]]) == 4096 and r["length"][0] > 20 << 20
    assert "meta" not in r["meta"]


# ---------------------------------------------------------------- hostile input


def test_deep_nesting_is_fine():
    deep = b'{"a": ' * 10_000 + b"1" + b"}" * 10_000
    data = b'[{"ph": "X", "ts": 1, "args": {"Bytes": 5, "deep": ' + deep + b'}}, {"ph": "E", "ts": 2}]'
    r = scan(data)
    assert r["events"] == 2 and r["complete"] and r["args"][b"Bytes"][0] == 5
    r = scan(b'[{"args": ' + b"[" * 1_000_000)  # very deep and unterminated
    assert not r["complete"] and r["events"] == 0 and r["error"] is None


def test_truncated_document_keeps_whole_events():
    data = kineto_doc()
    whole = scan(data)
    for cut in (len(data) - 1, len(data) // 2, 30):
        r = scan(data[:cut])
        assert not r["complete"] and r["error"] is None
        n = r["events"]
        assert np.all(whole["offset"][:n] + whole["length"][:n] <= cut)
        assert n == whole["events"] or whole["offset"][n] + whole["length"][n] > cut
        np.testing.assert_array_equal(r["ts_us"], whole["ts_us"][:n])


@pytest.mark.parametrize("bad, reason", [
    (b'{"ph":"X",,}', "key string"),
    (b'{"ph" "X"}', "':'"),
    (b'{"ph": "X" "ts": 1}', "','"),
    (b'{"args": {"a": [1}}', "mismatched bracket"),
    (b'{"ph": }', "value"),
    (b'{"args": {"a" 1}}', "':'"),
])
def test_syntax_error_mid_array(bad, reason):
    good = b'{"ph": "X", "ts": 1}, {"ph": "E", "ts": 2}, '
    data = b'{"traceEvents": [' + good + bad + b', {"ph": "X", "ts": 3}]}'
    for chunk in (None, 1, 7):
        r = scan(data, chunk=chunk)
        assert r["events"] == 2 and not r["complete"]
        at = data.index(bad)
        assert reason in r["error"] and r["error_offset"] >= at and f"byte {r['error_offset']}" in r["error"]
        assert r["end_offset"] == data.index(b", " + bad)


def test_feed_after_error_is_ignored():
    s = Scanner(())
    s.feed(b'[{"ts": 1}, {,}')
    assert s.error is not None
    s.feed(b'{"ts": 2}]')
    r = s.finish()
    assert r["events"] == 1 and not r["complete"]


def test_event_larger_than_limit():
    data = b'[{"ts": 1}, {"ts": 2, "pad": "' + b"x" * 5000 + b'"}, {"ts": 3}]'
    for chunk in (None, 100):
        r = scan(data, max_event_bytes=1000, chunk=chunk)
        assert r["events"] == 1 and not r["complete"]
        assert "larger than the limit of 1000 bytes" in r["error"] and "byte 12" in r["error"]


def test_not_json_fails_at_once():
    for data in (b"PK\x03\x04....", b"\x1f\x8b\x08\x00", b"hello", b"\xef\xbb{}"):
        s = Scanner(())
        with pytest.raises(ValueError, match="not a JSON trace"):
            s.feed(data)
    for data in (b"", b"  \n"):
        s = Scanner(())
        s.feed(data)
        with pytest.raises(ValueError, match="not a JSON trace"):
            s.finish()


def test_programming_errors():
    with pytest.raises(TypeError):
        Scanner(("correlation",))
    with pytest.raises(ValueError):
        Scanner(tuple(b"k%d" % i for i in range(17)))
    s = Scanner(())
    with pytest.raises(TypeError):
        s.feed("[]")
    s.feed(b"[]")
    s.finish()
    with pytest.raises(RuntimeError):
        s.finish()
    with pytest.raises(RuntimeError):
        s.feed(b"")


def test_columns_own_their_memory():
    r = scan(json.dumps([{"ts": i, "ph": "X", "args": {"Bytes": i}} for i in range(100_000)]).encode())
    ts, b = r["ts_us"], r["args"][b"Bytes"]
    del r
    assert ts[-1] == 99_999 and b.sum() == sum(range(100_000))
    ts[0] = 5  # writable


# ---------------------------------------------------------------- the file driver


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(chrome_json, "CHUNK_SIZE", 4096)
    monkeypatch.setattr(chrome_json, "GZIP_READ_SIZE", 1000)
    monkeypatch.setattr(chrome_json, "GZIP_CHECKPOINT_INTERVAL", 20_000)


def many_events(n: int) -> list[dict]:
    return [{"ph": "X", "cat": "kernel", "name": f"k{i % 37}", "pid": 0, "tid": 7, "ts": 1000 + i * 1.5,
             "dur": 1.25, "args": {"correlation": i, "External id": i // 2}} for i in range(n)]


def test_scan_plain_and_gzip_files(tmp_path, small_chunks):
    events = many_events(3000)
    data = json.dumps({"traceEvents": events, "displayTimeUnit": "ns"}).encode()
    (tmp_path / "t.json").write_bytes(data)
    (tmp_path / "t.bin").write_bytes(gzip.compress(data))  # told by content, not name
    plain = chrome_json.scan_trace(tmp_path / "t.json", ("correlation", "External id"))
    packed = chrome_json.scan_trace(tmp_path / "t.bin", ("correlation", "External id"))
    for t in (plain, packed):
        assert t.complete and t.events == 3000 and t.warnings == [] and t.meta == {"displayTimeUnit": b'"ns"'}
        np.testing.assert_array_equal(t.arg("correlation", np.arange(3000)), np.arange(3000))
        assert t.string(t.name, 38) == "k1"
    assert not plain.gzip and packed.gzip and len(packed.checkpoints) > 5
    for i in (0, 1, 777, 1500, 2999):
        assert json.loads(packed.event_json(i)) == events[i] == json.loads(plain.event_json(i))
        assert packed.event_dict(i) == events[i]
    # every checkpoint boundary: events that start before and end after it
    for cp in packed.checkpoints[1:]:
        i = int(np.searchsorted(packed.offset, cp.uncompressed)) - 1
        assert json.loads(packed.event_json(i)) == events[i]
        assert json.loads(packed.event_json(i + 1)) == events[i + 1]


def test_multi_member_gzip(tmp_path, small_chunks):
    events = many_events(2000)
    data = json.dumps(events).encode()
    cut = len(data) // 3
    (tmp_path / "m.json.gz").write_bytes(gzip.compress(data[:cut]) + gzip.compress(data[cut:2 * cut])
                                         + gzip.compress(data[2 * cut:]))
    t = chrome_json.scan_trace(tmp_path / "m.json.gz", ())
    assert t.complete and t.events == 2000 and t.warnings == []
    for i in (0, 666, 667, 1333, 1334, 1999):
        assert json.loads(t.event_json(i)) == events[i]


def test_truncated_gzip_keeps_events(tmp_path, small_chunks):
    data = json.dumps({"traceEvents": many_events(3000)}).encode()
    packed = gzip.compress(data)
    (tmp_path / "cut.json.gz").write_bytes(packed[:len(packed) // 2])
    t = chrome_json.scan_trace(tmp_path / "cut.json.gz", ())
    assert not t.complete and 0 < t.events < 3000
    assert t.warnings == [f"the gzip data ends early: kept {t.events:,} events read before the cut"]
    assert json.loads(t.event_json(t.events - 1))["ts"] == 1000 + (t.events - 1) * 1.5


def test_corrupt_gzip_keeps_events(tmp_path, small_chunks):
    data = json.dumps({"traceEvents": many_events(3000)}).encode()
    packed = bytearray(gzip.compress(data, compresslevel=1))
    packed[len(packed) // 2:len(packed) // 2 + 50] = b"\xff" * 50
    (tmp_path / "bad.json.gz").write_bytes(bytes(packed))
    t = chrome_json.scan_trace(tmp_path / "bad.json.gz", ())
    assert not t.complete and t.events < 3000
    # zlib notices, or the inflated bytes stop being JSON first
    assert len(t.warnings) == 1 and ("gzip data is corrupt" in t.warnings[0] or "malformed" in t.warnings[0])
    assert t.warnings[0].endswith(f"kept {t.events:,} events read before it")


def test_inflate_ratio_guard(tmp_path, monkeypatch):
    monkeypatch.setattr(guards, "MIN_INFLATE_LIMIT", 100_000)
    data = b"[" + b" " * 5_000_000 + b"]"
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(data, 9))
    with pytest.raises(ProfileError, match="PROFSCOPE_MAX_INFLATE_RATIO"):
        chrome_json.scan_trace(tmp_path / "bomb.json.gz", ())
    monkeypatch.setenv("PROFSCOPE_MAX_INFLATE_RATIO", "100000")
    assert chrome_json.scan_trace(tmp_path / "bomb.json.gz", ()).complete


def test_a_refused_trace_holds_no_memory_once_its_error_is_dropped(tmp_path, monkeypatch):
    """The error must not sit in a reference cycle with the frames of its
    traceback: those hold the scanner and inflated chunks, and a cycle keeps
    them (hundreds of MB for a bomb) until Python's collector happens to run."""
    monkeypatch.setattr(guards, "MIN_INFLATE_LIMIT", 100_000)
    (tmp_path / "bomb.json.gz").write_bytes(gzip.compress(b"[" * 5_000_000, 9))
    gc.disable()
    try:
        with pytest.raises(ProfileError, match="PROFSCOPE_MAX_INFLATE_RATIO") as e:
            chrome_json.scan_trace(tmp_path / "bomb.json.gz", ())
        holders = [r for r in gc.get_referrers(e.value) if isinstance(r, types.FrameType)]
        assert holders == []
    finally:
        gc.enable()


def test_not_a_trace_files(tmp_path):
    cases = {
        "a.json": (b"PK\x03\x04 zip", "does not start like JSON"),
        "b.json": (b'{"version": 1, "memoryProfilePerAllocator": {}}', "is JSON but has no traceEvents"),
        "c.json": (b"", "empty"),
        "d.json.gz": (gzip.compress(b"<html>"), "does not start like JSON"),
        "e.json": (b"[1, 2, 3]", "no trace events"),
        "f.json": (b'{"a" 1}', "not valid JSON"),
        "g.json.gz": (b"\x1f\x8b\x09\x00" + bytes(20), "gzip data is corrupt"),
    }
    for name, (data, message) in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ProfileError, match=message) as e:
            chrome_json.scan_trace(tmp_path / name, ())
        assert name in str(e.value)
    with pytest.raises(ProfileError, match="does not exist"):
        chrome_json.scan_trace(tmp_path / "missing.json", ())


def test_syntax_error_and_cut_files(tmp_path, small_chunks):
    events = many_events(500)
    data = json.dumps(events).encode()
    at = data.index(b'{"ph"', len(data) // 2)
    (tmp_path / "bad.json").write_bytes(data[:at] + b"{,}" + data[at:])
    t = chrome_json.scan_trace(tmp_path / "bad.json", ())
    assert not t.complete and t.error and f"byte {at + 1}" in t.error
    assert t.warnings[-1].startswith("the JSON is malformed") and t.events == data[:at].count(b'{"ph"')
    (tmp_path / "cut.json").write_bytes(data[:at + 10])
    t = chrome_json.scan_trace(tmp_path / "cut.json", ())
    assert not t.complete and t.warnings[-1].startswith(f"the JSON ends early (at byte {at - 2:,})")


def test_event_dict_safety(tmp_path, monkeypatch):
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000
    data = ('[{"ph": "X", "ts": 1, "args": ' + deep + '}, {"ph": "i", "ts": 2, "s": "t"}, '
            '{"ph": "X", "ts": 3, "args": {"b": "' + "x" * 2000 + '"}}]').encode()
    (tmp_path / "d.json").write_bytes(data)
    t = chrome_json.scan_trace(tmp_path / "d.json", ())
    assert t.complete and t.events == 3
    assert "error" in t.event_dict(0) and t.event_dict(1) == {"ph": "i", "ts": 2, "s": "t"}
    monkeypatch.setattr(chrome_json, "EVENT_DICT_LIMIT", 1000)
    assert "too large" in t.event_dict(2)["error"]


def test_cancellation_stops_the_reader(tmp_path, small_chunks):
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(json.dumps(many_events(3000)).encode()))
    before = threading.active_count()
    seen = []

    def progress(fraction, text):
        seen.append((fraction, text))
        if len(seen) == 3:
            task.cancel()

    task = TaskState(progress)
    with pytest.raises(Cancelled):
        chrome_json.scan_trace(tmp_path / "t.json.gz", (), task=task)
    assert len(seen) == 3 and seen[0][0] <= seen[1][0] and "events" in seen[1][1]
    assert threading.active_count() == before


def test_progress_reaches_the_end(tmp_path, small_chunks):
    (tmp_path / "t.json").write_bytes(json.dumps(many_events(1000)).encode())
    seen = []
    chrome_json.scan_trace(tmp_path / "t.json", (), task=TaskState(lambda f, t: seen.append(f)))
    assert len(seen) > 3 and seen == sorted(seen) and seen[-1] == 1.0


def test_zlib_checkpoint_state_is_reusable(tmp_path, small_chunks):
    """Reading the same event twice (the checkpoint's inflater is copied, not used up)."""
    data = json.dumps(many_events(2000)).encode()
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(data))
    t = chrome_json.scan_trace(tmp_path / "t.json.gz", ())
    assert t.event_json(1999) == t.event_json(1999)
