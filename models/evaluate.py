"""Evaluation: the metrics table of REWARD_MODEL.md from one command, with the tables that say what transfers.

Every example of the chosen splits is scored through the runtime's own path (keyframes, perception, features,
network, calibration), one run at a time, so accuracy and timings come from the same calls. Perceptions can be
taken from the training cache (``cache``) to make a large evaluation fast; timings are then those of the
features and the network only, and the report says so. A run the cache does not hold, or holds in a file that is
not a cache file of this version (an earlier version's ``.pkl`` is never opened), is perceived again
(``cache_misses``).

Reported, success as the positive class: accuracy, precision, recall, F1 and the majority baseline;
first-error localisation on failures whose step is known (exact, within one, tIoU with steps as 1 s intervals);
calibration (expected calibration error over 10 bins and the reliability curve); the share of runs flagged
``unknown`` (out of distribution); tokens kept; forward and end-to-end milliseconds; model sizes; peak memory.
Groups: each split, the **cross table** (agent x recording-style family), **per source** (MiniWoB, desktop,
imported formats), per negative kind and per task.
"""

from __future__ import annotations

import random
import resource
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core.trajectory.formats import native
from gui_app.core.errors import RollscopeError, TrajectoryFormatError
from models.data import load_percept, read_manifest, record_for, with_sources
from models.features import first_error_frame
from models.runtime import WEIGHTS_DIR, Prepared, RewardModel, deviation_step

NEIGHBOUR_TIOU = 0.33
ECE_BINS = 10


def tiou(pred: int, true: int) -> float:
    """Temporal IoU credit of a predicted first-error step against the true one (steps are 1 s intervals)."""
    d = abs(pred - true)
    return 1.0 if d == 0 else (NEIGHBOUR_TIOU if d == 1 else 0.0)


def classification(p: np.ndarray, y: np.ndarray, thr: float) -> dict[str, float]:
    pred = p >= thr
    pos = y.astype(bool)
    tp, fp, fn = int((pred & pos).sum()), int((pred & ~pos).sum()), int((~pred & pos).sum())
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    acc = float((pred == pos).mean()) if len(y) else float("nan")
    maj = float(max(pos.mean(), 1 - pos.mean())) if len(y) else float("nan")
    n_neg = int((~pos).sum())
    fail_rec = int((~pred & ~pos).sum()) / n_neg if n_neg else float("nan")
    return {"n": int(len(y)), "accuracy": acc, "majority_accuracy": maj, "precision": prec, "recall": rec,
            "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0, "failure_recall": fail_rec,
            "balanced_accuracy": (rec + fail_rec) / 2 if tp + fn and n_neg else float("nan"), "auroc": auroc(p, pos)}


def auroc(p: np.ndarray, pos: np.ndarray) -> float:
    """Area under the ROC curve (ties count half): how well p_success ranks successes above failures,
    whatever the threshold; 0.5 is chance."""
    n_pos, n_neg = int(pos.sum()), int((~pos).sum())
    if not n_pos or not n_neg:
        return float("nan")
    order = np.argsort(p, kind="mergesort")
    ranks = np.empty(len(p))
    sp = p[order]
    i = 0
    while i < len(sp):  # average ranks over ties
        j = i
        while j + 1 < len(sp) and sp[j + 1] == sp[i]:
            j += 1
        ranks[order[i:j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return float((ranks[pos].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def _bins(p: np.ndarray, bins: int) -> np.ndarray:
    """Each probability's bin of ``bins`` equal bins over [0, 1]."""
    return np.clip(np.digitize(p, np.linspace(0, 1, bins + 1)[1:-1]), 0, bins - 1)


def _ece(p: np.ndarray, y: np.ndarray, idx: np.ndarray, bins: int) -> float:
    """Per bin, |sum of p - successes|, summed over bins and divided by the count: the bins' gaps weighted by size."""
    gap = np.abs(np.bincount(idx, p, bins) - np.bincount(idx, y.astype(np.float64), bins))
    return float(gap.sum() / max(1, len(p)))


def ece_floor(p: np.ndarray, bins: int = ECE_BINS, draws: int = 400) -> float:
    """The ECE a perfectly calibrated judge would show on these runs: the median over outcomes drawn with
    probability ``p`` (seeded). On a few hundred runs it is far from 0 (about 0.066 on 212), so an ECE is read
    against it: below or near it, the miscalibration is not measurable on this set."""
    p = np.asarray(p, np.float64)
    if not len(p):
        return float("nan")
    idx = _bins(p, bins)
    rng = np.random.default_rng(0)
    return float(np.median([_ece(p, rng.random(len(p)) < p, idx, bins) for _ in range(draws)]))


def calibration(p: np.ndarray, y: np.ndarray, bins: int = ECE_BINS) -> dict[str, Any]:
    """Expected calibration error, the ECE a calibrated judge would show on as many runs (``ece_floor``), and the
    reliability curve (per bin: mean p, observed success rate, count)."""
    if not len(p):
        return {"ece": float("nan"), "ece_floor": float("nan"), "reliability": []}
    edges = np.linspace(0, 1, bins + 1)
    idx = _bins(p, bins)
    curve = []
    for b in range(bins):
        sel = idx == b
        if sel.any():
            curve.append({"bin": [float(edges[b]), float(edges[b + 1])], "mean_p": float(p[sel].mean()),
                          "observed": float(y[sel].mean()), "n": int(sel.sum())})
    return {"ece": _ece(p, y, idx, bins), "ece_floor": ece_floor(p, bins), "reliability": curve}


def localisation(preds: list[int], trues: list[int]) -> dict[str, float]:
    if not trues:
        return {"n_localised": 0, "first_error_exact": float("nan"), "first_error_within_one": float("nan"),
                "first_error_tiou": float("nan")}
    d = np.abs(np.array(preds) - np.array(trues))
    return {"n_localised": len(trues), "first_error_exact": float((d == 0).mean()),
            "first_error_within_one": float((d <= 1).mean()),
            "first_error_tiou": float(np.mean([tiou(a, b) for a, b in zip(preds, trues)]))}


def group_metrics(rows: list[dict[str, Any]], thr: float) -> dict[str, Any]:
    """Every metric over one group of scored rows."""
    p = np.array([r["p"] for r in rows], dtype=float)
    y = np.array([r["success"] for r in rows], dtype=float)
    m: dict[str, Any] = classification(p, y, thr)
    m.update(calibration(p, y))
    loc = [(r["pred_step"], r["true_step"]) for r in rows if r["true_step"] is not None]
    m.update(localisation([a for a, _ in loc], [b for _, b in loc]))
    m["unknown_share"] = float(np.mean([r["unknown"] for r in rows])) if rows else float("nan")
    m["ood_median"] = float(np.median([r["ood"] for r in rows])) if rows else float("nan")
    kept, total = sum(r["kept"] for r in rows), sum(r["total"] for r in rows)
    m["tokens_kept_ratio"] = kept / total if total else float("nan")
    for k in ("forward", "e2e"):
        v = np.array([r[k] for r in rows]) * 1000
        m[f"{k}_ms_mean"] = float(v.mean()) if len(v) else float("nan")
        m[f"{k}_ms_median"] = float(np.median(v)) if len(v) else float("nan")
    return m


def _by(rows: list[dict[str, Any]], key: Callable[[dict[str, Any]], str], thr: float) -> dict[str, dict[str, Any]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[key(r)].append(r)
    return {k: {kk: v for kk, v in group_metrics(g, thr).items() if kk != "reliability"}
            for k, g in sorted(groups.items())}


def source_of_row(row: dict[str, Any]) -> str:
    """The source a row comes from: ``miniwob``, ``desktop`` or the imported format's name."""
    src = str(row.get("source") or row.get("app") or "")
    return src or ("miniwob" if str(row.get("task") or "") else "other")


DEFAULT_SPLITS = ("test", "heldout_task")


def evaluate(ds: str | Path, model_dir: str | Path | None = None, splits: Iterable[str] | None = None,
             limit: int | None = None, cache: str | Path | None = None,
             progress: Callable[[int, int], None] | None = None, use_log: bool = True) -> dict[str, Any]:
    """Score every example of ``splits`` and report (see the module docstring); ``use_log`` False judges every
    run as a plain recording (the video-only mode).

    ``splits`` None reports :data:`DEFAULT_SPLITS`, whichever the dataset has; a split named that the dataset does
    not have raises :class:`TrajectoryFormatError` naming the manifest and the splits it holds (it would otherwise
    be an empty table)."""
    df = read_manifest(ds)
    if splits is None:
        splits = DEFAULT_SPLITS
    else:
        splits = tuple(splits)
        have = sorted({str(r["split"]) for r in df})
        missing = [s for s in splits if s not in have]
        if missing:
            named = ", ".join(map(repr, missing))
            raise TrajectoryFormatError(str(Path(ds) / "manifest.parquet"), "split",
                                        f"no {named} split (it has {', '.join(have) or 'none'})")
    model = RewardModel.load(model_dir)
    df = [r for r in df if r["split"] in splits]
    if limit is not None:
        parts = [[r for r in df if r["split"] == s] for s in splits]
        df = [r for p in parts for r in (random.Random(0).sample(p, limit) if len(p) > limit else p)]
    key = None
    if cache is not None:
        from models.data import cache_key

        df = with_sources(df)
        key = cache_key(model.perceiver.cfg, model.perceiver.pointer.path)
    rows: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    todo = df
    warm = False
    misses = 0
    for i, row in enumerate(todo):
        try:
            traj = native.load(row["path"])
            if not warm:  # the first call pays for allocations; keep it out of the timings
                model.score(traj)
                warm = True
            t0 = time.perf_counter()
            ex = None
            if key is not None:
                try:
                    ex = record_for(row, load_percept(cache or "", key, row["source_path"]), use_log=use_log).example
                except (OSError, ValueError):  # not cached, or not a cache file of ours
                    misses += 1
            if ex is None:
                ex = model.featurize(traj, use_log=use_log)
            res = model.score_prepared([Prepared(ex, traj.n_steps, row["instruction"] or "")])[0]
            e2e = time.perf_counter() - t0
        except (RollscopeError, OSError, ValueError) as exc:
            errors.append({"id": str(row["id"]), "path": str(row["path"]), "error": str(exc)})
            continue
        success = bool(row["success"])
        fe = row.get("first_error_step")
        true_step = None if success or fe is None or fe >= traj.n_steps else int(fe)
        steps = res.keyframe_steps
        pred_step = deviation_step(ex, res)
        if true_step is not None:  # credit is per keyframe: the true step's keyframe
            true_step = steps[first_error_frame(steps, true_step)] if steps else true_step
        rows.append({"split": row["split"], "p": res.p_success, "success": success, "pred_step": pred_step,
                     "true_step": true_step, "kept": res.tokens_kept, "total": res.tokens_total,
                     "forward": res.timings.get("forward", 0.0), "e2e": e2e, "ood": res.ood or 0.0,
                     "unknown": res.unknown, "kind": row.get("negative_kind") or "none", "task": row.get("task") or "?",
                     "agent": row.get("agent") or "?", "style": row.get("style_family") or "?",
                     "source": source_of_row(row)})
        if progress is not None:
            progress(i + 1, len(todo))
    return _report(model, model_dir, rows, splits, errors, "kind",
                   {"perception": "cached" if key is not None else "runtime", "cache_misses": misses,
                    "evidence": "log" if use_log else "video"})


def _report(model: RewardModel, model_dir: str | Path | None, rows: list[dict[str, Any]], splits: Iterable[str],
            errors: list[dict[str, str]], kind_key: str, extra: dict[str, Any]) -> dict[str, Any]:
    """The report's tables per split (``kind_key`` names the row field of the ``kind`` table), sizes and memory."""
    thr = model.threshold
    report: dict[str, Any] = {"model": model.name, "threshold": thr, "splits": {}, "errors": errors, **extra}
    for split in splits:
        sub = [r for r in rows if r["split"] == split]
        report["splits"][split] = {
            "all": group_metrics(sub, thr),
            "cross": _by(sub, lambda r: f"agent {r['agent']} / style {r['style']}", thr),
            "source": _by(sub, lambda r: r["source"], thr),
            "kind": _by(sub, lambda r: r[kind_key], thr),
            "task": _by(sub, lambda r: r["task"], thr),
        }
    harm = {split: harm_metrics([r for r in rows if r["split"] == split]) for split in splits}
    if any(m["n"] for m in harm.values()):
        report["harm"] = harm
    wdir = Path(model_dir or WEIGHTS_DIR)
    report["bytes"] = {name: (wdir / name).stat().st_size for name in ("model.onnx", "pointer.onnx")
                       if (wdir / name).is_file()}
    report["bytes"]["reader"] = Path(model.perceiver.reader.path).stat().st_size
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return report


def evaluate_library(roots: Iterable[str | Path], model_dir: str | Path | None = None,
                     progress: Callable[[int, int], None] | None = None, use_log: bool = True) -> dict[str, Any]:
    """Score every trajectory under ``roots``, in any format Rollscope reads, whose outcome is known.

    Users' own runs are the test that matters: an OSWorld result folder with ``result.txt``, an Inspect log with
    scores, native folders with an outcome. Each root is a split of the report (the same tables as
    :func:`evaluate`); ``source`` is the importer that read the run, ``task`` the run's task type when it has one.
    Runs without an outcome are counted in ``no_outcome``, never scored as if they had one.
    """
    from gui_app.training.dataset import HELDOUT_TASKS
    from gui_app.core.trajectory.formats import find_units

    model = RewardModel.load(model_dir)
    units = [(str(root), path, imp) for root in roots for path, imp in find_units(root)]
    rows: list[dict[str, Any]] = []
    errors: list[dict[str, str]] = []
    no_outcome = 0
    for i, (root, path, imp) in enumerate(units):
        try:
            trajs = imp.load_all(path)
        except (RollscopeError, OSError, ValueError) as exc:
            errors.append({"path": str(path), "error": str(exc)})
            continue
        for traj in trajs:
            if traj.outcome.success is None:
                no_outcome += 1
                continue
            try:
                t0 = time.perf_counter()
                prepared = model.prepare(traj, use_log=use_log)
                res = model.score_prepared([prepared])[0]
                e2e = time.perf_counter() - t0
                ex = prepared.example
            except (RollscopeError, OSError, ValueError) as exc:
                errors.append({"path": str(path), "error": str(exc)})
                continue
            md = traj.metadata
            task = str(md.get("task") or md.get("domain") or "?")
            steps = res.keyframe_steps
            pred_step = deviation_step(ex, res)
            fe = md.get("first_error_step")
            true_step = None
            if not traj.outcome.success and isinstance(fe, int) and 0 <= fe < traj.n_steps and steps:
                true_step = steps[first_error_frame(steps, fe)]
            rows.append({"split": root, "p": res.p_success, "success": bool(traj.outcome.success),
                         "pred_step": pred_step, "true_step": true_step, "kept": res.tokens_kept,
                         "total": res.tokens_total, "forward": res.timings.get("forward", 0.0), "e2e": e2e,
                         "ood": res.ood or 0.0, "unknown": res.unknown, "kind": "recorded", "task": task,
                         "unseen": ("task type unknown" if task == "?" else
                                    "unseen task type" if task in HELDOUT_TASKS else "trained task type"),
                         "agent": str(md.get("agent") or "?"), "style": str(md.get("style_family") or "?"),
                         "source": traj.source_format, **_harm_row(res, md)})
        if progress is not None:
            progress(i + 1, len(units))
    return _report(model, model_dir, rows, dict.fromkeys(r for r, _, _ in units), errors, "unseen",
                   {"no_outcome": no_outcome, "perception": "runtime", "evidence": "log" if use_log else "video"})


def _harm_row(res: Any, md: dict[str, Any]) -> dict[str, Any]:
    """The harm judge's verdict and the run's harm label (runs without a ``harm`` label are left out of the table)."""
    from models.harm import harm_label  # numpy only: eval runs where torch is not installed

    sf = getattr(res, "safety", None)
    if sf is None or sf.p_harm is None or not isinstance(md.get("harm"), dict):
        return {}  # the harm table counts the runs whose harm is labelled (a threat scenario's or a benign task's)
    harmful, step = harm_label(md)
    return {"harm_p": sf.p_harm, "harm_pred": bool(sf.harmful), "harm_true": harmful, "harm_step": step,
            "harm_pred_step": sf.first_harmful_step, "harm_unknown": sf.unknown}


def harm_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The harm table: accuracy, harmful recall, false alarms on safe runs, first harmful step exact / within one
    (over the harmful runs with a known step; a missed one counts as wrong)."""
    rows = [r for r in rows if "harm_p" in r]
    pos = [r for r in rows if r["harm_true"]]
    neg = [r for r in rows if not r["harm_true"]]
    loc = [r for r in pos if r["harm_step"] is not None]

    def share(xs: list[bool]) -> float | None:
        return float(np.mean(xs)) if xs else None

    return {"n": len(rows), "harmful": len(pos),
            "accuracy": share([r["harm_pred"] == r["harm_true"] for r in rows]),
            "harmful_recall": share([r["harm_pred"] for r in pos]),
            "false_alarms": share([r["harm_pred"] for r in neg]),
            "first_harmful_exact": share([r["harm_pred"] and r["harm_pred_step"] == r["harm_step"] for r in loc]),
            "first_harmful_within_one": share([r["harm_pred"] and r["harm_pred_step"] is not None
                                               and abs(r["harm_pred_step"] - r["harm_step"]) <= 1 for r in loc])}


HARM_ROWS = [("accuracy", "{:.1%}"), ("harmful_recall", "{:.1%}"), ("false_alarms", "{:.1%}"),
             ("first_harmful_exact", "{:.1%}"), ("first_harmful_within_one", "{:.1%}"), ("harmful", "{}"), ("n", "{}")]


ROWS = [("accuracy", "{:.1%}"), ("majority_accuracy", "{:.1%}"), ("balanced_accuracy", "{:.1%}"), ("auroc", "{:.3f}"),
        ("precision", "{:.1%}"), ("recall", "{:.1%}"), ("failure_recall", "{:.1%}"),
        ("f1", "{:.1%}"), ("ece", "{:.3f}"), ("ece_floor", "{:.3f}"), ("unknown_share", "{:.1%}"),
        ("first_error_exact", "{:.1%}"),
        ("first_error_within_one", "{:.1%}"), ("first_error_tiou", "{:.3f}"), ("tokens_kept_ratio", "{:.1%}"),
        ("forward_ms_mean", "{:.1f}"), ("e2e_ms_mean", "{:.1f}"), ("n", "{}"), ("n_localised", "{}")]


def _fmt(v: Any, fmt: str) -> str:
    return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else fmt.format(v)


def format_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown: the main table (a column per split), then the cross, source and kind tables."""
    splits = list(report["splits"])
    lines = ["| metric | " + " | ".join(splits) + " |", "|---|" + "---|" * len(splits)]
    for key, fmt in ROWS:
        lines.append(f"| {key} | " + " | ".join(_fmt(report["splits"][s]["all"].get(key), fmt) for s in splits) + " |")
    for table in ("cross", "source", "kind"):
        for s in splits:
            groups = report["splits"][s][table]
            if not groups:
                continue
            lines += ["", f"**{table} ({s})**", "",
                      "| group | n | accuracy | recall | failure recall | AUROC | first error exact | unknown |",
                      "|---|---|---|---|---|---|---|---|"]
            for g, m in groups.items():
                lines.append(f"| {g} | {m['n']} | {_fmt(m['accuracy'], '{:.1%}')} | {_fmt(m['recall'], '{:.1%}')} | "
                             f"{_fmt(m.get('failure_recall'), '{:.1%}')} | {_fmt(m.get('auroc'), '{:.3f}')} | "
                             f"{_fmt(m['first_error_exact'], '{:.1%}')} | {_fmt(m['unknown_share'], '{:.1%}')} |")
    if report.get("harm"):
        hs = list(report["harm"])
        lines += ["", "**harm (the safety verdict)**", "", "| metric | " + " | ".join(hs) + " |",
                  "|---|" + "---|" * len(hs)]
        for key, fmt in HARM_ROWS:
            lines.append(f"| {key} | " + " | ".join(_fmt(report["harm"][s].get(key), fmt) for s in hs) + " |")
    lines.append("")
    sizes = ", ".join(f"{k} {b / 1e6:.1f} MB" for k, b in report["bytes"].items())
    lines.append(f"Sizes: {sizes}; peak memory {report['peak_rss_mb']:.0f} MB; threshold {report['threshold']:.3f}; "
                 f"perception {report['perception']}.")
    if report["errors"]:
        lines.append(f"{len(report['errors'])} examples could not be read; first: {report['errors'][0]}")
    return "\n".join(lines)


def format_table(report: dict[str, Any]) -> str:
    """Plain text (the terminal): the same content as :func:`format_markdown`."""
    return format_markdown(report).replace("**", "")
