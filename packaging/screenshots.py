"""Screenshots of the real main window for the docs: the window, library, viewer with its transport bar, the legible
timeline, the pruning overlay and two runs side by side; then the window at 1366x768, a common laptop screen, as an
annotator labels in it, and its focus layout (F11: the video, the timeline and a one-line label bar).

Run by ``make screenshots`` under Xvfb (``xvfb-run``); without a display it falls back to Qt's offscreen platform,
which renders the same widgets. Opens ``resources/samples/`` when it holds trajectories, else a generated folder
of recorded trajectories (real H.264 videos). It scores the whole library (shipped weights, else a stand-in of the
same architecture with random weights, said in the shots' names), opens a run the environment failed, labels it
from the keyboard, turns the overlay on over a frame the model saw, and compares it with a run of the same task.

Usage: ``python packaging/screenshots.py OUT_DIR [--folder PATH]``
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "bench")]

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
else:
    os.environ.setdefault("QT_QPA_PLATFORM", "xcb;offscreen")  # Qt tries them in order (xcb libraries missing)
os.environ["ROLLSCOPE_CONFIG_DIR"] = tempfile.mkdtemp(prefix="rollscope-shots-")  # never the user's settings


def _wait(app, done, timeout_s: float) -> bool:
    from PySide6.QtCore import QEventLoop

    end = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > end:
            return False
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 30)
    return True


def _settle(app, seconds: float = 0.4) -> None:
    _wait(app, lambda: False, seconds)


def _library(folder: str | None) -> Path:
    if folder:
        return Path(folder)
    samples = REPO / "resources" / "samples"
    if samples.is_dir() and any(p.name not in (".gitkeep", "README.md") for p in samples.iterdir()):
        # A copy: opening a folder writes its catalog and label store inside it.
        import shutil

        copy = Path(tempfile.mkdtemp(prefix="rollscope-samples-")) / "samples"
        return Path(shutil.copytree(samples, copy, ignore=shutil.ignore_patterns(".rollscope")))
    from gui_stall import make_video_library

    return make_video_library(REPO / "data" / "screenshots" / "library", 8, steps=6, fps=5)


def _pick(model, prefer_task: str | None = None) -> tuple[str | None, str | None]:
    """Keys of a run the environment failed (several steps, a recording; the preferred task first) and of a
    successful run of its task (None when there is none)."""
    rows = [r for r in (model.row(i) for i in range(model.rowCount())) if r is not None]
    usable = [r for r in rows if not r.error and (r.n_steps or 0) > 2 and (Path(r.path) / "video.mp4").exists()]
    failed = sorted((r for r in usable if r.success is False),
                    key=lambda r: (r.task != prefer_task, r.model_success is not False, r.key))
    a = failed[0] if failed else (usable[0] if usable else None)
    if a is None:
        return None, None
    same = [r for r in usable if r.key != a.key and r.task == a.task and r.success]
    return a.key, (same[0].key if same else None)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path, help="folder for the PNG files")
    p.add_argument("--folder", help="library folder to show (default: resources/samples or a generated one)")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)

    from PySide6.QtCore import Qt
    from PySide6.QtTest import QTest

    from gui_app.qt.app import make_app
    from gui_app.qt.main_window import MainWindow
    from models.runtime import WEIGHTS_DIR, RewardModel

    app = make_app([sys.argv[0]])
    win = MainWindow()
    win.resize(1500, 900)
    win.show()
    win.set_annotator("ada")
    _settle(app)
    root = _library(args.folder)
    scanned: list = []
    win.scanner.scanned.connect(scanned.append)
    win.open_path(root)
    if not _wait(app, lambda: bool(scanned) and not win.library.model.pending, 300):
        print("scan did not finish", file=sys.stderr)
        return 1
    suffix = ""
    if not (WEIGHTS_DIR / "model.onnx").is_file():
        from gui_stall import standin_weights

        win.scorer.holder.model = RewardModel.load(standin_weights(Path(tempfile.mkdtemp(prefix="rollscope-w-"))))
        suffix = "_standin_weights"
    scored: list = []
    win.scorer.scored.connect(scored.append)
    win.scorer.score_library()  # the library's p(success) column with the verdicts, and every run's timeline
    if not _wait(app, lambda: bool(scored) and win.scorer.job is None and not win.library.model.pending, 600):
        print(f"scoring did not finish: {win.notifier.history[-2:]}", file=sys.stderr)
    model = win.library.model
    target, other = _pick(model, prefer_task="login-user")
    loaded: list = []
    win.loader.loaded.connect(loaded.append)
    if target is None or not win.library.select_key(target):
        win.library.select_row(0)
    _wait(app, lambda: bool(loaded), 120)
    video = win.video
    _wait(app, lambda: video.shown_frame >= 0, 30)
    # Label it from the keyboard, focus on the library table: L starts labelling (browsing writes nothing), then a
    # verdict, a label (key 21) and the root cause at the second step.
    handle = win.windowHandle()
    win.activateWindow()  # window shortcuts (L, F11) act in the active window
    _wait(app, win.isActiveWindow, 10)
    win.library.table.setFocus()
    win.session.set_step(1)
    for key in (Qt.Key.Key_L, Qt.Key.Key_F, Qt.Key.Key_2, Qt.Key.Key_1, Qt.Key.Key_R):
        QTest.keyClick(handle, key)
    _wait(app, lambda: win.labelling.pending_writes == 0, 30)
    shots: list[Path] = []

    def shot(widget, name: str) -> None:
        _settle(app, 0.4)
        path = args.out / name
        widget.grab().save(str(path))
        shots.append(path)

    n_steps = win.session.trajectory.n_steps if win.session.trajectory else 1
    win.session.set_step(min(2, n_steps - 1))
    _wait(app, lambda: video.shown_frame == win.session.frame, 30)
    shot(win, f"main_window{suffix}.png")
    width = win.docks["library"].width()
    win.resizeDocks([win.docks["library"]], [780], Qt.Orientation.Horizontal)  # every column, p(success) too
    shot(win.docks["library"], f"library{suffix}.png")
    win.resizeDocks([win.docks["library"]], [width], Qt.Orientation.Horizontal)
    shot(win.centralWidget(), f"viewer{suffix}.png")  # the video with the action drawn, over the transport bar
    # The timeline of a run the model and the environment both call a failure: the predicted first deviation.
    agreed = next((r.key for r in (model.row(i) for i in range(model.rowCount())) if r is not None
                   and r.success is False and r.model_success is False and r.first_error_step is not None
                   and (r.n_steps or 0) > 2), None)
    if agreed is not None and agreed != win.session.key:
        loaded.clear()
        win.library.select_key(agreed)
        _wait(app, lambda: bool(loaded), 60)
        win.session.set_step(min(1, win.session.trajectory.n_steps - 1))
    shot(win.docks["timeline"], f"timeline{suffix}.png")  # verdict, threshold, first deviation, legend
    if agreed is not None and target is not None and agreed != target:
        loaded.clear()
        win.library.select_key(target)
        _wait(app, lambda: bool(loaded), 60)
        win.session.set_step(min(2, n_steps - 1))
        _wait(app, lambda: video.shown_frame == win.session.frame, 30)
    win.action_map["toggle_overlay"].setChecked(True)
    kf = video._kf_frames
    if kf:  # a frame the model saw: the mask drawn is that frame's
        win.session.set_frame(kf[min(1, len(kf) - 1)])
        _wait(app, lambda: video.shown_frame == win.session.frame, 30)
    shot(win, f"pruning_overlay{suffix}.png")
    win.action_map["toggle_overlay"].setChecked(False)
    if other is not None:
        opened: list = []
        win.comparison.opened.connect(opened.append)
        win.docks["library"].hide()  # room for the two videos, as one compares
        win.docks["labels"].hide()
        win.compare_with(other)
        if _wait(app, lambda: bool(opened), 120):
            win.session.set_step(min(2, n_steps - 1))
            _wait(app, lambda: win.compare_pane.video.shown_frame == win.comparison.session.frame, 30)
            shot(win, f"side_by_side{suffix}.png")
        win.comparison.close()
    # A 1366x768 laptop: the side panels are tabs of one column, the video keeps about two thirds of the width.
    win.docks["library"].show()
    win.set_label_dock_visible(True)
    win.resize(1366, 768)
    _wait(app, lambda: win.layout_policy.kind == "compact" and win.video.width() > 0.6 * 1366, 10)
    if target is not None and win.session.key != target:
        loaded.clear()
        win.library.select_key(target)
        _wait(app, lambda: bool(loaded), 60)
    win.session.set_step(min(1, max(win.session.trajectory.n_steps - 1, 0)) if win.session.trajectory else 0)
    _wait(app, lambda: video.shown_frame == win.session.frame, 30)
    shot(win, f"main_window_1366x768{suffix}.png")
    QTest.keyClick(handle, Qt.Key.Key_F11)  # the focus layout
    _wait(app, lambda: win.label_bar.isVisible(), 10)
    shot(win, f"focus_layout_1366x768{suffix}.png")
    QTest.keyClick(handle, Qt.Key.Key_F11)
    win.close()
    for path in shots:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
