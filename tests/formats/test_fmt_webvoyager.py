"""WebVoyager result folders: the real examples of MinorJerry/WebVoyager, and every kind of turn run.py writes."""

from __future__ import annotations

import json
import os
import shutil

import builders as b
import pytest

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory import formats
from gui_app.core.trajectory.formats import webvoyager

REAL = b.REAL / "webvoyager"
RUN = REAL / "results" / "examples" / "taskWolfram Alpha--6"
QUES = "Simplify x^5-20x^4+163x^3-676x^2+1424x-1209 so that it has fewer items."


def test_real_run_in_the_repository_layout(inspect_json):
    assert formats.detect(RUN).name == "webvoyager"
    assert formats.detect(RUN / "interact_messages.json").name == "webvoyager"
    traj = formats.load(RUN)
    assert (traj.id, traj.source_format, traj.app) == ("Wolfram Alpha--6", "webvoyager", "Wolfram Alpha")
    # The task from the repository's task list, which the run sits under (data/ three folders up).
    assert traj.instruction == QUES and traj.instruction_source == "task_config"
    assert traj.metadata["task_config"] == str(REAL / "data" / "WebVoyager_data.jsonl")
    assert traj.metadata["web"] == "https://www.wolframalpha.com/"
    assert (traj.metadata["task"], traj.metadata["run_folder"]) == ("Wolfram Alpha--6", "taskWolfram Alpha--6")
    assert [s.action for s in traj.steps] == ["Type [8]; x^5-20x^4+163x^3-676x^2+1424x-1209", "Scroll [WINDOW]; down",
                                              "ANSWER; (x - 4)^5 + 3(x - 4)^3 + 7"]
    assert [s.action_type for s in traj.steps] == ["type", "scroll", "message"]
    assert traj.steps[0].text == "x^5-20x^4+163x^3-676x^2+1424x-1209" and traj.steps[0].extra["element"] == 8
    assert (traj.steps[1].extra["element"], traj.steps[1].extra["direction"]) == ("WINDOW", "down")
    assert traj.steps[0].thought.startswith("In order to submit the algebraic expression")
    assert traj.steps[2].thought.startswith('The screenshot now shows the section of the Wolfram Alpha results titled')
    assert [s.screenshot for s in traj.steps] == [str(RUN / f"screenshot{k}.png") for k in (1, 2, 3)]
    assert all(s.extra["screenshot_timing"] == "before_action" for s in traj.steps)
    assert traj.metadata["answer"] == "(x - 4)^5 + 3(x - 4)^3 + 7"
    assert traj.metadata["reference_answer"] == "7 + 3 (-4 + x)^3 + (-4 + x)^5"
    assert traj.metadata["reference_answer_type"] == "golden"
    assert traj.outcome.success is None and traj.warnings == []  # the repository commits no verdicts
    info = inspect_json(RUN)
    assert (info["instruction"], info["instruction_source"], info["n_steps"]) == (QUES, "task_config", 3)


def test_real_run_alone_takes_its_task_from_the_first_message(tmp_path):
    alone = tmp_path / "downloads" / RUN.name
    shutil.copytree(RUN, alone)
    traj = formats.load(alone)
    assert traj.instruction == QUES and traj.instruction_source == "transcript"
    assert traj.metadata["web"] == "https://www.wolframalpha.com/" and "task_config" not in traj.metadata
    assert "reference_answer" not in traj.metadata and traj.warnings == []
    # A reference file in the run, as one answer or the repository's per-site file, is read too.
    (alone / "reference_answer.json").write_text(json.dumps({"ans": "(x-4)^5+3(x-4)^3+7"}))
    assert formats.load(alone).metadata["reference_answer"] == "(x-4)^5+3(x-4)^3+7"


def test_real_tree_is_one_unit_and_the_task_list_is_a_tasks_root(tmp_path, inspect_json):
    assert [p for p, _ in formats.find_units(REAL)] == [RUN]
    alone = tmp_path / RUN.name
    shutil.copytree(RUN, alone)
    (alone / "interact_messages.json").write_text(
        (RUN / "interact_messages.json").read_text().replace("Now given a task:", "Given:"))
    traj = formats.load(alone)
    assert traj.instruction == "" and traj.instruction_source is None
    assert any("no instruction" in w for w in traj.warnings)
    info = inspect_json(alone, "--tasks-root", str(REAL))
    assert (info["instruction"], info["instruction_source"]) == (QUES, "task_config")


def test_every_kind_of_turn(tmp_path):
    run = b.webvoyager_dir(tmp_path)
    traj = formats.load(run["path"])
    assert traj.id == "Amazon--0" and traj.instruction_source == "task_config"
    assert traj.instruction == run["task"]["ques"] and traj.metadata["web"] == run["task"]["web"]
    assert [s.action_type for s in traj.steps] == ["type", "other", "click", "scroll", "navigate", "navigate", "wait",
                                                   "message"]
    assert [s.extra.get("webvoyager_action") for s in traj.steps] == \
        ["type", None, "click", "scroll", "go_back", "google", "wait", "answer"]
    assert traj.steps[5].text == "https://www.google.com/" and traj.steps[2].extra["element"] == 12
    # The reply without Thought/Action: its words are the thought, the harness's answer is kept with it.
    assert traj.steps[1].action == "" and traj.steps[1].thought == "I should open the first result."
    assert traj.steps[1].extra["feedback"].startswith("Format ERROR")
    # Iteration 3 took no screenshot (it answered the bad reply); the clipped first observation had one.
    assert [s.extra["iteration"] for s in traj.steps] == list(range(1, 9))
    shots = [None if s.screenshot is None else os.path.basename(s.screenshot) for s in traj.steps]
    assert shots == [None if k == 3 else f"screenshot{k}.png" for k in range(1, 9)]
    assert traj.metadata["answer"] == "Xbox Core Wireless Controller – Velocity Green, 4.6 stars"
    assert traj.metadata["reference_answer"].startswith("'Xbox Core Wireless Gaming Controller")
    assert traj.metadata["reference_answer_type"] == "possible" and traj.warnings == []


def test_a_task_list_that_disagrees_with_the_message_loses(tmp_path):
    run = b.webvoyager_dir(tmp_path)
    data = tmp_path / "data" / "WebVoyager_data.jsonl"
    data.write_text(json.dumps({**run["task"], "ques": "Find a red controller."}) + "\n")
    traj = formats.load(run["path"])
    assert traj.instruction == run["task"]["ques"] and traj.instruction_source == "transcript"
    (warning,) = traj.warnings
    assert warning.startswith(f"{data}: field 'ques': task Amazon--0 there is not the one the agent was given")


def test_missing_and_outside_screenshots_are_warnings(tmp_path):
    run = b.webvoyager_dir(tmp_path, data=False)
    (run["path"] / "screenshot2.png").unlink()
    (run["path"] / "screenshot4.png").unlink()
    os.symlink("/etc/hostname", run["path"] / "screenshot4.png")
    traj = formats.load(run["path"])
    assert traj.steps[1].screenshot is None and traj.steps[3].screenshot is None
    assert any("message 3: field 'screenshot': file not found" in w for w in traj.warnings)
    assert any("message 7: field 'screenshot'" in w and "outside" in w for w in traj.warnings)
    assert traj.instruction_source == "transcript" and "reference_answer" not in traj.metadata


@pytest.mark.parametrize("doc,field", [({"role": "user"}, "(root)"), ([{"role": 3, "content": "x"}], "[0].role"),
                                       (["hello"], "[0]"), ([{"role": "user", "content": 7}], "[0].content")])
def test_bad_messages_name_the_field(tmp_path, doc, field):
    run = b.webvoyager_dir(tmp_path)
    file = run["path"] / "interact_messages.json"
    file.write_text(json.dumps(doc))
    with pytest.raises(TrajectoryFormatError) as exc:
        webvoyager.IMPORTER.load(run["path"])
    assert (exc.value.path, exc.value.field) == (str(file), field)


def test_detected_by_content(tmp_path):
    run = b.webvoyager_dir(tmp_path)
    renamed = tmp_path / "whatever"
    shutil.move(run["path"], renamed)
    assert formats.detect(renamed).name == "webvoyager"
    assert formats.load(renamed).id == "whatever"
    (renamed / "interact_messages.json").write_text('{"steps": []}')
    assert webvoyager.IMPORTER.sniff(renamed) == 0.0
    assert webvoyager.IMPORTER.sniff(tmp_path) == 0.0


def test_replies_read_as_the_harness_reads_them():
    thought, action, call = webvoyager.parse_reply("Thought: look\n\nAction: Type [4]; [hello world]")
    assert (thought, action, call) == ("look", "Type [4]; [hello world]",
                                       {"name": "type", "args": {"element": 4, "text": "hello world"}})
    assert webvoyager.parse_reply("Action: Click 7")[2] == {"name": "click", "args": {"element": 7}}
    assert webvoyager.parse_reply("Thought: done?\nAction: Jump [3]")[2] == {}
