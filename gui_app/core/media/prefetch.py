"""What a viewer keeps of a recording and decodes ahead of its playhead: the frame-cache policy, without Qt.

A :class:`~gui_app.core.media.video.FrameSource` has a bounded LRU cache and one prefetch thread; this module decides
what to ask of them so that the two things a reviewer does most stay instant:

* **Step changes.** The first frame of every step is decoded when a trajectory opens (the current step's first,
  then the following steps) and *pinned*: kept outside the source's LRU, which playback churns through, as I420
  (the recording's own 4:2:0 layout: half the bytes of RGB, about a millisecond back to RGB), within
  :data:`PIN_BYTES`.
* **Playback and frame stepping.** Frames ahead of the playhead are decoded ahead: :data:`AHEAD_PLAYING` while
  playing, :data:`AHEAD_PAUSED` when paused, never more than half the source's cache, so decoding ahead never
  evicts what is about to be shown.

:class:`FramePlan` holds the pinned frames and hands the source one ordered prefetch request at a time; the video
view (:mod:`gui_app.qt.video_view`) only runs the timers that call it and paints what it returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gui_app.core.media.video import FrameSource

# FrameSource options for a viewer (``FrameSource.open(path, **SOURCE_OPTIONS)`` / ``open_for(traj, ...)``):
# decode at display size (a 1080p frame costs 2.25x the memory of a 1280x720 one) and a cache that holds ~35
# such frames (look-ahead is half of it). With ~100 step starts pinned (~140 MB) a 10-minute 1080p recording
# stays under 600 MB resident (bench/gui_step_latency.py).
SOURCE_OPTIONS: dict[str, Any] = {"max_side": 1280, "cache_bytes": 96 * 2**20}
AHEAD_PLAYING = 48  # frames decoded ahead of the playhead while playing
AHEAD_PAUSED = 6  # ... and when paused (frame stepping)
PIN_BYTES = 256 * 2**20  # step-start frames a viewer keeps (about 190 steps at 1280x720, I420)
PINS_PER_TICK = 6  # step starts converted per call of collect_pins (about 1 ms each at 1280x720)
PIN_RETRIES = 3  # rounds that pin nothing new before giving up on the rest


def out_size(src: FrameSource) -> tuple[int, int]:
    """Size of the frames the source returns (smaller than the video when it decodes at display size)."""
    return int(src.out_width or src.width), int(src.out_height or src.height)


def pinned_frame_bytes(src: FrameSource) -> int:
    """Bytes one pinned frame of ``src`` takes (I420 when both sides are even, else RGB)."""
    w, h = out_size(src)
    return w * h * 3 // 2 if w % 2 == 0 and h % 2 == 0 else w * h * 3


class FramePlan:
    """The pinned step starts of one open trajectory, and the prefetch requests for its source.

    Args:
        source: the frames (None: nothing to plan).
        step_frames: the first frame of each step (:attr:`gui_app.core.trajectory.timeline.Timeline.start_frames`).
        current_step: the step shown first: its start is pinned first, then the following steps'.
        pin_bytes: the budget for pinned frames.

    Attributes:
        pinned: frame index -> the pinned frame (I420 ``(h * 3 / 2, w)`` or RGB ``(h, w, 3)``).
        pinned_bytes: their size.
        starts: the step starts to pin, in the order they are asked for.
        requested_upto: the last frame of the latest request's look-ahead.
    """

    def __init__(self, source: FrameSource | None, step_frames: list[int] | None = None, current_step: int = 0,
                 pin_bytes: int = PIN_BYTES):
        self.source = source
        self.pinned: dict[int, np.ndarray] = {}
        self.pinned_bytes = 0
        self.requested_upto = -1
        self._retries = 0
        self.starts: list[int] = []
        if source is not None and step_frames:
            unique = list(dict.fromkeys(step_frames))
            capacity = max(int(pin_bytes // max(pinned_frame_bytes(source), 1)), 0)
            k = max(current_step, 0)
            self.starts = (unique[k:] + unique[:k])[:capacity]  # where a reviewer goes next comes first

    def lookup(self, i: int) -> np.ndarray | None:
        """Frame ``i`` as RGB if the source has it cached or it is pinned; never decodes."""
        arr = self.source.cached(i) if self.source is not None else None
        if arr is None:
            arr = self.pinned.get(i)
            if arr is not None and arr.ndim == 2:  # pinned as I420: ~1 ms back to RGB
                import cv2  # loaded with the first recording opened, not with the app (see video.py)

                arr = cv2.cvtColor(arr, cv2.COLOR_YUV2RGB_I420)
        return arr

    def has(self, i: int) -> bool:
        return i in self.pinned or (self.source is not None and self.source.cached(i) is not None)

    def ahead_count(self, playing: bool) -> int:
        """Frames to decode ahead of the playhead: at most half the source's cache, so that decoding ahead never
        evicts what is about to be shown."""
        ahead = AHEAD_PLAYING if playing else AHEAD_PAUSED
        src = self.source
        if src is not None and src.cache_limit:
            w, h = out_size(src)
            ahead = max(1, min(ahead, src.cache_limit // (2 * w * h * 3)))
        return ahead

    def request(self, frame: int, playing: bool, ahead: bool = True) -> None:
        """Hand the source one ordered prefetch plan (each request replaces the previous one).

        Order: the frame asked for (when missing); while playing, the frames ahead of the playhead, then the step
        starts not pinned yet; when paused, the next two frames (cheap: same GOP), the step starts, then (when
        ``ahead``) the rest of the look-ahead for frame stepping.
        """
        src = self.source
        if src is None or frame < 0:
            return
        upto = min(frame + 1 + (self.ahead_count(playing) if ahead else 0), src.frame_count)
        plan = [] if self.has(frame) else [frame]
        ahead_frames = [j for j in range(frame + 1, upto) if j not in self.pinned]
        starts = [f for f in self.starts if f not in self.pinned]
        if playing:
            plan += ahead_frames + starts
        else:
            plan += ahead_frames[:2] + starts + ahead_frames[2:]
        self.requested_upto = upto - 1
        src.prefetch(plan)

    def collect_pins(self, wanted: int, playing: bool) -> bool:
        """Pin the step starts the prefetch thread has decoded since the last call (a few per call, so a GUI
        thread calling it from a timer never converts for long). Asks again for starts evicted before they were
        pinned (a small cache), giving up after :data:`PIN_RETRIES` rounds that pinned nothing new.

        Args:
            wanted: the frame shown now (a renewed request starts there).
            playing: whether playback is on (the order of a renewed request).

        Returns:
            Whether there is more to collect (call again later).
        """
        src = self.source
        if src is None:
            return False
        import cv2

        missing, budget = 0, PINS_PER_TICK
        for f in self.starts:
            if f in self.pinned:
                continue
            arr = src.cached(f) if budget > 0 else None
            if arr is None:
                missing += 1
                continue
            budget -= 1
            h, w = arr.shape[:2]
            pinned = cv2.cvtColor(arr, cv2.COLOR_RGB2YUV_I420) if h % 2 == 0 and w % 2 == 0 else arr
            self.pinned[f] = pinned
            self.pinned_bytes += pinned.nbytes
        if not missing:
            return False
        if budget > 0 and src.prefetch_done():
            self._retries = 0 if budget < PINS_PER_TICK else self._retries + 1
            if self._retries > PIN_RETRIES:
                return False
            self.request(max(wanted, 0), playing)
        return True
