"""memory_viewer of a module with 100,000 buffers: seconds for the whole
tool (module read, heap replay, JSON), printed, never asserted.

The module is a real one scaled with the real schema: the JAX fixture's
jit_train_step program (tests/data/xprof/jaxprog.xplane.pb) with its
temporary buffers, their defining instructions and its heap simulator
events repeated under new ids until there are 100,000 logical buffers (one
long program that allocates and frees the same pattern over and over). It
is written as `<module>.hlo_proto.pb` beside a copy of an xplane in a
temporary folder, as XProf keeps modules.

    python benchmarks/memory_viewer_bench.py [BUFFERS]
"""

import shutil
import sys
import tempfile
import time
from pathlib import Path

from profscope.models.analysis.xprof.hlo_source import xspace_modules
from profscope.models.analysis.xprof.memory_viewer import memory_viewer
from profscope.models.core.task import TaskState
from profscope.protos import hlo_pb2

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "xprof"


def scaled_module(buffers: int) -> bytes:
    proto = hlo_pb2.HloProto.FromString(xspace_modules(DATA / "jaxprog.xplane.pb")["jit_train_step(16)"])
    ba = proto.buffer_assignment
    trace = ba.heap_simulator_traces[0]
    traced = {e.buffer_id for e in trace.events}
    temp = next(a for a in ba.buffer_allocations if any(x.logical_buffer_id in traced for x in a.assigned))
    pattern = [b for b in ba.logical_buffers if b.id in traced]
    instructions = {i.id: i for c in proto.hlo_module.computations for i in c.instructions}
    entry = next(c for c in proto.hlo_module.computations if c.name == proto.hlo_module.entry_computation_name)
    events = list(trace.events)
    assigned = {x.logical_buffer_id: x for x in temp.assigned}
    next_buffer = max(b.id for b in ba.logical_buffers) + 1
    next_instruction = max(instructions) + 1
    copies = max(0, (buffers - len(ba.logical_buffers)) // len(pattern))
    for c in range(copies):
        ids = {}
        for b in pattern:
            ids[b.id] = next_buffer
            source = instructions[b.defined_at.instruction_id]
            copy = entry.instructions.add()
            copy.CopyFrom(source)
            copy.id, copy.name = next_instruction, f"{source.name}.r{c}"
            new = ba.logical_buffers.add()
            new.CopyFrom(b)
            new.id = next_buffer
            new.defined_at.instruction_id = next_instruction
            a = temp.assigned.add()
            a.CopyFrom(assigned[b.id])
            a.logical_buffer_id = next_buffer
            next_buffer += 1
            next_instruction += 1
        for e in events:
            new_event = trace.events.add()
            new_event.CopyFrom(e)
            new_event.buffer_id = ids[e.buffer_id]
            if e.kind == hlo_pb2.HeapSimulatorTrace.Event.SHARE_WITH:
                new_event.share_with_canonical_id = ids[e.share_with_canonical_id]
    return proto.SerializeToString()


def main() -> None:
    buffers = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    proto = scaled_module(buffers)
    parsed = hlo_pb2.HloProto.FromString(proto)
    n_buffers = len(parsed.buffer_assignment.logical_buffers)
    n_events = len(parsed.buffer_assignment.heap_simulator_traces[0].events)
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(DATA / "small.xplane.pb", Path(tmp) / "vm.xplane.pb")
        (Path(tmp) / "big(1).hlo_proto.pb").write_bytes(proto)
        best = best_cpu = float("inf")
        for _ in range(5):
            start, cpu = time.perf_counter(), time.process_time()
            data = memory_viewer([Path(tmp) / "vm.xplane.pb"], {"module_name": "big(1)"}, TaskState())
            size = len(data.output)
            best, best_cpu = min(best, time.perf_counter() - start), min(best_cpu, time.process_time() - cpu)
    print(
        f"memory_viewer: {n_buffers} buffers, {n_events} heap events, {len(proto) / 1e6:.1f} MB module, "
        f"{size / 1e6:.1f} MB JSON: {best:.3f} s wall, {best_cpu:.3f} s CPU (best of 5)"
    )


if __name__ == "__main__":
    main()
