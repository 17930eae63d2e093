"""Longest GUI-thread stall of the real main window while it scans 10,000 trajectories and while it scores.

A 10 ms QTimer heartbeat runs on the GUI thread; the longest gap between two beats, minus the interval, is the
longest time the event loop could not answer (a click, a repaint, a key). Target: <= 100 ms.

On a shared machine a gap also holds time the GUI thread was runnable but not running (other processes, or the
worker holding the GIL). Two more figures separate that from our own work: the GUI thread's CPU time inside the
worst gap (``*_gui_cpu_in_worst_gap``) and the longest CPU time the GUI thread spent between two beats
(``*_max_gui_cpu_between_beats``: what a handler of ours cost), plus an idle baseline (heartbeat alone, 3 s).

Phases:
    scan: ``MainWindow.open_path`` on a folder of N native trajectories (fresh catalog): the scan runs in the
        worker while the library view refreshes every 2 s from the catalog.
    score: ``Score the whole library`` on a folder of recorded trajectories (real H.264 videos): feature
        extraction and ONNX inference run in the worker. Uses the shipped weights (``models/weights``) when they
        exist, else a stand-in of the same architecture exported to ONNX here (random weights: the stall does
        not depend on what the weights say).

Usage: ``bench/gui_stall.py [--quick] [--json] [--n N]``
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from fractions import Fraction
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from _common import DATA, Figures, log, parser, percentile, run_until  # noqa: E402

TARGET_MS = 100.0
BEAT_MS = 10


def make_text_library(root: Path, n: int) -> Path:
    """``n`` text-only native trajectories (kept between runs under data/bench; the catalog is rebuilt)."""
    marker = root / f".complete-{n}"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        for i in range(n):
            d = root / f"t{i:05d}"
            d.mkdir(parents=True)
            steps = [{"index": j, "t_start": float(j), "t_end": j + 1.0, "action": f"pyautogui.click(x={j}, y={j})",
                      "action_type": "click", "x": float(j), "y": float(j)} for j in range(1 + i % 9)]
            doc = {"schema_version": 1, "id": f"bench-{i:05d}", "instruction": f"Bench task {i}: click button {i % 7}",
                   "source_format": "native", "outcome": {"success": i % 3 != 0, "score": None, "source": "env"},
                   "steps": steps, "metadata": {"task": f"task-{i % 13}"}}
            (d / "trajectory.json").write_text(json.dumps(doc))
        marker.touch()
    shutil.rmtree(root / ".rollscope", ignore_errors=True)
    return root


def make_video_library(root: Path, n: int, steps: int = 5, fps: int = 5) -> Path:
    """``n`` native trajectories with a real H.264 recording each (320x240, one screen state per step)."""
    import av
    import cv2
    import numpy as np

    marker = root / f".complete-{n}"
    if not marker.exists():
        shutil.rmtree(root, ignore_errors=True)
        for i in range(n):
            d = root / f"v{i:03d}"
            d.mkdir(parents=True)
            n_frames = steps * fps
            with av.open(str(d / "video.mp4"), "w") as out:
                stream = out.add_stream("libx264", rate=Fraction(fps))
                stream.width, stream.height, stream.pix_fmt = 320, 240, "yuv420p"
                stream.options = {"preset": "ultrafast"}
                for f in range(n_frames):
                    img = np.full((240, 320, 3), 235, np.uint8)
                    img[:24] = (60, 90, 160)
                    cv2.rectangle(img, (40 + 20 * (f // fps), 80), (140 + 20 * (f // fps), 120), (30, 140, 60), -1)
                    cv2.putText(img, f"run {i} step {f // fps}", (20, 200), cv2.FONT_HERSHEY_SIMPLEX, 0.7, (0, 0, 0))
                    for packet in stream.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                        out.mux(packet)
                for packet in stream.encode(None):
                    out.mux(packet)
            doc = {"schema_version": 1, "id": f"video-{i:03d}", "instruction": f"Click the green button {i}",
                   "source_format": "native", "outcome": {"success": i % 2 == 0, "score": None, "source": "env"},
                   "video": {"path": "video.mp4", "fps": fps, "frames": n_frames, "width": 320, "height": 240},
                   "steps": [{"index": j, "t_start": float(j), "t_end": j + 1.0,
                              "action": "pyautogui.click(x=90, y=100)",
                              "action_type": "click", "x": 90.0, "y": 100.0} for j in range(steps)]}
            (d / "trajectory.json").write_text(json.dumps(doc))
        marker.touch()
    shutil.rmtree(root / ".rollscope", ignore_errors=True)
    return root


class Heartbeat:
    """Timestamps of a 10 ms QTimer on the GUI thread; gaps between beats are the stalls."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.beats: list[tuple[float, float]] = []  # (wall, GUI-thread CPU) per beat
        self.timer = QTimer()
        self.timer.setInterval(BEAT_MS)
        self.timer.timeout.connect(self._beat)

    def _beat(self) -> None:
        self.beats.append((time.perf_counter(), time.thread_time()))

    def start(self) -> None:
        self.beats = []
        self._beat()
        self.timer.start()

    def stop(self) -> dict[str, float]:
        self.timer.stop()
        self._beat()
        gaps = [((b[0] - a[0]) * 1000, (b[1] - a[1]) * 1000) for a, b in zip(self.beats, self.beats[1:])]
        worst = max(gaps)
        return {"max_gap_ms": worst[0], "p99_gap_ms": percentile([g for g, _ in gaps], 99),
                "stall_ms": max(worst[0] - BEAT_MS, 0.0), "cpu_in_worst_ms": worst[1],
                "max_cpu_ms": max(c for _, c in gaps), "beats": len(gaps)}


def add_beats(fig: Figures, phase: str, stats: dict) -> None:
    """The heartbeat figures of one phase (scan or score)."""
    fig.add(f"{phase}_max_gui_stall", stats["stall_ms"], "ms")
    fig.add(f"{phase}_p99_heartbeat_gap", stats["p99_gap_ms"], "ms")
    fig.add(f"{phase}_gui_cpu_in_worst_gap", stats["cpu_in_worst_ms"], "ms")
    fig.add(f"{phase}_max_gui_cpu_between_beats", stats["max_cpu_ms"], "ms")


def main() -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=None, help="trajectories to scan (default 10,000; --quick 1,000)")
    p.add_argument("--score-n", type=int, default=None, help="recorded trajectories to score (default 24; quick 6)")
    args = p.parse_args()
    n = args.n or (1_000 if args.quick else 10_000)
    score_n = args.score_n or (6 if args.quick else 24)
    fig = Figures(args.json)
    config = Path(tempfile.mkdtemp(prefix="rollscope-bench-config-"))
    os.environ["ROLLSCOPE_CONFIG_DIR"] = str(config)  # never touch the user's settings

    log(f"generating {n} trajectories under {DATA / 'gui_stall'} ...")
    text_root = make_text_library(DATA / "gui_stall" / f"text{n}", n)
    video_root = make_video_library(DATA / "gui_stall" / f"video{score_n}", score_n)

    from gui_app.qt.app import make_app
    from gui_app.qt.main_window import MainWindow

    app = make_app([sys.argv[0]])
    win = MainWindow()
    win.resize(1400, 860)
    win.show()
    beat = Heartbeat()
    status = 0

    # -- idle baseline: what this machine does to a 10 ms timer with no work at all --------------------------
    run_until(app, lambda: False, 0.5)
    beat.start()
    run_until(app, lambda: False, 3.0)
    idle = beat.stop()
    fig.add("idle_max_gui_stall", idle["stall_ms"], "ms")
    fig.add("idle_p99_heartbeat_gap", idle["p99_gap_ms"], "ms")

    # -- scan -----------------------------------------------------------------------------------------------------
    reports = []
    win.scanner.scanned.connect(reports.append)
    log("scanning ...")
    beat.start()
    t0 = time.perf_counter()
    win.open_path(text_root)
    ok = run_until(app, lambda: bool(reports) and not win.library.model.pending, timeout_s=1800)
    scan_s = time.perf_counter() - t0
    scan = beat.stop()
    rows = win.library.model.rowCount()
    fig.add("scan_trajectories", rows)
    fig.add("scan_seconds", scan_s, "s")
    add_beats(fig, "scan", scan)
    if not ok or rows != n:
        log(f"scan did not complete: {rows} rows")
        status = 1

    # -- score ----------------------------------------------------------------------------------------------------
    from models.runtime import WEIGHTS_DIR

    fig.add("score_weights", str(WEIGHTS_DIR))
    reports.clear()
    run_until(app, lambda: False, 0.2)
    with_scan = []
    win.scanner.scanned.connect(with_scan.append)
    win.open_path(video_root)
    run_until(app, lambda: bool(with_scan) and not win.library.model.pending, timeout_s=300)
    ended = []
    win.scorer.scored.connect(ended.append)
    log(f"scoring {score_n} recorded trajectories ...")
    beat.start()
    t0 = time.perf_counter()
    win.scorer.score_library()
    ok = run_until(app, lambda: bool(ended), timeout_s=1800)
    score_s = time.perf_counter() - t0
    score = beat.stop()
    scored = win.session.library.catalog.count("", {"scored": True})
    fig.add("score_trajectories", scored)
    fig.add("score_seconds", score_s, "s")
    add_beats(fig, "score", score)
    if not ok or scored != score_n:
        log(f"scoring did not complete: {scored} scored; messages: {win.notifier.history[-3:]}")
        status = 1

    worst = max(scan["stall_ms"], score["stall_ms"])
    own = max(scan["max_cpu_ms"], score["max_cpu_ms"])
    fig.add("max_gui_stall", worst, "ms")
    fig.add("max_gui_thread_work_between_beats", own, "ms")
    fig.add("target_max_gui_stall", TARGET_MS, "ms")
    fig.add("meets_target", worst <= TARGET_MS)
    fig.add("own_work_meets_target", own <= TARGET_MS)
    win.close()
    shutil.rmtree(config, ignore_errors=True)
    fig.emit()
    return status


if __name__ == "__main__":
    sys.exit(main())
