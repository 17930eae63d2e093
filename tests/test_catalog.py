"""The catalog: scanning real trajectory trees into a real SQLite file, rescans, cancel, queries and scores."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
from pathlib import Path

import cv2
import numpy as np
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.trajectory.formats import native
from gui_app.core.library.catalog import SCHEMA_VERSION, Catalog, CatalogRow
from gui_app.core.errors import CatalogError
from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Outcome, Step, Trajectory


def make_native(parent: Path, name: str, *, instruction: str = "", n_steps: int = 3, success: bool | None = True,
                task: str | None = None, app: str | None = None, screenshots: bool = False) -> Path:
    """A native trajectory saved with :func:`native.save`; with ``screenshots`` each step gets a real PNG."""
    d = parent / name
    steps = []
    for i in range(n_steps):
        shot = None
        if screenshots:
            img = np.full((48, 64, 3), 40 * i % 255, np.uint8)
            cv2.putText(img, str(i), (20, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (255, 255, 255), 2)
            shot = d / "frames" / f"step_{i:03d}.png"
            shot.parent.mkdir(parents=True, exist_ok=True)
            assert cv2.imwrite(str(shot), img)
        steps.append(Step(index=i, t_start=1.0 * i, t_end=1.0 * i + 0.8, action=f"pyautogui.click(x={i}, y=1)",
                          action_type="click", screenshot=None if shot is None else str(shot)))
    traj = Trajectory(id=name, instruction=instruction or f"Do {name}", steps=steps,
                      outcome=Outcome(success=success, score=None if success is None else float(success),
                                      source="env"), app=app, metadata={"task": task} if task else {})
    native.save(traj, d)
    return d


def make_broken(parent: Path, name: str, content: str) -> Path:
    d = parent / name
    d.mkdir(parents=True)
    (d / native.FILENAME).write_text(content, encoding="utf-8")
    return d


def consistent(db: Path) -> None:
    """The invariants a scan keeps even when cancelled: every unit has rows, every row has its unit."""
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        units = {p for (p,) in conn.execute("SELECT path FROM files")}
        row_units = {p for (p,) in conn.execute("SELECT DISTINCT path FROM trajectories")}
        assert units == row_units
        latest = conn.execute("SELECT COUNT(*) FROM latest_scores l WHERE score_id != "
                              "(SELECT MAX(id) FROM scores s WHERE s.key = l.key)").fetchone()[0]
        assert latest == 0
    finally:
        conn.close()


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """Five good native trajectories (two with PNG screenshots) and two broken units, in nested folders."""
    root = tmp_path / "runs"
    make_native(root / "a", "t1", instruction="Open the Settings menu", n_steps=3, success=True, task="settings")
    make_native(root / "a", "t2", instruction="Send an email to Bob", n_steps=5, success=False, app="thunderbird",
                screenshots=True)
    make_native(root / "b", "t3", instruction="search for cats", n_steps=2, success=None, task="search")
    make_native(root / "b" / "deep", "t4", instruction="Open a new tab", n_steps=4, success=True, task="settings",
                screenshots=True)
    make_native(root, "t5", instruction="Close the window", n_steps=1, success=False, task="window")
    make_broken(root / "bad", "truncated", '{"schema_version": 1, "id": "x", "steps": [')
    make_broken(root / "bad", "noid", '{"schema_version": 1, "steps": []}')
    return root


def test_scan_records_every_trajectory_and_every_error(tree: Path):
    cat = Catalog.for_root(tree)
    assert cat.db_path == tree / ".rollscope" / "catalog.sqlite"
    report = cat.scan(tree)
    assert report.trajectories == 5
    assert report.by_format == {"native": 5}
    assert report.units == 7 and report.skipped == 0 and not report.cancelled
    errors = {Path(e["path"]).name: e["error"] for e in report.errors}
    assert set(errors) == {"truncated", "noid"}
    assert "invalid JSON" in errors["truncated"] and "trajectory.json:1" in errors["truncated"]
    assert "noid/trajectory.json" in errors["noid"] and "'id' is a required property" in errors["noid"]
    assert len(cat) == 7

    rows = {Path(r.path).name: r for r in cat.query()}
    t2 = rows["t2"]
    assert t2.key == str(tree / "a" / "t2") == t2.path
    assert (t2.format, t2.instruction, t2.n_steps, t2.success, t2.error) == (
        "native", "Send an email to Bob", 5, False, None)
    assert t2.task == "thunderbird"  # no metadata task: falls back to the app
    assert t2.duration == pytest.approx(4.8)
    assert rows["t1"].task == "settings" and rows["t1"].success is True and rows["t1"].outcome_source == "env"
    assert rows["t3"].success is None
    bad = rows["truncated"]
    assert bad.error == errors["truncated"] and bad.n_steps is None and bad.format == "native"
    info = cat.info(t2.key)
    assert info["has_video"] is False and info["warnings"] == 0 and info["app"] == "thunderbird"
    # The key is what formats.load accepts, and loads the same trajectory.
    assert formats.load(t2.key).id == "t2"
    assert len(formats.load(t2.key).steps[0].screenshot) > 0
    consistent(cat.db_path)


def test_rescan_skips_unchanged_and_rereads_modified(tree: Path):
    cat = Catalog.for_root(tree)
    first = cat.scan(tree)
    again = cat.scan(tree)
    assert again.skipped == 7 and again.units == 7
    assert again.trajectories == first.trajectories and again.by_format == first.by_format
    assert {e["path"] for e in again.errors} == {e["path"] for e in first.errors}  # still broken, still listed

    t3 = tree / "b" / "t3"
    traj = native.load(t3)
    traj.instruction = "search for dogs instead"
    native.save(traj, t3)
    st = os.stat(t3 / native.FILENAME)
    os.utime(t3 / native.FILENAME, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # a distinct mtime, whatever the fs
    third = cat.scan(tree)
    assert third.skipped == 6
    assert cat.get(str(t3)).instruction == "search for dogs instead"
    assert cat.query("dogs")[0].key == str(t3)

    forced = cat.scan(tree, force=True)
    assert forced.skipped == 0 and forced.trajectories == 5


def test_unit_vanishing_during_a_scan_is_an_error_then_removed(tree: Path):
    import shutil

    victim = tree / "t5"

    def progress(done: int, total: int | None, path: str) -> None:
        if total is None and path == str(victim):  # the walk found it; it goes away before it is read
            shutil.rmtree(victim)

    cat = Catalog.for_root(tree)
    report = cat.scan(tree, progress=progress)
    errors = {e["path"]: e["error"] for e in report.errors}
    assert "cannot read" in errors[str(victim)] and report.trajectories == 4
    assert cat.get(str(victim)).error == errors[str(victim)]
    again = cat.scan(tree)
    assert again.removed == 1 and cat.get(str(victim)) is None and str(victim) not in {e["path"] for e in again.errors}


def test_fixed_unit_replaces_its_error_row(tree: Path):
    cat = Catalog.for_root(tree)
    cat.scan(tree)
    broken = tree / "bad" / "truncated"
    (broken / native.FILENAME).unlink()
    make_native(tree / "bad", "truncated", instruction="Repaired run")
    report = cat.scan(tree)
    assert str(broken) not in {e["path"] for e in report.errors}
    row = cat.get(str(broken))
    assert row.error is None and row.instruction == "Repaired run"
    assert report.trajectories == 6


def test_deleted_unit_and_its_scores_are_removed(tree: Path):
    cat = Catalog.for_root(tree)
    cat.scan(tree)
    gone = str(tree / "b" / "deep" / "t4")
    cat.set_score(gone, Score(p_success=0.3, first_error_step=1, step_scores=[0.9, 0.2, 0.1, 0.1], model="rm-test"))
    import shutil

    shutil.rmtree(gone)
    report = cat.scan(tree)
    assert report.removed == 1 and report.trajectories == 4
    assert cat.get(gone) is None and gone not in cat.keys()
    assert cat.latest_score(gone) is None
    consistent(cat.db_path)


def test_scanning_a_subfolder_keeps_the_rest(tree: Path, tmp_path: Path):
    cat = Catalog(tmp_path / "elsewhere" / "lib.sqlite")
    cat.scan(tree)
    report = cat.scan(tree / "a")
    assert report.units == 2 and report.removed == 0
    assert len(cat) == 7


def test_a_copied_folder_lists_its_own_trajectories_only(tree: Path, tmp_path: Path):
    import shutil

    with Catalog.for_root(tree) as cat:
        cat.scan(tree)
    copy = Path(shutil.copytree(tree, tmp_path / "copy"))  # the copy carries the original's .rollscope index
    with Catalog.for_root(copy) as cat:
        report = cat.scan(copy)
        assert len(cat) == 7 and report.removed == 7
        assert all(r.path.startswith(str(copy)) for r in cat.query())
    with Catalog.for_root(tree) as cat:  # the original is untouched
        assert len(cat) == 7 and all(r.path.startswith(str(tree)) for r in cat.query())
    shared = Catalog(tmp_path / "shared.sqlite")  # a catalog of several folders keeps them all
    shared.scan(tree)
    shared.scan(copy)
    assert len(shared) == 14


def test_cancel_mid_scan_keeps_the_catalog_consistent(tree: Path):
    cat = Catalog.for_root(tree)
    polls = []

    def cancel() -> bool:
        polls.append(1)
        return len(polls) > 7 + 3  # the walk polls once per unit (7), then stop after three units are read

    seen = []
    report = cat.scan(tree, progress=lambda done, total, path: seen.append((done, total)), cancel=cancel)
    assert report.cancelled
    assert len(cat) == 3  # the three units read before the cancel, each whole
    assert [t for _, t in seen[:7]] == [None] * 7 and seen[7:] == [(1, 7), (2, 7), (3, 7)]
    consistent(cat.db_path)

    # A cancelled scan removes nothing: it did not see the whole tree.
    report = cat.scan(tree, cancel=lambda: True)
    assert report.cancelled and report.units == 0 and report.removed == 0 and len(cat) == 3
    full = cat.scan(tree)
    assert full.skipped == 3 and full.trajectories == 5 and len(cat) == 7
    consistent(cat.db_path)


@pytest.fixture
def scored(tree: Path) -> Catalog:
    cat = Catalog.for_root(tree)
    cat.scan(tree)
    cat.set_score(str(tree / "a" / "t1"), Score(p_success=0.2, first_error_step=1, step_scores=[0.9, 0.1, 0.05],
                                                model="m-old", tokens_kept=10, tokens_total=100))
    cat.set_score(str(tree / "a" / "t1"), Score(p_success=0.9, step_scores=[0.95, 0.9, 0.9], model="m-new",
                                                tokens_kept=12, tokens_total=100))
    cat.set_score(str(tree / "a" / "t2"), Score(p_success=0.4, first_error_step=2,
                                                step_scores=[0.8, 0.7, 0.3, 0.2, 0.1], model="m-new"))
    cat.set_score(str(tree / "t5"), Score(p_success=0.7, step_scores=[0.7], model="m-new"))
    return cat


def names(rows: list[CatalogRow]) -> list[str]:
    return [Path(r.path).name for r in rows]


def test_query_sorts_by_any_column_with_missing_values_last(scored: Catalog):
    assert names(scored.query(order_by="instruction")) == ["t5", "t4", "t1", "t3", "t2", "noid", "truncated"]
    assert names(scored.query(order_by="instruction", descending=True)) == ["t2", "t3", "t1", "t4", "t5", "noid",
                                                                            "truncated"]
    assert names(scored.query(order_by="n_steps")) == ["t5", "t3", "t1", "t4", "t2", "noid", "truncated"]
    assert names(scored.query(order_by="n_steps", descending=True)) == ["t2", "t4", "t1", "t3", "t5", "noid",
                                                                        "truncated"]
    assert names(scored.query(order_by="p_success", descending=True))[:3] == ["t1", "t5", "t2"]
    assert names(scored.query(order_by="p_success"))[:3] == ["t2", "t5", "t1"]
    for column in CatalogRow._fields:
        assert len(scored.query(order_by=column)) == 7
    assert names(scored.query(order_by="n_steps", limit=2, offset=1)) == ["t3", "t1"]
    full = scored.query(order_by="duration", descending=True)
    full.clear()  # a caller's list is its own
    pages = [scored.query(order_by="duration", descending=True, limit=3, offset=o) for o in (0, 3, 6)]
    assert sum(pages, []) == scored.query(order_by="duration", descending=True) and len(sum(pages, [])) == 7
    # A write between pages is seen by the next page.
    scored.set_score(pages[2][0].key, Score(p_success=0.01, model="m"))
    assert scored.query(order_by="duration", descending=True, limit=3, offset=6)[0].p_success == 0.01
    with pytest.raises(CatalogError, match="cannot sort"):
        scored.query(order_by="DROP TABLE trajectories")


def test_query_filters_and_search(scored: Catalog):
    def q(text: str = "", **filters) -> set[str]:
        rows = scored.query(text, filters)
        assert scored.count(text, filters) == len(rows)
        return set(names(rows))

    assert q("open") == {"t1", "t4"}
    assert q("OPEN menu") == {"t1"}  # every word, any case
    assert q("open settings") == {"t1", "t4"}  # t4's task is 'settings'
    assert q("t3") == {"t3"}  # ids are searched too
    assert q("100%_") == set()  # no LIKE wildcards
    assert q(success=True) == {"t1", "t4"}
    assert q(success=False) == {"t2", "t5"}
    assert q(success=None) == {"t3"} == q(success="unknown")  # unknown outcome, not the broken units
    assert q(has_error=True) == {"truncated", "noid"}
    assert q(has_error=False) == {"t1", "t2", "t3", "t4", "t5"}
    assert q(task="settings") == {"t1", "t4"}
    assert q(format="native") == q(format=["native", "atif"]) == q() and q(format="atif") == set()
    assert q(scored=True) == {"t1", "t2", "t5"}
    assert q(scored=False) == {"t3", "t4", "truncated", "noid"}
    assert q(min_p_success=0.5) == {"t1", "t5"}
    assert q(max_p_success=0.5) == {"t2"}
    assert q("open", success=True, scored=True, min_p_success=0.8) == {"t1"}
    with pytest.raises(CatalogError, match="unknown catalog filter"):
        scored.query(filters={"colour": "red"})
    assert scored.tasks() == ["search", "settings", "thunderbird", "window"]
    assert scored.formats() == ["native"]


def test_latest_score_is_joined_and_history_kept(scored: Catalog, tree: Path):
    key = str(tree / "a" / "t1")
    row = scored.get(key)
    assert (row.p_success, row.first_error_step) == (0.9, None)
    rec = scored.latest_score(key)
    assert rec.model == "m-new" and rec.step_scores == [0.95, 0.9, 0.9] and (rec.tokens_kept, rec.tokens_total) == (
        12, 100)
    assert scored.info(key)["model"] == "m-new"
    conn = sqlite3.connect(scored.db_path)
    assert conn.execute("SELECT COUNT(*) FROM scores WHERE key = ?", (row.ref,)).fetchone()[0] == 2  # library key
    conn.close()
    # A score of a key the catalog does not hold yet is kept and shows once it is scanned.
    scored.set_score(str(tree / "later"), Score(p_success=0.5, model="m"))
    make_native(tree, "later")
    scored.scan(tree)
    assert scored.get(str(tree / "later")).p_success == 0.5
    assert scored.get(str(tree / "nothing")) is None and scored.info("nothing") is None
    consistent(scored.db_path)


def test_queries_see_writes_from_other_connections_and_threads(tree: Path):
    a = Catalog.for_root(tree)
    assert a.query() == []
    b = Catalog.for_root(tree)
    b.scan(tree)
    assert len(a.query()) == 7  # a's cached rows are dropped: another connection committed
    b.set_score(str(tree / "t5"), Score(p_success=0.25, step_scores=[0.25], model="m"))
    assert a.get(str(tree / "t5")).p_success == 0.25 and a.query(order_by="p_success")[0].p_success == 0.25
    # Scores landing one by one are patched into a's cached rows: the same rows a fresh reader builds.
    for i, key in enumerate(b.keys()):
        b.set_score(key, Score(p_success=i / 10, first_error_step=i % 3, model="m2"))
        row = next(r for r in a.query(order_by="p_success", descending=True) if r.key == key)
        assert (row.p_success, row.first_error_step) == (i / 10, i % 3)
    assert a.query() == Catalog.for_root(tree).query()

    # A scan in a worker thread while this thread queries (WAL: readers do not wait for the writer).
    make_native(tree, "t6")
    seen: list[int] = []
    worker = threading.Thread(target=lambda: a.scan(tree, progress=lambda *_: seen.append(len(a.query()))))
    worker.start()
    while worker.is_alive():
        assert len(a.query()) in (7, 8)
    worker.join()
    assert len(a.query()) == 8 and seen
    a.close()
    b.close()


def test_schema_created_migrated_and_guarded(tmp_path: Path):
    fresh = Catalog(tmp_path / "new" / "c.sqlite")
    assert fresh.schema_version == SCHEMA_VERSION >= 1
    conn = sqlite3.connect(fresh.db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    tables = {n for (n,) in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
    assert {"trajectories", "files", "scores", "latest_scores"} <= tables
    conn.close()

    empty = tmp_path / "empty.sqlite"  # an existing, empty database (version 0) is migrated in place
    sqlite3.connect(empty).close()
    assert Catalog(empty).schema_version == SCHEMA_VERSION

    newer = tmp_path / "newer.sqlite"
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(CatalogError, match="newer than this Rollscope"):
        Catalog(newer)

    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"this is not a database" * 100)
    with pytest.raises(CatalogError, match="garbage.sqlite"):
        Catalog(garbage)

    (tmp_path / "adir.sqlite").mkdir()
    with pytest.raises(CatalogError, match="cannot open the catalog"):
        Catalog(tmp_path / "adir.sqlite")

    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(CatalogError, match="cannot create the catalog folder"):
        Catalog(blocker / "sub" / "c.sqlite")


def test_version_1_catalog_is_migrated_keeping_its_data(tmp_path: Path):
    from gui_app.core.library.catalog import MIGRATIONS
    from gui_app.core.db import statements

    db = tmp_path / "v1.sqlite"
    conn = sqlite3.connect(db, isolation_level=None)
    for statement in statements(MIGRATIONS[0].sql):
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO trajectories (key, id, path, instruction, scanned_at) "
                 "VALUES ('/x', 'x', '/x', 'kept', 0)")
    conn.execute("INSERT INTO scores (key, p_success, scored_at) VALUES ('/x', 0.75, 0)")
    conn.close()
    cat = Catalog(db)
    assert cat.schema_version == SCHEMA_VERSION >= 2
    row = cat.get("/x")
    assert (row.instruction, row.p_success) == ("kept", 0.75) and cat.query()[0] == row


def test_failed_migration_leaves_the_database_at_its_old_version(tmp_path: Path, monkeypatch):
    from gui_app.core.library import catalog as catalog_mod

    db = tmp_path / "c.sqlite"
    Catalog(db).close()
    from gui_app.core.db import Migration

    monkeypatch.setattr(catalog_mod, "MIGRATIONS", (*catalog_mod.MIGRATIONS, Migration(
        SCHEMA_VERSION + 1, "broken", "CREATE TABLE extra (x INTEGER);\nCREATE TABLE extra (y);")))
    monkeypatch.setattr(catalog_mod, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(CatalogError, match=f"migration to schema version {SCHEMA_VERSION + 1} failed"):
        Catalog(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 'extra'").fetchone()[0] == 0
    conn.close()


def test_scan_root_must_exist(tmp_path: Path):
    with pytest.raises(CatalogError, match="no such file or directory"):
        Catalog(tmp_path / "c.sqlite").scan(tmp_path / "missing")


def test_multi_trajectory_file_gets_one_key_per_trajectory(tmp_path: Path):
    root = tmp_path / "mixed"
    make_native(root, "n1")
    tasks = []
    for k, done in enumerate((True, False, True)):
        tasks.append({"task_id": f"task-{k}", "instruction": f"Open item {k}", "task_completed": done,
                      "traj": [{"index": i, "image": f"img_{k}_{i}.png",
                                "value": {"thought": "next", "action": f"Click item {i}",
                                          "code": f"pyautogui.click(x=0.{i + 1}, y=0.5)"}} for i in range(2)]})
    jsonl = root / "agentnet.jsonl"
    jsonl.write_text("\n".join(json.dumps(t) for t in tasks) + "\n", encoding="utf-8")
    cat = Catalog.for_root(root)
    report = cat.scan(root)
    assert report.by_format.get("native") == 1
    rows = [r for r in cat.query(order_by="key") if r.path == str(jsonl)]
    assert [r.key for r in rows] == [f"{jsonl}#{k}" for k in range(3)]
    assert all(r.format == "agentnet" for r in rows) and report.by_format["agentnet"] == 3
    assert [r.success for r in rows] == [True, False, True]
    assert formats.load(rows[1].key).instruction == "Open item 1"
