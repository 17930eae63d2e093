"""``rollscope agreement [--store PATH] [--json]``: inter-annotator agreement over the annotation store.

Cohen's kappa per pair, Fleiss' kappa and Krippendorff's alpha (nominal) for verdicts and for each taxonomy label
(presence/absence), and root-cause step agreement (exact and within one step).
"""

from __future__ import annotations

import argparse
import json

from gui_app.commands.labels import add_store_arguments, open_store_from


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_store_arguments(p)
    p.add_argument("--label", action="append", default=None, help="only this taxonomy label (repeatable)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from gui_app.core.annotation.agreement import format_report, report

    store = open_store_from(args, must_exist=True, read_only=True)
    try:
        rep = report(store.annotations(), labels=args.label)
    finally:
        store.close()
    print(json.dumps(rep) if args.json else format_report(rep))
    return 0
