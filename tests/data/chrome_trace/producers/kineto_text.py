"""Read and write Chrome trace-event JSON in the exact text layout that the PyTorch
profiler (torch 2.13, Kineto) writes with ``prof.export_chrome_trace``.

Used by make_gpu_trace.py so the GPU events it adds are written the way the real
writer writes them. ``dumps(loads(text)) == text`` holds for the real traces in
``two_ranks/`` and for ``train.pt.trace.json.gz`` (checked by make_gpu_trace.py).

Layout facts (from the real files):
  * one key per line, 4-space indent, events separated by ``",\n"``;
  * ``ts``/``dur`` are microseconds written with exactly 3 decimals (ns resolution),
    relative to the top-level ``baseTimeNanoseconds``;
  * ``args`` is written on one line; when it starts with ``"External id"`` the
    separator after it is ``","`` with no space;
  * the optional-key slots of the writer leave blank lines (``"ph": "i",\n    \n``).

Numbers that must keep a fixed textual form (e.g. ``"blocks per SM": 0.012821``,
written by Kineto with ``std::to_string``) are passed as ``Raw("0.012821")``.
"""
import gzip
import json


class Raw(str):
    """A JSON value already serialised (written verbatim)."""


def us3(ns):
    """Integer nanoseconds -> Kineto's 'us with 3 decimals' text."""
    assert ns >= 0, ns
    return "%d.%03d" % (ns // 1000, ns % 1000)


def to_ns(us):
    """A parsed 'ts'/'dur' float (us, 3 decimals) -> integer nanoseconds."""
    return int(round(us * 1000))


def _val(v):
    if isinstance(v, Raw):
        return str(v)
    return json.dumps(v)


def _args_line(args):
    items = list(args.items())
    out = ""
    for i, (k, v) in enumerate(items):
        out += json.dumps(k) + ": " + _val(v)
        if i + 1 < len(items):
            out += "," if (i == 0 and k == "External id") else ", "
    return out


def _time(k, v):
    if isinstance(v, int):  # integer nanoseconds (our own events)
        return us3(v)
    return us3(to_ns(v))


def dump_event(e):
    ph = e["ph"]
    lines = []
    if ph == "M":
        lines.append('    "ph": "M",')
        lines.append('    "name": %s,' % json.dumps(e["name"]))
        lines.append('    "ts": %s,' % _time("ts", e["ts"]))
        lines.append('    "pid": %s,' % json.dumps(e["pid"]))
        lines.append('    "tid": %s,' % json.dumps(e["tid"]))
        (k, v), = e["args"].items()
        lines.append('    "args": {')
        lines.append('      %s: %s' % (json.dumps(k), _val(v)))
        lines.append("    }")
    elif ph == "X":
        lines.append('    "ph": "X",')
        lines.append('    "cat": %s,' % json.dumps(e["cat"]))
        lines.append('    "name": %s,' % json.dumps(e["name"]))
        lines.append('    "pid": %s,' % json.dumps(e["pid"]))
        lines.append('    "tid": %s,' % json.dumps(e["tid"]))
        lines.append('    "ts": %s,' % _time("ts", e["ts"]))
        lines.append('    "dur": %s' % _time("dur", e["dur"]))
        lines.append("    ,")
        lines.append('    "args": {')
        lines.append("      " + _args_line(e.get("args", {})))
        lines.append("    }")
    elif ph in ("s", "f"):
        lines.append('    "ph": "%s",' % ph)
        lines.append('    "id": %s,' % json.dumps(e["id"]))
        lines.append('    "pid": %s,' % json.dumps(e["pid"]))
        lines.append('    "tid": %s,' % json.dumps(e["tid"]))
        lines.append('    "ts": %s,' % _time("ts", e["ts"]))
        lines.append('    "cat": %s,' % json.dumps(e["cat"]))
        lines.append('    "name": %s' % json.dumps(e["name"]))
        lines.append('    , "bp": %s' % json.dumps(e["bp"]) if "bp" in e else "    ")
    elif ph == "i":
        lines.append('    "ph": "i",')
        lines.append("    ")
        if "cat" in e:
            lines.append('    "cat": %s,' % json.dumps(e["cat"]))
        lines.append('    "s": %s,' % json.dumps(e["s"]))
        lines.append('    "name": %s,' % json.dumps(e["name"]))
        lines.append('    "pid": %s,' % json.dumps(e["pid"]))
        lines.append('    "tid": %s,' % json.dumps(e["tid"]))
        lines.append('    "ts": %s' % _time("ts", e["ts"]))
        if "args" in e:
            lines.append("    ,")
            lines.append('    "args": {')
            lines.append("      " + _args_line(e["args"]))
            lines.append("    }")
        else:
            lines.append("    ")
    else:
        raise ValueError("unsupported phase %r" % ph)
    return "  {\n" + "\n".join(lines) + "\n  }"


HEAD_KEYS = ("schemaVersion", "deviceProperties")
TAIL_KEYS = ("displayTimeUnit", "baseTimeNanoseconds", "traceEvents", "traceName")


def dump_device_properties(props):
    """Kineto's deviceProperties text (CudaDeviceProperties.cpp, HAS_CUPTI form)."""
    if not props:
        return "[]"
    items = []
    for p in props:
        items.append(
            "\n    {\n"
            '      "id": %d, "name": %s, "totalGlobalMem": %d,\n'
            '      "computeMajor": %d, "computeMinor": %d,\n'
            '      "maxThreadsPerBlock": %d, "maxThreadsPerMultiprocessor": %d,\n'
            '      "regsPerBlock": %d, "warpSize": %d,\n'
            '      "sharedMemPerBlock": %d, "numSms": %d\n'
            '    , "regsPerMultiprocessor": %d, "sharedMemPerBlockOptin": %d, "sharedMemPerMultiprocessor": %d\n'
            "    }"
            % (p["id"], json.dumps(p["name"]), p["totalGlobalMem"], p["computeMajor"], p["computeMinor"],
               p["maxThreadsPerBlock"], p["maxThreadsPerMultiprocessor"], p["regsPerBlock"], p["warpSize"],
               p["sharedMemPerBlock"], p["numSms"], p["regsPerMultiprocessor"], p["sharedMemPerBlockOptin"],
               p["sharedMemPerMultiprocessor"]))
    return "[" + ",".join(items) + "\n    ]"


def dumps(doc):
    """Serialise a trace document (dict in the writer's key order)."""
    out = [" {\n"]
    out.append('    "schemaVersion": %s,\n' % json.dumps(doc["schemaVersion"]))
    out.append('    "deviceProperties": %s,\n' % dump_device_properties(doc["deviceProperties"]))
    out.append("    \n")
    for k, v in doc.items():
        if k in HEAD_KEYS or k in TAIL_KEYS:
            continue
        out.append("      %s: %s,\n" % (json.dumps(k), json.dumps(v)))
    out.append('    "displayTimeUnit": %s,\n' % json.dumps(doc["displayTimeUnit"]))
    out.append('    "baseTimeNanoseconds": %d,\n' % doc["baseTimeNanoseconds"])
    out.append('    "traceEvents": [\n    \n')
    out.append(",\n".join(dump_event(e) for e in doc["traceEvents"]))
    out.append('\n  ],"traceName": %s }' % json.dumps(doc["traceName"]))
    return "".join(out)


def read_text(path):
    op = gzip.open if path.endswith(".gz") else open
    with op(path, "rt", encoding="utf-8") as f:
        return f.read()


def write_gz(path, text):
    # mtime=0 and no file name in the header: byte-identical output for identical input
    with open(path, "wb") as raw:
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as f:
            f.write(text.encode("utf-8"))
