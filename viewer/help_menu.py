"""The Help menu's contents: the keyboard shortcuts (read from the real menu
actions and the timeline's key help), the About text and the log folder."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import PySide6
from PySide6.QtCore import qVersion
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLineEdit, QMenuBar, QTreeWidget, QTreeWidgetItem, QVBoxLayout

from profscope.viewer import crashlog
from profscope.widgets.timeline.view import KEYS_HELP


def _plain(text: str) -> str:
    """A menu text without its mnemonic and ellipsis: "Open &Folder…" -> "Open Folder"."""
    return re.sub(r"&(.)", r"\1", text).rstrip("…").strip()


def timeline_keys() -> list[tuple[str, str]]:
    """(keys, what they do) of the timeline canvas, read from the view's own key help."""
    rows = []
    for line in KEYS_HELP.split("<br>"):
        if line.startswith("<b>"):
            continue
        for item in line.split(" · "):
            keys, _, what = item.partition(": ")
            rows.append((keys.strip(), what.strip()))
    return rows


def shortcut_rows(menu_bar: QMenuBar) -> list[tuple[str, str, str]]:
    """(action, shortcut, where) of every menu action with a shortcut, then the timeline's keys."""
    rows = []
    for menu_action in menu_bar.actions():
        menu = menu_action.menu()
        for action in menu.actions() if menu is not None else ():
            if action.menu() is None and not action.isSeparator() and not action.shortcut().isEmpty():
                rows.append(
                    (
                        _plain(action.text()),
                        action.shortcut().toString(QKeySequence.NativeText),
                        f"{_plain(menu_action.text())} menu",
                    )
                )
    rows += [(what, keys, "Timeline") for keys, what in timeline_keys()]
    return rows


def app_version() -> str:
    try:
        return importlib.metadata.version("profscope")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def about_text(settings_file: str) -> str:
    return (
        f"<h3>Profscope {app_version()}</h3>"
        "<p>A desktop viewer for TensorFlow, Keras, JAX and PyTorch profiles and TensorBoard HParams sweeps.</p>"
        f"<p>Qt {qVersion()} · PySide6 {PySide6.__version__}</p>"
        f"<p>Settings: {settings_file}</p>"
        f"<p>Log folder: {crashlog.log_folder()}</p>"
    )


def log_folder() -> Path:
    """Where Profscope keeps its cache and logs (created on demand)."""
    folder = crashlog.log_folder()
    folder.mkdir(parents=True, exist_ok=True)
    return folder


class ShortcutsDialog(QDialog):
    """Every menu action with its shortcut, plus the timeline's keys, with a filter."""

    def __init__(self, parent, rows: list[tuple[str, str, str]]):
        super().__init__(parent)
        self.setWindowTitle("Keyboard Shortcuts")
        self.filter = QLineEdit(placeholderText="Filter (e.g. open, zoom, Ctrl)", clearButtonEnabled=True)
        self.list = QTreeWidget(rootIsDecorated=False, alternatingRowColors=True)
        self.list.setHeaderLabels(["Action", "Shortcut", "Where"])
        for row in rows:
            QTreeWidgetItem(self.list, list(row))
        for column in range(3):
            self.list.resizeColumnToContents(column)
        self.filter.textChanged.connect(self.apply_filter)
        buttons = QDialogButtonBox(QDialogButtonBox.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.list)
        layout.addWidget(buttons)
        self._fit_content(parent)

    def _fit_content(self, parent) -> None:
        """Wide enough for every column whole and tall enough for every row, within
        the screen (the list scrolls when the rows are taller)."""
        tree = self.list
        chrome = 2 * tree.frameWidth() + tree.verticalScrollBar().sizeHint().width()
        width = sum(tree.header().sectionSize(c) for c in range(3)) + chrome
        rows = tree.topLevelItemCount() * max(tree.sizeHintForRow(0), 1) if tree.topLevelItemCount() else 0
        height = tree.header().sizeHint().height() + rows + chrome
        screen = (parent.screen() if parent is not None else self.screen()).availableGeometry()
        margins = self.layout().contentsMargins()
        tree.setMinimumWidth(min(width, screen.width() - margins.left() - margins.right() - 40))
        hint = self.sizeHint()
        self.resize(min(hint.width(), screen.width() - 40),
                    min(hint.height() - tree.sizeHint().height() + height, screen.height() - 80))

    def visible_rows(self) -> list[tuple[str, str, str]]:
        return [
            tuple(item.text(c) for c in range(3))
            for i in range(self.list.topLevelItemCount())
            if not (item := self.list.topLevelItem(i)).isHidden()
        ]

    def apply_filter(self, text: str) -> None:
        words = text.lower().split()
        for i in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(i)
            haystack = " ".join(item.text(c) for c in range(3)).lower()
            item.setHidden(not all(w in haystack for w in words))
