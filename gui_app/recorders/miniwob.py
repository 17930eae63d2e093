"""Record real MiniWoB++ episodes in headless Chromium, like a screen recorder would.

One :class:`MiniWoBRecorder` drives one browser (one MiniWoB task at a time). An episode is played by a scripted
agent (agent A, :mod:`gui_app.recorders.agents`, or agent B, :mod:`gui_app.recorders.agent_b`) through real
MiniWoB actions (coordinate clicks, pointer moves, typed text, key presses, wheel scrolls); after every action the
task area is captured in the episode's recording style (:mod:`gui_app.recorders.styles`: device scale, fonts and
colours injected as CSS, a pointer from an installed X cursor theme or none, margins, border, resize). The result
is a native trajectory directory:

- ``video.mp4``: H.264 (yuv420p), one keyframe per second; frame 0 is the initial screen and frame k+1 the screen
  after action k;
- ``frames/initial.png`` (frame 0) and ``frames/step_KKK.png`` (frame k+1, the screenshot of step k); with
  ``keep_clean`` also ``frames/clean/`` (the same screens without the pointer, as a screenshot API takes them);
- ``trajectory.json`` with step k spanning ``[k, k+1]`` seconds and the environment's own outcome.

Why the page is patched: MiniWoB paints a black "START" cover over the task the moment an episode ends, and shows
the last reward and an episode counter to the right of the task. The cover would give the outcome away in the last
frame, so it is kept hidden while we record (the page is reloaded at every reset anyway); the reward display lies
outside the captured task area (see :data:`TASK_CLIP`) and is hidden by every non-plain style (whose margins may
reach it). The episode timer is lengthened (:data:`TIME_LIMIT_MS`): on a busy machine the capture after each
action, not the agent, would otherwise run the clock out.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import random
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from gui_app.core.atomic import publish_folder
from gui_app.core.errors import RollscopeError
from gui_app.recorders import registry
from gui_app.recorders.agents import El
from gui_app.recorders.driver import WORKER, close_worker, run_jobs, write_summary
from gui_app.recorders.page import EpisodeOver
from gui_app.recorders.styles import POINTER_ROLE_JS, Style, apply_style, sample_style
from gui_app.training.sprite import cursor_sprite

log = logging.getLogger(__name__)

TASK_W, TASK_H = 160, 210
#: The captured region of the page, in CSS pixels: exactly the task area (the reward display starts at x=165).
TASK_CLIP = (0, 0, TASK_W, TASK_H)
AGENT_NAME = registry.AGENT_NAMES["A"]
#: A safety cap on one episode's steps (agent B scrolls a long feed one wheel notch at a time).
MAX_STEPS = 60
#: Share of agent A's episodes with one harmless extra action (a hover, a click on the instruction text) before a
#: click: other agents have other habits, and a successful run is not always the shortest one.
DAWDLE_RATE = 0.2
#: The episode's clock, in ms (MiniWoB's own is 10-30 s; captures on a busy machine take part of it).
TIME_LIMIT_MS = 90_000
LAYOUTS = ("native", "osworld", "both")

#: Flags without which headless Chromium stalls here (no network, no GPU, small /dev/shm).
CHROME_FLAGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--hide-scrollbars",
    "--mute-audio",
    "--window-size=500,500",
)

# Keep the end-of-episode cover hidden (MiniWoB's endEpisode() calls startEpisode(), which shows it) and give the
# episode a longer clock (the timeout MiniWoB set at reset is replaced).
_PREPARE_JS = """
if (!core.__rollscopeStart) {
  core.__rollscopeStart = core.startEpisode;
  core.startEpisode = function () {
    core.__rollscopeStart();
    if (core.cover_div) { core.cover_div.style.display = 'none'; }
  };
}
var limit = arguments[0];
if (core.EP_TIMER !== null && core.EPISODE_MAX_TIME < limit) {
  clearTimeout(core.EP_TIMER);
  core.EPISODE_MAX_TIME = limit;
  core.EP_TIMER = setTimeout(function () { core.endEpisode(-1, false, 'timed out'); }, limit);
}
return core.EPISODE_MAX_TIME;
"""

# Rectangles and state of the elements matching a CSS selector (CSS pixels of the page). ``pts`` are grid points
# inside the element where a click really reaches it (elementFromPoint): elements may overlap (click-test-2).
_QUERY_JS = """
function clickable(e, r) {
  // Aim at the text when an element is much wider than its text (a full-width tree row): people click words.
  if (e.textContent && e.textContent.trim() && !/^(INPUT|TEXTAREA|SELECT)$/.test(e.tagName)) {
    var range = document.createRange();
    range.selectNodeContents(e);
    var t = range.getBoundingClientRect();
    if (t.width > 4 && t.height > 4 && t.width < 0.6 * r.width) {
      r = {left: Math.max(r.left, t.left), top: r.top, width: Math.min(t.width, r.width), height: r.height};
    }
  }
  var pts = [];
  for (var i = 1; i <= 5; i++) {
    for (var j = 1; j <= 5; j++) {
      var x = r.left + r.width * (0.1 + 0.8 * (i - 1) / 4), y = r.top + r.height * (0.15 + 0.7 * (j - 1) / 4);
      if (x < 0 || y < 0 || x >= 160 || y >= 210) { continue; }
      var hit = document.elementFromPoint(x, y);
      if (hit && (hit === e || e.contains(hit))) { pts.push([x, y]); }
    }
  }
  return pts;
}
var out = [];
document.querySelectorAll(arguments[0]).forEach(function (e, i) {
  var r = e.getBoundingClientRect();
  var st = window.getComputedStyle(e);
  var vis = r.width > 0 && r.height > 0 && st.visibility !== 'hidden' && st.display !== 'none';
  out.push({i: i, x: r.left, y: r.top, w: r.width, h: r.height, visible: vis,
            text: (e.innerText || e.textContent || '').trim(), all_text: e.textContent || '',
            value: (e.value === undefined ? null : String(e.value)),
            checked: !!e.checked, id: e.id || '',
            cls: (typeof e.className === 'string') ? e.className : (e.getAttribute('class') || ''),
            tag: e.tagName.toLowerCase(), data: Object.assign({}, e.dataset),
            href: e.getAttribute('href'), pts: vis ? clickable(e, r) : []});
});
return out;
"""


class CollectError(RollscopeError):
    """Recording failed (browser, environment or a label that disagrees with the environment)."""


# The browser and its driver where Debian installs them: what miniwob starts when the user names neither.
CHROME_DEFAULTS = {"MINIWOB_CHROME_BINARY": "/usr/bin/chromium", "MINIWOB_CHROMEDRIVER": "/usr/bin/chromedriver"}


def _chrome_defaults() -> dict[str, str]:
    """The default paths (:data:`CHROME_DEFAULTS`) that exist, for the variables the user has not set. miniwob reads
    ``$MINIWOB_CHROME_BINARY`` and ``$MINIWOB_CHROMEDRIVER`` itself; they are the user's, never written here."""
    return {var: path for var, path in CHROME_DEFAULTS.items() if not os.environ.get(var) and Path(path).exists()}


@contextlib.contextmanager
def _chrome_options() -> Iterator[None]:
    """Make the ChromeOptions object that miniwob creates carry our flags, and start the default browser and driver
    (:func:`_chrome_defaults`) where the environment names none.

    miniwob builds ``webdriver.ChromeOptions()`` and ``webdriver.Chrome(...)`` itself and adds only its own flags,
    so we substitute a subclass and a wrapper for the duration of the driver start. The device scale factor is not a
    flag: it is set per episode through the DevTools protocol (:meth:`MiniWoBRecorder.set_scale`), so one browser
    records every style.
    """
    import miniwob.selenium_instance as si
    from selenium.webdriver import ChromeOptions
    from selenium.webdriver.chrome.service import Service

    defaults = _chrome_defaults()
    binary, driver = defaults.get("MINIWOB_CHROME_BINARY"), defaults.get("MINIWOB_CHROMEDRIVER")

    class RollscopeChromeOptions(ChromeOptions):
        def __init__(self) -> None:
            super().__init__()
            for f in CHROME_FLAGS:
                self.add_argument(f)
            if binary is not None:
                self.binary_location = binary

    original_options, original_chrome = si.webdriver.ChromeOptions, si.webdriver.Chrome

    def chrome(*args: Any, **kwargs: Any) -> Any:
        if driver is not None and kwargs.get("service") is None:
            kwargs["service"] = Service(executable_path=driver)
        return original_chrome(*args, **kwargs)

    si.webdriver.ChromeOptions, si.webdriver.Chrome = RollscopeChromeOptions, chrome
    try:
        yield
    finally:
        si.webdriver.ChromeOptions, si.webdriver.Chrome = original_options, original_chrome


def _hex_rgb(colour: str) -> tuple[int, int, int]:
    c = colour.lstrip("#")
    if len(c) == 3:
        c = "".join(ch * 2 for ch in c)
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16)


@dataclass
class Geometry:
    """How CSS pixels of the page map to pixels of a recorded frame under a style."""

    dsf: float
    pad: int
    resize: float
    width: int  # final frame size (even)
    height: int
    capture_w: int  # CSS px captured
    capture_h: int

    @classmethod
    def of(cls, style: Style) -> "Geometry":
        cw, ch = TASK_W + style.margin, TASK_H + style.margin
        w = round((round(cw * style.dsf) + 2 * style.pad) * style.resize)
        h = round((round(ch * style.dsf) + 2 * style.pad) * style.resize)
        return cls(style.dsf, style.pad, style.resize, w + w % 2, h + h % 2, cw, ch)

    def to_frame(self, x: float, y: float) -> tuple[float, float]:
        return (x * self.dsf + self.pad) * self.resize, (y * self.dsf + self.pad) * self.resize


@dataclass
class EpisodeResult:
    """What one recorded episode produced."""

    task: str
    seed: int
    episode: int
    path: str
    success: bool
    raw_reward: float
    n_steps: int
    mistake_type: str | None
    first_error_step: int | None
    seconds: float
    skipped: bool = False
    clean_failure: bool = False  # no mistake injected and still failed: an agent weakness, counted in reports
    error: str | None = None
    agent: str = "A"
    style_family: str = "plain"
    extra: dict[str, Any] = field(default_factory=dict)


class MiniWoBRecorder:
    """One headless Chromium running one MiniWoB task; records episodes as native trajectories.

    Args:
        task: MiniWoB task name (``click-test``, ``login-user``, ...).
        scale: device scale factor of the plain style (2 gives 320x420 frames).
    """

    def __init__(self, task: str, scale: int = 2):
        if task not in registry.ALL_TASKS:
            raise CollectError(f"no scripted agent for MiniWoB task {task!r} "
                               f"(known: {', '.join(sorted(registry.ALL_TASKS))})")
        self.task = task
        self.scale = int(scale)
        self.env: Any = None
        self.pointer = (TASK_W / 2, TASK_H / 2)
        self.style: Style = replace(Style(), dsf=float(self.scale))
        self.geom = Geometry.of(self.style)
        self._dsf_set: float | None = None
        self.last_clean: np.ndarray | None = None

    # -- browser lifecycle ---------------------------------------------------------------------------------
    def start(self) -> "MiniWoBRecorder":
        import gymnasium as gym
        import miniwob  # noqa: F401  (registers the miniwob/* environments)

        try:
            with _chrome_options():
                # refresh_freq=1: the page is reloaded at every reset, so nothing (an autocomplete popup, a
                # scrolled list) survives from one episode into the next.
                self.env = gym.make(f"miniwob/{self.task}-v1", render_mode=None, refresh_freq=1)
        except Exception as exc:  # selenium/chromedriver raise many unrelated types
            raise CollectError(f"cannot start Chromium for {self.task}: {exc}") from exc
        return self

    def close(self) -> None:
        if self.env is not None:
            with contextlib.suppress(Exception):
                self.env.close()
            self.env = None

    def __enter__(self) -> "MiniWoBRecorder":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def driver(self) -> Any:
        return self.env.unwrapped.instance.driver

    def set_scale(self, dsf: float) -> None:
        """Render the page at device scale factor ``dsf`` (DevTools ``Emulation.setDeviceMetricsOverride``)."""
        self.driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                    {"width": 500, "height": 500, "deviceScaleFactor": float(dsf), "mobile": False})
        self._dsf_set = float(dsf)

    # -- page access -----------------------------------------------------------------------------------------
    def query(self, selector: str) -> list[El]:
        """Elements matching ``selector`` with their rectangles (CSS pixels) and state."""
        return [El(**d) for d in self.driver.execute_script(_QUERY_JS, selector)]

    def env_metadata(self) -> dict[str, Any]:
        """The page's own done/reward globals, read independently of the gym step info."""
        return self.env.unwrapped.instance.get_metadata()

    def capture(self) -> np.ndarray:
        """The captured area as an (H, W, 3) uint8 RGB frame in the current style, pointer drawn if it has one.

        The screen without the pointer is kept in :attr:`last_clean` (what a screenshot API would have saved).
        """
        import cv2

        st, g = self.style, self.geom
        shot = self.driver.execute_cdp_cmd(
            "Page.captureScreenshot",
            {"format": "png", "clip": {"x": 0, "y": 0, "width": g.capture_w, "height": g.capture_h, "scale": 1}})
        buf = np.frombuffer(base64.b64decode(shot["data"]), dtype=np.uint8)
        frame = np.ascontiguousarray(cv2.imdecode(buf, cv2.IMREAD_COLOR)[:, :, ::-1])
        want = (round(g.capture_h * g.dsf), round(g.capture_w * g.dsf))
        if frame.shape[:2] != want:  # fractional scale factors round either way
            frame = cv2.resize(frame, (want[1], want[0]), interpolation=cv2.INTER_AREA)
        clean = self._frame_out(frame.copy())
        if st.pointer is not None:
            self._draw_pointer(frame)
            frame = self._frame_out(frame)
        else:
            frame = clean
        self.last_clean = clean
        return frame

    def _frame_out(self, frame: np.ndarray) -> np.ndarray:
        """Border, resize and even size: screen pixels -> recorded frame."""
        import cv2

        st, g = self.style, self.geom
        if st.pad:
            frame = cv2.copyMakeBorder(frame, st.pad, st.pad, st.pad, st.pad, cv2.BORDER_CONSTANT,
                                       value=_hex_rgb(st.pad_colour))
        if st.resize != 1.0:
            h, w = frame.shape[:2]
            frame = cv2.resize(frame, (round(w * st.resize), round(h * st.resize)), interpolation=cv2.INTER_AREA)
        h, w = frame.shape[:2]
        if (h, w) != (g.height, g.width):
            frame = cv2.copyMakeBorder(frame, 0, g.height - h, 0, g.width - w, cv2.BORDER_REPLICATE)
        return np.ascontiguousarray(frame)

    def _draw_pointer(self, frame: np.ndarray) -> None:
        """The pointer at the agent's position, as the page asks for it (arrow, hand over links, I-beam on text)."""
        from gui_app.training.cursors import cursor_image, draw_image

        st = self.style
        x, y = self.pointer
        px, py = x * st.dsf, y * st.dsf
        if st.pointer == "builtin":
            from gui_app.training.sprite import draw_cursor

            scale = max(1, round(st.pointer_size * st.dsf / len(cursor_sprite(1)[0])))
            draw_cursor(frame, px, py, scale)
            return
        role = self.driver.execute_script(POINTER_ROLE_JS, x, y)
        img = cursor_image(st.pointer, role if role in ("arrow", "hand", "text") else "arrow",
                           max(8, round(st.pointer_size * st.dsf)))
        draw_image(frame, img, px, py)

    # -- one episode -----------------------------------------------------------------------------------------
    def record(self, seed: int, episode: int, out_dir: str | Path, mistake: str | None = None,
               rng: random.Random | None = None, style: Style | None = None, agent: str = "A",
               keep_clean: bool = False) -> EpisodeResult:
        """Play and record one episode into ``out_dir`` (written atomically: a temp dir renamed at the end).

        Args:
            seed: the MiniWoB seed of the episode (``Math.seedrandom``).
            episode: the episode number within the collection (metadata only).
            mistake: the mistake the agent makes (one of its ``MISTAKES``) or None for a clean run.
            rng: randomness of the agent (click jitter, typo positions); seeded from ``seed`` when None.
            style: the recording style (default: the plain look at this recorder's scale).
            agent: ``A`` (scripted-v1) or ``B`` (scripted-v2).
            keep_clean: also write the frames without the pointer (``frames/clean/``) for screenshot layouts.
        """
        from miniwob.selenium_actions import execute_move_coords

        t0 = time.time()
        started = datetime.now(timezone.utc)
        rng = rng or random.Random(seed)
        agents = registry.AGENTS.get(agent)
        if agents is None or self.task not in agents:
            raise CollectError(f"agent {agent!r} has no script for {self.task}")
        out_dir = Path(out_dir)
        obs, _info = self.env.reset(seed=seed, options={"record_screenshots": False})
        limit = self.driver.execute_script(_PREPARE_JS, TIME_LIMIT_MS)
        self.style = replace(style) if style is not None else replace(Style(), dsf=float(self.scale))
        if self._dsf_set != self.style.dsf:
            self.set_scale(self.style.dsf)
        self.style = apply_style(self.driver, self.style)
        self.geom = Geometry.of(self.style)
        utterance = str(obs["utterance"])
        fields = {str(k): str(v) for k, v in obs["fields"]}
        # The pointer rests somewhere in the task area before the first action, as on a real screen.
        self.pointer = (rng.uniform(20, TASK_W - 20), rng.uniform(60, TASK_H - 20))
        execute_move_coords(self.pointer[0], self.pointer[1], self.driver)
        frames = [self.capture()]
        cleans = [self.last_clean]
        session = _Session(self, rng, t0, dawdle=agent == "A" and rng.random() < DAWDLE_RATE)
        bot = agents[self.task](session, utterance, fields, mistake, rng)
        candidates = bot.candidates()
        try:
            bot.run()
        except EpisodeOver:
            pass
        meta = self.env_metadata()
        done = bool(session.done)
        raw = float(session.raw_reward) if done else 0.0
        # The label is the environment's: terminated with raw reward exactly 1. Cross-check with the page globals.
        if done != bool(meta["done"]) or (done and float(meta["raw_reward"]) != raw):
            raise CollectError(f"{self.task} seed {seed}: step info (done={done}, raw={raw}) disagrees with the "
                               f"page (done={meta['done']}, raw={meta['raw_reward']})")
        success = done and raw == 1.0
        frames.extend(session.frames)
        cleans.extend(session.cleans)
        steps = session.steps
        first_error = None
        if not success:
            first_error = bot.first_error_step if bot.first_error_step is not None else _fallback_error(steps)
            first_error = max(0, min(first_error, len(steps) - 1))
        recovered = session.recovered_step if success else None
        if success and recovered is None and bot.mistake_applied == "wrong_then_recover":
            recovered = bot.first_error_step  # agent A marks its detour as a deviation; the run recovered from it
        name = registry.AGENT_NAMES[agent]
        metadata = {
            "task": self.task, "seed": seed, "episode": episode, "agent": name, "agent_key": agent,
            "mistake_type": bot.mistake_applied, "mistake_step": bot.first_error_step,
            "harmless_steps": [st["index"] for st in steps if st.get("extra", {}).get("harmless")],
            "recovered_step": recovered,
            "first_error_step": first_error,
            "negative_kind": "none" if success else "real_failure",
            "raw_reward": raw, "env_reward": float(session.env_reward) if done else 0.0,
            "env_done": done, "env_reason": None if session.reason is None else str(session.reason),
            "utterance": utterance, "fields": fields, "candidates": candidates, "scale": self.style.dsf,
            "style": self.style.to_dict(), "style_family": self.style.family, "time_limit_ms": limit,
            "started_at": started.isoformat(), "heldout_task": self.task in registry.HELDOUT_TASKS,
            "recorder": "rollscope-miniwob", "timing": "frame 0 = initial screen; step k = [k, k+1] s",
        }
        tid = episode_id(self.task, seed, agent)
        write_episode(out_dir, self.task, seed, utterance, frames, steps, success, raw, metadata,
                      cleans=cleans if keep_clean and self.style.pointer is not None else None, agent=name,
                      traj_id=tid)
        return EpisodeResult(self.task, seed, episode, str(out_dir), success, raw, len(steps), bot.mistake_applied,
                             first_error, time.time() - t0,
                             clean_failure=(not success and bot.mistake_applied is None), agent=agent,
                             style_family=self.style.family)


def _fallback_error(steps: list[dict[str, Any]]) -> int:
    # A failure without an injected mistake (the agent itself erred): the last action decided it.
    return max(0, len(steps) - 1)


class _Session:
    """The agent's handle on the page: reads the DOM, performs real MiniWoB actions, records each step."""

    def __init__(self, rec: MiniWoBRecorder, rng: random.Random, t0: float, dawdle: bool = False):
        self.rec = rec
        self.rng = rng
        self.t0 = t0
        # Before which click (0 = the first) the harmless extra action comes, if any.
        self.dawdle_at: int | None = rng.randrange(3) if dawdle else None
        self.n_clicks = 0
        self._mark_pending = False
        self._mark_index: int | None = None
        self.recovered_step: int | None = None
        self._recover_pending = False
        self.frames: list[np.ndarray] = []
        self.cleans: list[np.ndarray] = []
        self.steps: list[dict[str, Any]] = []
        self.done = False
        self.raw_reward = 0.0
        self.env_reward = 0.0
        self.reason: Any = None

    @property
    def n_steps(self) -> int:
        return len(self.steps)


    def query(self, selector: str) -> list[El]:
        return self.rec.query(selector)

    def execute(self, js: str, *args: Any) -> Any:
        """Run the agent's own script in the page (agent B reads the DOM its own way)."""
        return self.rec.driver.execute_script(js, *args)

    def wait(self, ms: float) -> None:
        time.sleep(ms / 1000.0)

    def mark_deviation(self) -> None:
        """The agent's next action is its first departure from a correct run."""
        if self._mark_index is None:
            self._mark_pending = True

    def mark_recovered(self) -> None:
        """The agent's next action is a mistake it will undo (a successful run keeps it as ``recovered_step``)."""
        if self.recovered_step is None:
            self._recover_pending = True

    def deviation_step(self) -> int | None:
        if self._mark_index is not None:
            return self._mark_index
        return self.n_steps if self._mark_pending else None  # stopped early: the missing step

    def _frame_xy(self, x: float, y: float) -> tuple[float, float]:
        fx, fy = self.rec.geom.to_frame(x, y)
        return float(round(fx)), float(round(fy))

    def _dawdle(self) -> None:
        """One harmless action: hover somewhere in the task, or click on the instruction text.

        The click happens only before the first click: later it could close an open menu or blur a field whose
        position the agent has already read.
        """
        bars = self.rec.query("#query")
        if bars and self.n_clicks == 0 and self.rng.random() < 0.6:
            b = bars[0]
            x, y = b.x + b.w * self.rng.uniform(0.1, 0.9), b.y + b.h * self.rng.uniform(0.2, 0.8)
            self.click(x, y, "instruction text", _extra=True)
        else:
            self.move(self.rng.uniform(10, TASK_W - 10), self.rng.uniform(60, TASK_H - 10), "hover")

    def _act(self, kind: str, label: str, settle_ms: float, step: dict[str, Any], _extra: bool = False,
             **kw: Any) -> None:
        from miniwob.action import ActionTypes

        if self.done and kind != "DONE":
            raise EpisodeOver
        if self.n_steps >= MAX_STEPS:
            raise EpisodeOver
        if not _extra and self._mark_pending:
            self._mark_pending = False
            self._mark_index = self.n_steps
        if not _extra and self._recover_pending:
            self._recover_pending = False
            self.recovered_step = self.n_steps
        if _extra:
            step.setdefault("extra", {})["harmless"] = True
        t_wall0 = time.time() - self.t0
        terminated, reward, info = False, 0.0, {}
        if kind != "DONE":
            env = self.rec.env.unwrapped
            action = env.create_action(ActionTypes[kind], **kw)
            _obs, reward, terminated, _trunc, info = self.rec.env.step(action)
        if settle_ms and not terminated:
            time.sleep(settle_ms / 1000.0)
        self.frames.append(self.rec.capture())
        self.cleans.append(self.rec.last_clean)
        k = self.n_steps
        step.update({"index": k, "t_start": float(k), "t_end": float(k + 1), "align_method": "stored",
                     "align_confidence": 1.0, "screenshot": f"frames/step_{k:03d}.png"})
        if step.get("x") is not None:
            # Whole frame pixels, rounded exactly as in the action text and where the pointer is drawn.
            step["x"], step["y"] = self._frame_xy(step["x"], step["y"])
        step.setdefault("extra", {}).update({"miniwob_action": kind, "t_wall_start": round(t_wall0, 3),
                                             "t_wall_end": round(time.time() - self.t0, 3), "target": label})
        self.steps.append(step)
        if terminated:
            self.done = True
            self.raw_reward = float(info.get("raw_reward", 0.0))
            self.env_reward = float(reward)
            self.reason = info.get("reason")
            raise EpisodeOver

    def _xy_text(self, x: float, y: float) -> str:
        fx, fy = self._frame_xy(x, y)
        return f"x={fx:.0f}, y={fy:.0f}"

    def click(self, x: float, y: float, label: str = "", settle_ms: float = 60, _extra: bool = False,
              harmless: bool = False) -> None:
        """Left click at page point (x, y) (CSS pixels of the task area); ``harmless`` marks a no-op click."""
        _extra = _extra or harmless
        if not _extra:
            if self.dawdle_at is not None and self.n_clicks == self.dawdle_at:
                self.dawdle_at = None
                pending, self._mark_pending = self._mark_pending, False  # the mark belongs to the real click
                self._dawdle()
                self._mark_pending = pending
            self.n_clicks += 1
        x = float(min(max(x, 1.0), TASK_W - 1.0))
        y = float(min(max(y, 1.0), TASK_H - 1.0))
        self.rec.pointer = (x, y)
        self._act("CLICK_COORDS", label, settle_ms,
                  {"action": f"click({self._xy_text(x, y)})", "action_type": "click", "x": x, "y": y,
                   "text": None}, _extra=_extra, coords=np.array([x, y], dtype=np.float32))

    def move(self, x: float, y: float, label: str = "hover", settle_ms: float = 60, harmless: bool = True) -> None:
        """Move the pointer to page point (x, y) (a hover); harmless unless said otherwise."""
        x = float(min(max(x, 1.0), TASK_W - 1.0))
        y = float(min(max(y, 1.0), TASK_H - 1.0))
        self.rec.pointer = (x, y)
        self._act("MOVE_COORDS", label, settle_ms,
                  {"action": f"move({self._xy_text(x, y)})", "action_type": "move", "x": x, "y": y, "text": None},
                  _extra=harmless, coords=np.array([x, y], dtype=np.float32))

    def type(self, text: str, label: str = "", settle_ms: float = 40) -> None:
        """Type ``text`` into the focused element."""
        self._act("TYPE_TEXT", label, settle_ms,
                  {"action": f"type({json.dumps(text)})", "action_type": "type", "x": None, "y": None, "text": text},
                  text=text)

    def press(self, key: str, label: str = "", settle_ms: float = 40, harmless: bool = False) -> None:
        """Press a key (MiniWoB syntax: ``<Enter>``, ``C-a``, ``a``)."""
        from miniwob.constants import DEFAULT_ALLOWED_KEYS

        name = key.strip("<>") if key.startswith("<") else key.replace("C-", "Ctrl+")
        self._act("PRESS_KEY", label, settle_ms,
                  {"action": f"press({json.dumps(name)})", "action_type": "key", "x": None, "y": None, "text": name},
                  _extra=harmless, key=DEFAULT_ALLOWED_KEYS.index(key))

    def scroll(self, x: float, y: float, down: bool = True, label: str = "", settle_ms: float = 200,
               harmless: bool = False) -> None:
        """Turn the mouse wheel at page point (x, y) (50 CSS pixels per notch)."""
        self.rec.pointer = (x, y)
        dy = round(50 * self.rec.style.dsf * self.rec.style.resize) * (1 if down else -1)
        self._act("SCROLL_DOWN_COORDS" if down else "SCROLL_UP_COORDS", label, settle_ms,
                  {"action": f"scroll({self._xy_text(x, y)}, dy={dy})", "action_type": "scroll",
                   "x": x, "y": y, "text": None}, _extra=harmless, coords=np.array([x, y], dtype=np.float32))

    def wait_step(self, ms: float = 300, label: str = "wait") -> None:
        """An explicit WAIT step: nothing is done, the screen is captured again after ``ms``."""
        self._act("NONE", label, ms, {"action": "WAIT", "action_type": "wait", "x": None, "y": None, "text": None},
                  _extra=True)

    def done_step(self, label: str = "done") -> None:
        """An explicit DONE step: the agent declares the task finished (the env is not asked; its verdict stands).

        Allowed after the environment ended the episode: the keyframe shows the unchanged final screen.
        """
        self._act("DONE", label, 0, {"action": "DONE", "action_type": "done", "x": None, "y": None, "text": None},
                  _extra=True)


def episode_id(task: str, seed: int, agent: str = "A") -> str:
    """The trajectory id of an episode: agent A keeps the first recorder's ids, agent B's end in ``-b``."""
    return f"miniwob-{task}-s{seed}" + ("" if agent == "A" else f"-{agent.lower()}")


def write_episode(out_dir: Path, task: str, seed: int, instruction: str, frames: list[np.ndarray],
                  steps: list[dict[str, Any]], success: bool, raw: float, metadata: dict[str, Any],
                  cleans: list[np.ndarray] | None = None, agent: str = AGENT_NAME,
                  traj_id: str | None = None) -> Path:
    """Write frames, video and ``trajectory.json`` into ``out_dir`` atomically (temp dir, then rename).

    ``cleans`` (frames without the pointer) go to ``frames/clean/`` and each step names its clean screenshot in
    ``extra['screenshot_clean']`` (relative to the trajectory directory).
    """
    import cv2

    from gui_app.core.media.video import write_video
    from gui_app.core.trajectory.formats import native
    from gui_app.core.trajectory.model import Outcome, Step, Trajectory, VideoRef

    out_dir = Path(out_dir).resolve()  # media paths must be absolute to be stored relative to the trajectory
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    metadata = dict(metadata)

    def write(tmp: Path) -> None:
        nonlocal metadata
        (tmp / "frames").mkdir(parents=True)
        names = ["initial.png"] + [f"step_{k:03d}.png" for k in range(len(steps))]
        for name, frame in zip(names, frames, strict=True):
            cv2.imwrite(str(tmp / "frames" / name), frame[:, :, ::-1], [cv2.IMWRITE_PNG_COMPRESSION, 6])
        if cleans is not None:
            (tmp / "frames" / "clean").mkdir()
            for name, frame in zip(names, cleans, strict=True):
                cv2.imwrite(str(tmp / "frames" / "clean" / name), frame[:, :, ::-1], [cv2.IMWRITE_PNG_COMPRESSION, 6])
            for st in steps:
                st.setdefault("extra", {})["screenshot_clean"] = f"frames/clean/step_{st['index']:03d}.png"
            metadata = {**metadata, "initial_clean": "frames/clean/initial.png"}
        h, w = frames[0].shape[:2]
        write_video(tmp / "video.mp4", frames, fps=1)
        traj = Trajectory(
            id=traj_id or f"miniwob-{task}-s{seed}",
            instruction=instruction,
            source_format="native",
            steps=[Step(**{**st, "screenshot": str(tmp / st["screenshot"])}) for st in steps],
            outcome=Outcome(success=success, score=raw, source="env"),
            video=VideoRef(str(tmp / "video.mp4"), fps=1.0, frames=len(frames), width=w, height=h),
            app="miniwob", os="linux", agent=agent, metadata=metadata,
        )
        native.save(traj, tmp)

    publish_folder(out_dir, write, ours=lambda _rel: True)
    return out_dir


def is_recorded(path: str | Path) -> bool:
    """True when ``path`` holds a valid native trajectory (what resumable collection skips)."""
    from gui_app.core.trajectory.formats import native

    p = Path(path)
    if not (p / native.FILENAME).is_file():
        return False
    try:
        traj = native.load(p)
    except RollscopeError:
        return False
    return not traj.warnings


def episode_seed(base_seed: int, task: str, episode: int) -> int:
    """The MiniWoB seed of episode ``episode``: distinct per (base seed, episode), stable across runs."""
    return base_seed * 1_000_000 + episode


def episode_dir(out: str | Path, task: str, seed: int, agent: str = "A") -> Path:
    return Path(out) / task / episode_id(task, seed, agent).removeprefix("miniwob-")


@dataclass
class EpisodePlan:
    """Everything decided before an episode runs, deterministically from (task, seed, options)."""

    agent: str
    mistake: str | None
    style: Style
    rng: random.Random


def plan_episode(task: str, seed: int, fail_rate: float, agent: str = "A", styles: str = "plain",
                 scale: int = 2) -> EpisodePlan:
    """Decide (deterministically from the seed) which agent plays, whether and how it errs, and the look.

    Args:
        agent: ``A``, ``B`` or ``mix`` (A or B with equal odds per episode).
        styles: ``plain``, ``A``, ``B`` or ``all`` (see :mod:`gui_app.recorders.styles`).
    """
    if agent not in ("A", "B", "mix"):
        raise CollectError(f"unknown agent {agent!r} (A, B or mix)")
    pick = random.Random(f"agent:{task}:{seed}")
    key = pick.choice(("A", "B")) if agent == "mix" else agent
    rng = random.Random(f"{task}:{seed}" if key == "A" else f"{key}:{task}:{seed}")
    mistake = registry.mistake_for(key, task, rng) if rng.random() < fail_rate else None
    style = sample_style(styles, task, random.Random(f"style:{styles}:{task}:{seed}"))
    if style.is_plain:
        style = replace(style, dsf=float(scale))
    return EpisodePlan(key, mistake, style, rng)



def load_result(path: Path, task: str, seed: int, episode: int) -> EpisodeResult:
    """An :class:`EpisodeResult` for an episode already on disk (resumed collection)."""
    doc = json.loads((path / "trajectory.json").read_text())
    md = doc.get("metadata", {})
    return EpisodeResult(task, seed, episode, str(path), bool(doc["outcome"]["success"]),
                         float(md.get("raw_reward", 0.0)), len(doc["steps"]), md.get("mistake_type"),
                         md.get("first_error_step"), 0.0, skipped=True, agent=md.get("agent_key", "A"),
                         style_family=md.get("style_family", "plain"))


@dataclass
class CollectReport:
    """Totals of a collection run."""

    out: str
    requested: int = 0
    recorded: int = 0
    skipped: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    by_task: dict[str, dict[str, int]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, r: EpisodeResult) -> None:
        t = self.by_task.setdefault(r.task, {"success": 0, "failure": 0, "clean_failure": 0, "error": 0,
                                             "mistakes": 0, "clean_runs": 0})
        if r.error:
            t["error"] += 1
            self.errors.append({"task": r.task, "seed": r.seed, "agent": r.agent, "error": r.error})
            return
        if r.skipped:
            self.skipped += 1
        else:
            self.recorded += 1
        t["success" if r.success else "failure"] += 1
        t["clean_failure"] += int(r.clean_failure)
        t["mistakes"] += int(r.mistake_type is not None)
        t["clean_runs"] += int(r.mistake_type is None)

    @property
    def episodes_per_minute(self) -> float:
        return 60.0 * self.recorded / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"out": self.out, "requested": self.requested, "recorded": self.recorded, "skipped": self.skipped,
                "errors": self.errors[:50], "n_errors": len(self.errors), "by_task": self.by_task,
                "seconds": round(self.seconds, 2), "episodes_per_minute": round(self.episodes_per_minute, 2)}


# One recorder per worker process, kept across chunks of the same task (a browser start costs ~1 s).


def _worker_recorder(task: str, scale: int) -> MiniWoBRecorder:
    rec = WORKER.get("rec")
    if rec is not None and (rec.task != task or rec.scale != scale):
        rec.close()
        rec = None
    if rec is None:
        rec = MiniWoBRecorder(task, scale).start()
        WORKER["rec"] = rec
    return rec


@dataclass(frozen=True)
class CollectOptions:
    """How a collection records: agent, styles, layouts (picklable, handed to worker processes)."""

    fail_rate: float = 0.3
    scale: int = 2
    agent: str = "A"
    styles: str = "plain"
    layout: str = "native"


def osworld_root(out: str | Path) -> Path:
    return Path(out) / "osworld"


def run_chunk(task: str, items: list[tuple[int, int]], out: str, fail_rate: float, scale: int,
              opts: CollectOptions | None = None) -> list[EpisodeResult]:
    """Record episodes ``items`` = [(episode, seed), ...] of ``task`` (in a worker process or in-process)."""
    opts = opts or CollectOptions(fail_rate=fail_rate, scale=scale)
    results = []
    for episode, seed in items:
        plan = plan_episode(task, seed, opts.fail_rate, opts.agent, opts.styles, opts.scale)
        path = episode_dir(out, task, seed, plan.agent)
        tmp_native = opts.layout == "osworld"
        target = path.parent / f".{path.name}.native" if tmp_native else path
        try:
            rec = _worker_recorder(task, opts.scale)
            r = rec.record(seed, episode, target, mistake=plan.mistake, rng=plan.rng, style=plan.style,
                           agent=plan.agent, keep_clean=opts.layout != "native")
            if opts.layout != "native":
                from gui_app.core.trajectory.formats import native
                from gui_app.training import convert

                convert.to_osworld(native.load(target), osworld_root(out))
            if tmp_native:
                shutil.rmtree(target, ignore_errors=True)
                r.path = str(convert.osworld_dir(osworld_root(out), episode_id(task, seed, plan.agent),
                                                 registry.AGENT_NAMES[plan.agent]))
            results.append(r)
        except CollectError:
            raise  # a label that disagrees with the environment is a bug: stop the collection
        except Exception as exc:  # browser hiccups, an element the agent did not find: log, restart, go on
            log.warning("%s seed %s (agent %s) failed: %s", task, seed, plan.agent, exc)
            close_worker()
            results.append(EpisodeResult(task, seed, episode, str(path), False, 0.0, 0, plan.mistake, None, 0.0,
                                         error=f"{type(exc).__name__}: {str(exc)[:300]}", agent=plan.agent,
                                         style_family=plan.style.family))
    return results


def _run_chunk_star(args: tuple[str, list[tuple[int, int]], str, float, int, CollectOptions]) -> list[EpisodeResult]:
    return run_chunk(*args)


def _already_done(out: Path, task: str, seed: int, opts: CollectOptions) -> Path | None:
    """The finished episode on disk for (task, seed) under ``opts``, if any (resumable collection)."""
    plan_agent = plan_episode(task, seed, 0.0, opts.agent, "plain").agent
    path = episode_dir(out, task, seed, plan_agent)
    if opts.layout == "osworld":
        from gui_app.training import convert

        d = convert.osworld_dir(osworld_root(out), episode_id(task, seed, plan_agent),
                                registry.AGENT_NAMES[plan_agent])
        return path if (d / "result.txt").is_file() and (d / "recording.mp4").is_file() else None
    if not is_recorded(path):
        return None
    if opts.layout == "both":
        from gui_app.training import convert

        d = convert.osworld_dir(osworld_root(out), episode_id(task, seed, plan_agent),
                                registry.AGENT_NAMES[plan_agent])
        if not (d / "result.txt").is_file():
            return None
    return path


def collect(tasks: list[str], episodes: int, out: str | Path, seed: int = 0, fail_rate: float = 0.3,
            scale: int = 2, workers: int = 1, chunk: int = 16, on_progress: Any = None, agent: str = "A",
            styles: str = "plain", layout: str = "native") -> CollectReport:
    """Record ``episodes`` episodes of each task into ``out/<task>/<task>-s<seed>[-b]/``; resumable.

    Episodes already on disk with a valid ``trajectory.json`` are skipped. Work is handed out in chunks, round-robin
    over tasks, so that a collection stopped half-way still covers every task.

    Args:
        agent: ``A`` (scripted-v1), ``B`` (scripted-v2) or ``mix``.
        styles: recording styles, ``plain`` | ``A`` | ``B`` | ``all``.
        layout: ``native`` (trajectory folders), ``osworld`` (OSWorld result folders under ``out/osworld/``
            only) or ``both``.
        on_progress: called with each finished :class:`EpisodeResult` (progress bars).

    Raises:
        CollectError: an unknown task, agent, style set or layout, or a label that disagrees with the environment.
    """

    from gui_app.recorders.styles import STYLE_SETS

    if agent not in ("A", "B", "mix"):
        raise CollectError(f"unknown agent {agent!r} (A, B or mix)")
    if styles not in STYLE_SETS:
        raise CollectError(f"unknown style set {styles!r} (known: {', '.join(STYLE_SETS)})")
    if layout not in LAYOUTS:
        raise CollectError(f"unknown layout {layout!r} (known: {', '.join(LAYOUTS)})")
    keys = ("A", "B") if agent == "mix" else (agent,)
    unknown = [t for t in tasks if any(t not in registry.AGENTS[k] for k in keys)]
    if unknown:
        raise CollectError(f"no scripted agent for: {', '.join(unknown)} "
                           f"(known: {', '.join(sorted(registry.ALL_TASKS))})")
    opts = CollectOptions(fail_rate=fail_rate, scale=scale, agent=agent, styles=styles, layout=layout)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    report = CollectReport(out=str(out), requested=episodes * len(tasks))
    t0 = time.time()
    per_task: dict[str, list[list[tuple[int, int]]]] = {}
    for task in tasks:
        todo = []
        for ep in range(episodes):
            s = episode_seed(seed, task, ep)
            path = _already_done(out, task, s, opts)
            if path is not None and opts.layout != "osworld":
                r = load_result(path, task, s, ep)
                report.add(r)
                if on_progress:
                    on_progress(r)
            elif path is not None:
                r = EpisodeResult(task, s, ep, str(path), False, 0.0, 0, None, None, 0.0, skipped=True)
                report.skipped += 1
                if on_progress:
                    on_progress(r)
            else:
                todo.append((ep, s))
        per_task[task] = [todo[i:i + chunk] for i in range(0, len(todo), chunk)]
    jobs = []
    for i in range(max((len(v) for v in per_task.values()), default=0)):
        for task in tasks:
            if i < len(per_task[task]):
                jobs.append((task, per_task[task][i], str(out), fail_rate, scale, opts))

    def _take(results: list[EpisodeResult]) -> None:
        for r in results:
            report.add(r)
            if on_progress:
                on_progress(r)

    try:
        run_jobs(jobs, _run_chunk_star, _take, workers)
    finally:
        report.seconds = time.time() - t0
        write_summary(out, {**report.to_dict(), "agent": agent, "styles": styles, "layout": layout,
                            "fail_rate": fail_rate, "seed": seed})
    return report
