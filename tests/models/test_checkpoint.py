"""The checkpoint: one typed class read and written in one place; the shipped weights (written before it) load
through it and score exactly as before; versions (the pointer sprite's too) are stored and checked; the keyframe
limit is the network config's."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from gui_app.core.trajectory.formats import native
from gui_app.training.sprite import POINTER_VERSION
from models.checkpoint import FORMAT, Checkpoint, ModelLoadError, SummaryRange
from models.config import SHIPPED_MEMBERS, ModelConfig
from models.export_onnx import export_run
from models.features import keyframe_steps
from models.network import RewardNet
from models.perception import PerceptionConfig
from models.runtime import WEIGHTS_DIR, RewardModel, default_pointer_path
from models.train import TrainArgs, train
from tests.models.conftest import tiny_checkpoint


def _run(samples: Path, name: str = "login-user-success") -> Path:
    return samples / "miniwob" / name


def test_the_shipped_weights_load_through_the_checkpoint_and_score_alike_once_saved_again(samples, tmp_path):
    """The shipped model.json (written by the class, format 2) loads, and written again it scores bit for bit as
    before."""
    ck = Checkpoint.load(WEIGHTS_DIR)
    assert ck.format == FORMAT and ck.state_dict is None
    # the shipped recipe: five networks of the default shape, trained apart and joined
    assert ck.perception == PerceptionConfig() and ck.net == replace(ModelConfig(), members=SHIPPED_MEMBERS)
    assert ck.pointer == WEIGHTS_DIR / "pointer.onnx" and ck.trees == WEIGHTS_DIR / "trees.onnx"
    assert ck.versions["sprite"] == POINTER_VERSION
    assert ck.ood.summary_range is not None and ck.ood.summary_range.aspect is not None
    assert ck.threshold == json.loads((WEIGHTS_DIR / "model.json").read_text())["threshold"]

    copy = tmp_path / "weights"
    shutil.copytree(WEIGHTS_DIR, copy)
    ck.save(copy / "model.json")
    stored = json.loads((copy / "model.json").read_text())
    assert stored["format"] == FORMAT and stored["pointer"] == "pointer.onnx" and stored["trees"] == "trees.onnx"
    again = Checkpoint.load(copy)
    assert again == replace(ck, pointer=copy / "pointer.onnx", trees=copy / "trees.onnx") and again.format == FORMAT

    traj = native.load(_run(samples, "login-user-swapped-fields"))
    for backend in ("onnx", "torch"):
        a = RewardModel.load(WEIGHTS_DIR, backend=backend).score(traj)
        b = RewardModel.load(copy, backend=backend).score(traj)
        assert (a.p_success, a.step_scores, a.ood, a.unknown, a.warnings) == (
            b.p_success, b.step_scores, b.ood, b.unknown, b.warnings)


def test_a_run_folder_is_self_contained_and_moves(samples, tmp_path):
    """A checkpoint names its pointer detector relative to its own folder, copied there when saved: the folder can
    be moved, and the detector it was made with deleted, and it still loads and exports."""
    detectors = tmp_path / "detectors"
    detectors.mkdir()
    shutil.copyfile(default_pointer_path(), detectors / "ptr.onnx")
    run = tmp_path / "run"
    tiny_checkpoint(pointer=detectors / "ptr.onnx").save(run / "checkpoint.pt")
    shutil.rmtree(detectors)
    moved = tmp_path / "moved" / "run"
    shutil.move(run, moved)
    stored = torch.load(moved / "checkpoint.pt", weights_only=True)
    assert stored["pointer"] == "pointer.onnx" and stored["format"] == FORMAT
    ck = Checkpoint.load(moved)
    assert ck.pointer == moved / "pointer.onnx" and ck.state_dict is not None
    traj = native.load(_run(samples))
    p_torch = RewardModel.load(moved, backend="torch").score(traj).p_success
    with pytest.raises(ModelLoadError, match="export-onnx"):
        RewardModel.load(moved)
    export_run(moved, moved / "export")
    assert abs(RewardModel.load(moved / "export").score(traj).p_success - p_torch) <= 1e-3  # half-precision copy


def test_a_format_1_run_folder_moved_with_its_detector_still_finds_it(tmp_path):
    """Old checkpoints name the detector by an absolute path: one that is gone is looked for beside the file."""
    run = tmp_path / "old"
    tiny_checkpoint().save(run / "checkpoint.pt")
    old = torch.load(run / "checkpoint.pt", weights_only=True)
    del old["format"]
    old["pointer"] = str(tmp_path / "gone" / "pointer.onnx")
    torch.save(old, run / "checkpoint.pt")
    loaded = Checkpoint.load(run / "checkpoint.pt")
    assert loaded.format == 1 and loaded.pointer == run / "pointer.onnx"


def test_checkpoints_of_another_sprite_or_a_newer_format_are_refused(tiny_weights, tmp_path):
    bad = tmp_path / "w"
    shutil.copytree(tiny_weights, bad)
    meta = json.loads((bad / "model.json").read_text())
    assert meta["versions"]["sprite"] == POINTER_VERSION  # stored
    meta["versions"]["sprite"] += 1
    (bad / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match=f"sprite {POINTER_VERSION + 1} \\(code {POINTER_VERSION}\\)"):
        RewardModel.load(bad)
    meta["versions"]["sprite"] -= 1
    meta["format"] = FORMAT + 1
    (bad / "model.json").write_text(json.dumps(meta))
    with pytest.raises(ModelLoadError, match="newer"):
        Checkpoint.load(bad)
    (bad / "model.json").write_text("[]")
    with pytest.raises(ModelLoadError, match="not a checkpoint"):
        Checkpoint.load(bad)


def test_summary_ranges_widen_to_hold_both():
    a = SummaryRange((0.0, 5.0), (1.0, 6.0), (0.7, 0.8))
    b = SummaryRange((-1.0, 5.5), (0.5, 7.0), None)
    assert a.union(b) == SummaryRange((-1.0, 5.0), (1.0, 7.0), (0.7, 0.8))
    assert a.union(SummaryRange((0.0, 0.0), (0.0, 0.0), (0.5, 1.8))).aspect == (0.5, 1.8)
    assert a.union(None) == a
    assert SummaryRange.from_dict(a.to_dict()) == a


def test_a_run_longer_than_the_keyframe_table_is_subsampled_to_it(samples, tmp_path):
    """The keyframe limit is the network config's: a model with a table of 4 judges a 6-step run on 4 keyframes
    spread over it (it was read with a fixed 50 and the network shared its last position in silence)."""
    run = tmp_path / "run"
    tiny_checkpoint(ModelConfig.tiny(max_frames=4)).save(run / "checkpoint.pt")
    export_run(run, run / "export")
    traj = native.load(_run(samples))
    assert traj.n_steps == 6
    for backend in ("onnx", "torch"):
        r = RewardModel.load(run / "export", backend=backend).score(traj)
        assert r.keyframe_steps == keyframe_steps(6, 4) == [0, 2, 3, 5]
        assert len(r.step_scores) == 6 and abs(sum(r.step_scores) - 1.0) < 1e-6
    net = RewardNet(ModelConfig.tiny(max_frames=4))
    from models.export_onnx import sample_batch

    batch = {k: torch.from_numpy(v) for k, v in sample_batch(net.cfg, frames=6).items()}
    with pytest.raises(ValueError, match="6 keyframes, more than the network's table of 4"):
        net(**batch)


def test_training_refuses_a_keyframe_table_other_than_the_perceived_limit(tmp_path):
    with pytest.raises(ValueError, match="max_frames 20"):
        train(TrainArgs(data=str(tmp_path), out=str(tmp_path / "run"), net=ModelConfig(max_frames=20)),
              log=lambda m: None)
