# Types of the C extension _steps.c (its method table); keep in step with the C.
import numpy as np

def xprof_order(starts: np.ndarray, ends: np.ndarray, segment: np.ndarray | None, /) -> np.ndarray | None: ...
def nest_rows(
    rows: np.ndarray, line: np.ndarray, offset: np.ndarray, duration: np.ndarray, line_ps: np.ndarray,
    skip: np.ndarray, /
) -> np.ndarray: ...
def claim_groups(
    src: np.ndarray, dst: np.ndarray, num_nodes: int, num_events: int, roots: np.ndarray,
    parent: np.ndarray | None = None, /
) -> tuple[np.ndarray, np.ndarray]: ...
def op_metrics(
    rows: np.ndarray, keys: np.ndarray, code_of_key: np.ndarray | None, extra_at: np.ndarray, extra_code: np.ndarray,
    eager_at: np.ndarray, line: np.ndarray, offset: np.ndarray, duration: np.ndarray, line_ps: np.ndarray,
    slot_of_code: np.ndarray, typed: np.ndarray, num_slots: int, /
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, int, int]: ...
def step_sweep(
    starts: np.ndarray, ends: np.ndarray, types: np.ndarray, segment: np.ndarray, step_begin: np.ndarray,
    step_end: np.ndarray, /
) -> tuple[np.ndarray, np.ndarray]: ...
def step_sweep_rows(
    rows: np.ndarray, line: np.ndarray, offset: np.ndarray, duration: np.ndarray, line_ps: np.ndarray,
    types: np.ndarray, step: np.ndarray, step_begin: np.ndarray, step_end: np.ndarray, first_step: int = 0, /
) -> tuple[np.ndarray, np.ndarray]: ...
