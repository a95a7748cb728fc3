# Types of the C extension _tfrecord.c (its method table); keep in step with the C.
import mmap
from typing import Any

import numpy as np

_Buffer = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

def scan_records(buf: _Buffer, /) -> tuple[np.ndarray, np.ndarray, int, int]: ...
def scan_files(
    buf: _Buffer, sizes: Any, /
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]: ...
def read_files(
    paths: tuple[bytes, ...], start: int, ends: Any, budget: int, /
) -> tuple[bytes, np.ndarray, np.ndarray]: ...
def masked_crc32c(data: _Buffer, /) -> int: ...
