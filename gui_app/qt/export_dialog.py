"""File → Export…: the formats and filters of ``rollscope export``, run in a worker with progress and cancel.

:class:`ExportDialog` asks for an :class:`ExportRequest` (format, output path, the same filters as the command line:
annotator, adjudicated only, taxonomy label, human verdict, harm verdict, split by task). :func:`export_task` is what
the worker runs: the core's :func:`gui_app.core.annotation.export.export` over the open library's store, joined with its
catalog, with the store's record count as the progress total. :class:`ExportController` submits it through the runner
and reports what was written, or why nothing was (an output path that is the label store, a device or a file that is not
an export is refused by the core, and the refusal is shown like any other error).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QStandardPaths, Signal
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDialog, QDialogButtonBox, QDoubleSpinBox, QFileDialog,
                               QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget)

from gui_app.core.library.catalog import Catalog
from gui_app.core.errors import RollscopeError
from gui_app.core.store.record import HARM_VERDICTS
from gui_app.core.store.interface import AnnotationStore
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.workers import Job, Reporter, Runner

if TYPE_CHECKING:
    from gui_app.core.annotation.export import ExportFilter, ExportResult

# The core's export module is imported when an export is asked for, not with the window: the app paints its
# library before anything else.

# format -> (what it is, file suffix; '' for a folder): one entry per core format (gui_app.core.annotation.export's
# FORMATS; a test holds them together)
FORMAT_INFO: dict[str, tuple[str, str]] = {
    "parquet": ("Parquet table, one row per record", ".parquet"),
    "jsonl": ("JSON Lines, one record per line", ".jsonl"),
    "csv": ("CSV (list columns as JSON text)", ".csv"),
    "hf": ("Hugging Face datasets folder with a dataset card", ""),
    "sft": ("Reward-model training data (ExeVRM-style chat JSONL)", ".jsonl"),
    "whowhen": ("Who&When failure-attribution records (JSONL)", ".jsonl"),
}


def _no_filter() -> ExportFilter:
    from gui_app.core.annotation.export import ExportFilter

    return ExportFilter()


@dataclass
class ExportRequest:
    """What to export where: the arguments of ``rollscope export``."""

    fmt: str
    out: Path
    filters: ExportFilter = field(default_factory=_no_filter)
    split_by_task: bool = False
    test_fraction: float = 0.2
    join_catalog: bool = True
    force: bool = False  # replace a file that is not an export (never the store, the catalog or a device)

    @property
    def writes_folder(self) -> bool:
        return self.fmt == "hf" or self.split_by_task


def export_task(store: AnnotationStore, catalog: Catalog | None, request: ExportRequest,
                rep: Reporter) -> ExportResult:
    """Run one export (worker thread): progress counts records against the store's total; cancel stops it before
    anything is written."""
    from gui_app.core.annotation.export import export

    total = store.count()
    done = 0
    rep.progress(0, total, f"exporting {request.fmt}")

    def progress(n: int) -> None:
        nonlocal done
        done += n
        rep.check()  # raises JobCancelled: the export stops before writing its file
        rep.progress(min(done, total), total, f"exporting {request.fmt}")

    result = export(store, request.out, request.fmt, catalog=catalog if request.join_catalog else None,
                    filters=request.filters, split_by_task=request.split_by_task,
                    test_fraction=request.test_fraction, progress=progress, force=request.force)
    rep.progress(total, total, f"wrote {result.rows} rows")
    return result


class ExportDialog(QDialog):
    """The export options, as ``rollscope export`` takes them."""

    def __init__(self, annotators: list[str], start: Path, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Export labels")
        self._start = start
        self.format = QComboBox(self)
        for fmt, (text, _suffix) in FORMAT_INFO.items():
            self.format.addItem(f"{fmt} — {text}", fmt)
        self.out = QLineEdit(self)
        browse = QPushButton("Browse…", self)
        browse.clicked.connect(self._browse)
        out_row = QHBoxLayout()
        out_row.addWidget(self.out, 1)
        out_row.addWidget(browse)
        self.annotator = QComboBox(self)
        self.annotator.addItem("every annotator", None)
        for name in annotators:
            self.annotator.addItem(name, name)
        self.adjudicated = QCheckBox("only adjudicated (final) records", self)
        self.label = QLineEdit(self)
        self.label.setPlaceholderText("any (e.g. computer_use:input.typo, input.typo or input)")
        self.outcome = QComboBox(self)
        for text, value in (("any verdict", None), ("success", "success"), ("failure", "failure")):
            self.outcome.addItem(text, value)
        self.harm = QComboBox(self)
        self.harm.addItem("any harm verdict", None)
        for value in HARM_VERDICTS:
            self.harm.addItem(value, value)
        self.split = QCheckBox("train/test split with whole tasks on one side", self)
        self.fraction = QDoubleSpinBox(self)
        self.fraction.setRange(0.05, 0.95)
        self.fraction.setSingleStep(0.05)
        self.fraction.setValue(0.2)
        self.join = QCheckBox("join the catalog (instruction, task, outcome, model score)", self)
        self.join.setChecked(True)
        self.note = QLabel(self)
        self.note.setWordWrap(True)
        self.note.setStyleSheet("color: #888")
        form = QFormLayout()
        form.addRow("Format", self.format)
        form.addRow("Output", out_row)
        form.addRow("Annotator", self.annotator)
        form.addRow("", self.adjudicated)
        form.addRow("Taxonomy label", self.label)
        form.addRow("Human verdict", self.outcome)
        form.addRow("Harm verdict", self.harm)
        form.addRow("Split", self.split)
        form.addRow("Test fraction", self.fraction)
        form.addRow("", self.join)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel,
                                        self)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Export")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.note)
        layout.addWidget(self.buttons)
        self.format.currentIndexChanged.connect(lambda _i: self._format_changed())
        self.split.toggled.connect(lambda _on: self._format_changed())
        self.out.textChanged.connect(lambda _t: self._validate())
        self._format_changed()
        self.resize(620, 0)

    def request(self) -> ExportRequest:
        """The request the dialog holds now."""
        from gui_app.core.annotation.export import ExportFilter

        label = self.label.text().strip() or None
        return ExportRequest(
            fmt=str(self.format.currentData()), out=Path(self.out.text().strip()).expanduser(),
            filters=ExportFilter(annotator=self.annotator.currentData(), adjudicated_only=self.adjudicated.isChecked(),
                                 taxonomy_label=label, outcome=self.outcome.currentData(),
                                 harm=self.harm.currentData()),
            split_by_task=self.split.isChecked(), test_fraction=float(self.fraction.value()),
            join_catalog=self.join.isChecked())

    def _format_changed(self) -> None:
        req = self.request()
        suffix = FORMAT_INFO[req.fmt][1]
        current = self.out.text().strip()
        base = Path(current).parent if current else self._start
        stem = Path(current).stem if current else "labels"
        self.out.setText(str(base / (stem if req.writes_folder else stem + suffix)))
        self.fraction.setEnabled(req.split_by_task)
        self.note.setText("Writes a folder (train/ and test/ files, or a Hugging Face dataset)." if req.writes_folder
                          else "Writes one file.")
        self._validate()

    def _validate(self) -> None:
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(bool(self.out.text().strip()))

    def _browse(self) -> None:
        req = self.request()
        if req.writes_folder:
            path = QFileDialog.getExistingDirectory(self, "Export into folder", str(req.out.parent))
        else:
            path, _ = QFileDialog.getSaveFileName(self, "Export to file", str(req.out))
        if path:
            self.out.setText(path)


def documents_folder() -> Path:
    """The user's documents folder (their home when there is none): where a first export goes."""
    found = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
    return Path(found) if found and Path(found).is_dir() else Path.home()


class ExportController(QObject):
    """Runs exports of the session's library in a worker and says what they wrote.

    The dialog starts in the folder the last export went to (:attr:`last_folder`, kept in the settings), else in
    the user's documents folder: never inside the library, where an export would sit among the runs (the demo left a
    ``labels.parquet`` in the checkout).

    Signals:
        exported(object): the :class:`~gui_app.core.annotation.export.ExportResult` of an export that finished.
        folder_used(str): an export was written into this folder (the next one starts there).
    """

    exported = Signal(object)
    folder_used = Signal(str)

    def __init__(self, runner: Runner, session: Session, notifier: Notifier, parent: QObject | None = None,
                 last_folder: str = ""):
        super().__init__(parent)
        self.runner, self.session, self.notifier = runner, session, notifier
        self.last_folder = last_folder
        self.job: Job | None = None

    def annotators(self) -> list[str]:
        library = self.session.library
        if library is None or library.store is None:
            return []
        try:
            return library.store.annotators()
        except RollscopeError:
            return []

    def start_folder(self) -> Path:
        """Where the export dialog starts: the last export's folder while it exists, else the documents folder."""
        last = Path(self.last_folder) if self.last_folder else None
        return last if last is not None and last.is_dir() else documents_folder()

    def dialog(self, parent: QWidget | None = None) -> ExportDialog | None:
        """The export dialog for the open library, starting in :meth:`start_folder` (None, and said why, when no
        library with labels is open)."""
        library = self.session.library
        if library is None or library.store is None:
            self.notifier.info("Open a folder with labels first (Ctrl+O)")
            return None
        return ExportDialog(self.annotators(), self.start_folder(), parent)

    def ask(self, parent: QWidget) -> Job | None:
        """File → Export…: the dialog, then the export it asks for (in a worker)."""
        dialog = self.dialog(parent)
        if dialog is None or dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return self.start(dialog.request())

    def start(self, request: ExportRequest) -> Job | None:
        """Export the open library's labels as ``request`` says (in a worker)."""
        library = self.session.library
        if library is None or library.store is None:
            self.notifier.info("Open a folder with labels first (Ctrl+O)")
            return None
        if self.job is not None:
            self.notifier.info("An export is already running (Esc cancels it)")
            return None
        store, catalog = library.store, library.catalog
        folder = str(request.out.expanduser().resolve().parent)
        job = self.runner.submit(f"Exporting {request.fmt} to {request.out}",
                                 lambda rep: export_task(store, catalog, request, rep),
                                 on_result=lambda result: self._done(result, folder),
                                 on_cancelled=lambda _r: self.notifier.info(
                                     "Export cancelled: nothing was written"), start=False)
        job.finished.connect(lambda: setattr(self, "job", None))
        self.job = job
        self.runner.start(job)
        return job

    def _done(self, result: ExportResult, folder: str) -> None:
        if folder != self.last_folder:  # written there: the next export starts there (a refused one does not)
            self.last_folder = folder
            self.folder_used.emit(folder)
        split = "" if not result.by_split else " (" + ", ".join(f"{k} {v}" for k, v in result.by_split.items()) + ")"
        skipped = f"; {result.skipped} without a success/failure verdict skipped" if result.skipped else ""
        text = f"Exported {result.rows} rows{split} as {result.format}: {', '.join(result.paths)}{skipped}"
        if result.warnings:
            self.notifier.warning(f"{text}; {len(result.warnings)} warning(s): {result.warnings[0]}")
        else:
            self.notifier.info(text)
        self.exported.emit(result)
