"""Options several subcommands share."""

from __future__ import annotations

import argparse
import os

TASKS_ROOT_ENV = "ROLLSCOPE_OSWORLD_TASKS_ROOT"  # read by gui_app.core.formats.osworld


def add_tasks_root(p: argparse.ArgumentParser) -> None:
    """``--tasks-root DIR``: where OSWorld task configs live, for runs whose folder tree does not hold them."""
    p.add_argument("--tasks-root", action="append", default=None, metavar="DIR",
                   help="OSWorld task configs (evaluation_examples/examples/<domain>/<id>.json) for runs whose "
                        "instruction is not above them; repeatable (also $" + TASKS_ROOT_ENV + ")")


def apply_tasks_root(args: argparse.Namespace) -> None:
    """Make ``--tasks-root`` visible to the importers of this process (before any load), after the environment's."""
    roots = getattr(args, "tasks_root", None)
    if not roots:
        return
    existing = [p for p in os.environ.get(TASKS_ROOT_ENV, "").split(os.pathsep) if p]
    os.environ[TASKS_ROOT_ENV] = os.pathsep.join([os.path.abspath(r) for r in roots] + existing)
