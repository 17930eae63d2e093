"""Issue 28 (items 3 and 4) in the app, with real widgets over a real catalog: a run without an instruction is given
one from its header (typed, or from a folder of task configs) for every run of its task, the app's scoring judges
against it, a batch names every run it skipped in View → Log and a log file, and the library tells runs apart by
agent, domain and run folder."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialogButtonBox

from gui_app.qt.library_view import COL_AGENT, COL_DOMAIN, COL_RUN_FOLDER, COL_TASK
from gui_app.qt.main_window import MainWindow
from tests.gui.library_fixtures import InstructionRecorder as FakeScorer, open_and_wait, write_native


def library(root: Path) -> Path:
    """Three runs of one scenario (no instruction; run folders named by time, two agents), one with its own, and one
    that does not load."""
    for i, (agent, folder) in enumerate((("gpt-4o", "20250226@163734"), ("claude", "20250227@090000"),
                                         ("claude", "20250228@101500"))):
        write_native(root / f"exec{i}", id=f"exec_binary/{folder}", instruction="", agent=agent,
                     metadata={"domain": "exec_binary", "run_folder": folder})
    write_native(root / "other", id="other", instruction="Open the settings", agent="gpt-4o",
                 metadata={"domain": "chrome", "task": "chrome/abc", "run_folder": "abc"})
    (root / "broken").mkdir()
    (root / "broken" / "trajectory.json").write_text("{not json")
    return root


def window(qtbot, root: Path) -> tuple[MainWindow, FakeScorer]:
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    model = FakeScorer()
    win.scorer.use_scorer(model)  # a Scorer, as the app's judges are; it scores in this process, where we read it
    open_and_wait(qtbot, win, root)
    return win, model


def open_run(qtbot, win: MainWindow, path: Path) -> None:
    with qtbot.waitSignal(win.loader.loaded, timeout=30_000):
        assert win.library.select_key(str(path.resolve()))
    qtbot.waitUntil(lambda: win.instructions.state is not None and not win.instructions.state.reading,
                    timeout=10_000)


def test_the_header_gives_every_run_of_the_task_an_instruction_that_scoring_uses(qtbot, tmp_path):
    root = library(tmp_path / "lib")
    win, model = window(qtbot, root)
    header = win.run_header
    open_run(qtbot, win, root / "other")
    assert header.isVisible() and "Open the settings" in header.instruction.text()
    assert header.button.isHidden()  # its own instruction: nothing to set
    open_run(qtbot, win, root / "exec0")
    assert "no instruction" in header.instruction.text() and header.button.isVisible()
    assert header.button.text() == "Set instruction…"

    dialog = header.ask()
    qtbot.waitUntil(dialog.isVisible)
    assert [dialog.scope.itemData(i) for i in range(dialog.scope.count())] == [
        "domain:exec_binary", f"run:{win.session.trajectory.key}"]
    dialog.text.setPlainText("Run the binary from the desktop")
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: win.instructions.state.given is not None, timeout=10_000)
    assert "Run the binary from the desktop" in header.instruction.text()
    assert header.source.text() == "set by you" and header.button.text() == "Change…"

    # Another run of the scenario (another agent) has it too: it is the catalog's, by scope.
    open_run(qtbot, win, root / "exec2")
    assert "Run the binary from the desktop" in header.instruction.text()
    assert win.session.library.catalog.stored_instructions().stored["domain:exec_binary"].source == "user"

    # Ctrl+R judges the open run against it; no dialog asks for --tasks-root.
    with qtbot.waitSignal(win.scorer.scored, timeout=30_000):
        win.action_map["score_current"].trigger()
    assert model.judged[str((root / "exec2").resolve())] == "Run the binary from the desktop"
    assert win.session.scores is not None and win.session.scores.p_success == 0.75
    assert not [t for level, t in win.notifier.history if level == "error"]


def test_a_library_scoring_names_every_run_it_skips_in_view_log_and_a_log_file(qtbot, tmp_path):
    root = library(tmp_path / "lib")
    win, _model = window(qtbot, root)
    with qtbot.waitSignal(win.scorer.scored, timeout=60_000):
        win.action_map["score_library"].trigger()
    level, text = win.notifier.history[-1]
    assert level == "warning" and text.startswith("Scored 1 trajectories; 4 not scored (3 with no instruction, "
                                                  "1 that do not load): View → Log names each and why; also in ")
    log = Path(text.rsplit("also in ", 1)[1])
    assert log.parent == root.resolve() / ".rollscope" / "logs" and len(log.read_text().splitlines()) == 2 + 4

    win.action_map["show_log"].trigger()
    qtbot.waitUntil(win.log_dialog.isVisible)
    listed = win.log_dialog.text.toPlainText()
    for name in ("exec0", "exec1", "exec2", "broken"):
        assert str((root / name).resolve()) in listed, name
    assert listed.count("\tno instruction\t") == 3 and "\tdoes not load\t" in listed
    assert "Set instruction" in listed  # how to give one, in the app's words
    assert "--tasks-root" not in listed

    # With an instruction given to the scenario, only the run that does not load is left, and still named.
    win.session.library.catalog.set_instruction("domain:exec_binary", "Run the binary")
    qtbot.waitUntil(lambda: win.scorer.job is None, timeout=10_000)  # the first run's job ends after its message
    with qtbot.waitSignal(win.scorer.scored, timeout=60_000):
        win.action_map["score_library"].trigger()
    assert win.notifier.history[-1][1].startswith("Scored 4 trajectories; 1 not scored (1 that do not load)")
    assert win.log_dialog.entries()[-1].detail.count("\n") == 0  # one line: the broken run
    win.log_dialog.close()


def test_task_configs_from_a_folder_reach_every_run_of_their_task(qtbot, tmp_path):
    from tests.formats import builders as b

    root = tmp_path / "results"
    runs = [b.osworld_dir(root, video=None, sidecar=None, domain="chrome", model=m)["path"] for m in ("gpt-4o", "o3")]
    win, _model = window(qtbot, root)
    open_run(qtbot, win, Path(runs[0]))
    assert win.instructions.state.missing and win.run_header.button.isVisible()
    dialog = win.run_header.ask()
    qtbot.waitUntil(dialog.isVisible)
    dialog.tabs.setCurrentIndex(1)
    dialog.folder.setText(str(b.REAL / "osworld" / "evaluation_examples"))
    dialog.buttons.button(QDialogButtonBox.StandardButton.Ok).click()
    qtbot.waitUntil(lambda: win.instructions.state.given is not None, timeout=30_000)
    qtbot.waitUntil(lambda: win.instructions.job is None, timeout=10_000)
    assert win.run_header.source.text().startswith("set by you, from the task config ")
    assert win.run_header.instruction.text().startswith("Can you make Bing")
    assert win.notifier.history[-1][1].startswith("Task configs gave 1 task(s) an instruction; 2 run(s)")
    open_run(qtbot, win, Path(runs[1]))  # the other model's run of the task
    assert win.run_header.instruction.text().startswith("Can you make Bing")


def test_the_library_shows_agent_domain_and_run_folder_sorted_and_searched(qtbot, tmp_path):
    root = library(tmp_path / "lib")
    win, _model = window(qtbot, root)
    model = win.library.model

    def shown(col: int) -> list[str]:
        return [model.data(model.index(r, col)) for r in range(model.rowCount())]

    header = win.library.table.horizontalHeader()
    header.setSortIndicator(COL_RUN_FOLDER, Qt.SortOrder.AscendingOrder)
    qtbot.waitUntil(lambda: not model.pending and model.order == ("run_folder", False), timeout=10_000)
    assert shown(COL_RUN_FOLDER) == ["20250226@163734", "20250227@090000", "20250228@101500", "abc", ""]
    assert shown(COL_AGENT)[:3] == ["gpt-4o", "claude", "claude"]
    assert shown(COL_DOMAIN)[:4] == ["exec_binary"] * 3 + ["chrome"]
    assert shown(COL_TASK)[:4] == ["exec_binary"] * 3 + ["chrome/abc"]  # the domain, not the timestamp
    win.library.search.setText("claude")
    qtbot.waitUntil(lambda: not model.pending and model.rowCount() == 2, timeout=10_000)
    assert shown(COL_RUN_FOLDER) == ["20250227@090000", "20250228@101500"]
