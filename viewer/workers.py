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
    def __init__(self, fn: Callable[[TaskState], Any], signals: _JobSignals):
        super().__init__()
        self.fn = fn
        self.signals = signals
        self.task = TaskState(on_progress=signals.progress.emit)

    def run(self) -> None:
        # The runner holds fn (and the widgets it may refer to) until this job's
        # last signal reaches the GUI thread, and this thread lets go of it
        # before signalling: a Qt object freed on a pool thread can deadlock
        # with the GUI thread or crash.
        signal, args = self._outcome()
        signal.emit(*args)

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
        self._job: _Job | None = None
        # Each job's signals, fn and on_finished, kept until its last signal arrives (see _Job.run).
        self._jobs: dict[_JobSignals, tuple[_Job, Callable, Callable | None]] = {}

    def start(self, fn: Callable[[TaskState], Any], on_finished: Callable[[Any], None] | None = None) -> None:
        """Runs fn(task_state) on the pool; on_finished(result) runs on the GUI thread."""
        self.cancel()
        signals = _JobSignals()
        job = _Job(fn, signals)
        self._jobs[signals] = (job, fn, on_finished)
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
        entry = self._jobs.get(self.sender())
        return entry is not None and entry[0] is self._job

    def _end(self) -> tuple[_Job, Callable, Callable | None] | None:
        """Forgets the sending job; returns its entry if it was the current one."""
        entry = self._jobs.pop(self.sender(), None)
        if entry is None or entry[0] is not self._job:
            return None  # superseded or cancelled: drop its late result
        self._job = None
        self.busy_changed.emit(False)
        return entry

    @Slot(float, str)
    def _on_progress(self, fraction: float, text: str) -> None:
        if self._current():
            self.progress.emit(fraction, text)

    @Slot(object)
    def _on_finished(self, result) -> None:
        entry = self._end()
        if entry is not None:
            if entry[2] is not None:
                entry[2](result)
            self.finished.emit(result)

    @Slot(str)
    def _on_failed(self, message: str) -> None:
        if self._end():
            self.failed.emit(message)

    @Slot()
    def _on_cancelled(self) -> None:
        self._end()
