"""The native format: save/load round trip (a property test), media paths, atomic writes, errors naming fields."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gui_app.core.trajectory import formats
from gui_app.core.trajectory.formats import native
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.model import ACTION_TYPES, Outcome, Step, Trajectory, VideoRef

# -- strategies ---------------------------------------------------------------------------------------------------

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
non_neg = st.floats(min_value=0, max_value=1e6, allow_nan=False)
text = st.text(max_size=30)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def steps(draw, n: int) -> list[Step]:
    """Steps whose times a recording can have (starts in order, each end after its start): any other time loads
    with a warning and is dropped (tests/hostile/test_hostile_formats.py)."""
    out = []
    start = 0.0
    gap = st.floats(min_value=0, max_value=1e5, allow_nan=False)
    for i in range(n):
        start += draw(gap)
        t_start = draw(st.none() | st.just(start))
        t_end = draw(st.none() | st.just(start + draw(gap)))
        out.append(Step(
            index=i,
            t_start=t_start,
            t_end=t_end,
            action=draw(text),
            action_type=draw(st.sampled_from(ACTION_TYPES)),
            x=draw(st.none() | finite),
            y=draw(st.none() | finite),
            text=draw(st.none() | text),
            thought=draw(st.none() | text),
            reward=draw(st.none() | finite),
            align_method=draw(st.none() | st.sampled_from(["stored", "timestamp", "screenshot_match"])),
            align_confidence=draw(st.none() | st.floats(0, 1)),
            extra=draw(st.dictionaries(text, json_values, max_size=3)),
        ))
    return out


@st.composite
def trajectories(draw) -> Trajectory:
    n = draw(st.integers(0, 5))
    return Trajectory(
        id=draw(st.text(min_size=1, max_size=20)),
        instruction=draw(text),
        source_format=draw(st.sampled_from(["native", "osworld", "atif"])),
        steps=draw(steps(n)),
        outcome=Outcome(draw(st.none() | st.booleans()), draw(st.none() | finite),
                        draw(st.sampled_from([None, "env", "human", "model"]))),
        app=draw(st.none() | text),
        os=draw(st.none() | text),
        agent=draw(st.none() | text),
        metadata=draw(st.dictionaries(text, json_values, max_size=3)),
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(traj=trajectories())
def test_save_load_round_trip(tmp_path_factory, traj):
    d = tmp_path_factory.mktemp("rt")
    path = native.save(traj, d)
    assert path == d / native.FILENAME
    back = native.load(d)
    traj.source_path = str(d.resolve())
    assert back == traj
    # And through the importer registry, from the directory and from the file.
    assert formats.detect(d).name == "native"
    assert formats.load(path) == traj


def test_media_paths_are_relative_on_disk_and_absolute_in_memory(tmp_path):
    d = tmp_path / "t"
    (d / "frames").mkdir(parents=True)
    (d / "frames" / "0.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    # A real recording: a file that is no video (one byte of text) loads with a warning and no video.
    (d / "video.mp4").write_bytes((Path(__file__).parents[1] / "resources" / "samples" / "miniwob" /
                                   "click-tab-success" / "video.mp4").read_bytes())
    outside = tmp_path / "elsewhere" / "1.png"
    outside.parent.mkdir()
    outside.write_bytes(b"\x89PNG\r\n\x1a\n")
    traj = Trajectory(id="m", steps=[Step(0, screenshot=str(d / "frames" / "0.png")), Step(1, screenshot=str(outside))],
                      video=VideoRef(str(d / "video.mp4"), 10.0, 5, 32, 24))
    native.save(traj, d)
    doc = json.loads((d / native.FILENAME).read_text())
    assert doc["steps"][0]["screenshot"] == "frames/0.png"
    assert doc["steps"][1]["screenshot"] == "../elsewhere/1.png"
    assert doc["video"]["path"] == "video.mp4"
    back = native.load(d)
    assert back.steps[1].screenshot == str(outside) and back.video.path == str(d / "video.mp4")
    assert back.warnings == []
    # copy_media makes the directory self-contained.
    d2 = tmp_path / "copy"
    native.save(traj, d2, copy_media=True)
    doc = json.loads((d2 / native.FILENAME).read_text())
    assert doc["steps"][1]["screenshot"] == "frames/1.png" and (d2 / "frames" / "1.png").is_file()


def test_missing_media_are_warnings(tmp_path):
    traj = Trajectory(id="w", steps=[Step(0, screenshot=str(tmp_path / "gone.png"))],
                      video=VideoRef(str(tmp_path / "gone.mp4")))
    native.save(traj, tmp_path)
    back = native.load(tmp_path)
    assert back.steps[0].screenshot == str(tmp_path / "gone.png")
    assert any("field 'steps[0].screenshot': file not found" in w for w in back.warnings)
    assert any("field 'video.path': file not found" in w for w in back.warnings)


def _doc(**over):
    doc = {"schema_version": 1, "id": "x", "steps": [{"index": 0, "action": "click"}, {"index": 1}]}
    doc.update(over)
    return doc


@pytest.mark.parametrize("doc,field", [
    (_doc(steps=[{"index": 0, "t_start": -1}]), "steps[0].t_start"),
    (_doc(steps=[{"index": 0}, {"index": 1, "action_type": "teleport"}]), "steps[1].action_type"),
    (_doc(steps=[{"index": 0, "align_confidence": 1.5}]), "steps[0].align_confidence"),
    (_doc(steps=[{"index": 0, "colour": "red"}]), "steps[0].colour"),
    (_doc(steps=[{"action": "x"}]), "steps[0].index"),
    (_doc(steps=[{"index": 0}, {"index": 2}]), "steps[1].index"),
    (_doc(outcome={"success": "yes"}), "outcome.success"),
    (_doc(outcome={"source": "oracle"}), "outcome.source"),
    (_doc(video={"path": "v.mp4", "fps": 0}), "video.fps"),
    (_doc(schema_version=2), "schema_version"),
    ({"schema_version": 1, "steps": []}, "id"),
    (_doc(id=""), "id"),
])
def test_validation_errors_name_the_field(tmp_path, doc, field):
    (tmp_path / native.FILENAME).write_text(json.dumps(doc))
    with pytest.raises(TrajectoryFormatError) as exc:
        native.load(tmp_path)
    assert exc.value.field == field
    assert exc.value.path == str(tmp_path / native.FILENAME)
    assert f"field '{field}'" in str(exc.value)


def test_bad_json_names_the_line(tmp_path):
    text = json.dumps(_doc(), indent=1)
    (tmp_path / native.FILENAME).write_text(text[:-10])
    with pytest.raises(TrajectoryFormatError) as exc:
        native.load(tmp_path)
    assert exc.value.line is not None and exc.value.line > 1 and "invalid JSON" in exc.value.reason
    (tmp_path / native.FILENAME).write_text("[1, 2]")
    with pytest.raises(TrajectoryFormatError) as exc:
        native.load(tmp_path)
    assert exc.value.field == "(root)"


def test_save_refuses_invalid_and_keeps_what_was_saved(tmp_path):
    good = Trajectory(id="keep", steps=[Step(0, action="click")])
    native.save(good, tmp_path)
    before = (tmp_path / native.FILENAME).read_bytes()
    for bad, field in [(Trajectory(id="bad", steps=[Step(0, t_start=math.nan)]), "steps[0].t_start"),
                       (Trajectory(id="bad", steps=[Step(0, extra={"v": math.inf})]), "steps[0].extra.v"),
                       (Trajectory(id="bad", steps=[Step(0, t_start=-2.0)]), "steps[0].t_start"),
                       (Trajectory(id="bad", steps=[Step(1)]), "steps[0].index")]:
        with pytest.raises(TrajectoryFormatError) as exc:
            native.save(bad, tmp_path)
        assert exc.value.field == field
        assert (tmp_path / native.FILENAME).read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [native.FILENAME]  # no temp file left behind
    assert native.load(tmp_path).id == "keep"


def test_save_is_atomic_when_the_write_fails(tmp_path, monkeypatch):
    native.save(Trajectory(id="keep"), tmp_path)
    before = (tmp_path / native.FILENAME).read_bytes()

    def boom(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        native.save(Trajectory(id="new", steps=[Step(0)]), tmp_path)
    assert (tmp_path / native.FILENAME).read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [native.FILENAME]
