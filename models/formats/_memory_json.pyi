# Types of the C extension _memory_json.c (its method table); keep in step with the C.
import mmap
from typing import Any

import numpy as np

_Buffer = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

def read(data: _Buffer, max_depth: int, /) -> dict[str, Any]: ...
