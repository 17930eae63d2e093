"""A scored library moved elsewhere and rescanned keeps every score whole, "unknown" included, in every view.

The bug (issue 25): the score was stored three times (``scores``, ``latest_scores`` and copied columns of the
trajectory rows) and the rescan after a move carried it by hand, forgetting ``model_unknown``: runs the model cannot
judge then showed a confident "0.90 ✓" in the library and led the labelling queues astray.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from gui_app.core.library.catalog import Catalog, CatalogRow
from gui_app.core.annotation.export import catalog_index
from gui_app.core.annotation.queue import model_verdict, order_rows
from gui_app.core.scoring.score import Score
from tests.gui.library_fixtures import make_library

# make_library's outcomes: t00000 unknown, t00003 failure, the others success.
UNKNOWN = {"t00001", "t00003"}  # the model cannot judge them, though its p_success (0.9) reads as confident


def score_library(cat: Catalog, root: Path) -> None:
    def key(name: str) -> str:
        return str(root / name)

    for name in sorted(UNKNOWN):
        cat.set_score(key(name), Score(p_success=0.1, threshold=0.5, success=False, model="old"))
        cat.set_score(key(name), Score(p_success=0.9, threshold=0.5, success=True, model="new", ood=3.0,
                                       unknown=True))
    cat.set_score(key("t00002"), Score(p_success=0.8, threshold=0.5, success=True, model="old"))
    cat.set_score(key("t00002"), Score(p_success=0.2, threshold=0.5, success=False, model="new", ood=0.5))
    cat.set_score(key("t00004"), Score(p_success=0.55, threshold=0.5, success=True, model="new", ood=0.1))


def check_every_view(cat: Catalog, root: Path) -> None:
    """What every reader of the score sees: the library rows, one row, the score, the queues and export."""
    rows = {r.ref: r for r in cat.query()}
    assert len(rows) == 6 and all(r.key == str(root / ref) for ref, r in rows.items())
    for ref in UNKNOWN:
        row = rows[ref]
        assert (row.p_success, row.threshold, row.model_unknown) == (0.9, 0.5, True)
        assert model_verdict(row) is None  # no verdict: the library says "unknown", not "0.90 ✓"
        assert cat.get(ref) == row and cat.get(row.key) == row
        score = cat.latest_score(row.key)
        assert score is not None and score.unknown and score.verdict_text == "unknown" and score.ood == 3.0
    assert (rows["t00002"].model_unknown, rows["t00002"].model_success, rows["t00002"].p_success) == (False, False, 0.2)
    assert rows["t00004"].model_unknown is False and model_verdict(rows["t00004"]) is True
    assert rows["t00000"].model_unknown is None and rows["t00000"].p_success is None  # never scored
    # Search by the model's verdict in words, filters on the score.
    assert {r.ref for r in cat.query("unknown")} >= UNKNOWN
    assert {r.ref for r in cat.query(filters={"scored": True})} == UNKNOWN | {"t00002", "t00004"}
    assert {r.ref for r in cat.query(filters={"min_p_success": 0.85})} == UNKNOWN
    assert cat.count(filters={"scored": False}) == 2
    assert cat.ood_scores() == {str(root / r): o for r, o in
                                (("t00001", 3.0), ("t00003", 3.0), ("t00002", 0.5), ("t00004", 0.1))}

    # The queues: the model disagrees with the environment only on t00002 (t00003 failed, but the model cannot
    # judge it); the runs the model cannot judge are the least sure.
    listed = cat.query(order_by="key")
    disagreeing = order_rows(listed, ("disagreement",))
    assert disagreeing[0].ref == "t00002" and all(model_verdict(r) in (None, r.success) for r in disagreeing[1:])
    assert {r.ref for r in order_rows(listed, ("uncertain",))[:2]} == UNKNOWN
    assert [d.key for d in cat.model_disagreements("old", "new")] == [str(root / "t00002")]

    # Export's join with the catalog.
    index = catalog_index(cat)
    for ref in UNKNOWN:
        assert isinstance(index[ref], CatalogRow) and index[ref].model_unknown is True


def test_a_moved_library_keeps_its_unknown_scores_in_every_view(tmp_path: Path):
    root = make_library(tmp_path / "lib", 6)
    cat = Catalog.for_root(root)
    cat.scan(root)
    score_library(cat, root)
    check_every_view(cat, root)
    cat.close()

    moved = tmp_path / "elsewhere" / "lib"
    moved.parent.mkdir()
    shutil.move(str(root), moved)
    cat = Catalog.for_root(moved)
    report = cat.scan(moved)
    assert report.removed == 6 and report.trajectories == 6
    check_every_view(cat, moved)
    cat.close()
    # Reopened: what is on disk, not what a cache kept.
    with Catalog.for_root(moved) as again:
        check_every_view(again, moved)


def test_a_schema_8_catalog_migrates_keeping_every_score(tmp_path: Path):
    """Migration 9 drops the copies (the latest_scores table, the row's score columns, their triggers) and keeps
    every score: the history, the latest one whole, its "unknown"."""
    import numpy as np

    from gui_app.core.library.catalog import SCHEMA_VERSION, pack_masks
    from tests.catalog_db import old_catalog

    db = tmp_path / "v8.sqlite"
    conn = old_catalog(db, 8)
    conn.execute("INSERT INTO trajectories (key, id, path, instruction, success, scanned_at, ref) VALUES "
                 "('/lib/a', 'a', '/lib/a', 'judged', 0, 0, 'a'), ('/lib/b', 'b', '/lib/b', 'unknown', 1, 0, 'b'), "
                 "('/lib/c', 'c', '/lib/c', 'unscored', 1, 0, 'c')")
    shapes, blob = pack_masks([np.eye(3, dtype=bool)])
    conn.execute("INSERT INTO scores (key, model, p_success, step_scores, scored_at, threshold, success, unknown) "
                 "VALUES ('/lib/a', 'old', 0.8, '[0.8]', 1, 0.5, 1, 0)")
    conn.execute("INSERT INTO scores (key, model, p_success, first_error_step, step_scores, scored_at, keyframe_steps, "
                 "mask_shapes, masks, threshold, success, ood, unknown) "
                 "VALUES ('/lib/a', 'new', 0.3, 1, '[0.2, 0.3]', 2, '[1]', ?, ?, 0.5, 0, 0.4, 0)", (shapes, blob))
    conn.execute("INSERT INTO scores (key, model, p_success, step_scores, scored_at, threshold, success, ood, unknown) "
                 "VALUES ('/lib/b', 'new', 0.9, '[0.9]', 3, 0.5, 1, 3.0, 1)")
    conn.execute("INSERT INTO scores (key, model, p_success, step_scores, scored_at) "
                 "VALUES ('/gone', 'new', 0.1, '[]', 4)")  # a score of a key no scan has recorded (yet)
    before = conn.execute("SELECT * FROM scores ORDER BY id").fetchall()
    assert conn.execute("SELECT model_unknown FROM trajectories WHERE key = '/lib/b'").fetchone() == (1,)  # copied
    conn.close()

    with Catalog(db) as cat:
        assert cat.schema_version == SCHEMA_VERSION >= 9
        a, b, c = cat.query(order_by="key")
        assert (a.p_success, a.first_error_step, a.threshold, a.model_success, a.model_unknown) == (
            0.3, 1, 0.5, False, False)
        assert (b.p_success, b.model_success, b.model_unknown) == (0.9, True, True) and model_verdict(b) is None
        assert (c.p_success, c.model_unknown) == (None, None)
        score, unknown, unlisted = (cat.latest_score(k) for k in ("/lib/a", "/lib/b", "/gone"))
        assert score is not None and unknown is not None and unlisted is not None
        assert (score.model, score.step_scores, score.keyframe_steps, score.ood) == ("new", [0.2, 0.3], [1], 0.4)
        assert len(score.masks) == 1 and (score.masks[0] == np.eye(3, dtype=bool)).all()
        assert unknown.unknown and unlisted.p_success == 0.1
        assert [m.model for m in cat.scoring_models()] == ["new", "old"]
    conn = sqlite3.connect(db)
    # Every score, as it was, under its run's library key (migration 10); the unlisted one keeps its key; the
    # evidence and text reads added later (migration 13) are unknown for them, and they have no harm verdict (the six
    # safety columns of migration 14), no usage and no rationale (migration 15).
    rekeyed = {"/lib/a": "a", "/lib/b": "b"}
    assert conn.execute("SELECT * FROM scores ORDER BY id").fetchall() == [
        (i, rekeyed.get(k, k), *rest, None, None, *(None,) * 6, None, None) for i, k, *rest in before]
    columns = {r[1] for r in conn.execute("PRAGMA table_info(trajectories)")}
    assert not columns & {"p_success", "first_error_step", "score_id", "threshold", "model_success", "model_unknown"}
    assert conn.execute("SELECT type FROM sqlite_master WHERE name = 'latest_scores'").fetchone() == ("view",)
    # No trigger keeps a copy of a score (migration 9); those left keep the text index in step (migration 16).
    assert {n for (n,) in conn.execute("SELECT tbl_name FROM sqlite_master WHERE type = 'trigger'")} <= {"trajectories"}
    indexes = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                          "AND tbl_name = 'trajectories' AND name NOT LIKE 'sqlite_%'")}
    assert indexes == {"trajectories_path", "trajectories_format", "trajectories_success", "trajectories_task",
                       "trajectories_instruction", "trajectories_ref", "trajectories_id", "trajectories_error",
                       "trajectories_duration", "trajectories_n_steps", "trajectories_instruction_beyond_ascii"}
    conn.close()


def stored_scores(db: Path) -> list[tuple[int, str]]:
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT id, key FROM scores ORDER BY id").fetchall()
    finally:
        conn.close()


def test_a_score_set_by_path_is_stored_under_the_library_key_and_a_move_rewrites_none(tmp_path: Path):
    """Scores are keyed by the library key (migration 10): ``set_score`` given a run's absolute path stores it
    under the run's ``ref``, and a moved library's rescan finds every score where it was, rewriting no key."""
    root = make_library(tmp_path / "lib", 6)
    cat = Catalog.for_root(root)
    cat.set_score(str(root / "t00005"), Score(p_success=0.6, model="early"))  # scored before any scan
    cat.scan(root)
    score_library(cat, root)
    stored = stored_scores(cat.db_path)
    assert {k for _, k in stored} == UNKNOWN | {"t00002", "t00004", "t00005"}
    assert cat.get(str(root / "t00005")).p_success == 0.6  # type: ignore[union-attr]
    cat.close()

    moved = tmp_path / "elsewhere" / "lib"
    moved.parent.mkdir()
    shutil.move(str(root), moved)
    with Catalog.for_root(moved) as cat:
        assert cat.scan(moved).removed == 6
        assert stored_scores(cat.db_path) == stored  # the same rows under the same keys
        rows = {r.ref: r for r in cat.query()}
        assert rows["t00005"].p_success == 0.6 and rows["t00002"].p_success == 0.2
        assert cat.latest_score(str(moved / "t00001")).unknown  # type: ignore[union-attr]


def test_a_score_kept_under_a_catalog_key_moves_to_the_library_key(tmp_path: Path):
    """A schema-9 catalog holds scores under catalog keys: migration 10 re-keys those of listed runs, and the scan
    that first records a run scored by its path before then re-keys its scores."""
    from tests.catalog_db import old_catalog

    root = make_library(tmp_path / "lib", 3)
    db = root / ".rollscope" / "catalog.sqlite"
    db.parent.mkdir()
    conn = old_catalog(db, 9)
    conn.execute("INSERT INTO trajectories (key, id, path, instruction, scanned_at, ref) VALUES (?, 'x', ?, '', 0, "
                 "'t00000')", (str(root / "t00000"),) * 2)
    conn.execute("INSERT INTO scores (key, p_success, step_scores, scored_at) VALUES (?, 0.3, '[]', 0), "
                 "(?, 0.7, '[]', 0)", (str(root / "t00000"), str(root / "t00001")))
    conn.close()
    with Catalog.for_root(root) as cat:
        assert [k for _, k in stored_scores(db)] == ["t00000", str(root / "t00001")]
        cat.scan(root)
        assert [k for _, k in stored_scores(db)] == ["t00000", "t00001"]
        assert {r.ref: r.p_success for r in cat.query()} == {"t00000": 0.3, "t00001": 0.7, "t00002": None}
