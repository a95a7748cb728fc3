"""The formats Profscope reads, one module each (see models.registry).

FORMATS is the order files are recognised in: a file opened on its own goes
to the first format that takes it, so the MemoryProfile format, which takes
any remaining `.json` or `.pb`, comes last.
"""

from __future__ import annotations

from models.formats import log_memory, memory_profile_file, run_metadata_events, step_stats, xspace

FORMATS = (
    xspace.FORMAT,
    run_metadata_events.FORMAT,
    step_stats.FORMAT,
    log_memory.FORMAT,
    memory_profile_file.FORMAT,
)


def looked_for() -> str:
    """What Profscope looks for, for "found nothing" messages."""
    return "; ".join(f"{f.title} ({f.where})" for f in FORMATS).replace("`", "")


def formats_table() -> str:
    """The README's table of what Profscope reads (`profscope formats`)."""
    rows = [f"| {f.title} | {f.where} |" for f in FORMATS]
    return "\n".join(["| input | where |", "|---|---|", *rows])
