"""A rescan checks an unchanged run folder by the stats of the entries it held, without listing it again, and still
sees every change: a file edited in place, one added, one removed, a folder whose memo predates the entries."""

from __future__ import annotations

import json
import os
import sqlite3

from gui_app.core.library.catalog import Catalog
from gui_app.core.trajectory import formats
from tests.test_catalog import make_native


def _library(tmp_path, n=6):
    root = tmp_path / "lib"
    units = [make_native(root / "group", f"t{i}", instruction=f"Open menu {i}") for i in range(n)]
    cat = Catalog(tmp_path / "catalog.sqlite", library_root=root)
    cat.scan(root)
    return cat, root, units


def _listed(monkeypatch) -> list[str]:
    """The folders os.scandir lists from now on (the walk's only way of listing a folder)."""
    listed: list[str] = []
    real = os.scandir

    def scandir(path="."):
        listed.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(formats.os, "scandir", scandir)
    return listed


def test_an_unchanged_rescan_lists_no_run_folder(tmp_path, monkeypatch):
    cat, root, units = _library(tmp_path)
    listed = _listed(monkeypatch)
    report = cat.scan(root)
    assert report.skipped == report.units == len(units) and report.trajectories == len(units)
    assert sorted(listed) == [str(root), str(root / "group")]  # the folders walked into, never a run's


def test_changes_inside_a_run_folder_are_read(tmp_path):
    cat, root, units = _library(tmp_path)
    edited, grown, emptied = units[0], units[1], units[2]
    doc = json.loads((edited / "trajectory.json").read_text())
    doc["instruction"] = "Close menu 0"  # the same length: only the time tells
    st = (edited / "trajectory.json").stat()
    (edited / "trajectory.json").write_text(json.dumps(doc, indent=1))
    os.utime(edited / "trajectory.json", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    (grown / "notes.txt").write_text("a note")
    (emptied / "trajectory.json").unlink()
    report = cat.scan(root)
    assert report.skipped == len(units) - 3
    assert cat.get(str(edited)).instruction == "Close menu 0"
    assert cat.get(str(grown)).error is None
    assert cat.get(str(emptied)) is None  # no longer a run
    assert cat.scan(root).skipped == report.units  # and the next rescan skips them all again


def test_a_memo_without_entries_is_listed_once_then_kept(tmp_path, monkeypatch):
    """Catalogs written before the entries were kept hold "{}" for each run folder: listed on the next rescan,
    which keeps the entries for the one after."""
    cat, root, units = _library(tmp_path)
    conn = sqlite3.connect(tmp_path / "catalog.sqlite")
    with conn:
        conn.execute("UPDATE folders SET files = '{}' WHERE importer IS NOT NULL")
    conn.close()
    listed = _listed(monkeypatch)
    assert cat.scan(root).skipped == len(units)
    assert {str(u) for u in units} <= set(listed)
    listed.clear()
    assert cat.scan(root).skipped == len(units)
    assert not {str(u) for u in units} & set(listed)
