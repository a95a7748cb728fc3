"""TensorBoard event files (`events.out.tfevents.*`): TFRecord framing.

Each record is `uint64 length | uint32 masked crc32c(length) | data |
uint32 masked crc32c(data)`, little endian, and holds one serialized
`Event` (event.proto). The framing is checked in C (`_tfrecord.scan_records`):
a record whose data fails its CRC is skipped with a warning; after a corrupt
header the scan resumes at the next offset where a whole valid record starts;
a partial last record (a file still being written) ends the read quietly.
"""

from __future__ import annotations

import mmap
import os
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from profscope.models.core import _protowire as wire
from profscope.models.core import _tfrecord
from profscope.models.core.task import ProfileError, TaskState

# Field numbers of event.proto.
EVENT_WALL_TIME, EVENT_STEP, EVENT_TAGGED_RUN_METADATA = 1, 2, 8
TAGGED_TAG, TAGGED_RUN_METADATA = 1, 2

EVENT_FILE_PATTERN = re.compile(r"events\.out\.tfevents\.\d+\.(?P<host>.+?)(?:\.\d+\.\d+)?(?:\.v2)?$")


def is_event_file(name: str) -> bool:
    return "tfevents" in name and EVENT_FILE_PATTERN.match(name) is not None


def host_of_event_file(name: str) -> str:
    """The host name TensorFlow put into an event file's name."""
    m = EVENT_FILE_PATTERN.match(name)
    return m.group("host") if m else name


@contextmanager
def mapped(path: Path):
    """The file's bytes as a read-only buffer, without copying them."""
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                yield b""
                return
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                yield m
    except OSError as e:
        raise ProfileError(f"{path}: cannot read: {e.strerror or e}") from None


@dataclass
class Records:
    """The data spans of an event file's records, and what went wrong."""

    spans: np.ndarray  # int64[k, 2]: offset and length of each good record
    warnings: list[str] = field(default_factory=list)


def scan_records(buf, name: str) -> Records:
    spans, ok, skipped, partial = _tfrecord.scan_records(buf)
    return Records(spans[ok], record_warnings(name, int((~ok).sum()), skipped, partial))


def record_warnings(name: str, bad: int, skipped: int, partial: int) -> list[str]:
    """What went wrong in a file's records: bad records (CRC), skipped bytes
    of framing, and the offset of an incomplete last record (-1: none)."""
    warnings = []
    if bad:
        warnings.append(f"{name}: skipped {bad} record(s) whose data failed the CRC check")
    if skipped:
        warnings.append(f"{name}: skipped {skipped:,} bytes of corrupt record framing")
    if partial >= 0:
        warnings.append(f"{name}: ignored an incomplete last record at byte {partial:,} (file still being written?)")
    return warnings


@dataclass(frozen=True)
class TaggedRunMetadata:
    """One `FileWriter.add_run_metadata` call: a tag (the step's name) and
    where its serialized RunMetadata lies in the file."""

    tag: str
    step: int
    wall_time: float
    offset: int
    length: int


def tagged_run_metadata(path: Path, task: TaskState | None = None) -> tuple[list[TaggedRunMetadata], list[str]]:
    """Every tagged RunMetadata in an event file, in file order, and warnings."""
    task = task or TaskState()
    with mapped(path) as buf:
        task.report(0.1, f"Reading {path.name}")
        records = scan_records(buf, path.name)
        try:
            ((parents, tagged),) = wire.find_children(buf, records.spans, [EVENT_TAGGED_RUN_METADATA])
            wall, step = wire.decode_messages(buf, records.spans[parents], [(EVENT_WALL_TIME, "d"), (EVENT_STEP, "i")])
            tags, metas = wire.decode_messages(buf, tagged, [(TAGGED_TAG, "s"), (TAGGED_RUN_METADATA, "s")])
        except ValueError as e:
            raise ProfileError(f"{path}: a record is not an Event: {e}") from None
        found = []
        for i in range(len(tagged)):
            off, n = tags[i]
            tag = bytes(buf[off:off + n]).decode("utf-8", "replace") if off >= 0 else ""
            if metas[i][0] >= 0:
                found.append(TaggedRunMetadata(tag, int(step[i]), float(wall[i]), int(metas[i][0]), int(metas[i][1])))
        return found, records.warnings
