"""Per-column scales of the HParams views: transforms, inverses, the log
default and its fallback, quantiles as TensorBoard cuts them, and the
sliders and axes that use them."""

import math

import numpy as np
import pytest
from conftest import DATA

from profscope.models.hparams.experiment import _column
from profscope.protos import api_pb2
from profscope.widgets.hparams.filters import ColumnFilter
from profscope.widgets.hparams.scales import LINEAR, LOG, QUANTILE, Axis, default_scale, make_scale

API_CONFIG = DATA / "hparams" / "api_config"


def test_log_is_the_default_for_positive_hparams_spanning_two_decades():
    assert default_scale(np.array([1e-4, 3e-3, 1e-1]), is_hparam=True) == LOG
    assert default_scale(np.array([1e-3, 1e-1, np.nan]), is_hparam=True) == LOG  # exactly two decades
    assert default_scale(np.array([1e-3, 5e-2]), is_hparam=True) == LINEAR  # 1.7 decades
    assert default_scale(np.array([0.0, 1e-3, 1e-1]), is_hparam=True) == LINEAR  # a zero
    assert default_scale(np.array([1e-4, 1e-1]), is_hparam=False) == LINEAR  # metrics stay linear
    assert default_scale(np.array([np.nan]), is_hparam=True) == LINEAR


def test_linear_scale_maps_the_extent_to_0_1_and_back_exactly_at_the_ends():
    s = make_scale(LINEAR, np.array([2.0, 4.0, np.nan, 12.0]))
    assert s.kind == LINEAR and (s.lo, s.hi) == (2.0, 12.0)
    np.testing.assert_allclose(s.unit([2.0, 7.0, 12.0, 20.0]), [0.0, 0.5, 1.0, 1.0])
    assert np.isnan(s.unit([np.nan]))[0]
    assert s.interval(0.0, 1.0) == (2.0, 12.0)
    assert s.interval(0.2, 0.5) == pytest.approx((4.0, 7.0))
    one = make_scale(LINEAR, np.array([3.0, 3.0]))  # a single value sits in the middle, as in TensorBoard
    assert one.unit([3.0])[0] == pytest.approx(0.5)


def test_log_scale_gives_each_decade_the_same_room():
    s = make_scale(LOG, np.array([1e-4, 2e-3, 1e-1]))
    assert s.kind == LOG and not s.note
    np.testing.assert_allclose(s.unit([1e-4, 1e-3, 1e-2, 1e-1]), [0.0, 1 / 3, 2 / 3, 1.0])
    lo, hi = s.interval(1 / 3, 2 / 3)
    assert lo == pytest.approx(1e-3) and hi == pytest.approx(1e-2)
    assert s.interval(0.0, 1.0) == (1e-4, 1e-1)  # the data's ends exactly, not 10 ** log10(x)
    texts = [text for _, text in s.ticks(6)]
    assert texts == ["0.0001", "0.001", "0.01", "0.1"]


@pytest.mark.parametrize("values", [[0.0, 1.0, 10.0], [-5.0, 1.0], [-3.0, -1.0]])
def test_log_over_values_at_or_below_zero_falls_back_to_linear_with_a_note(values):
    s = make_scale(LOG, np.array(values))
    assert s.kind == LINEAR and s.requested == LOG
    assert "above 0" in s.note and "linear" in s.note
    np.testing.assert_allclose(s.unit([min(values), max(values)]), [0.0, 1.0])


def test_quantile_scale_cuts_the_distinct_values_as_tensorboard():
    # Distinct values [1, 2, 4, 8, 100] (duplicates count once); the cut at p
    # interpolates between order statistics at (n - 1) * p.
    s = make_scale(QUANTILE, np.array([1.0, 1.0, 2.0, 4.0, 8.0, 100.0, 100.0]))
    assert len(s.cuts) == 19
    assert s.cuts[0] == pytest.approx(1.2)  # p = 0.05: 1 + 0.2 * (2 - 1)
    assert s.cuts[9] == pytest.approx(4.0)  # p = 0.5: the middle value
    assert s.cuts[18] == pytest.approx(81.6)  # p = 0.95: 8 + 0.8 * (100 - 8)
    # A value goes to the level of the last cut at or below it, 20 levels on [0, 1].
    assert s.unit([1.0])[0] == 0.0 and s.unit([100.0])[0] == 1.0
    assert s.unit([4.0])[0] == pytest.approx(10 / 19)  # cuts 1.2 .. 4.0 (the tenth) are at or below 4


def test_quantile_brush_covers_whole_levels_as_a_closed_interval():
    values = np.arange(100.0)
    s = make_scale(QUANTILE, values)  # cuts at 4.95 * i
    lo, hi = s.interval(1 / 19, 2 / 19)  # levels 1 and 2: [4.95, 14.85)
    assert lo == pytest.approx(4.95) and hi < 14.85 and hi == pytest.approx(14.85)
    inside = values[(values >= lo) & (values <= hi)]
    assert inside.tolist() == list(range(5, 15))
    assert s.interval(0.0, 1.0) == (0.0, 99.0)
    lo, hi = s.interval(0.51, 0.52)  # between two levels: the nearer level
    assert s.unit([lo])[0] == pytest.approx(10 / 19)


def test_axes_place_strings_and_booleans_as_categories():
    column = _column(["adam", "sgd", None, "adam"])
    a = Axis("optimizer", column, np.arange(4))
    assert a.categorical and a.labels == [(0.0, "adam"), (1.0, "sgd")]
    assert a.pos[:2].tolist() == [0.0, 1.0] and math.isnan(a.pos[2])
    assert a.selects("sgd", 0.6, 1.0) and not a.selects("adam", 0.6, 1.0)
    flags = Axis("bn", _column([True, False]), np.arange(2))
    assert flags.categorical and [t for _, t in flags.labels] == ["false", "true"]
    lr = Axis("lr", _column([1e-4, 1e-2, 1e-3]), np.array([2]), scale=LOG)
    assert lr.scale.kind == LOG and lr.pos.tolist() == pytest.approx([0.5])  # domain from every group
    assert lr.selects(1e-3, 0.4, 0.6) and not lr.selects(1e-2, 0.4, 0.6)


def test_a_range_slider_moves_along_its_scale_and_keeps_typed_values(qtbot):
    f = ColumnFilter("lr", _column([1e-4, 1e-3, 1e-2, 1e-1, 3e-2, 5e-4, 2e-4]), scale=LOG)
    qtbot.addWidget(f)
    assert f.kind == "range" and f.control.scale.kind == LOG
    f.control.slider.setValue((1 / 3, 2 / 3))  # the middle decade
    lo, hi = f.control.value()
    assert lo == pytest.approx(1e-3) and hi == pytest.approx(1e-2)
    f.control.setValue((2e-4, 1e-1))  # typed: exact, and the top at its end means no bound
    cp = api_pb2.ColParams(hparam="lr")
    f.apply(cp)
    assert cp.filter_interval.min_value == 2e-4 and cp.filter_interval.max_value == math.inf
    assert f.control.slider.value()[0] == pytest.approx(math.log10(2) / 3)
    f.set_scale(LINEAR)  # another scale moves the handles, not the bounds
    assert f.control.value() == (2e-4, 1e-1)
    assert f.control.slider.value()[0] == pytest.approx((2e-4 - 1e-4) / (1e-1 - 1e-4))
    assert f.control.low.text() == "0.0002"  # six significant digits, not fixed decimals


def test_the_view_uses_log_for_the_learning_rate_and_notes_a_fallback(open_hparams_view):
    v = open_hparams_view(API_CONFIG)
    lr, dropout = ("hparam", "lr"), ("hparam", "dropout")
    assert v.scale_of(lr) == LOG and v.scale_of(dropout) == LINEAR and v.scale_of(("hparam", "units")) == LINEAR
    assert v.filters.filters[lr].control.scale.kind == LOG
    v.center.setCurrentIndex(1)
    axes = {a.title: a for a in v.parallel.axes}
    assert axes["lr"].scale.kind == LOG and not v.scale_note.text()
    assert v.plot_controls.isVisibleTo(v)
    v.set_scale(("metric", ("train", "loss")), QUANTILE)
    v.set_scale(dropout, LOG)  # dropout holds 0: linear, and the view says so
    axes = {a.title: a for a in v.parallel.axes}
    assert axes["train/loss"].scale.kind == QUANTILE and axes["dropout"].scale.kind == LINEAR
    assert "dropout: log scale needs values above 0" in v.scale_note.text()
    menu = {a.text(): a for a in v.scales_menu.actions()}
    assert "lr" in menu and "optimizer" not in menu  # strings have no scale
    checked = [a.text() for a in menu["dropout"].menu().actions() if a.isChecked()]
    assert checked == ["Logarithmic"]
