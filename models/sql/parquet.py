"""Parquet files from numpy and Arrow columns, for `export --format parquet`.

The layout follows parquet-format (parquet.thrift, Encodings.md): "PAR1",
row groups of column chunks, then the FileMetaData in Thrift's compact
protocol, its length and "PAR1". Every column is OPTIONAL and has one data
page (v1) per row group:
- integers (BIGINT, INTEGER, UBIGINT) DELTA_BINARY_PACKED, with min/max
  statistics (times and steps mostly grow, so deltas are a few bits);
- doubles PLAIN;
- booleans PLAIN: bit-packed, a bit a value, LSB first, with min/max;
- texts RLE_DICTIONARY over a PLAIN dictionary page: Profscope's texts are
  interned already, so their indices are written as they are;
- runs (per-lane values, constants; `Runs`) RLE_DICTIONARY too, a run per
  run, whatever their type.
No compression: deltas and bit-packed indices leave little to compress, and
every reader knows uncompressed pages. models/sql/_parquet.c encodes the values
without the GIL, so a row group's columns encode on several threads while the
caller computes the next one.
"""

from __future__ import annotations

import os
import struct
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profscope.models.sql import _parquet

# Thrift compact protocol field types.
_BOOL, _I8, _I16, _I32, _I64, _BINARY, _LIST, _STRUCT = 1, 3, 4, 5, 6, 8, 9, 12
# parquet.thrift enums.
_BOOLEAN, _INT32, _INT64, _DOUBLE, _BYTE_ARRAY = 0, 1, 2, 5, 6
_PLAIN, _RLE, _DELTA_BINARY_PACKED, _RLE_DICTIONARY = 0, 3, 5, 8
_DATA_PAGE, _DICTIONARY_PAGE = 0, 2
_OPTIONAL = 1
_UTF8, _UINT_64 = 0, 14

# Column types by DuckDB name: physical type and SchemaElement annotations (converted type, logical type).
_TYPES: dict[str, tuple[int, int | None, list | None]] = {
    "BIGINT": (_INT64, None, None),
    "INTEGER": (_INT32, None, None),
    "UBIGINT": (_INT64, _UINT_64, [(10, _STRUCT, [(1, _I8, 64), (2, _BOOL, False)])]),  # IntType(64, unsigned)
    "DOUBLE": (_DOUBLE, None, None),
    "BOOLEAN": (_BOOLEAN, None, None),
    "VARCHAR": (_BYTE_ARRAY, _UTF8, [(1, _STRUCT, [])]),  # StringType
}
# The numpy type of each SQL type's values (the SQL database checks columns against it too).
NUMPY_TYPES = {"BIGINT": np.int64, "INTEGER": np.int32, "UBIGINT": np.uint64, "DOUBLE": np.float64, "BOOLEAN": np.bool_}
ROW_GROUP_ROWS = 1 << 20
CREATED_BY = "profscope"


# ---------------------------------------------------------------- Thrift


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def _zigzag(v: int) -> int:
    return (v << 1) ^ (v >> 63)


def _struct(fields) -> bytes:
    """A Thrift struct in the compact protocol: fields are (id, type, value)
    in increasing id, None values left out; a struct's value is its fields,
    a list's is (element type, items)."""
    out, last = bytearray(), 0
    for fid, kind, value in fields:
        if value is None:
            continue
        wire = (1 if value else 2) if kind == _BOOL else kind  # booleans live in the field header
        delta = fid - last
        out += bytes([delta << 4 | wire]) if 0 < delta <= 15 else bytes([wire]) + _varint(_zigzag(fid))
        last = fid
        if kind != _BOOL:
            out += _value(kind, value)
    out.append(0)
    return bytes(out)


def _value(kind: int, value) -> bytes:
    if kind in (_I16, _I32, _I64):
        return _varint(_zigzag(value))
    if kind == _I8:
        return bytes([value & 0xFF])
    if kind == _BINARY:
        data = value.encode() if isinstance(value, str) else value
        return _varint(len(data)) + data
    if kind == _STRUCT:
        return value if isinstance(value, bytes) else _struct(value)  # bytes: encoded already
    if kind == _LIST:
        element, items = value
        head = bytes([len(items) << 4 | element]) if len(items) < 15 else bytes([0xF0 | element]) + _varint(len(items))
        return head + b"".join(_value(element, v) for v in items)
    raise ValueError(f"no Thrift type {kind}")


# ---------------------------------------------------------------- columns


@dataclass
class Values:
    """One row group's rows of a column: numbers, or for texts indices into
    `dictionary` (a string array); nulls as an Arrow validity bitmap and its
    bit offset, or None for none."""

    values: np.ndarray
    bitmap: pa.Buffer | None = None
    offset: int = 0
    dictionary: pa.Array | None = None
    null_count: int = 0

    def __len__(self) -> int:
        return len(self.values)


@dataclass
class Runs:
    """One row group's rows of a column as runs of one value each: the runs'
    lengths, their indices into `dictionary` (a string array for texts, a
    numpy array of numbers otherwise), and which runs are not NULL (None:
    all). Per-lane columns and constants are a few runs however many rows."""

    lengths: np.ndarray
    indices: np.ndarray
    dictionary: pa.Array | np.ndarray
    valid: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.lengths.sum())


@dataclass
class RunColumn:
    """A whole column as runs: each run's end (exclusive, growing), index into
    the dictionary, and validity (None: all valid). rows() cuts a row group."""

    ends: np.ndarray
    indices: np.ndarray
    dictionary: pa.Array | np.ndarray
    valid: np.ndarray | None = None

    @classmethod
    def constant(cls, rows: int, dictionary, valid: bool = True) -> RunColumn:
        return cls(np.array([rows], np.int64), np.zeros(1, np.uint32), dictionary, None if valid else np.zeros(1, bool))

    def rows(self, start: int, n: int) -> Runs:
        first, last = np.searchsorted(self.ends, [start, start + n - 1], side="right")
        ends = np.minimum(self.ends[first:last + 1], start + n)
        return Runs(np.diff(ends, prepend=start).astype(np.int64), self.indices[first:last + 1], self.dictionary,
                    None if self.valid is None else self.valid[first:last + 1])


def whole(array) -> pa.Array:
    """A chunked array as one array; one chunk is taken as it is (Arrow's
    combine_chunks copies even that)."""
    if isinstance(array, pa.ChunkedArray):
        return array.chunk(0) if array.num_chunks == 1 else array.combine_chunks()
    return array


def from_arrow(array: pa.Array, sql_type: str) -> Values:
    """An Arrow array (sharing its buffers where it can) as Values of sql_type."""
    array = whole(array)
    if sql_type == "VARCHAR":
        if not pa.types.is_dictionary(array.type):
            if not (pa.types.is_string(array.type) or pa.types.is_large_string(array.type)):
                array = array.cast(pa.large_string())  # NULLs, string views
            array = interned(array)
        indices = array.indices
        values = _buffer_values(indices, indices.type.to_pandas_dtype())
        bitmap, offset, nulls = _nulls(array)
        return Values(values.astype(np.int32, copy=False), bitmap, offset, array.dictionary, nulls)
    if isinstance(array, pa.RunEndEncodedArray):
        array = pc.run_end_decode(array)
    dtype = NUMPY_TYPES[sql_type]
    bitmap, offset, nulls = _nulls(array)
    if pa.types.is_null(array.type):
        return Values(np.zeros(len(array), dtype), bitmap, offset, null_count=nulls)
    if sql_type == "BOOLEAN":  # Arrow packs booleans in bits: one numpy bool a row, nulls as False
        if not pa.types.is_boolean(array.type):
            raise TypeError(f"a BOOLEAN column cannot be written from {array.type}")
        return Values(array.fill_null(False).to_numpy(zero_copy_only=False), bitmap, offset, null_count=nulls)
    if array.type.to_pandas_dtype() != dtype:
        raise TypeError(f"a {sql_type} column cannot be written from {array.type}")
    return Values(_buffer_values(array, dtype), bitmap, offset, null_count=nulls)


def interned(strings: pa.Array) -> pa.DictionaryArray:
    """A string or large_string array as a dictionary array, hashed in C (1.5x
    Arrow's dictionary_encode on a million names: their lookups overlap)."""
    if strings.null_count:
        return pc.dictionary_encode(strings)
    indices, first, distinct = _parquet.intern_strings(*_string_buffers(strings))
    return pa.DictionaryArray.from_arrays(indices, strings.take(pa.array(first[:distinct])))


def _string_buffers(strings: pa.Array) -> tuple[np.ndarray, object]:
    """A string or large_string array's offsets (len + 1 of them) and data."""
    offsets = np.frombuffer(strings.buffers()[1], np.int64 if pa.types.is_large_string(strings.type) else np.int32)
    return offsets[strings.offset:strings.offset + len(strings) + 1], strings.buffers()[2] or b""


def _index_width(entries: int) -> int:
    """Bits of a dictionary index (at least 1)."""
    return max(1, int(entries - 1).bit_length())


def _buffer_values(array: pa.Array, dtype) -> np.ndarray:
    data = array.buffers()[1]
    if data is None:
        return np.zeros(len(array), dtype)
    return np.frombuffer(data, dtype)[array.offset:array.offset + len(array)]


def _nulls(array: pa.Array) -> tuple[object, int, int]:
    """(bitmap, bit offset, null count) of an array."""
    if array.null_count == 0:
        return None, 0, 0
    bitmap = array.buffers()[0]
    if bitmap is None:  # nulls without a bitmap: all of them
        return bytes((len(array) + 7) // 8), 0, len(array)
    return bitmap, array.offset, array.null_count


# ---------------------------------------------------------------- writing


@dataclass
class _Chunk:
    """A column chunk, encoded: its pages and what the footer says of it."""

    dictionary_page: bytes  # header and values, or b""
    data_page: bytes  # header and body
    encodings: list[int]
    statistics: list
    num_values: int


def _page_header(kind: int, body: bytes, header) -> bytes:
    field = (5, _STRUCT, header) if kind == _DATA_PAGE else (7, _STRUCT, header)
    return _struct([(1, _I32, kind), (2, _I32, len(body)), (3, _I32, len(body)), field])


def _data_page(body: bytes, rows: int, encoding: int) -> bytes:
    return _page_header(_DATA_PAGE, body, [(1, _I32, rows), (2, _I32, encoding), (3, _I32, _RLE),
                                           (4, _I32, _RLE)]) + body


def _encode(sql_type: str, v) -> _Chunk:
    if callable(v):  # made on this thread (Arrow's hashing of texts releases the GIL)
        v = v()
    rows = len(v)
    if isinstance(v, Runs):
        return _encode_runs(sql_type, v)
    if sql_type == "VARCHAR":
        return _encode_texts(v)
    if sql_type == "BOOLEAN":
        body, non_null, trues = _parquet.encode_booleans(v.values, v.bitmap, v.offset)
        statistics: list = [(3, _I64, rows - non_null)]
        if non_null:  # min_value, max_value: one byte each
            statistics += [(5, _BINARY, bytes([trues > 0])), (6, _BINARY, bytes([trues == non_null]))]  # max, min
        return _Chunk(b"", _data_page(body, rows, _PLAIN), [_RLE, _PLAIN], statistics, rows)
    if sql_type == "DOUBLE":
        body, non_null, nans = _parquet.encode_doubles(v.values, v.bitmap, v.offset)
        return _Chunk(b"", _data_page(body, rows, _PLAIN), [_RLE, _PLAIN],
                      [(3, _I64, rows - non_null), (9, _I64, nans)], rows)
    values = v.values.view(np.int64) if v.values.dtype == np.uint64 else v.values
    body, non_null, least, most = _parquet.encode_ints(values, v.bitmap, v.offset, sql_type == "INTEGER",
                                                       sql_type == "UBIGINT")
    encoding = _DELTA_BINARY_PACKED if non_null else _PLAIN
    return _Chunk(b"", _data_page(body, rows, encoding), [_RLE, encoding],
                  _int_statistics(sql_type, rows - non_null, least, most), rows)


def _int_statistics(sql_type: str, nulls: int, least, most) -> list:
    """Statistics of an integer column chunk: NULLs, and min/max unless all are NULL."""
    if least is None:
        return [(3, _I64, nulls)]
    form = {"BIGINT": "<q", "INTEGER": "<i", "UBIGINT": "<Q"}[sql_type]
    low, high = struct.pack(form, least), struct.pack(form, most)
    signed = sql_type != "UBIGINT"  # the deprecated min/max compare signed only
    return [(1, _BINARY, high if signed else None), (2, _BINARY, low if signed else None), (3, _I64, nulls),
            (5, _BINARY, high), (6, _BINARY, low)]


def _dictionary_page(sql_type: str, dictionary) -> bytes:
    if sql_type == "VARCHAR":
        if not (pa.types.is_string(dictionary.type) or pa.types.is_large_string(dictionary.type)):
            dictionary = dictionary.cast(pa.large_string())  # offsets and data, as the page is made from
        try:
            dictionary.validate(full=True)  # readers refuse a file with text that is not UTF-8
        except pa.ArrowInvalid as e:
            raise ValueError(f"a text column holds invalid text: {e}") from None
        values = _parquet.plain_strings(*_string_buffers(dictionary))
    else:
        values = np.ascontiguousarray(dictionary, NUMPY_TYPES[sql_type]).tobytes()
    return _page_header(_DICTIONARY_PAGE, values, [(1, _I32, len(dictionary)), (2, _I32, _PLAIN)]) + values


def _null_chunk(body: bytes, rows: int) -> _Chunk:
    return _Chunk(b"", _data_page(body, rows, _PLAIN), [_RLE, _PLAIN], [(3, _I64, rows)], rows)


def _encode_texts(v: Values) -> _Chunk:
    rows, indices, dictionary = len(v.values), v.values, v.dictionary
    if v.null_count == rows:  # no values, no dictionary
        return _null_chunk(_parquet.encode_indices(indices, v.bitmap, v.offset, 1)[0], rows)
    assert dictionary is not None  # texts with values have one
    valid = None
    if v.null_count:  # indices under nulls may be anything: not checked, not kept
        bits = np.unpackbits(np.frombuffer(v.bitmap, np.uint8), bitorder="little")  # type: ignore[arg-type,call-overload]
        valid = bits[v.offset:v.offset + rows].astype(bool)
    used_indices = indices if valid is None else indices[valid]
    if used_indices.min() < 0 or used_indices.max() >= len(dictionary):
        raise ValueError("a text column's index is outside its dictionary")
    if len(dictionary) > 1024 and len(dictionary) * 8 > rows:  # a big dictionary: keep the entries used here
        used = np.zeros(len(dictionary), np.bool_)
        used[used_indices] = True
        renumber = np.cumsum(used, dtype=np.int64) - 1
        indices = renumber[np.where(valid, indices, 0) if valid is not None else indices].astype(np.int32)
        dictionary = dictionary.take(pa.array(np.flatnonzero(used)))
    width = _index_width(len(dictionary))
    body, _ = _parquet.encode_indices(indices, v.bitmap, v.offset, width)
    return _Chunk(_dictionary_page("VARCHAR", dictionary), _data_page(body, rows, _RLE_DICTIONARY),
                  [_PLAIN, _RLE, _RLE_DICTIONARY], [(3, _I64, v.null_count)], rows)


def _encode_runs(sql_type: str, r: Runs) -> _Chunk:
    rows = len(r)
    used = r.indices if r.valid is None else r.indices[r.valid]
    if not len(used):
        return _null_chunk(_parquet.encode_runs(r.lengths, r.indices, r.valid, 1)[0], rows)
    if used.max() >= len(r.dictionary):
        raise ValueError("a run's index is outside its dictionary")
    width = _index_width(len(r.dictionary))
    body, non_null = _parquet.encode_runs(r.lengths, r.indices, r.valid, width)
    statistics = [(3, _I64, rows - non_null)]
    if sql_type in ("BIGINT", "INTEGER", "UBIGINT"):
        values = np.asarray(r.dictionary)[used]
        statistics = _int_statistics(sql_type, rows - non_null, int(values.min()), int(values.max()))
    return _Chunk(_dictionary_page(sql_type, r.dictionary), _data_page(body, rows, _RLE_DICTIONARY),
                  [_PLAIN, _RLE, _RLE_DICTIONARY], statistics, rows)


class Writer:
    """Writes a Parquet file row group by row group: write(columns) encodes a
    row group on the thread pool and returns; its bytes are written when the
    next one arrives, or at close(), so the caller computes the next row group
    meanwhile."""

    def __init__(self, path: Path, schema: list[tuple[str, str]], threads: int | None = None):
        self.schema = list(schema)
        self._file = open(path, "wb")
        self._file.write(b"PAR1")
        self._at = 4
        self._row_groups: list[bytes] = []
        self._rows = 0
        self._pool = ThreadPoolExecutor(max(1, threads or os.cpu_count() or 1), thread_name_prefix="parquet")
        self._pending: tuple[int, list[Future]] | None = None

    def __enter__(self) -> Writer:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.close()
        else:
            self.abandon()

    def write(self, columns: list, rows: int | None = None) -> None:
        """One row group: Values or Runs per schema column, all of one length,
        or functions making them on the pool's threads (then give rows)."""
        rows = rows if rows is not None else len(columns[0]) if columns else 0
        if len(columns) != len(self.schema) or any(not callable(c) and len(c) != rows for c in columns):
            raise ValueError("a row group needs every column, all of one length")
        if not rows:
            return
        jobs = [self._pool.submit(_encode, t, c) for (_, t), c in zip(self.schema, columns)]
        self._flush()
        self._pending = (rows, jobs)

    def _flush(self) -> None:
        if self._pending is None:
            return
        rows, jobs = self._pending
        self._pending = None
        start, chunks = self._at, []
        for (name, sql_type), job in zip(self.schema, jobs):
            chunk = job.result()
            dictionary_at = self._at if chunk.dictionary_page else None
            self._file.write(chunk.dictionary_page)
            data_at = self._at + len(chunk.dictionary_page)
            self._file.write(chunk.data_page)
            size = len(chunk.dictionary_page) + len(chunk.data_page)
            self._at += size
            pages = [(_DICTIONARY_PAGE, _PLAIN)] if chunk.dictionary_page else []
            pages.append((_DATA_PAGE, chunk.encodings[-1]))
            metadata = [(1, _I32, _TYPES[sql_type][0]), (2, _LIST, (_I32, chunk.encodings)),
                        (3, _LIST, (_BINARY, [name])), (4, _I32, 0), (5, _I64, chunk.num_values),
                        (6, _I64, size), (7, _I64, size), (9, _I64, data_at), (11, _I64, dictionary_at),
                        (12, _STRUCT, chunk.statistics),
                        (13, _LIST, (_STRUCT, [[(1, _I32, t), (2, _I32, e), (3, _I32, 1)] for t, e in pages]))]
            chunks.append([(2, _I64, 0), (3, _STRUCT, metadata)])
        size = self._at - start
        self._row_groups.append(_struct([(1, _LIST, (_STRUCT, chunks)), (2, _I64, size), (3, _I64, rows),
                                         (5, _I64, start), (6, _I64, size),
                                         (7, _I16, len(self._row_groups) & 0x7FFF)]))
        self._rows += rows

    def close(self) -> None:
        try:
            self._flush()
            schema = [[(4, _BINARY, "schema"), (5, _I32, len(self.schema))]]
            for name, sql_type in self.schema:
                physical, converted, logical = _TYPES[sql_type]
                schema.append([(1, _I32, physical), (3, _I32, _OPTIONAL), (4, _BINARY, name),
                               (6, _I32, converted), (10, _STRUCT, logical)])
            orders: list = [[(1, _STRUCT, [])] for _ in self.schema]  # TypeDefinedOrder: min/max as the type compares
            footer = _struct([(1, _I32, 1), (2, _LIST, (_STRUCT, schema)), (3, _I64, self._rows),
                              (4, _LIST, (_STRUCT, self._row_groups)), (6, _BINARY, CREATED_BY),
                              (7, _LIST, (_STRUCT, orders))])
            self._file.write(footer + struct.pack("<I", len(footer)) + b"PAR1")
        finally:
            self._file.close()
            self._pool.shutdown()

    def abandon(self) -> None:
        """Stops without a footer (the caller deletes the file)."""
        for job in self._pending[1] if self._pending else ():
            job.cancel()
        self._pending = None
        self._file.close()
        self._pool.shutdown()
