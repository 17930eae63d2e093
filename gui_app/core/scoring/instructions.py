"""Instructions given to runs that have none, so they can be judged: the reward model asks whether a run did its
task, and a run whose format kept no instruction (an OSWorld result without its task config) has no task to judge.

A user gives one instruction to every run of a task at once, in the app (the run header's "Set instruction…") and
the catalog keeps it (:meth:`gui_app.core.library.catalog.Catalog.set_instruction`, table
``instruction_overrides``). What "every run of a task" means is a **scope key** (:func:`scopes`):

* ``task:<id>``: the runs of one task (``metadata["task"]``): every model's run of an OSWorld example;
* ``domain:<name>``: the runs of one domain (``metadata["domain"]``): the default for runs whose task is their
  domain (run folders named by the time they started name no task);
* ``run:<library key>``: this run alone.

Scoring takes an :class:`Instructions` (plain data, so a Ray worker gets it as an argument) and judges a run that has
no instruction of its own against the most specific one that applies (:meth:`Instructions.for_run`): its own, its
task's, its domain's, then the command line's ``--instruction``. The trajectory itself is never changed
(:func:`judged` copies it).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from gui_app.core.trajectory.model import Trajectory

USER = "user"  # typed or pasted by a user
TASK_CONFIG = "task_config"  # read from a task config in a folder a user pointed at
COMMAND_LINE = "command line"  # `rollscope score --instruction TEXT`, for this command only

# What the header says of where a run's own instruction came from (Trajectory.instruction_source).
_OWN_SOURCES = {"task_config": "from its task config", "domain_config": "from its domain config",
                "transcript": "from the transcript"}


class Scope(NamedTuple):
    """Runs an instruction can be given to: the scope key it is stored under, and the runs it covers in words."""

    key: str
    text: str


@dataclass(frozen=True)
class StoredInstruction:
    """An instruction given to the runs of one scope.

    Attributes:
        key: the scope key (``task:…``, ``domain:…`` or ``run:…``; see :func:`scopes`).
        instruction: the text the runs are judged against.
        source: :data:`USER` (typed), :data:`TASK_CONFIG` (read from a task config a user pointed at) or
            :data:`COMMAND_LINE`.
        origin: the task config file it was read from, when it was.
        set_at: when it was stored (Unix time); None for the command line's.
    """

    key: str
    instruction: str
    source: str = USER
    origin: str | None = None
    set_at: float | None = None

    @property
    def source_text(self) -> str:
        """Where it came from, in words: what the run header shows beside it."""
        if self.source == COMMAND_LINE:
            return "given on the command line"
        if self.source == TASK_CONFIG:
            return f"set by you, from the task config {self.origin or ''}".rstrip()
        return "set by you"


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value).strip()
    return text or None


def scopes(traj: Trajectory, key: str | None = None) -> list[Scope]:
    """The scopes an instruction for ``traj`` can be given to, the default first: its task when it has a task id
    (``metadata["task"]``; a format whose run folders name no task, such as runs named by the time they started, gives
    them their domain as their task), else its domain (``metadata["domain"]``), then the wider domain and the run
    alone (by ``key``, else :attr:`Trajectory.key`)."""
    metadata = traj.metadata if isinstance(traj.metadata, dict) else {}
    task, domain = _text(metadata.get("task")), _text(metadata.get("domain"))
    out: list[Scope] = []
    if task is not None and task != domain:
        out.append(Scope(f"task:{task}", f"every run of the task {task}"))
    if domain is not None:
        out.append(Scope(f"domain:{domain}", f"every run in the domain {domain}"))
    key = key or traj.key
    if key:
        out.append(Scope(f"run:{key}", "this run only"))
    return out


def task_key(traj: Trajectory, key: str | None = None) -> str | None:
    """The scope an instruction given to ``traj`` covers by default (see :func:`scopes`; ``key``: its library key
    when the trajectory does not carry it); None for a run with neither task, domain nor library key."""
    found = scopes(traj, key)
    return found[0].key if found else None


def lookup_keys(traj: Trajectory) -> list[str]:
    """The scope keys that may hold an instruction for ``traj``, the most specific first: the run, its task, its
    domain. Every one is asked, whichever is the default: a task config found later (a run's task key becomes
    ``task:…``) does not hide what was given to its domain."""
    metadata = traj.metadata if isinstance(traj.metadata, dict) else {}
    task, domain = _text(metadata.get("task")), _text(metadata.get("domain"))
    keys = [f"run:{traj.key}"] if traj.key else []
    keys += [f"task:{task}"] if task is not None else []
    keys += [f"domain:{domain}"] if domain is not None else []
    return keys


@dataclass(frozen=True)
class Instructions:
    """The instructions scoring may judge runs without one against: those stored by scope key, then ``fallback``
    (``rollscope score --instruction TEXT``)."""

    stored: dict[str, StoredInstruction] = field(default_factory=dict)
    fallback: str | None = None

    def for_run(self, traj: Trajectory) -> StoredInstruction | None:
        """The instruction ``traj`` is judged against when it has none: the command line's when given (the user
        asked for it now), else the most specific stored one; None when none applies."""
        if self.fallback is not None and self.fallback.strip():
            return StoredInstruction("", self.fallback.strip(), COMMAND_LINE)
        for key in lookup_keys(traj):
            found = self.stored.get(key)
            if found is not None:
                return found
        return None


def own_source_text(traj: Trajectory) -> str:
    """Where a run's own instruction came from, in words ('' when its format says nothing)."""
    return _OWN_SOURCES.get(str(getattr(traj, "instruction_source", None)), "")


def judged(traj: Trajectory, instructions: Instructions | None) -> Trajectory:
    """``traj`` as the model judges it: itself when it has an instruction (or none applies), else a copy carrying the
    instruction given to it (the trajectory on screen is never changed: scoring runs in a worker)."""
    if traj.instruction.strip() or instructions is None:
        return traj
    given = instructions.for_run(traj)
    if given is None:
        return traj
    copy = dataclasses.replace(traj, instruction=given.instruction)
    if hasattr(copy, "instruction_source"):
        setattr(copy, "instruction_source", "override")  # the Trajectory's word for an instruction a person set
    return copy
