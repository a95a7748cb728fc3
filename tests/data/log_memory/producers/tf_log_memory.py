"""Writes real TensorFlow LogMemory logs for the tests.

Run in a throwaway environment with TensorFlow (tested with tensorflow-cpu 2.21):

    export TF_CPP_MIN_LOG_LEVEL=0 TF_CPP_VMODULE=log_memory=2
    TF_ENABLE_ONEDNN_OPTS=0 python tf_log_memory.py eager 2> eager-cpu.log
    TF_ENABLE_ONEDNN_OPTS=1 python tf_log_memory.py eager 2> eager-onednn.log       # then gzip
    TF_ENABLE_ONEDNN_OPTS=0 python tf_log_memory.py graph 2> graph-cpu.log          # then gzip
    TF_ENABLE_ONEDNN_OPTS=1 TF_CPU_ALLOCATOR_USE_BFC=true \
        python tf_log_memory.py graph 2> graph-bfc-onednn.log                      # then gzip

TensorFlow prints the `__LOG_MEMORY__` lines on stderr among its other log
output. "graph" trains a small dense network with a TF1 session (steps with
MemoryLogStep lines, tensor allocations by kernel); "eager" runs eager ops and
a tf.function. The plain CPU allocator gives most tensors no allocation_id
(untracked); TF_CPU_ALLOCATOR_USE_BFC=true adds a tracking BFC allocator.
"""

import sys

import numpy as np
import tensorflow as tf


def graph_mode() -> None:
    tf.compat.v1.disable_eager_execution()
    x = tf.compat.v1.placeholder(tf.float32, (32, 64), name="x")
    y = tf.compat.v1.placeholder(tf.float32, (32, 10), name="y")
    w1 = tf.compat.v1.get_variable("w1", (64, 128))
    w2 = tf.compat.v1.get_variable("w2", (128, 10))
    h = tf.nn.relu(tf.matmul(x, w1), name="hidden")
    logits = tf.matmul(h, w2, name="logits")
    loss = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train = tf.compat.v1.train.GradientDescentOptimizer(0.1).minimize(loss)
    data = np.random.default_rng(1)
    with tf.compat.v1.Session() as sess:
        sess.run(tf.compat.v1.global_variables_initializer())
        for _ in range(3):
            xs = data.standard_normal((32, 64)).astype("float32")
            ys = np.eye(10, dtype="float32")[data.integers(0, 10, 32)]
            print(sess.run([loss, train], {x: xs, y: ys})[0])


def eager_mode() -> None:
    x = tf.random.uniform((64, 64), seed=1)

    @tf.function
    def step(a):
        return tf.nn.relu(tf.matmul(a, a)) / 100.0

    for _ in range(3):
        x = tf.nn.relu(tf.matmul(x, x)) / 100.0
        x = step(x)
    print(float(tf.reduce_sum(x)))


if __name__ == "__main__":
    {"graph": graph_mode, "eager": eager_mode}[sys.argv[1]]()
