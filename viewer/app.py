"""Starting the window."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication


def application() -> QApplication:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("Profscope")
    app.setApplicationName("Profscope")
    return app


def run_window(path: str | None = None) -> int:
    from viewer.window import MainWindow

    app = application()
    window = MainWindow()
    window.show()
    if path:
        window.open_path(path)
    return app.exec()
