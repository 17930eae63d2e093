"""The safety verdict beside success (issue 27, the human side): the bundled harm taxonomy, the harm fields of a
record in both stores (audited, validated, migrated from an old store, moved and copied), review and majority,
agreement, the "possible harm" queue, and every export and import."""

from __future__ import annotations

import json
import sqlite3

import polars as pl
import psycopg
import pytest

from gui_app.core import db
from gui_app.core.annotation import agreement as ag
from gui_app.core.annotation import taxonomy
from gui_app.core.annotation.export import ExportFilter, export, import_labels
from gui_app.core.annotation.queue import LabelQueue, harm_order, order_rows, possible_harm
from gui_app.core.store.backends import copy_store, open_store
from gui_app.core.store.interface import migrations
from gui_app.core.store.record import Annotation, AnnotationError

EXPOSURE, CODE, EXFIL = "harm:data_exposure", "harm:untrusted_code", "harm:data_exfiltration"


@pytest.fixture
def store(store_location):
    s = open_store(store_location)
    yield s
    s.close()


def test_the_harm_taxonomy_has_os_harms_three_categories_and_the_seven_types():
    tax = taxonomy.harm()
    assert tax.name == "harm" and "OS-Harm" in tax.source
    cats = taxonomy.harm_labels(tax, taxonomy.HARM_CATEGORIES)
    types = taxonomy.harm_labels(tax, taxonomy.HARM_TYPES)
    assert [c.name for c in cats] == ["Deliberate user misuse", "Prompt injection", "Model misbehaviour"]
    assert [c.code for c in cats] == ["user_misuse", "prompt_injection", "model_misbehaviour"]
    assert [t.name for t in types] == [
        "Credential or personal-data exposure", "Running untrusted code", "Data exfiltration",
        "Destructive file operations", "Disabling security settings", "Unwanted messages or purchases",
        "Following on-screen instructions the user never gave"]
    assert all(lab.description for lab in cats + types)
    assert tax.label_id("untrusted_code") == CODE and tax.get(CODE).name == "Running untrusted code"
    assert "harm" in taxonomy.bundled()  # shipped with the others (package data: resources/taxonomies/*)


def test_harm_fields_are_written_audited_and_checked(store):
    assert store.set_field("t", "ann", "harm_verdict", "Harmful")
    assert store.set_field("t", "ann", "first_harmful_step", 4)
    assert store.set_field("t", "ann", "harm_category", "prompt_injection")
    assert store.set_harm_type("t", "ann", CODE, True)
    assert not store.set_harm_type("t", "ann", CODE, True)  # already there: no change, no audit
    assert store.set_harm_type("t", "ann", EXFIL, True)
    assert store.set_harm_type("t", "ann", EXFIL, False)
    rec = store.get("t", "ann")
    assert (rec.harm_verdict, rec.first_harmful_step, rec.harm_category, rec.harm_types) == (
        "harmful", 4, "prompt_injection", [CODE])
    assert rec.verdict is None and rec.labels == [] and not rec.is_empty()
    assert rec.marks() == {4: "first_harm"}
    assert [(e.field, e.old, e.new) for e in store.audit("t")] == [
        ("harm_verdict", None, "harmful"), ("first_harmful_step", None, 4), ("harm_category", None, "prompt_injection"),
        (f"harm_types[{CODE}]", False, True), (f"harm_types[{EXFIL}]", False, True),
        (f"harm_types[{EXFIL}]", True, False)]
    with pytest.raises(AnnotationError, match="harm_verdict.*one of harmful, safe, unsure"):
        store.set_field("t", "ann", "harm_verdict", "dangerous")
    with pytest.raises(AnnotationError, match="first_harmful_step.*>= 0"):
        store.set_field("t", "ann", "first_harmful_step", -1)
    with pytest.raises(AnnotationError, match="a harm type is a non-empty string"):
        store.set_harm_type("t", "ann", " ", True)
    with pytest.raises(AnnotationError, match="harm_types"):
        store.save(Annotation("t", "ann", harm_types=[""]))
    assert store.get("t", "ann").harm_types == [CODE]  # the failed save changed nothing


def test_a_whole_record_saves_reads_and_deletes_with_its_harm_types(store):
    a = Annotation("t", "bob", verdict="failure", harm_verdict="harmful", harm_category="user_misuse",
                   harm_types=[EXPOSURE, EXFIL], first_harmful_step=2, labels=["computer_use:other"])
    assert store.save(a) == 7
    got = store.get("t", "bob")
    assert got.content() == {**a.content(), "harm_types": [EXFIL, EXPOSURE]}  # read back sorted
    a.harm_types = [EXPOSURE]
    a.harm_verdict = "unsure"
    assert store.save(a) == 2
    assert store.get("t", "bob").harm_types == [EXPOSURE]
    # a merge (an import) writes only the fields it brings: the harm types stay when it brings none
    assert store.merge([(Annotation("t", "bob", verdict="success"), {"verdict"})]) == 1
    assert store.get("t", "bob").harm_types == [EXPOSURE]
    assert store.merge([(Annotation("t", "bob", harm_types=[CODE]), {"harm_types"})]) == 2
    assert store.get("t", "bob").harm_types == [CODE]
    page = [r for p in store.iter_annotations(batch=1) for r in p]
    assert [r.harm_types for r in page] == [[CODE]]
    assert store.delete("t", "bob")
    store.set_field("t", "bob", "notes", "again")
    assert store.get("t", "bob").harm_types == []  # the record's harm types went with it


def _store_before_harm_sqlite(path):
    """A SQLite store as the code before the safety verdict left it (schema 3), with one labelled record."""
    conn = sqlite3.connect(path, isolation_level=None)
    assert db.migrate(conn, migrations()[:3]) == 3
    conn.execute("INSERT INTO annotations (trajectory_id, annotator, role, verdict, created_at, updated_at) "
                 "VALUES ('t', 'ann', 'annotator', 'failure', 0, 0)")
    conn.execute("INSERT INTO annotation_labels VALUES ('t', 'ann', 'annotator', 'computer_use:input.typo')")
    conn.close()


def test_an_old_sqlite_store_migrates_and_keeps_its_labels(tmp_path):
    path = tmp_path / "labels.sqlite"
    _store_before_harm_sqlite(path)
    s = open_store(path)
    try:
        assert s.schema_version == len(migrations()) == 4
        rec = s.get("t", "ann")
        assert (rec.verdict, rec.labels, rec.harm_verdict, rec.harm_types, rec.first_harmful_step) == (
            "failure", ["computer_use:input.typo"], None, [], None)
        s.set_field("t", "ann", "harm_verdict", "safe")
        s.set_harm_type("t", "ann", CODE, True)
        assert s.get("t", "ann").harm_types == [CODE]
    finally:
        s.close()
    names = sqlite3.connect(path).execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()
    assert names[-1] == (4, "harm")


def test_an_old_postgresql_store_migrates_and_keeps_its_labels(pg_url):
    with psycopg.connect(pg_url, autocommit=True) as conn:
        db.migrate_postgresql(conn, migrations("postgresql")[:3])
        conn.execute("INSERT INTO annotations (trajectory_id, annotator, role, verdict, created_at, updated_at) "
                     "VALUES ('t', 'ann', 'annotator', 'failure', 0, 0)")
    s = open_store(pg_url)
    try:
        assert s.schema_version == 4
        rec = s.get("t", "ann")
        assert (rec.verdict, rec.harm_verdict, rec.harm_types) == ("failure", None, [])
        s.set_field("t", "ann", "harm_verdict", "harmful")
        s.set_harm_type("t", "ann", EXPOSURE, True)
        assert s.get("t", "ann").harm_types == [EXPOSURE]
        with pytest.raises(AnnotationError):
            s.set_field("t", "ann", "harm_verdict", "bad")
    finally:
        s.close()


def test_rekey_and_a_copy_to_another_backend_carry_the_harm_types(tmp_path, pg_url):
    lite = open_store(tmp_path / "labels.sqlite")
    lite.save(Annotation("old", "ann", harm_verdict="harmful", harm_types=[CODE, EXPOSURE], first_harmful_step=1))
    moved, conflicts = lite.rekey({"old": "new"}, actor="test")
    assert moved == {"old": "new"} and conflicts == []
    assert lite.get("new", "ann").harm_types == [EXPOSURE, CODE] and lite.get("old", "ann") is None
    server = open_store(pg_url)
    report = copy_store(lite, server)
    assert report["counts"]["harm types"] == {"source": 2, "target": 2}
    got = server.get("new", "ann")
    assert (got.harm_verdict, got.harm_types, got.first_harmful_step) == ("harmful", [EXPOSURE, CODE], 1)
    lite.close()
    server.close()


def test_review_majority_and_adjudication_carry_the_safety_verdict(store):
    store.save(Annotation("t", "a", verdict="failure", harm_verdict="harmful", harm_types=[CODE, EXPOSURE],
                          first_harmful_step=3, harm_category="prompt_injection"))
    store.save(Annotation("t", "b", verdict="failure", harm_verdict="harmful", harm_types=[CODE],
                          first_harmful_step=3, harm_category="prompt_injection"))
    store.save(Annotation("t", "c", verdict="failure", harm_verdict="safe"))
    rv = store.review("t")
    assert rv.differing == ["harm_verdict", "harm_types", "harm_category", "first_harmful_step"]
    fl = store.final_labels()["t"]
    assert (fl["harm_verdict"], fl["harm_types"], fl["first_harmful_step"], fl["harm_category"], fl["source"]) == (
        "harmful", [CODE], 3, "prompt_injection", "majority")
    final = store.adjudicate("t", "dana", "a")
    assert final.harm_types == [EXPOSURE, CODE] and final.harm_verdict == "harmful"
    store.set_field("t", "dana", "harm_verdict", "unsure", role="adjudicator")
    fl = store.final_labels()["t"]
    assert (fl["source"], fl["harm_verdict"], fl["harm_types"]) == ("adjudicated", "unsure", [EXPOSURE, CODE])


def test_harm_verdict_agreement_by_hand():
    """Two annotators on four runs: harm verdicts agree on 3 of 4 (harmful, harmful, safe / safe vs harmful).
    p_o = 3/4; a: harmful 2, safe 2; b: harmful 3, safe 1; p_e = (2*3 + 2*1) / 16 = 1/2; kappa = (3/4 - 1/2) / (1/2)
    = 1/2. First harmful steps: 3 vs 3, 5 vs 6: exact 1/2, within one 1."""
    recs = [
        Annotation("t1", "a", harm_verdict="harmful", first_harmful_step=3, harm_types=[CODE]),
        Annotation("t1", "b", harm_verdict="harmful", first_harmful_step=3, harm_types=[CODE]),
        Annotation("t2", "a", harm_verdict="harmful", first_harmful_step=5, harm_types=[CODE, EXFIL]),
        Annotation("t2", "b", harm_verdict="harmful", first_harmful_step=6, harm_types=[CODE]),
        Annotation("t3", "a", harm_verdict="safe"),
        Annotation("t3", "b", harm_verdict="safe"),
        Annotation("t4", "a", harm_verdict="safe", verdict="success"),
        Annotation("t4", "b", harm_verdict="harmful", harm_types=[CODE]),
        Annotation("t5", "a", verdict="failure"),  # judged success only: no harm rating, no harm types
        Annotation("t5", "b", verdict="failure", harm_types=[EXFIL]),
    ]
    rep = ag.report(recs)
    hv = rep["harm_verdict"]
    assert hv["n_items"] == 4 and hv["percent_agreement"] == pytest.approx(3 / 4)
    assert hv["cohen"][0]["kappa"] == pytest.approx(0.5)
    assert rep["first_harmful_step"] == {"n_pairs": 2, "exact": 0.5, "within_one": 1.0}
    assert rep["harm_types"][CODE]["percent_agreement"] == pytest.approx(3 / 4)  # t1, t2, t3 agree; t4 does not
    assert rep["harm_types"][EXFIL]["n_items"] == 4  # t5 is not counted: neither record judged harm
    assert rep["verdict"]["n_items"] == 1  # the success verdict is reported as before
    text = ag.format_report(rep)
    assert "harm verdict: items=4" in text and "first harmful step: pairs=2 exact=0.500" in text
    assert f"harm type {CODE}" in text
    assert "harm verdict" not in ag.format_report(ag.report([Annotation("t", "a", verdict="success"),
                                                             Annotation("t", "b", verdict="failure")]))


ROWS = [{"id": f"t{i}", "key": f"/lib/t{i}", "ref": f"t{i}", "success": False} for i in range(5)]


def test_the_possible_harm_queue_holds_the_runs_people_flagged_harmful_first(store):
    store.save(Annotation("t3", "a", harm_verdict="unsure"))
    store.save(Annotation("t1", "a", harm_verdict="safe"))
    store.save(Annotation("t1", "b", harm_verdict="unsure"))  # one unsure among safes: still worth a look
    store.save(Annotation("t4", "a", harm_verdict="harmful"))
    store.save(Annotation("t2", "a", harm_verdict="harmful"))
    store.save(Annotation("t2", "dana", role="adjudicator", harm_verdict="safe"))  # adjudicated safe: cleared
    store.save(Annotation("t0", "a", verdict="failure"))  # no safety verdict at all
    flagged = possible_harm(store)
    assert flagged == {"t1": "unsure", "t3": "unsure", "t4": "harmful"}
    assert [r["id"] for r in harm_order(ROWS, flagged)] == ["t4", "t1", "t3"]
    with pytest.raises(ValueError, match="harm"):
        order_rows(ROWS, ["harm"])
    q = LabelQueue.build(store, "safety", ROWS, ["carol"], order=["harm"])
    assert [it.trajectory_id for it in q.items("carol")] == ["t4", "t1", "t3"]
    assert q.done_field() == "harm_verdict"
    store.set_field("t4", "carol", "verdict", "failure")  # a success verdict does not finish a harm item...
    assert q.next_for("carol").trajectory_id == "t4"
    store.set_field("t4", "carol", "harm_verdict", "harmful")  # ...a harm verdict does
    assert q.next_for("carol").trajectory_id == "t1"
    assert q.is_done(store.get("t4", "carol")) and not q.is_done(store.get("t0", "a"))
    assert q.progress()["done"] == 1
    with pytest.raises(ValueError, match="stands alone"):
        LabelQueue.build(store, "x", ROWS, ["carol"], order=["harm", "failures"])
    # an open queue on a shared store: a claim counts an item done by its harm verdict too
    LabelQueue.build(store, "team", ROWS, [], k=1, order=["harm"])
    team = LabelQueue(store, "team")
    first = team.claim("erin")
    assert first.trajectory_id == "t4"
    store.set_field("t4", "erin", "verdict", "success")
    assert team.claim("erin").trajectory_id == "t4"  # still theirs: no harm verdict yet
    store.set_field("t4", "erin", "harm_verdict", "safe")
    assert team.claim("erin").trajectory_id == "t1"


def test_other_queues_still_finish_on_the_success_verdict(store):
    q = LabelQueue.build(store, "plain", ROWS, ["carol"], order=["id"])
    assert q.done_field() == "verdict"
    store.set_field("t0", "carol", "harm_verdict", "harmful")
    assert q.next_for("carol").trajectory_id == "t0"
    store.set_field("t0", "carol", "verdict", "failure")
    assert q.next_for("carol").trajectory_id == "t1"


@pytest.fixture
def labelled(store):
    store.save(Annotation("t1", "ann", verdict="failure", labels=["computer_use:input.typo"], root_cause_step=1,
                          harm_verdict="harmful", harm_category="prompt_injection", harm_types=[CODE, EXPOSURE],
                          first_harmful_step=2, evidence="ran ./fix_tool"))
    store.save(Annotation("t2", "ann", verdict="success", harm_verdict="safe"))
    store.save(Annotation("t3", "ann", verdict="failure"))
    return store


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv"])
def test_tables_carry_the_harm_columns_and_import_back(labelled, tmp_path, fmt):
    out = tmp_path / f"labels.{fmt}"
    res = export(labelled, out, fmt)
    assert res.rows == 3
    df = pl.read_parquet(out) if fmt == "parquet" else (pl.read_ndjson(out) if fmt == "jsonl" else pl.read_csv(out))
    cols = df.columns
    assert cols[cols.index("version") + 1:cols.index("version") + 5] == [
        "harm_verdict", "harm_category", "harm_types", "first_harmful_step"]  # added after the older columns
    row = df.filter(pl.col("trajectory_id") == "t1").to_dicts()[0]
    harm_types = json.loads(row["harm_types"]) if fmt == "csv" else row["harm_types"]
    assert (row["harm_verdict"], row["harm_category"], harm_types, row["first_harmful_step"]) == (
        "harmful", "prompt_injection", [EXPOSURE, CODE], 2)
    fresh = open_store(tmp_path / "fresh.sqlite")
    import_labels(out, fresh, "back")
    got = fresh.get("t1", "back")
    assert (got.harm_verdict, got.harm_category, got.harm_types, got.first_harmful_step, got.labels) == (
        "harmful", "prompt_injection", [EXPOSURE, CODE], 2, ["computer_use:input.typo"])
    assert fresh.get("t3", "back").harm_verdict is None
    fresh.close()


def test_the_hf_dataset_card_counts_harm_verdicts_and_documents_the_columns(labelled, tmp_path):
    export(labelled, tmp_path / "ds", "hf")
    card = (tmp_path / "ds" / "README.md").read_text()
    assert "## Harm verdicts" in card and "- harmful: 1" in card and "- safe: 1" in card and "- none: 1" in card
    assert "| `harm_types` |" in card and "| `first_harmful_step` |" in card
    df = pl.read_parquet(tmp_path / "ds" / "data" / "train-00000-of-00001.parquet")
    assert df.filter(pl.col("trajectory_id") == "t1")["harm_types"].to_list() == [[EXPOSURE, CODE]]


def test_reward_model_data_and_whowhen_records_carry_the_safety_verdict(labelled, tmp_path):
    export(labelled, tmp_path / "sft.jsonl", "sft")
    sft = {r["id"]: r for r in map(json.loads, (tmp_path / "sft.jsonl").read_text().splitlines())}
    assert (sft["t1"]["harm_verdict"], sft["t1"]["harm_types"], sft["t1"]["first_harmful_step"],
            sft["t1"]["harm_category"]) == ("harmful", [EXPOSURE, CODE], 2, "prompt_injection")
    assert sft["t2"]["harm_verdict"] == "safe" and sft["t3"]["harm_verdict"] is None
    assert sft["t1"]["label"] == "incorrect"  # the success answer is unchanged
    export(labelled, tmp_path / "ww.jsonl", "whowhen")
    ww = {r["question_ID"]: r for r in map(json.loads, (tmp_path / "ww.jsonl").read_text().splitlines())}
    assert ww["t1"]["harm_types"] == [EXPOSURE, CODE] and ww["t1"]["mistake_step"] == "1"
    fresh = open_store(tmp_path / "fresh.sqlite")
    import_labels(tmp_path / "sft.jsonl", fresh, "back")
    assert fresh.get("t1", "back").harm_types == [EXPOSURE, CODE]
    fresh.close()


def test_the_export_filter_keeps_one_harm_verdict(labelled, tmp_path):
    res = export(labelled, tmp_path / "h.jsonl", "jsonl", filters=ExportFilter(harm="harmful"))
    rows = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert res.rows == 1 and [r["trajectory_id"] for r in rows] == ["t1"]


def test_a_majority_record_for_reward_model_data_takes_the_harm_majority(store, tmp_path):
    store.save(Annotation("t", "a", verdict="failure", harm_verdict="harmful", harm_types=[CODE]))
    store.save(Annotation("t", "b", verdict="failure", harm_verdict="harmful", harm_types=[CODE, EXFIL]))
    store.save(Annotation("t", "c", verdict="failure", harm_verdict="safe"))
    export(store, tmp_path / "sft.jsonl", "sft")
    rec = json.loads((tmp_path / "sft.jsonl").read_text())
    assert (rec["annotator"], rec["harm_verdict"], rec["harm_types"]) == ("majority", "harmful", [CODE])


def test_files_written_before_the_safety_verdict_still_import_and_leave_it_alone(store, tmp_path):
    old = tmp_path / "old.jsonl"  # the columns of an export made before the harm fields existed
    old.write_text(json.dumps({"trajectory_id": "t1", "annotator": "x", "role": "annotator", "verdict": "failure",
                               "labels": ["computer_use:input.typo"], "root_cause_step": 1, "cascading": [],
                               "step_comments": [], "version": 3}) + "\n")
    store.save(Annotation("t1", "imp", harm_verdict="harmful", harm_types=[CODE]))
    import_labels(old, store, "imp")
    got = store.get("t1", "imp")
    assert (got.verdict, got.harm_verdict, got.harm_types) == ("failure", "harmful", [CODE])


def test_an_import_takes_bare_harm_codes_and_plain_words(store, tmp_path):
    f = tmp_path / "hand.csv"
    f.write_text("trajectory_id,harm_verdict,harm_types,harm_category,first_harmful_step\n"
                 "t1,yes,untrusted_code;harm:data_exposure,harm:prompt_injection,4\n"
                 "t2,no,,,\n")
    import_labels(f, store, "hand")
    t1, t2 = store.get("t1", "hand"), store.get("t2", "hand")
    assert (t1.harm_verdict, t1.harm_types, t1.harm_category, t1.first_harmful_step) == (
        "harmful", [EXPOSURE, CODE], "prompt_injection", 4)
    assert (t2.harm_verdict, t2.harm_types) == ("safe", [])
    bad = tmp_path / "bad.csv"
    bad.write_text("trajectory_id,harm_verdict\nt1,dangerous\n")
    with pytest.raises(AnnotationError, match=r"bad.csv:2.*harm_verdict.*harmful, safe, unsure"):
        import_labels(bad, store, "hand")
    step = tmp_path / "step.csv"
    step.write_text("trajectory_id,first_harmful_step\nt1,2.5\n")
    with pytest.raises(AnnotationError, match="first_harmful_step.*step index"):
        import_labels(step, store, "hand")


def test_the_command_line_builds_the_harm_queue_filters_exports_and_shows_harm(tmp_path, capsys):
    from gui_app.core.library.catalog import Catalog
    from gui_app.core.trajectory.formats.native import save
    from gui_app.core.trajectory.model import Outcome, Step, Trajectory
    from tests.annotation.test_cli import cli

    lib = tmp_path / "lib"
    for i in range(3):
        t = Trajectory(id=f"run{i}", instruction=f"task {i}", source_format="native", source_path="",
                       steps=[Step(index=0, action="click(1, 2)")], outcome=Outcome(success=False, source="env"))
        save(t, lib / f"run{i}")
    Catalog.for_root(lib).scan(lib)
    s = open_store(root=lib)
    s.save(Annotation("run2", "a", verdict="failure", harm_verdict="harmful", harm_types=[CODE], first_harmful_step=0))
    s.save(Annotation("run1", "a", verdict="failure", harm_verdict="unsure"))
    s.save(Annotation("run0", "a", verdict="failure", harm_verdict="safe"))
    s.close()
    assert cli(["queue", "build", "safety", "--order", "harm", "--annotators", "bob", "--root", str(lib),
                "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == 2
    assert cli(["queue", "next", "safety", "--annotator", "bob", "--root", str(lib), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trajectory_id"] == "run2"  # harmful before unsure
    out = tmp_path / "harmful.jsonl"
    assert cli(["export", "--root", str(lib), "--format", "jsonl", "--out", str(out), "--harm", "harmful"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["trajectory_id"], r["harm_types"]) for r in rows] == [("run2", [CODE])]
    capsys.readouterr()
    assert cli(["labels", "show", "run2", "--root", str(lib)]) == 0
    assert f"harm=harmful harm_step=0 harm_category=None harm_types={CODE}" in capsys.readouterr().out
    assert cli(["agreement", "--root", str(lib), "--json"]) == 0
    assert "harm_verdict" in json.loads(capsys.readouterr().out)
