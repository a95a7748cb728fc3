"""JAX device memory profiles: pprof's Profile (protos/pprof.proto), gzipped, as
jax.profiler.save_device_memory_profile() writes it, read into the MemoryProfile
model of profscope.models.data.memory_profile.

Such a profile is one moment: the buffers alive when it was taken. Each sample
is one Python stack with its sample types' values, "allocations"/"count" and
"space"/"bytes", and labels: `kind` ("buffer", or "executable" for compiled
programs) and, for buffers, `device` (e.g. "cpu:0"). Samples of one stack are
merged by JAX, so a sample may count several allocations.

Each device (or, for samples without a device, each kind) becomes an allocator
whose timeline has one allocation snapshot per allocation, all at the profile's
time, so its last snapshot is the total. A sample of n allocations of b bytes
gives n snapshots of b // n bytes (the remainder on the first). The table's op
is the innermost frame outside JAX's own code (JAX's internals are the leaf
frames of every stack), "function (file:line)"; the region is the kind and the
whole stack, innermost first; the stack is also kept as frames (the SQL frames
table, the flame graph). Data type and shape are not in the profile.
"""

from __future__ import annotations

import gzip
import zlib
from pathlib import Path

import numpy as np

from profscope.models.core.files import GZIP_MAGIC, read_bytes
from profscope.models.core.guards import decode
from profscope.models.core.sniff import head_of, proto_fields
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.memory_profile import (
    ALLOCATION,
    AllocatorProfile,
    MemoryProfileData,
    Snapshots,
    summarize,
    xprof_peak_rows,
)
from profscope.models.repository.registry import MEMORY_PROFILE, Format, strip_suffix
from profscope.protos import pprof_pb2

SUFFIXES = (".prof", ".prof.gz", ".pprof", ".pprof.gz", ".pb.gz")
# The names a file met while scanning a folder may have (".pb.gz" is too common there).
FOLDER_SUFFIXES = (".prof", ".prof.gz", ".pprof", ".pprof.gz")
# Profile's fields: number -> wire type (comment (13) is packed or not).
FIELDS = {1: 2, 2: 2, 3: 2, 4: 2, 5: 2, 6: 2, 7: 0, 8: 0, 9: 0, 10: 0, 11: 2, 12: 0, 13: 0, 14: 0, 15: 0}
# Allocations one profile may hold (one snapshot each): a corrupt count stops here.
MAX_ALLOCATIONS = 20_000_000
# Frames of JAX's own code, skipped when choosing a stack's op.
INTERNAL = ("/jax/", "/jaxlib/", "\\jax\\", "\\jaxlib\\")


def refused(raw_head: bytes, head: bytes) -> str | None:
    """Why a file is not a gzipped pprof Profile, or None when it starts as
    one: gzip data whose first fields are a Profile's, the first a sample
    type (a ValueType of two small varints)."""
    if raw_head[:2] != GZIP_MAGIC:
        return "not a pprof profile (pprof files are gzipped)"
    fields = proto_fields(head)
    if not fields or fields[0] != (1, 2) or not all(FIELDS.get(n) == w or (n == 13 and w == 2) for n, w in fields):
        return "not a pprof profile (its first fields are not a Profile's sample types)"
    length = head[1] if len(head) > 1 else 0
    if length > 40 or not all(n in (1, 2) and w == 0 for n, w in proto_fields(head[2 : 2 + length]) or [(0, 0)]):
        return "not a pprof profile (its first sample type is not a ValueType)"
    return None


def file_refusal(path: Path) -> str | None:
    try:
        with open(path, "rb") as f:
            raw = f.read(2)
    except OSError:
        return None
    if raw[:2] != GZIP_MAGIC:
        return refused(raw, b"")
    head = head_of(path, 4096)
    return None if head is None else refused(raw, head)


def load_pprof_memory(path: Path, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    """Reads a gzipped pprof device memory profile (read_bytes bounds the inflated size)."""
    task = task or TaskState()
    data = read_bytes(path, task, weight=0.5)
    return parse_pprof_memory(data, host=host or Path(path).name, source=str(path))


def parse_pprof_memory(data: bytes | bytearray, host: str = "", source: str = "") -> MemoryProfileData:
    name = source or "input"
    if data[:2] == GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as e:
            raise ProfileError(f"{name}: the gzip data is corrupt ({e})") from None
    p = decode(pprof_pb2.Profile, data, f"{name}: the pprof profile")
    st = p.string_table
    text = lambda i: st[i] if 0 <= i < len(st) else ""
    types = [(text(v.type), text(v.unit)) for v in p.sample_type]
    if ("space", "bytes") not in types:
        shown = ", ".join(f"{t}/{u}" for t, u in types) or "none"
        raise ProfileError(f"{name}: a pprof profile, but not a memory one (its sample types: {shown})")
    space = types.index(("space", "bytes"))
    count = types.index(("allocations", "count")) if ("allocations", "count") in types else -1
    functions = {f.id: f for f in p.function}
    locations = {loc.id: loc for loc in p.location}

    def frame(function_id: int, line: int) -> tuple[str, str, dict]:
        """The frame's label, its file, and the frame as the model keeps call stacks."""
        f = functions.get(function_id)
        file = text(f.filename) if f else ""
        where = f"{Path(file).name}:{line}" if file else f"line {line}"
        name = text(f.name) if f else "?"
        return f"{name} ({where})", file, {"name": name, "filename": file, "line": line}

    # Per allocator: sizes and per allocation (op, region) texts and stack.
    groups: dict[str, list[tuple[int, int, str, str, list]]] = {}
    total_allocations = total_bytes = 0
    for s in p.sample:
        if len(s.value) != len(types):
            raise ProfileError(f"{name}: a sample has {len(s.value)} values for {len(types)} sample types")
        size, n = s.value[space], (s.value[count] if count >= 0 else 1)
        if size < 0 or n < 0:
            raise ProfileError(f"{name}: a sample has a negative size or count ({size:,} bytes, {n:,} allocations)")
        total_allocations += n
        total_bytes += size
        if total_allocations > MAX_ALLOCATIONS:
            raise ProfileError(f"{name}: more than {MAX_ALLOCATIONS:,} allocations; is the file corrupt?")
        if total_bytes >= 2**62:
            raise ProfileError(f"{name}: the samples add up to more than 2**62 bytes; is the file corrupt?")
        labels = {text(lab.key): text(lab.str) if lab.str else str(lab.num) for lab in s.label}
        kind = labels.get("kind", "")
        frames = [frame(line.function_id, line.line) for i in s.location_id if (loc := locations.get(i))
                  for line in loc.line]
        stack = [f for _, _, f in frames]
        if not frames:
            frames = [("(no stack)", "", {})]
        op = next((f for f, file, _ in frames if not any(part in file for part in INTERNAL)), frames[0][0])
        region = f"{kind or 'allocation'}: " + " < ".join(f for f, _, _ in frames)
        groups.setdefault(labels.get("device") or kind or "memory", []).append((size, n, op, region, stack))
    if not groups:
        raise ProfileError(f"{name}: the pprof memory profile has no samples (no live buffers)")
    time_ps = min(max(p.time_nanos, 0), (2**63 - 1) // 1000) * 1000  # ps in int64
    allocators = {key: _allocator(key, rows, time_ps) for key, rows in groups.items()}
    return MemoryProfileData(host=host, allocators=allocators, source=name)


def _allocator(memory_id: str, rows: list[tuple[int, int, str, str, list]], time_ps: int) -> AllocatorProfile:
    ids = {"": 0}
    sizes: list[int] = []
    ops: list[int] = []
    regions: list[int] = []
    frames: dict[int, list] = {}  # by timeline row; one list shared by a sample's allocations
    for size, n, op, region, stack in rows:
        if n == 0:
            continue
        each = [size // n] * n
        each[0] += size - (size // n) * n
        if stack:
            frames.update(dict.fromkeys(range(len(sizes), len(sizes) + n), stack))
        sizes += each
        ops += [ids.setdefault(op, len(ids))] * n
        regions += [ids.setdefault(region, len(ids))] * n
    strings = list(ids)
    k = len(sizes)
    allocation = np.asarray(sizes, np.int64)
    heap = np.cumsum(allocation)
    zeros = np.zeros(k, np.int64)
    tl = Snapshots(
        time_ps=np.full(k, time_ps, np.int64),
        stack=zeros,
        heap=heap,
        free=zeros,
        fragmentation=np.zeros(k),
        peak_in_use=heap,
        activity=np.full(k, ALLOCATION, np.int64),
        requested=allocation,
        allocation=allocation,
        address=np.arange(1, k + 1, dtype=np.uint64),
        step=zeros,
        op=np.asarray(ops, np.int32),
        region=np.asarray(regions, np.int32),
        dtype=np.zeros(k, np.int32),
        shape=np.zeros(k, np.int32),
        strings=strings,
    )
    summary = summarize(tl)
    summary.num_allocations = k
    return AllocatorProfile(
        memory_id=memory_id,
        timeline=tl,
        summary=summary,
        peak_allocations=xprof_peak_rows(tl, summary),
        complete=True,
        stored_snapshots=tl,
        frames=frames,
        top_frame=tl.op,
        region_is_stack=True,
    )


class PprofMemoryFormat(Format):
    name = "memory_pprof"
    title = "JAX device memory profile: pprof `Profile`, gzipped (`jax.profiler.save_device_memory_profile`)"
    where = (
        "any single `.prof`, `.pprof` (optionally `.gz`) or `.pb.gz` file of gzipped pprof data, "
        "or such a `.prof`/`.pprof` file in a folder"
    )
    patterns = ("*.prof", "*.prof.gz", "*.pprof", "*.pprof.gz", "*.pb.gz")
    tools = (MEMORY_PROFILE,)
    rank = 2

    def host_in_folder(self, path: Path) -> str | None:
        host = strip_suffix(path.name, FOLDER_SUFFIXES)
        return host if host and file_refusal(path) is None else None

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        if path.name.endswith(SUFFIXES) and file_refusal(path) is None:
            return path.name, path.name
        return None

    def refusal(self, path: Path) -> str | None:
        if not path.name.endswith(SUFFIXES):
            return None
        if path.name.endswith(".pb.gz") and file_refusal(path) is not None:
            return None  # a gzipped MemoryProfile or other protobuf: the formats after this one say
        return file_refusal(path)

    def memory_profile(self, files, host, task):
        return load_pprof_memory(files[0], host=host, task=task)


FORMAT = PprofMemoryFormat()
