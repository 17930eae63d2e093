"""The "teach the model" queue: uncertainty plus out-of-distribution first, near-identical runs kept apart,
labelled runs left out; built from a real catalog's stored scores, from the CLI as the other queues are."""

from __future__ import annotations

import json
from itertools import groupby

import pytest

from gui_app.core.store.record import Annotation
from gui_app.core.annotation.queue import LabelQueue, order_rows, teach_order, teach_similarity, teach_value
from gui_app.core.store.backends import open_store
from tests.annotation.test_cli import cli


def row(rid, p, task=None, ood=None, thr=0.5, instruction=None):
    return {"id": rid, "key": f"/lib/{rid}", "p_success": p, "threshold": thr, "task": task or rid,
            "instruction": instruction or f"do {rid}", "ood": ood}


def test_value_is_uncertainty_plus_novelty_on_the_models_own_threshold():
    assert teach_value(row("a", 0.6, thr=0.6)) == pytest.approx(1.0)  # at the threshold: most unsure
    assert teach_value(row("a", 1.0, thr=0.6)) == pytest.approx(0.0)  # certain success
    assert teach_value(row("a", 0.0, thr=0.6)) == pytest.approx(0.0)  # certain failure
    assert teach_value(row("a", 0.3, thr=0.6)) == pytest.approx(0.5)  # halfway to certain, on its side
    assert teach_value(row("a", 1.0, thr=0.6, ood=1.0)) == pytest.approx(0.5)  # novelty counts alone
    assert teach_value(row("a", 1.0, thr=0.6, ood=9.0)) == pytest.approx(1.0)  # capped
    assert teach_value(row("a", None)) is None and teach_value(row("a", 0.5, thr=None)) is None
    by_key = {"a": 0.0}
    assert teach_value({"id": "a", "key": "/lib/a", "p_success": 1.0, "threshold": 0.6}, {"/lib/a": 2.0}) == 1.0
    assert teach_value({"id": "a", "key": "a", "p_success": 1.0, "threshold": 0.6}, by_key) == 0.0


def test_uncertain_and_unfamiliar_runs_come_first_unscored_last():
    rows = [row("sure", 0.95), row("unsure", 0.5), row("novel_sure", 0.98, ood=2.5), row("unscored", None),
            row("half", 0.25, ood=0.4)]
    # values: novel_sure 0.04 + 1.0, unsure 1.0, half 0.5 + 0.2, sure 0.1; unscored last
    assert [r["id"] for r in teach_order(rows)] == ["novel_sure", "unsure", "half", "sure", "unscored"]
    assert [r["id"] for r in order_rows(rows, ["teach"])][0] == "novel_sure"
    with pytest.raises(ValueError, match="stands alone"):
        order_rows(rows, ["teach", "failures"])


def test_near_identical_runs_are_not_queued_in_a_row():
    """Twenty copies of one unsure run (same task, instruction and score) and five other runs somewhat more sure:
    the copies come first by value, but never two in a row while anything else is left."""
    twins = [row(f"twin{i:02d}", 0.5 + i * 0.001, task="login", instruction="log in as bob") for i in range(20)]
    others = [row(f"other{i}", 0.3, task=f"task{i}") for i in range(5)]
    ordered = teach_order(twins + others)
    names = [r["id"][:4] for r in ordered]
    assert names[0] == "twin"
    last_other = max(i for i, n in enumerate(names) if n == "othe")
    runs = [len(list(g)) for k, g in groupby(names[:last_other + 1]) if k == "twin"]
    assert max(runs) == 1, names
    assert sorted(r["id"] for r in ordered) == sorted(r["id"] for r in twins + others)  # nothing dropped
    assert teach_similarity(twins[0], twins[1]) > 0.9 and teach_similarity(twins[0], others[0]) == 0.0
    # without the diversity term the twins would all come first
    plain = [r["id"][:4] for r in teach_order(twins + others, diversity=0.0)]
    assert plain[:20] == ["twin"] * 20


def test_the_order_is_linear_enough_for_a_large_library():
    import time

    rows = [row(f"r{i:05d}", (i * 7919 % 1000) / 1000, task=f"t{i % 40}") for i in range(10_000)]
    t0 = time.perf_counter()
    ordered = teach_order(rows)
    assert len(ordered) == 10_000
    assert time.perf_counter() - t0 < 30  # a bounded pool of candidates per pick (0.75 s here), not a scan of all


def test_teach_queue_from_a_real_catalog_and_store_via_the_cli(tmp_path, capsys):
    """Scores (p, threshold, ood) stored in a real catalog; one run already labelled; the CLI builds the queue."""
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.scoring.score import Score, verdict
    from tests.gui.library_fixtures import write_native

    lib = tmp_path / "lib"
    scores = {"sure": (0.97, 0.0), "unsure": (0.55, 0.1), "novel": (0.9, 3.0), "labelled": (0.56, 0.0),
              "unscored": (None, None)}
    for rid in scores:
        write_native(lib / rid, id=rid, instruction=f"do {rid}", task=rid, success=None)
    with Catalog.for_root(lib) as cat:
        cat.scan(lib)
        for rid, (p, ood) in scores.items():
            if p is not None:
                cat.set_score(str(lib / rid), Score(p_success=p, threshold=0.56, success=verdict(p, 0.56),
                                                    model="m", ood=ood))
        assert cat.ood_scores() == {str(lib / r): o for r, (p, o) in scores.items() if p is not None}
    store = open_store(root=lib)
    store.save(Annotation(trajectory_id="labelled", annotator="ann", verdict="failure"))
    store.close()
    assert cli(["queue", "build", "teach", "--annotators", "ann", "--order", "teach", "--root", str(lib),
                "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == 4  # the labelled run teaches already
    store = open_store(root=lib)
    items = LabelQueue(store, "teach").items("ann")
    store.close()
    # novel: 0.23 + 1.0; unsure: 0.98 + 0.05; sure: 0.07; unscored last
    assert [it.trajectory_id for it in items] == ["novel", "unsure", "sure", "unscored"]
