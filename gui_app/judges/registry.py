"""The judges installed: found through the ``rollscope.judges`` entry points, loaded by name with their options.

An entry point names a :class:`JudgeSpec`. Rollscope's own judges are declared in its ``pyproject.toml`` like any
other and are also listed in :data:`BUILTIN` (the same names and targets; a test holds the two equal), so they are
found where the package metadata is absent or stale: the frozen app bundle, a checkout not reinstalled since.

Options travel as strings (``--judge-option k=v``, the app's settings) and are checked here, before a judge loads:
an option the judge does not take, or a required one missing, is one error line that lists what it takes.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from gui_app.core.errors import RollscopeError
from gui_app.core.scoring.batch import Scorer

ENTRY_POINT_GROUP = "rollscope.judges"
DEFAULT_JUDGE = "rollscope"
# name -> "module:attribute" of its JudgeSpec; pyproject.toml declares the same entry points.
BUILTIN: dict[str, str] = {
    "rollscope": "gui_app.judges.builtin:SPEC",
    "openai-compatible": "gui_app.judges.openai_compatible:SPEC",
    "exevrm": "gui_app.judges.exevrm:SPEC",
}


class JudgeError(RollscopeError):
    """A judge cannot be found, its options are wrong, or it cannot load (missing weights, missing extra)."""


@dataclass(frozen=True)
class JudgeOption:
    """One setting of a judge.

    Attributes:
        name: as given on the command line (``--judge-option NAME=VALUE``).
        help: what it sets, in a few words.
        default: the value when not given (None: no default; with ``required`` the judge cannot load without it).
        required: whether it must be given.
        choices: the values it accepts, when they are few.
    """

    name: str
    help: str
    default: str | None = None
    required: bool = False
    choices: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "help": self.help, "default": self.default, "required": self.required,
                "choices": list(self.choices)}


@dataclass(frozen=True)
class JudgeSpec:
    """What an entry point of ``rollscope.judges`` names: a judge's description and how to load it.

    Attributes:
        name: the judge's name (``--judge NAME``).
        summary: one line for ``rollscope judges``.
        options: the options it takes.
        load: builds the scorer from the options, every declared option present (defaults filled in; an option
            without a default and not given is absent). Raises :class:`JudgeError` (or another
            :class:`~gui_app.core.errors.RollscopeError`) when it cannot.
        extra: the pip extra that installs what it needs (``rollscope[exevrm]``), or None.
    """

    name: str
    summary: str
    options: tuple[JudgeOption, ...]
    load: Callable[[dict[str, str]], Scorer[Any]]
    extra: str | None = None

    def option_names(self) -> list[str]:
        return [o.name for o in self.options]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "summary": self.summary, "extra": self.extra,
                "options": [o.to_json() for o in self.options]}


def _targets() -> dict[str, str]:
    """Every judge name and its ``module:attribute``: the built-in ones, then the installed entry points (a package
    may not take a built-in name: the built-in keeps it)."""
    out = dict(BUILTIN)
    for ep in metadata.entry_points(group=ENTRY_POINT_GROUP):
        out.setdefault(ep.name, ep.value)
    return out


def _resolve(name: str, target: str) -> JudgeSpec:
    module, _, attr = target.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
    except (ImportError, AttributeError) as exc:
        raise JudgeError(f"judge {name!r} ({target}) cannot be imported: {exc}") from exc
    if callable(obj) and not isinstance(obj, JudgeSpec):
        obj = obj()  # a factory that returns the spec
    if not isinstance(obj, JudgeSpec):
        raise JudgeError(f"judge {name!r} ({target}) is a {type(obj).__name__}, not a JudgeSpec")
    return obj


def names() -> list[str]:
    """The installed judges' names, the default first."""
    found = _targets()
    return [DEFAULT_JUDGE, *sorted(n for n in found if n != DEFAULT_JUDGE)]


def spec(name: str) -> JudgeSpec:
    """The spec of the judge ``name``.

    Raises:
        JudgeError: no such judge (naming those installed), or its entry point does not resolve to a spec.
    """
    found = _targets()
    if name not in found:
        raise JudgeError(f"no judge named {name!r} (installed: {', '.join(names())})")
    return _resolve(name, found[name])


def specs() -> list[JudgeSpec]:
    """Every installed judge's spec, the default first (one that cannot be imported raises)."""
    return [spec(n) for n in names()]


def parse_options(pairs: Sequence[str]) -> dict[str, str]:
    """``["k=v", ...]`` as a dict (a later ``k`` wins).

    Raises:
        JudgeError: an item without ``=``.
    """
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise JudgeError(f"judge option {pair!r} is not NAME=VALUE")
        out[key.strip()] = value
    return out


def resolve_options(judge: JudgeSpec, given: Mapping[str, str]) -> dict[str, str]:
    """``given`` checked against the judge's options, with the defaults filled in.

    Raises:
        JudgeError: an option it does not take, a required one missing, or a value outside its choices.
    """
    known = {o.name: o for o in judge.options}
    unknown = sorted(set(given) - set(known))
    if unknown:
        takes = ", ".join(judge.option_names()) or "no options"
        raise JudgeError(f"judge {judge.name!r} takes no option {', '.join(unknown)} (it takes: {takes})")
    out: dict[str, str] = {}
    for opt in judge.options:
        value = given.get(opt.name, opt.default)
        if value is None:
            if opt.required:
                raise JudgeError(f"judge {judge.name!r} needs {opt.name} ({opt.help})")
            continue
        if opt.choices and value not in opt.choices:
            raise JudgeError(f"judge {judge.name!r}: {opt.name}={value!r} is not one of {', '.join(opt.choices)}")
        out[opt.name] = value
    return out


def load_judge(name: str, options: Mapping[str, str] | None = None) -> Scorer[Any]:
    """The judge ``name`` loaded with ``options`` (checked first: :func:`resolve_options`).

    Raises:
        JudgeError: an unknown judge or option, a missing one, or what the judge raises when it cannot load.
    """
    judge = spec(name)
    return judge.load(resolve_options(judge, options or {}))


def option_int(options: Mapping[str, str], name: str, low: int = 1) -> int:
    """An integer option, at least ``low``.

    Raises:
        JudgeError: not an integer, or below ``low``.
    """
    try:
        value = int(options[name])
    except ValueError:
        raise JudgeError(f"judge option {name}={options[name]!r} is not an integer") from None
    if value < low:
        raise JudgeError(f"judge option {name}={value} is below {low}")
    return value


def option_float(options: Mapping[str, str], name: str, low: float = 0.0) -> float:
    """A number option, above ``low``.

    Raises:
        JudgeError: not a number, or not above ``low``.
    """
    try:
        value = float(options[name])
    except ValueError:
        raise JudgeError(f"judge option {name}={options[name]!r} is not a number") from None
    if not value > low:
        raise JudgeError(f"judge option {name}={value} must be above {low}")
    return value
