"""Write a large Kineto-shaped Chrome trace (PyTorch profiler JSON) for benchmarks.

    python benchmarks/make_kineto_trace.py --size-mb 2048 -o /tmp/big.json [--gzip]

The trace is tests/data/chrome_trace/gpu/rank-0.json.gz (a real PyTorch CPU trace
with Kineto-format GPU events added; see tests/data/chrome_trace/README.md) repeated
in time until the file holds --size-mb MiB of JSON text (uncompressed size, also with
--gzip, which compresses the output; the file is written to -o as given).

Each copy ("replica") k of the template's events:
  * is shifted by k * 10**d microseconds, 10**d being the first power of ten above
    the template's time span (so every ts keeps its low digits: only the leading
    digits change and nothing has to be formatted per event);
  * gets fresh "External id", "correlation", flow "id" (ac2g flows keep id ==
    correlation; fwdbwd flows stay paired) and "Ev Idx" values: v -> (k+1)*10**m + v,
    10**m above the template's largest id;
  * renumbers ProfilerStep#N (CPU user_annotation and GPU gpu_user_annotation) to
    N + k * (number of steps in the template).
The M (metadata) events are written once, the profiler's window events ("Trace" span,
"Iteration Start", "Record Window End") once at the end, stretched over all copies.

The template is pre-serialised once as a %-format string (every varying digit run a
%(name)s field); a replica is one `template % values` call, so the output is streamed
at disk speed and the document is never held in memory. Only the standard library
is used.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SOURCE = ROOT / "tests" / "data" / "chrome_trace" / "gpu" / "rank-0.json.gz"

EVENT_SEP = "\n  },\n  {\n"
TS_RE = re.compile(r'"ts": (\d+)\.(\d{3})')
ID_RE = re.compile(r'("External id": |"correlation": |"Ev Idx": |"id": )(\d+)')
STEP_RE = re.compile(r"ProfilerStep#(\d+)")


def split_source(text: str):
    """(head, events, tail): head ends with '"traceEvents": [\\n    \\n', tail starts
    with '\\n  ]'; events are the texts between '  {\\n' and '\\n  }' (Kineto layout)."""
    start = text.index('"traceEvents": [')
    first = text.index("  {\n", start)
    last = text.rindex("\n  }") + len("\n  }")
    head, body, tail = text[:first], text[first:last], text[last:]
    assert body.startswith("  {\n") and body.endswith("\n  }")
    events = body[len("  {\n"):-len("\n  }")].split(EVENT_SEP)
    return head, events, tail


def wrap(ev: str) -> str:
    return "  {\n" + ev + "\n  }"


class Template:
    def __init__(self, events: list[str]):
        parsed = [json.loads("{" + e + "}") for e in events]
        self.meta = [e for e, p in zip(events, parsed) if p["ph"] == "M"]
        window = {"Trace", "Iteration Start: PyTorch Profiler", "Record Window End"}
        self.tail = [(e, p) for e, p in zip(events, parsed)
                     if p["ph"] != "M" and (p.get("cat") == "Trace" or p.get("name") in window
                                            or p.get("pid") == "Spans")]
        tail_ids = {id(e) for e, _ in self.tail}
        body = [(e, p) for e, p in zip(events, parsed) if p["ph"] != "M" and id(e) not in tail_ids]
        ts_ns = [round(p["ts"] * 1000) for _, p in body]
        ends = [round((p["ts"] + p.get("dur", 0)) * 1000) for _, p in body]
        self.t0, self.t1 = min(ts_ns), max(ends)
        self.d = max(1, math.ceil(math.log10((self.t1 - self.t0) / 1000 + 1)))  # period 10**d us
        self.period_ns = 10 ** self.d * 1000
        max_id = max(int(m.group(2)) for e, _ in body for m in ID_RE.finditer(e))
        self.m = len(str(max_id))
        steps = sorted({int(s) for e, _ in body for s in STEP_RE.findall(e)})
        self.steps = steps
        self.nsteps = len(steps)
        self.prefixes: dict[int, str] = {}  # leading-digit value -> field name

        def ts_sub(mo: re.Match) -> str:
            us = int(mo.group(1))
            hi, lo = divmod(us, 10 ** self.d)
            name = self.prefixes.setdefault(hi, f"t{len(self.prefixes)}")
            return f'"ts": %({name})s{lo:0{self.d}d}.{mo.group(2)}'

        def id_sub(mo: re.Match) -> str:
            return f"{mo.group(1)}%(id)s{int(mo.group(2)):0{self.m}d}"

        def step_sub(mo: re.Match) -> str:
            return f"ProfilerStep#%(s{mo.group(1)})s"

        parts = []
        for e, _ in body:
            e = e.replace("%", "%%")
            e = TS_RE.sub(ts_sub, e)
            e = ID_RE.sub(id_sub, e)
            e = STEP_RE.sub(step_sub, e)
            parts.append(wrap(e))
        self.format = ",\n".join(parts)
        self.n_events = len(body)
        self.hi = {name: hi for hi, name in self.prefixes.items()}

    def values(self, k: int) -> dict[str, str]:
        v = {name: str(hi + k) for name, hi in self.hi.items()}
        v["id"] = str(k + 1)
        for s in self.steps:
            v[f"s{s}"] = str(s + k * self.nsteps)
        return v

    def replica(self, k: int) -> str:
        return self.format % self.values(k)

    def tail_text(self, n: int) -> str:
        """The window events, stretched over n replicas."""
        shift_ns = (n - 1) * self.period_ns
        out = []
        for e, p in self.tail:
            if p.get("cat") == "Trace":
                dur = round(p["dur"] * 1000) + shift_ns
                e = re.sub(r'"dur": \d+\.\d{3}', f'"dur": {dur // 1000}.{dur % 1000:03d}', e)
            elif p.get("name") == "Record Window End":
                ts = round(p["ts"] * 1000) + shift_ns
                e = re.sub(r'"ts": \d+\.\d{3}', f'"ts": {ts // 1000}.{ts % 1000:03d}', e)
            out.append(wrap(e))
        return ",\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size-mb", type=float, required=True, help="target size of the JSON text, MiB")
    ap.add_argument("-o", "--output", type=Path, required=True)
    ap.add_argument("--gzip", action="store_true", help="gzip the output (level 1)")
    ap.add_argument("--source", type=Path, default=DEFAULT_SOURCE, help="template trace (default: %(default)s)")
    args = ap.parse_args(argv)

    t_start = time.perf_counter()
    src = args.source
    text = (gzip.open(src, "rt", encoding="utf-8") if src.suffix == ".gz" else open(src, encoding="utf-8")).read()
    head, events, tail = split_source(text)
    tpl = Template(events)
    meta = ",\n".join(wrap(e) for e in tpl.meta)
    target = int(args.size_mb * 1024 * 1024)
    tail_len = len(tpl.tail_text(1).encode()) + len(tail.encode()) + 64  # tail_text(n) grows by a few digits

    opener = (lambda p: gzip.open(p, "wb", compresslevel=1)) if args.gzip else (lambda p: open(p, "wb"))
    written = 0
    n = 0
    replica_len = 0  # read only once a replica is written (n > 0)
    with opener(args.output) as out:
        def w(s: str) -> None:
            nonlocal written
            b = s.encode("utf-8")
            out.write(b)
            written += len(b)

        w(head)
        w(meta)
        # at least one replica; stop once the next one would pass the target
        while n == 0 or written + tail_len + replica_len < target:
            r = ",\n" + tpl.replica(n)
            replica_len = len(r)
            w(r)
            n += 1
        # ids must stay below 2**53 so that float-based JSON readers keep them exact
        assert (n + 1) * 10 ** tpl.m < 2 ** 53
        w(",\n" + tpl.tail_text(n))
        w(tail)
    dt = time.perf_counter() - t_start
    mib = written / 2**20
    print(f"{args.output}: {n} replicas x {tpl.n_events} events = {n * tpl.n_events} events, {mib:.1f} MiB of JSON"
          f" in {dt:.1f} s ({mib / dt:.0f} MiB/s){', gzip' if args.gzip else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
