"""Chrome trace-event JSON (PyTorch Kineto, TensorFlow trace.json.gz, JAX
Perfetto) through the repository: timelines, flows, statistics checked
against HolisticTraceAnalysis, memory, several ranks, export, bad input."""

import dataclasses
import gzip
import json
import shutil

import numpy as np
import pytest
from conftest import DATA

from profscope.models.analysis import trace_stats
from profscope.models.core.task import ProfileError
from profscope.models.formats.chrome_trace import build_timeline, scan, trace_memory_profile
from profscope.models.repository.locations import open_repository
from profscope.models.repository.registry import KERNEL_STATS, MEMORY_PROFILE, OP_STATS, OVERVIEW, TRACE_VIEWER
from profscope.viewer.cli import main

TRACES = DATA / "chrome_trace"
TRAIN = TRACES / "train.pt.trace.json.gz"
GPU = TRACES / "gpu"
ALL_TOOLS = (MEMORY_PROFILE, TRACE_VIEWER, KERNEL_STATS, OP_STATS, OVERVIEW)


def _timeline(*paths):
    return build_timeline([(f"rank-{k}" if len(paths) > 1 else "", scan(p)) for k, p in enumerate(paths)])


def _events(path):
    with gzip.open(path) as f:
        return json.load(f)["traceEvents"]


def test_pytorch_trace_opens_as_a_lone_file():
    repo = open_repository(TRAIN)
    (info,) = repo.enum_sessions()
    assert info.hosts == ("train",) and info.tools == ALL_TOOLS
    tl = repo.step_timeline(info.name, "train")
    events = _events(TRAIN)
    shown = [e for e in events if e.get("ph") in ("X", "i", "I")]
    assert len(tl) == len(shown)
    assert sorted(tl.names[i] for i in range(len(tl))) == sorted(e["name"] for e in shown)
    # Three ProfilerSteps (#2..#4): their starts and ends are the step markers.
    steps = trace_stats.steps(tl)
    assert steps.number.tolist() == [2, 3, 4] and len(tl.markers_ps) == 6
    # Python frames enclose ops: a cpu_op's parent chain reaches a python_function.
    cat = {c: k for k, c in enumerate(tl.categories)}
    op = int(np.flatnonzero(tl.category == cat["cpu_op"])[0])
    assert tl.category[tl.parent[op]] in (cat["cpu_op"], cat["python_function"], cat["user_annotation"])
    # fwdbwd flows link a forward op to its backward.
    fwdbwd = tl.flows.named("fwdbwd")
    assert len(fwdbwd) == sum(e.get("ph") == "s" for e in events if e.get("cat") == "fwdbwd")
    assert (tl.start_ps[fwdbwd.src] < tl.start_ps[fwdbwd.dst]).all()


def test_details_show_every_field_and_flows():
    tl = _timeline(GPU / "rank-0.json.gz")
    launch = next(i for i in range(len(tl)) if tl.names[i] == "cudaLaunchKernel")
    rows = dict(tl.details(launch))
    assert rows["cat"] == "cuda_runtime" and "args.correlation" in rows and "args.cbid" in rows
    assert any(k.startswith("flow to (ac2g)") for k in rows)


def test_launches_link_to_their_kernels():
    tl = _timeline(GPU / "rank-0.json.gz")
    ac2g = tl.flows.named("ac2g")
    events = _events(GPU / "rank-0.json.gz")
    assert len(ac2g) == sum(e.get("ph") == "s" and e.get("cat") == "ac2g" for e in events)
    assert {tl.categories[tl.category[i]] for i in ac2g.src.tolist()} == {"cuda_runtime"}
    assert {tl.categories[tl.category[i]] for i in ac2g.dst.tolist()} <= {"kernel", "gpu_memcpy", "gpu_memset"}
    assert (tl.start_ps[ac2g.dst] >= tl.start_ps[ac2g.src]).all()  # a kernel runs after its launch


def test_correlation_links_kernels_when_a_trace_has_no_flows(tmp_path):
    events = [e for e in _events(GPU / "rank-0.json.gz") if e.get("cat") != "ac2g"]
    path = tmp_path / "noflows.json"
    path.write_text(json.dumps({"traceEvents": events}))
    tl = _timeline(path)
    assert len(tl.flows.named("ac2g")) == len(_timeline(GPU / "rank-0.json.gz").flows.named("ac2g"))


def _hta_rounded(tl):
    """The timeline on HTA's grid: start rounded up, end down, to whole µs."""
    start = -(-tl.start_ps // 1_000_000) * 1_000_000
    end = (tl.start_ps + tl.duration_ps) // 1_000_000 * 1_000_000
    return dataclasses.replace(tl, start_ps=start, duration_ps=end - start)


@pytest.mark.parametrize("rank", [0, 1])
def test_kernels_and_temporal_breakdown_equal_holistic_trace_analysis(rank):
    reference = json.loads((GPU / "hta_reference.json").read_text())["default_window"]
    path = GPU / f"rank-{rank}.json.gz"
    base_ns = json.loads(gzip.open(path).read())["baseTimeNanoseconds"]
    tl = _hta_rounded(_timeline(path))
    # HTA keeps the GPU ops launched before the last ProfilerStep start (B, file µs).
    bound_us = reference["window"][str(rank)]["rule_bound_ts_us"]
    bound_ps = (bound_us - (tl.origin_ns - base_ns) // 1000) * 1_000_000
    window = (np.iinfo(np.int64).min, bound_ps - 1)

    ours = trace_stats.kernel_stats(tl, window)
    theirs = [k for k in reference["kernels"] if k["rank"] == rank]
    assert sorted(ours.name) == sorted(k["name"] for k in theirs)
    for k in theirs:
        i = ours.name.index(k["name"])
        assert ours.type[i] == k["kernel_type"]
        assert (int(ours.count[i]), ours.total_ps[i] / 1e6, ours.min_ps[i] / 1e6, ours.max_ps[i] / 1e6) == \
            (k["count"], k["sum_us"], k["min_us"], k["max_us"])

    (o,) = trace_stats.overview(tl, window)
    (t,) = [t for t in reference["temporal_breakdown"] if t["rank"] == rank]
    assert (o.span_ps / 1e6, o.idle_ps / 1e6, o.compute_ps / 1e6, o.non_compute_ps / 1e6) == \
        (t["kernel_time_us"], t["idle_time_us"], t["compute_time_us"], t["non_compute_time_us"])


def test_op_stats_attribute_kernels_to_the_ops_that_launched_them():
    tl = _timeline(GPU / "rank-0.json.gz")
    ops = trace_stats.op_stats(tl)
    kernels = trace_stats.kernel_stats(tl)
    assert (ops.host_self_ps <= ops.host_total_ps).all() and (ops.device_self_ps <= ops.device_total_ps).all()
    # Every launched GPU op's time lands on exactly one op's own device time.
    assert ops.device_self_ps.sum() == kernels.total_ps.sum()
    mm = ops.name.index("aten::mm")
    assert ops.device_total_ps[mm] > 0 and ops.calls[mm] > 0


def test_two_ranks_are_one_session_with_the_straggler_visible():
    repo = open_repository(GPU)
    (info,) = repo.enum_sessions()
    assert info.hosts == ("rank-0", "rank-1") and repo.combines_hosts(info.name)
    tl = repo.step_timeline(info.name, "")
    assert set(tl.group_host) == {"rank-0", "rank-1"} and all(g.startswith("rank-") for g in tl.groups)
    doc = json.loads(repo.tool_data(info.name, OVERVIEW).output)
    hosts = {h["host"]: h for h in doc["hosts"]}
    assert set(hosts) == {"rank-0", "rank-1"}
    # Rank 0 waits for rank 1 in NCCL: its GPU time is mostly non-compute.
    assert hosts["rank-0"]["non_compute_us"] > hosts["rank-0"]["compute_us"]
    assert hosts["rank-1"]["compute_us"] > hosts["rank-1"]["non_compute_us"]
    assert hosts["rank-0"]["distributedInfo"]["rank"] == 0


def test_cli_writes_the_three_tools(tmp_path, capsys):
    for tool, key, fields in ((KERNEL_STATS, "kernels", {"host", "name", "type", "count", "total_us", "mean_us",
                                                          "min_us", "max_us"}),
                              (OP_STATS, "ops", {"host", "name", "calls", "host_total_us", "host_self_us",
                                                 "device_total_us"}),
                              (OVERVIEW, "hosts", {"host", "span_us", "idle_us", "compute_us", "non_compute_us",
                                                   "steps"})):
        out = tmp_path / f"{tool}.json"
        assert main(["export", str(GPU), "--tool", tool, "-o", str(out)]) == 0
        rows = json.loads(out.read_text())[key]
        assert rows and fields <= set(rows[0])
    assert {r["type"] for r in json.loads((tmp_path / "kernel_stats.json").read_text())["kernels"]} == \
        {"COMPUTATION", "COMMUNICATION", "MEMORY"}
    # A step range narrows the statistics.
    out = tmp_path / "steps.json"
    assert main(["export", str(GPU), "--tool", KERNEL_STATS, "--param", "steps=3-3", "-o", str(out)]) == 0
    narrow = json.loads(out.read_text())["kernels"]
    whole = json.loads((tmp_path / "kernel_stats.json").read_text())["kernels"]
    assert sum(k["count"] for k in narrow) < sum(k["count"] for k in whole)
    assert main(["export", str(GPU), "--tool", KERNEL_STATS, "--param", "steps=90-99"]) == 1
    assert "no ProfilerStep" in capsys.readouterr().err


def test_kineto_memory_events_feed_the_memory_view():
    profile = open_repository(TRAIN).memory_profile("train.pt.trace.json.gz", "")
    assert profile.memory_ids == ["CPU"]
    cpu = profile.allocators["CPU"]
    memory = [e for e in _events(TRAIN) if e.get("name") == "[memory]"]
    assert len(cpu.timeline) == len(memory)
    assert cpu.summary.peak_heap == max(e["args"]["Total Allocated"] for e in memory)
    assert cpu.summary.num_allocations == sum(e["args"]["Bytes"] > 0 for e in memory)
    # Allocations at the peak name the ops that made them and their step.
    rows = cpu.peak_allocations
    assert "aten::mm" in rows.op and set(rows.step.tolist()) <= {2, 3, 4, -1}
    gpu = trace_memory_profile(scan(TRACES / "gpu_memory" / "gpu_memory.pt.trace.json.gz"), "h")
    assert gpu.memory_ids == ["CPU", "cuda:0"]


def test_tensorflow_and_jax_traces(tmp_path):
    session = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    session.mkdir(parents=True)
    shutil.copy(DATA / "xprof" / "small.trace_viewer.json.gz", session / "vm.trace.json.gz")
    shutil.copy(DATA / "xprof" / "small.memory_profile.json", session / "vm.memory_profile.json")
    repo = open_repository(tmp_path)
    (info,) = repo.enum_sessions()
    assert info.hosts == ("vm",) and TRACE_VIEWER in info.tools
    # The memory profile comes from the MemoryProfile file, the timeline from the trace.
    assert repo.memory_profile(info.name, "vm").memory_ids == ["bfc_cpu_allocator_for_gpu"]
    expected = [e for e in _events(DATA / "xprof" / "small.trace_viewer.json.gz") if e.get("ph") in ("X", "i")]
    assert len(repo.step_timeline(info.name, "vm")) == len(expected)
    jax = _timeline(TRACES / "jax" / "perfetto_trace.json.gz")
    assert len(jax) == sum(e.get("ph") == "X" for e in _events(TRACES / "jax" / "perfetto_trace.json.gz"))


def test_profscopes_own_exports_read_back(tmp_path):
    for source in (DATA / "step_stats" / "run_metadata.pb", DATA / "xprof" / "small.xplane.pb"):
        out = tmp_path / f"{source.stem}.trace.json"
        assert main(["export", str(source), "--tool", TRACE_VIEWER, "-o", str(out)]) == 0
        exported = [e for e in json.loads(out.read_text())["traceEvents"] if e.get("ph") == "X"]
        tl = _timeline(out)
        assert sum(1 for i in range(len(tl)) if not tl.lane_names[tl.lane_of(i)].endswith(" instants")) == len(exported)
    # A Chrome trace's own trace_viewer export is the trace itself.
    out = tmp_path / "again.json"
    assert main(["export", str(TRAIN), "--tool", TRACE_VIEWER, "-o", str(out)]) == 0
    assert json.loads(out.read_text())["traceEvents"] == _events(TRAIN)


# ---------------------------------------------------------------- bad input


def _write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


def test_not_json_or_not_a_trace(tmp_path, capsys):
    # Not a trace by its start: a lone .json is then read as a MemoryProfile, which says why not.
    assert main(["export", str(_write(tmp_path, "x.json", "hello, world")), "--tool", MEMORY_PROFILE]) == 1
    assert "x.json" in capsys.readouterr().err
    for doc in ({"traceEvents": 5}, '{"traceEvents": [{"ph": "X",, }]}', {"traceEvents": [1, 2]}):
        path = _write(tmp_path, "y.trace.json", doc)
        assert main(["export", str(path), "--tool", OVERVIEW]) == 1
        err = capsys.readouterr().err
        assert "y.trace.json" in err and "Traceback" not in err


def test_broken_events_are_counted_and_the_rest_shown(tmp_path):
    good = {"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 10, "dur": 5}
    events = [good,
              {"name": "no ph", "pid": 1, "tid": 1, "ts": 1},
              {"ph": "X", "name": "no ts", "pid": 1, "tid": 1, "dur": 3},
              {"ph": "X", "name": "negative", "pid": 1, "tid": 1, "ts": 20, "dur": -4},
              {"ph": "E", "pid": 1, "tid": 2, "ts": 3},
              {"ph": "B", "name": "open", "pid": 1, "tid": 3, "ts": 4},
              {"ph": "X", "name": "huge", "pid": 1, "tid": 1, "ts": "1e308", "dur": 1},
              {"ph": "X", "name": "x" * (10 << 20), "pid": 1, "tid": 4, "ts": 30, "dur": 1},
              {"ph": "X", "name": "deep", "pid": 1, "tid": 5, "ts": 40, "dur": 1, "args": {}}]
    text = json.dumps({"traceEvents": events})
    text = text.replace('"args": {}', '"args": ' + "[" * 10_000 + "]" * 10_000)
    tl = _timeline(_write(tmp_path, "bad.json", text))
    names = {tl.names[i][:10] for i in range(len(tl))}
    assert {"ok", "negative", "open", "deep", "x" * 10} <= names
    warnings = " ".join(tl.warnings)
    for phrase in ("without ph", "without a valid ts", "negative duration", "E event(s) without a B", "never ended"):
        assert phrase in warnings
    deep = next(i for i in range(len(tl)) if tl.names[i] == "deep")
    assert dict(tl.details(deep)).get("error", "").startswith("the event is nested too deeply")


def test_truncated_gzip_keeps_what_was_read(tmp_path):
    data = TRAIN.read_bytes()
    cut = _write(tmp_path, "cut.pt.trace.json.gz", "")
    cut.write_bytes(data[: len(data) // 2])
    tl = _timeline(cut)
    assert 0 < len(tl) < len(_timeline(TRAIN))
    assert any("ends early" in w or "cut" in w for w in tl.warnings)


def test_ops_split_by_input_shape(tmp_path):
    tl = _timeline(TRAIN)
    events = [e for e in _events(TRAIN) if e.get("cat") == "cpu_op"]
    split = trace_stats.op_stats(tl, by_shape=True)
    # Each (name, Input Dims) pair of the trace is one row with its number of calls.
    expected = {}
    for e in events:
        key = (e["name"], json.dumps(e["args"].get("Input Dims")) if "Input Dims" in e["args"] else "")
        expected[key] = expected.get(key, 0) + 1
    got = {(n, s): int(c) for n, s, c in zip(split.name, split.input_shape, split.calls)}
    assert {(n, json.dumps(json.loads(s)) if s else ""): c for (n, s), c in got.items()} == expected
    assert sum(split.calls) == sum(trace_stats.op_stats(tl).calls) == len(events)
    out = tmp_path / "ops.json"
    assert main(["export", str(TRAIN), "--tool", OP_STATS, "--param", "group_by=input_shape", "-o", str(out)]) == 0
    rows = json.loads(out.read_text())["ops"]
    assert any(r["name"] == "aten::addmm" and r["input_shape"].startswith("[[32]") for r in rows)
    assert main(["export", str(TRAIN), "--tool", KERNEL_STATS, "--param", "group_by=input_shape"]) == 1


def test_absurd_times_and_unrelated_clocks(tmp_path):
    a = _write(tmp_path, "a.json", {"traceEvents": [
        {"ph": "X", "name": "ok", "pid": 1, "tid": 1, "ts": 5, "dur": 1},
        {"ph": "X", "name": "absurd", "pid": 1, "tid": 1, "ts": -2**63, "dur": 1}]})
    b = _write(tmp_path, "b.json", {"baseTimeNanoseconds": 2**61, "traceEvents": [
        {"ph": "X", "name": "late", "pid": 1, "tid": 1, "ts": 5, "dur": 1}]})
    tl = build_timeline([("a", scan(a)), ("b", scan(b))])
    assert sorted(tl.names[i] for i in range(len(tl))) == ["late", "ok"]
    warnings = " ".join(tl.warnings)
    assert "beyond" in warnings and "shown from the same start" in warnings
    assert tl.start_ps.max() < 10**7  # both hosts start together


def test_random_traces_give_answers_or_messages(tmp_path):
    """A seeded mix of valid and invalid events, phases, args and top-level
    values: every tool answers or says why not, never a traceback."""
    rng = np.random.default_rng(7)
    odd = [0, -1, 1.5, 1e308, float("nan"), "7", None, [], {}, True, 2**70, -2**63]

    def pick(values):
        return values[rng.integers(len(values))]

    for case in range(60):
        events = []
        for _ in range(rng.integers(0, 40)):
            e = {
                "ph": pick(list("XBEiIMCstfbeP") + [None, 5]),
                "ts": pick([float(rng.uniform(0, 1e3))] + odd),
                "dur": pick([float(rng.uniform(-5, 50))] + odd),
                "pid": pick([1, 2, "p"] + odd),
                "tid": pick([1, 2, "t"] + odd),
                "id": pick([1, 2, "0x1"] + odd),
                "bp": pick(["e", "x"]),
                "name": pick(["a", "ProfilerStep#3", "[memory]", "process_name", "thread_name", "thread_sort_index"]),
                "cat": pick(["cpu_op", "kernel", "cuda_runtime", "ac2g", "fwdbwd"] + odd),
                "args": pick(
                    [
                        {
                            "name": pick(["n"] + odd),
                            "sort_index": pick(odd),
                            "correlation": pick([1, 2] + odd),
                            "Bytes": pick([100, -100] + odd),
                            "Addr": pick([1, 2] + odd),
                            "Device Type": pick([0, 1] + odd),
                            "Input Dims": pick([[[1, 2]], "x"] + odd),
                        }
                    ]
                    + odd
                ),
            }
            events.append({k: v for k, v in e.items() if rng.random() < 0.85})
        path = _write(tmp_path, f"c{case}.json", json.dumps({"traceEvents": events}))
        try:
            tl = build_timeline([("a", scan(path)), ("b", scan(path))] if case % 3 == 0 else [("", scan(path))])
            trace_stats.compute(tl)
            for i in range(min(len(tl), 3)):
                tl.details(i)
        except ProfileError:
            pass
        try:
            trace_memory_profile(scan(path), "h")
        except ProfileError:
            pass
