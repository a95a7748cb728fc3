"""Chrome trace-event JSON benchmark: scan_trace against reading the file,
json.loads and a bare zlib inflate of the same bytes.

    python benchmarks/chrome_json_bench.py [--size-mb 500] [--input trace.json] [--out DIR]

Without --input, writes a Kineto-shaped trace of about --size-mb MB (as
PyTorch's profiler prints it: pretty-printed events of a training step,
cpu_op / cuda_runtime / kernel / ac2g flows / [memory] instants, ts with
nanosecond fractions) by repeating one step with growing times and ids, and
its .json.gz. Every measurement runs in a fresh process (median of 3 runs);
peak RSS is that process's VmHWM. scan_trace inflates and scans on two
threads, so its gzip speed depends on the machine running two threads at
once at full speed: the benchmark measures that too (two inflates at once).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from as_a_user import like_an_installed_copy

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

OPS = ("aten::linear", "aten::addmm", "aten::relu", "aten::empty", "aten::copy_", "aten::add_", "aten::mul",
       "aten::conv2d", "aten::convolution", "aten::_convolution", "aten::cudnn_convolution", "aten::view")
KERNELS = ("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
           "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
           "ampere_sgemm_128x64_tn", "void cudnn::winograd_nonfused::winogradForwardData4x4<float, float>("
           "cudnn::winograd_nonfused::WinogradDataParams<float, float>)",
           "void at::native::(anonymous namespace)::CatArrayBatchedCopy<float, unsigned int, 4, 64, 64>("
           "float*, at::native::(anonymous namespace)::CatArrInputTensorMetadata<float, unsigned int, 64, 64>, "
           "at::native::(anonymous namespace)::TensorSizeStride<unsigned int, 4u>, int, unsigned int)")


def _ts(us_ns: int) -> str:
    return f"{us_ns // 1000}.{us_ns % 1000:03d}"


def step_events(step: int, t0_ns: int, corr0: int, ext0: int, rng: random.Random) -> tuple[list[str], int, int, int]:
    """One training step as Kineto prints it, with times, sizes and addresses
    that vary as in real traces; returns (texts, end time, next correlation,
    next external id)."""
    out = []
    r = rng.randrange
    t = t0_ns
    pid, tid = 1234, 1234
    out.append(f'''  {{
    "ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{step}", "pid": {pid}, "tid": {tid},
    "ts": {_ts(t)}, "dur": {_ts(r(1_900_000, 2_100_000))},
    "args": {{
      "External id": {ext0},"Record function id": 0, "Ev Idx": {ext0}
    }}
  }}''')
    corr, ext = corr0, ext0 + 1
    for k in range(60):
        op = OPS[k % len(OPS)]
        t += r(1_000, 9_000)
        rows, cols = 2 ** r(4, 12), 2 ** r(4, 12)
        out.append(f'''  {{
    "ph": "X", "cat": "cpu_op", "name": "{op}", "pid": {pid}, "tid": {tid},
    "ts": {_ts(t)}, "dur": {_ts(r(2_000, 40_000))},
    "args": {{
      "External id": {ext},"Record function id": 0, "Concrete Inputs": ["", "", "", "1"], "Input type": ["float", "float", "float", "Scalar"], "Input Strides": [[{cols}, 1], [1], [{rows}, 1], []], "Input Dims": [[{rows}, {cols}], [{cols}], [{rows}, {rows}], []], "Ev Idx": {ext}
    }}
  }}''')  # noqa: E501 (the args line as the profiler writes it, one line)
        if k % 2 == 0:
            t += r(1_000, 4_000)
            out.append(f"""  {{
    "ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": {pid}, "tid": {tid},
    "ts": {_ts(t)}, "dur": {_ts(r(3_000, 9_000))},
    "args": {{
      "External id": {ext},
      "cbid": 211, "correlation": {corr}
    }}
  }},
  {{
    "ph": "s", "id": {corr}, "pid": {pid}, "tid": {tid}, "ts": {_ts(t)},
    "cat": "ac2g", "name": "ac2g"
  }}""")
            kt = t + r(5_000, 400_000)
            out.append(f'''  {{
    "ph": "X", "cat": "kernel", "name": "{KERNELS[(k // 2) % len(KERNELS)]}", "pid": 0, "tid": 7,
    "ts": {_ts(kt)}, "dur": {_ts(r(1_000, 900_000))},
    "args": {{
      "External id": {ext},
      "queued": 0, "device": 0, "context": 1,
      "stream": 7, "correlation": {corr},
      "registers per thread": 32,
      "shared memory": 0,
      "blocks per SM": {r(1, 5000) / 10},
      "warps per SM": {r(1, 20000) / 10},
      "grid": [{rows}, 1, 1],
      "block": [128, 1, 1],
      "est. achieved occupancy %": {r(1, 101)}
    }}
  }},
  {{
    "ph": "f", "id": {corr}, "pid": 0, "tid": 7, "ts": {_ts(kt)},
    "cat": "ac2g", "name": "ac2g", "bp": "e"
  }}''')
            corr += 1
        if k % 4 == 1:
            out.append(f"""  {{
    "ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
    "pid": {pid}, "tid": {tid},
    "ts": {_ts(t + 1)},
    "args": {{
      "Total Reserved": 2097152, "Total Allocated": {r(1 << 20, 1 << 34)}, "Bytes": {(1 if k % 8 == 1 else -1) * 4 * rows * cols}, "Addr": {139822469890048 + 512 * r(0, 1 << 24)}, "Device Type": 1, "Device Id": 0
    }}
  }}""")  # noqa: E501 (the args line as the profiler writes it, one line)
        ext += 1
    return out, t + r(100_000, 2_000_000), corr, ext


def generate(path: Path, size_mb: float) -> None:
    """Writes a Kineto-shaped trace of about size_mb MB, and path + '.gz'."""
    target = int(size_mb * 1e6)
    with open(path, "w") as f:
        f.write(
            '{\n  "schemaVersion": 1,\n  "deviceProperties": [\n    {\n      "id": 0, "name": "NVIDIA A100-SXM4-40GB", '
            '"totalGlobalMem": 42505273344\n    }\n  ],\n  "distributedInfo": {"backend": "nccl", "rank": 0, '
            '"world_size": 8},\n  "traceEvents": [\n'
        )
        f.write(
            '  {\n    "name": "process_name", "ph": "M", "ts": 1692828483620955.123, "pid": 1234, "tid": 0,\n'
            '    "args": {\n      "name": "python"\n    }\n  }'
        )
        written, step, t, corr, ext = 0, 0, 1_692_828_483_620_955_123, 1, 1
        rng = random.Random(1)
        while written < target:
            events, t, corr, ext = step_events(step, t, corr, ext, rng)
            text = ",\n" + ",\n".join(events)
            f.write(text)
            written += len(text)
            step += 1
        f.write(
            '\n],\n  "traceName": "bench.pt.trace.json",\n  "displayTimeUnit": "ms",\n'
            '  "baseTimeNanoseconds": 1692828000000000000\n}\n'
        )
    with open(path, "rb") as src, gzip.open(str(path) + ".gz", "wb", compresslevel=6) as dst:
        while block := src.read(16 << 20):
            dst.write(block)


MEASURE = r"""
import sys, time, zlib, json
sys.path.insert(0, ROOT)
kind, path = sys.argv[1], sys.argv[2]
if kind == "scan":
    from profscope.models.formats.chrome_json import scan_trace
t0 = time.perf_counter()
events = 0
if kind == "read":
    with open(path, "rb") as f:
        buf = bytearray(16 << 20)
        while f.readinto(buf):
            pass
elif kind == "json.loads":
    with open(path, "rb") as f:
        events = len(json.loads(f.read())["traceEvents"])
elif kind == "inflate":
    d = zlib.decompressobj(wbits=31)
    with open(path, "rb") as f:
        while data := f.read(4 << 20):
            while data:
                d.decompress(data, 16 << 20)
                data = d.unconsumed_tail
elif kind == "two inflates":  # the same inflate on two threads at once
    import threading
    def inflate():
        d = zlib.decompressobj(wbits=31)
        with open(path, "rb") as f:
            while data := f.read(4 << 20):
                while data:
                    d.decompress(data, 16 << 20)
                    data = d.unconsumed_tail
    threads = [threading.Thread(target=inflate) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
elif kind == "scan":
    trace = scan_trace(path)
    events = trace.events
    assert trace.complete, trace.warnings
elapsed = time.perf_counter() - t0
hwm = 0
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        hwm = int(line.split()[1]) * 1024
print(json.dumps({"seconds": elapsed, "rss": hwm, "events": events}))
"""


def measure(kind: str, path: Path, runs: int) -> dict:
    results = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", MEASURE.replace("ROOT", repr(str(ROOT))), kind, str(path)],
            check=True,
            capture_output=True,
            text=True,
        )
        results.append(json.loads(out.stdout))
    return {
        "seconds": statistics.median(r["seconds"] for r in results),
        "best": min(r["seconds"] for r in results),
        "rss": max(r["rss"] for r in results),
        "events": results[0]["events"],
    }


def main() -> None:
    like_an_installed_copy()
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mb", type=float, default=500)
    ap.add_argument("--input", type=Path, help="a trace .json to use instead of a generated one (gzipped beside it)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if args.input:
        plain = args.input
        if not Path(str(plain) + ".gz").exists():
            with open(plain, "rb") as src, gzip.open(str(plain) + ".gz", "wb", compresslevel=6) as dst:
                while block := src.read(16 << 20):
                    dst.write(block)
    else:
        args.out.mkdir(parents=True, exist_ok=True)
        plain = args.out / f"kineto_{args.size_mb:g}mb.pt.trace.json"
        if not plain.exists() or not Path(str(plain) + ".gz").exists():
            t0 = time.perf_counter()
            generate(plain, args.size_mb)
            print(f"generated {plain} in {time.perf_counter() - t0:.1f} s")
    packed = Path(str(plain) + ".gz")
    size = plain.stat().st_size
    print(
        f"{plain.name}: {size / 1e6:,.0f} MB, gzip {packed.stat().st_size / 1e6:,.0f} MB; "
        f"median (and best) of {args.runs} runs, MB/s of uncompressed JSON"
    )
    rows = [("plain read", "read", plain)]
    if size <= 300e6:
        rows.append(("json.loads", "json.loads", plain))
    rows += [
        ("scan_trace .json", "scan", plain),
        ("zlib inflate alone", "inflate", packed),
        ("scan_trace .json.gz", "scan", packed),
    ]
    found = {}
    for label, kind, path in rows:
        r = measure(kind, path, args.runs)
        found[label] = r
        extra = f"  {r['events']:,} events" if r["events"] else ""
        print(
            f"  {label:<22} {r['seconds']:7.2f} s  {size / 1e6 / r['seconds']:6.0f} MB/s "
            f"(best {size / 1e6 / r['best']:5.0f})  peak RSS {r['rss'] / 2**20:6.0f} MiB{extra}"
        )
    both = measure("two inflates", packed, args.runs)
    speedup = 2 * found["zlib inflate alone"]["seconds"] / both["seconds"]
    print(
        f"  two inflates at once on two threads run {speedup:.2f}x as fast as one (2.00: two real cores; "
        "the gzip pipeline needs them)"
    )
    ratio = found["zlib inflate alone"]["seconds"] / found["scan_trace .json.gz"]["seconds"]
    best = found["zlib inflate alone"]["best"] / found["scan_trace .json.gz"]["best"]
    print(f"  scan_trace .json.gz runs at {ratio:.2f}x (best runs: {best:.2f}x) the speed of inflating alone")


if __name__ == "__main__":
    main()
