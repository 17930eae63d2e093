"""StepTable: rows from the session's trajectory, selection <-> session.step both ways, marks and scores."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from gui_app.qt.step_table import COL_ACTION, COL_MARK, COL_SCORE, COL_THOUGHT, COL_TIME, COL_TYPE, StepTable
from tests.gui.viewer_fixtures import STEP_STARTS, half_masks, make_score, open_session


@pytest.fixture
def table(qtbot, tmp_path):
    session, _source, traj = open_session(tmp_path)
    view = StepTable(session)
    qtbot.addWidget(view)
    view.resize(700, 300)
    view.show()
    yield session, view, traj
    session.set_trajectory(None)


def cell(view: StepTable, row: int, col: int, role=Qt.ItemDataRole.DisplayRole):
    m = view.model()
    return m.data(m.index(row, col), role)


def test_rows_show_steps(table):
    _session, view, traj = table
    assert view.model().rowCount() == len(traj.steps)
    assert cell(view, 2, COL_TYPE) == "drag"
    assert cell(view, 1, COL_ACTION) == "type #1"
    assert cell(view, 2, COL_TIME) == "0:01.9"  # frame 19 at 10 fps
    thought = traj.steps[0].thought
    shown = cell(view, 0, COL_THOUGHT)
    assert len(shown) < len(thought) and shown.endswith("…")  # elided in the cell
    assert cell(view, 0, COL_THOUGHT, Qt.ItemDataRole.ToolTipRole) == thought  # whole in the tooltip


def test_selection_follows_session_and_sets_it(qtbot, table):
    session, view, _traj = table
    assert view.currentIndex().row() == 0  # opened at step 0
    session.set_step(4)
    assert view.currentIndex().row() == 4
    assert view.selectionModel().selectedRows()[0].row() == 4

    # A click on a row moves the session (and so the frame).
    rect = view.visualRect(view.model().index(2, COL_TYPE))
    with qtbot.waitSignal(session.step_changed, check_params_cb=lambda s: s == 2):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert session.step == 2
    assert session.frame == STEP_STARTS[2]

    # Keyboard: Down moves to the next step.
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_Down)
    assert session.step == 3

    # Moving the frame into another step's span moves the row.
    session.set_frame(STEP_STARTS[5] + 2)
    assert view.currentIndex().row() == 5


def test_marks_and_scores(table):
    session, view, _traj = table
    view.set_step_marks({1: "wrong element", 3: "ok"})
    assert cell(view, 1, COL_MARK) == "wrong element"
    assert cell(view, 0, COL_MARK) == ""
    assert cell(view, 3, COL_MARK, Qt.ItemDataRole.BackgroundRole) is not None
    assert cell(view, 2, COL_SCORE) == ""
    session.set_scores(make_score(p_success=0.4, step_scores=[0.05, 0.1, 0.82, 0.3, 0.2, 0.1], masks=half_masks(2),
                                  keyframe_steps=[0, 3]))
    assert cell(view, 2, COL_SCORE) == "0.82"


def test_new_trajectory_resets_rows_and_marks(tmp_path, table):
    session, view, traj = table
    view.set_step_marks({1: "x"})
    traj2 = type(traj)(id="two", steps=traj.steps[:2])
    session.set_trajectory(traj2, None)
    assert view.model().rowCount() == 2
    assert cell(view, 1, COL_MARK) == ""
    assert view.currentIndex().row() == 0
    session.set_trajectory(None)
    assert view.model().rowCount() == 0


def test_predicted_first_deviation_and_label_marks_are_named(table):
    from dataclasses import replace

    session, view, _traj = table
    score = make_score(p_success=0.2, step_scores=[0.05, 0.1, 0.82, 0.3, 0.2, 0.1], masks=[], keyframe_steps=[])
    session.set_scores(replace(score, first_error_step=2))
    assert cell(view, 2, COL_SCORE) == "▶ 0.82" and cell(view, 3, COL_SCORE) == "0.30"
    assert cell(view, 2, COL_SCORE, Qt.ItemDataRole.BackgroundRole) is not None
    assert "first deviates" in cell(view, 2, COL_SCORE, Qt.ItemDataRole.ToolTipRole)
    session.set_scores(replace(score, first_error_step=2, unknown=True))  # a run the model cannot judge
    assert cell(view, 2, COL_SCORE) == "0.82"
    view.set_step_marks({1: "root_cause", 4: "cascade"})
    assert (cell(view, 1, COL_MARK), cell(view, 4, COL_MARK)) == ("● root cause", "↳ cascade")


def test_low_confidence_start_times_are_marked(table):
    """An alignment the app is unsure of shows in the table (a '?' and a tint on the time), not only in a log."""
    session, view, traj = table
    traj.steps[3].align_method, traj.steps[3].align_confidence = "timestamp_offset", 0.31
    traj.steps[4].align_method, traj.steps[4].align_confidence = "timestamp_offset", 0.93
    session.set_trajectory(None)
    session.set_trajectory(traj)
    assert cell(view, 3, COL_TIME).endswith(" ?") and not cell(view, 4, COL_TIME).endswith("?")
    assert "low confidence" in cell(view, 3, COL_TIME, Qt.ItemDataRole.ToolTipRole)
    assert cell(view, 3, COL_TIME, Qt.ItemDataRole.BackgroundRole) is not None
    assert cell(view, 4, COL_TIME, Qt.ItemDataRole.BackgroundRole) is None
