"""`profscope report`: every view rendered offscreen to PNG, plus index.html."""

from __future__ import annotations

import html
import re
from pathlib import Path

from models.repository import MEMORY_PROFILE, ProfileRepository
from models.task import ProfileError

VIEW_SIZE = (1400, 900)


def _slug(*parts: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "_".join(parts)).strip("_") or "view"


def write_report(repo: ProfileRepository, out_dir: Path) -> list[Path]:
    """Renders the memory view of every session, host and allocator.

    Returns the written paths, index.html last. Sessions that fail to load
    are listed in the page with their error instead of stopping the report.
    """
    from PySide6.QtCore import QEvent

    from viewer.app import application
    from widgets.memory_summary import summary_items
    from widgets.memory_view import MemoryView

    app = application(offscreen_without_display=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    sections = []
    view = MemoryView()
    view.resize(*VIEW_SIZE)
    for info in sorted(repo.enum_sessions(), key=lambda s: s.name):
        if MEMORY_PROFILE not in info.tools:
            continue
        for host in info.hosts:
            title = f"{info.name} / {host}"
            try:
                data = repo.memory_profile(info.name, host)
            except ProfileError as e:
                sections.append(f"<h2>{html.escape(title)}</h2><p class=error>{html.escape(str(e))}</p>")
                continue
            view.set_hosts(list(info.hosts), host)
            view.set_profile(data)
            for memory_id in data.memory_ids:
                view.allocator_box.setCurrentText(memory_id)
                view.show()
                app.processEvents()
                png = out_dir / f"memory_{_slug(info.name, host, memory_id)}.png"
                if not view.grab().save(str(png)):
                    raise ProfileError(f"could not write {png}")
                written.append(png)
                allocator = data.allocators[memory_id]
                rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>"
                               for k, v in summary_items(allocator))
                sections.append(
                    f"<h2>Memory: {html.escape(title)} / {html.escape(memory_id)}</h2>"
                    f"<table>{rows}</table><img src='{html.escape(png.name)}' alt='memory view'>"
                    f"<p>{len(allocator.peak_allocations):,} rows in the table of active allocations at the peak.</p>")
    view.close()
    # Delete the widgets now, while Qt is fully alive, not at interpreter exit.
    view.deleteLater()
    del view
    app.sendPostedEvents(None, QEvent.DeferredDelete)
    index = out_dir / "index.html"
    index.write_text(
        "<!doctype html><meta charset=utf-8><title>Profscope report</title>"
        "<style>body{font-family:sans-serif;margin:2em}img{max-width:100%;border:1px solid #ccc}"
        "th{text-align:left;padding-right:1em;color:#555}.error{color:#b71c1c}</style>"
        f"<h1>Profscope report: {html.escape(repo.location)}</h1>" + "".join(sections),
        encoding="utf-8")
    written.append(index)
    return written
