"""Builders of realistic trajectories in every outside format, written at test time with the real tools.

Screenshots are PNGs written by OpenCV (``cv2.imwrite``) with distinct content per screen state; recordings are
real videos (MPEG-4 part 2 through OpenCV's ``mp4v`` writer, or H.264 through PyAV's libx264 with a long GOP).
Each builder writes files laid out and spelled as the producing tool writes them (OSWorld's
``lib_run_single.py``, Harbor's ATIF, AgentNet's JSONL, AgentLab's experiment directory, Who&When records) and
returns what it wrote, so tests can check every field read back.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import pickle
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import cv2
import numpy as np

W, H = 320, 240
FPS = 10
# Real files copied from public repositories (sources and licences in its README.md).
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real"


# -- media ------------------------------------------------------------------------------------------------------


def screen(state: int, w: int = W, h: int = H) -> np.ndarray:
    """A GUI-like BGR screen whose look is unique to ``state``: title bar, a coloured panel, a button, text."""
    rng = np.random.default_rng(state)
    img = np.full((h, w, 3), 235, np.uint8)
    img[:24] = (60, 60, 60)
    colour = tuple(int(v) for v in rng.integers(30, 220, 3))
    x0, y0 = int(rng.integers(10, w // 2)), int(rng.integers(40, h // 2))
    cv2.rectangle(img, (x0, y0), (x0 + w // 3, y0 + h // 3), colour, -1)
    cv2.rectangle(img, (w - 90, h - 40), (w - 10, h - 12), (200, 120, 40), -1)
    cv2.putText(img, f"screen {state}", (10, 17), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (255, 255, 255), 1)
    for k in range(4):
        y = 60 + 30 * k + state % 7
        cv2.line(img, (8, y), (8 + int(rng.integers(40, w - 20)), y), (90, 90, 90), 3)
    return img


def write_png(path: Path, img: np.ndarray) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    assert cv2.imwrite(str(path), img), path
    return path


def states_frames(states: list[int], hold: int = FPS) -> list[np.ndarray]:
    """Frames of a recording that shows each state for ``hold`` frames."""
    return [screen(s) for s in states for _ in range(hold)]


def write_mp4v(path: Path, frames: list[np.ndarray], fps: int = FPS) -> Path:
    """MPEG-4 part 2 in MP4 through OpenCV (what many screen recorders produce)."""
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (W, H))
    assert writer.isOpened()
    for f in frames:
        writer.write(f)
    writer.release()
    return path


def write_h264(path: Path, frames: list[np.ndarray], fps: int = FPS, gop: int = 250) -> Path:
    """H.264 (libx264, long GOP: one keyframe for the whole clip) in MP4 through PyAV."""
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libx264", rate=Fraction(fps))
        stream.width, stream.height, stream.pix_fmt = W, H, "yuv420p"
        stream.codec_context.gop_size = gop
        stream.options = {"preset": "ultrafast", "crf": "20"}
        for f in frames:
            frame = av.VideoFrame.from_ndarray(cv2.cvtColor(f, cv2.COLOR_BGR2RGB), format="rgb24")
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


class Trap:
    """A pickle whose unpickling creates ``marker``: proof that a loader unpickled it."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def write_trap_pickle(path: Path, marker: Path) -> Path:
    with gzip.open(path, "wb") as fh:
        pickle.dump(Trap(marker), fh)
    return path


# -- OSWorld ----------------------------------------------------------------------------------------------------

OSWORLD_ACTIONS = [
    # (response, [actions]) per model call; the second call yields two actions, so step_num 2 repeats.
    ("I will open the File menu.", ["pyautogui.click(x=40, y=30)"]),
    ("Type the name and confirm.", ["pyautogui.typewrite('report.txt')", "pyautogui.press('enter')"]),
    ("The file is saved.", ["DONE"]),
]


def osworld_dir(parent: Path, example_id: str = "bb5e4c0d-f964-439c-97b6-bdb9747de3f4", *, video: str | None = "mp4v",
                result: str | None = "1.0\n", sidecar: str | None = "task.json", fork_timestamps: bool = False,
                domain: str = "libreoffice_writer", model: str = "gpt-4o") -> dict[str, Any]:
    """An OSWorld result dir ``parent/<model>/<domain>/<example_id>`` written the way lib_run_single.py does.

    Returns:
        dict with ``path``, ``instruction``, ``lines`` (the traj.jsonl records), ``states`` (screen state shown
        by each step's screenshot), ``hold`` (frames per state in the recording) and ``action_times`` (the video
        time each action ran at).
    """
    root = parent / model / domain / example_id
    root.mkdir(parents=True)
    instruction = "Save the open document as report.txt"
    # The recording starts at rec_start and shows state s from s seconds on; the action that brings state s runs
    # 0.35 s before it shows, and its action_timestamp (taken just before it runs) is on the same wall clock.
    rec_start = dt.datetime(2024, 3, 5, 14, 2, 7, 250000)
    lines, states, action_times = [], [], []
    state = 0
    fmt = "%Y%m%d@%H%M%S%f" if fork_timestamps else "%Y%m%d@%H%M%S"
    for step_idx, (response, actions) in enumerate(OSWORLD_ACTIONS):
        for action in actions:
            action_times.append(state + 1 - 0.35)
            t = rec_start + dt.timedelta(seconds=action_times[-1])
            action_timestamp = t.strftime(fmt)
            state += 1  # the screenshot is taken after the action: it shows the next state
            shot = f"step_{step_idx + 1}_{action_timestamp}.png"
            write_png(root / shot, screen(state))
            rec = {"step_num": step_idx + 1, "action_timestamp": action_timestamp, "action": action,
                   "response": response, "reward": 0, "done": action == "DONE", "info": {},
                   "screenshot_file": shot}
            if step_idx == 1:
                rec["natural_language_action"] = f"do: {action}"
            with open(root / "traj.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(rec, ensure_ascii=False))
                f.write("\n")
            lines.append(rec)
            states.append(state)
    if result is not None:
        (root / "result.txt").write_text(result, encoding="utf-8")
    (root / "runtime.log").write_text("agent log\n", encoding="utf-8")
    if sidecar == "task.json":
        config = {"id": example_id, "instruction": instruction, "related_apps": ["libreoffice_writer"],
                  "snapshot": "libreoffice_writer"}
        (root / "task.json").write_text(json.dumps(config))
    elif sidecar == "parent":
        (root.parent / f"{example_id}.json").write_text(json.dumps({"id": example_id, "instruction": instruction}))
    hold = FPS
    if video is not None:
        # The recording starts before the first action (state 0) and shows every state for `hold` frames.
        frames = states_frames(list(range(state + 1)), hold)
        (write_mp4v if video == "mp4v" else write_h264)(root / "recording.mp4", frames)
    return {"path": root, "instruction": instruction, "lines": lines, "states": states, "hold": hold,
            "action_times": action_times}


WEBVOYAGER_OBS = ("Observation: please analyze the attached screenshot and give the Thought and Action. I've provided "
                  "the tag name of each element and the text it contains (if text exists). Note that <textarea> or "
                  "<input> may be textbox, but not exactly. Please focus more on the screenshot and then refer to the "
                  "textual information.\n")
WEBVOYAGER_TASK = {"web_name": "Amazon", "id": "Amazon--0",
                   "ques": "Search an Xbox Wireless controller with green color and rated above 4 stars.",
                   "web": "https://www.amazon.com/"}


def webvoyager_dir(parent: Path, *, data: bool = True, clipped: bool = True) -> dict[str, Any]:
    """A WebVoyager run ``parent/results/<time>/taskAmazon--0/`` as run.py (MinorJerry/WebVoyager) writes it: the chat
    in ``interact_messages.json`` (image data blanked) and ``screenshot<k>.png`` per iteration; a reply the harness
    could not use, followed by its "Format ERROR" message and an iteration without a screenshot; with ``clipped``
    the first observation is the text run.py keeps of an older one. With ``data``, the repository's
    ``parent/data/WebVoyager_data.jsonl`` and ``reference_answer.json``.

    Returns:
        dict with ``path``, ``task`` (the task-list record), ``replies`` (the model's replies) and ``shots``
        (the iterations that took a screenshot).
    """
    task = WEBVOYAGER_TASK
    root = parent / "results" / "20240105_10_02_33" / f"task{task['id']}"
    root.mkdir(parents=True)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,{b64_img}"}}
    first = (f"Now given a task: {task['ques']}  Please interact with {task['web']} and get the answer. \n"
             + WEBVOYAGER_OBS + '[3]: <input> "";\t[5]: <button> "Go";')
    replies = [
        "Thought: The search box is labelled [3].\n\nAction: Type [3]; Xbox Wireless controller green",
        "I should open the first result.",  # no Thought:/Action: -- the harness answers "Format ERROR"
        "Thought: The first result is the green controller, 4.6 stars.\n\nAction: Click [12]",
        "Thought: Scroll to see the rating.\n\nAction: Scroll [WINDOW]; down",
        "Thought: Back to the results.\n\nAction: GoBack",
        "Thought: Start over.\n\nAction: Google",
        "Thought: Wait for the page.\n\nAction: Wait",
        "Thought: The controller is green and rated 4.6.\n\nAction: ANSWER; Xbox Core Wireless Controller – Velocity "
        "Green, 4.6 stars",
    ]
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Imagine you are a robot browsing the web ..."}]
    shots = []
    for k, reply in enumerate(replies, start=1):
        if k == 3:  # the iteration after the reply the harness could not use: no screenshot
            messages.append({"role": "user",
                             "content": "Format ERROR: Both 'Thought' and 'Action' should be included in your reply."})
        elif k == 1 and clipped:
            messages.append({"role": "user", "content": first.split("Observation:")[0].strip()
                             + "Observation: A screenshot and some texts. (Omitted in context.)"})
            shots.append(k)
        else:
            text = first if k == 1 else WEBVOYAGER_OBS + '[12]: "Xbox";'
            messages.append({"role": "user", "content": [{"type": "text", "text": text}, image]})
            shots.append(k)
        messages.append({"role": "assistant", "content": reply})
    for k in shots:
        write_png(root / f"screenshot{k}.png", screen(k))
    (root / "interact_messages.json").write_text(json.dumps(messages, indent=2), encoding="utf-8")
    if data:
        (parent / "data").mkdir(exist_ok=True)
        other = {**task, "id": "Amazon--1", "ques": "Another task."}
        (parent / "data" / "WebVoyager_data.jsonl").write_text(
            "".join(json.dumps(r) + "\n" for r in (other, task)), encoding="utf-8")
        ref = {"Amazon": {"notice": "", "answers": [
            {"id": 1, "type": "possible", "ans": "other"},
            {"id": 0, "type": "possible", "ans": "'Xbox Core Wireless Gaming Controller – Velocity Green', 4.7"}]}}
        (parent / "data" / "reference_answer.json").write_text(json.dumps(ref, indent=2), encoding="utf-8")
    return {"path": root, "task": task, "replies": replies, "shots": shots}


def osworld_trace_dir(parent: Path, example_id: str = "5ea617a3-0e86-4ba6-aab2-dac9aa2e8d57", domain: str = "os",
                      scores: dict[str, str] | None = None) -> dict[str, Any]:
    """A run of the per-step-trace variant: ``parent/results/<domain>/<example_id>/step_NNN.png`` +
    ``step_NNN_trace.json`` (the screenshot the agent acted on, then what it did), and the batch's scores in
    ``parent/results/results.csv``."""
    root = parent / "results" / domain / example_id
    root.mkdir(parents=True)
    actions = [{"action_type": "click", "x": 540, "y": 12, "pyautogui": "pyautogui.click(540, 12)"},
               {"action_type": "type", "text": "ls ~/Desktop", "pyautogui": "pyautogui.typewrite('ls ~/Desktop')"},
               {"action_type": "DONE", "pyautogui": "DONE"}]
    t = dt.datetime(2025, 12, 16, 0, 51, 37, 120000)
    for k, a in enumerate(actions, start=1):
        write_png(root / f"step_{k:03d}.png", screen(900 + k))
        t += dt.timedelta(seconds=4, microseconds=250000)
        trace = {"step": k, "timestamp": t.isoformat() + "Z", "action": a, "response": f"Thinking about step {k}.",
                 "reward": 0.0, "done": a["pyautogui"] == "DONE"}
        (root / f"step_{k:03d}_trace.json").write_text(json.dumps(trace, indent=2))
    rows = ["task_id,domain,success,score,steps,time_sec"]
    for eid, score in (scores or {example_id: "1.0", "bb5e4c0d-f964-439c-97b6-bdb9747de3f4": "0.0"}).items():
        rows.append(f"{eid},{domain},{int(float(score) >= 1)},{score},3,41.2")
    (parent / "results" / "results.csv").write_text("\n".join(rows) + "\n")
    return {"path": root, "actions": actions}


# -- ATIF -------------------------------------------------------------------------------------------------------


def atif_file(parent: Path, name: str = "trajectory.json", version: str = "ATIF-v1.6") -> dict[str, Any]:
    """An ATIF v1.6 computer-use trajectory with image parts (screenshots under ``images/``)."""
    parent.mkdir(parents=True, exist_ok=True)
    for k in range(4):
        write_png(parent / "images" / f"obs_{k}.png", screen(100 + k))
    instruction = "Open the settings page and enable dark mode"
    def img(k: int) -> dict[str, Any]:
        return {"type": "image", "source": {"media_type": "image/png", "path": f"images/obs_{k}.png"}}

    doc = {
        "schema_version": version,
        "session_id": "sess-7f3a",
        "agent": {"name": "cua-agent", "version": "0.3.1", "model_name": "claude-sonnet-4"},
        "steps": [
            {"step_id": 1, "timestamp": "2025-11-02T10:00:00Z", "source": "system",
             "message": "You operate a desktop."},
            {"step_id": 2, "timestamp": "2025-11-02T10:00:01Z", "source": "user",
             "message": [{"type": "text", "text": instruction}, img(0)]},
            {"step_id": 3, "timestamp": "2025-11-02T10:00:04Z", "source": "agent", "model_name": "claude-sonnet-4",
             "message": "Clicking the gear icon.", "reasoning_content": "Settings is behind the gear icon.",
             "tool_calls": [{"tool_call_id": "call_1", "function_name": "computer",
                             "arguments": {"action": "left_click", "coordinate": [300, 20]}}],
             "observation": {"results": [{"source_call_id": "call_1",
                                          "content": [{"type": "text", "text": "clicked"}, img(1)]}]},
             "metrics": {"prompt_tokens": 1200, "completion_tokens": 40}},
            {"step_id": 4, "timestamp": "2025-11-02T10:00:09Z", "source": "agent",
             "message": "Typing into search and pressing enter.",
             "tool_calls": [
                 {"tool_call_id": "call_2", "function_name": "type_text", "arguments": "{\"text\": \"dark mode\"}"},
                 {"tool_call_id": "call_3", "function_name": "key", "arguments": {"key": "Return"}}],
             "observation": {"results": [{"source_call_id": "call_2", "content": [img(2)]},
                                         {"source_call_id": "call_3", "content": [img(3)]}]}},
            {"step_id": 5, "timestamp": "2025-11-02T10:00:12Z", "source": "user", "message": "Thanks, continue."},
            {"step_id": 6, "timestamp": "2025-11-02T10:00:15Z", "source": "agent",
             "message": "Dark mode is now enabled."},
        ],
        "notes": "synthetic test run",
        "final_metrics": {"total_prompt_tokens": 5000, "total_completion_tokens": 300, "total_steps": 6},
    }
    path = parent / name
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    return {"path": path, "doc": doc, "instruction": instruction, "shots": [parent / "images" / f"obs_{k}.png"
                                                                            for k in range(4)]}


def atif_v12_claude_code(session_id: str = "5f0c8a52-6a51-4c39-9d1e-000000000001") -> dict[str, Any]:
    """An ATIF-v1.2 trajectory shaped like Harbor's claude-code converter writes it (v1.2: the version Harbor
    still emits for claude-code, gemini-cli and mini-swe-agent): tool calls with object arguments, observation
    results keyed by call id, per-step metrics, final_metrics."""
    return {
        "schema_version": "ATIF-v1.2",
        "session_id": session_id,
        "agent": {"name": "claude-code", "version": "2.1.31", "model_name": "claude-sonnet-4-5-20250929",
                  "extra": {"cwds": ["/app"], "git_branches": ["HEAD"]}},
        "steps": [
            {"step_id": 1, "timestamp": "2025-12-02T16:25:41.102Z", "source": "user",
             "message": "Create a file called hello.txt with \"Hello, world!\" as the content."},
            {"step_id": 2, "timestamp": "2025-12-02T16:25:44.870Z", "source": "agent",
             "model_name": "claude-sonnet-4-5-20250929",
             "message": "I'll create the file.",
             "tool_calls": [{"tool_call_id": "toolu_01A", "function_name": "Write",
                             "arguments": {"file_path": "/app/hello.txt", "content": "Hello, world!\n"}}],
             "observation": {"results": [{"source_call_id": "toolu_01A",
                                          "content": "File created successfully at: /app/hello.txt"}]},
             "metrics": {"prompt_tokens": 12034, "completion_tokens": 88, "cached_tokens": 11210}},
            {"step_id": 3, "timestamp": "2025-12-02T16:25:47.015Z", "source": "agent",
             "model_name": "claude-sonnet-4-5-20250929",
             "message": "",
             "tool_calls": [{"tool_call_id": "toolu_01B", "function_name": "Bash",
                             "arguments": {"command": "cat /app/hello.txt", "description": "Check the file"}}],
             "observation": {"results": [{"source_call_id": "toolu_01B", "content": "Hello, world!"}]},
             "metrics": {"prompt_tokens": 12150, "completion_tokens": 61, "cached_tokens": 12034}},
            {"step_id": 4, "timestamp": "2025-12-02T16:25:48.400Z", "source": "agent",
             "message": "The file /app/hello.txt now contains \"Hello, world!\"."},
        ],
        "final_metrics": {"total_prompt_tokens": 24184, "total_completion_tokens": 149, "total_cached_tokens": 23244,
                          "total_steps": 4},
    }


def harbor_trial(job: Path, trial_name: str, atif: dict[str, Any] | Path | None, *, reward: float | None = 1.0,
                 task_name: str = "hello-world", exception: dict[str, Any] | None = None) -> Path:
    """A Harbor trial folder ``job/<trial_name>`` laid out as Harbor's ``TrialPaths`` writes it: ``config.json``,
    ``result.json`` (a ``TrialResult``), ``agent/trajectory.json`` (ATIF) and ``verifier/reward.txt``."""
    root = job / trial_name
    (root / "agent").mkdir(parents=True)
    (root / "verifier").mkdir()
    if isinstance(atif, Path):
        (root / "agent" / "trajectory.json").write_bytes(atif.read_bytes())
    elif atif is not None:
        (root / "agent" / "trajectory.json").write_text(json.dumps(atif, indent=2))
    (root / "agent" / "claude-code.txt").write_text('{"type":"system","subtype":"init"}\n')
    (root / "config.json").write_text(json.dumps({"task": {"path": f"tasks/{task_name}"}, "trial_name": trial_name,
                                                  "agent": {"name": "claude-code", "model_name": "anthropic/claude"}}))
    result = {
        "id": "0b7d5a4e-2f43-4d1e-9a51-8d2b6c1f3e90", "task_name": task_name, "trial_name": trial_name,
        "trial_uri": f"file://{root}", "task_id": {"path": f"tasks/{task_name}"}, "source": "terminal-bench",
        "task_checksum": "9c1185a5c5e9fc54612808977ee8f548b2258d31",
        "config": {"trial_name": trial_name, "timeout_multiplier": 1.0},
        "agent_info": {"name": "claude-code", "version": "2.1.31",
                       "model_info": {"name": "claude-sonnet-4-5-20250929", "provider": "anthropic"}},
        "agent_result": {"n_input_tokens": 24184, "n_cache_tokens": 23244, "n_output_tokens": 149,
                         "cost_usd": 0.0123, "rollout_details": None, "metadata": None},
        "verifier_result": None if reward is None else {"rewards": {"reward": reward}},
        "exception_info": exception,
        "started_at": "2025-12-02T16:25:40.010000Z", "finished_at": "2025-12-02T16:26:02.500000Z",
        "environment_setup": {"started_at": "2025-12-02T16:25:40.010000Z",
                              "finished_at": "2025-12-02T16:25:40.900000Z"},
        "agent_setup": None, "agent_execution": None, "verifier": None,
    }
    (root / "result.json").write_text(json.dumps(result, indent=4))
    if reward is not None:
        (root / "verifier" / "reward.txt").write_text(f"{reward}\n")
    return root


# -- AgentNet ---------------------------------------------------------------------------------------------------


def agentnet_task(task_id: str, n: int, completed: bool) -> dict[str, Any]:
    steps = []
    for i in range(n):
        steps.append({
            "index": i,
            "image": f"{task_id}_{i}.png",
            "value": {
                "observation": f"The window shows item {i}.",
                "thought": f"I should click item {i}.",
                "action": f"Click item {i} in the list.",
                "code": f"pyautogui.click(x=0.{1 + i}632, y=0.2711)" if i < n - 1 else
                        "computer.terminate(status='success')",
                "last_step_correct": i != 1,
                "last_step_redundant": False,
                "reflection": "Progress looks fine." if i else "",
            },
        })
    return {"task_id": task_id, "instruction": f"Open item {n - 1}", "natural_language_task": f"Open item {n - 1}.",
            "actual_task": f"Opened item {n - 1}", "task_completed": completed, "alignment_score": 8,
            "efficiency_score": 7, "task_difficulty": 3, "reason": "The agent reached the item.", "traj": steps}


def agentnet_file(parent: Path, name: str = "agentnet_ubuntu.jsonl", extra_lines: list[str] = ()) -> dict[str, Any]:
    """Two AgentNet tasks in one JSONL file, images in ``images/`` beside it."""
    parent.mkdir(parents=True, exist_ok=True)
    tasks = [agentnet_task("20240927235321_5855063d", 3, True), agentnet_task("20241001101010_a1b2c3d4", 2, False)]
    for t, base in zip(tasks, (200, 300)):
        for s in t["traj"]:
            write_png(parent / "images" / s["image"], screen(base + s["index"]))
    lines = [json.dumps(t) for t in tasks] + list(extra_lines)
    path = parent / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"path": path, "tasks": tasks}


# -- BrowserGym / AgentLab --------------------------------------------------------------------------------------


AGENTLAB_NAME = "2024-05-01_12-00-00_GenericAgent-gpt-4o_on_miniwob.click-test_0"


def browsergym_dir(parent: Path, *, n_steps: int = 3, cum_reward: float = 1.0, with_log: bool = True,
                   video: bool = False, marker: Path | None = None, name: str = AGENTLAB_NAME) -> dict[str, Any]:
    """An AgentLab experiment directory; every pickle in it creates ``marker`` if anyone unpickles it."""
    root = parent / name
    root.mkdir(parents=True)
    marker = marker or (parent / "UNPICKLED")
    actions = ["click('12')", "fill('a31', 'hello world')", "send_msg_to_user('done')"][:n_steps]
    for i in range(n_steps + 1):  # one more observation than actions: the final state
        write_png(root / f"screenshot_step_{i}.png", screen(400 + i))
        write_trap_pickle(root / f"step_{i}.pkl.gz", marker)
    write_png(root / "screenshot_som_step_0.png", screen(450))
    write_trap_pickle(root / "goal_object.pkl.gz", marker)
    write_trap_pickle(root / "exp_args.pkl", marker)  # ExpArgs.prepare writes it before the first step
    summary = {"n_steps": n_steps, "cum_reward": cum_reward, "cum_raw_reward": cum_reward, "err_msg": None,
               "stack_trace": None, "terminated": True, "truncated": False, "stats.cum_steps": n_steps + 1,
               "stats.max_n_token_goal": 12}
    (root / "summary_info.json").write_text(json.dumps(summary, indent=4))
    goal = "Click the button labelled OK, then type hello world."
    if with_log:
        log = ["2024-05-01 12:00:00,001 - browsergym.experiments.loop - INFO - Running experiment GenericAgent in:",
               f"  {root}",
               f"2024-05-01 12:00:01,100 - agentlab.agents - INFO - Goal: {goal}"]
        for i, a in enumerate(actions):
            log += [f"2024-05-01 12:00:0{2 + i},000 - browsergym.experiments.loop - DEBUG - Starting step {i}.",
                    f"2024-05-01 12:00:0{2 + i},500 - browsergym.experiments.loop - DEBUG - Agent chose action:",
                    f" {a}"]
        (root / "experiment.log").write_text("\n".join(log) + "\n")
    if video:
        write_h264(root / "combined_video.mp4", states_frames([400 + i for i in range(n_steps + 1)]))
    return {"path": root, "actions": actions, "goal": goal, "marker": marker, "summary": summary}


AGENTLAB_KILLED_NAME = "2024-09-12_08-39-16_GenericAgent-gpt-4o-mini_on_miniwob.ascending-numbers_64_e6d2d5"


def agentlab_killed_dir(parent: Path, marker: Path, name: str = AGENTLAB_KILLED_NAME) -> Path:
    """An AgentLab experiment killed before its first step: ``prepare`` wrote ``exp_args.pkl`` and nothing else."""
    root = parent / name
    root.mkdir(parents=True)
    with open(root / "exp_args.pkl", "wb") as fh:  # plain pickle, as ExpArgs.prepare writes it
        pickle.dump(Trap(marker), fh)
    return root


# -- Inspect AI ------------------------------------------------------------------------------------------------


def png_data_uri(img: np.ndarray) -> str:
    ok, buf = cv2.imencode(".png", img)
    assert ok
    return "data:image/png;base64," + __import__("base64").b64encode(buf.tobytes()).decode("ascii")


def inspect_computer_eval(path: Path, *, n_samples: int = 2, status: str = "success",
                          header: bool = True) -> dict[str, Any]:
    """A computer-use ``.eval`` laid out as ``inspect_ai/log/_recorders/eval.py`` writes it: ``_journal/start.json``,
    ``samples/<id>_epoch_<n>.json``, ``summaries.json``, ``reductions.json``, ``header.json``. Messages follow
    ``inspect_ai/model/_chat_message.py``; the ``computer`` tool answers ``[ContentText, ContentImage]`` and the
    recorder moves every data URI to ``attachments`` (``log/_condense.py``)."""
    import hashlib
    import zipfile

    spec = {"eval_id": "gsM63GyMBKgA3p4sHAMAfG", "run_id": "oNudNHL32se6mcUiF8ingo",
            "created": "2025-10-06T10:15:43+00:00",
            "task": "computer_tasks/open_settings", "task_id": "FhdYWFJ77GkBBV8uKGRTuQ", "task_version": 0,
            "dataset": {"name": "computer", "samples": n_samples}, "model": "anthropic/claude-sonnet-4-5",
            "config": {}, "packages": {"inspect_ai": "0.3.130"}}
    instruction = "Open the display settings and turn on night light."
    samples, shots = [], []
    for sid in range(1, n_samples + 1):
        attachments: dict[str, str] = {}

        def attach(value: str) -> str:
            h = hashlib.md5(value.encode()).hexdigest()
            attachments[h] = value
            return f"attachment://{h}"

        states = [800 + 10 * sid + k for k in range(4)]
        shots.append(states)
        msgs: list[dict[str, Any]] = [
            {"id": f"s{sid}m0", "role": "system", "content": "You control a desktop with the computer tool."},
            {"id": f"s{sid}m1", "role": "user", "source": "input",
             "content": [{"type": "text", "text": instruction},
                         {"type": "image", "image": attach(png_data_uri(screen(states[0]))), "detail": "auto"}]},
        ]
        calls = [("left_click", {"coordinate": [1305, 393]}), ("type", {"text": "night light"}),
                 ("key", {"text": "Return"})]
        for k, (action, args) in enumerate(calls):
            cid = f"toolu_{sid}{k}"
            msgs.append({"id": f"s{sid}a{k}", "role": "assistant", "model": "claude-sonnet-4-5",
                         "content": [{"type": "reasoning", "reasoning": f"step {k}: {action} next", "redacted": False},
                                     {"type": "text", "text": f"I will {action}."}],
                         "tool_calls": [{"id": cid, "function": "computer", "arguments": {"action": action, **args},
                                         "type": "function"}]})
            msgs.append({"id": f"s{sid}t{k}", "role": "tool", "tool_call_id": cid, "function": "computer",
                         "content": [{"type": "text", "text": f"{action} done"},
                                     {"type": "image", "image": attach(png_data_uri(screen(states[k + 1]))),
                                      "detail": "auto"}]})
        msgs.append({"id": f"s{sid}a9", "role": "assistant", "content": "Night light is on.", "source": "generate"})
        sample = {"id": sid, "epoch": 1, "input": attach(instruction * 3) if sid == 2 else instruction,
                  "target": "night light on", "messages": msgs,
                  "output": {"model": "claude-sonnet-4-5", "choices": []},
                  "scores": {"check_night_light": {"value": "C" if sid == 1 else "I", "answer": "on"}},
                  "metadata": {"os": "ubuntu"}, "store": {}, "events": [], "model_usage": {},
                  "total_time": 41.2, "working_time": 39.8, "attachments": attachments}
        samples.append(sample)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("_journal/start.json", json.dumps({"version": 2, "eval": spec, "plan": {}}))
        for s in reversed(samples):  # the recorder writes samples as they finish, not in id order
            z.writestr(f"samples/{s['id']}_epoch_{s['epoch']}.json", json.dumps(s))
        if header:
            summaries = [{"id": s["id"], "epoch": 1, "scores": s["scores"]} for s in samples]
            z.writestr("summaries.json", json.dumps(summaries))
            z.writestr("reductions.json", json.dumps([]))
            z.writestr("header.json", json.dumps({"version": 2, "status": status, "eval": spec, "plan": {},
                                                  "results": {"total_samples": n_samples}, "stats": {}}))
    return {"path": path, "instruction": instruction, "shots": shots}


# -- Who&When ---------------------------------------------------------------------------------------------------


def whowhen_record(qid: str = "q-0113", mistake_step: Any = "2") -> dict[str, Any]:
    return {
        "is_correct": False,
        "question": "How many studio albums did the band release between 2000 and 2009?",
        "question_ID": qid,
        "level": "2",
        "ground_truth": "4",
        "history": [
            {"content": "Plan: search the discography, then count.", "role": "user", "name": "Orchestrator"},
            {"content": "I found the discography page.\nIt lists 6 albums.", "role": "assistant", "name": "WebSurfer"},
            {"content": "Counting all releases, including live albums: 6.", "role": "assistant", "name": "Assistant"},
            {"content": "FINAL ANSWER: 6", "role": "assistant", "name": "Orchestrator"},
        ],
        "mistake_agent": "Assistant",
        "mistake_step": mistake_step,
        "mistake_reason": "Counted live albums as studio albums.",
        "system_prompt": {"Assistant": "You are a helpful assistant."},
    }


# -- plain video and screenshot folders -------------------------------------------------------------------------

PLAIN_STEPS = [  # (t_start, action, thought)
    (0.0, "click(x=100, y=60)", "open the menu"),
    (1.5, "type(text='hello')", "enter the text"),
    (3.0, "press(key='enter')", "confirm"),
]


def plain_video_dir(parent: Path, *, log: str = "csv", codec: str = "h264", video_name: str = "capture.mp4",
                    log_name: str | None = None, meta: bool = True) -> dict[str, Any]:
    """A screen recording (5 s, 10 fps) with a step log giving start times, plus ``meta.json``."""
    root = parent
    root.mkdir(parents=True, exist_ok=True)
    frames = states_frames([500, 501, 502, 503, 504])
    (write_h264 if codec == "h264" else write_mp4v)(root / "capture.mp4", frames)
    if video_name != "capture.mp4":
        (root / "capture.mp4").rename(root / video_name)  # the encoders pick the container from the name
    write_png(root / "shots" / "s0.png", screen(500))
    if log == "csv":
        rows = ["index,t_start,action,thought,screenshot"]
        rows += [f"{i},{t},\"{a}\",{th},{'shots/s0.png' if i == 0 else ''}" for i, (t, a, th) in enumerate(PLAIN_STEPS)]
        (root / (log_name or "steps.csv")).write_text("\n".join(rows) + "\n")
    else:
        recs = [{"index": i, "start": t, "action": a, "thought": th} for i, (t, a, th) in enumerate(PLAIN_STEPS)]
        recs[1]["t_end"] = 2.5
        (root / (log_name or "steps.jsonl")).write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    if meta:
        (root / "meta.json").write_text(json.dumps({"instruction": "Write hello and confirm", "task": "write-hello",
                                                    "success": True, "score": 1.0, "app": "gedit", "os": "ubuntu"}))
    return {"path": root, "video": root / video_name, "duration": len(frames) / FPS}


def image_folder(parent: Path, names: tuple[str, ...] = ("shot_1.png", "shot_2.png", "shot_10.png"),
                 log: bool = False) -> dict[str, Any]:
    parent.mkdir(parents=True, exist_ok=True)
    for k, n in enumerate(names):
        write_png(parent / n, screen(600 + k))
    if log:
        recs = [{"action": f"pyautogui.click(x={10 * (k + 1)}, y=20)", "thought": f"step {k}"}
                for k in range(len(names))]
        (parent / "steps.jsonl").write_text("\n".join(json.dumps(r) for r in recs) + "\n")
    return {"path": parent, "names": list(names)}
