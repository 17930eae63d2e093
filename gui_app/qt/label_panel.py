"""The label panel: label the open trajectory while its video plays, all from the keyboard.

Keys (:data:`LABEL_KEYS`; in the app they work wherever focus is, except inside a text field, through
:class:`gui_app.qt.keyboard.LabelKeys`; the bare panel takes them while it has focus):
    digits   toggle the taxonomy label with that key hint (two-digit hints: group digit, then label digit)
    s f u    set the verdict to success / failure / unsure;  v cycles it
    r        mark the current step (``session.step``) as the root cause (again: clear it)
    c        mark the current step as affected by the root cause (cascading; again: clear it)
    Enter    save (time spent) and ask for the next queue item (:attr:`LabelPanel.next_requested`)
    Ctrl+Z   undo (after Enter too: the item just left reopens);  Ctrl+Shift+Z / Ctrl+Y redo
    Esc      clears a half-typed key hint
    In a text field: Esc leaves it, Ctrl+Enter saves and opens the next item.

Every change goes straight to the annotation store (one transaction each, audited), so the panel has no unsaved
state except text being typed, which is written when typing pauses (:data:`TEXT_SAVE_MS`) or focus leaves.
Merely viewing a trajectory writes nothing: its record is created by the first label, so a reviewer never meets an
empty record of someone who only looked. Undo/redo is a ``QUndoStack`` of store operations (each undo is itself a
stored, audited change) that outlives moving to the next item.

Keys typed after Enter, while the next item is still opening, wait for it (type-ahead) instead of landing on the item
just left.

In the app the writes run through the one door to threads, in order (a :class:`~gui_app.qt.workers.JobQueue`):
another process holding the store's write lock makes a write wait, never the window. The change shows at once
(the record shown is updated as the write is queued, so the next key press sees it), "saving…" until it has
landed, and "NOT SAVED" with the reason if it fails. Without a queue (tests of the bare panel) writes run at once.

Read-only: when the label store cannot be reached (a team's PostgreSQL server that is down, restarting or cut off,
at opening or in the middle of labelling) the panel says so, stops taking changes and shows no stale record, while
the video, the timeline and the library go on working. Every :data:`LabelPanel.RETRY_MS` it asks the store again
(through the write queue, never in the GUI thread); once it answers, labelling resumes by itself.
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
from gui_app.core.library import Library
from gui_app.core.store import AnnotationStore, StoreUnavailable
from gui_app.core.taxonomy import Taxonomy
from gui_app.core.trajectory import Trajectory
from gui_app.qt.session import Session
from gui_app.qt.workers import JobQueue

TEXT_SAVE_MS = 600  # typing pause after which a text field is written
KEY_BUFFER_MS = 1500  # a half-typed two-digit key hint is forgotten after this
VERDICT_KEYS = {Qt.Key.Key_S: "success", Qt.Key.Key_F: "failure", Qt.Key.Key_U: "unsure"}
PANEL_KEYS = ("0-9", "S", "F", "U", "V", "R", "C", "Return", "Enter", "Ctrl+Z", "Ctrl+Shift+Z", "Ctrl+Y", "Esc")
TYPEAHEAD_MS = 10_000  # keys typed after Enter wait this long for the next item, then are dropped (and said so)
# (keys, name, what they do) for the "?" dialog: the label panel's keys, which are not QActions.
LABEL_KEYS: tuple[tuple[str, str, str], ...] = (
    ("S, F, U", "Verdict", "Set the verdict: success, failure, unsure (works wherever focus is, except in a text "
                           "field)"),
    ("V", "Cycle the verdict", "Success → failure → unsure"),
    ("0-9", "Taxonomy label", "Toggle the label with that key hint (two digits: group, then label)"),
    ("R", "Root cause", "Mark the current step as the root cause (again: clear it)"),
    ("C", "Cascading step", "Mark the current step as affected by the root cause (again: clear it)"),
    ("Enter", "Save & next", "Save and open the next item (the queue's next unlabelled one, else the next row)"),
    ("Ctrl+Z, Ctrl+Shift+Z", "Undo / redo", "Undo or redo a label change; after Enter, undo reopens the item left"),
    ("Esc", "Leave a text field", "In a text field: leave it (keys label again); else clear a half-typed key hint"),
    ("Ctrl+Enter", "Save & next from a text field", "In the label panel's text fields: save and open the next item"),
)


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


_TIME_SPENT = _Edit("field", "time_spent")


class _StoreCommand(QUndoCommand):
    """One undoable store write: redo writes ``new``, undo writes ``old``, to the trajectory it was made on.

    A command remembers its trajectory (id and catalog key): the stack outlives moving to the next item, so Ctrl+Z
    after Enter (save & next) undoes the last change of the item just left, and the panel reopens that item so the
    annotator sees what changed.
    """

    def __init__(self, panel: LabelPanel, text: str, edit: _Edit, old: Any, new: Any, tid: str, key: str | None):
        super().__init__(text)
        self._panel, self._edit, self._old, self._new = panel, edit, old, new
        self.tid, self.key = tid, key

    def redo(self) -> None:
        if not self._panel._apply(self._edit, self._new, self.tid, self.key):
            self.setObsolete(True)  # the write failed at once: nothing to undo

    def undo(self) -> None:
        self._panel._apply(self._edit, self._old, self.tid, self.key)


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
        open_requested(str): undo/redo changed a trajectory no longer shown: open this catalog key to show it.
        waiting_changed(bool): keys now wait for the next item (after Enter) / no longer do.
        store_recovered(): a library's store that could not be opened has been opened (the views re-read it).

    Attributes:
        read_only: why labels cannot be written now (the store is out of reach), or None.
    """

    marks_changed = Signal(object)  # dict[int, str]; Signal(dict) would need string keys
    next_requested = Signal()
    saved = Signal(str)
    save_failed = Signal(str)
    open_requested = Signal(str)
    waiting_changed = Signal(bool)
    store_recovered = Signal()

    RETRY_MS = 5000  # while read-only: how often the store is asked whether it answers again

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
        self._key: str | None = None  # its catalog key (undo reopens it from there)
        self._touched = False  # something was labelled on the trajectory shown (so it has a record to add time to)
        self._waiting = False  # Enter asked for the next item, which has not opened yet
        self._typeahead: list[tuple[int, Qt.KeyboardModifier, str]] = []  # keys typed meanwhile
        self._comment_step = -1  # the step whose comment the comment field holds
        self.read_only: str | None = None
        self._library: Library | None = None
        self._probing = False
        self._build()
        session.trajectory_changed.connect(self._on_trajectory)
        session.step_changed.connect(self._on_step)
        # The library's store, whenever the session opens another library (the panel never asks anyone else).
        session.library_changed.connect(self._on_library)
        self._on_trajectory(session.trajectory)

    # --- construction -------------------------------------------------------------------------
    def _build(self) -> None:
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
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
        for b, fn in ((self.undo_button, self.undo), (self.redo_button, self.redo),
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
        self._wait_timer = QTimer(self)
        self._wait_timer.setSingleShot(True)
        self._wait_timer.setInterval(TYPEAHEAD_MS)
        self._wait_timer.timeout.connect(lambda: self.stop_waiting("the next item did not open"))
        self._retry_timer = QTimer(self)
        self._retry_timer.setSingleShot(True)
        self._retry_timer.timeout.connect(self._probe)
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
    def set_store(self, store: AnnotationStore | None, unavailable: str | None = None) -> None:
        """Label into ``store`` (the open library's, given by the session); ``unavailable``: why there is none
        (the panel is read-only and tries again)."""
        if self.read_only is None:
            self.commit_texts()
        self.store = store
        self.undo_stack.clear()
        if unavailable is not None:
            self._enter_read_only(unavailable)
        else:
            self._leave_read_only()
        self._reload()

    def set_mode_widget(self, widget: QWidget) -> None:
        """Show ``widget`` (the keyboard's labelling-mode badge) at the top right of the panel."""
        self._top.insertWidget(0, widget)

    def _on_library(self, library: Library | None) -> None:
        self._library = library
        if library is None:
            self.set_store(None)
        else:
            self.set_store(library.store, None if library.store is not None else library.store_error)

    # --- read-only while the store is out of reach ----------------------------------------------
    def _enter_read_only(self, reason: str) -> None:
        self.read_only = reason
        self._set_state("readonly", reason)
        self.record = None  # what the store holds cannot be read: show nothing rather than something stale
        self._show_record()
        if not self._probing:
            self._retry_timer.start(self.RETRY_MS)

    def _leave_read_only(self) -> None:
        self._retry_timer.stop()
        if self.read_only is not None:
            self.read_only = None
            self._set_state("idle")

    def _probe(self) -> None:
        """Ask the store whether it answers again (reopen it when the library could not open it), off the GUI
        thread when there is a write queue."""
        if self.read_only is None or self._probing:
            return
        store, library = self.store, self._library
        if store is None and (library is None or library.store_error is None):
            return  # no store was ever asked for: nothing to come back

        def probe() -> AnnotationStore:
            if store is not None:
                store.ping()
                return store
            assert library is not None
            return library.reopen_store()

        self._probing = True
        if self._writes is None:
            try:
                got = probe()
            except RollscopeError as exc:
                self._probe_failed(exc)
            else:
                self._recovered(got)
            return
        self._writes.submit("Checking the label store", probe, on_result=self._recovered,
                            on_error=self._probe_failed)

    def _probe_failed(self, exc: BaseException) -> None:
        self._probing = False
        if self.read_only is not None:
            self._enter_read_only(str(exc))

    def _recovered(self, store: AnnotationStore) -> None:
        self._probing = False
        if self.read_only is None:
            return
        reopened = self.store is None
        self.store = store
        self._leave_read_only()
        self._set_state("writable")
        self._reload()
        if reopened:
            self.store_recovered.emit()

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

    def _apply(self, edit: _Edit, value: Any, tid: str | None = None, key: str | None = None) -> bool:
        """Write ``value`` through ``edit`` for trajectory ``tid`` (default: the one shown). Returns False when it
        failed at once (no store, no trajectory, or a synchronous write that raised); a queued write reports later.

        A write for a trajectory no longer shown (an undo after Enter) asks for it to be opened again (``key``), so
        the change is never made out of sight."""
        store, who = self.store, self.annotator
        tid = self.trajectory_id if tid is None else tid
        if self.read_only is not None:
            self._set_state("readonly", self.read_only)
            return False
        if store is None or tid is None:
            self._set_state("error", "no annotation store open" if store is None else "no trajectory open")
            return False
        shown = tid == self.trajectory_id
        if shown and edit != _TIME_SPENT:
            self._touched = True
        if not shown and key:
            self.open_requested.emit(key)
        if self._writes is None:
            try:
                edit.write(store, tid, who, value)
            except (RollscopeError, OSError) as exc:
                self._failed(tid, exc)
                return False
            self._saved(tid)
            return True
        if shown and self.record is not None:
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
        if isinstance(exc, StoreUnavailable):
            self._enter_read_only(str(exc))  # the change did not land and the next would not either
        elif tid == self.trajectory_id:
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
        elif state == "readonly":
            self.state_label.setText("READ-ONLY: the label store cannot be reached; trying again")
            self.state_label.setStyleSheet("color: #c62828; font-weight: bold")
        elif state == "writable":
            self.state_label.setText(f"✓ label store back {time.strftime('%H:%M:%S')}")
            self.state_label.setStyleSheet("color: #2e7d32")
        else:
            self.state_label.setText("")
            self.state_label.setStyleSheet("")
        self.state_label.setToolTip(reason)

    def _push(self, text: str, edit: _Edit, old: Any, new: Any) -> None:
        if self.read_only is not None:
            self._set_state("readonly", self.read_only)
            return
        tid = self.trajectory_id
        if old == new or self.store is None or tid is None:
            if self.store is None or tid is None:
                self._set_state("error", "no annotation store open" if self.store is None else "no trajectory open")
            return
        self.undo_stack.push(_StoreCommand(self, f"{text} ({tid})", edit, old, new, tid, self._key))

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
        if self.read_only is not None:
            self._set_state("readonly", self.read_only)
            return
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
        panel shows): the next item never opens on an unsaved label. Keys typed until it opens wait for it.

        The time spent is bookkeeping: its write is queued after the labels' but the next item does not wait for
        it (a failure would still be shown, naming the trajectory)."""
        self.commit_texts()
        labels_pending = self._pending
        self._add_time_spent()
        self.start_waiting()
        if labels_pending:
            self._next_when_saved = True
        else:
            self.next_requested.emit()

    def _add_time_spent(self) -> None:
        """Add the time spent on the trajectory shown to its record, when it has one: time alone never creates a
        record (viewing is not labelling)."""
        if self._opened_at is None or self.store is None or self.trajectory_id is None or self.record is None:
            return
        if not (self._touched or self.record.version > 0):
            return
        spent = time.monotonic() - self._opened_at
        self._opened_at = time.monotonic()
        total = (self.record.time_spent or 0.0) + spent
        self._apply(_TIME_SPENT, round(total, 3))  # bookkeeping: not undoable

    # --- type-ahead -------------------------------------------------------------------------------
    @property
    def waiting(self) -> bool:
        """Whether keys wait for the next item (Enter was pressed and it has not opened yet)."""
        return self._waiting

    def start_waiting(self) -> None:
        """Hold the label keys typed from now until another trajectory opens (after Enter, or while a queue opens
        its first item), then replay them on it."""
        self._typeahead.clear()
        self._wait_timer.start()
        if not self._waiting:
            self._waiting = True
            self.waiting_changed.emit(True)

    def stop_waiting(self, reason: str = "") -> None:
        """Stop holding keys: no next item is coming (end of the queue, a load failed). Held keys are dropped and
        the panel says so."""
        self._wait_timer.stop()
        dropped, self._typeahead = len(self._typeahead), []
        if dropped:
            self._set_state("error", f"{dropped} key(s) not applied: {reason or 'no next item'}")
        if self._waiting:
            self._waiting = False
            self.waiting_changed.emit(False)

    # --- reactions ------------------------------------------------------------------------------
    def _on_trajectory(self, traj: Trajectory | None) -> None:
        if self.record is not None:
            # leaving the previous trajectory: its typing and time were for it
            self._commit_comment_for(self._comment_step)
            self.commit_texts()
            self._add_time_spent()
        self._tid = None if traj is None else ref_of(traj)  # the library key: unique, unlike a format's id
        self._key = None if traj is None else self.session.key
        self._touched = False
        self._clear_keys()
        self._opened_at = time.monotonic() if traj is not None else None
        self.record = None
        agents = sorted({str(s.extra["agent"]) for s in traj.steps if (s.extra or {}).get("agent")}) \
            if traj is not None else []
        self.agent_combo.clear()
        self.agent_combo.addItem("")
        self.agent_combo.addItems(agents)
        if self.read_only is None:
            self._set_state("idle")
        else:
            self._set_state("readonly", self.read_only)
        self._reload()
        if self._waiting:
            if traj is None:
                self.stop_waiting("the next item did not open")
            else:
                # After the session has placed its playhead (it opens the trajectory first, then moves to step 0):
                # `r` held meanwhile marks the step on screen. Keys typed until then queue behind the held ones.
                QTimer.singleShot(0, lambda tid=self._tid: self._replay(tid))

    def _replay(self, tid: str) -> None:
        """Apply the keys held while trajectory ``tid`` was opening, in order, now that it is shown."""
        if not self._waiting or tid != self.trajectory_id:
            return
        held, self._typeahead = self._typeahead, []
        self._wait_timer.stop()
        self._waiting = False
        self.waiting_changed.emit(False)
        for i, (key, mods, text) in enumerate(held):
            if self._waiting:  # a held Enter moved on again: the rest waits for the item after
                self._typeahead.extend(held[i:])
                break
            self.handle_key(QKeyEvent(QEvent.Type.KeyPress, key, mods, text))

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
        if tid is not None and self.store is not None and self.read_only is None:
            try:
                self.record = self.store.get(tid, self.annotator) or Annotation(tid, self.annotator)
            except StoreUnavailable as exc:
                self._enter_read_only(str(exc))
            except RollscopeError as exc:
                self._set_state("error", str(exc))
        self._show_record()

    def _show_record(self) -> None:
        """Mirror :attr:`record` in the widgets."""
        rec = self.record
        enabled = rec is not None and self.read_only is None
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
        if key == Qt.Key.Key_Escape:
            return self.wants_escape()
        return (Qt.Key.Key_0 <= key <= Qt.Key.Key_9 or key in VERDICT_KEYS or
                key in (Qt.Key.Key_V, Qt.Key.Key_R, Qt.Key.Key_C, Qt.Key.Key_Return, Qt.Key.Key_Enter))

    def wants_escape(self) -> bool:
        """Whether Esc means something to the panel now (a half-typed key hint, keys held for the next item);
        otherwise it is left to the window (cancel background work)."""
        return bool(self._keys) or self._waiting

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
        """Act on one of the panel's keys; returns whether it was used. While the next item is opening (after
        Enter), label keys are held for it."""
        key = event.key()
        if self._waiting and not (event.matches(QKeySequence.StandardKey.Undo) or
                                  event.matches(QKeySequence.StandardKey.Redo)):
            if key == Qt.Key.Key_Escape:
                self.stop_waiting("cancelled with Esc")
            else:
                self._typeahead.append((key, event.modifiers(), event.text()))
            return True
        if event.matches(QKeySequence.StandardKey.Undo):
            self.undo()
        elif event.matches(QKeySequence.StandardKey.Redo):
            self.redo()
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

    def redo(self) -> None:
        self.undo_stack.redo()

    def make_actions(self, parent: QObject) -> list[QAction]:
        """Undo/redo as window actions (they act on this panel's stack; undo writes pending typing first)."""
        undo = QAction("Undo label change", parent)
        undo.setShortcut(QKeySequence.StandardKey.Undo)
        undo.triggered.connect(self.undo)
        redo = QAction("Redo label change", parent)
        redo.setShortcuts(QKeySequence.keyBindings(QKeySequence.StandardKey.Redo))
        redo.triggered.connect(self.redo)
        self.undo_stack.canUndoChanged.connect(undo.setEnabled)
        self.undo_stack.canRedoChanged.connect(redo.setEnabled)
        undo.setEnabled(self.undo_stack.canUndo())
        redo.setEnabled(self.undo_stack.canRedo())
        return [undo, redo]
