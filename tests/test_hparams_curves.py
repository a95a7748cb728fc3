"""Training curves of HParams sessions: reading a session's scalars from
its runs, TensorBoard's smoothing, and the curves panel of the selection."""

import math
import random

import numpy as np
import pytest
from conftest import DATA

from profscope.models.core.task import ProfileError
from profscope.models.hparams.curves import load_curves, read_session_scalars, smooth
from profscope.models.hparams.experiment import load_hparams

API_CONFIG = DATA / "hparams" / "api_config"


# ---------------------------------------------------------------- smoothing


def test_smoothing_of_a_short_series_by_hand():
    # weight 0.5: last = 0.5 * last + 0.5 * x from 0, divided by 1 - 0.5 ** k.
    #   k=1: 0.5 / 0.5 = 1;  k=2: (0.25 + 1) / 0.75 = 5/3;  k=3: (0.625 + 1.5) / 0.875 = 17/7
    assert smooth(np.array([1.0, 2.0, 3.0]), 0.5) == pytest.approx([1.0, 5 / 3, 17 / 7], rel=1e-15)
    # weight 0.6 (TensorBoard's default) on [10, 0]: 4 / 0.4 = 10, then 2.4 / 0.64 = 3.75
    assert smooth(np.array([10.0, 0.0]), 0.6) == pytest.approx([10.0, 3.75], rel=1e-15)


def test_non_finite_values_pass_through_and_do_not_count():
    out = smooth(np.array([1.0, math.nan, 3.0, math.inf]), 0.5)
    assert out[0] == 1.0 and math.isnan(out[1]) and out[3] == math.inf
    assert out[2] == pytest.approx((0.25 + 1.5) / 0.75, rel=1e-15)  # the second finite value: k = 2


def test_constant_series_and_weight_zero_are_unchanged():
    constant = np.full(50, 0.1)
    assert np.array_equal(smooth(constant, 0.99), constant)  # no rounding drift (TensorBoard's #786)
    x = np.array([3.0, -1.0, 7.5])
    assert np.array_equal(smooth(x, 0.0), x)
    assert len(smooth(np.zeros(0), 0.6)) == 0


def _tensorboard_reference(values, weight):
    """TensorBoard's loop, point by point, as its line chart smooths."""
    if all(v == values[0] for v in values):
        return list(values)
    last, count, out = 0.0, 0, []
    for v in values:
        if not math.isfinite(v):
            out.append(v)
            continue
        last = last * weight + (1 - weight) * v
        count += 1
        debias = 1 - math.pow(weight, count) if weight != 1 else 1
        out.append(last / debias)
    return out


@pytest.mark.parametrize("weight", [0.0, 0.25, 0.6, 0.9, 0.999])
def test_smoothing_matches_tensorboards_loop_on_a_long_random_series(weight):
    rng = random.Random(int(weight * 1000))
    values = [rng.gauss(1.0, 0.3) * math.exp(-i / 2000) for i in range(5000)]
    for i in rng.sample(range(5000), 20):
        values[i] = rng.choice([math.nan, math.inf, -math.inf])
    expected = np.array(_tensorboard_reference(values, weight))
    got = smooth(np.array(values), weight)
    assert np.array_equal(np.isnan(got), np.isnan(expected))
    finite = np.isfinite(expected)
    np.testing.assert_allclose(got[finite], expected[finite], rtol=1e-12)
    assert np.array_equal(got[~finite & ~np.isnan(expected)], expected[~finite & ~np.isnan(expected)])


# ---------------------------------------------------------------- reading


def test_a_sessions_scalars_are_its_runs_series():
    data = load_hparams(API_CONFIG)
    metrics = [("", "accuracy"), ("train", "loss"), ("validation", "loss"), ("", "never_logged")]
    curves = read_session_scalars(API_CONFIG, "s08", metrics)
    assert set(curves) == {("", "accuracy"), ("train", "loss"), ("validation", "loss")}
    accuracy = curves[("", "accuracy")]
    memory = data.series("s08", "", "accuracy")
    # Steps written out of order and one written twice stay in file order, as TensorBoard keeps them.
    assert accuracy.step.tolist() == memory.step.tolist() and accuracy.step.tolist() != sorted(accuracy.step.tolist())
    assert np.array_equal(accuracy.value, memory.value) and np.array_equal(accuracy.wall_time, memory.wall_time)
    assert np.array_equal(curves[("train", "loss")].value, data.series("s08", "train", "loss").value)
    assert ("validation", "loss") not in read_session_scalars(API_CONFIG, "s04", metrics)  # it has no validation run


def test_long_series_keep_the_points_tensorboard_keeps(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.scalar import summary as scalar_summary
    from tensorboard.summary.writer.record_writer import RecordWriter
    from tensorboard_hparams import tensorboard_answer

    run = tmp_path / "long"
    run.mkdir()
    with open(run / "events.out.tfevents.1.host", "wb") as f:
        w = RecordWriter(f)
        w.write(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
        for s in range(1500):
            w.write(event_pb2.Event(step=s, wall_time=100.0 + s,
                                    summary=scalar_summary.scalar_pb("loss", 1.0 / (s + 1))).SerializeToString())
    curve = read_session_scalars(tmp_path, "long", [("", "loss")])[("", "loss")]
    status, expected = tensorboard_answer(str(tmp_path), "metric_evals",
                                          {"sessionName": "long", "metricName": {"group": "", "tag": "loss"}})
    assert status == 200 and len(expected) == 1000 == len(curve)
    assert curve.step.tolist() == [row[1] for row in expected]
    assert curve.value.tolist() == pytest.approx([row[2] for row in expected])


def test_load_curves_keeps_the_session_order_and_says_when_a_folder_is_gone(tmp_path):
    curves = load_curves(API_CONFIG, ["s02", "s00"], [("train", "loss"), ("", "accuracy")])
    assert [(c.session, c.group, c.tag) for c in curves] == [
        ("s02", "train", "loss"), ("s02", "", "accuracy"), ("s00", "train", "loss"), ("s00", "", "accuracy")]
    with pytest.raises(ProfileError, match="gone"):
        load_curves(tmp_path, ["s99"], [("", "loss")])


# ---------------------------------------------------------------- the panel


@pytest.fixture
def view(open_hparams_view):
    return open_hparams_view(API_CONFIG)


def _select_groups(view, names):
    from PySide6.QtCore import QItemSelection, QItemSelectionModel

    rows = [r for r in range(view.model.rowCount()) if view.model.table.names[view.model.group_at(r)] in names]
    selection = QItemSelection()
    for r in rows:
        selection.select(view.model.index(r, 0), view.model.index(r, view.model.columnCount() - 1))
    view.table.selectionModel().select(selection, QItemSelectionModel.ClearAndSelect)


def test_selecting_three_groups_shows_a_line_per_session_smoothed(view):
    _select_groups(view, {"trial_a", "trial_b", "trial_c"})
    sessions = [view.sessions_table.item(r, 0).text() for r in range(view.sessions_table.rowCount())]
    assert sessions == ["s00", "s01", "s02", "s03", "s04", "s11"]
    assert "3 groups, 6 sessions" in view.details_title.text()
    panel = view.curves
    accuracy = [(c, raw, line) for c, raw, line in panel._lines if c.tag == "accuracy"]
    assert [c.session for c, _, _ in accuracy] == sessions
    panel.set_weight(0.6)
    for curve, raw, line in accuracy:
        assert np.array_equal(line.yData, smooth(curve.value, 0.6)) and np.array_equal(raw.yData, curve.value)
    panel.set_weight(0.0)  # no smoothing: the raw lines alone
    assert not accuracy[0][2].isVisible()
    assert view.scatter.highlight == {view.model.table.names.index(n) for n in ("trial_a", "trial_b", "trial_c")}


def test_step_axes_tick_whole_steps_only(view):
    _select_groups(view, {"trial_a"})
    for plot in view.curves._plots.values():
        axis = plot.getAxis("bottom")
        for low, high in ((0.0, 1.0), (0.0, 7.0), (3.0, 2500.0)):
            values = [v for _, level in axis.tickValues(low, high, 300) for v in level]
            assert values and all(float(v).is_integer() for v in values), (low, high, values)
        assert [v for _, level in axis.tickValues(0.0, 1.0, 300) for v in level] == [0.0, 1.0]


def test_curves_over_relative_and_wall_time_and_the_hover_text(view):
    from PySide6.QtCore import QPointF

    _select_groups(view, {"trial_a"})
    panel = view.curves
    curve, _, line = panel._lines[0]
    panel.x_box.setCurrentIndex(1)  # relative, in seconds since the first point
    curve, _, line = panel._lines[0]
    assert line.xData == pytest.approx(curve.wall_time - curve.wall_time[0])
    assert panel._plots[(curve.group, curve.tag)].getAxis("bottom").tickStrings([90.0], 1, 30.0) == ["1.5 min"]
    panel.x_box.setCurrentIndex(2)  # wall time, on a date axis
    curve, _, line = panel._lines[0]
    assert line.xData == pytest.approx(curve.wall_time)
    panel.x_box.setCurrentIndex(0)
    curve, _, _ = panel._lines[0]
    plot = panel._plots[(curve.group, curve.tag)]
    plot.getViewBox().autoRange()
    scene = plot.getViewBox().mapViewToScene(QPointF(float(curve.step[2]), float(curve.value[2])))
    hit = panel.nearest(plot, scene)
    assert hit is not None and hit[1] == 2
    text = panel.describe(*hit)
    assert hit[0].session in text and f"step {int(hit[0].step[2])}" in text and "smoothed" in text


def test_a_window_reads_curves_in_its_worker(window, qtbot):
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(API_CONFIG))
    view = window.hparams_view
    qtbot.waitUntil(lambda: bool(view.curves._lines), timeout=20000)  # the first group's, read off the GUI thread
    with qtbot.waitSignal(window.curves_runner.finished, timeout=20000):
        _select_groups(view, {"trial_a", "trial_b"})
    assert {c.session for c, _, _ in view.curves._lines} == {"s00", "s01", "s02", "s03", "s04"}
