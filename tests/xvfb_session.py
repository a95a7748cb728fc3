"""Run under xvfb-run by test_xvfb.py: starts profscope on a path, waits until
its window is mapped and the screen is drawn and stable, takes a screenshot
with ImageMagick's `import`, sends SIGTERM and prints the exit code.

    python tests/xvfb_session.py OUT.png PATH [--tabs]

With --tabs it then visits every visible tab: the app runs with a hook (this
file's --app mode, the CONTROL env var naming a folder) that on SIGUSR1 clicks
the tab named in CONTROL/tab on the window's own tab bar (a synthesized mouse
click) and answers in CONTROL/done; each tab's window is saved as
OUT-tabN-NAME.png and its line "tab=N NAME WIDTHxHEIGHT PNG" printed.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TIMEOUT_S = 60
CONTROL = "PROFSCOPE_XVFB_CONTROL"


def run(*cmd: str) -> str:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout


def colours(png: Path) -> int:
    out = run("identify", "-format", "%k", str(png))
    return int(out) if out.strip().isdigit() else 0


def app_with_tab_hook(path: str) -> int:
    """The app, plus the SIGUSR1 hook that clicks a tab (see the module's text)."""
    from profscope.viewer import cli

    control = Path(os.environ[CONTROL])

    def click_tab(*_) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtTest import QTest
        from PySide6.QtWidgets import QApplication, QMainWindow

        window = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMainWindow) and w.isVisible())
        tabs = window.centralWidget()
        shown = [i for i in range(tabs.count()) if tabs.isTabVisible(i)]
        wanted = int((control / "tab").read_text())
        if wanted < len(shown):
            bar = tabs.tabBar()
            QTest.mouseClick(bar, Qt.LeftButton, Qt.NoModifier, bar.tabRect(shown[wanted]).center())
        name = tabs.tabText(tabs.currentIndex()).replace("&", "")
        answer = f"{wanted} {len(shown)} {name} {window.width()}x{window.height()}"
        (control / "done.tmp").write_text(answer)
        (control / "done.tmp").replace(control / "done")

    signal.signal(signal.SIGUSR1, click_tab)
    return cli.main(["--window", path])


def window_id() -> str:
    """The app's top-level window (the first one titled Profscope)."""
    for line in run("xwininfo", "-root", "-tree").splitlines():
        if '"Profscope' in line:
            return line.split()[0]
    raise RuntimeError("no Profscope window")


def settle(target: str, shot: Path, app: subprocess.Popen, deadline: float) -> None:
    """Screenshots of `target` until one is drawn (not blank) and equals the one before."""
    previous = None
    while True:
        run("import", "-window", target, str(shot))
        data = shot.read_bytes() if shot.exists() else b""
        if data and data == previous and colours(shot) > 50:
            return
        previous = data
        if app.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("the screen never settled")
        time.sleep(0.5)


def visit_tabs(out: Path, app: subprocess.Popen, control: Path) -> None:
    count, index = 1, 0
    while index < count:
        done = control / "done"
        done.unlink(missing_ok=True)
        (control / "tab").write_text(str(index))
        app.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + TIMEOUT_S
        while not done.exists():
            if app.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"tab {index} was never shown")
            time.sleep(0.05)
        wanted, count_text, *words, size = done.read_text().split()
        count, name = int(count_text), "_".join(words)  # "XProf Statistics": one word in the line printed
        png = out.with_name(f"{out.stem}-tab{index}-{name}.png")
        settle(window_id(), png, app, time.monotonic() + TIMEOUT_S)
        print(f"tab={index} {name} {size} {png}")
        index += 1


def main() -> int:
    if sys.argv[1] == "--app":
        return app_with_tab_hook(sys.argv[2])
    out, path, tabs = Path(sys.argv[1]), sys.argv[2], "--tabs" in sys.argv[3:]
    control = Path(tempfile.mkdtemp(prefix="xvfb-tabs-"))
    command = [sys.executable, "-m", "profscope.viewer.cli", "--window", path]
    if tabs:
        command = [sys.executable, __file__, "--app", path]
    app = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env={**os.environ, CONTROL: str(control)})
    deadline = time.monotonic() + TIMEOUT_S
    shot = out.with_suffix(".tmp.png")
    try:
        # 1. the window is mapped
        while "Profscope" not in run("xwininfo", "-root", "-tree"):
            if app.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the window never appeared")
            time.sleep(0.1)
        # 2. the screen is drawn (not blank) and two screenshots in a row are the same
        settle("root", shot, app, deadline)
        shot.replace(out)
        if tabs:
            visit_tabs(out, app, control)
    finally:
        if app.poll() is None:
            app.send_signal(signal.SIGTERM)
        try:
            stdout, stderr = app.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            app.kill()
            stdout, stderr = app.communicate()
        sys.stderr.write(stderr)
        for name in ("tab", "done"):
            (control / name).unlink(missing_ok=True)
        control.rmdir()
    print(f"exit={app.returncode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
