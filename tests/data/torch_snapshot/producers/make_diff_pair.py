"""Writes two PyTorch memory snapshots of one training script, before and after widening its hidden layer,
for `profscope diff` and the Compare tab.

    pip install torch && python make_diff_pair.py OUT_DIR

pair_before.pickle (hidden width 128) and pair_after.pickle (width 256): two CPU training steps of a small MLP
with Adam, profiled with profile_memory=True and made snapshots by torch.cuda._memory_viz._profile_to_snapshot
(without a GPU their device 0 is the CPU), pickled as torch's _dump_snapshot pickles them.
"""

import pickle
import sys
from pathlib import Path

import torch
from make_snapshots import profile_snapshot  # this folder's producer: the same training script

out = Path(sys.argv[1])

for name, width in (("pair_before.pickle", 128), ("pair_after.pickle", 256)):
    with open(out / name, "wb") as f:
        pickle.dump(profile_snapshot(width, steps=2), f, protocol=4)
print(torch.__version__)
