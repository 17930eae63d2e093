"""Two runs side by side in the real window, synchronised by step (real H.264 recordings of different lengths)."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtGui import QColor

from gui_app.qt.compare import ComparePicker, follow_frame, library_rows
from gui_app.qt.main_window import MainWindow
from tests.gui.library_fixtures import make_video_trajectory, open_and_wait


def test_follow_frame_keeps_the_step_and_its_fraction():
    a, b = [0, 10, 20, 30], [0, 20, 40]  # A: 4 steps of 10 frames; B: 3 steps of 20
    assert follow_frame(a, 40, 10, b, 60) == (1, 20)  # step 1's first frame
    assert follow_frame(a, 40, 15, b, 60) == (1, 30)  # half way through step 1
    assert follow_frame(a, 40, 35, b, 60) == (2, 59)  # B has no step 3: it waits at the end of its last
    assert follow_frame([], 0, 0, b, 60) == (-1, -1)


@pytest.fixture
def library(tmp_path) -> Path:
    root = tmp_path / "lib"
    make_video_trajectory(root / "a", n_steps=4, fps=10.0, seconds_per_step=1.0, id="agent-a", success=True)
    make_video_trajectory(root / "b", n_steps=3, fps=10.0, seconds_per_step=2.0, id="agent-b", success=False)
    return root


def test_two_runs_play_step_by_step_together(qtbot, library):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    open_and_wait(qtbot, win, library)
    a_key, b_key = (str((library / n).resolve()) for n in ("a", "b"))
    with qtbot.waitSignal(win.loader.loaded, timeout=30_000):
        win.library.select_key(a_key)
    rows, current = library_rows(win.session)
    picker = ComparePicker(rows, current, win)
    qtbot.addWidget(picker)
    assert picker.list.count() == 1 and picker.chosen_key() == b_key  # every other run; the open one is not offered
    with qtbot.waitSignal(win.comparison.opened, timeout=30_000):
        win.compare_with(b_key)
    a, b = win.session, win.comparison.session
    assert win.compare_pane.isVisible() and win.action_map["compare"].isChecked()
    assert "agent-b" in win.compare_pane.title.text() and "agent-a" in win.compare_pane.lead_title.text()
    a.set_step(1)
    assert (b.step, b.frame) == (1, 20)
    a.set_frame(15)  # half way through A's step 1
    assert (b.step, b.frame) == (1, 30)
    a.set_step(3)  # B has three steps: it waits at the end of its last
    assert (b.step, b.frame) == (2, 59)
    qtbot.waitUntil(lambda: win.compare_pane.video.shown_frame == 59, timeout=10_000)
    win.compare_pane.steps.selectRow(0)  # picking a step of B moves A too
    assert (a.step, b.step) == (0, 0) and b.frame == 0
    win.action_map["compare"].trigger()  # off
    assert not win.compare_pane.isVisible() and b.trajectory is None
    assert not win.compare_pane.lead_title.isVisible()


def test_compare_without_an_open_run_says_so(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    win.action_map["compare"].trigger()
    assert win.notifier.history[-1] == ("info", "Open a trajectory first: the compared run is shown beside it")
    assert not win.action_map["compare"].isChecked()


def test_the_compared_run_is_drawn_at_once_without_stepping(qtbot, library):
    """Issue 30: side B stayed black until a step key was pressed (its view had been reset after the step sync
    had already placed its playhead, so it never asked for that frame)."""
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    open_and_wait(qtbot, win, library)
    a_key, b_key = (str((library / n).resolve()) for n in ("a", "b"))
    win.library.select_key(a_key)
    qtbot.waitUntil(lambda: win.session.key == a_key and win.video.shown_frame == 0, timeout=30_000)
    with qtbot.waitSignal(win.comparison.opened, timeout=30_000):
        win.compare_with(b_key)
    b = win.comparison.session
    assert (b.step, b.frame) == (0, 0)
    qtbot.waitUntil(lambda: win.compare_pane.video.shown_frame == 0, timeout=10_000)  # no key pressed
    img = win.compare_pane.video.grab().toImage()
    centre = img.pixelColor(img.width() // 2, img.height() // 2)
    assert centre != QColor(30, 30, 34)  # the frame is painted, not the viewer's empty background
