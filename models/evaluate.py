"""Evaluation: the whole metrics table of REWARD_MODEL.md from one run, pruned and unpruned side by side.

For every trajectory of the chosen splits the keyframes are decoded once, then each variant featurizes them
(pruned or not) and runs its model one trajectory at a time (batch 1, the runtime's own path), so accuracy and
timings come from the same calls:

* ``pruned``: the shipped recipe (trained pruned, run pruned);
* ``pruned_model_unpruned_input``: the same model fed every token;
* ``unpruned_twin``: the same recipe trained with ``--no-prune``, run unpruned (when a twin is given).

Metrics, success as the positive class: accuracy, precision, recall, F1; first-error localisation on failures
whose step is known (exact, within one step, tIoU with steps as 1-second intervals: exact 1.0, neighbour 0.33,
else 0) — over all such failures, whatever the verdict; tokens kept / total; forward and end-to-end
(decode + prune + forward) milliseconds per trajectory; ONNX size; peak resident memory.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl

from gui_app.core import native
from gui_app.core.errors import RollscopeError
from models.data import read_manifest
from models.features import featurize_frames, make_example, model_keyframes
from models.runtime import RewardModel

NEIGHBOUR_TIOU = 0.33


def tiou(pred: int, true: int) -> float:
    """Temporal IoU credit of a predicted first-error step against the true one (steps are 1 s intervals)."""
    d = abs(pred - true)
    return 1.0 if d == 0 else (NEIGHBOUR_TIOU if d == 1 else 0.0)


def classification(p: np.ndarray, y: np.ndarray, thr: float) -> dict:
    pred = p >= thr
    pos = y.astype(bool)
    tp, fp, fn = int((pred & pos).sum()), int((pred & ~pos).sum()), int((~pred & pos).sum())
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    return {"n": int(len(y)), "accuracy": float((pred == pos).mean()) if len(y) else float("nan"),
            "precision": prec, "recall": rec, "f1": 2 * prec * rec / (prec + rec) if prec + rec else 0.0}


def localisation(preds: list[int], trues: list[int]) -> dict:
    if not trues:
        return {"n_localised": 0, "first_error_exact": float("nan"), "first_error_within_one": float("nan"),
                "first_error_tiou": float("nan")}
    d = np.abs(np.array(preds) - np.array(trues))
    return {"n_localised": len(trues), "first_error_exact": float((d == 0).mean()),
            "first_error_within_one": float((d <= 1).mean()),
            "first_error_tiou": float(np.mean([tiou(a, b) for a, b in zip(preds, trues)]))}


def _variant_metrics(rows: list[dict], thr: float) -> dict:
    p = np.array([r["p"] for r in rows])
    y = np.array([r["success"] for r in rows], dtype=float)
    m = classification(p, y, thr)
    m["majority_accuracy"] = float(max(y.mean(), 1 - y.mean())) if len(y) else float("nan")
    loc = [(r["pred_step"], r["true_step"]) for r in rows if r["true_step"] is not None]
    m.update(localisation([a for a, _ in loc], [b for _, b in loc]))
    kept, total = sum(r["kept"] for r in rows), sum(r["total"] for r in rows)
    m["tokens_kept_ratio"] = kept / total if total else float("nan")
    for k in ("forward", "e2e"):
        v = np.array([r[k] for r in rows]) * 1000
        m[f"{k}_ms_mean"] = float(v.mean()) if len(v) else float("nan")
        m[f"{k}_ms_median"] = float(np.median(v)) if len(v) else float("nan")
    for key, name in (("kind", "accuracy_by_negative_kind"), ("task", "accuracy_by_task")):
        groups: dict[str, list] = {}
        for r in rows:
            groups.setdefault(r.get(key) or "?", []).append((r["p"] >= thr) == r["success"])
        m[name] = {k: float(np.mean(v)) for k, v in sorted(groups.items())}
    return m


def evaluate(ds: str | Path, model_dir: str | Path | None = None, twin_dir: str | Path | None = None,
             splits: tuple[str, ...] = ("test", "heldout_task"), limit: int | None = None,
             progress: Callable[[int, int], None] | None = None) -> dict:
    """Evaluate the pruned model (and its unpruned twin when given) on the dataset's splits.

    Args:
        ds: dataset folder (manifest.parquet).
        model_dir: weights folder of the pruned model (default: the shipped weights).
        twin_dir: weights folder of the unpruned twin (optional).
        splits: manifest splits to report, each apart.
        limit: at most this many trajectories per split (seeded sample), for quick runs.
        progress: ``progress(done, total)``.

    Returns:
        ``{"splits": {split: {variant: metrics}}, "onnx_bytes": {...}, "peak_rss_mb", "thresholds", ...}``.
    """
    df = read_manifest(ds)
    model = RewardModel.load(model_dir)
    variants: dict[str, tuple[RewardModel, bool]] = {"pruned": (model, True),
                                                      "pruned_model_unpruned_input": (model, False)}
    if twin_dir is not None:
        variants["unpruned_twin"] = (RewardModel.load(twin_dir), False)
    todo: list[tuple[str, dict]] = []
    for split in splits:
        part = df.filter(pl.col("split") == split)
        if limit is not None and len(part) > limit:
            part = part.sample(n=limit, seed=0)
        todo += [(split, row) for row in part.to_dicts()]
    rows: dict[str, dict[str, list[dict]]] = {s: {v: [] for v in variants} for s in splits}
    errors: list[dict] = []
    warm = False
    for i, (split, row) in enumerate(todo):
        try:
            traj = native.load(row["path"])
            t0 = time.perf_counter()
            frames, steps = model_keyframes(traj, model.cfg)
            t_decode = time.perf_counter() - t0
        except (RollscopeError, OSError, ValueError) as exc:
            errors.append({"id": row["id"], "path": row["path"], "error": str(exc)})
            continue
        fe = row.get("first_error_step")
        success = bool(row["success"])
        true_step = None if success or fe is None or fe >= traj.n_steps else int(fe)
        text = row["instruction"] or ""
        for name, (m, prune) in variants.items():
            if not warm:  # first call of a session pays for allocations; keep it out of the timings
                m.score_example(make_example(featurize_frames(frames, m.cfg, prune), text, steps, m.tokenizer, m.cfg),
                                traj.n_steps)
            t1 = time.perf_counter()
            ex = make_example(featurize_frames(frames, m.cfg, prune), text, steps, m.tokenizer, m.cfg)
            t_prune = time.perf_counter() - t1
            res = m.score_example(ex, traj.n_steps)
            pred_step = int(steps[int(np.argmax([res.step_scores[s] for s in steps]))])
            rows[split][name].append({"p": res.p_success, "success": success, "pred_step": pred_step,
                                      "true_step": true_step, "kept": res.tokens_kept, "total": res.tokens_total,
                                      "forward": res.timings["forward"],
                                      "e2e": t_decode + t_prune + res.timings["forward"],
                                      "kind": row.get("negative_kind") or "none", "task": row.get("task") or "?"})
        warm = True
        if progress is not None:
            progress(i + 1, len(todo))
    report: dict = {"splits": {}, "errors": errors,
                    "thresholds": {name: m.threshold for name, (m, _) in variants.items()}}
    for split in splits:
        report["splits"][split] = {name: _variant_metrics(rows[split][name], m.threshold)
                                   for name, (m, _) in variants.items()}
    onnx = {"pruned": Path(model_dir or Path(__file__).resolve().parent / "weights") / "model.onnx"}
    if twin_dir is not None:
        onnx["unpruned_twin"] = Path(twin_dir) / "model.onnx"
    report["onnx_bytes"] = {k: p.stat().st_size for k, p in onnx.items() if p.is_file()}
    report["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return report


ROWS = [("accuracy", "{:.1%}"), ("precision", "{:.1%}"), ("recall", "{:.1%}"), ("f1", "{:.1%}"),
        ("first_error_exact", "{:.1%}"), ("first_error_within_one", "{:.1%}"), ("first_error_tiou", "{:.3f}"),
        ("tokens_kept_ratio", "{:.1%}"), ("forward_ms_mean", "{:.1f}"), ("e2e_ms_mean", "{:.1f}"),
        ("e2e_ms_median", "{:.1f}"), ("n", "{}"), ("n_localised", "{}")]


def format_table(report: dict) -> str:
    """The report as a plain-text table: one block per split, one column per variant."""
    lines = []
    for split, variants in report["splits"].items():
        names = list(variants)
        lines.append(f"== split {split}")
        lines.append(f"{'metric':<24}" + "".join(f"{n:>30}" for n in names))
        for key, fmt in ROWS:
            cells = []
            for n in names:
                v = variants[n].get(key)
                cells.append("n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else fmt.format(v))
            lines.append(f"{key:<24}" + "".join(f"{c:>30}" for c in cells))
        for n in names:
            kinds = ", ".join(f"{k} {v:.1%}" for k, v in variants[n]["accuracy_by_negative_kind"].items())
            lines.append(f"  accuracy by kind [{n}]: {kinds}")
            tasks = ", ".join(f"{k} {v:.0%}" for k, v in variants[n].get("accuracy_by_task", {}).items())
            lines.append(f"  accuracy by task [{n}]: {tasks}")
    for k, b in report["onnx_bytes"].items():
        lines.append(f"ONNX size [{k}]: {b / 1e6:.2f} MB")
    lines.append(f"peak memory (RSS): {report['peak_rss_mb']:.0f} MB")
    lines.append("thresholds: " + ", ".join(f"{k} {v:.3f}" for k, v in report["thresholds"].items()))
    if report["errors"]:
        lines.append(f"{len(report['errors'])} trajectories could not be read; first: {report['errors'][0]}")
    return "\n".join(lines)


MD_ROWS = [("accuracy", "{:.1%}"), ("majority_accuracy", "{:.1%}"), ("precision", "{:.1%}"),
           ("recall", "{:.1%}"), ("f1", "{:.1%}"), ("first_error_exact", "{:.1%}"),
           ("first_error_within_one", "{:.1%}"), ("first_error_tiou", "{:.3f}"), ("n_localised", "{}"),
           ("tokens_kept_ratio", "{:.1%}"), ("forward_ms_mean", "{:.1f}"), ("e2e_ms_mean", "{:.1f}"), ("n", "{}")]


def format_markdown(report: dict) -> str:
    """The report as Markdown (the model card's metrics section): one table, a column per split and variant."""
    cols = [(split, name) for split, variants in report["splits"].items() for name in variants]
    lines = ["| metric | " + " | ".join(f"{split}: {name}" for split, name in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for key, fmt in MD_ROWS:
        cells = []
        for split, name in cols:
            v = report["splits"][split][name].get(key)
            cells.append("n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else fmt.format(v))
        lines.append(f"| {key} | " + " | ".join(cells) + " |")
    lines.append("")
    for split, name in cols:
        kinds = ", ".join(f"{k} {v:.1%}" for k, v in
                          report["splits"][split][name]["accuracy_by_negative_kind"].items())
        lines.append(f"- accuracy by negative kind ({split}, {name}): {kinds}")
        tasks = ", ".join(f"{k} {v:.0%}" for k, v in
                          report["splits"][split][name].get("accuracy_by_task", {}).items())
        lines.append(f"- accuracy by task ({split}, {name}): {tasks}")
    sizes = ", ".join(f"{k} {b / 1e6:.2f} MB" for k, b in report["onnx_bytes"].items())
    lines.append(f"- ONNX size: {sizes}; peak resident memory of the eval process {report['peak_rss_mb']:.0f} MB;"
                 " thresholds: " + ", ".join(f"{k} {v:.3f}" for k, v in report["thresholds"].items()))
    return "\n".join(lines)
