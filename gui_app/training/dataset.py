"""Build a reward-model dataset from recorded native trajectories: splits, derived negatives, manifest, counts.

``build_dataset(root, out)`` reads every native trajectory under ``root`` (as ``rollscope collect`` writes them),
assigns each episode a split from a hash of its seed (so all tasks' episodes of one seed, and every negative
derived from an episode, land in the same split), keeps the ``holdout_tasks`` out of training entirely (split
``heldout_task``), derives negatives from successful runs (:mod:`gui_app.training.negatives`) and writes:

- ``DS/manifest.parquet``: one row per example with the columns of :data:`MANIFEST_COLUMNS` (paths relative to
  ``DS``) plus extra columns;
- ``DS/counts.csv``: examples per task, split, kind and label;
- ``DS/derived/<kind>/<task>/<id>/trajectory.json``: the derived negatives (media referenced, not copied);
- ``DS/build.json``: the parameters and totals of the build.

Human labels: when the library under ``root`` has an annotation store (``gui_app.core.store.interface``), its final
verdicts override the environment's label for the episodes they cover (column ``label_source`` says which).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import csv
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_app.core import parquet
from gui_app.core.trajectory.formats import native
from gui_app.core.errors import RollscopeError, TrajectoryFormatError
from gui_app.core.trajectory.identity import trajectory_key
from gui_app.core.trajectory.model import Trajectory

#: The manifest columns the reward model relies on (see HELPERS.md "Dataset manifest").
MANIFEST_COLUMNS = ("path", "id", "task", "seed", "instruction", "success", "first_error_step", "negative_kind",
                    "mistake_type", "split", "n_steps")
SPLITS = ("train", "val", "test", "heldout_task")
#: Every column the build writes, with its type.
MANIFEST_SCHEMA: dict[str, parquet.ColumnType] = {
    "path": "string", "id": "string", "task": "string", "seed": "int64", "instruction": "string", "success": "bool",
    "first_error_step": "int64", "negative_kind": "string", "mistake_type": "string", "split": "string",
    "n_steps": "int64", "abs_path": "string", "derived_from": "string", "episode": "int64", "raw_reward": "float64",
    "label_source": "string", "original_instruction": "string", "agent": "string", "style_family": "string",
    "recovered_step": "int64"}

#: MiniWoB++ task types never trained on and never used to choose the recipe: they measure accuracy on unseen task
#: types (see ``shared/REWARD_MODEL.md``). The recorders can record them (for evaluation); ``build_dataset`` puts
#: them in the ``heldout_task`` split unless told otherwise.
HELDOUT_TASKS: tuple[str, ...] = ("click-link", "enter-password", "navigate-tree", "click-collapsible",
                                  "click-collapsible-2", "enter-date", "enter-time", "grid-coordinate",
                                  "social-media", "social-media-all", "social-media-some")

#: Probability that a successful run yields each kind of derived negative.
NEGATIVE_RATES = {"adversarial": 0.4, "truncation": 0.25, "swap": 0.15}

ProgressFn = Callable[[Iterable[Any], int | None, str], Iterable[Any]]


class DatasetError(RollscopeError):
    """The dataset cannot be built (no trajectories, bad parameters)."""


@dataclass
class BuildResult:
    """What ``build_dataset`` wrote."""

    out: str
    manifest_path: str
    n_examples: int
    n_source: int
    n_derived: int
    counts: list[dict[str, Any]]
    warnings: list[str] = field(default_factory=list)
    human_labels: int = 0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.out, "manifest": self.manifest_path, "n_examples": self.n_examples,
                "n_source": self.n_source, "n_derived": self.n_derived, "human_labels": self.human_labels,
                "counts": self.counts, "warnings": self.warnings[:50], "n_warnings": len(self.warnings),
                "seconds": round(self.seconds, 2)}


def split_of(seed: int | str, salt: int = 0, split: tuple[int, int, int] = (80, 10, 10)) -> str:
    """The split of an episode seed: a stable hash of (salt, seed) mapped to train/val/test percentages."""
    if sum(split) != 100 or any(p < 0 for p in split):
        raise DatasetError(f"split percentages must be >= 0 and sum to 100, got {split}")
    h = int(hashlib.sha1(f"{salt}:{seed}".encode()).hexdigest()[:8], 16) % 100
    if h < split[0]:
        return "train"
    if h < split[0] + split[1]:
        return "val"
    return "test"


def find_trajectories(root: str | Path) -> list[Path]:
    """Native trajectory directories under ``root`` (skipping hidden and temporary dirs), sorted."""
    root = Path(root)
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        if native.FILENAME in filenames:
            found.append(Path(dirpath))
            dirnames[:] = []
    return found


def _human_labels(root: Path, warnings: list[str]) -> dict[str, dict[str, Any]]:
    """Final human verdicts per trajectory key from the library's annotation store, if there is one.

    The store is optional: without it (or with an unreadable one) the environment's labels stand, with a warning.
    """
    try:
        from gui_app.core.store.sqlite import SqliteAnnotationStore
        from gui_app.core.store.interface import default_path
    except (ImportError, SyntaxError) as exc:
        warnings.append(f"annotation store unavailable, human labels ignored: {exc}")
        return {}
    path = default_path(root)
    if not path.is_file():
        return {}
    try:
        st = SqliteAnnotationStore(path)
    except RollscopeError as exc:
        warnings.append(f"{path}: cannot open the annotation store, human labels ignored: {exc}")
        return {}
    try:
        return st.final_labels()
    finally:
        st.close()


def _row(traj: Trajectory, path: Path, ds: Path, split: str, label_source: str = "env") -> dict[str, Any]:
    md = traj.metadata
    seed = md.get("seed")
    fes = md.get("first_error_step")
    success = bool(traj.outcome.success)
    return {
        "path": os.path.relpath(path.resolve(), ds.resolve()),
        "id": traj.id,
        "task": str(md.get("task") or traj.app or ""),
        "seed": int(seed) if seed is not None else None,
        "instruction": traj.instruction,
        "success": success,
        "first_error_step": None if success or fes is None else int(fes),
        "negative_kind": str(md.get("negative_kind") or ("none" if success else "real_failure")),
        "mistake_type": md.get("mistake_type"),
        "split": split,
        "n_steps": traj.n_steps,
        # extra columns
        "abs_path": str(path.resolve()),
        "derived_from": md.get("derived_from"),
        "episode": md.get("episode"),
        "raw_reward": md.get("raw_reward"),
        "label_source": label_source,
        "original_instruction": md.get("original_instruction"),
        "agent": traj.agent,
        "style_family": md.get("style_family") or (md.get("style") or {}).get("family"),
        "recovered_step": md.get("recovered_step"),
    }


def build_dataset(root: str | Path | Sequence[str | Path], out: str | Path,
                  holdout_tasks: Iterable[str] = HELDOUT_TASKS, seed: int = 0,
                  negatives: Iterable[str] = ("adversarial", "truncation", "swap"),
                  split: tuple[int, int, int] = (80, 10, 10), progress: ProgressFn | None = None,
                  rates: dict[str, float] | None = None) -> BuildResult:
    """Build ``out/manifest.parquet`` (and derived negatives, counts) from the trajectories under ``root`` (a
    folder, or several: recordings kept where they were made, so that their cached perceptions stay valid).

    Args:
        holdout_tasks: task types kept out of training entirely (split ``heldout_task``); by default
            :data:`HELDOUT_TASKS`.
        seed: salt of the split hash and seed of the negatives' choices (a build is deterministic).
        negatives: kinds of derived negatives to add (``adversarial``, ``truncation``, ``swap``).
        split: train/val/test percentages.
        progress: ``progress(iterable, total, desc)`` wrapper for a progress bar.
        rates: probability per kind that a successful run yields that negative (default
            :data:`NEGATIVE_RATES`).

    Raises:
        DatasetError: no trajectories under ``root`` or a bad parameter.
    """
    from gui_app.training import negatives as neg

    t0 = time.time()
    roots = [Path(root)] if isinstance(root, (str, Path)) else [Path(r) for r in root]
    root, ds = roots[0], Path(out)
    kinds = list(negatives)
    bad = [k for k in kinds if k not in neg.NEGATIVE_KINDS]
    if bad:
        raise DatasetError(f"unknown negative kind(s): {', '.join(bad)} (known: {', '.join(neg.NEGATIVE_KINDS)})")
    rates = {**NEGATIVE_RATES, **(rates or {})}
    holdout = set(holdout_tasks)
    wrap = progress or (lambda it, total, desc: it)
    dirs = [d for r in roots for d in find_trajectories(r) if ds.resolve() not in d.resolve().parents]
    if not dirs:
        raise DatasetError(f"{', '.join(map(str, roots))}: no native trajectories (trajectory.json) found")
    ds.mkdir(parents=True, exist_ok=True)
    warnings: list[str] = []
    sources: list[tuple[Trajectory, Path]] = []
    for d in wrap(dirs, len(dirs), "read"):
        try:
            traj = native.load(d)
        except TrajectoryFormatError as exc:
            warnings.append(str(exc))
            continue
        if traj.metadata.get("negative_kind") not in (None, "none", "real_failure"):
            continue  # a derived negative from an earlier build inside root: rebuilt below
        if traj.metadata.get("env_reason") == "timed out":
            # The page's clock ran out (a starved machine), not the agent: the video shows no reason to fail.
            warnings.append(f"{d}: episode timed out; left out of the dataset")
            continue
        warnings.extend(traj.warnings)
        sources.append((traj, d))

    present = {str(t.metadata.get("task") or "") for t, _ in sources}
    if set(holdout) != set(HELDOUT_TASKS):
        for t in sorted(holdout - present):
            warnings.append(f"held-out task {t!r} has no trajectories under {root}")
    humans = _human_labels(root, warnings)
    ids = Counter(t.id for t, _ in sources)
    rows = []
    for traj, d in sources:
        task = str(traj.metadata.get("task") or "")
        sp = "heldout_task" if task in holdout else split_of(traj.metadata.get("seed", traj.id), seed, split)
        label_source = "env"
        # Labels are keyed by the library key (gui_app.core.trajectory.identity); one stored under a format's id before
        # keys
        # existed counts only when no other run here has that id.
        h = humans.get(trajectory_key(str(d), root)) or (humans.get(traj.id) if ids[traj.id] == 1 else None)
        if h and h.get("verdict") in ("success", "failure"):
            traj.outcome.success = h["verdict"] == "success"
            if not traj.outcome.success and h.get("root_cause_step") is not None:
                traj.metadata["first_error_step"] = int(h["root_cause_step"])
            label_source = "human"
        rows.append(_row(traj, d, ds, sp, label_source))

    # Derived negatives, from successful runs only, deterministic per (build seed, episode id).
    derived_root = ds / "derived"
    if derived_root.exists():
        shutil.rmtree(derived_root)
    pool: dict[str, list[dict[str, str]]] = {}
    for traj, _ in sources:
        pool.setdefault(str(traj.metadata.get("task")), []).append(dict(traj.metadata.get("fields") or {}))
    instr_by_task: dict[str, list[tuple[str, str]]] = {}
    for traj, _ in sources:
        instr_by_task.setdefault(str(traj.metadata.get("task")), []).append((traj.id, traj.instruction))
    split_by_id = {r["id"]: r["split"] for r in rows}
    n_derived = 0
    for traj, d in wrap(sources, len(sources), "negatives"):
        if not traj.outcome.success or not kinds:
            continue
        task = str(traj.metadata.get("task"))
        rng = random.Random(f"{seed}:{traj.id}")
        made: list[Trajectory] = []
        if "adversarial" in kinds and rng.random() < rates["adversarial"]:
            rw = neg.adversarial(traj, pool, rng)
            if rw is not None and rw.instruction != traj.instruction:
                made.append(neg.derive(traj, "adversarial", instruction=rw.instruction,
                                       first_error_step=rw.first_error_step, note=rw.changed))
        if "truncation" in kinds and rng.random() < rates["truncation"]:
            keep = neg.truncation_point(traj, rng)
            if keep is not None:
                made.append(neg.derive(traj, "truncation", first_error_step=keep, keep_steps=keep,
                                       note=f"kept {keep} of {traj.n_steps} steps"))
        if "swap" in kinds and rng.random() < rates["swap"]:
            other_tasks = sorted(t for t in instr_by_task if t != task)
            if other_tasks:
                src_id, instr = rng.choice(instr_by_task[rng.choice(other_tasks)])
                made.append(neg.derive(traj, "swap", instruction=instr, first_error_step=0,
                                       note=f"instruction of {src_id}", swap_source=src_id))
        for dtraj in made:
            kind = dtraj.metadata["negative_kind"]
            target = derived_root / kind / task / dtraj.id.replace("~", "_")
            native.save(dtraj, target)
            dtraj.source_path = str(target)
            rows.append(_row(dtraj, target, ds, split_by_id[traj.id]))
            n_derived += 1

    rows.sort(key=lambda r: tuple((r[k] is not None, r[k] or "") for k in ("task", "split", "id")))
    manifest = ds / "manifest.parquet"
    tmp = ds / ".manifest.parquet.tmp"
    parquet.write(tmp, {k: [r.get(k) for r in rows] for k in MANIFEST_SCHEMA}, MANIFEST_SCHEMA)
    os.replace(tmp, manifest)  # readers polling for the manifest never see a half-written file
    counts = counts_table(rows)
    with (ds / "counts.csv").open("w", encoding="utf-8", newline="") as fh:
        writer = csv.DictWriter(fh, ["task", "split", "negative_kind", "label", "n"])
        writer.writeheader()
        writer.writerows(counts)
    result = BuildResult(out=str(ds), manifest_path=str(manifest), n_examples=len(rows), n_source=len(sources),
                         n_derived=n_derived, counts=counts, warnings=warnings,
                         human_labels=sum(1 for r in rows if r["label_source"] == "human"),
                         seconds=time.time() - t0)
    (ds / "build.json").write_text(json.dumps({
        "root": str(root.resolve()), "holdout_tasks": sorted(holdout), "seed": seed, "negatives": kinds,
        "split": list(split), "rates": rates, **{k: v for k, v in result.to_dict().items() if k != "counts"},
        "by_split": dict(Counter(r["split"] for r in rows)),
        "by_kind": dict(Counter(r["negative_kind"] for r in rows)),
    }, indent=1))
    return result


def counts_table(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Examples per task, split, negative kind and label (``success`` / ``failure``) of manifest rows, sorted."""
    n = Counter((r["task"], r["split"], r["negative_kind"], "success" if r["success"] else "failure") for r in rows)
    return [{"task": t, "split": s, "negative_kind": k, "label": lab, "n": c}
            for (t, s, k, lab), c in sorted(n.items(), key=lambda kv: tuple(str(x) for x in kv[0]))]


def format_counts(counts: list[dict[str, Any]]) -> str:
    """A compact table: one line per task with success/failure per split, then totals per split and kind."""
    by_task: dict[str, Counter] = {}
    totals: Counter = Counter()
    kinds: Counter = Counter()
    for c in counts:
        by_task.setdefault(c["task"], Counter())[(c["split"], c["label"])] += c["n"]
        totals[(c["split"], c["label"])] += c["n"]
        kinds[c["negative_kind"]] += c["n"]
    splits = [s for s in SPLITS if any(k[0] == s for k in totals)]
    head = f"{'task':<24}" + "".join(f"{s + ' +/-':>20}" for s in splits)
    lines = [head]
    for task, c in sorted(by_task.items()):
        lines.append(f"{task:<24}" + "".join(f"{c[(s, 'success')]:>12}/{c[(s, 'failure')]:<7}" for s in splits))
    lines.append(f"{'TOTAL':<24}" + "".join(f"{totals[(s, 'success')]:>12}/{totals[(s, 'failure')]:<7}"
                                            for s in splits))
    lines.append("by kind: " + ", ".join(f"{k}={v}" for k, v in sorted(kinds.items())))
    return "\n".join(lines)
