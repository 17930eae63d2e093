"""Model versions in the app: switch the active reward model and rescore the library with it.

:class:`ModelController` is what the Model menu drives. "Use model…" loads a weights folder (such as the run folder
of ``rollscope train --from-labels``) in a worker, so a folder that is not a model is refused with the loader's
error before anything changes; then it saves it as the active model through the same settings path as
``rollscope model use`` (:func:`gui_app.core.settings.set_active_model`) and hands the loaded model to the
:class:`~gui_app.qt.controllers.ScoreController`, so the next score is the new model's (its ``Score.model`` names
it). "Use the shipped model" does the same with the shipped weights (``rollscope model reset``). "Rescore" runs the
scorer's library job (progress and cancel as any scoring); the catalog keeps the old model's scores beside the new
ones, which is what the "models disagree" queue compares.

The switch is refused while scoring runs: the job in flight would store some runs under one model and some under
the other without the user having asked for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QFileDialog, QWidget

from gui_app.core.errors import RollscopeError
from gui_app.core.settings import SettingsStore, set_active_model
from gui_app.qt.controllers import ScoreController
from gui_app.qt.notify import Notifier
from gui_app.qt.workers import Job, Reporter, Runner

if TYPE_CHECKING:
    from models.runtime import RewardModel


def load_model_task(path: str | None, rep: Reporter) -> RewardModel:
    """Load the weights folder ``path`` (None: the shipped weights); raises the loader's error when it is not one."""
    rep.progress(0, None, f"loading {path or 'the shipped model'}")
    try:
        from models.runtime import RewardModel
    except ImportError as exc:
        raise RollscopeError(f"the reward model is not available in this build ({exc})") from exc
    try:
        return RewardModel.load(path)
    except (OSError, ValueError) as exc:  # a RollscopeError (no weights, bad file) names the file already
        raise RollscopeError(f"{path}: cannot load the reward model: {exc}") from exc


class ModelController(QObject):
    """Switches the active reward model (saved in the settings) and rescores with it.

    Signals:
        changed(object): the active model changed: its weights folder, or None for the shipped weights.
    """

    changed = Signal(object)

    def __init__(self, runner: Runner, scorer: ScoreController, notifier: Notifier, settings_store: SettingsStore,
                 parent: QObject | None = None):
        super().__init__(parent)
        self.runner, self.scorer, self.notifier, self.settings_store = runner, scorer, notifier, settings_store
        self.job: Job | None = None

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
        job = self.runner.submit(f"Loading model {folder or 'shipped'}", lambda rep: load_model_task(folder, rep),
                                 on_result=lambda model: self._loaded(folder, model), start=False)
        job.finished.connect(lambda: setattr(self, "job", None))
        self.job = job
        self.runner.start(job)
        return job

    def _loaded(self, folder: str | None, model: RewardModel) -> None:
        warnings = set_active_model(folder, self.settings_store.directory)
        if warnings:  # not saved: the choice would not outlive this run, say so and change nothing
            self.notifier.error("; ".join(warnings))
            return
        self.scorer.use_model(model)
        self.notifier.info(f"Active model: {model.name} ({folder or 'the shipped weights'}); "
                           "Model → Rescore scores the library with it")
        self.changed.emit(folder)

    def rescore(self) -> Job | None:
        """Score the whole library with the active model (the scorer's library job: progress, Esc cancels)."""
        return self.scorer.score_library()
