"""Runs readers and analyses on a thread pool with progress and cancellation.

A TaskRunner runs one job at a time: starting another cancels the one before
(its late results are dropped). Results, errors and progress come back as
signals on the GUI thread.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import count
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from profscope.models.core.task import Cancelled, ProfileError, TaskState
from profscope.viewer import crashlog


class _JobSignals(QObject):
    """The signals every job of a runner emits from the pool, each with the
    job's number. One object per runner, created after its pool, so Qt
    deletes it (on the GUI thread) only after the pool has waited for its
    jobs: no Qt object is ever freed on a pool thread."""

    progress = Signal(int, float, str)
    finished = Signal(int, object)
    failed = Signal(int, str)
    cancelled = Signal(int)


class _Job(QRunnable):
    def __init__(self, number: int, fn: Callable[[TaskState], Any], signals: _JobSignals):
        super().__init__()
        self.number = number
        self.fn = fn
        self.signals = signals
        self.task = TaskState(on_progress=lambda fraction, text: signals.progress.emit(number, fraction, text))

    def run(self) -> None:
        # The runner holds fn (and the widgets it may refer to) until this job's
        # last signal reaches the GUI thread, and this thread lets go of it
        # before signalling: a Qt object freed on a pool thread can deadlock
        # with the GUI thread or crash.
        signal, args = self._outcome()
        signal.emit(self.number, *args)

    def _outcome(self) -> tuple[Any, tuple]:
        fn, self.fn = self.fn, None
        try:
            return self.signals.finished, (fn(self.task),)
        except Cancelled:
            return self.signals.cancelled, ()
        except ProfileError as e:
            return self.signals.failed, (str(e),)
        except MemoryError:
            return self.signals.failed, ("Out of memory while reading; the input is too large for this machine",)
        except Exception as e:  # a bug or unforeseen input: report it, keep the window alive
            return self.signals.failed, (crashlog.one_line(e, "Loading"),)


class TaskRunner(QObject):
    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()
    busy_changed = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(2)
        self._signals = _JobSignals(self)  # after the pool: see _JobSignals
        # Bound slots of this GUI-thread object: Qt queues the workers' signals.
        self._signals.progress.connect(self._on_progress)
        self._signals.finished.connect(self._on_finished)
        self._signals.failed.connect(self._on_failed)
        self._signals.cancelled.connect(self._on_cancelled)
        self._numbers = count()
        self._job: int | None = None  # the current job's number
        self._task: TaskState | None = None  # and its TaskState
        # Each job's fn and on_finished, kept until its last signal arrives (see _Job.run).
        self._jobs: dict[int, tuple[Callable, Callable | None]] = {}

    def start(self, fn: Callable[[TaskState], Any], on_finished: Callable[[Any], None] | None = None) -> None:
        """Runs fn(task_state) on the pool; on_finished(result) runs on the GUI thread."""
        self.cancel()
        job = _Job(next(self._numbers), fn, self._signals)
        self._jobs[job.number] = (fn, on_finished)
        self._job, self._task = job.number, job.task
        self.busy_changed.emit(True)
        self.pool.start(job)

    @property
    def busy(self) -> bool:
        return self._job is not None

    def cancel(self) -> None:
        if self._job is not None:
            self._task.cancel()
            self._job = self._task = None
            self.busy_changed.emit(False)
            self.cancelled.emit()

    def wait(self, msecs: int = -1) -> bool:
        """Waits for running jobs (also cancelled ones) to end."""
        return self.pool.waitForDone(msecs)

    def _end(self, number: int) -> tuple[bool, Callable | None]:
        """Forgets job `number`: (whether it was the current job, its on_finished).
        A superseded or cancelled job's late result is dropped."""
        _, on_finished = self._jobs.pop(number, (None, None))
        if number != self._job:
            return False, None
        self._job = self._task = None
        self.busy_changed.emit(False)
        return True, on_finished

    @Slot(int, float, str)
    def _on_progress(self, number: int, fraction: float, text: str) -> None:
        if number == self._job:
            self.progress.emit(fraction, text)

    @Slot(int, object)
    def _on_finished(self, number: int, result) -> None:
        current, on_finished = self._end(number)
        if current:
            if on_finished is not None:
                on_finished(result)
            self.finished.emit(result)

    @Slot(int, str)
    def _on_failed(self, number: int, message: str) -> None:
        if self._end(number)[0]:
            self.failed.emit(message)

    @Slot(int)
    def _on_cancelled(self, number: int) -> None:
        self._end(number)
