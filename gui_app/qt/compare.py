"""Two runs side by side, synchronised by step: two agents on the same task, a success beside a failure.

The open trajectory (the app's :class:`~gui_app.qt.session.Session`, "A") leads; the compared one ("B") lives in a
second session of its own, with its own frames and score, shown by a second video view and step table. A
:class:`StepSync` keeps B on A's step: when A moves to step *k*, B goes to its step *k* (its last step when it has
fewer), and within a step B's frame keeps the same fraction of its step's span as A's, so playing A plays B step for
step even when the two agents took different times. Clicking a step of B moves A there too. Everything else (labels,
the timeline, scoring) stays with A.

:class:`CompareController` loads B through a :class:`~gui_app.qt.controllers.TrajectoryLoader` of its own (the one
door to threads); :class:`ComparePane` shows it; :class:`ComparePicker` lists the library's rows to pick B from, the
same task first.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHBoxLayout, QLabel, QLineEdit, QListWidget,
                               QListWidgetItem, QSizePolicy, QSplitter, QToolButton, QVBoxLayout, QWidget)

from gui_app.core.library.catalog import CatalogRow
from gui_app.core.errors import RollscopeError
from gui_app.core.trajectory.model import Trajectory
from gui_app.qt.controllers import TrajectoryLoader
from gui_app.qt.notify import Notifier
from gui_app.qt.session import Session
from gui_app.qt.step_table import StepTable
from gui_app.qt.score_text import score_summary
from gui_app.qt.video_view import VideoView
from gui_app.qt.workers import Runner


def step_span(starts: list[int], step: int, length: int) -> tuple[int, int]:
    """``[first, end)`` frames of ``step`` given each step's first frame and the number of frames."""
    first = starts[step]
    end = starts[step + 1] if step + 1 < len(starts) else length
    return first, max(end, first + 1)


def follow_frame(lead_starts: list[int], lead_length: int, lead_frame: int, follow_starts: list[int],
                 follow_length: int) -> tuple[int, int]:
    """(step, frame) of the follower for the leader at ``lead_frame``: the same step (the follower's last when it
    has fewer), at the same fraction of that step's span."""
    if not lead_starts or not follow_starts:
        return -1, -1
    k = max(min(_step_of(lead_starts, lead_frame), len(lead_starts) - 1), 0)
    a0, a1 = step_span(lead_starts, k, lead_length)
    frac = min(max((lead_frame - a0) / (a1 - a0), 0.0), 1.0)
    j = min(k, len(follow_starts) - 1)
    if j < k:  # the follower has no step k: it waits at the end of its last step
        frac = 1.0
    b0, b1 = step_span(follow_starts, j, follow_length)
    return j, min(b0 + int(frac * (b1 - b0)), b1 - 1, max(follow_length - 1, 0))


def _step_of(starts: list[int], frame: int) -> int:
    k = 0
    for i, s in enumerate(starts):
        if s <= frame:
            k = i
        else:
            break
    return k


class StepSync(QObject):
    """Keeps ``follower`` on ``lead``'s step (and the same fraction of it); a step picked in the follower moves the
    lead. Changes go through the sessions' setters only."""

    def __init__(self, lead: Session, follower: Session, parent: QObject | None = None):
        super().__init__(parent)
        self.lead, self.follower = lead, follower
        self._busy = False
        lead.frame_changed.connect(lambda _f: self.sync())
        lead.step_changed.connect(lambda _s: self.sync())
        lead.trajectory_changed.connect(lambda _t: self.sync())
        follower.trajectory_changed.connect(lambda _t: self.sync())
        follower.step_changed.connect(self._follower_step)
        # Playing, the follower decodes ahead of its playhead too (the video view's plan follows `playing`).
        lead.playing_changed.connect(follower.set_playing)

    def sync(self) -> None:
        """Move the follower to where the lead is."""
        lead, fol = self.lead, self.follower
        if self._busy or lead.trajectory is None or fol.trajectory is None or lead.step < 0:
            return
        self._busy = True
        try:
            if lead.source is not None and fol.source is not None and lead.frame >= 0:
                step, frame = follow_frame(lead.step_frames, lead.source.frame_count, lead.frame, fol.step_frames,
                                           fol.source.frame_count)
                fol.set_step(step)
                if frame >= 0:
                    fol.set_frame(frame)
            else:
                fol.set_step(min(lead.step, fol.trajectory.n_steps - 1))
        finally:
            self._busy = False

    def _follower_step(self, step: int) -> None:
        if self._busy or self.lead.trajectory is None:
            return
        self._busy = True
        try:
            self.lead.set_step(min(step, self.lead.trajectory.n_steps - 1))
        finally:
            self._busy = False
        self.sync()


class CompareController(QObject):
    """The compared run: its session, its loader and the step sync with the app's session.

    Signals:
        opened(str): the key of the run now compared.
        closed(): comparing stopped.
    """

    opened = Signal(str)
    closed = Signal()

    def __init__(self, runner: Runner, session: Session, notifier: Notifier,
                 source_options: dict[str, Any] | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.lead = session
        self.notifier = notifier
        self.session = Session(self)  # B's own: its frames, step and score
        self.loader = TrajectoryLoader(runner, self.session, notifier, source_options, self)
        self.sync = StepSync(session, self.session, self)
        self.loader.loaded.connect(self.opened)
        session.library_changed.connect(lambda _lib: self.close())

    @property
    def active(self) -> bool:
        return self.session.trajectory is not None or self.loader.busy

    def open(self, key: str) -> None:
        """Compare the app's open run with ``key`` (loaded in a worker, with its stored score)."""
        self.session.set_library(self.lead.library)  # the loader reads B's stored score from it
        self.loader.open(key)

    def close(self) -> None:
        was = self.active or self.session.error is not None
        self.loader.clear()
        self.session.set_trajectory(None)
        self.session.set_library(None)
        if was:
            self.closed.emit()


class ComparePane(QWidget):
    """The compared run: a header (its id, outcome and score in words), its video and its step table.

    It also owns :attr:`lead_title`, the "A: ..." header the window puts over its own video, shown only while a run
    is compared, and shows itself while there is one.

    Signals:
        active_changed(bool): comparing started / stopped (the View menu's check mark follows it).
    """

    active_changed = Signal(bool)

    def __init__(self, controller: CompareController, parent: QWidget | None = None):
        super().__init__(parent)
        self.controller = controller
        session = controller.session
        self.lead_title = QLabel()
        self.lead_title.setTextFormat(Qt.TextFormat.RichText)
        self.lead_title.setWordWrap(True)
        self.lead_title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.lead_title.hide()
        self.title = QLabel(self)
        self.title.setTextFormat(Qt.TextFormat.RichText)
        self.title.setWordWrap(True)
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.close_button = QToolButton(self)
        self.close_button.setText("✕")
        self.close_button.setToolTip("Stop comparing (View → Compare side by side)")
        self.close_button.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.close_button.clicked.connect(controller.close)
        self.video = VideoView(session, self)
        self.steps = StepTable(session, self)
        self.steps.setMaximumHeight(170)
        self.steps.setFocusPolicy(Qt.FocusPolicy.ClickFocus)
        head = QHBoxLayout()
        head.addWidget(self.title, 1)
        head.addWidget(self.close_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        layout.addLayout(head)
        layout.addWidget(self.video, 1)
        layout.addWidget(self.steps)
        for s in (session, controller.lead):
            s.trajectory_changed.connect(lambda _t: self._update_title())
            s.scores_changed.connect(lambda _s: self._update_title())
        controller.opened.connect(lambda _k: self._set_shown(True))
        controller.closed.connect(lambda: self._set_shown(False))
        self._update_title()
        self.hide()

    def _update_title(self) -> None:
        c = self.controller
        for label, letter, session in ((self.title, "B", c.session), (self.lead_title, "A", c.lead)):
            label.setText(run_header(letter, session.trajectory, session))
            traj = session.trajectory
            label.setToolTip(score_summary(session.scores, traj.outcome.success)[1] if traj is not None else "")

    def _set_shown(self, shown: bool) -> None:
        self.setVisible(shown)
        self.lead_title.setVisible(shown)
        self.active_changed.emit(shown)

    def pick(self, parent: QWidget) -> None:
        """Ask which library run to show beside the open one (same task first) and open it; says why not when
        nothing is open."""
        c = self.controller
        if c.lead.trajectory is None:
            c.notifier.info("Open a trajectory first: the compared run is shown beside it")
            self.active_changed.emit(False)
            return
        rows, current = library_rows(c.lead)
        picker = ComparePicker(rows, current, parent)
        key = picker.chosen_key() if picker.exec() == QDialog.DialogCode.Accepted else None
        if key is None:
            self.active_changed.emit(c.active)
            return
        c.open(key)


class ViewerArea(QWidget):
    """The centre of the window: the video (under the run header, and "A: ..." while comparing) with the compared run
    beside it, half and half, and the transport bar under both."""

    def __init__(self, video: VideoView, pane: ComparePane, transport: QWidget, parent: QWidget | None = None,
                 header: QWidget | None = None):
        super().__init__(parent)
        left = QWidget(self)
        lv = QVBoxLayout(left)
        lv.setContentsMargins(0, 0, 0, 0)
        lv.setSpacing(2)
        if header is not None:  # the open run's header (its instruction), over "A: ..." while comparing
            lv.addWidget(header)
        lv.addWidget(pane.lead_title)
        lv.addWidget(video, 1)
        self.splitter = QSplitter(Qt.Orientation.Horizontal, self)
        self.splitter.addWidget(left)
        self.splitter.addWidget(pane)
        self.splitter.setChildrenCollapsible(False)
        self.setMinimumSize(320, 240)  # docks give way before the video is squeezed to a strip
        v = QVBoxLayout(self)
        v.setContentsMargins(0, 0, 0, 0)
        v.setSpacing(0)
        v.addWidget(self.splitter, 1)
        v.addWidget(transport)
        pane.active_changed.connect(self._halves)

    def _halves(self, active: bool) -> None:
        if active:
            half = max(self.splitter.width() // 2, 1)
            self.splitter.setSizes([half, half])


def run_header(letter: str, traj: Trajectory | None, session: Session) -> str:
    """``B: id (n steps)`` over the score in words: the header of one side."""
    if traj is None:
        return f"<b>{letter}</b>: <span style='color:#999'>nothing open</span>"
    summary, _tip = score_summary(session.scores, traj.outcome.success)
    return (f"<b>{letter}: {traj.id}</b> <span style='color:#999'>({traj.n_steps} steps)</span><br>"
            f"<span style='font-size:8pt'>{summary}</span>")


class ComparePicker(QDialog):
    """Pick the run to compare with: the library's rows, those of the open run's task first, filtered by typing."""

    def __init__(self, rows: list[CatalogRow], current: CatalogRow | None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Compare side by side with…")
        self.filter = QLineEdit(self)
        self.filter.setPlaceholderText("Filter by instruction, task or id")
        self.list = QListWidget(self)
        task = current.task if current is not None else None
        own = current.key if current is not None else None
        ordered = sorted((r for r in rows if r.key != own and not r.error),
                         key=lambda r: (r.task != task or task is None, r.instruction.casefold()))
        for r in ordered:
            outcome = "" if r.success is None else (" · success" if r.success else " · failure")
            item = QListWidgetItem(f"{r.task or r.format or ''}{outcome} — {r.instruction or r.id}")
            item.setData(Qt.ItemDataRole.UserRole, r.key)
            item.setToolTip(r.key)
            self.list.addItem(item)
        if self.list.count():
            self.list.setCurrentRow(0)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.list.itemActivated.connect(lambda _i: self.accept())
        self.filter.textChanged.connect(self._filter)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Runs of the same task come first. The two play step by step together.", self))
        layout.addWidget(self.filter)
        layout.addWidget(self.list, 1)
        layout.addWidget(buttons)
        self.resize(640, 420)

    def _filter(self, text: str) -> None:
        words = text.casefold().split()
        for i in range(self.list.count()):
            item = self.list.item(i)
            hay = (item.text() + " " + str(item.data(Qt.ItemDataRole.UserRole))).casefold()
            item.setHidden(not all(w in hay for w in words))

    def chosen_key(self) -> str | None:
        item = self.list.currentItem()
        return None if item is None or item.isHidden() else str(item.data(Qt.ItemDataRole.UserRole))


def library_rows(session: Session) -> tuple[list[CatalogRow], CatalogRow | None]:
    """Every row of the open library and the open run's row (the catalog's cached snapshot: no disk read once it
    is warm)."""
    library = session.library
    if library is None:
        return [], None
    try:
        rows = library.catalog.query()
    except RollscopeError:
        return [], None
    current = next((r for r in rows if r.key == session.key), None)
    return rows, current
