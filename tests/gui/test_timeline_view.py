"""TimelineView: step lines, playhead follows and seeks (drag, click), score curves, marks, x-only wheel zoom."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg
import pytest
from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QMouseEvent, QWheelEvent
from PySide6.QtWidgets import QApplication

from gui_app.qt.timeline_view import TimelineView
from tests.gui.viewer_fixtures import FPS, STEP_STARTS, half_masks, make_score, open_session


@pytest.fixture
def timeline(qtbot, tmp_path):
    session, source, traj = open_session(tmp_path)
    view = TimelineView(session)
    qtbot.addWidget(view)
    view.resize(600, 160)
    view.show()
    qtbot.waitExposed(view)
    yield session, view, traj
    session.set_trajectory(None)


def to_pixel(view: TimelineView, x: float, y: float) -> QPointF:
    """A view (data) point as a position in the plot widget's viewport."""
    scene = view.vb.mapViewToScene(QPointF(x, y))
    return QPointF(view.plot_widget.mapFromScene(scene))


def mouse(view: TimelineView, kind, pos: QPointF, button, buttons) -> None:
    vp = view.plot_widget.viewport()
    ev = QMouseEvent(kind, pos, vp.mapToGlobal(pos), button, buttons, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(vp, ev)


def test_step_lines_and_current_step(timeline):
    session, view, traj = timeline
    starts = [f / FPS for f in STEP_STARTS]
    assert view.step_boundaries() == pytest.approx(starts)
    xs, ys = view.boundaries.getData()
    assert len(xs) == 2 * len(traj.steps)  # one vertical segment per step
    assert sorted(set(np.round(xs, 6))) == pytest.approx(starts)
    session.set_step(2)
    assert view.step_region.isVisible()
    assert view.step_region.getRegion() == pytest.approx((STEP_STARTS[2] / FPS, STEP_STARTS[3] / FPS))
    assert view.playhead.value() == pytest.approx(STEP_STARTS[2] / FPS)
    session.set_frame(45)
    assert view.playhead.value() == pytest.approx(4.5)


def test_click_seeks(qtbot, timeline):
    session, view, _traj = timeline
    pos = to_pixel(view, 3.52, 0.5)
    with qtbot.waitSignal(session.frame_changed, timeout=3000):
        mouse(view, QMouseEvent.Type.MouseButtonPress, pos, Qt.MouseButton.LeftButton, Qt.MouseButton.LeftButton)
        mouse(view, QMouseEvent.Type.MouseButtonRelease, pos, Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton)
    x_clicked = view.vb.mapSceneToView(view.plot_widget.mapToScene(pos.toPoint())).x()
    assert session.frame == session.source.index_at(x_clicked)
    assert session.frame in (34, 35, 36)
    assert session.step == 3  # frame 35 lies in the span of the step starting at 33


@pytest.fixture
def every_mouse_move():
    """pyqtgraph drops mouse moves closer than 1/100 s; synthetic moves come faster than that."""
    old = pg.getConfigOption("mouseRateLimit")
    pg.setConfigOption("mouseRateLimit", 0)
    yield
    pg.setConfigOption("mouseRateLimit", old)


def test_dragging_the_playhead_seeks(qtbot, timeline, every_mouse_move):
    session, view, _traj = timeline
    session.set_frame(10)
    start = to_pixel(view, 1.0, 0.5)
    end = to_pixel(view, 4.9, 0.5)
    mouse(view, QMouseEvent.Type.MouseButtonPress, start, Qt.MouseButton.LeftButton, Qt.MouseButton.LeftButton)
    seen = []
    session.frame_changed.connect(seen.append)
    for t in np.linspace(0, 1, 8)[1:]:
        p = QPointF(start.x() + t * (end.x() - start.x()), start.y())
        mouse(view, QMouseEvent.Type.MouseMove, p, Qt.MouseButton.NoButton, Qt.MouseButton.LeftButton)
    mouse(view, QMouseEvent.Type.MouseButtonRelease, end, Qt.MouseButton.LeftButton, Qt.MouseButton.NoButton)
    assert len(seen) >= 3  # the session followed the line while it moved
    assert seen == sorted(seen)
    assert session.frame == pytest.approx(49, abs=1)
    assert session.step == 4
    assert view.playhead.value() == pytest.approx(session.source.time_of(session.frame), abs=0.11)


def test_score_curves_appear_with_scores(timeline):
    session, view, traj = timeline
    assert view.score_curve.getData()[1] is None
    assert not view.p_success_line.isVisible()
    step_scores = [0.05, 0.1, 0.7, 0.9, 0.2, 0.1]
    masks = half_masks(4)
    session.set_scores(make_score(p_success=0.35, step_scores=step_scores, masks=masks, keyframe_steps=[0, 2, 2, 5]))
    xs, ys = view.score_curve.getData()
    assert list(ys) == pytest.approx(step_scores)
    assert len(xs) == len(step_scores) + 1  # step mode: one value per step span
    assert view.p_success_line.isVisible() and view.p_success_line.value() == pytest.approx(0.35)
    tx, ty = view.tokens_curve.getData()
    assert list(ty) == pytest.approx([m.mean() for m in masks])  # kept fraction per keyframe
    s2, s3 = STEP_STARTS[2] / FPS, STEP_STARTS[3] / FPS
    assert s2 < tx[1] < tx[2] < s3  # two keyframes in step 2 share its span
    session.set_scores(None)
    assert not view.p_success_line.isVisible()
    assert view.tokens_curve.getData()[1] is None


def test_marks(timeline):
    _session, view, _traj = timeline
    view.set_step_marks({1: "wrong element", 4: "ok", 99: "out of range"})
    pts = view.marks.points()
    assert len(pts) == 2
    assert [p.data() for p in pts] == ["step 2: wrong element", "step 5: ok"]  # indices 1 and 4, read from 1
    mid1 = (STEP_STARTS[1] + STEP_STARTS[2]) / 2 / FPS
    assert pts[0].pos().x() == pytest.approx(mid1)


def test_wheel_zooms_time_only(qtbot, timeline):
    _session, view, _traj = timeline
    (x0, x1), (y0, y1) = view.vb.viewRange()
    pos = to_pixel(view, 3.0, 0.5)
    vp = view.plot_widget.viewport()
    ev = QWheelEvent(pos, vp.mapToGlobal(pos), QPoint(0, 0), QPoint(0, 360), Qt.MouseButton.NoButton,
                     Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(vp, ev)
    (nx0, nx1), (ny0, ny1) = view.vb.viewRange()
    assert nx1 - nx0 < (x1 - x0) * 0.8
    assert (ny0, ny1) == pytest.approx((y0, y1))


def test_text_only_trajectory_uses_step_index(qtbot, timeline):
    session, view, traj = timeline
    session.set_trajectory(type(traj)(id="text", steps=traj.steps[:4]), None)
    assert not view.uses_time
    assert view.step_boundaries() == [0.0, 1.0, 2.0, 3.0]
    view.seek(2.6)
    assert session.step == 2
    assert view.playhead.value() == pytest.approx(2.0)


def test_recording_without_steps_spans_the_video_and_seeks(qtbot, timeline):
    session, view, traj = timeline
    source = session.source
    session.set_trajectory(type(traj)(id="plain", steps=[]), source)
    assert view.uses_time and view.step_boundaries() == []
    assert view.vb.viewRange()[0] == pytest.approx((0.0, source.duration))
    view.seek(2.34)
    assert session.frame == 23
    assert view.playhead.value() == pytest.approx(2.3)


def test_scores_are_legible_verdict_threshold_disagreement_and_first_deviation(timeline):
    from gui_app.core.scoring.score import Score

    session, view, traj = timeline
    traj.outcome.success = False  # the environment says failure
    session.set_scores(Score(p_success=0.64, threshold=0.57, success=True, first_error_step=None,
                             step_scores=[0.1] * 6, model="m"))
    text = view.summary.text()
    assert "SUCCESS" in text and "0.64" in text and "&ge; threshold 0.57" in text
    assert "≥ its threshold 0.57" in view.summary.toolTip()
    assert "⚠ model and environment disagree" in text and "environment: <b>failure</b>" in text
    assert view.threshold_line.isVisible() and view.threshold_line.value() == pytest.approx(0.57)
    assert view.p_success_line.value() == pytest.approx(0.64)
    assert view.p_success_line.label.format.endswith("→ success")
    assert not view.first_dev_line.isVisible()
    assert "p(first deviation)" in view.legend.text() and "model threshold" in view.legend.text()
    # A predicted failure: its first deviating step is marked where that step lies.
    session.set_scores(Score(p_success=0.2, threshold=0.57, success=False, first_error_step=3, ood=0.4,
                             step_scores=[0.1, 0.1, 0.1, 0.6, 0.05, 0.05], model="m"))
    assert "ood 0.40" in view.summary.text()  # the model v2 measure, shown when it is there
    assert "FAILURE" in view.summary.text() and "first deviation predicted at <b>step 4</b>" in view.summary.text()
    assert "&lt; threshold 0.57" in view.summary.text() and "environment: <b>failure</b>" in view.summary.text()
    assert "disagree" not in view.summary.text()
    x0, x1 = STEP_STARTS[3] / FPS, STEP_STARTS[4] / FPS
    assert view.first_dev_line.isVisible() and view.first_dev_line.value() == pytest.approx((x0 + x1) / 2)
    hover = view.hover_text((x0 + x1) / 2)
    assert hover.startswith("step 4") and "p(first deviation) 0.60" in hover and "predicted first deviation" in hover
    # What placed the step, in the judge's words, escaped (a typed "<b>" stays text) and in the tooltip too.
    why = 'First deviation at step 4, from the log: typed "Oaula <b>" where the instruction names "Paula".'
    session.set_scores(Score(p_success=0.2, threshold=0.57, success=False, first_error_step=3, rationale=why,
                             step_scores=[0.1, 0.1, 0.1, 0.6, 0.05, 0.05], model="m"))
    assert "typed &quot;Oaula &lt;b&gt;&quot; where the instruction names" in view.summary.text()
    assert why in view.summary.toolTip()


def test_an_unknown_score_never_reads_as_a_confident_probability(timeline):
    from gui_app.core.scoring.score import Score

    session, view, _traj = timeline
    session.set_scores(Score(p_success=0.0, threshold=0.57, success=False, first_error_step=2, ood=1.8,
                             unknown=True, step_scores=[0.0] * 6, model="v2"))
    text = view.summary.text()
    assert "UNKNOWN" in text and "is not a verdict" in text and "ood 1.80" in text
    assert "FAILURE" not in text and "disagree" not in text
    assert view.p_success_line.pen.style() == Qt.PenStyle.DotLine
    assert view.p_success_line.label.format.endswith("→ unknown")
    assert not view.first_dev_line.isVisible()  # no deviation claimed for a run the model cannot judge
    session.set_scores(None)
    assert "Not scored" in view.summary.text() and not view.threshold_line.isVisible()


def test_the_first_deviation_label_stays_inside_the_plot(qtbot, timeline):
    """Issue 30: a first deviation predicted on the last step had its words run off the plot ("first deviation?
    step"); they now sit on the side of the line with room."""
    from gui_app.core.scoring.score import Score

    session, view, _traj = timeline
    last = len(STEP_STARTS) - 1
    for step in (0, last):
        session.set_scores(Score(p_success=0.2, threshold=0.5, success=False, first_error_step=step,
                                 step_scores=[0.1] * len(STEP_STARTS), model="m"))
        label = view.first_dev_line.label
        assert label.toPlainText() == f"first deviation? step {step + 1}"
        def pixels(lb=label):  # the plot and the words in scene pixels (the words ignore the plot's scaling)
            br = lb.boundingRect()
            return view.vb.sceneBoundingRect(), QRectF(lb.scenePos() + br.topLeft(), br.size())

        def placed() -> bool:  # beside its line, once repositioned
            x = view.vb.mapViewToScene(QPointF(view.first_dev_line.value(), 0)).x()
            _plot, words = pixels()
            return min(abs(words.left() - x), abs(words.right() - x)) < 3

        qtbot.waitUntil(placed, timeout=3000)
        plot, words = pixels()
        assert plot.left() <= words.left() and words.right() <= plot.right() + 1, (plot, words)  # ... and whole
