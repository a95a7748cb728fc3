"""Produce diff_pair/{baseline,candidate}/trace.pt.trace.json.gz: two real PyTorch
profiler traces of one model that differ in one thing, with Kineto GPU events added.

The model is an MLP 64-128-8 (Linear, ReLU, Linear), CrossEntropy, SGD, batch 32,
one thread, 6 iterations under schedule(wait=1, warmup=1, active=3) with
record_shapes=True (ProfilerStep#2..#4 recorded). The candidate has one extra op:
a Tanh after the ReLU (aten::tanh forward, aten::tanh_backward backward).

Each recorded CPU trace then gets GPU work the way make_gpu_trace.py adds it to the
other fixtures (same functions: launches inside the selected cpu_ops, kernels on
device 0 / stream 7, ac2g flows, GPU M events), so the pair has kernel statistics
on a machine without a GPU. The candidate's aten::tanh launches the tanh kernel.

Run:  python producers/pytorch_diff_pair.py     (writes ../diff_pair/)
"""
import json
import os
import random
import sys
import tempfile

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import kineto_text as kt  # noqa: E402
import make_gpu_trace as gpu  # noqa: E402

OUT = os.path.join(HERE, "..", "diff_pair")
SEED = 20261201


def record(extra_tanh: bool, path: str) -> None:
    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = [nn.Linear(64, 128), nn.ReLU()] + ([nn.Tanh()] if extra_tanh else []) + [nn.Linear(128, 8)]
    model = nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    x, y = torch.randn(32, 64), torch.randint(0, 8, (32,))
    with torch.profiler.profile(
        activities=[torch.profiler.ProfilerActivity.CPU],
        schedule=torch.profiler.schedule(wait=1, warmup=1, active=3, repeat=1),
        on_trace_ready=lambda prof: prof.export_chrome_trace(path),
        record_shapes=True,
    ) as prof:
        for _ in range(6):
            opt.zero_grad()
            loss_fn(model(x), y).backward()
            opt.step()
            prof.step()


def main():
    rng = random.Random(SEED)
    tmp = tempfile.mkdtemp()
    for side, extra in (("baseline", False), ("candidate", True)):
        raw = os.path.join(tmp, f"{side}.json")
        record(extra, raw)
        text = open(raw).read()
        doc = json.loads(text)
        assert kt.dumps(doc) == text, "layout of the real trace not reproduced"
        launches = gpu.plan_launches(doc["traceEvents"], rng, 0)
        gpu.schedule([(launches, 1.0)], rng)
        out = gpu.make(doc, 0, rng, launches, n_devices=1)
        dst = os.path.join(OUT, side, "trace.pt.trace.json.gz")
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        kt.write_gz(dst, kt.dumps(out))
        print("wrote", dst, os.path.getsize(dst), "launches", len(launches))


if __name__ == "__main__":
    main()
