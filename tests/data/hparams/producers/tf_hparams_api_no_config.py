"""Writes the `api_no_config` HParams fixture: TensorBoard's hparams API
(`hp.hparams`) without any `hparams_config`, so TensorBoard has to infer the
experiment from the sessions. Run in a throwaway venv, not in the test suite:

    python tf_hparams_api_no_config.py OUTDIR

Produced with Python 3.11, tensorflow-cpu 2.21.0, tensorboard 2.21.0,
numpy 2.4.6 (`CUDA_VISIBLE_DEVICES=""`, no network).  Hyperparameter values,
metric values, start and end times are fixed; only the event wall times and
event file names differ between runs of this script.

Sessions sit two levels deep (`batch1/...`, `batch2/...`); each writes the
scalar `loss` (steps 0..3) in its own run, `accuracy` and `val/loss` in its
`eval/` sub-run.  Hyperparameters:

    optimizer  str, all sessions
    lr         float (one session +inf)
    units      int values (stored as numbers)
    use_bn     bool
    mixed      1 (number), "a" (str), True (bool) in different sessions:
               inferred as a string hparam
    maybe      str, only in some sessions
    const      the same value in every session (differs = false)
    wd         float, one session NaN

    batch1/r0 r1 r2 r3   ordinary; r1 and r2 share trial_id "pair" but have
                         different `optimizer` values
    batch1/r4            no metrics at all, status FAILURE
    batch2/outer         a session that contains another session:
    batch2/outer/inner   (its scalars in batch2/outer/inner/train are a
                         metric of `inner`, group "train")
    batch2/outer/eval    eval run of `outer`
    stray/               scalars, no hparams (not a session)
"""

import math
import os
import sys

import numpy as np
import tensorflow as tf
from tensorboard.plugins.hparams import api as hp
from tensorboard.plugins.hparams import api_pb2
from tensorboard.plugins.hparams import summary as hp_summary_v1

out = sys.argv[1]
rng = np.random.default_rng(7)
T0 = 1_700_100_000.0

SESSIONS = [
    ("batch1/r0", dict(optimizer="adam", lr=0.01, units=32, use_bn=True, mixed=1,
                       maybe="x", const="same", wd=0.0001), None),
    ("batch1/r1", dict(optimizer="sgd", lr=0.1, units=64, use_bn=False, mixed="a",
                       const="same", wd=0.001), "pair"),
    ("batch1/r2", dict(optimizer="adam", lr=0.1, units=64, use_bn=False, mixed="a",
                       const="same", wd=0.001), "pair"),
    ("batch1/r3", dict(optimizer="rmsprop", lr=math.inf, units=16, use_bn=True,
                       mixed=True, maybe="y", const="same", wd=math.nan), None),
    ("batch1/r4", dict(optimizer="sgd", lr=0.001, units=16, use_bn=False, mixed=1,
                       const="same", wd=0.01), None),
    ("batch2/outer", dict(optimizer="adam", lr=0.02, units=8, use_bn=True,
                          mixed=2.5, maybe="x", const="same", wd=0.0), None),
    ("batch2/outer/inner", dict(optimizer="sgd", lr=0.03, units=8, use_bn=False,
                                mixed="b", const="same", wd=0.0), None),
]
END = {"batch1/r0": api_pb2.STATUS_SUCCESS, "batch1/r1": api_pb2.STATUS_SUCCESS,
       "batch1/r2": api_pb2.STATUS_SUCCESS, "batch1/r4": api_pb2.STATUS_FAILURE,
       "batch2/outer": api_pb2.STATUS_SUCCESS}


def raw(pb):
    tf.summary.experimental.write_raw_pb(pb.SerializeToString(), step=0)


for i, (name, hparams, trial) in enumerate(SESSIONS):
    sdir = os.path.join(out, name)
    start = T0 + 100.0 * i
    loss = np.round(1.5 * np.exp(-np.arange(4) * rng.uniform(0.2, 0.6)), 4)
    acc = np.round(np.clip(1.0 - loss / 2 + rng.uniform(-0.05, 0.05, 4), 0, 1), 4)
    with tf.summary.create_file_writer(sdir).as_default():
        hp.hparams(hparams, trial_id=trial, start_time_secs=start)
        if name != "batch1/r4" and name != "batch2/outer/inner":
            for step in range(4):
                tf.summary.scalar("loss", float(loss[step]), step=step)
        if name in END:
            raw(hp_summary_v1.session_end_pb(END[name], end_time_secs=start + 50.0))
    if name == "batch2/outer/inner":
        with tf.summary.create_file_writer(os.path.join(sdir, "train")).as_default():
            for step in range(4):
                tf.summary.scalar("loss", float(loss[step]), step=step)
    elif name != "batch1/r4":
        with tf.summary.create_file_writer(os.path.join(sdir, "eval")).as_default():
            for step in range(0, 4, 2):
                tf.summary.scalar("accuracy", float(acc[step]), step=step)
                tf.summary.scalar("val/loss", float(loss[step]) + 0.1, step=step)

with tf.summary.create_file_writer(os.path.join(out, "stray")).as_default():
    for step in range(3):
        tf.summary.scalar("stray_metric", step / 3, step=step)
