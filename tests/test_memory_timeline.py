"""PyTorch's export_memory_timeline output (raw and [times, sizes]) as a memory profile."""

import gzip
import json

import numpy as np
import pytest
from conftest import DATA

from profscope.models.core.task import ProfileError
from profscope.models.data.peak_pyramid import category_bytes
from profscope.models.formats.memory_profile_file import parse_memory_profile
from profscope.models.formats.memory_timeline import (
    CATEGORIES,
    load_memory_timeline,
    timeline_form,
)
from profscope.models.repository.locations import open_repository
from profscope.viewer.cli import main

FOLDER = DATA / "memory_timeline"
HTA = FOLDER / "hta_memory_timeline.raw.gz"


def read_json(path):
    return json.loads((gzip.open(path) if path.suffix == ".gz" else open(path, "rb")).read())


def plain_replay(rows):
    """Bytes per category after each row, by a dictionary, in file order."""
    totals, out = dict.fromkeys(range(len(CATEGORIES)), 0), []
    for _, _, size, category in rows:
        totals[category] += size
        out.append(dict(totals))
    return out


def test_raw_timeline_values_are_the_files():
    rows = read_json(HTA)
    profile = load_memory_timeline(HTA)
    (a,) = profile.allocators.values()
    tl = a.timeline
    kept = [r for r in rows if r[2] != 0]
    assert len(tl) == len(kept) == 16845
    first = min(r[0] for r in rows if r[0] >= 0)
    assert tl.time_ps.tolist() == [(max(r[0], first) - first) * 1000 for r in kept]
    replay = plain_replay(kept)
    totals = [sum(t.values()) for t in replay]
    assert tl.heap.tolist() == totals
    by_category = category_bytes(a)
    for i in (0, 644, 5000, 12345, len(kept) - 1):
        assert by_category[i].tolist() == [replay[i][k] for k in range(len(CATEGORIES))]
    peak = max(totals)
    last_peak = len(totals) - 1 - totals[::-1].index(peak)
    assert (a.summary.peak_heap, a.peak_index) == (peak, last_peak)
    assert a.summary.peak_time_ps == (kept[last_peak][0] - first) * 1000
    # Sizes pair exactly by category: the table at the peak holds each category's bytes.
    assert a.peak_allocations.total_bytes == peak
    by_op = {}
    for op, size, n in zip(a.peak_allocations.op, a.peak_allocations.allocation, a.peak_allocations.occurrences):
        by_op[op] = by_op.get(op, 0) + int(size) * int(n)
    assert by_op == {c: b for c, b in zip(CATEGORIES, by_category[last_peak].tolist()) if b}
    assert "Categories at the peak: parameter" in a.notes[0]


def test_recognition_by_content():
    assert timeline_form(b"[[-1, 1, 37888, 7], [-1, 1, 512, 7]") == "raw"
    assert timeline_form(b"[[1, 2, 3], [[0, 0, 0, 0, 0, 0, 0, 0, 0]]]") == "coalesced"
    assert timeline_form(b"[[], []]") == "coalesced"
    for lookalike in (b"[[1, 2, 3]]", b"[[0, 9, 1, 2]]", b"[[1, 2], [3, 4]]", b'{"a": 1}', b"[1, 2]", b""):
        assert timeline_form(lookalike) is None, lookalike


def test_a_folder_lists_the_timeline_with_the_memory_profile_tool(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "cuda0.raw.gz").write_bytes(HTA.read_bytes())
    (tmp_path / "run" / "other.json").write_text("[[1, 2, 3]]")
    repo = open_repository(tmp_path)
    [session] = repo.enum_sessions()
    assert (session.name, session.hosts, session.tools) == ("run", ("cuda0",), ("memory_profile",))
    assert [p for p, _ in repo.not_profiles()] == [str(tmp_path / "run" / "other.json")]
    profile = repo.memory_profile("run", "cuda0")
    assert profile.memory_ids == ["cuda:0"]


def test_export_round_trip(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", str(HTA), "--tool", "memory_profile", "-o", str(out)]) == 0
    again = parse_memory_profile(out.read_bytes())
    (a,) = load_memory_timeline(HTA).allocators.values()
    (b,) = again.allocators.values()
    assert np.array_equal(a.timeline.time_ps, b.timeline.time_ps)
    assert np.array_equal(a.timeline.heap, b.timeline.heap)
    assert b.summary.peak_heap == a.summary.peak_heap


def test_bad_rows_are_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[[1, 2, 3, 4], [1, 2, 3]]")
    with pytest.raises(ProfileError):
        load_memory_timeline(bad)
    bad.write_text("[[1, 2, 3, 99]]")
    with pytest.raises(ProfileError, match="out of range"):
        load_memory_timeline(bad)


@pytest.mark.parametrize("name", ["cpu.json", "cpu.json.gz"])
def test_coalesced_timeline_values_are_the_files(name):
    times, sizes = read_json(FOLDER / name)
    (a,) = load_memory_timeline(FOLDER / name).allocators.values()
    assert a.memory_id == "cpu"
    tl = a.timeline
    first = min(times)
    last_row = dict(zip(times, sizes))  # the first time comes twice: preexisting memory, then its own changes
    for t, row in last_row.items():
        i = int(np.searchsorted(tl.time_ps, (t - first) * 1_000_000, side="right")) - 1
        assert category_bytes(a)[i].tolist() == row[1:]
        assert tl.heap[i] == sum(row)
    assert a.summary.peak_heap == max(map(sum, sizes)) == 227_776


def test_raw_and_coalesced_forms_of_one_run_agree():
    profiles = [load_memory_timeline(FOLDER / n).allocators["cpu"] for n in ("cpu.raw.json.gz", "cpu.json")]
    ends = [category_bytes(a)[-1].tolist() for a in profiles]
    assert ends[0] == ends[1] and ends[0][CATEGORIES.index("optimizer state")] == 76_896
    assert profiles[0].summary.peak_heap == profiles[1].summary.peak_heap
    assert profiles[0].timeline.time_ps[-1] // 1_000_000 == profiles[1].timeline.time_ps[-1] // 1_000_000
    assert not profiles[0].notes[1:]  # raw rows pair exactly


def test_sessions_lists_each_file_of_the_folder():
    repo = open_repository(FOLDER)
    [session] = repo.enum_sessions()
    # cpu.raw.json.gz, cpu.json.gz and cpu.json are one host (the first in name order serves it).
    assert session.hosts == ("cpu", "hta_memory_timeline")
    assert session.tools == ("memory_profile",)
