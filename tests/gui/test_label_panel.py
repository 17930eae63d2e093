"""LabelPanel from bare models: a Labelling model over a Session with an in-memory trajectory and a real SQLite
store, writing through the app's one write path (a JobQueue: the writes land in a worker, the tests wait for them)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui_app.core.annotation import taxonomy
from gui_app.core.store.backends import open_store
from gui_app.core.trajectory.model import Step, Trajectory
from gui_app.qt.label_panel import LabelPanel
from gui_app.qt.labelling import Labelling
from gui_app.qt.session import Session
from gui_app.qt.workers import JobQueue, Runner

# the offscreen platform says this whenever a shown top-level widget's size constraints change
pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


def traj(tid: str, n: int = 6) -> Trajectory:
    steps = [Step(index=i, action=f"click {i}", extra={"agent": "Planner" if i % 2 else "Executor"}) for i in range(n)]
    return Trajectory(id=tid, instruction=f"instruction of {tid}", source_format="native", source_path="", steps=steps,
                      key=tid)  # its library key: what its labels are keyed by


def labelled_panel(qtbot, store, session, writes, annotator="alice"):
    """A panel over a bare labelling model of ``session`` writing into ``store`` through ``writes``."""
    model = Labelling(session, writes, store, taxonomy.get("computer_use"), annotator)
    panel = LabelPanel(model)
    qtbot.addWidget(panel)
    model.start()  # labelling, as focusing the panel does (the offscreen platform gives no bare widget focus events)
    return panel, model


def queued_panel(qtbot, store):
    """A panel on ``t1`` writing into ``store`` through the app's write queue (a worker), as in the main window;
    returns it, its model and the runner to shut down."""
    session = Session()
    session.set_trajectory(traj("t1"))
    runner = Runner()
    panel, model = labelled_panel(qtbot, store, session, JobQueue(runner))
    panel.show()
    panel.setFocus()
    return panel, model, runner


@pytest.fixture
def setup(qtbot, tmp_path):
    store = open_store(tmp_path / "labels.sqlite")
    panel, model, runner = queued_panel(qtbot, store)
    yield model.session, store, panel, model
    runner.shutdown()
    store.close()


def key(qtbot, panel, *keys):
    for k in keys:
        qtbot.keyClick(panel, k)


def settle(qtbot, model, timeout=10_000):
    """Wait until every write queued so far has landed (or failed)."""
    qtbot.waitUntil(lambda: model.pending_writes == 0, timeout=timeout)


def test_the_panel_is_a_view_over_a_bare_model(qtbot, setup):
    """What the model says, the panel shows; what is done in the panel goes through the model's setters."""
    session, store, panel, model = setup
    model.set_verdict("success")  # through the model, not the panel
    assert panel.verdict_buttons["success"].isChecked()  # shown at once, before the write has landed
    assert panel.state_label.text() == "… saving"
    settle(qtbot, model)
    assert "saved" in panel.state_label.text()
    model.toggle_label("computer_use:input.typo")
    assert panel._items["computer_use:input.typo"].checkState(0) == Qt.CheckState.Checked
    model.type_key_digit("2")
    assert panel.keys_label.text().startswith("key 2…")
    model.clear_key_hint()
    assert panel.keys_label.text() == ""
    panel.verdict_buttons["failure"].click()  # the panel's widgets set the model
    assert model.record.verdict == "failure"
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "failure"
    model.set_store(None, "the server is down")  # read-only: nothing to edit, nothing stale shown
    assert not panel.tree.isEnabled() and "READ-ONLY" in panel.state_label.text()
    assert not panel.verdict_buttons["failure"].isChecked()
    model.set_store(store)
    assert panel.tree.isEnabled() and panel.verdict_buttons["failure"].isChecked()
    session.set_trajectory(None)
    assert panel.title.text() == "No trajectory open" and not panel.next_button.isEnabled()


def test_keyboard_labelling_goes_straight_to_the_store(qtbot, setup):
    _session, store, panel, model = setup
    key(qtbot, panel, Qt.Key.Key_F)
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "failure"
    assert panel.verdict_buttons["failure"].isChecked() and model.save_state == "saved"
    assert "saved" in panel.state_label.text()
    # two-digit key hint: 2 then 2 = input.typo; 1 then 1 = grounding.wrong_element
    key(qtbot, panel, Qt.Key.Key_2)
    settle(qtbot, model)
    assert store.get("t1", "alice").labels == []  # half a hint does nothing yet
    assert "2" in panel.keys_label.text()
    key(qtbot, panel, Qt.Key.Key_2, Qt.Key.Key_1, Qt.Key.Key_1)
    settle(qtbot, model)
    assert store.get("t1", "alice").labels == ["computer_use:grounding.wrong_element", "computer_use:input.typo"]
    assert panel._items["computer_use:input.typo"].checkState(0) == Qt.CheckState.Checked
    key(qtbot, panel, Qt.Key.Key_9)  # single-digit hint: 'other'
    settle(qtbot, model)
    assert "computer_use:other" in store.get("t1", "alice").labels
    key(qtbot, panel, Qt.Key.Key_9)  # toggles off
    settle(qtbot, model)
    assert "computer_use:other" not in store.get("t1", "alice").labels
    key(qtbot, panel, Qt.Key.Key_V)  # cycles failure -> unsure
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "unsure"
    key(qtbot, panel, Qt.Key.Key_S)
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "success"


def test_root_cause_and_cascade_follow_the_session_step_and_emit_marks(qtbot, setup):
    session, store, panel, model = setup
    session.set_step(3)
    with qtbot.waitSignal(model.marks_changed, check_params_cb=lambda m: m == {3: "root_cause"}):
        key(qtbot, panel, Qt.Key.Key_R)
    settle(qtbot, model)
    # stored from 0, read from 1: the fourth step
    assert store.get("t1", "alice").root_cause_step == 3 and panel.root_label.text() == "step 4"
    session.set_step(4)
    with qtbot.waitSignal(model.marks_changed, check_params_cb=lambda m: m == {3: "root_cause", 4: "cascade"}):
        key(qtbot, panel, Qt.Key.Key_C)
    settle(qtbot, model)
    assert [c.step for c in store.get("t1", "alice").cascading] == [4]
    key(qtbot, panel, Qt.Key.Key_R)  # at step 4 now: the root cause moves there
    settle(qtbot, model)
    assert store.get("t1", "alice").root_cause_step == 4
    assert model.marks == {4: "root_cause"}


def test_undo_redo_over_store_operations(qtbot, setup):
    _session, store, panel, model = setup
    key(qtbot, panel, Qt.Key.Key_F, Qt.Key.Key_3, Qt.Key.Key_2)
    settle(qtbot, model)
    assert store.get("t1", "alice").labels == ["computer_use:sequence.premature_stop"]
    qtbot.keyClick(panel, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot, model)
    assert store.get("t1", "alice").labels == []
    qtbot.keyClick(panel, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot, model)
    # the undo left nothing labelled: the record is removed, not kept empty
    assert store.get("t1", "alice") is None and not panel.verdict_buttons["failure"].isChecked()
    qtbot.keyClick(panel, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "failure"
    panel.redo_button.click()
    settle(qtbot, model)
    assert store.get("t1", "alice").labels == ["computer_use:sequence.premature_stop"]
    # every step of that dance is in the audit trail
    fields = [e.field for e in store.audit("t1")]
    assert fields.count("verdict") == 3 and fields.count("labels[computer_use:sequence.premature_stop]") == 3


def test_text_fields_autosave_after_a_pause_and_on_enter(qtbot, setup):
    _session, store, panel, model = setup
    panel.texts["evidence"].setFocus()
    qtbot.keyClicks(panel.texts["evidence"], "typed Bostn")
    assert model.save_state == "pending"
    qtbot.waitUntil(lambda: (store.get("t1", "alice") or model.record).evidence == "typed Bostn", timeout=3000)
    settle(qtbot, model)
    assert model.save_state == "saved"
    panel.texts["notes"].setPlainText("half a thought")  # not yet written...
    panel.setFocus()
    with qtbot.waitSignal(model.next_requested):
        key(qtbot, panel, Qt.Key.Key_Return)  # ...Enter writes it before asking for the next item
    rec = store.get("t1", "alice")
    assert rec.notes == "half a thought" and rec.time_spent is not None and rec.time_spent >= 0


def test_step_comment_and_mistake_agent(qtbot, setup):
    session, store, panel, model = setup
    session.set_step(2)
    panel.comment_edit.setFocus()
    qtbot.keyClicks(panel.comment_edit, "hesitates")
    qtbot.keyClick(panel.comment_edit, Qt.Key.Key_Return)  # ends the comment, does not move to the next item
    settle(qtbot, model)
    assert not model.waiting
    assert store.get("t1", "alice").step_comments == {2: "hesitates"}
    assert model.marks == {2: "comment"}
    assert [panel.agent_combo.itemText(i) for i in range(panel.agent_combo.count())] == ["", "Executor", "Planner"]
    panel.agent_combo.setCurrentIndex(2)
    panel.agent_combo.activated.emit(2)
    settle(qtbot, model)
    assert store.get("t1", "alice").mistake_agent == "Planner"


def test_switching_trajectories_keeps_work_with_its_own_record(qtbot, setup):
    session, store, panel, model = setup
    key(qtbot, panel, Qt.Key.Key_F)
    panel.texts["notes"].setPlainText("notes for t1")  # typed, timer not yet fired
    session.set_trajectory(traj("t2"))
    settle(qtbot, model)
    assert store.get("t1", "alice").notes == "notes for t1"  # written to t1, not t2
    assert store.get("t2", "alice") is None and panel.texts["notes"].toPlainText() == ""
    assert model.undo_stack.canUndo()  # t1's changes stay undoable after moving on (see the undo-after-Enter test)
    key(qtbot, panel, Qt.Key.Key_U)
    settle(qtbot, model)
    assert store.get("t2", "alice").verdict == "unsure"
    session.set_trajectory(traj("t1"))
    assert panel.verdict_buttons["failure"].isChecked() and panel.texts["notes"].toPlainText() == "notes for t1"


def test_a_failed_write_is_shown_not_swallowed(qtbot, setup):
    _session, store, panel, model = setup
    store.close()  # the store goes away under the panel (disk gone, file locked...)
    with qtbot.waitSignal(model.save_failed):
        key(qtbot, panel, Qt.Key.Key_F)
    assert model.save_state == "error" and "NOT SAVED" in panel.state_label.text()
    assert not model.undo_stack.canUndo()  # nothing to undo: nothing was written


def test_clicking_a_label_in_the_tree_and_window_shortcuts_do_not_steal_keys(qtbot, setup):
    from PySide6.QtGui import QAction, QKeySequence
    from PySide6.QtWidgets import QMainWindow

    _session, store, panel, model = setup
    item = panel._items["computer_use:input.swapped_fields"]
    item.setCheckState(0, Qt.CheckState.Checked)
    settle(qtbot, model)
    assert store.get("t1", "alice").labels == ["computer_use:input.swapped_fields"]
    # a main window with F bound to something else (zoom to fit): with the panel focused, f sets the verdict;
    # elsewhere in the window, F still reaches the window's action
    from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

    win = QMainWindow()
    qtbot.addWidget(win)
    fired = []
    act = QAction("zoom", win)
    act.setShortcut(QKeySequence("F"))
    act.triggered.connect(lambda: fired.append(True))
    win.addAction(act)
    central = QWidget()
    lay = QVBoxLayout(central)
    other = QPushButton("video")
    bob = Labelling(_session, model.writes, store, taxonomy.get("computer_use"), "bob")
    docked = LabelPanel(bob)
    lay.addWidget(other)
    lay.addWidget(docked)
    win.setCentralWidget(central)
    win.show()
    qtbot.waitExposed(win)
    win.activateWindow()
    qtbot.waitUntil(lambda: win.isActiveWindow())
    other.setFocus()
    qtbot.keyClick(other, Qt.Key.Key_F)
    assert fired == [True]
    docked.setFocus()
    qtbot.keyClick(docked, Qt.Key.Key_F)
    settle(qtbot, bob)
    assert store.get("t1", "bob").verdict == "failure"
    assert fired == [True]


def test_text_change_is_undoable_and_pending_text_is_never_clobbered(qtbot, setup):
    _session, store, panel, model = setup
    panel.texts["evidence"].setPlainText("first")
    key(qtbot, panel, Qt.Key.Key_F)  # a reload while 'first' is pending must not wipe it
    settle(qtbot, model)
    assert panel.texts["evidence"].toPlainText() == "first"
    panel.commit_texts()
    settle(qtbot, model)
    assert store.get("t1", "alice").evidence == "first"
    panel.setFocus()
    qtbot.keyClick(panel, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot, model)
    assert store.get("t1", "alice").evidence is None and panel.texts["evidence"].toPlainText() == ""
    assert store.get("t1", "alice").verdict == "failure"


def _lock(path):
    """Another process's connection holding the store's write lock (what a second app instance or a script does)."""
    import sqlite3

    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    return other


def test_a_locked_store_never_freezes_the_panel_and_the_write_lands(qtbot, setup):
    import time

    from PySide6.QtCore import QTimer

    _session, store, panel, model = setup
    other = _lock(store.path)
    t0 = time.monotonic()
    key(qtbot, panel, Qt.Key.Key_F, Qt.Key.Key_1, Qt.Key.Key_1)  # a verdict and a label, while the lock is held
    assert time.monotonic() - t0 < 5.0  # the keys returned at once, not after the 10 s busy timeout
    assert model.save_state == "saving" and model.pending_writes == 2 and "saving" in panel.state_label.text()
    assert model.record.verdict == "failure" and panel.verdict_buttons["failure"].isChecked()  # shown at once
    ticks: list[int] = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(1))
    timer.start(10)
    qtbot.waitUntil(lambda: len(ticks) >= 10, timeout=5000)  # the event loop keeps turning meanwhile
    timer.stop()
    assert store.get("t1", "alice") is None and model.pending_writes == 2  # still waiting for the lock
    with qtbot.waitSignal(model.next_requested, timeout=30_000):
        model.finish()  # Enter while the writes wait: the next item opens once they have landed
        other.execute("COMMIT")
    other.close()
    rec = store.get("t1", "alice")
    assert (rec.verdict, rec.labels) == ("failure", ["computer_use:grounding.wrong_element"])
    assert rec.time_spent is not None and model.save_state == "saved" and model.pending_writes == 0


def test_a_store_locked_for_too_long_reports_not_saved(qtbot, setup, monkeypatch):
    from gui_app.core.store.sqlite import SqliteAnnotationStore

    _session, store, panel, model = setup
    monkeypatch.setattr(SqliteAnnotationStore, "RETRIES", 2)
    store.busy_timeout = 0.05  # new connections (the worker's) give up quickly
    other = _lock(store.path)
    try:
        with qtbot.waitSignal(model.save_failed, timeout=30_000) as failed:
            key(qtbot, panel, Qt.Key.Key_F)
        assert "stayed locked" in failed.args[0] and "NOT SAVED" in panel.state_label.text()
        assert model.record.verdict is None and not panel.verdict_buttons["failure"].isChecked()  # the truth
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_viewing_creates_no_record_and_time_goes_to_labelled_runs_only(qtbot, setup):
    session, store, panel, model = setup
    session.set_trajectory(traj("t2"))  # t1 was only looked at
    key(qtbot, panel, Qt.Key.Key_Return)  # Enter on an unlabelled run moves on without writing anything
    session.set_trajectory(traj("t3"))
    qtbot.waitUntil(lambda: not model.waiting)
    assert model.pending_writes == 0
    assert store.annotations() == [] and store.audit() == []
    key(qtbot, panel, Qt.Key.Key_F)
    session.set_trajectory(traj("t4"))  # leaving a labelled run adds the time spent on it
    settle(qtbot, model)
    rec = store.get("t3", "alice")
    assert rec.verdict == "failure" and rec.time_spent is not None
    assert [a.trajectory_id for a in store.annotations()] == ["t3"]


def test_undo_after_moving_on_reopens_the_run_and_undoes_its_last_change(qtbot, setup):
    session, store, panel, model = setup
    session.set_trajectory(traj("t1"), key="/lib/t1")
    key(qtbot, panel, Qt.Key.Key_F, Qt.Key.Key_9)
    with qtbot.waitSignal(model.next_requested):
        key(qtbot, panel, Qt.Key.Key_Return)
    session.set_trajectory(traj("t2"), key="/lib/t2")  # what the window does on next_requested
    with qtbot.waitSignal(model.open_requested, check_params_cb=lambda k: k == "/lib/t1"):
        qtbot.keyClick(panel, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    settle(qtbot, model)
    assert store.get("t1", "alice").labels == [] and store.get("t1", "alice").verdict == "failure"
    assert store.get("t2", "alice") is None  # nothing was written to the run on screen
    session.set_trajectory(traj("t1"), key="/lib/t1")  # the window reopens it
    assert panel.verdict_buttons["failure"].isChecked() and not model.marks
    qtbot.keyClick(panel, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)  # on screen now: no reopening needed
    settle(qtbot, model)
    assert store.get("t1", "alice") is None  # nothing labelled is left (time spent is no label): no record


def test_keys_typed_while_the_next_item_opens_wait_for_it(qtbot, setup):
    session, store, panel, model = setup
    key(qtbot, panel, Qt.Key.Key_S)
    with qtbot.waitSignal(model.next_requested):
        key(qtbot, panel, Qt.Key.Key_Return)
    assert model.waiting
    key(qtbot, panel, Qt.Key.Key_F, Qt.Key.Key_9)  # typed before the next item is on screen
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "success" and store.get("t1", "alice").labels == []
    session.set_trajectory(traj("t2"))
    qtbot.waitUntil(lambda: not model.waiting)  # replayed once the session has placed its playhead
    settle(qtbot, model)
    rec = store.get("t2", "alice")
    assert rec.verdict == "failure" and rec.labels == ["computer_use:other"]
    # No next item: the held keys are dropped, and the panel says so.
    with qtbot.waitSignal(model.next_requested):
        key(qtbot, panel, Qt.Key.Key_Return)
    settle(qtbot, model)  # the time spent on t2 has landed
    key(qtbot, panel, Qt.Key.Key_U)
    model.stop_waiting("there is no next item")
    assert store.get("t2", "alice").verdict == "failure"
    assert model.save_state == "error" and "1 key(s) not applied: there is no next item" in panel.state_label.text()


# --- a team's PostgreSQL store that goes away: the panel turns read-only and comes back by itself ------------------
@pytest.fixture
def pg(monkeypatch):
    """A server of the test's own (it is stopped and started), and a panel that asks it again every 100 ms."""
    from tests.pg import PgServer

    monkeypatch.setattr(Labelling, "RETRY_MS", 100)
    srv = PgServer({"fsync": "off"})
    yield srv
    srv.stop()


def test_a_server_store_that_goes_down_makes_the_panel_read_only_and_it_comes_back(qtbot, pg):
    import time

    from gui_app.core.store.postgresql import PostgresAnnotationStore

    url = pg.create_database()
    store = PostgresAnnotationStore(url, connect_timeout=2, reconnect_s=0.5)
    panel, model, runner = queued_panel(qtbot, store)
    session = model.session
    key(qtbot, panel, Qt.Key.Key_F)
    qtbot.waitUntil(lambda: model.save_state == "saved", timeout=10_000)
    pg.stop_server()
    t0 = time.monotonic()
    key(qtbot, panel, Qt.Key.Key_2, Qt.Key.Key_2)  # a label while the server is down
    assert time.monotonic() - t0 < 2.0  # the keys returned at once: the write waits in the worker
    qtbot.waitUntil(lambda: model.read_only is not None, timeout=15_000)
    assert "READ-ONLY" in panel.state_label.text() and "127.0.0.1" in panel.state_label.toolTip()
    assert not panel.verdict_buttons["failure"].isEnabled() and not panel.tree.isEnabled()
    assert model.record is None  # nothing stale is shown as if it were stored
    key(qtbot, panel, Qt.Key.Key_S)  # refused at once, no write queued
    assert model.pending_writes == 0 and model.read_only is not None
    session.set_trajectory(traj("t2"))  # the rest of the app goes on: another trajectory opens, steps move
    session.set_step(3)
    assert panel.title.text().startswith("<b>t2</b>") and model.read_only is not None
    pg.start()
    qtbot.waitUntil(lambda: model.read_only is None, timeout=30_000)  # it asked again and the store answered
    assert "back" in panel.state_label.text() and panel.verdict_buttons["success"].isEnabled()
    key(qtbot, panel, Qt.Key.Key_S)
    qtbot.waitUntil(lambda: model.save_state == "saved", timeout=10_000)
    assert store.get("t2", "alice").verdict == "success"
    assert store.get("t1", "alice").labels == []  # the label made while the server was down never landed
    runner.shutdown()
    store.close()


def test_a_library_whose_server_is_down_opens_read_only_and_its_store_is_opened_later(qtbot, pg, tmp_path):
    from gui_app.core.library.folder import open_library

    url = pg.create_database()
    pg.stop_server()
    library = open_library(tmp_path, store=url)
    assert library.store is None and "cannot reach the PostgreSQL server" in library.store_error
    session = Session()
    runner = Runner()
    panel, model = labelled_panel(qtbot, None, session, JobQueue(runner))
    session.set_library(library)
    session.set_trajectory(traj("t1"))
    assert model.read_only is not None and "READ-ONLY" in panel.state_label.text()
    recovered = []
    model.store_recovered.connect(lambda: recovered.append(1))
    pg.start()
    qtbot.waitUntil(lambda: model.read_only is None, timeout=30_000)
    assert recovered == [1] and library.store is not None and model.store is library.store
    key(qtbot, panel, Qt.Key.Key_F)
    settle(qtbot, model)
    assert library.store.get("t1", "alice").verdict == "failure"
    runner.shutdown()
    library.close()
