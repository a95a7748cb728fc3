"""Progress of a command-line run on stderr: one line that rewrites itself
with the phase, a bar, the amount done and the rate. Shown only when stderr
is a terminal (nothing when piped or redirected); no Qt."""

from __future__ import annotations

import sys
import time

from profscope.models.core.task import TaskState
from profscope.models.core.units import format_bytes

BAR = 24
INTERVAL = 0.1  # seconds between redraws
PIECE = 16 << 20  # bytes written at a time


class TerminalProgress:
    """Feeds on TaskState reports (fraction, phase) of reading a path of
    `total_bytes`, then on bytes written by an export."""

    def __init__(self, total_bytes: int = 0, stream=None, clock=time.monotonic, on_task=None):
        self.stream = stream or sys.stderr
        self.on_task = on_task  # hears of each TaskState handed out (the command line cancels them on Ctrl+C)
        self.enabled = bool(getattr(self.stream, "isatty", lambda: False)())
        self.total = total_bytes
        self.clock = clock
        self.started = self.last = clock()
        self.shown = False
        self.written = 0
        self.write_started = None

    def task(self) -> TaskState:
        task = TaskState(on_progress=self.update)
        if self.on_task is not None:
            self.on_task(task)
        return task

    def update(self, fraction: float, phase: str) -> None:
        if not self._due():
            return
        done = fraction * self.total
        amount = f"  {format_bytes(done)} of {format_bytes(self.total)}" if self.total else ""
        rate = f"  {format_bytes(done / self._elapsed(self.started))}/s" if self.total else ""
        filled = int(BAR * fraction)
        self._show(f"{phase[:36]:<36} [{'#' * filled}{'.' * (BAR - filled)}] {100 * fraction:3.0f}%{amount}{rate}")

    def wrote(self, n: int, name: str) -> None:
        """n more bytes of output written to `name`."""
        if self.write_started is None:
            self.write_started = self.clock()
        self.written += n
        if self._due():
            rate = self.written / self._elapsed(self.write_started)
            self._show(f"Writing {name[:28]:<28} {format_bytes(self.written)}  {format_bytes(rate)}/s")

    def close(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def _due(self) -> bool:
        now = self.clock()
        if not self.enabled or now - self.last < INTERVAL:
            return False
        self.last = now
        return True

    def _elapsed(self, since: float) -> float:
        return max(self.clock() - since, 1e-6)

    def _show(self, line: str) -> None:
        self.stream.write("\r" + line + "\x1b[K")
        self.stream.flush()
        self.shown = True


class CountingWriter:
    """A binary file that tells the progress how much went through it."""

    def __init__(self, f, progress: TerminalProgress, name: str):
        self.f, self.progress, self.name = f, progress, name

    def write(self, data) -> int:
        # In pieces: the progress moves and Ctrl+C is seen within a huge chunk too.
        with memoryview(data) as view, view.cast("B") as view:
            for start in range(0, len(view), PIECE):
                piece = view[start:start + PIECE]
                self.f.write(piece)
                self.progress.wrote(len(piece), self.name)
        return len(data)
