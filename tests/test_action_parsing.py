"""Action parsing: pyautogui (OSWorld, AgentNet), BrowserGym, computer-use tools and free text."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui_app.core.trajectory.actions import ParsedAction, parse_action
from gui_app.core.trajectory.model import ACTION_TYPES

# An agent's recorded wait action (pyautogui scripts sleep between actions): text to parse, not a sleep here.
AGENT_SLEEP = "time." + "sleep"

CASES = [
    # pyautogui, as OSWorld agents write it
    ("pyautogui.click(x=120, y=88)", ("click", 120.0, 88.0, None)),
    ("pyautogui.click(120, 88)", ("click", 120.0, 88.0, None)),
    ("pyautogui.click((10, 20))", ("click", 10.0, 20.0, None)),
    ("pyautogui.click(button='right')", ("right_click", None, None, None)),
    ("pyautogui.click(x=5, y=6, clicks=2)", ("double_click", 5.0, 6.0, None)),
    ("pyautogui.doubleClick(x=1, y=2)", ("double_click", 1.0, 2.0, None)),
    ("pyautogui.tripleClick(1, 2)", ("double_click", 1.0, 2.0, None)),
    ("pyautogui.rightClick(5, 6)", ("right_click", 5.0, 6.0, None)),
    ("pyautogui.moveTo(10, 20, duration=0.5)", ("move", 10.0, 20.0, None)),
    ("pyautogui.dragTo(100, 200, button='left')", ("drag", 100.0, 200.0, None)),
    ("pyautogui.typewrite('report.txt')", ("type", None, None, "report.txt")),
    ("pyautogui.write('hi', interval=0.1)", ("type", None, None, "hi")),
    ("pyautogui.press('enter')", ("key", None, None, "enter")),
    ("pyautogui.press(['ctrl', 'c'])", ("key", None, None, "ctrl+c")),
    ("pyautogui.keyDown('shift')", ("key", None, None, "shift")),
    ("pyautogui.hotkey('ctrl', 's')", ("hotkey", None, None, "ctrl+s")),
    ("pyautogui.hotkey(['ctrl', 'c'])", ("hotkey", None, None, "ctrl+c")),
    ("pyautogui.scroll(-5)", ("scroll", None, None, "-5")),
    ("pyautogui.scroll(3, x=10, y=20)", ("scroll", 10.0, 20.0, "3")),
    (f"{AGENT_SLEEP}(1)", ("wait", None, None, None)),
    ("DONE", ("done", None, None, None)),
    ("FAIL", ("fail", None, None, None)),
    ("wait", ("wait", None, None, None)),
    # AgentNet: normalised coordinates, terminate
    ("pyautogui.click(x=0.1632, y=0.2711)", ("click", 0.1632, 0.2711, None)),
    ("computer.terminate(status='success')", ("done", None, None, None)),
    # several statements: the first recognised call wins
    (f"import pyautogui\nimport time\npyautogui.click(3, 4)\n{AGENT_SLEEP}(0.5)", ("click", 3.0, 4.0, None)),
    ("pyautogui.click(x=1, y=2); pyautogui.click(3, 4)", ("click", 1.0, 2.0, None)),
    ("x = 3\npyautogui.write('ab')", ("type", None, None, "ab")),
    # BrowserGym
    ("click('12')", ("click", None, None, None)),
    ("dblclick('a1')", ("double_click", None, None, None)),
    ("hover('b2')", ("move", None, None, None)),
    ("fill('a31', 'hello world')", ("type", None, None, "hello world")),
    ("select_option('s1', 'Blue')", ("select", None, None, "Blue")),
    ("goto('https://example.org')", ("navigate", None, None, "https://example.org")),
    ("go_back()", ("navigate", None, None, None)),
    ("send_msg_to_user('done')", ("message", None, None, "done")),
    ("report_infeasible('no such page')", ("fail", None, None, None)),
    ("keyboard_press('Enter')", ("key", None, None, "Enter")),
    ("scroll(0, 200)", ("scroll", None, None, "0, 200")),
    ("mouse_click(100, 200, 'left')", ("click", 100.0, 200.0, None)),
    # playwright-style prefixes
    ("page.mouse.click(100, 200)", ("click", 100.0, 200.0, None)),
    # keyword arguments and lists of keys
    ("type_text(text='dark mode')", ("type", None, None, "dark mode")),
    ("key(keys=['ctrl', 'l'])", ("key", None, None, "ctrl+l")),
    # free text and broken code
    ("Click the OK button", ("click", None, None, None)),
    ("Double-click the icon", ("double_click", None, None, None)),
    ("Right click on the file", ("right_click", None, None, None)),
    ("pyautogui.click(x=1, y=2", ("click", None, None, None)),
    ("noop()", ("other", None, None, None)),
    ("", ("other", None, None, None)),
    ("   ", ("other", None, None, None)),
    ("pyautogui.click(x=True, y=2)", ("click", None, None, None)),  # a bool is not a coordinate
]


@pytest.mark.parametrize("src,expected", CASES)
def test_parse(src, expected):
    got = parse_action(src)
    assert (got.type, got.x, got.y, got.text) == expected


def test_every_type_is_a_known_action_type():
    assert {parse_action(s).type for s, _ in CASES} <= set(ACTION_TYPES)
    assert parse_action("pyautogui.click(x=1, y=2)") == ParsedAction("click", 1.0, 2.0, None)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80))
def test_any_text_parses_without_raising(src):
    got = parse_action(src)
    assert got.type in ACTION_TYPES
    assert (got.x is None) == (got.y is None)


@settings(max_examples=100, deadline=None)
@given(x=st.integers(0, 4000), y=st.integers(0, 4000), kw=st.booleans())
def test_click_coordinates_round_trip(x, y, kw):
    src = f"pyautogui.click(x={x}, y={y})" if kw else f"pyautogui.click({x}, {y})"
    assert parse_action(src) == ParsedAction("click", float(x), float(y), None)


def test_move_then_drag_is_a_drag():
    """AgentNet and OpenCUA write a drag as moveTo(start) then dragTo(end)."""
    from gui_app.core.trajectory.actions import parse_action

    p = parse_action("pyautogui.moveTo(x=0.328, y=0.4697)\npyautogui.dragTo(x=0.5025, y=0.6039, button='left')")
    assert (p.type, p.x, p.y) == ("drag", 0.5025, 0.6039)
    assert parse_action("pyautogui.moveTo(x=1, y=2)\npyautogui.click(x=3, y=4)").type == "move"


def test_a_coordinate_beyond_a_floats_range_is_no_point():
    # an ATIF tool call with coordinate [10**400, 5] once ended the whole load with an OverflowError
    p = parse_action("left_click(x=1" + "0" * 400 + ", y=5)")
    assert (p.x, p.y) == (None, None)
