"""Benchmark: the wait to open a real run the app has not loaded before, and how soon the viewer says what it is doing.

Issue 30: a real run not loaded before showed "No trajectory open" on a black viewer for 4-7 s. The run here is a
34-step OSWorld result written the way OSWorld's ``lib_run_single.py`` writes one (``bench/osworld_align.py``'s
generator: a 1920x1080, 30 fps H.264 recording, ``traj.jsonl`` with second-resolution action timestamps, the step
screenshots): opening it reads the log, places the steps on the recording (a pass over the video) and indexes the
video. Cold: the library's alignment cache is emptied first and the run was never prefetched (the OS file cache
is whatever it is: the recording was just written or read). Warm: the same run opened again (the alignment answer
cached).

The real window, offscreen: a click on the row, then the clock runs until the first frame is painted. Prints the
time to the loading line (the previous run cleared, a spinner and the stage shown), the time spent in each stage
as the viewer showed it, and the time to the first frame, cold and warm.

    python bench/open_latency.py [--quick] [--json] [--steps N]
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench._common import DATA, Figures, log, open_window, parser, run_until  # noqa: E402


def build_run(steps: int) -> Path:
    """The library root holding one OSWorld run of ``steps`` steps (generated once, then reused)."""
    import numpy as np
    from osworld_align import build, plan

    minutes = next(float(m) for m in np.arange(0.5, 30.0, 0.05) if len(plan(float(m))["actions"]) >= steps)
    root = DATA / f"open_latency_{steps}steps"
    p = build(root, round(minutes, 2))
    log(f"run: {len(p['actions'])} steps, {p['frames']} frames ({minutes:.2f} min at 1920x1080, 30 fps)")
    return root


class PaintClock:
    """When a widget paints (an event filter on it): the moment the loading line is on screen."""

    def __init__(self, widget) -> None:
        from PySide6.QtCore import QEvent, QObject

        clock = self

        class Filter(QObject):
            def eventFilter(self, _obj, event) -> bool:  # noqa: N802 -- Qt override
                if event.type() == QEvent.Type.Paint:
                    clock.times.append(time.perf_counter())
                return False

        self.times: list[float] = []
        self._filter = Filter(widget)
        widget.installEventFilter(self._filter)


def open_once(app, win, key: str) -> dict[str, float]:
    """Open ``key`` as a click on its row does and time it: the loading line on screen, each stage as the viewer
    showed it, the decoding of the first frame, and the whole wait to the first frame painted."""
    session, video = win.session, win.video
    changes: list[tuple[float, str]] = []
    shown: list[float] = []

    def changed() -> None:
        changes.append((time.perf_counter(), session.loading))

    def painted(_frame: int) -> None:
        shown.append(time.perf_counter())

    paints = PaintClock(video)
    session.loading_changed.connect(changed)
    video.frame_shown.connect(painted)
    t0 = time.perf_counter()
    win.loader.open(key)
    run_until(app, lambda: bool(paints.times), 10, step_ms=1)  # the view painted the loading line
    out = {"feedback_ms": (paints.times[0] - t0) * 1000 if paints.times else float("nan")}
    if not run_until(app, lambda: bool(shown), 600):
        log("the first frame did not come")
    end = shown[0] if shown else time.perf_counter()
    out["first_frame_s"] = end - t0
    for i, (start, text) in enumerate(changes):
        if text:
            name = "stage_" + text.split(" ")[0]
            out[name] = out.get(name, 0.0) + ((changes[i + 1][0] if i + 1 < len(changes) else end) - start)
    arrived = next((t for t, text in changes if not text), None)
    if arrived is not None:
        out["stage_first_frame_decode"] = end - arrived
    session.loading_changed.disconnect(changed)
    video.frame_shown.disconnect(painted)
    return out


def main() -> int:
    ap = parser(__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=None, help="steps of the run (default 34, --quick 8)")
    args = ap.parse_args()
    steps = args.steps or (8 if args.quick else 34)
    fig = Figures(args.json)
    root = build_run(steps)
    shutil.rmtree(root / ".rollscope", ignore_errors=True)  # no catalog, no alignment cache: never opened
    opened = open_window(root, annotator="bench")
    if opened is None:
        return 1
    app, win = opened
    model = win.library.model
    if model.rowCount() != 1:
        log(f"expected one run in {root}, found {model.rowCount()}")
        return 1
    key = model.key_at(0)
    fig.add("run", f"OSWorld, {model.row(0).n_steps} steps, 1920x1080 30 fps H.264", "")
    # The window opens a library's only run by itself: let that load end, then forget it and its cache.
    run_until(app, lambda: win.session.trajectory is not None, 600)
    win.loader.clear()
    win.session.set_trajectory(None)
    shutil.rmtree(root / ".rollscope" / "cache", ignore_errors=True)
    run_until(app, lambda: False, 0.5)  # the previous run's frame source closes in a worker
    cold = open_once(app, win, key)
    fig.add("cold_loading_line_shown_after", cold.pop("feedback_ms"), "ms")
    first = cold.pop("first_frame_s")
    for name, seconds in cold.items():
        fig.add(f"cold_{name}", seconds, "s")
    fig.add("cold_first_frame_after", first, "s")
    win.loader.clear()
    win.session.set_trajectory(None)
    warm = open_once(app, win, key)
    fig.add("warm_loading_line_shown_after", warm["feedback_ms"], "ms")
    fig.add("warm_first_frame_after", warm["first_frame_s"], "s")
    win.close()
    fig.emit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
