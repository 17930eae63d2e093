"""Recording styles: how an episode looks on screen, drawn per episode from one of two disjoint families.

Model v1 learned our look (one pointer sprite at one scale, one font, MiniWoB's yellow instruction bar) instead of
the task. Each recorded episode therefore gets a style drawn at random from a *family*: the pointer (drawn or not;
an installed X cursor theme at a nominal size, with the hand over links and the I-beam over text as the page's own
``cursor`` asks; or our arrow sprite), the device scale factor (device scale x page zoom: Chromium renders text and
borders at that density, nothing is resized afterwards), fonts and colours injected as CSS into the MiniWoB page,
and the frame (margins of the captured area, a border, an output resize).

Families "A" and "B" share no pointer theme, pointer size, device scale factor, font, font size, colour scheme,
margin or resize factor, so that a model trained on family A can be tested on family B as on a look it has never
seen. ``plain`` is the look of the first recorder (arrow sprite at scale 2, MiniWoB's own CSS, 320x420 frames).

What a style never does: hide or recolour task content. The CSS only touches the page background, the instruction
bar, the default text colour, fonts and the look of buttons and text fields; the dark scheme (an inverting filter)
is never used for tasks whose content is colour; and a font or size that makes content overflow the task area is
dropped for that episode (:func:`apply_style` measures the layout before and after).
"""

from __future__ import annotations

import functools
import random
import subprocess
from dataclasses import asdict, dataclass, field, replace
from typing import Any

STYLE_SETS = ("plain", "A", "B", "all")
STYLE_VERSION = 1

#: Tasks whose content is colour (a colour to find, shades to tell apart): no inverting scheme for them.
COLOUR_TASKS = frozenset({"click-color", "click-shades", "click-shape", "identify-shape", "click-pie", "count-shape",
                          "grid-coordinate", "social-media", "social-media-all", "social-media-some"})

# Colour schemes: instruction bar, its text, task background, default text, buttons, fields, outer desktop.
SCHEMES: dict[str, dict[str, str]] = {
    # family A
    "default": {},  # MiniWoB's own colours (only the font changes)
    "paper": {"bar": "#fff3b0", "bar_text": "#222", "bg": "#fdfdf8", "text": "#222", "btn": "#e8e8e8",
              "btn_text": "#111", "btn_border": "#999", "field": "#fff", "field_border": "#888", "desk": "#6b6b6b"},
    "slate": {"bar": "#cfd8dc", "bar_text": "#102027", "bg": "#f5f7f8", "text": "#1c2b33", "btn": "#607d8b",
              "btn_text": "#fff", "btn_border": "#455a64", "field": "#fff", "field_border": "#607d8b",
              "desk": "#37474f"},
    "sky": {"bar": "#bbdefb", "bar_text": "#0d2b45", "bg": "#ffffff", "text": "#0d2b45", "btn": "#1976d2",
            "btn_text": "#fff", "btn_border": "#0d47a1", "field": "#f7fbff", "field_border": "#1976d2",
            "desk": "#263238"},
    # family B
    "dark": {"invert": "1", "desk": "#101010"},
    "mint": {"bar": "#c8f7dc", "bar_text": "#0b3d20", "bg": "#f4fff8", "text": "#10261a", "btn": "#2e7d32",
             "btn_text": "#fff", "btn_border": "#1b5e20", "field": "#fbfffc", "field_border": "#2e7d32",
             "desk": "#2f3b33"},
    "rose": {"bar": "#f8bbd0", "bar_text": "#4a0d24", "bg": "#fff8fa", "text": "#3a1020", "btn": "#ad1457",
             "btn_text": "#fff", "btn_border": "#880e4f", "field": "#fff", "field_border": "#ad1457",
             "desk": "#4a3a40"},
    "contrast": {"bar": "#000000", "bar_text": "#ffffff", "bg": "#ffffff", "text": "#000", "btn": "#000",
                 "btn_text": "#fff", "btn_border": "#000", "field": "#fff", "field_border": "#000",
                 "desk": "#808080", "border_width": "2px"},
    "sand": {"bar": "#ffe0b2", "bar_text": "#3e2100", "bg": "#fffaf0", "text": "#3e2723", "btn": "#e65100",
             "btn_text": "#fff", "btn_border": "#bf360c", "field": "#fffdf8", "field_border": "#e65100",
             "desk": "#5d4037"},
}


@dataclass(frozen=True)
class Family:
    """The choices one family draws from (each tuple disjoint from the other family's)."""

    pointers: tuple[str, ...]  # Xcursor theme names, or "builtin" (our arrow sprite)
    pointer_sizes: tuple[int, ...]  # nominal pointer height at device scale 1, in pixels
    p_no_pointer: float
    dsf: tuple[float, ...]  # device scale factor x page zoom
    fonts: tuple[str, ...]
    font_sizes: tuple[float, ...]  # px, for the instruction bar and the task area (MiniWoB's own: 10)
    schemes: tuple[str, ...]
    margins: tuple[int, ...]  # CSS px of page captured right of and below the task area
    pads: tuple[int, ...]  # frame px of a border around the capture
    resizes: tuple[float, ...]  # output resize factor


FAMILIES: dict[str, Family] = {
    "A": Family(
        pointers=("builtin", "DMZ-White", "Adwaita", "redglass", "handhelds", "breeze_cursors",
                  "Chameleon-Pearl-Regular", "crystalblue"),
        pointer_sizes=(16, 24), p_no_pointer=0.2, dsf=(1.0, 1.1, 2.0, 2.2, 3.0),
        fonts=("Liberation Sans", "DejaVu Sans", "FreeSans", "Open Sans", "Lato", "Carlito", "Liberation Serif"),
        font_sizes=(10.0, 11.0), schemes=("default", "paper", "slate", "sky"), margins=(0, 8, 14),
        pads=(0, 6, 10), resizes=(1.0, 0.8)),
    "B": Family(
        pointers=("DMZ-Black", "whiteglass", "Breeze_Snow", "Chameleon-Anthracite-Regular", "Bibata-Modern-Classic",
                  "Bibata-Original-Ice", "ComixCursors-Opaque-Black", "crystalgray"),
        pointer_sizes=(20, 32), p_no_pointer=0.3, dsf=(0.9, 1.25, 1.5, 1.8, 2.5, 2.7),
        fonts=("Roboto", "Nimbus Sans", "Cantarell", "Comic Neue", "DejaVu Serif", "Tinos", "URW Gothic", "Hack",
               "FreeSerif"),
        font_sizes=(9.0, 10.5, 11.5), schemes=("dark", "mint", "rose", "contrast", "sand"), margins=(0, 20, 32),
        pads=(0, 16, 24), resizes=(1.0, 0.7)),
}


@dataclass
class Style:
    """The look of one recorded episode (stored as the episode's metadata ``style``)."""

    family: str = "plain"  # "plain", "A" or "B"
    pointer: str | None = "builtin"  # theme name, "builtin" (arrow sprite) or None (no pointer drawn)
    pointer_size: int = 19  # nominal height at device scale 1
    dsf: float = 2.0  # device scale factor of the capture (device scale x page zoom)
    font: str | None = None  # CSS font family for the task (None: MiniWoB's Arial)
    font_size: float | None = None
    scheme: str = "default"
    margin: int = 0  # CSS px right of and below the task area included in the capture
    pad: int = 0  # frame px of border around the capture
    pad_colour: str = "#000000"
    resize: float = 1.0
    dropped: list[str] = field(default_factory=list)  # what apply_style had to undo (overflow), for the record
    version: int = STYLE_VERSION

    @property
    def is_plain(self) -> bool:
        return self.family == "plain"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


PLAIN = Style()


@functools.lru_cache(maxsize=1)
def installed_fonts() -> frozenset[str]:
    """Font families fontconfig knows (``fc-list``); empty when fontconfig is missing."""
    try:
        out = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    names = set()
    for line in out.splitlines():
        names.update(n.strip() for n in line.split(",") if n.strip())
    return frozenset(names)


def available(family: str) -> dict[str, tuple]:
    """The family's pointer themes and fonts that are installed here."""
    from gui_app.training.cursors import installed_themes

    fam = FAMILIES[family]
    fonts = installed_fonts()
    themes = tuple(t for t in fam.pointers if t == "builtin") + tuple(
        installed_themes([t for t in fam.pointers if t != "builtin"]))
    return {"pointers": themes, "fonts": tuple(f for f in fam.fonts if f in fonts)}


def sample_style(style_set: str, task: str, rng: random.Random) -> Style:
    """Draw the style of one episode from ``style_set`` (``plain``, ``A``, ``B`` or ``all``: A or B at random)."""
    if style_set not in STYLE_SETS:
        raise ValueError(f"unknown style set {style_set!r} (known: {', '.join(STYLE_SETS)})")
    if style_set == "plain":
        return replace(PLAIN)
    family = rng.choice(("A", "B")) if style_set == "all" else style_set
    fam = FAMILIES[family]
    have = available(family)
    pointer = None if rng.random() < fam.p_no_pointer or not have["pointers"] else rng.choice(have["pointers"])
    schemes = [s for s in fam.schemes if not (task in COLOUR_TASKS and SCHEMES[s].get("invert"))]
    scheme = rng.choice(schemes)
    pad = rng.choice(fam.pads)
    return Style(
        family=family, pointer=pointer, pointer_size=rng.choice(fam.pointer_sizes), dsf=rng.choice(fam.dsf),
        font=rng.choice(have["fonts"]) if have["fonts"] else None, font_size=rng.choice(fam.font_sizes),
        scheme=scheme, margin=rng.choice(fam.margins), pad=pad,
        pad_colour=SCHEMES[scheme].get("desk", "#555555") if pad else "#000000", resize=rng.choice(fam.resizes))


def style_css(style: Style, parts: tuple[str, ...] = ("font", "size", "scheme")) -> str:
    """The CSS injected into the MiniWoB page for ``style`` (only the ``parts`` asked for)."""
    if style.is_plain:
        return ""
    # Outside the task (the reward display and MiniWoB's click canvas beside it); margins may capture them.
    rules = ["#reward-display, #reward-display *, #click-canvas { visibility: hidden !important; }"]
    if "font" in parts and style.font:
        rules.append(f'#wrap, #wrap *, .ui-dialog, .ui-dialog * {{ font-family: "{style.font}", sans-serif; }}')
    if "size" in parts and style.font_size:
        rules.append(f"#query, #area {{ font-size: {style.font_size:g}px; }}")
    sc = SCHEMES.get(style.scheme, {})
    if "scheme" in parts and sc:
        if sc.get("desk"):
            rules.append(f"body {{ background-color: {sc['desk']}; }}")
        if sc.get("invert"):
            # A dark reading of the same page: every colour inverted, hues kept; nothing disappears.
            rules.append("#wrap { filter: invert(0.9) hue-rotate(180deg); }")
        if sc.get("bar"):
            rules.append(f"#query {{ background-color: {sc['bar']}; color: {sc['bar_text']}; }}")
            rules.append(f"#wrap {{ background-color: {sc['bg']}; }}")
            rules.append(f"#area {{ color: {sc['text']}; }}")
            bw = sc.get("border_width", "1px")
            rules.append(f"#area button {{ background-color: {sc['btn']}; color: {sc['btn_text']}; "
                         f"border: {bw} solid {sc['btn_border']}; border-radius: 3px; }}")
            rules.append(f"#area input[type=text], #area input[type=password], #area textarea, #area input:not([type]) "
                         f"{{ background-color: {sc['field']}; border: {bw} solid {sc['field_border']}; }}")
    return "\n".join(rules)


# Injects (or replaces) our <style> element and returns the layout extent of the task's content: how far visible
# elements reach right and down, and whether the instruction bar's text overflows its box.
APPLY_CSS_JS = """
var css = arguments[0];
var el = document.getElementById('rollscope-style');
if (!el) { el = document.createElement('style'); el.id = 'rollscope-style'; document.head.appendChild(el); }
el.textContent = css;
var wrap = document.getElementById('wrap');
var maxb = 0, maxr = 0;
if (wrap) {
  wrap.querySelectorAll('*').forEach(function (e) {
    var r = e.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) { return; }
    var st = window.getComputedStyle(e);
    if (st.visibility === 'hidden' || st.display === 'none') { return; }
    // Only what is not clipped by a scrolling ancestor counts (lists that scroll are meant to overflow).
    var p = e.parentElement, clipped = false;
    while (p && p !== wrap) {
      var ps = window.getComputedStyle(p);
      if (/(auto|scroll|hidden)/.test(ps.overflow + ps.overflowY + ps.overflowX)) { clipped = true; break; }
      p = p.parentElement;
    }
    if (clipped) { return; }
    maxb = Math.max(maxb, r.bottom); maxr = Math.max(maxr, r.right);
  });
}
var q = document.getElementById('query');
return {bottom: maxb, right: maxr, query_overflow: q ? Math.max(0, q.scrollHeight - q.clientHeight) : 0};
"""


def apply_style(driver: Any, style: Style) -> Style:
    """Inject ``style``'s CSS into the live page; undo what makes content overflow. Returns the style applied.

    The layout is measured with MiniWoB's own CSS first; a font size, then a font, that pushes content further out
    of the 160x210 task area (or makes the instruction overflow its bar) than MiniWoB's own layout does is dropped
    for this episode and named in ``style.dropped``.
    """
    if style.is_plain:
        return style
    base = driver.execute_script(APPLY_CSS_JS, "")
    parts = ["font", "size", "scheme"]
    for drop in (None, "size", "font"):
        if drop:
            parts.remove(drop)
            style.dropped.append(drop)
        got = driver.execute_script(APPLY_CSS_JS, style_css(style, tuple(parts)))
        grows = (got["bottom"] > max(base["bottom"], 210) + 1 or got["right"] > max(base["right"], 160) + 1
                 or got["query_overflow"] > base["query_overflow"] + 1)
        if not grows:
            break
    if "size" in style.dropped:
        style.font_size = None
    if "font" in style.dropped:
        style.font = None
    return style


# Which pointer the page asks for at (x, y): the computed CSS cursor, and for 'auto' what Chromium shows (an I-beam
# over editable fields and over text, else the arrow).
POINTER_ROLE_JS = """
var x = arguments[0], y = arguments[1];
var e = document.elementFromPoint(x, y);
if (!e) { return 'arrow'; }
var c = window.getComputedStyle(e).cursor;
if (c === 'pointer') { return 'hand'; }
if (c === 'text' || c === 'vertical-text') { return 'text'; }
if (c !== 'auto') { return 'arrow'; }
var tag = e.tagName;
if (tag === 'TEXTAREA' || (tag === 'INPUT' && /^(text|password|email|search|number|tel|url|)$/.test(e.type || ''))) {
  return 'text';
}
if (e.isContentEditable) { return 'text'; }
if (tag === 'BUTTON' || tag === 'SELECT' || tag === 'INPUT') { return 'arrow'; }
var r = document.caretRangeFromPoint ? document.caretRangeFromPoint(x, y) : null;
if (r && r.startContainer && r.startContainer.nodeType === 3) {
  var t = r.startContainer, i = r.startOffset, rng = document.createRange();
  var lo = Math.max(0, i - 1), hi = Math.min(t.length, i + 1);
  if (hi > lo) {
    rng.setStart(t, lo); rng.setEnd(t, hi);
    var b = rng.getBoundingClientRect();
    if (x >= b.left - 1 && x <= b.right + 1 && y >= b.top && y <= b.bottom) { return 'text'; }
  }
}
return 'arrow';
"""
