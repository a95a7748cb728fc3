"""Progress and cancellation for long reads and analyses.

A reader takes a TaskState, reports progress through it and calls
raise_if_cancelled() between chunks of work. The caller (a worker thread in
the window, or the command line) owns it and may cancel from another thread.
"""

from __future__ import annotations

import threading
from typing import Callable


class Cancelled(Exception):
    """The task was cancelled; nothing is wrong with the input."""


class TaskState:
    def __init__(self, on_progress: Callable[[float, str], None] | None = None):
        self._on_progress = on_progress
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        self._cancelled.set()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def raise_if_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise Cancelled()

    def report(self, fraction: float, text: str = "") -> None:
        """fraction in [0, 1]; also a cancellation point."""
        self.raise_if_cancelled()
        if self._on_progress is not None:
            self._on_progress(min(max(fraction, 0.0), 1.0), text)


class ProfileError(Exception):
    """Input Profscope cannot use, with a message meant for the user."""
