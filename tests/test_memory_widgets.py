"""The memory view as a user sees it, built from results made in memory."""

import numpy as np
import pytest
from conftest import DATA, KERAS_XPROF, SMALL_XPROF
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QGuiApplication, QImage

from profscope.models.formats.log_memory import load_memory_log
from profscope.models.formats.memory_profile_file import load_memory_profile
from profscope.widgets.memory.allocation_table import ActiveAllocationModel
from profscope.widgets.memory.kernel_table import KernelModel
from profscope.widgets.memory.view import MemoryView

ALLOCATOR = "bfc_cpu_allocator_for_gpu"


def shown_view(qtbot, data) -> MemoryView:
    v = MemoryView()
    qtbot.addWidget(v)
    v.resize(1400, 900)
    v.set_profile(data)
    v.show()
    qtbot.waitExposed(v)
    return v


@pytest.fixture
def view(qtbot):
    return shown_view(qtbot, load_memory_profile(SMALL_XPROF))


def test_table_model_passes_qt_model_tests(qtmodeltester):
    model = ActiveAllocationModel()
    model.set_rows(load_memory_profile(SMALL_XPROF).allocators[ALLOCATOR].peak_allocations)
    qtmodeltester.check(model)
    model.sort(2, Qt.AscendingOrder)
    model.set_filter("mat", 0)
    qtmodeltester.check(model)


def test_sorting_is_numeric_and_filter_is_by_op(view):
    model = view.table.model
    model.sort(1, Qt.AscendingOrder)
    sizes = [model.value(r, 1) for r in range(model.rowCount())]
    assert sizes == sorted(sizes) and sizes[-1] == 1476352
    model.sort(0, Qt.AscendingOrder)
    assert model.value(0, 0) == ""  # the unnamed op sorts first
    view.table.op_filter.setText("matmul")
    view.table._apply_filter()  # what the debounce timer does when typing pauses
    assert sorted(model.value(r, 0) for r in range(model.rowCount())) == [
        "MatMul", "MatMul_1", "gradient_tape/MatMul_1/MatMul"]
    assert view.table.count_label.text() == "3 of 11 rows"
    view.table.op_filter.clear()
    view.table.min_size.setValue(200)
    view.table.size_unit.setCurrentText("KiB")
    assert model.rowCount() == 4  # no hidden floor: the user chose 200 KiB


def test_copy_selected_rows(view):
    view.table.view.selectRow(1)
    view.table.copy_selection()
    text = QGuiApplication.clipboard().text().splitlines()
    assert text[0].startswith("Op name\tAllocation size") and text[1].split("\t")[1] == "489984"


def test_clicking_a_moment_updates_the_table_and_selecting_a_row_marks_its_life(view, qtbot):
    a = view.allocator
    index = 300
    view.plot.moment_picked.emit(index)
    assert view.moment == index and "snapshot 300" in view.table_title.text()
    model = view.table.model
    total = sum(model.value(r, 1) * model.value(r, 3) for r in range(model.rowCount()))
    assert total == a.timeline.heap[index]
    assert view.plot.moment_line.isVisible() and view.plot.moment_line.value() == a.timeline.time_ps[index]
    row = next(r for r in range(model.rowCount()) if model.value(r, 0) == "AddV2")
    view.table.view.selectRow(row)
    lo, hi = view.plot.lifetime.getRegion()
    assert view.plot.lifetime.isVisible() and lo == a.timeline.time_ps[283] and hi > lo
    view.peak_button.click()
    assert view.moment is None and "at the peak" in view.table_title.text()


def test_sampled_file_explains_why_no_moment_table(qtbot):
    v = MemoryView()
    qtbot.addWidget(v)
    v.set_profile(load_memory_profile(KERAS_XPROF))
    v.pick_moment(5)
    assert v.message.isVisibleTo(v) and "sampled" in v.message.text()
    assert "(XProf sample)" in v.summary.value("Snapshots on the timeline")


def test_screenshot_shows_the_plot_with_the_peak(view, tmp_path):
    assert view.summary.value("Peak usage (profile window)") == "3 MiB"
    assert not view.plot.free_curve.isVisible()  # 64 GiB free would flatten 3 MiB of heap
    image = view.plot.grab().toImage()
    path = tmp_path / "memory_plot.png"
    image.save(str(path))
    assert QImage(str(path)).width() > 500
    # The heap area's blue covers a good part of the plot, and the red peak marker is drawn.
    rgb = image.convertToFormat(QImage.Format_RGB32)  # keep it alive while numpy reads its bytes
    pixels = np.frombuffer(rgb.constBits(), np.uint8).reshape(rgb.height(), rgb.width(), 4)  # B, G, R, A
    blue = (pixels[..., 0] > 180) & (pixels[..., 2] < 200) & (pixels[..., 1] > 120)
    red = (pixels[..., 2] > 200) & (pixels[..., 1] < 90) & (pixels[..., 0] < 90)
    assert blue.mean() > 0.2 and red.sum() > 20
    # The red marker sits at the peak (its label is beside it, clear of these columns).
    vb = view.plot.plot.getViewBox()
    peak = vb.mapViewToScene(QPointF(view.allocator.summary.peak_time_ps, view.allocator.summary.peak_in_use))
    x0 = int(peak.x()) - 8
    around = red[max(int(peak.y()) - 5, 0):int(peak.y()) + 6, x0:x0 + 17]
    assert around.sum() > 40 and abs(x0 + int(np.argmax(around.sum(axis=0))) - peak.x()) < 4


# ---------------------------------------------------------------- LogMemory logs

LOG = DATA / "log_memory" / "graph-bfc-onednn.log.gz"


@pytest.fixture
def log_view(qtbot):
    return shown_view(qtbot, load_memory_log(LOG))


def test_log_view_has_step_filter_and_kernel_table(log_view):
    v = log_view
    assert v.log_bar.isVisible() and v.tabs.isTabVisible(1)
    assert v.allocator_box.currentText() == "bfc_cpu_allocator_for_gpu"
    assert "replayed from the log" in v.table_title.text()
    assert "8 deallocations of allocations made before the log" in v.log_info.text()
    steps = [v.step_box.itemText(i) for i in range(v.step_box.count())]
    assert steps[0] == "All steps"
    assert "-2 (op kernel construction): 2 allocations, 512 B" in steps
    assert "2 (x:0,y:0->Mean:0/GradientDescent/0/;1): 8 allocations, 71 KiB" in steps
    all_rows = v.table.model.total_rows
    v.step_box.setCurrentIndex(steps.index("4 (x:0,y:0->Mean:0/GradientDescent/0/;3): 8 allocations, 71 KiB"))
    shown = v.table.model.rows
    assert 0 < len(shown) < all_rows and set(shown.step.tolist()) == {4}
    kernels = v.kernel_table.model_
    assert kernels.rowCount() == 7 and kernels.value(0, 0) == "gradients/MatMul_grad/MatMul_1"
    lo, hi = v.plot.plot.viewRange()[0]
    start, end = v.log.step_span_ps[4]
    assert lo <= start and end <= hi and hi - lo < 2 * (end - start) + 2e6
    v.step_box.setCurrentIndex(0)
    assert v.table.model.total_rows == all_rows


def test_allocator_without_allocation_ids_explains_the_empty_timeline(log_view):
    log_view.allocator_box.setCurrentText("mklcpu")
    assert "carries an allocation_id" in log_view.message.text() and log_view.message.isVisible()
    assert log_view.kernel_table.model_.value(0, 0) == "TF_NewTensor"
    assert log_view.summary.value("Snapshots on the timeline") == "0"


def test_kernel_model_passes_qt_model_tests(qtmodeltester):
    model = KernelModel()
    model.set_rows(load_memory_log(LOG).log.kernels("mklcpu"))
    qtmodeltester.check(model)
    model.sort(1, Qt.DescendingOrder)
    assert model.value(0, 0) == "Unknown (from Proto)"  # 383 small allocations
    qtmodeltester.check(model)


def test_profile_files_show_no_log_parts(view):
    assert not view.log_bar.isVisible() and not view.tabs.isTabVisible(1)


# ---------------------------------------------------------------- the plot at any zoom


def spiky_profile(n: int = 200_000, spike_at: int = 123_457, step_ps: int = 1_000_000):
    """n snapshots step_ps apart: small allocations freed soon after on 64 MiB
    of heap, a 4 MiB stack, one 32 MiB allocation freed by the next snapshot,
    and the peak at the end (48 MiB more for the last 1,000 snapshots)."""
    from profscope.models.data.memory_profile import (
        AllocatorProfile,
        MemoryProfileData,
        Snapshots,
        merge_rows,
        summarize,
    )

    rng = np.random.default_rng(5)
    activity = np.where(np.arange(n) % 2 == 0, 1, 2).astype(np.int32)
    size = np.repeat(rng.integers(1, 16, n // 2 + 1) << 10, 2)[:n]
    heap = (64 << 20) + np.cumsum(np.where(activity == 1, size, -size))
    heap[spike_at] += 32 << 20
    heap[-1000:] += 48 << 20
    stack = np.full(n, 4 << 20, np.int64)
    zeros = np.zeros(n, np.int64)
    tl = Snapshots(time_ps=np.arange(n, dtype=np.int64) * step_ps, stack=stack, heap=heap, free=(256 << 20) - heap,
                   fragmentation=np.full(n, 0.25), peak_in_use=np.maximum.accumulate(stack + heap), activity=activity,
                   requested=size, allocation=size, address=np.arange(n, dtype=np.uint64) // 2, step=zeros,
                   op=zeros.astype(np.int32), region=zeros.astype(np.int32), dtype=zeros.astype(np.int32),
                   shape=zeros.astype(np.int32), strings=[""])
    a = AllocatorProfile(memory_id="GPU_0_bfc", timeline=tl, summary=summarize(tl), peak_allocations=None,
                         complete=True, stored_snapshots=tl)
    a.peak_allocations = merge_rows(tl, np.zeros(0, np.int64), [])
    return MemoryProfileData(host="test", allocators={a.memory_id: a})


def pixels(widget) -> np.ndarray:
    """RGB (rows x columns x 3) of a widget as painted."""
    image = widget.grab().toImage().convertToFormat(QImage.Format_RGB32)
    return np.frombuffer(image.constBits(), np.uint8).reshape(image.height(), image.width(), 4)[..., 2::-1].copy()


def heap_top_row(view, t_ps: float) -> int:
    """The highest row of the plot, in the column of time t, drawn in the heap's colour (line or area)."""
    plot = view.plot
    vb = plot.plot.getViewBox()
    x = int(vb.mapViewToScene(QPointF(t_ps, 0)).x())
    top, bottom = int(vb.sceneBoundingRect().top()), int(vb.sceneBoundingRect().bottom())
    column = pixels(plot)[top:bottom, x].astype(int)
    bluish = (column[:, 2] > column[:, 0] + 60) & (column[:, 2] > 150)
    return top + int(np.argmax(bluish)) if bluish.any() else -1


def test_a_one_snapshot_peak_shows_at_every_zoom(qtbot):
    data = spiky_profile()
    v = shown_view(qtbot, data)
    a = v.allocator
    spike = 123_457
    t = float(a.timeline.time_ps[spike])
    vb = v.plot.plot.getViewBox()
    peak_y = vb.mapViewToScene(QPointF(t, float(a.timeline.in_use[spike]))).y()
    span = float(a.timeline.time_ps[-1])
    for width in (span, span / 100, 200e6):  # the whole run (a snapshot is 1/200,000 of it), 1%, 200 snapshots
        v.plot.plot.setXRange(t - width / 3, t + width * 2 / 3, padding=0)
        peak_y = vb.mapViewToScene(QPointF(t, float(a.timeline.in_use[spike]))).y()
        assert abs(heap_top_row(v, t) - peak_y) <= 2, width
        # A few pixels to the side the heap is back to its usual ~70 MiB.
        usual_y = vb.mapViewToScene(QPointF(t, float(a.timeline.in_use[spike - 1]))).y()
        assert abs(heap_top_row(v, t - width / 50) - usual_y) <= 3


def test_wheel_zooms_in_time_and_the_plot_follows(qtbot):
    from PySide6.QtCore import QPoint
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication

    v = shown_view(qtbot, spiky_profile())
    plot, vb = v.plot, v.plot.plot.getViewBox()
    before_range, before = vb.viewRange(), pixels(plot)
    centre = plot.mapFromScene(vb.sceneBoundingRect().center())
    wheel = QWheelEvent(QPointF(centre), QPointF(plot.viewport().mapToGlobal(centre)), QPoint(), QPoint(0, 120 * 5),
                        Qt.NoButton, Qt.NoModifier, Qt.NoScrollPhase, False)
    with qtbot.waitSignal(vb.sigXRangeChanged):
        QApplication.sendEvent(plot.viewport(), wheel)
    (x0, x1), (y0, y1) = vb.viewRange()
    assert x1 - x0 < 0.5 * (before_range[0][1] - before_range[0][0])
    assert (y0, y1) == tuple(before_range[1])  # zoom is in time only
    after = pixels(plot)
    assert (after != before).any(axis=2).mean() > 0.05  # the data area was drawn anew


def test_clicking_a_legend_entry_hides_its_series(qtbot):
    v = shown_view(qtbot, spiky_profile())
    plot = v.plot
    sample = next(s for s, label in plot.legend.items if label.text.startswith("heap"))

    def blue_share():
        rgb = pixels(plot).astype(int)
        return ((rgb[..., 2] > rgb[..., 0] + 60) & (rgb[..., 2] > 150)).mean()

    shown = blue_share()
    pos = plot.mapFromScene(sample.sceneBoundingRect().center())
    qtbot.mouseClick(plot.viewport(), Qt.LeftButton, pos=pos)
    assert not plot.heap_curve.isVisible()
    assert shown > 0.15 and blue_share() < 0.02
    qtbot.mouseClick(plot.viewport(), Qt.LeftButton, pos=pos)
    assert blue_share() == pytest.approx(shown, abs=0.01)


def test_time_axis_names_the_unit_of_its_labels(qtbot):
    # A run of exactly one second: major ticks every 0.1 s, minor ones every 20 ms.
    data = spiky_profile(n=1001, spike_at=5, step_ps=1_000_000_000)
    v = shown_view(qtbot, data)
    axis = v.plot.plot.getAxis("bottom")
    v.plot.plot.setXRange(0, 1e12, padding=0)
    v.plot.grab()
    assert axis.labelText == "time (s)"
    assert axis.tickStrings([5e11], 1, 1e11) == ["0.5"]
    v.plot.plot.setXRange(0.4e12, 0.41e12, padding=0)
    v.plot.grab()
    assert axis.labelText == "time (ms)" and axis.tickStrings([4.05e11], 1, 2e9) == ["405"]


def test_pyramid_gives_exact_minimum_and_maximum_of_any_range():
    from profscope.models.data.peak_pyramid import PeakPyramid

    rng = np.random.default_rng(7)
    for n in (1, 2, 3, 1000, 4097):
        columns = rng.normal(size=(n, 3)).astype(np.float32)
        pyramid = PeakPyramid(columns)
        start = rng.integers(0, n, 300)
        stop = np.minimum(start + rng.integers(0, n + 1, 300), n)
        vmin, vmax = pyramid.ranges(start, stop)
        for a, b, lo, hi in zip(start, stop, vmin, vmax):
            if b > a:
                assert (lo == columns[a:b].min(axis=0)).all() and (hi == columns[a:b].max(axis=0)).all()
            else:
                assert np.isinf(lo).all() and np.isinf(hi).all()


def test_the_window_builds_the_plot_data_in_its_worker(qtbot, window, monkeypatch):
    import threading

    import profscope.viewer.controllers.loading
    from profscope.models.data.peak_pyramid import prepare_series

    threads = []

    def recording(data, task=None):
        threads.append(threading.current_thread())
        return prepare_series(data, task)

    monkeypatch.setattr(profscope.viewer.controllers.loading, "prepare_series", recording)
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(SMALL_XPROF))  # scan
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        pass  # then its memory profile
    assert threads and threads[0] is not threading.main_thread()
    view = window.memory_view
    assert view.plot.series is view.series[ALLOCATOR]  # handed over, not made again
    assert view.plot.series.max("in_use") == view.allocator.summary.peak_in_use


def test_rows_the_file_cannot_resolve_are_named_under_the_peak_table(qtbot, tmp_path):
    # XProf's version-1 output without its memoryProfileSnapshots list: the
    # table's rows pointing into it cannot be shown, and the view says so.
    import json

    doc = json.loads(SMALL_XPROF.read_text())
    del doc["memoryProfilePerAllocator"][ALLOCATOR]["memoryProfileSnapshots"]
    path = tmp_path / "sampled_only.memory_profile.json"
    path.write_text(json.dumps(doc))
    v = shown_view(qtbot, load_memory_profile(path))
    assert v.table.model.rowCount() == 1
    assert v.message.isVisibleTo(v) and "10 of the 11 rows" in v.message.text()
    v.pick_moment(5)
    v.peak_button.click()
    assert "left out, as XProf's own view leaves them out" in v.message.text()
