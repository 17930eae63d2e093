"""``rollscope train --data DS --out RUN``: train the video reward model on a recorded dataset (CPU, seeded)."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="dataset folder holding manifest.parquet")
    p.add_argument("--out", required=True, help="run folder (checkpoint.pt, metrics.json)")
    p.add_argument("--epochs", type=int, default=12, help="maximum epochs (early stop on validation)")
    p.add_argument("--seed", type=int, default=0, help="seed for init, shuffling and augmentation")
    p.add_argument("--no-prune", dest="prune", action="store_false", help="train on every token (the baseline)")
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=5e-4)
    p.add_argument("--max-train", type=int, default=None, help="subsample the training split to N examples")
    p.add_argument("--cache", default="", help="feature cache folder (default: DS/cache)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--time-budget", type=float, default=None, help="stop after the epoch that passes N seconds")
    p.add_argument("--patience", type=int, default=3, help="epochs without validation gain before stopping")
    p.add_argument("--init", default="", help="continue from this run's checkpoint (config, tokenizer, weights)")
    p.add_argument("--no-augment", dest="augment", action="store_false", help="train without augmentation")
    p.add_argument("--config", default=None,
                   help="JSON object overriding ModelConfig fields, e.g. '{\"d_model\": 128}'")
    p.add_argument("--online-negatives", type=float, default=0.0,
                   help="share of successful runs that also come back each epoch as a fresh negative "
                        "(adversarial rewrite, swap or truncation)")
    p.add_argument("--max-batch-tokens", type=int, default=4096,
                   help="a batch stops growing at this many padded tokens (0: only --batch-size limits it)")
    p.add_argument("--stats-fit", type=int, default=0, metavar="STEPS",
                   help="fit the run-statistics MLP (config stats_mlp) full batch for STEPS steps before the "
                        "network trains, then keep it fixed (0: it trains with the network)")
    p.add_argument("--json", action="store_true", help="print the final metrics as one JSON object")


def run(args: argparse.Namespace) -> int:
    import sys

    from models.train import TrainArgs, train

    targs = TrainArgs(data=args.data, out=args.out, epochs=args.epochs, seed=args.seed, prune=args.prune,
                      batch_size=args.batch_size, lr=args.lr, max_train=args.max_train, cache_dir=args.cache,
                      threads=args.threads, augment=args.augment, patience=args.patience, init=args.init,
                      time_budget_s=args.time_budget, online_negatives=args.online_negatives,
                      max_batch_tokens=args.max_batch_tokens or None, stats_fit=args.stats_fit,
                      config=json.loads(args.config) if args.config else {})
    metrics = train(targs, log=lambda msg: print(msg, file=sys.stderr))
    if args.json:
        print(json.dumps({k: v for k, v in metrics.items() if k != "history"}))
    else:
        v = metrics["val"]
        print(f"best epoch {metrics['best_epoch']}: val accuracy {v['accuracy']:.3f} recall {v['recall']:.3f} "
              f"threshold {metrics['threshold']:.3f} ({metrics['seconds']:.0f}s) -> {args.out}/checkpoint.pt")
    return 0
