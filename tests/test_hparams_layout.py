"""Filters that follow new sessions on reload, and the HParams layout kept
per log dir across a reopen of the window."""

import shutil

import pytest
from conftest import DATA
from PySide6.QtCore import QSettings

from profscope.models.hparams.experiment import load_hparams
from profscope.widgets.hparams.layout import item_of, item_text, settings_key
from profscope.widgets.hparams.scales import LINEAR, QUANTILE

API_CONFIG = DATA / "hparams" / "api_config"
KERAS = DATA / "hparams" / "keras_callback"


def _add_session(logdir, name: str, hparams: dict, accuracy: float) -> None:
    """A session written with TensorBoard's own summaries and writer."""
    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams import summary_v2 as hp
    from tensorboard.plugins.scalar import summary as scalar_summary
    from test_hparams import _write_events

    _write_events(logdir / name, [event_pb2.Event(wall_time=2e9, summary=hp.hparams_pb(hparams, trial_id=name)),
                                  event_pb2.Event(step=4, wall_time=2e9 + 4,
                                                  summary=scalar_summary.scalar_pb("accuracy", accuracy))], version=2)


def shown_names(v) -> list[str]:
    return [v.model.table.names[v.model.group_at(r)] for r in range(v.model.rowCount())]


def test_filters_grow_with_new_sessions_and_keep_what_the_user_set(open_hparams_view, tmp_path):
    logdir = tmp_path / "sweep"
    shutil.copytree(API_CONFIG, logdir)
    v = open_hparams_view(logdir)
    optimizer, accuracy, lr = (v.filters.filters[k] for k in (("hparam", "optimizer"), ("metric", ("", "accuracy")),
                                                                ("hparam", "lr")))
    for box, value in optimizer.control:
        box.setChecked(value != "sgd")
    accuracy.control.setValue((0.4, accuracy.full_range[1]))  # a lower bound; the top left at the end
    lr_column = v.columns.items.index(("hparam", "lr"))
    v.sort_by([(lr_column, 2)])  # descending
    v.refresh()
    before = shown_names(v)
    _add_session(logdir, "s12", {"optimizer": "adagrad", "lr": 0.5, "units": 16}, accuracy=0.9)
    v.set_data(load_hparams(logdir))  # what watching or F5 does
    optimizer, accuracy, lr = (v.filters.filters[k] for k in (("hparam", "optimizer"), ("metric", ("", "accuracy")),
                                                                ("hparam", "lr")))
    boxes = {value: box.isChecked() for box, value in optimizer.control}
    assert boxes == {"adagrad": True, "adam": True, "rmsprop": True, "sgd": False}  # new value in, sgd still out
    assert accuracy.full_range[1] == pytest.approx(0.9) and accuracy.control.value()[0] == pytest.approx(0.4)
    assert lr.full_range[1] == 0.5 and not lr.is_active()
    assert v.sort_keys == [(lr_column, 2)]
    names = shown_names(v)
    assert names[0] == "s12" and names[1:] == before  # the new group passes; the order is still by lr


def test_a_reload_keeps_the_selection_and_the_columns(open_hparams_view, tmp_path):
    logdir = tmp_path / "sweep"
    shutil.copytree(API_CONFIG, logdir)
    v = open_hparams_view(logdir)
    v.select_group(v.model.table.names.index("trial_b"))
    seed = v.columns.items.index(("hparam", "seed"))
    v.set_column_visible(seed, False)
    v.set_scale(("hparam", "units"), QUANTILE)
    _add_session(logdir, "s12", {"optimizer": "adam"}, accuracy=0.3)
    v.set_data(load_hparams(logdir))
    assert v.selected == (["trial_b"], []) and {c.session for c in v.curves.curves} == {"s03", "s04"}
    assert v.table.isColumnHidden(v.columns.items.index(("hparam", "seed")))
    assert v.filters.filters[("hparam", "units")].control is not None and v.scale_of(("hparam", "units")) == QUANTILE


def test_layout_state_names_columns_and_survives_damage(open_hparams_view):
    v = open_hparams_view(API_CONFIG)
    assert item_of(item_text(("metric", ("train", "loss")))) == ("metric", ("train", "loss"))
    state = v.layout_state()
    assert item_of(state["order"][0]) == ("name", None) and state["scales"] == {}
    order = [t for t in state["order"] if item_of(t) != ("hparam", "lr")]
    order[1:1] = ["not json", '["hparam", "lr"]']
    v.set_data(load_hparams(API_CONFIG), {"order": order, "widths": {"[1": 5}, "scales": {'["hparam", "lr"]': "cubic"},
                                          "color": "??", "smoothing": "x", "hidden": 3})
    header = v.table.header()
    assert header.logicalIndex(1) == v.columns.items.index(("hparam", "lr"))  # what could be read was used
    assert v.scale_of(("hparam", "lr")) != "cubic"


def _window(tmp_path, qtbot):
    from profscope.viewer.window import MainWindow

    w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    qtbot.addWidget(w)
    return w


def _open(w, qtbot, path) -> None:
    with qtbot.waitSignal(w.runner.finished, timeout=20000):
        w.open_path(str(path))


def _stop(w) -> None:
    for runner in (w.runner, w.hparams_runner, w.curves_runner):
        runner.cancel()
        assert runner.wait(10000)


def test_the_layout_comes_back_when_the_log_dir_is_opened_again(tmp_path, qtbot):
    w = _window(tmp_path, qtbot)
    try:
        _open(w, qtbot, API_CONFIG)
        v = w.hparams_view
        items = v.columns.items
        lr, seed, optimizer = (items.index(("hparam", h)) for h in ("lr", "seed", "optimizer"))
        header = v.table.header()
        header.moveSection(header.visualIndex(lr), 1)  # lr right after the group name
        v.set_column_visible(seed, False)
        header.resizeSection(optimizer, 157)
        v.set_scale(("metric", ("train", "loss")), QUANTILE)
        v.set_scale(("hparam", "lr"), LINEAR)  # lr's default is log: the choice is remembered too
        v.set_color_metric(("validation", "loss"))
        v.curves.set_weight(0.85)
        v.center.setCurrentIndex(2)
        v._build_scatter_menu()
        next(a for a in v.scatter_menu.actions() if a.text() == "units").setChecked(True)
        w.close()
    finally:
        _stop(w)
    w = _window(tmp_path, qtbot)
    try:
        _open(w, qtbot, KERAS)  # another log dir: its own (default) layout
        assert not any(w.hparams_view.table.isColumnHidden(c) for c in range(len(w.hparams_view.columns)))
        _open(w, qtbot, API_CONFIG)
        v = w.hparams_view
        items = v.columns.items
        lr, seed, optimizer = (items.index(("hparam", h)) for h in ("lr", "seed", "optimizer"))
        header = v.table.header()
        assert header.visualIndex(lr) == 1 and v.table.isColumnHidden(seed)
        assert header.sectionSize(optimizer) == 157
        assert v.scale_of(("metric", ("train", "loss"))) == QUANTILE and v.scale_of(("hparam", "lr")) == LINEAR
        assert v.filters.filters[("metric", ("train", "loss"))].control.scale.kind == QUANTILE
        assert v.color_box.currentData() == ("validation", "loss") and v.curves.weight() == pytest.approx(0.85)
        v.center.setCurrentIndex(2)
        assert "units" in [a.title for a in v.scatter.columns]
        assert [a.title for a in v.parallel.axes][:1] == []  # the parallel tab is not drawn until shown
        v.center.setCurrentIndex(1)
        assert [a.title for a in v.parallel.axes][0] == "lr"  # the plots follow the table's order
        assert w.settings.contains(settings_key(str(API_CONFIG)))
    finally:
        _stop(w)
