"""``rollscope eval DS [--json | --markdown] [--split test]``: the reward model's metrics tables on a dataset;
``rollscope eval --library DIR...``: the same tables on runs in any format whose outcome is known."""

from __future__ import annotations

import argparse
import json


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


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gui_app.commands.progress import bar
    from gui_app.core.errors import TrajectoryFormatError
    from models.evaluate import evaluate, evaluate_library, format_markdown, format_table

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
        return evaluate(args.data[0], args.model, splits=tuple(args.split or ("test", "heldout_task")),
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
