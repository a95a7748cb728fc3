"""TensorBoard's HParams API over a log dir (api.proto): GetExperiment,
ListSessionGroups and ListMetricEvals, answered as TensorBoard's HParams
plugin answers them (tensorboard 2.17 to 2.21), with the groups held as
numpy columns so that filtering and sorting ten thousand groups is instant.

Rules followed (see docs/ARCHITECTURE.md for where Profscope differs on
purpose, where TensorBoard fails with HTTP 500):
- a session is a run with `_hparams_/session_start_info`; its group is the
  start info's group_name, else the session name; runs are taken depth-first
  with siblings in name order;
- the experiment is the first run's `_hparams_/experiment`, else inferred
  from the sessions (numbers give intervals, one kind of value its type, mixed
  kinds STRING) and metrics discovered from scalar tags below sessions;
  hparam infos sorted differing first, then by name, cut to hparams_limit;
- a metric's value is the last scalar in file order of run
  `<session>/<group>`; group metrics are averaged over the sessions that have
  them (AVG, and UNSET), or copied from one representative session
  (MEDIAN: the lower median, MIN, MAX) of the aggregation metric;
- sessions outside allowed_statuses are left out before grouping; filters
  (re.search-like regexp on strings, closed intervals, discrete sets with
  Python equality, missing values passing unless excluded), then stable
  sorts from the last ordered column to the first over name order, then
  start_index / slice_size as Python slicing.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from google.protobuf import json_format, struct_pb2

from profscope.models.core import guards
from profscope.models.core.guards import decode
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.hparams import TOOLS
from profscope.models.hparams.logdir import Logdir, gc_paused, read_logdir
from profscope.protos import api_pb2, plugin_data_pb2

PLUGIN = "hparams"
EXPERIMENT_TAG = "_hparams_/experiment"
START_TAG = "_hparams_/session_start_info"
END_TAG = "_hparams_/session_end_info"
MISSING, NUMBER, STRING, BOOL, OTHER = 0, 1, 2, 3, 4  # kinds of hparam values
NO_HPARAMS_HINT = ("HParams data is written by tensorboard.plugins.hparams.api (hp.hparams, hp.hparams_config, "
                   "hp.KerasCallback), PyTorch's or tensorboardX's SummaryWriter.add_hparams.")
ALL_STATUSES = (api_pb2.STATUS_UNKNOWN, api_pb2.STATUS_SUCCESS, api_pb2.STATUS_FAILURE, api_pb2.STATUS_RUNNING)
MAX_INT32 = 2**31 - 1


class HParamsError(ProfileError):
    """A request TensorBoard refuses with HTTP 400 (the message is TensorBoard's)."""


def load_hparams(path, task: TaskState | None = None) -> HParamsData:
    """A log dir's HParams data with the default group table built (in the
    caller's thread: a worker's); ProfileError when it has none."""
    with gc_paused():
        data = HParamsData(read_logdir(path, task))
        if not data.hparams_content:
            raise ProfileError(f"{path}: no HParams data in {len(data.runs):,} run(s). {NO_HPARAMS_HINT}")
        data.groups(ALL_STATUSES, api_pb2.AGGREGATION_AVG, ("", ""), True)
    return data


def tool_json(data: HParamsData, tool: str, params: dict[str, str]) -> bytes:
    """What TensorBoard's /experiment, /session_groups and /metric_evals routes
    return; the request is proto3 JSON in params["request"]."""
    import json

    text = params.get("request", "{}")
    doc: dict | list
    if tool == "hparams_experiment":
        r = request_from_json(text, api_pb2.GetExperimentRequest)
        doc = to_json(data.experiment(not r.HasField("include_metrics") or r.include_metrics, r.hparams_limit))
    elif tool == "hparams_session_groups":
        doc = to_json(data.list_session_groups(request_from_json(text, api_pb2.ListSessionGroupsRequest)))
    elif tool == "hparams_metric_evals":
        doc = cleanse(data.list_metric_evals(request_from_json(text, api_pb2.ListMetricEvalsRequest)))
    else:
        raise ProfileError(f"unknown tool {tool!r}; HParams tools: {', '.join(TOOLS)}")
    return json.dumps(doc, indent=2).encode()


# ---------------------------------------------------------------- sessions


@dataclass
class MetricValue:
    group: str
    tag: str
    value: float
    step: int
    wall_time: float


@dataclass
class Session:
    name: str
    group: str
    hparams: dict  # name -> float, str, bool, list, dict or None, as the start info's Value holds it
    start_time: float
    end_time: float
    status: int
    model_uri: str
    monitor_url: str
    metrics: list[MetricValue] = field(default_factory=list)


def _python_value(v: struct_pb2.Value):
    kind = v.WhichOneof("kind")
    if kind == "number_value":
        return v.number_value
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return v.bool_value
    if kind in ("list_value", "struct_value"):
        return json_format.MessageToDict(getattr(v, kind))
    return None  # null or unset


def _kind(value) -> int:
    if value is None:
        return MISSING
    if isinstance(value, bool):
        return BOOL
    if isinstance(value, float):
        return NUMBER
    if isinstance(value, str):
        return STRING
    return OTHER


def _plugin_data(content: bytes, expected: str, run: str) -> plugin_data_pb2.HParamsPluginData:
    data = decode(plugin_data_pb2.HParamsPluginData, content, f"run {run!r}: the hparams summary's plugin data")
    if data.version != 0:
        raise HParamsError(f"Only supports plugin_data version: 0; found: {data.version} in: {data}")
    if data.WhichOneof("data") != expected:
        raise HParamsError(f"Expected plugin_data.{expected} to be set. Got: {data}")
    return data


class HParamsData:
    """A log dir's sessions and scalars, with the API's answers."""

    def __init__(self, logdir: Logdir):
        self.logdir = logdir
        self.runs = logdir.runs  # in TensorBoard's (depth-first, name-sorted) run order
        self.hparams_content = {name: run.plugin_content.get(PLUGIN, {}) for name, run in self.runs.items()
                                if PLUGIN in run.plugin_content}
        self._groups_cache: dict[tuple, GroupTable] = {}
        self._sessions_cache: dict[tuple, list[Session]] = {}

    # ------------------------------------------------------------ experiment

    def experiment(self, include_metrics: bool = True, hparams_limit: int = 0) -> api_pb2.Experiment:
        """GetExperiment."""
        exp = self._base_experiment(include_metrics)
        infos = sorted(exp.hparam_infos, key=lambda h: (not h.differs, h.name))
        limit = hparams_limit or len(infos)
        del exp.hparam_infos[:]
        exp.hparam_infos.extend(infos[:limit])
        return exp

    def _base_experiment(self, include_metrics: bool) -> api_pb2.Experiment:
        for run, tags in self.hparams_content.items():
            if EXPERIMENT_TAG in tags:
                exp = api_pb2.Experiment()
                exp.CopyFrom(_plugin_data(tags[EXPERIMENT_TAG], "experiment", run).experiment)
                _drop_non_finite_choices(exp)
                if not include_metrics:
                    del exp.metric_infos[:]
                return exp
        return self._inferred_experiment(include_metrics)

    def _inferred_experiment(self, include_metrics: bool) -> api_pb2.Experiment:
        values: dict[str, list] = {}
        for run, tags in self.hparams_content.items():
            if START_TAG in tags:
                start = _plugin_data(tags[START_TAG], "session_start_info", run).session_start_info
                for name, v in start.hparams.items():
                    values.setdefault(name, []).append(v)
        infos = [info for name, vs in values.items() if (info := _hparam_info(name, vs)) is not None]
        exp = api_pb2.Experiment(hparam_infos=infos)
        if infos and include_metrics:
            exp.metric_infos.extend(self._discovered_metrics())
        return exp

    def _discovered_metrics(self) -> list[api_pb2.MetricInfo]:
        sessions = set(self.session_runs)
        names = set()
        for run_name, run in self.runs.items():
            if not run.scalars:
                continue
            s = run_name
            while s not in sessions:
                if not s:
                    break
                s = os.path.dirname(s)
            else:
                group = os.path.relpath(run_name, s)
                if group == "." and not run_name.endswith("."):
                    group = ""
                names |= {(tag, group) for tag in run.scalars}
        return [api_pb2.MetricInfo(name=api_pb2.MetricName(group=g, tag=t)) for t, g in sorted(names)]

    @cached_property
    def session_runs(self) -> list[str]:
        return [name for name, tags in self.hparams_content.items() if START_TAG in tags]

    # ------------------------------------------------------------ sessions

    def sessions(self, metric_infos) -> list[Session]:
        """Every session in run order, with its values of the given metrics
        (cached: the tables of every status and aggregation share them)."""
        key = tuple((m.name.group, m.name.tag) for m in metric_infos)
        if key not in self._sessions_cache:
            self._sessions_cache[key] = self._read_sessions(metric_infos)
        return self._sessions_cache[key]

    def _read_sessions(self, metric_infos) -> list[Session]:
        metrics = [(m.name.group, m.name.tag) for m in metric_infos]
        out = []
        for name in self.session_runs:
            tags = self.hparams_content[name]
            start = _plugin_data(tags[START_TAG], "session_start_info", name).session_start_info
            end = _plugin_data(tags[END_TAG], "session_end_info", name).session_end_info if END_TAG in tags else None
            hparams = {}
            for k, v in start.hparams.items():
                value = _python_value(v)
                # NaN and infinite numbers cannot be written as JSON: TensorBoard drops them.
                if not (isinstance(value, float) and not math.isfinite(value)):
                    hparams[k] = value
            session = Session(name=name, group=start.group_name or name, hparams=hparams,
                              start_time=start.start_time_secs, end_time=end.end_time_secs if end else 0.0,
                              status=end.status if end else 0, model_uri=start.model_uri,
                              monitor_url=start.monitor_url)
            for group, tag in metrics:
                last = self.last_scalar(name, group, tag)
                if last is not None:
                    session.metrics.append(MetricValue(group, tag, *last))
            out.append(session)
        return out

    def series(self, session: str, group: str, tag: str):
        """The scalar series of a session's metric, or None."""
        run = self.runs.get(metric_run(session, group))
        return run.scalars.get(tag) if run is not None else None

    def last_scalar(self, session: str, group: str, tag: str) -> tuple[float, int, float] | None:
        s = self.series(session, group, tag)
        if s is None or not len(s):
            return None
        return float(s.value[-1]), int(s.step[-1]), float(s.wall_time[-1])

    # ------------------------------------------------------------ queries

    def groups(self, allowed_statuses, aggregation: int, aggregation_metric: tuple[str, str],
               include_metrics: bool) -> GroupTable:
        """The session groups for these settings (cached: queries only filter and sort)."""
        if aggregation in (api_pb2.AGGREGATION_UNSET, api_pb2.AGGREGATION_AVG):
            aggregation, aggregation_metric = api_pb2.AGGREGATION_AVG, ("", "")  # both average; no metric needed
        key = (tuple(sorted(set(allowed_statuses))), aggregation, aggregation_metric, include_metrics)
        if key not in self._groups_cache:
            metric_infos = self._base_experiment(include_metrics).metric_infos
            sessions = [s for s in self.sessions(metric_infos) if s.status in key[0]]
            self._groups_cache[key] = GroupTable(sessions, metric_infos, aggregation, aggregation_metric)
        return self._groups_cache[key]

    def list_session_groups(self, request: api_pb2.ListSessionGroupsRequest) -> api_pb2.ListSessionGroupsResponse:
        include_metrics = not request.HasField("include_metrics") or request.include_metrics
        for cp in request.col_params:
            if cp.WhichOneof("name") is None:
                raise HParamsError(f'Got ColParam with both "metric" and "hparam" fields unset: {cp}')
            if cp.WhichOneof("filter") == "filter_regexp":
                compile_regexp(cp.filter_regexp)  # TensorBoard compiles every pattern first
        agg = request.aggregation_metric
        table = self.groups(request.allowed_statuses, request.aggregation_type, (agg.group, agg.tag), include_metrics)
        if len(table) and request.aggregation_type not in api_pb2.AggregationType.values():
            raise HParamsError(f"Unknown aggregation_type in request: {request.aggregation_type}")
        order = table.select(request.col_params)
        total = len(order)
        page = order[_python_slice(total, request.start_index, request.slice_size)]
        keep = _hparams_to_include(request.col_params)
        response = api_pb2.ListSessionGroupsResponse(total_size=total)
        response.session_groups.extend(table.group_proto(int(g), keep) for g in page)
        return response

    def list_metric_evals(self, request: api_pb2.ListMetricEvalsRequest) -> list[list]:
        """[[wall_time, step, value], ...] of a session's metric (any run and scalar tag)."""
        run = metric_run(request.session_name, request.metric_name.group)
        s = self.runs[run].scalars.get(request.metric_name.tag) if run in self.runs else None
        if s is None:
            raise ProfileError(f"Not found: No scalar data for run={run!r}, tag={request.metric_name.tag!r}")
        index = reservoir_indices(len(s))
        return [[float(s.wall_time[i]), int(s.step[i]), float(s.value[i])] for i in index]


def metric_run(session: str, group: str) -> str:
    """TensorBoard 2.17+'s run of a session's metric: os.path.join, one trailing '/' removed."""
    run = os.path.join(session, group)
    return run[:-1] if run.endswith("/") else run


@functools.lru_cache(maxsize=256)
def reservoir_indices(n: int, size: int = 1000) -> tuple[int, ...]:
    """Which of n values TensorBoard's scalar reservoir keeps (random.Random(0),
    the last value always kept), in order. Cached: a sweep's runs mostly have
    the same length, and each one is a Python loop over n."""
    if n <= size:
        return tuple(range(n))
    import random

    rng = random.Random(0)
    kept = list(range(size))
    for i in range(size, n):
        r = rng.randint(0, i)
        if r < size:
            kept.pop(r)
            kept.append(i)
        else:
            kept[-1] = i
    return tuple(kept)


def _python_slice(n: int, start: int, size: int) -> slice:
    return slice(*slice(start, start + size).indices(n))


def _hparams_to_include(col_params) -> set[str] | None:
    if not any(cp.HasField("include_in_result") for cp in col_params):
        return None
    return {cp.hparam for cp in col_params
            if cp.WhichOneof("name") == "hparam" and (not cp.HasField("include_in_result") or cp.include_in_result)}


def _drop_non_finite_choices(exp: api_pb2.Experiment) -> None:
    """NaN and infinities in a written discrete domain cannot be JSON values
    (protobuf refuses them; TensorBoard's route fails): dropped, as the
    sessions' own non-finite values are."""
    for info in exp.hparam_infos:
        values = info.domain_discrete.values
        for i in reversed(range(len(values))):
            if _non_finite(values[i]):
                del values[i]


def _non_finite(v: struct_pb2.Value) -> bool:
    """A NaN or infinite number, which JSON cannot carry."""
    return v.WhichOneof("kind") == "number_value" and not math.isfinite(v.number_value)


def format_value(value) -> str:
    """An hparam or metric value as the table, filters and axes show it (whole
    floats without a decimal point, others to 6 significant digits)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
            return str(int(value))
        return f"{value:.6g}"
    return str(value)


def _hparam_info(name: str, values: list[struct_pb2.Value]) -> api_pb2.HParamInfo | None:
    kinds = {"number_value": api_pb2.DATA_TYPE_FLOAT64, "string_value": api_pb2.DATA_TYPE_STRING,
             "bool_value": api_pb2.DATA_TYPE_BOOL}
    typed = [v for v in values if v.WhichOneof("kind") in kinds]
    if not typed:
        return None
    types = {kinds[v.WhichOneof("kind")] for v in typed}  # type: ignore[index]  # typed: kinds in `kinds`
    dtype = kinds[typed[0].WhichOneof("kind")] if len(types) == 1 else api_pb2.DATA_TYPE_STRING  # type: ignore[index]
    info = api_pb2.HParamInfo(name=name, type=dtype)
    if dtype == api_pb2.DATA_TYPE_FLOAT64:
        numbers = sorted(v.number_value for v in typed)
        info.domain_interval.min_value, info.domain_interval.max_value = numbers[0], numbers[-1]
        info.differs = len(set(numbers)) > 1
    elif dtype == api_pb2.DATA_TYPE_BOOL:
        domain = sorted({v.bool_value for v in typed})
        info.domain_discrete.extend(domain)
        info.differs = len(domain) > 1
    else:
        # TensorBoard lists a set (its order changes between processes); Profscope sorts it.
        texts = sorted({_as_string(v) for v in typed
                        if not _non_finite(v)})
        info.domain_discrete.extend(texts)
        info.differs = len(texts) > 1
    return info


def _as_string(v: struct_pb2.Value) -> str:
    kind = v.WhichOneof("kind")
    if kind == "string_value":
        return v.string_value
    if kind == "bool_value":
        return "true" if v.bool_value else "false"
    return json_format.MessageToJson(v)


# ---------------------------------------------------------------- groups as columns


@dataclass
class Column:
    """One hparam or metric over the groups."""

    kind: np.ndarray  # int8: MISSING, NUMBER, STRING, BOOL, OTHER
    number: np.ndarray  # float64 value of numbers and bools (bools 0/1), NaN otherwise
    text: np.ndarray  # object: the string of STRING values, "" otherwise
    values: list  # the Python values (None when missing)

    @cached_property
    def text_rank(self) -> np.ndarray:
        """Rank of each string in code point order (0 for non-strings)."""
        strings = np.array([t if k == STRING else "" for t, k in zip(self.text, self.kind)], dtype=str)
        _, inverse = np.unique(strings, return_inverse=True)
        return inverse.astype(np.int64)


def _column(values: list) -> Column:
    kind = np.array([_kind(v) for v in values], np.int8)
    number = np.array([float(v) if k in (NUMBER, BOOL) else np.nan for v, k in zip(values, kind)], np.float64)
    text = np.array([v if k == STRING else "" for v, k in zip(values, kind)], dtype=object)
    return Column(kind, number, text, values)


class GroupTable:
    """Session groups (in creation order) with aggregated metrics, as columns."""

    def __init__(self, sessions: list[Session], metric_infos, aggregation: int, aggregation_metric: tuple[str, str]):
        groups: dict[str, list[Session]] = {}
        for s in sessions:
            groups.setdefault(s.group, []).append(s)
        self.names = list(groups)
        self.sessions = [sorted(g, key=lambda s: s.name) for g in groups.values()]
        # Hparams and monitor URL come from the first session added (run order).
        self.hparams = [g[0].hparams for g in groups.values()]
        self.monitor_url = [g[0].monitor_url for g in groups.values()]
        self.metric_names = [(m.name.group, m.name.tag) for m in metric_infos]
        self.metrics = [_aggregate(g, aggregation, aggregation_metric) for g in self.sessions]
        self.hparam_names = sorted({k for h in self.hparams for k in h})
        self.name_order = np.array(sorted(range(len(self.names)), key=self.names.__getitem__), np.int64)
        self._metric_columns: dict[tuple[str, str], Column] = {}

    def __len__(self) -> int:
        return len(self.names)

    @cached_property
    def _hparam_columns(self) -> dict[str, Column]:
        return {name: _column([h.get(name) for h in self.hparams]) for name in self.hparam_names}

    def hparam_column(self, name: str) -> Column:
        return self._hparam_columns.get(name) or _column([None] * len(self))

    def metric_column(self, group: str, tag: str) -> Column:
        key = (group, tag)
        if key not in self._metric_columns:
            self._metric_columns[key] = _column([next((m.value for m in ms if (m.group, m.tag) == key), None)
                                                 for ms in self.metrics])
        return self._metric_columns[key]

    def column_of(self, kind: str, key) -> Column:
        """("hparam", name) or ("metric", (group, tag))."""
        return self.hparam_column(key) if kind == "hparam" else self.metric_column(*key)

    def column(self, cp) -> Column:
        if cp.WhichOneof("name") == "hparam":
            return self.hparam_column(cp.hparam)
        return self.metric_column(cp.metric.group, cp.metric.tag)

    # ------------------------------------------------------------ filter and sort

    def select(self, col_params) -> np.ndarray:
        """Group indices passing every filter, in the requested order."""
        keep = np.ones(len(self), bool)
        errors = []  # (first group index, col_param position, message) of type errors
        for k, cp in enumerate(col_params):
            passed, bad, message = _filter(self.column(cp), cp)
            reached = keep & bad  # a group errors where it reaches this filter with a wrong type
            if reached.any():
                g = int(np.flatnonzero(reached)[0])
                assert message is not None  # a filter that can fail has a message
                errors.append((g, k, message(g)))
            keep &= passed
        if errors:
            raise HParamsError(min(errors)[2])
        order = self.name_order[keep[self.name_order]]
        for cp in reversed(list(col_params)):
            if cp.order in (api_pb2.ORDER_ASC, api_pb2.ORDER_DESC):
                order = _sorted(order, self.column(cp), cp)
            elif cp.order != api_pb2.ORDER_UNSPECIFIED:
                raise HParamsError(f"Unknown col_param.order given: {cp}")
        return order

    # ------------------------------------------------------------ response

    def group_proto(self, g: int, include: set[str] | None) -> api_pb2.SessionGroup:
        out = api_pb2.SessionGroup(name=self.names[g], monitor_url=self.monitor_url[g])
        for k, v in self.hparams[g].items():
            if include is None or k in include:
                out.hparams[k].CopyFrom(_value_proto(v))
        out.metric_values.extend(_metric_proto(m) for m in self.metrics[g])
        for s in self.sessions[g]:
            out.sessions.add(name=s.name, start_time_secs=s.start_time, end_time_secs=s.end_time, status=s.status,
                             model_uri=s.model_uri, monitor_url=s.monitor_url,
                             metric_values=[_metric_proto(m) for m in s.metrics])
        return out


def _value_proto(v) -> struct_pb2.Value:
    out = struct_pb2.Value()
    if isinstance(v, (list, dict)) or v is None:
        json_format.ParseDict(v, out)  # type: ignore[arg-type]  # a Value takes any JSON value
    elif isinstance(v, bool):
        out.bool_value = v
    elif isinstance(v, float):
        out.number_value = v
    else:
        out.string_value = v
    return out


def _metric_proto(m: MetricValue) -> api_pb2.MetricValue:
    # TensorBoard fails (HTTP 500) on steps beyond int32; Profscope clamps them.
    step = max(min(m.step, MAX_INT32), -MAX_INT32 - 1)
    return api_pb2.MetricValue(name=api_pb2.MetricName(group=m.group, tag=m.tag), value=m.value,
                               training_step=step, wall_time_secs=m.wall_time)


def _aggregate(sessions: list[Session], aggregation: int, metric: tuple[str, str]) -> list[MetricValue]:
    """A group's metric values (sessions in name order)."""
    if aggregation in (api_pb2.AGGREGATION_MEDIAN, api_pb2.AGGREGATION_MIN, api_pb2.AGGREGATION_MAX):
        having = [(m.value, s) for s in sessions for m in s.metrics if (m.group, m.tag) == metric]
        # TensorBoard fails (HTTP 500) when no session of a group has the metric;
        # Profscope averages that group instead.
        if having:
            if aggregation == api_pb2.AGGREGATION_MEDIAN:
                representative = sorted(having, key=lambda x: x[0])[(len(having) - 1) // 2][1]
            elif aggregation == api_pb2.AGGREGATION_MIN:
                representative = min(having, key=lambda x: x[0])[1]
            else:
                representative = max(having, key=lambda x: x[0])[1]
            return list(representative.metrics)
    stats: dict[tuple[str, str], list] = {}
    for s in sessions:
        for m in s.metrics:
            st = stats.setdefault((m.group, m.tag), [0.0, 0, 0, 0.0])
            st[0] += m.value
            st[1] += 1
            st[2] += m.step
            st[3] += m.wall_time
    return [MetricValue(g, t, float(total) / count, steps // count, wall / count)
            for (g, t), (total, count, steps, wall) in stats.items()]


def _filter(col: Column, cp) -> tuple[np.ndarray, np.ndarray, Callable[[int], str] | None]:
    """(passes, wrong type for this filter, message for a group) of one col_param."""
    include_missing = not cp.exclude_missing_values
    missing = col.kind == MISSING
    which = cp.WhichOneof("filter")
    present = ~missing
    no_error = np.zeros(len(col.kind), bool)
    if which == "filter_regexp":
        pattern = compile_regexp(cp.filter_regexp)
        bad = present & (col.kind != STRING)
        matches = np.zeros(len(col.kind), bool)
        strings = np.flatnonzero(col.kind == STRING)
        found = {}
        for i in strings:
            text = col.text[i]
            if text not in found:
                found[text] = pattern.search(text) is not None
            matches[i] = found[text]
        message = lambda g: (f"Cannot use a regexp filter for a value of type {_type_name(col.values[g])}. "
                             f"Value: {col.values[g]}")
        return np.where(missing, include_missing, matches), bad, message
    if which == "filter_interval":
        lo, hi = cp.filter_interval.min_value, cp.filter_interval.max_value
        numeric = (col.kind == NUMBER) | (col.kind == BOOL)
        bad = present & ~numeric
        with np.errstate(invalid="ignore"):
            inside = numeric & (lo <= col.number) & (col.number <= hi)
        message = lambda g: (f"Cannot use an interval filter for a value of type: {_type_name(col.values[g])}, "
                             f"Value: {col.values[g]}")
        return np.where(missing, include_missing, inside), bad, message
    if which == "filter_discrete":
        allowed = [_python_value(v) for v in cp.filter_discrete.values]
        numbers = {float(a) for a in allowed if isinstance(a, (bool, float)) and a == a}
        texts = {a for a in allowed if isinstance(a, str)}
        numeric = (col.kind == NUMBER) | (col.kind == BOOL)
        member = (numeric & np.isin(col.number, list(numbers))) | (
            (col.kind == STRING) & np.array([t in texts for t in col.text], bool))
        return np.where(missing, include_missing, member), no_error, None
    return np.where(missing, include_missing, True), no_error, None


def compile_regexp(pattern: str):
    """A linear-time (RE2) pattern (core.guards); an invalid one raises
    HParamsError, as TensorBoard's plugin refuses it."""
    return guards.compile_regexp(pattern, HParamsError)


def _type_name(v) -> str:
    return f"<class '{type(v).__name__}'>"


def _sorted(order: np.ndarray, col: Column, cp) -> np.ndarray:
    """One stable sort of TensorBoard's: missing values last unless
    missing_values_first, ties keeping the previous order (also descending)."""
    kind = col.kind[order]
    missing = kind == MISSING
    missing_key = ~missing if cp.missing_values_first else missing  # False sorts first
    numeric = (kind == NUMBER) | (kind == BOOL)
    number = col.number[order]
    if (numeric & np.isnan(number)).any():
        return _python_sorted(order, col, cp)
    # Mixed strings and numbers make TensorBoard fail (HTTP 500); Profscope
    # puts numbers and booleans before strings.
    text_rank = col.text_rank[order] if (kind == STRING).any() else np.zeros(len(order), np.int64)
    is_text = (kind == STRING) | (kind == OTHER)
    value = np.where(numeric, number, 0.0)
    if cp.order == api_pb2.ORDER_ASC:
        keys = (text_rank, value, is_text, missing_key)
    else:  # descending values, missing ones placed as for ascending, ties in their order
        keys = (-text_rank, -value, ~is_text, missing_key)
    return order[np.lexsort(keys)]


def _python_sorted(order: np.ndarray, col: Column, cp) -> np.ndarray:
    """Python's own sort, for columns holding NaN (which compares false both
    ways: only the same algorithm gives the same order)."""
    values = [col.values[g] for g in order.tolist()]
    if cp.order == api_pb2.ORDER_ASC:
        key = (lambda i: (values[i] is not None, values[i])) if cp.missing_values_first else (
            lambda i: (values[i] is None, values[i]))
        idx = sorted(range(len(values)), key=_safe(key))
    else:
        key = (lambda i: (values[i] is None, values[i])) if cp.missing_values_first else (
            lambda i: (values[i] is not None, values[i]))
        idx = sorted(range(len(values)), key=_safe(key), reverse=True)
    return order[np.array(idx, np.int64)]


def _safe(key):
    """Keys of one comparable type: missing values never meet numbers, and
    strings sort after numbers (TensorBoard fails on that mix)."""
    def wrapped(i):
        flag, v = key(i)
        if v is None:
            return (flag, 0, 0.0)
        if isinstance(v, str):
            return (flag, 1, v)
        return (flag, 0, float(v) if isinstance(v, bool) else v)
    return wrapped


# ---------------------------------------------------------------- JSON


def to_json(message) -> dict:
    """proto3 JSON as TensorBoard's routes send it: camelCase, every field printed."""
    return json_format.MessageToDict(message, always_print_fields_with_no_presence=True)


def cleanse(rows: list[list]) -> list[list]:
    """Metric evals as TensorBoard's JSON writes them: NaN and infinities as strings."""
    def one(x):
        if isinstance(x, float) and not math.isfinite(x):
            return "NaN" if x != x else ("Infinity" if x > 0 else "-Infinity")
        return x
    return [[one(x) for x in row] for row in rows]


def request_from_json(text: str | bytes | dict, message_type):
    """A request in proto3 JSON, refused as TensorBoard refuses it."""
    message = message_type()
    try:
        if isinstance(text, dict):
            json_format.ParseDict(text, message)
        else:
            json_format.Parse(text, message)
    except (json_format.ParseError, AttributeError, TypeError, ValueError) as e:
        raise HParamsError(f"Expected a JSON-formatted request data of type: {message_type.__name__}, "
                           f"but got {text!r} ({e})") from None
    return message
