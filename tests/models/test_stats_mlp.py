"""The statistics MLP (``stats_mlp``): one reading of the run statistics shared by every instruction,
standardised with the training split's statistics, exported with the graph."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from models.config import ModelConfig
from models.export_onnx import compare, export, sample_batch
from models.network import RewardNet, input_names, n_stats, run_stats
from models.train import record_stats, set_stats_norm

CFG = dict(word_match=True, cursor_match=True, stats_head=True, mil_head=True, stats_mlp=8)


def _call(net: RewardNet, b: dict[str, np.ndarray]) -> torch.Tensor:
    with torch.no_grad():
        return net(**{k: torch.from_numpy(b[k]) for k in input_names(net.cfg)})[0]


def test_stats_mlp_reads_the_statistics_not_the_words_and_exports(tmp_path):
    cfg = ModelConfig.tiny(**CFG)
    torch.manual_seed(0)
    net = RewardNet(cfg).eval()
    assert net.stats_mean.shape == net.stats_std.shape == (n_stats(cfg),) == (13,)
    assert RewardNet(ModelConfig.tiny(**{**CFG, "stats_mlp": 0})).stats_mlp is None
    with torch.no_grad():
        for p in net.stats_mlp.parameters():
            p.normal_(0, 1.0)
        net.stats_mean.fill_(0.5)
        net.stats_std.fill_(2.0)
    b = sample_batch(cfg, batch=3, frames=4, tokens_per_frame=5, text=5, seed=1)
    assert export(net, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4
    assert compare((tmp_path / "m.onnx").read_bytes(), net, b) <= 1e-4  # buffers are in the graph

    def mlp_part(batch):
        st = run_stats(*(torch.from_numpy(batch[k]) for k in ("positions", "token_mask", "frame_mask",
                                                               "token_match")), pointer=True)
        with torch.no_grad():
            return net.stats_mlp((st - net.stats_mean) / net.stats_std).squeeze(-1)

    other_words = dict(b, text_ids=np.roll(b["text_ids"], 1, axis=1))
    assert torch.allclose(mlp_part(b), mlp_part(other_words))  # same statistics, any instruction: same reading
    no_pointer = dict(b, token_match=b["token_match"] * np.array([1, 1, 0], dtype=np.float32))
    assert not torch.allclose(mlp_part(b), mlp_part(no_pointer))
    assert not torch.allclose(_call(net, b), _call(net, no_pointer))


def test_training_sets_the_standardisation_from_the_training_split(syn_dataset, tmp_path, capsys):
    from gui_app.cli import main
    from models.data import load_records, read_manifest

    cfg = ModelConfig.tiny(vocab_size=300, max_grid=32, **CFG)
    run, cache = tmp_path / "run", tmp_path / "cache"
    assert main(["train", "--data", str(syn_dataset), "--out", str(run), "--epochs", "1", "--config",
                 json.dumps(cfg.to_dict()), "--cache", str(cache), "--batch-size", "4", "--json"]) == 0
    ckpt = torch.load(run / "checkpoint.pt", weights_only=False)
    df = read_manifest(syn_dataset)
    recs = load_records(df.filter(df["split"] == "train"), cfg, cache)
    fresh = RewardNet(cfg)
    set_stats_norm(fresh, recs)
    assert torch.allclose(ckpt["state_dict"]["stats_mean"], fresh.stats_mean)
    assert torch.allclose(ckpt["state_dict"]["stats_std"], fresh.stats_std)
    assert fresh.stats_mean[0] > 0 and (fresh.stats_std > 0).all()  # log(1 + keyframes) of real runs
    assert main(["export-onnx", str(run), "--out", str(tmp_path / "w"), "--json"]) == 0
    capsys.readouterr()
    assert main(["score", str(syn_dataset / "t000"), "--json", "--model", str(tmp_path / "w")]) == 0
    assert 0.0 <= json.loads(capsys.readouterr().out.strip().splitlines()[-1])["p_success"] <= 1.0


def test_stats_alone_drops_the_other_evidence_in_training_only():
    cfg = ModelConfig.tiny(**CFG, stats_alone=0.999)
    torch.manual_seed(2)
    net = RewardNet(cfg)
    b = sample_batch(cfg, batch=3, frames=4, tokens_per_frame=5, text=5, seed=3)
    st = run_stats(*(torch.from_numpy(b[k]) for k in ("positions", "token_mask", "frame_mask", "token_match")),
                   pointer=True)
    net.train()
    for m in net.modules():  # dropout off, so the training-mode output is deterministic
        if isinstance(m, torch.nn.Dropout):
            m.p = 0.0
    with torch.no_grad():
        alone = net.stats_mlp((st - net.stats_mean) / net.stats_std).squeeze(-1)
    torch.manual_seed(0)  # all three examples drawn below 0.999 (a fixed draw)
    assert torch.allclose(_call(net, b), alone, atol=1e-6)  # share ~1: the MLP's verdict alone
    net.eval()
    assert not torch.allclose(_call(net, b), alone, atol=1e-4)  # evaluation always sums both


def test_stats_alone_one_makes_the_verdict_the_statistics_in_evaluation_too(tmp_path):
    cfg = ModelConfig.tiny(**CFG, stats_alone=1.0)
    net = RewardNet(cfg).eval()
    b = sample_batch(cfg, batch=2, frames=3, tokens_per_frame=4, text=5, seed=4)
    st = run_stats(*(torch.from_numpy(b[k]) for k in ("positions", "token_mask", "frame_mask", "token_match")),
                   pointer=True)
    with torch.no_grad():
        alone = net.stats_mlp((st - net.stats_mean) / net.stats_std).squeeze(-1)
    assert torch.allclose(_call(net, b), alone, atol=1e-6)
    other = dict(b, tokens=-b["tokens"])  # other pixels, same statistics: same verdict
    assert torch.allclose(_call(net, other), alone, atol=1e-6)
    assert export(net, tmp_path / "m.onnx")["max_abs_diff"] <= 1e-4


def test_stats_fit_fits_the_mlp_first_and_training_leaves_it_as_fitted(syn_dataset, tmp_path, capsys):
    """Batches of one: a successful run's batch has no loss term that trains anything (the verdict is the fixed
    MLP's, and it has no failing step to locate); training steps over it."""
    from gui_app.cli import main
    from models.data import load_records, read_manifest
    from models.train import fit_stats_mlp

    cfg = ModelConfig.tiny(vocab_size=300, max_grid=32, **CFG, stats_alone=1.0)
    run, cache = tmp_path / "run", tmp_path / "cache"
    assert main(["train", "--data", str(syn_dataset), "--out", str(run), "--epochs", "2", "--config",
                 json.dumps(cfg.to_dict()), "--cache", str(cache), "--batch-size", "1", "--stats-fit", "300",
                 "--seed", "3", "--json"]) == 0
    capsys.readouterr()
    ckpt = torch.load(run / "checkpoint.pt", weights_only=False)
    assert ckpt["train_args"]["stats_fit"] == 300
    df = read_manifest(syn_dataset)
    recs = load_records(df.filter(df["split"] == "train"), cfg, cache)
    fresh = RewardNet(cfg)
    set_stats_norm(fresh, recs)
    loss = fit_stats_mlp(fresh, recs, 300, seed=3)
    assert all(not p.requires_grad for p in fresh.stats_mlp.parameters())
    for name, value in fresh.stats_mlp.state_dict().items():  # the network's epochs did not move it
        assert torch.equal(ckpt["state_dict"][f"stats_mlp.{name}"], value), name
    x = (torch.stack([record_stats(r) for r in recs]) - fresh.stats_mean) / fresh.stats_std
    y = torch.tensor([float(r.success) for r in recs])
    with torch.no_grad():
        first = torch.nn.functional.binary_cross_entropy_with_logits(
            RewardNet(cfg).stats_mlp.eval()(x)[:, 0], y)
    assert loss < float(first)  # it learned something from the statistics


def test_stats_fit_without_the_mlp_names_the_field():
    from models.train import fit_stats_mlp

    net = RewardNet(ModelConfig.tiny(**{**CFG, "stats_mlp": 0}))
    with pytest.raises(ValueError, match="stats_mlp"):
        fit_stats_mlp(net, [], 10, seed=0)
