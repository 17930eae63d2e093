"""OSWorld result directories: every traj.jsonl field, sidecars, partial runs, bad lines, the recording."""

from __future__ import annotations

import json
import shutil
from datetime import datetime

import builders as b
import pytest

from gui_app.core.trajectory import formats
from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import osworld


def test_reads_every_field(tmp_path):
    run = b.osworld_dir(tmp_path, video=None)
    traj = formats.load(run["path"])
    assert formats.detect(run["path"]).name == "osworld"
    assert traj.source_format == "osworld"
    assert traj.id == "bb5e4c0d-f964-439c-97b6-bdb9747de3f4"
    assert traj.instruction == run["instruction"]
    assert traj.app == "libreoffice_writer" and traj.agent == "gpt-4o"
    assert traj.metadata["domain"] == "libreoffice_writer" and traj.metadata["snapshot"] == "libreoffice_writer"
    assert traj.metadata["task"] == "libreoffice_writer/bb5e4c0d-f964-439c-97b6-bdb9747de3f4"
    assert (traj.outcome.success, traj.outcome.score, traj.outcome.source) == (True, 1.0, "env")
    assert traj.video is None and traj.warnings == []
    lines = run["lines"]
    assert traj.n_steps == len(lines) == 4
    # One response yielded two actions: same step_num, separate steps.
    assert [s.extra["step_num"] for s in traj.steps] == [1, 2, 2, 3]
    assert [s.index for s in traj.steps] == [0, 1, 2, 3]
    assert [s.action for s in traj.steps] == [r["action"] for r in lines]
    assert [s.action_type for s in traj.steps] == ["click", "type", "key", "done"]
    assert (traj.steps[0].x, traj.steps[0].y) == (40.0, 30.0)
    assert traj.steps[1].text == "report.txt" and traj.steps[2].text == "enter"
    assert [s.thought for s in traj.steps] == [r["response"] for r in lines]
    assert [s.reward for s in traj.steps] == [0.0] * 4
    assert [s.extra["done"] for s in traj.steps] == [False, False, False, True]
    assert traj.steps[1].extra["natural_language_action"] == "do: pyautogui.typewrite('report.txt')"
    assert "natural_language_action" not in traj.steps[0].extra
    for s, r in zip(traj.steps, lines):
        assert s.screenshot == str(run["path"] / r["screenshot_file"])
        assert s.extra["action_timestamp"] == r["action_timestamp"]
        assert s.extra["wall_time"] == datetime.strptime(r["action_timestamp"], "%Y%m%d@%H%M%S").isoformat()
        assert s.extra["screenshot_timing"] == "after_action"
    assert [s.extra["t_action"] for s in traj.steps] == [0.0, 1.0, 2.0, 3.0]  # whole seconds in OSWorld's format


def test_fork_timestamps_with_microseconds(tmp_path):
    run = b.osworld_dir(tmp_path, video=None, fork_timestamps=True)
    traj = formats.load(run["path"])
    assert traj.steps[0].extra["wall_time"] == "2024-03-05T14:02:07.900000"
    assert traj.steps[1].extra["t_action"] == pytest.approx(1.0)
    assert osworld.parse_timestamp("20240305@140209") == datetime(2024, 3, 5, 14, 2, 9)
    assert osworld.parse_timestamp("2024-03-05") is None


def test_detected_by_content_not_names(tmp_path):
    run = b.osworld_dir(tmp_path, video=None)
    renamed = tmp_path / "whatever"
    shutil.move(run["path"], renamed)
    assert formats.detect(renamed).name == "osworld"
    assert formats.detect(renamed / "traj.jsonl").name == "osworld"
    (renamed / "traj.jsonl").write_text('{"role": "user", "content": "hi"}\n')
    assert osworld.IMPORTER.sniff(renamed) == 0.0


def test_instruction_from_parent_sidecar_and_missing(tmp_path):
    run = b.osworld_dir(tmp_path / "a", video=None, sidecar="parent")
    assert formats.load(run["path"]).instruction == run["instruction"]
    run = b.osworld_dir(tmp_path / "b", video=None, sidecar=None)
    traj = formats.load(run["path"])
    assert traj.instruction == ""
    assert any("no instruction" in w for w in traj.warnings)


# OSWorld's own task config for this example, as evaluation_examples/examples/chrome/<id>.json holds it
# (xlang-ai/OSWorld, Apache-2.0; evaluator trimmed to the fields the importer does not read).
OSWORLD_CHROME_CONFIG = {
    "id": "bb5e4c0d-f964-439c-97b6-bdb9747de3f4",
    "snapshot": "chrome",
    "instruction": "Can you make Bing the main search engine when I look stuff up on the internet?",
    "source": "https://support.google.com/chrome/answer/95426",
    "config": [{"type": "launch", "parameters": {"command": ["google-chrome", "--remote-debugging-port=1337"]}},
               {"type": "launch", "parameters": {"command": ["socat", "tcp-listen:9222,fork", "tcp:localhost:1337"]}}],
    "trajectory": "trajectories/",
    "related_apps": ["chrome"],
    "evaluator": {"func": "match_in_list", "result": {"type": "default_search_engine"},
                  "expected": {"type": "rule", "rules": {"expected": ["Microsoft Bing", "Bing"]}}},
}


@pytest.mark.parametrize("domain", ["chrome", "thunar_fork"])
def test_instruction_from_osworld_tree(tmp_path, domain):
    # OSWorld's layout: results/<action_space>/<observation>/<model>/<domain>/<id>/ with the task config in
    # evaluation_examples/examples/<domain>/<id>.json beside results/ (a fork's domain need not be OSWorld's).
    run = b.osworld_dir(tmp_path / "results" / "pyautogui" / "screenshot", video=None, sidecar=None, domain=domain,
                        model="claude-3-7")
    cfg = tmp_path / "evaluation_examples" / "examples" / domain / f"{OSWORLD_CHROME_CONFIG['id']}.json"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(json.dumps(OSWORLD_CHROME_CONFIG, indent=2))
    traj = formats.load(run["path"])
    assert traj.instruction == OSWORLD_CHROME_CONFIG["instruction"]
    assert traj.app == "chrome" and traj.agent == "claude-3-7" and traj.metadata["domain"] == domain
    assert traj.metadata["task"] == f"{domain}/{OSWORLD_CHROME_CONFIG['id']}"
    assert not any("no instruction" in w for w in traj.warnings)


def test_partial_run_loads_with_warnings(tmp_path):
    run = b.osworld_dir(tmp_path, video=None, result=None)
    missing = run["path"] / run["lines"][2]["screenshot_file"]
    missing.unlink()
    traj = formats.load(run["path"])
    assert traj.n_steps == 4
    assert traj.steps[2].screenshot is None and traj.steps[1].screenshot is not None
    assert any(f"traj.jsonl:3: field 'screenshot_file': file not found: {missing}" in w for w in traj.warnings)
    assert traj.outcome.success is None and traj.outcome.score is None
    assert any("result.txt: missing" in w for w in traj.warnings)


def test_partial_score_is_not_success_and_garbled_result_warns(tmp_path):
    run = b.osworld_dir(tmp_path / "a", video=None, result="0.5\n")
    traj = formats.load(run["path"])
    assert (traj.outcome.success, traj.outcome.score) == (False, 0.5)
    run = b.osworld_dir(tmp_path / "b", video=None, result="error: VM crashed\n")
    traj = formats.load(run["path"])
    assert traj.outcome.success is None
    assert any("result.txt:1: field 'score': expected a number" in w for w in traj.warnings)


def test_truncated_line_names_file_and_line(tmp_path, inspect_fails):
    run = b.osworld_dir(tmp_path, video=None)
    log = run["path"] / "traj.jsonl"
    text = log.read_text().splitlines()
    log.write_text("\n".join(text[:2] + [text[2][:40]] + text[3:]) + "\n")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert exc.value.path == str(log) and exc.value.line == 3
    assert "invalid JSON" in str(exc.value)
    assert inspect_fails(run["path"]).startswith(f"rollscope: error: {log}:3: invalid JSON")


@pytest.mark.parametrize("field,value", [("step_num", "one"), ("done", "yes"), ("reward", "high"),
                                         ("screenshot_file", 7)])
def test_wrong_types_name_the_field(tmp_path, field, value):
    run = b.osworld_dir(tmp_path, video=None)
    log = run["path"] / "traj.jsonl"
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    recs[1][field] = value
    log.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(log), 2, field)


def test_recording_that_will_not_open_is_a_warning(tmp_path):
    run = b.osworld_dir(tmp_path, video=None)
    (run["path"] / "recording.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 200)
    traj = formats.load(run["path"])
    assert traj.video is None and traj.n_steps == 4
    assert any("recording.mp4: field 'video': recording not usable" in w for w in traj.warnings)


@pytest.mark.parametrize("codec,fork", [("mp4v", False), ("h264", False), ("h264", True)])
def test_recording_is_probed_and_steps_placed_by_their_timestamps(tmp_path, codec, fork, inspect_json):
    run = b.osworld_dir(tmp_path, video=codec, fork_timestamps=fork)
    traj = formats.load(run["path"])
    v = traj.video
    assert (v.fps, v.frames, v.width, v.height) == (10.0, 50, 320, 240)
    assert v.path == str(run["path"] / "recording.mp4")
    assert [s.align_method for s in traj.steps] == ["timestamp_offset"] * 4
    # Each action ran at action_times[k]; its result shows 0.35 s later, at state k + 1 seconds. A step spans from
    # its observation to its result (the model's keyframe is its end); the action's own moment is kept too.
    results = [float(st) for st in run["states"]]
    assert [s.t_end for s in traj.steps] == pytest.approx(results, abs=0.11)
    assert [s.t_start for s in traj.steps] == [0.0] + [s.t_end for s in traj.steps[:-1]]
    acts = [s.extra["t_action_video"] for s in traj.steps]
    truth = run["action_times"]
    # The offset is the smallest (result - stamp): the action's moment is late by at most the fastest step's
    # lag (0.35 s here) with microsecond stamps, plus the stamp's truncation with whole seconds.
    assert acts == pytest.approx(truth, abs=0.36 if fork else 1.36)
    assert all(a <= s.t_end + 1e-9 for a, s in zip(acts, traj.steps))
    assert all(s.align_confidence >= 0.5 for s in traj.steps)
    al = traj.metadata["alignment"]
    assert al["method"] == "timestamp_offset" and al["low_confidence_steps"] == [] and al["fit_confidence"] > 0.5
    assert al["resolution"] == (0.001 if fork else 1.0)
    assert traj.warnings == []
    info = inspect_json(run["path"])
    assert info["video"]["frames"] == 50 and info["alignment"]["method"] == "timestamp_offset"
    assert info["alignment"]["low_confidence_steps"] == []
    assert [s["align_method"] for s in info["steps"]] == ["timestamp_offset"] * 4
    assert all(s["align_confidence"] >= 0.5 for s in info["steps"])


def test_a_screenshot_that_is_not_in_the_recording_is_flagged(tmp_path, inspect_json, capsys):
    """The issue's case: a step placed with confidence ~0.35 passed unnoticed. Now it is named in inspect."""
    run = b.osworld_dir(tmp_path, video="h264")
    shot = run["path"] / run["lines"][2]["screenshot_file"]
    b.write_png(shot, b.screen(999))  # a screen the recording never shows
    info = inspect_json(run["path"])
    assert info["alignment"]["low_confidence_steps"] == [2]
    assert info["steps"][2]["align_confidence"] < 0.5 <= info["steps"][1]["align_confidence"]
    assert any("low confidence" in w and "steps 2 (" in w for w in info["warnings"])
    # The step still sits at its timestamp: the other steps fixed the offset.
    assert info["steps"][2]["t_end"] == pytest.approx(run["action_times"][2], abs=1.0)
    capsys.readouterr()
    from gui_app import cli

    assert cli.main(["inspect", str(run["path"])]) == 0
    out = capsys.readouterr().out
    assert "low confidence: step 2" in out and "warning:" in out


def test_alignment_is_cached_under_the_library(tmp_path, monkeypatch):
    lib = tmp_path / "lib"
    (lib / ".rollscope").mkdir(parents=True)
    run = b.osworld_dir(lib / "results", video="h264")
    first = formats.load(run["path"])
    files = list((lib / ".rollscope" / "cache" / "alignment").glob("*.json"))
    assert len(files) == 1

    def no_decoding(*a, **k):
        raise AssertionError("the recording was decoded again")

    monkeypatch.setattr("gui_app.core.trajectory.align.FrameSource.open", no_decoding)
    again = formats.load(run["path"])
    assert [(s.t_start, s.t_end, s.align_method, s.align_confidence) for s in again.steps] == \
        [(s.t_start, s.t_end, s.align_method, s.align_confidence) for s in first.steps]
    assert again.metadata["alignment"] == first.metadata["alignment"]
    # A changed screenshot is a different question: not served from the cache.
    b.write_png(run["path"] / run["lines"][0]["screenshot_file"], b.screen(1))
    # (what the importer did not mean to raise reaches the user as one line: formats.guarded)
    with pytest.raises(formats.ImporterBugError, match="decoded again"):
        formats.load(run["path"])


def test_inspect_contract(tmp_path, inspect_json):
    run = b.osworld_dir(tmp_path, video=None)
    info = inspect_json(run["path"])
    assert info["id"] == "bb5e4c0d-f964-439c-97b6-bdb9747de3f4" and info["format"] == "osworld"
    assert info["instruction"] == run["instruction"] and info["n_steps"] == 4
    assert info["outcome"] == {"success": True, "score": 1.0, "source": "env"}
    assert info["video"] is None and info["warnings"] == []
    assert info["steps"][0] == {"index": 0, "t_start": None, "t_end": None, "action": "pyautogui.click(x=40, y=30)",
                                "screenshot": str(run["path"] / run["lines"][0]["screenshot_file"]),
                                "align_method": None, "align_confidence": None}


def test_align_false_skips_the_pass_over_the_recording(tmp_path):
    run = b.osworld_dir(tmp_path, video="mp4v")
    traj = formats.load(run["path"], align=False)
    assert traj.video.frames == 50
    assert all(s.t_start is None and s.align_method is None for s in traj.steps)


def test_run_that_raised(tmp_path):
    """run.py appends {"Error": ...} when the example raised (one variant follows it with the traceback)."""
    run = b.osworld_dir(tmp_path, video=None, result=None)
    log = run["path"] / "traj.jsonl"
    with open(log, "a") as f:
        f.write(json.dumps({"Error": "Time limit exceeded in libreoffice_writer/bb5e4c0d"}))
        f.write("\n")
        f.write("Traceback (most recent call last):\n  File \"run.py\", line 9\nTimeoutError: step\n")
    traj = formats.load(run["path"])
    assert traj.n_steps == 4 and traj.outcome.success is None
    assert traj.metadata["error"] == "Time limit exceeded in libreoffice_writer/bb5e4c0d"
    assert traj.metadata["error_traceback"].endswith("TimeoutError: step")
    assert any("traj.jsonl:5: field 'Error'" in w for w in traj.warnings)
    # Raised before the first action: still recognised, no steps.
    only = tmp_path / "early"
    only.mkdir()
    (only / "traj.jsonl").write_text(json.dumps({"Error": "Time limit exceeded in os/1"}) + "\n")
    assert formats.detect(only).name == "osworld"
    assert formats.load(only).n_steps == 0


# -- where the instruction lives ----------------------------------------------------------------------------------

TASKS = b.REAL / "osworld" / "evaluation_examples" / "examples"
EXAMPLE = "bb5e4c0d-f964-439c-97b6-bdb9747de3f4"


def _real_layout(root, model="uitars-1.5", run_index=False):
    """``root/results/<action_space>/<observation>/<model>/<domain>/<id>/`` and, beside ``results``, the real
    task config in ``evaluation_examples/examples/<domain>/<id>.json``: a checkout of OSWorld after a run."""
    run = b.osworld_dir(root / "results" / "pyautogui" / "screenshot", video=None, sidecar=None, domain="chrome",
                        model=model)
    if run_index:
        inner = run["path"] / "0"
        inner.mkdir()
        for p in list(run["path"].iterdir()):
            if p != inner:
                shutil.move(str(p), inner / p.name)
        run["path"] = inner
    tasks = root / "evaluation_examples" / "examples" / "chrome"
    tasks.mkdir(parents=True, exist_ok=True)
    shutil.copy(TASKS / "chrome" / f"{EXAMPLE}.json", tasks)
    return run


def test_instruction_from_the_osworld_checkout_above_the_results(tmp_path):
    run = _real_layout(tmp_path / "OSWorld")
    traj = formats.load(run["path"])
    assert traj.instruction == "Can you make Bing the main search thingy when I look stuff up on the internet?"
    assert traj.metadata["task_config"] == str(tmp_path / "OSWorld" / "evaluation_examples" / "examples" / "chrome" /
                                               f"{EXAMPLE}.json")
    assert (traj.app, traj.agent, traj.metadata["domain"], traj.metadata["task"]) == \
        ("chrome", "uitars-1.5", "chrome", f"chrome/{EXAMPLE}")
    assert not any("instruction" in w for w in traj.warnings)


def test_run_index_subfolder(tmp_path):
    run = _real_layout(tmp_path / "OSWorld", run_index=True)
    assert formats.detect(run["path"]).name == "osworld"
    traj = formats.load(run["path"])
    assert traj.id == f"{EXAMPLE}/0" and traj.metadata["run_index"] == "0"
    assert traj.instruction.startswith("Can you make Bing") and traj.agent == "uitars-1.5"
    assert [p.name for p, _ in formats.find_units(tmp_path / "OSWorld" / "results")] == ["0"]


def test_tasks_root_from_the_environment_or_the_option(tmp_path, monkeypatch, capsys):
    from gui_app import cli

    run = b.osworld_dir(tmp_path / "results" / "gpt-4o", video=None, sidecar=None, domain="chrome")
    traj = formats.load(run["path"])
    assert traj.instruction == ""
    (warning,) = [w for w in traj.warnings if "no instruction" in w]
    assert "evaluation_examples/examples/chrome/" in warning and "--tasks-root" in warning
    # The option accepts OSWorld's checkout, its evaluation_examples or its examples folder.
    for root in (TASKS.parents[1], TASKS.parent, TASKS):
        capsys.readouterr()
        assert cli.main(["inspect", str(run["path"]), "--json", "--tasks-root", str(root)]) == 0
        assert json.loads(capsys.readouterr().out)["instruction"].startswith("Can you make Bing")
    monkeypatch.setenv("ROLLSCOPE_OSWORLD_TASKS_ROOT", str(TASKS))
    assert formats.load(run["path"]).instruction.startswith("Can you make Bing")


def test_a_run_without_instruction_is_not_scored(tmp_path, monkeypatch, capsys):
    """score used to judge such runs anyway; now it refuses them with an error line (exit 1) and goes on."""
    from gui_app import cli

    run = b.osworld_dir(tmp_path / "results" / "gpt-4o", video=None, sidecar=None, domain="chrome")
    capsys.readouterr()
    assert cli.main(["score", str(run["path"]), "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out)["error"].endswith("(or set ROLLSCOPE_OSWORLD_TASKS_ROOT)")
    (line,) = err.strip().splitlines()
    assert line.startswith(f"rollscope: error: {run['path']}: no instruction, so it cannot be judged; not scored.")
    assert cli.main(["score", str(run["path"]), "--json", "--tasks-root", str(TASKS)]) == 0
    out, err = capsys.readouterr()
    assert 0.0 <= json.loads(out)["p_success"] <= 1.0 and err.count("error") == 0


# -- the per-step trace variant ----------------------------------------------------------------------------------


def test_step_traces_and_results_csv(tmp_path, inspect_json):
    from gui_app.core.trajectory.formats import osworld_trace

    run = b.osworld_trace_dir(tmp_path)
    assert formats.detect(run["path"]).name == "osworld_trace"
    assert [p.name for p, _ in formats.find_units(tmp_path)] == [run["path"].name]
    traj = formats.load(run["path"])
    assert (traj.id, traj.source_format, traj.metadata["domain"]) == (run["path"].name, "osworld_trace", "os")
    assert [s.action for s in traj.steps] == [a["pyautogui"] for a in run["actions"]]
    assert [s.action_type for s in traj.steps] == ["click", "type", "done"]
    assert traj.steps[0].thought == "Thinking about step 1." and traj.steps[0].extra["source_index"] == 1
    assert traj.steps[1].screenshot == str(run["path"] / "step_002.png")
    assert [s.extra["t_action"] for s in traj.steps] == pytest.approx([0.0, 4.25, 8.5])
    assert (traj.outcome.success, traj.outcome.score) == (True, 1.0)
    assert traj.metadata["results_csv"] == str(tmp_path / "results" / "results.csv")
    assert traj.instruction == "" and any("no instruction" in w for w in traj.warnings)
    monkey_root = tmp_path / "tasks" / "os"
    monkey_root.mkdir(parents=True)
    (monkey_root / f"{run['path'].name}.json").write_text(json.dumps({"instruction": "List the Desktop."}))
    info = inspect_json(run["path"], "--tasks-root", str(tmp_path / "tasks"))
    assert info["instruction"] == "List the Desktop." and info["n_steps"] == 3
    assert osworld_trace.IMPORTER.sniff(tmp_path) == 0.0


def test_step_traces_with_a_bad_trace_name_it(tmp_path):
    run = b.osworld_trace_dir(tmp_path, scores={"other": "1.0"})
    (run["path"] / "step_002_trace.json").write_text("{not json")
    with pytest.raises(TrajectoryFormatError) as exc:
        formats.load(run["path"])
    assert exc.value.path == str(run["path"] / "step_002_trace.json")
    (run["path"] / "step_002_trace.json").unlink()
    traj = formats.load(run["path"])
    assert any("step_2 has a screenshot but no trace" in w for w in traj.warnings)
    assert any("no row for" in w for w in traj.warnings) and traj.outcome.success is None
