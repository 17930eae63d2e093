"""End to end: the real main window on the bundled samples (real MiniWoB runs in Chromium, H.264 recordings):
open the folder, select a recorded run, play, seek by step and by a click on the timeline, score it, overlay."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, Qt

from gui_app.qt.main_window import MainWindow

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "resources" / "samples"
WEIGHTS = REPO / "models" / "weights" / "model.onnx"
RUN = "miniwob/login-user-success"

pytestmark = pytest.mark.skipif(not (SAMPLES / RUN / "trajectory.json").is_file(),
                                reason="resources/samples/ has no recorded sample yet")


@pytest.fixture
def samples(tmp_path) -> Path:
    """A copy of the samples: opening a folder writes its catalog and label store inside it."""
    return Path(shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns(".rollscope")))


@pytest.fixture
def opened(qtbot, samples):
    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1400, 860)
    win.show()
    qtbot.waitExposed(win)
    with qtbot.waitSignal(win.scanner.scanned, timeout=120_000):
        win.open_path(samples)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)  # the library is read in a worker
    key = str((samples / RUN).resolve())
    with qtbot.waitSignal(win.loader.loaded, timeout=60_000):
        assert win.library.select_key(key)
    return win, key


def shown(win: MainWindow) -> int:
    return win.video.shown_frame


def test_open_play_seek_by_step_and_timeline(qtbot, opened, samples):
    win, key = opened
    model = win.library.model
    # The library lists the samples (native, derived, OSWorld, plain video) with their outcomes.
    assert model.rowCount() >= 5
    row = model.row(model.row_of_key(key))
    assert (row.format, row.success, row.error) == ("native", True, None)
    s = win.session
    traj = s.trajectory
    assert traj.instruction and traj.n_steps >= 3 and s.source is not None and s.source.frame_count >= traj.n_steps
    assert s.step == 0 and s.frame == 0
    qtbot.waitUntil(lambda: shown(win) == 0, timeout=20_000)  # the first frame is on screen
    assert win.step_table.model().rowCount() == traj.n_steps
    assert traj.id in win.windowTitle()

    # Play: the playhead moves on its own and the view follows; Space stops it.
    win.action_map["play_pause"].trigger()
    assert s.playing
    qtbot.waitUntil(lambda: s.frame >= 2, timeout=30_000)
    qtbot.waitUntil(lambda: shown(win) >= 1, timeout=20_000)
    win.action_map["play_pause"].trigger()
    assert not s.playing

    # Seek by step: a click on a row of the step table.
    target = traj.n_steps - 1
    table = win.step_table
    rect = table.visualRect(table.model().index(target, 1))
    qtbot.mouseClick(table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert s.step == target and s.frame == s.frame_of_step(target)
    qtbot.waitUntil(lambda: shown(win) == s.frame, timeout=20_000)

    # Seek by a click on the timeline at the middle of step 1.
    tl = win.timeline
    bounds = tl.step_boundaries() + [s.source.duration]
    x = (bounds[1] + bounds[2]) / 2
    scene = tl.vb.mapViewToScene(QPointF(x, 0.5))
    pos = tl.plot_widget.mapFromScene(scene)
    qtbot.mouseClick(tl.plot_widget.viewport(), Qt.MouseButton.LeftButton, pos=pos)
    qtbot.waitUntil(lambda: s.step == 1, timeout=10_000)
    assert s.frame == s.source.index_at(x)
    qtbot.waitUntil(lambda: shown(win) == s.frame, timeout=20_000)
    assert table.currentIndex().row() == 1  # the step table followed the timeline

    # j opens the next trajectory of the library's order, prefetched while this one was viewed (k goes back).
    row_now = model.row_of_key(key)
    if row_now + 1 < model.rowCount():
        nxt = model.key_at(row_now + 1)
        qtbot.waitUntil(lambda: nxt in win.loader._ready, timeout=60_000)
        win.action_map["next_trajectory"].trigger()
        assert win.loader.current_key == nxt  # shown at once: it was ready
    else:
        nxt = model.key_at(row_now - 1)
        with qtbot.waitSignal(win.loader.loaded, timeout=60_000):
            win.action_map["prev_trajectory"].trigger()
    assert win.loader.current_key == nxt and s.trajectory.source_path == nxt.split("#")[0]


@pytest.mark.skipif(not WEIGHTS.is_file(), reason="runs once the shipped weights models/weights/model.onnx exist")
def test_score_current_and_show_overlay(qtbot, opened):
    win, key = opened
    s = win.session
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        win.action_map["score_current"].trigger()
    scores = s.scores
    assert scores is not None and 0.0 <= scores.p_success <= 1.0
    assert len(scores.step_scores) == s.trajectory.n_steps
    assert 0 < scores.tokens_kept <= scores.tokens_total
    model = win.library.model  # the library row is re-read in a worker
    shown = f"{scores.p_success:.2f} {'✓' if scores.success else '✗'}"  # p(success) and the model's verdict
    qtbot.waitUntil(lambda: (model.data(model.index(model.row_of_key(key), 6)) or "").endswith(shown),
                    timeout=30_000)
    assert win.statusBar().currentMessage().startswith("p(success) = ")
    win.action_map["toggle_overlay"].trigger()
    assert s.overlay
    win.action_map["step_next"].trigger()  # the frame on screen at the end of step 0: the model's first keyframe
    qtbot.waitUntil(lambda: "tokens kept" in win.video.overlay_text, timeout=20_000)


def test_a_run_on_screens_never_trained_is_scored_as_unknown_with_the_reason_in_the_status_bar(qtbot, opened,
                                                                                                samples):
    """The shipped model was trained on MiniWoB pages and desktops up to 1920x1080; a 4K recording is outside the
    screens it knows: its score says "unknown" and why, instead of a confident number."""
    import cv2

    from models.runtime import OUTSIDE_SCREENS

    win, _ = opened
    src = next((samples / "desktop").glob("editor_delete_line/*-s9*"))
    run = samples / "desktop" / "editor_4k" / src.name
    shutil.copytree(src, run)
    for png in (run / "frames").rglob("*.png"):  # the same screens at 3840x2160
        cv2.imwrite(str(png), cv2.resize(cv2.imread(str(png)), (3840, 2160), interpolation=cv2.INTER_NEAREST))
    (run / "video.mp4").unlink()
    data = json.loads((run / "trajectory.json").read_text())
    data["video"] = None
    (run / "trajectory.json").write_text(json.dumps(data))
    with qtbot.waitSignal(win.scanner.scanned, timeout=120_000):
        win.open_path(samples)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)
    qtbot.waitUntil(lambda: win.library.select_key(str(run.resolve())), timeout=30_000)
    qtbot.waitUntil(lambda: win.session.key == str(run.resolve()) and win.session.trajectory is not None,
                    timeout=60_000)
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        win.action_map["score_current"].trigger()
    scores = win.session.scores
    assert scores.unknown and scores.verdict_text == "unknown"
    reason = OUTSIDE_SCREENS.split(",")[1].strip().split("(")[0].strip()  # "outside the sizes the model was ..."
    kind, text = win.notifier.history[-1]
    assert kind == "warning" and text.startswith(f"p(success) = {scores.p_success:.2f} for ") and reason in text
