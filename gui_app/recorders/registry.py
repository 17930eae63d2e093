"""Which scripted agent plays which MiniWoB++ task: the two agents' task tables and the task lists.

Agent A (``scripted-v1``, :mod:`gui_app.recorders.agents`) and agent B (``scripted-v2``,
:mod:`gui_app.recorders.agent_b`) are written independently; both play every task of :data:`ALL_TASKS`. The
held-out task types (:data:`gui_app.training.dataset.HELDOUT_TASKS`) are recordable for evaluation, and
``rollscope dataset build`` keeps them out of training by default.
"""

from __future__ import annotations

import random

from gui_app.training.dataset import HELDOUT_TASKS
from gui_app.recorders import agent_b, agents

HELDOUT_TASKS = HELDOUT_TASKS  # re-exported: the recorders name it from here too
AGENT_NAMES = {"A": "scripted-v1", "B": "scripted-v2"}
AGENTS: dict[str, dict[str, type]] = {"A": agents.AGENTS, "B": agent_b.AGENTS}

#: Every task both agents play.
ALL_TASKS: tuple[str, ...] = tuple(sorted(set(agents.AGENTS) & set(agent_b.AGENTS)))
#: The task types recorded for training (everything but the held-out types).
TRAIN_TASKS: tuple[str, ...] = tuple(t for t in ALL_TASKS if t not in HELDOUT_TASKS)


def mistake_for(agent: str, task: str, rng: random.Random) -> str | None:
    """A mistake the agent's script for ``task`` can make, drawn with the agent's own odds."""
    cls = AGENTS[agent][task]
    weights = getattr(cls, "MISTAKE_WEIGHTS", None)
    kinds = cls.MISTAKES
    if not kinds:
        return None
    if weights:
        return rng.choices(kinds, weights=[weights.get(k, 1.0) for k in kinds])[0]
    return rng.choice(kinds)
