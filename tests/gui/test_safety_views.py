"""The harm judge's verdict (``Score.safety``) in the views, from bare models: the timeline's safety lane (per-step
harm shading, the first harmful step's red marker with the evidence as tooltip, nothing without a verdict), the
score line and hover text, the step table's tooltip, and the library's harm column and filter over a real catalog."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.score import HarmEvidence, Safety, Score
from gui_app.qt.library_view import COL_HARM, COLUMNS, LibraryModel, LibraryView
from gui_app.qt.step_table import COL_SCORE, StepTable
from gui_app.qt.timeline_view import SAFETY_LANE, SAFETY_Y_MIN, Y_RANGE, TimelineView
from tests.gui.library_fixtures import make_library
from tests.gui.viewer_fixtures import FPS, STEP_STARTS, open_session

EVIDENCE = "typed the password given in the instruction into a page"
HARMFUL = Safety(p_harm=0.87, harmful=True, first_harmful_step=3, category="prompt_injection",
                 types=["data_exposure"], evidence=[HarmEvidence(3, EVIDENCE, "secret_typed"),
                                                    HarmEvidence(4, "pressed Enter on the form")],
                 threshold=0.5, step_scores=[0.0, 0.1, 0.2, 0.95, 0.6, 0.0])


def score(safety: Safety | None) -> Score:
    return Score(p_success=0.3, threshold=0.5, success=False, step_scores=[0.1] * 6, model="judge", safety=safety)


@pytest.fixture
def timeline(qtbot, tmp_path):
    session, _source, traj = open_session(tmp_path)
    view = TimelineView(session)
    qtbot.addWidget(view)
    view.resize(600, 180)
    view.show()
    qtbot.waitExposed(view)
    yield session, view
    session.set_trajectory(None)


def test_the_safety_lane_shades_each_steps_harm_and_marks_the_first_harmful_step(timeline):
    session, view = timeline
    assert not view.safety_lane_shown and not view.harm_bars.isVisible() and view.first_harm_marker.points().size == 0
    session.set_scores(score(HARMFUL))
    assert view.safety_lane_shown and view.harm_bars.isVisible()
    bars = view.harm_bars.opts
    starts = [f / FPS for f in STEP_STARTS]
    assert list(bars["x0"]) == pytest.approx(starts) and list(bars["x1"][:-1]) == pytest.approx(starts[1:])
    assert (bars["y0"], bars["y1"]) == SAFETY_LANE and SAFETY_LANE[1] < Y_RANGE[0]  # under the probabilities
    alpha = [b.color().alpha() for b in bars["brushes"]]
    assert alpha[3] == max(alpha) and alpha[0] == min(alpha) == alpha[5] > 0  # darker where harm is likelier
    assert all(b.color().red() > 200 and b.color().green() < 60 for b in bars["brushes"])  # red
    (marker,) = view.first_harm_marker.points()
    assert marker.pos().x() == pytest.approx((STEP_STARTS[3] + STEP_STARTS[4]) / 2 / FPS)
    assert SAFETY_LANE[0] < marker.pos().y() < SAFETY_LANE[1]
    assert marker.brush().color().red() > 200 and marker.brush().color().green() < 60
    assert marker.data() == f"first harmful step: step 4\nstep 4: {EVIDENCE}"  # the evidence at that step only
    assert view.vb.viewRange()[1][0] == pytest.approx(SAFETY_Y_MIN)  # the plot reaches down to the lane
    hover = view.hover_text(marker.pos().x())
    assert "p(harm) 0.95" in hover and "first harmful step" in hover and f"step 4: {EVIDENCE}" in hover
    # The score line says the verdict, the category and the evidence; the tooltip each line on its own.
    text, tip = view.summary.text(), view.summary.toolTip()
    assert "HARMFUL" in text and "p(harm) <b>0.87</b>" in text and "prompt injection" in text
    assert "first harmful at <b>step 4</b>" in text and EVIDENCE in text
    assert f"\n  step 4: {EVIDENCE}\n  step 5: pressed Enter on the form" in tip
    assert "first harmful step" in view.legend.text()


def test_no_safety_lane_without_a_harm_verdict_or_when_the_judge_cannot_say(timeline):
    session, view = timeline
    session.set_scores(score(HARMFUL))
    session.set_scores(score(None))
    assert not view.safety_lane_shown and not view.harm_bars.isVisible()
    assert view.first_harm_marker.points().size == 0 and "Harm" not in view.summary.text()
    assert view.vb.viewRange()[1][0] == pytest.approx(Y_RANGE[0])  # the plot keeps its height
    session.set_scores(score(Safety(p_harm=0.7, harmful=None, unknown=True, first_harmful_step=2,
                                    step_scores=[0.7] * 6)))
    assert not view.safety_lane_shown and "UNKNOWN" in view.summary.text()
    # A safe verdict shades its steps but marks no first harmful step.
    session.set_scores(score(Safety(p_harm=0.1, harmful=False, threshold=0.5, step_scores=[0.1] * 6)))
    assert view.harm_bars.isVisible() and view.first_harm_marker.points().size == 0
    assert "SAFE" in view.summary.text()
    session.set_scores(None)
    assert not view.safety_lane_shown


def test_the_step_table_tooltip_says_what_the_harm_judge_saw(qtbot, tmp_path):
    session, _source, _traj = open_session(tmp_path)
    view = StepTable(session)
    qtbot.addWidget(view)
    session.set_scores(score(HARMFUL))
    m = view.model()

    def tip(r: int) -> str | None:
        return m.data(m.index(r, COL_SCORE), Qt.ItemDataRole.ToolTipRole)

    assert tip(3).startswith("The harm judge's first harmful step (harmful (p(harm) 0.87")
    assert tip(3).endswith(f"Harm: step 4: {EVIDENCE}")
    assert tip(4) == "Harm: step 5: pressed Enter on the form" and tip(0) is None
    session.set_trajectory(None)


def test_the_library_shows_filters_and_sorts_the_harm_verdict(qtbot, tmp_path):
    root = make_library(tmp_path / "lib", 5)
    catalog = Catalog.for_root(root)
    catalog.scan(root)
    catalog.set_score(str(root / "t00001"), score(HARMFUL))
    catalog.set_score(str(root / "t00002"), score(Safety(p_harm=0.04, harmful=False)))
    catalog.set_score(str(root / "t00003"), score(Safety(p_harm=0.5, unknown=True)))
    catalog.set_score(str(root / "t00004"), score(None))
    view = LibraryView(LibraryModel(catalog))
    qtbot.addWidget(view)
    model = view.model
    assert COLUMNS[COL_HARM][:2] == ("Harm", "p_harm")
    model.sort(COL_HARM, Qt.SortOrder.DescendingOrder)

    def harm(r: int, role=Qt.ItemDataRole.DisplayRole):
        return model.data(model.index(r, COL_HARM), role)

    assert [harm(r) for r in range(model.rowCount())] == ["87% harmful", "unknown", "4% safe", "", ""]
    assert harm(0, Qt.ItemDataRole.ForegroundRole).color().red() == 200
    assert "harmful (p(harm) 0.87)" in harm(0, Qt.ItemDataRole.ToolTipRole)
    assert "cannot say" in harm(1, Qt.ItemDataRole.ToolTipRole)
    view.harm_filter.setCurrentIndex(view.harm_filter.findText("Harmful"))
    assert model.filters == {"harmful": True}
    assert [model.row(r).id for r in range(model.rowCount())] == ["traj-00001"]
    view.harm_filter.setCurrentIndex(view.harm_filter.findText("No harm verdict"))
    assert {model.row(r).id for r in range(model.rowCount())} == {"traj-00000", "traj-00004"}
    view.harm_filter.setCurrentIndex(0)
    assert model.rowCount() == 5
    catalog.close()


def test_the_five_filters_take_a_second_row_only_when_one_row_would_clip_them(qtbot, tmp_path):
    view = LibraryView(LibraryModel(None))
    qtbot.addWidget(view)
    view.show()
    view.resize(1000, 300)
    qtbot.waitUntil(lambda: view.filter_rows() == 1, timeout=3000)
    view.resize(340, 300)  # a library dock on a 1366-pixel screen
    qtbot.waitUntil(lambda: view.filter_rows() == 2, timeout=3000)
    qtbot.waitUntil(lambda: view.harm_filter.y() > view.format_filter.y(), timeout=3000)
    combos = (view.format_filter, view.outcome_filter, view.scored_filter, view.error_filter, view.harm_filter)
    assert all(c.width() >= c.fontMetrics().horizontalAdvance(c.currentText()) + 24 for c in combos)
    view.resize(1000, 300)
    qtbot.waitUntil(lambda: view.filter_rows() == 1 and view.harm_filter.y() == view.format_filter.y(), timeout=3000)
