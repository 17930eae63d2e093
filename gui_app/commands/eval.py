"""``rollscope eval DS [--json | --markdown] [--split test]``: the reward model's metrics tables on a dataset;
``rollscope eval --library DIR...``: the same tables on runs in any format whose outcome is known;
``rollscope eval --library DIR --judge NAME [--judge-option K=V]... [--judge NAME ...] [--against labels|outcome]``:
judges against the library's final human labels (the adjudicated label, else the annotators' majority), or against
the environment's outcome: a row per judge (:mod:`gui_app.core.annotation.versus`).

A ``--judge-option`` belongs to the ``--judge`` before it (``--judge rollscope --judge openai-compatible
--judge-option endpoint=URL --judge-option model=NAME``); one given before any ``--judge`` belongs to the first.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from gui_app.commands.options import add_tasks_root, resolved_judge, tasks_roots


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("data", nargs="+",
                   help="dataset folder holding manifest.parquet; with --library, folders of runs in any format")
    p.add_argument("--library", action="store_true",
                   help="score every run under DATA (any format) whose outcome is known: your own runs as the test "
                        "set, a table per folder, by source format and task")
    p.add_argument("--split", action="append", default=None,
                   help="split to report (repeatable; default: test and heldout_task)")
    p.add_argument("--model", default=None,
                   help="weights folder or training run (default: the active model, see `rollscope model`)")
    p.add_argument("--limit", type=int, default=None, help="at most N examples per split (seeded sample)")
    p.add_argument("--cache", default=None,
                   help="read perceptions from this training cache instead of perceiving again (fast; timings "
                        "then cover features and the network only)")
    p.add_argument("--evidence", choices=("both", "log", "video"), default="both",
                   help="judge with the step log's evidence (actions, points, typed text, claims), as plain "
                        "recordings, or both side by side (default; the video-only report is under 'video_only')")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--markdown", action="store_true", help="print the tables as Markdown (the model card)")
    p.add_argument("--report", default=None, help="render an earlier `eval --json` output instead of evaluating")
    # Both go to one list, each value tagged, in the order given: each option then goes to its judge.
    p.add_argument("--judge", dest="judges", action="append", type=lambda v: ("judge", v), default=[], metavar="NAME",
                   help="with --library: compare this judge's verdicts with the library's final human labels "
                        "(repeatable: a row per judge; `rollscope judges` lists them; the built-in model is "
                        "'rollscope', its weights --model)")
    p.add_argument("--judge-option", dest="judges", action="append", type=lambda v: ("option", v),
                   metavar="NAME=VALUE",
                   help="an option of the --judge before it (repeatable), e.g. endpoint=http://localhost:8000/v1")
    p.add_argument("--against", choices=("labels", "outcome"), default=None,
                   help="with --judge: what the verdicts are compared with: the final human labels (default; the "
                        "adjudicated label, else the annotators' majority) or the environment's outcome")
    p.add_argument("--store", default=None,
                   help="with --against labels: the annotation store, a SQLite file or postgresql://USER@HOST:PORT/DB "
                        "(default: DIR/.rollscope/labels.sqlite)")
    add_tasks_root(p)


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.core.errors import TrajectoryFormatError
    from models.evaluate import evaluate, evaluate_library, format_markdown, format_table

    if args.judges:
        return run_judges(args)
    if args.report:
        try:
            report = json.loads(Path(args.report).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise TrajectoryFormatError(args.report, None, f"not a saved `rollscope eval --json` report ({exc})"
                                        ) from exc
        if not isinstance(report, dict) or not isinstance(report.get("splits"), dict):
            raise TrajectoryFormatError(args.report, "splits", "missing: not a `rollscope eval --json` report")
        print(format_markdown(report) if args.markdown else format_table(report))
        return 0
    pbar = bar(None, desc="evaluating", json_mode=args.json)

    def progress(done: int, total: int) -> None:
        pbar.total = total
        pbar.update(done - pbar.n)

    from gui_app.commands.model import active_or

    args.model = active_or(args.model)
    if not args.library and len(args.data) > 1:
        raise TrajectoryFormatError(args.data[1], None, "one dataset at a time (several folders need --library)")

    def one(use_log: bool) -> dict:
        if args.library:
            return evaluate_library(args.data, args.model, progress=progress, use_log=use_log)
        return evaluate(args.data[0], args.model, splits=args.split or None,
                        limit=args.limit, cache=args.cache, progress=progress, use_log=use_log)

    try:
        report = one(args.evidence != "video")
        if args.evidence == "both":
            report["video_only"] = one(False)
    finally:
        pbar.close()
    if args.json:
        print(json.dumps(report))
        return 0
    fmt = format_markdown if args.markdown else format_table
    if "video_only" in report:
        print(("## " if args.markdown else "") + "With the step log's evidence\n")
        print(fmt(report))
        print(("\n## " if args.markdown else "\n") + "Video only\n")
        print(fmt(report["video_only"]))
    else:
        print(fmt(report))
    return 0


def judges_asked(given: list[tuple[str, str]], model: str | None) -> list[tuple[str, str, dict[str, str]]]:
    """``(label, name, options)`` of every ``--judge`` in order, each with its ``--judge-option`` values checked
    (``--model`` is the built-in judge's weights); the label is the name, numbered when a judge is asked twice.

    Raises:
        JudgeError: an unknown judge, an option it does not take, a required one missing, an option not K=V.
    """
    from gui_app.judges.registry import DEFAULT_JUDGE, JudgeError, parse_options

    judges: list[tuple[str, list[str]]] = []
    early: list[str] = []
    for kind, value in given:
        if kind == "judge":
            judges.append((value, early if not judges else []))
        elif judges:
            judges[-1][1].append(value)
        else:
            early.append(value)
    if not judges:
        raise JudgeError("--judge-option without --judge: name the judge it is for")
    out = []
    for i, (name, pairs) in enumerate(judges):
        options = parse_options(pairs)
        if name == DEFAULT_JUDGE and model and "model" not in options:
            options["model"] = model
        same = [n for n, _ in judges]
        label = name if same.count(name) == 1 else f"{name} #{same[:i + 1].count(name)}"
        out.append((label, name, resolved_judge(name, options)))
    return out


def run_judges(args: argparse.Namespace) -> int:
    """``eval --library DIR --judge NAME...``: each judge against the labels (or the outcome), a row per judge."""
    from functools import partial

    from gui_app.commands.progress import bar
    from gui_app.core.annotation.versus import format_table, reference_runs, versus
    from gui_app.core.errors import RollscopeError
    from gui_app.judges.registry import load_judge

    if not args.library:
        raise RollscopeError("--judge compares judges on a library: rollscope eval --library DIR --judge NAME")
    if args.markdown or args.report:
        raise RollscopeError("--judge prints a plain table (or --json); --markdown and --report are for the model's "
                             "tables")
    judges = judges_asked(args.judges, args.model)  # an unknown judge or option is named before anything is read
    against = args.against or "labels"
    if against == "labels" and len(args.data) > 1:
        raise RollscopeError("--against labels reads one library's labels: one DIR at a time")
    root = Path(args.data[0])
    catalog = _library_catalog(root)
    try:
        store = _label_store(root, args.store) if against == "labels" else None
        try:
            references, skipped = reference_runs(against, args.data, store, catalog)
        finally:
            if store is not None:
                store.close()
        instructions = catalog.stored_instructions() if catalog is not None else None
    finally:
        if catalog is not None:
            catalog.close()
    pbar = bar(len(references) * len(judges), desc="judging", json_mode=args.json)

    def progress(done: int, total: int, text: str) -> None:
        pbar.set_description(text, refresh=False)
        pbar.update(done - pbar.n)

    try:
        report = versus(references, [(label, partial(load_judge, name, options)) for label, name, options in judges],
                        against, skipped=skipped, progress=progress,
                        library_root=root if len(args.data) == 1 else None,  # several: each run's own folder
                        tasks_roots=tasks_roots(args), instructions=instructions)
    finally:
        pbar.close()
    print(json.dumps(report.to_json()) if args.json else format_table(report))
    failed = [j for j in report.judges if j.load_error]
    for j in failed:
        print(f"rollscope: error: judge {j.judge} cannot load: {j.load_error}", file=sys.stderr)
    return 1 if failed else 0


def _label_store(root: Any, location: str | None) -> Any:
    """The annotation store at ``location`` (else the library's own file), opened without changing anything."""
    from gui_app.core.store.backends import open_store
    from gui_app.core.store.interface import StoreError, default_path, is_url

    if is_url(location):
        return open_store(location)
    path = Path(location) if location else default_path(root)
    if not path.is_file():
        raise StoreError(path, "no annotation store here: label runs in the app or with `rollscope labels import`, "
                               "name one with --store, or compare with the environment's outcome (--against outcome)")
    return open_store(path, read_only=True)


def _library_catalog(root: Any) -> Any:
    """The library's catalog (maps label keys to runs, holds the instructions given to tasks), or None when it has
    none or it cannot be opened (said on stderr: the labels' keys are then opened from the library folder)."""
    from gui_app.core.errors import CatalogError
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.library.folder import library_catalog_path, readable_file

    path = library_catalog_path(root)
    if not readable_file(path):
        return None
    try:
        return Catalog(path, library_root=root)
    except CatalogError as exc:
        print(f"rollscope: note: the library's catalog is not used: {exc}", file=sys.stderr)
        return None
