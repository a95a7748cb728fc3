"""The `profscope` command.

    profscope [PATH]                      open the window (or, with no display or when Qt's
                                          platform cannot start, write the report and say where)
    profscope --window [PATH]             the window or exit 1 with what is missing
    profscope --install-desktop-entry     add Profscope to the desktop's launcher (user-local)
    profscope sessions PATH [--json]      sessions, hosts and tools
    profscope export PATH --tool T ...    a tool's data, as XProf returns it; for a log dir
                                          hparams_experiment, hparams_session_groups,
                                          hparams_metric_evals (--param request=@REQ.json) as
                                          TensorBoard's HParams routes return them
    profscope export PATH --format parquet -o DIR
                                          every SQL table as Parquet, one file per table and
                                          host (DIR/slices/host=H/part.parquet), hosts in parallel
    profscope query PATH "SQL" [--format table|csv|json|parquet] [-o FILE]
                                          SQL over the location's tables (docs/SQL.md)
    profscope diff A B [--tool T] ...     compare two profiles (baseline A, candidate B): kernel_stats,
                                          op_stats, op_types, overview or memory_profile as JSON (docs/DIFF.md)
    profscope report PATH -o DIR          every view as PNG plus index.html
    profscope report --compare A B -o DIR the diff tables and overlaid memory curves as PNG plus index.html
    profscope serve PATH [--port N]       the ProfileAnalysis gRPC service over a folder
    profscope capture ADDRESS -o DIR      profile a running TensorFlow / JAX program
    profscope formats                     what Profscope reads (the README's table)

--debug (anywhere) also prints the traceback of an unexpected error; it is always
written to the log in the user's cache folder (profscope.viewer.crashlog).

PATH may also be grpc://host:port (a `profscope serve` or other ProfileAnalysis server).

`sessions`, `export`, `query` and `diff` import no Qt, so they start fast and run on servers.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import stat
import sys
import threading
import weakref
from pathlib import Path

from profscope.models.core.task import Cancelled, ProfileError
from profscope.models.core.units import format_bytes
from profscope.models.data.tool_data import ToolData
from profscope.models.hparams import TOOLS as HPARAMS_TOOLS
from profscope.viewer import crashlog
from profscope.viewer.progress import CountingWriter, TerminalProgress
from profscope.viewer.query_output import FORMATS as RESULT_FORMATS

COMMANDS = ("sessions", "export", "query", "diff", "report", "serve", "capture", "formats")
DEFAULT_REPORT_DIR = "profscope-report"
DIFF_TOOLS = ("kernel_stats", "op_stats", "op_types", "overview", "memory_profile")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="profscope", description="Viewer for TensorFlow, Keras and JAX profiles.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("sessions", help="list sessions, hosts and tools")
    s.add_argument("path")
    s.add_argument("--json", action="store_true", help="print JSON (EnumSessions form)")
    e = sub.add_parser("export", help="write a tool's data (for memory_profile: XProf's JSON), or every SQL table "
                                      "as Parquet (--format parquet -o DIR)")
    e.add_argument("path")
    e.add_argument("--tool", default="")
    e.add_argument("--format", choices=("parquet",), default="", help="every SQL table as Parquet files in -o DIR")
    e.add_argument("--session", default="", help="session name (default: the only or the latest one)")
    e.add_argument("--host", default="", help="host name (default: the only one)")
    e.add_argument("--param", action="append", default=[], metavar="K=V",
                   help="tool parameter; K=@FILE reads the value from FILE (repeatable)")
    e.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
    q = sub.add_parser("query", help="run SQL over a location's tables (see docs/SQL.md)")
    q.add_argument("path")
    q.add_argument("sql")
    q.add_argument("--format", choices=RESULT_FORMATS, default="table")
    q.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
    d = sub.add_parser("diff", help="compare two profiles, baseline A and candidate B (see docs/DIFF.md)")
    d.add_argument("baseline", help="the baseline's path or grpc://host:port")
    d.add_argument("candidate", help="the candidate's path or grpc://host:port (may be the same location)")
    d.add_argument("--tool", choices=DIFF_TOOLS, default="op_stats")
    _side_options(d, tag=True)
    d.add_argument("--filter", default="", help="only rows whose name contains this text (case-insensitive)")
    d.add_argument("--regex", action="store_true", help="--filter is an RE2 regular expression")
    d.add_argument("--min-delta-us", type=float, default=0.0, help="hide rows whose total moved less (us)")
    d.add_argument("--min-change", type=float, default=0.0, metavar="PCT",
                   help="hide rows whose total moved less than PCT %% of the baseline's")
    d.add_argument("--align-step", type=int, default=None, help=ALIGN_HELP)
    d.add_argument("--top", type=int, default=20, help="memory: allocations listed per allocator (default: 20)")
    d.add_argument("-o", "--output", default="-", help="output file (default: standard output)")
    v = sub.add_parser("serve", help="serve a folder's profiles over gRPC (the ProfileAnalysis service)")
    v.add_argument("path")
    v.add_argument("--bind", default="127.0.0.1", help="address to listen on (default: loopback only)")
    v.add_argument("--port", type=int, default=50051)
    v.add_argument("--max-message-mb", type=int, default=1024, help="largest tool data or file sent (MiB)")
    c = sub.add_parser("capture", help="capture a profile from a running TensorFlow or JAX profiler server")
    c.add_argument("address", help="host:port of tf.profiler.experimental.server.start / jax.profiler.start_server, "
                                   "or grpc://host:port of a ProfileAnalysis server (then --hosts)")
    c.add_argument("--duration-ms", type=int, default=2000)
    c.add_argument("-o", "--output", default="", help="repository folder to save into (<logdir>/plugins/profile)")
    c.add_argument("--hosts", default="", help="through a ProfileAnalysis server: comma-separated profiler addresses")
    c.add_argument("--session", default="", help="session id (default: the time)")
    sub.add_parser("formats", help="list the file formats Profscope reads")
    r = sub.add_parser("report", help="render every view to PNG files and an index.html")
    r.add_argument("path", nargs="?")
    r.add_argument("--compare", nargs=2, metavar=("A", "B"),
                   help="compare baseline A with candidate B instead: the diff tables and overlaid memory curves; "
                        "the session, host and steps options below choose each side's")
    _side_options(r, tag=False)
    r.add_argument("--align-step", type=int, default=None, help=ALIGN_HELP)
    r.add_argument("-o", "--output", default=DEFAULT_REPORT_DIR, help=f"output folder (default: {DEFAULT_REPORT_DIR})")
    return p


ALIGN_HELP = "memory curves aligned at this step (default: start)"


def _side_options(parser, tag: bool) -> None:
    """--session, --host, --steps (and --tag) for both sides of a comparison, and
    --baseline-X / --candidate-X for one side."""
    for side in ("", "baseline-", "candidate-"):
        which = f"the {side[:-1]}'s" if side else "both sides'"
        parser.add_argument(
            f"--{side}session", default="", help=f"{which} session (default: the only or the latest one)"
        )
        parser.add_argument(f"--{side}host", default="", help=f"{which} host (default: the only one, or every rank)")
        if tag:
            parser.add_argument(
                f"--{side}tag", default="", help=f"{which} traced step of a StepStats event file (run metadata tag)"
            )
        parser.add_argument(
            f"--{side}steps",
            default="",
            metavar="A[-B]|median",
            help=f"{which} ProfilerStep range (default: the whole trace)",
        )


def _side(args, side: str, name: str) -> str:
    """One side's option, else the one both sides share."""
    return getattr(args, f"{side}_{name}") or getattr(args, name)


def _params(items: list[str]) -> dict[str, str]:
    params = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ProfileError(f"--param {item!r}: expected KEY=VALUE")
        if value.startswith("@"):
            try:
                value = Path(value[1:]).read_text(encoding="utf-8")
            except OSError as e:
                raise ProfileError(f"--param {key}: cannot read {value[1:]}: {e.strerror or e}") from None
        params[key] = value
    return params


def _progress(path: str) -> TerminalProgress:
    """Progress on stderr for reading `path` (a file's size gives the amounts)."""
    return TerminalProgress(os.path.getsize(path) if os.path.isfile(path) else 0, on_task=_INTERRUPT.watch)


class _Interrupt:
    """Ctrl+C for work that never sees KeyboardInterrupt: a DuckDB query, a
    reader's thread. CPython's C signal handler writes to the wakeup fd at
    once, even while the main thread is blocked in C, and a thread reading it
    cancels every task the command handed out (the main thread still gets
    KeyboardInterrupt when it next runs Python)."""

    def __init__(self):
        self.tasks = weakref.WeakSet()
        self.interrupted = False

    def watch(self, task) -> None:
        self.tasks.add(task)
        if self.interrupted:
            task.cancel()

    @contextlib.contextmanager
    def installed(self):
        if threading.current_thread() is not threading.main_thread() or (
            signal.getsignal(signal.SIGINT) is not signal.default_int_handler  # ignored in the background
        ):
            yield
            return
        self.interrupted = False
        r, w = os.pipe()
        os.set_blocking(w, False)
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        watcher = threading.Thread(target=self._watch, args=(r,), name="profscope-interrupt", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            signal.set_wakeup_fd(old)
            os.close(w)  # the watcher reads the end of the pipe and returns
            watcher.join()
            os.close(r)

    def _watch(self, r: int) -> None:
        while data := os.read(r, 64):
            if signal.SIGINT in data:
                self.interrupted = True
                for task in list(self.tasks):
                    task.cancel()


_INTERRUPT = _Interrupt()


def cmd_sessions(args) -> int:
    from profscope.models.repository.locations import (
        open_location,  # the profile formats load only for profile commands
    )

    progress = _progress(args.path)
    try:
        repo, hparams = open_location(args.path, progress.task())  # what the window opens: profiles and a sweep
    finally:
        progress.close()
    sessions = repo.enum_sessions() if repo is not None else []
    not_profiles = repo.not_profiles() if repo is not None else []
    experiment = None
    if hparams is not None:
        info = hparams.experiment()
        experiment = {
            "sessions": len(hparams.session_runs),
            "hparams": [h.name for h in info.hparam_infos],
            "metrics": [m.name.tag if not m.name.group else f"{m.name.group}/{m.name.tag}" for m in info.metric_infos],
            "availableTools": list(HPARAMS_TOOLS),
        }
    if args.json:
        print(
            json.dumps(
                {
                    "sessions": [
                        {"sessionId": s.name, "hosts": list(s.hosts), "availableTools": list(s.tools)} for s in sessions
                    ],
                    "hparams": experiment,
                    "notProfiles": [{"path": path, "reason": reason} for path, reason in not_profiles],
                },
                indent=2,
            )
        )
    else:
        for s in sessions:
            print(f"{s.name}\n  hosts: {', '.join(s.hosts)}\n  tools: {', '.join(s.tools)}")
        if experiment is not None:
            print(f"HParams experiment: {experiment['sessions']:,} session(s)")
            for key in ("hparams", "metrics"):
                print(f"  {key}: {', '.join(experiment[key]) or '-'}")
            print(f"  tools: {', '.join(HPARAMS_TOOLS)} (profscope export PATH --tool T)")
        if not_profiles:
            print("not profiles:")
            for path, reason in not_profiles:
                print(f"  {path}: {reason}")
    return 0


def cmd_export(args) -> int:
    if args.format == "parquet":
        return export_parquet_folder(args)
    if not args.tool:
        raise ProfileError("export needs --tool T, or --format parquet -o DIR for every table")
    progress = _progress(args.path)
    try:
        if args.tool in HPARAMS_TOOLS:  # a log dir's sweep, not a profile session
            from profscope.models.hparams.experiment import load_hparams, tool_json

            data = ToolData(tool_json(load_hparams(args.path, progress.task()), args.tool, _params(args.param)), "json")
            what = args.tool
        else:
            from profscope.models.repository.locations import (
                open_repository,  # the profile formats load only for profile tools
            )

            repo = open_repository(args.path, progress.task())
            session = repo.session_or_latest(args.session)
            data = repo.tool_data(session, args.tool, args.host, _params(args.param), progress.task())
            what = f"{args.tool}, session {session}"

        def write(f):
            if args.output == "-":
                data.write_to(f)
                f.write(b"\n")
            else:
                data.write_to(CountingWriter(f, progress, Path(args.output).name))

        write_output(args.output, write)
    finally:
        progress.close()
    for warning in data.warnings:
        print(f"profscope: warning: {warning}", file=sys.stderr)
    if args.output != "-":
        print(f"wrote {args.output} ({what})", file=sys.stderr)
    return 0


def export_parquet_folder(args) -> int:
    from profscope.models.sql.database import export_parquet  # DuckDB loads only for SQL commands

    if args.tool or args.output == "-":
        raise ProfileError("export --format parquet writes every table into a folder: give -o DIR and no --tool")
    progress = _progress(args.path)
    try:
        written = export_parquet(args.path, Path(args.output), progress.task())
    finally:
        progress.close()
    size = format_bytes(sum(n for _, n in written))
    print(f"wrote {len(written):,} Parquet files ({size}) to {args.output}", file=sys.stderr)
    return 0


def cmd_query(args) -> int:
    from profscope.models.sql.database import ProfileDatabase  # DuckDB loads only for SQL commands
    from profscope.viewer.query_output import write_result

    progress = _progress(args.path)
    try:
        db = ProfileDatabase.open(args.path, progress.task())
        result = db.query(args.sql, progress.task())
    finally:
        progress.close()
    if db.failed_reads and not db.reads:  # every table the query needs came out empty
        more = f" (and {db.failed_reads - 1} more)" if db.failed_reads > 1 else ""
        raise ProfileError(f"no table could be read: {db.warnings[0]}{more}")
    for warning in db.warnings:
        print(f"profscope: warning: {warning}", file=sys.stderr)
    write_output(args.output, lambda f: write_result(result.table, args.format, f))
    return 0


def cmd_diff(args) -> int:
    from profscope.models.analysis import diff  # the profile formats load only for profile commands

    repos: dict[str, object] = {}
    sides = []
    for side in ("baseline", "candidate"):
        pick = lambda name, side=side: _side(args, side, name)
        location = getattr(args, side)
        progress = _progress(location)
        try:
            sides.append(
                _diff_side(
                    repos,
                    side,
                    location,
                    pick("session"),
                    pick("host"),
                    pick("tag"),
                    pick("steps"),
                    args.tool,
                    progress.task(),
                )
            )
        finally:
            progress.close()
    (base, base_info), (cand, cand_info) = sides
    if args.tool == "memory_profile":
        result = diff.memory_diff(base, cand, args.align_step)
        body, summary = result.to_json(top=args.top), f"allocators: {len(result.allocators)}"
    elif args.tool == "overview":
        result = diff.overview_diff(base, cand)
        body, summary = result.to_json(), f"hosts: {len(result.pairs)}"
    else:
        full = diff.stats_diff(base, cand, args.tool)
        result = full.filtered(args.filter, args.regex, args.min_delta_us, args.min_change / 100)
        body = result.to_json()
        counts = {s: int((result.status == k).sum()) for k, s in enumerate(diff.STATUSES)}
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no rows"
        if not len(full) and args.tool != "op_types":
            what = "cpu_op operators" if args.tool == "op_stats" else "GPU activity"
            print(
                f"profscope: note: neither profile has {what} (PyTorch traces do); --tool op_types compares "
                "every event by device and op type",
                file=sys.stderr,
            )
    doc = json.dumps(
        {"tool": args.tool, "baseline": base_info, "candidate": cand_info, **body}, separators=(",", ":")
    ).encode()
    write_output(args.output, lambda f: f.write(doc + b"\n" if args.output == "-" else doc))
    if args.output != "-":
        print(f"wrote {args.output} ({args.tool} diff: {summary})", file=sys.stderr)
    return 0


def _diff_side(repos: dict, side: str, location: str, session: str, host: str, tag: str, steps: str, tool: str, task):
    """One side of `diff`: (its timeline as a diff.Side, or its memory
    profile; what was compared, for the output)."""
    from profscope.models.analysis import diff
    from profscope.models.repository.locations import open_repository
    from profscope.models.repository.registry import MEMORY_PROFILE, TRACE_VIEWER

    try:
        repo = repos.get(location) or repos.setdefault(location, open_repository(location, task))
        session = repo.session_or_latest(session)
        info = {"location": location, "session": session}
        if tool == MEMORY_PROFILE:
            host = repo.resolve_host(session, host, MEMORY_PROFILE)
            return repo.memory_profile(session, host, task), {**info, "host": host}
        tools = repo.session(session).tools
        if TRACE_VIEWER not in tools:
            raise ProfileError(f"session {session!r} has no timeline to compare {tool} of (it has {', '.join(tools)})")
        if not host and not repo.combines_hosts(session):
            hosts = repo.hosts_with(session, TRACE_VIEWER)
            if len(hosts) > 1:
                raise ProfileError(
                    f"session {session!r} has several hosts; choose one with --{side}-host or --host "
                    f"({', '.join(hosts)})"
                )
            host = repo.resolve_host(session, host, TRACE_VIEWER)
        timeline = repo.step_timeline(session, host, tag, task)
        window = diff.step_window_of(timeline, steps)
    except ProfileError as e:
        raise ProfileError(f"{side}: {e}") from None
    return diff.Side(timeline, window=window), {**info, "host": host, "tag": tag, "steps": steps}


def write_output(target: str, write) -> None:
    """Runs write(f) into what -o names. "-": standard output. A character
    device, FIFO or socket: opened and written as it is, never replaced. A
    regular file or a new path: a temporary file beside it, renamed over it
    when complete (an existing file's permissions kept), so an error or
    Ctrl+C leaves no partial file and an old one intact. A symlink: its
    target by the same rules, the link stays a link."""
    if target == "-":
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return
    try:
        st = os.stat(target)  # through links, /proc's too (/dev/stdout as a pipe)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise ProfileError(f"cannot write {target}: {e.strerror or e}") from None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise ProfileError(f"cannot write {target}: it is a folder")
    if st is not None and not stat.S_ISREG(st.st_mode):
        with _opened_special(target, st) as f:
            write(f)
        return
    path = Path(os.path.realpath(target))  # the file a link names is replaced, not the link
    part = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        # A new file gets the umask's permissions; an existing one keeps its own (and owner, where allowed).
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666 if st is None else st.st_mode & 0o777)
    except OSError as e:
        raise ProfileError(f"cannot write {target}: {e.strerror or e}") from None
    try:
        with open(fd, "wb") as f:
            if st is not None:
                with contextlib.suppress(OSError):
                    os.fchown(fd, st.st_uid, st.st_gid)
                os.fchmod(fd, stat.S_IMODE(st.st_mode))  # after fchown, which may clear set-id bits
            write(f)
        os.replace(part, path)
    except BaseException:
        part.unlink(missing_ok=True)
        raise


def _opened_special(target: str, st: os.stat_result):
    """A character device or FIFO opened for writing, or a Unix socket connected to."""
    try:
        if stat.S_ISSOCK(st.st_mode):
            import socket

            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.connect(target)
                return sock.makefile("wb")  # closing it closes the socket
        return open(target, "wb")
    except OSError as e:
        raise ProfileError(f"cannot write {target}: {e.strerror or e}") from None


def cmd_report(args) -> int:
    from profscope.models.repository.locations import open_location
    from profscope.viewer.report import write_report  # Qt only for drawing commands

    if getattr(args, "compare", None):
        return _report_compare(args)
    if not args.path:
        raise ProfileError("report needs a PATH (or --compare A B)")
    chosen = [
        o
        for o in ("session", "host", "steps")
        for side in ("", "baseline_", "candidate_")
        if getattr(args, side + o, "")
    ]  # (the main command's report has none of them)
    if chosen or getattr(args, "align_step", None) is not None:
        raise ProfileError("--session, --host, --steps and --align-step go with report --compare A B")
    progress = _progress(args.path)
    try:
        repo, hparams = open_location(args.path, progress.task())
        errors: list[str] = []
        written = write_report(repo, Path(args.output), hparams, location=args.path, task=progress.task(),
                               errors=errors)
    finally:
        progress.close()
    if len(written) == 1:  # index.html alone
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        reason = f": {errors[0]}{more}" if errors else ": nothing in it has a view"
        raise ProfileError(f"no view could be drawn{reason}; see {written[0]}")
    for error in errors:
        print(f"profscope: warning: {error}", file=sys.stderr)
    for path in written:
        print(path)
    return 0


def _report_compare(args) -> int:
    from profscope.models.analysis.comparison import Place, compare
    from profscope.viewer.report import write_compare_report

    if args.path:
        raise ProfileError("report --compare A B takes no PATH")
    places = [
        Place(location, _side(args, side, "session"), _side(args, side, "host"))
        for side, location in zip(("baseline", "candidate"), args.compare)
    ]
    steps = (_side(args, "baseline", "steps"), _side(args, "candidate", "steps"))
    progress = _progress(args.compare[0])
    try:
        comparison = compare(*places, progress.task(), align_step=args.align_step, steps=steps)
    finally:
        progress.close()
    for path in write_compare_report(comparison, Path(args.output)):
        print(path)
    return 0


def cmd_serve(args) -> int:
    from profscope.models.remote.server import limit_malloc_arenas, make_server

    limit_malloc_arenas()  # before the server's threads exist
    server, port, _ = make_server(Path(args.path), args.bind, args.port, args.max_message_mb << 20)
    print(
        f"profscope: serving {Path(args.path).resolve()} on grpc://{args.bind}:{port} (Ctrl+C stops)", file=sys.stderr
    )
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):  # also when started in the background (SIGINT ignored)
        signal.signal(sig, lambda *_: done.set())
    while not done.wait(0.5):
        pass
    server.stop(grace=2).wait()
    print("profscope: stopped", file=sys.stderr)
    return 0


def cmd_capture(args) -> int:
    from profscope.models.remote.client import SCHEME, capture, new_session

    if args.address.startswith(SCHEME):
        hosts = [h for h in args.hosts.split(",") if h]
        session, empty = new_session(args.address, hosts, args.duration_ms, args.session)
        print(
            f"profscope: captured session {session} on {args.address}{' (empty trace)' if empty else ''}",
            file=sys.stderr,
        )
        print(session)
        return 0
    if not args.output:
        raise ProfileError("capture needs -o DIR (for example <logdir>/plugins/profile)")
    folder, empty = capture(args.address, args.duration_ms, Path(args.output), args.session)
    print(
        f"profscope: captured {folder}{' (the trace is empty: was the program running?)' if empty else ''}",
        file=sys.stderr,
    )
    print(folder)
    return 0


def cmd_formats(args) -> int:
    from profscope.models.formats import formats_table

    print(formats_table())
    return 0


def cmd_window(path: str | None, window: bool = False, check=None) -> int:
    """The window; when it cannot open here, the report instead (or exit 1
    when the window was asked for with --window). `check` (default:
    profscope.viewer.startup.problem) says what keeps Qt from starting, before Qt can abort."""
    from profscope.viewer import startup
    from profscope.viewer.app import has_display

    if not has_display():
        problem = "no display found"
    else:
        problem = (check or startup.problem)()
    if problem:
        if window:
            print(f"profscope: cannot open the window: {problem}", file=sys.stderr)
            return 1
        if path is None:
            print(
                f"profscope: cannot open the window: {problem}\nprofscope: no path given; nothing to do",
                file=sys.stderr,
            )
            return 2
        print(
            f"profscope: {problem}\nprofscope: writing the report of {path} to {DEFAULT_REPORT_DIR}/ instead "
            "(profscope --window exits instead)",
            file=sys.stderr,
        )
        rc = cmd_report(argparse.Namespace(path=path, output=DEFAULT_REPORT_DIR))
        print(f"profscope: report written to {Path(DEFAULT_REPORT_DIR).resolve() / 'index.html'}", file=sys.stderr)
        return rc
    from profscope.viewer.app import run_window

    return run_window(path)


def main(argv: list[str] | None = None) -> int:
    program = argv is None  # the process's own command line, not a caller's
    argv = sys.argv[1:] if argv is None else argv
    if "--debug" in argv:  # tracebacks of unexpected errors also on the console
        crashlog.echo_to_console = True
        argv = [a for a in argv if a != "--debug"]
    try:
        if argv and argv[0] in COMMANDS:
            args = _parser().parse_args(argv)
            run = {
                "sessions": cmd_sessions,
                "export": cmd_export,
                "query": cmd_query,
                "diff": cmd_diff,
                "report": cmd_report,
                "serve": cmd_serve,
                "capture": cmd_capture,
                "formats": cmd_formats,
            }[args.command]
            if args.command == "serve":  # it stops on SIGINT itself
                return run(args)
            with _INTERRUPT.installed():
                return run(args)
        if argv and argv[0] in ("-h", "--help"):
            _parser().print_help()
            print(
                "\nprofscope [--window] [PATH]: the window (--window: exit 1 rather than write the report when "
                "it cannot open)\nprofscope --install-desktop-entry: add Profscope to the launcher"
            )
            return 0
        if argv == ["--install-desktop-entry"]:
            from profscope.viewer.desktop import install_desktop_entry

            for written in install_desktop_entry():
                print(written)
            return 0
        window = "--window" in argv
        argv = [a for a in argv if a != "--window"]
        if len(argv) > 1 or any(a.startswith("-") for a in argv):
            print("profscope: expected at most one path (and --window); see profscope --help", file=sys.stderr)
            return 2
        return cmd_window(argv[0] if argv else None, window)
    except ProfileError as e:
        print(f"profscope: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except (KeyboardInterrupt, Cancelled):  # Ctrl+C (it cancels the tasks too)
        return 130
    except Exception as e:  # the safety net: one line here, the traceback in the log
        print(f"profscope: error: {crashlog.one_line(e, 'profscope ' + ' '.join(argv))}", file=sys.stderr)
        return 2
    finally:
        if program and threading.current_thread() is threading.main_thread():
            # Done or given up: Ctrl+C while the interpreter tears down (a report's Qt, a big timeline freed)
            # would only turn the exit status into death by SIGINT.
            signal.signal(signal.SIGINT, signal.SIG_IGN)


if __name__ == "__main__":
    sys.exit(main())
