"""The annotation store contract, run on both backends (a SQLite file, and a database on a real PostgreSQL server
started by the fixtures): per-field writes, audit, durability, 2 and 4 processes at once, claims across processes;
then what only one backend has (SQLite's file, PostgreSQL's server going away and coming back)."""

from __future__ import annotations

import multiprocessing as mp
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from gui_app.core.store.record import Annotation, AnnotationError, Cascade
from gui_app.core.store.interface import AnnotationStore, StoreError, default_path, migrations
from gui_app.core.store.backends import open_store


@pytest.fixture
def store(store_location):
    s = open_store(store_location)
    yield s
    s.close()


def test_is_the_narrow_interface_and_default_location(tmp_path):
    s = open_store(root=tmp_path)
    assert isinstance(s, AnnotationStore)
    assert s.path == default_path(tmp_path) == tmp_path / ".rollscope" / "labels.sqlite"
    assert s.schema_version == len(migrations()) == 4
    mode = sqlite3.connect(s.path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"
    s.close()


def test_field_writes_are_audited_with_old_and_new(store):
    assert store.set_field("t1", "alice", "verdict", "failure")
    assert not store.set_field("t1", "alice", "verdict", "failure")  # no change, no audit row
    store.set_field("t1", "alice", "verdict", "unsure", actor="bob")
    store.set_field("t1", "alice", "root_cause_step", 3)
    assert store.toggle_label("t1", "alice", "computer_use:input.typo") is True
    assert store.toggle_label("t1", "alice", "computer_use:input.typo") is False
    store.set_step_comment("t1", "alice", 2, "hesitates here")
    store.set_cascade("t1", "alice", 4, "wrong page opened")
    rec = store.get("t1", "alice")
    assert rec.verdict == "unsure" and rec.root_cause_step == 3 and rec.labels == []
    assert rec.step_comments == {2: "hesitates here"} and rec.cascading == [Cascade(4, "wrong page opened")]
    assert rec.version == 7
    log = [(e.actor, e.field, e.old, e.new) for e in store.audit("t1")]
    assert log == [
        ("alice", "verdict", None, "failure"),
        ("bob", "verdict", "failure", "unsure"),
        ("alice", "root_cause_step", None, 3),
        ("alice", "labels[computer_use:input.typo]", False, True),
        ("alice", "labels[computer_use:input.typo]", True, False),
        ("alice", "step_comments[2]", None, "hesitates here"),
        ("alice", "cascading[4]", None, "wrong page opened"),
    ]


def test_bad_values_raise_domain_errors_and_change_nothing(store):
    store.set_field("t1", "alice", "verdict", "failure")
    with pytest.raises(AnnotationError, match="verdict.*one of success, failure, unsure"):
        store.set_field("t1", "alice", "verdict", "maybe")
    with pytest.raises(AnnotationError, match="confidence.*\\[0, 1\\]"):
        store.set_field("t1", "alice", "confidence", 1.5)
    with pytest.raises(AnnotationError, match="unknown field"):
        store.set_field("t1", "alice", "colour", "red")
    with pytest.raises(AnnotationError, match="root_cause_step.*expected int"):
        store.set_field("t1", "alice", "root_cause_step", "three")
    bad = Annotation("t1", "alice", verdict="success", confidence=7.0)
    with pytest.raises(AnnotationError):
        store.save(bad)
    rec = store.get("t1", "alice")
    assert rec.verdict == "failure" and rec.confidence is None  # the failed save rolled back as a whole
    assert len(store.audit()) == 1


def test_save_writes_only_differences(store):
    a = Annotation("t2", "bob", verdict="failure", labels=["m:1.1", "m:3.1"], root_cause_step=2,
                   root_cause_module="planning", evidence="clicked Cancel", cascading=[Cascade(3, "form lost")],
                   step_comments={1: "ok"}, confidence=0.8, time_spent=12.5, mistake_agent="Planner")
    assert store.save(a) == 11
    got = store.get("t2", "bob")
    assert got.content() == a.content()
    a.labels = ["m:1.1"]
    a.step_comments = {}
    assert store.save(a) == 2
    assert store.get("t2", "bob").labels == ["m:1.1"]
    assert store.delete("t2", "bob") and store.get("t2", "bob") is None
    assert store.audit("t2")[-1].field == "record"


def test_review_adjudication_override_and_final_labels(store):
    store.save(Annotation("t", "a", verdict="failure", labels=["x:1"], root_cause_step=2))
    store.save(Annotation("t", "b", verdict="failure", labels=["x:1", "x:2"], root_cause_step=3))
    store.save(Annotation("t", "c", verdict="success", labels=["x:2"], root_cause_step=2))
    store.save(Annotation("u", "a", verdict="success"))
    store.save(Annotation("u", "b", verdict="failure"))
    rv = store.review("t")
    assert set(rv.annotations) == {"a", "b", "c"} and rv.final is None
    assert rv.differing == ["verdict", "labels", "root_cause_step"]
    # majority: verdict failure (2 of 3), step 2 (2 of 3), labels chosen by more than half (x:1 2/3, x:2 2/3)
    fl = store.final_labels()
    assert fl["t"] == {"verdict": "failure", "root_cause_step": 2, "labels": ["x:1", "x:2"], "source": "majority",
                       "n_annotators": 3, "harm_verdict": None, "harm_category": None, "harm_types": [],
                       "first_harmful_step": None}
    assert fl["u"]["verdict"] is None  # a 1-1 tie has no majority
    final = store.adjudicate("t", "dana", "b")
    assert final.role == "adjudicator" and final.root_cause_step == 3
    assert store.final_labels()["t"]["source"] == "adjudicated"
    assert store.final_labels()["t"]["root_cause_step"] == 3
    assert store.annotators() == ["a", "b", "c"]  # the adjudicator is not an annotator
    ov = store.override_score("t", "dana", False, "model missed the wrong date", previous_success=True,
                              previous_score=0.91)
    assert (ov.actor, ov.success, ov.previous_success, ov.reason) == ("dana", False, True,
                                                                     "model missed the wrong date")
    assert store.review("t").overrides == [ov]
    with pytest.raises(AnnotationError, match="reason"):
        store.override_score("t", "dana", True, "  ")


def test_rekey_moves_everything_a_trajectory_has_and_refuses_a_clash(store):
    """``rekey`` (library keys: identity.migrate_store, ``labels rekey``) moves records of both roles with their
    labels, comments and cascades, the audit trail, overrides, queue items (an open queue's unclaimed ones too) and
    assignments, with the move on each record's trail; a target that already has a record of the same annotator,
    or is already in the same queue, is refused with nothing moved."""
    from gui_app.core.annotation.queue import LabelQueue

    store.save(Annotation("old", "a", verdict="failure", labels=["x:1"], root_cause_step=1,
                          cascading=[Cascade(2, "wrong tab")], step_comments={1: "typo"}))
    store.save(Annotation("old", "b", verdict="success"))
    store.adjudicate("old", "dana", "a")
    store.override_score("old", "dana", False, "the file was not saved")
    LabelQueue.build(store, "fixed", [{"id": "old", "key": "/lib/old"}], ["a"], k=1, order=["id"])
    LabelQueue.build(store, "open", [{"id": "old", "key": "/lib/old"}, {"id": "u", "key": "/lib/u"}], [], k=2,
                     order=["id"])
    store.save_queue("waiting", [], 1, {"open": True}, items=[(0, "only-queued", None)])  # nobody claimed it yet
    assert store.referenced_ids() == ["old", "only-queued", "u"]
    before = {(r.annotator, r.role): r for r in store.annotations("old")}
    n_audit = len(store.audit("old"))

    assert store.rekey({"old": "lib/run/old", "only-queued": "lib/q", "same": "same"}, actor="test") == (
        {"old": "lib/run/old", "only-queued": "lib/q"}, [])
    assert store.annotations("old") == [] and store.audit("old") == [] and store.overrides("old") == []
    after = {(r.annotator, r.role): r for r in store.annotations("lib/run/old")}
    assert set(after) == set(before) == {("a", "annotator"), ("b", "annotator"), ("dana", "adjudicator")}
    for who, rec in after.items():
        old = before[who]
        assert (rec.verdict, rec.labels, rec.cascading, rec.step_comments, rec.root_cause_step) == (
            old.verdict, old.labels, old.cascading, old.step_comments, old.root_cause_step)
        assert rec.version == old.version + 1  # the move is a change of the record
    trail = store.audit("lib/run/old")
    assert len(trail) == n_audit + 3
    assert [(e.actor, e.field, e.old, e.new) for e in trail[-3:]] == \
        [("test", "trajectory_id", "old", "lib/run/old")] * 3
    assert [o.reason for o in store.overrides("lib/run/old")] == ["the file was not saved"]
    assert store.final_labels()["lib/run/old"]["source"] == "adjudicated"
    assert store.queue_assignments("fixed") == [(0, "lib/run/old", "/lib/old", "a")]
    assert [t for _p, t, _k in store.queue_items("open")] == ["lib/run/old", "u"]
    assert store.queue_items("waiting") == [(0, "lib/q", None)]
    assert store.claim("open", "c")[1] == "lib/run/old"  # the moved item keeps its place and its free slots
    assert store.referenced_ids() == ["lib/q", "lib/run/old", "u"]
    assert store.rekey({"old": "lib/run/old"}, actor="test")[1] == []  # nothing left under the old id: a no-op
    assert len(store.audit("lib/run/old")) == n_audit + 3

    # A clash: the target already has a record of the same annotator; or is already an item of the same queue.
    store.save(Annotation("dup", "a", verdict="unsure"))
    store.save(Annotation("lib/run/dup", "a", verdict="failure"))
    store.save(Annotation("u2", "z", verdict="unsure"))
    LabelQueue.build(store, "both", [{"id": "u2", "key": None}, {"id": "u3", "key": None}], [], k=1, order=["id"])
    assert store.rekey({"dup": "lib/run/dup", "u2": "u3"}, actor="test") == ({}, ["dup", "u2"])
    assert store.get("dup", "a").verdict == "unsure" and store.get("lib/run/dup", "a").verdict == "failure"
    assert store.get("u2", "z") is not None and store.get("u3", "z") is None
    assert [t for _p, t, _k in store.queue_items("both")] == ["u2", "u3"]


def _rekeyer(path: str, barrier, out) -> None:
    s = open_store(path)
    barrier.wait(timeout=60)
    out.put(s.rekey({f"id{i}": f"lib/k{i}" for i in range(20)}, actor="machine"))
    s.close()


def test_machines_moving_the_same_labels_at_once_move_each_once(store_location):
    """Two machines open the library at the same moment and both run the identity migration on one store: every
    record moves once, none is lost or doubled, and the move is on each trail once."""
    s = open_store(store_location)
    for i in range(20):
        for who in ("a", "b"):
            s.save(Annotation(f"id{i}", who, verdict="failure", labels=[f"x:{i}"]))
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(2), ctx.Queue()
    procs = [ctx.Process(target=_rekeyer, args=(store_location, barrier, out)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    assert all(conflicts == [] for _moved, conflicts in results)
    assert s.trajectory_ids() == sorted(f"lib/k{i}" for i in range(20))
    assert len(s.annotations()) == 40 and all(a.labels == [f"x:{a.trajectory_id[5:]}"] for a in s.annotations())
    moves = [e for e in s.audit() if e.field == "trajectory_id"]
    assert len(moves) == 40 and len({(e.trajectory_id, e.annotator) for e in moves}) == 40
    s.close()


def test_every_change_survives_a_killed_process(tmp_path, store_location):
    path = store_location
    code = textwrap.dedent(f"""
        import os
        from gui_app.core.store.backends import open_store
        s = open_store({path!r})
        s.set_field("t", "a", "verdict", "failure")
        s.toggle_label("t", "a", "x:1")
        s.set_field("t", "a", "notes", "last words")
        os._exit(9)  # no close, no clean shutdown
    """)
    rc = subprocess.run([sys.executable, "-c", code], cwd=str(tmp_path.parent), check=False,
                        env={"PYTHONPATH": str(__import__("pathlib").Path(__file__).resolve().parents[2])}).returncode
    assert rc == 9
    s = open_store(path)
    rec = s.get("t", "a")
    assert (rec.verdict, rec.labels, rec.notes) == ("failure", ["x:1"], "last words")
    s.close()


def _writer(path: str, who: str, n: int, barrier, done) -> None:
    s = open_store(path)
    for i in range(n):
        if i % 10 == 0:  # the writers start each round of 10 together, so they really race on a loaded machine
            barrier.wait(timeout=60)
        s.set_label("shared", "alice", f"x:{who}{i}", True, actor=who)
        s.set_step_comment("shared", "alice", 1000 * WHO.index(who) + i, f"{who}{i}", actor=who)
        s.set_field("shared", "alice", "notes", f"{who}{i}", actor=who)  # same field: last writer wins, no loss
        done.put((who, i))
    s.close()


WHO = "pqrs"


def run_writers(path: str, n_procs: int, n: int, during=None) -> None:
    """``n_procs`` real processes run :func:`_writer` on one record; ``during(progress)`` runs meanwhile (it is given
    a function that waits until the writers have made that many rounds)."""
    ctx = mp.get_context("spawn")
    barrier, done = ctx.Barrier(n_procs), ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(path, who, n, barrier, done)) for who in WHO[:n_procs]]
    for p in procs:
        p.start()
    seen = 0

    def wait_for(rounds: int) -> None:
        nonlocal seen
        while seen < rounds:
            done.get(timeout=120)
            seen += 1

    if during is not None:
        during(wait_for)
    wait_for(n_procs * n)
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0


def check_no_update_lost(path: str, n_procs: int, n: int) -> None:
    s = open_store(path)
    rec = s.get("shared", "alice")
    whos = WHO[:n_procs]
    assert set(rec.labels) == {f"x:{w}{i}" for w in whos for i in range(n)}
    assert rec.step_comments == {1000 * WHO.index(w) + i: f"{w}{i}" for w in whos for i in range(n)}
    assert rec.notes in {f"{w}{n - 1}" for w in whos}
    # 3 writes per iteration per process, each counted once: no write was lost or applied twice
    assert rec.version == n_procs * 3 * n
    log = s.audit("shared")
    assert len(log) == n_procs * 3 * n
    # the writers really ran at the same time: all write in every round, so the log switches writer each round
    switches = sum(x.actor != y.actor for x, y in zip(log, log[1:], strict=False))
    assert switches >= n // 10
    s.close()


@pytest.mark.parametrize("n_procs,n", [(2, 150), (4, 60)])
def test_processes_writing_at_once_never_lose_an_update(store_location, n_procs, n):
    """Two, then four real processes hammer the same record; every update must be there at the end."""
    open_store(store_location).close()
    run_writers(store_location, n_procs, n)
    check_no_update_lost(store_location, n_procs, n)


def _claimer(path: str, who: str, queue: str, barrier, out) -> None:
    s = open_store(path)
    barrier.wait(timeout=60)
    took = []
    while (item := s.claim(queue, who)) is not None:
        took.append(item[1])
        s.set_field(item[1], who, "verdict", "failure")  # labelled: the next claim takes a new item
    s.close()
    out.put((who, took))


def test_k_annotators_per_item_claimed_across_processes_without_duplicates(store_location):
    """Four processes (four annotators on their machines) work through one open queue with k=2 at once: every
    item ends with exactly two distinct annotators, and no slot was taken twice."""
    from gui_app.core.annotation.queue import LabelQueue

    s = open_store(store_location)
    rows = [{"id": f"t{i:02d}", "key": f"/lib/t{i:02d}"} for i in range(24)]
    q = LabelQueue.build(s, "team", rows, [], k=2, order=["id"])
    assert q.items() == [] and q.progress()["items"] == 24
    ctx = mp.get_context("spawn")
    barrier, out = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(store_location, who, "team", barrier, out)) for who in "abcd"]
    for p in procs:
        p.start()
    took = dict(out.get(timeout=120) for _ in procs)
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    per_item: dict[str, list[str]] = {}
    for who, items in took.items():
        assert len(items) == len(set(items)), who  # nobody got an item twice
        for t in items:
            per_item.setdefault(t, []).append(who)
    assert sorted(per_item) == [r["id"] for r in rows]
    assert all(len(w) == 2 for w in per_item.values()), per_item
    assigned = s.queue_assignments("team")
    assert len(assigned) == 48 and len({(t, a) for _p, t, _k, a in assigned}) == 48
    prog = q.progress()
    assert (prog["items_done"], prog["done"], prog["assignments"]) == (24, 48, 48)
    assert s.claim("team", "e") is None  # every slot is taken
    s.close()


def test_newer_schema_is_refused_and_bad_file_is_a_store_error(tmp_path):
    p = tmp_path / "labels.sqlite"
    open_store(p).close()
    con = sqlite3.connect(p)
    con.execute("PRAGMA user_version = 99")
    con.close()
    with pytest.raises(StoreError, match="newer"):
        open_store(p)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="junk.sqlite"):
        open_store(junk)


def test_migrations_upgrade_an_old_store(tmp_path):
    """A store at version 1 (before queues) is upgraded in place, keeping its labels."""
    p = tmp_path / "labels.sqlite"
    con = sqlite3.connect(p)
    from gui_app.core.db import statements
    for stmt in statements(migrations()[0].sql):
        con.execute(stmt)
    con.execute("INSERT INTO annotations (trajectory_id, annotator, role, verdict, created_at, updated_at) "
                "VALUES ('t', 'a', 'annotator', 'success', 0, 0)")
    con.execute("PRAGMA user_version = 1")
    con.commit()
    con.close()
    s = open_store(p)
    assert s.schema_version == len(migrations()) and s.get("t", "a").verdict == "success"
    s.save_queue("q", [(0, "t", None, "a")], k=1)
    assert s.queue_assignments("q") == [(0, "t", None, "a")]
    s.close()


def test_paged_reads_match_the_full_read(tmp_path, store_location):
    """Pages cut between records of one trajectory; each page carries exactly its records' collections."""
    s = open_store(tmp_path / "odd dir #1" / "labels.sqlite" if store_location.endswith(".sqlite") else store_location)
    for i in range(7):
        for who in ("a", "b"):
            s.save(Annotation(f"t{i}", who, verdict="failure", labels=[f"x:{i}", f"x:{who}"],
                              cascading=[Cascade(i, who)], step_comments={i: f"{who}{i}"}))
    pages = list(s.iter_annotations(batch=3))
    assert [len(p) for p in pages] == [3, 3, 3, 3, 2]
    assert [a for p in pages for a in p] == s.annotations()
    s.close()


def test_queues_of_an_old_store_get_their_items_and_slots(tmp_path):
    """Migration 3 gives the queues a v2 store already had their item rows and one slot per assignment."""
    p = tmp_path / "labels.sqlite"
    con = sqlite3.connect(p)
    from gui_app.core.db import statements
    for m in migrations()[:2]:
        for stmt in statements(m.sql):
            con.execute(stmt)
    con.execute("INSERT INTO queues VALUES ('q', 0, 2, '{}')")
    con.executemany("INSERT INTO queue_assignments VALUES ('q', ?, ?, ?, ?)",
                    [(0, "t1", "/l/t1", "bob"), (0, "t1", "/l/t1", "ann"), (1, "t2", None, "ann")])
    con.execute("PRAGMA user_version = 2")
    con.commit()
    con.close()
    s = open_store(p)
    assert s.queue_items("q") == [(0, "t1", "/l/t1"), (1, "t2", None)]
    slots = sqlite3.connect(p).execute("SELECT trajectory_id, annotator, slot FROM queue_assignments "
                                       "ORDER BY 1, 2").fetchall()
    assert slots == [("t1", "ann", 0), ("t1", "bob", 1), ("t2", "ann", 0)]
    assert s.claim("q", "ann") == (0, "t1", "/l/t1", "ann")  # assigned up front: the first without a verdict
    assert s.claim("q", "carl") is None  # not an open queue: nothing to take
    s.close()


def test_the_records_of_a_set_of_trajectories_are_one_read(store, monkeypatch):
    """What the library shows of a page: the records of its rows' ids, with their collections, in one snapshot
    (several IN lists when the ids are many); the same records as reading each id alone."""
    for i in range(7):
        for who in ("a", "b"):
            store.save(Annotation(f"t{i}", who, verdict="failure", labels=[f"x:{i}"], cascading=[Cascade(i, who)],
                                  step_comments={i: f"{who}{i}"}))
    wanted = {"t1", "t4", "t6", "nowhere"}
    expected = [a for tid in sorted(wanted) for a in store.annotations(tid)]
    assert store.annotations_of(wanted) == expected and len(expected) == 6
    monkeypatch.setattr(type(store), "_IDS_PER_QUERY", 2)
    assert store.annotations_of(wanted) == expected
    assert store.annotations_of([]) == []
