"""Write one recorded episode twice: as OSWorld writes a run, and as a Rollscope native trajectory.

OSWorld layout (``lib_run_single.py``): ``results/<action_space>/<observation>/<agent>/<domain>/<id>/`` holds
``traj.jsonl`` (``step_num``, ``action_timestamp`` as ``%Y%m%d@%H%M%S`` taken before the action, ``action``,
``response``, ``reward``, ``done``, ``info``, ``screenshot_file``), ``step_<n>_<timestamp>.png`` (the screen after
the action, without the pointer), ``result.txt`` (the checker's score) and ``recording.mp4``; the task config with
its ``instruction`` lives apart, in ``evaluation_examples/examples/<domain>/<id>.json``.

Native layout: ``trajectory.json`` with each step timed against the same recording (the step's wall-clock time
minus the recording's first frame, which ffmpeg reports), ``video.mp4`` and ``frames/``. The media are hard links
to the OSWorld files where the file system allows, so the episode costs its bytes once.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core.atomic import publish_file, publish_folder
from gui_app.recorders.desktop.agent import Recorded

ACTION_SPACE = "pyautogui"
OBSERVATION = "screenshot"


def _png(path: Path, rgb: np.ndarray) -> None:
    import cv2

    if not cv2.imwrite(str(path), rgb[:, :, ::-1], [cv2.IMWRITE_PNG_COMPRESSION, 3]):
        raise OSError(f"cannot write {path}")


def _link(src: Path, dest: Path) -> None:
    try:
        os.link(src, dest)
    except OSError:  # another file system, or links not allowed: a copy costs only disk
        shutil.copy2(src, dest)


def osworld_paths(out: Path, domain: str, eid: str, agent: str) -> tuple[Path, Path]:
    """(result directory, task config file) of an episode under the OSWorld tree ``out``."""
    return (out / "results" / ACTION_SPACE / OBSERVATION / agent / domain / eid,
            out / "evaluation_examples" / "examples" / domain / f"{eid}.json")


def write_osworld(out: Path, domain: str, eid: str, agent: str, config: dict[str, Any], steps: list[Recorded],
                  recording: Path, score: float) -> Path:
    """Write the OSWorld result directory and task config; returns the result directory."""
    result_dir, config_path = osworld_paths(out, domain, eid, agent)
    result_dir.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        lines = []
        for s in steps:
            stamp = datetime.fromtimestamp(s.t_action).strftime("%Y%m%d@%H%M%S")
            shot = f"step_{s.index + 1}_{stamp}.png"
            _png(tmp / shot, s.screenshot)
            lines.append({"step_num": s.index + 1, "action_timestamp": stamp, "action": s.action,
                          "response": s.target, "reward": 0, "done": s.action_type == "done", "info": {},
                          "screenshot_file": shot})
        (tmp / "traj.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        (tmp / "result.txt").write_text(f"{score}\n")
        _link(recording, tmp / "recording.mp4")

    publish_folder(result_dir, write, ours=lambda _rel: True)
    config_path.parent.mkdir(parents=True, exist_ok=True)
    publish_file(config_path, lambda tmp: tmp.write_text(json.dumps(config, indent=2)))
    return result_dir


def probe_video(path: Path) -> tuple[float, int, int, int]:
    """(fps, frames, width, height) of an MP4, counting frames by demuxing (containers may not store it)."""
    import av

    with av.open(str(path)) as c:
        st = c.streams.video[0]
        fps = float(st.average_rate or st.base_rate or 0) or 1.0
        n = sum(1 for p in c.demux(st) if p.size)
        return fps, n, st.codec_context.width, st.codec_context.height


def write_native(out_dir: Path, tid: str, instruction: str, steps: list[Recorded], initial: np.ndarray,
                 recording: Path, t0: float, success: bool, score: float, app: str, agent: str,
                 metadata: dict[str, Any], osworld_dir: Path | None = None) -> Path:
    """Write the native trajectory directory (steps timed against ``recording``, whose frame 0 is at ``t0``)."""
    from gui_app.core.trajectory.formats import native
    from gui_app.core.trajectory.model import Outcome, Step, Trajectory, VideoRef

    out_dir = Path(out_dir).resolve()
    out_dir.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        (tmp / "frames").mkdir()
        _link(recording, tmp / "video.mp4")
        fps, frames, w, h = probe_video(tmp / "video.mp4")
        duration = frames / fps
        _png(tmp / "frames" / "initial.png", initial)
        out_steps = []
        for k, s in enumerate(steps):
            name = f"frames/step_{k:03d}.png"
            src = None
            if osworld_dir is not None:
                stamp = datetime.fromtimestamp(s.t_action).strftime("%Y%m%d@%H%M%S")
                src = osworld_dir / f"step_{k + 1}_{stamp}.png"
            if src is not None and src.is_file():
                _link(src, tmp / name)
            else:
                _png(tmp / name, s.screenshot)
            start = min(max(0.0, s.t_action - t0), duration)
            end_wall = steps[k + 1].t_action if k + 1 < len(steps) else s.t_shot
            end = min(max(start, end_wall - t0), duration)
            out_steps.append(Step(
                index=k, t_start=round(start, 3), t_end=round(end, 3), action=s.action, action_type=s.action_type,
                x=None if s.x is None else float(s.x), y=None if s.y is None else float(s.y), text=s.text,
                screenshot=str(tmp / name), align_method="stored", align_confidence=1.0,
                extra={"target": s.target, "harmless": s.harmless, "t_wall_action": round(s.t_action, 3),
                       "t_wall_screenshot": round(s.t_shot, 3), "screenshot_timing": "after_action", **s.extra}))
        traj = Trajectory(
            id=tid, instruction=instruction, source_format="native", steps=out_steps,
            outcome=Outcome(success=success, score=score, source="env"),
            video=VideoRef(str(tmp / "video.mp4"), fps=fps, frames=frames, width=w, height=h),
            app=app, os="linux", agent=agent, metadata=metadata)
        native.save(traj, tmp)

    publish_folder(out_dir, write, ours=lambda _rel: True)
    return out_dir
