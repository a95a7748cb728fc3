"""Files of other tools that look like profiles, named by what their content
shows, so that "not a profile" says what a file is rather than only what it
is not. Profscope reads none of them."""

from __future__ import annotations

from profscope.models.core.sniff import json_keys

# (keys the JSON object starts with, what it is)
JSON_KINDS = (
    ({"schema", "nodes"}, "a PyTorch execution trace (ExecutionTraceObserver), not a profiler trace; "
                          "open the Kineto trace (*.pt.trace.json) recorded beside it"),
    ({"rocprofiler-sdk-tool"}, "rocprofv3 JSON output (rocprofiler-sdk), which Profscope does not read; "
                               "PyTorch's profiler on ROCm writes a Chrome trace it does"),
    ({"model_type", "transformers_version"}, "a model configuration (Hugging Face config.json)"),
    ({"class_name", "config"}, "a model configuration (Keras to_json)"),
)


# Other tools' data TensorFlow 2.2-2.3 wrote into profile sessions beside the files Profscope reads
# (it reads their overview_page, input_pipeline, tensorflow_stats and kernel_stats: formats.tool_protos).
XPROF_TOOL_DATA = ("pod_viewer",)


def what_it_is(name: str, head: bytes) -> str | None:
    """What a file is when its name or head shows another tool's kind of file."""
    for tool in XPROF_TOOL_DATA:
        if name.endswith((f".{tool}.pb", f".{tool}.pb.gz")) or name in (f"{tool}.pb", f"{tool}.pb.gz"):
            return (f"XProf's {tool} tool data (TensorFlow 2.2-2.3 wrote it beside the profile), which "
                    "Profscope does not read")
    keys = set(json_keys(head, 256))
    for wanted, kind in JSON_KINDS:
        if wanted <= keys:
            return kind
    return None
