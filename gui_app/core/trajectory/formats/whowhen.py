"""Who&When failure-attribution records (multi-agent logs; text only, no video).

A record: ``question``, ``ground_truth``, ``history[]`` {``content``, and the agent in ``name`` or ``role``},
``mistake_agent``, ``mistake_step`` (0-based index into ``history``; the published files store it as a string),
``mistake_reason``, and in the published files ``is_correct`` (``is_corrected`` in the hand-crafted half),
``question_ID``, ``level``, ``system_prompt``, sometimes ``mistake_type`` and a top-level ``labels``. Keys come in
any order: the hand-crafted records put ``history`` (up to 300 KB) first, so detection reads both ends of a file.
A file is one record (JSON object), a list of records (JSON array) or one record per line (JSONL).

Each history message is one step (thought = the message, action = its first line, ``extra['agent']`` = who
spoke). Magentic-One writes the speaker as a role with a qualifier (``Orchestrator (thought)``,
``Orchestrator (-> WebSurfer)``): the agent is the part before the parenthesis, the whole role is kept in
``extra['role']``. The dataset's own labels are kept in ``metadata['labels']`` with ``source: 'whowhen'`` so
they can be compared with a user's or a model's attribution. Several records per file follow the AgentNet rule: readable
ones load (``PATH#N`` is the N-th of them), unreadable ones become warnings (see
:meth:`WhoWhenImporter.load_records`).
"""

from __future__ import annotations

import re
from functools import partial
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.model import Outcome, Step, Trajectory

_KEYS = (b'"mistake_agent"', b'"mistake_step"', b'"mistake_reason"', b'"ground_truth"', b'"question"')
ACTION_CHARS = 200
# "Orchestrator (thought)", "Orchestrator (-> WebSurfer)": Magentic-One's role names qualify the agent.
_QUALIFIED = re.compile(r"^\s*(.*?)\s*\(.*\)\s*$")


def agent_of(speaker: str | None) -> str | None:
    """The agent behind a history speaker: ``Orchestrator (-> WebSurfer)`` -> ``Orchestrator``."""
    if not speaker:
        return speaker
    m = _QUALIFIED.match(speaker)
    return (m.group(1) if m and m.group(1) else speaker).strip()


def same_agent(a: str | None, b: str | None) -> bool:
    """Whether two agent names denote one agent (the dataset spells ``WebSurfer`` and ``Websurfer``)."""
    x, y = agent_of(a), agent_of(b)
    return bool(x) and bool(y) and str(x).casefold() == str(y).casefold()


class WhoWhenImporter:
    name = "whowhen"

    def sniff(self, path: Path) -> float:
        if not path.is_file():
            return 0.0
        start = c.head(path).lstrip()
        if start[:1] not in (b"{", b"["):
            return 0.0
        # The telling keys may sit after a long history: look at both ends of the file.
        data = start + c.tail(path)
        hits = sum(k in data for k in _KEYS)
        if b'"history"' in data and hits >= 2:
            return 0.9
        if b'"history"' in data and hits == 1:
            return 0.5
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        path = path.resolve()
        return c.records_to_all(path, self.load_records(path))

    def load_records(self, path: Path) -> list[Trajectory | TrajectoryFormatError]:
        """One entry per record, in order: the trajectory, or the error naming that record's line."""
        path = path.resolve()
        text = c.read_text(path).lstrip()
        if text.startswith("[") or (text.startswith("{") and "\n{" not in text.rstrip()):
            doc = c.read_json(path)
            if isinstance(doc, dict):
                return [c.guard(lambda: self._record(path, None, doc, path.stem))]
            if not isinstance(doc, list):
                raise TrajectoryFormatError(path, "(root)", "expected an object or an array of objects")
            return [c.guard(partial(self._record, path, None, r, f"{path.stem}#{i}", f"[{i}]"))
                    for i, r in enumerate(doc)]
        out: list[Trajectory | TrajectoryFormatError] = []
        for lineno, value in c.iter_jsonl(path):
            if isinstance(value, TrajectoryFormatError):
                out.append(value)
            else:
                out.append(c.guard(partial(self._record, path, lineno, value, f"{path.stem}#{lineno}")))
        return out

    def _record(self, path: Path, line: int | None, rec: Any, fallback_id: str, prefix: str = "") -> Trajectory:
        if not isinstance(rec, dict):
            raise TrajectoryFormatError(path, prefix or None, "expected a JSON object", line=line)
        def f(key: str) -> str:
            return f"{prefix}.{key}" if prefix else key

        def get(key: str, types: Any) -> Any:
            return c.typed(rec, key, types, path, f(key), line=line)
        question = get("question", str) or ""
        history = c.typed(rec, "history", list, path, f("history"), line=line, required=True)
        qid = get("question_ID", (str, int))
        correct = get("is_correct", bool)
        if correct is None:
            correct = get("is_corrected", bool)
        mistake_step_raw = rec.get("mistake_step")
        mistake_step = None
        if mistake_step_raw not in (None, ""):
            num = c.number(mistake_step_raw, path, f("mistake_step"), line)
            if num is None or num != int(num):
                raise TrajectoryFormatError(path, f("mistake_step"), f"expected a step index, got {mistake_step_raw!r}",
                                            line=line)
            mistake_step = int(num)
        labels = {"mistake_agent": get("mistake_agent", str), "mistake_step": mistake_step,
                  "mistake_reason": get("mistake_reason", str), "source": "whowhen"}
        # Kept as the dataset has them (a string in every published record, but not promised): a failure category.
        for key in ("mistake_type", "labels"):
            if rec.get(key) not in (None, ""):
                labels[key] = rec[key]
        traj = Trajectory(
            id=str(qid) if qid not in (None, "") else fallback_id,
            instruction=question,
            source_format=self.name,
            source_path=str(path),
            outcome=Outcome(success=correct, source="env" if correct is not None else None),
            metadata={"labels": labels, "ground_truth": rec.get("ground_truth")},
        )
        if line is not None:
            traj.metadata["line"] = line
        for key in ("level", "system_prompt"):
            if rec.get(key) is not None:
                traj.metadata[key] = rec[key]
        where = f"{path}:{line}" if line else str(path)
        if mistake_step is not None and 0 <= mistake_step < len(history):
            traj.metadata["first_error_step"] = mistake_step
        elif mistake_step is not None:
            traj.warnings.append(f"{where}: field '{f('mistake_step')}': {mistake_step} is outside the "
                                 f"{len(history)} history messages")
            mistake_step = None
        agents = []
        for i, msg in enumerate(history):
            mf = f(f"history[{i}]")
            if not isinstance(msg, dict):
                raise TrajectoryFormatError(path, mf, "expected an object", line=line)
            content = c.text_of(c.typed(msg, "content", (str, list), path, f"{mf}.content", line=line))
            speaker = c.typed(msg, "name", str, path, f"{mf}.name", line=line) or \
                c.typed(msg, "role", str, path, f"{mf}.role", line=line)
            agent = agent_of(speaker)
            first = next((ln.strip() for ln in content.splitlines() if ln.strip()), "")
            action = first if len(first) <= ACTION_CHARS else first[: ACTION_CHARS - 1] + "…"
            extra: dict[str, Any] = {"agent": agent}
            if msg.get("role") and (msg.get("name") or msg["role"] != agent):
                extra["role"] = msg["role"]
            traj.steps.append(Step(index=i, action=action, action_type="message", thought=content, extra=extra))
            if agent and agent not in agents:
                agents.append(agent)
        traj.agent = ", ".join(agents) or None
        if labels["mistake_agent"] and mistake_step is not None and \
                not same_agent(traj.steps[mistake_step].extra.get("agent"), labels["mistake_agent"]):
            traj.warnings.append(f"{where}: field '{f('mistake_agent')}': "
                                 f"{labels['mistake_agent']!r} did not write step {mistake_step} "
                                 f"({traj.steps[mistake_step].extra.get('agent')!r} did)")
        return traj


IMPORTER = WhoWhenImporter()
