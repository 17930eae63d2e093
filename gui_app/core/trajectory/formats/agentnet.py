"""AgentNet / OpenCUA JSONL: one task per line.

Task: ``task_id``, ``instruction``, ``natural_language_task``, ``actual_task``, ``task_completed``,
``alignment_score``, ``efficiency_score``, ``task_difficulty``, ``reason``, ``traj[]``. Step: ``index``,
``image``, ``value`` {``observation``, ``thought``, ``action``, ``code`` (pyautogui with coordinates normalised
to [0, 1]), ``last_step_correct``, ``last_step_redundant``, ``reflection``}. Image names are relative to the
file, or to an ``images/`` directory beside it.

The file may also be one JSON document (a task object, or an array of tasks, pretty-printed or not): it is read
as a whole when it parses as one, line by line otherwise.

Several trajectories per file: ``load_all`` returns the readable ones in line order (``PATH#N`` is the N-th of
them, which is how the catalog keys them). A line that cannot be read does not sink the file: it is skipped and
every loaded trajectory carries a warning naming the file and line; :meth:`AgentNetImporter.load_records`
returns one entry per line (trajectory or the error) for callers that want each line's fate. A file whose every
line is bad raises the first line's error.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.model import Outcome, Trajectory

_TASK_KEYS = (b'"natural_language_task"', b'"actual_task"', b'"task_completed"', b'"traj"', b'"alignment_score"')


class AgentNetImporter:
    name = "agentnet"

    def sniff(self, path: Path) -> float:
        if not path.is_file():
            return 0.0
        data = c.head(path).lstrip()
        if not data.startswith((b"{", b"[")):
            return 0.0
        first = data.split(b"\n", 1)[0]
        if first.strip() in (b"{", b"[", b"[{"):  # a pretty-printed document: its keys follow on the next lines
            first = data
        hits = sum(k in first for k in _TASK_KEYS)
        if b'"task_id"' in first and b'"instruction"' in first and hits >= 1:
            return 0.9
        if hits >= 2 and (b'"instruction"' in first or b'"task_id"' in first):
            return 0.7
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        path = path.resolve()
        return c.records_to_all(path, self.load_records(path))

    def load_records(self, path: Path) -> list[Trajectory | TrajectoryFormatError]:
        """One entry per record, in order: the trajectory, or the error naming that record's line."""
        path = path.resolve()
        out: list[Trajectory | TrajectoryFormatError] = []
        seen: set[str] = set()
        for lineno, value in self._records(path):
            if isinstance(value, TrajectoryFormatError):
                out.append(value)
                continue
            rec = c.guard(partial(self._task, path, lineno, value))
            if isinstance(rec, Trajectory):
                if rec.id in seen:  # ids must be unique within a catalog
                    rec.warnings.append(f"{path}:{lineno}: field 'task_id': {rec.id!r} repeats an earlier line")
                    rec.id = f"{rec.id}#{lineno}"
                seen.add(rec.id)
            out.append(rec)
        return out

    @staticmethod
    def _records(path: Path) -> list[tuple[int, Any]]:
        """``(line, record)`` pairs: the whole file as one JSON document when it is one (an object, or an array of
        objects, each numbered by its position from 1), else one JSON value per line (errors as values)."""
        text = c.read_text(path).lstrip()
        if text.startswith("[") or (text.startswith("{") and "\n{" not in text.rstrip()):
            try:
                doc = c.parse_json(text, where=str(path))
            except c.BadJSON:
                doc = None  # not one document: JSON Lines, whose bad lines are reported one by one
            if isinstance(doc, list):
                return list(enumerate(doc, start=1))
            if isinstance(doc, dict):
                return [(1, doc)]
        return list(c.iter_jsonl(path))

    def _task(self, path: Path, line: int, rec: Any) -> Trajectory:
        if not isinstance(rec, dict):
            raise TrajectoryFormatError(path, None, "expected a JSON object", line=line)
        get = lambda key, types, **kw: c.typed(rec, key, types, path, key, line=line, **kw)  # noqa: E731
        task_id = get("task_id", (str, int))
        instruction = get("instruction", str) or get("natural_language_task", str) or get("actual_task", str) or ""
        completed = get("task_completed", bool)
        alignment = c.number(rec.get("alignment_score"), path, "alignment_score", line)
        efficiency = c.number(rec.get("efficiency_score"), path, "efficiency_score", line)
        steps_raw = get("traj", list, required=True)
        warnings: list[str] = []
        traj = Trajectory(
            id=str(task_id) if task_id not in (None, "") else f"{path.stem}#{line}",
            instruction=instruction,
            source_format=self.name,
            source_path=str(path),
            warnings=warnings,
            # task_completed comes from AgentNet's judge model (with alignment/efficiency scores), not from a
            # checker run in the environment.
            outcome=Outcome(success=completed, score=alignment, source="model" if completed is not None else None),
        )
        for key in ("natural_language_task", "actual_task", "task_difficulty", "reason"):
            if rec.get(key) is not None:
                traj.metadata[key] = rec[key]
        traj.metadata.update({"line": line, "alignment_score": alignment, "efficiency_score": efficiency})
        if isinstance(rec.get("domain"), str):
            traj.app = rec["domain"]
        image_dirs = [path.parent, path.parent / "images"]
        for i, s in enumerate(steps_raw):
            f = f"traj[{i}]"
            if not isinstance(s, dict):
                raise TrajectoryFormatError(path, f, "expected an object", line=line)
            value = c.typed(s, "value", dict, path, f"{f}.value", line=line, required=True)
            vget = lambda key, types: c.typed(value, key, types, path, f"{f}.value.{key}", line=line)  # noqa: E731
            code = vget("code", str) or ""
            action_nl = vget("action", str)
            image = c.typed(s, "image", str, path, f"{f}.image", line=line)
            shot = None
            if image:
                found = next((d / image for d in image_dirs if c.is_regular(d / image)), None)
                shot = c.resolve_media(found.parent if found else path.parent, found.name if found else image,
                                       warnings, f"{path}:{line}: field '{f}.image'")
            extra: dict[str, Any] = {"screenshot_timing": "before_action"}
            for key in ("observation", "reflection"):
                if vget(key, str):
                    extra[key] = value[key]
            for key in ("last_step_correct", "last_step_redundant"):
                if vget(key, bool) is not None:
                    extra[key] = value[key]
            if action_nl:
                extra["natural_language_action"] = action_nl
            if s.get("index") is not None:
                extra["source_index"] = c.typed(s, "index", int, path, f"{f}.index", line=line)
            step = c.make_step(i, code or action_nl or "", thought=vget("thought", str), screenshot=shot, extra=extra)
            c.normalized_coords(step)
            traj.steps.append(step)
        return traj


IMPORTER = AgentNetImporter()
