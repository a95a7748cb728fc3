"""Writes a real TensorFlow profile log dir (run in a throwaway venv with
tensorflow-cpu; not part of the test suite).

    TF_CPU_ALLOCATOR_USE_BFC=true python tf_profile.py LOGDIR

The BFC CPU allocator makes TensorFlow emit MemoryAllocation and
MemoryDeallocation events, so <LOGDIR>/plugins/profile/<session>/<host>.xplane.pb
holds a memory profile.
"""

import sys

import numpy as np
import tensorflow as tf

logdir = sys.argv[1]
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 6

rng = np.random.default_rng(0)
x = rng.normal(size=(512, 64)).astype("float32")
y = rng.integers(0, 10, size=512)

model = tf.keras.Sequential([
    tf.keras.Input(shape=(64,)),
    tf.keras.layers.Dense(256, activation="relu"),
    tf.keras.layers.Dense(256, activation="relu"),
    tf.keras.layers.Dense(10),
])
model.compile(optimizer="adam",
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x, y, batch_size=64, epochs=1, verbose=0)  # warm up outside the trace

tf.profiler.experimental.start(logdir)
for step in range(steps):
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        model.train_on_batch(x[step * 64:(step + 1) * 64], y[step * 64:(step + 1) * 64])
tf.profiler.experimental.stop()
print("wrote", logdir)
