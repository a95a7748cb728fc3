"""Parquet files written by models/sql/parquet.py, read back by pyarrow and DuckDB:
every encoding at awkward lengths, NULL patterns and extreme values, the
statistics readers filter on, runs, and refused input."""

import json
import pickle

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import DATA

from profscope.models.core.safe_pickle import loads
from profscope.models.sql import parquet
from profscope.viewer.cli import main

INT64 = np.iinfo(np.int64)
INT32 = np.iinfo(np.int32)
LENGTHS = [1, 2, 7, 8, 9, 31, 32, 33, 127, 128, 129, 257, 1000, 40_003]


def write(path, schema, groups):
    """groups: one list of Arrow arrays (or Values/Runs) per row group."""
    with parquet.Writer(path, schema, threads=2) as writer:
        for arrays in groups:
            writer.write([a if isinstance(a, (parquet.Values, parquet.Runs)) else parquet.from_arrow(a, t)
                          for a, (_, t) in zip(arrays, schema)])


def random_columns(rng, n):
    """Arrow arrays of every type with extremes, NaNs and a random NULL pattern."""
    valid = rng.random(n) < rng.choice([0.0, 0.5, 0.97, 1.0])
    growing = np.cumsum(rng.integers(0, 5000, n)).astype(np.int64)
    wild = rng.integers(INT64.min, INT64.max, n, dtype=np.int64, endpoint=True)
    wild[: min(n, 4)] = [INT64.min, INT64.max, -1, 0][: min(n, 4)]
    small = rng.integers(INT32.min, INT32.max, n, dtype=np.int32, endpoint=True)
    small[: min(n, 2)] = [INT32.max, INT32.min][: min(n, 2)]
    unsigned = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    doubles = rng.standard_normal(n)
    doubles[rng.random(n) < 0.05] = np.nan
    doubles[: min(n, 3)] = [np.inf, -0.0, -np.inf][: min(n, 3)]
    strings = pa.array([f"name {k} ✓" for k in range(5000)])
    indices = rng.integers(0, 5000 if n > 1000 else 3, n).astype(np.int32)
    return {
        "growing": pa.array(growing),
        "wild": pa.array(wild, mask=~valid),
        "small": pa.array(small, mask=~valid),
        "unsigned": pa.array(unsigned, mask=~valid),
        "doubles": pa.array(doubles, mask=~valid),
        "text": pa.DictionaryArray.from_arrays(pa.array(indices, mask=~valid), strings),
        "plain_text": pa.array([f"t{k % 7}" for k in range(n)], pa.large_string()),
        "none": pa.nulls(n, pa.int64()),
        "flag": pa.array(rng.random(n) < rng.choice([0.0, 0.3, 1.0]), mask=~valid),
    }


SCHEMA = [("growing", "BIGINT"), ("wild", "BIGINT"), ("small", "INTEGER"), ("unsigned", "UBIGINT"),
          ("doubles", "DOUBLE"), ("text", "VARCHAR"), ("plain_text", "VARCHAR"), ("none", "BIGINT"),
          ("flag", "BOOLEAN")]


def expected(array: pa.Array) -> list:
    if pa.types.is_dictionary(array.type):
        array = array.cast(pa.string())
    return array.cast(pa.large_string()).to_pylist() if pa.types.is_string(array.type) else array.to_pylist()


def same(got: list, want: list) -> bool:
    return all((g == w) or (g != g and w != w) for g, w in zip(got, want, strict=True))  # NaN equals NaN here


@pytest.mark.parametrize("n", LENGTHS)
def test_every_type_reads_back_the_same_in_pyarrow_and_duckdb(tmp_path, n):
    rng = np.random.default_rng(n)
    columns = random_columns(rng, n)
    path = tmp_path / "t.parquet"
    # Row groups cut at odd places: slices start inside a validity bitmap's byte.
    cuts = sorted({0, n, *rng.integers(0, n, 3).tolist()})
    write(path, SCHEMA, [[columns[c].slice(a, b - a) for c, _ in SCHEMA] for a, b in zip(cuts, cuts[1:]) if b > a])
    table = pq.read_table(path)
    assert table.num_rows == n
    for name, _ in SCHEMA:
        got = table.column(name).to_pylist()
        if name == "plain_text":
            got = [None if g is None else str(g) for g in got]
        assert same(got, expected(columns[name])), name
    rows = duckdb.sql(f"SELECT {', '.join(c for c, _ in SCHEMA)} FROM '{path}'").fetchall()
    for k, (name, _) in enumerate(SCHEMA):
        assert same([r[k] for r in rows], expected(columns[name])), name


def test_statistics_are_each_row_groups_min_max_and_nulls(tmp_path):
    rng = np.random.default_rng(7)
    columns = random_columns(rng, 3000)
    path = tmp_path / "t.parquet"
    write(path, SCHEMA, [[columns[c].slice(a, 1000) for c, _ in SCHEMA] for a in (0, 1000, 2000)])
    meta = pq.ParquetFile(path).metadata
    assert meta.num_row_groups == 3 and meta.created_by == "profscope"
    for g in range(3):
        for k, (name, sql_type) in enumerate(SCHEMA):
            stats = meta.row_group(g).column(k).statistics
            part = columns[name].slice(g * 1000, 1000)
            assert stats.null_count == part.null_count, name
            if sql_type in ("BIGINT", "INTEGER", "UBIGINT") and part.null_count < len(part):
                values = [v for v in part.to_pylist() if v is not None]
                assert (stats.min, stats.max) == (min(values), max(values)), name
            if sql_type == "BOOLEAN" and part.null_count < len(part):
                values = [v for v in part.to_pylist() if v is not None]
                assert (stats.min, stats.max) == (min(values), max(values))
    # DuckDB reads the unsigned statistics in unsigned order, and prunes row groups with them.
    top = int(columns["growing"][2999].as_py())
    assert duckdb.sql(f"SELECT count(*) FROM '{path}' WHERE growing > {top - 1}").fetchall()[0][0] >= 1
    stats = duckdb.sql(f"SELECT stats_min_value, stats_max_value FROM parquet_metadata('{path}') "
                       "WHERE path_in_schema = 'unsigned' AND row_group_id = 0").fetchall()[0]
    values = [v for v in columns["unsigned"].slice(0, 1000).to_pylist() if v is not None]
    assert stats == (str(min(values)), str(max(values)))


def test_delta_encoding_wraps_around_at_the_type_width(tmp_path):
    """Deltas between extremes overflow; Parquet's arithmetic wraps, so values come back exactly."""
    wild64 = np.array([INT64.min, INT64.max, INT64.min, 0, INT64.max, -1] * 50, np.int64)
    wild32 = np.array([INT32.min, INT32.max, INT32.min, 0, INT32.max, -1] * 50, np.int32)
    path = tmp_path / "t.parquet"
    write(path, [("a", "BIGINT"), ("b", "INTEGER"), ("c", "BIGINT")],
          [[pa.array(wild64), pa.array(wild32), parquet.Values(wild32)]])  # c: int32 values widened to INT64
    table = pq.read_table(path)
    assert table.column("a").to_pylist() == wild64.tolist()
    assert table.column("b").to_pylist() == wild32.tolist()
    assert table.column("c").type == pa.int64() and table.column("c").to_pylist() == wild32.tolist()


def test_runs_write_per_lane_and_constant_columns(tmp_path):
    lanes = parquet.RunColumn(np.array([3, 3, 10, 1000], np.int64), np.array([0, 1, 1, 0], np.uint32),
                              pa.array(["GPU:0", "CPU"]))
    steps = parquet.RunColumn(np.array([400, 900, 1000], np.int64), np.array([0, 1, 0], np.uint32),
                              np.array([-1, 7], np.int64), valid=np.array([False, True, False]))
    session = parquet.RunColumn.constant(1000, pa.array(["run 1"]))
    nothing = parquet.RunColumn.constant(1000, pa.array([], pa.string()), valid=False)
    schema = [("process", "VARCHAR"), ("step", "BIGINT"), ("session", "VARCHAR"), ("category", "VARCHAR")]
    path = tmp_path / "t.parquet"
    with parquet.Writer(path, schema) as writer:
        for a, n in ((0, 5), (5, 395), (400, 600)):  # a row group ending inside runs
            writer.write([c.rows(a, n) for c in (lanes, steps, session, nothing)])
    table = pq.read_table(path)
    assert table.column("process").to_pylist() == ["GPU:0"] * 3 + ["CPU"] * 7 + ["GPU:0"] * 990
    assert table.column("step").to_pylist() == [None] * 400 + [7] * 500 + [None] * 100
    assert table.column("session").to_pylist() == ["run 1"] * 1000
    assert table.column("category").null_count == 1000
    meta = pq.ParquetFile(path).metadata
    stats = [meta.row_group(g).column(1).statistics for g in range(3)]
    assert [(s.null_count, s.has_min_max and s.min) for s in stats] == [(5, False), (395, False), (100, 7)]
    assert duckdb.sql(f"SELECT count(step), sum(step) FROM '{path}'").fetchall()[0] == (500, 3500)


def test_a_big_dictionary_keeps_only_each_row_groups_entries(tmp_path):
    strings = pa.array([f"op {k}" for k in range(100_000)])
    indices = np.arange(0, 100_000, 7, dtype=np.int32)
    path = tmp_path / "t.parquet"
    write(path, [("name", "VARCHAR")], [[pa.DictionaryArray.from_arrays(indices, strings)]])
    assert pq.read_table(path).column("name").to_pylist() == [f"op {k}" for k in indices]
    # The dictionary page holds the 14,286 names used, not all 100,000.
    assert path.stat().st_size < 14_286 * 16


def test_refused_input(tmp_path):
    schema = [("a", "BIGINT"), ("t", "VARCHAR")]
    with parquet.Writer(tmp_path / "t.parquet", schema) as writer:
        with pytest.raises(ValueError, match="every column"):
            writer.write([parquet.Values(np.zeros(3, np.int64))])
    with pytest.raises(TypeError, match="cannot be written"):
        parquet.from_arrow(pa.array(["x"]), "BIGINT")
    # Encoding errors come out of the writer by the time it closes.
    bad = pa.DictionaryArray.from_arrays(np.array([0, 5], np.int32), pa.array(["x"]), safe=False)
    with pytest.raises(ValueError, match="outside its dictionary"):
        with parquet.Writer(tmp_path / "t.parquet", schema) as writer:
            writer.write([parquet.Values(np.zeros(2, np.int64)), parquet.from_arrow(bad, "VARCHAR")])


def test_interned_strings_are_the_strings_with_each_distinct_one_once():
    rng = np.random.default_rng(3)
    words = ["", "a", "é✓", "x" * 70_000] + [f"model/block_{k}/layer" for k in range(3000)]  # table and arena grow
    values = [words[k] for k in rng.integers(0, len(words), 20_000)]
    for strings in (pa.array(values), pa.array(values, pa.large_string()).slice(5, 10_000)):
        encoded = parquet.interned(strings)
        assert encoded.cast(strings.type).equals(strings)
        seen = list(dict.fromkeys(strings.to_pylist()))  # distinct, in order of first appearance
        assert encoded.dictionary.to_pylist() == seen
    with_nulls = parquet.interned(pa.array(["a", None, "a"]))
    assert with_nulls.to_pylist() == ["a", None, "a"]


def test_text_that_is_not_utf8_is_refused_not_written(tmp_path):
    offsets = pa.py_buffer(np.array([0, 2], np.int32))
    bad = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(b"\xff\xfe")])
    with pytest.raises(ValueError, match="invalid text"):
        write(
            tmp_path / "t.parquet", [("t", "VARCHAR")], [[pa.DictionaryArray.from_arrays(np.zeros(1, np.int32), bad)]]
        )


def test_string_views_and_nulls_are_written_as_texts(tmp_path):
    views = pa.array(["a", "bb", None, "a"], pa.string_view())
    write(tmp_path / "t.parquet", [("v", "VARCHAR"), ("n", "VARCHAR")], [[views, pa.nulls(4)]])
    table = pq.read_table(tmp_path / "t.parquet")
    assert table.column("v").to_pylist() == ["a", "bb", None, "a"] and table.column("n").null_count == 4


def test_booleans_are_bit_packed_boolean_columns(tmp_path):
    """PLAIN booleans: one bit a value, LSB first (Encodings.md); nulls take no bit."""
    values = [True, None, False, True, True, None, False, False, True, True, False]
    path = tmp_path / "t.parquet"
    write(path, [("b", "BOOLEAN")], [[pa.array(values, pa.bool_())]])
    f = pq.ParquetFile(path)
    assert f.schema.column(0).physical_type == "BOOLEAN"
    assert f.schema_arrow.field("b").type == pa.bool_()
    assert pq.read_table(path).column("b").to_pylist() == values
    column = f.metadata.row_group(0).column(0)
    assert set(column.encodings) == {"RLE", "PLAIN"}
    # The page's values: 9 non-null booleans in 2 bytes, after the definition levels.
    kept = [v for v in values if v is not None]
    packed = np.packbits(np.array(kept), bitorder="little").tobytes()
    assert packed in path.read_bytes()
    assert duckdb.sql(f"SELECT typeof(b) FROM '{path}' LIMIT 1").fetchall() == [("BOOLEAN",)]


def test_segments_is_expandable_is_boolean_in_duckdb_and_parquet(tmp_path):
    """A snapshot whose segments say is_expandable (True, False) or not (the typed fixture, marked as torch's
    C++ writes the flag): BOOLEAN in the SQL table and in the Parquet file, NULL where unsaid."""
    snapshot = loads((DATA / "torch_snapshot" / "typed_snapshot.pickle").read_bytes())
    segments = sorted(snapshot["segments"], key=lambda s: s["address"])
    segments[0]["is_expandable"], segments[1]["is_expandable"] = True, False
    path = tmp_path / "marked.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    out = tmp_path / "sql.json"
    assert main(["query", str(path), "SELECT address, is_expandable, typeof(is_expandable) AS t FROM segments "
                 "ORDER BY address", "--format", "json", "-o", str(out)]) == 0
    rows = json.loads(out.read_text())
    assert [(r["is_expandable"], r["t"]) for r in rows] == [(True, "BOOLEAN"), (False, "BOOLEAN"), (None, "BOOLEAN")]
    assert main(["export", str(path), "--format", "parquet", "-o", str(tmp_path / "pq")]) == 0
    [file] = (tmp_path / "pq" / "segments").glob("*/part.parquet")
    f = pq.ParquetFile(file)
    k = f.schema_arrow.get_field_index("is_expandable")
    assert f.schema.column(k).physical_type == "BOOLEAN" and f.schema_arrow.field(k).type == pa.bool_()
    table = f.read().sort_by("address")
    assert table.column("is_expandable").to_pylist() == [True, False, None]
