# Types of the C extension _torch_snapshot.c (its method table); keep in step with the C.
import mmap
from typing import Any

import numpy as np

_Buffer = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

def read(data: _Buffer, max_depth: int, max_objects: int, release: bool = ..., /) -> dict[str, Any]: ...
