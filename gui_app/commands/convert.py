"""``rollscope convert PATH --to osworld|atif --out DIR``: write trajectories in another tool's layout."""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", help="a trajectory (any supported format), or a folder of native trajectories")
    p.add_argument("--to", dest="fmt", required=True, choices=["osworld", "atif"],
                   help="osworld: results/pyautogui/screenshot/<model>/<domain>/<id>/ plus "
                        "evaluation_examples/examples/<domain>/<id>.json; atif: <id>/agent/trajectory.json "
                        "(ATIF v1.6) plus <id>/result.json")
    p.add_argument("--out", required=True, help="output root folder")
    p.add_argument("--json", action="store_true", help="print one JSON object (no progress bar)")


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import progress
    from gui_app.training import convert
    from gui_app.core.trajectory import formats
    from gui_app.core.trajectory.formats import native
    from gui_app.training.dataset import find_trajectories

    src = Path(args.path)
    if src.is_dir() and not native.is_native(src) and formats.detect(src) is None:
        paths = find_trajectories(src)
        if not paths:
            raise convert.ConvertError(f"{src}: no trajectory found")
    else:
        paths = [src]
    written = []
    for p in progress(paths, total=len(paths), desc="convert", json_mode=args.json or len(paths) == 1):
        written.append(str(convert.convert(formats.load(str(p)), args.fmt, args.out)))
    if args.json:
        print(json.dumps({"format": args.fmt, "out": args.out, "written": written}))
    else:
        for w in written[:20]:
            print(w)
        if len(written) > 20:
            print(f"... {len(written)} in all")
    return 0
