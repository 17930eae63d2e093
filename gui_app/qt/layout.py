"""The window's dock layout: one declarative default, View → Reset layout, and docks kept inside the screen.

Opening or floating the review once made the window grow past the screen and squeezed the video to ~180 px, and the
saved layout brought that back at every start. Three rules keep that from happening again:

* every panel sits in a scroll area inside its dock (:func:`scrollable`), so a tall panel (the review, the label
  panel) never imposes its full height on the window: it scrolls instead;
* the window and every floating dock are moved and shrunk into the available area of their screen after a layout is
  restored and whenever a dock is floated (:func:`keep_on_screen`);
* :func:`reset_layout` puts every dock back where :data:`DEFAULT_LAYOUT` says, at the first-run proportions.

Video first: the default arrangement follows the window's width (:class:`ResponsiveLayout`). Below
:data:`COMPACT_BELOW` pixels (a 1366x768 laptop, a 1600-pixel window) the side panels share one column of tabs on the
right (labels, library, queue, review) and the video keeps about two thirds of the width; wider, the library and the
queue sit on the left and the labels and the review (tabs) on the right, each column a fifth of the width. Either
way the review is a tab beside the labels, with their whole height. The arrangement follows the window across that
width until the user moves or floats a panel (then it is theirs, until View -> Reset layout).

The focus layout (:meth:`ResponsiveLayout.set_focus`, one key) shows the video, the timeline and a one-line label
bar, nothing else; leaving it puts every panel back as it was.
"""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QEvent, QObject, QRect, QSettings, Qt, QTimer, Signal
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
    ("timeline", "steps", Qt.Orientation.Horizontal),  # steps beside the timeline: the video keeps the height
)
# (first, second): the second is a tab beside the first. The review gets the labels' whole height, not a strip under
# them (it was squeezed to ~200 px).
TABS: tuple[tuple[str, str], ...] = (("labels", "review"),)
# The compact arrangement: every side panel a tab of one column on the right, in this order.
COMPACT_TABS = ("labels", "library", "queue", "review")
SIDE_PANELS = frozenset(COMPACT_TABS)
COMPACT_BELOW = 1800  # window widths under this get the compact arrangement
# Width of a side column as a share of the window's: the video keeps at least 60% of it.
SIDE_SHARE = {"compact": 0.30, "wide": 0.19}
BOTTOM_SHARE, BOTTOM_RANGE = 0.26, (170, 330)  # height of the timeline and steps row
DEFAULT_SIZE = (1400, 860)
# Bump when the dock layout changes, so an old saved layout is ignored. 3: panels scroll inside their docks, and
# layouts saved while the review pushed the window past the screen are dropped. 4: the arrangement follows the
# window's width (tabs when compact), the review is a tab beside the labels.
WINDOW_STATE_VERSION = 4


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
    for name, _where, shown in DEFAULT_LAYOUT:
        docks[name].setVisible(shown)
    area = available(window)
    window.resize(min(DEFAULT_SIZE[0], area.width()), min(DEFAULT_SIZE[1], area.height()))
    keep_on_screen(window, docks)
    arrange(window, docks, layout_kind(window.width()))


def layout_kind(width: int) -> str:
    """The default arrangement for a window ``width`` pixels wide: ``compact`` (one column of tabs) or ``wide``."""
    return "compact" if width < COMPACT_BELOW else "wide"


def arrange(window: QMainWindow, docks: dict[str, QDockWidget], kind: str) -> None:
    """Dock every panel where arrangement ``kind`` puts it (see the module doc) and size the columns and the bottom
    row for the window's size; which panels are shown does not change."""
    shown = {name: not dock.isHidden() for name, dock in docks.items()}
    for name, where, _shown in DEFAULT_LAYOUT:
        dock = docks[name]
        dock.setFloating(False)
        window.addDockWidget(AREAS["right" if kind == "compact" and name in SIDE_PANELS else where], dock)
    for first, second, orientation in SPLITS:
        if kind == "wide" or first not in SIDE_PANELS:
            window.splitDockWidget(docks[first], docks[second], orientation)
    tabs = [(COMPACT_TABS[0], other) for other in COMPACT_TABS[1:]] if kind == "compact" else TABS
    for first, second in tabs:
        window.tabifyDockWidget(docks[first], docks[second])
    for name, dock in docks.items():
        dock.setVisible(shown[name])
    if kind == "compact" and shown["library"]:
        docks["library"].raise_()  # browsing comes first; labelling raises the labels
    elif kind == "wide" and shown["labels"]:
        docks["labels"].raise_()  # the review is the tab behind it
    side = max(int(window.width() * SIDE_SHARE[kind]), 200)
    columns = [docks["labels"]] if kind == "compact" else [docks["library"], docks["labels"]]
    window.resizeDocks(columns, [side] * len(columns), Qt.Orientation.Horizontal)
    bottom = min(max(int(window.height() * BOTTOM_SHARE), BOTTOM_RANGE[0]), BOTTOM_RANGE[1])
    window.resizeDocks([docks["timeline"]], [bottom], Qt.Orientation.Vertical)
    rest = window.width()
    window.resizeDocks([docks["timeline"], docks["steps"]], [rest * 7 // 12, rest * 5 // 12],
                       Qt.Orientation.Horizontal)


FOCUS_PANELS = ("timeline",)  # the panels the focus layout keeps


class ResponsiveLayout(QObject):
    """Keeps the default arrangement fitted to the window's width (see the module doc) until the user arranges
    the panels himself: moving a panel to another side or floating it makes the arrangement his, and View ->
    Reset layout (:meth:`reset`) gives it back to the window. Also switches the focus layout on and off.

    Args:
        bar: the one-line label bar the focus layout shows (hidden otherwise).

    Signals:
        focus_changed(bool): the focus layout was switched on / off.

    Attributes:
        kind: the arrangement in place (``compact`` or ``wide``), or None when the user's own.
    """

    focus_changed = Signal(bool)

    def __init__(self, window: QMainWindow, docks: dict[str, QDockWidget], kind: str | None = None,
                 bar: QWidget | None = None):
        super().__init__(window)
        self.window, self.docks, self.kind, self.bar = window, docks, kind, bar
        self._before_focus: QByteArray | None = None  # the dock layout the focus layout will give back
        self._arranging = False
        self._pending = False  # a re-arrangement is queued
        for dock in docks.values():
            dock.dockLocationChanged.connect(lambda _area: self._moved_by_user())
            dock.topLevelChanged.connect(lambda _floating: self._moved_by_user())
        window.installEventFilter(self)

    def apply(self, kind: str | None = None) -> None:
        """Arrange the panels as ``kind`` says (default: what the window's width calls for)."""
        self._arranging = True
        try:
            self.kind = kind or layout_kind(self.window.width())
            arrange(self.window, self.docks, self.kind)
        finally:
            self._arranging = False

    def reset(self) -> None:
        """View -> Reset layout: the default panels, size and arrangement."""
        self._arranging = True
        try:
            reset_layout(self.window, self.docks)
            self.kind = layout_kind(self.window.width())
        finally:
            self._arranging = False

    @property
    def focus(self) -> bool:
        """Whether the focus layout is on."""
        return self._before_focus is not None

    def set_focus(self, on: bool) -> None:
        """The focus layout on (the video, the timeline, the label bar: every other panel hidden) or off (the
        panels as they were)."""
        if bool(on) == self.focus:
            return
        self._arranging = True
        try:
            if on:
                self._before_focus = self.window.saveState(WINDOW_STATE_VERSION)
                for name, dock in self.docks.items():
                    dock.setVisible(name in FOCUS_PANELS)
                if self.bar is not None:
                    self.bar.show()
            else:
                if self.bar is not None:
                    self.bar.hide()
                saved, self._before_focus = self._before_focus, None
                if saved is not None:
                    self.window.restoreState(saved, WINDOW_STATE_VERSION)
        finally:
            self._arranging = False
        self.focus_changed.emit(bool(on))
        if not on:
            self._follow_width()  # the window may have changed width meanwhile

    def _moved_by_user(self) -> None:
        if not self._arranging:
            self.kind = None

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 -- Qt override
        if obj is self.window and event.type() == QEvent.Type.Resize and self.kind is not None \
                and layout_kind(self.window.width()) != self.kind and not self._pending:
            # After the window's own layout has taken the new size: the columns are sized from it.
            self._pending = True
            QTimer.singleShot(0, self, self._follow_width)
        return False

    def _follow_width(self) -> None:
        self._pending = False
        if self.kind is not None and not self.focus and layout_kind(self.window.width()) != self.kind:
            self.apply()


def window_settings() -> QSettings:
    """Where the window's geometry and dock layout are kept (QSettings: the one thing the typed settings do not
    hold)."""
    return QSettings(str(config_dir() / "window.ini"), QSettings.Format.IniFormat)


def restore_state(window: QMainWindow, docks: dict[str, QDockWidget]) -> str | None:
    """The saved geometry and dock layout over the defaults, then moved and shrunk onto the screen. Returns the
    arrangement the window should keep fitted to its width (``compact``/``wide``; the default one when nothing
    was saved), or None when the saved layout is the user's own."""
    qs = window_settings()
    geometry, state = qs.value("geometry"), qs.value("state")
    if not (isinstance(geometry, QByteArray) and not geometry.isEmpty() and window.restoreGeometry(geometry)):
        window.resize(*DEFAULT_SIZE)
    for name, _area, shown in DEFAULT_LAYOUT:
        docks[name].setVisible(shown)
    kind: str | None = layout_kind(window.width())
    arrange(window, docks, kind or "wide")
    if isinstance(state, QByteArray) and window.restoreState(state, WINDOW_STATE_VERSION):
        saved = qs.value("arrangement")
        kind = saved if saved in SIDE_SHARE else None
    keep_on_screen(window, docks)
    return kind


def save_state(window: QMainWindow, kind: str | None = None) -> None:
    """Keep the window's geometry and dock layout, and whether it is the default arrangement ``kind`` (None: the
    user's own)."""
    qs = window_settings()
    qs.setValue("geometry", window.saveGeometry())
    qs.setValue("state", window.saveState(WINDOW_STATE_VERSION))
    qs.setValue("arrangement", kind or "")
    qs.sync()
