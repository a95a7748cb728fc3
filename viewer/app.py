"""Starting the window."""

from __future__ import annotations

import os
import signal
import sys

from PySide6.QtCore import QTimer, qInstallMessageHandler
from PySide6.QtWidgets import QApplication

from profscope.viewer import desktop, startup


def has_display() -> bool:
    if sys.platform in ("win32", "darwin"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")) or \
        os.environ.get("QT_QPA_PLATFORM", "") not in ("", "offscreen", "minimal")


# Qt's offscreen platform says this once per window; it is noise on stderr.
QT_NOISE = ("This plugin does not support propagateSizeHints()",)


def _qt_message(mode, context, message: str) -> None:
    if not message.startswith(QT_NOISE):
        sys.stderr.write(message + "\n")


def application(offscreen_without_display: bool = False) -> QApplication:
    """The QApplication; with `offscreen_without_display`, offscreen when no
    display answers or Qt's platform could not load (see profscope.viewer.startup)."""
    if offscreen_without_display and QApplication.instance() is None and (not has_display() or startup.problem()):
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
    qInstallMessageHandler(_qt_message)  # stderr carries Profscope's own messages
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setOrganizationName("Profscope")
    app.setApplicationName("Profscope")
    app.setDesktopFileName(desktop.APP_ID)  # Wayland: matches the installed profscope.desktop
    app.setWindowIcon(desktop.app_icon())
    return app


def run_window(path: str | None = None) -> int:
    from profscope.viewer.window import MainWindow  # here: the report and --help need not load the window

    app = application()
    window = MainWindow()
    if window.settings.value("geometry") is None:  # first launch: fit the screen (laptops, 1280x800)
        screen = app.primaryScreen()
        if screen is not None:
            window.resize(window.size().boundedTo(screen.availableGeometry().size()))
    window.show()
    if path:
        window.open_path(path)
    # SIGTERM / SIGINT close the window (saving the layout) and end the event loop with 0;
    # the timer lets Python run its signal handlers while Qt waits for events.
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: window.close())
    wake = QTimer(interval=250)
    wake.timeout.connect(lambda: None)
    wake.start()
    return app.exec()
