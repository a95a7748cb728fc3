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
from torch.cuda import _memory_viz as viz
from torch.profiler import ProfilerActivity, profile

out = Path(sys.argv[1])


def snapshot(width):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, width), torch.nn.ReLU(), torch.nn.Linear(width, 10))
    optimizer = torch.optim.Adam(model.parameters())
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True,
                 with_stack=True) as prof:
        for _ in range(2):
            optimizer.zero_grad()
            loss = torch.nn.functional.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
    return viz._profile_to_snapshot(prof)


for name, width in (("pair_before.pickle", 128), ("pair_after.pickle", 256)):
    with open(out / name, "wb") as f:
        pickle.dump(snapshot(width), f, protocol=4)
print(torch.__version__)
