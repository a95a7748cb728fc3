"""XSpace (xplane.proto): what TensorFlow 2.4+ and JAX write as
`<host>.xplane.pb`. The reader (xplane), XProf's step grouping (groups), the
memory profile (memory), the timeline (timeline) and XProf's trace_viewer
JSON (trace)."""

from __future__ import annotations

from pathlib import Path

from profscope.models.core.task import ProfileError, TaskState
from profscope.models.formats.xspace.xplane import host_of_xplane
from profscope.models.repository.registry import MEMORY_PROFILE, TRACE_VIEWER, XPROF_TOOLS, Format


class XSpaceFormat(Format):
    name = "xspace"
    title = "`XSpace` (TensorFlow 2.4+, JAX), memory profile and timelines"
    where = "`<host>.xplane.pb` in a session (one per host), or a single file"
    patterns = ("*.xplane.pb",)
    # XProf's analysis tools are computed by profscope.models.analysis.xprof (the repository calls it).
    tools = (MEMORY_PROFILE, TRACE_VIEWER, *XPROF_TOOLS)
    combines_hosts = True
    xprof = True

    def host_in_folder(self, path: Path) -> str | None:
        return host_of_xplane(path.name)

    # Each tool's module loads when asked for (an XProf tool's command needs none of them).
    def memory_profile(self, files, host, task):
        from profscope.models.formats.xspace.memory import xplane_memory_profile

        return xplane_memory_profile(files[0], host=host, task=task)

    def timeline(self, hosts, step, task: TaskState):
        if step:
            raise ProfileError("--param step applies to event files; an xplane.pb shows its whole capture")
        from profscope.models.formats.xspace.timeline import load_xplane_timeline

        return load_xplane_timeline([files[0] for _, files in hosts], [h for h, _ in hosts], task)

    def chrome_trace(self, files, host, step, task):
        from profscope.models.formats.xspace.trace import trace_viewer_json

        return trace_viewer_json(files[0], host, task)


FORMAT = XSpaceFormat()
