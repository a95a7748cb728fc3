"""The memory view as a user sees it, built from results made in memory."""

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QGuiApplication, QImage

from conftest import DATA, KERAS_XPROF, SMALL_XPROF
from models.formats.log_memory import load_memory_log
from models.formats.memory_profile_file import load_memory_profile
from widgets.allocation_table import ActiveAllocationModel
from widgets.kernel_table import KernelModel
from widgets.memory_view import MemoryView

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
    vb = view.plot.plot.getViewBox()
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
    # The red marker sits at the peak's x position.
    vb = view.plot.plot.getViewBox()
    peak_x = vb.mapViewToScene(QPointF(view.allocator.summary.peak_time_ps, 0)).x()
    assert abs(int(np.argmax(red.sum(axis=0))) - peak_x) < 25


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
