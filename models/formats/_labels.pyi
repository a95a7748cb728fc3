# Types of the C extension _labels.c (its method table); keep in step with the C.
import mmap

import numpy as np

_Buffer = bytes | bytearray | memoryview | mmap.mmap | np.ndarray

def parse_labels(buf: _Buffer, label_spans: np.ndarray, name_spans: np.ndarray, kernel: bool, /) -> np.ndarray: ...
