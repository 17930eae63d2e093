"""The app's long work, driven through the runner: opening a library, loading trajectories, scoring.

The main window only builds and connects; the logic of *what* runs in the background and what happens with the
result lives here, in three small QObjects that read and set the :class:`~gui_app.qt.session.Session` (the one
answer to what is open), never state of their own about it:

* :class:`LibraryScanner` opens a folder's library (:func:`gui_app.core.library.folder.open_library`) in a worker,
makes it
  the session's and scans it in a worker; a library let go of is closed once the work using it has ended.
* :class:`TrajectoryLoader` loads a trajectory and opens its frames in a worker, sets them on the session with the
  stored score, and prefetches the next item of the library (``j``/``k`` then open at once).
* :class:`ScoreController` scores the session's trajectory or the whole library in a worker, through the same core
  function as ``rollscope score`` (:func:`gui_app.core.scoring.batch.score_many`) run in the scoring process
  (:class:`~gui_app.core.scoring.process.ScoringProcess`: the judge's runtimes and buffers never enter the app's
  memory), storing the scores in the catalog here, with the judge chosen in the settings (Model → Judge settings…;
  the built-in model by default).

The ``*_task`` functions are what the workers run: plain data in, plain data out, no Qt.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

from gui_app.core import memory
from gui_app.core.library.catalog import Catalog, ScanReport
from gui_app.core.errors import RollscopeError, VideoError
from gui_app.core.library.folder import Library, migrate_labels, open_library
from gui_app.core.scoring.score import Score
from gui_app.core.scoring.batch import (NOT_LOADED, PROCESS_ENDED, ScoreInput, ScoreOutcome, ScorerFactory,
                                        log_lines, not_scored, score_many, summary, write_log)
from gui_app.core.scoring.instructions import Instructions
from gui_app.core.scoring.process import ScoringProcess
from gui_app.core.store.interface import AnnotationStore
from gui_app.core.trajectory.model import Trajectory
from gui_app.core.media.video import FrameSource
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.workers import Job, JobQueue, Progress, Reporter, Runner

if TYPE_CHECKING:
    from gui_app.core.scoring.batch import Scorer
    from gui_app.core.settings import Settings

# -- plain tasks (worker threads) ------------------------------------------------------------------------------


def scan_task(catalog: Catalog, root: Path, rep: Reporter, store: AnnotationStore | None = None,
              tasks_roots: Sequence[str] | None = None) -> ScanReport:
    report = catalog.scan(root, progress=rep.progress, cancel=rep.cancelled, tasks_roots=tasks_roots)
    if store is not None and not report.cancelled:
        report.notes += migrate_labels(store, catalog)  # labels of trajectories this scan found for the first time
    return report


@dataclass
class Loaded:
    """A trajectory ready to show: the trajectory, its frame source (None when it has no media), its stored
    score (None when never scored) and notes for the user."""

    key: str
    trajectory: Trajectory
    source: FrameSource | None = None
    notes: list[str] = field(default_factory=list)
    score: Score | None = None

    def close(self) -> None:
        if self.source is not None:
            self.source.close()
            self.source = None


def score_fits(score: Score, traj: Trajectory) -> bool:
    """Whether ``score`` can be shown over ``traj``: one value per step (or none), not a score of another version
    of the run."""
    return len(score.step_scores) in (0, traj.n_steps)


def load_task(key: str, rep: Reporter, source_options: dict[str, Any] | None = None,
              catalog: Catalog | None = None, library_root: Path | None = None,
              tasks_roots: Sequence[str] | None = None) -> Loaded:
    """Load ``key`` with its importer (which aligns steps to the recording when needed), open its frames and read
    its latest stored score.

    Reading the files is a :meth:`Reporter.blocking` call: however a hostile or unreachable file stalls it, moving
    on to another trajectory (or closing the app) frees the worker. Media are read inside ``library_root``. Each
    stage is reported as the job's progress text (reading the log, aligning, indexing the video): the viewer shows
    it while the user waits."""
    from gui_app.core.trajectory import formats
    from gui_app.core.trajectory.align import STORED_METHODS
    from gui_app.core.media.video import open_for

    def stage(text: str) -> None:
        if not rep.cancelled():  # a call left behind on cancel says nothing more
            rep.stage(text)

    def read() -> Loaded:
        stage("reading the log")
        traj = formats.load(key, library_root=library_root, align=False, tasks_roots=tasks_roots)
        if traj.video is not None and any(s.t_start is None or s.align_method not in STORED_METHODS
                                          for s in traj.steps):
            # Its importer places the steps on the recording (a pass over the video, cached): read it as every
            # user-facing load does, so the viewer and the model map steps to frames alike.
            stage("aligning the steps to the recording")
            traj = formats.load(key, library_root=library_root, tasks_roots=tasks_roots)
        rep.check()
        notes = list(traj.warnings)
        source = None
        if traj.video is not None or any(s.screenshot for s in traj.steps):
            stage("indexing the video" if traj.video is not None else "listing the step screenshots")
            try:
                source = open_for(traj, **(source_options or {}))
            except VideoError as exc:
                notes.append(str(exc))
            else:
                notes.extend(source.notes)  # a recording that cannot be read: the screenshots stand in, and we say so
                # Start its decoding thread here (frame 0 is decoded already): not in the GUI thread when it is shown.
                source.prefetch([0])
        return Loaded(key, traj, source, notes)

    loaded = rep.blocking(read, discard=Loaded.close)
    if catalog is not None:
        try:
            rec = catalog.latest_score(key)
        except RollscopeError as exc:  # the catalog may be closing (another folder opened)
            loaded.notes.append(f"stored score not read: {exc}")
            rec = None
        if rec is not None and score_fits(rec, loaded.trajectory):
            loaded.score = rec
    if rep.cancelled():
        loaded.close()
    return loaded


def judge_options(name: str, settings: Settings) -> dict[str, str]:
    """The options the app gives the judge ``name``: those saved for it (Model → Judge settings…), and for the
    built-in model its weights: the active model (``settings.model``, Model → Use model…). Unchecked: the registry
    checks them when the judge loads."""
    from gui_app.judges.registry import DEFAULT_JUDGE

    options = dict(settings.judge_options.get(name, {}))
    if name == DEFAULT_JUDGE and settings.model:
        options["model"] = settings.model  # one place for the built-in model's weights: the active model
    return options


def judge_factory(settings_dir: Path | None = None) -> tuple[ScorerFactory, str]:
    """The judge the app scores with, as the scoring process gets it: the one chosen in the settings in
    ``settings_dir`` (None: the user's), by default the built-in reward model (the active one), with its options; and
    the judge in words, for the errors. Read afresh for every scoring: what Model → Judge settings… or ``rollscope
    model use`` saved since is what scores next (the process keeps a judge loaded while it stays the same)."""
    from gui_app.core.settings import SettingsStore
    from gui_app.judges.registry import DEFAULT_JUDGE, load_judge

    settings = SettingsStore(settings_dir).load()
    name = settings.judge or DEFAULT_JUDGE
    return partial(load_judge, name, judge_options(name, settings)), f"the judge {name}"


@dataclass(frozen=True)
class AppScoring:
    """Where a scoring job of the app scores: in the scoring process with the judge of the settings, or, when a
    scorer was handed over (:meth:`ScoreController.use_scorer`), in this process with it."""

    process: ScoringProcess
    settings_dir: Path | None = None
    scorer: Scorer[Any] | None = None

    def run(self, items: Sequence[ScoreInput], rep: Reporter, catalog: Catalog | None = None,
            on_outcome: Callable[[ScoreOutcome], None] | None = None, library_root: Path | None = None,
            tasks_roots: Sequence[str] | None = None, instructions: Instructions | None = None) -> list[ScoreOutcome]:
        """:func:`~gui_app.core.scoring.batch.score_many` of ``items`` with the job's progress and cancel; scores go
        to ``catalog`` (in this process) before ``on_outcome`` hears of them."""
        try:
            if self.scorer is not None:
                return score_many(items, self.scorer, catalog=catalog, progress=rep.progress, cancel=rep.cancelled,
                                  on_outcome=on_outcome, library_root=library_root, tasks_roots=tasks_roots,
                                  instructions=instructions, no_instruction_hint=NO_INSTRUCTION_HINT)
            factory, what = judge_factory(self.settings_dir)
            return self.process.score(items, factory, what, catalog=catalog, progress=rep.progress,
                                      cancel=rep.cancelled, on_outcome=on_outcome, library_root=library_root,
                                      tasks_roots=tasks_roots, instructions=instructions,
                                      no_instruction_hint=NO_INSTRUCTION_HINT)
        finally:
            memory.trim()  # what was decoded (in this process) or unpickled is freed: give it back


# How the app's user gives a run an instruction, said when one has none (not the command line's options).
NO_INSTRUCTION_HINT = (" Give it one with “Set instruction…” over the video (Ctrl+I): type it, or point at a folder "
                       "of task configs; it holds for every run of its task.")


@dataclass
class LibraryScoring:
    """What scoring the library did: an outcome per row it was asked to score (a row that does not load included,
    as not scored), and the log file naming the rows not scored (None when all were, or it could not be written:
    ``log_error`` says why)."""

    outcomes: list[ScoreOutcome]
    log: Path | None = None
    log_error: str | None = None


def score_one_task(scoring: AppScoring, catalog: Catalog | None, key: str, traj: Trajectory,
                   rep: Reporter) -> ScoreOutcome:
    """Score the open trajectory through the same core function as ``rollscope score`` (the scoring process gets a
    copy: the trajectory on screen is not changed); without an instruction of its own, against the one given to its
    task (the catalog's)."""
    rep.progress(0, 1, f"scoring {traj.id}")
    given = catalog.stored_instructions() if catalog is not None else None
    outcomes = scoring.run([(key, traj)], rep, catalog=catalog, instructions=given)
    if not outcomes:
        rep.check()  # cancelled before it was scored
    (outcome,) = outcomes
    if outcome.result is None:  # the error names the file (a trajectory without media, ...)
        raise RollscopeError(outcome.error or f"cannot score {traj.id}")
    rep.progress(1, 1, f"scored {traj.id}")
    return outcome


def score_library_task(scoring: AppScoring, catalog: Catalog, text: str, filters: dict[str, Any],
                       rep: Reporter, library_root: Path | None = None,
                       tasks_roots: Sequence[str] | None = None) -> LibraryScoring:
    """Score the library's rows that ``text`` and ``filters`` select (all rows when both are empty); media may be
    read anywhere under ``library_root``; a run without an instruction is judged against the one given to its task.
    Each outcome is handed on (:meth:`Reporter.partial`) once its score is in the catalog, so the views show it
    while the rest is scored. A row that failed to load is not scored and says so, as does every run that could not
    be; those are written to the library's scoring log."""
    rows = catalog.query(text, filters)
    keys = [r.key for r in rows if not r.error]
    skipped = [ScoreOutcome(r.key, r.id, error=r.error, reason=NOT_LOADED) for r in rows if r.error]
    given = catalog.stored_instructions()
    rep.progress(0, len(keys), "loading the judge")
    outcomes = skipped + scoring.run(keys, rep, catalog=catalog, on_outcome=rep.partial, library_root=library_root,
                                     tasks_roots=tasks_roots, instructions=given)
    result = LibraryScoring(outcomes)
    if not_scored(outcomes):
        from gui_app.core.library.folder import score_log_folder

        try:
            result.log = write_log(outcomes, score_log_folder(catalog.db_path), "library scoring")
        except OSError as exc:
            result.log_error = f"the log could not be written: {exc.strerror or exc}"
    return result


def open_library_task(path: str | Path, rep: Reporter, store: str | None = None,
                      tasks_roots: Sequence[str] | None = None) -> Library:
    """Open (create, migrate) the catalog and the annotation store of ``path`` (``store``: a team's server or
    another file; ``tasks_roots``: see :attr:`Library.tasks_roots`): file and network I/O, so off the GUI thread."""
    rep.progress(0, None, "opening the catalog")
    return open_library(path, store, tasks_roots)


# -- controllers (GUI thread) ----------------------------------------------------------------------------------


class LibraryScanner(QObject):
    """Opens a folder's library (in a worker), makes it the session's, and scans it (in a worker).

    Signals:
        progressed(): rows were added (throttled: at most every :attr:`REFRESH_S`).
        scanned(ScanReport): the scan ended (completed or cancelled).
    """

    progressed = Signal()
    scanned = Signal(object)

    REFRESH_S = 2.0

    def __init__(self, runner: Runner, session: Session, notifier: Notifier, parent: QObject | None = None):
        super().__init__(parent)
        self.runner, self.session, self.notifier = runner, session, notifier
        self.job: Job | None = None
        self._last_refresh = 0.0
        self._generation = 0
        self.store_location: str | None = None  # the label store setting: a team server, else each library's file
        self.tasks_roots: list[str] | None = None  # `rollscope open --tasks-root`: given to the libraries it opens

    def open(self, path: str | Path) -> Job:
        """Open ``path`` (a folder of trajectories, or one trajectory), then scan it; returns the opening job."""
        if self.job is not None:
            self.job.cancel()
        self._generation += 1
        generation = self._generation
        store, tasks = self.store_location, self.tasks_roots
        job = self.runner.submit(f"Opening {path}", lambda rep: open_library_task(path, rep, store, tasks),
                                 on_result=lambda lib: self._opened(lib, generation), start=False)
        return self._run(job)

    def _opened(self, library: Library, generation: int) -> None:
        if generation != self._generation:  # another folder was asked for meanwhile
            library.close()
            return
        self.release()
        for note in library.notes:
            self.notifier.warning(note)
        self.session.set_library(library)
        self.rescan()

    def release(self, also_wait_for: Sequence[Job | JobQueue | None] = ()) -> None:
        """Let go of the session's library: the views let go at once (the session tells them), and its catalog and
        store are closed once the work still using them has ended. The scan and the jobs of ``also_wait_for`` are
        cancelled; queued writes (``JobQueue``) are not: they finish first, so no label is lost."""
        library = self.session.library
        self.session.set_library(None)
        if library is None:
            return
        busy = [w for w in [self.job, *also_wait_for] if w is not None and w.running]
        if not busy:
            library.close()
            return
        remaining = set(busy)

        def ended(work: Job | JobQueue) -> None:
            remaining.discard(work)
            if not remaining:
                library.close()

        for work in busy:
            if isinstance(work, Job):
                work.cancel()
            work.finished.connect(lambda w=work: ended(w))

    def _run(self, job: Job) -> Job:
        job.finished.connect(lambda j=job: self._forget(j))
        self.job = job
        self.runner.start(job)
        return job

    def rescan(self) -> Job | None:
        library = self.session.library
        if library is None:
            return None
        if self.job is not None:
            self.job.cancel()
        catalog, root, store, tasks = library.catalog, library.root, library.store, library.tasks_roots
        self._last_refresh = time.monotonic()
        job = self.runner.submit(f"Scanning {root}", lambda rep: scan_task(catalog, root, rep, store, tasks),
                                 on_progress=self._on_progress, on_result=lambda r: self._done(r, catalog),
                                 on_cancelled=lambda r: self._done(r, catalog), start=False)
        return self._run(job)

    def _forget(self, job: Job) -> None:
        if self.job is job:
            self.job = None

    def _on_progress(self, _p: Progress) -> None:
        if time.monotonic() - self._last_refresh > self.REFRESH_S:
            self._last_refresh = time.monotonic()
            self.progressed.emit()

    def _done(self, report: ScanReport | None, catalog: Catalog) -> None:
        library = self.session.library
        if report is None or library is None or catalog is not library.catalog:
            return  # the scan of a library no longer shown
        if report.errors:
            first = report.errors[0]
            more = f" (and {len(report.errors) - 1} more; filter the library by load errors)" \
                if len(report.errors) > 1 else ""
            self.notifier.warning(f"{len(report.errors)} file(s) could not be read: {first['error']}{more}")
        for note in report.notes:
            self.notifier.warning(note)
        state = "cancelled after" if report.cancelled else "found"
        self.notifier.info(f"Scan {state} {report.trajectories:,} trajectories in {report.seconds:.1f} s")
        self.scanned.emit(report)


class TrajectoryLoader(QObject):
    """Loads trajectories in a worker and sets them on the session; keeps prefetched ones ready.

    Signals:
        loaded(str): the key now shown.
        failed(str, str): the key that could not be opened, and why.
    """

    loaded = Signal(str)
    failed = Signal(str, str)

    MAX_READY = 2  # prefetched trajectories kept (each may hold an open video)

    def __init__(self, runner: Runner, session: Session, notifier: Notifier,
                 source_options: dict[str, Any] | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.runner, self.session, self.notifier = runner, session, notifier
        self.source_options = dict(source_options or {})  # FrameSource options (decode size, cache budget)
        self._wanted: str | None = None
        self._ready: dict[str, Loaded] = {}
        self._jobs: dict[str, Job] = {}  # key -> load job in flight (opening or prefetching)
        self._rescored: dict[str, Score] = {}  # scores stored while the key's load was in flight (it read older)

    @property
    def current_key(self) -> str | None:
        """The key shown (the session's)."""
        return self.session.key

    @property
    def wanted(self) -> str | None:
        """The key asked for last (shown, or still loading)."""
        return self._wanted

    def open(self, key: str) -> None:
        """Show ``key``: at once when prefetched, else when its load job ends. Meanwhile the session holds nothing
        and says what the load is doing (:meth:`Session.set_loading`)."""
        self._wanted = key
        ready = self._ready.pop(key, None)
        if ready is not None:
            self._show(ready)
            return
        for k in [k for k in self._jobs if k != key]:
            # The user moved on. A cancelled job leaves the table at once: it will never arrive, so opening or
            # prefetching its key again must start a new load instead of waiting on it.
            self._jobs.pop(k).cancel()
            self._rescored.pop(k, None)
        if key not in self._jobs:
            self._start(key)
        latest = self._jobs[key].latest_progress
        self.session.set_loading(key, latest.text if latest is not None and latest.text else "opening")

    def _progressed(self, key: str, progress: Progress) -> None:
        if key == self._wanted and key == self.session.loading_key and progress.text:
            self.session.set_loading(key, progress.text)

    def prefetch(self, key: str | None) -> None:
        """Load ``key`` in the background so that opening it later is instant."""
        if key is None or key == self.current_key or key in self._ready or key in self._jobs:
            return
        self._start(key)

    def _start(self, key: str) -> None:
        # Stored scores are read from the library open now; a load that outlives it reads nothing (see load_task).
        options = self.source_options
        library = self.session.library
        catalog = library.catalog if library is not None else None
        root = library.root if library is not None else None
        tasks = library.tasks_roots if library is not None else None
        job = self.runner.submit(f"Loading {key}", lambda rep: load_task(key, rep, options, catalog, root, tasks),
                                 report_errors=False, show_progress=False,
                                 on_progress=lambda p: self._progressed(key, p),
                                 on_cancelled=lambda res: res.close() if res is not None else None, start=False)
        job.succeeded.connect(lambda res, k=key, j=job: self._arrived(k, j, res))
        job.failed.connect(lambda exc, k=key, j=job: self._load_failed(k, j, exc))
        job.finished.connect(lambda k=key, j=job: self._forget(k, j))
        self._jobs[key] = job
        self.runner.start(job)

    def apply_scores(self, scores: dict[str, Score]) -> None:
        """Scores just stored in the catalog: the run shown, the runs held ready and the loads in flight take them,
        so no view of a run reads "not scored" once the catalog holds its score (a run loaded ahead read the
        catalog before the score was there)."""
        for key, score in scores.items():
            ready = self._ready.get(key)
            if ready is not None and score_fits(score, ready.trajectory):
                ready.score = score
            if key in self._jobs:
                self._rescored[key] = score
            traj = self.session.trajectory
            if key == self.session.key and traj is not None and score_fits(score, traj):
                self.session.set_scores(score)

    def _arrived(self, key: str, job: Job, loaded: Loaded) -> None:
        if self._jobs.get(key) is not job:  # cancelled after it had finished; a newer load of the key may be on
            loaded.close()
            return
        del self._jobs[key]  # done now, not when its finished signal comes: opening the key again must load it
        late = self._rescored.pop(key, None)
        if late is not None and score_fits(late, loaded.trajectory):
            loaded.score = late
        if key == self._wanted:
            self._show(loaded)
            return
        self._ready[key] = loaded
        while len(self._ready) > self.MAX_READY:
            old = next(iter(self._ready))
            self._ready.pop(old).close()

    def _forget(self, key: str, job: Job) -> None:
        if self._jobs.get(key) is job:
            del self._jobs[key]
            self._rescored.pop(key, None)

    def _load_failed(self, key: str, job: Job, exc: BaseException) -> None:
        if self._jobs.get(key) is not job:
            return
        del self._jobs[key]
        self._rescored.pop(key, None)
        text = str(exc) if isinstance(exc, RollscopeError) else f"cannot open {key}: {type(exc).__name__}: {exc}"
        if key == self._wanted:
            # Nothing stays open: the previous run must not stay in the viewer and the label panel, where it
            # could be labelled in the belief that it is the row selected.
            self.session.set_failed(key, text)
            self.notifier.error(text)
            self.failed.emit(key, text)

    def _show(self, loaded: Loaded) -> None:
        self.session.set_trajectory(loaded.trajectory, loaded.source, key=loaded.key, scores=loaded.score,
                                    notes=loaded.notes)
        for note in loaded.notes:  # missing media and the like: the status bar, not a message box per item
            self.notifier.info(note)
        self.loaded.emit(loaded.key)

    def clear(self) -> None:
        """Forget everything prefetched and stop loads in flight (a new folder was opened, or exit)."""
        for job in self._jobs.values():
            job.cancel()
        self._jobs.clear()
        self._rescored.clear()
        for loaded in self._ready.values():
            loaded.close()
        self._ready.clear()
        self._wanted = None

    @property
    def busy(self) -> bool:
        return bool(self._jobs)


class ScoreController(QObject):
    """Runs the chosen judge (the reward model by default) in the scoring process, from a worker; results go to the
    catalog and, through :attr:`stored`, to every view of the runs scored.

    The scoring process (:attr:`process`) starts with the first scoring, keeps the judge loaded while it is the one
    the settings name, exits after a while without work and is closed with the window (:meth:`close`): the app's own
    memory never holds the judge. A process that dies is an error line naming the runs it took with it; the next
    scoring starts a new one.

    Signals:
        scored(str): a key whose score changed ('' after a library run).
        stored(dict): ``{key: Score}`` just written to the catalog (as each batch of a library run lands): every
            loader applies them to what it shows and holds ready (:meth:`TrajectoryLoader.apply_scores`).
    """

    scored = Signal(str)
    stored = Signal(object)  # dict[str, Score]

    def __init__(self, runner: Runner, session: Session, notifier: Notifier, parent: QObject | None = None,
                 settings_dir: Path | None = None, process: ScoringProcess | None = None):
        super().__init__(parent)
        self.runner, self.session, self.notifier = runner, session, notifier
        self.settings_dir = settings_dir
        self.process = process if process is not None else ScoringProcess()
        self.scorer: Scorer[Any] | None = None
        self.job: Job | None = None

    def use_scorer(self, scorer: Scorer[Any] | None) -> None:
        """Score with ``scorer``, in this process, whatever judge the settings name (None: the settings' judge again,
        in the scoring process). For a scorer built in code, such as a test's; a job already running keeps its
        own."""
        self.scorer = scorer

    def _scoring(self) -> AppScoring:
        return AppScoring(self.process, self.settings_dir, self.scorer)

    def close(self) -> None:
        """Stop the scoring process (the window closes; its jobs have ended or been cancelled)."""
        self.process.close()

    def score_current(self) -> Job | None:
        """Score the session's trajectory (its score goes to the library's catalog when one is open)."""
        traj, key, library = self.session.trajectory, self.session.key, self.session.library
        catalog = library.catalog if library is not None else None
        if traj is None or key is None:
            self.notifier.info("Open a trajectory first")
            return None
        if self._busy():
            return None
        scoring = self._scoring()
        job = self.runner.submit(f"Scoring {traj.id}", lambda rep: score_one_task(scoring, catalog, key, traj, rep),
                                 on_result=lambda res: self._one_done(key, traj, res), start=False)
        return self._track(job)

    def score_library(self, text: str = "", filters: dict[str, Any] | None = None) -> Job | None:
        """Score the library: every row (the default), or the rows ``text`` and ``filters`` select (what the
        library shows); rows that failed to load are left out. The job's name says which."""
        library = self.session.library
        if library is None:
            self.notifier.info("Open a folder first")
            return None
        if self._busy():
            return None
        scoring, flt, catalog, root = self._scoring(), dict(filters or {}), library.catalog, library.root
        tasks = library.tasks_roots
        what = "Scoring the rows shown" if text or flt else "Scoring the whole library"
        job = self.runner.submit(what,
                                 lambda rep: score_library_task(scoring, catalog, text, flt, rep, root, tasks),
                                 on_result=self._library_done, on_cancelled=self._library_done,
                                 on_partial=self._outcome_stored, start=False)
        return self._track(job)

    def _busy(self) -> bool:
        if self.job is not None:
            self.notifier.info("Scoring is already running (Esc cancels it)")
            return True
        return False

    def _track(self, job: Job) -> Job:
        self.job = job
        job.finished.connect(lambda: setattr(self, "job", None))
        self.runner.start(job)
        return job

    def _outcome_stored(self, outcome: ScoreOutcome) -> None:
        if outcome.result is not None:
            self.stored.emit({outcome.key: outcome.result})

    def _one_done(self, key: str, traj: Trajectory, outcome: ScoreOutcome) -> None:
        score = outcome.result
        assert score is not None  # score_one_task raises instead
        if self.session.trajectory is traj:
            self.session.set_scores(score)
        self.stored.emit({key: score})
        p = "?" if score.p_success is None else f"{score.p_success:.2f}"
        text = f"p(success) = {p} for {traj.id}" + (f" by {score.model}" if score.model else "")
        if score.warnings:  # one message, so the score stays in the status bar next to what weakens it
            self.notifier.warning("; ".join([text, *score.warnings]))
        else:
            self.notifier.info(text)
        self.scored.emit(key)

    def _library_done(self, result: LibraryScoring | None) -> None:
        # Each score reached the views as it was stored (``stored``): what is left is to say how it went, and to
        # name every run that was not scored (the message's detail, which View → Log lists, and the log file).
        outcomes = result.outcomes if result is not None else []
        failed = not_scored(outcomes)
        text = f"Scored {len(outcomes) - len(failed):,} trajectories"
        if failed:
            where = f"; also in {result.log}" if result is not None and result.log is not None else \
                f"; {result.log_error}" if result is not None and result.log_error else ""
            text = (f"{text}; {len(failed):,} not scored ({summary(outcomes)}): View → Log names each and "
                    f"why{where}")
            if any(o.reason == PROCESS_ENDED for o in failed):  # not the runs' doing: an error, said first
                self.notifier.error(f"The scoring process ended unexpectedly. {text}",
                                    detail="\n".join(log_lines(outcomes)))
            else:
                self.notifier.warning(text, detail="\n".join(log_lines(outcomes)))
        else:
            self.notifier.info(text)
        self.scored.emit("")
