"""The evented Session model: the one answer to "what is open?", which every view observes.

It holds the open library (catalog + annotation store), the open trajectory (its catalog key, its frame source,
its reward-model score) and the playhead (step, frame, playback, overlay). Views subscribe to its signals and change
state only through its setters (napari's ``Dims`` / ``QtDims`` split); no window copies state from one holder to
another. Setters are idempotent: setting the current value emits nothing, so two views synced both ways never loop.
Every view maps steps to frames through the session's :class:`~gui_app.core.trajectory.timeline.Timeline` (the core's
one
step <-> frame mapping, which the reward model uses too), so they all agree.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from gui_app.core.library.folder import Library
from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.timeline import Timeline
from gui_app.core.trajectory.model import Trajectory
from gui_app.core.media.video import FrameSource

SPEEDS = (0.25, 0.5, 1.0, 1.5, 2.0, 4.0)


class Session(QObject):
    """The open library, the open trajectory with its frames and score, and the playhead.

    Attributes:
        library: the open library (:class:`gui_app.core.library.folder.Library`: catalog + store) or None.
        key: the catalog key of the open trajectory (what :func:`gui_app.core.trajectory.formats.load` accepts) or None.
        trajectory: the open trajectory or None.
        source: its frames or None (text-only trajectories).
        timeline: where its steps lie in ``source``.
        step: current step index (-1 when there are no steps).
        frame: current frame index (-1 when there is no frame source).
        playing: playback on/off.
        speed: playback speed factor, one of :data:`SPEEDS`.
        scores: the reward model's score of the trajectory (:class:`gui_app.core.scoring.score.Score`) or None.
        overlay: whether the pruning mask overlay is shown.
        error: why the trajectory asked for last could not be opened (None: it opened). Nothing is open then:
            the viewer shows the error, the label panel labels nothing.
        notes: what the viewer should say about the trajectory shown (e.g. its recording could not be read and
            the step screenshots are shown instead).
        loading: what is being done to open :attr:`loading_key` ("reading the log", "indexing the video"...), ''
            when nothing is loading. Nothing is open meanwhile: the previous run is cleared the moment another is
            asked for, so it is never scrubbed or labelled in the belief that it is the new one.
        loading_key: the key being opened, or None.
        closer: how a frame source let go of is closed (default: at once). Closing joins the source's decoding
            thread and releases its decoder (~15 ms, more under load), so the app hands it to a worker: opening
            the next item from the keyboard should not wait on the previous one's clean-up.
    """

    library_changed = Signal(object)  # Library | None
    trajectory_changed = Signal(object)  # Trajectory | None
    step_changed = Signal(int)
    frame_changed = Signal(int)
    playing_changed = Signal(bool)
    speed_changed = Signal(float)
    scores_changed = Signal(object)  # Score | None
    overlay_changed = Signal(bool)
    message = Signal(str)  # status-bar / error text for the user
    notes_changed = Signal()  # error or notes changed
    loading_changed = Signal()  # loading / loading_key changed

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.library: Library | None = None
        self.key: str | None = None
        self.trajectory: Trajectory | None = None
        self.source: FrameSource | None = None
        self.step = -1
        self.frame = -1
        self.playing = False
        self.speed = 1.0
        self.scores: Score | None = None
        self.overlay = False
        self.error: str | None = None
        self.notes: list[str] = []
        self.loading = ""
        self.loading_key: str | None = None
        self._next_loading: tuple[str | None, str] = (None, "")  # what set_trajectory leaves loading (set_loading)
        self.closer: Callable[[FrameSource], None] = FrameSource.close
        self.timeline = Timeline(None, None)

    # --- library ----------------------------------------------------------------------------
    def set_library(self, library: Library | None) -> None:
        """Make ``library`` the open one (None: none). The session does not close the previous one: whoever
        opened it closes it once the work still using it has ended (:class:`gui_app.qt.controllers.LibraryScanner`)."""
        if library is not self.library:
            self.library = library
            self.library_changed.emit(library)

    def announce_library(self) -> None:
        """Tell the views the open library again (its label store came back after it could not be reached)."""
        if self.library is not None:
            self.library_changed.emit(self.library)

    # --- trajectory -------------------------------------------------------------------------
    def set_trajectory(self, traj: Trajectory | None, source: FrameSource | None = None, *, key: str | None = None,
                       scores: Score | None = None, notes: list[str] | None = None) -> None:
        """Open ``traj`` (its catalog ``key``, its frame ``source``: None for text-only, its stored ``scores``, the
        ``notes`` the viewer shows about it). Closes the previous source and clears any load error."""
        if self.source is not None and self.source is not source:
            self.closer(self.source)
        self.set_playing(False)
        self.key = key if traj is not None else None
        self.trajectory, self.source, self.scores = traj, source, scores
        self.timeline = Timeline(traj, source)
        self.step = -1
        self.frame = -1
        self.error, self.notes = None, list(notes or [])
        was_loading = (self.loading_key, self.loading)
        (self.loading_key, self.loading), self._next_loading = self._next_loading, (None, "")
        self.notes_changed.emit()
        self.trajectory_changed.emit(traj)
        self.scores_changed.emit(scores)
        if (self.loading_key, self.loading) != was_loading:
            self.loading_changed.emit()
        if traj is not None and traj.steps:
            self.set_step(0)
        elif source is not None and source.frame_count:
            self.set_frame(0)

    def set_loading(self, key: str, text: str) -> None:
        """``key`` is being opened and ``text`` says what is being done now. The first call for a key clears what
        was open at once (views show the loading line instead of the previous run); later calls only change the
        text. :meth:`set_trajectory` (the run arrived) or :meth:`set_failed` ends it."""
        if key == self.loading_key and self.trajectory is None:
            if text != self.loading:
                self.loading = text
                self.loading_changed.emit()
            return
        self._next_loading = (key, text)
        self.set_trajectory(None)

    def set_failed(self, key: str, error: str) -> None:
        """``key`` was asked for and could not be opened: nothing is open (so nothing can be labelled by mistake)
        and :attr:`error` says why."""
        self.set_trajectory(None)
        self.error = f"{key}: {error}" if key not in error else error
        self.notes_changed.emit()

    def frame_of_step(self, step: int) -> int:
        """The frame shown for ``step`` (its first frame)."""
        return self.timeline.frame_of_step(step)

    def step_of_frame(self, frame: int) -> int:
        """The step whose span contains ``frame`` (the last step starting at or before it)."""
        return self.timeline.step_of_frame(frame)

    @property
    def step_frames(self) -> list[int]:
        return list(self.timeline.start_frames)

    # --- position ---------------------------------------------------------------------------
    def set_step(self, step: int) -> None:
        """Go to ``step`` (clamped); moves the frame to the step's first frame."""
        if self.trajectory is None or not self.trajectory.steps:
            return
        step = min(max(step, 0), len(self.trajectory.steps) - 1)
        changed = step != self.step
        self.step = step
        if changed:
            self.step_changed.emit(step)
        f = self.frame_of_step(step)
        if self.source is not None and f >= 0 and (self.frame < 0 or self.step_of_frame(self.frame) != step):
            self._set_frame(f)

    def set_frame(self, frame: int) -> None:
        """Go to ``frame`` (clamped); moves the step to the one containing it."""
        if self.source is None or not self.source.frame_count:
            return
        self._set_frame(min(max(frame, 0), self.source.frame_count - 1))
        s = self.step_of_frame(self.frame)
        if s >= 0 and s != self.step:
            self.step = s
            self.step_changed.emit(s)

    def _set_frame(self, frame: int) -> None:
        if frame != self.frame:
            self.frame = frame
            self.frame_changed.emit(frame)

    def set_time(self, t: float) -> None:
        if self.source is not None:
            self.set_frame(self.source.index_at(t))

    def next_step(self, delta: int = 1) -> None:
        self.set_step(self.step + delta)

    def next_frame(self, delta: int = 1) -> None:
        self.set_frame(self.frame + delta)

    # --- playback, scores, overlay ------------------------------------------------------------
    def set_playing(self, playing: bool) -> None:
        playing = bool(playing) and self.source is not None
        if playing != self.playing:
            self.playing = playing
            self.playing_changed.emit(playing)

    def toggle_playing(self) -> None:
        self.set_playing(not self.playing)

    def set_speed(self, speed: float) -> None:
        speed = min(SPEEDS, key=lambda s: abs(s - speed))
        if speed != self.speed:
            self.speed = speed
            self.speed_changed.emit(speed)

    def change_speed(self, delta: int) -> None:
        """Move ``delta`` places along :data:`SPEEDS` (+/- keys)."""
        i = SPEEDS.index(self.speed) + delta
        self.set_speed(SPEEDS[min(max(i, 0), len(SPEEDS) - 1)])

    def set_scores(self, scores: Score | None) -> None:
        self.scores = scores
        self.scores_changed.emit(scores)

    def set_overlay(self, on: bool) -> None:
        if bool(on) != self.overlay:
            self.overlay = bool(on)
            self.overlay_changed.emit(self.overlay)
