"""The HParams scatter plot matrix as a user meets it: its cells, points,
hover, click to select, rectangle brushing (checked against the API), and
the column chooser."""

import math

import numpy as np
import pytest
from conftest import DATA
from PySide6.QtCore import QPoint, QPointF, Qt

from profscope.protos import api_pb2
from profscope.widgets.hparams.scatter_matrix import PAD

API_CONFIG = DATA / "hparams" / "api_config"


@pytest.fixture
def view(open_hparams_view):
    v = open_hparams_view(API_CONFIG)
    v.center.setCurrentIndex(2)
    return v


def titles(axes):
    return [a.title for a in axes]


def shown_names(v) -> list[str]:
    return [v.model.table.names[v.model.group_at(r)] for r in range(v.model.rowCount())]


def test_the_matrix_plots_hparams_across_and_metrics_with_values_down(view):
    m = view.scatter
    assert titles(m.columns) == ["batch_norm", "dropout", "layers", "lr"]  # the first four hparams shown
    assert titles(m.rows) == ["accuracy", "train/loss", "validation/loss"]  # never_logged has no value
    assert len(m.groups) == 9 and view.scatter_button.isVisible()
    m.grab()  # paints: the points' image is made
    xs, ys, groups = m._points[(3, 0)]  # lr x accuracy: groups with both values
    assert sorted(view.model.table.names[g] for g in groups.tolist()) == sorted(
        n for n, lr, acc in zip(view.model.table.names, view.model.table.hparam_column("lr").number,
                                view.model.table.metric_column("", "accuracy").number) if np.isfinite(acc))
    image = m.grab().toImage()
    rect = m.cell_rect(3, 0).toRect()
    colors = {image.pixel(x, y) for x in range(rect.left() + 2, rect.right() - 1, 2)
              for y in range(rect.top() + 2, rect.bottom() - 1, 2)}
    assert len(colors) > 5  # grid, rims and viridis points, not a blank cell


def _drag(qtbot, widget, a: QPointF, b: QPointF) -> None:
    qtbot.mousePress(widget, Qt.LeftButton, pos=a.toPoint())
    qtbot.mouseMove(widget, b.toPoint())
    qtbot.mouseRelease(widget, Qt.LeftButton, pos=b.toPoint())


def _position(rect, pixel: int, horizontal: bool) -> float:
    """An axis position from a pixel, as the cell lays its plot out."""
    if horizontal:
        return (pixel - rect.left() - PAD) / (rect.width() - 2 * PAD)
    return (rect.bottom() - PAD - pixel) / (rect.height() - 2 * PAD)


def test_a_rectangle_filters_both_columns_as_the_api_does(view, qtbot):
    m = view.scatter
    table = view.model.table
    rect = m.cell_rect(3, 0)  # lr (log scale) across, accuracy down
    x0, x1 = round(rect.left() + PAD + 0.4 * (rect.width() - 2 * PAD)), round(rect.right() - 2)
    y0, y1 = round(rect.bottom() - PAD - 0.5 * (rect.height() - 2 * PAD)), round(rect.top() + 2)
    _drag(qtbot, m, QPointF(x0, y0), QPointF(x1, y1))
    # The same intervals worked out here: lr on a log scale over every group's values, accuracy linear.
    lr = table.hparam_column("lr").number
    a, b = math.log10(np.nanmin(lr)), math.log10(np.nanmax(lr))
    lr_lo = 10 ** (a + _position(rect, x0, True) * (b - a))
    acc = table.metric_column("", "accuracy").number
    lo, hi = np.nanmin(acc), np.nanmax(acc)
    acc_lo = lo + _position(rect, y0, False) * (hi - lo)
    request = api_pb2.ListSessionGroupsRequest(allowed_statuses=list(api_pb2.Status.values()), slice_size=1000)
    request.col_params.add(hparam="lr", filter_interval={"min_value": lr_lo, "max_value": math.inf})
    request.col_params.add(metric={"tag": "accuracy"}, filter_interval={"min_value": acc_lo, "max_value": math.inf})
    expected = sorted(g.name for g in view.data.list_session_groups(request).session_groups)
    assert 0 < len(expected) < 9
    assert sorted(shown_names(view)) == expected
    sent = {cp.hparam or cp.metric.tag: cp.filter_interval for cp in view.request().col_params}
    assert sent["lr"].min_value == pytest.approx(lr_lo) and sent["lr"].max_value == math.inf
    assert sent["accuracy"].min_value == pytest.approx(acc_lo) and sent["accuracy"].max_value == math.inf
    assert m.brush is not None and m.brush[:2] == (3, 0)
    # A click in the cell (off the points) clears both filters.
    qtbot.mouseClick(m, Qt.LeftButton, pos=QPoint(round(rect.left() + 3), round(rect.top() + 3)))
    assert len(view.order) == 9 and not view.filters.filters[("hparam", "lr")].is_active()
    assert m.brush is None


def test_brushing_a_category_column_sets_its_checkboxes(view, qtbot):
    m = view.scatter
    rect = m.cell_rect(0, 1)  # batch_norm (false, true) across, train/loss down
    _drag(qtbot, m, QPointF(rect.center().x() + 10, rect.bottom() - 2), QPointF(rect.right() - 2, rect.top() + 2))
    boxes = {value: box.isChecked() for box, value in view.filters.filters[("hparam", "batch_norm")].control}
    assert boxes == {False: False, True: True}
    bn = view.columns.items.index(("hparam", "batch_norm"))
    assert {view.model.value(view.model.group_at(r), bn) for r in range(view.model.rowCount())} == {True}


def test_hover_names_the_group_and_a_click_selects_it_in_the_table(view, qtbot):
    m = view.scatter
    m.grab()
    xs, ys, groups = m._points[(3, 2)]
    i = int(np.argmax(xs))
    point = QPoint(round(xs[i]), round(ys[i]))
    qtbot.mouseMove(m, point)
    assert m._hover is not None and m._hover[2] == groups[i]
    name = view.model.table.names[groups[i]]
    text = m.describe(int(groups[i]))
    assert f"Group {name}" in text and "lr: " in text and "validation/loss: " in text
    qtbot.mouseClick(m, Qt.LeftButton, pos=point)
    rows = view.table.selectionModel().selectedRows(0)
    assert [view.model.table.names[view.model.group_at(r.row())] for r in rows] == [name]
    assert view.selected == ([name], []) and m.highlight == {int(groups[i])}
    assert view.center.currentIndex() == 2  # the matrix stays in view


def test_the_chooser_sets_columns_and_rows(view):
    view._build_scatter_menu()
    actions = {(a.text(), i): a for i, a in enumerate(view.scatter_menu.actions())}
    across = [a for (t, _), a in actions.items() if t == "validation/loss"][0]  # the first is in "Across"
    across.setChecked(True)
    assert titles(view.scatter.columns)[-1] == "validation/loss"
    down = [a for (t, _), a in actions.items() if t == "accuracy"][-1]  # "Down"
    down.setChecked(False)
    assert titles(view.scatter.rows) == ["train/loss", "validation/loss"]
    view.set_column_visible(view.columns.items.index(("hparam", "lr")), False)  # hidden columns leave the matrix
    assert "lr" not in titles(view.scatter.columns)


def test_the_report_adds_the_scatter_matrix_of_the_top_metric(tmp_path):
    from PySide6.QtGui import QImage

    from profscope.models.hparams.experiment import load_hparams
    from profscope.viewer.report import write_report

    written = write_report(None, tmp_path, hparams=load_hparams(API_CONFIG), location=str(API_CONFIG))
    names = [p.name for p in written]
    assert "hparams_scatter_matrix.png" in names and "hparams_parallel_coordinates.png" in names
    assert "<img src='hparams_scatter_matrix.png'" in (tmp_path / "index.html").read_text()
    image = QImage(str(tmp_path / "hparams_scatter_matrix.png"))
    assert image.width() == 1400 and len({image.pixel(x, 400) for x in range(0, 1400, 7)}) > 5
