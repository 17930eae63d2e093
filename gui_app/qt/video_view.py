"""The video view: the current frame of the session's recording, the step's action drawn on it, the pruning overlay.

It observes a :class:`~gui_app.qt.session.Session` and never blocks the GUI thread on a decode: a frame that the
source has cached is shown at once; otherwise the source's prefetch thread is asked for it, a short timer polls
``source.cached(i)``, and the previous frame stays on screen meanwhile. What is kept and decoded ahead (the step
starts pinned when a trajectory opens, the frames ahead of the playhead) is the core's frame-cache policy,
:class:`gui_app.core.media.prefetch.FramePlan`; this view runs its timers and paints.

Painting is one ``drawPixmap`` through a frame -> widget transform (zoom and pan), the mask overlay as a tiny
token-grid image scaled with nearest-neighbour sampling, and the action marker in widget pixels.

The pruning mask belongs to one frame: the reward model sees the frame on screen at each step's *end* (the core's
:meth:`~gui_app.core.trajectory.timeline.Timeline.end_frames`), so the overlay draws a mask only over the frame it was
computed
on, and otherwise says which frame has one. While a run is being opened the view says so at once, with a spinner
and what the load is doing (the session's ``loading``: reading the log, aligning, indexing the video); the previous
run is gone from the screen the moment another is asked for. A run that could not be opened shows its error here
(nothing of the previous run stays on screen), and what the viewer should know about the frames (the session's
notes, e.g. a recording that could not be read, replaced by the step screenshots) shows as a banner over them.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from PySide6.QtCore import QPointF, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetricsF,
    QImage,
    QMouseEvent,
    QPainter,
    QPainterPath,
    QPaintEvent,
    QPen,
    QPixmap,
    QPolygonF,
    QResizeEvent,
    QTransform,
    QWheelEvent,
)
from PySide6.QtWidgets import QWidget

from gui_app.core.media.prefetch import PIN_BYTES, FramePlan
from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Step, Trajectory, step_text
from gui_app.qt.frame_image import to_qimage
from gui_app.qt.session import Session

POLL_MS = 3  # how often a pending frame is looked for in the source's cache
GIVE_UP_S = 10.0  # a frame not decoded after this long is reported and no longer waited for
# When paused, look ahead only once the user stays on a frame this long: after a jump the frames ahead may cost
# a whole GOP of decoding, wasted (and taken from the GUI's CPU) when the user jumps on at once.
AHEAD_DELAY_MS = 250
PIN_POLL_MS = 30  # how often newly decoded step starts are picked up
LOADING_TICK_MS = 80  # the loading spinner's frame interval
ZOOM_RANGE = (0.1, 40.0)  # relative to fit
WHEEL_STEP = 1.2  # zoom factor per wheel notch (120 units)

_BACKGROUND = QColor(30, 30, 34)
_MARKER = QColor(255, 60, 60)
_MARKER_RIGHT = QColor(255, 170, 0)
_LABEL_BG = QColor(20, 20, 20, 210)
_ERROR_BG = QColor(120, 30, 30, 235)
_NOTE_BG = QColor(120, 90, 10, 225)
_LOADING_BG = QColor(40, 70, 110, 235)
_DROPPED = QColor(0, 0, 0, 170).rgba()  # dimmed tokens
_KEPT = QColor(80, 200, 255, 45).rgba()  # kept tokens: a faint tint
_POINT_ACTIONS = ("click", "double_click", "right_click", "move", "drag", "scroll", "select", "type")


class VideoView(QWidget):
    """Shows ``session.source`` at ``session.frame`` with zoom, pan, the action of the step and the mask overlay.

    Args:
        session: the session it observes; the view changes no state but its own zoom and pan.
        parent: Qt parent.

    Signals:
        frame_shown(int): a frame index has been painted (or set, while the widget is hidden): benches and
            :class:`~gui_app.qt.playback.Playback` wait on it.
        view_changed(): zoom or pan changed.
    """

    frame_shown = Signal(int)
    view_changed = Signal()

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self._pixmap: QPixmap | None = None
        self._pixmap_index = -1  # frame index held by _pixmap
        self._emitted_index = -1  # last index sent through frame_shown
        self._wanted = -1  # frame index the session asks for
        self._wait_since = 0.0
        self._zoom = 1.0
        self._center: QPointF | None = None  # frame point at the widget centre; None: the frame centre
        self._drag_from: QPointF | None = None
        self._overlay: QImage | None = None
        self._overlay_key: tuple[int, int] | None = None  # (id(scores), keyframe)
        self._overlay_text = ""
        self._kf_frames: list[int] = []  # the frame each keyframe of the score was taken from
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._poll_pending)
        self.pin_bytes = PIN_BYTES
        self._plan = FramePlan(None)  # what is pinned and decoded ahead (the core's frame-cache policy)
        self._ahead_timer = QTimer(self)
        self._ahead_timer.setSingleShot(True)
        self._ahead_timer.setInterval(AHEAD_DELAY_MS)
        self._ahead_timer.timeout.connect(self._look_ahead)
        self._pin_timer = QTimer(self)
        self._pin_timer.setInterval(PIN_POLL_MS)
        self._pin_timer.timeout.connect(self._collect_pins)
        self._loading_timer = QTimer(self)
        self._loading_timer.setInterval(LOADING_TICK_MS)
        self._loading_timer.timeout.connect(self.update)
        self._loading_since = 0.0
        self.setAttribute(Qt.WidgetAttribute.WA_OpaquePaintEvent)  # we paint every pixel: no erase first
        self.setMinimumSize(160, 90)
        self._font = QFont(self.font())
        self._font.setPointSizeF(max(self._font.pointSizeF(), 10.0))
        session.trajectory_changed.connect(self._on_trajectory)
        session.frame_changed.connect(self._on_frame)
        session.step_changed.connect(self._on_step)
        session.scores_changed.connect(self._on_scores)
        session.overlay_changed.connect(lambda _on: self._refresh_overlay())
        session.playing_changed.connect(self._on_playing)
        session.notes_changed.connect(self.update)
        session.loading_changed.connect(self._on_loading)
        if session.source is not None:
            self._on_trajectory(session.trajectory)
            self._on_frame(session.frame)
            self._on_step(session.step)

    # --- public state ---------------------------------------------------------------------------
    @property
    def shown_frame(self) -> int:
        """Index of the frame held for display (-1: none yet)."""
        return self._pixmap_index

    @property
    def waiting(self) -> bool:
        """Whether the frame asked for is still being decoded."""
        return self._poll.isActive()

    @property
    def zoom(self) -> float:
        """Zoom relative to fit (1.0 = the whole frame fits the widget)."""
        return self._zoom

    def frame_size(self) -> tuple[float, float]:
        """Size of the frame in frame coordinates: the video's size (pixels that action coordinates refer to)."""
        src = self.session.source
        if src is not None and src.width and src.height:
            return float(src.width), float(src.height)
        if self._pixmap is not None:
            return float(self._pixmap.width()), float(self._pixmap.height())
        return 16.0, 9.0

    def view_transform(self) -> QTransform:
        """The frame -> widget transform (frame pixels to widget pixels) for the current zoom and pan."""
        fw, fh = self.frame_size()
        w, h = max(self.width(), 1), max(self.height(), 1)
        s = min(w / fw, h / fh) * self._zoom
        cx, cy = (fw / 2, fh / 2) if self._center is None else (self._center.x(), self._center.y())
        return QTransform(s, 0.0, 0.0, s, w / 2 - cx * s, h / 2 - cy * s)

    def frame_rect_in_widget(self) -> QRectF:
        """Where the frame lies in widget pixels."""
        fw, fh = self.frame_size()
        return self.view_transform().mapRect(QRectF(0, 0, fw, fh))

    def fit(self) -> None:
        """Show the whole frame (zoom 1, centred)."""
        if self._zoom != 1.0 or self._center is not None:
            self._zoom, self._center = 1.0, None
            self._view_moved()

    def zoom_by(self, factor: float, anchor: QPointF | None = None) -> None:
        """Zoom by ``factor`` keeping the frame point under ``anchor`` (widget pixels; default: centre) fixed."""
        new = min(max(self._zoom * factor, ZOOM_RANGE[0]), ZOOM_RANGE[1])
        if new == self._zoom:
            return
        w, h = self.width(), self.height()
        anchor = QPointF(w / 2, h / 2) if anchor is None else anchor
        inv, _ok = self.view_transform().inverted()
        under = inv.map(anchor)  # frame point under the anchor, kept there
        self._zoom = new
        s = self.view_transform().m11()
        self._set_center(QPointF(under.x() - (anchor.x() - w / 2) / s, under.y() - (anchor.y() - h / 2) / s))

    def pan_by(self, dx: float, dy: float) -> None:
        """Move the frame by (dx, dy) widget pixels."""
        s = self.view_transform().m11()
        fw, fh = self.frame_size()
        c = QPointF(fw / 2, fh / 2) if self._center is None else self._center
        self._set_center(QPointF(c.x() - dx / s, c.y() - dy / s))

    def _set_center(self, c: QPointF) -> None:
        fw, fh = self.frame_size()
        c = QPointF(min(max(c.x(), 0.0), fw), min(max(c.y(), 0.0), fh))  # keep some of the frame in view
        self._center = c
        self._view_moved()

    def _view_moved(self) -> None:
        self.view_changed.emit()
        self.update()

    # --- session events -------------------------------------------------------------------------
    def _on_trajectory(self, _traj: Trajectory | None) -> None:
        self._poll.stop()
        self._pin_timer.stop()
        self._pixmap, self._pixmap_index, self._emitted_index, self._wanted = None, -1, -1, -1
        self._overlay, self._overlay_key = None, None
        self._kf_frames = self._keyframe_frames()
        self._zoom, self._center = 1.0, None
        self._plan = FramePlan(self.session.source, self.session.step_frames, self.session.step, self.pin_bytes)
        if self.session.source is not None and self.session.step_frames:
            self._request(max(self.session.frame, 0))
            if self._plan.starts:
                self._pin_timer.start()
        if self.session.frame >= 0:
            # Another observer may have placed the playhead before this view heard of the trajectory (the compared
            # run's step sync does): no frame_changed follows, so ask for that frame now or the view stays black.
            self._on_frame(self.session.frame)
        self.update()

    def _on_loading(self) -> None:
        if self.session.loading and not self._loading_timer.isActive():
            self._loading_since = time.perf_counter()
            self._loading_timer.start()
        elif not self.session.loading:
            self._loading_timer.stop()
        self.update()

    @property
    def loading_text(self) -> str:
        """What the view says while a run is being opened ('' when none is)."""
        s = self.session
        if not s.loading:
            return ""
        name = Path(str(s.loading_key)).name or str(s.loading_key)
        return f"Opening {name}\n{s.loading[:1].upper()}{s.loading[1:]}…"

    def _on_frame(self, frame: int) -> None:
        src = self.session.source
        self._wanted = frame
        if self.session.overlay:
            self._refresh_overlay()
        if src is None or frame < 0:
            self._poll.stop()
            return
        arr = self._lookup(frame)
        if arr is not None:
            self._poll.stop()
            self._show(frame, arr)
        else:
            self._wait_since = time.perf_counter()
            if not self._poll.isActive():
                self._poll.start()
        if not self.session.playing:
            self._request(frame, ahead=False)
            self._ahead_timer.start()  # look ahead once the user stays on this frame (see AHEAD_DELAY_MS)
        elif arr is None or frame + self._plan.ahead_count(True) // 2 > self._plan.requested_upto:
            self._request(frame)

    def _on_step(self, step: int) -> None:
        if self.session.frame < 0 and step >= 0:
            # Session.set_trajectory leaves frame at -1 when the first step starts at frame 0 (it moves the
            # frame only when the step changes span); show that step's first frame anyway.
            self._on_frame(max(self.session.frame_of_step(step), 0))
        self._refresh_overlay()
        self.update()  # the action marker follows the step

    def _on_scores(self, _scores: Score | None) -> None:
        self._overlay, self._overlay_key = None, None
        self._kf_frames = self._keyframe_frames()
        self._refresh_overlay()

    def _keyframe_frames(self) -> list[int]:
        """The frame of each keyframe of the session's score (the frame on screen at its step's end)."""
        scores = self.session.scores
        if scores is None or not scores.keyframe_steps or self.session.source is None:
            return []
        n = self.session.trajectory.n_steps if self.session.trajectory is not None else 0
        steps = [int(k) for k in scores.keyframe_steps]
        if any(not 0 <= k < n for k in steps):
            return []  # a score of another version of this run: its keyframes do not fit
        try:
            return self.session.timeline.end_frames(steps)
        except (ValueError, IndexError):
            return []

    def _on_playing(self, _playing: bool) -> None:
        if self._wanted >= 0:
            self._request(self._wanted)

    def _look_ahead(self) -> None:
        if self._wanted >= 0:
            self._request(self._wanted)

    # --- frames: lookup, prefetch plan, pinning ---------------------------------------------------
    def _lookup(self, i: int) -> np.ndarray | None:
        return self._plan.lookup(i)

    def _request(self, frame: int, ahead: bool = True) -> None:
        """Hand the source the plan's prefetch request for ``frame`` (see :meth:`FramePlan.request`)."""
        self._ahead_timer.stop()
        self._plan.request(frame, self.session.playing, ahead)

    def _collect_pins(self) -> None:
        """Pin the step starts decoded since the last tick (see :meth:`FramePlan.collect_pins`)."""
        if not self._plan.collect_pins(self._wanted, self.session.playing):
            self._pin_timer.stop()

    @property
    def pinned_frames(self) -> list[int]:
        """Step-start frames held by the view (sorted)."""
        return sorted(self._plan.pinned)

    @property
    def pinned_bytes(self) -> int:
        """Bytes of the step-start frames held by the view (shared with the source's cache while in it)."""
        return self._plan.pinned_bytes

    def _poll_pending(self) -> None:
        src = self.session.source
        if src is None or self._wanted < 0:
            self._poll.stop()
            return
        arr = self._lookup(self._wanted)
        if arr is not None:
            self._poll.stop()
            self._show(self._wanted, arr)
        elif time.perf_counter() - self._wait_since > GIVE_UP_S:
            self._poll.stop()
            self.session.message.emit(f"{src.path or 'video'}: frame {self._wanted} could not be decoded")
        elif src.prefetch_done():
            self._request(self._wanted)  # the request was replaced or dropped: ask again

    def _show(self, frame: int, arr: np.ndarray) -> None:
        self._pixmap = QPixmap.fromImage(to_qimage(arr))  # one conversion to the native format
        self._pixmap_index = frame
        if self.isVisible():
            self.update()  # frame_shown is sent once it is painted
        else:
            self._emit_shown()

    def _emit_shown(self) -> None:
        if self._pixmap_index != self._emitted_index:
            self._emitted_index = self._pixmap_index
            self.frame_shown.emit(self._pixmap_index)

    # --- overlay --------------------------------------------------------------------------------
    def _refresh_overlay(self) -> None:
        """The mask of the frame on screen, when the model saw that frame; otherwise a note saying why there is
        none and where one is."""
        scores, frame = self.session.scores, self.session.frame
        text = ""
        if not self.session.overlay:
            self._overlay, self._overlay_key = None, None
        elif scores is None:
            self._overlay, self._overlay_key = None, None
            text = "No pruning mask: this run is not scored yet (Ctrl+R scores it)"
        elif not scores.masks:
            self._overlay, self._overlay_key = None, None
            text = "No pruning mask: this score was stored without masks (Ctrl+R scores the run again)"
        else:
            k = keyframe_for_frame(self._kf_frames, frame)
            if k is None or k >= len(scores.masks):
                self._overlay, self._overlay_key = None, None
                later = [f for f in self._kf_frames if f > frame]
                where = f"; next: frame {later[0]}" if later else ""
                text = f"No pruning mask for frame {frame}: the model saw the frame at each step's end{where}"
            else:
                key = (id(scores), k)
                if key != self._overlay_key:
                    fw, fh = self.frame_size()
                    mask = mask_grid(np.asarray(scores.masks[k]), fw / fh)
                    self._overlay = mask_image(mask)
                    self._overlay_key = key
                    self._mask_counts = (int(mask.sum()), int(mask.size))
                kept, total = self._mask_counts
                text = (f"Pruning mask of frame {frame} (keyframe {k}, end of {step_text(scores.keyframe_steps[k])}): "
                        f"{kept}/{total} tokens kept")
        self._overlay_text = text
        self.update()

    @property
    def overlay_text(self) -> str:
        """What the overlay says (the mask's frame and tokens, or why there is no mask); '' when it is off."""
        return self._overlay_text

    # --- painting -------------------------------------------------------------------------------
    def paintEvent(self, _event: QPaintEvent) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), _BACKGROUND)
        if self.session.error is not None:
            self._paint_box(p, f"Could not open this run\n{self.session.error}", _ERROR_BG)
            p.end()
            return
        if self.session.loading:
            elapsed = time.perf_counter() - self._loading_since
            box = self._paint_box(p, f"{self.loading_text}  {elapsed:.1f} s", _LOADING_BG, spinner=True)
            self._paint_spinner(p, QPointF(box.left() + 22, box.center().y()), elapsed)
            p.end()
            return
        if self._pixmap is None and self.session.trajectory is not None and self.session.source is None:
            why = "\n".join(self.session.notes[:3]) or "text-only trajectory (no recording, no screenshots)"
            self._paint_box(p, f"No frames to show\n{why}", _NOTE_BG)
            p.end()
            return
        if self._pixmap is not None:
            t = self.view_transform()
            fw, fh = self.frame_size()
            target = QRectF(0, 0, fw, fh)
            p.setTransform(t)
            # Smooth sampling only when the frame is shrunk on screen (text stays legible) and not while playing
            # (speed first); magnified frames show their pixels as they are.
            p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform,
                            t.m11() * fw / self._pixmap.width() < 0.999 and not self.session.playing)
            p.drawPixmap(target, self._pixmap, QRectF(self._pixmap.rect()))
            if self._overlay is not None:
                p.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform, False)
                p.drawImage(target, self._overlay)
            p.resetTransform()
            self._paint_action(p, t)
        if self._overlay_text:
            self._paint_label(p, QPointF(8, self.height() - 8), self._overlay_text, anchor_bottom=True)
        if self.session.notes and self._pixmap is not None:
            self._paint_notes(p)
        p.end()
        if self._pixmap is not None:
            self._emit_shown()

    def _action_step(self) -> Step | None:
        traj = self.session.trajectory
        if traj is None or not 0 <= self.session.step < len(traj.steps):
            return None
        return traj.steps[self.session.step]

    def action_point(self, step: Step) -> QPointF | None:
        """The step's point in frame coordinates (normalised or screen coordinates mapped to the video)."""
        if step.x is None or step.y is None:
            return None
        return self._to_frame(step.x, step.y, step)

    def _to_frame(self, x: float, y: float, step: Step) -> QPointF:
        fw, fh = self.frame_size()
        if step.extra.get("coords") == "normalized":
            return QPointF(x * fw, y * fh)
        meta = self.session.trajectory.metadata if self.session.trajectory is not None else {}
        sw, sh = meta.get("screen_width"), meta.get("screen_height")
        if sw and sh:  # the agent's screen coordinates vs a recording at another resolution
            return QPointF(x * fw / float(sw), y * fh / float(sh))
        return QPointF(x, y)

    def _drag_start(self, step: Step) -> QPointF | None:
        """Where a drag starts: ``extra['start']`` = [x, y] when the format gave it, else the previous point."""
        start = step.extra.get("start")
        if isinstance(start, (list, tuple)) and len(start) == 2:
            return self._to_frame(float(start[0]), float(start[1]), step)
        traj = self.session.trajectory
        for prev in reversed(traj.steps[: step.index] if traj is not None else []):
            if prev.x is not None and prev.y is not None:
                return self._to_frame(prev.x, prev.y, prev)
        return None

    def _paint_action(self, p: QPainter, t: QTransform) -> None:
        step = self._action_step()
        if step is None:
            return
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        pt_frame = self.action_point(step)
        pt = t.map(pt_frame) if pt_frame is not None else None
        if pt is not None:
            colour = _MARKER_RIGHT if step.action_type == "right_click" else _MARKER
            if step.action_type == "drag":
                start = self._drag_start(step)
                if start is not None:
                    _arrow(p, t.map(start), pt, colour)
            p.setPen(QPen(colour, 3))
            p.setBrush(Qt.BrushStyle.NoBrush)
            p.drawEllipse(pt, 12, 12)
            if step.action_type == "double_click":
                p.drawEllipse(pt, 18, 18)
            p.setPen(QPen(colour, 1.5))
            p.drawLine(QPointF(pt.x() - 20, pt.y()), QPointF(pt.x() + 20, pt.y()))
            p.drawLine(QPointF(pt.x(), pt.y() - 20), QPointF(pt.x(), pt.y() + 20))
        label = _action_label(step)
        if label:
            where = QPointF(pt.x() + 16, pt.y() + 16) if pt is not None else QPointF(8, 8)
            self._paint_label(p, where, label)

    def _paint_box(self, p: QPainter, text: str, background: QColor, spinner: bool = False) -> QRectF:
        """A centred message box over the view (an error, why there are no frames, a run being opened: then with
        room for a spinner on its left); returns where it was drawn."""
        p.setFont(self._font)
        margin = 24
        box = QRectF(margin, margin, max(self.width() - 2 * margin, 40), max(self.height() - 2 * margin, 40))
        flags = int(Qt.AlignmentFlag.AlignCenter) | int(Qt.TextFlag.TextWordWrap)
        bound = p.boundingRect(box.adjusted(12 + 36 * spinner, 12, -12, -12), flags, text)
        frame = bound.adjusted(-12 - 36 * spinner, -10, 12, 10)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(background)
        p.drawRoundedRect(frame, 6, 6)
        p.setPen(QColor(255, 255, 255))
        p.drawText(bound, flags, text)
        return frame

    @staticmethod
    def _paint_spinner(p: QPainter, centre: QPointF, seconds: float) -> None:
        """A turning arc: the app is working, not frozen."""
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        p.setPen(QPen(QColor(255, 255, 255, 70), 3))
        p.setBrush(Qt.BrushStyle.NoBrush)
        rect = QRectF(centre.x() - 9, centre.y() - 9, 18, 18)
        p.drawEllipse(rect)
        p.setPen(QPen(QColor(255, 255, 255), 3, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap))
        p.drawArc(rect, int(-seconds * 360 * 16) % (360 * 16), 100 * 16)

    def _paint_notes(self, p: QPainter) -> None:
        """The session's notes as a banner along the top (at most three; the status bar had them all)."""
        notes = self.session.notes
        lines = notes[:3] + ([f"(+{len(notes) - 3} more in the log)"] if len(notes) > 3 else [])
        p.setFont(self._font)
        fm = QFontMetricsF(self._font)
        width = max(self.width() - 16, 40)
        text = "\n".join(fm.elidedText("⚠ " + n, Qt.TextElideMode.ElideRight, width - 16) for n in lines)
        h = fm.height() * len(lines) + 10
        box = QRectF(8, 8, width, h)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(_NOTE_BG)
        p.drawRoundedRect(box, 4, 4)
        p.setPen(QColor(255, 255, 255))
        p.drawText(box.adjusted(8, 5, -8, -5), int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop), text)

    def _paint_label(self, p: QPainter, at: QPointF, text: str, anchor_bottom: bool = False) -> None:
        p.setFont(self._font)
        fm = QFontMetricsF(self._font)
        text = fm.elidedText(text, Qt.TextElideMode.ElideRight, max(self.width() - 24, 40))
        w, h = fm.horizontalAdvance(text) + 12, fm.height() + 6
        x = min(max(at.x(), 2.0), max(self.width() - w - 2, 2.0))
        y = at.y() - h if anchor_bottom else at.y()
        y = min(max(y, 2.0), max(self.height() - h - 2, 2.0))
        box = QRectF(x, y, w, h)
        p.setPen(Qt.PenStyle.NoPen)
        p.setBrush(_LABEL_BG)
        p.drawRoundedRect(box, 4, 4)
        p.setPen(QColor(255, 255, 255))
        p.drawText(box, Qt.AlignmentFlag.AlignCenter, text)

    # --- input ----------------------------------------------------------------------------------
    def wheelEvent(self, event: QWheelEvent) -> None:
        notches = event.angleDelta().y() / 120.0
        if notches:
            self.zoom_by(WHEEL_STEP ** notches, event.position())
        event.accept()

    def mousePressEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton:
            self._drag_from = event.position()
            self.setCursor(Qt.CursorShape.ClosedHandCursor)
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._drag_from is not None:
            d = event.position() - self._drag_from
            self._drag_from = event.position()
            self.pan_by(d.x(), d.y())
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if event.button() == Qt.MouseButton.LeftButton and self._drag_from is not None:
            self._drag_from = None
            self.unsetCursor()
        super().mouseReleaseEvent(event)

    def mouseDoubleClickEvent(self, event: QMouseEvent) -> None:
        self.fit()
        event.accept()

    def resizeEvent(self, event: QResizeEvent) -> None:
        self.view_changed.emit()
        super().resizeEvent(event)


# --- helpers (plain functions: tested directly) --------------------------------------------------
def keyframe_for_frame(keyframe_frames: Sequence[int], frame: int) -> int | None:
    """The keyframe taken from ``frame`` (the last one when several steps end on the same frame), else None."""
    found = None
    for k, f in enumerate(keyframe_frames):
        if int(f) == frame:
            found = k
    return found


def mask_grid(mask: np.ndarray, aspect: float, grid: tuple[int, int] | None = None) -> np.ndarray:
    """A keyframe mask as a (rows, cols) bool grid.

    Args:
        mask: (rows, cols) bool, or flat (rows * cols,) bool.
        aspect: frame width / height, used to find the grid of a flat mask when ``grid`` is not given.
        grid: (rows, cols) of the token grid, when the score result carries it.
    """
    mask = mask.astype(bool)
    if mask.ndim == 2:
        return mask
    n = mask.size
    if grid is not None:
        rows, cols = int(grid[0]), int(grid[1])
        return mask.reshape(rows, cols)
    # A flat mask: the factorisation rows * cols = n whose cols / rows is closest to the frame's aspect.
    best = (1, n)
    for rows in range(1, int(math.isqrt(n)) * 2 + 2):
        if n % rows == 0:
            cols = n // rows
            if abs(math.log(cols / rows / aspect)) < abs(math.log(best[1] / best[0] / aspect)):
                best = (rows, cols)
    return mask.reshape(best)


def mask_image(mask: np.ndarray) -> QImage:
    """A (rows, cols) keep-mask as a tiny ARGB image: kept tokens tinted, dropped tokens dimmed."""
    argb = np.where(mask, np.uint32(_KEPT), np.uint32(_DROPPED)).astype(np.uint32)
    argb = np.ascontiguousarray(argb)
    rows, cols = argb.shape
    img = QImage(argb.data, cols, rows, cols * 4, QImage.Format.Format_ARGB32)
    return img.copy()  # own the pixels: the array goes away


def _action_label(step: Step) -> str:
    if step.text:
        prefix = {"type": "⌨ ", "key": "⌨ ", "hotkey": "⌨ ", "navigate": "↗ ", "shell": "$ "}.get(step.action_type, "")
        return f"{prefix}{step.text}"
    if step.x is None and step.action_type not in ("other", *_POINT_ACTIONS):
        return step.action_type  # wait, done, fail, ...: say so on the frame
    if step.action_type == "scroll":
        return step.action or "scroll"
    return ""


def _arrow(p: QPainter, a: QPointF, b: QPointF, colour: QColor) -> None:
    p.setPen(QPen(colour, 3))
    p.drawLine(a, b)
    d = b - a
    length = math.hypot(d.x(), d.y())
    if length < 1:
        return
    ux, uy = d.x() / length, d.y() / length
    head = QPolygonF([b, QPointF(b.x() - 16 * ux + 7 * uy, b.y() - 16 * uy - 7 * ux),
                      QPointF(b.x() - 16 * ux - 7 * uy, b.y() - 16 * uy + 7 * ux)])
    path = QPainterPath()
    path.addPolygon(head)
    p.fillPath(path, colour)
