"""``rollscope judges [--json]``: the judges installed (``rollscope.judges`` entry points) and their options."""

from __future__ import annotations

import argparse
import json


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="one JSON array of the judges and their options")


def run(args: argparse.Namespace) -> int:
    from gui_app.judges.registry import DEFAULT_JUDGE, specs

    found = specs()
    if args.json:
        print(json.dumps([{**s.to_json(), "default": s.name == DEFAULT_JUDGE} for s in found]))
        return 0
    for s in found:
        mark = " (default)" if s.name == DEFAULT_JUDGE else ""
        extra = f"; needs pip install 'rollscope[{s.extra}]'" if s.extra else ""
        print(f"{s.name}{mark}: {s.summary}{extra}")
        for o in s.options:
            value = " (required)" if o.required else (f" (default {o.default})" if o.default is not None else "")
            choices = f" [{'|'.join(o.choices)}]" if o.choices else ""
            print(f"  {o.name}{choices}{value}: {o.help}")
    return 0
