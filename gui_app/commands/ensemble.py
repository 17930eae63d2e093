"""``rollscope ensemble RUN RUN ... --data DS --out RUN_E``: average training runs of one recipe into one model."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("runs", nargs="+", help="training run folders (each holds checkpoint.pt), same recipe and data")
    p.add_argument("--data", required=True, help="the dataset the runs were trained on (its val split sets the "
                                                 "threshold)")
    p.add_argument("--out", required=True, help="run folder to write (checkpoint.pt, metrics.json)")
    p.add_argument("--cache", default="", help="feature cache folder (default: DS/cache)")
    p.add_argument("--threads", type=int, default=2, help="torch CPU threads")
    p.add_argument("--json", action="store_true", help="print the metrics as one JSON object")


def run(args: argparse.Namespace) -> int:
    import sys

    from gui_app.core.errors import RollscopeError
    from models.ensemble import EnsembleError, combine

    try:
        m = combine(args.runs, args.data, args.out, cache_dir=args.cache or None, threads=args.threads,
                    log=(lambda msg: None) if args.json else (lambda msg: print(msg, file=sys.stderr)))
    except (EnsembleError, FileNotFoundError) as exc:
        raise RollscopeError(str(exc)) from exc
    if args.json:
        print(json.dumps(m))
    else:
        v = m["val"]
        print(f"ensemble of {len(m['members'])}: val accuracy {v['accuracy']:.3f} recall {v['recall']:.3f} "
              f"threshold {m['threshold']:.3f} -> {args.out}/checkpoint.pt (export it with "
              f"`rollscope export-onnx {args.out}`)")
    return 0
