"""The main window: builds the docks and the actions and connects models to views. Nothing else.

No I/O, decoding or inference happens here: scanning, loading and scoring are the controllers' work
(:mod:`gui_app.qt.controllers`) and run through the one runner (:mod:`gui_app.qt.workers`); errors go to the one
notifier (:mod:`gui_app.qt.notify`). The shortcuts come from the table in :mod:`gui_app.qt.action_table`; the handlers
named there are the small methods below.

Layout: the video in the centre with the transport bar under it (and, when comparing, the compared run beside it);
the library dock on the left with the labelling queue below it (shown once a queue is picked); the label panel on
the right with review/adjudication as a tab beside it (Ctrl+Shift+A); the timeline and the step table side by side
at the bottom. On a narrower window the side panels are tabs of one column; F11 is the focus layout (the video, the
timeline, a one-line label bar). The arrangements, View → Reset layout and keeping docks on screen are
:mod:`gui_app.qt.layout`'s;
:meth:`MainWindow.add_panel` docks any further panel. Label keys reach the label panel wherever focus is
(:mod:`gui_app.qt.keyboard`), with the keyboard's mode shown in the status bar and atop the label panel.

Start-up (issue 32: ``rollscope open`` on 100,000 runs paints its first rows within 1 s on two cores): the window is
built in two parts. What shows the library is built at once; the timeline (pyqtgraph, ~0.3 s to import and build)
is built on the event loop's next turn after the library's first rows are painted (:meth:`MainWindow.finish_building`;
at once when nothing is being opened, when the opening fails, or when code asks for :attr:`MainWindow.timeline`).
Its dock is there from the start, so the layout, the View menu and the saved state do not change.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QDragEnterEvent, QDropEvent, QShowEvent
from PySide6.QtWidgets import (QDockWidget, QFileDialog, QInputDialog, QLabel, QMainWindow, QMenu, QVBoxLayout,
                               QWidget)

from gui_app.core.library.catalog import ScanReport
from gui_app.core.media.prefetch import SOURCE_OPTIONS
from gui_app.core.settings import Settings, SettingsStore
from gui_app.core.store.postgresql import redact
from gui_app.core.media.video import FrameSource
from gui_app.qt import action_table
from gui_app.qt import layout
from gui_app.qt.compare import CompareController, ComparePane, ViewerArea
from gui_app.qt.controllers import LibraryScanner, ScoreController, TrajectoryLoader
from gui_app.qt.export_dialog import ExportController
from gui_app.qt.instructions import InstructionController
from gui_app.qt.keyboard import LabelKeys, LabelModeIndicator, undo_actions
from gui_app.qt.label_panel import LabelBar, LabelPanel, ask_who_labels
from gui_app.qt.labelling import Labelling
from gui_app.qt.library_view import LibraryModel, LibraryView
from gui_app.qt.log_view import LogDialog
from gui_app.qt.model_control import ModelController
from gui_app.qt.notify import JobProgressView, NotificationView, Notifier
from gui_app.qt.playback import Playback
from gui_app.qt.queue_view import QueueController, QueueView
from gui_app.qt.review_view import ReviewView
from gui_app.qt.run_header import RunHeader
from gui_app.qt.session import Session
from gui_app.qt.step_table import StepTable
from gui_app.qt.transport import TransportBar
from gui_app.qt.video_view import VideoView
from gui_app.qt.workers import Job, JobQueue, Runner

if TYPE_CHECKING:
    from gui_app.qt.timeline_view import TimelineView


class MainWindow(QMainWindow):
    """Rollscope's window.

    Args:
        settings_store: where settings are read and saved (default: the user's config folder).

    Attributes:
        session: the evented model every view observes: the one answer to what is open.
        labelling: the evented model of what is being labelled (the label panel is a view over it).
        notifier: where every message to the user goes.
        runner: the one door to background threads.
        library: the library view (its ``model`` is the :class:`LibraryModel`).
        action_map: QActions by name (see :data:`gui_app.qt.action_table.ACTIONS`).
        docks: dock widgets by name.

    Signals:
        built(): the window is whole (:meth:`finish_building` has run).
    """

    built = Signal()

    def __init__(self, settings_store: SettingsStore | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("MainWindow")
        self.setWindowTitle("Rollscope")
        self.setAcceptDrops(True)
        self.settings_store = settings_store or SettingsStore()
        self.settings: Settings = self.settings_store.load()
        self.session = Session(self)
        self.notifier = Notifier(self)
        self.notifications = NotificationView(self.notifier, self)
        self.runner = Runner(notify=self.notifier.error, parent=self)
        # Label writes, in order and off the GUI thread: another process holding the store's lock never freezes
        # the window (the label panel and the review write through it). They have a thread of their own: behind
        # the loads and decodes of the shared pool, Enter (which waits for the label to land) took ~20 ms longer.
        self.write_runner = Runner(notify=self.notifier.error, max_threads=1, parent=self)
        self.writes = JobQueue(self.write_runner, self)
        self.scanner = LibraryScanner(self.runner, self.session, self.notifier, self)
        self.loader = TrajectoryLoader(self.runner, self.session, self.notifier, SOURCE_OPTIONS, self)
        self.scorer = ScoreController(self.runner, self.session, self.notifier, self, self.settings_store.directory)
        self.models = ModelController(self.runner, self.scorer, self.notifier, self.settings_store, self)
        self.exporter = ExportController(self.runner, self.session, self.notifier, self, self.settings.export_folder)
        self.comparison = CompareController(self.runner, self.session, self.notifier, SOURCE_OPTIONS, self)
        self.instructions = InstructionController(self.runner, self.session, self.notifier, self)
        self.log_dialog = LogDialog(self.notifier, self)  # View → Log
        self.session.closer = self.comparison.session.closer = self._close_source
        self.scanner.store_location = self.settings.label_store or None
        self._pending_select: str | None = None  # key to open once the scan of a single trajectory ends
        self._when_named: Callable[[], None] | None = None  # what waits for the annotator's name
        self.who_labels: QInputDialog | None = None  # the question "who is labelling?" while it is open
        self._scan_ended = False
        self._timeline: TimelineView | None = None  # built after the library's first rows (finish_building)
        self._built = False
        self.docks: dict[str, QDockWidget] = {}
        self._build_views()
        self.label_keys = LabelKeys(self, self.labelling, self.label_panel, self.docks["labels"],
                                    home=self.library.table)
        self._build_status_bar()
        self.action_map = action_table.build_actions(self, self)
        self._build_menus()
        self._connect()
        self._apply_settings()
        self._restore_window_state()
        for warning in self.settings_store.warnings:
            self.notifier.warning(warning)
        # Start with the keyboard on the library, not in the search box: Space, arrows and j/k work at once.
        self.setFocusProxy(self.library.table)
        self.library.table.setFocus()
        QTimer.singleShot(0, self, self._first_turn)

    # -- building -------------------------------------------------------------------------------------------

    def _build_views(self) -> None:
        self.video = VideoView(self.session)
        self.compare_pane = ComparePane(self.comparison)
        self.transport = TransportBar(self.session)
        self.labelling = Labelling(self.session, self.writes, annotator=self.settings.annotator or None, parent=self)
        self.label_bar = LabelBar(self.labelling)  # the focus layout's one line of labelling
        self.label_bar.hide()
        under = QWidget(self)
        column = QVBoxLayout(under)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(self.transport)
        column.addWidget(self.label_bar)
        self.run_header = RunHeader(self.instructions)  # the open run's instruction, or "Set instruction…"
        self.setCentralWidget(ViewerArea(self.video, self.compare_pane, under, self, header=self.run_header))
        self.library = LibraryView(LibraryModel(parent=self, runner=self.runner), self)
        self.library.follow(self.session)
        self.add_panel("library", self.library, "left", title="Library")
        self.add_panel("timeline", QWidget(), "bottom", title="Timeline")  # the view: finish_building
        self.step_table = StepTable(self.session)
        self.add_panel("steps", self.step_table, "bottom", title="Steps")
        self.playback = Playback(self.session, self.video, self)
        self.label_panel = LabelPanel(self.labelling)
        self.add_panel("labels", layout.scrollable(self.label_panel), "right", title="Labels")
        self.addActions(undo_actions(self.labelling, self))  # Ctrl+Z / Ctrl+Shift+Z act on label changes
        self.queue = QueueController(self.runner, self.notifier, self.labelling.annotator, self,
                                     library=self.library.model)
        self.queue.follow(self.session)
        self.queue_view = QueueView(self.queue, build=self.start_queue)
        self.add_panel("queue", self.queue_view, "left", title="Queue")
        self.review = ReviewView(None, self.labelling.taxonomy, adjudicator=self.labelling.annotator,
                                 runner=self.runner, writes=self.writes)
        self.add_panel("review", layout.scrollable(self.review), "right", title="Review")

    @property
    def timeline(self) -> TimelineView:
        """The timeline view (built now if :meth:`finish_building` has not built it yet)."""
        if self._timeline is None:
            from gui_app.qt.timeline_view import TimelineView  # pyqtgraph: not before the library's first rows

            view = TimelineView(self.session)  # it reads what the session holds already
            view.set_step_marks(self.labelling.marks)
            self.labelling.marks_changed.connect(view.set_step_marks)
            self.docks["timeline"].setWidget(view)
            self._timeline = view
        return self._timeline

    def finish_building(self) -> None:
        """Build what the library's first rows do not need (the timeline). Runs once, on its own after the first
        rows (see the module's docstring); calling it again does nothing."""
        if self._built:
            return
        self._built = True
        _ = self.timeline
        self.built.emit()

    def _first_turn(self) -> None:
        """The event loop's first turn: the window is shown and the library (if any) is opening. Finish building
        once its first rows are painted, or at once when nothing is opening."""
        job = self.scanner.job
        if job is None:
            self.finish_building()
            return
        self.library.table.viewport().installEventFilter(_FirstRows(self))
        # An opening that fails shows no rows: the rest is built then.
        job.finished.connect(lambda: self.finish_building() if self.session.library is None else None)

    def add_panel(self, name: str, widget: QWidget, area: str = "right", title: str | None = None) -> QDockWidget:
        """Dock ``widget`` as panel ``name`` in ``area`` (left, right, bottom, top); its state is saved, and a
        floated dock is kept inside the screen."""
        dock = QDockWidget(title or name.capitalize(), self)
        dock.setObjectName(f"dock_{name}")
        dock.setWidget(widget)
        dock.topLevelChanged.connect(lambda floating, d=dock: layout.keep_dock_on_screen(d) if floating else None)
        self.addDockWidget(layout.AREAS[area], dock)
        self.docks[name] = dock
        return dock

    def _build_status_bar(self) -> None:
        self.mode_indicator = LabelModeIndicator(self.label_keys, self)
        self.statusBar().addPermanentWidget(self.mode_indicator)
        self.label_keys.hint.connect(self.notifier.info)  # a label key while browsing: how to start labelling
        self.label_keys.add_view(self.label_bar)
        self.label_bar.set_mode_widget(LabelModeIndicator(self.label_keys))
        self.progress = JobProgressView(self)
        self.statusBar().addPermanentWidget(self.progress)
        self.speed_label = QLabel(self)
        self.statusBar().addPermanentWidget(self.speed_label)

    def _build_menus(self) -> None:
        action_table.populate_menus(self.menuBar(), self.action_map)
        file_menu = self.menuBar().actions()[0].menu()
        assert isinstance(file_menu, QMenu)  # the action table's first menu is File
        self.recent_menu = QMenu("Open &recent", self)
        file_menu.insertMenu(self.action_map["rescan"], self.recent_menu)
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        for folder in self.settings.recent_folders:
            act = self.recent_menu.addAction(folder)
            act.triggered.connect(lambda _c=False, f=folder: self.open_path(f))
        self.recent_menu.setEnabled(bool(self.settings.recent_folders))

    def _connect(self) -> None:
        self.runner.job_started.connect(self._on_job_started)
        self.scanner.progressed.connect(self.library.model.refresh)
        self.scanner.scanned.connect(self._on_scanned)
        self.library.model.query_changed.connect(self._on_library_query)
        self.library.trajectory_selected.connect(self.loader.open)
        self.loader.loaded.connect(self._on_loaded)
        self.scorer.scored.connect(lambda _k: self.library.model.refresh())
        # A score stored in the catalog reaches every view of its run: the open one, those loaded ahead, the
        # compared one (each loader holds its own).
        for loader in (self.loader, self.comparison.loader):
            self.scorer.stored.connect(loader.apply_scores)
        self.models.changed.connect(lambda folder: setattr(self, "settings", replace(self.settings, model=folder)))
        self.models.judge_changed.connect(lambda judge, options: setattr(
            self, "settings", replace(self.settings, judge=judge, judge_options=options)))
        self.exporter.folder_used.connect(lambda folder: self._keep(replace(self.settings, export_folder=folder)))
        self.session.speed_changed.connect(self._on_speed)
        self.session.overlay_changed.connect(self.action_map["toggle_overlay"].setChecked)
        self.session.trajectory_changed.connect(lambda _t: self._update_title())
        self.session.library_changed.connect(lambda _lib: self._update_title())
        self.session.message.connect(self.notifier.info)
        self.labelling.next_requested.connect(self.save_and_next)
        self.labelling.annotator_wanted.connect(self._ask_who_labels)
        self.labelling.mode_changed.connect(lambda _m: self._labelling_shown())
        self.labelling.open_requested.connect(self.open_key)
        self.label_panel.set_mode_widget(LabelModeIndicator(self.label_keys))
        self.labelling.save_failed.connect(self.notifier.error)
        # A team server that was out of reach answers again: every view re-reads the library's store.
        self.labelling.store_recovered.connect(self.session.announce_library)
        self.labelling.saved.connect(self.library.model.refresh_labels)
        self.labelling.saved.connect(self.queue.on_saved)
        self.labelling.saved.connect(self.review.on_saved)
        self.queue.open_requested.connect(self.open_key)
        self.queue.started.connect(lambda _name: self._queue_started())
        self.review.follow(self.session)
        self.review.final_changed.connect(self.library.model.refresh_labels)
        self.review.error.connect(self.notifier.error)
        self.labelling.marks_changed.connect(self.step_table.set_step_marks)
        self.labelling.marks_changed.connect(self.transport.set_step_marks)
        self.compare_pane.active_changed.connect(self.action_map["compare"].setChecked)
        for name, action in action_table.DOCK_ACTIONS.items():
            dock, act = self.docks[name], self.action_map[action]
            dock.visibilityChanged.connect(lambda _v, d=dock, a=act: a.setChecked(not d.isHidden()))

    def _apply_settings(self) -> None:
        s = self.settings
        self.session.set_speed(s.playback_speed)
        self.session.set_overlay(s.overlay)
        self.action_map["toggle_overlay"].setChecked(s.overlay)
        self.action_map["toggle_labels"].setChecked(s.label_dock)
        for name in ("library", "timeline", "steps"):
            self.action_map[action_table.DOCK_ACTIONS[name]].setChecked(True)
        self._on_speed(self.session.speed)

    # -- window state (QSettings: geometry and dock layout only) --------------------------------------------

    def _restore_window_state(self) -> None:
        kind = layout.restore_state(self, self.docks)
        self.docks["labels"].setVisible(self.settings.label_dock)
        self.layout_policy = layout.ResponsiveLayout(self, self.docks, kind, bar=self.label_bar)
        self.layout_policy.focus_changed.connect(self.action_map["focus_layout"].setChecked)

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        layout.keep_on_screen(self, self.docks)  # the screen is known once shown: a saved layout may not fit it

    def closeEvent(self, event: QCloseEvent) -> None:
        self.session.set_playing(False)
        self.session.closer = self.comparison.session.closer = FrameSource.close  # no worker will run after this
        self.settings = replace(self.settings, playback_speed=self.session.speed, overlay=self.session.overlay)
        if not self.settings_store.save(self.settings):
            for w in self.settings_store.warnings[-1:]:
                self.notifier.warning(w)
        self.layout_policy.set_focus(False)  # the panels as the user had them are what is saved
        layout.save_state(self, self.layout_policy.kind)
        self.loader.clear()
        self.comparison.close()
        self._release_library()
        self.writes.flush()  # the last labels land before the store closes (no event loop will start them)
        self.write_runner.shutdown()
        self.runner.shutdown()
        self.scorer.close()
        self.session.set_trajectory(None)
        super().closeEvent(event)

    # -- opening --------------------------------------------------------------------------------------------

    def open_path(self, path: str | Path) -> Job | None:
        """Open a folder of trajectories, or one trajectory (the library then holds just that one)."""
        from gui_app.core.trajectory.formats import split_selector

        base, _ = split_selector(path)
        if not base.exists():
            self.notifier.error(f"{base}: no such file or folder")
            return None
        self.loader.clear()
        self.session.set_trajectory(None)
        self._release_library()
        self._pending_select = str(path) if base.is_file() or "#" in str(path) else None
        job = self.scanner.open(path)
        if base.is_dir():
            self.settings = self.settings.with_recent(str(base.resolve()))
            self.settings_store.save(self.settings)
        return job

    def _release_library(self) -> None:
        """Let go of the open library: views let go at once, its files close once the work using them has ended."""
        self.scanner.release(also_wait_for=[self.scorer.job, self.queue.job, self.exporter.job, self.writes])

    def _on_scanned(self, _report: ScanReport) -> None:
        self._scan_ended = True
        self.library.model.refresh()  # read in a worker; _on_library_query follows
        self.library.reload_formats()

    def _on_library_query(self) -> None:
        """After the first library read that follows a scan: open what the user asked for on the command line (or
        the only trajectory there is)."""
        if not self._scan_ended or self.library.model.pending:
            return
        self._scan_ended = False
        pending, self._pending_select = self._pending_select, None
        if pending is not None and self.library.select_key(str(Path(pending).resolve())):
            return
        if self.library.current_key() is None and self.library.model.rowCount() == 1:
            self.library.select_row(0)

    def _on_loaded(self, key: str) -> None:
        if self.settings.prefetch_next:
            self.loader.prefetch(self.queue.peek_next() if self.queue.active else self.library.key_relative(+1))

    def open_key(self, key: str) -> None:
        """Open a catalog key in the viewer: selected in the library when it lists it, else loaded directly. When it
        is open already (a queue starting on the run shown), keys held for it apply now."""
        if key == self.session.key and self.session.trajectory is not None:
            self.labelling.arrived()
            return
        if not self.library.select_key(key):
            self.loader.open(key)

    def _on_job_started(self, job: Job) -> None:
        if job.show_progress:
            self.progress.track(job)

    def _close_source(self, source: FrameSource) -> None:
        """Close a frame source let go of in a worker (it joins a thread): the next item opens without waiting."""
        self.runner.submit(f"Closing {source.path}", lambda _rep: source.close(), report_errors=False,
                           show_progress=False)

    def _update_title(self) -> None:
        traj, library = self.session.trajectory, self.session.library
        root = library.root if library is not None else None
        parts = [p for p in ((traj.id if traj else None), (str(root) if root else None)) if p]
        self.setWindowTitle(" — ".join([*parts, "Rollscope"]))

    def _on_speed(self, speed: float) -> None:
        self.speed_label.setText(f"{speed:g}×")

    # -- drag and drop ----------------------------------------------------------------------------------------

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.open_path(paths[0])

    # -- action handlers (named in gui_app.qt.action_table.ACTIONS) ----------------------------------------------

    def open_folder_dialog(self) -> None:
        start = self.settings.last_folder or str(Path.home())
        folder = QFileDialog.getExistingDirectory(self, "Open a folder of trajectories", start)
        if folder:
            self.open_path(folder)

    def open_trajectory_dialog(self) -> None:
        start = self.settings.last_folder or str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "Open a trajectory", start,
                                              "Trajectories (*.json *.jsonl);;All files (*)")
        if path:
            self.open_path(Path(path).parent if Path(path).name == "trajectory.json" else path)

    def rescan(self) -> None:
        if self.scanner.rescan() is None:
            self.notifier.info("Open a folder first (Ctrl+O)")

    def ask_annotator(self) -> None:
        name, ok = QInputDialog.getText(self, "Annotator", "Name written with every label:",
                                        text=self.settings.annotator)
        if ok and name.strip():
            self.set_annotator(name.strip())

    def ask_label_store(self) -> None:
        name, ok = QInputDialog.getText(self, "Label store",
                                        "A team's server (postgresql://USER@HOST:PORT/DB), or empty for each "
                                        "library's own file:", text=self.settings.label_store)
        if ok:
            self.set_label_store(name.strip())

    def set_label_store(self, location: str) -> None:
        """Label into ``location`` from now on (saved in the settings); the open library opens again with it."""
        self.settings = replace(self.settings, label_store=location)
        self.settings_store.save(self.settings)
        self.scanner.store_location = location or None
        self.notifier.info(f"Labels now go to {redact(location) if location else 'each library’s own file'}")
        library = self.session.library
        if library is not None:
            self.open_path(library.root)

    def set_annotator(self, name: str) -> None:
        self.settings = replace(self.settings, annotator=name)
        self.settings_store.save(self.settings)
        self.queue.set_annotator(name)
        self.review.adjudicator = name
        self.labelling.set_annotator(name)  # last: labelling may start now, which was waiting for the name
        self.notifier.info(f"Labels are now written as {name}")
        then, self._when_named = self._when_named, None
        if then is not None:
            then()

    def _keep(self, settings: Settings) -> None:
        """Make ``settings`` the app's and save them at once."""
        self.settings = settings
        self.settings_store.save(settings)

    def _ask_who_labels(self) -> None:
        """Labelling was asked for, and nobody said who labels: ask once (the settings keep the answer)."""
        if self.who_labels is not None:
            return
        self.set_label_dock_visible(True)

        def cancelled() -> None:
            self._when_named = None
            self.labelling.cancel_start()
            self.notifier.info("Still browsing: labelling starts once you say who labels (L, or File → Annotator)")

        self.who_labels = ask_who_labels(self, self.labelling.annotator, self.set_annotator, cancelled)
        self.who_labels.destroyed.connect(lambda _o=None: setattr(self, "who_labels", None))

    def _labelling_shown(self) -> None:
        """Labelling started or stopped: the L action says which, and starting shows the labels."""
        on = self.labelling.labelling
        self._show_checked("toggle_labelling", on)
        if on and not self.layout_policy.focus:
            self.set_label_dock_visible(True)

    def set_labelling(self, on: bool) -> None:
        """L: start labelling (asking who labels the first time), or back to browsing."""
        if on:
            self.labelling.start()
        else:
            self.labelling.stop()
        self._show_checked("toggle_labelling", self.labelling.labelling)  # off while who labels is asked

    def _show_checked(self, action: str, on: bool) -> None:
        """Show a state on a checkable action without acting on it again."""
        act = self.action_map[action]
        act.blockSignals(True)
        act.setChecked(on)
        act.blockSignals(False)

    def set_focus_layout(self, on: bool) -> None:
        self.layout_policy.set_focus(on)

    def step_prev(self) -> None:
        self.session.next_step(-1)

    def step_next(self) -> None:
        self.session.next_step(+1)

    def frame_prev(self) -> None:
        self.session.next_frame(-1)

    def frame_next(self) -> None:
        self.session.next_frame(+1)

    def first_step(self) -> None:
        self.session.set_step(0)

    def last_step(self) -> None:
        if self.session.trajectory is not None:
            self.session.set_step(self.session.trajectory.n_steps - 1)

    def speed_up(self) -> None:
        self.session.change_speed(+1)

    def speed_down(self) -> None:
        self.session.change_speed(-1)

    def next_trajectory(self) -> None:
        if self.library.select_relative(+1) is None:
            self.notifier.info("End of the library")

    def prev_trajectory(self) -> None:
        if self.library.select_relative(-1) is None:
            self.notifier.info("Start of the library")

    def save_and_next(self) -> None:
        """Enter in the label panel (it has saved): the next unlabelled queue item, else the next library row.
        When nothing opens (end of the queue or the library), keys typed meanwhile are not held any longer."""
        before = (self.session.key, self.loader.wanted)
        if not self.queue.advance():
            self.next_trajectory()
        if self.labelling.waiting and (self.session.key, self.loader.wanted) == before:
            self.labelling.stop_waiting("there is no next item")

    def queue_failures(self) -> None:
        self.start_queue("failures")

    def queue_disagreement(self) -> None:
        self.start_queue("disagreement")

    def queue_uncertain(self) -> None:
        self.start_queue("uncertain")

    def start_queue(self, order: str) -> None:
        """Build and start a labelling queue: labelling starts (the first time, once the annotator is named) and
        keys typed from now on wait for the queue's first item, however long building and opening it take."""
        if not self.labelling.start():
            self._when_named = lambda: self.start_queue(order)  # who labels is asked first: the queue is theirs
            return
        if not self.layout_policy.focus:
            self.set_label_dock_visible(True)
        self.labelling.start_waiting()
        job = self.queue.build(order)
        if job is None:
            self.labelling.stop_waiting("the queue was not built")
            return
        opened: list[str] = []
        heard = opened.append
        self.queue.open_requested.connect(heard)

        def built() -> None:
            self.queue.open_requested.disconnect(heard)
            # An open queue claims its first item in a worker: that item opens (or the queue says it is done) later.
            if self.labelling.waiting and not opened and not self.queue.open_queue:
                self.labelling.stop_waiting("the queue opened nothing")

        job.finished.connect(built)

    def _queue_started(self) -> None:
        self.docks["queue"].show()
        self.labelling.start()  # a queue is there to be labelled
        self._labelling_shown()

    def queue_teach(self) -> None:
        self.start_queue("teach")

    def queue_models(self) -> None:
        self.start_queue("models")

    def queue_harm(self) -> None:
        self.start_queue("harm")

    def queue_off(self) -> None:
        self.queue.select(None)
        self.notifier.info("Left the queue: Enter (save & next) follows the library order")

    def queue_next(self) -> None:
        self.queue.step(+1)

    def queue_prev(self) -> None:
        self.queue.step(-1)

    def set_queue_dock_visible(self, visible: bool) -> None:
        self.docks["queue"].setVisible(visible)

    def set_review_dock_visible(self, visible: bool) -> None:
        self.docks["review"].setVisible(visible)

    def set_timeline_dock_visible(self, visible: bool) -> None:
        self.docks["timeline"].setVisible(visible)

    def set_steps_dock_visible(self, visible: bool) -> None:
        self.docks["steps"].setVisible(visible)

    def reset_layout(self) -> None:
        self.layout_policy.set_focus(False)
        self.layout_policy.reset()
        self.docks["labels"].setVisible(True)
        self.settings = replace(self.settings, label_dock=True)
        self.notifier.info("Layout reset: every panel is back in its place")

    def set_compare(self, on: bool) -> None:
        """View → Compare side by side: pick a run of the library to show beside the open one (off: stop)."""
        if not on:
            self.comparison.close()
        elif not self.comparison.active:
            self.compare_pane.pick(self)

    def compare_with(self, key: str) -> None:
        """Show ``key`` beside the open run, synchronised by step."""
        self.comparison.open(key)

    def export_dialog(self) -> None:
        self.exporter.ask(self)

    def focus_search(self) -> None:
        self.docks["library"].show()
        self.docks["library"].raise_()  # the library may be a tab behind the labels
        self.library.focus_search()

    def score_shown(self) -> None:
        self.scorer.score_library(self.library.model.text, self.library.model.filters)

    def use_model_dialog(self) -> None:
        self.models.ask_use(self)

    def use_shipped_model(self) -> None:
        self.models.use(None)

    def set_overlay(self, on: bool) -> None:
        self.session.set_overlay(on)
        self.settings = replace(self.settings, overlay=bool(on))
        if on and self.video.overlay_text.startswith("No pruning mask"):
            self.notifier.info(self.video.overlay_text)  # O before scoring says why nothing is drawn

    def set_label_dock_visible(self, visible: bool) -> None:
        self.docks["labels"].setVisible(visible)
        if visible:
            self.docks["labels"].raise_()  # the labels may be a tab behind the library
        self.settings = replace(self.settings, label_dock=bool(visible))

    def set_library_dock_visible(self, visible: bool) -> None:
        self.docks["library"].setVisible(visible)

    def show_shortcuts(self) -> action_table.ShortcutsDialog:
        dialog = action_table.ShortcutsDialog(self)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.show()
        self.shortcuts_dialog = dialog
        return dialog

    def action(self, name: str) -> QAction:
        return self.action_map[name]


class _FirstRows(QObject):
    """Watches the library table's viewport: the first paint after the library's first query was read (its rows, or
    none) calls :meth:`MainWindow.finish_building` on the loop's next turn, so that those rows reach the screen
    first. Then it goes."""

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.window = window

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 -- Qt's name
        model = self.window.library.model
        if event.type() == QEvent.Type.Paint and model.catalog is not None and not model.pending:
            watched.removeEventFilter(self)
            QTimer.singleShot(0, self.window, self.window.finish_building)
            self.deleteLater()
        return False
