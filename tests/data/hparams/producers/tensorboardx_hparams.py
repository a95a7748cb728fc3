"""Writes the `tensorboardx` HParams fixture with tensorboardX's
`SummaryWriter.add_hparams(hparam_dict, metric_dict, name=..., global_step=...)`.
Run in a throwaway venv, not in the test suite:

    python tensorboardx_hparams.py OUTDIR

Produced with Python 3.11, tensorboardX 2.6.5, numpy 2.4.6,
protobuf 7.36.2 (no TensorFlow, no network).  Values are fixed; only wall
times and event file names differ between runs of this script.

tensorboardX writes every scalar as a TF1-style `simple_value`.  Each run
OUTDIR/runN gets per-step `train/loss` curves (add_scalar), then add_hparams
makes the session run OUTDIR/runN/hparams holding its own
`_hparams_/experiment` (hparam types but no domains, this call's metric tags
only), session_start_info, a STATUS_SUCCESS session_end_info (no end time),
and one `simple_value` scalar per metric_dict entry.  run3 has an extra
`momentum` hparam, run4 an extra `hparam/f1` metric and a list-valued hparam
(tensorboardX writes a DATA_TYPE_UNSET HParamInfo and no value for it); run1
and run4 pass global_step, the others leave it unset.
"""

import os
import sys

from tensorboardX import SummaryWriter

out = sys.argv[1]

RUNS = [
    ({"lr": 0.1, "bsize": 32, "optimizer": "sgd", "augment": True},
     {"hparam/accuracy": 0.71, "hparam/loss": 0.9}, None),
    ({"lr": 0.01, "bsize": 64, "optimizer": "adam", "augment": False},
     {"hparam/accuracy": 0.83, "hparam/loss": 0.55}, 3),
    ({"lr": 0.001, "bsize": 32, "optimizer": "adam", "augment": True},
     {"hparam/accuracy": 0.78, "hparam/loss": 0.61}, None),
    ({"lr": 0.05, "bsize": 128, "optimizer": "sgd", "augment": False, "momentum": 0.9},
     {"hparam/accuracy": 0.80, "hparam/loss": 0.58}, None),
    ({"lr": 0.02, "bsize": 64, "optimizer": "rmsprop", "augment": True,
      "layers": [64, 32]},
     {"hparam/accuracy": 0.66, "hparam/loss": 1.1, "hparam/f1": 0.6}, 7),
]

for i, (hparams, metrics, step) in enumerate(RUNS):
    with SummaryWriter(logdir=os.path.join(out, "run%d" % i)) as w:
        for s in range(3):
            w.add_scalar("train/loss", 2.0 / (s + 1 + i), s)
        w.add_hparams(hparams, metrics, name="hparams", global_step=step)
