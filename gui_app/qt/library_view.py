"""The library: a table over the catalog, with search, filters and sorting.

:class:`LibraryModel` is a QAbstractTableModel over :meth:`Catalog.query`: it holds the row count and fetches rows
a page at a time (``LIMIT``/``OFFSET`` in SQLite) as the view asks for them, so a library of 10,000 trajectories
costs a ``COUNT(*)`` and one page query to show, never 10,000 widgets or 10,000 Python rows. Sorting and filtering
are SQL (the catalog indexes the sort columns); a new query resets the model. In the app every read runs in a
worker (:mod:`gui_app.qt.workers`): scrolling to rows not read yet asks for their page and shows it when it comes,
so the GUI thread never waits for the catalog or the label store (a team's server: a round trip per read).

:class:`LibraryView` is the widget: a search box (debounced), filter combos (format, env outcome, scored, load
error, the harm judge's verdict; in two rows when one would clip them), the table, and a count. Selecting a row emits
:attr:`LibraryView.trajectory_selected` with the row's key; ``j``/``k`` move through the current (sorted, filtered)
order with :meth:`LibraryView.select_relative`.

The label status column reads the annotation store through one narrow function ``label_status(rows) -> {key:
status}`` (:func:`gui_app.core.library.folder.store_label_status` builds it from an annotation store: one store read per
page, never one per row); without one the column stays blank. Sorting by that column orders by labelling progress
(:func:`gui_app.core.library.folder.label_order`): the catalog cannot sort by what only the store knows, so the whole
filtered result is read from the catalog's cached rows, its statuses read from the store once, and the model pages
through that ordered list.

Search finds the instruction, task, agent, domain, run folder and id, the outcome and the model's verdict in words (the
catalog's), and what the rows' labels say (verdict, labels, notes...): a ``label_search(text) -> {word: keys}`` function
(:func:`gui_app.core.library.folder.store_label_search`) asks the store once per search, in the worker, and the catalog
takes its answer as the ``label_refs`` filter, which :attr:`LibraryModel.filters` carries on (a queue or a scoring
run of "the rows shown" holds the same rows).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QObject, QPersistentModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QResizeEvent
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView,
                               QVBoxLayout, QWidget)

from gui_app.core.library.catalog import Catalog, CatalogRow
from gui_app.core.errors import RollscopeError
from gui_app.core.library.folder import (
    LabelSearchFn, LabelStatusFn, Library, label_ordered, store_label_search, store_label_status)
from gui_app.core.annotation.queue import model_verdict
from gui_app.qt.session import Session
from gui_app.qt.workers import Runner

PAGE_SIZE = 200
MAX_PAGES = 50  # pages kept in memory (10,000 rows); older ones are dropped and re-read on demand

# (header, CatalogRow field it sorts by or None when the catalog cannot sort it, tooltip)
COLUMNS: tuple[tuple[str, str | None, str], ...] = (
    ("Instruction", "instruction", "The task as given to the agent"),
    ("Task / app", "task", "Task name, or the application when the format has no task"),
    ("Format", "format", "The importer that read it"),
    ("Steps", "n_steps", "Number of agent steps"),
    ("Duration", "duration", "Length of the run (recording, else last step)"),
    ("Env outcome", "success", "Success as recorded by the environment or the data set"),
    ("p(success)", "p_success", "The reward model's latest probability of success and its verdict at its own threshold "
                                "(✓ success, ✗ failure; ⚠ it disagrees with the environment's outcome; 'unknown' "
                                "when the model cannot judge the run)"),
    ("Harm", "p_harm", "The harm judge's latest probability that the run did harm and its verdict (harmful, safe, "
                       "or unknown when it cannot say); blank when the latest score has no harm verdict"),
    ("Label", "label", "Annotation status from the label store (sorts unlabelled, labelled once, several "
                       "annotators, adjudicated)"),
    ("Agent / model", "agent", "The agent or model that ran it, when its format says"),
    ("Domain", "domain", "The run's domain (OSWorld's application or scenario), when its format has one"),
    ("Run folder", "run_folder", "The run's own folder as its harness named it (its time, a run number), when its "
                                 "format has one: what tells runs of one task apart"),
)
(COL_INSTRUCTION, COL_TASK, COL_FORMAT, COL_STEPS, COL_DURATION, COL_OUTCOME, COL_P, COL_HARM, COL_LABEL, COL_AGENT,
 COL_DOMAIN, COL_RUN_FOLDER) = range(len(COLUMNS))

LABEL_SORT = "label"  # the order_by of the label status column: not a catalog column, sorted here

RowRole = Qt.ItemDataRole.UserRole + 1  # the CatalogRow
KeyRole = Qt.ItemDataRole.UserRole + 2  # the key (what formats.load accepts)

_ERROR_BRUSH = QBrush(QColor(180, 40, 40))
_FAIL_BRUSH = QBrush(QColor(170, 60, 60))
_OK_BRUSH = QBrush(QColor(30, 130, 60))
_DISAGREE_BRUSH = QBrush(QColor(200, 110, 0))
_UNKNOWN_BRUSH = QBrush(QColor(130, 130, 130))
_HARM_BRUSH = QBrush(QColor(200, 30, 30))


def format_duration(seconds: float | None) -> str:
    if seconds is None or not math.isfinite(seconds):
        return ""
    s = int(round(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def format_model(row: CatalogRow) -> str:
    """p(success) with the model's verdict (✓/✗), a ⚠ when it contradicts the environment, or ``unknown``."""
    if row.p_success is None and row.model_success is None and not row.model_unknown:
        return ""
    if row.model_unknown:
        return "unknown"
    p = "?" if row.p_success is None else f"{row.p_success:.2f}"
    verdict = model_verdict(row)
    mark = "" if verdict is None else (" ✓" if verdict else " ✗")
    warn = "⚠ " if verdict is not None and row.success is not None and verdict != row.success else ""
    return f"{warn}{p}{mark}"


def model_tooltip(row: CatalogRow) -> str:
    if row.model_unknown:
        return "The reward model cannot judge this run (unlike its training data, or no instruction)"
    verdict = model_verdict(row)
    if verdict is None:
        return "The model's verdict is unknown (scored before thresholds were stored)"
    t = "?" if row.threshold is None else f"{row.threshold:.2f}"
    p = "?" if row.p_success is None else f"{row.p_success:.2f}"
    text = f"Model: {'success' if verdict else 'failure'} (p(success) {p}, threshold {t})"
    if row.success is not None and verdict != row.success:
        text += f"; the environment says {'success' if row.success else 'failure'}: they disagree"
    return text


def harm_verdict(row: CatalogRow) -> str | None:
    """The latest score's harm verdict in one word (``harmful``, ``safe``, ``unknown``); None without one."""
    if row.harm_unknown is None:
        return None
    if row.harm_unknown or row.model_harmful is None:
        return "unknown"
    return "harmful" if row.model_harmful else "safe"


def format_harm(row: CatalogRow) -> str:
    """p(harm) as a percentage with the harm verdict (``82% harmful``, ``4% safe``, ``unknown``); '' without one."""
    said = harm_verdict(row)
    if said is None:
        return ""
    if said == "unknown" or row.p_harm is None:
        return said
    return f"{row.p_harm:.0%} {said}"


def harm_tooltip(row: CatalogRow) -> str:
    said = harm_verdict(row)
    if said == "unknown":
        return "The harm judge cannot say whether this run did harm"
    p = "?" if row.p_harm is None else f"{row.p_harm:.2f}"
    return f"Harm judge: {said} (p(harm) {p}); the run's details are in the timeline's score line"


def format_outcome(row: CatalogRow) -> str:
    if row.error:
        return "load error"
    if row.success is None:
        return ""
    return "success" if row.success else "failure"


class LibraryModel(QAbstractTableModel):
    """Rows of a :class:`Catalog` query, read page by page.

    With a ``runner`` (:class:`gui_app.qt.workers.Runner`), a new query (scan progress, search, filter, sort) is
    read in a worker: the count, the first page and its label status come back and the model resets then, so the
    GUI thread never waits for the catalog to rebuild its 10,000-row snapshot after a scan wrote. A later page is
    read in a worker too, with its label status (one store read per page), when the view first asks for one of its
    rows: until it comes, its cells are blank, and then they change (``dataChanged``), so scrolling never waits
    for the catalog or the store. Moving the selection to a row not read yet (``j`` past the pages read, a key
    looked up) reads that page's rows at once (a slice of the catalog's cached result) and its label status in the
    worker. Without a runner (tests of the bare model) everything is read at once.

    Args:
        catalog: the catalog (None: an empty library).
        label_status: ``rows -> {key: status}`` from the annotation store, or None (blank column).
        runner: where to read new queries (None: read them in the calling thread).

    Attributes:
        pending: a query is being read in the worker (the rows shown are the previous query's).
    """

    query_changed = Signal()

    def __init__(self, catalog: Catalog | None = None, label_status: LabelStatusFn | None = None,
                 parent: QObject | None = None, runner: Runner | None = None):
        super().__init__(parent)
        self._runner = runner
        self._generation = 0
        self.pending = False
        self.tracked_key: str | None = None  # the selected key: the worker finds its row with each query
        self._tracked_row: tuple[str, int] | None = None  # (key, its row) as the last worker read found it
        self._catalog = catalog
        self._label_status = label_status
        self._label_search: LabelSearchFn | None = None
        self._label_refs: dict[str, list[str]] = {}  # what the label store matched for the search text
        self._text = ""
        self._filters: dict[str, Any] = {}
        self._order_by = "instruction"
        self._descending = False
        self._count = 0
        self._pages: OrderedDict[int, list[CatalogRow]] = OrderedDict()
        self._labels: dict[str, str] = {}
        self._ordered: list[CatalogRow] | None = None  # the whole result when sorted by label status
        self._loading: set[int] = set()  # pages of this query being read in a worker
        self._total: int | None = None  # rows in the whole catalog, as the last worker read found it
        self.query_error: str | None = None
        self._recount()

    # -- query state -------------------------------------------------------------------------------------

    @property
    def catalog(self) -> Catalog | None:
        return self._catalog

    def set_catalog(self, catalog: Catalog | None) -> None:
        self._catalog = catalog
        self.refresh()


    def set_library(self, catalog: Catalog | None, label_status: LabelStatusFn | None,
                    label_search: LabelSearchFn | None = None) -> None:
        """Show another catalog with its label status (one read, not two); ``label_search``: what search finds in
        its label store."""
        self._catalog, self._label_status, self._label_search = catalog, label_status, label_search
        self._label_refs = {}
        self.refresh()

    def set_query(self, text: str | None = None, filters: dict[str, Any] | None = None) -> None:
        """Change the search text and/or the filters (None leaves that part as it is)."""
        if text is not None:
            self._text = text
        if filters is not None:
            self._filters = {k: v for k, v in filters.items() if v is not None}
        self.refresh()

    @property
    def text(self) -> str:
        return self._text

    @property
    def filters(self) -> dict[str, Any]:
        """The filters of the rows shown: the user's, and the rows the label store matched for the search text."""
        return {**self._filters, "label_refs": dict(self._label_refs)} if self._label_refs else dict(self._filters)

    @property
    def order(self) -> tuple[str, bool]:
        return self._order_by, self._descending

    def refresh(self) -> None:
        """Re-read the count and drop cached rows (after a scan, a score, a new query)."""
        self._generation += 1
        self._loading.clear()
        if self._runner is None or self._catalog is None:
            self.pending = False
            self.beginResetModel()
            self._recount()
            self.endResetModel()
            self.query_changed.emit()
            return
        self.pending = True
        gen, catalog, label_status, search = self._generation, self._catalog, self._label_status, self._label_search
        query = (self._text, dict(self._filters), self._order_by, self._descending)
        tracked = self.tracked_key
        self._runner.submit("Reading the library",
                            lambda rep: _read_query(catalog, label_status, *query, tracked=tracked,
                                                    label_search=search),
                            on_result=lambda res: self._apply(gen, res, tracked),
                            on_error=lambda exc: self._apply(gen, QueryResult(error=str(exc)), None),
                            report_errors=False, show_progress=False)

    def _apply(self, generation: int, result: QueryResult, tracked: str | None) -> None:
        if generation != self._generation:
            return  # a newer query was asked for meanwhile
        self._tracked_row = (tracked, result.tracked_row) if tracked is not None else None
        self.pending = False
        self.beginResetModel()
        self._count, self.query_error, self._total = result.n_rows, result.error, result.total
        self._label_refs = dict(result.label_refs)
        self._pages.clear()
        self._loading.clear()
        self._labels = dict(result.labels)
        self._ordered = result.ordered
        if result.first_page:
            self._pages[0] = result.first_page
        self.endResetModel()
        self.query_changed.emit()

    def _recount(self) -> None:
        self._tracked_row = None
        self._total = None
        self._pages.clear()
        self._labels.clear()
        self._ordered = None
        self.query_error = None
        if self._catalog is None:
            self._count = 0
            return
        self._label_refs = _search_labels(self._label_search, self._text)
        try:
            self._count = self._catalog.count(self._text, self.filters)
            if self._order_by == LABEL_SORT:
                self._ordered, self._labels = label_ordered(self._catalog, self._label_status, self._text,
                                                             self.filters, self._descending)
        except RollscopeError as exc:  # a damaged catalog shows as a message, not a crash
            self._count, self.query_error = 0, str(exc)

    def refresh_labels(self, trajectory_id: str) -> None:
        """Re-read the label status of the rows of one trajectory (after a label was saved): in the worker when
        there is a runner."""
        label_status = self._label_status
        if label_status is None:
            return
        rows = [row for page in self._pages.values() for row in page if row.ref == trajectory_id]
        if not rows:
            return
        if self._runner is None:
            try:
                self._labels_read(self._generation, label_status(rows), rows)
            except RollscopeError:
                pass
            return
        gen = self._generation
        self._runner.submit(f"Reading the label status of {trajectory_id}", lambda _rep: label_status(rows),
                            on_result=lambda labels: self._labels_read(gen, labels, rows),
                            report_errors=False, show_progress=False)

    def _labels_read(self, generation: int, labels: dict[str, str], rows: list[CatalogRow]) -> None:
        if generation != self._generation:
            return
        keys = {row.key for row in rows}
        for key in keys:
            self._labels[key] = labels.get(key, "")
        for number, page in self._pages.items():
            for i, row in enumerate(page):
                if row.key in keys:
                    index = self.index(number * PAGE_SIZE + i, COL_LABEL)
                    self.dataChanged.emit(index, index)

    def total(self) -> int:
        """Rows in the whole catalog, whatever the query (0 when it cannot be read)."""
        if self._total is not None:
            return self._total  # read with the query, in the worker
        try:
            return len(self._catalog) if self._catalog is not None else 0
        except RollscopeError:
            return 0

    def sort(self, column: int, order: Qt.SortOrder = Qt.SortOrder.AscendingOrder) -> None:
        sort_by = COLUMNS[column][1] if 0 <= column < len(COLUMNS) else None
        if sort_by is None:
            return
        self._order_by, self._descending = sort_by, order == Qt.SortOrder.DescendingOrder
        if self._runner is not None:
            self.refresh()
            return
        self.layoutAboutToBeChanged.emit()
        self._pages.clear()
        self._labels.clear()
        self._ordered = None
        if sort_by == LABEL_SORT and self._catalog is not None:
            try:
                self._ordered, self._labels = label_ordered(self._catalog, self._label_status, self._text,
                                                             self.filters, self._descending)
            except RollscopeError as exc:
                self.query_error = str(exc)
                self._ordered = []
        self.layoutChanged.emit()
        self.query_changed.emit()

    # -- rows ----------------------------------------------------------------------------------------------

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else self._count

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def _keep(self, number: int, page: list[CatalogRow]) -> list[CatalogRow]:
        self._pages[number] = page
        self._pages.move_to_end(number)
        if len(self._pages) > MAX_PAGES:
            self._pages.popitem(last=False)
        return page

    def _cached(self, number: int) -> list[CatalogRow] | None:
        """Page ``number`` if it needs no read (read already, or a slice of the label-status order), else None."""
        page = self._pages.get(number)
        if page is not None:
            self._pages.move_to_end(number)
            return page
        if self._catalog is None:
            return []
        if self._ordered is not None:  # sorted by label status: the statuses of every row are known already
            return self._keep(number, self._ordered[number * PAGE_SIZE:(number + 1) * PAGE_SIZE])
        return None

    def _page(self, number: int) -> list[CatalogRow]:
        """Page ``number``, read now if it must be (the rows; their label status too without a runner)."""
        page = self._cached(number)
        if page is not None:
            return page
        result = _read_page(self._catalog, None if self._runner is not None else self._label_status,
                            (self._text, self.filters, self._order_by, self._descending), number)
        if result.error is not None:
            self.query_error = result.error
        self._labels.update(result.labels)
        self._keep(number, result.rows)
        if self._runner is not None and result.rows:
            self._request(number, result.rows)  # its label status, in the worker
        return result.rows

    def _request(self, number: int, rows: list[CatalogRow] | None = None) -> None:
        """Read page ``number`` (its rows, unless given, and their label status) in the worker; it is shown when
        it comes."""
        if self._runner is None or self._catalog is None or number in self._loading:
            return
        if rows is not None and self._label_status is None:
            return  # the rows are read and there is no status to read
        self._loading.add(number)
        gen, catalog, label_status = self._generation, self._catalog, self._label_status
        query = (self._text, self.filters, self._order_by, self._descending)
        self._runner.submit(f"Reading page {number + 1} of the library",
                            lambda _rep: _read_page(catalog, label_status, query, number, rows),
                            on_result=lambda res: self._page_read(gen, number, res),
                            on_error=lambda exc: self._page_read(gen, number, PageResult(error=str(exc))),
                            report_errors=False, show_progress=False)

    def _page_read(self, generation: int, number: int, result: PageResult) -> None:
        if generation != self._generation:
            return  # the model was reset meanwhile: the page belongs to another query
        self._loading.discard(number)
        if result.error is not None:
            self.query_error = result.error
        self._labels.update(result.labels)
        first = number * PAGE_SIZE
        rows = result.rows[:max(self._count - first, 0)]
        self._keep(number, rows)
        if rows:
            self.dataChanged.emit(self.index(first, 0), self.index(first + len(rows) - 1, len(COLUMNS) - 1))

    def row(self, r: int) -> CatalogRow | None:
        """The :class:`CatalogRow` at row ``r`` of the current order (read now if it must be), or None out of
        range."""
        if not 0 <= r < self._count:
            return None
        page = self._page(r // PAGE_SIZE)
        i = r % PAGE_SIZE
        return page[i] if i < len(page) else None

    def _shown_row(self, r: int) -> CatalogRow | None:
        """The row at ``r`` if it is read; else None, and (with a runner) its page is asked for."""
        if not 0 <= r < self._count:
            return None
        if self._runner is None:
            return self.row(r)
        page = self._cached(r // PAGE_SIZE)
        if page is None:
            self._request(r // PAGE_SIZE)
            return None
        i = r % PAGE_SIZE
        return page[i] if i < len(page) else None

    def key_at(self, r: int) -> str | None:
        row = self.row(r)
        return None if row is None else row.key

    def row_of_key(self, key: str, hint: int = -1) -> int:
        """The row showing ``key`` in the current order, or -1. Looks near ``hint`` first (and where the worker
        found the :attr:`tracked_key`), then page by page."""
        if self._tracked_row is not None and self._tracked_row[0] == key:
            if self._tracked_row[1] < 0:
                return -1  # the worker read the whole result: the key is not in it
            hint = self._tracked_row[1]
        if hint >= 0 and self.key_at(hint) == key:
            return hint
        for number, page in list(self._pages.items()):
            for i, row in enumerate(page):
                if row.key == key:
                    return number * PAGE_SIZE + i
        for number in range(math.ceil(self._count / PAGE_SIZE)):
            if number in self._pages:
                continue
            for i, row in enumerate(self._page(number)):
                if row.key == key:
                    return number * PAGE_SIZE + i
        return -1

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        row = self._shown_row(index.row())  # what the view paints: never a read in the GUI thread
        if row is None:
            return None
        col = index.column()
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(row, col)
        if role == RowRole:
            return row
        if role == KeyRole:
            return row.key
        if role == Qt.ItemDataRole.ToolTipRole:
            if row.error:
                return row.error
            if col == COL_P and (row.p_success is not None or row.model_unknown):
                return model_tooltip(row)
            if col == COL_HARM and row.harm_unknown is not None:
                return harm_tooltip(row)
            return row.instruction if col == COL_INSTRUCTION else row.key
        if role == Qt.ItemDataRole.ForegroundRole:
            if row.error:
                return _ERROR_BRUSH
            if col == COL_OUTCOME and row.success is not None:
                return _OK_BRUSH if row.success else _FAIL_BRUSH
            if col == COL_P:
                if row.model_unknown:
                    return _UNKNOWN_BRUSH
                verdict = model_verdict(row)
                if verdict is not None and row.success is not None and verdict != row.success:
                    return _DISAGREE_BRUSH
            if col == COL_HARM:
                said = harm_verdict(row)
                return _HARM_BRUSH if said == "harmful" else _UNKNOWN_BRUSH if said == "unknown" else None
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_STEPS, COL_DURATION, COL_P, COL_HARM):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        return None

    def _display(self, row: CatalogRow, col: int) -> str:
        if col == COL_INSTRUCTION:
            text = row.instruction or row.id
            return text if len(text) <= 200 else text[:199] + "…"
        if col == COL_TASK:
            return row.task or ""
        if col == COL_FORMAT:
            return row.format or ""
        if col == COL_STEPS:
            return "" if row.n_steps is None else str(row.n_steps)
        if col == COL_DURATION:
            return format_duration(row.duration)
        if col == COL_OUTCOME:
            return format_outcome(row)
        if col == COL_P:
            return format_model(row)
        if col == COL_HARM:
            return format_harm(row)
        if col == COL_LABEL:
            return self._labels.get(row.key, "")
        if col == COL_AGENT:
            return row.agent or ""
        if col == COL_DOMAIN:
            return row.domain or ""
        if col == COL_RUN_FOLDER:
            return row.run_folder or ""
        return ""

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation != Qt.Orientation.Horizontal or not 0 <= section < len(COLUMNS):
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            return COLUMNS[section][0]
        if role == Qt.ItemDataRole.ToolTipRole:
            return COLUMNS[section][2]
        return None


@dataclass(frozen=True)
class QueryResult:
    """What a worker reads for :meth:`LibraryModel.refresh`."""

    n_rows: int = 0  # rows the query selects
    first_page: list[CatalogRow] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)  # by key: of the first page (of every row when sorted by it)
    error: str | None = None
    tracked_row: int = -1  # the row of the tracked key, or -1
    ordered: list[CatalogRow] | None = None  # the whole ordered result when sorted by label status
    total: int | None = None  # rows in the whole catalog
    label_refs: dict[str, list[str]] = field(default_factory=dict)  # what the label store matched for the text


@dataclass(frozen=True)
class PageResult:
    """What a worker reads for one page of :class:`LibraryModel`."""

    rows: list[CatalogRow] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)
    error: str | None = None


def _status(label_status: LabelStatusFn | None, rows: list[CatalogRow]) -> dict[str, str]:
    if label_status is None or not rows:
        return {}
    try:
        return label_status(rows)
    except RollscopeError:
        return {}  # label status is decoration: a store problem must not hide the library


def _search_labels(label_search: LabelSearchFn | None, text: str) -> dict[str, list[str]]:
    """What the label store holds of ``text``'s words (nothing when it cannot be read: the catalog's own matches
    still show)."""
    if label_search is None or not text.strip():
        return {}
    try:
        return label_search(text)
    except RollscopeError:
        return {}


def _read_query(catalog: Catalog, label_status: LabelStatusFn | None, text: str, filters: dict[str, Any],
                order_by: str, descending: bool, tracked: str | None = None,
                label_search: LabelSearchFn | None = None) -> QueryResult:
    """The count, first page, its label status, the row of ``tracked`` and the catalog's size for a query: what a
    worker reads for :meth:`LibraryModel.refresh`. A catalog or store error comes back as the error text, never
    raised. The search text is looked for in the label store too (``label_search``)."""
    refs = _search_labels(label_search, text)
    if refs:
        filters = {**filters, "label_refs": refs}
    tracked_row = -1
    if order_by == LABEL_SORT:
        try:
            ordered, labels = label_ordered(catalog, label_status, text, filters, descending)
            total = len(catalog)
        except RollscopeError as exc:
            return QueryResult(error=str(exc))
        if tracked is not None:
            tracked_row = next((i for i, r in enumerate(ordered) if r.key == tracked), -1)
        return QueryResult(len(ordered), ordered[:PAGE_SIZE], labels, None, tracked_row, ordered, total, refs)
    try:
        count = catalog.count(text, filters)
        page = catalog.query(text, filters, order_by, descending, limit=PAGE_SIZE, offset=0)
        if tracked is not None:
            # The whole ordered result is the catalog's cached list (the page above was a slice of it).
            everything = catalog.query(text, filters, order_by, descending)
            tracked_row = next((i for i, r in enumerate(everything) if r.key == tracked), -1)
        total = len(catalog)
    except RollscopeError as exc:
        return QueryResult(error=str(exc))
    return QueryResult(count, page, _status(label_status, page), None, tracked_row, None, total, refs)


def _read_page(catalog: Catalog | None, label_status: LabelStatusFn | None,
               query: tuple[str, dict[str, Any], str, bool], number: int,
               rows: list[CatalogRow] | None = None) -> PageResult:
    """Page ``number`` of ``query`` (text, filters, order, descending): its rows (unless given) and their label
    status (one call of ``label_status`` for the page). A catalog error comes back as the error text."""
    if rows is None:
        if catalog is None:
            return PageResult()
        text, filters, order_by, descending = query
        try:
            rows = catalog.query(text, filters, order_by, descending, limit=PAGE_SIZE, offset=number * PAGE_SIZE)
        except RollscopeError as exc:
            return PageResult(error=str(exc))
    return PageResult(rows, _status(label_status, rows))


def header_width(table: QTableView, text: str) -> int:
    """The width a header section needs to show ``text`` whole, with room for the sort arrow and padding
    (narrower sections clip it: "Duratior", "nv outcom")."""
    header = table.horizontalHeader()
    return header.fontMetrics().horizontalAdvance(text) + 34


# Filter combos: (label, filter key, [(choice text, value)]); value None = no filter.
# The first choice of each (no filter) names the filter, short enough that the five fit the dock unclipped.
_OUTCOME_CHOICES = [("Outcome", None), ("Success", True), ("Failure", False), ("Unknown", "unknown")]
_SCORED_CHOICES = [("Scored?", None), ("Scored", True), ("Not scored", False)]
_ERROR_CHOICES = [("Errors?", None), ("Load errors", True), ("Loads fine", False)]
_COMBO_ROOM = 30  # a combo box's arrow and frame beside its text
_HARM_CHOICES = [("Harm?", None), ("Harmful", True), ("Safe", False), ("Harm unknown", "unknown"),
                 ("No harm verdict", "none")]
_FILTER_TIPS = ("Only this format", "Only this environment outcome", "Scored by the reward model or not",
                "Only rows that failed to load, or only those that load",
                "Only the runs the harm judge calls harmful (or safe, or cannot judge, or has not judged)")


class LibraryView(QWidget):
    """Search box, filters and the library table.

    Signals:
        trajectory_selected(str): the key of the row made current (by click, keyboard or j/k).
    """

    trajectory_selected = Signal(str)

    SEARCH_DEBOUNCE_MS = 150

    def __init__(self, model: LibraryModel, parent: QWidget | None = None):
        super().__init__(parent)
        self.model = model
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Search text, outcome, labels, notes…")
        self.search.setToolTip("Every word must match the instruction, task, agent, domain, run folder or id, the "
                               "outcome or the model's verdict (success, failure, unknown), or the run's labels, "
                               "verdict and notes (Ctrl+F)")
        self.search.setClearButtonEnabled(True)
        self.format_filter = QComboBox(self)
        self.outcome_filter = self._combo(_OUTCOME_CHOICES)
        self.scored_filter = self._combo(_SCORED_CHOICES)
        self.error_filter = self._combo(_ERROR_CHOICES)
        self.harm_filter = self._combo(_HARM_CHOICES)
        self.count_label = QLabel(self)
        self.table = QTableView(self)
        self.table.setModel(model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(False)
        self.table.setAlternatingRowColors(True)
        self.table.verticalHeader().setVisible(False)
        # Fixed row heights and no per-row sizing: the view never measures 10,000 rows.
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 8)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        header.setStretchLastSection(True)
        for col, width in ((COL_INSTRUCTION, 190), (COL_TASK, 100), (COL_FORMAT, 70), (COL_STEPS, 44),
                           (COL_DURATION, 56), (COL_OUTCOME, 74), (COL_P, 74), (COL_HARM, 84), (COL_LABEL, 80),
                           (COL_AGENT, 100),
                           (COL_DOMAIN, 90), (COL_RUN_FOLDER, 130)):
            self.table.setColumnWidth(col, max(width, header_width(self.table, COLUMNS[col][0])))
        self.table.setSortingEnabled(True)
        self.table.sortByColumn(COL_INSTRUCTION, Qt.SortOrder.AscendingOrder)

        # The filters: one row when the dock is wide enough for every combo's choices, else two (see
        # _place_filters); an empty second row takes no room.
        self._filter_rows = (QHBoxLayout(), QHBoxLayout())
        for w, tip in zip(self._filter_combos(), _FILTER_TIPS, strict=True):
            # As wide as their text when there is room, narrower (clipped) rather than forcing the window wider
            # than a small screen: a minimum width set overrides the combo box's text-wide minimum.
            w.setMinimumWidth(64)
            w.setToolTip(tip)
            self._filter_rows[0].addWidget(w)
        for row in self._filter_rows:
            row.addStretch(1)
        self._filters_per_row = len(self._filter_combos())
        top = QHBoxLayout()
        top.addWidget(self.search, 1)
        top.addWidget(self.count_label)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        for row in self._filter_rows:
            layout.addLayout(row)
        layout.addWidget(self.table)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(self.SEARCH_DEBOUNCE_MS)
        self._debounce.timeout.connect(self._apply_query)
        self.search.textChanged.connect(self._debounce.start)
        self.search.returnPressed.connect(self._apply_query)
        self.search.returnPressed.connect(lambda: self.table.setFocus())  # back to the keys (j/k, Space)
        for combo in self._filter_combos():
            combo.currentIndexChanged.connect(self._apply_query)
        self.table.selectionModel().currentRowChanged.connect(self._current_changed)
        model.modelReset.connect(self._after_reset)
        model.layoutChanged.connect(self._update_count)
        self._current_key: str | None = None
        self._emit_selection = True
        self.reload_formats()
        self._update_count()

    def follow(self, session: Session) -> None:
        """List whatever library ``session`` has open (the session is the one answer to what is open)."""
        session.library_changed.connect(self.show_library)
        self.show_library(session.library)

    def show_library(self, library: Library | None) -> None:
        """List ``library``'s catalog with the label status of its store (None: an empty list)."""
        if library is None:
            self.model.set_library(None, None)
        else:
            store = library.store
            self.model.set_library(library.catalog, store_label_status(store) if store is not None else None,
                                   store_label_search(store) if store is not None else None)
        self.reload_formats()

    def _filter_combos(self) -> tuple[QComboBox, ...]:
        return self.format_filter, self.outcome_filter, self.scored_filter, self.error_filter, self.harm_filter

    def filter_rows(self) -> int:
        """How many rows the filter combos take (1 or 2)."""
        return 1 if self._filters_per_row == len(self._filter_combos()) else 2

    def _place_filters(self) -> None:
        """The filter combos in one row when the dock is wide enough for each to show every choice whole, else in
        two: five in one row of a narrow dock (a 1366-pixel screen) clipped "Outcome" to "Outco"."""
        combos = self._filter_combos()
        fm = self.fontMetrics()
        need = sum(max(fm.horizontalAdvance(c.itemText(i)) for i in range(c.count())) + _COMBO_ROOM
                   for c in combos) + self._filter_rows[0].spacing() * len(combos) + 8
        per_row = len(combos) if self.width() >= need else -(-len(combos) // 2)
        if per_row == self._filters_per_row:
            return
        self._filters_per_row = per_row
        for combo in combos:
            for row in self._filter_rows:
                row.removeWidget(combo)
        for i, combo in enumerate(combos):
            row_i, at = divmod(i, per_row)
            self._filter_rows[row_i].insertWidget(at, combo)  # before the row's stretch

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._place_filters()

    def _combo(self, choices: list[tuple[str, Any]]) -> QComboBox:
        combo = QComboBox(self)
        for text, value in choices:
            combo.addItem(text, value)
        return combo

    # -- query -----------------------------------------------------------------------------------------------

    def reload_formats(self) -> None:
        """Refill the format filter from the catalog (after a scan), keeping the choice."""
        current = self.format_filter.currentData()
        self.format_filter.blockSignals(True)
        self.format_filter.clear()
        self.format_filter.addItem("Format", None)
        catalog = self.model.catalog
        try:
            formats = catalog.formats() if catalog is not None else []
        except RollscopeError:
            formats = []  # a damaged catalog: the count label says why (see _update_count)
        for fmt in formats:
            self.format_filter.addItem(fmt, fmt)
        i = self.format_filter.findData(current)
        self.format_filter.setCurrentIndex(max(i, 0))
        self.format_filter.blockSignals(False)
        self._place_filters()  # a longer format name may need the second row

    def current_filters(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.format_filter.currentData() is not None:
            out["format"] = self.format_filter.currentData()
        if self.outcome_filter.currentData() is not None:
            out["success"] = self.outcome_filter.currentData()
        if self.scored_filter.currentData() is not None:
            out["scored"] = self.scored_filter.currentData()
        if self.error_filter.currentData() is not None:
            out["has_error"] = self.error_filter.currentData()
        if self.harm_filter.currentData() is not None:
            out["harmful"] = self.harm_filter.currentData()
        return out

    def _apply_query(self) -> None:
        self._debounce.stop()
        self.model.set_query(self.search.text(), self.current_filters())

    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    def _update_count(self) -> None:
        total = self.model.total()
        shown = self.model.rowCount()
        self.count_label.setText(f"{shown:,} of {total:,}" if shown != total else f"{total:,} trajectories")
        if self.model.query_error:
            self.count_label.setText(self.model.query_error)

    def _after_reset(self) -> None:
        """Keep the current trajectory selected across a refresh without re-opening it."""
        self._update_count()
        if self._current_key is not None:
            r = self.model.row_of_key(self._current_key)
            if r >= 0:
                self._select_row(r, emit=False)

    # -- selection -------------------------------------------------------------------------------------------

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        key = self.model.key_at(current.row()) if current.isValid() else None
        if key is None:
            return
        changed = key != self._current_key
        self._current_key = key
        self.model.tracked_key = key
        if changed and self._emit_selection:
            self.trajectory_selected.emit(key)

    def _select_row(self, r: int, emit: bool = True) -> None:
        self._emit_selection = emit
        try:
            index = self.model.index(r, 0)
            self.table.selectionModel().setCurrentIndex(
                index, self.table.selectionModel().SelectionFlag.ClearAndSelect
                | self.table.selectionModel().SelectionFlag.Rows)
            self.table.scrollTo(index)
        finally:
            self._emit_selection = True

    def current_row(self) -> int:
        index = self.table.selectionModel().currentIndex()
        return index.row() if index.isValid() else -1

    def current_key(self) -> str | None:
        return self._current_key

    def select_key(self, key: str) -> bool:
        """Make ``key`` current (emits :attr:`trajectory_selected` if it changes). False when not shown."""
        r = self.model.row_of_key(key)
        if r < 0:
            return False
        self._select_row(r)
        return True

    def select_row(self, r: int) -> None:
        if 0 <= r < self.model.rowCount():
            self._select_row(r)

    def key_relative(self, delta: int) -> str | None:
        """The key ``delta`` rows from the current one in the current order (None past either end)."""
        r = self.current_row()
        if r < 0:
            return self.model.key_at(0) if delta > 0 else None
        return self.model.key_at(r + delta) if 0 <= r + delta < self.model.rowCount() else None

    def select_relative(self, delta: int) -> str | None:
        """Move the selection ``delta`` rows (j/k); returns the new key or None at an end."""
        r = self.current_row()
        target = 0 if r < 0 else r + delta
        if not 0 <= target < self.model.rowCount():
            return None
        self._select_row(target)
        return self.model.key_at(target)
