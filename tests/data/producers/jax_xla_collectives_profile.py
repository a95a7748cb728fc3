"""Profiles jitted JAX programs whose XLA modules hold collectives and a
random number generator (run in a throwaway venv with jax on CPU, four CPU
devices; not part of the test suite):

    python jax_xla_collectives_profile.py /tmp/xla_collectives

`jit_collectives` (shard_map over four devices) has all-reduce (one of a
tuple: XLA combines two psums), all-gather, reduce-scatter, all-to-all and
collective-permute; `jit_rng` has
lax.rng_uniform, which XLA (on CPU as on GPU) expands into
rng-get-and-update-state and fusions. Both run twice under jax.profiler:
the trace's xplane.pb carries their optimised HloProtos in its
/host:metadata plane, which xprof_device_planes.py lays out as a GPU's
kernels (gpu_jax_collectives).

XLA:CPU runs its collectives synchronously; XLA:GPU emits them in its
async form. So the compiled jit_collectives is also written as XLA:GPU's
async collectives pass would leave it: its text with all-reduce,
all-gather and collective-permute turned into their -start/-done pairs and
reduce-scatter and all-to-all wrapped in async-start/-done (the
all-to-all with an async-update between; the all-gather's and
reduce-scatter's replica groups written as iota lists, as XLA's SPMD
partitioner writes them: `[1,4]<=[4]`, and the same four devices in the order
0, 2, 1, 3, `[1,4]<=[2,2]T(1,0)`), parsed by XLA's own HLO parser
(jaxlib's hlo_module_from_text) into a real HloModuleProto named
`jit_collectives_async`, written to
`<dir>/jit_collectives_async.hlo_module.pb`.
"""

import os
import re
import sys
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=4"  # four CPU devices: collectives

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402
from jax._src.lib import hlo  # noqa: E402
from jax.sharding import NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402


def collectives(x, y, k):  # psum of x and y: one all-reduce of a tuple (XLA combines them), k's of its own
    return (lax.psum((x, y, k), "i"), lax.all_gather(x, "i"), lax.psum_scatter(x, "i", scatter_dimension=0, tiled=True),
            lax.all_to_all(x, "i", 0, 0, tiled=True), lax.ppermute(x, "i", [(k, (k + 1) % 4) for k in range(4)]))


def rng(x):
    return x + lax.rng_uniform(0.0, 1.0, x.shape)


# HLO instruction lines: name, shape, opcode, operands, attributes.
LINE = re.compile(r"^(\s*)(ROOT )?%(\S+) = (.+?) ([a-z-]+)\((.*?)\)(, .*)?$")
SYNC_PAIRS = ("all-reduce", "all-gather", "collective-permute")  # opcodes with their own -start/-done
WRAPPED = ("reduce-scatter", "all-to-all")  # wrapped in async-start/-done
# The four devices in iota form: in order, and as a 2x2 grid transposed (0, 2, 1, 3)
IOTA_GROUPS = {"all-gather": "replica_groups=[1,4]<=[4]", "reduce-scatter": "replica_groups=[1,4]<=[2,2]T(1,0)"}


def operand_shapes(lines: list[str]) -> dict[str, str]:
    shapes = {}
    for line in lines:
        m = LINE.match(line)
        if m:
            shapes[m.group(3)] = m.group(4)
    # parameters of the entry computation print as "%p = f32[..]{..} parameter(0)" too
    return shapes


def gpu_async(text: str) -> str:
    """The module's collectives in XLA:GPU's async form (its names kept by the -done instructions, so their users
    stay as they were)."""
    lines = text.splitlines()
    shapes = operand_shapes(lines)
    out: list[str] = []
    count: dict[str, int] = {}
    for line in lines:
        m = LINE.match(line)
        if not m or m.group(5) not in SYNC_PAIRS + WRAPPED:
            out.append(line)
            continue
        indent, root, name, shape, opcode, operands, attrs = m.groups()
        attrs = attrs or ""
        metadata = re.search(r", metadata=\{[^}]*\}", attrs)
        done_attrs = metadata.group(0) if metadata else ""
        ops = [o.strip().lstrip("%") for o in operands.split(",")]
        op_shapes = [shapes[o] for o in ops]
        ins = op_shapes[0] if len(ops) == 1 else "(" + ", ".join(op_shapes) + ")"
        n = count[opcode] = count.get(opcode, -1) + 1
        suffix = f".{n}" if n else ""  # XLA's names: all-reduce-start, all-reduce-start.1, ...
        start = f"{opcode}-start{suffix}"
        if opcode == "all-reduce":
            start_shape = shape
        elif opcode in ("all-gather", "collective-permute"):
            start_shape = f"({ins}, {shape})"
        else:
            start_shape = f"(({', '.join(op_shapes)}), {shape})"
        if opcode in IOTA_GROUPS:  # as XLA's SPMD partitioner writes replica groups: an iota list
            attrs = attrs.replace("replica_groups={{0,1,2,3}}", IOTA_GROUPS[opcode])
        out.append(f"{indent}%{start} = {start_shape} {opcode}-start({operands}){attrs}")
        last = start
        if opcode == "all-to-all":
            update = f"{opcode}-update{suffix}"
            out.append(f"{indent}%{update} = {start_shape} {opcode}-update(%{start}){done_attrs}")
            last = update
        out.append(f"{indent}{root or ''}%{name} = {shape} {opcode}-done(%{last}){done_attrs}")
    return "\n".join(out) + "\n"


def main():
    folder = Path(sys.argv[1])
    mesh = jax.make_mesh((4,), ("i",))
    sharded = NamedSharding(mesh, P("i"))
    programs = {
        jax.jit(jax.shard_map(collectives, mesh=mesh, in_specs=P("i"), out_specs=P("i"))):
            (jax.device_put(jnp.arange(512.0).reshape(32, 16), sharded), jax.device_put(jnp.arange(8.0), sharded),
             jax.device_put(jnp.arange(8, dtype=jnp.int32), sharded)),
        jax.jit(rng): (jnp.ones((16, 8)),),
    }
    for f, a in programs.items():  # compile outside the trace
        jax.block_until_ready(f(*a))
    jax.profiler.start_trace(str(folder))
    for _ in range(2):
        for f, a in programs.items():
            jax.block_until_ready(f(*a))
    jax.profiler.stop_trace()
    f, a = next(iter(programs.items()))
    text = gpu_async(f.lower(*a).compile().as_text()).replace("HloModule jit_collectives,",
                                                              "HloModule jit_collectives_async,", 1)
    (folder / "jit_collectives_async.hlo.txt").write_text(text)
    module = hlo.hlo_module_from_text(text)
    (folder / "jit_collectives_async.hlo_module.pb").write_bytes(module.as_serialized_hlo_module_proto())


if __name__ == "__main__":
    main()
