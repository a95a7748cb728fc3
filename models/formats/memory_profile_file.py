"""MemoryProfile files (memory_profile.proto): proto3 JSON as XProf's
memory_profile tool and TensorFlow 2.2-2.3 wrote it (optionally gzipped), or
binary protobuf, read into the MemoryProfile model of profscope.models.data.memory_profile.

Two kinds of files exist. Older ones hold every snapshot in
`memory_profile_snapshots`. XProf since version 1 keeps there only the
snapshots its peak table references and puts at most 1,000 snapshots, sampled
with a max filter, in `sampled_timeline_snapshots`. The timeline is the
sampled list when present; it is complete when XProf did not need to sample.
An active allocation's `snapshot_index` always indexes
`memory_profile_snapshots` (in version 1 the short list of referenced
snapshots, never the sampled one). A row whose index or `special_index` finds
nothing is left out of the table, as XProf's own view does, and a note on the
allocator says so; the export keeps it as given.

JSON is read by the C extension _memory_json in one pass, straight into the
snapshot columns (json.loads built an object per value, 2.3 GB at the peak
for a 120 MB file, and recursed once per nesting level). It takes what
json.loads and the Python reading before it took from real files: camelCase
or snake_case names, int64 as numbers (fractions truncated) or text of
digits, enums by name or number, doubles also as "NaN"/"Infinity" text, null
as the default, unknown fields skipped. Refused, each with a ProfileError
naming the file, the field's path and the line: a value of the wrong JSON
type (a boolean, list or object for a number, a number for text, ...), an
integer outside int64 (uint64 for addresses), a field given twice (the same
key, or camelCase and snake_case; protobuf's parser refuses repeated keys,
json.loads kept the last), nesting deeper than profscope.models.core.guards allows
(PROFSCOPE_MAX_NESTING; a MemoryProfile needs 6).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from profscope.models.core import _protowire as wire
from profscope.models.core.files import read_bytes
from profscope.models.core.guards import max_nesting, nesting_refused
from profscope.models.core.sniff import head_of, json_keys, proto_fields
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.memory_profile import (
    ALLOCATION,
    DEALLOCATION,
    XPROF_TIMELINE_POINTS,
    AllocationRows,
    AllocatorProfile,
    MemoryProfileData,
    MemorySummary,
    Metadata,
    Snapshots,
    merge_rows,
    summarize,
    xprof_peak_rows,
)
from profscope.models.formats import _memory_json
from profscope.models.repository.registry import MEMORY_PROFILE, Format, strip_suffix

# File name endings of MemoryProfile files in a session folder (<host><suffix>).
SESSION_SUFFIXES = (".memory_profile.json.gz", ".memory_profile.json", ".memory_profile.pb")
# A MemoryProfile opened directly may have any name ending in these.
LONE_SUFFIXES = (".json.gz", ".json", ".pb", ".pb.gz")
# The JSON nesting a MemoryProfile itself needs: profile > allocators >
# allocator > snapshots > snapshot > stats.
MEMORY_PROFILE_DEPTH = 6


def load_memory_profile(path: Path, host: str = "", task: TaskState | None = None) -> MemoryProfileData:
    """Reads a MemoryProfile file (.json, .json.gz, binary .pb, gzipped or not)."""
    task = task or TaskState()
    data = read_bytes(path, task, weight=0.5)
    return parse_memory_profile(data, host=host or Path(path).name, task=task, source=str(path))


def parse_memory_profile(
    data: bytes | bytearray, host: str = "", task: TaskState | None = None, source: str = ""
) -> MemoryProfileData:
    task = task or TaskState()
    name = source or "input"
    first = re.compile(rb"\s*").match(data).end()  # type: ignore[union-attr]  # always matches; no copy of a large buffer
    if first == len(data):
        raise ProfileError(f"{name}: the file is empty")
    if data[first : first + 1] == b"{":
        stored = _from_json(data, name, task)
    else:
        stored = _from_binary(data, name, task)
    allocators, problems = {}, []
    for i, (memory_id, raw) in enumerate(stored["allocators"].items()):
        task.report(0.8 + 0.2 * i / max(len(stored["allocators"]), 1), f"Analysing {memory_id}")
        try:
            allocators[memory_id] = _build_allocator(memory_id, raw, stored["version"])
        except ValueError as e:
            problems.append(f"{name}: allocator {memory_id!r}: {e}")
    allocators = {k: v for k, v in allocators.items() if len(v.timeline) or len(v.peak_allocations)}
    if problems and not allocators:
        raise ProfileError(problems[0])
    if not allocators:
        raise ProfileError(
            f"{name}: the memory profile has no allocator with memory activity. TensorFlow records "
            "memory events for GPU allocators, and for the CPU when TF_CPU_ALLOCATOR_USE_BFC=true is set."
        )
    return MemoryProfileData(
        host=host,
        allocators=allocators,
        num_hosts=stored["num_hosts"],
        version=stored["version"],
        source=name,
        problems=[p + "; the other allocators are shown." for p in problems],
    )


def _build_allocator(memory_id: str, raw: dict, version: int = 0) -> AllocatorProfile:
    stored: Snapshots = raw["snapshots"]
    sampled: Snapshots | None = raw["sampled"]
    _check_snapshots(stored)
    if sampled is not None and (version == 1 or len(sampled) >= len(stored)):
        # XProf version 1: the timeline is the sample (XProf's view draws it
        # whatever the lengths: more snapshots than 1,000 can be referenced);
        # it has every snapshot unless XProf had more than it keeps.
        _check_snapshots(sampled)
        timeline, complete = sampled, len(sampled) < XPROF_TIMELINE_POINTS
    else:
        timeline, complete = stored, True
    if not _is_sorted(timeline.time_ps):
        timeline = timeline.take(np.argsort(timeline.time_ps, kind="stable"))
    summary = raw["summary"] or summarize(timeline)
    counts = np.bincount(timeline.activity, minlength=5)
    summary.num_allocations, summary.num_deallocations = int(counts[ALLOCATION]), int(counts[DEALLOCATION])
    profile = AllocatorProfile(
        memory_id=memory_id,
        timeline=timeline,
        summary=summary,
        peak_allocations=None,  # type: ignore[arg-type]  # set below, from the profile
        complete=complete,
        stored_snapshots=stored,
        stored_sampled=sampled,
        stored_rows=raw["active"],
        special=raw["special"],
    )
    if profile.peak_rows_given:
        profile.peak_allocations, profile.notes = _given_rows(profile, stored, raw["active"], raw["special"])
    elif complete:
        profile.peak_allocations = xprof_peak_rows(timeline, summary)
    else:
        profile.peak_allocations = merge_rows(timeline, np.zeros(0, np.int64), [])
    return profile


def _check_snapshots(tl: Snapshots) -> None:
    """Rejects data that decoded but cannot be memory snapshots (another message type)."""
    if len(tl) and (tl.activity.min() < 0 or tl.activity.max() > 4 or tl.time_ps.min() < 0):
        raise ValueError("values out of range for memory snapshots; is it another kind of protobuf?")


def _is_sorted(a: np.ndarray) -> bool:
    return len(a) < 2 or bool(np.all(a[1:] >= a[:-1]))


def _given_rows(
    profile: AllocatorProfile, stored: Snapshots, rows: list, special: list[Metadata]
) -> tuple[AllocationRows, list[str]]:
    """The peak table a file carries, resolved to metadata and timeline
    indices, and notes on the rows whose reference finds nothing."""
    tl = profile.timeline
    same_list = stored is tl
    out: dict[str, list] = {
        k: []
        for k in (
            "op",
            "region",
            "dtype",
            "shape",
            "allocation",
            "requested",
            "occurrences",
            "step",
            "snapshot",
            "freed",
        )
    }
    lost_snapshots, lost_special = [], []
    for snapshot_index, special_index, occurrences in rows:
        if snapshot_index >= 0:
            if snapshot_index >= len(stored):
                lost_snapshots.append(snapshot_index)
                continue
            m = stored.metadata(snapshot_index)
            at = snapshot_index if same_list else _find_on_timeline(tl, stored, snapshot_index)
        else:
            if not 0 <= special_index < len(special):
                lost_special.append(special_index)
                continue
            sp = special[special_index]
            m = {
                "op": sp.op,
                "region": sp.region,
                "dtype": sp.dtype,
                "shape": sp.shape,
                "allocation": sp.allocation,
                "requested": sp.requested,
                "step": sp.step,
            }
            at = -1
        for k in ("op", "region", "dtype", "shape", "allocation", "requested", "step"):
            out[k].append(m[k])
        out["occurrences"].append(occurrences)
        out["snapshot"].append(at)
        out["freed"].append(profile.freed_at(at) if at >= 0 and profile.complete else -1)
    notes = []
    for lost, what, held in (
        (lost_snapshots, "memoryProfileSnapshots", len(stored)),
        (lost_special, "specialAllocations", len(special)),
    ):
        if lost:
            notes.append(
                f"{len(lost):,} of the {len(rows):,} rows of the file's table at the peak refer to entries of "
                f"{what} it does not hold (index {_few(lost)}; it holds {held:,}); they are left out, "
                "as XProf's own view leaves them out."
            )
    table = AllocationRows(
        op=out["op"],
        region=out["region"],
        dtype=out["dtype"],
        shape=out["shape"],
        **{
            k: np.asarray(out[k], np.int64)
            for k in ("allocation", "requested", "occurrences", "step", "snapshot", "freed")
        },
    )
    return table, notes


def _few(values: list[int]) -> str:
    """The first few of a list of indices, for a message."""
    text = ", ".join(str(v) for v in values[:5])
    return text + (", ..." if len(values) > 5 else "")


def _find_on_timeline(tl: Snapshots, stored: Snapshots, i: int) -> int:
    """Index of stored snapshot i on the timeline, matched by time and address."""
    lo, hi = np.searchsorted(tl.time_ps, [stored.time_ps[i], stored.time_ps[i] + 1])
    hits = np.flatnonzero((tl.address[lo:hi] == stored.address[i]) & (tl.activity[lo:hi] == stored.activity[i]))
    return int(lo + hits[0]) if len(hits) else -1


def _from_binary(data: bytes | bytearray, name: str, task: TaskState) -> dict:
    try:
        (entries,) = wire.find_fields(data, 0, len(data), [1])
        key_spans, value_spans = wire.decode_messages(data, entries, [(1, "s"), (2, "s")])
        (num_hosts,), (version,) = wire.decode_messages(data, np.array([[0, len(data)]]), [(2, "i"), (5, "i")])
    except ValueError as e:
        raise ProfileError(
            f"{name}: not a MemoryProfile protobuf ({e}); the file may be truncated or of another type"
        ) from None
    if not len(entries) or (key_spans[:, 0] < 0).any():
        raise ProfileError(f"{name}: not a MemoryProfile (no allocator entries); is it another kind of file?")
    allocators = {}
    for i, ((k0, k1), (v0, v1)) in enumerate(zip(key_spans, value_spans)):
        task.report(0.5 + 0.3 * i / len(entries), "Decoding snapshots")
        try:
            key = data[k0 : k0 + k1].decode("utf-8")
        except UnicodeDecodeError:
            raise ProfileError(f"{name}: not a MemoryProfile (allocator id is not text)") from None
        try:
            allocators[key] = _allocator_from_binary(data, int(v0), int(max(v1, 0)))
        except ValueError as e:
            raise ProfileError(f"{name}: corrupt allocator {key!r}: {e}") from None
    return {"allocators": allocators, "num_hosts": int(num_hosts), "version": int(version)}


def _allocator_from_binary(data: bytes | bytearray, start: int, length: int) -> dict:
    if start < 0:
        start, length = 0, 0
    end = start + length
    snapshot_spans, summary_span, active_spans, special_spans, sampled_spans = wire.find_fields(
        data, start, end, [1, 2, 3, 4, 5]
    )
    summary_span = summary_span[-1:]  # the last occurrence wins
    snapshots = _snapshots_from_binary(data, snapshot_spans)
    sampled = _snapshots_from_binary(data, sampled_spans) if len(sampled_spans) else None
    active = wire.decode_messages(data, active_spans, [(1, "i"), (2, "i"), (3, "i")])
    special = [Metadata(**m) for m in _metadata_dicts(data, special_spans)]
    summary = None
    if len(summary_span):
        lifetime, stats_span, peak_time, capacity = wire.decode_messages(
            data, summary_span, [(1, "i"), (2, "s"), (3, "i"), (4, "i")]
        )
        st, hp, fr, frag, _ = wire.decode_messages(data, stats_span, [(1, "i"), (2, "i"), (3, "i"), (4, "d"), (5, "i")])
        summary = MemorySummary(
            0,
            0,
            int(capacity[0]),
            int(lifetime[0]),
            int(peak_time[0]),
            int(st[0]),
            int(hp[0]),
            int(fr[0]),
            float(frag[0]),
        )
    return {
        "snapshots": snapshots,
        "sampled": sampled,
        "summary": summary,
        "special": special,
        "active": [tuple(int(x) for x in row) for row in zip(*active)],
    }


def _snapshots_from_binary(data: bytes | bytearray, spans: np.ndarray) -> Snapshots:
    time_ps, stats, meta = wire.decode_messages(data, spans, [(1, "i"), (2, "s"), (3, "s")])
    stack, heap, free, frag, peak = wire.decode_messages(
        data, stats, [(1, "i"), (2, "i"), (3, "i"), (4, "d"), (5, "i")]
    )
    m = wire.decode_messages(
        data, meta, [(1, "i"), (2, "i"), (3, "i"), (4, "i"), (5, "s"), (6, "i"), (7, "s"), (8, "s"), (9, "s")]
    )
    index_of = {"": 0}
    ids = []
    for spans_ in (m[4], m[6], m[7], m[8]):
        local_ids, local_strings = wire.intern_strings(data, spans_)
        remap = np.array([index_of.setdefault(s, len(index_of)) for s in local_strings], np.int32)
        ids.append(remap[local_ids])
    strings = list(index_of)
    return Snapshots(
        time_ps=time_ps,
        stack=stack,
        heap=heap,
        free=free,
        fragmentation=frag,
        peak_in_use=peak,
        activity=m[0],
        requested=m[1],
        allocation=m[2],
        address=m[3].view(np.uint64),
        step=m[5],
        op=ids[0],
        region=ids[1],
        dtype=ids[2],
        shape=ids[3],
        strings=strings,
    )


def _metadata_dicts(data: bytes | bytearray, spans: np.ndarray) -> list[dict]:
    m = wire.decode_messages(
        data, spans, [(1, "i"), (2, "i"), (3, "i"), (4, "i"), (5, "s"), (6, "i"), (7, "s"), (8, "s"), (9, "s")]
    )
    text = lambda span: data[span[0] : span[0] + span[1]].decode("utf-8", "replace") if span[0] >= 0 else ""
    return [
        {
            "activity": int(m[0][i]),
            "requested": int(m[1][i]),
            "allocation": int(m[2][i]),
            "address": int(m[3][i]) & (2**64 - 1),
            "op": text(m[4][i]),
            "step": int(m[5][i]),
            "region": text(m[6][i]),
            "dtype": text(m[7][i]),
            "shape": text(m[8][i]),
        }
        for i in range(len(spans))
    ]


def _from_json(data, name: str, task: TaskState) -> dict:
    """One pass of _memory_json over the document: snapshot fields straight
    into shared columns, each list a slice of them with its own strings."""
    task.report(0.5, "Decoding snapshots")
    limit = min(max_nesting(), 1 << 24)  # the reader's stack: a byte per level, on the heap
    r = _memory_json.read(data, limit)
    if "error" in r:
        raise _json_error(r, data, name, limit)
    task.report(0.8, "Decoding snapshots")
    cols = r["columns"]
    allocators = {}
    for key, snapshots, sampled, summary, special, active in r["allocators"]:
        allocators[key] = {
            "snapshots": _snapshots_from_columns(cols, *snapshots),
            "sampled": _snapshots_from_columns(cols, *sampled) if sampled[1] > sampled[0] else None,
            "summary": MemorySummary(0, 0, *summary) if summary else None,
            "special": [Metadata(*m) for m in special],
            "active": active,
        }
    return {"allocators": allocators, "num_hosts": r["num_hosts"], "version": r["version"]}


def _snapshots_from_columns(cols: dict, first: int, end: int, strings: list[str]) -> Snapshots:
    return Snapshots(strings=strings, **{k: v[first:end] for k, v in cols.items()})


def _json_error(r: dict, data, name: str, limit: int) -> ProfileError:
    where = f"line {r['line']}, column {r['column']} (byte {r['offset']})"
    kind = r["error"]
    if kind == "syntax":
        hint = "; the file may be truncated" if r["offset"] >= len(data) else ""
        return ProfileError(f"{name}: invalid JSON ({r['message']} at {where}){hint}")
    if kind == "depth":
        return nesting_refused(
            f"{name}: the JSON at {where} (a MemoryProfile needs {MEMORY_PROFILE_DEPTH} levels)", limit
        )
    if kind == "not_profile":
        return ProfileError(f"{name}: this JSON is not a MemoryProfile (no memoryProfilePerAllocator)")
    if kind == "memory":
        return ProfileError(f"{name}: out of memory while reading the memory profile")
    value = r["value"]
    detail = r["message"] if value is None else f"{r['message']} {value!r}" if r["quote"] else f"{r['message']} {value}"
    return ProfileError(f"{name}: not a valid MemoryProfile: {r['path'] or 'the document'}: {detail} ({where})")


# MemoryProfile's top-level keys in proto3 JSON, and its fields in binary: number -> wire type.
JSON_KEYS = {"memoryProfilePerAllocator", "memory_profile_per_allocator", "numHosts", "num_hosts", "memoryIds",
             "memory_ids"}
FIELDS = {1: 2, 2: 0, 3: 2, 5: 0, 6: 2}


def refused(head: bytes) -> str | None:
    """Why a file's head is not a MemoryProfile, or None when it starts as one:
    JSON with its keys, or protobuf whose first fields are its fields (an
    allocator entry, a map entry starting with its key)."""
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] in (b"{", b"["):
        if JSON_KEYS & set(json_keys(head, 32)):
            return None
        return "not a MemoryProfile (no memoryProfilePerAllocator)"
    fields = proto_fields(head)
    if fields and all(FIELDS.get(n) == w for n, w in fields) and any(n in (1, 3) for n, _ in fields):
        if fields[0][0] != 1 or _first_entry_has_key(head):
            return None
    return "not a MemoryProfile protobuf (its fields are not a MemoryProfile's)"


def _first_entry_has_key(head: bytes) -> bool:
    """Whether field 1 (a map entry) starts with its key, field 1 as text."""
    p = 1
    while p < len(head) and head[p] & 0x80:
        p += 1
    return head[p + 1 : p + 2] in (b"\x0a", b"")


class MemoryProfileFormat(Format):
    name = "memory_profile"
    title = "`MemoryProfile` as proto3 JSON (XProf, TensorFlow 2.2-2.3), `.json` or `.json.gz`, or binary protobuf"
    where = (
        "`<host>.memory_profile.json[.gz]` or `<host>.memory_profile.pb` in a session, "
        "or any single `.json[.gz]` / `.pb[.gz]` file whose first keys or protobuf fields are a MemoryProfile's"
    )
    patterns = ("*.json", "*.json.gz", "*.pb", "*.pb.gz")
    tools = (MEMORY_PROFILE,)
    rank = 1

    def host_in_folder(self, path: Path) -> str | None:
        return strip_suffix(path.name, SESSION_SUFFIXES)

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        # Asked last (see profscope.models.formats): a lone .json or .pb that no other
        # format took is a MemoryProfile named after the file when its content starts as one.
        if host := strip_suffix(path.name, SESSION_SUFFIXES):
            return path.parent.name, host
        return (path.name, path.name) if self.refusal(path) is None and path.name.endswith(LONE_SUFFIXES) else None

    def refusal(self, path: Path) -> str | None:
        if not path.name.endswith(LONE_SUFFIXES) or ".memory_profile." in path.name:
            return None  # a session's <host>.memory_profile.* is read, and its reader says what is wrong
        head = head_of(path)
        return None if head is None else refused(head)

    def memory_profile(self, files, host, task):
        return load_memory_profile(files[0], host=host, task=task)


FORMAT = MemoryProfileFormat()
