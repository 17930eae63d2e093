"""``rollscope scan DIR [--catalog PATH] [--force] [--json]``: index a tree of trajectories into the catalog.

Units that fail to load are listed (path and error), and what the walk did not recognise is counted with a few
example paths; neither changes the exit status. Only a missing DIR or an unusable catalog ends the command with
status 1.

The catalog is ``DIR/.rollscope/catalog.sqlite``, or, when DIR cannot be written, the one the app keeps for DIR beside
the settings (:func:`gui_app.core.library.folder.library_catalog_path`). A damaged catalog is set aside and rebuilt,
with a
note saying so (its model scores are lost).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gui_app.commands.options import add_tasks_root, tasks_roots

if TYPE_CHECKING:
    from gui_app.core.library.catalog import Catalog


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", help="folder to index (or a single trajectory file or folder)")
    p.add_argument("--catalog", default=None,
                   help="catalog database (default: DIR/.rollscope/catalog.sqlite)")
    p.add_argument("--force", action="store_true", help="re-read every unit, even those unchanged since last scan")
    p.add_argument("--json", action="store_true",
                   help='print one JSON object: {"trajectories", "by_format", "errors", "unrecognised", "seconds", '
                        '"skipped", "without_instruction", ...}')
    add_tasks_root(p)


def without_instruction(catalog: Catalog, root: Path) -> int:
    """How many of the runs under ``root`` that load have no instruction of their own (none of the places their
    format keeps one held it)."""
    under = os.path.abspath(root)
    return sum(1 for r in catalog.query(filters={"has_error": False})
               if not r.instruction.strip() and (r.path == under or r.path.startswith(under.rstrip(os.sep) + os.sep)))


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.core.library.catalog import open_for_scan
    from gui_app.core.errors import CatalogError
    from gui_app.core.library.folder import library_catalog_path
    from gui_app.core.safety import printable, why_missing

    root = Path(args.dir)
    if not root.exists():
        raise CatalogError(f"{root}: {why_missing(root)}; nothing to scan")
    if args.catalog:
        catalog, note = open_for_scan(args.catalog)
    else:
        library = root if root.is_dir() else root.parent
        catalog, note = open_for_scan(library_catalog_path(library, write=True), library)
    if note is not None:
        print(f"rollscope: note: {printable(note)}", file=sys.stderr)

    pbar = bar(None, desc="scanning", json_mode=args.json)

    def on_progress(done: int, total: int | None, path: str) -> None:
        if total is None:  # still walking the tree: count units found
            pbar.set_description("finding", refresh=False)
        elif pbar.total != total:
            pbar.set_description("reading", refresh=False)
            pbar.total = total
            pbar.n = 0
            pbar.refresh()
        pbar.update(done - pbar.n)

    try:
        report = catalog.scan(root, progress=on_progress, force=args.force, tasks_roots=tasks_roots(args))
        without = without_instruction(catalog, root)
    finally:
        pbar.close()
        catalog.close()

    if args.json:
        out = {"trajectories": report.trajectories, "by_format": report.by_format, "errors": report.errors,
               "seconds": round(report.seconds, 3), "skipped": report.skipped, "units": report.units,
               "removed": report.removed, "catalog": str(catalog.db_path), "notes": [note] if note else [],
               "unrecognised": {"count": report.unrecognised, "examples": report.unrecognised_examples},
               "without_instruction": without}
        print(json.dumps(out, ensure_ascii=False))
        return 0
    formats = ", ".join(f"{name} {n}" for name, n in sorted(report.by_format.items())) or "none"
    print(f"{report.trajectories} trajectories in {report.units} units ({formats}) in {report.seconds:.2f} s")
    print(f"  {report.units - report.skipped} read, {report.skipped} unchanged, {report.removed} removed; "
          f"catalog: {printable(catalog.db_path)}")
    if without:
        print(f"  {without} trajectories without an instruction (scoring needs one: --tasks-root, or give one in the "
              f"app)")
    if report.unrecognised:
        print(f"  {report.unrecognised} file(s) or folder(s) not recognised as trajectories, e.g.:")
        for ex in report.unrecognised_examples:  # file names: a name may hold an escape sequence or a newline
            print(f"    {printable(ex)}")
    if report.errors:
        print(f"  {len(report.errors)} unit(s) could not be read:")
        for err in report.errors:
            # Most errors already start with the file they name; prefix the unit only when they do not.
            text = err["error"] if err["error"].startswith(err["path"]) else f"{err['path']}: {err['error']}"
            print(f"    {printable(text)}")
    return 0
