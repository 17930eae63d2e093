"""``rollscope pretrain --data DS --out RUN``: grounding pretraining on generated screens (then ``train --init``)."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="dataset folder (its training instructions give the templates)")
    p.add_argument("--out", required=True, help="run folder (checkpoint.pt, metrics.json)")
    p.add_argument("--minutes", type=float, default=15.0, help="time budget")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--batch-size", type=int, default=24)
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--config", default=None, help="JSON object overriding ModelConfig fields")
    p.add_argument("--json", action="store_true", help="print the final metrics as one JSON object")


def run(args: argparse.Namespace) -> int:
    import sys

    from models.pretrain import PretrainArgs, pretrain

    m = pretrain(PretrainArgs(data=args.data, out=args.out, minutes=args.minutes, seed=args.seed, lr=args.lr,
                              batch_size=args.batch_size, threads=args.threads,
                              config=json.loads(args.config) if args.config else None),
                 log=lambda msg: print(msg, file=sys.stderr))
    if args.json:
        print(json.dumps({k: v for k, v in m.items() if k != "history"}))
    else:
        print(f"{m['steps']} steps ({m['examples']} generated screens) in {m['seconds']:.0f}s: accuracy on held-out "
              f"generated screens {m['val_accuracy']:.3f} -> {args.out}/checkpoint.pt (continue with train --init)")
    return 0
