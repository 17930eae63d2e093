"""Judges against people, the figures: accuracy, both recalls, Cohen's kappa and the first deviating step on hand-made
verdicts whose values are worked out by hand; and a judge that cannot load or cannot score a run is reported, never
dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_app.core.annotation.teaching import LabelledRun
from gui_app.core.annotation.versus import Judged, agreement_metrics, format_table, versus
from gui_app.core.errors import RollscopeError
from gui_app.core.scoring.score import Score

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"


def test_kappa_and_the_recalls_on_a_hand_made_case():
    # 10 runs: the people say 6 successes, 4 failures. The judge: 5 of the 6 successes right (one called a
    # failure), 2 of the 4 failures right (two called successes).
    human = [True] * 6 + [False] * 4
    judge = [True] * 5 + [False] + [False, False, True, True]
    steps = [None] * 6 + [(3, 3), (5, 7), (None, None), (None, None)]  # (human step, judge step)
    runs = [Judged(f"r{i}", h, s[0] if s else None, j, s[1] if s else None) for i, (h, j, s) in
            enumerate(zip(human, judge, steps))]
    m = agreement_metrics(runs)
    # p_o = 7/10; the judge says success 7 times of 10, the people 6 of 10:
    # p_e = 0.7 * 0.6 + 0.3 * 0.4 = 0.54; kappa = (0.70 - 0.54) / (1 - 0.54) = 0.3478...
    assert m["accuracy"] == pytest.approx(0.7)
    assert m["kappa"] == pytest.approx(0.16 / 0.46)
    assert m["recall"] == pytest.approx(5 / 6) and m["failure_recall"] == pytest.approx(2 / 4)
    assert (m["n"], m["n_success"], m["n_failure"]) == (10, 6, 4)
    # Steps: only the two runs both call failures, with a human step: one exact, one two steps off.
    assert (m["n_step"], m["step_exact"], m["step_within_one"]) == (2, 0.5, 0.5)
    assert m["unknown_share"] == 0.0 and m["tokens_in"] is None


def test_kappa_is_none_when_chance_explains_everything_and_a_failure_without_a_step_is_a_miss():
    runs = [Judged("a", False, 2, False, None), Judged("b", False, 4, False, 5, unknown=True,
                                                      usage={"prompt_tokens": 100, "completion_tokens": 10})]
    m = agreement_metrics(runs)
    assert m["accuracy"] == 1.0 and m["kappa"] is None  # every verdict "failure": p_e = 1
    assert m["recall"] is None and m["failure_recall"] == 1.0
    assert (m["n_step"], m["step_exact"], m["step_within_one"], m["step_missing"]) == (2, 0.0, 0.5, 1)
    assert m["unknown_share"] == 0.5 and (m["tokens_in"], m["tokens_out"]) == (100, 10)
    assert agreement_metrics([])["kappa"] is None and agreement_metrics([])["accuracy"] is None


class Fixed:
    """A judge whose verdicts are given by run: a run it has none for fails alone."""

    name = "fixed:v1"

    def __init__(self, verdicts: dict[str, bool]):
        self.verdicts = verdicts

    def prepare(self, traj, prune=True):
        return traj.source_path

    def score_prepared(self, prepared):
        return [Score(p_success=float(self.verdicts[k]), threshold=0.5, success=self.verdicts[k], model=self.name)
                if k in self.verdicts else RollscopeError(f"{k}: nothing to say") for k in prepared]


def test_versus_reports_every_run_a_judge_cannot_score_and_a_judge_that_cannot_load():
    samples = SAMPLES
    runs = [samples / "miniwob" / n for n in ("login-user-success", "click-tab-success", "email-inbox-wrong-email")]
    refs = [LabelledRun(p.name, str(p), p.name.endswith("success"), None, "adjudicated") for p in runs]
    refs.append(LabelledRun("gone", str(samples / "no-such-run"), True, None, "majority"))

    def broken():
        raise RollscopeError("no weights here")

    seen: list[tuple[int, int, str]] = []
    report = versus(refs, [("fixed", lambda: Fixed({str(runs[0]): True, str(runs[2]): True})), ("broken", broken)],
                    skipped=[("unsure-run", "verdict 'unsure': nothing to learn success from")],
                    progress=lambda d, t, text: seen.append((d, t, text)))
    fixed, bad = report.judges
    assert fixed.model == "fixed:v1" and fixed.attempted == 4
    assert [(r.key, r.human, r.judge) for r in fixed.runs] == [(str(runs[0]), True, True),
                                                             (str(runs[2]), False, True)]
    reasons = dict(fixed.errors)
    assert reasons[str(runs[1])] == f"could not be scored: {runs[1]}: nothing to say"
    assert reasons[str(samples / "no-such-run")].startswith("does not load: ")
    assert bad.load_error == "no weights here" and bad.runs == [] and bad.model == ""
    assert seen[-1][:2] == (4, 8) and seen[0] == (0, 8, "loading fixed")
    text = format_table(report)
    assert "broken: cannot load: no weights here" in text and "load failed" in text
    assert f"error: {runs[1]}: could not be scored" in text
    assert "1 run without a usable reference verdict left out; first: unsure-run" in text
    doc = report.to_json()
    assert doc["judges"][0]["errors"] == 2 and doc["judges"][0]["accuracy"] == 0.5
    assert doc["skipped"] == [{"run": "unsure-run", "reason": "verdict 'unsure': nothing to learn success from"}]


def test_a_cancel_stops_between_judges_and_says_so():
    run = SAMPLES / "miniwob" / "login-user-success"
    refs = [LabelledRun(run.name, str(run), True, None, "adjudicated")]
    report = versus(refs, [("fixed", lambda: Fixed({str(run): True}))], cancel=lambda: True)
    assert report.cancelled and report.judges == []
    assert "cancelled" in format_table(report)
