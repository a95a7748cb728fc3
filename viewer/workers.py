"""Runs readers and analyses on a thread pool with progress and cancellation.

A TaskRunner runs one job at a time: starting another cancels the one before
(its late results are dropped). Results, errors and progress come back as
signals on the GUI thread.
"""

from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal, Slot

from models.task import Cancelled, ProfileError, TaskState
from viewer import crashlog


class _JobSignals(QObject):
    progress = Signal(float, str)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()


class _Job(QRunnable):
    def __init__(self, fn: Callable[[TaskState], Any], signals: _JobSignals, on_finished: Callable[[Any], None] | None):
        super().__init__()
        self.fn = fn
        self.on_finished = on_finished
        self.signals = signals
        self.task = TaskState(on_progress=signals.progress.emit)

    def run(self) -> None:
        try:
            result = self.fn(self.task)
        except Cancelled:
            self.signals.cancelled.emit()
        except ProfileError as e:
            self.signals.failed.emit(str(e))
        except MemoryError:
            self.signals.failed.emit("Out of memory while reading; the input is too large for this machine")
        except Exception as e:  # a bug or unforeseen input: report it, keep the window alive
            self.signals.failed.emit(crashlog.one_line(e, "Loading"))
        else:
            self.signals.finished.emit(result)


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
        self._job: _Job | None = None
        self._jobs: dict[_JobSignals, _Job] = {}  # keeps each job's signals alive until it ends

    def start(self, fn: Callable[[TaskState], Any], on_finished: Callable[[Any], None] | None = None) -> None:
        """Runs fn(task_state) on the pool; on_finished(result) runs on the GUI thread."""
        self.cancel()
        signals = _JobSignals()
        job = _Job(fn, signals, on_finished)
        self._jobs[signals] = job
        # Bound slots of this GUI-thread object: Qt queues the worker's signals.
        signals.progress.connect(self._on_progress)
        signals.finished.connect(self._on_finished)
        signals.failed.connect(self._on_failed)
        signals.cancelled.connect(self._on_cancelled)
        self._job = job
        self.busy_changed.emit(True)
        self.pool.start(job)

    @property
    def busy(self) -> bool:
        return self._job is not None

    def cancel(self) -> None:
        if self._job is not None:
            self._job.task.cancel()
            self._job = None
            self.busy_changed.emit(False)
            self.cancelled.emit()

    def wait(self, msecs: int = -1) -> bool:
        """Waits for running jobs (also cancelled ones) to end."""
        return self.pool.waitForDone(msecs)

    def _current(self) -> bool:
        return self._jobs.get(self.sender()) is self._job

    def _end(self) -> _Job | None:
        """Forgets the sending job; returns it if it was the current one."""
        job = self._jobs.pop(self.sender(), None)
        if job is None or job is not self._job:
            return None  # superseded or cancelled: drop its late result
        self._job = None
        self.busy_changed.emit(False)
        return job

    @Slot(float, str)
    def _on_progress(self, fraction: float, text: str) -> None:
        if self._current():
            self.progress.emit(fraction, text)

    @Slot(object)
    def _on_finished(self, result) -> None:
        job = self._end()
        if job is not None:
            if job.on_finished is not None:
                job.on_finished(result)
            self.finished.emit(result)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        if self._end():
            self.failed.emit(message)

    @Slot()
    def _on_cancelled(self) -> None:
        self._end()
