"""What a person could not read in a shown window: texts wider than their
room, axis tick labels that differ from their ticks' values, and names of a
profile opened earlier.

    unreadable(window, stale=("/tmp/first", "hostA")) -> ["QLabel 'Host:' needs 40 px, has 31", ...]

Checked on every visible widget: QLabel, QAbstractButton, QTabBar tabs,
QHeaderView sections (both orientations), a QComboBox's current text, a
QLineEdit's placeholder, pyqtgraph AxisItem tick labels and titles. Elided
text is allowed only where the widget elides on purpose (an elide mode, a
"…") and its tooltip holds the full text."""

from __future__ import annotations

import math
import re

import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QTextDocument
from PySide6.QtWidgets import (
    QAbstractButton,
    QAbstractScrollArea,
    QComboBox,
    QHeaderView,
    QLabel,
    QLineEdit,
    QStyle,
    QStyleOptionComboBox,
    QTabBar,
    QTreeWidget,
    QWidget,
)

ELLIPSIS = "…"
TIME_SUFFIX = {"s": 1.0, "min": 60.0, "h": 3600.0}
NUMBER = re.compile(r"^\s*([-+−]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)\s*([a-zµ]*)\s*$")


def _plain(text: str) -> str:
    if "<" in text and ">" in text:
        doc = QTextDocument()
        doc.setHtml(text)
        return doc.toPlainText()
    return text


def _width(metrics: QFontMetrics, text: str) -> int:
    return max((metrics.horizontalAdvance(line) for line in text.split("\n")), default=0)


def _name(widget: QWidget) -> str:
    return f"{type(widget).__name__}{'#' + widget.objectName() if widget.objectName() else ''}"


def _shown(widget: QWidget) -> bool:
    """Visible and not covered (a scroll area is seen through its viewport)."""
    seen = widget.viewport() if isinstance(widget, QAbstractScrollArea) else widget
    return widget.isVisible() and not seen.visibleRegion().isEmpty()


def _fits(problems: list, what: str, text: str, need: int, room: int, elides: bool, tooltip: str) -> None:
    if need <= room:
        return
    full = _plain(tooltip)
    if elides and full and all(part.strip() in full for part in text.split(ELLIPSIS)):
        return  # elided on purpose, the full text on hover
    problems.append(f"{what} {text!r} needs {need} px, has {room}")


def _label(problems: list, w: QLabel) -> None:
    text = _plain(w.text()).strip()
    if not text:
        return
    metrics, room = QFontMetrics(w.font()), w.contentsRect().width() - 2 * max(w.margin(), 0) - max(w.indent(), 0)
    if w.wordWrap():
        need = max((metrics.horizontalAdvance(word) for word in text.split()), default=0)
        room_h, need_h = w.contentsRect().height(), w.heightForWidth(w.width())
        if need_h > room_h + 2:
            problems.append(f"{_name(w)} {text[:60]!r} needs {need_h} px of height, has {room_h}")
    else:
        need = _width(metrics, text)
    _fits(problems, _name(w), text, need, room, ELLIPSIS in text, w.toolTip())


def _button(problems: list, w: QAbstractButton) -> None:
    text = w.text().replace("&&", "\0").replace("&", "").replace("\0", "&").strip()
    if not text:
        return
    if type(w).__name__ in ("QCheckBox", "QRadioButton"):  # indicator + text: their size hint
        need, room = w.sizeHint().width(), w.width()
    else:
        icon = w.iconSize().width() + 4 if not w.icon().isNull() else 0
        need, room = QFontMetrics(w.font()).horizontalAdvance(text) + icon, w.width() - 8
    _fits(problems, _name(w), text, need, room, False, w.toolTip())


def _tabs(problems: list, bar: QTabBar) -> None:
    metrics = QFontMetrics(bar.font())
    for i in range(bar.count()):
        if not bar.isTabVisible(i):
            continue
        rect, text = bar.tabRect(i), bar.tabText(i).replace("&", "")
        if not bar.rect().contains(rect):
            problems.append(f"QTabBar tab {text!r} is out of the bar ({rect.left()}..{rect.right()} of {bar.width()})")
            continue
        icon = bar.iconSize().width() + 4 if not bar.tabIcon(i).isNull() else 0
        buttons = sum(b.width() for b in (bar.tabButton(i, QTabBar.LeftSide), bar.tabButton(i, QTabBar.RightSide)) if b)
        _fits(problems, "QTabBar tab", text, metrics.horizontalAdvance(text) + icon, rect.width() - 8 - buttons,
              bar.elideMode() != Qt.ElideNone, bar.tabToolTip(i))


def _header(problems: list, h: QHeaderView) -> None:
    model = h.model()
    if model is None:
        return
    metrics, margin = QFontMetrics(h.font()), h.style().pixelMetric(QStyle.PM_HeaderMargin)
    horizontal = h.orientation() == Qt.Horizontal
    for logical in range(min(h.count(), 200)):
        if h.isSectionHidden(logical):
            continue
        if not horizontal and h.sectionViewportPosition(logical) > h.height():
            break
        text = str(model.headerData(logical, h.orientation(), Qt.DisplayRole) or "")
        if not text:
            continue
        need = _width(metrics, text)
        tooltip = str(model.headerData(logical, h.orientation(), Qt.ToolTipRole) or "")
        room = h.sectionSize(logical) - 2 * margin
        what = f"{'horizontal' if horizontal else 'vertical'} header of {_name(h.parentWidget() or h)}"
        _fits(problems, what, text, need, room, h.textElideMode() != Qt.ElideNone, tooltip)


def _combo(problems: list, w: QComboBox) -> None:
    text = w.currentText()
    if not text or w.isEditable():
        return
    option = QStyleOptionComboBox()
    w.initStyleOption(option)
    field = w.style().subControlRect(QStyle.CC_ComboBox, option, QStyle.SC_ComboBoxEditField, w)
    icon = w.iconSize().width() + 4 if not w.itemIcon(w.currentIndex()).isNull() else 0
    tooltip = w.toolTip() or str(w.itemData(w.currentIndex(), Qt.ToolTipRole) or "")
    _fits(problems, f"{_name(w)} current text", text, QFontMetrics(w.font()).horizontalAdvance(text) + icon,
          field.width() - 2, True, tooltip)


def _line_edit(problems: list, w: QLineEdit) -> None:
    text = w.placeholderText()
    if not text or w.text():
        return
    margins = w.textMargins()
    room = w.contentsRect().width() - 2 * w.style().pixelMetric(QStyle.PM_DefaultFrameWidth) - 4 \
        - margins.left() - margins.right()
    room -= sum(20 for a in w.actions() if a.isVisible())  # clear button, leading/trailing actions
    _fits(problems, f"{_name(w)} placeholder", text, QFontMetrics(w.font()).horizontalAdvance(text), room, False,
          w.toolTip())


def _axis_factor(axis: pg.AxisItem) -> float:
    """The number a label shows per unit of tick value."""
    for attribute in ("_unit", "unit"):
        unit = getattr(axis, attribute, None)
        if isinstance(unit, tuple) and len(unit) == 2 and isinstance(unit[0], (int, float)) and unit[0] > 0:
            return 1.0 / unit[0]
    return axis.autoSIPrefixScale * axis.scale


def tick_problems(axis: pg.AxisItem) -> list[str]:
    """Tick labels of a pyqtgraph axis that are not their ticks' values (in the
    axis' unit, or with a time suffix: s, min, h) and labels wider than the
    room between their ticks."""
    horizontal = axis.orientation in ("bottom", "top")
    length = axis.width() if horizontal else axis.height()
    if length <= 2 or axis.logMode or not all(map(math.isfinite, axis.range)) or axis.range[1] <= axis.range[0]:
        return []
    problems = []
    levels = axis.tickValues(axis.range[0], axis.range[1], length)
    factor = _axis_factor(axis)
    metrics = QFontMetrics(axis.style.get("tickFont") or axis.font())
    for level, (spacing, values) in enumerate(levels):
        if not values:
            continue
        strings = axis.tickStrings(values, axis.autoSIPrefixScale * axis.scale, spacing)
        shown = [(v, s) for v, s in zip(values, strings) if s]
        for value, text in shown:
            match = NUMBER.match(text.replace("−", "-"))
            if not match:
                problems.append(f"axis {axis.labelText!r}: tick {value:g} labelled {text!r}")
                continue
            number, suffix = match.groups()
            per = TIME_SUFFIX.get(suffix, 1.0) if suffix else 1.0
            if suffix and suffix not in TIME_SUFFIX:
                problems.append(f"axis {axis.labelText!r}: tick {value:g} labelled {text!r} (unknown unit)")
                continue
            decimals = len(number.split(".")[1]) if "." in number else 0
            tolerance = 0.5 * 10.0**-decimals * per / factor + 1e-9 * abs(value)
            if abs(float(number) * per / factor - value) > tolerance * 1.0001:
                problems.append(f"axis {axis.labelText!r}: tick {value:g} labelled {text!r}")
        if horizontal and len(shown) > 1 and level <= axis.style.get("maxTextLevel", 2):
            pixels = length / (axis.range[1] - axis.range[0]) * spacing
            widest = max(metrics.horizontalAdvance(s) for _, s in shown)
            if widest > pixels and level == 0:
                problems.append(f"axis {axis.labelText!r}: labels {widest} px wide, ticks {pixels:.0f} px apart")
    return problems


checked_axes: list = []  # the axes the last calls looked at (tests clear it)


MIN_PLOT_PX = 40  # a plot area lower or narrower than this shows no line a person can follow


def _axes(problems: list, view: pg.GraphicsView) -> None:
    """Tick labels, and titles, axes and plot areas cut by the view's edge or squashed."""
    room = view.viewport().rect().adjusted(-1, -1, 1, 1)
    for item in view.items():
        if not item.isVisible():
            continue
        if isinstance(item, pg.AxisItem) and item.style.get("showValues", True):
            checked_axes.append(item)
            problems.extend(tick_problems(item))
        if isinstance(item, (pg.AxisItem, pg.LabelItem, pg.ViewBox)) and item.parentItem() is not None:
            rect = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
            what = getattr(item, "labelText", None) or getattr(item, "text", "") or type(item).__name__
            if rect.width() > 0 and rect.height() > 0 and not room.contains(rect):
                where = f"{rect.x()},{rect.y()} {rect.width()}x{rect.height()}"
                problems.append(f"{type(item).__name__} {what!r} is cut by the view's edge ({where} in "
                                f"{room.width() - 2}x{room.height() - 2})")
            if isinstance(item, pg.ViewBox) and min(rect.width(), rect.height()) < MIN_PLOT_PX:
                problems.append(f"a plot area of {rect.width()}x{rect.height()} px")


def _texts(widget: QWidget):
    """Every text a visible widget shows (for the stale-name check)."""
    if isinstance(widget, QLabel):
        yield _plain(widget.text())
    elif isinstance(widget, QAbstractButton):
        yield widget.text()
    elif isinstance(widget, QComboBox):
        yield from (widget.itemText(i) for i in range(widget.count()))
    elif isinstance(widget, QLineEdit):
        yield widget.text()
    elif isinstance(widget, QTabBar):
        yield from (widget.tabText(i) for i in range(widget.count()) if widget.isTabVisible(i))
    elif isinstance(widget, QTreeWidget):
        stack = [widget.topLevelItem(i) for i in range(widget.topLevelItemCount())]
        while stack:
            item = stack.pop()
            yield item.text(0)
            stack.extend(item.child(i) for i in range(item.childCount()))
    elif isinstance(widget, QHeaderView) and widget.model() is not None:
        yield from (str(widget.model().headerData(i, widget.orientation()) or "") for i in range(widget.count()))


def unreadable(window: QWidget, stale: tuple[str, ...] = ()) -> list[str]:
    """What a person could not read in `window` (shown), one line each; with
    `stale`, also every visible text naming one of those (an earlier profile's
    path or host)."""
    problems: list[str] = []
    for widget in [window, *window.findChildren(QWidget)]:
        if not _shown(widget):
            continue
        before = len(problems)
        if isinstance(widget, QLabel):
            _label(problems, widget)
        elif isinstance(widget, QAbstractButton) and not isinstance(widget.parentWidget(), QTabBar):
            _button(problems, widget)
        elif isinstance(widget, QTabBar):
            _tabs(problems, widget)
        elif isinstance(widget, QHeaderView):
            _header(problems, widget)
        elif isinstance(widget, QComboBox):
            _combo(problems, widget)
        elif isinstance(widget, QLineEdit):
            _line_edit(problems, widget)
        elif isinstance(widget, pg.GraphicsView):
            _axes(problems, widget)
        for i in range(before, len(problems)):
            problems[i] = f"{_path(widget)}: {problems[i]}"
        for name in stale:
            problems.extend(f"{_path(widget)} names {name!r} from an earlier profile: {text[:80]!r}"
                            for text in _texts(widget) if name and name in text)
    if stale and any(name and name in window.windowTitle() for name in stale):
        problems.append(f"the window title names an earlier profile: {window.windowTitle()!r}")
    return problems


def _path(widget: QWidget) -> str:
    """Where a widget sits: its first named or tab-page ancestors."""
    parts, w = [], widget
    while w is not None and len(parts) < 3:
        if w.objectName() or w is widget:
            parts.append(_name(w))
        w = w.parentWidget()
    return "/".join(reversed(parts))

