"""Errors, warnings and notes for the user: the status bar plus one non-modal message box. Never a crash.

:class:`Notifier` is the model (a QObject with one signal, callable from anywhere in the GUI thread);
:class:`NotificationView` shows it in a main window. Errors and warnings also open a non-modal message box, reused
rather than stacked, so a scan that meets a hundred bad files does not bury the window under a hundred dialogs;
the box keeps the latest text and says how many more came. Every message is also logged.

:func:`install_excepthook` routes an exception escaping a slot to the notifier instead of killing the app.
"""

from __future__ import annotations

import logging
import sys
import time
import traceback
from types import TracebackType
from typing import NamedTuple

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import (QApplication, QHBoxLayout, QLabel, QMainWindow, QMessageBox, QProgressBar, QToolButton,
                               QWidget)

from gui_app.qt.workers import Job, Progress

log = logging.getLogger("rollscope")

LEVELS = ("info", "warning", "error")
_LOG_LEVELS = {"info": logging.INFO, "warning": logging.WARNING, "error": logging.ERROR}
STATUS_MS = {"info": 4000, "warning": 8000, "error": 0}  # errors stay in the status bar until replaced


class LogEntry(NamedTuple):
    """One message as the log keeps it: when (Unix time), its level, its text and its detail (one line per run a
    batch did not score, a traceback; '' when none)."""

    time: float
    level: str
    text: str
    detail: str = ""


class Notifier(QObject):
    """Where every part of the GUI sends what the user must know.

    Attributes:
        history: every ``(level, text)`` posted, oldest first (the tests read it).
        log: every message posted this session with its time and detail, oldest first: what View → Log lists
            (:class:`gui_app.qt.log_view.LogDialog`).
    """

    posted = Signal(str, str, str)  # level, text, detail

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self.history: list[tuple[str, str]] = []
        self.log: list[LogEntry] = []

    def post(self, level: str, text: str, detail: str = "") -> None:
        if level not in LEVELS:
            raise ValueError(f"unknown level {level!r}; one of {LEVELS}")
        self.history.append((level, text))
        self.log.append(LogEntry(time.time(), level, text, detail))
        log.log(_LOG_LEVELS[level], text)
        self.posted.emit(level, text, detail)

    def info(self, text: str) -> None:
        self.post("info", text)

    def warning(self, text: str, detail: str = "") -> None:
        self.post("warning", text, detail)

    def error(self, text: str, detail: str = "") -> None:
        self.post("error", text, detail)


class NotificationView(QObject):
    """Shows a :class:`Notifier` in ``window``: the status bar always, a non-modal box for warnings and errors."""

    def __init__(self, notifier: Notifier, window: QMainWindow):
        super().__init__(window)
        self.notifier, self.window = notifier, window
        self.box: QMessageBox | None = None
        self._unseen = 0
        notifier.posted.connect(self._show)

    def _show(self, level: str, text: str, detail: str) -> None:
        self.window.statusBar().showMessage(text, STATUS_MS[level])
        if level == "info":
            return
        if self.box is None:
            self.box = QMessageBox(self.window)
            self.box.setModal(False)
            self.box.setWindowModality(self.box.windowModality().NonModal)
            self.box.setStandardButtons(QMessageBox.StandardButton.Close)
            # Shown beside the work, not in its way: the keyboard stays where the user was (j/k, Space, labels).
            self.box.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
            self.box.finished.connect(self._closed)
        self._unseen += 1 if self.box.isVisible() else 0
        more = f"\n\n({self._unseen} earlier message(s): View → Log lists them)" if self._unseen else ""
        self.box.setIcon(QMessageBox.Icon.Critical if level == "error" else QMessageBox.Icon.Warning)
        self.box.setWindowTitle("Rollscope — " + ("error" if level == "error" else "warning"))
        self.box.setText(text + more)
        self.box.setDetailedText(detail)
        active = QApplication.activeWindow()
        self.box.show()
        if active is not None and active is not self.box:
            active.activateWindow()  # some platforms activate a shown window whatever the attribute says

    def _closed(self, _result: int) -> None:
        self._unseen = 0

    @property
    def message_text(self) -> str:
        """The text of the message box ('' when none is shown)."""
        return self.box.text() if self.box is not None and self.box.isVisible() else ""


def install_excepthook(notifier: Notifier) -> None:
    """Show an exception that escapes a Qt slot as an error message; the app goes on."""
    previous = sys.excepthook

    def hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            previous(kind, exc, tb)
            return
        detail = "".join(traceback.format_exception(kind, exc, tb))
        try:
            notifier.error(f"Unexpected error: {kind.__name__}: {exc}", detail)
        except RuntimeError:  # the notifier's window is already gone (exit): fall back to stderr
            previous(kind, exc, tb)

    sys.excepthook = hook


class JobProgressView(QWidget):
    """The status bar's progress: what runs, how far it got, and a Cancel button. Hidden when nothing runs.

    Shows the most recent job handed to :meth:`track` that is still running.
    """

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.label = QLabel(self)
        self.bar = QProgressBar(self)
        self.bar.setMaximumWidth(220)
        self.bar.setTextVisible(True)
        self.cancel_button = QToolButton(self)
        self.cancel_button.setText("Cancel")
        self.cancel_button.setToolTip("Stop this work (Esc)")
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for w in (self.label, self.bar, self.cancel_button):
            layout.addWidget(w)
        self._jobs: list[Job] = []
        self.cancel_button.clicked.connect(self.cancel)
        self.hide()

    def track(self, job: Job) -> None:
        self._jobs.append(job)
        job.progressed.connect(lambda p, j=job: self._on_progress(j, p))
        job.finished.connect(lambda j=job: self._on_finished(j))
        self._show_job(job, None)

    @property
    def job(self) -> Job | None:
        return self._jobs[-1] if self._jobs else None

    def cancel(self) -> None:
        if self.job is not None:
            self.job.cancel()
            self.label.setText(f"{self.job.name}: cancelling…")

    def _show_job(self, job: Job, p: Progress | None) -> None:
        text = job.name if p is None or not p.text else f"{job.name}: {p.text}"
        self.label.setText(text if len(text) <= 80 else "…" + text[-79:])
        if p is None or p.total is None:
            self.bar.setRange(0, 0)  # busy indicator
        else:
            self.bar.setRange(0, max(p.total, 1))
            self.bar.setValue(min(p.done, max(p.total, 1)))
            self.bar.setFormat(f"{p.done:,} / {p.total:,}")
        self.show()

    def _on_progress(self, job: Job, p: Progress) -> None:
        if job is self.job and not job.is_cancelled:
            self._show_job(job, p)

    def _on_finished(self, job: Job) -> None:
        if job in self._jobs:
            self._jobs.remove(job)
        if self.job is None:
            self.hide()
        else:
            self._show_job(self.job, self.job.latest_progress)
