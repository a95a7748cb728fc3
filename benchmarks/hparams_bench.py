"""HParams: loading a sweep's log dir and answering queries, against TensorBoard.

    python benchmarks/hparams_bench.py [--sessions 10000] [--out /tmp/profscope-hparams] [--keep]

Writes a log dir with TensorBoard's own writer code (EventFileWriter,
hparams summary_v2, scalar_pb): an experiment config and N sessions of 3
runs each (the session run with its hparams and a "loss" scalar, `train` and
`validation` sub-runs with "epoch_accuracy"), 4 hparams (float interval,
int interval, string and bool discrete), 20 steps per scalar. Then, in the
same process:
  1. TensorBoard's loading of the log dir (EventMultiplexer with the
     size guidance TensorBoard uses, each file closed after reading so that
     30,000 files do not hit the open-file limit) against Profscope's;
  2. per query (a regexp and an interval filter, a 2-key sort, a page of
     100), TensorBoard's list_session_groups handler against Profscope's.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

OPTIMIZERS = ["adam", "sgd", "rmsprop", "adagrad", "nadam"]


def generate(root: Path, sessions: int) -> None:
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.hparams import summary_v2 as hp
    from tensorboard.plugins.scalar import summary as scalar_summary
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    rng = random.Random(0)
    lr = hp.HParam("learning_rate", hp.RealInterval(1e-5, 1e-1))
    units = hp.HParam("units", hp.IntInterval(16, 1024))
    opt = hp.HParam("optimizer", hp.Discrete(OPTIMIZERS))
    bn = hp.HParam("batch_norm", hp.Discrete([False, True]))
    metrics = [hp.Metric("loss"), hp.Metric("epoch_accuracy", group="train"),
               hp.Metric("epoch_accuracy", group="validation")]

    def write(folder: Path, summaries: list[tuple[int, object]]) -> None:
        w = EventFileWriter(str(folder))
        for step, summary in summaries:
            w.add_event(event_pb2.Event(step=step, wall_time=1.7e9 + step, summary=summary))
        w.close()

    write(root, [(0, hp.hparams_config_pb([lr, units, opt, bn], metrics))])
    for i in range(sessions):
        run = root / f"session_{i:05d}"
        values = {lr: 10 ** rng.uniform(-5, -1), units: rng.randrange(16, 1025), opt: rng.choice(OPTIMIZERS),
                  bn: rng.random() < 0.5}
        quality = rng.random()
        write(run, [(0, hp.hparams_pb(values, trial_id=f"trial_{i // 2:05d}"))]
              + [(s, scalar_summary.scalar_pb("loss", 2.0 * (1 - quality) / (s + 1))) for s in range(20)])
        for sub, bonus in (("train", 0.05), ("validation", 0.0)):
            write(run / sub, [(s, scalar_summary.scalar_pb("epoch_accuracy", min(1.0, quality * s / 19 + bonus)))
                              for s in range(20)])


QUERY = {
    "allowedStatuses": ["STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"],
    "colParams": [
        {"metric": {"group": "validation", "tag": "epoch_accuracy"}, "order": "ORDER_DESC"},
        {"hparam": "units", "order": "ORDER_ASC"},
        {"hparam": "optimizer", "filterRegexp": "adam|sgd"},
        {"hparam": "learning_rate", "filterInterval": {"minValue": 1e-4, "maxValue": 1e-2}},
    ],
    "startIndex": 0, "sliceSize": 100,
}


def tensorboard_load(root: Path):
    """TensorBoard's loading (LocalDataIngester's multiplexer), run by run,
    each run's last file closed after reading (TensorBoard keeps one open per run)."""
    import argparse

    from tensorboard.backend import application
    from tensorboard.backend.event_processing import data_ingester, data_provider, io_wrapper
    from tensorboard.backend.event_processing import plugin_event_multiplexer as pem
    from tensorboard.plugins.hparams import hparams_plugin
    from tensorboard.plugins.scalar import scalars_plugin

    multiplexer = pem.EventMultiplexer(size_guidance=data_ingester.DEFAULT_SIZE_GUIDANCE,
                                       tensor_size_guidance=dict(data_ingester.DEFAULT_TENSOR_SIZE_GUIDANCE),
                                       purge_orphaned_data=True, max_reload_threads=1)
    for subdir in sorted(io_wrapper.GetLogdirSubdirectories(str(root))):
        name = os.path.relpath(subdir, root)
        multiplexer.AddRun(subdir, name=name)
        accumulator = multiplexer.GetAccumulator(name)
        accumulator.Reload()
        accumulator._generator._loader = None  # closes the file
    flags = argparse.Namespace(logdir=str(root), logdir_spec="", path_prefix="", window_title="",
                               samples_per_plugin={}, generic_data="true", load_fast="false",
                               purge_orphaned_data=True, reload_interval=0, reload_task="blocking",
                               max_reload_threads=1, reload_multifile=None, reload_multifile_inactive_secs=86400,
                               detect_file_replacement=None, host=None, port=None)
    provider = data_provider.MultiplexerDataProvider(multiplexer, str(root))
    return application.TensorBoardWSGIApp(flags, [scalars_plugin.ScalarsPlugin, hparams_plugin.HParamsPlugin],
                                          data_provider=provider, deprecated_multiplexer=multiplexer)


def tensorboard_query(app, request: dict) -> dict:
    from werkzeug.test import Client

    response = Client(app).post("/data/plugin/hparams/session_groups", data=json.dumps(request),
                                content_type="application/json")
    assert response.status_code == 200, response.get_data()[:300]
    return json.loads(response.get_data())


def median_time(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2], result


def compare(root: Path) -> None:
    from profscope.models.hparams.experiment import HParamsData, request_from_json, to_json
    from profscope.models.hparams.logdir import read_logdir
    from profscope.protos import api_pb2

    t = time.perf_counter()
    data = HParamsData(read_logdir(root))
    read = time.perf_counter() - t
    request = request_from_json(QUERY, api_pb2.ListSessionGroupsRequest)
    t = time.perf_counter()
    first = data.list_session_groups(request)
    first_query = time.perf_counter() - t
    ours_load = read + first_query
    print(f"Profscope load: read {read:.2f} s + first query (builds the group table) {first_query:.2f} s "
          f"= {ours_load:.2f} s; {first.total_size:,} groups match")
    t = time.perf_counter()
    app = tensorboard_load(root)
    tb_load = time.perf_counter() - t
    print(f"TensorBoard load: {tb_load:.2f} s  ->  Profscope is {tb_load / ours_load:.1f}x faster (target >= 5x)")
    ours_query, response = median_time(lambda: data.list_session_groups(request), 7)
    tb_query, expected = median_time(lambda: tensorboard_query(app, QUERY), 3)
    same = to_json(response) == expected
    print(f"query (regexp + interval filter, 2-key sort, page of 100), median: Profscope {ours_query * 1e3:.1f} ms, "
          f"TensorBoard {tb_query * 1e3:.0f} ms  ->  {tb_query / ours_query:.0f}x faster (target >= 20x, < 20 ms); "
          f"same answer: {same}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--out", default="/tmp/profscope-hparams")
    ap.add_argument("--keep", action="store_true", help="reuse an existing log dir and keep it")
    args = ap.parse_args()
    root = Path(args.out)
    if not (args.keep and root.exists()):
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        generate(root, args.sessions)
        print(f"generated {args.sessions:,} sessions (3 runs each) in {time.perf_counter() - t:.1f} s")
    compare(root)
    if not args.keep:
        shutil.rmtree(root)


if __name__ == "__main__":
    main()
