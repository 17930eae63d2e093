"""``rollscope score PATH... [--json]``: score trajectories of any supported format with the reward model.

Exit status: 0 when every trajectory was scored, 1 when at least one could not be (each failure is one
``rollscope: error: ...`` line on stderr, the batch goes on; with ``--json`` its ``{"path", "error"}`` object is on
stdout too). A run without an instruction is such a failure: there is nothing to judge it against.
"""

from __future__ import annotations

import argparse
import json
import sys

from gui_app.commands.options import add_tasks_root, apply_tasks_root


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="trajectories, or folders to search for them (PATH#N selects one of a multi-trajectory "
                        "file)")
    p.add_argument("--json", action="store_true", help="one JSON object per trajectory on stdout")
    p.add_argument("--no-prune", dest="prune", action="store_false", help="feed every token (slower baseline)")
    p.add_argument("--backend", choices=("onnx", "torch"), default="onnx", help="inference backend")
    p.add_argument("--model", default=None, help="weights or run folder (default: the shipped weights)")
    p.add_argument("--catalog", default=None, help="catalog database to record the scores in")
    p.add_argument("--batch-size", type=int, default=8, help="trajectories per forward pass")
    p.add_argument("--root", default=None,
                   help="library root: media may be read from anywhere under it (default: the folder, when one "
                        "folder is given); media outside a trajectory's own folder and the library are not read")
    add_tasks_root(p)


def expand(paths: list[str]) -> list[str]:
    """Each path as given, except a folder that is not itself a trajectory: the trajectories found under it.

    A folder with none stays as it is, so it gets its own error line.
    """
    from pathlib import Path

    from gui_app.core.formats import detect, find_units, split_selector

    out: list[str] = []
    for raw in paths:
        path, sel = split_selector(raw)
        if sel is None and Path(path).is_dir() and detect(path) is None:
            out += [str(u) for u, _ in find_units(path)] or [raw]
        else:
            out.append(raw)
    return out


def library_root(root: str | None, paths: list[str]) -> str | None:
    """``--root``, else the one folder given (a library scored whole), else None (each trajectory's own folder)."""
    from pathlib import Path

    if root is not None:
        return root
    return paths[0] if len(paths) == 1 and Path(paths[0]).is_dir() else None


def run(args: argparse.Namespace) -> int:
    apply_tasks_root(args)
    from gui_app.commands.progress import bar
    from gui_app.core.scoring import score_many
    from models.runtime import RewardModel

    model = RewardModel.load(args.model, backend=args.backend)
    catalog = None
    if args.catalog:
        from gui_app.core.catalog import Catalog

        catalog = Catalog(args.catalog)
    paths = expand(args.paths)
    pbar = bar(len(paths), desc="scoring", json_mode=args.json)
    try:
        outcomes = score_many(paths, model, catalog=catalog, prune=args.prune, batch_size=args.batch_size,
                              progress=lambda done, total: pbar.update(done - pbar.n),
                              library_root=library_root(args.root, args.paths))
    finally:
        pbar.close()
        if catalog is not None:
            catalog.close()
    failed = 0
    for oc in outcomes:
        if oc.result is None:
            # Errors name their file already; prefix the item only when they do not.
            text = oc.error if (oc.error or "").startswith(oc.key) else f"{oc.key}: {oc.error}"
            print(f"rollscope: error: {text}", file=sys.stderr)
        if args.json:
            print(json.dumps(oc.to_json(), ensure_ascii=False))
        elif oc.result is None:
            pass
        else:
            r = oc.result
            verdict = "success" if r.success else f"failure (first error at step {r.first_error_step})"
            p = "?" if r.p_success is None else f"{r.p_success:.3f}"
            ms = "" if r.seconds is None else f"; {r.seconds * 1000:.0f} ms"
            print(f"{oc.key}: p_success={p} -> {verdict}; tokens {r.tokens_kept}/{r.tokens_total}{ms}")
            for w in r.warnings:
                print(f"  note: {w}")
        failed += oc.result is None
    return 1 if failed else 0
