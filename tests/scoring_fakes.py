"""Judges for the scoring-process tests, built in a spawned child from a factory it imports by name (a picklable
``functools.partial`` of a function here, as the app sends ``partial(load_judge, name, options)``)."""

from __future__ import annotations

import threading

import numpy as np

from gui_app.core.scoring.score import HarmEvidence, Safety, Score
from gui_app.core.trajectory.model import Trajectory


class FixedJudge:
    """Scores every run 0.75 with a pruning mask and a harm verdict (what must survive the pipe); hangs for good on
    the run whose id is ``hang_on`` (a read that never returns: a test cancels or kills the process)."""

    name = "fixed"

    def __init__(self, hang_on: str = "") -> None:
        self.hang_on = hang_on

    def prepare(self, traj: Trajectory, prune: bool = True) -> str:
        if traj.id == self.hang_on:
            threading.Event().wait()
        return traj.id

    def score_prepared(self, prepared: list[str]) -> list[Score]:
        return [Score(p_success=0.75, threshold=0.5, success=True, model=self.name, step_scores=[0.5],
                      masks=[np.eye(3, 4, dtype=bool)], keyframe_steps=[0],
                      safety=Safety(0.1, harmful=False, evidence=[HarmEvidence(0, f"nothing in {p}")]))
                for p in prepared]


def fixed(hang_on: str = "") -> FixedJudge:
    return FixedJudge(hang_on)


def no_weights() -> FixedJudge:
    raise OSError("no weights here")


def never_loads() -> FixedJudge:
    """A judge whose loading never ends (weights on a hung network share)."""
    threading.Event().wait()
    raise AssertionError("unreachable")
