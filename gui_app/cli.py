"""The ``rollscope`` command: one entry point, thin subcommands over the core and the models.

Each subcommand lives in ``gui_app/commands/<name>.py`` with ``add_arguments(parser)`` and ``run(args) -> int``;
a module is imported only to build the parser, and its heavy imports happen inside ``run``. Domain errors
(:class:`RollscopeError`) end the command with exit status 1 and one line on stderr. So does anything else, as an
"internal error" line asking for a report (``ROLLSCOPE_DEBUG=1`` shows the traceback): whatever a file holds, the user
gets one line, never a traceback. Output cut short by the reader (``rollscope inspect X --json | head``) ends
quietly with status 141, as a command killed by SIGPIPE does.
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import sys

from gui_app import __version__
from gui_app.core.errors import RollscopeError, clip
from gui_app.core.safety import printable

# name -> (module, one-line help). Plain `rollscope` with no subcommand opens the GUI.
COMMANDS: dict[str, tuple[str, str]] = {
    "open": ("gui_app.commands.open", "open the desktop app (optionally on a folder or trajectory)"),
    "inspect": ("gui_app.commands.inspect", "load one trajectory of any supported format and describe it"),
    "scan": ("gui_app.commands.scan", "index a tree of trajectories into the catalog"),
    "convert": ("gui_app.commands.convert", "write trajectories as OSWorld result folders or ATIF (Harbor) trials"),
    "collect": ("gui_app.commands.collect",
                "record real trajectories (MiniWoB++ in Chromium, desktop apps under Xvfb)"),
    "dataset": ("gui_app.commands.dataset", "build train/val/test splits and a manifest from recorded trajectories"),
    "train": ("gui_app.commands.train", "train the video reward model on a recorded dataset, or fine-tune it on "
                                        "the library's labels (--from-labels)"),
    "train-harm": ("gui_app.commands.train_harm", "train the harm judge beside the reward model on runs whose harm "
                                                  "is known (the desktop recorder's threat scenarios)"),
    "export-onnx": ("gui_app.commands.export_onnx", "export a trained run to ONNX (checked against torch)"),
    "score": ("gui_app.commands.score", "score trajectories with the video reward model"),
    "model": ("gui_app.commands.model", "the active reward model: show it, use a fine-tuned one, reset"),
    "judges": ("gui_app.commands.judges", "the judges installed (the built-in model, endpoints, ExeVRM) and their "
                                          "options"),
    "eval": ("gui_app.commands.eval", "evaluate the reward model on a dataset (the full metrics table)"),
    "labels": ("gui_app.commands.labels", "import, list, audit, override and adjudicate human labels"),
    "queue": ("gui_app.commands.queue", "labelling queues: order items, assign k annotators each, progress"),
    "agreement": ("gui_app.commands.agreement", "inter-annotator agreement (Cohen, Fleiss, Krippendorff, steps)"),
    "export": ("gui_app.commands.export", "export human labels (parquet, jsonl, csv, hf, sft, whowhen)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rollscope", description="Inspect, score and annotate agent trajectories.")
    parser.add_argument("--version", action="version", version=f"rollscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in COMMANDS.items():
        p = sub.add_parser(name, help=help_, description=help_)
        mod = importlib.import_module(module)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            # Text from a file may hold what the terminal's encoding cannot (a lone surrogate from a JSON escape):
            # shown escaped, never an encoding error at the last step.
            stream.reconfigure(errors="backslashreplace")
    if not argv or (argv[0] not in COMMANDS and not argv[0].startswith("-")):
        argv = ["open", *argv]  # plain `rollscope [PATH]` opens the GUI
    args = build_parser().parse_args(argv)
    try:
        status = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, inside the handlers below, not at interpreter exit
        return status
    except BrokenPipeError:
        return _reader_gone()
    except RollscopeError as exc:
        print(f"rollscope: error: {printable(exc)}", file=sys.stderr)  # it may quote a file: never raw
        return 1
    except KeyboardInterrupt:
        print("rollscope: interrupted", file=sys.stderr)
        return 130
    except MemoryError:
        print("rollscope: error: out of memory", file=sys.stderr)
        return 1
    except Exception as exc:  # noqa: BLE001 -- the last line of defence: one line instead of a traceback
        missing = exc.name or "" if isinstance(exc, ModuleNotFoundError) else ""
        extra = _EXTRAS.get(missing.split(".")[0])
        if extra is not None:  # an optional part this install (the desktop bundle, a plain pip install) lacks
            print(f"rollscope: error: {args.command} needs {missing}, which this install does not have: "
                  f"pip install 'rollscope[{extra}]'", file=sys.stderr)
            return 1
        if os.environ.get("ROLLSCOPE_DEBUG"):
            raise
        print(f"rollscope: internal error (please report it; ROLLSCOPE_DEBUG=1 shows where): "
              f"{printable(clip(f'{type(exc).__name__}: {exc}'))}", file=sys.stderr)
        return 70  # EX_SOFTWARE


# Optional packages and the extra that installs each (pyproject.toml).
_EXTRAS = {"torch": "train", "ray": "cluster", "transformers": "exevrm", "psycopg": "teams"}


def _reader_gone() -> int:
    """stdout's reader closed the pipe: send what is still buffered nowhere (Python would otherwise report the
    failed flush at exit) and end like a command killed by SIGPIPE."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    return 128 + 13


if __name__ == "__main__":
    sys.exit(main())
