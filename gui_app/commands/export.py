"""``rollscope export``: write human labels as Parquet (default), JSONL, CSV, a Hugging Face datasets folder,
ExeVRM-style reward-model training data (``sft``) or Who&When records."""

from __future__ import annotations

import argparse
import json

from gui_app.commands.labels import add_store_arguments, open_catalog_from, open_store_from

# gui_app.core.export.FORMATS, spelled out so that building the CLI parser does not import polars
FORMATS = ("parquet", "jsonl", "csv", "hf", "sft", "whowhen")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", dest="fmt", choices=FORMATS, default="parquet", help="output format (default parquet)")
    p.add_argument("--out", required=True, help="output file, or folder for hf / --split-by-task")
    add_store_arguments(p)
    p.add_argument("--catalog", default=None,
                   help="catalog to join (instruction, task, outcome, model score; default ROOT/.rollscope/"
                        "catalog.sqlite when present)")
    p.add_argument("--annotator", default=None, help="only this annotator's records")
    p.add_argument("--adjudicated-only", action="store_true", help="only adjudicated (final) records")
    p.add_argument("--taxonomy-label", default=None, help="only records with this label (tax:code, code or group)")
    p.add_argument("--outcome", choices=("success", "failure"), default=None, help="only this human verdict")
    p.add_argument("--split-by-task", action="store_true", help="train/test split with whole tasks on one side")
    p.add_argument("--test-fraction", type=float, default=0.2, help="share of tasks in the test split")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.core.export import ExportFilter, export

    catalog = open_catalog_from(args)
    store = open_store_from(args, must_exist=True, read_only=True)
    try:
        flt = ExportFilter(annotator=args.annotator, adjudicated_only=args.adjudicated_only,
                           taxonomy_label=args.taxonomy_label, outcome=args.outcome)
        with bar(None, f"exporting {args.fmt}", args.json) as b:
            res = export(store, args.out, args.fmt, catalog=catalog, filters=flt, split_by_task=args.split_by_task,
                         test_fraction=args.test_fraction, progress=b.update)
    finally:
        store.close()
        if catalog is not None:
            catalog.close()
    if args.json:
        print(json.dumps(res.to_dict()))
    else:
        split = "" if not res.by_split else " (" + ", ".join(f"{k} {v}" for k, v in res.by_split.items()) + ")"
        print(f"wrote {res.rows} rows{split} as {res.format}: {', '.join(res.paths)}")
        if res.skipped:
            print(f"skipped {res.skipped} records with no success/failure verdict")
        for w in res.warnings:
            print(f"warning: {w}")
    return 0
