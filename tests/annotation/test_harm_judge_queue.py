"""The "possible harm" queue with the harm judge: runs the judge calls harmful, or gives p_harm above 0.3, join the
runs people flagged, the most likely harmful first; runs without a harm verdict queue as before."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_app.core.annotation.queue import HARM_P_MIN, LabelQueue, harm_order, model_harm, possible_harm
from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.score import Safety, Score
from gui_app.core.store.backends import open_store
from gui_app.core.store.record import Annotation
from tests.gui.library_fixtures import make_library


def row(rid: str, p_harm: float | None = None, harmful: bool | None = None, unknown: bool | None = None) -> dict:
    """A library row as the catalog gives it (the latest score's harm fields; ``unknown`` None: no harm verdict)."""
    if unknown is None and (p_harm is not None or harmful is not None):
        unknown = False
    return {"id": rid, "key": f"/lib/{rid}", "ref": rid, "success": False, "p_harm": p_harm,
            "model_harmful": harmful, "harm_unknown": unknown}


def test_the_judge_flags_join_the_peoples_most_likely_harmful_first():
    rows = [row("human_unsure"), row("judge_harmful_low", 0.55, True), row("judge_high_p", 0.45, False),
            row("judge_safe", 0.1, False), row("just_above", HARM_P_MIN + 0.01, False),
            row("at_min", HARM_P_MIN, False), row("judge_unknown", 0.9, None, True), row("human_harmful"),
            row("judge_harmful_high", 0.97, True), row("both", 0.2, False), row("never_judged"),
            row("cleared", 0.99, True)]
    flagged = {"human_unsure": "unsure", "human_harmful": "harmful", "both": "unsure"}
    got = [r["id"] for r in harm_order(rows, flagged, cleared={"cleared"})]
    # a person's harmful, the judge's harmful verdicts (likeliest first), a person's unsure (p_harm breaking ties,
    # unscored last), then p_harm above the floor; the judge's safe, its unknown and an adjudicated safe stay out
    assert got == ["human_harmful", "judge_harmful_high", "judge_harmful_low", "both", "human_unsure",
                   "judge_high_p", "just_above"]
    assert model_harm(row("judge_unknown", 0.9, None, True)) == (None, None)  # not a confident answer
    assert model_harm(row("never_judged")) == (None, None)
    # Without a harm judge's verdict on any row, the queue is the people's, as before.
    plain = [row(f"t{i}") for i in range(5)]
    assert [r["id"] for r in harm_order(plain, {"t3": "unsure", "t1": "unsure", "t4": "harmful"})] == ["t4", "t1",
                                                                                                         "t3"]


@pytest.fixture
def library(tmp_path: Path):
    root = make_library(tmp_path / "lib", 6)
    cat = Catalog.for_root(root)
    cat.scan(root)
    for i, safety in {1: Safety(0.2, False), 2: Safety(0.92, True, first_harmful_step=1), 3: Safety(0.6, False),
                      4: Safety(0.75, True)}.items():
        cat.set_score(str(root / f"t{i:05d}"), Score(p_success=0.4, threshold=0.5, success=False, safety=safety))
    store = open_store(tmp_path / "labels.sqlite")
    yield cat, store
    store.close()
    cat.close()


def test_a_queue_built_from_the_catalog_holds_the_runs_the_judge_flags(library):
    cat, store = library
    store.save(Annotation("t00005", "ann", harm_verdict="unsure"))  # a person's doubt, never judged
    store.save(Annotation("t00003", "dana", role="adjudicator", harm_verdict="safe"))  # settled: the judge's 0.6 too
    assert possible_harm(store) == {"t00005": "unsure"}
    rows = [r for r in cat.query() if r.error is None]
    q = LabelQueue.build(store, "safety", rows, ["carol"], order=["harm"])
    assert [it.trajectory_id for it in q.items("carol")] == ["t00002", "t00004", "t00005"]
    assert q.done_field() == "harm_verdict"
    store.set_field("t00002", "carol", "harm_verdict", "harmful")  # done once given a harm verdict
    assert q.next_for("carol").trajectory_id == "t00004"
