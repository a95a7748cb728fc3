"""The Memory tab as a user meets it: filled when its tab is clicked, on the
allocator with the largest peak; axis labels that are their ticks' values;
the peak label and the legend clear of the plot's edges and data; a sentence
where there is nothing to show."""

import re

import numpy as np
import pytest
from conftest import DATA, SMALL_XPROF
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QImage, QPainter
from test_memory_widgets import shown_view

from profscope.models.core.units import BYTE_UNITS
from profscope.widgets.memory.view import NO_MEMORY_EVENTS, NOT_LOADED, MemoryView

GPU_TRACE = DATA / "chrome_trace" / "gpu_memory" / "gpu_memory.pt.trace.json.gz"
SMALL_XPLANE = DATA / "xprof" / "small.xplane.pb"
JAX_XPLANE = DATA / "xprof" / "jax.xplane.pb"
UNIT_BYTES = {name: size for size, name in BYTE_UNITS} | {"B": 1}
GIB = 1 << 30


def profile(times_ps, heap, memory_id="GPU_0_bfc", host="test"):
    """A MemoryProfileData of one allocator whose heap takes these values (no stack)."""
    from profscope.models.data.memory_profile import (
        AllocatorProfile,
        MemoryProfileData,
        Snapshots,
        merge_rows,
        summarize,
    )

    heap = np.asarray(heap, np.int64)
    n = len(heap)
    zeros = np.zeros(n, np.int64)
    tl = Snapshots(time_ps=np.asarray(times_ps, np.int64), stack=zeros, heap=heap, free=zeros,
                   fragmentation=np.zeros(n), peak_in_use=np.maximum.accumulate(heap),
                   activity=np.ones(n, np.int32), requested=heap, allocation=heap,
                   address=np.arange(n, dtype=np.uint64),
                   step=zeros, op=zeros.astype(np.int32), region=zeros.astype(np.int32),
                   dtype=zeros.astype(np.int32), shape=zeros.astype(np.int32), strings=[""])
    a = AllocatorProfile(memory_id=memory_id, timeline=tl, summary=summarize(tl), peak_allocations=None,
                         complete=True, stored_snapshots=tl)
    a.peak_allocations = merge_rows(tl, np.zeros(0, np.int64), [])
    return MemoryProfileData(host=host, allocators={memory_id: a})


def ramp(peak: int, n: int = 50, peak_at: int = -1):
    """n snapshots 1 ms apart rising to `peak` at index peak_at."""
    heap = np.linspace(peak * 0.2, peak * 0.9, n).astype(np.int64)
    heap[peak_at] = peak
    return profile(np.arange(n) * 10**9, heap)


def drawn_labels(axis) -> list[tuple[str, float]]:
    """The tick labels an axis draws and the position of each one's middle along
    the axis, in scene coordinates (y for a left axis)."""
    image = QImage(10, 10, QImage.Format_RGB32)
    painter = QPainter(image)
    try:
        _axis, _ticks, texts = axis.generateDrawSpecs(painter)
    finally:
        painter.end()
    return [(text, axis.mapToScene(rect.center()).y()) for rect, _flags, text in texts]


def check_byte_labels(view: MemoryView, plot=None, title="memory") -> list[float]:
    """Every label of the memory axis (of the view's plot, or of `plot` drawn
    in `view`), read as a number of the unit in its title, is a tick value
    in bytes and lies where the plot has that value; returns the values."""
    (view if plot is not None else view.plot).grab()  # lays out and draws: the ticks of this range and size
    plot = plot or view.plot.plot
    axis = plot.getAxis("left")
    vb = plot.getViewBox()
    unit = re.fullmatch(title + r" \((\w+)\)", axis.labelText).group(1)
    levels = axis.tickValues(*axis.range, axis.height() + 2)
    ticks = levels[0][1]
    labels = drawn_labels(axis)
    assert len(labels) >= 2
    values = []
    per_px = (vb.viewRange()[1][1] - vb.viewRange()[1][0]) / vb.height()
    for text, y in labels:
        value = float(text) * UNIT_BYTES[unit]
        assert any(value == pytest.approx(t, rel=1e-9, abs=1e-9) for t in ticks), (text, unit, ticks)
        at = vb.mapSceneToView(QPointF(0, y)).y()
        assert abs(at - value) <= 2 * per_px, (text, unit, at)
        values.append(value)
    # Round values of the unit: 1, 2, 2.5 or 5 x 10^k apart.
    step = abs(values[1] - values[0]) / UNIT_BYTES[unit]
    mantissa = step / 10 ** np.floor(np.log10(step))
    assert any(mantissa == pytest.approx(m) for m in (1, 2, 2.5, 5)), step
    return values


@pytest.mark.parametrize("peak, unit", [(300, "B"), (40 << 10, "KiB"), (3 << 20, "MiB"), (700 << 20, "MiB"),
                                        (int(6.17 * GIB), "GiB"), (int(7.45 * GIB), "GiB")])
@pytest.mark.parametrize("height", [900, 560])
def test_every_memory_label_is_the_value_at_its_tick(qtbot, peak, unit, height):
    v = shown_view(qtbot, ramp(peak))
    v.resize(1400, height)
    values = check_byte_labels(v)
    assert v.plot.plot.getAxis("left").labelText == f"memory ({unit})"
    assert values[0] == 0 or min(values) >= 0


def test_a_6_gib_peak_reads_as_6_gib(qtbot):
    v = shown_view(qtbot, ramp(int(6.17 * GIB)))
    values = check_byte_labels(v)
    assert 6 * GIB in values and all(value / GIB == round(value / GIB, 2) for value in values)
    assert v.plot.peak_label.toPlainText() == "peak 6.17 GiB"


def test_the_xprof_profile_labels_megabytes_exactly(view_of_small_xprof):
    check_byte_labels(view_of_small_xprof)


@pytest.fixture
def view_of_small_xprof(qtbot):
    from profscope.models.formats.memory_profile_file import load_memory_profile

    return shown_view(qtbot, load_memory_profile(DATA / "xprof" / "small.memory_profile.json"))


@pytest.mark.parametrize("peak_at", [0, 25, -1])
@pytest.mark.parametrize("size", [(1400, 900), (700, 500)])
def test_the_peak_label_fits_inside_the_plot(qtbot, peak_at, size):
    v = shown_view(qtbot, ramp(5 << 20, peak_at=peak_at))
    v.resize(*size)
    v.plot.grab()
    label, vb = v.plot.peak_label, v.plot.plot.getViewBox()
    text = label.textItem.mapRectToScene(label.textItem.boundingRect())
    assert vb.sceneBoundingRect().contains(text), (text, vb.sceneBoundingRect())
    # Beside the marker, not across the line that marks the moment (the peak's, at first).
    peak_x = vb.mapViewToScene(QPointF(v.allocator.summary.peak_time_ps, 0)).x()
    assert not text.left() <= peak_x <= text.right()


def test_the_legend_is_outside_the_data(qtbot):
    v = shown_view(qtbot, ramp(5 << 20))
    v.plot.grab()
    vb = v.plot.plot.getViewBox()
    legend = v.plot.legend.sceneBoundingRect()
    assert legend.height() > 0 and not legend.intersects(vb.sceneBoundingRect())


def test_an_empty_profile_says_so(qtbot):
    from profscope.models.data.memory_profile import MemoryProfileData

    v = MemoryView()
    qtbot.addWidget(v)
    v.show()
    assert v.pages.currentWidget() is v.empty and not v.plot.isVisible()  # nothing opened yet: says so
    assert "No memory profile" in v.empty.text()
    v.set_profile(MemoryProfileData(host="h", allocators={}))
    assert v.empty.isVisible() and v.empty.text() == NO_MEMORY_EVENTS and not v.plot.isVisible()


def test_the_view_opens_on_the_allocator_with_the_largest_peak(qtbot):
    small, large = ramp(8), ramp(6 << 30)
    data = small
    data.allocators = {"CPU": small.allocators["GPU_0_bfc"], "cuda:0": large.allocators["GPU_0_bfc"]}
    v = shown_view(qtbot, data)
    assert [v.allocator_box.itemText(i) for i in range(v.allocator_box.count())] == ["CPU", "cuda:0"]
    assert v.allocator_box.currentText() == "cuda:0" and v.plot.profile is data.allocators["cuda:0"]


# ---------------------------------------------------------------- in the window


def open_and_click_memory(qtbot, window, path):
    """Opens a path as a user does, waits for what opening shows, then clicks
    the Memory tab on the tab bar."""
    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    with qtbot.waitSignal(window.runner.finished, timeout=30000):
        window.open_path(str(path))  # the scan
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=30000)  # the first host's timeline
    bar = window.tabs.tabBar()
    index = window.tabs.indexOf(window.memory_view)
    assert window.tabs.currentIndex() != index
    qtbot.mouseClick(bar, Qt.LeftButton, pos=bar.tabRect(index).center())
    assert window.tabs.currentWidget() is window.memory_view


@pytest.mark.parametrize("path, host, allocator", [(GPU_TRACE, "gpu_memory", "cuda:0"),
                                                   (SMALL_XPLANE, None, "bfc_cpu_allocator_for_gpu")])
def test_clicking_the_memory_tab_fills_it(qtbot, window, path, host, allocator):
    with qtbot.waitSignal(window.loading.shown, timeout=30000):
        open_and_click_memory(qtbot, window, path)
        qtbot.waitUntil(lambda: window.memory_view.data is not None, timeout=30000)
    view = window.memory_view
    assert view.host_box.count() >= 1 and view.host_box.currentText() == (host or view.host_box.itemText(0))
    assert view.allocator_box.count() >= 1 and view.allocator_box.currentText() == allocator
    peaks = {m: a.summary.peak_in_use for m, a in view.data.allocators.items()}
    assert peaks[allocator] == max(peaks.values())
    assert view.pages.currentWidget() is not view.empty and view.plot.isVisible()
    assert view.plot.series is not None and view.plot.series.max("in_use") == peaks[allocator]
    check_byte_labels(view)
    assert window.tabs.currentWidget() is view


def test_a_host_without_memory_events_says_why(qtbot, window):
    open_and_click_memory(qtbot, window, JAX_XPLANE)
    view = window.memory_view
    qtbot.waitUntil(lambda: not window.runner.busy and "no memory events" in view.message.text(), timeout=30000)
    assert view.message.isVisible() and view.empty.isVisible() and not view.plot.isVisible()
    assert view.empty.text() == NOT_LOADED


def test_after_a_reload_the_memory_tab_is_filled_again(qtbot, window):
    open_and_click_memory(qtbot, window, SMALL_XPLANE)
    qtbot.waitUntil(lambda: window.memory_view.data is not None and not window.runner.busy, timeout=30000)
    window.opening.reload()
    qtbot.waitUntil(lambda: window.memory_view.data is not None and not window.runner.busy, timeout=60000)
    assert window.tabs.currentWidget() is window.memory_view
    assert window.memory_view.allocator_box.currentText() == "bfc_cpu_allocator_for_gpu"


def test_small_xprof_file_is_shown_at_once(qtbot, window):
    # A memory_profile file has only that tool: opening it shows it, no click needed.
    with qtbot.waitSignal(window.runner.finished, timeout=30000):
        window.open_path(str(SMALL_XPROF))
    qtbot.waitUntil(lambda: window.memory_view.data is not None, timeout=30000)
    assert window.tabs.currentWidget() is window.memory_view and window.memory_view.allocator_box.count() == 1


def test_the_compare_tabs_memory_curves_use_the_same_axes(qtbot):
    from profscope.models.analysis.comparison import Place, compare
    from profscope.widgets.compare.view import CompareView

    c = compare(Place(str(SMALL_XPLANE)), Place(str(DATA / "xprof" / "keras.xplane.pb")))
    view = CompareView()
    qtbot.addWidget(view)
    view.resize(1200, 800)
    view.set_comparison(c)
    view.pages.setCurrentWidget(view.memory_page)
    view.show()
    qtbot.waitExposed(view)
    page = view.memory_page
    values = check_byte_labels(page.plot_widget, page.plot, title="in use")
    assert page.plot.getAxis("left").labelText == "in use (MiB)" and 3 << 20 in values
    assert page.plot.getAxis("bottom").labelText == "time from the alignment point (ms)"
