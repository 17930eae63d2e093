"""Damage is named, and derived data is rebuilt: a native run whose trajectory.json cannot be read is that format's
one-line error (never an empty plain video), a symlink loop is called one, and a catalog with flipped bytes is named
by every command, then set aside and rebuilt by ``scan``, the label store untouched. Real ``rollscope`` runs."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from hostile_helpers import REPO, one_error_line, open_dir, rollscope, unprivileged

from gui_app.core.store.record import Annotation
from gui_app.core.library.catalog import Catalog
from gui_app.core.library.folder import settings_catalog_path
from gui_app.core.store.interface import default_path
from gui_app.core.store.backends import open_store

SAMPLES = REPO / "resources" / "samples" / "miniwob"
SAMPLE = SAMPLES / "click-tab-success"


def cut_after_schema_version(file: Path) -> None:
    """trajectory.json cut short right after ``"schema_version":`` (a copy killed half-way)."""
    text = file.read_text()
    file.write_text(text[:text.index('"schema_version":') + len('"schema_version":')])


def fifo(file: Path) -> None:
    file.unlink()
    os.mkfifo(file)


def folder(file: Path) -> None:
    file.unlink()
    file.mkdir()


def loop(file: Path) -> None:
    file.unlink()
    file.symlink_to(file.name)  # trajectory.json -> trajectory.json


DAMAGE = {"cut short": cut_after_schema_version, "a FIFO": fifo, "a folder": folder, "a symlink loop": loop}


@pytest.mark.parametrize("how", list(DAMAGE))
def test_a_native_run_whose_trajectory_json_cannot_be_read_is_the_native_formats_error(tmp_path, how):
    lib = tmp_path / "lib"
    run = lib / "run"
    shutil.copytree(SAMPLE, run)
    res = rollscope("scan", str(lib), "--json")
    assert res.returncode == 0 and json.loads(res.stdout)["by_format"] == {"native": 1}
    DAMAGE[how](run / "trajectory.json")

    res = rollscope("inspect", str(run))
    assert res.returncode == 1, res.stdout
    line = one_error_line(res.stderr)
    assert str(run / "trajectory.json") in line and "plain_video" not in res.stdout
    if how == "a symlink loop":
        assert "symlink loop" in line

    # a rescan keeps the run as a native run that does not load: its row says why, it is not overwritten by an
    # empty run of another format
    res = rollscope("scan", str(lib), "--json")
    info = json.loads(res.stdout)
    assert res.returncode == 0 and info["trajectories"] == 0 and info["by_format"] == {}
    assert [e["path"] for e in info["errors"]] == [str(run)]
    assert str(run / "trajectory.json") in info["errors"][0]["error"]
    with Catalog.for_root(lib) as cat:
        (row,) = cat.query()
    assert row.format == "native" and row.error is not None


def test_a_symlink_loop_is_named_as_one_not_as_a_missing_file(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    for argv in (("inspect", str(tmp_path / "a")), ("scan", str(tmp_path / "a"))):
        res = rollscope(*argv)
        line = one_error_line(res.stderr)
        assert res.returncode == 1 and "symlink loop" in line and "no such file" not in line, argv
    run = tmp_path / "run"
    shutil.copytree(SAMPLE, run)
    shot = run / "frames" / "step_000.png"
    shot.unlink()
    shot.symlink_to(shot.name)
    res = rollscope("inspect", str(run))
    assert res.returncode == 0, res.stderr
    assert "steps[0].screenshot': symlink loop" in res.stdout
    # a scan does not follow links, but says which ones loop
    res = rollscope("scan", str(tmp_path), "--json")
    examples = json.loads(res.stdout)["unrecognised"]["examples"]
    assert res.returncode == 0 and {e for e in examples if "symlink loop" in e} == {
        f"{tmp_path / n} (symlink loop: a link that leads back to itself)" for n in ("a", "b")}


def flip_bytes(db: Path, n: int = 200, seed: int = 0, tables: tuple[str, ...] = ("trajectories", "files")) -> None:
    """Flip ``n`` seeded random bits in the pages of ``tables`` (by default those holding the catalog's rows, where a
    disk or a copy damages most of a large catalog)."""
    conn = sqlite3.connect(db)
    page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    pages = [p for (p,) in conn.execute(f"SELECT pageno FROM dbstat WHERE name IN ({','.join('?' * len(tables))})",
                                        tables)]
    conn.close()
    assert pages
    data = bytearray(db.read_bytes())
    rng = random.Random(seed)
    for _ in range(n):
        at = (rng.choice(pages) - 1) * page_size + rng.randrange(100, page_size)
        data[at] ^= 1 << rng.randrange(8)
    db.write_bytes(bytes(data))


def undecodable_text(db: Path) -> None:
    """Two bytes of every stored instruction made invalid UTF-8: SQLite's own check finds nothing wrong."""
    data = db.read_bytes()
    assert b"Click on Tab" in data
    db.write_bytes(data.replace(b"Click on Tab", b"C\xff\xfeck on Tab"))


def schema_damage(db: Path) -> None:
    """200 bits flipped in the pages holding the schema."""
    flip_bytes(db, tables=("sqlite_schema", "sqlite_master"))


@pytest.mark.parametrize("damage", [flip_bytes, undecodable_text, schema_damage])
def test_a_damaged_catalog_is_named_then_set_aside_and_rebuilt_by_scan(tmp_path, damage):
    lib = tmp_path / "lib"
    shutil.copytree(SAMPLE, lib / "run00")
    for i in range(1, 60):  # enough rows that the data pages outnumber the schema's
        shutil.copytree(SAMPLE, lib / f"run{i:02d}", ignore=shutil.ignore_patterns("video.mp4", "frames"))
    assert rollscope("scan", str(lib)).returncode == 0
    cat_path = lib / ".rollscope" / "catalog.sqlite"
    with Catalog(cat_path) as cat:
        key = cat.query()[0].ref
    store = open_store(default_path(lib))
    store.save(Annotation(key, "ann", verdict="failure", notes="precious"))
    store.close()
    labels_before = default_path(lib).read_bytes()
    damage(cat_path)

    out = tmp_path / "out.jsonl"
    for argv in (("queue", "build", "q", "--annotators", "a", "--root", str(lib)),
                 ("export", "--format", "jsonl", "--out", str(out), "--root", str(lib), "--catalog", str(cat_path)),
                 ("score", str(lib / "run00"), "--catalog", str(cat_path))):
        res = rollscope(*argv)
        assert res.returncode == 1, (argv, res.stderr)
        line = [ln for ln in res.stderr.splitlines() if str(cat_path) in ln][-1]
        assert "the catalog is damaged" in line and "rollscope scan" in line and "Traceback" not in res.stderr

    res = rollscope("scan", str(lib), "--json")
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["trajectories"] == 60 and not info["errors"]
    assert "damaged" in info["notes"][0] and "scores" in info["notes"][0] and "set aside" in res.stderr
    aside = [p for p in cat_path.parent.iterdir() if p.name.startswith("catalog.sqlite.damaged-")]
    assert len(aside) == 1 and aside[0].name in info["notes"][0]
    assert default_path(lib).read_bytes() == labels_before  # the label store is never touched
    res = rollscope("queue", "build", "q", "--annotators", "a", "--root", str(lib))
    assert res.returncode == 0 and "60 items" in res.stdout, res.stderr
    res = rollscope("scan", str(lib), "--json")  # the new catalog is sound: no second rebuild
    assert res.returncode == 0 and json.loads(res.stdout)["notes"] == [] and json.loads(res.stdout)["skipped"] == 60


def test_scan_of_a_read_only_library_keeps_its_catalog_beside_the_settings_as_the_app_does(tmp_path, monkeypatch):
    root = open_dir()
    config = root / "config"
    config.mkdir()
    config.chmod(0o777)
    monkeypatch.setenv("ROLLSCOPE_CONFIG_DIR", str(config))
    lib = root / "lib"
    for name in ("click-tab-success", "enter-text-typo"):
        shutil.copytree(SAMPLES / name, lib / name)
    for p in sorted(lib.rglob("*"), reverse=True):
        p.chmod(0o555 if p.is_dir() else 0o444)
    lib.chmod(0o555)
    user = unprivileged()
    try:
        res = rollscope("scan", str(lib), "--json", user=user)
        assert res.returncode == 0, res.stderr
        info = json.loads(res.stdout)
        assert info["trajectories"] == 2
        assert info["catalog"] == str(settings_catalog_path(lib.resolve()))  # the app's catalog of this folder
        assert not (lib / ".rollscope").exists()
        # the other commands find it there too
        store = root / "store"
        store.mkdir()
        store.chmod(0o777)
        res = rollscope("queue", "build", "q", "--annotators", "a", "--store", str(store / "labels.sqlite"),
                        "--root", str(lib), user=user)
        assert res.returncode == 0 and "2 items" in res.stdout, res.stderr
        # labels and export join that catalog too: the export carries each run's instruction from it
        labels = root / "labels.csv"
        labels.write_text("trajectory_id,verdict\nclick-tab-success,success\n")
        labels.chmod(0o644)
        res = rollscope("labels", "import", str(labels), "--annotator", "a", "--store", str(store / "labels.sqlite"),
                        "--root", str(lib), user=user)
        assert res.returncode == 0, res.stderr
        out = store / "out.jsonl"
        res = rollscope("export", "--format", "jsonl", "--out", str(out), "--store", str(store / "labels.sqlite"),
                        "--root", str(lib), user=user)
        assert res.returncode == 0 and "note" not in res.stderr, res.stderr
        (row,) = [json.loads(line) for line in out.read_text().splitlines()]
        assert row["instruction"], row
    finally:
        for p in [lib, *lib.rglob("*")]:
            p.chmod(0o755 if p.is_dir() else 0o644)
