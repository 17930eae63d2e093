"""The pointer detector's incremental path: a keyframe detected only around what changed gives the same heatmap,
hotspot and score as the keyframe detected whole, on real recorded screens."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from models.pointer import PointerDetector, PointerHit, _scaled, _to_input, decode
from models.runtime import default_pointer_path

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def _frames(run: Path) -> list[np.ndarray]:
    shots = sorted((run / "frames").glob("*.png"))
    assert len(shots) >= 3, run
    frames = [cv2.imread(str(p)) for p in shots]
    return [cv2.cvtColor(f, cv2.COLOR_BGR2RGB) for f in frames if f is not None]


def _whole(detector: PointerDetector, frames: list[np.ndarray]) -> list[PointerHit]:
    """Each frame detected on its own, whole: the reference the incremental path must equal."""
    return [decode(detector._run(_to_input(img)[None])[0], scale) for img, scale in map(_scaled, frames)]


@pytest.fixture(scope="module")
def detector() -> PointerDetector:
    return PointerDetector(default_pointer_path(), threads=1)


@pytest.mark.parametrize("run", ["desktop/files_rename/files_rename-s900100", "desktop/chrome_pick_item",
                                 "miniwob/login-user-success"])
def test_incremental_detection_equals_whole(detector: PointerDetector, run: str) -> None:
    path = SAMPLES / run
    if not (path / "frames").is_dir():  # a folder of runs: its first
        path = sorted(p for p in path.iterdir() if (p / "frames").is_dir())[0]
    frames = _frames(path)
    assert detector.detect(frames) == _whole(detector, frames)


def test_updated_heatmap_equals_whole_heatmap(detector: PointerDetector) -> None:
    frames = _frames(SAMPLES / "desktop" / "files_rename" / "files_rename-s900100")
    scaled = [_scaled(f)[0] for f in frames]
    updated = 0
    for prev, img in zip(scaled, scaled[1:]):
        plan = detector._plan(img, prev)
        if plan is None or not plan[1]:
            continue
        whole_prev = detector._run(_to_input(prev)[None])[0]
        whole = detector._run(_to_input(img)[None])[0]
        got = detector._update(whole_prev, img, *plan)
        assert np.array_equal(got, whole)
        assert not np.array_equal(whole_prev, whole)  # the change did move the heatmap
        updated += 1
    assert updated >= 2  # the recorded run's steps are small changes: the incremental path ran


def test_unchanged_screen_reuses_the_heatmap_and_a_new_screen_is_detected_whole(detector: PointerDetector) -> None:
    frames = _frames(SAMPLES / "desktop" / "files_rename" / "files_rename-s900100")
    img = _scaled(frames[1])[0]
    same = detector._plan(img, img.copy())
    assert same is not None and same[1] == []
    other = 255 - img  # every block changed
    assert detector._plan(other, img) is None
    # a pointer-sized change at the far corner: only that corner is recomputed
    moved = img.copy()
    moved[-12:-4, -12:-4] = 0
    plan = detector._plan(moved, img)
    assert plan is not None
    affected, rects = plan
    assert len(rects) == 1 and affected.mean() < 0.1
    whole = detector._run(_to_input(img)[None])[0]
    assert np.array_equal(detector._update(whole, moved, affected, rects),
                          detector._run(_to_input(moved)[None])[0])
