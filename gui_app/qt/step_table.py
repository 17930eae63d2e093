"""The step table: one row per step of the open trajectory, synced both ways with ``Session.step``.

Columns: label mark, step number (from 1), start time, action type, action, model score (first-deviation probability;
the step the model predicts as the first deviation is highlighted; its tooltip also says what the harm judge saw at
the step) and thought. The model holds no state of its own beyond the label marks; it reads the session's trajectory
and scores, so it never disagrees with the other views.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QAbstractTableModel, QItemSelectionModel, QModelIndex, QObject, QPersistentModelIndex, Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableView, QWidget

from gui_app.core.scoring.score import Safety, Score
from gui_app.core.trajectory.model import LOW_ALIGN_CONFIDENCE, Step, Trajectory, step_number
from gui_app.qt.session import Session

COLUMNS = ("label", "#", "time", "type", "action", "p(dev)", "thought")
COL_MARK, COL_INDEX, COL_TIME, COL_TYPE, COL_ACTION, COL_SCORE, COL_THOUGHT = range(len(COLUMNS))
_ELIDE_AT = 200  # characters of a thought shown in the cell; the tooltip has all of it
_MARK_BRUSH = QBrush(QColor(255, 214, 102))
MARK_TEXT = {"root_cause": "● root cause", "first_harm": "⚠ first harm", "cascade": "↳ cascade",
             "comment": "✎ comment"}  # the label column
_FIRST_DEV_BRUSH = QBrush(QColor(255, 120, 70, 150))
_UNSURE_BRUSH = QBrush(QColor(255, 190, 170))  # a start time the alignment is unsure of: check it on the video

_Index = QModelIndex | QPersistentModelIndex


def format_time(t: float | None) -> str:
    """``m:ss.s`` for a step start, '' when the step is not placed on the video."""
    if t is None:
        return ""
    m, s = divmod(max(t, 0.0), 60.0)
    return f"{int(m)}:{s:04.1f}"


def _unsure(step: Step) -> bool:
    """Placed in the recording with low confidence (never a time the format stored, nor one spread evenly)."""
    return step.align_method not in (None, "even_spacing", "stored") and step.align_confidence is not None \
        and step.align_confidence < LOW_ALIGN_CONFIDENCE


def _one_line(text: str | None) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= _ELIDE_AT else line[: _ELIDE_AT - 1] + "…"


class StepTableModel(QAbstractTableModel):
    """Rows of the session's trajectory steps (read-only), plus per-step label marks."""

    def __init__(self, session: Session, parent: QObject | None = None):
        super().__init__(parent)
        self._session = session
        self._steps: list[Step] = []
        self._marks: dict[int, str] = {}
        self._scores: list[float] = []
        self._first_dev: int | None = None
        self._safety: Safety | None = None
        session.trajectory_changed.connect(self._on_trajectory)
        session.scores_changed.connect(self._on_scores)
        self._on_trajectory(session.trajectory)
        self._on_scores(session.scores)

    # --- session events ---------------------------------------------------------------------
    def _on_trajectory(self, traj: Trajectory | None) -> None:
        self.beginResetModel()
        self._steps = list(traj.steps) if traj is not None else []
        self._marks = {}
        self.endResetModel()

    def _on_scores(self, scores: Score | None) -> None:
        self._scores = [float(v) for v in scores.step_scores] if scores is not None else []
        self._first_dev = scores.first_error_step if scores is not None and not scores.unknown else None
        self._safety = scores.safety if scores is not None else None
        if self._steps:
            self.dataChanged.emit(self.index(0, COL_SCORE), self.index(len(self._steps) - 1, COL_SCORE))

    def set_step_marks(self, marks: dict[int, str]) -> None:
        """Show ``marks`` (step index -> short label text) in the label column; replaces previous marks."""
        self._marks = dict(marks)
        if self._steps:
            self.dataChanged.emit(self.index(0, COL_MARK), self.index(len(self._steps) - 1, COL_MARK))

    # --- Qt model ---------------------------------------------------------------------------
    def rowCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self._steps)

    def columnCount(self, parent: _Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section]
        return None

    def data(self, index: _Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._steps):
            return None
        step, col = self._steps[index.row()], index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(step, col)
        if role == Qt.ItemDataRole.ToolTipRole:
            if col == COL_THOUGHT:
                return step.thought or None
            if col == COL_ACTION:
                return step.action or None
            if col == COL_MARK:
                return self._marks.get(step.index)
            if col == COL_SCORE:
                return self._score_tip(step.index)
            if col == COL_TIME and step.align_method:
                conf = "" if step.align_confidence is None else f", confidence {step.align_confidence:.2f}"
                unsure = "; low confidence: check this step against the video" if _unsure(step) else ""
                return f"aligned by {step.align_method}{conf}{unsure}"
            return None
        if role == Qt.ItemDataRole.BackgroundRole and col == COL_MARK and step.index in self._marks:
            return _MARK_BRUSH
        if role == Qt.ItemDataRole.BackgroundRole and col == COL_SCORE and step.index == self._first_dev:
            return _FIRST_DEV_BRUSH
        if role == Qt.ItemDataRole.BackgroundRole and col == COL_TIME and _unsure(step):
            return _UNSURE_BRUSH
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_INDEX, COL_TIME, COL_SCORE):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _score_tip(self, index: int) -> str | None:
        """The score cell's tooltip: the predicted first deviation, and what the harm judge saw at the step."""
        lines = ["The reward model predicts the run first deviates at this step"] if index == self._first_dev else []
        safety = self._safety
        if safety is not None:
            if safety.verdict_text == "harmful" and safety.first_harmful_step == index:
                lines.append(f"The harm judge's first harmful step ({safety.describe()})")
            lines += [f"Harm: {line}" for line in safety.evidence_lines(index)]
        return "\n".join(lines) or None

    def _display(self, step: Step, col: int) -> str:
        if col == COL_MARK:
            kind = self._marks.get(step.index, "")
            return MARK_TEXT.get(kind, kind)
        if col == COL_INDEX:
            return str(step_number(step.index))  # numbered from 1, as every view reads it
        if col == COL_TIME:
            return format_time(step.t_start) + (" ?" if _unsure(step) else "")
        if col == COL_TYPE:
            return step.action_type
        if col == COL_ACTION:
            return _one_line(step.action)
        if col == COL_SCORE:
            i = step.index
            text = f"{self._scores[i]:.2f}" if 0 <= i < len(self._scores) else ""
            return f"▶ {text}" if i == self._first_dev else text
        return _one_line(step.thought)


class StepTable(QTableView):
    """A table of the session's steps; selecting a row sets ``session.step`` and vice versa.

    Args:
        session: the session it observes; it changes state only through ``session.set_step``.
    """

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self._model = StepTableModel(session, self)
        self.setModel(self._model)
        self.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.setWordWrap(False)
        self.setAlternatingRowColors(True)
        self.verticalHeader().hide()
        # Fixed row heights: the view never measures rows, so thousands of steps scroll without cost.
        self.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 6)
        header = self.horizontalHeader()
        header.setStretchLastSection(True)
        for col, width in ((COL_MARK, 96), (COL_INDEX, 40), (COL_TIME, 60), (COL_TYPE, 80), (COL_ACTION, 260),
                           (COL_SCORE, 64)):
            self.setColumnWidth(col, max(width, header.fontMetrics().horizontalAdvance(COLUMNS[col]) + 24))
        self.selectionModel().currentRowChanged.connect(self._on_current_row)
        session.step_changed.connect(self._on_step)
        session.trajectory_changed.connect(lambda _t: self._on_step(session.step))
        self._on_step(session.step)

    def set_step_marks(self, marks: dict[int, str]) -> None:
        """Mark labelled steps: ``marks`` maps step index -> short label text shown in the first column."""
        self._model.set_step_marks(marks)

    def _on_current_row(self, current: QModelIndex, _previous: QModelIndex) -> None:
        if current.isValid():
            self.session.set_step(current.row())

    def _on_step(self, step: int) -> None:
        if not 0 <= step < self._model.rowCount():
            return
        if self.currentIndex().row() == step:
            return
        idx = self._model.index(step, COL_INDEX)
        self.selectionModel().setCurrentIndex(
            idx, QItemSelectionModel.SelectionFlag.ClearAndSelect | QItemSelectionModel.SelectionFlag.Rows)
        self.scrollTo(idx, QAbstractItemView.ScrollHint.EnsureVisible)
