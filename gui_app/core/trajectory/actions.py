"""Parse an action written as text (pyautogui code, BrowserGym calls, free text) into type, point and text.

Parsing is best effort: what cannot be parsed stays in ``Step.action`` with type ``other``.

Actions come from files we did not write, so parsing them is bounded: an action longer than
:data:`MAX_PARSED_CHARS` is read from its first words only (``ast.parse`` of 100 KB of nested operators raised
MemoryError and failed the whole load; a real action is a few hundred characters), and Python's parser giving up on
deep nesting (MemoryError, RecursionError: its own stack, not the machine's memory) means "not code", like a syntax
error. Importers warn about the long ones (:func:`gui_app.core.trajectory.formats.load`).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache

# One call on a line, with any dotted prefix (pyautogui., page.mouse., time.): name and argument source.
_CALL = re.compile(r"(?:[A-Za-z_][A-Za-z_0-9]*\.)*([A-Za-z_][A-Za-z_0-9]*)\s*\((.*)\)\s*;?\s*$", re.S)
_OPEN = re.compile(r"(?:[A-Za-z_][A-Za-z_0-9]*\.)*([A-Za-z_][A-Za-z_0-9]*)\s*\(")

_TYPE_BY_NAME = {
    "click": "click",
    "leftclick": "click",
    "left_click": "click",
    "tap": "click",
    "mouse_click": "click",
    "doubleclick": "double_click",
    "double_click": "double_click",
    "dblclick": "double_click",
    "tripleclick": "double_click",
    "rightclick": "right_click",
    "right_click": "right_click",
    "moveto": "move",
    "move_to": "move",
    "mouse_move": "move",
    "hover": "move",
    "moverel": "move",
    "dragto": "drag",
    "drag_to": "drag",
    "dragrel": "drag",
    "drag": "drag",
    "drag_and_drop": "drag",
    "typewrite": "type",
    "write": "type",
    "type": "type",
    "fill": "type",
    "type_text": "type",
    "input": "type",
    "press": "key",
    "keydown": "key",
    "keyup": "key",
    "keyboard_press": "key",
    "key": "key",
    "hotkey": "hotkey",
    "scroll": "scroll",
    "hscroll": "scroll",
    "vscroll": "scroll",
    "select_option": "select",
    "select": "select",
    "wait": "wait",
    "sleep": "wait",
    "goto": "navigate",
    "go_back": "navigate",
    "go_forward": "navigate",
    "new_tab": "navigate",
    "navigate": "navigate",
    "done": "done",
    "finish": "done",
    "stop": "done",
    "terminate": "done",
    "fail": "fail",
    "send_msg_to_user": "message",
    "answer": "message",
    "report_infeasible": "fail",
}

_BARE = {"DONE": "done", "FAIL": "fail", "WAIT": "wait"}
# A command run in a shell tool rather than typed on screen: "BASH <command>" (Anthropic's bash tool as the OSWorld
# security fork logs it), "$ <command>".
_SHELL = re.compile(r"^(?:BASH|SHELL|\$)\s+(\S.*)$", re.S)
# The longest action parsed as code (characters); longer ones are read from their first words.
MAX_PARSED_CHARS = 10_000
# What Python's parser raises for input it cannot take, besides a syntax error: too deep for its stack.
_UNPARSABLE = (SyntaxError, ValueError, MemoryError, RecursionError)

# Leading words of free-text actions ("Click the OK button"), most specific first.
_WORDS = (("double click", "double_click"), ("double-click", "double_click"), ("right click", "right_click"),
          ("right-click", "right_click"), ("click", "click"), ("type", "type"), ("press", "key"),
          ("scroll", "scroll"), ("select", "select"), ("wait", "wait"))


@dataclass
class ParsedAction:
    type: str = "other"
    x: float | None = None
    y: float | None = None
    text: str | None = None


def _literal(node: ast.AST):
    try:
        return ast.literal_eval(node)
    except (*_UNPARSABLE, TypeError):
        return None


def _is_num(v) -> bool:
    """A finite coordinate or amount: an int beyond a float's range (``10**400`` from a file) is not one."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return False
    return abs(v) < 1e300 if isinstance(v, int) else math.isfinite(v)


def _call_name(call: ast.Call) -> str | None:
    """``pyautogui.click`` / ``page.mouse.click`` / ``click`` -> ``click``."""
    f = call.func
    if isinstance(f, ast.Attribute):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return None


def _from_call(call: ast.Call) -> ParsedAction | None:
    name = _call_name(call)
    kind = _TYPE_BY_NAME.get(name.lower()) if name else None
    if kind is None:
        return None
    pos = [_literal(a) for a in call.args]
    kw = {k.arg: _literal(k.value) for k in call.keywords if k.arg}
    out = ParsedAction(kind)
    if kind == "click":
        # pyautogui.click(button='right') / click(clicks=2) are other kinds of click.
        if kw.get("button") == "right":
            out.type = "right_click"
        elif kw.get("clicks") == 2:
            out.type = "double_click"
    if kind == "scroll":
        # scroll(amount[, x, y]) in pyautogui, scroll(dx, dy) in BrowserGym: positionals are amounts.
        x, y = kw.get("x"), kw.get("y")
        amounts = [str(v) for v in pos if _is_num(v)]
        out.text = ", ".join(amounts) or (str(kw["clicks"]) if _is_num(kw.get("clicks")) else None)
    elif kind == "wait":
        x = y = None
    else:
        x = kw.get("x", pos[0] if pos and _is_num(pos[0]) else None)
        y = kw.get("y", pos[1] if len(pos) > 1 and _is_num(pos[1]) else None)
        if pos and isinstance(pos[0], (tuple, list)) and len(pos[0]) == 2 and all(map(_is_num, pos[0])):
            x, y = pos[0]
    if x is not None and y is not None and _is_num(x) and _is_num(y):
        out.x, out.y = float(x), float(y)
    if kind == "scroll":
        return out
    strings = [p for p in pos if isinstance(p, str)]
    for key in ("text", "message", "value", "keys", "key", "url", "content", "options", "option"):
        v = kw.get(key)
        if isinstance(v, str):
            out.text = v
            break
        if isinstance(v, (list, tuple)) and v and all(isinstance(k, str) for k in v):
            out.text = "+".join(v)
            break
    else:
        first_list = pos[0] if pos and isinstance(pos[0], (list, tuple)) and all(isinstance(k, str) for k in pos[0]) \
            else None
        if kind in ("hotkey", "key") and first_list:
            out.text = "+".join(first_list)  # press(['ctrl', 'c']) / hotkey(['ctrl', 'c'])
        elif kind == "hotkey":
            out.text = "+".join(strings) if strings else None
        elif kind in ("type", "select") and len(strings) >= 2:
            out.text = strings[-1]  # BrowserGym: fill(bid, value), select_option(bid, option)
        elif kind in ("type", "key", "navigate", "message", "select") and strings:
            out.text = strings[0]
    return out


def _calls_in_order(tree: ast.AST):
    """Calls in source order (statement by statement, outer call before the calls in its arguments)."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    return sorted(calls, key=lambda n: (n.lineno, n.col_offset))


def parse_action(action: str) -> ParsedAction:
    """Parse one action string. Code with several calls is parsed from its first recognised call (a move followed
    by a drag is the drag).

    >>> parse_action("pyautogui.click(x=120, y=88)")
    ParsedAction(type='click', x=120.0, y=88.0, text=None)
    >>> parse_action("fill('a31', 'hello')")
    ParsedAction(type='type', x=None, y=None, text='hello')
    """
    src = (action or "").strip()
    if len(src) > MAX_PARSED_CHARS:
        return _from_words(src)
    return replace(_parse(src))  # a copy: the remembered answer is shared


# Runs repeat their actions (a click on the same button, WAIT, scroll(-3)): each distinct one is parsed once. At most
# 1,024 actions of at most MAX_PARSED_CHARS each are kept (10 MB).
@lru_cache(maxsize=1024)
def _parse(src: str) -> ParsedAction:
    if not src:
        return ParsedAction()
    if src.upper() in _BARE:
        return ParsedAction(_BARE[src.upper()])
    shell = _SHELL.match(src)
    if shell:
        return ParsedAction("shell", text=shell.group(1).strip())
    try:
        tree = ast.parse(src)
    except _UNPARSABLE:
        tree = None
    if tree is not None:
        first = None
        for call in _calls_in_order(tree):
            parsed = _from_call(call)
            if parsed is None:
                continue
            if first is None:
                first = parsed
                if parsed.type != "move":
                    return parsed
            elif parsed.type == "drag":
                return parsed  # moveTo(start) then dragTo(end): AgentNet's and OpenCUA's way to write a drag
            else:
                break
        if first is not None:
            return first
    else:
        # Not Python as a whole (a log line, a truncated call): try each line that looks like a call.
        for line in src.splitlines():
            m = _CALL.match(line.strip())
            if not m:
                m = _OPEN.match(line.strip())  # a call cut short: the name still gives the kind
                kind = _TYPE_BY_NAME.get(m.group(1).lower()) if m else None
                if kind:
                    return ParsedAction(kind)
                continue
            try:
                call = ast.parse(f"{m.group(1)}({m.group(2)})", mode="eval").body
            except _UNPARSABLE:
                kind = _TYPE_BY_NAME.get(m.group(1).lower())
                if kind:
                    return ParsedAction(kind)
                continue
            parsed = _from_call(call) if isinstance(call, ast.Call) else None
            if parsed is not None:
                return parsed
    return _from_words(src)


def _from_words(src: str) -> ParsedAction:
    """The kind of an action from its first words: the name of the call it opens with (``pyautogui.scroll(``), or
    the verb of free text (``Click the OK button``); else ``other``."""
    m = _OPEN.match(src[:256])
    kind = _TYPE_BY_NAME.get(m.group(1).lower()) if m else None
    if kind:
        return ParsedAction(kind)
    low = src[:32].lower()
    for word, kind in _WORDS:
        if low.startswith(word):
            return ParsedAction(kind)
    return ParsedAction()
