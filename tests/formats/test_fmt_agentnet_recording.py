"""Raw AgentNet recordings (OpenCUA's annotation tool): a real human demonstration, trimmed (see the fixture's
README), read with step times from the shared performance counter."""

from __future__ import annotations

import json
import shutil

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import agentnet_recording as ar

RAW = b.REAL / "opencua" / "agentnet_raw" / "20241106114028_e0599885@gmail.com_2c05b837-faae-4b35-8e89-71d4bc2cab66"


def test_real_recording_loads_with_steps_timed_by_the_counter(inspect_json):
    assert formats.detect(RAW).name == "agentnet_recording"
    traj = formats.load(RAW)
    meta = json.loads((RAW / "metadata.json").read_text())
    reduced = [json.loads(line) for line in (RAW / "reduced_events_complete.jsonl").read_text().splitlines()]
    assert traj.instruction.startswith("Open the system display settings, adjust the system brightness to 78")
    assert traj.os == "Windows" and traj.metadata["screen_width"] == 1366
    assert traj.video is not None and traj.video.width == 640 and traj.video.frames == 260
    assert traj.n_steps == 5 == len(reduced)
    t0 = meta["video_start_timestamp"]
    assert [s.t_start for s in traj.steps] == pytest.approx([r["start_time"] - t0 for r in reduced])
    assert traj.steps[0].t_start == pytest.approx(7.0233, abs=1e-3)  # 30680.627 - 30673.604
    assert [s.t_end for s in traj.steps[:-1]] == [s.t_start for s in traj.steps[1:]]
    assert traj.steps[-1].t_end == pytest.approx(26.0, abs=0.05)  # the last step runs to the end of the video
    assert {(s.align_method, s.align_confidence) for s in traj.steps} == {("timestamp", 1.0)}
    assert [s.action_type for s in traj.steps] == ["click", "right_click", "click", "drag", "click"]
    first = traj.steps[0]
    assert first.action == "pyautogui.click(x=1328, y=745)"
    assert (first.x, first.y) == pytest.approx((1328 / 1366, 745 / 768)) and first.extra["coords"] == "normalized"
    assert first.extra["natural_language_action"] == "Click on Action Centre"
    assert first.extra["target"]["title"] == "Action Centre, No new notifications (Off)"
    assert traj.steps[3].action.endswith("pyautogui.dragTo(x=561, y=213, button='left')")
    assert traj.warnings == []
    info = inspect_json(RAW)
    assert info["format"] == "agentnet_recording" and info["alignment"] == {"method": "timestamp",
                                                                           "mean_confidence": 1.0,
                                                                           "low_confidence_steps": [], "offset": None}


@pytest.mark.parametrize("desc,extra,expected", [
    ("Single left Click", {"coordinate": {"x": 3, "y": 4}}, "pyautogui.click(x=3, y=4)"),
    ("Double left Click", {"coordinate": {"x": 3, "y": 4}}, "pyautogui.doubleClick(x=3, y=4)"),
    ("Scroll ⬇️×3  ", {"trace": [{"x": 541, "y": 602, "dx": 0, "dy": -1}]}, "pyautogui.scroll(-3, x=541, y=602)"),
    ("Scroll ⬆️×2 ➡️×1", {}, "pyautogui.scroll(2)\npyautogui.hscroll(1)"),
    ("Type: hello world$enter$", {}, "pyautogui.write(message='hello world')\npyautogui.press('enter')"),
    ("Press: $ctrl$ + c", {}, "pyautogui.hotkey('ctrl', 'c')"),
    ("Press: enter", {}, "pyautogui.press('enter')"),
])
def test_descriptions_become_pyautogui(desc, extra, expected):
    assert ar.pyautogui_action({"description": desc, **extra}) == expected


def test_recording_without_reduced_events_is_reported(tmp_path):
    """Before the annotation tool's reduce pass there are only raw input events: load, say so, show the video."""
    rec = tmp_path / "rec"
    shutil.copytree(RAW, rec)
    for name in ar.REDUCED:
        (rec / name).unlink()
    traj = formats.load(rec)
    assert formats.detect(rec).name == "agentnet_recording"
    assert traj.n_steps == 0 and traj.video is not None
    assert any("no reduced_events_*.jsonl" in w and "610 raw input events" in w for w in traj.warnings)


def test_bad_metadata_names_the_field(tmp_path):
    rec = tmp_path / "rec"
    shutil.copytree(RAW, rec)
    meta = json.loads((rec / "metadata.json").read_text())
    meta["video_start_timestamp"] = "soon"
    (rec / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(rec)
    assert (exc.value.path, exc.value.field) == (str(rec / "metadata.json"), "video_start_timestamp")
