"""Training curves of HParams sessions: a session's scalar series for
chosen metrics, read from its runs on disk (fresh while a sweep runs), and
TensorBoard's smoothing of them.

A metric (group, tag) of a session lives in run `<session>/<group>` (the
session's own run when the group is empty), as the HParams API reads it.
Series longer than 1,000 points keep the points TensorBoard's reservoir
keeps, so that a curve and its smoothing match TensorBoard's charts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path

import numpy as np

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.hparams.experiment import reservoir_indices
from profscope.models.hparams.logdir import read_logdir


@dataclass
class Curve:
    """One metric of one session, in TensorBoard's order of points."""

    session: str
    group: str  # the metric's run group ("" for the session's own run)
    tag: str
    step: np.ndarray  # int64
    wall_time: np.ndarray  # float64, seconds since the epoch
    value: np.ndarray  # float64

    def __len__(self) -> int:
        return len(self.step)


def read_session_scalars(logdir, session: str, metrics: list[tuple[str, str]],
                         task: TaskState | None = None) -> dict[tuple[str, str], Curve]:
    """The scalar series of a session's metrics (group, tag) that it has,
    read with the log dir reader from the session's folder (its own run and
    the runs below it). `session` is a run name the log dir scan listed."""
    root = Path(logdir) / session if session != "." else Path(logdir)
    if not root.is_dir():
        raise ProfileError(f"{root}: the session's folder is gone")
    runs = read_logdir(root, task).runs  # named relative to the session's folder
    out = {}
    for group, tag in metrics:
        run = runs.get(_relative_run(group))
        series = run.scalars.get(tag) if run is not None else None
        if series is not None and len(series):
            keep = np.asarray(reservoir_indices(len(series)), np.int64)
            out[(group, tag)] = Curve(session, group, tag, series.step[keep].astype(np.int64),
                                      series.wall_time[keep].astype(np.float64), series.value[keep].astype(np.float64))
    return out


def _relative_run(group: str) -> str:
    """The run of a metric group below its session's folder ("." for the session's own)."""
    run = os.path.normpath(group) if group else "."
    return run.replace(os.sep, "/")


def load_curves(logdir, sessions: list[str], metrics: list[tuple[str, str]],
                task: TaskState | None = None) -> list[Curve]:
    """Every (session, metric) series the sessions have, sessions in the
    order given (a worker's job: it reads files)."""
    task = task or TaskState()
    curves: list[Curve] = []
    for i, session in enumerate(sessions):
        task.raise_if_cancelled()
        curves += read_session_scalars(logdir, session, metrics).values()  # in the metrics' order
        task.report((i + 1) / max(len(sessions), 1), f"Reading curves ({i + 1:,} of {len(sessions):,} sessions)")
    return curves


def smooth(values: np.ndarray, weight: float) -> np.ndarray:
    """TensorBoard's scalar smoothing: an exponential moving average from 0,
    divided by 1 - weight**k after the k-th finite value (the debiasing, so
    early points are not pulled towards 0). Non-finite values stay as they
    are and do not count; a constant series is returned unchanged."""
    values = np.asarray(values, np.float64)
    if not len(values) or bool(np.all(values == values[0])):
        return values.copy()
    finite = np.isfinite(values)
    x = values[finite]
    keep = 1.0 - weight
    # A first-order recurrence, point by point (a Python call each: series hold 1,000 points at most).
    ema = np.fromiter(accumulate(x.tolist(), lambda last, v: last * weight + keep * v, initial=0.0),
                      np.float64, len(x) + 1)[1:]
    debias = 1.0 - weight ** np.arange(1, len(x) + 1, dtype=np.float64) if weight != 1 else np.ones(len(x))
    out = values.copy()
    out[finite] = ema / debias
    return out


def curves_job(data, sessions: list[str], metrics: list[tuple[str, str]]):
    """The worker job reading the sessions' curves from an HParamsData's log
    dir: a function of the job's TaskState (HParamsView.request_curves)."""
    path = data.logdir.path
    return lambda task: load_curves(path, sessions, metrics, task)


def read_curves_now(data, sessions: list[str], metrics: list[tuple[str, str]], on_curves) -> None:
    """HParamsView.request_curves without a worker (tests, benchmarks): the
    curves read at once."""
    on_curves(load_curves(data.logdir.path, sessions, metrics))
