"""The shortcut table: every action of the main window, declared once.

Each :class:`ActionSpec` names the action, its menu, its shortcut(s), the main-window method it calls and what it
does. The menus, the shortcuts and the "?" dialog are all built from :data:`ACTIONS`, so they cannot disagree,
and a test checks that no shortcut is bound twice. The "?" dialog also lists the label panel's keys
(:data:`gui_app.qt.keyboard.LABEL_KEYS`), which are not actions: they act wherever focus is, except in a text
field (:mod:`gui_app.qt.keyboard`).

:data:`DOCK_ACTIONS` names the action that shows or hides each dock: every dock is reachable from the View menu.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (QDialog, QDialogButtonBox, QHeaderView, QTableWidget, QTableWidgetItem, QVBoxLayout,
                               QWidget)

from gui_app.qt.keyboard import LABEL_KEYS


@dataclass(frozen=True)
class ActionSpec:
    """One action.

    Attributes:
        name: identifier (``MainWindow.actions[name]``).
        text: menu text.
        shortcuts: key sequences in Qt's portable text form; the first is the one shown in menus.
        handler: name of the main-window method called (with no argument; with the checked state when checkable);
            a dotted name calls a method of one of its parts (``run_header.ask``), so a panel's own actions need no
            main-window method.
        description: what it does, for the "?" dialog and tooltips.
        menu: the menu it sits in.
        checkable: a toggle (its state mirrors a setting or a dock).
        also_in: further menus that list it (every dock's toggle is in View as well).
    """

    name: str
    text: str
    shortcuts: tuple[str, ...]
    handler: str
    description: str
    menu: str
    checkable: bool = False
    also_in: tuple[str, ...] = ()


MENUS = ("File", "Playback", "Library", "Labels", "Score", "Model", "View", "Help")

ACTIONS: tuple[ActionSpec, ...] = (
    # File
    ActionSpec("open_folder", "&Open folder…", ("Ctrl+O",), "open_folder_dialog",
               "Open a folder of trajectories (any supported format) as the library", "File"),
    ActionSpec("open_trajectory", "Open &trajectory…", ("Ctrl+Shift+O",), "open_trajectory_dialog",
               "Open one trajectory file or folder", "File"),
    ActionSpec("rescan", "&Rescan folder", ("F5",), "rescan", "Scan the open folder again for new or changed files",
               "File"),
    ActionSpec("export", "&Export…", ("Ctrl+E",), "export_dialog",
               "Export the labels as Parquet, JSONL, CSV, a Hugging Face dataset, reward-model training data or "
               "Who&When records (the formats and filters of rollscope export), in the background", "File"),
    ActionSpec("annotator", "Annotator &name…", ("Ctrl+Shift+N",), "ask_annotator",
               "Set the name written with every label (saved in the settings)", "File"),
    ActionSpec("label_store", "Label &store…", ("Ctrl+Alt+S",), "ask_label_store",
               "Label into a team's PostgreSQL server (postgresql://USER@HOST:PORT/DB) or each library's own file",
               "File"),
    ActionSpec("cancel", "&Cancel background work", ("Esc",), "runner.cancel_all",
               "Stop the running scan, load, scoring or export", "File"),
    ActionSpec("quit", "&Quit", ("Ctrl+Q",), "close", "Quit Rollscope", "File"),
    # Playback
    ActionSpec("play_pause", "&Play / pause", ("Space",), "session.toggle_playing", "Start or stop playback",
               "Playback"),
    ActionSpec("step_prev", "Previous &step", ("Left",), "step_prev", "Go to the previous step", "Playback"),
    ActionSpec("step_next", "&Next step", ("Right",), "step_next", "Go to the next step", "Playback"),
    ActionSpec("frame_prev", "Previous &frame", (",",), "frame_prev", "Go back one video frame", "Playback"),
    ActionSpec("frame_next", "Next fr&ame", (".",), "frame_next", "Go forward one video frame", "Playback"),
    ActionSpec("first_step", "F&irst step", ("Home",), "first_step", "Go to the first step", "Playback"),
    ActionSpec("last_step", "&Last step", ("End",), "last_step", "Go to the last step", "Playback"),
    ActionSpec("speed_up", "&Faster", ("+", "="), "speed_up", "Play faster (0.25× … 4×)", "Playback"),
    ActionSpec("speed_down", "&Slower", ("-",), "speed_down", "Play slower (0.25× … 4×)", "Playback"),
    # Library
    ActionSpec("next_trajectory", "&Next trajectory", ("J",), "next_trajectory",
               "Open the next trajectory in the library's current order (prefetched)", "Library"),
    ActionSpec("prev_trajectory", "&Previous trajectory", ("K",), "prev_trajectory",
               "Open the previous trajectory in the library's current order", "Library"),
    ActionSpec("search", "&Search…", ("Ctrl+F",), "focus_search",
               "Search the library by instruction, task or id, outcome or the model's verdict (\"fail\" finds the "
               "failures), and by what the labels say: verdict, labels, notes", "Library"),
    # Labels. Ctrl+digit and [ ]: plain digits and letters are the label panel's keys.
    ActionSpec("toggle_labelling", "&Labelling mode", ("L",), "set_labelling",
               "Start labelling: the label keys (s f u, digits, r, c, h n m, d, Enter) write labels. Again: back to "
               "browsing, where they write nothing. A queue, or clicking the label panel, starts labelling too",
               "Labels",
               checkable=True),
    ActionSpec("queue_failures", "Queue: &failures first", ("Ctrl+1",), "queue_failures",
               "Label what the library shows as a queue, environment failures first; opens its first unlabelled item",
               "Labels"),
    ActionSpec("queue_disagreement", "Queue: model &disagrees", ("Ctrl+2",), "queue_disagreement",
               "Label what the library shows as a queue, reward model disagreeing with the outcome first", "Labels"),
    ActionSpec("queue_uncertain", "Queue: model least &sure", ("Ctrl+3",), "queue_uncertain",
               "Label what the library shows as a queue, reward model least sure (p near 0.5) first", "Labels"),
    ActionSpec("queue_teach", "Queue: &teach the model", ("Ctrl+4",), "queue_teach",
               "Label what the library shows as a queue, the unlabelled runs that would teach the reward model most "
               "first (least sure or unlike its training data; near-identical runs kept apart)", "Labels"),
    ActionSpec("queue_models", "Queue: &models disagree", ("Ctrl+5",), "queue_models",
               "Label the runs where the two models that scored the library last give different verdicts, widest gap "
               "between their p(success) first (rescore with a second model first: Model menu)", "Labels"),
    ActionSpec("queue_harm", "Queue: possible &harm", ("Ctrl+6",), "queue_harm",
               "Label the runs someone labelled harmful or unsure on the safety verdict, or the harm judge flags "
               "(harmful, or p(harm) above 0.3), most likely harmful first (done once given a harm verdict)",
               "Labels"),
    ActionSpec("queue_off", "&Leave the queue", ("Ctrl+0",), "queue_off",
               "Stop working through the queue: Enter (save & next) follows the library order again", "Labels"),
    ActionSpec("queue_next", "&Next queue item", ("]",), "queue_next",
               "Open the next item of the queue, labelled or not (Enter saves and opens the next unlabelled one)",
               "Labels"),
    ActionSpec("queue_prev", "&Previous queue item", ("[",), "queue_prev", "Open the previous item of the queue",
               "Labels"),
    ActionSpec("toggle_queue", "&Queue panel", ("Ctrl+Shift+Q",), "set_queue_dock_visible",
               "Show or hide the labelling queue: pick a queue, see what is labelled", "Labels", checkable=True,
               also_in=("View",)),
    ActionSpec("toggle_review", "&Review and adjudicate", ("Ctrl+Shift+A",), "set_review_dock_visible",
               "Every annotator's labels of the open trajectory side by side; adopt a final label, override the "
               "outcome, agreement", "Labels", checkable=True, also_in=("View",)),
    # Score
    ActionSpec("score_current", "Score &current trajectory", ("Ctrl+R",), "scorer.score_current",
               "Run the reward model on the open trajectory", "Score"),
    ActionSpec("score_library", "Score the whole &library", ("Ctrl+Shift+R",), "scorer.score_library",
               "Run the reward model on every trajectory of the library, whatever the search and filters show",
               "Score"),
    ActionSpec("score_shown", "Score the rows &shown", ("Ctrl+Alt+R",), "score_shown",
               "Run the reward model on the trajectories the library shows now (its search and filters)", "Score"),
    ActionSpec("set_instruction", "Set &instruction…", ("Ctrl+I",), "run_header.ask",
               "Give the open run, and every run of its task, the instruction it lacks: type or paste it, or point "
               "at a folder of task configs (kept in the library's catalog; scoring judges them against it)",
               "Score"),
    # Model
    ActionSpec("use_model", "&Use model…", ("Ctrl+Alt+M",), "use_model_dialog",
               "Make a weights folder (a fine-tuned run) the active reward model, as `rollscope model use` does; the "
               "next scores are its", "Model"),
    ActionSpec("use_shipped_model", "Use the &shipped model", ("Ctrl+Alt+Shift+M",), "use_shipped_model",
               "Go back to the shipped reward model, as `rollscope model reset` does", "Model"),
    ActionSpec("rescore_library", "&Rescore the library with the active model", ("Ctrl+Alt+Shift+R",),
               "models.rescore",
               "Score every trajectory of the library again with the active model (or the judge chosen in Judge "
               "settings), in the background (Esc cancels); the earlier scores are kept for the \"models disagree\" "
               "queue", "Model"),
    ActionSpec("judge_settings", "&Judge settings…", ("Ctrl+Alt+J",), "models.ask_judge",
               "Choose the judge the app scores with (the built-in model, an OpenAI-compatible endpoint, ExeVRM, any "
               "installed plug-in) and its options; an API key is read from the environment, never typed here",
               "Model"),
    ActionSpec("judges_vs_humans", "Judges vs &humans…", ("Ctrl+Alt+H",), "models.show_versus",
               "How far each judge agrees with the library's final human labels (or the runs' outcome): accuracy, "
               "recall, kappa, first deviating step, time and tokens, as `rollscope eval --judge` prints them",
               "Model"),
    # View
    ActionSpec("toggle_overlay", "Pruning &overlay", ("O",), "set_overlay",
               "Show which video tokens the reward model kept (token-pruning mask)", "View", checkable=True),
    ActionSpec("toggle_labels", "&Label panel", ("Ctrl+L",), "set_label_dock_visible", "Show or hide the label panel",
               "View", checkable=True),
    ActionSpec("toggle_library", "Li&brary panel", ("Ctrl+B",), "set_library_dock_visible",
               "Show or hide the library", "View", checkable=True),
    ActionSpec("toggle_timeline", "&Timeline panel", ("Ctrl+Shift+T",), "set_timeline_dock_visible",
               "Show or hide the timeline (scores, threshold, first deviation, playhead)", "View", checkable=True),
    ActionSpec("toggle_steps", "&Steps panel", ("Ctrl+Shift+S",), "set_steps_dock_visible",
               "Show or hide the step table", "View", checkable=True),
    ActionSpec("compare", "&Compare side by side…", ("Ctrl+Shift+C",), "set_compare",
               "Show another run beside the open one (two agents on the same task), their videos and steps "
               "synchronised by step", "View", checkable=True),
    ActionSpec("focus_layout", "&Focus layout", ("F11",), "set_focus_layout",
               "Only the video, the timeline and a one-line label bar; again: every panel back as it was", "View",
               checkable=True),
    ActionSpec("reset_layout", "&Reset layout", ("Ctrl+Alt+L",), "reset_layout",
               "Put every panel back in its default place and size, inside the screen", "View"),
    ActionSpec("show_log", "Lo&g…", ("Ctrl+Shift+L",), "log_dialog.present",
               "Every warning and error of this session, with the runs a scoring batch did not score and why",
               "View"),
    # Z, not F: f/s/u are the label panel's verdict keys, which must work whatever has focus.
    ActionSpec("zoom_fit", "Zoom to &fit", ("Z",), "video.fit", "Fit the video to the view", "View"),
    # Help
    # "?" is Shift+/ on most layouts; some platforms report it with the Shift modifier, so both are bound.
    ActionSpec("shortcuts", "&Keyboard shortcuts", ("?", "Shift+?"), "show_shortcuts", "List every keyboard shortcut",
               "Help"),
)


def spec(name: str) -> ActionSpec:
    for a in ACTIONS:
        if a.name == name:
            return a
    raise KeyError(name)


def normalized_shortcuts(specs: Iterable[ActionSpec] = ACTIONS) -> list[tuple[str, str]]:
    """``(portable key text, action name)`` for every shortcut, normalised by QKeySequence (for duplicate checks)."""
    return [(QKeySequence(s).toString(QKeySequence.SequenceFormat.PortableText), a.name)
            for a in specs for s in a.shortcuts]


# dock name -> the checkable action that shows it
DOCK_ACTIONS = {"library": "toggle_library", "queue": "toggle_queue", "labels": "toggle_labels",
                "review": "toggle_review", "timeline": "toggle_timeline", "steps": "toggle_steps"}


def build_actions(target: QObject, parent: QWidget) -> dict[str, QAction]:
    """Create one QAction per spec, connected to ``getattr(target, spec.handler)``, added to ``parent``.

    Actions are added to ``parent`` (the main window) so their shortcuts work whatever widget has focus, except
    where a text field needs the key (Qt gives a focused line edit its typed characters first).
    """
    out: dict[str, QAction] = {}
    for a in ACTIONS:
        act = QAction(a.text, parent)
        act.setObjectName(a.name)
        act.setShortcuts([QKeySequence(s) for s in a.shortcuts])
        act.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
        act.setToolTip(f"{a.description} ({a.shortcuts[0]})" if a.shortcuts else a.description)
        act.setStatusTip(a.description)
        act.setCheckable(a.checkable)
        handler: Any = target
        for part in a.handler.split("."):
            handler = getattr(handler, part)
        if a.checkable:
            act.toggled.connect(handler)
        else:
            act.triggered.connect(lambda _checked=False, h=handler: h())
        parent.addAction(act)
        out[a.name] = act
    return out


def populate_menus(menubar: object, actions: dict[str, QAction]) -> None:
    """Fill a QMenuBar with the actions, menu by menu, in table order."""
    for menu_name in MENUS:
        menu = menubar.addMenu("&" + menu_name)  # type: ignore[attr-defined]
        for a in ACTIONS:
            if a.menu == menu_name or menu_name in a.also_in:
                menu.addAction(actions[a.name])


class ShortcutsDialog(QDialog):
    """The "?" dialog: the label panel's keys first (what an annotator presses most), then every action with its
    shortcut(s) and description, read from :data:`ACTIONS`."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setWindowTitle("Keyboard shortcuts")
        rows = [(keys, f"Labelling: {name}", what) for keys, name, what in LABEL_KEYS]
        for a in ACTIONS:
            keys = ", ".join(QKeySequence(s).toString(QKeySequence.SequenceFormat.NativeText) for s in a.shortcuts)
            rows.append((keys or "(menu)", f"{a.menu}: {a.text.replace('&', '').rstrip('…')}", a.description))
        self.table = QTableWidget(len(rows), 3, self)
        self.table.setHorizontalHeaderLabels(["Keys", "Action", "Description"])
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        for row, texts in enumerate(rows):
            for col, text in enumerate(texts):
                self.table.setItem(row, col, QTableWidgetItem(text))
        self.table.horizontalHeader().setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        self.table.resizeColumnsToContents()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.table)
        layout.addWidget(buttons)
        self.resize(720, 560)

    def rows(self) -> list[tuple[str, str, str]]:
        """The table's text, row by row (keys, action, description)."""
        def text(r: int, c: int) -> str:
            item = self.table.item(r, c)
            return item.text() if item is not None else ""

        return [(text(r, 0), text(r, 1), text(r, 2)) for r in range(self.table.rowCount())]
