"""The transport bar from a bare session over a real H.264 recording: play/pause, steps, scrubber, counters, speed."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, Qt

from gui_app.core.trajectory.model import Step, Trajectory
from gui_app.qt.session import Session
from gui_app.qt.transport import TransportBar
from tests.gui.viewer_fixtures import N_FRAMES, STEP_STARTS, open_session


@pytest.fixture
def bar(qtbot, tmp_path):
    session, _source, traj = open_session(tmp_path)
    view = TransportBar(session)
    qtbot.addWidget(view)
    view.resize(700, 32)
    view.show()
    qtbot.waitExposed(view)
    yield session, view
    session.set_trajectory(None)


def test_counters_buttons_and_speed(qtbot, bar):
    session, view = bar
    # steps numbered from 1 (issue 30: "step 0/5" for a 6-step run)
    assert view.frame_label.text() == f"frame  0/{N_FRAMES - 1} · step 1/{len(STEP_STARTS)}"
    assert view.time_label.text() == "0:00.0 / 0:06.0"
    qtbot.mouseClick(view.next_button, Qt.MouseButton.LeftButton)
    assert (session.step, session.frame) == (1, STEP_STARTS[1])
    assert view.frame_label.text().startswith(f"frame  {STEP_STARTS[1]}/")
    assert view.time_label.text().startswith("0:00.7")
    qtbot.mouseClick(view.play_button, Qt.MouseButton.LeftButton)
    assert session.playing and view.play_button.toolTip() == "Pause (Space)"
    qtbot.mouseClick(view.play_button, Qt.MouseButton.LeftButton)
    assert not session.playing and view.play_button.toolTip() == "Play (Space)"
    view.speed.activated.emit(view.speed.findData(4.0))
    assert session.speed == 4.0
    session.set_speed(0.5)
    assert view.speed.currentData() == 0.5


def test_scrubber_seeks_and_marks_every_step(qtbot, bar):
    session, view = bar
    scrub = view.scrubber
    assert scrub.step_positions() == list(STEP_STARTS) and scrub.length == N_FRAMES
    x = round(scrub.x_of(STEP_STARTS[3] + 2))
    qtbot.mouseClick(scrub, Qt.MouseButton.LeftButton, pos=QPoint(x, scrub.height() // 2))
    assert abs(session.frame - (STEP_STARTS[3] + 2)) <= 1 and session.step == 3
    qtbot.mousePress(scrub, Qt.MouseButton.LeftButton, pos=QPoint(round(scrub.x_of(0)), 5))
    qtbot.mouseMove(scrub, QPoint(round(scrub.x_of(N_FRAMES - 1)), 5))
    qtbot.mouseRelease(scrub, Qt.MouseButton.LeftButton, pos=QPoint(round(scrub.x_of(N_FRAMES - 1)), 5))
    assert session.frame == N_FRAMES - 1 and session.step == len(STEP_STARTS) - 1
    img = scrub.grab().toImage()  # the step markers are drawn: light ticks at each step's first frame
    ticks = [img.pixelColor(round(scrub.x_of(f)), scrub.height() // 2 - 5).lightness() for f in STEP_STARTS[1:]]
    assert min(ticks) > 150


def test_a_trajectory_without_frames_scrubs_by_step(qtbot):
    session = Session()
    session.set_trajectory(Trajectory(id="text", steps=[Step(index=i, action=f"a{i}") for i in range(5)]))
    view = TransportBar(session)
    qtbot.addWidget(view)
    view.resize(600, 32)
    view.show()
    assert not view.play_button.isEnabled() and view.frame_label.text() == "no frames · step 1/5"
    scrub = view.scrubber
    qtbot.mouseClick(scrub, Qt.MouseButton.LeftButton, pos=QPoint(round(scrub.x_of(3)), 10))
    assert session.step == 3
