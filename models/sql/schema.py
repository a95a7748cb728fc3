"""The SQL tables' names and columns (docs/SQL.md says what they mean), and
which result columns hold numbers: what the Query tab shows before any query
runs, without loading DuckDB (models/sql/database.py loads it)."""

from __future__ import annotations

import pyarrow as pa

SLICE_COLUMNS = (("session", "VARCHAR"), ("host", "VARCHAR"), ("tag", "VARCHAR"), ("process", "VARCHAR"),
          ("thread", "VARCHAR"), ("lane", "INTEGER"), ("depth", "INTEGER"), ("id", "BIGINT"), ("name", "VARCHAR"),
          ("kind", "VARCHAR"), ("category", "VARCHAR"), ("start_ns", "BIGINT"), ("dur_ns", "BIGINT"),
          ("parent", "BIGINT"), ("step", "BIGINT"))
ACTIVITY_COLUMNS = (("op", "VARCHAR"), ("region", "VARCHAR"), ("dtype", "VARCHAR"), ("shape", "VARCHAR"))
# Every table and view with its columns (docs/SQL.md says what they mean).
SCHEMA: dict[str, tuple[tuple[str, str], ...]] = {
    "slices": SLICE_COLUMNS,
    "flows": (("session", "VARCHAR"), ("host", "VARCHAR"), ("tag", "VARCHAR"), ("from_id", "BIGINT"),
              ("to_id", "BIGINT"), ("category", "VARCHAR")),
    "counters": (("session", "VARCHAR"), ("host", "VARCHAR"), ("tag", "VARCHAR"), ("process", "VARCHAR"),
                 ("name", "VARCHAR"), ("time_ns", "BIGINT"), ("value", "DOUBLE")),
    "memory_snapshots": (("session", "VARCHAR"), ("host", "VARCHAR"), ("allocator", "VARCHAR"),
                         ("snapshot", "BIGINT"), ("time_ns", "BIGINT"), ("stack_bytes", "BIGINT"),
                         ("heap_bytes", "BIGINT"), ("free_bytes", "BIGINT"), ("fragmentation", "DOUBLE"),
                         ("peak_bytes_in_use", "BIGINT"), ("kind", "VARCHAR"), ("requested_bytes", "BIGINT"),
                         ("allocation_bytes", "BIGINT"), ("address", "UBIGINT"), ("step", "BIGINT")) + ACTIVITY_COLUMNS,
    "allocations": (("session", "VARCHAR"), ("host", "VARCHAR"), ("allocator", "VARCHAR"), ("snapshot", "BIGINT"),
                    ("freed_snapshot", "BIGINT"), ("alloc_time_ns", "BIGINT"), ("free_time_ns", "BIGINT"),
                    ("allocation_bytes", "BIGINT"), ("requested_bytes", "BIGINT"), ("address", "UBIGINT"),
                    ("step", "BIGINT"), ("free_step", "BIGINT")) + ACTIVITY_COLUMNS + (("top_frame", "VARCHAR"),),
    "segments": (("session", "VARCHAR"), ("host", "VARCHAR"), ("allocator", "VARCHAR"), ("address", "UBIGINT"),
                 ("total_bytes", "BIGINT"), ("allocated_bytes", "BIGINT"), ("active_bytes", "BIGINT"),
                 ("requested_bytes", "BIGINT"), ("stream", "BIGINT"), ("segment_type", "VARCHAR"),
                 ("pool_id", "VARCHAR"), ("is_expandable", "BOOLEAN")),
    "frames": (("session", "VARCHAR"), ("host", "VARCHAR"), ("allocator", "VARCHAR"), ("allocation", "BIGINT"),
               ("depth", "INTEGER"), ("name", "VARCHAR"), ("filename", "VARCHAR"), ("line", "BIGINT")),
    "kernels": SLICE_COLUMNS + (("type", "VARCHAR"),),
    "ops": SLICE_COLUMNS + (("self_ns", "BIGINT"), ("device_self_ns", "BIGINT"), ("device_total_ns", "BIGINT")),
    "xprof_ops": (("session", "VARCHAR"), ("host", "VARCHAR"), ("host_or_device", "VARCHAR"), ("type", "VARCHAR"),
                  ("operation", "VARCHAR"), ("occurrences", "BIGINT"), ("total_us", "DOUBLE"), ("self_us", "DOUBLE"),
                  ("self_share", "DOUBLE"), ("execution", "VARCHAR")),
    "xprof_steps": (("session", "VARCHAR"), ("host", "VARCHAR"), ("step", "VARCHAR"), ("step_ms", "DOUBLE"),
                    ("device_compute_ms", "DOUBLE"), ("device_to_device_ms", "DOUBLE"),
                    ("device_collectives_ms", "DOUBLE"), ("host_compute_ms", "DOUBLE"), ("kernel_launch_ms", "DOUBLE"),
                    ("input_ms", "DOUBLE"), ("output_ms", "DOUBLE"), ("compile_ms", "DOUBLE"), ("other_ms", "DOUBLE")),
    "sessions": (("session", "VARCHAR"), ("group_name", "VARCHAR"), ("status", "VARCHAR"),
                 ("start_time", "DOUBLE"), ("end_time", "DOUBLE"), ("model_uri", "VARCHAR"),
                 ("monitor_url", "VARCHAR")),
    "hparams": (("session", "VARCHAR"), ("name", "VARCHAR"), ("value", "VARCHAR"), ("number", "DOUBLE")),
    "metrics": (("session", "VARCHAR"), ("run", "VARCHAR"), ("tag", "VARCHAR"), ("seq", "BIGINT"), ("step", "BIGINT"),
                ("wall_time", "DOUBLE"), ("value", "DOUBLE")),
}
TABLES = tuple(SCHEMA)
HPARAMS_TABLES = ("sessions", "hparams", "metrics")
# The views built on other tables (loading them loads those first).
NEEDS = {"kernels": ("slices",), "ops": ("slices",)}


def is_number(t: pa.DataType) -> bool:
    """A result column's Arrow type holds numbers (DuckDB's sums are decimals)."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
