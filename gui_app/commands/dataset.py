"""``rollscope dataset build DIR --out DS``: splits, derived negatives and the manifest the reward model reads."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", choices=["build"], help="build: write DS/manifest.parquet and DS/counts.csv")
    p.add_argument("root", nargs="+",
                   help="folder(s) of recorded native trajectories (e.g. from `rollscope collect`)")
    p.add_argument("--out", required=True, help="dataset folder (manifest, counts, derived negatives)")
    p.add_argument("--holdout-tasks", default="default",
                   help="task types kept out of training: 'default' (the 11 held-out MiniWoB types of "
                        "gui_app.training.dataset.HELDOUT_TASKS), 'none', or a comma-separated list")
    p.add_argument("--seed", type=int, default=0, help="seed of the split hash and of the negatives")
    p.add_argument("--negatives", default="adversarial,truncation,swap",
                   help="derived negatives to add: any of adversarial,truncation,swap, or 'none'")
    p.add_argument("--split", default="80,10,10", help="train,val,test percentages by episode seed")
    p.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import progress
    from gui_app.training.dataset import HELDOUT_TASKS, DatasetError, build_dataset, format_counts

    kinds = [] if args.negatives in ("", "none") else [k.strip() for k in args.negatives.split(",") if k.strip()]
    if args.holdout_tasks == "default":
        holdout = list(HELDOUT_TASKS)
    elif args.holdout_tasks in ("", "none"):
        holdout = []
    else:
        holdout = [t.strip() for t in args.holdout_tasks.split(",") if t.strip()]
    try:
        split = tuple(int(x) for x in args.split.split(","))
    except ValueError:
        split = ()
    if len(split) != 3:
        raise DatasetError(f"--split: expected three integers like 80,10,10, got {args.split!r}")

    def prog(items, total, desc):  # noqa: ANN001, ANN202
        return progress(items, total=total, desc=desc, json_mode=args.json)

    result = build_dataset(args.root, args.out, holdout_tasks=holdout, seed=args.seed, negatives=kinds,
                           split=split, progress=prog)
    if args.json:
        print(json.dumps(result.to_dict()))
        return 0
    print(f"{result.n_examples} examples ({result.n_source} recorded, {result.n_derived} derived) -> "
          f"{result.manifest_path}")
    print(format_counts(result.counts))
    for w in result.warnings[:10]:
        print(f"  warning: {w}")
    return 0
