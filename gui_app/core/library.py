"""An opened library: the catalog and the annotation store of a folder, and the label status of its rows.

:func:`open_library` is what opening a folder (or one trajectory) means, for the app and any other front end: the
catalog that indexes it (inside the folder, or beside the settings when the folder is one trajectory or cannot be
written) and the store its labels go to. :func:`store_label_status` and :func:`label_order` are how the library
lists labelling progress: one status text per row, and an order by that progress (the catalog cannot sort by what
only the store knows).

Plain Python: the Qt session (:mod:`gui_app.qt.session`) holds the :class:`Library` that is open and tells the views.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_app.core.annotation import Annotation
from gui_app.core.catalog import Catalog, CatalogRow
from gui_app.core.errors import CatalogError, RollscopeError
from gui_app.core.settings import config_dir
from gui_app.core.store import AnnotationStore, open_store

LabelStatusFn = Callable[[Sequence[CatalogRow]], dict[str, str]]  # rows -> {key: status text}

_BULK_STATUS = 50  # more labelled ids than this in one call: read the whole store once instead of per id


@dataclass
class Library:
    """An opened library.

    Attributes:
        catalog: the index of its trajectories.
        root: what is scanned (the folder, or the one trajectory).
        store: where its labels are written; None when labels cannot be stored there (``store_error`` says why).
        notes: what the user should know about how it was opened.
        store_location: the label store asked for (a team's ``postgresql://`` URL or a SQLite file); None: the
            library's own file.
        store_error: why ``store`` is None (the app shows its labels read-only until :meth:`reopen_store` works).
    """

    catalog: Catalog
    root: Path
    store: AnnotationStore | None = None
    notes: list[str] = field(default_factory=list)
    store_location: str | None = None
    store_error: str | None = None
    _store_root: Path | None = None

    def reopen_store(self) -> AnnotationStore:
        """Open the label store again (a team server that was down at opening); the library keeps it.

        Raises:
            StoreError: it still cannot be opened (StoreUnavailable: its server is still out of reach).
        """
        if self.store is None:
            self.store = open_store(self.store_location, root=self._store_root)
            self.store_error = None
            # Labels keyed by format ids move to their library keys whenever the store opens, including a team
            # server that was down when the library opened (see gui_app.core.identity).
            self.notes += migrate_labels(self.store, self.catalog)
        return self.store

    def close(self) -> None:
        """Close the catalog and the store (nothing may use them afterwards)."""
        self.catalog.close()
        if self.store is not None:
            self.store.close()


def is_single_unit(root: Path) -> bool:
    """Whether a folder is itself one trajectory (native, OSWorld, ...) rather than a folder of them."""
    from gui_app.core.formats import detect

    try:
        return detect(root) is not None
    except (OSError, ValueError):
        return False


def catalog_for(path: str | Path) -> tuple[Catalog, Path]:
    """The catalog of a folder (kept inside it) or of a single trajectory (kept in the config folder), and the
    root to scan. A folder that cannot be written also gets its catalog in the config folder.

    Raises:
        CatalogError: not even the config folder's catalog can be opened.
    """
    from gui_app.core.formats import split_selector

    base, _ = split_selector(path)
    root = base.resolve()
    single = not root.is_dir() or is_single_unit(root)
    if not single:
        try:
            return Catalog.for_root(root), root
        except CatalogError:
            pass  # e.g. a read-only folder: keep its index beside the settings instead
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:16]
    # Library keys are relative to where the labels go: one trajectory labels into the folder holding it.
    return Catalog(config_dir() / "catalogs" / f"{digest}.sqlite", library_root=root.parent if single else root), \
        root


def open_library(path: str | Path, store: str | None = None) -> Library:
    """Open (create, migrate) the catalog and the annotation store of ``path``: file and network I/O, so the app
    calls it from a worker.

    One trajectory (a file, or a folder that is one run) labels into the folder holding it, so opening that folder
    as a library later shows the same labels; nothing is written inside the run itself. ``store`` names another
    label store: a team's server (``postgresql://USER@HOST:PORT/DB``; the catalog stays here, per machine) or a
    SQLite file. A store that cannot be opened (a server that is down) leaves the library viewable, its labels
    read-only, with a note saying why.

    Raises:
        CatalogError: the catalog cannot be opened.
    """
    catalog, root = catalog_for(path)
    single = root.is_file() or is_single_unit(root)
    library = Library(catalog, root, store_location=store or None, _store_root=root.parent if single else root)
    try:
        library.reopen_store()
    except RollscopeError as exc:  # labels are optional for viewing: say why and go on
        library.store_error = str(exc)
        library.notes.append(f"labels cannot be saved: {exc}")
    return library


def migrate_labels(store: AnnotationStore, catalog: Catalog) -> list[str]:
    """Move labels keyed by a format's own id to their library key (see :mod:`gui_app.core.identity`); the notes
    name the labels that could not be moved. Run when a library opens and after each scan (new rows)."""
    from gui_app.core.identity import migrate_store

    try:
        return migrate_store(store, catalog).notes()
    except RollscopeError as exc:
        return [f"labels not moved to the library's keys: {exc}"]


def store_label_status(store: AnnotationStore) -> LabelStatusFn:
    """The label status of library rows from an annotation store.

    Status: ``final: <verdict>`` once adjudicated, else ``<verdict>`` for one annotator or ``N annotators``;
    blank when unlabelled. The set of labelled ids is read once per call, then the annotations of those ids: one
    query each for a page, one query for all of them when many rows are asked for (sorting a whole library).

    Raises (from the returned function):
        StoreError: the store cannot be read.
    """

    def status(rows: Sequence[CatalogRow]) -> dict[str, str]:
        labelled = set(store.trajectory_ids())
        wanted = {row.ref or row.id for row in rows} & labelled  # labels are keyed by the library key
        by_id: dict[str, list[Annotation]] | None = None
        if len(wanted) > _BULK_STATUS:
            by_id = {}
            for a in store.annotations():
                if a.trajectory_id in wanted:
                    by_id.setdefault(a.trajectory_id, []).append(a)
        out: dict[str, str] = {}
        for row in rows:
            tid = row.ref or row.id
            if tid not in wanted:
                continue
            records = by_id.get(tid, []) if by_id is not None else store.annotations(tid)
            # A record with neither verdict nor labels is a trajectory merely opened in the label panel.
            anns = [a for a in records if a.verdict or a.labels]
            final = [a for a in anns if a.role == "adjudicator"]
            people = [a for a in anns if a.role != "adjudicator"]
            if final:
                out[row.key] = f"final: {final[0].verdict or 'labelled'}"
            elif len(people) == 1:
                out[row.key] = people[0].verdict or "labelled"
            elif people:
                out[row.key] = f"{len(people)} annotators"
        return out

    return status


def label_rank(status: str) -> int:
    """Labelling progress of a status text from :func:`store_label_status`: 0 unlabelled, 1 labelled by one
    annotator, 2 by several (awaiting adjudication), 3 adjudicated."""
    if not status:
        return 0
    if status.startswith("final:"):
        return 3
    return 2 if status.endswith(" annotators") else 1


def label_order(rows: Sequence[CatalogRow], labels: dict[str, str], descending: bool = False) -> list[CatalogRow]:
    """``rows`` ordered by label status: by :func:`label_rank` (ascending: unlabelled first, the work left to do),
    then by the status text (the verdicts group together); stable, so ties keep the order ``rows`` came in."""
    return sorted(rows, key=lambda r: (label_rank(labels.get(r.key, "")), labels.get(r.key, "").casefold()),
                  reverse=descending)


def label_ordered(catalog: Catalog, label_status: LabelStatusFn | None, text: str, filters: dict[str, Any],
                  descending: bool) -> tuple[list[CatalogRow], dict[str, str]]:
    """The whole filtered result (instruction order, then) ordered by label status, and every row's status. The
    status of the whole result is read in one go (see :func:`store_label_status`).

    Raises:
        CatalogError: the catalog cannot be read (a store that cannot be read leaves the instruction order).
    """
    rows = catalog.query(text, filters, "instruction")
    labels: dict[str, str] = {}
    if label_status is not None and rows:
        try:
            labels = label_status(rows)
        except RollscopeError:
            labels = {}  # label status is decoration: a store problem leaves the instruction order
    return label_order(rows, labels, descending), labels
