"""One trajectory key (issue 25): the library key is a typed field of every loaded trajectory, and labels and scores
are keyed by it, so a library moved elsewhere and rescanned keeps both on the same runs in every view.

Before, the key reached the labels through ``traj.metadata["ref"]`` (set by the app only, falling back in silence
to the format's id, which two runs share here), and scores were keyed by an absolute path the caller had to make.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gui_app.core.trajectory import formats
from gui_app.core.trajectory import identity
from gui_app.core.store.record import Annotation
from gui_app.core.library.catalog import Catalog
from gui_app.core.library.folder import Library, open_library, store_label_status
from gui_app.core.scoring.score import Score
from tests.gui.library_fixtures import write_agentnet, write_native

# Two runs with one format id (as every model's OSWorld run of a task has), and a file of three trajectories.
SAME_ID = ("model-a/task", "model-b/task")
LABELS = {"model-a/task": "success", "model-b/task": "failure", "runs.jsonl#1": "unsure"}
SCORES = {"model-a/task": 0.81, "model-b/task": 0.12, "runs.jsonl#2": 0.55}


def make(root: Path) -> Path:
    write_native(root / "model-a" / "task", id="same", instruction="Run of model A", success=True)
    write_native(root / "model-b" / "task", id="same", instruction="Run of model B", success=False)
    write_agentnet(root / "runs.jsonl", 3)
    return root


def score_and_label(lib: Library, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Scores written under each name a caller may have (the catalog key, a relative path, the library key);
    labels under the key each load gives."""
    cat, store = lib.catalog, lib.store
    assert store is not None
    cat.set_score(str(root / "model-a" / "task"), Score(p_success=SCORES["model-a/task"], model="m"))
    monkeypatch.chdir(root.parent)  # `rollscope score lib/model-b/task --catalog ...`: no abspath by the caller
    cat.set_score(f"{root.name}/model-b/task", Score(p_success=SCORES["model-b/task"], model="m"))
    cat.set_score("runs.jsonl#2", Score(p_success=SCORES["runs.jsonl#2"], model="m"))
    for row in cat.query():
        traj = formats.load(row.key, library_root=root)
        if traj.key in LABELS:
            store.save(Annotation(traj.key, "ann", verdict=LABELS[traj.key]))


def check_every_view(lib: Library, root: Path) -> None:
    cat, store = lib.catalog, lib.store
    assert store is not None
    rows = cat.query(order_by="key")
    assert sorted(r.ref for r in rows) == sorted([*SAME_ID, "runs.jsonl#0", "runs.jsonl#1", "runs.jsonl#2"])
    assert sorted(r.id for r in rows if r.ref in SAME_ID) == ["same", "same"]  # the format's id names neither
    status = store_label_status(store)(rows)  # the library view's label column
    for row in rows:
        traj = formats.load(row.key, library_root=root)
        assert traj.key == row.ref and row.key == str(root / row.ref.split("#")[0]) + (
            "#" + row.ref.split("#")[1] if "#" in row.ref else "")
        assert row.p_success == SCORES.get(row.ref)  # the library's rows
        score = cat.latest_score(traj.key)  # the score the viewer opens with, by the trajectory's own key
        assert (score.p_success if score else None) == SCORES.get(row.ref)
        assert cat.latest_score(row.key) == score
        record = store.get(traj.key, "ann")  # the label panel
        assert (record.verdict if record else None) == LABELS.get(row.ref)
        assert status.get(row.key) == LABELS.get(row.ref)
    assert {a.trajectory_id for a in store.annotations()} == set(LABELS)  # the labels list


def test_a_moved_library_keeps_labels_and_scores_on_the_same_runs(tmp_path, monkeypatch):
    root = make(tmp_path / "lib")
    lib = open_library(root)
    lib.catalog.scan(root)
    score_and_label(lib, root, monkeypatch)
    check_every_view(lib, root)
    lib.close()

    moved = tmp_path / "elsewhere" / "lib"
    moved.parent.mkdir()
    shutil.move(str(root), moved)
    lib = open_library(moved)
    report = lib.catalog.scan(moved)
    assert report.removed == 3 and report.trajectories == 5
    check_every_view(lib, moved)
    lib.close()


def test_every_load_gives_the_key(tmp_path):
    root = make(tmp_path / "lib")
    run = root / "model-a" / "task"
    assert formats.load(run, library_root=root).key == "model-a/task"
    assert formats.load(f"{root / 'runs.jsonl'}#1", library_root=root).key == "runs.jsonl#1"
    assert [t.key for t in formats.load_all(root / "runs.jsonl", library_root=root)] == [
        "runs.jsonl#0", "runs.jsonl#1", "runs.jsonl#2"]
    # One trajectory opened on its own labels into the folder holding it: its name there (as open_library keys it).
    assert formats.load(run, library_root=run).key == "task"
    lib = open_library(run)
    lib.catalog.scan(lib.root)
    assert [r.ref for r in lib.catalog.query()] == ["task"]
    lib.close()
    # No library at all: the absolute path, never the format's id (two runs here share it).
    assert formats.load(run).key == str(run)
    assert formats.load(root / "model-b" / "task").key == str(root / "model-b" / "task")
    assert formats.load(f"{root / 'runs.jsonl'}#2").key == f"{root / 'runs.jsonl'}#2"
    # A unit outside the library root keeps its absolute path.
    assert formats.load(run, library_root=root / "model-b").key == str(run)


@pytest.mark.parametrize(("key", "root", "expected"), [
    ("/lib/a", "/lib", "a"), ("/lib/f.jsonl#2", "/lib", "f.jsonl#2"), ("/lib/run", "/lib/run", "run"),
    ("/lib/f.jsonl#2", "/lib/f.jsonl", "f.jsonl#2"), ("/lib/a", None, "/lib/a"), ("/lib2/a", "/lib", "/lib2/a"),
])
def test_trajectory_key(key, root, expected):
    assert identity.trajectory_key(key, root) == expected


def test_score_key_names_one_row_by_any_of_its_names(tmp_path, monkeypatch):
    root = make(tmp_path / "lib")
    with Catalog.for_root(root) as cat:
        cat.scan(root)
        path = str(root / "model-b" / "task")
        monkeypatch.chdir(root / "model-b")
        # Scores are stored under the library key (migration 10), whichever name the run is given by.
        names = (path, "model-b/task", "task", f"{root}/model-b/./task")
        assert {cat.score_key(n) for n in names} == {"model-b/task"}
        assert cat.score_key(f"{root / 'runs.jsonl'}#1") == cat.score_key("runs.jsonl#1") == "runs.jsonl#1"
        # Not scanned yet: the library key its row will get.
        assert cat.score_key(str(root / "later")) == "later"
        assert cat.score_key("later/run") == "later/run"
