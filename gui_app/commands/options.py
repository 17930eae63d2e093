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


# Options of a judge that have a flag of their own (``--model DIR`` has always named the built-in model's weights);
# any option can also be given as ``--judge-option NAME=VALUE``.
JUDGE_FLAGS = ("model", "backend", "endpoint", "weights")


def add_judge(p: argparse.ArgumentParser, model_help: str) -> None:
    """``--judge NAME`` and its options: ``--judge-option K=V`` (repeatable) and the flags of the common ones."""
    p.add_argument("--judge", default=None, metavar="NAME",
                   help="the judge that scores (default: rollscope, the built-in model; `rollscope judges` lists "
                        "those installed and their options)")
    p.add_argument("--judge-option", action="append", default=[], metavar="NAME=VALUE",
                   help="an option of the judge (repeatable), e.g. frames=8")
    p.add_argument("--model", default=None, help=model_help)
    p.add_argument("--backend", choices=("onnx", "torch"), default=None,
                   help="inference backend of the built-in model (default onnx)")
    p.add_argument("--endpoint", default=None, metavar="URL",
                   help="the server of --judge openai-compatible (its key: $OPENAI_API_KEY or the keyring, never an "
                        "option)")
    p.add_argument("--weights", default=None, metavar="DIR", help="the checkpoint folder of --judge exevrm")


def judge_choice(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """The judge a command was asked for and its options, checked against what the judge takes (the built-in
    model's ``model`` is the active model when none is named, resolved here so Ray workers score with this
    machine's choice).

    Raises:
        JudgeError: no such judge, an option it does not take, a required one missing.
    """
    from gui_app.judges.registry import DEFAULT_JUDGE, parse_options

    name = args.judge or DEFAULT_JUDGE
    options = parse_options(args.judge_option)
    for flag in JUDGE_FLAGS:
        value = getattr(args, flag, None)
        if value is not None:
            options[flag] = str(value)
    return name, resolved_judge(name, options)


def resolved_judge(name: str, options: dict[str, str]) -> dict[str, str]:
    """``options`` of the judge ``name`` checked, defaults filled in, and the built-in model's ``model`` the active
    model when none is named.

    Raises:
        JudgeError: no such judge, an option it does not take, a required one missing.
    """
    from gui_app.judges.registry import DEFAULT_JUDGE, resolve_options, spec

    judge = spec(name)
    options = dict(options)
    if name == DEFAULT_JUDGE and not options.get("model"):
        from gui_app.core.settings import active_model

        active = active_model()
        if active:
            options["model"] = active
    return resolve_options(judge, options)
