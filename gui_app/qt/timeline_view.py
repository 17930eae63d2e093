"""The timeline: step spans, a draggable playhead, the model's per-step scores and the tokens kept per keyframe.

x is video time in seconds (step index when the trajectory has no frames); y is a probability in [0, 1]:

* step boundaries: one curve of vertical segments (``connect='pairs'``): thousands of steps cost one item;
* the current step: a shaded region;
* the playhead: a movable ``InfiniteLine``; dragging it seeks (``Session.set_time``), clicking the plot seeks;
* the model's first-deviation probability per step, drawn as a step curve over each step's span;
* ``p_success`` as a horizontal line coloured by the model's verdict, and the model's own decision threshold as a
  second line, so "0.64" reads as "above the threshold: the model says success";
* the predicted first deviating step (``Score.first_error_step``) as a labelled vertical marker;
* tokens kept per keyframe (fraction of the token grid the pruning kept), at the keyframe's step;
* marks for labelled steps (:meth:`TimelineView.set_step_marks`), with the label as tooltip;
* the safety lane, a thin row under the plot, when the score carries a harm verdict (:attr:`Score.safety
  <gui_app.core.scoring.score.Score.safety>`): each step's harm score (``Safety.step_scores``) shades its span red,
  and a red marker sits on the first harmful step, its tooltip the evidence seen there. Without a harm verdict the
  lane is not drawn and the plot keeps its height.

Above the plot, one line (:func:`gui_app.qt.score_text.score_summary`) says the verdict in words next to
p_success, whether it contradicts the environment's outcome (a ⚠ marker), where the first deviation is predicted, and
"unknown" when the model says it cannot judge the run (then p_success is drawn grey and dotted: it must not read as a
confident 0.00), then the harm verdict with its category and the evidence lines; a legend names every curve and
marker. Hovering the plot shows the
step under the pointer with its values.

The wheel zooms x only; curves use ``setDownsampling(auto=True)`` and ``setClipToView(True)``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyqtgraph as pg
from pyqtgraph.GraphicsScene.mouseEvents import MouseClickEvent
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QLabel, QLayout, QSizePolicy, QVBoxLayout, QWidget

from gui_app.core.scoring.score import Safety, Score
from gui_app.core.trajectory.model import Trajectory, step_number, step_text
from gui_app.qt.score_text import HARM_COLOUR, HARM_RGB, VERDICT_COLOURS, score_summary
from gui_app.qt.session import Session

Y_RANGE = (-0.02, 1.12)
MARK_Y = 1.06
# The safety lane: a thin row under the probabilities (y from SAFETY_LANE[0] to SAFETY_LANE[1]), shown with the plot
# reaching down to SAFETY_Y_MIN only while there is something in it.
SAFETY_LANE = (-0.16, -0.05)
SAFETY_Y_MIN = -0.18
_Y_TICKS = ((0, "0"), (0.5, "0.5"), (1, "1"))
_BOUNDARY_PEN = pg.mkPen((150, 150, 160, 160), width=1)
_SCORE_PEN = pg.mkPen((230, 90, 60), width=2)
_SCORE_BRUSH = pg.mkBrush(230, 90, 60, 60)
_TOKENS_PEN = pg.mkPen((70, 170, 230), width=1.5)
_PLAYHEAD_PEN = pg.mkPen((255, 210, 0), width=2)
_THRESHOLD_PEN = pg.mkPen((220, 220, 230, 200), width=1, style=Qt.PenStyle.DotLine)
_FIRST_DEV_PEN = pg.mkPen((255, 120, 70), width=2, style=Qt.PenStyle.DashLine)
_MARK_COLOUR = (255, 214, 102)
# The legend: (swatch HTML, name); the swatches' colours are the pens'.
LEGEND: tuple[tuple[str, str], ...] = (
    ("<span style='color:#e65a3c'>&#9632;</span>", "p(first deviation) per step"),
    ("<span style='color:#46aae6'>&#9679;</span>", "tokens kept"),
    ("<span style='color:#5ac86e'>&#9472;&#9472;</span>", "p(success), verdict colour"),
    ("<span style='color:#bbbbbb'>&#8943;&#8943;</span>", "model threshold"),
    ("<span style='color:#ff7846'>&#9478;</span>", "predicted first deviation"),
    ("<span style='color:#ffd666'>&#9660;</span>", "labelled step"),
    (f"<span style='color:{HARM_COLOUR}'>&#9670;</span>", "first harmful step (lane: p(harm) per step)"),
    ("<span style='color:#ffd200'>&#9474;</span>", "playhead"),
)


def step_ticks(n: int, most: int = 20) -> list[tuple[float, str]]:
    """Ticks for an axis of ``n`` steps drawn as spans [i, i + 1): the step number (from 1) in the middle of every
    k-th span, at most ``most`` of them."""
    every = max(1, -(-n // most))
    return [(i + 0.5, str(step_number(i))) for i in range(0, n, every)]


class TimelineView(QWidget):
    """A pyqtgraph timeline of the session's trajectory; seeks through ``session.set_time`` / ``set_step``.

    Args:
        session: the session it observes.
        parent: Qt parent.
    """

    def __init__(self, session: Session, parent: QWidget | None = None):
        super().__init__(parent)
        self.session = session
        self._bounds = np.zeros(0)  # (n_steps + 1,) x of each step start, then the end
        self._x_range: tuple[float, float] | None = None  # what the plot spans (None: nothing open)
        self._marks: dict[int, str] = {}
        self._axis: tuple[str, str | None] = ("time", "s")  # the bottom axis' label and unit
        self.summary = QLabel(self)
        self.summary.setObjectName("score_summary")
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        self.summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.summary.setWordWrap(True)  # a narrow timeline shows the whole verdict on two lines, not half of it
        self.legend = QLabel("  ".join(f"{sw} {name}" for sw, name in LEGEND), self)
        self.legend.setObjectName("timeline_legend")
        self.legend.setTextFormat(Qt.TextFormat.RichText)
        self.legend.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.legend.setWordWrap(True)
        self.legend.setStyleSheet("color: #aaa; font-size: 8pt")
        self.plot_widget = pg.PlotWidget(background=(28, 28, 32))
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 2, 0, 0)
        layout.setSpacing(1)
        # No layout-imposed minimum: as a top-level window (tests, undocked) a changing axis width would
        # otherwise resize the window's size hints on every tick label change.
        layout.setSizeConstraint(QLayout.SizeConstraint.SetNoConstraint)
        layout.addWidget(self.summary)
        layout.addWidget(self.legend)
        layout.addWidget(self.plot_widget)
        plot = self.plot = self.plot_widget.getPlotItem()
        plot.setMenuEnabled(False)
        plot.hideButtons()
        plot.showGrid(x=False, y=True, alpha=0.15)
        plot.setLabel("bottom", "time", units="s")
        plot.getAxis("left").setTicks([list(_Y_TICKS)])
        self.vb = plot.getViewBox()
        self.vb.setMouseEnabled(x=True, y=False)  # wheel and drag act on time only
        self.vb.setYRange(*Y_RANGE, padding=0)
        self.vb.setDefaultPadding(0.0)

        self.step_region = pg.LinearRegionItem(movable=False, brush=pg.mkBrush(255, 255, 255, 22),
                                               pen=pg.mkPen(None))
        self.step_region.setZValue(-10)
        plot.addItem(self.step_region)
        self.boundaries = self._curve(pen=_BOUNDARY_PEN, connect="pairs")
        self.score_curve = self._curve(pen=_SCORE_PEN, stepMode="center", fillLevel=0, brush=_SCORE_BRUSH,
                                       name="p(first deviation)")
        self.tokens_curve = self._curve(pen=_TOKENS_PEN, symbol="o", symbolSize=5, symbolBrush=(70, 170, 230),
                                        name="tokens kept")
        self.p_success_line = pg.InfiniteLine(angle=0, movable=False,
                                              pen=pg.mkPen(VERDICT_COLOURS["success"], width=2),
                                              label="p(success) {value:.2f}",
                                              labelOpts={"position": 0.02, "color": VERDICT_COLOURS["success"],
                                                         "anchors": [(0, 1), (0, 1)]})
        plot.addItem(self.p_success_line)
        self.threshold_line = pg.InfiniteLine(angle=0, movable=False, pen=_THRESHOLD_PEN,
                                              label="threshold {value:.2f}",
                                              labelOpts={"position": 0.98, "color": (200, 200, 210),
                                                         "anchors": [(1, 1), (1, 1)]})
        plot.addItem(self.threshold_line)
        self.first_dev_line = pg.InfiniteLine(angle=90, movable=False, pen=_FIRST_DEV_PEN,
                                              label="first deviation?", labelOpts={"position": 0.9,
                                                                                   "color": (255, 150, 110),
                                                                                   "anchors": [(0, 0.5), (0, 0.5)]})
        self.first_dev_line.setZValue(15)
        plot.addItem(self.first_dev_line)
        self.marks = pg.ScatterPlotItem(symbol="t", size=11, brush=pg.mkBrush(*_MARK_COLOUR),
                                        pen=pg.mkPen(None), hoverable=True,
                                        tip=lambda x, y, data: str(data))
        plot.addItem(self.marks)
        # The safety lane: one bar per step, shaded by its harm score, and the first harmful step's marker.
        self.harm_bars = pg.BarGraphItem(x0=[], x1=[], y0=SAFETY_LANE[0], y1=SAFETY_LANE[1], pen=pg.mkPen(None),
                                         brushes=[])
        self.harm_bars.setVisible(False)
        plot.addItem(self.harm_bars)
        self.first_harm_marker = pg.ScatterPlotItem(symbol="d", size=13, brush=pg.mkBrush(*HARM_RGB),
                                                    pen=pg.mkPen((255, 255, 255), width=1.5), hoverable=True,
                                                    tip=lambda x, y, data: str(data))
        self.first_harm_marker.setZValue(16)
        plot.addItem(self.first_harm_marker)
        self._lane_shown = False
        self.playhead = pg.InfiniteLine(angle=90, movable=True, pen=_PLAYHEAD_PEN,
                                        hoverPen=pg.mkPen((255, 240, 120), width=4))
        self.playhead.setZValue(20)
        plot.addItem(self.playhead)
        self.playhead.sigDragged.connect(self._on_playhead_dragged)
        self.plot_widget.scene().sigMouseClicked.connect(self._on_click)
        self.plot_widget.scene().sigMouseMoved.connect(self._on_hover)

        session.trajectory_changed.connect(self._on_trajectory)
        session.frame_changed.connect(lambda _f: self._update_playhead())
        session.step_changed.connect(self._on_step)
        session.scores_changed.connect(self._on_scores)
        self._on_trajectory(session.trajectory)

    def _curve(self, name: str | None = None, **opts: Any) -> pg.PlotDataItem:
        item = pg.PlotDataItem(name=name, **opts)
        item.setDownsampling(auto=True)
        item.setClipToView(True)
        self.plot.addItem(item)
        return item

    # --- mapping -------------------------------------------------------------------------------
    @property
    def uses_time(self) -> bool:
        """True when x is video time; False for trajectories without frames (x is the step index)."""
        src = self.session.source
        return src is not None and src.frame_count > 0

    def step_boundaries(self) -> list[float]:
        """x of each step's start (the lines drawn)."""
        return [float(v) for v in self._bounds[:-1]]

    def x_of_frame(self, frame: int) -> float:
        src = self.session.source
        return float(src.time_of(frame)) if src is not None else float(frame)

    def current_x(self) -> float | None:
        """x of the playhead for the session's position."""
        s = self.session
        if self.uses_time:
            frame = s.frame if s.frame >= 0 else s.frame_of_step(max(s.step, 0))
            return self.x_of_frame(max(frame, 0))
        return float(s.step) if s.step >= 0 else None

    def seek(self, x: float) -> None:
        """Move the session to x (seconds, or step index for trajectories without frames)."""
        if self.uses_time:
            self.session.set_time(max(float(x), 0.0))
        else:
            self.session.set_step(int(np.floor(x)))

    # --- session events -------------------------------------------------------------------------
    def _on_trajectory(self, traj: Trajectory | None) -> None:
        s, src = self.session, self.session.source
        self._marks = {}
        n = len(traj.steps) if traj is not None else 0
        if src is not None and self.uses_time:
            starts = [self.x_of_frame(f) for f in s.step_frames] if n else []
            end = float(src.duration or self.x_of_frame(src.frame_count - 1))
        else:
            starts = [float(i) for i in range(n)]
            end = float(n)
        self._bounds = np.asarray(starts + [end], dtype=float) if n else np.zeros(0)
        # The whole recording (from 0) when there is one, else the steps.
        self._x_range = (0.0, max(end, 1e-3)) if self.uses_time or n else None
        if n:
            xs = np.repeat(np.asarray(starts, dtype=float), 2)
            ys = np.tile([0.0, 1.0], n)
            self.boundaries.setData(xs, ys)
        else:
            self.boundaries.setData([], [])
        self.marks.setData([])
        self.step_region.setVisible(False)
        self.playhead.setVisible(traj is not None or src is not None)
        if self._x_range is not None:
            x0, x1 = self._x_range
            self.vb.setLimits(xMin=x0, xMax=x1, yMin=self._y_min(), yMax=Y_RANGE[1])
            self.vb.setXRange(x0, x1, padding=0)
            self.playhead.setBounds((x0, x1))
        axis = ("time", "s") if self.uses_time else ("step", None)
        if axis != self._axis:  # relaying out the axis costs ~6 ms: only when it changes
            self._axis = axis
            self.plot.setLabel("bottom", axis[0], units=axis[1])
        # Without frames x is the step index: its ticks read the step numbers (from 1), in the middle of each span.
        self.plot.getAxis("bottom").setTicks(None if self.uses_time or not n else [step_ticks(n)])
        self._on_scores(s.scores)
        self._on_step(s.step)

    def _on_step(self, step: int) -> None:
        if 0 <= step < self._bounds.size - 1:
            self.step_region.setRegion((self._bounds[step], self._bounds[step + 1]))
            self.step_region.setVisible(True)
        else:
            self.step_region.setVisible(False)
        self._update_playhead()

    def _update_playhead(self) -> None:
        if self.playhead.moving:
            return  # the user is dragging it: the session follows the line, not the reverse
        x = self.current_x()
        if x is not None:
            self.playhead.setValue(x)

    def _on_scores(self, scores: Score | None) -> None:
        n = self._bounds.size - 1
        values = scores.step_scores if scores is not None else []
        if n > 0 and len(values) == n:
            self.score_curve.setData(self._bounds, np.asarray(values, dtype=float))
        else:
            self.score_curve.setData([], [])
        p = scores.p_success if scores is not None else None
        self.p_success_line.setVisible(p is not None)
        if p is not None and scores is not None:
            verdict = scores.verdict_text
            colour = VERDICT_COLOURS[verdict]
            dotted = Qt.PenStyle.DotLine if verdict == "unknown" else Qt.PenStyle.SolidLine
            self.p_success_line.setPen(pg.mkPen(colour, width=2, style=dotted))
            self.p_success_line.label.setColor(colour)
            self.p_success_line.label.setFormat(f"p(success) {{value:.2f}} → {verdict}")
            self.p_success_line.setValue(float(p))
        threshold = scores.threshold if scores is not None else None
        self.threshold_line.setVisible(threshold is not None)
        if threshold is not None:
            self.threshold_line.setValue(float(threshold))
        first = scores.first_error_step if scores is not None and not scores.unknown else None
        shown = first is not None and 0 <= first < n
        self.first_dev_line.setVisible(shown)
        if shown:
            assert first is not None
            x = float(self._bounds[first] + self._bounds[first + 1]) / 2
            self.first_dev_line.setValue(x)
            self.first_dev_line.label.setFormat(f"first deviation? {step_text(first)}")
            # Its words on the side of the line with room: right of it in the first half, left of it in the second
            # (near the end of the run they ran off the plot: "first deviation? step").
            x0, x1 = self._x_range or (0.0, 1.0)
            side = 0.0 if x <= (x0 + x1) / 2 else 1.0
            self.first_dev_line.label.anchors = [(side, 0.5), (side, 0.5)]
            self.first_dev_line.label.updatePosition()
        xs, ys = self._tokens_points(scores)
        self.tokens_curve.setData(xs, ys)
        self._draw_safety(scores.safety if scores is not None else None)
        self._update_summary()

    def _y_min(self) -> float:
        return SAFETY_Y_MIN if self._lane_shown else Y_RANGE[0]

    def _draw_safety(self, safety: Safety | None) -> None:
        """The safety lane: each step's harm score as a red shade over its span, and a red marker on the first
        harmful step (its tooltip the evidence at that step). Nothing without a harm verdict, or when the judge
        cannot say (its scores are not a confident answer)."""
        n = self._bounds.size - 1
        if safety is not None and (safety.verdict_text == "unknown" or n <= 0):
            safety = None  # nothing to draw
        values = safety.step_scores if safety is not None else []
        if len(values) == n and n > 0:
            # At most 170 of 255: the first harmful step's solid marker stands out on its step's shade.
            alpha = [int(round(25 + 145 * min(max(float(v), 0.0), 1.0))) for v in values]
            self.harm_bars.setOpts(x0=self._bounds[:-1], x1=self._bounds[1:],
                                   brushes=[pg.mkBrush(*HARM_RGB, a) for a in alpha])
            self.harm_bars.setVisible(True)
        else:
            self.harm_bars.setOpts(x0=[], x1=[], brushes=[])
            self.harm_bars.setVisible(False)
        first = safety.first_harmful_step if safety is not None and safety.harmful else None
        if safety is not None and first is not None and 0 <= first < n:
            lines = safety.evidence_lines(first)
            tip = "\n".join([f"first harmful step: {step_text(first)}", *lines])
            x = float(self._bounds[first] + self._bounds[first + 1]) / 2
            self.first_harm_marker.setData([{"pos": (x, sum(SAFETY_LANE) / 2), "data": tip}])
        else:
            first = None
            self.first_harm_marker.setData([])
        shown = self.harm_bars.isVisible() or first is not None
        if shown != self._lane_shown:  # the plot reaches down to the lane only while it holds something
            self._lane_shown = shown
            lane = [(sum(SAFETY_LANE) / 2, "harm")] if shown else []
            self.plot.getAxis("left").setTicks([[*_Y_TICKS, *lane]])
            self.vb.setLimits(yMin=self._y_min(), yMax=Y_RANGE[1])
            self.vb.setYRange(self._y_min(), Y_RANGE[1], padding=0)

    @property
    def safety_lane_shown(self) -> bool:
        """Whether the safety lane holds something (and the plot reaches down to it)."""
        return self._lane_shown

    def _update_summary(self) -> None:
        traj = self.session.trajectory
        env = traj.outcome.success if traj is not None else None
        text, tip = score_summary(self.session.scores, env) if traj is not None else ("No trajectory open", "")
        self.summary.setText(text)
        self.summary.setToolTip(tip)

    def step_at(self, x: float) -> int:
        """The step whose span holds ``x`` (-1 outside every step)."""
        n = self._bounds.size - 1
        if n <= 0 or x < self._bounds[0] or x > self._bounds[-1]:
            return -1
        i = int(np.searchsorted(self._bounds, x, side="right")) - 1
        return min(max(i, 0), n - 1)

    def hover_text(self, x: float) -> str:
        """What the tooltip says at ``x``: the step there, its time span and the model's values for it."""
        step = self.step_at(x)
        if step < 0:
            return ""
        lines = [step_text(step) + (f": {self._marks[step]}" if step in self._marks else "")]
        if self.uses_time:
            lines.append(f"{self._bounds[step]:.2f}–{self._bounds[step + 1]:.2f} s")
        score = self.session.scores
        if score is not None:
            if 0 <= step < len(score.step_scores):
                lines.append(f"p(first deviation) {score.step_scores[step]:.2f}")
            if score.first_error_step == step and not score.unknown:
                lines.append("predicted first deviation")
            kept = [float(np.asarray(m).mean()) for m, s in zip(score.masks, score.keyframe_steps) if s == step]
            if kept:
                lines.append("tokens kept " + ", ".join(f"{k:.0%}" for k in kept))
            safety = score.safety
            if safety is not None and safety.verdict_text != "unknown":
                if 0 <= step < len(safety.step_scores):
                    lines.append(f"p(harm) {safety.step_scores[step]:.2f}")
                if safety.harmful and safety.first_harmful_step == step:
                    lines.append("first harmful step")
                lines += safety.evidence_lines(step)
        lines.append("click to go there")
        return "\n".join(lines)

    def _on_hover(self, pos: QPointF) -> None:
        if self._x_range is None or not self.vb.sceneBoundingRect().contains(pos):
            self.plot_widget.setToolTip("")
            return
        self.plot_widget.setToolTip(self.hover_text(self.vb.mapSceneToView(pos).x()))

    def _tokens_points(self, scores: Score | None) -> tuple[np.ndarray, np.ndarray]:
        """x (the keyframe's place in its step span) and kept fraction of each keyframe's mask."""
        n = self._bounds.size - 1
        if scores is None or n <= 0:
            return np.zeros(0), np.zeros(0)
        masks, kf_steps = scores.masks, [int(s) for s in scores.keyframe_steps]
        xs, ys = [], []
        for k, (mask, step) in enumerate(zip(masks, kf_steps)):
            if not 0 <= step < n:
                continue
            # Several keyframes in one step: spread them over its span, in order.
            same = [j for j, s in enumerate(kf_steps) if s == step]
            pos = (same.index(k) + 0.5) / len(same)
            x0, x1 = self._bounds[step], self._bounds[step + 1]
            m = np.asarray(mask)
            xs.append(x0 + pos * (x1 - x0))
            ys.append(float(m.sum()) / max(m.size, 1))
        return np.asarray(xs), np.asarray(ys)

    def set_step_marks(self, marks: dict[int, str]) -> None:
        """Mark labelled steps: ``marks`` maps step index -> label text (shown as a tooltip on the mark)."""
        self._marks = dict(marks)
        n = self._bounds.size - 1
        spots = [{"pos": ((self._bounds[i] + self._bounds[i + 1]) / 2, MARK_Y), "data": f"{step_text(i)}: {text}"}
                 for i, text in sorted(self._marks.items()) if 0 <= i < n]
        self.marks.setData(spots)

    # --- input ----------------------------------------------------------------------------------
    def _on_playhead_dragged(self, line: pg.InfiniteLine) -> None:
        self.seek(line.value())

    def _on_click(self, event: MouseClickEvent) -> None:
        if event.button() != Qt.MouseButton.LeftButton or self._x_range is None:
            return
        if not self.vb.sceneBoundingRect().contains(event.scenePos()):
            return
        x = self.vb.mapSceneToView(QPointF(event.scenePos())).x()
        self.seek(min(max(x, self._x_range[0]), self._x_range[1]))
        event.accept()
