"""BrowserGym / AgentLab experiment directories.

Files: ``summary_info.json`` (``n_steps``, ``cum_reward``, ``cum_raw_reward``, ``err_msg``, ``stack_trace``,
``terminated``, ``truncated``, ``stats.*``), ``screenshot_step_{n}.png|jpg`` (the page the agent saw before
choosing action n), ``screenshot_som_step_{n}``, ``step_{n}.pkl.gz``, ``goal_object.pkl.gz``,
``experiment.log`` and sometimes ``combined_video.mp4``.

The pickles hold the actions and thoughts, but unpickling runs code chosen by whoever wrote the file, and needs
browsergym installed: this importer never opens them. Actions come from ``experiment.log`` (AgentLab logs
"Agent chose action:" followed by the action; lines starting with "action:" are read too), the goal from log
lines starting with "goal:". AgentLab names the directory ``<date>_<time>_<agent>_on_<benchmark>.<task>_<seed>_<hash>``
(``ExpArgs.prepare``: ``f"{agent_name}_on_{task_name}_{task_seed}"`` after the date, a short unique id after it;
older runs have no id): agent, task, seed and id are read from it. Success is ``cum_reward > 0``.

A run killed before its first step holds only ``exp_args.pkl`` (written by ``prepare`` before the loop starts):
it loads as an incomplete run with no steps and a warning, so a scan lists it instead of dropping it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.safety import MAX_STEPS, bounded_count
from gui_app.core.trajectory.model import Outcome, Trajectory

SUMMARY = "summary_info.json"
LOG = "experiment.log"
VIDEO = "combined_video.mp4"
_SHOT = re.compile(r"^screenshot_step_(\d+)\.(png|jpe?g|webp)$", re.I)
_PKL = re.compile(r"^step_(\d+)\.pkl\.gz$")
# "2024-05-01 12:00:00,123 - browsergym.experiments.loop - INFO - message" (AgentLab's log format)
_RECORD = re.compile(r"^\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d+)? - (\S+) - ([A-Z]+) - (.*)$")
# "2024-09-12_08-39-16_GenericAgent-gpt-4o-mini_on_miniwob.ascending-numbers_64_e6d2d5": date, agent, task, seed,
# and the short id AgentLab appends (6 hex digits; absent in older runs, longer in some versions).
_EXP_NAME = re.compile(r"^(?:(?P<date>\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d)_)?(?P<agent>.+?)_on_(?P<task>.+?)"
                       r"(?:_(?P<seed>\d+))?(?:_(?P<hash>[0-9a-f]{6,32}))?$")
EXP_ARGS = "exp_args.pkl"


def parse_exp_name(name: str) -> dict[str, Any] | None:
    """Agent, task, seed and id from an AgentLab experiment directory name, or None when it is not one.

    >>> parse_exp_name("2024-09-12_08-39-16_GenericAgent-gpt-4o-mini_on_miniwob.ascending-numbers_64_e6d2d5")["seed"]
    64
    """
    m = _EXP_NAME.match(name)
    if not m:
        return None
    out: dict[str, Any] = {"agent": m.group("agent"), "task": m.group("task")}
    if m.group("seed") is not None:
        out["seed"] = int(m.group("seed"))
    if m.group("hash"):
        out["exp_hash"] = m.group("hash")
    if m.group("date"):
        out["started"] = m.group("date")
    return out
LOG_BYTES = 4 * 1024 * 1024  # logs of long runs can be large; actions are spread through, so read this much


def parse_log(text: str) -> dict[str, Any]:
    """Actions (in order) and the goal from an AgentLab ``experiment.log``; multi-line records are joined."""
    records: list[str] = []
    for line in text.splitlines():
        m = _RECORD.match(line)
        if m:
            records.append(m.group(3))
        elif records:
            records[-1] += "\n" + line
    actions: list[str] = []
    goal = None
    for msg in records:
        low = msg.lstrip().lower()
        if low.startswith("agent chose action:"):
            actions.append(msg.split(":", 1)[1].strip())
        elif low.startswith("action:"):
            actions.append(msg.split(":", 1)[1].strip())
        elif goal is None and low.startswith("goal:"):
            goal = msg.split(":", 1)[1].strip()
    return {"actions": actions, "goal": goal}


class BrowserGymImporter:
    name = "browsergym"

    def sniff(self, path: Path) -> float:
        if not path.is_dir():
            return 0.0
        data = c.head(path / SUMMARY)
        if data.lstrip().startswith(b"{") and (b'"cum_reward"' in data or b'"n_steps"' in data):
            return 0.95
        names = [p.name for p in c.list_dir(path)]
        if any(_SHOT.match(n) for n in names) and any(_PKL.match(n) for n in names):
            return 0.7  # a run killed before it wrote its summary
        if EXP_ARGS in names and parse_exp_name(path.name) is not None:
            return 0.6  # a run killed before its first step: only the pickled arguments
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:
        return [self.load(path, align)]

    def load(self, path: Path, align: bool = True) -> Trajectory:
        """Read the run; ``align=False`` skips the pass over the recording that places steps in it (a scan
        that only lists runs does not need step times)."""
        root = path.resolve()
        warnings: list[str] = []
        traj = Trajectory(id=root.name, source_format=self.name, source_path=str(root), warnings=warnings)
        summary = self._summary(root, traj)
        shots: dict[int, Path] = {}
        pickles: set[int] = set()
        for p in c.list_dir(root):
            m = _SHOT.match(p.name)
            if m:
                shots.setdefault(int(m.group(1)), p)
            m = _PKL.match(p.name)
            if m:
                pickles.add(int(m.group(1)))
        log = self._log(root, traj)
        actions = log["actions"]
        if log["goal"]:
            traj.instruction = log["goal"]
        n = summary.get("n_steps")
        if n is None and not shots and not pickles and not actions and (root / EXP_ARGS).is_file():
            traj.metadata["incomplete"] = True
            warnings.append(f"{root}: incomplete run: only {EXP_ARGS} was written (the run was killed before its "
                            f"first step); nothing to show")
            return traj
        if n is None:
            # Without a summary: one step per observation that was followed by another one.
            n = max(len(actions), max(shots, default=-1), max(pickles, default=-1))
        if actions and len(actions) != n:
            warnings.append(f"{root / LOG}: {len(actions)} actions logged for {n} steps")
        for i in range(n):
            action = actions[i] if i < len(actions) else ""
            shot = shots.get(i)
            if shot is not None and c.confine(shot, warnings, f"{root}: field 'steps[{i}].screenshot'") is None:
                shot = None  # a symlink out of the run's folder
            elif shot is None:
                warnings.append(f"{root}: field 'steps[{i}].screenshot': file not found: screenshot_step_{i}.png")
            extra: dict[str, Any] = {"screenshot_timing": "before_action"}
            som = next((root / f"screenshot_som_step_{i}.{e}" for e in ("png", "jpg")
                        if (root / f"screenshot_som_step_{i}.{e}").is_file()), None)
            if som is not None:
                extra["screenshot_som"] = str(som)
            if i in pickles:
                extra["step_info_pickle"] = str(root / f"step_{i}.pkl.gz")  # referenced, never unpickled
            traj.steps.append(c.make_step(i, action, screenshot=str(shot) if shot else None, extra=extra))
        if n in shots:
            traj.metadata["final_screenshot"] = str(shots[n])
        if not actions and n:
            warnings.append(f"{root}: actions are only in step_*.pkl.gz pickles, which are never unpickled "
                            f"(untrusted code); steps have screenshots but no action text")
        if not traj.instruction:
            warnings.append(f"{root}: no goal found (it is only in goal_object.pkl.gz, which is never unpickled)")
        c.attach_recording(traj, root / VIDEO, align)
        return traj

    def _summary(self, root: Path, traj: Trajectory) -> dict[str, Any]:
        file = root / SUMMARY
        parsed = parse_exp_name(root.name)
        if parsed:
            traj.metadata.update({k: v for k, v in parsed.items() if k != "agent"})
            traj.agent = parsed["agent"]
            traj.app = parsed["task"].split(".", 1)[0]  # miniwob.click-test -> miniwob
        if not file.is_file():
            if not (root / EXP_ARGS).is_file() or any(_SHOT.match(p.name) for p in c.list_dir(root)):
                traj.warnings.append(f"{file}: missing: outcome unknown (the run may not have finished)")
            return {}
        doc = c.read_json(file)
        if not isinstance(doc, dict):
            raise TrajectoryFormatError(file, "(root)", "expected a JSON object")
        n_steps = c.typed(doc, "n_steps", int, file, "n_steps")
        if n_steps is not None:
            try:
                bounded_count(n_steps, MAX_STEPS, "steps")  # the steps are built one by one from this count
            except ValueError as exc:
                raise TrajectoryFormatError(file, "n_steps", str(exc)) from None
        cum = c.number(doc.get("cum_reward"), file, "cum_reward")
        raw = c.number(doc.get("cum_raw_reward"), file, "cum_raw_reward")
        for key in ("terminated", "truncated"):
            c.typed(doc, key, bool, file, key)
        for key in ("err_msg", "stack_trace"):
            c.typed(doc, key, str, file, key)
        if cum is not None:
            traj.outcome = Outcome(success=cum > 0, score=cum, source="env")
        traj.metadata.update({k: doc.get(k) for k in ("cum_raw_reward", "terminated", "truncated", "err_msg",
                                                      "stack_trace") if doc.get(k) is not None})
        if raw is not None:
            traj.metadata["cum_raw_reward"] = raw
        stats = {k: v for k, v in doc.items() if k.startswith("stats.")}
        if isinstance(doc.get("stats"), dict):
            stats.update(doc["stats"])
        if stats:
            traj.metadata["stats"] = stats
        if doc.get("err_msg"):
            traj.warnings.append(f"{file}: field 'err_msg': the run ended with an error: "
                                 f"{str(doc['err_msg']).splitlines()[0]}")
        return {"n_steps": n_steps}

    @staticmethod
    def _log(root: Path, traj: Trajectory) -> dict[str, Any]:
        file = root / LOG
        if not file.is_file():
            return {"actions": [], "goal": None}
        try:
            with c.open_regular(file) as fh:
                text = fh.read(LOG_BYTES).decode("utf-8", errors="replace")
        except OSError as exc:
            traj.warnings.append(f"{file}: cannot read: {exc.strerror or exc}")
            return {"actions": [], "goal": None}
        return parse_log(text)


IMPORTER = BrowserGymImporter()
