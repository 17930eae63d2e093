"""OSWorld runs written by per-step trace harnesses: ``step_NN.png`` + ``step_NN_trace.json``, scores in a
``results.csv``.

A variant seen in public OSWorld harnesses keeps OSWorld's tree (``<domain>/<example_id>/``) but writes, per step,
the screenshot ``step_NN.png`` (``NN`` from 1, zero-padded or not) and a ``step_NN_trace.json`` object, and the
scores of a whole batch in one ``results.csv`` above the runs. Field names differ between harnesses, so each is
read from the first key present: the action from ``action`` / ``pyautogui`` / ``code`` / ``command`` (a string,
or an object whose ``pyautogui``/``command``/``code``/``action`` is one; the object is kept), the model's words
from ``response`` / ``thought`` /
``reasoning``, the time from ``timestamp`` / ``action_timestamp`` / ``time`` (ISO 8601, OSWorld's
``%Y%m%d@%H%M%S[%f]`` or Unix seconds), and ``reward``, ``done``, ``instruction``. The score is the
``score``/``result``/``reward``/``success`` cell of the ``results.csv`` row whose ``example_id``/``task_id``/``id``
names the run. The instruction is found as for OSWorld
(:func:`gui_app.core.trajectory.formats.osworld.find_task_config`).
The screenshot is the screen the step acted on (``before_action``): the harness saves it before asking the model.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.formats.osworld import (
    DOMAINS, RECORDING, RunLayout, find_task_config, parse_timestamp, read_task_config, run_layout)
from gui_app.core.trajectory.model import Outcome, Trajectory

_SHOT = re.compile(r"^step_(\d+)\.(png|jpe?g)$", re.I)
_TRACE = re.compile(r"^step_(\d+)_trace\.json$", re.I)
ACTION_KEYS = ("action", "pyautogui", "code", "command", "action_code")
THOUGHT_KEYS = ("response", "thought", "reasoning", "raw_response")
TIME_KEYS = ("timestamp", "action_timestamp", "time")
RESULTS = "results.csv"
ID_COLUMNS = ("example_id", "task_id", "id", "task")
SCORE_COLUMNS = ("score", "result", "reward", "success")


def _first(doc: dict[str, Any], keys: tuple[str, ...]) -> tuple[str | None, Any]:
    return next(((k, doc[k]) for k in keys if doc.get(k) not in (None, "")), (None, None))


def _wall(value: Any) -> datetime | None:
    """A step's time as a naive datetime (local wall clock as written), or None when it is none of the forms."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        try:
            return datetime.fromtimestamp(float(value), tz=timezone.utc).replace(tzinfo=None)
        except (OverflowError, ValueError, OSError):  # past the years a clock can show (10**400, 1e308)
            return None
    if isinstance(value, str):
        if "@" in value:
            return parse_timestamp(value)
        try:
            t = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        return t.replace(tzinfo=None)
    return None


class OSWorldTraceImporter:
    name = "osworld_trace"

    def sniff(self, path: Path) -> float:
        if not path.is_dir():
            return 0.0
        names = [p.name for p in c.list_dir(path)]
        traces = sum(1 for n in names if _TRACE.match(n))
        if traces and any(_SHOT.match(n) for n in names):
            return 0.9
        return 0.6 if traces else 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:
        return [self.load(path, align)]

    def load(self, path: Path, align: bool = True) -> Trajectory:
        root = path.resolve()
        warnings: list[str] = []
        layout = run_layout(root)
        traj = Trajectory(id=layout.example_id, source_format=self.name, source_path=str(root), warnings=warnings)
        shots: dict[int, Path] = {}
        traces: dict[int, Path] = {}
        for p in c.list_dir(root):
            m = _SHOT.match(p.name)
            if m and c.confine(p, warnings, f"{root}: field 'screenshot'") is not None:  # no link out of the run
                shots.setdefault(int(m.group(1)), p)
            m = _TRACE.match(p.name)
            if m:
                traces[int(m.group(1))] = p
        numbers = sorted(set(shots) | set(traces))
        t0: datetime | None = None
        for k, n in enumerate(numbers):
            doc: dict[str, Any] = {}
            if n in traces:
                raw = c.read_json(traces[n])
                if not isinstance(raw, dict):
                    raise TrajectoryFormatError(traces[n], "(root)", "expected a JSON object")
                doc = raw
            else:
                warnings.append(f"{root}: field 'steps[{k}]': step_{n} has a screenshot but no trace")
            key, action = _first(doc, ACTION_KEYS)
            if isinstance(action, dict):
                raw_action = action
                action = next((action[x] for x in ("pyautogui", "command", "code", "action")
                               if isinstance(action.get(x), str)), None) or json.dumps(action)
            if action is not None and not isinstance(action, str):
                action = str(action)
            _, thought = _first(doc, THOUGHT_KEYS)
            extra: dict[str, Any] = {"source_index": n, "screenshot_timing": "before_action"}
            if isinstance(doc.get(key or ""), dict):
                extra["action_raw"] = raw_action
            tkey, tval = _first(doc, TIME_KEYS)
            if tkey is not None:
                wall = _wall(tval)
                if wall is None:
                    warnings.append(f"{traces[n]}: field '{tkey}': not a time: {tval!r}")
                else:
                    t0 = t0 or wall
                    extra["wall_time"] = wall.isoformat()
                    extra["t_action"] = (wall - t0).total_seconds()
            if traces.get(n) is not None:
                extra["trace_file"] = str(traces[n])
            for opt in ("done", "info"):
                if doc.get(opt) is not None:
                    extra[opt] = doc[opt]
            if isinstance(doc.get("instruction"), str) and not traj.instruction:
                # The harness copies its task config's instruction into each trace.
                traj.instruction, traj.instruction_source = doc["instruction"], "task_config"
            reward = c.number(doc.get("reward"), traces.get(n, root), "reward")
            step = c.make_step(k, action or "", thought=thought if isinstance(thought, str) else None,
                               screenshot=str(shots[n]) if n in shots else None, reward=reward, extra=extra)
            traj.steps.append(step)
        self._task(root, layout, traj)
        self._score(root, layout, traj)
        c.attach_recording(traj, root / RECORDING, align)
        return traj

    @staticmethod
    def _task(root: Path, layout: RunLayout, traj: Trajectory) -> None:
        cand, looked = find_task_config(root, layout.example_id, layout.folder)
        if cand is not None and not traj.instruction:
            doc = read_task_config(cand, traj)
            if isinstance(doc, dict) and isinstance(doc.get("instruction"), str):
                traj.instruction, traj.instruction_source = doc["instruction"], "task_config"
                traj.metadata["task_config"] = str(cand)
        domain = layout.folder if layout.folder in DOMAINS or cand is not None else None
        if domain:
            traj.app = domain
            traj.metadata["domain"] = domain
        traj.metadata["task"] = f"{domain}/{layout.example_id}" if domain else layout.example_id
        traj.metadata["run_folder"] = layout.run_folder
        if not traj.instruction:
            traj.warnings.append(f"{root}: no instruction: it is not in the traces and the task config was not found "
                                 f"(looked for {'; '.join(looked)})")

    @staticmethod
    def _score(root: Path, layout: RunLayout, traj: Trajectory) -> None:
        """The run's row of the nearest ``results.csv`` above it (a batch's scores)."""
        for anc in list(root.parents)[:4]:
            file = anc / RESULTS
            if not file.is_file():
                continue
            try:
                rows = c.read_csv(file)
            except TrajectoryFormatError as exc:
                traj.warnings.append(f"outcome not read: {exc}")
                return
            for line, row in rows:
                id_col = next((k for k in ID_COLUMNS if k in row), None)
                if id_col is None or row[id_col] != layout.example_id:
                    continue
                if "domain" in row and layout.folder and row["domain"] not in ("", layout.folder):
                    continue
                col = next((k for k in SCORE_COLUMNS if row.get(k, "") != ""), None)
                if col is None:
                    traj.warnings.append(f"{file}:{line}: no score column ({', '.join(SCORE_COLUMNS)}) for the run")
                    return
                value = row[col].strip().lower()
                score = 1.0 if value == "true" else 0.0 if value == "false" else c.number(value, file, col, line)
                traj.outcome = Outcome(success=None if score is None else score >= 1.0, score=score, source="env")
                traj.metadata["results_csv"] = str(file)
                return
            traj.warnings.append(f"{file}: no row for {layout.example_id}: outcome unknown")
            return
        traj.warnings.append(f"{root}: no {RESULTS} above the run: outcome unknown")


IMPORTER = OSWorldTraceImporter()
