"""Model versions in the app: the Model menu switches the active model (the same setting as `rollscope model use`),
the next score is the new model's and says so; the "models disagree" queue lists exactly the runs whose latest
verdicts by the two most recent models differ."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.score import Score, verdict
from gui_app.core.settings import SettingsStore, active_model
from gui_app.core.store.backends import open_store
from gui_app.qt.main_window import MainWindow
from gui_app.qt.notify import Notifier
from gui_app.qt.queue_view import QueueController, QueueView
from gui_app.qt.workers import Runner
from tests.models.conftest import tiny_weights  # noqa: F401 -- a tiny model exported the way a training run is

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples" / "miniwob"
RUN = "login-user-success"
pytestmark = pytest.mark.skipif(not (SAMPLES / RUN).is_dir(), reason="no bundled samples")


def test_switching_the_model_changes_the_setting_and_the_next_score(qtbot, tmp_path, tiny_weights):  # noqa: F811
    # Two real exported models in folders of their own (a model is named after its folder).
    first, second = (Path(shutil.copytree(tiny_weights, tmp_path / name)) for name in ("finetune-a", "finetune-b"))
    shutil.copytree(SAMPLES / RUN, tmp_path / "lib" / RUN)
    settings = SettingsStore(tmp_path / "config")
    win = MainWindow(settings_store=settings)
    qtbot.addWidget(win)
    win.show()
    assert [a.text() for a in win.menuBar().actions()].count("&Model") == 1
    with qtbot.waitSignal(win.scanner.scanned, timeout=60_000):
        win.open_path(tmp_path / "lib")
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)
    win.library.select_row(0)  # a prefetched run is shown at once, without a load job: wait on the session
    qtbot.waitUntil(lambda: win.session.trajectory is not None, timeout=30_000)

    for folder in (first, second):
        with qtbot.waitSignal(win.models.changed, timeout=120_000, raising=False) as changed:
            job = win.models.use(folder)
            assert job is not None, win.notifier.history[-3:]  # refused (a job running): the message says why
        # On a timeout, say what the app told the user (a load error is a message, not an exception).
        assert changed.signal_triggered, win.notifier.history[-5:]
        assert changed.args == [str(folder.resolve())]
        assert active_model(settings.directory) == str(folder.resolve())  # what `rollscope model show` reads
        # a job's ``finished`` may land after its ``scored``, and a job still running refuses the next one
        qtbot.waitUntil(lambda: win.scorer.job is None, timeout=60_000)
        with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
            win.action_map["score_current"].trigger()
        assert win.session.scores is not None and win.session.scores.model == f"{folder.name}:onnx"
        assert f"by {folder.name}:onnx" in win.timeline.summary.text()
        assert f"by {folder.name}:onnx" in win.notifier.history[-1][1]  # the status bar says which model

    catalog = win.session.library.catalog
    assert [m.model for m in catalog.scoring_models()] == ["finetune-b:onnx", "finetune-a:onnx"]
    # Rescore the library with the active model: the scorer's library job (progress, Esc cancels).
    qtbot.waitUntil(lambda: win.scorer.job is None, timeout=60_000)
    with qtbot.waitSignal(win.scorer.scored, timeout=300_000):
        win.action_map["rescore_library"].trigger()
        assert win.scorer.job.name == "Scoring the whole library"
    assert [(m.model, m.n_scores) for m in catalog.scoring_models()] == [("finetune-b:onnx", 2),
                                                                        ("finetune-a:onnx", 1)]
    qtbot.waitUntil(lambda: win.scorer.job is None, timeout=30_000)
    # The same weights give the same verdict: the two models disagree on nothing, and the queue says so.
    win.set_annotator("ada")  # a queue is built for whoever labels: named first (else the app asks)
    with qtbot.waitSignal(win.queue.started, timeout=30_000):
        win.action_map["queue_models"].trigger()
    assert win.queue.name.endswith("models disagree") and win.queue.items == []

    # A folder that is not a model: refused with the loader's error naming it, nothing changes.
    assert win.models.use(tmp_path / "lib") is not None
    qtbot.waitUntil(lambda: win.models.job is None, timeout=60_000)
    assert active_model(settings.directory) == str(second.resolve())
    assert str(tmp_path / "lib") in win.notifier.history[-1][1]

    # Use the shipped model: the setting is cleared, as `rollscope model reset` does.
    with qtbot.waitSignal(win.models.changed, timeout=120_000) as changed:
        win.action_map["use_shipped_model"].trigger()
    assert changed.args == [None] and active_model(settings.directory) is None
    win.close()
    assert SettingsStore(settings.directory).load().model is None  # closing does not bring the old choice back


def test_models_disagree_queue_lists_exactly_the_runs_whose_verdicts_differ(qtbot, tmp_path):
    lib = Path(shutil.copytree(SAMPLES.parent / "miniwob", tmp_path / "samples"))
    catalog = Catalog(tmp_path / "c.sqlite")
    catalog.scan(lib)
    rows = sorted(catalog.query(), key=lambda r: r.id)
    old, new = "weights:onnx", "run-7:onnx"
    flipped = {rows[0].key: (0.2, 0.9), rows[1].key: (0.7, 0.45)}  # gaps 0.7 and 0.25
    # an older model that disagrees with both on another run: not among the two most recent, so not compared
    catalog.set_score(rows[2].key, Score(p_success=0.01, threshold=0.5, success=False, model="ancient:onnx"))
    for r in rows:
        p_old, p_new = flipped.get(r.key, (0.9, 0.8))
        catalog.set_score(r.key, Score(p_success=p_old, threshold=0.57, success=verdict(p_old, 0.57), model=old))
        catalog.set_score(r.key, Score(p_success=p_new, threshold=0.5, success=verdict(p_new, 0.5), model=new))
    store = open_store(tmp_path / "labels.sqlite")
    runner = Runner()
    ctl = QueueController(runner, Notifier(), "bob")
    view = QueueView(ctl)
    qtbot.addWidget(view)
    ctl.set_library(catalog, store)
    assert "Ctrl+5" in view.build_buttons["models"].toolTip()
    with qtbot.waitSignal(ctl.started, timeout=30_000):
        view.build_buttons["models"].click()
    assert ctl.name == "bob: models disagree"
    assert [it.key for it in ctl.items] == [rows[0].key, rows[1].key]
    assert view.rows() == [f"· 1. {rows[0].ref}", f"· 2. {rows[1].ref}"]
    runner.shutdown()
    store.close()
    catalog.close()
    QApplication.processEvents()
