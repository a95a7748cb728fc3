"""The order of a query result's rows by one column, computed in the
query's worker (millions of rows take seconds)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from profscope.models.core.task import ProfileError


def sort_order(table: pa.Table, column: int, descending: bool) -> np.ndarray:
    """Row indices ordering a column (stable, NULLs last), by Arrow's sort."""
    values = table.column(column)
    if pa.types.is_dictionary(values.type):
        values = values.cast(values.type.value_type)
    try:
        order = pc.sort_indices(pa.table({"k": values}), sort_keys=[("k", "descending" if descending else "ascending")])
    except pa.ArrowNotImplementedError:
        raise ProfileError(f"Cannot sort {table.column_names[column]}: its type {values.type} has no order") from None
    return order.to_numpy()
