"""Exports: no CSV cell runs as a spreadsheet formula, a bad ``--out`` is one line, a failed or killed export leaves
the previous one whole (a folder is swapped in, never rewritten in place) and leaves no temporary files behind."""

from __future__ import annotations

import csv
import json
import random
import subprocess
from pathlib import Path

import polars as pl
import pytest
from hostile_helpers import kill_after, one_error_line, open_dir, rollscope, spawn, unprivileged

from gui_app.core.annotation import Annotation, Cascade
from gui_app.core.export import export, import_labels, neutralise_csv_cell, restore_csv_cell
from gui_app.core.store import open_store

FORMULAS = ["=cmd|' /C calc'!A0", "+1+2", "-2+3", "@SUM(A1:A2)", "\t=1", "\r=1", "'=already quoted", "''", "'",
            "plain", "'tis fine", "= spaced", "-"]


def test_csv_cells_never_run_as_formulas_and_read_back_exactly(tmp_path):
    """OWASP's CSV-injection advice: a text cell starting with = + - @ tab or CR gets a leading apostrophe (and every
    text cell is quoted); the import takes the apostrophe off again, so the round trip is exact."""
    s = open_store(tmp_path / "labels.sqlite")
    for i, note in enumerate(FORMULAS):
        s.save(Annotation(f"t{i:02d}", "ann", verdict="failure", notes=note, evidence=note,
                          labels=[f"x:{i}"], step_comments={1: note} if note.strip() else {}))
    out = tmp_path / "labels.csv"
    export(s, out, "csv")
    with out.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    for row in rows:
        for col in ("notes", "evidence"):
            assert row[col][:1] not in ("=", "+", "-", "@", "\t", "\r"), (col, row[col])
    assert [r["notes"] for r in rows] == [neutralise_csv_cell(n) for n in FORMULAS]
    assert all(restore_csv_cell(neutralise_csv_cell(n)) == n for n in FORMULAS)
    back = open_store(tmp_path / "back.sqlite")
    import_labels(out, back, "ann")
    assert {a.trajectory_id: (a.notes, a.evidence) for a in back.annotations()} == {
        a.trajectory_id: (a.notes, a.evidence) for a in s.annotations()}
    assert {a.trajectory_id: a.step_comments for a in back.annotations()} == {
        a.trajectory_id: a.step_comments for a in s.annotations()}
    s.close()
    back.close()


@pytest.fixture(scope="module")
def small_store(tmp_path_factory):
    path = tmp_path_factory.mktemp("store") / "labels.sqlite"
    s = open_store(path)
    for i in range(4):
        s.save(Annotation(f"t{i}", "ann", verdict="failure" if i % 2 else "success", root_cause_step=i))
    s.close()
    return path


@pytest.mark.parametrize("case", ["empty", "onto a folder", "under a file", "hf onto a file", "split onto a file"])
def test_bad_out_paths_are_one_line_errors(small_store, tmp_path, case):
    (tmp_path / "afile").write_text("x")
    (tmp_path / "adir").mkdir()
    argv = {"empty": ["--format", "csv", "--out", ""],
            "onto a folder": ["--format", "parquet", "--out", str(tmp_path / "adir")],
            "under a file": ["--format", "jsonl", "--out", str(tmp_path / "afile" / "out.jsonl")],
            "hf onto a file": ["--format", "hf", "--out", str(tmp_path / "afile")],
            "split onto a file": ["--format", "csv", "--split-by-task", "--out", str(tmp_path / "afile")]}[case]
    res = rollscope("export", "--store", str(small_store), *argv)
    assert res.returncode == 1
    line = one_error_line(res.stderr)
    assert "--out" in line or str(tmp_path) in line
    assert (tmp_path / "afile").read_text() == "x" and not any((tmp_path / "adir").iterdir())


def test_a_read_only_folder_is_a_one_line_error(small_store):
    root = open_dir()
    store = root / "labels.sqlite"
    store.write_bytes(small_store.read_bytes())
    store.chmod(0o644)
    out = root / "ro"
    out.mkdir(mode=0o555)
    out.chmod(0o555)  # mkdir's mode is masked by the umask
    res = rollscope("export", "--store", str(store), "--format", "csv", "--out", str(out / "x.csv"),
                    user=unprivileged())
    assert res.returncode == 1
    assert "Permission denied" in one_error_line(res.stderr)
    res = rollscope("export", "--store", str(store), "--format", "hf", "--out", str(out / "ds"), user=unprivileged())
    assert res.returncode == 1
    assert "Permission denied" in one_error_line(res.stderr)


def _hf_rows(folder: Path) -> int:
    """Rows of an hf export folder, checking that its card agrees with its data."""
    n = pl.read_parquet(folder / "data" / "train-00000-of-00001.parquet").height
    assert f"- `train`: {n} rows" in (folder / "README.md").read_text()
    return n


def test_a_failed_hf_export_keeps_the_previous_dataset(small_store, tmp_path):
    """The old export deleted the previous parquet files first, then wrote the new ones: anything that stopped it
    in between (here a folder in the way of its temporary file; in the report, a SIGKILL) lost the dataset."""
    out = tmp_path / "ds"
    s = open_store(small_store, read_only=True)
    export(s, out, "hf")
    assert _hf_rows(out) == 4
    (out / "data" / "train-00000-of-00001.parquet.tmp").mkdir()  # in the old writer's way
    try:
        export(s, out, "hf")
    except Exception:  # noqa: BLE001 -- failing is allowed; losing the old dataset is not
        pass
    assert _hf_rows(out) == 4
    s.close()


def test_an_hf_export_keeps_what_it_does_not_write(small_store, tmp_path):
    """A dataset folder is often a clone of the Hub repository: its .git and .gitattributes, a licence, another
    shard, survive a re-export; the files the export writes are replaced."""
    out = tmp_path / "ds"
    s = open_store(small_store, read_only=True)
    export(s, out, "hf", split_by_task=True)
    (out / ".git").mkdir()
    (out / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (out / ".gitattributes").write_text("*.parquet filter=lfs\n")
    (out / "data" / "extra-00000-of-00002.parquet").write_bytes(b"PAR1")
    export(s, out, "hf")  # no split now: the old test split goes, the rest stays
    names = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert names == [".git/HEAD", ".gitattributes", "README.md", "data/extra-00000-of-00002.parquet",
                     "data/train-00000-of-00001.parquet"]
    assert not [p for p in tmp_path.iterdir() if p.name != "ds"]  # nothing left beside it
    s.close()


# --- SIGKILL at random moments of every export format -------------------------------------------------------------

def _rows(out: Path, fmt: str) -> int:
    """Rows of a complete export (raises on a partial one)."""
    if fmt == "hf":
        return _hf_rows(out)
    if fmt == "parquet":
        return pl.read_parquet(out).height
    if fmt == "csv":
        return pl.read_csv(out, infer_schema=False).height
    lines = out.read_text(encoding="utf-8").splitlines()
    for line in lines:
        json.loads(line)
    return len(lines)


def _writing(out: Path) -> bool:
    """Whether an export to ``out`` has started writing: a temporary file or folder of it exists (this code's
    ``.NAME.PID.tmp`` beside it, or the old ``NAME.tmp`` / ``data/*.tmp``)."""
    parent = out.parent
    return (any(parent.glob(f".{out.name}.*")) or any(parent.glob(f"{out.name}*.tmp"))
            or (out.is_dir() and any(out.rglob("*.tmp"))))


def _kill_while_writing(proc: subprocess.Popen, out: Path, extra: float) -> bool:
    """Wait until the export starts writing, then SIGKILL it ``extra`` seconds later (if it is still running)."""
    while not _writing(out):
        try:
            proc.wait(timeout=0.002)
            return False  # it finished without our seeing it write
        except subprocess.TimeoutExpired:
            continue
    return kill_after(proc, extra)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv", "hf", "sft", "whowhen"])
def test_a_killed_export_leaves_the_previous_one_whole(tmp_path, fmt):
    store = tmp_path / "labels.sqlite"
    s = open_store(store)
    s.save_many(Annotation(f"t{i:05d}", "ann", verdict=("success", "failure")[i % 2], labels=["x:a"],
                           notes="n" * 100, root_cause_step=i % 5, cascading=[Cascade(2, "e")]) for i in range(2000))
    out = tmp_path / ("ds" if fmt == "hf" else f"out.{fmt}")
    argv = ["export", "--store", str(store), "--format", fmt, "--out", str(out)]
    assert rollscope(*argv).returncode == 0
    old = _rows(out, fmt)
    s.save_many(Annotation(f"u{i:05d}", "ann", verdict="failure") for i in range(500))
    s.close()
    rng = random.Random(f"kill-{fmt}")
    kills = 0
    for _ in range(4):
        proc = spawn(*argv)
        kills += _kill_while_writing(proc, out, rng.choice([0.0, rng.uniform(0, 0.05)]))
        assert _rows(out, fmt) in (old, old + 500), "the export at --out is not whole"
    assert kills >= 2
    final = rollscope(*argv)
    assert final.returncode == 0, final.stderr
    assert _rows(out, fmt) == old + 500
    leftovers = [p.name for p in tmp_path.iterdir() if out.name in p.name and p.name != out.name]
    assert not leftovers
    if fmt == "hf":
        assert not list(out.rglob("*.tmp"))
