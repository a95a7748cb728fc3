"""Produce two_ranks/rank-0.json.gz and rank-1.json.gz: real PyTorch profiler traces of
a 2-process CPU data-parallel run (torch.distributed, gloo backend, world size 2,
spawned with torch.multiprocessing).

Each rank trains a tiny MLP wrapped in DistributedDataParallel (its gradient buckets
are all-reduced by gloo) and also all-reduces its loss explicitly with
dist.all_reduce each step. Rank 1 does extra matmuls each step, so it is the
straggler and rank 0 waits for it inside the collectives.

Run:  python producers/pytorch_ranks.py [OUT_DIR]   (OUT_DIR defaults to ../two_ranks)
"""
import gzip
import os
import shutil
import socket
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

WORLD_SIZE = 2
STEPS = 6  # wait=1, warmup=1, active=3 -> steps 2..4 are recorded


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, port, out_dir):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE)
    torch.manual_seed(rank)
    model = DDP(nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    loss_fn = nn.CrossEntropyLoss()
    extra = torch.randn(384, 384)

    tmp = tempfile.mkdtemp()
    raw = os.path.join(tmp, f"rank-{rank}.json")

    def on_ready(prof):
        prof.export_chrome_trace(raw)

    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=on_ready,
        record_shapes=True,
    ) as prof:
        for step in range(STEPS):
            x = torch.randn(32, 64)
            y = torch.randint(0, 8, (32,))
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            if rank == 1:  # the straggler: extra work before the gradient sync finishes
                with torch.profiler.record_function("straggler_extra_compute"):
                    for _ in range(6):
                        extra = torch.tanh(extra @ extra * 1e-3)
            opt.step()
            metric = loss.detach().clone()
            dist.all_reduce(metric)
            dist.barrier() if step == STEPS - 1 else None
            prof.step()

    dist.destroy_process_group()
    out = os.path.join(out_dir, f"rank-{rank}.json.gz")
    with open(raw, "rb") as src, gzip.GzipFile(out, "wb", mtime=0) as dst:
        shutil.copyfileobj(src, dst)
    shutil.rmtree(tmp)
    print("wrote", out, os.path.getsize(out))


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    mp.spawn(worker, args=(free_port(), out_dir), nprocs=WORLD_SIZE, join=True)


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "two_ranks"))
