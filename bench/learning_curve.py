"""The loop's learning curve: how much a team's labels lift the judge on runs it was not trained on, and how long
the fine-tune takes on this machine's CPU.

    python bench/learning_curve.py DIR [--base MODEL] [--labels 0,25,50,100,200] [--minutes 10] [--quick] [--json]
    python bench/learning_curve.py --quick          # a smoke run on the bundled samples

DIR holds recordings with known outcomes (any format Rollscope reads: an environment's reward, a checker's verdict)
that the base model was not trained on: the desktop recorder's tasks, or MiniWoB++ task types held out from
training. Its runs are shuffled (seeded); the last ones, after the largest label count, are the evaluation set, the
same for every point of the curve. For each N, the first N runs are labelled from their known outcomes (verdict,
and the recorded first error step of a failure) in a fresh annotation store (the real SQLite store), read back as
``rollscope train --from-labels`` reads them (:func:`gui_app.core.annotation.teaching.labelled_runs`), and the base is
fine-tuned on all N (no held-out slice: the evaluation set is the report). Figures per N: accuracy, recall and
calibration error on the evaluation set, and the seconds of fine-tuning (perception is cached and reported apart).

The issue's target: 100 labels lift accuracy by at least 10 points, or to at least 90%, in at most 10 minutes of
fine-tuning on 2 cores. ``--quick`` runs a small curve on whatever DIR holds (the bundled samples: CI's smoke run).
"""

from __future__ import annotations

import random
import sys
import tempfile
import time
from pathlib import Path

import _common  # noqa: I001 -- first: puts the repository on sys.path

from gui_app.core.errors import RollscopeError  # noqa: E402
from gui_app.core.store.backends import open_store  # noqa: E402
from gui_app.core.annotation.teaching import known_outcomes, label_store, labelled_runs  # noqa: E402
from models.finetune import FinetuneArgs, finetune, load_base, perceive_runs, score_examples, summarise  # noqa: E402
from models.runtime import RewardModel  # noqa: E402

MIN_EVAL_SHARE = 0.3  # at least this share of DIR's runs is kept for evaluation


def main() -> int:
    p = _common.parser(__doc__.splitlines()[0])
    p.add_argument("data", nargs="?", default=None,
                   help="folder of recordings with known outcomes, unseen by the base model (--quick: default the "
                        "bundled samples)")
    p.add_argument("--base", default="", help="model to fine-tune (default: the shipped weights)")
    p.add_argument("--labels", default="0,25,50,100,200", help="label counts of the curve")
    p.add_argument("--minutes", type=float, default=10.0, help="fine-tune time budget per point")
    p.add_argument("--epochs", type=int, default=12)
    p.add_argument("--recipe", default="auto", help="the fine-tune recipe: auto, keep, calibrate, trees, head or full")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1, help="torch threads while fine-tuning")
    p.add_argument("--cache", default="", help="perception cache (default: data/bench/learning_curve/.perception)")
    args = p.parse_args()
    _common.data_or_samples(p, args, "a folder of recordings the base model was not trained on")
    fig = _common.Figures(args.json)
    errors: list[str] = []
    runs = known_outcomes(args.data, errors)
    for e in errors[:5]:
        _common.log(f"not read: {e}")
    if len(runs) < 8:
        _common.log(f"{args.data}: {len(runs)} runs with a known outcome; the curve needs at least 8")
        return 1
    rng = random.Random(args.seed)
    runs.sort(key=lambda r: r.ref)
    rng.shuffle(runs)
    cap = int(len(runs) * (1 - MIN_EVAL_SHARE))
    wanted = [int(x) for x in args.labels.split(",") if x.strip()]
    if args.quick:  # a small curve on whatever DIR holds, a few epochs
        wanted = sorted({0, cap // 2, cap})
        args.epochs = min(args.epochs, 4)
    counts = [n for n in wanted if n <= cap]
    for n in sorted(set(wanted) - set(counts)):
        _common.log(f"{n} labels: skipped ({len(runs)} runs leave room for at most {cap} labels beside the "
                    f"evaluation set)")
    pool, eval_runs = runs[:max(counts)], runs[max(counts):]
    cache = Path(args.cache) if args.cache else _common.DATA / "learning_curve" / ".perception"
    fig.add("runs", len(runs))
    fig.add("eval_runs", len(eval_runs))
    fig.add("eval_successes", sum(r.success for r in eval_runs))

    base_scoring, base_torch = load_base(args.base or None, threads=2)
    t0 = time.monotonic()
    evaluated, failed, _ = perceive_runs(eval_runs, base_torch, cache)
    for ref, err in failed[:5]:
        _common.log(f"evaluation run not perceived: {ref}: {err}")
    fig.add("perceive_eval_seconds", time.monotonic() - t0, "s (cached after the first run)")
    base = summarise(score_examples(base_scoring, evaluated), base_scoring.threshold)
    fig.add("base_accuracy", base["accuracy"])
    fig.add("base_recall", base["recall"])
    fig.add("base_ece", base["ece"])
    fig.add("base_ece_floor", base["ece_floor"], "(the ECE a calibrated judge would show on as many runs)")
    results: dict[int, dict[str, float]] = {}
    seconds: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="rollscope-curve-") as tmp:
        for n in counts:
            if n == 0:
                continue
            store_path = Path(tmp) / f"labels-{n}.sqlite"
            store = open_store(store_path)
            try:
                label_store(store, pool[:n], "bench")  # labelled from the known outcomes, through the real store
                found = labelled_runs(store, args.data)
            finally:
                store.close()
            if found.skipped:
                _common.log(f"{n} labels: {len(found.skipped)} left out; first: {found.skipped[0]}")
            out = Path(tmp) / f"run-{n}"
            try:
                rep = finetune(FinetuneArgs(out=str(out), base=args.base, cache=str(cache), minutes=args.minutes,
                                            epochs=args.epochs, holdout=0.0, seed=args.seed, threads=args.threads,
                                            library_root=str(args.data), recipe=args.recipe),
                               found.runs, log=lambda m: None)
            except RollscopeError as exc:
                _common.log(f"{n} labels: no fine-tune: {exc}")
                continue
            tuned = RewardModel.load(out, threads=2)
            m = summarise(score_examples(tuned, evaluated), tuned.threshold)
            results[n], seconds[n] = m, rep["train_seconds"]
            fig.add(f"accuracy_{n}_labels", m["accuracy"])
            fig.add(f"recall_{n}_labels", m["recall"])
            fig.add(f"ece_{n}_labels", m["ece"])
            fig.add(f"ece_floor_{n}_labels", m["ece_floor"], "(the ECE a calibrated judge would show)")
            fig.add(f"finetune_seconds_{n}_labels", rep["train_seconds"], f"s ({args.threads} torch thread(s))")
            fig.add(f"perceive_seconds_{n}_labels", rep["perceive_seconds"], "s (new runs only)")
            fig.add(f"recipe_{n}_labels", rep["recipe"], "chosen by cross-validation on the labels"
                    if args.recipe == "auto" else "")
            for recipe, acc in rep["cross_validated"].items():
                fig.add(f"cv_accuracy_{recipe}_{n}_labels", acc)
    if 100 in results:
        lift = results[100]["accuracy"] - base["accuracy"]
        fig.add("lift_100_labels_points", 100 * lift, "points")
        fig.add("target_met_100_labels", bool((lift >= 0.10 or results[100]["accuracy"] >= 0.90)
                                              and seconds[100] <= 600))
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
