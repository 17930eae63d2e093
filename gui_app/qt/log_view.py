"""View → Log: every warning and error of this session, with the lines behind each (the runs a scoring batch did
not score, one per line with the reason), in one non-modal dialog that follows the notifier as messages come.

The status bar shows a message for a few seconds and the message box the latest only; the log keeps them all, so a
message that says "View → Log names each" is never a promise with nothing behind it. Information messages are
listed too when asked for ("Show information too").
"""

from __future__ import annotations

import time

from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (QApplication, QCheckBox, QDialog, QDialogButtonBox, QHBoxLayout, QLabel,
                               QPlainTextEdit, QPushButton, QVBoxLayout, QWidget)

from gui_app.qt.notify import LogEntry, Notifier


def entry_text(entry: LogEntry) -> str:
    """One entry as the log lists it: time, level and text, then each line of its detail indented."""
    stamp = time.strftime("%H:%M:%S", time.localtime(entry.time))
    lines = [f"{stamp}  {entry.level.upper():7s}  {entry.text}"]
    lines += [f"          {line}" for line in entry.detail.splitlines() if line.strip()]
    return "\n".join(lines)


class LogDialog(QDialog):
    """The session's messages (see the module docstring), newest last; a view over a :class:`Notifier`."""

    def __init__(self, notifier: Notifier, parent: QWidget | None = None):
        super().__init__(parent)
        self.notifier = notifier
        self.setWindowTitle("Rollscope — log")
        self.setModal(False)
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.show_info = QCheckBox("Show information too", self)
        self.show_info.setToolTip("List the status bar's information messages as well as warnings and errors")
        self.count = QLabel(self)
        copy = QPushButton("Copy all", self)
        copy.setToolTip("Copy the log to the clipboard")
        copy.clicked.connect(lambda: QApplication.clipboard().setText(self.text.toPlainText()))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        row = QHBoxLayout()
        row.addWidget(self.show_info)
        row.addStretch(1)
        row.addWidget(self.count)
        row.addWidget(copy)
        layout = QVBoxLayout(self)
        layout.addLayout(row)
        layout.addWidget(self.text, 1)
        layout.addWidget(buttons)
        self.resize(860, 420)
        self.show_info.toggled.connect(lambda _on: self.refill())
        notifier.posted.connect(self._posted)
        self.refill()

    def present(self) -> None:
        """View → Log: show the log, in front (it may be open behind the window already; activating it brings it up:
        ``raise_`` is not every platform's)."""
        self.show()
        self.activateWindow()

    def _shown(self, entry: LogEntry) -> bool:
        return entry.level != "info" or self.show_info.isChecked()

    def entries(self) -> list[LogEntry]:
        """The entries listed now."""
        return [e for e in self.notifier.log if self._shown(e)]

    def refill(self) -> None:
        """List the notifier's log again (the filter changed)."""
        shown = self.entries()
        self.text.setPlainText("\n".join(entry_text(e) for e in shown) if shown else "Nothing to report yet.")
        self._count(len(shown))

    def _posted(self, _level: str, _text: str, _detail: str) -> None:
        entry = self.notifier.log[-1]
        if not self._shown(entry):
            return
        shown = len(self.entries())
        if shown == 1:
            self.text.setPlainText(entry_text(entry))
        else:
            self.text.appendPlainText(entry_text(entry))
        self._count(shown)

    def _count(self, n: int) -> None:
        self.count.setText(f"{n:,} message(s)")
