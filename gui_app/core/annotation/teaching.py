"""What the team's labels teach the judge: the labelled runs a fine-tune learns from.

:func:`labelled_runs` turns the annotation store's final labels (the adjudicated record, else the majority of the
annotators; :meth:`gui_app.core.store.interface.AnnotationStore.final_labels`) into :class:`LabelledRun` items: the
library key
the label is stored under, what :func:`gui_app.core.trajectory.formats.load` opens it by, the verdict and, for a
failure, the
root-cause step (the step where the run first went wrong: the network's "first deviating step").

Labels are keyed by the library key (:mod:`gui_app.core.trajectory.identity`): the unit's path relative to the library
root,
plus ``#N`` for one trajectory of a multi-trajectory file. The catalog, when there is one, maps it to its row; a
label of a run the catalog has not indexed (or without a catalog at all) is opened from the root by its key.
Nothing is dropped in silence: a label that is not a usable verdict, or whose run cannot be found, is listed in
:attr:`LabelledRuns.skipped` with the reason.

Plain Python (the core knows no model): :mod:`models.finetune` does the training.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from gui_app.core.store.record import Annotation
from gui_app.core.errors import CatalogError, RollscopeError
from gui_app.core.trajectory.formats import find_units, split_selector
from gui_app.core.trajectory.identity import trajectory_key

if TYPE_CHECKING:
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.store.interface import AnnotationStore

#: The verdicts a fine-tune learns from (``unsure`` teaches nothing about success).
TRAINABLE_VERDICTS = {"success": True, "failure": False}


@dataclass(frozen=True)
class LabelledRun:
    """One run with a final human verdict.

    Attributes:
        ref: the library key its labels are stored under.
        key: what :func:`gui_app.core.trajectory.formats.load` opens (a path, ``PATH#N``).
        success: the final verdict.
        root_cause_step: for a failure, the step where it first went wrong (0-based), when labelled.
        source: ``adjudicated`` or ``majority``.
        task: the catalog's task of the run, when known (the held-out split is stratified by verdict only; this
            is for reports).
    """

    ref: str
    key: str
    success: bool
    root_cause_step: int | None
    source: str
    task: str | None = None


@dataclass
class LabelledRuns:
    """What :func:`labelled_runs` found: the usable runs, and every label left out with why."""

    runs: list[LabelledRun] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (library key, reason)

    @property
    def counts(self) -> dict[str, int]:
        n_ok = sum(r.success for r in self.runs)
        return {"success": n_ok, "failure": len(self.runs) - n_ok, "skipped": len(self.skipped)}


def key_path(ref: str, root: str | Path) -> str:
    """The loadable path of a library key under ``root`` (an absolute key stays as it is)."""
    path, sep, sel = ref.rpartition("#")
    if not sep or not sel.isdigit():
        path, sel = ref, ""
    full = path if os.path.isabs(path) else os.path.normpath(os.path.join(os.path.abspath(root), path))
    return f"{full}#{sel}" if sel else full


def labelled_runs(store: AnnotationStore, root: str | Path, catalog: Catalog | None = None) -> LabelledRuns:
    """The runs of the library at ``root`` that have a final verdict of success or failure.

    Args:
        store: the annotation store.
        root: the library root the keys are relative to.
        catalog: the library's catalog (optional: maps keys to rows, and says which runs failed to load).

    Raises:
        StoreError: the store cannot be read.
    """
    out = LabelledRuns()
    for ref, final in sorted(store.final_labels().items()):
        verdict = final.get("verdict")
        if verdict not in TRAINABLE_VERDICTS:
            why = "no verdict" if verdict is None else f"verdict {verdict!r}"
            if final.get("source") == "majority" and verdict is None and final.get("n_annotators", 0) > 1:
                why = "the annotators disagree on the verdict (adjudicate it)"
            out.skipped.append((ref, f"{why}: nothing to learn success from"))
            continue
        success = TRAINABLE_VERDICTS[verdict]
        key, task = None, None
        if catalog is not None:
            try:
                row = catalog.get(ref)
            except CatalogError as exc:
                out.skipped.append((ref, f"catalog unreadable: {exc}"))
                continue
            if row is not None:
                if row.error is not None:
                    out.skipped.append((ref, f"does not load: {row.error}"))
                    continue
                key, task = row.key, row.task
        if key is None:
            key = key_path(ref, root)
            if not split_selector(key)[0].exists():
                out.skipped.append((ref, f"no such trajectory under {root} ({key}); scan the library or give --root"))
                continue
        step = final.get("root_cause_step")
        out.runs.append(LabelledRun(ref, key, success, None if success or step is None else int(step),
                                    str(final.get("source") or ""), task))
    return out


def known_outcomes(root: str | Path, errors: list[str] | None = None) -> list[LabelledRun]:
    """Every run under ``root`` (any format) whose outcome is recorded (an environment's reward, a checker's
    verdict), as the labels a person would give it: the verdict, and for a failure the recorded first error step
    when the format has one (``metadata['first_error_step']``). What a benchmark of the loop labels the store from
    (``bench/learning_curve.py``). Units that do not load are named in ``errors`` (when given), never dropped
    silently.
    """
    out: list[LabelledRun] = []
    for path, imp in find_units(root):
        try:
            trajs = imp.load_all(path, align=False)
        except (RollscopeError, OSError, ValueError) as exc:
            if errors is not None:
                errors.append(f"{path}: {exc}")
            continue
        for i, t in enumerate(trajs):
            if t.outcome.success is None:
                continue
            key = str(path) if len(trajs) == 1 else f"{path}#{i}"
            fe = t.metadata.get("first_error_step") if isinstance(t.metadata, dict) else None
            step = int(fe) if not t.outcome.success and isinstance(fe, int) and 0 <= fe < t.n_steps else None
            task = t.metadata.get("task") if isinstance(t.metadata, dict) else None
            out.append(LabelledRun(trajectory_key(key, root), key, bool(t.outcome.success), step, "env",
                                   str(task) if task else None))
    return out


def label_store(store: AnnotationStore, runs: list[LabelledRun], annotator: str) -> int:
    """Write ``runs``' verdicts and root-cause steps into ``store`` as ``annotator``'s labels, keyed by library
    key; returns the number of field changes."""
    return store.save_many(Annotation(trajectory_id=r.ref, annotator=annotator,
                                      verdict="success" if r.success else "failure",
                                      root_cause_step=r.root_cause_step) for r in runs)
