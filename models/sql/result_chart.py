"""The Query tab's chart data: when a result has a time or step column and
numeric columns, one line per numeric column over it (split by the text
columns that vary, such as host or allocator). `chart_data` picks the
columns and sorts the points (numpy and Arrow only: the query's worker runs
it)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profscope.models.sql.schema import is_number

# The x axis: the first of these the result has (times before steps and snapshots).
X_COLUMNS = ("start_ns", "time_ns", "alloc_time_ns", "wall_time", "time", "timestamp", "ts", "step", "snapshot",
             "seq", "epoch", "iteration")
SECONDS = ("wall_time", "time", "timestamp")  # x columns in seconds (relative to the first)
# Numbers that are positions or ids, not values to draw.
NOT_VALUES = set(X_COLUMNS) | {"id", "lane", "depth", "parent", "from_id", "to_id", "freed_snapshot", "free_step",
                               "address", "free_time_ns"}
MAX_SERIES = 12
LABEL_CHARS = 40  # longer legend labels are cut


@dataclass
class ChartData:
    x_name: str
    x_units: str  # "s" when x is a time from the first point, else ""
    x_origin: object  # the first x value (times are drawn from it)
    x_integers: bool = False  # x is whole numbers (steps): ticks only at whole numbers
    groups: list[tuple[str, np.ndarray, np.ndarray]] = field(default_factory=list)  # label, rows, x (sorted by x)
    values: dict[str, np.ndarray] = field(default_factory=dict)  # numeric column -> its value in every row
    note: str = ""


def chart_data(table: pa.Table) -> ChartData | None:
    """What to draw for a result, or None when it has no x column or no values."""
    names = table.column_names
    x_name = next((n for n in X_COLUMNS if n in names and is_number(table.column(n).type)), None)
    if x_name is None or not table.num_rows:
        return None
    values = [n for n in names if n not in NOT_VALUES and is_number(table.column(n).type)]
    if not values:
        return None
    xs = table.column(x_name)
    origin = pc.min(xs).as_py()
    relative = x_name.endswith("_ns") or x_name in SECONDS
    x = _floats(pc.subtract(xs.cast(pa.float64()) if pa.types.is_decimal(xs.type) else xs, origin)
                if relative and origin is not None else xs)
    if x_name.endswith("_ns"):
        x = x / 1e9
    keys, labels, note = _split(table, x, [n for n in names if _is_text(table.column(n).type)])
    chart = ChartData(x_name, "s" if relative else "", origin, pa.types.is_integer(xs.type) and not relative,
                      note=note, values={n: _floats(table.column(n)) for n in values})
    for k, label in enumerate(labels):
        rows = np.flatnonzero(keys == k) if len(labels) > 1 else np.arange(len(x))
        rows = rows[np.argsort(x[rows], kind="stable")]
        chart.groups.append((label, rows, x[rows]))
    return chart


def _is_text(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_dictionary(t)


def _floats(values) -> np.ndarray:
    """A numeric column as float64, NULL as NaN."""
    return np.asarray(values.cast(pa.float64()).to_numpy(zero_copy_only=False), np.float64)


def _split(table: pa.Table, x: np.ndarray, texts: list[str]) -> tuple[np.ndarray, list[str], str]:
    """A line per value of the text columns with a few values (host,
    allocator: as many as make at most MAX_SERIES lines together); without
    such columns, per value of the first text column that tells rows of one
    x apart (session, kernel name). Returns each row's line (-1 beyond
    MAX_SERIES lines), the lines' labels in order of first appearance, and
    what they are of."""
    varying = []
    for name in texts:
        encoded = pc.dictionary_encode(table.column(name).cast(pa.string()), null_encoding="encode").combine_chunks()
        if (n := len(encoded.dictionary)) > 1:
            varying.append((name, encoded.indices.to_numpy(), n, encoded.dictionary))
    chosen, lines = [], 1
    for column in varying:
        if column[2] <= MAX_SERIES and lines * column[2] <= MAX_SERIES:
            chosen.append(column)
            lines *= column[2]
    if not chosen:
        x_codes, distinct = _codes(x)
        chosen = [c for c in varying if _codes(x_codes * c[2] + c[1])[1] > distinct][:1]
    if not chosen:
        return np.zeros(len(x), np.int64), [""], ""
    line = np.zeros(len(x), np.int64)
    for _, codes, n, _ in chosen:
        line = _codes(line * n + codes)[0]
    first = np.unique(line, return_index=True)[1]  # each line's first row
    order = np.argsort(first, kind="stable")
    rank = np.empty(len(first), np.int64)
    rank[order] = np.arange(len(first))
    labels = [" / ".join(_text(c[3][c[1][first[k]]].as_py()) for c in chosen) for k in order[:MAX_SERIES]]
    note = " / ".join(c[0] for c in chosen)
    if len(first) > MAX_SERIES:
        note += f" (the first {MAX_SERIES} of {len(first):,})"
    keys = rank[line]
    return np.where(keys < MAX_SERIES, keys, -1), labels, note


def _text(value) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def _codes(values: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's index among the distinct values, and how many there are."""
    distinct, inverse = np.unique(values, return_inverse=True)
    return inverse.reshape(-1), len(distinct)
