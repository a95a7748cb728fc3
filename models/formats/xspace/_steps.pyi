# Types of the C extension _steps.c (its method table); keep in step with the C.
import numpy as np

def xprof_order(starts: np.ndarray, ends: np.ndarray, segment: np.ndarray | None, /) -> np.ndarray | None: ...
def claim_groups(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, num_events: int, roots: np.ndarray, /
) -> tuple[np.ndarray, np.ndarray]: ...
