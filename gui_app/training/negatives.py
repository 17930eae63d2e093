"""Negatives derived from successful recorded runs: adversarial instruction rewrites, truncations, swaps.

Each derived trajectory is a native directory whose media are the original run's video and frames, referenced by
relative path (no copies). Its outcome is ``success=False`` with source ``env`` (the environment's verdict on the
original run is what makes the rewritten pairing wrong) and its metadata says how it was made:
``negative_kind`` (``adversarial`` | ``truncation`` | ``swap``), ``derived_from`` (the original id),
``derived_from_path``, ``original_instruction`` and ``first_error_step``:

- **adversarial**: the instruction is rewritten to name something else that is on the same screen (another
  button label, link, tab, option, checkbox set, sender, file) or another value of the same kind (a text, a
  password, a user name taken from another episode of the task). ``first_error_step`` is the first step where
  the video departs from the new instruction (the click on the originally named element, the typing of the
  original text).
- **truncation**: the run is cut before its decisive step (steps and the video's frame count are cut);
  ``first_error_step`` is the cut point (the missing step), clamped to the last kept step.
- **swap**: the instruction of an episode of another task; ``first_error_step`` is 0.
"""

from __future__ import annotations

import copy
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gui_app.core.trajectory.model import Outcome, Trajectory

NEGATIVE_KINDS = ("adversarial", "truncation", "swap")


@dataclass
class Rewrite:
    """A rewritten instruction and the first step of the run that contradicts it."""

    instruction: str
    first_error_step: int
    changed: str  # what was changed, in words (kept in the metadata)


def _labels(traj: Trajectory) -> list[str]:
    return [str(s.extra.get("target", "")) for s in traj.steps]


def _first_step(traj: Trajectory, pred: Any) -> int:
    """Index of the first step satisfying ``pred(step)`` (harmless extra steps never count), else the last step."""
    for s in traj.steps:
        if not s.extra.get("harmless") and pred(s):
            return s.index
    return max(0, traj.n_steps - 1)


def _first_click(traj: Trajectory) -> int:
    return _first_step(traj, lambda s: s.action_type == "click")


def _first_type(traj: Trajectory, nth: int = 0) -> int:
    typed = [s.index for s in traj.steps if s.action_type == "type" and not s.extra.get("harmless")]
    return typed[nth] if len(typed) > nth else max(0, traj.n_steps - 1)


def _first_type_into(traj: Trajectory, field: str) -> int:
    """The first typing into the field whose label names ``field`` (an agent may type one value in pieces)."""
    return _first_step(traj, lambda s: s.action_type == "type" and field in str(s.extra.get("target", "")).lower())


def _step_naming(traj: Trajectory, value: str) -> int:
    """The first step whose target names ``value`` (the click on the original element)."""
    return _first_step(traj, lambda s: value and value in str(s.extra.get("target", "")))


def _tick_name(label: str) -> str | None:
    """The box a tick step names: ``label:NAME`` (agent A) or ``checkbox NAME`` (agent B)."""
    if label.startswith("label:"):
        return label.split(":", 1)[1]
    if label.startswith("checkbox ") and not label.endswith(")"):
        return label.removeprefix("checkbox ")
    return None


def _other(values: Sequence[str], exclude: set[str], rng: random.Random) -> str | None:
    # Case variants ("Ok" / "ok") are excluded: a rewrite must name something visibly different.
    low = {e.lower() for e in exclude}
    pool = sorted({v for v in values if v and v.lower() not in low})
    return rng.choice(pool) if pool else None


def _replace_quoted(utterance: str, old: str, new: str) -> str:
    if f'"{old}"' in utterance:
        return utterance.replace(f'"{old}"', f'"{new}"', 1)
    return re.sub(rf"\b{re.escape(old)}\b", new.replace("\\", "\\\\"), utterance, count=1)


def adversarial(traj: Trajectory, pool: dict[str, list[dict[str, str]]], rng: random.Random) -> Rewrite | None:
    """A plausible instruction for the same screen that the recorded run does not carry out.

    Args:
        traj: a successful recorded MiniWoB run.
        pool: field dicts of other episodes, per task (values of the same kind for text tasks).
        rng: randomness of the choice.

    Returns:
        None for tasks with only one possible instruction (click-test, focus-text, click-dialog, click-test-2,
        click-button-sequence) and when the screen offers no alternative.
    """
    md = traj.metadata
    task = md.get("task", "")
    fields: dict[str, str] = dict(md.get("fields") or {})
    cands: list[str] = list(md.get("candidates") or [])
    u = traj.instruction
    others = [f for f in pool.get(task, []) if f != fields]

    if task in ("click-test", "focus-text", "click-dialog", "click-test-2", "click-button-sequence",
                "click-test-transfer", "identify-shape", "simple-arithmetic", "simple-algebra", "text-transform",
                "copy-paste", "click-collapsible"):
        # One instruction only ("Click button ONE.", "Click button ONE, then click button TWO."): a rewrite
        # would never occur as a positive, so the text alone would give the label away.
        return None
    if task in ("click-button", "click-link", "click-option", "navigate-tree", "unicode-test", "click-dialog-2",
                "click-tab-2", "click-tab-2-easy", "click-tab-2-hard", "click-collapsible-2", "click-color"):
        old = fields.get("target", "")
        new = _other(cands, {old}, rng)
        if new is None:
            return None
        return Rewrite(_replace_quoted(u, old, new), _step_naming(traj, old), f"{old} -> {new}")
    if task == "click-tab":
        old = f"Tab #{fields.get('target', '')}"
        new = _other(cands, {old}, rng)
        return None if new is None else Rewrite(u.replace(old, new, 1), _step_naming(traj, old), f"{old} -> {new}")
    if task == "click-widget":
        old = fields.get("target", "")
        new = _other(cands, {old}, rng)
        return None if new is None else Rewrite(_replace_quoted(u, old, new), _first_click(traj), f"{old} -> {new}")
    if task == "choose-list":
        old = fields.get("target", "")
        new = _other(cands, {old}, rng)
        if new is None:
            return None
        return Rewrite(u.replace(old, new, 1), _first_type(traj), f"{old} -> {new}")
    if task in ("click-checkboxes", "click-checkboxes-large", "click-checkboxes-transfer"):
        want = [v for k, v in sorted(fields.items()) if k.startswith("target")]
        rest = [c for c in cands if c not in want]
        boxes = list(want)
        if want and rest and rng.random() < 0.5:
            boxes[rng.randrange(len(boxes))] = rng.choice(rest)  # one box replaced by another on the screen
        elif rest and (not want or rng.random() < 0.5):
            boxes.insert(rng.randrange(len(boxes) + 1), rng.choice(rest))  # one more box
        elif want:
            boxes.pop(rng.randrange(len(boxes)))  # one box fewer
        else:
            return None
        text = "Select " + (", ".join(boxes) if boxes else "nothing") + " and click Submit."
        labels = _labels(traj)
        fes = None
        ticks = [(i, _tick_name(lab)) for i, lab in enumerate(labels) if _tick_name(lab) is not None]
        for i, name in ticks:
            if name not in boxes:
                fes = i  # ticks a box the new instruction does not ask for
                break
        if fes is None:
            # Every tick is wanted, but a wanted box is never ticked: the departure is the Submit.
            fes = _first_step(traj, lambda s: "Submit" in str(s.extra.get("target", "")))
        return Rewrite(text, fes, f"{want} -> {boxes}")
    if task.startswith("email-inbox"):
        old = fields.get("by", "")
        new = _other(cands, {old}, rng)
        if new is None:
            return None
        return Rewrite(u.replace(old, new, 1), _first_click(traj), f"sender {old} -> {new}")
    if task in ("enter-text", "enter-password", "enter-text-dynamic"):
        old = fields.get("target", "")
        new = _other([f.get("target", "") for f in others], {old}, rng)
        return None if new is None else Rewrite(_replace_quoted(u, old, new), _first_type(traj), f"{old} -> {new}")
    if task == "enter-text-2":
        case = fields.get("case", "lower")
        flip = "upper" if case == "lower" else "lower"
        if rng.random() < 0.5:
            return Rewrite(u.replace(f"all {case} case", f"all {flip} case", 1), _first_type(traj),
                           f"case {case} -> {flip}")
        old = fields.get("text", "")
        new = _other([f.get("text", "") for f in others], {old}, rng)
        return None if new is None else Rewrite(_replace_quoted(u, old, new), _first_type(traj), f"{old} -> {new}")
    if task in ("login-user", "login-user-popup"):
        key = rng.choice(("username", "password"))
        old = fields.get(key, "")
        new = _other([f.get(key, "") for f in others], {old}, rng)
        if new is None:
            return None
        return Rewrite(_replace_quoted(u, old, new), _first_type_into(traj, key), f"{key} {old} -> {new}")
    if task in ("multi-layouts", "multi-orderings"):
        key = rng.choice(("genre", "director", "year"))
        old = fields.get(key, "")
        new = _other([f.get(key, "") for f in others], {old}, rng)
        if not old or new is None:
            return None
        text = re.sub(rf"\b{re.escape(old)}\b", new, u, count=1)
        return Rewrite(text, _first_type_into(traj, key), f"{key} {old} -> {new}")
    if task in ("search-engine",):
        old = fields.get("query", "")
        new = _other([f.get("query", "") for f in others], {old}, rng)
        return None if new is None else Rewrite(_replace_quoted(u, old, new), _first_type(traj), f"{old} -> {new}")
    if task in ("read-table",):
        old = fields.get("target", "")
        new = _other(cands, {old}, rng)
        return None if new is None else Rewrite(u.replace(old, new, 1), _first_type(traj), f"{old} -> {new}")
    if task in ("focus-text-2", "copy-paste-2", "find-word"):
        old = fields.get("target", "")
        m = re.match(r"(\d+)", old)
        if not m:
            return None
        n = int(m.group(1))
        top = 6 if task == "find-word" else 3  # the paragraph has at least 6 words; there are 3 boxes or areas
        new_n = rng.choice([k for k in range(1, top + 1) if k != n])
        suffix = {1: "st", 2: "nd", 3: "rd"}.get(new_n, "th")
        step = _first_click(traj) if task != "find-word" else _first_type(traj)
        text = re.sub(rf"\b{n}(st|nd|rd|th)\b", f"{new_n}{suffix}", u, count=1)
        return None if text == u else Rewrite(text, step, f"{n} -> {new_n}{suffix}")
    if task == "use-spinner":
        old = fields.get("target", "")
        try:
            n = int(old)
        except ValueError:
            return None
        new = str(n + rng.choice((-2, -1, 1, 2)))
        return Rewrite(u.replace(f"Select {old} ", f"Select {new} ", 1), _first_click(traj), f"{old} -> {new}")
    if task == "click-shades":
        old = fields.get("target", "")
        new = rng.choice([c for c in ("red", "green", "blue") if c != old])
        return Rewrite(u.replace(old, new, 1), _first_click(traj), f"{old} -> {new}")
    if task in ("social-media", "social-media-all", "social-media-some"):
        old = fields.get("user", "")
        new = _other(cands, {old}, rng)
        return None if new is None else Rewrite(u.replace(old, new, 1), _first_step(
            traj, lambda s: s.action_type in ("click", "move", "scroll")), f"user {old} -> {new}")
    if task == "use-autocomplete":
        start, end = fields.get("start", ""), fields.get("end", "")
        alt = [f for f in others if (f.get("start") or "")[:1].lower() not in ("", start[:1].lower())]
        if not alt:
            return None
        f = rng.choice(alt)
        text = u.replace(f'"{start}"', f'"{f["start"]}"', 1)
        if end and f.get("end"):
            text = text.replace(f'"{end}"', f'"{f["end"]}"', 1)
        return Rewrite(text, _first_type(traj), f"{start}..{end} -> {f['start']}..{f.get('end', '')}")
    return None


def truncation_point(traj: Trajectory, rng: random.Random) -> int | None:
    """How many steps to keep so that the decisive (last) step is missing; None for one-step runs."""
    if traj.n_steps < 2:
        return None
    return rng.randint(1, traj.n_steps - 1)


def derive(traj: Trajectory, kind: str, *, instruction: str | None = None, first_error_step: int = 0,
           keep_steps: int | None = None, note: str = "", swap_source: str | None = None) -> Trajectory:
    """A derived negative of ``traj``: same media (absolute paths; saved relative), new instruction or fewer steps.

    Args:
        kind: ``adversarial``, ``truncation`` or ``swap``.
        instruction: the new instruction (adversarial, swap).
        first_error_step: the first step that departs from the (new) instruction.
        keep_steps: number of steps kept (truncation); the video's frame count becomes ``keep_steps + 1``.
    """
    out = copy.deepcopy(traj)
    out.id = f"{traj.id}~{kind}"
    out.instruction = instruction if instruction is not None else traj.instruction
    if keep_steps is not None:
        out.steps = out.steps[:keep_steps]
        if out.video is not None:
            out.video.frames = keep_steps + 1  # frame 0 + one per kept step; later frames are not part of it
    fes = max(0, min(first_error_step, out.n_steps - 1))
    out.outcome = Outcome(success=False, score=None, source="env")
    md = dict(traj.metadata)
    md.update({"negative_kind": kind, "derived_from": traj.id, "derived_from_path": traj.source_path,
               "original_instruction": traj.instruction, "first_error_step": fes, "derivation": note,
               "original_raw_reward": traj.metadata.get("raw_reward"), "original_success": traj.outcome.success})
    if swap_source:
        md["swap_instruction_from"] = swap_source
    out.metadata = md
    out.warnings = []
    return out
