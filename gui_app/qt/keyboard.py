"""Label keys wherever focus is: the window-wide router for the label panel's keys, and the labelling-mode indicator.

Qt gives a key press to the focused widget first: with the library table focused, ``f`` started a keyboard search,
with the outcome filter focused it changed the filter, and in a text field Enter inserted a newline. So the label
keys (``s f u v r c``, digits, Enter) are taken by one application event filter, :class:`LabelKeys`, before any
widget of the main window sees them, whenever labelling is live (the label panel is shown on an open trajectory, or
is holding keys for the item that is opening) and focus is not in a text field. Inside a text field the field keeps
its typing, Esc leaves it and Ctrl+Enter saves and opens the next item.

:class:`LabelKeys` also says which mode the keyboard is in (:data:`MODES`), and :class:`LabelModeIndicator` shows
it, so the annotator always knows whether ``f`` labels a failure or types an "f".
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import (QAbstractSpinBox, QApplication, QComboBox, QDockWidget, QLabel, QLineEdit,
                               QPlainTextEdit, QTextEdit, QWidget)

from gui_app.qt.label_panel import LabelPanel

# mode -> (indicator text, tooltip, style)
MODES: dict[str, tuple[str, str, str]] = {
    "labelling": ("⌨ LABELLING", "Label keys are live wherever focus is: s/f/u verdict, digits labels, r root cause, "
                                 "c cascading, Enter save & next, Ctrl+Z undo",
                  "background: #2e7d32; color: white; font-weight: bold; border-radius: 3px; padding: 1px 6px"),
    "typing": ("✎ TYPING", "Focus is in a text field: keys type. Esc leaves the field, Ctrl+Enter saves and opens "
                          "the next item",
               "background: #f9a825; color: black; font-weight: bold; border-radius: 3px; padding: 1px 6px"),
    "waiting": ("… OPENING NEXT", "Keys typed now are applied to the next item once it opens",
                "background: #1565c0; color: white; font-weight: bold; border-radius: 3px; padding: 1px 6px"),
    "off": ("labelling off", "Open a trajectory with the label panel shown (Ctrl+L) to label from the keyboard",
            "color: #888; padding: 1px 6px"),
}
_ENTER = (Qt.Key.Key_Return, Qt.Key.Key_Enter)


def is_text_field(widget: QWidget | None) -> bool:
    """Whether ``widget`` takes typed characters (a line or text edit, a spin box, an editable combo box)."""
    if isinstance(widget, (QLineEdit, QPlainTextEdit, QTextEdit)):
        return not widget.isReadOnly()
    if isinstance(widget, QAbstractSpinBox):
        return not widget.isReadOnly()
    return isinstance(widget, QComboBox) and widget.isEditable()


class LabelKeys(QObject):
    """Routes the label panel's keys to it from anywhere in ``window`` (see the module doc).

    Args:
        window: the main window whose widgets' keys are routed.
        panel: the label panel.
        dock: the dock holding the panel (labelling is live only while it is shown).
        home: where focus goes when Esc leaves a text field outside the panel.

    Signals:
        mode_changed(str): the keyboard's mode, a key of :data:`MODES`.
    """

    mode_changed = Signal(str)

    def __init__(self, window: QWidget, panel: LabelPanel, dock: QDockWidget, home: QWidget | None = None):
        super().__init__(window)
        self.window, self.panel, self.dock, self.home = window, panel, dock, home
        self.mode = "off"
        app = QApplication.instance()
        assert isinstance(app, QApplication)
        app.installEventFilter(self)
        app.focusChanged.connect(self._focus_changed)
        panel.session.trajectory_changed.connect(lambda _t: self.update_mode())
        panel.waiting_changed.connect(lambda _w: self.update_mode())
        dock.visibilityChanged.connect(lambda _v: self.update_mode())
        self.update_mode()

    # --- state -----------------------------------------------------------------------------------
    @property
    def live(self) -> bool:
        """Whether label keys act now: the panel is shown, on an open trajectory (or holding keys for the next)."""
        return not self.dock.isHidden() and (self.panel.trajectory_id is not None or self.panel.waiting)

    def _focus(self) -> QWidget | None:
        """The window's focus widget: where its keys go (kept while another window is active, too)."""
        return self.window.focusWidget()

    def update_mode(self) -> None:
        if not self.live:
            mode = "off"
        elif self.panel.waiting:
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
        if not self.live or not self.panel.handles(event):
            return None
        if event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo):
            return None  # undo and redo are window actions already
        return self.panel.handle_key

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
        self.panel.commit_texts()
        self.panel.finish()
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
