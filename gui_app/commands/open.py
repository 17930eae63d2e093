"""``rollscope open [PATH]`` (and plain ``rollscope``): start the desktop app."""

from __future__ import annotations

import argparse

from gui_app.commands.options import add_tasks_root, tasks_roots


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", default=None, help="a folder of trajectories or one trajectory")
    add_tasks_root(p)


def run(args: argparse.Namespace) -> int:
    from gui_app.qt.app import run_app

    return run_app(args.path, tasks_roots(args))  # the app's loads find OSWorld instructions there
