"""LogMemory log reading: parse + replay throughput against a plain line read.

    python benchmarks/log_memory_bench.py [--lines 5000000] [--out /tmp/bench.log]

Writes a log of N `__LOG_MEMORY__` lines as TensorFlow 2.21 prints them
(absl prefix, protobuf's debug link), with ordinary log lines between (one in
five lines), allocations from several kernels and steps, each freed a few
hundred allocations later. Then in the same process, in this order:
  1. a plain read of the file line by line (`for line in file`), the baseline;
  2. profscope's load_memory_log (scan + replay);
three times, and prints the medians in MB/s, their ratio, and the peak resident memory.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from profscope.models.formats.log_memory import load_memory_log  # noqa: E402

KERNELS = [
    f"model/layer_{i}/{op}" for i in range(40) for op in ("MatMul", "BiasAdd", "Relu", "gradients/MatMul_grad/MatMul")
]
PREFIX = "I0000 00:00:{t:.6f}   {tid} log_memory.cc:34] __LOG_MEMORY__ "
OTHER = "I0000 00:00:{t:.6f}   {tid} training.py:120] step {step}: loss = 0.{step:05d}, throughput 1234.5 examples/s\n"


def generate(path: Path, lines: int) -> None:
    t0 = 1795320400.0
    live = 300
    with open(path, "w") as f:
        out = []
        step = 0
        for i in range(lines):
            t = t0 + i * 1e-5
            tid = 19662 + (i % 4)
            k = i // 2 + 1
            if i % 100 == 0:
                step += 1
                out.append(
                    PREFIX.format(t=t, tid=tid)
                    + f'MemoryLogStep {{ goo.gle/debugstr  step_id: {step} handle: "x:0->loss:0/train/0/;{step}" }}\n'
                )
            elif i % 2 == 0:
                kernel = KERNELS[k % len(KERNELS)]
                size = 256 << (k % 12)
                out.append(
                    PREFIX.format(t=t, tid=tid)
                    + (
                        f'MemoryLogTensorAllocation {{ goo.gle/debugstr  step_id: {step} kernel_name: "{kernel}" '
                        f"tensor {{ dtype: DT_FLOAT shape {{ dim {{ size: {size // 4} }} }} allocation_description {{ "
                        f'requested_bytes: {size} allocated_bytes: {size} allocator_name: "GPU_0_bfc" '
                        f"allocation_id: {k} "
                        f"has_single_reference: true ptr: {140000000000 + 4096 * (k % 5000)} }} }} }}\n"
                    )
                )
            elif k > live:
                out.append(
                    PREFIX.format(t=t, tid=tid)
                    + f"MemoryLogTensorDeallocation {{ goo.gle/debugstr  allocation_id: {k - live} "
                    'allocator_name: "GPU_0_bfc" }\n'
                )
            else:
                out.append(
                    PREFIX.format(t=t, tid=tid)
                    + f'MemoryLogTensorOutput {{ goo.gle/debugstr  step_id: {step} kernel_name: "x" index: 0 tensor '
                    '{ dtype: DT_FLOAT shape { } allocation_description { requested_bytes: 4 '
                    'allocator_name: "GPU_0_bfc" } } }\n'
                )
            if i % 4 == 3:
                out.append(OTHER.format(t=t, tid=tid, step=step))
            if len(out) >= 100_000:
                f.writelines(out)
                out.clear()
        f.writelines(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=5_000_000)
    ap.add_argument("--out", default="/tmp/profscope-bench.log")
    ap.add_argument("--keep", action="store_true", help="reuse an existing file and keep it")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    path = Path(args.out)
    if not (args.keep and path.exists()):
        t = time.perf_counter()
        generate(path, args.lines)
        print(f"generated {args.lines:,} memory lines in {time.perf_counter() - t:.1f} s")
    size = path.stat().st_size
    mb = size / 1e6
    print(f"file: {path} {mb:,.0f} MB")

    plain, ours = [], []
    for _ in range(args.repeat):  # alternate, so both see the same machine state
        t = time.perf_counter()
        n = 0
        with open(path, "rb") as f:
            for _ in f:
                n += 1
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        data = load_memory_log(path)
        ours.append(time.perf_counter() - t)
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    p, o = sorted(plain)[len(plain) // 2], sorted(ours)[len(ours) // 2]
    print(f"plain line read: {n:,} lines, median of {args.repeat}: {p:.2f} s = {mb / p:,.0f} MB/s")
    info = data.log
    events = sum(len(a.timeline) for a in data.allocators.values())
    print(
        f"profscope parse + replay, median of {args.repeat}: {o:.2f} s = {mb / o:,.0f} MB/s "
        f"= {p / o:.2f} of the plain read's speed (target >= 0.33)"
    )
    print(
        f"  memory lines {sum(info.messages.values()):,}, timeline snapshots {events:,}, "
        f"text_format lines {info.text_format_lines:,}, garbled {info.garbled}"
    )
    print(
        f"  peak RSS {peak_rss:,.0f} MiB ({peak_rss * 2**20 / size:.2f}x the file, "
        f"{peak_rss * 2**20 / sum(info.messages.values()):.0f} bytes per memory line)"
    )
    if not args.keep:
        os.remove(path)


if __name__ == "__main__":
    main()
