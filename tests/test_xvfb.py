"""Under a real X server (Xvfb): the window starts on the bundled sample, is
drawn, and exits cleanly on SIGTERM. Skipped where xvfb-run, ImageMagick or
Qt's xcb libraries are missing (CI machines)."""

import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SAMPLE

from profscope.viewer import startup

TOOLS = ("xvfb-run", "xwininfo", "import", "identify")
missing_tools = [t for t in TOOLS if not shutil.which(t)]
plugin = startup.plugin_dir() / "libqxcb.so" if startup.plugin_dir() else None

pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="X11 only"),
    pytest.mark.skipif(bool(missing_tools), reason=f"missing {', '.join(missing_tools)}"),
]


@pytest.mark.parametrize("size,scale", [("1280x800", 1), ("1920x1080", 1), ("2560x1600", 2)])
def test_window_under_xvfb(tmp_path, size, scale):
    if plugin is None or not plugin.exists() or startup.missing_libraries(plugin):
        pytest.skip("Qt's xcb plugin cannot load here (see `profscope --window`)")
    shots = Path(os.environ.get("PROFSCOPE_SHOTS", tmp_path))
    shots.mkdir(parents=True, exist_ok=True)
    out = shots / f"xvfb_{size}_x{scale}.png"
    env = {k: v for k, v in os.environ.items() if k not in ("QT_QPA_PLATFORM", "DISPLAY", "WAYLAND_DISPLAY")}
    env.update(XDG_CONFIG_HOME=str(tmp_path / "config"), XDG_CACHE_HOME=str(tmp_path / "cache"),
               QT_SCALE_FACTOR=str(scale))  # 2: a high-DPI screen (1280x800 logical on 2560x1600)
    # -a alone starts looking at :99, so suites running side by side race for one display; start elsewhere
    first = str(random.randrange(100, 30000))
    result = subprocess.run(["xvfb-run", "-n", first, "-a", "-s", f"-screen 0 {size}x24", sys.executable,
                             str(ROOT / "tests" / "xvfb_session.py"), str(out), str(SAMPLE)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=180)
    assert result.returncode == 0, result.stderr
    assert "exit=0" in result.stdout, result.stdout + result.stderr
    from PySide6.QtGui import QImage

    image = QImage(str(out))
    width, height = map(int, size.split("x"))
    assert (image.width(), image.height()) == (width, height)
    # the window fills the screen's width from the left: its top-left and top-right are not the black root
    right = min(width, 1280 * scale) - 5
    assert image.pixelColor(5, 5).lightness() > 100 and image.pixelColor(right, 5).lightness() > 100
