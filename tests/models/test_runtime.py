"""Runtime: both backends on a real (synthetic-content) video file, keyframe mapping, scoring into a catalog."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from gui_app.core import native
from gui_app.core.errors import RollscopeError
from gui_app.core.scoring import score_many
from models.features import keyframe_steps
from models.runtime import WEIGHTS_DIR, ModelLoadError, RewardModel

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def test_keyframe_steps_subsamples_uniformly():
    assert keyframe_steps(5, 50) == [0, 1, 2, 3, 4]
    ks = keyframe_steps(120, 50)
    assert len(ks) == 50 and ks[0] == 0 and ks[-1] == 119 and ks == sorted(set(ks))


def test_onnx_and_torch_backends_agree(tiny_weights, syn_traj_dir):
    traj = native.load(syn_traj_dir)
    a = RewardModel.load(tiny_weights, backend="onnx").score(traj)
    b = RewardModel.load(tiny_weights, backend="torch").score(traj)
    assert abs(a.p_success - b.p_success) <= 1e-4
    assert np.allclose(a.step_scores, b.step_scores, atol=1e-4)
    assert a.tokens_kept == b.tokens_kept


def test_score_result_shape(tiny_weights, syn_traj_dir):
    traj = native.load(syn_traj_dir)
    r = RewardModel.load(tiny_weights).score(traj)
    assert 0.0 <= r.p_success <= 1.0
    assert len(r.step_scores) == traj.n_steps and abs(sum(r.step_scores) - 1.0) < 1e-6
    assert r.keyframe_steps == list(range(traj.n_steps))
    assert len(r.masks) == traj.n_steps and all(m.dtype == bool for m in r.masks)
    assert r.tokens_kept == sum(int(m.sum()) for m in r.masks) < r.tokens_total
    assert set(r.timings) == {"decode", "prune", "forward"}
    assert r.success == (r.p_success >= r.threshold)
    assert (r.first_error_step is None) == r.success
    unpruned = RewardModel.load(tiny_weights).score(traj, prune=False)
    assert unpruned.tokens_kept == unpruned.tokens_total == r.tokens_total


def test_video_and_screenshots_give_the_same_keyframes(tiny_weights, syn_traj_dir, tmp_path):
    """Frame k+1 of the video is step k's screenshot: both sources must yield the same tokens."""
    model = RewardModel.load(tiny_weights)
    with_video = model.score(native.load(syn_traj_dir))
    d = tmp_path / "shots"
    shutil.copytree(syn_traj_dir, d)
    (d / "video.mp4").unlink()
    traj = native.load(d)
    traj.video = None
    shots = model.score(traj)
    assert shots.tokens_total == with_video.tokens_total
    # H.264 at crf 18 vs lossless PNG: nearly the same frames, so nearly the same verdict
    assert abs(shots.p_success - with_video.p_success) < 0.05


def test_scoring_a_moved_trajectory_leaves_it_as_it_was(tiny_weights, syn_traj_dir, tmp_path):
    """Bug fix: repairing media paths (a folder moved after saving) changed the trajectory being scored, and the
    app scores the trajectory on screen from a worker thread. The model now repairs a copy."""
    d = tmp_path / "moved"
    shutil.copytree(syn_traj_dir, d)
    traj = native.load(d)
    traj.video.path = str(tmp_path / "gone" / "video.mp4")  # where it was saved, before the folder moved
    for s in traj.steps:
        s.screenshot = str(tmp_path / "gone" / Path(s.screenshot).name)
    before = (traj.video.path, [s.screenshot for s in traj.steps], list(traj.warnings))
    moved = RewardModel.load(tiny_weights).score(traj)
    here = RewardModel.load(tiny_weights).score(native.load(d))
    assert moved.p_success == pytest.approx(here.p_success)  # the media were found beside it
    assert (traj.video.path, [s.screenshot for s in traj.steps], traj.warnings) == before


def test_missing_media_is_a_domain_error(tiny_weights, tmp_path, syn_traj_dir):
    d = tmp_path / "bare"
    shutil.copytree(syn_traj_dir, d)
    (d / "video.mp4").unlink()
    shutil.rmtree(d / "frames")
    with pytest.raises(RollscopeError):
        RewardModel.load(tiny_weights).score(native.load(d))


def test_load_errors(tmp_path):
    with pytest.raises(ModelLoadError, match="no model.json"):
        RewardModel.load(tmp_path)
    with pytest.raises(ModelLoadError, match="backend"):
        RewardModel.load(tmp_path, backend="tensorrt")


def test_score_many_writes_catalog_and_survives_bad_input(tiny_weights, syn_traj_dir, tmp_path):
    from gui_app.core.catalog import Catalog

    cat = Catalog(tmp_path / "cat.sqlite")
    seen = []
    outs = score_many([str(syn_traj_dir), str(tmp_path / "missing"), native.load(syn_traj_dir)],
                      RewardModel.load(tiny_weights), catalog=cat, progress=lambda d, n: seen.append((d, n)),
                      batch_size=2)
    assert [o.error is None for o in outs] == [True, False, True]
    assert seen[-1] == (3, 3)
    rec = cat.latest_score(str(syn_traj_dir))
    assert rec is not None and abs(rec.p_success - outs[0].result.p_success) < 1e-9
    assert outs[1].to_json()["error"]
    cat.close()


def test_score_many_cancel(tiny_weights, syn_traj_dir):
    outs = score_many([str(syn_traj_dir)] * 3, RewardModel.load(tiny_weights), cancel=lambda: True)
    assert outs == []


@pytest.mark.skipif(not (WEIGHTS_DIR / "model.onnx").is_file(), reason="no shipped weights yet")
def test_shipped_weights_score_a_real_trajectory(syn_traj_dir):
    samples = sorted(p.parent for p in SAMPLES.glob("**/trajectory.json")) if SAMPLES.is_dir() else []
    traj = native.load(samples[0] if samples else syn_traj_dir)
    onnx_r = RewardModel.load().score(traj)
    torch_r = RewardModel.load(backend="torch").score(traj)
    assert 0.0 <= onnx_r.p_success <= 1.0 and len(onnx_r.step_scores) == traj.n_steps
    assert abs(onnx_r.p_success - torch_r.p_success) <= 1e-4
    assert np.allclose(onnx_r.step_scores, torch_r.step_scores, atol=1e-4)


@pytest.mark.skipif(not (SAMPLES / "miniwob").is_dir(), reason="no bundled samples")
def test_a_run_without_a_pointer_on_its_last_keyframe_is_flagged(capsys):
    """The verdict leans on where the pointer rests; a run whose last keyframe shows none says so, in the result,
    in ``score --json`` and in the text output. (login-user ends with a key press: the pointer sits outside.)"""
    from gui_app.cli import main
    from models.runtime import NO_POINTER

    model = RewardModel.load()
    with_pointer = model.score(native.load(SAMPLES / "miniwob" / "navigate-tree-success"))
    without = model.score(native.load(SAMPLES / "miniwob" / "login-user-success"))
    assert with_pointer.warnings == [] and without.warnings == [NO_POINTER]
    path = str(SAMPLES / "miniwob" / "login-user-success")
    assert main(["score", path, "--json"]) == 0
    line = capsys.readouterr().out.strip().splitlines()[-1]
    assert json.loads(line)["warnings"] == [NO_POINTER]
    assert main(["score", path]) == 0
    assert f"note: {NO_POINTER}" in capsys.readouterr().out


def test_the_onnx_arena_is_given_back_after_every_run(tiny_weights, syn_traj_dir):
    """A batch padded to a long run grows the CPU arena by hundreds of MB; without shrinkage the app kept that peak
    for good and grew it with every library scoring (issue 19; bench/scoring_memory.py measures the effect)."""
    model = RewardModel.load(tiny_weights, backend="onnx")
    entry = model.backend.run_options.get_run_config_entry("memory.enable_memory_arena_shrinkage")
    assert entry == "cpu:0"
    assert 0.0 <= model.score(native.load(syn_traj_dir)).p_success <= 1.0  # runs with it
