"""One migration runner for Rollscope's databases: the library catalog and the annotation store, on SQLite and (the
store only) on a PostgreSQL server.

Each database keeps its schema as numbered SQL files in its own folder (``gui_app/core/migrations/catalog/``,
``gui_app/core/migrations/store/``): ``NNN_name.sql``, numbered 1..N without gaps, append only (a shipped file is
never edited: databases on users' disks were built by it). The applied version is SQLite's ``PRAGMA user_version``;
``schema_migrations`` logs when each file was applied.

The store's PostgreSQL twin lives in ``gui_app/core/migrations/store_postgresql/``: one file per SQLite file, with the
same number and name (a test holds them in step), written in PostgreSQL's dialect. There the version is the highest
one ``schema_migrations`` logs, and :func:`migrate_postgresql` applies each file in its own transaction (DDL is
transactional there) while holding an advisory lock, so two machines opening a new database at once apply nothing
twice.

:func:`migrate` applies the missing files in order, each in its own ``BEGIN IMMEDIATE`` transaction together with
its version bump, so a database is always at a whole version and two processes opening one file at once never apply
a migration twice (the version is read again once the write lock is held). A failed migration rolls back and leaves
the database at the version before it. A database written by a newer Rollscope is refused before anything is
written to it.

:class:`ThreadConnections` keeps one SQLite connection per thread for the catalog and the store, and closes them
without pulling one from under a thread that is reading from it (which crashes the interpreter).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from gui_app.core.errors import RollscopeError

MIGRATIONS_ROOT = Path(__file__).resolve().parent / "migrations"
_FILE = re.compile(r"^(\d+)_(.+)\.sql$")


class ThreadConnections:
    """Each thread's own connection to one SQLite file (opened with ``check_same_thread=False`` so that
    :meth:`close_all` may close them from any thread), and a safe way to close them all.

    A thread wraps each use of its connection in :meth:`use`. :meth:`close_all` closes at once the connections no
    thread is using; one that a thread is using now (a query in a worker while the GUI thread closes the library) is
    closed by that thread when its use ends, and until then that thread keeps it: its reads go on in the same
    snapshot. ``close_all`` never waits. A thread that starts later opens a new connection.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conns: dict[int, sqlite3.Connection] = {}
        self._users: dict[int, int] = {}  # thread -> how deep it is inside use() now
        self._doomed: dict[int, sqlite3.Connection] = {}  # closed while in use: closed when the use ends

    def mine(self) -> sqlite3.Connection | None:
        """This thread's connection, or None when it has none yet."""
        me = threading.get_ident()
        with self._lock:
            return self._conns.get(me) or self._doomed.get(me)

    def add(self, conn: sqlite3.Connection) -> None:
        """Keep ``conn`` as this thread's connection."""
        with self._lock:
            self._conns[threading.get_ident()] = conn

    @contextmanager
    def use(self) -> Iterator[None]:
        """This thread uses its connection meanwhile (nests)."""
        me = threading.get_ident()
        with self._lock:
            self._users[me] = self._users.get(me, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                depth = self._users.pop(me) - 1
                doomed = self._doomed.pop(me, None) if depth == 0 else None
                if depth:
                    self._users[me] = depth
            if doomed is not None:
                doomed.close()

    def drop_mine(self) -> None:
        """Close this thread's connection (at once, or when its use ends)."""
        me = threading.get_ident()
        with self._lock:
            conn = self._conns.pop(me, None)
            if conn is not None and me in self._users:
                self._doomed[me] = conn
                return
        if conn is not None:
            conn.close()

    def close_all(self) -> None:
        """Close every connection: those in use when their use ends (see the class)."""
        with self._lock:
            conns, self._conns = self._conns, {}
            idle = []
            for thread, conn in conns.items():
                if thread in self._users:
                    self._doomed[thread] = conn
                else:
                    idle.append(conn)
        for conn in idle:
            conn.close()


class MigrationError(RollscopeError):
    """A database cannot be brought to this Rollscope's schema (newer, damaged, or a migration failed).

    Args:
        reason: what went wrong, in words; the catalog and the store prefix it with their file.
        version: the schema version the failure is about, when there is one.
    """

    def __init__(self, reason: str, version: int | None = None):
        self.reason, self.version = reason, version
        super().__init__(reason)


@dataclass(frozen=True)
class Migration:
    """One numbered schema step: applying ``sql`` brings a database from ``version - 1`` to ``version``."""

    version: int
    name: str
    sql: str


@cache
def load_migrations(folder: str | Path) -> tuple[Migration, ...]:
    """The migration files of one database, in order.

    Raises:
        MigrationError: the files are not numbered 1..N without gaps.
    """
    found = []
    for path in sorted(Path(folder).glob("*.sql")):
        m = _FILE.match(path.name)
        if m:
            found.append(Migration(int(m.group(1)), m.group(2), path.read_text(encoding="utf-8")))
    versions = [m.version for m in found]
    if versions != list(range(1, len(versions) + 1)):
        raise MigrationError(f"{folder}: migrations must be numbered 1..N without gaps, found {versions}")
    return tuple(found)


def statements(sql: str) -> list[str]:
    """A SQL script split into statements (``executescript`` would commit the transaction a migration runs in).

    Comment lines between statements are dropped; ``sqlite3.complete_statement`` finds where each one ends, so a
    trigger body's semicolons stay inside it.
    """
    out, buf = [], ""
    for line in sql.splitlines(keepends=True):
        if not buf.strip() and line.strip().startswith("--"):
            continue
        buf += line
        if sqlite3.complete_statement(buf):
            if buf.strip():
                out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out


def schema_version(conn: sqlite3.Connection) -> int:
    """The schema version of an open database (0 for a new, empty one)."""
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def check_version(conn: sqlite3.Connection, migrations: tuple[Migration, ...] | list[Migration]) -> int:
    """The database's schema version, after checking that this Rollscope understands it.

    Raises:
        MigrationError: the file is not a SQLite database, or was written by a newer Rollscope.
    """
    try:
        version = schema_version(conn)
    except sqlite3.OperationalError as exc:  # locked, read-only, unreadable: a database that cannot be opened here
        raise MigrationError(f"cannot be opened: {exc}") from exc
    except sqlite3.DatabaseError as exc:
        raise MigrationError(f"not a SQLite database: {exc}") from exc
    return _understood(version, migrations)


def _understood(version: int, migrations: tuple[Migration, ...] | list[Migration]) -> int:
    latest = migrations[-1].version if migrations else 0
    if version > latest:
        raise MigrationError(f"schema version {version} is newer than this Rollscope understands ({latest}); "
                             "upgrade Rollscope", version)
    return version


def migrate(conn: sqlite3.Connection, migrations: tuple[Migration, ...] | list[Migration]) -> int:
    """Bring the database of ``conn`` (opened with ``isolation_level=None``) to the last of ``migrations``.

    Returns:
        The schema version reached (the last migration's).

    Raises:
        MigrationError: the database is newer than ``migrations``, or a migration failed (it was rolled back;
            the database stays at the version before it).
    """
    version = check_version(conn, migrations)
    for m in migrations:
        if m.version <= version:
            continue
        try:
            conn.execute("BEGIN IMMEDIATE")
            if schema_version(conn) >= m.version:  # another process migrated while we waited for the lock
                conn.execute("ROLLBACK")
                continue
            conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT, "
                         "applied_at REAL)")
            for statement in statements(m.sql):
                conn.execute(statement)
            conn.execute("INSERT OR REPLACE INTO schema_migrations VALUES (?, ?, ?)", (m.version, m.name, time.time()))
            conn.execute(f"PRAGMA user_version = {int(m.version)}")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise MigrationError(f"migration to schema version {m.version} failed: {exc}", m.version) from exc
    return schema_version(conn)


# --- PostgreSQL ---------------------------------------------------------------------------------------------------
# Any fixed number: the key of the advisory lock that serialises migrations of one database across machines.
_PG_MIGRATION_LOCK = 0x526F6C6C  # "Roll"


def postgresql_schema_version(conn: Any) -> int:
    """The schema version of a PostgreSQL database (0 for a new one): the highest version ``schema_migrations``
    logs. ``conn`` is a psycopg connection."""
    found = conn.execute("SELECT to_regclass('schema_migrations') IS NOT NULL").fetchone()[0]
    if not found:
        return 0
    return int(conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()[0])


def check_postgresql_version(conn: Any, migrations: tuple[Migration, ...] | list[Migration]) -> int:
    """The PostgreSQL database's schema version, after checking that this Rollscope understands it.

    Raises:
        MigrationError: the database was written by a newer Rollscope.
    """
    return _understood(postgresql_schema_version(conn), migrations)


def migrate_postgresql(conn: Any, migrations: tuple[Migration, ...] | list[Migration]) -> int:
    """Bring the PostgreSQL database of ``conn`` (a psycopg connection in autocommit mode) to the last of
    ``migrations``.

    The missing files run while this connection holds a session advisory lock, each in its own transaction with its
    ``schema_migrations`` row. The version is read again once the lock is held, in a transaction of its own: a second
    machine opening the database at the same moment waits, then finds the work done. (Reading it inside the
    migration's transaction, after a transaction-scoped lock, can see a catalog from before the other machine's
    commit: tried, and two machines then both created the tables.)

    Returns:
        The schema version reached.

    Raises:
        MigrationError: the database is newer than ``migrations``, or a migration failed (rolled back).
    """
    import psycopg

    latest = migrations[-1].version if migrations else 0
    if check_postgresql_version(conn, migrations) >= latest:
        return latest
    conn.execute("SELECT pg_advisory_lock(%s)", (_PG_MIGRATION_LOCK,))
    try:
        version = check_postgresql_version(conn, migrations)
        for m in migrations:
            if m.version <= version:
                continue
            try:
                with conn.transaction():
                    conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
                                 "name TEXT, applied_at DOUBLE PRECISION)")
                    for statement in statements(m.sql):
                        conn.execute(statement)
                    conn.execute("INSERT INTO schema_migrations VALUES (%s, %s, %s)",
                                 (m.version, m.name, time.time()))
            except psycopg.Error as exc:
                raise MigrationError(f"migration to schema version {m.version} failed: {exc}", m.version) from exc
    finally:
        if not conn.broken and not conn.closed:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_PG_MIGRATION_LOCK,))
    return check_postgresql_version(conn, migrations)
