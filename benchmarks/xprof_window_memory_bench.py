"""The XProf Statistics tab's memory viewer when another module is chosen:
seconds in the worker (the tool's result, as the window takes it: no JSON) and on the GUI thread
(the page set and painted) for a module of 100,000 buffers
(memory_viewer_bench.py's scaled module), printed, never asserted.

    QT_QPA_PLATFORM=offscreen python benchmarks/xprof_window_memory_bench.py [BUFFERS]
"""

import shutil
import sys
import tempfile
import time
from pathlib import Path

from memory_viewer_bench import DATA, scaled_module
from PySide6.QtWidgets import QApplication

from profscope.models.analysis.xprof.memory_viewer import memory_viewer_result
from profscope.models.core.task import TaskState
from profscope.widgets.xprof.view import XprofStatsView


def main() -> None:
    buffers = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    app = QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(DATA / "small.xplane.pb", Path(tmp) / "vm.xplane.pb")
        (Path(tmp) / "big(1).hlo_proto.pb").write_bytes(scaled_module(buffers))
        start = time.perf_counter()
        result = memory_viewer_result([Path(tmp) / "vm.xplane.pb"], {"module_name": "big(1)"}, TaskState())
        worker = time.perf_counter() - start
    view = XprofStatsView()
    view.resize(1090, 780)
    view.set_data({"memory_viewer": {"modules": ["a", "big(1)"], "module": "a", "data": {}}})
    view.show_page("memory_viewer")
    view.show()
    app.processEvents()
    start = time.perf_counter()
    view.set_module_data("big(1)", result)
    app.processEvents()
    gui = time.perf_counter() - start
    print(f"memory viewer, {buffers:,} buffers ({len(result.heap_mib):,} heap steps): worker {worker:.2f} s, "
          f"GUI thread {gui:.2f} s (page set + painted)")


if __name__ == "__main__":
    main()
