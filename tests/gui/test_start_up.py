"""``rollscope open ROOT`` paints the library's first rows before it loads what they do not need (issue 32: within
1 s for 100,000 runs on two cores, ``bench/catalog_scan.py --app-runs``): by then no video decoder (PyAV, OpenCV), no
plotting library (pyqtgraph), no data-frame library (polars) and no model (onnxruntime, torch, the model package) is
in the app's process, and the timeline is not built yet. Then the rest comes: the timeline, and the decoders (a
worker imports them, so that the first run opened does not wait for them)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.gui.library_fixtures import make_library

REPO = Path(__file__).resolve().parents[2]

# The command as the user runs it, in a fresh interpreter (this one has loaded everything), watched from inside: what
# the process holds when the library table first paints rows, and once the window is whole.
APP = r"""
import json, sys, time
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication

from gui_app.cli import main

HEAVY = ("av", "cv2", "pyqtgraph", "polars", "onnxruntime", "torch", "models")
report = {}


def loaded():
    return sorted(m for m in HEAVY if m in sys.modules)


class FirstRows(QObject):
    def __init__(self, win):
        super().__init__(win)
        self.win = win

    def eventFilter(self, obj, event):
        if event.type() == QEvent.Type.Paint and "first_rows" not in report and self.win.library.model.rowCount():
            report["first_rows"] = {"loaded": loaded(), "rows": self.win.library.model.rowCount(),
                                    "timeline": type(self.win.docks["timeline"].widget()).__name__}
        return False


def attach():  # the event loop's first turn: the window is shown, the library opening
    from gui_app.qt.main_window import MainWindow

    win = next(w for w in QApplication.topLevelWidgets() if isinstance(w, MainWindow))
    win.library.table.viewport().installEventFilter(FirstRows(win))
    deadline = time.monotonic() + 120

    def whole():  # after the first rows: the timeline built, the decoders imported, the scan ended
        done = "first_rows" in report and {"av", "cv2"} <= set(sys.modules) and win.scanner.job is None
        if not done and time.monotonic() < deadline:
            QTimer.singleShot(20, whole)
            return
        report["whole"] = {"loaded": loaded(), "timeline": type(win.docks["timeline"].widget()).__name__}
        print(json.dumps(report), flush=True)
        win.close()

    win.built.connect(whole)


QTimer.singleShot(0, attach)
sys.exit(main(["open", sys.argv[1]]))
"""


def test_open_paints_the_first_rows_before_loading_decoders_plots_or_models(tmp_path):
    from gui_app.core.library.catalog import Catalog

    root = make_library(tmp_path / "lib", 30)
    with Catalog.for_root(root) as cat:  # a library opened before: its first page is in its catalog
        assert cat.scan(root).trajectories == 30
    res = subprocess.run([sys.executable, "-c", APP, str(root)], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["first_rows"] == {"loaded": [], "rows": 30, "timeline": "QWidget"}
    assert report["whole"]["timeline"] == "TimelineView"
    # What comes after the first rows: the plots with the timeline, the decoders in a worker; never a model.
    assert report["whole"]["loaded"] == ["av", "cv2", "pyqtgraph"]
