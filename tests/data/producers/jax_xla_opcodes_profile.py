"""Profiles small jitted JAX programs whose XLA modules hold the opcodes of
XLA's GPU cost analysis beyond plain fusions (run in a throwaway venv with
jax on CPU; not part of the test suite):

    python jax_xla_opcodes_profile.py /tmp/xla_opcodes

Each program runs twice under jax.profiler (the collectives on two CPU devices); the trace's xplane.pb carries
their optimised HloProtos in its /host:metadata plane, which
xprof_device_planes.py lays out as a GPU's kernels (gpu_jax_ops).
"""

import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"  # two CPU devices: collectives

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402


def batched_dot(a, b):  # dot with batch dimensions
    return jnp.einsum("bij,bjk->bik", a, b)


def grouped_conv(x, w):  # convolution: feature groups, rhs dilation, strides, padding
    return lax.conv_general_dilated(x, w, window_strides=(2, 1), padding=((1, 1), (2, 2)), rhs_dilation=(1, 2),
                                    dimension_numbers=("NHWC", "HWIO", "NHWC"), feature_group_count=2)


def max_pool(x):  # reduce-window
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def pool_grad(x):  # select-and-scatter (the gradient of a max pool)
    return jax.grad(lambda y: max_pool(y).sum())(x)


def gather_scatter(x, idx, upd):  # gather and scatter
    return x[idx] * 2.0, x.at[idx].add(upd)


def sort_rows(x):  # sort
    return jnp.sort(x, axis=-1)


def branch(p, x):  # conditional
    return lax.cond(p > 0, lambda y: jnp.sin(y) @ y, lambda y: y * 3.0, x)


def update(buf, x, i):  # dynamic-update-slice, pad
    return lax.dynamic_update_slice(buf, x, (i, 0)), jnp.pad(x, ((1, 2), (0, 3)))


def cholesky(a):  # custom-call (LAPACK on CPU)
    return jnp.linalg.cholesky(a @ a.T + 4.0 * jnp.eye(a.shape[0]))


def loop(x):  # while: its body's and condition's instructions run as kernels of their own
    return lax.fori_loop(0, 3, lambda i, y: jnp.tanh(y) @ y, x)


def collectives(x):  # all-reduce, all-gather, collective-permute (over two devices)
    return lax.psum(x, "i"), lax.all_gather(x, "i"), lax.ppermute(x, "i", [(0, 1), (1, 0)])


def main():
    k = jax.random.split(jax.random.PRNGKey(0), 8)
    args = {
        batched_dot: (jax.random.normal(k[0], (4, 16, 32)), jax.random.normal(k[1], (4, 32, 8))),
        grouped_conv: (jax.random.normal(k[2], (2, 16, 16, 8)), jax.random.normal(k[3], (3, 3, 4, 6))),
        max_pool: (jax.random.normal(k[4], (2, 16, 16, 4)),),
        pool_grad: (jax.random.normal(k[4], (2, 16, 16, 4)),),
        gather_scatter: (jax.random.normal(k[5], (64, 16)), jnp.array([3, 1, 7, 3, 60]), jnp.ones((5, 16))),
        sort_rows: (jax.random.normal(k[6], (8, 100)),),
        branch: (jnp.float32(1.0), jax.random.normal(k[7], (16, 16))),
        update: (jnp.zeros((32, 8)), jnp.ones((4, 8)), jnp.int32(5)),
        cholesky: (jax.random.normal(k[0], (8, 8)),),
        loop: (jax.random.normal(k[1], (16, 16)),),
    }
    jitted = {f: jax.jit(f) for f in args}
    args[collectives] = (jnp.ones((2, 8, 16)),)
    jitted[collectives] = jax.pmap(collectives, axis_name="i")
    for f, a in args.items():  # compile outside the trace
        jax.block_until_ready(jitted[f](*a))
    jax.profiler.start_trace(sys.argv[1])
    for _ in range(2):
        for f, a in args.items():
            jax.block_until_ready(jitted[f](*a))
    jax.profiler.stop_trace()


if __name__ == "__main__":
    main()
