"""viewer"""

import os

# Profscope's numpy work is element-wise, never BLAS: OpenBLAS's thread pool
# would only cost each process ~0.1 s of CPU when numpy is imported (its
# threads start spinning), taken from the reading threads on a small machine.
# Before anything imports numpy; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
