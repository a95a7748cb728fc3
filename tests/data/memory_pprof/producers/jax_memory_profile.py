"""Writes two small real JAX device memory profiles (gzipped pprof) on CPU.
Run in a throwaway venv with jax[cpu], not in the test suite:

    python jax_memory_profile.py OUTDIR

OUTDIR/before.prof holds the buffers alive after a jitted step; OUTDIR/after.prof
is taken after some of them were freed and one more was made.
"""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)


def make_weights():
    # float32: 4 bytes an element; numpy inputs, so no extra programs run
    return jnp.asarray(np.ones((256, 256), np.float32))  # 262,144 bytes


def make_bias():
    return jnp.asarray(np.zeros((1024,), np.float32))  # 4,096 bytes


@jax.jit
def step(w, b):
    h = w @ w  # (256, 256) float32, 262,144 bytes
    return h + b[:256], jnp.sum(h)


w = make_weights()
b = make_bias()
kept = [jnp.asarray(np.full((100, 100), i, np.int32)) for i in range(3)]  # 40,000 bytes each
h, total = step(w, b)
jax.block_until_ready((h, total))
jax.profiler.save_device_memory_profile(str(out / "before.prof"))

del h, total, kept[1:]
extra = jnp.asarray(np.ones((64, 64), np.float64 if jax.config.jax_enable_x64 else np.float32))  # 16,384 bytes
jax.block_until_ready(extra)
jax.profiler.save_device_memory_profile(str(out / "after.prof"))
print(jax.__version__, sorted(p.name for p in out.glob("*.prof")))
