"""The trajectory loader: opening, prefetching, and moving on while loads are in flight (real samples)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_app.qt.controllers import TrajectoryLoader
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.workers import Runner

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples" / "miniwob"
A, B = str(SAMPLES / "navigate-tree-success"), str(SAMPLES / "click-dialog-missed")

pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason="no bundled samples")


@pytest.fixture
def loader(qapp):
    runner = Runner()
    session, notifier = Session(), Notifier()
    ld = TrajectoryLoader(runner, session, notifier)
    yield ld
    ld.clear()
    runner.shutdown()
    if session.source is not None:
        session.source.close()


def test_open_shows_the_key_and_prefetch_makes_the_next_open_instant(qtbot, loader):
    with qtbot.waitSignal(loader.loaded, timeout=30_000) as sig:
        loader.open(A)
    assert sig.args == [A] and loader.current_key == A and loader.session.trajectory.id
    loader.prefetch(B)
    qtbot.waitUntil(lambda: not loader.busy, timeout=30_000)
    shown = []
    loader.loaded.connect(shown.append)
    loader.open(B)  # ready: shown in this call, no worker
    assert shown == [B] and loader.current_key == B


def test_reopening_a_key_whose_prefetch_was_cancelled_loads_it_again(qtbot, loader):
    """Prefetch B, move to A (which cancels B's load), then come back to B before the cancelled job has ended:
    B must still open. (It once waited on the cancelled job forever: Enter in a queue then opened nothing.)"""
    loader.prefetch(B)
    loader.open(A)
    with qtbot.waitSignal(loader.loaded, timeout=30_000, check_params_cb=lambda key: key == B):
        loader.open(B)
    assert loader.current_key == B and loader.session.trajectory is not None
    qtbot.waitUntil(lambda: not loader.busy, timeout=30_000)
    assert loader.current_key == B  # the load of A, cancelled, never replaces what the user asked for last


def test_a_result_that_arrives_after_its_job_was_cancelled_is_dropped(qtbot, loader):
    """A load that finished just before it was cancelled neither shows nor sits in the ready set."""
    with qtbot.waitSignal(loader.loaded, timeout=30_000):
        loader.open(A)
    loader.prefetch(B)
    job = loader._jobs[B]
    loader.open(A)  # A is current and not ready: it loads again, and B's prefetch is cancelled
    # B's job may end before a signal could be connected: wait on its state, then on the loader's
    qtbot.waitUntil(lambda: not job.running, timeout=30_000)
    qtbot.waitUntil(lambda: not loader.busy, timeout=30_000)
    assert B not in loader._ready and loader.current_key == A


def test_opening_clears_the_previous_run_at_once_and_says_what_it_does(qtbot, loader, tmp_path):
    """Issue 30: a run not loaded before showed the previous run (or "No trajectory open" on a black viewer) for
    seconds. Now the session is emptied the moment another run is asked for, and says what the load is doing, stage
    by stage (an OSWorld run, copied so its alignment cache is cold: reading the log, aligning, indexing the video)."""
    import shutil

    from gui_app.qt.video_view import VideoView

    run = shutil.copytree(SAMPLES.parent / "osworld" / "miniwob-login-user", tmp_path / "run")
    with qtbot.waitSignal(loader.loaded, timeout=30_000):
        loader.open(A)
    session = loader.session
    view = VideoView(session)
    qtbot.addWidget(view)
    stages: list[str] = []
    session.loading_changed.connect(lambda: stages.append(session.loading))
    loader.open(str(run))
    assert session.trajectory is None and session.source is None and session.key is None  # cleared at once
    assert session.loading_key == str(run) and session.loading  # "opening", or the load's first stage already
    assert view.loading_text.startswith("Opening run\n")
    with qtbot.waitSignal(loader.loaded, timeout=30_000):
        pass
    assert session.trajectory is not None and session.loading == "" and view.loading_text == ""
    said = [s for s in stages if s]
    for stage in ("reading the log", "aligning the steps to the recording", "indexing the video"):
        assert stage in said, said
    assert said.index("reading the log") < said.index("aligning the steps to the recording") \
        < said.index("indexing the video")
