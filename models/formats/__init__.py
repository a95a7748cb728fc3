"""The formats Profscope reads, one module each (see profscope.models.repository.registry).

FORMATS is the order files are recognised in: a file opened on its own goes
to the first format that takes it, so the MemoryProfile format, which takes
any remaining `.json` or `.pb`, comes last.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, overload

from profscope.models.core import archives
from profscope.models.core.sniff import describe, head_of
from profscope.models.formats import others

if TYPE_CHECKING:
    from profscope.models.repository.registry import Format


class _Formats(Sequence["Format"]):
    """The formats in recognition order, each module imported when it is first
    reached: a command meeting an xplane.pb loads the XSpace reader alone
    (every reader took ~50 ms of each command's start)."""

    MODULES = ("xspace", "tool_protos", "run_metadata_events", "step_stats", "log_memory", "memory_timeline",
               "torch_snapshot", "chrome_trace", "memory_pprof", "memory_profile_file")

    @overload
    def __getitem__(self, i: int) -> Format: ...

    @overload
    def __getitem__(self, i: slice) -> Sequence[Format]: ...

    def __getitem__(self, i):
        if isinstance(i, slice):
            return tuple(self[k] for k in range(len(self))[i])
        return importlib.import_module(f"{__name__}.{self.MODULES[i]}").FORMAT

    def __len__(self) -> int:
        return len(self.MODULES)


FORMATS: Sequence[Format] = _Formats()


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
