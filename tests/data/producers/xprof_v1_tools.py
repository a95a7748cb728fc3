"""TensorFlow 2.2-2.3 style per-tool protobufs and tensorboard-plugin-profile 2.4.0's JSON of them.

Step 1, in a venv with `pip install xprof==2.20.0`:
    python xprof_v1_tools.py protos tests/data/xprof/v1
writes <out>/<host>/<host>.{overview_page,input_pipeline,tensorflow_stats,kernel_stats}.pb for
tests/data/xprof/tfdata.xplane.pb (host tfdata) and tests/data/xprof/device/gpu_tf.xplane.pb (host gpu_tf).
overview_page and input_pipeline are the bytes xprof's `xspace_to_tools_data` returns. xprof 2.20 no longer
serves tensorflow_stats or kernel_stats as protos, so those two are built with its tf_stats/kernel_stats
schema from its framework_op_stats and kernel_stats JSON of the same file. Each xplane is converted from a
copy in a temporary folder: xprof writes a cache beside its input.

Step 2, in a venv with `pip install tensorboard-plugin-profile==2.4.0 protobuf==3.20.3`:
    python xprof_v1_tools.py expected tests/data/xprof/v1
writes <out>/tools/<host>.<tool>.json: the plugin's converters (convert/*_proto_to_gviz.py `to_json`) on each file.
"""

import json
import shutil
import sys
import tempfile
from pathlib import Path

DATA = Path(__file__).resolve().parents[1]
SOURCES = {"tfdata": DATA / "xprof" / "tfdata.xplane.pb", "gpu_tf": DATA / "xprof" / "device" / "gpu_tf.xplane.pb"}
# file suffix -> (Profscope's tool name, the plugin's converter module)
FILES = {
    "overview_page": ("overview_page", "overview_page_proto_to_gviz"),
    "input_pipeline": ("input_pipeline_analyzer", "input_pipeline_proto_to_gviz"),
    "tensorflow_stats": ("framework_op_stats", "tf_stats_proto_to_gviz"),
    "kernel_stats": ("kernel_stats", "kernel_stats_proto_to_gviz"),
}


def tf_stats_db(tables: list, device_type: str):
    from xprof.protobuf import tf_stats_pb2

    db = tf_stats_pb2.TfStatsDatabase(device_type=device_type)
    for table, into in zip(tables, (db.with_idle, db.without_idle)):
        ids = [c["id"] for c in table["cols"]]
        for row in table["rows"]:
            v = dict(zip(ids, (c["v"] for c in row["c"])))
            into.tf_stats_record.add(
                rank=int(v["rank"]), host_or_device=v["host_or_device"], op_type=v["type"],
                op_name=v["operation"], occurrences=int(v["occurrences"]), total_time_in_us=v["total_time"],
                avg_time_in_us=v["avg_time"], total_self_time_in_us=v["total_self_time"],
                avg_self_time_in_us=v["avg_self_time"],
                device_total_self_time_as_fraction=v["device_total_self_time_percent"],
                device_cumulative_total_self_time_as_fraction=v["device_cumulative_total_self_time_percent"],
                host_total_self_time_as_fraction=v["host_total_self_time_percent"],
                host_cumulative_total_self_time_as_fraction=v["Host_cumulative_total_self_time_percent"],
                measured_flop_rate=v["measured_flop_rate"], measured_memory_bw=v["measured_memory_bw"],
                operational_intensity=v["operational_intensity"], bound_by=v["bound_by"],
                is_eager=v["eager"] == "Eager")
    return db


def kernel_stats_db(table: dict):
    from xprof.protobuf import kernel_stats_pb2

    db = kernel_stats_pb2.KernelStatsDb()
    ids = [c["id"] for c in table["cols"]]
    for row in table["rows"]:
        v = dict(zip(ids, (c["v"] for c in row["c"])))
        db.reports.add(
            name=v["kernel_name"], registers_per_thread=int(v["registers_per_thread"]),
            static_shmem_bytes=int(v["shmem_bytes"]),
            block_dim=[int(x) for x in v["block_dim"].split(",")], grid_dim=[int(x) for x in v["grid_dim"].split(",")],
            total_duration_ns=round(v["total_duration_us"] * 1000), min_duration_ns=round(v["min_duration_us"] * 1000),
            max_duration_ns=round(v["max_duration_us"] * 1000),
            is_kernel_using_tensor_core=v["is_kernel_using_tensor_core"],
            is_op_tensor_core_eligible=v["is_op_tensor_core_eligible"], op_name=v["op_name"],
            occurrences=int(v["occurrences"]))
    return db


def protos(out: Path) -> None:
    from xprof.convert import _pywrap_profiler_plugin as plugin
    from xprof.protobuf import overview_page_pb2

    for host, source in SOURCES.items():
        folder = out / host
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / source.name
            shutil.copyfile(source, copy)

            def tool(name: str) -> bytes:
                data, ok = plugin.xspace_to_tools_data([str(copy)], name, {})
                assert ok, data
                return data

            overview = tool("overview_page")
            (folder / f"{host}.overview_page.pb").write_bytes(overview)
            (folder / f"{host}.input_pipeline.pb").write_bytes(tool("input_pipeline_analyzer"))
            device_type = overview_page_pb2.OverviewPage.FromString(overview).run_environment.device_type
            stats = tf_stats_db(json.loads(tool("framework_op_stats")), device_type)
            (folder / f"{host}.tensorflow_stats.pb").write_bytes(stats.SerializeToString())
            kernels = json.loads(tool("kernel_stats"))
            kernels = kernels[0] if isinstance(kernels, list) else kernels
            (folder / f"{host}.kernel_stats.pb").write_bytes(kernel_stats_db(kernels).SerializeToString())


def expected(out: Path) -> None:
    import importlib

    (out / "tools").mkdir(exist_ok=True)
    for host in SOURCES:
        for suffix, (tool, module) in FILES.items():
            convert = importlib.import_module(f"tensorboard_plugin_profile.convert.{module}")
            data = convert.to_json((out / host / f"{host}.{suffix}.pb").read_bytes())
            (out / "tools" / f"{host}.{tool}.json").write_text(data)


if __name__ == "__main__":
    {"protos": protos, "expected": expected}[sys.argv[1]](Path(sys.argv[2]))
