"""Opening a location: a folder, a file or a grpc:// server, from a dialog,
the Open Recent menu or a drop; the scan runs in the worker."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMenu, QWidget

from profscope.models.formats import file_patterns
from profscope.models.hparams.logdir import logdir_signature
from profscope.models.remote import SCHEME
from profscope.models.repository.locations import open_location
from profscope.viewer.workers import TaskRunner

MAX_RECENT = 8


class OpenController(QObject):
    """Opens paths in `runner` and keeps the recent-files list (settings
    "recent", newest first) and its menu. A scanned location comes back as
    `opened(path, repository or None, (HParamsData, log dir signature) or None)`;
    a scan that fails as `failed(path, message)` (claim_failure, called with
    the runner's failures, tells a scan's from a load's)."""

    opened = Signal(str, object, object)
    failed = Signal(str, str)

    def __init__(self, parent: QWidget, runner: TaskRunner, settings: QSettings, recent_menu: QMenu,
                 set_status: Callable[[str], None]):
        super().__init__(parent)
        self.parent_widget = parent  # the dialogs' parent
        self.runner = runner
        self.settings = settings
        self.recent_menu = recent_menu
        self.set_status = set_status
        self.path: str | None = None  # the location last asked for
        self.scanning: str | None = None  # the path whose scan is the runner's current job (see scan_ended)
        self.update_recent_menu()

    def scan_ended(self) -> None:
        """The scan ended: also when cancelled or replaced by another job (the runner's `cancelled`)."""
        self.scanning = None

    def recent(self) -> list[str]:
        value = self.settings.value("recent", [])
        return [value] if isinstance(value, str) else list(value or [])

    def update_recent_menu(self) -> None:
        self.recent_menu.clear()
        for path in self.recent():
            self.recent_menu.addAction(path, lambda p=path: self.open_path(p))
        self.recent_menu.setEnabled(bool(self.recent()))

    def remember(self, path: str) -> None:
        recent = [path] + [p for p in self.recent() if p != path]
        self.settings.setValue("recent", recent[:MAX_RECENT])
        self.settings.setValue("last_folder", str(Path(path).parent if Path(path).is_file() else path))
        self.update_recent_menu()

    def open_path(self, path: str) -> None:
        """Scans a path in the background for profiles and HParams data."""
        self.set_status(f"Opening {path}…")
        self.remember(str(path))
        self.path = str(path)

        def job(task):
            signature = logdir_signature(path) if Path(path).is_dir() else None
            repo, hparams = open_location(path, task)
            return repo, (hparams, signature) if hparams is not None else None

        self.runner.start(job, lambda result, path=self.path: (self.scan_ended(), self.opened.emit(path, *result)))
        self.scanning = self.path  # after start: replacing the previous job ends the previous scan

    def claim_failure(self, message: str) -> bool:
        """A failure of the runner: if it is the scan's, emits `failed` and says so."""
        if self.scanning is None:
            return False
        path = self.scanning
        self.scanning = None
        self.failed.emit(path, message)
        return True

    def reload(self) -> None:
        if self.path:
            self.open_path(self.path)

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(
            self.parent_widget, "Open log dir or profile folder", self.settings.value("last_folder", "")
        )
        if path:
            self.open_path(path)

    def open_file_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(
            self.parent_widget,
            "Open profile file",
            self.settings.value("last_folder", ""),
            f"Profiles ({' '.join(file_patterns())});;All files (*)",
        )
        if path:
            self.open_path(path)

    def open_server_dialog(self) -> None:
        address, ok = QInputDialog.getText(
            self.parent_widget,
            "Open a ProfileAnalysis server",
            "Address (host:port):",
            text=self.settings.value("last_server", "localhost:50051"),
        )
        if ok and address.strip():
            self.settings.setValue("last_server", address.strip())
            self.open_path(SCHEME + address.strip().removeprefix(SCHEME))

    # ------------------------------------------------------------ drops

    @staticmethod
    def accepts_drag(event) -> bool:
        return event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls())

    def drop(self, event) -> None:
        """Opens the first local file or folder dropped."""
        for url in event.mimeData().urls():
            if url.isLocalFile():
                self.open_path(url.toLocalFile())
                event.acceptProposedAction()
                return
