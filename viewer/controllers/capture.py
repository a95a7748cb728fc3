"""File > Capture Profile: asks a running program's profiler server for a
trace, saves it into a repository folder and opens that log dir."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from profscope.viewer.workers import TaskRunner


class CaptureDialog(QDialog):
    """Where to capture from, for how long, and where to save (a repository folder)."""

    def __init__(self, parent, settings: QSettings):
        super().__init__(parent)
        self.setWindowTitle("Capture a profile")
        self.address = QLineEdit(settings.value("capture_address", "localhost:6009"))
        self.address.setToolTip("The profiler server of a running program: tf.profiler.experimental.server.start(port) "
                                "or jax.profiler.start_server(port)")
        self.duration = QSpinBox(minimum=100, maximum=600_000, singleStep=500, suffix=" ms",
                                 value=int(settings.value("capture_ms", 2000)))
        self.folder = QLineEdit(
            settings.value("capture_folder", str(Path.home() / "profscope-logs" / "plugins" / "profile"))
        )
        browse = QPushButton("…")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.folder)
        row.addWidget(browse)
        folder_row = QWidget()
        folder_row.setLayout(row)
        form = QFormLayout(self)
        form.addRow("Profiler address:", self.address)
        form.addRow("Duration:", self.duration)
        form.addRow("Save into:", folder_row)
        buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.settings = settings

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(
            self, "Repository folder (<logdir>/plugins/profile)", self.folder.text()
        )
        if path:
            self.folder.setText(path)

    def values(self) -> tuple[str, int, str]:
        self.settings.setValue("capture_address", self.address.text().strip())
        self.settings.setValue("capture_ms", self.duration.value())
        self.settings.setValue("capture_folder", self.folder.text().strip())
        return self.address.text().strip(), self.duration.value(), self.folder.text().strip()


class CaptureController(QObject):
    """Runs a capture in `runner`, then opens the log dir it was saved into."""

    def __init__(self, parent: QWidget, runner: TaskRunner, settings: QSettings, open_path: Callable[[str], None],
                 show_error: Callable[[str], None], set_status: Callable[[str], None]):
        super().__init__(parent)
        self.parent_widget = parent  # the dialog's parent
        self.runner = runner
        self.settings = settings
        self.open_path = open_path
        self.show_error = show_error
        self.set_status = set_status

    def capture_dialog(self) -> None:
        dialog = CaptureDialog(self.parent_widget, self.settings)
        if dialog.exec():
            address, duration, folder = dialog.values()
            self.set_status(f"Capturing {duration:,} ms from {address}…")
            from profscope.models.remote.client import capture  # gRPC loads with the first capture

            self.runner.start(lambda task: capture(address, duration, Path(folder), task=task), self.captured)

    def captured(self, result) -> None:
        """A capture's (session folder, whether its trace is empty): opens its log dir."""
        folder, empty = result
        if empty:
            self.show_error(f"The trace of {folder.name} is empty: was the program running during the capture?")
        logdir = folder.parent.parent.parent if folder.parent.name == "profile" else folder.parent
        self.open_path(str(logdir))
