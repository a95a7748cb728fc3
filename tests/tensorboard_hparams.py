"""Test-only driver of TensorBoard's own HParams plugin, offline.

Answers a request the way `tensorboard --logdir LOGDIR` answers the HParams
dashboard, without a server, network or background thread: the log dir is
loaded once per process into TensorBoard's `EventMultiplexer` (the size
guidance, purge setting and data provider TensorBoard's `LocalDataIngester`
uses, reloaded serially on the calling thread), TensorBoard's scalars and
hparams plugins are loaded through its `TBContext` into its real WSGI
application (`TensorBoardWSGIApp`, with all its middleware and error
handling), and the request is POSTed as JSON, as TensorBoard's frontend does,
through werkzeug's test client.

    status, body = tensorboard_answer(logdir, "session_groups", {...})

`route` is "experiment", "session_groups" or "metric_evals"; `request` is the
proto3-JSON dict of GetExperimentRequest / ListSessionGroupsRequest /
ListMetricEvalsRequest (or a `str`/`bytes` body, sent as is; `None` sends no
body, or no `request` parameter with method="GET"). The answer is
`(http_status, body)`:

- 200: the parsed JSON TensorBoard sends (camelCase proto3 JSON with every
  field printed, int64 as strings, NaN/Infinity as the strings "NaN",
  "Infinity", "-Infinity"; for metric_evals a list of
  `[wall_time, step, value]`).
- 400 (the plugin's `HParamsError` or a request that does not parse) and 404
  (`NotFoundError`, e.g. metric_evals for a run/tag without scalars): TensorBoard
  answers with an HTML page (400) or plain text (404); `body` is
  `{"error": message}` with the message as the page carries it (unescaped,
  werkzeug's `<br>` turned back into newlines).
- 500: an uncaught exception inside the plugin. TensorBoard's server answers
  with werkzeug's generic "Internal Server Error" page; `body` is
  `{"error": "Internal Server Error", "exception": "TypeError: ..."}`.

`tensorboard_raw` gives `(status, content_type, bytes)` of the HTTP response
instead.

One deliberate choice: TensorBoard discovers runs in directory-listing order
(`os.listdir`/`readdir`, which is not sorted and differs between machines).
Where TensorBoard's answer depends on that order (which run's
`_hparams_/experiment` is used when several runs hold one, which session's
hparams a group shows when its sessions disagree), this driver makes it
deterministic by adding runs depth-first with siblings sorted by name, which
is one of the orders TensorBoard itself can meet.

Checked with tensorboard 2.17.1 and 2.21.0 (same answers, with or without
TensorFlow installed). tensorboard 2.16 loads too, but its own plugin answers
every /experiment and /session_groups request with a 500 once protobuf >= 5.26
is installed (it passes MessageToJson's removed `including_default_value_fields`),
so comparisons need tensorboard >= 2.17. TensorBoard is imported lazily; a test
module should `pytest.importorskip("tensorboard")` first.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import threading

__all__ = [
    "ROUTES",
    "clear_cache",
    "frontend_session_groups_request",
    "tensorboard_answer",
    "tensorboard_raw",
]

ROUTES = ("experiment", "session_groups", "metric_evals")
_PREFIX = "/data/plugin/hparams/"

_apps: dict[str, object] = {}
_lock = threading.Lock()


def _flags(logdir: str) -> argparse.Namespace:
    # The defaults of `tensorboard` (program.py / default flags) that the
    # multiplexer, the WSGI app and the two plugins read.
    return argparse.Namespace(
        logdir=logdir,
        logdir_spec="",
        path_prefix="",
        window_title="",
        samples_per_plugin={},
        purge_orphaned_data=True,
        max_reload_threads=1,
        reload_interval=0,
        reload_task="blocking",
        reload_multifile=None,
        reload_multifile_inactive_secs=86400,
        detect_file_replacement=None,
        generic_data="true",
        load_fast="false",
        host=None,
        port=None,
    )


def _run_order_key(logdir: str, subdir: str):
    rel = os.path.relpath(subdir, logdir)
    return () if rel == "." else tuple(rel.split(os.sep))


def _load(logdir: str):
    from tensorboard.backend import application
    from tensorboard.backend.event_processing import data_ingester, data_provider, io_wrapper, plugin_event_multiplexer
    from tensorboard.plugins.hparams import hparams_plugin
    from tensorboard.plugins.scalar import scalars_plugin

    flags = _flags(logdir)
    # As LocalDataIngester builds it (data_ingester.py).
    tensor_size_guidance = dict(data_ingester.DEFAULT_TENSOR_SIZE_GUIDANCE)
    tensor_size_guidance.update(flags.samples_per_plugin)
    multiplexer = plugin_event_multiplexer.EventMultiplexer(
        size_guidance=data_ingester.DEFAULT_SIZE_GUIDANCE,
        tensor_size_guidance=tensor_size_guidance,
        purge_orphaned_data=flags.purge_orphaned_data,
        max_reload_threads=flags.max_reload_threads,  # 1: serial, no thread
        event_file_active_filter=None,
        detect_file_replacement=flags.detect_file_replacement,
    )
    # EventMultiplexer.AddRunsFromDirectory(logdir), in a fixed order.
    subdirs = sorted(
        io_wrapper.GetLogdirSubdirectories(logdir),
        key=lambda s: _run_order_key(logdir, s),
    )
    for subdir in subdirs:
        multiplexer.AddRun(subdir, name=os.path.relpath(subdir, logdir))
    multiplexer.Reload()
    provider = data_provider.MultiplexerDataProvider(multiplexer, logdir)
    app = application.TensorBoardWSGIApp(
        flags,
        [scalars_plugin.ScalarsPlugin, hparams_plugin.HParamsPlugin],
        data_provider=provider,
        deprecated_multiplexer=multiplexer,
    )
    return app


def _app(logdir: str):
    key = os.path.realpath(os.path.expanduser(logdir))
    with _lock:
        app = _apps.get(key)
        if app is None:
            app = _apps[key] = _load(key)
        return app


def clear_cache() -> None:
    """Forgets every loaded log dir (reload after the files changed)."""
    with _lock:
        _apps.clear()


def _body(request) -> bytes:
    if request is None:
        return b""
    if isinstance(request, bytes):
        return request
    if isinstance(request, str):
        return request.encode("utf-8")
    return json.dumps(request).encode("utf-8")


def tensorboard_raw(logdir: str, route: str, request, method: str = "POST"):
    """(status, content_type, body bytes) of TensorBoard's HTTP answer.

    method "GET" sends the request as `?request=<json>`, as TensorBoard's
    frontend does inside Colab.
    """
    return _raw(logdir, route, request, method)[:3]


def _raw(logdir, route, request, method):
    if route not in ROUTES:
        raise ValueError(f"route must be one of {ROUTES}, not {route!r}")
    from werkzeug import exceptions as wz_exceptions
    from werkzeug.test import Client

    client = Client(_app(logdir))
    path = _PREFIX + route
    try:
        if method == "GET":
            query = {} if request is None else {"request": _body(request).decode("utf-8")}
            resp = client.get(path, query_string=query)
        else:
            resp = client.post(path, data=_body(request), content_type="application/json")
    except Exception as e:  # what werkzeug's server turns into a 500 page
        page = wz_exceptions.InternalServerError()
        body = page.get_body().encode("utf-8")
        return (500, "text/html; charset=utf-8", body, e)
    try:
        data = resp.get_data()
        return (resp.status_code, resp.headers.get("Content-Type", ""), data, None)
    finally:
        resp.close()


def tensorboard_answer(logdir: str, route: str, request, method: str = "POST"):
    """(http_status, parsed body) of TensorBoard's answer; see the module doc."""
    status, content_type, data, exc = _raw(logdir, route, request, method)
    if exc is not None:
        return 500, {
            "error": "Internal Server Error",
            "exception": f"{type(exc).__name__}: {exc}",
        }
    text = data.decode("utf-8")
    if status == 200 and content_type.startswith("application/json"):
        return status, json.loads(text)
    if content_type.startswith("text/html"):
        m = re.search(r"<p>(.*)</p>", text, re.S)
        if not m:
            return status, {"error": text}
        # werkzeug's HTTPException page: the description HTML-escaped, with
        # each newline written as <br>
        message = html.unescape(m.group(1).replace("<br>", "\n"))
        return status, {"error": message}
    return status, {"error": text}


def frontend_session_groups_request(experiment: dict, **overrides) -> dict:
    """The ListSessionGroupsRequest TensorBoard's dashboard sends for an
    experiment (hparams_data_source.ts): every status allowed, one column per
    hparam and per metric, no filter or sort, slice of 1e6."""
    request = {
        "experimentName": "",
        "allowedStatuses": [
            "STATUS_FAILURE",
            "STATUS_RUNNING",
            "STATUS_SUCCESS",
            "STATUS_UNKNOWN",
        ],
        "colParams": [{"hparam": h["name"]} for h in experiment.get("hparamInfos", [])]
        + [{"metric": m["name"]} for m in experiment.get("metricInfos", [])],
        "startIndex": 0,
        "sliceSize": 1000000,
    }
    request.update(overrides)
    return request
