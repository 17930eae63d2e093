"""Pruning masks stored with a score: packed compactly, read back exactly after reopening, migrated catalogs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gui_app.core.library.catalog import SCHEMA_VERSION, Catalog, pack_masks, unpack_masks
from gui_app.core.errors import CatalogError
from gui_app.core.scoring.score import Score
from tests.catalog_db import old_catalog


def _masks(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random((14, 20)) < 0.3, rng.random((14, 20)) < 0.5, np.zeros((3, 5), bool), np.ones(7, bool)]


def test_pack_round_trips_shapes_and_bits_compactly():
    masks = _masks()
    shapes, blob = pack_masks(masks)
    assert len(blob) == 35 + 35 + 2 + 1  # 280 bits -> 35 bytes; 15 -> 2; 7 -> 1
    back = unpack_masks(shapes, blob)
    assert [m.shape for m in back] == [(14, 20), (14, 20), (3, 5), (7,)]
    for a, b in zip(masks, back, strict=True):
        assert b.dtype == bool and np.array_equal(a, b)
    assert unpack_masks(None, None) == []
    with pytest.raises(CatalogError, match="truncated"):
        unpack_masks(shapes, blob[:40])


def test_masks_survive_reopening_the_catalog(tmp_path: Path):
    db = tmp_path / "c.sqlite"
    masks = _masks(1)[:2]
    with Catalog(db) as cat:
        cat.set_score("/runs/a", Score(p_success=0.2, first_error_step=1, step_scores=[0.1, 0.7, 0.2], model="m",
                                       tokens_kept=150, tokens_total=560, masks=masks, keyframe_steps=[0, 2]))
        cat.set_score("/runs/b", Score(p_success=0.9, step_scores=[0.5], model="m"))  # no masks (--no-prune)
        with pytest.raises(CatalogError, match="2 masks but 1 keyframe steps"):
            cat.set_score("/runs/c", Score(p_success=0.5, model="m", masks=masks, keyframe_steps=[0]))
    with Catalog(db) as cat:
        rec = cat.latest_score("/runs/a")
        assert rec.keyframe_steps == [0, 2] and (rec.tokens_kept, rec.tokens_total) == (150, 560)
        assert all(np.array_equal(a, b) for a, b in zip(masks, rec.masks, strict=True))
        other = cat.latest_score("/runs/b")
        assert other.masks == [] and other.keyframe_steps == []
        assert cat.latest_score("/runs/c") is None  # the refused write left nothing behind


def test_version_2_catalog_gains_mask_columns_and_keeps_scores(tmp_path: Path):
    db = tmp_path / "v2.sqlite"
    conn = old_catalog(db, 2)
    conn.execute("INSERT INTO scores (key, p_success, step_scores, scored_at) VALUES ('/x', 0.75, '[0.5]', 0)")
    conn.close()
    with Catalog(db) as cat:
        assert cat.schema_version == SCHEMA_VERSION >= 3
        old = cat.latest_score("/x")
        assert (old.p_success, old.step_scores, old.masks) == (0.75, [0.5], [])
        cat.set_score("/x", Score(p_success=0.5, step_scores=[0.5], model="m", masks=[np.eye(4, dtype=bool)],
                                  keyframe_steps=[0]))
        assert np.array_equal(cat.latest_score("/x").masks[0], np.eye(4, dtype=bool))


def test_a_score_is_stored_whole_and_read_back_as_the_same_type(tmp_path: Path):
    """The catalog keeps every field of a Score (threshold and verdict included) and returns a Score."""
    masks = _masks(2)[:2]
    score = Score(p_success=0.55, threshold=0.573, success=False, first_error_step=1, step_scores=[0.2, 0.7, 0.1],
                  masks=masks, keyframe_steps=[0, 2], tokens_kept=150, tokens_total=560, model="weights:onnx",
                  ood=0.25, warnings=["no mouse pointer found"], seconds=0.125,
                  timings={"decode": 0.1, "forward": 0.025})
    with Catalog(tmp_path / "c.sqlite") as cat:
        cat.set_score("/runs/a", score)
    with Catalog(tmp_path / "c.sqlite") as cat:
        back = cat.latest_score("/runs/a")
        row = cat.get("/runs/a")  # not scanned: the score waits for its row
    assert isinstance(back, Score) and back.scored_at is not None and row is None
    for name in ("p_success", "threshold", "success", "first_error_step", "step_scores", "keyframe_steps",
                 "tokens_kept", "tokens_total", "model", "ood", "warnings", "seconds", "timings"):
        assert getattr(back, name) == getattr(score, name), name
    assert all(np.array_equal(a, b) for a, b in zip(masks, back.masks, strict=True))
