"""The example queries of docs/SQL.md (a test keeps the two the same), for
the Query tab's list."""

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
