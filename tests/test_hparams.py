"""The HParams API against TensorBoard's own plugin on log dirs written by
the real writers, and what Profscope answers where TensorBoard fails."""

import random
import time

import numpy as np
import pytest
from conftest import DATA

from profscope.models.core.event_file import scan_records
from profscope.models.core.task import ProfileError
from profscope.models.hparams.experiment import HParamsData, HParamsError, cleanse, request_from_json, to_json
from profscope.models.hparams.logdir import find_runs, read_logdir
from profscope.protos import api_pb2

pytest.importorskip("tensorboard")
from tensorboard_hparams import frontend_session_groups_request, tensorboard_answer  # noqa: E402

LOGDIRS = ["api_config", "api_no_config", "keras_callback", "tensorboardx", "pytorch"]
STATUSES = ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]
ALL = {"allowedStatuses": STATUSES, "sliceSize": 1000}


def path(name):
    return str(DATA / "hparams" / name)


_loaded = {}


def data(name) -> HParamsData:
    if name not in _loaded:
        _loaded[name] = HParamsData(read_logdir(path(name)))
    return _loaded[name]


def ours(name, route, request):
    """(status, body) as TensorBoard's routes give them."""
    d = data(name)
    try:
        if route == "experiment":
            r = request_from_json(request, api_pb2.GetExperimentRequest)
            include = not r.HasField("include_metrics") or r.include_metrics
            return 200, to_json(d.experiment(include, r.hparams_limit))
        if route == "session_groups":
            return 200, to_json(d.list_session_groups(request_from_json(request, api_pb2.ListSessionGroupsRequest)))
        return 200, cleanse(d.list_metric_evals(request_from_json(request, api_pb2.ListMetricEvalsRequest)))
    except HParamsError as e:
        return 400, {"error": str(e)}
    except ProfileError as e:
        return 404, {"error": str(e)}


def sorted_domains(experiment: dict) -> dict:
    """TensorBoard lists inferred string domains in set order (it changes
    between processes); Profscope sorts them."""
    for h in experiment.get("hparamInfos", []):
        if h.get("type") == "DATA_TYPE_STRING" and "domainDiscrete" in h:
            h["domainDiscrete"] = sorted(h["domainDiscrete"])
    return experiment


@pytest.mark.parametrize("name", LOGDIRS)
@pytest.mark.parametrize("request_", [{}, {"includeMetrics": False}, {"hparamsLimit": 2}, {"hparamsLimit": -1}])
def test_experiment_is_tensorboards(name, request_):
    status, expected = tensorboard_answer(path(name), "experiment", request_)
    assert status == 200
    assert sorted_domains(ours(name, "experiment", request_)[1]) == sorted_domains(expected)


@pytest.mark.parametrize("name", LOGDIRS)
def test_dashboard_request_is_answered_as_tensorboard_does(name):
    _, experiment = tensorboard_answer(path(name), "experiment", {})
    request = frontend_session_groups_request(experiment)
    assert ours(name, "session_groups", request) == tensorboard_answer(path(name), "session_groups", request)


def random_request(rng, experiment):
    hparams = [h["name"] for h in experiment["hparamInfos"]] + ["nonexistent"]
    metrics = [m["name"] for m in experiment["metricInfos"]] + [{"group": "", "tag": "nope"}]
    col_params = []
    for _ in range(rng.randint(0, 4)):
        cp = {"hparam": rng.choice(hparams)} if rng.random() < 0.6 else {"metric": rng.choice(metrics)}
        if rng.random() < 0.6:
            cp["order"] = rng.choice(["ORDER_ASC", "ORDER_DESC", "ORDER_UNSPECIFIED"])
        if rng.random() < 0.3:
            cp["missingValuesFirst"] = True
        if rng.random() < 0.3:
            cp["excludeMissingValues"] = True
        r = rng.random()
        if r < 0.15:
            cp["filterRegexp"] = rng.choice(["a", "^s", "d$", "", "adam|sgd", "[0-9]", "(?i)ADAM"])
        elif r < 0.35:
            cp["filterInterval"] = {"minValue": rng.choice([0, 0.001, -1, 0.5]),
                                    "maxValue": rng.choice([0.01, 1, 100, 0.7, "Infinity"])}
        elif r < 0.5:
            cp["filterDiscrete"] = rng.sample(["adam", "sgd", 0.01, 0.001, True, False, 16, 32, 1, "relu"],
                                              rng.randint(0, 3))
        if rng.random() < 0.15:
            cp["includeInResult"] = rng.random() < 0.5
        col_params.append(cp)
    request = {"colParams": col_params, "allowedStatuses": rng.sample(STATUSES, rng.randint(1, 4)),
               "startIndex": rng.choice([0, 0, 1, 3, -2]), "sliceSize": rng.choice([100, 2, 5, 1000])}
    if rng.random() < 0.3:
        request["aggregationType"] = rng.choice(["AGGREGATION_AVG", "AGGREGATION_MEDIAN", "AGGREGATION_MIN",
                                                 "AGGREGATION_MAX", "AGGREGATION_UNSET"])
        request["aggregationMetric"] = rng.choice(metrics)
    if rng.random() < 0.1:
        request["includeMetrics"] = False
    return request


@pytest.mark.parametrize("name", LOGDIRS)
def test_random_requests_get_tensorboards_answers(name):
    """Filters, multi-key sorts, aggregation, statuses and paging: the same
    groups, values and order, and the same 400 messages. Where TensorBoard
    fails (HTTP 500), Profscope answers (checked separately below)."""
    rng = random.Random(name)
    _, experiment = tensorboard_answer(path(name), "experiment", {})
    compared = 0
    for _ in range(150):
        request = random_request(rng, experiment)
        expected = tensorboard_answer(path(name), "session_groups", request)
        got = ours(name, "session_groups", request)
        if expected[0] == 500:
            assert got[0] in (200, 400)
            continue
        assert got == expected, request
        compared += 1
    assert compared > 100


@pytest.mark.parametrize("name", LOGDIRS)
def test_metric_evals_are_tensorboards(name):
    groups = ours(name, "session_groups", ALL)[1]["sessionGroups"]
    asked = 0
    for group in groups:
        for session in group["sessions"]:
            for metric in session["metricValues"] + [{"name": {"group": "", "tag": "absent"}}]:
                request = {"sessionName": session["name"], "metricName": metric["name"]}
                expected = tensorboard_answer(path(name), "metric_evals", request)
                assert ours(name, "metric_evals", request) == expected
                asked += 1
    assert asked > 5


# ---------------------------------------------------------------- where TensorBoard fails


def test_median_of_a_metric_some_group_lacks_averages_that_group():
    """TensorBoard: HTTP 500 (IndexError). Profscope: groups without the metric are averaged."""
    request = {**ALL, "aggregationType": "AGGREGATION_MEDIAN", "aggregationMetric": {"group": "", "tag": "accuracy"}}
    assert tensorboard_answer(path("api_config"), "session_groups", request)[0] == 500
    status, body = ours("api_config", "session_groups", request)
    assert status == 200
    groups = {g["name"]: g for g in body["sessionGroups"]}
    lacking = next(g for n, g in groups.items() if n.startswith("5279d3cb"))  # session s10, no accuracy
    assert all(m["name"]["tag"] != "accuracy" for m in lacking["metricValues"])
    trial_a = groups["trial_a"]  # three sessions: the lower median's metrics are copied
    accuracies = sorted(
        m["value"] for s in trial_a["sessions"] for m in s["metricValues"] if m["name"]["tag"] == "accuracy"
    )
    assert [m["value"] for m in trial_a["metricValues"] if m["name"]["tag"] == "accuracy"] == [accuracies[1]]


def test_sorting_a_column_of_mixed_types_puts_numbers_first():
    """TensorBoard: HTTP 500 (TypeError). Profscope: numbers and booleans before strings."""
    request = {**ALL, "colParams": [{"hparam": "mixed", "order": "ORDER_ASC"}]}
    assert tensorboard_answer(path("api_no_config"), "session_groups", request)[0] == 500
    status, body = ours("api_no_config", "session_groups", request)
    assert status == 200
    values = [g["hparams"].get("mixed") for g in body["sessionGroups"]]
    present = [v for v in values if v is not None]
    kinds = [isinstance(v, str) for v in present]
    assert kinds == sorted(kinds) and values[len(present) :] == [None] * (len(values) - len(present))


def test_regexp_filters_run_in_linear_time_and_refuse_what_re2_cannot_do():
    table = HParamsData(read_logdir(path("api_config"))).groups([1, 2, 3, 0], 0, ("", ""), True)
    cp = api_pb2.ColParams(hparam="optimizer", filter_regexp="(a+)+$")
    big = "a" * 30_000 + "!"
    table.hparam_column("optimizer").text[0] = big  # a hostile string for a backtracking engine
    start = time.perf_counter()
    table.select([cp])
    assert time.perf_counter() - start < 1.0  # Python's re would take hours
    with pytest.raises(HParamsError, match="Invalid regular expression"):
        table.select([api_pb2.ColParams(hparam="optimizer", filter_regexp="(")])
    with pytest.raises(HParamsError, match="Invalid regular expression"):
        table.select([api_pb2.ColParams(hparam="optimizer", filter_regexp=r"(a)\1")])


def test_bad_requests_are_refused_with_a_reason():
    for text in ("{not json", '{"colParams": 3}', '{"unknownField": 1}'):
        with pytest.raises(HParamsError, match="Expected a JSON-formatted request"):
            request_from_json(text, api_pb2.ListSessionGroupsRequest)


# ---------------------------------------------------------------- reading


def test_runs_are_found_depth_first_in_name_order_and_links_out_are_skipped(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "events.out.tfevents.1.x").write_bytes(b"")
    logdir = tmp_path / "logs"
    (logdir / "b" / "train").mkdir(parents=True)
    (logdir / "a").mkdir()
    for run in ("b", "b/train", "a"):
        (logdir / run / "events.out.tfevents.1.x").write_bytes(b"")
    (logdir / "link").symlink_to(outside)
    assert list(find_runs(logdir)) == ["a", "b", "b/train"]


def test_simple_values_and_tensor_scalars_read_alike():
    x = read_logdir(path("tensorboardx"))
    series = x.runs["run0/hparams"].scalars
    assert series and all(len(s) == 1 for s in series.values())
    keras = read_logdir(path("keras_callback"))
    train = next(r for n, r in keras.runs.items() if n.endswith("/train"))
    assert len(train.scalars["epoch_loss"]) == 2 and np.isfinite(train.scalars["epoch_loss"].value).all()


def test_damaged_event_files_keep_their_good_records_and_say_what_was_skipped(tmp_path, monkeypatch):
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.scalar import summary as scalar_summary

    for run in ("a", "b", "b/c", "d"):
        _write_events(
            tmp_path / run,
            [
                event_pb2.Event(step=s, wall_time=10.0 + s, summary=scalar_summary.scalar_pb("loss", s / 10))
                for s in range(4)
            ],
            version=2,
        )
    files = {run: next((tmp_path / run).glob("*tfevents*")) for run in ("a", "b", "b/c", "d")}
    clean = read_logdir(tmp_path)
    starts = [int(at) - 12 for at, _ in scan_records(files["b/c"].read_bytes(), "").spans]  # where records start
    data = bytearray(files["a"].read_bytes())
    data[-5] ^= 0xFF  # the last record's data fails its CRC
    files["a"].write_bytes(bytes(data))
    files["b"].write_bytes(files["b"].read_bytes()[:-7])  # still being written
    data = files["b/c"].read_bytes()
    files["b/c"].write_bytes(data[: starts[2]] + b"\x01" * 9 + data[starts[2] :])  # corrupt framing between records
    expected = [
        f"a/{files['a'].name}: skipped 1 record(s) whose data failed the CRC check",
        f"b/{files['b'].name}: ignored an incomplete last record at byte {starts[-1]:,} (file still being written?)",
        f"b/c/{files['b/c'].name}: skipped 9 bytes of corrupt record framing",
    ]
    for batch in (1, 1 << 20):  # a batch per run, or one for all
        monkeypatch.setattr("profscope.models.hparams.logdir.BATCH_BYTES", batch)
        damaged = read_logdir(tmp_path)
        assert damaged.warnings == expected
        steps = {run: damaged.runs[run].scalars["loss"].step.tolist() for run in ("a", "b", "b/c", "d")}
        assert steps == {"a": [0, 1, 2], "b": [0, 1, 2], "b/c": [0, 1, 2, 3], "d": [0, 1, 2, 3]}
        assert (damaged.runs["d"].scalars["loss"].value == clean.runs["d"].scalars["loss"].value).all()


def _write_events(folder, events, version):
    """An event file written with TensorBoard's own RecordWriter."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.summary.writer.record_writer import RecordWriter

    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"events.out.tfevents.{len(list(folder.iterdir())) + 1}.host", "wb") as f:
        w = RecordWriter(f)
        w.write(event_pb2.Event(wall_time=1.0, file_version=f"brain.Event:{version}").SerializeToString())
        for e in events:
            w.write(e.SerializeToString())


@pytest.mark.parametrize("seed", range(3))
def test_many_purges_across_files_as_tensorboard_does(tmp_path, seed):
    """Steps going back again and again (restarts, out-of-order summaries,
    several tags and files): each purge drops what its tags kept at or above
    its step, as TensorBoard's reader does (once a purge at a time, quadratic)."""
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.scalar import summary as scalar_summary

    rng = random.Random(seed)
    for run in ("v1", "v2"):
        step = 0
        for _ in range(2):  # two files of one run: purges in the second reach the first's values
            events = []
            for _ in range(300):
                step = max(step + rng.choice([1, 1, 2, -1, -3]), 0)
                if run == "v2" and rng.random() < 0.05:
                    events.append(
                        event_pb2.Event(
                            step=step,
                            wall_time=1.0 + step,
                            session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START),
                        )
                    )
                tags = rng.sample(["loss", "acc", "lr"], rng.randint(1, 2))
                summary = scalar_summary.scalar_pb(tags[0], rng.random())
                for t in tags[1:]:
                    summary.value.extend(scalar_summary.scalar_pb(t, rng.random()).value)
                events.append(event_pb2.Event(step=step, wall_time=1.0 + step, summary=summary))
            _write_events(tmp_path / run, events, version=int(run[1]))
    data = HParamsData(read_logdir(tmp_path))
    for run in ("v1", "v2"):
        for tag in ("loss", "acc", "lr"):
            request = {"sessionName": run, "metricName": {"group": "", "tag": tag}}
            status, expected = tensorboard_answer(str(tmp_path), "metric_evals", request)
            assert status == 200
            assert (
                cleanse(data.list_metric_evals(request_from_json(request, api_pb2.ListMetricEvalsRequest))) == expected
            )


def test_restarts_purge_orphaned_values_as_tensorboard_does(tmp_path):
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.scalar import summary as scalar_summary

    def value(step, x, tag="loss"):
        return event_pb2.Event(step=step, wall_time=100.0 + step, summary=scalar_summary.scalar_pb(tag, x))

    def start(step):
        return event_pb2.Event(
            step=step, wall_time=100.0 + step, session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START)
        )

    # Version 2: the second SessionLog START at step 3 drops steps >= 3 seen so far.
    _write_events(
        tmp_path / "v2",
        [start(0)] + [value(s, s / 10) for s in range(6)] + [start(3)] + [value(s, s / 100) for s in range(3, 7)],
        version=2,
    )
    # Version 1: a step going back drops that tag's later steps; out-of-order in v2 stays.
    _write_events(
        tmp_path / "v1",
        [value(s, s / 10) for s in range(6)]
        + [value(2, 0.5), value(3, 0.7), value(9, 1.0, "other"), value(4, 0.1, "other")],
        version=1,
    )
    _write_events(tmp_path / "v2_out_of_order", [value(s, 1.0 * s) for s in (0, 1, 5, 2, 2)], version=2)
    data = HParamsData(read_logdir(tmp_path))
    for run, tags in (("v2", ["loss"]), ("v1", ["loss", "other"]), ("v2_out_of_order", ["loss"])):
        for tag in tags:
            request = {"sessionName": run, "metricName": {"group": "", "tag": tag}}
            status, expected = tensorboard_answer(str(tmp_path), "metric_evals", request)
            assert status == 200
            assert (
                cleanse(data.list_metric_evals(request_from_json(request, api_pb2.ListMetricEvalsRequest))) == expected
            )
    assert [
        row[1]
        for row in data.list_metric_evals(
            api_pb2.ListMetricEvalsRequest(session_name="v2", metric_name={"tag": "loss"})
        )
    ] == [0, 1, 2, 3, 4, 5, 6]
