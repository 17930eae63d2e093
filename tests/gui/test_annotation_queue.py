"""Labelling queues and review docked in the main window, driven from the keyboard on the bundled samples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gui_app.core.library.catalog import Catalog
from gui_app.core.annotation.queue import LabelQueue
from gui_app.core.scoring.score import Score
from gui_app.core.store.backends import open_store
from gui_app.qt.action_table import ShortcutsDialog
from gui_app.qt.main_window import MainWindow
from gui_app.qt.notify import Notifier
from gui_app.qt.queue_view import QueueController, QueueView
from gui_app.qt.workers import Runner

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "resources" / "samples"

pytestmark = pytest.mark.skipif(not (SAMPLES / "miniwob").is_dir(), reason="no bundled samples")
CTRL = Qt.KeyboardModifier.ControlModifier


@pytest.fixture
def samples(tmp_path) -> Path:
    """A copy of the samples: opening a folder writes its catalog and label store inside it. An index left in
    the checkout by running the app on the samples is not copied (its keys name the original folder)."""
    return Path(shutil.copytree(SAMPLES, tmp_path / "samples", ignore=shutil.ignore_patterns(".rollscope")))


@pytest.fixture
def win(qtbot, samples):
    w = MainWindow()
    qtbot.addWidget(w)
    w.show()
    w.set_annotator("ann")
    with qtbot.waitSignal(w.scanner.scanned, timeout=120_000):
        w.open_path(samples)
    qtbot.waitUntil(lambda: not w.library.model.pending, timeout=30_000)
    w.activateWindow()
    qtbot.waitActive(w)
    w.video.setFocus()  # the annotator watches the run; label keys and shortcuts reach the window from there
    yield w
    w.close()


def press(qtbot, w: MainWindow, key: Qt.Key, mods: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier,
          opens: bool = True) -> None:
    """A key typed into the window (through Qt's shortcut map); waits for the trajectory it opens, if any."""
    if not opens:
        qtbot.keyClick(w.windowHandle(), key, mods)
        return
    with qtbot.waitSignal(w.loader.loaded, timeout=60_000):
        qtbot.keyClick(w.windowHandle(), key, mods)


def test_failures_queue_labelled_from_the_keyboard_then_reviewed(qtbot, win):
    w, session = win, win.session
    store, catalog = w.session.library.store, w.session.library.catalog
    press(qtbot, w, Qt.Key.Key_1, CTRL)  # Ctrl+1: failures first, built in a worker; its first item opens
    q = w.queue
    assert q.name == "ann: failures first" and q.active and w.docks["queue"].isVisible()
    rows = {r.ref: r for r in catalog.query()}  # queue items and labels are keyed by the library key
    # Every bundled sample (MiniWoB, derived, OSWorld, plain video, desktop) is in the queue.
    assert len(q.items) == len(rows) == catalog.count() >= 16
    outcomes = [rows[it.trajectory_id].success for it in q.items]
    assert outcomes == sorted(outcomes, key=lambda s: {False: 0, None: 1, True: 2}[s]) and outcomes[0] is False
    first, second, third = q.items[:3]
    assert session.trajectory.key == first.trajectory_id
    assert w.queue_view.rows()[0] == f"· 1. {first.trajectory_id}"

    qtbot.keyClick(w.windowHandle(), Qt.Key.Key_F)  # verdict: failure
    qtbot.keyClick(w.windowHandle(), Qt.Key.Key_Right)  # step 1 ...
    qtbot.keyClick(w.windowHandle(), Qt.Key.Key_R)  # ... is the root cause
    press(qtbot, w, Qt.Key.Key_Return)  # Enter: save & next -> the queue's next item, in the viewer
    assert session.trajectory.key == second.trajectory_id and w.loader.current_key == second.key
    rec = store.get(first.trajectory_id, "ann")
    assert (rec.verdict, rec.root_cause_step) == ("failure", 1) and rec.time_spent is not None
    qtbot.keyClick(w.windowHandle(), Qt.Key.Key_U)
    press(qtbot, w, Qt.Key.Key_Return)
    assert session.trajectory.key == third.trajectory_id
    assert store.get(second.trajectory_id, "ann").verdict == "unsure"
    n = len(rows)
    assert q.progress() == (2, n) and w.queue_view.progress_label.text() == f"2/{n} labelled by ann"
    assert w.queue_view.rows()[:3] == [f"✓ 1. {first.trajectory_id}", f"✓ 2. {second.trajectory_id}",
                                       f"· 3. {third.trajectory_id}"]
    assert LabelQueue(store, "ann: failures first").progress()["done"] == 2  # the same queue the CLI reads

    # ] and [ move through the queue without labelling; Enter skips what is already labelled.
    press(qtbot, w, Qt.Key.Key_BracketLeft)
    press(qtbot, w, Qt.Key.Key_BracketLeft)
    assert session.trajectory.key == first.trajectory_id
    press(qtbot, w, Qt.Key.Key_Return)
    assert session.trajectory.key == third.trajectory_id  # the next *unlabelled* one

    # Review the first one side by side: a second annotator labelled it differently; adjudicate.
    press(qtbot, w, Qt.Key.Key_BracketLeft)
    press(qtbot, w, Qt.Key.Key_BracketLeft)
    store.set_field(first.trajectory_id, "bob", "verdict", "success")
    press(qtbot, w, Qt.Key.Key_A, CTRL | Qt.KeyboardModifier.ShiftModifier, opens=False)
    review = w.review
    qtbot.waitUntil(review.isVisible, timeout=5000)
    assert w.action_map["toggle_review"].isChecked()
    assert review.trajectory_id == first.trajectory_id
    assert review.cell("verdict", "ann") == "failure" and review.cell("verdict", "bob") == "success"
    assert review.is_highlighted("verdict", "ann")
    with qtbot.waitSignal(review.final_changed, timeout=10_000):  # written off the GUI thread
        review.adopt("ann")
    assert store.final(first.trajectory_id).verdict == "failure" and review.cell("verdict", "Final") == "failure"
    # The review follows the viewer.
    press(qtbot, w, Qt.Key.Key_BracketRight)
    assert review.trajectory_id == second.trajectory_id and review.cell("verdict", "ann") == "unsure"

    # Ctrl+0 leaves the queue: Enter follows the library again.
    press(qtbot, w, Qt.Key.Key_0, CTRL, opens=False)
    assert not q.active and w.queue_view.picker.currentIndex() == 0
    library_next = w.library.key_relative(+1)
    press(qtbot, w, Qt.Key.Key_Return)
    assert w.loader.current_key == library_next


def test_queue_actions_are_listed_by_the_question_mark_dialog(qtbot):
    dialog = ShortcutsDialog()
    qtbot.addWidget(dialog)
    rows = {label.split(": ", 1)[1]: keys for keys, label, _ in dialog.rows()}
    assert rows["Queue: failures first"] == "Ctrl+1" and rows["Next queue item"] == "]"
    assert rows["Review and adjudicate"] == "Ctrl+Shift+A" and rows["Leave the queue"] == "Ctrl+0"


def test_controller_builds_disagreement_first_and_reads_cli_queues(qtbot, samples, tmp_path):
    """The queue model from a bare catalog and store, no main window."""
    catalog = Catalog(tmp_path / "c.sqlite")
    catalog.scan(samples)
    store = open_store(tmp_path / "labels.sqlite")
    rows = {r.id: r for r in catalog.query()}
    # The model says success on two env failures and failure on one env success: they disagree.
    disagree_ids = ["miniwob-enter-text-s900800", "miniwob-click-dialog-s901000", "miniwob-click-tab-s901100"]
    for tid, p in zip(disagree_ids, (0.9, 0.8, 0.1), strict=True):
        catalog.set_score(rows[tid].key, Score(p_success=p, threshold=0.5, success=p >= 0.5, model="m"))
    disagree = [rows[t].ref for t in disagree_ids]  # queue items are keyed by the library key
    runner = Runner()
    ctl = QueueController(runner, Notifier(), "bob")
    view = QueueView(ctl)
    qtbot.addWidget(view)
    ctl.set_library(catalog, store)
    opened: list[str] = []
    ctl.open_requested.connect(opened.append)
    with qtbot.waitSignal(ctl.started, timeout=30_000):
        view.build_buttons["disagreement"].click()
    assert ctl.name == "bob: model disagrees with outcome"
    # Disagreement first, then failures before successes (the next ordering breaks ties).
    assert [it.trajectory_id for it in ctl.items[:3]] == sorted(disagree[:2]) + [disagree[2]]
    assert opened == [ctl.items[0].key]
    # A queue built on the command line for two annotators: each sees only their own items.
    LabelQueue.build(store, "pair", list(rows.values()), ["ann", "bob"], k=1)
    ctl.set_library(catalog, store)  # re-reads the store's queues
    assert "pair" in ctl.names() and view.picker.findData("pair") > 0
    view.picker.setCurrentIndex(view.picker.findData("pair"))
    view.picker.activated.emit(view.picker.currentIndex())
    # k=1 over two annotators: bob gets half of the items (the larger half when their number is odd).
    assert ctl.name == "pair" and len(ctl.items) in (len(rows) // 2, (len(rows) + 1) // 2)
    assert {it.annotator for it in ctl.items} == {"bob"}
    assert opened[-1] == ctl.items[0].key
    runner.shutdown()
    store.close()
    catalog.close()
    QApplication.processEvents()


def test_an_open_queue_is_claimed_item_by_item_by_two_annotators(qtbot, samples, tmp_path):
    """A team's open queue (built without annotators, k=1): two annotators' apps each claim their next item in a
    worker, never the same one, and the next claim follows a saved label."""
    catalog = Catalog(tmp_path / "c.sqlite")
    catalog.scan(samples)
    store = open_store(tmp_path / "labels.sqlite")
    rows = sorted(catalog.query(), key=lambda r: r.id)
    LabelQueue.build(store, "team", rows, [], k=1, order=["id"])
    runner = Runner()
    opened: dict[str, list[str]] = {"ann": [], "bob": []}
    ctls = {}
    for who in ("ann", "bob"):
        ctl = QueueController(runner, Notifier(), who)
        ctl.set_library(catalog, store)
        ctl.open_requested.connect(opened[who].append)
        ctls[who] = ctl
        with qtbot.waitSignal(ctl.open_requested, timeout=30_000):
            ctl.select("team")
        assert ctl.open_queue
    assert opened == {"ann": [rows[0].key], "bob": [rows[1].key]}
    ann = ctls["ann"]
    ann.current_id = rows[0].ref  # queue items and labels are keyed by the library key
    assert ann.advance() and opened["ann"][-1] == rows[0].key  # still unlabelled: it stays, no new claim
    assert len(store.queue_assignments("team", "ann")) == 1
    store.set_field(rows[0].ref, "ann", "verdict", "failure")
    with qtbot.waitSignal(ann.open_requested, timeout=30_000):
        ann.advance()
    assert opened["ann"][-1] == rows[2].key  # rows[1] is bob's
    assert {a for _p, t, _k, a in store.queue_assignments("team") if t == rows[1].ref} == {"bob"}
    runner.shutdown()
    store.close()
    catalog.close()
    QApplication.processEvents()
