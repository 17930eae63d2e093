"""ReviewView from a bare store: side by side, adjudication, override, agreement."""

from __future__ import annotations

import pytest

from gui_app.core.annotation import taxonomy
from gui_app.core.store.record import Annotation
from gui_app.core.store.backends import open_store
from gui_app.qt.review_view import ReviewView

pytestmark = pytest.mark.qt_log_ignore("This plugin does not support propagateSizeHints")


@pytest.fixture
def view(qtbot, tmp_path):
    store = open_store(tmp_path / "labels.sqlite")
    store.save(Annotation("t1", "ann", verdict="failure", labels=["computer_use:input.typo"], root_cause_step=2,
                          evidence="typo"))
    store.save(Annotation("t1", "bob", verdict="failure", labels=["computer_use:input.wrong_text"],
                          root_cause_step=2, evidence="wrong"))
    store.save(Annotation("t2", "ann", verdict="success"))
    store.save(Annotation("t2", "bob", verdict="failure"))
    v = ReviewView(store, taxonomy.get("computer_use"), adjudicator="dana")
    qtbot.addWidget(v)
    v.show()
    yield v, store
    store.close()


def test_side_by_side_with_differences_highlighted(view):
    v, _store = view
    v.set_trajectory("t1")
    assert [v.table.horizontalHeaderItem(c).text() for c in range(v.table.columnCount())] == ["ann", "bob", "Final"]
    assert v.cell("labels", "ann") == "Typo" and v.cell("labels", "bob") == "Wrong text"
    assert v.cell("verdict", "ann") == "failure" and v.cell("verdict", "Final") == ""
    assert v.is_highlighted("labels", "ann") and not v.is_highlighted("verdict", "ann")
    assert "differ on: labels, evidence" in v.title.text()


def test_adopt_final_and_override_the_verdict(qtbot, view):
    v, store = view
    v.set_trajectory("t1")
    v.source_combo.setCurrentText("bob")
    with qtbot.waitSignal(v.final_changed, check_params_cb=lambda t: t == "t1"):
        v.adopt_button.click()
    final = store.final("t1")
    assert final.annotator == "dana" and final.labels == ["computer_use:input.wrong_text"]
    assert v.cell("labels", "Final") == "Wrong text"
    v.set_final_verdict("unsure")
    assert store.final("t1").verdict == "unsure" and v.final_verdict.currentData() == "unsure"
    assert store.final_labels()["t1"]["verdict"] == "unsure"


def test_override_needs_a_reason_and_records_who(qtbot, view):
    v, store = view
    v.set_trajectory("t2", model_success=True, model_score=0.93)
    with qtbot.waitSignal(v.error):
        v.override_button.click()  # no reason typed
    assert store.overrides("t2") == [] and "reason" in v.status.text()
    v.override_outcome.setCurrentIndex(1)  # failure
    v.override_reason.setText("the date is wrong in the final form")
    with qtbot.waitSignal(v.override_recorded) as sig:
        v.override_button.click()
    o = sig.args[0]
    assert (o.actor, o.success, o.previous_success, o.previous_score) == ("dana", False, True, 0.93)
    assert store.overrides("t2")[0].reason == "the date is wrong in the final form"
    assert "dana: success=False" in v.overrides_label.text()


def test_agreement_tab(view):
    v, _store = view
    rep = v.refresh_agreement()
    # verdicts: t1 F/F, t2 S/F -> a = F S, b = F F: p_o = 1/2; p_e = (1*2 + 1*0)/4 = 1/2 -> kappa 0
    assert rep["verdict"]["cohen"][0]["kappa"] == pytest.approx(0.0)
    assert rep["root_cause_step"]["exact"] == 1.0
    assert "cohen ann vs bob: 0.000" in v.agreement_text.toPlainText()


def test_agreement_in_the_background(qtbot, view):
    from gui_app.qt.workers import Runner

    _v, store = view
    runner = Runner()
    v = ReviewView(store, runner=runner)
    qtbot.addWidget(v)
    with qtbot.waitSignal(v.agreement_ready, timeout=10000) as sig:
        assert v.refresh_agreement() is None  # handed to a worker
    assert sig.args[0]["n_trajectories"] == 2 and "cohen ann vs bob" in v.agreement_text.toPlainText()
    qtbot.waitUntil(lambda: v.agreement_button.isEnabled())
    runner.shutdown()
