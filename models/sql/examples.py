"""The example queries of docs/SQL.md (a test keeps the two the same), for
the Query tab's list; adapted to the opened data (its first step, its metric
tags and hparam names), and why a query found no rows where that can be told."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

STEP_EXAMPLE = "Top kernels in step 3"
HPARAMS_EXAMPLE = "Best learning rate per optimizer"

EXAMPLES: tuple[tuple[str, str], ...] = (
    ("Top kernels in step 3", """\
SELECT name, count(*) AS launches, sum(dur_ns)::BIGINT AS total_ns
FROM kernels
WHERE step = 3
GROUP BY name
ORDER BY total_ns DESC
LIMIT 10;
"""),
    ("Ops whose GPU time exceeds host time", """\
SELECT host, name, count(*) AS calls, sum(dur_ns)::BIGINT AS host_ns, sum(device_total_ns)::BIGINT AS gpu_ns
FROM ops
GROUP BY host, name
HAVING sum(device_total_ns) > sum(dur_ns)
ORDER BY gpu_ns - host_ns DESC;
"""),
    ("Allocations that outlive their step", """\
SELECT host, allocator, op, allocation_bytes, step, free_step, (free_time_ns - alloc_time_ns) AS lifetime_ns
FROM allocations
WHERE free_step IS NULL OR free_step > step
ORDER BY allocation_bytes DESC
LIMIT 20;
"""),
    ("Best learning rate per optimizer", """\
WITH finished AS (
    SELECT s.session,
           max(h.value) FILTER (WHERE h.name = 'optimizer') AS optimizer,
           max(h.number) FILTER (WHERE h.name = 'lr') AS lr
    FROM sessions s JOIN hparams h USING (session)
    WHERE s.status = 'SUCCESS'
    GROUP BY s.session),
accuracy AS (
    SELECT session, arg_max(value, seq) AS accuracy
    FROM metrics
    WHERE tag = 'accuracy' AND run = ''
    GROUP BY session)
SELECT optimizer, arg_max(lr, accuracy) AS best_lr, max(accuracy) AS best_accuracy
FROM finished JOIN accuracy USING (session)
WHERE NOT isnan(accuracy)
GROUP BY optimizer
ORDER BY optimizer;
"""),
    ("Kernel launch latency", """\
SELECT k.name, count(*) AS launches, avg(k.start_ns - l.start_ns) AS mean_latency_ns
FROM flows f
JOIN slices l ON l.session = f.session AND l.host = f.host AND l.tag = f.tag AND l.id = f.from_id
JOIN kernels k ON k.session = f.session AND k.host = f.host AND k.tag = f.tag AND k.id = f.to_id
WHERE f.category = 'ac2g'
GROUP BY k.name
ORDER BY mean_latency_ns DESC
LIMIT 10;
"""),
    ("Memory peak of every allocator", """\
SELECT host, allocator, max(stack_bytes + heap_bytes) AS peak_bytes, count(*) AS snapshots
FROM memory_snapshots
GROUP BY host, allocator
ORDER BY peak_bytes DESC;
"""),
    ("GPU time per step", """\
SELECT step, sum(dur_ns)::BIGINT AS kernel_ns, count(*) AS kernels
FROM kernels
WHERE step IS NOT NULL
GROUP BY step
ORDER BY step;
"""),
    ("Memory in use over time", """\
SELECT session, host, allocator, snapshot, time_ns, stack_bytes + heap_bytes AS in_use_bytes
FROM memory_snapshots
ORDER BY host, allocator, snapshot;
"""),
    ("The longest slices", """\
SELECT session, host, tag, id, name, process, thread, start_ns, dur_ns
FROM slices
ORDER BY dur_ns DESC
LIMIT 100;
"""),
)


@dataclass
class Facts:
    """What the examples adapt to: the steps (None: not known yet), the metrics
    as (run, tag) and the hparam names."""

    steps: list[int] | None = None
    metrics: list[tuple[str, str]] = field(default_factory=list)
    hparams: list[str] = field(default_factory=list)

    @classmethod
    def of_hparams(cls, data) -> Facts:
        """An HParamsData's metrics and hparam names (None: none)."""
        if data is None:
            return cls()
        exp = data.experiment()
        return cls(None, [(m.name.group, m.name.tag) for m in exp.metric_infos], [h.name for h in exp.hparam_infos])


def _metric(run: str, tag: str) -> str:
    return f"{run}/{tag}" if run else tag


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _pick(names: list[str], wanted: str, *hints: str) -> str:
    """`wanted` if it is among names, else the first name containing a hint, else wanted."""
    if wanted in names:
        return wanted
    return next((n for hint in hints for n in names if hint in n.lower()), wanted)


def adapted(facts: Facts) -> tuple[tuple[str, str], ...]:
    """EXAMPLES over the opened data: "in step N" names its first step, the
    HParams example its accuracy metric (validation's first) and hparams."""
    out = []
    for title, sql in EXAMPLES:
        if title == STEP_EXAMPLE and facts.steps:
            first = facts.steps[0]
            title, sql = title.replace("step 3", f"step {first}"), sql.replace("step = 3", f"step = {first}")
        elif title == HPARAMS_EXAMPLE and facts.metrics:
            ranked = sorted(facts.metrics, key=lambda m: ("accuracy" not in m[1], m[0] != "validation", m[0] != ""))
            run, tag = (("", "accuracy") if ("", "accuracy") in facts.metrics else ranked[0])
            sql = sql.replace("tag = 'accuracy' AND run = ''", f"tag = {_literal(tag)} AND run = {_literal(run)}")
            for name, hints in (("optimizer", ("optim",)), ("lr", ("learning_rate", "lr"))):
                sql = sql.replace(f"h.name = '{name}'", f"h.name = {_literal(_pick(facts.hparams, name, *hints))}")
        out.append((title, sql))
    return tuple(out)


def _span(steps: list[int]) -> str:
    if steps == list(range(steps[0], steps[-1] + 1)):
        return f"{steps[0]}-{steps[-1]}" if len(steps) > 1 else str(steps[0])
    return ", ".join(map(str, steps[:8])) + (", ..." if len(steps) > 8 else "")


def why_empty(sql: str, facts: Facts) -> str:
    """Why a query answered no rows, where a filter names what the data lacks
    (a step, a metric tag); "" when that cannot be told."""
    if facts.steps is not None:
        for m in re.finditer(r"\bstep\s*=\s*(-?\d+)\b", sql, re.I):
            if int(m.group(1)) not in facts.steps:
                return f"no step {m.group(1)}: " + (f"steps are {_span(facts.steps)}" if facts.steps else
                                                    "the data has no steps")
    tags = re.findall(r"\btag\s*=\s*'((?:[^']|'')*)'", sql, re.I)
    runs = re.findall(r"\brun\s*=\s*'((?:[^']|'')*)'", sql, re.I)
    if facts.metrics:
        for tag in (t.replace("''", "'") for t in tags):
            wanted = [(run.replace("''", "'"), tag) for run in runs] or [(r, t) for r, t in facts.metrics if t == tag]
            if not any(m in facts.metrics for m in wanted):
                shown = ", ".join(_metric(*m) for m in facts.metrics[:8]) + (", ..." if len(facts.metrics) > 8 else "")
                return f"no metric {_metric(*wanted[0]) if wanted else tag}: metrics are {shown}"
    return ""
