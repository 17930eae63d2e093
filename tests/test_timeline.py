"""The one step <-> frame mapping (gui_app.core.trajectory.timeline) on real media: recordings and screenshot
folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_app.core.trajectory import align
from gui_app.core.trajectory.timeline import Timeline, spread, step_end_times
from gui_app.core.trajectory.model import Step, Trajectory, VideoRef
from gui_app.core.media.video import FrameSource, open_for
from tests.media import numbered_frames, write_h264

FPS, N_FRAMES = 10.0, 60


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    return write_h264(tmp_path_factory.mktemp("tl") / "video.mp4", numbered_frames(N_FRAMES, 160, 120), fps=FPS,
                      gop=25)


def _traj(video: Path, starts: list[float | None], ends: list[float | None] | None = None) -> Trajectory:
    ends = ends or [None] * len(starts)
    steps = [Step(index=i, t_start=s, t_end=e) for i, (s, e) in enumerate(zip(starts, ends, strict=True))]
    return Trajectory(id="t", steps=steps, video=VideoRef(path=str(video), fps=FPS))


def test_timed_steps_map_to_the_frame_on_screen_both_ways(video: Path):
    traj = _traj(video, [0.0, 0.7, 1.9, 3.3], ends=[0.7, 1.9, 3.3, None])
    with FrameSource.open(video) as src:
        tl = Timeline(traj, src)
        assert tl.start_frames == [0, 7, 19, 33]
        assert [tl.frame_of_step(k) for k in (0, 3, 4, -1)] == [0, 33, -1, -1]
        assert [tl.step_of_frame(f) for f in (0, 6, 7, 18, 19, 59)] == [0, 0, 1, 1, 2, 3]
        # The last step has no end time and no next step: it is spread (ends at the last frame).
        assert tl.end_frames([0, 1, 2, 3]) == [7, 19, 33, N_FRAMES - 1]


def test_untimed_steps_are_spread_evenly_and_never_go_back(video: Path):
    traj = _traj(video, [None, None, 2.0, None])
    with FrameSource.open(video) as src:
        tl = Timeline(traj, src)
        top = N_FRAMES - 1
        assert tl.start_frames == [0, round(top / 4), 20, round(3 * top / 4)]
        assert tl.end_frames([0, 1]) == [round(top / 4), 20]  # step 1 ends where step 2 starts
    backwards = _traj(video, [3.0, 1.0])  # a step timed before its predecessor shows no earlier frame
    with FrameSource.open(video) as src:
        assert Timeline(backwards, src).start_frames == [30, 30]


def test_screenshots_are_one_frame_per_step(tmp_path: Path):
    import cv2

    shots = []
    for i, img in enumerate(numbered_frames(3, 64, 48)):
        shots.append(tmp_path / f"step_{i}.png")
        cv2.imwrite(str(shots[-1]), img[:, :, ::-1])
    traj = Trajectory(id="s", source_path=str(tmp_path),
                      steps=[Step(index=i, t_start=5.0 * i, screenshot=str(p)) for i, p in enumerate(shots)])
    with open_for(traj) as src:
        assert src.per_step
        tl = Timeline(traj, src)
        assert tl.start_frames == [0, 1, 2] and tl.end_frames([0, 2]) == [0, 2] and tl.step_of_frame(1) == 1


def test_without_frames_every_step_is_at_frame_zero():
    traj = Trajectory(id="text", steps=[Step(index=i) for i in range(3)])
    tl = Timeline(traj, None)
    assert tl.start_frames == [0, 0, 0] and tl.step_of_frame(0) == 2
    assert Timeline(None, None).start_frames == [] and Timeline(None, None).step_of_frame(3) == -1
    with pytest.raises(ValueError):
        tl.end_frames([0])


def test_alignment_spreads_by_the_same_rule(video: Path):
    traj = _traj(video, [None, None, None])
    align.even_spacing(traj, duration=6.0)
    assert [(s.t_start, s.t_end) for s in traj.steps] == [(spread(k, 3, 6.0), spread(k + 1, 3, 6.0))
                                                          for k in range(3)] == [(0, 2), (2, 4), (4, 6)]
    assert step_end_times(traj) == [2.0, 4.0, 6.0]
