"""The collection driver both recorders share: run episode jobs in this process or a pool of spawned workers, hand
each result over as it arrives, and write the run's summary whole.

A process keeps its recorder (a browser, a display) between jobs in :data:`WORKER`; :func:`close_worker` ends it, and
a pool's workers end theirs in their own finalizers.
"""

from __future__ import annotations

import json
import multiprocessing as mp
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from gui_app.core.atomic import publish_file

J = TypeVar("J")
R = TypeVar("R")


# The recorder this process keeps between jobs (its browser or display), under "rec".
WORKER: dict[str, Any] = {}


def close_worker() -> None:
    """End the recorder this process holds, if any (the next job starts a new one)."""
    rec = WORKER.pop("rec", None)
    if rec is not None:
        rec.close()


def _init_worker() -> None:
    from multiprocessing.util import Finalize

    # Quit this worker's recorder when the pool closes (atexit does not run in pool workers).
    Finalize(None, close_worker, exitpriority=10)


def run_jobs(jobs: Sequence[J], run: Callable[[J], R], take: Callable[[R], None], workers: int) -> None:
    """``take(run(job))`` for every job: in order here with ``workers <= 1``, else in completion order from a pool
    of ``workers`` spawned processes (``run`` must then be a module-level function). A failure or an interrupt
    ends the pool at once and is raised."""
    try:
        if workers <= 1:
            for job in jobs:
                take(run(job))
            return
        pool = mp.get_context("spawn").Pool(workers, initializer=_init_worker)
        try:
            for result in pool.imap_unordered(run, jobs):
                take(result)
            pool.close()  # lets the workers run their finalizers, which quit their browsers and displays
            pool.join()
        except BaseException:
            pool.terminate()
            raise
    finally:
        close_worker()


def write_summary(out: Path, summary: dict[str, Any]) -> None:
    """``OUT/collect_summary.json``, written whole or not at all."""
    publish_file(out / "collect_summary.json", lambda tmp: tmp.write_text(json.dumps(summary, indent=1)))
