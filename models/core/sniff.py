"""Cheap looks at a file's head (its first bytes, gunzipped): what kind of
data it starts with, the first keys of a JSON object, the first fields of a
protobuf message. Formats use them to say whether a file is theirs, and why
not, without parsing the whole file."""

from __future__ import annotations

from profscope.models.core.files import read_head
from profscope.models.core.task import ProfileError

HEAD = 1 << 16
JSON_START = b"\xef\xbb\xbf \t\r\n"


def head_of(path, size: int = HEAD) -> bytes | None:
    """The file's first `size` bytes (gunzipped), or None when it cannot be read."""
    try:
        return read_head(path, size)
    except (OSError, ProfileError):
        return None


def json_keys(head: bytes, most: int = 12) -> list[str]:
    """The first keys of the top-level JSON object the head starts with (at
    most `most`); [] when it starts with no object."""
    text = head.lstrip(JSON_START)
    if text[:1] != b"{":
        return []
    keys: list[str] = []
    depth, i, n = 0, 0, len(text)
    while i < n and len(keys) < most:
        c = text[i]
        if c == 0x22:  # a string: a key when at depth 1 and followed by ':'
            j = i + 1
            while j < n and text[j] != 0x22:
                j += 2 if text[j] == 0x5C else 1
            if depth == 1 and text[j + 1 : j + 64].lstrip(b" \t\r\n")[:1] == b":":
                keys.append(text[i + 1 : j].decode("utf-8", "replace"))
            i = j + 1
            continue
        if c in b"{[":
            depth += 1
        elif c in b"}]":
            depth -= 1
            if depth == 0:
                break
        i += 1
    return keys


def proto_fields(head: bytes, most: int = 8) -> list[tuple[int, int]] | None:
    """(field number, wire type) of the first top-level fields of a binary
    protobuf message (at most `most`, fewer when the head ends inside one), or
    None when the bytes cannot be protobuf (a bad tag or wire type)."""
    fields: list[tuple[int, int]] = []
    p = 0
    while p < len(head) and len(fields) < most:
        tag, p = varint(head, p)
        if tag is None:
            return fields or None  # the head ends inside the tag
        number, wire = tag >> 3, tag & 7
        if number == 0 or wire not in (0, 1, 2, 5):
            return None
        fields.append((number, wire))
        if wire == 0:
            _, p = varint(head, p)
        elif wire == 1:
            p += 8
        elif wire == 5:
            p += 4
        else:
            length, p = varint(head, p)
            p += length or 0
    return fields


def varint(buf: bytes, p: int) -> tuple[int | None, int]:
    """The varint at buf[p] and the offset after it; (None, len(buf)) when it is cut or too long."""
    value = shift = 0
    while p < len(buf) and shift < 64:
        b = buf[p]
        value |= (b & 0x7F) << shift
        p += 1
        if not b & 0x80:
            return value, p
        shift += 7
    return None, len(buf)


WIRE_TYPES = {0: "varint", 1: "64-bit", 2: "length-delimited", 5: "32-bit"}


def describe(head: bytes) -> str:
    """A few words on what the head holds, for "not a profile" reasons."""
    text = head.lstrip(JSON_START)
    if not text:
        return "an empty file"
    if text[:1] == b"{":
        keys = json_keys(head, 6)
        shown = ", ".join(f'"{k}"' for k in keys[:5]) + (", ..." if len(keys) > 5 else "")
        return f"a JSON object with keys {shown}" if keys else "a JSON object"
    if text[:1] == b"[":
        return "a JSON array"
    if b"\0" not in head[:4096] and _is_text(head[:4096]):
        return "text"
    fields = proto_fields(head, 1)
    if fields:
        number, wire = fields[0]
        return f"binary data (as protobuf: first field {number}, {WIRE_TYPES[wire]})"
    return "binary data (not protobuf)"


def _is_text(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError as e:
        return e.start > len(data) - 4  # a character cut at the end
