"""The snapshot's pickle reader builds plain data only and refuses the rest by opcode, before running anything."""

import os
import pickle
import struct

import pytest

from profscope.models.core.safe_pickle import loads
from profscope.models.core.task import ProfileError

PLAIN = [
    {"a": [1, 2, (3, 4.5)], "b": None, "c": True, "d": b"xx", "e": 2**70, "f": -5, "g": "é" * 300, "h": [], "i": ()},
    [[]] * 3, list(range(1000)), {"segments": [], "device_traces": [[]]},
]


@pytest.mark.parametrize("protocol", [3, 4, 5])
def test_plain_data_reads_as_pickle_reads_it(protocol):
    for value in PLAIN:
        assert loads(pickle.dumps(value, protocol=protocol)) == value
    shared = {"x": 1}
    got = loads(pickle.dumps([shared] * 3, protocol=protocol))
    assert got == [shared] * 3 and got[0] is got[2]


class Runs:
    def __init__(self, call, *args):
        self.call, self.args = call, args

    def __reduce__(self):
        return self.call, self.args


def _hand_made(module: bytes, name: bytes, arg: bytes) -> dict[str, bytes]:
    """The same call spelled with GLOBAL (protocol 0's) and with STACK_GLOBAL (protocol 4's)."""
    short = lambda s: b"\x8c" + bytes([len(s)]) + s
    return {
        "GLOBAL": b"\x80\x02c" + module + b"\n" + name + b"\n" + short(arg) + b"\x85R.",
        "STACK_GLOBAL": b"\x80\x04" + short(module) + short(name) + b"\x93" + short(arg) + b"\x85R.",
    }


def test_pickles_that_would_run_code_are_refused_by_opcode_and_nothing_runs(tmp_path):
    sentinel = tmp_path / "ran"
    command = f"touch {sentinel}"
    cases = {
        "os.system": pickle.dumps(Runs(os.system, command), protocol=4),
        "builtins.eval": pickle.dumps(Runs(eval, f"open({str(sentinel)!r}, 'w')"), protocol=2),
        "subprocess.Popen": pickle.dumps(Runs(__import__("subprocess").Popen, ["touch", str(sentinel)]), protocol=5),
    }
    for name, data in cases.items():
        with pytest.raises(ProfileError, match=r"opcode (STACK_GLOBAL|GLOBAL) at offset \d+ would import or call"):
            loads(data, name)
    for opcode, data in {**_hand_made(b"os", b"system", command.encode()),
                         **_hand_made(b"builtins", b"eval", b"print(1)")}.items():
        with pytest.raises(ProfileError, match=rf"opcode {opcode} at offset \d+ would import or call code"):
            loads(data)
    # Calls without a global: REDUCE, BUILD, NEWOBJ, OBJ, INST, EXT1, PERSID, BINPERSID each name themselves.
    for opcode, data in {"REDUCE": b"\x80\x04N)R.", "BUILD": b"\x80\x04}}b.", "NEWOBJ": b"\x80\x04N)\x81.",
                         "OBJ": b"\x80\x04(No.", "INST": b"\x80\x04(ios\nsystem\n.", "EXT1": b"\x80\x04\x82\x01.",
                         "PERSID": b"\x80\x04Pid\n.", "BINPERSID": b"\x80\x04NQ."}.items():
        with pytest.raises(ProfileError, match=rf"opcode {opcode} at offset [2-4] would import or call code"):
            loads(data)
    assert not sentinel.exists()


def test_a_bomb_of_memo_references_is_refused():
    # t0 = (), t(k+1) = (tk, tk): 2**k as a tree in 3 opcodes a level.
    data = b"\x80\x04)\x94"
    for k in range(60):
        data += b"h" + bytes([k]) + b"h" + bytes([k]) + b"\x86\x94"
    data += b"."
    with pytest.raises(ProfileError, match="more than .* objects .*PROFSCOPE_MAX_PICKLE_OBJECTS"):
        loads(data)


def test_a_deep_nest_and_a_cycle_are_refused(monkeypatch):
    deep = b"\x80\x04" + b"]" * 50 + b"a" * 49 + b"."
    assert loads(deep) == eval("[" * 50 + "]" * 50)
    with pytest.raises(ProfileError, match="nested more than 100 levels .*PROFSCOPE_MAX_NESTING"):
        loads(b"\x80\x04" + b"]" * 150 + b"a" * 149 + b".")
    with pytest.raises(ProfileError, match="nested more than 100 levels"):
        loads(b"\x80\x04N" + b"\x85" * 150 + b".")  # a tuple in a tuple ..., one value on the stack
    monkeypatch.setenv("PROFSCOPE_MAX_NESTING", "500")
    assert loads(b"\x80\x04N" + b"\x85" * 150 + b".") is not None
    cycle = pickle.dumps(_self_list(), protocol=4)
    with pytest.raises(ProfileError, match="itself|cycle"):
        loads(cycle)


def _self_list():
    a: list = []
    a.append(a)
    return a


@pytest.mark.parametrize("cut", [1, 5, 40, -1])
def test_a_truncated_stream_is_refused(cut):
    data = pickle.dumps(PLAIN[0], protocol=4)
    with pytest.raises(ProfileError, match="truncated|not a pickle"):
        loads(data[:cut])


def test_other_opcodes_and_oversized_values_are_refused():
    with pytest.raises(ProfileError, match=r"opcode b'\\x8f' at offset 2 is not one of plain data"):
        loads(pickle.dumps(set(), protocol=4))  # EMPTY_SET
    with pytest.raises(ProfileError, match="not a pickle of protocol 2-5"):
        loads(pickle.dumps([1], protocol=0))
    with pytest.raises(ProfileError, match="an integer of 100 bytes"):
        loads(b"\x80\x04\x8a\x64" + b"\x01" * 100 + b".")
    with pytest.raises(ProfileError, match="truncated"):
        loads(b"\x80\x04X" + struct.pack("<I", 1 << 30) + b"abc.")
