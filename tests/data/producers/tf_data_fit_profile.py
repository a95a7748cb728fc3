"""Writes a TensorFlow CPU profile of Keras `model.fit` fed by a tf.data
pipeline (map + batch + prefetch), so XProf's input_pipeline_analyzer has
host input ops (run in a throwaway venv with tensorflow-cpu; not part of the
test suite).

    python tf_data_fit_profile.py LOGDIR

The profile covers batches 2-5 of the second epoch. A callback does what
Keras' TensorBoard callback does with `profile_batch` (that one needs the
tensorboard package), marking each batch as a `train` step root (`_r=1`), as
XProf's step grouping expects.
"""

import sys

import numpy as np
import tensorflow as tf

logdir = sys.argv[1]

rng = np.random.default_rng(0)
x = rng.normal(size=(1024, 32)).astype("float32")
y = rng.integers(0, 10, size=1024)


def augment(features, label):
    # A little host work per element, so the map stage shows in the input pipeline.
    return tf.math.tanh(features) + 0.01 * tf.random.stateless_normal([32], seed=[1, 2]), label


dataset = (tf.data.Dataset.from_tensor_slices((x, y))
           .map(augment, num_parallel_calls=2)
           .batch(128)
           .prefetch(2))

model = tf.keras.Sequential([
    tf.keras.Input(shape=(32,)),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(10),
])
model.compile(optimizer="sgd", loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))


class Profile(tf.keras.callbacks.Callback):
    def __init__(self, first, last):
        super().__init__()
        self.first, self.last, self.epoch, self.trace = first, last, 0, None

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.epoch == 1 and self.first <= batch <= self.last:
            if batch == self.first:
                tf.profiler.experimental.start(logdir)
            self.trace = tf.profiler.experimental.Trace("train", step_num=batch, _r=1)
            self.trace.__enter__()

    def on_train_batch_end(self, batch, logs=None):
        if self.trace is not None:
            self.trace.__exit__(None, None, None)
            self.trace = None
            if batch == self.last:
                tf.profiler.experimental.stop()


model.fit(dataset, epochs=2, verbose=0, callbacks=[Profile(2, 5)])
print("wrote", logdir)
