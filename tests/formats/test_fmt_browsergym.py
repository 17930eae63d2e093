"""BrowserGym / AgentLab experiment directories, read without ever unpickling."""

from __future__ import annotations

import gzip
import json
import pickle
import shutil

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import browsergym


def test_reads_every_field_and_never_unpickles(tmp_path):
    run = b.browsergym_dir(tmp_path)
    traj = formats.load(run["path"])
    assert not run["marker"].exists(), "a pickle was unpickled"
    assert formats.detect(run["path"]).name == "browsergym"
    assert traj.id == run["path"].name and traj.source_format == "browsergym"
    assert traj.instruction == run["goal"]
    assert (traj.outcome.success, traj.outcome.score, traj.outcome.source) == (True, 1.0, "env")
    assert traj.metadata["task"] == "miniwob.click-test" and traj.metadata["seed"] == 0 and traj.app == "miniwob"
    assert traj.metadata["terminated"] is True and traj.metadata["truncated"] is False
    assert traj.metadata["cum_raw_reward"] == 1.0
    assert traj.metadata["stats"] == {"stats.cum_steps": 4, "stats.max_n_token_goal": 12}
    assert traj.n_steps == 3
    assert [s.action for s in traj.steps] == run["actions"]
    assert [s.action_type for s in traj.steps] == ["click", "type", "message"]
    assert traj.steps[1].text == "hello world"
    assert [s.screenshot for s in traj.steps] == [str(run["path"] / f"screenshot_step_{i}.png") for i in range(3)]
    assert traj.metadata["final_screenshot"] == str(run["path"] / "screenshot_step_3.png")
    assert traj.steps[0].extra["screenshot_som"] == str(run["path"] / "screenshot_som_step_0.png")
    assert traj.steps[0].extra["step_info_pickle"] == str(run["path"] / "step_0.pkl.gz")
    assert traj.warnings == []
    # The trap is real: unpickling any of these files would have created the marker.
    with gzip.open(run["path"] / "step_0.pkl.gz", "rb") as fh:
        pickle.load(fh).close()
    assert run["marker"].exists()


def test_failure_and_no_log(tmp_path):
    run = b.browsergym_dir(tmp_path, cum_reward=0.0, with_log=False)
    summary = run["path"] / "summary_info.json"
    doc = json.loads(summary.read_text())
    doc["err_msg"] = "Exception uncaught by agent or environment in task miniwob.click-test.\nTimeoutError:\n..."
    summary.write_text(json.dumps(doc))
    traj = formats.load(run["path"])
    assert not run["marker"].exists()
    assert (traj.outcome.success, traj.outcome.score) == (False, 0.0)
    assert traj.n_steps == 3 and all(s.action == "" for s in traj.steps)
    assert traj.instruction == ""
    assert any("never unpickled" in w for w in traj.warnings)
    assert any("field 'err_msg'" in w and "Exception uncaught" in w for w in traj.warnings)


def test_detected_by_content_and_killed_runs(tmp_path):
    run = b.browsergym_dir(tmp_path)
    renamed = tmp_path / "exp1"
    shutil.move(run["path"], renamed)
    assert formats.detect(renamed).name == "browsergym"
    (renamed / "summary_info.json").unlink()  # killed before writing its summary
    assert formats.detect(renamed).name == "browsergym"
    traj = formats.load(renamed)
    assert traj.outcome.success is None and traj.n_steps == 3
    assert any("summary_info.json: missing" in w for w in traj.warnings)
    assert browsergym.IMPORTER.sniff(tmp_path) == 0.0


def test_missing_screenshot_is_a_warning(tmp_path):
    run = b.browsergym_dir(tmp_path)
    (run["path"] / "screenshot_step_1.png").unlink()
    traj = formats.load(run["path"])
    assert traj.steps[1].screenshot is None
    assert any("field 'steps[1].screenshot': file not found" in w for w in traj.warnings)


@pytest.mark.parametrize("field,value", [("n_steps", "3"), ("cum_reward", "lots"), ("terminated", "no"),
                                         ("n_steps", -1)])
def test_wrong_types_name_the_field(tmp_path, field, value, inspect_fails):
    run = b.browsergym_dir(tmp_path)
    summary = run["path"] / "summary_info.json"
    doc = json.loads(summary.read_text())
    doc[field] = value
    summary.write_text(json.dumps(doc))
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert (exc.value.path, exc.value.field) == (str(summary), field)
    assert f"field '{field}'" in inspect_fails(run["path"])


def test_log_parsing():
    log = ("2024-05-01 12:00:00,001 - root - INFO - goal: Book a flight\n"
           "2024-05-01 12:00:01,000 - browsergym.experiments.loop - DEBUG - Agent chose action:\n"
           " click('a1')\n fill('b2', 'x')\n"
           "2024-05-01 12:00:02,000 - agent - INFO - action: scroll(0, 200)\n")
    parsed = browsergym.parse_log(log)
    assert parsed == {"actions": ["click('a1')\n fill('b2', 'x')", "scroll(0, 200)"], "goal": "Book a flight"}


def test_combined_video_is_probed(tmp_path, inspect_json):
    run = b.browsergym_dir(tmp_path, video=True)
    info = inspect_json(run["path"])
    assert not run["marker"].exists()
    assert info["video"]["frames"] == 40 and info["video"]["fps"] == 10.0
    assert info["format"] == "browsergym" and info["n_steps"] == 3
    # Screenshots are what the agent saw before acting: state i is on screen from i s to i + 1 s.
    assert [s["t_start"] for s in info["steps"]] == pytest.approx([0.0, 1.0, 2.0], abs=0.15)
    assert info["alignment"]["method"] == "screenshot_match"


@pytest.mark.parametrize("name,expected", [
    ("2024-09-12_08-39-16_GenericAgent-gpt-4o-mini_on_miniwob.ascending-numbers_64_e6d2d5",
     {"agent": "GenericAgent-gpt-4o-mini", "task": "miniwob.ascending-numbers", "seed": 64, "exp_hash": "e6d2d5",
      "started": "2024-09-12_08-39-16"}),
    ("2025-01-30_10-02-11_GenericAgent-anthropic_claude-3.5-sonnet_on_workarena.servicenow.order-ipad-pro_12_0a1b2c",
     {"agent": "GenericAgent-anthropic_claude-3.5-sonnet", "task": "workarena.servicenow.order-ipad-pro", "seed": 12,
      "exp_hash": "0a1b2c", "started": "2025-01-30_10-02-11"}),
    ("GenericAgent_on_webarena.310_0", {"agent": "GenericAgent", "task": "webarena.310", "seed": 0}),
    ("2024-05-01_12-00-00_results", None),
])
def test_experiment_names(name, expected):
    assert browsergym.parse_exp_name(name) == expected


def test_real_folder_name_gives_agent_task_seed(tmp_path):
    name = "2024-09-12_08-39-16_GenericAgent-gpt-4o-mini_on_miniwob.ascending-numbers_64_e6d2d5"
    run = b.browsergym_dir(tmp_path, name=name)
    traj = formats.load(run["path"])
    assert not run["marker"].exists()
    assert traj.agent == "GenericAgent-gpt-4o-mini" and traj.app == "miniwob"
    assert (traj.metadata["task"], traj.metadata["seed"], traj.metadata["exp_hash"]) == \
        ("miniwob.ascending-numbers", 64, "e6d2d5")


def test_run_killed_before_its_first_step_is_reported_not_skipped(tmp_path, inspect_json):
    marker = tmp_path / "UNPICKLED"
    killed = b.agentlab_killed_dir(tmp_path / "study", marker)
    b.browsergym_dir(tmp_path / "study", marker=marker)
    assert formats.detect(killed).name == "browsergym"
    traj = formats.load(killed)
    assert traj.n_steps == 0 and traj.metadata["incomplete"] is True and traj.outcome.success is None
    assert traj.metadata["task"] == "miniwob.ascending-numbers" and traj.metadata["seed"] == 64
    assert len(traj.warnings) == 1 and "incomplete run" in traj.warnings[0] and "exp_args.pkl" in traj.warnings[0]
    units = sorted(p.name for p, _ in formats.find_units(tmp_path / "study"))
    assert units == sorted([killed.name, b.AGENTLAB_NAME])
    info = inspect_json(killed)
    assert info["n_steps"] == 0 and "incomplete run" in info["warnings"][0]
    assert not marker.exists(), "exp_args.pkl was unpickled"
    assert browsergym.IMPORTER.sniff(tmp_path / "study") == 0.0
