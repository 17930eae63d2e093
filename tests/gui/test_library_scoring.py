"""Scoring the library from the app (shipped weights, bundled samples): all rows or the rows shown, said which; the
open run's timeline shows its new score at once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from gui_app.qt.main_window import MainWindow

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "resources" / "samples" / "miniwob"
WEIGHTS = REPO / "models" / "weights" / "model.onnx"
RUNS = ("login-user-success", "login-user-swapped-fields", "click-tab-success")

pytestmark = pytest.mark.skipif(not WEIGHTS.is_file() or not (SAMPLES / RUNS[0]).is_dir(),
                                reason="needs the shipped weights and the bundled samples")


def test_whole_library_or_rows_shown_and_the_open_timeline_follows(qtbot, tmp_path):
    root = tmp_path / "lib"
    for name in RUNS:
        shutil.copytree(SAMPLES / name, root / name)
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    with qtbot.waitSignal(win.scanner.scanned, timeout=60_000):
        win.open_path(root)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)
    opened = str((root / RUNS[0]).resolve())
    with qtbot.waitSignal(win.loader.loaded, timeout=30_000):
        win.library.select_key(opened)
    assert win.session.scores is None and "Not scored" in win.timeline.summary.text()
    # The rows shown: only the failure (the filter), and the job says so.
    win.library.outcome_filter.setCurrentIndex(win.library.outcome_filter.findData(False))
    qtbot.waitUntil(lambda: not win.library.model.pending and win.library.model.rowCount() == 1, timeout=30_000)
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        job = win.action_map["score_shown"].trigger() or win.scorer.job
        assert job.name == "Scoring the rows shown"
    assert win.notifier.history[-1][1].startswith("Scored 1 trajectories")
    assert win.session.scores is None  # the open run was not among them
    qtbot.waitUntil(lambda: win.scorer.job is None, timeout=30_000)
    # The whole library, whatever the filter: the open run's timeline shows its score without reopening it.
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        win.action_map["score_library"].trigger()
        assert win.scorer.job.name == "Scoring the whole library"
    assert win.notifier.history[-1][1].startswith("Scored 3 trajectories")
    scores = win.session.scores
    assert scores is not None and scores.threshold is not None
    _xs, ys = win.timeline.score_curve.getData()
    assert ys is not None and len(ys) == win.session.trajectory.n_steps
    assert "p(success)" in win.timeline.summary.text() and "threshold" in win.timeline.summary.text()


def test_scores_reach_runs_loaded_ahead_and_the_compared_run(qtbot, tmp_path):
    """Issue 30: after scoring the library, a run loaded ahead (the next row, prefetched while the first was open)
    and the run compared side by side still read "Not scored" although the catalog held their scores."""
    root = tmp_path / "lib"
    for name in RUNS:
        shutil.copytree(SAMPLES / name, root / name)
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    assert win.settings.prefetch_next
    with qtbot.waitSignal(win.scanner.scanned, timeout=60_000):
        win.open_path(root)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)
    model = win.library.model
    first, ahead, other = (model.key_at(i) for i in range(3))
    win.library.select_row(0)
    qtbot.waitUntil(lambda: win.session.key == first and ahead in win.loader._ready, timeout=30_000)
    assert win.loader._ready[ahead].score is None  # loaded ahead before any score existed
    with qtbot.waitSignal(win.comparison.opened, timeout=30_000):
        win.compare_with(other)
    assert win.comparison.session.scores is None
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        win.action_map["score_library"].trigger()
    catalog = win.session.library.catalog
    assert all(catalog.latest_score(k) is not None for k in (first, ahead, other))
    assert win.session.scores is not None
    compared = win.comparison.session.scores
    assert compared is not None and compared.p_success == catalog.latest_score(other).p_success
    assert "Not scored" not in win.compare_pane.title.text()
    win.next_trajectory()  # j: the run loaded ahead opens at once, with its score
    assert win.session.key == ahead
    assert win.session.scores is not None and win.session.scores.p_success == catalog.latest_score(ahead).p_success
    assert "Not scored" not in win.timeline.summary.text() and "p(success)" in win.timeline.summary.text()
