"""Exports: no CSV cell runs as a spreadsheet formula, a bad ``--out`` is one line, a failed or killed export leaves
the previous one whole (a folder is swapped in, never rewritten in place) and leaves no temporary files behind."""

from __future__ import annotations

import csv
import json
import os
import random
import re
import stat
import subprocess
from pathlib import Path

import polars as pl
import pytest
from hostile_helpers import kill_after, one_error_line, open_dir, rollscope, spawn, unprivileged

from gui_app.core.store.record import Annotation, Cascade
from gui_app.core.atomic import publish_folder
from gui_app.core.annotation.export import export, import_labels, neutralise_csv_cell, restore_csv_cell
from gui_app.core.store.backends import open_store

FORMULAS = ["=cmd|' /C calc'!A0", "+1+2", "-2+3", "@SUM(A1:A2)", "\t=1", "\r=1", "'=already quoted", "''", "'",
            "plain", "'tis fine", "= spaced", "-",
            # what the first round missed: a line break first, blanks before the sign, full-width signs
            "\n=1+1", "\nplain", " =1+1", "   +1", "\u3000=1", "\u00a0@SUM(A1)", "\uff1dSUM(A1:A2)", "\uff0b1",
            "\uff0d1", "\uff20A1", " \uff1d1", "' =already", "''x", " plain"]
RUNS_AS_FORMULA = re.compile("^(?:[\\s\u00a0\u3000]*[=+\\-@\uff1d\uff0b\uff0d\uff20]|[\\t\\r\\n])")


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
            assert not RUNS_AS_FORMULA.match(row[col]), (col, row[col])
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


# --- an export never replaces what is not an export (issue 31, item 1) ---------------------------------------------

def _fingerprint(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (links as their target's name), to show nothing changed."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        if p.is_symlink():
            out[rel] = b"-> " + os.fsencode(os.readlink(p))
        elif p.is_file():
            out[rel] = p.read_bytes()
    return out


@pytest.fixture
def library(tmp_path):
    """A library with a catalog and a label store holding labels, an audit trail and a queue."""
    root = tmp_path / "lib"
    root.mkdir()
    assert rollscope("scan", str(root)).returncode == 0
    s = open_store(root / ".rollscope" / "labels.sqlite")
    for i in range(5):
        s.save(Annotation(f"t{i}", "ann", verdict="failure", notes=f"note {i}", labels=["x:a"]))
    s.set_field("t0", "ann", "verdict", "success")
    s.save_queue("q", [(0, "t0", None, "ann")], k=1)
    s.close()
    return root


def _refused(res: subprocess.CompletedProcess, *words: str) -> str:
    assert res.returncode == 1, (res.returncode, res.stdout, res.stderr)
    line = one_error_line(res.stderr)
    for w in words:
        assert w in line, line
    return line


@pytest.mark.parametrize("target", ["labels.sqlite", "labels.sqlite-wal", "labels.sqlite-shm", "catalog.sqlite",
                                    "new.parquet"])
@pytest.mark.parametrize("force", [False, True])
def test_an_export_never_lands_in_the_rollscope_folder(library, target, force):
    """The report: ``export --format parquet --out LIB/.rollscope/labels.sqlite`` said "wrote 1 rows" and had renamed
    a Parquet file over the label store: every label, audit entry and queue gone. Nothing in .rollscope is an
    export's to replace, not even with --force."""
    before = _fingerprint(library)
    out = library / ".rollscope" / target
    res = rollscope("export", "--format", "parquet", "--out", str(out), "--root", str(library),
                    *(["--force"] if force else []))
    _refused(res, str(out), ".rollscope")
    assert _fingerprint(library) == before
    s = open_store(library / ".rollscope" / "labels.sqlite", read_only=True)
    assert len(s.annotations()) == 5 and s.queues() and len(s.audit()) > 5
    s.close()


@pytest.mark.parametrize("how", ["the store", "its -wal", "its -journal", "a link to it", "another spelling",
                                 "the catalog", "a folder holding it"])
def test_the_store_and_catalog_are_never_replaced_wherever_they_are(tmp_path, small_store, how):
    """The store given by --store and the catalog given by --catalog, outside any .rollscope folder, compared by
    their resolved paths, with their SQLite side files; a folder export into the folder holding them is refused
    too (it would swap the whole folder). --force changes none of this."""
    work = tmp_path / "work"
    work.mkdir()
    store = work / "labels.sqlite"
    store.write_bytes(small_store.read_bytes())
    lib = tmp_path / "lib"
    lib.mkdir()
    assert rollscope("scan", str(lib)).returncode == 0
    catalog = work / "cat.sqlite"
    catalog.write_bytes((lib / ".rollscope" / "catalog.sqlite").read_bytes())
    (work / "link.sqlite").symlink_to(store)
    out, fmt = {"the store": (store, "parquet"), "its -wal": (work / "labels.sqlite-wal", "jsonl"),
                "its -journal": (work / "labels.sqlite-journal", "csv"), "a link to it": (work / "link.sqlite", "csv"),
                "another spelling": (work / ".." / "work" / "." / "labels.sqlite", "parquet"),
                "the catalog": (catalog, "parquet"), "a folder holding it": (work, "hf")}[how]
    before = _fingerprint(work)
    res = rollscope("export", "--store", str(store), "--catalog", str(catalog), "--format", fmt, "--out", str(out),
                    "--force")
    _refused(res, str(out))
    assert _fingerprint(work) == before


def test_a_library_root_is_not_an_hf_export_folder(library):
    before = _fingerprint(library)
    res = rollscope("export", "--format", "hf", "--out", str(library), "--root", str(library), "--force")
    _refused(res, str(library), "library")
    assert _fingerprint(library) == before


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full")
def test_a_device_is_never_replaced(small_store, tmp_path):
    """``--out /dev/full`` turned the device into a regular file (as root, ``--out /etc/passwd`` would have been
    replaced the same way). A FIFO is refused without opening it (opening one blocks until a reader comes)."""
    res = rollscope("export", "--store", str(small_store), "--format", "csv", "--out", "/dev/full", "--force")
    _refused(res, "/dev/full", "character device")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    res = rollscope("export", "--store", str(small_store), "--format", "jsonl", "--out", str(fifo), timeout=60)
    _refused(res, str(fifo), "FIFO")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize(("fmt", "content"), [
    ("parquet", b"root:x:0:0:root:/root:/bin/bash\n"),  # /etc/passwd, say
    ("jsonl", b'{"id": "run-1", "steps": [{"action": "click(1, 2)"}]}\n'),  # a trajectory, not labels
    ("csv", b"name,score\nalice,3\n"),
    ("sft", b'{"trajectory_id": "t0", "annotator": "ann"}\n'),  # a labels export, not sft records
    ("jsonl", b"PAR1\x00\x00binary"),
])
def test_a_file_that_is_not_an_export_is_kept_unless_forced(small_store, tmp_path, fmt, content):
    out = tmp_path / "thing"
    out.write_bytes(content)
    res = rollscope("export", "--store", str(small_store), "--format", fmt, "--out", str(out))
    _refused(res, str(out), "not a", "--force")
    assert out.read_bytes() == content
    res = rollscope("export", "--store", str(small_store), "--format", fmt, "--out", str(out), "--force")
    assert res.returncode == 0, res.stderr
    assert out.read_bytes() != content


@pytest.mark.parametrize("fmt", ["parquet", "jsonl", "csv", "hf", "sft", "whowhen"])
def test_an_export_replaces_its_own_previous_export(small_store, tmp_path, fmt):
    """What an export wrote (and an empty file: nothing to lose) is replaced without --force."""
    out = tmp_path / ("ds" if fmt == "hf" else "out")
    for _ in range(2):
        res = rollscope("export", "--store", str(small_store), "--format", fmt, "--out", str(out))
        assert res.returncode == 0, res.stderr
    split = tmp_path / "split"
    for _ in range(2):
        res = rollscope("export", "--store", str(small_store), "--format", fmt, "--split-by-task", "--out", str(split))
        assert res.returncode == 0, res.stderr
    empty = tmp_path / "empty"
    empty.touch()
    if fmt != "hf":
        assert rollscope("export", "--store", str(small_store), "--format", fmt, "--out", str(empty)).returncode == 0


def test_a_folder_that_is_not_an_export_is_kept_unless_forced(small_store, tmp_path):
    """A project folder with its own README.md is not a dataset: the hf export would have replaced the README and
    swapped the folder."""
    out = tmp_path / "project"
    out.mkdir()
    (out / "README.md").write_text("# My project\n")
    (out / "main.py").write_text("print('hi')\n")
    before = _fingerprint(out)
    _refused(rollscope("export", "--store", str(small_store), "--format", "hf", "--out", str(out)), "--force")
    _refused(rollscope("export", "--store", str(small_store), "--format", "csv", "--split-by-task", "--out",
                       str(out)), "--force")
    assert _fingerprint(out) == before


@pytest.mark.parametrize(("fmt", "stream"), [("jsonl", "/dev/stdout"), ("csv", "/proc/self/fd/1"),
                                             ("parquet", "/dev/stdout"), ("whowhen", "/dev/stdout")])
def test_stdout_is_written_to_not_renamed_over(small_store, tmp_path, fmt, stream):
    """``--out /dev/stdout`` renamed a temporary file over /dev/stdout: as root, it replaced the system's link. The
    export now goes to the stream, and what was written is said on stderr. Here stdout is a file, as after a shell
    redirect (the old code would have replaced that file's link, not written into it)."""
    was = os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None
    sink = tmp_path / f"sink.{fmt}"
    with sink.open("wb") as fh:
        res = rollscope("export", "--store", str(small_store), "--format", fmt, "--out", stream, stdout=fh)
    assert res.returncode == 0, res.stderr
    assert "wrote 4 rows" in res.stderr
    if fmt == "parquet":
        assert pl.read_parquet(sink).height == 4
    elif fmt == "csv":
        assert pl.read_csv(sink, infer_schema=False).height == 4
    else:
        assert len([json.loads(line) for line in sink.read_text().splitlines()]) == 4
    if was is not None:
        assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == was
    assert not list(Path("/dev").glob(".stdout.*"))


def test_stdout_through_a_pipe(small_store):
    res = rollscope("export", "--store", str(small_store), "--format", "jsonl", "--out", "/dev/stdout")
    assert res.returncode == 0, res.stderr
    assert sorted(json.loads(line)["trajectory_id"] for line in res.stdout.splitlines()) == ["t0", "t1", "t2", "t3"]
    _refused(rollscope("export", "--store", str(small_store), "--format", "hf", "--out", "/dev/stdout"), "folder")


def test_an_hf_export_never_writes_through_a_symlinked_folder(small_store, tmp_path):
    """The export resolved the link and rebuilt the folder it named: a link to a home folder or a library had that
    folder swapped for a dataset. It is refused; the link and its target stay as they were."""
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "README.md").write_text("---\ntags:\n- rollscope\n---\n")  # even one that looks like an export
    (target / "keep.txt").write_text("mine")
    link = tmp_path / "ds"
    link.symlink_to(target, target_is_directory=True)
    before = _fingerprint(tmp_path)
    for force in ([], ["--force"]):
        res = rollscope("export", "--store", str(small_store), "--format", "hf", "--out", str(link), *force)
        _refused(res, str(link), "symbolic link")
    assert _fingerprint(tmp_path) == before and link.is_symlink()
    with pytest.raises(OSError, match="symbolic link"):
        publish_folder(link, lambda folder: (folder / "x").write_text("x"), lambda rel: False)
    assert _fingerprint(tmp_path) == before
