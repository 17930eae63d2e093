"""The main window opens folders and single trajectories, loads selections in workers, survives bad files."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QApplication

from gui_app.core.scoring.score import Score
from gui_app.core.settings import SettingsStore, set_active_model
from gui_app.qt.main_window import MainWindow
from gui_app.qt.notify import JobProgressView
from gui_app.qt.workers import Runner
from tests.gui.library_fixtures import make_library, make_video_trajectory, open_and_wait, write_native


@pytest.fixture
def library(tmp_path) -> Path:
    root = make_library(tmp_path / "lib", 6)
    make_video_trajectory(root / "recorded", n_steps=3, fps=10.0)
    (root / "zz-broken").mkdir()
    (root / "zz-broken" / "trajectory.json").write_text('{"schema_version": 1, "id": "broken", "steps": [')
    return root


@pytest.fixture
def window(qtbot):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    return win


def select_and_wait(qtbot, win: MainWindow, key: str) -> None:
    with qtbot.waitSignal(win.loader.loaded, timeout=30_000):
        assert win.library.select_key(key)


def test_opens_a_folder_and_a_selected_trajectory(qtbot, window, library):
    open_and_wait(qtbot, window, library)
    model = window.library.model
    assert model.rowCount() == 8
    assert window.settings.recent_folders[0] == str(library.resolve())
    assert str(library.resolve()) in window.windowTitle()
    assert any("could not be read" in text for level, text in window.notifier.history if level == "warning")
    key = str((library / "recorded").resolve())
    window.session.library.catalog.set_score(key, Score(p_success=0.77, first_error_step=1, step_scores=[0.1, 0.8, 0.1],
                                                model="test-model"))
    select_and_wait(qtbot, window, key)
    s = window.session
    assert s.trajectory.id == "video-traj" and s.source is not None and s.source.frame_count == 30
    assert (s.scores.p_success, s.scores.first_error_step, s.scores.step_scores) == (0.77, 1, [0.1, 0.8, 0.1])
    assert s.step == 0 and s.frame == 0
    window.action_map["step_next"].trigger()
    assert s.step == 1 and s.frame == s.frame_of_step(1) == 10
    window.action_map["frame_next"].trigger()
    assert (s.frame, s.step) == (11, 1)
    window.action_map["last_step"].trigger()
    assert s.step == 2
    window.action_map["speed_up"].trigger()
    assert s.speed == 1.5 and window.speed_label.text() == "1.5×"
    assert window.windowTitle().startswith("video-traj")


def test_a_bad_trajectory_shows_a_message_and_the_window_lives_on(qtbot, window, library):
    open_and_wait(qtbot, window, library)
    broken = str((library / "zz-broken").resolve())
    with qtbot.waitSignal(window.loader.failed, timeout=30_000) as failed:
        window.library.select_key(broken)
    assert failed.args[0] == broken and "trajectory.json" in failed.args[1]
    assert window.notifications.message_text.startswith(str(library.resolve() / "zz-broken"))
    assert "trajectory.json" in window.statusBar().currentMessage()
    assert window.isVisible() and window.session.trajectory is None
    # A file that broke after the scan: the catalog row looks fine, the load fails with the file and field named.
    good = library / "t00002" / "trajectory.json"
    doc = json.loads(good.read_text())
    doc["steps"][0]["index"] = "zero"
    good.write_text(json.dumps(doc))
    with qtbot.waitSignal(window.loader.failed, timeout=30_000) as failed:
        window.library.select_key(str(good.parent.resolve()))
    assert "steps[0].index" in failed.args[1]
    # ... and the next good one still opens.
    select_and_wait(qtbot, window, str((library / "t00003").resolve()))
    assert window.session.trajectory.id == "traj-00003"


def test_single_trajectory_path_opens_just_that_one(qtbot, window, tmp_path):
    one = write_native(tmp_path / "only", id="only-one", instruction="The only one", n_steps=2)
    with qtbot.waitSignal(window.loader.loaded, timeout=60_000):
        window.open_path(one)
    assert window.library.model.rowCount() == 1
    assert window.session.trajectory.id == "only-one"
    assert not (tmp_path / "only" / ".rollscope").exists()  # nothing written inside the run: index in the config dir
    assert (tmp_path / ".rollscope" / "labels.sqlite").is_file()  # labels in the folder holding it
    assert window.settings.recent_folders == (str(one.resolve()),)


def test_missing_path_is_an_error_message(qtbot, window, tmp_path):
    assert window.open_path(tmp_path / "nope") is None
    assert window.notifier.history[-1] == ("error", f"{tmp_path / 'nope'}: no such file or folder")


def test_j_and_k_follow_the_library_order_and_prefetch(qtbot, window, library):
    open_and_wait(qtbot, window, library)
    model = window.library.model
    window.library.select_row(0)
    qtbot.waitUntil(lambda: window.session.trajectory is not None, timeout=30_000)
    nxt = model.key_at(1)
    qtbot.waitUntil(lambda: nxt in window.loader._ready, timeout=30_000)  # prefetched while row 0 is viewed
    window.action_map["next_trajectory"].trigger()
    assert window.loader.current_key == nxt  # shown at once, no load job needed
    assert window.session.trajectory.source_path == nxt
    with qtbot.waitSignal(window.loader.loaded, timeout=30_000):
        window.action_map["prev_trajectory"].trigger()
    assert window.loader.current_key == model.key_at(0)
    window.action_map["prev_trajectory"].trigger()  # already first
    assert window.notifier.history[-1] == ("info", "Start of the library")


def test_drop_a_folder_opens_it(qtbot, window, library):
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(library))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(window.scanner.scanned, timeout=60_000):
        window.dropEvent(event)
    qtbot.waitUntil(lambda: window.library.model.rowCount() == 8, timeout=30_000)


def test_settings_and_window_state_persist(qtbot, library):
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    open_and_wait(qtbot, win, library)
    win.action_map["speed_down"].trigger()
    win.action_map["toggle_overlay"].trigger()
    win.docks["steps"].hide()
    win.close()
    store = SettingsStore()
    s = store.load()
    assert (s.playback_speed, s.overlay, s.last_folder) == (0.5, True, str(library.resolve()))
    assert (store.directory / "window.ini").is_file()
    again = MainWindow()
    qtbot.addWidget(again)
    assert again.session.speed == 0.5 and again.session.overlay
    assert again.action_map["toggle_overlay"].isChecked()
    assert again.docks["steps"].isHidden() and not again.docks["library"].isHidden()  # QSettings: dock layout
    assert again.recent_menu is not None
    again._fill_recent_menu()
    assert [a.text() for a in again.recent_menu.actions()] == [str(library.resolve())]


def test_annotator_name_is_asked_saved_and_given_to_the_label_panel(qtbot, window, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("  Ada  ", True)))
    window.action_map["annotator"].trigger()
    assert window.settings.annotator == "Ada" and SettingsStore().load().annotator == "Ada"
    if window.label_panel is not None:
        assert window.labelling.annotator == "Ada"


def test_corrupted_settings_warn_and_the_window_opens(qtbot, tmp_path):
    store = SettingsStore()
    store.directory.mkdir(parents=True, exist_ok=True)
    store.path.write_text("{{{")
    win = MainWindow()
    qtbot.addWidget(win)
    assert win.notifier.history and win.notifier.history[0][0] == "warning"
    assert "corrupted settings" in win.notifier.history[0][1]


def test_scoring_without_a_trajectory_or_model_says_so(qtbot, window, library):
    window.action_map["score_current"].trigger()
    assert window.notifier.history[-1] == ("info", "Open a trajectory first")
    window.action_map["score_library"].trigger()
    assert window.notifier.history[-1] == ("info", "Open a folder first")


def test_scoring_without_weights_is_a_message_not_a_crash(qtbot, window, library, tmp_path):
    open_and_wait(qtbot, window, library)
    select_and_wait(qtbot, window, str((library / "t00001").resolve()))
    # The active model's folder holds no weights (as a build without them): the scoring process reads the settings.
    assert not set_active_model(tmp_path / "no-weights", window.settings_store.directory)
    window.action_map["score_current"].trigger()
    assert window.scorer.job is not None  # runs in a worker
    qtbot.waitUntil(lambda: window.scorer.job is None, timeout=60_000)
    level, text = window.notifier.history[-1]
    assert level == "error" and "no-weights" in text
    assert window.notifications.message_text.startswith(text)
    assert window.isVisible() and window.session.scores is None and window.scorer.job is None


def test_shortcuts_reach_the_session_from_the_keyboard(qtbot, window, library):
    open_and_wait(qtbot, window, library)
    select_and_wait(qtbot, window, str((library / "recorded").resolve()))
    window.activateWindow()
    qtbot.waitActive(window)
    assert QApplication.focusWidget() is window.library.table  # keys work at once, not typed into the search box
    handle = window.windowHandle()  # key events through the QWindow go through Qt's shortcut map, as typed keys do
    qtbot.keyClick(handle, Qt.Key.Key_Right)
    assert window.session.step == 1
    qtbot.keyClick(handle, Qt.Key.Key_Period)
    assert window.session.frame == 11
    qtbot.keyClick(handle, Qt.Key.Key_Space)
    assert window.session.playing
    qtbot.keyClick(handle, Qt.Key.Key_Space)
    assert not window.session.playing
    qtbot.keyClick(handle, Qt.Key.Key_Question, Qt.KeyboardModifier.ShiftModifier)
    qtbot.waitUntil(lambda: getattr(window, "shortcuts_dialog", None) is not None, timeout=5000)
    window.shortcuts_dialog.close()


def test_progress_view_shows_and_cancels_a_job(qtbot):
    runner = Runner()
    view = JobProgressView()
    qtbot.addWidget(view)
    gate = threading.Event()

    def task(rep):
        rep.progress(3, 10, "three")
        gate.wait(10)
        while not rep.cancelled():
            gate.wait(0.01)
        return "stopped"

    runner.job_started.connect(view.track)
    job = runner.submit("Counting", task)
    qtbot.waitUntil(lambda: view.bar.maximum() == 10 and view.bar.value() == 3, timeout=10_000)
    assert view.isVisibleTo(None) or not view.isHidden()
    assert view.label.text() == "Counting: three"
    with qtbot.waitSignal(job.finished, timeout=10_000):
        view.cancel_button.click()
        gate.set()
    assert job.is_cancelled
    qtbot.waitUntil(view.isHidden, timeout=5000)
    runner.shutdown()


def test_exception_in_a_slot_becomes_a_message(qtbot, window, monkeypatch):
    import sys

    from gui_app.qt.notify import install_excepthook

    monkeypatch.setattr(sys, "excepthook", sys.excepthook)
    install_excepthook(window.notifier)
    try:
        raise ValueError("boom")
    except ValueError:
        sys.excepthook(*sys.exc_info())
    assert window.notifier.history[-1] == ("error", "Unexpected error: ValueError: boom")
    assert "boom" in window.notifications.message_text
    QApplication.processEvents()


def test_label_keys_work_while_the_video_has_focus(qtbot, window, library):
    open_and_wait(qtbot, window, library)
    select_and_wait(qtbot, window, str((library / "recorded").resolve()))
    window.activateWindow()
    qtbot.waitActive(window)
    window.video.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is not window.library.table, timeout=5000)
    handle = window.windowHandle()
    window.set_annotator("ada")
    qtbot.keyClick(handle, Qt.Key.Key_L)  # labelling starts (browsing writes nothing)
    qtbot.keyClick(handle, Qt.Key.Key_Right)  # window shortcuts still work: step 1
    qtbot.keyClick(handle, Qt.Key.Key_F)  # a label key: verdict 'failure' (no window shortcut takes it)
    qtbot.keyClick(handle, Qt.Key.Key_R)  # root cause = current step
    qtbot.waitUntil(lambda: window.labelling.record is not None
                    and window.labelling.record.verdict == "failure"
                    and window.labelling.record.root_cause_step == 1, timeout=5000)
