"""The open run's instruction, and the instructions a user gives runs that have none, from the app.

:class:`InstructionController` is the model the run header (:mod:`gui_app.qt.run_header`) shows: for the session's
trajectory, its own instruction and where it came from, or the one given to its task (read from the catalog in a
worker), and the scopes one can be given to (:func:`gui_app.core.scoring.instructions.scopes`). It writes what a
user gives (typed, or read from a folder of task configs for the whole library:
:func:`gui_app.core.library.instructions.instructions_from_task_configs`) through the runner, then reads the state
again. :class:`InstructionDialog` is where the user gives it: type or paste, or point at a folder.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (QComboBox, QDialog, QDialogButtonBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QPushButton, QTabWidget, QVBoxLayout, QWidget)

from gui_app.core.library.catalog import Catalog
from gui_app.core.library.instructions import ConfigReport, instructions_from_task_configs
from gui_app.core.scoring.instructions import Scope, StoredInstruction, own_source_text, scopes
from gui_app.core.trajectory.model import Trajectory
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.workers import Job, Reporter, Runner


@dataclass(frozen=True)
class InstructionState:
    """What the run header shows of the open run's instruction.

    Attributes:
        key: the session's key of the run.
        own: the run's own instruction ('' when its format kept none).
        own_source: where its own came from, in words ('' when the format says nothing).
        given: the instruction a user gave its task (or domain, or the run), used when it has none of its own.
        scopes: what an instruction can be given to, the default first.
        reading: the catalog is being asked for ``given``.
    """

    key: str
    own: str = ""
    own_source: str = ""
    given: StoredInstruction | None = None
    scopes: tuple[Scope, ...] = field(default_factory=tuple)
    reading: bool = False

    @property
    def missing(self) -> bool:
        """The run has nothing to be judged against (and the catalog has answered)."""
        return not self.own and self.given is None and not self.reading


def read_given(catalog: Catalog, traj: Trajectory) -> StoredInstruction | None:
    """The instruction given to ``traj``'s scopes (a worker's read)."""
    return catalog.instruction_for(traj)


class InstructionController(QObject):
    """The open run's instruction (see the module docstring).

    Signals:
        changed(object): the new :class:`InstructionState`, or None when no run is open.
        given(str): an instruction was stored for this scope key, or taken back ('' after a folder of task configs:
            many keys).
    """

    changed = Signal(object)
    given = Signal(str)

    def __init__(self, runner: Runner, session: Session, notifier: Notifier, parent: QObject | None = None):
        super().__init__(parent)
        self.runner, self.session, self.notifier = runner, session, notifier
        self.state: InstructionState | None = None
        self.job: Job | None = None  # the last write (a folder of task configs may take a while)
        self._generation = 0
        session.trajectory_changed.connect(lambda _t: self.refresh())
        session.library_changed.connect(lambda _lib: self.refresh())

    def _set(self, state: InstructionState | None) -> None:
        self.state = state
        self.changed.emit(state)

    def refresh(self) -> None:
        """Read the open run's state again (its own instruction at once; what its task was given in a worker)."""
        self._generation += 1
        traj, key, library = self.session.trajectory, self.session.key, self.session.library
        if traj is None or key is None:
            self._set(None)
            return
        base = InstructionState(key, traj.instruction.strip(), own_source_text(traj), None, tuple(scopes(traj)))
        if base.own or library is None:
            self._set(base)
            return
        self._set(InstructionState(base.key, base.own, base.own_source, None, base.scopes, reading=True))
        generation, catalog = self._generation, library.catalog
        self.runner.submit(f"Reading the instruction given to {traj.id}", lambda _rep: read_given(catalog, traj),
                           on_result=lambda given: self._read(generation, base, given),
                           on_error=lambda exc: self._read(generation, base, None, str(exc)),
                           report_errors=False, show_progress=False)

    def _read(self, generation: int, base: InstructionState, given: StoredInstruction | None,
              error: str | None = None) -> None:
        if generation != self._generation:
            return  # another run was opened meanwhile
        if error is not None:
            self.notifier.warning(f"the instruction given to this run's task could not be read: {error}")
        self._set(InstructionState(base.key, base.own, base.own_source, given, base.scopes))

    def _catalog(self) -> Catalog | None:
        library = self.session.library
        if library is None:
            self.notifier.info("Open a library first: instructions are kept in its catalog")
            return None
        return library.catalog

    def give(self, scope: str, text: str) -> Job | None:
        """Give every run of ``scope`` (a scope key) the instruction ``text``, in the catalog (a worker's write)."""
        catalog = self._catalog()
        if catalog is None:
            return None
        if not text.strip():
            self.notifier.warning("An empty instruction judges nothing: type or paste the task as the agent was given "
                                  "it")
            return None
        words = self._scope_text(scope)
        return self._write(f"Giving {words} an instruction", lambda _rep: catalog.set_instruction(scope, text),
                           lambda _stored: self._done(scope, f"Instruction set for {words}: score them with Ctrl+R "
                                                             "(this run) or Ctrl+Shift+R (the library)"))

    def take_back(self, scope: str) -> Job | None:
        """Take back the instruction given to ``scope``."""
        catalog = self._catalog()
        if catalog is None:
            return None
        words = self._scope_text(scope)
        return self._write(f"Taking back the instruction of {words}", lambda _rep: catalog.clear_instruction(scope),
                           lambda _none: self._done(scope, f"Instruction taken back from {words}"))

    def from_task_configs(self, folder: str | Path) -> Job | None:
        """Give every run of the library without an instruction the one its task config under ``folder`` holds
        (each such run read again, in a worker: progress, Esc cancels)."""
        catalog = self._catalog()
        library = self.session.library
        if catalog is None or library is None:
            return None
        root = library.root

        def task(rep: Reporter) -> ConfigReport:
            return instructions_from_task_configs(catalog, folder, root, progress=rep.progress, cancel=rep.cancelled)

        return self._write(f"Reading task configs in {folder}", task, self._configs_read, on_cancelled=True)

    def _write(self, name: str, task: Callable[[Reporter], Any], done: Callable[[Any], None],
               on_cancelled: bool = False) -> Job:
        job = self.runner.submit(name, task, on_result=done, on_cancelled=done if on_cancelled else None, start=False)
        self.job = job
        job.finished.connect(lambda: setattr(self, "job", None) if self.job is job else None)
        self.runner.start(job)
        return job

    def _done(self, scope: str, text: str) -> None:
        self.notifier.info(text)
        self.given.emit(scope)
        self.refresh()

    def _configs_read(self, report: ConfigReport | None) -> None:
        if report is None:
            return
        text = (f"Task configs gave {len(report.tasks):,} task(s) an instruction; {report.runs:,} run(s) without one "
                f"of their own now have one")
        detail = [f"{key}\tno task config found in the folder" for key in report.missing]
        detail += [f"{line}" for line in report.errors]
        if report.cancelled:
            text += " (cancelled: the rest were not read)"
        if report.missing or report.errors:
            self.notifier.warning(f"{text}; {len(report.missing) + len(report.errors):,} still have none: View → Log "
                                  "names each", detail="\n".join(detail))
        else:
            self.notifier.info(text)
        self.given.emit("")
        self.refresh()

    def _scope_text(self, scope: str) -> str:
        for s in self.state.scopes if self.state is not None else ():
            if s.key == scope:
                return s.text
        return scope


class InstructionDialog(QDialog):
    """Give the open run (and every run of its task) an instruction: type or paste it, or point at a folder of task
    configs. Non-modal to the app's work: it acts through the controller when accepted.

    Attributes:
        tabs: "Type or paste" (index 0) and "Task configs folder" (index 1); OK acts on the one shown.
    """

    def __init__(self, controller: InstructionController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        state = controller.state
        self.setWindowTitle("Set the instruction")
        self.tabs = QTabWidget(self)
        typed = QWidget(self)
        self.text = QPlainTextEdit(typed)
        self.text.setPlaceholderText("The task as the agent was given it")
        self.text.setTabChangesFocus(True)
        if state is not None and state.given is not None:
            self.text.setPlainText(state.given.instruction)
        self.scope = QComboBox(typed)
        for s in state.scopes if state is not None else ():
            self.scope.addItem(s.text, s.key)
        if state is not None and state.given is not None:
            self.scope.setCurrentIndex(max(self.scope.findData(state.given.key), 0))
        self.take_back = QPushButton("Take back", typed)
        self.take_back.setToolTip("Remove the instruction given: its runs have none again")
        self.take_back.setVisible(state is not None and state.given is not None)
        self.take_back.clicked.connect(self._take_back)
        form = QVBoxLayout(typed)
        form.addWidget(QLabel("Instruction:", typed))
        form.addWidget(self.text, 1)
        row = QHBoxLayout()
        row.addWidget(QLabel("For:", typed))
        row.addWidget(self.scope, 1)
        row.addWidget(self.take_back)
        form.addLayout(row)
        configs = QWidget(self)
        self.folder = QLineEdit(configs)
        self.folder.setPlaceholderText("OSWorld's evaluation_examples, or any folder of <domain>/<id>.json")
        browse = QPushButton("Browse…", configs)
        browse.clicked.connect(self._browse)
        pick = QHBoxLayout()
        pick.addWidget(self.folder, 1)
        pick.addWidget(browse)
        side = QVBoxLayout(configs)
        explain = QLabel("Every run of the library without an instruction takes the one its task config in this "
                         "folder holds (each is read again, in the background).", configs)
        explain.setWordWrap(True)
        side.addWidget(explain)
        side.addLayout(pick)
        side.addStretch(1)
        self.tabs.addTab(typed, "Type or paste")
        self.tabs.addTab(configs, "Task configs folder")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel,
                                        self)
        self.buttons.accepted.connect(self._accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        head = QLabel("This run has no instruction, so the reward model cannot judge it. The instruction given here "
                      "is kept in the library's catalog and holds for every run it is given to.", self)
        head.setWordWrap(True)
        layout.addWidget(head)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.buttons)
        self.resize(560, 320)
        self.text.setFocus(Qt.FocusReason.OtherFocusReason)

    def _browse(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "A folder of task configs", self.folder.text())
        if folder:
            self.folder.setText(folder)

    def _accept(self) -> None:
        if self.tabs.currentIndex() == 1:
            folder = self.folder.text().strip()
            if not folder or not Path(folder).is_dir():
                self.folder.setFocus()
                self.folder.setToolTip("Not a folder")
                return
            self.controller.from_task_configs(folder)
        else:
            text = self.text.toPlainText().strip()
            if not text or self.scope.currentData() is None:
                self.text.setFocus()
                return
            self.controller.give(str(self.scope.currentData()), text)
        self.accept()

    def _take_back(self) -> None:
        state = self.controller.state
        if state is not None and state.given is not None:
            self.controller.take_back(state.given.key)
        self.accept()
