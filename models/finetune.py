"""Fine-tune the judge on a team's own labels, on its CPU, with a before-and-after report.

``finetune(args, runs)`` takes labelled runs (:func:`gui_app.core.annotation.teaching.labelled_runs`: the final
verdict of each
run, and the root-cause step of a failure, which becomes the first deviating step) in any format Rollscope reads,
and:

1. opens the base model (a weights folder, by default the shipped weights, or a training run) and perceives every
   run with the base's own perception, once: perceptions are cached in ``RUN/.perception`` (or ``args.cache``), so
   a rerun, or a fine-tune on more labels, only perceives the new runs;
2. keeps a seeded held-out slice of the labels (``args.holdout``, stratified by verdict) out of training: the report
   is measured on it;
3. fine-tunes the base network: a small learning rate, a few epochs, a pull back towards the base weights (L2-SP:
   a few labels must adjust the judge, not erase what it knew), reading noise on half the examples as in training,
   and a time budget (``args.minutes``). Memory stays bounded: records hold features only, augmentation reads
   perceptions back from the cache through a bounded buffer;
4. refits on the training slice what depends on the network's outputs: the calibration of p_success (Platt scaling,
   with Platt's own target smoothing so that a slice the network separates perfectly does not yield infinite
   confidence), the decision threshold (0.5 where agent trees are fitted: their probabilities on their own labels
   are in-sample), and the out-of-distribution reference (its unit, the 99th percentile
   distance, measured out of fold, so that runs like the training ones are not all flagged unknown), whose ranges
   of screen size, screen shape and run length are the base's widened by the training slice's;
5. writes ``RUN/checkpoint.pt`` (:class:`models.checkpoint.Checkpoint`) and exports RUN as a weights folder
   (``model.onnx``, ``pointer.onnx``, ``model.pt``, ``model.json``): ``rollscope score --model RUN``,
   ``eval --model RUN`` and the app use it like the shipped model;
6. scores the held-out slice with the base model and with the new one, through the runtime's own path, and stores
   the report (accuracy, recall, first-step accuracy, calibration; both models side by side) in
   ``RUN/report.json``. :func:`is_worse` says whether the new model should not replace the active one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy.special import expit

from gui_app.core.errors import RollscopeError
from gui_app.core.annotation.teaching import LabelledRun
from gui_app.core.atomic import publish_file
from models.checkpoint import AGENT_TREES_FILE, RUN_FILE, Calibration, OODReference
from models.data import (PERCEPT_SUFFIX, Record, cache_key, perceive_trajectory, read_percept, record_for,
                         save_percept)
from models.evaluate import calibration, classification, localisation
from models.features import first_error_frame
from models.network import Network, losses
from models.runtime import WEIGHTS_DIR, ModelLoadError, Prepared, RewardModel, deviation_step
from models.train import (choose_threshold, fit_platt, noisy_percept, ood_reference, ood_vectors, predict,
                          seed_everything, summary_ranges, to_tensors)
from models.trees import AGENT_PARAMS, TREES_THRESHOLD, RunTrees, blend, fit_trees
from models.versions import mahalanobis, versions

REPORT_NAME = "report.json"
#: The metrics of the before-and-after table, in print order: (key, label, format).
REPORT_ROWS = (("accuracy", "accuracy", "{:.1%}"), ("recall", "recall (success)", "{:.1%}"),
               ("precision", "precision (success)", "{:.1%}"), ("first_error_exact", "first step exact", "{:.1%}"),
               ("first_error_within_one", "first step within one", "{:.1%}"), ("ece", "calibration error (ECE)",
                                                                                "{:.3f}"),
               ("ece_floor", "ECE a calibrated judge shows", "{:.3f}"),
               ("unknown_share", "flagged unknown", "{:.1%}"), ("n", "held-out runs", "{}"),
               ("n_localised", "failures with a labelled step", "{}"))
MIN_HELDOUT = 2  # held-out runs per verdict, when there are enough (one is always left to train on)
_AUGMENT_BUFFER = 256  # perceptions kept in memory for augmentation (each a few hundred KB at most)


class FinetuneError(RollscopeError):
    """A fine-tune cannot run: too few labels, a base model that does not load, no run that could be perceived."""


@dataclass
class FinetuneArgs:
    """Options of ``rollscope train --from-labels`` (defaults: a fine-tune that takes minutes on 2 cores).

    Attributes:
        out: the run folder (also a weights folder once exported).
        base: the model to start from: a weights folder or a training run ("" = the shipped weights).
        cache: the perception cache folder ("" = ``OUT/.perception``).
        minutes: training time budget (0: none); training stops after the step that spends it.
        epochs: at most this many passes over the training slice.
        batch_size: examples per step.
        lr: AdamW learning rate (a tenth of training from scratch's: the base is already a judge).
        weight_decay: AdamW weight decay.
        anchor: weight of the L2 pull towards the base weights.
        holdout: share of the labels, per verdict, kept out of training for the report (0: no report).
        augment: share of training examples re-featurised with reading noise each epoch.
        seed: seeds the split, the order, the augmentation and dropout.
        threads: torch CPU threads.
        library_root: the library the runs belong to: their media may lie anywhere inside it (a derived run reads
            its original's recording), not only in their own folder.
        recipe: ``auto`` (each of :data:`RECIPES` is tried by cross-validation on the training slice, and the one
            with the best accuracy kept), or one of them.
        folds: folds of that cross-validation.
    """

    out: str
    base: str = ""
    cache: str = ""
    minutes: float = 10.0
    epochs: int = 12
    batch_size: int = 16
    lr: float = 3e-4
    weight_decay: float = 0.01
    anchor: float = 0.01
    holdout: float = 0.25
    augment: float = 0.5
    seed: int = 0
    threads: int = 1
    library_root: str = ""
    recipe: str = "auto"
    folds: int = 4


#: What a fine-tune may change, simplest first (a tie keeps the simpler): ``keep`` changes nothing (the base's network,
#: calibration and threshold: what the labels are judged by when no recipe judges them better, so that a fine-tune
#: chosen on a few labels does not leave the judge worse than it found it); ``calibrate`` refits only the calibration
#: and threshold on the frozen network (an agent that succeeds more or less often than the training ones);
#: ``trees`` also fits agent trees on the labels' run features (:mod:`models.trees`: what this agent's successes and
#: failures look like), averaged in; ``head`` trains the output heads (success head, run-level MLP, first-step head)
#: on frozen features; ``full`` trains the whole network, pulled towards the base weights.
RECIPES = ("keep", "calibrate", "trees", "head", "full")
_HEADS = ("success_head.", "run_mlp.", "frame_head.")
#: A recipe that trains the network (``head``, ``full``) is chosen only when its cross-validated accuracy beats the
#: best of the others by more than this: it fits thousands of weights on a few dozen labels per fold, so its folds
#: vary most, and it takes minutes where the others take seconds. (On agent B's runs of the training pool, five
#: draws of 100 labels: ``full`` won one draw by one label, 70% against the agent trees' 69%, and lifted 4.8 points
#: where the agent trees lifted 10.9.)
NETWORK_MARGIN = 0.02


def _is_head(name: str) -> bool:
    """Is parameter ``name`` one of an output head's (of the network, or of an ensemble's member ``nets.K.``)?"""
    return name.split(".", 2)[-1].startswith(_HEADS) if name.startswith("nets.") else name.startswith(_HEADS)


@dataclass
class Perceived:
    """A labelled run made ready: its record (features and labels) and what scoring it needs."""

    run: LabelledRun
    record: Record
    n_steps: int
    instruction: str


ProgressFn = Callable[[str, int, int], None]


def heldout_split(runs: Sequence[LabelledRun], fraction: float, seed: int) -> tuple[list[int], list[int]]:
    """Indices (training, held out): per verdict, a seeded ``fraction`` of the runs (when the fraction is above 0, at
    least :data:`MIN_HELDOUT` of each verdict, and never all of them), so both slices hold both verdicts and a
    report of a few labels is not one run's coin toss. The draw depends on the runs' keys, not on their order."""
    rng = random.Random(seed)
    train, held = [], []
    for verdict in (True, False):
        idx = sorted((i for i, r in enumerate(runs) if r.success == verdict), key=lambda i: runs[i].ref)
        rng.shuffle(idx)
        n = 0 if fraction <= 0 else min(len(idx) - 1, max(MIN_HELDOUT, round(fraction * len(idx))))
        held += idx[:max(0, n)]
        train += idx[max(0, n):]
    return sorted(train), sorted(held)


def resolve_base(base: str | Path | None) -> Path:
    """The base model's folder: ``base``, else the shipped weights."""
    return Path(base) if base else WEIGHTS_DIR


def load_base(base: str | Path | None, threads: int = 1) -> tuple[RewardModel, RewardModel]:
    """(the base as scoring runs it: onnxruntime when it has an ONNX graph, else torch; the base on the torch
    backend, whose network is fine-tuned).

    Raises:
        ModelLoadError: the base does not load (missing files, other feature versions).
    """
    path = resolve_base(base)
    trainable = RewardModel.load(path, backend="torch", threads=threads)
    try:
        scoring = RewardModel.load(path, backend="onnx", threads=threads)
    except ModelLoadError:  # a training run holds a torch checkpoint only: it scores on torch
        scoring = trainable
    return scoring, trainable


def _percept_file(cache_dir: Path, key: str, run_key: str) -> Path:
    """Cache file of one run's perception: named by the unit's resolved path, selector, size and modification time
    (a run written again is perceived again)."""
    from gui_app.core.trajectory.formats import split_selector

    path, sel = split_selector(run_key)
    try:
        st = path.stat()
        sig = f"{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        sig = "missing"
    name = hashlib.sha256(f"{path.resolve()}#{sel}:{sig}".encode()).hexdigest()[:24]
    return cache_dir / key / f"{name}{PERCEPT_SUFFIX}"


def perceive_runs(runs: Sequence[LabelledRun], model: RewardModel, cache_dir: str | Path,
                  progress: ProgressFn | None = None, library_root: str | Path | None = None,
                  ) -> tuple[list[Perceived], list[tuple[str, str]], float]:
    """Perceive every run with ``model``'s perception (cached); returns (perceived runs, (key, error) for each run
    that could not be, seconds spent perceiving what was not cached)."""
    from gui_app.core.trajectory import formats

    cache = Path(cache_dir)
    key = cache_key(model.perceiver.cfg, model.perceiver.pointer.path)
    out: list[Perceived] = []
    errors: list[tuple[str, str]] = []
    seconds = 0.0
    for i, run in enumerate(runs):
        file = _percept_file(cache, key, run.key)
        try:
            payload = None
            if file.is_file():
                try:
                    payload = read_percept(file)
                except ValueError:  # damaged, or not ours: perceived again and written over
                    payload = None
                if payload is not None and len(payload["steps"]) > model.max_keyframes:  # judged on fewer
                    payload = None
            if payload is None:
                t0 = time.perf_counter()
                payload = perceive_trajectory(model.perceiver, formats.load(run.key, library_root=library_root),
                                              model.max_keyframes)
                save_percept(file, payload)
                seconds += time.perf_counter() - t0
            if not payload["instruction"].strip():
                raise FinetuneError(f"{run.key}: no instruction: there is nothing to judge the run against")
            step = run.root_cause_step
            if step is not None and not 0 <= step < payload["n_steps"]:
                errors.append((run.ref, f"root-cause step {step} is outside the run's {payload['n_steps']} steps: "
                                        "learnt from its verdict only"))
                step = None
            row = {"path": run.key, "ref": run.ref, "source_path": str(file), "instruction": payload["instruction"],
                   "success": run.success, "first_error_step": step, "n_steps": 0}
            out.append(Perceived(run, record_for(row, payload), payload["n_steps"], payload["instruction"]))
        except (RollscopeError, OSError, ValueError, KeyError) as exc:
            errors.append((run.ref, str(exc)))
        if progress is not None:
            progress("perceive", i + 1, len(runs))
    return out, errors, seconds


def score_examples(model: RewardModel, items: Sequence[Perceived]) -> list[dict[str, Any]]:
    """Score perceived runs with ``model`` through the runtime (calibration, threshold, OOD): one row each with
    ``p``, ``success`` (the label), ``predicted``, ``pred_step``, ``true_step``, ``ood`` and ``unknown``."""
    rows = []
    for i in range(0, len(items), 16):
        chunk = items[i:i + 16]
        scores = model.score_prepared([Prepared(it.record.example, it.n_steps, it.instruction) for it in chunk])
        for it, res in zip(chunk, scores):
            steps = res.keyframe_steps
            pred_step = deviation_step(it.record.example, res)
            fe = it.record.row.get("first_error_step")
            true_step = None
            if not it.run.success and fe is not None and steps:  # credit per keyframe, as `rollscope eval`
                true_step = steps[first_error_frame(steps, int(fe))]
            rows.append({"ref": it.run.ref, "p": float(res.p_success or 0.0), "success": it.run.success,
                         "predicted": bool(res.success), "pred_step": pred_step, "true_step": true_step,
                         "ood": float(res.ood or 0.0), "unknown": bool(res.unknown)})
    return rows


def summarise(rows: Sequence[dict[str, Any]], threshold: float) -> dict[str, Any]:
    """The report's metrics over scored rows (:func:`score_examples`)."""
    p = np.array([r["p"] for r in rows], dtype=float)
    y = np.array([r["success"] for r in rows], dtype=float)
    m: dict[str, Any] = classification(p, y, threshold)
    cal = calibration(p, y)
    m["ece"], m["ece_floor"] = cal["ece"], cal["ece_floor"]
    loc = [(r["pred_step"], r["true_step"]) for r in rows if r["true_step"] is not None]
    m.update(localisation([a for a, _ in loc], [b for _, b in loc]))
    m["unknown_share"] = float(np.mean([r["unknown"] for r in rows])) if rows else float("nan")
    m["threshold"] = threshold
    return m


def is_worse(report: dict[str, Any]) -> tuple[bool, str]:
    """Whether the new model must not replace the active one, and why: it is worse when its accuracy on the held-out
    labels is lower than the base's; with equal accuracy, when it places fewer first deviating steps exactly. A
    fine-tune without held-out labels cannot show it is not worse, so it counts as worse."""
    base, new = report.get("base"), report.get("new")
    if not base or not new or not base.get("n"):
        return True, "no held-out labels to compare the two models on"
    ba, na = base["accuracy"], new["accuracy"]
    if na < ba - 1e-9:
        return True, f"held-out accuracy {na:.1%} is below the base model's {ba:.1%}"
    if abs(na - ba) <= 1e-9:
        bf, nf = base.get("first_error_exact"), new.get("first_error_exact")
        if bf is not None and nf is not None and not math.isnan(bf) and not math.isnan(nf) and nf < bf - 1e-9:
            return True, f"same held-out accuracy, but first steps placed exactly {nf:.1%} < {bf:.1%}"
    return False, f"held-out accuracy {na:.1%} (base {ba:.1%})"


def _anchor_loss(net: Network, ref: dict[str, torch.Tensor]) -> torch.Tensor:
    """Squared distance of the floating weights from the base's (L2-SP)."""
    return sum(((p - ref[n]) ** 2).sum() for n, p in net.named_parameters())  # type: ignore[return-value]


def _platt_targets(y: np.ndarray) -> np.ndarray:
    """Platt's smoothed targets: (N+ + 1) / (N+ + 2) for successes, 1 / (N- + 2) for failures."""
    pos, neg = float(y.sum()), float(len(y) - y.sum())
    return np.where(y > 0, (pos + 1) / (pos + 2), 1 / (neg + 2))


def _ood_reference(vecs: np.ndarray, folds: int = 5, seed: int = 0) -> dict[str, Any]:
    """The OOD reference of the training slice; its unit (the 99th percentile distance) measured out of fold: each
    run's distance from a reference fitted without it, as a new run like it would be."""
    ref = ood_reference(vecs, vecs)
    n = len(vecs)
    if n < 4:
        return ref
    order = np.random.default_rng(seed).permutation(n)
    dists = []
    for f in range(min(folds, n)):
        test = order[f::min(folds, n)]
        fit = np.setdiff1d(order, test)
        r = ood_reference(vecs[fit], vecs[fit])
        dists.append(mahalanobis(vecs[test], np.array(r["mean"]), np.array(r["std"]), np.array(r["precision"])))
    ref["scale"] = max(float(np.percentile(np.concatenate(dists), 99)), 1e-6)
    return ref


def _train(net: Network, items: list[Perceived], args: FinetuneArgs, log: Callable[[str], None],
           progress: ProgressFn | None, recipe: str = "full", budget: float | None = None) -> list[dict[str, Any]]:
    """The fine-tuning loop (see the module docstring) with one of :data:`RECIPES`, within ``budget`` seconds
    (default: the args' minutes); returns the per-epoch history."""
    rng = random.Random(args.seed)
    if recipe in ("keep", "calibrate", "trees"):  # the network stays as it is
        return []
    anchor = {name: p.detach().clone() for name, p in net.named_parameters()}
    if recipe == "head":
        params = [p for name, p in net.named_parameters() if _is_head(name)]
        for name, p in net.named_parameters():
            p.requires_grad_(_is_head(name))
        lr = args.lr * 3  # a few thousand weights on frozen features: a larger step
    else:
        params, lr = list(net.parameters()), args.lr
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=args.weight_decay)
    steps = max(1, args.epochs * math.ceil(len(items) / args.batch_size))
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    buffer: dict[str, dict[str, Any]] = {}
    history: list[dict[str, Any]] = []
    t0 = time.monotonic()
    budget = args.minutes * 60.0 if budget is None else budget
    for epoch in range(args.epochs):
        net.train()
        order = list(range(len(items)))
        rng.shuffle(order)
        total = n = 0.0
        stopped = False
        for bi in range(0, len(order), args.batch_size):
            chunk = [items[i] for i in order[bi:bi + args.batch_size]]
            exs = [_augmented(it, rng, buffer) if args.augment and rng.random() < args.augment else it.record.example
                   for it in chunk]
            y = torch.tensor([it.record.success for it in chunk])
            ff = torch.tensor([it.record.first_frame for it in chunk], dtype=torch.int64)
            loss, _, _ = losses(net(**to_tensors(_batch(exs))), y, ff)
            loss = loss + args.anchor * _anchor_loss(net, anchor)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
            total += loss.detach().item() * len(chunk)
            n += len(chunk)
            if progress is not None:
                progress(f"epoch {epoch + 1}/{args.epochs}", bi + len(chunk), len(order))
            if budget and time.monotonic() - t0 > budget:
                stopped = True
                break
        history.append({"epoch": epoch + 1, "loss": total / max(1.0, n), "seconds": time.monotonic() - t0})
        log(f"epoch {epoch + 1}: loss {total / max(1.0, n):.4f} ({time.monotonic() - t0:.0f}s)")
        if stopped:
            log(f"time budget of {args.minutes:g} min reached")
            break
    for p in net.parameters():
        p.requires_grad_(True)
    net.eval()
    return history


def _fit_output(logits: np.ndarray, y: np.ndarray, recs: Sequence[Record], base: RewardModel | None = None,
                agent: RunTrees | None = None) -> tuple[float, float, float, np.ndarray]:
    """Platt calibration (a, b) fitted on the network's ``logits`` of ``recs`` for labels ``y`` (1.0 success),
    then the threshold and the probabilities p_success (:func:`_p_success`).

    With ``agent`` trees the threshold is 0.5, as for the shipped blend: the trees were fitted on these very runs,
    so their probabilities here are in-sample, and a threshold chosen on them fits the labels' noise (on agent B's
    training-pool runs, 30 draws of 100 labels: +10.1 points with it, +11.8 at 0.5)."""
    a, b = fit_platt(logits, _platt_targets(y))
    p = _p_success(expit(a * logits + b), recs, base, agent)
    return a, b, TREES_THRESHOLD if agent is not None else choose_threshold(p, y.astype(bool)), p


def _p_success(p_network: np.ndarray, recs: Sequence[Record], base: RewardModel | None,
               agent: RunTrees | None = None) -> np.ndarray:
    """p_success of ``recs`` from the network's calibrated probabilities: averaged with the ``base`` model's run
    trees where it has them, which a fine-tune keeps as they are (with their calibration), then with this
    fine-tune's ``agent`` trees where the recipe fits them (a base's own agent trees: carried over by ``keep``
    only)."""
    feats = np.stack([r.example.run_feat for r in recs])
    p_trees = None if base is None or base.trees is None else base.trees.p(feats)
    tcal = Calibration() if base is None else base.checkpoint.trees_calibration
    return np.asarray(blend(p_network, p_trees, tcal.a, tcal.b, None if agent is None else agent.p(feats)))


def _agent_trees(recs: Sequence[Record], seed: int) -> bytes | None:
    """Agent trees fitted on labelled runs' run features (None: they hold one verdict only)."""
    y = np.array([bool(r.success) for r in recs])
    if y.all() or not y.any():
        return None
    return fit_trees(np.stack([r.example.run_feat for r in recs]), y, seed, AGENT_PARAMS)


def choose_recipe(base_net: Network, items: list[Perceived], args: FinetuneArgs, log: Callable[[str], None],
                  budget: float, base: RewardModel | None = None) -> tuple[str, dict[str, float]]:
    """The recipe of :data:`RECIPES` with the best cross-validated accuracy on ``items`` (stratified folds; each
    fold's calibration and threshold fitted on the other folds), within ``budget`` seconds; a tie, or a recipe
    whose folds would not fit in the time left, keeps the simpler, and a recipe that trains the network must win by
    more than :data:`NETWORK_MARGIN`."""
    rng = random.Random(args.seed + 1)
    by_label: dict[bool, list[int]] = {True: [], False: []}
    for i, it in enumerate(items):
        by_label[bool(it.record.success)].append(i)
    fold_of = [0] * len(items)
    for idx in by_label.values():
        rng.shuffle(idx)
        for j, i in enumerate(idx):
            fold_of[i] = j % args.folds
    t0 = time.monotonic()
    scores: dict[str, float] = {}
    if base is not None:  # nothing is fitted: every label is out of sample for the base as it is
        logits, _, _ = predict(base_net, [it.record for it in items])
        cal = base.calibration
        pred = _p_success(expit(cal.a * logits + cal.b), [it.record for it in items], base,
                          base.agent_trees) >= base.threshold
        scores["keep"] = float((pred == np.array([bool(it.record.success) for it in items])).mean())
        log(f"recipe keep: accuracy of the base as it is {scores['keep']:.3f}")
    for recipe in RECIPES[1:]:
        right = n = 0
        for f in range(args.folds):
            train = [it for it, k in zip(items, fold_of) if k != f]
            test = [it for it, k in zip(items, fold_of) if k == f]
            if not test or len({it.record.success for it in train}) < 2:
                continue
            left = budget - (time.monotonic() - t0)
            if left <= 0:
                break
            net = copy.deepcopy(base_net)
            _train(net, train, args, lambda _m: None, None, recipe, budget=left / (args.folds - f))
            agent_bytes = _agent_trees([it.record for it in train], args.seed) if recipe == "trees" else None
            agent = None if agent_bytes is None else RunTrees(agent_bytes)
            train_logits, _, _ = predict(net, [it.record for it in train])
            a, b, thr, _ = _fit_output(train_logits, np.array([it.record.success for it in train], dtype=float),
                                       [it.record for it in train], base, agent)
            logits, _, _ = predict(net, [it.record for it in test])
            pred = _p_success(expit(a * logits + b), [it.record for it in test], base, agent) >= thr
            right += int((pred == np.array([bool(it.record.success) for it in test])).sum())
            n += len(test)
        else:
            scores[recipe] = right / max(1, n)
            log(f"recipe {recipe}: cross-validated accuracy {scores[recipe]:.3f}")
            continue
        log(f"recipe {recipe}: not tried, the time budget ran out")
        break
    best = pick_recipe(scores)
    log(f"recipe {best} chosen")
    return best, scores


def pick_recipe(scores: dict[str, float]) -> str:
    """The recipe to keep from cross-validated accuracies (see :func:`choose_recipe`): the best, the simpler on a
    tie, and one that trains the network only when it wins by more than :data:`NETWORK_MARGIN`."""
    if not scores:
        return "calibrate"

    def best_of(names: list[str]) -> str:
        return max(names, key=lambda r: (scores[r], -RECIPES.index(r)))

    best = best_of(list(scores))
    rest = [r for r in scores if r not in ("head", "full")]
    if best in ("head", "full") and rest and scores[best] <= scores[best_of(rest)] + NETWORK_MARGIN:
        return best_of(rest)
    return best


def _batch(exs: list[Any]) -> dict[str, np.ndarray]:
    from models.features import make_batch

    return make_batch(exs)


def _augmented(it: Perceived, rng: random.Random, buffer: dict[str, dict[str, Any]]) -> Any:
    """The run's example re-featurised from its perception with reading noise (perception read from the cache
    through a bounded buffer)."""
    src = it.record.row["source_path"]
    if src not in buffer:
        if len(buffer) >= _AUGMENT_BUFFER:
            buffer.pop(next(iter(buffer)))
        buffer[src] = read_percept(src)
    payload = dict(buffer[src])
    payload["percept"] = noisy_percept(payload["percept"], rng)
    return record_for(it.record.row, payload).example


def finetune(args: FinetuneArgs, runs: Sequence[LabelledRun], log: Callable[[str], None] = print,
             progress: ProgressFn | None = None, skipped: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """Fine-tune, export and report (see the module docstring); returns the report (also in ``OUT/report.json``).

    Args:
        runs: the labelled runs (:func:`gui_app.core.annotation.teaching.labelled_runs`).
        skipped: labels the caller already left out, (key, reason): carried into the report.

    Raises:
        FinetuneError: fewer than two usable labels of either verdict, or the base model does not load.
    """
    if args.recipe != "auto" and args.recipe not in RECIPES:  # before any run is perceived
        raise FinetuneError(f"unknown fine-tune recipe {args.recipe!r}; choose auto or one of {', '.join(RECIPES)}")
    t_start = time.monotonic()
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    out = Path(args.out)
    base_path = resolve_base(args.base)
    try:
        base_scoring, base_torch = load_base(base_path, args.threads)
    except ModelLoadError as exc:
        raise FinetuneError(f"base model: {exc}") from exc
    perceived, errors, t_perceive = perceive_runs(runs, base_torch, args.cache or out / ".perception", progress,
                                                   args.library_root or None)
    skipped_all = list(skipped) + [e for e in errors if not any(e[0] == p.run.ref for p in perceived)]
    notes = [e for e in errors if any(e[0] == p.run.ref for p in perceived)]
    n_ok = sum(p.run.success for p in perceived)
    n_fail = len(perceived) - n_ok
    need = 2 if args.holdout > 0 else 1
    if n_ok < need or n_fail < need:
        raise FinetuneError(f"a fine-tune needs at least {need} labelled successes and {need} failures that can be "
                            f"read; found {n_ok} and {n_fail} ({len(skipped_all)} labels left out)")
    train_idx, held_idx = heldout_split([p.run for p in perceived], args.holdout, args.seed)
    train_items = [perceived[i] for i in train_idx]
    held_items = [perceived[i] for i in held_idx]
    log(f"{len(train_items)} labelled runs to train on, {len(held_items)} held out for the report")

    net = copy.deepcopy(base_torch.backend.net)  # the torch backend's network: the base weights, in float32
    t_train = time.monotonic()
    budget = args.minutes * 60.0 if args.minutes else float("inf")
    recipe, cv = args.recipe, dict[str, float]()
    if recipe == "auto":  # two thirds of the time to choose, the rest (and what choosing left) to train
        recipe, cv = choose_recipe(net, train_items, args, log, budget * 2 / 3, base_torch)
    log(f"fine-tuning with the {recipe} recipe")
    history = _train(net, train_items, args, log, progress, recipe,
                     budget=max(1.0, budget - (time.monotonic() - t_train)))
    train_seconds = time.monotonic() - t_train

    recs = [it.record for it in train_items]
    logits, _, embs = predict(net, recs)
    y = np.array([r.success for r in recs], dtype=float)
    out.mkdir(parents=True, exist_ok=True)
    agent_bytes = _agent_trees(recs, args.seed) if recipe == "trees" else None
    if recipe == "keep" and base_torch.checkpoint.agent_trees is not None:  # a fine-tuned base's, carried over
        agent_bytes = Path(base_torch.checkpoint.agent_trees).read_bytes()
    agent_path = None if agent_bytes is None else out / AGENT_TREES_FILE
    if agent_path is not None and agent_bytes is not None:
        publish_file(agent_path, lambda tmp: tmp.write_bytes(agent_bytes))
    base = base_torch.checkpoint
    if recipe == "keep":  # the base's own calibration, threshold and OOD reference
        a, b, thr = base_torch.calibration.a, base_torch.calibration.b, base_torch.threshold
        p_train = _p_success(expit(a * logits + b), recs, base_torch, base_torch.agent_trees)
        ood_ref = base.ood
    else:
        a, b, thr, p_train = _fit_output(logits, y, recs, base_torch,
                                         None if agent_bytes is None else RunTrees(agent_bytes))
        # the ranges seen: the base's (what its weights learnt from), widened by the labelled runs'
        ood_ref = OODReference(**_ood_reference(ood_vectors(embs, recs), seed=args.seed),
                               summary_range=summary_ranges(recs).union(base.ood.summary_range))
    info = {"base": str(base_path), "base_name": base_scoring.name, "seed": args.seed, "n_train": len(train_items),
            "n_heldout": len(held_items), "train_seconds": train_seconds, "epochs_run": len(history),
            "recipe": recipe, "cross_validated": cv, "args": asdict(args)}
    replace(base, calibration=Calibration(a, b), threshold=thr, ood=ood_ref, versions=versions(), name=out.name,
            finetune=info, onnx_max_abs_diff=None, agent_trees=agent_path, state_dict=net.state_dict()
            ).save(out / RUN_FILE)
    from models.export_onnx import ExportError, export_run

    try:
        exported = export_run(out, out)
    except ExportError as exc:  # weights driven far off (a learning rate too high) no longer export faithfully
        raise FinetuneError(f"{out}: the fine-tuned network could not be exported: {exc}") from exc

    report: dict[str, Any] = {
        "out": str(out), "base_model": str(base_path), "seed": args.seed, "labels": len(runs),
        "n_train": len(train_items), "n_heldout": len(held_items),
        "train": [p.run.ref for p in train_items], "heldout": [p.run.ref for p in held_items],
        "skipped": [{"ref": k, "reason": r} for k, r in skipped_all], "notes": [f"{k}: {r}" for k, r in notes],
        "history": history, "recipe": recipe, "cross_validated": cv, "calibration": {"a": a, "b": b},
        "threshold": thr,
        "perceive_seconds": t_perceive, "train_seconds": train_seconds, "onnx_max_abs_diff":
            exported["onnx_max_abs_diff"], "train_accuracy": float(((p_train >= thr) == y.astype(bool)).mean()),
    }
    if held_items:
        new = RewardModel.load(out, threads=args.threads)
        before = score_examples(base_scoring, held_items)
        after = score_examples(new, held_items)
        report["base"] = summarise(before, base_scoring.threshold)
        report["new"] = summarise(after, new.threshold)
        report["runs"] = [{"ref": b_["ref"], "label": "success" if b_["success"] else "failure",
                           "p_base": b_["p"], "p_new": a_["p"], "base_right": b_["predicted"] == b_["success"],
                           "new_right": a_["predicted"] == a_["success"]} for b_, a_ in zip(before, after)]
    worse, why = is_worse(report)
    report["worse"], report["verdict"] = worse, why
    report["seconds"] = time.monotonic() - t_start
    write_report(out / REPORT_NAME, report)
    return report


def write_report(path: str | Path, report: dict[str, Any]) -> None:
    """Store a report as JSON (numpy numbers as plain ones)."""
    Path(path).write_text(json.dumps(report, indent=1, default=_json_default))


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    return str(o)


def format_report(report: dict[str, Any]) -> str:
    """The before-and-after table as text (the terminal, the README)."""
    lines = [f"fine-tuned on {report['n_train']} labelled runs in {report['train_seconds']:.0f}s "
             f"(base {report['base_model']}) -> {report['out']}"]
    if isinstance(report.get("base"), dict) and isinstance(report.get("new"), dict):
        lines += [f"held out: {report['n_heldout']} labelled runs", "",
                  f"{'metric':32s} {'base':>8s} {'fine-tuned':>11s}"]
        for key, label, fmt in REPORT_ROWS:
            vals = []
            for side in ("base", "new"):
                v = report[side].get(key)
                vals.append("n/a" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v))
            lines.append(f"{label:32s} {vals[0]:>8s} {vals[1]:>11s}")
    else:
        lines.append("no held-out labels: no before-and-after report")
    lines.append("")
    lines.append(("worse than the base: " if report["worse"] else "not worse than the base: ") + report["verdict"])
    if report["skipped"]:
        lines.append(f"{len(report['skipped'])} labels left out; first: {report['skipped'][0]['ref']}: "
                     f"{report['skipped'][0]['reason']}")
    return "\n".join(lines)
