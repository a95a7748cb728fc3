"""Run under xvfb-run by test_xvfb.py: starts profscope on a path, waits until
its window is mapped and the screen is drawn and stable, takes a screenshot
with ImageMagick's `import`, sends SIGTERM and prints the exit code.

    python tests/xvfb_session.py OUT.png PATH
"""

import signal
import subprocess
import sys
import time
from pathlib import Path

TIMEOUT_S = 60


def run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout


def colours(png: Path) -> int:
    out = run("identify", "-format", "%k", str(png))
    return int(out) if out.strip().isdigit() else 0


def main() -> int:
    out, path = Path(sys.argv[1]), sys.argv[2]
    app = subprocess.Popen([sys.executable, "-m", "profscope.viewer.cli", "--window", path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT_S
    previous, shot = None, out.with_suffix(".tmp.png")
    try:
        # 1. the window is mapped
        while "Profscope" not in run("xwininfo", "-root", "-tree"):
            if app.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the window never appeared")
            time.sleep(0.1)
        # 2. the screen is drawn (not blank) and two screenshots in a row are the same
        while True:
            run("import", "-window", "root", str(shot))
            data = shot.read_bytes() if shot.exists() else b""
            if data and data == previous and colours(shot) > 50:
                break
            previous = data
            if app.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the screen never settled")
            time.sleep(0.5)
        shot.replace(out)
    finally:
        if app.poll() is None:
            app.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = app.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            app.kill()
            stdout, stderr = app.communicate()
        sys.stderr.write(stderr)
    print(f"exit={app.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
