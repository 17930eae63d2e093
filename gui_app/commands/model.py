"""``rollscope model [show | use PATH | reset]``: which reward model scores when none is named (the active model).

The active model is the ``model`` setting (:mod:`gui_app.core.settings`; ``ROLLSCOPE_MODEL`` overrides it for one
run): a weights folder, such as the run folder of ``rollscope train --from-labels``. Unset, it is the shipped
weights. ``rollscope score``, ``eval`` and the app use it when no ``--model`` is given.
"""

from __future__ import annotations

import argparse
import json
import sys


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="model_command", metavar="ACTION")
    sub.add_parser("show", help="the active model (the default action)")
    use = sub.add_parser("use", help="make a weights folder (a fine-tuned run) the active model")
    use.add_argument("path")
    sub.add_parser("reset", help="go back to the shipped weights")
    for sp in (p, *sub.choices.values()):
        sp.add_argument("--json", action="store_true", help="print JSON")


def active_or(named: str | None) -> str | None:
    """The model a command uses: the one it was given, else the active one (None: the shipped weights)."""
    from gui_app.core.settings import active_model

    return named or active_model()


def describe(path: str | None) -> dict[str, object]:
    """What the active model is: its folder, whether it is the shipped one, and its fine-tune report's verdict."""
    from pathlib import Path

    from models.runtime import WEIGHTS_DIR

    folder = Path(path) if path else WEIGHTS_DIR
    out: dict[str, object] = {"model": str(folder), "shipped": path is None, "exists": folder.is_dir()}
    report = folder / "report.json"
    if report.is_file():
        try:
            rep = json.loads(report.read_text())
            out.update({"base": rep.get("base_model"), "n_train": rep.get("n_train"), "verdict": rep.get("verdict")})
        except (OSError, ValueError):
            out["report"] = f"{report}: unreadable"
    return out


def activate(path: str | None) -> None:
    """Set the active model (None: the shipped weights), after checking that it loads.

    Raises:
        ModelLoadError: ``path`` is not a weights folder this code can use.
        RollscopeError: the setting could not be saved.
    """
    from gui_app.core.errors import RollscopeError
    from gui_app.core.settings import set_active_model

    if path is not None:
        from models.runtime import RewardModel

        RewardModel.load(path)
    warnings = set_active_model(path)
    if warnings:
        raise RollscopeError("; ".join(warnings))


def run(args: argparse.Namespace) -> int:
    from gui_app.core.settings import active_model

    cmd = args.model_command or "show"
    if cmd == "use":
        activate(args.path)
    elif cmd == "reset":
        activate(None)
    info = describe(active_model())
    if args.json:
        print(json.dumps(info))
    else:
        what = "the shipped weights" if info["shipped"] else "a chosen model"
        print(f"active model: {info['model']} ({what})")
        if info.get("verdict"):
            print(f"  fine-tuned from {info.get('base')} on {info.get('n_train')} labels: {info['verdict']}")
        if not info["exists"]:
            print(f"rollscope: warning: {info['model']} does not exist; `rollscope model reset` goes back to the "
                  "shipped weights", file=sys.stderr)
    return 0
