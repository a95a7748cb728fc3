"""Desktop conventions of the main window: the Help menu, the icon, the
layout (offscreen geometry)."""

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QApplication, QWidget

from profscope.viewer.help_menu import timeline_keys
from profscope.viewer.window import MainWindow


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
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    opened = []
    window.open_url = lambda url: opened.append(url.toLocalFile()) or True
    window.open_log_folder()
    folder = tmp_path / "cache" / "Profscope" / "Profscope"  # where Qt's CacheLocation is, and the log
    assert opened == [str(folder)] and folder.is_dir()


def test_window_and_application_icon(window):
    from PySide6.QtGui import QImage

    from profscope.viewer import desktop

    assert not window.windowIcon().isNull()
    assert window.windowIcon().pixmap(64, 64).width() == 64
    png = QImage(str(desktop.ICON_PNG))
    assert (png.width(), png.height()) == (256, 256) and desktop.ICON_SVG.read_text().startswith("<svg")


def test_install_desktop_entry_writes_the_files(tmp_path, monkeypatch, capsys):
    from profscope.viewer import desktop
    from profscope.viewer.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    assert main(["--install-desktop-entry"]) == 0
    share = tmp_path / "share"
    entry = (share / "applications" / "profscope.desktop").read_text()
    lines = dict(line.split("=", 1) for line in entry.splitlines()[1:] if "=" in line)
    assert entry.startswith("[Desktop Entry]\n") and lines["Type"] == "Application" and lines["Name"] == "Profscope"
    assert lines["Exec"].endswith("profscope %f") and lines["Icon"] == "profscope"
    assert set(lines["MimeType"].rstrip(";").split(";")) == {
        "application/json", "application/x-xplane+protobuf", "application/x-pytorch-trace+gzip"}
    assert (
        share / "icons" / "hicolor" / "256x256" / "apps" / "profscope.png"
    ).read_bytes() == desktop.ICON_PNG.read_bytes()
    assert (share / "icons" / "hicolor" / "scalable" / "apps" / "profscope.svg").exists()
    mime = (share / "mime" / "packages" / "profscope.xml").read_text()
    assert 'glob pattern="*.xplane.pb"' in mime and 'glob pattern="*.pt.trace.json.gz"' in mime
    import xml.dom.minidom

    xml.dom.minidom.parseString(mime)  # well-formed
    assert str(share / "applications" / "profscope.desktop") in capsys.readouterr().out


def test_install_desktop_entry_writes_nothing_without_its_icons(tmp_path, monkeypatch, capsys):
    from profscope.viewer import desktop
    from profscope.viewer.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.setattr(desktop, "ICON_PNG", tmp_path / "missing.png")
    assert main(["--install-desktop-entry"]) == 1
    assert "lacks Profscope's icons" in capsys.readouterr().err
    assert not (tmp_path / "share").exists()


def test_install_desktop_entry_is_for_linux_only(tmp_path, monkeypatch, capsys):
    from profscope.viewer.cli import main

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "share"))
    monkeypatch.setattr("sys.platform", "darwin")
    assert main(["--install-desktop-entry"]) == 1
    assert "for Linux desktops" in capsys.readouterr().err and not (tmp_path / "share").exists()


# ---------------------------------------------------------------- layout (offscreen geometry)


def _open(qtbot, window, path):
    with qtbot.waitSignal(window.runner.finished, timeout=20000):
        window.open_path(str(path))
    qtbot.waitUntil(lambda: not window.runner.busy, timeout=20000)


def _widest_top_level(tree) -> int:
    return max(
        tree.sizeHintForIndex(tree.indexFromItem(tree.topLevelItem(i))).width() + tree.indentation()
        for i in range(tree.topLevelItemCount())
    )


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_sessions_dock_fits_its_content(qtbot, window, size):
    from conftest import SAMPLE

    window.resize(*size)
    window.show()
    qtbot.waitExposed(window)
    _open(qtbot, window, SAMPLE)
    dock = window.sessions_dock
    qtbot.waitUntil(lambda: dock.width() >= min(_widest_top_level(window.tree), window.width() // 3))
    assert dock.width() <= window.width() // 3 + 2
    tree = window.tree
    for i in range(tree.topLevelItemCount()):  # session names are shown whole, with a tooltip
        item = tree.topLevelItem(i)
        assert tree.visualItemRect(item).right() <= tree.viewport().width()
        assert item.toolTip(0) == item.text(0)
    assert tree.textElideMode() == Qt.ElideMiddle


def test_dock_is_capped_at_a_third_and_long_names_elide(qtbot, window):
    from PySide6.QtWidgets import QTreeWidgetItem

    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    name = "a_very_long_session_name_" * 8
    item = QTreeWidgetItem(window.tree, [name])
    item.setToolTip(0, name)
    window._fit_dock()
    qtbot.waitUntil(lambda: abs(window.sessions_dock.width() - window.width() // 3) <= 2)


def test_hparams_filters_are_never_clipped(qtbot, window):
    from conftest import DATA

    window.resize(1280, 800)
    window.show()
    qtbot.waitExposed(window)
    _open(qtbot, window, DATA / "hparams" / "api_config")
    view = window.hparams_view
    assert window.tabs.currentWidget() is view
    assert view.minimumSizeHint().width() < 1000  # was ~1200 (hidden or not), squeezing the dock to ~70 px
    qtbot.waitUntil(lambda: view.filters.width() >= view.filters.minimumWidth())
    panel = view.filters
    assert panel.widget().width() >= panel.widget().minimumSizeHint().width()  # no horizontal clipping
    widgets = [f for f in panel.filters.values()] + [
        w for f in panel.filters.values() for w in f.findChildren(QWidget) if w.isVisible()
    ]
    assert panel.filters
    for w in widgets:
        if w.isVisible():
            assert w.width() >= w.minimumSizeHint().width(), (w, w.width(), w.minimumSizeHint())
    viewport = panel.viewport().rect()
    for f in panel.filters.values():  # every filter's right edge is inside the viewport
        right = f.mapTo(panel.viewport(), f.rect().topRight()).x()
        assert right <= viewport.right()


def test_layout_is_saved_restored_and_reset(qtbot, tmp_path):
    """(The offscreen screen is 800x600, so restoreGeometry shrinks a saved
    size; the dock's visibility shows that the state is restored.)"""
    from profscope.viewer.window import DEFAULT_SIZE

    settings = QSettings(str(tmp_path / "layout.ini"), QSettings.IniFormat)
    first = MainWindow(settings)
    qtbot.addWidget(first)
    first.show()
    qtbot.waitExposed(first)
    first.sessions_dock.hide()
    first.close()
    assert settings.value("window_state") is not None and settings.value("geometry") is not None
    second = MainWindow(settings)
    qtbot.addWidget(second)
    second.show()
    qtbot.waitExposed(second)
    assert not second.sessions_dock.isVisible()
    assert not second._fit_dock_pending  # a saved layout is not overridden by the content
    view_menu = second.menuBar().actions()[1].menu()
    assert "Sessions" in [a.text() for a in view_menu.actions()]  # the dock's toggle
    reset = next(a for a in view_menu.actions() if a.text() == "Reset &Layout")
    second.resize(1000, 700)
    reset.trigger()
    qtbot.waitUntil(lambda: (second.width(), second.height()) == DEFAULT_SIZE and second.sessions_dock.isVisible())
    assert settings.value("window_state") is None


def test_f1_dialog_shows_every_column_whole(qtbot, window):
    """The issue: at 1280x800 the dialog cut its third column."""
    window.resize(1280, 800)
    window.show()
    window.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is window)
    qtbot.keyClick(window.tree, Qt.Key_F1)
    dialog = window.shortcuts_dialog
    qtbot.waitExposed(dialog)
    tree, header = dialog.list, dialog.list.header()
    viewport = tree.viewport().width()
    metrics = tree.fontMetrics()
    for c in range(3):
        widest = max(metrics.horizontalAdvance(tree.topLevelItem(i).text(c)) for i in range(tree.topLevelItemCount()))
        assert header.sectionSize(c) >= widest, c
        assert header.sectionViewportPosition(c) + widest <= viewport, (c, viewport)  # the text is on screen
    assert not tree.horizontalScrollBar().isVisible()
    screen = dialog.screen().availableGeometry()
    assert dialog.width() <= screen.width() and dialog.height() <= screen.height()  # the list scrolls when taller
    dialog.close()
