"""The app on a library moved elsewhere: every run opens with its own labels and score, found by its key (issue 25).

The library, its scores and labels are made as in ``tests/test_trajectory_key.py`` (two runs sharing one format id,
three runs in one file); here the session, the labelling model and the score the viewer opens with are checked.
"""

from __future__ import annotations

import shutil

from gui_app.core.library.folder import open_library
from gui_app.core.trajectory.model import Trajectory
from gui_app.qt.labelling import Labelling
from gui_app.qt.main_window import MainWindow
from gui_app.qt.session import Session
from gui_app.qt.workers import JobQueue, Runner
from tests.test_trajectory_key import LABELS, SCORES, make, score_and_label
from tests.gui.library_fixtures import open_and_wait


def test_the_app_opens_a_moved_library_with_its_labels_and_scores(qtbot, tmp_path, monkeypatch):
    root = make(tmp_path / "lib")
    lib = open_library(root)
    lib.catalog.scan(root)
    score_and_label(lib, root, monkeypatch)
    lib.close()
    moved = tmp_path / "elsewhere" / "lib"
    moved.parent.mkdir()
    shutil.move(str(root), moved)

    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.set_annotator("ann")
    open_and_wait(qtbot, w, moved, timeout=120_000)
    assert w.session.library is not None
    rows = w.session.library.catalog.query(order_by="key")
    assert len(rows) == 5
    for row in rows:
        if w.session.key != row.key:
            with qtbot.waitSignal(w.loader.loaded, timeout=60_000):
                assert w.library.select_key(row.key)
        traj = w.session.trajectory
        assert traj is not None and traj.key == row.ref == w.labelling.trajectory_id
        assert (w.session.scores.p_success if w.session.scores else None) == SCORES.get(row.ref)
        record = w.labelling.record
        assert record is not None and record.verdict == LABELS.get(row.ref)
    w.close()


def test_a_trajectory_without_a_key_is_not_labelled_under_its_id(qtbot, tmp_path):
    """Built in memory, a trajectory has no key: the labelling model labels nothing rather than use its format's
    id (which other runs may share)."""
    from gui_app.core.store.backends import open_store

    store = open_store(tmp_path / "labels.sqlite")
    runner = Runner()
    session = Session()
    model = Labelling(session, JobQueue(runner), store, annotator="ann")
    session.set_trajectory(Trajectory(id="same"))
    assert model.trajectory is not None and model.trajectory_id is None and model.record is None
    session.set_trajectory(Trajectory(id="same", key="model-a/task"))
    assert model.trajectory_id == "model-a/task" and model.record is not None
    runner.shutdown()
    store.close()
