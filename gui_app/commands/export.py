"""``rollscope export``: write human labels as Parquet (default), JSONL, CSV, a Hugging Face datasets folder,
ExeVRM-style reward-model training data (``sft``) or Who&When records."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gui_app.commands.labels import add_store_arguments, open_catalog_from, open_store_from

# gui_app.core.annotation.export.FORMATS, spelled out so that building the CLI parser does not import that module
FORMATS = ("parquet", "jsonl", "csv", "hf", "sft", "whowhen")


def add_arguments(p: argparse.ArgumentParser) -> None:
    from gui_app.core.store.record import HARM_VERDICTS  # plain Python: building the parser stays light

    p.add_argument("--format", dest="fmt", choices=FORMATS, default="parquet", help="output format (default parquet)")
    p.add_argument("--out", required=True,
                   help="output file (/dev/stdout prints it), or folder for hf / --split-by-task")
    p.add_argument("--force", action="store_true",
                   help="replace a file or folder at --out that is not an export of this format (the label store, "
                        "the catalog, a library's .rollscope folder and devices are never replaced)")
    add_store_arguments(p)
    p.add_argument("--catalog", default=None,
                   help="catalog to join (instruction, task, outcome, model score; default ROOT/.rollscope/"
                        "catalog.sqlite when present)")
    p.add_argument("--annotator", default=None, help="only this annotator's records")
    p.add_argument("--adjudicated-only", action="store_true", help="only adjudicated (final) records")
    p.add_argument("--taxonomy-label", default=None, help="only records with this label (tax:code, code or group)")
    p.add_argument("--outcome", choices=("success", "failure"), default=None, help="only this human verdict")
    p.add_argument("--harm", choices=HARM_VERDICTS, default=None,
                   help="only this harm verdict (the safety verdict)")
    p.add_argument("--split-by-task", action="store_true", help="train/test split with whole tasks on one side")
    p.add_argument("--test-fraction", type=float, default=0.2, help="share of tasks in the test split")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.core.library.catalog import CATALOG_DIR, CATALOG_NAME
    from gui_app.core.annotation.export import ExportFilter, check_out, export, protected_files, stream_fd
    from gui_app.core.store.interface import default_path

    # --out is checked before the store or the catalog is opened: a refused export leaves every file as it was
    # (opening a store, even read-only, adds its -wal and -shm files).
    protect = protected_files(args.store or default_path(args.root),
                              args.catalog or Path(args.root) / CATALOG_DIR / CATALOG_NAME)
    check_out(args.out, args.fmt == "hf" or args.split_by_task, args.fmt, force=args.force, protect=protect)
    catalog = open_catalog_from(args)
    store = open_store_from(args, must_exist=True, read_only=True)
    try:
        flt = ExportFilter(annotator=args.annotator, adjudicated_only=args.adjudicated_only,
                           taxonomy_label=args.taxonomy_label, outcome=args.outcome, harm=args.harm)
        with bar(None, f"exporting {args.fmt}", args.json) as b:
            res = export(store, args.out, args.fmt, catalog=catalog, filters=flt, split_by_task=args.split_by_task,
                         test_fraction=args.test_fraction, progress=b.update, force=args.force)
    finally:
        store.close()
        if catalog is not None:
            catalog.close()
    # An export printed on stdout keeps stdout to itself: what was written is said on stderr.
    out = sys.stderr if stream_fd(args.out) == 1 else sys.stdout
    if args.json:
        print(json.dumps(res.to_dict()), file=out)
    else:
        split = "" if not res.by_split else " (" + ", ".join(f"{k} {v}" for k, v in res.by_split.items()) + ")"
        print(f"wrote {res.rows} rows{split} as {res.format}: {', '.join(res.paths)}", file=out)
        if res.skipped:
            print(f"skipped {res.skipped} records with no success/failure verdict", file=out)
        for w in res.warnings:
            print(f"warning: {w}", file=out)
    return 0
