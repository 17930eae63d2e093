"""VideoView over a real H.264 recording: exact frames, no blocking decode, zoom/pan, overlay, action markers."""

from __future__ import annotations

import numpy as np
import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication

from gui_app.qt.frame_image import to_array, to_qimage
from gui_app.qt.video_view import VideoView, keyframe_for_frame, mask_grid
from tests.gui.viewer_fixtures import STEP_STARTS, half_masks, make_score, open_session
from tests.media import read_number


@pytest.fixture
def viewer(qtbot, tmp_path):
    session, source, traj = open_session(tmp_path)
    view = VideoView(session)
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitUntil(lambda: view.shown_frame == 0)
    yield session, view, traj
    session.set_trajectory(None)  # closes the source and stops its prefetch thread


def grab(view: VideoView) -> np.ndarray:
    return to_array(view.grab().toImage())


def painted_frame(view: VideoView) -> np.ndarray:
    """The part of the widget where the frame lies, as painted."""
    r = view.frame_rect_in_widget().toAlignedRect()
    return grab(view)[max(r.top(), 0): r.bottom(), max(r.left(), 0): r.right()]


def widget_point(view: VideoView, x: float, y: float) -> tuple[int, int]:
    p = view.view_transform().map(QPointF(x, y))
    return round(p.x()), round(p.y())


def test_shows_the_exact_frame_of_each_step(qtbot, viewer):
    session, view, _traj = viewer
    for k in (3, 1, 5, 2):
        want = STEP_STARTS[k]
        with qtbot.waitSignal(view.frame_shown, timeout=5000, check_params_cb=lambda i, w=want: i == w):
            session.set_step(k)
        assert view.shown_frame == want
        assert read_number(painted_frame(view)) == want


def test_step_starts_are_pinned_then_step_changes_need_no_decode(qtbot, tmp_path):
    # A source cache of two frames: the step starts can only come from the view's pinned copies.
    session, source, _traj = open_session(tmp_path, cache_bytes=2 * 320 * 240 * 3 + 1)
    view = VideoView(session)
    qtbot.addWidget(view)
    view.resize(400, 300)
    view.show()
    qtbot.waitUntil(lambda: view.pinned_frames == sorted(set(STEP_STARTS)), timeout=5000)
    assert view.pinned_bytes == len(STEP_STARTS) * 320 * 240 * 3 // 2  # held as I420: half of RGB
    for k in (4, 0, 5, 2):
        session.set_step(k)
        # Shown synchronously: the frame came from the pinned set, no decode and no event-loop turn.
        assert view.shown_frame == STEP_STARTS[k]
        assert not view.waiting
        assert read_number(painted_frame(view)) == STEP_STARTS[k]
    assert len(source.cached_indices()) <= 2
    session.set_trajectory(None)


def test_uncached_frame_decodes_in_background_and_keeps_previous_frame(qtbot, viewer):
    session, view, _traj = viewer
    source = session.source
    qtbot.waitUntil(lambda: source.prefetch_done(), timeout=5000)
    target = 28  # neither a step start nor near the playhead: not decoded yet
    assert source.cached(target) is None
    before = view.shown_frame
    with qtbot.waitSignal(view.frame_shown, timeout=5000, check_params_cb=lambda i: i == target):
        session.set_frame(target)
        # set_frame returned without decoding: the old frame is still the one held for display.
        assert view.shown_frame == before
        assert view.waiting
    assert read_number(painted_frame(view)) == target


def _wheel(view: VideoView, pos: QPointF, notches: float) -> None:
    ev = QWheelEvent(pos, view.mapToGlobal(pos), QPoint(0, 0), QPoint(0, int(120 * notches)),
                     Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(view, ev)


def _mouse(view: VideoView, kind, pos: QPointF, buttons) -> None:
    button = Qt.MouseButton.LeftButton if kind != QMouseEvent.Type.MouseMove else Qt.MouseButton.NoButton
    ev = QMouseEvent(kind, pos, view.mapToGlobal(pos), button, buttons, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(view, ev)


def test_wheel_zooms_about_the_cursor_drag_pans_double_click_fits(qtbot, viewer):
    _session, view, _traj = viewer
    fit = view.view_transform()
    anchor = QPointF(300, 100)
    under = fit.inverted()[0].map(anchor)
    with qtbot.waitSignal(view.view_changed):
        _wheel(view, anchor, 2)
    zoomed = view.view_transform()
    assert zoomed.m11() == pytest.approx(fit.m11() * 1.44)
    back = zoomed.map(under)  # the frame point under the cursor stayed under it
    assert (back.x(), back.y()) == pytest.approx((300, 100), abs=1e-6)

    _mouse(view, QMouseEvent.Type.MouseButtonPress, QPointF(200, 150), Qt.MouseButton.LeftButton)
    _mouse(view, QMouseEvent.Type.MouseMove, QPointF(170, 130), Qt.MouseButton.LeftButton)
    _mouse(view, QMouseEvent.Type.MouseButtonRelease, QPointF(170, 130), Qt.MouseButton.NoButton)
    panned = view.view_transform()
    assert panned.m11() == zoomed.m11()
    assert (panned.dx() - zoomed.dx(), panned.dy() - zoomed.dy()) == pytest.approx((-30, -20), abs=1e-6)

    _mouse(view, QMouseEvent.Type.MouseButtonDblClick, QPointF(170, 130), Qt.MouseButton.LeftButton)
    assert view.view_transform() == fit
    assert view.zoom == 1.0


def test_zoomed_view_paints_the_magnified_frame(qtbot, viewer):
    _session, view, _traj = viewer
    view.zoom_by(3.0)
    r = view.frame_rect_in_widget()
    assert r.width() > view.width() * 2  # the frame now overflows the widget: what is painted is magnified
    img = grab(view)
    x, y = widget_point(view, 160, 120)
    assert img[y, x].tolist() != [30, 30, 34]  # the frame, not the background, under the widget centre


def test_overlay_dims_dropped_tokens_and_toggles(qtbot, viewer):
    session, view, _traj = viewer
    session.set_step(4)  # a 'wait' step: no marker over the regions compared
    qtbot.waitUntil(lambda: view.shown_frame == STEP_STARTS[4])

    def region_means() -> tuple[float, float]:
        img = grab(view).astype(float)
        (lx0, ly0), (lx1, ly1) = widget_point(view, 20, 130), widget_point(view, 140, 230)
        (rx0, ry0), (rx1, ry1) = widget_point(view, 180, 130), widget_point(view, 300, 230)
        return img[ly0:ly1, lx0:lx1].mean(), img[ry0:ry1, rx0:rx1].mean()

    plain_left, plain_right = region_means()
    session.set_overlay(True)  # before scoring: no mask, and the view says why instead of doing nothing
    assert "not scored yet" in view.overlay_text
    assert region_means() == pytest.approx((plain_left, plain_right), rel=0.1)  # (the note's box aside) not dimmed
    session.set_overlay(False)
    # Keyframe 2 is the frame on screen at the end of step 3: frame 41, where step 4 starts.
    session.set_scores(make_score(p_success=0.3, step_scores=[0.1] * 6, masks=half_masks(3),
                                  keyframe_steps=[0, 2, 3]))
    assert region_means() == pytest.approx((plain_left, plain_right))  # scores alone change nothing: overlay off
    session.set_overlay(True)
    left, right = region_means()
    assert right < plain_right * 0.5  # dropped tokens (right half of the grid) dimmed
    assert abs(left - plain_left) < plain_left * 0.25  # kept tokens only tinted
    assert "frame 41 (keyframe 2, end of step 4)" in view.overlay_text
    # The next frame was not seen by the model: no mask drawn over it, and the view says where one is.
    session.set_frame(STEP_STARTS[4] + 1)
    qtbot.waitUntil(lambda: view.shown_frame == STEP_STARTS[4] + 1)
    plain_next = region_means()
    assert plain_next[1] > right * 1.5
    assert "No pruning mask for frame 42" in view.overlay_text
    session.set_overlay(False)
    session.set_frame(STEP_STARTS[4])
    qtbot.waitUntil(lambda: view.shown_frame == STEP_STARTS[4])
    assert region_means() == pytest.approx((plain_left, plain_right))


def _redness(img: np.ndarray, x: int, y: int, r: int = 2) -> float:
    win = img[y - r: y + r + 1, x - r: x + r + 1].astype(float)
    return float((win[..., 0] - win[..., 2]).max())


def test_click_marker_drawn_at_the_click_point(qtbot, viewer):
    session, view, traj = viewer
    for k in (0, 3):  # a pixel click and a normalised one
        session.set_step(k)
        qtbot.waitUntil(lambda k=k: view.shown_frame == STEP_STARTS[k])
        pt = view.action_point(traj.steps[k])
        if k == 3:
            assert (pt.x(), pt.y()) == (0.75 * 320, 0.5 * 240)
        x, y = widget_point(view, pt.x(), pt.y())
        img = grab(view)
        assert _redness(img, x, y - 12) > 100  # the ring, 12 px above the point
        assert _redness(img, x + 16, y) > 100  # the crosshair
        assert _redness(img, x + 60, y - 60) < 60  # and not everywhere


def test_drag_arrow_and_text_label(qtbot, viewer):
    session, view, traj = viewer
    session.set_step(2)  # drag to (250, 200) from the previous step's point (200, 150)
    qtbot.waitUntil(lambda: view.shown_frame == STEP_STARTS[2])
    img = grab(view)
    x, y = widget_point(view, 225, 175)  # the arrow's midpoint
    assert _redness(img, x, y) > 100
    session.set_step(1)  # typed text: a dark label box with light text near the point
    qtbot.waitUntil(lambda: view.shown_frame == STEP_STARTS[1])
    img = grab(view)
    x, y = widget_point(view, 200, 150)
    box = img[y + 16: y + 30, x + 16: x + 60].astype(float)
    assert box.max() > 200 and box.min() < 60


def test_keyframe_for_frame_and_flat_masks():
    assert keyframe_for_frame([7, 19, 33], 19) == 1
    assert keyframe_for_frame([7, 19, 33], 20) is None  # a frame the model did not see has no mask
    assert keyframe_for_frame([7, 19, 19], 19) == 2  # two steps ending on one frame: the later keyframe
    assert mask_grid(np.ones(48, bool), 320 / 240).shape == (6, 8)
    assert mask_grid(np.ones(48, bool), 1.0, grid=(4, 12)).shape == (4, 12)


def test_frame_image_wraps_without_copy():
    arr = np.zeros((4, 6, 3), np.uint8)
    arr[1, 2] = (10, 20, 30)
    img = to_qimage(arr)
    assert (img.width(), img.height()) == (6, 4)
    assert img.pixelColor(2, 1).getRgb()[:3] == (10, 20, 30)
    assert img.array is arr
    np.testing.assert_array_equal(to_array(img), arr)
