"""Writes small export_memory_timeline files of a few CPU training steps.

    pip install torch && python make_torch_timeline.py OUT_DIR

Gives cpu.raw.json.gz (raw rows), cpu.json.gz and cpu.json ([times, sizes]).
"""

import sys
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

out = Path(sys.argv[1])
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
optimizer = torch.optim.Adam(model.parameters())
x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof:
    for _ in range(3):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        optimizer.step()
for name in ("cpu.raw.json.gz", "cpu.json.gz", "cpu.json"):
    prof.export_memory_timeline(str(out / name), device="cpu")
print(torch.__version__)
