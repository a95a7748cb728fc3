"""What `profscope query` prints: a query result (Arrow columns) as an
aligned text table, CSV, JSON or Parquet, written to a binary file. No Qt."""

from __future__ import annotations

import json

FORMATS = ("table", "csv", "json", "parquet")
CELL = 60  # widest text cell; longer values end in "…"


def write_result(table, fmt: str, f) -> None:
    """Writes a pyarrow Table (pyarrow loads here, not when the CLI starts)."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, f)
    elif fmt == "csv":
        import pyarrow.csv

        pyarrow.csv.write_csv(table, f)
    elif fmt == "json":
        _write_json(table, f)
    else:
        _write_text(table, f)


def _write_json(table, f) -> None:
    """An array of one object per row, a row per line."""
    f.write(b"[")
    first = True
    for batch in table.to_batches():
        for row in batch.to_pylist():
            f.write((b"\n" if first else b",\n") + json.dumps(row, default=_json_value, ensure_ascii=False).encode())
            first = False
    f.write(b"\n]\n")


def _json_value(value):
    import datetime  # here: the values json cannot write are rare, and `export` never has them
    import decimal

    if isinstance(value, decimal.Decimal):  # DuckDB's sums of BIGINT are HUGEINT
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, (datetime.date, datetime.time, datetime.timedelta)):
        return str(value)
    if isinstance(value, bytes):
        return value.hex()
    return str(value)


def _write_text(table, f) -> None:
    """Columns padded to their widest cell, numbers on the right."""
    from profscope.models.sql.schema import is_number

    names = table.column_names
    cells = [[_cell(v) for v in table.column(k).to_pylist()] for k in range(table.num_columns)]
    right = [is_number(t) for t in table.schema.types]
    widths = [max([len(n)] + [len(c) for c in col]) for n, col in zip(names, cells)]

    def line(values) -> bytes:
        padded = [v.rjust(w) if r else v.ljust(w) for v, w, r in zip(values, widths, right)]
        return ("  ".join(padded).rstrip() + "\n").encode()

    f.write(line(names))
    f.write(line(["-" * w for w in widths]))
    for row in zip(*cells):
        f.write(line(row))
    f.write(f"({table.num_rows:,} row{'s' if table.num_rows != 1 else ''})\n".encode())


def _cell(value) -> str:
    text = "NULL" if value is None else str(value)
    text = text.replace("\n", " ")
    return text if len(text) <= CELL else text[:CELL - 1] + "…"
