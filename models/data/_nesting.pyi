# Types of the C extension _nesting.c (its method table); keep in step with the C.
import mmap
from typing import Any

import numpy as np

_Buffer = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

def nest_parents(
    order: np.ndarray | None, segment: np.ndarray, starts: np.ndarray, ends: np.ndarray, skip: np.ndarray, /
) -> np.ndarray: ...
def xprof_order(starts: np.ndarray, ends: np.ndarray, segment: np.ndarray | None, /) -> np.ndarray | None: ...
def claim_groups(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, num_events: int, roots: np.ndarray, /
) -> tuple[np.ndarray, np.ndarray]: ...
def trace_rows(
    buf: _Buffer, spans: np.ndarray, md: Any, ts: np.ndarray, dur: np.ndarray, group: np.ndarray, step: Any,
    plane: tuple[Any, ...], /
) -> bytes: ...
