"""Training the judge: records from the perception cache, augmentation, early stopping, calibration, OOD stats.

``train(args)`` reads the dataset's manifest, perceives every recorded episode once (cached), trains on the
``train`` split (optionally restricted to some agents or recording-style families, for the cross table), keeps
the epoch with the best validation loss, then on validation fits the calibration of p_success (Platt scaling of
the logit), the decision threshold, and the out-of-distribution reference (Mahalanobis distance of the CLS
embedding and run summary, scaled by its 99th percentile on validation). Beside the network it fits the run trees
(:mod:`models.trees`) on the training runs' run features, calibrates the mean of the two probabilities on
validation, and decides at 0.5. The run folder gets ``checkpoint.pt`` (:class:`models.checkpoint.Checkpoint`, with
the pointer detector copied beside it so the folder can move), ``trees.onnx`` and ``train_log.json``;
``rollscope export-onnx`` turns it into shippable weights.
"""

from __future__ import annotations

import copy
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from gui_app.core.atomic import publish_file
from models.checkpoint import (RUN_FILE, TREES_FILE, Calibration, Checkpoint, OODReference, SummaryRange,
                               perception_from_dict)
from models.config import ModelConfig
from models.data import (Record, cache_key, load_percept, load_records, perceive_all, read_manifest, record_for,
                         video_only_row, with_sources)
from models.features import INPUT_NAMES, make_batch
from models.network import Network, build, losses
from models.perception import PerceptionConfig, RunPercept
from models.trees import TREES_THRESHOLD, RunTrees, blend, fit_trees, mean_logit, sigmoid
from models.versions import mahalanobis, versions


@dataclass
class TrainArgs:
    """Options of ``rollscope train`` (defaults are the shipped recipe)."""

    data: str
    out: str
    pointer: str = ""  # pointer detector ONNX (default: the shipped one)
    cache: str = ""  # perception cache folder (default: DATA/.perception)
    epochs: int = 14
    batch_size: int = 32
    lr: float = 2e-3
    weight_decay: float = 0.05
    patience: int = 5
    seed: int = 0
    threads: int = 1  # torch threads: on a busy 2-core machine two made each step ten times slower (measured)
    workers: int = 2
    time_budget: float = 0.0  # seconds; 0 = no limit
    agents: tuple[str, ...] = ()  # train only on these agents (cross table); () = all
    style_families: tuple[str, ...] = ()  # train only on these recording-style families; () = all
    augment: float = 0.5  # share of training examples re-featurised with perception noise each epoch
    trees: bool = True  # fit the run trees beside the network (models.trees)
    net: ModelConfig = field(default_factory=ModelConfig)


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def noisy_percept(p: RunPercept, rng: random.Random) -> RunPercept:
    """A copy with reading noise: lines dropped (missed by the reader) and characters garbled."""
    frames = []
    for fp in p.frames:
        lines = []
        for ln in fp.lines:
            if rng.random() < 0.1:
                continue
            t = ln.text
            if t and rng.random() < 0.15:
                i = rng.randrange(len(t))
                t = t[:i] + rng.choice("iIl1oO0rnmce.,") + t[i + 1:]
            lines.append(replace(ln, text=t))
        frames.append(replace(fp, lines=lines))
    return replace(p, frames=frames)


def to_tensors(batch: dict[str, np.ndarray]) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(np.ascontiguousarray(batch[k])) for k in INPUT_NAMES}


@torch.no_grad()
def predict(net: Network, recs: list[Record], batch_size: int = 64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(success logits (n,), first-deviation keyframe argmax (n,), embeddings (n, d))."""
    net.eval()
    logits, firsts, embs = [], [], []
    for i in range(0, len(recs), batch_size):
        chunk = recs[i:i + batch_size]
        s, f, e = net(**to_tensors(make_batch([r.example for r in chunk])))
        logits.append(s.numpy())
        firsts.append(f.argmax(-1).numpy())
        embs.append(e.numpy())
    if not recs:
        return np.zeros(0), np.zeros(0, np.int64), np.zeros((0, net.cfg.d_model))
    return np.concatenate(logits), np.concatenate(firsts), np.concatenate(embs)


def fit_platt(logits: np.ndarray, y: np.ndarray, steps: int = 500) -> tuple[float, float]:
    """(a, b) with p = sigmoid(a * logit + b) minimising validation log loss."""
    x = torch.tensor(logits, dtype=torch.float64)
    t = torch.tensor(y, dtype=torch.float64)
    a = torch.ones((), dtype=torch.float64, requires_grad=True)
    b = torch.zeros((), dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([a, b], lr=0.5, max_iter=steps)

    def closure() -> torch.Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(a * x + b, t)
        loss.backward()
        return loss

    opt.step(closure)
    return float(a.detach()), float(b.detach())


def choose_threshold(p: np.ndarray, y: np.ndarray) -> float:
    """The threshold with the best validation accuracy (ties: the one nearest 0.5)."""
    if len(p) == 0:
        return 0.5
    cands = np.unique(np.concatenate([p, [0.5]]))
    accs = [((p >= c) == y).mean() for c in cands]
    best = max(accs)
    return float(min((c for c, a in zip(cands, accs) if a >= best - 1e-12), key=lambda c: abs(c - 0.5)))


def ood_reference(train_vecs: np.ndarray, val_vecs: np.ndarray) -> dict[str, Any]:
    """Mean, shrunk inverse covariance and the 99th percentile of validation distances (the unit of ``ood``)."""
    mu = train_vecs.mean(0)
    sd = train_vecs.std(0) + 1e-6
    z = (train_vecs - mu) / sd
    cov = np.cov(z, rowvar=False)
    shrink = 0.1
    cov = (1 - shrink) * cov + shrink * np.eye(cov.shape[0])
    prec = np.linalg.inv(cov)
    d_val = mahalanobis(val_vecs, mu, sd, prec)
    scale = float(np.percentile(d_val, 99)) if len(d_val) else 1.0
    return {"mean": mu.tolist(), "std": sd.tolist(), "precision": prec.tolist(), "scale": max(scale, 1e-6)}


def summary_ranges(recs: list[Record]) -> SummaryRange:
    """The smallest and largest run summary seen in training, per dimension (:func:`models.features.summary`):
    a run whose screens or length lie outside them is outside what the model has seen, whatever its embedding
    says (features built to ignore appearance cannot see that the screens are another kind)."""
    summ = np.stack([np.asarray(r.example.summary) for r in recs])
    aspect = np.exp(summ[:, 2] - summ[:, 1])  # width / height: a landscape desktop is not a portrait web page
    return SummaryRange(tuple(summ.min(0).tolist()), tuple(summ.max(0).tolist()),
                        (float(aspect.min()), float(aspect.max())))


def ood_vectors(embs: np.ndarray, recs: list[Record]) -> np.ndarray:
    """What the OOD measure compares: the CLS embedding and the run summary, side by side."""
    summ = np.stack([np.asarray(r.example.summary) for r in recs]) if recs else np.zeros((0, 11))
    return np.concatenate([embs, summ], axis=1)


def metrics(p: np.ndarray, y: np.ndarray, thr: float) -> dict[str, float]:
    pred = p >= thr
    tp, fp = int((pred & y).sum()), int((pred & ~y).sum())
    fn = int((~pred & y).sum())
    acc = float((pred == y).mean()) if len(y) else float("nan")
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"n": int(len(y)), "accuracy": acc, "precision": prec, "recall": rec, "f1": f1}


def _filter(recs: list[Record], args: TrainArgs) -> list[Record]:
    out = recs
    if args.agents:
        out = [r for r in out if str(r.row.get("agent") or "") in args.agents]
    if args.style_families:
        out = [r for r in out if str(r.row.get("style_family") or "") in args.style_families]
    return out


def prepare(args: TrainArgs, log: Callable[[str], None] = print,
            progress: Callable[[str, int, int], None] | None = None) -> tuple[list[Record], list[Record], dict]:
    """Perceive (cached) and load the train and validation records of the dataset."""
    from models.runtime import default_pointer_path

    pointer = args.pointer or str(default_pointer_path())
    pcfg = PerceptionConfig()
    cache = args.cache or str(Path(args.data) / ".perception")
    key = cache_key(pcfg, pointer)
    df = with_sources(read_manifest(args.data))
    df = [r for r in df if r["split"] in ("train", "val")]
    errs = perceive_all([r["source_path"] for r in df], cache, key, pointer, pcfg, workers=args.workers,
                        progress=(lambda d, t: progress("perceive", d, t)) if progress else None)
    for ep, e in list(errs.items())[:5]:
        log(f"perception failed: {ep}: {e}")
    recs, skipped = load_records(df, cache, key, progress=(lambda d, t: progress("load", d, t)) if progress else None)
    # validation follows the same filter: it chooses the epoch, the calibration and the OOD reference, so rows of
    # an agent or a style the run must not see stay out of it too
    train = _filter([r for r in recs if r.row["split"] == "train"], args)
    val = _filter([r for r in recs if r.row["split"] == "val"], args)
    info = {"pointer": pointer, "cache": cache, "key": key, "perception_errors": len(errs), "skipped": len(skipped),
            "perception": asdict(pcfg)}
    return train, val, info


def train(args: TrainArgs, log: Callable[[str], None] = print,
          progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Train, calibrate, save ``checkpoint.pt``; returns the training log.

    Raises:
        ValueError: no examples after filtering, an ensemble config (members > 1: join runs with :func:`join`), or a
            network whose keyframe table is not the recipe's (the perception cache holds ``ModelConfig.max_frames``
            keyframes a run, as the runtime reads them).
    """
    if args.net.max_frames != ModelConfig.max_frames:
        raise ValueError(f"max_frames {args.net.max_frames}: training perceives at most {ModelConfig.max_frames} "
                         "keyframes a run (the recipe's), so the network's table must hold as many")
    if args.net.members != 1:
        raise ValueError(f"members {args.net.members}: train each network apart (--seed) and join them with "
                         "--ensemble")
    seed_everything(args.seed)
    torch.set_num_threads(args.threads)
    t_start = time.time()
    train_recs, val_recs, info = prepare(args, log, progress)
    if not train_recs or not val_recs:
        raise ValueError(f"{args.data}: no training or validation examples after filtering")
    log(f"{len(train_recs)} training and {len(val_recs)} validation examples")
    cfg = args.net
    net = build(cfg)
    opt = torch.optim.AdamW(net.parameters(), lr=args.lr, weight_decay=args.weight_decay)
    steps_per_epoch = math.ceil(len(train_recs) / args.batch_size)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.epochs * steps_per_epoch,
                                                pct_start=0.1)
    rng = random.Random(args.seed)
    best: dict[str, Any] = {"val_loss": float("inf")}
    history = []
    payload_cache: dict[str, dict[str, Any]] = {}
    for epoch in range(args.epochs):
        net.train()
        order = list(range(len(train_recs)))
        rng.shuffle(order)
        tot = n = 0.0
        for bi in range(0, len(order), args.batch_size):
            chunk = [train_recs[i] for i in order[bi:bi + args.batch_size]]
            exs = []
            for r in chunk:
                if args.augment and rng.random() < args.augment:
                    exs.append(_augmented(r, rng, info, payload_cache))
                else:
                    exs.append(r.example)
            batch = to_tensors(make_batch(exs))
            y = torch.tensor([r.success for r in chunk])
            ff = torch.tensor([r.first_frame for r in chunk], dtype=torch.int64)
            loss, _, _ = losses(net(**batch), y, ff)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            sched.step()
            tot += loss.item() * len(chunk)
            n += len(chunk)
            if progress:
                progress(f"epoch {epoch + 1}", bi + len(chunk), len(order))
        vl, va = _val_loss(net, val_recs)
        history.append({"epoch": epoch + 1, "train_loss": tot / max(1, n), "val_loss": vl, "val_acc": va,
                        "seconds": time.time() - t_start})
        log(f"epoch {epoch + 1}: train {tot / max(1, n):.4f} val {vl:.4f} acc {va:.3f} ({time.time() - t_start:.0f}s)")
        if vl < best["val_loss"]:
            best = {"val_loss": vl, "epoch": epoch + 1, "state": copy.deepcopy(net.state_dict())}
        elif epoch + 1 - best["epoch"] >= args.patience:
            break
        if args.time_budget and time.time() - t_start > args.time_budget:
            log("time budget reached")
            break
    net.load_state_dict(best["state"])
    return _finish(net, args, train_recs, val_recs, info, t_start, log,
                   {"history": history, "best_epoch": best["epoch"]})


def _finish(net: Network, args: TrainArgs, train_recs: list[Record], val_recs: list[Record], info: dict[str, Any],
            t_start: float, log: Callable[[str], None], extra: dict[str, Any]) -> dict[str, Any]:
    """Calibrate ``net`` on validation, fit the run trees and the OOD reference, save the checkpoint and the
    training log (with ``extra``) in ``args.out``; returns the log."""
    logits, _, embs = predict(net, val_recs)
    y_val = np.array([r.success for r in val_recs])
    a, b = fit_platt(logits, y_val)
    p_net = sigmoid(a * logits + b)
    out = Path(args.out)
    trees, tree_info = None, dict[str, Any]()
    if args.trees:
        trees, tcal, tree_info = _fit_trees(net, Calibration(a, b), train_recs, val_recs, info, out, args.seed, log)
        p, thr = blend(p_net, RunTrees(trees).p(_run_feats(val_recs)), tcal.a, tcal.b), TREES_THRESHOLD
    else:
        tcal, p, thr = Calibration(), p_net, choose_threshold(p_net, y_val)
    _, _, tr_embs = predict(net, train_recs)
    ood = OODReference(**ood_reference(ood_vectors(tr_embs, train_recs), ood_vectors(embs, val_recs)),
                       summary_range=summary_ranges(train_recs))
    cfg = net.cfg
    Checkpoint(net=cfg, perception=perception_from_dict(info["perception"]), calibration=Calibration(a, b),
               threshold=thr, ood=ood, pointer=Path(info["pointer"]), versions=versions(), name=out.name,
               trees=trees, trees_calibration=tcal, state_dict=net.state_dict()).save(out / RUN_FILE)
    report = {"args": {k: v for k, v in asdict(args).items() if k != "net"}, "net": cfg.to_dict(), **extra,
              "threshold": thr, "calibration": {"a": a, "b": b},
              "val": metrics(p, y_val, thr), "n_train": len(train_recs), "n_val": len(val_recs),
              "seconds": time.time() - t_start, **{k: v for k, v in info.items() if k != "perception"}, **tree_info}
    (out / "train_log.json").write_text(json.dumps(report, indent=1, default=str))
    return report


def join(args: TrainArgs, runs: Sequence[str | Path], log: Callable[[str], None] = print,
         progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Join networks trained apart on ``args.data`` (other seeds, one network shape) into one judge
    (``rollscope train --ensemble``, :class:`models.network.Ensemble`): the mean of their logits, calibrated on
    validation, with the run trees and the OOD reference fitted as :func:`train` fits them. Their own calibrations
    and trees are not used.

    Raises:
        ModelLoadError: a run without a checkpoint.
        ValueError: fewer than two runs, one named twice, an ensemble among them, or runs of another network shape
            or perception.
    """
    t_start = time.time()
    if len(runs) < 2:
        raise ValueError("--ensemble: name at least two training runs")
    named = [Path(r).resolve() for r in runs]
    twice = sorted({str(r) for r, p in zip(runs, named) if named.count(p) > 1})
    if twice:
        raise ValueError(f"--ensemble: {', '.join(twice)} named twice (one network would count double)")
    cks = [Checkpoint.load(Path(r) / RUN_FILE, state=True) for r in runs]
    first = cks[0]
    for run, ck in zip(runs, cks):
        if ck.net.members != 1:
            raise ValueError(f"{run}: already an ensemble of {ck.net.members} networks; join single networks")
        if ck.net != first.net or ck.perception != first.perception:
            raise ValueError(f"{run}: network or perception settings differ from {runs[0]}'s")
    cfg = replace(first.net, members=len(cks))
    net = build(cfg)
    net.load_state_dict({f"nets.{k}.{name}": v for k, ck in enumerate(cks)
                         for name, v in (ck.state_dict or {}).items()})
    net.eval()
    args = replace(args, net=cfg, pointer=args.pointer or str(first.pointer))
    train_recs, val_recs, info = prepare(args, log, progress)
    if not train_recs or not val_recs:
        raise ValueError(f"{args.data}: no training or validation examples after filtering")
    log(f"joined {len(cks)} networks: {', '.join(map(str, runs))}")
    return _finish(net, args, train_recs, val_recs, info, t_start, log, {"members": [str(r) for r in runs]})


def _run_feats(recs: list[Record]) -> np.ndarray:
    return np.stack([r.example.run_feat for r in recs]).astype(np.float32)


def _both_modes(recs: list[Record], info: dict[str, Any]) -> list[Record]:
    """Each record twice: as logged, and as a plain recording (its log's actions and claims left out)."""
    out = []
    payloads: dict[str, dict[str, Any]] = {}
    for r in recs:
        src = r.row.get("source_path") or r.row["path"]
        if src not in payloads:
            payloads[src] = load_percept(info["cache"], info["key"], src)
        out += [record_for(r.row, payloads[src], use_log=use_log) for use_log in (True, False)]
    return out


def _fit_trees(net: Network, cal: Calibration, train_recs: list[Record], val_recs: list[Record],
               info: dict[str, Any], out: Path, seed: int, log: Callable[[str], None]
               ) -> tuple[Path, Calibration, dict[str, Any]]:
    """Fit the run trees (:mod:`models.trees`) on the training runs, each as logged and as a plain recording, write
    them to ``out/trees.onnx``, and fit the calibration of the mean p_success on the validation runs in both modes
    too. Returns the trees' path, the mean's calibration, and the validation figures (both modes) with the trees and
    with the network alone."""
    rows = _both_modes(train_recs, info)
    t0 = time.time()
    onnx_bytes = fit_trees(_run_feats(rows), np.array([r.success for r in rows]), seed)
    path = out / TREES_FILE
    out.mkdir(parents=True, exist_ok=True)
    publish_file(path, lambda tmp: tmp.write_bytes(onnx_bytes))
    log(f"run trees: {len(rows)} rows, {len(onnx_bytes) / 1e3:.0f} kB, {time.time() - t0:.1f} s")
    val2 = _both_modes(val_recs, info)
    y2 = np.array([r.success for r in val2])
    logits, _, _ = predict(net, val2)
    p_net = sigmoid(cal.a * logits + cal.b)
    p_trees = RunTrees(path).p(_run_feats(val2))
    tcal = Calibration(*fit_platt(mean_logit(p_net, p_trees), y2))
    p = blend(p_net, p_trees, tcal.a, tcal.b)
    return path, tcal, {"val_both_modes": metrics(p, y2, TREES_THRESHOLD),
                        "val_both_modes_network_alone": metrics(p_net, y2, choose_threshold(p_net, y2))}


def add_trees(args: TrainArgs, log: Callable[[str], None] = print,
              progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Fit the run trees of a run trained without them (``rollscope train --trees-only``): its network unchanged,
    the trees fitted on its dataset's training split, the mean's calibration on validation, the threshold 0.5.

    Raises:
        ModelLoadError: no checkpoint in ``args.out``.
        ValueError: no training or validation examples.
    """
    out = Path(args.out)
    ck = Checkpoint.load(out / RUN_FILE)
    train_recs, val_recs, info = prepare(replace(args, pointer=args.pointer or str(ck.pointer)), log, progress)
    if not train_recs or not val_recs:
        raise ValueError(f"{args.data}: no training or validation examples after filtering")
    net = build(ck.net)
    net.load_state_dict(ck.state_dict or {})
    trees, tcal, extra = _fit_trees(net, ck.calibration, train_recs, val_recs, info, out, args.seed, log)
    replace(ck, threshold=TREES_THRESHOLD, trees=trees, trees_calibration=tcal).save(out / RUN_FILE)
    report = {"threshold": TREES_THRESHOLD, "n_train": len(train_recs), "n_val": len(val_recs), **extra}
    log_path = out / "train_log.json"
    old = json.loads(log_path.read_text()) if log_path.is_file() else {}
    log_path.write_text(json.dumps({**old, **report}, indent=1, default=str))
    return report


def _augmented(r: Record, rng: random.Random, info: dict, cache: dict[str, dict[str, Any]]) -> Any:
    src = r.row.get("source_path") or r.row["path"]
    if src not in cache:
        if len(cache) > 4096:
            cache.clear()
        cache[src] = load_percept(info["cache"], info["key"], src)
    payload = dict(cache[src])
    payload["percept"] = noisy_percept(payload["percept"], rng)
    return record_for(r.row, payload, use_log=not video_only_row(r.row)).example  # as load_records' "mix"


@torch.no_grad()
def _val_loss(net: Network, recs: list[Record]) -> tuple[float, float]:
    net.eval()
    tot, correct = 0.0, 0
    for i in range(0, len(recs), 64):
        chunk = recs[i:i + 64]
        out = net(**to_tensors(make_batch([r.example for r in chunk])))
        y = torch.tensor([r.success for r in chunk])
        ff = torch.tensor([r.first_frame for r in chunk], dtype=torch.int64)
        loss, _, _ = losses(out, y, ff)
        tot += float(loss) * len(chunk)
        correct += int(((out[0] >= 0) == y).sum())
    return tot / max(1, len(recs)), correct / max(1, len(recs))
