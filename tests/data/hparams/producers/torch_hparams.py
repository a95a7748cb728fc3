"""Writes the `pytorch` HParams fixture with PyTorch's
`torch.utils.tensorboard.SummaryWriter.add_hparams(hparam_dict, metric_dict,
hparam_domain_discrete=..., run_name=..., global_step=...)`. Run in a
throwaway venv, not in the test suite:

    python torch_hparams.py OUTDIR

Produced with Python 3.11, torch 2.14.1 (the PyPI wheel, run on CPU),
tensorboard 2.21.0 (torch's writer imports TensorBoard's protos), numpy 2.4.6,
protobuf 7.36.2 (no network).  Values are fixed; only wall times and event
file names differ between runs of this script.

PyTorch writes scalars as TF1-style `simple_value`.  Each run OUTDIR/trialN
gets per-step `Loss/train` curves, then add_hparams makes the session run
OUTDIR/trialN/hp with its own `_hparams_/experiment` (with discrete domains
where hparam_domain_discrete gives them), session_start_info,
STATUS_SUCCESS session_end_info and one scalar per metric at global_step.
PyTorch tests `isinstance(v, (int, float))` before `bool`, so the bool
hparam `shuffle` is stored as a number (1.0 / 0.0) with a FLOAT64 type and a
numeric discrete domain.  trial3 has a `None` hparam (skipped by PyTorch).
"""

import os
import sys

import torch  # noqa: F401  (the writer needs it importable)
from torch.utils.tensorboard import SummaryWriter

out = sys.argv[1]

DOMAINS = {"optimizer": ["adam", "sgd"], "batch_size": [16, 32, 64],
           "shuffle": [True, False]}
RUNS = [
    ({"lr": 0.1, "batch_size": 16, "optimizer": "sgd", "shuffle": True},
     {"hparam/accuracy": 0.7, "hparam/loss": 0.8}),
    ({"lr": 0.01, "batch_size": 32, "optimizer": "adam", "shuffle": False},
     {"hparam/accuracy": 0.85, "hparam/loss": 0.4}),
    ({"lr": 0.001, "batch_size": 64, "optimizer": "adam", "shuffle": True},
     {"hparam/accuracy": 0.8, "hparam/loss": 0.5}),
    ({"lr": 0.03, "batch_size": 32, "optimizer": "sgd", "shuffle": False,
      "note": None},
     {"hparam/accuracy": 0.75, "hparam/loss": 0.62}),
]

for i, (hparams, metrics) in enumerate(RUNS):
    with SummaryWriter(log_dir=os.path.join(out, "trial%d" % i)) as w:
        for s in range(4):
            w.add_scalar("Loss/train", 1.0 / (s + 1) + i / 10, s)
        w.add_hparams(hparams, metrics, hparam_domain_discrete=DOMAINS,
                      run_name="hp", global_step=4)
