"""The flame graph of a JAX device memory profile: its boxes against
pprof-style numbers worked out here from the raw protobuf, and the widget a
user hovers, clicks and searches."""

import gzip
from collections import Counter

import numpy as np
import pytest
from conftest import DATA
from PySide6.QtCore import Qt

from profscope.models.data.flame import allocation_flame, flame_graph
from profscope.models.formats.memory_pprof import load_pprof_memory
from profscope.models.formats.memory_timeline import load_memory_timeline
from profscope.protos import pprof_pb2
from profscope.viewer.cli import main
from profscope.widgets.memory.view import MemoryView

PPROF = DATA / "memory_pprof"


def pprof_numbers(path, device):
    """As `go tool pprof -sample_index=space -top` counts them, per location
    (function, file, line) of one device's samples: flat (the stack's leaf)
    and cum (anywhere in the stack, once per sample); and the total."""
    p = pprof_pb2.Profile.FromString(gzip.decompress(path.read_bytes()))
    st = p.string_table
    space = [(st[v.type], st[v.unit]) for v in p.sample_type].index(("space", "bytes"))
    functions = {f.id: f for f in p.function}
    locations = {loc.id: loc for loc in p.location}
    flat, cum, total = Counter(), Counter(), 0
    for s in p.sample:
        if {st[lab.key]: st[lab.str] for lab in s.label}.get("device") != device:
            continue
        keys = [(st[functions[line.function_id].name], st[functions[line.function_id].filename], line.line)
                for i in s.location_id for line in locations[i].line]
        flat[keys[0]] += s.value[space]
        for key in set(keys):
            cum[key] += s.value[space]
        total += s.value[space]
    return flat, cum, total


@pytest.mark.parametrize("name", ["before.prof", "after.prof"])
def test_flame_widths_are_pprofs_numbers(name):
    flat, cum, total = pprof_numbers(PPROF / name, "cpu:0")
    f = allocation_flame(load_pprof_memory(PPROF / name).allocators["cpu:0"])
    assert f.total == total == (648_388 if name == "before.prof" else 322_624)
    # A frame's boxes add up to its cum (a box under another of the same frame counts once), its ends to flat.
    frame_of = [f.frames[k] for k in f.frame]
    mine_cum, mine_flat = Counter(), Counter()
    for box in range(1, len(f)):
        ancestors, up = set(), int(f.parent[box])
        while up > 0:
            ancestors.add(frame_of[up])
            up = int(f.parent[up])
        if frame_of[box] not in ancestors:
            mine_cum[frame_of[box]] += int(f.size[box])
        mine_flat[frame_of[box]] += int(f.self_size[box])
    assert mine_cum == cum
    assert +mine_flat == +flat
    # Each box holds its children side by side, widest first, starting at its own left edge.
    for box in range(len(f)):
        kids = np.flatnonzero(f.parent == box)
        assert int(f.size[kids].sum()) + int(f.self_size[box]) == int(f.size[box])
        assert f.size[kids].tolist() == sorted(f.size[kids].tolist(), reverse=True)
        if len(kids):
            assert int(f.start[kids[0]]) == int(f.start[box])
            assert (f.start[kids][1:] == (f.start + f.size)[kids][:-1]).all()


def test_layout_of_a_small_graph():
    f = flame_graph([([("main", "a.py", 1), ("load", "a.py", 5)], 30),
                     ([("main", "a.py", 1), ("step", "a.py", 9)], 50),
                     ([("main", "a.py", 1)], 20)], root="gpu")
    rows = [(f.name(i), int(f.depth[i]), int(f.start[i]), int(f.size[i]), int(f.self_size[i])) for i in range(len(f))]
    assert rows == [("gpu", 0, 0, 100, 0), ("main", 1, 0, 100, 20), ("step", 2, 0, 50, 50), ("load", 2, 50, 30, 30)]
    assert f.where(2) == "a.py:9" and f.where(0) == ""
    assert f.at(2, 60) == 3 and f.at(2, 85) == -1
    assert f.matched_bytes(f.matching("main")) == 100 and f.matched_bytes(f.matching("LOAD")) == 30


@pytest.fixture
def view(qtbot):
    v = MemoryView()
    qtbot.addWidget(v)
    v.resize(1400, 900)
    v.set_profile(load_pprof_memory(PPROF / "before.prof"))
    v.show()
    qtbot.waitExposed(v)
    v.tabs.setCurrentWidget(v.flame)
    return v


def box_named(canvas, name):
    return next(b for b in range(len(canvas.flame)) if canvas.flame.name(b) == name)


def test_the_flame_tab_shows_labelled_boxes(view):
    assert view.tabs.tabText(view.tabs.indexOf(view.flame)) == "Flame graph" and view.allocator.memory_id == "cpu:0"
    canvas = view.flame.canvas
    labels = canvas.labels()
    assert labels[0] == "cpu:0: 633 KiB live"
    assert "make_weights  256 KiB" in labels.values()
    assert "<listcomp>  117 KiB" in labels.values()
    # A box too narrow for its label shows it cut short; make_bias (4 KiB of 633) shows none.
    assert any(text.endswith("…") for text in labels.values())
    assert box_named(canvas, "make_bias") not in labels
    assert view.flame.readout.text().startswith("633 KiB live at the peak")


def test_hover_click_and_search(view, qtbot):
    canvas = view.flame.canvas
    box = box_named(canvas, "make_weights")
    centre = canvas.box_rect(box).center().toPoint()
    qtbot.mouseMove(canvas, centre)
    text = view.flame.readout.text()
    assert text.startswith("make_weights  (") and "jax_memory_profile.py:23)" in text
    assert "256 KiB (262,144 bytes, 40.4% of 633 KiB)" in text
    qtbot.mouseClick(canvas, Qt.LeftButton, pos=centre)
    f = canvas.flame
    assert canvas.view == (float(f.start[box]), float(f.start[box] + f.size[box]))
    drawn = {f.name(b) for b in canvas.visible_boxes().tolist()}
    assert "make_weights" in drawn and "<listcomp>" not in drawn and "__call__" in drawn
    assert canvas.box_rect(box).width() == canvas.width()  # the zoomed box fills the width
    view.flame.reset_button.click()
    assert canvas.view == (0.0, float(f.total))
    view.flame.search.setText("make_")
    assert view.flame.readout.text() == "“make_”: 2 boxes, 260 KiB (41.1% of 633 KiB)"
    assert {f.name(b) for b in np.flatnonzero(canvas.matches)} == {"make_weights", "make_bias"}
    view.flame.search.clear()
    assert canvas.matches is None


def test_the_tab_is_only_for_profiles_with_call_stacks(qtbot):
    v = MemoryView()
    qtbot.addWidget(v)
    v.set_profile(load_memory_timeline(DATA / "memory_timeline" / "cpu.json"))
    assert not v.tabs.isTabVisible(v.tabs.indexOf(v.flame))
    v.set_profile(load_pprof_memory(PPROF / "after.prof"))
    assert v.tabs.isTabVisible(v.tabs.indexOf(v.flame))


def test_the_report_draws_the_flame_graph(tmp_path):
    assert main(["report", str(PPROF / "before.prof"), "-o", str(tmp_path)]) == 0
    assert (tmp_path / "memory_before.prof_before.prof_cpu_0_flame.png").is_file()
    html = (tmp_path / "index.html").read_text()
    assert "633 KiB live at the peak" in html and "_flame.png" in html
    assert not list(tmp_path.glob("*executable_flame.png"))  # no bytes: no flame graph


