"""Scripted agents for MiniWoB++ tasks, with realistic mistakes injected on demand.

An agent reads the live DOM through its page handle (the recorder's session: ``query(css)``, ``click(x, y)``,
``type(text)``, ``press(key)``, ``scroll(x, y)``), decides from the instruction fields, and acts through real
MiniWoB actions. Each agent lists the mistakes it can make (``MISTAKES``); when asked to make one it does so the
way a weak agent would (a neighbouring element, a typo, swapped fields, a missed checkbox, stopping early, a wrong
click followed by a recovery) and marks the step where it first departed from a correct run
(:attr:`Agent.first_error_step`). Whether the run then fails is decided by the environment alone.

Clicks land at a random point inside the element (not its exact centre), as a human or a model would click.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

from gui_app.core.errors import RollscopeError
from gui_app.recorders.page import EpisodeOver  # noqa: F401 (re-exported for callers of the first recorder)

#: All mistake kinds, for reports.
MISTAKE_TYPES = ("wrong_element", "typo", "swapped_fields", "wrong_text", "wrong_option", "missed_checkbox",
                 "extra_checkbox", "premature_stop", "wrong_then_recover", "missed_field", "wrong_order")


class AgentError(RollscopeError):
    """The page does not look as the agent expects (an element is missing)."""


@dataclass
class El:
    """A DOM element as the agent sees it: rectangle in CSS pixels of the page, text and state."""

    i: int = 0
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0
    visible: bool = True
    text: str = ""
    all_text: str = ""  # textContent: includes the text of hidden descendants (collapsed folders)
    value: str | None = None
    checked: bool = False
    id: str = ""
    cls: str = ""
    tag: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    href: str | None = None
    pts: list[list[float]] = field(default_factory=list)  # points where a click reaches this element

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


class Page(Protocol):
    """What the recorder's session offers an agent (both agents use it; each reads the page its own way)."""

    n_steps: int

    def mark_deviation(self) -> None: ...
    def deviation_step(self) -> int | None: ...

    def query(self, selector: str) -> list[El]: ...
    def click(self, x: float, y: float, label: str = "", settle_ms: float = 60) -> None: ...
    def type(self, text: str, label: str = "", settle_ms: float = 40) -> None: ...
    def press(self, key: str, label: str = "", settle_ms: float = 40) -> None: ...
    def scroll(self, x: float, y: float, down: bool = True, label: str = "", settle_ms: float = 200) -> None: ...
    def wait(self, ms: float) -> None: ...
    def move(self, x: float, y: float, label: str = "hover", settle_ms: float = 60, harmless: bool = True) -> None: ...
    def wait_step(self, ms: float = 300, label: str = "wait") -> None: ...
    def done_step(self, label: str = "done") -> None: ...
    def execute(self, js: str, *args: Any) -> Any: ...
    def mark_recovered(self) -> None: ...


def typo(text: str, rng: random.Random) -> str:
    """A plausible typing slip: swapped neighbours, a dropped, doubled or replaced character (never a no-op)."""
    if not text:
        return "x"
    for _ in range(10):
        i = rng.randrange(len(text))
        kind = rng.choice(("swap", "drop", "double", "replace"))
        if kind == "swap" and len(text) > 1:
            j = min(i, len(text) - 2)
            out = text[:j] + text[j + 1] + text[j] + text[j + 2:]
        elif kind == "drop" and len(text) > 1:
            out = text[:i] + text[i + 1:]
        elif kind == "double":
            out = text[:i + 1] + text[i] + text[i + 1:]
        else:
            pool = "abcdefghijklmnopqrstuvwxyz"
            out = text[:i] + rng.choice(pool.replace(text[i].lower(), "")) + text[i + 1:]
        if out != text:
            return out
    return text + "x"


class Agent:
    """Base of the scripted agents.

    Args:
        page: the recorder's page handle.
        utterance: the instruction shown in the task.
        fields: MiniWoB's parsed instruction fields (``target``, ``username``, ...).
        mistake: the mistake to make (one of ``MISTAKES``) or None.
        rng: randomness for click points and typos.
    """

    MISTAKES: tuple[str, ...] = ()
    #: CSS selector of the elements among which the instruction picks (other buttons, links, options...): their
    #: texts are stored with the episode so that adversarial rewrites can name something really on the screen.
    CANDIDATES: str | None = None

    def __init__(self, page: Page, utterance: str, fields: dict[str, str], mistake: str | None,
                 rng: random.Random):
        self.page = page
        self.utterance = utterance
        self.fields = fields
        self.mistake = mistake if mistake in self.MISTAKES else None
        self.rng = rng
        self.mistake_applied: str | None = None

    def candidates(self) -> list[str]:
        """Texts of the candidate elements on the initial screen (for adversarial instruction rewrites)."""
        if not self.CANDIDATES:
            return []
        return [e.text for e in self.page.query(self.CANDIDATES) if e.text]

    # -- helpers -------------------------------------------------------------------------------------------------
    @property
    def first_error_step(self) -> int | None:
        """Index of the first step that departs from a correct run (the missing step after a premature stop)."""
        return self.page.deviation_step()

    def deviate(self, kind: str) -> None:
        """Mark the next action as the first departure from a correct run."""
        if self.mistake_applied is None:
            self.mistake_applied = kind
            self.page.mark_deviation()

    def all(self, selector: str, visible: bool = True) -> list[El]:
        return [e for e in self.page.query(selector) if e.visible or not visible]

    def one(self, selector: str, pred: Any = None) -> El:
        els = [e for e in self.all(selector) if pred is None or pred(e)]
        if not els:
            raise AgentError(f"no element matches {selector!r} in: {self.utterance}")
        return els[0]

    def click_el(self, el: El, label: str = "", settle_ms: float = 60) -> None:
        # A point inside the element where a click reaches it (not covered by an overlapping element), with a
        # little jitter: a realistic click, never exactly the centre, never on the border.
        inner = [p for p in el.pts if el.x + 0.15 * el.w <= p[0] <= el.x + 0.85 * el.w] or el.pts
        if inner:
            px, py = self.rng.choice(inner)
            x = min(max(px + self.rng.uniform(-1.5, 1.5), el.x + 1), el.x + el.w - 1)
            y = min(max(py + self.rng.uniform(-1.5, 1.5), el.y + 1), el.y + el.h - 1)
        else:
            x = el.x + el.w * self.rng.uniform(0.2, 0.8)
            y = el.y + el.h * self.rng.uniform(0.25, 0.75)
        self.page.click(x, y, label or _describe(el), settle_ms=settle_ms)

    def miss_click(self, el: El, label: str = "empty area") -> None:
        """Click near ``el`` but outside it, on the page background."""
        for _ in range(20):
            x = self.rng.uniform(4, 156)
            y = self.rng.uniform(55, 205)
            if not (el.x - 4 <= x <= el.x + el.w + 4 and el.y - 4 <= y <= el.y + el.h + 4):
                break
        self.page.click(x, y, label)

    def type_into(self, el: El, text: str, label: str = "", deviation: str | None = None) -> None:
        """Click into a field and type; ``deviation`` marks the typing (not the click) as the first error."""
        self.click_el(el, label or _describe(el))
        if deviation:
            self.deviate(deviation)
        self.page.type(text, label=label or _describe(el))

    def submit_unless_stopping(self, selector: str = "#subbtn", label: str = "") -> None:
        """The final click (on ``selector``; ``label`` empty: the element described), or (for a ``premature_stop``
        mistake) none: the missing click is the departure."""
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        self.click_el(self.one(selector), label)

    def run(self) -> None:
        raise NotImplementedError


def _describe(el: El) -> str:
    name = el.text[:30] or el.value or el.id or el.cls.split(" ")[0]
    return f"{el.tag}:{name}" if name else el.tag


def _others(els: list[El], target: El) -> list[El]:
    return [e for e in els if (e.x, e.y) != (target.x, target.y)]


# -- single-click tasks -----------------------------------------------------------------------------------------
class ClickTest(Agent):
    """click-test: click the one button."""

    MISTAKES = ("wrong_element", "wrong_then_recover")
    selector = "#subbtn"

    def target(self) -> El:
        return self.one(self.selector)

    def run(self) -> None:
        t = self.target()
        if self.mistake:
            self.deviate(self.mistake)
            self.miss_click(t)
            if self.mistake == "wrong_element":
                return  # believes it is done
        self.click_el(t)


class FocusText(ClickTest):
    """focus-text: click into the text box."""

    selector = "#tt"


class ClickDialog(ClickTest):
    """click-dialog: close the dialog with its x button."""

    selector = "button.ui-dialog-titlebar-close"

    def run(self) -> None:
        t = self.target()
        if self.mistake:
            self.deviate(self.mistake)
            body = self.one(".ui-dialog-content")
            self.click_el(body, "dialog text")  # clicks the dialog body instead of its close button
            if self.mistake == "wrong_element":
                return
        self.click_el(t)


class ClickAmong(Agent):
    """Click the element whose text is the target among similar ones (click-button, click-link, click-test-2)."""

    MISTAKES = ("wrong_element",)
    selector = "button"
    field_name = "target"

    def run(self) -> None:
        els = self.all(self.selector)
        want = self.fields.get(self.field_name, "")
        target = next((e for e in els if e.text == want), None)
        if target is None:
            raise AgentError(f"no {self.selector} with text {want!r}")
        others = [e for e in _others(els, target) if e.text != want]
        if self.mistake == "wrong_element" and others:
            self.deviate("wrong_element")
            # The nearest other candidate: the typical confusion of a neighbouring element.
            target = min(others, key=lambda e: abs(e.cy - target.cy) + abs(e.cx - target.cx))
        self.click_el(target)


class ClickButton(ClickAmong):
    selector = CANDIDATES = "#area button"


class ClickLink(ClickAmong):
    selector = CANDIDATES = "#area span.alink"


class ClickTest2(ClickAmong):
    selector = CANDIDATES = "#area button"


class ClickButtonSequence(Agent):
    """click-button-sequence: ONE then TWO."""

    MISTAKES = ("wrong_order", "premature_stop")

    def run(self) -> None:
        one, two = self.one("#subbtn"), self.one("#subbtn2")
        if self.mistake == "wrong_order":
            self.deviate("wrong_order")
            self.click_el(two)
            self.click_el(one)
            return
        self.click_el(one)
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        self.click_el(two)


class ClickTab(Agent):
    """click-tab: click the tab named in the instruction."""

    MISTAKES = ("wrong_element",)
    CANDIDATES = "#area ul a"

    def run(self) -> None:
        want = f"Tab #{self.fields.get('target', '')}"
        tabs = self.all("#area ul a")
        target = next((t for t in tabs if t.text == want), None)
        if target is None:
            raise AgentError(f"no tab {want!r}")
        if self.mistake == "wrong_element":
            others = [t for t in tabs if t.text != want]
            if others:
                self.deviate("wrong_element")
                target = self.rng.choice(others)
        self.click_el(target)


class ClickWidget(Agent):
    """click-widget: click the widget of the named type (checkbox, radio, text, textarea, button)."""

    MISTAKES = ("wrong_element",)

    def candidates(self) -> list[str]:
        widgets = self.page.query("#area .widget input, #area .widget textarea, #area .widget button")
        return [str(w.data.get("type")) for w in widgets if w.data.get("type")]

    def run(self) -> None:
        want = self.fields.get("target", "")
        widgets = self.all("#area .widget input, #area .widget textarea, #area .widget button")
        target = next((w for w in widgets if w.data.get("type") == want), None)
        if target is None:
            raise AgentError(f"no widget of type {want!r}")
        if self.mistake == "wrong_element":
            others = [w for w in widgets if w.data.get("type") != want]
            if others:
                self.deviate("wrong_element")
                target = self.rng.choice(others)
        self.click_el(target)


class NavigateTree(Agent):
    """navigate-tree: open the folders on the way and click the named file or folder."""

    MISTAKES = ("wrong_element", "wrong_then_recover")
    CANDIDATES = "#tree span"

    def candidates(self) -> list[str]:
        return [e.text for e in self.page.query(self.CANDIDATES) if e.text and e.visible]

    def run(self) -> None:
        want = self.fields.get("target", "")
        for _ in range(6):
            if any(e.text == want for e in self.all("#tree span")):
                break
            # Expand a visible collapsed folder whose (hidden) contents hold the name. Folders and their
            # expander boxes come in the same document order, one box per folder.
            folders = self.page.query("#tree li.expandable")
            boxes = self.page.query("#tree li.expandable > div.hitarea")
            holder = next((b for f, b in zip(folders, boxes) if f.visible and b.visible and want in f.all_text), None)
            if holder is None:
                break
            self.click_el(holder, "expand folder", settle_ms=120)
        target = next((e for e in self.all("#tree span") if e.text == want), None)
        if target is None:
            raise AgentError(f"{want!r} not reachable in the tree")
        if self.mistake:
            files = [e for e in self.all("#tree span.file") if e.text != want]
            folders = [e for e in self.all("#tree span.folder") if e.text != want]
            if self.mistake == "wrong_element" and files:
                self.deviate("wrong_element")
                target = self.rng.choice(files)  # a click on a file ends the episode
            elif self.mistake == "wrong_then_recover" and folders:
                self.deviate("wrong_then_recover")
                self.click_el(self.rng.choice(folders), settle_ms=120)  # a folder click does not end it
                target = next((e for e in self.all("#tree span") if e.text == want), target)
        self.click_el(target)



class ClickOption(Agent):
    """click-option: pick the radio button with the named label, then Submit."""

    MISTAKES = ("wrong_option", "premature_stop", "wrong_then_recover")
    CANDIDATES = "#boxes label"

    def run(self) -> None:
        want = self.fields.get("target", "")
        labels = self.all("#boxes label")
        target = next((lab for lab in labels if lab.text == want), None)
        if target is None:
            raise AgentError(f"no option {want!r}")
        others = [lab for lab in labels if lab.text != want]
        pick = target
        if self.mistake in ("wrong_option", "wrong_then_recover") and others:
            self.deviate(self.mistake)
            pick = min(others, key=lambda lab: abs(lab.cy - target.cy))
        self.click_el(pick)
        if self.mistake == "wrong_then_recover" and pick is not target:
            self.click_el(target)
        self.submit_unless_stopping("#subbtn, #area button")


class ClickCheckboxes(Agent):
    """click-checkboxes (-transfer): tick exactly the named boxes, then Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "premature_stop", "wrong_then_recover")
    CANDIDATES = "#boxes label"

    def run(self) -> None:
        wanted = [v for k, v in sorted(self.fields.items()) if k.startswith("target")]
        labels = self.all(self.CANDIDATES)
        targets = [lab for lab in labels if lab.text in wanted]
        others = [lab for lab in labels if lab.text not in wanted]
        plan = list(targets)
        self.rng.shuffle(plan)
        missed = False
        if self.mistake == "missed_checkbox" and plan:
            plan.pop(self.rng.randrange(len(plan)))
            missed = True
        extra = None
        if self.mistake in ("extra_checkbox", "wrong_then_recover") and others:
            extra = self.rng.choice(others)
            at = self.rng.randint(0, len(plan))
        for n in range(len(plan) + 1):
            if extra is not None and n == at:
                self.deviate(self.mistake)
                self.click_el(extra)
                if self.mistake == "wrong_then_recover":
                    self.click_el(extra, "untick " + extra.text)
            if n < len(plan):
                self.click_el(plan[n])
        if self.mistake == "premature_stop" and plan:
            self.deviate("premature_stop")
            return
        if missed:
            # The ticks so far are all right (any order is); submitting without the last box is the departure.
            self.deviate("missed_checkbox")
        self.click_el(self.one("#subbtn"))


class ChooseList(Agent):
    """choose-list: pick the named entry of a drop-down list by keyboard, then Submit.

    The list is focused with Tab and the entry chosen by type-ahead: a click would open Chromium's native pop-up,
    which headless capture does not show, so the video would not see the choice being made.
    """

    MISTAKES = ("wrong_option", "premature_stop")
    CANDIDATES = "#area select option"

    def run(self) -> None:
        want = self.fields.get("target", "")
        self.one("#area select")
        options = [o.text for o in self.page.query("#area select option")]
        pick = want
        if self.mistake == "wrong_option":
            others = [o for o in options if o != want and not o.lower().startswith(want[:1].lower())]
            if others:
                pick = self.rng.choice(others)
        self.page.press("<Tab>", label="focus the list")
        if pick != want:
            self.deviate("wrong_option")
        self.page.type(pick, label=f"option {pick}")
        self.submit_unless_stopping("#area button")


class UseAutocomplete(Agent):
    """use-autocomplete: type the prefix, pick the suggestion with the right ending, Submit."""

    MISTAKES = ("wrong_option", "premature_stop")

    def run(self) -> None:
        start, end = self.fields.get("start", ""), self.fields.get("end", "")
        box = self.one("#tags")
        self.click_el(box, "Tags field")
        self.page.type(start, label="Tags field", settle_ms=450)  # jQuery UI's menu opens after 300 ms
        items = self.all("ul.ui-autocomplete li")
        good = [i for i in items if i.text.startswith(start) and i.text.endswith(end)]
        bad = [i for i in items if not (i.text.startswith(start) and i.text.endswith(end))]
        if not good:
            raise AgentError(f"no suggestion {start}...{end}")
        pick = good[0]
        if self.mistake == "wrong_option" and bad and end:
            self.deviate("wrong_option")
            pick = self.rng.choice(bad)
        if self.mistake == "premature_stop":
            # Leaves with the bare prefix typed, no suggestion chosen, nothing submitted.
            self.deviate("premature_stop")
            return
        self.click_el(pick, f"suggestion {pick.text}")
        self.click_el(self.one("#subbtn"))


# -- form tasks ---------------------------------------------------------------------------------------------------
class EnterText(Agent):
    """enter-text / enter-text-2: type the text into the field, Submit."""

    MISTAKES = ("typo", "premature_stop", "wrong_then_recover")

    def expected(self) -> str:
        return self.fields.get("target", "")

    def run(self) -> None:
        text = self.expected()
        box = self.one("#tt")
        self.click_el(box, "text field")
        if self.mistake in ("typo", "wrong_text", "wrong_then_recover"):
            self.deviate(self.mistake)
            bad = typo(text, self.rng) if self.mistake != "wrong_text" else self.fields.get("text", text)
            self.page.type(bad, label="text field")
            if self.mistake == "wrong_then_recover":
                self.page.press("C-a", label="select all")
                self.page.type(text, label="text field")
        else:
            self.page.type(text, label="text field")
        self.submit_unless_stopping("#subbtn")


class EnterText2(EnterText):
    """enter-text-2: the text must be typed in the requested case."""

    MISTAKES = ("typo", "wrong_text", "premature_stop")

    def expected(self) -> str:
        text = self.fields.get("text", "")
        return text.lower() if self.fields.get("case") == "lower" else text.upper()


class EnterPassword(Agent):
    """enter-password: the same password in both fields, Submit."""

    MISTAKES = ("typo", "missed_field", "premature_stop")

    def run(self) -> None:
        pw = self.fields.get("target", "")
        p1, p2 = self.one("#password"), self.one("#verify")
        self.type_into(p1, pw, "password")
        if self.mistake == "missed_field":
            self.deviate("missed_field")
        else:
            if self.mistake == "typo":
                self.type_into(p2, typo(pw, self.rng), "verify password", deviation="typo")
            else:
                self.type_into(p2, pw, "verify password")
        self.submit_unless_stopping("#subbtn")


class LoginUser(Agent):
    """login-user: username and password into their fields, Login."""

    MISTAKES = ("typo", "swapped_fields", "premature_stop", "missed_field")

    def run(self) -> None:
        user, pw = self.fields.get("username", ""), self.fields.get("password", "")
        u, p = self.one("#username"), self.one("#password")
        dev_user = dev_pw = None
        if self.mistake == "swapped_fields":
            user, pw, dev_user = pw, user, "swapped_fields"
        elif self.mistake == "typo":
            if self.rng.random() < 0.5:
                user, dev_user = typo(user, self.rng), "typo"
            else:
                pw, dev_pw = typo(pw, self.rng), "typo"
        self.type_into(u, user, "username", deviation=dev_user)
        if self.mistake == "missed_field":
            self.deviate("missed_field")
        else:
            self.type_into(p, pw, "password", deviation=dev_pw)
        self.submit_unless_stopping("#subbtn")


# -- email inbox ---------------------------------------------------------------------------------------------------
class EmailInbox(Agent):
    """email-inbox: find the sender's email; star it, delete it, reply to it or forward it."""

    MISTAKES = ("wrong_element", "typo", "premature_stop")
    CANDIDATES = "#main .email-thread .email-sender"
    LIST_TOP, LIST_BOTTOM = 74.0, 201.0  # the visible band of the scrolling list

    def _find_thread(self, name: str) -> El:
        for _ in range(12):
            threads = self.all("#main .email-thread")
            senders = self.all("#main .email-thread .email-sender")
            for th, snd in zip(threads, senders):
                if snd.text == name and th.y >= self.LIST_TOP - 1 and th.y + 28 <= self.LIST_BOTTOM:
                    return th
            target = next((th for th, snd in zip(threads, senders) if snd.text == name), None)
            if target is None:
                raise AgentError(f"no email from {name!r}")
            main = self.one("#main")
            self.page.scroll(main.cx + self.rng.uniform(-20, 20), main.cy + self.rng.uniform(-10, 30),
                             down=target.y > self.LIST_TOP, label="inbox list")
        raise AgentError(f"could not scroll to the email from {name!r}")

    def _thread_icon(self, thread: El, cls: str) -> El:
        icons = self.all(f"#main .email-thread .{cls}")
        return min(icons, key=lambda e: abs(e.cy - (thread.y + 13)))

    def run(self) -> None:
        name, task = self.fields.get("by", ""), self.fields.get("task", "")
        wrong = False
        if self.mistake == "wrong_element":
            # Acts on the email next to the right one (same list, one row off).
            names = [t.text for t in self.page.query("#main .email-thread .email-sender")]
            idx = names.index(name) if name in names else 0
            cands = [names[j] for j in (idx + 1, idx - 1) if 0 <= j < len(names) and names[j] != name]
            if cands:
                name, wrong = cands[0], True
        thread = self._find_thread(name)
        if wrong:
            self.deviate("wrong_element")
        if task in ("star", "delete", "trash", "important"):
            if self.mistake == "premature_stop":
                self.deviate("premature_stop")
                self.click_el(thread, f"email from {name}")  # opens it and stops
                return
            self.click_el(self._thread_icon(thread, "star" if task in ("star", "important") else "trash"))
            return
        self.click_el(thread, f"email from {name}", settle_ms=80)
        typo_kind = "typo" if self.mistake == "typo" else None
        if task == "reply":
            self.click_el(self.one("#email .email-reply"), "Reply", settle_ms=80)
            text = self.fields.get("message", "")
            self.type_into(self.one("#reply-text"), typo(text, self.rng) if typo_kind else text, "reply text",
                           deviation=typo_kind)
            self.submit_unless_stopping("#send-reply", "send")
        elif task == "forward":
            self.click_el(self.one("#email .email-forward"), "Forward", settle_ms=80)
            to = self.fields.get("to", "")
            self.type_into(self.one("#forward .forward-sender"), typo(to, self.rng) if typo_kind else to, "to field",
                           deviation=typo_kind)
            self.submit_unless_stopping("#send-forward", "send")
        else:
            raise AgentError(f"unknown email task {task!r}")


# -- more tasks (the second batch: 40+ training task types and the held-out ones) --------------------------------
_ORDINAL = re.compile(r"(\d+)")


def _ordinal(value: str) -> int:
    """'2nd' -> 1 (0-based); '1' -> 0."""
    m = _ORDINAL.search(value or "")
    if not m:
        raise AgentError(f"no ordinal in {value!r}")
    return int(m.group(1)) - 1


class ClickCheckboxesLarge(ClickCheckboxes):
    CANDIDATES = "#boxes-left label, #boxes-right label"


class ClickTestTransfer(ClickAmong):
    selector = CANDIDATES = "#area button"


class UnicodeTest(ClickAmong):
    selector = CANDIDATES = "#area button"


class ClickColor(Agent):
    """click-color: click the box of the named colour."""

    MISTAKES = ("wrong_element",)

    def candidates(self) -> list[str]:
        return [str(e.data.get("color")) for e in self.page.query("#area .color") if e.data.get("color")]

    def run(self) -> None:
        want = self.fields.get("target", "")
        boxes = self.all("#area .color")
        target = next((b for b in boxes if b.data.get("color") == want), None)
        if target is None:
            raise AgentError(f"no {want!r} box")
        others = [b for b in boxes if b.data.get("color") != want]
        if self.mistake == "wrong_element" and others:
            self.deviate("wrong_element")
            target = self.rng.choice(others)
        self.click_el(target, f"div:{target.data.get('color')} box")


class ClickDialog2(Agent):
    """click-dialog-2: click the dialog button named in the instruction (Cancel, OK or the x)."""

    MISTAKES = ("wrong_element",)

    def candidates(self) -> list[str]:
        return ["Cancel", "OK", "x"]

    def _button(self, name: str) -> El:
        if name == "x":
            return self.one("button.ui-dialog-titlebar-close")
        return self.one(".ui-dialog-buttonset button", lambda e: e.text == name)

    def run(self) -> None:
        want = self.fields.get("target", "")
        pick = want
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            pick = self.rng.choice([b for b in ("Cancel", "OK", "x") if b != want])
        self.click_el(self._button(pick), f"button:{pick}")


class ClickShades(Agent):
    """click-shades: select every shade of the named colour, then Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "premature_stop", "wrong_then_recover")

    def run(self) -> None:
        want = self.fields.get("target", "")
        spans = self.all("#area span")
        good = [s for s in spans if s.data.get("color") == want]
        bad = [s for s in spans if s.data.get("color") != want]
        plan = list(good)
        self.rng.shuffle(plan)
        missed = False
        if self.mistake == "missed_checkbox" and len(plan) > 1:
            plan.pop()
            missed = True
        extra_at = self.rng.randint(0, len(plan)) if self.mistake in ("extra_checkbox", "wrong_then_recover") else None
        for n in range(len(plan) + 1):
            if extra_at is not None and n == extra_at and bad:
                extra = self.rng.choice(bad)
                self.deviate(self.mistake)
                self.click_el(extra, f"span:{extra.data.get('color')} shade")
                if self.mistake == "wrong_then_recover":
                    self.click_el(extra, f"span:{extra.data.get('color')} shade (undo)")
            if n < len(plan):
                self.click_el(plan[n], f"span:{want} shade")
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if missed:
            self.deviate("missed_checkbox")
        self.click_el(self.one("#area button"), "button:Submit")


class _HiddenLinks(Agent):
    """Tasks whose named link hides in one of several panels (tabs, accordion sections)."""

    MISTAKES = ("wrong_element", "wrong_then_recover")

    def candidates(self) -> list[str]:
        return sorted({e.text for e in self.page.query("#area span.alink") if e.text})


class ClickTab2(_HiddenLinks):
    """click-tab-2 (-easy/-hard): open the tab holding the named link, click the link."""

    def run(self) -> None:
        want = self.fields.get("target", "")
        panels = self.page.query("#area div[id^=tabs-]")
        tabs = self.all("#area ul a")
        # The panel with a *link* of that text (the same word may also be plain text elsewhere).
        holder = next((i for i, p in enumerate(panels)
                       if any(e.text == want for e in self.page.query(f"#{p.id} span.alink"))), None)
        if holder is None:
            raise AgentError(f"no tab holds {want!r}")
        if self.mistake == "wrong_then_recover" and len(tabs) > 1:
            wrong = self.rng.choice([i for i in range(len(tabs)) if i != holder])
            self.deviate("wrong_then_recover")
            self.click_el(tabs[wrong], f"a:{tabs[wrong].text}", settle_ms=120)
        if not panels[holder].visible or self.mistake == "wrong_then_recover":
            self.click_el(tabs[holder], f"a:{tabs[holder].text}", settle_ms=120)
        links = [e for e in self.all("#area span.alink")]
        target = next((e for e in links if e.text == want), None)
        if target is None:
            raise AgentError(f"link {want!r} not visible")
        others = [e for e in links if e.text != want]
        if self.mistake == "wrong_element" and others:
            self.deviate("wrong_element")
            target = min(others, key=lambda e: abs(e.cy - target.cy) + abs(e.cx - target.cx))
        self.click_el(target, f"span:{target.text}")


class FocusText2(Agent):
    """focus-text-2: click into the n-th text box."""

    MISTAKES = ("wrong_element",)

    def run(self) -> None:
        idx = _ordinal(self.fields.get("target", ""))
        boxes = self.all("#area input")
        target = boxes[idx]
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            target = boxes[(idx + self.rng.choice((1, 2))) % len(boxes)]
        self.click_el(target, f"input:{target.id}")


class IdentifyShape(Agent):
    """identify-shape: click the button naming the drawn figure (rectangle, circle, triangle, letter, number)."""

    MISTAKES = ("wrong_element",)

    def candidates(self) -> list[str]:
        return [e.text for e in self.page.query("#area-buttons button")]

    def run(self) -> None:
        shapes = [e for e in self.page.query("#area_svg > *") if e.tag != "defs"]
        if not shapes:
            raise AgentError("no figure drawn")
        s = shapes[0]
        kind = {"rect": "rectangle", "circle": "circle", "polygon": "triangle"}.get(s.tag)
        if kind is None:
            kind = "digit" if s.text.strip().isdigit() else "letter"
        buttons = self.all("#area-buttons button")
        target = next(b for b in buttons if b.data.get("type") == kind)
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            target = self.rng.choice([b for b in buttons if b.data.get("type") != kind])
        self.click_el(target, f"button:{target.text}")


class LoginUserPopup(LoginUser):
    """login-user-popup: as login-user, dismissing the session pop-up (Cancel) when it appears."""

    MISTAKES = ("typo", "swapped_fields", "premature_stop", "wrong_element")

    def _dismiss(self, again: El) -> bool:
        pops = self.all("#popup-cancel")
        if not pops:
            return False
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            self.click_el(self.one("#popup-ok"), "button:OK (pop-up)")
            return True
        self.click_el(pops[0], "button:Cancel (pop-up)")
        self.click_el(again)
        return True

    def type_into(self, el: El, text: str, label: str = "", deviation: str | None = None) -> None:
        self.click_el(el, label or _describe(el))
        self._dismiss(el)
        if deviation:
            self.deviate(deviation)
        self.page.type(text, label=label or _describe(el))

    def run(self) -> None:
        if self.mistake == "wrong_element" and not self._will_pop():
            self.mistake = None  # no pop-up in this episode: nothing to get wrong
        super().run()

    def _will_pop(self) -> bool:
        js = "return !!(jQuery._data(document.getElementById('username'), 'events') || {}).focus || " \
             "!!(jQuery._data(document.getElementById('password'), 'events') || {}).focus;"
        try:
            return bool(self.page.execute(js))
        except Exception:  # noqa: BLE001 (no jQuery event data: assume a pop-up may come)
            return True


class MultiLayouts(Agent):
    """multi-layouts / multi-orderings: fill genre, director and year by their labels, then submit."""

    MISTAKES = ("swapped_fields", "typo", "missed_field", "premature_stop")

    # The label of each text field: the text of its row (a <p>, a table row, a .row/.field/.ui-entry block).
    _LABELS_JS = """
    return Array.from(document.querySelectorAll('#area input[type=text]')).map(function (i) {
      var row = i.closest('p, tr, .row, .field, .ui-entry');
      return row ? row.textContent.trim().toLowerCase() : '';
    });
    """

    def _fields(self) -> dict[str, El]:
        inputs = self.page.query("#area input[type=text]")
        names = self.page.execute(self._LABELS_JS)
        out: dict[str, El] = {}
        for inp, name in zip(inputs, names, strict=True):
            key = "genre" if "genre" in name else "year" if ("year" in name or "date" in name) else "director"
            out[key] = inp
        if len(out) != 3:
            raise AgentError(f"cannot tell the fields apart: {names}")
        return out

    def run(self) -> None:
        vals = {"genre": self.fields.get("genre", ""), "director": self.fields.get("director", ""),
                "year": self.fields.get("year", "")}
        boxes = self._fields()
        order = sorted(boxes, key=lambda k: (boxes[k].y, boxes[k].x))
        if self.mistake == "swapped_fields":
            a, b = self.rng.sample(order, 2)
            vals[a], vals[b] = vals[b], vals[a]
        skip = self.rng.choice(order) if self.mistake == "missed_field" else None
        bad = self.rng.choice(order) if self.mistake == "typo" else None
        for k in order:
            if k == skip:
                continue
            dev = None
            if self.mistake == "swapped_fields" and vals[k] != self.fields.get(k if k != "director" else "director"):
                dev = "swapped_fields"
            text = vals[k]
            if k == bad:
                text, dev = typo(text, self.rng), "typo"
            self.type_into(boxes[k], text, f"{k} field", deviation=dev)
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if skip:
            self.deviate("missed_field")
        self.click_el(self.one("#area button, #area .final, #area .ui-submit"), "Submit")


class ReadTable(Agent):
    """read-table: type the value of the named row into the field, Submit."""

    MISTAKES = ("wrong_text", "typo", "premature_stop")

    def candidates(self) -> list[str]:
        cells = self.page.query("#tab td")
        return [cells[i].text for i in range(0, len(cells), 2)]

    def run(self) -> None:
        key = self.fields.get("target", "")
        cells = self.all("#tab td")
        rows = [(cells[i].text, cells[i + 1].text) for i in range(0, len(cells) - 1, 2)]
        value = next((v for k, v in rows if k == key), None)
        if value is None:
            raise AgentError(f"no row {key!r}")
        dev = None
        if self.mistake == "wrong_text":
            value, dev = self.rng.choice([v for k, v in rows if k != key]), "wrong_text"
        elif self.mistake == "typo":
            value, dev = typo(value, self.rng), "typo"
        self.type_into(self.one("#tt"), value, "text field", deviation=dev)
        self.submit_unless_stopping("#subbtn", "button:Submit")


class SearchEngine(Agent):
    """search-engine: search for the name, go to the result's page, click the n-th result."""

    MISTAKES = ("wrong_element", "typo", "premature_stop")

    def run(self) -> None:
        query, rank = self.fields.get("query", ""), int(self.fields.get("rank", "1"))
        text = typo(query, self.rng) if self.mistake == "typo" else query
        self.type_into(self.one("#search-text"), text, "search field",
                       deviation="typo" if self.mistake == "typo" else None)
        self.click_el(self.one("#search"), "button:Search", settle_ms=150)
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        idx = rank - 1
        if self.mistake == "wrong_element":
            idx = idx + 1 if idx % 3 < 2 else idx - 1
        page = idx // 3 + 1
        if page > 1:
            link = self.one("#pagination a", lambda e: e.text == str(page))
            self.click_el(link, f"a:page {page}", settle_ms=150)
        results = self.all("#page-content a")
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
        self.click_el(results[idx % 3], f"a:{results[idx % 3].text}")


class _TypeAnswer(Agent):
    """A computed answer typed into a field, then Submit (simple-arithmetic, simple-algebra, find-word...)."""

    MISTAKES = ("wrong_text", "typo", "premature_stop")
    FIELD = "#math-answer"
    SUBMIT = "#subbtn"

    def answer(self) -> str:
        raise NotImplementedError

    def wrong_answer(self, right: str) -> str:
        return str(int(right) + self.rng.choice((-1, 1, 2)))

    def run(self) -> None:
        right = self.answer()
        text, dev = right, None
        if self.mistake == "wrong_text":
            text, dev = self.wrong_answer(right), "wrong_text"
        elif self.mistake == "typo":
            text, dev = typo(right, self.rng), "typo"
        self.type_into(self.one(self.FIELD), text, "answer field", deviation=dev)
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        self.click_el(self.one(self.SUBMIT), "button:Submit")


class SimpleArithmetic(_TypeAnswer):
    def answer(self) -> str:
        m = re.match(r"\s*(-?\d+)\s*([-+x])\s*(-?\d+)", self.one("#math-problem").text)
        if not m:
            raise AgentError("cannot read the problem")
        a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
        return str(a + b if op == "+" else a - b if op == "-" else a * b)


class SimpleAlgebra(_TypeAnswer):
    def answer(self) -> str:
        p = self.one("#math-problem").text.replace(" ", "")
        m = re.match(r"x([-+])(\d+)=(-?\d+)", p)
        if m:
            d, r = int(m.group(2)), int(m.group(3))
            return str(r - d if m.group(1) == "+" else r + d)
        m = re.match(r"(\d+)([-+])x=(-?\d+)", p)
        if not m:
            raise AgentError(f"cannot read {p!r}")
        d, r = int(m.group(1)), int(m.group(3))
        return str(r - d if m.group(2) == "+" else d - r)


class FindWord(_TypeAnswer):
    FIELD = "#answer-input"

    def answer(self) -> str:
        words = self.one("#area p").text.split()
        idx = _ordinal(self.fields.get("target", ""))
        return re.sub(r"[^a-zA-Z]", "", words[idx])

    def wrong_answer(self, right: str) -> str:
        words = [re.sub(r"[^a-zA-Z]", "", w) for w in self.one("#area p").text.split()]
        others = [w for w in words if w and w != right]
        return self.rng.choice(others) if others else typo(right, self.rng)


class TextTransform(_TypeAnswer):
    MISTAKES = ("typo", "premature_stop")
    FIELD = "#tt"

    def answer(self) -> str:
        return "".join(e.text for e in self.page.query("#captcha span"))


class EnterTextDynamic(EnterText):
    MISTAKES = ("typo", "premature_stop")


class UseSpinner(Agent):
    """use-spinner: click the spinner's arrows until it shows the number, then Submit."""

    MISTAKES = ("wrong_option", "premature_stop")

    def run(self) -> None:
        want = int(self.fields.get("target", "0"))
        n = want + (self.rng.choice((-1, 1)) if self.mistake == "wrong_option" else 0)
        arrow = self.one(".ui-spinner-up" if n > 0 else ".ui-spinner-down")
        for k in range(abs(n)):
            if self.mistake == "wrong_option" and k == abs(n) - 1 and abs(n) > abs(want):
                self.deviate("wrong_option")
            self.click_el(arrow, "spinner up" if n > 0 else "spinner down", settle_ms=30)
        if self.mistake == "wrong_option" and abs(n) < abs(want):
            self.deviate("wrong_option")  # stops one short: the Submit is the departure
        self.submit_unless_stopping("#subbtn", "button:Submit")


class CopyPaste(Agent):
    """copy-paste / copy-paste-2: select all in the text area, copy, paste into the input, Submit."""

    MISTAKES = ("wrong_element", "typo", "premature_stop")

    def source(self) -> El:
        return self.one("#to-copy")

    def other_source(self) -> El | None:
        return None

    def run(self) -> None:
        src = self.source()
        if self.mistake == "wrong_element":
            alt = self.other_source()
            if alt is not None:
                self.deviate("wrong_element")
                src = alt
        dst = self.one("#answer-input")
        if self.mistake == "typo":
            # Retypes the text instead of pasting it, and slips.
            self.type_into(dst, typo((src.value or "").strip() or "x", self.rng), "answer field", deviation="typo")
        else:
            self.click_el(src, "text area")
            self.page.press("C-a", label="select all")
            self.page.press("C-c", label="copy")
            self.click_el(dst, "answer field")
            self.page.press("C-v", label="paste")
        self.submit_unless_stopping("#subbtn", "button:Submit")


class CopyPaste2(CopyPaste):
    def source(self) -> El:
        return self.one(f"#text-{_ordinal(self.fields.get('target', '1')) + 1}")

    def other_source(self) -> El | None:
        n = _ordinal(self.fields.get("target", "1")) + 1
        return self.one(f"#text-{self.rng.choice([i for i in (1, 2, 3) if i != n])}")


class Terminal(Agent):
    """terminal: list the files (ls), delete one with the asked extension (rm NAME)."""

    MISTAKES = ("wrong_element", "typo")

    def run(self) -> None:
        m = re.search(r"extension \.(\S+)", self.utterance)
        ext = m.group(1) if m else ""
        self.click_el(self.one("#terminal"), "terminal")
        self.page.type("ls", label="terminal")
        self.page.press("<Enter>", label="terminal", settle_ms=80)
        files = " ".join(o.text for o in self.page.query(".terminal-output .output")).split()
        good = [f for f in files if (f.endswith("." + ext) if ext else "." not in f)]
        bad = [f for f in files if f not in good]
        if not good:
            raise AgentError(f"no file ending {ext!r} in {files}")
        name = self.rng.choice(good)
        if self.mistake == "wrong_element" and bad:
            self.deviate("wrong_element")
            name = self.rng.choice(bad)
        elif self.mistake == "typo":
            self.deviate("typo")
            name = typo(name, self.rng)
        self.page.type(f"rm {name}", label="terminal")
        self.page.press("<Enter>", label="terminal", settle_ms=80)


# -- held-out task types (recorded for evaluation only) -----------------------------------------------------------
class ClickCollapsible(Agent):
    """click-collapsible: expand the section, click Submit."""

    MISTAKES = ("missed_field", "premature_stop")

    def run(self) -> None:
        header = self.one("#area h3")
        if self.mistake == "missed_field":
            self.deviate("missed_field")
        else:
            self.click_el(header, f"h3:{header.text}", settle_ms=450)  # the accordion animates open
        self.submit_unless_stopping("#subbtn", "button:Submit")


class ClickCollapsible2(_HiddenLinks):
    """click-collapsible-2: expand the section holding the named link, click it."""

    def run(self) -> None:
        want = self.fields.get("target", "")
        heads = self.all("#area h3")
        panels = self.page.query("#area div.ui-accordion-content")
        links = [[e.text for e in self.page.query(f"#{p.id} span.alink")] for p in panels]
        holder = next((i for i, names in enumerate(links) if want in names), None)
        if holder is None:
            raise AgentError(f"no section holds {want!r}")
        if self.mistake == "wrong_then_recover" and len(heads) > 1:
            self.deviate("wrong_then_recover")
            w = self.rng.choice([i for i in range(len(heads)) if i != holder])
            self.click_el(heads[w], f"h3:{heads[w].text}", settle_ms=450)
        heads = self.all("#area h3")
        if not panels[holder].visible or self.mistake == "wrong_then_recover":
            self.click_el(heads[holder], f"h3:{heads[holder].text}", settle_ms=450)
        links = self.all("#area span.alink")
        target = next((e for e in links if e.text == want), None)
        if target is None:
            raise AgentError(f"link {want!r} not visible")
        others = [e for e in links if e.text != want]
        if self.mistake == "wrong_element" and others:
            self.deviate("wrong_element")
            target = self.rng.choice(others)
        self.click_el(target, f"span:{target.text}")


class EnterDate(Agent):
    """enter-date: type the date into the date field (month, day, year), Submit."""

    MISTAKES = ("typo", "wrong_text", "premature_stop")

    def run(self) -> None:
        m = re.search(r"(\d\d)/(\d\d)/(\d{4})", self.utterance)
        if not m:
            raise AgentError("no date in the instruction")
        mm, dd, yyyy = m.groups()
        dev = None
        if self.mistake == "wrong_text" and mm != dd and int(dd) <= 12:
            mm, dd, dev = dd, mm, "wrong_text"  # day and month swapped
        elif self.mistake in ("typo", "wrong_text"):
            yyyy, dev = str(int(yyyy) + self.rng.choice((-1, 1))), self.mistake
        box = self.one("#tt")
        self.page.click(box.x + 8, box.cy, "date field (month)")
        if dev:
            self.deviate(dev)
        self.page.type(f"{mm}{dd}{yyyy}", label="date field")
        self.submit_unless_stopping("#subbtn", "button:Submit")


class EnterTime(Agent):
    """enter-time: type hours, minutes and AM/PM into the time field, Submit."""

    MISTAKES = ("wrong_text", "typo", "premature_stop")

    def run(self) -> None:
        m = re.search(r"(\d+):(\d\d)\s*([AP]M)", self.utterance)
        if not m:
            raise AgentError("no time in the instruction")
        hh, mi, ap = int(m.group(1)), m.group(2), m.group(3)
        dev = None
        if self.mistake == "wrong_text":
            ap, dev = ("AM" if ap == "PM" else "PM"), "wrong_text"
        elif self.mistake == "typo":
            mi, dev = f"{(int(mi) + self.rng.choice((1, 10))) % 60:02d}", "typo"
        box = self.one("#tt")
        self.page.click(box.x + 8, box.cy, "time field (hours)")
        if dev:
            self.deviate(dev)
        self.page.type(f"{hh:02d}{mi}{ap[0]}", label="time field")
        self.submit_unless_stopping("#subbtn", "button:Submit")


class GridCoordinate(Agent):
    """grid-coordinate: click the grid point with the named coordinates."""

    MISTAKES = ("wrong_element",)

    def run(self) -> None:
        want = f"({self.fields.get('x', '')},{self.fields.get('y', '')})"
        dots = self.all("#area circle")
        target = next((d for d in dots if d.id == want), None)
        if target is None:
            raise AgentError(f"no grid point {want}")
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            target = min((d for d in dots if d.id != want), key=lambda d: abs(d.cx - target.cx) + abs(d.cy - target.cy))
        self.click_el(target, f"circle:{target.id}")


class _Social(Agent):
    """Shared reading of the social-media feed: posts, their users, their buttons, scrolling to them."""

    ACTION_CLASS = {"Reply": "reply", "Retweet": "retweet", "Like": "like", "Share": "share"}
    TOP, BOTTOM = 52.0, 205.0

    def candidates(self) -> list[str]:
        return sorted({e.text for e in self.page.query("#area .media .username") if e.text})

    def posts(self) -> list[tuple[El, str]]:
        media = self.page.query("#area .media")
        users = self.page.query("#area .media .username")
        return list(zip(media, [u.text for u in users], strict=False))

    def control(self, post_index: int, cls: str) -> El:
        els = self.page.query(f"#area .media .{cls}")  # one per post, in feed order
        if post_index >= len(els):
            raise AgentError(f"no .{cls} in post {post_index}")
        return els[post_index]

    def click_icon(self, el: El, label: str) -> None:
        """Hover, then click: the feed's icons swap their picture on hover, and a click arriving with the pointer
        is lost."""
        self.page.move(el.cx, el.cy, f"hover {label}", settle_ms=250, harmless=False)
        self.click_el(el, label, settle_ms=80)

    def reach(self, post_index: int, cls: str) -> El:
        """Scroll the feed until the post's control is inside the visible band."""
        for _ in range(12):
            el = self.control(post_index, cls)
            if self.TOP <= el.y and el.y + el.h <= self.BOTTOM:
                return el
            area = self.one("#area")
            self.page.scroll(area.cx + self.rng.uniform(-20, 20), min(area.cy, 150) + self.rng.uniform(-10, 10),
                             down=el.y > self.TOP, label="feed")
        raise AgentError(f"could not scroll to post {post_index}")


class SocialMedia(_Social):
    """social-media: click the named button (or menu entry) on the post of the named user."""

    MISTAKES = ("wrong_element", "wrong_option")
    MENU = {"Share via DM": "share", "Copy link to Tweet": "copy", "Embed Tweet": "embed", "Mute": "menu-user",
            "Block": "block-user", "Report": "report"}

    def run(self) -> None:
        user, button = self.fields.get("user", ""), self.fields.get("button", "")
        posts = self.posts()
        idx = next((i for i, (_, u) in enumerate(posts) if u == user), None)
        if idx is None:
            raise AgentError(f"no post by {user!r}")
        if self.mistake == "wrong_element":
            others = [i for i, (_, u) in enumerate(posts) if u != user]
            if others:
                self.deviate("wrong_element")
                idx = min(others, key=lambda i: abs(i - idx))
        if self.mistake == "wrong_option":
            pool = [b for b in list(self.ACTION_CLASS)[:3] + list(self.MENU) if b != button]
            self.deviate("wrong_option")
            button = self.rng.choice(pool)
        if button in self.MENU:
            self.click_icon(self.reach(idx, "more"), "more menu")
            item = self.reach(idx, self.MENU[button])
            self.click_el(item, f"li:{button}")
        else:
            self.click_icon(self.reach(idx, self.ACTION_CLASS[button]), f"span:{button} of {posts[idx][1]}")


class SocialMediaAll(_Social):
    """social-media-all / -some: click the button on all (or N) posts of the user, then Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "premature_stop")

    def how_many(self, n_posts: int) -> int:
        return n_posts

    def run(self) -> None:
        user, button = self.fields.get("user", ""), self.fields.get("button", "")
        cls = self.ACTION_CLASS.get(button, button.lower())
        posts = self.posts()
        mine = [i for i, (_, u) in enumerate(posts) if u == user]
        others = [i for i, (_, u) in enumerate(posts) if u != user]
        plan = mine[:self.how_many(len(mine))]
        missed = False
        if self.mistake == "missed_checkbox" and len(plan) > 1:
            plan = plan[:-1]
            missed = True
        extra = self.rng.choice(others) if self.mistake == "extra_checkbox" and others else None
        for i in sorted(plan + ([extra] if extra is not None else [])):
            if i == extra:
                self.deviate("extra_checkbox")
            self.click_icon(self.reach(i, cls), f"span:{button} of {posts[i][1]}")
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if missed:
            self.deviate("missed_checkbox")
        for _ in range(12):
            sub = self.all("#submitRow button")
            if sub and sub[0].y + sub[0].h <= self.BOTTOM:
                break
            area = self.one("#area")
            self.page.scroll(area.cx, min(area.cy, 150), down=True, label="feed")
        self.click_el(self.one("#submitRow button"), "button:Submit")


class SocialMediaSome(SocialMediaAll):
    def how_many(self, n_posts: int) -> int:
        return min(n_posts, int(self.fields.get("amount", "1")))


def _nth(value: str) -> int:
    """'2' or '2nd' -> 2."""
    m = re.search(r"\d+", value or "")
    if not m:
        raise AgentError(f"no position in {value!r}")
    return int(m.group(0))


class FormSequence(Agent):
    """form-sequence: set the slider (click on the track, then arrow keys), tick the n-th checkbox, Submit."""

    MISTAKES = ("wrong_option", "wrong_element", "extra_checkbox", "premature_stop", "wrong_then_recover")
    CANDIDATES = None

    def _slider_value(self) -> int:
        return int(self.one("#val").text.strip() or "0")

    def _set_slider(self, want: int) -> None:
        track = self.one("#slider")
        x = track.x + (want + 10) / 20 * track.w + self.rng.uniform(-0.3, 0.3)
        x = min(max(x, track.x + 1), track.x + track.w - 1)  # the ends: just inside the track
        self.page.click(x, track.cy + self.rng.uniform(-1.0, 1.0), f"slider at {want}")
        for _ in range(24):  # the click lands near the value; the arrow keys finish the job
            now = self._slider_value()
            if now == want:
                return
            self.page.press("<ArrowRight>" if now < want else "<ArrowLeft>", label="slider handle", settle_ms=30)
        raise AgentError(f"slider stuck at {self._slider_value()} (wanted {want})")

    def run(self) -> None:
        want = int(self.fields.get("slider target", "0"))
        box_no = _nth(self.fields.get("checkbox target", "1"))
        if self.mistake == "wrong_option":
            self.deviate("wrong_option")
            want = want + 1 if want < 10 else want - 1
        self._set_slider(want)
        boxes = self.all("#area input[type=checkbox]")
        target = boxes[box_no - 1]
        others = [b for i, b in enumerate(boxes) if i != box_no - 1]
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            target = min(others, key=lambda b: abs(b.cx - target.cx))
        elif self.mistake in ("extra_checkbox", "wrong_then_recover"):
            extra = self.rng.choice(others)
            self.deviate(self.mistake)
            self.click_el(extra, f"checkbox {boxes.index(extra) + 1}")
            if self.mistake == "wrong_then_recover":
                self.click_el(extra, f"untick checkbox {boxes.index(extra) + 1}")
        self.click_el(target, f"checkbox {boxes.index(target) + 1}")
        self.submit_unless_stopping("#subbtn", "button:Submit")


class FormSequence2(Agent):
    """form-sequence-2: check the n-th radio button, type the number into the m-th text box, Submit."""

    MISTAKES = ("wrong_element", "typo", "missed_field", "premature_stop", "wrong_then_recover")

    def run(self) -> None:
        radio_no = _nth(self.fields.get("radio target", "1"))
        box_no = _nth(self.fields.get("textbox target", "1"))
        number = self.fields.get("textbox text", "")
        radios = self.all("#area input[type=radio]")
        boxes = self.all("#area input[type=text]")
        if self.mistake == "missed_field":
            self.deviate("missed_field")  # goes straight to the number: no radio button is checked
        else:
            self.click_el(radios[radio_no - 1], f"radio {radio_no}")
        target = boxes[box_no - 1]
        if self.mistake in ("wrong_element", "wrong_then_recover"):
            wrong = min((b for b in boxes if b is not target), key=lambda b: abs(b.cx - target.cx))
            self.deviate(self.mistake)
            self.type_into(wrong, number, f"text box {boxes.index(wrong) + 1}")
            if self.mistake == "wrong_element":
                self.submit_unless_stopping("#subbtn", "button:Submit")
                return
            self.page.press("C-a", label="select the misplaced number")
            self.page.press("<Backspace>", label="clear it")
        if self.mistake == "typo":
            self.type_into(target, typo(number, self.rng), f"text box {box_no}", deviation="typo")
        else:
            self.type_into(target, number, f"text box {box_no}")
        self.submit_unless_stopping("#subbtn", "button:Submit")


class FormSequence3(Agent):
    """form-sequence-3: choose the height in the (selectric) drop-down by clicking, click the named button."""

    MISTAKES = ("wrong_option", "wrong_element", "premature_stop", "wrong_then_recover")
    CANDIDATES = "#buttons button"

    def _choose(self, option: str) -> None:
        self.click_el(self.one(".selectric"), "drop-down", settle_ms=150)
        for _ in range(8):
            items = self.page.query(".selectric-items li")
            box = self.one(".selectric-items")
            item = next((i for i in items if i.text == option), None)
            if item is None:
                raise AgentError(f"no entry {option!r}")
            if item.y >= box.y - 1 and item.y + item.h <= box.y + box.h + 1 and item.pts:
                self.click_el(item, f"li:{option}", settle_ms=120)
                return
            self.page.scroll(box.cx + self.rng.uniform(-15, 15), box.cy, down=item.y > box.y, label="drop-down list",
                             settle_ms=150)
        raise AgentError(f"could not reach entry {option!r}")

    def run(self) -> None:
        height, button = self.fields.get("dropdown target", ""), self.fields.get("button target", "")
        options = [o.text for o in self.page.query("#dropdown option") if o.text]
        if self.mistake in ("wrong_option", "wrong_then_recover") and height in options:
            i = options.index(height)
            near = options[i + 1] if i + 1 < len(options) else options[i - 1]
            self.deviate(self.mistake)
            self._choose(near)
            if self.mistake == "wrong_then_recover":
                self._choose(height)
        else:
            self._choose(height)
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            button = self.rng.choice([b for b in ("Yes", "No", "Maybe") if b != button])
        self.submit_unless_stopping(f"#{button.lower()}", f"button:{button}")


class SignAgreement(Agent):
    """sign-agreement: wheel the agreement to its end, type the name, press the named button (or just Cancel)."""

    MISTAKES = ("wrong_element", "typo", "missed_field", "premature_stop")
    CANDIDATES = "#area button"

    def _scroll_to_end(self) -> None:
        for _ in range(60):
            if not self.all("#name") or not self.page.execute("return document.getElementById('name').disabled;"):
                return
            area = self.one("#text-area")
            self.page.scroll(area.x + area.w * self.rng.uniform(0.3, 0.7), area.y + area.h * self.rng.uniform(0.3, 0.7),
                             down=True, label="agreement text", settle_ms=60)
        raise AgentError("the agreement never unlocked")

    def run(self) -> None:
        button = self.fields.get("button", "Cancel")
        name = self.fields.get("name")
        other = "Agree" if button == "Cancel" else "Cancel"
        if name is None:
            if self.mistake == "wrong_element":
                self._scroll_to_end()  # unlocks Agree, then presses it
                self.deviate("wrong_element")
                self.click_el(self.one("#agree"), "button:Agree")
                return
            self.submit_unless_stopping("#cancel", "button:Cancel")
            return
        self._scroll_to_end()
        if self.mistake == "missed_field":
            self.deviate("missed_field")
        elif self.mistake == "typo":
            self.type_into(self.one("#name"), typo(name, self.rng), "name field", deviation="typo")
        else:
            self.type_into(self.one("#name"), name, "name field")
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            button = other
        self.submit_unless_stopping(f"#{button.lower()}", f"button:{button}")


_EDITOR_TASK = re.compile(r"(?:give the text (?P<word>\S+)|(?:give|make) (?P<all>everything)) the (?:style|color) "
                             r"(?P<how>\w+)")


_STYLE_BUTTON = {"bold": "button.ql-bold", "italics": "button.ql-italic", "underlined": "button.ql-underline"}


_SHADES = {"red": "#e60000", "orange": "#ff9900", "yellow": "#ffff00", "green": "#008a00", "blue": "#0066cc",
              "purple": "#9933ff"}


class TextEditor(Agent):
    """text-editor: style (or colour) everything or one word: select all and format, or retype the text with the
    format switched on for the word (the editor has no double-click or shift-select for this agent), Submit."""

    MISTAKES = ("wrong_option", "wrong_element", "typo", "premature_stop")

    def _format(self, how: str, off: bool = False) -> None:
        if how in _STYLE_BUTTON:
            self.click_el(self.one(_STYLE_BUTTON[how]), f"button:{how}")
            return
        self.click_el(self.one(".ql-color .ql-picker-label"), "colour picker", settle_ms=120)
        if off:
            swatch = self.one(".ql-color .ql-picker-item", lambda e: not e.data.get("value"))
        else:
            shade = _SHADES[how]
            swatch = self.one(".ql-color .ql-picker-item", lambda e: e.data.get("value") == shade)
        self.click_el(swatch, f"swatch {how if not off else 'default'}")

    def run(self) -> None:
        m = _EDITOR_TASK.search(self.utterance)
        if not m:
            raise AgentError(f"cannot read: {self.utterance}")
        how = m.group("how")
        text = self.one(".ql-editor").text.strip()
        editor = self.one(".ql-editor")
        if self.mistake == "wrong_option":
            pool = [h for h in (_STYLE_BUTTON if how in _STYLE_BUTTON else _SHADES) if h != how]
            self.deviate("wrong_option")
            how = self.rng.choice(pool)
        self.click_el(editor, "editor text")
        if m.group("all") and self.mistake == "wrong_element":
            self.deviate("wrong_element")  # formats at the caret, without selecting the text first
        else:
            self.page.press("C-a", label="select all")
        if m.group("all"):
            self._format(how)
        else:
            word = m.group("word")
            words = text.split(" ")
            if word not in words:
                raise AgentError(f"{word!r} not in {text!r}")
            at = words.index(word)
            if self.mistake == "wrong_element" and len(words) > 1:
                at = at + 1 if at + 1 < len(words) else at - 1
                word = words[at]
            before, after = " ".join(words[:at]), " ".join(words[at + 1:])
            if before:
                self.page.type(before + " ", label="retype the text")
            if self.mistake == "wrong_element":
                self.deviate("wrong_element")
            self._format(how)
            if self.mistake == "typo":
                self.deviate("typo")
                word = typo(word, self.rng)
            self.page.type(word, label=f"retype {word}")
            self._format(how, off=True)
            if after:
                self.page.type(" " + after, label="retype the text")
        self.submit_unless_stopping("#subbtn", "button:Submit")


class GenerateNumber(Agent):
    """generate-number: press Generate until the number meets the instruction, Submit."""

    MISTAKES = ("wrong_option", "premature_stop", "wrong_then_recover")

    def _fits(self, n: int) -> bool:
        crit, bound = self.fields.get("criterion", ""), int(self.fields.get("number", "0") or 0)
        return {"odd": n % 2 != 0, "even": n % 2 == 0, "less than": n < bound,
                "greater than": n > bound}.get(crit, False)

    def run(self) -> None:
        gen = self.one("#generate")
        want_fit = self.mistake != "wrong_option"  # misreads the rule: keeps a number that breaks it
        for k in range(30):
            if self.mistake == "wrong_option" and k == 0:
                self.deviate("wrong_option")
            self.click_el(gen, "button:Generate")
            shown = self.one("#display-number").text.strip()
            if re.fullmatch(r"-?\d+", shown) and self._fits(int(shown)) == want_fit:
                break
        else:
            raise AgentError("no fitting number generated")
        if self.mistake == "wrong_then_recover":
            self.deviate("wrong_then_recover")
            self.click_el(self.one("#display-number"), "the number (not a button)")
        self.submit_unless_stopping("#submit", "button:Submit")


class OddOrEven(Agent):
    """odd-or-even: mark each number Odd or Even, Submit."""

    MISTAKES = ("wrong_option", "missed_field", "premature_stop", "wrong_then_recover")

    def run(self) -> None:
        rows = self.all("#numbers .row")
        odds, evens = self.all("#numbers button.odd"), self.all("#numbers button.even")
        nums = [int(e.text) for e in self.all("#numbers .display-number")]
        if not (len(rows) == len(odds) == len(evens) == len(nums)) or not nums:
            raise AgentError("unexpected number rows")
        bad = self.rng.randrange(len(nums)) if self.mistake else -1
        for i, n in enumerate(nums):
            right, wrong = (odds[i], evens[i]) if n % 2 else (evens[i], odds[i])
            if i == bad and self.mistake == "missed_field":
                self.deviate("missed_field")
                continue
            if i == bad and self.mistake in ("wrong_option", "wrong_then_recover"):
                self.deviate(self.mistake)
                self.click_el(wrong, f"{wrong.text} for {n}")
                if self.mistake == "wrong_option":
                    continue
            self.click_el(right, f"{right.text} for {n}")
        self.submit_unless_stopping("#submit", "button:Submit")


class FindGreatest(Agent):
    """find-greatest: turn each card over (left to right), turn the greatest over again, Submit."""

    MISTAKES = ("wrong_element", "premature_stop")

    def _flip(self, i: int) -> int:
        card = self.all("#cardholder .card")[i]
        self.click_el(card, f"card {i + 1}", settle_ms=80)
        shown = self.all("#cardholder .card")[i]
        if "hidden" in shown.cls.split():
            raise AgentError(f"card {i + 1} did not turn over")
        return int(shown.text.strip())

    def run(self) -> None:
        n = len(self.all("#cardholder .card"))
        values = [self._flip(i) for i in range(n)]
        order = sorted(range(n), key=lambda i: -values[i])
        pick = order[0]
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            pick = order[1]
        if pick != n - 1:
            self.click_el(self.all("#cardholder .card")[pick], f"card {pick + 1}")
        self.submit_unless_stopping("#submit", "button:Submit")


class GuessNumber(Agent):
    """guess-number: bisect 0-9 with the feedback (higher / lower), retyping the guess each time."""

    MISTAKES = ("premature_stop", "wrong_then_recover")

    def _guess(self, n: int, first: bool) -> None:
        # The left part of the field: its right end holds the number spinner, whose arrows would change the value.
        box = self.one("#tt")
        self.page.click(box.x + box.w * self.rng.uniform(0.15, 0.4), box.cy + self.rng.uniform(-2, 2), "number field")
        if not first:
            self.page.press("C-a", label="select the old guess")
        self.page.type(str(n), label="number field")

    def run(self) -> None:
        lo, hi = 0, 9
        misread = self.mistake == "wrong_then_recover"
        for k in range(10):
            guess = (lo + hi) // 2
            self._guess(guess, k == 0)
            if self.mistake == "premature_stop" and k == 1:
                self.deviate("premature_stop")  # types its second guess and never submits it
                return
            self.click_el(self.one("#subbtn"), "button:Submit", settle_ms=80)
            higher, lower = bool(self.all("#higher")), bool(self.all("#lower"))
            if not (higher or lower):
                return  # correct: the episode has ended
            if misread and (lower or guess > 0):
                # Reads the feedback the wrong way round once, guesses on the wrong side, then reads it again.
                misread = False
                self.deviate("wrong_then_recover")
                self._guess(guess + 1 if lower else guess - 1, False)
                self.click_el(self.one("#subbtn"), "button:Submit", settle_ms=80)
            if higher:
                lo = guess + 1
            else:
                hi = guess - 1
            if lo > hi:
                raise AgentError("the feedback contradicts itself")
        raise AgentError("number not found")


# click-checkboxes-soft: the task's own synonym groups (a label is any word of the group of a named word).
_SYNONYMS: tuple[tuple[str, ...], ...] = (
    ("big", "large", "huge", "enormous", "gigantic"),
    ("small", "tiny", "little", "mini", "petite"),
    ("red", "scarlet", "crimson", "vermillion"),
    ("happy", "cheerful", "joyful", "gleeful", "delighted"),
    ("sad", "unhappy", "sorrowful", "miserable", "tragic"),
    ("angry", "mad", "furious", "irritated"),
    ("evil", "wicked", "immoral", "sinful", "corrupt", "depraved"),
    ("wrong", "incorrect", "mistaken", "erroneous"),
    ("real", "genuine", "actual"),
    ("strange", "odd", "peculiar", "unusual", "weird"),
    ("stop", "cease", "halt", "end", "finish"),
    ("scared", "terrified", "panicked", "fearful", "frightened", "afraid"),
    ("quiet", "calm", "peaceful", "serene", "mild"),
    ("old", "aged", "archaic"),
    ("love", "like", "adore", "favor"),
    ("kill", "murder", "assassinate"),
    ("keep", "retain", "preserve", "sustain", "maintain"),
    ("hide", "conceal", "camouflage"),
    ("hate", "despise", "loathe", "detest", "dislike"),
    ("funny", "humorous", "amusing", "comical", "laughable"),
    ("fat", "fleshy", "plump", "chubby"),
    ("stupid", "dumb", "dull", "unwise"),
    ("delicious", "savory", "delectable", "appetizing"),
    ("cut", "slice", "carve", "chop"),
    ("brave", "courageous", "fearless"),
    ("begin", "start", "initiate", "launch"),
    ("answer", "reply", "response"),
    ("television", "televisions", "tv", "tvs"),
    ("house", "home", "houses", "homes"),
    ("fire", "flame", "fires", "flames"),
    ("pig", "pork", "swine"),
    ("rabbit", "rabbits", "bunny", "bunnies"),
    ("car", "cars", "automobile", "automobiles", "vehicle", "vehicles"),
    ("water",),
)


# number-checkboxes: the example digits, 7 rows of 4 boxes ("#" ticked).
_DIGITS: dict[str, tuple[str, ...]] = {
    "0": (".##.", "#..#", "#..#", "#..#", "#..#", "#..#", ".##."),
    "1": ("..#.", ".##.", "..#.", "..#.", "..#.", "..#.", "..#."),
    "2": (".##.", "#..#", "#..#", "..#.", ".#..", "#...", "####"),
    "3": (".##.", "#..#", "...#", ".##.", "...#", "#..#", ".##."),
    "4": ("#...", "#.#.", "#.#.", "####", "..#.", "..#.", "..#."),
    "5": ("####", "#...", "#...", "###.", "...#", "#..#", ".##."),
    "6": (".##.", "#..#", "#...", "###.", "#..#", "#..#", ".##."),
    "7": ("####", "#..#", "...#", "..#.", "..#.", ".#..", ".#.."),
    "8": (".##.", "#..#", "#..#", ".##.", "#..#", "#..#", ".##."),
    "9": (".##.", "#..#", "#..#", ".###", "...#", "#..#", ".##."),
}


# Where a text area is scrolled to: [scrollTop, scrollHeight, clientHeight].
_SCROLL_JS = "var t = document.querySelector(arguments[0]); return [t.scrollTop, t.scrollHeight, t.clientHeight];"


class ClickMenu(Agent):
    """click-menu: hover the menu path open (a click on a parent item selects it) and click the last item."""

    MISTAKES = ("wrong_element", "premature_stop", "wrong_then_recover")

    def candidates(self) -> list[str]:
        return [e.text for e in self.page.query("#area li > div") if e.text and e.visible]

    def _item(self, name: str, tries: int = 10) -> El:
        for _ in range(tries):
            found = [e for e in self.all("#area li > div") if e.text == name and e.pts]
            if found:
                return found[0]
            self.page.wait(150)  # the submenu opens after the menu's delay
        raise AgentError(f"menu item {name!r} not shown")

    def _hover(self, el: El, label: str) -> None:
        self.page.move(el.x + el.w * self.rng.uniform(0.3, 0.7), el.y + el.h * self.rng.uniform(0.35, 0.65),
                       f"hover {label}", settle_ms=450, harmless=False)

    def run(self) -> None:
        path = [p.strip() for p in self.fields.get("target", "").split(">") if p.strip()]
        if not path:
            raise AgentError("no menu path in the instruction")
        for depth, name in enumerate(path[:-1]):
            item = self._item(name)
            if depth == 0 and self.mistake == "wrong_then_recover":
                others = [e for e in self.all("#area li > div")
                          if e.visible and e.text != name and abs(e.x - item.x) < 2]
                if others:
                    self.deviate("wrong_then_recover")
                    wrong = min(others, key=lambda e: abs(e.cy - item.cy))
                    self._hover(wrong, f"div:{wrong.text}")
                    item = self._item(name)
            self._hover(item, f"div:{name}")
        target = self._item(path[-1])
        if self.mistake == "wrong_then_recover" and len(path) == 1:
            others = [e for e in self.all("#area li > div") if e.visible and e.text != target.text]
            if others:
                self.deviate("wrong_then_recover")
                wrong = min(others, key=lambda e: abs(e.cy - target.cy))
                self._hover(wrong, f"div:{wrong.text}")
                target = self._item(path[-1])
        if self.mistake == "premature_stop":
            self._hover(target, f"div:{target.text}")
            self.deviate("premature_stop")
            return
        if self.mistake == "wrong_element":
            siblings = [e for e in self.all("#area li > div")
                        if e.pts and e.text != target.text and abs(e.x - target.x) < 2]
            if siblings:
                self.deviate("wrong_element")
                near = target
                target = min(siblings, key=lambda e: abs(e.cy - near.cy))
        self.click_el(target, f"div:{target.text}")
        # Still here: the submenu closed under the pointer before the click (it moved away); open the path again.
        for name in path[:-1]:
            self._hover(self._item(name), f"div:{name}")
        target = self._item(target.text)
        self.click_el(target, f"div:{target.text}")


class ClickMenu2(Agent):
    """click-menu-2: open the Menu button's menu, open Playback if needed, click the named (or pictured) item."""

    MISTAKES = ("wrong_element", "premature_stop", "wrong_then_recover")
    PLAYBACK = ("Prev", "Stop", "Play", "Next")

    def candidates(self) -> list[str]:
        return [e.text for e in self.page.query("#menu li > div") if e.text and e.text != "Playback"]

    def _wanted(self) -> tuple[str | None, str | None]:
        """(label, icon class): the instruction names the item or shows its icon."""
        m = re.search(r'labeled "(.*)"', self.fields.get("target", "") or self.utterance)
        if m:
            return m.group(1), None
        icons = self.page.query("#query span.ui-icon")
        if not icons:
            raise AgentError("neither a label nor an icon in the instruction")
        cls = next((c for c in icons[0].cls.split() if c.startswith("ui-icon-")), "")
        return None, cls

    def _find(self, name: str) -> El:
        hit = next((e for e in self.all("#menu li > div") if e.pts and e.text == name), None)
        if hit is None:
            raise AgentError(f"menu item {name!r} not shown")
        return hit

    def _name_of(self, label: str | None, icon: str | None) -> str:
        if label is not None:
            return label
        spans = [s for s in self.page.query("#menu span.ui-icon") if icon in s.cls.split()]
        divs = self.page.query("#menu li > div")
        # A hidden item's icon has no rectangle: read the names from the markup order instead (one icon per item).
        order = [d.text for d in divs if d.text != "Playback"]
        icons = [s for s in self.page.query("#menu span.ui-icon") if "ui-menu-icon" not in s.cls]
        for name, s in zip(order, icons):
            if spans and s.cls == spans[0].cls:
                return name
        raise AgentError(f"no menu item with icon {icon!r}")

    def run(self) -> None:
        label, icon = self._wanted()
        name = self._name_of(label, icon)
        self.click_el(self.one("#open-menu"), "button:Menu", settle_ms=120)
        nested = name in self.PLAYBACK
        if self.mistake == "wrong_then_recover" and not nested:
            # Opens the Playback submenu for nothing, then goes back to the main items.
            self.deviate("wrong_then_recover")
            self.click_el(self.one("#menu li > div", lambda e: e.text == "Playback"), "div:Playback", settle_ms=400)
        if self.mistake == "wrong_then_recover" and nested:
            # Clicks the Menu button again (the menu closes) and once more to reopen it.
            self.deviate("wrong_then_recover")
            self.click_el(self.one("#open-menu"), "button:Menu", settle_ms=120)
            self.click_el(self.one("#open-menu"), "button:Menu", settle_ms=120)
        if nested:
            self.click_el(self.one("#menu li > div", lambda e: e.text == "Playback"), "div:Playback", settle_ms=400)
        target = self._find(name)
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if self.mistake == "wrong_element":
            others = [e for e in self.all("#menu li > div") if e.pts and abs(e.x - target.x) < 2
                      and e.text not in (name, "Playback", "Print...")]
            if others:
                self.deviate("wrong_element")
                near = target
                target = min(others, key=lambda e: abs(e.cy - near.cy))
        for _ in range(2):
            self.click_el(target, f"div:{target.text}")
            # Still here: the submenu closed before the click (the pointer strayed); open it again and retry.
            if not self.all("#menu"):
                self.click_el(self.one("#open-menu"), "button:Menu", settle_ms=120)
            if nested:
                self.click_el(self.one("#menu li > div", lambda e: e.text == "Playback"), "div:Playback",
                              settle_ms=400)
            target = self._find(target.text)


class ClickCheckboxesSoft(Agent):
    """click-checkboxes-soft: tick the boxes whose words mean the same as the named words, then Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "premature_stop", "wrong_then_recover")
    CANDIDATES = "#boxes label"

    @staticmethod
    def _group(word: str) -> int:
        w = word.strip().lower()
        return next((i for i, g in enumerate(_SYNONYMS) if w in g), -1)

    def run(self) -> None:
        groups = {self._group(v) for k, v in self.fields.items() if k.startswith("target")} - {-1}
        labels = self.all(self.CANDIDATES)
        plan = [lab for lab in labels if self._group(lab.text) in groups]
        others = [lab for lab in labels if self._group(lab.text) not in groups]
        self.rng.shuffle(plan)
        missed = False
        if self.mistake == "missed_checkbox" and plan:
            plan.pop()
            missed = True
        extra_at = self.rng.randint(0, len(plan)) if self.mistake in ("extra_checkbox", "wrong_then_recover") \
            and others else None
        for n in range(len(plan) + 1):
            if n == extra_at:
                extra = self.rng.choice(others)
                self.deviate(str(self.mistake))
                self.click_el(extra, f"label:{extra.text}")
                if self.mistake == "wrong_then_recover":
                    self.click_el(extra, f"untick {extra.text}")
            if n < len(plan):
                self.click_el(plan[n], f"label:{plan[n].text}")
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if missed:
            self.deviate("missed_checkbox")
        self.click_el(self.one("#subbtn"), "button:Submit")


class ClickTab2Medium(Agent):
    """click-tab-2-medium: click the link in the open tab, or switch to Tab #2 when the open tab lacks it."""

    MISTAKES = ("wrong_element", "premature_stop", "wrong_then_recover")

    def candidates(self) -> list[str]:
        return sorted({e.text for e in self.page.query("#area span.alink") if e.text})

    def run(self) -> None:
        want = self.fields.get("target", "")
        links = self.all("#tabs-1 span.alink")
        tabs = self.all("#area ul a")
        link = next((e for e in links if e.text == want), None)
        tab2 = next((t for t in tabs if t.text == "Tab #2"), None)
        target = link if link is not None else tab2
        if target is None:
            raise AgentError(f"neither a link {want!r} nor a second tab")
        if self.mistake == "wrong_then_recover":
            tab1 = next((t for t in tabs if t.text == "Tab #1"), None)
            if tab1 is not None:
                self.deviate("wrong_then_recover")
                self.click_el(tab1, "a:Tab #1", settle_ms=120)  # the open tab again: nothing changes
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if self.mistake == "wrong_element":
            others = [e for e in links if e.text != want]
            if link is not None and tab2 is not None and not others:
                others = [tab2]
            if others:
                self.deviate("wrong_element")
                near = target
                target = min(others, key=lambda e: abs(e.cy - near.cy) + abs(e.cx - near.cx))
        self.click_el(target, f"{target.tag}:{target.text}")


class NumberCheckboxes(Agent):
    """number-checkboxes: tick the boxes that draw the digit, row by row, then Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "premature_stop", "wrong_then_recover")

    def run(self) -> None:
        rows = _DIGITS.get(self.fields.get("target", "").strip())
        if rows is None:
            raise AgentError(f"no digit in: {self.utterance}")
        boxes = self.all("#checkboxes input")
        if len(boxes) < 28:
            raise AgentError("the 7x4 grid of boxes is not shown")
        on = [boxes[4 * r + c] for r in range(7) for c in range(4) if rows[r][c] == "#"]
        off = [boxes[4 * r + c] for r in range(7) for c in range(4) if rows[r][c] == "."]
        plan = list(on)
        missed = False
        if self.mistake == "missed_checkbox":
            plan.pop(self.rng.randrange(len(plan)))
            missed = True
        extra_at = self.rng.randrange(len(plan)) if self.mistake in ("extra_checkbox", "wrong_then_recover") else None
        for n, box in enumerate(plan):
            if n == extra_at:
                # A box next to the stroke: the row above or below the one being drawn.
                extra = min(off, key=lambda b: abs(b.cy - box.cy) + abs(b.cx - box.cx))
                self.deviate(str(self.mistake))
                self.click_el(extra, "checkbox (off the stroke)", settle_ms=30)
                if self.mistake == "wrong_then_recover":
                    self.click_el(extra, "untick checkbox", settle_ms=30)
            self.click_el(box, f"checkbox row {boxes.index(box) // 4 + 1}", settle_ms=30)
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if missed:
            self.deviate("missed_checkbox")
        self.click_el(self.one("#subbtn"), "button:Submit")


class _PageKeys(Agent):
    """Scroll a text area with the keyboard: click into it, PageDown (or PageUp) until it stops moving."""

    AREA = "#text-area"

    def page_to(self, down: bool, limit: int = 30) -> None:
        key = "<PageDown>" if down else "<PageUp>"
        for _ in range(limit):
            top, height, client = self.page.execute(_SCROLL_JS, self.AREA)
            if (down and top + client >= height - 1) or (not down and top <= 0):
                return
            self.page.press(key, label="text area", settle_ms=60)
        raise AgentError("the text area does not scroll")


class ScrollText(_PageKeys):
    """scroll-text: page down to the end of the text area, type its last word into the field, Submit."""

    MISTAKES = ("typo", "wrong_text", "premature_stop", "wrong_then_recover")

    def run(self) -> None:
        area = self.one(self.AREA)
        self.click_el(area, "text area")
        self.page_to(down=True)
        words = (self.one(self.AREA).value or "").split()
        if not words:
            raise AgentError("the text area is empty")
        word = words[-1].replace(".", "")
        box = self.one("#answer-input")
        if self.mistake == "wrong_text":
            # Reads the last word of the first screen of text instead.
            first = [w.replace(".", "") for w in words[:12] if w.replace(".", "") != word]
            self.type_into(box, first[-1] if first else word + "s", "answer field", deviation="wrong_text")
        elif self.mistake in ("typo", "wrong_then_recover"):
            self.type_into(box, typo(word, self.rng), "answer field", deviation=self.mistake)
            if self.mistake == "wrong_then_recover":
                self.page.press("C-a", label="select all")
                self.page.type(word, label="answer field")
        else:
            self.type_into(box, word, "answer field")
        self.submit_unless_stopping("#subbtn", "button:Submit")


class ScrollText2(_PageKeys):
    """scroll-text-2: page the text area to its top or bottom, Submit."""

    MISTAKES = ("wrong_option", "premature_stop", "wrong_then_recover")

    def run(self) -> None:
        down = self.fields.get("target", "") == "bottom"
        self.click_el(self.one(self.AREA), "text area")
        if self.mistake == "wrong_then_recover":
            self.deviate("wrong_then_recover")
            self.page.press("<PageUp>" if down else "<PageDown>", label="text area", settle_ms=60)
        if self.mistake == "wrong_option":
            self.deviate("wrong_option")
            down = not down
        self.page_to(down)
        self.submit_unless_stopping("#subbtn", "button:Submit")


_MONEY_RE = re.compile(r"\$\s*([\d,]+(?:\.\d+)?)")


_DURATION_RE = re.compile(r"(\d+)\s*h\s*(\d+)\s*m")


# The chart's points so far and the price shown (read often: a quick look, not the full element query).
_TICK_JS = ("return [document.querySelectorAll('#area svg circle').length, "
               "(document.getElementById('stock-price') || {}).textContent || ''];")


def _money(text: str) -> float:
    """'Book for $1,255' -> 1255.0; '$52.00' -> 52.0."""
    m = _MONEY_RE.search(text or "")
    if not m:
        raise AgentError(f"no amount in {text!r}")
    return float(m.group(1).replace(",", ""))


def _minutes(text: str) -> int:
    """'14h 18m' -> 858."""
    m = _DURATION_RE.search(text or "")
    if not m:
        raise AgentError(f"no duration in {text!r}")
    return int(m.group(1)) * 60 + int(m.group(2))


# -- email inbox, instructions in free words ------------------------------------------------------------------------
class EmailInboxForwardNl(EmailInbox):
    """email-inbox-forward-nl (-turk): forward the sender's email to the named person (the task is implicit)."""

    def run(self) -> None:
        self.fields = {**self.fields, "task": self.fields.get("task") or "forward"}
        super().run()


class EmailInboxNlTurk(EmailInbox):
    """email-inbox-nl-turk: star, delete, reply to or forward the sender's email, as the free-worded request says."""


# -- forms --------------------------------------------------------------------------------------------------------
class ReadTable2(Agent):
    """read-table-2: type the table's value for each of the two labelled fields, Submit."""

    MISTAKES = ("typo", "wrong_text", "swapped_fields", "missed_field", "premature_stop")

    def candidates(self) -> list[str]:
        cells = self.page.query("#tab td")
        return [cells[i].text for i in range(0, len(cells), 2)]

    def run(self) -> None:
        cells = self.all("#tab td")
        table = {cells[i].text.strip(): cells[i + 1].text.strip() for i in range(0, len(cells) - 1, 2)}
        plan: list[tuple[El, str, str]] = []
        for n in (1, 2):
            label = self.one(f"#ll{n}")
            key = label.text.strip().rstrip(":").strip()
            if key not in table:
                raise AgentError(f"no row {key!r} in the table")
            plan.append((self.one(f"#tt{n}"), table[key], key))
        devs: list[str | None] = [None, None]
        if self.mistake == "swapped_fields" and plan[0][1] != plan[1][1]:
            (b0, v0, k0), (b1, v1, k1) = plan
            plan = [(b0, v1, k0), (b1, v0, k1)]
            devs[0] = "swapped_fields"
        elif self.mistake in ("typo", "wrong_text"):
            at = self.rng.randrange(2)
            box, value, key = plan[at]
            if self.mistake == "typo":
                value = typo(value, self.rng)
            else:
                # The value of the row above or below: a line slip while reading the table.
                keys = list(table)
                i = keys.index(key)
                near = [keys[j] for j in (i - 1, i + 1) if 0 <= j < len(keys) and table[keys[j]] != table[key]]
                if not near:
                    near = [k for k in keys if table[k] != table[key]]
                value = table[self.rng.choice(near)]
            plan[at] = (box, value, key)
            devs[at] = self.mistake
        skip = self.rng.randrange(2) if self.mistake == "missed_field" else None
        for n, (box, value, key) in enumerate(plan):
            if n == skip:
                continue
            self.type_into(box, value, f"{key} field", deviation=devs[n])
        if skip is not None:
            self.deviate("missed_field")  # submitting with a field left empty is the departure
        self.submit_unless_stopping("#subbtn", "button:Submit")


# -- lists and pages ------------------------------------------------------------------------------------------------
class PhoneBook(Agent):
    """phone-book: page through the contacts to the named person, click the asked detail (phone, email, address)."""

    MISTAKES = ("wrong_element", "wrong_option", "premature_stop", "wrong_then_recover")
    KINDS = ("phone", "email", "address")

    def candidates(self) -> list[str]:
        return [e.text for e in self.page.query("#contact a") if e.text]

    def _shown(self) -> str:
        names = self.all("#contact h2.name")
        return names[0].text.strip() if names else ""

    def _turn(self, sign: str) -> None:
        link = self.one("#pagination li:not(.disabled) a.page-link", lambda e: e.text.strip() == sign)
        self.click_el(link, "a:next page" if sign == ">" else "a:previous page", settle_ms=80)

    def run(self) -> None:
        name = self.fields.get("name", "")
        kind = self.fields.get("target", "")
        kind = "phone" if kind.startswith("phone") else kind
        if kind not in self.KINDS:
            raise AgentError(f"unknown detail {kind!r}")
        for _ in range(6):
            if self._shown() == name:
                break
            if self.mistake == "wrong_element":
                # Does not page on: takes the contact in front of it for the one asked.
                self.deviate("wrong_element")
                break
            if not self.all("#pagination li.next:not(.disabled) a"):
                raise AgentError(f"{name!r} is not in the contact book")
            self._turn(">")
        else:
            raise AgentError(f"{name!r} not reached")
        if self.mistake == "wrong_element" and self.mistake_applied is None:
            # The right contact is the first one: it pages on once and takes the next contact instead.
            if self.all("#pagination li.next:not(.disabled) a"):
                self.deviate("wrong_element")
                self._turn(">")
        if self.mistake == "wrong_then_recover":
            self.deviate("wrong_then_recover")
            if self.all("#pagination li.next:not(.disabled) a"):
                self._turn(">")  # one page too far
                self._turn("<")
            else:
                self._turn("<")  # the last page: back one, thinking it missed the name, and on again
                self._turn(">")
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")  # the contact is on screen; the click on the detail never comes
            return
        links = self.all("#contact a")
        found = next((a for a in links if a.cls.split(" ")[0] == kind), None)
        if found is None:
            raise AgentError(f"no {kind} link")
        target = found
        if self.mistake == "wrong_option":
            others = [a for a in links if a.cls.split(" ")[0] != kind]
            if others:
                self.deviate("wrong_option")
                target = min(others, key=lambda a: abs(a.cy - found.cy))  # the line above or below
        self.click_el(target, f"a:{target.text}")


class UseAutocompleteNodelay(Agent):
    """use-autocomplete-nodelay: as use-autocomplete; the suggestions open at once."""

    MISTAKES = ("wrong_option", "typo", "premature_stop")

    def run(self) -> None:
        start, end = self.fields.get("start", ""), self.fields.get("end", "")
        box = self.one("#tags")
        if self.mistake == "typo":
            # A slip in the prefix: the suggestions are for other words; it takes one anyway (or the bare text).
            self.type_into(box, typo(start, self.rng), "Tags field", deviation="typo")
            self.page.wait(150)
            fits = [i for i in self.all("ul.ui-autocomplete li") if not (i.text.startswith(start) and
                                                                          i.text.endswith(end))]
            if fits:
                self.click_el(fits[0], f"suggestion {fits[0].text}")
            self.click_el(self.one("#subbtn"), "button:Submit")
            return
        self.click_el(box, "Tags field")
        self.page.type(start, label="Tags field", settle_ms=150)
        items = self.all("ul.ui-autocomplete li")
        good = [i for i in items if i.text.startswith(start) and i.text.endswith(end)]
        bad = [i for i in items if not (i.text.startswith(start) and i.text.endswith(end))]
        if not good:
            raise AgentError(f"no suggestion {start}...{end}")
        pick = good[0]
        if self.mistake == "wrong_option" and bad and end:
            self.deviate("wrong_option")
            pick = self.rng.choice(bad)
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        self.click_el(pick, f"suggestion {pick.text}")
        self.click_el(self.one("#subbtn"), "button:Submit")


# -- timing ---------------------------------------------------------------------------------------------------------
class StockMarket(Agent):
    """stock-market: watch the price tick and click Buy once it is below the limit."""

    MISTAKES = ("wrong_option", "premature_stop")
    TICKS = 100  # the chart gets one point per 100 ms; after the 100th the price is gone

    def _tick(self) -> tuple[int, float | None]:
        """(points drawn so far, price shown)."""
        n, text = self.page.execute(_TICK_JS)
        try:
            return int(n), _money(str(text))
        except AgentError:
            return int(n), None

    def _ok(self, price: float, limit: float, n: int) -> bool:
        # The price moves at most $1.50 a tick: the further below the limit, the more time the click has.
        if self.mistake == "wrong_option":
            return price >= limit + 1.6 or n >= 90
        if price <= limit - 3.0:
            return True
        if n >= 25 and price <= limit - 1.5:
            return True
        return n >= 74 and price <= limit

    def run(self) -> None:
        limit = float(self.fields.get("target", "0") or 0)
        buy = self.one("#buy")
        last: tuple[int, float | None] = (-1, None)
        for _ in range(3000):
            n, price = self._tick()
            if price is not None and (n, price) != last and n < self.TICKS:
                fresh = n != last[0]
                last = (n, price)
                if fresh and self._ok(price, limit, n):
                    if self.mistake == "wrong_option":
                        self.deviate("wrong_option")  # buys while the price is above the limit
                    if self.mistake == "premature_stop":
                        self.deviate("premature_stop")  # gives up watching: no purchase
                        return
                    self.click_el(buy, "button:Buy", settle_ms=30)
                    return
            if n >= self.TICKS:
                break
            self.page.wait(8)
        raise AgentError("the price never went below the limit")


class OrderFood(Agent):
    """order-food: add the named dishes (or N dishes of the named kind) with their + buttons, Order!."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "wrong_then_recover", "premature_stop")
    TOP, BOTTOM = 52.0, 204.0

    def candidates(self) -> list[str]:
        return [e.text.strip() for e in self.page.query("#area .food-item .item-name") if e.text.strip()]

    def _items(self) -> list[tuple[str, set[str]]]:
        out: list[tuple[str, set[str]]] = []
        for item in self.page.query("#area .food-item"):
            out.append((str(item.data.get("item", "")).strip(), set()))
        # The kind icons of each dish, in document order: one .types block per dish.
        types_js = ("return Array.from(document.querySelectorAll('#area .food-item .types')).map(function (t) {"
                    " return Array.from(t.querySelectorAll('img')).map(function (i) { return i.alt; }); });")
        kinds = self.page.execute(types_js)
        return [(name, set(k)) for (name, _), k in zip(out, kinds, strict=True)]

    def _reach(self, index: int, cls: str) -> El:
        """Scroll the menu until the dish's + (or -) button can be clicked."""
        for _ in range(16):
            el = self.page.query(f"#area .food-item .{cls}")[index]
            if el.pts and self.TOP <= el.y and el.y + el.h <= self.BOTTOM:
                return el
            area = self.one("#area")
            self.page.scroll(area.cx + self.rng.uniform(-25, 25), area.y + 40 + self.rng.uniform(0, 60),
                             down=el.y + el.h > self.BOTTOM, label="menu")
        raise AgentError(f"could not scroll to dish {index}")

    def _order_button(self) -> El:
        last = None
        for _ in range(16):
            b = self.page.query("#submit-order button")[0]
            if b.pts and (b.y + b.h <= self.BOTTOM or b.y == last):  # fully shown, or the menu's end reached
                return b
            last = b.y
            area = self.one("#area")
            self.page.scroll(area.cx + self.rng.uniform(-25, 25), area.y + 40 + self.rng.uniform(0, 60),
                             down=True, label="menu")
        raise AgentError("could not scroll to the Order button")

    def run(self) -> None:
        items = self._items()
        names = [n for n, _ in items]
        if self.fields.get("criterion") == "type":
            kind, amount = self.fields.get("type", ""), int(self.fields.get("amount", "1"))
            fits = [i for i, (_, k) in enumerate(items) if kind in k]
            if not fits:
                raise AgentError(f"no dish is {kind!r}")
            plan = [fits[j % len(fits)] for j in range(amount)]  # one of each fitting dish, then round again
            wrong = [i for i, (_, k) in enumerate(items) if kind not in k]
        else:
            wanted = [v.strip() for k, v in sorted(self.fields.items()) if k.startswith("target")]
            plan = []
            for w in wanted:
                if w not in names:
                    raise AgentError(f"no dish {w!r}")
                plan.append(names.index(w))
            wrong = [i for i in range(len(items)) if i not in plan]
        plan.sort()
        missed = False
        if self.mistake == "missed_checkbox" and len(plan) > 1:
            plan.pop(self.rng.randrange(len(plan)))
            missed = True
        extra = self.rng.choice(wrong) if self.mistake in ("extra_checkbox", "wrong_then_recover") and wrong else None
        order = sorted(plan + ([extra] if extra is not None else []))
        extra_done = False
        for i in order:
            if i == extra and not extra_done:
                extra_done = True
                self.deviate(self.mistake or "extra_checkbox")
                self.click_el(self._reach(i, "add"), f"span:+ {names[i]}")
                if self.mistake == "wrong_then_recover":
                    self.click_el(self._reach(i, "remove"), f"span:- {names[i]}")
                if i not in plan:
                    continue
            self.click_el(self._reach(i, "add"), f"span:+ {names[i]}")
        if self.mistake == "premature_stop":
            self.deviate("premature_stop")
            return
        if missed:
            self.deviate("missed_checkbox")
        self.click_el(self._order_button(), "button:Order!")


class BuyTicket(Agent):
    """buy-ticket: book the flight that is cheapest, dearest, shortest or longest."""

    MISTAKES = ("wrong_element", "wrong_then_recover")
    CANDIDATES = "#area .flight button"

    def run(self) -> None:
        want = self.fields.get("target", "")
        buttons = self.all("#area .flight button")
        lengths = self.all("#area .flight .time-duration")
        if not buttons or len(buttons) != len(lengths):
            raise AgentError("cannot read the flights")
        if "cost" in want:
            values = [_money(b.text) for b in buttons]
        else:
            values = [float(_minutes(d.text)) for d in lengths]
        best = min(values) if ("cheapest" in want or "shortest" in want) else max(values)
        pick = values.index(best)
        if self.mistake == "wrong_element":
            # The runner-up: the next best value (a misread digit, a glance at the wrong line).
            others = sorted((i for i, v in enumerate(values) if v != best), key=lambda i: abs(values[i] - best))
            if others:
                self.deviate("wrong_element")
                pick = others[0]
        elif self.mistake == "wrong_then_recover":
            # A click on another flight's "Duration:" label (nothing happens), then the right button.
            labels = self.all("#area .flight .label-container label")
            if len(labels) == len(buttons) > 1:
                self.deviate("wrong_then_recover")
                self.click_el(labels[self.rng.choice([i for i in range(len(labels)) if i != pick])], "label:Duration")
        target = buttons[pick]
        self.click_el(target, f"button:{target.text}")


_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
              "November", "December")


# The fill colour of every figure drawn in the shape grid, in document order (query() does not return attributes).
_FILLS_JS = """
return Array.from(document.querySelectorAll('#area_svg > *')).map(function (e) {
  return e.getAttribute('fill') || '';
});
"""


# -- date picker -----------------------------------------------------------------------------------------------
class ChooseDate(Agent):
    """choose-date (-easy/-medium/-nodelay): open the date picker, page to the month, click the day, Submit."""

    MISTAKES: tuple[str, ...] = ("wrong_option", "wrong_element", "premature_stop", "wrong_then_recover")

    def _shown_month(self) -> int:
        title = self.one("#ui-datepicker-div .ui-datepicker-title").text.replace("\xa0", " ")
        m = re.match(r"(\w+)\s+(\d{4})", title)
        if not m or m.group(1) not in _MONTHS:
            raise AgentError(f"cannot read the calendar title {title!r}")
        return int(m.group(2)) * 12 + _MONTHS.index(m.group(1))

    def _open(self) -> None:
        self.click_el(self.one("#datepicker"), "input:Date", settle_ms=450)  # the calendar fades in
        if not self.all("#ui-datepicker-div .ui-datepicker-title"):
            raise AgentError("the date picker did not open")

    def _page_to(self, goal: int) -> None:
        """Click Prev or Next until the calendar shows month ``goal``."""
        for _ in range(30):
            moves = goal - self._shown_month()
            if moves == 0:
                return
            arrow = self.one("#ui-datepicker-div a.ui-datepicker-" + ("prev" if moves < 0 else "next"))
            self.click_el(arrow, f"a:{arrow.text}", settle_ms=60)
        raise AgentError("the calendar does not reach the month")

    def _day(self, day: int) -> El:
        return self.one("#ui-datepicker-div td a", lambda e: e.text == str(day))

    def run(self) -> None:
        month, day, year = (int(self.fields.get(k, "0") or 0) for k in ("month", "day", "year"))
        if not (month and day and year):
            raise AgentError(f"no date in: {self.utterance}")
        goal = year * 12 + month - 1
        self._open()
        self._page_to(goal)
        if self.mistake == "wrong_element":
            # One month too far: a further click on an arrow the picker still allows, then the same day number.
            arrows = [a for a in self.all("#ui-datepicker-div a.ui-datepicker-prev, #ui-datepicker-div "
                                          "a.ui-datepicker-next") if "ui-state-disabled" not in a.cls]
            if arrows:
                self.deviate("wrong_element")
                arrow = self.rng.choice(arrows)
                self.click_el(arrow, f"a:{arrow.text}", settle_ms=60)
                cells = self.all("#ui-datepicker-div td a")
                target = next((c for c in cells if c.text == str(day)), None) or self.rng.choice(cells)
                self.click_el(target, f"a:{target.text}", settle_ms=120)
                self.submit_unless_stopping("#subbtn", "button:Submit")
                return
            self.mistake = "wrong_option"  # the picker shows the only month there is
        target = self._day(day)
        if self.mistake in ("wrong_option", "wrong_then_recover"):
            near = [c for c in self.all("#ui-datepicker-div td a") if c.text.isdigit() and abs(int(c.text) - day) == 1]
            if near:
                self.deviate(self.mistake)
                wrong = self.rng.choice(near)
                self.click_el(wrong, f"a:{wrong.text}", settle_ms=120)
                if self.mistake == "wrong_option":
                    self.submit_unless_stopping("#subbtn", "button:Submit")
                    return
                self._open()  # the calendar reopens on the month of the picked (wrong) day
                target = self._day(day)
        self.click_el(target, f"a:{target.text}", settle_ms=120)
        self.submit_unless_stopping("#subbtn", "button:Submit")


class ChooseDateEasy(ChooseDate):
    """choose-date-easy: the picker holds December 2016 only."""

    MISTAKES = ("wrong_option", "premature_stop", "wrong_then_recover")


# -- sliders ------------------------------------------------------------------------------------------------------
class _G4Sliding(Agent):
    """Set a jQuery UI slider: learn its scale from two clicks on the track, click where the number should sit,
    then fix the last steps with the arrow keys (the click focuses the handle)."""

    def _value(self, out: str) -> int:
        txt = self.one(out).text
        if not re.fullmatch(r"-?\d+", txt):
            raise AgentError(f"cannot read the slider value {txt!r}")
        return int(txt)

    def _click_track(self, track: El, handle: El, pos: float, vertical: bool, label: str) -> None:
        """Click the track at axis position ``pos`` (a point off the handle, which would not move it)."""
        if vertical:
            x, y = track.cx + self.rng.uniform(-1.5, 1.5), pos
        else:
            x, y = pos, track.cy + self.rng.uniform(-1.5, 1.5)
        self.page.click(x, y, label, settle_ms=80)

    def _geometry(self, sel: str) -> tuple[El, El, bool]:
        track = self.one(sel)
        handle = self.one(f"{sel} .ui-slider-handle")
        return track, handle, "ui-slider-vertical" in track.cls

    def set_slider(self, sel: str, out: str, want: int, name: str, off_by: int = 0) -> None:
        """Bring slider ``sel`` (value shown in ``out``) to ``want``; ``off_by`` (+-1) leaves it one step off, the
        extra key press being the departure."""
        track, handle, vertical = self._geometry(sel)
        lo_end = track.y + track.h - 3 if vertical else track.x + 3
        hi_end = track.y + 3 if vertical else track.x + track.w - 3
        h0 = handle.cy if vertical else handle.cx
        v0 = self._value(out)
        seen = [v0]
        if v0 != want:
            # A probe click at the far end from the handle: two (position, value) pairs give the scale.
            p1 = lo_end if abs(lo_end - h0) > abs(hi_end - h0) else hi_end
            p1 += self.rng.uniform(-1.0, 1.0)
            self._click_track(track, handle, p1, vertical, f"{name} track")
            v1 = self._value(out)
            seen.append(v1)
            if v1 != want and v1 != v0 and abs(p1 - h0) > 4:
                slope = (v1 - v0) / (p1 - h0)
                p = p1 + (want - v1) / slope
                lo, hi = min(lo_end, hi_end), max(lo_end, hi_end)
                p = min(max(p, lo), hi)
                _, handle, _ = self._geometry(sel)
                hc = handle.cy if vertical else handle.cx
                if abs(p - hc) > 8:
                    self._click_track(track, handle, p, vertical, f"{name} track")
        up, down = ("<ArrowUp>", "<ArrowDown>") if vertical else ("<ArrowRight>", "<ArrowLeft>")
        if self._value(out) == want and self.mistake == "wrong_then_recover":
            # A key press the wrong way, undone at once.
            key = down if want >= max(seen) else up
            self.deviate("wrong_then_recover")
            self.page.press(key, label=f"{name} handle", settle_ms=40)
        for _ in range(30):
            v = self._value(out)
            if v == want:
                break
            self.page.press(up if v < want else down, label=f"{name} handle", settle_ms=40)
        if self._value(out) != want:
            raise AgentError(f"{name} does not reach {want}")
        if off_by:
            key = down if want >= max(seen) else up if want <= min(seen) else (up if off_by > 0 else down)
            self.deviate(self.mistake or "wrong_option")
            self.page.press(key, label=f"{name} handle", settle_ms=40)


class UseSlider(_G4Sliding):
    """use-slider: set the slider to the number, Submit."""

    MISTAKES = ("wrong_option", "premature_stop", "wrong_then_recover")

    def run(self) -> None:
        want = int(self.fields.get("target", "0"))
        off = self.rng.choice((-1, 1)) if self.mistake == "wrong_option" else 0
        self.set_slider("#slider", "#val", want, "slider", off)
        self.submit_unless_stopping("#subbtn", "button:Submit")


class UseSlider2(_G4Sliding):
    """use-slider-2: set the three sliders to the combination, Submit."""

    MISTAKES = ("wrong_option", "swapped_fields", "missed_field", "premature_stop")

    def run(self) -> None:
        want = [int(self.fields.get(f"n{i}", "0")) for i in (1, 2, 3)]
        plan = list(want)
        swap: tuple[int, int] | None = None
        if self.mistake == "swapped_fields":
            pairs = [(a, b) for a, b in ((0, 1), (1, 2), (0, 2)) if want[a] != want[b]]
            if pairs:
                swap = self.rng.choice(pairs)
                plan[swap[0]], plan[swap[1]] = want[swap[1]], want[swap[0]]
            else:
                self.mistake = "wrong_option"
        skip = None
        if self.mistake == "missed_field":
            unset = [i for i in range(3) if self._value(f"#val-{i + 1}") != want[i]]
            if unset:
                skip = self.rng.choice(unset)
            else:
                self.mistake = "wrong_option"
        odd = self.rng.randrange(3) if self.mistake == "wrong_option" else None
        for i in range(3):
            if i == skip:
                self.deviate("missed_field")  # the next action is taken where slider i should have been set
                continue
            if swap is not None and i == swap[0]:
                self.deviate("swapped_fields")
            off = self.rng.choice((-1, 1)) if i == odd else 0
            self.set_slider(f"#slider-{i + 1}", f"#val-{i + 1}", plan[i], f"slider {i + 1}", off)
        self.submit_unless_stopping("#subbtn", "button:Submit")


# -- shapes ---------------------------------------------------------------------------------------------------------
class _G4Shapes(Agent):
    """Read the shape grid: kind, text, colour and size of every figure; match the instruction's description."""

    def figures(self) -> list[tuple[El, dict[str, str]]]:
        els = self.page.query("#area_svg > *")
        fills = self.page.execute(_FILLS_JS)
        out = []
        for el, fill in zip(els, fills, strict=False):
            if el.tag == "text":
                kind, text = ("digit" if el.text.isdigit() else "letter"), el.text
                large = el.h >= 16
            else:
                kind = "shape"
                text = {"rect": "rectangle", "circle": "circle", "polygon": "triangle"}.get(el.tag, el.tag)
                large = max(el.w, el.h) >= 15
            out.append((el, {"kind": kind, "text": text, "color": fill, "size": "large" if large else "small"}))
        return out

    def matches(self, f: dict[str, str]) -> bool:
        size, color = self.fields.get("size"), self.fields.get("color")
        kind, target = self.fields.get("type"), self.fields.get("target")
        if size and f["size"] != size:
            return False
        if color and f["color"] != color:
            return False
        if kind and kind != "item" and f["kind"] != kind:
            return False
        return not target or f["text"] == target or f["kind"] == target


class ClickShape(_G4Shapes):
    """click-shape: click a figure that fits the description (size, colour, kind or the very letter/digit)."""

    MISTAKES = ("wrong_element",)

    def candidates(self) -> list[str]:
        return [f"{f['size']} {f['color']} {f['text']}" for _, f in self.figures()]

    def run(self) -> None:
        figs = self.figures()
        good = [el for el, f in figs if self.matches(f)]
        bad = [el for el, f in figs if not self.matches(f)]
        if not good:
            raise AgentError(f"no figure fits: {self.utterance}")
        target = self.rng.choice(good)
        if self.mistake == "wrong_element":
            self.deviate("wrong_element")
            if bad:
                target = min(bad, key=lambda e: abs(e.cx - target.cx) + abs(e.cy - target.cy))
            else:
                self.miss_click(target, "grid background")  # every figure fits: misses them all
                return
        self.click_el(target, f"{target.tag}:{target.text or 'figure'}")


class CountShape(_G4Shapes):
    """count-shape: count the figures that fit the description, click the button with that number."""

    MISTAKES = ("wrong_element",)
    CANDIDATES = "#count-buttons button"

    def run(self) -> None:
        n = sum(1 for _, f in self.figures() if self.matches(f))
        buttons = self.all("#count-buttons button")
        target = next((b for b in buttons if b.text == str(n)), None)
        if target is None:
            raise AgentError(f"no button {n}")
        if self.mistake == "wrong_element":
            others = [b for b in buttons if b.text != str(n) and b.text.isdigit()]
            if others:
                self.deviate("wrong_element")
                # Miscounts by as little as it can: the closest number on offer.
                target = min(others, key=lambda b: abs(int(b.text) - n))
        self.click_el(target, f"button:{target.text}")


class VisualAddition(Agent):
    """visual-addition: count the blocks of both groups, type the total, Submit."""

    MISTAKES = ("wrong_text", "typo", "premature_stop")

    def run(self) -> None:
        a = len(self.all("#visual-1 .addition-block"))
        b = len(self.all("#visual-2 .addition-block"))
        if not (a and b):
            raise AgentError("no blocks to count")
        text, dev = str(a + b), None
        if self.mistake == "wrong_text":
            text, dev = str(a + b + self.rng.choice((-1, 1))), "wrong_text"
        elif self.mistake == "typo":
            text, dev = typo(text, self.rng), "typo"
            if not text.strip():
                text = str(a + b) * 2
        self.type_into(self.one("#math-answer"), text, "answer field", deviation=dev)
        self.submit_unless_stopping("#subbtn", "button:Submit")


EMAIL_TASKS = ("email-inbox", "email-inbox-delete", "email-inbox-forward", "email-inbox-reply",
               "email-inbox-star-reply", "email-inbox-noscroll", "email-inbox-important")


AGENTS: dict[str, type[Agent]] = {
    "click-test": ClickTest,
    "click-test-2": ClickTest2,
    "click-button": ClickButton,
    "click-button-sequence": ClickButtonSequence,
    "click-link": ClickLink,
    "click-dialog": ClickDialog,
    "click-tab": ClickTab,
    "click-widget": ClickWidget,
    "click-option": ClickOption,
    "click-checkboxes": ClickCheckboxes,
    "choose-list": ChooseList,
    "focus-text": FocusText,
    "enter-text": EnterText,
    "enter-text-2": EnterText2,
    "enter-password": EnterPassword,
    "login-user": LoginUser,
    "use-autocomplete": UseAutocomplete,
    "navigate-tree": NavigateTree,
    **{t: EmailInbox for t in EMAIL_TASKS},
    "click-checkboxes-large": ClickCheckboxesLarge,
    "click-checkboxes-transfer": ClickCheckboxes,
    "click-color": ClickColor,
    "click-dialog-2": ClickDialog2,
    "click-shades": ClickShades,
    "click-tab-2": ClickTab2,
    "click-tab-2-easy": ClickTab2,
    "click-tab-2-hard": ClickTab2,
    "click-test-transfer": ClickTestTransfer,
    "copy-paste": CopyPaste,
    "copy-paste-2": CopyPaste2,
    "enter-text-dynamic": EnterTextDynamic,
    "find-word": FindWord,
    "focus-text-2": FocusText2,
    "identify-shape": IdentifyShape,
    "login-user-popup": LoginUserPopup,
    "multi-layouts": MultiLayouts,
    "multi-orderings": MultiLayouts,
    "read-table": ReadTable,
    "search-engine": SearchEngine,
    "simple-algebra": SimpleAlgebra,
    "simple-arithmetic": SimpleArithmetic,
    "terminal": Terminal,
    "text-transform": TextTransform,
    "unicode-test": UnicodeTest,
    "use-spinner": UseSpinner,
    # task types added with the second recording round
    "form-sequence": FormSequence,
    "form-sequence-2": FormSequence2,
    "form-sequence-3": FormSequence3,
    "sign-agreement": SignAgreement,
    "text-editor": TextEditor,
    "generate-number": GenerateNumber,
    "odd-or-even": OddOrEven,
    "find-greatest": FindGreatest,
    "guess-number": GuessNumber,
    "click-menu": ClickMenu,
    "click-menu-2": ClickMenu2,
    "click-checkboxes-soft": ClickCheckboxesSoft,
    "click-tab-2-medium": ClickTab2Medium,
    "number-checkboxes": NumberCheckboxes,
    "scroll-text": ScrollText,
    "scroll-text-2": ScrollText2,
    "email-inbox-forward-nl": EmailInboxForwardNl,
    "email-inbox-forward-nl-turk": EmailInboxForwardNl,
    "email-inbox-nl-turk": EmailInboxNlTurk,
    "read-table-2": ReadTable2,
    "phone-book": PhoneBook,
    "use-autocomplete-nodelay": UseAutocompleteNodelay,
    "stock-market": StockMarket,
    "order-food": OrderFood,
    "buy-ticket": BuyTicket,
    "choose-date": ChooseDate,
    "choose-date-easy": ChooseDateEasy,
    "choose-date-medium": ChooseDate,
    "choose-date-nodelay": ChooseDate,
    "use-slider": UseSlider,
    "use-slider-2": UseSlider2,
    "click-shape": ClickShape,
    "count-shape": CountShape,
    "visual-addition": VisualAddition,
    # held-out task types (evaluation only)
    "click-collapsible": ClickCollapsible,
    "click-collapsible-2": ClickCollapsible2,
    "enter-date": EnterDate,
    "enter-time": EnterTime,
    "grid-coordinate": GridCoordinate,
    "social-media": SocialMedia,
    "social-media-all": SocialMediaAll,
    "social-media-some": SocialMediaSome,
}


def mistake_for(task: str, rng: random.Random) -> str | None:  # noqa: D103 (agent A's; see registry.mistake_for)
    """A mistake this task's agent can make, drawn uniformly."""
    kinds = AGENTS[task].MISTAKES
    return rng.choice(kinds) if kinds else None

