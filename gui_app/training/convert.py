"""Write a trajectory in another tool's layout: an OSWorld result folder, or an ATIF (Harbor) trial.

The same recorded episode in several layouts is how the reward model is checked for layout independence (the same
run imported from an OSWorld folder and from an ATIF file must get the same verdict), and how users' importers are
exercised on runs whose truth we know. The writers follow what the projects themselves write (``shared/FORMATS.md``):

- **OSWorld** (``lib_run_single.py``): ``results/pyautogui/screenshot/<model>/<domain>/<example_id>/`` with
  ``traj.jsonl`` (one line per action: ``step_num`` from 1, ``action_timestamp`` as ``%Y%m%d@%H%M%S%f``, the action
  as pyautogui code or ``WAIT``/``DONE``, ``response``, ``reward``, ``done``, ``info``, ``screenshot_file``),
  ``step_<n>_<timestamp>.png`` (the screen after the action, taken without the mouse pointer, as OSWorld's
  screenshots are), ``result.txt`` (the evaluator's score: ``1.0`` or ``0.0``) and ``recording.mp4`` (a screen
  recording with the pointer, each screen held for as long as it was on screen; no offset into it is stored).
  The task config with the instruction goes where OSWorld keeps it, relative to the same root:
  ``evaluation_examples/examples/<domain>/<example_id>.json``. The example id is a UUID derived from the
  trajectory id (OSWorld ids are UUIDs).
- **ATIF v1.6** (Harbor): ``<trial>/agent/trajectory.json`` (a user step with the instruction and the first
  screen; one agent step per action with a ``computer`` tool call in the Anthropic computer-use style, whose
  observation holds the screenshot as an image part ``{type: image, source: {media_type, path}}``; WAIT and DONE
  as agent steps without tool call) and ``<trial>/result.json`` (``verifier_result.rewards.reward``).

Pure core: reads a :class:`~gui_app.core.trajectory.model.Trajectory` (any source) and writes files; never records.
Screenshots without the pointer are taken from ``step.extra['screenshot_clean']`` when the recorder kept them
(``clean`` False: the run's own screenshots, pointer and all: the same pixels in another layout).
"""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core.atomic import publish_file, publish_folder
from gui_app.core.errors import RollscopeError, VideoError
from gui_app.core.media.images import read_image
from gui_app.core.trajectory.model import Step, Trajectory

FORMATS = ("osworld", "atif")
ACTION_SPACE, OBSERVATION = "pyautogui", "screenshot"
RECORDING_FPS = 5
ATIF_VERSION = "ATIF-v1.6"
_NS = uuid.UUID("6b7f2f8e-9d51-4d8a-9a43-6f1b3c8e2a10")  # rollscope's namespace for derived ids

# Key names as pyautogui and the computer-use tool spell them.
_KEYS = {"enter": "enter", "return": "enter", "tab": "tab", "backspace": "backspace", "escape": "esc",
         "arrowdown": "down", "arrowup": "up", "arrowleft": "left", "arrowright": "right", "space": "space",
         "delete": "delete", "home": "home", "end": "end", "pageup": "pageup", "pagedown": "pagedown"}
_XDO = {"enter": "Return", "tab": "Tab", "backspace": "BackSpace", "esc": "Escape", "down": "Down", "up": "Up",
        "left": "Left", "right": "Right", "space": "space", "delete": "Delete", "home": "Home", "end": "End",
        "pageup": "Page_Up", "pagedown": "Page_Down"}


class ConvertError(RollscopeError):
    """A trajectory cannot be written in the asked layout."""


def example_id(traj_id: str) -> str:
    """The OSWorld example id (a UUID) of a trajectory id: stable, so a conversion can be redone in place."""
    return str(uuid.uuid5(_NS, traj_id))


def domain_of(traj: Trajectory) -> str:
    return str(traj.metadata.get("domain") or traj.app or "other").replace("/", "_")


def model_of(traj: Trajectory) -> str:
    return str(traj.agent or "unknown-agent").replace("/", "_")


def osworld_dir(root: str | Path, traj_id: str, model: str, domain: str = "miniwob") -> Path:
    """Where :func:`to_osworld` puts the run of ``traj_id`` under ``root``."""
    return Path(root) / "results" / ACTION_SPACE / OBSERVATION / model / domain / example_id(traj_id)


def _keys(text: str) -> list[str]:
    parts = [p.strip() for p in (text or "").replace("Ctrl", "ctrl").split("+") if p.strip()]
    return [_KEYS.get(p.lower(), p.lower()) for p in parts]


def pyautogui_code(step: Step) -> str:
    """The step as OSWorld's pyautogui action space writes it (``WAIT``/``DONE`` as the special actions)."""
    t = step.action_type
    if t == "wait":
        return "WAIT"
    if t == "done":
        return "DONE"
    if t == "fail":
        return "FAIL"
    xy = f"{step.x:.0f}, {step.y:.0f}" if step.x is not None and step.y is not None else None
    if t == "click" and xy:
        return f"pyautogui.click({xy})"
    if t == "double_click" and xy:
        return f"pyautogui.doubleClick({xy})"
    if t == "right_click" and xy:
        return f"pyautogui.rightClick({xy})"
    if t == "move" and xy:
        return f"pyautogui.moveTo({xy})"
    if t == "type":
        return f"pyautogui.typewrite({step.text or ''!r})"
    if t in ("key", "hotkey"):
        keys = _keys(step.text or "")
        if len(keys) == 1:
            return f"pyautogui.press({keys[0]!r})"
        return "pyautogui.hotkey(" + ", ".join(repr(k) for k in keys) + ")"
    if t == "scroll":
        clicks = -5 if "dy=-" not in step.action else 5  # pyautogui: positive scrolls up
        return f"pyautogui.scroll({clicks}, x={step.x:.0f}, y={step.y:.0f})" if xy else f"pyautogui.scroll({clicks})"
    raise ConvertError(f"step {step.index}: no pyautogui form for action {step.action!r} ({t})")


def computer_call(step: Step) -> dict[str, Any] | None:
    """The step as an Anthropic-style ``computer`` tool call's arguments (None for DONE: a final message)."""
    t = step.action_type
    xy = [round(step.x), round(step.y)] if step.x is not None and step.y is not None else None
    if t == "click" and xy:
        return {"action": "left_click", "coordinate": xy}
    if t == "double_click" and xy:
        return {"action": "double_click", "coordinate": xy}
    if t == "right_click" and xy:
        return {"action": "right_click", "coordinate": xy}
    if t == "move" and xy:
        return {"action": "mouse_move", "coordinate": xy}
    if t == "type":
        return {"action": "type", "text": step.text or ""}
    if t in ("key", "hotkey"):
        return {"action": "key", "text": "+".join(_XDO.get(k, k) for k in _keys(step.text or ""))}
    if t == "scroll" and xy:
        return {"action": "scroll", "coordinate": xy, "scroll_direction": "up" if "dy=-" in step.action else "down",
                "scroll_amount": 5}
    if t == "wait":
        return {"action": "wait", "duration": 1}
    if t in ("done", "fail"):
        return None
    raise ConvertError(f"step {step.index}: no computer-tool form for action {step.action!r} ({t})")


def _clean_shot(traj: Trajectory, step: Step, clean: bool = True) -> Path | None:
    rel = step.extra.get("screenshot_clean") if clean else None
    if rel:
        p = traj.root / rel
        if p.is_file():
            return p
    return Path(step.screenshot) if step.screenshot else None


def _initial_shot(traj: Trajectory, clean: bool) -> Path | None:
    if clean and traj.metadata.get("initial_clean"):
        p = traj.root / traj.metadata["initial_clean"]
        if p.is_file():
            return p
    p = traj.root / "frames" / "initial.png"
    return p if p.is_file() else None


def _times(traj: Trajectory) -> tuple[datetime, list[float], list[float]]:
    """Episode start and each step's start and end in seconds from it (wall times when the recorder kept them)."""
    start_s = traj.metadata.get("started_at")
    try:
        start = datetime.fromisoformat(start_s) if start_s else None
    except ValueError:
        start = None
    start = start or datetime(2026, 1, 1, tzinfo=timezone.utc)
    t0, t1 = [], []
    for s in traj.steps:
        a = s.extra.get("t_wall_start", s.t_start if s.t_start is not None else float(s.index))
        b = s.extra.get("t_wall_end", s.t_end if s.t_end is not None else a + 1.0)
        t0.append(float(a))
        t1.append(max(float(b), float(a)))
    return start, t0, t1


def _stamp(start: datetime, seconds: float) -> str:
    return (start + timedelta(seconds=seconds)).strftime("%Y%m%d@%H%M%S%f")


def _read_rgb(path: Path) -> np.ndarray:
    try:
        return read_image(path)  # measured from its header before it is decoded
    except VideoError as exc:
        raise ConvertError(str(exc)) from None


def _recording(traj: Trajectory, dest: Path, t1: list[float]) -> None:
    """A real-time screen recording: frame 0 until the first action ends, then each step's screen until the next
    one's end (the last held for a second), at :data:`RECORDING_FPS`."""
    from gui_app.core.media.video import write_video

    paths = [traj.root / "frames" / "initial.png"] + [Path(s.screenshot) for s in traj.steps if s.screenshot]
    if len(paths) != traj.n_steps + 1 or not all(p.is_file() for p in paths):
        if traj.video is not None and Path(traj.video.path).is_file():
            shutil.copy2(traj.video.path, dest)  # no frames to retime: the recording as it is
            return
        raise ConvertError(f"{traj.source_path}: neither frames nor a video to make recording.mp4 from")
    frames = [_read_rgb(p) for p in paths]
    bounds = [0.0, *t1]
    durations = [max(0.2, bounds[i + 1] - bounds[i]) for i in range(len(bounds) - 1)] + [1.0]
    write_video(dest, frames, fps=RECORDING_FPS, repeats=[max(1, round(d * RECORDING_FPS)) for d in durations])


def to_osworld(traj: Trajectory, root: str | Path, clean: bool = True) -> Path:
    """Write ``traj`` as an OSWorld result folder under ``root`` (plus its task config); returns the run folder.
    ``clean``: screenshots without the pointer where the recorder kept them (as OSWorld's are).

    Raises:
        ConvertError: a step with no pyautogui form, or no frames to build the recording from.
    """
    root = Path(root)
    domain, model, eid = domain_of(traj), model_of(traj), example_id(traj.id)
    dest = osworld_dir(root, traj.id, model, domain)
    dest.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        start, t0, t1 = _times(traj)
        lines = []
        for i, s in enumerate(traj.steps):
            stamp = _stamp(start, t0[i])
            shot = f"step_{i + 1}_{stamp}.png"
            src = _clean_shot(traj, s, clean)
            if src is None or not src.is_file():
                raise ConvertError(f"{traj.source_path}: step {s.index} has no screenshot")
            shutil.copy2(src, tmp / shot)
            last = i == traj.n_steps - 1
            lines.append({"step_num": i + 1, "action_timestamp": stamp, "action": pyautogui_code(s),
                          "response": s.thought or "", "reward": 0, "done": bool(last and s.action_type == "done"),
                          "info": {}, "screenshot_file": shot})
        (tmp / "traj.jsonl").write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines),
                                        encoding="utf-8")
        if traj.outcome.success is not None:
            (tmp / "result.txt").write_text(f"{1.0 if traj.outcome.success else 0.0}\n", encoding="utf-8")
        _recording(traj, tmp / "recording.mp4", t1)

    publish_folder(dest, write, ours=lambda _rel: True)  # the whole run folder is ours: nothing is kept
    config = root / "evaluation_examples" / "examples" / domain / f"{eid}.json"
    config.parent.mkdir(parents=True, exist_ok=True)
    task = traj.metadata.get("task") or domain
    doc = {"id": eid, "snapshot": domain, "instruction": traj.instruction, "source": f"rollscope:{traj.id}",
           "config": [], "trajectory": "trajectories/", "related_apps": [domain],
           "evaluator": {"func": f"{domain}_env_reward", "result": {"type": "env", "task": task},
                         "expected": {"type": "rule", "rules": {"raw_reward": 1.0}}}}
    publish_file(config, lambda tmp: tmp.write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8"))
    return dest


def atif_dir(root: str | Path, traj_id: str) -> Path:
    """Where :func:`to_atif` puts the trial of ``traj_id`` under ``root``."""
    return Path(root) / traj_id.replace("/", "_")


def _image(path: str) -> dict[str, Any]:
    return {"type": "image", "source": {"media_type": "image/png", "path": path}}


def to_atif(traj: Trajectory, root: str | Path, clean: bool = True) -> Path:
    """Write ``traj`` as a Harbor trial with an ATIF v1.6 trajectory under ``root``; returns the JSON file.
    ``clean``: as :func:`to_osworld`'s.

    Raises:
        ConvertError: a step with no computer-tool form, or a missing screenshot.
    """
    dest = atif_dir(root, traj.id)
    dest.parent.mkdir(parents=True, exist_ok=True)

    def write(tmp: Path) -> None:
        (tmp / "agent" / "images").mkdir(parents=True)
        start, t0, _t1 = _times(traj)
        iso = lambda sec: (start + timedelta(seconds=sec)).isoformat().replace("+00:00", "Z")  # noqa: E731
        first: list[dict[str, Any]] = [{"type": "text", "text": traj.instruction}]
        init = _initial_shot(traj, clean)
        if init is not None:
            shutil.copy2(init, tmp / "agent" / "images" / "initial.png")
            first.append(_image("images/initial.png"))
        steps: list[dict[str, Any]] = [{"step_id": 1, "timestamp": iso(0.0), "source": "user", "message": first}]
        for i, s in enumerate(traj.steps):
            src = _clean_shot(traj, s, clean)
            if src is None or not src.is_file():
                raise ConvertError(f"{traj.source_path}: step {s.index} has no screenshot")
            name = f"images/step_{i + 1}.png"
            shutil.copy2(src, tmp / "agent" / name)
            call = computer_call(s)
            step: dict[str, Any] = {"step_id": i + 2, "timestamp": iso(t0[i]), "source": "agent",
                                    "model_name": model_of(traj)}
            if call is None:
                step["message"] = [{"type": "text", "text": "DONE" if s.action_type == "done" else "FAIL"},
                                   _image(name)]
            else:
                cid = f"toolu_{i + 1:03d}"
                step["message"] = ""
                step["tool_calls"] = [{"tool_call_id": cid, "function_name": "computer", "arguments": call}]
                step["observation"] = {"results": [{"source_call_id": cid, "content": [_image(name)]}]}
            steps.append(step)
        doc = {"schema_version": ATIF_VERSION, "session_id": str(uuid.uuid5(_NS, "atif:" + traj.id)),
               "agent": {"name": model_of(traj), "version": "1", "model_name": model_of(traj)},
               "steps": steps, "final_metrics": {"total_steps": len(steps)},
               "extra": {"source": f"rollscope:{traj.id}"}}
        (tmp / "agent" / "trajectory.json").write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
        if traj.outcome.success is not None:
            result = {"task_name": str(traj.metadata.get("task") or domain_of(traj)), "trial_name": dest.name,
                      "verifier_result": {"rewards": {"reward": 1.0 if traj.outcome.success else 0.0}}}
            (tmp / "result.json").write_text(json.dumps(result, indent=2), encoding="utf-8")

    publish_folder(dest, write, ours=lambda _rel: True)
    return dest / "agent" / "trajectory.json"


def convert(traj: Trajectory, fmt: str, root: str | Path, clean: bool = True) -> Path:
    """Write ``traj`` in layout ``fmt`` (``osworld`` or ``atif``) under ``root``; returns what was written.
    ``clean``: screenshots without the pointer where the recorder kept them (False: the run's own)."""
    if fmt == "osworld":
        return to_osworld(traj, root, clean)
    if fmt == "atif":
        return to_atif(traj, root, clean)
    raise ConvertError(f"unknown layout {fmt!r} (known: {', '.join(FORMATS)})")
