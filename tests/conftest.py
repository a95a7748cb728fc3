import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
SAMPLE = ROOT / "resources" / "samples" / "tf_logdir"
SMALL_XPROF = DATA / "xprof" / "small.memory_profile.json"
KERAS_XPROF = DATA / "xprof" / "keras.memory_profile.json.gz"


def copied_host(fixture: Path, folder: Path):
    """A fixture copied into folder and opened: (its path there, the repository, session name, first host)."""
    import shutil

    from profscope.models.repository.locations import open_repository

    path = folder / fixture.name
    shutil.copy(fixture, path)
    repo = open_repository(path)
    session = repo.enum_sessions()[0]
    return path, repo, session.name, session.hosts[0]


def rewrite(path: Path) -> None:
    """Marks a file as written again (its modification time one second later)."""
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


@pytest.fixture(autouse=True)
def no_thread_left_running(request):
    """Fails a test that leaves work running on a Qt thread pool."""
    yield
    if "PySide6.QtCore" not in sys.modules:
        return
    from PySide6.QtCore import QThreadPool

    pool = QThreadPool.globalInstance()
    assert pool.activeThreadCount() == 0, "a test left a task on the global thread pool"


@pytest.fixture(autouse=True, scope="session")
def delete_widgets_before_exit():
    """Collects leftover widgets while the QApplication still exists: Qt objects
    destroyed during interpreter shutdown can crash PySide6."""
    yield
    if "PySide6.QtWidgets" in sys.modules:
        import gc

        from PySide6.QtCore import QCoreApplication, QEvent

        gc.collect()
        QCoreApplication.sendPostedEvents(None, QEvent.DeferredDelete)
        gc.collect()


@pytest.fixture
def window(qtbot, tmp_path):
    """A MainWindow with its own settings file; its worker is stopped afterwards."""
    from PySide6.QtCore import QSettings

    from profscope.viewer.window import MainWindow

    w = MainWindow(QSettings(str(tmp_path / "settings.ini"), QSettings.IniFormat))
    qtbot.addWidget(w)
    yield w
    for runner in (w.runner, w.hparams_runner, w.curves_runner, w.xprof_runner):
        runner.cancel()
        assert runner.wait(10000)


@pytest.fixture
def open_hparams_view(qtbot):
    """An HParamsView of 1500x950 px showing a log dir's sweep, exposed."""
    from profscope.models.hparams.curves import read_curves_now
    from profscope.models.hparams.experiment import load_hparams
    from profscope.widgets.hparams.view import HParamsView

    def make(path):
        v = HParamsView()
        v.request_curves = read_curves_now
        qtbot.addWidget(v)
        v.resize(1500, 950)
        v.set_data(load_hparams(path))
        v.show()
        qtbot.waitExposed(v)
        return v

    return make
