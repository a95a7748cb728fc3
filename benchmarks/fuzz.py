"""Fuzz harness: hostile inputs through every reader and tool, the way users open them.

    python benchmarks/fuzz.py [--cases N | --seconds S] [--seed K] [--reader R ...] [--workers N]
                              [--timeout 5] [--out DIR] [--no-minimise] [--asan] [--replay PATH ...]

Seeds are the files under tests/data (XSpace, MemoryProfile JSON/gzip/binary, StepStats and
RunMetadata binary/text, event files with run metadata, HParams log dirs, LogMemory logs, Chrome
traces, PyTorch CUDA memory snapshot pickles). Case i of seed K is made by random.Random(f"{K}/{i}")
alone: a reader, one of its seeds, and one to three mutations, format-aware where the format allows:
  bytes     truncate, flip bits, insert/delete, splice with another seed, repeat or zero a region
  protobuf  a varint, fixed or length rewritten (huge, negative, off by one, overlong), a wire type
            or field number changed, a field duplicated/dropped/swapped, a message nested inside
            itself thousands of levels, bad UTF-8 strings; enclosing lengths fixed or left lying
  TFRecord  a record's payload mutated (as protobuf or bytes) with valid masked CRC-32Cs around it,
            lying lengths with a valid length CRC, garbage/duplicated/dropped/reordered records,
            bad CRCs, a partial last record, records spliced from another event file
  text      JSON and protobuf text format nested tens of thousands deep, extreme numbers, bad
            UTF-8 and escapes, renamed keys, unbalanced brackets; `__LOG_MEMORY__` lines with
            deep text_format payloads, huge steps and times, swapped message types, repeated lines
  pickle    at opcode boundaries: an import/call or out-of-place opcode put in, memo indices and
            string/integer lengths rewritten, runs of opcodes repeated or dropped, a cut
  gzip      the inflated payload mutated then recompressed (so the parser sees it), truncated or
            corrupt deflate data, bad trailers, several members, trailing junk, header flags,
            bombs (a file under 1 MB inflating to ~0.9 GB of zeros, of `[`, of a log line)
Each case is written to a fresh folder with realistic names and opened as the window and the
command line do: open_repository on the file, open_location on its folder (profiles + HParams)
and on the log dir, then every session, host and tool through tool_data (memory_profile also
with xprof_form=1, op_stats by input shape, kernel_stats for steps 1-2), steps(), every step's
step_timeline with what the views ask of it (details, statistics, search, range), the memory
view's tables, and for log dirs every HParams tool.

Outcomes: answer (some tool gave its data), message (only ProfileErrors: what the CLI and the
window show as messages), traceback (any other exception), timeout (one call, such as an open
or a tool, over --timeout seconds: the worker tells the harness before each call), blowup
(MemoryError, or more than 1 GiB over the worker's resident memory), crash (a signal), leak (a
thread left running or a file left open after the case's objects are gone), sanitizer (--asan).
Cases run in worker processes (address space limited, one case at a time, killed and replaced
on a timeout or a crash), so a hang or an out-of-memory is recorded, not fatal. Each distinct
failure (class, exception type, innermost Profscope frame) is minimised by chunk removal while
it still reproduces; --out DIR keeps the first case and the minimised input of each.

--asan copies models/ and protos/ to a temporary folder, builds the C extensions there with
-fsanitize=address,undefined (the repository's .so files are not touched) and runs the workers
on that copy with libasan preloaded; sanitizer reports are their own outcome class. --rev REV
fuzzes a git revision built the same way (without sanitizers unless --asan), so a pass is not
disturbed by edits to the working tree.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import gzip
import json
import os
import pickle
import random
import re
import resource
import selectors
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
MAX_INPUT = 1 << 20  # the targets hold for inputs under 1 MB
RSS_LIMIT_MB = 1024  # more than this over the worker's own memory is a blow-up
AS_HEADROOM_MB = 2048  # address space a case may take before MemoryError (threads reserve arenas)
RECYCLE = 300  # cases per worker process before a fresh one
CLASSES = ("answer", "message", "traceback", "timeout", "blowup", "crash", "leak", "sanitizer")
FAILURES = CLASSES[2:]
SESSION = "2026_01_02_03_04_05"

# ---------------------------------------------------------------- encodings


def _crc32c_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC32C = _crc32c_table()


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), as TFRecord framing uses it."""
    c, table = 0xFFFFFFFF, _CRC32C
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked_crc32c(data: bytes) -> int:
    c = crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def tfrecord(payload: bytes, length: int | None = None) -> bytes:
    """One record with valid CRCs; `length` may lie (its CRC is still valid)."""
    head = struct.pack("<Q", len(payload) if length is None else length & 0xFFFFFFFFFFFFFFFF)
    return head + struct.pack("<I", masked_crc32c(head)) + payload + struct.pack("<I", masked_crc32c(payload))


def tfrecords(data: bytes) -> list[tuple[int, int]]:
    """(start, end) of each whole record with a sane length, in order."""
    out, i = [], 0
    while i + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        if i + 16 + n > len(data):
            break
        out.append((i, i + 16 + n))
        i += 16 + n
    return out


def varint(n: int) -> bytes:
    if 0 <= n < 0x200000:  # the common cases without the loop (deep nesting writes ~10^5 of them)
        if n < 0x80:
            return bytes((n,))
        if n < 0x4000:
            return bytes((n & 0x7F | 0x80, n >> 7))
        return bytes((n & 0x7F | 0x80, (n >> 7) & 0x7F | 0x80, n >> 14))
    n &= 0xFFFFFFFFFFFFFFFF  # negatives as protobuf writes them: ten bytes
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _gf2_times(mat: list[int], vec: int) -> int:
    s, i = 0, 0
    while vec:
        if vec & 1:
            s ^= mat[i]
        vec >>= 1
        i += 1
    return s


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """zlib's crc32_combine: the CRC-32 of A+B from those of A and B (a bomb's CRC
    without reading its gigabyte again)."""
    odd = [0xEDB88320] + [1 << n for n in range(31)]
    even = [_gf2_times(odd, odd[n]) for n in range(32)]
    odd = [_gf2_times(even, even[n]) for n in range(32)]
    while len2:
        even = [_gf2_times(odd, odd[n]) for n in range(32)]
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = [_gf2_times(even, even[n]) for n in range(32)]
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
    return crc1 ^ crc2


GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_bomb_tails: dict[tuple[bytes, int], tuple[bytes, int, int]] = {}


def _crc_repeated(crc: int, length: int, times: int) -> int:
    """CRC-32 of a block repeated `times` times, by doubling."""
    out, out_len = 0, 0
    while times:
        if times & 1:
            out, out_len = crc32_combine(out, crc, length), out_len + length
        crc, length, times = crc32_combine(crc, crc, length), length * 2, times >> 1
    return out


def gzip_bomb(head: bytes, fill: bytes, total: int) -> bytes:
    """A valid gzip member: `head`, then `fill` repeated to about `total` bytes.
    One ~1 MiB block of fill is deflated once and its bytes repeated: after a
    full flush a deflate block refers to nothing before it, so copies concatenate."""
    key = (fill, total)
    if key not in _bomb_tails:
        chunk = fill * max(1, (1 << 20) // len(fill))
        comp = zlib.compressobj(9, zlib.DEFLATED, -15, 9)
        block = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
        times = max(1, total // len(chunk))
        end = zlib.compressobj(9, zlib.DEFLATED, -15).flush()  # an empty final block
        crc = _crc_repeated(zlib.crc32(chunk), len(chunk), times)
        _bomb_tails[key] = (block * times + end, crc, len(chunk) * times)
    tail, tail_crc, tail_len = _bomb_tails[key]
    comp = zlib.compressobj(6, zlib.DEFLATED, -15)
    body = comp.compress(head) + comp.flush(zlib.Z_FULL_FLUSH)
    crc = crc32_combine(zlib.crc32(head), tail_crc, tail_len)
    return GZIP_HEADER + body + tail + struct.pack("<II", crc, (len(head) + tail_len) & 0xFFFFFFFF)


# ---------------------------------------------------------------- protobuf wire walking


@dataclasses.dataclass(frozen=True)
class Field:
    tag_start: int
    num: int
    wt: int
    tag_end: int  # wire type 2: the length prefix is data[tag_end:start]
    start: int  # the value (wire type 2: the payload)
    end: int


def _read_varint(b: bytes, i: int, end: int) -> tuple[int, int]:
    n = shift = 0
    while i < end and shift < 70:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        if not c & 0x80:
            return n, i
        shift += 7
    raise ValueError


def parse_message(b: bytes, start: int, end: int) -> list[Field] | None:
    """The fields of wire data b[start:end], or None when it is not a message."""
    fields, i = [], start
    try:
        while i < end:
            key, j = _read_varint(b, i, end)
            num, wt = key >> 3, key & 7
            if num < 1 or num >= 1 << 29:
                return None
            if wt == 0:
                _, k = _read_varint(b, j, end)
                fields.append(Field(i, num, wt, j, j, k))
            elif wt in (1, 5):
                k = j + (8 if wt == 1 else 4)
                if k > end:
                    return None
                fields.append(Field(i, num, wt, j, j, k))
            elif wt == 2:
                n, h = _read_varint(b, j, end)
                if h + n > end:
                    return None
                k = h + n
                fields.append(Field(i, num, wt, j, h, k))
            else:
                return None
            i = k
    except ValueError:
        return None
    return fields


class Wire:
    """Protobuf data with its messages parsed lazily (cached per span)."""

    def __init__(self, data: bytes):
        self.data = data
        self._cache: dict[tuple[int, int], list[Field] | None] = {}

    def fields(self, start: int, end: int) -> list[Field] | None:
        key = (start, end)
        if key not in self._cache:
            self._cache[key] = parse_message(self.data, start, end) if end - start > 0 else None
        return self._cache[key]

    def path(self, rng: random.Random, want=lambda f: True, tries: int = 30) -> list[Field] | None:
        """A random chain of fields from the top level down, ending in one `want` accepts."""
        top = self.fields(0, len(self.data))
        if not top:
            return None
        for _ in range(tries):
            path, fields = [], top
            while True:
                f = rng.choice(fields)
                path.append(f)
                if f.wt == 2 and rng.random() < 0.75 and (sub := self.fields(f.start, f.end)):
                    fields = sub
                    continue
                break
            for k in range(len(path), 0, -1):
                if want(path[k - 1]):
                    return path[:k]
        return None

    def replace(self, path: list[Field], new: bytes, fix_lengths: bool = True) -> bytes:
        """The data with path[-1]'s whole encoding replaced by `new`; the enclosing
        messages' lengths are rewritten (or left lying)."""
        d, cur = self.data, new
        for child, parent in zip(reversed(path[1:]), reversed(path[:-1])):
            payload = d[parent.start:child.tag_start] + cur + d[child.end:parent.end]
            length = varint(len(payload)) if fix_lengths else d[parent.tag_end:parent.start]
            cur = d[parent.tag_start:parent.tag_end] + length + payload
        top = path[0]
        return d[:top.tag_start] + cur + d[top.end:]


def tag(num: int, wt: int) -> bytes:
    return varint((num << 3) | wt)


def nested(chain: list[bytes], depth: int, inner: bytes) -> bytes:
    """inner wrapped in `chain` tags repeated `depth` times, lengths right, in O(size)."""
    tags = chain * depth
    lengths, n = [], len(inner)
    for t in reversed(tags):
        lengths.append(n)
        n += len(t) + len(varint(n))
    heads = [t + varint(length) for t, length in zip(tags, reversed(lengths))]
    return b"".join(heads) + inner


# ---------------------------------------------------------------- interesting values

BIG_VARINTS = [0, 1, 2**31 - 1, 2**31, 2**32, 2**32 + 1, 2**53 + 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1, -1, -2**31]
FIXED64 = [struct.pack("<d", v) for v in (float("nan"), float("inf"), -float("inf"), 1e308, -0.0, 5e-324)] + [
    b"\xff" * 8, b"\x00" * 8, struct.pack("<q", -2**63), struct.pack("<q", 2**63 - 1)]
FIXED32 = [struct.pack("<f", v) for v in (float("nan"), float("inf"), -float("inf"), 3e38)] + [b"\xff" * 4, b"\x00" * 4]
NUMBERS = [b"99999999999999999999999999999", b"-9223372036854775809", b"9223372036854775808", b"18446744073709551616",
           b"-1", b"-0", b"0", b"1e400", b"-1e400", b"1e-400", b"1.7976931348623157e308", b"4294967296", b"2147483648",
           b"9007199254740993", b"123456789012345678901234567890.5", b"1" * 5000, b"1e99999999999", b"0.000000001",
           b"-2147483649", b"9223372036854775807"]
TEXT_NUMBERS = NUMBERS + [b"nan", b"inf", b"-inf", b"0x7fffffffffffffff", b"0xffffffffffffffffff", b"1.5", b"1f",
                          b"0777", b"-", b"+5", b"1e", b"true"]
BAD_STRINGS = [b"\xff\xfe", b"\xc0\x80", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x80", b"a\x00b", b"\xe2\x82",
               b"\\ud800", b"\\udfff\\ud800", b"\\u00", b"\\x41", b"\\", b"\\777", b"\\xzz", b"\\u0000",
               b"x" * 100000, b"\xef\xbf\xbf" * 50]
JSON_VALUES = [b"null", b"true", b"[]", b"{}", b'""', b'"x"', b"[[[]]]", b'{"a":{}}', b"NaN", b"Infinity",
               b"-Infinity", b'"NaN"', b'"-1"', b'"99999999999999999999"', b'"1e400"', b"[1,2,3]", b'"\\ud800"',
               b"0", b"-1", b"1e400", b"18446744073709551616", b"-9223372036854775809", b'"\xff"', b"tru", b'"']
PHASES = [b'"B"', b'"E"', b'"X"', b'"i"', b'"I"', b'"s"', b'"t"', b'"f"', b'"b"', b'"e"', b'"n"', b'"C"', b'"M"',
          b'"P"', b'"O"', b'"N"', b'"D"', b'"("', b'")"', b'""', b'"XX"', b'"\\u0000"', b"1"]

# ---------------------------------------------------------------- seeds


@dataclasses.dataclass
class Seed:
    reader: str
    name: str  # where it came from (tests/data relative)
    kind: str  # proto, tfrecord, json, pbtxt, log, logdir, pickle
    data: bytes  # the payload (gunzipped)
    gz: bool  # stored gzipped
    names: list[str]  # realistic case paths (relative, without .gz)
    gz_names: bool = True  # the format also takes the name with .gz
    companions: dict[str, bytes] = dataclasses.field(default_factory=dict)  # other files beside it
    tree: dict[str, bytes] = dataclasses.field(default_factory=dict)  # kind logdir: relpath -> bytes


READERS = ("xspace", "memory_profile", "step_stats", "event_file", "hparams", "log_memory", "chrome_trace",
           "torch_snapshot")


def _gunzip(path: Path) -> tuple[bytes, bool]:
    raw = path.read_bytes()
    return (gzip.decompress(raw), True) if raw[:2] == b"\x1f\x8b" else (raw, False)


def load_seeds(data: Path = DATA) -> list[Seed]:
    """Every seed, in a fixed order. Binary MemoryProfile and StepStats seeds are made
    from the JSON / text ones with the real schema (tests/data has none)."""
    from google.protobuf import json_format, text_format

    from profscope.protos import memory_profile_pb2, step_stats_pb2

    seeds: list[Seed] = []
    profile = f"logs/plugins/profile/{SESSION}"
    for name in ("small", "jax", "keras"):
        d = (data / f"xprof/{name}.xplane.pb").read_bytes()
        seeds.append(Seed("xspace", f"xprof/{name}.xplane.pb", "proto", d, False,
                          [f"{profile}/vm.xplane.pb", "run1/worker-0.xplane.pb", "vm.xplane.pb"], gz_names=False))
    xspaces = [s.data for s in seeds]
    seeds[0].companions = {"worker-1.xplane.pb": xspaces[1]}  # a second host: the combined timeline

    small_json = (data / "xprof/small.memory_profile.json").read_bytes()
    seeds.append(Seed("memory_profile", "xprof/small.memory_profile.json", "json", small_json, False,
                      [f"{SESSION}/vm.memory_profile.json", "mem/profile.json"]))
    keras, _ = _gunzip(data / "xprof/keras.memory_profile.json.gz")
    seeds.append(Seed("memory_profile", "xprof/keras.memory_profile.json.gz", "json", keras, True,
                      [f"{SESSION}/vm.memory_profile.json", "mem/keras.json"]))
    msg = json_format.Parse(small_json, memory_profile_pb2.MemoryProfile(), ignore_unknown_fields=True)
    seeds.append(Seed("memory_profile", "xprof/small.memory_profile.json as binary", "proto", msg.SerializeToString(),
                      False, [f"{SESSION}/vm.memory_profile.pb", "mem/profile.pb"]))
    old, _ = _gunzip(data / "xprof/keras.xprof-2.20.0.memory_profile.json.gz")  # no hloModules
    seeds.append(Seed("memory_profile", "xprof/keras.xprof-2.20.0.memory_profile.json.gz", "json", old, True,
                      [f"{SESSION}/vm.memory_profile.json", "mem/keras-2.20.json"]))
    # Version 1 with the sampled list only: the table's rows point into a list the file lacks.
    sampled_only = json.loads(small_json)
    for allocator in sampled_only["memoryProfilePerAllocator"].values():
        del allocator["memoryProfileSnapshots"]
    seeds.append(Seed("memory_profile", "xprof/small.memory_profile.json without memoryProfileSnapshots", "json",
                      json.dumps(sampled_only).encode(), False, [f"{SESSION}/vm.memory_profile.json", "mem/v1.json"]))

    for name in ("run_metadata.pb", "run_metadata.pbtxt", "step_stats.pbtxt"):
        d = (data / "step_stats" / name).read_bytes()
        kind = "proto" if name.endswith(".pb") else "pbtxt"
        stem, ext = name.rsplit(".", 1)
        seeds.append(Seed("step_stats", f"step_stats/{name}", kind, d, False,
                          [f"run/vm.{ext}", f"traces/{stem}.{ext}", f"run/worker.{'txt' if kind == 'pbtxt' else ext}"]))
    stats = text_format.Parse((data / "step_stats/step_stats.pbtxt").read_bytes(), step_stats_pb2.StepStats())
    seeds.append(Seed("step_stats", "step_stats/step_stats.pbtxt as binary", "proto", stats.SerializeToString(), False,
                      ["run/vm.pb", "traces/step_stats.pb"]))

    events = data / "step_stats/events.out.tfevents.1795317160.vm"
    seeds.append(Seed("event_file", "step_stats/" + events.name, "tfrecord", events.read_bytes(), False,
                      ["logs/train/events.out.tfevents.1795317160.vm", "logs/events.out.tfevents.1795317161.host-a.v2"],
                      gz_names=False))

    for logdir in sorted(p for p in (data / "hparams").iterdir() if p.is_dir() and p.name != "producers"):
        tree = {f"logs/{logdir.name}/{p.relative_to(logdir).as_posix()}": p.read_bytes()
                for p in sorted(logdir.rglob("*")) if p.is_file()}
        seeds.append(Seed("hparams", f"hparams/{logdir.name}", "logdir", b"", False, [f"logs/{logdir.name}"],
                          gz_names=False, tree=tree))

    for name in ("eager-cpu.log", "eager-onednn.log.gz", "graph-bfc-onednn.log.gz", "graph-cpu.log.gz"):
        d, gz = _gunzip(data / "log_memory" / name)
        seeds.append(Seed("log_memory", f"log_memory/{name}", "log", d, gz,
                          ["job/train.log", "job/worker-0.err", "job/stderr.txt", "job/output", "job/run.out"]))

    chrome = [("chrome_trace/train.pt.trace.json.gz", ["traces/vm.pt.trace.json", "traces/train.json"]),
              ("chrome_trace/gpu/rank-0.json.gz", ["ranks/rank-0.json"]),
              ("chrome_trace/gpu/rank-1.json.gz", ["ranks/rank-1.json"]),
              ("chrome_trace/gpu_memory/gpu_memory.pt.trace.json.gz", ["traces/gpu_memory.pt.trace.json"]),
              ("chrome_trace/jax/perfetto_trace.json.gz", ["jax/perfetto_trace.json", "jax/vm.trace.json"]),
              ("chrome_trace/two_ranks/rank-0.json.gz", ["ranks/rank-0.json"]),
              ("chrome_trace/two_ranks/rank-1.json.gz", ["ranks/rank-1.json"]),
              ("xprof/small.trace_viewer.json.gz", [f"{SESSION}/vm.trace.json", "traces/small.json"]),
              ("xprof/jax.trace_viewer.json.gz", [f"{SESSION}/vm.trace.json"]),
              ("step_stats/timeline.json", ["traces/timeline.json", "traces/vm.trace.json"]),
              # older and other vendors' Kineto: PyTorch 1.8's categories on V100s, ROCm 6.2 on an MI250
              ("chrome_trace/pytorch_1.8/gpu_metrics_input.json.gz", ["traces/worker0.pt.trace.json"]),
              ("chrome_trace/rocm_mi250/mi250_minitoy_train_ROCm6_2_kineto.json.gz", ["traces/mi250.json"]),
              # files that only look like profiles: each must be refused with its reason, never read as one
              ("not_profiles/benchmark_simple_add_et.json.gz", ["traces/simple_add_et.json"]),
              ("not_profiles/config.json", ["traces/config.json"])]
    for name, names in chrome:
        d, gz = _gunzip(data / name)
        seeds.append(Seed("chrome_trace", name, "json", d, gz, names))
    for name in ("typed_snapshot.pickle", "profile_snapshot.pickle"):  # PyTorch CUDA memory snapshots
        d = (data / "torch_snapshot" / name).read_bytes()
        seeds.append(Seed("torch_snapshot", f"torch_snapshot/{name}", "pickle", d, False,
                          ["snapshots/rank0.pickle", "snap/memory.bin", "snapshot.pkl"], gz_names=False))
        plain = _plain_pickle(d)  # the same data as protocol 2 lays it out (BINPUT, BINUNICODE, no FRAME)
        seeds.append(Seed("torch_snapshot", f"torch_snapshot/{name} as protocol 2", "pickle",
                          pickle.dumps(plain, protocol=2), False, ["snapshots/rank1.pickle"], gz_names=False))
    by_name = {s.name: s for s in seeds}
    for pair in ("gpu", "two_ranks"):  # the other rank beside: one session, ranks on one axis
        a, b = by_name[f"chrome_trace/{pair}/rank-0.json.gz"], by_name[f"chrome_trace/{pair}/rank-1.json.gz"]
        a.companions = {"rank-1.json.gz": gzip.compress(b.data, mtime=0)}
        b.companions = {"rank-0.json.gz": gzip.compress(a.data, mtime=0)}
    return seeds


def _plain_pickle(data: bytes):
    from profscope.models.core.safe_pickle import loads  # never pickle.loads: the seeds are files

    return loads(data)


# ---------------------------------------------------------------- mutators


class Mutation:
    """Context of one case's mutations: its random source, the seeds (to splice
    from) and the names of what was done."""

    def __init__(self, rng: random.Random, seeds: list[Seed], wires: dict[int, Wire]):
        self.rng, self.seeds, self._wires, self.done = rng, seeds, wires, []

    def wire(self, data: bytes) -> Wire:
        w = self._wires.get(id(data))
        return w if w is not None and w.data is data else Wire(data)

    def other(self) -> bytes:
        s = self.rng.choice(self.seeds)
        return s.data if s.kind != "logdir" else self.rng.choice(list(s.tree.values()))

    def size(self, budget: int = MAX_INPUT // 2) -> int:
        """A repeat count / depth: mostly moderate, sometimes as deep as the budget allows."""
        return self.rng.choice([2, 10, 100, 101, 1000, 5000, 20000, 100000, budget])

    def depth(self) -> int:
        """A nesting depth: past every recursion limit (100, 1,000), up to 10^5."""
        return self.rng.choice([64, 100, 101, 200, 1000, 1001, 5000, 20000, 100000])


def _span(rng: random.Random, n: int, most: int | None = None) -> tuple[int, int]:
    a = rng.randrange(n + 1)
    length = rng.choice([1, 2, 4, 8, 16, 64, 256, 4096, n])
    if most:
        length = min(length, most)
    return a, min(n, a + length)


# bytes


def m_truncate(m: Mutation, d: bytes) -> bytes:
    return d[: m.rng.randrange(len(d) + 1)] if m.rng.random() < 0.7 else d[m.rng.randrange(len(d) + 1):]


def m_flip(m: Mutation, d: bytes) -> bytes:
    b = bytearray(d)
    for _ in range(m.rng.choice([1, 1, 2, 4, 16])):
        if b:
            b[m.rng.randrange(len(b))] ^= 1 << m.rng.randrange(8)
    return bytes(b)


def m_insert(m: Mutation, d: bytes) -> bytes:
    i = m.rng.randrange(len(d) + 1)
    junk = m.rng.choice([bytes(m.rng.randrange(256) for _ in range(m.rng.choice([1, 4, 32]))), b"\x00" * 64,
                         b"\xff" * 16, m.rng.choice(BAD_STRINGS), b"\n", b"{", b"}", b"[", b"]", b'"', b","])
    return d[:i] + junk + d[i:]


def m_delete(m: Mutation, d: bytes) -> bytes:
    a, b = _span(m.rng, len(d))
    return d[:a] + d[b:]


def m_splice(m: Mutation, d: bytes) -> bytes:
    o = m.other()
    if m.rng.random() < 0.5:  # the head of this file, the tail of another
        return d[: m.rng.randrange(len(d) + 1)] + o[m.rng.randrange(len(o) + 1):]
    a, b = _span(m.rng, len(o), 65536)
    i = m.rng.randrange(len(d) + 1)
    return d[:i] + o[a:b] + d[i:]


def m_repeat(m: Mutation, d: bytes) -> bytes:
    a, b = _span(m.rng, len(d), 4096)
    if b <= a:
        return d
    times = min(m.size(), MAX_INPUT // (2 * (b - a)) + 1)
    return d[:a] + d[a:b] * times + d[b:]


def m_zero(m: Mutation, d: bytes) -> bytes:
    a, b = _span(m.rng, len(d))
    return d[:a] + m.rng.choice([b"\x00", b"\xff", b" "]) * (b - a) + d[b:]


BYTE_MUTATORS = [m_truncate, m_flip, m_insert, m_delete, m_splice, m_repeat, m_zero]

# protobuf


def _is(wt):
    return lambda f: f.wt == wt


def p_varint(m: Mutation, d: bytes) -> bytes | None:
    w = m.wire(d)
    if not (p := w.path(m.rng, _is(0))):
        return None
    f = p[-1]
    return w.replace(p, d[f.tag_start:f.tag_end] + varint(m.rng.choice(BIG_VARINTS)))


def p_fixed(m: Mutation, d: bytes) -> bytes | None:
    w = m.wire(d)
    if not (p := w.path(m.rng, lambda f: f.wt in (1, 5))):
        return None
    f = p[-1]
    return w.replace(p, d[f.tag_start:f.tag_end] + m.rng.choice(FIXED64 if f.wt == 1 else FIXED32))


def p_length(m: Mutation, d: bytes) -> bytes | None:
    """A length prefix that lies (huge, negative, off by one) or is overlong."""
    w = m.wire(d)
    if not (p := w.path(m.rng, _is(2))):
        return None
    f = p[-1]
    n = f.end - f.start
    head = d[f.tag_start:f.tag_end]
    if m.rng.random() < 0.15:  # the right length in 10 bytes, or more than 10
        length = bytes([(n & 0x7F) | 0x80]) + b"\x80" * m.rng.choice([8, 9, 12]) + b"\x00"
    else:
        length = varint(m.rng.choice([n + 1, n - 1, n + 2, 0, 2**31, 2**32 + n, 2**63 - 1, 2**64 - 1, -1, -n,
                                      n + m.rng.randrange(1, 1000), len(d) + 1]))
    return w.replace(p, head + length + d[f.start:f.end], fix_lengths=m.rng.random() < 0.7)


def p_wire_type(m: Mutation, d: bytes) -> bytes | None:
    w = m.wire(d)
    if not (p := w.path(m.rng)):
        return None
    f = p[-1]
    new = m.rng.choice([t for t in range(8) if t != f.wt])
    return w.replace(p, tag(f.num, new) + d[f.tag_end:f.end])


def p_field_number(m: Mutation, d: bytes) -> bytes | None:
    w = m.wire(d)
    if not (p := w.path(m.rng)):
        return None
    f = p[-1]
    num = m.rng.choice([0, 2**29 - 1, 19000, f.num + 1, max(1, f.num - 1), m.rng.randrange(1, 20)])
    return w.replace(p, tag(num, f.wt) + d[f.tag_end:f.end])


def p_nest(m: Mutation, d: bytes) -> bytes | None:
    """A message nested inside itself: the chain of tags from an ancestor down to
    a submessage repeated thousands of times (true recursion when the schema
    is recursive, deep garbage otherwise)."""
    w = m.wire(d)
    if not (p := w.path(m.rng, lambda f: f.wt == 2 and w.fields(f.start, f.end))):
        return None
    i = m.rng.randrange(len(p))
    chain = [d[f.tag_start:f.tag_end] for f in p[i:]]
    f = p[-1]
    depth = max(2, min(m.depth(), MAX_INPUT // 2 // (sum(map(len, chain)) + 3 * len(chain))))
    inner = d[f.start:f.end] if m.rng.random() < 0.7 else b""
    return w.replace(p, chain[-1] + varint(0) if False else nested(chain, depth, inner)[0:0] +
                     nested(chain[-1:] + chain[:-1], depth, inner)[: None])


def p_duplicate(m: Mutation, d: bytes) -> bytes | None:
    w = m.wire(d)
    if not (p := w.path(m.rng)):
        return None
    f = p[-1]
    times = max(2, min(m.size(), MAX_INPUT // 2 // max(1, f.end - f.tag_start)))
    return w.replace(p, d[f.tag_start:f.end] * times)


def p_drop(m: Mutation, d: bytes) -> bytes | None:
    w = m.wire(d)
    return w.replace(p, b"") if (p := w.path(m.rng)) else None


def p_swap(m: Mutation, d: bytes) -> bytes | None:
    """A length-delimited payload replaced by another one (of this file or another seed)."""
    w = m.wire(d)
    if not (p := w.path(m.rng, _is(2))):
        return None
    f = p[-1]
    if m.rng.random() < 0.5 and (q := w.path(m.rng, _is(2))):
        payload = d[q[-1].start:q[-1].end]
    else:
        o = m.other()
        a, b = _span(m.rng, len(o), 65536)
        payload = o[a:b]
    return w.replace(p, d[f.tag_start:f.tag_end] + varint(len(payload)) + payload)


def p_string(m: Mutation, d: bytes) -> bytes | None:
    w = m.wire(d)
    if not (p := w.path(m.rng, lambda f: f.wt == 2 and not w.fields(f.start, f.end))):
        return None
    f = p[-1]
    s = m.rng.choice(BAD_STRINGS + [b"", d[f.start:f.end] * 1000])[: MAX_INPUT // 2]
    return w.replace(p, d[f.tag_start:f.tag_end] + varint(len(s)) + s)


def p_cut(m: Mutation, d: bytes) -> bytes | None:
    """A submessage ending in the middle of a field (enclosing lengths fixed)."""
    w = m.wire(d)
    if not (p := w.path(m.rng)):
        return None
    f = p[-1]
    return w.replace(p, d[f.tag_start:m.rng.randrange(f.tag_start + 1, f.end + 1)])


PROTO_MUTATORS = [p_varint, p_varint, p_fixed, p_length, p_length, p_wire_type, p_field_number, p_nest, p_nest,
                  p_duplicate, p_drop, p_swap, p_string, p_cut]

# TFRecord


def _record(m: Mutation, d: bytes):
    recs = tfrecords(d)
    return (recs, m.rng.randrange(len(recs))) if recs else (recs, None)


def t_payload(m: Mutation, d: bytes) -> bytes | None:
    """A record's payload mutated, with valid CRCs around it."""
    recs, k = _record(m, d)
    if k is None:
        return None
    # Records holding plugin data (HParams) or run metadata first: that is where the readers look deepest.
    rich = [i for i, (a, b) in enumerate(recs) if b"_hparams_" in d[a:b] or b"step_" in d[a:b]]
    if rich and m.rng.random() < 0.7:
        k = m.rng.choice(rich)
    a, b = recs[k]
    payload = d[a + 12:b - 4]
    new = None
    for _ in range(3):
        fn = m.rng.choice(PROTO_MUTATORS if m.rng.random() < 0.75 else BYTE_MUTATORS)
        new = fn(m, payload)
        if new is not None:
            m.done.append(fn.__name__)
            break
    if new is None:
        return None
    return d[:a] + tfrecord(new) + d[b:]


def t_length(m: Mutation, d: bytes) -> bytes | None:
    recs, k = _record(m, d)
    if k is None:
        return None
    a, b = recs[k]
    n = b - a - 16
    lie = m.rng.choice([n + 1, n - 1, 0, 2**31, 2**32, 2**63 - 1, 2**64 - 1, len(d), n + 12])
    head = struct.pack("<Q", lie & 0xFFFFFFFFFFFFFFFF)
    return d[:a] + head + struct.pack("<I", masked_crc32c(head)) + d[a + 12:]


def t_garbage(m: Mutation, d: bytes) -> bytes | None:
    """A record of garbage (random bytes, another seed, a piece of this file) with valid CRCs."""
    recs = tfrecords(d)
    at = m.rng.choice([a for a, _ in recs] + [len(d)])
    o = m.other()
    a, b = _span(m.rng, len(o), 65536)
    payload = m.rng.choice([bytes(m.rng.randrange(256) for _ in range(m.rng.randrange(64))), o[a:b], b"",
                            d[a:b] if b <= len(d) else b"\x08"])
    return d[:at] + tfrecord(payload) + d[at:]


def t_records(m: Mutation, d: bytes) -> bytes | None:
    """Records duplicated, dropped, reordered, or taken from another event file."""
    recs = tfrecords(d)
    if not recs:
        return None
    items = [d[a:b] for a, b in recs]
    tail = d[recs[-1][1]:]
    op = m.rng.randrange(4)
    k = m.rng.randrange(len(items))
    if op == 0:
        items[k:k + 1] = [items[k]] * max(2, min(m.size(), MAX_INPUT // 2 // len(items[k])))
    elif op == 1:
        del items[k]
    elif op == 2:
        m.rng.shuffle(items)
    else:
        other = m.rng.choice([s for s in m.seeds if s.kind in ("tfrecord", "logdir")])
        data = other.data if other.kind == "tfrecord" else m.rng.choice(list(other.tree.values()))
        extra = [data[a:b] for a, b in tfrecords(data)]
        items[k:k] = extra[: m.rng.randrange(1, len(extra) + 1)] if extra else []
    return b"".join(items) + tail


def t_crc(m: Mutation, d: bytes) -> bytes | None:
    recs, k = _record(m, d)
    if k is None:
        return None
    a, b = recs[k]
    at = m.rng.choice([a + 8, b - 4])
    return d[:at] + struct.pack("<I", m.rng.randrange(2**32)) + d[at + 4:]


def t_partial(m: Mutation, d: bytes) -> bytes | None:
    recs = tfrecords(d)
    if not recs:
        return None
    a, b = recs[-1]
    return d[: m.rng.randrange(a, b)]


TFRECORD_MUTATORS = [t_payload, t_payload, t_payload, t_payload, t_length, t_garbage, t_records, t_crc, t_partial]

# JSON

JSON_SCALAR = re.compile(rb'"((?:[^"\\\n]|\\.){0,80}+)"\s*+:\s*+'
                         rb'("(?:[^"\\\n]|\\.){0,2048}+"|-?[0-9][0-9.eE+-]*+|true|false|null)')
WINDOW = 1 << 17  # mutated text is searched in a window this big: any regex can be slow on some text
_json_spans: dict[int, tuple[bytes, list[tuple[int, int, int, int]]]] = {}


def _scalars(d: bytes, m: Mutation | None = None) -> list[tuple[int, int, int, int]]:
    """(key start, key end, value start, value end) of `"key": scalar` pairs: all of a
    seed's (cached), or those in a random window of mutated text."""
    hit = _json_spans.get(id(d))
    if hit is not None and hit[0] is d:
        return hit[1]
    at = m.rng.randrange(max(1, len(d) - WINDOW)) if m and len(d) > WINDOW else 0
    spans = [(x.start(1) + at, x.end(1) + at, x.start(2) + at, x.end(2) + at)
             for x in JSON_SCALAR.finditer(d[at:at + WINDOW] if m else d)]
    if m is None:
        _json_spans[id(d)] = (d, spans)
    return spans


def j_nest(m: Mutation, d: bytes) -> bytes | None:
    """A value wrapped in tens of thousands of arrays or objects (closed or not)."""
    spans = _scalars(d, m)
    if not spans:
        return None
    _, _, a, b = m.rng.choice(spans)
    opener, closer = m.rng.choice([(b"[", b"]"), (b'{"a":', b"}"), (b'{"args":', b"}"), (b"[0,", b"]")])
    depth = max(2, min(m.rng.choice([m.depth(), MAX_INPUT // 2]), MAX_INPUT // 2 // len(opener)))
    close = closer * depth if m.rng.random() < 0.7 else b""
    return d[:a] + opener * depth + d[a:b] + close + d[b:]


def j_value(m: Mutation, d: bytes) -> bytes | None:
    """A scalar replaced by an interesting value (by key for Chrome events' fields)."""
    spans = _scalars(d, m)
    if not spans:
        return None
    k0, k1, a, b = m.rng.choice(spans)
    key = d[k0:k1]
    if key == b"ph" and m.rng.random() < 0.7:
        value = m.rng.choice(PHASES)
    elif d[a:a + 1] in b'-0123456789' or d[a + 1:a + 2].isdigit():
        number = m.rng.choice(NUMBERS)
        value = b'"' + number + b'"' if d[a:a + 1] == b'"' and m.rng.random() < 0.7 else number
    else:
        value = m.rng.choice(JSON_VALUES)
    return d[:a] + value + d[b:]


def j_key(m: Mutation, d: bytes) -> bytes | None:
    spans = _scalars(d, m)
    if not spans:
        return None
    k0, k1, _, _ = m.rng.choice(spans)
    other = m.rng.choice(spans)
    new = m.rng.choice([d[other[0]:other[1]], b"", m.rng.choice(BAD_STRINGS)[:200], b"ph", b"ts", b"dur", b"args",
                        b"traceEvents", b"memoryProfilePerAllocator", b"displayTimeUnit", b"id", b"bind_id"])
    return d[:k0] + new + d[k1:]


def j_string(m: Mutation, d: bytes) -> bytes | None:
    spans = [s for s in _scalars(d, m) if d[s[2]:s[2] + 1] == b'"']
    if not spans:
        return None
    _, _, a, b = m.rng.choice(spans)
    i = m.rng.randrange(a + 1, b) if b - a > 1 else a + 1
    return d[:i] + m.rng.choice(BAD_STRINGS) + d[i:]


def j_structure(m: Mutation, d: bytes) -> bytes | None:
    """A bracket or brace removed, doubled or swapped for its other kind."""
    marks = [i for i in (m.rng.randrange(len(d)) for _ in range(64)) if d[i:i + 1] in b"[]{},:"]
    if not marks:
        return None
    i = marks[0]
    c = d[i:i + 1]
    new = m.rng.choice([b"", c * 2, {b"[": b"{", b"{": b"[", b"]": b"}", b"}": b"]"}.get(c, b":"), b",,"])
    return d[:i] + new + d[i + 1:]


JSON_MUTATORS = [j_nest, j_nest, j_value, j_value, j_value, j_key, j_string, j_structure]

# protobuf text format (StepStats .pbtxt and LogMemory payloads)

# Word boundaries and possessive quantifiers: mutated text holds 10^5-long words, which
# plain `(\w+)\s*:` would rescan from every position (quadratic).
PBTXT_NUMBER = re.compile(rb"\b(\w++)\s*+:\s*+(-?[0-9][0-9.eE+-xX]*+|-?inf|nan)")
PBTXT_STRING = re.compile(rb'"(?:[^"\\\n]|\\.){0,512}+"')
PBTXT_MESSAGE = re.compile(rb"\b(\w++)\s*+\{")
PBTXT_FIELD = re.compile(rb"(?m)^[ \t]*+(\w++)[ \t]*+[:{]|(?<=[ {])(\w++)\s*+[:{]")


class _Shifted:
    """A match found in a window, with positions in the whole text."""

    def __init__(self, match: re.Match, at: int):
        self.match, self.at = match, at

    def start(self, g=0) -> int:
        return self.match.start(g) + self.at

    def end(self, g=0) -> int:
        return self.match.end(g) + self.at

    def group(self, g=0):
        return self.match.group(g)


def _pick(m: Mutation, pattern: re.Pattern, d: bytes, limit: int = 4000) -> _Shifted | None:
    """A random match among the first `limit` in a random window of the text."""
    at = m.rng.randrange(len(d) - WINDOW) if len(d) > WINDOW else 0
    found = []
    for x in pattern.finditer(d[at:at + WINDOW]):
        found.append(x)
        if len(found) >= limit:
            break
    return _Shifted(m.rng.choice(found), at) if found else None


def x_nest(m: Mutation, d: bytes) -> bytes | None:
    """Messages nested tens of thousands deep before a field: a known message name
    of the file, an unknown one, or `[ext] {` (closed or not)."""
    at = _pick(m, PBTXT_FIELD, d)
    if at is None:
        return None
    names = [x.group(1) for x in PBTXT_MESSAGE.finditer(d[:WINDOW])][:200] or [b"x"]
    name = m.rng.choice(names + [b"x", b"unknown_field", b"[a.b]", b"tensor", b"shape", b"dim"])
    opener = name + m.rng.choice([b" { ", b" {", b": {", b" < "])
    closer = b"} " if b"{" in opener else b"> "
    depth = max(2, min(m.rng.choice([m.depth(), MAX_INPUT // 2]), MAX_INPUT // 2 // len(opener)))
    i = at.start()
    close = closer * depth if m.rng.random() < 0.6 else b""
    return d[:i] + b" " + opener * depth + close + d[i:]


def x_number(m: Mutation, d: bytes) -> bytes | None:
    x = _pick(m, PBTXT_NUMBER, d)
    if x is None:
        return None
    return d[:x.start(2)] + m.rng.choice(TEXT_NUMBERS) + d[x.end(2):]


def x_string(m: Mutation, d: bytes) -> bytes | None:
    x = _pick(m, PBTXT_STRING, d)
    if x is None:
        return None
    i = m.rng.randrange(x.start() + 1, x.end())
    return d[:i] + m.rng.choice(BAD_STRINGS) + d[i:]


def x_name(m: Mutation, d: bytes) -> bytes | None:
    """A field name swapped for another of the file (wrong type) or an unknown one."""
    x = _pick(m, PBTXT_FIELD, d)
    y = _pick(m, PBTXT_FIELD, d)
    if x is None or y is None:
        return None
    g = 1 if x.group(1) is not None else 2
    other = y.group(1) or y.group(2)
    return d[:x.start(g)] + m.rng.choice([other, b"x", b"[x]", b"", b"9"]) + d[x.end(g):]


def x_brace(m: Mutation, d: bytes) -> bytes | None:
    marks = [i for i in (m.rng.randrange(len(d)) for _ in range(200)) if d[i:i + 1] in b"{}:<>[]"]
    if not marks:
        return None
    i = marks[0]
    return d[:i] + m.rng.choice([b"", b"{", b"}", b"}}", b"[", b"[[[", b":"]) + d[i + 1:]


def x_list(m: Mutation, d: bytes) -> bytes | None:
    """A scalar field given as a long repeated-field list."""
    x = _pick(m, PBTXT_NUMBER, d)
    if x is None:
        return None
    n = max(2, min(m.size(), MAX_INPUT // 4))
    return d[:x.start(2)] + b"[" + b"1," * n + b"2]" + d[x.end(2):]


PBTXT_MUTATORS = [x_nest, x_nest, x_number, x_number, x_string, x_name, x_brace, x_list]

# LogMemory logs

LOG_LINE = re.compile(rb"(?m)^(?P<prefix>[^\n]*?)__LOG_MEMORY__ (?P<type>\w+) (?P<payload>[^\n]*)$")
LOG_TYPES = [b"MemoryLogStep", b"MemoryLogTensorAllocation", b"MemoryLogTensorDeallocation", b"MemoryLogTensorOutput",
             b"MemoryLogRawAllocation", b"MemoryLogRawDeallocation", b"Unknown", b""]
_log_lines: dict[int, tuple[bytes, list]] = {}


def _log_line(m: Mutation, d: bytes):
    hit = _log_lines.get(id(d))
    if hit is None or hit[0] is not d:
        hit = (d, [(x.start(), x.start("type"), x.end("type"), x.start("payload"), x.end())
                   for x in LOG_LINE.finditer(d)])
        if len(_log_lines) < 64:
            _log_lines[id(d)] = hit
    return m.rng.choice(hit[1]) if hit[1] else None


def l_payload(m: Mutation, d: bytes) -> bytes | None:
    """A memory line's text_format payload mutated (deep nesting, numbers, strings...)."""
    line = _log_line(m, d)
    if line is None:
        return None
    _, _, _, p0, p1 = line
    fn = m.rng.choice(PBTXT_MUTATORS + PBTXT_MUTATORS[:3])
    new = fn(m, d[p0:p1])
    if new is None:
        return None
    m.done.append(fn.__name__)
    return d[:p0] + new.replace(b"\n", b" ") + d[p1:]


def l_type(m: Mutation, d: bytes) -> bytes | None:
    line = _log_line(m, d)
    if line is None:
        return None
    _, t0, t1, _, _ = line
    return d[:t0] + m.rng.choice(LOG_TYPES) + d[t1:]


def l_prefix(m: Mutation, d: bytes) -> bytes | None:
    """The log prefix's time (absl or Python logging form) made huge, negative or malformed."""
    line = _log_line(m, d)
    if line is None:
        return None
    s, t0, _, _, _ = line
    prefix = d[s:t0]
    numbers = list(re.finditer(rb"\d+(?:\.\d+)?", prefix))
    if not numbers:
        return None
    x = m.rng.choice(numbers)
    new = m.rng.choice(TEXT_NUMBERS + [b"9" * 40 + b".999999", b"00:00:-1", b"99:99:99.99", b"1e400"])
    return d[:s + x.start()] + new + d[s + x.end():]


def l_lines(m: Mutation, d: bytes) -> bytes | None:
    """A memory line repeated many times, lines of another log mixed in, or lines joined."""
    line = _log_line(m, d)
    if line is None:
        return None
    s, _, _, _, e = line
    op = m.rng.randrange(3)
    if op == 0:
        times = max(2, min(m.size(), MAX_INPUT // 2 // (e - s + 1)))
        return d[:e + 1] + (d[s:e + 1] + (b"" if d[e:e + 1] == b"\n" else b"\n")) * times + d[e + 1:]
    if op == 1:
        other = m.rng.choice([x for x in m.seeds if x.kind == "log"]).data
        a, b = _span(m.rng, len(other), 65536)
        return d[:s] + other[a:b] + d[s:]
    return d[:e] + d[e + 1:] if d[e:e + 1] == b"\n" else None


LOG_MUTATORS = [l_payload, l_payload, l_payload, l_payload, l_type, l_prefix, l_lines]

# pickle (CUDA memory snapshots): at opcode boundaries of the valid part


def _opcodes(d: bytes) -> list[tuple[int, str, object]]:
    """(offset, opcode name, argument) of each opcode, as far as the stream parses."""
    import pickletools

    out: list[tuple[int, str, object]] = []
    try:
        for op, arg, pos in pickletools.genops(d):
            out.append((pos, op.name, arg))
    except Exception:  # a mutated stream: its valid head
        pass
    return out


PICKLE_OPS = [b"c", b"\x93", b"R", b"b", b"i", b"o", b"\x81", b"\x92", b"\x82\x01", b"P", b"Q", b"\x8f", b"(", b"0",
              b"1", b"2", b"a", b"e", b"s", b"u", b"t", b"\x85", b".", b"}", b"]", b")", b"N", b"\x88"]


def k_opcode(m: Mutation, d: bytes) -> bytes | None:
    """An opcode put in at a boundary: one that imports or calls, or one that builds (out of place)."""
    ops = _opcodes(d)
    if not ops:
        return None
    at = m.rng.choice(ops)[0]
    return d[:at] + m.rng.choice(PICKLE_OPS) + d[at + (m.rng.random() < 0.5):]


def k_memo(m: Mutation, d: bytes) -> bytes | None:
    """A memo index (get or put) rewritten: absent, huge, another's."""
    ops = [(pos, name) for pos, name, _ in _opcodes(d) if name in ("BINGET", "LONG_BINGET", "BINPUT", "LONG_BINPUT")]
    if not ops:
        return None
    pos, name = m.rng.choice(ops)
    if name.startswith("LONG"):
        return d[:pos + 1] + struct.pack("<I", m.rng.choice([0, 1, 2**32 - 1, 2**31, m.rng.randrange(2**20)])) + \
            d[pos + 5:]
    return d[:pos + 1] + bytes([m.rng.randrange(256)]) + d[pos + 2:]


def k_length(m: Mutation, d: bytes) -> bytes | None:
    """A string's or an integer's length rewritten (huge, zero, off by one)."""
    ops = [(pos, name) for pos, name, _ in _opcodes(d) if name in ("BINUNICODE", "SHORT_BINUNICODE", "LONG1",
                                                                    "BINUNICODE8", "SHORT_BINBYTES", "BINBYTES")]
    if not ops:
        return None
    pos, name = m.rng.choice(ops)
    if name in ("SHORT_BINUNICODE", "LONG1", "SHORT_BINBYTES"):
        return d[:pos + 1] + bytes([m.rng.choice([0, 255, d[pos + 1] + 1, 65, 9])]) + d[pos + 2:]
    width = 8 if name.endswith("8") else 4
    return d[:pos + 1] + m.rng.choice([0, 1, 2**31, 2**32 - 1]).to_bytes(width, "little") + d[pos + 1 + width:]


def k_repeat(m: Mutation, d: bytes) -> bytes | None:
    """A run of opcodes repeated (more entries, more items, marks that never close), or dropped."""
    ops = _opcodes(d)
    if len(ops) < 3:
        return None
    i = m.rng.randrange(len(ops) - 1)
    j = min(len(ops) - 1, i + m.rng.choice([1, 2, 5, 40, 400]))
    a, b = ops[i][0], ops[j][0]
    if m.rng.random() < 0.3:
        return d[:a] + d[b:]
    times = max(1, min(m.size() // max(b - a, 1), m.rng.choice([2, 10, 1000, 100000])))
    return d[:b] + d[a:b] * times + d[b:]


def k_cut(m: Mutation, d: bytes) -> bytes | None:
    """The file cut at an opcode boundary (a snapshot dumped by a process that died)."""
    ops = _opcodes(d)
    return d[:m.rng.choice(ops)[0]] if ops else None


PICKLE_MUTATORS = [k_opcode, k_opcode, k_memo, k_memo, k_length, k_repeat, k_repeat, k_cut]

KIND_MUTATORS = {"proto": PROTO_MUTATORS, "tfrecord": TFRECORD_MUTATORS, "json": JSON_MUTATORS,
                 "pbtxt": PBTXT_MUTATORS, "log": LOG_MUTATORS, "pickle": PICKLE_MUTATORS}

# gzip (on the compressed bytes)


def g_trailer(m: Mutation, d: bytes) -> bytes:
    at = m.rng.choice([len(d) - 8, len(d) - 4])
    return d[:at] + struct.pack("<I", m.rng.choice([0, 0xFFFFFFFF, m.rng.randrange(2**32)])) + d[at + 4:]


def g_members(m: Mutation, d: bytes) -> bytes:
    """Another gzip member after this one, or junk after the member."""
    extra = m.rng.choice([d, gzip.compress(m.other()[:65536], mtime=0), b"\x00" * 16, b"garbage", b"\x1f\x8b",
                          gzip.compress(b"", mtime=0)])
    return d + extra


def g_header(m: Mutation, d: bytes) -> bytes:
    """Header flags (FEXTRA, FNAME, FCOMMENT, FHCRC, reserved) set with or without their fields, or a bad method."""
    flag = m.rng.choice([0x04, 0x08, 0x10, 0x02, 0xE0])
    if m.rng.random() < 0.2:
        return d[:2] + b"\x07" + d[3:]
    extra = m.rng.choice([b"", b"\xff\xff" + b"x" * 16, b"name\x00", b"\x00\x00"])
    return d[:3] + bytes([flag]) + d[4:10] + extra + d[10:]


def g_bomb(m: Mutation, seed: Seed, d: bytes) -> bytes:
    """Under 1 MB of gzip inflating to ~0.25-0.9 GB: zeros, `[` (JSON), `{` or a log line repeated."""
    head = d[: m.rng.choice([0, 16, 200, 4096])]
    fills = [b"\x00", b"["] if seed.kind == "json" else [b"\x00", b"{"] if seed.kind == "pbtxt" else [b"\x00"]
    if seed.kind == "log" and (line := LOG_LINE.search(d)):  # the first memory line: one bomb per seed
        fills.append(line.group() + b"\n")
    fill = m.rng.choice(fills)
    total = m.rng.choice([256 << 20, 900 << 20])
    return gzip_bomb(head, fill, total)


# ---------------------------------------------------------------- cases


@dataclasses.dataclass
class Case:
    index: int
    reader: str
    seed: str
    files: dict[str, bytes]  # relative path -> content
    target: str  # the mutated file (opened on its own)
    logdir: str = ""  # also opened with open_location (HParams log dirs)
    mutations: list[str] = dataclasses.field(default_factory=list)
    plain: bytes | None = None  # the mutated payload before gzip (what the minimiser shrinks)
    gz_level: int = 0

    @property
    def size(self) -> int:
        return max(len(v) for v in self.files.values())


class CaseMaker:
    """Case i of a seed, made from random.Random(f"{seed}/{i}") alone."""

    def __init__(self, seed: int, readers: tuple[str, ...] = READERS, seeds: list[Seed] | None = None):
        self.seed = seed
        self.seeds = seeds if seeds is not None else load_seeds()
        self.readers = tuple(r for r in READERS if r in readers)
        self.by_reader = {r: [s for s in self.seeds if s.reader == r] for r in self.readers}
        self.wires = {id(s.data): Wire(s.data) for s in self.seeds if s.kind == "proto"}
        for s in self.seeds:
            if s.kind == "json":
                _scalars(s.data)  # a seed's pairs found once, in all of it

    def case(self, i: int) -> Case:
        rng = random.Random(f"{self.seed}/{i}")
        reader = self.readers[i % len(self.readers)]
        seed = rng.choice(self.by_reader[reader])
        for _ in range(8):  # a draw that makes an input over 1 MB is drawn again
            case = self._make(rng, i, seed)
            if case.size <= MAX_INPUT:
                return case
        case.files[case.target] = case.files[case.target][:MAX_INPUT]
        case.mutations.append("cut to 1 MB")
        return case

    def _mutate(self, m: Mutation, seed: Seed, data: bytes) -> bytes:
        kind = seed.kind
        for _ in range(m.rng.choice([1, 1, 1, 2, 2, 3])):
            for _ in range(4):
                fn = m.rng.choice(KIND_MUTATORS[kind] if m.rng.random() < 0.75 else BYTE_MUTATORS)
                new = fn(m, data)
                if new is not None and new != data:
                    m.done.append(fn.__name__)
                    data = new
                    break
        return data

    def _make(self, rng: random.Random, i: int, seed: Seed) -> Case:
        m = Mutation(rng, self.seeds, self.wires)
        if seed.kind == "logdir":
            return self._make_logdir(m, i, seed)
        name = rng.choice(seed.names)
        files = {}
        folder = name.rpartition("/")[0]
        for other, content in seed.companions.items():
            if rng.random() < 0.5:
                files[f"{folder}/{other}" if folder else other] = content
        plain, gz, level = seed.data, seed.gz, 0
        r = rng.random()
        if gz and r < 0.3:  # mutate the compressed file itself
            compressed = gzip.compress(seed.data, compresslevel=6, mtime=0)
            fn = rng.choice([g_trailer, g_members, g_header, m_truncate, m_flip, m_delete, m_insert, g_trailer,
                             g_members, g_header, m_truncate, m_flip, m_delete, m_insert, g_bomb])
            data = fn(m, seed, seed.data) if fn is g_bomb else fn(m, compressed)
            m.done.append(fn.__name__)
            plain = None
        elif r < 0.005:  # a bomb even where the name does not say gzip (readers sniff the magic)
            data = g_bomb(m, seed, seed.data)
            m.done.append("g_bomb")
            plain = None
        else:
            plain = self._mutate(m, seed, seed.data)
            if gz or (seed.gz_names and rng.random() < 0.08):
                level = rng.choice([1, 6, 9])
                data = gzip.compress(plain, compresslevel=level, mtime=0)
                m.done.append(f"gzip -{level}")
                gz = True
            else:
                data = plain
        target = name + (".gz" if gz and seed.gz_names else "")
        files[target] = data
        return Case(i, seed.reader, seed.name, files, target, "", m.done, plain, level)

    def _make_logdir(self, m: Mutation, i: int, seed: Seed) -> Case:
        files = dict(seed.tree)
        paths = list(files)
        rich = [p for p in paths if b"_hparams_" in files[p]]
        target = m.rng.choice(rich) if rich and m.rng.random() < 0.7 else m.rng.choice(paths)
        plain = files[target]
        for _ in range(m.rng.choice([1, 1, 2])):
            plain = self._mutate(m, dataclasses.replace(seed, kind="tfrecord"), plain)
        files[target] = plain
        op = m.rng.random()
        if op < 0.1:  # the mutated file in another run too
            files[m.rng.choice(paths).rpartition("/")[0] + "/events.out.tfevents.1795322999.fuzz.v2"] = plain
            m.done.append("copied into another run")
        elif op < 0.15:
            victim = m.rng.choice([p for p in paths if p != target] or [target])
            files[victim] = b""
            m.done.append("another file emptied")
        return Case(i, seed.reader, seed.name, files, target, seed.names[0], m.done, plain, 0)


def replay_case(path: Path, index: int = 0) -> Case:
    """A saved input as a case: a file opened in a folder of its own, or a folder as a log dir
    (its first event file counting as the mutated one)."""
    path = Path(path)
    if path.is_dir():
        files = {f"logs/{path.name}/{p.relative_to(path).as_posix()}": p.read_bytes()
                 for p in sorted(path.rglob("*")) if p.is_file()}
        target = next((k for k in files if "tfevents" in k), next(iter(files)))
        return Case(index, "replay", str(path), files, target, f"logs/{path.name}")
    return Case(index, "replay", str(path), {f"fuzz/{path.name}": path.read_bytes()}, f"fuzz/{path.name}")


# ---------------------------------------------------------------- the worker side


def _reset_peak() -> int:
    """Resets the peak resident memory (VmHWM) to the current; the current, in KiB."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
    return _vm_kb("VmRSS:")


def _vm_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return 0


DATA_CALLS = ("tool_data", "memory_profile", "step_timeline", "hparams_")


class _Log:
    """Outcome of each call of one case. Before each call a tick tells the
    harness, which gives every call its own deadline."""

    def __init__(self, root: str, tick=None):
        self.root = root
        self.tick = tick or (lambda what: None)
        self.calls = collections.Counter()
        self.failure: dict | None = None
        self.answers = 0
        self.slowest = (0.0, "")
        self.seconds = collections.Counter()  # per call name
        self.peak = (0.0, "")  # the call that took the most memory: (MiB over what was resident before it, call)

    def call(self, what: str, fn, *args, **kwargs):
        from profscope.models.core.task import ProfileError

        self.tick(what)
        before = _reset_peak()
        began = time.perf_counter()
        try:
            result = fn(*args, **kwargs)
        except ProfileError:
            self.calls[(what, "message")] += 1
            return None
        except MemoryError as e:
            self._fail("blowup", what, e)
            return None
        except Exception as e:
            self._fail("traceback", what, e)
            return None
        finally:
            took = time.perf_counter() - began
            grew = (_vm_kb("VmHWM:") - before) / 1024
            if grew > self.peak[0]:
                self.peak = (grew, what)
            self.seconds[what] += took
            if took > self.slowest[0]:
                self.slowest = (took, what)
        self.calls[(what, "answer")] += 1
        if what.startswith(DATA_CALLS):  # listing sessions is not an answer; a tool's data is
            self.answers += 1
        return result

    def _fail(self, cls: str, what: str, e: BaseException) -> None:
        import traceback

        self.calls[(what, cls)] += 1
        if self.failure is not None:
            return
        frames = traceback.extract_tb(e.__traceback__)
        ours = [f for f in frames if f.filename.startswith(self.root) and "/benchmarks/" not in f.filename]
        f = (ours or frames)[-1]
        site = f"{os.path.relpath(f.filename, self.root) if ours else Path(f.filename).name}:{f.name}"
        text = "".join(traceback.format_exception(type(e), e, e.__traceback__, limit=-12))
        self.failure = {"class": cls, "type": type(e).__name__, "site": site, "line": f.lineno, "call": what,
                        "message": str(e).splitlines()[0][:300] if str(e) else "", "traceback": text[-6000:]}


def _exercise_export(repo, log: _Log, thorough: bool) -> None:
    """`profscope sessions` and `profscope export` of every tool, session and host
    (`thorough`: also with parameters; each call reads the file again)."""
    from profscope.models.repository.registry import (
        KERNEL_STATS,
        MEMORY_PROFILE,
        OP_STATS,
        OVERVIEW,
        TIMELINE_TOOLS,
        TRACE_VIEWER,
    )

    extra = {MEMORY_PROFILE: {"xprof_form": "1"}, OP_STATS: {"group_by": "input_shape"}, KERNEL_STATS: {"steps": "1-2"},
             OVERVIEW: {"steps": "1"}}
    for info in log.call("enum_sessions", repo.enum_sessions) or []:
        s = info.name
        combined = log.call("combines_hosts", repo.combines_hosts, s)
        for tool in info.tools:
            hosts = list(log.call("hosts_with", repo.hosts_with, s, tool) or [])
            if combined and tool in TIMELINE_TOOLS:
                hosts.append("")
            for host in hosts:
                log.call(f"tool_data {tool}", repo.tool_data, s, tool, host)
                if thorough and tool in extra:
                    log.call(f"tool_data {tool} {extra[tool]}", repo.tool_data, s, tool, host, dict(extra[tool]))
                if tool == TRACE_VIEWER:
                    for step in (log.call("steps", repo.steps, s, host) or [])[1:2]:
                        log.call("tool_data trace_viewer step", repo.tool_data, s, TRACE_VIEWER, host, {"step": step})


def _exercise_window(repo, log: _Log) -> None:
    """What the window asks: per host its memory profile and timeline (each step),
    with what the views then ask of them, and the all-hosts timeline."""
    from profscope.models.repository.registry import KERNEL_STATS, MEMORY_PROFILE, TRACE_VIEWER

    for info in log.call("enum_sessions", repo.enum_sessions) or []:
        s = info.name
        for host in info.hosts:
            def has(tool: str, info=info, s=s, host=host) -> bool:
                return tool in info.tools and host in (log.call("hosts_with", repo.hosts_with, s, tool) or [])

            if has(MEMORY_PROFILE):
                if (data := log.call("memory_profile", repo.memory_profile, s, host)) is not None:
                    _exercise_memory(data, log)
            if has(TRACE_VIEWER):
                steps = log.call("steps", repo.steps, s, host) or []
                stats = host in (log.call("hosts_with", repo.hosts_with, s, KERNEL_STATS) or [])
                for step in steps[:2] or [""]:
                    if (tl := log.call("step_timeline", repo.step_timeline, s, host, step)) is not None:
                        _exercise_timeline(tl, log, stats)
        if log.call("combines_hosts", repo.combines_hosts, s):
            if (tl := log.call("step_timeline all hosts", repo.step_timeline, s, "")) is not None:
                _exercise_timeline(tl, log, KERNEL_STATS in info.tools)


def _exercise_timeline(tl, log: _Log, with_stats: bool) -> None:
    """The timeline view's and the Statistics tab's questions."""
    from profscope.models.analysis import trace_stats

    log.call("timeline all_kind_stats", lambda: tl.all_kind_stats)
    n = len(tl)
    if n:
        for i in sorted({0, n // 2, n - 1}):
            if tl.details is not None:
                log.call("timeline details", tl.details, i)
            log.call("timeline lane_of", tl.lane_of, i)
        t0, t1 = tl.span_ps
        log.call("timeline overlapping", tl.overlapping, t0, (t0 + t1) / 2)
        log.call("timeline kind_stats range", tl.kind_stats, tl.overlapping(t0, t1), (t0, t1))
        log.call("timeline find", tl.find, "a")
        if tl.num_lanes:
            per_px = max(1.0, (t1 - t0) / 800)
            log.call("timeline lane index", lambda: tl.lane_index(0).first_in_pixels(t0, per_px, 800))
    if with_stats:
        stats = log.call("trace_stats.compute", trace_stats.compute, tl)
        if stats is not None and len(stats.step_numbers):
            a = int(stats.step_numbers[0])
            log.call("trace_stats.compute steps", trace_stats.compute, tl, (a, a + 1))


def _exercise_memory(data, log: _Log) -> None:
    """The memory view's: each allocator's summary, the table at the peak and at clicked moments."""
    for memory_id in data.memory_ids[:4]:
        a = data.allocators[memory_id]
        peak = log.call("memory peak_index", lambda a=a: a.peak_index)
        n = len(a.timeline)
        for index in sorted({0, n // 2, n - 1, peak if peak is not None else 0}):
            if 0 <= index < n:
                log.call("memory allocations_at", a.allocations_at, index)


def _exercise_hparams(data, log: _Log) -> None:
    """The HParams tab's and `export --tool hparams_*`'s requests."""
    from profscope.models.hparams.experiment import tool_json

    log.call("hparams_experiment", tool_json, data, "hparams_experiment", {})
    log.call("hparams_session_groups", tool_json, data, "hparams_session_groups", {})
    exp = log.call("experiment", data.experiment)
    if exp is None:
        return
    if exp.hparam_infos:
        req = {"colParams": [{"hparam": exp.hparam_infos[0].name, "order": "ORDER_DESC", "filterRegexp": "."}],
               "aggregationType": "AGGREGATION_MEDIAN", "startIndex": 0, "sliceSize": 10}
        log.call("hparams_session_groups sorted", tool_json, data, "hparams_session_groups",
                 {"request": json.dumps(req)})
    runs = log.call("session_runs", lambda: data.session_runs) or []
    if exp.metric_infos and runs:
        name = exp.metric_infos[0].name
        req = {"sessionName": runs[0], "metricName": {"group": name.group, "tag": name.tag}}
        log.call("hparams_metric_evals", tool_json, data, "hparams_metric_evals", {"request": json.dumps(req)})


def _hang():
    r, _ = os.pipe()
    os.read(r, 1)  # nobody writes: blocks until the harness kills the worker


def _overflow():
    """A heap buffer overflow that ASan's memmove interceptor reports (for checking --asan)."""
    import ctypes

    libc = ctypes.CDLL(None)
    libc.malloc.restype = ctypes.c_void_p
    dst, src = libc.malloc(8), ctypes.create_string_buffer(64)
    ctypes.memmove(dst, src, 64)


_SELFTEST = {"answer": lambda: 1, "raise": lambda: {}["missing"], "hang": _hang, "crash": os.abort,
             "memory": lambda: bytearray(AS_HEADROOM_MB << 21), "overflow": _overflow}


def _exercise_sql(repo, hparams, log: _Log, tmp: str) -> None:
    """`profscope query` of every table and `export --format parquet`, each
    file read back by DuckDB (a file its readers refuse is a failure)."""
    import duckdb

    from profscope.models.sql.database import TABLES, ProfileDatabase

    db = log.call("sql open", ProfileDatabase, repo, hparams, memory_limit="1GB", threads=1)
    if db is None:
        return
    out = Path(tempfile.mkdtemp(prefix="parquet-", dir=tmp))
    try:
        for table in TABLES:
            log.call(f"sql {table}", db.query, f"SELECT * FROM {table}", None, 10_000)
        written = log.call("sql write_parquet", db.write_parquet, out, TABLES) or []
        con = duckdb.connect()
        for path, _ in written:
            log.call("sql parquet read back", lambda p=path: con.sql(f"SELECT * FROM read_parquet('{p}')").fetchall())
        con.close()
    finally:
        db.close()
        shutil.rmtree(out, ignore_errors=True)


def run_case(case: Case, root: str, tmp: str, tick=None) -> dict:
    """Writes a case to a fresh folder and opens it as users do; what happened."""
    import gc
    import threading

    from profscope.models.repository.locations import open_location, open_repository

    log = _Log(root, tick)
    if case.reader == "selftest":  # the harness's own checks (tests/test_fuzz.py): each outcome on demand
        log.call(f"tool_data {case.target}", _SELFTEST[case.target])
        return {"calls": dict(log.calls), "failure": log.failure, "answers": log.answers, "seconds": 0.0,
                "threads": [], "slowest_call": log.slowest, "call_seconds": {}, "peak_call": log.peak}
    before_threads = set(threading.enumerate())
    before_fds = set(os.listdir("/proc/self/fd"))
    folder = Path(tempfile.mkdtemp(prefix="case-", dir=tmp))
    try:
        for rel, content in case.files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
        target = folder / case.target
        started = time.perf_counter()
        repo = log.call("open_repository file", open_repository, target)
        if repo is not None:
            _exercise_export(repo, log, case.index % 4 == 0)
        opened = [target.parent]
        if case.logdir and folder / case.logdir != target.parent:
            opened.append(folder / case.logdir)
        for where in opened:
            pair = log.call("open_location folder", open_location, where)
            if pair is not None:
                repo, hparams = pair
                if repo is not None:
                    _exercise_window(repo, log)
                if hparams is not None:
                    _exercise_hparams(hparams, log)
                if case.index % 2 == 0:  # every other case: SQL and Parquet too
                    _exercise_sql(repo, hparams, log, tmp)
        seconds = time.perf_counter() - started
        repo = pair = hparams = None
        gc.collect()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    left = [t for t in threading.enumerate() if t not in before_threads]
    for t in left:
        t.join(2.0)  # bounded: a reader's thread finishing its last chunk
    left = [t.name for t in left if t.is_alive()]
    fds = []
    for fd in set(os.listdir("/proc/self/fd")) - before_fds:  # files a reader kept open after its objects went
        try:
            fds.append(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            pass  # the listing's own descriptor
    return {"calls": dict(log.calls), "failure": log.failure, "answers": log.answers, "seconds": seconds,
            "threads": left + [f"open file {f}" for f in fds], "slowest_call": log.slowest,
            "call_seconds": dict(log.seconds), "peak_call": log.peak}


def _send(f, obj) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(struct.pack("<Q", len(data)) + data)
    f.flush()


def _recv_exact(read, n: int) -> bytes | None:
    parts, got = [], 0
    while got < n:
        chunk = read(n - got)
        if not chunk:
            return None
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def _recv(read):
    head = _recv_exact(read, 8)
    if head is None:
        return None
    body = _recv_exact(read, struct.unpack("<Q", head)[0])
    return None if body is None else pickle.loads(body)


def worker_main(root: str, tmp: str, timeout: float, limit_as: bool) -> None:
    """Runs cases sent on stdin, one at a time; answers on the original stdout
    (stray prints go to stderr)."""
    import faulthandler
    import importlib

    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.path.insert(0, root)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    faulthandler.enable()
    for name in ("profscope.models.hparams.experiment", "profscope.models.repository.locations",
                 "profscope.models.analysis.trace_stats", "profscope.models.sql.database"):
        importlib.import_module(name)  # before the baseline memory is measured
    from profscope.models.core import _protowire
    from profscope.models.sql.database import ProfileDatabase

    ProfileDatabase(None, None, memory_limit="1GB", threads=1).close()  # DuckDB's own mappings, made once

    base_vm = _vm_kb("VmSize:")
    if limit_as:
        limit = (base_vm << 10) + (AS_HEADROOM_MB << 20)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    _send(out, {"pid": os.getpid(), "extension": _protowire.__file__})
    read = sys.stdin.buffer.read
    while (case := _recv(read)) is not None:
        base_rss = _reset_peak()

        def tick(what: str) -> None:
            _send(out, what)
            # Where a hang is, written to stderr just before the harness kills this process.
            faulthandler.dump_traceback_later(max(0.5, timeout - 0.5), exit=False)

        result = run_case(case, root, tmp, tick)
        faulthandler.cancel_dump_traceback_later()
        grew, _ = result["peak_call"]
        result["rss_growth_mb"] = max(grew, (_vm_kb("VmHWM:") - base_rss) / 1024)
        result["peak_rss_mb"] = base_rss / 1024 + result["rss_growth_mb"]
        _send(out, result)


# ---------------------------------------------------------------- the pool


SAN_LINE = re.compile(
    r"(ERROR: AddressSanitizer: [^\n]*|SUMMARY: \w+Sanitizer: [^\n]*"
    r"|[^\s:]+\.c:\d+:\d+: runtime error: [^\n]*)"
)
PY_FRAME = re.compile(r'File "([^"]+)", line (\d+) in (\S+)')


class Worker:
    def __init__(self, pool: Pool):
        self.pool = pool
        self.err_path = Path(pool.tmp) / f"worker-{pool.spawned}.err"
        pool.spawned += 1
        self.err = open(self.err_path, "wb")
        cmd = [
            sys.executable,
            str(pool.script),
            "--worker",
            "--root",
            pool.root,
            "--tmp",
            pool.tmp,
            "--timeout",
            str(pool.timeout),
        ] + ([] if pool.limit_as else ["--no-limit-as"])
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, env=pool.env, cwd=pool.root
        )
        # Unbuffered: a buffered reader could hold the next message where select() cannot see it.
        fd = self.proc.stdout.fileno()
        self.read = lambda n: os.read(fd, n)
        hello = _recv(self.read)
        if hello is None:
            raise RuntimeError(f"fuzz worker did not start: {self.err_path.read_text(errors='replace')[-3000:]}")
        self.pid, self.extension = hello["pid"], hello["extension"]
        self.case: Case | None = None
        self.call = ""  # what the case is doing (the last tick)
        self.deadline = 0.0
        self.done = 0
        self.err_offset = 0

    def start(self, case: Case) -> None:
        self.case, self.call = case, "writing the files"
        self.err.flush()
        self.err_offset = self.err_path.stat().st_size
        self.deadline = time.monotonic() + self.pool.timeout
        _send(self.proc.stdin, case)

    def stderr_text(self) -> str:
        with open(self.err_path, "rb") as f:
            f.seek(self.err_offset)
            return f.read()[-20000:].decode(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for f in (self.proc.stdin, self.proc.stdout, self.err):
            try:
                f.close()
            except OSError:
                pass
        self.err_path.unlink(missing_ok=True)

    def death(self, killed_for_time: bool) -> dict:
        """What a worker that died (or was killed for time) says about its case."""
        self.proc.wait()
        text = self.stderr_text()
        san = ""
        for p in Path(self.pool.tmp).glob(f"san.*{self.pid}*"):
            san += p.read_text(errors="replace")
            p.unlink()
        frames = [f for f in PY_FRAME.findall(text) if f[0].startswith(self.pool.root) and "/benchmarks/" not in f[0]]
        site = f"{os.path.relpath(frames[0][0], self.pool.root)}:{frames[0][2]}" if frames else "?"
        line = int(frames[0][1]) if frames else 0
        if killed_for_time:
            return _death(
                "timeout", "Timeout", site, line, f"{self.call} took over {self.pool.timeout:g} s", text, self.call
            )
        if san:
            found = SAN_LINE.findall(san)
            summary = next((x for x in found if x.startswith("SUMMARY")), found[0] if found else san[:200])
            if re.search(r"rss limit|out of memory|allocation-size-too-big|requested allocation size", san):
                return _death("blowup", "ASanMemory", site, line, summary, san, self.call)
            where = re.search(r"#\d+ 0x[0-9a-f]+ in (\w+) [^\n]*?(models/[\w/]+\.[ch]):(\d+)", san)
            ubsan = re.search(r"(models/[\w/]+\.[ch]):(\d+):\d+: runtime error: ([^\n]*)", san)
            if ubsan:
                return _death("sanitizer", "UBSan", ubsan.group(1), int(ubsan.group(2)), ubsan.group(3), san, self.call)
            kind = re.search(r"AddressSanitizer: ([\w-]+)", summary)
            if where:
                site, line = f"{where.group(2)}:{where.group(1)}", int(where.group(3))
            else:  # outside Profscope's C: the first frame past the sanitizer's own
                frames = re.sub(r"[^\n]*(?:sanitizer|interceptor)[^\n]*\n", "", san)
                other = re.search(r"#\d+ 0x[0-9a-f]+ in (\w+) \(?([^\s)+]*)", frames)
                site, line = (f"{Path(other.group(2)).name}:{other.group(1)}" if other else "?"), 0
            return _death("sanitizer", f"ASan {kind.group(1) if kind else '?'}", site, line, summary, san, self.call)
        code = self.proc.returncode
        if code == -signal.SIGKILL:  # the kernel's OOM killer
            return _death("blowup", "SIGKILL", site, line, "killed (out of memory?)", text, self.call)
        name = signal.Signals(-code).name if code < 0 else f"exit {code}"
        return _death("crash", name, site, line, f"worker died: {name}", text, self.call)


def _death(cls, typ, site, line, message, text, call="") -> dict:
    return {
        "calls": {},
        "answers": 0,
        "seconds": None,
        "threads": [],
        "peak_rss_mb": None,
        "rss_growth_mb": None,
        "slowest_call": (0.0, ""),
        "peak_call": (0.0, ""),
        "failure": {
            "class": cls,
            "type": typ,
            "site": site,
            "line": line,
            "call": call,
            "message": message,
            "traceback": text[-6000:],
        },
    }


class Pool:
    """Worker processes running cases with a per-case deadline; a worker that
    hangs is killed, one that dies is replaced."""

    def __init__(
        self,
        workers: int,
        timeout: float,
        root: str = str(ROOT),
        env: dict | None = None,
        limit_as: bool = True,
        script: Path = Path(__file__).resolve(),  # noqa: B008 (an immutable Path, this file's, made once)
    ):
        self.n, self.timeout, self.root, self.limit_as, self.script = workers, timeout, root, limit_as, script
        self.env = dict(env or os.environ)
        self.tmp = tempfile.mkdtemp(prefix="profscope-fuzz-")
        self.env.setdefault("QT_QPA_PLATFORM", "offscreen")
        self.spawned = 0
        self.workers: list[Worker] = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        for w in self.workers:
            w.stop()
        self.workers = []
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run(self, cases, on_result, stop=lambda: False) -> None:
        """Runs the cases of an iterable; on_result(case, result) for each (in completion order)."""
        cases = iter(cases)
        while len(self.workers) < self.n:
            self.workers.append(Worker(self))
        sel = selectors.DefaultSelector()
        idle = list(self.workers)
        busy: dict[int, Worker] = {}
        exhausted = False
        try:
            while True:
                while idle and not exhausted and not stop():
                    case = next(cases, None)
                    if case is None:
                        exhausted = True
                        break
                    w = idle.pop()
                    w.start(case)
                    busy[w.proc.stdout.fileno()] = w
                    sel.register(w.proc.stdout, selectors.EVENT_READ, w)
                if not busy:
                    return
                wait = max(0.0, min(w.deadline for w in busy.values()) - time.monotonic())
                events = sel.select(wait)
                finished = [(key.data, False) for key, _ in events]
                now = time.monotonic()
                ready = {id(w) for w, _ in finished}
                finished += [(w, True) for w in busy.values() if w.deadline <= now and id(w) not in ready]
                for w, late in finished:
                    result = None if late else _recv(w.read)
                    if isinstance(result, str):  # a tick: the next call starts, with its own deadline
                        w.call, w.deadline = result, time.monotonic() + self.timeout
                        continue
                    sel.unregister(w.proc.stdout)
                    del busy[w.proc.stdout.fileno()]
                    case = w.case
                    if result is None:
                        if late:
                            w.proc.kill()
                        result = w.death(late)
                        w.stop()
                        w = self._replace(w)
                    else:
                        w.done += 1
                        if w.done >= RECYCLE:
                            w.stop()
                            w = self._replace(w)
                    idle.append(w)
                    on_result(case, result)
        finally:
            sel.close()

    def _replace(self, old: Worker) -> Worker:
        new = Worker(self)
        self.workers[self.workers.index(old)] = new
        return new

    def run_all(self, cases: list[Case]) -> list[dict]:
        """Results in the order of the cases."""
        results = {}
        self.run(cases, lambda c, r: results.__setitem__(id(c), r))
        return [results[id(c)] for c in cases]


# ---------------------------------------------------------------- outcomes


def outcome(result: dict) -> str:
    f = result["failure"]
    if f is not None:
        return f["class"]
    if result.get("rss_growth_mb") and result["rss_growth_mb"] > RSS_LIMIT_MB:
        return "blowup"
    if result["threads"]:
        return "leak"
    return "answer" if result["answers"] else "message"


def signature(result: dict) -> tuple[str, str, str]:
    """What makes two failures the same: class, exception type, innermost Profscope frame."""
    cls = outcome(result)
    f = result["failure"]
    if f is None:
        return (cls, "RSS", result["peak_call"][1]) if cls == "blowup" else (cls, "", "")
    return (cls, f["type"], f["site"])  # a timeout's site: where the dump found it when it was killed


@dataclasses.dataclass
class Stats:
    per_reader: dict = dataclasses.field(default_factory=lambda: collections.defaultdict(collections.Counter))
    failures: dict = dataclasses.field(default_factory=dict)  # signature -> [first case, first result, count, readers]
    slowest: tuple = (0.0, None)
    slowest_call: tuple = (0.0, "", None)
    peak_rss_mb: float = 0.0
    peak_growth: tuple = (0.0, None)
    cases: int = 0
    calls: collections.Counter = dataclasses.field(default_factory=collections.Counter)

    def add(self, case: Case, result: dict) -> str:
        cls = outcome(result)
        self.cases += 1
        self.per_reader[case.reader][cls] += 1
        for (_what, c), n in result["calls"].items():
            self.calls[c] += n
        if result["seconds"] is not None and result["seconds"] > self.slowest[0]:
            self.slowest = (result["seconds"], _describe(case))
        if result["slowest_call"][0] > self.slowest_call[0]:
            self.slowest_call = (*result["slowest_call"], _describe(case))
        if result.get("peak_rss_mb"):
            self.peak_rss_mb = max(self.peak_rss_mb, result["peak_rss_mb"])
            if result["rss_growth_mb"] > self.peak_growth[0]:
                self.peak_growth = (result["rss_growth_mb"], f"{result['peak_call'][1]}, {_describe(case)}")
        if cls in FAILURES:
            sig = signature(result)
            entry = self.failures.setdefault(sig, [case, result, 0, collections.Counter()])
            entry[2] += 1
            entry[3][case.reader] += 1
        return cls

    def table(self) -> str:
        readers = [r for r in READERS + ("replay",) if r in self.per_reader]
        cols = [
            c for c in CLASSES if any(self.per_reader[r][c] for r in readers) or c in ("answer", "message", "traceback")
        ]
        rows = [["reader", "cases"] + cols]
        for r in readers:
            c = self.per_reader[r]
            rows.append([r, f"{sum(c.values()):,}"] + [f"{c[k]:,}" for k in cols])
        total = collections.Counter()
        for r in readers:
            total.update(self.per_reader[r])
        rows.append(["total", f"{sum(total.values()):,}"] + [f"{total[k]:,}" for k in cols])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines = [
            "  ".join(x.rjust(w) if i else x.ljust(w) for i, (x, w) in enumerate(zip(row, widths))) for row in rows
        ]
        lines.append(
            f"calls: {self.calls['answer']:,} answered, {self.calls['message']:,} clear messages, "
            f"{sum(v for k, v in self.calls.items() if k in FAILURES):,} failed"
        )
        if self.slowest[1]:
            lines.append(f"slowest case (all its calls): {self.slowest[0]:.2f} s ({self.slowest[1]})")
        if self.slowest_call[2]:
            lines.append(
                f"slowest call that finished: {self.slowest_call[0]:.2f} s, {self.slowest_call[1]} "
                f"({self.slowest_call[2]})"
            )
        if self.peak_growth[1]:
            lines.append(
                f"peak RSS: {self.peak_rss_mb:.0f} MiB (a worker with its case); largest growth in one case "
                f"{self.peak_growth[0]:.0f} MiB ({self.peak_growth[1]})"
            )
        return "\n".join(lines)


def _describe(case: Case) -> str:
    return f"case {case.index}, {case.seed}, {'+'.join(case.mutations) or 'as is'}, {case.size:,} bytes"


# ---------------------------------------------------------------- minimising


def _with_target(case: Case, plain: bytes | None, data: bytes, files: dict | None = None) -> Case:
    files = dict(case.files if files is None else files)
    files[case.target] = data
    return dataclasses.replace(case, files=files, plain=plain)


def minimise(pool: Pool, case: Case, result: dict, budget_s: float = 120.0, max_runs: int = 600) -> tuple[Case, dict]:
    """The smallest input found (by chunk removal) that still fails the same way:
    the same class, exception type and site. A gzip case shrinks its inflated
    payload (recompressed each time), so the mutation keeps reaching the parser."""
    want = signature(result)
    began, runs = time.monotonic(), [0]
    best = [case, result]

    def tries(cands: list[Case]) -> Case | None:
        if not cands or time.monotonic() - began > budget_s or runs[0] >= max_runs:
            return None
        runs[0] += len(cands)
        for c, r in zip(cands, pool.run_all(cands)):
            if signature(r) == want:
                best[:] = [c, r]
                return c
        return None

    # Files beside the target first (another rank, other runs of a log dir): all at once, else one by one.
    others = [k for k in case.files if k != case.target]
    if others and tries([dataclasses.replace(case, files={case.target: case.files[case.target]})]) is None:
        for k in others:
            files = {p: v for p, v in best[0].files.items() if p != k}
            tries([dataclasses.replace(best[0], files=files)])
    gz = best[0].gz_level > 0 and best[0].plain is not None
    data = best[0].plain if gz else best[0].files[best[0].target]

    def build(d: bytes) -> Case:
        stored = gzip.compress(d, compresslevel=best[0].gz_level, mtime=0) if gz else d
        return _with_target(best[0], d if gz else None, stored)

    chunk = max(1, len(data) // 2)
    while chunk >= 1 and time.monotonic() - began < budget_s and runs[0] < max_runs:
        i, shrunk = 0, False
        while i < len(data):
            # A batch of candidate removals at once (one per worker), the first that reproduces wins.
            starts = list(range(i, len(data), chunk))[: pool.n]
            cands = [build(data[:s] + data[s + chunk :]) for s in starts]
            hit = tries(cands)
            if hit is None:
                if time.monotonic() - began > budget_s or runs[0] >= max_runs:
                    break
                i = starts[-1] + chunk
                continue
            k = cands.index(hit)
            data = data[: starts[k]] + data[starts[k] + chunk :]
            i, shrunk = starts[k], True
        if not shrunk:
            chunk //= 2
    return best[0], best[1]


# ---------------------------------------------------------------- ASan


def build_copy(dest: Path, rev: str | None = None, sanitize: bool = False) -> dict:
    """models/, protos/, setup.py and pyproject.toml (of the working tree, or of git
    revision `rev`) copied to `dest` with their C extensions built there (with ASan and
    UBSan when `sanitize`); the environment that runs Python on that copy (a profscope
    folder of links to the copies on PYTHONPATH). The repository's own .so files are not
    touched."""
    if rev:
        archive = subprocess.run(
            ["git", "archive", rev, "models", "protos", "setup.py", "pyproject.toml"],
            cwd=ROOT,
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    else:
        for name in ("models", "protos"):
            shutil.copytree(ROOT / name, dest / name, ignore=shutil.ignore_patterns("*.so", "__pycache__"))
        for name in ("setup.py", "pyproject.toml"):
            shutil.copy(ROOT / name, dest / name)
    env = dict(os.environ)
    if sanitize:
        env["CFLAGS"] = "-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined -g -O1"
        env["LDFLAGS"] = "-fsanitize=address,undefined"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=dest,
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    shutil.rmtree(dest / "build", ignore_errors=True)
    package = dest / "path" / "profscope"
    package.mkdir(parents=True)
    for name in ("models", "protos"):
        (package / name).symlink_to(dest / name, target_is_directory=True)
    out = {"PYTHONPATH": str(dest / "path")}
    if sanitize:
        libasan, libstdcxx = (
            subprocess.run(
                ["gcc", f"-print-file-name={name}"], capture_output=True, text=True, check=True
            ).stdout.strip()
            for name in ("libasan.so", "libstdc++.so.6")
        )
        # libstdc++ preloaded too: ASan's __cxa_throw interceptor needs it to be found first (DuckDB throws).
        out.update(
            {
                "LD_PRELOAD": f"{libasan} {libstdcxx}",
                # CPython's own allocations are not ours to judge; a sanitizer error ends the worker.
                "ASAN_OPTIONS": "detect_leaks=0:halt_on_error=1:allocator_may_return_null=1:hard_rss_limit_mb=3072:"
                "log_path={tmp}/san",
                "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1:log_path={tmp}/san",
            }
        )
    return out


# ---------------------------------------------------------------- the command


def save_case(folder: Path, case: Case, result: dict | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for rel, content in case.files.items():
        p = folder / "files" / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content)
    meta = {
        "index": case.index,
        "reader": case.reader,
        "seed": case.seed,
        "target": case.target,
        "logdir": case.logdir,
        "mutations": case.mutations,
        "failure": result and result["failure"],
    }
    (folder / "case.json").write_text(json.dumps(meta, indent=2))


def run_pass(
    seed: int = 0,
    cases: int | None = 1000,
    seconds: float | None = None,
    readers=READERS,
    workers: int = 2,
    timeout: float = 5.0,
    pool: Pool | None = None,
    progress=None,
    first: int = 0,
    record=None,
) -> Stats:
    """A seeded pass: cases first..first+cases-1 (or as many as fit in `seconds`);
    record(case, result) for each, as it ends."""
    maker = CaseMaker(seed, tuple(readers))
    stats = Stats()
    began = time.monotonic()
    own = pool is None
    pool = pool or Pool(workers, timeout)

    def gen():
        i = first
        while cases is None or i < first + cases:
            yield maker.case(i)
            i += 1

    def done(case, result):
        stats.add(case, result)
        if record:
            record(case, result)
        if progress:
            progress(stats)

    try:
        pool.run(gen(), done, stop=lambda: seconds is not None and time.monotonic() - began > seconds)
    finally:
        if own:
            pool.close()
    return stats


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--cases", type=int, default=None, help="how many cases (default 2,000 unless --seconds)")
    p.add_argument("--first", type=int, default=0, help="index of the first case")
    p.add_argument("--seconds", type=float, default=None, help="run until this much time has passed")
    p.add_argument("--reader", action="append", choices=READERS, help="only these readers (repeatable)")
    p.add_argument("--workers", type=int, default=max(1, os.cpu_count() or 1))
    p.add_argument("--timeout", type=float, default=None, help="seconds a case may take (5; 20 with --asan)")
    p.add_argument("--out", type=Path, help="save each distinct failure (first case and minimised input) here")
    p.add_argument("--no-minimise", action="store_true")
    p.add_argument("--minimise-seconds", type=float, default=120.0)
    p.add_argument("--asan", action="store_true", help="extensions built with ASan+UBSan in a temporary copy")
    p.add_argument("--rev", help="fuzz this git revision (built in a temporary folder), not the working tree")
    p.add_argument("--replay", nargs="+", type=Path, help="run saved inputs (files, or folders as log dirs)")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--root", default=str(ROOT), help=argparse.SUPPRESS)
    p.add_argument("--tmp", default="", help=argparse.SUPPRESS)
    p.add_argument("--no-limit-as", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.worker:
        worker_main(args.root, args.tmp, args.timeout, not args.no_limit_as)
        return 0
    timeout = args.timeout or (20.0 if args.asan else 5.0)
    if args.cases is None and args.seconds is None:
        args.cases = 2000
    build_dir = None
    pool_kwargs = {}
    if args.asan or args.rev:
        build_dir = Path(tempfile.mkdtemp(prefix="profscope-fuzz-build-"))
        print(
            f"building {args.rev or 'the working tree'}{' with ASan+UBSan' if args.asan else ''} in {build_dir}",
            file=sys.stderr,
        )
        env = build_copy(build_dir, args.rev, args.asan)
        pool_kwargs = {"root": str(build_dir), "limit_as": not args.asan, "env": {**os.environ, **env}}
    pool = Pool(args.workers, timeout, **pool_kwargs)
    if args.asan:  # the log path names the pool's folder
        for k in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
            pool.env[k] = pool.env[k].format(tmp=pool.tmp)
    began = time.monotonic()
    last = [0.0]

    def progress(stats: Stats) -> None:
        if time.monotonic() - last[0] > 30:
            last[0] = time.monotonic()
            fails = sum(v[2] for v in stats.failures.values())
            print(
                f"  {stats.cases:,} cases, {time.monotonic() - began:.0f} s, {fails:,} failing, "
                f"{len(stats.failures)} distinct",
                file=sys.stderr,
            )

    try:
        if build_dir:
            w = Worker(pool)
            ok = w.extension.startswith(str(build_dir))
            w.stop()
            if not ok:
                raise SystemExit(f"the workers load {w.extension}, not the build in {build_dir}")
        if args.replay:
            stats = Stats()
            for i, path in enumerate(args.replay):
                case = replay_case(path, i)
                result = pool.run_all([case])[0]
                print(
                    f"{outcome(result):9} {path}"
                    + (
                        f"  {result['failure']['type']} at {result['failure']['site']}: {result['failure']['message']}"
                        if result["failure"]
                        else ""
                    )
                )
                stats.add(case, result)
        else:
            log = None
            if args.out:  # one line per case, written as it ends (a pass cut short keeps what it did)
                args.out.mkdir(parents=True, exist_ok=True)
                log = open(args.out / "cases.jsonl", "a")

            def record(case: Case, result: dict) -> None:
                if log:
                    log.write(
                        json.dumps(
                            {
                                "seed": args.seed,
                                "index": case.index,
                                "reader": case.reader,
                                "from": case.seed,
                                "mutations": case.mutations,
                                "bytes": case.size,
                                "outcome": outcome(result),
                                "signature": signature(result),
                                "seconds": result["seconds"],
                                "slowest_call": result["slowest_call"],
                                "peak_rss_mb": result.get("peak_rss_mb"),
                                "rss_growth_mb": result.get("rss_growth_mb"),
                            }
                        )
                        + "\n"
                    )
                    log.flush()

            stats = run_pass(
                args.seed,
                args.cases,
                args.seconds,
                tuple(args.reader or READERS),
                timeout=timeout,
                pool=pool,
                progress=progress,
                first=args.first,
                record=record,
            )
        elapsed = time.monotonic() - began
        print(
            f"\nseed {args.seed}: {stats.cases:,} cases in {elapsed:.0f} s ({args.workers} workers, "
            f"timeout {timeout:g} s{', ASan+UBSan' if args.asan else ''})"
        )
        print(stats.table())
        if stats.failures:
            print("\ndistinct failures:")
        by_count = sorted(stats.failures.items(), key=lambda x: -x[1][2])
        for n, (sig, (case, result, count, readers)) in enumerate(by_count):
            f = result["failure"] or {
                "type": "",
                "site": "",
                "line": 0,
                "call": result["peak_call"][1],
                "message": f"{result['rss_growth_mb']:.0f} MiB over the worker's resident memory",
            }
            print(
                f"  [{n}] {count:,} x {sig[0]}: {f['type']} at {f['site']}:{f['line']} ({f.get('call', '')}) "
                f"{f['message'][:160]!r}; readers {dict(readers)}; first {_describe(case)}"
            )
            if args.out:
                slug = re.sub(r"[^\w.-]+", "_", f"{n:02d}-{sig[0]}-{sig[1]}-{sig[2]}")[:100]
                save_case(args.out / slug / "first", case, result)
                if not args.no_minimise and not args.replay:
                    small, small_result = minimise(pool, case, result, args.minimise_seconds)
                    save_case(args.out / slug / "minimised", small, small_result)
                    print(f"       minimised to {small.size:,} bytes: {args.out / slug / 'minimised'}")
        return 1 if stats.failures else 0
    finally:
        pool.close()
        if build_dir:
            shutil.rmtree(build_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
