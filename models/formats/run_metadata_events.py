"""Event files with run metadata: `FileWriter.add_run_metadata(md, tag)`
writes a traced step's RunMetadata into a TensorBoard event file. Each tag is
a step; the StepStats reader (profscope.models.formats.step_stats) reads the one chosen."""

from __future__ import annotations

from pathlib import Path

from profscope.models.core.event_file import host_of_event_file, is_event_file, tagged_run_metadata
from profscope.models.core.task import ProfileError
from profscope.models.formats.step_stats import StepStatsFormat, locate

# path -> ((mtime, size), tags): a folder is scanned again on every reload.
_tag_cache: dict[Path, tuple[tuple[int, int], list[str]]] = {}


def run_metadata_tags(path: Path) -> list[str]:
    """The run metadata tags of an event file, read again only when it changed."""
    try:
        st = path.stat()
        key = (st.st_mtime_ns, st.st_size)
    except OSError:
        return []
    cached = _tag_cache.get(path)
    if cached is None or cached[0] != key:
        try:
            tags = [t.tag for t in tagged_run_metadata(path)[0]]
        except ProfileError:
            tags = []
        cached = _tag_cache[path] = (key, tags)
    return cached[1]


def _tags(files: list[Path]) -> dict[str, Path]:
    """Tag -> event file; a later file wins, as in TensorBoard."""
    return {tag: path for path in files for tag in run_metadata_tags(path)}


class RunMetadataEventsFormat(StepStatsFormat):
    """StepStats read from event files: the same tools, chosen by tag."""

    name = "run_metadata_events"
    title = "event files with `tagged_run_metadata`"
    where = "`events.out.tfevents.*` in any folder (a run); host from the file name, each tag a step"
    patterns = ("events.out.tfevents.*",)
    rank = 4

    def host_in_folder(self, path: Path) -> str | None:
        if is_event_file(path.name) and run_metadata_tags(path):
            return host_of_event_file(path.name)
        return None

    def lone_file(self, path: Path) -> tuple[str, str] | None:
        if not is_event_file(path.name):
            return None
        if not run_metadata_tags(path):
            tagged_run_metadata(path)  # raises with the reason when unreadable
            raise ProfileError(f"{path}: this event file holds no run metadata (FileWriter.add_run_metadata writes it)")
        return path.parent.name, host_of_event_file(path.name)

    def why_not(self, path: Path) -> None:
        return None

    def steps(self, files):
        return list(_tags(files))

    @staticmethod
    def _source(files: list[Path], step: str, task):
        tags = _tags(files)
        if step and step not in tags:
            raise ProfileError(f"no run metadata tagged {step!r}; steps: {', '.join(tags)}")
        tag = step or next(iter(tags))
        return locate(tags[tag], tag, task)


FORMAT = RunMetadataEventsFormat()
