"""Model → Judges vs humans…: the table of ``rollscope eval --library DIR --judge ...`` for the open library.

:class:`VersusController` runs the comparison (:func:`gui_app.core.annotation.versus.versus`, the command's own
function) in a worker through the runner, with progress and cancel: the judges ticked, each with the options the
app keeps for it (Model → Judge settings…), against the library's final human labels or the environment's outcome;
the judges load and score in the app's scoring process (:class:`~gui_app.core.scoring.process.ScoringProcess`), one
after the other, never in the app's memory. :class:`VersusDialog` is its view: the judges to compare, the reference,
Run / Cancel, a progress bar, the table (a row per judge, the command's columns) and, below it, every run a judge
could not score and why.

:func:`versus_task` is what the worker runs: plain data in and out, no Qt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (QComboBox, QDialog, QFormLayout, QHBoxLayout, QHeaderView, QLabel, QListWidget,
                               QListWidgetItem, QPlainTextEdit, QProgressBar, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)

from gui_app.core.annotation.versus import COLUMNS, VersusReport, cell, plural, reference_runs, versus
from gui_app.core.library.catalog import Catalog
from gui_app.core.safety import printable
from gui_app.core.scoring.process import ScoringProcess
from gui_app.core.settings import Settings
from gui_app.core.store.interface import AnnotationStore
from gui_app.judges.registry import JudgeError, JudgeSpec, load_judge, resolve_options
from gui_app.qt.controllers import judge_options
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.workers import Job, Progress, Reporter, Runner


@dataclass(frozen=True)
class JudgeEntry:
    """A judge the table can compare: its name, the options the app keeps for it, and why it cannot run as they
    are (a required option not set), or None."""

    name: str
    options: dict[str, str]
    problem: str | None = None


def versus_task(root: Path, store: AnnotationStore | None, catalog: Catalog | None, against: str,
                judges: Sequence[JudgeEntry], rep: Reporter, tasks_roots: Sequence[str] | None = None,
                process: ScoringProcess | None = None) -> VersusReport:
    """Compare ``judges`` with the library's final labels (``against="labels"``) or the runs' outcome, in a worker;
    the judges load and score in ``process`` (the app's scoring process) when given."""
    rep.progress(0, None, "reading the labels" if against == "labels" else "reading the runs' outcomes")
    references, skipped = reference_runs(against, [root], store, catalog)
    rep.check()
    instructions = catalog.stored_instructions() if catalog is not None else None
    return versus(references, [(j.name, partial(load_judge, j.name, j.options)) for j in judges], against,
                  skipped=skipped, progress=rep.progress, cancel=rep.cancelled, library_root=root,
                  tasks_roots=tasks_roots, instructions=instructions, process=process)


class VersusController(QObject):
    """Runs the judges-vs-humans comparison of the session's library in a worker.

    Signals:
        progressed(object): the job's :class:`~gui_app.qt.workers.Progress`.
        reported(object): the :class:`~gui_app.core.annotation.versus.VersusReport` (a cancelled one included: it
            covers the runs scored before the cancel).
        failed(str): the comparison could not run (no labels, no store); the notifier says it too.
        ended(): the job ended, whatever the outcome.
    """

    progressed = Signal(object)
    reported = Signal(object)
    failed = Signal(str)
    ended = Signal()

    def __init__(self, runner: Runner, session: Session, notifier: Notifier, judges: Sequence[JudgeEntry],
                 parent: QObject | None = None, process: ScoringProcess | None = None):
        super().__init__(parent)
        self.runner, self.session, self.notifier = runner, session, notifier
        self.process = process  # where the judges load and score (the app's scoring process); None: in a worker here
        self.judges = list(judges)
        self.job: Job | None = None
        self.report: VersusReport | None = None

    def run(self, names: Sequence[str], against: str) -> Job | None:
        """Compare the judges ``names`` with the reference ``against`` (``labels`` or ``outcome``)."""
        library = self.session.library
        if library is None:
            self.notifier.info("Open a folder first (Ctrl+O)")
            return None
        if self.job is not None:
            self.notifier.info("The judges are being compared already (Cancel stops it)")
            return None
        chosen = [j for j in self.judges if j.name in names and j.problem is None]
        if not chosen:
            self.notifier.info("Tick a judge to compare (Model → Judge settings… sets their options)")
            return None
        root, store, catalog, tasks = library.root, library.store, library.catalog, library.tasks_roots
        process = self.process
        job = self.runner.submit(f"Comparing {', '.join(j.name for j in chosen)} with the "
                                 f"{'labels' if against == 'labels' else 'outcomes'}",
                                 lambda rep: versus_task(root, store, catalog, against, chosen, rep, tasks, process),
                                 on_progress=self.progressed.emit, on_result=self._done, on_cancelled=self._done,
                                 on_error=lambda exc: self.failed.emit(str(exc)), start=False)
        job.finished.connect(self._ended)
        self.job = job
        self.runner.start(job)
        return job

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()

    def _done(self, report: VersusReport | None) -> None:
        if report is None:
            return
        self.report = report
        self.reported.emit(report)

    def _ended(self) -> None:
        self.job = None
        self.ended.emit()


class VersusDialog(QDialog):
    """The judges, the reference, Run / Cancel, progress, the table and the errors (a view of the controller)."""

    def __init__(self, controller: VersusController, checked: Sequence[str] = (), parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Judges vs humans")
        self.controller = controller
        self.judges = QListWidget(self)
        for j in controller.judges:
            item = QListWidgetItem(j.name, self.judges)
            item.setData(Qt.ItemDataRole.UserRole, j.name)
            if j.problem is not None:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
                item.setText(f"{j.name}: {j.problem}")
                item.setCheckState(Qt.CheckState.Unchecked)
            else:
                item.setCheckState(Qt.CheckState.Checked if j.name in checked else Qt.CheckState.Unchecked)
        self.judges.setMaximumHeight(self.judges.sizeHintForRow(0) * (len(controller.judges) + 1) + 8)
        self.against = QComboBox(self)
        self.against.addItem("the final human labels (adjudicated, else the majority)", "labels")
        self.against.addItem("the environment's outcome", "outcome")
        self.run_button = QPushButton("Run", self)
        self.cancel_button = QPushButton("Cancel", self)
        self.cancel_button.setEnabled(False)
        self.progress = QProgressBar(self)
        self.status = QLabel("", self)
        self.table = QTableWidget(0, len(COLUMNS) + 1, self)
        self.table.setHorizontalHeaderLabels(["judge", *(h for _, h, _ in COLUMNS)])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().setVisible(False)
        self.details = QPlainTextEdit(self)
        self.details.setReadOnly(True)
        form = QFormLayout()
        form.addRow("Judges", self.judges)
        form.addRow("Against", self.against)
        buttons = QHBoxLayout()
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        buttons.addWidget(self.progress, 1)
        box = QVBoxLayout(self)
        box.addLayout(form)
        box.addLayout(buttons)
        box.addWidget(self.status)
        box.addWidget(self.table, 1)
        box.addWidget(self.details, 1)
        self.resize(980, 520)
        self.run_button.clicked.connect(self.run)
        self.cancel_button.clicked.connect(controller.cancel)
        controller.progressed.connect(self._progressed)
        controller.reported.connect(self.show_report)
        controller.failed.connect(self.status.setText)
        controller.ended.connect(self._ended)

    def checked(self) -> list[str]:
        """The judges ticked."""
        items = (self.judges.item(i) for i in range(self.judges.count()))
        return [str(it.data(Qt.ItemDataRole.UserRole)) for it in items if it.checkState() == Qt.CheckState.Checked]

    def run(self) -> Job | None:
        job = self.controller.run(self.checked(), str(self.against.currentData()))
        if job is not None:
            self.run_button.setEnabled(False)
            self.cancel_button.setEnabled(True)
            self.progress.setRange(0, 0)
            self.status.setText("starting")
        return job

    def _progressed(self, p: Progress) -> None:
        if p.total:
            self.progress.setRange(0, p.total)
            self.progress.setValue(p.done)
        if p.text:
            self.status.setText(p.text)

    def _ended(self) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.setRange(0, 1)
        self.progress.setValue(1 if self.controller.report is not None else 0)

    def show_report(self, report: VersusReport) -> None:
        """Fill the table (a row per judge) and the details (every error, what was left out)."""
        self.table.setRowCount(len(report.judges))
        lines: list[str] = []
        for row, j in enumerate(report.judges):
            m = j.metrics()
            values = [j.judge, *("load failed" if j.load_error and k == "n" else cell(m[k], f) for k, _, f in COLUMNS)]
            for col, text in enumerate(values):
                item = QTableWidgetItem(text)
                item.setToolTip(j.model or (j.load_error or ""))
                if col:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(row, col, item)
            if j.load_error:
                lines.append(f"{j.judge}: cannot load: {j.load_error}")
            else:
                lines.append(f"{j.judge}: {j.model}: {m['n']} of {j.attempted} runs scored ({m['n_success']} "
                             f"success / {m['n_failure']} failure by the reference); steps compared on "
                             f"{plural(m['n_step'], 'run')} both call failures")
            lines += [f"  {printable(key)}: {reason}" for key, reason in j.errors]
        if report.skipped:
            lines.append(f"Left out ({len(report.skipped)}: no usable reference verdict):")
            lines += [f"  {printable(key)}: {reason}" for key, reason in report.skipped]
        self.details.setPlainText("\n".join(lines))
        against = "the final human labels" if report.against == "labels" else "the environment's outcome"
        self.status.setText(f"{report.n_reference} runs against {against}"
                            + ("; cancelled: the figures cover the runs scored before" if report.cancelled else ""))

    def rows(self) -> list[list[str]]:
        """The table's text, row by row (what a test reads)."""
        items = [[self.table.item(r, c) for c in range(self.table.columnCount())] for r in range(self.table.rowCount())]
        return [["" if it is None else it.text() for it in row] for row in items]

    def reject(self) -> None:
        self.controller.cancel()  # closing the table stops the work it was waiting for
        super().reject()


def entries(settings: Settings, specs: Sequence[JudgeSpec]) -> list[JudgeEntry]:
    """Every judge in ``specs`` with the options the app keeps for it (``settings``), checked: one that cannot run
    as set says why."""
    out = []
    for s in specs:
        options = judge_options(s.name, settings)
        try:
            out.append(JudgeEntry(s.name, resolve_options(s, options)))
        except JudgeError as exc:
            out.append(JudgeEntry(s.name, options, f"{exc} (Model → Judge settings…)"))
    return out
