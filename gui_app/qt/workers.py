"""The one door to background threads.

Every piece of long work in the app (scanning, loading, scoring, prefetching) goes through :class:`Runner`.
A task is a plain function ``task(reporter) -> result``: it takes and returns plain data, calls
``reporter.progress(done, total, text)`` now and then and checks ``reporter.cancelled()``; it never touches a
widget (labelme's save writer: "the worker never calls Qt"). The core's ``progress``/``cancel`` callback pair
(``Catalog.scan(root, progress, cancel)``) is exactly ``reporter.progress, reporter.cancelled``.

Results, progress and errors come back to the GUI thread as queued Qt signals on the :class:`Job`. Progress is
throttled in the worker (at most one signal per :data:`PROGRESS_INTERVAL`), so a scan that reports 10,000 times
does not flood the event loop. Errors go to one notifier: a :class:`~gui_app.core.errors.RollscopeError` shows its
own message (it names the file and field), anything else is shown as "<job> failed: <type>: <message>" and logged
with its traceback.

:func:`active_jobs` lists every job not yet finished in any runner; the GUI tests fail a test that leaves one
running (as napari fails a test that leaves a QThread alive).
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any, NamedTuple, TypeVar

import shiboken6
from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from gui_app.core.errors import RollscopeError

log = logging.getLogger(__name__)
T = TypeVar("T")

PROGRESS_INTERVAL = 0.05  # seconds between two progress signals of one job
_BLOCKING_POLL_S = 0.05  # how often a worker waiting on a blocking call checks for a cancel
REAP_AFTER_S = 10.0  # a finished job's QObject is deleted this long after its last signal


class Progress(NamedTuple):
    """A progress report: ``done`` of ``total`` (None when unknown), and what is being done."""

    done: int
    total: int | None
    text: str

    @property
    def fraction(self) -> float | None:
        return None if not self.total else min(max(self.done / self.total, 0.0), 1.0)


class JobCancelled(Exception):
    """Raised by :meth:`Reporter.check` to leave a task early; the job then ends as cancelled, not failed."""


class Reporter:
    """What a task sees of its job: progress and cancel, as plain thread-safe callables."""

    def __init__(self, job: Job):
        self._job = job
        self._last = 0.0

    def progress(self, done: int, total: int | None = None, text: str = "") -> None:
        """Report progress (throttled; the last report before the end always goes through)."""
        now = time.monotonic()
        self._job._latest = Progress(int(done), None if total is None else int(total), str(text))
        if now - self._last >= PROGRESS_INTERVAL or (total is not None and done >= total):
            self._last = now
            self._job.progressed.emit(self._job._latest)

    def stage(self, text: str) -> None:
        """Say what is being done now (a step of the work, not a count): never throttled, each stage is told."""
        self._last = time.monotonic()
        self._job._latest = Progress(0, None, str(text))
        self._job.progressed.emit(self._job._latest)

    def partial(self, value: Any) -> None:
        """Hand a piece of the result to the GUI thread now, before the task returns (a score as soon as it is
        stored, while the rest of the library is scored). Not throttled: every piece arrives, in order."""
        self._job.partial.emit(value)

    def cancelled(self) -> bool:
        """True once cancel was asked for: the task should stop soon and return what it has."""
        return self._job._cancel.is_set()

    def check(self) -> None:
        """Raise :class:`JobCancelled` if cancel was asked for."""
        if self.cancelled():
            raise JobCancelled()

    def blocking(self, fn: Callable[[], T], discard: Callable[[T], None] | None = None) -> T:
        """``fn()``, run so that a cancel frees this worker at once even if ``fn`` never returns.

        For reading files we did not write (loading a trajectory, opening its recording): a read may block for
        ever (a file on a hung network share; whatever a guard in the core does not foresee), and a pool thread
        stuck in it would hold one of the app's two workers for good and keep the process alive after its window
        closed. ``fn`` runs on a daemon thread of its own; this worker waits for it and, on cancel (the user moved
        on, or the app is closing), raises :class:`JobCancelled` and leaves it behind. Should the abandoned call
        ever return, its result goes to ``discard`` (to close what it opened). ``fn`` must not write shared state.
        """
        done = threading.Event()
        lock = threading.Lock()  # the call finishing and the worker leaving it: whichever comes second discards
        box: dict[str, Any] = {"finished": False, "abandoned": False}

        def run() -> None:
            result, error = None, None
            try:
                result = fn()
            except BaseException as exc:  # noqa: BLE001 -- handed to the waiting worker, raised there
                error = exc
            with lock:
                box.update(result=result, error=error, finished=True)
                drop = box["abandoned"] and error is None
            done.set()
            if drop:
                _discard(discard, result)

        threading.Thread(target=run, name=f"{self._job.name} (blocking call)", daemon=True).start()
        while not done.wait(_BLOCKING_POLL_S):
            if self.cancelled():
                with lock:
                    box["abandoned"] = True
                    drop = box["finished"] and box["error"] is None
                if drop:
                    _discard(discard, box["result"])
                raise JobCancelled()
        if box["error"] is not None:
            raise box["error"]
        return box["result"]


def _discard(discard: Callable[[Any], None] | None, result: Any) -> None:
    if discard is None:
        return
    try:
        discard(result)
    except Exception:  # noqa: BLE001 -- nobody is left to tell; the result is dropped either way
        log.debug("discarding the result of an abandoned call failed", exc_info=True)


class Job(QObject):
    """A handle on one background task: its signals, cancel, and its state.

    Signals (delivered in the GUI thread):
        progressed(Progress): throttled progress.
        partial(object): a piece of the result handed on before the end (:meth:`Reporter.partial`).
        succeeded(object): the task's return value.
        failed(BaseException): the task raised (already routed to the notifier).
        cancelled(object): the task ended after a cancel request; carries its return value (or None).
        finished(): always last, whatever the outcome.
    """

    progressed = Signal(object)
    partial = Signal(object)
    succeeded = Signal(object)
    failed = Signal(object)
    cancelled = Signal(object)
    finished = Signal()

    def __init__(self, name: str, parent: QObject | None = None):
        super().__init__(parent)
        self.name = name
        self._cancel = threading.Event()
        self._latest: Progress | None = None
        self.running = True  # flipped by the worker thread when the task returns
        self.show_progress = True
        self.result: Any = None
        self.error: BaseException | None = None
        self._task: Callable[[Reporter], Any] | None = None

    def cancel(self) -> None:
        """Ask the task to stop; it ends at its next ``cancelled()`` check."""
        self._cancel.set()

    @property
    def is_cancelled(self) -> bool:
        return self._cancel.is_set()

    @property
    def latest_progress(self) -> Progress | None:
        return self._latest


class _Runnable(QRunnable):
    def __init__(self, job: Job, task: Callable[[Reporter], Any], on_end: Callable[[Job], None]):
        super().__init__()
        self.setAutoDelete(True)
        self._job, self._task, self._on_end = job, task, on_end

    def run(self) -> None:  # worker thread: emits signals only, touches no widget
        job = self._job
        try:
            result = self._task(Reporter(job))
        except JobCancelled:
            job.running = False
            self._on_end(job)
            job.cancelled.emit(None)
        except BaseException as exc:  # noqa: BLE001 -- any task error is reported, never kills the app
            job.error = exc
            job.running = False
            self._on_end(job)
            job.failed.emit(exc)
        else:
            job.result = result
            job.running = False
            self._on_end(job)
            if job.is_cancelled:
                job.cancelled.emit(result)
            else:
                job.succeeded.emit(result)
        finally:
            job.finished.emit()


_live_runners: weakref.WeakSet[Runner] = weakref.WeakSet()


class Runner(QObject):
    """Runs tasks on a thread pool and routes their errors to ``notify(text, detail)``.

    Args:
        notify: called in the GUI thread with a one-line message and the detail (traceback text or '') when a
            task fails; default: log it.
        max_threads: pool size (default: 2; scanning and scoring are I/O- or ONNX-bound, more threads only
            contend with the GUI thread on two cores).
    """

    job_started = Signal(object)  # Job
    job_ended = Signal(object)  # Job

    def __init__(self, notify: Callable[[str, str], None] | None = None, max_threads: int = 2,
                 parent: QObject | None = None):
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(max_threads)
        self._notify = notify or (lambda text, detail: log.error("%s\n%s", text, detail))
        self._jobs: set[Job] = set()
        self._ended: deque[tuple[float, Job]] = deque()
        self._lock = threading.Lock()
        _live_runners.add(self)

    def submit(self, name: str, task: Callable[[Reporter], Any], *,
               on_result: Callable[[Any], None] | None = None,
               on_progress: Callable[[Progress], None] | None = None,
               on_error: Callable[[BaseException], None] | None = None,
               on_cancelled: Callable[[Any], None] | None = None,
               on_finished: Callable[[], None] | None = None,
               on_partial: Callable[[Any], None] | None = None,
               report_errors: bool = True, show_progress: bool = True, start: bool = True) -> Job:
        """Make a :class:`Job` for ``task(reporter)`` and start it in the pool (unless ``start`` is False).

        Connect to a job's signals before it starts: a queued signal emitted by the worker reaches only the
        connections that exist when it is emitted. Hence the callbacks here, and ``start=False`` +
        :meth:`start` for a caller that needs the job object in its own connections.

        Args:
            name: what the job does, in words ("Scanning /data"); used in messages.
            task: the work; plain data in and out, no Qt.
            on_result / on_progress / on_error / on_cancelled / on_finished / on_partial: GUI-thread callbacks.
            report_errors: route a failure to the notifier (False for quiet work such as prefetching).
            show_progress: the status bar shows this job (False for short or background work).
            start: start at once.
        """
        job = Job(name, self)
        job.show_progress = show_progress
        with self._lock:
            self._jobs.add(job)
        if report_errors:
            job.failed.connect(lambda exc, j=job: self._report(j, exc))
        for signal, slot in ((job.progressed, on_progress), (job.succeeded, on_result), (job.failed, on_error),
                             (job.cancelled, on_cancelled), (job.finished, on_finished), (job.partial, on_partial)):
            if slot is not None:
                signal.connect(slot)
        job._task = task
        if start:
            self.start(job)
        return job

    def start(self, job: Job) -> None:
        """Start a job made with ``submit(..., start=False)``."""
        task, job._task = job._task, None
        if task is None:
            raise RuntimeError(f"job {job.name!r} already started")
        self._reap()
        job.finished.connect(lambda j=job: self._finish(j))
        self.job_started.emit(job)
        self._pool.start(_Runnable(job, task, self._forget))

    def _forget(self, job: Job) -> None:  # worker thread, just before the job's last signals
        with self._lock:
            self._jobs.discard(job)

    def _finish(self, job: Job) -> None:
        self.job_ended.emit(job)
        # Deleted later, not now: the worker may still be inside its last emit() when this slot runs, and
        # deleting a QObject under a thread that is emitting from it crashes. Reaped at a later start().
        self._ended.append((time.monotonic(), job))

    def _reap(self) -> None:
        now = time.monotonic()
        while self._ended and now - self._ended[0][0] > REAP_AFTER_S:
            _t, job = self._ended.popleft()
            job.result = job.error = None
            job.deleteLater()

    def _report(self, job: Job, exc: BaseException) -> None:
        if isinstance(exc, RollscopeError):
            self._notify(str(exc), "")
            return
        import traceback

        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        log.error("%s failed\n%s", job.name, detail)
        self._notify(f"{job.name} failed: {type(exc).__name__}: {exc}", detail)

    @property
    def jobs(self) -> list[Job]:
        """Jobs whose task has not returned yet."""
        with self._lock:
            return [j for j in self._jobs if j.running]

    def cancel_all(self) -> None:
        for job in self.jobs:
            job.cancel()

    def wait(self, timeout_s: float = 10.0) -> bool:
        """Block until every task has returned (used at shutdown, after :meth:`cancel_all`)."""
        return bool(self._pool.waitForDone(int(timeout_s * 1000)))

    def shutdown(self, timeout_s: float = 10.0) -> bool:
        """Cancel every job and wait for the threads: nothing runs after the window is gone."""
        self.cancel_all()
        return self.wait(timeout_s)


class JobQueue(QObject):
    """Writes that must land one after another, in the order given, through a runner: the writes to one store.

    The runner's pool runs jobs side by side, so two label writes submitted to it directly could land out of order
    (an undo before the change it undoes). A queue starts its next task only when the previous one has finished.
    A task is a plain ``fn() -> result`` (a store write needs no progress and is never cancelled: a label the
    annotator made is written, or its failure reported). Waiting for :attr:`running` to drop (the ``finished``
    signal) is how a library is closed only after its last label landed.

    Signals:
        finished(): the queue ran dry (every task submitted so far has finished).
    """

    finished = Signal()

    def __init__(self, runner: Runner, parent: QObject | None = None):
        super().__init__(parent)
        self._runner = runner
        self._waiting: deque[tuple[str, Callable[[], Any], Callable[[Any], None] | None,
                                   Callable[[BaseException], None] | None]] = deque()
        self.job: Job | None = None  # the task running now

    @property
    def running(self) -> bool:
        """Whether a task is running or waiting."""
        return self.job is not None or bool(self._waiting)

    def submit(self, name: str, fn: Callable[[], Any], *, on_result: Callable[[Any], None] | None = None,
               on_error: Callable[[BaseException], None] | None = None) -> None:
        """Run ``fn()`` in a worker after every task submitted before it. Its result goes to ``on_result``, its
        error to ``on_error`` (the caller shows it where the user acted; without one, to the notifier)."""
        self._waiting.append((name, fn, on_result, on_error))
        self._next()

    def _next(self) -> None:
        if self.job is not None:
            return
        if not self._waiting:
            self.finished.emit()
            return
        name, fn, on_result, on_error = self._waiting.popleft()
        job = self._runner.submit(name, lambda _rep: fn(), on_result=on_result, on_error=on_error,
                                  report_errors=on_error is None, show_progress=False, start=False)
        job.finished.connect(lambda j=job: self._done(j))
        self.job = job
        self._runner.start(job)

    def _done(self, job: Job) -> None:
        if self.job is job:
            self.job = None
            self._next()

    def flush(self, timeout_s: float = 30.0) -> None:
        """Finish every task now, blocking (app exit, when no event loop will start the next one): wait for the
        running task, then run the waiting ones in the calling thread, in order."""
        if self.job is not None:
            self._runner.wait(timeout_s)
            self.job = None  # its finished signal may still be queued: _done then finds nothing to do
        while self._waiting:
            name, fn, on_result, on_error = self._waiting.popleft()
            try:
                result = fn()
            except Exception as exc:  # noqa: BLE001 -- reported like a worker's error, never raised at exit
                if on_error is not None:
                    on_error(exc)
                else:
                    log.error("%s failed: %s", name, exc)
            else:
                if on_result is not None:
                    on_result(result)
        self.finished.emit()


def _runners() -> list[Runner]:
    # A runner whose C++ side is gone (its window was deleted) waited for its pool when it went: skip it.
    return [r for r in list(_live_runners) if shiboken6.isValid(r)]


def active_jobs() -> list[Job]:
    """Every job, in every runner, whose task has not returned yet."""
    out: list[Job] = []
    for runner in _runners():
        out.extend(runner.jobs)
    return out


def shutdown_all(timeout_s: float = 10.0) -> None:
    """Cancel and wait for every runner's jobs (test teardown, app exit)."""
    for runner in _runners():
        runner.shutdown(timeout_s)
