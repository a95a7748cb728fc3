"""The HParams tab of an opened log dir: its layout saved per log dir, and
watching the log dir (reloading the sweep when its event files change)."""

from __future__ import annotations

import json
from collections.abc import Callable

from PySide6.QtCore import QObject, QSettings, QTimer, Signal

from profscope.models.hparams.experiment import load_hparams
from profscope.models.hparams.logdir import logdir_signature
from profscope.viewer.workers import TaskRunner
from profscope.widgets.hparams.layout import settings_key
from profscope.widgets.hparams.view import HParamsView

WATCH_INTERVAL_MS = 5000  # how often a watched log dir is checked for new data


class HParamsController(QObject):
    """Feeds `view` the opened log dir's sweep and its saved layout; while
    watching, checks the log dir every few seconds in `runner` (apart from the
    profile loads, so a check never cancels one) and emits `reloaded(data)`
    after showing new data."""

    reloaded = Signal(object)

    def __init__(self, runner: TaskRunner, view: HParamsView, settings: QSettings, set_status: Callable[[str], None],
                 parent: QObject | None = None):
        super().__init__(parent)
        self.runner = runner
        self.view = view
        self.settings = settings
        self.set_status = set_status
        self.path: str | None = None  # the log dir shown
        self.signature = None  # its event files and sizes when read
        self.watch_timer = QTimer(self, interval=WATCH_INTERVAL_MS)
        self.watch_timer.timeout.connect(self.check_for_new_data)

    def show(self, path: str, hparams: tuple | None) -> None:
        """An opened location's (HParamsData, signature), or None when it has no sweep."""
        data = hparams[0] if hparams else None
        again = hparams is not None and self.path == path  # F5: keep what the user set
        self.path = path if hparams else None
        self.view.set_data(data, None if again else self.layout(self.path))
        self.signature = hparams[1] if hparams else None
        warnings = data.logdir.warnings if data is not None else []
        self.view.show_message(
            f"{len(warnings):,} problem(s) reading the log dir; skipped what could not be read. "
            f"First: {warnings[0]}"
            if warnings
            else ""
        )

    # ------------------------------------------------------------ layout per log dir

    def layout(self, path: str | None) -> dict:
        """The HParams layout saved for a log dir ({} when none, or unreadable)."""
        if path is None:
            return {}
        try:
            state = json.loads(self.settings.value(settings_key(path), "{}"))
        except (TypeError, ValueError):
            return {}
        return state if isinstance(state, dict) else {}

    def save_layout(self) -> None:
        if self.path is not None and self.view.data is not None:
            self.settings.setValue(settings_key(self.path), json.dumps(self.view.layout_state()))

    # ------------------------------------------------------------ watching

    def set_watching(self, on: bool) -> None:
        """Checks the log dir every few seconds and reloads HParams when it changed."""
        if on:
            self.watch_timer.start()
        else:
            self.watch_timer.stop()

    def check_for_new_data(self) -> None:
        path, known = self.path, self.signature
        if path is None or self.runner.busy:
            return

        def job(task):
            signature = logdir_signature(path)
            return (load_hparams(path, task), signature) if signature != known else None

        self.runner.start(job, self._on_new_data)

    def _on_new_data(self, result) -> None:
        if result is None:
            return
        data, self.signature = result
        self.view.set_data(data)
        self.reloaded.emit(data)
        self.set_status(f"{self.path}: reloaded, {len(data.session_runs):,} HParams sessions.")
