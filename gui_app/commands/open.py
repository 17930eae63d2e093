"""``rollscope open [PATH]`` (and plain ``rollscope``): start the desktop app."""

from __future__ import annotations

import argparse

from gui_app.commands.options import add_tasks_root, apply_tasks_root


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("path", nargs="?", default=None, help="a folder of trajectories or one trajectory")
    add_tasks_root(p)


def run(args: argparse.Namespace) -> int:
    apply_tasks_root(args)  # the app's loads run in this process: OSWorld runs find their instructions there
    from gui_app.qt.app import run_app

    return run_app(args.path)
