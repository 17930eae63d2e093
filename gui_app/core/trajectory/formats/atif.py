"""ATIF, the Agent Trajectory Interchange Format of Harbor / Terminal-Bench (``ATIF-v1.0`` to ``ATIF-v1.7``).

One JSON file per run: ``schema_version``, ``session_id``, ``agent`` {name, version, model_name}, ``steps[]``
(``step_id``, ``timestamp``, ``source`` system/user/agent, ``message``, ``reasoning_content``, ``tool_calls[]``
{tool_call_id, function_name, arguments}, ``observation.results[]`` {source_call_id, content}), ``notes``,
``final_metrics``. From v1.6 a message or an observation's content may be a list of parts
``{type: "text"|"image", text | source: {media_type, path}}``: image parts are where screenshots live.

Versions differ only by optional fields (RFC 0001's history: v1.1 adds a root ``extra``, v1.2 lets system steps
carry an ``observation``, v1.3/v1.4 add token ids to ``metrics``, v1.5 ``agent.tool_definitions``, v1.6 content
parts), so one reader serves them all. Harbor still writes v1.2 for several agents (claude-code, gemini-cli,
mini-swe-agent). A system step's observation (context summarisation, a subagent hand-off) is kept in
``metadata['system_observations']``.

Mapping: every tool call of an agent step becomes one Rollscope step (an agent step without tool calls becomes
one ``message`` step); its screenshot is the first image in the observation result answering that call (the
screen after the action), else the first image of the agent step. The first user message is the instruction;
system and later user messages go to ``metadata``. Image paths are relative to the JSON file.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.model import Step, Trajectory

SUPPORTED = ((1, 0), (1, 7))
_VERSION = re.compile(r"^ATIF-v(\d+)\.(\d+)$")
SOURCES = ("system", "user", "agent")


def _images(content: Any) -> list[str]:
    """Paths of the image parts of a v1.6+ content list."""
    if not isinstance(content, list):
        return []
    out = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image":
            src = part.get("source")
            if isinstance(src, dict) and isinstance(src.get("path"), str):
                out.append(src["path"])
    return out


class ATIFImporter:
    name = "atif"

    def sniff(self, path: Path) -> float:
        if not path.is_file():
            return 0.0
        data = c.head(path).lstrip()
        if not data.startswith(b"{"):
            return 0.0
        if re.search(rb'"schema_version"\s*:\s*"ATIF-v', data):
            return 0.95
        if b'"session_id"' in data and b'"steps"' in data and b'"agent"' in data and b'"step_id"' in data:
            return 0.6
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:  # noqa: ARG002 (no recording to align)
        return [self.load(path)]

    def load(self, path: Path, outcome: bool = True) -> Trajectory:
        """Read one ATIF file; ``outcome`` also reads the reward of the Harbor trial around it (``result.json``
        in the file's folder or its parent), which the trial importer does itself."""
        path = path.resolve()
        doc = c.read_json(path)
        if not isinstance(doc, dict):
            raise TrajectoryFormatError(path, "(root)", "expected a JSON object")
        warnings: list[str] = []
        version = c.typed(doc, "schema_version", str, path, "schema_version")
        m = _VERSION.match(version or "")
        if version is None:
            warnings.append(f"{path}: field 'schema_version': missing; read as ATIF-v1.6")
        elif not m or not (SUPPORTED[0] <= (int(m[1]), int(m[2])) <= SUPPORTED[1]):
            warnings.append(f"{path}: field 'schema_version': {version!r} is outside ATIF-v1.0..v1.7; read as v1.7")
        session = c.typed(doc, "session_id", str, path, "session_id")
        agent = c.typed(doc, "agent", dict, path, "agent", default={})
        steps_raw = c.typed(doc, "steps", list, path, "steps", required=True)
        traj = Trajectory(id=session or c.typed(doc, "trajectory_id", str, path, "trajectory_id") or path.stem,
                          source_format=self.name, source_path=str(path), warnings=warnings)
        if not session:
            warnings.append(f"{path}: field 'session_id': missing; id taken from the file name")
        for k in ("name", "version", "model_name"):
            c.typed(agent, k, str, path, f"agent.{k}")
        traj.agent = agent.get("model_name") or agent.get("name")
        traj.metadata.update({"schema_version": version, "session_id": session, "agent": agent})
        for k in ("notes", "final_metrics", "continued_trajectory_ref", "extra", "trajectory_id"):
            if doc.get(k) is not None:
                traj.metadata[k] = doc[k]

        root = path.parent
        user_msgs: list[str] = []
        system_msgs: list[str] = []
        for i, s in enumerate(steps_raw):
            f = f"steps[{i}]"
            if not isinstance(s, dict):
                raise TrajectoryFormatError(path, f, "expected an object")
            source = c.typed(s, "source", str, path, f"{f}.source", required=True)
            if source not in SOURCES:
                raise TrajectoryFormatError(path, f"{f}.source",
                                            f"expected one of {', '.join(SOURCES)}, got {source!r}")
            c.typed(s, "step_id", int, path, f"{f}.step_id", required=True)
            message = c.typed(s, "message", (str, list), path, f"{f}.message")
            if source == "system":
                system_msgs.append(c.text_of(message))
                obs = c.typed(s, "observation", dict, path, f"{f}.observation")
                if obs:  # v1.2+: a system event's result (summarisation, subagent delegation)
                    traj.metadata.setdefault("system_observations", []).append({"step_id": s["step_id"], **obs})
            elif source == "user":
                text = c.text_of(message)
                if not traj.instruction and text:
                    traj.instruction = text
                else:
                    user_msgs.append(text)
                shots = _images(message)
                if shots and "initial_screenshot" not in traj.metadata:
                    traj.metadata["initial_screenshot"] = c.resolve_media(root, shots[0], warnings,
                                                                          f"{path}: field '{f}.message'")
            else:
                traj.steps.extend(self._agent_steps(path, root, f, s, message, len(traj.steps), warnings))
        if system_msgs:
            traj.metadata["system_prompt"] = "\n\n".join(system_msgs)
        if user_msgs:
            traj.metadata["user_messages"] = user_msgs
        if outcome:
            self._outcome(path, traj)
        return traj

    @staticmethod
    def _agent_steps(path: Path, root: Path, f: str, s: dict, message: Any, start: int,
                     warnings: list[str]) -> list[Step]:
        reasoning = c.typed(s, "reasoning_content", str, path, f"{f}.reasoning_content")
        text = c.text_of(message)
        calls = c.typed(s, "tool_calls", list, path, f"{f}.tool_calls", default=[])
        obs = c.typed(s, "observation", dict, path, f"{f}.observation", default={})
        results = c.typed(obs, "results", list, path, f"{f}.observation.results", default=[])
        by_call: dict[str, list[str]] = {}
        texts: dict[str, str] = {}
        loose: list[str] = []
        loose_texts: list[str] = []
        for j, r in enumerate(results):
            rf = f"{f}.observation.results[{j}]"
            if not isinstance(r, dict):
                raise TrajectoryFormatError(path, rf, "expected an object")
            content = c.typed(r, "content", (str, list), path, f"{rf}.content")
            call_id = c.typed(r, "source_call_id", str, path, f"{rf}.source_call_id")
            imgs = _images(content)
            if call_id:
                by_call.setdefault(call_id, []).extend(imgs)
                texts[call_id] = c.text_of(content)
            else:
                loose.extend(imgs)
                if c.text_of(content):
                    loose_texts.append(c.text_of(content))
        step_imgs = _images(message) + loose
        base_extra: dict[str, Any] = {"step_id": s["step_id"], "screenshot_timing": "after_action"}
        for name in ("timestamp", "model_name", "reasoning_effort", "metrics", "extra"):
            if s.get(name) is not None:
                base_extra[name] = s[name]
        if text and reasoning:
            base_extra["message"] = text
        if loose_texts:  # results answering no particular call (terminus-2 runs keystrokes without tool calls)
            base_extra["observation"] = "\n".join(loose_texts)
        thought = reasoning or text or None
        out: list[Step] = []
        if not calls:
            shot = c.resolve_media(root, step_imgs[0] if step_imgs else None, warnings, f"{path}: field '{f}'")
            return [c.message_step(start, text, thought=reasoning, screenshot=shot, extra=dict(base_extra))]
        for k, call in enumerate(calls):
            cf = f"{f}.tool_calls[{k}]"
            fn, call_id, args = c.tool_call(call, path, cf, "function_name", "tool_call_id", json_args=True)
            imgs = by_call.get(call_id or "", []) or step_imgs
            shot = c.resolve_media(root, imgs[0] if imgs else None, warnings, f"{path}: field '{cf}'")
            extra = dict(base_extra, tool_call_id=call_id, function_name=fn, arguments=args)
            if call_id in texts and texts[call_id]:
                extra["observation"] = texts[call_id]
            out.append(c.call_step(start + k, fn, args, thought=thought, screenshot=shot, extra=extra))
        return out

    @staticmethod
    def _outcome(path: Path, traj: Trajectory) -> None:
        """Harbor writes the verifier's reward in the trial's ``result.json`` (the JSON's folder or its parent)."""
        from gui_app.core.trajectory.formats.harbor import RESULT, apply_result

        for cand in (path.parent / RESULT, path.parent.parent / RESULT):
            if not cand.is_file() or cand == path:
                continue
            try:
                apply_result(cand, traj)
            except TrajectoryFormatError as exc:
                traj.warnings.append(f"outcome not read: {exc}")
            return


IMPORTER = ATIFImporter()
