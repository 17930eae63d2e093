"""The evented labelling model: the one answer to "what is being labelled, and is it saved?".

:class:`Labelling` holds the record of the trajectory the session has open (verdict, labels, root cause, cascading
steps, step comments, texts, the safety verdict: harm verdict, category, types and first harmful step...), whether its
changes have reached the annotation store, the writes still on their way, the undo history, the keys held while the next
item opens, and whether the store can be written at all. The label panel (:class:`gui_app.qt.label_panel.LabelPanel`) is
a view over it, as napari's ``QtDims`` sits over ``Dims``: it subscribes to the signals below and changes state only
through the setters. The keyboard (:mod:`gui_app.qt.keyboard`) acts on it with :meth:`Labelling.press`.

Every change goes to the annotation store through ONE path: the app's write queue (a
:class:`~gui_app.qt.workers.JobQueue`), one transaction each, audited, in the order made, off the GUI thread. Another
process holding the store's write lock makes a write wait, never the window. The change shows at once (the record is
updated as the write is queued, so the next key press sees it), the state is "saving" until it has landed, and
"error" with the reason if it fails; the store is the truth once the writes have landed. Merely viewing a
trajectory writes nothing: its record is created by the first label, so a reviewer never meets an empty record of
someone who only looked. Undo/redo is a ``QUndoStack`` of store writes (each undo is itself a stored, audited change)
that outlives moving to the next item.

Text being typed is the view's until it is written: before the model acts on what has been typed (undo, save &
next, moving to another trajectory, another store or annotator) it emits :attr:`Labelling.flush_requested`, and a
view writes its pending typing then (through :meth:`Labelling.set_field`).

Keys pressed after Enter, while the next item is still opening, wait for it (type-ahead) instead of landing on the
item just left; so do keys pressed while a queue opens its first item (:meth:`Labelling.start_waiting`), and the
wait lasts as long as the session says the item is loading.

Browsing is not labelling. The model starts in browsing mode: nothing is written, whatever key is pressed, until
labelling starts by an explicit act (:meth:`Labelling.start`: a queue, the label panel's focus, the key that enters
labelling). Labelling needs to know who labels: when the annotator was never given (only the login name is known),
:meth:`Labelling.start` asks for it (:attr:`Labelling.annotator_wanted`) and labelling starts once it is set. An undo
that leaves a record with nothing labelled removes the record (an empty record is nobody's opinion).

Read-only: when the label store cannot be reached (a team's PostgreSQL server that is down, restarting or cut off,
at opening or in the middle of labelling) the model says so, takes no changes and holds no stale record, while the
video, the timeline and the library go on working. Every :attr:`Labelling.RETRY_MS` it asks the store again
(through the write queue, never in the GUI thread); once it answers, labelling resumes by itself.
"""

from __future__ import annotations

import getpass
import time
from enum import StrEnum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QUndoCommand, QUndoStack

from gui_app.core.annotation import taxonomy as taxonomy_mod
from gui_app.core.store.record import VERDICTS, Annotation, Cascade
from gui_app.core.errors import RollscopeError
from gui_app.core.library.folder import Library
from gui_app.core.store.interface import AnnotationStore, StoreUnavailable
from gui_app.core.annotation.taxonomy import Taxonomy
from gui_app.core.trajectory.model import Trajectory, step_text
from gui_app.qt.session import Session
from gui_app.qt.workers import JobQueue

class Mode(StrEnum):
    """Whether keys and the panel write labels: :attr:`BROWSING` (nothing is written) or :attr:`LABELLING`."""

    BROWSING = "browsing"
    LABELLING = "labelling"


KEY_BUFFER_MS = 1500  # a half-typed two-digit key hint is forgotten after this
TYPEAHEAD_MS = 10_000  # keys pressed after Enter wait this long for the next item, then are dropped (and said so)
VERDICT_KEYS = {"s": "success", "f": "failure", "u": "unsure"}
# The safety verdict's keys: h harmful, n no harm (safe), m maybe (unsure); d marks the first harmful step.
HARM_VERDICT_KEYS = {"h": "harmful", "n": "safe", "m": "unsure"}
# The keys :meth:`Labelling.press` takes (what :func:`gui_app.qt.keyboard.key_name` makes of a key event).
KEYS = frozenset({*"0123456789", *VERDICT_KEYS, *HARM_VERDICT_KEYS, "v", "r", "c", "d", "enter", "escape", "undo",
                  "redo"})
# Save states (:attr:`Labelling.save_state`).
SaveState = Literal["idle", "pending", "saving", "saved", "error", "readonly", "writable"]


@dataclass(frozen=True)
class _Edit:
    """One kind of store write (a field, a label, a harm type, a step's cascade or comment), and what it does to
    the record shown, so that the next key press sees the change before the write has landed."""

    kind: Literal["field", "label", "harm_type", "cascade", "comment"]
    name: str = ""  # the field, or the label id (harm type id)
    step: int = -1

    def write(self, store: AnnotationStore, tid: str, who: str, value: Any) -> None:
        if self.kind == "field":
            store.set_field(tid, who, self.name, value)
        elif self.kind == "label":
            store.set_label(tid, who, self.name, bool(value))
        elif self.kind == "harm_type":
            store.set_harm_type(tid, who, self.name, bool(value))
        elif self.kind == "cascade":
            store.set_cascade(tid, who, self.step, value)
        else:
            store.set_step_comment(tid, who, self.step, value)

    def show(self, rec: Annotation, value: Any) -> None:
        if self.kind == "field":
            setattr(rec, self.name, value)  # a name from SCALAR_FIELDS, as the store's set_field takes it
        elif self.kind in ("label", "harm_type"):
            field = "labels" if self.kind == "label" else "harm_types"
            have = set(getattr(rec, field))
            setattr(rec, field, sorted((have | {self.name}) if value else (have - {self.name})))
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
    after Enter (save & next) undoes the last change of the item just left, and the model asks for that item to be
    reopened so the annotator sees what changed. A command whose write failed did nothing: it leaves the stack.
    """

    def __init__(self, model: Labelling, text: str, edit: _Edit, old: Any, new: Any, tid: str, key: str | None):
        super().__init__(text)
        self._model, self._edit, self._old, self._new = model, edit, old, new
        self.tid, self.key = tid, key
        self.failed = False

    def redo(self) -> None:
        self.failed = False
        if not self._model._apply(self._edit, self._new, self.tid, self.key, on_failed=self._write_failed):
            self.setObsolete(True)  # refused at once (read-only, no store): nothing to undo

    def undo(self) -> None:
        if not self.failed:  # a failed write is taken off the stack with an undo that must write nothing
            self._model._apply(self._edit, self._old, self.tid, self.key, drop_if_empty=True)

    def _write_failed(self) -> None:
        self.failed = True
        self._model._drop_failed_commands()


class Labelling(QObject):
    """What is being labelled: the session's trajectory, its record in the annotation store, and its save state.

    Args:
        session: the app's :class:`~gui_app.qt.session.Session` (trajectory, current step, and the library whose
            store labels are written to).
        writes: the queue every store write runs through, in order, off the GUI thread.
        store: the annotation store, until the session opens a library (or :meth:`set_store`).
        taxonomy: the taxonomy whose labels are offered (default: the bundled ``computer_use``). The harm
            categories and types of the safety verdict come from the bundled ``harm`` taxonomy
            (:attr:`harm_taxonomy`).
        annotator: who is labelling (default: the login name).

    Signals:
        trajectory_changed(object): another trajectory (or None) is being labelled; ``record_changed`` follows.
        record_changed(object): the record shown changed (an :class:`Annotation`, or None: nothing to show).
        state_changed(str, str): the save state (:data:`SaveState`) and its reason.
        read_only_changed(object): why labels cannot be written now (the store is out of reach), or None.
        marks_changed(dict): ``{step: kind}`` for steps to mark on the timeline (root_cause, cascade, comment).
        key_hint_changed(str): the half-typed key hint, or a word about the last one ('' when none).
        waiting_changed(bool): keys now wait for the next item (after Enter) / no longer do.
        flush_requested(): views write what is being typed now (before undo, save & next, moving on).
        next_requested(): Enter was pressed and the record's writes have landed: open the next item.
        saved(str): a change reached the store (the trajectory id).
        save_failed(str): a change did not reach the store (the reason); the save state says so too.
        open_requested(str): undo/redo changed a trajectory no longer shown: open this catalog key to show it.
        store_recovered(): a library's store that could not be opened has been opened (the views re-read it).
        mode_changed(str): browsing or labelling (a :class:`Mode` value).
        annotator_wanted(): labelling was asked for but nobody said who labels: ask, then :meth:`set_annotator`
            (labelling then starts), or :meth:`cancel_start`.

    Attributes:
        record: the stored record of the trajectory being labelled, with the changes on their way (None: no
            trajectory, no store, or the store cannot be read).
        save_state / save_reason: whether the last change is saved (:data:`SaveState`), and why not.
        read_only: why labels cannot be written now, or None.
        mode: browsing (nothing is written) or labelling.
        annotator_known: whether someone said who labels (False: the login name stands in, and labelling asks).
        undo_stack: the undoable store writes.
        writes: the queue the store writes run through.
    """

    trajectory_changed = Signal(object)  # Trajectory | None
    record_changed = Signal(object)  # Annotation | None
    state_changed = Signal(str, str)
    read_only_changed = Signal(object)  # str | None
    marks_changed = Signal(object)  # dict[int, str]; Signal(dict) would need string keys
    key_hint_changed = Signal(str)
    waiting_changed = Signal(bool)
    flush_requested = Signal()
    next_requested = Signal()
    saved = Signal(str)
    save_failed = Signal(str)
    open_requested = Signal(str)
    store_recovered = Signal()
    mode_changed = Signal(str)
    annotator_wanted = Signal()

    RETRY_MS = 5000  # while read-only: how often the store is asked whether it answers again

    def __init__(self, session: Session, writes: JobQueue, store: AnnotationStore | None = None,
                 taxonomy: Taxonomy | None = None, annotator: str | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.session = session
        self.store = store
        self.taxonomy = taxonomy or taxonomy_mod.get()
        self.harm_taxonomy = taxonomy_mod.harm()  # the safety verdict's categories and types
        self.annotator = annotator or getpass.getuser() or "annotator"
        self.annotator_known = bool(annotator)
        self.mode = Mode.BROWSING
        self._start_when_named = False  # labelling was asked for before the annotator was known
        self.undo_stack = QUndoStack(self)
        self.record: Annotation | None = None
        self.save_state: SaveState = "idle"
        self.save_reason = ""
        self.read_only: str | None = None
        self.writes = writes
        self._pending = 0  # writes queued and not yet landed
        self._next_when_saved = False  # Enter was pressed while writes were pending
        self._marks: dict[int, str] = {}
        self._key_hint = ""  # digits of a two-digit key hint typed so far
        self._opened_at: float | None = None
        self._traj: Trajectory | None = None
        self._tid: str | None = None  # the trajectory labelled (writes go here, even while the session moves on)
        self._key: str | None = None  # its catalog key (undo reopens it from there)
        self._touched = False  # something was labelled on the trajectory shown (so it has a record to add time to)
        self._waiting = False  # Enter asked for the next item, which has not opened yet
        self._held: list[str] = []  # keys pressed meanwhile (:data:`KEYS`)
        self._library: Library | None = None
        self._probing = False
        self._key_timer = QTimer(self)
        self._key_timer.setSingleShot(True)
        self._key_timer.setInterval(KEY_BUFFER_MS)
        self._key_timer.timeout.connect(self.clear_key_hint)
        self._wait_timer = QTimer(self)
        self._wait_timer.setSingleShot(True)
        self._wait_timer.setInterval(TYPEAHEAD_MS)
        self._wait_timer.timeout.connect(self._wait_timed_out)
        self._retry_timer = QTimer(self)
        self._retry_timer.setSingleShot(True)
        self._retry_timer.timeout.connect(self._probe)
        session.trajectory_changed.connect(self._on_trajectory)
        session.loading_changed.connect(self._on_loading)
        # The library's store, whenever the session opens another library (the model never asks anyone else).
        session.library_changed.connect(self._on_library)
        self._on_trajectory(session.trajectory)

    # --- what is being labelled -------------------------------------------------------------------
    @property
    def trajectory(self) -> Trajectory | None:
        """The trajectory being labelled (the session's, once it has opened)."""
        return self._traj

    @property
    def trajectory_id(self) -> str | None:
        """What its labels are keyed by (its library key), or None."""
        return self._tid

    @property
    def marks(self) -> dict[int, str]:
        return dict(self._marks)

    @property
    def key_hint(self) -> str:
        """The digits of a key hint typed so far."""
        return self._key_hint

    @property
    def pending_writes(self) -> int:
        """Writes queued and not yet landed in the store."""
        return self._pending

    @property
    def editable(self) -> bool:
        """Whether changes are taken now (a record is shown and the store can be written)."""
        return self.record is not None and self.read_only is None

    # --- configuration ------------------------------------------------------------------------
    def set_store(self, store: AnnotationStore | None, unavailable: str | None = None) -> None:
        """Label into ``store`` (the open library's, given by the session); ``unavailable``: why there is none
        (the model is read-only and tries again)."""
        if self.read_only is None:
            self.flush_requested.emit()
        self.store = store
        self.undo_stack.clear()
        if unavailable is not None:
            self._enter_read_only(unavailable)
        else:
            self._leave_read_only()
        self._reload()

    def _on_library(self, library: Library | None) -> None:
        self._library = library
        if library is None:
            self.set_store(None)
        else:
            self.set_store(library.store, None if library.store is not None else library.store_error)

    def set_annotator(self, annotator: str) -> None:
        """Label as ``annotator`` from now on (labelling starts if it was waiting for the name)."""
        self.flush_requested.emit()
        self.annotator = annotator
        self.annotator_known = True
        self.undo_stack.clear()
        self._reload()
        if self._start_when_named:
            self._start_when_named = False
            self.start()

    # --- browsing or labelling -------------------------------------------------------------------
    @property
    def labelling(self) -> bool:
        """Whether labelling is on (keys and the panel write labels)."""
        return self.mode is Mode.LABELLING

    def start(self) -> bool:
        """Start labelling (an explicit act: a queue, the panel's focus, the key that enters labelling). When
        nobody said who labels, ask first (:attr:`annotator_wanted`): labelling starts once the name is set.
        Returns whether labelling is on now."""
        if self.labelling:
            return True
        if not self.annotator_known:
            if not self._start_when_named:
                self._start_when_named = True
                self.annotator_wanted.emit()
            return False
        self.mode = Mode.LABELLING
        self.mode_changed.emit(self.mode.value)
        if self.save_state == "error" and self.save_reason.startswith("browsing"):
            self._set_state("idle")
        return True

    def cancel_start(self) -> None:
        """Nobody was named after all: stay browsing (keys held for the next item are dropped)."""
        self._start_when_named = False
        if not self.labelling:
            self.stop_waiting("labelling did not start")

    def stop(self) -> None:
        """Back to browsing: typing is written first, keys held for the next item are dropped."""
        self._start_when_named = False
        if not self.labelling:
            return
        self.flush_requested.emit()
        self.stop_waiting("labelling stopped")
        self.clear_key_hint()
        self.mode = Mode.BROWSING
        self.mode_changed.emit(self.mode.value)

    def arrived(self) -> None:
        """The item asked for is the one shown already (a queue starting on it): keys held for it apply now."""
        if self._waiting and self._traj is not None:
            QTimer.singleShot(0, self, lambda tid=self._tid: self._replay(tid))

    # --- the session opens another trajectory ---------------------------------------------------------
    def _on_trajectory(self, traj: Trajectory | None) -> None:
        if self.record is not None:
            # leaving the previous trajectory: its typing and time were for it
            self.flush_requested.emit()
            self._add_time_spent()
        self._traj = traj
        # The library key: unique, unlike a format's id; a trajectory without one (built in memory) is not labelled.
        self._tid = None if traj is None else traj.key
        self._key = None if traj is None else self.session.key
        self._touched = False
        self.clear_key_hint()
        self._opened_at = time.monotonic() if traj is not None else None
        self.record = None
        self.trajectory_changed.emit(traj)
        if self.read_only is None:
            self._set_state("idle")
        else:
            self._set_state("readonly", self.read_only)
        self._reload()
        if self._waiting:
            if traj is None and self.session.loading:
                self._wait_timer.start()  # the next item is on its way: the keys keep waiting for it
            elif traj is None:
                self.stop_waiting("the next item did not open")
            else:
                # After the session has placed its playhead (it opens the trajectory first, then moves to step 0):
                # `r` held meanwhile marks the step on screen. Keys pressed until then queue behind the held ones.
                QTimer.singleShot(0, self, lambda tid=self._tid: self._replay(tid))

    def _on_loading(self) -> None:
        """Another run is being opened while labelling: keys typed meanwhile are held for it (they would otherwise
        reach whatever widget has focus, or be lost)."""
        if self.session.loading and self.labelling and not self._waiting:
            self.start_waiting()

    # --- keys ---------------------------------------------------------------------------------------
    def takes(self, key: str) -> bool:
        """Whether :meth:`press` acts on ``key`` now: the labelling keys while labelling (or holding keys for the
        next item), Esc only while it means something (see :meth:`wants_escape`), undo and redo always. Browsing takes
        no other key."""
        if key not in KEYS:
            return False
        if key == "escape":
            return self.wants_escape()
        if key in ("undo", "redo"):
            return True  # taking back a change made while labelling writes no new label
        return self.labelling or self._waiting

    def wants_escape(self) -> bool:
        """Whether Esc means something now (a half-typed key hint, keys held for the next item); otherwise it is
        left to the window (cancel background work)."""
        return bool(self._key_hint) or self._waiting

    def press(self, key: str) -> bool:
        """Act on one labelling key (:data:`KEYS`: a digit, ``s f u v r c``, ``h n m d``, ``enter``, ``escape``,
        ``undo``, ``redo``); returns whether it was used. While the next item is opening (after Enter), keys are
        held for it (undo and redo act at once; Esc drops the held keys). Browsing, no key is used (nothing is
        written)."""
        if not self.takes(key):
            return False
        if self._waiting and key not in ("undo", "redo"):
            if key == "escape":
                self.stop_waiting("cancelled with Esc")
            else:
                self._held.append(key)
            return True
        if key == "undo":
            self.undo()
        elif key == "redo":
            self.redo()
        elif key.isdigit():
            self.type_key_digit(key)
        elif key in VERDICT_KEYS:
            self.set_verdict(VERDICT_KEYS[key])
        elif key in HARM_VERDICT_KEYS:
            self.set_harm_verdict(HARM_VERDICT_KEYS[key])
        elif key == "d":
            self.mark_first_harm()
        elif key == "v":
            self.cycle_verdict()
        elif key == "r":
            self.mark_root_cause()
        elif key == "c":
            self.toggle_cascade()
        elif key == "enter":
            self.finish()
        else:
            self.clear_key_hint()
        return True

    def type_key_digit(self, digit: str) -> None:
        """Feed one digit of a key hint: toggles the label once the hint is complete."""
        self._key_hint += digit
        lab = self.taxonomy.by_key(self._key_hint)
        if lab is not None:
            self.clear_key_hint()
            self.toggle_label(self.taxonomy.label_id(lab.code))
        elif self.taxonomy.is_key_prefix(self._key_hint):
            group = next((g.name for g in self.taxonomy.labels if g.is_group and
                          any(c.key and c.key.startswith(self._key_hint) for c in g.children)), "")
            self.key_hint_changed.emit(f"key {self._key_hint}… {group}")
            self._key_timer.start()
        else:
            self.key_hint_changed.emit(f"no label has key {self._key_hint}")
            self._key_hint = ""

    def clear_key_hint(self) -> None:
        self._key_timer.stop()
        self._key_hint = ""
        self.key_hint_changed.emit("")

    # --- type-ahead -------------------------------------------------------------------------------
    @property
    def waiting(self) -> bool:
        """Whether keys wait for the next item (Enter was pressed and it has not opened yet)."""
        return self._waiting

    def start_waiting(self) -> None:
        """Hold the keys pressed from now until another trajectory opens (after Enter, or while a queue opens its
        first item), then replay them on it."""
        self._held.clear()
        self._wait_timer.start()
        if not self._waiting:
            self._waiting = True
            self.waiting_changed.emit(True)

    def _wait_timed_out(self) -> None:
        if self.session.loading:
            self._wait_timer.start()  # still loading (a long alignment): the item is coming, keep its keys
        else:
            self.stop_waiting("the next item did not open")

    def stop_waiting(self, reason: str = "") -> None:
        """Stop holding keys: no next item is coming (end of the queue, a load failed). Held keys are dropped and
        the save state says so."""
        self._wait_timer.stop()
        dropped, self._held = len(self._held), []
        if dropped:
            self._set_state("error", f"{dropped} key(s) not applied: {reason or 'no next item'}")
        if self._waiting:
            self._waiting = False
            self.waiting_changed.emit(False)

    def _replay(self, tid: str | None) -> None:
        """Apply the keys held while trajectory ``tid`` was opening, in order, now that it is shown."""
        if not self._waiting or tid != self.trajectory_id:
            return
        held, self._held = self._held, []
        self._wait_timer.stop()
        self._waiting = False
        self.waiting_changed.emit(False)
        for i, key in enumerate(held):
            if self._waiting:  # a held Enter moved on again: the rest waits for the item after
                self._held.extend(held[i:])
                break
            self.press(key)

    # --- operations (the keys', the panel's) -------------------------------------------------------
    def set_field(self, field: str, value: Any) -> None:
        """Set a scalar field of the record (``verdict``, ``root_cause_module``, ``notes``...), undoably."""
        old = getattr(self.record, field) if self.record is not None else None
        self._push(f"set {field}", _Edit("field", field), old, value)

    def set_verdict(self, verdict: str | None) -> None:
        """Set the verdict (success/failure/unsure or None)."""
        self.set_field("verdict", verdict)

    def cycle_verdict(self) -> None:
        cur = self.record.verdict if self.record else None
        order = list(VERDICTS)
        self.set_verdict(order[(order.index(cur) + 1) % len(order)] if cur in order else order[0])

    def toggle_label(self, label_id: str) -> None:
        """Add or remove a label (``taxonomy:code``)."""
        if not self._writable():
            return
        present = self.record is not None and label_id in self.record.labels
        self._push(f"toggle {label_id}", _Edit("label", label_id), present, not present)

    def set_harm_verdict(self, verdict: str | None) -> None:
        """Set the safety verdict (harmful/safe/unsure or None)."""
        self.set_field("harm_verdict", verdict)

    def toggle_harm_type(self, harm_type: str) -> None:
        """Add or remove a harm type (a label id of the ``harm`` taxonomy, ``harm:<code>``)."""
        if not self._writable():
            return
        present = self.record is not None and harm_type in self.record.harm_types
        self._push(f"toggle {harm_type}", _Edit("harm_type", harm_type), present, not present)

    def set_first_harmful_step(self, step: int | None) -> None:
        self.set_field("first_harmful_step", step)

    def mark_first_harm(self) -> None:
        """Mark the session's current step as the first harmful step (or clear it when it already is)."""
        step = self.session.step
        if step < 0:
            return
        cur = self.record.first_harmful_step if self.record else None
        self.set_first_harmful_step(None if cur == step else step)

    def set_root_cause(self, step: int | None) -> None:
        self.set_field("root_cause_step", step)

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
        self._push(f"cascade {step_text(step)}", _Edit("cascade", step=step), old, None if old is not None else effect)

    def set_step_comment(self, step: int, text: str | None) -> None:
        if self.store is None or self.trajectory_id is None:
            return
        old = self.record.step_comments.get(step) if self.record else None
        new = text if text and text.strip() else None
        self._push(f"comment on {step_text(step)}", _Edit("comment", step=step), old, new)

    def typing(self) -> None:
        """A view holds typing not written yet (it writes it when typing pauses)."""
        self._set_state("pending")

    def typing_written(self) -> None:
        """The view wrote its typing (or had nothing new to write)."""
        if self.save_state == "pending":
            self._set_state("saved")

    def undo(self) -> None:
        """Undo the last change (text still being typed is written first, so it is what gets undone)."""
        self.flush_requested.emit()
        self.undo_stack.undo()

    def redo(self) -> None:
        self.undo_stack.redo()

    def finish(self) -> None:
        """Save everything (text, time spent) and ask for the next item once it has landed (or failed, which the
        save state shows): the next item never opens on an unsaved label. Keys pressed until it opens wait for it.

        The time spent is bookkeeping: its write is queued after the labels' but the next item does not wait for
        it (a failure would still be shown, naming the trajectory)."""
        self.flush_requested.emit()
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

    # --- writes ---------------------------------------------------------------------------------
    def _writable(self) -> bool:
        """Whether a change can be made now; if not, the save state says why."""
        if not self.labelling:
            self._set_state("error", "browsing: labels are not written until labelling starts")
            return False
        if self.read_only is not None:
            self._set_state("readonly", self.read_only)
            return False
        if self.store is None or self.trajectory_id is None:
            self._set_state("error", "no annotation store open" if self.store is None else "no trajectory open")
            return False
        return True

    def _push(self, text: str, edit: _Edit, old: Any, new: Any) -> None:
        if not self._writable() or old == new:
            return
        tid = self.trajectory_id
        assert tid is not None  # _writable
        self.undo_stack.push(_StoreCommand(self, f"{text} ({tid})", edit, old, new, tid, self._key))

    def _apply(self, edit: _Edit, value: Any, tid: str | None = None, key: str | None = None,
               on_failed: Callable[[], None] | None = None, drop_if_empty: bool = False) -> bool:
        """Queue the write of ``value`` through ``edit`` for trajectory ``tid`` (default: the one shown) and show
        it at once. Returns False when it was refused (read-only, no store, no trajectory); a write that fails in
        the worker is reported when it lands (and ``on_failed`` is called). ``drop_if_empty`` (an undo): a record
        left with nothing labelled is removed in the same worker call, not kept as an empty opinion.

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
        if shown and self.record is not None:
            edit.show(self.record, value)
            self._record_changed()
        self._pending += 1
        self._set_state("saving")

        def write() -> None:
            edit.write(store, tid, who, value)
            if drop_if_empty:
                rec = store.get(tid, who)
                if rec is not None and rec.is_empty():
                    store.delete(tid, who, actor=who)

        self.writes.submit(f"Saving a label of {tid}", write,
                            on_result=lambda _r: self._landed(tid, None, on_failed),
                            on_error=lambda exc: self._landed(tid, exc, on_failed))
        return True

    def _landed(self, tid: str, exc: BaseException | None, on_failed: Callable[[], None] | None) -> None:
        """A queued write finished (``exc`` None: it is in the store)."""
        self._pending -= 1
        if exc is None:
            self._saved(tid)
        else:
            if on_failed is not None:
                on_failed()  # before the failure is told: whoever hears it sees the stack as it now is
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

    def _drop_failed_commands(self) -> None:
        """Take the commands whose write failed off the top of the undo stack: they changed nothing, so there is
        nothing to undo. (Writes land in order, so a failed one under a later one is taken off once that one has
        landed, or failed too.)"""
        stack = self.undo_stack
        while stack.index() > 0:
            cmd = stack.command(stack.index() - 1)
            if not (isinstance(cmd, _StoreCommand) and cmd.failed):
                break
            cmd.setObsolete(True)
            stack.undo()  # an obsolete command is deleted by undo (its undo writes nothing: it failed)

    def _set_state(self, state: SaveState, reason: str = "") -> None:
        self.save_state, self.save_reason = state, reason
        self.state_changed.emit(state, reason)

    # --- the record -------------------------------------------------------------------------------
    def _reload(self) -> None:
        """Read the stored record (the store is the truth; the views only mirror it)."""
        tid = self.trajectory_id
        self.record = None
        if tid is not None and self.store is not None and self.read_only is None:
            try:
                self.record = self.store.get(tid, self.annotator) or Annotation(tid, self.annotator)
            except StoreUnavailable as exc:
                self._enter_read_only(str(exc))
                return
            except RollscopeError as exc:
                self._set_state("error", str(exc))
        self._record_changed()

    def _record_changed(self) -> None:
        self.record_changed.emit(self.record)
        marks = self.record.marks() if self.record is not None else {}
        if marks != self._marks:
            self._marks = marks
            self.marks_changed.emit(dict(marks))

    # --- read-only while the store is out of reach ----------------------------------------------
    def _enter_read_only(self, reason: str) -> None:
        changed = reason != self.read_only
        self.read_only = reason
        self._set_state("readonly", reason)
        if changed:
            self.read_only_changed.emit(reason)
        self.record = None  # what the store holds cannot be read: show nothing rather than something stale
        self._record_changed()
        if not self._probing:
            self._retry_timer.start(self.RETRY_MS)

    def _leave_read_only(self) -> None:
        self._retry_timer.stop()
        if self.read_only is not None:
            self.read_only = None
            self._set_state("idle")
            self.read_only_changed.emit(None)

    def _probe(self) -> None:
        """Ask the store whether it answers again (reopen it when the library could not open it), in the write
        queue's worker."""
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
        self.writes.submit("Checking the label store", probe, on_result=self._recovered,
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
