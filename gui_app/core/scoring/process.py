"""Scoring in a process of its own, so that what a judge loads and decodes lives and dies outside the app.

A judge's runtime is heavy: the built-in reward model holds three onnxruntime sessions (the network, the pointer
detector, the PP-OCR text reader), and scoring decodes, prunes and pads frames. Scored in the app's own process, all
of that stayed resident once the app had scored (issue 26: 226 MB idle, 647 MB after scoring the bundled samples,
more after each rescoring; ``bench/scoring_memory.py``). :class:`ScoringProcess` runs the same
:func:`~gui_app.core.scoring.batch.score_many` in a child process started with ``spawn`` (a fresh interpreter: no Qt,
nothing of the app's state), over a pipe:

* the caller sends the judge as a picklable factory (``functools.partial(load_judge, name, options)``, as a Ray
  worker is sent one) with the runs (paths, catalog keys, or ``(key, trajectory)`` pairs) and score_many's options;
  the child loads the judge once and keeps it while the factory stays the same;
* the child streams back progress and each outcome, in input order; the caller's process writes the scores to its
  catalog (the one that has the library open stays its one writer) and hands each outcome on;
* a cancel goes down the pipe and is honoured between runs, as in score_many; a child that has not stopped
  :data:`CANCEL_GRACE_S` later is killed;
* a child that dies (a decoder's crash, the system's out-of-memory killer, a kill) never takes the caller with it:
  every run it had not answered for gets an outcome saying so (reason :data:`~gui_app.core.scoring.batch.
  PROCESS_ENDED`), and the next call starts a new child;
* the child exits after :data:`IDLE_EXIT_S` without work, or when :meth:`ScoringProcess.close` asks, and its memory
  goes back to the system with it.

The core knows no judge: the factory comes from the caller.
"""

from __future__ import annotations

import gc
import logging
import multiprocessing
import pickle
import signal
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gui_app.core import memory
from gui_app.core.errors import RollscopeError, clip
from gui_app.core.scoring.batch import (PROCESS_ENDED, CancelFn, ProgressFn, ScoreInput, ScoreOutcome, ScorerFactory,
                                        key_of, score_many)
from gui_app.core.scoring.instructions import Instructions

if TYPE_CHECKING:
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

    from gui_app.core.library.catalog import Catalog

log = logging.getLogger(__name__)

IDLE_EXIT_S = 120.0  # a child without work this long exits: the judge is loaded again (seconds) when next needed
CANCEL_GRACE_S = 5.0  # how long a cancelled child may take to stop at a run's end before it is killed
_POLL_S = 0.05  # how often the caller checks for a cancel while it waits for the child
_JOIN_S = 5.0  # how long a child whose pipe broke is given to exit (its exit code says how) before it is killed


class ScoringProcessError(RollscopeError):
    """The judge cannot be loaded in the scoring process, or scoring failed there as a whole."""


class _Ended(Exception):
    """The child ended before it finished the request; the text says how (``killed by SIGKILL``)."""


def _ended_how(code: int | None) -> str:
    if code is None:
        return "it stopped answering"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class ScoringProcess:
    """A child process that scores for its caller, started on first use and again after it ends.

    One request at a time: a second caller waits for the first (a scoring job and a model check, say). Every method
    blocks; the app calls them from a worker thread.

    Args:
        idle_exit_s: the child exits after this long without a request.
        cancel_grace_s: a cancelled child that has not stopped after this long is killed.
    """

    def __init__(self, idle_exit_s: float = IDLE_EXIT_S, cancel_grace_s: float = CANCEL_GRACE_S) -> None:
        self.idle_exit_s, self.cancel_grace_s = idle_exit_s, cancel_grace_s
        self._proc: BaseProcess | None = None
        self._conn: Connection | None = None
        self._lock = threading.Lock()

    @property
    def pid(self) -> int | None:
        """The child's process id while one runs (or has ended and not yet been reaped), else None."""
        proc = self._proc
        return None if proc is None else proc.pid

    # -- requests ---------------------------------------------------------------------------------------------

    def load(self, factory: ScorerFactory, what: str, cancel: CancelFn | None = None) -> str:
        """Load the judge ``factory`` builds (and keep it for the scoring that follows); returns its name.

        Args:
            factory: a picklable callable that returns the scorer, called in the child.
            what: the judge in words, for the errors (``the judge rollscope``).
            cancel: polled while the child works; a cancel returns '' (the child is stopped).

        Raises:
            ScoringProcessError: the judge does not load (its error, or ``cannot load <what>: ...``), or the child
                ended while loading it.
        """
        name = ""

        def handle(msg: tuple[Any, ...]) -> None:
            nonlocal name
            if msg[0] == "loaded":
                name = str(msg[1])

        try:
            self._request(("load", _pickled(factory), what), handle, cancel)
        except _Ended as exc:
            raise ScoringProcessError(f"the scoring process ended while loading {what} ({exc})") from None
        return name

    def score(self, items: Iterable[ScoreInput], factory: ScorerFactory, what: str, *, catalog: Catalog | None = None,
              progress: ProgressFn | None = None, cancel: CancelFn | None = None,
              on_outcome: Callable[[ScoreOutcome], None] | None = None, prune: bool = True, batch_size: int = 8,
              library_root: str | Path | None = None, tasks_roots: Sequence[str | Path] | None = None,
              instructions: Instructions | None = None, no_instruction_hint: str | None = None) -> list[ScoreOutcome]:
        """:func:`~gui_app.core.scoring.batch.score_many` of ``items`` with the judge ``factory`` builds, in the child.

        Takes and returns what score_many does (``catalog`` is written here, in the caller's process, as each outcome
        arrives and before it is handed on); ``factory`` and ``what`` as :meth:`load` takes them. A cancel returns
        the outcomes that arrived. When the child ends mid-way every run not yet answered for gets an outcome whose
        reason is :data:`~gui_app.core.scoring.batch.PROCESS_ENDED`, handed on like the others.

        Raises:
            ScoringProcessError: the judge does not load, or scoring failed in the child as a whole (not one run).
            CatalogError: a score could not be written to ``catalog``.
        """
        inputs = list(items)
        options = {"prune": prune, "batch_size": batch_size, "no_instruction_hint": no_instruction_hint,
                   "library_root": None if library_root is None else str(library_root),
                   "tasks_roots": None if tasks_roots is None else [str(r) for r in tasks_roots],
                   "instructions": instructions}
        out: list[ScoreOutcome] = []

        def hand_on(oc: ScoreOutcome) -> None:
            out.append(oc)
            if on_outcome is not None:
                on_outcome(oc)

        def handle(msg: tuple[Any, ...]) -> None:
            if msg[0] == "progress" and progress is not None:
                progress(int(msg[1]), int(msg[2]))
            elif msg[0] == "outcome":
                oc: ScoreOutcome = msg[1]
                if oc.result is not None and catalog is not None:
                    catalog.set_score(oc.key, oc.result)
                hand_on(oc)

        try:
            self._request(("score", _pickled(factory), what, inputs, options), handle, cancel)
        except _Ended as exc:
            error = (f"the scoring process ended unexpectedly ({exc}) before this run was scored; scoring again "
                     "starts a new one")
            for item in inputs[len(out):]:
                hand_on(ScoreOutcome(key=key_of(item), id="", error=error, reason=PROCESS_ENDED))
        return out

    def close(self) -> None:
        """Ask the child to exit (killed if it does not at once, or if a request is still running)."""
        if not self._lock.acquire(blocking=False):  # a worker still waits on it (the app is closing regardless)
            self._kill()
            return
        try:
            conn, proc = self._conn, self._proc
            if conn is not None and proc is not None and proc.is_alive():
                try:
                    conn.send(("exit",))
                except OSError:
                    pass
            self._kill(1.0)
        finally:
            self._lock.release()

    # -- the pipe ---------------------------------------------------------------------------------------------

    def _request(self, request: tuple[Any, ...], handle: Callable[[tuple[Any, ...]], None],
                 cancel: CancelFn | None) -> None:
        """Send ``request`` and hand every answer to ``handle`` until the child says it is done.

        A child that had just left (idle, exit code 0) without reading the request is started again and sent it
        once more. A cancel is sent on; a child that has not finished ``cancel_grace_s`` later is killed and the
        request ends quietly.

        Raises:
            _Ended: the child ended before it was done.
            ScoringProcessError: the child's answer was a failure.
        """
        while not self._lock.acquire(timeout=_POLL_S):  # another request runs: wait, but hear a cancel
            if cancel is not None and cancel():
                return
        try:
            for attempt in (1, 2):
                conn, proc = self._started()
                heard = False
                cancelled_at: float | None = None
                try:
                    conn.send(request)
                    while True:
                        if cancelled_at is None and cancel is not None and cancel():
                            cancelled_at = time.monotonic()
                            conn.send(("cancel",))
                        if cancelled_at is not None and time.monotonic() - cancelled_at > self.cancel_grace_s:
                            log.info("the scoring process had not stopped %.0f s after a cancel: killed",
                                     self.cancel_grace_s)
                            self._kill()
                            return
                        if not conn.poll(_POLL_S):
                            continue
                        msg = conn.recv()
                        heard = True
                        if msg[0] == "done":
                            return
                        if msg[0] == "failed":
                            if msg[2]:
                                log.error("scoring failed in the scoring process\n%s", msg[2])
                            raise ScoringProcessError(msg[1])
                        handle(msg)
                except (EOFError, OSError):  # the pipe broke: the child has ended, or is ending
                    code = self._kill(_JOIN_S)
                    if cancelled_at is not None:
                        return
                    if code == 0 and not heard and attempt == 1:
                        continue  # it had just left for want of work: a new one takes the request
                    raise _Ended(_ended_how(code)) from None
                except ScoringProcessError:
                    raise  # the child's answer: the pipe is in step, the child waits for the next request
                except BaseException:
                    self._kill()  # left half-way (a score that cannot be stored): the pipe is out of step
                    raise
        finally:
            self._lock.release()

    def _started(self) -> tuple[Connection, BaseProcess]:
        """The running child and its end of the pipe, started when there is none."""
        if self._proc is not None and self._conn is not None and self._proc.is_alive():
            return self._conn, self._proc
        self._kill()
        ctx = multiprocessing.get_context("spawn")
        mine, theirs = ctx.Pipe()
        proc = ctx.Process(target=serve, args=(theirs, self.idle_exit_s), name="rollscope-scoring", daemon=True)
        try:
            proc.start()
        except OSError as exc:
            mine.close()
            raise ScoringProcessError(f"cannot start the scoring process: {exc}") from exc
        finally:
            theirs.close()  # the child has its copy: a child that ends now reads as the end of the pipe here
        self._proc, self._conn = proc, mine
        return mine, proc

    def _kill(self, wait_s: float = 0.0) -> int | None:
        """End the child (killed unless it exits within ``wait_s``) and forget it; returns its exit code (None:
        there was no child)."""
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            conn.close()
        if proc is None:
            return None
        proc.join(wait_s)
        if proc.is_alive():
            proc.kill()
            proc.join(_JOIN_S)
        code = proc.exitcode
        if code is not None:
            proc.close()
        return code


def _pickled(factory: ScorerFactory) -> bytes:
    """The factory as the child gets it; the same bytes mean the same judge (the child keeps it loaded)."""
    try:
        return pickle.dumps(factory)
    except (pickle.PicklingError, TypeError, AttributeError) as exc:
        raise ScoringProcessError(f"the judge cannot be sent to the scoring process: {exc}") from exc


# -- the child --------------------------------------------------------------------------------------------------


def _load(blob: bytes, what: str) -> Any:
    try:
        return pickle.loads(blob)()
    except RollscopeError as exc:  # names what is wrong already (no weights, a bad option)
        raise ScoringProcessError(str(exc)) from None
    except ImportError as exc:
        raise ScoringProcessError(f"{what} is not available in this build ({exc})") from None
    except (OSError, ValueError) as exc:
        raise ScoringProcessError(f"cannot load {what}: {exc}") from None


class _Stop:
    """score_many's cancel in the child: whatever comes down the pipe during a request is a cancel (the caller
    sends nothing else until the request ends)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self.cancelled = False

    def __call__(self) -> bool:
        if not self.cancelled and self.conn.poll():
            self.conn.recv()
            self.cancelled = True
        return self.cancelled


def serve(conn: Connection, idle_exit_s: float) -> None:
    """The child's loop: answer requests until told to exit, the caller goes, or ``idle_exit_s`` pass idle."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C in the app's terminal is the app's to handle: it closes us
    scorer: Any = None
    loaded = b""
    try:
        while conn.poll(idle_exit_s):
            kind, *rest = conn.recv()
            if kind == "exit":
                return
            if kind not in ("load", "score"):
                continue  # a cancel that came after its request had ended
            blob, what = rest[0], rest[1]
            if blob != loaded:
                scorer, loaded = None, b""  # the old judge goes before the new one loads: never two in memory
                gc.collect()
                try:
                    scorer = _load(blob, what)
                except ScoringProcessError as exc:
                    memory.trim()
                    conn.send(("failed", str(exc), ""))
                    continue
                loaded = blob
            conn.send(("loaded", str(getattr(scorer, "name", what))))
            if kind == "score":
                stop = _Stop(conn)
                try:
                    score_many(rest[2], scorer, progress=lambda d, t: conn.send(("progress", d, t)), cancel=stop,
                               on_outcome=lambda oc: conn.send(("outcome", oc)), **rest[3])
                except (EOFError, BrokenPipeError, ConnectionResetError):
                    return  # the caller is gone
                except Exception as exc:  # noqa: BLE001 -- told to the caller, which goes on
                    conn.send(("failed", clip(f"scoring failed: {type(exc).__name__}: {exc}"),
                               traceback.format_exc()))
                    continue
                finally:
                    memory.trim()  # what the batches decoded and padded is freed: give it back
            conn.send(("done",))
    except (EOFError, BrokenPipeError, ConnectionResetError):
        return  # the caller is gone
