"""One reward-model score of one trajectory: what the model returns, the catalog stores and every view reads.

There is one shape for a score wherever it travels: :class:`models.runtime.RewardModel` returns it, the catalog
stores it whole (:meth:`gui_app.core.library.catalog.Catalog.set_score`) and gives the same type back
(:meth:`~gui_app.core.library.catalog.Catalog.latest_score`), and the queues, the views and ``rollscope score`` read its
fields by name. A score carries its own decision threshold and verdict: whoever asks "does the model call this a
success?" reads :attr:`Score.success`, never a threshold of their own (the labelling queues once compared with 0.5
while the shipped model decides at 0.573).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np


def verdict(p_success: float | None, threshold: float | None) -> bool | None:
    """The model's verdict for a probability: ``p_success >= threshold``; None when either is unknown."""
    if p_success is None or threshold is None:
        return None
    return bool(p_success >= threshold)


@dataclass(frozen=True)
class Score:
    """The reward model's verdict on one trajectory.

    Frozen, so a score handed from a worker thread to the views cannot change under them.

    Attributes:
        p_success: probability that the run does what the instruction asks (None: the model gave none).
        threshold: the decision threshold of the model that scored it (None only for scores stored before the
            catalog kept thresholds: their verdict is unknown).
        success: the model's verdict (``p_success >= threshold``); None when unknown.
        first_error_step: the step where the run most likely first deviates (predicted failures only).
        step_scores: per step, the probability that the first deviation is at that step (0 for steps without a
            keyframe when a long run was subsampled).
        masks: per keyframe, the ``(rows, cols)`` bool grid of tokens the model kept.
        keyframe_steps: the step index of each keyframe (as long as ``masks`` when there are masks).
        tokens_kept: tokens fed to the network.
        tokens_total: tokens before pruning.
        model: name of the model (weights folder and backend).
        ood: how far the run lies outside the training distribution, for models that measure it (None: not
            measured).
        unknown: the model cannot judge this run (unlike its training data, or no instruction): its p_success
            and verdict are not to be read as a confident answer, and the views say "unknown" instead.
        warnings: what makes this verdict less reliable than the model card's figures (e.g. no pointer found).
        seconds: end-to-end time (decode + prune + forward), when measured.
        timings: seconds per stage (``decode``, ``prune``, ``forward``, ...).
        scored_at: when the catalog recorded it (Unix time); None for a score not read from a catalog.
        evidence: what the verdict used: ``video`` always, and ``actions``, ``coordinates``, ``typed_text``,
            ``claims``, ``answer`` where the run's log had them (empty: not recorded, e.g. a score from before).
        text_reads: text crops the model recognised for this verdict (None: not measured).
        usage: what a judge that reads tokens spent on this verdict (``prompt_tokens``, ``completion_tokens``;
            ``cached`` 1 when the answer was read from the judge's cache, which cost nothing this time); empty for
            the built-in model, whose ``tokens_kept`` / ``tokens_total`` say it.
        rationale: the judge's own words for its verdict, when it gives them ('' otherwise).
    """

    p_success: float | None
    threshold: float | None = None
    success: bool | None = None
    first_error_step: int | None = None
    step_scores: list[float] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    keyframe_steps: list[int] = field(default_factory=list)
    tokens_kept: int | None = None
    tokens_total: int | None = None
    model: str = ""
    ood: float | None = None
    unknown: bool = False
    warnings: list[str] = field(default_factory=list)
    seconds: float | None = None
    timings: dict[str, float] = field(default_factory=dict)
    scored_at: float | None = None
    evidence: list[str] = field(default_factory=list)
    text_reads: int | None = None
    usage: dict[str, int] = field(default_factory=dict)
    rationale: str = ""

    @property
    def verdict_text(self) -> str:
        """The model's verdict in one word: ``success``, ``failure``, or ``unknown`` (the model cannot judge the
        run, or gave no verdict)."""
        if self.unknown or self.success is None:
            return "unknown"
        return "success" if self.success else "failure"

    def disagrees_with(self, env_success: bool | None) -> bool:
        """Whether the model's verdict contradicts the environment's outcome (False when either is unknown)."""
        if self.unknown or self.success is None or env_success is None:
            return False
        return bool(self.success) != bool(env_success)

    def margin(self) -> float | None:
        """How far ``p_success`` lies from the threshold (0: the model could not be less sure); None when either
        is unknown."""
        if self.p_success is None or self.threshold is None:
            return None
        return abs(float(self.p_success) - float(self.threshold))

    def to_json(self) -> dict[str, Any]:
        """The JSON-able summary ``rollscope score --json`` prints (no masks): ``model`` names the judge and its
        settings."""
        return {"p_success": self.p_success, "success": self.success, "first_error_step": self.first_error_step,
                "step_scores": self.step_scores, "tokens_total": self.tokens_total, "tokens_kept": self.tokens_kept,
                "seconds": self.seconds, "warnings": self.warnings, "ood": self.ood, "unknown": self.unknown,
                "threshold": self.threshold, "evidence": self.evidence, "text_reads": self.text_reads,
                "model": self.model, "timings": self.timings, "usage": self.usage, "rationale": self.rationale}
