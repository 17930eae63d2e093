"""Ensembles: runs of one recipe averaged into one model that exports, scores and loads like a single network."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from models.config import ModelConfig
from models.export_onnx import export, sample_batch
from models.network import Ensemble, RewardNet, build, from_checkpoint


def _inputs(cfg: ModelConfig) -> dict[str, torch.Tensor]:
    return {k: torch.from_numpy(v) for k, v in sample_batch(cfg, frames=4).items()}


def test_ensemble_averages_its_members_logits():
    cfg = ModelConfig.tiny(members=3, mil_head=True)
    torch.manual_seed(0)
    net = build(cfg).eval()
    assert isinstance(net, Ensemble) and len(net.members) == 3
    assert isinstance(build(ModelConfig.tiny()), RewardNet)
    x = _inputs(cfg)
    with torch.no_grad():
        s, f = net(**x)
        outs = [m(**x) for m in net.members]
    assert not torch.allclose(outs[0][0], outs[1][0])  # members differ
    assert torch.allclose(s, torch.stack([o[0] for o in outs]).mean(0), atol=1e-6)
    assert torch.allclose(f, torch.stack([o[1] for o in outs]).mean(0), atol=1e-6)
    assert net.num_params() == 3 * net.members[0].num_params()


def test_ensemble_of_copies_equals_the_single_network_and_exports(tmp_path):
    cfg = ModelConfig.tiny(mil_head=True, word_match=True, stats_head=True, cursor_match=True)
    torch.manual_seed(1)
    one = RewardNet(cfg).eval()
    ens = Ensemble(ModelConfig.tiny(members=2, mil_head=True, word_match=True, stats_head=True,
                                    cursor_match=True)).eval()
    for m in ens.members:
        m.load_state_dict(one.state_dict())
    x = _inputs(cfg)
    with torch.no_grad():
        for a, b in zip(one(**x), ens(**x)):
            assert torch.allclose(a, b, atol=1e-6)
    again = from_checkpoint({"state_dict": ens.state_dict(), "config": ens.cfg.to_dict()})
    assert isinstance(again, Ensemble)
    assert export(again, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4


def _train(syn_dataset, out, cache, seed: int, **cfg_overrides) -> None:
    from gui_app.cli import main

    cfg = json.dumps(ModelConfig.tiny(vocab_size=300, max_grid=32, mil_head=True, **cfg_overrides).to_dict())
    assert main(["train", "--data", str(syn_dataset), "--out", str(out), "--epochs", "1", "--config", cfg,
                 "--cache", str(cache), "--batch-size", "4", "--max-train", "8", "--seed", str(seed),
                 "--json"]) == 0


def test_ensemble_command_combines_runs_exports_and_scores_with_both_backends(syn_dataset, tmp_path, capsys):
    from gui_app.cli import main

    cache = tmp_path / "cache"
    runs = [tmp_path / f"r{seed}" for seed in (0, 1)]
    for seed, run in enumerate(runs):
        _train(syn_dataset, run, cache, seed)
    capsys.readouterr()
    ens = tmp_path / "ens"
    assert main(["ensemble", *map(str, runs), "--data", str(syn_dataset), "--out", str(ens), "--cache", str(cache),
                 "--json"]) == 0
    m = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert [r["run"] for r in m["members"]] == [str(r) for r in runs]
    assert m["n_val"] == 4 and 0.0 <= m["threshold"] <= 1.0 and 0.0 <= m["val"]["accuracy"] <= 1.0
    ckpt = torch.load(ens / "checkpoint.pt", weights_only=False)
    assert ckpt["config"]["members"] == 2 and ckpt["threshold"] == m["threshold"]

    assert main(["export-onnx", str(ens), "--out", str(tmp_path / "w"), "--json"]) == 0
    capsys.readouterr()
    meta = json.loads((tmp_path / "w" / "model.json").read_text())
    assert meta["config"]["members"] == 2

    rows = {}
    for backend in ("onnx", "torch"):
        assert main(["score", str(syn_dataset / "t000"), "--json", "--model", str(tmp_path / "w"),
                     "--backend", backend]) == 0
        rows[backend] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert abs(rows["onnx"]["p_success"] - rows["torch"]["p_success"]) <= 1e-4
    np.testing.assert_allclose(rows["onnx"]["step_scores"], rows["torch"]["step_scores"], atol=1e-4)

    # The ensemble's verdict is its members' mean logit, through the same scoring path.
    from gui_app.core.native import load
    from models.runtime import RewardModel

    traj = load(syn_dataset / "t000")
    logits = []
    for run in runs:
        r = RewardModel.load(run, backend="torch").score(traj)
        logits.append(np.log(r.p_success / (1 - r.p_success)))
    assert abs(rows["torch"]["p_success"] - 1 / (1 + np.exp(-np.mean(logits)))) <= 1e-3  # float16 weights


def test_runs_that_cannot_be_averaged_are_refused_naming_the_field(syn_dataset, tmp_path, capsys):
    from gui_app.cli import main
    from models.ensemble import EnsembleError, combine

    cache = tmp_path / "cache"
    _train(syn_dataset, tmp_path / "a", cache, 0)
    _train(syn_dataset, tmp_path / "b", cache, 1, d_model=16)
    with pytest.raises(EnsembleError, match="'d_model'"):
        combine([tmp_path / "a", tmp_path / "b"], syn_dataset, tmp_path / "e", cache_dir=str(cache))
    with pytest.raises(EnsembleError, match="at least two"):
        combine([tmp_path / "a"], syn_dataset, tmp_path / "e", cache_dir=str(cache))
    capsys.readouterr()
    assert main(["ensemble", str(tmp_path / "a"), str(tmp_path / "missing"), "--data", str(syn_dataset),
                 "--out", str(tmp_path / "e")]) == 1
    assert "missing/checkpoint.pt" in capsys.readouterr().err
    assert not (tmp_path / "e").exists()


def test_training_an_ensemble_config_directly_is_refused(syn_dataset, tmp_path):
    from models.train import TrainArgs, train

    with pytest.raises(ValueError, match="rollscope ensemble"):
        train(TrainArgs(data=str(syn_dataset), out=str(tmp_path / "r"), config={"members": 2}))
