"""The shortcut table: complete, unique, wired to real handlers, and listed by the "?" dialog."""

from __future__ import annotations

from collections import Counter

from PySide6.QtGui import QKeySequence

from gui_app.qt.action_table import ACTIONS, MENUS, ShortcutsDialog, normalized_shortcuts
from gui_app.qt.keyboard import LABEL_KEYS
from gui_app.qt.main_window import MainWindow


REQUIRED = {
    "Space": "play_pause", "Left": "step_prev", "Right": "step_next", ",": "frame_prev", ".": "frame_next",
    "J": "next_trajectory", "K": "prev_trajectory", "+": "speed_up", "-": "speed_down", "Ctrl+F": "search",
    "?": "shortcuts", "Ctrl+O": "open_folder", "O": "toggle_overlay", "Ctrl+L": "toggle_labels", "Z": "zoom_fit",
    "Ctrl+Q": "quit", "Ctrl+R": "score_current", "Ctrl+Shift+R": "score_library",
}


def test_every_shortcut_is_unique():
    keys = Counter(k for k, _ in normalized_shortcuts())
    assert [k for k, n in keys.items() if n > 1] == []
    names = Counter(a.name for a in ACTIONS)
    assert [n for n, c in names.items() if c > 1] == []


def test_required_shortcuts_are_bound():
    bound = dict(normalized_shortcuts())
    for key, name in REQUIRED.items():
        assert bound[QKeySequence(key).toString(QKeySequence.SequenceFormat.PortableText)] == name, key


def test_every_action_has_a_description_a_menu_and_a_handler(qtbot):
    win = MainWindow()  # a dotted handler names a method of one of the window's parts (run_header.ask)
    qtbot.addWidget(win)
    for a in ACTIONS:
        assert a.description and a.text and a.shortcuts, a.name
        assert a.menu in MENUS, a.name
        handler = win
        for part in a.handler.split("."):
            handler = getattr(handler, part, None)
        assert callable(handler), a.handler


def test_question_mark_dialog_lists_every_action(qtbot):
    dialog = ShortcutsDialog()
    qtbot.addWidget(dialog)
    rows = dialog.rows()
    assert len(rows) == len(LABEL_KEYS) + len(ACTIONS)
    # The annotator's keys first: they are not actions, but the dialog must list them.
    for (keys, label, description), (k, name, what) in zip(rows, LABEL_KEYS):
        assert (keys, label, description) == (k, f"Labelling: {name}", what)
    assert any(r[0] == "S, F, U" for r in rows) and any(r[0] == "Ctrl+Enter" for r in rows)
    for (keys, label, description), a in zip(rows[len(LABEL_KEYS):], ACTIONS):
        assert description == a.description
        assert a.text.replace("&", "").rstrip("…") in label
        for k in a.shortcuts:
            assert QKeySequence(k).toString(QKeySequence.SequenceFormat.NativeText) in keys


def test_main_window_binds_the_table(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    assert set(win.action_map) == {a.name for a in ACTIONS}
    for a in ACTIONS:
        act = win.action_map[a.name]
        assert [s.toString() for s in act.shortcuts()] == [QKeySequence(s).toString() for s in a.shortcuts]
        assert act in win.actions()  # window-wide shortcuts
    menu_texts = [m.text().replace("&", "") for m in win.menuBar().actions()]
    assert menu_texts == list(MENUS)
    dialog = win.show_shortcuts()
    qtbot.waitUntil(dialog.isVisible)
    assert len(dialog.rows()) == len(LABEL_KEYS) + len(ACTIONS)
    dialog.close()
