"""``rollscope train --data DS --out RUN``: train the video reward model on a recorded dataset (CPU, seeded)."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", required=True, help="dataset folder holding manifest.parquet")
    p.add_argument("--out", required=True, help="run folder (checkpoint.pt, train_log.json)")
    p.add_argument("--epochs", type=int, default=30, help="maximum epochs (early stop on validation loss)")
    p.add_argument("--seed", type=int, default=0, help="seed for init, shuffling and augmentation")
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--patience", type=int, default=6, help="epochs without a better validation loss before stopping")
    p.add_argument("--cache", default="", help="perception cache folder (default: DS/.perception)")
    p.add_argument("--pointer", default="", help="pointer detector ONNX (default: the shipped one)")
    p.add_argument("--threads", type=int, default=1,
                   help="torch CPU threads (1 by default: on a busy 2-core machine 2 threads made steps 10x slower)")
    p.add_argument("--workers", type=int, default=2, help="processes that perceive episodes (once, cached)")
    p.add_argument("--time-budget", type=float, default=0.0, help="stop after the epoch that passes N seconds")
    p.add_argument("--agents", default="", help="train only on these agents, comma-separated (the cross table)")
    p.add_argument("--style-families", default="",
                   help="train only on these recording-style families, comma-separated (the cross table)")
    p.add_argument("--no-augment", dest="augment", action="store_false", help="train without reading noise")
    p.add_argument("--augment-share", type=float, default=0.5,
                   help="share of training examples re-read with perception noise each epoch")
    p.add_argument("--weight-decay", type=float, default=0.05)
    p.add_argument("--config", default="",
                   help="network settings as JSON, over models.config.ModelConfig's defaults (the shipped recipe)")
    p.add_argument("--json", action="store_true", help="print the final report as one JSON object")


def run(args: argparse.Namespace) -> int:
    import sys

    from gui_app.commands.progress import bar
    import json

    from gui_app.core.errors import RollscopeError
    from models.config import ModelConfig
    from models.train import TrainArgs, train

    def split(s: str) -> tuple[str, ...]:
        return tuple(x.strip() for x in s.split(",") if x.strip())

    try:
        overrides = json.loads(args.config) if args.config else {}
    except json.JSONDecodeError as exc:
        raise RollscopeError(f"--config: not JSON ({exc})") from exc
    if not isinstance(overrides, dict):
        raise RollscopeError("--config: a JSON object of ModelConfig fields, e.g. '{\"d_model\": 64}'")
    net = ModelConfig.from_dict({**ModelConfig().to_dict(), **overrides})
    targs = TrainArgs(data=args.data, out=args.out, epochs=args.epochs, seed=args.seed, batch_size=args.batch_size,
                      lr=args.lr, patience=args.patience, cache=args.cache, pointer=args.pointer,
                      threads=args.threads, workers=args.workers, time_budget=args.time_budget,
                      agents=split(args.agents), style_families=split(args.style_families),
                      augment=args.augment_share if args.augment else 0.0, weight_decay=args.weight_decay, net=net)
    bars: dict[str, object] = {}

    def progress(stage: str, done: int, total: int) -> None:
        b = bars.get(stage)
        if b is None:
            for old in bars.values():
                old.close()  # type: ignore[attr-defined]
            bars.clear()
            b = bars[stage] = bar(None, desc=stage, json_mode=args.json)
        b.total = total  # type: ignore[attr-defined]
        b.update(done - b.n)  # type: ignore[attr-defined]

    try:
        report = train(targs, log=lambda msg: print(msg, file=sys.stderr), progress=progress)
    finally:
        for b in bars.values():
            b.close()  # type: ignore[attr-defined]
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k != "history"}, default=str))
    else:
        v = report["val"]
        print(f"best epoch {report['best_epoch']}: val accuracy {v['accuracy']:.3f} recall {v['recall']:.3f} "
              f"threshold {report['threshold']:.3f} ({report['seconds']:.0f}s) -> {args.out}/checkpoint.pt")
    return 0
