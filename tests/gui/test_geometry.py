"""The window on real screen sizes (issue 30): the video first, the transport bar whole, no text cut, and the focus
layout. A real library (the bundled desktop runs: 1280x720 recordings), a scored run open from a queue, the review
shown; each side panel is brought to the front in turn and every visible text is measured with its font
(:mod:`tests.gui.text_fit`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from gui_app.core.scoring.score import Score
from gui_app.qt.layout import SIDE_PANELS, layout_kind
from gui_app.qt.main_window import MainWindow
from tests.gui.text_fit import cut_texts
from tests.gui.library_fixtures import open_and_wait

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"
SIZES = [(1366, 768), (1920, 1080), (2560, 1440)]

pytestmark = pytest.mark.skipif(not (SAMPLES / "desktop").is_dir(), reason="needs the bundled desktop samples")


@pytest.fixture
def library(tmp_path) -> Path:
    root = tmp_path / "lib"
    shutil.copytree(SAMPLES / "desktop", root / "desktop", ignore=shutil.ignore_patterns(".rollscope"))
    shutil.copytree(SAMPLES / "miniwob" / "login-user-success", root / "login")
    return root


@pytest.fixture
def window(qtbot, library):
    """The app labelling a queue's first run (a desktop failure, scored), the review panel shown too."""
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    win.set_annotator("ada")
    open_and_wait(qtbot, win, library)
    catalog = win.session.library.catalog
    for row in catalog.query():
        if not row.error:  # a long verdict line in the timeline's header: it must wrap, not be cut
            catalog.set_score(row.key, Score(p_success=0.31, threshold=0.5, success=False, first_error_step=2,
                                             step_scores=[0.2] * (row.n_steps or 0), model="reward-model-v2:onnx",
                                             ood=0.12, warnings=["a screen size seen rarely in training"]))
    win.queue_failures()
    qtbot.waitUntil(lambda: win.queue.active and win.session.trajectory is not None and win.video.shown_frame >= 0
                    and not win.labelling.waiting, timeout=30_000)
    assert win.session.source is not None and win.session.source.width == 1280
    win.action_map["toggle_review"].setChecked(True)
    return win


def settle(qtbot, win: MainWindow, width: int, height: int) -> None:
    win.resize(width, height)
    qtbot.waitUntil(lambda: win.width() == width and win.layout_policy.kind == layout_kind(width)
                    and win.centralWidget().width() < width, timeout=5000)


def panels_in_front(qtbot, win: MainWindow):
    """Bring each shown side panel to the front in turn (some are tabs behind others), yielding its name."""
    for name in sorted(SIDE_PANELS):
        dock = win.docks[name]
        if dock.isHidden():
            continue
        dock.raise_()
        qtbot.waitUntil(lambda d=dock: not d.visibleRegion().isEmpty(), timeout=5000)
        for _ in range(3):  # the tab's resize posts layout requests (scroll bars, wrapped labels): let them run
            QApplication.processEvents()
        yield name


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_the_video_comes_first_and_no_text_is_cut(qtbot, window, size):
    width, height = size
    settle(qtbot, window, width, height)
    video, transport = window.video, window.transport
    # Issue 30 at 1366x768: a 470-pixel viewer, a 55-pixel scrubber, counters cut off.
    qtbot.waitUntil(lambda: video.width() >= 0.6 * width, timeout=5000)
    assert transport.scrubber.width() >= 300
    assert transport.frame_label.text().startswith("frame ") and "step 1/" in transport.frame_label.text()
    cut = {name: cut_texts(window) for name in panels_in_front(qtbot, window)}
    assert set(cut) == {"library", "queue", "labels", "review"}
    assert all(not c for c in cut.values()), cut
    # The review has the labels' whole column (a tab), not a strip under them.
    window.docks["review"].raise_()
    qtbot.waitUntil(lambda: not window.docks["review"].visibleRegion().isEmpty(), timeout=5000)
    assert window.docks["review"].height() >= window.docks["timeline"].height()


def test_at_1366_the_side_panels_are_tabs_of_one_column(qtbot, window):
    settle(qtbot, window, 1366, 768)
    labels = window.docks["labels"]
    assert {d.objectName() for d in window.tabifiedDockWidgets(labels)} == {"dock_library", "dock_queue",
                                                                            "dock_review"}
    settle(qtbot, window, 1920, 1080)  # wider: the library and the queue move to the left, the labels stay right
    assert window.dockWidgetArea(window.docks["library"]) == Qt.DockWidgetArea.LeftDockWidgetArea
    assert window.dockWidgetArea(labels) == Qt.DockWidgetArea.RightDockWidgetArea
    assert [d.objectName() for d in window.tabifiedDockWidgets(labels)] == ["dock_review"]


def test_the_focus_layout_is_one_key_and_labels_keep_working(qtbot, window):
    settle(qtbot, window, 1366, 768)
    before = {name: not dock.isHidden() for name, dock in window.docks.items()}
    handle = window.windowHandle()
    window.activateWindow()
    qtbot.waitActive(window)
    window.library.table.setFocus()
    qtbot.keyClick(handle, Qt.Key.Key_F11)
    assert window.layout_policy.focus and window.action_map["focus_layout"].isChecked()
    qtbot.waitUntil(lambda: window.label_bar.isVisible(), timeout=5000)
    shown = [name for name, dock in window.docks.items() if not dock.isHidden()]
    assert shown == ["timeline"]
    qtbot.waitUntil(lambda: window.video.width() >= 0.95 * 1366, timeout=5000)
    assert window.label_bar.height() <= 2 * window.label_bar.fontMetrics().height() + 12  # one line
    assert window.mode_indicator.mode == "labelling"  # the bar is a view of the labelling: keys still label
    qtbot.keyClick(handle, Qt.Key.Key_F)
    qtbot.waitUntil(lambda: window.labelling.pending_writes == 0 and "verdict: failure" in window.label_bar.text(),
                    timeout=10_000)
    assert window.session.library.store.get(window.labelling.trajectory_id, "ada").verdict == "failure"
    assert cut_texts(window) == []
    qtbot.keyClick(handle, Qt.Key.Key_F11)
    assert not window.layout_policy.focus and not window.label_bar.isVisible()
    assert {name: not dock.isHidden() for name, dock in window.docks.items()} == before
