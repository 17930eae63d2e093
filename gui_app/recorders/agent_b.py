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

    def open_ms(self) -> float:
        """How long B waits for the suggestions to open (ms)."""
        return 500

    def solve(self) -> None:
        start, end = self.field("start"), self.field("end")
        view = self.look()
        self.write(view.by_id("tags"), start, "Tags field", refocus=False)
        self.page.wait_step(self.open_ms(), "suggestions open")
        if self.take_suggestion(start, end):
            self.tap(self.look().the(lambda n: n.id == "subbtn", "Submit"), "button:Submit")

    def take_suggestion(self, start: str, end: str) -> bool:
        """Pick the suggestion that starts and ends right (another one for a ``wrong_option``) with the arrow keys;
        False when the agent stops before picking (``premature_stop``)."""
        items = [n.full for n in self.look().where(lambda n: n.tag == "li" and n.parent >= 0 and bool(n.full))]
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
            return False
        for _ in range(idx + 1):
            self.page.press("<ArrowDown>", label="suggestions", settle_ms=30)
        self.page.press("<Enter>", label="take suggestion")
        return True


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


def _pos(value: str) -> int:
    """The 1-based position in '2' / '2nd'."""
    m = re.search(r"\d+", value or "")
    if not m:
        raise BotError(f"agent B reads no position in {value!r}")
    return int(m.group(0))


class SliderTicks(Bot):
    """form-sequence: grab the slider handle, walk it with the arrow keys, tick the n-th box, Submit."""

    MISTAKES = ("wrong_option", "wrong_element", "wrong_then_recover", "premature_stop")

    def _value(self) -> int:
        return int(self.look().by_id("val").full or "0")

    def solve(self) -> None:
        want = int(self.field("slider target", "0"))
        pos = _pos(self.field("checkbox target", "1"))
        if self.mistake == "wrong_option":
            want = want - 1 if want > -10 else want + 1
        view = self.look()
        handle = view.the(lambda n: n.has("ui-slider-handle"), "slider handle")
        self.tap(handle, "slider handle")
        for _ in range(4):
            now = self._value()
            if now == want:
                break
            if self.mistake == "wrong_option":
                self.departs("wrong_option")
            key = "<ArrowRight>" if now < want else "<ArrowLeft>"
            for _ in range(abs(want - now)):
                self.page.press(key, label="slider handle", settle_ms=20)
        else:
            raise BotError("agent B cannot set the slider")
        self.hold_on("reads the slider value")
        boxes = self.look().where(lambda n: n.tag == "input" and n.attrs.get("type") == "checkbox")
        good = boxes[pos - 1]
        bad = [b for b in boxes if b is not good]
        if self.mistake == "wrong_then_recover":
            b = self.rng.choice(bad)
            self.slips()
            self.tap(b, "checkbox (wrong)")
            self.hold_on("notices the wrong box")
            self.tap(b, "checkbox (untick)")
        if self.mistake == "wrong_element":
            self.departs("wrong_element")
            good = self.rng.choice(bad)
        self.tap(good, f"checkbox {boxes.index(good) + 1}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.fidget()
        self.tap(self.look().by_id("subbtn"), "button:Submit")


class RadioAndNumber(Bot):
    """form-sequence-2: the n-th radio button, the number into the m-th text box, Submit."""

    MISTAKES = ("typo", "wrong_element", "missed_field", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        view = self.look()
        radios = view.where(lambda n: n.tag == "input" and n.attrs.get("type") == "radio")
        boxes = view.where(lambda n: n.tag == "input" and n.attrs.get("type") == "text")
        r, t = _pos(self.field("radio target", "1")), _pos(self.field("textbox target", "1"))
        number = self.field("textbox text")
        box = boxes[t - 1]
        # B fills the text box first, then the radio button.
        if self.mistake == "wrong_element":
            self.departs("wrong_element")
            box = self.rng.choice([b for b in boxes if b is not box])
        if self.mistake == "wrong_then_recover":
            self.fix_typo(box, number + number[-1], number, f"text box {t}")
        elif self.mistake == "typo":
            self.tap(box, f"text box {t}")
            self.departs("typo")
            self.keys(number + number[-1] if self.rng.random() < 0.5 else number[:-1] or "0", f"text box {t}")
        else:
            self.write(box, number, f"text box {t}")
        self.hold_on()
        if self.mistake == "missed_field":
            self.departs("missed_field")  # no radio button: the Submit is the departure
        else:
            self.tap(radios[r - 1], f"radio {r}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(view.by_id("subbtn"), "button:Submit")


class HeightAndAnswer(Bot):
    """form-sequence-3: open the drop-down, walk to the height with the arrow keys, Enter, click the named button."""

    MISTAKES = ("wrong_option", "wrong_element", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [n.full for n in view.where(lambda n: n.tag == "button")]

    def _pick(self, index: int, label: str) -> None:
        view = self.look()
        self.tap(view.the(lambda n: n.has("selectric"), "drop-down"), "drop-down", settle_ms=150)
        self.hold_on("list opens")
        now = int(self.page.execute("return document.getElementById('dropdown').selectedIndex;"))
        key = "<ArrowDown>" if index > now else "<ArrowUp>"
        for _ in range(abs(index - now)):
            self.page.press(key, label="drop-down", settle_ms=30)
        self.page.press("<Enter>", label=f"take {label}", settle_ms=100)

    def solve(self) -> None:
        view = self.look()
        options = [n.own for n in view.where(lambda n: n.tag == "option", shown=False)]
        height, button = self.field("dropdown target"), self.field("button target")
        if height not in options:
            raise BotError(f"no height {height!r}")
        goal = options.index(height)
        if self.mistake in ("wrong_option", "wrong_then_recover"):
            near = goal + 1 if goal + 1 < len(options) else goal - 1
            if self.mistake == "wrong_option":
                self.departs("wrong_option")
                goal = near
            else:
                self.slips()
                self._pick(near, options[near])
                self.hold_on("notices the wrong height")
        self._pick(goal, options[goal])
        chosen = self.page.execute("return document.getElementById('dropdown').value;")
        if chosen != options[goal]:
            raise BotError(f"the drop-down shows {chosen!r}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if self.mistake == "wrong_element":
            self.departs("wrong_element")
            button = self.rng.choice([b for b in ("Yes", "No", "Maybe") if b != button])
        self.fidget()
        self.tap(self.look().the(lambda n: n.tag == "button" and n.full == button, button), f"button:{button}")


class Agreement(Bot):
    """sign-agreement: wheel through the agreement until the form unlocks, sign, press the named button."""

    MISTAKES = ("wrong_element", "typo", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [n.full for n in view.where(lambda n: n.tag == "button")]

    def _unlock(self) -> None:
        for _ in range(40):
            view = self.look()
            if "disabled" not in view.by_id("name").attrs:
                return
            area = view.by_id("text-area")
            for _ in range(self.rng.choice((2, 3, 4))):  # a few notches before looking again
                self.page.scroll(self.rng.gauss(area.x + area.w / 2, area.w / 8),
                                 self.rng.gauss(area.y + area.h / 2, area.h / 8), down=True, label="agreement text",
                                 settle_ms=40)
        raise BotError("the agreement stays locked")

    def solve(self) -> None:
        button, name = self.field("button", "Cancel"), self.fields.get("name")
        if name is not None:
            self._unlock()
            self.hold_on("the form unlocks")
            box = self.look().by_id("name")
            if self.mistake == "wrong_then_recover":
                self.fix_typo(box, slip(name, self.rng), name, "name")
            elif self.mistake == "typo":
                self.tap(box, "name")
                self.departs("typo")
                self.keys(slip(name, self.rng), "name")
            else:
                self.write(box, name, "name")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if self.mistake == "wrong_element" and name is not None:
            self.departs("wrong_element")
            button = "Agree" if button == "Cancel" else "Cancel"
        self.fidget()
        self.tap(self.look().the(lambda n: n.tag == "button" and n.full == button, button), f"button:{button}")


_ASK = re.compile(r"(?:the text (?P<word>\S+)|(?P<all>everything)) the (?P<kind>style|color) (?P<how>\w+)")


_TOOL = {"bold": "ql-bold", "italics": "ql-italic", "underlined": "ql-underline"}


_PALETTE = {"red": ("#e60000", "#f06666"), "orange": ("#ff9900", "#ffc266"), "yellow": ("#ffff00", "#ffff66"),
               "green": ("#008a00", "#66b966"), "blue": ("#0066cc", "#66a3e0"), "purple": ("#9933ff", "#c285ff")}


class RichText(Bot):
    """text-editor: select all and format, or clear the editor and type the text again with the format switched
    on around the word, Submit."""

    MISTAKES = ("wrong_option", "typo", "missed_field", "premature_stop")

    def _tool(self, how: str, off: bool = False) -> None:
        view = self.look()
        if how in _TOOL:
            self.tap(view.the(lambda n: n.tag == "button" and n.has(_TOOL[how]), how), f"{how} button")
            return
        self.tap(view.the(lambda n: n.has("ql-picker-label") and self._in_color(view, n), "colour picker"),
                 "colour picker", settle_ms=120)
        self.hold_on("palette opens")
        view = self.look()
        if off:
            swatch = view.the(lambda n: n.has("ql-picker-item") and "data-value" not in n.attrs
                              and self._in_color(view, n), "default colour")
        else:
            shades = _PALETTE[how]
            swatch = view.the(lambda n: n.has("ql-picker-item") and n.attrs.get("data-value") in shades
                              and self._in_color(view, n), f"{how} swatch")
        self.tap(swatch, "swatch")

    def keys(self, text: str, label: str) -> None:
        """B's typing, minus the select-all habit: in the editor a select-all would replace the text typed so far."""
        if self.typing == "select_all":
            self.typing = "chunks"
        super().keys(text, label)

    @staticmethod
    def _in_color(view: View, n: Node) -> bool:
        p = n.parent
        while p >= 0:
            if view.nodes[p].has("ql-color"):
                return True
            p = view.nodes[p].parent
        return False

    def solve(self) -> None:
        m = _ASK.search(self.utterance)
        if not m:
            raise BotError(f"agent B cannot read: {self.utterance}")
        how = m.group("how")
        view = self.look()
        editor = view.the(lambda n: n.has("ql-editor"), "editor")
        text = editor.full
        if self.mistake == "wrong_option":
            self.departs("wrong_option")
            how = self.rng.choice([h for h in (_TOOL if how in _TOOL else _PALETTE) if h != how])
        self.tap(editor, "editor")
        self.page.press("C-a", label="select all")
        if m.group("all"):
            if self.mistake == "missed_field":
                self.departs("missed_field")  # forgets the format: straight to Submit
            else:
                self._tool(how)
        else:
            word = m.group("word")
            words = text.split(" ")
            if word not in words:
                raise BotError(f"{word!r} is not in the editor")
            at = words.index(word)
            self.page.press("<Backspace>", label="clear the editor")
            if at:
                self.keys(" ".join(words[:at]) + " ", "editor")
            if self.mistake == "missed_field":
                self.departs("missed_field")
                self.keys(" ".join(words[at:]), "editor")
            else:
                self._tool(how)
                if self.mistake == "typo":
                    self.departs("typo")
                    word = slip(word, self.rng)
                self.page.type(word, label="editor")
                self._tool(how, off=True)
                if at + 1 < len(words):
                    self.keys(" " + " ".join(words[at + 1:]), "editor")
        self.hold_on()
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(self.look().by_id("subbtn"), "button:Submit")


class NumberMachine(Bot):
    """generate-number: Generate until the number suits the instruction, Submit."""

    MISTAKES = ("wrong_option", "wrong_then_recover", "premature_stop")

    def _suits(self, n: int) -> bool:
        rule = self.utterance.lower()
        bound = re.search(r"than (-?\d+)", rule)
        if "odd" in rule:
            return n % 2 == 1
        if "even" in rule:
            return n % 2 == 0
        if bound and "less" in rule:
            return n < int(bound.group(1))
        if bound and "greater" in rule:
            return n > int(bound.group(1))
        raise BotError(f"agent B cannot read the rule: {self.utterance}")

    def solve(self) -> None:
        view = self.look()
        gen, sub = view.by_id("generate"), view.by_id("submit")
        keep = self.mistake != "wrong_option"
        if self.mistake == "wrong_then_recover":
            self.slips()
            self.tap(view.by_id("display-number"), "the number display")
        for i in range(30):
            if i == 0 and not keep:
                self.departs("wrong_option")
            self.tap(gen, "button:Generate", settle_ms=50)
            shown = self.look().by_id("display-number").full
            if re.fullmatch(r"-?\d+", shown) and self._suits(int(shown)) == keep:
                break
            if self.rng.random() < 0.3:
                self.hold_on("reads the number")
        else:
            raise BotError("agent B never got a fitting number")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.tap(sub, "button:Submit")


class ParityMarks(Bot):
    """odd-or-even: Odd or Even on every row (B sometimes works bottom-up), Submit."""

    MISTAKES = ("wrong_option", "missed_field", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        view = self.look()
        rows = view.where(lambda n: n.has("row"))
        plan = []
        for row in rows:
            num = view.inside(row, lambda n: n.has("display-number"))
            odd = view.inside(row, lambda n: n.tag == "button" and n.has("odd"))
            even = view.inside(row, lambda n: n.tag == "button" and n.has("even"))
            if not (num and odd and even):
                raise BotError("agent B cannot read a number row")
            v = int(num[0].full)
            plan.append((v, odd[0], even[0]) if v % 2 else (v, even[0], odd[0]))
        if self.rng.random() < 0.4:
            plan = plan[::-1]
        bad = self.rng.randrange(len(plan)) if self.mistake else -1
        for i, (v, right, wrong) in enumerate(plan):
            if i == bad and self.mistake == "missed_field":
                continue
            if i == bad and self.mistake == "wrong_option":
                self.departs("wrong_option")
                self.tap(wrong, f"{wrong.full} for {v}")
                continue
            if i == bad and self.mistake == "wrong_then_recover":
                self.slips()
                self.tap(wrong, f"{wrong.full} for {v}")
                self.hold_on("notices")
            self.tap(right, f"{right.full} for {v}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if self.mistake == "missed_field":
            self.departs("missed_field")
        self.tap(view.by_id("submit"), "button:Submit")


class HighCard(Bot):
    """find-greatest: turn the cards over from the right, leave the greatest face up, Submit."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def _cards(self) -> list[Node]:
        return self.look().where(lambda n: n.has("card"))

    def _turn(self, i: int) -> int:
        self.tap(self._cards()[i], f"card {i + 1}", settle_ms=60)
        card = self._cards()[i]
        if card.has("hidden") or not re.fullmatch(r"\d+", card.full):
            raise BotError(f"card {i + 1} stays face down")
        return int(card.full)

    def solve(self) -> None:
        n = len(self._cards())
        seen = {i: self._turn(i) for i in reversed(range(n))}
        best = max(seen, key=lambda i: seen[i])
        rest = [i for i in seen if i != best]
        if self.mistake == "wrong_then_recover" and rest:
            self.slips()
            self.tap(self._cards()[self.rng.choice([i for i in rest if i != 0] or rest)], "another card")
            self.hold_on("compares")
            self.tap(self._cards()[best], f"card {best + 1}")
        elif self.mistake == "wrong_element":
            self.departs("wrong_element")
            pick = self.rng.choice(rest)
            if pick != 0:
                self.tap(self._cards()[pick], f"card {pick + 1}")
        elif best != 0:
            self.tap(self._cards()[best], f"card {best + 1}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(self.look().by_id("submit"), "button:Submit")


class HigherLower(Bot):
    """guess-number: bisect 0-9 rounding up, reading the feedback line, erasing the old digit with Backspace/Delete."""

    MISTAKES = ("wrong_then_recover", "premature_stop")

    def _enter(self, digit: int, first: bool) -> None:
        box = self.look().by_id("tt")
        # B aims at the digits: the right end of a number field is its spinner (an arrow click changes the value).
        x, y = box.x + box.w * self.rng.uniform(0.2, 0.35), self.rng.gauss(box.y + box.h / 2, box.h / 10)
        if self.rng.random() < self.p_hover:
            self.page.move(x + self.rng.uniform(-1, 1), y, "hover number field")
        self.page.click(x, y, "number field")
        if not first:  # the caret may land before or after the old digit: B erases on both sides
            self.page.press("<Backspace>", label="erase the last guess", settle_ms=20)
            self.page.press("<Delete>", label="erase the last guess", settle_ms=20)
        if self.mistake == "wrong_then_recover" and self.mistake_applied is None:
            self.slips()
            self.page.type(str((digit + 1) % 10), label="number field")
            self.hold_on("notices the wrong digit")
            self.page.press("<Backspace>", label="number field", settle_ms=20)
        self.page.type(str(digit), label="number field")

    def solve(self) -> None:
        lo, hi = 0, 9
        for k in range(10):
            guess = (lo + hi + 1) // 2
            self._enter(guess, k == 0)
            if self.mistake == "premature_stop" and k == 1:
                self.stop_here()
                return
            self.tap(self.look().by_id("subbtn"), "button:Submit", settle_ms=90)
            self.hold_on("reads the feedback")
            view = self.look()
            if view.where(lambda n: n.id == "higher"):
                lo = guess + 1
            elif view.where(lambda n: n.id == "lower"):
                hi = guess - 1
            else:
                return
            if lo > hi:
                raise BotError("the feedback contradicts itself")
        raise BotError("agent B never found the number")


# click-checkboxes-soft: the task's synonym groups as B keeps them, one group per line, words in the task's spelling.
_WORD_GROUPS = """
big large huge enormous gigantic
small tiny little mini petite
red scarlet crimson vermillion
happy cheerful joyful gleeful delighted
sad unhappy sorrowful miserable tragic
angry mad furious irritated
evil wicked immoral sinful corrupt depraved
wrong incorrect mistaken erroneous
real genuine actual
strange odd peculiar unusual weird
stop cease halt end finish
scared terrified panicked fearful frightened afraid
quiet calm peaceful serene mild
old aged archaic
love like adore favor
kill murder assassinate
keep retain preserve sustain maintain
hide conceal camouflage
hate despise loathe detest dislike
funny humorous amusing comical laughable
fat fleshy plump chubby
stupid dumb dull unwise
delicious savory delectable appetizing
cut slice carve chop
brave courageous fearless
begin start initiate launch
answer reply response
television televisions TV TVs
house home houses homes
fire flame fires flames
pig pork swine
rabbit rabbits bunny bunnies
car cars automobile automobiles vehicle vehicles
water
"""


# number-checkboxes: each digit as 7 rows of 4 bits (the leftmost box is the highest bit).
_DIGIT_BITS: dict[str, tuple[int, ...]] = {
    "0": (6, 9, 9, 9, 9, 9, 6),
    "1": (2, 6, 2, 2, 2, 2, 2),
    "2": (6, 9, 9, 2, 4, 8, 15),
    "3": (6, 9, 1, 6, 1, 9, 6),
    "4": (8, 10, 10, 15, 2, 2, 2),
    "5": (15, 8, 8, 14, 1, 9, 6),
    "6": (6, 9, 8, 14, 9, 9, 6),
    "7": (15, 9, 1, 2, 2, 4, 4),
    "8": (6, 9, 9, 6, 9, 9, 6),
    "9": (6, 9, 9, 7, 1, 9, 6),
}


# How far a text area is scrolled, and how far it can go.
_SCROLL_STATE_JS = """
var t = document.getElementById(arguments[0]);
return {top: t.scrollTop, max: t.scrollHeight - t.clientHeight};
"""


# Is the point on a paragraph's own text (not on a link inside it)?
_PLAIN_AT_JS = "var e = document.elementFromPoint(arguments[0], arguments[1]); return !!e && e.tagName === 'P';"


def _is_item(n: Node) -> bool:
    return n.tag == "div" and n.has("ui-menu-item-wrapper")


def _named(name: str) -> Callable[[Node], bool]:
    return lambda n: n.own == name


class _MenuBot(Bot):
    """Menus that open on hover: B glides onto an item (never via a detour, which would close the menu) and
    waits, with explicit WAIT steps, until what it wants is shown."""

    EXTRA_OK = False  # a blank click collapses open submenus

    def glide(self, n: Node, label: str, settle_ms: float = 350) -> None:
        self.page.move(*self._aim(n), f"hover {label}", settle_ms=settle_ms, harmless=False)

    def pick(self, n: Node, label: str) -> None:
        x, y = self._aim(n)
        self.page.move(x + self.rng.uniform(-1, 1), y + self.rng.uniform(-1, 1), f"hover {label}",
                       settle_ms=self.rng.choice((60, 120)))
        self.page.click(x, y, label)

    def await_item(self, pred: Callable[[Node], bool], what: str, tries: int = 6) -> Node:
        for _ in range(tries):
            found = self.look().where(lambda n: _is_item(n) and n.hit and pred(n))
            if found:
                return found[0]
            self.page.wait_step(self.rng.choice((250, 400)), f"waits for {what}")
        raise BotError(f"agent B never sees {what}")


class FlyoutPath(_MenuBot):
    """click-menu: hover along the menu path (``A>B>C``) and click its last item."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [n.own for n in view.where(lambda n: _is_item(n) and n.hit)]

    def solve(self) -> None:
        path = [p for p in (s.strip() for s in self.field("target").split(">")) if p]
        if not path:
            raise BotError("no menu path")
        if self.mistake == "wrong_then_recover":
            first = self.await_item(lambda n: n.own == path[0], path[0])
            wrong = [n for n in self.look().where(lambda n: _is_item(n) and n.hit)
                     if n.own != path[0] and abs(n.x - first.x) < 2]
            if wrong:
                self.slips()
                w = self.rng.choice(wrong)
                self.glide(w, f"div:{w.own}")
                self.hold_on("sees the wrong submenu")
        for name in path[:-1]:
            self.glide(self.await_item(_named(name), name), f"div:{name}")
        target = self.await_item(lambda n: n.own == path[-1], path[-1])
        if self.mistake == "premature_stop":
            self.glide(target, f"div:{target.own}", settle_ms=120)
            self.stop_here()
            return
        if self.mistake == "wrong_element":
            level = [n for n in self.look().where(lambda n: _is_item(n) and n.hit)
                     if n.own != target.own and abs(n.x - target.x) < 2]
            if level:
                self.departs("wrong_element")
                target = self.rng.choice(level)
        self.pick(target, f"div:{target.own}")


class IconMenu(_MenuBot):
    """click-menu-2: open the Menu, hover Playback when the item is in it, click the item named or pictured."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")
    NESTED = ("Prev", "Stop", "Play", "Next")

    def cands(self, view: View) -> list[str]:
        return [n.own for n in view.where(_is_item, shown=False) if n.own not in ("Playback", "")]

    def _goal(self, view: View) -> str:
        """The item's name: quoted in the instruction, or the item whose icon is the instruction's icon."""
        q = view.by_id("query")
        quoted = [n for n in view.inside(q, lambda n: True, False)]
        text = q.deep
        if 'labeled "' in text:
            return text.split('labeled "', 1)[1].split('"', 1)[0]
        icon = next((n for n in quoted if n.has("ui-icon")), None)
        if icon is None:
            raise BotError("no item name and no icon in the instruction")
        kind = next(c for c in icon.classes if c.startswith("ui-icon-"))
        menu = view.by_id("menu")
        for span in view.inside(menu, lambda n: n.has(kind), False):
            owner = view.nodes[span.parent]
            if _is_item(owner):
                return owner.own
        raise BotError(f"no menu item shows {kind}")

    def solve(self) -> None:
        view = self.look()
        goal = self._goal(view)
        button = view.by_id("open-menu")
        if self.mistake == "wrong_then_recover":
            self.slips()
            self.miss(button)
            self.hold_on("looks for the menu")
        self.tap(button, "button:Menu", settle_ms=120)
        self.hold_on("menu opens")
        if goal in self.NESTED:
            self.glide(self.await_item(lambda n: n.own == "Playback", "Playback"), "div:Playback")
        target = self.await_item(lambda n: n.own == goal, goal)
        if self.mistake == "premature_stop":
            self.glide(target, f"div:{goal}", settle_ms=120)
            self.stop_here()
            return
        if self.mistake == "wrong_element":
            level = [n for n in self.look().where(lambda n: _is_item(n) and n.hit)
                     if n.own not in (goal, "Playback", "Print...") and abs(n.x - target.x) < 2]
            if level:
                self.departs("wrong_element")
                target = self.rng.choice(level)
        self.pick(target, f"div:{target.own}")


class LookAlikeWords(TickBoxes):
    """click-checkboxes-soft: tick the boxes whose word belongs to the synonym group of a named word, Submit."""

    def wanted(self) -> set[str]:
        named = {v.strip().lower() for k, v in self.fields.items() if k.startswith("target")}
        out: set[str] = set()
        for line in _WORD_GROUPS.strip().splitlines():
            group = line.split()
            if named & {w.lower() for w in group}:
                out.update(group)
        return out


class OpenTabLink(Bot):
    """click-tab-2-medium: the link if the open tab shows it, otherwise the other tab."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return sorted({n.own for n in view.where(lambda n: n.has("alink"), shown=False)})

    def solve(self) -> None:
        want = self.field("target")
        view = self.look()
        links = view.where(lambda n: n.has("alink") and n.hit)
        other_tab = view.the(lambda n: n.tag == "a" and n.attrs.get("href") == "#tabs-2", "Tab #2")
        target = next((a for a in links if a.own == want), other_tab)
        if self.mistake == "wrong_then_recover":
            self.slips()
            self._plain_word(view)
            self.hold_on("reads the tab again")
        if self.mistake == "premature_stop":
            self.page.move(*self._aim(target), f"hover {self._name(target)}")
            self.stop_here()
            return
        if self.mistake == "wrong_element":
            bad = [a for a in links if a.own != want] + ([other_tab] if target is not other_tab else [])
            if bad:
                self.departs("wrong_element")
                target = self.rng.choice(bad)
        self.fidget()
        self.tap(target, f"{target.tag}:{target.own}")


    def _plain_word(self, view: View) -> None:
        """A click on the panel's plain text (a word that only looks like a link): nothing happens."""
        para = view.the(lambda n: n.tag == "p" and n.hit, "the open tab's text")
        for _ in range(40):
            x = self.rng.uniform(para.x + 2, para.x + para.w - 2)
            y = self.rng.uniform(para.y + 2, min(para.y + para.h, 205) - 2)
            if self.page.execute(_PLAIN_AT_JS, x, y):
                self.page.click(x, y, "plain word")
                return
        first = view.the(lambda n: n.tag == "a" and n.attrs.get("href") == "#tabs-1", "Tab #1")
        self.tap(first, "a:Tab #1")  # the open tab again


class DigitGrid(Bot):
    """number-checkboxes: draw the digit in the 7x4 boxes, column by column (or bottom up), Submit."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        bits = _DIGIT_BITS.get(self.field("target").strip())
        if bits is None:
            raise BotError(f"no digit in: {self.utterance}")
        view = self.look()
        grid = view.by_id("checkboxes")
        boxes = view.inside(grid, lambda n: n.tag == "input")
        if len(boxes) != 28:
            raise BotError(f"agent B sees {len(boxes)} boxes, not 28")
        cells = [(r, c) for c in range(4) for r in range(7)]
        if self.rng.random() < 0.4:
            cells = [(r, c) for r in range(6, -1, -1) for c in range(4)]
        todo = [(r, c) for r, c in cells if bits[r] >> (3 - c) & 1]
        blank = [(r, c) for r, c in cells if not bits[r] >> (3 - c) & 1]
        skip = self.rng.choice(todo) if self.mistake == "missed_checkbox" else None
        stray = self.rng.choice(blank) if self.mistake in ("extra_checkbox", "wrong_then_recover") else None
        stray_at = self.rng.randrange(1, len(todo)) if stray is not None else -1
        for i, (r, c) in enumerate(todo):
            if i == stray_at and stray is not None:
                n = boxes[4 * stray[0] + stray[1]]
                if self.mistake == "wrong_then_recover":
                    self.slips()
                    self.tap(n, "checkbox (off the digit)", settle_ms=40)
                    self.hold_on("compares with the example")
                    self.tap(n, "checkbox (untick)", settle_ms=40)
                else:
                    self.departs("extra_checkbox")
                    self.tap(n, "checkbox (off the digit)", settle_ms=40)
            if (r, c) == skip:
                continue
            self.tap(boxes[4 * r + c], f"checkbox r{r + 1}c{c + 1}", settle_ms=40)
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if skip is not None:
            self.departs("missed_checkbox")
        self.hold_on("checks the drawing")
        self.tap(view.by_id("subbtn"), "button:Submit")


class _Wheel(Bot):
    """Text-area tasks: B turns the wheel over the text area until it has reached the top or the bottom."""

    def wheel_to(self, down: bool, limit: int = 30, stop_short: bool = False) -> None:
        for turn in range(limit):
            st = self.page.execute(_SCROLL_STATE_JS, "text-area")
            at_end = st["top"] >= st["max"] - 1 if down else st["top"] <= 0
            if at_end or (stop_short and turn >= 2):
                return
            area = self.look().by_id("text-area")
            self.page.scroll(self.rng.uniform(area.x + 15, area.x + area.w - 15),
                             self.rng.uniform(area.y + 15, area.y + area.h - 15), down=down,
                             label="wheel over the text area", settle_ms=self.rng.choice((120, 200)))
        raise BotError("the text area does not scroll")


class LastWord(_Wheel):
    """scroll-text: wheel to the end of the text, type its last word into the field, Submit."""

    MISTAKES = ("typo", "wrong_text", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        self.wheel_to(down=True)
        self.hold_on("reads the end of the text")
        view = self.look()
        words = (view.by_id("text-area").val or "").split()
        if not words:
            raise BotError("empty text area")
        word = words[-1].strip(".")
        box = view.by_id("answer-input")
        if self.mistake == "wrong_then_recover":
            self.fix_typo(box, slip(word, self.rng), word, "answer field")
        elif self.mistake in ("typo", "wrong_text"):
            bad = slip(word, self.rng)
            if self.mistake == "wrong_text":
                # The last word of the last full line it read: the one before.
                bad = next((w.strip(".") for w in reversed(words[:-1]) if w.strip(".") != word), bad)
            self.tap(box, "answer field")
            self.departs(self.mistake)
            self.keys(bad, "answer field")
        else:
            self.write(box, word, "answer field")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(view.by_id("subbtn"), "button:Submit")


class WheelToEdge(_Wheel):
    """scroll-text-2: wheel the text area to its top or bottom, Submit."""

    MISTAKES = ("wrong_option", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        down = self.field("target") == "bottom"
        if self.mistake == "wrong_then_recover":
            area = self.look().by_id("text-area")
            self.slips()
            self.page.scroll(*self._aim(area), down=not down, label="wheel over the text area (wrong way)")
            self.hold_on("sees the text move the wrong way")
        if self.mistake == "wrong_option":
            self.departs("wrong_option")
            down = not down
        if self.mistake == "premature_stop":
            # Turns the wheel a few notches and believes it is at the end.
            self.wheel_to(down, stop_short=True)
            self.stop_here()
            return
        self.wheel_to(down)
        self.hold_on()
        self.tap(self.look().by_id("subbtn"), "button:Submit")


def _number(text: str) -> float | None:
    """The first number in a text ('$52.00' -> 52.0), or None."""
    m = re.search(r"\d+(?:\.\d+)?", (text or "").replace(",", ""))
    return float(m.group(0)) if m else None


# -- email, free-worded requests ------------------------------------------------------------------------------------
class InboxInWords(Inbox):
    """email-inbox-nl-turk / -forward-nl (-turk): the request in free words; forwarding when no task is named."""

    def solve(self) -> None:
        if not self.field("task"):
            self.fields = {**self.fields, "task": "forward"}
        super().solve()

    def tap(self, n: Node, label: str = "", settle_ms: float = 70) -> None:
        # A long email pushes Reply / Forward below the fold of the email pane: wheel down to them first.
        if (n.has("email-forward") or n.has("email-reply")) and (not n.hit or n.y + n.h > 208):
            n = self.reach(lambda v: v.nodes[n.k], "email", label or "the button")
        super().tap(n, label, settle_ms)


# -- forms ----------------------------------------------------------------------------------------------------------
class TwoLookups(Form):
    """read-table-2: each labelled field gets the table's value for its key (read from the label's data-key)."""

    MISTAKES = ("typo", "wrong_text", "wrong_then_recover", "missed_field", "premature_stop")  # type: ignore[assignment]

    def table(self, view: View) -> dict[str, str]:
        cells = [n.full for n in view.where(lambda n: n.tag == "td")]
        return dict(zip(cells[0::2], cells[1::2], strict=False))

    def cands(self, view: View) -> list[str]:
        return list(self.table(view))

    def entries(self, view: View) -> list[tuple[Node, str, str]]:
        rows = self.table(view)
        self._rows = rows
        out = []
        for n in (1, 2):
            label = view.by_id(f"ll{n}")
            key = label.attrs.get("data-key") or label.full.rstrip(":")
            if key not in rows:
                raise BotError(f"no row {key!r}")
            out.append((view.by_id(f"tt{n}"), rows[key], key))
        return out

    def wrong_text(self, right: str) -> str:
        return self.rng.choice([v for v in self._rows.values() if v != right] or [right + "s"])


# -- pages ----------------------------------------------------------------------------------------------------------
class Contacts(Bot):
    """phone-book: turn the pages (>) until the person shows, click the asked detail."""

    MISTAKES = ("wrong_element", "wrong_option", "wrong_then_recover", "premature_stop")
    KINDS = ("phone", "email", "address")

    def cands(self, view: View) -> list[str]:
        return [n.own for n in view.where(lambda n: n.tag == "a" and bool(n.classes & set(self.KINDS)))]

    @staticmethod
    def _who(view: View) -> str:
        heads = view.where(lambda n: n.tag == "h2" and n.has("name"))
        return heads[0].full if heads else ""

    def _arrow(self, view: View, sign: str) -> Node | None:
        found = view.where(lambda n: n.tag == "a" and n.has("page-link") and n.own == sign and n.hit)
        return found[0] if found else None

    def _turn(self, sign: str, label: str) -> None:
        arrow = self._arrow(self.look(), sign)
        if arrow is None:
            raise BotError(f"no {sign} arrow")
        self.tap(arrow, label, settle_ms=90)
        self.hold_on("page turns")

    def solve(self) -> None:
        name = self.field("name")
        kind = self.field("target")
        kind = "phone" if kind.startswith("phone") else kind
        stop_at = None
        if self.mistake == "wrong_element":
            stop_at = self.rng.randrange(2)  # takes the first or second contact it sees, whoever it is
        for page in range(6):
            view = self.look()
            who = self._who(view)
            if who == name and stop_at is None:
                break
            if stop_at is not None and page >= stop_at and who != name:
                self.departs("wrong_element")
                break
            if self._arrow(view, ">") is None:
                if stop_at is not None:
                    break
                raise BotError(f"{name!r} is not in the book")
            self._turn(">", "next page")
        view = self.look()
        if self.mistake == "wrong_then_recover":
            self.slips()
            if self._arrow(view, ">") is not None:
                self._turn(">", "next page (too far)")
                self._turn("<", "previous page")
            else:
                head = view.the(lambda n: n.tag == "h2" and n.has("name"), "contact name")
                self.tap(head, f"name {head.full}")
            view = self.look()
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        links = view.where(lambda n: n.tag == "a" and bool(n.classes & set(self.KINDS)))
        target = next((a for a in links if a.has(kind)), None)
        if target is None:
            raise BotError(f"no {kind} on the card")
        if self.mistake == "wrong_option":
            others = [a for a in links if not a.has(kind)]
            if others:
                self.departs("wrong_option")
                target = self.rng.choice(others)
        self.fidget()
        self.tap(target, f"{kind} link")


class SuggestNow(Suggest):
    """use-autocomplete-nodelay: type the start, pick the suggestion that ends right with the arrows, Submit."""

    MISTAKES = ("wrong_option", "typo", "premature_stop")

    def open_ms(self) -> float:
        return self.rng.choice((150, 250))  # no delay on this page: a shorter look

    def solve(self) -> None:
        start, end = self.field("start"), self.field("end")
        if self.mistake == "typo":
            self.tap(self.look().by_id("tags"), "Tags field")
            self.departs("typo")
            self.keys(slip(start, self.rng), "Tags field")
            self.page.wait_step(200, "suggestions open")
            items = [n.full for n in self.look().where(lambda n: n.tag == "li" and n.parent >= 0 and bool(n.full))]
            off = [i for i, t in enumerate(items) if not (t.startswith(start) and t.endswith(end))]
            if off:  # takes a suggestion for the mistyped prefix
                for _ in range(off[0] + 1):
                    self.page.press("<ArrowDown>", label="suggestions", settle_ms=30)
                self.page.press("<Enter>", label="take suggestion")
            self.tap(self.look().by_id("subbtn"), "button:Submit")
            return
        self.write(self.look().by_id("tags"), start, "Tags field", refocus=False)
        self.page.wait_step(self.open_ms(), "suggestions open")
        if self.take_suggestion(start, end):
            self.hold_on()
            self.tap(self.look().by_id("subbtn"), "button:Submit")


class Ticker(Bot):
    """stock-market: rest the pointer on Buy, watch the price, click when it is safely under the limit."""

    MISTAKES = ("wrong_option", "wrong_then_recover", "premature_stop")
    EXTRA_OK = False  # a stray step costs time while the price moves

    def _read(self) -> tuple[int, float | None]:
        view = self.look()
        dots = len(view.where(lambda n: n.tag == "circle", shown=False))
        price = view.where(lambda n: n.id == "stock-price", shown=False)
        return dots, (_number(price[0].own) if price else None)

    def _good(self, price: float, limit: float, dots: int) -> bool:
        if self.mistake == "wrong_option":
            return price >= limit + 1.6 or dots >= 92
        return price <= limit - 2.0 or (dots >= 25 and price <= limit - 1.5) or (dots >= 74 and price <= limit)

    def solve(self) -> None:
        limit = _number(self.field("target")) or 0.0
        view = self.look()
        buy = view.by_id("buy")
        if self.mistake == "wrong_then_recover":
            self.slips()
            shown = view.by_id("stock-price")
            self.page.click(*self._aim(shown), "price (nothing happens)")
        x, y = self._aim(buy)
        self.page.move(x, y, "hover button:Buy", settle_ms=40)  # the pointer waits on the button
        seen: tuple[int, float | None] = (-1, None)
        next_wait = self.rng.uniform(1.0, 2.5)
        watched = 0.0
        for _ in range(3000):
            dots, price = self._read()
            if dots >= 100:
                break
            if price is not None and dots != seen[0]:
                seen = (dots, price)
                if self._good(price, limit, dots):
                    if self.mistake == "wrong_option":
                        self.departs("wrong_option")
                    if self.mistake == "premature_stop":
                        self.stop_here()
                        return
                    self.page.click(x + self.rng.uniform(-1, 1), y + self.rng.uniform(-1, 1), "button:Buy",
                                    settle_ms=30)
                    return
                if watched >= next_wait and price > limit + 2.5 and dots < 60:
                    self.page.wait_step(100, "watches the price")
                    watched, next_wait = 0.0, self.rng.uniform(1.5, 3.0)
                    continue
            self.page.wait(10)
            watched += 0.012
        raise BotError("the price never fell under the limit")


class Menu(Bot):
    """order-food: + on the named dishes (or N dishes of the named kind, read from their icons), Order!."""

    MISTAKES = ("missed_checkbox", "extra_checkbox", "wrong_then_recover", "premature_stop")

    def cands(self, view: View) -> list[str]:
        return [n.full for n in view.where(lambda n: n.has("item-name"), shown=False)]

    def dishes(self, view: View) -> list[tuple[str, set[str]]]:
        out = []
        for item in view.where(lambda n: n.has("food-item"), shown=False):
            icons = view.inside(item, lambda n: n.tag == "img", shown=False)
            out.append((item.attrs.get("data-item", "").strip(), {i.attrs.get("alt", "") for i in icons}))
        return out

    def _button(self, dish: int, cls: str) -> Callable[[View], Node]:
        def find(view: View) -> Node:
            items = view.where(lambda n: n.has("food-item"), shown=False)
            got = view.inside(items[dish], lambda n: n.has(cls), shown=False)
            if not got:
                raise BotError(f"dish {dish} has no {cls}")
            return got[0]
        return find

    def solve(self) -> None:
        view = self.look()
        dishes = self.dishes(view)
        names = [d for d, _ in dishes]
        if self.field("criterion") == "type":
            kind, amount = self.field("type"), int(self.field("amount", "1"))
            fits = [i for i, (_, k) in enumerate(dishes) if kind in k]
            if not fits:
                raise BotError(f"no {kind} dish")
            self.rng.shuffle(fits)
            plan = [fits[j % len(fits)] for j in range(amount)]
            rest = [i for i, (_, k) in enumerate(dishes) if kind not in k]
        else:
            wanted = [v.strip() for k, v in self.fields.items() if k.startswith("target")]
            missing = [w for w in wanted if w not in names]
            if missing:
                raise BotError(f"no dish {missing[0]!r}")
            plan = [names.index(w) for w in wanted]  # in the order the request names them
            rest = [i for i in range(len(dishes)) if i not in plan]
        skip = self.mistake == "missed_checkbox" and len(plan) > 1
        if skip:
            plan = plan[:-1]
        extra = self.rng.choice(rest) if rest and self.mistake in ("extra_checkbox", "wrong_then_recover") else None
        if extra is not None:
            plan.insert(self.rng.randint(0, len(plan)), -1 - extra)
        for i in plan:
            if i < 0:
                j = -1 - i
                plus = self.reach(self._button(j, "add"), "area", f"+ of {names[j]}")
                if self.mistake == "wrong_then_recover":
                    self.slips()
                    self.tap(plus, f"+ {names[j]}")
                    self.hold_on("notices the wrong dish")
                    self.tap(self.reach(self._button(j, "remove"), "area", f"- of {names[j]}"), f"- {names[j]}")
                    continue
                self.departs("extra_checkbox")
                self.tap(plus, f"+ {names[j]}")
                continue
            self.tap(self.reach(self._button(i, "add"), "area", f"+ of {names[i]}"), f"+ {names[i]}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        if skip:
            self.departs("missed_checkbox")
        self.tap(self._order_button(), "button:Order!")

    def _order_button(self) -> Node:
        """Wheel down to the Order! button: until it shows whole, or the menu ends with it in sight."""
        last = None
        for _ in range(16):
            view = self.look()
            b = view.the(lambda n: n.tag == "button" and n.full.startswith("Order"), "Order!", False)
            if b.hit and (b.y + b.h <= 206 or b.y == last):
                return b
            last = b.y
            box = view.by_id("area")
            self.page.scroll(self.rng.uniform(box.x + 10, box.x + box.w - 10), self.rng.uniform(box.y + 10, 190),
                             down=True, label="scroll to the Order button")
        raise BotError("agent B could not bring the Order button into view")


class Fares(PickOne):
    """buy-ticket: the Book button of the cheapest, dearest, shortest or longest flight (read from its data)."""

    def options(self, view: View) -> list[Node]:
        return view.where(lambda n: n.tag == "button" and n.has("buy-ticket"))

    def _values(self, view: View) -> dict[int, float]:
        want = self.field("target")
        out: dict[int, float] = {}
        for card in view.where(lambda n: n.has("flight")):
            btn = view.inside(card, lambda n: n.tag == "button")
            span = view.inside(card, lambda n: n.has("time-duration"))
            if not btn or not span:
                continue
            raw = btn[0].attrs.get("data-price") if "cost" in want else span[0].attrs.get("data-duration")
            value = _number(raw or "")
            if value is not None:
                out[btn[0].k] = value
        return out

    def solve(self) -> None:
        values = self._values(self.look())
        if not values:
            raise BotError("no flights")
        want = self.field("target")
        self._best = min(values.values()) if ("cheapest" in want or "shortest" in want) else max(values.values())
        self._vals = values
        super().solve()

    def is_target(self, n: Node) -> bool:
        return self._vals.get(n.k) == self._best


# The jQuery UI calendar lives outside #wrap (appended to <body>), where B's usual snapshot does not look: the same
# kind of rows, for the calendar only.
_CALENDAR_JS = """
var els = Array.prototype.slice.call(document.querySelectorAll('#ui-datepicker-div, #ui-datepicker-div *'));
var index = new Map();
els.forEach(function (e, k) { index.set(e, k); });
return els.map(function (e, k) {
  var r = e.getBoundingClientRect();
  var st = window.getComputedStyle(e);
  var shown = r.width > 0 && r.height > 0 && st.visibility !== 'hidden' && st.display !== 'none'
      && parseFloat(st.opacity) > 0.5;
  var own = '';
  e.childNodes.forEach(function (n) { if (n.nodeType === 3) { own += n.textContent; } });
  var attrs = {};
  for (var i = 0; i < e.attributes.length; i++) {
    if (e.attributes[i].name !== 'style') { attrs[e.attributes[i].name] = String(e.attributes[i].value); }
  }
  var txt = (e.textContent || '').replace(/\\s+/g, ' ').trim();
  return {k: k, tag: e.tagName.toLowerCase(), own: own.replace(/\\s+/g, ' ').trim(), full: txt, deep: txt,
          val: null, checked: false, x: r.left, y: r.top, w: r.width, h: r.height, shown: shown, hit: shown,
          attrs: attrs, parent: e.parentElement && index.has(e.parentElement) ? index.get(e.parentElement) : -1};
});
"""


# A point of the shape grid's bare background (a click there ends the episode as a failure).
_GRID_GAP_JS = """
var svg = document.getElementById('area_svg');
if (!svg) { return null; }
var r = svg.getBoundingClientRect();
for (var i = 0; i < 60; i++) {
  var x = r.left + 4 + Math.random() * (Math.min(r.width, 156 - r.left) - 8);
  var y = r.top + 4 + Math.random() * (Math.min(r.height, 206 - r.top) - 8);
  if (document.elementFromPoint(x, y) === svg) { return [x, y]; }
}
return null;
"""


_MONTH_NAMES = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
                   "october", "november", "december")


_DIGIT_ROW = "1234567890"


def _digit_slip(text: str, r: random.Random) -> str:
    """A neighbouring key on the number row instead of one digit (never the same text)."""
    i = r.randrange(len(text))
    j = _DIGIT_ROW.index(text[i]) if text[i] in _DIGIT_ROW else 0
    near = [_DIGIT_ROW[m] for m in (j - 1, j + 1) if 0 <= m < len(_DIGIT_ROW)]
    return text[:i] + r.choice(near) + text[i + 1:]


# -- date picker -----------------------------------------------------------------------------------------------
class Calendar(Bot):
    """choose-date (-easy/-medium/-nodelay): open the calendar (Tab or a click), page to the month, the day, Submit."""

    MISTAKES: tuple[str, ...] = ("wrong_option", "wrong_element", "wrong_then_recover", "premature_stop")

    def calendar(self) -> View:
        return View(self.page.execute(_CALENDAR_JS))

    def pin(self, n: Node, label: str, settle_ms: float = 90) -> None:
        """Click a calendar cell near its centre (hovering first, as B does), off its border."""
        cx, cy = n.centre
        x = min(max(self.rng.gauss(cx, n.w * 0.12), n.x + 0.2 * n.w), n.x + 0.8 * n.w)
        y = min(max(self.rng.gauss(cy, n.h * 0.12), n.y + 0.2 * n.h), n.y + 0.8 * n.h)
        if self.rng.random() < self.p_hover:
            self.page.move(x + self.rng.uniform(-1, 1), y + self.rng.uniform(-1, 1), f"hover {label}",
                           settle_ms=self.rng.choice((40, 90)))
        self.page.click(x, y, label, settle_ms=settle_ms)

    def month_shown(self, cal: View) -> int:
        title = cal.the(lambda n: n.has("ui-datepicker-title"), "calendar title").full.lower()
        m = re.search(r"([a-z]+)\s*(\d{4})", title)
        if not m or m.group(1) not in _MONTH_NAMES:
            raise BotError(f"agent B cannot read the calendar title {title!r}")
        return int(m.group(2)) * 12 + _MONTH_NAMES.index(m.group(1))

    def open_up(self, by_key: bool) -> View:
        if by_key:
            self.page.press("<Tab>", label="focus the date field")
        else:
            self.tap(self.look().by_id("datepicker"), "date field")
        self.page.wait_step(self.rng.choice((450, 550)), "calendar opens")
        cal = self.calendar()
        if not cal.where(lambda n: n.has("ui-datepicker-title")):
            raise BotError("agent B sees no calendar")
        return cal

    def step_month(self, cal: View, forward: bool) -> View:
        cls = "ui-datepicker-next" if forward else "ui-datepicker-prev"
        arrow = cal.the(lambda n: n.tag == "a" and n.has(cls), "Next" if forward else "Prev")
        self.pin(arrow, "a:Next" if forward else "a:Prev", settle_ms=50)
        return self.calendar()

    def day_cells(self, cal: View) -> list[Node]:
        return cal.where(lambda n: n.tag == "a" and n.full.isdigit() and not n.has("ui-datepicker-prev"))

    def solve(self) -> None:
        word = next((w for w in self.utterance.split() if w.count("/") == 2), "")
        m = re.match(r"(\d+)/(\d+)/(\d+)", word)
        if not m:
            raise BotError("no date in the instruction")
        month, day, year = (int(g) for g in m.groups())
        goal = year * 12 + month - 1
        cal = self.open_up(by_key=self.rng.random() < 0.4)
        overshoot = False
        for _ in range(30):
            now = self.month_shown(cal)
            if now == goal:
                break
            forward = now < goal
            # B pages past the month now and then and comes back (a recovered slip), if the picker allows it.
            if self.mistake == "wrong_then_recover" and not overshoot and abs(goal - now) == 1:
                beyond = "ui-datepicker-next" if forward else "ui-datepicker-prev"
                cal = self.step_month(cal, forward)
                if cal.where(lambda n: n.tag == "a" and n.has(beyond) and not n.has("ui-state-disabled")):
                    overshoot = True
                    self.slips()
                    cal = self.step_month(cal, forward)
                    self.hold_on("reads the month")
                    cal = self.step_month(cal, not forward)
                continue
            cal = self.step_month(cal, forward)
        if self.month_shown(cal) != goal:
            raise BotError("agent B cannot reach the month")
        cells = self.day_cells(cal)
        good = next((c for c in cells if c.full == str(day)), None)
        if good is None:
            raise BotError(f"no day {day}")
        pick = good
        if self.mistake == "wrong_then_recover" and not overshoot:
            # No month to page past: a neighbouring day first, seen in the field, then the calendar again.
            near = [c for c in cells if c.full.isdigit() and abs(int(c.full) - day) == 1]
            if near:
                self.slips()
                self.pin(self.rng.choice(near), "a:day (wrong)")
                self.hold_on("reads the field")
                self.open_up(by_key=False)
                pick = next(c for c in self.day_cells(self.calendar()) if c.full == str(day))
        if self.mistake == "wrong_element":
            arrows = cal.where(lambda n: n.tag == "a" and (n.has("ui-datepicker-prev") or n.has("ui-datepicker-next"))
                               and not n.has("ui-state-disabled"))
            if arrows:
                a = self.rng.choice(arrows)
                self.departs("wrong_element")
                cal = self.step_month(cal, a.has("ui-datepicker-next"))
                cells = self.day_cells(cal)
                pick = next((c for c in cells if c.full == str(day)), None) or self.rng.choice(cells)
            else:
                self.mistake = "wrong_option"
        if self.mistake == "wrong_option":
            bad = [c for c in cells if c.full != str(day)]
            self.departs("wrong_option")
            pick = self.rng.choice(bad)
        self.pin(pick, f"a:{pick.full}")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(self.look().by_id("subbtn"), "button:Submit")


class CalendarOneMonth(Calendar):
    """choose-date-easy: one month only, nothing to page through."""

    MISTAKES = ("wrong_option", "premature_stop")


# -- sliders ------------------------------------------------------------------------------------------------------
class SliderSet(Bot):
    """use-slider: grab the handle, page with PageUp/PageDown, step with the arrow keys, Submit."""

    MISTAKES: tuple[str, ...] = ("wrong_option", "wrong_then_recover", "premature_stop")

    def reading(self, out: str) -> int:
        txt = self.look().by_id(out).full
        if not re.fullmatch(r"-?\d+", txt):
            raise BotError(f"agent B cannot read {txt!r}")
        return int(txt)

    def knob(self, slider: str, out: str, want: int, label: str, off: bool = False) -> None:
        """Move slider ``slider`` to ``want``; ``off``: end one step from it (short of it, or past it)."""
        view = self.look()
        track = view.by_id(slider)
        handle = view.the(lambda n: n.has("ui-slider-handle") and n.parent == track.k, f"{label} handle")
        self.tap(handle, f"{label} handle", settle_ms=60)
        v = self.reading(out)
        goal = want
        if off:
            goal = want - 1 if v < want else want + 1 if v > want else want + self.rng.choice((-1, 1))
        page = 0
        for _ in range(40):
            gap = goal - v
            if gap == 0:
                break
            if abs(gap) >= 3 and (page == 0 or abs(gap) >= page):
                self.page.press("<PageUp>" if gap > 0 else "<PageDown>", label=f"{label} handle", settle_ms=40)
                nv = self.reading(out)
                if page == 0:
                    page = abs(nv - v)
                if nv == v:
                    page = 10 ** 6  # no page moves here: arrows from now on
                v = nv
                continue
            if off and goal != want and abs(gap) == 1 and (goal - want) * gap > 0:
                self.departs("wrong_option")  # the press past the number
            self.page.press("<ArrowUp>" if gap > 0 else "<ArrowDown>", label=f"{label} handle", settle_ms=35)
            nv = self.reading(out)
            if nv == v and off:
                goal = want  # the slider ends here: one step off is not possible on this side
            v = nv
        if v != goal:
            raise BotError(f"agent B cannot bring {label} to {goal}")
        if off and goal != want:
            self.departs("wrong_option")  # stopped short: the next action should have been one more press
        if self.mistake == "wrong_then_recover" and not off and self.mistake_applied is None:
            self.slips()
            self.page.press(self.rng.choice(("<ArrowUp>", "<ArrowDown>")), label=f"{label} handle", settle_ms=35)
            self.hold_on("reads the value")
            for _ in range(3):
                nv = self.reading(out)
                if nv == want:
                    break
                self.page.press("<ArrowUp>" if nv < want else "<ArrowDown>", label=f"{label} handle", settle_ms=35)

    def solve(self) -> None:
        want = int(self.field("target", "0"))
        self.knob("slider", "val", want, "slider", off=self.mistake == "wrong_option")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(self.look().by_id("subbtn"), "button:Submit")


class SliderTrio(SliderSet):
    """use-slider-2: the three sliders to the combination (top down, or bottom up), Submit."""

    MISTAKES = ("wrong_option", "missed_field", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        want = [int(self.field(f"n{i}", "0")) for i in (1, 2, 3)]
        order = [0, 1, 2] if self.rng.random() < 0.7 else [2, 1, 0]
        skip = odd = None
        if self.mistake == "missed_field":
            unset = [i for i in order if self.reading(f"val-{i + 1}") != want[i]]
            skip = self.rng.choice(unset) if unset else None
            if skip is None:
                self.mistake = "wrong_option"
        if self.mistake == "wrong_option":
            odd = self.rng.choice(order)
        recover_at = self.rng.choice(order)
        for i in order:
            if i == skip:
                self.departs("missed_field")  # whatever comes next is done with this slider left as it was
                continue
            mistake = self.mistake
            if self.mistake == "wrong_then_recover" and i != recover_at:
                self.mistake = None
            self.knob(f"slider-{i + 1}", f"val-{i + 1}", want[i], f"slider {i + 1}", off=i == odd)
            self.mistake = mistake
            self.fidget()
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(self.look().by_id("subbtn"), "button:Submit")


# -- shapes ---------------------------------------------------------------------------------------------------------
def _figure(n: Node) -> dict[str, str]:
    """What a figure of the shape grid is, from its SVG attributes."""
    a = n.attrs
    if n.tag == "text":
        text = n.deep.strip()
        kind = "digit" if text.isdigit() else "letter"
        big = float(re.sub(r"[^0-9.]", "", a.get("font-size", "0")) or 0) >= 15
    else:
        kind = "shape"
        text = {"rect": "rectangle", "circle": "circle", "polygon": "triangle"}.get(n.tag, n.tag)
        if n.tag == "rect":
            big = float(a.get("width", "0")) >= 15
        elif n.tag == "circle":
            big = float(a.get("r", "0")) >= 7.5
        else:
            xs = [float(p.split(",")[0]) for p in a.get("points", "").split()]
            big = bool(xs) and max(xs) - min(xs) >= 15
    return {"kind": kind, "text": text, "color": a.get("fill", ""), "size": "large" if big else "small"}


def _fits(words: list[str], f: dict[str, str]) -> bool:
    """Does the figure fit the description (every word of it: size, colour, kind or the very character)?"""
    for w in words:
        if w in ("large", "small"):
            if f["size"] != w:
                return False
        elif w in ("red", "green", "blue", "aqua", "black", "magenta", "yellow"):
            if f["color"] != w:
                return False
        elif w == "item":
            continue
        elif w not in (f["kind"], f["text"]):
            return False
    return True


class _G4Grid:
    """Reading of the shape grid shared by B's two shape programs (a mixin)."""

    def figures(self, view: View) -> list[tuple[Node, dict[str, str]]]:
        svg = view.by_id("area_svg")
        return [(n, _figure(n)) for n in view.inside(svg, lambda n: n.tag in ("text", "rect", "circle",
                                                                                   "polygon"))]


class ShapePick(_G4Grid, Bot):
    """click-shape: a figure that fits the description."""

    MISTAKES = ("wrong_element", "premature_stop")

    def words(self) -> list[str]:
        m = re.match(r"Click on an? (.*)", self.utterance.strip())
        if not m:
            raise BotError("agent B cannot read the description")
        return m.group(1).split()

    def cands(self, view: View) -> list[str]:
        return [f"{f['size']} {f['color']} {f['text']}" for _, f in self.figures(view)]

    def solve(self) -> None:
        view = self.look()
        words = self.words()
        figs = self.figures(view)
        good = [n for n, f in figs if _fits(words, f)]
        bad = [n for n, f in figs if not _fits(words, f)]
        if not good:
            raise BotError(f"agent B finds no figure for: {self.utterance}")
        target = self.rng.choice(good)
        if self.mistake == "premature_stop":
            x, y = self._aim(target)
            self.page.move(x, y, f"hover {self._name(target)}")
            self.stop_here()
            return
        if self.mistake == "wrong_element":
            self.departs("wrong_element")
            if not bad:
                pt = self.page.execute(_GRID_GAP_JS)
                if pt:
                    self.page.click(pt[0], pt[1], "grid background")
                    return
            else:
                target = self.rng.choice(bad)
        self.fidget()
        self.tap(target, f"{target.tag}:{target.deep or 'figure'}")


class ShapeTally(_G4Grid, PickOne):
    """count-shape: count the figures that fit, click the button with the count."""

    MISTAKES = ("wrong_element", "wrong_then_recover", "premature_stop")

    def options(self, view: View) -> list[Node]:
        box = view.by_id("count-buttons")
        return view.inside(box, lambda n: n.tag == "button")

    def solve(self) -> None:
        m = re.match(r"How many (.*)s are there\?", self.utterance.strip())
        if not m:
            raise BotError("agent B cannot read the question")
        words = m.group(1).split()
        self._count = str(sum(1 for _, f in self.figures(self.look()) if _fits(words, f)))
        super().solve()

    def is_target(self, n: Node) -> bool:
        return n.full == self._count

    def miss(self, avoid: Node | None = None) -> None:
        # No bare space around the grid and its buttons (a click on the grid ends the episode): B clicks the
        # question instead, reading it again.
        view = self.look()
        q = view.by_id("query")
        self.page.click(self.rng.uniform(q.x + 0.2 * q.w, q.x + 0.8 * q.w), q.y + q.h * self.rng.uniform(0.3, 0.7),
                        "question text")


class BlockSum(Bot):
    """visual-addition: count the blocks on both sides of the plus, type the sum, Submit."""

    MISTAKES = ("wrong_text", "typo", "wrong_then_recover", "premature_stop")

    def solve(self) -> None:
        view = self.look()
        left = view.inside(view.by_id("visual-1"), lambda n: n.has("addition-block"))
        right = view.inside(view.by_id("visual-2"), lambda n: n.has("addition-block"))
        if not (left and right):
            raise BotError("no blocks")
        total = str(len(left) + len(right))
        box = view.by_id("math-answer")
        if self.mistake == "wrong_then_recover":
            self.fix_typo(box, _digit_slip(total, self.rng), total, "answer")
        elif self.mistake in ("wrong_text", "typo"):
            self.tap(box, "answer")
            self.departs(self.mistake)
            # wrong_text: counts one group only (or one block off when both groups are equal).
            bad = (str(max(len(left), len(right))) if len(left) != len(right) else str(len(left) + len(right) - 1)) \
                if self.mistake == "wrong_text" else _digit_slip(total, self.rng)
            self.keys(bad, "answer")
        else:
            self.write(box, total, "answer")
        if self.mistake == "premature_stop":
            self.stop_here()
            return
        self.hold_on()
        self.tap(view.by_id("subbtn"), "button:Submit")


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
    # task types added with the second recording round
    "form-sequence": SliderTicks,
    "form-sequence-2": RadioAndNumber,
    "form-sequence-3": HeightAndAnswer,
    "sign-agreement": Agreement,
    "text-editor": RichText,
    "generate-number": NumberMachine,
    "odd-or-even": ParityMarks,
    "find-greatest": HighCard,
    "guess-number": HigherLower,
    "click-menu": FlyoutPath,
    "click-menu-2": IconMenu,
    "click-checkboxes-soft": LookAlikeWords,
    "click-tab-2-medium": OpenTabLink,
    "number-checkboxes": DigitGrid,
    "scroll-text": LastWord,
    "scroll-text-2": WheelToEdge,
    "email-inbox-forward-nl": InboxInWords,
    "email-inbox-forward-nl-turk": InboxInWords,
    "email-inbox-nl-turk": InboxInWords,
    "read-table-2": TwoLookups,
    "phone-book": Contacts,
    "use-autocomplete-nodelay": SuggestNow,
    "stock-market": Ticker,
    "order-food": Menu,
    "buy-ticket": Fares,
    "choose-date": Calendar,
    "choose-date-easy": CalendarOneMonth,
    "choose-date-medium": Calendar,
    "choose-date-nodelay": Calendar,
    "use-slider": SliderSet,
    "use-slider-2": SliderTrio,
    "click-shape": ShapePick,
    "count-shape": ShapeTally,
    "visual-addition": BlockSum,
}
