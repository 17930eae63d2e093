"""The app scores in a process of its own (issue 26, item 6): the judge never loads in the app's memory, a scoring
process that dies is an error line while the app goes on and the next scoring starts a new one, a cancel stops it,
a bad file is still reported per run, and closing the window stops the process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from gui_app.qt.main_window import MainWindow
from tests.gui.library_fixtures import open_and_wait

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "resources" / "samples" / "miniwob"
WEIGHTS = REPO / "models" / "weights" / "model.onnx"
RUNS = ("login-user-success", "login-user-swapped-fields", "click-tab-success")

pytestmark = pytest.mark.skipif(not WEIGHTS.is_file() or not (SAMPLES / RUNS[0]).is_dir(),
                                reason="needs the shipped weights and the bundled samples")


def library(root: Path) -> Path:
    """Three bundled runs, one file that does not load, and a run whose media are gone (it fails in the scoring
    process, alone)."""
    for name in RUNS:
        shutil.copytree(SAMPLES / name, root / name)
    (root / "broken").mkdir()
    (root / "broken" / "trajectory.json").write_text("{not json")
    shutil.copytree(SAMPLES / RUNS[0], root / "no-media", ignore=shutil.ignore_patterns("frames", "video.mp4"))
    return root


# The app, as a user runs it, in a fresh interpreter (this one may have loaded the model for other tests): open the
# library, score it, and say what the app's process holds afterwards.
APP = r"""
import json, os, sys, time
from PySide6.QtCore import QEventLoop
from gui_app.qt.app import make_app
from gui_app.qt.main_window import MainWindow

app = make_app([sys.argv[0]])
win = MainWindow()
win.show()

def until(done, timeout_s):
    end = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > end:
            sys.exit(f"timed out: {win.notifier.history[-3:]}")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 20)

scanned, scored = [], []
win.scanner.scanned.connect(scanned.append)
win.scorer.scored.connect(scored.append)
win.open_path(sys.argv[1])
until(lambda: scanned and not win.library.model.pending, 120)
win.scorer.score_library()
until(lambda: scored and win.scorer.job is None, 300)
catalog = win.session.library.catalog
report = {"message": win.notifier.history[-1][1], "app": os.getpid(), "worker": win.scorer.process.pid,
          "scores": sum(catalog.latest_score(k) is not None for k in catalog.keys()),
          "loaded": sorted(m for m in sys.modules if m.split(".")[0] in ("onnxruntime", "models", "torch"))}
win.close()
report["worker_after_close"] = win.scorer.process.pid
print(json.dumps(report))
"""


def test_the_app_scores_in_another_process_and_never_loads_the_model(tmp_path):
    root = library(tmp_path / "lib")
    res = subprocess.run([sys.executable, "-c", APP, str(root)], cwd=REPO, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["message"].startswith("Scored 3 trajectories; 2 not scored (1 that do not load, 1 that failed)")
    assert report["scores"] == 3  # stored in the app's catalog
    assert report["worker"] not in (None, report["app"]) and report["worker_after_close"] is None
    assert report["loaded"] == []  # no onnxruntime, no model package, no torch in the app's process


def test_a_killed_scoring_process_is_an_error_line_and_the_next_scoring_works(qtbot, tmp_path):
    root = library(tmp_path / "lib")
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    open_and_wait(qtbot, win, root)
    job = win.scorer.score_library()
    assert job is not None
    qtbot.waitUntil(lambda: win.scorer.process.pid is not None, timeout=60_000)
    os.kill(win.scorer.process.pid, signal.SIGKILL)  # the system's out-of-memory killer, a decoder's crash
    qtbot.waitUntil(lambda: win.scorer.job is None, timeout=60_000)
    level, text = win.notifier.history[-1]
    assert level == "error" and text.startswith("The scoring process ended unexpectedly. Scored 0 trajectories; "
                                                "5 not scored (4 lost when the scoring process ended, 1 that do "
                                                "not load)")
    assert win.notifier.log[-1].detail.count("killed by SIGKILL") == 4  # View → Log names each run lost
    assert win.isVisible()

    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        win.action_map["score_library"].trigger()
    level, text = win.notifier.history[-1]
    assert level == "warning" and text.startswith("Scored 3 trajectories; 2 not scored (1 that do not load, 1 that "
                                                  "failed)")
    assert "no-media" in win.notifier.log[-1].detail and "no readable" in win.notifier.log[-1].detail


def test_cancel_stops_the_scoring_process_and_the_app_goes_on(qtbot, tmp_path):
    root = library(tmp_path / "lib")
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    open_and_wait(qtbot, win, root)
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        job = win.scorer.score_library()
        assert job is not None
        win.action_map["cancel"].trigger()  # Esc, while the judge still loads
    assert job.is_cancelled and win.notifier.history[-1][1].startswith("Scored 0 trajectories")
    pid = win.scorer.process.pid
    assert pid is not None  # stopped between runs: still there, its judge loaded, for the next scoring
    qtbot.waitUntil(lambda: win.scorer.job is None, timeout=30_000)
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        win.action_map["score_library"].trigger()
    assert win.notifier.history[-1][1].startswith("Scored 3 trajectories")
    assert win.scorer.process.pid == pid
    win.close()
    assert win.scorer.process.pid is None  # closing the window stops it
