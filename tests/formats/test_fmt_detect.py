"""Detection across all formats: each unit is claimed by its own importer, sniffing is cheap and safe, and a
tree of mixed units is walked into exactly its units."""

from __future__ import annotations

import json
from pathlib import Path

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError, UnknownFormatError


@pytest.fixture
def library(tmp_path) -> dict[str, Path]:
    """One unit of every format under one root (no videos except the plain one: detection never decodes)."""
    root = tmp_path / "lib"
    units = {
        "osworld": b.osworld_dir(root / "osworld", video=None)["path"],
        "atif": b.atif_file(root / "harbor" / "trial-1")["path"],
        "agentnet": b.agentnet_file(root / "agentnet")["path"],
        "browsergym": b.browsergym_dir(root / "agentlab", marker=tmp_path / "UNPICKLED")["path"],
        "plain_video": b.plain_video_dir(root / "recordings" / "r1", codec="mp4v")["path"],
        "image_folder": b.image_folder(root / "screens" / "run7")["path"],
    }
    ww = root / "whowhen" / "17.json"
    ww.parent.mkdir(parents=True)
    ww.write_text(json.dumps(b.whowhen_record()))
    units["whowhen"] = ww
    return units


def test_every_unit_is_claimed_by_its_importer(library):
    for name, path in library.items():
        assert formats.detect(path).name == name, path
        for imp in formats.importers():
            assert 0.0 <= imp.sniff(path) <= 1.0


def test_sniffers_score_zero_on_unrelated_paths(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "data.json").write_text(json.dumps({"a": 1}))
    (tmp_path / "rows.csv").write_text("a,b\n1,2\n")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)))
    (tmp_path / "empty").mkdir()
    for p in [*tmp_path.iterdir(), tmp_path / "missing"]:
        for imp in formats.importers():
            assert imp.sniff(p) == 0.0, (imp.name, p)
    with pytest.raises(UnknownFormatError):
        formats.load(tmp_path / "data.json")
    with pytest.raises(TrajectoryFormatError, match="no such file"):
        formats.load(tmp_path / "missing")


def test_find_units_yields_each_unit_once(library):
    root = library["osworld"].parents[3]
    found = {p: imp.name for p, imp in formats.find_units(root)}
    assert found == {p: n for n, p in library.items()}


def test_every_unit_loads_and_round_trips_through_native(library, tmp_path):
    from gui_app.core.trajectory.formats import native

    for name, path in library.items():
        for i, traj in enumerate(formats.load_all(path)):
            out = native.save(traj, tmp_path / "native" / f"{name}-{i}")
            back = native.load(out.parent)
            assert back.id == traj.id and back.source_format == name
            assert [s.action for s in back.steps] == [s.action for s in traj.steps]
            assert [s.screenshot for s in back.steps] == [s.screenshot for s in traj.steps]
            assert back.outcome == traj.outcome


def test_images_beside_a_file_of_another_format_are_not_a_unit_of_their_own(tmp_path):
    """A trajectory.json (ATIF) with its screenshots in the same folder: the folder is not an image_folder run
    (which would hide the ATIF file from the scan); the ATIF file is the unit."""
    run = b.atif_file(tmp_path / "trial")
    for shot in run["shots"]:
        shot.rename(tmp_path / "trial" / shot.name)
    doc = json.loads(run["path"].read_text())
    run["path"].write_text(json.dumps(doc).replace("images/", ""))
    assert formats.detect(tmp_path / "trial") is None
    assert [(p.name, imp.name) for p, imp in formats.find_units(tmp_path)] == [("trajectory.json", "atif")]
    traj = formats.load(run["path"])
    assert all(s.screenshot is None or s.screenshot.startswith(str(tmp_path / "trial")) for s in traj.steps)
    assert traj.warnings == []
