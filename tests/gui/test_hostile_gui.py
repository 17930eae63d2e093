"""The app never waits on a hostile file: a FIFO named as a recording neither ties up the workers nor keeps the
process alive after its window closes, and a read that blocks anyway is left behind when the user moves on."""

from __future__ import annotations

import os
import threading

import pytest

from gui_app.qt.main_window import MainWindow
from gui_app.qt.workers import Runner
from tests.gui.library_fixtures import make_library, make_video_trajectory, write_native


def _unblock(fifo) -> None:
    """Open the FIFO's other end, so a reader blocked on it returns (the daemon thread ends with the test)."""
    fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    os.close(fd)


def test_a_blocking_read_is_left_behind_on_cancel(qtbot, qapp, tmp_path):
    """Reporter.blocking: the worker returns at once on cancel, whatever the call it waits on does."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    runner = Runner(max_threads=1)
    started = threading.Event()
    closed: list[object] = []

    def read() -> bytes:
        started.set()
        with open(fifo, "rb") as fh:  # blocks until a writer opens the other end
            return fh.read()

    job = runner.submit("reading a FIFO", lambda rep: rep.blocking(read, discard=closed.append),
                        report_errors=False)
    qtbot.waitUntil(started.is_set, timeout=10_000)
    with qtbot.waitSignal(job.finished, timeout=10_000):
        job.cancel()
    assert job.is_cancelled and not job.running
    # The one worker is free again: the next job runs at once.
    results: list[int] = []
    runner.submit("next", lambda rep: 42, on_result=results.append)
    qtbot.waitUntil(lambda: results == [42], timeout=10_000)
    assert runner.shutdown(timeout_s=5)
    _unblock(fifo)
    qtbot.waitUntil(lambda: closed == [b""], timeout=10_000)  # the abandoned result went to discard


@pytest.fixture
def library(tmp_path):
    root = make_library(tmp_path / "lib", 3)
    make_video_trajectory(root / "recorded", n_steps=3, fps=10.0)
    fifo_run = write_native(root / "fifo-video", id="fifo-video", instruction="A recording that is a FIFO",
                            n_steps=2, fps=10.0, video="video.mp4", frames=20)
    os.mkfifo(fifo_run / "video.mp4")
    return root


def test_a_fifo_recording_neither_ties_up_the_workers_nor_outlives_the_window(qtbot, library):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.scanner.scanned, timeout=60_000):
        win.open_path(library)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)
    assert win.library.model.rowCount() == 5
    key = str((library / "fifo-video").resolve())
    with qtbot.waitSignal(win.loader.loaded, timeout=30_000):
        assert win.library.select_key(key)
    assert win.session.trajectory.video is None
    assert any("not a regular file" in text for _level, text in win.notifier.history)
    # The workers are free: another trajectory opens, with its recording.
    other = str((library / "recorded").resolve())
    with qtbot.waitSignal(win.loader.loaded, timeout=30_000):
        assert win.library.select_key(other)
    assert win.session.source is not None
    win.close()
    assert win.runner.shutdown(timeout_s=10)  # nothing left running once the window is gone
