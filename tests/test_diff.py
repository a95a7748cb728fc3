"""Comparing two profiles (models/analysis/diff.py, `profscope diff`): statistics rows,
overview, memory, the command line, and HolisticTraceAnalysis's TraceDiff."""

import json
import subprocess
import sys

import numpy as np
import pytest
from conftest import DATA, KERAS_XPROF, ROOT, SMALL_XPROF
from test_chrome_trace import _hta_rounded
from test_step_stats import node, step_stats

from profscope.models.analysis import diff, trace_stats
from profscope.models.core.task import ProfileError
from profscope.models.repository.locations import open_repository
from profscope.viewer.cli import main

GPU = DATA / "chrome_trace" / "gpu"
PAIR = DATA / "chrome_trace" / "diff_pair"
TRAIN = DATA / "chrome_trace" / "train.pt.trace.json.gz"
XSPACE = DATA / "xprof" / "small.xplane.pb"
CPU0 = "/job:localhost/replica:0/task:0/device:CPU:0"


def _timeline(path, host=None):
    repo = open_repository(path)
    (session,) = repo.enum_sessions()
    return repo.step_timeline(session.name, session.hosts[0] if host is None else host)


def _memory(path):
    repo = open_repository(path)
    (session,) = repo.enum_sessions()
    return repo.memory_profile(session.name, session.hosts[0])


@pytest.fixture
def slower_and_added(tmp_path):
    """Two StepStats profiles: MatMul got slower, Softmax was added, Relu stayed."""
    def write(name, nodes):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "run_metadata.pb").write_bytes(step_stats({CPU0: nodes}).SerializeToString())
        return folder

    base = write("baseline", [node("mm", 1000, 100, "mm = MatMul(x, w)"), node("relu", 1100, 10, "relu = Relu(mm)"),
                              node("mm_1", 1110, 50, "mm_1 = MatMul(relu, w2)")])
    cand = write("candidate", [node("mm", 1000, 300, "mm = MatMul(x, w)"), node("relu", 1300, 10, "relu = Relu(mm)"),
                               node("mm_1", 1310, 50, "mm_1 = MatMul(relu, w2)"),
                               node("sm", 1360, 5, "sm = Softmax(mm_1)")])
    return base, cand


def test_slower_op_and_added_op_rows(slower_and_added):
    base, cand = (diff.Side(_timeline(p)) for p in slower_and_added)
    rows = diff.stats_diff(base, cand, "op_types").to_json()["rows"]
    assert [(r["device"], r["name"], r["status"]) for r in rows] == [
        (CPU0, "MatMul", "changed"), (CPU0, "Softmax", "added"), (CPU0, "Relu", "same")]
    mm, sm, relu = rows
    assert mm["baseline"] == {"count": 2, "total_us": 150.0, "mean_us": 75.0}
    assert mm["candidate"] == {"count": 2, "total_us": 350.0, "mean_us": 175.0}
    assert (mm["delta_total_us"], mm["delta_count"], mm["ratio"]) == (200.0, 0, pytest.approx(350 / 150))
    assert sm["baseline"] == {"count": 0, "total_us": 0.0, "mean_us": 0.0} and sm["ratio"] is None
    assert sm["candidate"]["total_us"] == 5.0 and relu["delta_total_us"] == 0.0
    # The other way round the added op is removed.
    back = diff.stats_diff(cand, base, "op_types").to_json()["rows"]
    assert [(r["name"], r["status"], r["delta_total_us"]) for r in back] == [
        ("MatMul", "changed", -200.0), ("Softmax", "removed", -5.0), ("Relu", "same", 0.0)]


def test_filter_and_threshold(slower_and_added):
    d = diff.stats_diff(*(diff.Side(_timeline(p)) for p in slower_and_added), "op_types")
    assert d.filtered("matm").name == ["MatMul"]
    assert d.filtered("^(Relu|Softmax)$", regex=True).name == ["Softmax", "Relu"]
    assert d.filtered(min_delta_us=10).name == ["MatMul"]  # Softmax moved 5 us, Relu 0
    assert d.filtered(min_change=2.0).name == ["Softmax"]  # +133 % is under 200 %; added always passes
    with pytest.raises(ProfileError, match="Invalid regular expression"):
        d.filtered("(", regex=True)


@pytest.mark.parametrize("table", diff.TABLES)
def test_a_profile_against_itself_is_all_same(table):
    tl = _timeline(GPU, "")
    d = diff.stats_diff(diff.Side(tl), diff.Side(tl), table)
    assert len(d) > 10 and d.by_host  # two ranks on both sides: keyed by host
    assert not d.delta_total_ps.any() and not d.delta_count.any()
    assert {r["status"] for r in d.to_json()["rows"]} == {"same"}
    assert sorted(set(d.host)) == ["rank-0", "rank-1"]


def test_overview_and_memory_against_themselves_have_zero_deltas():
    tl = _timeline(GPU, "")
    doc = diff.overview_diff(diff.Side(tl), diff.Side(tl)).to_json()
    assert [h["host"] for h in doc["hosts"]] == ["rank-0", "rank-1"]
    for h in doc["hosts"]:
        triples = [v for v in h.values() if isinstance(v, dict) and "delta" in v]
        assert len(triples) == 10 and all(t["delta"] == 0 for t in triples)
        assert h["step_count"]["baseline"] == 3 and h["busiest_device"]["baseline"].startswith("GPU ")
    profile = _memory(SMALL_XPROF)
    (a,) = diff.memory_diff(profile, profile).to_json(top=None)["allocators"]
    assert a["lifetime_peak_bytes"]["delta"] == 0 and a["window_peak_bytes"]["delta"] == 0
    assert {r["status"] for r in a["peak_allocations"]} == {"same"}
    assert a["curves"]["baseline_bytes"] == a["curves"]["candidate_bytes"]


def test_unrelated_profiles_are_all_added_or_removed():
    xspace, kineto = _timeline(XSPACE), _timeline(TRAIN)
    for table in diff.TABLES:
        d = diff.stats_diff(diff.Side(xspace), diff.Side(kineto), table)
        statuses = {diff.STATUSES[s] for s in d.status.tolist()}
        assert statuses <= {"added", "removed"}, table
        assert len(d) == len(diff.stats_table(diff.Side(xspace), table)) + len(
            diff.stats_table(diff.Side(kineto), table)
        )
    (h,) = diff.overview_diff(diff.Side(xspace), diff.Side(kineto)).to_json()["hosts"]
    assert h["step_count"] == {"baseline": 0, "candidate": 3, "delta": 3}
    assert h["step_mean_us"]["baseline"] is None and h["step_mean_us"]["delta"] is None
    doc = diff.memory_diff(_memory(XSPACE), _memory(TRAIN)).to_json()
    assert doc["allocators"] and json.dumps(doc)  # no NaN leaks into the JSON


def test_rows_keyed_by_name_when_one_side_is_one_host():
    both = _timeline(GPU, "")
    rank1 = diff.Side(both, host="rank-1")
    d = diff.stats_diff(diff.Side(both, host="rank-0"), rank1, "kernel_stats")
    assert not d.by_host and "ampere_sgemm_128x64_nn" in d.filtered("128x64").name  # rank 1's straggler GEMM
    assert diff.STATUSES[d.status[d.name.index("ampere_sgemm_128x64_nn")]] == "added"
    with pytest.raises(ProfileError, match="no host 'rank-7'"):
        diff.stats_diff(diff.Side(both, host="rank-7"), rank1, "kernel_stats")


def test_step_ranges_per_side():
    tl = _timeline(GPU, "rank-0")
    steps = trace_stats.steps(tl)
    durations = steps.end_ps - steps.start_ps
    k = int(np.argsort(durations)[1])
    assert diff.step_window_of(tl, "median") == (int(steps.start_ps[k]), int(steps.end_ps[k]))
    assert diff.step_window_of(tl, "3") == trace_stats.step_window(tl, 3, 3)
    assert diff.step_window_of(tl, "") is None
    one = diff.Side(tl, window=diff.step_window_of(tl, "2"))
    two = diff.Side(tl, window=diff.step_window_of(tl, "3-4"))
    doc = diff.overview_diff(one, two).to_json()["hosts"][0]
    assert doc["step_count"] == {"baseline": 1, "candidate": 2, "delta": 1}
    for bad, message in (("9", "no ProfilerStep between 9 and 9"), ("x-y", "expected A, A-B or median")):
        with pytest.raises(ProfileError, match=message):
            diff.step_window_of(tl, bad)


def test_memory_diff_of_two_profiles():
    small, keras = _memory(SMALL_XPROF), _memory(KERAS_XPROF)
    d = diff.memory_diff(small, keras)
    (a,) = d.allocators
    b, c = a.baseline, a.candidate
    doc = d.to_json(top=None)["allocators"][0]
    assert doc["window_peak_bytes"] == {
        "baseline": b.summary.peak_in_use,
        "candidate": c.summary.peak_in_use,
        "delta": c.summary.peak_in_use - b.summary.peak_in_use,
    }
    assert doc["lifetime_peak_bytes"]["baseline"] == b.summary.peak_bytes_lifetime
    rows = doc["peak_allocations"]
    assert sum(r["baseline"]["bytes"] for r in rows) == b.peak_allocations.total_bytes
    assert sum(r["candidate"]["bytes"] for r in rows) == c.peak_allocations.total_bytes
    for r in rows:
        if r["baseline"]["count"] == 0:
            want = "added"
        elif r["candidate"]["count"] == 0:
            want = "removed"
        else:
            want = {1: "grown", -1: "shrunk", 0: "same"}[int(np.sign(r["delta_bytes"]))]
        assert r["status"] == want
    assert [abs(r["delta_bytes"]) for r in rows] == sorted((abs(r["delta_bytes"]) for r in rows), reverse=True)
    # The curves keep each side's peak (a bin holds the highest value in it) and end with the shorter side.
    curves = doc["curves"]
    assert len(curves["time_us"]) == diff.CURVE_POINTS and curves["time_us"][0] == 0.0
    assert max(v for v in curves["baseline_bytes"] if v is not None) == b.timeline.in_use.max()
    assert max(curves["candidate_bytes"]) == c.timeline.in_use.max()
    assert curves["baseline_bytes"][-1] is None  # the small profile ends first
    assert len(d.to_json(top=3)["allocators"][0]["peak_allocations"]) == 3


def test_memory_curves_aligned_at_a_step():
    profile = _memory(SMALL_XPROF)
    tl = profile.allocators[profile.memory_ids[0]].timeline
    d = diff.memory_diff(profile, profile, align_step=2)
    (a,) = d.allocators
    assert a.base_origin_ps == tl.time_ps[np.flatnonzero(tl.step == 2)[0]]
    assert a.curves.time_ps[0] == tl.time_ps[0] - a.base_origin_ps < 0
    with pytest.raises(ProfileError, match="no snapshot in step 99"):
        diff.memory_diff(profile, profile, align_step=99)


def test_resampled_bins_hold_the_highest_level():
    profile = _memory(SMALL_XPROF)
    a = profile.allocators[profile.memory_ids[0]]
    t = a.timeline.time_ps - a.timeline.time_ps[0]
    v = a.timeline.in_use
    edges = np.linspace(0, t[-1], 41)
    got = diff._resample(a, int(a.timeline.time_ps[0]), edges)
    for k in range(40):
        inside = (t >= edges[k]) & ((t < edges[k + 1]) | (k == 39) & (t <= edges[k + 1]))
        before = np.flatnonzero(t < edges[k])
        level = [v[before[-1]]] if len(before) else []
        assert got[k] == max(list(v[inside]) + level)


def test_op_and_kernel_diffs_equal_holistic_trace_analysis():
    """TraceDiff.compare_traces (HTA 0.5.0) of two real PyTorch traces of one model, the
    candidate with an extra Tanh, per iteration HTA analyses, on HTA's whole-µs grid."""
    reference = json.loads((PAIR / "hta_trace_diff.json").read_text())
    base, cand = (_hta_rounded(_timeline(PAIR / side)) for side in ("baseline", "candidate"))

    def iteration(tl, k):  # HTA: an event is in step k when s.ts <= e.ts < s.ts + s.dur
        s = trace_stats.steps(tl)
        (i,) = np.flatnonzero(s.number == k)
        return int(s.start_ps[i]), int(s.end_ps[i]) - 1

    assert list(reference["iterations"]) == ["2", "3"]
    for k, entry in reference["iterations"].items():
        sides = [diff.Side(tl, window=iteration(tl, int(k))) for tl in (base, cand)]
        for table, device in (("op_stats", "CPU"), ("kernel_stats", "GPU")):
            ours = {r["name"]: r for r in diff.stats_diff(*sides, table).to_json()["rows"]}
            theirs = [r for r in entry[device] if device == "GPU" or r["categories"] == ["cpu_op"]]
            assert sorted(ours) == sorted(r["name"] for r in theirs)
            for r in theirs:
                o = ours[r["name"]]
                assert (o["baseline"]["count"], o["candidate"]["count"], o["delta_count"]) == (
                    r["control_counts"],
                    r["test_counts"],
                    r["diff_counts"],
                ), r["name"]
                assert (o["baseline"]["total_us"], o["candidate"]["total_us"], o["delta_total_us"]) == (
                    r["control_total_duration"],
                    r["test_total_duration"],
                    r["diff_duration"],
                ), r["name"]
            added = {n for n, o in ours.items() if o["status"] == "added"}
            assert ("aten::tanh" in added) if device == "CPU" else any("tanh_kernel" in n for n in added)


# ---------------------------------------------------------------- command line


def test_cli_writes_the_diff(slower_and_added, tmp_path, capsys):
    base, cand = slower_and_added
    out = tmp_path / "diff.json"
    assert main(["diff", str(base), str(cand), "--tool", "op_types", "-o", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["tool"] == "op_types" and doc["baseline"]["location"] == str(base)
    assert [(r["name"], r["status"]) for r in doc["rows"]] == [
        ("MatMul", "changed"),
        ("Softmax", "added"),
        ("Relu", "same"),
    ]
    assert "1 same, 1 changed, 1 added" in capsys.readouterr().err
    assert main(["diff", str(base), str(cand), "--tool", "op_types", "--min-delta-us", "10"]) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)["rows"]] == ["MatMul"]
    # Neither StepStats profile has cpu_ops: said, with what to use instead.
    assert main(["diff", str(base), str(cand), "-o", str(out)]) == 0
    assert "--tool op_types" in capsys.readouterr().err and json.loads(out.read_text())["rows"] == []


def test_cli_sides_hosts_steps_and_errors(tmp_path, capsys):
    out = tmp_path / "d.json"
    assert (
        main(
            [
                "diff",
                str(GPU),
                str(GPU),
                "--tool",
                "overview",
                "--baseline-host",
                "rank-0",
                "--candidate-host",
                "rank-1",
                "--candidate-steps",
                "3-4",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    (h,) = json.loads(out.read_text())["hosts"]
    assert (h["baseline_host"], h["candidate_host"], h["step_count"]["candidate"]) == ("rank-0", "rank-1", 2)
    assert main(["diff", str(GPU), str(GPU), "--tool", "memory_profile", "-o", str(out)]) == 1
    assert "baseline: session 'gpu' has no memory_profile data" in capsys.readouterr().err  # no [memory] events
    steps = DATA / "step_stats"
    assert main(["diff", str(steps), str(steps), "--tool", "memory_profile", "-o", str(out)]) == 1
    assert "baseline: memory_profile shows one host at a time" in capsys.readouterr().err
    assert main(["diff", str(DATA / "step_stats"), str(GPU), "-o", str(out)]) == 1
    assert "choose one with --baseline-host or --host" in capsys.readouterr().err
    assert (
        main(["diff", str(GPU), str(GPU), "--steps", "median", "--tool", "kernel_stats", "--filter", "(", "--regex"])
        == 1
    )
    assert "Invalid regular expression" in capsys.readouterr().err
    assert main(["diff", str(DATA / "log_memory" / "eager-cpu.log"), str(GPU), "--tool", "op_types"]) == 1
    assert (
        "baseline: session 'eager-cpu.log' has no timeline to compare op_types of (it has memory_profile)"
        in capsys.readouterr().err
    )
    assert main(["diff", str(GPU), str(tmp_path / "nothing")]) == 1
    assert "candidate: " in capsys.readouterr().err
    assert (
        main(["diff", str(SMALL_XPROF), str(KERAS_XPROF), "--tool", "memory_profile", "--top", "2", "-o", str(out)])
        == 0
    )
    (a,) = json.loads(out.read_text())["allocators"]
    assert len(a["peak_allocations"]) == 2 and a["more_allocations"] > 0


def test_diff_imports_no_qt(tmp_path):
    code = (
        "import sys; from profscope.viewer.cli import main; "
        f"assert main(['diff', {str(GPU)!r}, {str(GPU)!r}, '--tool', 'kernel_stats', '-o', "
        f"{str(tmp_path / 'd.json')!r}]) == 0; "
        "assert not [m for m in sys.modules if m.startswith(('PySide6', 'pyqtgraph', 'widgets'))], 'Qt imported'"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, capture_output=True)
