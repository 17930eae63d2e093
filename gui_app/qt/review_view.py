"""Review and adjudication: every annotator's labels for one trajectory side by side (the safety verdict too), the
final label, a human override of the automatic outcome, and inter-annotator agreement over the whole store.

All data comes from :meth:`AnnotationStore.review` and :func:`gui_app.core.annotation.agreement.report`; the view only
shows
it and sends the adjudicator's choices back through the store.
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable
from typing import Any, TypeVar

from PySide6.QtCore import Signal
from PySide6.QtGui import QBrush, QColor, QShowEvent
from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from gui_app.core.annotation import agreement
from gui_app.core.annotation import taxonomy as taxonomy_mod
from gui_app.core.store.record import HARM_VERDICTS, VERDICTS, Annotation, Review, ScoreOverride
from gui_app.core.errors import RollscopeError
from gui_app.core.store.interface import AnnotationStore
from gui_app.core.annotation.taxonomy import Taxonomy
from gui_app.core.trajectory.model import Trajectory, step_text
from gui_app.qt.session import Session
from gui_app.qt.workers import JobQueue, Reporter, Runner

T = TypeVar("T")

# (row title, how to show a record's value)
ROWS: tuple[tuple[str, str], ...] = (
    ("Verdict", "verdict"),
    ("Harm verdict", "harm_verdict"),
    ("Labels", "labels"),
    ("Root cause step", "root_cause_step"),
    ("Module", "root_cause_module"),
    ("Error type", "root_cause_error_type"),
    ("First harmful step", "first_harmful_step"),
    ("Harm category", "harm_category"),
    ("Harm types", "harm_types"),
    ("Evidence", "evidence"),
    ("Correction", "correction_guidance"),
    ("Cascading", "cascading"),
    ("Step comments", "step_comments"),
    ("Confidence", "confidence"),
    ("Mistake agent", "mistake_agent"),
    ("Notes", "notes"),
    ("Time spent (s)", "time_spent"),
)
DIFFER_COLOUR = QColor(255, 224, 178)


def _names(ids: list[str], taxonomy: Taxonomy | None) -> str:
    """Label ids as their names in ``taxonomy`` (ids of another taxonomy, or unknown codes, as they are)."""
    if taxonomy is None:
        return ", ".join(ids)
    return ", ".join((lab.name if (lab := taxonomy.get(x)) is not None and x.startswith(taxonomy.name + ":")
                      else x) for x in ids)


def show_value(a: Annotation | None, field: str, taxonomy: Taxonomy | None = None,
               harm: Taxonomy | None = None) -> str:
    """A record's field as text for a table cell (label names from ``taxonomy``, harm names from ``harm``)."""
    if a is None:
        return ""
    v = getattr(a, field)
    if field == "labels":
        return _names(v, taxonomy)
    if field == "harm_types":
        return _names(v, harm)
    if field == "harm_category" and v is not None and harm is not None:
        lab = harm.get(v)
        return lab.name if lab is not None else str(v)
    if field == "cascading":
        return "; ".join(step_text(c.step) + (f": {c.effect}" if c.effect else "") for c in v)
    if field == "step_comments":
        return "; ".join(f"{step_text(s)}: {t}" for s, t in sorted(v.items()))
    if field in ("root_cause_step", "first_harmful_step") and v is not None:
        return step_text(v)
    if field in ("confidence", "time_spent") and v is not None:
        return f"{v:.2f}" if field == "confidence" else f"{v:.0f}"
    return "" if v is None else str(v)


class ReviewView(QWidget):
    """Side-by-side review of one trajectory, adjudication, score override and an agreement tab.

    Args:
        store: the annotation store (None until a library is open; :meth:`set_store`).
        taxonomy: used to show label names (codes otherwise).
        adjudicator: who adjudicates (default: the login name).
        runner: a :class:`gui_app.qt.workers.Runner`; when given, agreement is computed in the background.
        writes: the queue store writes run through, off the GUI thread (None: write at once).

    Signals:
        final_changed(str): the final label of a trajectory was stored.
        agreement_ready(dict): an agreement report was computed and shown.
        override_recorded(object): a :class:`~gui_app.core.store.record.ScoreOverride` was stored.
        error(str): a store operation failed (the text is also shown in the view).
    """

    final_changed = Signal(str)
    agreement_ready = Signal(object)
    override_recorded = Signal(object)
    error = Signal(str)

    def __init__(self, store: AnnotationStore | None, taxonomy: Taxonomy | None = None, adjudicator: str | None = None,
                 runner: Runner | None = None, parent: QWidget | None = None, writes: JobQueue | None = None):
        super().__init__(parent)
        self.store, self.taxonomy, self.runner = store, taxonomy, runner
        self.harm_taxonomy = taxonomy_mod.harm()
        self._writes = writes
        self.adjudicator = adjudicator or getpass.getuser() or "adjudicator"
        self.trajectory_id: str | None = None
        self.review: Review | None = None
        self._model_outcome: tuple[bool | None, float | None] = (None, None)
        self._build()

    def _build(self) -> None:
        lay = QVBoxLayout(self)
        self.tabs = QTabWidget()
        lay.addWidget(self.tabs)

        page = QWidget()
        pl = QVBoxLayout(page)
        self.title = QLabel("No trajectory selected")
        self.title.setWordWrap(True)  # a long library key wraps: the review fits the labels' column
        pl.addWidget(self.title)
        self.table = QTableWidget(len(ROWS), 0)
        self.table.setVerticalHeaderLabels([r[0] for r in ROWS])
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        pl.addWidget(self.table, 1)

        adj = QGroupBox("Final label")
        al = QFormLayout(adj)
        row = QHBoxLayout()
        self.source_combo = QComboBox()
        self.adopt_button = QPushButton("Adopt as final")
        self.adopt_button.clicked.connect(self._adopt_clicked)
        row.addWidget(self.source_combo, 1)
        row.addWidget(self.adopt_button)
        al.addRow("From annotator", row)
        row2 = QHBoxLayout()
        self.final_verdict = QComboBox()
        self.final_verdict.addItem("", None)
        for v in VERDICTS:
            self.final_verdict.addItem(v, v)
        self.final_verdict.activated.connect(lambda _i: self.set_final_verdict(self.final_verdict.currentData()))
        row2.addWidget(self.final_verdict, 1)
        al.addRow("Final verdict", row2)
        self.final_harm_verdict = QComboBox()
        self.final_harm_verdict.addItem("", None)
        for v in HARM_VERDICTS:
            self.final_harm_verdict.addItem(v, v)
        self.final_harm_verdict.activated.connect(
            lambda _i: self.set_final_harm_verdict(self.final_harm_verdict.currentData()))
        al.addRow("Final harm verdict", self.final_harm_verdict)
        pl.addWidget(adj)

        ov = QGroupBox("Override the automatic outcome")
        ol = QFormLayout(ov)
        self.override_outcome = QComboBox()
        self.override_outcome.addItem("success", True)
        self.override_outcome.addItem("failure", False)
        self.override_reason = QLineEdit()
        self.override_reason.setPlaceholderText("why (required)")
        self.override_button = QPushButton("Record override")
        self.override_button.clicked.connect(self._override_clicked)
        ol.addRow("Outcome", self.override_outcome)
        ol.addRow("Reason", self.override_reason)
        ol.addRow(self.override_button)
        self.overrides_label = QLabel("")
        self.overrides_label.setWordWrap(True)
        ol.addRow(self.overrides_label)
        pl.addWidget(ov)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        pl.addWidget(self.status)
        self.tabs.addTab(page, "Compare")

        ag = QWidget()
        gl = QVBoxLayout(ag)
        self.agreement_button = QPushButton("Compute agreement")
        self.agreement_button.clicked.connect(self.refresh_agreement)
        self.agreement_text = QPlainTextEdit()
        self.agreement_text.setReadOnly(True)
        gl.addWidget(self.agreement_button)
        gl.addWidget(self.agreement_text, 1)
        self.tabs.addTab(ag, "Agreement")
        self.agreement: dict[str, Any] | None = None

    # --- data -----------------------------------------------------------------------------------
    def set_store(self, store: AnnotationStore | None) -> None:
        """Review another library's labels (None: none open)."""
        self.store = store
        self.agreement = None
        self.agreement_text.clear()
        self.refresh()

    def follow(self, session: Session) -> None:
        """Review whatever ``session`` has open: its library's store and its trajectory, whose environment outcome
        is what an override replaces."""

        def opened(traj: Trajectory | None) -> None:
            if traj is None or traj.key is None:  # labels are keyed by the library key, never the format's own id
                self.set_trajectory(None)
            else:
                self.set_trajectory(traj.key, traj.outcome.success, traj.outcome.score)

        session.library_changed.connect(lambda lib: self.set_store(lib.store if lib is not None else None))
        session.trajectory_changed.connect(opened)
        opened(session.trajectory)

    def on_saved(self, trajectory_id: str) -> None:
        """A label of ``trajectory_id`` was saved elsewhere (the label panel): re-read it if it is shown."""
        if trajectory_id == self.trajectory_id and self.isVisible():
            self.refresh()

    def showEvent(self, event: QShowEvent) -> None:  # noqa: N802 -- Qt override
        self.refresh()  # labels saved while hidden were not re-read
        super().showEvent(event)

    def set_trajectory(self, trajectory_id: str | None, model_success: bool | None = None,
                       model_score: float | None = None) -> None:
        """Show ``trajectory_id``; the model's (or environment's) outcome is recorded as the 'previous' value of
        an override."""
        self.trajectory_id = trajectory_id
        self._model_outcome = (model_success, model_score)
        self.refresh()

    def refresh(self) -> None:
        tid = self.trajectory_id
        self.review = None
        if tid is not None and self.store is not None:
            try:
                self.review = self.store.review(tid)
            except RollscopeError as exc:
                self._fail(str(exc))
        rv = self.review
        people = list(rv.annotations) if rv else []
        cols = [*people, "Final"]
        self.table.setColumnCount(len(cols))
        self.table.setHorizontalHeaderLabels(cols)
        records: list[Annotation | None] = [rv.annotations[p] for p in people] if rv else []
        records.append(rv.final if rv else None)
        differing = set(rv.differing) if rv else set()
        for r, (_title, field) in enumerate(ROWS):
            for c, rec in enumerate(records):
                item = QTableWidgetItem(show_value(rec, field, self.taxonomy, self.harm_taxonomy))
                item.setToolTip(item.text())
                if field in differing and c < len(people):
                    item.setBackground(QBrush(DIFFER_COLOUR))
                self.table.setItem(r, c, item)
        if tid is None:
            self.title.setText("No trajectory selected")
        else:
            final = "adjudicated" if rv and rv.final else "not adjudicated"
            self.title.setText(f"<b>{tid}</b>: {len(people)} annotator(s), {final}; differ on: "
                               f"{', '.join(rv.differing) if rv and rv.differing else 'nothing'}")
        self.source_combo.clear()
        self.source_combo.addItems(people)
        has = tid is not None and self.store is not None
        for w in (self.adopt_button, self.final_verdict, self.final_harm_verdict, self.override_button):
            w.setEnabled(has)
        self.adopt_button.setEnabled(bool(people))
        for combo, field in ((self.final_verdict, "verdict"), (self.final_harm_verdict, "harm_verdict")):
            fv = getattr(rv.final, field) if rv and rv.final else None
            combo.setCurrentIndex(max(combo.findData(fv), 0) if fv else 0)
        self.overrides_label.setText("\n".join(
            f"{o.actor}: success={o.success} (was {o.previous_success}) — {o.reason}" for o in (rv.overrides if rv
                                                                                               else [])))

    def _column(self, column: str) -> int:
        headers = [self.table.horizontalHeaderItem(c) for c in range(self.table.columnCount())]
        return [h.text() if h is not None else "" for h in headers].index(column)

    def cell(self, field: str, column: str) -> str:
        """The text shown for ``field`` in column ``column`` (an annotator or ``Final``)."""
        row = [f for _, f in ROWS].index(field)
        item = self.table.item(row, self._column(column))
        return item.text() if item is not None else ""

    def is_highlighted(self, field: str, column: str) -> bool:
        row = [f for _, f in ROWS].index(field)
        item = self.table.item(row, self._column(column))
        return item is not None and item.background().color() == DIFFER_COLOUR

    # --- actions ----------------------------------------------------------------------------------
    def _fail(self, reason: str) -> None:
        self.status.setText(f"✗ {reason}")
        self.status.setStyleSheet("color: #c62828")
        self.error.emit(reason)

    def _ok(self, text: str) -> None:
        self.status.setText(f"✓ {text}")
        self.status.setStyleSheet("color: #2e7d32")

    def _write(self, what: str, op: Callable[[AnnotationStore, str], T], done: Callable[[str, T], None]) -> None:
        """Run one store write for the trajectory shown: through the write queue when there is one (off the GUI
        thread, in order with the label panel's writes), else at once; ``done(trajectory_id, result)`` follows."""
        store, tid = self.store, self.trajectory_id
        if store is None or tid is None:
            return
        if self._writes is None:
            try:
                result = op(store, tid)
            except RollscopeError as exc:
                self._fail(str(exc))
                return
            done(tid, result)
            return
        self.status.setText(f"… {what}")
        self._writes.submit(what, lambda: op(store, tid), on_result=lambda result: done(tid, result),
                            on_error=lambda exc: self._fail(str(exc)))

    def _final_written(self, tid: str, text: str) -> None:
        self._ok(text)
        if tid == self.trajectory_id:
            self.refresh()
        self.final_changed.emit(tid)

    def adopt(self, annotator: str) -> None:
        """Make ``annotator``'s record the final label."""
        who = self.adjudicator
        self._write(f"adopting {annotator}'s label", lambda st, tid: st.adjudicate(tid, who, annotator),
                    lambda tid, _final: self._final_written(tid, f"final label taken from {annotator}"))

    def _adopt_clicked(self) -> None:
        if self.source_combo.currentText():
            self.adopt(self.source_combo.currentText())

    def set_final_verdict(self, verdict: str | None) -> None:
        """Write the final verdict directly (the adjudicator's own call)."""
        self._set_final("verdict", "final verdict", verdict)

    def set_final_harm_verdict(self, verdict: str | None) -> None:
        """Write the final safety verdict directly (the adjudicator's own call)."""
        self._set_final("harm_verdict", "final harm verdict", verdict)

    def _set_final(self, field: str, what: str, verdict: str | None) -> None:
        who = self.adjudicator
        self._write(f"setting the {what}",
                    lambda st, tid: st.set_field(tid, who, field, verdict, role="adjudicator"),
                    lambda tid, _changed: self._final_written(tid, f"{what} set to {verdict}"))

    def override(self, success: bool, reason: str) -> None:
        """Record a human override of the automatic outcome, with who (the adjudicator) and why."""
        who, (previous_success, previous_score) = self.adjudicator, self._model_outcome
        self._write("recording the override",
                    lambda st, tid: st.override_score(tid, who, success, reason, previous_success=previous_success,
                                                      previous_score=previous_score),
                    self._override_written)

    def _override_written(self, tid: str, override: ScoreOverride) -> None:
        self._ok("override recorded")
        self.override_reason.clear()
        if tid == self.trajectory_id:
            self.refresh()
        self.override_recorded.emit(override)

    def _override_clicked(self) -> None:
        self.override(bool(self.override_outcome.currentData()), self.override_reason.text())

    def refresh_agreement(self) -> dict[str, Any] | None:
        """Compute agreement over the whole store and show it (the dict is kept in ``agreement``).

        With a runner the work goes to a background thread and this returns None; :attr:`agreement_ready`
        fires when the report is shown. Without one it is computed here and returned.
        """
        store = self.store
        if store is None:
            self._fail("no annotation store open")
            return None

        def task(_reporter: Reporter | None) -> dict[str, Any]:  # plain data only: runs off the GUI thread
            return agreement.report([a for page in store.iter_annotations() for a in page])

        if self.runner is not None:
            self.agreement_button.setEnabled(False)
            self.agreement_text.setPlainText("computing…")
            self.runner.submit("Computing inter-annotator agreement", task, on_result=self._show_agreement,
                               on_error=lambda exc: self._fail(str(exc)),
                               on_finished=lambda: self.agreement_button.setEnabled(True), report_errors=False)
            return None
        try:
            rep = task(None)
        except RollscopeError as exc:
            self._fail(str(exc))
            return None
        self._show_agreement(rep)
        return rep

    def _show_agreement(self, rep: dict[str, Any]) -> None:
        self.agreement = rep
        self.agreement_text.setPlainText(agreement.format_report(rep))
        self.agreement_text.setToolTip(json.dumps(rep["verdict"]["fleiss"]))
        self.agreement_ready.emit(rep)



