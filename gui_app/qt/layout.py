"""The window's dock layout: one declarative default, View → Reset layout, and docks kept inside the screen.

Opening or floating the review once made the window grow past the screen and squeezed the video to ~180 px, and the
saved layout brought that back at every start. Three rules keep that from happening again:

* every panel sits in a scroll area inside its dock (:func:`scrollable`), so a tall panel (the review, the label
  panel) never imposes its full height on the window: it scrolls instead;
* the window and every floating dock are moved and shrunk into the available area of their screen after a layout is
  restored and whenever a dock is floated (:func:`keep_on_screen`);
* :func:`reset_layout` puts every dock back where :data:`DEFAULT_LAYOUT` says, at the first-run proportions.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QRect, QSettings, Qt
from PySide6.QtWidgets import QApplication, QDockWidget, QFrame, QMainWindow, QScrollArea, QWidget

from gui_app.core.settings import config_dir

AREAS = {"left": Qt.DockWidgetArea.LeftDockWidgetArea, "right": Qt.DockWidgetArea.RightDockWidgetArea,
         "bottom": Qt.DockWidgetArea.BottomDockWidgetArea, "top": Qt.DockWidgetArea.TopDockWidgetArea}

# (dock, area, shown on first start), in the order they are docked
DEFAULT_LAYOUT: tuple[tuple[str, str, bool], ...] = (
    ("library", "left", True),
    ("queue", "left", False),  # shown once a queue is picked
    ("labels", "right", True),
    ("review", "right", False),  # shown when asked for (Ctrl+Shift+A)
    ("timeline", "bottom", True),
    ("steps", "bottom", True),
)
# (first, second, orientation): the second is placed beside (horizontal) or below (vertical) the first
SPLITS: tuple[tuple[str, str, Qt.Orientation], ...] = (
    ("library", "queue", Qt.Orientation.Vertical),
    ("labels", "review", Qt.Orientation.Vertical),
    ("timeline", "steps", Qt.Orientation.Horizontal),  # steps beside the timeline: the video keeps the height
)
# first-run sizes: (docks, sizes, orientation)
SIZES: tuple[tuple[tuple[str, ...], tuple[int, ...], Qt.Orientation], ...] = (
    (("library", "labels"), (500, 380), Qt.Orientation.Horizontal),
    (("timeline", "steps"), (230, 230), Qt.Orientation.Vertical),
    (("timeline", "steps"), (760, 540), Qt.Orientation.Horizontal),
)
DEFAULT_SIZE = (1400, 860)
# Bump when the dock layout changes, so an old saved layout is ignored. 3: panels scroll inside their docks, and
# layouts saved while the review pushed the window past the screen are dropped.
WINDOW_STATE_VERSION = 3


def scrollable(widget: QWidget) -> QScrollArea:
    """``widget`` in a frameless scroll area that resizes it: the dock's minimum size no longer grows with it."""
    area = QScrollArea()
    area.setWidget(widget)
    area.setWidgetResizable(True)
    area.setFrameShape(QFrame.Shape.NoFrame)
    area.setFocusPolicy(Qt.FocusPolicy.NoFocus)
    return area


def available(widget: QWidget) -> QRect:
    """The available area (without task bars) of the screen ``widget`` is on, or of the primary screen."""
    screen = widget.screen() if widget.screen() is not None else QApplication.primaryScreen()
    return screen.availableGeometry() if screen is not None else QRect(0, 0, *DEFAULT_SIZE)


def fit_rect(rect: QRect, area: QRect) -> QRect:
    """``rect`` shrunk to fit ``area`` and moved inside it."""
    w, h = min(rect.width(), area.width()), min(rect.height(), area.height())
    x = min(max(rect.x(), area.x()), area.x() + area.width() - w)
    y = min(max(rect.y(), area.y()), area.y() + area.height() - h)
    return QRect(x, y, w, h)


def keep_on_screen(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """Move and shrink the window, and every floating dock, into the available area of their screen."""
    area = available(window)
    frame = window.frameGeometry()
    margin_w, margin_h = frame.width() - window.width(), frame.height() - window.height()
    fitted = fit_rect(frame, area)
    if fitted != frame:
        window.resize(max(fitted.width() - margin_w, 200), max(fitted.height() - margin_h, 200))
        window.move(fitted.topLeft())
    for dock in docks.values():
        if dock.isFloating():
            keep_dock_on_screen(dock)


def keep_dock_on_screen(dock: QDockWidget) -> None:
    """Move and shrink a floating dock into the available area of its screen."""
    frame = dock.frameGeometry()
    rect = fit_rect(frame, available(dock))
    if rect != frame:
        dock.resize(rect.width() - (frame.width() - dock.width()), rect.height() - (frame.height() - dock.height()))
        dock.move(rect.topLeft())


def reset_layout(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """Every dock back in its default place, size and visibility; the window at its default size, on screen."""
    for name, where, _shown in DEFAULT_LAYOUT:
        dock = docks[name]
        dock.setFloating(False)
        window.addDockWidget(AREAS[where], dock)
    for first, second, orientation in SPLITS:
        window.splitDockWidget(docks[first], docks[second], orientation)
    for name, _where, shown in DEFAULT_LAYOUT:
        docks[name].setVisible(shown)
    area = available(window)
    window.resize(min(DEFAULT_SIZE[0], area.width()), min(DEFAULT_SIZE[1], area.height()))
    default_sizes(window, docks)
    keep_on_screen(window, docks)


def window_settings() -> QSettings:
    """Where the window's geometry and dock layout are kept (QSettings: the one thing the typed settings do not
    hold)."""
    return QSettings(str(config_dir() / "window.ini"), QSettings.Format.IniFormat)


def restore_state(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """The saved geometry and dock layout over the defaults, then moved and shrunk onto the screen."""
    qs = window_settings()
    geometry, state = qs.value("geometry"), qs.value("state")
    if not (isinstance(geometry, QByteArray) and not geometry.isEmpty() and window.restoreGeometry(geometry)):
        window.resize(*DEFAULT_SIZE)
    default_sizes(window, docks)
    for name, _area, shown in DEFAULT_LAYOUT:
        docks[name].setVisible(shown)
    if isinstance(state, QByteArray):
        window.restoreState(state, WINDOW_STATE_VERSION)
    keep_on_screen(window, docks)


def save_state(window: QMainWindow) -> None:
    qs = window_settings()
    qs.setValue("geometry", window.saveGeometry())
    qs.setValue("state", window.saveState(WINDOW_STATE_VERSION))
    qs.sync()


def default_sizes(window: QMainWindow, docks: dict[str, QDockWidget]) -> None:
    """First-run proportions (a saved layout, restored next, overrides them)."""
    for names, sizes, orientation in SIZES:
        window.resizeDocks([docks[n] for n in names], list(sizes), orientation)
