"""Benchmark: ``rollscope inspect`` on a realistic OSWorld run -- how long placing the steps in the recording takes
and how close it gets, before (screenshot matching over every frame at full size, as Rollscope did until now)
and after (one offset fitted between the ``action_timestamp``s and the video on a lower-resolution pass,
screenshot matching only refining it; then the cached answer).

The run is generated the way OSWorld's ``lib_run_single.py`` writes one: a 1920x1080, 30 fps H.264 recording
(x264 defaults: 3 B-frames, keyframe every 250 frames; a mouse pointer that the screenshots lack, a blinking
caret), ``traj.jsonl`` with ``action_timestamp`` at one-second resolution (``%Y%m%d@%H%M%S``, as upstream
writes it), the screenshots taken ``sleep_after_execution`` after each action, ``result.txt``, and the task in
``evaluation_examples/examples/<domain>/<id>.json``. Think times, effect delays and two actions with no visible
effect vary as in real runs. The true video time of every action is known, so the error is measured.

Prints: the recording's length, the wall time of the alignment for each method, how far each step's end (the
moment its result shows: the model's keyframe) is from the truth for the steps whose screen changed, the steps
more than 1 s off, the error of the action's own moment (timestamps only), and the steps flagged as
low-confidence. Many steps only type a few characters (a change of a few pixels on the matching grid), some
change nothing, some return to an earlier screen: the cases where screenshots alone are ambiguous.

    python bench/osworld_align.py [--quick] [--json] [--minutes M]
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cv2  # noqa: E402
import numpy as np  # noqa: E402

from bench._common import DATA, Figures, log, parser  # noqa: E402
from gui_app.core import cache  # noqa: E402
from gui_app.core.trajectory import formats  # noqa: E402
from gui_app.core.trajectory.align import LOW_CONFIDENCE, align_trajectory  # noqa: E402
from tests.media import screen_state, write_h264  # noqa: E402

W, H, FPS = 1920, 1080, 30
EXAMPLE = "bb5e4c0d-f964-439c-97b6-bdb9747de3f4"
DOMAIN = "chrome"
REC_START = dt.datetime(2025, 3, 5, 14, 2, 7, 640000)  # wall clock when the recording started


def plan(minutes: float, seed: int = 7) -> dict:
    """Video times of every action, when its result shows and which screen follows, like a real run: most
    actions open a new screen, many only type a few characters into a field (a small change), some change
    nothing visible (WAIT, a click on nothing), some go back to an earlier screen."""
    rng = np.random.default_rng(seed)
    t = float(rng.uniform(4.0, 8.0))  # first model call after the recording starts
    actions, changes = [], []
    screens = [(0, 0)]  # (base screen, characters typed into its field)
    history = [0]
    while t < minutes * 60 - 12:
        effect = t + float(rng.uniform(0.05, 0.6))  # the action executes, the app redraws
        kind = rng.choice(["new", "type", "none", "back"], p=[0.45, 0.35, 0.1, 0.1])
        base, typed = screens[history[-1]]
        if kind == "new":
            screens.append((len(screens) + 100, 0))
            history.append(len(screens) - 1)
        elif kind == "type":
            screens.append((base, typed + int(rng.integers(3, 12))))
            history.append(len(screens) - 1)
        elif kind == "back" and len(history) > 2 and history[-3] != history[-1]:
            history.append(history[-3])
        else:
            kind = "none"
        if kind != "none":
            changes.append(int(round(effect * FPS)))
        shot = effect + 2.0 + float(rng.uniform(0.0, 0.3))  # sleep_after_execution, then the screenshot
        actions.append({"t": t, "effect": effect, "shot": shot, "screen": history[-1], "kind": str(kind)})
        t = shot + float(rng.uniform(3.0, 12.0))  # the model thinks about the next action
    segments = [0] + [a["screen"] for a in actions if a["kind"] != "none"]
    return {"actions": actions, "changes": changes, "segments": segments, "screens": screens,
            "frames": int(minutes * 60 * FPS)}


def screen_image(spec: tuple[int, int]) -> np.ndarray:
    """A 1080p screen: a GUI-like base (tests.media.screen_state) with ``typed`` characters in its text field."""
    base, typed = spec
    img = screen_state(base, W, H, seed=5).copy()
    cv2.rectangle(img, (560, 470), (1360, 520), (255, 255, 255), -1)
    cv2.rectangle(img, (560, 470), (1360, 520), (120, 120, 120), 2)
    if typed:
        cv2.putText(img, ("search for " * 8)[:typed], (572, 505), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (20, 20, 20), 2)
    return img


def frames(p: dict):
    """The recording: each segment's screen, a caret blinking in the field and a pointer gliding over it (the
    recorder draws the pointer; the screenshots lack it), as tests.media.screen_like_frames does."""
    cache: dict[int, np.ndarray] = {}
    changes = p["changes"]
    for i in range(p["frames"]):
        seg = int(np.searchsorted(changes, i, side="right"))
        sid = p["segments"][seg]
        if sid not in cache:
            cache = {sid: screen_image(tuple(p["screens"][sid]))}
        f = cache[sid].copy()
        if (i // 15) % 2:
            f[478:512, 1340:1343] = 0
        px = int((0.2 + 0.6 * ((i * 0.0043) % 1.0)) * W)
        py = int((0.3 + 0.4 * ((i * 0.0027) % 1.0)) * H)
        cv2.fillConvexPoly(f, np.array([[px, py], [px, py + 36], [px + 24, py + 24]], np.int32), (20, 20, 20))
        yield f


def build(root: Path, minutes: float) -> dict:
    """Write the run under ``root`` in OSWorld's layout; reused when it is already there."""
    run = root / "results" / "pyautogui" / "screenshot" / "uitars-1.5" / DOMAIN / EXAMPLE
    if (run / "recording.mp4").is_file() and (root / "plan.json").is_file():
        return json.loads((root / "plan.json").read_text())
    p = plan(minutes)
    shutil.rmtree(root, ignore_errors=True)
    run.mkdir(parents=True)
    log(f"encoding a {minutes:g}-minute {W}x{H} recording ({p['frames']} frames)...")
    write_h264(run / "recording.mp4", frames(p), fps=FPS, gop=250, bframes=3, preset="veryfast", crf=23)
    lines = []
    for k, a in enumerate(p["actions"]):
        stamp = (REC_START + dt.timedelta(seconds=a["t"])).strftime("%Y%m%d@%H%M%S")
        name = f"step_{k + 1}_{stamp}.png"
        # The screenshot is the screen itself (no pointer: x11grab draws it, the screenshot API does not).
        shot = cv2.cvtColor(screen_image(tuple(p["screens"][a["screen"]])), cv2.COLOR_RGB2BGR)
        cv2.imwrite(str(run / name), shot)
        lines.append({"step_num": k + 1, "action_timestamp": stamp, "action": f"pyautogui.click(x={100 + k}, y=200)",
                      "response": f"step {k + 1}", "reward": 0, "done": False, "info": {}, "screenshot_file": name})
    (run / "traj.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    (run / "result.txt").write_text("1.0\n")
    tasks = root / "evaluation_examples" / "examples" / DOMAIN
    tasks.mkdir(parents=True)
    (tasks / f"{EXAMPLE}.json").write_text(json.dumps({"id": EXAMPLE, "instruction": "Change the default search "
                                                       "engine to Bing.", "related_apps": ["chrome"]}))
    (root / ".rollscope").mkdir()  # a library: the alignment cache goes under it
    p["run"] = str(run)
    (root / "plan.json").write_text(json.dumps(p))
    return p


def measure(fig: Figures, name: str, p: dict, **kw) -> None:
    traj = formats.load(p["run"], align=False)
    t0, c0 = time.perf_counter(), time.process_time()
    align_trajectory(traj, **kw)
    fig.add(f"{name}_seconds", time.perf_counter() - t0, "s")
    # CPU time of this process (decoder threads included): steadier than wall time on a shared machine.
    fig.add(f"{name}_cpu_seconds", time.process_time() - c0, "s")
    n = len(traj.steps)
    # A step ends when its result shows (the model's keyframe): against the true moment, for the steps whose
    # screen changed (an unchanged screen has no moment of its own).
    changed = [k for k, a in enumerate(p["actions"]) if a["kind"] != "none"]
    err = np.array([abs(traj.steps[k].t_end - p["actions"][k]["effect"]) for k in changed])
    fig.add(f"{name}_result_mean_error", float(err.mean()), "s")
    fig.add(f"{name}_result_max_error", float(err.max()), "s")
    fig.add(f"{name}_results_off_by_more_than_1s", int((err > 1.0).sum()), f"of {len(err)}")
    if all("t_action_video" in s.extra for s in traj.steps):
        act = np.array([abs(s.extra["t_action_video"] - a["t"]) for s, a in zip(traj.steps, p["actions"])])
        fig.add(f"{name}_action_mean_error", float(act.mean()), "s")
    fig.add(f"{name}_low_confidence_steps", int(sum((s.align_confidence or 0) < LOW_CONFIDENCE
                                                    for s in traj.steps)), f"of {n}")


def main() -> None:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=None, help="recording length (default 4, --quick 1)")
    args = ap.parse_args()
    minutes = args.minutes or (1.0 if args.quick else 4.0)
    fig = Figures(args.json)
    root = DATA / f"osworld_align_v2_{minutes:g}min"
    p = build(root, minutes)
    fig.add("recording", f"{W}x{H} {FPS} fps {minutes:g} min", "")
    fig.add("steps", len(p["actions"]), "")
    shutil.rmtree(root / ".rollscope" / "cache", ignore_errors=True)
    measure(fig, "before_screenshot_match_full", p, fast=False, use_timestamps=False, use_cache=False)
    measure(fig, "after_cold", p)  # fast pass, timestamps, cache filled
    measure(fig, "after_cached", p)
    log(f"alignment cache: {cache.cache_dir(p['run'], 'alignment')}")
    fig.emit()


if __name__ == "__main__":
    main()
