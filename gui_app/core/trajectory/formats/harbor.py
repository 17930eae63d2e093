"""Harbor trial folders: one agent run on one task, as Harbor (the Terminal-Bench harness) writes it.

A trial folder holds ``config.json``, ``result.json`` (Harbor's ``TrialResult``: ``task_name``, ``trial_name``,
``agent_info`` {name, version, model_info {name, provider}}, ``agent_result`` {n_input_tokens, n_cache_tokens,
n_output_tokens, cost_usd}, ``verifier_result`` {rewards {reward, ...}}, ``exception_info``, timings), ``agent/``
(what the agent wrote; ``agent/trajectory.json`` in ATIF for agents that produce one) and ``verifier/``
(``reward.txt``, test output).

The steps come from ``agent/trajectory.json`` (read by :mod:`gui_app.core.trajectory.formats.atif`); the outcome from
``verifier_result.rewards.reward`` (success when above 0). The trial's name is the id: ATIF ``session_id`` values
repeat (Harbor's golden files all say ``NORMALIZED_SESSION_ID``), so it is kept in ``metadata['session_id']``. A
trial whose agent wrote no ATIF file still loads, with its outcome, no steps and a warning; an ``exception_info``
(the agent or verifier raised) becomes a warning too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.model import Outcome, Trajectory

RESULT = "result.json"
ATIF_PATH = Path("agent") / "trajectory.json"


def apply_result(file: Path, traj: Trajectory) -> dict[str, Any]:
    """Read a trial's ``result.json`` into ``traj``: outcome, task, agent, cost and what went wrong.

    Returns:
        The parsed document (``{}`` when it is not an object).

    Raises:
        TrajectoryFormatError: the file is not JSON, or a field has the wrong type (names file and field).
    """
    doc = c.read_json(file)
    if not isinstance(doc, dict):
        raise TrajectoryFormatError(file, "(root)", "expected a JSON object")
    vr = c.typed(doc, "verifier_result", dict, file, "verifier_result")
    rewards = c.typed(vr or {}, "rewards", dict, file, "verifier_result.rewards")
    if rewards:
        reward = c.number(rewards.get("reward"), file, "verifier_result.rewards.reward")
        if reward is not None:
            traj.outcome = Outcome(success=reward > 0, score=reward, source="env")
        traj.metadata["rewards"] = rewards
    for key in ("task_name", "trial_name", "source", "started_at", "finished_at"):
        value = c.typed(doc, key, str, file, key)
        if value:
            traj.metadata["task" if key == "task_name" else key] = value
    info = c.typed(doc, "agent_info", dict, file, "agent_info") or {}
    model = c.typed(info, "model_info", dict, file, "agent_info.model_info") or {}
    if isinstance(model.get("name"), str):
        traj.agent = model["name"]
    elif isinstance(info.get("name"), str) and not traj.agent:
        traj.agent = info["name"]
    if info:
        traj.metadata["agent_info"] = info
    result = c.typed(doc, "agent_result", dict, file, "agent_result")
    if result:
        traj.metadata["agent_result"] = {k: v for k, v in result.items() if k != "rollout_details"}
    exc = c.typed(doc, "exception_info", dict, file, "exception_info")
    if exc:
        what = f"{exc.get('exception_type', 'exception')}: {str(exc.get('exception_message', '')).strip()}"
        traj.metadata["exception_info"] = exc
        traj.warnings.append(f"{file}: field 'exception_info': the trial raised {what.splitlines()[0]}")
    if vr is None and traj.outcome.success is None:
        traj.warnings.append(f"{file}: field 'verifier_result': missing: outcome unknown")
    return doc


class HarborTrialImporter:
    name = "harbor"

    def sniff(self, path: Path) -> float:
        if not path.is_dir():
            return 0.0
        data = c.head(path / RESULT)
        if not data.lstrip().startswith(b"{"):
            return 0.0
        if b'"trial_name"' in data or b'"verifier_result"' in data or b'"task_checksum"' in data:
            return 0.9 if (path / "agent").is_dir() or (path / "verifier").is_dir() else 0.7
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        return [self.load(path)]

    def load(self, path: Path) -> Trajectory:
        from gui_app.core.trajectory.formats.atif import IMPORTER as ATIF

        root = path.resolve()
        atif = root / ATIF_PATH
        if atif.is_file():
            traj = ATIF.load(atif, outcome=False)
            traj.metadata["atif_file"] = str(atif)
        else:
            traj = Trajectory(id=root.name)
            traj.warnings.append(f"{atif}: missing: the agent wrote no ATIF trajectory; only the outcome is known")
        traj.source_format, traj.source_path = self.name, str(root)
        apply_result(root / RESULT, traj)
        traj.id = traj.metadata.get("trial_name") or root.name
        return traj


IMPORTER = HarborTrialImporter()
