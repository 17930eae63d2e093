"""Plain recordings with a step log, and folders of screenshots."""

from __future__ import annotations

import json
import shutil

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import image_folder, plain_video


@pytest.mark.parametrize("log,codec", [("csv", "h264"), ("jsonl", "mp4v")])
def test_video_with_step_log(tmp_path, log, codec):
    run = b.plain_video_dir(tmp_path / "rec", log=log, codec=codec)
    traj = formats.load(run["path"])
    assert formats.detect(run["path"]).name == "plain_video"
    assert (traj.id, traj.source_format) == ("rec", "plain_video")
    assert traj.instruction == "Write hello and confirm"
    assert (traj.outcome.success, traj.outcome.score, traj.outcome.source) == (True, 1.0, "env")
    assert (traj.app, traj.os, traj.metadata["task"]) == ("gedit", "ubuntu", "write-hello")
    v = traj.video
    assert (v.path, v.fps, v.frames, v.width, v.height) == (str(run["video"]), 10.0, 50, 320, 240)
    assert [s.t_start for s in traj.steps] == [0.0, 1.5, 3.0]
    # t_end: stored when given (the JSONL gives step 1 an end), else the next start, the last one the video's end
    ends = [1.5, 2.5, 5.0] if log == "jsonl" else [1.5, 3.0, 5.0]
    assert [s.t_end for s in traj.steps] == ends
    assert all(s.align_method == "stored" and s.align_confidence == 1.0 for s in traj.steps)
    assert [s.action_type for s in traj.steps] == ["click", "type", "key"]
    assert (traj.steps[0].x, traj.steps[0].y, traj.steps[1].text) == (100.0, 60.0, "hello")
    assert [s.thought for s in traj.steps] == [t for _, _, t in b.PLAIN_STEPS]
    if log == "csv":
        assert traj.steps[0].screenshot == str(run["path"] / "shots" / "s0.png")
    assert traj.warnings == []
    assert traj.alignment_summary() == {"method": "stored", "mean_confidence": 1.0, "low_confidence_steps": [],
                                         "offset": None}
    assert traj.duration == 5.0


def test_detected_by_content_not_names(tmp_path):
    run = b.plain_video_dir(tmp_path / "r", log="jsonl", video_name="screen.bin", log_name="events.jsonl")
    assert formats.detect(run["path"]).name == "plain_video"
    traj = formats.load(run["path"])
    assert traj.video.path == str(run["path"] / "screen.bin") and traj.n_steps == 3
    # A lone video file with its log beside it.
    assert formats.detect(run["video"]).name == "plain_video"
    assert formats.load(run["video"]).id == "screen"


def test_video_without_log_and_step_after_end(tmp_path):
    run = b.plain_video_dir(tmp_path / "a", meta=False)
    (run["path"] / "steps.csv").unlink()
    assert plain_video.IMPORTER.sniff(run["path"]) == 0.3
    traj = formats.load(run["path"])
    assert traj.n_steps == 0 and any("no step log" in w for w in traj.warnings)
    run = b.plain_video_dir(tmp_path / "b", log="jsonl", meta=False)
    with open(run["path"] / "steps.jsonl", "a") as fh:
        fh.write(json.dumps({"index": 3, "t_start": 7.5, "action": "wait()"}) + "\n")
    traj = formats.load(run["path"])
    assert traj.steps[3].t_end == 7.5
    assert any("steps.jsonl:4: field 't_start': 7.5 s is after the end of the video" in w for w in traj.warnings)


def test_video_that_will_not_open(tmp_path, inspect_fails):
    run = b.plain_video_dir(tmp_path / "r")
    data = run["video"].read_bytes()
    run["video"].write_bytes(data[:64])  # header of an MP4, body gone
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert (exc.value.path, exc.value.field) == (str(run["video"]), "video")
    assert f"{run['video']}: field 'video'" in inspect_fails(run["path"])


@pytest.mark.parametrize("row,field,line", [
    ("3,abc,x,y,", "t_start", 5),
    ("3,-1,x,y,", "t_start", 5),
    ("3,2.0,x,y,", "t_start", 5),  # starts before the previous step
    ("two,4.0,x,y,", "index", 5),
    ("2,4.0,x,y,", "index", 5),  # index repeats
])
def test_bad_csv_rows_name_line_and_field(tmp_path, row, field, line):
    run = b.plain_video_dir(tmp_path / "r")
    with open(run["path"] / "steps.csv", "a") as fh:
        fh.write(row + "\n")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(run["path"] / "steps.csv"), line, field)


def test_bad_jsonl_rows(tmp_path):
    run = b.plain_video_dir(tmp_path / "r", log="jsonl")
    log = run["path"] / "steps.jsonl"
    lines = log.read_text().splitlines()
    log.write_text("\n".join([lines[0], '{"index": 1, "action": "x"}', lines[2]]) + "\n")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert (exc.value.line, exc.value.field) == (2, "t_start")
    log.write_text("\n".join([lines[0], lines[1][:20], lines[2]]) + "\n")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert exc.value.line == 2 and "invalid JSON" in exc.value.reason
    log.write_text("\n".join([lines[0], json.dumps({"start": 1.0, "t_end": 0.5}), lines[2]]) + "\n")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert (exc.value.line, exc.value.field) == (2, "t_end")


def test_clock_times_are_accepted(tmp_path):
    run = b.plain_video_dir(tmp_path / "r", log="jsonl")
    recs = [{"time": "00:00:00.5", "action": "a"}, {"time": "0:02.25", "action": "b"}]
    (run["path"] / "steps.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    traj = formats.load(run["path"])
    assert [s.t_start for s in traj.steps] == [0.5, 2.25]


def test_image_folder_natural_order(tmp_path, inspect_json):
    run = b.image_folder(tmp_path / "shots")
    assert formats.detect(run["path"]).name == "image_folder"
    traj = formats.load(run["path"])
    assert [s.screenshot for s in traj.steps] == [str(run["path"] / n) for n in ("shot_1.png", "shot_2.png",
                                                                                 "shot_10.png")]
    assert traj.id == "shots" and traj.video is None and traj.warnings == []
    info = inspect_json(run["path"])
    assert info["format"] == "image_folder" and info["n_steps"] == 3


def test_image_folder_with_log_and_partial(tmp_path):
    run = b.image_folder(tmp_path / "f", log=True)
    traj = formats.load(run["path"])
    assert [s.action_type for s in traj.steps] == ["click"] * 3
    assert [s.x for s in traj.steps] == [10.0, 20.0, 30.0]
    assert traj.steps[2].screenshot.endswith("shot_10.png")
    with open(run["path"] / "steps.jsonl", "a") as fh:
        fh.write(json.dumps({"action": "DONE", "screenshot": "final.png"}) + "\n")
    traj = formats.load(run["path"])
    assert traj.steps[3].action_type == "done" and traj.steps[3].screenshot is None
    assert any("steps.jsonl:4: field 'screenshot': file not found" in w for w in traj.warnings)


def test_image_folder_loses_to_specific_formats_and_trees(tmp_path):
    run = b.image_folder(tmp_path / "tree" / "a")
    b.image_folder(tmp_path / "tree" / "b")
    assert image_folder.IMPORTER.sniff(tmp_path / "tree") == 0.0  # a tree of units, not a unit
    shutil.copy(run["path"] / "shot_1.png", tmp_path / "tree" / "cover.png")
    assert image_folder.IMPORTER.sniff(tmp_path / "tree") == 0.0
    assert [p.name for p, _ in formats.find_units(tmp_path / "tree")] == ["a", "b"]
    osw = b.osworld_dir(tmp_path / "o", video=None)
    assert image_folder.IMPORTER.sniff(osw["path"]) == 0.2  # it has PNGs, but OSWorld is surer
    assert formats.detect(osw["path"]).name == "osworld"
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.png").write_text("not an image")
    assert formats.detect(tmp_path / "empty") is None


def test_inspect_contract_with_stored_times(tmp_path, inspect_json):
    run = b.plain_video_dir(tmp_path / "rec")
    info = inspect_json(run["path"])
    assert (info["id"], info["format"], info["n_steps"]) == ("rec", "plain_video", 3)
    assert info["video"] == {"path": str(run["video"]), "fps": 10.0, "frames": 50, "width": 320, "height": 240}
    assert info["alignment"] == {"method": "stored", "mean_confidence": 1.0, "low_confidence_steps": [],
                                 "offset": None}
    assert [(s["t_start"], s["t_end"]) for s in info["steps"]] == [(0.0, 1.5), (1.5, 3.0), (3.0, 5.0)]
    assert info["outcome"] == {"success": True, "score": 1.0, "source": "env"}


@pytest.mark.parametrize("meta,field", [({"success": "yes"}, "success"), ({"score": "high"}, "score"),
                                        ({"success": True, "outcome_source": "oracle"}, "outcome_source"),
                                        ({"app": 3}, "app")])
def test_bad_meta_names_file_and_field(tmp_path, meta, field):
    run = b.plain_video_dir(tmp_path / "r", meta=False)
    (run["path"] / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert (exc.value.path, exc.value.field) == (str(run["path"] / "meta.json"), field)
