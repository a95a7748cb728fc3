"""Runs the Query tab's SQL on the opened location's ProfileDatabase in a
worker: the tables a query names load there (with progress), DuckDB's own
progress is polled while it runs, Esc/Cancel interrupts it. The result's
chart data and sort orders are computed in the worker too."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
from PySide6.QtCore import QObject, QTimer, Signal

from profscope.models.sql.examples import Facts, why_empty
from profscope.models.sql.result_chart import ChartData, chart_data
from profscope.models.sql.result_order import sort_order
from profscope.viewer.workers import TaskRunner

if TYPE_CHECKING:  # DuckDB loads with the first query (in its worker), not with the window
    from profscope.models.sql.database import ProfileDatabase, QueryResult

MAX_ROWS = 5_000_000  # rows fetched for the table; more are left in DuckDB (the result says so)
POLL_MS = 200


@dataclass
class QueryOutcome:
    result: QueryResult
    chart: ChartData | None
    seconds: float
    warnings: list[str]
    facts: Facts | None = None  # what the examples adapt to, as known after this query
    why_empty: str = ""  # why it found no rows, where that can be told


class QueryRunner(QObject):
    finished = Signal(object)  # QueryOutcome
    failed = Signal(str, object)  # message, character offset in the editor (or None)
    sorted = Signal(object, int, bool, object)  # table, column, descending, row order
    progress = Signal(float, str)
    busy_changed = Signal(bool)
    facts_changed = Signal(object)  # Facts of the opened location, for the example queries

    def __init__(self, parent=None):
        super().__init__(parent)
        self.runner = TaskRunner(self)
        self._source: tuple | None = None  # (repository, HParams data) of the opened location
        self.facts = Facts()
        self._db: ProfileDatabase | None = None
        self._db_source: tuple | None = None
        self._lock = threading.Lock()  # one query per connection: a cancelled one may still be unwinding
        self._poll = QTimer(self, interval=POLL_MS)
        self._poll.timeout.connect(self._poll_progress)
        self.runner.progress.connect(self.progress)
        self.runner.busy_changed.connect(self._busy)
        self.runner.failed.connect(lambda message: self.failed.emit(message, None))

    @property
    def busy(self) -> bool:
        return self.runner.busy

    def set_location(self, repo, hparams) -> None:
        """The opened location's data; its tables load when queries name them.
        The previous database goes when its last query has ended."""
        self.cancel()
        self._source = (repo, hparams) if repo is not None or hparams is not None else None
        self.facts = Facts.of_hparams(hparams)  # in memory already; the steps once a query reads the timelines
        self.facts_changed.emit(self.facts)

    def run(self, sql: str, offset: int = 0) -> None:
        """Runs SQL; an error's position is reported plus offset (where the SQL starts in the editor)."""
        source, facts_before = self._source, self.facts
        if source is None:
            self.failed.emit("Open a profile or a log dir first: queries run over what it holds.", None)
            return

        def job(task):
            from profscope.models.sql.database import QueryError

            with self._lock:
                db = self.database(source)
                started = time.perf_counter()
                try:
                    result = db.query(sql, task, max_rows=MAX_ROWS)
                except QueryError as e:
                    return e
                task.report(1.0, "Preparing the chart")
                chart = chart_data(result.table)
                facts = Facts(db.known_steps(), facts_before.metrics, facts_before.hparams)
                why = why_empty(sql, facts) if result.table.num_rows == 0 else ""
                return QueryOutcome(result, chart, time.perf_counter() - started, list(db.warnings), facts, why)

        self.runner.start(job, lambda outcome: self._done(outcome, offset))

    def sort(self, table: pa.Table, column: int, descending: bool) -> None:
        self.runner.start(lambda task: sort_order(table, column, descending),
                          lambda order: self.sorted.emit(table, column, descending, order))

    def cancel(self) -> None:
        self.runner.cancel()  # the task's cancel interrupts DuckDB

    def wait(self, msecs: int = -1) -> bool:
        return self.runner.wait(msecs)

    def close(self, msecs: int = -1) -> bool:
        """Stops the running query and closes the database (the window closes)."""
        self.cancel()
        if not self.wait(msecs):
            return False
        if self._db is not None:
            self._db.close()
        self._db = self._db_source = self._source = None
        return True

    def learn_steps(self, steps: list[int]) -> None:
        """Steps seen outside a query (a shown timeline's): the examples adapt to them."""
        self.facts = Facts(sorted(steps), self.facts.metrics, self.facts.hparams)
        self.facts_changed.emit(self.facts)

    def database(self, source) -> ProfileDatabase:
        """The database of a location's data (set_location's), made on first
        use; the previous location's is dropped (its running query keeps it)."""
        from profscope.models.sql.database import ProfileDatabase

        if self._db is None or self._db_source is not source:
            self._db, self._db_source = ProfileDatabase(*source), source
        return self._db

    def _done(self, outcome, offset: int) -> None:
        from profscope.models.sql.database import QueryError  # loaded: the query ran

        if isinstance(outcome, QueryError):
            self.failed.emit(str(outcome), outcome.position + offset if outcome.position is not None else None)
        else:
            if outcome.facts is not None and outcome.facts.steps is not None and outcome.facts != self.facts:
                self.facts = outcome.facts
                self.facts_changed.emit(self.facts)
            self.finished.emit(outcome)

    def _busy(self, busy: bool) -> None:
        if busy:
            self._poll.start()
        else:
            self._poll.stop()
        self.busy_changed.emit(busy)

    def _poll_progress(self) -> None:
        db = self._db
        fraction = db.progress() if db is not None else None
        if fraction is not None:
            self.progress.emit(fraction, "Running the query")
