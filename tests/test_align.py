"""Step-to-video alignment on real recordings whose answer is known by construction."""

from __future__ import annotations

import numpy as np
import pytest

from gui_app.core.trajectory.align import align_trajectory, monotone_assignment
from gui_app.core.errors import VideoError
from gui_app.core.trajectory.model import Step, Trajectory, VideoRef
from tests.media import degrade, screen_like_frames, write_h264, write_images

FPS = 10
N = 300
W, H = 320, 180
CHANGES = [23, 61, 95, 130, 171, 204, 247]  # frames where the screen changes (an action's effect appears)
STATES = [0, 1, 2, 3, 1, 4, 5, 6]  # segment -> screen; screen 1 comes back in segment 4 (a dialog reopened)
BOUNDS = [0, *CHANGES, N]


@pytest.fixture(scope="module")
def recording(tmp_path_factory):
    d = tmp_path_factory.mktemp("rec")
    frames = list(screen_like_frames(N, W, H, CHANGES, states=STATES, pointer=True, seed=3))
    video = write_h264(d / "recording.mp4", frames, fps=FPS, gop=250)
    return d, video, frames


def shot(d, frames, k: int, frame: int):
    """A screenshot of step k as the harness stored it: the screen at ``frame``, with noise and JPEG artefacts."""
    return str(write_images(d / "shots", [degrade(frames[frame], seed=k)], prefix=f"step_{k}_")[0])


def make_traj(d, video, frames, observe: list[tuple[int, float]], missing: tuple[int, ...] = ()) -> Trajectory:
    """Steps observing (segment, fraction into it); the screenshot is the frame there."""
    steps = []
    for k, (seg, frac) in enumerate(observe):
        f = int(BOUNDS[seg] + frac * (BOUNDS[seg + 1] - BOUNDS[seg]))
        steps.append(Step(index=k, screenshot=None if k in missing else shot(d, frames, k, f)))
    return Trajectory(id="t", source_format="osworld", source_path=str(d), steps=steps,
                      video=VideoRef(path=str(video)))


def test_recovers_step_starts_within_one_frame(recording):
    d, video, frames = recording
    rng = np.random.default_rng(1)
    # Each step's screenshot is taken somewhere inside its segment (after the previous action's effect
    # appeared, before the step's own action): the step starts when that screen first appeared.
    traj = make_traj(d, video, frames, [(k, float(rng.uniform(0.2, 0.95))) for k in range(8)])
    align_trajectory(traj)
    truth = [b / FPS for b in BOUNDS[:-1]]
    got = [s.t_start for s in traj.steps]
    assert np.abs(np.array(got) - truth).max() <= 1 / FPS + 1e-9, (got, truth)
    assert all(a <= b for a, b in zip(got, got[1:]))
    assert [s.t_end for s in traj.steps[:-1]] == got[1:]
    assert traj.steps[-1].t_end == pytest.approx(N / FPS)
    assert {s.align_method for s in traj.steps} == {"screenshot_match"}
    assert all(s.align_confidence > 0.8 for s in traj.steps)
    assert (traj.video.fps, traj.video.frames, traj.video.width, traj.video.height) == (FPS, N, W, H)
    assert traj.alignment_summary()["method"] == "screenshot_match"


def test_no_visible_effect_and_missing_screenshot(recording):
    d, video, frames = recording
    # Steps 2 and 3 both observe segment 2 (step 2's action changed nothing visible); step 5 has no screenshot.
    observe = [(0, 0.5), (1, 0.6), (2, 0.3), (2, 0.8), (3, 0.5), (4, 0.5), (5, 0.5)]
    traj = make_traj(d, video, frames, observe, missing=(5,))
    align_trajectory(traj)
    s = traj.steps
    for k in (0, 1, 2, 4, 6):
        assert abs(s[k].t_start - BOUNDS[observe[k][0]] / FPS) <= 1 / FPS + 1e-9, k
    assert s[2].t_start < s[3].t_start < s[4].t_start  # the tie is spread inside the shared screen
    assert s[3].align_confidence < s[2].align_confidence
    assert s[4].t_start < s[5].t_start < s[6].t_start
    assert (s[5].align_method, s[5].align_confidence) == ("interpolated", 0.0)
    times = [x.t_start for x in s]
    assert times == sorted(times)


def test_unrelated_screenshot_gets_low_confidence(recording, tmp_path):
    d, video, frames = recording
    traj = make_traj(d, video, frames, [(0, 0.5), (1, 0.5), (2, 0.5)])
    # Step 1's screenshot shows a screen that never appears in the recording.
    alien = next(screen_like_frames(1, W, H, states=[99], seed=3))
    traj.steps[1].screenshot = str(write_images(tmp_path, [alien], prefix="alien_")[0])
    align_trajectory(traj)
    assert traj.steps[0].align_confidence > 0.8 and traj.steps[2].align_confidence > 0.8
    assert traj.steps[1].align_confidence < 0.5


def test_unreadable_screenshot_is_interpolated_with_a_warning(recording, tmp_path):
    d, video, frames = recording
    traj = make_traj(d, video, frames, [(0, 0.5), (1, 0.5), (2, 0.5)])
    bad = tmp_path / "broken.png"
    bad.write_bytes(b"not a png")
    traj.steps[1].screenshot = str(bad)
    align_trajectory(traj)
    assert traj.steps[1].align_method == "interpolated"
    assert any(str(bad) in w for w in traj.warnings)


def test_even_spacing_fallbacks(recording, tmp_path):
    d, video, frames = recording
    no_shots = Trajectory(id="a", steps=[Step(index=k) for k in range(4)], video=VideoRef(path=str(video)))
    align_trajectory(no_shots)
    assert [s.t_start for s in no_shots.steps] == pytest.approx([0, 7.5, 15, 22.5])
    assert no_shots.steps[-1].t_end == pytest.approx(30.0)
    assert {(s.align_method, s.align_confidence) for s in no_shots.steps} == {("even_spacing", 0.0)}
    no_video = Trajectory(id="b", steps=[Step(index=k, screenshot=shot(d, frames, k, 5)) for k in range(3)])
    align_trajectory(no_video)  # screenshots only: frame k is step k at 1 fps
    assert [(s.t_start, s.t_end, s.align_method) for s in no_video.steps] == [
        (0.0, 1.0, "even_spacing"), (1.0, 2.0, "even_spacing"), (2.0, 3.0, "even_spacing")]


def test_stored_times_are_kept_unless_forced(recording):
    d, video, frames = recording
    traj = make_traj(d, video, frames, [(0, 0.5), (1, 0.5)])
    for k, s in enumerate(traj.steps):
        s.t_start, s.t_end, s.align_method, s.align_confidence = 5.0 + k, 6.0 + k, "stored", 1.0
    align_trajectory(traj)
    assert [s.t_start for s in traj.steps] == [5.0, 6.0]
    align_trajectory(traj, force=True)
    assert traj.steps[1].t_start == pytest.approx(BOUNDS[1] / FPS, abs=1 / FPS + 1e-9)


def test_cancel_leaves_steps_untouched(recording):
    d, video, frames = recording
    traj = make_traj(d, video, frames, [(0, 0.5), (1, 0.5)])
    seen = []
    align_trajectory(traj, cancel=lambda: True, progress=lambda i, n: seen.append((i, n)))
    assert all(s.t_start is None and s.align_method is None for s in traj.steps)


def test_broken_recording_raises_video_error(tmp_path, recording):
    d, video, frames = recording
    bad = tmp_path / "recording.mp4"
    bad.write_bytes(b"\x00" * 1000)
    traj = make_traj(d, video, frames, [(0, 0.5)])
    traj.video = VideoRef(path=str(bad))
    with pytest.raises(VideoError, match="recording.mp4"):
        align_trajectory(traj)


def test_monotone_assignment_beats_greedy():
    # Row 1's global best (column 0) lies before row 0's only good column (2): greedy would go back in time.
    dist = np.array([[0.9, 0.9, 0.1, 0.9],
                     [0.05, 0.9, 0.9, 0.2]])
    assert list(monotone_assignment(dist)) == [2, 3]
    assert list(monotone_assignment(np.array([[0.3, 0.1, 0.2]]))) == [1]
    eq = monotone_assignment(np.array([[0.5, 0.0, 0.5], [0.5, 0.0, 0.5]]))
    assert list(eq) == [1, 1]  # non-decreasing: two steps may share a frame


def test_sampling_every_kth_frame_keeps_error_within_the_stride(recording):
    d, video, frames = recording
    traj = make_traj(d, video, frames, [(k, 0.6) for k in range(8)])
    align_trajectory(traj, max_samples=100)  # 300 frames: every 3rd frame is compared
    got = np.array([s.t_start for s in traj.steps])
    truth = np.array(BOUNDS[:-1]) / FPS
    assert np.abs(got - truth).max() <= 3 / FPS + 1e-9
    assert list(got) == sorted(got)
