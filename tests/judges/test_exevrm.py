"""The ExeVRM judge: its prompt and answer as its repository specifies them, the video as it was trained on (from a
recording, or from step screenshots placed on the run's timeline), the Qwen3-VL input arithmetic checked against
transformers' own, and a tiny Qwen3-VL with random weights built in the test running the whole path: prompt, frames,
generation, parsing, and seconds to step."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from gui_app import cli
from gui_app.core.trajectory import formats
from gui_app.judges.exevrm_inputs import (PROMPT_WITH_RANGE, VideoConfig, frame_times, parse_answer, prompt_text,
                                          smart_resize, step_at, video_patches)
from gui_app.judges.frames import fit_pixels, sample_indices, sample_video

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples" / "miniwob"
RUN = SAMPLES / "login-user-success"  # 6 steps of one second, a 7-frame recording at 1 fps
# A prompt of ExeVRM's training data (limenlp/ExeVRM, data/exevr53k, a ScaleCUA sample), as it is there.
TRAINED = ("<video>Given a user task and a computer-using video recording, evaluate whether the user completes the "
           "task or not. Reply your judgement in the \\box{}.\nIf the video correctly completes the task, reply "
           "\\box{correct}. Otherwise, reply \\box{incorrect}. \nIf the video does not complete the task (i.e., "
           "incorrect), please provide the timestemp range, i.e., from <[time_start] seconds> to <[time_end] seconds>"
           ", of the video that deviates from the user's instruction.\n\n# User Task\nFind the best-rated restaurant "
           "around CMU main campus\n")


def test_the_prompt_is_the_one_exevrm_was_trained_on():
    text = prompt_text("Find the best-rated restaurant around CMU main campus", [0.5, 2.5], 3)
    video = "<0.5 seconds><|vision_start|>" + "<|video_pad|>" * 3 + "<|vision_end|><2.5 seconds><|vision_start|>" + \
        "<|video_pad|>" * 3 + "<|vision_end|>"
    assert text == "<|im_start|>user\n" + TRAINED.replace("<video>", video) + "<|im_end|>\n<|im_start|>assistant\n"
    assert PROMPT_WITH_RANGE in TRAINED


@pytest.mark.parametrize("answer, success, start, end", [
    ("\\box{correct}", True, None, None),
    ("\\box{incorrect}", False, None, None),
    ("\\box{incorrect}\nThe video deviates from the user's instruction between <3.0 seconds> and <4.0 seconds>.",
     False, 3.0, 4.0),
    ("\\box{ incorrect }  between <12 seconds> and <9.5 seconds>", False, 9.5, 12.0),
    ("<1.0 seconds> and <2.0 seconds> \\box{correct}", True, None, None),
])
def test_its_answer_is_read(answer, success, start, end):
    got = parse_answer(answer)
    assert (got.success, got.start, got.end) == (success, start, end)


@pytest.mark.parametrize("answer", ["correct", "The task is done.", "\\box{maybe}", ""])
def test_an_answer_without_a_box_is_not_a_verdict(answer):
    with pytest.raises(ValueError, match="no \\\\box"):
        parse_answer(answer)


def test_the_video_is_sampled_as_in_training():
    assert sample_indices(7, 7.0, 1.0, 50) == list(range(7))
    long = sample_indices(7200, 240.0, 1.0, 50)  # 4 minutes at 30 fps: 50 frames from first to last
    assert len(long) == 50 and long[0] == 0 and long[-1] == 7199
    assert sample_indices(300, 10.0, 1.0, 50) == [int(x) for x in np.linspace(0, 299, 10).astype(np.int32)]
    frame = np.zeros((1080, 1920, 3), np.uint8)
    assert fit_pixels(frame, 1280 * 720).shape == (720, 1280, 3)
    assert fit_pixels(frame[:500, :500], 1280 * 720).shape == (500, 500, 3)


def test_a_recording_is_sampled_with_the_step_on_screen_in_each_frame():
    got = sample_video(formats.load(str(RUN)))
    assert got.source == "video" and len(got.frames) == 7
    assert got.steps == [0, 1, 2, 3, 4, 5, 5] and got.times == [float(t) for t in range(7)]
    assert step_at(2.0, 1.0, got.steps) == 2 and step_at(2.9, 1.0, got.steps) == 2
    assert step_at(99.0, 1.0, got.steps) == 5 and step_at(-1.0, 1.0, got.steps) == 0


def _screenshots_only(tmp_path: Path, times: bool) -> Path:
    """The sample run without its recording (and, unless ``times``, without step times)."""
    run = tmp_path / ("timed" if times else "untimed")
    shutil.copytree(RUN, run)
    (run / "video.mp4").unlink()
    doc = json.loads((run / "trajectory.json").read_text())
    doc["video"] = None
    for i, step in enumerate(doc["steps"]):
        step["t_start"], step["t_end"] = (2.0 * i, 2.0 * i + 2.0) if times else (None, None)
    (run / "trajectory.json").write_text(json.dumps(doc))
    return run


def test_step_screenshots_are_placed_on_the_runs_timeline(tmp_path):
    timed = sample_video(formats.load(str(_screenshots_only(tmp_path, times=True))))
    assert timed.source == "screenshots" and timed.times == [float(t) for t in range(12)]
    assert timed.steps == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]  # two seconds a step, as recorded
    untimed = sample_video(formats.load(str(_screenshots_only(tmp_path, times=False))))
    assert untimed.steps == [0, 1, 2, 3, 4, 5]  # one second a step
    shot = np.asarray(__import__("PIL.Image", fromlist=["Image"]).open(RUN / "frames" / "step_003.png").convert("RGB"))
    assert np.array_equal(untimed.frames[3], shot)


def test_the_qwen3vl_input_arithmetic_is_transformers_own():
    import torch

    tv = pytest.importorskip("transformers.models.qwen3_vl.video_processing_qwen3_vl")
    from transformers.models.qwen3_vl.processing_qwen3_vl import Qwen3VLProcessor

    for t, h, w in [(50, 720, 1280), (7, 420, 320), (2, 1080, 1920), (3, 20, 900)]:
        for lo, hi in [(128 * 32 * 32, 32 * 32 * 768), (4096, 25165824)]:
            assert smart_resize(t, h, w, 2, 32, lo, hi) == tv.smart_resize(t, h, w, 2, 32, lo, hi)
    for n in (1, 2, 7, 50):
        assert frame_times(n, 1.0, 2) == Qwen3VLProcessor._calculate_timestamps(None, list(range(n)), 1.0, 2)
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 256, (64, 96, 3), dtype=np.uint8) for _ in range(3)]
    cfg = VideoConfig(min_pixels=0, max_pixels=10**9)
    patches, grid = video_patches(frames, cfg)
    # The same frames through transformers' patchify, once normalised alike (64x96 is already a multiple of 32).
    x = (torch.from_numpy(np.stack(frames)).float() / 255 - 0.5) / 0.5  # (T, H, W, C)
    ref, gt, gh, gw = tv.Qwen3VLVideoProcessor.patchify(None, x.permute(0, 3, 1, 2)[None], 16, 2, 2)
    assert grid == (gt, gh, gw) == (2, 4, 6)
    np.testing.assert_allclose(patches, ref[0].numpy(), atol=1e-6)


def test_a_checkpoints_video_settings_are_read(tmp_path):
    (tmp_path / "video_preprocessor_config.json").write_text(json.dumps(
        {"patch_size": 14, "merge_size": 2, "temporal_patch_size": 2, "size": {"shortest_edge": 4096,
                                                                               "longest_edge": 25165824},
         "image_mean": [0.4, 0.5, 0.6], "image_std": [0.2, 0.3, 0.4]}))
    cfg = VideoConfig.from_folder(tmp_path)
    assert (cfg.patch_size, cfg.min_pixels, cfg.max_pixels) == (14, 4096, 25165824)
    assert cfg.image_mean == (0.4, 0.5, 0.6) and VideoConfig.from_folder(tmp_path / "none") == VideoConfig()


def test_a_missing_weights_folder_is_one_error_line(tmp_path, capsys):
    assert cli.main(["score", str(RUN), "--judge", "exevrm", "--weights", str(tmp_path / "nowhere")]) == 1
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (f"rollscope: error: {tmp_path / 'nowhere'}: no such checkpoint folder (ExeVRM's weights: a local "
                    "folder, nothing is downloaded)")
    assert cli.main(["score", str(RUN), "--judge", "exevrm"]) == 1
    assert "judge 'exevrm' needs weights" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_random_qwen3vl_runs_the_whole_path(tmp_path, capsys):
    """Built from a config in the test (no download): noise is an error line naming the run; a rigged answer is read
    and its seconds become a step through the run's timeline, from the recording and from screenshots."""
    from tests.judges.tiny_qwen3vl import build

    noise = build(tmp_path / "noise")
    capsys.readouterr()  # saving prints a progress bar
    assert cli.main(["score", str(RUN), "--judge", "exevrm", "--weights", str(noise),
                     "--judge-option", "max-new-tokens=8"]) == 1
    out, err = capsys.readouterr()
    warning, error = err.splitlines()
    assert warning.startswith("rollscope: warning: ExeVRM runs on the CPU")
    assert error.startswith(f"rollscope: error: {RUN}: ExeVRM gave no verdict that can be read (no \\box")

    rigged = build(tmp_path / "ck", answer="\\box{incorrect}\nThe video deviates from the user's instruction "
                                           "between <2.0 seconds> and <3.0 seconds>.")
    capsys.readouterr()
    assert cli.main(["score", str(RUN), "--judge", "exevrm", "--weights", str(rigged), "--json",
                     "--judge-option", "max-new-tokens=2"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["success"] is False and got["first_error_step"] == 2 and got["p_success"] is None
    assert got["model"] == "exevrm:ck:1fps-50f-921600px" and got["threshold"] == 0.5
    assert got["usage"]["completion_tokens"] == 2 and got["usage"]["prompt_tokens"] > 100
    assert got["rationale"].startswith("\\box{incorrect} The video deviates")
    assert got["warnings"] == ["ExeVRM runs on the CPU (no CUDA device): expect minutes per run with the 8B model"]

    shots = _screenshots_only(tmp_path, times=True)  # two seconds a step: <2.0 seconds> is step 1
    assert cli.main(["score", str(shots), "--judge", "exevrm", "--weights", str(rigged), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["first_error_step"] == 1

    says_correct = build(tmp_path / "yes", spell="\\box{correct}")
    from gui_app.judges.registry import load_judge

    judge = load_judge("exevrm", {"weights": str(says_correct), "max-new-tokens": "8"})
    (score,) = judge.score_prepared([judge.prepare(formats.load(str(RUN)))])
    assert score.success is True and score.first_error_step is None
    assert score.p_success is not None and 0.0 < score.p_success < 1.0  # the random network's own odds
