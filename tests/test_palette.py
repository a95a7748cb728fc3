"""The plots and the timeline follow the application's palette: rendered on a
light and a dark palette (switched at run time), their backgrounds are light or
dark and their text and axes readable on them."""

import numpy as np
import pytest
from conftest import DATA, SMALL_XPROF
from PySide6.QtCore import QRectF
from PySide6.QtGui import QColor, QImage, QPalette
from PySide6.QtWidgets import QApplication

from profscope.models.formats.memory_profile_file import load_memory_profile
from profscope.models.formats.step_stats import load_step_timeline, locate
from profscope.widgets.palette import Scheme, dark_palette, is_dark
from profscope.widgets.timeline.canvas import GUTTER_W, RULER_H

GPU = DATA / "chrome_trace" / "gpu"


@pytest.fixture
def use_palette(qapp):
    """use_palette(dark): sets the application's palette; the original comes back after the test."""
    original = QPalette(qapp.palette())

    def use(dark: bool) -> None:
        QApplication.setPalette(dark_palette() if dark else original)
        QApplication.processEvents()

    yield use
    QApplication.setPalette(original)
    QApplication.processEvents()
    assert not is_dark()


def luminance(image: QImage, rect=None) -> np.ndarray:
    """Per-pixel luminance (0..255) of an image, or of a rectangle of it."""
    rgb = image.convertToFormat(QImage.Format_RGB32)
    px = np.frombuffer(rgb.constBits(), np.uint8).reshape(rgb.height(), rgb.width(), 4).astype(np.float64)
    lum = 0.299 * px[..., 2] + 0.587 * px[..., 1] + 0.114 * px[..., 0]
    if rect is not None:
        r = QRectF(rect).toRect()
        lum = lum[max(r.top(), 0):r.bottom() + 1, max(r.left(), 0):r.right() + 1]
    assert lum.size
    return lum


def check(image: QImage, background, text, dark: bool) -> None:
    """The background region is dark (mean luminance < 80) or light (> 200);
    the text region holds pixels that stand out from it."""
    bg = float(np.median(luminance(image, background)))
    ink = luminance(image, text)
    if dark:
        assert bg < 80 and ink.max() > 150, (bg, ink.max())
    else:
        assert bg > 200 and ink.min() < 170, (bg, ink.min())


def test_scheme_keeps_the_light_colours_and_lightens_data_on_dark(use_palette):
    light = Scheme.of()
    assert not light.dark
    assert light.shade(0.73).name() == "#454545" and light.shade(0.13).name() == "#dedede"
    assert light.data("#1e88e5").name() == "#1e88e5" and light.tint("#bbdefb").name() == "#bbdefb"
    use_palette(True)
    dark = Scheme.of()
    assert dark.dark and dark.base.name() == "#1e1e1e" and dark.shade(0.73).lightness() > 150
    blue, data = QColor("#1e88e5"), dark.data("#1e88e5")
    assert abs(data.hslHue() - blue.hslHue()) <= 2 and data.lightness() > blue.lightness()  # same hue, lighter
    assert dark.data("#4e342e").lightnessF() >= 0.54  # a dark brown stays visible
    tint = dark.tint("#bbdefb")
    assert dark.base.lightness() < tint.lightness() < 128  # a dark tint, clear of the background
    assert dark.text_on(data) != dark.text_on(dark.tint("#cfd8dc"))


def test_timeline_canvas_follows_the_palette(qtbot, use_palette):
    from profscope.widgets.timeline.view import TimelineView

    v = TimelineView()
    qtbot.addWidget(v)
    v.resize(1200, 700)
    v.set_timeline(load_step_timeline(locate(DATA / "step_stats" / "run_metadata.pb")))
    v.show()
    qtbot.waitExposed(v)
    canvas = v.canvas
    bottom = canvas.height() - 30  # below the last lane: background only
    lanes = QRectF(GUTTER_W + 10, bottom, canvas.width() - GUTTER_W - 20, 20)
    gutter_text = QRectF(20, RULER_H, GUTTER_W - 30, 120)  # device header and lane names
    for dark in (False, True, False):  # switched at run time, both ways
        use_palette(dark)
        image = canvas.grab().toImage()
        check(image, lanes, gutter_text, dark)
        check(image, QRectF(GUTTER_W + 10, 2, canvas.width() - GUTTER_W - 20, 3), QRectF(4, 4, GUTTER_W - 20, 18), dark)
        # Bars keep their op type's hue: lighter on the dark palette, never the background.
        row, _, _ = canvas.lane_pixels(0, canvas.lanes_width)
        assert (row[row != 0] != canvas._background).all()
        assert canvas._background == Scheme.of(canvas).base.rgba()


def test_timeline_created_on_a_dark_palette(qtbot, use_palette):
    from profscope.widgets.timeline.view import TimelineView

    use_palette(True)
    v = TimelineView()
    qtbot.addWidget(v)
    v.resize(1000, 600)
    v.set_timeline(load_step_timeline(locate(DATA / "step_stats" / "run_metadata.pb")))
    v.show()
    qtbot.waitExposed(v)
    image = v.canvas.grab().toImage()
    check(image, QRectF(GUTTER_W + 10, v.canvas.height() - 30, 500, 20), QRectF(20, RULER_H, GUTTER_W - 30, 120), True)
    assert luminance(v.hint.grab().toImage()).max() > 100  # the key hint is not dark grey on dark


def _plot_regions(widget, plot):
    """(background strip at the top middle of a plot's data area, its left axis) in widget pixels."""
    vb = plot.getViewBox().sceneBoundingRect()
    view = widget.mapFromScene(vb).boundingRect()
    background = QRectF(view.left() + view.width() * 0.4, view.top() + 3, view.width() * 0.2, view.height() * 0.08)
    axis = widget.mapFromScene(plot.getAxis("left").sceneBoundingRect()).boundingRect()
    return background, QRectF(axis)


def test_memory_plot_follows_the_palette(qtbot, use_palette):
    from profscope.widgets.memory.view import MemoryView

    v = MemoryView()
    qtbot.addWidget(v)
    v.resize(1200, 800)
    v.set_profile(load_memory_profile(SMALL_XPROF))
    v.show()
    qtbot.waitExposed(v)
    for dark in (False, True, False):
        use_palette(dark)
        background, axis = _plot_regions(v.plot, v.plot.plot)
        check(v.plot.grab().toImage(), background, axis, dark)
        names = [w for w in v.summary.findChildren(type(v.readout)) if w.text().endswith(":")]
        assert names and all((QColor(n.palette().windowText().color()).lightness() > 128) == dark for n in names)


def test_statistics_bars_follow_the_palette(qtbot, use_palette):
    from profscope.models.analysis import trace_stats
    from profscope.models.formats.chrome_trace import build_timeline, scan
    from profscope.widgets.stats.trace_stats_view import TraceStatsView

    stats = trace_stats.compute(build_timeline([("rank-0", scan(GPU / "rank-0.json.gz")),
                                                ("rank-1", scan(GPU / "rank-1.json.gz"))]))
    v = TraceStatsView()
    qtbot.addWidget(v)
    v.resize(1284, 860)
    v.set_stats(stats)
    v.show()
    qtbot.waitExposed(v)
    bars = v.overview.bars
    for dark in (False, True, False):
        use_palette(dark)
        image = bars.grab().toImage()
        left, width, _ = bars._geometry()
        below = bars._top() + len(bars.rows) * bars.PITCH + 24
        background = QRectF(left, below - 2, width, max(bars.height() - below, 3))
        if bars.height() - below < 3:  # no room below the axis: the gap between the legend and the first bar
            background = QRectF(bars.width() // 2, 1, bars.width() // 3, 4)
        labels = QRectF(8, bars._top() + bars.PITCH, left - 12, bars.BAR)  # rank-1 (not the selected row)
        check(image, background, labels, dark)
        # The idle share stands out from the background it is drawn on.
        scheme = Scheme.of(bars)
        idle = luminance(image, QRectF(left + width - 6, bars._top() + bars.PITCH + 4, 3, 3))
        assert abs(float(idle.mean()) - scheme.window.lightness()) > 15


def test_hparams_charts_and_parallel_coordinates_follow_the_palette(qtbot, use_palette, open_hparams_view):
    v = open_hparams_view(DATA / "hparams" / "api_config")
    v.center.setCurrentIndex(1)
    qtbot.waitExposed(v.parallel)
    for dark in (False, True, False):
        use_palette(dark)
        charts = v.curves.charts
        plots = [item for item in charts.ci.items if hasattr(item, "getViewBox")]
        assert plots
        background, axis = _plot_regions(charts, plots[0])
        check(charts.grab().toImage(), background, axis, dark)
        title = plots[0].titleLabel
        assert (QColor(title.opts["color"]).lightness() > 170) == dark  # grey 150 on white, #bebebe on dark
        pc = v.parallel
        image = pc.grab().toImage()
        check(image, QRectF(pc.width() // 2 - 20, 24, 40, 10), QRectF(0, 2, pc.width(), 20), dark)
        v.center.setCurrentIndex(2)  # the scatter matrix' cells and labels too
        matrix = v.scatter
        cell = matrix.cell_rect(0, 0)
        check(matrix.grab().toImage(), QRectF(cell.left() + 8, cell.top() + 8, 20, 10),
              QRectF(0, matrix.height() - 20, matrix.width(), 18), dark)
        v.center.setCurrentIndex(1)
