"""`rollscope eval` on runs in any format (--library), its metrics, and the clean errors of eval/train/export."""

from __future__ import annotations

import json
import shutil

import numpy as np

from gui_app.cli import main
from models.evaluate import auroc, classification


def test_auroc_counts_ties_half_and_matches_pairwise_counting():
    rng = np.random.default_rng(0)
    p = rng.random(300).round(1)  # many ties
    y = rng.random(300) < p
    pairs = [1.0 if a > b else 0.5 if a == b else 0.0 for a in p[y] for b in p[~y]]
    assert abs(auroc(p, y) - float(np.mean(pairs))) < 1e-12
    assert np.isnan(auroc(p, np.ones(300, bool)))  # one class only: undefined, not 0 or 1


def test_classification_reports_both_recalls():
    p = np.array([0.9, 0.8, 0.2, 0.7, 0.1])
    y = np.array([1, 1, 1, 0, 0], dtype=float)
    m = classification(p, y, 0.5)
    assert m["recall"] == 2 / 3 and m["failure_recall"] == 0.5
    assert m["balanced_accuracy"] == (2 / 3 + 0.5) / 2 and m["majority_accuracy"] == 0.6


def test_eval_library_scores_runs_in_any_format_with_a_known_outcome(tiny_weights, samples, tmp_path, capsys):
    lib = tmp_path / "lib"
    shutil.copytree(samples / "miniwob" / "login-user-success", lib / "native-ok")
    shutil.copytree(samples / "miniwob" / "enter-text-typo", lib / "native-typo")
    shutil.copytree(samples / "osworld", lib / "osworld")
    unknown = lib / "no-outcome"
    shutil.copytree(samples / "miniwob" / "click-tab-success", unknown)
    doc = json.loads((unknown / "trajectory.json").read_text())
    doc.pop("outcome", None)  # a run nobody judged: counted, never scored as if it had an outcome
    (unknown / "trajectory.json").write_text(json.dumps(doc))
    assert main(["eval", "--library", str(lib), "--model", str(tiny_weights), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    split = report["splits"][str(lib)]
    assert split["all"]["n"] == 3 and report["no_outcome"] == 1 and not report["errors"]
    assert set(split["source"]) == {"native", "osworld"}
    assert {"auroc", "failure_recall", "ece", "unknown_share"} <= set(split["all"])
    saved = tmp_path / "report.json"
    saved.write_text(json.dumps(report))
    assert main(["eval", str(tmp_path), "--report", str(saved), "--markdown"]) == 0
    md = capsys.readouterr().out
    assert md.startswith(f"| metric | {lib} |") and "**source (" in md and "| osworld | 1 |" in md


def test_several_datasets_without_library_is_a_clean_error(tmp_path, capsys):
    assert main(["eval", str(tmp_path / "a"), str(tmp_path / "b")]) == 1
    assert "several folders need --library" in capsys.readouterr().err


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


def test_train_refuses_a_config_that_is_not_json(tmp_path, capsys):
    assert main(["train", "--data", str(tmp_path), "--out", str(tmp_path / "run"), "--config", "{d_model: 64"]) == 1
    assert "--config: not JSON" in capsys.readouterr().err


def test_a_split_the_dataset_does_not_have_is_a_clean_error_not_an_empty_table(tiny_weights, samples, tmp_path,
                                                                               capsys):
    import polars as pl

    run = samples / "miniwob" / "login-user-success"
    doc = json.loads((run / "trajectory.json").read_text())
    pl.DataFrame([{"path": str(run), "id": "a", "instruction": doc["instruction"], "success": True,
                   "first_error_step": None, "split": "test", "n_steps": len(doc["steps"])}],
                 schema_overrides={"first_error_step": pl.Int64}).write_parquet(tmp_path / "manifest.parquet")
    assert main(["eval", str(tmp_path), "--model", str(tiny_weights), "--split", "all", "--json"]) == 1
    err = capsys.readouterr().err
    assert f"{tmp_path / 'manifest.parquet'}: field 'split': no 'all' split (it has test)" in err
    assert main(["eval", str(tmp_path), "--model", str(tiny_weights), "--split", "test", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["splits"]["test"]["all"]["n"] == 1


def test_the_ece_floor_is_what_a_calibrated_judge_shows_on_as_many_runs():
    from models.evaluate import calibration, ece_floor

    rng = np.random.default_rng(3)
    small, large = rng.random(200), rng.random(20000)
    assert ece_floor(small) > 0.04 and ece_floor(large) < 0.01  # few runs: a perfect judge still shows an ECE
    assert ece_floor(small) == ece_floor(small)  # seeded: the same report twice
    # outcomes drawn from p itself (a calibrated judge): its ECE over many sets centres on the floor
    eces = [calibration(small, rng.random(200) < small)["ece"] for _ in range(300)]
    assert abs(float(np.median(eces)) - ece_floor(small)) < 0.01
    # a judge that says 0.9 where the truth is 0.5 is far above its floor
    over = np.full(200, 0.9)
    assert calibration(over, rng.random(200) < 0.5)["ece"] > ece_floor(over) + 0.25
