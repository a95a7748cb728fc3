"""Writes real TensorFlow RunMetadata files and what TensorFlow's own
timeline.py makes of them. Run in a throwaway venv with tensorflow-cpu, not in
the test suite:

    python tf_run_metadata.py OUTDIR

OUTDIR/run_metadata.pb        binary RunMetadata of one FULL_TRACE step
OUTDIR/run_metadata.pbtxt     the same in text format
OUTDIR/step_stats.pbtxt       its StepStats alone, text format
OUTDIR/logs/events.out.tfevents.*   FileWriter with add_run_metadata for
                              tags step_1 and step_2, plus the graph
OUTDIR/timeline.json          timeline.py's Chrome trace (show_memory=True)
                              for run_metadata.pb
OUTDIR/allocator_maximums.json  timeline.py's per-allocator peaks
"""

import json
import sys
from pathlib import Path

import tensorflow as tf
from google.protobuf import text_format
from tensorflow.python.client import timeline

tf1 = tf.compat.v1
tf1.disable_eager_execution()
out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)

x = tf1.placeholder(tf.float32, [None, 128], name="x")
w1 = tf1.get_variable("w1", [128, 256])
w2 = tf1.get_variable("w2", [256, 64])
h = tf.nn.relu(tf.matmul(x, w1), name="hidden")
with tf.device("/cpu:1"):  # a second device, so the trace has two
    h2 = tf.nn.softmax(tf.matmul(h, w2), name="probs")
loss = tf.reduce_mean(tf.square(h2 - 0.5), name="loss")
train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)

config = tf1.ConfigProto(device_count={"CPU": 2}, inter_op_parallelism_threads=2, intra_op_parallelism_threads=1)
with tf1.Session(config=config) as sess:
    sess.run(tf1.global_variables_initializer())
    writer = tf1.summary.FileWriter(str(out / "logs"), sess.graph)
    options = tf1.RunOptions(trace_level=tf1.RunOptions.FULL_TRACE)
    feed = {x: [[0.01 * i] * 128 for i in range(32)]}
    metas = []
    for step in (1, 2):
        md = tf1.RunMetadata()
        sess.run(train, feed_dict=feed, options=options, run_metadata=md)
        writer.add_run_metadata(md, f"step_{step}", global_step=step)
        metas.append(md)
    writer.close()

md = metas[0]
(out / "run_metadata.pb").write_bytes(md.SerializeToString())
(out / "run_metadata.pbtxt").write_text(text_format.MessageToString(md))
(out / "step_stats.pbtxt").write_text(text_format.MessageToString(md.step_stats))
analysis = timeline.Timeline(md.step_stats).analyze_step_stats(show_dataflow=True, show_memory=True)
(out / "timeline.json").write_text(analysis.chrome_trace.format_to_string(pretty=False))
maxima = {name: {"num_bytes": m.num_bytes, "timestamp": m.timestamp, "tensors": sorted(m.tensors)}
          for name, m in analysis.allocator_maximums.items()}
(out / "allocator_maximums.json").write_text(json.dumps(maxima, indent=1, sort_keys=True))
print("wrote", out)
