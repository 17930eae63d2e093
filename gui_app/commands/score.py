"""``rollscope score PATH... [--json] [--ray [ADDRESS]] [--judge NAME [OPTIONS]]``: score trajectories of any
supported format with the reward model, or another judge, here or on a Ray cluster.

``--judge`` picks the judge (``rollscope judges`` lists them; default: the built-in model) and ``--judge-option
NAME=VALUE`` sets its options; ``--model``, ``--backend``, ``--endpoint`` and ``--weights`` are flags for the common
ones. Every judge's scores go to the catalog under its own name (``Score.model``), beside the others'.

Each trajectory's line (or JSON object) is printed as soon as it is scored, with a progress bar on stderr. With
``--ray`` the trajectories are fanned out to Ray workers that each load the model once
(:mod:`gui_app.core.scoring.cluster`):
without ADDRESS on a Ray instance started on this machine, with one (``auto``, ``HOST:PORT``, ``ray://HOST:10001``)
on that cluster; the lines are the same, in the order they finish, and scores go to this machine's ``--catalog``.

Exit status: 0 when every trajectory was scored, 1 when at least one could not be (each failure is one
``rollscope: error: ...`` line on stderr, the batch goes on; with ``--json`` its ``{"path", "error"}`` object is on
stdout too). A batch of several ends with one line that counts them and names the log file listing each with the
reason (``logs/score-<time>.log`` in the library's ``.rollscope`` folder, else beside the settings).

A run without an instruction is judged against the one given to its task in the app (stored in the library's
catalog: ``--catalog``, else the catalog of the library the paths lie in), or ``--instruction TEXT``; with neither it
is not scored: there is nothing to judge it against.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from pathlib import Path

from gui_app.commands.options import add_judge, add_tasks_root, judge_choice, tasks_roots
from gui_app.core.safety import printable

if TYPE_CHECKING:
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.scoring.batch import ScoreOutcome
    from gui_app.core.scoring.instructions import Instructions


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help="trajectories, or folders to search for them (PATH#N selects one of a multi-trajectory "
                        "file)")
    p.add_argument("--json", action="store_true", help="one JSON object per trajectory on stdout")
    p.add_argument("--no-prune", dest="prune", action="store_false", help="feed every token (slower baseline)")
    add_judge(p, "the built-in model's weights or run folder (default: the active model, see `rollscope model`); "
                 "for --judge openai-compatible, the model name the server knows")
    p.add_argument("--catalog", default=None, help="catalog database to record the scores in")
    p.add_argument("--batch-size", type=int, default=8,
                   help="trajectories per forward pass (an endpoint judge sends a batch's requests concurrently)")
    p.add_argument("--root", default=None,
                   help="library root: media may be read from anywhere under it (default: the folder, when one "
                        "folder is given); media outside a trajectory's own folder and the library are not read")
    p.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                   help="score on Ray workers (pip install 'rollscope[cluster]'): a local Ray instance without "
                        "ADDRESS, else the cluster at ADDRESS (auto, HOST:PORT, ray://HOST:10001); media must be "
                        "at the same path on every node. Put it after the paths, or write --ray=ADDRESS")
    p.add_argument("--workers", type=int, default=None, help="Ray workers (default: one per CPU of the cluster)")
    p.add_argument("--instruction", default=None, metavar="TEXT",
                   help="judge runs that have no instruction of their own against TEXT (before any instruction "
                        "given to their task in the app); runs with their own keep it")
    add_tasks_root(p)


def expand(paths: list[str]) -> list[str]:
    """Each path as given, except a folder that is not itself a trajectory: the trajectories found under it.

    A folder with none stays as it is, so it gets its own error line.
    """
    from gui_app.core.trajectory.formats import detect, find_units, split_selector

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
    if root is not None:
        return root
    return paths[0] if len(paths) == 1 and Path(paths[0]).is_dir() else None


def run(args: argparse.Namespace) -> int:
    from functools import partial

    from gui_app.commands.progress import bar
    from gui_app.core.library.folder import find_library_catalog
    from gui_app.core.scoring.batch import not_scored, summary
    from gui_app.judges.registry import load_judge

    judge, options = judge_choice(args)  # an unknown judge or option is named before anything is read
    if args.ray is not None and args.ray != "local" and Path(args.ray).exists():
        args.paths.append(args.ray)  # `--ray PATH`: argparse took a path for the address; it is a path
        args.ray = "local"
    catalog = None
    if args.catalog:
        from gui_app.core.library.catalog import Catalog
        from gui_app.core.errors import RollscopeError

        catalog = Catalog(args.catalog)
        try:
            catalog.check()  # a damaged catalog is named now, not after the scoring it would lose
        except RollscopeError:
            catalog.close()
            raise
    paths = expand(args.paths)  # the catalog turns each into the trajectory's key (Catalog.score_key)
    pbar = bar(len(paths), desc="scoring", json_mode=args.json)
    outcomes: list[ScoreOutcome] = []

    def show(oc: ScoreOutcome) -> None:
        outcomes.append(oc)
        pbar.clear()
        print_outcome(oc, args.json)

    root = library_root(args.root, args.paths)
    try:
        found = None if catalog is not None else find_library_catalog(root or args.paths[0])
        instructions = given_instructions(catalog, found, args.instruction)
        if args.ray is not None:
            from gui_app.core.scoring.cluster import score_on_ray

            factory = partial(load_judge, judge, options)
            stats = score_on_ray(paths, factory, address=args.ray, workers=args.workers, catalog=catalog,
                                 prune=args.prune, chunk=args.batch_size, on_outcome=show, library_root=root,
                                 tasks_roots=tasks_roots(args), instructions=instructions,
                                 progress=lambda done, total: pbar.update(done - pbar.n))
            if stats.retried and not args.json:
                print(f"note: {stats.retried} trajectories were sent again after {stats.replaced} Ray worker(s) "
                      "were lost", file=sys.stderr)
        else:
            from gui_app.core.scoring.batch import score_many

            model = load_judge(judge, options)
            for note in getattr(model, "notes", []):  # what the judge wants said once (ExeVRM on a CPU)
                print(f"rollscope: warning: {printable(note)}", file=sys.stderr, flush=True)
            score_many(paths, model, catalog=catalog, prune=args.prune, batch_size=args.batch_size, on_outcome=show,
                       progress=lambda done, total: pbar.update(done - pbar.n), library_root=root,
                       tasks_roots=tasks_roots(args), instructions=instructions)
    finally:
        pbar.close()
        if catalog is not None:
            catalog.close()
    failed = not_scored(outcomes)
    if failed and len(outcomes) > 1:  # one run's error line says it all; a batch's are counted and logged
        print(f"rollscope: {len(failed):,} of {len(outcomes):,} trajectories not scored ({summary(outcomes)}); "
              f"{log_written(outcomes, args.catalog or found)}", file=sys.stderr, flush=True)
    return 1 if failed else 0


def given_instructions(catalog: Catalog | None, found: Path | None, text: str | None) -> Instructions:
    """What runs without an instruction are judged against: ``--instruction``, then those given to their tasks in
    the app, read from ``catalog`` (``--catalog``) or the library's catalog ``found`` (read, not written)."""
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.scoring.instructions import Instructions

    stored = Instructions()
    if catalog is not None:
        stored = catalog.stored_instructions()
    elif found is not None:
        with Catalog(found) as library:
            stored = library.stored_instructions()
    return Instructions(stored.stored, text)


def log_written(outcomes: list[ScoreOutcome], catalog_path: str | Path | None) -> str:
    """Write the log of the runs not scored and say where (or why it could not be written)."""
    from gui_app.core.library.folder import score_log_folder
    from gui_app.core.scoring.batch import write_log

    folder = score_log_folder(catalog_path)
    try:
        path = write_log(outcomes, folder, "rollscope score")
    except OSError as exc:
        return f"the log naming each could not be written to {printable(folder)}: {exc.strerror or exc}"
    return f"each is named, with the reason, in {printable(path)}"


def print_outcome(oc: ScoreOutcome, as_json: bool) -> None:
    """One trajectory's output, the same for local and Ray scoring: a failure is one ``rollscope: error:`` line on
    stderr (and its ``{"path", "error"}`` object on stdout with ``--json``), a success its JSON object or a
    sentence."""
    if oc.result is None:
        # Errors name their file already; prefix the item only when they do not.
        text = oc.error if (oc.error or "").startswith(oc.key) else f"{oc.key}: {oc.error}"
        print(f"rollscope: error: {printable(text)}", file=sys.stderr, flush=True)
    if as_json:
        print(json.dumps(oc.to_json(), ensure_ascii=False), flush=True)
    elif oc.result is not None:
        r = oc.result
        verdict = "success" if r.success else f"failure (first error at step {r.first_error_step})"
        if r.unknown:
            verdict = f"unknown (the model would say {verdict})"
        p = "?" if r.p_success is None else f"{r.p_success:.3f}"
        ms = "" if r.seconds is None else f"; {r.seconds * 1000:.0f} ms"
        tokens = f"; tokens {r.tokens_kept}/{r.tokens_total}"
        if r.usage:  # a judge that reads tokens: what it read and wrote (nothing this time when cached)
            tokens = (f"; tokens {r.usage.get('prompt_tokens', '?')} in, {r.usage.get('completion_tokens', '?')} out"
                      + (" (cached)" if r.usage.get("cached") else ""))
        elif r.tokens_total is None:
            tokens = ""
        print(f"{printable(oc.key)}: p_success={p} -> {verdict}{tokens}{ms}", flush=True)
        if r.safety is not None:  # the harm verdict beside success, in one line (--json has its evidence too)
            print(f"  harm: {printable(r.safety.describe())}", flush=True)
        for w in r.warnings:
            print(f"  note: {printable(w)}", flush=True)
