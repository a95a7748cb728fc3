"""viewer"""

import os

# Profscope's numpy work is element-wise, never BLAS: OpenBLAS's thread pool
# would only cost each process ~0.1 s of CPU when numpy is imported (its
# threads start spinning), taken from the reading threads on a small machine.
# Before anything imports numpy; a user's own setting wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# numpy advises the kernel to back arrays of 4 MiB and more with huge pages. Where memory is fragmented (after
# another large process, such as the training run or XProf's converter) the page faults then wait on the
# kernel's compaction: input_pipeline_analyzer of the 2M-event xplane right after XProf's converter took
# 0.36-0.40 s with the advice and 0.32-0.33 s without (benchmarks/xprof_tools_bench.py).
os.environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
