"""The formats Profscope reads, one module each (see profscope.models.repository.registry).

FORMATS is the order files are recognised in: a file opened on its own goes
to the first format that takes it, so the MemoryProfile format, which takes
any remaining `.json` or `.pb`, comes last.
"""

from __future__ import annotations

from pathlib import Path

from profscope.models.core import archives
from profscope.models.core.sniff import describe, head_of
from profscope.models.formats import (
    chrome_trace,
    log_memory,
    memory_pprof,
    memory_profile_file,
    memory_timeline,
    others,
    run_metadata_events,
    step_stats,
    tool_protos,
    torch_snapshot,
    xspace,
)

FORMATS = (
    xspace.FORMAT,
    tool_protos.FORMAT,
    run_metadata_events.FORMAT,
    step_stats.FORMAT,
    log_memory.FORMAT,
    memory_timeline.FORMAT,
    torch_snapshot.FORMAT,
    chrome_trace.FORMAT,
    memory_pprof.FORMAT,
    memory_profile_file.FORMAT,
)


def not_a_profile(path: Path) -> str | None:
    """Why a file that no format took is not a profile, when its name or
    content makes it look like one (the recognition reason, for listings and
    errors); None for files that do not (notes, checkpoints, event files
    without run metadata). Reads the file's head only."""
    reasons = [r for f in FORMATS if (r := f.refusal(path))]
    if not reasons:
        return None
    head = head_of(path)
    if head is None:
        return None
    if kind := others.what_it_is(path.name, head):
        return kind
    return f"{describe(head)}: " + "; ".join(dict.fromkeys(reasons))


# HParams sweeps are read from a log dir's event files beside the profile formats
# (profscope.models.hparams.experiment), not through a profile repository.
HPARAMS = ("HParams sweeps: `_hparams_/*` summaries and scalars in event files",
           "every run (folder with event files) below the opened log dir")


ARCHIVES = ("`.tar`, `.tar.gz`, `.tgz` or `.zip` of any of these",
            "opened as the folder it holds (unpacked into a temporary folder; member paths and sizes checked)")


def formats_table() -> str:
    """The README's table of what Profscope reads (`profscope formats`)."""
    rows = [f"| {f.title} | {f.where} |" for f in FORMATS] + ["| {} | {} |".format(*r) for r in (HPARAMS, ARCHIVES)]
    return "\n".join(["| input | where |", "|---|---|", *rows])


def file_patterns() -> list[str]:
    """Every file name pattern of every format (the window's open dialog)."""
    return list(dict.fromkeys([p for f in FORMATS for p in f.patterns] + list(archives.PATTERNS)))
