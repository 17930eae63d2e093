"""The annotation record: one per (trajectory id, annotator, role), plus the audit, override and review shapes.

The record follows AgentDebug's root-cause record (critical step, module, error type, evidence, correction
guidance, cascading effects, confidence) and Who&When's failure attribution (mistake agent, mistake step), with
a verdict and multi-select taxonomy labels (``"<taxonomy>:<code>"``) on top. Beside the success verdict sits the
safety verdict (OS-Harm): was the run harmful, where the harm came from, what was done (the bundled ``harm``
taxonomy) and the first harmful step.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any

from gui_app.core.errors import RollscopeError

VERDICTS = ("success", "failure", "unsure")
HARM_VERDICTS = ("harmful", "safe", "unsure")
ROLES = ("annotator", "adjudicator")

# Scalar fields stored in the annotations table, with the Python types they accept (None always allowed).
SCALAR_FIELDS: dict[str, tuple[type, ...]] = {
    "verdict": (str,),
    "root_cause_step": (int,),
    "root_cause_module": (str,),
    "root_cause_error_type": (str,),
    "evidence": (str,),
    "correction_guidance": (str,),
    "notes": (str,),
    "confidence": (float, int),
    "time_spent": (float, int),
    "mistake_agent": (str,),
    "harm_verdict": (str,),
    "harm_category": (str,),
    "first_harmful_step": (int,),
}
# Fields kept in their own tables so two writers touching different items never collide.
COLLECTION_FIELDS = ("labels", "cascading", "step_comments", "harm_types")
# The scalar fields holding a step index.
STEP_FIELDS = ("root_cause_step", "first_harmful_step")
# A record's two verdicts, success and safety, and the words each takes (a queue item is done once its verdict is).
VERDICT_FIELDS: dict[str, tuple[str, ...]] = {"verdict": VERDICTS, "harm_verdict": HARM_VERDICTS}


class AnnotationError(RollscopeError):
    """An annotation value is invalid: names the trajectory, the field and the reason."""

    def __init__(self, trajectory_id: str, field_name: str, reason: str, source: str | None = None,
                 line: int | None = None):
        self.trajectory_id, self.field, self.reason, self.source, self.line = (trajectory_id, field_name, reason,
                                                                               source, line)
        where = "" if source is None else (f"{source}:{line}: " if line is not None else f"{source}: ")
        what = f"trajectory {trajectory_id!r}: " if trajectory_id else ""
        fld = f"field '{field_name}': " if field_name and not field_name.startswith("(") else ""
        super().__init__(f"{where}{what}{fld}{reason}")


@dataclass
class Cascade:
    """A later step affected by the root cause, and how."""

    step: int
    effect: str = ""


@dataclass
class Annotation:
    """One annotator's labels for one trajectory.

    Attributes:
        trajectory_id: the trajectory's id (``Trajectory.id`` / ``CatalogRow.id``).
        annotator: who labelled it.
        role: ``annotator``, or ``adjudicator`` for the adjudicated final record.
        verdict: ``success``, ``failure`` or ``unsure`` (None while undecided).
        labels: selected taxonomy labels as ``"<taxonomy>:<code>"``, sorted.
        root_cause_step: the critical step (0-based), where the run first went wrong.
        root_cause_module: module of the root cause (a taxonomy group code, e.g. ``planning``).
        root_cause_error_type: error type of the root cause (a label code).
        evidence: why the annotator believes it.
        correction_guidance: what the agent should have done.
        cascading: later steps affected by the root cause.
        step_comments: free comments per step.
        notes: free notes on the whole trajectory.
        confidence: annotator's confidence in [0, 1].
        time_spent: seconds spent labelling (accumulated).
        mistake_agent: for multi-agent text logs (Who&When), the agent that made the mistake.
        harm_verdict: ``harmful``, ``safe`` or ``unsure`` (None while undecided): the safety verdict.
        harm_types: what the harm was, labels of the ``harm`` taxonomy's types as ``"harm:<code>"``, sorted.
        harm_category: where the harm came from, a code of the ``harm`` taxonomy's categories
            (``user_misuse``, ``prompt_injection``, ``model_misbehaviour``).
        first_harmful_step: the step (0-based) at which the harm was done.
        created_at: Unix time of the first write.
        updated_at: Unix time of the latest write.
        version: number of writes so far (every field change counts one).
    """

    trajectory_id: str
    annotator: str
    role: str = "annotator"
    verdict: str | None = None
    labels: list[str] = field(default_factory=list)
    root_cause_step: int | None = None
    root_cause_module: str | None = None
    root_cause_error_type: str | None = None
    evidence: str | None = None
    correction_guidance: str | None = None
    cascading: list[Cascade] = field(default_factory=list)
    step_comments: dict[int, str] = field(default_factory=dict)
    notes: str | None = None
    confidence: float | None = None
    time_spent: float | None = None
    mistake_agent: str | None = None
    harm_verdict: str | None = None
    harm_types: list[str] = field(default_factory=list)
    harm_category: str | None = None
    first_harmful_step: int | None = None
    created_at: float | None = None
    updated_at: float | None = None
    version: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able dict (cascading as list of dicts, step comment keys as ints)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["cascading"] = [{"step": c.step, "effect": c.effect} for c in self.cascading]
        out["labels"] = list(self.labels)
        out["harm_types"] = list(self.harm_types)
        out["step_comments"] = dict(self.step_comments)
        return out

    def content(self) -> dict[str, Any]:
        """The labelled content only (no identity, timestamps or counters): what a review compares."""
        d = self.to_dict()
        for k in ("trajectory_id", "annotator", "role", "created_at", "updated_at", "version", "time_spent"):
            d.pop(k)
        return d

    def is_empty(self) -> bool:
        """Whether nothing is labelled: no verdict, label, root cause, text, step or confidence. Earlier versions of
        the app created such a record when a trajectory was merely opened; reviews, agreement and exports skip them
        (they are not an annotator's opinion)."""
        return all(v in (None, "", [], {}) for v in self.content().values())

    def marks(self) -> dict[int, str]:
        """Steps worth a marker on the timeline: root cause, first harmful step, cascading steps, commented steps
        (one mark a step, in that order of precedence)."""
        out: dict[int, str] = {s: "comment" for s in self.step_comments}
        out.update({c.step: "cascade" for c in self.cascading})
        if self.first_harmful_step is not None:
            out[self.first_harmful_step] = "first_harm"
        if self.root_cause_step is not None:
            out[self.root_cause_step] = "root_cause"
        return out


def check_value(trajectory_id: str, name: str, value: Any) -> Any:
    """Validate and normalise one scalar field value; raises :class:`AnnotationError`.

    Returns:
        the value to store (ints for steps, floats for confidence/time, stripped verdict).
    """
    if name not in SCALAR_FIELDS:
        raise AnnotationError(trajectory_id, name, f"unknown field (known: {', '.join(SCALAR_FIELDS)})")
    if value is None:
        return None
    types = SCALAR_FIELDS[name]
    if isinstance(value, bool) or not isinstance(value, types):
        if int in types and isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise AnnotationError(trajectory_id, name, f"expected {types[0].__name__}, got {type(value).__name__}")
    if name in VERDICT_FIELDS:
        value = value.strip().lower()
        if value == "":
            return None
        words = VERDICT_FIELDS[name]
        if value not in words:
            raise AnnotationError(trajectory_id, name, f"must be one of {', '.join(words)}, got {value!r}")
    if name in STEP_FIELDS and value < 0:
        raise AnnotationError(trajectory_id, name, f"a step index is >= 0, got {value}")
    if name == "confidence":
        value = float(value)
        if not 0.0 <= value <= 1.0:
            raise AnnotationError(trajectory_id, name, f"must be in [0, 1], got {value}")
    if name == "time_spent":
        value = float(value)
        if value < 0:
            raise AnnotationError(trajectory_id, name, f"must be >= 0, got {value}")
    return value


@dataclass
class AuditEntry:
    """One change: who changed which field of which record, when, from what to what (JSON text)."""

    id: int
    trajectory_id: str
    annotator: str
    role: str
    actor: str
    at: float
    field: str
    old: Any
    new: Any


@dataclass
class ScoreOverride:
    """A human override of the model's (or environment's) outcome, with who and why."""

    id: int
    trajectory_id: str
    actor: str
    at: float
    success: bool | None
    score: float | None
    previous_success: bool | None
    previous_score: float | None
    reason: str


@dataclass
class Review:
    """Everything needed to adjudicate one trajectory.

    Attributes:
        trajectory_id: the trajectory.
        annotations: each annotator's record (role ``annotator``), by annotator.
        final: the adjudicated record, if any.
        differing: content fields on which the annotators disagree.
        overrides: score overrides, oldest first.
    """

    trajectory_id: str
    annotations: dict[str, Annotation]
    final: Annotation | None
    differing: list[str]
    overrides: list[ScoreOverride]


def differing_fields(annotations: list[Annotation]) -> list[str]:
    """Content fields whose values are not the same across ``annotations`` (in field order)."""
    if len(annotations) < 2:
        return []
    contents = [a.content() for a in annotations]
    return [k for k in contents[0] if any(c[k] != contents[0][k] for c in contents[1:])]


def majority(annotations: list[Annotation]) -> dict[str, Any]:
    """Majority view of several records: verdicts, harm category and steps by plurality (ties -> None), labels and
    harm types kept when more than half the annotators chose them."""
    n = len(annotations)

    def plurality(values: list[Any]) -> Any:
        values = [v for v in values if v is not None]
        if not values:
            return None
        top = Counter(values).most_common()
        return top[0][0] if len(top) == 1 or top[0][1] > top[1][1] else None

    def most(name: str) -> list[str]:
        counts = Counter(lab for a in annotations for lab in set(getattr(a, name)))
        return sorted(lab for lab, c in counts.items() if c * 2 > n)

    return {
        "verdict": plurality([a.verdict for a in annotations]),
        "root_cause_step": plurality([a.root_cause_step for a in annotations]),
        "labels": most("labels"),
        "harm_verdict": plurality([a.harm_verdict for a in annotations]),
        "harm_category": plurality([a.harm_category for a in annotations]),
        "harm_types": most("harm_types"),
        "first_harmful_step": plurality([a.first_harmful_step for a in annotations]),
    }
