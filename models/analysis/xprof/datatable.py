"""Google Charts DataTable JSON, as XProf's converters write it (its
DataTable::ToJson): {"cols": [{"id", "label", "type"}], "p": {...},
"rows": [{"c": [{"v": value}]}]}, keys sorted.

Long tables (a row per step or per op and step) hold their rows as columns
(Rows): their JSON text is written from numpy arrays (_jsonrows), without a
list and a dict per row."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator, Sequence

import numpy as np


def column(id_: str, type_: str, label: str, p: dict | None = None) -> dict:
    col: dict = {"id": id_, "label": label, "type": type_}
    if p:
        col["p"] = p
    return col


class Rows:
    """A DataTable's rows as columns, each a float64 array (number cells) or (ids, values): an int array of
    indexes into a list of strings or booleans (string and boolean cells); `values` alone, a list of them,
    is turned into that. Written as json.dumps would write the rows' cells."""

    def __init__(self, columns: Sequence) -> None:
        self.columns = [c if isinstance(c, (np.ndarray, tuple)) else _coded(c) for c in columns]
        self.count = len(self.columns[0]) if not isinstance(self.columns[0], tuple) else len(self.columns[0][0])

    def __len__(self) -> int:
        return self.count

    def only(self, keep: Sequence[int]) -> Rows:
        """These columns of the rows."""
        return Rows([self.columns[i] for i in keep])

    def chunks(self, ensure_ascii: bool) -> Iterator[bytes]:
        quote = json.encoder.encode_basestring_ascii if ensure_ascii else json.encoder.encode_basestring
        specs: list = []
        for c in self.columns:
            if isinstance(c, tuple):
                ids, values = c
                texts = [(quote(v) if isinstance(v, str) else json.dumps(v)).encode() for v in values]
                specs.append(("s", np.asarray(ids, np.int64), texts))
            else:
                specs.append(("f", np.asarray(c, np.float64)))
        parts = [b'{"c":[{"v":'] + [b'},{"v":'] * (len(specs) - 1) + [b"}]}"]
        return JsonList(parts, specs, self.count).chunks(ensure_ascii)


class JsonList:
    """A JSON list of `first` (an item's text, if any) and `count` items written from columns by _jsonrows
    (parts around the columns' values; a column is ("i", int array), ("f", float array) or ("s", ids, texts)),
    in chunks of rows (a long table is not one more copy of its text)."""

    CHUNK = 8192  # items

    def __init__(self, parts: list[bytes], columns: list, count: int, first: bytes = b"") -> None:
        self.parts, self.columns, self.count, self.first = parts, columns, count, first

    def chunks(self, ensure_ascii: bool) -> Iterator[bytes]:
        from profscope.models.data import _jsonrows

        yield b"[" + self.first
        for start in range(0, self.count, self.CHUNK):
            yield (b"," if start or self.first else b"") + _jsonrows.json_rows(
                self.parts, self.columns, start, min(start + self.CHUNK, self.count), b",")
        yield b"]"


def _coded(values: Sequence) -> tuple[np.ndarray, list]:
    """A list of strings or booleans as (ids, the distinct values in first-seen order)."""
    index: dict = {}
    ids = np.fromiter((index.setdefault((type(v), v), len(index)) for v in values), np.int64, len(values))
    return ids, [v for _, v in index]


def table(columns: Sequence[dict], rows: Sequence[Sequence] | Rows, p: dict[str, str] | None = None) -> dict:
    out: dict = {"cols": list(columns)}
    if p is not None:
        out["p"] = p
    out["rows"] = rows if isinstance(rows, Rows) else [{"c": [{"v": v} for v in row]} for row in rows]
    return out


def to_json(obj, *, sort_keys: bool = False, ensure_ascii: bool = True) -> list[bytes] | Iterator[bytes]:
    """json.dumps (compact) of tables that may hold Rows or JsonLists, as chunks of its text (for ToolData):
    each of those is dumped as a placeholder string, and its chunks put in its place."""
    found: list[Rows | JsonList] = []
    mark = os.urandom(12).hex()  # no cell's text holds it

    def default(o):
        if isinstance(o, (Rows, JsonList)):
            found.append(o)
            return f"{mark}{len(found) - 1}"
        raise TypeError(f"{type(o).__name__} is not JSON serializable")

    text = json.dumps(obj, sort_keys=sort_keys, separators=(",", ":"), ensure_ascii=ensure_ascii, default=default)
    if not found:
        return [text.encode()]
    pieces = re.split(f'"{mark}(\\d+)"', text)  # text, a placeholder's number, text, ...

    def chunks() -> Iterator[bytes]:
        for k, piece in enumerate(pieces):
            yield from found[int(piece)].chunks(ensure_ascii) if k % 2 else [piece.encode()]

    return chunks()


def dumps(obj) -> list[bytes] | Iterator[bytes]:
    return to_json(obj, sort_keys=True, ensure_ascii=False)
