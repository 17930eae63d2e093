"""Options several subcommands share."""

from __future__ import annotations

import argparse
import os


def add_tasks_root(p: argparse.ArgumentParser) -> None:
    """``--tasks-root DIR``: where OSWorld task configs live, for runs whose folder tree does not hold them."""
    p.add_argument("--tasks-root", action="append", default=None, metavar="DIR",
                   help="OSWorld task configs (evaluation_examples/examples/<domain>/<id>.json) for runs whose "
                        "instruction is not above them; repeatable (also $ROLLSCOPE_OSWORLD_TASKS_ROOT)")


def tasks_roots(args: argparse.Namespace) -> list[str] | None:
    """The OSWorld task roots this command's loads are given (``tasks_roots=`` of
    :func:`gui_app.core.trajectory.formats.load`
    and the functions over it): ``--tasks-root`` (absolute), then the user's (``$ROLLSCOPE_OSWORLD_TASKS_ROOT``).
    None when the option is not given: each load then takes the user's own."""
    roots = getattr(args, "tasks_root", None)
    if not roots:
        return None
    from gui_app.core.trajectory.formats.osworld import default_tasks_roots

    return [os.path.abspath(r) for r in roots] + [str(p) for p in default_tasks_roots()]
