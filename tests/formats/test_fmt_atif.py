"""ATIF (Harbor) v1.4-v1.7: agent steps, tool calls, image parts as screenshots, versions, bad documents."""

from __future__ import annotations

import json

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import atif


def test_reads_every_field(tmp_path):
    run = b.atif_file(tmp_path / "trial")
    traj = formats.load(run["path"])
    assert formats.detect(run["path"]).name == "atif"
    assert traj.source_format == "atif" and traj.id == "sess-7f3a"
    assert traj.instruction == run["instruction"]
    assert traj.agent == "claude-sonnet-4"
    assert traj.metadata["agent"] == {"name": "cua-agent", "version": "0.3.1", "model_name": "claude-sonnet-4"}
    assert traj.metadata["schema_version"] == "ATIF-v1.6"
    assert traj.metadata["system_prompt"] == "You operate a desktop."
    assert traj.metadata["user_messages"] == ["Thanks, continue."]
    assert traj.metadata["final_metrics"]["total_steps"] == 6 and traj.metadata["notes"] == "synthetic test run"
    assert traj.metadata["initial_screenshot"] == str(run["shots"][0])
    assert traj.warnings == []
    # Three tool calls (one agent step holds two) and a final message-only agent step.
    assert traj.n_steps == 4
    click, typed, key, msg = traj.steps
    assert (click.action_type, click.x, click.y) == ("click", 300.0, 20.0)
    assert click.action == "computer(action='left_click', coordinate=[300, 20])"
    assert click.thought == "Settings is behind the gear icon."
    assert click.extra["message"] == "Clicking the gear icon."
    assert click.extra["tool_call_id"] == "call_1" and click.extra["observation"] == "clicked"
    assert click.extra["metrics"] == {"prompt_tokens": 1200, "completion_tokens": 40}
    assert click.extra["timestamp"] == "2025-11-02T10:00:04Z" and click.extra["step_id"] == 3
    # String arguments (the JSON the model emitted) are decoded; dict arguments are taken as they are.
    assert typed.extra["arguments"] == {"text": "dark mode"}
    assert (typed.action_type, typed.text) == ("type", "dark mode")
    assert (key.action_type, key.text) == ("key", "Return")
    assert typed.extra["step_id"] == key.extra["step_id"] == 4
    assert [s.screenshot for s in traj.steps[:3]] == [str(p) for p in run["shots"][1:]]
    assert (msg.action_type, msg.action, msg.screenshot) == ("message", "Dark mode is now enabled.", None)
    assert [s.index for s in traj.steps] == [0, 1, 2, 3]


def test_detected_by_content_not_name(tmp_path):
    run = b.atif_file(tmp_path, name="run_0042.data")
    assert formats.detect(run["path"]).name == "atif"
    # Named trajectory.json (Harbor's name, also the native format's): the native importer must not claim it.
    run2 = b.atif_file(tmp_path / "h")
    assert formats.detect(run2["path"]).name == "atif"
    assert formats.detect(tmp_path / "h") is None or formats.detect(tmp_path / "h").name != "native"
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema_version": "2.0", "items": []}))
    assert atif.IMPORTER.sniff(other) == 0.0


@pytest.mark.parametrize("version,warned", [("ATIF-v1.4", False), ("ATIF-v1.7", False), ("ATIF-v1.3", False),
                                            ("ATIF-v1.0", False), ("ATIF-v1.2", False), ("ATIF-v2.0", True),
                                            ("ATIF-v0.9", True)])
def test_version_outside_range_warns_and_loads(tmp_path, version, warned):
    run = b.atif_file(tmp_path, version=version)
    traj = formats.load(run["path"])
    assert traj.n_steps == 4
    assert any("schema_version" in w and "outside" in w for w in traj.warnings) == warned


def test_missing_image_is_a_warning(tmp_path):
    run = b.atif_file(tmp_path)
    run["shots"][2].unlink()
    traj = formats.load(run["path"])
    assert traj.steps[1].screenshot is None and traj.steps[0].screenshot == str(run["shots"][1])
    assert any(f"field 'steps[3].tool_calls[0]': file not found: {run['shots'][2]}" in w for w in traj.warnings)


def test_reward_from_harbor_result_json(tmp_path):
    run = b.atif_file(tmp_path / "trial" / "agent")
    (tmp_path / "trial" / "result.json").write_text(json.dumps(
        {"task_name": "enable-dark-mode", "verifier_result": {"rewards": {"reward": 1.0}}}))
    traj = formats.load(run["path"])
    assert (traj.outcome.success, traj.outcome.score, traj.outcome.source) == (True, 1.0, "env")
    assert traj.metadata["task"] == "enable-dark-mode"


def test_truncated_json_names_file_and_line(tmp_path, inspect_fails):
    run = b.atif_file(tmp_path)
    text = run["path"].read_text()
    run["path"].write_text(text[: len(text) // 2])
    with pytest.raises(TrajectoryFormatError) as exc:
        atif.IMPORTER.load_all(run["path"])
    assert exc.value.path == str(run["path"]) and exc.value.line is not None
    assert "invalid JSON" in inspect_fails(run["path"])


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.update(steps="none"), "steps"),
    (lambda d: d["steps"][2].update(source="robot"), "steps[2].source"),
    (lambda d: d["steps"][2].update(step_id="three"), "steps[2].step_id"),
    (lambda d: d["steps"][2]["tool_calls"][0].update(arguments=[1, 2]), "steps[2].tool_calls[0].arguments"),
    (lambda d: d["steps"][2]["tool_calls"][0].pop("function_name"), "steps[2].tool_calls[0].function_name"),
    (lambda d: d["steps"][3]["observation"].update(results={"a": 1}), "steps[3].observation.results"),
])
def test_wrong_types_name_the_field(tmp_path, mutate, field):
    run = b.atif_file(tmp_path)
    doc = json.loads(run["path"].read_text())
    mutate(doc)
    run["path"].write_text(json.dumps(doc))
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert exc.value.field == field and exc.value.path == str(run["path"])


def test_inspect_contract(tmp_path, inspect_json):
    run = b.atif_file(tmp_path)
    info = inspect_json(run["path"])
    assert (info["id"], info["format"], info["n_steps"]) == ("sess-7f3a", "atif", 4)
    assert info["video"] is None
    assert info["alignment"] == {"method": None, "mean_confidence": None, "low_confidence_steps": [], "offset": None}
    assert info["steps"][0]["screenshot"] == str(run["shots"][1])


# -- older versions and Harbor trials ---------------------------------------------------------------------------

GOLDEN = b.REAL / "harbor" / "golden" / "terminus_2"


def test_real_harbor_golden_files_load():
    """Harbor's own golden trajectories (ATIF-v1.5, terminus-2): keystrokes without tool calls, observations
    without a call id, a system step whose observation points at a summarisation subagent."""
    files = sorted(GOLDEN.glob("*.json"))
    assert len(files) == 4
    for f in files:
        assert formats.detect(f).name == "atif", f
        traj = formats.load(f)
        assert traj.id == "NORMALIZED_SESSION_ID" and traj.agent == "openai/gpt-4o"
        assert traj.n_steps >= 2 and traj.instruction.startswith("You are an AI assistant")
        assert traj.warnings == []
    linear = formats.load(GOLDEN / "hello-world-context-summarization-linear-history.trajectory.json")
    assert linear.metadata["continued_trajectory_ref"] == "trajectory.cont-1.json"
    (sys_obs,) = linear.metadata["system_observations"]
    assert sys_obs["step_id"] == 5 and "subagent_trajectory_ref" in sys_obs["results"][0]
    assert "mkdir test_dir" in linear.steps[0].extra["observation"]


def test_v12_as_harbor_writes_it_for_claude_code(tmp_path):
    path = tmp_path / "trajectory.json"
    path.write_text(json.dumps(b.atif_v12_claude_code(), indent=2))
    traj = formats.load(path)
    assert traj.warnings == [] and traj.metadata["schema_version"] == "ATIF-v1.2"
    assert [s.action for s in traj.steps] == [
        "Write(file_path='/app/hello.txt', content='Hello, world!\\n')",
        "Bash(command='cat /app/hello.txt', description='Check the file')",
        "The file /app/hello.txt now contains \"Hello, world!\"."]
    assert traj.steps[1].extra["observation"] == "Hello, world!"
    assert traj.agent == "claude-sonnet-4-5-20250929"


def test_harbor_trial_folder(tmp_path, inspect_json):
    job = tmp_path / "jobs" / "2025-12-02__16-25-40"
    ok = b.harbor_trial(job, "hello-world__AbCdEf1", b.atif_v12_claude_code(), reward=1.0)
    failed = b.harbor_trial(job, "hello-world__ZyXwVu2", GOLDEN / "hello-world-timeout.trajectory.json",
                            reward=0.0)
    assert formats.detect(ok).name == "harbor" and formats.detect(failed).name == "harbor"
    assert sorted((p.name, imp.name) for p, imp in formats.find_units(tmp_path / "jobs")) == [
        ("hello-world__AbCdEf1", "harbor"), ("hello-world__ZyXwVu2", "harbor")]
    traj = formats.load(ok)
    assert (traj.id, traj.source_format, traj.source_path) == ("hello-world__AbCdEf1", "harbor", str(ok))
    assert traj.metadata["session_id"] == "5f0c8a52-6a51-4c39-9d1e-000000000001"
    assert (traj.outcome.success, traj.outcome.score, traj.outcome.source) == (True, 1.0, "env")
    assert traj.metadata["task"] == "hello-world" and traj.agent == "claude-sonnet-4-5-20250929"
    assert traj.metadata["agent_result"]["cost_usd"] == 0.0123 and traj.n_steps == 3
    assert traj.warnings == []
    bad = formats.load(failed)
    assert bad.outcome.success is False and bad.metadata["session_id"] == "NORMALIZED_SESSION_ID"
    info = inspect_json(failed)
    assert (info["id"], info["format"]) == ("hello-world__ZyXwVu2", "harbor")


def test_harbor_trial_without_atif_or_verifier(tmp_path):
    job = tmp_path / "job"
    trial = b.harbor_trial(job, "t__1", None, reward=None,
                           exception={"exception_type": "AgentTimeoutError",
                                      "exception_message": "Agent execution timed out after 900.0 seconds",
                                      "exception_traceback": "Traceback ...", "occurred_at": "2025-12-02T16:40:40Z"})
    traj = formats.load(trial)
    assert traj.n_steps == 0 and traj.id == "t__1" and traj.outcome.success is None
    assert any("agent/trajectory.json: missing" in w for w in traj.warnings)
    assert any("field 'exception_info'" in w and "AgentTimeoutError" in w for w in traj.warnings)
    assert any("field 'verifier_result': missing" in w for w in traj.warnings)


def test_harbor_result_with_wrong_types_names_the_field(tmp_path):
    trial = b.harbor_trial(tmp_path, "t__2", b.atif_v12_claude_code())
    doc = json.loads((trial / "result.json").read_text())
    doc["verifier_result"] = {"rewards": {"reward": "full marks"}}
    (trial / "result.json").write_text(json.dumps(doc))
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(trial)
    assert exc.value.field == "verifier_result.rewards.reward" and exc.value.path == str(trial / "result.json")
