"""The reward model end to end on real recorded samples: export parity, both backends, the Score it returns, the
version check, calibration and abstention, truncation as a prefix, and the same run in two formats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.trajectory.formats import native
from gui_app.core.errors import VideoError
from gui_app.core.scoring.batch import score_many
from models.config import ModelConfig
from models.export_onnx import export_network
from models.features import first_error_frame, keyframe_steps, load_keyframes, make_batch, make_example
from models.network import RewardNet
from models.runtime import NO_INSTRUCTION, ModelLoadError, RewardModel


def _sample(samples: Path, name: str) -> Path:
    return samples / "miniwob" / name


def test_keyframe_steps_subsample_uniformly():
    assert keyframe_steps(5, 50) == [0, 1, 2, 3, 4]
    ks = keyframe_steps(120, 50)
    assert len(ks) == 50 and ks[0] == 0 and ks[-1] == 119 and ks == sorted(set(ks))
    assert first_error_frame([0, 2, 4], 3) == 2 and first_error_frame([0, 2, 4], None) == -1


def test_export_checks_itself_against_torch(tmp_path):
    import torch

    torch.manual_seed(0)
    err = export_network(RewardNet(ModelConfig.tiny()), tmp_path / "m.onnx")
    assert err <= 1e-4


def test_onnx_and_torch_backends_agree(tiny_weights, samples):
    traj = native.load(_sample(samples, "login-user-success"))
    a = RewardModel.load(tiny_weights, backend="onnx").score(traj)
    b = RewardModel.load(tiny_weights, backend="torch").score(traj)
    assert abs(a.p_success - b.p_success) <= 1e-4
    assert np.allclose(a.step_scores, b.step_scores, atol=1e-4)
    assert a.tokens_kept == b.tokens_kept


def test_the_score_carries_everything_the_app_and_cli_read(tiny_weights, samples):
    traj = native.load(_sample(samples, "login-user-success"))
    r = RewardModel.load(tiny_weights).score(traj)
    assert 0.0 <= r.p_success <= 1.0 and r.success == (r.p_success >= r.threshold)
    assert len(r.step_scores) == traj.n_steps and abs(sum(r.step_scores) - 1.0) < 1e-6
    assert r.keyframe_steps == list(range(traj.n_steps)) and len(r.masks) == traj.n_steps
    assert r.tokens_kept == sum(int(m.sum()) for m in r.masks) < r.tokens_total
    assert {"decode", "prune", "pointer", "read", "forward"} <= set(r.timings)
    assert isinstance(r.ood, float) and r.ood >= 0
    assert (r.first_error_step is None) == r.success
    out = r.to_json()
    assert {"p_success", "success", "first_error_step", "step_scores", "ood", "unknown", "warnings"} <= set(out)
    unpruned = RewardModel.load(tiny_weights).score(traj, prune=False)
    assert unpruned.tokens_kept == unpruned.tokens_total == r.tokens_total


def test_a_run_without_an_instruction_is_unknown(tiny_weights, samples):
    traj = native.load(_sample(samples, "click-tab-success"))
    traj.instruction = ""
    r = RewardModel.load(tiny_weights).score(traj)
    assert r.unknown and NO_INSTRUCTION in r.warnings


def test_weights_of_other_feature_versions_are_refused_by_name(tiny_weights, tmp_path):
    bad = tmp_path / "w"
    shutil.copytree(tiny_weights, bad)
    meta = json.loads((bad / "model.json").read_text())
    meta["versions"]["terms"] += 1
    (bad / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="terms"):
        RewardModel.load(bad)
    (bad / "pointer.onnx").unlink()
    meta["versions"]["terms"] -= 1
    (bad / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="pointer"):
        RewardModel.load(bad)


def test_a_truncated_run_is_the_prefix_of_its_perception(tiny_weights, samples):
    model = RewardModel.load(tiny_weights)
    traj = native.load(_sample(samples, "login-user-success"))
    kf = load_keyframes(traj, 50)
    percept = model.perceiver.perceive(kf.frames, kf.reference)
    short = model.perceiver.perceive(kf.frames[:3], kf.reference)
    a = make_example(percept, traj.instruction, kf.steps, n_frames=3)
    b = make_example(short, traj.instruction, kf.steps[:3])
    assert np.array_equal(a.frame_feat, b.frame_feat) and np.array_equal(a.line_feat, b.line_feat)
    batch = make_batch([a, b])
    assert batch["frame_mask"].sum() == 6


def test_scoring_goes_on_past_a_bad_item(tiny_weights, samples, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    good = str(_sample(samples, "click-tab-success"))
    out = score_many([str(empty), good], RewardModel.load(tiny_weights))
    assert out[0].result is None and out[0].error
    assert out[1].result is not None


def test_screenshots_are_read_when_every_step_has_one_else_the_video(samples, tmp_path):
    d = tmp_path / "run"
    shutil.copytree(_sample(samples, "login-user-success"), d)
    traj = native.load(d)
    assert load_keyframes(traj, 50).source == "screenshots"
    shutil.rmtree(d / "frames")
    kf = load_keyframes(native.load(d), 50)
    assert kf.source == "video" and len(kf.frames) == traj.n_steps and kf.reference is not None
    (d / "video.mp4").unlink()
    with pytest.raises(VideoError):
        load_keyframes(native.load(d), 50)


def test_the_shipped_model_scores_the_same_run_alike_in_two_formats(samples, tmp_path):
    """One episode, written as an OSWorld result folder and as an ATIF trial, gets one verdict."""
    from gui_app.training.convert import to_atif, to_osworld

    model = RewardModel.load()
    traj = native.load(_sample(samples, "login-user-swapped-fields"))
    osw = to_osworld(traj, tmp_path / "osworld")
    atif = to_atif(traj, tmp_path / "atif")
    a, b = model.score(formats.load(str(osw))), model.score(formats.load(str(atif)))
    assert a.success == b.success and abs(a.p_success - b.p_success) < 1e-6


def test_scoring_with_onnxruntime_never_imports_torch(samples):
    """The app and `score` run the ONNX graph; torch (hundreds of MB) loads only for the torch backend."""
    import subprocess
    import sys

    code = ("import sys; from gui_app.core.trajectory.formats import native; from models.runtime import RewardModel; "
            f"RewardModel.load().score(native.load({str(_sample(samples, 'click-tab-success'))!r})); "
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_screens_of_a_size_never_trained_on_make_the_verdict_unknown(tiny_weights, samples, tmp_path):
    """Features built to ignore appearance cannot see that a desktop is not a web page: the screen size and run
    length seen in training bound what the model claims to know."""
    w = tmp_path / "w"
    shutil.copytree(tiny_weights, w)
    meta = json.loads((w / "model.json").read_text())
    n = len(meta["ood"]["mean"]) - ModelConfig.tiny().d_model
    lo, hi = [0.0] * n, [10.0] * n
    lo[1], hi[1], lo[2], hi[2] = np.log(300), np.log(500), np.log(200), np.log(400)  # heights 300-500, widths 200-400
    hi[0] = np.log1p(20)
    meta["ood"]["summary_range"] = {"min": lo, "max": hi}
    (w / "model.json").write_text(json.dumps(meta))
    model = RewardModel.load(w)
    web = model.score(native.load(_sample(samples, "login-user-success")))  # 320x420 MiniWoB screens
    assert not web.unknown and not any("outside the sizes" in x for x in web.warnings)
    desk = model.score(formats.load(str(next((samples / "desktop").glob("*/*-s9*")))))  # 1280x720
    assert desk.unknown and any("1280x720 px, outside the sizes the model was trained on" in x for x in desk.warnings)
    assert 0.0 <= desk.p_success <= 1.0  # still scored: unknown is a flag, not a refusal


def test_a_run_longer_than_any_trained_is_judged_on_fewer_keyframes_not_called_unknown(tiny_weights, samples,
                                                                                      tmp_path):
    """A real agent's 50-step run was "unknown" by its length alone: it is judged on as many keyframes as the model
    judges (the longest trained run's, times LENGTH_MARGIN), spread over the whole run, and says so."""
    from models.runtime import SUBSAMPLED

    w = tmp_path / "w"
    shutil.copytree(tiny_weights, w)
    meta = json.loads((w / "model.json").read_text())
    n = len(meta["ood"]["mean"]) - ModelConfig.tiny().d_model
    lo, hi = [0.0] * n, [10.0] * n
    hi[0] = np.log1p(2)  # the longest run trained had 2 keyframes: 3 are judged
    meta["ood"]["summary_range"] = {"min": lo, "max": hi}
    (w / "model.json").write_text(json.dumps(meta))
    model = RewardModel.load(w)
    assert model.max_keyframes == 3
    traj = native.load(_sample(samples, "login-user-success"))
    assert traj.n_steps > 3
    r = model.score(traj)
    assert r.keyframe_steps == [0, round((traj.n_steps - 1) / 2), traj.n_steps - 1]  # first, middle, last step
    assert SUBSAMPLED.format(k=3, n=traj.n_steps) in r.warnings and not r.unknown
    assert RewardModel.load(tiny_weights).max_keyframes == ModelConfig.tiny().max_frames  # no range: the table's


def test_the_onnx_arena_is_given_back_after_every_run(tiny_weights, samples):
    """A batch padded to a long run grows the CPU arena by hundreds of MB; without shrinkage the app kept that peak
    for good and grew it with every library scoring (issue 19; bench/scoring_memory.py measures the effect)."""
    model = RewardModel.load(tiny_weights, backend="onnx")
    entry = model.backend.run_options.get_run_config_entry("memory.enable_memory_arena_shrinkage")
    assert entry == "cpu:0"
    assert 0.0 <= model.score(native.load(_sample(samples, "click-tab-success"))).p_success <= 1.0


def test_a_landscape_screen_is_unknown_to_a_model_trained_on_portrait_pages(tiny_weights, samples, tmp_path):
    """Sizes alone let a 640x360 desktop recording pass as known beside 320x420 web pages; its shape does not."""
    w = tmp_path / "w"
    shutil.copytree(tiny_weights, w)
    meta = json.loads((w / "model.json").read_text())
    n = len(meta["ood"]["mean"]) - ModelConfig.tiny().d_model
    lo, hi = [0.0] * n, [10.0] * n
    lo[1], hi[1], lo[2], hi[2] = np.log(100), np.log(2000), np.log(100), np.log(2000)  # any size up to 2000 px
    hi[0] = np.log1p(20)
    meta["ood"]["summary_range"] = {"min": lo, "max": hi, "aspect": [0.7, 0.8]}  # portrait pages only
    (w / "model.json").write_text(json.dumps(meta))
    model = RewardModel.load(w)
    web = model.score(native.load(_sample(samples, "login-user-success")))  # 320x420: 0.76
    assert not web.unknown and not web.warnings
    desk = model.score(formats.load(str(next((samples / "desktop").glob("*/*-s9*")))))  # 1280x720: 1.78
    assert desk.unknown and any("width/height 1.78, a shape the model was not trained on" in x for x in desk.warnings)
