"""Human-readable byte counts and durations (binary units, us/ms/s)."""

from __future__ import annotations

BYTE_UNITS = ((1 << 40, "TiB"), (1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB"))
TIME_UNITS_PS = ((10**12, "s"), (10**9, "ms"), (10**6, "us"), (10**3, "ns"))


def format_bytes(n: float) -> str:
    sign = "-" if n < 0 else ""
    n = abs(n)
    for size, unit in BYTE_UNITS:
        if n >= size:
            return f"{sign}{n / size:.3g} {unit}" if n / size < 1000 else f"{sign}{n / size:.0f} {unit}"
    return f"{sign}{n:.0f} B"


def byte_unit(span: float) -> tuple[int, str]:
    """The unit to label an axis that spans `span` bytes."""
    for size, unit in BYTE_UNITS:
        if span >= size:
            return size, unit
    return 1, "B"


def time_unit(span_ps: float) -> tuple[int, str]:
    """The unit to label an axis that spans `span_ps` picoseconds."""
    for size, unit in TIME_UNITS_PS:
        if span_ps >= size:
            return size, unit
    return 1, "ps"


def format_time_ps(ps: float) -> str:
    size, unit = time_unit(abs(ps))
    return f"{ps / size:.4g} {unit}"
