# Types of the C extension _heap.c (its method table); keep in step with the C.
import numpy as np

def replay(
    kinds: np.ndarray, buffers: np.ndarray, shares: np.ndarray, sizes: np.ndarray, unpadded: np.ndarray, /
) -> tuple[
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    np.ndarray,
    int,
    int,
]: ...
