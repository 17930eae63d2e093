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

from gui_app.core.trajectory.model import step_text


def verdict(p_success: float | None, threshold: float | None) -> bool | None:
    """The model's verdict for a probability: ``p_success >= threshold``; None when either is unknown."""
    if p_success is None or threshold is None:
        return None
    return bool(p_success >= threshold)


@dataclass(frozen=True)
class HarmEvidence:
    """One thing the harm judge saw, in words, at the step where it happened."""

    step: int
    text: str
    cue: str = ""  # which cue fired (``secret_typed``, ``ran_download``, ...; see ``models.harm.CUES``)

    def to_json(self) -> dict[str, Any]:
        return {"step": self.step, "text": self.text, "cue": self.cue}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> HarmEvidence:
        return cls(int(d.get("step", 0)), str(d.get("text", "")), str(d.get("cue", "")))


@dataclass(frozen=True)
class Safety:
    """The harm verdict beside success: did the run do damage, where first, of what kind, and why we think so.

    Attributes:
        p_harm: calibrated probability that the run did harm.
        harmful: the verdict (``p_harm >= threshold``); None when unknown.
        first_harmful_step: the step of the first harmful action (harmful verdicts only).
        category: where the harm came from, a code of the harm taxonomy's categories (``prompt_injection``,
            ``user_misuse``, ``model_misbehaviour``); None for a safe verdict.
        types: harm type codes of the taxonomy the evidence points to (``untrusted_code``, ...).
        evidence: what was seen, in words, each with its step.
        threshold: the harm judge's decision threshold.
        unknown: the judge cannot say (no log and no readable text, or screens unlike its training data).
        step_scores: per step, the judge's harm score of that step's action in [0, 1].
    """

    p_harm: float | None
    harmful: bool | None = None
    first_harmful_step: int | None = None
    category: str | None = None
    types: list[str] = field(default_factory=list)
    evidence: list[HarmEvidence] = field(default_factory=list)
    threshold: float | None = None
    unknown: bool = False
    step_scores: list[float] = field(default_factory=list)

    @property
    def verdict_text(self) -> str:
        """``harmful``, ``safe`` or ``unknown``."""
        if self.unknown or self.harmful is None:
            return "unknown"
        return "harmful" if self.harmful else "safe"

    def evidence_lines(self, step: int | None = None) -> list[str]:
        """The evidence in words, ``step 15: typed the password given in the instruction into a page`` (steps
        numbered from 1, as every view reads them); only the evidence of the step stored at ``step`` when given."""
        return [f"{step_text(e.step)}: {e.text}" for e in self.evidence if step is None or e.step == step]

    def describe(self) -> str:
        """The harm verdict in one line: ``harmful (p(harm) 0.82, threshold 0.50; prompt injection; first harmful
        at step 15)``, what ``rollscope score`` prints and the views' tooltips say."""
        p = "?" if self.p_harm is None else f"{self.p_harm:.2f}"
        t = "?" if self.threshold is None else f"{self.threshold:.2f}"
        parts = [f"p(harm) {p}, threshold {t}"]
        if self.category:
            parts.append(self.category.replace("_", " "))
        if self.first_harmful_step is not None and self.verdict_text == "harmful":
            parts.append(f"first harmful at {step_text(self.first_harmful_step)}")
        return f"{self.verdict_text} ({'; '.join(parts)})"

    def to_json(self) -> dict[str, Any]:
        return {"p_harm": self.p_harm, "harmful": self.harmful, "first_harmful_step": self.first_harmful_step,
                "category": self.category, "types": list(self.types),
                "evidence": [e.to_json() for e in self.evidence], "threshold": self.threshold,
                "unknown": self.unknown, "step_scores": list(self.step_scores)}

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> Safety | None:
        if not d:
            return None
        p = d.get("p_harm")
        fh = d.get("first_harmful_step")
        thr = d.get("threshold")
        harmful = d.get("harmful")
        return cls(p_harm=None if p is None else float(p), harmful=None if harmful is None else bool(harmful),
                   first_harmful_step=None if fh is None else int(fh), category=d.get("category") or None,
                   types=[str(t) for t in d.get("types") or []],
                   evidence=[HarmEvidence.from_json(e) for e in d.get("evidence") or [] if isinstance(e, dict)],
                   threshold=None if thr is None else float(thr), unknown=bool(d.get("unknown", False)),
                   step_scores=[float(x) for x in d.get("step_scores") or []])


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
        safety: the harm verdict beside success (None: the judge gives none, or a score from before it).
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
    safety: Safety | None = None

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
                "model": self.model, "timings": self.timings, "usage": self.usage, "rationale": self.rationale,
                "safety": None if self.safety is None else self.safety.to_json()}
