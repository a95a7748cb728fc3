"""What a log of allocations holds beyond the memory timelines: every
allocation (tracked or not) with its step and kernel, the counts of what was
read, and the per-kernel and per-step totals the memory view shows.

TensorFlow LogMemory logs (profscope.models.formats.log_memory) fill it; it
reaches the views as MemoryProfileData.log.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# LogMemory::SpecialStepIds: allocations outside any step.
SPECIAL_STEPS = {-1: "constant folding", -2: "op kernel construction", -3: "external tensor allocation",
                 -4: "network buffer", -5: "proto buffer", -6: "unknown step"}


@dataclass
class KernelRows:
    """Allocation totals per kernel (or raw operation), largest first."""

    kernel: list[str]
    count: np.ndarray
    tracked: np.ndarray  # allocations with an allocation_id (on the timeline)
    bytes: np.ndarray  # allocated bytes (requested when not reported)
    requested: np.ndarray

    def __len__(self) -> int:
        return len(self.kernel)


@dataclass
class StepRows:
    """Per step: time span and allocation totals of one allocator."""

    step: np.ndarray
    handle: list[str]
    start_ps: np.ndarray
    end_ps: np.ndarray
    count: np.ndarray
    bytes: np.ndarray

    def __len__(self) -> int:
        return len(self.step)


@dataclass
class AllocationLog:
    """What a log of allocations held beyond the timelines: counts, and every
    allocation (tracked or not) for the per-kernel and per-step totals."""

    messages: dict[str, int]  # lines read, by message name
    untracked_deallocations: int
    unmatched_deallocations: dict[str, int]  # by allocator
    deferred_deallocations: int
    garbled: int  # lines with the marker that could not be parsed
    unknown: int  # lines naming another message
    text_format_lines: int  # lines the fast scanner handed to text_format
    problems: list[str]  # the first few bad lines, for messages
    strings: list[str]
    # One row per allocation: allocator, step, kernel (string ids), tracked, bytes, requested.
    allocations: dict[str, np.ndarray]
    allocator_ids: dict[str, int]  # memory id -> string id in allocations["allocator"]
    step_handles: dict[int, str]  # from MemoryLogStep
    step_span_ps: dict[int, tuple[int, int]]  # first and last line naming each step

    @property
    def untracked_allocations(self) -> int:
        return int((~self.allocations["tracked"]).sum())

    def skipped_text(self) -> str:
        parts = [f"{n:,} {what}" for n, what in ((self.garbled, "garbled memory lines"),
                                                  (self.unknown, "lines with unknown message names")) if n]
        return "Skipped " + " and ".join(parts) + "." if parts else ""

    def _rows(self, allocator: str, step: int | None) -> np.ndarray:
        t = self.allocations
        sel = t["allocator"] == self.allocator_ids.get(allocator, -1)
        if step is not None:
            sel &= t["step"] == step
        return np.flatnonzero(sel)

    def kernels(self, allocator: str, step: int | None = None) -> KernelRows:
        """Allocations per kernel of one allocator (and step), most bytes first."""
        t, rows = self.allocations, self._rows(allocator, step)
        uniq, inverse = np.unique(t["kernel"][rows], return_inverse=True)
        sums = {k: np.bincount(inverse, t[c][rows], len(uniq)).astype(np.int64)
                for k, c in (("tracked", "tracked"), ("bytes", "bytes"), ("requested", "requested"))}
        count = np.bincount(inverse, minlength=len(uniq)).astype(np.int64)
        order = np.lexsort((uniq, -sums["bytes"]))
        return KernelRows(kernel=[self.strings[i] or "(none)" for i in uniq[order]], count=count[order],
                          **{k: v[order] for k, v in sums.items()})

    def steps(self, allocator: str) -> StepRows:
        """Steps of one allocator's allocations with their totals, in step order."""
        t, rows = self.allocations, self._rows(allocator, None)
        uniq, inverse = np.unique(t["step"][rows], return_inverse=True)
        spans = [self.step_span_ps.get(int(s), (0, 0)) for s in uniq]
        return StepRows(
            step=uniq,
            handle=[self.step_handles.get(int(s), "") for s in uniq],
            start_ps=np.array([s[0] for s in spans], np.int64),
            end_ps=np.array([s[1] for s in spans], np.int64),
            count=np.bincount(inverse, minlength=len(uniq)).astype(np.int64),
            bytes=np.bincount(inverse, t["bytes"][rows], len(uniq)).astype(np.int64),
        )
