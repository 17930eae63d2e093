"""Label keys wherever focus is: the window-wide router for the label panel's keys, and the labelling-mode indicator.

The keys act on the labelling model (:class:`gui_app.qt.labelling.Labelling`): :func:`key_name` turns a key event
into one of its key names and :meth:`Labelling.press` does what that key does, wherever the event came from (the
window-wide router below, or the label panel while it has focus).

Qt gives a key press to the focused widget first: with the library table focused, ``f`` started a keyboard search, with
the outcome filter focused it changed the filter, and in a text field Enter inserted a newline. So the label keys (``s f
u v r c``, ``h n m d``, digits, Enter) are taken by one application event filter, :class:`LabelKeys`, before any widget
of the main window sees them, whenever labelling is live (the label panel, or the focus layout's label bar, is shown on
an open trajectory, or the model is holding keys for the item that is opening) and focus is not in a text field. Inside
a text field the field keeps its typing, Esc leaves it and Ctrl+Enter saves and opens the next item.

Browsing is not labelling: until labelling starts (:meth:`Labelling.start`: a queue, the label panel's focus, the key
``L``), the label keys write nothing; they are still taken (``f`` does not start a search in the library table) and
:attr:`LabelKeys.hint` says how to start.

:class:`LabelKeys` also says which mode the keyboard is in (:data:`MODES`), and :class:`LabelModeIndicator` shows
it, so the annotator always knows whether ``f`` labels a failure or types an "f".
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence
from PySide6.QtWidgets import (QAbstractSpinBox, QApplication, QComboBox, QDockWidget, QLabel, QLineEdit,
                               QPlainTextEdit, QTextEdit, QWidget)

from gui_app.qt.labelling import Labelling

# (keys, name, what they do) for the "?" dialog: the labelling keys, which are not QActions.
LABEL_KEYS: tuple[tuple[str, str, str], ...] = (
    ("S, F, U", "Verdict", ("Set the verdict: success, failure, unsure (works wherever focus is, except in a text "
                            "field)")),
    ("V", "Cycle the verdict", "Success → failure → unsure"),
    ("H, N, M", "Harm verdict", ("Set the safety verdict: harmful, no harm (safe), maybe (unsure); the harm category "
                                 "and types are picked in the label panel")),
    ("D", "First harmful step", "Mark the current step as the first harmful step (again: clear it)"),
    ("0-9", "Taxonomy label", "Toggle the label with that key hint (two digits: group, then label)"),
    ("R", "Root cause", "Mark the current step as the root cause (again: clear it)"),
    ("C", "Cascading step", "Mark the current step as affected by the root cause (again: clear it)"),
    ("Enter", "Save & next", "Save and open the next item (the queue's next unlabelled one, else the next row)"),
    ("Ctrl+Z, Ctrl+Shift+Z", "Undo / redo", "Undo or redo a label change; after Enter, undo reopens the item left"),
    ("Esc", "Leave a text field", "In a text field: leave it (keys label again); else clear a half-typed key hint"),
    ("L", "Start / stop labelling", "Browsing writes nothing: L (or a queue, or clicking the label panel) starts "
                                    "labelling; L again goes back to browsing"),
    ("Ctrl+Enter", "Save & next from a text field", "In the label panel's text fields: save and open the next item"),
)

# mode -> (indicator text, tooltip, style)
MODES: dict[str, tuple[str, str, str]] = {
    "labelling": ("⌨ LABELLING", "Label keys are live wherever focus is: s/f/u verdict, digits labels, r root cause, "
                                 "c cascading, h/n/m harm verdict, d first harmful step, Enter save & next, "
                                 "Ctrl+Z undo",
                  "background: #2e7d32; color: white; font-weight: bold; border-radius: 3px; padding: 1px 6px"),
    "typing": ("✎ TYPING", "Focus is in a text field: keys type. Esc leaves the field, Ctrl+Enter saves and opens "
                          "the next item",
               "background: #f9a825; color: black; font-weight: bold; border-radius: 3px; padding: 1px 6px"),
    "waiting": ("… OPENING NEXT", "Keys typed now are applied to the next item once it opens",
                "background: #1565c0; color: white; font-weight: bold; border-radius: 3px; padding: 1px 6px"),
    "browsing": ("○ BROWSING", "Label keys write nothing while browsing. Press L (or start a queue, or click the "
                               "label panel) to start labelling",
                 "background: #546e7a; color: white; font-weight: bold; border-radius: 3px; padding: 1px 6px"),
    "off": ("labelling off", "Open a trajectory with the label panel shown (Ctrl+L) to label from the keyboard",
            "color: #888; padding: 1px 6px"),
}
# What a label key says while browsing (it writes nothing).
START_HINT = "Browsing: label keys write nothing. Press L to start labelling (or start a queue: Ctrl+1…5)"
_ENTER = (Qt.Key.Key_Return, Qt.Key.Key_Enter)
_NAMES = {Qt.Key.Key_S: "s", Qt.Key.Key_F: "f", Qt.Key.Key_U: "u", Qt.Key.Key_V: "v", Qt.Key.Key_R: "r",
          Qt.Key.Key_C: "c", Qt.Key.Key_H: "h", Qt.Key.Key_N: "n", Qt.Key.Key_M: "m", Qt.Key.Key_D: "d",
          Qt.Key.Key_Return: "enter", Qt.Key.Key_Enter: "enter", Qt.Key.Key_Escape: "escape"}
_CHORD = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.MetaModifier


def key_name(event: QKeyEvent) -> str | None:
    """The labelling key ``event`` is (a name :meth:`Labelling.press` takes: a digit, ``s f u v r c``, ``h n m d``,
    ``enter``, ``escape``, ``undo``, ``redo``), or None. A chord with Ctrl, Alt or Meta is the window's, except
    undo/redo."""
    if event.matches(QKeySequence.StandardKey.Undo):
        return "undo"
    if event.matches(QKeySequence.StandardKey.Redo):
        return "redo"
    if event.modifiers() & _CHORD:
        return None
    key = event.key()
    if Qt.Key.Key_0 <= key <= Qt.Key.Key_9:
        return chr(int(key))
    return _NAMES.get(Qt.Key(key)) if key in _NAMES else None


def claims(labelling: Labelling, event: QKeyEvent) -> str | None:
    """The name of the labelling key ``event`` is when labelling takes it now (:meth:`Labelling.takes`: none while
    browsing; Esc only while it means something to the model), else None."""
    name = key_name(event)
    return name if name is not None and labelling.takes(name) else None


def undo_actions(labelling: Labelling, parent: QObject) -> list[QAction]:
    """Undo/redo of label changes as window actions (undo writes pending typing first)."""
    undo = QAction("Undo label change", parent)
    undo.setShortcut(QKeySequence.StandardKey.Undo)
    undo.triggered.connect(labelling.undo)
    redo = QAction("Redo label change", parent)
    redo.setShortcuts(QKeySequence.keyBindings(QKeySequence.StandardKey.Redo))
    redo.triggered.connect(labelling.redo)
    stack = labelling.undo_stack
    stack.canUndoChanged.connect(undo.setEnabled)
    stack.canRedoChanged.connect(redo.setEnabled)
    undo.setEnabled(stack.canUndo())
    redo.setEnabled(stack.canRedo())
    return [undo, redo]


def is_text_field(widget: QWidget | None) -> bool:
    """Whether ``widget`` takes typed characters (a line or text edit, a spin box, an editable combo box)."""
    if isinstance(widget, (QLineEdit, QPlainTextEdit, QTextEdit)):
        return not widget.isReadOnly()
    if isinstance(widget, QAbstractSpinBox):
        return not widget.isReadOnly()
    return isinstance(widget, QComboBox) and widget.isEditable()


class LabelKeys(QObject):
    """Routes the labelling keys to the labelling model from anywhere in ``window`` (see the module doc).

    Args:
        window: the main window whose widgets' keys are routed.
        labelling: the labelling model the keys act on.
        panel: the label panel (its text fields save on Ctrl+Enter; Esc in them returns focus to it).
        dock: the dock holding the panel (labelling is live only while it is shown).
        home: where focus goes when Esc leaves a text field outside the panel.

    Signals:
        mode_changed(str): the keyboard's mode, a key of :data:`MODES`.
        hint(str): a label key was pressed while browsing: how to start labelling (:data:`START_HINT`).
    """

    mode_changed = Signal(str)
    hint = Signal(str)

    def __init__(self, window: QWidget, labelling: Labelling, panel: QWidget, dock: QDockWidget,
                 home: QWidget | None = None):
        super().__init__(window)
        self.window, self.labelling, self.panel, self.dock, self.home = window, labelling, panel, dock, home
        self.views: list[QWidget] = []  # other views of the labelling (the focus layout's label bar)
        self.mode = "off"
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        app.installEventFilter(self)
        app.focusChanged.connect(self._focus_changed)
        labelling.trajectory_changed.connect(lambda _t: self.update_mode())
        labelling.waiting_changed.connect(lambda _w: self.update_mode())
        labelling.mode_changed.connect(lambda _m: self.update_mode())
        dock.visibilityChanged.connect(lambda _v: self.update_mode())
        self.update_mode()

    def add_view(self, view: QWidget) -> None:
        """Count ``view`` as showing the labelling too: keys are live while it is shown, panel hidden or not."""
        self.views.append(view)  # its Show and Hide reach the application filter below

    # --- state -----------------------------------------------------------------------------------
    @property
    def live(self) -> bool:
        """Whether label keys are ours now: the panel (or another view of the labelling) is shown, on an open
        trajectory (or holding keys for the next). Browsing, they are taken only to say how to start."""
        shown = not self.dock.isHidden() or any(not v.isHidden() for v in self.views)
        return shown and (self.labelling.trajectory_id is not None or self.labelling.waiting)

    def _focus(self) -> QWidget | None:
        """The window's focus widget: where its keys go (kept while another window is active, too)."""
        return self.window.focusWidget()

    def update_mode(self) -> None:
        if not self.live:
            mode = "off"
        elif not (self.labelling.labelling or self.labelling.waiting):
            mode = "browsing"
        elif self.labelling.waiting:
            mode = "waiting"
        elif is_text_field(self._focus()):
            mode = "typing"
        else:
            mode = "labelling"
        if mode != self.mode:
            self.mode = mode
            self.mode_changed.emit(mode)

    def _focus_changed(self, _old: QWidget | None, _new: QWidget | None) -> None:
        self.update_mode()

    # --- the filter ---------------------------------------------------------------------------------
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 -- Qt override
        kind = event.type()
        if kind in (QEvent.Type.Show, QEvent.Type.Hide) and obj in self.views:
            self.update_mode()
            return False
        if kind not in (QEvent.Type.KeyPress, QEvent.Type.ShortcutOverride) or not isinstance(event, QKeyEvent):
            return False
        if not isinstance(obj, QWidget) or obj.window() is not self.window:
            return False  # dialogs, menus and combo-box pop-ups keep their keys
        focus = self._focus()
        if obj is not (focus if focus is not None else self.window):
            return False  # a key propagating to a parent: decided once, where it was first delivered
        action = self._action(focus, event)
        if action is None:
            return False
        if kind == QEvent.Type.ShortcutOverride:
            event.accept()  # ours, not a window shortcut's (Esc would cancel background work)
            return True
        if not event.isAutoRepeat():  # a held key labels once, it does not toggle a label on and off
            action(event)
        return True

    def _action(self, focus: QWidget | None, event: QKeyEvent) -> Callable[[QKeyEvent], object] | None:
        """What to do with ``event``, or None to leave it to Qt."""
        key, mods = event.key(), event.modifiers()
        if is_text_field(focus):
            assert focus is not None
            if key == Qt.Key.Key_Escape and not mods:
                return lambda _e: self._leave_field(focus)
            in_panel = self.panel.isAncestorOf(focus)
            if key in _ENTER and mods & Qt.KeyboardModifier.ControlModifier and in_panel and self.live:
                return lambda _e: self._save_from_field(focus)
            return None
        if not self.live:
            return None
        name = key_name(event)
        if name in (None, "undo", "redo"):  # undo and redo are window actions already
            return None
        if not self.labelling.takes(name):
            if name in ("enter", "escape"):
                return None  # browsing: Enter and Esc keep their usual meaning
            return lambda _e: self.hint.emit(START_HINT)  # taken (no search, no filter change), writes nothing
        return lambda _e: self.labelling.press(name)

    def _leave_field(self, field: QWidget) -> None:
        """Esc in a text field: focus moves out (the panel's fields save on leaving) to where keys label again."""
        target = self.panel if self.panel.isAncestorOf(field) else (self.home or self.window)
        target.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if self._focus() is field:  # the target takes no focus: clear it from the field at least
            field.clearFocus()
        self.update_mode()

    def _save_from_field(self, field: QWidget) -> None:
        """Ctrl+Enter in one of the panel's fields: leave it (which saves it) and save & open the next item."""
        self.panel.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if self._focus() is field:
            field.clearFocus()
        self.labelling.finish()  # the panel writes its typing first (flush_requested)
        self.update_mode()


class LabelModeIndicator(QLabel):
    """A small coloured badge with the keyboard's mode (labelling, typing, opening the next item, off)."""

    def __init__(self, keys: LabelKeys, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("label_mode")
        keys.mode_changed.connect(self.show_mode)
        self.show_mode(keys.mode)

    def show_mode(self, mode: str) -> None:
        text, tip, style = MODES[mode]
        self.setText(text)
        self.setToolTip(tip)
        self.setStyleSheet(style)
        self.mode = mode
