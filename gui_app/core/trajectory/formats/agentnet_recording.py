"""Raw AgentNet recordings: a human demonstration captured by OpenCUA's AgentNet annotation tool.

A recording folder (OpenCUA's ``data/data-process/datasets/raw/<id>/``) holds the OBS screen recording
(``YYYY-MM-DD HH-MM-SS.mp4``), ``metadata.json`` (``screen_width``, ``screen_height``, ``video_start_timestamp``,
``system``, ``obs_record_state_timings``...), ``task_name.json`` (``task_name``: the instruction), ``events.jsonl``
(every input event: ``time_stamp``, ``action`` move/click/scroll/press/release, ``x``, ``y``...),
``reduced_events_complete.jsonl`` (events merged into steps: ``id``, ``action``, ``description`` such as
``Single left Click``, ``Type: hello$enter$``, ``Press: $ctrl$ + c``, ``Drag from (621, 206) to (561, 213)``,
``Scroll ⬇️×3``, ``coordinate``, ``start_time``, ``end_time``, ``vis``...), ``reduced_events_vis.jsonl`` (the same
steps as annotated: ``action`` becomes a caption such as ``Click on Action Centre``), plus ``a11y.jsonl``,
``element.jsonl``, ``top_window.jsonl``.

Every time stamp, the video's start included, is read from one performance counter, so a step's place in the
video is ``start_time - video_start_timestamp``: the alignment is ``timestamp``, confidence 1. A step lasts until
the next one starts (the last until the video ends), so its end frame shows what the action did. Coordinates are
screen pixels; the recording is often scaled (OBS), so steps carry them normalised by the screen size.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError, VideoError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.model import Trajectory

META = "metadata.json"
TASK = "task_name.json"
REDUCED = ("reduced_events_complete.jsonl", "reduced_events_vis.jsonl")
EVENTS = "events.jsonl"

_CLICKS = {"single left click": "click", "single x1 click": "click", "double left click": "doubleClick",
           "triple left click": "tripleClick", "single right click": "rightClick",
           "double right click": "rightClick", "single middle click": "middleClick"}
_NUM = r"(-?\d+(?:\.\d+)?)"
_DRAG = re.compile(rf"drag from \({_NUM},\s*{_NUM}\) to \({_NUM},\s*{_NUM}\)", re.I)
_SCROLL = re.compile(r"(⬆️|⬇️|⬅️|➡️)×(\d+)")
_KEY = re.compile(r"\$([^$]+)\$")


def pyautogui_action(ev: dict[str, Any]) -> str:
    """The pyautogui code a reduced event stands for, built from its ``description`` (how OpenCUA's
    ``raw_to_standardized.py`` reads it) and its coordinates, in screen pixels."""
    desc = str(ev.get("description") or "").strip()
    low = desc.lower()
    coord = ev.get("coordinate")
    xy: dict[str, Any] = coord if isinstance(coord, dict) else {}
    x, y = xy.get("x"), xy.get("y")
    at = f"x={x}, y={y}" if x is not None and y is not None else ""
    if low in _CLICKS:
        return f"pyautogui.{_CLICKS[low]}({at})"
    m = _DRAG.search(desc)
    if m:
        return f"pyautogui.moveTo(x={m[1]}, y={m[2]})\npyautogui.dragTo(x={m[3]}, y={m[4]}, button='left')"
    if low.startswith("scroll"):
        trace = ev.get("trace") if isinstance(ev.get("trace"), list) else []
        first = trace[0] if trace and isinstance(trace[0], dict) else {}
        pos = f", x={first['x']}, y={first['y']}" if "x" in first and "y" in first else ""
        calls = []
        for arrow, n in _SCROLL.findall(desc):
            amount = int(n) if arrow in ("⬆️", "➡️") else -int(n)
            calls.append(f"pyautogui.{'scroll' if arrow in ('⬆️', '⬇️') else 'hscroll'}({amount}{pos})")
        return "\n".join(calls) or f"pyautogui.scroll(0{pos})"
    if low.startswith("type:"):
        text = desc.split(":", 1)[1].lstrip(" ")
        keys = _KEY.findall(text)
        out = [f"pyautogui.write(message={_KEY.sub('', text)!r})"] if _KEY.sub("", text) else []
        return "\n".join(out + [f"pyautogui.press({k!r})" for k in keys])
    if low.startswith("press:"):
        keys = [k.strip().strip("$") for k in desc.split(":", 1)[1].split(" + ") if k.strip()]
        return f"pyautogui.hotkey({', '.join(repr(k) for k in keys)})" if len(keys) > 1 else \
            f"pyautogui.press({keys[0]!r})" if keys else desc
    return desc or str(ev.get("action") or "")


class AgentNetRecordingImporter:
    name = "agentnet_recording"

    def sniff(self, path: Path) -> float:
        if not path.is_dir():
            return 0.0
        if b'"video_start_timestamp"' not in c.head(path / META):
            return 0.0
        if any((path / n).is_file() for n in REDUCED + (EVENTS,)):
            return 0.9
        return 0.5

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (times are stored)
        return [self.load(path)]

    def load(self, path: Path) -> Trajectory:
        root = path.resolve()
        warnings: list[str] = []
        traj = Trajectory(id=root.name, source_format=self.name, source_path=str(root), warnings=warnings)
        meta = c.read_json(root / META)
        if not isinstance(meta, dict):
            raise TrajectoryFormatError(root / META, "(root)", "expected a JSON object")
        t0 = c.number(meta.get("video_start_timestamp"), root / META, "video_start_timestamp")
        if t0 is None:
            raise TrajectoryFormatError(root / META, "video_start_timestamp", "missing")
        width = c.number(meta.get("screen_width"), root / META, "screen_width")
        height = c.number(meta.get("screen_height"), root / META, "screen_height")
        traj.os = meta.get("system") if isinstance(meta.get("system"), str) else None
        traj.metadata.update({k: meta[k] for k in ("screen_width", "screen_height", "start_time", "stop_time",
                                                   "release", "obs_record_state_timings") if k in meta})
        self._task(root, traj)
        self._video(root, traj)
        captions = self._captions(root)
        events = self._reduced(root)
        if events is None:
            n = sum(1 for _ in c.iter_jsonl(root / EVENTS)) if (root / EVENTS).is_file() else 0
            warnings.append(f"{root}: no reduced_events_*.jsonl: the {n} raw input events were never merged into "
                            f"steps (the annotation tool's reduce pass did not run); no steps")
            return traj
        duration = traj.duration
        for line, ev in events:
            start = c.number(ev.get("start_time"), self._file(root), "start_time", line)
            if start is None:
                raise TrajectoryFormatError(self._file(root), "start_time", "missing", line=line)
            action = pyautogui_action(ev)
            extra: dict[str, Any] = {"source_index": ev.get("id"), "description": ev.get("description"),
                                     "screenshot_timing": "before_action"}
            end = c.number(ev.get("end_time"), self._file(root), "end_time", line)
            if end is not None:
                extra["action_end"] = round(end - t0, 4)
            caption = captions.get(ev.get("id"))
            if caption and caption != ev.get("action"):
                extra["natural_language_action"] = caption
            target = ev.get("target")
            if isinstance(target, dict) and target.get("title"):
                extra["target"] = target
            step = c.make_step(len(traj.steps), action, extra=extra)
            if step.x is not None and step.y is not None and width and height:
                step.x, step.y = step.x / width, step.y / height  # screen pixels; the video may be scaled
                step.extra["coords"] = "normalized"
            step.t_start = max(0.0, start - t0)
            step.align_method, step.align_confidence = "timestamp", 1.0
            if duration is not None and step.t_start > duration + 1e-6:
                warnings.append(f"{self._file(root)}:{line}: field 'start_time': step {step.index} starts "
                                f"{step.t_start:.2f} s into a {duration:.2f} s recording")
            traj.steps.append(step)
        for k, step in enumerate(traj.steps):
            start = step.t_start or 0.0
            nxt = traj.steps[k + 1].t_start if k + 1 < len(traj.steps) else duration
            step.t_end = max(start, nxt) if nxt is not None else start
        return traj

    @staticmethod
    def _file(root: Path) -> Path:
        return next((root / n for n in REDUCED if (root / n).is_file()), root / REDUCED[0])

    @staticmethod
    def _task(root: Path, traj: Trajectory) -> None:
        file = root / TASK
        if not file.is_file():
            traj.warnings.append(f"{file}: missing: no instruction")
            return
        doc = c.read_json(file)
        if not isinstance(doc, dict):
            raise TrajectoryFormatError(file, "(root)", "expected a JSON object")
        traj.instruction = c.typed(doc, "task_name", str, file, "task_name") or ""
        if c.typed(doc, "description", str, file, "description"):
            traj.metadata["description"] = doc["description"]

    @staticmethod
    def _video(root: Path, traj: Trajectory) -> None:
        vids = [p for p in c.list_dir(root) if p.suffix.lower() in c.VIDEO_SUFFIXES and c.is_video_file(p)
                and c.confine(p, traj.warnings, f"{root}: field 'video'") is not None]  # no link out of the folder
        if not vids:
            traj.warnings.append(f"{root}: no screen recording (the OBS .mp4) in the folder")
            return
        if len(vids) > 1:
            traj.warnings.append(f"{root}: {len(vids)} videos; using {vids[0].name}")
        try:
            traj.video = c.probe_video(vids[0])
        except VideoError as exc:
            traj.warnings.append(f"{vids[0]}: field 'video': recording not usable: {exc.reason}")

    @staticmethod
    def _captions(root: Path) -> dict[Any, str]:
        """Step id -> the annotated caption (``reduced_events_vis.jsonl``'s ``action``)."""
        file = root / REDUCED[1]
        if not file.is_file():
            return {}
        out: dict[Any, str] = {}
        for _, rec in c.iter_jsonl(file):
            if isinstance(rec, dict) and isinstance(rec.get("action"), str):
                out[rec.get("id")] = rec["action"]
        return out

    @staticmethod
    def _reduced(root: Path) -> list[tuple[int, dict[str, Any]]] | None:
        """The steps, in time order: ``reduced_events_complete.jsonl`` (its ``vis`` ones), else the vis file."""
        for name in REDUCED:
            file = root / name
            if not file.is_file():
                continue
            rows = []
            for line, rec in c.read_jsonl_strict(file):
                if not isinstance(rec, dict):
                    raise TrajectoryFormatError(file, None, "expected a JSON object", line=line)
                if rec.get("vis") is False:  # merged into another step, not shown to annotators
                    continue
                rows.append((line, rec))
            rows.sort(key=lambda r: c.number(r[1].get("start_time"), file, "start_time", r[0]) or 0.0)
            return rows
        return None


IMPORTER = AgentNetRecordingImporter()
