"""Agents' own transcripts: the task the agent was given, its thoughts per turn and the model it names.

A run's folder often holds the agent's chat (OSWorld's Anthropic agent writes ``messages.json``; WebVoyager writes
``interact_messages.json``): a list of ``{role, content}`` messages whose content is text or a list of parts
(``{"type": "text", "text": ...}``, image parts). The task sits in the system message or the first user message, in
the words the agents' prompts use (:data:`TASK_PHRASES`); later assistant messages hold the agent's analysis before
each batch of actions.

OSWorld's Anthropic agent (``mm_agents/computer_use.py`` of the security fork richartkeil/OSWorld-Sec-Eval) writes
the transcript before each model call, so it lacks the last turn, and keeps at most its last 20 turns; after each
turn comes a user message "Executed a translation of your issued tool call: [<the actions>]", the same action texts
``traj.jsonl`` holds, which is what ties a turn to its steps (:class:`Turn`).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c

# The task in the words of the agents' prompts, each with the agents that write it. The task runs to the end of the
# text unless the phrase says where it ends.
TASK_PHRASES = (
    # OSWorld's PromptAgent and Anthropic computer-use agent (the system message ends with it), Aguvis's planner
    # (the first user message).
    re.compile(r"You are asked to complete the following task:\s*(?P<task>.+)", re.S),
    # UI-TARS in OSWorld: the user prompt ends with "## User Instruction\n<task>".
    re.compile(r"^## User Instruction[ \t]*\n(?P<task>.+)", re.S | re.M),
    # WebVoyager: "Now given a task: <ques>  Please interact with <web> and get the answer."
    re.compile(r"Now given a task:\s*(?P<task>.+?)\s+Please interact with\s+(?P<web>\S+)\s+and get the answer", re.S),
    # Aguvis in OSWorld: "Instruction: <task>." then a blank line and the previous actions.
    re.compile(r"^Instruction:[ \t]*(?P<task>.+?)\s*(?:\n[ \t]*\n|\Z)", re.S | re.M),
)
EXECUTED = "Executed a translation of your issued tool call:"
# What the Anthropic agent writes for a turn whose text was empty: not a thought.
NO_THOUGHT = "No valid action"
# The longest action list read back from the transcript (characters): a real one is a few hundred.
MAX_ACTIONS_CHARS = 100_000
# A model named in a log: ``model='claude-3-7-sonnet-20250219'`` (the repr of an Anthropic or OpenAI response, which
# OSWorld's agents log to ``runtime.log``), ``"model": "gpt-4o"``, ``model: uitars-1.5``. The name has a digit: a
# model's name does ("the model: it" does not).
_MODEL = re.compile(r"""\bmodel(?:_name)?["']?\s*[=:]\s*["']?(?=[\w.:/@-]*\d)([A-Za-z][\w.:/@-]{1,100})""")
LOG_HEAD = 65536


@dataclass
class Turn:
    """One assistant message: its text and, when the transcript says, the actions it led to.

    Attributes:
        thought: the assistant's text ('' when it had none).
        actions: the actions the harness ran for it (the list after :data:`EXECUTED`), None when not said.
    """

    thought: str
    actions: list[Any] | None = None


@dataclass
class Transcript:
    """What a transcript file tells (see :func:`read`).

    Attributes:
        path: the file.
        task: the task the agent was given, '' when no message carries it in words the agents use.
        web: the website named with the task (WebVoyager), None otherwise.
        turns: the assistant's turns in order.
        model: the model the transcript names, None when it names none.
    """

    path: Path
    task: str = ""
    web: str | None = None
    turns: list[Turn] = field(default_factory=list)
    model: str | None = None


def message_text(message: Any) -> str:
    """The text of a message (its string content, or its text parts joined); '' for anything else."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    return c.text_of(content) if isinstance(content, (str, list)) else ""


def find_task(messages: list[Any]) -> tuple[str, str | None]:
    """``(task, web)`` from the system messages and the first user message, '' when none carries it."""
    for m in messages:
        if not isinstance(m, dict):
            continue
        text = message_text(m)
        for phrase in TASK_PHRASES:
            found = phrase.search(text)
            if found is not None and found.group("task").strip():
                web = found.groupdict().get("web")
                return found.group("task").strip(), web
        if m.get("role") == "user":
            break  # only the first user message carries the task
    return "", None


def _actions(text: str) -> list[Any] | None:
    """The action list of an :data:`EXECUTED` message, None when it does not read as one."""
    raw = text[len(EXECUTED):].strip()
    if not raw or len(raw) > MAX_ACTIONS_CHARS:
        return None
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, list) else None


def model_in(text: str) -> str | None:
    """The first model named in ``text`` (see :data:`_MODEL`), or None."""
    found = _MODEL.search(text)
    return found.group(1).rstrip(".,;:") if found else None


def read(file: Path, warnings: list[str]) -> Transcript | None:
    """The transcript in ``file``, or None (with a warning naming the file when it is there but unreadable: a bad
    transcript loses the thoughts, not the run).

    The file is a list of messages, or an object whose ``messages`` is one (and whose ``model`` may name the model).
    """
    try:
        doc = c.read_json(file)
    except TrajectoryFormatError as exc:
        warnings.append(f"transcript not read: {exc}")
        return None
    model = None
    if isinstance(doc, dict):
        model = doc.get("model") if isinstance(doc.get("model"), str) else None
        doc = doc.get("messages")
    if not isinstance(doc, list):
        warnings.append(f"{file}: field 'messages': expected a list of messages; transcript not read")
        return None
    out = Transcript(path=file, model=model)
    out.task, out.web = find_task(doc)
    for m in doc:
        if not isinstance(m, dict):
            continue
        if out.model is None and isinstance(m.get("model"), str):
            out.model = m["model"]
        text = message_text(m)
        if m.get("role") == "assistant":
            out.turns.append(Turn("" if text.strip() == NO_THOUGHT else text.strip()))
        elif m.get("role") == "user" and text.startswith(EXECUTED) and out.turns and out.turns[-1].actions is None:
            out.turns[-1].actions = _actions(text)
    return out


def model_from_log(file: Path) -> str | None:
    """The model a log names in its first 64 KB (see :data:`_MODEL`), or None."""
    return model_in(c.head(file, LOG_HEAD).decode("utf-8", errors="replace"))
