"""An ensemble: networks trained apart (other seeds) judged together, the mean of their logits, one ONNX graph
(`rollscope train --ensemble`)."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
import torch

from gui_app.cli import main
from gui_app.core.trajectory.formats import load
from models.checkpoint import Checkpoint
from models.config import ModelConfig
from models.export_onnx import export_network, sample_batch
from models.features import INPUT_NAMES
from models.network import Ensemble, RewardNet, build
from models.runtime import RewardModel

from .test_perception_cache import tiny_dataset


def _members(n: int) -> list[RewardNet]:
    nets = []
    for seed in range(n):
        torch.manual_seed(seed)
        nets.append(RewardNet(ModelConfig.tiny()).eval())
    return nets


def test_an_ensemble_averages_its_members_logits_and_exports_as_one_graph(tmp_path):
    a, b = _members(2)
    ens = build(replace(ModelConfig.tiny(), members=2))
    assert isinstance(ens, Ensemble) and isinstance(build(ModelConfig.tiny()), RewardNet)
    ens.load_state_dict({f"nets.{k}.{n}": v for k, net in enumerate((a, b)) for n, v in net.state_dict().items()})
    ens.eval()
    batch = {k: torch.from_numpy(v) for k, v in sample_batch(ens.cfg, batch=3, frames=5).items()}
    with torch.no_grad():
        (sa, fa, ea), (sb, fb, eb), (s, f, e) = a(**batch), b(**batch), ens(**batch)
    assert torch.allclose(s, (sa + sb) / 2, atol=1e-6)
    valid = fa > -1e8
    assert torch.equal(valid, f > -1e8)  # padding keyframes stay padding
    assert torch.allclose(f[valid], ((fa + fb) / 2)[valid], atol=1e-6)
    assert torch.equal(e, torch.cat([ea, eb], dim=-1))
    assert not torch.allclose(sa, sb)  # two seeds, two networks: the mean is not one of them
    assert export_network(ens, tmp_path / "m.onnx") <= 1e-4


def test_train_joins_runs_into_an_ensemble_that_scores_as_the_mean_of_its_networks(samples, tmp_path, capsys):
    ds = tmp_path / "ds"
    tiny_dataset(ds, samples)
    common = ["--data", str(ds), "--epochs", "1", "--workers", "1", "--batch-size", "4", "--cache",
              str(tmp_path / "cache"), "--config", json.dumps(ModelConfig.tiny().to_dict())]
    for seed in (0, 1):
        assert main(["train", *common, "--out", str(tmp_path / f"s{seed}"), "--seed", str(seed), "--no-trees"]) == 0
    capsys.readouterr()
    rc = main(["train", *common, "--out", str(tmp_path / "ens"), "--ensemble", str(tmp_path / "s0"),
               str(tmp_path / "s1"), "--json"])
    assert rc == 0, capsys.readouterr().err
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["members"] == [str(tmp_path / "s0"), str(tmp_path / "s1")] and report["net"]["members"] == 2
    ck = Checkpoint.load(tmp_path / "ens", state=True)
    assert ck.net.members == 2 and ck.trees is not None and ck.trees.is_file()
    # "unlike the training data" reads both members' embeddings
    assert len(ck.ood.mean) == len(Checkpoint.load(tmp_path / "s0").ood.mean) + ModelConfig.tiny().d_model

    assert main(["export-onnx", str(tmp_path / "ens")]) == 0
    model = RewardModel.load(tmp_path / "ens" / "export")
    ex = model.prepare(load(samples / "miniwob" / "enter-text-typo")).example
    from models.features import make_batch

    batch = make_batch([ex])
    got = model.backend(batch)[0][0]
    logits = []
    for seed in (0, 1):
        member = Checkpoint.load(tmp_path / f"s{seed}", state=True)
        net = RewardNet(member.net)
        net.load_state_dict(member.state_dict)
        with torch.no_grad():
            logits.append(float(net.eval()(**{k: torch.from_numpy(batch[k]) for k in INPUT_NAMES})[0][0]))
    assert got == pytest.approx(np.mean(logits), abs=1e-3)  # half-precision weights in the export


def test_joining_what_cannot_be_joined_is_a_one_line_error(samples, tmp_path, capsys):
    ds = tmp_path / "ds"
    tiny_dataset(ds, samples)
    common = ["--data", str(ds), "--epochs", "1", "--workers", "1", "--batch-size", "4", "--cache",
              str(tmp_path / "cache"), "--no-trees"]
    tiny = json.dumps(ModelConfig.tiny().to_dict())
    assert main(["train", *common, "--out", str(tmp_path / "a"), "--config", tiny]) == 0
    assert main(["train", *common, "--out", str(tmp_path / "b"), "--config", tiny, "--seed", "1"]) == 0
    assert main(["train", *common, "--out", str(tmp_path / "wide"), "--config",
                 json.dumps({**ModelConfig.tiny().to_dict(), "d_model": 16})]) == 0
    capsys.readouterr()
    cases = [([str(tmp_path / "a")], "at least two training runs"),
             ([str(tmp_path / "a"), str(tmp_path / "wide")], "network or perception settings differ"),
             ([str(tmp_path / "a"), str(tmp_path / "a")], "named twice"),
             ([str(tmp_path / "a"), str(tmp_path / "nowhere")], "nowhere")]
    for runs, says in cases:
        rc = main(["train", *common, "--out", str(tmp_path / "ens"), "--ensemble", *runs])
        err = capsys.readouterr().err.strip().splitlines()
        assert rc != 0 and len(err) == 1 and says in err[0] and "internal error" not in err[0], err
    assert main(["train", *common, "--out", str(tmp_path / "ens"), "--ensemble", str(tmp_path / "a"),
                 str(tmp_path / "b")]) == 0
    capsys.readouterr()
    rc = main(["train", *common, "--out", str(tmp_path / "ens2"), "--ensemble", str(tmp_path / "ens"),
               str(tmp_path / "a")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc != 0 and len(err) == 1 and "already an ensemble of 2 networks" in err[0], err
    with pytest.raises(ValueError, match="join them with --ensemble"):
        from models.train import TrainArgs, train

        train(TrainArgs(data=str(ds), out=str(tmp_path / "x"), net=replace(ModelConfig.tiny(), members=2)))


def test_the_head_recipe_finds_the_heads_of_every_member():
    from models.finetune import _is_head

    ens = build(replace(ModelConfig.tiny(), members=2))
    heads = {n for n, _ in ens.named_parameters() if _is_head(n)}
    single = {n for n, _ in RewardNet(ModelConfig.tiny()).named_parameters() if _is_head(n)}
    assert single and heads == {f"nets.{k}.{n}" for k in (0, 1) for n in single}
    assert not any(_is_head(n) for n in ("nets.0.blocks.0.qkv.weight", "blocks.0.qkv.weight", "nets.1.hash.emb.weight"))
