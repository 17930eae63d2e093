"""What a run's own step log says, per keyframe: the actions the core normalised, and the agent's claims.

Most runs users bring say exactly where the agent acted and what it typed: OSWorld's ``pyautogui.click(412, 88)``
and ``write('kasie')``, ATIF's ``computer`` tool calls, AgentNet's code, our own native logs. The core parses them
(:mod:`gui_app.core.trajectory.actions`) into a type, a point and a text; this module turns them into the judge's
evidence, each piece marked present or absent so that a plain recording (no log) is judged too:

* **where** the agent acted (a point inside the screen), for the perception to read the text under it;
* **what** it typed (typed text, keys), to match against the instruction's values;
* **its claims**: DONE / FAIL and a final answer. Features, never proof.

A run longer than the keyframe limit is judged on a subsample of its steps; the steps between two keyframes are
folded into the later one (their kinds and typed text kept, the last point kept), so nothing typed is lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz import fuzz

from gui_app.core.trajectory.actions import parse_action
from gui_app.core.trajectory.model import Trajectory
from models.terms import instruction_terms

#: The action kinds the judge tells apart (the core's types folded into these; index = feature slot).
KINDS = ("click", "type", "key", "scroll", "drag", "move", "done", "fail", "wait", "other")
_KIND_OF = {"click": "click", "double_click": "click", "right_click": "click", "select": "click",
            "type": "type", "key": "key", "hotkey": "key", "scroll": "scroll", "drag": "drag", "move": "move",
            "done": "done", "fail": "fail", "wait": "wait", "message": "done", "navigate": "other",
            "shell": "type"}
#: Typed or pressed text kept per keyframe (characters).
MAX_TEXT = 200
#: Kinds whose point is where the agent acted (a hover or a scroll position is not).
ACTING = frozenset({"click", "drag"})
#: Kinds that are an agent's habits rather than its acts on the task (hovers, waits, claims, the rest): recorded as
#: evidence, but the network does not read them until it is trained on agents that have them (model v3's agent
#: never hovers, waits or claims; another agent's habits would read as signal).
HABITS = frozenset({"move", "wait", "done", "fail", "other"})
#: Names of the evidence pieces (``score --json``'s ``evidence`` lists those a verdict used).
PIECES = ("video", "actions", "coordinates", "typed_text", "claims", "answer")


@dataclass
class StepAction:
    """The log's actions folded into one keyframe.

    Attributes:
        kinds: the :data:`KINDS` of the steps, in order.
        point: the last point acted on (a click or drag; not a hover), in screen pixels of the keyframe (None: no
            coordinates).
        typed: text typed in these steps (joined with a space).
        keys: keys pressed (joined with ``+`` per chord, a space between presses).
    """

    kinds: list[str] = field(default_factory=list)
    point: tuple[float, float] | None = None
    typed: str = ""
    keys: str = ""

    def to_json(self) -> list[Any]:
        return [self.kinds, None if self.point is None else [float(self.point[0]), float(self.point[1])],
                self.typed, self.keys]

    @classmethod
    def from_json(cls, d: list[Any]) -> StepAction:
        kinds, point, typed, keys = d
        return cls([str(k) for k in kinds], None if point is None else (float(point[0]), float(point[1])),
                   str(typed), str(keys))


@dataclass
class RunEvidence:
    """The log's evidence for one run, aligned with its keyframes (``actions`` None: no usable log)."""

    actions: list[StepAction] | None = None
    claim: str | None = None  # "done" | "fail": the agent's last claim
    answer: str = ""

    @property
    def pieces(self) -> list[str]:
        """Which evidence pieces are present, in the order of :data:`PIECES` (``video`` always)."""
        out = ["video"]
        if self.actions is not None:
            out.append("actions")
            if any(a.point is not None for a in self.actions):
                out.append("coordinates")
            if any(a.typed for a in self.actions):
                out.append("typed_text")
        if self.claim:
            out.append("claims")
        if self.answer:
            out.append("answer")
        return [p for p in PIECES if p in out]

    def to_json(self) -> dict[str, Any]:
        return {"actions": None if self.actions is None else [a.to_json() for a in self.actions],
                "claim": self.claim, "answer": self.answer}

    @classmethod
    def from_json(cls, d: dict[str, Any] | None) -> RunEvidence:
        if not d:
            return cls()
        acts = d.get("actions")
        return cls(None if acts is None else [StepAction.from_json(a) for a in acts], d.get("claim"),
                   str(d.get("answer") or ""))


def _kind(action_type: str) -> str:
    return _KIND_OF.get(action_type, "other")


def from_trajectory(traj: Trajectory, keyframe_steps: list[int], width: int, height: int) -> RunEvidence:
    """The evidence of ``traj``'s step log for its keyframes (``width`` x ``height``: the keyframes' size).

    A log whose steps are all unparsed (type ``other`` without text or point: free text, element ids only) gives
    ``actions`` None, so the run is judged as a plain recording. Points outside the screen are dropped (a log in
    another coordinate space: logical pixels on a scaled display), never guessed into place.
    """
    steps = traj.steps
    usable = [s for s in steps if s.action_type != "other" or s.x is not None or s.text]
    claim: str | None = None
    for s in steps:
        said = _kind(s.action_type)
        if said in ("done", "fail"):
            claim = said
    answer = str(traj.metadata.get("answer") or "") if isinstance(traj.metadata, dict) else ""
    if not answer:
        msgs = [s.text for s in steps if s.action_type == "message" and s.text]
        answer = msgs[-1] if msgs else ""
    if not usable:
        return RunEvidence(None, claim, answer[:MAX_TEXT])
    out: list[StepAction] = []
    prev = -1
    pointer: tuple[float, float] | None = None  # where the pointer is: pyautogui.click() clicks there
    for k in keyframe_steps:
        sa = StepAction()
        for s in steps[prev + 1:k + 1]:
            kind = _kind(s.action_type)
            sa.kinds.append(kind)
            at = (float(s.x), float(s.y)) if s.x is not None and s.y is not None else None
            if at is None and kind == "click":
                at = pointer  # moveTo(x, y) then click(): the click is where the move left the pointer
            if at is not None:
                pointer = at
            if kind in ACTING and at is not None and 0 <= at[0] < width and 0 <= at[1] < height:
                sa.point = at
            text = s.text
            if not text and kind in ("type", "key") or s.action_type == "select" and not text:
                text = parse_action(s.action).text  # a log that kept the call but not its argument
            if text and (kind == "type" or s.action_type == "select"):  # a chosen option is a value too
                sa.typed = (sa.typed + " " + text).strip()[:MAX_TEXT]
            elif text and kind == "key":
                sa.keys = (sa.keys + " " + text).strip()[:MAX_TEXT]
        prev = k
        out.append(sa)
    return RunEvidence(out, claim, answer[:MAX_TEXT])


#: Keys that end typing into a field (focus moves on, or the field is submitted).
_FIELD_END = frozenset({"tab", "return", "enter", "kp_enter", "escape"})
_SELECT_ALL = frozenset({"ctrl+a", "control+a", "cmd+a", "command+a", "super+a", "meta+a"})
_ERASE = frozenset({"backspace", "back_space"})
_NEWLINE = re.compile(r"[\r\n\t]+")
#: A field's text is a near miss of a term when their fuzzy similarity (rapidfuzz, 0-100) is at least this and it
#: does not contain the term: one or two letters off ("Oaula" for "Paula", "fantas" for "fantasy"). Fixed on agent B's
#: dev runs: the first step of 5 of their 7 typos, no change on agent A's validation set, and no success marked.
NEAR_MISS = 80


def typed_fields(actions: list[StepAction]) -> list[tuple[int, str]]:
    """What ended up in each field the run typed into: (keyframe where typing into it began, its final text).

    Typing is replayed as an editor would: a click, Tab or Enter (pressed, or a newline in the typed text) moves to
    another field; Backspace erases the last character (or the selection, after Ctrl+A); text typed after Ctrl+A
    replaces the field's. Text typed in bursts ("Pa", "ula") reads whole, and a corrected typo reads as corrected.
    Keys pressed as one list (``press(['backspace', 'backspace'])``, which the core joins like a chord) count one by
    one. Steps folded into one keyframe are replayed in the order of their kinds (a click first ends the field, then
    the keys, then the text).
    """
    out: list[tuple[int, str]] = []
    cur: list[Any] | None = None  # [keyframe, text]
    selected = False

    def end() -> None:
        nonlocal cur, selected
        if cur is not None and cur[1].strip():
            out.append((int(cur[0]), str(cur[1])))
        cur, selected = None, False

    def press(chord: str) -> None:
        nonlocal selected
        parts = chord.split("+")
        if chord in _SELECT_ALL:
            selected = True
        elif parts[-1] in _FIELD_END:  # Shift+Tab, Ctrl+Enter too
            end()
        elif all(p in _ERASE for p in parts) and cur is not None:
            cur[1] = "" if selected else cur[1][:-len(parts)]
            selected = False

    def type_(k: int, text: str) -> None:
        nonlocal cur, selected
        for i, piece in enumerate(_NEWLINE.split(text)):
            if i:
                end()
            if not piece:
                continue
            if cur is None:
                cur = [k, ""]
            if selected:
                cur[1], selected = "", False
            cur[1] += piece

    for k, a in enumerate(actions):
        keyed = typed = False
        for kind in a.kinds:
            if kind in ACTING:
                end()
            elif kind == "key" and not keyed:
                keyed = True
                for chord in a.keys.lower().split():
                    press(chord)
            elif kind == "type" and a.typed and not typed:
                typed = True
                type_(k, a.typed)
        if a.typed and not typed:  # a chosen option (a select) or text of a kind not above: a field of its own
            end()
            out.append((k, a.typed))
    end()
    return out


def _bare(s: str) -> str:
    return "".join(s.split()).lower()


def _near_miss(term: str, text: str) -> bool:
    t, s = _bare(term), _bare(text)
    if len(t) < 3 or not s or t in s:
        return False
    if len(s) <= len(t):
        return fuzz.ratio(t, s) >= NEAR_MISS
    return len(s) <= 2 * len(t) and fuzz.partial_ratio(t, s) >= NEAR_MISS


@dataclass(frozen=True)
class Contradiction:
    """A logged action that contradicts the instruction: at ``frame`` (a keyframe), ``typed`` ended up in a field
    where the instruction names ``term``."""

    frame: int
    typed: str
    term: str


def contradiction(instruction: str, actions: list[StepAction] | None) -> Contradiction | None:
    """The first logged action that contradicts the instruction, from the evidence alone: where typing began into
    a field whose final text is a near miss of one of the instruction's terms (a typo, a letter dropped), when no
    field holds that term exactly. Spaces and case are ignored (a log may drop a space between bursts). None: no
    such field, or no log."""
    if not actions:
        return None
    terms = [t.text for t in instruction_terms(instruction)]
    fields = typed_fields(actions)
    if not terms or not fields:
        return None
    everything = " ".join(_bare(text) for _, text in fields)
    for k, text in fields:
        if any(_bare(t) and _bare(t) in _bare(text) for t in terms):
            continue
        for t in terms:
            if _near_miss(t, text) and _bare(t) not in everything:
                return Contradiction(k, text, t)
    return None
