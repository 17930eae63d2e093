"""Builders of native trajectory libraries for the GUI tests (real files, scanned into a real catalog)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gui_app.core.scoring.score import Score
from gui_app.core.trajectory.model import Trajectory


def write_native(directory: Path, *, id: str, instruction: str, n_steps: int = 3, success: bool | None = True,
                 task: str | None = None, app: str | None = None, fps: float | None = None,
                 video: str | None = None, frames: int | None = None, step_seconds: float = 1.0,
                 agent: str | None = None, metadata: dict | None = None) -> Path:
    """Write a minimal native trajectory (``trajectory.json`` only, unless ``video`` names a file beside it);
    ``metadata`` is added to its metadata (``domain``, ``run_folder``, ...)."""
    directory.mkdir(parents=True, exist_ok=True)
    doc = {
        "schema_version": 1,
        "id": id,
        "instruction": instruction,
        "source_format": "native",
        "app": app,
        "outcome": {"success": success, "score": None if success is None else float(success), "source": "env"},
        "video": None if video is None else {"path": video, "fps": fps, "frames": frames, "width": None,
                                             "height": None},
        "steps": [{"index": i, "t_start": i * step_seconds, "t_end": (i + 1) * step_seconds,
                   "action": f"pyautogui.click(x={10 * i}, y={20 * i})", "action_type": "click",
                   "x": 10.0 * i, "y": 20.0 * i} for i in range(n_steps)],
        "agent": agent,
        "metadata": {**({"task": task} if task else {}), **(metadata or {})},
    }
    (directory / "trajectory.json").write_text(json.dumps(doc))
    return directory


TASKS = ("click-button", "enter-text", "login-user", "choose-list", "use-autocomplete")


def make_library(root: Path, n: int) -> Path:
    """``n`` text-only native trajectories with varied instructions, tasks, outcomes and lengths."""
    tasks = TASKS
    for i in range(n):
        write_native(root / f"t{i:05d}", id=f"traj-{i:05d}", instruction=f"Do thing number {i} in {tasks[i % 5]}",
                     n_steps=1 + i % 7, success=(None if i % 11 == 0 else i % 3 != 0), task=tasks[i % 5])
    return root


def make_video_trajectory(directory: Path, n_steps: int = 4, fps: float = 10.0, seconds_per_step: float = 1.0,
                          id: str = "video-traj", success: bool = True) -> Path:
    """A native trajectory with a real H.264 recording (numbered frames, 160x120) and aligned steps."""
    from tests.media import numbered_frames, write_h264

    n_frames = int(n_steps * seconds_per_step * fps)
    directory.mkdir(parents=True, exist_ok=True)
    write_h264(directory / "video.mp4", numbered_frames(n_frames, 160, 120), fps=fps, gop=10)
    return write_native(directory, id=id, instruction=f"Recorded run {id}", n_steps=n_steps, success=success,
                        task="click-button", fps=fps, video="video.mp4", frames=n_frames,
                        step_seconds=seconds_per_step)


def write_agentnet(path: Path, n: int) -> Path:
    """One AgentNet JSONL file holding ``n`` trajectories: a 10,000-row catalog without 10,000 folders to scan."""
    with path.open("w") as fh:
        for i in range(n):
            rec = {"task_id": f"an-{i:05d}", "instruction": f"Do thing number {i} in {TASKS[i % 5]}",
                   "natural_language_task": TASKS[i % 5], "task_completed": i % 3 != 0,
                   "traj": [{"index": j, "value": {"action": "click", "code": f"pyautogui.click(x=0.{j + 1}, y=0.5)"}}
                            for j in range(1 + i % 7)]}
            fh.write(json.dumps(rec) + "\n")
    return path


@pytest.fixture(scope="session")
def big_library(tmp_path_factory) -> Path:
    """10,000 trajectories (one AgentNet file), scanned once into their catalog; returns the library root."""
    from gui_app.core.library.catalog import Catalog

    root = tmp_path_factory.mktemp("big")
    write_agentnet(root / "tasks.jsonl", 10_000)
    with Catalog.for_root(root) as cat:
        report = cat.scan(root)
    assert report.trajectories == 10_000, report.errors[:3]
    return root


def open_and_wait(qtbot, win, path, activate: bool = False, timeout: int = 60_000) -> None:
    """Open the library ``path`` in the window ``win`` and wait until it is scanned and its rows are read (the library
    is read in a worker); with ``activate``, also until the window is active (for tests that type keys)."""
    with qtbot.waitSignal(win.scanner.scanned, timeout=timeout):
        win.open_path(path)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)
    if activate:
        win.activateWindow()
        qtbot.waitActive(win)


class InstructionRecorder:
    """A scorer that judges nothing: it records the instruction each run was prepared with (what the instruction
    tests check: which instruction reached the judge), and answers one fixed score."""

    name = "fake"

    def __init__(self) -> None:
        self.judged: dict[str, str] = {}

    def prepare(self, traj: Trajectory, prune: bool = True) -> str:
        self.judged[traj.source_path] = traj.instruction
        return traj.instruction

    def score_prepared(self, prepared: list[str]) -> list[Score]:
        return [Score(p_success=0.75, threshold=0.5, success=True, model=self.name) for _ in prepared]
