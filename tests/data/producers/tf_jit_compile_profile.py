"""Writes a real TensorFlow profile of two `jit_compile=True` functions run
from a plain tf.function (XLA clusters beside TensorFlow ops). Run in a
throwaway venv with tensorflow-cpu, not in the test suite:

    python tf_jit_compile_profile.py LOGDIR

Its metadata plane holds the clusters' HloProtos as TensorFlow stores them
(`a_inference_dense_24__.1(0)`, `a_inference_norm_36__.2(1)`: the module's
unique id as the program id), and the host events of the XLA ops carry
`hlo_op`, `hlo_module` and `program_id`. xprof_device_planes.py lays out
`gpu_tf_xla` from it.
"""

import sys

import tensorflow as tf


@tf.function(jit_compile=True)
def dense(x, w):
    return tf.nn.relu(tf.matmul(x, w) + 1.0)


@tf.function(jit_compile=True)
def norm(y):
    m = tf.reduce_mean(y, axis=0)
    return tf.tanh((y - m) * 0.5)


@tf.function
def step(x, w):
    y = dense(x, w)
    z = norm(tf.sigmoid(y))
    return tf.reduce_sum(z)


x = tf.random.normal([64, 32])
w = tf.random.normal([32, 16])
step(x, w)  # compile outside the profile
tf.profiler.experimental.start(sys.argv[1])
for i in range(3):
    with tf.profiler.experimental.Trace("train", step_num=i, _r=1):
        step(x, w)
tf.profiler.experimental.stop()
