"""Writes a small real JAX profile (<host>.xplane.pb) of several jit-compiled
programs of different shapes on CPU (an MLP training step, a convolution, a
reduction with a scan, a program with 24 outputs of one size, whose peak lists
more equal-sized buffers than an insertion sort handles), several steps each, so the profile's metadata plane
holds several XLA modules (HLO protos with their buffer assignments) for the
HLO tools (hlo_stats, op_profile, roofline_model, memory_viewer). Run in a
throwaway venv with jax[cpu], not in the test suite:

    python jax_programs_profile.py LOGDIR

The XSpace file lands in LOGDIR/plugins/profile/<session>/<host>.xplane.pb.
"""

import sys

import jax
import jax.numpy as jnp
import numpy as np

logdir = sys.argv[1]
# numpy inputs: jax.random would compile extra programs whose HLO the profile also stores
rng = np.random.default_rng(0)
f32 = lambda *shape: jnp.asarray(rng.normal(size=shape).astype(np.float32) * 0.1)
mlp = [f32(64, 128), f32(128, 128), f32(128, 10)]
x, y = f32(32, 64), jnp.asarray(np.eye(10, dtype=np.float32)[rng.integers(0, 10, 32)])
kernel, images = f32(3, 3, 4, 8), f32(8, 16, 16, 4)
series = f32(200, 16)


def mlp_loss(params, x, y):
    h = x
    for w in params[:-1]:
        h = jnp.tanh(h @ w)
    logits = h @ params[-1]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=-1))


@jax.jit
def train_step(params, x, y):
    loss, grads = jax.value_and_grad(mlp_loss)(params, x, y)
    return [w - 0.05 * g for w, g in zip(params, grads)], loss


@jax.jit
def conv_block(kernel, images):
    out = jax.lax.conv_general_dilated(images, kernel, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))
    out = jax.nn.relu(out)
    return jnp.max(out, axis=(1, 2)), jnp.sum(out * out)


@jax.jit
def running_stats(series, shift):
    def body(carry, row):
        mean, count = carry
        count = count + 1.0
        mean = mean + (row - mean) / count
        return (mean, count), jnp.linalg.norm(row - mean)

    (mean, _), dists = jax.lax.scan(body, (jnp.zeros(series.shape[1]), 0.0), series + shift)
    return mean, jnp.sort(dists)[-5:]


@jax.jit
def spread(stack):
    return [jnp.tanh(stack[i]) * (i + 1) for i in range(stack.shape[0])]


# compile and warm up outside the trace (spread's input last: its transfer program takes the next id)
jax.block_until_ready((train_step(mlp, x, y), conv_block(kernel, images), running_stats(series, jnp.zeros((), jnp.float32))))
stack = f32(24, 64, 64)
jax.block_until_ready(spread(stack))
with jax.profiler.trace(logdir):
    for step in range(4):
        with jax.profiler.StepTraceAnnotation("train", step_num=step):
            mlp, loss = train_step(mlp, x, y)
            features, energy = conv_block(kernel, images)
            mean, top = running_stats(series, loss)
            parts = spread(stack)
            jax.block_until_ready((mlp, loss, features, energy, mean, top, parts))
print("wrote", logdir)
