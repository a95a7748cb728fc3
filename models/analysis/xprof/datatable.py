"""Google Charts DataTable JSON, as XProf's converters write it (its
DataTable::ToJson): {"cols": [{"id", "label", "type"}], "p": {...},
"rows": [{"c": [{"v": value}]}]}, keys sorted."""

from __future__ import annotations

import json
from collections.abc import Sequence


def column(id_: str, type_: str, label: str, p: dict | None = None) -> dict:
    col: dict = {"id": id_, "label": label, "type": type_}
    if p:
        col["p"] = p
    return col


def table(columns: Sequence[dict], rows: Sequence[Sequence], p: dict[str, str] | None = None) -> dict:
    out: dict = {"cols": list(columns)}
    if p is not None:
        out["p"] = p
    out["rows"] = [{"c": [{"v": v} for v in row]} for row in rows]
    return out


def dumps(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
