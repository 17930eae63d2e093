"""The label panel: label the open trajectory while its video plays, all from the keyboard.

Keys (while the panel has focus; text fields keep their own typing):
    digits   toggle the taxonomy label with that key hint (two-digit hints: group digit, then label digit)
    s f u    set the verdict to success / failure / unsure;  v cycles it
    r        mark the current step (``session.step``) as the root cause (again: clear it)
    c        mark the current step as affected by the root cause (cascading; again: clear it)
    Enter    save (time spent) and ask for the next queue item (:attr:`LabelPanel.next_requested`)
    Ctrl+Z   undo;  Ctrl+Shift+Z / Ctrl+Y redo;  Esc clears a half-typed key hint

Every change goes straight to the annotation store (one transaction each, audited), so the panel has no unsaved
state except text being typed, which is written when typing pauses (:data:`TEXT_SAVE_MS`) or focus leaves.
Undo/redo is a ``QUndoStack`` of store operations (each undo is itself a stored, audited change).

In the app the writes run through the one door to threads, in order (a :class:`~gui_app.qt.workers.JobQueue`):
another process holding the store's write lock makes a write wait, never the window. The change shows at once
(the record shown is updated as the write is queued, so the next key press sees it), "saving…" until it has
landed, and "NOT SAVED" with the reason if it fails. Without a queue (tests of the bare panel) writes run at once.
"""

from __future__ import annotations

import getpass
import time
from dataclasses import dataclass
from typing import Any, Literal

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence, QUndoCommand, QUndoStack
from PySide6.QtWidgets import (
    QAbstractItemView,
    QButtonGroup,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from gui_app.core import taxonomy as taxonomy_mod
from gui_app.core.annotation import VERDICTS, Annotation, Cascade
from gui_app.core.errors import RollscopeError
from gui_app.core.identity import ref_of
from gui_app.core.store import AnnotationStore
from gui_app.core.taxonomy import Taxonomy
from gui_app.core.trajectory import Trajectory
from gui_app.qt.session import Session
from gui_app.qt.workers import JobQueue

TEXT_SAVE_MS = 600  # typing pause after which a text field is written
KEY_BUFFER_MS = 1500  # a half-typed two-digit key hint is forgotten after this
VERDICT_KEYS = {Qt.Key.Key_S: "success", Qt.Key.Key_F: "failure", Qt.Key.Key_U: "unsure"}
PANEL_KEYS = ("0-9", "S", "F", "U", "V", "R", "C", "Return", "Enter", "Ctrl+Z", "Ctrl+Shift+Z", "Ctrl+Y", "Esc")
TEXT_FIELDS = ("evidence", "correction_guidance", "notes")


@dataclass(frozen=True)
class _Edit:
    """One kind of store write the panel makes (a field, a label, a step's cascade or comment), and what it does
    to the record shown, so that the next key press sees the change before the write has landed."""

    kind: Literal["field", "label", "cascade", "comment"]
    name: str = ""  # the field, or the label id
    step: int = -1

    def write(self, store: AnnotationStore, tid: str, who: str, value: Any) -> None:
        if self.kind == "field":
            store.set_field(tid, who, self.name, value)
        elif self.kind == "label":
            store.set_label(tid, who, self.name, bool(value))
        elif self.kind == "cascade":
            store.set_cascade(tid, who, self.step, value)
        else:
            store.set_step_comment(tid, who, self.step, value)

    def show(self, rec: Annotation, value: Any) -> None:
        if self.kind == "field":
            setattr(rec, self.name, value)  # a name from SCALAR_FIELDS, as the store's set_field takes it
        elif self.kind == "label":
            rec.labels = sorted((set(rec.labels) | {self.name}) if value else (set(rec.labels) - {self.name}))
        elif self.kind == "cascade":
            kept = [c for c in rec.cascading if c.step != self.step]
            rec.cascading = sorted(kept + ([Cascade(self.step, value)] if value is not None else []),
                                   key=lambda c: c.step)
        elif value:
            rec.step_comments[self.step] = value
        else:
            rec.step_comments.pop(self.step, None)


class _StoreCommand(QUndoCommand):
    """One undoable store write: redo writes ``new``, undo writes ``old``."""

    def __init__(self, panel: LabelPanel, text: str, edit: _Edit, old: Any, new: Any):
        super().__init__(text)
        self._panel, self._edit, self._old, self._new = panel, edit, old, new

    def redo(self) -> None:
        if not self._panel._apply(self._edit, self._new):
            self.setObsolete(True)  # the write failed at once: nothing to undo

    def undo(self) -> None:
        self._panel._apply(self._edit, self._old)


class LabelPanel(QWidget):
    """Label the session's trajectory into an annotation store.

    Args:
        session: the app's :class:`~gui_app.qt.session.Session` (trajectory, current step, and the library whose
            store labels are written to).
        store: the annotation store, until the session opens a library (or :meth:`set_store`).
        taxonomy: the taxonomy whose labels are offered (default: the bundled ``computer_use``).
        annotator: who is labelling (default: the login name).
        writes: the queue store writes run through, off the GUI thread (None: write at once).

    Signals:
        marks_changed(dict): ``{step: kind}`` for steps to mark on the timeline (root_cause, cascade, comment).
        next_requested(): Enter was pressed: the record is saved; open the next queue item.
        saved(str): a change reached the store (the trajectory id).
        save_failed(str): a change did not reach the store (the reason); the panel shows it too.
    """

    marks_changed = Signal(object)  # dict[int, str]; Signal(dict) would need string keys
    next_requested = Signal()
    saved = Signal(str)
    save_failed = Signal(str)

    def __init__(self, session: Session, store: AnnotationStore | None = None, taxonomy: Taxonomy | None = None,
                 annotator: str | None = None, parent: QWidget | None = None, writes: JobQueue | None = None):
        super().__init__(parent)
        self.session = session
        self.store = store
        self._writes = writes
        self._pending = 0  # writes queued and not yet landed
        self._next_when_saved = False  # Enter was pressed while writes were pending
        self.taxonomy = taxonomy or taxonomy_mod.get()
        self.annotator = annotator or getpass.getuser() or "annotator"
        self.undo_stack = QUndoStack(self)
        self.record: Annotation | None = None
        self.save_state = "idle"  # idle | saved | pending | error
        self._marks: dict[int, str] = {}
        self._keys = ""
        self._opened_at: float | None = None
        self._refreshing = False
        self._tid: str | None = None  # the trajectory shown (writes go here, even while the session moves on)
        self._comment_step = -1  # the step whose comment the comment field holds
        self._build()
        session.trajectory_changed.connect(self._on_trajectory)
        session.step_changed.connect(self._on_step)
        # The library's store, whenever the session opens another library (the panel never asks anyone else).
        session.library_changed.connect(lambda lib: self.set_store(lib.store if lib is not None else None))
        self._on_trajectory(session.trajectory)

    # --- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        lay = QVBoxLayout(self)
        self.title = QLabel("No trajectory open")
        self.title.setWordWrap(True)
        self.state_label = QLabel("")
        self.state_label.setObjectName("autosave_state")
        top = QHBoxLayout()
        top.addWidget(self.title, 1)
        top.addWidget(self.state_label)
        lay.addLayout(top)

        row = QHBoxLayout()
        self.verdict_group = QButtonGroup(self)
        self.verdict_group.setExclusive(False)  # so 'no verdict' can be shown too
        self.verdict_buttons: dict[str, QPushButton] = {}
        for v, key in zip(VERDICTS, "sfu", strict=True):
            b = QPushButton(f"{v.capitalize()} ({key})")
            b.setCheckable(True)
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(lambda _=False, v=v: self.set_verdict(v))
            self.verdict_group.addButton(b)
            self.verdict_buttons[v] = b
            row.addWidget(b)
        lay.addLayout(row)

        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Label", "Key"])
        self.tree.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # digits must reach the panel, not keyboard search
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.tree.itemChanged.connect(self._on_item_changed)
        self.keys_label = QLabel("")
        lay.addWidget(self.tree, 1)
        lay.addWidget(self.keys_label)

        form = QFormLayout()
        rc = QHBoxLayout()
        self.root_label = QLabel("none (r marks the current step)")
        clear = QPushButton("Clear")
        clear.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        clear.clicked.connect(lambda: self.set_root_cause(None))
        rc.addWidget(self.root_label, 1)
        rc.addWidget(clear)
        form.addRow("Root cause step", rc)
        self.module_combo = QComboBox()
        self.error_combo = QComboBox()
        for c in (self.module_combo, self.error_combo):
            c.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        self.module_combo.activated.connect(lambda _i: self._set_scalar("root_cause_module",
                                                                        self.module_combo.currentData()))
        self.error_combo.activated.connect(lambda _i: self._set_scalar("root_cause_error_type",
                                                                       self.error_combo.currentData()))
        form.addRow("Module", self.module_combo)
        form.addRow("Error type", self.error_combo)
        self.texts: dict[str, QPlainTextEdit] = {}
        for name, title in (("evidence", "Evidence"), ("correction_guidance", "Correction"), ("notes", "Notes")):
            edit = QPlainTextEdit()
            edit.setTabChangesFocus(True)
            edit.setMaximumHeight(60)
            edit.textChanged.connect(lambda name=name: self._text_edited(name))
            edit.installEventFilter(self)
            self.texts[name] = edit
            form.addRow(title, edit)
        self.comment_edit = QLineEdit()
        self.comment_edit.setPlaceholderText("comment on the current step")
        self.comment_edit.editingFinished.connect(self._commit_comment)
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
        self.agent_combo.activated.connect(lambda _i: self._set_scalar("mistake_agent",
                                                                       self.agent_combo.currentText() or None))
        form.addRow("Mistake agent", self.agent_combo)
        lay.addLayout(form)

        btns = QHBoxLayout()
        self.undo_button = QPushButton("Undo")
        self.redo_button = QPushButton("Redo")
        self.next_button = QPushButton("Save && next (Enter)")
        for b, fn in ((self.undo_button, self.undo), (self.redo_button, self.undo_stack.redo),
                      (self.next_button, self.finish)):
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            b.clicked.connect(fn)
            btns.addWidget(b)
        self.undo_stack.canUndoChanged.connect(self.undo_button.setEnabled)
        self.undo_stack.canRedoChanged.connect(self.redo_button.setEnabled)
        self.undo_button.setEnabled(False)
        self.redo_button.setEnabled(False)
        lay.addLayout(btns)

        self._text_timer = QTimer(self)
        self._text_timer.setSingleShot(True)
        self._text_timer.setInterval(TEXT_SAVE_MS)
        self._text_timer.timeout.connect(self.commit_texts)
        self._key_timer = QTimer(self)
        self._key_timer.setSingleShot(True)
        self._key_timer.setInterval(KEY_BUFFER_MS)
        self._key_timer.timeout.connect(self._clear_keys)
        self._fill_tree()
        self._fill_modules()

    def _fill_tree(self) -> None:
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
                item.setData(0, Qt.ItemDataRole.UserRole, self.taxonomy.label_id(lab.code))
                self._items[self.taxonomy.label_id(lab.code)] = item

        for lab in self.taxonomy.labels:
            add(self.tree, lab)
        self.tree.expandAll()
        self.tree.resizeColumnToContents(0)
        self._refreshing = False

    def _fill_modules(self) -> None:
        self.module_combo.clear()
        self.module_combo.addItem("", None)
        for g in self.taxonomy.groups():
            self.module_combo.addItem(g.name, g.code)
        self._fill_error_types(None)

    def _fill_error_types(self, module: str | None) -> None:
        self.error_combo.clear()
        self.error_combo.addItem("", None)
        group = self.taxonomy.get(module) if module else None
        leaves = group.children if group is not None else self.taxonomy.leaves()
        for lab in leaves:
            self.error_combo.addItem(lab.name, lab.code)

    # --- configuration ------------------------------------------------------------------------
    def set_store(self, store: AnnotationStore | None) -> None:
        """Label into ``store`` (the open library's, given by the session)."""
        self.commit_texts()
        self.store = store
        self.undo_stack.clear()
        self._reload()

    def set_taxonomy(self, taxonomy: Taxonomy) -> None:
        self.taxonomy = taxonomy
        self._fill_tree()
        self._fill_modules()
        self._reload()

    def set_annotator(self, annotator: str) -> None:
        self.commit_texts()
        self.annotator = annotator
        self.undo_stack.clear()
        self._reload()

    @property
    def trajectory_id(self) -> str | None:
        return self._tid

    # --- store plumbing -------------------------------------------------------------------------
    @property
    def pending_writes(self) -> int:
        """Writes queued and not yet landed in the store."""
        return self._pending

    def _apply(self, edit: _Edit, value: Any) -> bool:
        """Write ``value`` through ``edit`` for the trajectory shown. Returns False when it failed at once (no
        store, no trajectory, or a synchronous write that raised); a queued write reports later."""
        store, tid, who = self.store, self.trajectory_id, self.annotator
        if store is None or tid is None:
            self._set_state("error", "no annotation store open" if store is None else "no trajectory open")
            return False
        if self._writes is None:
            try:
                edit.write(store, tid, who, value)
            except (RollscopeError, OSError) as exc:
                self._failed(tid, exc)
                return False
            self._saved(tid)
            return True
        if self.record is not None:
            edit.show(self.record, value)
            self._show_record()
        self._pending += 1
        self._set_state("saving")
        self._writes.submit(f"Saving a label of {tid}", lambda: edit.write(store, tid, who, value),
                            on_result=lambda _r: self._landed(tid, None), on_error=lambda exc: self._landed(tid, exc))
        return True

    def _landed(self, tid: str, exc: BaseException | None) -> None:
        """A queued write finished (``exc`` None: it is in the store)."""
        self._pending -= 1
        if exc is None:
            self._saved(tid)
        else:
            self._failed(tid, exc)
        if self._pending == 0 and self._next_when_saved:
            self._next_when_saved = False
            self.next_requested.emit()

    def _saved(self, tid: str) -> None:
        self.saved.emit(tid)
        if tid == self.trajectory_id and self._pending == 0:
            self._set_state("saved")
            self._reload()  # the store is the truth

    def _failed(self, tid: str, exc: BaseException) -> None:
        reason = str(exc) if isinstance(exc, (RollscopeError, OSError)) else f"{type(exc).__name__}: {exc}"
        if tid != self.trajectory_id:  # a write for a trajectory left meanwhile: say which
            reason = f"label of {tid}: {reason}"
        self._set_state("error", reason)
        self.save_failed.emit(reason)
        if tid == self.trajectory_id:
            self._reload()  # show what the store holds, not the change that did not land

    def _set_state(self, state: str, reason: str = "") -> None:
        self.save_state = state
        if state == "saved":
            self.state_label.setText(f"✓ saved {time.strftime('%H:%M:%S')}")
            self.state_label.setStyleSheet("color: #2e7d32")
        elif state == "pending":
            self.state_label.setText("… saving when you pause")
            self.state_label.setStyleSheet("color: #8d6e00")
        elif state == "saving":
            self.state_label.setText("… saving")
            self.state_label.setStyleSheet("color: #8d6e00")
        elif state == "error":
            self.state_label.setText(f"✗ NOT SAVED: {reason}")
            self.state_label.setStyleSheet("color: #c62828; font-weight: bold")
        else:
            self.state_label.setText("")
            self.state_label.setStyleSheet("")
        self.state_label.setToolTip(reason)

    def _push(self, text: str, edit: _Edit, old: Any, new: Any) -> None:
        if old == new or self.store is None or self.trajectory_id is None:
            if self.store is None or self.trajectory_id is None:
                self._set_state("error", "no annotation store open" if self.store is None else "no trajectory open")
            return
        self.undo_stack.push(_StoreCommand(self, text, edit, old, new))

    def _set_scalar(self, field: str, value: Any) -> None:
        old = getattr(self.record, field) if self.record is not None else None
        self._push(f"set {field}", _Edit("field", field), old, value)

    # --- operations (also the keyboard's) -------------------------------------------------------
    def set_verdict(self, verdict: str | None) -> None:
        """Set the verdict (success/failure/unsure or None)."""
        self._set_scalar("verdict", verdict)

    def cycle_verdict(self) -> None:
        cur = self.record.verdict if self.record else None
        order = list(VERDICTS)
        self.set_verdict(order[(order.index(cur) + 1) % len(order)] if cur in order else order[0])

    def toggle_label(self, label_id: str) -> None:
        """Add or remove a label (``taxonomy:code``)."""
        if self.store is None or self.trajectory_id is None:
            self._set_state("error", "no annotation store open" if self.store is None else "no trajectory open")
            return
        present = self.record is not None and label_id in self.record.labels
        self._push(f"toggle {label_id}", _Edit("label", label_id), present, not present)

    def set_root_cause(self, step: int | None) -> None:
        self._set_scalar("root_cause_step", step)

    def mark_root_cause(self) -> None:
        """Mark the session's current step as the root cause (or clear it when it already is)."""
        step = self.session.step
        if step < 0:
            return
        cur = self.record.root_cause_step if self.record else None
        self.set_root_cause(None if cur == step else step)

    def toggle_cascade(self, effect: str = "") -> None:
        """Mark the current step as affected by the root cause (or unmark it)."""
        step = self.session.step
        if step < 0 or self.store is None or self.trajectory_id is None:
            return
        old = next((c.effect for c in (self.record.cascading if self.record else []) if c.step == step), None)
        self._push(f"cascade step {step}", _Edit("cascade", step=step), old, None if old is not None else effect)

    def set_step_comment(self, step: int, text: str | None) -> None:
        if self.store is None or self.trajectory_id is None:
            return
        old = (self.record.step_comments.get(step) if self.record else None)
        new = text if text and text.strip() else None
        self._push(f"comment step {step}", _Edit("comment", step=step), old, new)

    def commit_texts(self) -> None:
        """Write text fields that changed since the last write (called on pause, focus-out and navigation)."""
        self._text_timer.stop()
        if self.record is None and self.trajectory_id is None:
            return
        for name, edit in self.texts.items():
            new = edit.toPlainText() or None
            old = getattr(self.record, name) if self.record is not None else None
            if new != old:
                self._set_scalar(name, new)
        if self.save_state == "pending":
            self._set_state("saved")

    def undo(self) -> None:
        """Undo the last change (text still being typed is written first, so it is what gets undone)."""
        self.commit_texts()
        self.undo_stack.undo()

    def finish(self) -> None:
        """Save everything (text, time spent) and ask for the next item once it has landed (or failed, which the
        panel shows): the next item never opens on an unsaved label."""
        self.commit_texts()
        self._add_time_spent()
        if self._pending:
            self._next_when_saved = True
        else:
            self.next_requested.emit()

    def _add_time_spent(self) -> None:
        if self._opened_at is None or self.store is None or self.trajectory_id is None or self.record is None:
            return
        spent = time.monotonic() - self._opened_at
        self._opened_at = time.monotonic()
        total = (self.record.time_spent or 0.0) + spent
        self._apply(_Edit("field", "time_spent"), round(total, 3))  # bookkeeping: not undoable

    # --- reactions ------------------------------------------------------------------------------
    def _on_trajectory(self, traj: Trajectory | None) -> None:
        if self.record is not None:
            # leaving the previous trajectory: its typing and time were for it
            self._commit_comment_for(self._comment_step)
            self.commit_texts()
            self._add_time_spent()
        self._tid = None if traj is None else ref_of(traj)  # the library key: unique, unlike a format's id
        self.undo_stack.clear()
        self._clear_keys()
        self._opened_at = time.monotonic() if traj is not None else None
        self.record = None
        agents = sorted({str(s.extra["agent"]) for s in traj.steps if (s.extra or {}).get("agent")}) \
            if traj is not None else []
        self.agent_combo.clear()
        self.agent_combo.addItem("")
        self.agent_combo.addItems(agents)
        self._set_state("idle")
        self._reload()

    def _on_step(self, step: int) -> None:
        self._commit_comment_for(self._comment_step)
        self._show_comment(step)

    def _commit_comment(self) -> None:
        self._commit_comment_for(self._comment_step)

    def _commit_comment_for(self, step: int) -> None:
        if step < 0 or self._refreshing:
            return
        text = self.comment_edit.text()
        old = self.record.step_comments.get(step) if self.record else None
        if (text or None) != old and (text or old):
            self.set_step_comment(step, text)

    def _show_comment(self, step: int) -> None:
        self._comment_step = step
        self._refreshing = True
        self.comment_edit.setText((self.record.step_comments.get(step, "") if self.record else "") if step >= 0
                                  else "")
        self.comment_edit.setPlaceholderText(f"comment on step {step}" if step >= 0 else "no step")
        self._refreshing = False

    def _on_item_changed(self, item: QTreeWidgetItem, column: int) -> None:
        if self._refreshing or column != 0:
            return
        label_id = item.data(0, Qt.ItemDataRole.UserRole)
        if label_id:
            self.toggle_label(label_id)

    def _text_edited(self, name: str) -> None:
        if self._refreshing:
            return
        self._set_state("pending")
        self._text_timer.start()

    def _confidence_changed(self, value: float) -> None:
        if self._refreshing:
            return
        self._set_scalar("confidence", None if value < 0 else round(value, 4))

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 -- Qt override
        if event.type() == QEvent.Type.FocusOut and obj in self.texts.values():
            self.commit_texts()
        return super().eventFilter(obj, event)

    # --- display ----------------------------------------------------------------------------------
    def _reload(self) -> None:
        """Show the stored record (the store is the truth; the widgets only mirror it)."""
        tid = self.trajectory_id
        self.record = None
        if tid is not None and self.store is not None:
            try:
                self.record = self.store.get(tid, self.annotator) or Annotation(tid, self.annotator)
            except RollscopeError as exc:
                self._set_state("error", str(exc))
        self._show_record()

    def _show_record(self) -> None:
        """Mirror :attr:`record` in the widgets."""
        rec = self.record
        enabled = rec is not None
        for w in (self.tree, self.module_combo, self.error_combo, self.comment_edit, self.confidence,
                  self.agent_combo, *self.verdict_buttons.values(), *self.texts.values(), self.next_button):
            w.setEnabled(enabled)
        self._refreshing = True
        traj = self.session.trajectory
        self.title.setText("No trajectory open" if traj is None else
                           f"<b>{traj.id}</b> — {self.annotator}<br>{(traj.instruction or '')[:200]}")
        for v, b in self.verdict_buttons.items():
            b.setChecked(rec is not None and rec.verdict == v)
        labels = set(rec.labels) if rec else set()
        for label_id, item in self._items.items():
            item.setCheckState(0, Qt.CheckState.Checked if label_id in labels else Qt.CheckState.Unchecked)
        self.root_label.setText("none (r marks the current step)" if rec is None or rec.root_cause_step is None
                                else f"step {rec.root_cause_step}")
        self._select(self.module_combo, rec.root_cause_module if rec else None)
        self._fill_error_types(rec.root_cause_module if rec else None)
        self._select(self.error_combo, rec.root_cause_error_type if rec else None)
        for name, edit in self.texts.items():
            value = (getattr(rec, name) or "") if rec else ""
            if edit.toPlainText() != value and not self._text_timer.isActive():  # never clobber pending typing
                edit.setPlainText(value)
        self.cascade_label.setText(", ".join(f"step {c.step}" + (f": {c.effect}" if c.effect else "")
                                             for c in rec.cascading) if rec and rec.cascading else
                                   "none (c marks the current step)")
        self.confidence.setValue(-0.05 if rec is None or rec.confidence is None else rec.confidence)
        self.agent_combo.setCurrentText((rec.mistake_agent or "") if rec else "")
        self._refreshing = False
        self._show_comment(self.session.step if traj is not None else -1)
        marks = rec.marks() if rec else {}
        if marks != self._marks:
            self._marks = marks
            self.marks_changed.emit(dict(marks))

    @staticmethod
    def _select(combo: QComboBox, data: Any) -> None:
        i = combo.findData(data) if data is not None else 0
        if i < 0:  # a value not in the taxonomy (imported): show it as it is
            combo.addItem(str(data), data)
            i = combo.count() - 1
        combo.setCurrentIndex(i)

    @property
    def marks(self) -> dict[int, str]:
        return dict(self._marks)

    # --- keyboard ---------------------------------------------------------------------------------
    def _clear_keys(self) -> None:
        self._keys = ""
        self.keys_label.setText("")

    def handles(self, event: QKeyEvent) -> bool:
        """Whether ``event`` is one of the panel's keys (so the panel claims it over window shortcuts)."""
        key, mods = event.key(), event.modifiers()
        if event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo):
            return True
        chord = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.AltModifier | Qt.KeyboardModifier.MetaModifier
        if mods & chord:
            return False
        return (Qt.Key.Key_0 <= key <= Qt.Key.Key_9 or key in VERDICT_KEYS or
                key in (Qt.Key.Key_V, Qt.Key.Key_R, Qt.Key.Key_C, Qt.Key.Key_Return, Qt.Key.Key_Enter,
                        Qt.Key.Key_Escape))

    def event(self, event: QEvent) -> bool:  # noqa: D401 -- Qt override
        # Claim our keys before window-wide shortcuts (the window's own shortcuts) see them.
        if event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) and self.handles(event):
            event.accept()
            return True
        return super().event(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 -- Qt override
        if not self.handles(event) or not self.handle_key(event):
            super().keyPressEvent(event)

    def handle_key(self, event: QKeyEvent) -> bool:
        """Act on one of the panel's keys; returns whether it was used."""
        key = event.key()
        if event.matches(QKeySequence.StandardKey.Undo):
            self.undo()
        elif event.matches(QKeySequence.StandardKey.Redo):
            self.undo_stack.redo()
        elif Qt.Key.Key_0 <= key <= Qt.Key.Key_9:
            self.type_key_digit(chr(int(key)))
        elif key in VERDICT_KEYS:
            self.set_verdict(VERDICT_KEYS[Qt.Key(key)])
        elif key == Qt.Key.Key_V:
            self.cycle_verdict()
        elif key == Qt.Key.Key_R:
            self.mark_root_cause()
        elif key == Qt.Key.Key_C:
            self.toggle_cascade()
        elif key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if self.comment_edit.hasFocus():  # Enter ends the comment (saved on editingFinished), not the item
                self.setFocus()
            else:
                self.finish()
        elif key == Qt.Key.Key_Escape:
            self._clear_keys()
        else:
            return False
        return True

    def type_key_digit(self, digit: str) -> None:
        """Feed one digit of a key hint: toggles the label once the hint is complete."""
        self._keys += digit
        lab = self.taxonomy.by_key(self._keys)
        if lab is not None:
            self._clear_keys()
            self._key_timer.stop()
            self.toggle_label(self.taxonomy.label_id(lab.code))
        elif self.taxonomy.is_key_prefix(self._keys):
            group = next((g.name for g in self.taxonomy.labels if g.is_group and
                          any(c.key and c.key.startswith(self._keys) for c in g.children)), "")
            self.keys_label.setText(f"key {self._keys}… {group}")
            self._key_timer.start()
        else:
            self.keys_label.setText(f"no label has key {self._keys}")
            self._keys = ""

    def make_actions(self, parent: QObject) -> list[QAction]:
        """Undo/redo as actions for a window's Edit menu (they act on this panel's stack)."""
        undo = self.undo_stack.createUndoAction(parent, "Undo label change")
        undo.setShortcut(QKeySequence.StandardKey.Undo)
        redo = self.undo_stack.createRedoAction(parent, "Redo label change")
        redo.setShortcut(QKeySequence.StandardKey.Redo)
        return [undo, redo]
