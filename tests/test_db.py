"""The one migration runner (gui_app.core.db) for the catalog and the annotation store; domain errors only."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from gui_app.core import db
from gui_app.core.library.catalog import SCHEMA_VERSION, Catalog
from gui_app.core.errors import CatalogError
from gui_app.core.scoring.score import Score
from gui_app.core.store.interface import StoreError, migrations
from gui_app.core.store.backends import open_store
from tests.old_schemas import old_catalog_v4, old_store_v2


def test_a_catalog_left_by_the_old_code_migrates_keeping_rows_and_scores(tmp_path: Path):
    path = tmp_path / "catalog.sqlite"
    conn = old_catalog_v4(path)
    conn.execute("INSERT INTO files VALUES ('/lib/a', 'native', 10, 1, 1, 0)")
    conn.execute("INSERT INTO trajectories (key, id, path, format, instruction, success, scanned_at, search) "
                 "VALUES ('/lib/a', 'a', '/lib/a', 'native', 'Open the menu', 0, 0, 'a open the menu'), "
                 "('/lib/b', 'b', '/lib/b', 'native', 'Unscored', 1, 0, 'b unscored')")
    conn.execute("INSERT INTO scores (key, model, p_success, first_error_step, step_scores, scored_at) "
                 "VALUES ('/lib/a', 'old-model', 0.55, 1, '[0.2, 0.8]', 1.0)")
    conn.close()
    with Catalog(path) as cat:
        assert cat.schema_version == SCHEMA_VERSION == 17
        assert {r.ref for r in cat.query()} == {"/lib/a", "/lib/b"}  # keys backfilled (no library root: absolute)
        a, b = cat.query(order_by="key")
        assert (a.instruction, a.success, a.p_success, a.first_error_step) == ("Open the menu", False, 0.55, 1)
        assert (a.threshold, a.model_success) == (None, None)  # the old code kept no threshold: unknown
        assert a.model_unknown is False and b.model_unknown is None  # scored then: a known verdict; unscored
        assert (b.p_success, b.threshold) == (None, None)
        old = cat.latest_score("/lib/a")
        assert (old.model, old.step_scores, old.threshold, old.success, old.warnings, old.unknown) == (
            "old-model", [0.2, 0.8], None, None, [], False)
        cat.set_score("/lib/a", Score(p_success=0.55, threshold=0.573, success=False, model="new"))
        a = cat.get("/lib/a")
        assert (a.p_success, a.threshold, a.model_success, a.model_unknown) == (0.55, 0.573, False, False)
        # A model that cannot judge a run says so (model v2's `unknown`): stored whole, mirrored into the row.
        cat.set_score("/lib/a", Score(p_success=0.0, threshold=0.573, success=False, ood=2.5, unknown=True))
        assert cat.latest_score("/lib/a").unknown and cat.get("/lib/a").model_unknown
        assert cat.query(order_by="key")[0].model_unknown is True
        assert cat.latest_score("/lib/a").evidence == []  # not recorded: an old score, or one that says nothing
        # What a verdict read (model v3) is kept with it.
        cat.set_score("/lib/a", Score(p_success=0.9, threshold=0.5, success=True, evidence=["video", "actions"],
                                      text_reads=12))
        back = cat.latest_score("/lib/a")
        assert (back.evidence, back.text_reads) == (["video", "actions"], 12)
    log = sqlite3.connect(path).execute("SELECT version, name FROM schema_migrations").fetchall()
    # what the runner applied
    assert log == [(5, "score_whole"), (6, "library_keys"), (7, "score_unknown"), (8, "folders"), (9, "one_score"),
                   (10, "scores_by_library_key"), (11, "run_columns"), (12, "instruction_overrides"),
                   (13, "score_evidence"), (14, "score_safety"), (15, "score_usage_rationale"),
                   (16, "search_index"), (17, "cold_query_indexes")]


def test_a_store_left_by_the_old_code_opens_as_it_is(tmp_path: Path):
    path = tmp_path / "labels.sqlite"
    conn = old_store_v2(path)
    conn.execute("INSERT INTO annotations (trajectory_id, annotator, role, verdict, created_at, updated_at) "
                 "VALUES ('t', 'ann', 'annotator', 'failure', 0, 0)")
    conn.execute("INSERT INTO annotation_labels VALUES ('t', 'ann', 'annotator', 'computer_use:wrong_element')")
    conn.close()
    store = open_store(path)
    try:
        assert store.schema_version == len(migrations()) == 4
        rec = store.get("t", "ann")
        assert (rec.verdict, rec.labels) == ("failure", ["computer_use:wrong_element"])
        store.set_field("t", "ann", "notes", "still writable")
        assert store.get("t", "ann").notes == "still writable"
    finally:
        store.close()


def test_the_runner_applies_each_file_once_and_rolls_back_a_failed_one(tmp_path: Path):
    steps = (db.Migration(1, "one", "CREATE TABLE a (x);\n-- a comment\nINSERT INTO a VALUES (1);"),
             db.Migration(2, "two", "CREATE TABLE b (y);"))
    conn = sqlite3.connect(tmp_path / "x.sqlite", isolation_level=None)
    assert db.migrate(conn, steps[:1]) == 1
    assert db.migrate(conn, steps) == 2 and db.migrate(conn, steps) == 2  # nothing left to apply
    assert conn.execute("SELECT COUNT(*) FROM a").fetchone()[0] == 1
    broken = (*steps, db.Migration(3, "broken", "CREATE TABLE c (z);\nCREATE TABLE c (z);"))
    with pytest.raises(db.MigrationError, match="migration to schema version 3 failed") as err:
        db.migrate(conn, broken)
    assert err.value.version == 3 and db.schema_version(conn) == 2
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'c'").fetchone()[0] == 0
    with pytest.raises(db.MigrationError, match="newer than this Rollscope"):
        db.migrate(conn, steps[:1])
    conn.close()


def test_migration_files_must_be_numbered_without_gaps(tmp_path: Path):
    (tmp_path / "001_first.sql").write_text("CREATE TABLE a (x);")
    (tmp_path / "003_third.sql").write_text("CREATE TABLE c (x);")
    with pytest.raises(db.MigrationError, match=r"numbered 1..N without gaps, found \[1, 3\]"):
        db.load_migrations(tmp_path)


def test_catalog_and_store_raise_domain_errors_not_sqlite_errors(tmp_path: Path):
    """A damaged file (a table dropped behind their back) is a CatalogError / StoreError naming the file."""
    cat = Catalog(tmp_path / "c.sqlite")
    store = open_store(tmp_path / "labels.sqlite")
    raw = sqlite3.connect(tmp_path / "c.sqlite")
    raw.execute("DROP TABLE trajectories")
    raw.commit()
    raw.close()
    raw = sqlite3.connect(tmp_path / "labels.sqlite")
    raw.execute("DROP TABLE annotations")
    raw.commit()
    raw.close()
    for call in (cat.query, cat.count, cat.keys, cat.formats, cat.tasks, lambda: cat.get("/x"), lambda: len(cat)):
        with pytest.raises(CatalogError, match="c.sqlite"):
            call()
    for call in (lambda: store.get("t", "a"), store.annotations, lambda: store.set_label("t", "a", "x:y", True)):
        with pytest.raises(StoreError, match="labels.sqlite"):
            call()
    cat.close()
    store.close()


def test_thread_connections_close_a_connection_in_use_only_when_its_use_ends(tmp_path):
    """close_all() from one thread while another reads: the reader keeps its connection (closing it under a read
    crashes the interpreter) until its use ends; idle connections close at once; a later use opens a new one."""
    import threading

    conns = db.ThreadConnections()
    path = tmp_path / "x.sqlite"

    def mine() -> sqlite3.Connection:
        conn = conns.mine()
        if conn is None:
            conn = sqlite3.connect(path, check_same_thread=False)
            conns.add(conn)
        return conn

    idle = mine()
    inside, closed, seen = threading.Event(), threading.Event(), []

    def reader() -> None:
        with conns.use():
            conn = mine()
            inside.set()
            closed.wait(10)
            seen.append(conn.execute("SELECT 1").fetchone())  # still open: its use has not ended
            seen.append(conns.mine() is conn)
        seen.append(conn)

    worker = threading.Thread(target=reader)
    worker.start()
    assert inside.wait(10)
    conns.close_all()
    with pytest.raises(sqlite3.ProgrammingError):
        idle.execute("SELECT 1")  # not in use: closed at once
    closed.set()
    worker.join(10)
    assert seen[:2] == [(1,), True]
    with pytest.raises(sqlite3.ProgrammingError):
        seen[2].execute("SELECT 1")  # closed when its use ended
    assert conns.mine() is None
    assert mine().execute("SELECT 2").fetchone() == (2,)
    conns.close_all()
