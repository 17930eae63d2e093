"""The scripted agent's hands and eyes on the desktop: every action is real X input and one recorded step.

An :class:`Actor` performs pyautogui-style actions through ``xdotool`` (pointer moves, clicks, typing, hotkeys,
wheel), waits until the screen settles (the application has reacted), takes a screenshot without the pointer and
records the step with its wall-clock times and the action as pyautogui code, as an OSWorld agent's step would be
logged. Between steps it "thinks" for a while (an agent waiting on its model): the recordings are long and mostly
still, as real runs are.

The agent marks the step where it first departs from a correct run (:meth:`Actor.mark_deviation`) and, in a threat
scenario, the step of its first harmful action (:meth:`Actor.mark_harm`); whether the run then fails, or did harm,
is for the checkers alone to say.

Two agent profiles share these hands: ``a`` (the first agent) and ``b``, whose habits differ where agents differ
(it hovers over a target before clicking it now and then, and stops to look around or wait more often), so that a
judge does not learn one agent's rhythm.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gui_app.recorders.desktop.display import Display

#: The agent profiles (``collect desktop --profile``).
PROFILES = ("a", "b")

#: Fewest and most steps an episode takes (real runs of such tasks take 5-40 actions).
MIN_STEPS = 5
MAX_STEPS = 40

# xdotool key names for pyautogui key names the tasks use.
_XKEYS = {"ctrl": "ctrl", "shift": "shift", "alt": "alt", "enter": "Return", "return": "Return", "esc": "Escape",
          "escape": "Escape", "tab": "Tab", "backspace": "BackSpace", "delete": "Delete", "del": "Delete",
          "home": "Home", "end": "End", "up": "Up", "down": "Down", "left": "Left", "right": "Right",
          "pageup": "Prior", "pagedown": "Next", "space": "space", "f2": "F2", "f5": "F5", "super": "super"}


class StepLimit(Exception):
    """The episode used :data:`MAX_STEPS` steps: the agent stops where it is."""


@dataclass
class Recorded:
    """One executed action (times are wall-clock seconds from :func:`time.time`)."""

    index: int
    action: str  # pyautogui code, or DONE / FAIL / WAIT as OSWorld agents write them
    action_type: str
    x: float | None
    y: float | None
    text: str | None
    t_action: float  # when the action was sent
    t_shot: float  # when the screenshot after it was taken
    screenshot: np.ndarray
    target: str = ""
    harmless: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


class Actor:
    """Performs actions on ``display`` and records them.

    Args:
        display: the worker's display.
        rng: the episode's randomness (click points, pauses).
        think: (min, max) seconds of "thinking" before each action; occasionally longer stretches.
        profile: the agent profile (one of :data:`PROFILES`): ``b`` hovers before some clicks and adds harmless
            looks and waits.
    """

    def __init__(self, display: Display, rng: random.Random, think: tuple[float, float] = (0.4, 2.0),
                 profile: str = "a"):
        if profile not in PROFILES:
            raise ValueError(f"unknown agent profile {profile!r} (known: {', '.join(PROFILES)})")
        self.d = display
        self.rng = rng
        self.think = think
        self.profile = profile
        self.steps: list[Recorded] = []
        self._mark_pending = False
        self._mark_index: int | None = None
        self._harm_pending = False
        self._harm_index: int | None = None
        self._in_habit = False
        self.done_called = False

    # -- bookkeeping -----------------------------------------------------------------------------------------
    @property
    def n_steps(self) -> int:
        return len(self.steps)

    def mark_deviation(self) -> None:
        """The next action is the agent's first departure from a correct run."""
        if self._mark_index is None:
            self._mark_pending = True

    def deviation_step(self) -> int | None:
        if self._mark_index is not None:
            return self._mark_index
        return self.n_steps if self._mark_pending else None

    def mark_harm(self) -> None:
        """The next (not harmless) action is the agent's first harmful one: it types the secret where it does not
        belong, runs the untrusted or destructive command, adds the unwanted purchase, addresses the attacker."""
        if self._harm_index is None:
            self._harm_pending = True

    def harm_step(self) -> int | None:
        if self._harm_index is not None:
            return self._harm_index
        return self.n_steps if self._harm_pending else None

    def habit(self) -> None:
        """Profile ``b``'s extra harmless step before an action, now and then: a look around or a short wait."""
        if self.profile != "b" or self._in_habit or self.done_called or self.rng.random() >= 0.07:
            return
        self._in_habit = True
        try:
            self.look_around("look over the screen" if self.rng.random() < 0.5 else "check the screen")
        finally:
            self._in_habit = False

    def pause(self, lo: float | None = None, hi: float | None = None) -> None:
        """Think before acting: the screen stays still meanwhile (and so does the video)."""
        lo = self.think[0] if lo is None else lo
        hi = self.think[1] if hi is None else hi
        t = self.rng.uniform(lo, hi)
        if self.rng.random() < 0.08:  # now and then a long stretch, as when a model call is slow
            t += self.rng.uniform(2.0, 5.0)
        time.sleep(t)

    def _step(self, action: str, action_type: str, do: Any, x: float | None = None, y: float | None = None,
              text: str | None = None, target: str = "", harmless: bool = False, settle: float = 3.0) -> None:
        if self.n_steps >= MAX_STEPS:
            raise StepLimit
        if self._mark_pending and not harmless:
            self._mark_pending = False
            self._mark_index = self.n_steps
        if self._harm_pending and not harmless:
            self._harm_pending = False
            self._harm_index = self.n_steps
        self.pause()
        t_action = time.time()
        if do is not None:
            do()
        shot = self.d.wait_still(timeout=settle) if settle > 0 else self.d.screenshot()
        self.steps.append(Recorded(self.n_steps, action, action_type, x, y, text, t_action, time.time(), shot,
                                   target=target, harmless=harmless))

    def _jitter(self, box: tuple[float, float, float, float]) -> tuple[int, int]:
        """A point inside ``box`` = (x, y, w, h), near its middle but not exactly on it (people click so)."""
        x, y, w, h = box
        return (int(round(x + w * min(max(self.rng.gauss(0.5, 0.14), 0.2), 0.8))),
                int(round(y + h * min(max(self.rng.gauss(0.5, 0.12), 0.25), 0.75))))

    # -- pointer ---------------------------------------------------------------------------------------------
    def click(self, box: tuple[float, float, float, float], target: str = "", button: int = 1, clicks: int = 1,
              harmless: bool = False, settle: float = 3.0) -> tuple[int, int]:
        """Click inside ``box`` (screen pixels): a pyautogui ``click``/``doubleClick``/``rightClick``.

        Profile ``b`` first hovers over the target now and then (a harmless step: the pointer rests on it).
        """
        if not harmless:
            self.habit()
            if self.profile == "b" and not self._in_habit and self.rng.random() < 0.2:
                self.move(box, target=f"hover {target}".strip())
        x, y = self._jitter(box)
        if clicks == 2:
            code, kind = f"pyautogui.doubleClick(x={x}, y={y})", "double_click"
        elif button == 3:
            code, kind = f"pyautogui.rightClick(x={x}, y={y})", "right_click"
        else:
            code, kind = f"pyautogui.click(x={x}, y={y})", "click"

        def do() -> None:
            self.d.xdotool("mousemove", "--sync", str(x), str(y))
            self.d.xdotool("click", "--repeat", str(clicks), "--delay", "90", str(button))

        self._step(code, kind, do, x, y, target=target, harmless=harmless, settle=settle)
        return x, y

    def shift_click(self, box: tuple[float, float, float, float], target: str = "") -> None:
        x, y = self._jitter(box)

        def do() -> None:
            self.d.xdotool("mousemove", "--sync", str(x), str(y))
            self.d.xdotool("keydown", "shift", "click", "1", "keyup", "shift")

        self._step(f"pyautogui.keyDown('shift'); pyautogui.click(x={x}, y={y}); pyautogui.keyUp('shift')", "click",
                   do, x, y, target=target)

    def move(self, box: tuple[float, float, float, float], target: str = "", harmless: bool = True) -> None:
        """Move the pointer (a hover: agents look before they click)."""
        x, y = self._jitter(box)
        self._step(f"pyautogui.moveTo({x}, {y})", "move",
                   lambda: self.d.xdotool("mousemove", "--sync", str(x), str(y)), x, y, target=target,
                   harmless=harmless, settle=1.0)

    def scroll(self, box: tuple[float, float, float, float], clicks: int, target: str = "",
               harmless: bool = False) -> None:
        """Turn the wheel ``clicks`` notches (negative: down, as in pyautogui) at a point in ``box``."""
        x, y = self._jitter(box)
        button = "5" if clicks < 0 else "4"

        def do() -> None:
            self.d.xdotool("mousemove", "--sync", str(x), str(y))
            self.d.xdotool("click", "--repeat", str(abs(clicks)), "--delay", "60", button)

        self._step(f"pyautogui.scroll({clicks}, x={x}, y={y})", "scroll", do, x, y, target=target,
                   harmless=harmless)

    # -- keyboard --------------------------------------------------------------------------------------------
    def type(self, text: str, target: str = "", settle: float = 3.0) -> None:
        """Type ``text`` key by key (pyautogui ``typewrite``); ``\\n`` presses Return."""
        self.habit()

        def do() -> None:
            parts = text.split("\n")
            for i, part in enumerate(parts):
                if part:
                    self.d.xdotool("type", "--delay", str(self.rng.randint(25, 70)), "--", part, timeout=60)
                if i < len(parts) - 1:
                    self.d.xdotool("key", "Return")

        self._step(f"pyautogui.typewrite({text!r})", "type", do, text=text, target=target, settle=settle)

    def hotkey(self, *keys: str, target: str = "", settle: float = 3.0) -> None:
        """Press keys together (pyautogui ``hotkey``) or one key (``press``)."""
        self.habit()
        combo = "+".join(_XKEYS.get(k, k) for k in keys)
        if len(keys) == 1:
            code, kind = f"pyautogui.press({keys[0]!r})", "key"
        else:
            code, kind = "pyautogui.hotkey(" + ", ".join(repr(k) for k in keys) + ")", "hotkey"
        self._step(code, kind, lambda: self.d.xdotool("key", "--clearmodifiers", combo), text="+".join(keys),
                   target=target, settle=settle)

    def press(self, key: str, times: int = 1, target: str = "") -> None:
        k = _XKEYS.get(key, key)
        code = f"pyautogui.press({key!r})" if times == 1 else f"pyautogui.press({key!r}, presses={times})"
        self._step(code, "key", lambda: self.d.xdotool("key", "--delay", "60", *([k] * times)), text=key,
                   target=target)

    # -- ending ----------------------------------------------------------------------------------------------
    def wait(self, seconds: float) -> None:
        """An explicit WAIT step (OSWorld agents emit it while an application loads)."""
        self._step("WAIT", "wait", lambda: time.sleep(seconds), target="wait")

    def look_around(self, target: str = "look over the screen") -> None:
        """A harmless step: the pointer drifts to where the agent is reading, or it waits for the screen."""
        w, h = self.d.size
        if self.rng.random() < 0.7:
            self.move((w * 0.15, h * 0.15, w * 0.7, h * 0.7), target=target)
        else:
            self._step("WAIT", "wait", lambda: time.sleep(self.rng.uniform(0.5, 1.5)), target=target, harmless=True,
                       settle=1.0)

    def done(self) -> None:
        """The agent declares the task finished (OSWorld's ``DONE``); the checker decides whether it is.

        A short run first looks over its result (as agents re-read the screen before they stop), so that every
        episode has at least :data:`MIN_STEPS` steps.
        """
        if self.done_called:
            return
        while self.n_steps < MIN_STEPS - 1:  # harmless: a deviation marked for DONE stays on DONE
            self.look_around("check the result")
        self.done_called = True
        self._step("DONE", "done", None, target="done", settle=1.0)
