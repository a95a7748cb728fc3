"""Progress and cancellation for long reads and analyses.

A reader takes a TaskState, reports progress through it and calls
raise_if_cancelled() between chunks of work. The caller (a worker thread in
the window, or the command line) owns it and may cancel from another thread.
"""

from __future__ import annotations

import threading
from collections.abc import Callable


class Cancelled(Exception):
    """The task was cancelled; nothing is wrong with the input."""


class TaskState:
    def __init__(self, on_progress: Callable[[float, str], None] | None = None):
        self._on_progress = on_progress
        self._cancelled = threading.Event()
        self._on_cancel: list[Callable[[], None]] = []
        self._lock = threading.Lock()

    def cancel(self) -> None:
        with self._lock:
            self._cancelled.set()
            callbacks = list(self._on_cancel)
        for callback in callbacks:
            callback()

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Calls `callback` in the cancelling thread when the task is cancelled
        (at once if it already is), for work that cannot poll, such as a
        database query; returns the function that removes it again."""
        with self._lock:
            self._on_cancel.append(callback)
            already = self._cancelled.is_set()
        if already:
            callback()
        return lambda: self._remove(callback)

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if callback in self._on_cancel:
                self._on_cancel.remove(callback)

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
