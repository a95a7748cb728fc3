"""HParams views with a big sweep: the scatter matrix and brushing.

    QT_QPA_PLATFORM=offscreen python benchmarks/hparams_views_bench.py [--sessions 10000] [--repeat 15]

The sweep is built in memory as the log dir reader would return it (no
files): an experiment config with 4 hparams (a learning rate spanning four
decades, units, an optimizer, batch norm) and 4 metrics (loss on the
session run, epoch_accuracy under train/ and validation/, epoch_loss under
validation/), N sessions paired into N/2 groups (two seeds each), 20 steps
per scalar. Then, in one HParamsView of 1500x950 px:
  1. the scatter matrix's first draw: turning to its tab (axes of 4 hparams
     x 4 metrics over every group, the points stamped into the image) until
     it is painted; target 0.5 s;
  2. a repaint of the matrix (the cached image, hover, selection); target 16 ms;
  3. brushing a rectangle in a cell to the filtered table (both filters set,
     the query, the page, the matrix redrawn); target 100 ms.
Medians of --repeat runs (the machine is shared: numbers move).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

OPTIMIZERS = ["adam", "sgd", "rmsprop", "adagrad", "nadam"]
STEPS = 20


class Timer:
    """Wall and CPU time of the same span (the machine is shared: CPU time moves less)."""

    def __init__(self):
        self.wall, self.cpu = [], []

    def __enter__(self):
        self._t, self._c = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_):
        self.wall.append(time.perf_counter() - self._t)
        self.cpu.append(time.process_time() - self._c)

    def text(self, target_ms: float) -> str:
        ms = [1000 * statistics.median(x) for x in (self.wall, self.cpu)]
        return (f"median {ms[0]:.1f} ms wall, {ms[1]:.1f} ms CPU (target {target_ms:g} ms), "
                f"max {1000 * max(self.wall):.1f} ms")


def sweep(sessions: int, seed: int = 0):
    """An HParamsData of `sessions` sessions in groups of two, in memory."""
    from profscope.models.hparams.experiment import (
        END_TAG,
        EXPERIMENT_TAG,
        PLUGIN,
        START_TAG,
        HParamsData,
        _value_proto,
    )
    from profscope.models.hparams.logdir import Logdir, Run, Series
    from profscope.protos import api_pb2, plugin_data_pb2

    rng = random.Random(seed)
    exp = api_pb2.Experiment(
        hparam_infos=[
            api_pb2.HParamInfo(name=n, type=t)
            for n, t in (
                ("learning_rate", api_pb2.DATA_TYPE_FLOAT64),
                ("units", api_pb2.DATA_TYPE_FLOAT64),
                ("optimizer", api_pb2.DATA_TYPE_STRING),
                ("batch_norm", api_pb2.DATA_TYPE_BOOL),
            )
        ],
        metric_infos=[
            api_pb2.MetricInfo(name=api_pb2.MetricName(group=g, tag=t))
            for g, t in (
                ("", "loss"),
                ("train", "epoch_accuracy"),
                ("validation", "epoch_accuracy"),
                ("validation", "epoch_loss"),
            )
        ],
    )
    runs = {
        ".": Run(
            ".",
            plugin_content={
                PLUGIN: {EXPERIMENT_TAG: plugin_data_pb2.HParamsPluginData(experiment=exp).SerializeToString()}
            },
        )
    }
    steps = np.arange(STEPS, dtype=np.int64)
    wall = 1.7e9 + steps * 60.0
    for i in range(sessions):
        g = i // 2
        grng = random.Random(g)  # both seeds of a group share its hparams
        values = {
            "learning_rate": 10 ** grng.uniform(-5, -1),
            "units": float(grng.randrange(16, 1025)),
            "optimizer": grng.choice(OPTIMIZERS),
            "batch_norm": grng.random() < 0.5,
        }
        start = plugin_data_pb2.HParamsPluginData()
        info = start.session_start_info
        info.group_name, info.start_time_secs = f"trial_{g:05d}", 1.7e9 + i
        for k, v in values.items():
            info.hparams[k].CopyFrom(_value_proto(v))
        end = plugin_data_pb2.HParamsPluginData()
        end.session_end_info.status, end.session_end_info.end_time_secs = api_pb2.STATUS_SUCCESS, 1.7e9 + i + 600
        quality = rng.random()
        name = f"session_{i:05d}"
        curve = (steps + 1.0) / STEPS
        runs[name] = Run(
            name,
            {"loss": Series(steps, wall, 2.0 * (1 - quality) / (steps + 1))},
            {PLUGIN: {START_TAG: start.SerializeToString(), END_TAG: end.SerializeToString()}},
        )
        runs[f"{name}/train"] = Run(f"{name}/train", {"epoch_accuracy": Series(steps, wall, quality * curve + 0.05)})
        runs[f"{name}/validation"] = Run(
            f"{name}/validation",
            {
                "epoch_accuracy": Series(steps, wall, quality * curve),
                "epoch_loss": Series(steps, wall, (1.5 - quality) / curve + rng.random() * 0.1),
            },
        )
    return HParamsData(Logdir(Path("/nonexistent/sweep"), runs, []))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()

    from PySide6.QtCore import QPoint, Qt
    from PySide6.QtTest import QTest

    from profscope.viewer.app import application
    from profscope.widgets.hparams.view import HParamsView

    app = application(offscreen_without_display=True)
    t = time.perf_counter()
    data = sweep(args.sessions)
    print(f"sweep of {args.sessions:,} sessions built in memory: {time.perf_counter() - t:.2f} s")
    view = HParamsView()
    view.resize(1500, 950)
    view.show()
    app.processEvents()
    t = time.perf_counter()
    view.set_data(data)
    app.processEvents()
    print(f"set_data (groups table, filters, first page): {time.perf_counter() - t:.2f} s; {len(view.order):,} groups")

    matrix = view.scatter
    first = Timer()
    for _ in range(max(3, args.repeat // 3)):
        view.center.setCurrentIndex(0)
        app.processEvents()
        with first:
            view.center.setCurrentIndex(2)  # builds the axes and the matrix
            matrix.repaint()  # paints now: the points' image is made here
    across, down = view.scatter_columns()
    print(
        f"scatter matrix {len(across)}x{len(down)} cells, {len(view.order):,} points per cell, "
        f"{matrix.width()}x{matrix.height()} px"
    )
    print(f"  first draw: {first.text(500)}")

    repaint = Timer()
    for i in range(args.repeat * 4):
        view.scatter.highlight = {int(view.order[i % 50])}
        with repaint:
            matrix.repaint()
    print(f"  repaint: {repaint.text(16)}")

    brush, rows = Timer(), []
    for i in range(args.repeat):
        # Alternate two rectangles in the learning rate x validation accuracy cell.
        a, b = ((0.2, 0.3), (0.7, 0.9)) if i % 2 else ((0.1, 0.2), (0.5, 0.8))
        xs, ys = matrix.to_pixels(1, 2, list(a), list(b))
        start, end = QPoint(round(xs[0]), round(ys[0])), QPoint(round(xs[1]), round(ys[1]))
        QTest.mousePress(matrix, Qt.LeftButton, Qt.NoModifier, start)
        QTest.mouseMove(matrix, end)
        with brush:
            QTest.mouseRelease(matrix, Qt.LeftButton, Qt.NoModifier, end)  # filters, query, page, matrix
            matrix.repaint()
        rows.append(len(view.order))
    print(
        f"  brushing a rectangle to the filtered table: {brush.text(100)}; {min(rows):,}-{max(rows):,} groups matching"
    )
    view.close()


if __name__ == "__main__":
    main()
