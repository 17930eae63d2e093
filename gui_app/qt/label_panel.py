"""The label panel: a view over the labelling model, to label the open trajectory while its video plays.

The panel holds no labelling state: the record, whether it is saved, the writes on their way, undo, the keys held
for the next item and read-only mode are the :class:`~gui_app.qt.labelling.Labelling` model's. The panel subscribes
to its signals and changes state only through its setters, as napari's ``QtDims`` sits over ``Dims``. What the panel
holds is what a view holds: text being typed, which it writes through the model when typing pauses
(:data:`TEXT_SAVE_MS`), focus leaves, or the model asks for it (``flush_requested``: before undo, save & next, or
moving to another trajectory).

Browsing writes nothing: clicking in the panel or moving focus into it is the explicit act that starts labelling
(:meth:`Labelling.start`). :class:`LabelBar` is the one-line view the focus layout shows instead of the panel.

The safety verdict sits beside the success verdict: harm verdict buttons under the verdict's, and a "Safety" group
with the harm category, the harm types (the bundled ``harm`` taxonomy, ticked by clicking: the digits are the failure
taxonomy's) and the first harmful step.

Keys (:data:`gui_app.qt.keyboard.LABEL_KEYS`): in the app they work wherever focus is, except inside a text field,
through :class:`gui_app.qt.keyboard.LabelKeys`; the bare panel takes them while it has focus. Either way they act on
the model (:meth:`Labelling.press`):
    digits   toggle the taxonomy label with that key hint (two-digit hints: group digit, then label digit)
    s f u    set the verdict to success / failure / unsure;  v cycles it
    r        mark the current step (``session.step``) as the root cause (again: clear it)
    c        mark the current step as affected by the root cause (cascading; again: clear it)
    h n m    set the safety verdict to harmful / safe (no harm) / unsure (maybe)
    d        mark the current step as the first harmful step (again: clear it)
    Enter    save (time spent) and ask for the next queue item (:attr:`Labelling.next_requested`)
    Ctrl+Z   undo (after Enter too: the item just left reopens);  Ctrl+Shift+Z / Ctrl+Y redo
    Esc      clears a half-typed key hint
    In a text field: Esc leaves it, Ctrl+Enter saves and opens the next item.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QFocusEvent, QKeyEvent, QMouseEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QDialog,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gui_app.core.annotation import taxonomy as taxonomy_mod
from gui_app.core.store.record import HARM_VERDICTS, VERDICTS, Annotation
from gui_app.core.annotation.taxonomy import Taxonomy
from gui_app.core.trajectory.model import Trajectory, step_text
from gui_app.qt.keyboard import claims, key_name
from gui_app.qt.labelling import HARM_VERDICT_KEYS, Labelling

TEXT_SAVE_MS = 600  # typing pause after which a text field is written
_NO_ROOT_CAUSE = "none (press r)"  # short: the row stays whole in a narrow column
_NO_FIRST_HARM = "none (press d)"

# save state -> (text, style) of the state label; "{reason}" and "{time}" are filled in
_STATE_TEXT: dict[str, tuple[str, str]] = {
    "saved": ("✓ saved {time}", "color: #2e7d32"),
    "pending": ("… saving when you pause", "color: #8d6e00"),
    "saving": ("… saving", "color: #8d6e00"),
    "error": ("✗ NOT SAVED: {reason}", "color: #c62828; font-weight: bold"),
    "readonly": ("READ-ONLY: the label store cannot be reached; trying again", "color: #c62828; font-weight: bold"),
    "writable": ("✓ label store back {time}", "color: #2e7d32"),
}


class LabelPanel(QWidget):
    """The record of what :attr:`labelling` labels, as widgets that change it through the model.

    Args:
        labelling: the labelling model shown.
    """

    def __init__(self, labelling: Labelling, parent: QWidget | None = None):
        super().__init__(parent)
        self.labelling = labelling
        self._refreshing = False  # the widgets are being set from the model: their signals are not edits
        self._comment_step = -1  # the step whose comment the comment field holds
        self._build()
        labelling.trajectory_changed.connect(self._on_trajectory)
        labelling.record_changed.connect(self._show_record)
        labelling.state_changed.connect(self._show_state)
        labelling.key_hint_changed.connect(self.keys_label.setText)
        labelling.flush_requested.connect(self.commit_typing)
        labelling.session.step_changed.connect(self._on_step)
        labelling.session.loading_changed.connect(lambda: self._show_record(labelling.record))
        self._on_trajectory(labelling.trajectory)
        self._show_record(labelling.record)
        self._show_state(labelling.save_state, labelling.save_reason)

    # --- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        model = self.labelling
        lay = QVBoxLayout(self)
        self.title = QLabel("No trajectory open")
        self.title.setWordWrap(True)
        self.state_label = QLabel("")
        self.state_label.setObjectName("autosave_state")
        top = QHBoxLayout()  # the keyboard's mode badge (set_mode_widget), then whether the last change is saved
        top.addStretch(1)
        top.addWidget(self.state_label)
        self._top = top
        lay.addLayout(top)
        lay.addWidget(self.title)

        row = QHBoxLayout()
        self.verdict_group = QButtonGroup(self)
        self.verdict_group.setExclusive(False)  # so 'no verdict' can be shown too
        self.verdict_buttons: dict[str, QPushButton] = {}
        for v, key in zip(VERDICTS, "sfu", strict=True):
            b = QPushButton(f"{v.capitalize()} ({key})")
            b.setCheckable(True)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(lambda _=False, v=v: model.set_verdict(v))
            self.verdict_group.addButton(b)
            self.verdict_buttons[v] = b
            row.addWidget(b)
        lay.addLayout(row)
        harm_row = QHBoxLayout()  # the safety verdict, beside success: its own keys
        self.harm_buttons: dict[str, QPushButton] = {}
        harm_key = {v: k for k, v in HARM_VERDICT_KEYS.items()}
        for v in HARM_VERDICTS:
            b = QPushButton(f"{v.capitalize()} ({harm_key[v]})")
            b.setObjectName(f"harm_{v}")
            b.setCheckable(True)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.setToolTip(f"Safety verdict: {v} (key {harm_key[v]})")
            b.clicked.connect(lambda _=False, v=v: model.set_harm_verdict(v))
            self.harm_buttons[v] = b
            harm_row.addWidget(b)
        lay.addLayout(harm_row)

        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Label", "Key"])
        self.tree.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # digits must reach the panel, not keyboard search
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.tree.itemChanged.connect(self._on_item_changed)
        self.keys_label = QLabel("")
        lay.addWidget(self.tree, 1)
        lay.addWidget(self.keys_label)

        form = QFormLayout()
        # A narrow column (a fifth of a 1920-pixel window) keeps every row whole: long rows wrap under their title.
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        rc = QHBoxLayout()
        self.root_label = QLabel(_NO_ROOT_CAUSE)
        self.root_label.setToolTip("r marks the step on screen as the root cause (again: clears it)")
        clear = QPushButton("Clear")
        clear.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        clear.clicked.connect(lambda: model.set_root_cause(None))
        rc.addWidget(self.root_label, 1)
        rc.addWidget(clear)
        form.addRow("Root cause step", rc)
        self.module_combo = QComboBox()
        self.error_combo = QComboBox()
        for c in (self.module_combo, self.error_combo):
            # As narrow as the panel needs: the list that pops up is as wide as its longest name anyway.
            c.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            c.setMinimumContentsLength(12)
            c.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.module_combo.activated.connect(lambda _i: model.set_field("root_cause_module",
                                                                       self.module_combo.currentData()))
        self.error_combo.activated.connect(lambda _i: model.set_field("root_cause_error_type",
                                                                      self.error_combo.currentData()))
        form.addRow("Module", self.module_combo)
        form.addRow("Error type", self.error_combo)
        self.texts: dict[str, QPlainTextEdit] = {}
        for name, title in (("evidence", "Evidence"), ("correction_guidance", "Correction"), ("notes", "Notes")):
            edit = QPlainTextEdit()
            edit.setTabChangesFocus(True)
            edit.setMaximumHeight(60)
            edit.textChanged.connect(self._text_edited)
            edit.installEventFilter(self)
            self.texts[name] = edit
            form.addRow(title, edit)
        self.comment_edit = QLineEdit()
        self.comment_edit.setPlaceholderText("comment on the current step")
        self.comment_edit.editingFinished.connect(lambda: self._commit_comment_for(self._comment_step))
        form.addRow("Step comment", self.comment_edit)
        self.cascade_label = QLabel("none (c marks the current step)")
        self.cascade_label.setWordWrap(True)
        form.addRow("Cascading", self.cascade_label)
        self.confidence = QDoubleSpinBox()
        self.confidence.setRange(-0.05, 1.0)  # the value below 0 reads "unset"
        self.confidence.setSingleStep(0.05)
        self.confidence.setSpecialValueText("unset")
        self.confidence.setKeyboardTracking(False)
        self.confidence.valueChanged.connect(self._confidence_changed)
        form.addRow("Confidence", self.confidence)
        self.agent_combo = QComboBox()
        self.agent_combo.setEditable(True)
        self.agent_combo.activated.connect(lambda _i: model.set_field("mistake_agent",
                                                                      self.agent_combo.currentText() or None))
        form.addRow("Mistake agent", self.agent_combo)
        lay.addLayout(form)
        lay.addWidget(self._build_safety())

        btns = QHBoxLayout()
        self.undo_button = QPushButton("Undo")
        self.redo_button = QPushButton("Redo")
        self.next_button = QPushButton("Save && next (Enter)")
        for b, fn in ((self.undo_button, model.undo), (self.redo_button, model.redo),
                      (self.next_button, model.finish)):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(fn)
            btns.addWidget(b)
        model.undo_stack.canUndoChanged.connect(self.undo_button.setEnabled)
        model.undo_stack.canRedoChanged.connect(self.redo_button.setEnabled)
        self.undo_button.setEnabled(model.undo_stack.canUndo())
        self.redo_button.setEnabled(model.undo_stack.canRedo())
        lay.addLayout(btns)

        self._text_timer = QTimer(self)
        self._text_timer.setSingleShot(True)
        self._text_timer.setInterval(TEXT_SAVE_MS)
        self._text_timer.timeout.connect(self.commit_texts)
        self._fill_tree(model.taxonomy)
        self._fill_modules(model.taxonomy)
        for child in self.findChildren(QWidget):
            child.installEventFilter(self)  # a click or focus anywhere in the panel starts labelling

    def _build_safety(self) -> QGroupBox:
        """The safety verdict's details: where the harm came from, what was done, and the first harmful step."""
        model, harm = self.labelling, self.labelling.harm_taxonomy
        box = QGroupBox("Safety")
        box.setObjectName("safety")
        form = QFormLayout(box)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        fh = QHBoxLayout()
        self.first_harm_label = QLabel(_NO_FIRST_HARM)
        self.first_harm_label.setToolTip("d marks the step on screen as the first harmful step (again: clears it)")
        clear = QPushButton("Clear")
        clear.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        clear.clicked.connect(lambda: model.set_first_harmful_step(None))
        fh.addWidget(self.first_harm_label, 1)
        fh.addWidget(clear)
        form.addRow("First harmful step", fh)
        self.harm_category_combo = QComboBox()
        self.harm_category_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.harm_category_combo.setMinimumContentsLength(12)
        self.harm_category_combo.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.harm_category_combo.addItem("", None)
        for lab in taxonomy_mod.harm_labels(harm, taxonomy_mod.HARM_CATEGORIES):
            self.harm_category_combo.addItem(lab.name, lab.code)
            self.harm_category_combo.setItemData(self.harm_category_combo.count() - 1, lab.description,
                                                 Qt.ItemDataRole.ToolTipRole)
        self.harm_category_combo.activated.connect(
            lambda _i: model.set_field("harm_category", self.harm_category_combo.currentData()))
        form.addRow("Category", self.harm_category_combo)
        self.harm_types_list = QListWidget()
        self.harm_types_list.setObjectName("harm_types")
        self.harm_types_list.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # keys stay the panel's
        self.harm_types_list.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.harm_types_list.setWordWrap(True)
        self._harm_items: dict[str, QListWidgetItem] = {}
        for lab in taxonomy_mod.harm_labels(harm, taxonomy_mod.HARM_TYPES):
            item = QListWidgetItem(lab.name, self.harm_types_list)
            item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            item.setToolTip(lab.description)
            item.setData(Qt.ItemDataRole.UserRole, harm.label_id(lab.code))
            self._harm_items[harm.label_id(lab.code)] = item
        self.harm_types_list.itemChanged.connect(self._on_harm_type_changed)
        form.addRow("Harm types", self.harm_types_list)
        return box

    def _fill_tree(self, taxonomy: Taxonomy) -> None:
        self._refreshing = True
        self.tree.clear()
        self._items: dict[str, QTreeWidgetItem] = {}

        def add(parent: Any, lab: taxonomy_mod.Label) -> None:
            item = QTreeWidgetItem(parent, [lab.name, lab.key or ""])
            item.setToolTip(0, f"{lab.code}: {lab.description}" if lab.description else lab.code)
            if lab.is_group:
                item.setFlags(Qt.ItemFlag.ItemIsEnabled)
                for child in lab.children:
                    add(item, child)
            else:
                item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(0, Qt.CheckState.Unchecked)
                item.setData(0, Qt.ItemDataRole.UserRole, taxonomy.label_id(lab.code))
                self._items[taxonomy.label_id(lab.code)] = item

        for lab in taxonomy.labels:
            add(self.tree, lab)
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        self._refreshing = False

    def _fill_modules(self, taxonomy: Taxonomy) -> None:
        self.module_combo.clear()
        self.module_combo.addItem("", None)
        for g in taxonomy.groups():
            self.module_combo.addItem(g.name, g.code)
        self._fill_error_types(None)

    def _fill_error_types(self, module: str | None) -> None:
        taxonomy = self.labelling.taxonomy
        self.error_combo.clear()
        self.error_combo.addItem("", None)
        group = taxonomy.get(module) if module else None
        leaves = group.children if group is not None else taxonomy.leaves()
        for lab in leaves:
            self.error_combo.addItem(lab.name, lab.code)

    def set_mode_widget(self, widget: QWidget) -> None:
        """Show ``widget`` (the keyboard's labelling-mode badge) at the top right of the panel."""
        self._top.insertWidget(0, widget)

    # --- typing: the view's until written through the model ---------------------------------------
    def commit_typing(self) -> None:
        """Write the step comment and the text fields being typed (the model asks before it acts on them)."""
        self._commit_comment_for(self._comment_step)
        self.commit_texts()

    def commit_texts(self) -> None:
        """Write text fields that changed since the last write (called on pause, focus-out and navigation)."""
        self._text_timer.stop()
        model = self.labelling
        if model.record is None and model.trajectory_id is None:
            return
        rec = model.record
        # Read every field before writing any: a write shows the record again, which must not undo typing.
        changed = [(name, edit.toPlainText() or None) for name, edit in self.texts.items()]
        for name, new in changed:
            if new != (getattr(rec, name) if rec is not None else None):
                model.set_field(name, new)
        model.typing_written()

    def _text_edited(self) -> None:
        if self._refreshing:
            return
        self.labelling.typing()
        self._text_timer.start()

    def _on_step(self, step: int) -> None:
        self._commit_comment_for(self._comment_step)
        self._show_comment(step)

    def _commit_comment_for(self, step: int) -> None:
        if step < 0 or self._refreshing:
            return
        rec = self.labelling.record
        text = self.comment_edit.text()
        old = rec.step_comments.get(step) if rec else None
        if (text or None) != old and (text or old):
            self.labelling.set_step_comment(step, text)

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if self._refreshing or column != 0:
            return
        label_id = item.data(0, Qt.ItemDataRole.UserRole)
        if label_id:
            self.labelling.toggle_label(label_id)

    def _on_harm_type_changed(self, item: QListWidgetItem) -> None:
        if self._refreshing:
            return
        harm_type = item.data(Qt.ItemDataRole.UserRole)
        if harm_type:
            self.labelling.toggle_harm_type(harm_type)

    def _confidence_changed(self, value: float) -> None:
        if self._refreshing:
            return
        self.labelling.set_field("confidence", None if value < 0 else round(value, 4))

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 -- Qt override
        if event.type() == QEvent.Type.FocusOut and obj in self.texts.values():
            self.commit_texts()
        elif event.type() in (QEvent.Type.MouseButtonPress, QEvent.Type.FocusIn):
            self._engaged(event)
        return super().eventFilter(obj, event)

    def _engaged(self, event: QEvent) -> None:
        """A click or a focus moved here by the user: labelling starts (an explicit act). Focus coming back with
        the window (a dialog closed) or from a pop-up is not one."""
        if isinstance(event, QFocusEvent) and event.reason() in (Qt.FocusReason.ActiveWindowFocusReason,
                                                                   Qt.FocusReason.PopupFocusReason):
            return
        self.labelling.start()

    def focusInEvent(self, event: QFocusEvent) -> None:  # noqa: N802 -- Qt override
        self._engaged(event)
        super().focusInEvent(event)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 -- Qt override
        self._engaged(event)
        super().mousePressEvent(event)

    # --- display ----------------------------------------------------------------------------------
    def _on_trajectory(self, traj: Trajectory | None) -> None:
        agents = sorted({str(s.extra["agent"]) for s in traj.steps if (s.extra or {}).get("agent")}) \
            if traj is not None else []
        self.agent_combo.clear()
        self.agent_combo.addItem("")
        self.agent_combo.addItems(agents)

    def _show_record(self, rec: Annotation | None) -> None:
        """Mirror the model's record in the widgets."""
        model = self.labelling
        enabled = model.editable
        for w in (self.tree, self.module_combo, self.error_combo, self.comment_edit, self.confidence,
                  self.agent_combo, *self.verdict_buttons.values(), *self.texts.values(), self.next_button,
                  *self.harm_buttons.values(), self.harm_category_combo, self.harm_types_list):
            w.setEnabled(enabled)
        self._refreshing = True
        traj = model.trajectory
        loading = model.session.loading_key if model.session.loading else None
        self.title.setText(f"Opening {Path(loading).name}…" if traj is None and loading else
                           "No trajectory open" if traj is None else
                           f"<b>{traj.id}</b> — {model.annotator}<br>{(traj.instruction or '')[:200]}")
        for v, b in self.verdict_buttons.items():
            b.setChecked(rec is not None and rec.verdict == v)
        labels = set(rec.labels) if rec else set()
        for label_id, item in self._items.items():
            item.setCheckState(0, Qt.CheckState.Checked if label_id in labels else Qt.CheckState.Unchecked)
        self.root_label.setText(_NO_ROOT_CAUSE if rec is None or rec.root_cause_step is None
                                else step_text(rec.root_cause_step))
        self._select(self.module_combo, rec.root_cause_module if rec else None)
        self._fill_error_types(rec.root_cause_module if rec else None)
        self._select(self.error_combo, rec.root_cause_error_type if rec else None)
        for name, edit in self.texts.items():
            value = (getattr(rec, name) or "") if rec else ""
            if edit.toPlainText() != value and not self._text_timer.isActive():  # never clobber pending typing
                edit.setPlainText(value)
        self.cascade_label.setText(", ".join(step_text(c.step) + (f": {c.effect}" if c.effect else "")
                                             for c in rec.cascading) if rec and rec.cascading else
                                   "none (c marks the current step)")
        self.confidence.setValue(-0.05 if rec is None or rec.confidence is None else rec.confidence)
        self.agent_combo.setCurrentText((rec.mistake_agent or "") if rec else "")
        for v, b in self.harm_buttons.items():
            b.setChecked(rec is not None and rec.harm_verdict == v)
        self._select(self.harm_category_combo, rec.harm_category if rec else None)
        harm_types = set(rec.harm_types) if rec else set()
        for harm_type, harm_item in self._harm_items.items():
            harm_item.setCheckState(Qt.CheckState.Checked if harm_type in harm_types else Qt.CheckState.Unchecked)
        self.first_harm_label.setText(_NO_FIRST_HARM if rec is None or rec.first_harmful_step is None
                                      else step_text(rec.first_harmful_step))
        self._refreshing = False
        self._show_comment(model.session.step if traj is not None else -1)

    def _show_comment(self, step: int) -> None:
        self._comment_step = step
        rec = self.labelling.record
        self._refreshing = True
        self.comment_edit.setText((rec.step_comments.get(step, "") if rec else "") if step >= 0 else "")
        self.comment_edit.setPlaceholderText(f"comment on {step_text(step)}" if step >= 0 else "no step")
        self._refreshing = False

    def _show_state(self, state: str, reason: str) -> None:
        text, style = _STATE_TEXT.get(state, ("", ""))
        self.state_label.setText(text.format(reason=reason, time=time.strftime("%H:%M:%S")))
        self.state_label.setStyleSheet(style)
        self.state_label.setToolTip(reason)

    @staticmethod
    def _select(combo: QComboBox, data: Any) -> None:
        i = combo.findData(data) if data is not None else 0
        if i < 0:  # a value not in the taxonomy (imported): show it as it is
            combo.addItem(str(data), data)
            i = combo.count() - 1
        combo.setCurrentIndex(i)

    # --- keyboard (the bare panel's; in the app gui_app.qt.keyboard.LabelKeys routes them) ------------
    def event(self, event: QEvent) -> bool:  # noqa: D401 -- Qt override
        # Claim our keys before window-wide shortcuts (the window's own shortcuts) see them.
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) \
                and claims(self.labelling, event) is not None:
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 -- Qt override
        if key_name(event) is not None and key_name(event) not in ("escape", "undo", "redo"):
            self.labelling.start()  # a label key typed into the panel itself: it has the focus, an explicit act
        name = claims(self.labelling, event)
        if name == "enter" and not self.labelling.waiting and self.comment_edit.hasFocus():
            self.setFocus()  # Enter ends the comment (saved on editingFinished), not the item
        elif name is None or not self.labelling.press(name):
            super().keyPressEvent(event)


class LabelBar(QWidget):
    """The labelling in one line, for the focus layout (the video, the timeline and this bar): the keyboard's mode,
    the verdict, the labels, the root cause, the harm verdict once given, and whether it is saved. A view over the
    same model as the panel; keys label as ever while it is shown."""

    def __init__(self, labelling: Labelling, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("label_bar")
        self.labelling = labelling
        self.summary = QLabel(self)
        self.summary.setObjectName("label_bar_summary")
        self.state_label = QLabel(self)
        self._layout = QHBoxLayout(self)
        self._layout.setContentsMargins(6, 2, 6, 2)
        self._layout.addWidget(self.summary, 1)
        self._layout.addWidget(self.state_label)
        labelling.record_changed.connect(lambda _r: self._show())
        labelling.state_changed.connect(lambda _s, _r: self._show())
        labelling.key_hint_changed.connect(lambda _h: self._show())
        self._show()

    def set_mode_widget(self, widget: QWidget) -> None:
        """Show ``widget`` (the keyboard's labelling-mode badge) at the start of the bar."""
        self._layout.insertWidget(0, widget)

    def text(self) -> str:
        """The record in words: verdict, labels, root cause, harm verdict when given (and a half-typed key hint)."""
        model = self.labelling
        rec = model.record
        if model.trajectory is None:
            return "No trajectory open"
        names = []
        for label_id in (rec.labels if rec is not None else []):
            lab = model.taxonomy.get(label_id)
            names.append(lab.name if lab is not None else label_id)
        parts = [f"verdict: {rec.verdict if rec is not None and rec.verdict else '–'}",
                 f"labels: {', '.join(names) if names else '–'}",
                 "root cause: " + (step_text(rec.root_cause_step) if rec is not None and
                                   rec.root_cause_step is not None else "–")]
        if rec is not None and (rec.harm_verdict or rec.first_harmful_step is not None):  # the safety verdict
            parts.append(f"harm: {rec.harm_verdict or '–'}" + (f" from {step_text(rec.first_harmful_step)}"
                                                              if rec.first_harmful_step is not None else ""))
        if model.key_hint:
            parts.append(f"key {model.key_hint}…")
        return " · ".join(parts)

    def _show(self) -> None:
        self.summary.setText(self.text())
        text, style = _STATE_TEXT.get(self.labelling.save_state, ("", ""))
        self.state_label.setText(text.format(reason=self.labelling.save_reason, time=time.strftime("%H:%M:%S")))
        self.state_label.setStyleSheet(style)
        self.state_label.setToolTip(self.labelling.save_reason)


def ask_who_labels(parent: QWidget, suggestion: str, on_named: Callable[[str], None],
                   on_cancelled: Callable[[], None]) -> QInputDialog:
    """Ask who is labelling, without blocking (the first time labelling starts: labels are never written as the
    login name unasked). ``on_named`` gets the name (stripped, not empty); ``on_cancelled`` is called otherwise.
    Returns the dialog, open."""
    dialog = QInputDialog(parent)
    dialog.setObjectName("who_labels")
    dialog.setWindowTitle("Who is labelling?")
    dialog.setLabelText("Your name, written with every label you make.\n"
                        "It is kept in the settings; File → Annotator name changes it.")
    dialog.setTextValue(suggestion)
    dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)

    def finished(result: int) -> None:
        name = dialog.textValue().strip()
        if result == QDialog.DialogCode.Accepted and name:
            on_named(name)
        else:
            on_cancelled()

    dialog.finished.connect(finished)
    dialog.open()
    return dialog
