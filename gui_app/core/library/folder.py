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
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gui_app.core.store.record import Annotation
from gui_app.core.library.catalog import CATALOG_DIR, CATALOG_NAME, Catalog, CatalogRow
from gui_app.core.errors import CatalogError, RollscopeError
from gui_app.core.settings import config_dir
from gui_app.core.store.interface import AnnotationStore
from gui_app.core.store.backends import open_store
from gui_app.core.annotation.taxonomy import Taxonomy

LabelStatusFn = Callable[[Sequence[CatalogRow]], dict[str, str]]  # rows -> {key: status text}
LabelSearchFn = Callable[[str], dict[str, list[str]]]  # search text -> {word: library keys whose labels hold it}

_BULK_STATUS = 1000  # more rows than this in one call (a whole library sorted by status): read the whole store once


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
        tasks_roots: where its OSWorld runs' task configs are looked for (``rollscope open --tasks-root``), handed to
            every load of its runs; None: the user's default
            (:func:`gui_app.core.trajectory.formats.osworld.tasks_roots`).
    """

    catalog: Catalog
    root: Path
    store: AnnotationStore | None = None
    notes: list[str] = field(default_factory=list)
    store_location: str | None = None
    store_error: str | None = None
    tasks_roots: tuple[str, ...] | None = None
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
            # server that was down when the library opened (see gui_app.core.trajectory.identity).
            self.notes += migrate_labels(self.store, self.catalog)
        return self.store

    def close(self) -> None:
        """Close the catalog and the store (nothing may use them afterwards)."""
        self.catalog.close()
        if self.store is not None:
            self.store.close()


def is_single_unit(root: Path) -> bool:
    """Whether a folder is itself one trajectory (native, OSWorld, ...) rather than a folder of them."""
    from gui_app.core.trajectory.formats import detect

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
    from gui_app.core.trajectory.formats import split_selector

    base, _ = split_selector(path)
    root = base.resolve()
    single = not root.is_dir() or is_single_unit(root)
    if not single:
        try:
            return Catalog.for_root(root), root
        except CatalogError:
            pass  # e.g. a read-only folder: keep its index beside the settings instead
    # Library keys are relative to where the labels go: one trajectory labels into the folder holding it.
    return Catalog(settings_catalog_path(root), library_root=root.parent if single else root), root


def settings_catalog_path(root: Path) -> Path:
    """The catalog of ``root`` (resolved) kept beside the settings: a single trajectory's, or a read-only folder's."""
    digest = hashlib.sha1(str(root).encode()).hexdigest()[:16]
    return config_dir() / "catalogs" / f"{digest}.sqlite"


def _can_write(catalog: Path) -> bool:
    """Whether a catalog can be kept at ``catalog``: its folder (or, while it does not exist, the library folder) can
    be written, and so can the file when it exists. A read-only disk answers no as well (``access`` sees EROFS)."""
    folder = catalog.parent if catalog.parent.exists() else catalog.parent.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return False
    return not catalog.exists() or os.access(catalog, os.W_OK)


def library_catalog_path(root: str | Path, write: bool = False) -> Path:
    """The catalog file of the library folder ``root`` by the app's rule (:func:`catalog_for`), for the command-line
    tools: ``ROOT/.rollscope/catalog.sqlite``, or beside the settings when the folder cannot be written (a read-only
    disk, another user's folder), so that ``rollscope scan`` and the app keep one catalog.

    Args:
        write: the catalog is to be written (a scan): a read-only folder always gets the one beside the settings.
            Readers take that one when it exists, else an older one inside the folder.
    """
    own = Path(root) / CATALOG_DIR / CATALOG_NAME
    if _can_write(own):
        return own
    beside = settings_catalog_path(Path(root).resolve())
    return beside if write or readable_file(beside) or not readable_file(own) else own


def readable_file(path: Path) -> bool:
    """``path.is_file()``, False where it cannot be looked at (a settings folder this user may not enter)."""
    try:
        return path.is_file()
    except OSError:
        return False


def score_log_folder(catalog_path: str | Path | None) -> Path:
    """Where the log of a scoring batch is written: ``logs/`` in the library's ``.rollscope`` folder (beside its
    catalog), else ``logs/`` beside the settings (a catalog kept there, another file, or none)."""
    if catalog_path is not None and Path(catalog_path).parent.name == CATALOG_DIR:
        return Path(catalog_path).parent / "logs"
    return config_dir() / "logs"


def find_library_catalog(path: str | Path) -> Path | None:
    """The catalog of the library ``path`` lies in, when one was made: the nearest ``.rollscope/catalog.sqlite`` in
    ``path`` or a folder above it, else the one the app keeps beside the settings for that folder. None when there
    is none (nothing is created)."""
    from gui_app.core.trajectory.formats import split_selector

    base = Path(os.path.abspath(split_selector(str(path))[0]))
    for folder in [base, *base.parents]:
        candidate = folder / CATALOG_DIR / CATALOG_NAME
        if readable_file(candidate):
            return candidate
        beside = settings_catalog_path(folder.resolve())
        if readable_file(beside):
            return beside
    return None


def open_library_catalog(root: str | Path, write: bool = False) -> Catalog:
    """The catalog at :func:`library_catalog_path`, its library keys relative to ``root``.

    Raises:
        CatalogError: it cannot be opened or created.
    """
    return Catalog(library_catalog_path(root, write), library_root=root)


def open_library(path: str | Path, store: str | None = None,
                 tasks_roots: Sequence[str | Path] | None = None) -> Library:
    """Open (create, migrate) the catalog and the annotation store of ``path``: file and network I/O, so the app
    calls it from a worker.

    One trajectory (a file, or a folder that is one run) labels into the folder holding it, so opening that folder
    as a library later shows the same labels; nothing is written inside the run itself. ``store`` names another
    label store: a team's server (``postgresql://USER@HOST:PORT/DB``; the catalog stays here, per machine) or a
    SQLite file. A store that cannot be opened (a server that is down) leaves the library viewable, its labels
    read-only, with a note saying why. ``tasks_roots``: see :attr:`Library.tasks_roots`.

    Raises:
        CatalogError: the catalog cannot be opened.
    """
    catalog, root = catalog_for(path)
    single = root.is_file() or is_single_unit(root)
    library = Library(catalog, root, store_location=store or None, _store_root=root.parent if single else root,
                      tasks_roots=None if tasks_roots is None else tuple(map(str, tasks_roots)))
    try:
        library.reopen_store()
    except RollscopeError as exc:  # labels are optional for viewing: say why and go on
        library.store_error = str(exc)
        library.notes.append(f"labels cannot be saved: {exc}")
    return library


def migrate_labels(store: AnnotationStore, catalog: Catalog) -> list[str]:
    """Move labels keyed by a format's own id to their library key (see :mod:`gui_app.core.trajectory.identity`); the
    notes
    name the labels that could not be moved. Run when a library opens and after each scan (new rows)."""
    from gui_app.core.trajectory.identity import migrate_store

    try:
        return migrate_store(store, catalog).notes()
    except RollscopeError as exc:
        return [f"labels not moved to the library's keys: {exc}"]


def store_label_status(store: AnnotationStore) -> LabelStatusFn:
    """The label status of library rows from an annotation store.

    Status: ``final: <verdict>`` once adjudicated, else ``<verdict>`` for one annotator or ``N annotators``;
    blank when unlabelled. One store read per call, never one per row: the records of the rows' ids
    (:meth:`AnnotationStore.annotations_of`) for a page, the whole store once when more than
    :data:`_BULK_STATUS` rows are asked for (sorting a whole library).

    Raises (from the returned function):
        StoreError: the store cannot be read.
    """

    def status(rows: Sequence[CatalogRow]) -> dict[str, str]:
        wanted = {row.ref for row in rows}  # labels are keyed by the library key
        if not wanted:
            return {}
        found = store.annotations() if len(wanted) > _BULK_STATUS else store.annotations_of(wanted)
        by_id: dict[str, list[Annotation]] = {}
        for a in found:
            if a.trajectory_id in wanted:
                by_id.setdefault(a.trajectory_id, []).append(a)
        out: dict[str, str] = {}
        for row in rows:
            records = by_id.get(row.ref, [])
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


def store_label_search(store: AnnotationStore) -> LabelSearchFn:
    """What the library's search box finds in an annotation store: for each word of a search text, the library
    keys whose records (any annotator's) hold it in their verdict, labels (codes and names), root cause, notes,
    evidence, correction or step comments. The catalog takes the answer as its ``label_refs`` filter. One read of
    the store per search.

    Raises (from the returned function):
        StoreError: the store cannot be read.
    """

    def search(text: str) -> dict[str, list[str]]:
        words = sorted(set(text.lower().split()))
        if not words:
            return {}
        found: dict[str, set[str]] = {w: set() for w in words}
        taxonomies: dict[str, Taxonomy | None] = {}
        for record in store.annotations():
            said = _label_words(record, taxonomies)
            for w in words:
                if w in said:
                    found[w].add(record.trajectory_id)
        return {w: sorted(keys) for w, keys in found.items() if keys}

    return search


def _label_words(record: Annotation, taxonomies: dict[str, Taxonomy | None]) -> str:
    """A record's labelled content as one lower-cased text, with the names of its labels from their bundled
    taxonomy (read once per search into ``taxonomies``; a taxonomy not shipped here leaves the codes alone)."""
    from gui_app.core.annotation import taxonomy

    parts = [record.verdict, record.root_cause_module, record.root_cause_error_type, record.evidence,
             record.correction_guidance, record.notes, record.mistake_agent,
             *record.step_comments.values(), *(c.effect for c in record.cascading)]
    for label in record.labels:
        parts.append(label.replace("_", " ") + " " + label)
        name = label.split(":", 1)[0] if ":" in label else ""
        if name not in taxonomies:
            file = taxonomy.bundled().get(name)
            taxonomies[name] = taxonomy.load(file) if file is not None else None
        known = taxonomies[name]
        found = known.get(label) if known is not None else None
        if found is not None:
            parts.append(found.name)
    return " ".join(p for p in parts if p).lower()


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
