"""Batch scoring on a Ray cluster: the same :func:`~gui_app.core.scoring.batch.score_many`, fanned out to workers.

``rollscope score PATH... --ray [ADDRESS]`` scores a corpus too large for one machine (ExeVR-53k: 53,000 videos). The
driver (the machine running the command) lists the trajectories; each Ray worker is an actor that builds the reward
model once (``scorer_factory()``, e.g. ``RewardModel.load``) and scores the chunks of paths it is sent with
``score_many``, exactly as local scoring does; the driver streams each outcome as it comes back (one JSON line per
trajectory, with a progress bar) and writes scores to its own catalog. Workers read the trajectories themselves, so
the media must sit on a file system every node sees at the same path.

* **Bounded memory.** At most ``in_flight`` chunks per worker are out at once: a corpus of any size never piles up
  in the object store or the driver, which holds only the outcomes it has not yet handed on.
* **A worker lost mid-run.** The chunks it held are sent again, one trajectory per task, to a fresh worker that
  replaces it; a trajectory that takes its worker down ``max_attempts`` times becomes an error line. A trajectory
  that fails to load or score is an error line as in local scoring, and the rest go on.

The core knows no model (the factory comes from the caller) and Ray is imported only here, only when asked for: the
base install never needs it (``pip install 'rollscope[cluster]'``).
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gui_app.core.errors import RollscopeError
from gui_app.core.trajectory.formats.osworld import default_tasks_roots
from gui_app.core.scoring.batch import CancelFn, ProgressFn, Scorer, ScoreOutcome, ScorerFactory, score_many
from gui_app.core.scoring.instructions import Instructions

if TYPE_CHECKING:
    from pathlib import Path

    from gui_app.core.library.catalog import Catalog

LOCAL = "local"  # the --ray value that starts a Ray instance on this machine


class ClusterError(RollscopeError):
    """Ray is missing, the cluster cannot be joined, or the model cannot be loaded on the workers."""


class _Worker:
    """One Ray actor: the reward model loaded once, scoring chunks of paths with :func:`score_many`."""

    def __init__(self, factory: ScorerFactory):
        self.error: str | None = None
        try:
            self.model: Scorer[Any] | None = factory()
        except Exception as exc:  # noqa: BLE001 -- reported by ready(), so the driver stops with the reason
            self.model, self.error = None, f"{type(exc).__name__}: {exc}"

    def ready(self) -> tuple[int, str | None]:
        """This worker's process id, and why its model did not load (None: it did)."""
        return os.getpid(), self.error

    def score(self, items: list[str], prune: bool, batch_size: int, library_root: str | None = None,
              tasks_roots: list[str] | None = None, instructions: Instructions | None = None) -> list[ScoreOutcome]:
        assert self.model is not None  # the driver sends no work to a worker that is not ready
        try:
            return score_many(items, self.model, prune=prune, batch_size=batch_size, library_root=library_root,
                              tasks_roots=tasks_roots, instructions=instructions)
        except Exception:  # noqa: BLE001 -- a batch that failed as a whole: each alone, so one bad trajectory is
            # one error line, as in local scoring (score_many already isolates load and prepare errors)
            out: list[ScoreOutcome] = []
            for item in items:
                try:
                    out += score_many([item], self.model, prune=prune, batch_size=1, library_root=library_root,
                                      tasks_roots=tasks_roots, instructions=instructions)
                except Exception as exc:  # noqa: BLE001 -- the error line names it
                    out.append(ScoreOutcome(key=item, id="", error=f"{type(exc).__name__}: {exc}"))
            return out


@dataclass
class ClusterStats:
    """What a run took: workers used, chunks sent, trajectories sent again after a worker was lost, workers
    started to replace lost ones."""

    workers: int = 0
    tasks: int = 0
    retried: int = 0
    replaced: int = 0
    pids: list[int] = field(default_factory=list)


class RayScoring:
    """A pool of scoring workers on a Ray cluster (or a Ray instance started here).

    Args:
        factory: builds the scorer in each worker (called once per worker; picklable, e.g.
            ``functools.partial(RewardModel.load, path)``).
        address: a cluster to join (``auto``, ``HOST:PORT``, ``ray://HOST:10001``); None or ``local``: start a Ray
            instance on this machine (and stop it in :meth:`close`).
        workers: actors to start (default: one per CPU the cluster has).
        chunk: trajectories per task (one forward pass).
        in_flight: tasks out at once per worker (bounds memory; 2 keeps a worker busy while its last result
            travels back).
        max_attempts: how often a trajectory is sent before a worker loss on it makes it an error line.
        init_kwargs: extra ``ray.init`` arguments for a local instance (tests shrink the object store).

    Raises:
        ClusterError: (from :meth:`start`) Ray is not installed, the cluster cannot be joined, or the model does not
            load on a worker.
    """

    def __init__(self, factory: ScorerFactory, address: str | None = None, workers: int | None = None,
                 chunk: int = 4, in_flight: int = 2, max_attempts: int = 3, init_kwargs: dict[str, Any] | None = None):
        self.factory, self.address, self.n_workers = factory, address, workers
        self.chunk, self.in_flight, self.max_attempts = max(1, chunk), max(1, in_flight), max(1, max_attempts)
        self.init_kwargs = init_kwargs or {}
        self.stats = ClusterStats()
        self._ray: Any = None
        self._actor_cls: Any = None
        self._actors: list[Any] = []
        self._started_ray = False

    # --- the pool --------------------------------------------------------------------------------------------
    def start(self) -> RayScoring:
        """Join (or start) Ray and start the workers, each with its model loaded."""
        try:
            import ray
        except ImportError as exc:
            raise ClusterError("scoring on Ray needs ray: pip install 'rollscope[cluster]'") from exc
        self._ray = ray
        if not ray.is_initialized():
            # No usage report from a scoring job: Ray itself sends none from an instance ray.init() starts (release
            # wheels); a cluster joined keeps its own setting.
            local = self.address in (None, LOCAL)
            kwargs: dict[str, Any] = {"logging_level": logging.WARNING, "log_to_driver": False}
            if local:
                kwargs.update(num_cpus=self.n_workers or os.cpu_count() or 1, include_dashboard=False,
                              object_store_memory=200 * 1024 ** 2)
                kwargs.update(self.init_kwargs)
            try:
                ray.init(address=None if local else self.address, **kwargs)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise ClusterError(f"cannot {'start Ray' if local else f'join the Ray cluster at {self.address}'}: "
                                   f"{exc}") from exc
            self._started_ray = True
        n = self.n_workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        self._actor_cls = ray.remote(num_cpus=1, max_restarts=0)(_Worker)
        self._actors = [self._new_actor() for _ in range(n)]
        self.stats.workers = n
        self.stats.pids = [self._ready(a) for a in self._actors]
        return self

    def _new_actor(self) -> Any:
        return self._actor_cls.remote(self.factory)

    def _ready(self, actor: Any) -> int:
        pid, error = self._ray.get(actor.ready.remote())
        if error is not None:
            raise ClusterError(f"the reward model does not load on a Ray worker: {error}")
        return int(pid)

    def close(self) -> None:
        """Stop the workers, and the Ray instance if :meth:`start` started it."""
        if self._ray is None:
            return
        for actor in self._actors:
            self._ray.kill(actor)
        self._actors = []
        if self._started_ray:
            self._ray.shutdown()
            self._started_ray = False

    def __enter__(self) -> RayScoring:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- scoring ---------------------------------------------------------------------------------------------
    def run(self, items: Iterable[str], catalog: Catalog | None = None, progress: ProgressFn | None = None,
            cancel: CancelFn | None = None, prune: bool = True, library_root: str | None = None,
            tasks_roots: Sequence[str | Path] | None = None,
            instructions: Instructions | None = None) -> Iterator[ScoreOutcome]:
        """Score ``items`` (paths or catalog keys every worker can read) on the workers; yields each outcome as it
        arrives (completion order), after writing its score to ``catalog`` when given. ``library_root``: where
        media may be read besides each trajectory's folder, as in local scoring (an absolute path: a worker's working
        folder is not the driver's). ``tasks_roots``: where OSWorld task configs are looked for (``--tasks-root``);
        None: the driver's default (``$ROLLSCOPE_OSWORLD_TASKS_ROOT`` here). Each worker is sent the driver's roots
        as an argument and reads exactly those, whatever its node's environment, so it places OSWorld instructions
        as local scoring does. ``instructions``: what runs without one are judged against, sent to every worker
        (plain data), as in local scoring.

        Raises:
            CatalogError: a score could not be written to ``catalog``.
        """
        ray = self._ray
        if ray is None:
            raise ClusterError("the Ray pool is not started")
        inputs: Sequence[str] = [str(i) for i in items]
        roots = [os.path.abspath(r) for r in (default_tasks_roots() if tasks_roots is None else tasks_roots)]
        waiting: deque[tuple[list[str], int]] = deque(
            (list(inputs[i:i + self.chunk]), 0) for i in range(0, len(inputs), self.chunk))
        out_at: dict[Any, tuple[int, Any, list[str], int]] = {}  # ref -> (worker slot, actor, chunk, attempts)
        load = [0] * len(self._actors)
        done = 0
        while waiting or out_at:
            if cancel is not None and cancel():
                for ref in out_at:
                    ray.cancel(ref)
                return
            while waiting and len(out_at) < self.in_flight * len(self._actors):
                slot = min(range(len(self._actors)), key=lambda s: load[s])
                chunk, attempts = waiting.popleft()
                actor = self._actors[slot]
                task = actor.score.remote(chunk, prune, self.chunk, library_root, roots, instructions)
                out_at[task] = (slot, actor, chunk, attempts)
                load[slot] += 1
                self.stats.tasks += 1
            ready, _ = ray.wait(list(out_at), num_returns=1, timeout=1.0)
            for ref in ready:
                slot, actor, chunk, attempts = out_at.pop(ref)
                load[slot] -= 1
                try:
                    outcomes: list[ScoreOutcome] = ray.get(ref)
                except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                        ray.exceptions.ObjectLostError) as exc:
                    outcomes = self._lost(slot, actor, chunk, attempts, exc, waiting)
                except ray.exceptions.RayTaskError as exc:  # the task itself failed: its trajectories' error lines
                    outcomes = [ScoreOutcome(key=k, id="", error=f"Ray task failed: {exc}") for k in chunk]
                for oc in outcomes:
                    if oc.result is not None and catalog is not None:
                        catalog.set_score(oc.key, oc.result)
                    done += 1
                    if progress is not None:
                        progress(done, len(inputs))
                    yield oc

    def _lost(self, slot: int, actor: Any, chunk: list[str], attempts: int, exc: BaseException,
              waiting: deque[tuple[list[str], int]]) -> list[ScoreOutcome]:
        """A worker died holding ``chunk``: replace it (once per loss) and send the chunk again, a trajectory per
        task, so a trajectory that kills its worker fails alone. Returns the error lines of those out of tries."""
        if self._actors[slot] is actor:  # the first of its lost tasks to come back: a fresh worker takes the slot
            self._actors[slot] = self._new_actor()
            self.stats.replaced += 1
            self.stats.pids.append(self._ready(self._actors[slot]))
        if attempts + 1 >= self.max_attempts:
            reason = " ".join(str(exc).split())[:300]
            return [ScoreOutcome(key=k, id="", error=f"a Ray worker died {attempts + 1} times scoring it: {reason}")
                    for k in chunk]
        self.stats.retried += len(chunk)
        for k in reversed(chunk):
            waiting.appendleft(([k], attempts + 1))
        return []


def score_on_ray(items: Iterable[str], factory: ScorerFactory, address: str | None = None,
                 workers: int | None = None, catalog: Catalog | None = None, progress: ProgressFn | None = None,
                 cancel: CancelFn | None = None, prune: bool = True, chunk: int = 4,
                 on_outcome: Callable[[ScoreOutcome], None] | None = None,
                 library_root: str | Path | None = None,
                 tasks_roots: Sequence[str | Path] | None = None,
                 instructions: Instructions | None = None) -> ClusterStats:
    """Score ``items`` on a Ray pool started for the call (see :class:`RayScoring`), handing each outcome to
    ``on_outcome`` as it arrives; returns what the run took. ``library_root``, ``tasks_roots`` and ``instructions`` as
    in
    :func:`~gui_app.core.scoring.batch.score_many`.

    Raises:
        ClusterError: Ray is missing, the cluster cannot be joined, or the model does not load on a worker.
        CatalogError: a score could not be written to ``catalog``.
    """
    with RayScoring(factory, address, workers, chunk=chunk) as pool:
        root = None if library_root is None else os.path.abspath(library_root)
        for oc in pool.run(items, catalog=catalog, progress=progress, cancel=cancel, prune=prune, library_root=root,
                           tasks_roots=tasks_roots, instructions=instructions):
            if on_outcome is not None:
                on_outcome(oc)
        return pool.stats
