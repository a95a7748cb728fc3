"""Limits on what input may make Profscope do, and the one checked path for
decoding payloads nested inside other records.

Two limits are refused on purpose, each with a message that names it and the
environment variable that raises it:
- how much gzip data may inflate (PROFSCOPE_MAX_INFLATE_RATIO), so a small
  file cannot fill the memory;
- how deeply text may nest (PROFSCOPE_MAX_NESTING), so a parser that recurses
  (protobuf's text format, Python's json) never runs out of stack.
"""

from __future__ import annotations

import os
import re
from typing import TypeVar

import numpy as np
from google.protobuf.message import DecodeError, Message

from profscope.models.core.task import ProfileError

MAX_INFLATE_RATIO = 200  # default; PROFSCOPE_MAX_INFLATE_RATIO raises it
MIN_INFLATE_LIMIT = 64 << 20  # inflating this much is always allowed (a bomb under 1 MB stays small)
MAX_NESTING = 100  # default; PROFSCOPE_MAX_NESTING raises it

NESTING_CHUNK = 16 << 20

M = TypeVar("M", bound=Message)


def _setting(name: str, default: float) -> float:
    try:
        return max(float(os.environ.get(name, default)), 1.0)
    except ValueError:
        return float(default)


def max_inflate_ratio() -> float:
    return _setting("PROFSCOPE_MAX_INFLATE_RATIO", MAX_INFLATE_RATIO)


def max_nesting() -> int:
    return int(_setting("PROFSCOPE_MAX_NESTING", MAX_NESTING))


def inflate_limit(compressed_size: int) -> int:
    """How many bytes gzip data of `compressed_size` bytes may inflate to."""
    return int(max(compressed_size * max_inflate_ratio(), MIN_INFLATE_LIMIT))


def inflate_refused(path, compressed_size: int, what: str = "the gzip data") -> ProfileError:
    limit = inflate_limit(compressed_size)
    return ProfileError(
        f"{path}: {what} inflates to more than {limit / (1 << 20):,.0f} MiB "
        f"({limit / max(compressed_size, 1):,.0f}x its compressed size); refusing to read further. "
        f"Raise the limit with the environment variable PROFSCOPE_MAX_INFLATE_RATIO (now {max_inflate_ratio():g})")


def nesting_refused(what: str, limit: int | None = None) -> ProfileError:
    limit = limit or max_nesting()
    return ProfileError(
        f"{what}: nested more than {limit} levels deep; refusing to read it. "
        f"Raise the limit with the environment variable PROFSCOPE_MAX_NESTING (now {limit})")


# Strings (with escapes) and comments of protobuf's text format: their
# brackets do not nest.
_STRING_OR_COMMENT = rb'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|#[^\n]*'
_TEXT_NOT_NESTING = re.compile(_STRING_OR_COMMENT)
_OPENERS = np.zeros(256, np.int8)
_OPENERS[list(b"{<[")] = 1
_OPENERS[list(b"}>]")] = -1


def text_nesting(data: bytes | str) -> int:
    """How deeply brackets ({ < [) nest in protobuf text format, outside
    strings and comments. Counted in chunks: memory stays small."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    deepest = depth = start = 0
    while start < len(data):
        end = data.find(b"\n", start + NESTING_CHUNK)  # strings end with their line
        end = len(data) if end < 0 else end + 1
        cleaned = _TEXT_NOT_NESTING.sub(b"", data[start:end])
        steps = np.cumsum(_OPENERS[np.frombuffer(cleaned, np.uint8)], dtype=np.int64) + depth
        if len(steps):
            deepest, depth = max(deepest, int(steps.max())), int(steps[-1])
        start = end
    return deepest


# A string, a comment (kept as they are), or what separates two tokens.
_TEXT_SEPARATOR = re.compile(rb"(" + _STRING_OR_COMMENT + rb")|[ \t]+|([,;])")
LONG_TEXT_LINE = 4096


def _short_lines(data: bytes) -> bytes:
    """The text with a line break after each token when a line is long.
    protobuf's text parser copies the current line into every error it makes,
    and it makes one per value it skips in an unknown field: on one long line
    of many values that is quadratic (a 500 KB line took three minutes)."""
    ends = np.flatnonzero(np.frombuffer(data, np.uint8) == ord("\n"))
    if len(data) <= LONG_TEXT_LINE or np.diff(ends, prepend=-1, append=len(data)).max() <= LONG_TEXT_LINE:
        return data
    return _TEXT_SEPARATOR.sub(lambda m: m.group(1) or (m.group(2) or b"") + b"\n", data)


def parse_text(text: bytes | str, message: Message, what: str) -> Message:
    """Protobuf text format into `message` (unknown fields skipped), with the
    nesting bounded first: the parser recurses once per level. Line numbers
    in errors count the lines of `_short_lines`' text."""
    from google.protobuf import text_format  # ~7 ms to import: only the text-format readers need it

    if isinstance(text, str):
        text = text.encode("utf-8", "surrogatepass")
    if text_nesting(text) > max_nesting():
        raise nesting_refused(what)
    try:
        text_format.Parse(_short_lines(text), message, allow_unknown_field=True)
    except (text_format.ParseError, ValueError) as e:
        raise ProfileError(f"{what}: not a valid {message.DESCRIPTOR.name} in text format: {e}") from None
    except RecursionError:  # a raised PROFSCOPE_MAX_NESTING beyond Python's stack
        raise nesting_refused(what) from None
    return message


def decode(message_type: type[M], data, what: str) -> M:
    """A binary protobuf payload found inside another record (a stat, an
    event's metadata, a summary's plugin data or tensor). Corrupt bytes and
    nesting beyond protobuf's own limit (100) are a ProfileError naming `what`."""
    message = message_type()
    try:
        message.ParseFromString(data if isinstance(data, bytes) else memoryview(data))  # type: ignore[arg-type]  # no copy
        return message
    except (DecodeError, RecursionError, ValueError) as e:
        raise ProfileError(f"{what}: a corrupt {message_type.DESCRIPTOR.name} ({e or 'cannot be decoded'})") from None


def compile_regexp(pattern: str, error: type[ProfileError] = ProfileError):
    """A linear-time (RE2) pattern; a hostile expression cannot stall the program.
    RE2 has no backreferences or lookaround: such patterns are refused (with
    `error`)."""
    import re2  # only filters use it

    options = re2.Options()
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error as e:
        detail = e.args[0].decode() if e.args and isinstance(e.args[0], bytes) else str(e)
        raise error(f"Invalid regular expression {pattern!r}: {detail}") from None
