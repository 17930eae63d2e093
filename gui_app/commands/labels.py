"""``rollscope labels ...``: import labels, list and show records, the audit trail, overrides, adjudication, and move
a whole store between SQLite and PostgreSQL.

``rollscope labels import FILE --annotator NAME [--store PATH]`` reads CSV / JSONL / Parquet (the columns of
``rollscope export``, or AgentDebug / Who&When names) into the annotation store. ``--store`` takes a SQLite file or a
team's ``postgresql://USER@HOST:PORT/DB`` on every command that reads or writes labels.

Labels are keyed by the library key (the trajectory's path within the library, see
:mod:`gui_app.core.trajectory.identity`). With the library's catalog (``ROOT/.rollscope/catalog.sqlite``, or
``--catalog``),
every command takes a trajectory as its key, its path or its own id where that id is unambiguous; an ambiguous
id is an error naming the trajectories that share it. Labels stored before keys existed (by format ids) move to
their keys when the command opens the store (a team's server store too: keys are paths within the library, the same
on every machine that mounts it at the same place); ``labels rekey OLD NEW`` moves those whose id was ambiguous.

``rollscope labels migrate --from SOURCE --to TARGET`` copies every record, audit entry, override, adjudication,
queue and assignment into an empty store (either direction), in one transaction, and checks the counts at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


# Actions that only read the store: they open it read-only.
READ_ONLY = ("list", "show", "audit", "final")

STORE_HELP = ("annotation store: a SQLite file, or a team's server as postgresql://USER@HOST:PORT/DB "
              "(default: ROOT/.rollscope/labels.sqlite)")


def add_store_arguments(p: argparse.ArgumentParser) -> None:
    """``--store`` / ``--root``, shared by every command that reads the annotation store."""
    p.add_argument("--store", default=None, help=STORE_HELP)
    p.add_argument("--root", default=".", help="library root, for the default store and catalog (default: .)")


def open_store_at(location: str | None, root: str = ".", must_exist: bool = False, read_only: bool = False) -> Any:
    """The store at ``location`` (a SQLite file or a ``postgresql://`` URL), else the library's under ``root``;
    ``read_only``: a SQLite file is opened without creating or changing anything (it must exist).

    Raises:
        StoreError: ``must_exist`` or ``read_only`` and there is no SQLite file there; or it cannot be opened
            (StoreUnavailable: its server cannot be reached).
    """
    from gui_app.core.store.interface import StoreError, default_path, is_url
    from gui_app.core.store.backends import open_store

    if is_url(location):
        return open_store(location)  # a server's database: created tables and all on first use
    path = Path(location) if location else default_path(root)
    if (must_exist or read_only) and not path.exists():
        raise StoreError(path, "no annotation store here (use --store PATH or --root LIBRARY)")
    return open_store(path, read_only=read_only)


def open_catalog_from(args: argparse.Namespace) -> Any:
    """The library's catalog (to resolve trajectory ids), or None when there is none.

    The default one (``ROOT/.rollscope/catalog.sqlite``) is optional: when it cannot be opened (a read-only library
    whose catalog was never brought to this schema), the command goes on without it and says so. One named by
    ``--catalog`` must open.
    """
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.errors import CatalogError
    from gui_app.core.library.folder import library_catalog_path, readable_file

    if getattr(args, "catalog", None):
        return Catalog(args.catalog, library_root=args.root)
    path = library_catalog_path(args.root)  # the app's rule: beside the settings for a read-only library
    if not readable_file(path):
        return None
    try:
        return Catalog(path, library_root=args.root)
    except CatalogError as exc:
        print(f"rollscope: note: the library's catalog is not used: {exc}", file=sys.stderr)
        return None


def open_store_from(args: argparse.Namespace, must_exist: bool = False, read_only: bool = False) -> Any:
    """The store named by ``--store`` / ``--root``; ``read_only`` for commands that only read it (they then work
    on a SQLite store they may not write, and never create or change a file)."""
    return open_store_at(args.store, args.root, must_exist, read_only)


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="labels_command", metavar="ACTION", required=True)
    imp = sub.add_parser("import", help="read labels from CSV / JSONL / Parquet")
    imp.add_argument("file", help="labels file (.csv, .jsonl or .parquet)")
    imp.add_argument("--annotator", required=True, help="whose labels these are")
    ls = sub.add_parser("list", help="list records")
    ls.add_argument("--annotator", default=None)
    ls.add_argument("--trajectory", default=None)
    show = sub.add_parser("show", help="every record of one trajectory, side by side, with overrides")
    show.add_argument("trajectory_id")
    au = sub.add_parser("audit", help="the change log (who, when, field, old -> new)")
    au.add_argument("trajectory_id", nargs="?", default=None)
    au.add_argument("--annotator", default=None)
    ov = sub.add_parser("override", help="override the automatic outcome of a trajectory, with who and why")
    ov.add_argument("trajectory_id")
    ov.add_argument("--by", required=True, help="who overrides")
    grp = ov.add_mutually_exclusive_group(required=True)
    grp.add_argument("--success", dest="success", action="store_true", default=None)
    grp.add_argument("--failure", dest="success", action="store_false")
    ov.add_argument("--reason", required=True)
    ov.add_argument("--score", type=float, default=None, help="the new score, if any")
    adj = sub.add_parser("adjudicate", help="store the final label for a trajectory, copied from one annotator")
    adj.add_argument("trajectory_id")
    adj.add_argument("--by", required=True, help="the adjudicator")
    adj.add_argument("--from", dest="source", required=True, help="the annotator whose record becomes final")
    sub.add_parser("final", help="final labels per trajectory (adjudicated, else majority)")
    rk = sub.add_parser("rekey", help="move every label of a trajectory id to another (a library key)")
    rk.add_argument("old", help="the id the labels are stored under")
    rk.add_argument("new", help="the trajectory they belong to: its library key, path or unambiguous id")
    tx = sub.add_parser("taxonomy", help="list the bundled taxonomies, or check and show one (name or YAML/JSON file)")
    tx.add_argument("taxonomy", nargs="?", default=None)
    mg = sub.add_parser("migrate", help="copy a whole store into an empty one (SQLite <-> PostgreSQL), counts checked")
    mg.add_argument("--from", dest="source", default=None,
                    help="the store to copy: a SQLite file or postgresql://... (default: --store, else ROOT's)")
    mg.add_argument("--to", dest="target", required=True,
                    help="the empty store to copy into: a SQLite file (created) or postgresql://USER@HOST:PORT/DB")
    for name, sp in sub.choices.items():
        add_store_arguments(sp)
        if name != "migrate":  # a copy moves the store as it is: no trajectory is named, nothing is rekeyed
            sp.add_argument("--catalog", default=None, help="the library's catalog, to name trajectories by id "
                                                            "(default: ROOT/.rollscope/catalog.sqlite)")
        sp.add_argument("--json", action="store_true", help="print JSON")


def _taxonomy(args: argparse.Namespace) -> int:
    from gui_app.core.annotation import taxonomy

    if args.taxonomy is None:
        found = {name: str(path) for name, path in taxonomy.bundled().items()}
        _print(found, args.json, "\n".join(f"{n}\t{p}" for n, p in found.items()))
        return 0
    tax = taxonomy.get(args.taxonomy)  # TaxonomyError names file, line and field
    rows = [{"id": tax.label_id(lab.code), "name": lab.name, "key": lab.key, "group": lab.parent}
            for lab in tax.leaves()]
    _print({"name": tax.name, "version": tax.version, "labels": rows}, args.json,
           "\n".join([f"{tax.title} ({tax.name} v{tax.version}): {len(rows)} labels"] +
                     [f"  [{r['key'] or '-':>2}] {r['id']}  {r['name']}" for r in rows]))
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.core.store.interface import TABLES
    from gui_app.core.store.backends import copy_store

    source = open_store_at(args.source or args.store, args.root, must_exist=True)
    try:
        target = open_store_at(args.target)
        try:
            with bar(sum(source.counts()[t] for t in TABLES), "copying", args.json) as b:
                report = copy_store(source, target, progress=b.update)
        finally:
            target.close()
    finally:
        source.close()
    rows = [f"  {name:<26} {n['source']:>10,} -> {n['target']:>10,}" for name, n in report["counts"].items()]
    _print(report, args.json, "\n".join([f"copied {report['from']} -> {report['to']}; every count matches:", *rows]))
    return 0


def _harm_text(a: Any) -> str:
    """The safety verdict of record ``a`` for ``labels show``, or '' when it has none."""
    if a.harm_verdict is None and a.first_harmful_step is None and not a.harm_types and a.harm_category is None:
        return ""
    return (f" harm={a.harm_verdict} harm_step={a.first_harmful_step} harm_category={a.harm_category} "
            f"harm_types={','.join(a.harm_types)}")


def printable_fields(*fields: Any) -> str:
    """One tab-separated line of fields, each escaped (:func:`gui_app.core.safety.printable`): a field holding a tab,
    a newline or an escape sequence cannot add a column or a line, or drive the terminal."""
    from gui_app.core.safety import printable

    return "\t".join(printable(f) for f in fields)


def _print(obj: Any, as_json: bool, text: str) -> None:
    print(json.dumps(obj, ensure_ascii=False, default=str) if as_json else text)


def run(args: argparse.Namespace) -> int:
    from gui_app.commands.progress import bar
    from gui_app.core.store.interface import StoreError

    cmd = args.labels_command
    if cmd == "taxonomy":
        return _taxonomy(args)
    if cmd == "migrate":
        return _migrate(args)
    from gui_app.core.trajectory.identity import migrate_store, resolve

    store = open_store_from(args, must_exist=cmd != "import", read_only=cmd in READ_ONLY)
    catalog = open_catalog_from(args)
    failed = False
    try:
        if catalog is not None and not store.read_only:  # a read-only command changes nothing, not even keys
            for note in migrate_store(store, catalog).notes():
                print(f"rollscope: note: {note}", file=sys.stderr)

        def tid(ident: str) -> str:
            return resolve(ident, catalog)  # AmbiguousIdError: one line naming the candidates, exit 1

        if cmd == "import":
            from gui_app.core.annotation.export import import_labels

            with bar(None, "importing labels", args.json) as b:
                res = import_labels(args.file, store, args.annotator, progress=b.update, catalog=catalog)
            # The first notes and skipped rows word for word, then how many more: never a line per row.
            for kind, lines, total in (("note", res.notes, res.notes_total), ("error", res.skipped, res.skipped_total)):
                for line in lines:
                    print(f"rollscope: {kind}: {line}", file=sys.stderr)
                if total > len(lines):
                    print(f"rollscope: {kind}: ... and {total - len(lines):,} more", file=sys.stderr)
            failed = bool(res.skipped_total)
            _print(res.to_dict(), args.json, f"imported {res.records:,} records from {res.path} as "
                                             f"{args.annotator!r} ({res.changes:,} field changes)"
                                             + (f"; {res.notes_total:,} notes" if res.notes_total else "")
                                             + (f"; {res.skipped_total:,} not imported" if res.skipped_total else ""))
        elif cmd == "rekey":
            new = tid(args.new)
            moved, conflicts = store.rekey({args.old: new}, actor="rollscope labels rekey")
            if conflicts:
                raise StoreError(store.location, f"{new} already has labels of the same annotators as {args.old!r} "
                                                 f"(or is in the same queue); nothing was moved")
            _print({"moved": moved}, args.json, f"{args.old} -> {new}" if moved else "nothing to move")
        elif cmd == "list":
            recs = store.annotations(tid(args.trajectory) if args.trajectory else None, args.annotator)
            lines = [printable_fields(a.trajectory_id, a.annotator, a.role, a.verdict or "-",
                                      f"step={'-' if a.root_cause_step is None else a.root_cause_step}",
                                      ",".join(a.labels)) for a in recs]
            _print([a.to_dict() for a in recs], args.json, "\n".join(lines) or "(no records)")
        elif cmd == "show":
            rv = store.review(tid(args.trajectory_id))
            obj = {"trajectory_id": rv.trajectory_id,
                   "annotations": {k: v.to_dict() for k, v in rv.annotations.items()},
                   "final": rv.final.to_dict() if rv.final else None, "differing": rv.differing,
                   "overrides": [o.__dict__ for o in rv.overrides]}
            lines = [f"{rv.trajectory_id}: {len(rv.annotations)} annotators; differ on: "
                     f"{', '.join(rv.differing) or 'nothing'}"]
            for who, a in rv.annotations.items():
                lines.append(f"  {who}: {a.verdict} step={a.root_cause_step} labels={','.join(a.labels)}"
                             + _harm_text(a))
            if rv.final:
                lines.append(f"  final ({rv.final.annotator}): {rv.final.verdict} step={rv.final.root_cause_step} "
                             f"labels={','.join(rv.final.labels)}" + _harm_text(rv.final))
            for o in rv.overrides:
                lines.append(f"  override by {o.actor}: success={o.success} ({o.reason})")
            # each line escaped whole: ids, names, labels and reasons come from files and other people
            _print(obj, args.json, "\n".join(printable_fields(line) for line in lines))
        elif cmd == "audit":
            log = store.audit(tid(args.trajectory_id) if args.trajectory_id else None, args.annotator)
            _print([e.__dict__ for e in log], args.json, "\n".join(
                printable_fields(f"{e.at:.3f}", e.actor, f"{e.trajectory_id}/{e.annotator}/{e.role}",
                                 f"{e.field}: {json.dumps(e.old)} -> {json.dumps(e.new)}") for e in log)
                or "(no changes)")
        elif cmd == "override":
            o = store.override_score(tid(args.trajectory_id), args.by, args.success, args.reason, score=args.score)
            _print(o.__dict__, args.json, f"{o.trajectory_id}: outcome set to success={o.success} by {o.actor}")
        elif cmd == "adjudicate":
            f = store.adjudicate(tid(args.trajectory_id), args.by, args.source)
            _print(f.to_dict(), args.json, f"{f.trajectory_id}: final label from {args.source} by {args.by}")
        elif cmd == "final":
            fl = store.final_labels()
            _print(fl, args.json, "\n".join(f"{t}\t{v['source']}\t{v['verdict']}\tstep={v['root_cause_step']}\t"
                                            f"{','.join(v['labels'])}" for t, v in fl.items()) or "(no labels)")
    finally:
        store.close()
        if catalog is not None:
            catalog.close()
    return 1 if failed else 0
