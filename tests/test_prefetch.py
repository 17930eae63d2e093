"""The viewer's frame-cache policy (gui_app.core.media.prefetch), Qt-free, on a real H.264 recording."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gui_app.core.media.prefetch import FramePlan, pinned_frame_bytes
from gui_app.core.media.video import FrameSource
from tests.media import numbered_frames, read_number, write_h264

STARTS = [0, 7, 19, 33, 41, 52]


@pytest.fixture(scope="module")
def video(tmp_path_factory) -> Path:
    return write_h264(tmp_path_factory.mktemp("pf") / "v.mp4", numbered_frames(60, 320, 240), fps=10.0, gop=25)


def test_step_starts_are_pinned_from_the_current_step_on_within_the_budget(video: Path):
    with FrameSource.open(video) as src:
        per_frame = pinned_frame_bytes(src)
        assert per_frame == 320 * 240 * 3 // 2  # I420
        plan = FramePlan(src, STARTS, current_step=2, pin_bytes=4 * per_frame)
        assert plan.starts == [19, 33, 41, 52]  # the current step and the ones after it first; 4 fit
        plan.request(19, playing=False)
        while plan.collect_pins(19, playing=False):
            src.wait_prefetch(5.0)
        assert sorted(plan.pinned) == [19, 33, 41, 52] and plan.pinned_bytes == 4 * per_frame
        frame = plan.lookup(33)
        assert frame is not None and frame.shape == (240, 320, 3) and read_number(frame) == 33


def test_requests_order_what_is_needed_first(video: Path):
    with FrameSource.open(video, cache_bytes=8 * 320 * 240 * 3) as src:
        plan = FramePlan(src, STARTS, current_step=0)
        assert plan.ahead_count(playing=True) == 4  # half of an 8-frame cache, not 48
        asked: list[list[int]] = []
        src.prefetch = lambda indices: asked.append(list(indices))  # record the plan instead of decoding it
        plan.request(10, playing=True)
        assert asked[-1] == [10, 11, 12, 13, 14, 0, 7, 19, 33, 41, 52] and plan.requested_upto == 14
        plan.request(10, playing=False)  # paused: two frames ahead, the step starts, then the rest
        assert asked[-1] == [10, 11, 12, 0, 7, 19, 33, 41, 52, 13, 14]
        plan.pinned[11] = np.zeros((360, 320), np.uint8)
        plan.request(10, playing=False, ahead=False)
        assert asked[-1] == [10, 0, 7, 19, 33, 41, 52]


def test_no_source_plans_nothing():
    plan = FramePlan(None, STARTS)
    assert plan.starts == [] and plan.lookup(0) is None and not plan.collect_pins(0, playing=False)
    plan.request(3, playing=True)
    assert plan.requested_upto == -1
