"""A tool's output as the ProfileAnalysis service returns it (a module of its
own: the command line's HParams export needs it without the profile formats)."""

from __future__ import annotations

from collections.abc import Iterable


class ToolData:
    """A tool's output and its format ("json", "proto" or "blob", as in
    ProfileSessionDataResponse). The output may come as chunks made while
    they are consumed (read once): write_to() streams a huge export to a
    file in little memory; `output` joins them."""

    def __init__(self, output: bytes | Iterable[bytes], format: str, warnings: list[str] | None = None):
        self._chunks = [output] if isinstance(output, (bytes, bytearray)) else output
        self.format = format
        self.warnings = warnings or []  # what a reader should know of the output (the CLI prints them on stderr)

    @property
    def output(self) -> bytes:
        if not (isinstance(self._chunks, list) and len(self._chunks) == 1):
            self._chunks = [b"".join(self._chunks)]
        return bytes(self._chunks[0])

    def write_to(self, f) -> int:
        """Writes the output to a binary file object; returns the bytes written."""
        written = 0
        for chunk in self._chunks:
            f.write(chunk)
            written += len(chunk)
        return written
