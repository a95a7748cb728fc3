"""Writes the `keras_callback` HParams fixture: four tiny Keras models fit for
2 epochs on random data, each session with `hp.KerasCallback` (hparams at
train begin, STATUS_SUCCESS session_end_info at train end) and Keras's own
`TensorBoard` callback (scalars in `<session>/train` and
`<session>/validation`: epoch_loss, epoch_accuracy, plus Keras's
`epoch_learning_rate` / `evaluation_*_vs_iterations` tags). Run in a throwaway
venv, not in the test suite:

    python keras_hparams_callback.py OUTDIR

Produced with Python 3.11, tensorflow-cpu 2.21.0, keras 3.15.1,
tensorboard 2.21.0, numpy 2.4.6 (`CUDA_VISIBLE_DEVICES=""`, no network).
Seeds are fixed (`keras.utils.set_random_seed`); metric values may still
differ in the last bits across machines, wall times and file names always do.

Sessions: OUTDIR/units8_lr0.01, units8_lr0.001 (no trial_id: group named by
the hash of the hparams), units16_lr0.01_rep0 and units16_lr0.01_rep1 (same
hparams, trial_id "units16_lr0.01": one group of two).
"""

import os
import sys

import numpy as np
import tensorflow as tf
import keras
from tensorboard.plugins.hparams import api as hp

out = sys.argv[1]

rng = np.random.default_rng(3)
x = rng.normal(size=(64, 8)).astype("float32")
y = (x[:, 0] + 0.5 * x[:, 1] > 0).astype("int32")
x_val = rng.normal(size=(32, 8)).astype("float32")
y_val = (x_val[:, 0] + 0.5 * x_val[:, 1] > 0).astype("int32")

RUNS = [
    ("units8_lr0.01", {"units": 8, "lr": 0.01, "optimizer": "adam"}, None, 0),
    ("units8_lr0.001", {"units": 8, "lr": 0.001, "optimizer": "adam"}, None, 0),
    ("units16_lr0.01_rep0", {"units": 16, "lr": 0.01, "optimizer": "sgd"},
     "units16_lr0.01", 0),
    ("units16_lr0.01_rep1", {"units": 16, "lr": 0.01, "optimizer": "sgd"},
     "units16_lr0.01", 1),
]

for name, hparams, trial_id, seed in RUNS:
    keras.utils.set_random_seed(seed)
    logdir = os.path.join(out, name)
    model = keras.Sequential([
        keras.Input(shape=(8,)),
        keras.layers.Dense(hparams["units"], activation="relu"),
        keras.layers.Dense(2),
    ])
    opt = (keras.optimizers.Adam(hparams["lr"]) if hparams["optimizer"] == "adam"
           else keras.optimizers.SGD(hparams["lr"]))
    model.compile(optimizer=opt,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.fit(
        x, y, batch_size=16, epochs=2, shuffle=False, verbose=0,
        validation_data=(x_val, y_val),
        callbacks=[
            keras.callbacks.TensorBoard(logdir, histogram_freq=0, write_graph=False,
                                        write_images=False, update_freq="epoch",
                                        profile_batch=0),
            hp.KerasCallback(logdir, hparams, trial_id=trial_id),
        ],
    )
