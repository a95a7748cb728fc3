# Types of the C extension _lanes.c (its method table); keep in step with the C.
import numpy as np

def pack_lanes(starts: np.ndarray, ends: np.ndarray, /) -> np.ndarray: ...
