"""The transport bar under the video: play/pause, step buttons, a scrubber with step markers, time, frame, speed.

Like every view it observes a :class:`~gui_app.qt.session.Session` and changes state only through its setters:
the scrubber seeks with ``set_frame`` (``set_step`` for a trajectory without frames), the buttons call
``toggle_playing`` / ``next_step``, the speed box ``set_speed``. Nothing here takes keyboard focus, so Space, the
arrows and the label keys keep working while the mouse uses the bar.

:class:`Scrubber` paints in one pass: the groove, the played part, the current step's span, a tick at each step's
first frame (step markers), the predicted first deviation and labelled steps, and the handle. It costs one
``paintEvent`` whatever the number of steps (ticks are one ``drawLines`` call).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QLineF, QPointF, QRectF, QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QSizePolicy, QStyle, QToolButton, QWidget

from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Trajectory, step_number, step_text
from gui_app.qt.session import SPEEDS, Session
from gui_app.qt.step_table import format_time

_GROOVE = QColor(70, 70, 78)
_PLAYED = QColor(255, 210, 0, 150)
_STEP_SPAN = QColor(255, 255, 255, 40)
_TICK = QColor(200, 200, 210)
_HANDLE = QColor(255, 210, 0)
_FIRST_DEV = QColor(255, 120, 70)
_MARK = QColor(255, 214, 102)


class Scrubber(QWidget):
    """A seek bar over the session's frames (its steps for a trajectory without frames), marking each step.

    Signals:
        seeked(int): the position the user moved to (frame, or step without frames), after the session was set.
    """

    seeked = Signal(int)

    MARGIN = 8  # pixels left and right of the groove, so the handle at either end is whole

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self._marks: dict[int, str] = {}
        self._dragging = False
        self.setMinimumHeight(24)
        self.setMinimumWidth(80)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setMouseTracking(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        for signal in (session.trajectory_changed, session.frame_changed, session.step_changed,
                       session.scores_changed):
            signal.connect(lambda *_: self.update())

    def sizeHint(self) -> QSize:  # noqa: N802 -- Qt override
        return QSize(400, 24)

    # --- mapping -------------------------------------------------------------------------------
    @property
    def uses_frames(self) -> bool:
        src = self.session.source
        return src is not None and src.frame_count > 0

    @property
    def length(self) -> int:
        """Positions on the bar: frames, or steps for a trajectory without frames."""
        s = self.session
        if self.uses_frames:
            assert s.source is not None
            return s.source.frame_count
        return s.trajectory.n_steps if s.trajectory is not None else 0

    @property
    def position(self) -> int:
        s = self.session
        return s.frame if self.uses_frames else s.step

    def step_positions(self) -> list[int]:
        """Where each step starts on the bar (the step markers)."""
        return self.session.step_frames if self.uses_frames else list(range(self.length))

    def x_of(self, pos: float) -> float:
        span = max(self.length - 1, 1)
        return self.MARGIN + (self.width() - 2 * self.MARGIN) * min(max(pos, 0.0), span) / span

    def pos_at(self, x: float) -> int:
        span = max(self.length - 1, 1)
        frac = (x - self.MARGIN) / max(self.width() - 2 * self.MARGIN, 1)
        return int(round(min(max(frac, 0.0), 1.0) * span))

    def set_step_marks(self, marks: dict[int, str]) -> None:
        """Mark labelled steps (step -> label text), as the timeline does."""
        self._marks = dict(marks)
        self.update()

    # --- input ---------------------------------------------------------------------------------
    def seek_to_x(self, x: float) -> None:
        if self.length <= 0:
            return
        pos = self.pos_at(x)
        if self.uses_frames:
            self.session.set_frame(pos)
        else:
            self.session.set_step(pos)
        self.seeked.emit(pos)

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 -- Qt override
        if event.button() == Qt.MouseButton.LeftButton:
            self._dragging = True
            self.session.set_playing(False)
            self.seek_to_x(event.position().x())
            event.accept()

    def mouseMoveEvent(self, event: QMouseEvent) -> None:  # noqa: N802 -- Qt override
        if self._dragging:
            self.seek_to_x(event.position().x())
        elif self.length > 0:
            self.setToolTip(self._tip(self.pos_at(event.position().x())))

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:  # noqa: N802 -- Qt override
        self._dragging = False

    def _tip(self, pos: int) -> str:
        s = self.session
        if self.uses_frames:
            assert s.source is not None
            step = s.step_of_frame(pos)
            return f"frame {pos} · {format_time(s.source.time_of(pos))} · {step_text(step)}"
        return step_text(pos)

    # --- painting ------------------------------------------------------------------------------
    def paintEvent(self, _event: QPaintEvent) -> None:  # noqa: N802 -- Qt override
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        h = self.height()
        mid = h / 2
        x0, x1 = float(self.MARGIN), float(self.width() - self.MARGIN)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(_GROOVE)
        p.drawRoundedRect(QRectF(x0, mid - 3, x1 - x0, 6), 3, 3)
        n = self.length
        if n <= 0:
            p.end()
            return
        pos = max(self.position, 0)
        p.setBrush(_PLAYED)
        p.drawRoundedRect(QRectF(x0, mid - 3, self.x_of(pos) - x0, 6), 3, 3)
        starts = self.step_positions()
        step = self.session.step
        if 0 <= step < len(starts):
            end = starts[step + 1] if step + 1 < len(starts) else n - 1
            p.setBrush(_STEP_SPAN)
            a, b = self.x_of(starts[step]), self.x_of(end)
            p.drawRect(QRectF(a, 2, max(b - a, 2.0), h - 4))
        p.setPen(QPen(_TICK, 1))
        p.drawLines([QLineF(self.x_of(f), mid - 7, self.x_of(f), mid + 7) for f in starts])
        score: Score | None = self.session.scores
        first = score.first_error_step if score is not None and not score.unknown else None
        if first is not None and 0 <= first < len(starts):
            p.setPen(QPen(_FIRST_DEV, 2))
            x = self.x_of(starts[first])
            p.drawLine(QLineF(x, 1, x, h - 1))
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(_MARK)
        for s in self._marks:
            if 0 <= s < len(starts):
                x = self.x_of(starts[s])
                p.drawPolygon([QPointF(x - 4, 1), QPointF(x + 4, 1), QPointF(x, 7)])
        p.setBrush(_HANDLE)
        p.setPen(QPen(QColor(40, 40, 40), 1))
        p.drawEllipse(QPointF(self.x_of(pos), mid), 6, 6)
        p.end()


class TransportBar(QWidget):
    """Play/pause, previous/next step, the scrubber, time, frame and step counters, and the speed."""

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self.setObjectName("transport")
        style = self.style()
        self._icons = {"play": style.standardIcon(QStyle.StandardPixmap.SP_MediaPlay),
                       "pause": style.standardIcon(QStyle.StandardPixmap.SP_MediaPause)}
        self.play_button = self._button(self._icons["play"], "Play / pause (Space)", session.toggle_playing)
        self.prev_button = self._button(style.standardIcon(QStyle.StandardPixmap.SP_MediaSkipBackward),
                                        "Previous step (←)", lambda: session.next_step(-1))
        self.next_button = self._button(style.standardIcon(QStyle.StandardPixmap.SP_MediaSkipForward),
                                        "Next step (→)", lambda: session.next_step(+1))
        self.scrubber = Scrubber(session, self)
        self.time_label = QLabel(self)
        self.frame_label = QLabel(self)
        for label in (self.time_label, self.frame_label):
            label.setStyleSheet("font-family: monospace")
        self.frame_label.setToolTip("Current frame (index / last index) and step (numbered from 1: step / steps)")
        # The counters keep their width while there is room, and give way before the window is forced wider than a
        # small screen (a minimum width set overrides a label's text-wide minimum).
        for label in (self.time_label, self.frame_label):
            label.setMinimumWidth(40)
        self.speed = QComboBox(self)
        self.speed.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.speed.setToolTip("Playback speed (+ / -)")
        for v in SPEEDS:
            self.speed.addItem(f"{v:g}×", v)
        self.speed.activated.connect(lambda i: session.set_speed(float(self.speed.itemData(i))))
        layout = QHBoxLayout(self)
        layout.setContentsMargins(4, 2, 4, 2)
        layout.setSpacing(4)
        for w in (self.prev_button, self.play_button, self.next_button):
            layout.addWidget(w)
        layout.addWidget(self.scrubber, 1)
        layout.addWidget(self.time_label)
        layout.addWidget(self.frame_label)
        layout.addWidget(self.speed)
        session.playing_changed.connect(self._on_playing)
        session.speed_changed.connect(self._on_speed)
        session.trajectory_changed.connect(self._on_trajectory)
        session.frame_changed.connect(lambda _f: self._update_counters())
        session.step_changed.connect(lambda _s: self._update_counters())
        self._on_speed(session.speed)
        self._on_trajectory(session.trajectory)

    def _button(self, icon: QIcon, tip: str, slot: Callable[[], object]) -> QToolButton:
        b = QToolButton(self)
        b.setIcon(icon)
        b.setToolTip(tip)
        b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        b.setAutoRaise(True)
        b.clicked.connect(lambda _c=False: slot())
        return b

    def _on_playing(self, playing: bool) -> None:
        self.play_button.setIcon(self._icons["pause" if playing else "play"])
        self.play_button.setToolTip("Pause (Space)" if playing else "Play (Space)")

    def _on_speed(self, speed: float) -> None:
        i = self.speed.findData(speed)
        if i >= 0:
            self.speed.setCurrentIndex(i)

    def _on_trajectory(self, traj: Trajectory | None) -> None:
        has_frames = self.session.source is not None and self.session.source.frame_count > 0
        self.play_button.setEnabled(has_frames)
        for b in (self.prev_button, self.next_button):
            b.setEnabled(traj is not None and traj.n_steps > 0)
        self._on_playing(self.session.playing)
        self._update_counters()

    def _update_counters(self) -> None:
        s = self.session
        src = s.source
        n_steps = s.trajectory.n_steps if s.trajectory is not None else 0
        # Steps numbered from 1, as every view numbers them: "step 1/6" .. "step 6/6" for a 6-step run.
        step = f"step {step_number(s.step)}/{n_steps}" if s.step >= 0 and n_steps else "step –"
        if src is not None and src.frame_count and s.frame >= 0:
            self.time_label.setText(f"{format_time(src.time_of(s.frame))} / {format_time(src.duration)}")
            width = len(str(src.frame_count - 1))
            self.frame_label.setText(f"frame {s.frame:>{width}}/{src.frame_count - 1} · {step}")
        else:
            self.time_label.setText("–:––.– / –:––.–")
            self.frame_label.setText(f"no frames · {step}")

    def set_step_marks(self, marks: dict[int, str]) -> None:
        self.scrubber.set_step_marks(marks)
