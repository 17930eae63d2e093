"""What a judge sees of a run: keyframes (one per step) or a video sampled at a fixed rate.

Two readings of one run, both through the run's own timeline (:mod:`gui_app.core.trajectory.timeline`):

- :func:`step_keyframes`: one frame per step end, at most N, uniformly subsampled: the keyframes of the built-in
  model (:func:`models.features.load_keyframes`, the one place that picks them), downscaled. What an endpoint
  judge is shown, each image captioned with its step.
- :func:`sample_video`: a video as ExeVRM was trained on it (LLaMA-Factory's video reading: ``fps`` frames a
  second of the recording, at most ``max_frames`` spread evenly over it, each frame at most ``max_pixels``).
  A run with a screenshot per step and no recording becomes a video of its screenshots placed on its timeline:
  each step's screenshot is on screen from the step's start to the next step's (its recorded times, else one second
  a step). Every sampled frame keeps its time and the step on screen in it, so an answer given in seconds of the
  video maps back to a step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from gui_app.core.errors import VideoError
from gui_app.core.media.images import read_image
from gui_app.core.trajectory.model import Trajectory


@dataclass
class StepFrames:
    """Frames of a run and where they sit in it.

    Attributes:
        frames: RGB uint8 ``(H, W, 3)``, all one size.
        steps: the step shown in each frame (its index; -1: before the first step).
        times: seconds into the run of each frame (the recording's time, or the screenshot's place on the
            timeline); None for keyframes read from screenshots without times.
        source: ``video`` or ``screenshots``.
    """

    frames: list[np.ndarray]
    steps: list[int]
    times: list[float] | None
    source: str


def downscale(img: np.ndarray, max_side: int) -> np.ndarray:
    """``img`` with its longest side at most ``max_side`` (area-averaged, so small text stays legible)."""
    h, w = img.shape[:2]
    if max(h, w) <= max_side:
        return img
    s = max_side / max(h, w)
    return cv2.resize(img, (max(1, round(w * s)), max(1, round(h * s))), interpolation=cv2.INTER_AREA)


def step_keyframes(traj: Trajectory, max_frames: int, max_side: int) -> StepFrames:
    """One frame per step end (at most ``max_frames``), each with its longest side at most ``max_side``.

    Raises:
        VideoError: no steps, or neither screenshots nor a readable recording.
    """
    from models.features import load_keyframes

    kf = load_keyframes(traj, max_frames)
    return StepFrames([downscale(f, max_side) for f in kf.frames], list(kf.steps), None, kf.source)


def sample_indices(total_frames: int, duration: float, fps: float, max_frames: int) -> list[int]:
    """The frames ExeVRM's training read of a ``total_frames``-frame video of ``duration`` seconds: ``fps`` a
    second, at most ``max_frames``, spread evenly from the first to the last (LLaMA-Factory's
    ``_get_video_sample_indices``, truncating as it does)."""
    n = min(total_frames, max_frames, max(1, math.floor(duration * fps)))
    return [int(i) for i in np.linspace(0, total_frames - 1, n).astype(np.int32)]


def fit_pixels(img: np.ndarray, max_pixels: int) -> np.ndarray:
    """``img`` scaled to at most ``max_pixels`` pixels, aspect kept (as LLaMA-Factory's ``_preprocess_image``:
    truncated sizes, Pillow's bicubic resize)."""
    h, w = img.shape[:2]
    if w * h <= max_pixels:
        return img
    from PIL import Image

    f = math.sqrt(max_pixels / (w * h))
    return np.asarray(Image.fromarray(img).resize((max(1, int(w * f)), max(1, int(h * f)))))


def _step_starts(traj: Trajectory) -> tuple[list[float], float]:
    """Each step's start on the run's timeline and the end of the last: the recorded times when every step has a
    start and they never go back, else one second a step."""
    starts = [s.t_start for s in traj.steps]
    if all(t is not None for t in starts) and all(b >= a for a, b in zip(starts, starts[1:])):  # type: ignore[operator]
        known = [float(t) for t in starts if t is not None]
        last = traj.steps[-1]
        end = float(last.t_end) if last.t_end is not None and last.t_end > known[-1] else known[-1] + 1.0
        return [t - known[0] for t in known], end - known[0]
    return [float(k) for k in range(traj.n_steps)], float(traj.n_steps)


def _has_screenshots(traj: Trajectory) -> bool:
    return traj.n_steps > 0 and all(s.screenshot and Path(s.screenshot).is_file() for s in traj.steps)


def sample_video(traj: Trajectory, fps: float = 1.0, max_frames: int = 50, max_pixels: int = 1280 * 720) \
        -> StepFrames:
    """The run as a video sampled as ExeVRM was trained (see the module docstring): its recording, else its step
    screenshots placed on its timeline.

    Raises:
        VideoError: no steps, or neither a readable recording nor a readable screenshot for every step.
    """
    from models.features import repair_media

    traj = repair_media(traj)
    if traj.n_steps == 0:
        raise VideoError(traj.source_path, "trajectory has no steps to judge")
    has_video = traj.video is not None and bool(traj.video.path) and Path(traj.video.path).is_file()
    if has_video and traj.video is not None:
        return _from_recording(traj, traj.video.path, fps, max_frames, max_pixels)
    if _has_screenshots(traj):
        return _from_screenshots(traj, fps, max_frames, max_pixels)
    raise VideoError(traj.source_path, "no readable recording and no readable screenshot for every step")


def _from_recording(traj: Trajectory, path: str, fps: float, max_frames: int, max_pixels: int) -> StepFrames:
    from gui_app.core.media.video import FrameSource
    from gui_app.core.trajectory.timeline import Timeline

    src = FrameSource.open(path, cache_bytes=16 * 2**20)
    try:
        idx = sample_indices(src.frame_count, src.duration, fps, max_frames)
        tl = Timeline(traj, src)
        frames = [fit_pixels(np.array(src.frame(i)), max_pixels) for i in idx]
        return StepFrames(frames, [tl.step_of_frame(i) for i in idx], [src.time_of(i) for i in idx], "video")
    finally:
        src.close()


def _from_screenshots(traj: Trajectory, fps: float, max_frames: int, max_pixels: int) -> StepFrames:
    starts, duration = _step_starts(traj)
    total = max(1, math.ceil(duration * fps))  # the frames of a video of the screenshots at ``fps``
    idx = sample_indices(total, duration, fps, max_frames)
    times = [i / fps for i in idx]
    steps = [max(0, int(np.searchsorted(starts, t, side="right")) - 1) for t in times]
    read: dict[int, np.ndarray] = {}
    for k in sorted(set(steps)):
        read[k] = read_image(str(traj.steps[k].screenshot))
    h, w = read[steps[0]].shape[:2]
    frames = [fit_pixels(f if f.shape[:2] == (h, w) else cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA),
                         max_pixels) for f in (read[k] for k in steps)]
    return StepFrames(frames, steps, times, "screenshots")
