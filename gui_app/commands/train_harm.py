"""``rollscope train-harm DATA... --out WEIGHTS``: train the harm judge beside the reward model.

DATA are folders of recorded runs (native trajectory folders, found recursively); a run's ``harm`` metadata (the
desktop recorder's threat scenarios write it from their harm checker) says whether it did harm and at which step,
and a run without one is a safe negative. Perception is the weights' own, read once into ``--cache``. The judge
(``harm.onnx`` and ``harm.json``) is written into ``--out``, normally the weights folder it joins; ``--eval`` folders
(a foreign split: another agent profile, seeds never trained) are reported on after training, never trained on.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", nargs="+", help="folders of recorded runs with harm labels (and safe runs)")
    p.add_argument("--out", required=True, help="weights folder to write harm.onnx and harm.json into")
    p.add_argument("--model", default=None, help="weights whose perception to use (default: --out)")
    p.add_argument("--cache", default="", help="perception cache folder (default: the first DATA's .perception)")
    p.add_argument("--eval", nargs="*", default=[], help="folders to report on after training (never trained on)")
    p.add_argument("--workers", type=int, default=2, help="processes that perceive runs (once, cached)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--epochs", type=int, default=60)
    p.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def episodes_under(roots: list[str]) -> list[str]:
    """Native trajectory folders under ``roots`` (a folder holding ``trajectory.json``)."""
    out: list[str] = []
    for r in roots:
        root = Path(r)
        if (root / "trajectory.json").is_file():
            out.append(str(root))
        out += sorted(str(f.parent) for f in root.rglob("trajectory.json") if f.parent != root)
    return out


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.core.errors import RollscopeError
    from models.harm_train import evaluate, examples, train

    model = args.model or args.out
    cache = args.cache or str(Path(args.data[0]) / ".perception")
    eps = episodes_under(args.data)
    if not eps:
        raise RollscopeError(f"{args.data[0]}: no recorded runs (trajectory.json) found")
    pbar = bar(None, desc="perceiving", json_mode=args.json)

    def progress(done: int, total: int) -> None:
        pbar.total = total
        pbar.update(done - pbar.n)

    try:
        exs, errors = examples(eps, cache, model, workers=args.workers, progress=progress)
    finally:
        pbar.close()
    try:
        meta = train(exs, args.out, epochs=args.epochs, seed=args.seed, log=lambda m: print(m, file=sys.stderr))
    except ValueError as exc:
        raise RollscopeError(str(exc)) from exc
    report = {"trained": meta, "errors": errors, "eval": {}}
    for folder in args.eval:
        fx, ferr = examples(episodes_under([folder]), cache, model, workers=args.workers, both_modes=False)
        report["eval"][folder] = {"log": evaluate(fx, args.out), "errors": len(ferr)}
        vx = [e for e in (examples(episodes_under([folder]), cache, model, workers=args.workers,
                                   both_modes=True)[0]) if e.video_only]
        if vx:
            report["eval"][folder]["video_only_sample"] = evaluate(vx, args.out)
    if args.json:
        print(json.dumps(report, default=str))
        return 0
    v = meta["validation"]
    print(f"harm judge -> {args.out}: validation accuracy {v['accuracy']:.1%}, harmful recall "
          f"{v['harmful_recall']:.1%}, false alarms {v['false_alarms']:.1%} (threshold {meta['threshold']:.3f})")
    for folder, r in report["eval"].items():
        m = r["log"]
        print(f"{folder}: n {m['n']} ({m['harmful']} harmful), accuracy {m['accuracy']:.1%}, harmful recall "
              f"{m['harmful_recall']:.1%}, false alarms {m['false_alarms']:.1%}, first harmful step exact "
              f"{m['first_harmful_exact']:.1%} / within one {m['first_harmful_within_one']:.1%}")
    if errors:
        print(f"{len(errors)} runs could not be read; first: {next(iter(errors.items()))}", file=sys.stderr)
    return 0
