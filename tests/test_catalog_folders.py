"""A rescan skips the folders that did not change: what the walk decided for each folder (a unit, or walked into, and
which of its files are units) is kept with the folder's signature (mtime, and its direct entries' sizes and mtimes)
and reused while that signature holds; any change to the folder or its direct entries makes it ask again."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from gui_app.core.library.catalog import Catalog

SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "samples" / "miniwob" / "click-tab-success"
RECORD = {"question": "How many albums?", "ground_truth": "4", "mistake_agent": "Assistant", "mistake_step": "1",
          "mistake_reason": "Counted live albums.",
          "history": [{"content": "Search the discography.", "name": "Orchestrator"},
                      {"content": "Counting every release: 6.", "name": "Assistant"}]}


def tree(root: Path) -> Path:
    for i in range(30):
        (root / f"g{i // 10}" / f"empty{i:02d}").mkdir(parents=True)
    shutil.copytree(SAMPLE, root / "runs" / "one")
    return root


def test_a_rescan_keeps_each_unchanged_folders_decision_and_looks_again_at_a_changed_one(tmp_path):
    root = tree(tmp_path / "lib")
    cat = Catalog(tmp_path / "c.sqlite")
    first = cat.scan(root)
    assert first.trajectories == 1 and first.units == 1
    walked = {p for (p,) in cat._conn().execute("SELECT path FROM folders")}
    assert str(root / "g1" / "empty10") in walked and str(root / "runs" / "one") in walked
    stamps = dict(cat._conn().execute("SELECT path, scanned_at FROM folders"))

    again = cat.scan(root)
    assert again.trajectories == 1 and again.skipped == 1
    assert dict(cat._conn().execute("SELECT path, scanned_at FROM folders")) == stamps  # nothing to write

    # a run copied into an empty folder changes that folder: it is asked again and found
    shutil.copytree(SAMPLE, root / "g2" / "empty25" / "copy")
    assert cat.scan(root).trajectories == 2
    # a folder that disappears is forgotten
    shutil.rmtree(root / "g0")
    cat.scan(root)
    assert not any(p.startswith(str(root / "g0")) for (p,) in cat._conn().execute("SELECT path FROM folders"))
    cat.close()


def test_a_folder_whose_signature_holds_is_not_asked_again_and_force_asks(tmp_path):
    """The proof that a rescan trusts the signature: a file rewritten in place to the same size, its mtime put back,
    keeps the decision of the last walk (not a trajectory); ``force`` asks every importer again and finds it."""
    root = tree(tmp_path / "lib")
    record = root / "logs" / "record_17.json"
    record.parent.mkdir()
    real = json.dumps(RECORD)
    record.write_text('{"x": "' + "a" * (len(real) - 9) + '"}')
    assert record.stat().st_size == len(real)
    cat = Catalog(tmp_path / "c.sqlite")
    first = cat.scan(root)
    assert first.trajectories == 1 and first.unrecognised == 1
    st, dst = record.stat(), record.parent.stat()
    record.write_text(real)
    os.utime(record, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.utime(record.parent, ns=(dst.st_atime_ns, dst.st_mtime_ns))

    again = cat.scan(root)
    assert again.trajectories == 1 and again.unrecognised == 1  # the walk's decision was kept
    forced = cat.scan(root, force=True)
    assert forced.trajectories == 2 and forced.by_format == {"native": 1, "whowhen": 1}
    cat.close()


def test_a_file_changed_in_a_walked_folder_is_looked_at_again(tmp_path):
    root = tree(tmp_path / "lib")
    record = root / "logs" / "record_17.json"
    record.parent.mkdir()
    record.write_text('{"notes": "not a trajectory"}')
    cat = Catalog(tmp_path / "c.sqlite")
    assert cat.scan(root).unrecognised == 1
    record.write_text(json.dumps(RECORD))  # written in place: the folder's mtime may not move, the file's does
    report = cat.scan(root)
    assert report.trajectories == 2 and report.unrecognised == 0
    cat.close()
