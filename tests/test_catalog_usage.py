"""What a judge spent on a verdict (``Score.usage``) and its own words for it (``Score.rationale``) through the
catalog: stored with the score and read back equal from a real SQLite file, and an old catalog migrating to them
(migration 15)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from gui_app.core.library.catalog import SCHEMA_VERSION, Catalog
from gui_app.core.scoring.score import Score
from tests.catalog_db import old_catalog


def test_usage_and_rationale_round_trip_through_a_catalog_file(tmp_path: Path):
    db = tmp_path / "catalog.sqlite"
    endpoint = Score(p_success=0.2, threshold=0.5, success=False, first_error_step=3,
                     model="openai-compatible:judge-fail@127.0.0.1:8000:prompt-v1:k16",
                     usage={"prompt_tokens": 900, "completion_tokens": 20, "cached": 1},
                     rationale="the last step typed the password into the user name field")
    builtin = Score(p_success=0.9, threshold=0.57, success=True, model="weights:onnx", tokens_kept=40,
                    tokens_total=100)
    with Catalog(db) as cat:
        cat.set_score("/lib/a", endpoint)
        cat.set_score("/lib/b", builtin)
    with Catalog(db) as cat:  # another connection, from the file
        a, b = cat.latest_score("/lib/a"), cat.latest_score("/lib/b")
        assert a is not None and a.usage == endpoint.usage and a.rationale == endpoint.rationale
        assert a.to_json()["usage"] == endpoint.usage and a.to_json()["rationale"] == endpoint.rationale
        assert b is not None and b.usage == {} and b.rationale == ""  # the built-in model reports neither
        assert (b.tokens_kept, b.tokens_total) == (40, 100)
        # The latest score is whole: a rescore by a judge that reports nothing does not keep the old words.
        cat.set_score("/lib/a", builtin)
        assert (cat.latest_score("/lib/a").usage, cat.latest_score("/lib/a").rationale) == ({}, "")
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT usage, rationale FROM scores ORDER BY id").fetchall()
    conn.close()
    assert rows == [('{"prompt_tokens": 900, "completion_tokens": 20, "cached": 1}', endpoint.rationale),
                    (None, None), (None, None)]


def test_a_version_14_catalog_migrates_and_its_scores_have_no_usage_or_rationale(tmp_path: Path):
    db = tmp_path / "v14.sqlite"
    conn = old_catalog(db, 14)
    conn.execute("INSERT INTO meta (rows_version) SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM meta)")
    conn.execute("INSERT INTO trajectories (key, id, path, instruction, success, scanned_at, ref) "
                 "VALUES ('/lib/a', 'a', '/lib/a', 'Log in', 0, 0, '/lib/a')")
    conn.execute("INSERT INTO scores (key, model, p_success, first_error_step, step_scores, scored_at, threshold, "
                 "success, unknown, evidence, text_reads, p_harm, harmful, harm_unknown) "
                 "VALUES ('/lib/a', 'v3', 0.2, 1, '[0.1, 0.9]', 1.0, 0.5, 0, 0, '[\"video\"]', 3, 0.1, 0, 0)")
    conn.close()
    with Catalog(db) as cat:
        assert cat.schema_version == SCHEMA_VERSION == 17
        old = cat.latest_score("/lib/a")
        assert (old.p_success, old.first_error_step, old.evidence, old.usage, old.rationale) == \
            (0.2, 1, ["video"], {}, "")
        (row,) = cat.query()
        assert (row.p_success, row.model_success, row.p_harm) == (0.2, False, 0.1)  # the library's join reads on
        cat.set_score("/lib/a", Score(p_success=0.7, threshold=0.5, success=True, model="judge",
                                      usage={"prompt_tokens": 5}, rationale="done"))
        new = cat.latest_score("/lib/a")
        assert (new.usage, new.rationale) == ({"prompt_tokens": 5}, "done")
