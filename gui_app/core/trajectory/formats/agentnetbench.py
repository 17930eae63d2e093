"""AgentNetBench tasks: OpenCUA's offline evaluation samples, one task per JSON file.

A file (``evaluation/agentnetbench/sample_data/s_<id>.json`` in OpenCUA): ``task_id``, ``user_task_description``
(the instruction), ``high_level_task_description``, ``steps[]`` {``step_num``, ``image`` (the screenshot the
demonstrator acted on, in an ``images/`` folder beside the file), ``action`` (pyautogui code with coordinates
normalised to [0, 1], possibly several lines), ``milestone``, ``inner_monologue`` {``observation``, ``thought``,
``low_level_instruction``}, ``ground_truth_actions`` [{``type``, ``params``, ``metadata`` {``bboxes``}}],
``alternative_options``}, and sometimes ``meta_info`` (``applications``, ``websites``, ``system``,
``screen_resolution``, ``domain``, complexity). ``step_num`` skips numbers (steps judged redundant were dropped);
it is kept as ``extra['source_index']``.

These are human demonstrations used as references, so there is no outcome; the ground-truth actions (with their
accepted bounding boxes) are kept per step in ``extra['ground_truth_actions']``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.model import Trajectory


class AgentNetBenchImporter:
    name = "agentnetbench"

    def sniff(self, path: Path) -> float:
        if not path.is_file() or path.suffix.lower() != ".json":
            return 0.0
        data = c.head(path).lstrip()
        if not data.startswith(b"{"):
            return 0.0
        data += c.tail(path)
        if b'"user_task_description"' in data and b'"steps"' in data:
            return 0.9 if b'"ground_truth_actions"' in data or b'"inner_monologue"' in data else 0.7
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        return [self.load(path)]

    def load(self, path: Path) -> Trajectory:
        path = path.resolve()
        doc = c.read_json(path)
        if not isinstance(doc, dict):
            raise TrajectoryFormatError(path, "(root)", "expected a JSON object")
        get = lambda key, types, **kw: c.typed(doc, key, types, path, key, **kw)  # noqa: E731
        task_id = get("task_id", (str, int))
        instruction = get("user_task_description", str, required=True)
        steps_raw = get("steps", list, required=True)
        warnings: list[str] = []
        traj = Trajectory(id=str(task_id) if task_id not in (None, "") else path.stem, instruction=instruction,
                          source_format=self.name, source_path=str(path), warnings=warnings)
        high = get("high_level_task_description", str)
        if high:
            traj.metadata["high_level_task_description"] = high
        meta = get("meta_info", dict)
        if meta:
            traj.metadata["meta_info"] = meta
            apps = [a for k in ("applications", "websites") if isinstance(meta.get(k), list) for a in meta[k]
                    if isinstance(a, str)]
            traj.app = ", ".join(apps) or None
            traj.os = meta.get("system") if isinstance(meta.get("system"), str) else None
            if isinstance(meta.get("domain"), str):
                traj.metadata["task"] = meta["domain"] + (f"/{meta['sub_domain']}"
                                                          if isinstance(meta.get("sub_domain"), str) else "")
        image_dirs = [path.parent / "images", path.parent]
        for i, s in enumerate(steps_raw):
            f = f"steps[{i}]"
            if not isinstance(s, dict):
                raise TrajectoryFormatError(path, f, "expected an object")
            action = c.typed(s, "action", str, path, f"{f}.action", required=True)
            image = c.typed(s, "image", str, path, f"{f}.image")
            monologue = c.typed(s, "inner_monologue", dict, path, f"{f}.inner_monologue", default={})
            gt = c.typed(s, "ground_truth_actions", list, path, f"{f}.ground_truth_actions")
            shot = None
            if image:
                found = next((d / image for d in image_dirs if c.is_regular(d / image)), None)
                if found is not None:  # inside the file's folder or the library only (a name may be ../../x)
                    shot = c.resolve_media(found.parent, found.name, warnings, f"{path}: field '{f}.image'")
                else:
                    warnings.append(f"{path}: field '{f}.image': file not found: {image} (looked in images/ and "
                                    f"beside the file)")
            extra: dict[str, Any] = {"screenshot_timing": "before_action"}
            num = c.typed(s, "step_num", int, path, f"{f}.step_num")
            if num is not None:
                extra["source_index"] = num
            for key in ("observation", "low_level_instruction"):
                if isinstance(monologue.get(key), str):
                    extra[key] = monologue[key]
            if c.typed(s, "milestone", bool, path, f"{f}.milestone") is not None:
                extra["milestone"] = s["milestone"]
            if gt is not None:
                extra["ground_truth_actions"] = gt
            if s.get("alternative_options"):
                extra["alternative_options"] = s["alternative_options"]
            thought = monologue.get("thought") if isinstance(monologue.get("thought"), str) else None
            step = c.make_step(i, action, thought=thought, screenshot=shot, extra=extra)
            c.normalized_coords(step)
            traj.steps.append(step)
        return traj


IMPORTER = AgentNetBenchImporter()
