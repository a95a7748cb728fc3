"""The C snapshot decoder (_torch_snapshot.c, read_cuda_snapshot) gives the columns that the reference gives
(safe_pickle.loads, then cuda_snapshot.from_plain): on the fixtures, on their plain data pickled by every protocol,
on generated snapshots laid out every way the pickler lays them out, on cut files (the complete entries before
the cut), and it refuses what safe_pickle refuses, with the same message."""

import gzip
import os
import pickle
import pickletools

import pytest
from conftest import DATA
from test_safe_pickle import Runs, _hand_made

from profscope.models.core.safe_pickle import loads
from profscope.models.core.task import ProfileError
from profscope.models.data.cuda_snapshot import from_plain
from profscope.models.formats.torch_snapshot import read_cuda_snapshot

FOLDER = DATA / "torch_snapshot"
FIXTURES = [FOLDER / "typed_snapshot.pickle", FOLDER / "profile_snapshot.pickle"]


def canonical(s) -> dict:
    """The snapshot with ids resolved: strings by their text, tracebacks by their frames."""
    S = s.strings
    tbs: dict[int, tuple] = {}

    def tb(i: int) -> tuple:
        if i not in tbs:
            tbs[i] = tuple(s.tracebacks.frames_of(i, S))
        return tbs[i]

    traces = [{"action": t.action.tolist(), "addr": t.addr.tolist(), "size": t.size.tolist(),
               "stream": t.stream.tolist(), "time_us": t.time_us.tolist(), "device_free": t.device_free.tolist(),
               "frames": [tb(i) for i in t.frames.tolist()], "category": [S[i] for i in t.category.tolist()]}
              for t in s.traces]
    g, b = s.segments, s.blocks
    segments = {k: getattr(g, k).tolist() for k in ("device", "address", "total_size", "stream", "is_expandable",
                                                   "allocated_size", "active_size", "requested_size", "block_start")}
    segments.update(segment_type=[S[i] for i in g.segment_type.tolist()], pool_id=[S[i] for i in g.pool_id.tolist()])
    blocks = {k: getattr(b, k).tolist() for k in ("address", "size", "requested_size", "state")}
    blocks["frames"] = [tb(i) for i in b.frames.tolist()]
    used = {i for t in s.traces for i in t.frames.tolist()} | set(b.frames.tolist())
    return {"traces": traces, "segments": segments, "blocks": blocks, "unknown": s.unknown_actions,
            "missing": s.missing_fields, "tracebacks": len(used - {-1})}


def reference(plain) -> dict:
    return canonical(from_plain(plain))


def decoded(data: bytes) -> dict:
    return canonical(read_cuda_snapshot(data, "snap"))


@pytest.mark.parametrize("path", FIXTURES)
def test_fixtures_decode_as_the_reference(path):
    data = path.read_bytes()
    snap = read_cuda_snapshot(data, "snap")
    assert not snap.notes
    assert canonical(snap) == reference(loads(data))
    # every distinct frames list once
    assert len(snap.tracebacks) == canonical(snap)["tracebacks"]


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
@pytest.mark.parametrize("path", FIXTURES)
def test_every_protocol(path, protocol):
    plain = loads(path.read_bytes())
    assert decoded(pickle.dumps(plain, protocol=protocol)) == reference(plain)


def generated(n: int = 2500, shared_frames: bool = True) -> dict:
    """A snapshot of plain data laid out every way the pickler may meet: more than a batch of entries (1000),
    single entries, single frames, empty lists, unknown actions, missing fields, entries that are no dicts,
    a device trace that is no list, tuples and big numbers."""
    frame = lambda k: {"name": f"fn{k % 7}", "filename": f"/m/f{k % 3}.py", "line": k % 50}
    pool = [frame(k) for k in range(60)]
    entries = []
    for k in range(n):
        frames = [pool[(k + j) % 60] if shared_frames else frame(k + j) for j in range(k % 40)]
        e = {"action": ("alloc", "free_requested", "free_completed", "segment_alloc", "oom", "teleport")[k % 6],
             "addr": 4096 * (k % 300) + (1 << 40), "size": 512 * (k % 17 + 1), "stream": k % 3,
             "time_us": 1_700_000_000_000 + 10 * k, "frames": frames, "compile_context": "N/A",
             "user_metadata": {"k": [k, (k,)]}}
        if k % 6 == 4:
            e["device_free"] = 1 << 33
        if k % 11 == 0:
            del e["addr"]
        if k % 13 == 0:
            e["category"] = "activation"
        if k % 17 == 0:
            e["size"] = 2.5
        if k % 19 == 0:
            e["time_us"] = True
        entries.append(e)
    blocks = [{"address": 1 << 40, "size": 1024, "requested_size": 1000, "state": "active_allocated",
               "frames": pool[:3]}, {"size": 512, "state": "inactive", "frames": []}, {"size": 7, "state": "odd"}]
    return {
        "segments": [
            {"device": 0, "address": 1 << 40, "total_size": 2 << 20, "stream": 0, "segment_type": "large",
             "segment_pool_id": (0, 0), "is_expandable": False, "blocks": blocks},
            {"device": 1, "address": 1 << 41, "total_size": 1 << 20, "segment_pool_id": (1, 3),
             "allocated_size": 5, "blocks": [dict(blocks[0])]},
            {"device": 0, "address": 3 << 40, "total_size": 4096, "blocks": []},
        ],
        "device_traces": [entries, [dict(entries[1])], None, [], [dict(e) for e in entries[:7]] + ["not a dict",
                                                                                                dict(entries[8])]],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "x": [[1], {"y": (2, [3])}]},
        "external_annotations": [{"device": 0, "stage": "START", "name": "fwd", "time_us": 3}],
    }


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_generated_layouts(protocol):
    for shared in (True, False):
        plain = generated(shared_frames=shared)
        # distinct objects, so that the pickler writes each entry once (a shared entry is read by the reference)
        for f in plain["device_traces"][0][5]["frames"]:
            f["name"] = 3  # a name that is no string
        snap = read_cuda_snapshot(pickle.dumps(plain, protocol=protocol), "snap")
        assert canonical(snap) == reference(plain)
        assert snap.unknown_actions["teleport"] > 0 and snap.missing_fields["addr"] > 0


BLOCK = {"size": 1, "state": "inactive"}


@pytest.mark.parametrize("plain", [
    {"device_traces": [[{"action": "alloc", "addr": 1, "size": 2}]]},  # one of each: single SETITEM/APPEND
    {"segments": [{"blocks": [{"size": 1, "state": "inactive"}]}]},
    {"segments": [], "device_traces": []},
    {"device_traces": [[{}], [{}, {}]]},
    {"device_traces": [[{"action": "alloc", "frames": [{"name": "a"}]}] * 3]},  # a shared entry: the reference
    {"segments": [{"blocks": [BLOCK]}, {"blocks": [BLOCK]}]},  # a block in two segments: the reference
])
def test_small_layouts(plain):
    for protocol in (2, 4, 5):
        assert decoded(pickle.dumps(plain, protocol=protocol)) == reference(plain)


def test_not_a_snapshot():
    for plain in ([1], {"weights": [1.0]}, {"device_traces": {}}, {"segments": 3}):
        with pytest.raises(ProfileError, match="not a PyTorch memory snapshot"):
            read_cuda_snapshot(pickle.dumps(plain, protocol=4), "snap")


def _cut_reference(plain: dict, note: str) -> dict:
    """The plain snapshot as far as a cut's note says it was read."""
    cut = dict(plain)
    if "segments, before the device traces" in note:
        n = int(note.split("cut after ")[1].split(" segments")[0].replace(",", ""))
        cut["segments"] = plain["segments"][:n]
        cut.pop("device_traces", None)
    else:
        words = note.split("cut after ")[1].split()
        n, device = int(words[0].replace(",", "")), int(words[-1])
        traces = plain["device_traces"]
        entries = [e for e in traces[device] if isinstance(e, dict)] if device >= 0 else []
        cut["device_traces"] = traces[:device] + ([entries[:n]] if device >= 0 else [])
    return reference(cut)


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_cut_file_gives_its_complete_entries(protocol):
    plain = generated(400)
    data = pickle.dumps(plain, protocol=protocol)
    seen = []
    for end in range(40, len(data), 97):
        try:
            snap = read_cuda_snapshot(data[:end], "snap")
        except ProfileError as e:  # before the snapshot's dict began, or before either list
            assert end < 60 and "truncated" in str(e) or "not a PyTorch" in str(e)
            continue
        (note,) = snap.notes
        assert note.startswith("snap: the file is cut or damaged at byte ")
        assert 0 < int(note.split("byte ")[1].split()[0].replace(",", "")) <= end
        assert canonical(snap) == _cut_reference(plain, note)
        seen.append(sum(len(t) for t in snap.traces))
    assert seen == sorted(seen) and seen[-1] >= sum(len(t) for t in plain["device_traces"][:-1] if t) + 1
    # damage, not only a cut: a memo reference to nothing stops the reading there
    at = next(pos for op, arg, pos in pickletools.genops(data) if arg == "teleport")
    broken = data[:at] + b"j\xf0\xff\xff\x0f" + data[at:]  # LONG_BINGET of a memo index never put
    snap = read_cuda_snapshot(broken, "snap")
    (note,) = snap.notes
    assert f"damaged at byte {at:,}" in note and 0 < sum(len(t) for t in snap.traces) < 10


def _hostile() -> dict[str, bytes]:
    cases = {
        "os.system": pickle.dumps(Runs(os.system, "true"), protocol=4),
        "builtins.eval": pickle.dumps(Runs(eval, "1"), protocol=2),
        "subprocess.Popen": pickle.dumps(Runs(__import__("subprocess").Popen, ["true"]), protocol=5),
        **_hand_made(b"os", b"system", b"true"),
        "REDUCE": b"\x80\x04N)R.", "BUILD": b"\x80\x04}}b.", "NEWOBJ": b"\x80\x04N)\x81.", "OBJ": b"\x80\x04(No.",
        "INST": b"\x80\x04(ios\nsystem\n.", "EXT1": b"\x80\x04\x82\x01.", "PERSID": b"\x80\x04Pid\n.",
        "BINPERSID": b"\x80\x04NQ.", "set": pickle.dumps(set(), protocol=4), "protocol 0": pickle.dumps([1], 0),
        "long int": b"\x80\x04\x8a\x64" + b"\x01" * 100 + b".",
        "deep": b"\x80\x04" + b"]" * 150 + b"a" * 149 + b".", "deep tuple": b"\x80\x04N" + b"\x85" * 150 + b".",
        "marks": b"\x80\x04" + b"(" * 150 + b".",
        "cycle": pickle.dumps(_self_list(), protocol=4),
        "unhashable": b"\x80\x04}]Ns.", "unhashable tuple": b"\x80\x04}]\x85Ns.",
        "entry code": pickle.dumps({"segments": [], "device_traces": [[{"action": Runs(os.system, "true")}]]}, 4),
    }
    bomb = b"\x80\x04)\x94"
    for k in range(60):
        bomb += b"h" + bytes([k]) + b"h" + bytes([k]) + b"\x86\x94"
    cases["memo bomb"] = bomb + b"."
    return cases


def _self_list():
    a: list = []
    a.append(a)
    return a


@pytest.mark.parametrize("name", sorted(_hostile()))
def test_refused_as_safe_pickle_refuses(name):
    data = _hostile()[name]
    with pytest.raises(ProfileError) as want:
        loads(data, "snap")
    with pytest.raises(ProfileError) as got:
        read_cuda_snapshot(data, "snap")
    assert str(got.value) == str(want.value)


def test_a_cut_file_opens_with_what_it_holds_and_says_where_it_stops(tmp_path):
    from profscope.models.formats.torch_snapshot import load_torch_snapshot

    data = pickle.dumps(generated(3000), protocol=4)
    path = tmp_path / "died.pickle"
    path.write_bytes(data[: len(data) // 3])
    (a, *_) = load_torch_snapshot(path).allocators.values()
    assert len(a.timeline) > 100 and any("cut after" in n and "trace entries of device 0" in n for n in a.notes)
    assert any("Read but not replayed" in n and "'teleport'" in n for n in a.notes)
    gz = tmp_path / "whole.pickle.gz"
    gz.write_bytes(gzip.compress(data))
    whole = load_torch_snapshot(gz).allocators["cuda:0"]
    assert len(whole.timeline) > len(a.timeline) and not any("cut after" in n for n in whole.notes)


def test_many_device_slots_that_are_no_lists_cost_no_arrays():
    plain = {"device_traces": [None] * 200_000 + [[{"action": "alloc", "addr": 1, "size": 2}]]}
    snap = read_cuda_snapshot(pickle.dumps(plain, protocol=4), "snap")
    assert len(snap.traces) == 200_001 and snap.traces[0] is snap.traces[199_999] and snap.devices == [200_000]
