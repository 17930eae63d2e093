"""Which trajectory a label or a score is about: library keys, unique where formats' own ids are not.

Real collisions: the same OSWorld task run by two models (the example id is the folder name of both runs) and
Harbor's golden ATIF files (all ``session_id = NORMALIZED_SESSION_ID``).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from gui_app import cli
from gui_app.core.trajectory import identity
from gui_app.core.store.record import Annotation
from gui_app.core.library.catalog import MIGRATIONS, Catalog
from gui_app.core.scoring.score import Score
from gui_app.core.store.backends import open_store
from tests.formats import builders as b

EXAMPLE = "bb5e4c0d-f964-439c-97b6-bdb9747de3f4"
GOLDEN = b.REAL / "harbor" / "golden" / "terminus_2"


@pytest.fixture
def library(tmp_path) -> Path:
    """OSWorld results of one task by two models, two Harbor golden files, and a unique run."""
    root = tmp_path / "lib"
    for model in ("gpt-4o", "uitars-1.5"):
        b.osworld_dir(root / "results" / "pyautogui" / "screenshot", video=None, model=model, domain="chrome")
    (root / "harbor").mkdir(parents=True)
    for f in ("hello-world-timeout.trajectory.json", "hello-world-invalid-json.trajectory.json"):
        shutil.copy(GOLDEN / f, root / "harbor" / f)
    b.osworld_dir(root / "other", example_id="only-once", video=None, domain="os")
    return root


def test_keys_are_unique_where_ids_collide(library):
    cat = Catalog.for_root(library)
    cat.scan(library)
    rows = cat.query()
    assert len(rows) == 5 and len({r.ref for r in rows}) == 5
    osw = sorted(r.ref for r in rows if r.id == EXAMPLE)
    assert osw == [f"results/pyautogui/screenshot/gpt-4o/chrome/{EXAMPLE}",
                   f"results/pyautogui/screenshot/uitars-1.5/chrome/{EXAMPLE}"]
    assert sorted(r.ref for r in rows if r.id == "NORMALIZED_SESSION_ID") == [
        "harbor/hello-world-invalid-json.trajectory.json", "harbor/hello-world-timeout.trajectory.json"]
    with pytest.raises(identity.AmbiguousIdError) as exc:
        identity.resolve(EXAMPLE, cat)
    assert exc.value.refs == osw and "2 trajectories" in str(exc.value)
    assert identity.resolve(osw[1], cat) == osw[1]
    assert identity.resolve(str(library / osw[1]), cat) == osw[1]  # a path is accepted too
    assert identity.resolve("only-once", cat) == "other/gpt-4o/os/only-once"
    assert cat.get(osw[0]).key == str(library / osw[0])  # the catalog finds a row by its key or its path
    cat.close()


def _old_catalog(db: Path, library: Path) -> None:
    """A catalog as Rollscope wrote it before library keys (schema 5): rows, and a score keyed by path."""
    conn = sqlite3.connect(db)
    for migration in MIGRATIONS[:5]:  # schema 5: the last before library keys
        conn.executescript(migration.sql)
        conn.execute(f"PRAGMA user_version = {migration.version}")
    runs = [library / "results" / "pyautogui" / "screenshot" / m / "chrome" / EXAMPLE for m in ("gpt-4o", "uitars-1.5")]
    rows = [(str(p), EXAMPLE) for p in runs] + [(str(library / "other" / "gpt-4o" / "os" / "only-once"), "only-once")]
    for key, tid in rows:
        conn.execute("INSERT INTO trajectories (key, id, path, format, instruction, n_steps, scanned_at, search) "
                     "VALUES (?, ?, ?, 'osworld', 'x', 4, 0, ?)", (key, tid, key, tid))
    conn.execute("INSERT INTO scores (key, model, p_success, scored_at) VALUES (?, 'm', 0.25, 0)", (rows[2][0],))
    conn.commit()
    conn.close()


def test_old_store_and_catalog_migrate_without_losing_a_label(library, store_location):
    """On both store backends: the library's SQLite file, and a team's PostgreSQL server."""
    db = library / ".rollscope" / "catalog.sqlite"
    db.parent.mkdir()
    _old_catalog(db, library)
    store = open_store(store_location)  # labels as they were stored: by the trajectories' own ids
    store.save(Annotation(EXAMPLE, "ann", verdict="failure", labels=["action.misalignment"]))
    store.save(Annotation("only-once", "ann", verdict="success"))
    store.set_step_comment("only-once", "ann", 2, "typed into the wrong field")
    store.override_score("only-once", "dana", False, "the file was not saved")
    before = {(a.trajectory_id, a.annotator): a for a in store.annotations()}

    cat = Catalog(db)  # migration 5, then every row gets its library key
    assert cat.schema_version == len(MIGRATIONS) == 17
    assert {r.ref for r in cat.query()} == {f"results/pyautogui/screenshot/gpt-4o/chrome/{EXAMPLE}",
                                             f"results/pyautogui/screenshot/uitars-1.5/chrome/{EXAMPLE}",
                                             "other/gpt-4o/os/only-once"}
    assert cat.get("other/gpt-4o/os/only-once").p_success == 0.25  # the score kept its row

    report = identity.migrate_store(store, cat)
    assert report.moved == {"only-once": "other/gpt-4o/os/only-once"}
    assert list(report.ambiguous) == [EXAMPLE] and len(report.ambiguous[EXAMPLE]) == 2
    assert "rollscope labels rekey" in report.notes()[0]
    after = {(a.trajectory_id, a.annotator): a for a in store.annotations()}
    assert len(after) == len(before)  # nothing lost
    moved = after[("other/gpt-4o/os/only-once", "ann")]
    assert moved.verdict == "success" and moved.step_comments == {2: "typed into the wrong field"}
    assert store.overrides("other/gpt-4o/os/only-once")[0].reason == "the file was not saved"
    assert after[(EXAMPLE, "ann")].labels == ["action.misalignment"]  # ambiguous: left where it was
    trail = store.audit("other/gpt-4o/os/only-once")
    assert trail[-1].field == "trajectory_id" and (trail[-1].old, trail[-1].new) == (
        "only-once", "other/gpt-4o/os/only-once")
    assert identity.migrate_store(store, cat).moved == {}  # idempotent
    store.close()
    cat.close()


def test_a_store_that_comes_back_has_its_labels_moved_then(library, store_location):
    """A team server down when the library opened: the labels move to their keys when the app reopens the store
    (Library.reopen_store), as they would have at opening."""
    from gui_app.core.library.folder import Library

    cat = Catalog.for_root(library)
    cat.scan(library)
    store = open_store(store_location)
    store.save(Annotation("only-once", "ann", verdict="success"))
    store.save(Annotation(EXAMPLE, "ann", verdict="failure"))
    store.close()
    lib = Library(cat, library, store_location=store_location, store_error="server down",
                  _store_root=library)  # as open_library leaves a library whose store could not be opened
    store = lib.reopen_store()
    assert lib.store_error is None
    assert store.get("other/gpt-4o/os/only-once", "ann").verdict == "success"
    assert store.get(EXAMPLE, "ann").verdict == "failure"  # two trajectories have that id: it stays, with a note
    assert [n for n in lib.notes if EXAMPLE in n and "rollscope labels rekey" in n]
    lib.close()


def test_labels_cli_takes_keys_paths_and_unambiguous_ids(library, tmp_path, capsys):
    cat = Catalog.for_root(library)
    cat.scan(library)
    cat.close()
    lines = [{"trajectory_id": "only-once", "verdict": "failure"},
             {"trajectory_id": EXAMPLE, "verdict": "success"},
             {"trajectory_id": f"results/pyautogui/screenshot/uitars-1.5/chrome/{EXAMPLE}", "verdict": "failure"},
             {"trajectory_id": "never-scanned", "verdict": "unsure"}]
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    root = ["--root", str(library)]
    capsys.readouterr()
    assert cli.main(["labels", "import", str(path), "--annotator", "ann", *root, "--json"]) == 1
    out, err = capsys.readouterr()
    res = json.loads(out)
    assert res["records"] == 3 and len(res["skipped"]) == 1
    assert f"{path}:2: field 'trajectory_id': {EXAMPLE!r} is the id of 2 trajectories" in err
    assert f"results/pyautogui/screenshot/gpt-4o/chrome/{EXAMPLE}" in err and "rollscope: note:" in err
    store = open_store(root=library)
    assert sorted(store.trajectory_ids()) == sorted(["other/gpt-4o/os/only-once", "never-scanned",
                                                     f"results/pyautogui/screenshot/uitars-1.5/chrome/{EXAMPLE}"])
    store.close()
    # Commands name a trajectory by key, path or unambiguous id; an ambiguous id is one error line, exit 1.
    assert cli.main(["labels", "show", "only-once", *root, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trajectory_id"] == "other/gpt-4o/os/only-once"
    assert cli.main(["labels", "show", EXAMPLE, *root]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rollscope: error: ") and "give one of their keys" in err[0]
    key = f"results/pyautogui/screenshot/gpt-4o/chrome/{EXAMPLE}"
    assert cli.main(["labels", "override", key, "--by", "dana", "--failure", "--reason", "crashed", *root]) == 0
    capsys.readouterr()
    # Labels stored under an ambiguous id are moved by hand.
    store = open_store(root=library)
    store.save(Annotation(EXAMPLE, "bob", verdict="failure"))
    store.close()
    assert cli.main(["labels", "rekey", EXAMPLE, key, *root, "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"moved": {EXAMPLE: key}}
    store = open_store(root=library)
    assert store.get(key, "bob").verdict == "failure" and store.get(EXAMPLE, "bob") is None
    store.save(Annotation(EXAMPLE, "bob", verdict="success"))  # bob again under the id: moving it would clash
    store.close()
    assert cli.main(["labels", "rekey", EXAMPLE, key, *root]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if not line.startswith("rollscope: note: ")]
    assert len(err) == 1 and err[0].startswith("rollscope: error: ") and "nothing was moved" in err[0]
    store = open_store(root=library)
    assert store.get(key, "bob").verdict == "failure" and store.get(EXAMPLE, "bob").verdict == "success"
    store.close()


def test_scores_follow_a_moved_library(library, tmp_path):
    cat = Catalog.for_root(library)
    cat.scan(library)
    key = str(library / "other" / "gpt-4o" / "os" / "only-once")
    cat.set_score(key, Score(p_success=0.7, first_error_step=2, step_scores=[0.1, 0.2, 0.3, 0.4], model="m",
                             threshold=0.5, success=True))
    ref = cat.get(key).ref
    cat.close()
    moved = tmp_path / "moved"
    shutil.move(str(library), moved)
    cat = Catalog.for_root(moved)
    report = cat.scan(moved)
    assert report.removed == 5 and report.trajectories == 5
    row = cat.get(ref)
    assert row.key == str(moved / "other" / "gpt-4o" / "os" / "only-once")
    assert (row.p_success, row.first_error_step) == (0.7, 2)
    assert cat.latest_score(row.key).step_scores == [0.1, 0.2, 0.3, 0.4]
    cat.close()


@pytest.mark.parametrize("key,root,expected", [
    ("/lib/a/b", "/lib", "a/b"), ("/lib/x.eval#3", "/lib", "x.eval#3"), ("/other/c", "/lib", "/other/c"),
    ("/lib", "/lib", "."), ("/lib/a#b", "/lib", "a#b"), ("/lib2/a", "/lib", "/lib2/a"), ("/lib/a", None, "/lib/a"),
])
def test_library_key(key, root, expected):
    assert identity.library_key(key, root) == expected
