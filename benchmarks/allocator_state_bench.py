"""Allocator State History on a large trace: building the lifetimes once, then the state at an event (stepping
and jumping), the cached segment bands, and the state view's whole step (state + paint) offscreen.

    python benchmarks/allocator_state_bench.py [ENTRIES]   (default 1,000,000)

The trace is made by simulating a caching allocator (so the snapshot at its end is the one the trace leads to):
64 segments of 64 MiB cut into 1 MiB slots, allocations of random sizes in free slots, most freed at once
(free_requested + free_completed), some later (record_stream), and a temporary segment reserved and released
now and then. Prints the numbers; asserts nothing.
"""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

from profscope.models.analysis.allocator_state import History, build_history
from profscope.models.data.cuda_snapshot import (
    ACTIVE_ALLOCATED,
    ACTIVE_AWAITING_FREE,
    ALLOC,
    FREE_COMPLETED,
    FREE_REQUESTED,
    INACTIVE,
    SEGMENT_ALLOC,
    SEGMENT_FREE,
    Blocks,
    CudaSnapshot,
    DeviceTrace,
    Segments,
    Tracebacks,
)

MiB = 1 << 20
SEGMENTS, SLOTS = 64, 64
BASE = 0x7F0000000000


def make_snapshot(entries: int, seed: int = 0) -> CudaSnapshot:
    rng = np.random.default_rng(seed)
    action, addr, size = [], [], []
    free_slots = list(range(SEGMENTS * SLOTS))
    live: dict[int, int] = {}  # slot -> requested size
    waiting: list[tuple[int, int]] = []  # (due entry, slot) freed later
    temp_open = None
    sizes = rng.integers(512, MiB, entries)
    coin = rng.random(entries)
    while len(action) < entries:
        i = len(action)
        if i % 10_000 == 5_000:
            if temp_open is None:
                temp_open = BASE + 0x100000000 + i * MiB
                action.append(SEGMENT_ALLOC), addr.append(temp_open), size.append(20 * MiB)
            else:
                action.append(SEGMENT_FREE), addr.append(temp_open), size.append(20 * MiB)
                temp_open = None
            continue
        if waiting and waiting[0][0] <= i:
            _, slot = waiting.pop(0)
            action.append(FREE_COMPLETED), addr.append(BASE + slot * MiB), size.append(live.pop(slot))
            free_slots.append(slot)
            continue
        if free_slots and (len(live) < 1500 or coin[i] < 0.45):
            slot = free_slots.pop(int(coin[i] * len(free_slots)))
            live[slot] = int(sizes[i])
            action.append(ALLOC), addr.append(BASE + slot * MiB), size.append(live[slot])
            continue
        pending = {s for _, s in waiting}
        choices = [s for s in list(live)[:64] if s not in pending]
        if not choices:
            continue
        slot = choices[int(coin[i] * len(choices))]
        action.append(FREE_REQUESTED), addr.append(BASE + slot * MiB), size.append(live[slot])
        if coin[i] < 0.05:
            waiting.append((i + 50, slot))  # record_stream: completed later
        else:
            action.append(FREE_COMPLETED), addr.append(BASE + slot * MiB), size.append(live.pop(slot))
            free_slots.append(slot)
    n = len(action)
    trace = DeviceTrace(action=np.asarray(action, np.uint8), addr=np.asarray(addr, np.uint64),
                        size=np.asarray(size, np.int64), stream=np.zeros(n, np.int64),
                        time_us=np.arange(n, dtype=np.int64), frames=np.full(n, -1, np.int32),
                        device_free=np.zeros(n, np.int64), category=np.zeros(n, np.int32))
    # the snapshot: each slot a 1 MiB block (allocated with its requested size, awaiting free, or inactive)
    pending = {s for _, s in waiting}
    slots = np.arange(SEGMENTS * SLOTS)
    state = np.full(len(slots), INACTIVE, np.uint8)
    requested = np.full(len(slots), MiB, np.int64)
    for slot, req in live.items():
        state[slot] = ACTIVE_AWAITING_FREE if slot in pending else ACTIVE_ALLOCATED
        requested[slot] = req
    segments = Segments(
        device=np.zeros(SEGMENTS, np.int32), address=(BASE + np.arange(SEGMENTS) * SLOTS * MiB).astype(np.uint64),
        total_size=np.full(SEGMENTS, SLOTS * MiB, np.int64), stream=np.zeros(SEGMENTS, np.int64),
        segment_type=np.zeros(SEGMENTS, np.int32), pool_id=np.zeros(SEGMENTS, np.int32),
        is_expandable=np.zeros(SEGMENTS, np.int8), allocated_size=np.full(SEGMENTS, -1, np.int64),
        active_size=np.full(SEGMENTS, -1, np.int64), requested_size=np.full(SEGMENTS, -1, np.int64),
        block_start=np.arange(SEGMENTS + 1, dtype=np.int64) * SLOTS)
    blocks = Blocks(address=(BASE + slots * MiB).astype(np.uint64), size=np.full(len(slots), MiB, np.int64),
                    requested_size=requested, state=state, frames=np.full(len(slots), -1, np.int32))
    tracebacks = Tracebacks(start=np.zeros(1, np.int64), name=np.zeros(0, np.int32),
                            filename=np.zeros(0, np.int32), line=np.zeros(0, np.int64))
    return CudaSnapshot(traces=[trace], segments=segments, blocks=blocks, tracebacks=tracebacks, strings=[""])


def timed(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def main() -> None:
    entries = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    snap, t_make = timed(make_snapshot, entries)
    print(f"trace: {len(snap.traces[0]):,} entries (simulated in {t_make:.1f} s)")
    history, t_build = timed(build_history, snap, 0)
    print(f"build_history: {t_build * 1000:.0f} ms for {len(history):,} events, {len(history.b_birth):,} block "
          f"lifetimes, {len(history.p_birth):,} segment ranges; notes: {history.notes}")
    rng = np.random.default_rng(1)
    steps = []
    for start in rng.integers(0, len(history) - 50, 20).tolist():
        for k in range(start, start + 10):
            steps.append(timed(history.state, k)[1])
    jumps = [timed(history.state, int(k))[1] for k in rng.integers(0, len(history), 50)]
    s = history.state(len(history) - 1)
    print(f"state(k), stepping: median {statistics.median(steps) * 1000:.1f} ms, max {max(steps) * 1000:.1f} ms "
          f"({len(steps)} steps); random jumps: median {statistics.median(jumps) * 1000:.1f} ms, max "
          f"{max(jumps) * 1000:.1f} ms; last event: {len(s.seg_size)} segments, {len(s.size):,} blocks")
    _, t_bands = timed(lambda: history.bands)
    print(f"cached segment bands: {t_bands * 1000:.1f} ms")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtWidgets import QApplication

    from profscope.widgets.memory.allocator_state import AllocatorStateView
    app = QApplication.instance() or QApplication([])
    view = AllocatorStateView()
    view.resize(1400, 900)
    view.show()
    view.set_history(history)
    app.processEvents()
    paint = []
    for start in rng.integers(0, len(history) - 50, 10).tolist():
        view.select(start)
        app.processEvents()
        for _ in range(5):
            t = time.perf_counter()
            view.next_button.click()
            view.canvas.viewport().grab()  # paints it (as a frame would)
            paint.append(time.perf_counter() - t)
    assert view.canvas.drawn, "the canvas painted nothing"
    print(f"state view, Next + paint (1400x900 window): median {statistics.median(paint) * 1000:.1f} ms, max "
          f"{max(paint) * 1000:.1f} ms ({len(paint)} steps)")
    from profscope.widgets.memory.allocator_state import SegmentTimeline
    for name, h in (("this trace", history), ("20,000 segment events", segment_churn())):
        timeline = SegmentTimeline()
        timeline.resize(1400, 500)
        timeline.show()
        timeline.set_bands(h.bands)
        _, t_first = timed(timeline.grab)
        timeline.mark(len(h) // 2)
        _, t_mark = timed(timeline.grab)
        print(f"cached segment timeline ({name}, {len(h.p_birth):,} segment ranges): first paint "
              f"{t_first * 1000:.1f} ms, marker moved {t_mark * 1000:.1f} ms")


def segment_churn(events: int = 20_000) -> History:
    """A trace of segment_alloc / segment_free only, about 300 segments reserved at a time."""
    snap = make_snapshot(1000)
    rng = np.random.default_rng(2)
    action, addr, live, at = [], [], [], BASE + (1 << 40)
    for _ in range(events):
        if len(live) < 300 or rng.random() < 0.5:
            action.append(SEGMENT_ALLOC), addr.append(at), live.append(at)
            at += 4 * MiB
        else:
            action.append(SEGMENT_FREE), addr.append(live.pop(int(rng.integers(len(live)))))
    for a in live:  # released before the snapshot, which holds only make_snapshot's segments
        action.append(SEGMENT_FREE), addr.append(a)
    n = len(action)
    snap.traces[0] = DeviceTrace(action=np.asarray(action, np.uint8), addr=np.asarray(addr, np.uint64),
                                 size=np.full(n, 2 * MiB, np.int64), stream=np.zeros(n, np.int64),
                                 time_us=np.arange(n, dtype=np.int64), frames=np.full(n, -1, np.int32),
                                 device_free=np.zeros(n, np.int64), category=np.zeros(n, np.int32))
    return build_history(snap, 0)


if __name__ == "__main__":
    main()
