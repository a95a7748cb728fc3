"""Checks made before the QApplication exists, so Qt cannot abort.

On Linux, Qt's xcb platform plugin aborts the process (SIGABRT, "reinstall the
application") when a system library it links against is missing, or when the X
display does not answer. `problem()` finds both first and says how to fix them;
it imports no Qt.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

# soname -> (Debian/Ubuntu package, Fedora package) for what Qt's xcb plugin links against
PACKAGES = {
    "libxcb-cursor.so.0": ("libxcb-cursor0", "xcb-util-cursor"),
    "libxcb-icccm.so.4": ("libxcb-icccm4", "xcb-util-wm"),
    "libxcb-keysyms.so.1": ("libxcb-keysyms1", "xcb-util-keysyms"),
    "libxcb-image.so.0": ("libxcb-image0", "xcb-util-image"),
    "libxcb-render-util.so.0": ("libxcb-render-util0", "xcb-util-renderutil"),
    "libxcb-util.so.1": ("libxcb-util1", "xcb-util"),
    "libxkbcommon-x11.so.0": ("libxkbcommon-x11-0", "libxkbcommon-x11"),
    "libxkbcommon.so.0": ("libxkbcommon0", "libxkbcommon"),
    "libxcb.so.1": ("libxcb1", "libxcb"),
    "libxcb-xkb.so.1": ("libxcb-xkb1", "libxcb"),
    "libxcb-randr.so.0": ("libxcb-randr0", "libxcb"),
    "libxcb-shape.so.0": ("libxcb-shape0", "libxcb"),
    "libxcb-shm.so.0": ("libxcb-shm0", "libxcb"),
    "libxcb-sync.so.1": ("libxcb-sync1", "libxcb"),
    "libxcb-xfixes.so.0": ("libxcb-xfixes0", "libxcb"),
    "libxcb-render.so.0": ("libxcb-render0", "libxcb"),
    "libxcb-xinput.so.0": ("libxcb-xinput0", "libxcb"),
    "libxcb-glx.so.0": ("libxcb-glx0", "libxcb"),
    "libX11-xcb.so.1": ("libx11-xcb1", "libX11-xcb"),
    "libX11.so.6": ("libx11-6", "libX11"),
    "libSM.so.6": ("libsm6", "libSM"),
    "libICE.so.6": ("libice6", "libICE"),
    "libfontconfig.so.1": ("libfontconfig1", "fontconfig"),
    "libfreetype.so.6": ("libfreetype6", "freetype"),
    "libEGL.so.1": ("libegl1", "libglvnd-egl"),
    "libGL.so.1": ("libgl1", "libglvnd-glx"),
    "libGLX.so.0": ("libglx0", "libglvnd-glx"),
    "libOpenGL.so.0": ("libopengl0", "libglvnd-opengl"),
    "libdbus-1.so.3": ("libdbus-1-3", "dbus-libs"),
    "libglib-2.0.so.0": ("libglib2.0-0", "glib2"),
    "libgthread-2.0.so.0": ("libglib2.0-0", "glib2"),
}
# What the README lists: everything PySide6's xcb plugin needs beyond a minimal system.
XCB_PACKAGES_DEBIAN = ("libxcb-cursor0", "libxcb-icccm4", "libxcb-keysyms1", "libxcb-image0", "libxcb-render-util0",
                       "libxcb-shape0", "libxcb-randr0", "libxcb-xkb1", "libxkbcommon-x11-0", "libegl1",
                       "libfontconfig1", "libdbus-1-3")
XCB_PACKAGES_FEDORA = ("xcb-util-cursor", "xcb-util-wm", "xcb-util-keysyms", "xcb-util-image", "xcb-util-renderutil",
                       "libxkbcommon-x11", "libglvnd-egl", "fontconfig", "dbus-libs")

DISPLAY_TIMEOUT_S = 3.0


def plugin_dir() -> Path | None:
    """PySide6's platforms plugin folder, found without importing Qt."""
    if os.environ.get("QT_QPA_PLATFORM_PLUGIN_PATH"):
        return Path(os.environ["QT_QPA_PLATFORM_PLUGIN_PATH"])
    spec = importlib.util.find_spec("PySide6")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "Qt" / "plugins" / "platforms"


# ------------------------------------------------------------ libraries

def _elf_needed(path: Path) -> tuple[list[str], list[str]]:
    """DT_NEEDED and DT_RUNPATH/DT_RPATH entries of a 64-bit little-endian ELF file."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return [], []
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    needed, paths = [], []
    for sh in sections:
        if sh[1] != 6:  # SHT_DYNAMIC
            continue
        strtab = sections[sh[6]]  # sh_link: its string table
        def string(offset, base=strtab[4]):
            end = data.index(b"\0", base + offset)
            return data[base + offset:end].decode()
        for pos in range(sh[4], sh[4] + sh[5], 16):
            tag, value = struct.unpack_from("<qQ", data, pos)
            if tag == 0:
                break
            if tag == 1:
                needed.append(string(value))
            elif tag in (15, 29):
                paths += string(value).replace("$ORIGIN", str(path.parent)).split(":")
    return needed, paths


def _missing_by_elf(plugin: Path) -> list[str]:
    """Without ldd: walks DT_NEEDED, resolving Qt's own libraries by RUNPATH
    and loading the others with dlopen (which searches as the loader does)."""
    missing, seen, todo = [], set(), [plugin]
    while todo:
        needed, paths = _elf_needed(todo.pop())
        for name in needed:
            if name in seen:
                continue
            seen.add(name)
            local = next((Path(p) / name for p in paths if (Path(p) / name).exists()), None)
            if local is not None:
                todo.append(local)
                continue
            try:
                ctypes.CDLL(name)
            except OSError:
                missing.append(name)
    return missing


def missing_libraries(plugin: Path) -> list[str]:
    """Shared libraries the plugin (or the Qt libraries it loads) needs and the
    system lacks, e.g. ["libxcb-cursor.so.0"]."""
    ldd = shutil.which("ldd")
    if ldd:
        try:
            out = subprocess.run([ldd, str(plugin)], capture_output=True, text=True, timeout=10).stdout
        except (OSError, subprocess.SubprocessError):
            out = None
        if out is not None:
            return list(dict.fromkeys(re.findall(r"^\s*(\S+) => not found", out, re.MULTILINE)))
    try:
        return _missing_by_elf(plugin)
    except (OSError, ValueError, struct.error):
        return []  # cannot tell: let Qt try


def install_commands(libraries: list[str]) -> str:
    debian = list(dict.fromkeys(PACKAGES.get(lib, (None, None))[0] for lib in libraries if lib in PACKAGES))
    fedora = list(dict.fromkeys(PACKAGES.get(lib, (None, None))[1] for lib in libraries if lib in PACKAGES))
    lines = []
    if debian:
        lines.append(f"  Debian/Ubuntu: sudo apt-get install {' '.join(debian)}")
        lines.append(f"  Fedora:        sudo dnf install {' '.join(fedora)}")
    unknown = [lib for lib in libraries if lib not in PACKAGES]
    for lib in unknown:
        lines.append(f"  {lib}: find its package with `apt-file search {lib}` or `dnf provides '*/{lib}'`")
    return "\n".join(lines)


# ------------------------------------------------------------ the display

def _parse_display(display: str) -> tuple[str, int] | None:
    m = re.fullmatch(r"(?P<host>[^:]*):(?P<number>\d+)(?:\.\d+)?", display.strip())
    return (m["host"], int(m["number"])) if m else None


def _x_open_display(display: str, timeout: float) -> bool | None:
    """XOpenDisplay in a helper thread (it may block): True/False, or None when
    libX11 is missing or it did not answer in time."""
    try:
        x11 = ctypes.CDLL("libX11.so.6")
    except OSError:
        return None
    x11.XOpenDisplay.restype = ctypes.c_void_p
    x11.XOpenDisplay.argtypes = [ctypes.c_char_p]
    x11.XCloseDisplay.argtypes = [ctypes.c_void_p]
    result = []

    def run():
        handle = x11.XOpenDisplay(display.encode())
        result.append(bool(handle))
        if handle:
            x11.XCloseDisplay(handle)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    return result[0] if result else None


def display_problem(display: str, timeout: float = DISPLAY_TIMEOUT_S) -> str | None:
    """Why the X display does not answer, or None when it does."""
    parsed = _parse_display(display)
    if parsed is None:
        return f"DISPLAY={display!r} is not a display name (expected :0, localhost:10.0, ...)"
    host, number = parsed
    if host in ("", "unix") or host.startswith("/"):
        path = host if host.startswith("/") else f"/tmp/.X11-unix/X{number}"
        addresses = [(socket.AF_UNIX, path)]
        if sys.platform.startswith("linux") and not host.startswith("/"):
            addresses.insert(0, (socket.AF_UNIX, "\0" + path))  # the abstract socket X servers also listen on
        where = path
    else:
        addresses = [(socket.AF_INET6 if ":" in host else socket.AF_INET, (host.strip("[]"), 6000 + number))]
        where = f"{host}:{6000 + number}"
    for family, address in addresses:
        try:
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.settimeout(timeout)
                s.connect(address)
            break
        except OSError:
            continue
    else:
        return (f"the X display {display} does not answer (nothing listens on {where}); "
                "is DISPLAY stale (for example an old SSH session)?")
    if _x_open_display(display, timeout) is False:
        return f"the X display {display} refused the connection (check xauth / XAUTHORITY)"
    return None


# ------------------------------------------------------------ the whole check

def platform_name(env=os.environ) -> str:
    """The platform Qt will pick: the first of QT_QPA_PLATFORM's list, else
    wayland in a Wayland session when its plugin exists, else xcb."""
    requested = env.get("QT_QPA_PLATFORM", "").split(";")[0].split(":")[0].strip()
    if requested:
        return requested
    if env.get("WAYLAND_DISPLAY") and env.get("XDG_SESSION_TYPE", "wayland") == "wayland":
        folder = plugin_dir()
        if folder is not None and any(folder.glob("libqwayland*.so")):
            return "wayland"
    return "xcb"


def problem(env=os.environ) -> str | None:
    """What keeps Qt from opening a window here (with how to fix it), or None."""
    if not sys.platform.startswith("linux"):
        return None
    name = platform_name(env)
    if name != "xcb":
        return None  # wayland, or a platform asked for explicitly: Qt reports its own errors gracefully
    folder = plugin_dir()
    plugin = folder / "libqxcb.so" if folder is not None else None
    if plugin is not None and plugin.exists():
        missing = missing_libraries(plugin)
        if missing:
            return (f"Qt's xcb platform plugin cannot load: missing system libraries {', '.join(missing)}.\n"
                    f"Install them with:\n{install_commands(missing)}")
    display = env.get("DISPLAY", "")
    if not display:
        return "no X display (DISPLAY is not set)"
    return display_problem(display)
