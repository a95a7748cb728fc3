"""The XProf Statistics tab as a user meets it: a window (offscreen) opens an
xplane, and the clock runs until the tab has its pages (the timeline job's
result shown, which brings the timeline and XProf's tools together) and the
tab is painted. Each round a fresh process; medians, printed, never asserted.

    python benchmarks/xprof_window_bench.py [--file X.xplane.pb] [--rounds 3]

The file defaults to the 2M-event XSpace of benchmarks/sql_bench.py.
"""

from __future__ import annotations

import statistics

from xprof_tab_bench import fresh_process_rounds

WINDOW = """
import json, sys, time
from PySide6.QtCore import QEventLoop
from profscope.viewer.app import application
from profscope.viewer.window import MainWindow
app = application()
w = MainWindow()
w.resize(1284, 860)
w.show()
t0 = time.perf_counter()
loop = QEventLoop()
failure = []
w.runner.finished.connect(lambda _result: loop.quit())  # emitted once the views show the result
w.runner.failed.connect(lambda message: (failure.append(message), loop.quit()))
w.open_path(sys.argv[1])  # opening loads the first host's timeline and XProf's tools
while not getattr(w.xprof_view, "data", None) and not failure:
    loop.exec()
if failure:
    sys.exit(failure[0])
t1 = time.perf_counter()
w.tabs.setCurrentWidget(w.xprof_view)
w.xprof_view.grab()
t2 = time.perf_counter()
print(json.dumps([t1 - t0, t2 - t0, sorted(w.xprof_view.data)]))
"""


def main() -> None:
    path, rounds, runs = fresh_process_rounds(WINDOW)
    shown, painted = (statistics.median(r[i] for r in runs) for i in range(2))
    print(f"{path} ({path.stat().st_size / 2**20:.0f} MiB), medians of {rounds} rounds")
    print(f"open -> XProf Statistics tab has its pages   {shown:6.2f} s wall")
    print(f"open -> the tab painted                       {painted:6.2f} s wall")
    print(f"pages: {', '.join(runs[0][2])}")


if __name__ == "__main__":
    main()
