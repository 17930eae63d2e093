"""WebVoyager result folders, as ``run.py`` of MinorJerry/WebVoyager writes them.

A run of a task set writes ``results/<time>/task<id>/`` per task (the repository commits some as
``results/examples/task<Site>--<n>/``): ``interact_messages.json``, the chat with the model, and
``screenshot<k>.png``, the page with its set-of-marks labels drawn, taken at the start of iteration ``k``; some runs
also keep ``screenshot<k>_no_box.png``, ``agent.log`` and ``error.txt``.

The chat is a system prompt, then per iteration one user message (the first: "Now given a task: <ques>  Please
interact with <web> and get the answer.", then "Observation: ..."; the page's screenshot as an image part whose
data the writer blanked, or, for an older message clipped to save tokens, the text alone) and the model's reply:
``Thought: ...`` then ``Action: ...`` with one of ``Click [k]``, ``Type [k]; text``, ``Scroll [k|WINDOW]; up|down``,
``Wait``, ``GoBack``, ``Google``, ``ANSWER; text``. A reply that the harness could not use is followed by a user
message with no screenshot ("Format ERROR: ...", "The action you have chosen cannot be exected ..."); the
iteration after it takes none.

Each reply is a step: its thought, its action (read by :func:`gui_app.core.trajectory.actions.parse_action` through
a call such as ``click(element=10)``; the set-of-marks label kept in ``extra['element']``) and the screenshot of its
iteration (taken before the action). The last ``ANSWER`` is the run's answer (``metadata['answer']``).

The task comes from the repository's task list, ``data/WebVoyager_data.jsonl`` (``web_name``, ``id``, ``ques``,
``web``), when the run sits in the repository's layout (a folder above holds ``data/``) or in a task root
(``--tasks-root``); else from the first user message. Should the two disagree (a run of another task file with the
same ids) the message wins, with a warning: it is what the agent was given. The reference answer
(``reference_answer.json`` in the run, or the repository's ``data/reference_answer.json``: per site, ``answers`` of
``id``, ``type`` golden/possible and ``ans``) goes to ``metadata['reference_answer']``. The repository commits no
verdicts (success is judged afterwards, by people or its GPT-4V evaluator), so the outcome is unknown.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.safety import MAX_STEPS
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.formats import _transcript
from gui_app.core.trajectory.formats.osworld import tasks_roots
from gui_app.core.trajectory.model import Step, Trajectory

MESSAGES = "interact_messages.json"
TASK_FILES = ("WebVoyager_data.jsonl", "GAIA_web.jsonl")  # the repository's task lists (data/)
REFERENCE = "reference_answer.json"
# How many folders above the run the repository's data/ folder is looked for (results/<time>/task<id>/: three).
DATA_LEVELS = 4
GOOGLE = "https://www.google.com/"
# The harness's answers to a reply it could not use: the next iteration takes no screenshot.
FEEDBACK = ("Format ERROR", "The action you have chosen cannot be exected")
_FOLDER = re.compile(r"^task(?P<id>(?P<site>.+)--(?P<n>\d+))$")
_ACTION = re.compile(r"Action:\s*(?P<action>.*?)\s*(?:Observation:|\Z)", re.S)
_THOUGHT = re.compile(r"Thought:\s*(?P<thought>.*?)\s*(?:Action:|\Z)", re.S)
# WebVoyager's own action grammar (utils.extract_information), each as the call parse_action reads.
# Searched in this order, anchored where the harness anchors them.
_GRAMMAR: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("click", re.compile(r"Click \[?(\d+)\]?")),
    ("type", re.compile(r"Type \[?(\d+)\]?[; ]+\[?(.[^\]]*)\]?", re.S)),
    ("scroll", re.compile(r"Scroll \[?(\d+|WINDOW)\]?[; ]+\[?(up|down)\]?")),
    ("wait", re.compile(r"^Wait")),
    ("go_back", re.compile(r"^GoBack")),
    ("google", re.compile(r"^Google")),
    ("answer", re.compile(r"ANSWER[; ]+\[?(.[^\]]*)\]?", re.S)),
)


def parse_reply(text: str) -> tuple[str | None, str, dict[str, Any]]:
    """``(thought, action, call)`` of one model reply: the action as written and, when it is one of WebVoyager's,
    the call it stands for (``{"name": ..., "args": {...}}``; ``{}`` when it is not one)."""
    thought_m, action_m = _THOUGHT.search(text), _ACTION.search(text)
    thought = thought_m.group("thought") if thought_m else text[:action_m.start()] if action_m else text
    action = action_m.group("action") if action_m else ""
    call: dict[str, Any] = {}
    for name, pattern in _GRAMMAR:
        m = pattern.search(action)
        if m is None:
            continue
        args: dict[str, Any] = {}
        if name in ("click", "type", "scroll"):
            label = m.group(1)
            args["element"] = int(label) if label.isdigit() else label
        if name == "type":
            args["text"] = m.group(2).strip()
        elif name == "scroll":
            args["direction"] = m.group(2)
        elif name == "answer":
            args["text"] = m.group(1).strip()
        call = {"name": name, "args": args}
        break
    return (thought.strip() or None), action, call


def _call_text(call: dict[str, Any]) -> str:
    """The call ``parse_action`` reads for one of WebVoyager's actions (Google is a navigation to its page)."""
    if call["name"] == "google":
        return c.render_call("goto", {"url": GOOGLE})
    return c.render_call(call["name"], call["args"])


def _ancestors(root: Path) -> list[Path]:
    return list(root.parents)[:DATA_LEVELS]


def _data_dirs(root: Path) -> list[Path]:
    """Where the repository's ``data/`` may be: above the run, then in the task roots (each the checkout or its
    ``data`` folder)."""
    out = [anc / "data" for anc in _ancestors(root)]
    for base in tasks_roots():
        out += [base / "data", base]
    return list(dict.fromkeys(out))


class WebVoyagerImporter:
    name = "webvoyager"

    def sniff(self, path: Path) -> float:
        file = path / MESSAGES if path.is_dir() else path
        if file.name != MESSAGES or not file.is_file():
            return 0.0
        data = c.head(file).lstrip()
        if not data.startswith(b"[") or b'"role"' not in data:
            return 0.0
        if b"Now given a task:" in data or b"Numerical Label" in data or b"Thought:" in data:
            return 0.9
        return 0.5

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:
        return [self.load(path)]

    def load(self, path: Path) -> Trajectory:
        root = (path if path.is_dir() else path.parent).resolve()
        file = root / MESSAGES
        doc = c.read_json(file)
        if not isinstance(doc, list):
            raise TrajectoryFormatError(file, "(root)", "expected a list of messages")
        for i, m in enumerate(doc):
            if not isinstance(m, dict):
                raise TrajectoryFormatError(file, f"[{i}]", "expected a message object")
            c.typed(m, "role", str, file, f"[{i}].role", required=True)
            c.typed(m, "content", (str, list), file, f"[{i}].content")
        named = _FOLDER.match(root.name)
        task_id = named.group("id") if named else root.name
        site = named.group("site") if named else None
        traj = Trajectory(id=task_id, source_format=self.name, source_path=str(root), app=site)
        traj.metadata.update({"task": task_id, "run_folder": root.name})
        if site is not None:
            traj.metadata["web_name"] = site
        self._task(root, doc, task_id, traj)
        traj.steps = self._steps(root, file, doc, traj)
        self._reference(root, traj)
        error = root / "error.txt"
        if error.is_file():
            try:
                traj.metadata["error"] = c.read_text(error).strip()
                traj.warnings.append(f"{error}: the run ended with an error: {traj.metadata['error'][:200]}")
            except TrajectoryFormatError as exc:
                traj.warnings.append(f"error not read: {exc}")
        return traj

    @staticmethod
    def _task(root: Path, doc: list[Any], task_id: str, traj: Trajectory) -> None:
        """The task from the repository's task list, else (or when they disagree) from the first user message."""
        given, web = _transcript.find_task(doc)
        listed = None
        for folder in _data_dirs(root):
            for name in TASK_FILES:
                if (folder / name).is_file():
                    listed = _task_line(folder / name, task_id, traj)
                    if listed is not None:
                        break
            if listed is not None:
                break
        if listed is not None:
            file, rec = listed
            same = not given or " ".join(given.split()) == " ".join(str(rec.get("ques", "")).split())
            if same:
                traj.instruction, traj.instruction_source = rec["ques"], "task_config"
                traj.metadata["task_config"] = str(file)
                web = rec.get("web") if isinstance(rec.get("web"), str) else web
                if isinstance(rec.get("web_name"), str):
                    traj.app = traj.metadata["web_name"] = rec["web_name"]
            else:
                traj.warnings.append(f"{file}: field 'ques': task {task_id} there is not the one the agent was "
                                     f"given in {MESSAGES}; the message's is used")
        if not traj.instruction and given:
            traj.instruction, traj.instruction_source = given, "transcript"
        if web:
            traj.metadata["web"] = web
        if not traj.instruction:
            traj.warnings.append(f"{root / MESSAGES}: no instruction: no message says the task, and "
                                 f"data/{TASK_FILES[0]} above the run has no task {task_id}")

    @staticmethod
    def _steps(root: Path, file: Path, doc: list[Any], traj: Trajectory) -> list[Step]:
        steps: list[Step] = []
        iteration = 0
        shot: str | None = None
        for i, m in enumerate(doc):
            role = m["role"]
            if role == "user":
                if iteration == MAX_STEPS:  # one observation per reply: a run past this is no run
                    traj.warnings.append(_limit_warning(file, i, len(steps)))
                    break
                iteration += 1
                text = _transcript.message_text(m)
                if steps and text.startswith(FEEDBACK):
                    steps[-1].extra["feedback"] = text
                shot = _screenshot(root, iteration, m, traj.warnings, f"{file}: message {i}")
            elif role == "assistant":
                if len(steps) == MAX_STEPS:
                    traj.warnings.append(_limit_warning(file, i, len(steps)))
                    break
                text = _transcript.message_text(m)
                thought, action, call = parse_reply(text)
                extra: dict[str, Any] = {"iteration": iteration, "screenshot_timing": "before_action"}
                no_box = root / f"screenshot{iteration}_no_box.png"
                if shot is not None and c.is_regular(no_box):
                    extra["screenshot_no_box"] = str(no_box)
                if call.get("name") == "answer":
                    traj.metadata["answer"] = call["args"]["text"]
                if call:
                    extra["webvoyager_action"] = call["name"]
                    extra.update({k: v for k, v in call["args"].items() if k != "text"})
                    st = c.make_step(len(steps), _call_text(call), thought=thought, screenshot=shot, extra=extra)
                    st.action = action
                else:
                    st = c.make_step(len(steps), action, thought=thought, screenshot=shot, extra=extra)
                steps.append(st)
                shot = None  # the next reply has the next iteration's screenshot, or none
        return steps

    @staticmethod
    def _reference(root: Path, traj: Trajectory) -> None:
        """The reference answer of the task, where a reference file knows it."""
        site, named = traj.metadata.get("web_name"), _FOLDER.match(root.name)
        if named is None:
            return
        n = int(named.group("n"))
        for cand in [root / REFERENCE, *(d / REFERENCE for d in _data_dirs(root))]:
            if not cand.is_file():
                continue
            try:
                doc = c.read_json(cand)
            except TrajectoryFormatError as exc:
                traj.warnings.append(f"reference answer not read: {exc}")
                continue
            found = _reference_in(doc, site, n)
            if found is not None:
                traj.metadata["reference_answer"] = found["ans"]
                if isinstance(found.get("type"), str):
                    traj.metadata["reference_answer_type"] = found["type"]
                traj.metadata["reference_file"] = str(cand)
                return


def _reference_in(doc: Any, site: Any, n: int) -> dict[str, Any] | None:
    """The answer record of task ``n`` of ``site`` in a reference file: the repository's (per site, ``answers``), one
    site's (``answers``), or one answer (``ans``)."""
    if isinstance(doc, dict) and isinstance(doc.get("ans"), str):
        return doc
    if isinstance(doc, dict) and isinstance(site, str) and isinstance(doc.get(site), dict):
        doc = doc[site]
    answers = doc.get("answers") if isinstance(doc, dict) else None
    if not isinstance(answers, list):
        return None
    for a in answers:
        if isinstance(a, dict) and a.get("id") == n and not isinstance(a.get("id"), bool) and \
                isinstance(a.get("ans"), str):
            return a
    return None


def _task_line(file: Path, task_id: str, traj: Trajectory) -> tuple[Path, dict[str, Any]] | None:
    """The record of ``task_id`` in a task list (JSON Lines), or None; a list that does not read is a warning."""
    try:
        for _, rec in c.iter_jsonl(file):
            if isinstance(rec, dict) and rec.get("id") == task_id and isinstance(rec.get("ques"), str):
                return file, rec
    except TrajectoryFormatError as exc:
        traj.warnings.append(f"task list not read: {exc}")
    return None


def _limit_warning(file: Path, message: int, kept: int) -> str:
    return (f"{file}: message {message}: more than {MAX_STEPS:,} iterations, the most a run may have; loaded the "
            f"first {kept:,} steps, the rest not read")


def _screenshot(root: Path, iteration: int, message: dict[str, Any], warnings: list[str], where: str) -> str | None:
    """The screenshot of an iteration: ``screenshot<k>.png`` when there is one; when the message says a screenshot
    was taken (an image part, or the clipped text "A screenshot ...") and there is none, a warning."""
    name = f"screenshot{iteration}.png"
    content = message.get("content")
    said = (isinstance(content, list) and any(isinstance(p, dict) and p.get("type") in ("image_url", "image")
                                              for p in content)) or \
        (isinstance(content, str) and "Observation: A screenshot" in content)
    if not said and not (root / name).exists() and not (root / name).is_symlink():
        return None
    return c.resolve_media(root, name, warnings, f"{where}: field 'screenshot'")


IMPORTER = WebVoyagerImporter()
