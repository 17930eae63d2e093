"""Score trajectories (or catalog keys) with any reward model and record the scores in the catalog.

The core knows no model: it asks for a :class:`Scorer`, which :class:`models.runtime.RewardModel` implements. One
function, :func:`score_many`, serves both the app (Ctrl+R on the open trajectory, Ctrl+Shift+R on the library, from
a worker with a progress callback and a cancel flag) and ``rollscope score``, so both read, batch, record and report
a score the same way.

A run without an instruction is judged against the one a user gave its task (:mod:`gui_app.core.scoring.instructions`,
stored in the catalog) when there is one, and is not scored otherwise. Nothing is dropped unsaid: every input gets an
outcome, a run not scored says why (:attr:`ScoreOutcome.reason`), and :func:`write_log` writes those of a batch to a
file that names each one, for the user to open.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gui_app.core.atomic import publish_file
from gui_app.core.errors import RollscopeError
from gui_app.core.safety import printable
from gui_app.core.scoring.instructions import Instructions, judged
from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Trajectory

if TYPE_CHECKING:
    from gui_app.core.library.catalog import Catalog

ProgressFn = Callable[[int, int], None]
CancelFn = Callable[[], bool]
PreparedT = TypeVar("PreparedT")
# What score_many takes: a path or catalog key (loaded here), a loaded trajectory (keyed by its source path), or a
# (catalog key, trajectory) pair when the key is not the source path (``FILE#N``, a key the app has open).
ScoreInput = str | Trajectory | tuple[str, Trajectory]


class Scorer(Protocol[PreparedT]):
    """What scoring needs of a reward model, in two steps so that a bad input fails alone.

    :meth:`prepare` turns one trajectory into the model's input (decoding keyframes, pruning): it may raise a
    :class:`~gui_app.core.errors.RollscopeError` (no media), ``OSError`` or ``ValueError`` for that trajectory
    only. :meth:`score_prepared` scores several prepared inputs in one forward pass; a judge whose verdict on one
    input can fail alone (an answer that cannot be parsed, a request that failed) puts a
    :class:`~gui_app.core.errors.RollscopeError` in that input's place instead of a score. Neither may change the
    trajectory it is given: the app scores the trajectory on screen from a worker thread.

    Attributes:
        name: the model's name, written with every score.
    """

    name: str

    def prepare(self, traj: Trajectory, prune: bool = True) -> PreparedT:
        """The model's input for ``traj`` (``prune`` False keeps every token: the unpruned baseline)."""
        ...

    def score_prepared(self, prepared: Sequence[PreparedT]) -> Sequence[Score | RollscopeError]:
        """One :class:`~gui_app.core.scoring.score.Score` per prepared input, in order (or the error that stopped
        that one)."""
        ...



# Builds a scorer where it will score (a Ray worker, the app's scoring process): picklable, such as
# ``functools.partial(load_judge, name, options)``.
ScorerFactory = Callable[[], Scorer[Any]]

@dataclass
class ScoreOutcome:
    """What happened to one input: a score, or the error that stopped it.

    Attributes:
        key: the catalog key / path it was given as (the trajectory's source path for a bare Trajectory).
        id: the trajectory id ('' when it did not load).
        result: the score, or None on error.
        error: the error message, or None.
        reason: why it was not scored, in a few words (:data:`NO_INSTRUCTION`, :data:`NOT_LOADED`,
            :data:`FAILED`, :data:`PROCESS_ENDED`), for the summary of a batch; None when scored.
    """

    key: str
    id: str
    result: Score | None = None
    error: str | None = None
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.result is None:
            return {"path": self.key, "error": self.error}
        return {"path": self.key, "id": self.id, **self.result.to_json()}


def key_of(item: ScoreInput) -> str:
    """The key an outcome of ``item`` is given (see :attr:`ScoreOutcome.key`)."""
    if isinstance(item, tuple):
        return item[0]
    return item.source_path if isinstance(item, Trajectory) else str(item)


def _load(item: ScoreInput, library_root: str | Path | None, tasks_roots: Sequence[str | Path] | None) -> Trajectory:
    if isinstance(item, tuple):
        return item[1]
    if isinstance(item, Trajectory):
        return item
    from gui_app.core.trajectory import formats

    return formats.load(str(item), library_root=library_root, tasks_roots=tasks_roots)


# Why a run was not scored (ScoreOutcome.reason).
NO_INSTRUCTION = "no instruction"
NOT_LOADED = "does not load"
FAILED = "could not be scored"
PROCESS_ENDED = "scoring process ended"  # the process scoring it died first (gui_app.core.scoring.process)


class NotScorableError(RollscopeError):
    """A trajectory that loads but cannot be judged (no instruction to judge it against)."""


def check_scorable(key: str, traj: Trajectory, hint: str | None = None) -> None:
    """Refuse a run without an instruction: the reward model judges whether a run did its task, and with no task
    every verdict would be noise presented as a score.

    Args:
        key: the name the message gives the run.
        traj: the run (as judged: with the instruction given to its task, if any; see
            :func:`gui_app.core.scoring.instructions.judged`).
        hint: how to give it one, as the caller's user does it (the app's button); None: the command line's
            options.

    Raises:
        NotScorableError: naming the trajectory and how to give it an instruction.
    """
    if traj.instruction.strip():
        return
    if hint is None:
        hint = " Give it one with --instruction TEXT, or in the app (Set instruction… over the video)."
        if traj.source_format == "osworld":
            hint = (" OSWorld keeps it in evaluation_examples/examples/<domain>/<example_id>.json: run from a "
                    "checkout that has it above the results, pass --instruction TEXT, or pass --tasks-root (or set "
                    "ROLLSCOPE_OSWORLD_TASKS_ROOT)")
    raise NotScorableError(f"{key}: no instruction, so it cannot be judged; not scored.{hint}")


def score_many(items: Iterable[ScoreInput], model: Scorer[PreparedT], catalog: Catalog | None = None,
               progress: ProgressFn | None = None, cancel: CancelFn | None = None, prune: bool = True,
               batch_size: int = 8, on_outcome: Callable[[ScoreOutcome], None] | None = None,
               library_root: str | Path | None = None,
               tasks_roots: Sequence[str | Path] | None = None, instructions: Instructions | None = None,
               no_instruction_hint: str | None = None) -> list[ScoreOutcome]:
    """Score trajectories in batches; one that cannot be read becomes an error outcome and the rest go on.

    Args:
        items: paths or catalog keys that :func:`gui_app.core.trajectory.formats.load` accepts, loaded trajectories, or
            (catalog key, trajectory) pairs.
        model: the reward model.
        catalog: when given, every score is written whole with :meth:`Catalog.set_score`, under the trajectory's
            key there (:meth:`Catalog.score_key` turns the path or catalog key it was given into it).
        progress: called as ``progress(done, total)`` after each trajectory.
        cancel: polled between trajectories; when it returns True, scoring stops and what is done is returned.
        prune: False scores with every token (the unpruned baseline).
        batch_size: trajectories per forward pass.
        on_outcome: called with each outcome, in input order, as soon as it and those before it are final (a batch
            at a time), so ``rollscope score`` prints its lines while the rest are scored.
        library_root: the library the paths belong to: media may be read anywhere under it (see
            :func:`gui_app.core.trajectory.formats.load_unit`).
        tasks_roots: where OSWorld task configs are looked for (``--tasks-root``); None: the user's default.
        instructions: what a run without an instruction is judged against (the ones users gave tasks, from the
            catalog, and ``--instruction``); a run none applies to is not scored.
        no_instruction_hint: how the caller's user gives a run an instruction, said to them when one has none
            (see :func:`check_scorable`).

    Returns:
        One :class:`ScoreOutcome` per input handled, in input order.

    Raises:
        CatalogError: a score could not be written to ``catalog``.
    """
    inputs: Sequence[ScoreInput] = list(items)
    out: list[ScoreOutcome] = []
    pending: list[tuple[ScoreOutcome, PreparedT]] = []
    handed = 0  # outcomes given to on_outcome so far: always the first ones, in input order

    def hand_on(start: int) -> int:
        """Give ``on_outcome`` the outcomes from ``start`` on that are final (scored or failed), stopping at the
        first still waiting in a batch, so the lines come in input order; returns where it stopped."""
        while start < len(out) and (out[start].result is not None or out[start].error is not None):
            if on_outcome is not None:
                on_outcome(out[start])
            start += 1
        return start

    def flush() -> None:
        if not pending:
            return
        scores = model.score_prepared([prepared for _, prepared in pending])
        for (oc, _), score in zip(pending, scores, strict=True):
            if isinstance(score, RollscopeError):
                oc.error, oc.reason = str(score), FAILED
                continue
            oc.result = score
            if catalog is not None:
                catalog.set_score(oc.key, score)
        pending.clear()

    for i, item in enumerate(inputs):
        if cancel is not None and cancel():
            break
        oc = ScoreOutcome(key=key_of(item), id="")
        out.append(oc)
        try:
            traj = _load(item, library_root, tasks_roots)
        except (RollscopeError, OSError, ValueError) as exc:
            oc.error, oc.reason = str(exc), NOT_LOADED
        else:
            oc.id = traj.id
            try:
                traj = judged(traj, instructions)
                check_scorable(oc.key, traj, no_instruction_hint)
                pending.append((oc, model.prepare(traj, prune=prune)))
            except NotScorableError as exc:
                oc.error, oc.reason = str(exc), NO_INSTRUCTION
            except (RollscopeError, OSError, ValueError) as exc:
                oc.error, oc.reason = str(exc), FAILED
        if len(pending) >= batch_size:
            flush()
        handed = hand_on(handed)
        if progress is not None:
            progress(i + 1, len(inputs))
    flush()
    hand_on(handed)
    return out


def not_scored(outcomes: Iterable[ScoreOutcome]) -> list[ScoreOutcome]:
    """The outcomes of runs that were not scored, in order."""
    return [o for o in outcomes if o.result is None]


def summary(outcomes: Iterable[ScoreOutcome]) -> str:
    """Why the runs not scored were not, counted: ``45 with no instruction, 2 that do not load`` ('' when every
    run was scored)."""
    counts = Counter(o.reason or FAILED for o in not_scored(outcomes))
    words = {NO_INSTRUCTION: "with no instruction", NOT_LOADED: "that do not load", FAILED: "that failed",
             PROCESS_ENDED: "lost when the scoring process ended"}
    return ", ".join(f"{n:,} {words.get(reason, reason)}" for reason, n in counts.most_common())


def log_lines(outcomes: Iterable[ScoreOutcome]) -> list[str]:
    """One line per run not scored: its key, why in a few words, and the error in full (on one line)."""
    return ["\t".join(printable(" ".join(part.split())) for part in (o.key, o.reason or FAILED, o.error or ""))
            for o in not_scored(outcomes)]


def write_log(outcomes: Sequence[ScoreOutcome], folder: str | Path, what: str = "scoring") -> Path | None:
    """Write the runs of a batch that were not scored to ``folder/score-<time>.log`` (tab-separated: key, reason,
    error; after a header that counts them), whole or not at all; returns the file, or None when every run was
    scored.

    Raises:
        OSError: the folder cannot be created or the file written.
    """
    lines = log_lines(outcomes)
    if not lines:
        return None
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = folder / f"score-{stamp}.log"
    n = 1
    while target.exists():
        n += 1
        target = folder / f"score-{stamp}-{n}.log"
    scored = sum(o.result is not None for o in outcomes)
    head = [f"# Rollscope {what}, {time.strftime('%Y-%m-%d %H:%M:%S')}: {scored:,} of {len(outcomes):,} scored; "
            f"not scored: {summary(outcomes)}", "# key\treason\terror"]

    def write(tmp: Path) -> None:
        tmp.write_text("\n".join([*head, *lines]) + "\n", encoding="utf-8")

    publish_file(target, write)
    return target
