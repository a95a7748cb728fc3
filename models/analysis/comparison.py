"""Everything the Compare view and `report --compare` show for a baseline and
a candidate: each side's timeline and memory profile loaded from a place
(location, session, host), and models/diff's statistics, overview and memory
diffs of them. What one side cannot give (no timeline, no memory profile, a
multi-host memory profile) becomes a note, not an error."""

from __future__ import annotations

from dataclasses import dataclass, field

from profscope.models.analysis import diff
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.data.memory_profile import MemoryProfileData
from profscope.models.data.timeline import Timeline
from profscope.models.repository.profile_repository import ProfileRepository
from profscope.models.repository.registry import MEMORY_PROFILE, TRACE_VIEWER


@dataclass
class Place:
    """One side: a location (folder, file or grpc://), a session ("" = the
    latest) and a host ("" = the only one, or all hosts where they combine)."""

    location: str
    session: str = ""
    host: str = ""

    def label(self) -> str:
        return " / ".join(p for p in (self.location, self.session, self.host) if p)


@dataclass
class Loaded:
    """One side as loaded: the place resolved, its timeline and memory profile."""

    place: Place
    timeline: Timeline | None = None
    memory: MemoryProfileData | None = None
    notes: list[str] = field(default_factory=list)
    hosts: list[str] = field(default_factory=list)  # the hosts with a timeline ("" first: all, where they combine)


@dataclass
class Comparison:
    baseline: Loaded
    candidate: Loaded
    stats: dict[str, diff.StatsDiff]  # by diff.TABLES name
    overview: diff.OverviewDiff | None
    memory: diff.MemoryDiff | None
    notes: list[str]
    steps: tuple[str, str] = ("", "")  # each side's step choice: "", "A", "A-B" or "median"


def load_side(place: Place, task: TaskState | None = None, repo: ProfileRepository | None = None) -> Loaded:
    """A side's timeline and memory profile (each when the place has it)."""
    from profscope.models.repository.locations import open_repository

    repo = repo or open_repository(place.location, task)
    session = repo.session_or_latest(place.session)
    tools = repo.session(session).tools
    out = Loaded(Place(place.location, session, place.host))
    if TRACE_VIEWER in tools:
        out.hosts = [""] * repo.combines_hosts(session) + repo.hosts_with(session, TRACE_VIEWER)
        host = place.host
        if not host and not repo.combines_hosts(session):
            host = repo.hosts_with(session, TRACE_VIEWER)[0]
            out.place.host = host
        out.timeline = repo.step_timeline(session, host, "", task)
    else:
        out.notes.append(f"{out.place.label()} has no timeline")
    if MEMORY_PROFILE in tools:
        hosts = repo.hosts_with(session, MEMORY_PROFILE)
        host = place.host if place.host in hosts else out.place.host if out.place.host in hosts else hosts[0]
        try:
            out.memory = repo.memory_profile(session, host, task)
        except ProfileError as e:  # a Chrome trace without [memory] events, say
            out.notes.append(str(e))
    else:
        why = repo.why_missing(session, MEMORY_PROFILE)
        out.notes.append(f"{out.place.label()} has no memory profile" + (f": {why}" if why else ""))
    return out


def stats_over(base: Loaded, cand: Loaded, steps: tuple[str, str] = ("", ""),
               task: TaskState | None = None) -> tuple[dict[str, diff.StatsDiff], diff.OverviewDiff]:
    """The statistics and overview diffs of both timelines, each over its step
    choice (diff.step_window_of); a step a side lacks raises, naming the side."""
    sides = []
    for name, loaded, spec in zip(("baseline", "candidate"), (base, cand), steps):
        assert loaded.timeline is not None  # compared only where both sides have one
        try:
            sides.append(diff.Side(loaded.timeline, window=diff.step_window_of(loaded.timeline, spec)))
        except ProfileError as e:
            raise ProfileError(f"{name}: {e}") from None
    stats = {}
    for i, table in enumerate(diff.TABLES):
        if task is not None:
            task.raise_if_cancelled()
            task.report(i / 4, f"Comparing {table}…")
        stats[table] = diff.stats_diff(sides[0], sides[1], table)
    return stats, diff.overview_diff(*sides)


def compare_loaded(base: Loaded, cand: Loaded, align_step: int | None = None,
                   task: TaskState | None = None, steps: tuple[str, str] = ("", "")) -> Comparison:
    notes = base.notes + cand.notes
    stats: dict[str, diff.StatsDiff] = {}
    overview, memory = None, None
    if base.timeline is not None and cand.timeline is not None:
        stats, overview = stats_over(base, cand, steps, task)
    if base.memory is not None and cand.memory is not None:
        memory = memory_diff(base, cand, align_step, notes)
    return Comparison(base, cand, stats, overview, memory, notes, steps)


def memory_diff(base: Loaded, cand: Loaded, align_step: int | None, notes: list[str] | None = None):
    """The memory diff aligned at a step; a step a side lacks falls back to the start (with a note)."""
    assert base.memory is not None and cand.memory is not None  # compared only where both sides have one
    try:
        return diff.memory_diff(base.memory, cand.memory, align_step)
    except ProfileError as e:
        if notes is not None:
            notes.append(f"{e}; aligned at the start")
        return diff.memory_diff(base.memory, cand.memory, None)


def compare(base: Place, cand: Place, task: TaskState | None = None, align_step: int | None = None,
            repos: dict[str, ProfileRepository] | None = None, steps: tuple[str, str] = ("", "")) -> Comparison:
    """Loads both sides (a location's repository reused from `repos`) and compares them."""
    repos = repos if repos is not None else {}
    loaded = []
    for side, place in (("baseline", base), ("candidate", cand)):
        try:
            loaded.append(load_side(place, task, repos.get(place.location)))
        except ProfileError as e:
            raise ProfileError(f"{side}: {e}") from None
    return compare_loaded(loaded[0], loaded[1], align_step, task, steps)
