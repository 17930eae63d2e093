"""Where each step of a trajectory lies in its frames: the one step <-> frame mapping.

Three readers need it and must agree: the viewer (which frame a step opens on, which step a frame belongs to),
the reward model (the frame on screen at a step's end is that step's keyframe) and alignment (steps spread evenly
over a recording when nothing better is known). The rules, in order:

1. A screenshot source (:func:`gui_app.core.media.video.open_for` without a recording) has one frame per step: frame
   ``k`` is step ``k``.
2. A step placed in the recording (``t_start``; for its end ``t_end``, else the next step's ``t_start``) maps to
   the frame on screen at that time.
3. A step with no time is spread evenly: step ``k`` of ``n`` spans ``[k / n, (k + 1) / n]`` of the recording.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from typing import TYPE_CHECKING

from gui_app.core.trajectory.model import Trajectory

if TYPE_CHECKING:
    from gui_app.core.media.video import FrameSource


def spread(k: int, n: int, length: float) -> float:
    """Boundary ``k`` of ``n`` equal spans over ``length``: step ``k`` of ``n`` starts at ``spread(k, n, length)``
    and ends at ``spread(k + 1, n, length)`` (rule 3)."""
    return length * k / max(n, 1)


def step_end_times(traj: Trajectory) -> list[float | None]:
    """Each step's end time: ``t_end``, else the next step's ``t_start``, else None."""
    out: list[float | None] = []
    for i, s in enumerate(traj.steps):
        t = s.t_end
        if t is None and i + 1 < len(traj.steps):
            t = traj.steps[i + 1].t_start
        out.append(t)
    return out


class Timeline:
    """The frames of a trajectory's steps in one frame source.

    Args:
        traj: the trajectory (None: nothing open).
        source: its frames (None: a text-only trajectory, every step at frame 0).

    Attributes:
        start_frames: the first frame of each step, non-decreasing (what the viewer shows for a step).
    """

    def __init__(self, traj: Trajectory | None, source: FrameSource | None):
        self.traj, self.source = traj, source
        self.start_frames = self._start_frames()

    def _start_frames(self) -> list[int]:
        traj, src = self.traj, self.source
        if traj is None or not traj.steps:
            return []
        if src is None:
            return [0] * len(traj.steps)
        if src.per_step:  # rule 1
            return list(range(len(traj.steps)))
        out, last = [], 0
        n, top = len(traj.steps), max(src.frame_count - 1, 0)
        for s in traj.steps:
            if s.t_start is not None:  # rule 2
                f = src.index_at(s.t_start)
            else:  # rule 3
                f = int(round(spread(s.index, n, top)))
            last = max(last, min(f, top))
            out.append(last)
        return out

    @property
    def n_steps(self) -> int:
        return len(self.start_frames)

    def frame_of_step(self, step: int) -> int:
        """The frame shown for ``step`` (its first frame); -1 out of range."""
        return self.start_frames[step] if 0 <= step < len(self.start_frames) else -1

    def step_of_frame(self, frame: int) -> int:
        """The step whose span contains ``frame`` (the last step starting at or before it); -1 without steps."""
        if not self.start_frames:
            return -1
        return max(bisect.bisect_right(self.start_frames, frame) - 1, 0)

    def end_frames(self, steps: Sequence[int]) -> list[int]:
        """The frame on screen at the end of each of ``steps``: a step's keyframe for the reward model.

        Frame 0 of a recording is the screen before the first action, so an untimed step ``k`` ends about
        ``(k + 1) / n`` of the way through it.

        Raises:
            ValueError: there is no frame source.
        """
        traj, src = self.traj, self.source
        if traj is None or src is None:
            raise ValueError("a trajectory without frames has no end frames")
        if src.per_step:  # rule 1
            return [min(k, src.frame_count - 1) for k in steps]
        ends = step_end_times(traj)
        out = []
        for k in steps:
            t = ends[k]
            if t is None:  # rule 3
                out.append(min(src.frame_count - 1, int(round(spread(k + 1, traj.n_steps, src.frame_count - 1)))))
            else:  # rule 2
                out.append(src.index_at(float(t)))
        return out
