"""Inspect AI ``.eval`` logs: Inspect's own test logs (real, copied unchanged) and a computer-use log written the
way its recorder writes one."""

from __future__ import annotations

import json
import zipfile

import builders as b
import cv2
import numpy as np
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import inspect_eval

REAL = b.REAL / "inspect"


def test_real_logs_are_detected_and_every_sample_loads():
    expected = {"log_message_deduplication.eval": 1, "log_streaming.eval": 4, "custom.eval": 1,
                "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval": 10}
    for name, n in expected.items():
        path = REAL / name
        assert formats.detect(path).name == "inspect", name
        trajs = formats.load_all(path)
        assert len(trajs) == n, name
        assert all(t.source_format == "inspect" and t.instruction for t in trajs)
    assert sorted(p.name for p, _ in formats.find_units(REAL)) == sorted(expected)


def test_real_tool_calls_become_steps():
    traj = formats.load(REAL / "log_message_deduplication.eval")
    assert traj.instruction == "Guess the number" and traj.id == "0_epoch_1"
    assert traj.metadata["task"] == "inspect_test_utils/guess_number"
    assert traj.n_steps == 6  # five bash calls, then the final answer
    assert traj.steps[0].action == "bash(cmd='ls')" and traj.steps[0].extra["observation"].startswith("bin\nboot")
    assert (traj.steps[-1].action, traj.steps[-1].action_type) == ("done", "done")  # the final reply: "done"
    assert (traj.outcome.success, traj.outcome.score, traj.outcome.source) == (False, 0.0, "env")


def test_real_scores_epochs_and_order():
    pop = formats.load_all(REAL / "2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval")
    # Ordered by sample id (the archive holds them in the order they finished), grades read as Inspect does.
    assert [t.metadata["sample_id"] for t in pop] == list(range(1, 11))
    assert [t.outcome.success for t in pop] == [True, True, False, True, True, True, False, True, True, True]
    assert pop[0].agent == "openai/gpt-4o-mini" and pop[0].metadata["scorer"] == "match"
    streaming = formats.load_all(REAL / "log_streaming.eval")
    assert sorted((t.metadata["sample_id"], t.metadata["epoch"]) for t in streaming) == [(1, 1), (1, 2), (2, 1), (2, 2)]
    assert len({t.id for t in streaming}) == 4
    graded = formats.load(REAL / "custom.eval")
    assert (graded.outcome.success, graded.outcome.source) == (True, "model")  # model_graded_fact


def test_computer_use_screenshots_from_tool_results(tmp_path, inspect_json):
    (tmp_path / "logs").mkdir()
    run = b.inspect_computer_eval(tmp_path / "logs" / "2025-10-06T10-15-43_open-settings_FhdYWFJ.eval")
    path = run["path"]
    assert formats.detect(path).name == "inspect"
    first, second = formats.load_all(path)
    assert (first.id, second.id) == ("1_epoch_1", "2_epoch_1")  # by id, not by zip order
    assert first.instruction == run["instruction"]
    assert second.instruction == run["instruction"] * 3  # an input moved to attachments is resolved
    assert [s.action_type for s in first.steps] == ["click", "type", "key", "message"]
    assert (first.steps[0].x, first.steps[0].y) == (1305.0, 393.0)
    assert first.steps[0].action == "computer(action='left_click', coordinate=[1305, 393])"
    assert first.steps[0].thought == "step 0: left_click next\n\nI will left_click."
    assert first.steps[0].extra["observation"] == "left_click done"
    assert (first.outcome.success, second.outcome.success) == (True, False)
    # Each screenshot is the screen after the action, written once to the cache as a real PNG.
    for k, step in enumerate(first.steps[:3]):
        img = cv2.imread(step.screenshot)
        assert img is not None and np.array_equal(img, b.screen(run["shots"][0][k + 1]))
        assert step.extra["screenshot_timing"] == "after_action"
    assert cv2.imread(first.metadata["initial_screenshot"]) is not None
    again = formats.load(path)
    assert [s.screenshot for s in again.steps] == [s.screenshot for s in first.steps]
    # FILE#N reads that sample alone.
    assert formats.load(f"{path}#1").id == "2_epoch_1"
    with pytest.raises(TrajectoryFormatError, match="has 2 samples, no #5"):
        formats.load(f"{path}#5")
    info = inspect_json(f"{path}#0")
    assert info["format"] == "inspect" and info["n_steps"] == 4 and info["steps"][0]["screenshot"]
    # A listing (as a scan does) writes no image.
    listed = formats.load_all(path, align=False)
    assert all(s.screenshot is None for t in listed for s in t.steps)


def test_a_running_eval_has_no_header(tmp_path):
    run = b.inspect_computer_eval(tmp_path / "running.eval", header=False)
    trajs = formats.load_all(run["path"])
    assert [t.id for t in trajs] == ["1_epoch_1", "2_epoch_1"]
    assert trajs[0].metadata["status"] == "started"


def test_bad_archives_and_samples(tmp_path):
    notzip = tmp_path / "x.eval"
    notzip.write_text("{}")
    assert inspect_eval.IMPORTER.sniff(notzip) == 0.0
    run = b.inspect_computer_eval(tmp_path / "a.eval")
    broken = tmp_path / "b.eval"
    with zipfile.ZipFile(run["path"]) as src, zipfile.ZipFile(broken, "w") as dst:
        for n in src.namelist():
            data = src.read(n)
            if n == "samples/2_epoch_1.json":
                data = data[: len(data) // 2]
            dst.writestr(n, data)
    trajs = formats.load_all(broken)
    assert [t.id for t in trajs] == ["1_epoch_1"]  # the readable sample loads; the other is a warning
    assert any("samples/2_epoch_1.json" in w and "invalid JSON" in w for w in trajs[0].warnings)
    empty = tmp_path / "empty.eval"
    with zipfile.ZipFile(empty, "w") as z:
        z.writestr("samples/1_epoch_1.json", json.dumps({"id": 1}))
    with pytest.raises(TrajectoryFormatError, match="header.json"):
        inspect_eval.IMPORTER.load_all(empty)


@pytest.mark.parametrize("value,expected", [("C", 1.0), ("I", 0.0), ("P", 0.5), (0.25, 0.25), (True, 1.0),
                                            ("yes", 1.0), ("maybe", None), ({"a": 1}, None)])
def test_score_values(value, expected):
    assert inspect_eval.score_value(value) == expected
