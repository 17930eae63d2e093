"""The converter: a native trajectory written as an OSWorld result folder and as an ATIF trial, read back by the
importers (format detected by content) with the same steps, actions, screenshots and outcome."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from gui_app import cli
from gui_app.training import convert
from gui_app.core.trajectory import formats
from gui_app.core.trajectory.formats import native
from gui_app.recorders.miniwob import write_episode

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "resources" / "samples" / "miniwob" / "login-user-success"

# (native action, action_type, x, y, text): every kind the recorders write.
PLAN = [
    ("move(x=40, y=90)", "move", 40.0, 90.0, None),
    ("click(x=42, y=91)", "click", 42.0, 91.0, None),
    ('type("kasie")', "type", None, None, "kasie"),
    ('press("Ctrl+a")', "key", None, None, "Ctrl+a"),
    ('press("Enter")', "key", None, None, "Enter"),
    ("scroll(x=80, y=150, dy=100)", "scroll", 80.0, 150.0, None),
    ("WAIT", "wait", None, None, None),
    ("click(x=120, y=300)", "click", 120.0, 300.0, None),
    ("DONE", "done", None, None, None),
]


@pytest.fixture
def episode(tmp_path) -> Path:
    rng = np.random.default_rng(1)
    frames = [rng.integers(0, 255, (420, 320, 3), dtype=np.uint8) for _ in range(len(PLAN) + 1)]
    cleans = [f.copy() for f in frames]
    for f in frames:
        f[:10, :10] = 0  # "the pointer": only in the recording, never in the clean screenshots
    steps = []
    for k, (action, atype, x, y, text) in enumerate(PLAN):
        steps.append({"index": k, "t_start": float(k), "t_end": float(k + 1), "action": action, "action_type": atype,
                      "x": x, "y": y, "text": text, "screenshot": f"frames/step_{k:03d}.png",
                      "extra": {"target": "t", "t_wall_start": 0.4 * k, "t_wall_end": 0.4 * k + 0.3}})
    md = {"task": "login-user", "seed": 3, "agent": "scripted-v2", "raw_reward": 1.0, "first_error_step": None,
          "started_at": "2026-11-21T10:00:00+00:00", "negative_kind": "none"}
    out = tmp_path / "native" / "login-user-s3"
    write_episode(out, "login-user", 3, "Enter the username \"kasie\" and press login.", frames, steps, True, 1.0,
                  md, cleans=cleans, agent="scripted-v2", traj_id="miniwob-login-user-s3-b")
    return out


def test_osworld_layout_is_what_osworld_writes(episode, tmp_path):
    traj = native.load(episode)
    run = convert.to_osworld(traj, tmp_path / "ow")
    eid = convert.example_id(traj.id)
    assert run == tmp_path / "ow" / "results" / "pyautogui" / "screenshot" / "scripted-v2" / "miniwob" / eid
    lines = [json.loads(x) for x in (run / "traj.jsonl").read_text().splitlines()]
    assert [x["step_num"] for x in lines] == list(range(1, len(PLAN) + 1))
    assert set(lines[0]) == {"step_num", "action_timestamp", "action", "response", "reward", "done", "info",
                             "screenshot_file"}
    assert lines[0]["action_timestamp"] == "20261121@100000000000"
    assert lines[1]["action_timestamp"] == "20261121@100000400000"
    for x in lines:
        assert x["screenshot_file"] == f"step_{x['step_num']}_{x['action_timestamp']}.png"
        assert (run / x["screenshot_file"]).is_file()
    assert [x["action"] for x in lines] == [
        "pyautogui.moveTo(40, 90)", "pyautogui.click(42, 91)", "pyautogui.typewrite('kasie')",
        "pyautogui.hotkey('ctrl', 'a')", "pyautogui.press('enter')", "pyautogui.scroll(-5, x=80, y=150)", "WAIT",
        "pyautogui.click(120, 300)", "DONE"]
    assert lines[-1]["done"] is True and not any(x["done"] for x in lines[:-1])
    assert (run / "result.txt").read_text() == "1.0\n"
    # Screenshots are the clean screens (no pointer), as OSWorld's are; the recording shows the pointer.
    shot = cv2.imread(str(run / lines[0]["screenshot_file"]))
    assert shot[:10, :10].any()
    # The task config sits where OSWorld keeps it, relative to the same root.
    cfg = json.loads((tmp_path / "ow" / "evaluation_examples" / "examples" / "miniwob" / f"{eid}.json").read_text())
    assert cfg["id"] == eid and cfg["instruction"] == traj.instruction and cfg["snapshot"] == "miniwob"


def test_the_runs_own_screenshots_can_be_kept_so_only_the_layout_differs(episode, tmp_path):
    """bench/format_agreement.py compares layouts on the same pixels: ``clean=False`` keeps the pointer drawn."""
    traj = native.load(episode)
    run = convert.convert(traj, "osworld", tmp_path / "ow", clean=False)
    first = sorted(run.glob("step_1_*.png"))[0]
    assert not cv2.imread(str(first))[:10, :10].any()  # the run's own screenshot: the pointer is there
    atif = convert.convert(traj, "atif", tmp_path / "atif", clean=False)
    own = [cv2.imread(str(atif.parent / "images" / n)) for n in ("initial.png", "step_1.png")]
    assert all(not img[:10, :10].any() for img in own)
    clean = convert.convert(traj, "atif", tmp_path / "atif-clean")
    assert cv2.imread(str(clean.parent / "images" / "step_1.png"))[:10, :10].any()


def test_both_layouts_import_back_alike(episode, tmp_path, capsys):
    traj = native.load(episode)
    run = convert.to_osworld(traj, tmp_path / "ow")
    atif_file = convert.to_atif(traj, tmp_path / "atif")
    assert atif_file == tmp_path / "atif" / traj.id / "agent" / "trajectory.json"
    ow = formats.load(run)
    at = formats.load(atif_file)
    assert formats.detect(run).name == "osworld" and formats.detect(atif_file).name == "atif"
    assert ow.n_steps == at.n_steps == traj.n_steps
    assert ow.outcome.success is at.outcome.success is True
    assert at.instruction == traj.instruction
    for a, b, c in zip(traj.steps, ow.steps, at.steps, strict=True):
        # pyautogui.hotkey('ctrl', 'a') reads as a hotkey, the computer tool's key "ctrl+a" as a key: one kind.
        kinds = {t if t != "hotkey" else "key" for t in (a.action_type, b.action_type, c.action_type)}
        assert len(kinds) == 1, (a.action, b.action, c.action)
        if a.x is not None:
            assert (b.x, b.y) == (c.x, c.y) == (a.x, a.y)
        assert b.screenshot and c.screenshot
        same = cv2.imread(b.screenshot).astype(int) - cv2.imread(c.screenshot).astype(int)
        assert not same.any(), "the two layouts must show the same screens"
    assert [s.text for s in at.steps if s.action_type == "type"] == ["kasie"]
    doc = json.loads(atif_file.read_text())
    assert doc["schema_version"] == "ATIF-v1.6" and doc["steps"][0]["source"] == "user"
    assert doc["steps"][0]["message"][1]["source"]["path"] == "images/initial.png"
    # The recording is a real-time screen recording: longer than one frame per step.
    with_video = formats.load(run)
    assert with_video.video is not None and with_video.video.frames >= traj.n_steps + 1
    # A failure writes 0.0 and reward 0.0.
    traj.outcome.success = False
    run = convert.to_osworld(traj, tmp_path / "ow2")
    assert (run / "result.txt").read_text() == "0.0\n"
    assert formats.load(convert.to_atif(traj, tmp_path / "at2")).outcome.success is False


def test_convert_command_on_a_recorded_sample(tmp_path, capsys):
    src = tmp_path / "runs" / SAMPLE.name
    shutil.copytree(SAMPLE, src)
    for fmt in ("osworld", "atif"):
        capsys.readouterr()
        assert cli.main(["convert", str(tmp_path / "runs"), "--to", fmt, "--out", str(tmp_path / fmt), "--json"]) == 0
        written = json.loads(capsys.readouterr().out)["written"]
        assert len(written) == 1
        assert cli.main(["inspect", written[0], "--json"]) == 0
        info = json.loads(capsys.readouterr().out)
        assert info["format"] == fmt
        assert info["n_steps"] == native.load(src).n_steps
        assert info["outcome"]["success"] is True
        assert all(s["screenshot"] for s in info["steps"])
    (tmp_path / "empty").mkdir()
    capsys.readouterr()
    assert cli.main(["convert", str(tmp_path / "empty"), "--to", "atif", "--out", str(tmp_path / "x")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no trajectory found" in err[0]
