"""Start the Qt application: the QApplication, its style, the main window, the event loop.

Start-up is timed to the library's first rows on screen (issue 32: within 1 s for 100,000 runs on two cores;
``bench/catalog_scan.py --app-runs``): nothing the first rows do not need is imported or built before them. The main
window builds its timeline after them (:meth:`MainWindow.finish_building`), and then a worker imports the video
decoders (PyAV, OpenCV), so that the first run opened does not wait for them either.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from gui_app import __version__

ICON_NAMES = ("rollscope.png", "rollscope.svg")


def icon_path() -> Path | None:
    """The app icon: ``gui_app/resources/icons/`` (package data, so installed wheels and bundles have it too)."""
    bases = [Path(__file__).resolve().parents[1] / "resources" / "icons"]
    frozen = getattr(sys, "_MEIPASS", None)  # PyInstaller's unpack folder
    if frozen:
        bases.insert(0, Path(frozen) / "gui_app" / "resources" / "icons")
    for base in bases:
        for name in ICON_NAMES:
            if (base / name).is_file():
                return base / name
    return None


def make_app(argv: list[str] | None = None) -> QApplication:
    """The QApplication (created once), named and styled."""
    existing = QApplication.instance()
    if isinstance(existing, QApplication):
        app = existing
    else:
        QCoreApplication.setAttribute(Qt.ApplicationAttribute.AA_ShareOpenGLContexts)
        app = QApplication(argv if argv is not None else sys.argv[:1])
    app.setApplicationName("Rollscope")
    app.setOrganizationName("Rollscope")
    app.setApplicationVersion(__version__)
    app.setDesktopFileName("rollscope")
    app.setStyle("Fusion")  # the same look on every platform and under Xvfb
    icon = icon_path()
    if icon is not None:
        app.setWindowIcon(QIcon(str(icon)))
    return app


def run_app(path: str | None = None, tasks_roots: Sequence[str] | None = None) -> int:
    """Show the main window (on ``path`` when given, else the last folder when the settings say so); run the loop.

    Args:
        path: a folder of trajectories, or one trajectory (file, folder, or ``file.jsonl#N``).
        tasks_roots: where OSWorld task configs are looked for (``--tasks-root``), for every library opened; None:
            the user's default.

    Environment:
        ROLLSCOPE_QUIT_AFTER_MS: close the window after this many milliseconds (smoke tests of a built bundle).

    Returns:
        The event loop's exit status.
    """
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    app = make_app()
    from gui_app.core.media.video import load_decoders
    from gui_app.qt.main_window import MainWindow
    from gui_app.qt.notify import install_excepthook

    win = MainWindow()
    win.scanner.tasks_roots = None if tasks_roots is None else list(tasks_roots)
    install_excepthook(win.notifier)
    win.built.connect(lambda: win.runner.submit("Loading the video decoders", lambda _rep: load_decoders(),
                                                report_errors=False, show_progress=False))
    win.show()
    if path:
        win.open_path(path)
    elif win.settings.reopen_last and win.settings.last_folder and Path(win.settings.last_folder).is_dir():
        win.open_path(win.settings.last_folder)
    quit_after = os.environ.get("ROLLSCOPE_QUIT_AFTER_MS", "")
    if quit_after.isdigit():
        QTimer.singleShot(int(quit_after), win.close)
    return app.exec()
