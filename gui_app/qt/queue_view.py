"""Labelling queues in the app: pick or build a queue, go through it from the keyboard.

:class:`QueueController` is the model: the annotation store's queues
(:class:`gui_app.core.annotation.queue.LabelQueue`, the
same ones ``rollscope queue`` builds), the one being worked through, the annotator's items in it and which of them
are labelled. It builds a queue of what the library shows in a worker (failures first, model/outcome disagreement,
model uncertainty, teach the model, where the two models that scored the library last disagree, and the runs people
labelled possibly harmful or the harm judge flags), and asks for
an item to be opened with :attr:`QueueController.open_requested`; the main window opens it like a library selection.
:meth:`QueueController.advance` is what Enter (the label panel's save & next) does while a queue is active: the next
unlabelled item after the current one.

:class:`QueueView` shows it: a queue picker, the build buttons, the items with a tick for each labelled one and a
progress line. It changes state only through the controller.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QBrush, QColor, QFont
from PySide6.QtWidgets import (QComboBox, QGridLayout, QLabel, QListWidget, QListWidgetItem, QPushButton,
                               QSizePolicy, QVBoxLayout, QWidget)

from gui_app.core.library.catalog import Catalog
from gui_app.core.errors import RollscopeError
from gui_app.core.annotation.queue import MODELS, LabelQueue, QueueItem, model_gaps
from gui_app.core.store.interface import AnnotationStore
from gui_app.core.trajectory.model import Trajectory
from gui_app.qt.action_table import ACTIONS
from gui_app.qt.library_view import LibraryModel
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.workers import Job, Reporter, Runner

# The orderings an annotator can build from the app: (title, orderings applied in turn; later ones break ties).
ORDERS: dict[str, tuple[str, tuple[str, ...]]] = {
    "failures": ("failures first", ("failures", "disagreement", "uncertain")),
    "disagreement": ("model disagrees with outcome", ("disagreement", "failures", "uncertain")),
    "uncertain": ("model least sure", ("uncertain", "failures", "disagreement")),
    "teach": ("teach the model", ("teach",)),
    "models": ("models disagree", ("models",)),
    "harm": ("possible harm", ("harm",)),
}
# The build buttons' text: short enough that they fit a side column whole (the tooltip has the ordering in full).
BUTTON_TEXT = {"failures": "Failures", "disagreement": "Model vs outcome", "uncertain": "Least sure",
               "teach": "Teach the model", "models": "Models differ", "harm": "Possible harm"}
BUTTON_COLUMNS = 3
_DONE_BRUSH = QBrush(QColor(30, 130, 60))


def queue_name(order: str, annotator: str) -> str:
    """The name of the queue the app builds for ``annotator`` with ordering ``order`` (one per pair: rebuilding
    replaces it; what is labelled stays labelled, since progress is read from the store)."""
    return f"{annotator}: {ORDERS[order][0]}"


def build_queue_task(catalog: Catalog, store: AnnotationStore, name: str, annotator: str, order: Sequence[str],
                     text: str, filters: dict[str, Any], rep: Reporter) -> str:
    """Order the library's rows (``text`` and ``filters`` as the library shows them, load errors left out) for
    labelling and save them as queue ``name`` for ``annotator``; returns the name. Runs in a worker."""
    rep.progress(0, None, "reading the library")
    rows = catalog.query(text, {**filters, "has_error": False})
    rep.check()
    ood = catalog.ood_scores() if "teach" in order else None
    gaps = None
    if MODELS in order:  # the two models that scored the library last
        try:
            pair, gaps = model_gaps(catalog)
        except ValueError as exc:
            raise RollscopeError(f"{catalog.db_path}: {exc}") from exc
        rep.progress(0, None, f"{pair[0]} and {pair[1]} disagree on {len(gaps):,} runs")
    rep.progress(0, None, f"ordering {len(rows):,} trajectories")
    LabelQueue.build(store, name, rows, [annotator], 1, order, ood=ood, model_gaps=gaps)
    return name


class QueueController(QObject):
    """The queue being worked through, for one annotator, over the open library's store and catalog.

    Signals:
        changed(): the queues, the active queue, its items or the current item changed (views re-read).
        open_requested(str): open this catalog key in the viewer.
        started(str): a queue became active (its name).
    """

    changed = Signal()
    open_requested = Signal(str)
    started = Signal(str)

    def __init__(self, runner: Runner, notifier: Notifier, annotator: str = "annotator",
                 parent: QObject | None = None, library: LibraryModel | None = None):
        super().__init__(parent)
        self.runner, self.notifier, self.annotator = runner, notifier, annotator
        # What the library lists (its search text and filters) is what a queue holds.
        self.library = library
        self.catalog: Catalog | None = None
        self.store: AnnotationStore | None = None
        self.queue: LabelQueue | None = None
        self.items: list[QueueItem] = []
        self.current_id: str | None = None  # the trajectory open in the viewer
        self.job: Job | None = None
        self._names: list[str] = []
        self.open_queue = False  # the active queue is claimed item by item (a team's open queue)
        self._claiming = False

    def follow(self, session: Session) -> None:
        """Work over whatever library ``session`` has open; the trajectory it shows is the current item."""
        session.library_changed.connect(lambda lib: self.set_library(lib.catalog, lib.store) if lib is not None
                                        else self.set_library(None, None))
        # While the next run loads nothing is open, but the queue is still where it was: [ and ] count from there.
        session.trajectory_changed.connect(lambda traj: None if traj is None and session.loading
                                           else self.on_trajectory(traj))

    # -- state -------------------------------------------------------------------------------------------

    @property
    def active(self) -> bool:
        return self.queue is not None

    @property
    def name(self) -> str | None:
        return None if self.queue is None else self.queue.name

    def names(self) -> list[str]:
        """The store's queues (built here or with ``rollscope queue build``)."""
        return list(self._names)

    def set_library(self, catalog: Catalog | None, store: AnnotationStore | None) -> None:
        """Work over another library (None, None: none open). Leaves any active queue."""
        if self.job is not None:
            self.job.cancel()
        self.catalog, self.store = catalog, store
        self.queue, self.items = None, []
        self._names = self._read_names()
        self.changed.emit()

    def set_annotator(self, annotator: str) -> None:
        self.annotator = annotator
        self.refresh()

    def _read_names(self) -> list[str]:
        if self.store is None:
            return []
        try:
            return [q["name"] for q in self.store.queues()]
        except RollscopeError as exc:
            self.notifier.error(f"cannot read the labelling queues: {exc}")
            return []

    def refresh(self) -> None:
        """Re-read the annotator's items and which are labelled (after a label was saved)."""
        if self.queue is not None:
            try:
                self.items = self.queue.items(self.annotator)
            except RollscopeError as exc:
                self.notifier.error(f"cannot read queue {self.queue.name!r}: {exc}")
                self.items = []
        self.changed.emit()

    def on_saved(self, trajectory_id: str) -> None:
        """A label was saved: the item's tick may change (one record read, not the whole queue)."""
        mine = [it for it in self.items if it.trajectory_id == trajectory_id]
        if self.queue is None or not mine or self.store is None:
            return
        try:
            rec = self.store.get(trajectory_id, self.annotator)
        except RollscopeError as exc:
            self.notifier.error(f"cannot read the label of {trajectory_id}: {exc}")
            return
        try:
            done = self.queue.is_done(rec)  # the success verdict, or the harm verdict in a harm queue
        except RollscopeError as exc:
            self.notifier.error(f"cannot read queue {self.queue.name!r}: {exc}")
            return
        for it in mine:
            it.done = done
        self.changed.emit()

    def on_trajectory(self, traj: Trajectory | None) -> None:
        """The viewer opened ``traj`` (from the queue, the library or j/k): it is the current item if queued."""
        self.current_id = None if traj is None else traj.key
        self.changed.emit()

    def current_position(self) -> int:
        """Index of the current trajectory in :attr:`items`, or -1."""
        return next((i for i, it in enumerate(self.items) if it.trajectory_id == self.current_id), -1)

    def progress(self) -> tuple[int, int]:
        """(labelled, assigned) for the annotator in the active queue."""
        return sum(it.done for it in self.items), len(self.items)

    # -- actions -----------------------------------------------------------------------------------------

    def build(self, order: str, text: str | None = None, filters: dict[str, Any] | None = None) -> Job | None:
        """Build (or rebuild) the annotator's queue with ``order`` (a key of :data:`ORDERS`) in a worker; it becomes
        active and its first unlabelled item opens. It holds what the library shows: ``text`` and ``filters``, by
        default those of :attr:`library` (the library model)."""
        if self.catalog is None or self.store is None:
            self.notifier.info("Open a folder first (Ctrl+O)" if self.catalog is None else
                               "Labels cannot be saved for this library, so it has no queues")
            return None
        if self.job is not None:
            self.notifier.info("A queue is being built")
            return None
        name = queue_name(order, self.annotator)
        lib = self.library
        shown_text, shown_filters = (lib.text, lib.filters) if lib is not None else ("", {})
        text = shown_text if text is None else text
        flt = dict(shown_filters if filters is None else filters)
        catalog, store, annotator, chain = self.catalog, self.store, self.annotator, ORDERS[order][1]
        job = self.runner.submit(f"Building queue {name!r}",
                                 lambda rep: build_queue_task(catalog, store, name, annotator, chain, text, flt, rep),
                                 on_result=lambda n: self._built(n, store), start=False)
        job.finished.connect(lambda: setattr(self, "job", None))
        self.job = job
        self.runner.start(job)
        return job

    def _built(self, name: str, store: AnnotationStore) -> None:
        if store is not self.store:
            return  # another library was opened meanwhile
        self._names = self._read_names()
        self.select(name)

    def select(self, name: str | None, open_next: bool = True) -> None:
        """Make queue ``name`` active (None: leave the queue; Enter follows the library order again) and open the
        annotator's first unlabelled item."""
        if name is None or self.store is None:
            self.queue, self.items, self.open_queue = None, [], False
            self.changed.emit()
            return
        self.queue = LabelQueue(self.store, name)
        self.open_queue = self._is_open(name)
        self.refresh()
        if not self.items and not self.open_queue:
            self.notifier.info(f"Queue {name!r} has nothing for {self.annotator}")
        else:
            done, total = self.progress()
            self.notifier.info(f"Queue {name!r}: {done}/{total} labelled by {self.annotator}")
        self.started.emit(name)
        if open_next and (self.items or self.open_queue):
            self.advance(from_start=True)

    def advance(self, from_start: bool = False) -> bool:
        """Open the next unlabelled item after the current one (wrapping round); False when no queue is active
        (the caller then moves through the library instead)."""
        if self.queue is None:
            return False
        self.refresh()
        after = None if from_start else self.current_id
        nxt = next((it for it in self._rotated(after) if not it.done), None)
        if nxt is None and self.open_queue:
            self._claim()
            return True
        if nxt is None:
            done, total = self.progress()
            self.notifier.info(f"Queue {self.queue.name!r} is done: {done}/{total} labelled")
            return True
        self._open(nxt)
        return True

    def _is_open(self, name: str) -> bool:
        """Whether queue ``name`` is open to claims (built without annotators, for a team)."""
        try:
            return any(q["name"] == name and q["spec"].get("open") for q in self.store.queues()) \
                if self.store is not None else False
        except RollscopeError as exc:
            self.notifier.error(f"cannot read the labelling queues: {exc}")
            return False

    def _claim(self) -> None:
        """Take the annotator's next item of the open queue in a worker (a write to a store that may be a team's
        server, never in the GUI thread), then open it."""
        if self.queue is None or self._claiming:
            return  # Enter pressed again while a claim is on its way
        queue, annotator = self.queue, self.annotator
        self._claiming = True

        def failed(_exc: BaseException) -> None:
            self._claiming = False  # the runner tells the notifier why

        self.runner.submit(f"Claiming the next item of {queue.name!r}", lambda _rep: queue.claim(annotator),
                           on_result=lambda item: self._claimed(queue, item), on_error=failed, show_progress=False)

    def _claimed(self, queue: LabelQueue, item: QueueItem | None) -> None:
        self._claiming = False
        if queue is not self.queue:
            return  # another queue or library was picked meanwhile
        if item is None:
            done, total = self.progress()
            self.notifier.info(f"Queue {queue.name!r} is done for {self.annotator}: every item has its annotators "
                               f"({done}/{total} labelled by you)")
            return
        self.refresh()
        self._open(item)

    def peek_next(self) -> str | None:
        """The key :meth:`advance` would open (to prefetch it), or None."""
        nxt = next((it for it in self._rotated(self.current_id) if not it.done), None)
        return None if nxt is None else nxt.key

    def _rotated(self, after: str | None) -> list[QueueItem]:
        i = next((n for n, it in enumerate(self.items) if it.trajectory_id == after), -1) if after else -1
        return self.items[i + 1:] + self.items[:i + 1]

    def step(self, delta: int) -> None:
        """Open the item ``delta`` places from the current one, labelled or not (clamped at the ends)."""
        if self.queue is None:
            self.notifier.info("No queue is active (Ctrl+1, Ctrl+2 or Ctrl+3 builds one)")
            return
        if not self.items:
            return
        i = self.current_position()
        target = (0 if delta > 0 else len(self.items) - 1) if i < 0 else min(max(i + delta, 0), len(self.items) - 1)
        if target == i:
            self.notifier.info("End of the queue" if delta > 0 else "Start of the queue")
            return
        self._open(self.items[target])

    def open_position(self, i: int) -> None:
        if 0 <= i < len(self.items):
            self._open(self.items[i])

    def _open(self, item: QueueItem) -> None:
        if not item.key:
            self.notifier.error(f"queue item {item.trajectory_id!r} has no catalog key; rebuild the queue")
            return
        self.open_requested.emit(item.key)


class QueueView(QWidget):
    """The queue panel: pick a queue, build one, see the items and the annotator's progress.

    Args:
        controller: the queue model shown.
        build: what a build button does with its ordering (default: the controller builds it; the app starts
            labelling first, so that keys typed meanwhile wait for the first item).
    """

    NO_QUEUE = "Library order (no queue)"

    def __init__(self, controller: QueueController, parent: QWidget | None = None,
                 build: Callable[[str], object] | None = None):
        super().__init__(parent)
        self.controller = controller
        build = build or controller.build
        self.picker = QComboBox(self)
        self.picker.setToolTip("The queue Enter (save & next) and [ / ] move through")
        buttons = QGridLayout()
        self.build_buttons: dict[str, QPushButton] = {}
        # The window's shortcut for each ordering, where the action table has one (the action queue_<order>).
        keys = {a.name: a.shortcuts[0] for a in ACTIONS if a.shortcuts}
        for n, (order, (title, _chain)) in enumerate(ORDERS.items(), 1):
            b = QPushButton(BUTTON_TEXT[order], self)
            key = keys.get(f"queue_{order}")
            b.setToolTip(f"Build a queue of what the library shows, {title}" + (f" ({key})" if key else ""))
            b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
            # Whole text, in rows of three: a cut "isagrees with o" told nobody what the button builds.
            b.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
            b.clicked.connect(lambda _c=False, o=order: build(o))
            buttons.addWidget(b, (n - 1) // BUTTON_COLUMNS, (n - 1) % BUTTON_COLUMNS)
            self.build_buttons[order] = b
        self.progress_label = QLabel(self)
        self.list = QListWidget(self)
        self.list.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # keys stay with the viewer and the label panel
        self.list.itemActivated.connect(lambda item: controller.open_position(self.list.row(item)))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.picker)
        layout.addLayout(buttons)
        layout.addWidget(self.progress_label)
        layout.addWidget(self.list, 1)
        self.picker.activated.connect(self._picked)
        self._shown: list[tuple[str, bool]] = []
        self._current = -1
        controller.changed.connect(self._show)
        self._show()

    def _picked(self, index: int) -> None:
        name = self.picker.itemData(index)
        if name != self.controller.name:
            self.controller.select(name)

    def _show(self) -> None:
        c = self.controller
        self.picker.blockSignals(True)
        self.picker.clear()
        self.picker.addItem(self.NO_QUEUE, None)
        for name in c.names():
            self.picker.addItem(name, name)
        self.picker.setCurrentIndex(max(self.picker.findData(c.name), 0) if c.name else 0)
        self.picker.blockSignals(False)
        enabled = c.store is not None
        for b in self.build_buttons.values():
            b.setEnabled(enabled)
        if c.queue is None:
            self.progress_label.setText("No queue: Enter (save & next) follows the library order")
        else:
            done, total = c.progress()
            self.progress_label.setText(f"{done}/{total} labelled by {c.annotator}")
        shown = [(it.trajectory_id, it.done) for it in c.items]
        if shown != self._shown:  # rebuilt only when items or ticks change, not on every trajectory opened
            self._shown = shown
            self._current = -1
            self.list.clear()
            for i, it in enumerate(c.items):
                item = QListWidgetItem(f"{'✓' if it.done else '·'} {i + 1}. {it.trajectory_id}")
                item.setToolTip(it.key or it.trajectory_id)
                if it.done:
                    item.setForeground(_DONE_BRUSH)
                self.list.addItem(item)
        current = c.current_position()
        if current != self._current:
            for row, bold in ((self._current, False), (current, True)):
                marked = self.list.item(row) if row >= 0 else None
                if marked is not None:
                    font = QFont(self.list.font())
                    font.setBold(bold)
                    marked.setFont(font)
            self._current = current
            if current >= 0:
                self.list.setCurrentRow(current)

    def rows(self) -> list[str]:
        """The items' text, in order (for tests and screenshots)."""
        return [self.list.item(i).text() for i in range(self.list.count())]
