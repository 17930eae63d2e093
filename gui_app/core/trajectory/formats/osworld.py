"""OSWorld result directories, as ``lib_run_single.py`` (OSWorld and its forks) writes them.

A directory holds ``traj.jsonl`` (one line per executed action: ``step_num``, ``action_timestamp``, ``action``,
``response``, ``reward``, ``done``, ``info``, ``screenshot_file``, sometimes ``natural_language_action``),
``step_{n}_{timestamp}.png`` (the screen *after* the action), ``result.txt`` (the evaluator's score),
``recording.mp4`` and, in forks, ``runtime.log``. ``step_num`` repeats when one model response produced several
actions; each action stays its own step here.

Where things live: OSWorld writes runs to ``results/<action_space>/<observation>/<model>/<domain>/<example_id>/``
(some harnesses add a run-index folder, ``<example_id>/0/``) and keeps the task, with its ``instruction``, in
``evaluation_examples/examples/<domain>/<example_id>.json``; the result directory holds no instruction. The task
config is found, in this order: a sidecar in the run (``task.json``/``task_config.json``/``config.json``), the
folder above (``../<example_id>.json``), ``evaluation_examples/examples/<domain>/<example_id>.json`` (or
``examples/...``) in any ancestor folder (the layout of a checkout of OSWorld with its ``results/``), and in the
task roots (:func:`tasks_roots`: those a command's ``--tasks-root`` passes to the load, else
``$ROLLSCOPE_OSWORLD_TASKS_ROOT``, paths separated by ``:``; each may be the OSWorld checkout, its
``evaluation_examples`` or its ``examples`` folder).

Forks keep the instruction elsewhere too, and when there is no task config it is looked for there, in this order
(:attr:`Trajectory.instruction_source` says which gave it): one config per domain or scenario, ``<domain>.json``
beside or above the ``<domain>/`` folder of the runs, in a folder beside one of those (the security fork
richartkeil/OSWorld-Sec-Eval keeps ``sec_eval/<scenario>.json`` beside ``sec_eval_results/<scenario>/<time>-<label>/``)
or in a task root (:func:`find_domain_config`); then the agent's own transcript, ``messages.json`` (OSWorld's
Anthropic agent: its system message ends "You are asked to complete the following task: <instruction>"; see
:mod:`gui_app.core.trajectory.formats._transcript`), whose per-turn text also becomes the thought of the steps that
turn ran, when they have none. A run whose instruction is not found loads with a warning that says where it looked;
scoring it is refused (the reward model judges a run against its task).

The example id is the folder name, which every model's run of that task shares: the model folder above the
domain is kept as ``agent`` and the catalog keys runs by their path, not by this id. A run folder named by the time
it started (``20250226@163734-failed``: forks that run one scenario many times) names no task: such a run's id is
``<domain>/<run folder>`` and its task is its domain (the folder above), and its agent is the model its transcript or
``runtime.log`` names (the folder above the domain is no model's then).

No offset into the recording is stored (OSWorld issue #223). Each action's ``action_timestamp`` and the
recording share one wall clock, so :func:`gui_app.core.trajectory.align.align_trajectory` fits one offset between them
and
refines it with the screenshots.

A variant seen in public repositories writes ``step_NN.png`` with ``step_NN_trace.json`` (one JSON object per
step: the action, the model's response, a timestamp) instead of ``traj.jsonl``, and the scores of a whole batch in
a ``results.csv`` above the runs; it is read too (:class:`OSWorldTraceImporter`).

What makes the run unreadable raises (bad ``traj.jsonl`` line, wrong field type); what only makes it partial
(missing screenshot, missing or garbled ``result.txt``, a recording that will not open) becomes a warning.
"""

from __future__ import annotations

import bisect
import glob
import json
import os
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from gui_app.core.errors import TrajectoryFormatError
from gui_app.core.trajectory.formats import _common as c
from gui_app.core.trajectory.formats import _transcript
from gui_app.core.safety import MAX_STEPS, scope
from gui_app.core.trajectory.model import Outcome, Step, Trajectory

LOG = "traj.jsonl"
RESULT = "result.txt"
RECORDING = "recording.mp4"
TRANSCRIPT = "messages.json"  # OSWorld's Anthropic agent's chat (see _transcript)
RUNTIME_LOG = "runtime.log"
SIDECARS = ("task.json", "task_config.json", "config.json", "example.json")
TASKS_ROOT_ENV = "ROLLSCOPE_OSWORLD_TASKS_ROOT"
# Below a tasks root (or an ancestor of the run), where <domain>/<example_id>.json may sit.
TASK_DIRS = (Path("evaluation_examples") / "examples", Path("examples"), Path("."))
TIMESTAMP_FORMATS = ("%Y%m%d@%H%M%S%f", "%Y%m%d@%H%M%S")
# OSWorld's result tree is results/<action_space>/<observation>/<model>/<domain>/<example_id>: the parent
# directory names the application when it is one of these domains.
DOMAINS = {"chrome", "gimp", "libreoffice_calc", "libreoffice_impress", "libreoffice_writer", "multi_apps", "os",
           "thunderbird", "vlc", "vs_code"}
# A run folder named by the time it started, with or without a label after it: ``20250226@163734-failed``,
# ``20250226@163734_run_1``, ``2025-02-26_16-37-34``. (Not ``12345678-1234-...``: an example id may be a UUID.)
TIMED_RUN = re.compile(r"^(?:\d{8}[@_T]\d{6}|\d{4}-\d{2}-\d{2}[_T ]\d{2}[-:]\d{2}[-:]\d{2})")
# How many folders above a domain's folder a domain config is looked for (each one, and the folders in it).
DOMAIN_CONFIG_LEVELS = 3


def parse_timestamp(value: str) -> datetime | None:
    """``20240101@120305`` or ``20240101@120305123456`` (forks add microseconds) -> datetime, else None."""
    # Pick the format by length: strptime would happily read "140209" as 14:02:0 plus 0.9 s with %S%f.
    _, _, clock = value.partition("@")
    fmt = TIMESTAMP_FORMATS[1] if len(clock) == 6 else TIMESTAMP_FORMATS[0]
    try:
        return datetime.strptime(value, fmt)
    except ValueError:
        return None


def default_tasks_roots() -> list[Path]:
    """The user's task roots: ``$ROLLSCOPE_OSWORLD_TASKS_ROOT`` (read, never written)."""
    raw = os.environ.get(TASKS_ROOT_ENV, "")
    return [Path(p).expanduser() for p in raw.split(os.pathsep) if p.strip()]


def tasks_roots() -> list[Path]:
    """The task roots of the load running now: those it was given (``formats.load(..., tasks_roots=...)``, through
    :func:`gui_app.core.safety.load_scope`), else the user's (:func:`default_tasks_roots`)."""
    given = scope().tasks_roots
    return list(given) if given is not None else default_tasks_roots()


@dataclass(frozen=True)
class RunLayout:
    """Where a result directory sits in OSWorld's tree (see :func:`run_layout`).

    Attributes:
        example_id: the example's id (the run's folder name).
        folder: the folder above the example (the domain, in OSWorld's layout), None at a root.
        domain: ``folder`` when it is one of OSWorld's domains (:data:`DOMAINS`).
        model: the folder above that (the model, in OSWorld's layout).
        run_index: the run-index folder's name (``<example_id>/0``), None without one.
        timed: the run's folder is named by the time the run started (:data:`TIMED_RUN`), not by its example.
    """

    example_id: str
    folder: str | None
    domain: str | None
    model: str | None
    run_index: str | None
    timed: bool = False

    @property
    def run_folder(self) -> str:
        """The run's folder as the harness named it (with its run index: ``<example_id>/0``)."""
        return self.example_id if self.run_index is None else f"{self.example_id}/{self.run_index}"


def run_layout(root: Path) -> RunLayout:
    """Example id, domain, model and run index of a result directory, from OSWorld's folder layout.

    ``.../<model>/<domain>/<example_id>`` and, with a run-index folder, ``.../<model>/<domain>/<example_id>/<n>``.
    A task config found under ``<folder>/<example_id>.json`` confirms a folder name that is not one of OSWorld's
    domains (a recorder writing OSWorld's layout for its own domains).
    """
    parts = root.parts
    run_index = None
    if root.name.isdigit() and len(parts) >= 2:
        run_index, parts = root.name, parts[:-1]
    folder = parts[-2] if len(parts) >= 2 else None
    return RunLayout(example_id=parts[-1], folder=folder, domain=folder if folder in DOMAINS else None,
                     model=parts[-3] if len(parts) >= 3 else None, run_index=run_index,
                     timed=TIMED_RUN.match(parts[-1]) is not None)


def find_task_config(root: Path, example_id: str, domain: str | None) -> tuple[Path | None, list[str]]:
    """The task config of a run, and the places looked in (for the warning when there is none).

    Args:
        root: the run's folder.
        example_id: the example's id (the file is ``<example_id>.json``).
        domain: the folder the run sits in (OSWorld's domain), or None when there is none.
    """
    name = f"{example_id}.json"
    ex = root.parent if root.name.isdigit() and root.parent.name == example_id else root  # <id>/<run index>/
    cands = [d / n for d in dict.fromkeys((root, ex)) for n in SIDECARS] + [ex.parent / name]
    if domain:
        for anc in root.parents:
            cands += [anc / "evaluation_examples" / "examples" / domain / name, anc / "examples" / domain / name]
    for base in tasks_roots():
        for d in TASK_DIRS:
            if domain:
                cands.append(base / d / domain / name)
            cands += sorted((base / d).glob(f"*/{name}"))  # the run's folder may not be named after its domain
    for cand in cands:
        if cand.is_file():
            return cand, []
    looked = ["a task.json in the run"]
    if domain:
        looked.append(f"evaluation_examples/examples/{domain}/{name} above the run")
    roots = tasks_roots()
    looked.append(f"the tasks roots {', '.join(map(str, roots))}" if roots else
                  f"no tasks root was given (--tasks-root or ${TASKS_ROOT_ENV})")
    return None, looked


def find_domain_config(root: Path, layout: RunLayout, traj: Trajectory) -> tuple[Path, dict[str, Any]] | None:
    """The config of the domain or scenario a run sits in, and its JSON, or None.

    ``<folder>.json`` (``layout.folder``: the folder the run sits in) in that folder, in each of the
    :data:`DOMAIN_CONFIG_LEVELS` folders above it or a folder inside one of them (``sec_eval/<scenario>.json``
    beside ``sec_eval_results/``), then in each task root or a folder inside it. The first that holds an
    ``instruction`` is the one; a file of that name that does not read is a warning on ``traj``.
    """
    if not layout.folder:
        return None
    domain_dir = root.parent if layout.run_index is None else root.parent.parent  # <example>/<run index>/
    name = f"{layout.folder}.json"
    cands = [domain_dir / name]
    for base in [*list(domain_dir.parents)[:DOMAIN_CONFIG_LEVELS], *tasks_roots()]:
        cands.append(base / name)
        try:
            cands += sorted(Path(p) for p in glob.glob(os.path.join(glob.escape(str(base)), "*", glob.escape(name))))
        except OSError:  # a folder that cannot be listed holds no config we can read
            continue
    for cand in dict.fromkeys(cands):
        if not cand.is_file():
            continue
        doc = read_task_config(cand, traj)
        if isinstance(doc, dict) and isinstance(doc.get("instruction"), str) and doc["instruction"].strip():
            return cand, doc
    return None


def read_task_config(file: Path, traj: Trajectory) -> Any:
    """A task config's JSON, or None (with a warning on ``traj``: a bad config loses the instruction, not the
    run)."""
    try:
        return c.read_json(file)
    except TrajectoryFormatError as exc:
        traj.warnings.append(f"task config not read: {exc}")
        return None


def _action_text(value: Any) -> str:
    """The action as text: pyautogui code, ``DONE``/``FAIL``/``WAIT``, or a dict from the CUA agents."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        for key in ("command", "action", "code"):
            if isinstance(value.get(key), str):
                return value[key]
    return json.dumps(value, ensure_ascii=False)


class OSWorldImporter:
    name = "osworld"

    def sniff(self, path: Path) -> float:
        log = path / LOG if path.is_dir() else path
        if log.name != LOG or not log.is_file():
            return 0.0
        data = c.head(log)
        if b'"step_num"' in data and (b'"action_timestamp"' in data or b'"screenshot_file"' in data):
            return 0.95
        if b'"initial_state"' in data and b'"instruction"' in data:  # human-run variant: no steps
            return 0.8
        if data.startswith(b'{"Error": '):  # the run raised before its first action
            return 0.7
        if not data.strip() and (log.parent / RESULT).is_file():
            return 0.6  # a run that crashed before its first action
        return 0.0

    def load_all(self, path: Path, align: bool = True) -> list[Trajectory]:
        return [self.load(path, align)]

    def load(self, path: Path, align: bool = True) -> Trajectory:
        """Read the run; ``align=False`` skips the pass over the recording that places steps in it (a scan
        that only lists runs does not need step times)."""
        root = (path if path.is_dir() else path.parent).resolve()
        log = root / LOG
        if not log.is_file():
            raise TrajectoryFormatError(log, None, "no such file")
        warnings: list[str] = []
        layout = run_layout(root)
        # A run folder named by its time names no task: its domain (the folder above) does.
        run_id = f"{layout.folder}/{layout.run_folder}" if layout.timed and layout.folder else layout.run_folder
        traj = Trajectory(id=run_id, source_format=self.name, source_path=str(root), warnings=warnings)
        steps: list[Step] = []
        t0: datetime | None = None
        trace: list[str] = []
        raw: list[str] | None = None
        for lineno, rec in c.iter_jsonl(log):
            if isinstance(rec, TrajectoryFormatError):
                if isinstance(rec, c.TruncatedRecord) and steps and "error" not in traj.metadata:
                    warnings.append(c.truncation_warning(rec, len(steps)))  # killed mid-write: keep what was done
                    break
                if "error" not in traj.metadata:
                    raise rec
                # One run.py variant writes the traceback as plain text after its {"Error": ...} line.
                raw = raw if raw is not None else c.read_text(log).splitlines()
                trace.append(raw[lineno - 1])
                continue
            if not isinstance(rec, dict):
                raise TrajectoryFormatError(log, None, "expected a JSON object", line=lineno)
            if "step_num" not in rec and isinstance(rec.get("Error"), str):
                # run.py appends {"Error": "Time limit exceeded in <domain>/<id>"} when the run raised.
                traj.metadata["error"] = rec["Error"]
                warnings.append(f"{log}:{lineno}: field 'Error': the run ended with an error: {rec['Error']}")
                continue
            if "step_num" not in rec and isinstance(rec.get("instruction"), str):
                # The human-run variant writes its task config's instruction as a line.
                traj.instruction, traj.instruction_source = rec["instruction"], "task_config"
                continue
            if len(steps) == MAX_STEPS:
                warnings.append(c.step_limit_warning(log, lineno, MAX_STEPS))
                break
            steps.append(self._step(log, lineno, rec, len(steps), root, warnings))
            ts = steps[-1].extra.get("wall_time")
            if ts is not None:
                t = datetime.fromisoformat(ts)
                t0 = t if t0 is None else t0
                steps[-1].extra["t_action"] = (t - t0).total_seconds()
        traj.steps = steps
        error_txt = root / "error.txt"
        if error_txt.is_file():
            trace = [c.read_text(error_txt)]
        if trace:
            traj.metadata["error_traceback"] = "\n".join(trace).strip()
        self._sidecar(root, traj)
        self._outcome(root, traj)
        c.attach_recording(traj, root / RECORDING, align)
        return traj

    @staticmethod
    def _step(log: Path, lineno: int, rec: dict, index: int, root: Path, warnings: list[str]):
        step_num = c.typed(rec, "step_num", int, log, "step_num", line=lineno, required=True)
        raw_action = rec.get("action")
        if raw_action is None:
            raise TrajectoryFormatError(log, "action", "missing", line=lineno)
        action = _action_text(raw_action)
        response = rec.get("response")
        thought = response if isinstance(response, str) else (None if response is None else
                                                               json.dumps(response, ensure_ascii=False))
        ts_raw = c.typed(rec, "action_timestamp", str, log, "action_timestamp", line=lineno)
        shot_name = c.typed(rec, "screenshot_file", str, log, "screenshot_file", line=lineno)
        reward = c.number(rec.get("reward"), log, "reward", lineno)
        done = c.typed(rec, "done", bool, log, "done", line=lineno)
        nl = c.typed(rec, "natural_language_action", str, log, "natural_language_action", line=lineno)
        extra: dict[str, Any] = {"step_num": step_num, "done": done, "screenshot_timing": "after_action"}
        if ts_raw is not None:
            extra["action_timestamp"] = ts_raw
            ts = parse_timestamp(ts_raw)
            if ts is None:
                warnings.append(f"{log}:{lineno}: field 'action_timestamp': not %Y%m%d@%H%M%S[%f]: {ts_raw!r}")
            else:
                extra["wall_time"] = ts.isoformat()
        if nl:
            extra["natural_language_action"] = nl
        if rec.get("info"):
            extra["info"] = rec["info"]
        if not isinstance(raw_action, str):
            extra["action_raw"] = raw_action
        if shot_name is None and ts_raw is not None:
            shot_name = f"step_{step_num}_{ts_raw}.png"  # the name lib_run_single.py gives it
        shot = c.resolve_media(root, shot_name, warnings, f"{log}:{lineno}: field 'screenshot_file'")
        return c.make_step(index, action, thought=thought, screenshot=shot, reward=reward, extra=extra)

    def _sidecar(self, root: Path, traj: Trajectory) -> None:
        """Instruction, domain, task and agent: from the task config, else a domain config, else the transcript
        (see the module's docstring); the transcript's turns become the thoughts of steps that have none."""
        layout = run_layout(root)
        example, domain = layout.example_id, layout.domain
        cand, looked = find_task_config(root, example, layout.folder)  # looked: where, for the warning
        if cand is not None and domain is None and cand.parent.name == layout.folder and \
                cand.name == f"{example}.json":
            domain = layout.folder  # <folder>/<example_id>.json: the folder is the domain
        if cand is not None:
            doc = read_task_config(cand, traj)
            if isinstance(doc, dict) and isinstance(doc.get("instruction"), str):
                if not traj.instruction:
                    traj.instruction, traj.instruction_source = doc["instruction"], "task_config"
                self._config_fields(doc, traj, example_id=True)
                traj.metadata["task_config"] = str(cand)
            elif isinstance(doc, dict):
                traj.warnings.append(f"{cand}: field 'instruction': missing; the task config holds no instruction")
        if not traj.instruction:
            found = find_domain_config(root, layout, traj)
            if found is not None:
                file, doc = found
                traj.instruction, traj.instruction_source = doc["instruction"], "domain_config"
                traj.metadata["domain_config"] = str(file)
                self._config_fields(doc, traj, example_id=layout.timed)
                domain = layout.folder
        transcript = self._transcript(root, traj)
        if not traj.instruction and transcript is not None and transcript.task:
            traj.instruction, traj.instruction_source = transcript.task, "transcript"
        if layout.timed and layout.folder:
            domain = layout.folder  # the folder above a run named by its time is its domain or scenario
        traj.metadata.setdefault("example_id", layout.folder if layout.timed and layout.folder else example)
        traj.metadata["run_folder"] = layout.run_folder
        if layout.run_index is not None:
            traj.metadata["run_index"] = layout.run_index
        named = transcript.model if transcript is not None else None
        if named is None and not (domain is not None and layout.model and not layout.timed):
            named = _transcript.model_from_log(root / RUNTIME_LOG)
        if named is not None:
            traj.metadata["model"] = named
        if domain is not None:
            if not layout.timed:
                traj.app = traj.app or domain
            traj.metadata["domain"] = domain
        # The folder above the domain is the model in OSWorld's tree, not above a scenario's runs named by time.
        traj.agent = (layout.model if domain is not None and not layout.timed else None) or named
        if layout.timed and domain is not None:
            traj.metadata["task"] = domain
        else:
            traj.metadata["task"] = f"{domain}/{traj.metadata['example_id']}" if domain else \
                traj.metadata["example_id"]
        if not traj.instruction:
            looked += [f"{layout.folder}.json beside or above the run's folder" if layout.folder else
                       "a domain config", f"the agent's transcript ({TRANSCRIPT})"]
            traj.warnings.append(f"{root}: no instruction: OSWorld keeps it in the task config, which was not found "
                                 f"(looked for {'; '.join(looked)})")

    @staticmethod
    def _config_fields(doc: dict[str, Any], traj: Trajectory, example_id: bool) -> None:
        """The app, snapshot and (when ``example_id``) the id a task or domain config names."""
        apps = doc.get("related_apps")
        if isinstance(apps, list) and apps and all(isinstance(a, str) for a in apps):
            traj.app = ",".join(apps)
        if isinstance(doc.get("snapshot"), str):
            traj.metadata["snapshot"] = doc["snapshot"]
        if example_id and isinstance(doc.get("id"), str):
            traj.metadata["example_id"] = doc["id"]

    @staticmethod
    def _transcript(root: Path, traj: Trajectory) -> _transcript.Transcript | None:
        """The agent's transcript in the run, read when it is there; its turns become the thoughts of the steps they
        ran that have none."""
        file = root / TRANSCRIPT
        if not file.is_file():
            return None
        found = _transcript.read(file, traj.warnings)
        if found is None:
            return None
        traj.metadata["transcript"] = str(file)
        thoughts_from_turns(traj, found.turns)
        return found

    @staticmethod
    def _outcome(root: Path, traj: Trajectory) -> None:
        result = root / RESULT
        if not result.is_file():
            traj.warnings.append(f"{result}: missing: outcome unknown (the run may not have finished)")
            return
        try:
            text = c.read_text(result).strip()
            score = c.number(text.splitlines()[0] if text else "", result, "score", 1)
        except TrajectoryFormatError as exc:
            traj.warnings.append(f"outcome unknown: {exc}")
            return
        if score is None:
            traj.warnings.append(f"{result}: empty: outcome unknown")
            return
        # OSWorld's evaluators return 1.0 for a solved task; partial scores are kept but are not a success.
        traj.outcome = Outcome(success=score >= 1.0, score=score, source="env")


def thoughts_from_turns(traj: Trajectory, turns: list[_transcript.Turn]) -> None:
    """Give each turn's text to the steps it ran that have no thought of their own.

    Steps are grouped by ``step_num`` (one model call each). A turn is matched to the first group after the last
    matched one whose actions are the actions the transcript says the turn led to; turns that do not say (a
    transcript without the harness's "Executed ..." messages) are matched in order, and only when there are as many
    turns as groups, or one fewer (the transcript is written before the last call): a transcript that kept only its
    last turns could not be placed otherwise.
    """
    groups: list[list[Step]] = []
    for st in traj.steps:
        if groups and groups[-1][0].extra.get("step_num") == st.extra.get("step_num"):
            groups[-1].append(st)
        else:
            groups.append([st])
    pairs: list[tuple[_transcript.Turn, list[Step]]] = []
    if any(t.actions is not None for t in turns):
        # Where each list of actions occurs, so that a long transcript of a long run is placed in one pass.
        where: dict[tuple[str, ...], list[int]] = {}
        for k, group in enumerate(groups):
            where.setdefault(tuple(st.action for st in group), []).append(k)
        at = 0
        for turn in turns:
            found = where.get(tuple(_action_text(a) for a in turn.actions or ()), [])
            k = bisect.bisect_left(found, at)
            if turn.actions and k < len(found):
                pairs.append((turn, groups[found[k]]))
                at = found[k] + 1
    elif len(groups) - 1 <= len(turns) <= len(groups):
        pairs = list(zip(turns, groups))
    for turn, group in pairs:
        for st in group:
            if not st.thought and turn.thought:
                st.thought = turn.thought


IMPORTER = OSWorldImporter()
