"""Session: the step <-> frame mapping every view relies on, idempotent setters, playback state."""

from __future__ import annotations

from gui_app.qt.session import SPEEDS, Session
from tests.gui.viewer_fixtures import FPS, N_FRAMES, STEP_STARTS, open_session


def test_opening_a_trajectory_shows_step_zero_and_its_first_frame(tmp_path):
    session, source, _ = open_session(tmp_path)
    try:
        assert session.step == 0
        assert session.frame == STEP_STARTS[0] == 0  # frame set even though step 0 starts at frame 0
        assert session.step_frames == list(STEP_STARTS)
    finally:
        source.close()


def test_step_and_frame_stay_in_sync_both_ways(tmp_path, qtbot):
    session, source, _ = open_session(tmp_path)
    try:
        session.set_step(3)
        assert session.frame == STEP_STARTS[3]
        session.set_frame(STEP_STARTS[2] + 1)  # inside step 2's span
        assert session.step == 2 and session.frame == STEP_STARTS[2] + 1
        session.set_step(2)  # already there: the frame is not pulled back to the span start
        assert session.frame == STEP_STARTS[2] + 1
        session.set_time(STEP_STARTS[4] / FPS)
        assert (session.step, session.frame) == (4, STEP_STARTS[4])
        session.set_frame(10_000)
        assert session.frame == N_FRAMES - 1 and session.step == len(STEP_STARTS) - 1
        session.set_step(-5)
        assert (session.step, session.frame) == (0, 0)
    finally:
        source.close()


def test_setters_emit_once_and_never_for_the_current_value(tmp_path, qtbot):
    session, source, _ = open_session(tmp_path)
    steps, frames = [], []
    session.step_changed.connect(steps.append)
    session.frame_changed.connect(frames.append)
    try:
        session.set_step(1)
        session.set_step(1)
        session.next_frame()
        assert steps == [1]
        assert frames == [STEP_STARTS[1], STEP_STARTS[1] + 1]
    finally:
        source.close()


def test_speed_snaps_to_the_table_and_playback_needs_a_source(qtbot):
    session = Session()
    session.set_playing(True)
    assert session.playing is False  # nothing to play
    session.set_speed(3.1)
    assert session.speed == 4.0
    session.change_speed(+5)
    assert session.speed == SPEEDS[-1]
    session.change_speed(-100)
    assert session.speed == SPEEDS[0]


def test_a_source_let_go_of_goes_to_the_closer_and_a_failed_load_clears_everything(tmp_path, qtbot):
    session, source, traj = open_session(tmp_path)
    closed = []
    session.closer = closed.append  # the app closes it in a worker
    with qtbot.waitSignal(session.notes_changed):
        session.set_failed("/lib/broken", "trajectory.json: invalid JSON")
    assert closed == [source] and not source._closed  # handed over, not closed here
    assert session.trajectory is None and session.source is None and session.key is None
    assert session.error == "/lib/broken: trajectory.json: invalid JSON"
    session.set_trajectory(traj, None, notes=["recording unreadable; showing the screenshots"])
    assert session.error is None and session.notes == ["recording unreadable; showing the screenshots"]
    source.close()
