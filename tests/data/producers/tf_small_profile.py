"""Writes a small real TensorFlow profile (fewer than 1,000 memory events, so
XProf's memory_profile output keeps every snapshot in its timeline). Run in a
throwaway venv with tensorflow-cpu, not in the test suite:

    TF_CPU_ALLOCATOR_USE_BFC=true python tf_small_profile.py LOGDIR
"""

import sys

import tensorflow as tf

logdir = sys.argv[1]
w1 = tf.Variable(tf.random.normal([256, 512]), name="w1")
w2 = tf.Variable(tf.random.normal([512, 128]), name="w2")


@tf.function
def train_step(x):
    with tf.GradientTape() as tape:
        h = tf.nn.relu(tf.matmul(x, w1))
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w2)))
    g1, g2 = tape.gradient(loss, [w1, w2])
    w1.assign_sub(0.01 * g1)
    w2.assign_sub(0.01 * g2)
    return loss


train_step(tf.random.normal([64, 256]))  # trace and warm up outside the profile
tf.profiler.experimental.start(logdir)
for step in range(3):
    with tf.profiler.experimental.Trace("train", step_num=step, _r=1):
        train_step(tf.random.normal([64 * (step + 1), 256]))
tf.profiler.experimental.stop()
print("wrote", logdir)
