"""The safety net's log: tracebacks of unexpected errors go to a file in the
user's cache folder (the same folder as Help > Open Log Folder), so the
command line and the window show one line and keep working. No Qt here: the
command line uses it before (or without) Qt.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

LOG_NAME = "profscope.log"
MAX_LOG_BYTES = 1 << 20  # then the log starts again (the previous one is kept as .1)
# Tracebacks also go to stderr (profscope --debug sets it).
echo_to_console = False


def log_folder() -> Path:
    """Where Qt's cache location points for Profscope on Linux
    ($XDG_CACHE_HOME/Profscope/Profscope); not created here."""
    if sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    elif sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "Profscope" / "Profscope"


def record(error: BaseException, context: str) -> Path | None:
    """Appends the error's traceback, with what was being done, to the log;
    returns the log's path (None when it cannot be written)."""
    import traceback  # here: every command imports this module, few record anything

    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    if echo_to_console:
        sys.stderr.write(text)
    path = log_folder() / LOG_NAME
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and path.stat().st_size > MAX_LOG_BYTES:
            path.replace(path.with_suffix(".log.1"))
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} {context}\n{text}")
    except OSError:
        return None
    return path


def one_line(error: BaseException, context: str) -> str:
    """The message shown instead of a traceback (the traceback is logged)."""
    path = record(error, context)
    where = f"; details in {path}" if path else ""
    detail = str(error).splitlines()[0][:300] if str(error) else ""
    return f"{context} failed unexpectedly ({type(error).__name__}{': ' + detail if detail else ''}){where}"
