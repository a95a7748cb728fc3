"""Writes a small real JAX profile (<host>.xplane.pb) of three jit-compiled
MLP training steps on CPU. Run in a throwaway venv with jax[cpu], not in the
test suite:

    python jax_profile.py LOGDIR

The XSpace file lands in LOGDIR/plugins/profile/<session>/<host>.xplane.pb.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

logdir = sys.argv[1]
# numpy inputs: jax.random would compile extra programs whose HLO the profile
# also stores, several times the size of the rest of the file
rng = np.random.default_rng(0)
params = [
    jnp.asarray(rng.normal(size=shape).astype(np.float32) * 0.1)
    for shape in [(32, 64), (64, 64), (64, 8)]
]
x = jnp.asarray(rng.normal(size=(16, 32)).astype(np.float32))
y = jnp.asarray(np.zeros((16, 8), np.float32))


def loss_fn(params, x, y):
    h = x
    for w in params[:-1]:
        h = jax.nn.relu(h @ w)
    return jnp.mean((h @ params[-1] - y) ** 2)


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
    return [w - 0.01 * g for w, g in zip(params, grads)], loss


params, loss = train_step(params, x, y)  # compile and warm up outside the trace
jax.block_until_ready(loss)
with jax.profiler.trace(logdir):
    for step in range(3):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            params, loss = train_step(params, x, y)
            jax.block_until_ready((params, loss))
print("wrote", logdir)
