"""PyTorch memory timelines stacked by category, as PyTorch's own plot
(export_memory_timeline_html) stacks them: the numbers against the
exporter's own arrays, and the plot, legend and readout a user sees."""

import gzip
import json

import numpy as np
import pytest
from conftest import DATA
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QImage

from profscope.models.data.peak_pyramid import plot_series
from profscope.models.formats.memory_timeline import CATEGORIES, load_memory_timeline
from profscope.viewer.cli import main
from profscope.widgets.memory.view import MemoryView

FOLDER = DATA / "memory_timeline"
# PyTorch's _CATEGORY_TO_COLORS (matplotlib names), bottom of the stack first.
TORCH_COLORS = {"parameter": "darkgreen", "optimizer state": "goldenrod", "input": "black",
                "temporary": "mediumpurple", "activation": "red", "gradient": "mediumblue",
                "autograd detail": "royalblue", "unknown": "grey"}
MATPLOTLIB = {"darkgreen": "#006400", "goldenrod": "#daa520", "black": "#000000", "mediumpurple": "#9370db",
              "red": "#ff0000", "mediumblue": "#0000cd", "royalblue": "#4169e1", "grey": "#808080"}


def exporter_arrays():
    """cpu.json is the exporter's [times, sizes]; export_memory_timeline_html stacks
    them as np.cumsum(sizes, axis=1) (column 0 is PyTorch's leading zero)."""
    times, sizes = json.loads((FOLDER / "cpu.json").read_text())
    return times, np.cumsum(np.array(sizes), axis=1)[:, 1:]


def stacked(series, i):
    """The stack's tops after timeline row i, as the plot draws them (its pyramid's samples)."""
    return [float(series.pyramid.leaves[i, series.names.index(f"stacked:{k}")]) for k in range(len(CATEGORIES))]


@pytest.mark.parametrize("name", ["cpu.json", "cpu.json.gz"])
def test_stacked_totals_are_pytorchs(name):
    times, torch_stacked = exporter_arrays()
    (a,) = load_memory_timeline(FOLDER / name).allocators.values()
    assert [n for n, _ in a.categories] == list(TORCH_COLORS)
    assert [c for _, c in a.categories] == [MATPLOTLIB[c] for c in TORCH_COLORS.values()]
    s = plot_series(a)
    first = min(times)
    # A time can come twice (memory from before, then that time's changes): its last row holds.
    last = {t: k for k, t in enumerate(times)}
    for t, k in last.items():
        i = int(np.searchsorted(a.timeline.time_ps, (t - first) * 1_000_000, side="right")) - 1
        assert np.cumsum(s.category_bytes[i]).tolist() == torch_stacked[k].tolist()
        assert stacked(s, i) == torch_stacked[k].tolist()
    assert s.max("in_use") == torch_stacked[:, -1].max() == 227_776


def test_the_raw_file_of_the_same_run_stacks_the_same():
    """cpu.raw.json.gz holds the same run's rows; PyTorch coalesced them by int(t / 1000) microseconds."""
    times, torch_stacked = exporter_arrays()
    raw = json.loads(gzip.decompress((FOLDER / "cpu.raw.json.gz").read_bytes()))
    (a,) = load_memory_timeline(FOLDER / "cpu.raw.json.gz").allocators.values()
    s = plot_series(a)
    # The timeline's rows are the raw rows that change memory, in order; their time as PyTorch rounds it.
    us = [min(times) if t < 0 else int(t / 1000) for t, _, size, _ in raw if size]
    assert len(us) == len(a.timeline)
    for t, k in {t: k for k, t in enumerate(times)}.items():
        i = int(np.searchsorted(us, t, side="right")) - 1
        assert stacked(s, i) == torch_stacked[k].tolist()


@pytest.fixture
def view(qtbot):
    v = MemoryView()
    qtbot.addWidget(v)
    v.resize(1400, 900)
    v.set_profile(load_memory_timeline(FOLDER / "cpu.json"))
    v.show()
    qtbot.waitExposed(v)
    return v


def test_the_plot_stacks_the_categories_in_pytorchs_colours(view):
    plot = view.plot
    legend = [label.text for _, label in plot.legend.items if label.isVisible()]
    assert legend == list(reversed(CATEGORIES))  # as they lie: the top of the stack first
    assert not plot.plot.getAxis("right").isVisible()  # no fragmentation axis
    a, s = view.allocator, plot.series
    # A column showing one moment: the 40 KiB parameters, 75 KiB of optimizer state, ... stacked from the bottom.
    i = a.peak_index - 1
    t = a.timeline.time_ps
    h, top = 400, 240_000
    codes, colors = plot.canvas.render(10, h, float(t[i]), float(t[i]) + 1e-3 * float(t[i + 1] - t[i]), 0, top)
    column = codes[:, 5] & 15
    base = plot.canvas.plot._scheme.base
    for k, (name, color) in enumerate(a.categories):
        nbytes = int(s.category_bytes[i, k])
        pixels = int((column == len(CATEGORIES) - k).sum())
        assert abs(pixels - nbytes / top * h) <= 1, name
        if pixels:
            rgb = int(colors[(len(CATEGORIES) - k)]) & 0xFFFFFF
            want = QColor(color)
            blend = [round(b + (c - b) * 0.7) for c, b in zip(want.getRgb()[:3], base.getRgb()[:3])]
            assert [(rgb >> 16) & 255, (rgb >> 8) & 255, rgb & 255] == blend, name
    # Down the column (rows from the top) the categories come top of the stack first, parameters last.
    filled = column[column > 0]
    assert (np.diff(filled.astype(int)) >= 0).all()
    assert column[-1] == len(CATEGORIES)  # the bottom row is the parameters'


def test_hovering_reads_each_categorys_bytes(view, qtbot):
    plot, a = view.plot, view.allocator
    i = a.peak_index
    vb = plot.plot.getViewBox()
    scene = vb.mapViewToScene(QPointF(float(a.timeline.time_ps[i]), 1000.0))
    plot._on_mouse_moved(scene)
    text = view.readout.text()
    assert "total 222 KiB" in text
    assert "parameter 37.5 KiB" in text and "optimizer state 75.1 KiB" in text and "unknown 64 KiB" in text
    assert "autograd detail" not in text  # none at that moment
    assert text.index("unknown") < text.index("gradient") < text.index("parameter")  # top of the stack first


def test_hiding_a_category_leaves_the_others_where_they_are(view):
    plot = view.plot
    a = view.allocator
    i = a.peak_index - 1
    t = a.timeline.time_ps
    args = (10, 400, float(t[i]), float(t[i]) + 1e-3 * float(t[i + 1] - t[i]), 0, 240_000)
    before = plot.canvas.render(*args)[1]
    plot.category_curves[0].hide()  # the parameters: what clicking their legend entry does
    after = plot.canvas.render(*args)[1]
    k = len(CATEGORIES)
    assert after[k] == after[0]  # the parameters' pixels are now the background
    assert (after[1:k] == before[1:k]).all()


def test_the_report_draws_the_stacked_categories(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "cpu.json").write_bytes((FOLDER / "cpu.json").read_bytes())
    assert main(["report", str(folder), "-o", str(tmp_path / "report")]) == 0
    [png] = (tmp_path / "report").glob("memory_*.png")
    image = QImage(str(png))
    rgb = {image.pixel(x, y) & 0xFFFFFF for x in range(0, image.width(), 3) for y in range(0, image.height(), 3)}
    green = QColor(MATPLOTLIB["darkgreen"])
    white = QColor("#ffffff")
    # The parameters' fill (70 % darkgreen over the light Base) is in the picture.
    fill = [round(b + (c - b) * 0.7) for c, b in zip(green.getRgb()[:3], white.getRgb()[:3])]
    assert any(abs(((p >> 16) & 255) - fill[0]) <= 2 and abs(((p >> 8) & 255) - fill[1]) <= 2
               and abs((p & 255) - fill[2]) <= 2 for p in rgb)
    html = (tmp_path / "report" / "index.html").read_text()
    assert "Categories at the peak: parameter" in html
