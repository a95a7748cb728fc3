"""`profscope report`: every view rendered offscreen to PNG, plus index.html."""

from __future__ import annotations

import html
import re
from pathlib import Path

from profscope.models.analysis import trace_stats
from profscope.models.core.task import ProfileError, TaskState
from profscope.models.core.units import format_bytes, format_time_ps
from profscope.models.repository.profile_repository import ProfileRepository
from profscope.models.repository.registry import MEMORY_PROFILE, OP_STATS, TRACE_VIEWER
from profscope.protos import api_pb2

VIEW_SIZE = (1400, 900)


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "_".join(parts)).strip("_") or "view"


def _error_section(title: str, error: Exception) -> str:
    return f"<h2>{html.escape(title)}</h2><p class=error>{html.escape(str(error))}</p>"


def _timeline_section(title: str, timeline, png: Path) -> str:
    """Warnings, size, screenshot and the op statistics table of one timeline."""
    a, b = timeline.span_ps
    stats = timeline.all_kind_stats
    rows = "".join(
        f"<tr><td>{html.escape(timeline.groups[g])}</td><td>{html.escape(timeline.kinds[k])}</td>"
        f"<td>{c:,}</td><td>{format_time_ps(t)}</td><td>{100 * t / max(b - a, 1):.1f} %</td></tr>"
        for g, k, c, t in zip(stats.group.tolist(), stats.kind.tolist(), stats.count.tolist(), stats.total_ps.tolist()))
    warn = "".join(f"<p class=error>{html.escape(w)}</p>" for w in timeline.warnings)
    return (f"<h2>Timeline: {html.escape(title)}</h2>{warn}<p>{len(timeline):,} events on "
            f"{len(timeline.groups)} device(s), {format_time_ps(b - a)}.</p>"
            f"<img src='{html.escape(png.name)}' alt='timeline'><h3>Op statistics</h3>"
            "<table><tr><th>Device</th><th>Op type</th><th>Count</th><th>Total</th><th>Share of step</th></tr>"
            f"{rows}</table>")


def _model_table(model, top: int, skip: tuple[int, ...] = ()) -> str:
    """The first `top` rows of a table model as shown (formatted, in its order)."""
    from PySide6.QtCore import Qt

    columns = [c for c in range(model.columnCount()) if c not in skip]
    head = "".join(f"<th>{html.escape(str(model.headerData(c, Qt.Horizontal)))}</th>" for c in columns)
    rows = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(model.data(model.index(r, c)) or ''))}</td>" for c in columns) + "</tr>"
        for r in range(min(top, model.rowCount()))
    )
    return f"<table><tr>{head}</tr>{rows}</table>"


def _statistics_section(title: str, view, stats, save, top: int = 20) -> str:
    """A GPU trace's Statistics: the overview page as PNG, the overview table,
    and the top kernels and operators by total time."""
    from PySide6.QtCore import Qt

    from profscope.widgets.stats.table_models import KernelModel, OpModel, OverviewModel

    view.set_stats(stats)
    view.show_page("overview")
    png = save(view, f"statistics_{_slug(title)}.png")
    one_host = (0,) if len(stats.overview) <= 1 else ()
    overview, kernels, ops = OverviewModel(), KernelModel(), OpModel()
    overview.set_stats(stats)
    kernels.set_stats(stats)
    kernels.sort(4, Qt.DescendingOrder)
    ops.set_stats(stats)
    ops.sort(3, Qt.DescendingOrder)
    devices = "".join(
        f"<p>{html.escape(o.host or 'host')}: "
        + html.escape(
            ", ".join(
                f"GPU {d.get('id', '?')} {d.get('name', '')}"
                for d in trace_stats.device_list(o.properties)
                if isinstance(d, dict) and d.get("id") in stats.devices_used.get(o.host, [])
            )
        )
        + "</p>"
        for o in stats.overview
        if stats.devices_used.get(o.host)
    )
    return (
        f"<h2>Statistics: {html.escape(title)}</h2><p>{html.escape(view.range_label.text())}</p>"
        + (f"<p class='note'>{html.escape(stats.note[0].upper() + stats.note[1:])}.</p>" if stats.note else "")
        + f"{_model_table(overview, len(stats.overview))}{devices}"
        f"<img src='{html.escape(png.name)}' alt='statistics overview'>"
        f"<h3>Kernels (top {min(top, len(stats.kernels))} of {len(stats.kernels):,} by total time)</h3>"
        f"{_model_table(kernels, top, one_host)}"
        f"<h3>Operators (top {min(top, len(stats.ops))} of {len(stats.ops):,} by host total time)</h3>"
        f"{_model_table(ops, top, one_host)}"
    )


def _xprof_section(title: str, view, repo, session: str, host: str, save, task=None,
                   errors: list[str] | None = None) -> str:
    """XProf's tools of a host (host "": all hosts, combined as XProf combines them), each page as PNG;
    memory_viewer shows the module with the largest peak heap, every module's peak listed. A tool that fails
    is left out, "title: error" added to `errors`; when overview_page (which reads the whole file) fails, so
    does the section (ProfileError)."""
    from profscope.viewer.controllers.loading import module_memory, xprof_data
    from profscope.viewer.session_tree import xprof_tools
    from profscope.widgets.xprof.view import TOOL_TITLES

    tools = xprof_tools(repo, session, host)
    data = xprof_data(repo, session, host, tools, task)
    failed = data.get("errors", [])
    if failed and "overview_page" in tools and "overview_page" not in data:
        raise ProfileError("; ".join(failed))
    if errors is not None:
        errors += [f"XProf: {title}: {e}" for e in failed]
    problems = "".join(f"<p class=error>{html.escape(e)}</p>" for e in failed)
    modules = ""
    if (memory := data.get("memory_viewer")) is not None:
        peaks = []
        first = memory["module"], memory["data"]  # xprof_data's module: not computed again
        for name in memory["modules"]:
            result = first[1] if name == first[0] else module_memory(repo, session, host, name, task)
            peaks.append((float(result.peak_heap_mib), name))
            if peaks[-1] == max(peaks):
                memory.update(module=name, data=result)
        rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{peak:,.3f} MiB</td></tr>"
                       for peak, name in sorted(peaks, reverse=True))
        modules = (f"<p>Memory viewer: {len(peaks)} XLA module(s); shown: {html.escape(memory['module'])}, "
                   f"the largest peak heap.</p><table><tr><th>Module</th><th>Peak heap</th></tr>{rows}</table>")
    view.set_data(data)
    images = []
    for tool in view.tools:
        if tool in data:
            view.show_page(tool)
            png = save(view, f"xprof_{_slug(session, host or 'all_hosts', tool)}.png")
            images.append(f"<h3>{html.escape(TOOL_TITLES[tool])}</h3><img src='{html.escape(png.name)}' "
                          f"alt='{html.escape(tool)}'>")
    return f"<h2>XProf: {html.escape(title)}</h2>{problems}{modules}" + "".join(images)


def _kernel_section(log, memory_id: str, top: int = 20) -> str:
    """What a LogMemory log says beyond the plot: its counts and the kernels
    that allocated the most bytes."""
    k = log.kernels(memory_id)
    rows = "".join(
        f"<tr><td>{html.escape(k.kernel[i])}</td><td>{k.count[i]:,}</td><td>{k.tracked[i]:,}</td>"
        f"<td>{format_bytes(int(k.bytes[i]))}</td></tr>"
        for i in range(min(top, len(k)))
    )
    return (
        f"<p>{html.escape(log.skipped_text())}</p><h3>Bytes allocated per kernel (top {min(top, len(k))} "
        f"of {len(k):,})</h3><table><tr><th>Kernel</th><th>Allocations</th><th>With allocation_id</th>"
        f"<th>Bytes</th></tr>{rows}</table>"
    )


def _curves_at_once(view):
    """The HParams view's request_curves for the report: read at once (no
    worker), a reading error shown in the curves panel."""
    from profscope.models.hparams.curves import load_curves

    def request(data, sessions, metrics, on_curves) -> None:
        try:
            curves = load_curves(data.logdir.path, sessions, metrics)
        except ProfileError as e:
            view.curves.show_message(str(e))
        else:
            on_curves(curves)

    return request


def _hparams_section(view, data, save, top: int = 20, charts: int = 3) -> str:
    """The sweep: the table sorted by its first metric, the top groups in
    HTML, the parallel coordinates, the scatter matrix of that metric against
    the hparams, and the training curves of the best groups."""
    from profscope.models.hparams.experiment import format_value

    view.set_data(data)
    metrics = [i for i, (kind, _) in enumerate(view.columns.items) if kind == "metric"]
    if metrics:
        tag = view.columns.items[metrics[0]][1][1].lower()
        lower_is_better = any(word in tag for word in ("loss", "error", "perplexity"))
        view.sort_by([(metrics[0], api_pb2.ORDER_ASC if lower_is_better else api_pb2.ORDER_DESC)])
    title = view.columns.title(metrics[0]) if metrics else "group name"
    pngs = [save(view, "hparams_table.png")]
    view.center.setCurrentIndex(1)
    pngs.append(save(view, "hparams_parallel_coordinates.png"))
    if metrics:  # the top metric against every hparam (the first eight)
        view.scatter_y = [view.columns.items[metrics[0]]]
        view.scatter_x = [item for item in view.columns.items if item[0] == "hparam"][:8]
        view.center.setCurrentIndex(2)
        pngs.append(save(view, "hparams_scatter_matrix.png"))
    view.center.setCurrentIndex(0)
    for rank in range(1, min(charts, view.model.rowCount())):  # the first is shown in the table screenshot
        view.select_row(rank)
        pngs.append(save(view, f"hparams_group_{rank + 1}.png"))
    columns = list(range(len(view.columns)))
    rows = "".join(
        "<tr>"
        + "".join(f"<td>{html.escape(format_value(view.model.value(int(g), c)))}</td>" for c in columns)
        + "</tr>"
        for g in view.order[:top]
    )
    head = "".join(f"<th>{html.escape(view.columns.title(c))}</th>" for c in columns)
    images = "".join(f"<img src='{html.escape(p.name)}' alt='hparams'>" for p in pngs)
    return (
        f"<h2>HParams: {len(view.order):,} session groups</h2><p>Sorted by {html.escape(title)}; "
        f"the top {min(top, len(view.order))}:</p><table><tr>{head}</tr>{rows}</table>{images}"
    )


def write_report(
    repo: ProfileRepository | None,
    out_dir: Path,
    hparams=None,
    location: str = "",
    task: TaskState | None = None,
    errors: list[str] | None = None,
) -> list[Path]:
    """Renders the memory view of every session, host and allocator, the
    timeline and op statistics of every host with a step timeline, the
    Statistics (overview, top kernels and operators) of GPU traces per host
    and for all hosts, every XProf tool page of each xplane host and of all
    hosts combined, and the HParams table, parallel coordinates, scatter
    matrix of the top metric and best groups' curves of a sweep.

    Returns the written paths, index.html last. Sessions that fail to load
    are listed in the page with their error instead of stopping the report.
    `task` hears of each load's progress; `errors` gets "title: error" of each.
    """
    from PySide6.QtCore import QEvent

    from profscope.models.data.flame import allocation_flame
    from profscope.viewer.app import application
    from profscope.viewer.session_tree import ALL_HOSTS, xprof_tools
    from profscope.widgets.hparams.view import HParamsView
    from profscope.widgets.memory.flame import FlameView
    from profscope.widgets.memory.summary import summary_items
    from profscope.widgets.memory.view import MemoryView
    from profscope.widgets.stats.trace_stats_view import TraceStatsView
    from profscope.widgets.timeline.view import TimelineView
    from profscope.widgets.xprof.view import XprofStatsView

    app = application(offscreen_without_display=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sections = []
    errors = [] if errors is None else errors

    def error_section(title: str, error: Exception) -> str:
        errors.append(f"{title}: {error}")
        return _error_section(title, error)

    view = MemoryView()
    view.resize(*VIEW_SIZE)
    flame_view = FlameView()
    timeline_view = TimelineView()
    timeline_view.resize(*VIEW_SIZE)
    stats_view = TraceStatsView()
    stats_view.resize(*VIEW_SIZE)
    xprof_view = XprofStatsView()
    xprof_view.resize(*VIEW_SIZE)

    def save(widget, name: str) -> Path:
        widget.show()
        app.processEvents()
        png = out_dir / name
        if not widget.grab().save(str(png)):
            raise ProfileError(f"could not write {png}")
        written.append(png)
        return png

    hparams_view = HParamsView()
    hparams_view.request_curves = _curves_at_once(hparams_view)
    hparams_view.resize(*VIEW_SIZE)
    if hparams is not None:
        sections.append(_hparams_section(hparams_view, hparams, save))
    for info in sorted(repo.enum_sessions() if repo is not None else [], key=lambda s: s.name):
        with_stats = repo.hosts_with(info.name, OP_STATS)
        for host in repo.hosts_with(info.name, TRACE_VIEWER):
            title = f"{info.name} / {host}"
            try:
                timeline = repo.step_timeline(info.name, host, task=task)
                stats = trace_stats.compute(timeline) if host in with_stats else None
            except ProfileError as e:
                sections.append(error_section(title, e))
                continue
            timeline_view.set_timeline(timeline)
            timeline_view.bottom.setCurrentIndex(2)  # op statistics
            png = save(timeline_view, f"timeline_{_slug(info.name, host)}.png")
            sections.append(_timeline_section(title, timeline, png))
            if stats is not None:
                sections.append(_statistics_section(title, stats_view, stats, save))
        for host in [*info.hosts, ""]:  # XProf's tools of each xplane host, then of all hosts combined
            if xprof_tools(repo, info.name, host):
                title = f"{info.name} / {host or ALL_HOSTS}"
                try:
                    sections.append(_xprof_section(title, xprof_view, repo, info.name, host, save, task, errors))
                except ProfileError as e:
                    sections.append(error_section(f"XProf: {title}", e))
        if with_stats and repo.combines_hosts(info.name):  # every host side by side
            title = f"{info.name} / {ALL_HOSTS}"
            try:
                stats = trace_stats.compute(repo.step_timeline(info.name, "", task=task))
            except ProfileError as e:
                sections.append(error_section(title, e))
            else:
                sections.append(_statistics_section(title, stats_view, stats, save))
        for host in repo.hosts_with(info.name, MEMORY_PROFILE):
            title = f"{info.name} / {host}"
            try:
                data = repo.memory_profile(info.name, host, task)
            except ProfileError as e:
                sections.append(error_section(title, e))
                continue
            view.set_hosts(list(info.hosts), host)
            view.set_profile(data)
            for memory_id in data.memory_ids:
                view.allocator_box.setCurrentText(memory_id)
                png = save(view, f"memory_{_slug(info.name, host, memory_id)}.png")
                allocator = data.allocators[memory_id]
                flame = ""
                graph = allocation_flame(allocator)
                if graph is not None and graph.total > 0:  # call stacks: the flame graph at the peak, whole
                    flame_view.set_flame(graph, "at the peak")
                    rows = graph.max_depth + 1
                    flame_view.resize(VIEW_SIZE[0], min(80 + rows * flame_view.canvas.row_height(), 2000))
                    flame_png = save(flame_view, f"memory_{_slug(info.name, host, memory_id)}_flame.png")
                    flame = (f"<p>{html.escape(flame_view.readout.text())}</p>"
                             f"<img src='{html.escape(flame_png.name)}' alt='flame graph of the live bytes'>")
                rows = "".join(
                    f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in summary_items(allocator)
                )
                sections.append(
                    f"<h2>Memory: {html.escape(title)} / {html.escape(memory_id)}</h2>"
                    f"<table>{rows}</table><img src='{html.escape(png.name)}' alt='memory view'>"
                    f"<p>{len(allocator.peak_allocations):,} rows in the table of active allocations at the peak.</p>"
                    + flame
                    + "".join(f"<p>{html.escape(note)}</p>" for note in data.problems + allocator.notes)
                    + (_kernel_section(data.log, memory_id) if data.log is not None else "")
                    + _allocator_state_section(view, memory_id, save, (info.name, host))
                )
    # Delete the widgets now, while Qt is fully alive, not at interpreter exit.
    for widget in (view, flame_view, timeline_view, hparams_view, stats_view, xprof_view):
        widget.close()
        widget.deleteLater()
    del view, flame_view, timeline_view, hparams_view, stats_view, xprof_view
    app.sendPostedEvents(None, QEvent.DeferredDelete)
    if repo is not None and (files := repo.not_profiles()):
        rows = "".join(f"<li>{html.escape(path)}: {html.escape(reason)}</li>" for path, reason in files)
        sections.append(f"<h2>Not profiles ({len(files):,})</h2><ul>{rows}</ul>")
    written.append(_write_index(out_dir, f"Profscope report: {location or repo.location}", sections))
    return written


def _allocator_state_section(view, memory_id: str, save, where: tuple[str, str]) -> str:
    """A CUDA memory snapshot device's allocator state at the last event and its cached segment timeline (PNGs);
    nothing for other sources."""
    from profscope.widgets.memory.view import SEGMENTS_VIEW, STATE_VIEW, TIMELINE_VIEW

    history = view.history(memory_id)
    if history is None:
        return ""
    out = []
    for tab, name, title in ((STATE_VIEW, "allocator_state", "Allocator state at the last event"),
                             (SEGMENTS_VIEW, "cached_segments", "Cached segment timeline")):
        view.views.setCurrentIndex(tab)
        png = save(view, f"{name}_{_slug(*where, memory_id)}.png")
        out.append(f"<h3>{html.escape(title)}</h3><img src='{html.escape(png.name)}' alt='{html.escape(title)}'>")
    view.views.setCurrentIndex(TIMELINE_VIEW)
    t = history.state(len(history) - 1).totals() if len(history) else history.state(-1).totals()
    out.append(f"<p>{len(history):,} events; at the last: {t['segments']:,} segments, {t['reserved']:,} bytes "
               f"reserved, {t['allocated']:,} allocated, {t['awaiting_free']:,} awaiting free, {t['free']:,} free "
               f"inside segments (largest run {t['largest_free']:,}).</p>"
               + "".join(f"<p>{html.escape(note)}</p>" for note in history.notes))
    return "".join(out)


def _write_index(out_dir: Path, title: str, sections: list[str]) -> Path:
    index = out_dir / "index.html"
    index.write_text(
        "<!doctype html><meta charset=utf-8><title>Profscope report</title>"
        "<style>body{font-family:sans-serif;margin:2em}img{max-width:100%;border:1px solid #ccc}"
        "th{text-align:left;padding-right:1em;color:#555}td{padding-right:1em}.error{color:#b71c1c}</style>"
        f"<h1>{html.escape(title)}</h1>" + "".join(sections),
        encoding="utf-8",
    )
    return index


def write_compare_report(comparison, out_dir: Path, top: int = 30) -> list[Path]:
    """`report --compare A B`: the Compare view's statistics tables (kernels,
    operators, op types; the top rows by |delta| in the page too), the
    overview diff and each allocator's overlaid memory curves, as PNGs plus
    index.html. Returns the written paths, index.html last."""
    from PySide6.QtCore import QEvent

    from profscope.viewer.app import application
    from profscope.widgets.compare.view import TABLE_TITLES, CompareView

    app = application(offscreen_without_display=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    view = CompareView()
    view.resize(*VIEW_SIZE)
    view.set_comparison(comparison)
    view.show()
    c = comparison

    def side(loaded, steps: str) -> str:
        return html.escape(loaded.place.label() + (f" (steps {steps})" if steps else ""))

    sections = [f"<p>Baseline: {side(c.baseline, c.steps[0])}<br>Candidate: {side(c.candidate, c.steps[1])}</p>"]
    sections += [f"<p class=error>{html.escape(note)}</p>" for note in c.notes]

    def save(name: str, what: str) -> str:
        app.processEvents()
        png = out_dir / name
        if not view.grab().save(str(png)):
            raise ProfileError(f"could not write {png}")
        written.append(png)
        return f"<img src='{html.escape(png.name)}' alt='{html.escape(what)}'>"

    page = view.stats_page
    for table, d in c.stats.items():
        view.pages.setCurrentWidget(page)
        page.show_table(table)
        title = TABLE_TITLES[table]
        if not len(d):
            sections.append(f"<h2>{html.escape(title)}</h2><p>Neither profile has rows in this table.</p>")
            continue
        sections.append(
            f"<h2>{html.escape(title)}: {len(d):,} rows</h2><p>{html.escape(page.counts.text())}; "
            f"the top {min(top, len(d))} by |Δ total|:</p>{_model_table(page.model, top)}"
            + save(f"compare_{table}.png", title)
        )
    if c.overview is not None:
        view.pages.setCurrentWidget(view.overview_page)
        sections.append("<h2>Overview</h2>" + save("compare_overview.png", "overview"))
    if c.memory is not None:
        memory = view.memory_page
        view.pages.setCurrentWidget(memory)
        for k, a in enumerate(c.memory.allocators):
            memory.allocator_box.setCurrentIndex(k)
            sections.append(
                f"<h2>Memory: {html.escape(a.memory_id)}</h2><p>{memory.peaks.text()}</p>"
                + save(f"compare_memory_{_slug(a.memory_id)}.png", "memory curves")
            )
    view.close()
    view.deleteLater()
    view = None  # the wrapper too (save() shares this name, so not del), before the deferred delete
    app.sendPostedEvents(None, QEvent.DeferredDelete)
    title = f"Profscope comparison: {c.baseline.place.label()} vs {c.candidate.place.label()}"
    written.append(_write_index(out_dir, title, sections))
    return written
