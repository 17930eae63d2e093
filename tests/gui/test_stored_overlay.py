"""The pruning overlay from a stored score: no model runs after reopening the library (bundled samples)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.score import Score
from gui_app.qt.main_window import MainWindow

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "resources" / "samples"
RUN = "miniwob/login-user-success"

pytestmark = pytest.mark.skipif(not (SAMPLES / RUN / "trajectory.json").is_file(), reason="no bundled samples")


def test_overlay_masks_come_from_the_catalog_without_the_model(qtbot, tmp_path):
    samples = Path(shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns(".rollscope")))
    key = str((samples / RUN).resolve())
    rng = np.random.default_rng(3)
    masks = [rng.random((26, 20)) < 0.25 for _ in range(3)]
    with Catalog.for_root(samples) as cat:  # scored earlier, in another session
        cat.set_score(key, Score(p_success=0.81, model="rm-test", tokens_kept=120, tokens_total=1560, masks=masks,
                                 keyframe_steps=[0, 1, 2]))

    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.scanner.scanned, timeout=120_000):
        win.open_path(samples)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)
    with qtbot.waitSignal(win.loader.loaded, timeout=60_000):
        assert win.library.select_key(key)
    scores = win.session.scores
    assert scores.p_success == 0.81 and scores.keyframe_steps == [0, 1, 2]
    assert all(np.array_equal(a, b) for a, b in zip(masks, scores.masks, strict=True))
    win.action_map["toggle_overlay"].trigger()
    assert win.session.overlay
    # Frame 0 is the screen before the first action: the model saw the frames at the steps' ends, not this one.
    assert win.video._overlay is None and "No pruning mask for frame 0" in win.video.overlay_text
    win.action_map["step_next"].trigger()  # step 1 starts on frame 1, the screen at the end of step 0
    qtbot.waitUntil(lambda: win.video._overlay is not None, timeout=10_000)
    kept = int(masks[0].sum())
    assert win.video.overlay_text == f"Pruning mask of frame 1 (keyframe 0, end of step 1): {kept}/520 tokens kept"
    win.action_map["step_next"].trigger()
    assert win.video.overlay_text.startswith("Pruning mask of frame 2 (keyframe 1, end of step 2)")
    _xs, kept = win.timeline.tokens_curve.getData()  # the timeline's tokens-kept curve, from the same masks
    assert np.allclose(kept, [m.mean() for m in masks])
    assert win.scorer.process.pid is None  # the reward model was never loaded: no scoring process was started
    win.close()
