"""Model versions in the app: switch the active reward model and rescore the library with it.

:class:`ModelController` is what the Model menu drives. "Use model…" loads a weights folder (such as the run folder
of ``rollscope train --from-labels``) in the scoring process (:class:`~gui_app.core.scoring.process.ScoringProcess`,
from a worker: the model never loads in the app's own memory), so a folder that is not a model is refused with the
loader's error before anything changes; then it saves it as the active model through the same settings path as
``rollscope model use`` (:func:`gui_app.core.settings.set_active_model`), which the
:class:`~gui_app.qt.controllers.ScoreController` reads for every scoring: the next score is the new model's (its
``Score.model`` names it). "Use the shipped model" does the same with the shipped weights (``rollscope model
reset``). "Rescore" runs the scorer's library job (progress and cancel as any scoring); the catalog keeps the old
model's scores beside the new ones, which is what the "models disagree" queue compares.

"Judge settings…" picks the judge the app scores with and its options (:mod:`gui_app.qt.judge_settings`), saved in
the settings (``judge``, ``judge_options``); the next score is that judge's. "Judges vs humans…" shows, for the open
library, how far each judge agrees with the people's final labels (:mod:`gui_app.qt.versus_view`, the table of
``rollscope eval --judge``).

The switch is refused while scoring runs: the job in flight would store some runs under one model and some under
the other without the user having asked for it.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from gui_app.core.scoring.process import ScoringProcess
from gui_app.core.settings import SettingsStore, set_active_model
from gui_app.judges.builtin import load_weights
from gui_app.judges.registry import DEFAULT_JUDGE
from gui_app.qt.controllers import ScoreController
from gui_app.qt.judge_settings import JudgeSettingsDialog, installed
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.versus_view import VersusController, VersusDialog, entries
from gui_app.qt.workers import Job, Reporter, Runner

def load_model_task(process: ScoringProcess, path: str | None, rep: Reporter) -> str:
    """Load the weights folder ``path`` (None: the shipped weights) in the scoring process, where the next scoring
    finds it; returns the model's name, or raises the loader's error when it is not one."""
    rep.progress(0, None, f"loading {path or 'the shipped model'}")
    name = process.load(partial(load_weights, path), f"the reward model {path}" if path else "the shipped model",
                        cancel=rep.cancelled)
    rep.check()
    return name


class ModelController(QObject):
    """Switches the active reward model (saved in the settings) and rescores with it.

    Signals:
        changed(object): the active model changed: its weights folder, or None for the shipped weights.
        judge_changed(str, object): the app now scores with this judge ('' for the built-in model) and these options
            (``judge_options`` as saved: every judge's).
    """

    changed = Signal(object)
    judge_changed = Signal(str, object)

    def __init__(self, runner: Runner, scorer: ScoreController, notifier: Notifier, settings_store: SettingsStore,
                 parent: QObject | None = None, session: Session | None = None):
        super().__init__(parent)
        self.runner, self.scorer, self.notifier, self.settings_store = runner, scorer, notifier, settings_store
        self.session = session if session is not None else scorer.session
        self.job: Job | None = None
        self.versus: VersusDialog | None = None  # Model → Judges vs humans…, while it is open

    def _window(self, parent: QWidget | None) -> QWidget | None:
        """The dialogs' parent: the one given, else the main window (this controller's parent)."""
        owner = self.parent()
        return parent if parent is not None else owner if isinstance(owner, QWidget) else None

    def _settings(self) -> SettingsStore:
        """A fresh read of the settings file (what another process or ``rollscope model use`` wrote since)."""
        return SettingsStore(self.settings_store.directory)

    def ask_use(self, parent: QWidget | None = None) -> Job | None:
        """Pick a weights folder in a dialog and make it the active model."""
        folder = QFileDialog.getExistingDirectory(parent, "Use a reward model (a weights folder)", str(Path.home()))
        return self.use(folder) if folder else None

    def use(self, path: str | Path | None) -> Job | None:
        """Make ``path`` (None: the shipped weights) the active model once it has loaded (in a worker)."""
        if self.scorer.job is not None:
            self.notifier.info("Scoring is running: cancel it (Esc) or let it end before switching models")
            return None
        if self.job is not None:
            self.notifier.info("A model is being loaded")
            return None
        folder = None if path is None else str(Path(path).resolve())
        process = self.scorer.process
        job = self.runner.submit(f"Loading model {folder or 'shipped'}",
                                 lambda rep: load_model_task(process, folder, rep),
                                 on_result=lambda name: self._loaded(folder, name), start=False)
        job.finished.connect(lambda: setattr(self, "job", None))
        self.job = job
        self.runner.start(job)
        return job

    def _loaded(self, folder: str | None, name: str) -> None:
        warnings = set_active_model(folder, self.settings_store.directory)
        if warnings:  # not saved: the choice would not outlive this run, say so and change nothing
            self.notifier.error("; ".join(warnings))
            return
        judge = self._settings().load().judge or DEFAULT_JUDGE
        then = "Model → Rescore scores the library with it" if judge == DEFAULT_JUDGE else \
            f"the app scores with the judge {judge} (Model → Judge settings… switches)"
        self.notifier.info(f"Active model: {name} ({folder or 'the shipped weights'}); {then}")
        self.changed.emit(folder)

    def rescore(self) -> Job | None:
        """Score the whole library with the active model (the scorer's library job: progress, Esc cancels)."""
        return self.scorer.score_library()

    # -- the judge -----------------------------------------------------------------------------------------------

    def judge_dialog(self, parent: QWidget | None = None) -> JudgeSettingsDialog:
        """The judge settings dialog over the saved settings; accepting it saves the choice (:meth:`use_judge`)."""
        settings = self._settings().load()
        specs, broken = installed()
        dialog = JudgeSettingsDialog(specs, settings.judge or DEFAULT_JUDGE, settings.judge_options, settings.model,
                                     broken, parent=self._window(parent))
        dialog.accepted.connect(lambda: self.use_judge(*dialog.choice()))
        return dialog

    def ask_judge(self, parent: QWidget | None = None) -> None:
        """Model → Judge settings…: pick the judge and its options; OK saves them and the next score is its."""
        self.judge_dialog(parent).exec()

    def use_judge(self, name: str, options: dict[str, str]) -> bool:
        """Score with the judge ``name`` and ``options`` from now on (saved in the settings); False, and said why,
        when they cannot be saved or scoring runs."""
        if self.scorer.job is not None:
            self.notifier.info("Scoring is running: cancel it (Esc) or let it end before switching judges")
            return False
        store = self._settings()
        current = store.load()
        judge = "" if name == DEFAULT_JUDGE else name
        kept = {**current.judge_options, name: dict(options)}
        if not options:
            kept.pop(name)
        store.save(replace(current, judge=judge, judge_options=kept))
        if store.warnings:  # not saved: the choice would not outlive this run, say so and change nothing
            self.notifier.error("; ".join(store.warnings))
            return False
        self.notifier.info(f"The app now scores with the judge {name}"
                           + (f" ({', '.join(f'{k}={v}' for k, v in sorted(options.items()))})" if options else "")
                           + "; Model → Rescore scores the library with it")
        self.judge_changed.emit(judge, kept)
        return True

    def show_versus(self, parent: QWidget | None = None) -> VersusDialog | None:
        """Model → Judges vs humans…: the table for the open library (not modal: the comparison runs in a worker
        while the app stays usable)."""
        if self.session.library is None:
            self.notifier.info("Open a folder first (Ctrl+O)")
            return None
        if self.versus is not None:
            self.versus.raise_()
            self.versus.activateWindow()
            return self.versus
        settings = self._settings().load()
        specs, _broken = installed()
        controller = VersusController(self.runner, self.session, self.notifier, entries(settings, specs), self,
                                      self.scorer.process)
        chosen = settings.judge or DEFAULT_JUDGE
        dialog = VersusDialog(controller, checked=[DEFAULT_JUDGE, chosen], parent=self._window(parent))
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.finished.connect(lambda _r: self._versus_closed(controller))
        self.versus = dialog
        dialog.show()
        return dialog

    def _versus_closed(self, controller: VersusController) -> None:
        """The table was closed: its work is cancelled, and its controller goes once that work has ended."""
        self.versus = None
        controller.cancel()
        if controller.job is None:
            controller.deleteLater()
        else:
            controller.ended.connect(controller.deleteLater)
