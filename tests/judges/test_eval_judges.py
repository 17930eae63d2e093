"""``rollscope eval --library DIR --judge NAME...``: judges against the library's final human labels (a real SQLite
annotation store: adjudicated labels, majorities, a disagreement, an unsure label) or against the environment's
outcome, the built-in model on the bundled samples and an endpoint judge on a real loopback server, a row each."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gui_app import cli
from gui_app.core.scoring.batch import score_many
from gui_app.core.store.backends import open_store
from gui_app.core.store.interface import default_path
from gui_app.core.store.record import Annotation
from gui_app.core.trajectory import formats
from gui_app.judges.registry import load_judge

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples" / "miniwob"
# run -> what the people said: (verdict, root-cause step) of each annotator
LABELS = {
    "login-user-success": [("success", None), ("success", None)],
    "click-tab-success": [("success", None)],
    "email-inbox-wrong-email": [("failure", 2), ("failure", 2)],
    "enter-text-typo": [("failure", 1)],  # adjudicated below: the last step
    "login-user-swapped-fields": [("success", None), ("failure", 3)],  # a disagreement nobody settled: left out
    "click-dialog-missed": [("unsure", None)],  # not a verdict: left out
}


@pytest.fixture
def library(tmp_path) -> Path:
    """Six sample runs and their labels in the library's own store (``.rollscope/labels.sqlite``)."""
    root = tmp_path / "lib"
    for name in LABELS:
        shutil.copytree(SAMPLES / name, root / name)
    store = open_store(default_path(root))
    for name, said in LABELS.items():
        for i, (verdict, step) in enumerate(said):
            store.save(Annotation(name, f"ann{i}", verdict=verdict, root_cause_step=step))
    last = formats.load(str(root / "enter-text-typo")).n_steps - 1
    store.save(Annotation("enter-text-typo", "ann1", verdict="failure", root_cause_step=last))
    store.adjudicate("enter-text-typo", "dana", "ann1")
    store.close()
    return root


def _eval(*args: str) -> int:
    return cli.main(["eval", "--library", *args])


def test_the_built_in_judge_and_an_endpoint_judge_against_the_final_labels(library, server, capsys):
    code = _eval(str(library), "--judge", "rollscope", "--judge", "openai-compatible",
                 "--judge-option", f"endpoint={server.url}", "--judge-option", "model=judge-fail",
                 "--judge-option", "backoff=0.01", "--json")
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    # Four runs have a final success/failure verdict; the disagreement and the unsure label are named, not dropped.
    assert report["against"] == "labels" and report["n_reference"] == 4
    assert sorted(s["run"] for s in report["skipped"]) == ["click-dialog-missed", "login-user-swapped-fields"]
    assert any("disagree" in s["reason"] for s in report["skipped"])
    builtin, endpoint = report["judges"]

    # The endpoint judge calls every run a failure at the last step it was shown (the server's rule): the two
    # successes are missed, both failures found; kappa is 0 (chance: it never says success); the first step is
    # exact on the adjudicated run (the last step) and two or more steps off on the other.
    assert endpoint["model"].startswith("openai-compatible:judge-fail@127.0.0.1:")
    assert (endpoint["n"], endpoint["errors"]) == (4, 0)
    assert (endpoint["accuracy"], endpoint["recall"], endpoint["failure_recall"]) == (0.5, 0.0, 1.0)
    assert endpoint["kappa"] == pytest.approx(0.0)
    n_wrong = formats.load(str(library / "email-inbox-wrong-email")).n_steps
    assert (endpoint["n_step"], endpoint["step_exact"]) == (2, 0.5)
    assert endpoint["step_within_one"] == (1.0 if abs(n_wrong - 1 - 2) <= 1 else 0.5)
    # The tokens the server reports: 100 + 50 per image in, 20 out, per run.
    images = [min(formats.load(str(library / n)).n_steps, 16) for n in
              ("login-user-success", "click-tab-success", "email-inbox-wrong-email", "enter-text-typo")]
    assert endpoint["tokens_in"] == pytest.approx(100 + 50 * sum(images) / 4) and endpoint["tokens_out"] == 20
    assert endpoint["seconds_per_run"] > 0 and endpoint["unknown_share"] == 0.0
    assert len(server.requests) == 4

    # The built-in model: its figures are its own verdicts on these runs against the labels, counted by hand.
    assert builtin["model"].endswith(":onnx") and builtin["errors"] == 0 and builtin["tokens_in"] is None
    human = {"login-user-success": True, "click-tab-success": True, "email-inbox-wrong-email": False,
             "enter-text-typo": False}
    model = load_judge("rollscope", {})
    said = {Path(o.key).name: o.result.success for o in score_many([str(library / n) for n in human], model)}
    assert builtin["n"] == 4 and builtin["accuracy"] == sum(said[k] == human[k] for k in human) / 4
    assert builtin["recall"] == sum(said[k] for k in human if human[k]) / 2
    assert builtin["failure_recall"] == sum(not said[k] for k in human if not human[k]) / 2


def test_the_plain_table_names_each_judge_and_every_run_it_could_not_score(library, server, capsys):
    code = _eval(str(library), "--judge", "openai-compatible", "--judge-option", f"endpoint={server.url}",
                 "--judge-option", "model=garbage", "--judge-option", "cache=off")
    assert code == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "Judges against the final human labels: 4 runs"
    header = lines[2].split()
    assert header[:5] == ["judge", "n", "accuracy", "recall", "fail"] and header[-1] == "errors"
    row = lines[3].split()
    assert row[0] == "openai-compatible" and row[1] == "0" and row[-1] == "4"  # nothing scored, four errors
    assert out.count("  error: ") == 4 and "gave no verdict that can be read" in out
    assert "2 runs without a usable reference verdict left out" in out


def test_against_the_outcome_and_options_before_the_first_judge(library, server, capsys):
    # An option given before any --judge is the first judge's.
    code = _eval(str(library), "--judge-option", f"endpoint={server.url}", "--judge", "openai-compatible",
                 "--judge-option", "model=judge-pass", "--against", "outcome", "--json")
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    (endpoint,) = report["judges"]
    outcomes = {n: formats.load(str(library / n)).outcome.success for n in LABELS}
    assert report["against"] == "outcome" and report["n_reference"] == len(outcomes)
    assert endpoint["recall"] == 1.0 and endpoint["failure_recall"] == 0.0
    assert endpoint["accuracy"] == pytest.approx(sum(outcomes.values()) / len(outcomes))


def test_what_eval_refuses_in_one_line(library, tmp_path, capsys):
    assert _eval(str(library), "--judge", "no-such-judge") == 1
    assert "no judge named 'no-such-judge'" in capsys.readouterr().err
    assert _eval(str(library), "--judge", "openai-compatible", "--judge-option", "api-key=sk-x") == 1
    assert "takes no option api-key" in capsys.readouterr().err
    bare = tmp_path / "bare"
    shutil.copytree(SAMPLES / "click-tab-success", bare / "click-tab-success")
    assert _eval(str(bare), "--judge", "rollscope") == 1
    err = capsys.readouterr().err
    assert "no annotation store here" in err and "--against outcome" in err
    # A judge that cannot load is its own line and the exit status says so; the others still report.
    assert _eval(str(library), "--judge", "rollscope", "--judge", "exevrm",
                 "--judge-option", f"weights={tmp_path / 'nothing'}") == 1
    out, err = capsys.readouterr()
    assert "exevrm: cannot load:" in out and "rollscope: error: judge exevrm cannot load" in err
    assert out.splitlines()[3].split()[:2] == ["rollscope", "4"]
