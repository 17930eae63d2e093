"""The annotation store: a narrow interface (:class:`AnnotationStore`), its SQL implementation, and the embedded
SQLite backend.

Every change is written at once, in its own transaction, with an audit row (who, when, field, old -> new), so
killing the app loses nothing. Writes are per field or per collection item (a label, a step comment, a cascading
step), each read-compare-write happening while the record is locked (SQLite: ``BEGIN IMMEDIATE``; PostgreSQL: the
record's row ``FOR UPDATE``): several app instances on one store never lose each other's updates. The schema comes
from numbered SQL files (``gui_app/core/migrations/store/``, and their PostgreSQL twins in ``store_postgresql/``),
applied by the one migration runner (:mod:`gui_app.core.db`, shared with the catalog). Every method raises domain
errors only (:class:`StoreError`, :class:`~gui_app.core.store.record.AnnotationError`), never a driver's own.

:class:`SqlAnnotationStore` holds every query once, written in the SQL both SQLite and PostgreSQL speak (``ON
CONFLICT``, ``RETURNING``, row values); a backend supplies connections, transactions and error mapping:
:class:`SqliteAnnotationStore` here (one file, WAL, the default), and
:class:`~gui_app.core.store.postgresql.PostgresAnnotationStore` for a team's server (``postgresql://...``).
:func:`open_store` picks one from what it is given.

Each thread gets its own connection: a worker waiting for another process's write lock never holds up a read in the
GUI thread (WAL readers do not wait for writers; PostgreSQL readers never do).

A SQLite store is created whole (built beside its final name, then linked into place), so a file at a store's path
that is not one (empty, not SQLite, another program's database) is refused rather than turned into a store. Commands
that only read (list, export) open a SQLite store read-only (:func:`open_store` with ``read_only=True``): a store on a
read-only disk or shared read-only can still be listed and exported.

Widgets and commands use only the methods of :class:`AnnotationStore`.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Hashable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

from gui_app.core import db
from gui_app.core.store.record import (
    COLLECTION_FIELDS, ROLES, SCALAR_FIELDS, VERDICT_FIELDS, Annotation, AnnotationError, AuditEntry, Cascade, Review,
    ScoreOverride, check_value, differing_fields, majority)
from gui_app.core.atomic import pid_alive
from gui_app.core.errors import RollscopeError

STORE_DIRNAME = ".rollscope"
_SQLITE_MAGIC = b"SQLite format 3\x00"
STORE_FILENAME = "labels.sqlite"

T = TypeVar("T")
Key = tuple[str, str, str]  # (trajectory_id, annotator, role)
# What an import merges: (record, the fields it brings) pairs, or a callable giving them afresh (a file streamed).
Patch = tuple[Annotation, Collection[str]]
Patches = Iterable[Patch] | Callable[[], Iterable[Patch]]
Assignment = tuple[int, str, str | None, str]  # (position, trajectory_id, key, annotator)
QueueEntry = tuple[int, str, str | None]  # (position, trajectory_id, key)
URL_SCHEMES = ("postgresql://", "postgres://")


class StoreError(RollscopeError):
    """The store cannot be opened, is of a newer schema, or a write failed after retries.

    Args:
        path: the store's file, or its server URL without the password.
        reason: what went wrong, in words.
    """

    def __init__(self, path: str | Path, reason: str):
        self.path, self.reason = str(path), reason
        super().__init__(f"{path}: {reason}")


class StoreUnavailable(StoreError):
    """The store's server cannot be reached (down, restarting, unreachable, or too slow to answer in time).

    Nothing was written. The app goes on read-only and tries again later; a command ends with this one line.
    """


def _remove_stale_builds(path: Path) -> None:
    """Delete what a creation killed half-way left beside ``path`` (``.NAME.new-PID-...`` and its ``-wal`` and
    ``-shm``), when that process is gone."""
    for leftover in path.parent.glob(f".{path.name}.new-*"):
        pid = leftover.name[len(path.name) + 6:].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            leftover.unlink(missing_ok=True)


def default_path(root: str | Path) -> Path:
    """Where a library's labels live: ``<root>/.rollscope/labels.sqlite``."""
    return Path(root) / STORE_DIRNAME / STORE_FILENAME


def is_url(location: str | Path | None) -> bool:
    """Whether ``location`` names a server store (``postgresql://...``) rather than a SQLite file."""
    return isinstance(location, str) and location.startswith(URL_SCHEMES)


def migrations(dialect: str = "sqlite") -> tuple[db.Migration, ...]:
    """The store's numbered migration files for ``dialect`` (``sqlite``: ``gui_app/core/migrations/store/``;
    ``postgresql``: ``store_postgresql/``), in order.

    Raises:
        StoreError: the files are not numbered 1..N without gaps.
    """
    folder = db.MIGRATIONS_ROOT / ("store" if dialect == "sqlite" else f"store_{dialect}")
    try:
        return db.load_migrations(folder)
    except db.MigrationError as exc:
        raise StoreError(folder, exc.reason) from exc


class AnnotationStore(ABC):
    """What the app, the CLI and the exports may ask of an annotation store. Nothing else touches storage."""

    # --- records ------------------------------------------------------------------------------
    @abstractmethod
    def get(self, trajectory_id: str, annotator: str, role: str = "annotator") -> Annotation | None:
        """One record, or None."""

    @abstractmethod
    def annotations(self, trajectory_id: str | None = None, annotator: str | None = None,
                    role: str | None = None) -> list[Annotation]:
        """Records matching the filters (all when none), ordered by trajectory then annotator."""

    def annotations_of(self, trajectory_ids: Collection[str]) -> list[Annotation]:
        """The records of these trajectories, ordered by trajectory then annotator: what the library shows of a
        page of rows, in one read (a backend overrides this loop with one query)."""
        return [a for tid in sorted(set(trajectory_ids)) for a in self.annotations(tid)]

    def iter_annotations(self, batch: int = 5000) -> Iterator[list[Annotation]]:
        """Every record, ``batch`` at a time (exports of large stores keep memory flat)."""
        recs = self.annotations()
        for i in range(0, len(recs), batch):
            yield recs[i:i + batch]

    @abstractmethod
    def set_field(self, trajectory_id: str, annotator: str, field: str, value: Any, *, actor: str | None = None,
                  role: str = "annotator") -> bool:
        """Set one scalar field (see :data:`SCALAR_FIELDS`); returns whether it changed."""

    @abstractmethod
    def set_label(self, trajectory_id: str, annotator: str, label: str, present: bool, *,
                  actor: str | None = None, role: str = "annotator") -> bool:
        """Add or remove one taxonomy label; returns whether it changed."""

    @abstractmethod
    def set_harm_type(self, trajectory_id: str, annotator: str, harm_type: str, present: bool, *,
                      actor: str | None = None, role: str = "annotator") -> bool:
        """Add or remove one harm type (a label of the ``harm`` taxonomy, ``harm:<code>``); returns whether it
        changed."""

    @abstractmethod
    def set_step_comment(self, trajectory_id: str, annotator: str, step: int, comment: str | None, *,
                         actor: str | None = None, role: str = "annotator") -> bool:
        """Set (or clear with None/empty) the comment on one step; returns whether it changed."""

    @abstractmethod
    def set_cascade(self, trajectory_id: str, annotator: str, step: int, effect: str | None, *,
                    actor: str | None = None, role: str = "annotator") -> bool:
        """Mark ``step`` as affected by the root cause with ``effect`` (None removes it)."""

    @abstractmethod
    def save(self, annotation: Annotation, *, actor: str | None = None) -> int:
        """Write a whole record as a set of field changes (only what differs); returns the number of changes."""

    def save_many(self, annotations: Iterable[Annotation], *, actor: str | None = None,
                  progress: Callable[[int], None] | None = None) -> int:
        """Save many records (imports); returns the number of field changes."""
        n = 0
        for a in annotations:
            n += self.save(a, actor=actor)
            if progress is not None:
                progress(1)
        return n

    def count(self) -> int:
        """Number of records (what an export will go through, for its progress bar)."""
        return len(self.annotations())

    @abstractmethod
    def merge(self, patches: Patches, *, actor: str | None = None,
              progress: Callable[[int], None] | None = None) -> int:
        """Write the named fields of each record over the stored one, all in one transaction (imports).

        Each patch is a record and the fields it brings (:data:`SCALAR_FIELDS` names and ``labels``, ``cascading``,
        ``step_comments``, ``harm_types``); the other fields of the stored record stay as they are *when the write
        happens*, so a change someone made since the caller read the store is never reverted. All patches land or none
        does. ``patches`` may be a callable returning them: it is called inside the transaction (again if the
        transaction is run again), so a large file can be read as it is written, and an error it raises while reading (a
        bad row) leaves the store unchanged.

        Returns:
            the number of field changes.
        """

    @abstractmethod
    def delete(self, trajectory_id: str, annotator: str, role: str = "annotator", *,
               actor: str | None = None) -> bool:
        """Remove a record (audited)."""

    # --- history, overrides, review -------------------------------------------------------------
    @abstractmethod
    def audit(self, trajectory_id: str | None = None, annotator: str | None = None) -> list[AuditEntry]:
        """Changes, oldest first."""

    @abstractmethod
    def override_score(self, trajectory_id: str, actor: str, success: bool | None, reason: str, *,
                       score: float | None = None, previous_success: bool | None = None,
                       previous_score: float | None = None) -> ScoreOverride:
        """Record a human override of the automatic outcome (``reason`` is required)."""

    @abstractmethod
    def overrides(self, trajectory_id: str | None = None) -> list[ScoreOverride]:
        """Score overrides, oldest first."""

    # --- queues -------------------------------------------------------------------------------
    @abstractmethod
    def save_queue(self, name: str, assignments: list[Assignment], k: int, spec: dict[str, Any] | None = None,
                   items: Sequence[QueueEntry] | None = None) -> None:
        """Replace queue ``name`` with ``assignments`` [(position, trajectory_id, key, annotator)]; its items are
        ``items`` [(position, trajectory_id, key)], else those the assignments name. Items without assignments are
        claimed later (:meth:`claim`)."""

    @abstractmethod
    def queue_assignments(self, name: str, annotator: str | None = None) -> list[Assignment]:
        """A queue's assignments (position order)."""

    @abstractmethod
    def queue_items(self, name: str) -> list[QueueEntry]:
        """A queue's items (position order), assigned or not."""

    @abstractmethod
    def claim(self, name: str, annotator: str) -> Assignment | None:
        """The annotator's next item of queue ``name``, taken atomically: the first of their assignments still
        without a verdict (the queue's ``spec["done"]``: ``verdict``, or ``harm_verdict`` for a harm queue), else
        (in a queue open to claims) the first item with one of its ``k`` slots free that they do not have yet, now
        assigned to them. None when there is nothing left for them.

        Any number of annotators on any number of machines may claim at once: no slot is ever taken twice and no
        item gets more than ``k`` annotators."""

    @abstractmethod
    def queues(self) -> list[dict[str, Any]]:
        """Queues: name, created_at, k, spec."""

    @abstractmethod
    def rekey(self, mapping: dict[str, str], *, actor: str) -> tuple[dict[str, str], list[str]]:
        """Move everything stored under trajectory id ``old`` to ``new`` for each pair of ``mapping`` (records,
        labels, harm types, comments, cascades, audit trail, overrides, queue items), each move with an audit
        entry.

        A move whose target already holds a record of the same annotator and role, or the same queue item, is
        not made (nothing is merged or dropped): it is returned among the conflicts.

        Returns:
            (the moves made, the old ids left in place because of a conflict).
        """

    # --- derived (implemented once, over the methods above) -------------------------------------
    def trajectory_ids(self) -> list[str]:
        """Trajectories with at least one record."""
        return sorted({a.trajectory_id for a in self.annotations()})

    def referenced_ids(self) -> list[str]:
        """Every trajectory id anything is stored under: records, overrides and queue items."""
        ids = {a.trajectory_id for a in self.annotations()} | {o.trajectory_id for o in self.overrides()}
        for q in self.queues():
            ids |= {t for _, t, _ in self.queue_items(q["name"])}  # an open queue's unclaimed items too
            ids |= {t for _, t, _, _ in self.queue_assignments(q["name"])}
        return sorted(ids)

    def annotators(self) -> list[str]:
        """Annotators with at least one (role ``annotator``) record."""
        return sorted({a.annotator for a in self.annotations(role="annotator")})

    def toggle_label(self, trajectory_id: str, annotator: str, label: str, *, actor: str | None = None,
                     role: str = "annotator") -> bool:
        """Flip one label; returns whether it is now present."""
        rec = self.get(trajectory_id, annotator, role)
        present = rec is None or label not in rec.labels
        self.set_label(trajectory_id, annotator, label, present, actor=actor, role=role)
        return present

    def final(self, trajectory_id: str) -> Annotation | None:
        """The adjudicated record (latest adjudicator's), or None."""
        recs = self.annotations(trajectory_id, role="adjudicator")
        return max(recs, key=lambda a: a.updated_at or 0.0) if recs else None

    def adjudicate(self, trajectory_id: str, adjudicator: str, source: Annotation | str) -> Annotation:
        """Store the final label: a copy of ``source`` (a record, or an annotator's name) under role
        ``adjudicator`` for ``adjudicator``."""
        if isinstance(source, str):
            rec = self.get(trajectory_id, source)
            if rec is None:
                raise AnnotationError(trajectory_id, "annotator", f"no record by {source!r} to adjudicate from")
            source = rec
        final = Annotation(**{**source.__dict__, "trajectory_id": trajectory_id, "annotator": adjudicator,
                              "role": "adjudicator", "created_at": None, "updated_at": None, "version": 0})
        self.save(final, actor=adjudicator)
        got = self.get(trajectory_id, adjudicator, "adjudicator")
        assert got is not None
        return got

    def review(self, trajectory_id: str) -> Review:
        """Each annotator's labels side by side, the final label, differing fields and overrides."""
        recs = [a for a in self.annotations(trajectory_id, role="annotator") if not a.is_empty()]
        return Review(trajectory_id, {a.annotator: a for a in recs}, self.final(trajectory_id),
                      differing_fields(recs), self.overrides(trajectory_id))

    def final_labels(self) -> dict[str, dict[str, Any]]:
        """Human labels for the dataset builder: ``{trajectory_id: {verdict, root_cause_step, labels, harm_verdict,
        harm_category, harm_types, first_harmful_step, source, n_annotators}}``, the adjudicated record first, else
        the majority of annotators (:func:`~gui_app.core.store.record.majority`)."""
        by_traj: dict[str, list[Annotation]] = {}
        finals: dict[str, Annotation] = {}
        for a in self.annotations():
            if a.role == "adjudicator":
                if a.trajectory_id not in finals or (a.updated_at or 0) > (finals[a.trajectory_id].updated_at or 0):
                    finals[a.trajectory_id] = a
            else:
                by_traj.setdefault(a.trajectory_id, []).append(a)
        out: dict[str, dict[str, Any]] = {}
        for tid in sorted(set(by_traj) | set(finals)):
            recs = by_traj.get(tid, [])
            if tid in finals:
                f = finals[tid]
                out[tid] = {"verdict": f.verdict, "root_cause_step": f.root_cause_step, "labels": sorted(f.labels),
                            "harm_verdict": f.harm_verdict, "harm_category": f.harm_category,
                            "harm_types": sorted(f.harm_types), "first_harmful_step": f.first_harmful_step,
                            "source": "adjudicated", "n_annotators": len(recs)}
            else:
                out[tid] = {**majority(recs), "source": "majority", "n_annotators": len(recs)}
        return out

    def close(self) -> None:
        """Release resources."""

    def ping(self) -> None:
        """Check that the store answers (the app's read-only mode asks this before it writes again).

        Raises:
            StoreError: it does not (:class:`StoreUnavailable` when its server cannot be reached).
        """
        self.queues()


class Cursor(Protocol):
    """What the shared queries need of a backend's cursor: DB-API ``execute`` with ``?`` placeholders."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, seq: Iterable[Sequence[Any]], /) -> Any: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def fetchmany(self, size: int, /) -> list[Any]: ...


# Every table of the store, in an order that copies foreign keys before what refers to them, with its columns as a
# copy moves them (ids included: an audit entry or an override keeps its number on the other backend).
TABLES: dict[str, tuple[str, ...]] = {
    "annotations": ("trajectory_id", "annotator", "role", *SCALAR_FIELDS, "created_at", "updated_at", "version"),
    "annotation_labels": ("trajectory_id", "annotator", "role", "label"),
    "annotation_cascading": ("trajectory_id", "annotator", "role", "step", "effect"),
    "annotation_step_comments": ("trajectory_id", "annotator", "role", "step", "comment"),
    "annotation_harm_types": ("trajectory_id", "annotator", "role", "harm_type"),
    "audit": ("id", "trajectory_id", "annotator", "role", "actor", "at", "field", "old", "new"),
    "score_overrides": ("id", "trajectory_id", "actor", "at", "success", "score", "previous_success",
                        "previous_score", "reason"),
    "queues": ("name", "created_at", "k", "spec"),
    "queue_items": ("queue", "position", "trajectory_id", "key"),
    "queue_assignments": ("queue", "position", "trajectory_id", "key", "annotator", "slot"),
}
_ORDER = {"annotations": "trajectory_id, annotator, role", "annotation_labels": "trajectory_id, annotator, role, label",
          "annotation_cascading": "trajectory_id, annotator, role, step",
          "annotation_step_comments": "trajectory_id, annotator, role, step",
          "annotation_harm_types": "trajectory_id, annotator, role, harm_type", "audit": "id", "score_overrides": "id",
          "queues": "name", "queue_items": "queue, trajectory_id",
          "queue_assignments": "queue, trajectory_id, annotator"}
_WHERE_KEY = "WHERE trajectory_id = ? AND annotator = ? AND role = ?"
# The per-step collections: (field, table, text column).
_STEP_TABLES = (("cascading", "annotation_cascading", "effect"),
                ("step_comments", "annotation_step_comments", "comment"))
# The sets of strings a record holds, one row an item: (field, table, column, what one item is called in errors).
_SET_TABLES = (("labels", "annotation_labels", "label", "a label"),
               ("harm_types", "annotation_harm_types", "harm_type", "a harm type"))
_SET_TABLE = {f: (t, c, what) for f, t, c, what in _SET_TABLES}
# Every per-record collection table (what a record's deletion empties too).
_COLLECTION_TABLES = ("annotation_labels", "annotation_cascading", "annotation_step_comments", "annotation_harm_types")


_encode = json.JSONEncoder(ensure_ascii=False).encode
_encode_str = json.encoder.encode_basestring  # what that encoder does with a str, without its dispatch
_JSON_CONSTANTS = {None: "null", True: "true", False: "false"}


def _json(value: Any) -> str:
    """An audit entry's old or new value as JSON text, as ``json.dumps(value, ensure_ascii=False)`` writes it.

    A batched write audits millions of values: the common ones skip the encoder's dispatch (``json.dumps`` with an
    argument even builds a new encoder per call)."""
    if value is None or value is True or value is False:
        return _JSON_CONSTANTS[value]
    kind = type(value)
    if kind is str:
        return _encode_str(value)
    if kind is int or (kind is float and value - value == 0):  # finite: the encoder writes repr()
        return repr(value)
    return _encode(value)


# Rows one INSERT statement of a batched write carries: up to 100 x 22 parameters, inside every SQLite build's limit
# (999 before 3.32) and PostgreSQL's (65,535). One statement for many rows runs about a third faster than one per row
# (SQLite also updates an AUTOINCREMENT counter once per statement).
_ROWS_PER_INSERT = 100


def _insert(cur: Cursor, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Insert ``rows`` into ``table``, :data:`_ROWS_PER_INSERT` to a statement, in the order given."""
    per = max(1, min(_ROWS_PER_INSERT, 900 // len(columns)))
    one = "(" + ", ".join("?" * len(columns)) + ")"
    head = f"INSERT INTO {table} ({', '.join(columns)}) VALUES "
    whole = len(rows) - len(rows) % per
    if whole:
        cur.executemany(head + ", ".join([one] * per),
                        [list(itertools.chain.from_iterable(rows[i:i + per])) for i in range(0, whole, per)])
    if whole < len(rows):
        cur.executemany(head + one, rows[whole:])


def _flag(value: bool | None) -> int | None:
    """A yes/no/unknown as the 0/1/NULL integer both backends store."""
    return None if value is None else int(bool(value))


@dataclass(frozen=True)
class _Plan:
    """What a save writes of each record, from the fields it brings (None: all of them)."""

    scalars: tuple[str, ...]
    sets: tuple[str, ...]  # "labels", "harm_types"
    steps: tuple[str, ...]  # "cascading", "step_comments"
    columns: tuple[tuple[str, int], ...]  # each scalar written, with its place in a stored row of SCALAR_FIELDS

    @classmethod
    def of(cls, key: Key, only: Collection[str] | None) -> _Plan:
        """Raises: AnnotationError: ``only`` names a field records do not have."""
        if only is not None and set(only) - set(SCALAR_FIELDS) - set(COLLECTION_FIELDS):
            unknown = ", ".join(sorted(set(only) - set(SCALAR_FIELDS) - set(COLLECTION_FIELDS)))
            raise AnnotationError(key[0], unknown, "unknown field")

        def writes(name: str) -> bool:
            return only is None or name in only

        scalars = tuple(n for n in SCALAR_FIELDS if writes(n))
        return cls(scalars, tuple(f for f, *_ in _SET_TABLES if writes(f)),
                   tuple(f for f, _t, _c in _STEP_TABLES if writes(f)),
                   tuple((n, list(SCALAR_FIELDS).index(n)) for n in scalars))


class SqlAnnotationStore(AnnotationStore):
    """The store's queries, once, over a SQL backend.

    A backend implements the hooks: :meth:`_write` (run ``fn(cursor)`` in a transaction that holds the record
    locks it takes, retrying on contention), :meth:`_read`, :meth:`_snapshot` (several reads that see one moment),
    :meth:`_pages` (a long snapshot on a connection of its own) and :meth:`close`. Queries use ``?`` placeholders
    and the SQL both dialects share; :attr:`FOR_UPDATE` is what a backend appends to lock a row it reads
    (empty for SQLite, whose write transaction already holds the whole file).

    Attributes:
        location: the file, or the server URL without its password, for messages.
    """

    FOR_UPDATE = ""
    read_only = False  # opened for reading only (a SQLite file, see SqliteAnnotationStore); writes raise
    location: str

    # --- backend hooks -------------------------------------------------------------------------
    @abstractmethod
    def _write(self, fn: Callable[[Cursor], T], *, idempotent: bool = True) -> T:
        """``fn(cursor)`` in one write transaction; its result. ``idempotent`` False: a change that must not be
        applied twice (a new override row) is not run again when the connection broke while committing."""

    @abstractmethod
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """One query's rows."""

    @abstractmethod
    def _snapshot(self) -> AbstractContextManager[Cursor]:
        """A cursor whose reads all see one committed moment."""

    @abstractmethod
    def _pages(self) -> AbstractContextManager[Cursor]:
        """Like :meth:`_snapshot`, on a connection of its own (a caller that works between pages holds up no
        writer of this process)."""

    def _identity_written(self, cur: Cursor, table: str) -> None:
        """After rows with explicit ids were copied into ``table``: the next id follows them (PostgreSQL)."""

    @property
    @abstractmethod
    def schema_version(self) -> int:
        """The schema version of the database."""

    # --- record locking and audit ----------------------------------------------------------------
    @staticmethod
    def _check_key(key: Key) -> None:
        if key[2] not in ROLES:
            raise AnnotationError(key[0], "role", f"must be one of {', '.join(ROLES)}, got {key[2]!r}")
        if not key[0] or not key[1]:
            raise AnnotationError(key[0], "trajectory_id" if not key[0] else "annotator", "must be non-empty")

    def _ensure(self, cur: Cursor, key: Key, now: float) -> None:
        """Create the record when missing and lock it until the transaction ends."""
        self._check_key(key)
        cur.execute("INSERT INTO annotations (trajectory_id, annotator, role, created_at, updated_at) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", (*key, now, now))
        if self.FOR_UPDATE:
            cur.execute(f"SELECT 1 FROM annotations {_WHERE_KEY}{self.FOR_UPDATE}", key)

    @staticmethod
    def _changed(cur: Cursor, key: Key, actor: str, now: float, field: str, old: Any, new: Any) -> None:
        cur.execute(f"UPDATE annotations SET version = version + 1, updated_at = ? {_WHERE_KEY}", (now, *key))
        cur.execute("INSERT INTO audit (trajectory_id, annotator, role, actor, at, field, old, new) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (*key, actor, now, field, json.dumps(old, ensure_ascii=False),
                     json.dumps(new, ensure_ascii=False)))

    # field-level operations on an open transaction, shared by the single-field methods and save()
    def _op_field(self, cur: Cursor, key: Key, actor: str, now: float, field: str, value: Any) -> bool:
        value = check_value(key[0], field, value)
        self._ensure(cur, key, now)
        old = cur.execute(f"SELECT {field} FROM annotations {_WHERE_KEY}", key).fetchone()[0]
        if old == value:
            return False
        cur.execute(f"UPDATE annotations SET {field} = ? {_WHERE_KEY}", (value, *key))
        self._changed(cur, key, actor, now, field, old, value)
        return True

    @staticmethod
    def _check_member(trajectory_id: str, field: str, item: Any) -> None:
        if not isinstance(item, str) or not item.strip():
            raise AnnotationError(trajectory_id, field, f"{_SET_TABLE[field][2]} is a non-empty string, got {item!r}")

    def _op_member(self, cur: Cursor, key: Key, actor: str, now: float, field: str, item: str,
                   present: bool) -> bool:
        """Add or remove ``item`` of the set ``field`` (``labels``, ``harm_types``), audited as ``field[item]``."""
        self._check_member(key[0], field, item)
        table, column, _what = _SET_TABLE[field]
        self._ensure(cur, key, now)
        if present:
            cur.execute(f"INSERT INTO {table} (trajectory_id, annotator, role, {column}) VALUES (?, ?, ?, ?) "
                        "ON CONFLICT DO NOTHING", (*key, item))
        else:
            cur.execute(f"DELETE FROM {table} {_WHERE_KEY} AND {column} = ?", (*key, item))
        if cur.rowcount != 1:
            return False
        self._changed(cur, key, actor, now, f"{field}[{item}]", not present, present)
        return True

    def _op_step_text(self, cur: Cursor, key: Key, actor: str, now: float, table: str, column: str,
                      field: str, step: int, text: str | None) -> bool:
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise AnnotationError(key[0], field, f"a step index is an int >= 0, got {step!r}")
        self._ensure(cur, key, now)
        row = cur.execute(f"SELECT {column} FROM {table} {_WHERE_KEY} AND step = ?", (*key, step)).fetchone()
        old = None if row is None else row[0]
        if text is None or (field == "step_comments" and not text.strip()):
            text = None
        if old == text:
            return False
        if text is None:
            cur.execute(f"DELETE FROM {table} {_WHERE_KEY} AND step = ?", (*key, step))
        else:
            cur.execute(f"INSERT INTO {table} (trajectory_id, annotator, role, step, {column}) VALUES (?, ?, ?, ?, ?) "
                        f"ON CONFLICT (trajectory_id, annotator, role, step) "
                        f"DO UPDATE SET {column} = excluded.{column}",
                        (*key, step, text))
        self._changed(cur, key, actor, now, f"{field}[{step}]", old, text)
        return True

    # --- AnnotationStore: writes ----------------------------------------------------------------
    def set_field(self, trajectory_id: str, annotator: str, field: str, value: Any, *, actor: str | None = None,
                  role: str = "annotator") -> bool:
        key = (trajectory_id, annotator, role)
        return self._write(lambda cur: self._op_field(cur, key, actor or annotator, time.time(), field, value))

    def set_label(self, trajectory_id: str, annotator: str, label: str, present: bool, *,
                  actor: str | None = None, role: str = "annotator") -> bool:
        key = (trajectory_id, annotator, role)
        return self._write(lambda cur: self._op_member(cur, key, actor or annotator, time.time(), "labels", label,
                                                       present))

    def set_harm_type(self, trajectory_id: str, annotator: str, harm_type: str, present: bool, *,
                      actor: str | None = None, role: str = "annotator") -> bool:
        key = (trajectory_id, annotator, role)
        return self._write(lambda cur: self._op_member(cur, key, actor or annotator, time.time(), "harm_types",
                                                       harm_type, present))

    def toggle_label(self, trajectory_id: str, annotator: str, label: str, *, actor: str | None = None,
                     role: str = "annotator") -> bool:
        key = (trajectory_id, annotator, role)

        def op(cur: Cursor) -> bool:  # lock, then read and flip, inside one transaction
            now = time.time()
            self._ensure(cur, key, now)
            here = cur.execute(f"SELECT 1 FROM annotation_labels {_WHERE_KEY} AND label = ?",
                               (*key, label)).fetchone() is not None
            self._op_member(cur, key, actor or annotator, now, "labels", label, not here)
            return not here

        return self._write(op)

    def set_step_comment(self, trajectory_id: str, annotator: str, step: int, comment: str | None, *,
                         actor: str | None = None, role: str = "annotator") -> bool:
        key = (trajectory_id, annotator, role)
        return self._write(lambda cur: self._op_step_text(cur, key, actor or annotator, time.time(),
                                                          "annotation_step_comments", "comment", "step_comments",
                                                          step, comment))

    def set_cascade(self, trajectory_id: str, annotator: str, step: int, effect: str | None, *,
                    actor: str | None = None, role: str = "annotator") -> bool:
        key = (trajectory_id, annotator, role)
        return self._write(lambda cur: self._op_step_text(cur, key, actor or annotator, time.time(),
                                                          "annotation_cascading", "effect", "cascading", step,
                                                          effect))

    # Records one batched read names (three parameters each: far inside every SQLite build's and psycopg's limits).
    _KEYS_PER_QUERY = 300

    def _stored(self, cur: Cursor, table: str, columns: Sequence[str], keys: Sequence[Key]) -> list[tuple[Any, ...]]:
        """The rows of ``table`` (key columns, then ``columns``) of the records ``keys``, a few queries in all.

        The keys are joined as a ``WITH`` table of values: both dialects then look each one up by the primary key
        (SQLite scans the whole table for a row-value ``IN`` list)."""
        out: list[tuple[Any, ...]] = []
        cols = ", ".join(f"t.{c}" for c in ("trajectory_id", "annotator", "role", *columns))
        for i in range(0, len(keys), self._KEYS_PER_QUERY):
            part = keys[i:i + self._KEYS_PER_QUERY]
            values = ", ".join(["(?, ?, ?)"] * len(part))
            out += cur.execute(f"WITH k (trajectory_id, annotator, role) AS (VALUES {values}) SELECT {cols} "
                               f"FROM k JOIN {table} t ON t.trajectory_id = k.trajectory_id "
                               "AND t.annotator = k.annotator AND t.role = k.role",
                               [v for key in part for v in key]).fetchall()
        return out

    def _op_save_many(self, cur: Cursor, patches: Sequence[tuple[Annotation, Collection[str] | None]],
                      actor: str | None, now: float) -> int:
        """Write the differences between each record of ``patches`` and the stored one, field by field (each
        audited, by ``actor`` or the record's annotator); a patch's fields, when not None, are the only ones
        written (the rest of the stored record is left as it is). Returns the number of changes.

        The records are created when missing, locked and read inside the caller's write transaction, so every diff
        is exact. A batch costs a few statements per table (``executemany``), not a few per field: an import of a
        million rows is bound by parsing, not by the database. A record listed twice is written twice, in order,
        as two saves would be."""
        n, group, seen = 0, list[tuple[Annotation, Collection[str] | None]](), set[Key]()
        for ann, only in patches:
            key = (ann.trajectory_id, ann.annotator, ann.role)
            if key in seen:
                n += self._save_group(cur, group, actor, now)
                group, seen = [], set()
            group.append((ann, only))
            seen.add(key)
        if group:
            n += self._save_group(cur, group, actor, now)
        return n

    def _save_group(self, cur: Cursor, patches: Sequence[tuple[Annotation, Collection[str] | None]],
                    actor: str | None, now: float) -> int:
        """:meth:`_op_save_many` for records that are all different."""
        plans: dict[Collection[str] | None, _Plan] = {}  # the patches of an import share one field set
        todo: list[tuple[Key, Annotation, _Plan, dict[str, Any]]] = []
        for ann, only in patches:  # every value written is checked before anything is written
            key = (ann.trajectory_id, ann.annotator, ann.role)
            if only is not None and not isinstance(only, Hashable):
                only = frozenset(only)  # a set or a list of fields: one plan per distinct set
            plan = plans.get(only)
            if plan is None:
                plan = plans[only] = _Plan.of(key, only)
            values = {name: None if (v := getattr(ann, name)) is None else check_value(key[0], name, v)
                      for name in plan.scalars}
            self._check_key(key)
            for field in plan.sets:
                for item in getattr(ann, field):
                    self._check_member(key[0], field, item)
            todo.append((key, ann, plan, values))
        keys = [t[0] for t in todo]
        if self.FOR_UPDATE:
            # Row locks: every record is created (when missing) and locked before it is read, so no other
            # transaction can create or change it between our read and our write.
            cur.executemany("INSERT INTO annotations (trajectory_id, annotator, role, created_at, updated_at) "
                            "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING", [(*k, now, now) for k in keys])
            cur.executemany(f"SELECT 1 FROM annotations {_WHERE_KEY}{self.FOR_UPDATE}", keys)
        stored = {(r[0], r[1], r[2]): r[3:] for r in self._stored(cur, "annotations", tuple(SCALAR_FIELDS), keys)}
        # Without row locks the transaction holds the whole store: a record missing now is written whole by one
        # INSERT below, rather than created empty, read back and updated.
        fresh = {k for k in keys if k not in stored}
        old = [k for k in keys if k not in fresh]
        members: dict[str, dict[Key, set[str]]] = {}
        for field, table, column, _what in _SET_TABLES:
            members[field] = {}
            if old and any(field in p.sets for p in plans.values()):
                for t, a, r, item in self._stored(cur, table, (column,), old):
                    members[field].setdefault((t, a, r), set()).add(item)
        steps: dict[str, dict[Key, dict[int, str]]] = {}
        for field, table, column in _STEP_TABLES:
            steps[field] = {}
            if old and any(field in p.steps for p in plans.values()):
                for t, a, r, step, text in self._stored(cur, table, ("step", column), old):
                    steps[field].setdefault((t, a, r), {})[step] = text
        nothing = (None,) * len(SCALAR_FIELDS)
        inserts: list[tuple[Any, ...]] = []

        # One UPDATE per changed record (its changed fields, its version and time), grouped by the fields changed.
        updates: dict[tuple[str, ...], list[tuple[Any, ...]]] = {}
        set_rows: dict[str, dict[bool, list[tuple[Any, ...]]]] = {
            field: {True: [], False: []} for field, *_ in _SET_TABLES}  # field -> {added: rows, removed: rows}
        step_rows: dict[str, tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]] = {
            field: ([], []) for field, _t, _c in _STEP_TABLES}  # (upserts, deletes)
        audit: list[tuple[Any, ...]] = []
        no_steps: dict[int, str] = {}
        for key, ann, plan, values in todo:
            first = len(audit)
            head = (*key, actor or ann.annotator, now)
            names: list[str] = []
            row = stored.get(key, nothing)
            for name, i in plan.columns:
                if row[i] != values[name]:
                    names.append(name)
                    audit.append((*head, name, _json(row[i]), _json(values[name])))
            for field in plan.sets:
                have, want = members[field].get(key, set()), set(getattr(ann, field))
                for item in sorted(want - have):
                    set_rows[field][True].append((*key, item))
                    audit.append((*head, f"{field}[{item}]", "false", "true"))
                for item in sorted(have - want):
                    set_rows[field][False].append((*key, item))
                    audit.append((*head, f"{field}[{item}]", "true", "false"))
            for field in plan.steps:
                new_items = {c.step: c.effect for c in ann.cascading} if field == "cascading" else ann.step_comments
                old_items = steps[field].get(key, no_steps)
                if not new_items and not old_items:
                    continue
                for step in sorted(set(new_items) | set(old_items)):
                    text = new_items.get(step)
                    if field == "step_comments" and text is not None and not text.strip():
                        text = None
                    was = old_items.get(step)
                    if text == was:
                        continue
                    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
                        raise AnnotationError(key[0], field, f"a step index is an int >= 0, got {step!r}")
                    if text is None:
                        step_rows[field][1].append((*key, step))
                    else:
                        step_rows[field][0].append((*key, step, text))
                    audit.append((*head, f"{field}[{step}]", _json(was), _json(text)))
            if key in fresh:
                inserts.append((*key, *map(values.get, SCALAR_FIELDS), now, now, len(audit) - first))
            elif len(audit) > first:
                updates.setdefault(tuple(names), []).append(
                    (*(values[name] for name in names), len(audit) - first, now, *key))
        if inserts:
            _insert(cur, "annotations", ("trajectory_id", "annotator", "role", *SCALAR_FIELDS, "created_at",
                                         "updated_at", "version"), inserts)
        for names_changed, rows in updates.items():
            sets = "".join(f"{name} = ?, " for name in names_changed)
            cur.executemany(f"UPDATE annotations SET {sets}version = version + ?, updated_at = ? {_WHERE_KEY}", rows)
        for field, table, column, _what in _SET_TABLES:
            if set_rows[field][True]:
                _insert(cur, table, ("trajectory_id", "annotator", "role", column), set_rows[field][True])
            if set_rows[field][False]:
                cur.executemany(f"DELETE FROM {table} {_WHERE_KEY} AND {column} = ?", set_rows[field][False])
        for field, table, column in _STEP_TABLES:
            upserts, deletes = step_rows[field]
            if upserts:
                cur.executemany(f"INSERT INTO {table} (trajectory_id, annotator, role, step, {column}) "
                                f"VALUES (?, ?, ?, ?, ?) ON CONFLICT (trajectory_id, annotator, role, step) "
                                f"DO UPDATE SET {column} = excluded.{column}", upserts)
            if deletes:
                cur.executemany(f"DELETE FROM {table} {_WHERE_KEY} AND step = ?", deletes)
        _insert(cur, "audit", ("trajectory_id", "annotator", "role", "actor", "at", "field", "old", "new"), audit)
        return len(audit)

    def save(self, annotation: Annotation, *, actor: str | None = None) -> int:
        return self._write(lambda cur: self._op_save_many(cur, [(annotation, None)], actor, time.time()))

    def save_many(self, annotations: Iterable[Annotation], *, actor: str | None = None,
                  progress: Callable[[int], None] | None = None, batch: int = 2000) -> int:
        """Save many records, ``batch`` per transaction (far faster than one each); returns the number of field
        changes. Each batch locks its records in key order, so two imports running at once cannot deadlock."""
        total, chunk = 0, list[Annotation]()

        def flush() -> None:
            nonlocal total
            now = time.time()
            ordered = [(a, None) for a in sorted(chunk, key=lambda a: (a.trajectory_id, a.annotator, a.role))]
            total += self._write(lambda cur: self._op_save_many(cur, ordered, actor, now))
            if progress is not None:
                progress(len(chunk))
            chunk.clear()

        for ann in annotations:
            chunk.append(ann)
            if len(chunk) >= batch:
                flush()
        if chunk:
            flush()
        return total

    def merge(self, patches: Patches, *, actor: str | None = None,
              progress: Callable[[int], None] | None = None, batch: int = 2000) -> int:
        """See :meth:`AnnotationStore.merge`: one write transaction for every patch, each stored record read (and
        locked) inside it, so an import is all or nothing (a killed one changes nothing) and never reverts a change
        made while its file was being read. Other writers wait for it (SQLite: ``busy_timeout`` with retries;
        PostgreSQL: the record locks), then apply their change on top of it.

        Patches are written ``batch`` at a time, each batch locking its records in key order; a list of patches is
        sorted whole first, so two imports of lists cannot deadlock. Patches from a callable stream (a file read
        as it is written) are locked batch by batch: two such imports on a server store may deadlock, and the
        server then runs one of them again, calling the callable again."""
        def by_key(p: tuple[Annotation, Collection[str] | None]) -> Key:
            return p[0].trajectory_id, p[0].annotator, p[0].role

        fixed = None if callable(patches) else sorted(patches, key=by_key)  # an iterator is read once, for retries

        def op(cur: Cursor) -> int:
            now, n = time.time(), 0
            source = iter(fixed if fixed is not None else patches())  # type: ignore[operator]
            while chunk := list(itertools.islice(source, batch)):
                n += self._op_save_many(cur, sorted(chunk, key=by_key), actor, now)
                if progress is not None:
                    progress(len(chunk))
            return n

        return self._write(op)

    def delete(self, trajectory_id: str, annotator: str, role: str = "annotator", *,
               actor: str | None = None) -> bool:
        key = (trajectory_id, annotator, role)

        def op(cur: Cursor) -> bool:
            if cur.execute(f"DELETE FROM annotations {_WHERE_KEY}", key).rowcount == 0:
                return False
            for table in _COLLECTION_TABLES:
                cur.execute(f"DELETE FROM {table} {_WHERE_KEY}", key)
            cur.execute("INSERT INTO audit (trajectory_id, annotator, role, actor, at, field, old, new) "
                        "VALUES (?, ?, ?, ?, ?, 'record', '\"present\"', 'null')", (*key, actor or annotator,
                                                                                      time.time()))
            return True

        return self._write(op)

    # --- AnnotationStore: reads -----------------------------------------------------------------
    def get(self, trajectory_id: str, annotator: str, role: str = "annotator") -> Annotation | None:
        found = self.annotations(trajectory_id, annotator, role)
        return found[0] if found else None

    _COLS = TABLES["annotations"]

    @classmethod
    def _fetch(cls, cur: Cursor, where: str, params: tuple[Any, ...], tail: str = "") -> list[Annotation]:
        """Records matching ``where`` (on the key columns) from the record and collection tables; call inside a
        snapshot."""
        rows = cur.execute(f"SELECT {', '.join(cls._COLS)} FROM annotations {where} "
                           f"ORDER BY trajectory_id, annotator, role {tail}", params).fetchall()
        if not rows:
            return []
        if tail:  # a page: the collections of exactly the records on it (key range of the page)
            where = "WHERE (trajectory_id, annotator, role) >= (?, ?, ?) AND (trajectory_id, annotator, role) <= " \
                    "(?, ?, ?)"
            params = (*rows[0][:3], *rows[-1][:3])
        sets = {field: cur.execute(f"SELECT trajectory_id, annotator, role, {column} FROM {table} {where} "
                                   f"ORDER BY {column}", params).fetchall() for field, table, column, _w in _SET_TABLES}
        casc = cur.execute(f"SELECT trajectory_id, annotator, role, step, effect FROM annotation_cascading {where} "
                           "ORDER BY step", params).fetchall()
        comments = cur.execute(f"SELECT trajectory_id, annotator, role, step, comment FROM annotation_step_comments "
                               f"{where} ORDER BY step", params).fetchall()
        out: dict[Key, Annotation] = {}
        for r in rows:
            out[(r[0], r[1], r[2])] = Annotation(**dict(zip(cls._COLS, r, strict=True)))
        for field, rows_of_set in sets.items():
            for t, a, ro, item in rows_of_set:
                if (t, a, ro) in out:
                    getattr(out[(t, a, ro)], field).append(item)
        for t, a, ro, step, effect in casc:
            if (t, a, ro) in out:
                out[(t, a, ro)].cascading.append(Cascade(step, effect))
        for t, a, ro, step, comment in comments:
            if (t, a, ro) in out:
                out[(t, a, ro)].step_comments[step] = comment
        return list(out.values())

    @staticmethod
    def _filters(**values: str | None) -> tuple[str, tuple[Any, ...]]:
        conds, params = [], []
        for col, val in values.items():
            if val is not None:
                conds.append(f"{col} = ?")
                params.append(val)
        return (f"WHERE {' AND '.join(conds)}" if conds else ""), tuple(params)

    def annotations(self, trajectory_id: str | None = None, annotator: str | None = None,
                    role: str | None = None) -> list[Annotation]:
        where, params = self._filters(trajectory_id=trajectory_id, annotator=annotator, role=role)
        with self._snapshot() as cur:  # one consistent snapshot of the record and collection tables
            return self._fetch(cur, where, params)

    _IDS_PER_QUERY = 500  # trajectory ids in one IN (...) list: well under any backend's limit on parameters

    def annotations_of(self, trajectory_ids: Collection[str]) -> list[Annotation]:
        ids = sorted(set(trajectory_ids))
        out: list[Annotation] = []
        with self._snapshot() as cur:  # one snapshot; one query per table for a page of the library
            for i in range(0, len(ids), self._IDS_PER_QUERY):
                chunk = tuple(ids[i:i + self._IDS_PER_QUERY])
                out += self._fetch(cur, f"WHERE trajectory_id IN ({', '.join('?' * len(chunk))})", chunk)
        return out

    def count(self) -> int:
        return int(self._read("SELECT COUNT(*) FROM annotations")[0][0])

    def iter_annotations(self, batch: int = 5000) -> Iterator[list[Annotation]]:
        """Every record, ``batch`` at a time, from one consistent snapshot.

        Reads on a connection of its own, so writers in this process (the GUI thread) are not held up while the
        caller (an export) works between pages, and other processes' writes never block on it."""
        with self._pages() as cur:
            last: tuple[Any, ...] | None = None
            while True:
                where, params = ("", ()) if last is None else (
                    "WHERE (trajectory_id, annotator, role) > (?, ?, ?)", last)
                page = self._fetch(cur, where, params, f"LIMIT {int(batch)}")
                if not page:
                    break
                yield page
                tail = page[-1]
                last = (tail.trajectory_id, tail.annotator, tail.role)

    def audit(self, trajectory_id: str | None = None, annotator: str | None = None) -> list[AuditEntry]:
        where, params = self._filters(trajectory_id=trajectory_id, annotator=annotator)
        rows = self._read(f"SELECT id, trajectory_id, annotator, role, actor, at, field, old, new FROM audit {where} "
                          "ORDER BY id", params)
        return [AuditEntry(r[0], r[1], r[2], r[3], r[4], r[5], r[6], json.loads(r[7]) if r[7] else None,
                           json.loads(r[8]) if r[8] else None) for r in rows]

    # --- overrides ------------------------------------------------------------------------------
    def override_score(self, trajectory_id: str, actor: str, success: bool | None, reason: str, *,
                       score: float | None = None, previous_success: bool | None = None,
                       previous_score: float | None = None) -> ScoreOverride:
        if not reason or not reason.strip():
            raise AnnotationError(trajectory_id, "reason", "an override needs a reason")
        if not actor:
            raise AnnotationError(trajectory_id, "actor", "an override needs who made it")

        def op(cur: Cursor) -> int:
            row = cur.execute("INSERT INTO score_overrides (trajectory_id, actor, at, success, score, "
                              "previous_success, previous_score, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                              (trajectory_id, actor, time.time(), _flag(success), score, _flag(previous_success),
                               previous_score, reason.strip())).fetchone()
            return int(row[0])

        new_id = self._write(op, idempotent=False)  # a second run would log the override twice
        return next(o for o in self.overrides(trajectory_id) if o.id == new_id)

    def overrides(self, trajectory_id: str | None = None) -> list[ScoreOverride]:
        where, params = self._filters(trajectory_id=trajectory_id)
        rows = self._read("SELECT id, trajectory_id, actor, at, success, score, previous_success, previous_score, "
                          f"reason FROM score_overrides {where} ORDER BY id", params)

        def b(v: Any) -> bool | None:
            return None if v is None else bool(v)

        return [ScoreOverride(r[0], r[1], r[2], r[3], b(r[4]), r[5], b(r[6]), r[7], r[8]) for r in rows]

    # --- queues -------------------------------------------------------------------------------
    def save_queue(self, name: str, assignments: list[Assignment], k: int, spec: dict[str, Any] | None = None,
                   items: Sequence[QueueEntry] | None = None) -> None:
        if items is None:
            items = sorted({t: (p, t, key) for p, t, key, _a in reversed(assignments)}.values())
        slots: dict[str, int] = {}
        rows = []
        for p, t, key, a in assignments:
            slots[t] = slots.get(t, -1) + 1
            rows.append((name, p, t, key, a, slots[t]))

        def op(cur: Cursor) -> None:
            # The queue's row first: it is the lock that orders two rebuilds (and claims) of one queue.
            cur.execute("INSERT INTO queues (name, created_at, k, spec) VALUES (?, ?, ?, ?) ON CONFLICT (name) "
                        "DO UPDATE SET created_at = excluded.created_at, k = excluded.k, spec = excluded.spec",
                        (name, time.time(), k, json.dumps(spec or {})))
            cur.execute("DELETE FROM queue_assignments WHERE queue = ?", (name,))
            cur.execute("DELETE FROM queue_items WHERE queue = ?", (name,))
            cur.executemany("INSERT INTO queue_items (queue, position, trajectory_id, key) VALUES (?, ?, ?, ?)",
                            [(name, *it) for it in items])
            cur.executemany("INSERT INTO queue_assignments (queue, position, trajectory_id, key, annotator, slot) "
                            "VALUES (?, ?, ?, ?, ?, ?)", rows)

        self._write(op)

    def queue_assignments(self, name: str, annotator: str | None = None) -> list[Assignment]:
        sql = "SELECT position, trajectory_id, key, annotator FROM queue_assignments WHERE queue = ?"
        params: tuple[Any, ...] = (name,)
        if annotator is not None:
            sql += " AND annotator = ?"
            params += (annotator,)
        return [(int(p), str(t), k, str(a)) for p, t, k, a in self._read(sql + " ORDER BY position, annotator", params)]

    def queue_items(self, name: str) -> list[QueueEntry]:
        return [(int(p), str(t), k) for p, t, k in self._read(
            "SELECT position, trajectory_id, key FROM queue_items WHERE queue = ? ORDER BY position, trajectory_id",
            (name,))]

    def queues(self) -> list[dict[str, Any]]:
        return [{"name": r[0], "created_at": r[1], "k": r[2], "spec": json.loads(r[3])}
                for r in self._read("SELECT name, created_at, k, spec FROM queues ORDER BY name")]

    def claim(self, name: str, annotator: str) -> Assignment | None:
        if not annotator:
            raise AnnotationError("", "annotator", "a claim needs who claims")

        def op(cur: Cursor) -> Assignment | None:
            # The queue's row lock orders every claim on this queue; the unique slot index guards it besides.
            row = cur.execute(f"SELECT k, spec FROM queues WHERE name = ?{self.FOR_UPDATE}", (name,)).fetchone()
            if row is None:
                raise AnnotationError("", "queue", f"no queue named {name!r}")
            k, spec = int(row[0]), json.loads(row[1])
            done = spec.get("done", "verdict")
            if done not in VERDICT_FIELDS:  # a column name goes into the query: only a verdict's
                raise AnnotationError("", "queue", f"queue {name!r} is done on {done!r}, not a verdict")
            mine = cur.execute(
                "SELECT a.position, a.trajectory_id, a.key FROM queue_assignments a LEFT JOIN annotations r "
                "ON r.trajectory_id = a.trajectory_id AND r.annotator = a.annotator AND r.role = 'annotator' "
                f"WHERE a.queue = ? AND a.annotator = ? AND r.{done} IS NULL ORDER BY a.position LIMIT 1",
                (name, annotator)).fetchone()
            if mine is not None:
                return int(mine[0]), str(mine[1]), mine[2], annotator
            if not spec.get("open"):
                return None  # assigned up front: nothing to take
            free = cur.execute(
                "SELECT i.position, i.trajectory_id, i.key FROM queue_items i WHERE i.queue = ? "
                "AND (SELECT COUNT(*) FROM queue_assignments a WHERE a.queue = i.queue "
                "     AND a.trajectory_id = i.trajectory_id) < ? "
                "AND NOT EXISTS (SELECT 1 FROM queue_assignments a WHERE a.queue = i.queue "
                "     AND a.trajectory_id = i.trajectory_id AND a.annotator = ?) "
                "ORDER BY i.position, i.trajectory_id LIMIT 1", (name, k, annotator)).fetchone()
            if free is None:
                return None
            taken = {r[0] for r in cur.execute("SELECT slot FROM queue_assignments WHERE queue = ? AND "
                                               "trajectory_id = ?", (name, free[1])).fetchall()}
            slot = min(set(range(k)) - taken)
            cur.execute("INSERT INTO queue_assignments (queue, position, trajectory_id, key, annotator, slot) "
                        "VALUES (?, ?, ?, ?, ?, ?)", (name, free[0], free[1], free[2], annotator, slot))
            return int(free[0]), str(free[1]), free[2], annotator

        # Run again after a broken commit, it finds the claim it made (an assignment without a verdict).
        return self._write(op)

    # --- moving labels to another trajectory id (library keys, ``rollscope labels rekey``) -----------
    # Every table that names a trajectory, and the columns (besides trajectory_id) that make a row unique there.
    _KEYED_TABLES = (("annotations", ("annotator", "role")), ("annotation_labels", None),
                     ("annotation_cascading", None), ("annotation_step_comments", None),
                     ("annotation_harm_types", None), ("audit", None),
                     ("score_overrides", None), ("queue_items", ("queue",)),
                     ("queue_assignments", ("queue", "annotator")))

    def rekey(self, mapping: dict[str, str], *, actor: str) -> tuple[dict[str, str], list[str]]:
        def op(cur: Cursor) -> tuple[dict[str, str], list[str]]:
            moved: dict[str, str] = {}
            conflicts: list[str] = []
            now = time.time()
            for old, new in mapping.items():
                if old == new:
                    continue
                # Lock the records first (PostgreSQL): another machine moving or labelling them waits, and one
                # that moved them meanwhile leaves nothing here to move or to write on the trail twice.
                records = cur.execute(f"SELECT annotator, role FROM annotations WHERE trajectory_id = ? "
                                      f"ORDER BY annotator, role{self.FOR_UPDATE}", (old,)).fetchall()
                clash = False
                for table, unique in self._KEYED_TABLES:
                    if unique is None or clash:
                        continue
                    clash = cur.execute(
                        f"SELECT 1 FROM {table} a JOIN {table} b USING ({', '.join(unique)}) "
                        "WHERE a.trajectory_id = ? AND b.trajectory_id = ? LIMIT 1", (old, new)).fetchone() is not None
                if clash:
                    conflicts.append(old)
                    continue
                for table, _ in self._KEYED_TABLES:
                    cur.execute(f"UPDATE {table} SET trajectory_id = ? WHERE trajectory_id = ?", (new, old))
                for annotator, role in records:  # the move itself is a change, on the record's trail
                    self._changed(cur, (new, annotator, role), actor, now, "trajectory_id", old, new)
                moved[old] = new
            return moved, conflicts

        # Run again after a broken commit, a move that landed finds nothing left under the old id.
        return self._write(op)

    # --- faster derived reads -------------------------------------------------------------------
    def trajectory_ids(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT trajectory_id FROM annotations ORDER BY 1")]

    def referenced_ids(self) -> list[str]:
        return [r[0] for r in self._read(
            "SELECT trajectory_id FROM annotations UNION SELECT trajectory_id FROM score_overrides "
            "UNION SELECT trajectory_id FROM queue_items UNION SELECT trajectory_id FROM queue_assignments "
            "ORDER BY 1")]

    def annotators(self) -> list[str]:
        return [r[0] for r in self._read("SELECT DISTINCT annotator FROM annotations WHERE role = 'annotator' "
                                         "ORDER BY 1")]

    # --- moving a whole store (``rollscope labels migrate``) ----------------------------------------
    def counts(self) -> dict[str, int]:
        """Rows per table, and the records of each role (``adjudications``: adjudicated records), from one
        snapshot."""
        with self._snapshot() as cur:
            out = {t: int(cur.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]) for t in TABLES}
            out["adjudications"] = int(cur.execute("SELECT COUNT(*) FROM annotations WHERE role = 'adjudicator'")
                                       .fetchone()[0])
        return out

    def dump(self, batch: int = 5000) -> Iterator[tuple[str, list[tuple[Any, ...]]]]:
        """Every row of every table (:data:`TABLES` order and columns), ``batch`` rows at a time, from one
        snapshot."""
        with self._pages() as cur:
            for table, cols in TABLES.items():
                cur.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY {_ORDER[table]}")
                while True:
                    rows = cur.fetchmany(batch)
                    if not rows:
                        break
                    yield table, [tuple(r) for r in rows]

    def load(self, source: SqlAnnotationStore, progress: Callable[[int], None] | None = None) -> dict[str, int]:
        """Copy every row of ``source`` into this store, which must be empty, in one transaction (all or nothing).

        Returns:
            The rows copied per table.

        Raises:
            StoreError: this store already holds labels or queues, or a write failed (nothing was copied).
        """
        def op(cur: Cursor) -> dict[str, int]:
            for table in TABLES:
                if cur.execute(f"SELECT 1 FROM {table} LIMIT 1").fetchone() is not None:
                    raise StoreError(self.location, f"cannot copy into a store that is not empty (table {table} "
                                                    "has rows); copy into a new database or file")
            copied = dict.fromkeys(TABLES, 0)
            for table, rows in source.dump():
                cols = TABLES[table]
                cur.executemany(f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                rows)
                copied[table] += len(rows)
                if progress is not None:
                    progress(len(rows))
            for table in ("audit", "score_overrides"):
                self._identity_written(cur, table)
            return copied

        return self._write(op)
