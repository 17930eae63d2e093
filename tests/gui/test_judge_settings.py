"""The judge in the app: Model → Judge settings… lists the installed judges with their declared options as fields,
saves the choice and restores it, and never shows a field for an API key (it says which environment variable holds
it); the app's scoring then uses that judge; Model → Judges vs humans… shows the per-judge table of
``rollscope eval --judge`` for the open library, computed in a worker with progress and cancel."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit

from gui_app.core.settings import SettingsStore
from gui_app.core.store.backends import open_store
from gui_app.core.store.interface import default_path
from gui_app.core.store.record import Annotation
from gui_app.judges.registry import JudgeOption, JudgeSpec, spec
from gui_app.qt.judge_settings import JudgeSettingsDialog
from gui_app.qt.main_window import MainWindow

SAMPLES = Path(__file__).resolve().parents[2] / "resources" / "samples" / "miniwob"
LABELS = {"login-user-success": "success", "click-tab-success": "success", "email-inbox-wrong-email": "failure",
          "enter-text-typo": "failure", "click-dialog-missed": "unsure"}
SECRET = "sk-test-0123456789abcdef-SECRET"
pytestmark = pytest.mark.skipif(not SAMPLES.is_dir(), reason="no bundled samples")


@pytest.fixture
def library(tmp_path) -> Path:
    root = tmp_path / "lib"
    for name in LABELS:
        shutil.copytree(SAMPLES / name, root / name)
    store = open_store(default_path(root))
    for name, verdict in LABELS.items():
        store.save(Annotation(name, "ann", verdict=verdict, root_cause_step=1 if verdict == "failure" else None))
    store.close()
    return root


@pytest.fixture
def window(qtbot, tmp_path):
    win = MainWindow(settings_store=SettingsStore(tmp_path / "config"))
    qtbot.addWidget(win)
    return win


def _open(qtbot, win: MainWindow, root: Path) -> None:
    with qtbot.waitSignal(win.scanner.scanned, timeout=60_000):
        win.open_path(root)
    qtbot.waitUntil(lambda: not win.library.model.pending, timeout=30_000)


def _texts(dialog) -> list[str]:
    return [w.text() for w in dialog.findChildren(QLineEdit)] + [w.text() for w in dialog.findChildren(QLabel)]


def test_the_dialog_saves_and_restores_a_judges_options_and_shows_no_key_field(qtbot, window, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    directory = window.settings_store.directory
    dialog = window.models.judge_dialog()
    qtbot.addWidget(dialog)
    names = [dialog.judge.itemData(i) for i in range(dialog.judge.count())]
    assert names[0] == "rollscope" and {"openai-compatible", "exevrm"} <= set(names)
    assert dialog.chosen == "rollscope"
    # Every declared option of the endpoint judge is a field (its defaults as placeholders), and none is a key.
    fields = dialog.fields["openai-compatible"]
    declared = spec("openai-compatible").option_names()
    assert sorted(fields) == sorted(declared)
    assert not [n for n in fields if "key" in n and n != "api-key-env"]
    assert all(w.echoMode() == QLineEdit.EchoMode.Normal for w in dialog.findChildren(QLineEdit))
    assert fields["concurrency"].placeholderText() == "4" and isinstance(fields["cache"], QComboBox)
    # The built-in model's weights are the active model, not a field.
    assert "model" not in dialog.fields["rollscope"]

    dialog.judge.setCurrentIndex(names.index("openai-compatible"))
    assert "$OPENAI_API_KEY (set for this app)" in dialog.key_note.text()
    fields["model"].setText("Qwen/Qwen2.5-VL-7B-Instruct")
    dialog.buttons.accepted.emit()  # OK without the required endpoint: said, nothing saved, the dialog stays
    assert "needs endpoint" in dialog.error.text() and not dialog.result()
    assert SettingsStore(directory).load().judge == ""
    fields["endpoint"].setText("http://localhost:8000/v1")
    fields["concurrency"].setText("8")
    fields["frames"].setText("16")  # its default: not kept
    fields["cache"].setCurrentIndex(fields["cache"].findData("off"))
    fields["api-key-env"].setText("MY_VLM_KEY")
    assert "$MY_VLM_KEY (not set for this app)" in dialog.key_note.text()
    with qtbot.waitSignal(window.models.judge_changed):
        dialog.buttons.accepted.emit()
    saved = SettingsStore(directory).load()
    assert saved.judge == "openai-compatible"
    assert saved.judge_options == {"openai-compatible": {
        "endpoint": "http://localhost:8000/v1", "model": "Qwen/Qwen2.5-VL-7B-Instruct", "concurrency": "8",
        "cache": "off", "api-key-env": "MY_VLM_KEY"}}
    assert SECRET not in directory.joinpath("settings.json").read_text()

    # Opened again: the choice and every value as saved; the key still nowhere.
    again = window.models.judge_dialog()
    qtbot.addWidget(again)
    assert again.chosen == "openai-compatible"
    got = again.fields["openai-compatible"]
    assert (got["endpoint"].text(), got["concurrency"].text(), got["frames"].text()) == \
        ("http://localhost:8000/v1", "8", "")
    assert got["cache"].currentData() == "off" and got["api-key-env"].text() == "MY_VLM_KEY"
    monkeypatch.setenv("MY_VLM_KEY", SECRET)
    got["api-key-env"].setText("MY_VLM_KEY ")  # retyped: the note looks again
    assert "$MY_VLM_KEY (set for this app)" in again.key_note.text()
    assert not any(SECRET in t for t in _texts(again))
    # Back to the built-in model: the endpoint's options are kept for next time.
    again.judge.setCurrentIndex(0)
    again.buttons.accepted.emit()
    saved = SettingsStore(directory).load()
    assert saved.judge == "" and saved.judge_options["openai-compatible"]["concurrency"] == "8"
    window.close()  # closing keeps what the dialog saved
    assert SettingsStore(directory).load().judge_options == saved.judge_options


def test_a_plugin_option_named_for_a_secret_is_never_a_field(qtbot):
    plugin = JudgeSpec("vendor", "a cloud judge", (
        JudgeOption("region", "where", default="eu"), JudgeOption("api-key", "the key"),
        JudgeOption("token", "a token")), load=lambda options: None)  # type: ignore[arg-type, return-value]
    dialog = JudgeSettingsDialog([spec("rollscope"), plugin], "vendor", {"vendor": {"api-key": SECRET}})
    qtbot.addWidget(dialog)
    assert list(dialog.fields["vendor"]) == ["region"]
    assert dialog.choice() == ("vendor", {})
    assert not any(SECRET in t for t in _texts(dialog))
    assert sum("set it in the environment" in t for t in _texts(dialog)) == 2
    assert dialog.key_text(plugin) == "This judge sends no API key."


def test_the_app_scores_with_the_chosen_judge(qtbot, window, library, server):
    assert window.models.use_judge("openai-compatible", {"endpoint": server.url, "model": "judge-fail",
                                                         "backoff": "0.01"})
    _open(qtbot, window, library)
    window.library.select_row(0)
    qtbot.waitUntil(lambda: window.session.trajectory is not None, timeout=30_000)
    with qtbot.waitSignal(window.scorer.scored, timeout=120_000):
        window.action_map["score_current"].trigger()
    score = window.session.scores
    assert score is not None and score.model.startswith("openai-compatible:judge-fail@127.0.0.1:")
    assert score.success is False and score.rationale == "the last step went wrong" and len(server.requests) == 1
    # The catalog keeps the judge's words and tokens with the score (migration 15).
    stored = window.session.library.catalog.latest_score(window.session.key)
    assert stored.rationale == "the last step went wrong" and stored.usage["completion_tokens"] == 20
    assert "by openai-compatible:judge-fail" in window.notifier.history[-1][1]


def test_judges_vs_humans_table_for_the_open_library(qtbot, window, library, server):
    window.models.use_judge("openai-compatible", {"endpoint": server.url, "model": "judge-pass"})
    assert window.models.show_versus() is None  # no library yet: said, nothing opened
    _open(qtbot, window, library)
    window.action_map["judges_vs_humans"].trigger()
    dialog = window.models.versus
    assert dialog is not None and dialog.isVisible()
    names = {dialog.judges.item(i).data(256): dialog.judges.item(i) for i in range(dialog.judges.count())}
    assert dialog.checked() == ["rollscope", "openai-compatible"]  # the built-in model and the chosen judge
    assert "needs weights" in names["exevrm"].text()  # its options are not set: offered, but not runnable
    with qtbot.waitSignal(dialog.controller.reported, timeout=120_000):
        dialog.run_button.click()
        assert not dialog.run_button.isEnabled() and dialog.cancel_button.isEnabled()
    qtbot.waitUntil(lambda: dialog.controller.job is None, timeout=30_000)
    rows = dialog.rows()
    assert [r[0] for r in rows] == ["rollscope", "openai-compatible"]
    # The endpoint judge calls all four labelled runs successes: two right, both failures missed, kappa 0.
    assert rows[1][1:6] == ["4", "50.0%", "100.0%", "0.0%", "0.000"] and rows[1][-1] == "0"
    assert rows[0][1] == "4" and rows[0][-1] == "0"
    assert "4 runs against the final human labels" in dialog.status.text()
    assert "click-dialog-missed: verdict 'unsure'" in dialog.details.toPlainText()
    assert dialog.run_button.isEnabled() and not dialog.cancel_button.isEnabled()

    # Cancel: the work stops and the table says so (or it stopped before any judge started).
    dialog.against.setCurrentIndex(1)  # the environment's outcome
    job = dialog.run()
    assert job is not None
    dialog.cancel_button.click()
    qtbot.waitUntil(lambda: dialog.controller.job is None, timeout=60_000)
    report = dialog.controller.report
    assert report.against == "labels" or report.cancelled
    dialog.close()
    assert window.models.versus is None
