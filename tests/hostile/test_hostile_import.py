"""``labels import`` never undoes someone's work: it writes only its own columns, each against the record as stored
when it writes (an edit made meanwhile survives), and it lands whole or not at all (a SIGKILL at any moment leaves
the store as before or fully imported)."""

from __future__ import annotations

import csv
import json
import random
import threading
import time

import polars as pl
import pytest
from hostile_helpers import kill_after, one_error_line, rollscope, spawn

from gui_app.core.store.record import Annotation, AnnotationError, Cascade
from gui_app.core.annotation.export import import_labels, row_fields
from gui_app.core.store.backends import open_store

N = 6000


def write_file(path, n: int = N, verdict: str = "failure") -> None:
    """A labels file without a ``notes`` column: what an import from another tool looks like."""
    pl.DataFrame({"trajectory_id": [f"t{i:05d}" for i in range(n)], "verdict": [verdict] * n,
                  "labels": ["computer_use:input.typo"] * n}).write_csv(path)


def test_an_import_writes_only_the_columns_of_its_file(tmp_path):
    s = open_store(tmp_path / "labels.sqlite")
    s.save(Annotation("t00001", "ann", verdict="success", notes="keep me", confidence=0.5))
    write_file(tmp_path / "in.csv", n=3)
    res = import_labels(tmp_path / "in.csv", s, "ann")
    rec = s.get("t00001", "ann")
    assert res.records == 3
    assert rec.verdict == "failure" and rec.labels == ["computer_use:input.typo"]
    assert rec.notes == "keep me" and rec.confidence == 0.5
    assert row_fields({"id": "x", "notes": None, "deviation": {"step": 2}}) == {"notes", "root_cause_step"}
    s.close()


def test_notes_edited_during_an_import_are_never_reverted(tmp_path):
    """An annotator edits notes while an import without a notes column runs: every acknowledged edit stays.

    The old import read every record before its write transactions and wrote those stale copies back, reverting
    the edits made in between (2,038 of 8,826 trajectories in the report that found it)."""
    path = tmp_path / "labels.sqlite"
    s = open_store(path)
    s.save_many(Annotation(f"t{i:05d}", "ann", verdict="success", notes="before") for i in range(N))
    write_file(tmp_path / "in.csv")
    acked: dict[str, str] = {}
    done = threading.Event()
    started = threading.Event()

    def editor() -> None:
        ed = open_store(path)  # another connection, as another window or process would have
        rng = random.Random(7)
        k = 0
        while not done.is_set() or k < 50:
            tid = f"t{rng.randrange(N):05d}"
            ed.set_field(tid, "ann", "notes", f"edit {k}")
            acked[tid] = f"edit {k}"  # acknowledged: set_field returned after its commit
            k += 1
            started.set()
        ed.close()

    t = threading.Thread(target=editor)
    t.start()
    assert started.wait(30)
    try:
        import_labels(tmp_path / "in.csv", s, "ann")
    finally:
        done.set()
        t.join()
    assert len(acked) >= 50
    lost = {tid: (want, s.get(tid, "ann").notes) for tid, want in acked.items() if s.get(tid, "ann").notes != want}
    assert not lost, f"{len(lost)} acknowledged edits reverted, e.g. {list(lost.items())[:3]}"
    assert {a.verdict for a in s.annotations()} == {"failure"}
    s.close()


def _state(path) -> tuple[int, int]:
    s = open_store(path, read_only=True)
    try:
        recs = s.annotations(annotator="imp")
        return len(recs), sum(a.verdict == "failure" for a in recs)
    finally:
        s.close()


@pytest.mark.slow
def test_a_killed_import_leaves_nothing_half_applied(tmp_path):
    """SIGKILL ``rollscope labels import`` of 6,000 rows at random moments: the store holds the import whole or
    not at all, and a rerun completes it. (The old import committed every 2,000 rows: 5 of 28 kills left it half
    applied.)"""
    store = tmp_path / "labels.sqlite"
    s = open_store(store)
    s.save_many(Annotation(f"t{i:05d}", "imp", verdict="success") for i in range(N))  # what the import overwrites
    s.close()
    write_file(tmp_path / "in.csv")
    t0 = time.perf_counter()
    full = rollscope("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--store",
                     str(tmp_path / "timing.sqlite"))
    assert full.returncode == 0, full.stderr
    span = time.perf_counter() - t0
    rng = random.Random(18)
    kills = 0
    for _ in range(8):
        proc = spawn("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--store", str(store))
        kills += kill_after(proc, rng.uniform(0.3, 1.0) * span)
        n, failures = _state(store)
        assert n == N and failures in (0, N), f"half applied: {failures} of {N} rows imported"
        if failures == N:  # it finished before the kill: start again from the old labels
            s = open_store(store)
            s.merge([(Annotation(f"t{i:05d}", "imp", verdict="success"), {"verdict"}) for i in range(N)])
            s.close()
    assert kills >= 4  # the kills did land while it ran
    again = rollscope("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--store", str(store))
    assert again.returncode == 0, again.stderr
    assert _state(store) == (N, N)
    leftovers = [p.name for p in tmp_path.iterdir() if ".new-" in p.name or p.name.endswith(".tmp")]
    assert not leftovers


# --- bounded at scale, and exact (issue 31, items 6 and 7) -----------------------------------------------------------

def test_a_large_import_prints_a_summary_not_a_line_per_row(tmp_path):
    """1,000,000 rows naming trajectories the catalog does not know printed 1,000,000 notes. Now: the first 20, a
    count of the rest, and the counts in the summary."""
    lib = tmp_path / "lib"
    lib.mkdir()
    assert rollscope("scan", str(lib)).returncode == 0  # an empty catalog: no row names a scanned trajectory
    write_file(tmp_path / "in.csv", n=2000)
    res = rollscope("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--root", str(lib))
    assert res.returncode == 0, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 21, lines[:3]
    assert all("imported under that name" in ln for ln in lines[:20])
    assert lines[20] == "rollscope: note: ... and 1,980 more"
    assert "imported 2,000 records" in res.stdout and "2,000 notes" in res.stdout
    s = open_store(lib / ".rollscope" / "labels.sqlite", read_only=True)
    assert s.count() == 2000
    s.close()


def _everything(store) -> tuple:
    return ([a.to_dict() for a in store.annotations()],
            [(e.trajectory_id, e.annotator, e.field, e.old, e.new) for e in store.audit()])


@pytest.mark.parametrize("bad", ["a bad value", "a trajectory listed twice"])
def test_a_bad_last_row_of_a_streamed_import_changes_nothing(tmp_path, bad):
    """The file is read as it is written, in chunks, inside the one transaction: a bad row after 12,000 good ones
    (several chunks already written) still leaves the store as it was, and the error names its line."""
    s = open_store(tmp_path / "labels.sqlite")
    s.save_many(Annotation(f"t{i:05d}", "imp", verdict="success", notes="before") for i in range(100))
    before = _everything(s)
    n = 12_000
    ids = [f"t{i:05d}" for i in range(n)] + (["t00007"] if bad.endswith("twice") else ["tlast"])
    verdicts = ["failure"] * n + (["failure"] if bad.endswith("twice") else ["maybe"])
    pl.DataFrame({"trajectory_id": ids, "verdict": verdicts}).write_csv(tmp_path / "in.csv")
    with pytest.raises(AnnotationError) as err:
        import_labels(tmp_path / "in.csv", s, "imp")
    assert err.value.line == n + 2 and f"in.csv:{n + 2}" in str(err.value)
    assert ("listed twice (also at 9)" if bad.endswith("twice") else "unknown verdict") in str(err.value)
    assert _everything(s) == before
    s.close()


def test_an_import_audits_exactly_what_saving_each_field_would(tmp_path, store_location):
    """The batched import (a few statements per table for thousands of records) writes, field for field, what the
    single-field writes of the label panel write: the same records, versions and audit entries, on both backends.
    Records already stored keep the fields the file does not have."""
    batch, one = open_store(store_location), open_store(tmp_path / "reference.sqlite")
    for s in (batch, one):
        s.save(Annotation("t1", "imp", verdict="success", notes="keep", labels=["x:a", "x:b"],
                          step_comments={1: "old", 2: "gone"}, cascading=[Cascade(3, "was")]))
    rows = [{"trajectory_id": "t1", "verdict": "failure", "labels": '["x:b", "x:c"]',
             "step_comments": '[{"step": 1, "comment": "new"}, {"step": 4, "comment": "added"}]',
             "cascading": "[]", "confidence": "0.3"},
            {"trajectory_id": "t2", "verdict": "unsure", "labels": "x:a;x:d",
             "step_comments": "[]", "cascading": '[{"step": 0, "effect": "e"}]', "confidence": ""}]
    path = tmp_path / "in.csv"
    pl.DataFrame(rows).write_csv(path)
    assert import_labels(path, batch, "imp").changes == 12  # t1: 8 (2 fields, 2 labels, 3 comments, 1 step); t2: 4
    for r in rows:  # the reference: one field at a time, as the panel writes them
        tid = r["trajectory_id"]
        one.set_field(tid, "imp", "verdict", r["verdict"])
        if r["confidence"]:
            one.set_field(tid, "imp", "confidence", float(r["confidence"]))
        want = set(json.loads(r["labels"]) if r["labels"].startswith("[") else r["labels"].split(";"))
        have = set(one.get(tid, "imp").labels) if one.get(tid, "imp") else set()
        for lab in sorted(want - have):
            one.set_label(tid, "imp", lab, True)
        for lab in sorted(have - want):
            one.set_label(tid, "imp", lab, False)
        comments = {c["step"]: c["comment"] for c in json.loads(r["step_comments"])}
        for step in sorted(set(comments) | set(one.get(tid, "imp").step_comments)):
            one.set_step_comment(tid, "imp", step, comments.get(step))
        effects = {c["step"]: c["effect"] for c in json.loads(r["cascading"])}
        for step in sorted(set(effects) | {c.step for c in one.get(tid, "imp").cascading}):
            one.set_cascade(tid, "imp", step, effects.get(step))

    def shape(s) -> tuple:
        recs = {a.trajectory_id: {k: v for k, v in a.to_dict().items() if k not in ("created_at", "updated_at")}
                for a in s.annotations()}
        return recs, sorted(((e.trajectory_id, e.field, e.old, e.new) for e in s.audit()), key=repr)

    assert shape(batch) == shape(one)
    assert batch.get("t1", "imp").notes == "keep"
    assert import_labels(path, batch, "imp").changes == 0  # the same file again changes nothing
    batch.close()
    one.close()


@pytest.mark.parametrize(("text", "line", "words"), [
    ("trajectory_id,verdict\na,failure\nb,failure\nc,failure,extra\n", 4, ["3 cells", "2 columns"]),
    ("trajectory_id,verdict,notes\na,failure,ok\nb,failure\n", 3, ["field 'notes'", "2 cells"]),
    ('trajectory_id,verdict,notes\na,failure,"fine"\nb,failure,"a "quoted" word"\n', 3, ["cannot parse as CSV"]),
    ('trajectory_id,verdict,notes\na,failure,"one\ntwo\nthree"\nb,maybe,\n', 5, ["field 'verdict'", "maybe"]),
    ("trajectory_id,verdict,verdict\na,failure,success\n", 1, ["field 'verdict'", "twice"]),
    ('trajectory_id,verdict\na,failure\nb,"unterminated\n', 3, ["cannot parse as CSV"]),
])
def test_a_csv_parse_error_names_its_line(tmp_path, text, line, words):
    """A malformed CSV row was "cannot parse as csv" with polars' message and no line; a row after a cell spanning
    lines was given the wrong line. Now the error names the line the row starts on, and the column when it can."""
    path = tmp_path / "in.csv"
    path.write_text(text)
    s = open_store(tmp_path / "labels.sqlite")
    with pytest.raises(AnnotationError) as err:
        import_labels(path, s, "imp")
    assert err.value.line == line and f"in.csv:{line}:" in str(err.value), str(err.value)
    for w in words:
        assert w in str(err.value), str(err.value)
    assert s.count() == 0
    s.close()
    res = rollscope("labels", "import", str(path), "--annotator", "imp", "--store", str(tmp_path / "l2.sqlite"))
    assert res.returncode == 1 and f"in.csv:{line}:" in one_error_line(res.stderr)


def test_an_apostrophe_is_taken_off_only_where_an_export_put_it(tmp_path):
    """The export puts ``'`` before a cell a spreadsheet would run; the import took one off any cell starting with
    ``''`` too, so a note typed as ``''Twas brillig`` lost a character. Now only what the export would have
    prefixed loses it."""
    cells = {"''Twas brillig": "''Twas brillig", "'tis": "'tis", "'=1+1": "=1+1", "' =1+1": " =1+1",
             "'\uff1dSUM(A1)": "\uff1dSUM(A1)", "'''": "''", "'-": "-", "'\nline": "\nline", "' plain": "' plain"}
    path = tmp_path / "in.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["trajectory_id", "notes"])
        for i, cell in enumerate(cells):
            w.writerow([f"t{i}", cell])
    s = open_store(tmp_path / "labels.sqlite")
    import_labels(path, s, "imp")
    got = {a.trajectory_id: a.notes for a in s.annotations()}
    assert got == {f"t{i}": want for i, want in enumerate(cells.values())}
    s.close()


def test_the_bulk_lookup_of_an_import_answers_as_resolve_does(tmp_path):
    """An import resolves every row's trajectory from the catalog read once (a million rows once cost up to three
    queries each): the answers are :func:`resolve`'s, ambiguous ids included."""
    from gui_app.core.trajectory import identity
    from gui_app.core.library.catalog import Catalog
    from tests.formats import builders as b

    root = tmp_path / "lib"
    for model in ("gpt-4o", "uitars-1.5"):  # one OSWorld task run by two models: one id, two trajectories
        b.osworld_dir(root / "results", example_id="same-task", video=None, model=model, domain="chrome")
    b.osworld_dir(root / "other", example_id="only-once", video=None, domain="os")
    cat = Catalog.for_root(root)
    cat.scan(root)
    refs = sorted(r.ref for r in cat.query())
    find = identity.lookup(cat)
    for ident in [*refs, str(root / refs[0]), "same-task", "only-once", "nowhere", refs[0] + "x"]:
        try:
            want: tuple = (identity.resolve(ident, cat), [])
        except identity.AmbiguousIdError as exc:
            want = (None, exc.refs)
        assert find(ident) == want, ident
    cat.close()
    pl.DataFrame({"trajectory_id": ["same-task", "only-once", "nowhere"], "verdict": ["failure"] * 3}).write_csv(
        tmp_path / "in.csv")
    res = rollscope("labels", "import", str(tmp_path / "in.csv"), "--annotator", "imp", "--root", str(root))
    assert res.returncode == 1  # one row not imported: its id names two trajectories
    assert "1 not imported" in res.stdout and "1 notes" in res.stdout
    assert [ln.split(": ", 2)[1] for ln in res.stderr.splitlines()] == ["note", "error"]
