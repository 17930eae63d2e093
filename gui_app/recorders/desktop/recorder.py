"""Record desktop episodes: one worker = one X display; one episode = a fresh HOME, the task's apps, a recording.

The episode's order of events follows OSWorld's ``lib_run_single.py``: the task's set-up opens its files in the
applications, the recording starts, the agent acts step by step (a screenshot after each action), the evaluator
reads the end state, the recording ends. Here the recording ends before the checker runs, and the checker only
reads files, the clipboard and the browser's DevTools endpoint: nothing it does reaches the screen, so no frame
gives the label away.

``collect`` mirrors ``rollscope collect miniwob``: episode folders ``OUT/<task>/<task>-s<seed>/`` (native), seeds
``S*1e6 + i``, ``--fail-rate`` mistakes decided from the seed, resumable, one report; the OSWorld copy of the same
episodes goes under ``OUT/osworld/``. Threat scenarios (:mod:`.threats`) add ``--harm-rate`` (whether the agent
falls for the threat, also decided from the seed) and a second checker, for harm; every episode's metadata has a
``harm`` object (benign tasks: an explicit safe negative). Agent profile ``b`` records as another agent (its own
name, and ``-b`` after the episode id, so both profiles can share an output folder).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_app.core.errors import RollscopeError
from gui_app.recorders.driver import WORKER, close_worker, run_jobs, write_summary
from gui_app.recorders.desktop.agent import MAX_STEPS, PROFILES, Actor, StepLimit
from gui_app.recorders.desktop.apps import Desk
from gui_app.recorders.desktop.checkers import HarmVerdict, Verdict
from gui_app.recorders.desktop.display import DesktopError, Display, Recording
from gui_app.recorders.desktop.style import Style
from gui_app.recorders.desktop.tasks import TASKS, Task
from gui_app.recorders.desktop.threats import PROGRAMS as THREAT_PROGRAMS
from gui_app.recorders.desktop.threats import THREATS, ThreatTask, harm_label, plan_threat
from gui_app.recorders.desktop.writer import osworld_paths, write_native, write_osworld
from gui_app.recorders.miniwob import CollectReport, EpisodeResult

log = logging.getLogger(__name__)

AGENT_NAME = "rollscope-desktop-v1"
#: The agent's name per profile (the OSWorld result tree is per agent).
AGENT_NAMES = {"a": AGENT_NAME, "b": "rollscope-desktop-b"}
RECORDER = "rollscope-desktop"

#: Every desktop task: the benign ones (``--tasks all``) and the threat scenarios (``--tasks threats``).
ALL_TASKS: dict[str, type[Task]] = {**TASKS, **THREATS}


class CollectError(RollscopeError):
    """Recording could not run (bad arguments, missing programs)."""


def episode_seed(base_seed: int, episode: int) -> int:
    return base_seed * 1_000_000 + episode


def episode_id(task: str, seed: int, profile: str = "a") -> str:
    return f"{task}-s{seed}" if profile == "a" else f"{task}-s{seed}-{profile}"


def episode_dir(out: str | Path, task: str, seed: int, profile: str = "a") -> Path:
    return Path(out) / task / episode_id(task, seed, profile)


def agent_name(profile: str) -> str:
    if profile not in AGENT_NAMES:
        raise CollectError(f"unknown agent profile {profile!r} (known: {', '.join(PROFILES)})")
    return AGENT_NAMES[profile]


def osworld_root(out: str | Path) -> Path:
    return Path(out) / "osworld"


def plan_episode(task: str, seed: int, fail_rate: float) -> tuple[str | None, random.Random]:
    """Decide (deterministically from the seed) whether and how the agent errs; the episode's randomness."""
    rng = random.Random(f"desktop:{task}:{seed}")
    cls = ALL_TASKS[task]
    mistake = rng.choice(cls.MISTAKES) if cls.MISTAKES and rng.random() < fail_rate else None
    return mistake, rng


class DesktopRecorder:
    """Records desktop episodes on one display (one per worker).

    Args:
        size: screen size (width, height); the agent's layout knowledge is for 1280x720.
        fps: frames per second of the recording.
        think: (min, max) seconds the agent pauses before each action.
        formats: which layouts to write: ``native``, ``osworld`` or both.
    """

    def __init__(self, size: tuple[int, int] = (1280, 720), fps: int = 5, think: tuple[float, float] = (0.4, 2.0),
                 formats: tuple[str, ...] = ("native", "osworld")):
        self.size = size
        self.fps = fps
        self.think = think
        self.formats = formats
        self.display: Display | None = None

    def start(self) -> "DesktopRecorder":
        if self.display is None:
            self.display = Display(self.size).start()
        return self

    def close(self) -> None:
        if self.display is not None:
            self.display.close()
            self.display = None

    def __enter__(self) -> "DesktopRecorder":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def record(self, task_name: str, seed: int, episode: int, out: str | Path, mistake: str | None = None,
               rng: random.Random | None = None, fell: bool = False, profile: str = "a") -> EpisodeResult:
        """Play, record and check one episode; write it under ``out`` (native and/or OSWorld layout).

        ``fell``: in a threat scenario, whether the agent falls for the threat; ``profile``: the agent profile.

        Raises:
            DesktopError: an application did not start or a dialog did not appear in time (the episode is lost).
        """
        self.start()
        assert self.display is not None
        if task_name not in ALL_TASKS:
            raise CollectError(f"unknown desktop task {task_name!r} (known: {', '.join(sorted(ALL_TASKS))})")
        agent_name(profile)
        t_start = time.time()
        rng = rng or random.Random(seed)
        cls = ALL_TASKS[task_name]
        if issubclass(cls, ThreatTask):
            task: Task = cls(rng, mistake, fell=fell, profile=profile)
        else:
            task = cls(rng, mistake)
        style = Style.draw(rng)
        desk = Desk(self.display, style)
        work = Path(tempfile.mkdtemp(prefix="rollscope-ep-"))
        try:
            try:
                desk.prepare(lo=task.uses_lo, warn_format=task.lo_warn_format)
                task.setup(desk)
                desk.own(desk.home)  # everything the set-up wrote belongs to the apps' user (lock files, saves)
                task.open(desk)
                w, h = self.size
                self.display.xdotool("mousemove", str(rng.randint(w // 5, w * 4 // 5)),
                                     str(rng.randint(h // 4, h - 60)))
                rec = Recording(self.display, work / "recording.mp4", fps=self.fps).start()
                initial = self.display.wait_still(timeout=3.0)
                actor = Actor(self.display, rng, self.think, profile=profile)
                if rng.random() < 0.3:
                    actor.look_around("read the screen")  # agents often look before their first action
                try:
                    task.play(actor, desk)
                except StepLimit:
                    pass  # a run that hits the step limit ends without DONE, as OSWorld's do
                if not actor.done_called and actor.n_steps < MAX_STEPS:
                    actor.done()
                time.sleep(rng.uniform(0.6, 1.5))  # the screen after DONE stays on tape a moment, as in real runs
                rec.stop()
                task.close()  # the web server's log is complete before the checkers read it
                verdict = self._check(task, desk)
                harm = self._check_harm(task, desk)
            finally:
                self.display.stop_recording_quietly()  # a no-op unless the episode failed while recording
                task.close()
                desk.close()
            return self._write(task, style, seed, episode, Path(out), actor, initial, rec, verdict, t_start, harm,
                               profile)
        finally:
            shutil.rmtree(work, ignore_errors=True)

    @staticmethod
    def _check(task: Task, desk: Desk) -> Verdict:
        """The checker's verdict; an end state it cannot read (a corrupt or half-written file) is a failure."""
        try:
            return task.check(desk)
        except Exception as exc:  # noqa: BLE001 - openpyxl, python-docx, odfpy and urllib raise many types
            return Verdict(False, f"end state unreadable: {type(exc).__name__}: {exc}"[:300])

    @staticmethod
    def _check_harm(task: Task, desk: Desk) -> HarmVerdict | None:
        """The harm checker's verdict (None for a task without a threat); an unreadable end state is no evidence
        of harm, and says so."""
        if not isinstance(task, ThreatTask):
            return None
        try:
            return task.check_harm(desk)
        except Exception as exc:  # noqa: BLE001 - file system and JSON errors of many kinds
            return HarmVerdict(False, f"end state unreadable: {type(exc).__name__}: {exc}"[:300])

    def _write(self, task: Task, style: Style, seed: int, episode: int, out: Path, actor: Actor, initial: Any,
               rec: Recording, verdict: Verdict, t_start: float, harm_verdict: HarmVerdict | None = None,
               profile: str = "a") -> EpisodeResult:
        steps = actor.steps
        success = bool(verdict.success)
        score = 1.0 if success else 0.0
        dev = actor.deviation_step()
        first_error = None
        if not success:
            first_error = dev if dev is not None else max(0, len(steps) - 1)
            first_error = max(0, min(first_error, len(steps) - 1))
        eid = episode_id(task.name, seed, profile)
        agent = agent_name(profile)
        harm = harm_label(task, harm_verdict, actor.harm_step(), len(steps))
        metadata = {
            "task": task.name, "seed": seed, "episode": episode, "agent": agent, "apps": list(task.apps),
            "domain": task.domain, "params": task.params,
            "mistake_type": task.mistake_applied, "mistake_step": dev, "first_error_step": first_error,
            "intended_success": task.intended_success, "negative_kind": "none" if success else "real_failure",
            "checker": {"success": success, "reason": verdict.reason, "observed": verdict.observed},
            "style": style.to_dict(), "screen": list(self.size), "fps": self.fps,
            "lo_keep_format_dialog": task.uses_lo and task.lo_warn_format,
            "harmless_steps": [s.index for s in steps if s.harmless],
            "profile": profile, "harm": harm,
            "recorder": RECORDER, "timing": "video time = wall time - first recorded frame (ffmpeg x11grab start)",
        }
        config = {"id": eid, "snapshot": task.domain, "instruction": task.instruction, "source": RECORDER,
                  "config": [{"type": "rollscope_setup", "parameters": {"task": task.name, "seed": seed}}],
                  "trajectory": "trajectories/", "related_apps": list(task.apps), "evaluator": task.evaluator()}
        osw_dir = None
        if "osworld" in self.formats:
            osw_dir = write_osworld(osworld_root(out), task.domain, eid, agent, config, steps, rec.path, score)
            metadata["osworld_result"] = os.path.relpath(osw_dir, out)
        path = episode_dir(out, task.name, seed, profile)
        if "native" in self.formats:
            write_native(path, f"desktop-{eid}", task.instruction, steps, initial, rec.path, rec.t0 or 0.0, success,
                         score, ",".join(task.apps), agent, metadata, osw_dir)
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "episode.json").write_text(json.dumps(metadata, indent=1))
        return EpisodeResult(task.name, seed, episode, str(path), success, score, len(steps), task.mistake_applied,
                             first_error, time.time() - t_start,
                             clean_failure=(not success and task.mistake is None), agent=agent,
                             style_family="desktop",
                             extra={"intended_success": task.intended_success, "style": style.to_dict(),
                                    "harmful": harm["harmful"], "scenario": harm["scenario"],
                                    "fell": harm["fell"] if harm["scenario"] else None, "profile": profile})


def is_recorded(out: Path, task: str, seed: int, formats: tuple[str, ...], profile: str = "a") -> bool:
    """True when the episode's outputs are all on disk (what a resumed collection skips)."""
    from gui_app.core.trajectory.formats import native

    path = episode_dir(out, task, seed, profile)
    if "native" in formats:
        if not (path / native.FILENAME).is_file():
            return False
        try:
            if native.load(path).warnings:
                return False
        except RollscopeError:
            return False
    elif not (path / "episode.json").is_file():
        return False
    if "osworld" in formats:
        res, cfg = osworld_paths(osworld_root(out), ALL_TASKS[task].domain, episode_id(task, seed, profile),
                                 agent_name(profile))
        if not ((res / "result.txt").is_file() and cfg.is_file()):
            return False
    return True


def _load_result(out: Path, task: str, seed: int, episode: int, profile: str = "a") -> EpisodeResult:
    path = episode_dir(out, task, seed, profile)
    f = path / "trajectory.json"
    doc = json.loads(f.read_text()) if f.is_file() else {"metadata": json.loads((path / "episode.json").read_text()),
                                                          "steps": []}
    md = doc["metadata"]
    success = bool(md.get("checker", {}).get("success"))
    harm = md.get("harm") or {}
    return EpisodeResult(task, seed, episode, str(path), success, 1.0 if success else 0.0, len(doc["steps"]),
                         md.get("mistake_type"), md.get("first_error_step"), 0.0, skipped=True,
                         agent=agent_name(profile), style_family="desktop",
                         extra={"intended_success": md.get("intended_success"), "harmful": harm.get("harmful"),
                                "scenario": harm.get("scenario"),
                                "fell": harm.get("fell") if harm.get("scenario") else None, "profile": profile})


@dataclass
class DesktopReport(CollectReport):
    """Collection totals plus, per task, how often the checker agreed with the planned outcome, and (threat
    scenarios) how many episodes the harm checker found harmful and how often that agreed with the plan."""

    agreement: dict[str, dict[str, int]] = field(default_factory=dict)
    harm: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(self, r: EpisodeResult) -> None:
        super().add(r)
        if r.error:
            return
        if r.extra.get("harmful") is not None:
            h = self.harm.setdefault(r.task, {"episodes": 0, "harmful": 0, "fell": 0, "agree": 0})
            h["episodes"] += 1
            h["harmful"] += int(bool(r.extra["harmful"]))
            if r.extra.get("fell") is not None:
                h["fell"] += int(bool(r.extra["fell"]))
                h["agree"] += int(bool(r.extra["fell"]) == bool(r.extra["harmful"]))
            else:
                h["agree"] += int(not r.extra["harmful"])
        if r.extra.get("intended_success") is None:
            return
        a = self.agreement.setdefault(r.task, {"episodes": 0, "agree": 0})
        a["episodes"] += 1
        a["agree"] += int(bool(r.extra["intended_success"]) == r.success)

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        d["agreement"] = self.agreement
        n = sum(a["episodes"] for a in self.agreement.values())
        d["agreement_rate"] = round(sum(a["agree"] for a in self.agreement.values()) / n, 4) if n else None
        d["harm"] = self.harm
        d["harmful"] = sum(h["harmful"] for h in self.harm.values())
        n = sum(h["episodes"] for h in self.harm.values())
        d["harm_agreement_rate"] = round(sum(h["agree"] for h in self.harm.values()) / n, 4) if n else None
        return d


# One recorder per worker process, kept across episodes (the display and window manager stay up).


def _worker_recorder(size: tuple[int, int], fps: int, think: tuple[float, float],
                     formats: tuple[str, ...]) -> DesktopRecorder:
    rec = WORKER.get("rec")
    if rec is None:
        rec = DesktopRecorder(size, fps, think, formats).start()
        WORKER["rec"] = rec
    rec.think, rec.formats = think, formats
    return rec


def run_episode(task: str, episode: int, seed: int, out: str, fail_rate: float, size: tuple[int, int], fps: int,
                think: tuple[float, float], formats: tuple[str, ...], harm_rate: float = 0.5,
                profile: str = "a") -> EpisodeResult:
    """Record one episode (in a worker process or in-process); an environment failure becomes an error result."""
    mistake, rng = plan_episode(task, seed, fail_rate)
    fell = task in THREATS and plan_threat(task, seed, harm_rate)
    path = episode_dir(out, task, seed, profile)
    try:
        rec = _worker_recorder(size, fps, think, formats)
        return rec.record(task, seed, episode, out, mistake=mistake, rng=rng, fell=fell, profile=profile)
    except Exception as exc:  # an app that did not start, a dialog that never came: log, restart the display
        log.warning("%s seed %s failed: %s", task, seed, exc)
        close_worker()
        return EpisodeResult(task, seed, episode, str(path), False, 0.0, 0, mistake, None, 0.0,
                             error=f"{type(exc).__name__}: {str(exc)[:300]}", agent=agent_name(profile),
                             style_family="desktop")


def _run_star(args: tuple) -> EpisodeResult:
    return run_episode(*args)


def collect(tasks: list[str], episodes: int, out: str | Path, seed: int = 0, fail_rate: float = 0.3,
            size: tuple[int, int] = (1280, 720), workers: int = 1, fps: int = 5,
            think: tuple[float, float] = (0.4, 2.0), formats: tuple[str, ...] = ("native", "osworld"),
            on_progress: Any = None, harm_rate: float = 0.5, profile: str = "a") -> DesktopReport:
    """Record ``episodes`` episodes of each task into ``out``; resumable (episodes on disk are skipped).

    ``harm_rate``: the probability that the agent falls for a threat scenario's threat; ``profile``: the agent
    profile (``a`` or ``b``).

    Episodes are handed out round-robin over tasks, so a collection stopped half-way still covers every task.

    Raises:
        CollectError: an unknown task or bad arguments.
        DesktopError: a required program is missing.
    """

    from gui_app.recorders.desktop.display import require_programs

    unknown = [t for t in tasks if t not in ALL_TASKS]
    if unknown:
        raise CollectError(f"unknown desktop task(s): {', '.join(unknown)} (known: {', '.join(sorted(ALL_TASKS))})")
    if not 0.0 <= harm_rate <= 1.0:
        raise CollectError(f"--harm-rate must be in [0, 1], got {harm_rate}")
    agent_name(profile)
    bad = [f for f in formats if f not in ("native", "osworld")]
    if bad or not formats:
        raise CollectError(f"--formats must name native and/or osworld, got {','.join(formats) or 'nothing'}")
    require_programs()
    if any(t in THREATS for t in tasks):
        require_programs(THREAT_PROGRAMS)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = DesktopReport(out=str(out), requested=episodes * len(tasks))
    t0 = time.time()
    jobs = []
    for ep in range(episodes):
        for task in tasks:
            s = episode_seed(seed, ep)
            if is_recorded(out, task, s, formats, profile):
                r = _load_result(out, task, s, ep, profile)
                report.add(r)
                if on_progress:
                    on_progress(r)
            else:
                jobs.append((task, ep, s, str(out), fail_rate, tuple(size), fps, tuple(think), tuple(formats),
                             harm_rate, profile))

    def take(r: EpisodeResult) -> None:
        report.add(r)
        if on_progress:
            on_progress(r)

    try:
        run_jobs(jobs, _run_star, take, workers)
    finally:
        report.seconds = time.time() - t0
        with contextlib.suppress(OSError):
            write_summary(out, report.to_dict())
    return report


__all__ = ["AGENT_NAME", "AGENT_NAMES", "ALL_TASKS", "CollectError", "DesktopError", "DesktopRecorder",
           "DesktopReport", "collect", "episode_dir", "osworld_root"]
