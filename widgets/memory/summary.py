"""The summary card of one allocator, with the numbers XProf shows."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QGridLayout, QLabel

from profscope.models.core.units import format_bytes, format_time_ps
from profscope.models.data.memory_profile import AllocatorProfile
from profscope.widgets.palette import Scheme, follow


def summary_items(profile: AllocatorProfile) -> list[tuple[str, str]]:
    """(label, value) pairs, shared by the card and the report."""
    s = profile.summary
    sampled = "" if profile.complete else " (of the sampled points)"
    return [
        ("Allocations", f"{s.num_allocations:,}{sampled}"),
        ("Deallocations", f"{s.num_deallocations:,}{sampled}"),
        ("Memory capacity", format_bytes(s.memory_capacity) if s.memory_capacity else "not reported"),
        ("Peak usage (lifetime)", format_bytes(s.peak_bytes_lifetime)),
        ("Peak usage (profile window)", format_bytes(s.peak_in_use)),
        ("Time of the window peak", format_time_ps(s.peak_time_ps)),
        ("Stack at peak", format_bytes(s.peak_stack)),
        ("Heap at peak", format_bytes(s.peak_heap)),
        ("Free at peak", format_bytes(s.peak_free)),
        ("Fragmentation at peak", f"{s.peak_fragmentation * 100:.1f} %"),
        ("Snapshots on the timeline", f"{len(profile.timeline):,}" + ("" if profile.complete else " (XProf sample)")),
    ]


class MemorySummaryCard(QFrame):
    COLUMNS = 4

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setFrameShape(QFrame.StyledPanel)
        self._grid = QGridLayout(self)
        self._grid.setContentsMargins(8, 4, 8, 4)
        self._grid.setHorizontalSpacing(16)
        self._values: dict[str, QLabel] = {}
        self._names: list[QLabel] = []
        follow(self, self._apply_scheme)

    def _apply_scheme(self, scheme: Scheme) -> None:
        for name in self._names:
            name.setStyleSheet(f"color: {scheme.secondary().name()}")

    def set_profile(self, profile: AllocatorProfile | None) -> None:
        items = summary_items(profile) if profile is not None else []
        if [k for k, _ in items] != list(self._values):
            while self._grid.count():
                self._grid.takeAt(0).widget().deleteLater()
            self._values, self._names = {}, []
            for n, (label, _) in enumerate(items):
                row, col = divmod(n, self.COLUMNS)
                name = QLabel(label + ":")
                name.setStyleSheet(f"color: {Scheme.of(self).secondary().name()}")
                self._names.append(name)
                value = QLabel(textInteractionFlags=Qt.TextSelectableByMouse)
                value.setStyleSheet("font-weight: bold")
                self._grid.addWidget(name, row, 2 * col, Qt.AlignRight)
                self._grid.addWidget(value, row, 2 * col + 1)
                self._values[label] = value
        for label, value in items:
            self._values[label].setText(value)

    def value(self, label: str) -> str:
        return self._values[label].text()
