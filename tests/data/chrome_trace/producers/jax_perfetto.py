"""Produce jax/perfetto_trace.json.gz: a real JAX profiler trace in Perfetto's
Chrome-JSON form, from jax.profiler.trace(dir, create_perfetto_trace=True) around a
few jitted training steps of a tiny MLP on CPU.

JAX writes <dir>/plugins/profile/<session>/{<host>.xplane.pb, perfetto_trace.json.gz};
only perfetto_trace.json.gz is kept.

Run:  python producers/jax_perfetto.py [OUT_DIR]   (OUT_DIR defaults to ../jax)
"""
import glob
import os
import shutil
import sys
import tempfile

import jax
import jax.numpy as jnp


def init(key):
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (32, 64)) * 0.1, "b1": jnp.zeros(64),
            "w2": jax.random.normal(k2, (64, 4)) * 0.1, "b2": jnp.zeros(4)}


def loss_fn(p, x, y):
    h = jax.nn.relu(x @ p["w1"] + p["b1"])
    logits = h @ p["w2"] + p["b2"]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * jax.nn.one_hot(y, 4), axis=-1))


@jax.jit
def train_step(p, x, y):
    loss, g = jax.value_and_grad(loss_fn)(p, x, y)
    return jax.tree_util.tree_map(lambda a, b: a - 0.1 * b, p, g), loss


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    key = jax.random.PRNGKey(0)
    params = init(key)
    x = jax.random.normal(key, (128, 32))
    y = jax.random.randint(key, (128,), 0, 4)
    params, loss = train_step(params, x, y)  # compile outside the trace
    loss.block_until_ready()
    tmp = tempfile.mkdtemp()
    with jax.profiler.trace(tmp, create_perfetto_trace=True):
        for step in range(5):
            with jax.profiler.StepTraceAnnotation("train", step_num=step):
                params, loss = train_step(params, x, y)
                loss.block_until_ready()
    found = glob.glob(os.path.join(tmp, "plugins", "profile", "*", "perfetto_trace.json.gz"))
    assert len(found) == 1, found
    out = os.path.join(out_dir, "perfetto_trace.json.gz")
    shutil.copyfile(found[0], out)
    shutil.rmtree(tmp)
    print("wrote", out, os.path.getsize(out), "loss", float(loss))


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "..", "jax"))
