"""Choosing what to compare: File > Compare Profiles… (two locations) and the
session tree's "Compare with…" (the other side: another session or host of
the opened location, or another folder or file)."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLineEdit,
    QPushButton,
    QWidget,
)

from profscope.models.analysis.comparison import Place
from profscope.models.formats import file_patterns

OTHER_FOLDER = "Another folder…"
OTHER_FILE = "Another file…"


def browse(parent, folder: bool, start: str = "") -> str:
    if folder:
        return QFileDialog.getExistingDirectory(parent, "Profile folder", start)
    return QFileDialog.getOpenFileName(parent, "Profile file", start,
                                       f"Profiles ({' '.join(file_patterns())});;All files (*)")[0]


class CompareDialog(QDialog):
    """A baseline and a candidate location (a folder, file or grpc:// address);
    each side's latest session."""

    def __init__(self, parent, baseline: str = "", candidate: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Compare profiles")
        self.setMinimumWidth(560)
        self.edits = [QLineEdit(baseline), QLineEdit(candidate)]
        form = QFormLayout(self)
        for title, edit in zip(("Baseline:", "Candidate:"), self.edits):
            edit.setPlaceholderText("a folder, a file or grpc://host:port")
            row = QHBoxLayout()
            row.setContentsMargins(0, 0, 0, 0)
            row.addWidget(edit, 1)
            for text, folder in (("Folder…", True), ("File…", False)):
                button = QPushButton(text)
                button.clicked.connect(lambda _=False, e=edit, f=folder: self._browse(e, f))
                row.addWidget(button)
            holder = QWidget()
            holder.setLayout(row)
            form.addRow(title, holder)
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        for edit in self.edits:
            edit.textChanged.connect(self._check)
        self._check()

    def _browse(self, edit: QLineEdit, folder: bool) -> None:
        path = browse(self, folder, edit.text())
        if path:
            edit.setText(path)

    def _check(self) -> None:
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(all(e.text().strip() for e in self.edits))

    def places(self) -> tuple[Place, Place]:
        return Place(self.edits[0].text().strip()), Place(self.edits[1].text().strip())


def ask_other_side(parent, location: str, choices: list[tuple[str, str]], this: tuple[str, str]) -> Place | None:
    """The side to compare (session, host) `this` with: one of `choices` (the
    opened location's sessions and hosts), or another folder or file."""
    labels = [f"{s} / {h}" if h else s for s, h in choices]
    items = [label for label, c in zip(labels, choices) if c != this] + [OTHER_FOLDER, OTHER_FILE]
    name = f"{this[0]} / {this[1]}" if this[1] else this[0]
    item, ok = QInputDialog.getItem(parent, "Compare with", f"Compare {name} (baseline) with:", items, 0, False)
    if not ok:
        return None
    if item in (OTHER_FOLDER, OTHER_FILE):
        path = browse(parent, item == OTHER_FOLDER)
        return Place(path) if path else None
    session, host = choices[labels.index(item)]
    return Place(location, session, host)
