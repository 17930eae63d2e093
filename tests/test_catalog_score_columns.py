"""The library rows always show each run's latest score, read from the one table scores are stored in (through the
view latest_scores, migration 9; copied into each trajectory row by triggers from migration 4 to 8)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

from gui_app.core.library.catalog import SCHEMA_VERSION, Catalog
from gui_app.core.scoring.score import Score
from tests.catalog_db import old_catalog
from tests.gui.library_fixtures import make_library, write_native


def mirrored(db: Path) -> None:
    """Every library row's score fields equal its library key's latest row of scores (or are NULL without one), as
    a fresh reader builds the rows."""
    conn = sqlite3.connect(db)
    latest = {k: rest for k, *rest in conn.execute(
        "SELECT key, p_success, first_error_step, threshold, success, unknown FROM scores WHERE id IN "
        "(SELECT MAX(id) FROM scores GROUP BY key)")}
    refs = dict(conn.execute("SELECT key, ref FROM trajectories").fetchall())
    conn.close()
    with Catalog(db) as cat:
        shown = {r.key: [r.p_success, r.first_error_step, r.threshold, r.model_success, r.model_unknown]
                 for r in cat.query()}

    def row_fields(p: float | None, f: int | None, t: float | None, s: int | None, u: int) -> list[Any]:
        return [p, f, t, None if s is None else bool(s), bool(u)]

    assert shown == {k: row_fields(*latest[r]) if r in latest else [None] * 5 for k, r in refs.items()}


def test_scores_follow_scores_rescans_and_removals(tmp_path: Path):
    root = make_library(tmp_path / "lib", 6)
    cat = Catalog.for_root(root)
    # Scored before the first scan.
    cat.set_score(str(root / "t00004"), Score(p_success=0.4, first_error_step=2, model="early"))
    cat.scan(root)
    mirrored(cat.db_path)
    key = str(root / "t00001")
    assert cat.get(str(root / "t00004")).p_success == 0.4
    cat.set_score(key, Score(p_success=0.2, first_error_step=1, model="m"))
    cat.set_score(key, Score(p_success=0.9, model="m"))
    cat.set_score(str(root / "t00002"), Score(p_success=None, model="m"))  # scored, but the model gave no probability
    mirrored(cat.db_path)
    assert (cat.get(key).p_success, cat.get(key).first_error_step) == (0.9, None)
    assert {r.id for r in cat.query(filters={"scored": True})} == {"traj-00001", "traj-00002", "traj-00004"}
    assert {r.id for r in cat.query(filters={"min_p_success": 0.3})} == {"traj-00001", "traj-00004"}
    assert cat.count(filters={"scored": False}) == 3
    # Deleting the latest score falls back to the one before (the view reads the largest id left), and the row follows.
    conn = sqlite3.connect(cat.db_path)
    conn.execute("DELETE FROM scores WHERE id = (SELECT MAX(id) FROM scores WHERE key = ?)", (cat.score_key(key),))
    conn.commit()
    conn.close()
    mirrored(cat.db_path)
    assert (cat.get(key).p_success, cat.get(key).first_error_step) == (0.2, 1)
    # A modified unit is re-read by the rescan (its row replaced): it keeps its score.
    write_native(root / "t00001", id="traj-00001", instruction="Changed", n_steps=2)
    cat.scan(root)
    assert (cat.get(key).instruction, cat.get(key).p_success) == ("Changed", 0.2)
    # A removed unit takes its scores along; scoring it again after it comes back starts afresh.
    shutil.rmtree(root / "t00004")
    cat.scan(root)
    assert cat.get(str(root / "t00004")) is None
    mirrored(cat.db_path)
    write_native(root / "t00004", id="traj-00004", instruction="Back", n_steps=1)
    cat.scan(root)
    assert cat.get(str(root / "t00004")).p_success is None and cat.count(filters={"scored": True}) == 2
    cat.close()


def test_version_3_catalog_copies_its_scores_into_the_rows(tmp_path: Path):
    db = tmp_path / "v3.sqlite"
    conn = old_catalog(db, 3)
    conn.execute("INSERT INTO trajectories (key, id, path, instruction, success, scanned_at) "
                 "VALUES ('/x', 'x', '/x', 'kept', 1, 0), ('/y', 'y', '/y', 'unscored', 0, 0)")
    conn.execute("INSERT INTO scores (key, p_success, first_error_step, scored_at) VALUES ('/x', 0.75, 3, 0)")
    conn.close()
    with Catalog(db) as cat:
        assert cat.schema_version == SCHEMA_VERSION >= 4
        x, y = cat.query(order_by="key")
        assert (x.instruction, x.success, x.p_success, x.first_error_step) == ("kept", True, 0.75, 3)
        assert (y.success, y.p_success) == (False, None) and cat.count(filters={"scored": True}) == 1
        assert x.success is True and y.success is False and cat.get("/y").success is False  # bools, not 1/0
        mirrored(db)
