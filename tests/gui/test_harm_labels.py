"""The safety verdict in the app (issue 27, the human side): its keys (h n m, d) and the label panel's Safety group
from a bare labelling model over a real SQLite store, the one-line label bar, the review, and, in the real main
window, keys typed with focus on the library and the "possible harm" queue built from the queue panel."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import QApplication

from gui_app.core.store.backends import open_store
from gui_app.core.store.record import Annotation
from gui_app.qt.action_table import ACTIONS
from gui_app.qt.keyboard import LABEL_KEYS, key_name
from gui_app.qt.label_panel import LabelBar
from gui_app.qt.labelling import HARM_VERDICT_KEYS, KEYS, VERDICT_KEYS
from gui_app.qt.main_window import MainWindow
from gui_app.qt.review_view import ReviewView
from tests.gui.library_fixtures import open_and_wait, write_native
from tests.gui.test_label_panel import key, queued_panel, settle

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")

CODE, EXPOSURE = "harm:untrusted_code", "harm:data_exposure"


@pytest.fixture
def setup(qtbot, tmp_path):
    store = open_store(tmp_path / "labels.sqlite")
    panel, model, runner = queued_panel(qtbot, store)
    yield model.session, store, panel, model
    runner.shutdown()
    store.close()


def test_the_harm_keys_are_their_own_and_clash_with_no_shortcut(qapp):
    letters = {*VERDICT_KEYS, *HARM_VERDICT_KEYS, "v", "r", "c", "d"}
    assert len(letters) == len(VERDICT_KEYS) + len(HARM_VERDICT_KEYS) + 4  # no letter means two things
    assert {*HARM_VERDICT_KEYS, "d"} <= KEYS
    single = {QKeySequence(s).toString(QKeySequence.SequenceFormat.PortableText).lower()
              for a in ACTIONS for s in a.shortcuts}
    assert not letters & single, letters & single  # J K L O Z stay the window's
    for qt_key, name in ((Qt.Key.Key_H, "h"), (Qt.Key.Key_N, "n"), (Qt.Key.Key_M, "m"), (Qt.Key.Key_D, "d")):
        assert key_name(QKeyEvent(QEvent.Type.KeyPress, qt_key, Qt.KeyboardModifier.NoModifier)) == name
        assert key_name(QKeyEvent(QEvent.Type.KeyPress, qt_key, Qt.KeyboardModifier.ControlModifier)) is None
    assert any(k == "H, N, M" for k, _n, _w in LABEL_KEYS) and any(k == "D" for k, _n, _w in LABEL_KEYS)


def test_keys_and_the_safety_group_autosave_the_safety_verdict(qtbot, setup):
    session, store, panel, model = setup
    key(qtbot, panel, Qt.Key.Key_H)
    assert panel.harm_buttons["harmful"].isChecked()  # shown at once, before the write has landed
    settle(qtbot, model)
    assert store.get("t1", "alice").harm_verdict == "harmful" and store.get("t1", "alice").verdict is None
    session.set_step(3)
    key(qtbot, panel, Qt.Key.Key_D)  # the step on screen is the first harmful step
    settle(qtbot, model)
    assert store.get("t1", "alice").first_harmful_step == 3
    assert panel.first_harm_label.text() == "step 4" and model.marks == {3: "first_harm"}
    key(qtbot, panel, Qt.Key.Key_F, Qt.Key.Key_N)  # the success verdict has its keys still; n: no harm
    settle(qtbot, model)
    rec = store.get("t1", "alice")
    assert (rec.verdict, rec.harm_verdict) == ("failure", "safe")
    assert panel.harm_buttons["safe"].isChecked() and not panel.harm_buttons["harmful"].isChecked()
    key(qtbot, panel, Qt.Key.Key_M)
    settle(qtbot, model)
    assert store.get("t1", "alice").harm_verdict == "unsure"
    key(qtbot, panel, Qt.Key.Key_D)  # d again on the same step clears it
    settle(qtbot, model)
    assert store.get("t1", "alice").first_harmful_step is None and panel.first_harm_label.text() == "none (press d)"
    # harm types: ticked in the panel's list (the digits stay the failure taxonomy's)
    item = panel._harm_items[CODE]
    item.setCheckState(Qt.CheckState.Checked)
    panel._harm_items[EXPOSURE].setCheckState(Qt.CheckState.Checked)
    settle(qtbot, model)
    assert store.get("t1", "alice").harm_types == [EXPOSURE, CODE]
    combo = panel.harm_category_combo
    combo.setCurrentIndex(combo.findData("prompt_injection"))
    combo.activated.emit(combo.currentIndex())
    settle(qtbot, model)
    assert store.get("t1", "alice").harm_category == "prompt_injection"
    panel.harm_buttons["harmful"].click()
    settle(qtbot, model)
    assert store.get("t1", "alice").harm_verdict == "harmful"
    model.undo()  # every change is undoable, as a stored change
    settle(qtbot, model)
    assert store.get("t1", "alice").harm_verdict == "unsure" and panel.harm_buttons["unsure"].isChecked()
    model.undo()
    model.undo()
    settle(qtbot, model)
    assert store.get("t1", "alice").harm_types == [CODE] and item.checkState() == Qt.CheckState.Checked
    assert panel._harm_items[EXPOSURE].checkState() == Qt.CheckState.Unchecked
    fields = {e.field for e in store.audit("t1")}
    assert {"harm_verdict", "first_harmful_step", f"harm_types[{CODE}]", "harm_category"} <= fields
    model.set_store(None, "the server is down")  # read-only: nothing to edit
    assert not panel.harm_types_list.isEnabled() and not panel.harm_buttons["harmful"].isEnabled()


def test_browsing_writes_no_harm_verdict(qtbot, setup):
    _session, store, panel, model = setup
    model.stop()
    assert not model.press("h") and not model.press("d")  # browsing: the keys write nothing
    settle(qtbot, model)
    assert store.get("t1", "alice") is None


def test_the_label_bar_says_the_harm_verdict_once_given(qtbot, setup):
    session, _store, _panel, model = setup
    bar = LabelBar(model)
    qtbot.addWidget(bar)
    assert "harm" not in bar.text()
    session.set_step(2)
    model.press("h")
    model.press("d")
    assert bar.text().endswith("harm: harmful from step 3")
    settle(qtbot, model)


def test_the_review_shows_the_safety_verdict_side_by_side_and_adjudicates_it(qtbot, tmp_path):
    store = open_store(tmp_path / "labels.sqlite")
    store.save(Annotation("t1", "ann", verdict="failure", harm_verdict="harmful", harm_types=[CODE],
                          harm_category="prompt_injection", first_harmful_step=4))
    store.save(Annotation("t1", "bob", verdict="failure", harm_verdict="safe"))
    v = ReviewView(store, adjudicator="dana")
    qtbot.addWidget(v)
    v.show()
    v.set_trajectory("t1")
    assert v.cell("harm_verdict", "ann") == "harmful" and v.cell("harm_verdict", "bob") == "safe"
    assert v.cell("harm_types", "ann") == "Running untrusted code"
    assert v.cell("harm_category", "ann") == "Prompt injection" and v.cell("first_harmful_step", "ann") == "step 5"
    assert v.is_highlighted("harm_verdict", "ann") and not v.is_highlighted("verdict", "ann")
    v.final_harm_verdict.setCurrentIndex(v.final_harm_verdict.findData("harmful"))
    with qtbot.waitSignal(v.final_changed):
        v.final_harm_verdict.activated.emit(v.final_harm_verdict.currentIndex())
    assert store.final("t1").harm_verdict == "harmful" and v.cell("harm_verdict", "Final") == "harmful"
    assert store.final_labels()["t1"]["harm_verdict"] == "harmful"
    store.close()


@pytest.fixture
def library(tmp_path) -> Path:
    root = tmp_path / "lib"
    for i in range(4):
        write_native(root / f"t{i}", id=f"traj-{i}", instruction=f"Task {i}", n_steps=3, success=i % 2 == 1)
    return root


def test_in_the_app_harm_keys_label_from_the_library_and_feed_the_possible_harm_queue(qtbot, library):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.set_annotator("ada")
    open_and_wait(qtbot, win, library, activate=True)
    store = win.session.library.store
    button = win.queue_view.build_buttons["harm"]
    assert button.text() == "Possible harm" and "possible harm" in button.toolTip()
    win.labelling.start()
    for name, keys in (("t1", (Qt.Key.Key_H, Qt.Key.Key_D)), ("t3", (Qt.Key.Key_M,)), ("t2", (Qt.Key.Key_N,))):
        ref = str((library / name).resolve())
        if win.session.key != ref:
            with qtbot.waitSignal(win.loader.loaded, timeout=30_000):
                assert win.library.select_key(ref)
        win.library.table.setFocus()  # where `h` or `m` would start a keyboard search
        qtbot.waitUntil(lambda: QApplication.focusWidget() is win.library.table, timeout=5000)
        for k in keys:
            qtbot.keyClick(win.windowHandle(), k)
        qtbot.waitUntil(lambda: win.labelling.pending_writes == 0, timeout=10_000)
    verdicts = {a.trajectory_id: (a.harm_verdict, a.first_harmful_step) for a in store.annotations()}
    assert verdicts == {"t1": ("harmful", 0), "t3": ("unsure", None), "t2": ("safe", None)}
    win.set_annotator("bea")  # a second pair of eyes on what ada flagged
    button.click()
    qtbot.waitUntil(lambda: win.queue.active and win.queue.job is None, timeout=30_000)  # built, in a worker
    assert [it.trajectory_id for it in win.queue.items] == ["t1", "t3"]  # harmful first, safe left out
    qtbot.waitUntil(lambda: win.labelling.trajectory_id == "t1" and not win.labelling.waiting, timeout=30_000)
    qtbot.keyClick(win.windowHandle(), Qt.Key.Key_N)
    qtbot.keyClick(win.windowHandle(), Qt.Key.Key_Return)  # done once bea gave a harm verdict: on to t3
    qtbot.waitUntil(lambda: win.labelling.trajectory_id == "t3" and not win.labelling.waiting, timeout=30_000)
    assert store.get("t1", "bea").harm_verdict == "safe" and win.queue.progress() == (1, 2)

