"""``rollscope train --data DS --out RUN``: train the video reward model on a recorded dataset (CPU, seeded).

``rollscope train --from-labels [--store PATH | --root LIBRARY] [--base MODEL] --out RUN [--minutes M]``: fine-tune
the judge on the library's own labels (the final verdict of each labelled run, in any format; the root-cause step of
a failure as its first deviating step), keeping a held-out slice of them for a before-and-after report
(:mod:`models.finetune`). RUN becomes a weights folder (``score --model RUN``); ``--activate`` makes it the model
``score``, ``eval`` and the app use by default, unless it is worse than its base on the held-out labels (then it
refuses, exit status 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def add_arguments(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", help="dataset folder holding manifest.parquet")
    src.add_argument("--from-labels", action="store_true",
                     help="fine-tune on the library's final labels (adjudicated, else majority) instead")
    p.add_argument("--out", required=True, help="run folder (checkpoint.pt, train_log.json; with --from-labels also "
                                                "the exported weights and report.json)")
    p.add_argument("--epochs", type=int, default=None,
                   help="maximum epochs (default 14, the shipped recipe, early stop on validation loss; "
                        "--from-labels: 12)")
    p.add_argument("--seed", type=int, default=0, help="seed for init, split, shuffling and augmentation")
    p.add_argument("--batch-size", type=int, default=None, help="default 32 (--from-labels: 16)")
    p.add_argument("--lr", type=float, default=None,
                   help="learning rate (default 2e-3, the shipped recipe; --from-labels: 3e-4)")
    p.add_argument("--patience", type=int, default=5, help="epochs without a better validation loss before stopping")
    p.add_argument("--cache", default="", help="perception cache folder (default: DS/.perception; --from-labels: "
                                               "RUN/.perception)")
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
    p.add_argument("--no-trees", dest="trees", action="store_false",
                   help="train the network alone, without the run trees averaged with it (models/trees.py)")
    p.add_argument("--trees-only", action="store_true",
                   help="fit the run trees of the run in --out, trained without them: its network is kept")
    p.add_argument("--ensemble", nargs="+", metavar="RUN", default=None,
                   help="join these training runs of DATA (other --seed, one network shape) into one judge in --out: "
                        "the mean of their logits, calibrated, with run trees, as training ends")
    p.add_argument("--config", default="",
                   help="network settings as JSON, over models.config.ModelConfig's defaults (the shipped recipe)")
    g = p.add_argument_group("fine-tuning on labels (--from-labels)")
    g.add_argument("--store", default=None, help="annotation store (default: ROOT/.rollscope/labels.sqlite)")
    g.add_argument("--root", default=None,
                   help="library root the labels' keys are relative to (default: the store's library, else .)")
    g.add_argument("--catalog", default=None, help="the library's catalog (default: ROOT/.rollscope/catalog.sqlite)")
    g.add_argument("--base", default=None, help="model to start from: weights folder or run (default: the active "
                                                "model, else the shipped weights)")
    g.add_argument("--recipe", default="auto", choices=("auto", "keep", "calibrate", "trees", "head", "full"),
                   help="what the fine-tune changes: auto (chosen by cross-validation on the labels, the default), "
                        "keep (nothing: the base as it is, when no recipe judges the labels better), "
                        "calibrate (calibration and threshold only), trees (agent trees on the labels' run features "
                        "too), head (the output heads) or full (the whole network)")
    g.add_argument("--minutes", type=float, default=10.0, help="training time budget in minutes (default 10; 0: none)")
    g.add_argument("--holdout", type=float, default=0.25,
                   help="share of the labels per verdict held out for the before-and-after report (default 0.25)")
    g.add_argument("--activate", action="store_true",
                   help="make the new model the active one, unless it is worse than the base on the held-out labels")
    p.add_argument("--json", action="store_true", help="print the final report as one JSON object")


class _Bars:
    """One progress bar per stage (a new stage closes the previous bar)."""

    def __init__(self, json_mode: bool):
        self.json_mode = json_mode
        self.bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from gui_app.commands.progress import bar

        b = self.bars.get(stage)
        if b is None:
            self.close()
            b = self.bars[stage] = bar(None, desc=stage, json_mode=self.json_mode)
        b.total = total
        b.update(done - b.n)

    def close(self) -> None:
        for b in self.bars.values():
            b.close()
        self.bars.clear()


def run(args: argparse.Namespace) -> int:
    if args.from_labels:
        return run_from_labels(args)
    from gui_app.core.errors import RollscopeError
    from models.config import ModelConfig
    from models.train import TrainArgs, add_trees, join, train

    def split(s: str) -> tuple[str, ...]:
        return tuple(x.strip() for x in s.split(",") if x.strip())

    try:
        overrides = json.loads(args.config) if args.config else {}
    except json.JSONDecodeError as exc:
        raise RollscopeError(f"--config: not JSON ({exc})") from exc
    if not isinstance(overrides, dict):
        raise RollscopeError("--config: a JSON object of ModelConfig fields, e.g. '{\"d_model\": 64}'")
    net = ModelConfig.from_dict({**ModelConfig().to_dict(), **overrides})
    targs = TrainArgs(data=args.data, out=args.out, epochs=args.epochs or 14, seed=args.seed,
                      batch_size=args.batch_size or 32, lr=args.lr or 2e-3, patience=args.patience, cache=args.cache,
                      pointer=args.pointer, threads=args.threads, workers=args.workers, time_budget=args.time_budget,
                      agents=split(args.agents), style_families=split(args.style_families),
                      augment=args.augment_share if args.augment else 0.0, weight_decay=args.weight_decay, net=net,
                      trees=args.trees)
    if args.ensemble and args.trees_only:
        raise RollscopeError("--ensemble and --trees-only: choose one")
    bars = _Bars(args.json)
    log = lambda msg: print(msg, file=sys.stderr)  # noqa: E731
    try:
        if args.ensemble:
            report = join(targs, args.ensemble, log=log, progress=bars)
        else:
            report = (add_trees if args.trees_only else train)(targs, log=log, progress=bars)
    except ValueError as exc:
        raise RollscopeError(str(exc)) from exc
    finally:
        bars.close()
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k != "history"}, default=str))
    elif args.ensemble:
        v = report["val"]
        print(f"{len(args.ensemble)} networks joined: val accuracy {v['accuracy']:.3f} recall {v['recall']:.3f} "
              f"threshold {report['threshold']:.3f} -> {args.out}/checkpoint.pt")
    elif args.trees_only:
        v, n = report["val_both_modes"], report["val_both_modes_network_alone"]
        print(f"run trees: val accuracy {n['accuracy']:.3f} -> {v['accuracy']:.3f} (network alone -> with trees; "
              f"each run logged and as a plain recording), threshold {report['threshold']:.3f} -> "
              f"{args.out}/checkpoint.pt")
    else:
        v = report["val"]
        print(f"best epoch {report['best_epoch']}: val accuracy {v['accuracy']:.3f} recall {v['recall']:.3f} "
              f"threshold {report['threshold']:.3f} ({report['seconds']:.0f}s) -> {args.out}/checkpoint.pt")
    return 0


def library_of(args: argparse.Namespace) -> tuple[Any, Any, Any]:
    """(store, catalog or None, root) named by ``--store`` / ``--root`` / ``--catalog``: the root defaults to the
    library holding the store (``ROOT/.rollscope/labels.sqlite``), else the current folder."""
    from pathlib import Path

    from gui_app.core.library.catalog import CATALOG_DIR, Catalog
    from gui_app.core.library.folder import library_catalog_path
    from gui_app.core.store.interface import StoreError, default_path
    from gui_app.core.store.backends import open_store

    if args.root is not None:
        root = Path(args.root)
    elif args.store and Path(args.store).resolve().parent.name == CATALOG_DIR:
        root = Path(args.store).resolve().parent.parent
    else:
        root = Path(".")
    path = Path(args.store) if args.store else default_path(root)
    if not path.is_file():
        raise StoreError(path, "no annotation store here (use --store PATH or --root LIBRARY)")
    store = open_store(path)
    cat_path = Path(args.catalog) if args.catalog else library_catalog_path(root)  # where scan and the app keep it
    catalog = Catalog(cat_path, library_root=root) if cat_path.is_file() else None
    return store, catalog, root


def run_from_labels(args: argparse.Namespace) -> int:
    from gui_app.commands.model import activate, active_or
    from gui_app.core.trajectory.identity import migrate_store
    from gui_app.core.annotation.teaching import labelled_runs
    from models.finetune import FinetuneArgs, finetune, format_report

    store, catalog, root = library_of(args)
    try:
        if catalog is not None:  # labels stored under format ids move to their keys, as every labels command does
            for note in migrate_store(store, catalog).notes():
                print(f"rollscope: note: {note}", file=sys.stderr)
        found = labelled_runs(store, root, catalog)
    finally:
        store.close()
        if catalog is not None:
            catalog.close()
    fargs = FinetuneArgs(out=args.out, base=active_or(args.base) or "", cache=args.cache, minutes=args.minutes,
                         epochs=args.epochs or 12, batch_size=args.batch_size or 16, lr=args.lr or 3e-4,
                         holdout=args.holdout, augment=0.5 if args.augment else 0.0, seed=args.seed,
                         threads=args.threads, library_root=str(root), recipe=args.recipe)
    bars = _Bars(args.json)
    try:
        report = finetune(fargs, found.runs, log=lambda msg: print(msg, file=sys.stderr), progress=bars,
                          skipped=found.skipped)
    finally:
        bars.close()
    refused = None
    if args.activate:
        if report["worse"]:
            refused = f"not activated: {report['verdict']}"
        else:
            activate(args.out)
    report["activated"] = bool(args.activate and refused is None)
    from pathlib import Path

    from models.finetune import REPORT_NAME, write_report

    write_report(Path(args.out) / REPORT_NAME, report)
    if args.json:
        print(json.dumps({k: v for k, v in report.items() if k != "history"}, default=str))
    else:
        print(format_report(report))
        if report["activated"]:
            print(f"active model: {args.out}")
    if refused:
        print(f"rollscope: error: {refused} (`rollscope model use {args.out}` activates it anyway)", file=sys.stderr)
        return 1
    return 0
