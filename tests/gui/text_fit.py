"""Whether the text a window shows fits where it is shown: the geometry tests' eye (issue 30: "isagrees with o",
"Teach the mode", counters cut off, the label panel cut on the right).

:func:`cut_texts` walks every visible widget and measures its text with the widget's own font metrics
(``QFontMetrics.horizontalAdvance``) against the room the widget has; a scroll area that must scroll sideways counts
as cutting what it holds. It returns one line per widget whose text does not fit, naming it and the sizes.
"""

from __future__ import annotations

from PySide6 import QtGui
from PySide6.QtCore import Qt
from PySide6.QtGui import QFontMetrics, QTextDocument
from PySide6.QtWidgets import (QAbstractButton, QComboBox, QDockWidget, QHeaderView, QLabel,
                               QLineEdit, QPushButton, QScrollArea, QTabBar, QToolButton, QWidget)

# Room a widget's frame and padding take beside its text (pixels, generous for the Fusion style).
_BUTTON_PAD = 10
_COMBO_PAD = 24  # the arrow
_EDIT_PAD = 8


def _name(w: QWidget) -> str:
    parents = []
    p = w
    while p is not None and len(parents) < 4:
        parents.append(p.objectName() or type(p).__name__)
        p = p.parentWidget()
    return "/".join(reversed(parents))


def _plain(label: QLabel) -> str:
    text = label.text()
    if label.textFormat() == Qt.TextFormat.RichText or (label.textFormat() == Qt.TextFormat.AutoText
                                                         and QtGui.Qt.mightBeRichText(text)):
        doc = QTextDocument()
        doc.setDefaultFont(label.font())
        doc.setHtml(text)
        return doc.toPlainText()
    return text


def _label_cut(label: QLabel) -> str | None:
    text = _plain(label)
    if not text.strip():
        return None
    room = label.contentsRect()
    if label.wordWrap():
        need = label.heightForWidth(label.width())
        if need > label.height() + 1:
            return f"wrapped text needs {need} px of height, has {label.height()}: {text[:60]!r}"
        return None
    fm = QFontMetrics(label.font())
    lines = text.splitlines() or [text]
    widest = max(fm.horizontalAdvance(line) for line in lines)
    if widest > room.width() + 1:
        return f"needs {widest} px, has {room.width()}: {text[:60]!r}"
    return None


def _button_cut(button: QAbstractButton) -> str | None:
    text = button.text().replace("&&", "\0").replace("&", "").replace("\0", "&")
    if not text.strip():
        return None
    fm = QFontMetrics(button.font())
    need = fm.horizontalAdvance(text) + (button.iconSize().width() + 4 if not button.icon().isNull() else 0)
    if isinstance(button, (QPushButton, QToolButton)):
        need += _BUTTON_PAD
    else:  # check boxes and radio buttons: the indicator first
        need += 22
    if need > button.width():
        return f"needs {need} px, has {button.width()}: {text!r}"
    return None


def _combo_cut(combo: QComboBox) -> str | None:
    text = combo.currentText()
    if not text:
        return None
    need = QFontMetrics(combo.font()).horizontalAdvance(text) + _COMBO_PAD
    return f"needs {need} px, has {combo.width()}: {text!r}" if need > combo.width() else None


def _edit_cut(edit: QLineEdit) -> str | None:
    text = edit.text() or edit.placeholderText()
    if not text:
        return None
    need = QFontMetrics(edit.font()).horizontalAdvance(text) + _EDIT_PAD
    room = edit.width() - (24 if edit.isClearButtonEnabled() and edit.text() else 0)
    return f"needs {need} px, has {room}: {text!r}" if need > room else None


def _tabs_cut(bar: QTabBar) -> str | None:
    fm = QFontMetrics(bar.font())
    for i in range(bar.count()):
        text = bar.tabText(i).replace("&", "")
        if fm.horizontalAdvance(text) + 8 > bar.tabRect(i).width():
            return f"tab {text!r} has {bar.tabRect(i).width()} px"
    return None


def _dock_cut(dock: QDockWidget) -> str | None:
    need = QFontMetrics(dock.font()).horizontalAdvance(dock.windowTitle()) + 48  # its float and close buttons
    return f"title needs {need} px, has {dock.width()}" if need > dock.width() else None


def _header_cut(header: QHeaderView) -> str | None:
    model = header.model()
    if model is None or header.orientation() != Qt.Orientation.Horizontal:
        return None
    fm = QFontMetrics(header.font())
    last = model.columnCount() - 1
    for col in range(model.columnCount()):
        if header.isSectionHidden(col) or (col == last and header.stretchLastSection()):
            continue
        text = str(model.headerData(col, Qt.Orientation.Horizontal, Qt.ItemDataRole.DisplayRole) or "")
        if fm.horizontalAdvance(text) + 16 > header.sectionSize(col):
            return f"column {text!r} has {header.sectionSize(col)} px"
    return None


def cut_texts(root: QWidget) -> list[str]:
    """Every visible widget under ``root`` whose text does not fit the room it has, with why."""
    out: list[str] = []
    for w in [root, *root.findChildren(QWidget)]:
        if not w.isVisible() or w.width() <= 0 or w.height() <= 0 or w.visibleRegion().isEmpty():
            continue  # hidden, or out of sight (a dock tab behind another is moved off the window)
        why: str | None = None
        if isinstance(w, QLabel):
            why = _label_cut(w)
        elif isinstance(w, QAbstractButton):
            why = _button_cut(w)
        elif isinstance(w, QComboBox):
            why = _combo_cut(w)
        elif isinstance(w, QLineEdit):
            why = _edit_cut(w)
        elif isinstance(w, QTabBar):
            why = _tabs_cut(w)
        elif isinstance(w, QDockWidget) and not w.isFloating():
            why = _dock_cut(w)
        elif isinstance(w, QHeaderView):
            why = _header_cut(w)
        elif isinstance(w, QScrollArea) and w.horizontalScrollBar().isVisible():
            why = f"scrolls sideways: holds {w.widget().width() if w.widget() else '?'} px in {w.viewport().width()}"
        if why is not None:
            out.append(f"{_name(w)}: {why}")
    return out
