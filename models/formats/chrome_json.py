"""Chrome trace-event JSON into columns: PyTorch Kineto `*.pt.trace.json[.gz]`,
TensorFlow `<host>.trace.json.gz`, JAX `perfetto_trace.json.gz`.

scan_trace() streams the file (plain or gzip, told by its magic bytes) through
the C Scanner of profscope.models.formats._chrome_json in 16 MiB chunks: one thread
reads and inflates, the calling thread scans (both release the GIL), so a
multi-GB trace never exists as Python objects. The result, a ScannedTrace,
holds one numpy column per event field plus the byte span of every event in
the document, so one event's full JSON can be read back later
(event_json / event_dict) without keeping the text: gzip files keep inflater
checkpoints every 32 MiB of output for that.
"""

from __future__ import annotations

import bisect
import json
import os
import queue
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from profscope.models.core.files import readable_errors, return_large_buffers_to_the_os
from profscope.models.core.guards import inflate_limit, inflate_refused
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats._chrome_json import (  # the flag bits, re-exported
    ARGS_PRESENT,
    BP_E,
    DUR_BAD,
    DUR_NEG,
    FLOW_IN,
    FLOW_OUT,
    LENGTH_OVERFLOW,
    PID_STR,
    TID_STR,
    TS_BAD,
    TS_MISSING,
    Scanner,
)

if TYPE_CHECKING:  # zlib's types: zlib_ng's stub lacks copy() and declares error as an instance
    import zlib
else:
    try:  # zlib-ng inflates about twice as fast as zlib, with the same API (copy() included)
        from zlib_ng import zlib_ng as zlib
    except ImportError:  # pragma: no cover - a dependency; zlib still works
        import zlib

__all__ = [
    "ARGS_PRESENT", "BP_E", "DUR_BAD", "DUR_NEG", "FLOW_IN", "FLOW_OUT", "LENGTH_OVERFLOW", "PID_STR", "TID_STR",
    "TS_BAD", "TS_MISSING", "KINETO_ARG_KEYS", "Checkpoint", "ScannedTrace", "Scanner",
    "scan_trace",
]

CHUNK_SIZE = 16 << 20  # bytes fed to the scanner at once
GZIP_READ_SIZE = 4 << 20  # compressed bytes read at once
GZIP_CHECKPOINT_INTERVAL = 32 << 20  # uncompressed bytes between inflater checkpoints
EVENT_DICT_LIMIT = 1 << 20  # event_dict() parses events up to this many bytes
GZIP_MAGIC = b"\x1f\x8b"

# The args keys Kineto writes numbers under that the trace analyses use.
KINETO_ARG_KEYS = (
    "correlation", "External id", "Bytes", "Addr", "Total Allocated", "Total Reserved",
    "Device Type", "Device Id", "stream", "device",
)


@dataclass(frozen=True)
class Checkpoint:
    """Where inflating can resume: the compressed offset of the next input
    byte, the uncompressed offset of the next output byte, and the inflater
    state there (None: a fresh gzip member starts at `compressed`)."""

    compressed: int
    uncompressed: int
    state: Any = field(default=None, repr=False)


@dataclass
class ScannedTrace:
    """A Chrome trace as columns, one row per object of traceEvents in file
    order. Strings (name, cat, pid, tid, id, bind_id) are int32 ids into
    `strings` (-1 when absent); `flags` bits are the module constants."""

    path: Path
    events: int
    ph: np.ndarray  # uint8: first byte of "ph", 0 if absent
    name: np.ndarray  # int32
    cat: np.ndarray  # int32
    pid: np.ndarray  # int32: number text as written or the string (PID_STR)
    tid: np.ndarray  # int32 (TID_STR)
    ts_us: np.ndarray  # int64: whole microseconds, floored
    ts_ps: np.ndarray  # int32: the picoseconds past ts_us, 0..999,999
    dur_ps: np.ndarray  # int64: exact duration in ps, -1 when absent
    id: np.ndarray  # int32: "id", or id2 as "local:x" / "global:x"
    bind_id: np.ndarray  # int32
    flags: np.ndarray  # uint16
    scope: np.ndarray  # uint8: first byte of "s"
    offset: np.ndarray  # int64: offset of the event's '{' in the (uncompressed) document
    length: np.ndarray  # int32: its length in bytes (-1: LENGTH_OVERFLOW)
    # per arg key, the rows that have it as a number (ascending) and the values:
    # most events have none of the keys, so they cost nothing
    args: dict[str, tuple[np.ndarray, np.ndarray]]
    strings: list[str]
    meta: dict[str, bytes]  # other top-level keys: their raw JSON values
    meta_skipped: list[str]
    warnings: list[str]
    complete: bool  # the document was read to its end without errors
    bad_events: int = 0
    error: str | None = None
    end_offset: int = 0
    gzip: bool = False
    checkpoints: list[Checkpoint] = field(default_factory=list, repr=False)

    def event_json(self, i: int) -> bytes:
        """The full JSON text of event i, read back from the file."""
        offset, length = int(self.offset[i]), int(self.length[i])
        if length < 0:
            raise ProfileError(f"{self.path}: event {i} is longer than 2 GiB")
        try:
            if self.gzip:
                return _inflate_range(self.path, self.checkpoints, offset, length)
            with open(self.path, "rb") as f:
                return os.pread(f.fileno(), length, offset)
        except OSError as e:
            raise ProfileError(f"{self.path}: could not be read again: {e.strerror or e}") from None

    def arg(self, key: str, rows: np.ndarray) -> np.ndarray:
        """The numeric arg `key` of the given events (INT64_MIN where absent)."""
        have, values = self.args[key]
        out = np.full(len(rows), np.iinfo(np.int64).min, np.int64)
        if len(have):
            k = np.minimum(np.searchsorted(have, rows), len(have) - 1)
            hit = have[k] == rows
            out[hit] = values[k[hit]]
        return out

    def keep_only_event_spans(self) -> None:
        """Frees every column but what event_json needs (offset, length),
        once the columns have been turned into a timeline."""
        for name in ("ph", "name", "cat", "pid", "tid", "ts_us", "ts_ps", "dur_ps", "id", "bind_id", "flags", "scope"):
            setattr(self, name, np.zeros(0, getattr(self, name).dtype))
        self.args = {}

    def event_dict(self, i: int) -> dict:
        """Event i as a dict, or {"error": ...} when it cannot be shown."""
        length = int(self.length[i])
        if length < 0 or length > EVENT_DICT_LIMIT:
            size = "more than 2 GiB" if length < 0 else f"{length / (1 << 20):.1f} MiB"
            return {"error": f"the event is {size} of JSON, too large to show"}
        try:
            text = self.event_json(i)
            value = json.loads(text.decode("utf-8", "replace"), strict=False)
        except RecursionError:
            return {"error": "the event is nested too deeply to show"}
        except (ValueError, ProfileError) as e:
            return {"error": f"the event cannot be read: {e}"}
        return value if isinstance(value, dict) else {"error": "the event is not a JSON object"}

    def string(self, column: np.ndarray, i: int) -> str | None:
        """The string of row i of a string-id column (None for -1)."""
        k = int(column[i])
        return self.strings[k] if k >= 0 else None


def scan_trace(path, arg_keys=KINETO_ARG_KEYS, task: TaskState | None = None, text_keys=()) -> ScannedTrace:
    """Reads a Chrome trace-event JSON file (plain or gzip) into columns.
    `args` holds, per arg key, the events whose value is a number and the
    numbers; per text key, the events that have it and its text's string id.

    A document cut off (or gzip data ending early or corrupt, or a syntax
    error part way) keeps every event read before the cut, with a warning and
    complete=False. Files that are not JSON traces raise ProfileError.
    """
    path = Path(path)
    task = task or TaskState()
    keys = tuple(k.encode() if isinstance(k, str) else bytes(k) for k in arg_keys)
    texts = tuple(k.encode() if isinstance(k, str) else bytes(k) for k in text_keys)
    scanner = Scanner(keys, texts)
    keys += texts
    with readable_errors(path):
        f = open(path, "rb")
    with f:
        size = os.fstat(f.fileno()).st_size
        is_gzip = f.read(2) == GZIP_MAGIC
        f.seek(0)
        if is_gzip:
            return_large_buffers_to_the_os()
        reader = _Reader(f, path, size, is_gzip)
        _pipeline(reader, scanner, task, path, size)
    if reader.failure and scanner.position == 0:
        what = "ends before any data" if reader.failure == "truncated" else f"is corrupt ({reader.failure})"
        raise ProfileError(f"{path}: the gzip data {what}")
    try:
        r = scanner.finish()
    except ValueError as e:
        what = str(e).removeprefix("not a JSON trace: ")
        raise ProfileError(f"{path}: is not a JSON trace ({what})") from None
    events = r["events"]
    if not r["has_trace_events"]:
        if r["error"]:
            raise ProfileError(f"{path}: is not valid JSON ({r['error']})")
        keys_found = ", ".join(list(r["meta"])[:8]) or "none"
        raise ProfileError(f"{path}: is JSON but has no traceEvents (top-level keys: {keys_found})")
    if events == 0 and r["bad_events"]:
        raise ProfileError(f"{path}: holds a JSON array of {r['bad_events']:,} values but no trace events")
    warnings = list(r["warnings"])
    complete = r["complete"]
    if reader.failure:
        complete = False
        if reader.failure == "truncated":
            warnings.append(f"the gzip data ends early: kept {events:,} events read before the cut")
        elif r["complete"]:  # e.g. padding after the last gzip member
            warnings.append(f"the gzip data is damaged after the end of the JSON document ({reader.failure}); "
                            "ignored")
            complete = True
        else:
            warnings.append(f"the gzip data is corrupt ({reader.failure}): kept {events:,} events read before it")
    elif r["error"]:
        warnings.append(f"the JSON is malformed: {r['error']}; kept {events:,} events read before it")
    elif not complete:
        warnings.append(
            f"the JSON ends early (at byte {r['end_offset']:,}): kept {events:,} events read before the cut"
        )
    key_names = [k.decode("utf-8", "replace") for k in keys]
    return ScannedTrace(
        path=path,
        events=events,
        ph=r["ph"],
        name=r["name"],
        cat=r["cat"],
        pid=r["pid"],
        tid=r["tid"],
        ts_us=r["ts_us"],
        ts_ps=r["ts_ps"],
        dur_ps=r["dur_ps"],
        id=r["id"],
        bind_id=r["bind_id"],
        flags=r["flags"],
        scope=r["scope"],
        offset=r["offset"],
        length=r["length"],
        args=_sparse_args(r, key_names),
        strings=r["strings"],
        meta=r["meta"],
        meta_skipped=r["meta_skipped"],
        warnings=warnings,
        complete=complete,
        bad_events=r["bad_events"],
        error=r["error"],
        end_offset=r["end_offset"],
        gzip=is_gzip,
        checkpoints=reader.checkpoints,
    )


def _pipeline(reader: _Reader, scanner: Scanner, task: TaskState, path: Path, size: int) -> None:
    """Reads (and inflates) on a second thread while this one scans."""
    chunks: queue.Queue = queue.Queue(maxsize=3)
    worker = threading.Thread(target=reader.run, args=(chunks,), name="chrome-json-reader", daemon=True)
    worker.start()
    label = f"Reading {path.name}"
    try:
        while True:
            item = chunks.get()
            if item is None:
                break
            if isinstance(item, BaseException):
                try:
                    raise item
                finally:  # the error's traceback holds this frame: no cycle keeping the scan's buffers alive
                    item = None
            data, done, recycle = item
            try:
                scanner.feed(data)
            except ValueError as e:  # not JSON at all
                what = str(e).removeprefix("not a JSON trace: ")
                raise ProfileError(f"{path}: does not start like JSON ({what})") from None
            if recycle is not None:
                reader.recycle(recycle)
            task.report(done / size if size else 1.0, f"{label}: {scanner.events:,} events")
            if scanner.error is not None:
                break  # nothing after a syntax error is used
    finally:
        reader.stop.set()
        while worker.is_alive():  # unblock a reader waiting to put
            try:
                item = chunks.get(timeout=0.05)
            except queue.Empty:
                continue
            if isinstance(item, tuple) and item[2] is not None:
                reader.recycle(item[2])
        worker.join()


class _Reader:
    """The file's bytes in chunks, inflated when gzip, on a thread of its own.
    Puts (data, compressed bytes read, buffer to recycle) tuples, then None;
    an exception object instead when reading must stop with an error."""

    def __init__(self, f, path: Path, size: int, is_gzip: bool):
        self.f, self.path, self.size, self.is_gzip = f, path, size, is_gzip
        self.stop = threading.Event()
        self.failure = ""  # "truncated", or what was wrong with the gzip data
        self.checkpoints: list[Checkpoint] = [Checkpoint(0, 0, None)] if is_gzip else []
        self._free: queue.SimpleQueue = queue.SimpleQueue()

    def recycle(self, buffer) -> None:
        self._free.put(buffer)

    def _put(self, chunks: queue.Queue, item) -> bool:
        while not self.stop.is_set():
            try:
                chunks.put(item, timeout=0.05)
                return True
            except queue.Full:
                pass
        return False

    def run(self, chunks: queue.Queue) -> None:
        try:
            if self.is_gzip:
                self._inflate(chunks)
            else:
                self._read_plain(chunks)
        except OSError as e:
            self._put(chunks, ProfileError(f"{self.path}: could not be read: {e.strerror or e}"))
            return
        except BaseException as e:  # noqa: BLE001 - handed to the scanning thread
            self._put(chunks, e)
            return
        self._put(chunks, None)

    def _read_plain(self, chunks: queue.Queue) -> None:
        for _ in range(3):  # the queue holds up to 3, one is being scanned
            self._free.put(bytearray(CHUNK_SIZE))
        done = 0
        while not self.stop.is_set():
            try:
                buffer = self._free.get(timeout=0.05)
            except queue.Empty:
                continue
            n = self.f.readinto(buffer)
            if not n:
                return
            done += n
            if not self._put(chunks, (memoryview(buffer)[:n], done, buffer)):
                return

    def _inflate(self, chunks: queue.Queue) -> None:
        limit = inflate_limit(self.size)
        d = zlib.decompressobj(wbits=31)
        data, data_at = b"", 0  # compressed bytes in hand and the file offset of data[0]
        out_pos, next_checkpoint = 0, GZIP_CHECKPOINT_INTERVAL
        at_eof = False
        while not self.stop.is_set():
            if not data and not at_eof:
                data = self.f.read(GZIP_READ_SIZE)
                at_eof = not data
            want = min(CHUNK_SIZE, next_checkpoint - out_pos)
            try:
                out = d.decompress(data, want)
            except zlib.error as e:
                self.failure = f"{e}, at compressed byte {data_at:,}"
                return
            if d.eof:
                data_at += len(data) - len(d.unused_data)
                data = d.unused_data
            else:
                data_at += len(data) - len(d.unconsumed_tail)
                data = d.unconsumed_tail
            out_pos += len(out)
            if out_pos > limit:
                raise inflate_refused(self.path, self.size)
            if out and not self._put(chunks, (out, data_at, None)):
                return
            if d.eof:
                if not data:
                    data = self.f.read(GZIP_READ_SIZE)
                    at_eof = not data
                if at_eof and not data:
                    return
                d = zlib.decompressobj(wbits=31)
                self.checkpoints.append(Checkpoint(data_at, out_pos, None))
                next_checkpoint = out_pos + GZIP_CHECKPOINT_INTERVAL
                continue
            if out_pos >= next_checkpoint:
                self.checkpoints.append(Checkpoint(data_at, out_pos, d.copy()))
                next_checkpoint = out_pos + GZIP_CHECKPOINT_INTERVAL
            if at_eof and not data and not out:
                self.failure = "truncated"
                return


def _inflate_range(path: Path, checkpoints: list[Checkpoint], start: int, length: int) -> bytes:
    """Bytes [start, start + length) of the inflated gzip file, inflating from
    the nearest checkpoint before start."""
    k = bisect.bisect_right([c.uncompressed for c in checkpoints], start) - 1
    cp = checkpoints[max(k, 0)]
    d = cp.state.copy() if cp.state is not None else zlib.decompressobj(wbits=31)
    stop = start + length
    pos = cp.uncompressed
    out = bytearray()
    with open(path, "rb") as f:
        f.seek(cp.compressed)
        data, at_eof = b"", False
        while pos < stop:
            if not data and not at_eof:
                data = f.read(1 << 20)
                at_eof = not data
            try:
                chunk = d.decompress(data, 4 << 20)
            except zlib.error as e:
                raise ProfileError(f"{path}: the gzip data is corrupt ({e})") from None
            if d.eof:
                data = d.unused_data
                d = zlib.decompressobj(wbits=31)
            else:
                data = d.unconsumed_tail
            lo, hi = max(start - pos, 0), min(stop - pos, len(chunk))
            if hi > lo:
                out += chunk[lo:hi]
            pos += len(chunk)
            if at_eof and not data and not chunk:
                break
    return bytes(out)


def _sparse_args(r: dict, keys: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The scanner's (row, key, value) triples split per key."""
    by_key = np.argsort(r["arg_keys"], kind="stable")  # rows stay ascending within a key
    bounds = np.searchsorted(r["arg_keys"][by_key], np.arange(len(keys) + 1))
    rows, values = r["arg_rows"][by_key], r["arg_values"][by_key]
    return {key: (rows[bounds[k] : bounds[k + 1]], values[bounds[k] : bounds[k + 1]]) for k, key in enumerate(keys)}
