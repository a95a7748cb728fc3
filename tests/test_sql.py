"""SQL over profiles (models/sql/database.py): every table against the views' own
numbers, the sandbox, cancellation, the command line and Parquet."""

import json
import re
import shutil
import threading

import duckdb
import numpy as np
import pytest
from conftest import DATA, ROOT

from profscope.models.analysis import trace_stats
from profscope.models.core.task import Cancelled, TaskState
from profscope.models.data.memory_profile import ALLOCATION
from profscope.models.sql.database import HOST_TABLES, HPARAMS_TABLES, SCHEMA, TABLES, ProfileDatabase, QueryError
from profscope.viewer.cli import main

GPU = DATA / "chrome_trace" / "gpu"
GPU_MEMORY = DATA / "chrome_trace" / "gpu_memory"
HPARAMS = DATA / "hparams" / "api_config"


def rows(db, sql):
    return db.query(sql).table.to_pylist()


@pytest.fixture(scope="module")
def gpu():
    db = ProfileDatabase.open(GPU)
    yield db
    db.close()


def test_every_table_has_its_documented_columns(gpu):
    for table in TABLES:
        described = gpu.query(f"DESCRIBE {table}").table.to_pylist()
        assert [(r["column_name"], r["column_type"]) for r in described] == list(SCHEMA[table]), table
    assert all(gpu.loaded(t) for t in TABLES)


def test_slices_are_the_timeline_events(gpu):
    repo = gpu.repo
    for host in ("rank-0", "rank-1"):
        tl = repo.step_timeline("gpu", host)
        got = gpu.query(f"SELECT id, name, start_ns, dur_ns, parent, lane, thread, depth FROM slices "
                        f"WHERE host = '{host}' ORDER BY id").table
        assert got.column("id").to_numpy().tolist() == list(range(len(tl)))
        assert got.column("name").to_pylist() == [tl.names[i] for i in range(len(tl))]
        assert (got.column("start_ns").to_numpy() == tl.origin_ns + tl.start_ps // 1000).all()
        assert (got.column("dur_ns").to_numpy() == tl.duration_ps // 1000).all()
        parent = got.column("parent").to_numpy(zero_copy_only=False)
        assert np.array_equal(np.nan_to_num(parent.astype(float), nan=-1), tl.parent)
        lanes = got.column("lane").to_numpy()
        assert (lanes == np.repeat(np.arange(tl.num_lanes), np.diff(tl.lane_offsets))).all()
        # A thread's deeper levels (lanes named "") carry the thread's name and their depth.
        first = got.slice(0, 1).to_pylist()[0]
        assert first["thread"] == tl.lane_names[0] and first["depth"] == 0
        deeper = got.filter(got.column("depth").to_numpy() > 0).to_pylist()
        assert deeper and all(r["thread"] for r in deeper)
        flows = rows(gpu, f"SELECT from_id, to_id, category FROM flows WHERE host = '{host}'")
        assert len(flows) == len(tl.flows)
        assert [r["from_id"] for r in flows] == tl.flows.src.tolist()


def test_kernels_and_ops_match_trace_stats(gpu):
    for host in ("rank-0", "rank-1"):
        tl = gpu.repo.step_timeline("gpu", host)
        expected = trace_stats.kernel_stats(tl)
        got = {(r["name"]): r for r in rows(gpu, f"SELECT name, any_value(type) AS type, count(*) AS n, "
                                                 f"sum(dur_ns)::BIGINT AS total, min(dur_ns) AS lo, max(dur_ns) AS hi "
                                                 f"FROM kernels WHERE host = '{host}' GROUP BY name")}
        assert len(got) == len(expected)
        for i, name in enumerate(expected.name):
            r = got[name]
            assert (r["type"], r["n"]) == (expected.type[i], expected.count[i])
            assert (r["total"] * 1000, r["lo"] * 1000, r["hi"] * 1000) == (
                expected.total_ps[i], expected.min_ps[i], expected.max_ps[i])
        # One step: GPU work counted at its launch, as the Statistics view's step range does.
        in_step = trace_stats.kernel_stats(tl, trace_stats.step_window(tl, 3, 3))
        got = rows(
            gpu, f"SELECT count(*) AS n, sum(dur_ns)::BIGINT AS total FROM kernels WHERE host = '{host}' AND step = 3"
        )
        assert (got[0]["n"], got[0]["total"] * 1000) == (in_step.count.sum(), in_step.total_ps.sum())
        ops = trace_stats.op_stats(tl)
        got = {
            r["name"]: r
            for r in rows(
                gpu,
                f"SELECT name, count(*) AS calls, sum(dur_ns)::BIGINT AS total, "
                f"sum(self_ns)::BIGINT AS self, sum(device_total_ns)::BIGINT AS device "
                f"FROM ops WHERE host = '{host}' GROUP BY name",
            )
        }
        assert len(got) == len(ops)
        for i, name in enumerate(ops.name):
            r = got[name]
            assert r["calls"] == ops.calls[i]
            # ns per event, summed: within a ns per call of the view's ps totals
            assert abs(r["total"] * 1000 - ops.host_total_ps[i]) < 1000 * ops.calls[i]
            assert abs(r["self"] * 1000 - ops.host_self_ps[i]) < 1000 * ops.calls[i]
            assert abs(r["device"] * 1000 - ops.device_total_ps[i]) < 1000 * ops.calls[i]


@pytest.mark.parametrize(
    "path",
    [
        DATA / "xprof" / "small.xplane.pb",
        DATA / "xprof" / "small.memory_profile.json",
        DATA / "log_memory" / "eager-cpu.log",
        DATA / "memory_timeline" / "hta_memory_timeline.raw.gz",
        GPU_MEMORY,
    ],
)
def test_memory_tables_match_the_memory_view(path):
    db = ProfileDatabase.open(path)
    (session,) = db.repo.enum_sessions()
    (host,) = session.hosts
    profile = db.repo.memory_profile(session.name, host)
    for memory_id, a in profile.allocators.items():
        where = f"WHERE allocator = '{memory_id}'"
        # The summary's peak: the last snapshot with the highest stack + heap.
        (peak,) = rows(
            db,
            f"SELECT snapshot, heap_bytes, stack_bytes, time_ns FROM memory_snapshots {where} "
            "ORDER BY stack_bytes + heap_bytes DESC, snapshot DESC LIMIT 1",
        )
        assert peak["snapshot"] == a.peak_index
        assert (peak["heap_bytes"], peak["stack_bytes"]) == (a.summary.peak_heap, a.summary.peak_stack)
        assert peak["time_ns"] == a.summary.peak_time_ps // 1000
        (n,) = rows(
            db, f"SELECT count(*) AS n, count(*) FILTER (kind = 'ALLOCATION') AS allocs FROM memory_snapshots {where}"
        )
        assert (n["n"], n["allocs"]) == (len(a.timeline), int((a.timeline.activity == ALLOCATION).sum()))
        allocations = rows(
            db, f"SELECT snapshot, freed_snapshot, allocation_bytes FROM allocations {where} ORDER BY snapshot"
        )
        assert [r["snapshot"] for r in allocations] == a.lifetime_pairs[0].tolist()
        n_snapshots = len(a.timeline)  # freed_at() says len(timeline) for never freed
        assert [r["freed_snapshot"] if r["freed_snapshot"] is not None else n_snapshots for r in allocations] == [
            a.freed_at(r["snapshot"]) for r in allocations
        ]
        # What is still allocated after the last snapshot is what the memory view's table lists then.
        last = len(a.timeline) - 1
        (open_bytes,) = rows(
            db,
            f"SELECT coalesce(sum(allocation_bytes), 0)::BIGINT AS b FROM allocations {where} "
            f"AND (freed_snapshot IS NULL OR freed_snapshot > {last})",
        )
        table = a.allocations_at(last)
        assert open_bytes["b"] == int((table.allocation * table.occurrences)[table.snapshot >= 0].sum())
    db.close()


def test_sampled_memory_profiles_have_snapshots_but_no_allocations():
    db = ProfileDatabase.open(DATA / "xprof" / "keras.memory_profile.json.gz")
    assert rows(db, "SELECT count(*) AS n FROM memory_snapshots")[0]["n"] == 1000
    assert rows(db, "SELECT count(*) AS n FROM allocations")[0]["n"] == 0
    assert any("sampled" in w for w in db.warnings)


def test_step_tags_counters_and_stepstats_names():
    db = ProfileDatabase.open(DATA / "step_stats")
    repo = db.repo
    got = rows(db, "SELECT tag, count(*) AS n, max(id) AS last FROM slices WHERE host = 'vm' GROUP BY tag ORDER BY tag")
    assert [r["tag"] for r in got] == ["step_1", "step_2"]
    assert all(r["n"] == len(repo.step_timeline("step_stats", "vm", r["tag"])) == r["last"] + 1 for r in got)
    tl = repo.step_timeline("step_stats", "run_metadata")
    names = db.query("SELECT name, kind FROM slices WHERE host = 'run_metadata' ORDER BY id").table
    assert names.column("name").to_pylist() == [tl.names[i] for i in range(len(tl))]
    assert names.column("kind").to_pylist() == [tl.kinds[k] for k in tl.kind]
    chrome = repo.step_timeline("step_stats", "timeline")
    assert rows(db, "SELECT count(*) AS n FROM counters")[0]["n"] == sum(len(c.time_ps) for c in chrome.counters) > 0
    db.close()


def test_xspace_steps_follow_the_step_markers():
    db = ProfileDatabase.open(DATA / "xprof" / "small.xplane.pb")
    tl = db.repo.step_timeline("xprof", "small")
    got = db.query("SELECT step FROM slices ORDER BY id").table.column("step").to_numpy(zero_copy_only=False)
    k = np.searchsorted(tl.markers_ps, tl.start_ps, side="right") - 1
    inside = (k >= 0) & (k < len(tl.markers_ps) - 1)
    assert np.array_equal(np.where(inside, k, -1), np.nan_to_num(got.astype(float), nan=-1))
    db.close()


def test_hparams_tables():
    db = ProfileDatabase.open(HPARAMS)
    data = db.hparams
    sessions = data.sessions(data.experiment().metric_infos)
    got = rows(db, "SELECT * FROM sessions ORDER BY session")
    assert [r["session"] for r in got] == sorted(s.name for s in sessions)
    assert {r["status"] for r in got} <= {"SUCCESS", "FAILURE", "RUNNING", "UNKNOWN"}
    lr = {r["session"]: r["number"] for r in rows(db, "SELECT session, number FROM hparams WHERE name = 'lr'")}
    assert lr == {s.name: s.hparams["lr"] for s in sessions if "lr" in s.hparams}
    optimizer = rows(db, "SELECT DISTINCT value FROM hparams WHERE name = 'optimizer' ORDER BY 1")
    assert [r["value"] for r in optimizer] == sorted({s.hparams["optimizer"] for s in sessions})
    # The last value of each metric is what the HParams view shows.
    last = {
        (r["session"], r["run"], r["tag"]): r["value"]
        for r in rows(db, "SELECT session, run, tag, arg_max(value, seq) AS value FROM metrics GROUP BY ALL")
    }
    for s in sessions:
        for m in s.metrics:
            assert last[(s.name, m.group, m.tag)] == pytest.approx(m.value, nan_ok=True)
    db.close()


def test_profile_only_and_hparams_only_locations_have_every_table_empty():
    db = ProfileDatabase.open(HPARAMS)
    assert rows(db, "SELECT count(*) AS n FROM slices")[0]["n"] == 0
    db.close()
    db = ProfileDatabase.open(GPU_MEMORY)
    assert rows(db, "SELECT count(*) AS n FROM metrics")[0]["n"] == 0
    db.close()


# ---------------------------------------------------------------- errors and the sandbox


@pytest.mark.parametrize(
    "sql,expected",
    [
        ("SELECT * FROM read_csv('/etc/passwd')", "disabled"),
        ("SELECT * FROM '/etc/passwd'", "disabled|does not exist"),
        ("COPY (SELECT 1) TO '{tmp}/escape.csv'", "disabled"),
        ("INSTALL httpfs", "disabled"),
        ("LOAD httpfs", "disabled"),
        ("ATTACH '{tmp}/escape.db'", "disabled"),
        ("SELECT * FROM read_parquet('https://example.com/x.parquet')", "disabled"),
        ("SET enable_external_access = true", "locked"),
        ("SET memory_limit = '100TB'", "locked"),
    ],
)
def test_the_sandbox_refuses(gpu, sql, expected, tmp_path):
    with pytest.raises(QueryError, match=expected):
        gpu.query(sql.format(tmp=tmp_path))
    assert not list(tmp_path.iterdir())


def test_python_variables_are_not_tables(gpu):
    secret_table = np.arange(3)  # noqa: F841 (DuckDB's replacement scans would find it by name)
    with pytest.raises(QueryError, match="secret_table"):
        gpu.query("SELECT * FROM secret_table")


def test_errors_say_where():
    db = ProfileDatabase()
    with pytest.raises(QueryError) as e:
        db.query("SELECT 1 +\n  FROM nowhere WHERE")
    assert e.value.position is not None and "Parser Error" in str(e.value)
    with pytest.raises(QueryError) as e:
        db.query("SELECT 'x'::INTEGER")
    assert e.value.position == len("SELECT 'x'")  # DuckDB points at the cast
    with pytest.raises(QueryError, match="nosuch"):
        db.query("SELECT nosuch FROM slices")
    db.close()


def test_binding_errors_point_at_the_name():
    db = ProfileDatabase()  # DuckDB's relations drop where a binding error is: a PREPARE finds it
    sql = "SELECT 1;\nSELECT name,\n       nosuch FROM slices"
    with pytest.raises(QueryError, match="nosuch") as e:
        db.query(sql)
    assert sql[e.value.position :].startswith("nosuch")
    sql = "SELECT * FROM slices JOIN nowhere USING (id)"
    with pytest.raises(QueryError, match="nowhere") as e:
        db.query(sql)
    assert sql[e.value.position :].startswith("nowhere")
    db.close()


def test_a_memory_hungry_query_stops_at_the_limit():
    db = ProfileDatabase(memory_limit="64MB")
    with pytest.raises(QueryError, match="(?is)out of memory.*64MB.*PROFSCOPE_SQL_MEMORY"):
        db.query("SELECT range % 50000000 AS k, count(*) FROM range(100000000) GROUP BY 1")
    assert rows(db, "SELECT 42 AS x") == [{"x": 42}]  # the connection still works
    db.close()


def test_an_unbounded_cross_join_is_cancelled(gpu):
    started = threading.Event()
    # A Python function in the query tells the test the query runs (no sleeping, no polling).
    gpu._con.create_function("running", lambda x: (started.set(), x)[1], ["BIGINT"], "BIGINT", side_effects=True)
    task = TaskState()

    def cancel_once_running():
        started.wait()
        task.cancel()

    canceller = threading.Thread(target=cancel_once_running)
    canceller.start()
    try:
        with pytest.raises(Cancelled):
            gpu.query(
                "SELECT count(*) FROM slices a, slices b, slices c, range(1000000000) d WHERE running(a.id) >= 0", task
            )
    finally:
        started.set()
        canceller.join()
    gpu._con.remove_function("running")
    assert rows(gpu, "SELECT count(*) > 0 AS ok FROM slices") == [{"ok": True}]


def test_a_cancelled_task_stops_before_loading():
    task = TaskState()
    task.cancel()
    db = ProfileDatabase.open(GPU_MEMORY)
    with pytest.raises(Cancelled):
        db.query("SELECT count(*) FROM slices", task)
    db.close()


def test_max_rows_and_statements(gpu):
    result = gpu.query("SELECT * FROM range(100000)", max_rows=10)
    assert result.table.num_rows == 10 and result.truncated
    result = gpu.query(
        "CREATE TEMP TABLE big AS SELECT name FROM slices WHERE dur_ns > 1000000; SELECT count(*) AS n FROM big"
    )
    assert result.table.to_pylist()[0]["n"] > 0 and not result.truncated


# ---------------------------------------------------------------- the command line and Parquet


def test_query_command_formats(tmp_path, capsys):
    sql = "SELECT host, count(*) AS n FROM kernels GROUP BY host ORDER BY host"
    assert main(["query", str(GPU), sql]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["host", "n"] and lines[2].split() == ["rank-0", "114"] and lines[-1] == "(2 rows)"
    assert main(["query", str(GPU), sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out.splitlines() == ['"host","n"', '"rank-0",114', '"rank-1",186']
    assert main(["query", str(GPU), "SELECT sum(dur_ns) AS total, 'a' AS s FROM kernels", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["s"] == "a" and isinstance(row["total"], int)
    out = tmp_path / "result.parquet"
    assert main(["query", str(GPU), sql, "--format", "parquet", "-o", str(out)]) == 0
    assert duckdb.sql(f"SELECT n FROM '{out}' ORDER BY n").fetchall() == [(114,), (186,)]
    assert [p.name for p in tmp_path.iterdir()] == ["result.parquet"]  # no .part left


def test_query_errors_are_one_line_messages(capsys):
    assert main(["query", str(GPU), "SELECT * FROM read_csv('/etc/passwd')"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("profscope: error: Permission Error") and "Traceback" not in err
    assert main(["query", str(GPU), "SELEC 1"]) == 1
    assert "syntax error" in capsys.readouterr().err


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """gpu/ (two hosts, converted in two worker processes) and an HParams log dir as Parquet."""
    folder = tmp_path_factory.mktemp("parquet")
    assert main(["export", str(GPU), "--format", "parquet", "-o", str(folder)]) == 0
    assert main(["export", str(HPARAMS), "--format", "parquet", "-o", str(folder)]) == 0
    return folder


def test_parquet_round_trip(gpu, exported):
    files = sorted(p.relative_to(exported).as_posix() for p in exported.rglob("*") if p.is_file())
    assert files == sorted(
        [f"{t}/host={h}/part.parquet" for t in HOST_TABLES for h in ("rank-0", "rank-1")]
        + [f"{t}/part.parquet" for t in HPARAMS_TABLES]
    )
    con = duckdb.connect()
    for table in HOST_TABLES:
        got = con.sql(
            f"SELECT * FROM read_parquet('{exported}/{table}/*/*.parquet', hive_partitioning = true) ORDER BY ALL"
        ).to_arrow_table()
        # the host comes back from the folder name (hive partitioning), after the file's columns
        assert sorted(got.column_names) == sorted(c for c, _ in SCHEMA[table]), table
        expected = gpu.query(f"SELECT {', '.join(got.column_names)} FROM {table} ORDER BY ALL").table
        assert got.to_pylist() == expected.to_pylist(), table
    db = ProfileDatabase.open(HPARAMS)
    for table in HPARAMS_TABLES:
        got = con.sql(f"SELECT * FROM '{exported}/{table}/part.parquet' ORDER BY ALL").fetchall()
        expected = [tuple(r.values()) for r in rows(db, f"SELECT * FROM {table} ORDER BY ALL")]
        assert got and str(got) == str(expected), table  # str: NaN metrics compare equal
    db.close()


@pytest.mark.parametrize(
    "path",
    [
        DATA / "xprof" / "keras.xplane.pb",  # per-lane steps from the step markers, XSpace memory
        DATA / "step_stats" / "step_stats.pbtxt",  # StepStats names
        DATA / "log_memory" / "graph-bfc-onednn.log.gz",  # LogMemory replay: allocations freed and open
        GPU_MEMORY,  # Kineto: categories, flows, kernels and ops views, memory events
        DATA / "torch_snapshot" / "typed_snapshot.pickle",  # segments, frames, top frames (NULL for some)
    ],
    ids=lambda p: p.name,
)
def test_every_table_written_as_parquet_reads_back_as_its_view(path, tmp_path):
    db = ProfileDatabase.open(path)
    db.write_parquet(tmp_path, TABLES)
    con = duckdb.connect()
    read = 0
    for table in TABLES:
        columns = ", ".join(c for c, _ in SCHEMA[table])
        got = con.sql(f"SELECT {columns} FROM '{tmp_path}/{table}/part.parquet' ORDER BY ALL").to_arrow_table()
        expected = db.query(f"SELECT {columns} FROM {table} ORDER BY ALL").table
        assert got.schema.types == expected.schema.types, table
        assert str(got.to_pylist()) == str(expected.to_pylist()), table  # str: NaN equals NaN
        read += got.num_rows
    assert read > 0
    db.close()


def test_nanoseconds_in_parquet_are_the_views_for_negative_times():
    """The view's ps -> ns is DuckDB's integer division (toward zero); Parquet's numpy one must agree."""
    from profscope.models.sql.database import _Ns

    ps = np.array([-2001, -2000, -1999, -1, 0, 1, 999, 1000, 1001, -(2**62), 2**62], np.int64)
    con = duckdb.connect()
    con.register("t", {"ps": ps})
    for unit in (_Ns("ps"), _Ns("ps", 1_700_000_000_000_000_000)):
        assert unit.numpy(ps).tolist() == [r[0] for r in con.sql(f"SELECT {unit} FROM t").fetchall()]


def test_stepstats_names_that_are_not_utf8_are_replaced_for_sql_and_parquet(tmp_path):
    """A node name with invalid UTF-8 (a damaged file): U+FFFD, as the other readers give, not a crash in
    DuckDB or a Parquet file its readers refuse."""
    from profscope.protos import config_pb2

    data = (DATA / "step_stats" / "run_metadata.pb").read_bytes()
    name = config_pb2.RunMetadata.FromString(data).step_stats.dev_stats[0].node_stats[0].node_name.encode()
    path = tmp_path / "run_metadata.pb"
    path.write_bytes(data.replace(name, b"\xff\xfe" + name[2:], 1))
    db = ProfileDatabase.open(path)
    names = {r["name"] for r in rows(db, "SELECT name FROM slices")}
    assert "\ufffd\ufffd" + name[2:].decode() in names
    db.write_parquet(tmp_path / "out", ["slices"])
    got = duckdb.connect().sql(f"SELECT name FROM '{tmp_path}/out/slices/part.parquet'").fetchall()
    assert {r[0] for r in got} == names
    db.close()


def test_export_refuses_a_file_and_a_tool(tmp_path, capsys):
    assert main(["export", str(GPU), "--format", "parquet"]) == 1
    assert "-o DIR" in capsys.readouterr().err
    assert main(["export", str(GPU)]) == 1
    assert "--tool" in capsys.readouterr().err


# ---------------------------------------------------------------- docs/SQL.md's queries


def _doc_queries(section: str) -> list[str]:
    text = (ROOT / "docs" / "SQL.md").read_text()
    start = text.index(section)
    end = text.find("\n## ", start + 1)
    return re.findall(r"```sql\n(.*?)```", text[start : end if end >= 0 else None], re.S)


@pytest.fixture(scope="module")
def pod(tmp_path_factory):
    """A log dir with an HParams sweep, a two-rank GPU session and a trace with memory events."""
    folder = tmp_path_factory.mktemp("pod")
    shutil.copytree(HPARAMS, folder, dirs_exist_ok=True)
    shutil.copytree(GPU, folder / "gpu")
    shutil.copytree(GPU_MEMORY, folder / "gpu_memory")
    return folder


def test_the_documented_example_queries_answer(pod):
    queries = _doc_queries("## Example queries")
    assert len(queries) >= 6
    db = ProfileDatabase.open(pod)
    for sql in queries:
        assert db.query(sql).table.num_rows > 0, sql
    db.close()


def test_the_documented_parquet_queries_answer(pod, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the docs write to and read from ./profscope-parquet
    assert main(["export", str(pod), "--format", "parquet", "-o", "profscope-parquet"]) == 0
    queries = _doc_queries("## Parquet")
    assert len(queries) >= 3
    con = duckdb.connect()
    for sql in queries:
        assert con.sql(sql).fetchall(), sql
    slowest = con.sql(queries[-1]).fetchall()
    assert [row[0] for row in slowest] == [2, 3, 4]  # the recorded ProfilerSteps, each with its slowest rank


def test_why_an_example_found_nothing():
    from profscope.models.sql.examples import EXAMPLES, HPARAMS_EXAMPLE, STEP_EXAMPLE, Facts, adapted, why_empty

    facts = Facts(list(range(1009, 1015)), [("train", "epoch_accuracy"), ("validation", "epoch_accuracy")], ["lr"])
    assert why_empty(dict(EXAMPLES)[STEP_EXAMPLE], facts) == "no step 3: steps are 1009-1014"
    assert why_empty(dict(EXAMPLES)[HPARAMS_EXAMPLE], facts) == (
        "no metric accuracy: metrics are train/epoch_accuracy, validation/epoch_accuracy")
    assert adapted(facts)[0][0] == "Top kernels in step 1009" and why_empty(adapted(facts)[0][1], facts) == ""
    assert why_empty("SELECT 1 WHERE step = 3", Facts()) == ""  # steps not known: nothing said
