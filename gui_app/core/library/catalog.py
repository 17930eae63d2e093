"""The library index: every trajectory under a folder, in an embedded SQLite database.

A catalog lives in ``ROOT/.rollscope/catalog.sqlite`` (:meth:`Catalog.for_root`) or at any path. :meth:`Catalog.scan`
walks a tree with :func:`gui_app.core.trajectory.formats.walk_units`, loads each unit with its importer and records
one row per
trajectory (or one row carrying the load error for a unit that does not load). Rescans skip units whose size and
modification time did not change and drop the rows of units that disappeared; the walk itself reuses what it decided
for every folder whose modification time and direct entries did not change (table ``folders``), rather than asking
every importer about it again. :meth:`Catalog.query` serves the library view: filtered, sorted and searched rows
with the latest reward-model score joined.

The catalog also keeps the instructions users give runs that have none (table ``instruction_overrides``, by scope
key: a task, a domain or one run; see :mod:`gui_app.core.scoring.instructions`): :meth:`Catalog.set_instruction`,
:meth:`Catalog.stored_instructions`, what scoring judges such runs against.

Rows are keyed by what :func:`gui_app.core.trajectory.formats.load` accepts: the unit path, or ``PATH#N`` for the N-th
trajectory of a multi-trajectory file. Each row also carries its library key (``ref``: the unit's path relative to
the library root, see :mod:`gui_app.core.trajectory.identity`), which labels and scores are keyed by and which survives
moving the library: a rescan after a move finds each score under the same key, with nothing to rewrite.

The schema is the numbered SQL files in ``gui_app/core/migrations/catalog/`` (:data:`MIGRATIONS`), applied by the one
migration runner (:mod:`gui_app.core.db`, shared with the annotation store), so a catalog is always at a whole
version. The database runs in WAL mode, so the library view can read while a scan writes from a worker thread; every
thread gets its own connection. Every method raises :class:`~gui_app.core.errors.CatalogError` (never a raw
``sqlite3`` error), naming the file.

A damaged file (SQLite finds it malformed, a text no longer decodes, it is no longer a database) raises
:class:`~gui_app.core.errors.CatalogDamagedError`. The catalog is derived data: :func:`open_for_scan` sets a damaged
file aside (``catalog.sqlite.damaged-<time>``, never deleted) and starts a new one that the scan fills again; only
the model scores it held are lost. The label store is a separate file and is never set aside.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sqlite3
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

from gui_app.core import db
from gui_app.core.errors import CatalogDamagedError, CatalogError, RollscopeError, clip
from gui_app.core.library.rows import FACT_WORDS, HARM_CODES, RowSet, check_filters, pick
from gui_app.core.trajectory.formats import FolderWalk, signature, split_selector
from gui_app.core.trajectory.identity import trajectory_key
from gui_app.core.scoring.instructions import TASK_CONFIG, USER, Instructions, StoredInstruction, task_key
from gui_app.core.scoring.score import Safety, Score, verdict
from gui_app.core.trajectory.model import Trajectory

CATALOG_DIR = ".rollscope"
CATALOG_NAME = "catalog.sqlite"

# The rows' text index (migration 16): an FTS5 table with the trigram tokenizer (SQLite 3.34 and later).
_TEXT_INDEX = "trajectories_search"


def _has_trigram() -> bool:
    """Whether this SQLite has FTS5 and its trigram tokenizer (what the text index of migration 16 needs)."""
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("CREATE VIRTUAL TABLE temp.probe USING fts5(x, tokenize='trigram')")
    except sqlite3.Error:
        return False
    finally:
        conn.close()
    return True


def _catalog_migrations(trigram: bool | None = None) -> tuple[db.Migration, ...]:
    """The numbered schema files (gui_app/core/migrations/catalog/NNN_*.sql). Where SQLite has no trigram tokenizer
    (``trigram``: whether it has; None: ask it), migration 16 is applied without its text index (every statement
    naming it is left out): the catalog reaches the same version, and queries search the rows' text without it (see
    Catalog._cold_where)."""
    found = db.load_migrations(db.MIGRATIONS_ROOT / "catalog")
    if _has_trigram() if trigram is None else trigram:
        return found
    return tuple(dataclasses.replace(m, sql="\n".join(x for x in db.statements(m.sql) if _TEXT_INDEX not in x))
                 if m.version == 16 else m for m in found)


# Numbered schema files (gui_app/core/migrations/catalog/NNN_*.sql), applied by the one runner (gui_app.core.db).
MIGRATIONS: tuple[db.Migration, ...] = _catalog_migrations()
SCHEMA_VERSION = MIGRATIONS[-1].version

# Paths of unrecognised files and folders a scan report lists (the count covers all of them).
_UNRECOGNISED_EXAMPLES = 5
# Rows from the top of the instruction order that a query may read through the index before the rows are cached
# (see Catalog._index_page): the library's first ten pages. Deeper pages read every row once.
_INDEX_PAGES = 2_000
# The shortest search word the text index finds (a trigram); a shorter one is looked for in every row's text.
_TRIGRAM = 3
# The instructions SQLite's NOCASE may order otherwise than str.casefold: beyond ASCII, or holding a NUL (length()
# counts the characters before it). Written as the partial index of migration 17 is, so SQLite reads that index.
_BEYOND_ASCII = "length(instruction) != length(CAST(instruction AS BLOB))"
# The indexes a page sorted by a column can walk in the column's order, stopping at the page's end (migration 17).
_ORDER_INDEXES = {"instruction": "trajectories_instruction", "duration": "trajectories_duration",
                  "n_steps": "trajectories_n_steps"}
# How many times as many rows as the selection holds a walk of such an index may look at and still be chosen over
# sorting the selection (see Catalog._walks).
_WALK_MORE = 4
# Rows the thread that reads the rows in the background reads between two looks at whether it should pause (a query
# is being answered in SQL) or stop (the catalog is closing): about a millisecond of work.
_WARM_CHUNK = 512
# Rows of a selection a query sorts here (by casefold, a text SQLite's NOCASE would order otherwise) rather than read
# every row: a few milliseconds.
_CASEFOLD_ROWS = 20_000
# Queries a catalog answers in SQL before its rows are cached whose count (and whether their rows sort by NOCASE as
# they do by casefold) it keeps: the library asks the count, then the first page, of the same selection.
_COLD_KEPT = 8

# Units read per write transaction: large enough to be fast, small enough that a cancel or a crash loses little.
_BATCH_UNITS = 256
_BATCH_SECONDS = 1.0

# What SQLite says of a damaged file (flipped bytes, a truncated page, a dropped table): the catalog is set aside and
# rebuilt rather than read on. Locked, read-only or missing files are not damage.
_DAMAGE = ("malformed", "not a database", "could not decode", "corrupt", "no such table", "file is encrypted")


def _is_damage(exc: BaseException) -> bool:
    if isinstance(exc, UnicodeDecodeError):  # a text whose bytes were flipped, where sqlite3 decodes it in Python
        return True
    return isinstance(exc, sqlite3.DatabaseError) and any(m in str(exc).lower() for m in _DAMAGE)


# The one read path of the score: every reader of "a run's score" reads the view latest_scores (each key's latest
# row of scores, the one table a score is stored in; migration 9), joined by the row's library key (scores are keyed
# by it; migration 10) through the index scores(key, id).
_JOIN = "LEFT JOIN latest_scores s ON s.key = t.ref"
# success is stored as 1/0/NULL; the column name's [type] makes sqlite3 turn it into True/False itself (connections
# use PARSE_COLNAMES), so every selected tuple is already a CatalogRow's fields in order and rows are built without
# a Python call per row (see _rows): about a sixth of the cost of the first query over 10,000 rows.
_BOOL_TYPE = "rollscope_bool"
sqlite3.register_converter(_BOOL_TYPE, defaultdict(lambda: True, {b"0": False}).__getitem__)
_COLUMNS = f"""t.key, t.id, t.path, t.format, t.instruction, t.task, t.n_steps, t.duration,
    t.success AS "success [{_BOOL_TYPE}]", t.score, t.outcome_source, s.p_success, s.first_error_step, t.error,
    s.threshold, s.success AS "model_success [{_BOOL_TYPE}]", t.ref, s.unknown AS "model_unknown [{_BOOL_TYPE}]",
    t.run_folder, t.domain, t.agent, s.p_harm, s.harmful AS "model_harmful [{_BOOL_TYPE}]",
    s.harm_unknown AS "harm_unknown [{_BOOL_TYPE}]"
"""
_SELECT = f"SELECT {_COLUMNS} FROM trajectories t {_JOIN}"
# The CatalogRow fields read from the latest score, as _COLUMNS selects them; every other field is t.<field>.
_SCORE_FIELDS = {"p_success": "s.p_success", "first_error_step": "s.first_error_step", "threshold": "s.threshold",
                 "model_success": "s.success", "model_unknown": "s.unknown", "p_harm": "s.p_harm",
                 "model_harmful": "s.harmful", "harm_unknown": "s.harm_unknown"}
# A score's columns, as set_score writes them and latest_score reads them.
_SCORE_COLUMNS = ("key, model, p_success, first_error_step, step_scores, tokens_kept, tokens_total, scored_at, "
                  "keyframe_steps, mask_shapes, masks, threshold, success, ood, warnings, seconds, timings, unknown, "
                  "evidence, text_reads, p_harm, harmful, harm_unknown, first_harmful_step, harm_category, "
                  "safety_json, usage, rationale")
# The columns a scan writes (a row's score is read from latest_scores, never stored in the row).
_SCAN_COLUMNS = ("key, id, path, format, instruction, task, app, n_steps, duration, success, score, outcome_source, "
                 "has_video, error, warnings, scanned_at, search, ref, run_folder, domain, agent, task_key")
_REF = _SCAN_COLUMNS.split(", ").index("ref")  # where a scan row holds its library key


class CatalogRow(NamedTuple):
    """One trajectory as the library shows it (a tuple: cheap to build by the ten thousand).

    Attributes:
        key: what :func:`gui_app.core.trajectory.formats.load` accepts: the unit path or ``PATH#N``.
        id: the trajectory's id (the unit's name when it failed to load).
        path: the unit (file or directory) it was read from.
        format: importer name.
        instruction: the task as given to the agent.
        task: ``metadata['task']`` when the format has it, else the app.
        n_steps: number of steps (None when the unit failed to load).
        duration: length in seconds, when known.
        success: outcome as recorded by the source (True/False/None).
        score: the source's raw score.
        outcome_source: ``env``, ``human`` or ``model``.
        p_success: latest reward-model probability of success (None when never scored).
        first_error_step: latest reward-model first-error step.
        error: load error text; None when the trajectory loaded.
        threshold: the decision threshold of the model that made the latest score (None: never scored, or scored
            before the catalog kept thresholds).
        model_success: the latest score's verdict (:attr:`gui_app.core.scoring.score.Score.success`), None when unknown.
        ref: the library key (the unit's path within the library, ``#N`` for a multi-trajectory file): unique and
            stable, what labels are keyed by (:mod:`gui_app.core.trajectory.identity`).
        model_unknown: the latest score says the model cannot judge this run
        (:attr:`gui_app.core.scoring.score.Score.unknown`);
            None when never scored.
        run_folder: the run's folder as its format names it (``metadata["run_folder"]``), when it does.
        domain: the run's domain (``metadata["domain"]``), when the format has one.
        agent: the agent or model that ran it (:attr:`Trajectory.agent`), when known.
        p_harm: the latest score's probability that the run did harm (:attr:`Score.safety
            <gui_app.core.scoring.score.Score.safety>`); None when it has no harm verdict.
        model_harmful: the latest score's harm verdict (True harmful, False safe); None when unknown or none.
        harm_unknown: the latest score's harm judge cannot say (True), or can (False); None when the latest score
            has no harm verdict at all (never scored, a score from before, a judge that gives none).

    The rest of what the catalog knows of a trajectory (app, video, warnings, scoring model) is in
    :meth:`Catalog.info`; keeping rows to these fields keeps a 10,000-row query fast.
    """

    key: str
    id: str
    path: str
    format: str | None
    instruction: str
    task: str | None
    n_steps: int | None
    duration: float | None
    success: bool | None
    score: float | None
    outcome_source: str | None
    p_success: float | None
    first_error_step: int | None
    error: str | None
    threshold: float | None
    model_success: bool | None
    ref: str = ""
    model_unknown: bool | None = None
    run_folder: str | None = None
    domain: str | None = None
    agent: str | None = None
    p_harm: float | None = None
    model_harmful: bool | None = None
    harm_unknown: bool | None = None


class ModelUse(NamedTuple):
    """A model that has scored the library: its name (``Score.model``), how many scores it gave, and when it last
    scored (seconds since the epoch)."""

    model: str
    n_scores: int
    last_scored_at: float


class ModelDisagreement(NamedTuple):
    """A trajectory two models judge differently: its key, each model's latest ``p_success`` and verdict."""

    key: str
    p_a: float | None
    p_b: float | None
    success_a: bool
    success_b: bool

    @property
    def gap(self) -> float:
        """How far apart the two probabilities are (0 when one is unknown): the wider, the sharper the question."""
        return 0.0 if self.p_a is None or self.p_b is None else abs(float(self.p_a) - float(self.p_b))


def pack_masks(masks: Sequence[Any]) -> tuple[str, bytes]:
    """Per-keyframe bool masks as (JSON list of their shapes, their bits packed 8 to a byte, concatenated).

    Each mask is packed on its own (padded to a whole byte), so masks of different shapes round-trip. A 14 x 20
    grid (224-px working size) takes 35 bytes instead of 280 as bools or ~1 KB as JSON.

    Args:
        masks: per keyframe, a (rows, cols) bool array (any array-like; non-zero is kept).
    """
    import numpy as np

    shapes, parts = [], []
    for m in masks:
        a = np.asarray(m, dtype=bool)
        shapes.append([int(d) for d in a.shape])  # a flat mask stays flat: the overlay fits it to the frame
        parts.append(np.packbits(a, axis=None).tobytes())
    return json.dumps(shapes), b"".join(parts)


def unpack_masks(shapes_json: str | None, blob: bytes | None) -> list[Any]:
    """The masks :func:`pack_masks` packed: a list of bool arrays of the stored shapes ([] when none were stored).

    Raises:
        CatalogError: the blob does not hold the bits the shapes call for (a damaged row).
    """
    import numpy as np

    if not shapes_json or blob is None:
        return []
    shapes = json.loads(shapes_json)
    bits = np.frombuffer(blob, dtype=np.uint8)
    out, at = [], 0
    for shape in shapes:
        n = int(np.prod(shape, dtype=np.int64))
        nbytes = (n + 7) // 8
        if at + nbytes > bits.size:
            raise CatalogError(f"stored pruning masks are truncated: {bits.size} bytes for shapes {shapes}")
        out.append(np.unpackbits(bits[at:at + nbytes], count=n).astype(bool).reshape([int(d) for d in shape]))
        at += nbytes
    return out


@dataclass
class ScanReport:
    """What a scan found.

    Attributes:
        trajectories: trajectories that loaded, in every unit under the root (read now or unchanged since).
        by_format: the same count per importer name.
        errors: ``{"path", "error"}`` for every unit under the root that does not load.
        seconds: wall time of the scan.
        skipped: units left unread because their size and mtime did not change.
        units: units found under the root.
        removed: units that disappeared since the last scan (their rows are gone).
        cancelled: the scan stopped early on request; what was read so far is kept.
        unrecognised: files and folders the walk passed over without finding a unit in them (data files no
            importer claims, folders with files but no trajectory, hidden folders), so nothing is dropped unsaid.
        unrecognised_examples: the first few of them, as ``"path (why)"``.
        notes: what the caller wants the user to read about the scan (labels that could not follow their
            trajectory to its library key, for one).
    """

    trajectories: int = 0
    by_format: dict[str, int] = field(default_factory=dict)
    errors: list[dict[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    skipped: int = 0
    units: int = 0
    removed: int = 0
    cancelled: bool = False
    unrecognised: int = 0
    unrecognised_examples: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


ProgressFn = Callable[[int, int | None, str], None]
CancelFn = Callable[[], bool]


def _error_text(exc: BaseException) -> str:
    # Our own errors already name file, line and field; anything else is an importer bug, so say what kind.
    return clip(str(exc) if isinstance(exc, RollscopeError) else f"{type(exc).__name__}: {exc}")


_INT64 = (-(2**63), 2**63 - 1)


def _sql_value(value: Any) -> Any:
    """``value`` as SQLite can store it: an integer beyond 64 bits as a float (None past a float's range), text
    with a lone surrogate (JSON's ``"\\ud800"``) with it replaced. Raw values would make the batch's insert raise
    and take the good units beside a bad one down with it."""
    if isinstance(value, int) and not isinstance(value, bool) and not _INT64[0] <= value <= _INT64[1]:
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "replace").decode("utf-8")
    return value


def _task_of(traj: Trajectory) -> str | None:
    """The task column: the task id (``metadata['task']``), else the domain (``metadata['domain']``), else the app.
    A format whose run folders name no task (runs named by the time they started) gives them their domain as their
    task, never the folder's name."""
    metadata = traj.metadata if isinstance(traj.metadata, dict) else {}
    return _metadata_text(metadata, "task") or _metadata_text(metadata, "domain") or traj.app


def _metadata_text(metadata: dict[str, Any], name: str) -> str | None:
    """``metadata[name]`` as a column's text: None when absent or empty, a structure as its JSON."""
    value = metadata.get(name)
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _safety_columns(safety: Safety | None) -> tuple[Any, ...]:
    """What :meth:`Catalog.set_score` stores of a harm verdict (migration 14): ``p_harm``, ``harmful``,
    ``harm_unknown``, ``first_harmful_step``, ``harm_category`` (the fields queries read, as columns) and the whole
    of it as JSON (what :meth:`Catalog.latest_score` gives back); all None without one."""
    if safety is None:
        return (None,) * 6
    unknown = safety.verdict_text == "unknown"
    return (None if safety.p_harm is None else float(safety.p_harm),
            None if safety.harmful is None else int(bool(safety.harmful)), int(unknown),
            None if safety.first_harmful_step is None else int(safety.first_harmful_step),
            _sql_value(safety.category or None), json.dumps(safety.to_json()))


class Catalog:
    """The library index of one or more trees of trajectories.

    Args:
        db_path: the SQLite file (created with its folder when missing).
        library_root: the folder library keys are relative to (see :mod:`gui_app.core.trajectory.identity`); default:
        the
            folder holding ``.rollscope/`` when the file is ``.../.rollscope/catalog.sqlite``, else none (keys
            stay absolute).
        background: after a query answered before the rows are cached (in SQL, see :meth:`query`), read them into
            the cache in a thread of its own (:meth:`warm`), so the queries after it are answered from memory. False:
            only a query that needs them reads them, in its caller's thread.

    Raises:
        CatalogError: the file cannot be created or opened, is not a catalog, or was written by a newer Rollscope.
    """

    def __init__(self, db_path: str | Path, library_root: str | Path | None = None, background: bool = True):
        self.db_path = Path(db_path)
        if library_root is None and self.db_path.parent.name == CATALOG_DIR:
            library_root = self.db_path.parent.parent
        self.library_root = Path(os.path.abspath(library_root)) if library_root is not None else None
        self._lock = threading.Lock()
        self._conns = db.ThreadConnections()  # each thread's own; every use of one is inside _using
        # The query cache, shared by all threads (see _snapshot): one tuple replaced whole, never changed after it is
        # published, so a reader in any thread sees a complete one without a lock.
        self._cache: tuple[tuple[int, int], RowSet] | None = None
        self._ascii: tuple[int, bool] | None = None  # (rows_version, every instruction is ASCII): see _index_page
        self._background = background
        self._warmer: threading.Thread | None = None  # reading the rows into the cache (see _warm_soon)
        self._stop = threading.Event()  # set by close(): the warmer stops
        self._busy = 0  # queries being answered in SQL now: the warmer pauses meanwhile
        self._building = threading.Lock()  # held while the rows are read into the cache (by one thread at a time)
        self._cold: dict[tuple[Any, ...], dict[str, Any]] = {}  # see _COLD_KEPT
        self._has_index: bool | None = None  # the text index of migration 16 is there (see _cold_where)
        try:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CatalogError(f"{self.db_path}: cannot create the catalog folder: {exc.strerror or exc}") from exc
        try:
            self._migrate(self._conn())
        except CatalogError:
            self.close()
            raise

    @classmethod
    def for_root(cls, root: str | Path) -> Catalog:
        """The catalog kept inside a folder: ``root/.rollscope/catalog.sqlite``."""
        return cls(Path(root) / CATALOG_DIR / CATALOG_NAME)

    # -- connections and schema ------------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        conn = self._conns.mine()
        if conn is not None:
            return conn
        # isolation_level=None: we issue BEGIN/COMMIT ourselves so every write is one explicit transaction.
        # check_same_thread=False only so close() may close every thread's connection (see db.ThreadConnections).
        try:
            conn = sqlite3.connect(self.db_path, isolation_level=None, check_same_thread=False, timeout=30.0,
                                   detect_types=sqlite3.PARSE_COLNAMES)
        except sqlite3.Error as exc:
            raise self._failure(exc, "open the catalog") from exc
        try:
            # Check what the file is before switching it to WAL: a foreign or newer file is left untouched.
            try:
                db.check_version(conn, MIGRATIONS)
            except db.MigrationError as exc:
                if exc.__cause__ is not None and self._damaged(exc.__cause__):
                    raise CatalogDamagedError(self.db_path, str(exc.__cause__)) from exc
                raise CatalogError(f"{self.db_path}: {exc}") from exc
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                # The text index (migration 16) is kept by triggers; the row an INSERT OR REPLACE replaces must fire
                # its delete trigger too, or the index would keep the old row's text.
                conn.execute("PRAGMA recursive_triggers=ON")
                conn.create_function("rollscope_nocase_exact", 1, _nocase_exact, deterministic=True)
                # With WAL, NORMAL never corrupts the file and a crash of the app loses no commit; only a power cut
                # may drop the last ones (a rescan restores rows; model scores are re-computable). FULL would fsync
                # every commit: 4.5 ms per set_score here against 0.08 ms.
                conn.execute("PRAGMA synchronous=NORMAL")
            except sqlite3.Error as exc:
                raise self._failure(exc, "open the catalog") from exc
        except CatalogError:
            conn.close()
            raise
        self._conns.add(conn)
        return conn

    def _using(self) -> AbstractContextManager[None]:
        """This thread uses its connection meanwhile: :meth:`close` leaves it open until the use ends."""
        return self._conns.use()

    def _damaged(self, exc: BaseException) -> bool:
        """Whether ``exc`` says this catalog is damaged. A file that is "not a database" counts only when it starts as
        SQLite's do (its header was damaged): anything else at the path is not ours to set aside."""
        if not _is_damage(exc):
            return False
        if "not a database" not in str(exc).lower():
            return True
        try:
            with open(self.db_path, "rb") as fh:
                return fh.read(16) == b"SQLite format 3\x00"
        except OSError:
            return False

    def _failure(self, exc: BaseException, what: str) -> CatalogError:
        """The domain error for a failed SQLite call: :class:`CatalogDamagedError` when the file is damaged."""
        if self._damaged(exc):
            return CatalogDamagedError(self.db_path, str(exc))
        return CatalogError(f"{self.db_path}: cannot {what}: {exc}")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        try:
            db.migrate(conn, MIGRATIONS)
        except db.MigrationError as exc:
            if exc.__cause__ is not None and self._damaged(exc.__cause__):
                raise CatalogDamagedError(self.db_path, str(exc.__cause__)) from exc
            raise CatalogError(f"{self.db_path}: {exc}") from exc
        self._backfill_refs(conn)

    def _backfill_refs(self, conn: sqlite3.Connection) -> None:
        """Give rows written before library keys existed (migration 6) their key; a no-op once every row has one.
        Not a SQL migration: the key is the row's path relative to the library root, which only this object
        knows."""
        with self._reading():
            rows = conn.execute("SELECT key FROM trajectories WHERE ref IS NULL").fetchall()
        if not rows:
            return

        pairs = [(trajectory_key(k, self.library_root), k) for (k,) in rows]

        def write() -> None:
            conn.executemany("UPDATE trajectories SET ref = ? WHERE key = ?", pairs)
            # Their scores were stored under the catalog key (migration 10 re-keyed only rows that had a ref).
            conn.executemany("UPDATE scores SET key = ? WHERE key = ?", pairs)

        self._rows_write(conn, write, "cannot give existing rows their library keys")

    def _rows_write(self, conn: sqlite3.Connection, fn: Callable[[], None], what: str) -> None:
        """Run ``fn``'s writes to the trajectory rows as one transaction that also bumps the rows' version."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            fn()
            conn.execute("UPDATE meta SET rows_version = rows_version + 1")
            conn.execute("COMMIT")
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            if self._damaged(exc):
                raise CatalogDamagedError(self.db_path, str(exc)) from exc
            raise CatalogError(f"{self.db_path}: {what}: {exc}") from exc

    @property
    def schema_version(self) -> int:
        with self._reading():
            return db.schema_version(self._conn())

    @contextmanager
    def _reading(self, what: str = "read the catalog") -> Iterator[None]:
        """Turn a ``sqlite3`` error into a :class:`CatalogError` naming the file (callers see domain errors only);
        a damaged file's into a :class:`CatalogDamagedError`."""
        try:
            with self._using():
                yield
        except (sqlite3.Error, UnicodeDecodeError) as exc:
            raise self._failure(exc, what) from exc

    def check(self) -> None:
        """Look for damage: SQLite's ``PRAGMA quick_check``, then every text the catalog holds read back (a flipped
        byte inside a text leaves the pages sound but the text undecodable, which ``quick_check`` does not see).
        Reads the whole file: a scan runs it, a query does not.

        Raises:
            CatalogDamagedError: the file is damaged.
            CatalogError: it cannot be read.
        """
        with self._reading("check the catalog"):
            conn = self._conn()
            found = [str(r[0]) for r in conn.execute("PRAGMA quick_check(5)")]
            if found != ["ok"]:
                raise CatalogDamagedError(self.db_path, "; ".join(found))
            tables = [t for (t,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
            for table in tables:
                cols = [c[1] for c in conn.execute(f'PRAGMA table_info("{table}")')
                        if "TEXT" in str(c[2]).upper() or not c[2]]
                if cols:
                    select = ", ".join(f'"{c}"' for c in cols)
                    for _ in conn.execute(f'SELECT {select} FROM "{table}"'):
                        pass

    def close(self) -> None:
        """Close every connection this catalog opened (in any thread), once the rows being read in the background
        (if any) stopped. A connection another thread is using now (a query in a worker) is closed by that thread as
        soon as its use ends: close() does not wait for it, and never pulls a connection from under a reader."""
        self._stop.set()
        warmer = self._warmer
        if warmer is not None and warmer is not threading.current_thread():
            warmer.join()
        self._warmer = None
        self._stop.clear()
        self._conns.close_all()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- scanning --------------------------------------------------------------------------------------------

    def scan(self, root: str | Path, progress: ProgressFn | None = None, cancel: CancelFn | None = None,
             force: bool = False, tasks_roots: Sequence[str | Path] | None = None) -> ScanReport:
        """Index every trajectory under ``root`` (a folder, or one unit).

        Each unit is loaded with its importer; a unit that fails to load is recorded as one row carrying the error
        and listed in ``report.errors`` -- the scan goes on. Units whose size and mtime did not change since the
        last scan are skipped unless ``force``; rows of units that disappeared from under ``root`` are removed
        (with their scores). Writes are batched in transactions; a cancelled or interrupted scan keeps every
        batch already written, and each batch is whole.

        Args:
            root: folder (or single unit) to index.
            progress: called as ``progress(done, total, current_path)``; while the tree is still being walked
                ``total`` is None and ``done`` counts units found so far, then ``done`` counts units processed.
            cancel: polled between units; returning True stops the scan (``report.cancelled``).
            force: re-read every unit even when unchanged.
            tasks_roots: where OSWorld task configs are looked for (``--tasks-root``); None: the user's default
                (see :func:`gui_app.core.trajectory.formats.load_unit`).

        Raises:
            CatalogError: ``root`` does not exist, or the database cannot be written.
        """
        with self._using():  # the scan's connection stays open until it ends, even if close() is called meanwhile
            return self._scan(root, progress, cancel, force, tasks_roots)

    def _scan(self, root: str | Path, progress: ProgressFn | None, cancel: CancelFn | None, force: bool,
              tasks_roots: Sequence[str | Path] | None) -> ScanReport:
        from gui_app.core.trajectory import formats

        t0 = time.perf_counter()
        root = Path(os.path.abspath(root))
        if not root.exists():
            raise CatalogError(f"{root}: no such file or directory; nothing to scan")
        report = ScanReport()
        conn = self._conn()

        def passed_over(path: Path, why: str) -> None:
            report.unrecognised += 1
            if len(report.unrecognised_examples) < _UNRECOGNISED_EXAMPLES:
                report.unrecognised_examples.append(f"{path} ({why})")

        with self._reading():
            walked_before = self._known_folders(conn, str(root))
        seen: dict[str, FolderWalk] = {}
        units: list[tuple[str, Any]] = []
        for unit, imp in formats.walk_units(root, unrecognised=passed_over, memo=None if force else walked_before,
                                            seen=seen):
            if cancel is not None and cancel():
                report.cancelled = True
                break
            units.append((unit, imp))
            if progress is not None:
                progress(len(units), None, unit)
        report.units = len(units)

        with self._reading():
            known = self._known_units(conn, str(root))  # path -> (size, mtime_ns, n_entries, format)
            counts = self._stored_counts(conn, str(root))  # path -> (format, n_ok, error or None)

        batch: list[tuple[str, str, tuple[int, int, int], list[tuple[Any, ...]]]] = []
        last_flush = time.perf_counter()
        total = len(units)
        for done, (path, imp) in enumerate(units, 1):
            if cancel is not None and cancel():
                report.cancelled = True
                break
            err: str | None
            try:
                walked = seen.get(path)
                sig = walked.signature if walked is not None else signature(path)  # a folder's: listed by the walk
            except OSError as exc:
                # Vanished or unreadable between the walk and now: record it like any unit that does not load.
                sig, trajs, err = (0, 0, 0), None, f"{path}: cannot read: {exc.strerror or exc}"
            else:
                old = known.get(path)
                if not force and old is not None and old[:3] == sig and old[3] == imp.name and path in counts:
                    report.skipped += 1
                    fmt, n_ok, stored_error = counts[path]
                    self._tally(report, fmt, n_ok, path, stored_error)
                    if progress is not None:
                        progress(done, total, path)
                    continue
                trajs, err = self._load_unit(Path(path), imp, self.library_root or root, tasks_roots)
            rows = self._unit_rows(path, imp.name, trajs, err, time.time())
            batch.append((path, imp.name, sig, rows))
            row_error = rows[0][13] if len(rows) == 1 else None  # the error column: set on a unit's one error row
            self._tally(report, imp.name, 0 if row_error else len(rows), path, row_error)
            if len(batch) >= _BATCH_UNITS or time.perf_counter() - last_flush > _BATCH_SECONDS:
                self._write_units(conn, batch)
                batch, last_flush = [], time.perf_counter()
            if progress is not None:
                progress(done, total, path)
        if batch:
            self._write_units(conn, batch)

        self._write_folders(conn, walked_before, seen, complete=not report.cancelled)
        if not report.cancelled:
            # Only a complete walk tells which units are gone. A folder's own catalog (FOLDER/.rollscope) holds
            # that folder only: rows from elsewhere were indexed before the folder was copied or moved here.
            gone = set(known) - {p for p, _ in units}
            if root.is_dir() and self.db_path.resolve().parent == (root / CATALOG_DIR).resolve():
                with self._reading():
                    gone |= self._units_outside(conn, str(root))
            if gone:
                self._remove_units(conn, sorted(gone))
            report.removed = len(gone)
        report.seconds = time.perf_counter() - t0
        return report

    @staticmethod
    def _tally(report: ScanReport, fmt: str | None, n_ok: int, path: str, error: str | None) -> None:
        report.trajectories += n_ok
        if n_ok and fmt:
            report.by_format[fmt] = report.by_format.get(fmt, 0) + n_ok
        if error is not None:
            report.errors.append({"path": path, "error": error})

    @staticmethod
    def _load_unit(path: Path, imp: Any, library_root: Path,
                   tasks_roots: Sequence[str | Path] | None = None) -> tuple[list[Trajectory] | None, str | None]:
        from gui_app.core.trajectory.formats import load_unit

        try:
            # align=False: placing steps in a recording decodes the whole video, and a listing needs no step times.
            trajs = load_unit(path, imp, align=False, library_root=library_root, tasks_roots=tasks_roots)
        except Exception as exc:  # noqa: BLE001 -- one bad unit (or importer bug) must not end a scan of thousands
            return None, _error_text(exc)
        if not trajs:
            return None, f"{path}: holds no trajectory"
        return trajs, None

    @staticmethod
    def _under(root: str) -> tuple[str, tuple[str, str, str]]:
        # Paths equal to root or below it: root/... sorts between root + sep and root + chr(ord(sep) + 1).
        base = root.rstrip(os.sep)
        return "path = ? OR (path >= ? AND path < ?)", (root, base + os.sep, base + chr(ord(os.sep) + 1))

    def _units_outside(self, conn: sqlite3.Connection, root: str) -> set[str]:
        where, args = self._under(root)
        return {r[0] for r in conn.execute(f"SELECT path FROM files WHERE NOT ({where})", args)}

    def _known_units(self, conn: sqlite3.Connection, root: str) -> dict[str, tuple[int, int, int, str | None]]:
        where, args = self._under(root)
        rows = conn.execute(f"SELECT path, size, mtime_ns, n_entries, format FROM files WHERE {where}", args)
        return {p: (s, m, n, f) for p, s, m, n, f in rows}

    def _known_folders(self, conn: sqlite3.Connection, root: str) -> dict[str, FolderWalk]:
        where, args = self._under(root)
        out = {}
        for path, size, mtime, n, importer, files in conn.execute(
                f"SELECT path, size, mtime_ns, n_entries, importer, files FROM folders WHERE {where}", args):
            # A folder walked into: {file: importer} (JSON); a unit: "/" and its entries' names joined by "/" (no
            # name holds one), read without a JSON parse for each of 100,000 units.
            if files.startswith("/") and importer is not None:
                out[path] = FolderWalk((size, mtime, n), importer, entries=tuple(filter(None, files.split("/"))))
                continue
            try:
                decided = {} if files == "{}" else json.loads(files)  # most folders hold no file
            except ValueError:  # not what we wrote: that folder is walked afresh
                continue
            if isinstance(decided, dict):
                out[path] = FolderWalk((size, mtime, n), importer, decided)
        return out

    def _write_folders(self, conn: sqlite3.Connection, memo: dict[str, FolderWalk], seen: dict[str, FolderWalk],
                       complete: bool) -> None:
        """Keep this walk's decisions (``seen``) for the next one: those that changed since the last (``memo``, the
        folders under this walk's root), and, after a complete walk, forget the folders it no longer found."""
        now = time.time()
        changed = [(p, w.signature[0], w.signature[1], w.signature[2], w.importer,
                    "/" + "/".join(w.entries) if w.entries else json.dumps(w.files), now)
                   for p, w in seen.items() if memo.get(p) != w]
        gone = [(p,) for p in memo if p not in seen] if complete else []
        if not changed and not gone:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT OR REPLACE INTO folders VALUES (?,?,?,?,?,?,?)", changed)
            conn.executemany("DELETE FROM folders WHERE path = ?", gone)
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise self._failure(exc, "write the catalog") from exc

    def _stored_counts(self, conn: sqlite3.Connection, root: str) -> dict[str, tuple[str | None, int, str | None]]:
        where, args = self._under(root)
        rows = conn.execute(
            f"SELECT path, MAX(format), SUM(error IS NULL), MAX(error) FROM trajectories WHERE {where} GROUP BY path",
            args)
        return {p: (f, int(n or 0), e) for p, f, n, e in rows}

    def _write_units(self, conn: sqlite3.Connection,
                     batch: list[tuple[str, str, tuple[int, int, int], list[tuple[Any, ...]]]]) -> None:
        now = time.time()
        traj_rows: list[tuple[Any, ...]] = []
        file_rows = []
        paths = []
        for path, fmt, (size, mtime, n_entries), rows in batch:
            stored = rows[0][2]  # the path column (see _unit_rows)
            paths.append((stored,))
            file_rows.append((stored, fmt, size, mtime, n_entries, now))
            traj_rows.extend(rows)

        def write() -> None:
            conn.executemany("DELETE FROM trajectories WHERE path = ?", paths)
            conn.executemany(f"INSERT OR REPLACE INTO trajectories ({_SCAN_COLUMNS}) "
                             f"VALUES ({','.join('?' * len(_SCAN_COLUMNS.split(', ')))})",
                             traj_rows)
            conn.executemany("INSERT OR REPLACE INTO files VALUES (?,?,?,?,?,?)", file_rows)
            # A run scored by its path before any scan recorded it, by a Rollscope older than migration 10, has its
            # scores under its catalog key: they move to its library key (one index look-up per row).
            conn.executemany("UPDATE scores SET key = ? WHERE key = ?",
                             [(r[_REF], r[0]) for r in traj_rows if r[_REF] != r[0]])

        self._rows_write(conn, write, "cannot write the catalog")

    def _unit_rows(self, path: str, fmt: str, trajs: list[Trajectory] | None, err: str | None,
                   now: float) -> list[tuple[Any, ...]]:
        """The trajectory rows of one unit: one per trajectory, or one carrying the error; every value one SQLite
        can store (see :func:`_sql_value`), so one unit's odd value never fails the batch it is written with."""
        stored = _sql_value(path)
        if stored != path:  # a name that is not UTF-8 (undecodable bytes): SQLite text cannot hold it as it is
            path, trajs, err = stored, None, f"{stored}: the file name is not valid UTF-8; rename it to index it"

        def error_row(text: str | None) -> list[tuple[Any, ...]]:
            name = os.path.basename(path.rstrip(os.sep)) or path
            return [tuple(map(_sql_value, (path, name, path, fmt, "", None, None, None, None, None, None, None, 0,
                                           clip(text or f"{path}: holds no trajectory"), 0, now, name.lower(),
                                           trajectory_key(path, self.library_root), None, None, None, None)))]

        if trajs is None:
            return error_row(err)
        multi = len(trajs) > 1
        rows = []
        try:
            for i, t in enumerate(trajs):
                key = f"{path}#{i}" if multi else path
                task = _task_of(t)
                ref = trajectory_key(key, self.library_root)
                metadata = t.metadata if isinstance(t.metadata, dict) else {}
                run_folder, domain = _metadata_text(metadata, "run_folder"), _metadata_text(metadata, "domain")
                agent = str(t.agent) if t.agent else None
                # A NUL is a space: the text index's tokenizer would stop at it (see _word_conds).
                search = " ".join(x for x in (t.id, t.instruction, task, ref, run_folder, domain, agent)
                                  if x).lower().replace("\x00", " ")
                success = t.outcome.success
                scope = task_key(t, ref)
                rows.append(tuple(map(_sql_value, (
                    key, t.id, path, fmt, t.instruction or "", task, t.app, t.n_steps, t.duration,
                    None if success is None else int(success), t.outcome.score, t.outcome.source,
                    int(t.video is not None), None, len(t.warnings), now, search, ref, run_folder, domain, agent,
                    scope))))
        except Exception as exc:  # noqa: BLE001 -- a unit whose fields will not make a row is an error row
            return error_row(f"{path}: cannot be indexed: {_error_text(exc)}")
        return rows

    def _remove_units(self, conn: sqlite3.Connection, paths: list[str]) -> None:
        """Drop the rows of vanished units with their scores, in one transaction. Scores are keyed by the library
        key, so a run another row now holds keeps them: the library moved (or was copied) with its ``.rollscope``,
        its units did not change, and the new rows have the same keys."""
        args = [(p,) for p in paths]
        gone = json.dumps(paths)  # one parameter however many units went (SQLite limits a statement's parameters)

        def write() -> None:
            conn.execute(
                "DELETE FROM scores WHERE key IN (SELECT ref FROM trajectories WHERE path IN "
                "(SELECT value FROM json_each(?1))) AND key NOT IN (SELECT ref FROM trajectories WHERE ref IS NOT NULL "
                "AND path NOT IN (SELECT value FROM json_each(?1)))", (gone,))
            conn.executemany("DELETE FROM trajectories WHERE path = ?", args)
            conn.executemany("DELETE FROM files WHERE path = ?", args)

        self._rows_write(conn, write, "cannot write the catalog")

    # -- reading ---------------------------------------------------------------------------------------------

    def _snapshot(self, conn: sqlite3.Connection,
                  pause: Callable[[], None] | None = None) -> tuple[tuple[int, int], RowSet]:
        """(version token, every row sorted by key with what queries derived from them), cached for all threads and
        kept current cheaply.

        Building 100,000 Python rows is most of a first query's cost, and the library re-queries on every keystroke
        of its search box, every click on a column header and every page it shows, while the data change only when
        a scan or a scoring run writes. The token is (``meta.rows_version``, largest score id): when only the
        scores moved (a scoring run), the new latest scores are patched into a copy of the cached rows; when the
        rows moved (a scan), they are re-read. Both numbers live in the database, so writes by other threads and
        processes are seen. Called inside a read transaction, so the rows and what a query reads next agree.

        One thread reads the rows at a time: a query that needs them while they are read in the background waits
        for them rather than reading them a second time. ``pause`` is called every few hundred rows read (the
        background reader's: it pauses, or stops by raising).
        """
        token = self._token(conn)
        cached = self._cache
        if cached is not None and cached[0] == token:
            return cached
        with self._building:
            cached = self._cache
            if cached is not None and cached[0] == token:
                return cached
            snapshot = (token, self._read_rows(conn, token, cached, pause))
            self._cache = snapshot
        return snapshot

    def _read_rows(self, conn: sqlite3.Connection, token: tuple[int, int],
                   cached: tuple[tuple[int, int], RowSet] | None, pause: Callable[[], None] | None) -> RowSet:
        """The rows of ``token``'s version as a RowSet: ``cached``'s with their new scores patched in when only the
        scores moved, else read whole (see :meth:`_snapshot`)."""
        if cached is not None and cached[0][0] == token[0] and cached[0][1] < token[1]:
            old = cached[1]
            rows = list(old.rows)
            new = conn.execute("SELECT key, p_success, first_error_step, threshold, "
                               f"success AS \"success [{_BOOL_TYPE}]\", unknown AS \"unknown [{_BOOL_TYPE}]\", "
                               f"p_harm, harmful AS \"harmful [{_BOOL_TYPE}]\", "
                               f"harm_unknown AS \"harm_unknown [{_BOOL_TYPE}]\" "
                               "FROM latest_scores WHERE score_id > ?", (cached[0][1],))
            for ref, p_success, first_error_step, threshold, verdict, unknown, p_harm, harmful, harm_unknown in new:
                i = old.position(ref)
                if i is not None:
                    rows[i] = rows[i]._replace(p_success=p_success, first_error_step=first_error_step,
                                               threshold=threshold, model_success=verdict, model_unknown=unknown,
                                               p_harm=p_harm, model_harmful=harmful, harm_unknown=harm_unknown)
            return self._rowset(rows, old)
        cursor = conn.execute(_SELECT)
        rows = _shared_rows(cursor if pause is None else _paced(cursor, pause))
        rows.sort(key=itemgetter(0))  # a table scan comes in insertion order: near key order, so this is cheap
        return self._rowset(rows)

    @staticmethod
    def _token(conn: sqlite3.Connection) -> tuple[int, int]:
        """The version of the rows and of their scores (see :meth:`_snapshot`)."""
        return conn.execute("SELECT rows_version, (SELECT IFNULL(MAX(id), 0) FROM scores) FROM meta").fetchone()

    def _index_page(self, conn: sqlite3.Connection, offset: int, limit: int) -> list[CatalogRow] | None:
        """Rows ``offset`` to ``offset + limit`` in the instruction order, read through the instruction index
        (``trajectories_instruction``, ``COLLATE NOCASE``) rather than from every row: 1 ms where reading 100,000 rows
        takes 600. None where the index's order could differ from the cached rows' order: when an instruction is not
        ASCII (NOCASE folds ASCII letters only, ``str.casefold`` every letter: ß is ss). Called inside a read
        transaction."""
        if not self._ascii_instructions(conn):
            return None
        rows = _rows(conn.execute(
            f"SELECT {_COLUMNS} FROM (SELECT * FROM trajectories WHERE instruction != '' ORDER BY instruction "
            f"COLLATE NOCASE, key LIMIT ? OFFSET ?) t {_JOIN} ORDER BY t.instruction COLLATE NOCASE, t.key",
            (limit, offset)))
        if len(rows) < limit:  # past the rows with an instruction: those without one come last, by key
            present = conn.execute("SELECT COUNT(*) FROM trajectories WHERE instruction != ''").fetchone()[0]
            rows += _rows(conn.execute(
                f"SELECT {_COLUMNS} FROM (SELECT * FROM trajectories WHERE instruction = '' ORDER BY key LIMIT ? "
                f"OFFSET ?) t {_JOIN} ORDER BY t.key", (limit - len(rows), max(0, offset - present))))
        return rows

    def _ascii_instructions(self, conn: sqlite3.Connection) -> bool:
        """Whether every instruction is ASCII without a NUL (characters == bytes), so SQLite's NOCASE orders them as
        the cached rows do (``str.casefold``): asked of the index of the others (migration 17), almost always empty,
        once per version of the rows. Called inside a read transaction."""
        version = self._token(conn)[0]
        if self._ascii is None or self._ascii[0] != version:
            mixed = conn.execute(f"SELECT 1 FROM trajectories WHERE {_BEYOND_ASCII} LIMIT 1").fetchone()
            self._ascii = (version, mixed is None)
        return self._ascii[1]

    def _rowset(self, rows: list[CatalogRow], same_rows: RowSet | None = None) -> RowSet:
        """The rows as a :class:`RowSet`; ``same_rows``: a set of the same rows (only their scores differ), whose
        search texts and positions still hold."""

        def search_texts() -> list[str]:
            # Read in the transaction of the query that first searches, whose snapshot these rows are: key order is
            # the rows' (SQLite's BINARY order of UTF-8 text is Python's order of code points).
            return [t for (t,) in self._conn().execute("SELECT search FROM trajectories ORDER BY key")]

        def rowids() -> list[int]:  # as search_texts: in a transaction that sees these rows, in key order
            return [r for (r,) in self._conn().execute("SELECT rowid FROM trajectories ORDER BY key")]

        def candidates(word: str, limit: int) -> list[int] | None:
            # Asked by RowSet.select, in the read transaction of the query (or count) whose snapshot these rows are:
            # the same rows_version, so the same rows and the same row ids. Only narrows: the rows decide.
            conn = self._conn()
            if not self._text_index(conn):
                return None
            try:
                return [r for (r,) in conn.execute(
                    f"SELECT rowid FROM {_TEXT_INDEX} WHERE {_TEXT_INDEX} MATCH ? LIMIT ?", (_phrase(word), limit + 1))]
            except sqlite3.OperationalError:  # the index cannot answer: every row's text is searched instead
                return None

        return RowSet(rows, CatalogRow._fields, _TEXT_FIELDS, search_texts, _facts, same_rows, rowids, candidates)

    def query(self, text: str = "", filters: dict[str, Any] | None = None, order_by: str = "instruction",
              descending: bool = False, limit: int | None = None, offset: int = 0) -> list[CatalogRow]:
        """Rows for the library view.

        Filtering, search and sorting run over the cached rows (see :meth:`_snapshot` and
        :class:`~gui_app.core.library.rows.RowSet`), which keeps each column's order, each filter column and each
        searched word's matches for the next query: at 100,000 rows a new search or filter, or a column sorted
        before, takes milliseconds; the first sort by a column, a fraction of a second.

        Before the rows are cached (a catalog just opened, or rows a scan changed), a query is answered in SQL where
        SQL gives exactly what the cached rows would (:meth:`_cold_query`): the default order's first pages through
        the instruction index, a search through the text index of migration 16, filters as ``WHERE`` clauses, a
        page by walking its column's index or sorting the selection, whichever reads fewer rows (the indexes of
        migration 17); the rows are then read into the cache in the background (``background``), once a query (not
        a count: the page asked next would share the cores with it) was answered so. A search word the outcome or
        verdict words could match (``fail``, ``error``...), one the labels name (``label_refs``), a sort by a text
        whose case SQLite folds otherwise than Python (``Straße``) read the rows first, as every query did before.

        Args:
            text: words that must all occur (case-insensitively) in the id, instruction, task, agent, domain or run
                folder, the outcome or the model's verdict (``success``, ``failure``, ``unknown``, ``error``), or the
                labels ``label_refs`` matched.
            filters: any of ``format`` (a name or a list), ``success`` (True, False, or None / 'unknown'),
                ``has_error`` (bool), ``task``, ``min_p_success``, ``max_p_success``, ``scored`` (bool),
                ``harmful`` (the latest score's harm verdict: True harmful, False safe, 'unknown' the judge cannot
                say, 'none' no harm verdict), ``min_p_harm``,
                ``label_refs`` ({word: library keys} whose labels hold the word, from the label store).
            order_by: a :class:`CatalogRow` field; text sorts ignore case, ties break by key.
            descending: reverse the order (missing values still sort last).
            limit: at most this many rows (all when None).
            offset: skip this many rows first.

        Raises:
            CatalogError: an unknown filter or sort column.
        """
        if order_by not in _SORT_KEYS:
            raise CatalogError(f"cannot sort the catalog by {order_by!r}; columns: {', '.join(_SORT_KEYS)}")
        check_filters(filters)
        # The library's first pages (its default order, nothing searched) of a catalog whose rows are not read yet
        # come from the instruction index: opening a library of 100,000 runs shows them without reading every row.
        selects = bool(text.split() or filters)
        first_pages = (order_by == "instruction" and not descending and not selects
                       and limit is not None and offset + limit <= _INDEX_PAGES)
        with self._reading():
            conn = self._conn()
            conn.execute("BEGIN")  # one read snapshot for the rows and their search texts
            try:
                if self._rows_unread(conn) and (selects or limit is not None):
                    page = self._index_page(conn, offset, limit or 0) if first_pages else None
                    if page is None:
                        page = self._cold_query(conn, text, filters, order_by, descending, limit, offset)
                    if page is not None:
                        self._warm_soon()
                        return page
                rowset = self._snapshot(conn)[1]
                mask = rowset.select(text, filters)
                order = rowset.order(order_by, descending)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        return pick(rowset.rows, order, mask, offset, limit)  # always a new list: callers may change theirs

    def count(self, text: str = "", filters: dict[str, Any] | None = None) -> int:
        """How many rows :meth:`query` would return with the same text and filters (the selection is kept: the
        query that follows does not compute it again)."""
        check_filters(filters)
        if not text.split() and not filters:
            return len(self)
        with self._reading():
            conn = self._conn()
            conn.execute("BEGIN")
            try:
                if self._rows_unread(conn):
                    got = self._cold_count(conn, text, filters)
                    if got is not None:  # the rows are read once the page asked next is answered (see query)
                        return got
                rowset = self._snapshot(conn)[1]
                mask = rowset.select(text, filters)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")
        return len(rowset) if mask is None else int(mask.sum())

    def warm(self) -> None:
        """Read the rows into the query cache now, with what searches derive from them (their search texts, their
        outcome and verdict words), so the next query is answered from memory. What the background reader does
        (see ``background``); a no-op when they are cached already.

        Raises:
            CatalogError: the catalog cannot be read.
        """
        self._warm(None)

    # -- queries before the rows are cached -------------------------------------------------------------------

    def _rows_unread(self, conn: sqlite3.Connection) -> bool:
        """Whether answering from the cache would read every row first: none are cached, or a scan changed them
        since (when only scores moved, the cached rows are patched in milliseconds). Inside a read transaction."""
        cached = self._cache
        return cached is None or cached[0][0] != self._token(conn)[0]

    def _cold_where(self, conn: sqlite3.Connection, text: str, filters: dict[str, Any] | None) -> _Selection | None:
        """The :class:`_Selection` that keeps exactly the rows :meth:`RowSet.select
        <gui_app.core.library.rows.RowSet.select>` keeps; None where SQL cannot say the same (then the rows are read).

        A word is a substring of the row's search text (the text and the word are lower-cased by Python both, so the
        bytes match as the cached rows' do): see :meth:`_word_conds`. Words the outcome and verdict words could match,
        and words the labels name, are left to the cached rows."""
        f = dict(filters or {})
        label_refs = f.get("label_refs") or {}
        words = text.lower().split()
        if any(label_refs.get(word) or any(word in fact for fact in FACT_WORDS) for word in words):
            return None
        filtered = _filter_conds(f)
        if filtered is None:
            return None
        conds, args, scores = filtered
        contains = [_contains(word) for word in words]
        read = " AND ".join([*conds, *(cond for cond, _ in contains)]) or "1"
        read_args = (*args, *(arg for _, arg in contains))
        if not words or f.get("success", "unknown") not in (None, "unknown"):
            # A known outcome's rows are read from its index, which holds their search text (migration 17): the
            # words are looked for there, where the text index would add a list of its rows to look each up in.
            return _Selection(read, read_args, scores, None, read, read_args)
        found, found_args, match = self._word_conds(conn, words)
        where = " AND ".join([*found, *conds])
        if not conds:  # a walk reads the rows only for the words: the text index spares it that
            return _Selection(where, tuple(found_args), scores, match if found == [_MATCHED] else None, where,
                              tuple(found_args))
        return _Selection(where, (*found_args, *args), scores, None, read, read_args)

    def _word_conds(self, conn: sqlite3.Connection, words: list[str]) -> tuple[list[str], list[Any], str | None]:
        """The conditions that keep the rows whose search text holds every word, their arguments, and the text
        index's ``MATCH`` argument among them (None: none).

        A word of three characters or more is found through the text index (its phrases side by side: every one
        must occur). For a printable ASCII word what the index names is the answer: a row's trigrams that spell the
        word one after the other are the word (SQLite's trigram tokenizer reads these characters as they are, and a
        search text holds no NUL, where it would stop: see :meth:`_unit_rows`). Any other word is looked for in the
        text itself (:func:`_contains`): a shorter one in every row's text (read from the outcome's index, which
        holds it and is narrower than the rows: migration 17), a longer one in the rows the index names (it only
        narrows: its tokenizer reads U+FFFF as U+FFFD), one holding a NUL (which no text holds, and FTS5 cannot be
        asked) in every row's text."""
        conds: list[str] = []
        args: list[Any] = []
        phrases: list[str] = []
        for word in words:
            if len(word) >= _TRIGRAM and "\x00" not in word and self._text_index(conn):
                phrases.append(_phrase(word))
                if word.isascii() and word.isprintable():
                    continue
            cond, arg = _contains(word)
            conds.append(cond)
            args.append(arg)
        if not phrases:
            return conds, args, None
        match = " ".join(phrases)
        return [_MATCHED, *conds], [match, *args], match

    def _text_index(self, conn: sqlite3.Connection) -> bool:
        """Whether the catalog has its text index (migration 16 applied where SQLite has the trigram tokenizer)."""
        if self._has_index is None:
            self._has_index = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                                           (_TEXT_INDEX,)).fetchone() is not None
        return self._has_index

    @contextmanager
    def _answering(self) -> Iterator[None]:
        """A query answered in SQL: the background reader pauses meanwhile (the two would share the cores)."""
        with self._lock:
            self._busy += 1
        try:
            yield
        finally:
            with self._lock:
                self._busy -= 1

    def _cold_selection(self, conn: sqlite3.Connection, text: str,
                        filters: dict[str, Any] | None) -> tuple[_Selection, dict[str, Any]] | None:
        """:meth:`_cold_where` and what is known of its rows at this version (kept for the next call)."""
        sel = self._cold_where(conn, text, filters)
        if sel is None:
            return None
        key = (self._token(conn)[0], *sel)
        known = self._cold.get(key)
        if known is None:
            with self._lock:
                if len(self._cold) >= _COLD_KEPT:
                    self._cold.pop(next(iter(self._cold)), None)
                known = self._cold.setdefault(key, {})
        return sel, known

    def _cold_count(self, conn: sqlite3.Connection, text: str, filters: dict[str, Any] | None) -> int | None:
        """:meth:`count` in SQL (None where it cannot be: see :meth:`_cold_where`)."""
        got = self._cold_selection(conn, text, filters)
        if got is None:
            return None
        with self._answering():
            return self._selected(conn, *got)

    @staticmethod
    def _selected(conn: sqlite3.Connection, sel: _Selection, known: dict[str, Any]) -> int:
        """How many rows ``sel`` keeps (kept in ``known``): counted in the text index alone where its rows are the
        selection (the rows themselves are not read)."""
        if "count" not in known:
            if sel.match is not None:
                got = conn.execute(f"SELECT COUNT(*) FROM {_TEXT_INDEX} WHERE {_TEXT_INDEX} MATCH ?", (sel.match,))
            else:
                got = conn.execute(f"SELECT COUNT(*) FROM trajectories t {_JOIN if sel.scores else ''} "
                                   f"WHERE {sel.where}", sel.args)
            known["count"] = int(got.fetchone()[0])
        return int(known["count"])

    def _cold_query(self, conn: sqlite3.Connection, text: str, filters: dict[str, Any] | None, order_by: str,
                    descending: bool, limit: int | None, offset: int) -> list[CatalogRow] | None:
        """:meth:`query` in SQL, or None where SQL cannot give exactly what the cached rows would (see
        :meth:`_cold_where`). The page's row ids first (the sort carries no more: walked in the column's order or
        sorted, see :meth:`_walks`), then its rows. A text column whose kept values SQLite's NOCASE would order
        otherwise than ``str.casefold`` (a letter beyond ASCII that has a case) is sorted here
        (:meth:`_casefold_page`)."""
        got = self._cold_selection(conn, text, filters)
        if got is None:
            return None
        sel, known = got
        if known.get("count") == 0:
            return []
        with self._answering():
            if self._odd(conn, sel, known, order_by):
                got_ids = self._casefold_page(conn, sel, f"t.{order_by}", descending, limit, offset)
                if got_ids is None:
                    return None
                ids = got_ids
            elif order_by != "key" and (walk := self._walks(conn, sel, known, order_by, limit, offset)) is not False:
                ids = self._value_page(conn, sel, order_by, descending, limit, offset, walk)
            else:
                ids = self._sorted_page(conn, sel, order_by, descending, limit, offset)
            if not ids:
                return []
            found = {r[0]: _new_row(r[1:]) for r in conn.execute(
                f"SELECT t.rowid, {_COLUMNS} FROM trajectories t {_JOIN} "
                "WHERE t.rowid IN (SELECT value FROM json_each(?))", (json.dumps(ids),))}
        return [found[i] for i in ids]

    def _odd(self, conn: sqlite3.Connection, sel: _Selection, known: dict[str, Any], order_by: str) -> bool:
        """Whether the selection holds a value of ``order_by`` that SQLite's NOCASE orders otherwise than
        ``str.casefold`` (kept in ``known``): only a text column sorted ignoring case may (not the key), and an
        instruction only where not every instruction is ASCII (:meth:`_ascii_instructions`)."""
        if order_by == "key" or order_by not in _TEXT_FIELDS or (
                order_by == "instruction" and self._ascii_instructions(conn)):
            return False
        if f"odd_{order_by}" not in known:
            known[f"odd_{order_by}"] = bool(conn.execute(
                f"SELECT EXISTS (SELECT 1 FROM trajectories t {_JOIN if sel.scores else ''} WHERE {sel.where} AND "
                f"{_odd_case(f't.{order_by}')})", sel.args).fetchone()[0])
        return bool(known[f"odd_{order_by}"])

    @staticmethod
    def _walks(conn: sqlite3.Connection, sel: _Selection, known: dict[str, Any], order_by: str, limit: int | None,
               offset: int) -> bool | None:
        """How a page sorted by ``order_by`` finds its rows: walking the column's index in its order and stopping at
        the page's end (True), or from what the selection is found by (the text index, a filter's index), sorted
        (False). Walking looks at about ``(offset + limit) * rows / selected`` rows; sorting reads each selected row
        after finding the selection, which costs more (of 100,500 runs, a word and two filters keep 4,481: their
        first page by duration takes 23 ms sorted, 10 ms walked), so walking wins up to :data:`_WALK_MORE` times as
        many rows. SQLite, which knows neither number, would walk the instruction index through most of a rare
        word's library, or sort every row a common filter keeps. None: SQLite chooses, where nothing is selected (it
        walks the index, when the column has one)."""
        if sel.where == "1":
            return None
        if order_by not in _ORDER_INDEXES or limit is None:
            return False
        selected = Catalog._selected(conn, sel, known)
        if "rows" not in known:
            known["rows"] = int(conn.execute("SELECT COUNT(*) FROM trajectories").fetchone()[0])
        return (offset + limit) * known["rows"] <= _WALK_MORE * selected * selected

    @staticmethod
    def _sorted_page(conn: sqlite3.Connection, sel: _Selection, order_by: str, descending: bool, limit: int | None,
                     offset: int) -> list[int]:
        """The row ids of a page of the selection sorted (in one pass: no index gives :func:`_order`'s terms, so
        SQLite finds the selection as it finds it best, then sorts it)."""
        join = _JOIN if sel.scores or order_by in _SCORE_FIELDS else ""
        return [i for (i,) in conn.execute(
            f"SELECT t.rowid FROM trajectories t {join} WHERE {sel.where} ORDER BY {_order(order_by, descending)} "
            "LIMIT ? OFFSET ?", (*sel.args, -1 if limit is None else limit, offset))]

    @staticmethod
    def _value_page(conn: sqlite3.Connection, sel: _Selection, order_by: str, descending: bool, limit: int | None,
                    offset: int, walk: bool | None) -> list[int]:
        """The row ids of a page sorted by a column (a text by NOCASE): the rows with a value, then (when the page
        reaches past them) those without, by key. Asked apart, so a column with an index (the instruction, the
        duration) is read in its order and the read stops at the page's end: 0.3 ms where sorting every kept row
        takes 50. ``walk`` (see :meth:`_walks`): True, the column's index is walked (named: SQLite would not always
        choose it); None, SQLite chooses (nothing is selected)."""
        column = _SCORE_FIELDS.get(order_by, f"t.{order_by}")
        join = _JOIN if sel.scores or order_by in _SCORE_FIELDS else ""
        table = f"trajectories t INDEXED BY {_ORDER_INDEXES[order_by]}" if walk else "trajectories t"
        where, args = (sel.walk_where, sel.walk_args) if walk else (sel.where, sel.args)
        value = f"{column}{' COLLATE NOCASE' if order_by in _TEXT_FIELDS else ''}"
        present = f"{column} IS NOT NULL AND {column} != ''"
        ids = [i for (i,) in conn.execute(
            f"SELECT t.rowid FROM {table} {join} WHERE {where} AND {present} ORDER BY {value}"
            f"{' DESC' if descending else ''}, t.key LIMIT ? OFFSET ?", (*args, -1 if limit is None else limit,
                                                                         offset))]
        if limit is not None and len(ids) >= limit:
            return ids
        before = offset + len(ids) if ids else conn.execute(
            f"SELECT COUNT(*) FROM trajectories t {join} WHERE {sel.where} AND {present}", sel.args).fetchone()[0]
        return ids + [i for (i,) in conn.execute(
            f"SELECT t.rowid FROM trajectories t {join} WHERE {sel.where} AND NOT ({present}) ORDER BY t.key "
            "LIMIT ? OFFSET ?", (*sel.args, -1 if limit is None else limit - len(ids), max(0, offset - before)))]

    @staticmethod
    def _casefold_page(conn: sqlite3.Connection, sel: _Selection, column: str, descending: bool, limit: int | None,
                       offset: int) -> list[int] | None:
        """The row ids of a page sorted by a text column as the cached rows sort it (``str.casefold``, stable over
        the key order, missing values last by key), sorted here: the selection's values are read, at most
        :data:`_CASEFOLD_ROWS` of them (None for more: the rows are read instead)."""
        values = conn.execute(f"SELECT t.rowid, {column} FROM trajectories t {_JOIN if sel.scores else ''} "
                              f"WHERE {sel.where} ORDER BY t.key LIMIT ?", (*sel.args, _CASEFOLD_ROWS + 1)).fetchall()
        if len(values) > _CASEFOLD_ROWS:
            return None
        present = [(i, str(v).casefold()) for i, v in values if v is not None and v != ""]
        present.sort(key=itemgetter(1), reverse=descending)  # stable: ties stay in key order
        ids = [i for i, _ in present] + [i for i, v in values if v is None or v == ""]
        return ids[offset:None if limit is None else offset + limit]

    # -- reading the rows in the background -------------------------------------------------------------------

    def _warm_soon(self) -> None:
        """Read the rows into the cache in a thread of its own (one at a time), when ``background``."""
        if not self._background or self._stop.is_set():
            return
        with self._lock:
            if self._warmer is not None and self._warmer.is_alive():
                return
            self._warmer = threading.Thread(target=self._warm_in_background, name="rollscope-catalog-rows",
                                            daemon=True)
            self._warmer.start()

    def _warm_in_background(self) -> None:
        try:
            self._warm(self._pause)
        except (_Stopped, CatalogError):  # closing; or a catalog that cannot be read: the next query says so
            pass
        finally:
            self._drop_conn()

    def _pause(self) -> None:
        """Between two chunks of rows read in the background: stop when the catalog closes, wait while a query is
        answered in SQL."""
        while True:
            if self._stop.is_set():
                raise _Stopped
            if not self._busy:
                return
            time.sleep(0.002)

    def _warm(self, pause: Callable[[], None] | None) -> None:
        with self._reading():
            conn = self._conn()
            conn.execute("BEGIN")
            try:
                rowset = self._snapshot(conn, pause)[1]
                rowset.prepare(pause)
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def _drop_conn(self) -> None:
        """Close this thread's connection (the background reader's, when it ends)."""
        self._conns.drop_mine()

    def get(self, key: str) -> CatalogRow | None:
        """The row of one trajectory by its key (a path, as :func:`gui_app.core.trajectory.formats.load` takes it) or
        its
        library key; None when the catalog holds neither."""
        with self._reading():
            conn = self._conn()
            row = conn.execute(f"{_SELECT} WHERE t.key = ?", (str(key),)).fetchone()
            if row is None:
                row = conn.execute(f"{_SELECT} WHERE t.ref = ?", (str(key),)).fetchone()
        return None if row is None else _row(row)

    def find(self, ident: str) -> list[CatalogRow]:
        """The rows ``ident`` may name: the one whose key or library key it is, else every row whose own id
        (the format's) it is. More than one row means the id is ambiguous (see :func:`gui_app.core.trajectory.identity.
        resolve`)."""
        row = self.get(ident)
        if row is not None:
            return [row]
        with self._reading():
            return _rows(self._conn().execute(f"{_SELECT} WHERE t.id = ? ORDER BY t.ref", (str(ident),)))

    def refs(self) -> set[str]:
        """Every library key in the catalog."""
        with self._reading():
            return {r for (r,) in self._conn().execute("SELECT ref FROM trajectories WHERE ref IS NOT NULL")}

    def score_key(self, key: str) -> str:
        """The key the scores of one trajectory are stored under, whichever name it is given by: its library key
        (:attr:`Trajectory.key <gui_app.core.trajectory.model.Trajectory.key>`, a row's ``ref``), its catalog key, or
        its
        path (a relative one taken from the working folder, as ``rollscope score`` is given it). The one computation
        :meth:`set_score` and :meth:`latest_score` key by, so a score written under one name is read under any other.

        A path is turned into its library key by :func:`gui_app.core.trajectory.identity.trajectory_key`, as the rows'
        ``ref`` are, and scores are stored under it (migration 10): a catalog key names the row holding it, whose
        ``ref`` it is. A trajectory not scanned yet gets the library key its row will have, so its score shows once
        a scan records it.
        """
        text = str(key)
        with self._reading():
            row = self._conn().execute("SELECT ref FROM trajectories WHERE key = ?", (text,)).fetchone()
        if row is not None and row[0] is not None:
            return str(row[0])
        if os.path.isabs(text) or os.path.lexists(split_selector(text)[0]):
            return trajectory_key(text, self.library_root)
        if self.library_root is None:
            return trajectory_key(os.path.abspath(text), None)
        return text

    def info(self, key: str) -> dict[str, Any] | None:
        """Everything the catalog holds on one trajectory: its row's fields plus ``app``, ``has_video``,
        ``warnings`` (count), ``scanned_at``, ``task_key`` (the scope an instruction given to it covers by default)
        and the latest score's ``model`` and ``scored_at``; None when absent."""
        with self._reading():
            cur = self._conn().execute(
                "SELECT t.key, t.id, t.path, t.format, t.instruction, t.task, t.app, t.n_steps, t.duration, t.success,"
                " t.score, t.outcome_source, t.has_video, t.error, t.warnings, t.scanned_at, t.run_folder, t.domain,"
                " t.agent, t.task_key, s.p_success,"
                f" s.first_error_step, s.model, s.scored_at FROM trajectories t {_JOIN} WHERE t.key = ?", (str(key),))
            row = cur.fetchone()
        if row is None:
            return None
        out = dict(zip([d[0] for d in cur.description], row))
        out["success"] = None if out["success"] is None else bool(out["success"])
        out["has_video"] = bool(out["has_video"])
        return out

    def keys(self) -> list[str]:
        """Every key in the catalog, sorted."""
        with self._reading():
            return [k for (k,) in self._conn().execute("SELECT key FROM trajectories ORDER BY key")]

    def __len__(self) -> int:
        with self._reading():
            return int(self._conn().execute("SELECT COUNT(*) FROM trajectories").fetchone()[0])

    def tasks(self) -> list[str]:
        """The distinct tasks, sorted (for the library's task filter)."""
        with self._reading():
            return [t for (t,) in self._conn().execute(
                "SELECT DISTINCT task FROM trajectories WHERE task IS NOT NULL ORDER BY task COLLATE NOCASE")]

    def formats(self) -> list[str]:
        """The distinct formats, sorted (for the library's format filter)."""
        with self._reading():
            return [f for (f,) in self._conn().execute(
                "SELECT DISTINCT format FROM trajectories WHERE format IS NOT NULL ORDER BY format")]

    # -- instructions given to runs that have none -----------------------------------------------------------

    def stored_instructions(self) -> Instructions:
        """Every instruction users gave a scope of runs (see :mod:`gui_app.core.scoring.instructions`), what
        scoring judges runs without one against. A few rows, read whole."""
        with self._reading("read the instructions given to tasks"):
            rows = self._conn().execute(
                "SELECT task_key, instruction, source, origin, set_at FROM instruction_overrides").fetchall()
        return Instructions({k: StoredInstruction(k, i, s, o, t) for k, i, s, o, t in rows})

    def instruction_for(self, traj: Trajectory) -> StoredInstruction | None:
        """The instruction a user gave ``traj``'s run, task or domain (the most specific), or None."""
        return self.stored_instructions().for_run(traj)

    def set_instruction(self, key: str, instruction: str, source: str = USER,
                        origin: str | None = None) -> StoredInstruction:
        """Give every run of the scope ``key`` (``task:…``, ``domain:…``, ``run:…``; see
        :func:`gui_app.core.scoring.instructions.scopes`) ``instruction``, replacing what it had; returns it as
        stored.

        Raises:
            CatalogError: the instruction is empty, the key names no scope, the source is unknown, or the write
                failed.
        """
        text = instruction.strip()
        if not text:
            raise CatalogError(f"{self.db_path}: an empty instruction judges nothing; give some text")
        if not key.startswith(("task:", "domain:", "run:")) or key.endswith(":"):
            raise CatalogError(f"{self.db_path}: {key!r} names no runs: a scope key is task:ID, domain:NAME or "
                               "run:KEY")
        if source not in (USER, TASK_CONFIG):
            raise CatalogError(f"{self.db_path}: unknown instruction source {source!r}")
        stored = StoredInstruction(key, text, source, origin, time.time())
        self._write("store an instruction", "INSERT OR REPLACE INTO instruction_overrides "
                    "(task_key, instruction, source, origin, set_at) VALUES (?, ?, ?, ?, ?)",
                    (key, _sql_value(text), source, _sql_value(origin), stored.set_at))
        return stored

    def clear_instruction(self, key: str) -> None:
        """Take back the instruction given to the scope ``key`` (its runs have none again)."""
        self._write("remove an instruction", "DELETE FROM instruction_overrides WHERE task_key = ?", (key,))

    def runs_without_instruction(self) -> list[tuple[str, str | None]]:
        """(catalog key, default scope key) of every run that loads and has no instruction of its own, by key:
        those a user's instructions may apply to."""
        with self._reading():
            return [(k, t) for k, t in self._conn().execute(
                "SELECT key, task_key FROM trajectories WHERE instruction = '' AND error IS NULL ORDER BY key")]

    def _write(self, what: str, sql: str, args: tuple[Any, ...]) -> None:
        """One statement in its own write transaction."""
        with self._using():
            conn = self._conn()
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(sql, args)
                conn.execute("COMMIT")
            except sqlite3.Error as exc:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise self._failure(exc, what) from exc

    # -- scores ----------------------------------------------------------------------------------------------

    def set_score(self, key: str, score: Score) -> None:
        """Record a reward-model score of ``key`` (any name of the trajectory: :meth:`score_key`) whole; the latest
        one is what queries show. Earlier ones are kept.

        A key the catalog does not (yet) hold is accepted: its score shows once a scan records the trajectory.
        The pruning masks are stored packed (see :func:`pack_masks`), so the overlay shows after reopening without
        running the model.

        Raises:
            CatalogError: the write failed, or the score has masks and keyframe steps of different lengths.
        """
        key = self.score_key(key)
        steps = json.dumps([float(x) for x in score.step_scores])
        shapes, blob, kf = None, None, None
        if score.masks:
            kf_list = [int(k) for k in score.keyframe_steps]
            if len(kf_list) != len(score.masks):
                raise CatalogError(f"{self.db_path}: score of {key}: {len(score.masks)} masks but {len(kf_list)} "
                                   "keyframe steps")
            shapes, blob = pack_masks(score.masks)
            kf = json.dumps(kf_list)

        def opt(value: float | int | None, kind: type[float] | type[int]) -> float | int | None:
            return None if value is None else kind(value)

        values = (str(key), score.model or None, opt(score.p_success, float), opt(score.first_error_step, int), steps,
                  opt(score.tokens_kept, int), opt(score.tokens_total, int), time.time(), kf, shapes, blob,
                  opt(score.threshold, float), None if score.success is None else int(score.success),
                  opt(score.ood, float), json.dumps(list(score.warnings)), opt(score.seconds, float),
                  json.dumps({str(k): float(v) for k, v in score.timings.items()}), int(bool(score.unknown)),
                  json.dumps([str(e) for e in score.evidence]) if score.evidence else None,
                  opt(score.text_reads, int), *_safety_columns(score.safety),
                  json.dumps({str(k): int(v) for k, v in score.usage.items()}) if score.usage else None,
                  score.rationale or None)
        self._write("write a score", f"INSERT INTO scores ({_SCORE_COLUMNS}) VALUES ({','.join('?' * len(values))})",
                    values)

    def ood_scores(self) -> dict[str, float]:
        """The out-of-distribution measure of each key's latest score (keys never scored, or scored before the
        catalog kept it, are absent): what the "teach the model" queue weighs beside the model's uncertainty."""
        with self._reading("read scores"):
            return {k: float(o) for k, o in self._conn().execute(
                "SELECT t.key, s.ood FROM trajectories t JOIN latest_scores s ON s.key = t.ref "
                "WHERE s.ood IS NOT NULL")}

    def latest_score(self, key: str) -> Score | None:
        """The latest score of ``key`` (any name of the trajectory: :meth:`score_key`), whole (per-step scores,
        pruning masks, threshold and verdict, the harm verdict), or None when it was never scored. A score stored
        without masks (or before schema version 3) has ``masks == []``; one stored before version 5 has no threshold,
        verdict, warnings or timings; one stored before version 14 (or by a judge that gives none) has no harm verdict
        (``safety`` None); one stored before version 15 (or by a judge that reports none) has no ``usage`` (``{}``)
        and no ``rationale`` (``''``)."""
        with self._reading("read a score"):
            row = self._conn().execute(f"SELECT {_SCORE_COLUMNS} FROM latest_scores WHERE key = ?",
                                       (self.score_key(key),)).fetchone()
        if row is None:
            return None
        (_key, model, p_success, first_error_step, step_scores, tokens_kept, tokens_total, scored_at, kf, shapes,
         blob, threshold, success, ood, warnings, seconds, timings, unknown, evidence, text_reads, *_harm_columns,
         safety_json, usage, rationale) = row
        masks = unpack_masks(shapes, blob)
        return Score(p_success=p_success, threshold=threshold, success=None if success is None else bool(success),
                     first_error_step=first_error_step, step_scores=json.loads(step_scores or "[]"), masks=masks,
                     keyframe_steps=json.loads(kf) if masks and kf else [], tokens_kept=tokens_kept,
                     tokens_total=tokens_total, model=model or "", ood=ood, warnings=json.loads(warnings or "[]"),
                     seconds=seconds, timings=json.loads(timings or "{}"), scored_at=scored_at,
                     unknown=bool(unknown), evidence=json.loads(evidence or "[]"), text_reads=text_reads,
                     safety=Safety.from_json(json.loads(safety_json)) if safety_json else None,
                     usage={str(k): int(v) for k, v in json.loads(usage).items()} if usage else {},
                     rationale=rationale or "")


    # -- model versions ------------------------------------------------------------------------------------

    def scoring_models(self) -> list[ModelUse]:
        """The models that have scored this library (every score is kept with its model's name), the one that
        scored last first: what the app offers to compare, and "the two most recent models" of the disagreement
        queue. Scores stored without a model name are left out (nothing says which model gave them)."""
        with self._reading("read the scoring models"):
            return [ModelUse(str(m), int(n), float(t)) for m, n, t in self._conn().execute(
                "SELECT model, COUNT(*), MAX(scored_at) FROM scores WHERE model IS NOT NULL AND model != '' "
                "GROUP BY model ORDER BY MAX(id) DESC")]

    def model_disagreements(self, model_a: str, model_b: str) -> list[ModelDisagreement]:
        """The trajectories whose latest score by ``model_a`` and latest score by ``model_b`` give different
        verdicts, by key, the widest gap between the two probabilities first.

        A verdict is the score's own (its ``success``, else ``p_success >= threshold`` by that model's own
        threshold: two models need not share one). A score whose model says it cannot judge the run (``unknown``)
        or whose verdict is unknown (stored before the catalog kept thresholds) disagrees with nothing. Only keys
        the catalog lists count (a score kept for a vanished unit is not a run to look at).

        Raises:
            CatalogError: the catalog cannot be read.
        """
        if model_a == model_b:
            return []
        with self._reading("compare two models' scores"):
            rows = self._conn().execute(
                "SELECT t.key, s.model, s.p_success, s.threshold, s.success, s.unknown FROM scores s "
                "JOIN trajectories t ON t.ref = s.key "
                "WHERE s.id IN (SELECT MAX(id) FROM scores WHERE model IN (?, ?) GROUP BY key, model)",
                (model_a, model_b)).fetchall()
        by_key: dict[str, dict[str, tuple[float | None, bool | None]]] = defaultdict(dict)
        for key, model, p, threshold, success, unknown in rows:
            said = None if unknown else (bool(success) if success is not None else verdict(p, threshold))
            by_key[key][model] = (p, said)
        out = []
        for key, got in by_key.items():
            if len(got) < 2:
                continue
            (p_a, v_a), (p_b, v_b) = got[model_a], got[model_b]
            if v_a is not None and v_b is not None and v_a != v_b:
                out.append(ModelDisagreement(key, p_a, p_b, v_a, v_b))
        return sorted(out, key=lambda d: (-d.gap, d.key))


# The files of one SQLite database: the file itself, and those beside it that belong to it.
_DB_SUFFIXES = ("", "-wal", "-shm", "-journal")


def set_aside(db_path: str | Path) -> Path:
    """Rename a damaged catalog (with its ``-wal`` and ``-shm`` files) to ``NAME.damaged-<time>`` beside it, for
    whoever wants to look at it; returns the new name. Nothing is deleted.

    Raises:
        CatalogError: the file is the label store (labels are never set aside: they are not derived data), or it
            cannot be renamed.
    """
    from gui_app.core.store.interface import STORE_FILENAME

    path = Path(db_path)
    if path.name == STORE_FILENAME:
        raise CatalogError(f"{path}: this is the label store, not a catalog; it is never set aside")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    n = 1
    while any(os.path.lexists(f"{aside}{s}") for s in _DB_SUFFIXES):
        n += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{n}")
    try:
        for suffix in _DB_SUFFIXES:  # the database first: its -wal is only ever read beside it
            if os.path.lexists(f"{path}{suffix}"):
                os.rename(f"{path}{suffix}", f"{aside}{suffix}")
    except OSError as exc:
        raise CatalogError(f"{path}: the catalog is damaged and cannot be set aside: {exc.strerror or exc}") from exc
    return aside


def open_for_scan(db_path: str | Path, library_root: str | Path | None = None) -> tuple[Catalog, str | None]:
    """The catalog a scan writes to, checked (:meth:`Catalog.check`); a damaged one is set aside (:func:`set_aside`)
    and a new one created, for the scan to fill. Returns (catalog, a note saying so, or None).

    Raises:
        CatalogError: the catalog cannot be opened or created for another reason (a newer schema, no permission).
    """
    catalog: Catalog | None = None
    try:
        catalog = Catalog(db_path, library_root)
        catalog.check()
        return catalog, None
    except CatalogDamagedError as exc:
        if catalog is not None:
            catalog.close()
        aside = set_aside(db_path)
        note = (f"{db_path}: the catalog was damaged ({exc.reason}); set aside as {aside.name} and rebuilt by this "
                "scan. The model scores and the instructions given to tasks it held are lost: score the library "
                "again")
        return Catalog(db_path, library_root), note


def _row(r: tuple[Any, ...]) -> CatalogRow:
    """A row from the tuple of :data:`_COLUMNS` (success already a bool, see :data:`_BOOL_TYPE`)."""
    return CatalogRow._make(r)


# tuple.__new__(CatalogRow, fields): a CatalogRow built in C (CatalogRow._make is a Python call per row).
_new_row = partial(tuple.__new__, CatalogRow)


def _rows(cursor: Iterable[tuple[Any, ...]]) -> list[CatalogRow]:
    """Rows from a cursor over :data:`_COLUMNS` (every tuple has exactly a CatalogRow's fields, in order)."""
    return list(map(_new_row, cursor))


def _shared_rows(cursor: Iterable[tuple[Any, ...]]) -> list[CatalogRow]:
    """:func:`_rows`, each text held once where rows repeat it: a unit's path is its key (one trajectory per unit),
    and a library has a few formats, tasks, outcome sources, domains and agents for many rows. SQLite makes a new
    string of every value it returns; the rows the catalog keeps (100,000: 96 MB) take 29 MB less so, for 50 ms
    more to read them."""
    shared: dict[str, str] = {}
    keep = shared.setdefault
    out = []
    for (key, id_, path, fmt, instruction, task, n_steps, duration, success, score, source, p_success, first_error,
         error, threshold, model_success, ref, model_unknown, run_folder, domain, agent, p_harm, model_harmful,
         harm_unknown) in cursor:
        out.append(_new_row((
            key, id_, key if path == key else path, fmt and keep(fmt, fmt), instruction, task and keep(task, task),
            n_steps, duration, success, score, source and keep(source, source), p_success, first_error, error,
            threshold, model_success, ref, model_unknown, run_folder, domain and keep(domain, domain),
            agent and keep(agent, agent), p_harm, model_harmful, harm_unknown)))
    return out


class _Stopped(Exception):
    """The catalog closed while its rows were being read in the background."""


def _paced(cursor: sqlite3.Cursor, pause: Callable[[], None]) -> Iterator[tuple[Any, ...]]:
    """The cursor's rows, ``pause()`` called after every :data:`_WARM_CHUNK` of them."""
    while True:
        chunk = cursor.fetchmany(_WARM_CHUNK)
        if not chunk:
            return
        yield from chunk
        pause()


class _Selection(NamedTuple):
    """A query's search and filters in SQL (:meth:`Catalog._cold_where`).

    Attributes:
        where: the ``WHERE`` clause, over ``trajectories t`` (and ``latest_scores s`` when ``scores``).
        args: its arguments.
        scores: it reads the latest score.
        match: the text index's ``MATCH`` argument when the rows it names are the selection, nothing else asked.
        walk_where: the same rows as a walk of an index in a column's order finds them best (see
            :meth:`Catalog._walks`): where a filter reads each row it passes, the words are looked for in that row's
            text (a few microseconds) rather than in the text index (milliseconds for a common word, asked first).
        walk_args: its arguments.
    """

    where: str
    args: tuple[Any, ...]
    scores: bool
    match: str | None
    walk_where: str
    walk_args: tuple[Any, ...]


def _filter_conds(f: dict[str, Any]) -> tuple[list[str], list[Any], bool] | None:
    """The conditions over ``trajectories t`` and ``latest_scores s`` that keep the rows the filters ``f`` keep
    (see :meth:`Catalog.query`), their arguments, and whether they read the latest score; None where SQL cannot say
    the same (a format or task that is not a text)."""
    conds: list[str] = []
    args: list[Any] = []
    scores = False
    if f.get("format") is not None:
        fmts = [f["format"]] if isinstance(f["format"], str) else list(f["format"])
        if not all(isinstance(x, str) for x in fmts):
            return None
        conds.append(f"t.format IN ({', '.join('?' * len(fmts))})")
        args += fmts
    if "success" in f:
        s = f["success"]
        if s is None or s == "unknown":
            conds.append("t.success IS NULL AND t.error IS NULL")
        else:
            conds.append(_true("t.success") if s else _false("t.success"))
    if f.get("has_error") is not None:
        conds.append("t.error IS NOT NULL" if f["has_error"] else "t.error IS NULL")
    if f.get("task") is not None:
        if not isinstance(f["task"], str):
            return None
        conds.append("t.task = ?")
        args.append(f["task"])
    for name, cond in (("min_p_success", "s.p_success >= ?"), ("max_p_success", "s.p_success <= ?"),
                       ("min_p_harm", "s.p_harm >= ?")):
        if f.get(name) is not None:
            conds.append(cond)
            args.append(float(f[name]))
            scores = True
    if f.get("scored") is not None:  # a score always says whether it is unknown (never NULL): any score will do
        # EXISTS, not IN: with the outcome's index on (success, ref, ...), SQLite would walk the list of every scored
        # key and look each up in it, and with a second IN list (the text index's rows) every pair of the two.
        conds.append(_SCORED if f["scored"] else f"(t.ref IS NULL OR NOT {_SCORED})")
    if f.get("harmful") is not None:
        h = f["harmful"]
        conds.append(_HARM_WHERE[HARM_CODES[h if isinstance(h, str) else bool(h)]])  # checked: check_filters
        scores = True
    return conds, args, scores


# A row the text index names for the MATCH argument (see Catalog._word_conds); a row with a score.
_MATCHED = f"t.rowid IN (SELECT rowid FROM {_TEXT_INDEX} WHERE {_TEXT_INDEX} MATCH ?)"
_SCORED = "EXISTS (SELECT 1 FROM scores WHERE scores.key = t.ref)"


def _contains(word: str) -> tuple[str, str]:
    """SQL: the row's search text holds ``word``, and its argument: ``LIKE`` (a third faster than ``instr`` over
    every row's text: it skips to the word's first letter in C), which asks exactly that here. Its ``%`` and ``_``
    are escaped, and it folds only ASCII capitals, which neither holds (both are lower-cased by Python); it stops
    at a NUL, which no search text holds (see Catalog._unit_rows), so a word holding one (FTS5 and ``LIKE`` would
    cut it short) is looked for with ``instr``, and found nowhere."""
    if "\x00" in word:
        return "instr(t.search, ?) > 0", word
    escaped = word.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return "t.search LIKE ? ESCAPE '\\'", f"%{escaped}%"


def _phrase(word: str) -> str:
    """``word`` as an FTS5 phrase of the text index (quoted: its quotes doubled, nothing in it an operator): with the
    trigram tokenizer, the rows that may hold it as a substring."""
    return '"' + word.replace('"', '""') + '"'


def _nocase_exact(value: Any) -> int:
    """1 when SQLite's NOCASE (ASCII letters folded, every other byte as it is) orders ``value`` as ``str.casefold``
    does (the cached rows' text order): its only letters with a case are ASCII."""
    if not isinstance(value, str):
        return 0
    return int(value.casefold() == value.encode("utf-8", "surrogatepass").lower().decode("utf-8", "surrogatepass"))


def _odd_case(column: str) -> str:
    """SQL: ``column`` holds a text NOCASE would order otherwise than ``str.casefold`` (a letter beyond ASCII with a
    case, or a NUL, where NOCASE stops comparing); checked in Python only for the texts beyond ASCII."""
    return (f"({column} IS NOT NULL AND {column} != '' AND (instr({column}, char(0)) > 0 OR "
            f"(length({column}) != length(CAST({column} AS BLOB)) AND NOT rollscope_nocase_exact({column}))))")


def _true(column: str) -> str:
    """SQL: ``column`` reads as True through :data:`_BOOL_TYPE`'s converter. Every writer of these columns
    (``success``, a score's ``success``, ``unknown``, ``harmful``, ``harm_unknown``) writes 1, 0 or NULL, so True is
    1 (and an index on the column serves it)."""
    return f"{column} = 1"


def _false(column: str) -> str:
    """SQL: ``column`` reads as False through :data:`_BOOL_TYPE`'s converter (see :func:`_true`)."""
    return f"{column} = 0"


# The harm filter's codes (rows.HARM_CODES) as SQL over the latest score, as RowSet codes its harm column.
_HARM_WHERE = {-2: "s.harm_unknown IS NULL",
               -1: f"s.harm_unknown IS NOT NULL AND ({_true('s.harm_unknown')} OR s.harmful IS NULL)",
               1: f"{_false('s.harm_unknown')} AND {_true('s.harmful')}",
               0: f"{_false('s.harm_unknown')} AND {_false('s.harmful')}"}


def _order(name: str, descending: bool) -> str:
    """SQL ``ORDER BY`` terms for the cached rows' order of a column (:meth:`RowSet.order
    <gui_app.core.library.rows.RowSet.order>`): present values first, by value (text by NOCASE: see
    :func:`_odd_case` for where that differs), ties and missing values (None or an empty text) by key, in both
    directions."""
    direction = " DESC" if descending else ""
    if name == "key":
        return f"t.key{direction}"
    column = _SCORE_FIELDS.get(name, f"t.{name}")
    missing = f"({column} IS NULL OR {column} = '')"
    value = f"(CASE WHEN {missing} THEN NULL ELSE {column} END)"
    if name in _TEXT_FIELDS:
        value += " COLLATE NOCASE"
    return f"{missing}, {value}{direction}, t.key"


_TEXT_FIELDS = frozenset({"key", "id", "path", "format", "instruction", "task", "outcome_source", "error", "ref",
                          "run_folder", "domain", "agent"})
# Sortable column -> its index in CatalogRow.
_SORT_KEYS: dict[str, int] = {name: i for i, name in enumerate(CatalogRow._fields)}


def _facts(row: CatalogRow) -> str:
    """A row's outcome and the reward model's verdict in words, searched with its text ("fail" finds the failures):
    the source's outcome (``error`` when it does not load), then the latest score's verdict (``unknown`` when the
    model cannot judge it; else its own verdict, or p_success against its threshold)."""
    outcome = "error" if row.error is not None else "success" if row.success is True else \
        "failure" if row.success is False else ""
    if row.model_unknown:
        said = "unknown"
    elif row.model_success is not None:
        said = "success" if row.model_success else "failure"
    else:
        said = "" if verdict(row.p_success, row.threshold) is None else \
            ("success" if verdict(row.p_success, row.threshold) else "failure")
    return f"{outcome} {said}"
