"""`profscope diff --tool memory_profile` and the Compare tab on two PyTorch
snapshots (allocations matched by top frame, per device cuda:N) and two JAX
device memory profiles (matched by call stack, per device and kind)."""

import gzip
import json
from collections import Counter

from conftest import DATA
from test_compare_view import click_tab, compare_via_menu

from profscope.models.formats.memory_pprof import load_pprof_memory
from profscope.models.repository.locations import open_repository
from profscope.protos import pprof_pb2
from profscope.viewer.cli import main

PPROF = DATA / "memory_pprof"
SNAP = DATA / "torch_snapshot"


def run_diff(tmp_path, a, b):
    out = tmp_path / "diff.json"
    assert main(["diff", str(a), str(b), "--tool", "memory_profile", "--top", "100", "-o", str(out)]) == 0
    return {x["memory_id"]: x for x in json.loads(out.read_text())["allocators"]}


def stacks_of(path):
    """Per allocator (device, or kind without one): bytes and allocations per call stack, from the raw protobuf."""
    p = pprof_pb2.Profile.FromString(gzip.decompress(path.read_bytes()))
    st = p.string_table
    types = [(st[v.type], st[v.unit]) for v in p.sample_type]
    space, count = types.index(("space", "bytes")), types.index(("allocations", "count"))
    functions = {f.id: f for f in p.function}
    locations = {loc.id: loc for loc in p.location}
    out: dict[str, Counter] = {}
    for s in p.sample:
        labels = {st[lab.key]: st[lab.str] for lab in s.label}
        stack = tuple((st[functions[line.function_id].name], line.line) for i in s.location_id
                      for line in locations[i].line)
        key = labels.get("device") or labels["kind"]
        out.setdefault(key, Counter())[(labels["kind"], stack)] += 0  # the stack is there even with 0 bytes
        out[key][(labels["kind"], stack, "bytes")] += s.value[space]
        out[key][(labels["kind"], stack, "count")] += s.value[count]
    return out


def test_pprof_diff_matches_allocations_by_stack(tmp_path):
    rows = run_diff(tmp_path, PPROF / "before.prof", PPROF / "after.prof")
    assert sorted(rows) == ["cpu:0", "executable"]
    before, after = stacks_of(PPROF / "before.prof"), stacks_of(PPROF / "after.prof")
    for memory_id, a in rows.items():
        assert a["status"] == "compared" and a["more_allocations"] == 0
        b, c = before[memory_id], after[memory_id]
        stacks = {k[:2] for k in (*b, *c)}
        expected = sorted((b[(*s, "bytes")], b[(*s, "count")], c[(*s, "bytes")], c[(*s, "count")]) for s in stacks)
        got = sorted((r["baseline"]["bytes"], r["baseline"]["count"], r["candidate"]["bytes"], r["candidate"]["count"])
                     for r in a["peak_allocations"])
        assert got == expected
        # Each row names its stack (innermost frame first) beside its top user frame.
        for r in a["peak_allocations"]:
            assert r["stack"].startswith(("buffer: ", "executable: "))
            assert r["op"] in r["stack"]
    cpu = rows["cpu:0"]
    assert cpu["window_peak_bytes"] == {"baseline": 648_388, "candidate": 322_624, "delta": -325_764}
    listcomp = [r for r in cpu["peak_allocations"] if r["op"].startswith("<listcomp>")]
    # The three kept arrays came by two stacks: the two freed ones by one, the one kept by the other.
    assert sorted((r["baseline"]["count"], r["candidate"]["count"], r["status"]) for r in listcomp) == [
        (1, 1, "same"), (2, 0, "removed")]
    made = next(r for r in cpu["peak_allocations"] if r["status"] == "added")
    assert (made["op"], made["candidate"]["bytes"]) == ("<module> (jax_memory_profile.py:44)", 16_384)


def test_snapshot_diff_matches_allocations_by_top_frame(tmp_path):
    """The same script before and after widening its hidden layer from 128 to 256 (producers/make_diff_pair.py)."""
    rows = run_diff(tmp_path, SNAP / "pair_before.pickle", SNAP / "pair_after.pickle")
    assert list(rows) == ["cuda:0"]
    a = rows["cuda:0"]
    sides = []
    for name in ("pair_before.pickle", "pair_after.pickle"):
        repo = open_repository(SNAP / name)
        [session] = repo.enum_sessions()
        sides.append(repo.memory_profile(session.name, session.hosts[0]).allocators["cuda:0"])
    assert a["window_peak_bytes"]["baseline"] == sides[0].summary.peak_in_use == 227_776
    assert a["window_peak_bytes"]["candidate"] == sides[1].summary.peak_in_use
    # Every byte at each side's peak is in one row, by its top frame.
    for side, profile in (("baseline", sides[0]), ("candidate", sides[1])):
        assert sum(r[side]["bytes"] for r in a["peak_allocations"]) == profile.peak_allocations.total_bytes
        assert sum(r[side]["count"] for r in a["peak_allocations"]) == int(profile.peak_allocations.occurrences.sum())
    assert "stack" not in a["peak_allocations"][0]
    by_op = {r["op"]: r for r in a["peak_allocations"]}
    assert len(by_op) == len(a["peak_allocations"])  # one row a top frame
    # Adam's sqrt of the first layer's second moment: 128 x 64 then 256 x 64 float32. Its frame names the tensor's
    # address, new in each run; the rows match all the same.
    sqrt = by_op["<built-in method sqrt of Tensor object>"]
    assert (sqrt["baseline"]["bytes"], sqrt["candidate"]["bytes"], sqrt["status"]) == (32_768, 65_536, "grown")
    assert by_op["<built-in function cross_entropy_loss>"]["status"] == "same"
    assert {r["status"] for r in a["peak_allocations"]} == {"grown", "same"}


def test_a_device_one_side_lacks_is_said(tmp_path):
    rows = run_diff(tmp_path, SNAP / "typed_snapshot.pickle", SNAP / "pair_before.pickle")
    assert (rows["cuda:0"]["status"], rows["cuda:1"]["status"]) == ("compared", "removed")
    assert rows["cuda:1"]["candidate_id"] is None


def table(page):
    t = page.table
    return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())]


def test_compare_tab_takes_two_pprof_profiles(qtbot, window, monkeypatch):
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    compare_via_menu(qtbot, window, monkeypatch, PPROF / "before.prof", PPROF / "after.prof")
    view = window.compare_view
    assert window.tabs.currentWidget() is view
    page = view.memory_page
    click_tab(qtbot, view.pages, page)
    assert page.allocator_box.currentText() == "cpu:0"
    rows = table(page)
    assert rows[0][:2] == ["<module> (jax_memory_profile.py:39)", ""]
    assert rows[0][2:] == ["256 KiB", "2", "0 B", "0", "−256 KiB", "removed"]
    assert ["<module> (jax_memory_profile.py:44)", "", "0 B", "0", "16 KiB", "1", "+16 KiB", "added"] in rows
    assert sorted(r[0] for r in rows).count("<listcomp> (jax_memory_profile.py:38)") == 2  # two stacks
    tip = page.table.item(0, 0).toolTip()
    assert tip.startswith("buffer: __call__ (pxla.py:395)\n") and tip.endswith("<module> (jax_memory_profile.py:39)")
    assert "633 KiB → 315 KiB" in page.peaks.text()
    assert [line.opts["symbol"] for line in page.lines] == ["o", "o"]  # one moment each: a dot, not a line
    page.allocator_box.setCurrentText("executable")
    assert {r[-1] for r in table(page)} == {"same", "added"}


def test_compare_tab_takes_two_snapshots(qtbot, window, monkeypatch):
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    compare_via_menu(qtbot, window, monkeypatch, SNAP / "pair_before.pickle", SNAP / "pair_after.pickle")
    view = window.compare_view
    page = view.memory_page
    click_tab(qtbot, view.pages, page)
    assert [page.allocator_box.itemText(i) for i in range(page.allocator_box.count())] == ["cuda:0"]
    rows = table(page)
    assert rows[0][0] == "<built-in method zeros_like of type object>" and rows[0][-1] == "grown"
    assert ["<built-in method sqrt of Tensor object>", "", "32 KiB", "1", "64 KiB", "1", "+32 KiB", "grown"] in rows
    assert "222 KiB → 436 KiB" in page.peaks.text()
    assert len(page.lines) == 2 and len(page.lines[1].getData()[0]) > 2  # both curves drawn


def test_pprof_profiles_keep_their_stacks_apart():
    """Two stacks with one top frame stay two rows in each side's own table too."""
    rows = load_pprof_memory(PPROF / "before.prof").allocators["cpu:0"].peak_allocations
    listcomp = [(int(a), int(n)) for op, a, n in zip(rows.op, rows.allocation, rows.occurrences)
                if op.startswith("<listcomp>")]
    assert sorted(listcomp) == [(40_000, 1), (40_000, 2)]
