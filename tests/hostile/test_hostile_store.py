"""Stores: a file that is not a store is refused untouched, a read-only store can be listed and exported, and a new
store appears whole (never as the empty file SQLite leaves until its first commit)."""

from __future__ import annotations

import shutil
import sqlite3

import pytest
from hostile_helpers import REPO, one_error_line, open_dir, rollscope, unprivileged

from gui_app.core.store.record import Annotation
from gui_app.core.library.catalog import Catalog
from gui_app.core.store.interface import StoreError, default_path
from gui_app.core.store.backends import open_store

SAMPLE = REPO / "resources" / "samples" / "miniwob" / "click-tab-success"


@pytest.mark.parametrize("content", [b"", b"x", b"SQLite format 3", b"PK\x03\x04 a zip, not a database" * 10])
def test_a_file_that_is_not_a_store_is_refused_untouched(tmp_path, content):
    """``labels list --store FILE`` used to turn any 0- or 1-byte file into an SQLite database."""
    f = tmp_path / "notes.txt"
    f.write_bytes(content)
    res = rollscope("labels", "list", "--store", str(f))
    assert res.returncode == 1
    assert "not an annotation store" in one_error_line(res.stderr)
    assert f.read_bytes() == content
    with pytest.raises(StoreError, match="not an annotation store"):
        open_store(f)  # the app and `labels import` refuse it too
    assert f.read_bytes() == content


def test_another_programs_database_is_refused_untouched(tmp_path):
    f = tmp_path / "app.db"
    con = sqlite3.connect(f)
    con.execute("CREATE TABLE users (name TEXT)")
    con.commit()
    con.close()
    before = f.read_bytes()
    with pytest.raises(StoreError, match="another kind: users"):
        open_store(f)
    assert f.read_bytes() == before
    assert sqlite3.connect(f).execute("SELECT name FROM sqlite_master").fetchall() == [("users",)]


def test_a_folder_or_fifo_named_as_the_store_is_refused(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo")
    for p in (tmp_path, tmp_path / "fifo"):
        with pytest.raises(StoreError, match="not a regular file"):
            open_store(p)


def test_a_new_store_appears_whole(tmp_path):
    s = open_store(tmp_path / "lib" / ".rollscope" / "labels.sqlite")
    assert s.path.read_bytes()[:16] == b"SQLite format 3\x00"
    s.set_field("t", "a", "verdict", "success")
    s.close()
    assert sorted(p.name for p in s.path.parent.iterdir() if not p.name.startswith("labels.sqlite")) == []
    # What a creation killed half-way leaves (a build under a temporary name) is tidied by the next one.
    stale = s.path.parent / ".other.sqlite.new-999999999-1"
    stale.write_bytes(b"half")
    open_store(s.path.parent / "other.sqlite").close()
    assert not stale.exists()


def test_a_read_only_library_can_be_listed_and_exported(tmp_path):
    """A library on a read-only disk (here: folders and files the user may not write), its catalog and store in
    ``.rollscope``: the commands that only read open the store read-only; the old code failed with 'attempt to write
    a readonly database'."""
    root = open_dir()
    lib = root / "lib"
    shutil.copytree(SAMPLE, lib / "run")
    with Catalog.for_root(lib) as cat:
        cat.scan(lib)
        key = cat.query()[0].ref
    s = open_store(default_path(lib))
    s.save(Annotation(key, "ann", verdict="failure", notes="read me"))
    s.close()
    out = root / "out"
    out.mkdir()
    out.chmod(0o777)
    for p in sorted(lib.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    lib.chmod(0o555)
    user = unprivileged()
    try:
        res = rollscope("labels", "list", "--root", str(lib), "--json", user=user)
        assert res.returncode == 0, res.stderr
        assert '"read me"' in res.stdout
        res = rollscope("export", "--root", str(lib), "--format", "csv", "--out", str(out / "x.csv"), user=user)
        assert res.returncode == 0, res.stderr
        assert "read me" in (out / "x.csv").read_text()
        assert "Traceback" not in res.stderr
        res = rollscope("labels", "import", str(out / "x.csv"), "--annotator", "b", "--root", str(lib), user=user)
        assert res.returncode == 1  # writing needs write access: one line, nothing changed
        assert "rollscope: error:" in res.stderr and "Traceback" not in res.stderr
        ro = open_store(default_path(lib), read_only=True)
        with pytest.raises(StoreError, match="read-only"):
            ro.set_field(key, "ann", "notes", "x")
        assert [a.notes for a in ro.annotations()] == ["read me"]
        ro.close()
    finally:
        for p in [lib, *lib.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
