"""Command-line progress: a self-rewriting line on a terminal, nothing when piped."""

import io

from conftest import SMALL_XPROF

from profscope.viewer.cli import main
from profscope.viewer.progress import CountingWriter, TerminalProgress


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_reading_shows_phase_bar_amount_and_rate():
    term, clock = Terminal(), Clock()
    progress = TerminalProgress(total_bytes=100 << 20, stream=term, clock=clock)
    task = progress.task()
    clock.now = 2.0
    task.report(0.5, "Reading big.xplane.pb")
    line = term.getvalue().split("\r")[-1]
    assert line.startswith("Reading big.xplane.pb") and "[############............]  50%" in line
    assert "50 MiB of 100 MiB" in line and "25 MiB/s" in line
    clock.now = 2.05  # redraws at most ten times a second
    task.report(0.6, "Reading big.xplane.pb")
    assert term.getvalue().split("\r")[-1] == line
    progress.close()
    assert term.getvalue().endswith("\r\x1b[K")


def test_writing_counts_bytes_and_rate():
    term, clock = Terminal(), Clock()
    progress = TerminalProgress(stream=term, clock=clock)
    out = io.BytesIO()
    writer = CountingWriter(out, progress, "trace.json")
    writer.write(b"x" * 10)
    clock.now = 1.0
    writer.write(b"x" * (4 << 20))
    assert out.getvalue() == b"x" * (10 + (4 << 20))
    assert "Writing trace.json" in term.getvalue() and "MiB/s" in term.getvalue()


def test_nothing_is_shown_when_stderr_is_not_a_terminal(tmp_path, capsys):
    assert main(["export", str(SMALL_XPROF), "--tool", "memory_profile", "-o", str(tmp_path / "o.json")]) == 0
    assert capsys.readouterr().err == f"wrote {tmp_path / 'o.json'} (memory_profile, session xprof)\n"
