"""Labelling queues: ordering, k distinct annotators per item, balanced load, progress."""

from __future__ import annotations

from collections import Counter

import pytest

from gui_app.core.library.catalog import CatalogRow
from gui_app.core.annotation.queue import LabelQueue, assign, order_rows
from gui_app.core.store.backends import open_store

# Scored by a model that decides at 0.5 (a row states its score's threshold; the queue never assumes one).
ROWS = [
    {"id": "ok_sure", "success": True, "p_success": 0.95, "threshold": 0.5},
    {"id": "fail_sure", "success": False, "p_success": 0.05, "threshold": 0.5},
    {"id": "fail_unsure", "success": False, "p_success": 0.45, "threshold": 0.5},
    {"id": "ok_disagree", "success": True, "p_success": 0.2, "threshold": 0.5},
    {"id": "unknown", "success": None, "p_success": None},
    {"id": "ok_unsure", "success": True, "p_success": 0.55, "threshold": 0.5},
]


def ids(rows):
    return [r["id"] for r in rows]


def test_orderings():
    assert ids(order_rows(ROWS, ["failures"])) == ["fail_sure", "fail_unsure", "unknown", "ok_disagree", "ok_sure",
                                                   "ok_unsure"]
    # |p - 0.5|: 0.05, 0.05, 0.3, 0.45, 0.45, unscored last; ties by id
    assert ids(order_rows(ROWS, ["uncertain"])) == ["fail_unsure", "ok_unsure", "ok_disagree", "fail_sure",
                                                    "ok_sure", "unknown"]
    assert ids(order_rows(ROWS, ["disagreement"]))[0] == "ok_disagree"
    assert ids(order_rows(ROWS, ["failures", "uncertain"]))[:2] == ["fail_unsure", "fail_sure"]
    with pytest.raises(ValueError, match="unknown ordering"):
        order_rows(ROWS, ["loudest"])


def test_catalog_rows_are_accepted():
    fields = {f: None for f in CatalogRow._fields}
    rows = [CatalogRow(**{**fields, "key": f"/d/{i}", "id": f"t{i}", "path": f"/d/{i}", "instruction": "",
                          "success": i % 2 == 0, "p_success": 0.5}) for i in range(4)]
    assert [r.id for r in order_rows(rows, ["failures"])] == ["t1", "t3", "t0", "t2"]


def test_queues_judge_by_the_models_own_threshold(tmp_path):
    """Bug fix: the queues compared p_success with 0.5, but the shipped model decides at 0.573. A run it scores
    0.55 is a predicted *failure*: on an environment failure the model agrees (it was queued as a disagreement),
    on an environment success it disagrees (it was not). And 0.57, not 0.5, is the score it is least sure of."""
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.scoring.score import Score, verdict
    from tests.gui.library_fixtures import write_native

    root = tmp_path / "lib"
    outcomes = {"fail_055": False, "ok_055": True, "ok_050": True, "ok_057": True, "fail_020": False}
    for tid, success in outcomes.items():
        write_native(root / tid, id=tid, instruction=tid, success=success)
    with Catalog.for_root(root) as cat:
        cat.scan(root)
        for tid, p in {"fail_055": 0.55, "ok_055": 0.55, "ok_050": 0.50, "ok_057": 0.57, "fail_020": 0.2}.items():
            cat.set_score(str(root / tid), Score(p_success=p, threshold=0.573, success=verdict(p, 0.573), model="m"))
        cat.set_score(str(root / "ok_050"), Score(p_success=0.5, model="legacy"))  # threshold unknown: no verdict
        rows = cat.query()
    assert {r.id: r.model_success for r in rows} == {"fail_055": False, "ok_055": False, "ok_050": None,
                                                     "ok_057": False, "fail_020": False}
    disagree = order_rows(rows, ["disagreement"])
    assert [r.id for r in disagree[:2]] == ["ok_055", "ok_057"]  # predicted failures of environment successes
    assert order_rows(rows, ["uncertain"])[0].id == "ok_057"  # |0.57 - 0.573| is the smallest margin
    assert order_rows(rows, ["uncertain"])[-1].id == "ok_050"  # a score of unknown threshold sorts with unscored


def test_assign_k_distinct_annotators_balanced():
    triples = assign([f"t{i}" for i in range(10)], ["a", "b", "c"], k=2)
    per_item: dict[str, list[str]] = {}
    for _, t, a in triples:
        per_item.setdefault(t, []).append(a)
    assert all(len(v) == 2 and len(set(v)) == 2 for v in per_item.values())  # k distinct per item
    load = Counter(a for _, _, a in triples)
    assert sum(load.values()) == 20 and max(load.values()) - min(load.values()) <= 1
    for a in "abc":  # nobody gets an item twice
        mine = [t for _, t, who in triples if who == a]
        assert len(mine) == len(set(mine))
    with pytest.raises(ValueError, match="k=4"):
        assign(["t"], ["a", "b"], k=4)


def test_queue_persists_and_counts_progress(tmp_path):
    s = open_store(tmp_path / "labels.sqlite")
    rows = [{**r, "key": f"/lib/{r['id']}"} for r in ROWS]
    q = LabelQueue.build(s, "batch1", rows, ["ann", "bob"], k=2)
    # default order: failures, then model/env disagreement, then model uncertainty
    assert [it.trajectory_id for it in q.items("ann")] == ["fail_unsure", "fail_sure", "unknown", "ok_disagree",
                                                           "ok_unsure", "ok_sure"]
    assert q.items("ann")[0].key == "/lib/fail_unsure"
    assert q.next_for("ann").trajectory_id == "fail_unsure"
    s.set_field("fail_unsure", "ann", "verdict", "failure")
    s.set_field("fail_sure", "ann", "notes", "draft")  # notes alone do not make an item done
    assert q.next_for("ann").trajectory_id == "fail_sure"
    assert q.next_for("ann", after="fail_sure").trajectory_id == "unknown"
    assert q.neighbour("ann", "fail_sure", -1).trajectory_id == "fail_unsure"
    assert q.neighbour("ann", "fail_unsure", -1).trajectory_id == "fail_unsure"
    s.set_field("fail_unsure", "bob", "verdict", "failure")
    p = q.progress()
    assert p["items"] == 6 and p["assignments"] == 12 and p["done"] == 2 and p["items_done"] == 1
    assert p["by_annotator"] == {"ann": {"assigned": 6, "done": 1}, "bob": {"assigned": 6, "done": 1}}
    assert [x["name"] for x in s.queues()] == ["batch1"]
    # rebuilding replaces the queue, never duplicates it
    LabelQueue.build(s, "batch1", rows[:2], ["ann"], k=1)
    assert len(LabelQueue(s, "batch1").items()) == 2
    s.close()
