"""The Statistics tab's pages of XProf's HLO tools: what they show for the
fixtures' results (and XProf's own JSON of them)."""

import json

from conftest import DATA
from PySide6.QtCore import Qt

from profscope.models.analysis.xprof.memory_viewer import memory_viewer_result, module_names
from profscope.models.core.task import TaskState
from profscope.widgets.xprof.memory_viewer_page import MemoryViewerPage

XPROF = DATA / "xprof"
JAXPROG = [XPROF / "jaxprog.xplane.pb"]


def cell(view, row, column):
    return view.model().index(row, column).data()


def test_memory_viewer_page(qtbot):
    page = MemoryViewerPage()
    qtbot.addWidget(page)
    page.set_modules(module_names(JAXPROG), "jit_conv_block(18)")
    assert page.module_box.currentText() == "jit_conv_block(18)"
    with qtbot.waitSignal(page.module_selected) as chosen:
        page.module_box.setCurrentText("jit_train_step(16)")
    assert chosen.args == ["jit_train_step(16)"]
    page.set_data(memory_viewer_result(JAXPROG, {"module_name": "jit_train_step(16)"}, TaskState()))
    assert "jit_train_step" in page.summary.text() and "peak 243.3 KiB at step 15 of 20" in page.summary.text()
    table = page.table
    assert [cell(table, 0, c) for c in range(6)] == [
        "64.0 KiB", "f32[128,128]{1,0}", "jit(train_step)/transpose(jvp())/transpose", "dot.1", "Output", "dot"
    ]
    assert cell(table, 0, 6) == "whole program"
    last = table.model().rowCount() - 1
    assert (cell(table, last, 3), cell(table, last, 6)) == ("ynn_fusion", "steps 15–17")
    # A click on a temporary buffer draws its lifetime on the chart.
    table.selectRow(last)
    assert page.lifetime.isVisible() and page.lifetime.getRegion() == (15, 17)
    assert page.lifetime_label.text() == "ynn_fusion: allocated at step 15, freed at step 17"
    # Sorting by op code.
    table.sortByColumn(5, Qt.AscendingOrder)
    codes = [cell(table, r, 5) for r in range(table.model().rowCount())]
    assert codes == ["", "dot", "dot", "fusion", "fusion", "parameter", "parameter"]


def test_memory_viewer_page_takes_xprofs_json(qtbot):
    page = MemoryViewerPage()
    qtbot.addWidget(page)
    doc = json.loads((XPROF / "tools" / "jaxprog.memory_viewer.jit_conv_block(18).json").read_text())
    page.set_data(doc)
    assert "peak 97.4 KiB at step 0 of 4" in page.summary.text()  # XProf leaves out a position 0
    assert cell(page.table, 0, 3) == "conv_general_dilated.1"
    page.table.selectRow(0)
    assert page.lifetime.getRegion() == (0, 1)
