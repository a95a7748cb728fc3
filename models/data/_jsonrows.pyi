# Types of the C extension _jsonrows.c (its method table); keep in step with the C.
from typing import Any

def json_rows(parts: list[bytes], columns: list[Any], start: int, stop: int, sep: bytes, /) -> bytes: ...
