"""Writes the `api_config` HParams fixture: TensorBoard's hparams API
(`tensorboard.plugins.hparams.api`) with a top-level `hp.hparams_config(...)`.
Run in a throwaway venv, not in the test suite:

    python tf_hparams_api_config.py OUTDIR

Produced with Python 3.11, tensorflow-cpu 2.21.0, tensorboard 2.21.0,
numpy 2.4.6 (`CUDA_VISIBLE_DEVICES=""`, no network).  Hyperparameter values,
metric values, start and end times are fixed; only the event wall times and
event file names (host, pid, time) differ between runs of this script.

Layout (each directory is a TensorBoard run):

    OUTDIR/                 hparams_config: 7 hparams (Discrete str/int/float/bool,
                            RealInterval, IntInterval, no domain) and 4 metrics
                            (accuracy; loss in groups train and validation;
                            never_logged)
    OUTDIR/sNN/             one session each (hp.hparams, or the v1
                            summary.session_start_pb for s06); scalar `accuracy`
                            at steps 0..4 (tf.summary.scalar, float32 tensors)
    OUTDIR/sNN/train/       scalar `loss`
    OUTDIR/sNN/validation/  scalar `loss`
    OUTDIR/not_a_session/   scalars but no hparams: never part of a session

Sessions:
    s00 s01 s02  trial_id "trial_a" (one group of 3; they differ only in `seed`),
                 SUCCESS
    s03 s04      trial_id "trial_b", SUCCESS; s04 has no validation/ run
    s05          no trial_id (group name = sha256 of the hparams), FAILURE,
                 last accuracy is NaN
    s06          v1 session_start_pb with model_uri, monitor_url and empty
                 group_name; RUNNING; last validation loss is +inf
    s07          no session_end_info at all (status STATUS_UNKNOWN)
    s08          accuracy steps written out of order (0,1,2,4,3) and step 3
                 written twice: the last value in file order is not the
                 largest step
    s09          no `dropout` hparam, an extra `notes` hparam the config lacks
    s10          never writes `accuracy`
    s11          trial_id "trial_c" (alone in it), train loss -inf at the end
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
rng = np.random.default_rng(20240501)
T0 = 1_700_000_000.0

HP_OPT = hp.HParam("optimizer", hp.Discrete(["adam", "sgd", "rmsprop"]),
                   display_name="Optimizer", description="Which optimizer")
HP_LR = hp.HParam("lr", hp.RealInterval(1e-4, 1e-1), display_name="learning rate")
HP_UNITS = hp.HParam("units", hp.Discrete([16, 32, 64]))
HP_DROPOUT = hp.HParam("dropout", hp.Discrete([0.0, 0.2, 0.5]))
HP_LAYERS = hp.HParam("layers", hp.IntInterval(1, 4))
HP_BN = hp.HParam("batch_norm", hp.Discrete([True, False]))
HP_SEED = hp.HParam("seed")  # no domain

with tf.summary.create_file_writer(out).as_default():
    hp.hparams_config(
        hparams=[HP_OPT, HP_LR, HP_UNITS, HP_DROPOUT, HP_LAYERS, HP_BN, HP_SEED],
        metrics=[
            hp.Metric("accuracy", display_name="Accuracy",
                      description="Top-1 accuracy",
                      dataset_type=hp.Metric.VALIDATION),
            hp.Metric("loss", group="train", display_name="Train loss",
                      dataset_type=hp.Metric.TRAINING),
            hp.Metric("loss", group="validation", display_name="Validation loss",
                      dataset_type=hp.Metric.VALIDATION),
            hp.Metric("never_logged", display_name="Never logged"),
        ],
        time_created_secs=T0 - 1000.0,
    )


def base(opt, lr, units, dropout, layers, bn, seed):
    return {"optimizer": opt, "lr": lr, "units": units, "dropout": dropout,
            "layers": layers, "batch_norm": bn, "seed": seed}


SESSIONS = {
    "s00": dict(hparams=base("adam", 0.01, 32, 0.2, 2, True, 0), trial="trial_a",
                status=api_pb2.STATUS_SUCCESS),
    "s01": dict(hparams=base("adam", 0.01, 32, 0.2, 2, True, 1), trial="trial_a",
                status=api_pb2.STATUS_SUCCESS),
    "s02": dict(hparams=base("adam", 0.01, 32, 0.2, 2, True, 2), trial="trial_a",
                status=api_pb2.STATUS_SUCCESS),
    "s03": dict(hparams=base("sgd", 0.1, 64, 0.5, 3, False, 0), trial="trial_b",
                status=api_pb2.STATUS_SUCCESS),
    "s04": dict(hparams=base("sgd", 0.1, 64, 0.5, 3, False, 1), trial="trial_b",
                status=api_pb2.STATUS_SUCCESS, no_validation=True),
    "s05": dict(hparams=base("rmsprop", 0.001, 16, 0.0, 1, True, 0),
                status=api_pb2.STATUS_FAILURE, nan_accuracy=True),
    "s06": dict(hparams=base("adam", 0.0001, 16, 0.5, 4, False, 0), v1=True,
                status=api_pb2.STATUS_RUNNING, inf_validation=True),
    "s07": dict(hparams=base("sgd", 0.05, 32, 0.0, 1, False, 0), status=None),
    "s08": dict(hparams=base("rmsprop", 0.02, 64, 0.2, 2, True, 0),
                status=api_pb2.STATUS_SUCCESS, out_of_order=True),
    "s09": dict(hparams={"optimizer": "adam", "lr": 0.003, "units": 32, "layers": 2,
                         "batch_norm": False, "seed": 0, "notes": "no dropout"},
                status=api_pb2.STATUS_SUCCESS),
    "s10": dict(hparams=base("sgd", 0.07, 16, 0.2, 4, True, 0),
                status=api_pb2.STATUS_SUCCESS, no_accuracy=True),
    "s11": dict(hparams=base("adam", 0.1, 64, 0.0, 1, True, 0), trial="trial_c",
                status=api_pb2.STATUS_SUCCESS, ninf_train=True),
}


def raw(pb):
    tf.summary.experimental.write_raw_pb(pb.SerializeToString(), step=0)


for i, (name, s) in enumerate(SESSIONS.items()):
    sdir = os.path.join(out, name)
    start = T0 + 60.0 * i
    acc = np.round(np.cumsum(rng.uniform(0.05, 0.2, size=5)) / 1.2, 4)
    train = np.round(2.0 * np.exp(-np.arange(5) * rng.uniform(0.2, 0.6)), 4)
    val = np.round(train + rng.uniform(0.01, 0.3, size=5), 4)
    with tf.summary.create_file_writer(sdir).as_default():
        if s.get("v1"):
            raw(hp_summary_v1.session_start_pb(
                s["hparams"], model_uri="gs://bucket/models/s06",
                monitor_url="http://monitor.example/s06", group_name="",
                start_time_secs=start))
        else:
            hp.hparams(s["hparams"], trial_id=s.get("trial"), start_time_secs=start)
        if not s.get("no_accuracy"):
            steps = [0, 1, 2, 4, 3] if s.get("out_of_order") else range(5)
            for step in steps:
                value = float(acc[step])
                if s.get("nan_accuracy") and step == 4:
                    value = math.nan
                tf.summary.scalar("accuracy", value, step=step)
            if s.get("out_of_order"):
                tf.summary.scalar("accuracy", 0.123, step=3)  # same step again
        if s["status"] is not None:
            raw(hp_summary_v1.session_end_pb(s["status"], end_time_secs=start + 30.0))
    with tf.summary.create_file_writer(os.path.join(sdir, "train")).as_default():
        for step in range(5):
            value = float(train[step])
            if s.get("ninf_train") and step == 4:
                value = -math.inf
            tf.summary.scalar("loss", value, step=step)
    if not s.get("no_validation"):
        with tf.summary.create_file_writer(os.path.join(sdir, "validation")).as_default():
            for step in range(5):
                value = float(val[step])
                if s.get("inf_validation") and step == 4:
                    value = math.inf
                tf.summary.scalar("loss", value, step=step)

with tf.summary.create_file_writer(os.path.join(out, "not_a_session")).as_default():
    for step in range(3):
        tf.summary.scalar("accuracy", 0.5 + step / 10, step=step)
        tf.summary.scalar("loss", 1.0 - step / 10, step=step)
