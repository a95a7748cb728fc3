# Types of the C extension _chrome_json.c (its Scanner type and constants); keep in step with the C.
from collections.abc import Iterable
from typing import Any

BP_E: int
FLOW_IN: int
FLOW_OUT: int
TS_BAD: int
DUR_BAD: int
DUR_NEG: int
TS_MISSING: int
PID_STR: int
TID_STR: int
ARGS_PRESENT: int
LENGTH_OVERFLOW: int
MAX_ARG_KEYS: int
MAX_STRING_BYTES: int
DEFAULT_MAX_EVENT_BYTES: int
DEFAULT_MAX_META_BYTES: int

class Scanner:
    def __init__(
        self, arg_keys: Iterable[bytes] = ..., text_keys: Iterable[bytes] = ..., *, max_event_bytes: int = ...,
        max_meta_bytes: int = ...
    ) -> None: ...
    def feed(self, data: Any, /) -> None: ...
    def finish(self) -> dict[str, Any]: ...
    @property
    def events(self) -> int: ...
    @property
    def position(self) -> int: ...
    @property
    def error(self) -> str | None: ...
