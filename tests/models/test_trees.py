"""The run trees beside the network (models/trees.py): fitted with scikit-learn, written as one ONNX graph that
gives scikit-learn's probabilities, carried by the checkpoint like the pointer detector, averaged with the
network's probability when scoring, fitted by `rollscope train` (and `--trees-only` for a run trained without)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingClassifier

from gui_app.cli import main
from gui_app.core.trajectory.formats import load
from models.checkpoint import Calibration, Checkpoint, ModelLoadError
from models.config import ModelConfig
from models.features import RUN_FEATS
from models.runtime import RewardModel
from models.trees import PARAMS, TREES_THRESHOLD, RunTrees, blend, fit_trees, mean_logit

from .conftest import tiny_checkpoint
from .test_perception_cache import tiny_dataset


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Run features where success is a rule of two of them (and a little noise)."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, RUN_FEATS)).astype(np.float32)
    y = (x[:, 3] > 0.5) & (x[:, 7] < 0.6)
    flip = rng.random(n) < 0.03
    return x, y ^ flip


@pytest.fixture(scope="module")
def trees_bytes() -> bytes:
    return fit_trees(*_data(600, 0))


def test_the_onnx_graph_gives_scikit_learns_probabilities_and_learns_the_rule(trees_bytes):
    x, y = _data(600, 0)
    reference = HistGradientBoostingClassifier(random_state=0, **PARAMS).fit(x, y)
    fresh, truth = _data(400, 1)
    p = RunTrees(trees_bytes).p(fresh)
    assert np.abs(p - reference.predict_proba(fresh)[:, 1]).max() < 1e-5
    assert ((p >= 0.5) == truth).mean() > 0.9
    assert p.min() >= 0.0 and p.max() <= 1.0


def test_a_threshold_between_neighbouring_float32_values_routes_as_in_scikit_learn():
    """scikit-learn splits halfway between two feature values, in float64. Where the two are neighbouring float32
    values (1/3 computed two ways), the halfway point rounded to float32 is one of them; rounded to nearest, the
    graph sent that value down the other branch, and a fine-tune's agent trees failed their own check."""
    lo = next(a for a in (np.float32(k) / np.float32(3) for k in range(1, 400))
              if np.float32((float(a) + float(np.nextafter(a, np.float32(1e9)))) / 2) > a)
    hi = np.nextafter(lo, np.float32(1e9))
    rng = np.random.default_rng(0)
    x = rng.random((200, RUN_FEATS), dtype=np.float32)
    x[:, 0] = np.where(np.arange(200) % 2 == 0, lo, hi)
    y = x[:, 0] == hi
    onnx_bytes = fit_trees(x, y, 0, {"learning_rate": 0.1, "max_iter": 5, "max_leaf_nodes": 4,
                                     "min_samples_leaf": 8})  # raised AssertionError before
    model = HistGradientBoostingClassifier(random_state=0, learning_rate=0.1, max_iter=5, max_leaf_nodes=4,
                                           min_samples_leaf=8).fit(x, y)
    assert np.abs(RunTrees(onnx_bytes).p(x) - model.predict_proba(x)[:, 1]).max() < 1e-5
    assert (RunTrees(onnx_bytes).p(x) > 0.5).tolist() == y.tolist()


def test_trees_need_both_verdicts():
    x, _ = _data(50, 2)
    with pytest.raises(ValueError, match="successes and failures"):
        fit_trees(x, np.ones(50, bool))


def test_the_blend_is_the_network_alone_without_trees_and_a_calibrated_mean_with_them():
    p_net = np.array([0.1, 0.5, 0.9])
    assert blend(p_net, None) is p_net
    assert np.allclose(blend(p_net, np.array([0.3, 0.5, 0.7])), [0.2, 0.5, 0.8])
    sharper = blend(p_net, np.array([0.3, 0.5, 0.7]), 2.0, 0.0)
    assert sharper[0] < 0.2 and sharper[2] > 0.8 and abs(sharper[1] - 0.5) < 1e-12
    assert np.allclose(1 / (1 + np.exp(-mean_logit(0.2, 0.4))), 0.3)
    # a fine-tune's agent trees: the mean of p_success and theirs
    assert np.allclose(blend(p_net, np.array([0.3, 0.5, 0.7]), p_agent=np.array([1.0, 0.0, 0.5])), [0.6, 0.25, 0.65])


def test_a_checkpoint_carries_its_trees_like_its_pointer_detector(trees_bytes, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "my-trees.onnx"
    elsewhere.parent.mkdir()
    elsewhere.write_bytes(trees_bytes)
    ck = tiny_checkpoint()
    ck.trees, ck.trees_calibration, ck.agent_trees = elsewhere, Calibration(1.5, -0.25), elsewhere
    for name in ("checkpoint.pt", "model.json"):
        folder = tmp_path / name.split(".")[0]
        ck.save(folder / name)
        assert (folder / "trees.onnx").read_bytes() == trees_bytes == (folder / "agent_trees.onnx").read_bytes()
        back = Checkpoint.load(folder / name)
        assert back.trees == folder / "trees.onnx" and back.trees_calibration == Calibration(1.5, -0.25)
        assert back.agent_trees == folder / "agent_trees.onnx"
    plain = Checkpoint.load(tmp_path / "checkpoint", state=False)
    plain.trees = plain.agent_trees = None
    plain.trees_calibration = Calibration()
    plain.save(tmp_path / "plain" / "checkpoint.pt")
    again = Checkpoint.load(tmp_path / "plain" / "checkpoint.pt")
    assert again.trees is None and again.agent_trees is None and again.trees_calibration == Calibration()
    assert not (tmp_path / "plain" / "trees.onnx").exists()


@pytest.fixture()
def weights_with_trees(tiny_weights, trees_bytes, tmp_path) -> Path:
    folder = tmp_path / "weights"
    shutil.copytree(tiny_weights, folder)
    (folder / "trees.onnx").write_bytes(trees_bytes)
    meta = json.loads((folder / "model.json").read_text())
    meta.update(trees="trees.onnx", trees_calibration={"a": 1.3, "b": 0.1}, threshold=TREES_THRESHOLD)
    (folder / "model.json").write_text(json.dumps(meta))
    return folder


def test_scoring_averages_the_network_and_the_trees(tiny_weights, weights_with_trees, samples):
    run = load(samples / "miniwob" / "enter-text-typo")
    alone = RewardModel.load(tiny_weights)
    both = RewardModel.load(weights_with_trees)
    assert alone.trees is None and both.trees is not None
    net = alone.score(run)
    scored = both.score(run)
    p_trees = both.trees.p(both.prepare(run).example.run_feat[None])[0]
    assert scored.p_success == pytest.approx(float(blend(net.p_success, p_trees, 1.3, 0.1)), abs=1e-6)
    assert scored.success == (scored.p_success >= TREES_THRESHOLD)
    assert scored.first_error_step == net.first_error_step or scored.success  # the step comes from the network


def test_weights_that_name_missing_or_broken_trees_are_refused_by_name(weights_with_trees, capsys):
    (weights_with_trees / "trees.onnx").write_bytes(b"not a model")
    with pytest.raises(ModelLoadError, match="trees.onnx: the run trees cannot be read"):
        RewardModel.load(weights_with_trees)
    (weights_with_trees / "trees.onnx").unlink()
    with pytest.raises(ModelLoadError, match="trees.onnx: file not found"):
        RewardModel.load(weights_with_trees)
    (weights_with_trees / "model.onnx").write_bytes(b"\x00" * 64)
    rc = main(["score", str(weights_with_trees.parent), "--model", str(weights_with_trees)])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "model.onnx: the network cannot be read" in err[0], err


def test_train_fits_the_trees_and_trees_only_adds_them_to_a_run_without(samples, tmp_path, capsys):
    ds = tmp_path / "ds"
    tiny_dataset(ds, samples)
    common = ["--epochs", "1", "--workers", "1", "--batch-size", "4", "--config",
              json.dumps(ModelConfig.tiny().to_dict()), "--cache", str(tmp_path / "cache")]
    assert main(["train", "--data", str(ds), "--out", str(tmp_path / "with"), *common, "--json"]) == 0, \
        capsys.readouterr().err
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    ck = Checkpoint.load(tmp_path / "with")
    assert ck.trees == tmp_path / "with" / "trees.onnx" and ck.trees.is_file()
    assert ck.threshold == TREES_THRESHOLD and report["val_both_modes"]["n"] == 4

    assert main(["train", "--data", str(ds), "--out", str(tmp_path / "plain"), *common, "--no-trees"]) == 0
    capsys.readouterr()
    assert Checkpoint.load(tmp_path / "plain").trees is None
    assert main(["train", "--data", str(ds), "--out", str(tmp_path / "plain"), *common, "--trees-only"]) == 0
    assert "run trees: val accuracy" in capsys.readouterr().out
    added = Checkpoint.load(tmp_path / "plain")
    assert added.trees is not None and added.trees.is_file() and added.threshold == TREES_THRESHOLD
    assert main(["export-onnx", str(tmp_path / "plain")]) == 0
    assert RewardModel.load(tmp_path / "plain" / "export").trees is not None
