"""Print, for every trace file here, its size and its event counts per (ph, cat):
the tables of README.md.   python producers/describe.py"""
import collections
import glob
import gzip
import json
import os

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

for path in sorted(glob.glob(os.path.join(ROOT, "**", "*.json.gz"), recursive=True)):
    rel = os.path.relpath(path, ROOT)
    with gzip.open(path, "rb") as f:
        raw = f.read()
    doc = json.loads(raw)
    ev = doc["traceEvents"]
    steps = sorted({e["name"] for e in ev if e.get("name", "").startswith("ProfilerStep")})
    print("### %s\n\n%d bytes gzipped, %d bytes of JSON, %d events; top-level keys: %s; steps: %s\n"
          % (rel, os.path.getsize(path), len(raw), len(ev), ", ".join(k for k in doc if k != "traceEvents"),
             ", ".join(steps) or "-"))
    print("| ph | cat | events |\n| --- | --- | ---: |")
    c = collections.Counter((e.get("ph", "(none)"), e.get("cat", "")) for e in ev)
    for (ph, cat), n in sorted(c.items()):
        print("| %s | %s | %d |" % (ph, cat or "(no cat)", n))
    print()
