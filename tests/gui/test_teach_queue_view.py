"""The "teach the model" queue in the app's queue panel: built from the catalog's stored scores (uncertainty and
out-of-distribution), labelled runs left out, from a bare controller and view over the bundled samples."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QApplication

from gui_app.core.store.record import Annotation
from gui_app.core.library.catalog import Catalog
from gui_app.core.scoring.score import Score
from gui_app.core.store.backends import open_store
from gui_app.qt.action_table import ShortcutsDialog
from gui_app.qt.notify import Notifier
from gui_app.qt.queue_view import QueueController, QueueView
from gui_app.qt.workers import Runner

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples"
pytestmark = pytest.mark.skipif(not (SAMPLES / "miniwob").is_dir(), reason="no bundled samples")


def test_teach_button_builds_the_queue_from_stored_scores(qtbot, tmp_path):
    samples = Path(shutil.copytree(SAMPLES / "miniwob", tmp_path / "samples"))
    catalog = Catalog(tmp_path / "c.sqlite")
    catalog.scan(samples)
    store = open_store(tmp_path / "labels.sqlite")
    rows = {r.id: r for r in catalog.query()}
    # every run scored confidently except: one at the threshold, one far from the training data, one labelled
    for r in rows.values():
        catalog.set_score(r.key, Score(p_success=0.99, threshold=0.6, success=True, model="m", ood=0.1))
    unsure, novel, labelled = (rows["miniwob-enter-text-s900800"], rows["miniwob-click-tab-s901100"],
                               rows["miniwob-click-dialog-s901000"])
    catalog.set_score(unsure.key, Score(p_success=0.6, threshold=0.6, success=True, model="m", ood=0.2))
    catalog.set_score(novel.key, Score(p_success=0.98, threshold=0.6, success=True, model="m", ood=4.0))
    catalog.set_score(labelled.key, Score(p_success=0.6, threshold=0.6, success=True, model="m", ood=4.0))
    store.save(Annotation(trajectory_id=labelled.ref, annotator="ann", verdict="failure"))
    runner = Runner()
    ctl = QueueController(runner, Notifier(), "bob")
    view = QueueView(ctl)
    qtbot.addWidget(view)
    ctl.set_library(catalog, store)
    with qtbot.waitSignal(ctl.started, timeout=30_000):
        view.build_buttons["teach"].click()
    assert ctl.name == "bob: teach the model"
    order = [it.trajectory_id for it in ctl.items]
    assert order[:2] == [unsure.ref, novel.ref] and labelled.ref not in order  # 1.0 + 0.1, then 0.05 + 1.0
    assert len(order) == len(rows) - 1
    runner.shutdown()
    store.close()
    catalog.close()
    QApplication.processEvents()


def test_teach_queue_shortcut_is_listed(qtbot):
    dialog = ShortcutsDialog()
    qtbot.addWidget(dialog)
    rows = {label.split(": ", 1)[1]: keys for keys, label, _ in dialog.rows()}
    assert rows["Queue: teach the model"] == "Ctrl+4"
