"""The session-group table: one row per group of the current page, columns
for the group name, every hparam and metric, status and session count; each
group expands into its sessions (their own hparams and metric values).
Values come straight from the GroupTable's columns; rows are an index array."""

from __future__ import annotations

import csv
import io
import json
import math
import re

import numpy as np
from PySide6.QtCore import QAbstractItemModel, QModelIndex, Qt
from PySide6.QtGui import QBrush

from profscope.models.hparams.experiment import MISSING, STRING, GroupTable, format_value
from profscope.protos import api_pb2
from profscope.widgets.palette import Scheme

STATUS_NAMES = {api_pb2.STATUS_UNKNOWN: "unknown", api_pb2.STATUS_SUCCESS: "success",
                api_pb2.STATUS_FAILURE: "failure", api_pb2.STATUS_RUNNING: "running"}


HASH_NAME = re.compile(r"[0-9a-f]{32,}")  # TensorBoard names a group by the hash of its hparams


def metric_label(group: str, tag: str) -> str:
    return f"{group}/{tag}" if group else tag


def group_labels(table: GroupTable) -> list[str]:
    """What the views call each group: a hash-named group by its hparams
    that differ between groups ("lr=0.001, optimizer=adam"); a group with a
    name of its own, or whose hparams leave it like another, by its name."""
    texts = {k: [format_value(h[k]) if k in h else None for h in table.hparams] for k in table.hparam_names}
    varying = [k for k, values in texts.items() if len(set(values)) > 1]
    labels = [", ".join(f"{k}={texts[k][g]}" for k in varying if texts[k][g] is not None)
              for g in range(len(table))]
    counts: dict[str, int] = {}
    for label in labels:
        counts[label] = counts.get(label, 0) + 1
    return [label if HASH_NAME.fullmatch(name) and label and counts[label] == 1 else name
            for name, label in zip(table.names, labels)]


class Columns:
    """What each table column shows: ("name" | "hparam" | "metric" | "status" | "sessions", key)."""

    def __init__(self, hparams: list[str], metrics: list[tuple[str, str]]):
        self.items = [("name", None)] + [("hparam", h) for h in hparams] + [("metric", m) for m in metrics] + [
            ("status", None), ("sessions", None)]

    def title(self, i: int) -> str:
        kind, key = self.items[i]
        return {"name": "Group", "status": "Status", "sessions": "Sessions"}.get(kind) or (
            key if kind == "hparam" else metric_label(*key))

    def __len__(self) -> int:
        return len(self.items)


class GroupModel(QAbstractItemModel):
    """Groups at the top level, their sessions as children (internal id:
    0 for a group, 1 + the group's row for a session)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.table: GroupTable | None = None
        self.columns = Columns([], [])
        self.rows = np.zeros(0, np.int64)  # group indices of the shown page, in order
        self.labels: list[str] = []  # each group's label (group_labels): its hparams rather than a hash
        self.sort_keys: list[tuple[int, int]] = []  # (column, ORDER_ASC/DESC) shown in the header

    def set_table(self, table: GroupTable | None, columns: Columns) -> None:
        self.beginResetModel()
        if table is not self.table:  # a refresh re-sets the same table: its labels stay
            self.labels = group_labels(table) if table is not None else []
        self.table, self.columns, self.rows = table, columns, np.zeros(0, np.int64)
        self.endResetModel()

    def set_rows(self, rows: np.ndarray) -> None:
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def group_at(self, row: int) -> int:
        return int(self.rows[row])

    def value(self, group: int, column: int):
        kind, key = self.columns.items[column]
        t = self.table
        if kind == "name":
            return t.names[group]
        if kind in ("hparam", "metric"):
            return t.column_of(kind, key).values[group]
        if kind == "sessions":
            return len(t.sessions[group])
        statuses = {s.status for s in t.sessions[group]}
        if len(statuses) == 1:
            return STATUS_NAMES.get(statuses.pop(), "?")
        return "mixed: " + ", ".join(sorted(STATUS_NAMES.get(s, "?") for s in statuses))

    def session_value(self, group: int, session: int, column: int):
        kind, key = self.columns.items[column]
        s = self.table.sessions[group][session]
        if kind == "name":
            return s.name
        if kind == "hparam":
            return s.hparams.get(key)
        if kind == "metric":
            return next((m.value for m in s.metrics if (m.group, m.tag) == key), None)
        if kind == "status":
            return STATUS_NAMES.get(s.status, str(s.status))
        return None

    def index(self, row, column, parent=QModelIndex()):
        if not self.hasIndex(row, column, parent):
            return QModelIndex()
        return self.createIndex(row, column, 0 if not parent.isValid() else parent.row() + 1)

    def parent(self, index):
        if not index.isValid() or index.internalId() == 0:
            return QModelIndex()
        return self.createIndex(index.internalId() - 1, 0, 0)

    def rowCount(self, parent=QModelIndex()):
        if self.table is None:
            return 0
        if not parent.isValid():
            return len(self.rows)
        if parent.internalId() == 0 and parent.column() == 0:
            return len(self.table.sessions[self.group_at(parent.row())])
        return 0

    def columnCount(self, parent=QModelIndex()):
        return len(self.columns)

    def headerData(self, section, orientation, role=Qt.DisplayRole):
        if orientation != Qt.Horizontal:
            return None
        if role == Qt.DisplayRole:
            title = self.columns.title(section)
            for rank, (column, order) in enumerate(self.sort_keys):
                if column == section:
                    arrow = "▲" if order == api_pb2.ORDER_ASC else "▼"
                    return f"{title} {arrow}{rank + 1 if len(self.sort_keys) > 1 else ''}"
            return title
        if role == Qt.ToolTipRole:  # the full name too: a long one is elided in its section
            title = self.columns.title(section)
            return f"{title}\nClick to sort, Shift+click to add a sort key, click again to reverse"
        return None

    def data(self, index, role=Qt.DisplayRole):
        if not index.isValid():
            return None
        column = index.column()
        if role == Qt.TextAlignmentRole:
            kind, key = self.columns.items[column]
            numeric = kind in ("metric", "sessions") or (kind == "hparam" and self._numeric(key))
            return int((Qt.AlignRight if numeric else Qt.AlignLeft) | Qt.AlignVCenter)
        if index.internalId():  # a session row
            group = self.group_at(index.internalId() - 1)
            if role == Qt.DisplayRole:
                return format_value(self.session_value(group, index.row(), column))
            if role == Qt.ForegroundRole:
                return QBrush(Scheme.of().secondary())
            return None
        group = self.group_at(index.row())
        if role == Qt.DisplayRole:
            if self.columns.items[column][0] == "name":
                return self.labels[group]
            return format_value(self.value(group, column))
        if role == Qt.ToolTipRole and self.columns.items[column][0] == "name":
            return f"{self.labels[group]}\ngroup {self.table.names[group]}"
        if role == Qt.ForegroundRole and self.columns.items[column][0] == "status":
            text = self.value(group, column)
            if text == "failure":
                return QBrush(Scheme.of().error())
            if text == "running":
                return QBrush(Scheme.of().data("#1565c0"))
        return None

    def _numeric(self, name: str) -> bool:
        kind = self.table.hparam_column(name).kind
        present = kind[kind != MISSING]
        return len(present) > 0 and not (present == STRING).any()


# ---------------------------------------------------------------- export


def table_rows(model: GroupModel, groups: np.ndarray, columns: list[int]) -> tuple[list[str], list[list]]:
    header = [model.columns.title(c) for c in columns]
    return header, [[model.value(int(g), c) for c in columns] for g in groups]


def as_csv(header: list[str], rows: list[list]) -> str:
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    w.writerows([[format_value(v) if not isinstance(v, (int, float)) or isinstance(v, bool) else v for v in row]
                 for row in rows])
    return out.getvalue()


def as_markdown(header: list[str], rows: list[list]) -> str:
    def cell(v) -> str:
        return format_value(v).replace("|", "\\|")
    lines = ["| " + " | ".join(h.replace("|", "\\|") for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def as_json(header: list[str], rows: list[list]) -> str:
    def clean(v):
        if isinstance(v, float) and not math.isfinite(v):
            return "NaN" if v != v else ("Infinity" if v > 0 else "-Infinity")
        return v
    return json.dumps([{h: clean(v) for h, v in zip(header, row)} for row in rows], indent=2) + "\n"


FORMATS = {"CSV": (as_csv, "csv"), "Markdown": (as_markdown, "md"), "JSON": (as_json, "json")}
