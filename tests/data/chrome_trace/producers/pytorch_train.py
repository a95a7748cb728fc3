"""Produce train.pt.trace.json.gz: a real PyTorch profiler (Kineto) trace on CPU.

A tiny MLP trained for a few steps with a DataLoader (num_workers=2), profiled with
a wait=1/warmup=1/active=3 schedule, shapes, memory and Python stacks recorded.

Run:  python producers/pytorch_train.py [OUT_DIR]   (OUT_DIR defaults to the folder above)
"""
import gzip
import os
import shutil
import sys
import tempfile

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def main(out_dir):
    torch.manual_seed(0)
    data = TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,)))
    loader = DataLoader(data, batch_size=32, shuffle=True, num_workers=2)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()

    tmp = tempfile.mkdtemp()
    raw = os.path.join(tmp, "train.pt.trace.json")

    def on_ready(prof):
        prof.export_chrome_trace(raw)

    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=on_ready,
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
    ) as prof:
        for step, (x, y) in enumerate(loader):
            if step >= 6:
                break
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            prof.step()

    out = os.path.join(out_dir, "train.pt.trace.json.gz")
    with open(raw, "rb") as src, gzip.GzipFile(out, "wb", mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    shutil.rmtree(tmp)
    print("wrote", out, os.path.getsize(out))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
