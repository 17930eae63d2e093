"""Rollscope's own judge prompt for vision-language models, and the strict reading of their answers.

The prompt is versioned (:data:`PROMPT_VERSION`, written into every score's judge name): a change to its words is a
new version, so scores and cached answers of the old wording are never mixed with the new. It gives the task, the
steps the agent took (its actions, and its reasoning where the run kept it, clipped), one screenshot per step shown
(captioned with the step), and asks two questions: did the run do the task, and if not, which step first deviated.
The answer must be one JSON object; :func:`parse_answer` reads it or says why it cannot, and never guesses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gui_app.core.trajectory.model import Trajectory, step_number

PROMPT_VERSION = 1
MAX_INSTRUCTION = 4000
MAX_ACTION = 300
MAX_THOUGHT = 300
MAX_STEPS_LISTED = 200

SYSTEM = ("You judge the runs of a computer-use agent. You are given the task the agent was asked to do, the steps "
          "it took, and the screen after some of those steps. Judge from what the screens show: the agent's own "
          "claims of success are not evidence. Answer with one JSON object and nothing else.")

QUESTION = """Did the agent complete the task? If it did not, which step was the first to deviate from what the task requires (the first step whose action was wrong, or after which the screen shows the task going off course)?

Answer with exactly one JSON object, no other text:
{{"success": true or false, "confidence": your probability from 0 to 1 that this verdict is right, "first_error_step": the number of the first deviating step (1 to {n}) or null when the task was completed, "reason": "one sentence"}}"""  # noqa: E501


class AnswerError(ValueError):
    """A judge's answer that is not a verdict: what is wrong with it."""


@dataclass(frozen=True)
class Verdict:
    """A judge's answer, read.

    Attributes:
        success: whether the run did its task.
        confidence: the judge's probability that ``success`` is right (None: it gave none).
        first_error_step: the index (from 0) of the first deviating step; None for a success or when not given.
        reason: the judge's own sentence ('' when none).
    """

    success: bool
    confidence: float | None
    first_error_step: int | None
    reason: str

    @property
    def p_success(self) -> float | None:
        """The probability that the run succeeded, from the verdict and its confidence."""
        if self.confidence is None:
            return None
        return self.confidence if self.success else 1.0 - self.confidence


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def step_lines(traj: Trajectory) -> list[str]:
    """One line per step (numbered from 1): its action, and the agent's reasoning where the run kept it."""
    lines = []
    for s in traj.steps[:MAX_STEPS_LISTED]:
        action = s.action or s.action_type or "(no action recorded)"
        line = f"Step {step_number(s.index)}: {_clip(action, MAX_ACTION)}"
        if s.thought:
            line += f" (agent's reasoning: {_clip(s.thought, MAX_THOUGHT)})"
        lines.append(line)
    if traj.n_steps > MAX_STEPS_LISTED:
        lines.append(f"... and {traj.n_steps - MAX_STEPS_LISTED} more steps")
    return lines


def build_messages(traj: Trajectory, images: list[tuple[int, str]]) -> list[dict[str, Any]]:
    """The chat messages of the judge prompt for ``traj``.

    Args:
        traj: the run (its instruction, steps).
        images: ``(step index, image URL)`` per screenshot shown, in order (``data:image/jpeg;base64,...``).
    """
    intro = (f"# Task\n{_clip(traj.instruction, MAX_INSTRUCTION)}\n\n"
             f"# Steps the agent took ({traj.n_steps})\n" + "\n".join(step_lines(traj)) +
             f"\n\n# Screens\n{len(images)} screenshots follow, each taken at the end of the step named above it.")
    content: list[dict[str, Any]] = [{"type": "text", "text": intro}]
    for step, url in images:
        content.append({"type": "text", "text": f"Screen after step {step_number(step)}:"})
        content.append({"type": "image_url", "image_url": {"url": url}})
    content.append({"type": "text", "text": QUESTION.format(n=traj.n_steps)})
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": content}]


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


def _json_object(text: str) -> dict[str, Any]:
    """The answer's one JSON object: the whole text, a fenced block, or the first object in it."""
    candidates = [text.strip(), *(m.strip() for m in _FENCE.findall(text))]
    for cand in candidates:
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    decoder = json.JSONDecoder()
    for i, ch in enumerate(text):
        if ch == "{":
            try:
                value, _ = decoder.raw_decode(text, i)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
    raise AnswerError("no JSON object in the answer")


def parse_answer(text: str, n_steps: int) -> Verdict:
    """Read a judge's answer (see :data:`QUESTION`).

    Raises:
        AnswerError: no JSON object, ``success`` not true or false, a confidence outside 0..1, or a step that is
            not one of the run's.
    """
    obj = _json_object(text)
    success = obj.get("success")
    if not isinstance(success, bool):
        raise AnswerError(f"'success' is {json.dumps(success)[:40]}, not true or false")
    conf = obj.get("confidence")
    if conf is not None:
        if isinstance(conf, bool) or not isinstance(conf, (int, float)) or not 0.0 <= float(conf) <= 1.0:
            raise AnswerError(f"'confidence' is {json.dumps(conf)[:40]}, not a number from 0 to 1")
        conf = float(conf)
    step = obj.get("first_error_step")
    first: int | None = None
    if step is not None and not success:
        if isinstance(step, str) and step.strip().isdigit():
            step = int(step.strip())
        if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= n_steps:
            raise AnswerError(f"'first_error_step' is {json.dumps(step)[:40]}, not a step from 1 to {n_steps}")
        first = step - 1
    reason = obj.get("reason")
    return Verdict(success, conf, first, _clip(reason, 500) if isinstance(reason, str) else "")
