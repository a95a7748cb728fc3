"""Desktop conventions of the main window: the Help menu, the icon, the
layout (offscreen geometry)."""

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication

from viewer.window import MainWindow, timeline_keys


@pytest.fixture
def window(qtbot, tmp_path):
    w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    qtbot.addWidget(w)
    yield w
    w.runner.cancel()
    assert w.runner.wait(10000)


def test_help_menu_has_its_actions(window):
    titles = [a.text() for a in window.menuBar().actions()]
    assert titles[-1] == "&Help"
    texts = [a.text() for a in window.help_menu.actions() if not a.isSeparator()]
    assert texts == ["&Keyboard Shortcuts", "Open &Log Folder", "&About Profscope"]


def test_f1_opens_the_shortcuts_from_the_real_actions(qtbot, window):
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window.tree, Qt.Key_F1)
    dialog = window.shortcuts_dialog
    assert dialog.isVisible()
    rows = dialog.visible_rows()
    assert ("Open Folder", "Ctrl+O", "File menu") in rows
    assert ("Keyboard Shortcuts", "F1", "Help menu") in rows
    # the timeline's keys come from the view's own help text
    assert ("zoom in / out", "W / S", "Timeline") in rows
    qtbot.keyClicks(dialog.filter, "zoom")
    narrowed = dialog.visible_rows()
    assert 0 < len(narrowed) < len(rows)
    assert all("zoom" in " ".join(r).lower() for r in narrowed)
    assert ("Reset Zoom", "Ctrl+0", "View menu") in narrowed and ("Open Folder", "Ctrl+O", "File menu") not in narrowed
    dialog.filter.setText("ctrl+o")
    assert dialog.visible_rows() == [("Open Folder", "Ctrl+O", "File menu")]
    dialog.close()


def test_a_new_action_appears_in_the_shortcuts(window):
    menu = window.menuBar().actions()[0].menu()
    window._action(menu, "&Frobnicate", "Ctrl+Shift+F", lambda: None)
    assert ("Frobnicate", "Ctrl+Shift+F", "File menu") in window.shortcut_rows()


def test_timeline_keys_are_parsed():
    keys = dict(timeline_keys())
    assert keys["A / D"] == "pan left / right" and keys["F"] == "fit the selection"


def test_about_shows_versions_and_settings(window):
    import PySide6
    from PySide6.QtCore import qVersion

    window.show_about()
    text = window.about_box.text()
    assert window.about_box.isVisible()
    assert f"Qt {qVersion()}" in text and f"PySide6 {PySide6.__version__}" in text
    assert window.settings.fileName() in text and "Profscope 0." in text
    window.about_box.close()


def test_open_log_folder(window, tmp_path, monkeypatch):
    from PySide6.QtCore import QStandardPaths

    monkeypatch.setattr(QStandardPaths, "writableLocation", lambda kind: str(tmp_path / "cache" / "Profscope"))
    opened = []
    window.open_url = lambda url: opened.append(url.toLocalFile()) or True
    window.open_log_folder()
    assert opened == [str(tmp_path / "cache" / "Profscope")] and (tmp_path / "cache" / "Profscope").is_dir()


def test_window_and_application_icon(window):
    from PySide6.QtGui import QImage

    from viewer import desktop

    assert not window.windowIcon().isNull()
    assert window.windowIcon().pixmap(64, 64).width() == 64
    png = QImage(str(desktop.ICON_PNG))
    assert (png.width(), png.height()) == (256, 256) and desktop.ICON_SVG.read_text().startswith("<svg")


def test_install_desktop_entry_writes_the_files(tmp_path, monkeypatch, capsys):
    from viewer import desktop
    from viewer.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    assert main(["--install-desktop-entry"]) == 0
    share = tmp_path / "share"
    entry = (share / "applications" / "profscope.desktop").read_text()
    lines = dict(line.split("=", 1) for line in entry.splitlines()[1:] if "=" in line)
    assert entry.startswith("[Desktop Entry]\n") and lines["Type"] == "Application" and lines["Name"] == "Profscope"
    assert lines["Exec"].endswith("profscope %f") and lines["Icon"] == "profscope"
    assert set(lines["MimeType"].rstrip(";").split(";")) == {
        "application/json", "application/x-xplane+protobuf", "application/x-pytorch-trace+gzip"}
    assert (share / "icons" / "hicolor" / "256x256" / "apps" / "profscope.png").read_bytes() == desktop.ICON_PNG.read_bytes()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / "profscope.svg").exists()
    mime = (share / "mime" / "packages" / "profscope.xml").read_text()
    assert 'glob pattern="*.xplane.pb"' in mime and 'glob pattern="*.pt.trace.json.gz"' in mime
    import xml.dom.minidom
    xml.dom.minidom.parseString(mime)  # well-formed
    assert str(share / "applications" / "profscope.desktop") in capsys.readouterr().out
