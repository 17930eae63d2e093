"""Training (seeded, reproducible), the commands train / export-onnx / score / eval end to end on tiny data."""

from __future__ import annotations

import json

import pytest
import torch

from gui_app.cli import main
from models.config import ModelConfig
from models.train import TrainArgs, choose_threshold, train

TINY = json.dumps(ModelConfig.tiny(vocab_size=300).to_dict())


def test_choose_threshold_maximises_accuracy():
    import numpy as np

    p = np.array([0.1, 0.2, 0.6, 0.7, 0.9])
    y = np.array([0, 0, 1, 1, 1], dtype=float)
    t = choose_threshold(p, y)
    assert 0.2 < t <= 0.6
    assert ((p >= t) == y).all()


@pytest.mark.slow
def test_train_is_reproducible(syn_dataset, tmp_path):
    kw = dict(data=str(syn_dataset), epochs=1, seed=3, batch_size=4, warmup_steps=2,
              config=ModelConfig.tiny().to_dict(), cache_dir=str(tmp_path / "cache"))
    m1 = train(TrainArgs(out=str(tmp_path / "a"), **kw), log=lambda _: None)
    m2 = train(TrainArgs(out=str(tmp_path / "b"), **kw), log=lambda _: None)
    assert m1["history"][0]["train_loss"] == m2["history"][0]["train_loss"]
    a = torch.load(tmp_path / "a" / "checkpoint.pt", weights_only=False)
    b = torch.load(tmp_path / "b" / "checkpoint.pt", weights_only=False)
    assert all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])
    assert set(a) >= {"state_dict", "config", "feature_version", "tokenizer", "threshold"}
    assert m1["n_train"] == 12 and m1["n_val"] == 4


@pytest.mark.slow
def test_commands_end_to_end(syn_dataset, tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--data", str(syn_dataset), "--out", str(run), "--epochs", "2", "--config", TINY,
                 "--cache", str(tmp_path / "cache"), "--batch-size", "4", "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["n_train"] == 12
    assert (run / "metrics.json").is_file()

    weights = tmp_path / "w"
    assert main(["export-onnx", str(run), "--out", str(weights), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["max_abs_diff"] <= 1e-4 and (weights / "model.onnx").is_file()

    good = str(syn_dataset / "t000")
    assert main(["score", good, str(tmp_path / "nope"), "--json", "--model", str(weights)]) == 1
    captured = capsys.readouterr()
    lines = [json.loads(x) for x in captured.out.strip().splitlines()]
    assert set(lines[0]) == {"path", "id", "p_success", "success", "first_error_step", "step_scores",
                             "tokens_total", "tokens_kept", "seconds", "unknown", "warnings"}
    assert set(lines[1]) == {"path", "error"}
    assert captured.err.count("rollscope: error:") == 1 and "nope" in captured.err
    # Errors exit 1, as the README says, whether some or all items fail, with one line each on stderr.
    assert main(["score", str(tmp_path / "nope"), "--json", "--model", str(weights)]) == 1
    assert capsys.readouterr().err.startswith("rollscope: error:")
    assert main(["score", good, "--model", str(weights), "--backend", "torch", "--no-prune"]) == 0
    assert "p_success=" in capsys.readouterr().out
    # a folder of trajectories is searched: every unit under it gets its line (the manifest is not one)
    assert main(["score", str(syn_dataset), "--json", "--model", str(weights)]) == 0
    found = [json.loads(x) for x in capsys.readouterr().out.strip().splitlines()]
    assert len(found) == 20 and all("p_success" in x for x in found)
    assert {x["path"] for x in found} >= {good}

    assert main(["eval", str(syn_dataset), "--model", str(weights), "--twin", str(weights), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    test = report["splits"]["test"]
    assert set(test) == {"pruned", "pruned_model_unpruned_input", "unpruned_twin"}
    for key in ("accuracy", "precision", "recall", "f1", "first_error_exact", "first_error_within_one",
                "first_error_tiou", "tokens_kept_ratio", "forward_ms_mean", "e2e_ms_mean"):
        assert key in test["pruned"]
    assert test["pruned"]["n"] == 4
    assert test["pruned"]["tokens_kept_ratio"] < test["unpruned_twin"]["tokens_kept_ratio"] == 1.0
    assert report["onnx_bytes"]["pruned"] > 0
    assert 0.5 <= test["pruned"]["majority_accuracy"] <= 1.0
    assert test["pruned"]["accuracy_by_task"] == {"click-color": test["pruned"]["accuracy"]}  # one task here
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(report))
    assert main(["eval", str(syn_dataset), "--report", str(saved), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith("| metric | test: pruned | test: pruned_model_unpruned_input | test: unpruned_twin |")
    assert f"| n | {test['pruned']['n']} |" in md and "accuracy by negative kind (test, pruned)" in md
    assert "accuracy by task (test, pruned): click-color" in md


def test_a_report_that_is_not_an_eval_report_is_a_clean_error(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text("")  # e.g. an eval that was interrupted before printing
    assert main(["eval", str(tmp_path), "--report", str(empty)]) == 1
    assert f"{empty}: not a saved `rollscope eval --json` report" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text('{"accuracy": 0.5}')
    assert main(["eval", str(tmp_path), "--report", str(other), "--markdown"]) == 1
    assert "field 'splits'" in capsys.readouterr().err


def test_export_of_a_missing_run_is_a_clean_error(tmp_path, capsys):
    assert main(["export-onnx", str(tmp_path)]) == 1
    assert "checkpoint" in capsys.readouterr().err
