"""What the HParams tab remembers per log dir: which columns are shown, in
what order and how wide, each column's scale, the colour metric, the
scatter matrix' columns and the curves' smoothing and x axis.

The state is plain JSON (columns named by kind and key, never by position,
so it survives new hparams and metrics); the window keeps it in QSettings
under a key made from the log dir's path."""

from __future__ import annotations

import hashlib
import json
import os

from profscope.widgets.hparams.scales import SCALES

SETTINGS_GROUP = "hparams_layout"
_SCALE_KINDS = {kind for kind, _ in SCALES}


def item_text(item) -> str:
    """A column's name in the saved state: ["hparam", "lr"], ["metric", ["train", "loss"]]."""
    return json.dumps(item)


def item_of(text: str):
    kind, key = json.loads(text)
    return (kind, tuple(key) if isinstance(key, list) else key)


def settings_key(path: str) -> str:
    """The QSettings key of a log dir's layout (a hash: paths hold '/' and '\\')."""
    digest = hashlib.sha1(os.path.realpath(path).encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return f"{SETTINGS_GROUP}/{digest}"


def layout_state(view) -> dict:
    header = view.table.header()
    items = view.columns.items
    order = sorted(range(len(items)), key=header.visualIndex)
    color = view.color_box.currentData()
    return {
        "order": [item_text(items[c]) for c in order],
        "hidden": [item_text(items[c]) for c in sorted(view.hidden)],
        "widths": {item_text(items[c]): header.sectionSize(c) for c in range(len(items)) if c not in view.hidden},
        "scales": {item_text(item): kind for item, kind in view.scales.items()},
        "color": item_text(("metric", color)) if color else None,
        "scatter_x": [item_text(i) for i in view.scatter_x] if view.scatter_x is not None else None,
        "scatter_y": [item_text(i) for i in view.scatter_y] if view.scatter_y is not None else None,
        "smoothing": view.curves.weight(),
        "x_axis": view.curves.x_axis(),
    }


def _items(texts) -> list:
    if not isinstance(texts, list):
        return []
    return [item for item, _ in _pairs({t: None for t in texts if isinstance(t, str)})]


def _pairs(mapping) -> list[tuple]:
    """(column, value) of a saved mapping; damaged entries are left out."""
    out = []
    for text, value in (mapping or {}).items() if isinstance(mapping, dict) else []:
        try:
            out.append((item_of(text), value))
        except (ValueError, TypeError):
            continue
    return out


def apply_before_columns(view, state: dict) -> None:
    """The parts the columns are built with: scales and the matrix' choice."""
    view.scales = {item: kind for item, kind in _pairs(state.get("scales")) if kind in _SCALE_KINDS}
    for attr in ("scatter_x", "scatter_y"):
        setattr(view, attr, _items(state[attr]) if isinstance(state.get(attr), list) else None)


def apply_after_columns(view, state: dict) -> None:
    """Order, visibility and widths of the table's columns, the colour
    metric and the curves' settings; columns the state does not know keep
    their place."""
    items = view.columns.items
    index = {item: c for c, item in enumerate(items)}
    known = [index[i] for i in _items(state.get("order")) if i in index]
    order = list(known)
    for c in range(len(items)):
        if c not in known:
            order.insert(min(c, len(order)), c)
    header = view.table.header()
    for position, c in enumerate(order):
        header.moveSection(header.visualIndex(c), position)
    hidden = {index[i] for i in _items(state.get("hidden")) if i in index}
    for c, action in enumerate(view.columns_menu.actions()):
        action.setChecked(c not in hidden)  # calls set_column_visible
    view.saved_widths = {index[item]: width for item, width in _pairs(state.get("widths"))
                         if item in index and isinstance(width, int) and width > 0}
    for c, width in view.saved_widths.items():
        header.resizeSection(c, width)
    color = state.get("color", "")
    if color is None:
        view.color_box.setCurrentIndex(0)
    elif color:
        try:
            metric = item_of(color)[1]
        except (ValueError, TypeError):
            metric = None
        view.set_color_metric(metric)
    if isinstance(state.get("smoothing"), (int, float)):
        view.curves.set_weight(float(state["smoothing"]))
    at = view.curves.x_box.findData(state.get("x_axis"))
    if at >= 0:
        view.curves.x_box.setCurrentIndex(at)
