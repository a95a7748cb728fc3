"""The Memory tab's Allocator state history and Cached segment timeline for CUDA memory snapshots, driven as a
user does: stepping with the buttons, the keys and the event list, hovering a block, clicking a band."""

import numpy as np
from conftest import DATA, SMALL_XPROF
from PySide6.QtCore import QEvent, QPoint, QPointF, Qt
from PySide6.QtGui import QColor, QMouseEvent
from PySide6.QtWidgets import QApplication
from test_memory_widgets import shown_view

from profscope.models.formats.memory_profile_file import load_memory_profile
from profscope.models.formats.torch_snapshot import load_torch_snapshot
from profscope.models.repository.locations import open_repository
from profscope.viewer.report import write_report
from profscope.widgets.memory.allocator_state import (
    ALLOCATED_A,
    ALLOCATED_B,
    AWAITING,
    CODE_COLORS,
    MARGIN,
    POOL_BORDER,
)
from profscope.widgets.memory.view import SEGMENTS_VIEW, STATE_VIEW, TIMELINE_VIEW

TYPED = DATA / "torch_snapshot" / "typed_snapshot.pickle"
EXPANDABLE = DATA / "torch_snapshot" / "expandable_snapshot.pickle"
BASE0 = 0x7F0000000000
MiB = 1 << 20


def state_tab(qtbot, path=TYPED):
    v = shown_view(qtbot, load_torch_snapshot(path))
    v.allocator_box.setCurrentText("cuda:0")
    v.views.setCurrentIndex(STATE_VIEW)
    qtbot.waitExposed(v.state_view.canvas)
    return v, v.state_view


def shown(s) -> str:
    """The event shown, after the canvas painted it."""
    s.canvas.viewport().grab()
    return s.event_label.text()


def hover(widget, pos: QPoint) -> None:
    """The mouse moved over a point of a widget (no button held), as the window system sends it."""
    event = QMouseEvent(QEvent.MouseMove, QPointF(pos), QPointF(widget.mapToGlobal(pos)), Qt.NoButton, Qt.NoButton,
                        Qt.NoModifier)
    QApplication.sendEvent(widget, event)


def block_point(canvas, address: int) -> QPoint:
    """The middle of a block's bar in the canvas' viewport."""
    st = canvas.state
    canvas._layout()
    seg = int(np.searchsorted(st.seg_address, np.uint64(address), "right")) - 1
    x = canvas.x[seg] + (address - int(st.seg_address[seg])) * canvas.scale + 2
    y = MARGIN + canvas.row[seg] * canvas.row_height + canvas.row_height // 2 - canvas.verticalScrollBar().value()
    return QPoint(int(x), int(y))


def test_snapshot_opens_on_its_last_event_and_steps_with_buttons_keys_and_list(qtbot):
    v, s = state_tab(qtbot)
    assert v.views.tabBar().isVisible() and v.views.isTabVisible(SEGMENTS_VIEW)
    assert shown(s).startswith("#14  segment_unmap  0x7f0001400000  2 MiB")
    assert s.position.text() == "event 15 of 15" and not s.next_button.isEnabled()
    qtbot.mouseClick(s.prev_button, Qt.LeftButton)
    assert shown(s).startswith("#13  free") and "/work/train.py:10:step" in shown(s)
    s.canvas.setFocus()
    qtbot.keyClick(s.canvas, Qt.Key_Left)
    qtbot.keyClick(s.canvas, Qt.Key_Left)
    assert shown(s).startswith("#11  alloc          0x7f0001400000  2 MiB")
    assert s.list.currentIndex().row() == 11 and s.slider.value() == 11
    qtbot.keyClick(s.canvas, Qt.Key_PageUp)
    assert shown(s).startswith("#1  alloc")
    qtbot.keyClick(s.list, Qt.Key_Down)  # the event list's own keys move the state too
    assert shown(s).startswith("#2  alloc          0x7f0000400000  2 MiB")
    qtbot.keyClick(s, Qt.Key_Home)
    assert shown(s).startswith("#0  segment_alloc") and not s.prev_button.isEnabled()
    s.slider.setValue(9)
    assert shown(s) == "#9  OOM: requested 64 MiB, CUDA has 3 MiB free"
    qtbot.keyClick(s, Qt.Key_End)
    assert shown(s).startswith("#14")


def test_blocks_are_coloured_by_state(qtbot):
    _, s = state_tab(qtbot)
    allocated = (ALLOCATED_A, ALLOCATED_B)
    s.select(5)  # snapshot: 4 + 2 + 6 MiB allocated in the first segment, 1.5 MiB in the private pool's
    shown(s)
    assert s.canvas.drawn.get(AWAITING, 0) == 0 and sum(s.canvas.drawn.get(c, 0) for c in allocated) > 0
    assert s.canvas.drawn.get(POOL_BORDER, 0) > 0  # the private pool's outline
    assert "allocated 13.5 MiB in 4 blocks" in s.totals.text()
    s.select(6)  # free_requested on stream 7: the 2 MiB block awaits its free
    shown(s)
    assert s.canvas.drawn[AWAITING] > 0 and "awaiting free 2 MiB" in s.totals.text()
    image = s.canvas.viewport().grab().toImage()
    assert image.pixelColor(block_point(s.canvas, BASE0 + 5 * MiB)) == QColor(CODE_COLORS[AWAITING])
    s.select(8)  # free_completed: gone, the space is free again
    shown(s)
    assert s.canvas.drawn.get(AWAITING, 0) == 0
    image = s.canvas.viewport().grab().toImage()
    assert image.pixelColor(block_point(s.canvas, BASE0 + MiB)) in (QColor(CODE_COLORS[ALLOCATED_A]),
                                                                      QColor(CODE_COLORS[ALLOCATED_B]))


def test_hovering_a_block_shows_its_size_state_and_stack(qtbot):
    _, s = state_tab(qtbot)
    s.select(4)
    shown(s)
    hover(s.canvas.viewport(), block_point(s.canvas, BASE0 + 7 * MiB))
    text = s.details.toPlainText()
    assert text.startswith("block 0x7f0000600000: 6 MiB requested, allocated\nsegment 0x7f0000000000: 20 MiB")
    assert "/work/train.py:10:backward" in text and "ceval" not in text  # PyTorch's frame filter
    hover(s.canvas.viewport(), block_point(s.canvas, BASE0 + 15 * MiB))
    assert s.details.toPlainText().startswith("free (inactive) 0x7f0000c00000: 8 MiB")


def test_expandable_segment_is_one_bar_that_grows(qtbot):
    _, s = state_tab(qtbot, EXPANDABLE)
    widths = {}
    for k in (0, 2, 6):
        s.select(k)
        shown(s)
        widths[k] = s.canvas.state.seg_size.tolist()
    assert widths == {0: [2 * MiB, 2 * MiB], 2: [6 * MiB, 2 * MiB], 6: [8 * MiB, 2 * MiB]}
    s.select(5)
    assert shown(s) == "#5  OOM: requested 64 MiB, CUDA has 1 MiB free"


def test_cached_segment_timeline_hover_and_click_go_to_the_allocator_state(qtbot):
    v, s = state_tab(qtbot)
    v.views.setCurrentIndex(SEGMENTS_VIEW)
    t = v.segment_view.timeline
    qtbot.waitExposed(t)
    sx, sy, n, peak = t._scales()
    assert (n, peak) == (15, 24 * MiB)
    point = QPoint(int(t.LEFT + 4.5 * sx), int(t.height() - t.BOTTOM - 10 * MiB * sy))  # event 3, 10 MiB up
    hover(t, point)
    assert v.segment_view.info.text().startswith(
        "segment 0x7f0000000000: 20 MiB, stream 0; reserved at event #0 (segment_alloc), still reserved at the "
        "snapshot\nreserved at #3: 22 MiB")
    qtbot.mouseClick(t, Qt.LeftButton, pos=point)
    assert v.views.currentIndex() == STATE_VIEW and shown(s).startswith("#3  free")
    assert t.marker == 3
    # the private pool's segment, there before recording: the band at the bottom
    hover(t, QPoint(int(t.LEFT + 0.5 * sx), t.height() - t.BOTTOM - 2))
    assert "private pool (1,3); reserved before recording began" in v.segment_view.info.text()


def test_other_sources_show_only_the_timeline(qtbot):
    v = shown_view(qtbot, load_memory_profile(SMALL_XPROF))
    assert not v.views.tabBar().isVisible() and v.views.currentIndex() == TIMELINE_VIEW
    assert not v.views.isTabVisible(STATE_VIEW) and v.history(v.allocator_box.currentText()) is None


def test_report_has_the_allocator_state_and_segments_of_each_device(tmp_path):
    repo = open_repository(TYPED)
    written = write_report(repo, tmp_path)
    names = sorted(p.name for p in written)
    assert [n for n in names if n.startswith(("allocator_state_", "cached_segments_"))] == [
        "allocator_state_typed_snapshot.pickle_typed_snapshot_cuda_0.png",
        "allocator_state_typed_snapshot.pickle_typed_snapshot_cuda_1.png",
        "cached_segments_typed_snapshot.pickle_typed_snapshot_cuda_0.png",
        "cached_segments_typed_snapshot.pickle_typed_snapshot_cuda_1.png"]
    index = (tmp_path / "index.html").read_text()
    assert "15 events; at the last: 2 segments, 23,068,672 bytes reserved" in index


def test_a_long_event_list_is_not_laid_out_row_by_row(qtbot, monkeypatch):
    """Showing the last of 200,000 events asks the model for its rows a few times, not once per row (a list view
    did that on every scroll: seconds of a frozen window for a trace of millions of events)."""
    from profscope.models.analysis.allocator_state import build_history
    from profscope.models.data.cuda_snapshot import from_plain
    from profscope.widgets.memory.allocator_state import AllocatorStateView, EventModel

    entries = []
    for i in range(100_000):
        entries += [{"action": "alloc", "addr": 4096 * i, "size": 512}, {"action": "free_completed",
                                                                        "addr": 4096 * i, "size": 512}]
    history = build_history(from_plain({"segments": [], "device_traces": [entries]}), 0)
    calls = []
    count = EventModel.rowCount
    monkeypatch.setattr(EventModel, "rowCount", lambda self, parent=None: calls.append(1) or count(self))
    view = AllocatorStateView()
    qtbot.addWidget(view)
    view.resize(1000, 600)
    view.show()
    view.set_history(history)
    QApplication.processEvents()
    assert view.list.currentIndex().row() == view.events.rowCount() - 1
    assert len(calls) < 1000
