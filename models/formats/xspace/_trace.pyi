# Types of the C extension _trace.c (its method table); keep in step with the C.
import mmap
from typing import Any

import numpy as np

_Buffer = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

def trace_rows(
    buf: _Buffer, spans: np.ndarray, md: Any, ts: np.ndarray, dur: np.ndarray, group: np.ndarray, step: Any,
    plane: tuple[Any, ...], /
) -> bytes: ...
