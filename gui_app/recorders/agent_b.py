"""Agent B (``scripted-v2``): a second scripted MiniWoB++ agent, written apart from agent A, with other habits.

Why a second agent: a reward model trained on one agent's runs learns that agent (its click points, its step
rhythm, its mistakes) instead of the task. Agent B shares nothing with agent A but the recorder's action handle:

- **its own page reading**: one snapshot of every rendered element of the task (:data:`_SNAPSHOT_JS`): tag, own
  text, attributes, rectangle, and whether a click at its centre really lands on it (a clipped or covered element
  does not); tasks are solved from that list with Python predicates, not CSS selectors;
- **its own habits**: it moves the pointer and hovers before most clicks (MiniWoB ``MOVE_COORDS``), clicks near
  the centre of an element with a spread proportional to its size (or on a checkbox or radio button itself where
  agent A clicks the label), selects all before typing or types a word in chunks, takes harmless extra steps (a
  hover, a wheel turn over the instruction, a click on the instruction bar's margin, focusing a field again, a
  ``help`` in the terminal), inserts explicit ``WAIT`` steps after actions that change the page and often ends
  with an explicit ``DONE`` step (the keyframe shows the unchanged final screen);
- **its own mistake mix**: typos from neighbouring keys, a random wrong candidate rather than the nearest one,
  premature stops that declare DONE, and mistakes that it notices and undoes (a typo fixed with Backspace, a wrong
  box unticked, a wrong tab left for the right one). A recovered run still succeeds: ``first_error_step`` stays
  None and the step of the undone mistake is kept as ``recovered_step``.

The label is always the environment's raw reward; B only marks where it first departed from a correct run.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gui_app.core.errors import RollscopeError
from gui_app.recorders.page import EpisodeOver

# Agent B's view of the page: every element of the task area (and of jQuery UI widgets appended to <body>), with
# its own text, the whole text, geometry, attributes, and whether a click at its centre reaches it.
_SNAPSHOT_JS = """
var sel = '#wrap, #wrap *, body > .ui-dialog, body > .ui-dialog *, '
    + 'body > ul.ui-autocomplete, body > ul.ui-autocomplete *';
var els = Array.prototype.slice.call(document.querySelectorAll(sel));
var index = new Map();
els.forEach(function (e, k) { index.set(e, k); });
return els.map(function (e, k) {
  var r = e.getBoundingClientRect();
  var st = window.getComputedStyle(e);
  var shown = r.width > 0 && r.height > 0 && st.visibility !== 'hidden' && st.display !== 'none';
  var own = '';
  e.childNodes.forEach(function (n) { if (n.nodeType === 3) { own += n.textContent; } });
  var hit = false;
  if (shown) {
    var h = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    hit = !!h && (h === e || e.contains(h));
  }
  var attrs = {};
  for (var i = 0; i < e.attributes.length; i++) {
    var a = e.attributes[i];
    if (a.name === 'style') { continue; }
    attrs[a.name] = String(a.value).slice(0, 200);
  }
  return {k: k, tag: e.tagName.toLowerCase(), own: own.replace(/\\s+/g, ' ').trim(),
          full: ((e.innerText !== undefined ? e.innerText : e.textContent) || '').replace(/\\s+/g, ' ').trim(),
          deep: (e.textContent || '').replace(/\\s+/g, ' ').trim(),
          val: e.value === undefined || e.value === null ? null : String(e.value), checked: !!e.checked,
          x: r.left, y: r.top, w: r.width, h: r.height, shown: shown, hit: hit, attrs: attrs,
          parent: e.parentElement && index.has(e.parentElement) ? index.get(e.parentElement) : -1};
});
"""

# The instruction bar's own margin (a harmless click target): a point where the bar itself, no child, is hit.
_BAR_POINT_JS = """
var q = document.getElementById('query');
if (!q) { return null; }
var r = q.getBoundingClientRect();
for (var i = 0; i < 12; i++) {
  var x = r.left + 1 + Math.random() * (r.width - 2), y = r.top + 1 + Math.random() * 2;
  if (document.elementFromPoint(x, y) === q) { return [x, y]; }
}
return null;
"""

# Does a click at (x, y) land on snapshot element k (itself or something inside it)?
_LANDS_ON_JS = """
var sel = '#wrap, #wrap *, body > .ui-dialog, body > .ui-dialog *, '
    + 'body > ul.ui-autocomplete, body > ul.ui-autocomplete *';
var e = document.querySelectorAll(sel)[arguments[2]];
var h = document.elementFromPoint(arguments[0], arguments[1]);
return !!e && !!h && (h === e || e.contains(h));
"""

KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


class BotError(RollscopeError):
    """Agent B does not find what it needs on the page."""


@dataclass
class Node:
    """One element as agent B sees it."""

    k: int
    tag: str
    own: str
    full: str
    deep: str
    val: str | None
    checked: bool
    x: float
    y: float
    w: float
    h: float
    shown: bool
    hit: bool
    attrs: dict[str, str] = field(default_factory=dict)
    parent: int = -1

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    @property
    def id(self) -> str:
        return self.attrs.get("id", "")

    @property
    def centre(self) -> tuple[float, float]:
        return self.x + self.w / 2, self.y + self.h / 2

    def has(self, cls: str) -> bool:
        return cls in self.classes


class View:
    """A snapshot of the page with agent B's ways of finding things in it."""

    def __init__(self, rows: list[dict[str, Any]]):
        self.nodes = [Node(**r) for r in rows]

    def where(self, pred: Callable[[Node], bool], shown: bool = True) -> list[Node]:
        return [n for n in self.nodes if (n.shown or not shown) and pred(n)]

    def the(self, pred: Callable[[Node], bool], what: str, shown: bool = True) -> Node:
        found = self.where(pred, shown)
        if not found:
            raise BotError(f"agent B sees no {what}")
        return found[0]

    def inside(self, ancestor: Node, pred: Callable[[Node], bool] = lambda n: True, shown: bool = True) -> list[Node]:
        out = []
        for n in self.nodes:
            p = n.parent
            while p >= 0 and p != ancestor.k:
                p = self.nodes[p].parent
            if p == ancestor.k and (n.shown or not shown) and pred(n):
                out.append(n)
        return out

    def by_id(self, ident: str) -> Node:
        return self.the(lambda n: n.id == ident, f"#{ident}", shown=False)


def slip(text: str, rng: random.Random) -> str:
    """Agent B's typo: a neighbouring key hit instead, or the last character lost (never the same text)."""
    if len(text) > 2 and rng.random() < 0.3:
        return text[:-1]
    spots = [i for i, ch in enumerate(text) if ch.lower() in "".join(KEYBOARD_ROWS)]
    if not spots:
        return text + text[-1:] if text else "q"
    i = rng.choice(spots)
    ch = text[i].lower()
    row = next(r for r in KEYBOARD_ROWS if ch in r)
    j = row.index(ch)
    near = [row[m] for m in (j - 1, j + 1) if 0 <= m < len(row)]
    rep = rng.choice(near)
    return text[:i] + (rep.upper() if text[i].isupper() else rep) + text[i + 1:]


class Bot:
    """Agent B's base: habits, page reading and the mistake bookkeeping the recorder reads.

    A task program overrides :meth:`solve` (and :meth:`cands` for the on-screen alternatives that adversarial
    instruction rewrites may name).
    """

    MISTAKES: tuple[str, ...] = ("premature_stop",)
    MISTAKE_WEIGHTS: dict[str, float] = {"wrong_then_recover": 2.0, "premature_stop": 1.5}
    #: Where a blank click or a wheel turn is safe: never on task content.
    EXTRA_OK = True

    def __init__(self, page: Any, utterance: str, fields: dict[str, str], mistake: str | None, rng: random.Random):
        self.page = page
        self.utterance = utterance
        self.fields = fields
        self.mistake = mistake if mistake in self.MISTAKES else None
        self.rng = rng
        self.mistake_applied: str | None = None
        # This episode's temperament: how often B hovers, waits, fidgets, and how it types.
        self.p_hover = rng.uniform(0.5, 0.95)
        self.p_wait = rng.uniform(0.15, 0.5)
        self.p_extra = rng.uniform(0.05, 0.25)
        self.p_done = rng.uniform(0.4, 0.9)
        self.typing = rng.choice(("whole", "chunks", "select_all"))
        self.stopped = False

    # -- what the recorder reads -----------------------------------------------------------------------------------
    @property
    def first_error_step(self) -> int | None:
        return self.page.deviation_step()

    def candidates(self) -> list[str]:
        try:
            return [c for c in self.cands(self.look()) if c]
        except BotError:
            return []

    def cands(self, view: View) -> list[str]:
        return []

    # -- bookkeeping -------------------------------------------------------------------------------------------------
    def departs(self, kind: str) -> None:
        """The next action is the first departure from a correct run (a failure is expected)."""
        if self.mistake_applied is None:
            self.mistake_applied = kind
            self.page.mark_deviation()

    def slips(self, kind: str = "wrong_then_recover") -> None:
        """The next action is a mistake B will undo: the run should still succeed."""
        if self.mistake_applied is None:
            self.mistake_applied = kind
        self.page.mark_recovered()

    def stop_here(self) -> None:
        """Premature stop: B believes it is done."""
        self.departs("premature_stop")
        self.stopped = True

    # -- reading -----------------------------------------------------------------------------------------------------
    def look(self) -> View:
        return View(self.page.execute(_SNAPSHOT_JS))

    def field(self, name: str, default: str = "") -> str:
        return self.fields.get(name, default)

    # -- acting (with habits) ----------------------------------------------------------------------------------------
    def _aim(self, n: Node) -> tuple[float, float]:
        """Near the centre, spread with the element's size, kept inside its inner 70%, and on a point where the
        element itself (not something lying over it) takes the click."""
        cx, cy = n.centre
        x = y = 0.0
        for attempt in range(12):
            spread = 0.12 if attempt < 6 else 0.3
            x = min(max(self.rng.gauss(cx, n.w * spread), n.x + 0.15 * n.w), n.x + 0.85 * n.w)
            y = min(max(self.rng.gauss(cy, n.h * spread), n.y + 0.15 * n.h), n.y + 0.85 * n.h)
            if self.page.execute(_LANDS_ON_JS, x, y, n.k):
                break
        return x, y

    def tap(self, n: Node, label: str = "", settle_ms: float = 70) -> None:
        """Click ``n``; usually hover over it first (sometimes via a waypoint)."""
        label = label or self._name(n)
        x, y = self._aim(n)
        if self.rng.random() < self.p_hover:
            if self.rng.random() < 0.25:
                self.page.move(self.rng.uniform(5, 155), self.rng.uniform(55, 205), "pointer on its way")
            self.page.move(x + self.rng.uniform(-1.5, 1.5), y + self.rng.uniform(-1.5, 1.5), f"hover {label}",
                           settle_ms=self.rng.choice((40, 90, 150)))
        self.page.click(x, y, label, settle_ms=settle_ms)

    def hold_on(self, why: str = "wait") -> None:
        """An explicit WAIT step, some of the time."""
        if self.rng.random() < self.p_wait:
            self.page.wait_step(self.rng.choice((200, 350, 500)), why)

    def fidget(self) -> None:
        """A harmless extra step, some of the time: hover, a wheel turn over the instruction, a click on its margin."""
        if not self.EXTRA_OK or self.rng.random() >= self.p_extra:
            return
        kind = self.rng.choice(("hover", "wheel", "bar"))
        if kind == "hover":
            self.page.move(self.rng.uniform(5, 155), self.rng.uniform(5, 205), "idle hover")
        elif kind == "wheel":
            self.page.scroll(self.rng.uniform(20, 140), self.rng.uniform(8, 40), down=self.rng.random() < 0.5,
                             label="wheel over the instruction", settle_ms=80, harmless=True)
        else:
            pt = self.page.execute(_BAR_POINT_JS)
            if pt:
                self.page.click(pt[0], pt[1], "instruction bar margin", harmless=True)

    def write(self, n: Node, text: str, label: str = "", refocus: bool = True) -> None:
        """Click into a field and type ``text`` in B's way of the episode."""
        label = label or self._name(n)
        self.tap(n, label)
        if refocus and self.rng.random() < self.p_extra:
            self.page.click(*self._aim(n), f"{label} (again)", harmless=True)
        self.keys(text, label)

    def keys(self, text: str, label: str) -> None:
        """Type into the focused field: whole, in chunks, or after a select-all."""
        if self.typing == "select_all":
            self.page.press("C-a", label=f"select all in {label}", harmless=True)
        if self.typing == "chunks" and len(text) > 3:
            cuts = sorted(self.rng.sample(range(1, len(text)), min(2, len(text) - 1)))
            parts = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        else:
            parts = [text]
        for part in parts:
            self.page.type(part, label=label)

    def fix_typo(self, n: Node, bad: str, good: str, label: str) -> None:
        """Type ``bad``, notice, erase it with Backspace and type ``good`` (a recovered mistake)."""
        self.tap(n, label)
        self.slips()  # the typing is the mistake, not the click into the field
        self.keys(bad, label)
        self.hold_on("notices the typo")
        same = next((i for i, (a, b) in enumerate(zip(bad, good)) if a != b), min(len(bad), len(good)))
        for _ in range(len(bad) - same):  # back to the slip, not the whole text
            self.page.press("<Backspace>", label=label, settle_ms=15)
        self.page.type(good[same:], label=label)

    def miss(self, avoid: Node | None = None) -> None:
        """A click on empty space of the task area (beside ``avoid``): nothing happens."""
        view = self.look()
        area = view.the(lambda n: n.id == "area", "#area")
        for _ in range(30):
            x = self.rng.uniform(area.x + 2, area.x + area.w - 2)
            y = self.rng.uniform(area.y + 2, min(area.y + area.h, 208) - 2)
            if avoid and avoid.x - 3 <= x <= avoid.x + avoid.w + 3 and avoid.y - 3 <= y <= avoid.y + avoid.h + 3:
                continue
            if self.page.execute("var e = document.elementFromPoint(arguments[0], arguments[1]);"
                                 "return !!e && (e.id === 'area' || e.id === 'wrap');", x, y):
                self.page.click(x, y, "empty space")
                return
        raise BotError("no empty space to click")

    def reach(self, find: Callable[[View], Node], container: str, what: str) -> Node:
        """Turn the wheel over a scrolling list until the element a click must hit is hittable."""
        for _ in range(14):
            view = self.look()
            n = find(view)
            if n.hit and n.y + n.h <= 208:
                return n
            box = view.the(lambda m: m.id == container, f"#{container}")
            cy = min(box.y + box.h, 205)
            self.page.scroll(self.rng.uniform(box.x + 10, box.x + box.w - 10), self.rng.uniform(box.y + 10, cy - 10),
                             down=n.y > box.y + box.h / 2 or n.y + n.h > 205, label=f"scroll to {what}")
        raise BotError(f"agent B could not bring {what} into view")

    @staticmethod
    def _name(n: Node) -> str:
        name = (n.own or n.full or n.attrs.get("data-type") or n.id or n.attrs.get("class", ""))[:30]
        return f"{n.tag}:{name}"

    # -- the episode --------------------------------------------------------------------------------------------------
    def run(self) -> None:
        ended = False
        try:
            self.fidget()
            self.solve()
        except EpisodeOver:
            ended = True
        if (ended and self.rng.random() < self.p_done) or (self.stopped and self.rng.random() < 0.85):
            self.page.done_step("declares the task done")

    def solve(self) -> None:
        raise NotImplementedError


# -- click one thing among many -----------------------------------------------------------------------------------
class PickOne(Bot):
    """The instruction names one element among several; click it."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def options(self, view: View) -> list[Node]:
        raise NotImplementedError

    def is_target(self, n: Node) -> bool:
        raise NotImplementedError

    def cands(self, view: View) -> list[str]:
        return [n.own or n.full for n in self.options(view)]

    def solve(self) -> None:
        view = self.look()
        opts = self.options(view)
        good = [n for n in opts if self.is_target(n)]
        if not good:
            raise BotError(f"agent B finds no target for: {self.utterance}")
        target = self.rng.choice(good)
        if self.mistake == "wrong_then_recover":
            self.slips()
            self.miss(target)
            self.hold_on("looks again")
        if self.mistake == "premature_stop":
            x, y = self._aim(target)
            self.page.move(x, y, f"hover {self._name(target)}")
            self.stop_here()
            return
        if self.mistake == "wrong_element":
            bad = [n for n in opts if not self.is_target(n)]
            if bad:
                self.departs("wrong_element")
                target = self.rng.choice(bad)
        self.fidget()
        self.tap(target)


def _text_is(n: Node, want: str) -> bool:
    return (n.own or n.full) == want


class ButtonByText(PickOne):
    """click-button, unicode-test, click-test-2, click-test-transfer: a button by its label."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "button")

    def is_target(self, n: Node) -> bool:
        return _text_is(n, self.field("target"))


class LinkByText(PickOne):
    """click-link: a link-looking span by its text."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.has("alink"))

    def is_target(self, n: Node) -> bool:
        return _text_is(n, self.field("target"))


class OnlyButton(PickOne):
    """click-test / focus-text / click-dialog: the one thing to click, by id or role."""

    MISTAKES = ("wrong_then_recover", "premature_stop")
    TARGET = "subbtn"

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.id == self.TARGET)

    def is_target(self, n: Node) -> bool:
        return True


class FocusOne(OnlyButton):
    TARGET = "tt"


class CloseDialog(PickOne):
    """click-dialog: the dialog's close (x) button."""

    MISTAKES = ("wrong_then_recover", "premature_stop")

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "button" and n.has("ui-dialog-titlebar-close"))

    def is_target(self, n: Node) -> bool:
        return True

    def miss(self, avoid: Node | None = None) -> None:
        # A click on the dialog's text, which does nothing.
        view = self.look()
        body = view.the(lambda n: n.has("ui-dialog-content"), "dialog text")
        self.page.click(*self._aim(body), "dialog text")


class DialogButton(PickOne):
    """click-dialog-2: Cancel, OK, or the x of the title bar."""

    MISTAKES = ("wrong_element", "premature_stop")

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "button" and (n.has("ui-dialog-titlebar-close")
                                                            or n.full in ("OK", "Cancel")))

    def is_target(self, n: Node) -> bool:
        want = self.field("target")
        return n.has("ui-dialog-titlebar-close") if want == "x" else n.full == want

    def cands(self, view: View) -> list[str]:
        return ["x" if n.has("ui-dialog-titlebar-close") else n.full for n in self.options(view)]


class TabByName(PickOne):
    """click-tab: the tab labelled ``Tab #N``."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "a" and n.own.startswith("Tab #"))

    def is_target(self, n: Node) -> bool:
        return n.own == f"Tab #{self.field('target')}"


class WidgetByKind(PickOne):
    """click-widget: the widget whose data-type is named."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: "data-type" in n.attrs and n.tag in ("input", "textarea", "button"))

    def is_target(self, n: Node) -> bool:
        return n.attrs.get("data-type") == self.field("target")

    def cands(self, view: View) -> list[str]:
        return [n.attrs["data-type"] for n in self.options(view)]


class ColourBox(PickOne):
    """click-color: the box whose colour is named (the query's own sample box is not a candidate)."""

    EXTRA_OK = False  # the instruction bar holds a colour box that would count as a click

    def options(self, view: View) -> list[Node]:
        area = view.by_id("area")
        return view.inside(area, lambda n: n.has("color") and "data-color" in n.attrs)

    def is_target(self, n: Node) -> bool:
        return n.attrs.get("data-color") == self.field("target")

    def cands(self, view: View) -> list[str]:
        return [n.attrs["data-color"] for n in self.options(view)]


class GridPoint(PickOne):
    """grid-coordinate: the circle whose id is ``(x,y)``."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "circle")

    def is_target(self, n: Node) -> bool:
        return n.id == f"({self.field('x')},{self.field('y')})"

    def cands(self, view: View) -> list[str]:
        return [n.id for n in self.options(view)]


class NthField(PickOne):
    """focus-text-2: the n-th text box."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "input" and n.id.startswith("tt"))

    def is_target(self, n: Node) -> bool:
        m = re.search(r"\d+", self.field("target"))
        return bool(m) and n.id == f"tt{m.group(0)}"


class ShapeName(PickOne):
    """identify-shape: what the drawn figure is (SVG element kind, or a letter or digit drawn as text)."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "button" and "data-type" in n.attrs)

    def _kind(self, view: View) -> str:
        svg = view.by_id("area_svg")
        figs = view.inside(svg, lambda n: n.tag in ("rect", "circle", "polygon", "text"))
        if not figs:
            raise BotError("no figure")
        f = figs[0]
        if f.tag == "text":
            return "digit" if f.deep[:1].isdigit() else "letter"
        return {"rect": "rectangle", "circle": "circle", "polygon": "triangle"}[f.tag]

    def solve(self) -> None:
        self._want = self._kind(self.look())
        super().solve()

    def is_target(self, n: Node) -> bool:
        return n.attrs.get("data-type") == self._want


class ButtonPair(Bot):
    """click-button-sequence: ONE, then TWO."""

    MISTAKES = ("wrong_order", "premature_stop", "wrong_then_recover")

    def solve(self) -> None:
        view = self.look()
        one = view.the(lambda n: n.id == "subbtn", "button ONE")
        two = view.the(lambda n: n.id == "subbtn2", "button TWO")
        if self.mistake == "wrong_then_recover":
            self.slips()
            self.miss(one)
        if self.mistake == "wrong_order":
            self.departs("wrong_order")
            self.tap(two)
            self.tap(one)
            return
        self.tap(one)
        self.hold_on()
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(two)


# -- select, then submit ---------------------------------------------------------------------------------------
class TickBoxes(Bot):
    """click-checkboxes (-large, -transfer): tick the named boxes (on the box itself), Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "wrong_then_recover", "premature_stop")

    def boxes(self, view: View) -> list[tuple[Node, str]]:
        out = []
        for lab in view.where(lambda n: n.tag == "label"):
            box = view.inside(lab, lambda n: n.tag == "input")
            if box:
                out.append((box[0], lab.full))
        return out

    def cands(self, view: View) -> list[str]:
        return [name for _, name in self.boxes(view)]

    def wanted(self) -> set[str]:
        return {v for k, v in self.fields.items() if k.startswith("target")}

    def solve(self) -> None:
        view = self.look()
        boxes = self.boxes(view)
        want = self.wanted()
        todo = [b for b in boxes if b[1] in want]  # document order: B ticks top to bottom
        rest = [b for b in boxes if b[1] not in want]
        skip = self.rng.choice(todo) if self.mistake == "missed_checkbox" and todo else None
        extra = self.rng.choice(rest) if self.mistake in ("extra_checkbox", "wrong_then_recover") and rest else None
        plan = [b for b in todo if b is not skip]
        if extra is not None:
            plan.insert(self.rng.randint(0, len(plan)), extra)
        for box, name in plan:
            if box is (extra[0] if extra else None):
                if self.mistake == "wrong_then_recover":
                    self.slips()
                    self.tap(box, f"checkbox {name}")
                    self.hold_on("notices the wrong box")
                    self.tap(box, f"checkbox {name} (untick)")
                    continue
                self.departs("extra_checkbox")
            self.tap(box, f"checkbox {name}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if skip is not None:
            self.departs("missed_checkbox")
        self.fidget()
        self.tap(view.the(lambda n: n.id == "subbtn", "Submit"), "button:Submit")


class RadioPick(Bot):
    """click-option: the radio button of the named option, Submit."""

    MISTAKES = ("wrong_option", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [lab.full for lab in view.where(lambda n: n.tag == "label")]

    def solve(self) -> None:
        view = self.look()
        pairs = [(view.inside(lab, lambda n: n.tag == "input"), lab.full)
                 for lab in view.where(lambda n: n.tag == "label")]
        pairs = [(b[0], name) for b, name in pairs if b]
        want = self.field("target")
        good = next((b for b, name in pairs if name == want), None)
        if good is None:
            raise BotError(f"no option {want!r}")
        bad = [b for b, name in pairs if name != want]
        if self.mistake in ("wrong_option", "wrong_then_recover") and bad:
            w = self.rng.choice(bad)
            if self.mistake == "wrong_option":
                self.departs("wrong_option")
                self.tap(w, "radio (wrong)")
            else:
                self.slips()
                self.tap(w, "radio (wrong)")
                self.hold_on()
                self.tap(good, f"radio {want}")
        else:
            self.tap(good, f"radio {want}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(view.the(lambda n: n.tag == "button" and n.full == "Submit", "Submit"), "button:Submit")


class ListPick(Bot):
    """choose-list: focus the drop-down with Tab, walk to the entry with the arrow keys, Submit."""

    MISTAKES = ("wrong_option", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [n.own for n in view.where(lambda n: n.tag == "option", shown=False)]

    def solve(self) -> None:
        view = self.look()
        options = [n.own for n in view.where(lambda n: n.tag == "option", shown=False)]
        want = self.field("target")
        if want not in options:
            raise BotError(f"no entry {want!r}")
        goal = options.index(want)
        if self.mistake == "wrong_option":
            goal = goal + 1 if goal + 1 < len(options) else goal - 1
        self.page.press("<Tab>", label="focus the list")
        for i in range(goal):
            if self.mistake == "wrong_option" and i == goal - 1:
                self.departs("wrong_option")
            self.page.press("<ArrowDown>", label="next entry", settle_ms=20)
        if self.mistake == "wrong_option" and goal == 0:
            self.departs("wrong_option")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(view.the(lambda n: n.tag == "button", "Submit"), "button:Submit")


class Suggest(Bot):
    """use-autocomplete: type the start, wait for suggestions, pick with the arrow keys and Enter, Submit."""

    MISTAKES = ("wrong_option", "premature_stop")

    def solve(self) -> None:
        start, end = self.field("start"), self.field("end")
        view = self.look()
        self.write(view.by_id("tags"), start, "Tags field", refocus=False)
        self.page.wait_step(500, "suggestions open")
        items = [n.full for n in self.look().where(lambda n: n.tag == "li" and n.parent >= 0 and n.full)]
        idx = next((i for i, t in enumerate(items) if t.startswith(start) and t.endswith(end)), None)
        if idx is None:
            raise BotError(f"no suggestion {start}..{end}")
        if self.mistake == "wrong_option":
            bad = [i for i, t in enumerate(items) if not (t.startswith(start) and t.endswith(end))]
            if bad:
                idx = self.rng.choice(bad)
                self.departs("wrong_option")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        for _ in range(idx + 1):
            self.page.press("<ArrowDown>", label="suggestions", settle_ms=30)
        self.page.press("<Enter>", label="take suggestion")
        self.tap(self.look().the(lambda n: n.id == "subbtn", "Submit"), "button:Submit")


class Spinner(Bot):
    """use-spinner: click the arrows up or down to the number, Submit."""

    MISTAKES = ("wrong_option", "premature_stop")

    def solve(self) -> None:
        want = int(self.field("target", "0"))
        goal = want + (1 if want < 10 else -1) if self.mistake == "wrong_option" else want
        view = self.look()
        up = view.the(lambda n: n.has("ui-spinner-up"), "spinner up")
        down = view.the(lambda n: n.has("ui-spinner-down"), "spinner down")
        arrow = up if goal > 0 else down
        for i in range(abs(goal)):
            if self.mistake == "wrong_option" and i == abs(goal) - 1 and abs(goal) > abs(want):
                self.departs("wrong_option")
            self.page.click(*self._aim(arrow), "spinner up" if goal > 0 else "spinner down", settle_ms=25)
        if self.mistake == "wrong_option" and abs(goal) < abs(want):
            self.departs("wrong_option")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(view.by_id("subbtn"), "button:Submit")


class Shades(Bot):
    """click-shades: every shade of the named colour, Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        view = self.look()
        want = self.field("target")
        tiles = view.where(lambda n: n.tag == "span" and "data-color" in n.attrs)
        good = [t for t in tiles if t.attrs["data-color"] == want]
        bad = [t for t in tiles if t.attrs["data-color"] != want]
        if self.mistake == "missed_checkbox" and len(good) > 1:
            good = good[:-1]
        for i, t in enumerate(good):
            if i == 1 and bad and self.mistake in ("extra_checkbox", "wrong_then_recover"):
                b = self.rng.choice(bad)
                if self.mistake == "extra_checkbox":
                    self.departs("extra_checkbox")
                    self.tap(b, "shade (wrong colour)")
                else:
                    self.slips()
                    self.tap(b, "shade (wrong colour)")
                    self.tap(b, "shade (undo)")
            self.tap(t, f"shade of {want}", settle_ms=40)
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if self.mistake == "missed_checkbox":
            self.departs("missed_checkbox")
        self.tap(view.the(lambda n: n.tag == "button", "Submit"), "button:Submit")


# -- forms ---------------------------------------------------------------------------------------------------------
class Form(Bot):
    """Fields filled from the instruction, then a submit button (the base of B's form tasks)."""

    MISTAKES = ("typo", "wrong_then_recover", "premature_stop")
    SUBMIT: Callable[[Node], bool] = staticmethod(lambda n: n.id == "subbtn")

    def entries(self, view: View) -> list[tuple[Node, str, str]]:
        """(field, text, label) in the order B fills them."""
        raise NotImplementedError

    def wrong_text(self, right: str) -> str:
        """Another plausible value (for ``wrong_text`` mistakes)."""
        return slip(right, self.rng)

    def solve(self) -> None:
        view = self.look()
        entries = self.entries(view)
        drop = None
        if self.mistake == "missed_field" and len(entries) > 1:
            drop = entries.pop(self.rng.randrange(len(entries)))
        bad_at = self.rng.randrange(len(entries)) if self.mistake in ("typo", "wrong_then_recover",
                                                                       "wrong_text") else -1
        for i, (node, text, label) in enumerate(entries):
            if i == bad_at and self.mistake == "wrong_then_recover":
                self.fix_typo(node, slip(text, self.rng), text, label)
            elif i == bad_at:
                self.tap(node, label)
                self.departs(self.mistake)
                self.keys(slip(text, self.rng) if self.mistake == "typo" else self.wrong_text(text), label)
            else:
                self.write(node, text, label)
            self.fidget()
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        if drop is not None:
            self.departs("missed_field")  # submitting without the skipped field is the departure
        self.tap(self.look().the(self.SUBMIT, "submit button"), "submit")


class OneText(Form):
    """enter-text / enter-text-dynamic: the text into #tt."""

    def text(self) -> str:
        return self.field("target")

    def entries(self, view: View) -> list[tuple[Node, str, str]]:
        return [(view.by_id("tt"), self.text(), "text field")]


class CaseText(OneText):
    """enter-text-2: the text in the asked case."""

    def text(self) -> str:
        t = self.field("text")
        return t.lower() if self.field("case") == "lower" else t.upper()


class Login(Form):
    """login-user: user name and password, Login."""

    MISTAKES = ("typo", "wrong_then_recover", "swapped_fields", "missed_field", "premature_stop")

    def entries(self, view: View) -> list[tuple[Node, str, str]]:
        return [(view.by_id("username"), self.field("username"), "username"),
                (view.by_id("password"), self.field("password"), "password")]

    def solve(self) -> None:
        if self.mistake != "swapped_fields":
            return super().solve()
        view = self.look()
        u, p = view.by_id("username"), view.by_id("password")
        self.tap(u, "username")
        self.departs("swapped_fields")
        self.keys(self.field("password"), "username")
        self.write(p, self.field("username"), "password")
        self.tap(view.by_id("subbtn"), "submit")


class LoginPopup(Login):
    """login-user-popup: as login-user, answering "Cancel" to the session pop-up whenever it appears."""

    MISTAKES = ("typo", "wrong_then_recover", "premature_stop", "wrong_element")

    def tap(self, n: Node, label: str = "", settle_ms: float = 70) -> None:
        super().tap(n, label, settle_ms)
        view = self.look()
        pop = view.where(lambda m: m.id == "popup-cancel")
        if pop:
            self.hold_on("reads the pop-up")
            if self.mistake == "wrong_element":
                self.departs("wrong_element")
                super().tap(view.by_id("popup-ok"), "pop-up OK")
                return
            super().tap(pop[0], "pop-up Cancel")
            super().tap(self.look().by_id(n.id), label)

    def solve(self) -> None:
        super().solve()


class Passwords(Form):
    """enter-password: the password twice."""

    MISTAKES = ("typo", "wrong_then_recover", "missed_field", "premature_stop")

    def entries(self, view: View) -> list[tuple[Node, str, str]]:
        pw = self.field("target")
        return [(view.by_id("password"), pw, "password"), (view.by_id("verify"), pw, "verify")]


class TableLookup(OneText):
    """read-table: the value in the row of the named key."""

    MISTAKES = ("typo", "wrong_text", "wrong_then_recover", "premature_stop")

    def rows(self) -> dict[str, str]:
        cells = [n.full for n in self.look().where(lambda n: n.tag == "td")]
        return dict(zip(cells[0::2], cells[1::2], strict=False))

    def text(self) -> str:
        rows = self.rows()
        key = self.field("target")
        if key not in rows:
            raise BotError(f"no row {key!r}")
        return rows[key]

    def wrong_text(self, right: str) -> str:
        return self.rng.choice([v for v in self.rows().values() if v != right] or [right + "s"])

    def cands(self, view: View) -> list[str]:
        return [n.full for n in view.where(lambda n: n.tag == "td")][0::2]


class MovieSearch(Form):
    """multi-layouts / multi-orderings: genre, director and year, found by the words next to each field."""

    MISTAKES = ("typo", "wrong_then_recover", "missed_field", "premature_stop")
    SUBMIT = staticmethod(lambda n: (n.tag == "button" or n.has("final") or n.has("ui-submit")) and bool(n.full))

    def entries(self, view: View) -> list[tuple[Node, str, str]]:
        out = []
        for inp in view.where(lambda n: n.tag == "input"):
            # Walk up to the first ancestor that has words of its own besides the field.
            p, words = inp.parent, ""
            while p >= 0 and not words:
                words = view.nodes[p].deep.lower()
                p = view.nodes[p].parent
            key = "genre" if "genre" in words else "year" if ("year" in words or "date" in words) else "director"
            out.append((inp, self.field(key), key))
        return out


class Answer(OneText):
    """A worked-out answer typed into a field, Submit (arithmetic, algebra, find-word, text-transform)."""

    MISTAKES = ("typo", "wrong_text", "wrong_then_recover", "premature_stop")
    FIELD = "math-answer"

    def work(self, view: View) -> str:
        raise NotImplementedError

    def wrong_text(self, right: str) -> str:
        return str(int(right) + self.rng.choice((-2, -1, 1, 10)))

    def entries(self, view: View) -> list[tuple[Node, str, str]]:
        return [(view.by_id(self.FIELD), self.work(view), "answer")]


class Arithmetic(Answer):
    def work(self, view: View) -> str:
        expr = view.by_id("math-problem").full
        nums = [int(t) for t in re.findall(r"-?\d+", expr)]
        op = re.search(r"\d\s*([-+x])\s*-?\d", expr)
        if len(nums) < 2 or not op:
            raise BotError(f"cannot read {expr!r}")
        a, b = nums[0], nums[1]
        return str({"+": a + b, "-": a - b, "x": a * b}[op.group(1)])


class Algebra(Answer):
    def work(self, view: View) -> str:
        expr = view.by_id("math-problem").full.replace(" ", "")
        lhs, rhs = expr.split("=")
        r = int(rhs)
        if lhs.startswith("x"):
            d = int(lhs[2:])
            return str(r - d if lhs[1] == "+" else r + d)
        d = int(re.match(r"\d+", lhs).group(0))
        return str(r - d if "+" in lhs else d - r)


class WordAt(Answer):
    FIELD = "answer-input"

    def work(self, view: View) -> str:
        para = view.the(lambda n: n.tag == "p", "paragraph")
        words = para.full.split()
        n = int(re.search(r"\d+", self.field("target")).group(0))
        return re.sub(r"[^A-Za-z]", "", words[n - 1])

    def wrong_text(self, right: str) -> str:
        words = [re.sub(r"[^A-Za-z]", "", w) for w in self.look().the(lambda n: n.tag == "p", "paragraph").full.split()]
        other = [w for w in words if w and w != right]
        return self.rng.choice(other) if other else right + "s"


class Captcha(Answer):
    MISTAKES = ("typo", "wrong_then_recover", "premature_stop")
    FIELD = "tt"

    def work(self, view: View) -> str:
        box = view.by_id("captcha")
        return "".join(n.deep for n in view.inside(box, lambda n: n.tag == "span"))


class Paste(Bot):
    """copy-paste (-2): select the source text with the mouse-free keys, copy, paste, Submit."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def source(self, view: View) -> Node:
        return view.by_id("to-copy")

    def solve(self) -> None:
        view = self.look()
        src = self.source(view)
        areas = view.where(lambda n: n.tag == "textarea" and n is not src)
        if self.mistake == "wrong_element" and areas:
            self.departs("wrong_element")
            src = self.rng.choice(areas)
        dst = view.by_id("answer-input")
        if self.mistake == "wrong_then_recover":
            # Types the first word by hand, thinks better of it, clears the field and pastes instead.
            self.slips()
            self.write(dst, (src.val or "x").split()[0], "answer")
            self.page.press("C-a", label="select the typed word")
            self.page.press("<Backspace>", label="clear")
        self.tap(src, "text to copy")
        self.page.press("C-a", label="select all")
        self.page.press("C-c", label="copy")
        self.hold_on()
        self.tap(dst, "answer")
        self.page.press("C-v", label="paste")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(view.by_id("subbtn"), "button:Submit")


class PasteNth(Paste):
    def source(self, view: View) -> Node:
        n = int(re.search(r"\d+", self.field("target")).group(0))
        return view.by_id(f"text-{n}")


class DateField(Bot):
    """enter-date: click the month part of the date field, type the date with its slashes, Submit."""

    MISTAKES = ("typo", "wrong_text", "premature_stop")

    def solve(self) -> None:
        # "Enter 01/02/2014 as the date and hit submit." -> the word with two slashes.
        word = next((w for w in self.utterance.split() if w.count("/") == 2), None)
        if word is None:
            raise BotError("no date in the instruction")
        m = re.match(r"(\d+)/(\d+)/(\d+)", word)
        text = "/".join(m.groups())
        view = self.look()
        box = view.by_id("tt")
        self.page.click(box.x + 6 + self.rng.uniform(0, 4), box.y + box.h / 2, "date field")
        if self.mistake == "wrong_text":
            self.departs("wrong_text")
            text = f"{m.group(1)}/{int(m.group(2)) % 28 + 1:02d}/{m.group(3)}"
        elif self.mistake == "typo":
            self.departs("typo")
            text = f"{m.group(1)}/{m.group(2)}/{int(m.group(3)) - 10}"
        self.keys(text, "date field")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(view.by_id("subbtn"), "button:Submit")


class TimeField(Bot):
    """enter-time: hours, minutes, AM/PM typed into the time field, Submit."""

    MISTAKES = ("wrong_text", "typo", "premature_stop")

    def solve(self) -> None:
        # "Enter 5:30 PM as the time and press submit." -> the word with a colon and the word after it.
        words = self.utterance.split()
        at = next((i for i, w in enumerate(words) if ":" in w), None)
        if at is None or at + 1 >= len(words):
            raise BotError("no time in the instruction")
        h, mm = words[at].split(":")
        hh, ap = int(h), words[at + 1][:2].upper()
        if self.mistake == "wrong_text":
            self.departs("wrong_text")
            hh = hh % 12 + 1
        elif self.mistake == "typo":
            self.departs("typo")
            mm = mm[::-1] if mm[0] != mm[1] and int(mm[::-1]) < 60 else f"{(int(mm) + 1) % 60:02d}"
        view = self.look()
        box = view.by_id("tt")
        self.page.click(box.x + 6 + self.rng.uniform(0, 4), box.y + box.h / 2, "time field")
        self.keys(f"{hh:02d}{mm}{ap}", "time field")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(view.by_id("subbtn"), "button:Submit")


# -- navigation ------------------------------------------------------------------------------------------------------
class _Links(Bot):
    """A named link somewhere in panels that open one at a time."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return sorted({n.own for n in view.where(lambda n: n.has("alink"), shown=False)})

    def click_link(self, want: str) -> None:
        """Click the visible link ``want`` (or, for a ``wrong_element`` mistake, another visible link)."""
        links = self.look().where(lambda n: n.has("alink") and n.hit)
        target = next((a for a in links if a.own == want), None)
        if target is None:
            raise BotError(f"link {want!r} not visible")
        others = [a for a in links if a.own != want]
        if self.mistake == "wrong_element" and others:
            self.departs("wrong_element")
            target = self.rng.choice(others)
        self.tap(target, f"link {target.own}")


class TabbedLink(_Links):
    """click-tab-2 (-easy/-hard): open the tab whose panel holds the link, click it."""

    def solve(self) -> None:
        want = self.field("target")
        view = self.look()
        panels = view.where(lambda n: n.tag == "div" and n.id.startswith("tabs-"), shown=False)
        home = next((p for p in panels if any(a.own == want for a in view.inside(p, lambda n: n.has("alink"), False))),
                    None)
        if home is None:
            raise BotError(f"no panel holds {want!r}")
        tabs = view.where(lambda n: n.tag == "a" and n.attrs.get("href", "").startswith("#tabs-"))
        mine = next(t for t in tabs if t.attrs["href"] == f"#{home.id}")
        if self.mistake == "wrong_then_recover" and len(tabs) > 1:
            self.slips()
            self.tap(self.rng.choice([t for t in tabs if t is not mine]), "wrong tab")
            self.hold_on("reads the panel")
        if not home.shown or self.mistake == "wrong_then_recover":
            self.tap(mine, f"tab {mine.own}")
            self.hold_on("panel switches")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.click_link(want)


class Sections(_Links):
    """click-collapsible-2: open the accordion section that holds the link, click it."""

    def solve(self) -> None:
        want = self.field("target")
        view = self.look()
        heads = view.where(lambda n: n.tag == "h3")
        panels = view.where(lambda n: n.has("ui-accordion-content"), shown=False)
        home = next((i for i, p in enumerate(panels)
                     if any(a.own == want for a in view.inside(p, lambda n: n.has("alink"), False))), None)
        if home is None:
            raise BotError(f"no section holds {want!r}")
        if self.mistake == "wrong_then_recover" and len(heads) > 1:
            self.slips()
            self.tap(self.rng.choice([h for i, h in enumerate(heads) if i != home]), "wrong section")
            self.page.wait_step(450, "section opens")
        if not panels[home].shown or self.mistake == "wrong_then_recover":
            self.tap(self.look().where(lambda n: n.tag == "h3")[home], f"section {home + 1}")
            self.page.wait_step(450, "section opens")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.click_link(want)


class Expand(Bot):
    """click-collapsible: open the section, Submit."""

    MISTAKES = ("missed_field", "premature_stop")

    def solve(self) -> None:
        view = self.look()
        if self.mistake == "missed_field":
            self.departs("missed_field")
        else:
            self.tap(view.the(lambda n: n.tag == "h3", "section header"), "section header")
            self.page.wait_step(450, "section opens")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(self.look().by_id("subbtn"), "button:Submit")


class Tree(Bot):
    """navigate-tree: open folders by their expander boxes until the name shows, click the name."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [n.own for n in view.where(lambda n: n.tag == "span" and (n.has("folder") or n.has("file")))]

    def solve(self) -> None:
        want = self.field("target")
        for _ in range(8):
            view = self.look()
            if any(n.own == want for n in view.where(lambda n: n.tag == "span")):
                break
            folders = view.where(lambda n: n.tag == "li" and n.has("expandable"))
            holder = next((f for f in folders if want in f.deep), None)
            if holder is None:
                raise BotError(f"{want!r} is in no closed folder")
            box = view.inside(holder, lambda n: n.has("hitarea") and n.parent == holder.k)
            if not box:
                raise BotError("folder without an expander")
            self.tap(box[0], "expander", settle_ms=120)
            self.hold_on("folder opens")
        view = self.look()
        target = view.the(lambda n: n.tag == "span" and n.own == want, f"item {want}")
        if self.mistake == "wrong_then_recover":
            folders = view.where(lambda n: n.tag == "span" and n.has("folder") and n.own != want)
            if folders:
                self.slips()
                self.tap(self.rng.choice(folders), "another folder name")
                target = self.look().the(lambda n: n.tag == "span" and n.own == want, f"item {want}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if self.mistake == "wrong_element":
            files = view.where(lambda n: n.tag == "span" and n.has("file") and n.own != want)
            if files:
                self.departs("wrong_element")
                target = self.rng.choice(files)
        self.tap(target, f"item {target.own}")


class Search(Bot):
    """search-engine: search, then page through the results to the n-th one (read by its result index)."""

    MISTAKES = ("wrong_element", "typo", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        query, rank = self.field("query"), int(self.field("rank", "1"))
        view = self.look()
        box = view.by_id("search-text")
        if self.mistake == "wrong_then_recover":
            self.fix_typo(box, slip(query, self.rng), query, "search field")
        elif self.mistake == "typo":
            self.tap(box, "search field")
            self.departs("typo")
            self.keys(slip(query, self.rng), "search field")
        else:
            self.write(box, query, "search field")
        self.tap(view.by_id("search"), "button:Search", settle_ms=120)
        self.hold_on("results load")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        goal = rank - 1
        if self.mistake == "wrong_element":
            goal = goal + 1 if goal < 8 else goal - 1
        for _ in range(4):
            view = self.look()
            hit = view.where(lambda n: n.tag == "a" and n.attrs.get("data-result") == str(goal))
            if hit:
                if self.mistake == "wrong_element":
                    self.departs("wrong_element")
                self.tap(hit[0], f"result {hit[0].own}")
                return
            if self.mistake == "typo":
                # Its search found other people; it clicks the first result anyway.
                self.tap(view.where(lambda n: n.tag == "a" and n.has("search-title"))[0], "first result")
                return
            page = goal // 3 + 1
            link = view.the(lambda n: n.tag == "a" and n.own == str(page), f"page {page}")
            self.tap(link, f"page {page}", settle_ms=120)
        raise BotError(f"result {goal} not reached")


class Inbox(Bot):
    """email-inbox (all variants): find the sender's email; star, trash, reply or forward."""

    MISTAKES = ("wrong_element", "typo", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [n.own or n.full for n in view.where(lambda n: n.has("email-sender"), shown=False)]

    def _thread(self, name: str) -> Callable[[View], Node]:
        def find(view: View) -> Node:
            for th in view.where(lambda n: n.has("email-thread"), shown=False):
                if any((s.own or s.full) == name for s in view.inside(th, lambda n: n.has("email-sender"), False)):
                    return th
            raise BotError(f"no email from {name!r}")
        return find

    def solve(self) -> None:
        name, task = self.field("by"), self.field("task")
        senders = self.cands(self.look())
        if self.mistake == "wrong_element":
            others = [s for s in senders if s != name]
            if others:
                name = self.rng.choice(others)
                self.departs("wrong_element")
        thread = self.reach(self._thread(name), "main", f"the email from {name}")
        if task in ("star", "delete", "trash", "important"):
            cls = "star" if task in ("star", "important") else "trash"
            view = self.look()
            icon = view.inside(view.nodes[thread.k], lambda n: n.has(cls))
            if self.mistake == "premature_stop":
                self.page.move(*self._aim(icon[0]), "hover icon")
                self.stop_here()
                return
            self.tap(icon[0], f"{cls} icon")
            return
        self.tap(thread, f"email from {name}", settle_ms=90)
        self.hold_on("email opens")
        view = self.look()
        if task == "reply":
            self.tap(view.the(lambda n: n.has("email-reply"), "reply"), "Reply", settle_ms=90)
            field, text, send = "reply-text", self.field("message"), "send-reply"
        elif task == "forward":
            self.tap(view.the(lambda n: n.has("email-forward"), "forward"), "Forward", settle_ms=90)
            field, text, send = None, self.field("to"), "send-forward"
        else:
            raise BotError(f"unknown email task {task!r}")
        view = self.look()
        box = view.by_id(field) if field else view.the(lambda n: n.has("forward-sender"), "to field")
        if self.mistake == "wrong_then_recover":
            self.fix_typo(box, slip(text, self.rng), text, "message")
        elif self.mistake == "typo":
            self.tap(box, "message")
            self.departs("typo")
            self.keys(slip(text, self.rng), "message")
        else:
            self.write(box, text, "message")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(self.look().by_id(send), "send")


class Shell(Bot):
    """terminal: (help,) ls, then rm a file with the asked extension."""

    MISTAKES = ("wrong_element", "typo", "premature_stop")

    def solve(self) -> None:
        m = re.search(r"extension \.(\S+)", self.utterance)
        ext = m.group(1) if m else ""
        view = self.look()
        self.tap(view.by_id("terminal"), "terminal")
        if self.rng.random() < self.p_extra * 2:
            self.page.type("help", label="terminal")
            self.page.press("<Enter>", label="terminal", harmless=True)
        self.page.type("ls", label="terminal")
        self.page.press("<Enter>", label="terminal", settle_ms=60)
        outs = self.look().where(lambda n: n.has("output"))
        listing = outs[-2].full.split() if len(outs) >= 2 and not outs[-1].full else outs[-1].full.split()
        listing = [f for f in listing if f]
        good = [f for f in listing if (f.endswith("." + ext) if ext else "." not in f)]
        if not good:
            raise BotError(f"no file for {ext!r} in {listing}")
        name = self.rng.choice(good)
        if self.mistake == "wrong_element":
            bad = [f for f in listing if f not in good]
            if bad:
                self.departs("wrong_element")
                name = self.rng.choice(bad)
        elif self.mistake == "typo":
            self.departs("typo")
            name = slip(name, self.rng)
        elif self.mistake == "premature_stop":
            self.page.type(f"rm {name}", label="terminal")
            self.stop_here()
            return
        self.page.type(f"rm {name}", label="terminal")
        self.page.press("<Enter>", label="terminal", settle_ms=60)


class Feed(Bot):
    """social-media: the named button (or menu entry) on the named user's post."""

    MISTAKES = ("wrong_element", "wrong_option", "premature_stop")
    EXTRA_OK = False
    ICONS = {"Reply": "reply", "Retweet": "retweet", "Like": "like", "Share": "share"}
    MENU = {"Share via DM": "share", "Copy link to Tweet": "copy", "Embed Tweet": "embed", "Mute": "menu-user",
            "Block": "block-user", "Report": "report"}

    def cands(self, view: View) -> list[str]:
        return sorted({n.own for n in view.where(lambda n: n.has("username"), shown=False)})

    def posts(self, view: View) -> list[Node]:
        return view.where(lambda n: n.has("media"), shown=False)

    def user_of(self, view: View, post: Node) -> str:
        u = view.inside(post, lambda n: n.has("username"), False)
        return u[0].own if u else ""

    def control(self, post_no: int, cls: str) -> Callable[[View], Node]:
        def find(view: View) -> Node:
            post = self.posts(view)[post_no]
            found = view.inside(post, lambda n: n.has(cls), False)
            if not found:
                raise BotError(f"post {post_no} has no {cls}")
            return found[0]
        return find

    def press_icon(self, post_no: int, cls: str, label: str) -> None:
        n = self.reach(self.control(post_no, cls), "area", label)
        # The icons change picture on hover; B always hovers here (a click arriving with the pointer is lost).
        self.page.move(*n.centre, f"hover {label}", settle_ms=250, harmless=False)
        self.page.click(*self._aim(n), label, settle_ms=80)

    def solve(self) -> None:
        user, button = self.field("user"), self.field("button")
        view = self.look()
        posts = self.posts(view)
        mine = [i for i, p in enumerate(posts) if self.user_of(view, p) == user]
        if not mine:
            raise BotError(f"no post by {user!r}")
        no = mine[0]
        if self.mistake == "wrong_element":
            others = [i for i, p in enumerate(posts) if self.user_of(view, p) != user]
            if others:
                self.departs("wrong_element")
                no = self.rng.choice(others)
        if self.mistake == "wrong_option":
            self.departs("wrong_option")
            button = self.rng.choice([b for b in [*self.ICONS][:3] + [*self.MENU] if b != button])
        if self.mistake == "premature_stop":
            n = self.reach(self.control(no, "reply"), "area", "the post")
            self.page.move(*n.centre, "hover the post")
            self.stop_here()
            return
        if button in self.MENU:
            self.press_icon(no, "more", "more menu")
            self.hold_on("menu opens")
            self.press_icon(no, self.MENU[button], button)
        else:
            self.press_icon(no, self.ICONS[button], f"{button} of {user}")


class FeedMany(Feed):
    """social-media-all / -some: the button on all (or N) posts of the user, Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "wrong_then_recover", "premature_stop")

    def how_many(self, n: int) -> int:
        return n

    def solve(self) -> None:
        user, button = self.field("user"), self.field("button")
        cls = self.ICONS.get(button, button.lower())
        view = self.look()
        posts = self.posts(view)
        mine = [i for i, p in enumerate(posts) if self.user_of(view, p) == user]
        others = [i for i, p in enumerate(posts) if self.user_of(view, p) != user]
        plan = mine[:self.how_many(len(mine))]
        if self.rng.random() < 0.5:
            plan = plan[::-1]  # B sometimes works from the bottom up
        if self.mistake == "missed_checkbox" and len(plan) > 1:
            plan = plan[:-1]
        extra = self.rng.choice(others) if others and self.mistake in ("extra_checkbox", "wrong_then_recover") else None
        if extra is not None:
            if self.mistake == "extra_checkbox":
                self.departs("extra_checkbox")
                self.press_icon(extra, cls, f"{button} of another user")
            else:
                self.slips()
                self.press_icon(extra, cls, f"{button} of another user")
                self.hold_on("notices")
                self.press_icon(extra, cls, f"{button} of another user (undo)")
        for i in plan:
            self.press_icon(i, cls, f"{button} of {user}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if self.mistake == "missed_checkbox":
            self.departs("missed_checkbox")
        sub = self.reach(lambda v: v.the(lambda n: n.tag == "button" and n.full == "Submit", "Submit", False), "area",
                         "Submit")
        self.tap(sub, "button:Submit")


class FeedSome(FeedMany):
    def how_many(self, n: int) -> int:
        return min(n, int(self.field("amount", "1")))


AGENTS: dict[str, type[Bot]] = {
    "click-test": OnlyButton,
    "click-test-2": ButtonByText,
    "click-test-transfer": ButtonByText,
    "click-button": ButtonByText,
    "unicode-test": ButtonByText,
    "click-button-sequence": ButtonPair,
    "click-link": LinkByText,
    "click-dialog": CloseDialog,
    "click-dialog-2": DialogButton,
    "click-tab": TabByName,
    "click-tab-2": TabbedLink,
    "click-tab-2-easy": TabbedLink,
    "click-tab-2-hard": TabbedLink,
    "click-widget": WidgetByKind,
    "click-color": ColourBox,
    "click-shades": Shades,
    "click-option": RadioPick,
    "click-checkboxes": TickBoxes,
    "click-checkboxes-large": TickBoxes,
    "click-checkboxes-transfer": TickBoxes,
    "choose-list": ListPick,
    "focus-text": FocusOne,
    "focus-text-2": NthField,
    "identify-shape": ShapeName,
    "grid-coordinate": GridPoint,
    "enter-text": OneText,
    "enter-text-dynamic": OneText,
    "enter-text-2": CaseText,
    "enter-password": Passwords,
    "login-user": Login,
    "login-user-popup": LoginPopup,
    "read-table": TableLookup,
    "multi-layouts": MovieSearch,
    "multi-orderings": MovieSearch,
    "simple-arithmetic": Arithmetic,
    "simple-algebra": Algebra,
    "find-word": WordAt,
    "text-transform": Captcha,
    "copy-paste": Paste,
    "copy-paste-2": PasteNth,
    "use-autocomplete": Suggest,
    "use-spinner": Spinner,
    "enter-date": DateField,
    "enter-time": TimeField,
    "click-collapsible": Expand,
    "click-collapsible-2": Sections,
    "navigate-tree": Tree,
    "search-engine": Search,
    "terminal": Shell,
    "social-media": Feed,
    "social-media-all": FeedMany,
    "social-media-some": FeedSome,
    **{t: Inbox for t in ("email-inbox", "email-inbox-delete", "email-inbox-forward", "email-inbox-reply",
                          "email-inbox-star-reply", "email-inbox-noscroll", "email-inbox-important")},
}
