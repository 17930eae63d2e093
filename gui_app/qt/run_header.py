"""The run header over the video: the open run's instruction and where it came from, or "no instruction" with the
button that gives it one.

A view over :class:`~gui_app.qt.instructions.InstructionController`: it shows the state the controller emits and
acts only through it (the button opens :class:`~gui_app.qt.instructions.InstructionDialog`, which gives the
instruction through the controller).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget

from gui_app.qt.instructions import InstructionController, InstructionDialog, InstructionState

_SHOWN = 300  # characters of an instruction shown in the header; the tooltip holds it whole


class RunHeader(QWidget):
    """The open run's instruction, its source, and "Set instruction…" when it has none of its own.

    Attributes:
        instruction: the instruction's text, or "no instruction".
        source: where it came from ("from its task config", "set by you", …).
        button: "Set instruction…" (no instruction yet) or "Change…" (one given by a user); hidden when the run has
            its own.
        dialog: the dialog the button opened last (None before).
    """

    def __init__(self, controller: InstructionController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        self.dialog: InstructionDialog | None = None
        self.instruction = QLabel(self)
        self.instruction.setTextFormat(Qt.TextFormat.RichText)
        self.instruction.setWordWrap(True)
        self.instruction.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.instruction.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.source = QLabel(self)
        self.source.setStyleSheet("color: #888")
        self.button = QPushButton("Set instruction…", self)
        self.button.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the keyboard stays on the library and the video
        self.button.setToolTip("Type or paste the instruction, or point at a folder of task configs; it holds for "
                               "every run of this task and is kept in the library's catalog (Ctrl+I)")
        self.button.clicked.connect(self.ask)
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 2, 4, 2)
        row.addWidget(self.instruction, 1)
        row.addWidget(self.source)
        row.addWidget(self.button)
        controller.changed.connect(self.show_state)
        self.show_state(controller.state)

    def show_state(self, state: InstructionState | None) -> None:
        """Show ``state`` (None: no run open, the header hides)."""
        self.setVisible(state is not None)
        if state is None:
            return
        text, source = state.own, state.own_source
        if not text and state.given is not None:
            text, source = state.given.instruction, state.given.source_text
        if text:
            shown = text if len(text) <= _SHOWN else text[:_SHOWN - 1] + "…"
            self.instruction.setText(html.escape(shown))
            self.instruction.setToolTip(text)
        else:
            why = "reading…" if state.reading else "the reward model cannot judge this run until it has one"
            self.instruction.setText(f"<b style='color:#c60'>no instruction</b> "
                                     f"<span style='color:#888'>— {why}</span>")
            self.instruction.setToolTip("Its format keeps none (an OSWorld result without its task config)")
        self.source.setText(source)
        self.source.setVisible(bool(source))
        self.button.setVisible(not state.own and not state.reading)
        self.button.setText("Change…" if state.given is not None else "Set instruction…")

    def ask(self) -> InstructionDialog | None:
        """Open the dialog that gives the open run an instruction (Ctrl+I); says why not when no run is open or it
        has its own."""
        state = self.controller.state
        if state is None:
            self.controller.notifier.info("Open a trajectory first")
            return None
        if state.own:
            self.controller.notifier.info("This run has its own instruction")
            return None
        self.dialog = InstructionDialog(self.controller, self.window())
        self.dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.dialog.destroyed.connect(lambda _o=None: setattr(self, "dialog", None))
        self.dialog.open()
        return self.dialog
