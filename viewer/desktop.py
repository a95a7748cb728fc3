"""The icon and `profscope --install-desktop-entry`: a freedesktop .desktop
file, the icon and the MIME types of profile files in the user's local data
folder ($XDG_DATA_HOME or ~/.local/share), so Profscope appears in the
launcher and opens .xplane.pb and .pt.trace.json.gz files. Imports Qt only
to make the icon, so the command line's --install-desktop-entry needs no Qt."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from importlib import resources
from pathlib import Path

from profscope.models.core.task import ProfileError

ICONS = resources.files("profscope.resources") / "icons"  # package data, also in a wheel
ICON_SVG = ICONS / "profscope.svg"
ICON_PNG = ICONS / "profscope.png"  # 256 px, rendered from the SVG
APP_ID = "profscope"

XPLANE_MIME = "application/x-xplane+protobuf"
TORCH_TRACE_MIME = "application/x-pytorch-trace+gzip"
MIME_TYPES = ("application/json", XPLANE_MIME, TORCH_TRACE_MIME)

MIME_XML = f"""<?xml version="1.0" encoding="UTF-8"?>
<mime-info xmlns="http://www.freedesktop.org/standards/shared-mime-info">
  <mime-type type="{XPLANE_MIME}">
    <comment>XSpace profile (TensorFlow / JAX profiler)</comment>
    <glob pattern="*.xplane.pb" weight="60"/>
  </mime-type>
  <mime-type type="{TORCH_TRACE_MIME}">
    <comment>PyTorch profiler trace (gzipped Chrome trace)</comment>
    <sub-class-of type="application/gzip"/>
    <glob pattern="*.pt.trace.json.gz" weight="60"/>
  </mime-type>
</mime-info>
"""


def app_icon():
    """The application's QIcon (the SVG, and the PNG where SVG cannot be drawn)."""
    from PySide6.QtGui import QIcon

    icon = QIcon(str(ICON_SVG))
    icon.addFile(str(ICON_PNG))
    return icon


def data_home() -> Path:
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")


def executable() -> str:
    """The profscope command: its absolute path when it sits next to this
    Python (a venv the launcher's PATH does not know), else the bare name."""
    beside = Path(sys.executable).parent / "profscope"
    return str(beside) if beside.exists() else (shutil.which("profscope") or "profscope")


def desktop_file() -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        "Name=Profscope",
        "GenericName=Profile Viewer",
        "Comment=View TensorFlow, JAX and PyTorch profiles and TensorBoard HParams sweeps",
        f"Exec={executable()} %f",
        f"Icon={APP_ID}",
        "Terminal=false",
        "Categories=Development;Profiling;",
        f"MimeType={';'.join(MIME_TYPES)};",
        "",
    ])


def install_desktop_entry(home: Path | None = None) -> list[Path]:
    """Writes the .desktop file, the icons and the MIME types; returns the
    paths written. Refreshes the desktop and MIME databases when their tools exist.
    Everything copied is read first, so a broken install writes nothing."""
    if not sys.platform.startswith("linux"):
        raise ProfileError("--install-desktop-entry is for Linux desktops (freedesktop.org launchers)")
    home = home or data_home()
    try:
        icons = ICON_PNG.read_bytes(), ICON_SVG.read_bytes()
    except OSError as e:
        raise ProfileError(f"this installation lacks Profscope's icons ({e.strerror or e}); nothing written") from None
    files = {
        home / "applications" / f"{APP_ID}.desktop": desktop_file().encode(),
        home / "icons" / "hicolor" / "256x256" / "apps" / f"{APP_ID}.png": icons[0],
        home / "icons" / "hicolor" / "scalable" / "apps" / f"{APP_ID}.svg": icons[1],
        home / "mime" / "packages" / f"{APP_ID}.xml": MIME_XML.encode(),
    }
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    for tool, folder in (("update-mime-database", home / "mime"), ("update-desktop-database", home / "applications")):
        if shutil.which(tool):
            subprocess.run([tool, str(folder)], capture_output=True, timeout=60)
    return list(files)
