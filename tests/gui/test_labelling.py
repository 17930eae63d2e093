"""The labelling model from a bare instance (no panel): a Session with in-memory trajectories, a real SQLite store,
and the app's one write path (a JobQueue on a Runner: every write lands in a worker)."""

from __future__ import annotations

import threading

import pytest

from gui_app.core.annotation import taxonomy
from gui_app.core.store.sqlite import SqliteAnnotationStore
from gui_app.core.store.backends import open_store
from gui_app.core.trajectory.model import Step, Trajectory
from gui_app.qt.labelling import Labelling
from gui_app.qt.session import Session
from gui_app.qt.workers import JobQueue, Runner

OTHER = "computer_use:other"  # key hint 9


def traj(tid: str, n: int = 4) -> Trajectory:
    return Trajectory(id=tid, instruction=f"instruction of {tid}", source_format="native", source_path="",
                      steps=[Step(index=i, action=f"click {i}") for i in range(n)], key=tid)  # labels go by key


@pytest.fixture
def labelling(qtbot, tmp_path):
    store = open_store(tmp_path / "labels.sqlite")
    session = Session()
    session.set_trajectory(traj("t1"))
    runner = Runner()
    model = Labelling(session, JobQueue(runner), store, taxonomy.get("computer_use"), "alice")
    model.start()  # browsing writes nothing: these tests label
    yield model, store
    runner.shutdown()
    store.close()


def settle(qtbot, model: Labelling) -> None:
    qtbot.waitUntil(lambda: model.pending_writes == 0, timeout=10_000)


def test_a_key_changes_the_record_at_once_and_the_store_once_the_write_lands(qtbot, labelling):
    model, store = labelling
    states: list[str] = []
    model.state_changed.connect(lambda state, _reason: states.append(state))
    records = []
    model.record_changed.connect(records.append)
    assert model.press("f")
    assert model.record.verdict == "failure" and records[-1] is model.record  # shown before it has landed
    assert model.save_state == "saving" and model.pending_writes == 1
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "failure" and model.record.verdict == "failure"
    assert states == ["saving", "saved"] and model.save_state == "saved"
    assert not model.press("x") and not model.press("ctrl+q")  # not labelling keys
    assert model.undo_stack.count() == 1


def test_every_write_runs_in_the_write_queue_never_in_the_gui_thread(qtbot, labelling, monkeypatch):
    """One write path: the queued one the app uses. Writes are counted by the thread they run in."""
    model, store = labelling
    threads: list[threading.Thread] = []
    real = SqliteAnnotationStore._write

    def counted(self, fn, **kwargs):
        threads.append(threading.current_thread())
        return real(self, fn, **kwargs)

    monkeypatch.setattr(SqliteAnnotationStore, "_write", counted)
    model.session.set_step(2)
    for key in ("f", "9", "r", "c", "v", "undo", "redo"):
        model.press(key)
    model.set_field("notes", "typed")
    model.set_step_comment(1, "hesitates")
    with qtbot.waitSignal(model.next_requested, timeout=10_000):
        model.press("enter")
    settle(qtbot, model)
    rec = store.get("t1", "alice")
    assert (rec.verdict, rec.labels, rec.root_cause_step, rec.notes) == ("unsure", [OTHER], 2, "typed")
    assert [c.step for c in rec.cascading] == [2] and rec.step_comments == {1: "hesitates"}
    assert rec.time_spent is not None
    assert len(threads) == 10  # 7 keys (undo and redo write too), notes, comment, time spent
    assert threading.main_thread() not in threads


def test_keys_pressed_after_enter_wait_for_the_next_item(qtbot, labelling):
    model, store = labelling
    model.press("s")
    with qtbot.waitSignal(model.next_requested, timeout=10_000):
        model.press("enter")  # the next item is asked for once the verdict has landed
    assert model.waiting
    for key in ("f", "9", "r"):
        assert model.press(key)  # held: nothing lands on t1
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "success" and store.get("t1", "alice").labels == []
    model.session.set_trajectory(traj("t2"))
    qtbot.waitUntil(lambda: not model.waiting, timeout=5000)  # replayed once the playhead is placed (step 0)
    settle(qtbot, model)
    rec = store.get("t2", "alice")
    assert (rec.verdict, rec.labels, rec.root_cause_step) == ("failure", [OTHER], 0)
    # Esc drops held keys, and the save state says so.
    model.start_waiting()
    model.press("u")
    model.press("escape")
    assert not model.waiting and model.save_state == "error" and "cancelled with Esc" in model.save_reason


def test_views_write_their_typing_before_the_model_acts_on_it(qtbot, labelling):
    """flush_requested: before undo, save & next and moving on, a view writes what is being typed, to the record
    it was typed for."""
    model, store = labelling
    typed = {"text": "notes for t1"}
    flushed: list[str | None] = []

    def view_flush():  # what a view does: write pending typing through the model
        flushed.append(model.trajectory_id)
        if typed["text"]:
            model.set_field("notes", typed["text"])
            typed["text"] = ""

    model.flush_requested.connect(view_flush)
    model.press("f")
    model.session.set_trajectory(traj("t2"))
    assert flushed == ["t1"]  # asked while t1 was still the one labelled
    settle(qtbot, model)
    assert store.get("t1", "alice").notes == "notes for t1" and store.get("t2", "alice") is None
    typed["text"] = "notes for t2"
    model.press("u")
    order: list[str] = []
    model.flush_requested.connect(lambda: order.append("flush"))
    model.next_requested.connect(lambda: order.append("next"))
    with qtbot.waitSignal(model.next_requested, timeout=10_000):
        model.finish()
    assert order == ["flush", "next"] and store.get("t2", "alice").notes == "notes for t2"
    model.undo()
    assert flushed[-1] == "t2" and len(flushed) == 3


def test_failed_writes_leave_nothing_to_undo(qtbot, labelling):
    model, store = labelling
    store.close()  # the store goes away (disk gone): every write fails in the worker
    failures: list[str] = []
    model.save_failed.connect(failures.append)
    model.press("f")
    model.press("9")  # queued behind the first: both fail, in order
    assert model.undo_stack.count() == 2
    qtbot.waitUntil(lambda: len(failures) == 2, timeout=10_000)
    assert model.save_state == "error" and model.undo_stack.count() == 0 and not model.undo_stack.canUndo()


def test_a_store_that_is_not_there_makes_the_model_read_only(qtbot, labelling):
    model, store = labelling
    changes: list[str | None] = []
    model.read_only_changed.connect(changes.append)
    model.set_store(None, "the server is down")
    assert model.read_only == "the server is down" and model.record is None and not model.editable
    model.press("f")
    assert model.pending_writes == 0 and model.save_state == "readonly"  # refused at once: nothing queued
    model.set_store(store)
    assert model.read_only is None and model.editable and changes == ["the server is down", None]
    model.press("f")
    settle(qtbot, model)
    assert store.get("t1", "alice").verdict == "failure"
