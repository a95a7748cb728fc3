# Types of the C extension _logscan.c (its method table); keep in step with the C.
import mmap
from typing import Any, overload

import numpy as np

_Buffer = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

def scan_memory_log(
    buf: _Buffer, final: bool, /
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
def scan_block(buf: _Buffer, start: int, stop: int, dtype_names: tuple[Any, ...], /) -> dict[str, Any]: ...
def select_events(
    kind: np.ndarray, flags: np.ndarray, allocator: np.ndarray, id: np.ndarray, a: int, /
) -> tuple[np.ndarray, np.ndarray]: ...

# (n, selected, deferred, time_ps, source, activity, heap, peak, region, allocs, frees); None when the
# times go back and no selection (sel, row) is given
@overload
def replay(
    kind: np.ndarray, flags: np.ndarray, allocator: np.ndarray, id: np.ndarray, time: np.ndarray, bytes: np.ndarray,
    a: int, raw_region: int, tensor_region: int, /
) -> tuple[Any, ...] | None: ...
@overload
def replay(
    kind: np.ndarray, flags: np.ndarray, allocator: np.ndarray, id: np.ndarray, time: np.ndarray, bytes: np.ndarray,
    a: int, raw_region: int, tensor_region: int, sel: np.ndarray, row: np.ndarray, /
) -> tuple[Any, ...]: ...
