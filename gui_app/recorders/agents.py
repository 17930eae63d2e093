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

