"""AgentNet / OpenCUA JSONL: many tasks per file, normalised coordinates, images, bad lines."""

from __future__ import annotations

import json

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import agentnet


def test_reads_every_field(tmp_path):
    run = b.agentnet_file(tmp_path)
    trajs = formats.load_all(run["path"])
    assert formats.detect(run["path"]).name == "agentnet"
    assert [t.id for t in trajs] == [t["task_id"] for t in run["tasks"]]
    first, second = trajs
    task = run["tasks"][0]
    assert first.instruction == task["instruction"] and first.source_format == "agentnet"
    assert (first.outcome.success, first.outcome.score, first.outcome.source) == (True, 8.0, "model")
    assert second.outcome.success is False
    assert first.metadata["natural_language_task"] == task["natural_language_task"]
    assert first.metadata["actual_task"] == task["actual_task"]
    assert (first.metadata["task_difficulty"], first.metadata["reason"]) == (3, task["reason"])
    assert (first.metadata["alignment_score"], first.metadata["efficiency_score"]) == (8.0, 7.0)
    assert first.metadata["line"] == 1 and second.metadata["line"] == 2
    assert first.n_steps == 3 and second.n_steps == 2
    s0, s1, s2 = first.steps
    assert (s0.action_type, s0.x, s0.y, s0.extra["coords"]) == ("click", 0.1632, 0.2711, "normalized")
    assert s0.action == "pyautogui.click(x=0.1632, y=0.2711)"
    assert s0.thought == "I should click item 0." and s0.extra["observation"] == "The window shows item 0."
    assert s0.extra["natural_language_action"] == "Click item 0 in the list."
    assert s1.extra["last_step_correct"] is False and s1.extra["last_step_redundant"] is False
    assert s1.extra["reflection"] == "Progress looks fine."
    assert s2.action_type == "done" and "coords" not in s2.extra
    assert [s.screenshot for s in first.steps] == [str(tmp_path / "images" / f"{task['task_id']}_{i}.png")
                                                   for i in range(3)]
    assert all(t.warnings == [] for t in trajs)
    # PATH#N addresses the N-th trajectory (the catalog keys them so).
    assert formats.load(f"{run['path']}#1").id == second.id


def test_detected_by_content_not_name(tmp_path):
    run = b.agentnet_file(tmp_path, name="export.txt")
    assert formats.detect(run["path"]).name == "agentnet"
    plain = tmp_path / "log.jsonl"
    plain.write_text('{"task_id": 1, "msg": "hello"}\n')
    assert agentnet.IMPORTER.sniff(plain) == 0.0


def test_one_bad_line_among_good_ones(tmp_path):
    run = b.agentnet_file(tmp_path, extra_lines=['{"task_id": "broken", "instruction": "x", "traj": [', ""])
    trajs = formats.load_all(run["path"])
    assert len(trajs) == 2
    for t in trajs:
        assert any(f"{run['path']}: 1 of 3 records could not be read" in w and f"{run['path']}:3" in w
                   for w in t.warnings)
    records = agentnet.IMPORTER.load_records(run["path"])
    assert isinstance(records[2], TrajectoryFormatError) and records[2].line == 3


def test_all_lines_bad_raises_the_first(tmp_path, inspect_fails):
    path = tmp_path / "bad.jsonl"
    good = b.agentnet_task("t1", 2, True)
    bad = dict(good, traj="not a list")
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load_all(path, fmt="agentnet")
    assert (exc.value.line, exc.value.field) == (1, "traj")
    assert formats.detect(path).name == "agentnet"
    assert f"{path}:1: field 'traj'" in inspect_fails(path)


@pytest.mark.parametrize("mutate,field", [
    (lambda t: t.update(task_completed="yes"), "task_completed"),
    (lambda t: t["traj"][1].update(value="click"), "traj[1].value"),
    (lambda t: t["traj"][0]["value"].update(code=["pyautogui.click()"]), "traj[0].value.code"),
    (lambda t: t.update(alignment_score="high"), "alignment_score"),
])
def test_wrong_types_name_line_and_field(tmp_path, mutate, field):
    run = b.agentnet_file(tmp_path)
    lines = run["path"].read_text().splitlines()
    task = json.loads(lines[1])
    mutate(task)
    lines[1] = json.dumps(task)
    run["path"].write_text("\n".join(lines) + "\n")
    records = agentnet.IMPORTER.load_records(run["path"])
    err = records[1]
    assert isinstance(err, TrajectoryFormatError)
    assert (err.path, err.line, err.field) == (str(run["path"]), 2, field)
    assert len(formats.load_all(run["path"])) == 1


def test_missing_image_is_a_warning_and_duplicate_ids_are_made_unique(tmp_path):
    run = b.agentnet_file(tmp_path)
    (tmp_path / "images" / f"{run['tasks'][1]['task_id']}_0.png").unlink()
    lines = run["path"].read_text().splitlines()
    run["path"].write_text("\n".join([lines[0], lines[1], lines[1]]) + "\n")
    trajs = formats.load_all(run["path"])
    assert trajs[1].steps[0].screenshot is None
    assert any("traj[0].image': file not found" in w for w in trajs[1].warnings)
    assert len({t.id for t in trajs}) == 3


def test_inspect_selects_one_task(tmp_path, inspect_json):
    run = b.agentnet_file(tmp_path)
    info = inspect_json(f"{run['path']}#1")
    assert info["id"] == run["tasks"][1]["task_id"] and info["n_steps"] == 2
    assert info["outcome"] == {"success": False, "score": 8.0, "source": "model"}


# -- real files from OpenCUA (tests/fixtures/real/opencua) ------------------------------------------------------


def test_real_raw_example_before_thoughts_are_generated():
    path = b.REAL / "opencua" / "cot-generate" / "raw_example.jsonl"
    assert formats.detect(path).name == "agentnet"
    traj = formats.load(path)
    assert traj.id == "task_example_0" and traj.instruction.startswith("Open the system display settings")
    assert traj.n_steps == 15 and traj.steps[-1].action_type == "done"
    assert traj.steps[0].extra["coords"] == "normalized" and (traj.steps[0].x, traj.steps[0].y) == (0.9722, 0.9701)
    assert traj.steps[1].action_type == "right_click"
    # Its images (0.png ... 14.png) are not in the repository: each missing one is a warning naming it.
    assert sum("file not found" in w for w in traj.warnings) == 15


def test_pretty_printed_json_document_is_read_whole(tmp_path):
    """`--format agentnet` on a pretty-printed JSON file used to fail at "column 2": read a document as a whole."""
    task = b.agentnet_task("t-1", 2, True)
    one = tmp_path / "one.json"
    one.write_text(json.dumps(task, indent=2))
    many = tmp_path / "many.json"
    many.write_text(json.dumps([task, b.agentnet_task("t-2", 3, False)], indent=2))
    assert formats.detect(one).name == "agentnet" and formats.detect(many).name == "agentnet"
    assert [t.id for t in formats.load_all(one, "agentnet")] == ["t-1"]
    assert [(t.id, t.n_steps) for t in formats.load_all(many, "agentnet")] == [("t-1", 2), ("t-2", 3)]


def test_real_agentnetbench_tasks(tmp_path, inspect_json):
    src = b.REAL / "opencua" / "agentnetbench" / "s_df0fd37049f470c2.json"
    assert formats.detect(src).name == "agentnetbench"
    doc = json.loads(src.read_text())
    # Lay the task out as OpenCUA's evaluator expects it: the JSON, its screenshots under images/.
    task = tmp_path / "single_data" / src.name
    task.parent.mkdir()
    task.write_bytes(src.read_bytes())
    for k, s in enumerate(doc["steps"][:-1]):  # the last screenshot left out: a warning, not an error
        b.write_png(tmp_path / "single_data" / "images" / s["image"], b.screen(700 + k))
    traj = formats.load(task)
    assert (traj.id, traj.source_format) == ("s_df0fd37049f470c2", "agentnetbench")
    assert traj.instruction == doc["user_task_description"]
    assert traj.metadata["high_level_task_description"] == doc["high_level_task_description"]
    assert traj.os == "Windows" and traj.app == "goodreads" and traj.metadata["task"].startswith("Daily/")
    assert traj.outcome.success is None  # a human demonstration: no outcome
    assert traj.n_steps == 7
    assert [s.extra["source_index"] for s in traj.steps] == [s["step_num"] for s in doc["steps"]]
    first = traj.steps[0]
    assert (first.action_type, first.x, first.y, first.extra["coords"]) == ("click", 0.3271, 0.2694, "normalized")
    assert first.thought == doc["steps"][0]["inner_monologue"]["thought"]
    assert first.extra["ground_truth_actions"] == doc["steps"][0]["ground_truth_actions"]
    assert traj.steps[1].action_type == "type" and traj.steps[1].text == "george orwell"
    assert first.screenshot == str(tmp_path / "single_data" / "images" / doc["steps"][0]["image"])
    assert traj.steps[-1].screenshot is None
    assert traj.warnings == [f"{task}: field 'steps[6].image': file not found: {doc['steps'][-1]['image']} "
                             f"(looked in images/ and beside the file)"]
    assert [(p.name, imp.name) for p, imp in formats.find_units(tmp_path)] == [(src.name, "agentnetbench")]
    info = inspect_json(task)
    assert info["format"] == "agentnetbench" and info["n_steps"] == 7


def test_agentnetbench_without_meta_info_and_bad_fields(tmp_path):
    src = b.REAL / "opencua" / "agentnetbench" / "s_7f27a11115e596eb.json"
    traj = formats.load(src)
    assert traj.n_steps == 11 and traj.steps[1].action_type == "type" and traj.steps[1].text == "SPOTIFY"
    doc = json.loads(src.read_text())
    doc["steps"][2]["action"] = 17
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(bad)
    assert (exc.value.path, exc.value.field) == (str(bad), "steps[2].action")
