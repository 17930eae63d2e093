"""Real media and trajectories for the viewer widget tests (video view, playback, step table, timeline).

The video is a real H.264 file (libx264 through PyAV) of numbered frames, so a test can read back which frame a
view painted (:func:`tests.media.read_number`).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Step, Trajectory, VideoRef
from gui_app.core.media.video import FrameSource
from gui_app.qt.session import Session
from tests.media import numbered_frames, write_h264

FPS = 10.0
N_FRAMES = 60
SIZE = (320, 240)
STEP_STARTS = (0, 7, 19, 33, 41, 52)  # frame of each step start (uneven spans on purpose)


def numbered_video(folder: Path, n: int = N_FRAMES, size: tuple[int, int] = SIZE, fps: float = FPS,
                   gop: int = 25) -> Path:
    """An H.264 file of ``n`` numbered frames (long GOP relative to its length)."""
    return write_h264(folder / "video.mp4", numbered_frames(n, *size), fps=fps, gop=gop)


def make_trajectory(video: Path, starts: tuple[int, ...] = STEP_STARTS, fps: float = FPS,
                    n_frames: int = N_FRAMES) -> Trajectory:
    """Steps starting at ``starts`` (frame indices) with a click, a typed text, a drag and a normalised click."""
    w, h = SIZE
    steps = []
    for i, f in enumerate(starts):
        end = (starts[i + 1] if i + 1 < len(starts) else n_frames) / fps
        kind = ("click", "type", "drag", "click", "wait", "click")[i % 6]
        step = Step(index=i, t_start=f / fps, t_end=end, action=f"{kind} #{i}", action_type=kind,
                    thought=f"Thought for step {i}: " + "because " * 40, align_method="stored")
        if kind == "click":
            step.x, step.y = 60.0 + 30 * i, 180.0
        if kind == "type":
            step.x, step.y, step.text = 200.0, 150.0, "hello world"
        if kind == "drag":
            step.x, step.y = 250.0, 200.0
        if i == 3:
            step.x, step.y, step.extra = 0.75, 0.5, {"coords": "normalized"}
        steps.append(step)
    return Trajectory(id="viewer-test", instruction="Test the viewer", steps=steps,
                      video=VideoRef(path=str(video), fps=fps, frames=n_frames, width=w, height=h))


def open_session(folder: Path, **open_kwargs) -> tuple[Session, FrameSource, Trajectory]:
    """A bare Session holding a real FrameSource over a fresh numbered video."""
    video = numbered_video(folder)
    traj = make_trajectory(video)
    source = FrameSource.open(video, **open_kwargs)
    session = Session()
    session.set_trajectory(traj, source)
    return session, source, traj


def make_score(p_success: float, step_scores: list[float], masks: list[np.ndarray],
               keyframe_steps: list[int]) -> Score:
    """A :class:`~gui_app.core.scoring.score.Score` as the model returns one (threshold 0.5), for the views to show."""
    return Score(p_success=p_success, threshold=0.5, success=p_success >= 0.5, step_scores=step_scores, masks=masks,
                 keyframe_steps=keyframe_steps, model="test-model")


def half_masks(n_keyframes: int, rows: int = 6, cols: int = 8) -> list[np.ndarray]:
    """Masks keeping the left half of the token grid, plus ``k`` more tokens on keyframe ``k``."""
    out = []
    for k in range(n_keyframes):
        m = np.zeros((rows, cols), bool)
        m[:, : cols // 2] = True
        m.flat[cols // 2: cols // 2 + k] = True
        out.append(m)
    return out
