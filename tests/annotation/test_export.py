"""Exports (Parquet, JSONL, CSV, HF folder, ExeVRM-style SFT, Who&When) and label import round trips."""

from __future__ import annotations

import json

import polars as pl
import pytest
import yaml

from gui_app.core.store.record import Annotation, AnnotationError, Cascade
from gui_app.core.annotation.export import ExportFilter, export, import_labels, label_matches, split_tasks
from gui_app.core.store.backends import open_store
from gui_app.core.trajectory.model import Step, Trajectory


def rich(tid: str, who: str, **kw) -> Annotation:
    base = dict(verdict="failure", labels=["computer_use:input.typo", "mast:1.3"], root_cause_step=2,
                root_cause_module="input", root_cause_error_type="input.typo", evidence="typed 'Bostn'",
                correction_guidance="type Boston", cascading=[Cascade(3, "search finds nothing")],
                step_comments={0: "fine", 2: "here"}, notes="n, with \"quotes\"\nand a newline", confidence=0.75,
                time_spent=31.5, mistake_agent="WebSurfer")
    base.update(kw)
    return Annotation(tid, who, **base)


@pytest.fixture
def store(store_location):
    """The same labels on each backend: every export below runs from SQLite and from PostgreSQL."""
    s = open_store(store_location)
    s.save(rich("t1", "ann"))
    s.save(rich("t2", "ann", verdict="success", labels=[], root_cause_step=None, cascading=[], step_comments={},
                evidence=None, mistake_agent=None))
    s.save(rich("t3", "ann", labels=["computer_use:grounding.wrong_element"], root_cause_step=0))
    s.save(rich("t1", "bob", verdict="unsure", labels=["mast:1.3"]))
    s.adjudicate("t1", "dana", "ann")
    yield s
    s.close()


CATALOG = [{"id": "t1", "key": "/lib/t1", "path": "/lib/t1", "instruction": "Book a flight to Boston",
            "task": "book-flight", "success": False, "p_success": 0.7},
           {"id": "t2", "key": "/lib/t2", "path": "/lib/t2", "instruction": "Tick the box", "task": "click-checkbox",
            "success": True, "p_success": 0.9},
           {"id": "t3", "key": "/lib/t3", "path": "/lib/t3", "instruction": "Book a flight to Paris",
            "task": "book-flight", "success": False, "p_success": 0.2}]


@pytest.mark.parametrize("fmt,suffix", [("parquet", "parquet"), ("jsonl", "jsonl"), ("csv", "csv")])
def test_tabular_export_round_trips_through_import(store, tmp_path, fmt, suffix):
    out = tmp_path / f"labels.{suffix}"
    res = export(store, out, fmt, filters=ExportFilter(annotator="ann"))
    assert res.rows == 3 and out.exists()
    fresh = open_store(tmp_path / "fresh.sqlite")
    imp = import_labels(out, fresh, "ann2")
    assert imp.records == 3
    for tid in ("t1", "t2", "t3"):
        assert fresh.get(tid, "ann2").content() == store.get(tid, "ann").content(), tid
    # importing the same file again changes nothing
    assert import_labels(out, fresh, "ann2").changes == 0
    fresh.close()


def test_parquet_schema_and_catalog_join(store, tmp_path):
    out = tmp_path / "all.parquet"
    res = export(store, out, catalog=CATALOG)
    df = pl.read_parquet(out)
    assert res.rows == df.height == 5  # 4 annotator records + 1 adjudicated
    assert df.schema["labels"] == pl.List(pl.Utf8) and df.schema["root_cause_step"] == pl.Int64
    row = df.filter((pl.col("trajectory_id") == "t1") & (pl.col("role") == "adjudicator")).to_dicts()[0]
    assert row["annotator"] == "dana" and row["instruction"] == "Book a flight to Boston"
    assert row["env_success"] is False and row["p_success"] == 0.7
    assert row["cascading"] == [{"step": 3, "effect": "search finds nothing"}]


def test_catalog_rows_of_loose_types_join_in_their_columns_types(store, tmp_path):
    """Rows a caller hands in may say 1/0 for a verdict, an int for a probability, a number for a task: each lands
    in its column's type, and a value that is none of these becomes null, not a failed export."""
    loose = [{**CATALOG[0], "success": 0, "p_success": 1, "task": 7},
             {**CATALOG[1], "success": 1, "p_success": "high"}, {**CATALOG[2], "success": "no"}]
    out = tmp_path / "loose.parquet"
    export(store, out, catalog=loose)
    got = {(r["trajectory_id"], r["role"]): r for r in pl.read_parquet(out).to_dicts()}
    t1, t2, t3 = got[("t1", "annotator")], got[("t2", "annotator")], got[("t3", "annotator")]
    assert (t1["env_success"], t1["p_success"], t1["task"]) == (False, 1.0, "7")
    assert (t2["env_success"], t2["p_success"]) == (True, None)
    assert (t3["env_success"], t3["p_success"]) == (None, 0.2)


def test_filters(store, tmp_path):
    def rows(**kw):
        res = export(store, tmp_path / "f.parquet", filters=ExportFilter(**kw))
        df = pl.read_parquet(tmp_path / "f.parquet")
        assert df.height == res.rows
        return sorted(zip(df["trajectory_id"], df["annotator"], strict=True))

    assert rows(adjudicated_only=True) == [("t1", "dana")]
    assert rows(outcome="success") == [("t2", "ann")]
    assert rows(taxonomy_label="mast:1.3") == [("t1", "ann"), ("t1", "bob"), ("t1", "dana")]
    assert rows(taxonomy_label="grounding") == [("t3", "ann")]  # a group matches its labels
    assert rows(taxonomy_label="input.typo", annotator="ann") == [("t1", "ann")]
    assert label_matches("computer_use:input.typo", "input") and not label_matches("computer_use:input.typo", "inp")
    assert not label_matches("computer_use:input.typo", "mast:input.typo")


def test_split_by_task_keeps_tasks_whole(store, tmp_path):
    res = export(store, tmp_path / "split", "parquet", catalog=CATALOG, split_by_task=True, test_fraction=0.5)
    train = pl.read_parquet(tmp_path / "split" / "train.parquet")
    test = pl.read_parquet(tmp_path / "split" / "test.parquet")
    assert train.height + test.height == 5 and res.by_split == {"train": train.height, "test": test.height}
    assert not set(train["task"]) & set(test["task"])
    assert train.height and test.height
    # stable: the same tasks always land in the same split
    assert split_tasks(["a", "b", "c"]) == split_tasks(["c", "b", "a"])


def test_hf_folder_with_dataset_card(store, tmp_path):
    out = tmp_path / "hf"
    res = export(store, out, "hf", catalog=CATALOG, split_by_task=True, test_fraction=0.5)
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == ["README.md", "data/test-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]
    text = (out / "README.md").read_text()
    header = yaml.safe_load(text.split("---")[1])
    splits = {d["split"]: d["path"] for d in header["configs"][0]["data_files"]}
    assert splits == {"train": "data/train-*", "test": "data/test-*"}
    assert header["size_categories"] == ["n<1K"] and "computer-use" in header["tags"]
    assert "| `verdict` |" in text and sum(res.by_split.values()) == 5


def test_sft_exevrm_style(store, tmp_path):
    traj = Trajectory(id="t1", instruction="Book a flight to Boston", source_format="native",
                      source_path="/lib/t1", steps=[Step(index=i, t_start=2.0 * i, t_end=2.0 * i + 1.5,
                                                         action=f"a{i}") for i in range(4)])
    res = export(store, tmp_path / "sft.jsonl", "sft", catalog=CATALOG, loader=lambda row: traj)
    recs = {r["id"]: r for r in map(json.loads, (tmp_path / "sft.jsonl").read_text().splitlines())}
    assert res.rows == 3 and set(recs) == {"t1", "t2", "t3"}
    t1 = recs["t1"]  # the adjudicated record (copied from ann: failure, root cause step 2 at 4.0-5.5 s)
    assert t1["messages"][0]["content"].startswith("<video>Task instruction: Book a flight to Boston")
    assert t1["messages"][1]["content"] == "\\box{incorrect} The execution first deviates at step 2 (4.00s-5.50s)."
    assert t1["deviation"] == {"step": 2, "t_start": 4.0, "t_end": 5.5} and t1["label"] == "incorrect"
    assert recs["t2"]["messages"][1]["content"] == "\\box{correct}" and recs["t2"]["deviation"] is None
    assert t1["videos"] == ["/lib/t1"]  # no recording in this trajectory: its path


def test_sft_skips_unsure_and_survives_unloadable_trajectories(tmp_path):
    s = open_store(tmp_path / "l.sqlite")
    s.save(Annotation("x", "a", verdict="unsure"))
    s.save(Annotation("y", "a", verdict="failure", root_cause_step=1))
    res = export(s, tmp_path / "sft.jsonl", "sft", catalog=[{"id": "y", "key": str(tmp_path / "missing")}])
    assert res.rows == 1 and res.skipped == 1 and "cannot load" in res.warnings[0]
    rec = json.loads((tmp_path / "sft.jsonl").read_text())
    assert rec["messages"][1]["content"] == "\\box{incorrect} The execution first deviates at step 1."
    s.close()


def test_whowhen_export_is_readable_by_the_whowhen_importer(store, tmp_path):
    from gui_app.core.trajectory.formats.whowhen import WhoWhenImporter

    traj = Trajectory(id="t1", instruction="Q?", source_format="whowhen", source_path="/x", steps=[
        Step(index=i, action=f"msg {i}", thought=f"message {i}", extra={"agent": "Orchestrator" if i % 2 else
                                                                          "WebSurfer"}) for i in range(4)])
    out = tmp_path / "ww.jsonl"
    export(store, out, "whowhen", filters=ExportFilter(adjudicated_only=True), catalog=[{"id": "t1", "key": "k"}],
           loader=lambda row: traj)
    rec = json.loads(out.read_text())
    assert rec["mistake_step"] == "2" and rec["mistake_agent"] == "WebSurfer" and rec["is_correct"] is False
    loaded = WhoWhenImporter().load_all(out)
    assert len(loaded) == 1
    lab = loaded[0].metadata["labels"]
    assert (lab["mistake_agent"], lab["mistake_step"], lab["mistake_reason"]) == ("WebSurfer", 2, "typed 'Bostn'")
    assert [s.thought for s in loaded[0].steps] == [f"message {i}" for i in range(4)]


def test_import_accepts_agentdebug_names_and_reports_bad_rows(tmp_path):
    s = open_store(tmp_path / "l.sqlite")
    p = tmp_path / "in.csv"
    p.write_text("id,label,critical_step,critical_module,error_type,labels\n"
                 "a,incorrect,3,planning,planning.inefficient_plan,x:1;x:2\n"
                 "b,correct,,,,\n")
    assert import_labels(p, s, "imp").records == 2
    a = s.get("a", "imp")
    assert (a.verdict, a.root_cause_step, a.root_cause_module, a.labels) == ("failure", 3, "planning", ["x:1", "x:2"])
    assert s.get("b", "imp").verdict == "success"
    bad = tmp_path / "bad.csv"
    bad.write_text("trajectory_id,verdict,confidence\nc,failure,0.5\nd,failure,high\n")
    with pytest.raises(AnnotationError) as ei:
        import_labels(bad, s, "imp")
    assert ei.value.line == 3 and ei.value.field == "confidence" and "bad.csv:3" in str(ei.value)
    assert s.get("c", "imp") is None  # nothing written when any row is bad
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "e", "verdict": "failure"}\n{"id": "e", "verdict": "success"}\n')
    with pytest.raises(AnnotationError, match="listed twice"):
        import_labels(dup, s, "imp")
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"id": "e"}\n{oops\n')
    with pytest.raises(AnnotationError, match=r"broken.jsonl:2.*invalid JSON"):
        import_labels(broken, s, "imp")
    with pytest.raises(AnnotationError, match="unsupported file type"):
        import_labels(tmp_path / "x.xlsx", s, "imp")
    s.close()


def test_final_labels_for_the_dataset_builder(store):
    fl = store.final_labels()
    assert fl["t1"]["source"] == "adjudicated" and fl["t1"]["verdict"] == "failure"
    assert fl["t3"] == {"verdict": "failure", "root_cause_step": 0, "labels": ["computer_use:grounding.wrong_element"],
                        "source": "majority", "n_annotators": 1, "harm_verdict": None, "harm_category": None,
                        "harm_types": [], "first_harmful_step": None}


def test_whowhen_and_sft_exports_import_back(store, tmp_path):
    ww = tmp_path / "ww.jsonl"
    export(store, ww, "whowhen")
    fresh = open_store(tmp_path / "fresh.sqlite")
    import_labels(ww, fresh, "back")
    t1 = fresh.get("t1", "back")  # from the adjudicated record: failure at step 2 by WebSurfer
    assert (t1.verdict, t1.root_cause_step, t1.mistake_agent, t1.evidence) == ("failure", 2, "WebSurfer",
                                                                              "typed 'Bostn'")
    assert t1.labels == ["computer_use:input.typo", "mast:1.3"]
    sft = tmp_path / "sft.jsonl"
    export(store, sft, "sft")
    import_labels(sft, fresh, "sft")
    assert {a.trajectory_id: a.verdict for a in fresh.annotations(annotator="sft")} == {
        "t1": "failure", "t2": "success", "t3": "failure"}
    assert fresh.get("t1", "sft").root_cause_step == 2  # from the deviation record
    fresh.close()


def test_catalog_rows_are_found_by_library_key_then_by_id():
    from gui_app.core.annotation.export import catalog_index

    rows = [{"id": "same", "ref": "results/model-a/task", "instruction": "A"},
            {"id": "same", "ref": "results/model-b/task", "instruction": "B"}]
    index = catalog_index(rows)
    assert index["results/model-a/task"]["instruction"] == "A" and index["results/model-b/task"]["instruction"] == "B"
    assert index["same"]["instruction"] == "A"  # labels stored under a format's id still join (the first row)
