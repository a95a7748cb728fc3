"""SQL over an opened location (DuckDB), and its tables as Parquet.

`ProfileDatabase` puts the readers' numpy columns in front of DuckDB as Arrow
arrays without copying event data: numbers as they are, interned names as
dictionary arrays (indices + the distinct strings), per-lane values (process,
thread, depth) as run-end encoded arrays with one run per lane. Each source
(a host's timeline, an allocator's snapshots) is one registered relation; a
table is a view that unions them, adding constants (session, host) and unit
conversions (ps -> ns), so DuckDB computes those while it scans.

A table is loaded the first time a query names it (DuckDB lists a
statement's tables before it runs), in the caller's thread, with the
TaskState's progress and cancellation. docs/SQL.md documents every column.

The connection cannot touch files, the network or extensions (its
configuration is locked), has a memory limit and no spill folder, and a
query is cancelled through DuckDB's interrupt when its task is. Parquet is
written from the sources' columns by models/sql/parquet.py (`write_parquet`),
never by SQL.
"""

from __future__ import annotations

import functools
import json
import os
import re
import urllib.parse
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from profscope.models.analysis import trace_stats
from profscope.models.core.task import Cancelled, ProfileError, TaskState
from profscope.models.data.cuda_snapshot import RowFrames
from profscope.models.data.memory_profile import ACTIVITY_NAMES
from profscope.models.data.timeline import StringTable, Timeline
from profscope.models.repository.registry import (
    FRAMEWORK_OP_STATS,
    INPUT_PIPELINE_ANALYZER,
    MEMORY_PROFILE,
    TRACE_VIEWER,
)
from profscope.models.sql import parquet
from profscope.models.sql.schema import ACTIVITY_COLUMNS, HPARAMS_TABLES, NEEDS, SCHEMA, SLICE_COLUMNS, TABLES

# trace_stats' kernel types in SQL (kernel_type(): HTA's patterns, anchored at the start as re.match anchors them).
_RE = "regexp_matches(name, '^(?:{})')"
KERNEL_TYPE = (f"CASE WHEN {_RE.format(trace_stats.COMMUNICATION_PATTERN)} THEN 'COMMUNICATION' "
               f"WHEN {_RE.format(trace_stats.MEMORY_PATTERN)} THEN 'MEMORY' "
               f"WHEN {_RE.format(trace_stats.NOT_COMPUTATION_PATTERN)} THEN 'OTHER' ELSE 'COMPUTATION' END")
MEMORY_LIMIT_VARIABLE = "PROFSCOPE_SQL_MEMORY"


class QueryError(ProfileError):
    """DuckDB refused or failed a query; `position` is the character offset in
    the SQL that DuckDB pointed at (None when it named none)."""

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message)
        self.position = position


@dataclass
class QueryResult:
    table: pa.Table  # the rows as Arrow columns (table.column(k).to_numpy(zero_copy_only=False))
    truncated: bool = False  # max_rows were fetched and the query had more


def default_memory_limit() -> str:
    """DuckDB's memory limit for user queries: $PROFSCOPE_SQL_MEMORY (such as
    "4GB"), else half of the machine's memory."""
    if value := os.environ.get(MEMORY_LIMIT_VARIABLE):
        return value
    try:
        return f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2 // (1 << 20)}MiB"
    except (ValueError, OSError, AttributeError):
        return "4GiB"


class ProfileDatabase:
    """The tables of a profile repository and/or HParams log dir (`hosts`
    keeps only those hosts' data)."""

    def __init__(self, repo=None, hparams=None, hosts: set[str] | None = None, memory_limit: str | None = None,
                 threads: int | None = None):
        self.repo, self.hparams, self.hosts = repo, hparams, hosts
        self.warnings: list[str] = []
        self.reads = self.failed_reads = 0  # sources read, and those unusable (a warning each)
        self.memory_limit = memory_limit or default_memory_limit()
        config: dict[str, str | bool | int | float | list[str]] = {
            "temp_directory": "", "memory_limit": self.memory_limit,
            "autoload_known_extensions": False, "autoinstall_known_extensions": False,
            "allow_community_extensions": False}
        if threads:
            config["threads"] = threads
        self.threads = threads  # also the Parquet writer's (None: one per core)
        self._con = duckdb.connect(config=config)
        self._con.execute("SET python_enable_replacements = false")  # no Python variables as tables
        self._con.execute("SET enable_progress_bar = true")  # query_progress() for the window
        self._con.execute("SET enable_progress_bar_print = false")
        self._con.execute("SET enable_external_access = false")
        self._con.execute("SET lock_configuration = true")
        self._loaded: set[str] = set()
        self._parts: dict[str, list[_Part]] = {}  # each view's sources (Parquet writes them directly)
        self._timelines: list[tuple[str, str, str, Timeline]] | None = None
        self._allocators: list | None = None
        self._relations = 0

    @classmethod
    def open(cls, location, task: TaskState | None = None, **kwargs) -> ProfileDatabase:
        from profscope.models.repository.locations import open_location

        repo, hparams = open_location(location, task)
        return cls(repo, hparams, **kwargs)

    # ------------------------------------------------------------ what there is

    @staticmethod
    def tables() -> list[str]:
        return list(TABLES)

    @staticmethod
    def columns(table: str) -> list[tuple[str, str]]:
        """(column, DuckDB type) of a table, loaded or not."""
        return list(SCHEMA[table])

    def loaded(self, table: str) -> bool:
        return table in self._loaded

    # ------------------------------------------------------------ queries

    def known_steps(self) -> list[int] | None:
        """The steps of the slices column `step`, once the timelines are read (None before: reading them is
        a query's work, not a question's)."""
        if self._timelines is None:
            return None
        found: set[int] = set()
        for *_, tl in self._timelines:
            spans = trace_stats.steps(tl)
            found.update(spans.number.tolist() if len(spans) else range(max(len(tl.markers_ps) - 1, 0)))
        return sorted(found)

    def query(self, sql: str, task: TaskState | None = None, max_rows: int | None = None) -> QueryResult:
        """Runs SQL (several statements: the last one's rows), loading the
        tables it names first. Cancelling the task interrupts DuckDB."""
        task = task or TaskState()
        try:
            statements = self._con.extract_statements(sql)
        except duckdb.Error as e:
            raise _query_error(e, sql) from None
        if not statements:
            raise QueryError("no SQL statement given")
        self.load([t for t in TABLES if t in self._named_tables(statements)], task)
        remove = task.on_cancel(self._con.interrupt)
        statement = statements[0]  # the one running, for the error's position
        try:
            task.raise_if_cancelled()
            for statement in statements[:-1]:
                self._retry_loading(lambda statement=statement: self._con.execute(statement).fetchall(), task)
            statement = statements[-1]
            relation = self._retry_loading(lambda: self._con.sql(statement), task)
            if relation is None:  # a statement without rows (CREATE, SET ...)
                return QueryResult(pa.table({}))
            if max_rows is None:
                return QueryResult(relation.to_arrow_table())
            return _first_rows(relation.to_arrow_reader(min(max(max_rows, 1), 1 << 16)), max_rows)
        except duckdb.InterruptException:
            raise Cancelled() from None
        except duckdb.Error as e:
            if task.cancelled:
                raise Cancelled() from None
            raise self._statement_error(e, sql, statement) from None
        finally:
            remove()

    def _statement_error(self, e: duckdb.Error, sql: str, statement) -> QueryError:
        """A statement's error with its position in sql. DuckDB's relations
        (con.sql) leave the position out of binding errors: the statement is
        bound again as a PREPARE to have DuckDB point at the place."""
        start = max(sql.find(statement.query), 0)
        error = _query_error(e, statement.query, self.memory_limit)
        if error.position is None and isinstance(e, (duckdb.BinderException, duckdb.CatalogException)):
            prefix = "PREPARE _profscope_where AS "
            try:
                self._con.execute(prefix + statement.query)
                self._con.execute("DEALLOCATE _profscope_where")
            except duckdb.Error as again:
                where = _position(str(again), prefix + statement.query)
                error.position = where - len(prefix) if where is not None and where >= len(prefix) else None
        if error.position is not None:
            error.position += start
        return error

    def _named_tables(self, statements) -> set[str]:
        """The tables the statements name, as far as DuckDB can tell before
        they exist (it binds some statements to list them: those fail here
        and load in _retry_loading instead)."""
        names = set()
        for statement in statements:
            try:
                names |= self._con.get_table_names(statement.query, qualified=False)
            except duckdb.Error:
                pass
        return names

    def _retry_loading(self, run, task: TaskState):
        """run(), loading each table DuckDB finds missing and trying again."""
        while True:
            try:
                return run()
            except duckdb.CatalogException as e:
                m = re.search(r"Table with name (\w+) does not exist", str(e))
                if not m or m[1] not in TABLES or m[1] in self._loaded:
                    raise
                self.load([m[1]], task)

    def cancel(self) -> None:
        """Interrupts the running query (from any thread)."""
        self._con.interrupt()

    def progress(self) -> float | None:
        """The running query's progress in [0, 1], if DuckDB can tell (any thread)."""
        p = self._con.query_progress()
        return None if p < 0 else min(p / 100.0, 1.0)

    def close(self) -> None:
        self._con.close()
        self._timelines = self._allocators = None

    # ------------------------------------------------------------ loading

    def load(self, tables, task: TaskState | None = None) -> None:
        """Loads tables (and what they are built on) that are not loaded yet."""
        task = task or TaskState()
        for table in tables:
            if table in self._loaded:
                continue
            self.load(NEEDS.get(table, ()), task)
            task.report(0.0, f"Loading {table}")
            getattr(self, f"_load_{table}")(task)
            self._loaded.add(table)

    def _sources(self, tool: str):
        """(session, host) pairs that have a tool's data, among the hosts kept."""
        if self.repo is None:
            return
        for s in self.repo.enum_sessions():
            for host in self.repo.hosts_with(s.name, tool):
                if self.hosts is None or host in self.hosts:
                    yield s.name, host

    def _timeline_list(self, task: TaskState) -> list[tuple[str, str, str, Timeline]]:
        """Every host's timeline (each tag's, for event files of several steps), read once."""
        if self._timelines is None:
            found = []
            for session, host in list(self._sources(TRACE_VIEWER)):
                for tag in self.repo.steps(session, host) or [""]:
                    task.report(0.0, f"Reading the timeline of {host}")
                    read = lambda s=session, h=host, t=tag: self.repo.step_timeline(s, h, t, task)
                    if (tl := self._read(read)) is not None:
                        found.append((session, host, tag, tl))
            self._timelines = found
        return self._timelines

    def _allocator_list(self, task: TaskState) -> list:
        """(session, host, memory id, AllocatorProfile) of every memory profile, read once."""
        if self._allocators is None:
            found = []
            for session, host in list(self._sources(MEMORY_PROFILE)):
                task.report(0.0, f"Reading the memory profile of {host}")
                if (profile := self._read(lambda s=session, h=host: self.repo.memory_profile(s, h, task))) is not None:
                    found += [(session, host, mid, a) for mid, a in profile.allocators.items()]
            self._allocators = found
        return self._allocators

    def _read(self, read):
        """A reader's result, or None with a warning when the input is unusable
        (a trace without memory events, say): the other hosts still load."""
        try:
            result = read()
        except ProfileError as e:
            self.warnings.append(str(e))
            self.failed_reads += 1
            return None
        self.reads += 1
        return result

    def _part(self, source: pa.Table, exprs: dict, **constants: str) -> _Part:
        """Registers one source's Arrow columns as a relation of a table."""
        name = f"_source_{self._relations}"
        self._relations += 1
        self._con.register(name, source)
        return _Part(name, source, exprs, constants)

    def _view(self, table: str, parts: list[_Part], schema=None) -> None:
        """CREATE VIEW table AS the union of its parts; a column a part lacks
        is NULL. Every column is cast to the schema's type, so all parts and an
        empty table agree."""
        schema = schema or SCHEMA[table]
        selects = [f"SELECT {', '.join(f'CAST({p.sql(c)} AS {t}) AS {c}' for c, t in schema)} FROM {p.relation}"
                   for p in parts]
        body = " UNION ALL ".join(selects) or (
            f"SELECT {', '.join(f'CAST(NULL AS {t}) AS {c}' for c, t in schema)} WHERE false"
        )
        self._con.execute(f"CREATE VIEW {table} AS {body}")
        self._parts[table] = parts

    def _load_slices(self, task: TaskState) -> None:
        parts = []
        for session, host, tag, tl in self._timeline_list(task):
            task.raise_if_cancelled()
            columns = slice_columns(tl)
            exprs = {c: c for c in columns.column_names} | {
                "start_ns": _Ns("start_ps", int(tl.origin_ns)),
                "dur_ns": _Ns("dur_ps"),
                "parent": _NullIf("parent"),
                "step": _NullIf("step"),
            }
            parts.append(
                self._part(
                    columns,
                    {c: e for c, e in exprs.items() if c in columns.column_names or c in ("start_ns", "dur_ns")},
                    session=session,
                    host=host,
                    tag=tag,
                )
            )
        self._view("slices", parts)

    def _load_flows(self, task: TaskState) -> None:
        parts = []
        for session, host, tag, tl in self._timeline_list(task):
            if tl.flows is not None and len(tl.flows):
                f = tl.flows
                columns = pa.table(
                    {"from_id": f.src, "to_id": f.dst, "category": _dictionary(f.category, f.categories)}
                )
                exprs = {"from_id": "from_id", "to_id": "to_id", "category": "category"}
                parts.append(self._part(columns, exprs, session=session, host=host, tag=tag))
        self._view("flows", parts)

    def _load_counters(self, task: TaskState) -> None:
        parts = []
        for session, host, tag, tl in self._timeline_list(task):
            for c in tl.counters:
                columns = pa.table({"time_ps": c.time_ps, "value": c.value})
                exprs = {"time_ns": _Ns("time_ps", int(tl.origin_ns)), "value": "value"}
                process = tl.groups[c.group] if 0 <= c.group < len(tl.groups) else ""
                parts.append(
                    self._part(columns, exprs, session=session, host=host, tag=tag, process=process, name=c.name)
                )
        self._view("counters", parts)

    def _load_kernels(self, task: TaskState) -> None:
        self._con.execute(
            f"CREATE VIEW kernels AS SELECT *, {KERNEL_TYPE} AS type FROM slices "
            f"WHERE category IN ({', '.join(map(_literal, trace_stats.GPU_CATEGORIES))})"
        )

    def _load_ops(self, task: TaskState) -> None:
        parts = []
        for session, host, tag, tl in self._timeline_list(task):
            task.raise_if_cancelled()
            times = trace_stats.op_times(tl)
            if times is None:
                continue
            ops = np.flatnonzero(times.is_op)
            columns = pa.table(
                {
                    "id": ops,
                    "self_ps": times.self_ps[ops],
                    "device_self_ps": times.device_self_ps[ops],
                    "device_total_ps": times.device_total_ps[ops],
                }
            )
            exprs = {
                "id": "id",
                "self_ns": _Ns("self_ps"),
                "device_self_ns": _Ns("device_self_ps"),
                "device_total_ns": _Ns("device_total_ps"),
            }
            parts.append(self._part(columns, exprs, session=session, host=host, tag=tag))
        keys = (("session", "VARCHAR"), ("host", "VARCHAR"), ("tag", "VARCHAR"), ("id", "BIGINT"))
        self._view("_op_times", parts, keys + SCHEMA["ops"][len(SLICE_COLUMNS) :])
        self._con.execute(
            "CREATE VIEW ops AS SELECT s.*, o.self_ns, o.device_self_ns, o.device_total_ns "
            "FROM slices s JOIN _op_times o USING (session, host, tag, id)"
        )

    def _xprof_rows(self, tool: str, table: int, task: TaskState):
        """(session, host, DataTable) of XProf's `tool` for every xplane host (the table-th of its JSON)."""
        for session, host in list(self._sources(tool)):
            task.report(0.0, f"Computing XProf's {tool} of {host}")
            data = self._read(lambda s=session, h=host: json.loads(self.repo.tool_data(s, tool, h, {}, task).output))
            if data is not None:
                yield session, host, data[table] if isinstance(data, list) else data

    def _xprof_view(self, table: str, tool: str, index: int, columns: dict[str, str], task: TaskState) -> None:
        """A table of XProf's DataTable rows: columns maps its SQL columns to the DataTable's column ids."""
        parts = []
        for session, host, data in self._xprof_rows(tool, index, task):
            ids = [c.get("id") for c in data.get("cols", [])]
            rows = [[cell.get("v") if cell else None for cell in r.get("c", [])] for r in data.get("rows", [])]
            source = pa.table({sql: [row[ids.index(cid)] for row in rows] if cid in ids else [None] * len(rows)
                               for sql, cid in columns.items()})
            parts.append(self._part(source, {c: c for c in columns}, session=session, host=host))
        self._view(table, parts)

    def _load_xprof_ops(self, task: TaskState) -> None:
        self._xprof_view("xprof_ops", FRAMEWORK_OP_STATS, 0, {
            "host_or_device": "host_or_device", "type": "type", "operation": "operation",
            "occurrences": "occurrences", "total_us": "total_time", "self_us": "total_self_time",
            "self_share": "host_total_self_time_percent", "execution": "eager"}, task)

    def _load_xprof_steps(self, task: TaskState) -> None:
        self._xprof_view("xprof_steps", INPUT_PIPELINE_ANALYZER, 1, {
            "step": "stepnum", "step_ms": "stepTimeMs", "device_compute_ms": "deviceComputeTimeMs",
            "device_to_device_ms": "deviceToDeviceTimeMs", "device_collectives_ms": "deviceCollectivesTimeMs",
            "host_compute_ms": "hostComputeTimeMs", "kernel_launch_ms": "kernelLaunchTimeMs",
            "input_ms": "infeedTimeMs", "output_ms": "outfeedTimeMs", "compile_ms": "compileTimeMs",
            "other_ms": "otherTimeMs"}, task)

    def _load_memory_snapshots(self, task: TaskState) -> None:
        parts = []
        for session, host, memory_id, a in self._allocator_list(task):
            s = a.timeline
            strings = _text_array(s.strings)
            columns = pa.table(
                {
                    "snapshot": np.arange(len(s)),
                    "time_ps": s.time_ps,
                    "stack_bytes": s.stack,
                    "heap_bytes": s.heap,
                    "free_bytes": s.free,
                    "fragmentation": s.fragmentation,
                    "peak_bytes_in_use": s.peak_in_use,
                    "activity": s.activity,
                    "requested_bytes": s.requested,
                    "allocation_bytes": s.allocation,
                    "address": _unsigned(s.address),
                    "step": s.step,
                    **{name: _dictionary(getattr(s, name), strings) for name, _ in ACTIVITY_COLUMNS},
                }
            )
            exprs = {c: c for c in columns.column_names} | {"time_ns": _Ns("time_ps"), "kind": _activity("activity")}
            parts.append(self._part(columns, exprs, session=session, host=host, allocator=memory_id))
        self._view("memory_snapshots", parts)

    def _load_allocations(self, task: TaskState) -> None:
        parts = []
        for session, host, memory_id, a in self._allocator_list(task):
            s = a.timeline
            if not a.complete:  # XProf's sampled snapshots: allocations cannot be paired
                self.warnings.append(f"{host} {memory_id}: the file holds only sampled snapshots; no allocations")
                continue
            allocs, frees = a.lifetime_pairs
            freed = np.where(frees < len(s), frees, -1)
            at_free = np.minimum(frees, max(len(s) - 1, 0))
            strings = _text_array(s.strings)
            columns = pa.table(
                {
                    "snapshot": allocs,
                    "freed_snapshot": freed,
                    "alloc_time_ps": s.time_ps[allocs],
                    "free_time_ps": s.time_ps[at_free],
                    "allocation_bytes": s.allocation[allocs],
                    "requested_bytes": s.requested[allocs],
                    "address": _unsigned(s.address[allocs]),
                    "step": s.step[allocs],
                    "free_step": s.step[at_free],
                    **{name: _dictionary(getattr(s, name)[allocs], strings) for name, _ in ACTIVITY_COLUMNS},
                }
            )
            if a.top_frame is not None:  # where the source has call stacks; NULL elsewhere
                columns = columns.append_column("top_frame", _dictionary(a.top_frame[allocs], strings))
            exprs = {c: c for c in columns.column_names} | {
                "freed_snapshot": _NullIf("freed_snapshot"),
                "alloc_time_ns": _Ns("alloc_time_ps"),
                "free_time_ns": "CASE WHEN freed_snapshot < 0 THEN NULL ELSE free_time_ps // 1000 END",
                "free_step": "CASE WHEN freed_snapshot < 0 THEN NULL ELSE free_step END",
            }
            if a.top_frame is not None:
                exprs["top_frame"] = "NULLIF(top_frame, '')"
            parts.append(self._part(columns, exprs, session=session, host=host, allocator=memory_id))
        self._view("allocations", parts)

    def _load_segments(self, task: TaskState) -> None:
        parts = []
        for session, host, memory_id, a in self._allocator_list(task):
            if a.segments and a.segments["address"]:
                columns = pa.table({c: pa.array(v, pa.uint64()) if c == "address" else v
                                    for c, v in a.segments.items()})
                exprs = {c: c for c in columns.column_names}
                parts.append(self._part(columns, exprs, session=session, host=host, allocator=memory_id))
        self._view("segments", parts)

    def _load_frames(self, task: TaskState) -> None:
        parts = []
        for session, host, memory_id, a in self._allocator_list(task):
            if isinstance(a.frames, RowFrames):  # columns already (PyTorch snapshots)
                columns = pa.table(a.frames.table())
                exprs = {c: c for c in columns.column_names}
                if columns.num_rows:
                    parts.append(self._part(columns, exprs, session=session, host=host, allocator=memory_id))
                continue
            cols: dict[str, list] = {"allocation": [], "depth": [], "name": [], "filename": [], "line": []}
            for row, frames in (a.frames or {}).items():
                for depth, f in enumerate(frames):
                    if isinstance(f, dict):
                        line = f.get("line")
                        cols["allocation"].append(row)
                        cols["depth"].append(depth)
                        cols["name"].append(str(f.get("name", "")))
                        cols["filename"].append(str(f.get("filename", "")))
                        cols["line"].append(line if type(line) is int else None)
            if cols["allocation"]:
                columns = pa.table({c: pa.array(v, pa.int64()) if c in ("allocation", "line") else v
                                    for c, v in cols.items()})
                exprs = {c: c for c in columns.column_names}
                parts.append(self._part(columns, exprs, session=session, host=host, allocator=memory_id))
        self._view("frames", parts)

    def _hparams_sessions(self) -> list:
        return self.hparams.sessions(self.hparams.experiment().metric_infos) if self.hparams is not None else []

    def _load_sessions(self, task: TaskState) -> None:
        from profscope.protos import api_pb2

        rows = self._hparams_sessions()
        status = [
            api_pb2.Status.Name(s.status).removeprefix("STATUS_")
            if s.status in api_pb2.Status.values()
            else str(s.status)
            for s in rows
        ]
        self._python_table(
            "sessions",
            {
                "session": [s.name for s in rows],
                "group_name": [s.group for s in rows],
                "status": status,
                "start_time": [s.start_time for s in rows],
                "end_time": [s.end_time for s in rows],
                "model_uri": [s.model_uri for s in rows],
                "monitor_url": [s.monitor_url for s in rows],
            },
        )

    def _load_hparams(self, task: TaskState) -> None:
        rows = [(s.name, name, value) for s in self._hparams_sessions() for name, value in sorted(s.hparams.items())]
        self._python_table(
            "hparams",
            {
                "session": [r[0] for r in rows],
                "name": [r[1] for r in rows],
                "value": [_hparam_text(r[2]) for r in rows],
                "number": [float(r[2]) if isinstance(r[2], (bool, float, int)) else None for r in rows],
            },
        )

    def _load_metrics(self, task: TaskState) -> None:
        sessions = sorted((s.name for s in self._hparams_sessions()), key=len, reverse=True)
        parts = []
        for run_name, run in self.hparams.runs.items() if self.hparams is not None else ():
            # A session's runs: itself and the runs below it (train, validation ...).
            owner = next((s for s in sessions if run_name == s or run_name.startswith(s + "/")), None)
            if owner is None:
                continue
            for tag, series in run.scalars.items():
                columns = pa.table(
                    {
                        "seq": np.arange(len(series)),
                        "step": series.step,
                        "wall_time": series.wall_time,
                        "value": series.value,
                    }
                )
                exprs = {c: c for c in columns.column_names}
                parts.append(self._part(columns, exprs, session=owner, run=run_name[len(owner) + 1 :], tag=tag))
        self._view("metrics", parts)

    def _python_table(self, table: str, columns: dict[str, list]) -> None:
        """A small table from Python lists (HParams sessions are few)."""
        parts = [self._part(pa.table(columns), {c: c for c in columns})] if next(iter(columns.values())) else []
        self._view(table, parts)

    # ------------------------------------------------------------ Parquet

    def _write_parts(self, path: Path, parts: list[_Part], schema) -> None:
        """A table's sources into one Parquet file, a row group per million rows of each."""
        with parquet.Writer(path, schema, self.threads) as writer:
            for p in parts:
                for rows, columns in self._row_groups(p, schema):
                    writer.write(columns, rows)

    def _row_groups(self, p: _Part, schema):
        """A source's rows for Parquet, row group by row group. Per-lane
        columns and constants go as runs, the rest from the source's arrays
        (texts from their dictionaries, not decoded and hashed again);
        DuckDB computes only what numpy cannot (CASE expressions, activity
        names), a row group at a time."""
        rows = p.source.num_rows
        columns = {c: self._export_column(p, c, t) for c, t in schema}
        computed = [(c, t) for c, t in schema if columns[c] is None]
        if computed:
            casts = ", ".join(f"CAST({p.sql(c)} AS {t}) AS {c}" for c, t in computed)
            batches = _gathered(self._con.sql(f"SELECT {casts} FROM {p.relation}").to_arrow_reader(1 << 16))
        else:
            batches = (min(parquet.ROW_GROUP_ROWS, rows - a) for a in range(0, rows, parquet.ROW_GROUP_ROWS))
        at = 0
        for batch in batches:
            n = batch if isinstance(batch, int) else batch.num_rows
            if not n:
                continue
            # Made on the writer's threads, like their encoding.
            yield (
                n,
                [
                    functools.partial(columns[c], at, n)
                    if columns[c] is not None
                    else functools.partial(parquet.from_arrow, batch.column(c), t)
                    for c, t in schema
                ],
            )
            at += n
        if at != rows:  # DuckDB keeps a scan's order; anything else would misalign the columns
            raise ProfileError(f"Parquet export: {at:,} rows computed for {rows:,}")

    def _export_column(self, p: _Part, column: str, sql_type: str):
        """A view column of a source for Parquet: rows(start, n) giving its
        Values or Runs, or None when DuckDB must compute it."""
        rows = p.source.num_rows
        if column in p.constants:
            return parquet.RunColumn.constant(rows, pa.array([p.constants[column]], pa.string())).rows
        expr = p.exprs.get(column)
        if expr is None:
            return parquet.RunColumn.constant(rows, pa.array([], pa.string()), valid=False).rows
        name = expr.column if isinstance(expr, (_Ns, _NullIf)) else expr
        if name not in p.source.column_names:
            return None
        values = parquet.whole(p.source.column(name))
        if sql_type == "VARCHAR":
            if expr != column:
                return None
            if isinstance(values, pa.RunEndEncodedArray):  # per-lane texts
                ends, texts, per_run = _distinct_runs(values)
                return parquet.RunColumn(ends, per_run, pa.array(texts.astype(str), pa.string())).rows
            return lambda a, n: parquet.from_arrow(values.slice(a, n), sql_type)  # a names blob (StepStats) is hashed
        want = np.dtype(parquet.NUMPY_TYPES[sql_type])
        if isinstance(values, pa.RunEndEncodedArray):  # per-lane numbers
            ends, distinct, per_run = _distinct_runs(values)
            if isinstance(expr, _Ns) or not _widens(distinct.dtype, want):
                return None
            valid = distinct[per_run] != expr.missing if isinstance(expr, _NullIf) else None
            return parquet.RunColumn(ends, per_run, distinct.astype(want), valid).rows
        if values.null_count or not _widens(values.type.to_pandas_dtype(), want):
            return None
        values = values.to_numpy()
        if isinstance(expr, _Ns):
            return lambda a, n: parquet.Values(expr.numpy(values[a : a + n]))
        if isinstance(expr, _NullIf):

            def rows_of(a, n):
                part = values[a : a + n]
                valid = part != expr.missing
                nulls = n - int(np.count_nonzero(valid))
                return parquet.Values(
                    part, np.packbits(valid, bitorder="little") if nulls else None, 0, null_count=nulls
                )

            return rows_of
        # int32 stays int32 for BIGINT: the encoder widens as it goes
        keep = values.dtype == want or (want == np.int64 and values.dtype == np.int32)
        return lambda a, n: parquet.Values(values[a : a + n] if keep else values[a : a + n].astype(want))

    def write_parquet(self, folder: Path, tables, partition: str | None = None) -> list[tuple[Path, int]]:
        """Writes tables as folder/<table>[/host=<partition>]/part.parquet
        (host left out of the file: readers take it from the folder name),
        each written beside its place and renamed when whole; returns (path,
        bytes) of each."""
        written = []
        for table in tables:
            self.load([table])
            where = Path(folder) / table
            if partition is not None:
                where = where / f"host={urllib.parse.quote(partition, safe='')}"
            where.mkdir(parents=True, exist_ok=True)
            path, part = where / "part.parquet", where / ".part.parquet.part"
            schema = [(c, t) for c, t in SCHEMA[table] if partition is None or c != "host"]
            try:
                if table in self._parts:
                    self._write_parts(part, self._parts[table], schema)
                else:  # a view over other tables (kernels, ops): DuckDB computes its rows
                    sql = f"SELECT {', '.join(c for c, _ in schema)} FROM {table}"
                    with parquet.Writer(part, schema, self.threads) as writer:
                        for batch in _gathered(self._con.sql(sql).to_arrow_reader(1 << 16)):
                            if batch.num_rows:
                                writer.write([parquet.from_arrow(batch.column(c), t) for c, t in schema])
                os.replace(part, path)
            except BaseException:
                part.unlink(missing_ok=True)
                raise
            written.append((path, path.stat().st_size))
        return written


# ---------------------------------------------------------------- columns


def slice_columns(tl: Timeline) -> pa.Table:
    """A timeline's events as Arrow columns, sharing the timeline's arrays:
    id (the event's index in the Timeline, its order: lane, then start),
    lane, process, thread and depth (one run per lane), name and kind
    (dictionaries, or the names' blob), start_ps, dur_ps, and where the
    timeline has them category, parent (-1: none) and step (-1: none)."""
    n = len(tl)
    counts = np.diff(tl.lane_offsets)
    # A lane named "" continues the named lane above it in its group: a deeper level of one thread.
    title = np.arange(tl.num_lanes)
    for lane in range(1, tl.num_lanes):
        if not tl.lane_names[lane] and tl.lane_group[lane - 1] == tl.lane_group[lane]:
            title[lane] = title[lane - 1]
    keep = counts > 0  # runs of run-end encoding cannot be empty
    ends = pa.array(tl.lane_offsets[1:][keep].astype(np.int64))

    def per_lane(values, type_):
        return pa.RunEndEncodedArray.from_arrays(ends, pa.array(np.asarray(values)[keep] if len(values) else [], type_))

    columns = {
        "id": np.arange(n, dtype=np.int32 if n < 2**31 else np.int64),
        "lane": per_lane(np.arange(tl.num_lanes, dtype=np.int32), pa.int32()),
        "process": per_lane(np.array(tl.groups, dtype=object)[tl.lane_group] if tl.num_lanes else [], pa.string()),
        "thread": per_lane(np.array(tl.lane_names, dtype=object)[title] if tl.num_lanes else [], pa.string()),
        "depth": per_lane((np.arange(tl.num_lanes) - title).astype(np.int32), pa.int32()),
        "name": _names(tl.names),
        "kind": _dictionary(tl.kind, tl.kinds),
        "start_ps": tl.start_ps,
        "dur_ps": tl.duration_ps,
    }
    if tl.category is not None:
        columns["category"] = _dictionary(tl.category, tl.categories)
    if tl.parent is not None:
        columns["parent"] = tl.parent
    if (step := slice_steps(tl)) is not None:
        columns["step"] = step
    return pa.table(columns)


def slice_steps(tl: Timeline):
    """Each event's step, -1 outside every step; None when the timeline has no
    steps. ProfilerStep#N spans give N, GPU work counting at its launch as
    trace_stats' step ranges do; otherwise the step markers (XSpace) give the
    step's ordinal from 0, as one run per lane and step (starts are sorted
    within a lane, so no array per event)."""
    spans = trace_stats.steps(tl)
    if len(spans):
        t = tl.start_ps.copy()
        gpu = trace_stats.gpu_events(tl)
        t[gpu] = trace_stats.launch_time(tl, gpu)
        k = np.searchsorted(spans.start_ps, t, side="right") - 1
        inside = (k >= 0) & (t <= spans.end_ps[np.maximum(k, 0)])
        return np.where(inside, spans.number[np.maximum(k, 0)], -1)
    markers = tl.markers_ps
    if len(markers) < 2 or not len(tl):
        return None
    # Per lane: before the first marker -1, from marker k to k+1 step k, from the last marker on -1.
    values = np.r_[-1, np.arange(len(markers) - 1), -1].astype(np.int64)
    ends, steps = [], []
    for lane in range(tl.num_lanes):
        a, b = int(tl.lane_offsets[lane]), int(tl.lane_offsets[lane + 1])
        if a < b:
            ends.append(np.r_[a + np.searchsorted(tl.start_ps[a:b], markers, side="left"), b])
            steps.append(values)
    ends, steps = np.concatenate(ends), np.concatenate(steps)  # type: ignore[assignment]  # the lists as arrays
    keep = np.diff(np.r_[0, ends]) > 0  # runs cannot be empty
    return pa.RunEndEncodedArray.from_arrays(pa.array(ends[keep]), pa.array(steps[keep]))


def _names(names) -> pa.Array:
    if isinstance(names, StringTable):
        return _dictionary(names.ids, names.strings)
    # StringColumn: its blob and offsets are a large_string array's buffers.
    return pa.LargeStringArray.from_buffers(
        len(names), pa.py_buffer(np.ascontiguousarray(names.offsets, np.int64)), pa.py_buffer(names.blob)
    )


def _text_array(strings) -> pa.Array:
    """Strings as Arrow text, which must be UTF-8: a lone surrogate (JSON's "\\ud800", which the readers
    keep as json.loads does, so exports give it back) becomes U+FFFD here, as invalid bytes do elsewhere."""
    strings = list(strings)
    try:
        return pa.array(strings, pa.string())
    except UnicodeEncodeError:
        return pa.array([t.encode("utf-16", "surrogatepass").decode("utf-16", "replace") for t in strings],
                        pa.string())


def _dictionary(ids: np.ndarray, strings) -> pa.DictionaryArray:
    """Interned strings as indices + distinct strings (checked to be in range)."""
    if not isinstance(strings, pa.Array):
        strings = _text_array(strings)
    ids = np.asarray(ids)
    if ids.dtype.kind == "u":
        ids = ids.astype(np.int64)
    return pa.DictionaryArray.from_arrays(ids, strings, safe=True)


def _unsigned(values: np.ndarray) -> np.ndarray:
    """Addresses as uint64 (readers keep int64 or uint64; the bits are the address)."""
    values = np.asarray(values)
    return values.view(np.uint64) if values.dtype == np.int64 else values.astype(np.uint64)


def _activity(column: str) -> str:
    names = ", ".join(_literal(n) for n in ACTIVITY_NAMES)
    return f"coalesce([{names}][{column} + 1], CAST({column} AS VARCHAR))"


def _literal(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


@dataclass(frozen=True)
class _Ns:
    """A view column in ns from a source column in ps (plus an origin): SQL
    for the view, numpy for Parquet, the same numbers (DuckDB's // on
    integers truncates toward zero)."""

    column: str
    origin: int = 0

    def __str__(self) -> str:
        return f"{self.origin} + {self.column} // 1000" if self.origin else f"{self.column} // 1000"

    def numpy(self, ps: np.ndarray) -> np.ndarray:
        ns = ps // 1000
        if len(ps) and ps.min() < 0:
            ns += (ps < 0) & (ps % 1000 != 0)
        return ns + self.origin if self.origin else ns


@dataclass(frozen=True)
class _NullIf:
    """A view column that is a source column with -1 as NULL."""

    column: str
    missing: int = -1

    def __str__(self) -> str:
        return f"NULLIF({self.column}, {self.missing})"


@dataclass
class _Part:
    """One source of a table: its registered Arrow columns, the SQL giving
    each column from them, and the columns whose text is the same in every row."""

    relation: str
    source: pa.Table
    exprs: dict[str, str | _Ns | _NullIf]
    constants: dict[str, str]

    def sql(self, column: str) -> str:
        if column in self.constants:
            return _literal(self.constants[column])
        return str(self.exprs.get(column, "NULL"))


def _gathered(batches):
    """DuckDB's record batches (a few thousand rows each) gathered into row groups
    of about parquet.ROW_GROUP_ROWS, as tables."""
    pending, rows = [], 0
    for batch in batches:
        pending.append(batch)
        rows += batch.num_rows
        if rows >= parquet.ROW_GROUP_ROWS:
            yield pa.Table.from_batches(pending)
            pending, rows = [], 0
    if rows:
        yield pa.Table.from_batches(pending)


def _distinct_runs(values: pa.RunEndEncodedArray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A run-end encoded column's run ends, distinct values and each run's index among them."""
    distinct, per_run = np.unique(values.values.to_numpy(zero_copy_only=False), return_inverse=True)
    return values.run_ends.to_numpy().astype(np.int64), distinct, per_run.astype(np.uint32)


def _widens(source, target: np.dtype) -> bool:
    """Numbers of dtype source become target without loss (as DuckDB's CAST
    would give them): integers to wider integers, floats to wider floats."""
    source = np.dtype(source)
    return source.kind in "iuf" and (source.kind == "f") == (target.kind == "f") and np.can_cast(source, target, "safe")


def _hparam_text(value) -> str:
    """An hparam value as text: strings as they are, booleans as JSON, numbers as Python prints them."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return repr(value)
    return json.dumps(value)


def _first_rows(reader: pa.RecordBatchReader, max_rows: int) -> QueryResult:
    batches, rows, truncated = [], 0, False
    try:
        for batch in reader:
            if rows + batch.num_rows > max_rows:
                batches.append(batch.slice(0, max_rows - rows))
                truncated = True
                break
            batches.append(batch)
            rows += batch.num_rows
    finally:
        reader.close()  # the connection takes no other query while a result is open
    return QueryResult(pa.Table.from_batches(batches, reader.schema), truncated)


def _query_error(e: duckdb.Error, sql: str, memory_limit: str = "") -> QueryError:
    message = str(e)
    if isinstance(e, duckdb.OutOfMemoryException):  # DuckDB's advice (SET ...) does not apply: the settings are locked
        message = (
            f"{message.splitlines()[0]}\nThe query needs more than the {memory_limit} queries may use; "
            f"set {MEMORY_LIMIT_VARIABLE} (such as 8GB) to change the limit."
        )
    return QueryError(message, _position(message, sql))


def _position(message: str, sql: str) -> int | None:
    """The offset in sql of DuckDB's caret ("LINE n: <text>" then "   ^")."""
    m = re.search(r"\nLINE (\d+): (.*)\n( *)\^", message)
    if not m:
        return None
    lines = sql.split("\n")
    line = int(m[1]) - 1
    if not 0 <= line < len(lines):
        return None
    column = len(m[3]) - len(f"LINE {m[1]}: ")
    shown = m[2]
    if shown.startswith("..."):  # DuckDB cut the line's start: find where the shown text begins
        start = lines[line].find(shown[3:].rstrip("."))
        column += (start if start >= 0 else 0) - 3
    return sum(len(text) + 1 for text in lines[:line]) + max(column, 0)


# ---------------------------------------------------------------- export


HOST_TABLES = tuple(t for t in TABLES if t not in HPARAMS_TABLES)


def export_parquet(
    location, folder: Path, task: TaskState | None = None, workers: int | None = None
) -> list[tuple[Path, int]]:
    """Every table as Parquet under folder: <table>/host=<host>/part.parquet
    for each host (in parallel worker processes, one host each, at most one
    per core) and <table>/part.parquet for the HParams tables. Returns (path,
    bytes) of every file written."""
    from profscope.models.repository.locations import open_location

    task = task or TaskState()
    repo, hparams = open_location(location, task)
    folder = Path(folder)
    hosts = sorted({h for s in repo.enum_sessions() for h in s.hosts}) if repo is not None else []
    written = []
    if hparams is not None:
        written += ProfileDatabase(None, hparams).write_parquet(folder, HPARAMS_TABLES)
    workers = max(1, min(len(hosts), workers or os.cpu_count() or 1))
    if workers == 1:  # no process to start: this one has the repository already
        for k, host in enumerate(hosts):
            task.report(k / max(len(hosts), 1), f"Exporting {host}")
            written += _write_host(repo, host, folder)
        return written
    threads = max(1, (os.cpu_count() or 1) // workers)
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(_export_host, str(location), host, str(folder), threads) for host in hosts]
        try:
            for k, done in enumerate(as_completed(futures)):
                written += done.result()
                task.report((k + 1) / len(hosts), f"Exported {k + 1:,} of {len(hosts):,} hosts")
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return written


def _export_host(location: str, host: str, folder: str, threads: int) -> list[tuple[Path, int]]:
    """One worker process's job: a host's tables as Parquet."""
    from profscope.models.repository.locations import open_repository

    return _write_host(open_repository(location), host, Path(folder), threads)


def _write_host(repo, host: str, folder: Path, threads: int | None = None) -> list[tuple[Path, int]]:
    """A host's tables as Parquet under folder/<table>/host=<host>/."""
    db = ProfileDatabase(repo, None, hosts={host}, threads=threads)
    try:
        return db.write_parquet(folder, HOST_TABLES, host)
    finally:
        db.close()
