# Types of the C extension _nesting.c (its method table); keep in step with the C.
import numpy as np

def nest_parents(
    order: np.ndarray | None, segment: np.ndarray, starts: np.ndarray, ends: np.ndarray, skip: np.ndarray, /
) -> np.ndarray: ...
