"""Model versions in the catalog: which models scored a library, where two of them disagree (each model's latest
score, each by its own threshold), and the "models disagree" queue built from it, in the core and from the CLI."""

from __future__ import annotations

import json

import pytest

from gui_app.core.store.record import AnnotationError
from gui_app.core.library.catalog import Catalog
from gui_app.core.annotation.queue import LabelQueue, model_gaps, models_order, order_rows
from gui_app.core.scoring.score import Score, verdict
from gui_app.core.store.backends import open_store
from tests.annotation.test_cli import cli
from tests.gui.library_fixtures import write_native

OLD, NEW = "weights:onnx", "finetune-1:onnx"


def score(p: float | None, threshold: float | None, model: str, unknown: bool = False) -> Score:
    return Score(p_success=p, threshold=threshold, success=verdict(p, threshold), model=model, unknown=unknown)


@pytest.fixture
def library(tmp_path):
    """A real catalog over six native runs scored by two models (the new one with another threshold)."""
    lib = tmp_path / "lib"
    ids = ["flip_up", "flip_down", "agree", "own_threshold", "new_unknown", "only_old"]
    for rid in ids:
        write_native(lib / rid, id=rid, instruction=f"do {rid}", task=rid, success=None)
    with Catalog.for_root(lib) as cat:
        cat.scan(lib)
        key = {rid: str(lib / rid) for rid in ids}
        # the old model's threshold 0.57, the new one's 0.40
        cat.set_score(key["flip_up"], score(0.30, 0.57, OLD))
        cat.set_score(key["flip_up"], score(0.95, 0.40, NEW))        # failure -> success, gap 0.65
        cat.set_score(key["flip_down"], score(0.60, 0.57, OLD))
        cat.set_score(key["flip_down"], score(0.50, 0.57, OLD))      # a later old score wins: failure now
        cat.set_score(key["flip_down"], score(0.45, 0.40, NEW))      # success -> differs, gap 0.05
        cat.set_score(key["agree"], score(0.90, 0.57, OLD))
        cat.set_score(key["agree"], score(0.80, 0.40, NEW))
        # 0.47 is a failure by the old model's 0.57, 0.44 a success by the new one's 0.40: gap 0.03
        cat.set_score(key["own_threshold"], score(0.47, 0.57, OLD))
        cat.set_score(key["own_threshold"], score(0.44, 0.40, NEW))
        cat.set_score(key["new_unknown"], score(0.10, 0.57, OLD))
        cat.set_score(key["new_unknown"], score(0.90, 0.40, NEW, unknown=True))  # cannot judge: no disagreement
        cat.set_score(key["only_old"], score(0.10, 0.57, OLD))
        yield lib, cat, key


def test_models_that_scored_the_library_latest_first(library):
    _lib, cat, _key = library
    used = cat.scoring_models()
    assert [(m.model, m.n_scores) for m in used] == [(OLD, 7), (NEW, 5)]  # OLD scored last (only_old)
    assert used[0].last_scored_at >= used[1].last_scored_at > 0


def test_disagreement_is_exactly_the_keys_whose_verdicts_differ(library):
    _lib, cat, key = library
    got = cat.model_disagreements(OLD, NEW)
    assert [d.key for d in got] == [key["flip_up"], key["flip_down"], key["own_threshold"]]
    first = got[0]
    assert (first.p_a, first.p_b, first.success_a, first.success_b) == (0.30, 0.95, False, True)
    assert first.gap == pytest.approx(0.65)
    assert {d.key for d in cat.model_disagreements(NEW, OLD)} == {d.key for d in got}  # symmetric
    assert cat.model_disagreements(OLD, OLD) == [] and cat.model_disagreements(OLD, "never") == []


def test_disagree_queue_keeps_only_those_runs_widest_gap_first(library, tmp_path):
    _lib, cat, key = library
    pair, gaps = model_gaps(cat)  # the two most recent models
    assert pair == (OLD, NEW)
    rows = cat.query()
    ordered = models_order(rows, gaps)
    assert [r.key for r in ordered] == [key["flip_up"], key["flip_down"], key["own_threshold"]]
    with pytest.raises(ValueError, match="name two different models"):
        model_gaps(cat, [OLD, OLD])
    with pytest.raises(ValueError, match="needs two models' disagreements"):
        order_rows(rows, ["models"])
    store = open_store(tmp_path / "labels.sqlite")
    try:
        q = LabelQueue.build(store, "disagree", rows, ["ann"], order=["models"], model_gaps=gaps)
        assert [it.trajectory_id for it in q.items("ann")] == ["flip_up", "flip_down", "own_threshold"]
        with pytest.raises(ValueError, match="stands alone"):
            LabelQueue.build(store, "x", rows, ["ann"], order=["models", "failures"], model_gaps=gaps)
    finally:
        store.close()


def test_one_model_only_says_why(tmp_path):
    lib = tmp_path / "lib"
    write_native(lib / "a", id="a", instruction="do a", success=None)
    with Catalog.for_root(lib) as cat:
        cat.scan(lib)
        cat.set_score(str(lib / "a"), score(0.3, 0.5, OLD))
        with pytest.raises(ValueError, match="1 model"):
            model_gaps(cat)


def test_cli_builds_the_models_queue(library, capsys):
    lib, _cat, _key = library
    assert cli(["queue", "build", "dis", "--annotators", "ann", "--order", "models", "--models", f"{NEW},{OLD}",
                "--root", str(lib), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == 3
    store = open_store(root=lib)
    try:
        assert [it.trajectory_id for it in LabelQueue(store, "dis").items("ann")] == \
            ["flip_up", "flip_down", "own_threshold"]
    finally:
        store.close()
    # a bad pair: an error naming the catalog and the option (the CLI prints it on one line)
    with pytest.raises(AnnotationError, match=r"catalog\.sqlite: field '--models': name two different models"):
        cli(["queue", "build", "dis", "--annotators", "ann", "--order", "models", "--models", OLD, "--root", str(lib)])
